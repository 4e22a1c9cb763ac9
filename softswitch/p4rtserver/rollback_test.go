package p4rtserver

import (
	"testing"

	"github.com/fastcnp/fastcnp/p4src"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

func (h *harness) writeRollback(t *testing.T, updates ...*p4v1.Update) error {
	t.Helper()
	_, err := h.cli.Write(ctxT(t), &p4v1.WriteRequest{DeviceId: testDevice, ElectionId: eid(10), Updates: updates,
		Atomicity: p4v1.WriteRequest_ROLLBACK_ON_ERROR})
	return err
}

// TestRollbackOnError: a batch that changes every kind of state and then fails is
// undone entirely; the failing update has its code, the others ABORTED.
func TestRollbackOnError(t *testing.T) {
	h, _ := ready(t)
	baseline(t, h)
	before := h.snapshot(t)
	changes := []*p4v1.Update{
		ins(route(b(11, 0, 0, 0), 8, b(1))),
		mod(route(b(10, 0, 0, 0), 8, b(7))),
		del(te(p4src.TablePortConfig, 0, nil, exact(1, b(4)))),
		mod(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: p4src.TableIPv4Route, IsDefaultAction: true,
			Action: act(p4src.ActionSetNexthop, param(1, b(4)), param(2, b(5)), param(3, b(6)))}}}),
		mod(counterEnt(p4src.CounterDropped, -1, 1, 1)),
		mod(registerEnt(p4src.RegPortQueueBytes, 2, b(77))),
		mod(valueSetEnt(p4src.AnnounceUDPPortID, b(1), b(2))),
		del(digestEnt(p4src.DigestPortState, nil)),
		ins(digestEnt(p4src.DigestCNP, &p4v1.DigestEntry_Config{MaxListSize: 3})),
		mod(cloneEnt(p4src.CNPCloneSession, replica(9, 0))),
		ins(cloneEnt(60, replica(9, 0))),
		del(mcastEnt(1)),
		ins(mcastEnt(2, replica(3, 0))),
		// Action profiles (baseline: members 1, 2, 3, group 10 = {1, 3}, group_id 7
		// -> group 10, group_id 8 -> member 2): a new member in a new group behind a
		// new entry, a modified member and group, an entry moved to another member,
		// then a group and a member deleted. (A one-shot cannot join a profile
		// programmed with members and groups: TestOneShotRollback.)
		ins(memberEnt(p4src.ProfileNextHopSelector, 4, nhAct(4))),
		ins(groupEnt(p4src.ProfileNextHopSelector, 11, 0, 4, 2)),
		ins(te(p4src.TableNextHopGroupSelect, 0, &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileGroupId{ActionProfileGroupId: 11}}, exact(1, b(9)))),
		mod(memberEnt(p4src.ProfileNextHopSelector, 1, nhAct(6))),
		mod(groupEnt(p4src.ProfileNextHopSelector, 10, 0, 1, 5)),
		mod(te(p4src.TableNextHopGroupSelect, 0, &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileMemberId{ActionProfileMemberId: 4}}, exact(1, b(8)))),
		del(memberEnt(p4src.ProfileNextHopSelector, 2, nil)),
		del(te(p4src.TableNextHopGroupSelect, 0, nil, exact(1, b(7)))),
		del(groupEnt(p4src.ProfileNextHopSelector, 10, 0)),
		del(memberEnt(p4src.ProfileNextHopSelector, 3, nil)),
	}
	bad := ins(route(b(11, 0, 0, 0), 8, b(1))) // the first update made it a duplicate
	err := h.writeRollback(t, append(changes, bad, ins(route(b(12, 0, 0, 0), 8, b(1))))...)
	got := updateErrors(t, err)
	if len(got) != len(changes)+2 {
		t.Fatalf("%d errors for %d updates", len(got), len(changes)+2)
	}
	for i, c := range got {
		want := codes.Aborted
		if i == len(changes) {
			want = codes.AlreadyExists
		}
		if c != want {
			t.Fatalf("update %d: %v, want %v (all %v)", i, c, want, got)
		}
	}
	if !sameSnapshot(before, h.snapshot(t)) {
		t.Fatal("the rolled-back batch left changes")
	}
	// The same batch without the bad update applies entirely.
	if err := h.writeRollback(t, changes...); err != nil {
		t.Fatalf("good batch: %v", err)
	}
	got1 := one(t, h, te(p4src.TableIPv4Route, 0, nil, lpm(1, b(10, 0, 0, 0), 8)))
	if !proto.Equal(got1, route(b(10, 0, 0, 0), 8, b(7))) {
		t.Fatalf("modified route %v", got1)
	}
	if sameSnapshot(before, h.snapshot(t)) {
		t.Fatal("the good batch changed nothing")
	}
}
