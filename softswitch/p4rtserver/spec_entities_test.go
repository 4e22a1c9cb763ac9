package p4rtserver

// Spec-conformance tests of value sets (P4Runtime specification v1.5.0, 9.6) and
// action profiles (9.2: members, groups, max_size, one-shots, watch ports).

import (
	"testing"

	"github.com/fastcnp/fastcnp/p4src"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"google.golang.org/grpc/codes"
)

// TestSpecValueSet: duplicates, size and the update types of a ValueSetEntry.
func TestSpecValueSet(t *testing.T) {
	// Spec 9.6: "A `ValueSetEntry` may only be modified. If the update type is
	// `INSERT` or `DELETE`, the server must return an `INVALID_ARGUMENT` error. If the
	// update type is `MODIFY`, the server writes the members given in the repeated
	// field to the Value Set entry [...]. The maximum number of matches must not
	// exceed the maximum size given by the `size` field in P4Info of the Value Set,
	// otherwise the server must return a `RESOURCE_EXHAUSTED` error. To empty a Value
	// Set (i.e. restore it to its initial state), the P4Runtime client can perform a
	// `MODIFY` update with an empty `members` repeated field." "To facilitate
	// read-write symmetry, the server must return an `ALREADY_EXISTS` error in case of
	// duplicate members." "`FieldMatch` messages in a `ValueSetEntry` follow the same
	// rules as in a `TableEntry`."
	h, _ := ready(t)
	vs := p4src.AnnounceUDPPortID
	h.mustWrite(t, mod(valueSetEnt(vs, b(0x12, 0xb8))))
	for _, c := range []struct {
		name string
		u    *p4v1.Update
		want codes.Code
		read *p4v1.Entity // the value set afterwards (nil: unchanged)
	}{
		{"duplicate member", mod(valueSetEnt(vs, b(0x50), b(0x51), b(0x50))), codes.AlreadyExists, nil},
		{"duplicate member, one of them not canonical", mod(valueSetEnt(vs, b(0x50), b(0, 0x50))), codes.AlreadyExists, nil},
		{"duplicate of a member already there", mod(valueSetEnt(vs, b(0x12, 0xb8), b(0x12, 0xb8))), codes.AlreadyExists, nil},
		{"more members than the size", mod(valueSetEnt(vs, b(1), b(2), b(3), b(4), b(5))), codes.ResourceExhausted, nil},
		{"INSERT", ins(valueSetEnt(vs, b(1))), codes.InvalidArgument, nil},
		{"DELETE", del(valueSetEnt(vs)), codes.InvalidArgument, nil},
		{"member with a ternary match", mod(&p4v1.Entity{Entity: &p4v1.Entity_ValueSetEntry{ValueSetEntry: &p4v1.ValueSetEntry{ValueSetId: vs,
			Members: []*p4v1.ValueSetMember{{Match: []*p4v1.FieldMatch{ternary(1, b(1), b(0xff))}}}}}}), codes.InvalidArgument, nil},
		{"member without a match", mod(&p4v1.Entity{Entity: &p4v1.Entity_ValueSetEntry{ValueSetEntry: &p4v1.ValueSetEntry{ValueSetId: vs,
			Members: []*p4v1.ValueSetMember{{}}}}}), codes.InvalidArgument, nil},
		{"the size exactly, non-canonical values", mod(valueSetEnt(vs, b(1), b(0, 2), b(0, 0, 3), b(4))), codes.OK, valueSetEnt(vs, b(1), b(2), b(3), b(4))},
		{"emptied", mod(valueSetEnt(vs)), codes.OK, valueSetEnt(vs)},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := one(t, h, valueSetEnt(vs))
			if got := writeCode(t, h, c.u); got != c.want {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			want := c.read
			if want == nil {
				want = before
			}
			equal(t, "value set", one(t, h, valueSetEnt(vs)), want)
		})
	}
}

// actionSet builds a one-shot action set.
func actionSet(mode p4v1.ActionProfileActionSet_ActionSelectionMode, sem p4v1.ActionProfileActionSet_SizeSemantics, as ...*p4v1.ActionProfileAction) *p4v1.TableAction {
	return &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileActionSet{ActionProfileActionSet: &p4v1.ActionProfileActionSet{
		ActionProfileActions: as, ActionSelectionMode: mode, SizeSemantics: sem}}}
}

// apAction is a one-shot action set_nexthop(port, 2, 3) with weight and watch_kind
// (nil: unset).
func apAction(port byte, weight int32, watch any) *p4v1.ActionProfileAction {
	a := &p4v1.ActionProfileAction{Action: nhAct(port).GetAction(), Weight: weight}
	switch w := watch.(type) {
	case []byte:
		a.WatchKind = &p4v1.ActionProfileAction_WatchPort{WatchPort: w}
	case int32:
		a.WatchKind = &p4v1.ActionProfileAction_Watch{Watch: w}
	}
	return a
}

// groupWith is a group whose members carry watch kinds (nil: unset).
func groupWith(id uint32, maxSize int32, members ...*p4v1.ActionProfileGroup_Member) *p4v1.Entity {
	return &p4v1.Entity{Entity: &p4v1.Entity_ActionProfileGroup{ActionProfileGroup: &p4v1.ActionProfileGroup{
		ActionProfileId: p4src.ProfileNextHopSelector, GroupId: id, MaxSize: maxSize, Members: members}}}
}

func gMember(id uint32, weight int32, watch any) *p4v1.ActionProfileGroup_Member {
	m := &p4v1.ActionProfileGroup_Member{MemberId: id, Weight: weight}
	switch w := watch.(type) {
	case []byte:
		m.WatchKind = &p4v1.ActionProfileGroup_Member_WatchPort{WatchPort: w}
	case int32:
		m.WatchKind = &p4v1.ActionProfileGroup_Member_Watch{Watch: w}
	}
	return m
}

// TestSpecActionProfiles: max_size, one-shot / member-group exclusivity, watch
// ports, one-shot selection settings; what is accepted reads back as written.
func TestSpecActionProfiles(t *testing.T) {
	// Spec 9.2.2.1: "Otherwise (i.e. if `max_group_size` is 0), the P4Runtime client
	// can set `max_size` to any value greater than or equal to 0. [...] If `max_size`
	// is greater than 0 and the value is not supported by the target, the server must
	// return a `RESOURCE_EXHAUSTED` error at group-creation time." (next_hop_selector
	// has max_group_size 0 and size 1024.)
	// Spec 9.2.3: "All the tables associated with an action selector may either be
	// programmed exclusively with one shots, or exclusively with
	// `ActionProfileMember` and `ActionProfileGroup` messages. Programming some
	// entries with one shots, and other entries with `ActionProfileMember` and
	// `ActionProfileGroup` messages is not allowed, and the server must return the
	// error code `INVALID_ARGUMENT` in that case."
	// Spec 9.2.2 (watch_port, which 9.2.3 applies to one-shots): "If `watch_port` is
	// empty, then the member is always included in the selection, regardless of the
	// status of any port of the device. The value must be empty or the SDN port of an
	// existing port on the device, otherwise the server must return
	// `INVALID_ARGUMENT`. If the target does not support using the SDN port as a watch
	// port [...] the server must return `UNIMPLEMENTED`."
	// Spec 9.2.3: "If `weights_disallowed` is false, then 0 is not a valid `weight`.
	// The server must return `INVALID_ARGUMENT` if the client attempts to use invalid
	// `weight`s." "All servers and targets must support the
	// `DEFAULT_MODE_DETERMINED_BY_ACTION_SELECTOR` and
	// `DEFAULT_SIZE_DETERMINED_BY_ACTION_SELECTOR` values [...]. Servers must also
	// support the specific value combination that corresponds to that default.
	// Otherwise, if the target does not support per-group hash settings for this
	// action profile, the server should return `UNIMPLEMENTED`." "To preserve
	// read-write symmetry, an implementation must answer `ReadRequest`s with the
	// original one shot messages." "the server must not coalesce multiple
	// `ActionProfileAction` messages with the same `action` specification into one."
	nhs := p4src.ProfileNextHopSelector
	entry := func(a *p4v1.TableAction) *p4v1.Entity { return te(p4src.TableNextHopGroupSelect, 0, a, exact(1, b(7))) }
	entryKey := entry(nil)
	dflt, hash, random := p4v1.ActionProfileActionSet_DEFAULT_MODE_DETERMINED_BY_ACTION_SELECTOR, p4v1.ActionProfileActionSet_HASH, p4v1.ActionProfileActionSet_RANDOM
	dsize, sow, som := p4v1.ActionProfileActionSet_DEFAULT_SIZE_DETERMINED_BY_ACTION_SELECTOR, p4v1.ActionProfileActionSet_SUM_OF_WEIGHTS, p4v1.ActionProfileActionSet_SUM_OF_MEMBERS
	oneShotEntry := entry(actionSet(dflt, dsize, apAction(1, 1, nil)))
	members := []*p4v1.Update{ins(memberEnt(nhs, 1, nhAct(1))), ins(memberEnt(nhs, 2, nhAct(2)))}
	for _, c := range []struct {
		name  string
		setup []*p4v1.Update
		u     *p4v1.Update
		want  codes.Code
		read  *p4v1.Entity // read back with readKey and compared with read (OK cases)
		key   *p4v1.Entity
	}{
		// max_size
		{"group max_size above the target's", members, ins(groupEnt(nhs, 10, p4src.NextHopGroupMembers+1, 1, 1)), codes.ResourceExhausted, nil, nil},
		{"group max_size far above the target's", members, ins(groupEnt(nhs, 10, 1<<30, 1, 1)), codes.ResourceExhausted, nil, nil},
		{"group max_size negative", members, ins(groupEnt(nhs, 10, -1, 1, 1)), codes.InvalidArgument, nil, nil},
		{"group max_size the target's", members, ins(groupEnt(nhs, 10, p4src.NextHopGroupMembers, 1, 1)), codes.OK,
			groupEnt(nhs, 10, p4src.NextHopGroupMembers, 1, 1), groupEnt(nhs, 10, 0)},
		{"group weights above max_size", members, ins(groupEnt(nhs, 10, 2, 1, 2, 2, 1)), codes.ResourceExhausted, nil, nil},
		// one mode or the other
		{"one-shot into a profile with members", members, ins(oneShotEntry), codes.InvalidArgument, nil, nil},
		{"one-shot into a profile with an empty group", []*p4v1.Update{ins(groupEnt(nhs, 10, 0))}, ins(oneShotEntry), codes.InvalidArgument, nil, nil},
		{"member into a profile with one-shots", []*p4v1.Update{ins(oneShotEntry)}, ins(memberEnt(nhs, 1, nhAct(1))), codes.InvalidArgument, nil, nil},
		{"group into a profile with one-shots", []*p4v1.Update{ins(oneShotEntry)}, ins(groupEnt(nhs, 10, 0)), codes.InvalidArgument, nil, nil},
		{"member MODIFY in a profile with one-shots", []*p4v1.Update{ins(oneShotEntry)}, mod(memberEnt(nhs, 1, nhAct(1))), codes.InvalidArgument, nil, nil},
		{"entry moved to a one-shot while members exist", append(members, ins(entry(&p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileMemberId{ActionProfileMemberId: 1}}))),
			mod(oneShotEntry), codes.InvalidArgument, nil, nil},
		{"one-shot once the members are gone", append(members, del(memberEnt(nhs, 1, nil)), del(memberEnt(nhs, 2, nil))), ins(oneShotEntry), codes.OK, oneShotEntry, entryKey},
		{"member once the one-shots are gone", []*p4v1.Update{ins(oneShotEntry), del(entryKey)}, ins(memberEnt(nhs, 1, nhAct(1))), codes.OK,
			memberEnt(nhs, 1, nhAct(1)), memberEnt(nhs, 1, nil)},
		{"one-shot replaced by a one-shot", []*p4v1.Update{ins(oneShotEntry)}, mod(entry(actionSet(dflt, dsize, apAction(2, 3, nil)))), codes.OK,
			entry(actionSet(dflt, dsize, apAction(2, 3, nil))), entryKey},
		// watch ports of one-shots
		{"one-shot watch_port empty", nil, ins(entry(actionSet(dflt, dsize, apAction(1, 1, []byte{}), apAction(2, 2, []byte{})))), codes.OK,
			entry(actionSet(dflt, dsize, apAction(1, 1, []byte{}), apAction(2, 2, []byte{}))), entryKey},
		{"one-shot watch_port empty and unset mixed", nil, ins(entry(actionSet(dflt, dsize, apAction(1, 1, nil), apAction(2, 2, []byte{})))), codes.OK,
			entry(actionSet(dflt, dsize, apAction(1, 1, nil), apAction(2, 2, []byte{}))), entryKey},
		{"one-shot watch_kind unset", nil, ins(entry(actionSet(dflt, dsize, apAction(1, 1, nil)))), codes.OK,
			entry(actionSet(dflt, dsize, apAction(1, 1, nil))), entryKey},
		{"one-shot deprecated watch 0", nil, ins(entry(actionSet(dflt, dsize, apAction(1, 1, int32(0))))), codes.OK,
			entry(actionSet(dflt, dsize, apAction(1, 1, int32(0)))), entryKey},
		{"one-shot watch_port of a port", nil, ins(entry(actionSet(dflt, dsize, apAction(1, 1, b(1))))), codes.Unimplemented, nil, nil},
		{"one-shot watch_port of port 0", nil, ins(entry(actionSet(dflt, dsize, apAction(1, 1, b(0))))), codes.Unimplemented, nil, nil},
		{"one-shot watch_port not a port", nil, ins(entry(actionSet(dflt, dsize, apAction(1, 1, b(2, 0x58))))), codes.InvalidArgument, nil, nil},
		{"one-shot deprecated watch of a port", nil, ins(entry(actionSet(dflt, dsize, apAction(1, 1, int32(3))))), codes.Unimplemented, nil, nil},
		{"one-shot deprecated watch negative", nil, ins(entry(actionSet(dflt, dsize, apAction(1, 1, int32(-3))))), codes.InvalidArgument, nil, nil},
		// watch ports of group members
		{"group member watch_port empty", members, ins(groupWith(10, 0, gMember(1, 1, []byte{}), gMember(2, 2, nil))), codes.OK,
			groupWith(10, 0, gMember(1, 1, []byte{}), gMember(2, 2, nil)), groupEnt(nhs, 10, 0)},
		{"group member deprecated watch 0", members, ins(groupWith(10, 0, gMember(1, 1, int32(0)))), codes.OK,
			groupWith(10, 0, gMember(1, 1, int32(0))), groupEnt(nhs, 10, 0)},
		{"group member watch_port of a port", members, ins(groupWith(10, 0, gMember(1, 1, b(1)))), codes.Unimplemented, nil, nil},
		{"group member watch_port not a port", members, ins(groupWith(10, 0, gMember(1, 1, b(0xff, 0xff)))), codes.InvalidArgument, nil, nil},
		{"group MODIFY drops a watch_port", append(members, ins(groupWith(10, 0, gMember(1, 1, []byte{})))), mod(groupWith(10, 0, gMember(1, 1, nil))), codes.OK,
			groupWith(10, 0, gMember(1, 1, nil)), groupEnt(nhs, 10, 0)},
		// one-shot weights and settings
		{"one-shot weight 0", nil, ins(entry(actionSet(dflt, dsize, apAction(1, 0, nil)))), codes.InvalidArgument, nil, nil},
		{"one-shot weights above the target's", nil, ins(entry(actionSet(dflt, dsize, apAction(1, p4src.NextHopGroupMembers, nil), apAction(2, 1, nil)))), codes.ResourceExhausted, nil, nil},
		{"one-shot the same action twice, not coalesced", nil, ins(entry(actionSet(dflt, dsize, apAction(1, 1, nil), apAction(1, 1, nil)))), codes.OK,
			entry(actionSet(dflt, dsize, apAction(1, 1, nil), apAction(1, 1, nil))), entryKey},
		{"one-shot HASH and SUM_OF_WEIGHTS", nil, ins(entry(actionSet(hash, sow, apAction(1, 1, nil)))), codes.OK,
			entry(actionSet(hash, sow, apAction(1, 1, nil))), entryKey},
		{"one-shot RANDOM", nil, ins(entry(actionSet(random, dsize, apAction(1, 1, nil)))), codes.Unimplemented, nil, nil},
		{"one-shot SUM_OF_MEMBERS", nil, ins(entry(actionSet(dflt, som, apAction(1, 1, nil)))), codes.Unimplemented, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, _ := ready(t)
			if len(c.setup) > 0 {
				h.mustWrite(t, c.setup...)
			}
			before := h.snapshot(t)
			if got := writeCode(t, h, c.u); got != c.want {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			if c.want != codes.OK && !sameSnapshot(before, h.snapshot(t)) {
				t.Fatal("a refused update changed the state")
			}
			if c.read != nil {
				equal(t, "read back", one(t, h, c.key), c.read)
			}
		})
	}
}

// TestOneShotRollback: ROLLBACK_ON_ERROR undoes one-shot entries, their watch forms
// and settings, and the selector's mode with them.
func TestOneShotRollback(t *testing.T) {
	// Spec 12.2 (Batch Atomicity): "`ROLLBACK_ON_ERROR`: Operations within the batch
	// are attempted [...] until the target detects an error. At this point, the target
	// must roll back the operations such that both software and data plane state is
	// consistent with the state before the batch was attempted." Spec 9.2.3:
	// one-shots and members/groups are exclusive, so the failing last update (a
	// member into a profile the batch filled with one-shots) is INVALID_ARGUMENT.
	h, _ := ready(t)
	nhs := p4src.ProfileNextHopSelector
	e := func(key byte, a *p4v1.TableAction) *p4v1.Entity {
		return te(p4src.TableNextHopGroupSelect, 0, a, exact(1, b(key)))
	}
	dflt, dsize := p4v1.ActionProfileActionSet_DEFAULT_MODE_DETERMINED_BY_ACTION_SELECTOR, p4v1.ActionProfileActionSet_DEFAULT_SIZE_DETERMINED_BY_ACTION_SELECTOR
	h.mustWrite(t, ins(e(1, actionSet(dflt, dsize, apAction(1, 1, []byte{})))))
	before := h.snapshot(t)
	batch := []*p4v1.Update{
		ins(e(2, actionSet(p4v1.ActionProfileActionSet_HASH, dsize, apAction(2, 2, nil)))),
		mod(e(1, actionSet(dflt, dsize, apAction(3, 1, int32(0)), apAction(4, 1, nil)))),
		ins(e(3, actionSet(dflt, dsize, apAction(5, 1, nil)))),
		del(e(3, nil)),
		ins(memberEnt(nhs, 1, nhAct(1))),
	}
	got := updateErrors(t, h.writeRollback(t, batch...))
	want := []codes.Code{codes.Aborted, codes.Aborted, codes.Aborted, codes.Aborted, codes.InvalidArgument}
	if len(got) != len(want) {
		t.Fatalf("codes %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("codes %v, want %v", got, want)
		}
	}
	if !sameSnapshot(before, h.snapshot(t)) {
		t.Fatal("the rolled-back batch left changes")
	}
	equal(t, "one-shot after rollback", one(t, h, e(1, nil)), e(1, actionSet(dflt, dsize, apAction(1, 1, []byte{}))))
	// Without its last update the batch applies; once the one-shots are gone the
	// profile takes members again.
	h.mustWrite(t, batch[:4]...)
	equal(t, "modified one-shot", one(t, h, e(1, nil)), e(1, actionSet(dflt, dsize, apAction(3, 1, int32(0)), apAction(4, 1, nil))))
	h.mustWrite(t, del(e(1, nil)), del(e(2, nil)), batch[4])
}
