package p4rtserver

import (
	"context"
	"testing"

	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// nhAct is set_nexthop(port, 2, 3).
func nhAct(port byte) *p4v1.TableAction {
	return act(p4src.ActionSetNexthop, param(1, b(port)), param(2, b(2)), param(3, b(3)))
}

// baseline installs one object of every kind, and fills inc_group (for table full).
// next_hop_selector: members 1 (port 1), 2 (drop), 3 (port 3); group 10 = {1: 1,
// 3: 2}; next_hop_group_select: group_id 7 -> group 10, group_id 8 -> member 2.
func baseline(t *testing.T, h *harness) {
	t.Helper()
	nhs := p4src.ProfileNextHopSelector
	ups := []*p4v1.Update{
		ins(memberEnt(nhs, 1, nhAct(1))),
		ins(memberEnt(nhs, 2, act(p4src.ActionDrop))),
		ins(memberEnt(nhs, 3, nhAct(3))),
		ins(groupEnt(nhs, 10, 0, 1, 1, 3, 2)),
		ins(te(p4src.TableNextHopGroupSelect, 0, &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileGroupId{ActionProfileGroupId: 10}}, exact(1, b(7)))),
		ins(te(p4src.TableNextHopGroupSelect, 0, &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileMemberId{ActionProfileMemberId: 2}}, exact(1, b(8)))),
		ins(route(b(10, 0, 0, 0), 8, b(1))),
		ins(te(p4src.TableTrafficClass, 5, act(p4src.ActionSetTrafficClass, param(1, b(3)), param(2, b(1))), exact(1, b(0)), ternary(3, b(0x1a), b(0x3f)))),
		ins(te(p4src.TablePortConfig, 0, act(p4src.ActionNoAction), exact(1, b(4)))),
		mod(counterEnt(p4src.CounterDropped, 3, 4, 5)),
		mod(registerEnt(p4src.RegPortQueueBytes, 2, b(9))),
		mod(valueSetEnt(p4src.AnnounceUDPPortID, b(0x12, 0xb8))),
		ins(digestEnt(p4src.DigestPortState, &p4v1.DigestEntry_Config{MaxListSize: 1})),
		ins(cloneEnt(p4src.CNPCloneSession, replica(3, 0))),
		ins(mcastEnt(1, replica(1, 0))),
	}
	for g := range p4src.IncGroups {
		ups = append(ups, ins(te(p4src.TableIncGroup, 0, act(p4src.ActionNoAction), exact(1, encodeBits(uint64(g))))))
	}
	h.mustWrite(t, ups...)
}

// oneShot is a one-shot action set with the given selection mode.
func oneShot(mode p4v1.ActionProfileActionSet_ActionSelectionMode, as ...*p4v1.ActionProfileAction) *p4v1.TableAction {
	return &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileActionSet{ActionProfileActionSet: &p4v1.ActionProfileActionSet{
		ActionProfileActions: as, ActionSelectionMode: mode}}}
}

func tableEnt(e *p4v1.TableEntry) *p4v1.Entity {
	return &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: e}}
}

// badUpdate is a Write of one update the server must refuse with code.
type badUpdate struct {
	name string
	u    *p4v1.Update
	code codes.Code
}

func badUpdates() []badUpdate {
	nh := func(ps ...*p4v1.Action_Param) *p4v1.TableAction { return act(p4src.ActionSetNexthop, ps...) }
	goodNH := nh(param(1, b(1)), param(2, b(2)), param(3, b(3)))
	rt := func(a *p4v1.TableAction, ms ...*p4v1.FieldMatch) *p4v1.Entity {
		return te(p4src.TableIPv4Route, 0, a, ms...)
	}
	tcAct := act(p4src.ActionSetTrafficClass, param(1, b(1)), param(2, b(0)))
	cs2 := cloneEnt(50, replica(1, 0), replica(2, 0))
	nhs := p4src.ProfileNextHopSelector
	ia, ae, nf, fp := codes.InvalidArgument, codes.AlreadyExists, codes.NotFound, codes.FailedPrecondition
	return []badUpdate{
		{"unknown table", ins(te(0x02000099, 0, goodNH, lpm(1, b(11), 8))), ia},
		{"table ID 0", ins(te(0, 0, goodNH)), ia},
		{"unknown action", ins(rt(act(0x01000099), lpm(1, b(11), 8))), ia},
		{"action not of the table", ins(rt(act(p4src.ActionSetWindow, param(1, b(1))), lpm(1, b(11), 8))), ia},
		{"unknown param", ins(rt(nh(param(1, b(1)), param(2, b(2)), param(3, b(3)), param(4, b(4))), lpm(1, b(11), 8))), ia},
		{"missing param", ins(rt(nh(param(1, b(1)), param(2, b(2))), lpm(1, b(11), 8))), ia},
		{"repeated param", ins(rt(nh(param(1, b(1)), param(1, b(1)), param(3, b(3))), lpm(1, b(11), 8))), ia},
		{"param too wide", ins(rt(nh(param(1, b(2, 0)), param(2, b(2)), param(3, b(3))), lpm(1, b(11), 8))), ia},
		{"param empty bytestring", ins(rt(nh(param(1, nil), param(2, b(2)), param(3, b(3))), lpm(1, b(11), 8))), ia},
		{"param 9 bytes", ins(rt(nh(param(1, b(1)), param(2, b(1, 0, 0, 0, 0, 0, 0, 0, 0)), param(3, b(3))), lpm(1, b(11), 8))), ia},
		{"unknown match field", ins(rt(goodNH, lpm(2, b(11), 8))), ia},
		{"repeated match field", ins(te(p4src.TablePortConfig, 0, act(p4src.ActionNoAction), exact(1, b(5)), exact(1, b(5)))), ia},
		{"missing exact field", ins(te(p4src.TableRDMAConnection, 0, act(p4src.ActionNoAction), exact(1, b(1)), exact(2, b(2)))), ia},
		{"ternary given for lpm", ins(rt(goodNH, ternary(1, b(11), b(0xff)))), ia},
		{"lpm given for exact", ins(te(p4src.TablePortConfig, 0, act(p4src.ActionNoAction), lpm(1, b(5), 9))), ia},
		{"exact given for ternary", ins(te(p4src.TableTrafficClass, 1, tcAct, exact(1, b(0)), exact(2, b(1)))), ia},
		{"exact value too wide", ins(te(p4src.TablePortConfig, 0, act(p4src.ActionNoAction), exact(1, b(2, 0)))), ia},
		{"ternary value outside mask", ins(te(p4src.TableTrafficClass, 1, tcAct, exact(1, b(0)), ternary(2, b(3), b(1)))), ia},
		{"ternary zero mask", ins(te(p4src.TableTrafficClass, 1, tcAct, exact(1, b(0)), ternary(2, b(0), b(0)))), ia},
		{"ternary mask too wide", ins(te(p4src.TableTrafficClass, 1, tcAct, exact(1, b(0)), ternary(2, b(0), b(0xff)))), ia},
		{"lpm bits beyond prefix", ins(rt(goodNH, lpm(1, b(11, 0, 0, 1), 8))), ia},
		{"lpm prefix 0", ins(rt(goodNH, lpm(1, b(0), 0))), ia},
		{"lpm prefix 33", ins(rt(goodNH, lpm(1, b(11, 0, 0, 0), 33))), ia},
		{"priority missing", ins(te(p4src.TableTrafficClass, 0, tcAct, exact(1, b(0)), ternary(2, b(1), b(7)))), ia},
		{"priority forbidden", ins(te(p4src.TablePortConfig, 3, act(p4src.ActionNoAction), exact(1, b(5)))), ia},
		{"duplicate entry", ins(route(b(10, 0, 0, 0), 8, b(9))), ae},
		{"modify absent entry", mod(route(b(12, 0, 0, 0), 8, b(1))), nf},
		{"delete absent entry", del(route(b(12, 0, 0, 0), 8, b(1))), nf},
		{"insert without action", ins(rt(nil, lpm(1, b(11), 8))), ia},
		{"action profile member as action", ins(rt(&p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileMemberId{ActionProfileMemberId: 1}}, lpm(1, b(11), 8))), ia},
		{"table full", ins(te(p4src.TableIncGroup, 0, act(p4src.ActionNoAction), exact(1, b(1, 0)))), codes.ResourceExhausted},
		{"default entry INSERT", ins(tableEnt(&p4v1.TableEntry{TableId: p4src.TableIPv4Route, IsDefaultAction: true, Action: act(p4src.ActionDrop)})), ia},
		{"default entry DELETE", del(tableEnt(&p4v1.TableEntry{TableId: p4src.TableIPv4Route, IsDefaultAction: true})), ia},
		{"default entry with match", mod(tableEnt(&p4v1.TableEntry{TableId: p4src.TableIPv4Route, IsDefaultAction: true, Action: act(p4src.ActionDrop), Match: []*p4v1.FieldMatch{lpm(1, b(11), 8)}})), ia},
		{"default action not of the table", mod(tableEnt(&p4v1.TableEntry{TableId: p4src.TableIPv4Route, IsDefaultAction: true, Action: act(p4src.ActionSetWindow, param(1, b(1)))})), ia},
		{"direct counter data", ins(tableEnt(&p4v1.TableEntry{TableId: p4src.TableIPv4Route, Action: goodNH, Match: []*p4v1.FieldMatch{lpm(1, b(11), 8)}, CounterData: &p4v1.CounterData{}})), ia},
		{"meter config", ins(tableEnt(&p4v1.TableEntry{TableId: p4src.TableIPv4Route, Action: goodNH, Match: []*p4v1.FieldMatch{lpm(1, b(11), 8)}, MeterConfig: &p4v1.MeterConfig{}})), ia},
		{"idle timeout", ins(tableEnt(&p4v1.TableEntry{TableId: p4src.TableIPv4Route, Action: goodNH, Match: []*p4v1.FieldMatch{lpm(1, b(11), 8)}, IdleTimeoutNs: 1000})), ia},
		{"update type unspecified", upd(p4v1.Update_UNSPECIFIED, route(b(11, 0, 0, 0), 8, b(1))), ia},
		{"update without entity", &p4v1.Update{Type: p4v1.Update_INSERT}, ia},
		{"counter unknown", mod(counterEnt(0x12000099, 1, 1, 1)), ia},
		{"counter INSERT", ins(counterEnt(p4src.CounterDropped, 1, 1, 1)), ia},
		{"counter index out of range", mod(counterEnt(p4src.CounterDropped, p4src.NumPorts, 1, 1)), codes.OutOfRange},
		{"counter negative index", mod(&p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: p4src.CounterDropped, Index: &p4v1.Index{Index: -1}}}}), ia},
		{"counter negative count", mod(counterEnt(p4src.CounterDropped, 1, -1, 0)), ia},
		{"register unknown", mod(registerEnt(0x16000099, 1, b(1))), ia},
		{"register value too wide", mod(registerEnt(p4src.RegPortPaused, 1, b(2))), ia},
		{"register DELETE", del(registerEnt(p4src.RegPortQueueBytes, 1, b(1))), ia},
		{"register without data", mod(registerEnt(p4src.RegPortQueueBytes, 1, nil)), ia},
		{"register index out of range", mod(registerEnt(p4src.RegPortQueueBytes, p4src.NumPorts, b(1))), codes.OutOfRange},
		{"value set unknown", mod(valueSetEnt(0x03000099, b(1))), ia},
		{"value set too many members", mod(valueSetEnt(p4src.AnnounceUDPPortID, b(1), b(2), b(3), b(4), b(5))), codes.ResourceExhausted},
		{"value set member too wide", mod(valueSetEnt(p4src.AnnounceUDPPortID, b(1, 0, 0))), ia},
		{"value set INSERT", ins(valueSetEnt(p4src.AnnounceUDPPortID, b(1))), ia},
		{"value set member lpm", mod(&p4v1.Entity{Entity: &p4v1.Entity_ValueSetEntry{ValueSetEntry: &p4v1.ValueSetEntry{ValueSetId: p4src.AnnounceUDPPortID,
			Members: []*p4v1.ValueSetMember{{Match: []*p4v1.FieldMatch{lpm(1, b(1), 16)}}}}}}), ia},
		{"digest unknown", ins(digestEnt(0x17000099, &p4v1.DigestEntry_Config{})), ia},
		{"digest insert existing", ins(digestEnt(p4src.DigestPortState, &p4v1.DigestEntry_Config{})), ae},
		{"digest modify absent", mod(digestEnt(p4src.DigestCNP, &p4v1.DigestEntry_Config{})), nf},
		{"digest delete absent", del(digestEnt(p4src.DigestCNP, nil)), nf},
		{"digest without config", ins(digestEnt(p4src.DigestCNP, nil)), ia},
		{"digest negative timeout", mod(digestEnt(p4src.DigestPortState, &p4v1.DigestEntry_Config{MaxTimeoutNs: -1})), ia},
		{"clone session 0", ins(cloneEnt(0, replica(1, 0))), ia},
		{"clone session existing", ins(cloneEnt(p4src.CNPCloneSession, replica(1, 0))), ae},
		{"clone session modify absent", mod(cloneEnt(51, replica(1, 0))), nf},
		{"clone session delete absent", del(cloneEnt(51)), nf},
		{"clone session two replicas", ins(cs2), ia},
		{"clone session port 600", ins(cloneEnt(52, replica(600, 0))), ia},
		{"multicast existing", ins(mcastEnt(1, replica(2, 0))), ae},
		{"multicast delete absent", del(mcastEnt(2)), nf},
		{"multicast repeated replica", ins(mcastEnt(2, replica(2, 0), replica(2, 0))), ia},
		{"multicast group 0", ins(mcastEnt(0, replica(2, 0))), ia},
		{"PRE entry empty", ins(preEntity(&p4v1.PacketReplicationEngineEntry{})), ia},
		{"member unknown profile", ins(memberEnt(0x11000099, 5, nhAct(1))), ia},
		{"member ID 0", ins(memberEnt(nhs, 0, nhAct(1))), ia},
		{"member without action", ins(memberEnt(nhs, 5, nil)), ia},
		{"member action not of the profile", ins(memberEnt(nhs, 5, act(p4src.ActionSetWindow, param(1, b(1))))), ia},
		{"member default-only action", ins(memberEnt(nhs, 5, act(p4src.ActionNoAction))), ia},
		{"member param missing", ins(memberEnt(nhs, 5, act(p4src.ActionSetNexthop, param(1, b(1))))), ia},
		{"member param too wide", ins(memberEnt(nhs, 5, act(p4src.ActionSetNexthop, param(1, b(2, 0)), param(2, b(2)), param(3, b(3))))), ia},
		{"member exists", ins(memberEnt(nhs, 1, nhAct(4))), ae},
		{"member modify absent", mod(memberEnt(nhs, 5, nhAct(4))), nf},
		{"member delete absent", del(memberEnt(nhs, 5, nil)), nf},
		{"member delete in use by a group", del(memberEnt(nhs, 1, nil)), fp},
		{"member delete in use by an entry", del(memberEnt(nhs, 2, nil)), fp},
		{"group unknown profile", ins(groupEnt(0x11000099, 11, 0, 1, 1)), ia},
		{"group ID 0", ins(groupEnt(nhs, 0, 0, 1, 1)), ia},
		{"group exists", ins(groupEnt(nhs, 10, 0, 1, 1)), ae},
		{"group with an unknown member", ins(groupEnt(nhs, 11, 0, 1, 1, 99, 1)), nf},
		{"group weight 0", ins(groupEnt(nhs, 11, 0, 1, 0)), ia},
		{"group negative weight", ins(groupEnt(nhs, 11, 0, 1, -3)), ia},
		{"group member repeated", ins(groupEnt(nhs, 11, 0, 1, 1, 1, 2)), ia},
		{"group beyond its max_size", ins(groupEnt(nhs, 11, 2, 1, 2, 3, 1)), codes.ResourceExhausted},
		{"group max_size beyond the profile", ins(groupEnt(nhs, 11, p4src.NextHopGroupMembers+1, 1, 1)), codes.ResourceExhausted},
		{"group weights beyond the profile size", ins(groupEnt(nhs, 11, 0, 1, p4src.NextHopGroupMembers)), codes.ResourceExhausted},
		{"group watch port", ins(&p4v1.Entity{Entity: &p4v1.Entity_ActionProfileGroup{ActionProfileGroup: &p4v1.ActionProfileGroup{ActionProfileId: nhs, GroupId: 11,
			Members: []*p4v1.ActionProfileGroup_Member{{MemberId: 1, Weight: 1, WatchKind: &p4v1.ActionProfileGroup_Member_WatchPort{WatchPort: b(1)}}}}}}), codes.Unimplemented},
		{"group modify absent", mod(groupEnt(nhs, 11, 0, 1, 1)), nf},
		{"group modify max_size", mod(groupEnt(nhs, 10, 8, 1, 1)), ia},
		{"group delete absent", del(groupEnt(nhs, 11, 0)), nf},
		{"group delete in use", del(groupEnt(nhs, 10, 0)), fp},
		{"direct action in a selector table", ins(te(p4src.TableNextHopGroupSelect, 0, nhAct(1), exact(1, b(9)))), ia},
		{"group in a direct table", ins(rt(&p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileGroupId{ActionProfileGroupId: 10}}, lpm(1, b(11), 8))), ia},
		{"entry with an unknown group", ins(te(p4src.TableNextHopGroupSelect, 0, &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileGroupId{ActionProfileGroupId: 99}}, exact(1, b(9)))), nf},
		{"entry with an unknown member", ins(te(p4src.TableNextHopGroupSelect, 0, &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileMemberId{ActionProfileMemberId: 99}}, exact(1, b(9)))), nf},
		{"entry with member ID 0", ins(te(p4src.TableNextHopGroupSelect, 0, &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileMemberId{}}, exact(1, b(9)))), ia},
		{"entry modify to an unknown group", mod(te(p4src.TableNextHopGroupSelect, 0, &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileGroupId{ActionProfileGroupId: 99}}, exact(1, b(7)))), nf},
		{"one-shot empty", ins(te(p4src.TableNextHopGroupSelect, 0, oneShot(p4v1.ActionProfileActionSet_DEFAULT_MODE_DETERMINED_BY_ACTION_SELECTOR), exact(1, b(9)))), ia},
		{"one-shot weight 0", ins(te(p4src.TableNextHopGroupSelect, 0, oneShot(0, &p4v1.ActionProfileAction{Action: nhAct(1).GetAction()}), exact(1, b(9)))), ia},
		{"one-shot default-only action", ins(te(p4src.TableNextHopGroupSelect, 0, oneShot(0, &p4v1.ActionProfileAction{Action: act(p4src.ActionNoAction).GetAction(), Weight: 1}), exact(1, b(9)))), ia},
		{"one-shot random selection", ins(te(p4src.TableNextHopGroupSelect, 0, oneShot(p4v1.ActionProfileActionSet_RANDOM, &p4v1.ActionProfileAction{Action: nhAct(1).GetAction(), Weight: 1}), exact(1, b(9)))), codes.Unimplemented},
		{"one-shot in a direct table", ins(rt(oneShot(0, &p4v1.ActionProfileAction{Action: nhAct(1).GetAction(), Weight: 1}), lpm(1, b(11), 8))), ia},
		{"selector table default not NoAction", mod(tableEnt(&p4v1.TableEntry{TableId: p4src.TableNextHopGroupSelect, IsDefaultAction: true, Action: nhAct(1)})), ia},
		{"meter entry", mod(&p4v1.Entity{Entity: &p4v1.Entity_MeterEntry{MeterEntry: &p4v1.MeterEntry{MeterId: 0x15000001}}}), ia},
		{"direct counter entry", mod(&p4v1.Entity{Entity: &p4v1.Entity_DirectCounterEntry{DirectCounterEntry: &p4v1.DirectCounterEntry{TableEntry: &p4v1.TableEntry{TableId: p4src.TableIPv4Route}}}}), ia},
		{"extern entry", ins(&p4v1.Entity{Entity: &p4v1.Entity_ExternEntry{ExternEntry: &p4v1.ExternEntry{ExternTypeId: 0x81}}}), ia},
	}
}

// badRPC is a whole request the server must refuse with code.
type badRPC struct {
	name string
	call func(ctx context.Context, h *harness) error
	code codes.Code
}

func readErr(ctx context.Context, h *harness, req *p4v1.ReadRequest) error {
	rs, err := h.cli.Read(ctx, req)
	if err != nil {
		return err
	}
	for {
		if _, err := rs.Recv(); err != nil {
			return err
		}
	}
}

func badRPCs() []badRPC {
	good := []*p4v1.Update{ins(route(b(11, 0, 0, 0), 8, b(1)))}
	w := func(req *p4v1.WriteRequest) func(context.Context, *harness) error {
		return func(ctx context.Context, h *harness) error { _, err := h.cli.Write(ctx, req); return err }
	}
	r := func(ents ...*p4v1.Entity) func(context.Context, *harness) error {
		return func(ctx context.Context, h *harness) error {
			return readErr(ctx, h, &p4v1.ReadRequest{DeviceId: testDevice, Entities: ents})
		}
	}
	setp := func(req *p4v1.SetForwardingPipelineConfigRequest) func(context.Context, *harness) error {
		return func(ctx context.Context, h *harness) error {
			_, err := h.cli.SetForwardingPipelineConfig(ctx, req)
			return err
		}
	}
	cfg := func(mut func(*p4configv1.P4Info)) *p4v1.ForwardingPipelineConfig {
		info := proto.Clone(P4InfoFromSchema(pipeline.ProgramSchema())).(*p4configv1.P4Info)
		if mut != nil {
			mut(info)
		}
		return &p4v1.ForwardingPipelineConfig{P4Info: info}
	}
	commit := p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT
	ia := codes.InvalidArgument
	// A Read whose requests fail is UNKNOWN with a p4.v1.Error per request (spec
	// 13.3 "Batch Processing"); TestReadBatchPerRequestErrors checks each code.
	return []badRPC{
		{"write other device", w(&p4v1.WriteRequest{DeviceId: testDevice + 1, ElectionId: eid(10), Updates: good}), codes.NotFound},
		{"write from backup", w(&p4v1.WriteRequest{DeviceId: testDevice, ElectionId: eid(5), Updates: good}), codes.PermissionDenied},
		{"write without election ID", w(&p4v1.WriteRequest{DeviceId: testDevice, Updates: good}), codes.PermissionDenied},
		{"write higher election ID than the primary", w(&p4v1.WriteRequest{DeviceId: testDevice, ElectionId: eid(11), Updates: good}), codes.PermissionDenied},
		{"write ROLLBACK_ON_ERROR batch with a bad update", w(&p4v1.WriteRequest{DeviceId: testDevice, ElectionId: eid(10),
			Updates: append(good, ins(route(b(10, 0, 0, 0), 8, b(1)))), Atomicity: p4v1.WriteRequest_ROLLBACK_ON_ERROR}), codes.Unknown},
		{"write DATAPLANE_ATOMIC batch with a bad update", w(&p4v1.WriteRequest{DeviceId: testDevice, ElectionId: eid(10),
			Updates: append(good, mod(counterEnt(0x12000099, 1, 1, 1))), Atomicity: p4v1.WriteRequest_DATAPLANE_ATOMIC}), codes.Unknown},
		{"write atomicity 7", w(&p4v1.WriteRequest{DeviceId: testDevice, ElectionId: eid(10), Updates: good, Atomicity: 7}), codes.InvalidArgument},
		{"write role no controller arbitrated for", w(&p4v1.WriteRequest{DeviceId: testDevice, Role: "x", ElectionId: eid(10), Updates: good}), codes.NotFound},
		{"read other device", func(ctx context.Context, h *harness) error {
			return readErr(ctx, h, &p4v1.ReadRequest{DeviceId: 1, Entities: []*p4v1.Entity{te(0, 0, nil)}})
		}, codes.NotFound},
		{"read unknown table", r(te(0x02000099, 0, nil)), codes.Unknown},
		{"read all tables with a match", r(te(0, 0, nil, lpm(1, b(10), 8))), codes.Unknown},
		{"read bad match", r(te(p4src.TableIPv4Route, 0, nil, lpm(1, b(10, 0, 0, 1), 8))), codes.Unknown},
		{"read unknown counter", r(counterEnt(0x12000099, -1, 0, 0)), codes.Unknown},
		{"read counter index out of range", r(counterEnt(p4src.CounterDropped, 9999, 0, 0)), codes.Unknown},
		{"read unknown register", r(registerEnt(0x16000099, -1, nil)), codes.Unknown},
		{"read unknown value set", r(valueSetEnt(0x03000099)), codes.Unknown},
		{"read unknown digest", r(digestEnt(0x17000099, nil)), codes.Unknown},
		{"read empty entity", r(&p4v1.Entity{}), codes.Unknown},
		{"read empty PRE entry", r(preEntity(&p4v1.PacketReplicationEngineEntry{})), codes.Unknown},
		{"read unknown action profile", r(&p4v1.Entity{Entity: &p4v1.Entity_ActionProfileMember{ActionProfileMember: &p4v1.ActionProfileMember{ActionProfileId: 5}}}), codes.Unknown},
		{"read groups of an unknown action profile", r(groupEnt(0x11000099, 0, 0)), codes.Unknown},
		{"read good then bad entity", r(te(0, 0, nil), counterEnt(0x12000099, -1, 0, 0)), codes.Unknown},
		{"set pipeline from backup", setp(&p4v1.SetForwardingPipelineConfigRequest{DeviceId: testDevice, ElectionId: eid(5), Action: commit, Config: cfg(nil)}), codes.PermissionDenied},
		{"set pipeline other device", setp(&p4v1.SetForwardingPipelineConfigRequest{DeviceId: 3, ElectionId: eid(10), Action: commit, Config: cfg(nil)}), codes.NotFound},
		{"set pipeline action unspecified", setp(&p4v1.SetForwardingPipelineConfigRequest{DeviceId: testDevice, ElectionId: eid(10), Config: cfg(nil)}), ia},
		{"set pipeline without config", setp(&p4v1.SetForwardingPipelineConfigRequest{DeviceId: testDevice, ElectionId: eid(10), Action: commit}), ia},
		{"set pipeline without p4info", setp(&p4v1.SetForwardingPipelineConfigRequest{DeviceId: testDevice, ElectionId: eid(10), Action: commit, Config: &p4v1.ForwardingPipelineConfig{}}), ia},
		{"commit another program (extra table)", setp(&p4v1.SetForwardingPipelineConfigRequest{DeviceId: testDevice, ElectionId: eid(10), Action: commit, Config: cfg(func(i *p4configv1.P4Info) {
			i.Tables = append(i.Tables, &p4configv1.Table{Preamble: &p4configv1.Preamble{Id: 0x020000AA, Name: "Other.t"}})
		})}), ia},
		{"commit another program (action renamed)", setp(&p4v1.SetForwardingPipelineConfigRequest{DeviceId: testDevice, ElectionId: eid(10), Action: commit, Config: cfg(func(i *p4configv1.P4Info) {
			i.Actions[0].Preamble.Name = "Other.drop"
		})}), ia},
		{"get config other device", func(ctx context.Context, h *harness) error {
			_, err := h.cli.GetForwardingPipelineConfig(ctx, &p4v1.GetForwardingPipelineConfigRequest{DeviceId: 1})
			return err
		}, codes.NotFound},
		{"get config bad response type", func(ctx context.Context, h *harness) error {
			_, err := h.cli.GetForwardingPipelineConfig(ctx, &p4v1.GetForwardingPipelineConfigRequest{DeviceId: testDevice, ResponseType: 99})
			return err
		}, ia},
	}
}

// badStream is a stream message the server must answer with a StreamError of code,
// keeping the stream open.
type badStream struct {
	name   string
	msg    *p4v1.StreamMessageRequest
	backup bool // sent on the backup's stream
	code   codes.Code
}

func packetOut(md ...*p4v1.PacketMetadata) *p4v1.StreamMessageRequest {
	return &p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Packet{Packet: &p4v1.PacketOut{Payload: []byte("x"), Metadata: md}}}
}

func pmd(id uint32, v []byte) *p4v1.PacketMetadata {
	return &p4v1.PacketMetadata{MetadataId: id, Value: v}
}

func badStreams() []badStream {
	ia := codes.InvalidArgument
	return []badStream{
		{"packet-out unknown metadata", packetOut(pmd(1, b(1)), pmd(9, b(1))), false, ia},
		{"packet-out port too wide", packetOut(pmd(1, b(2, 0))), false, ia},
		{"packet-out port missing", packetOut(pmd(2, b(0))), false, ia},
		{"packet-out metadata repeated", packetOut(pmd(1, b(1)), pmd(1, b(1))), false, ia},
		{"packet-out empty value", packetOut(pmd(1, nil)), false, ia},
		{"packet-out from backup", packetOut(pmd(1, b(1))), true, codes.PermissionDenied},
		{"digest ack unknown digest", &p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_DigestAck{DigestAck: &p4v1.DigestListAck{DigestId: 0x17000099, ListId: 1}}}, false, ia},
		{"digest ack from backup", &p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_DigestAck{DigestAck: &p4v1.DigestListAck{DigestId: p4src.DigestPortState, ListId: 1}}}, true, codes.PermissionDenied},
		{"other message", &p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Other{Other: &anypb.Any{TypeUrl: "x/y"}}}, false, codes.Unimplemented},
	}
}

// TestMalformedRequests sends every refused request over gRPC to the real pipeline
// and checks its code (and per-update p4.v1.Error code), that the readable state is
// unchanged, and that the server still serves.
func TestMalformedRequests(t *testing.T) {
	h, prim := ready(t)
	baseline(t, h)
	backup := h.openStream(t)
	backup.arbitrate(eid(5), "")
	backup.expectArb(codes.AlreadyExists, 10)
	before := h.snapshot(t)
	// Over P4Runtime, at the start and at the end: every counter and register cell,
	// the inc_group entries, the members and groups.
	beforeFull := h.fullSnapshot(t)
	cells := 0
	for _, c := range pipeline.ProgramSchema().Counters {
		cells += c.Size
	}
	for _, r := range pipeline.ProgramSchema().Registers {
		cells += r.Size
	}
	if len(beforeFull) < cells+p4src.IncGroups+3+1 {
		t.Fatalf("baseline snapshot too small: %d, want at least %d", len(beforeFull), cells+p4src.IncGroups+4)
	}
	sc := pipeline.ProgramSchema()
	if want := len(beforeFull) - cells + len(sc.Counters) + len(sc.Registers); len(before) != want {
		t.Fatalf("snapshot has %d items, want %d (every entity, one per counter and register)", len(before), want)
	}
	check := func(t *testing.T) {
		t.Helper()
		if !sameSnapshot(before, h.snapshot(t)) {
			t.Fatal("state changed")
		}
		if _, err := h.cli.Capabilities(ctxT(t), &p4v1.CapabilitiesRequest{DeviceId: testDevice}); err != nil {
			t.Fatalf("server no longer serves: %v", err)
		}
	}
	n := 0
	for _, c := range badUpdates() {
		n++
		t.Run("write/"+c.name, func(t *testing.T) {
			err := h.write(t, 10, c.u)
			got := updateErrors(t, err)
			if len(got) != 1 || got[0] != c.code {
				t.Fatalf("per-update codes %v, want [%v] (%v)", got, c.code, err)
			}
			check(t)
		})
	}
	for _, c := range badRPCs() {
		n++
		t.Run("rpc/"+c.name, func(t *testing.T) {
			err := c.call(ctxT(t), h)
			if status.Code(err) != c.code {
				t.Fatalf("got %v, want %v", err, c.code)
			}
			check(t)
		})
	}
	for _, c := range badStreams() {
		n++
		t.Run("stream/"+c.name, func(t *testing.T) {
			sc := prim
			if c.backup {
				sc = backup
			}
			sc.send(c.msg)
			e := sc.expectStreamError(c.code)
			if c.msg.GetPacket() != nil && !proto.Equal(e.GetPacketOut().GetPacketOut(), c.msg.GetPacket()) {
				t.Fatalf("stream error does not carry the packet-out: %v", e)
			}
			check(t)
		})
	}
	if !sameSnapshot(beforeFull, h.fullSnapshot(t)) {
		t.Fatal("state read over P4Runtime changed")
	}
	// The streams survived: the backup still hears of a change of primary.
	prim.send(arbReq(testDevice, eid(12), ""))
	prim.expectArb(codes.OK, 12)
	backup.expectArb(codes.AlreadyExists, 12)
	t.Logf("%d malformed or illegal requests refused", n)
	if n < 50 {
		t.Fatalf("only %d malformed cases", n)
	}
}

// TestSnapshotSeesEveryCell: the state comparison of TestMalformedRequests notices a
// change in any counter or register cell (the last cell of each, which a read of a few
// cells would miss) and in action profile members and groups, and both snapshots agree.
func TestSnapshotSeesEveryCell(t *testing.T) {
	h, _ := ready(t)
	baseline(t, h)
	before, beforeFull := h.snapshot(t), h.fullSnapshot(t)
	sc := pipeline.ProgramSchema()
	var changes [][2]*p4v1.Update // a change and its undo
	for _, c := range sc.Counters {
		last := int64(c.Size - 1)
		changes = append(changes, [2]*p4v1.Update{mod(counterEnt(c.ID, last, 1, 0)), mod(counterEnt(c.ID, last, 0, 0))})
	}
	for _, r := range sc.Registers {
		last := int64(r.Size - 1)
		changes = append(changes, [2]*p4v1.Update{mod(registerEnt(r.ID, last, b(1))), mod(registerEnt(r.ID, last, b(0)))})
	}
	nhs := p4src.ProfileNextHopSelector
	changes = append(changes,
		[2]*p4v1.Update{mod(memberEnt(nhs, 3, nhAct(9))), mod(memberEnt(nhs, 3, nhAct(3)))},
		[2]*p4v1.Update{mod(groupEnt(nhs, 10, 0, 1, 2, 3, 2)), mod(groupEnt(nhs, 10, 0, 1, 1, 3, 2))},
	)
	for i, c := range changes {
		h.mustWrite(t, c[0])
		if sameSnapshot(before, h.snapshot(t)) {
			t.Errorf("change %d (%v) not seen by snapshot", i, c[0])
		}
		if i%16 == 0 && sameSnapshot(beforeFull, h.fullSnapshot(t)) {
			t.Errorf("change %d (%v) not seen by fullSnapshot", i, c[0])
		}
		h.mustWrite(t, c[1])
		if !sameSnapshot(before, h.snapshot(t)) {
			t.Fatalf("undo of change %d not seen as the original state", i)
		}
	}
	if !sameSnapshot(beforeFull, h.fullSnapshot(t)) {
		t.Fatal("fullSnapshot differs after every change was undone")
	}
}
