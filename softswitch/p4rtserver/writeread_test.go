package p4rtserver

import (
	"fmt"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"github.com/fastcnp/fastcnp/wire"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// one reads exactly one entity back.
func one(t *testing.T, h *harness, e *p4v1.Entity) *p4v1.Entity {
	t.Helper()
	got := h.mustRead(t, e)
	if len(got) != 1 {
		t.Fatalf("read %v: %d entities, want 1: %v", e, len(got), got)
	}
	return got[0]
}

func equal(t *testing.T, what string, got, want proto.Message) {
	t.Helper()
	if !proto.Equal(got, want) {
		t.Fatalf("%s:\n got %v\nwant %v", what, got, want)
	}
}

// TestTableEntryRoundTrip: insert, read (specific and wildcard), modify, delete for
// an LPM, a ternary and an exact table, with controller metadata, in canonical form.
func TestTableEntryRoundTrip(t *testing.T) {
	h, _ := ready(t)
	r := route(b(10, 1, 0, 0), 16, b(1, 0x2c)) // port 300
	r.GetTableEntry().ControllerMetadata = 77
	r.GetTableEntry().Metadata = []byte("meta")
	tc := te(p4src.TableTrafficClass, 5, act(p4src.ActionSetTrafficClass, param(1, b(3)), param(2, b(1))),
		exact(1, b(0)), ternary(3, b(0x1a), b(0x3f)))
	conn := te(p4src.TableRDMAConnection, 0, act(p4src.ActionSetConnection, param(1, b(0, 0, 9)), param(2, b(2)), param(3, b(7)), param(4, b(0)), param(5, b(0))),
		exact(1, b(10, 0, 0, 1)), exact(2, b(0x12, 0x34)), exact(3, b(0, 0, 0x42)))
	h.mustWrite(t, ins(r), ins(tc), ins(conn))

	// Non-canonical input (leading zeros) reads back canonical.
	wantConn := proto.Clone(conn).(*p4v1.Entity)
	wantConn.GetTableEntry().Action = act(p4src.ActionSetConnection, param(1, b(9)), param(2, b(2)), param(3, b(7)), param(4, b(0)), param(5, b(0)))
	wantConn.GetTableEntry().Match = []*p4v1.FieldMatch{exact(1, b(10, 0, 0, 1)), exact(2, b(0x12, 0x34)), exact(3, b(0x42))}
	equal(t, "exact entry", one(t, h, te(p4src.TableRDMAConnection, 0, nil, conn.GetTableEntry().GetMatch()...)), wantConn)
	equal(t, "lpm entry", one(t, h, te(p4src.TableIPv4Route, 0, nil, lpm(1, b(10, 1, 0, 0), 16))), r)
	equal(t, "ternary entry", one(t, h, te(p4src.TableTrafficClass, 5, nil, exact(1, b(0)), ternary(3, b(0x1a), b(0x3f)))), tc)
	if got := h.mustRead(t, te(0, 0, nil)); len(got) != 3 {
		t.Fatalf("wildcard over all tables: %d entries", len(got))
	}
	if got := h.mustRead(t, te(p4src.TableIPv4Route, 0, nil)); len(got) != 1 {
		t.Fatalf("wildcard over one table: %d entries", len(got))
	}
	// A key that is not there reads nothing.
	if got := h.mustRead(t, te(p4src.TableIPv4Route, 0, nil, lpm(1, b(10, 2, 0, 0), 16))); len(got) != 0 {
		t.Fatalf("absent entry read: %v", got)
	}

	// MODIFY replaces the action and the metadata.
	r2 := route(b(10, 1, 0, 0), 16, b(5))
	h.mustWrite(t, mod(r2))
	equal(t, "modified", one(t, h, te(p4src.TableIPv4Route, 0, nil, lpm(1, b(10, 1, 0, 0), 16))), r2)

	h.mustWrite(t, del(te(p4src.TableIPv4Route, 0, nil, lpm(1, b(10, 1, 0, 0), 16))), del(tc), del(conn))
	if got := h.mustRead(t, te(0, 0, nil)); len(got) != 0 {
		t.Fatalf("after delete: %v", got)
	}
}

// TestDefaultEntry: read, modify and reset a table's default action.
func TestDefaultEntry(t *testing.T) {
	h, _ := ready(t)
	readDef := &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: p4src.TableIPv4Route, IsDefaultAction: true}}}
	want := &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: p4src.TableIPv4Route, IsDefaultAction: true, Action: act(p4src.ActionDrop)}}}
	equal(t, "program default", one(t, h, readDef), want)

	set := &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: p4src.TableIPv4Route, IsDefaultAction: true,
		Action: act(p4src.ActionSetNexthop, param(1, b(4)), param(2, b(5)), param(3, b(6)))}}}
	h.mustWrite(t, mod(set))
	equal(t, "modified default", one(t, h, readDef), set)

	reset := &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: p4src.TableIPv4Route, IsDefaultAction: true}}}
	h.mustWrite(t, mod(reset))
	equal(t, "reset default", one(t, h, readDef), want)

	all := &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{IsDefaultAction: true}}}
	if got := h.mustRead(t, all); len(got) != len(pipeline.ProgramSchema().Tables) {
		t.Fatalf("defaults of all tables: %d", len(got))
	}
}

func TestCounterRoundTrip(t *testing.T) {
	h, _ := ready(t)
	h.mustWrite(t, mod(counterEnt(p4src.CounterDropped, 7, 11, 1500)))
	equal(t, "cell", one(t, h, counterEnt(p4src.CounterDropped, 7, 0, 0)), counterEnt(p4src.CounterDropped, 7, 11, 1500))
	all := h.mustRead(t, counterEnt(p4src.CounterDropped, -1, 0, 0))
	if len(all) != p4src.NumPorts || all[7].GetCounterEntry().GetData().GetByteCount() != 1500 || all[6].GetCounterEntry().GetData().GetByteCount() != 0 {
		t.Fatalf("wildcard index: %d cells", len(all))
	}
	// A wildcard write sets every cell.
	h.mustWrite(t, mod(counterEnt(p4src.CounterDropped, -1, 0, 0)))
	equal(t, "cleared", one(t, h, counterEnt(p4src.CounterDropped, 7, 0, 0)), counterEnt(p4src.CounterDropped, 7, 0, 0))
	cells := 0
	for _, c := range pipeline.ProgramSchema().Counters {
		cells += c.Size
	}
	if got := h.mustRead(t, counterEnt(0, -1, 0, 0)); len(got) != cells || cells != 14*p4src.NumPorts+5*p4src.NumQueues {
		t.Fatalf("every counter: %d cells, want %d", len(got), cells)
	}
	// A counter indexed by queue: its last cell.
	last := p4src.NumQueues - 1
	h.mustWrite(t, mod(counterEnt(p4src.CounterQueueDropped, int64(last), 3, 4500)))
	equal(t, "queue cell", one(t, h, counterEnt(p4src.CounterQueueDropped, int64(last), 0, 0)), counterEnt(p4src.CounterQueueDropped, int64(last), 3, 4500))
}

func TestRegisterRoundTrip(t *testing.T) {
	h, _ := ready(t)
	h.mustWrite(t, mod(registerEnt(p4src.RegPortPauseStart, 9, b(0xff, 0xff, 0xff, 0xff, 0xff, 0xff))))
	equal(t, "48-bit cell", one(t, h, registerEnt(p4src.RegPortPauseStart, 9, nil)), registerEnt(p4src.RegPortPauseStart, 9, b(0xff, 0xff, 0xff, 0xff, 0xff, 0xff)))
	all := h.mustRead(t, registerEnt(p4src.RegFlowBytes, -1, nil))
	if len(all) != p4src.FlowSlots {
		t.Fatalf("wildcard register read: %d", len(all))
	}
	h.mustWrite(t, mod(registerEnt(p4src.RegPortPaused, -1, b(1))))
	equal(t, "wildcard write", one(t, h, registerEnt(p4src.RegPortPaused, 511, nil)), registerEnt(p4src.RegPortPaused, 511, b(1)))
}

func TestValueSetRoundTrip(t *testing.T) {
	h, _ := ready(t)
	h.mustWrite(t, mod(valueSetEnt(p4src.AnnounceUDPPortID, b(0x12, 0xb8), b(0, 0x50))))
	equal(t, "members (canonical)", one(t, h, valueSetEnt(p4src.AnnounceUDPPortID)), valueSetEnt(p4src.AnnounceUDPPortID, b(0x12, 0xb8), b(0x50)))
	h.mustWrite(t, mod(valueSetEnt(p4src.AnnounceUDPPortID)))
	equal(t, "emptied", one(t, h, valueSetEnt(0)), valueSetEnt(p4src.AnnounceUDPPortID))
}

func TestDigestConfigRoundTrip(t *testing.T) {
	h, _ := ready(t)
	cfg := &p4v1.DigestEntry_Config{MaxTimeoutNs: 1000, MaxListSize: 8, AckTimeoutNs: 5000}
	h.mustWrite(t, ins(digestEnt(p4src.DigestCNP, cfg)))
	equal(t, "inserted", one(t, h, digestEnt(p4src.DigestCNP, nil)), digestEnt(p4src.DigestCNP, cfg))
	cfg2 := &p4v1.DigestEntry_Config{MaxListSize: 1}
	h.mustWrite(t, mod(digestEnt(p4src.DigestCNP, cfg2)))
	equal(t, "modified", one(t, h, digestEnt(0, nil)), digestEnt(p4src.DigestCNP, cfg2))
	h.mustWrite(t, del(digestEnt(p4src.DigestCNP, nil)))
	if got := h.mustRead(t, digestEnt(0, nil)); len(got) != 0 {
		t.Fatalf("after delete: %v", got)
	}
}

func TestPRERoundTrip(t *testing.T) {
	h, _ := ready(t)
	cs := cloneEnt(p4src.CNPCloneSession, replica(3, 1))
	cs.GetPacketReplicationEngineEntry().GetCloneSessionEntry().ClassOfService = 2
	cs.GetPacketReplicationEngineEntry().GetCloneSessionEntry().PacketLengthBytes = 128
	legacy := cloneEnt(5, &p4v1.Replica{PortKind: &p4v1.Replica_EgressPort{EgressPort: 9}})
	mg := mcastEnt(1, replica(1, 0), replica(2, 0), replica(2, 1))
	h.mustWrite(t, ins(cs), ins(legacy), ins(mg))
	equal(t, "clone session", one(t, h, cloneEnt(p4src.CNPCloneSession)), cs)
	equal(t, "legacy egress_port form", one(t, h, cloneEnt(5)), legacy)
	equal(t, "multicast group", one(t, h, mcastEnt(1)), mg)
	if got := h.mustRead(t, cloneEnt(0), mcastEnt(0)); len(got) != 3 {
		t.Fatalf("PRE wildcards: %v", got)
	}
	cs2 := cloneEnt(p4src.CNPCloneSession, replica(4, 0))
	mg2 := mcastEnt(1, replica(7, 0))
	h.mustWrite(t, mod(cs2), mod(mg2))
	equal(t, "clone modified", one(t, h, cloneEnt(p4src.CNPCloneSession)), cs2)
	equal(t, "group modified", one(t, h, mcastEnt(1)), mg2)
	h.mustWrite(t, del(cloneEnt(p4src.CNPCloneSession)), del(cloneEnt(5)), del(mcastEnt(1)))
	if got := h.mustRead(t, cloneEnt(0), mcastEnt(0)); len(got) != 0 {
		t.Fatalf("after delete: %v", got)
	}
}

// TestBatchContinueOnError: updates are applied in order; a failing one does not stop
// the others and the status carries one p4.v1.Error per update, OK ones included.
func TestBatchContinueOnError(t *testing.T) {
	h, _ := ready(t)
	r1 := route(b(10, 0, 0, 0), 8, b(1))
	r2 := route(b(11, 0, 0, 0), 8, b(1))
	err := h.write(t, 10, ins(r1), ins(r1), ins(route(b(12, 0, 0, 1), 8, b(1))), ins(r2), del(r1))
	got := updateErrors(t, err)
	want := []codes.Code{codes.OK, codes.AlreadyExists, codes.InvalidArgument, codes.OK, codes.OK}
	if len(got) != len(want) {
		t.Fatalf("errors %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("errors %v, want %v", got, want)
		}
	}
	ents := h.mustRead(t, te(0, 0, nil))
	if len(ents) != 1 || !proto.Equal(ents[0], r2) {
		t.Fatalf("state after the batch: %v", ents)
	}
}

// TestReadManyEntities: one request, several entity kinds, answered in order.
func TestReadManyEntities(t *testing.T) {
	h, _ := ready(t)
	h.mustWrite(t, ins(route(b(10, 0, 0, 0), 8, b(1))), mod(valueSetEnt(p4src.AnnounceUDPPortID, b(1))))
	got := h.mustRead(t, te(p4src.TableIPv4Route, 0, nil), valueSetEnt(0), counterEnt(p4src.CounterDropped, 1, 0, 0),
		&p4v1.Entity{Entity: &p4v1.Entity_ActionProfileMember{ActionProfileMember: &p4v1.ActionProfileMember{}}})
	if len(got) != 3 || got[0].GetTableEntry() == nil || got[1].GetValueSetEntry() == nil || got[2].GetCounterEntry() == nil {
		t.Fatalf("read of three kinds: %v", got)
	}
}

// TestEveryTableRoundTrip: one entry in every table of the program (built from the
// schema: each key at its match kind, the table's first action with parameters),
// read back equal, modified, read back, deleted, gone; each table's wildcard read sees
// exactly its own entry.
func TestEveryTableRoundTrip(t *testing.T) {
	h, _ := ready(t)
	sc := pipeline.ProgramSchema()
	actions := make(map[uint32]pipeline.ActionInfo)
	for _, a := range sc.Actions {
		actions[a.ID] = a
	}
	entry := func(ti *pipeline.TableInfo, v uint64) *p4v1.Entity {
		var ms []*p4v1.FieldMatch
		for _, k := range ti.Keys {
			switch k.Kind {
			case pipeline.MatchExact:
				ms = append(ms, exact(k.ID, b(1)))
			case pipeline.MatchLPM:
				ms = append(ms, lpm(k.ID, b(1), int32(k.Bitwidth)))
			case pipeline.MatchTernary:
				ms = append(ms, ternary(k.ID, b(1), b(1)))
			default:
				t.Fatalf("table %s: key %s of kind %v", ti.Name, k.Name, k.Kind)
			}
		}
		a := actions[ti.ActionIDs[0]]
		for _, id := range ti.ActionIDs {
			if len(actions[id].Params) > len(a.Params) {
				a = actions[id]
			}
		}
		var ps []*p4v1.Action_Param
		for _, p := range a.Params {
			ps = append(ps, param(p.ID, encodeBits(min(v, 1<<p.Bitwidth-1))))
		}
		prio := int32(0)
		if ti.NeedsPriority() {
			prio = 1
		}
		return te(ti.ID, prio, act(a.ID, ps...), ms...)
	}
	if len(sc.Tables) == 0 {
		t.Fatal("no tables in the schema")
	}
	for i := range sc.Tables {
		ti := &sc.Tables[i]
		t.Run(ti.Name, func(t *testing.T) {
			e1, e2 := entry(ti, 1), entry(ti, 2)
			if ti.ProfileID != 0 {
				// A table with an action selector: the entry runs a member, then a
				// group of two.
				h.mustWrite(t, ins(memberEnt(ti.ProfileID, 1, nhAct(1))), ins(memberEnt(ti.ProfileID, 2, nhAct(2))),
					ins(groupEnt(ti.ProfileID, 5, 0, 1, 1, 2, 3)))
				e1.GetTableEntry().Action = &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileMemberId{ActionProfileMemberId: 1}}
				e2.GetTableEntry().Action = &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileGroupId{ActionProfileGroupId: 5}}
				defer h.mustWrite(t, del(groupEnt(ti.ProfileID, 5, 0)), del(memberEnt(ti.ProfileID, 1, nil)), del(memberEnt(ti.ProfileID, 2, nil)))
			}
			key := proto.Clone(e1).(*p4v1.Entity)
			key.GetTableEntry().Action = nil
			h.mustWrite(t, ins(e1))
			equal(t, "inserted", one(t, h, key), e1)
			equal(t, "wildcard", one(t, h, te(ti.ID, 0, nil)), e1)
			h.mustWrite(t, mod(e2))
			equal(t, "modified", one(t, h, key), e2)
			h.mustWrite(t, del(key))
			if got := h.mustRead(t, te(ti.ID, 0, nil)); len(got) != 0 {
				t.Fatalf("after delete: %v", got)
			}
		})
	}
}

// TestActionProfileRoundTrip: members and weighted groups of next_hop_selector over
// P4Runtime: written, read back (one, every member of the profile, every profile),
// used by next_hop_group_select entries (member, group, one-shot) that route packets
// through the server's pipeline, modified, refused while in use, deleted.
func TestActionProfileRoundTrip(t *testing.T) {
	h, _ := ready(t)
	nhs := p4src.ProfileNextHopSelector
	m1, m2 := memberEnt(nhs, 1, nhAct(3)), memberEnt(nhs, 2, nhAct(4))
	g := groupEnt(nhs, 10, 8, 1, 1, 2, 3)
	groupRef := &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileGroupId{ActionProfileGroupId: 10}}
	nhg := te(p4src.TableNextHopGroupSelect, 0, groupRef, exact(1, b(7)))
	routeToGroup := te(p4src.TableIPv4Route, 0, act(p4src.ActionSetNextHopGroup, param(1, b(7))), lpm(1, b(10, 9, 0, 0), 16))
	h.mustWrite(t, ins(m1), ins(m2), ins(g), ins(nhg), ins(routeToGroup))

	equal(t, "member", one(t, h, memberEnt(nhs, 1, nil)), m1)
	equal(t, "group", one(t, h, groupEnt(nhs, 10, 0)), g)
	equal(t, "entry", one(t, h, te(p4src.TableNextHopGroupSelect, 0, nil, exact(1, b(7)))), nhg)
	if got := h.mustRead(t, memberEnt(nhs, 0, nil)); len(got) != 2 || !proto.Equal(got[1], m2) {
		t.Fatalf("members of the profile: %v", got)
	}
	if got := h.mustRead(t, memberEnt(0, 0, nil), groupEnt(0, 0, 0)); len(got) != 3 {
		t.Fatalf("every member and group: %v", got)
	}
	if got := h.mustRead(t, memberEnt(nhs, 9, nil)); len(got) != 0 {
		t.Fatalf("absent member: %v", got)
	}

	// Packets to 10.9.0.0/16 take member 1 (port 3) or 2 (port 4), 1:3, by flow:
	// pick = [1, 2, 2, 2], index SelectorHash % 4.
	ports := map[uint16]int{}
	for i := range 400 {
		sport := uint16(1000 + 97*i)
		want := []uint16{3, 4, 4, 4}[pipeline.SelectorHash(0x0A000001, 0x0A090005, 17, sport, 4791)%4]
		buf := make([]byte, 128)
		n, err := wire.BuildRoCE(buf, &wire.Envelope{DstMAC: wire.MAC{2, 0, 0, 0, 0, 0xee}, SrcMAC: wire.MAC{2, 0, 0, 0, 0, 1},
			SrcIP: wire.Addr4{10, 0, 0, 1}, DstIP: wire.Addr4{10, 9, 0, 5}, SrcPort: sport}, &wire.BTH{Opcode: wire.OpRCSendOnly, PKey: wire.DefaultPKey}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.dp.Receive(ctxT(t), buf[:n], 1); err != nil {
			t.Fatal(err)
		}
		select {
		case f := <-h.fwd:
			if f.port != want {
				t.Fatalf("sport %d: port %d, want %d", sport, f.port, want)
			}
			ports[f.port]++
		case <-time.After(5 * time.Second):
			t.Fatal("packet not forwarded")
		}
	}
	if ports[3]+ports[4] != 400 || ports[3] < 60 || ports[3] > 140 {
		t.Fatalf("flows per port %v, want about 100 on 3 and 300 on 4", ports)
	}

	// In use: neither the group nor its members can go.
	for _, u := range []*p4v1.Update{del(groupEnt(nhs, 10, 0)), del(memberEnt(nhs, 1, nil))} {
		if got := updateErrors(t, h.write(t, 10, u)); len(got) != 1 || got[0] != codes.FailedPrecondition {
			t.Fatalf("delete in use: %v", got)
		}
	}
	// Modify: the group's weights, a member's action.
	g2 := groupEnt(nhs, 10, 8, 2, 1)
	m1b := memberEnt(nhs, 1, nhAct(5))
	h.mustWrite(t, mod(g2), mod(m1b))
	equal(t, "modified group", one(t, h, groupEnt(nhs, 10, 0)), g2)
	equal(t, "modified member", one(t, h, memberEnt(nhs, 1, nil)), m1b)
	// Delete in order: entries, group, members; the profile is empty again.
	h.mustWrite(t, del(te(p4src.TableNextHopGroupSelect, 0, nil, exact(1, b(7)))),
		del(groupEnt(nhs, 10, 0)), del(memberEnt(nhs, 1, nil)), del(memberEnt(nhs, 2, nil)))
	if got := h.mustRead(t, memberEnt(0, 0, nil), groupEnt(0, 0, 0)); len(got) != 0 {
		t.Fatalf("after delete: %v", got)
	}
	// An empty profile may be programmed with one-shots instead (spec: one mode or
	// the other, never both): one-shots are anonymous, no member or group shows.
	set := oneShot(0, &p4v1.ActionProfileAction{Action: nhAct(3).GetAction(), Weight: 1}, &p4v1.ActionProfileAction{Action: nhAct(4).GetAction(), Weight: 2})
	oneShotEntry := te(p4src.TableNextHopGroupSelect, 0, set, exact(1, b(8)))
	h.mustWrite(t, ins(oneShotEntry))
	equal(t, "one-shot entry", one(t, h, te(p4src.TableNextHopGroupSelect, 0, nil, exact(1, b(8)))), oneShotEntry)
	if got := h.mustRead(t, memberEnt(0, 0, nil), groupEnt(0, 0, 0)); len(got) != 0 {
		t.Fatalf("members and groups with a one-shot: %v", got)
	}
	h.mustWrite(t, del(te(p4src.TableNextHopGroupSelect, 0, nil, exact(1, b(8)))))
}

// TestQueueCountersOverP4Runtime: the counters indexed by queue read through
// P4Runtime what the data path counted (queue_enqueued in ingress) and what the
// target's traffic manager fed in (queue_dropped, pfc_xoff_sent, pfc_xon_sent).
func TestQueueCountersOverP4Runtime(t *testing.T) {
	h, _ := ready(t)
	h.mustWrite(t, ins(route(b(10, 0, 0, 0), 8, b(2))))
	buf := make([]byte, 128)
	n, err := wire.BuildRoCE(buf, &wire.Envelope{DstMAC: wire.MAC{2, 0, 0, 0, 0, 0xee}, SrcMAC: wire.MAC{2, 0, 0, 0, 0, 1},
		SrcIP: wire.Addr4{10, 0, 0, 1}, DstIP: wire.Addr4{10, 0, 1, 2}}, &wire.BTH{Opcode: wire.OpRCSendOnly, PKey: wire.DefaultPKey}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.dp.Receive(ctxT(t), buf[:n], 1); err != nil {
		t.Fatal(err)
	}
	err = h.dp.Exec(ctxT(t), func(p *pipeline.Pipeline) error {
		p.CountQueueDrop(2, 3, 1000)
		p.CountPFCSent(1, 3, true, 60)
		p.CountPFCSent(1, 3, false, 60)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	q := func(port, prio int64) int64 { return port*8 + prio }
	for _, c := range []struct {
		id         uint32
		index      int64
		pkts, byts int64
	}{
		{p4src.CounterQueueEnqueued, q(2, 0), 1, int64(n)},
		{p4src.CounterQueueDropped, q(2, 3), 1, 1000},
		{p4src.CounterPFCXoffSent, q(1, 3), 1, 60},
		{p4src.CounterPFCXonSent, q(1, 3), 1, 60},
	} {
		equal(t, fmt.Sprintf("counter %#x[%d]", c.id, c.index), one(t, h, counterEnt(c.id, c.index, 0, 0)), counterEnt(c.id, c.index, c.pkts, c.byts))
	}
}
