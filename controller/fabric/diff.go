package fabric

import (
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
)

// Plan is the set of changes that turns a switch's state into the desired
// one.
type Plan struct {
	// Insert are entities missing on the switch.
	Insert []Entry
	// Modify are entities whose value differs (and value sets, which are
	// only ever modified).
	Modify []Entry
	// Delete are entities on the switch that are not desired.
	Delete []Entry
}

// Len returns the number of updates of the plan.
func (p Plan) Len() int { return len(p.Insert) + len(p.Modify) + len(p.Delete) }

// Empty reports whether the switch already holds the desired state.
func (p Plan) Empty() bool { return p.Len() == 0 }

// Updates returns the plan as P4Runtime updates: deletes first (freeing table
// space), then modifies, then inserts, each in installation order (deletes
// in reverse, so that table entries go before the objects they use).
func (p Plan) Updates() []*p4v1.Update {
	out := make([]*p4v1.Update, 0, p.Len())
	for i := len(p.Delete) - 1; i >= 0; i-- {
		out = append(out, &p4v1.Update{Type: p4v1.Update_DELETE, Entity: deleteEntity(p.Delete[i])})
	}
	for _, e := range p.Modify {
		out = append(out, &p4v1.Update{Type: p4v1.Update_MODIFY, Entity: e.Entity})
	}
	for _, e := range p.Insert {
		out = append(out, &p4v1.Update{Type: p4v1.Update_INSERT, Entity: e.Entity})
	}
	return out
}

// Batches returns the plan as P4Runtime updates in batches that must be
// written one after the other: a server may apply the updates of one
// WriteRequest in any order (P4Runtime spec, "Batching and Ordering of
// Updates"), so an update that needs another one applied first goes in a
// later batch. The order follows the references between objects (a group
// names its members, a next_hop_group_select entry its group):
//
//  1. deletes of everything but members and groups (table entries first,
//     freeing table space), inserts and modifies of members;
//  2. inserts and modifies of groups (their members exist now);
//  3. inserts and modifies of everything else (the groups they run exist);
//  4. deletes of groups (no entry runs them any more);
//  5. deletes of members (no group holds them any more).
//
// Empty batches are left out; without group updates, 1 and 3 are one batch
// (deletes first, then modifies, then inserts, as Updates orders them),
// which is the whole plan when it touches no member or group.
func (p Plan) Batches() [][]*p4v1.Update {
	var first, groups, rest, delGroups, delMembers []*p4v1.Update
	for _, u := range p.Updates() {
		member := u.GetEntity().GetActionProfileMember() != nil
		group := u.GetEntity().GetActionProfileGroup() != nil
		del := u.GetType() == p4v1.Update_DELETE
		switch {
		case member && del:
			delMembers = append(delMembers, u)
		case group && del:
			delGroups = append(delGroups, u)
		case group:
			groups = append(groups, u)
		case member || del:
			first = append(first, u)
		default:
			rest = append(rest, u)
		}
	}
	if len(groups) == 0 {
		first, rest = append(first, rest...), nil
	}
	var out [][]*p4v1.Update
	for _, b := range [][]*p4v1.Update{first, groups, rest, delGroups, delMembers} {
		if len(b) > 0 {
			out = append(out, b)
		}
	}
	return out
}

// deleteEntity strips what a DELETE does not need; for table entries the
// key is enough, the action is kept (servers ignore it).
func deleteEntity(e Entry) *p4v1.Entity { return e.Entity }

// Diff returns the fewest updates that make actual equal to desired: an
// entry whose key is missing is inserted, one whose value differs is
// modified, and one that is not desired is deleted. Value sets cannot be
// inserted or deleted: a missing or different one is modified, an undesired
// one is left alone (a read-back lists every value set of the program).
func Diff(desired, actual *State) Plan {
	var p Plan
	for _, d := range desired.Entries() {
		a, ok := actual.entries[d.Key]
		switch {
		case ok && a.Value == d.Value:
		case ok || d.Kind == KindValueSet:
			p.Modify = append(p.Modify, d)
		default:
			p.Insert = append(p.Insert, d)
		}
	}
	for _, a := range actual.Entries() {
		if _, ok := desired.entries[a.Key]; ok || a.Kind == KindValueSet {
			continue
		}
		p.Delete = append(p.Delete, a)
	}
	return p
}
