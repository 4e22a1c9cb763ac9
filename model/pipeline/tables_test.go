package pipeline

import (
	"testing"

	"github.com/fastcnp/fastcnp/p4src"
)

func nh(port uint64) Action {
	return Action{ID: p4src.ActionSetNexthop, Params: []Param{{1, port}, {2, 0xAA}, {3, 0xBB}}}
}

func lpmEntry(v uint64, plen int32, port uint64) *TableEntry {
	return &TableEntry{TableID: p4src.TableIPv4Route, Match: []FieldMatch{{FieldID: 1, Value: v, PrefixLen: plen}}, Action: nh(port)}
}

func routePort(t *testing.T, p *Pipeline, dst uint32) (uint64, bool) {
	t.Helper()
	act, pr, hit := p.tRoute.lookupLPM(dst)
	if !hit || act != p4src.ActionSetNexthop {
		return 0, false
	}
	return pr[0], true
}

func TestLPMLongestPrefixWins(t *testing.T) {
	p := New(Options{})
	mustOK(t, p.InsertEntry(lpmEntry(0x0A000000, 8, 1)))
	mustOK(t, p.InsertEntry(lpmEntry(0x0A010000, 16, 2)))
	mustOK(t, p.InsertEntry(lpmEntry(0x0A010200, 24, 3)))
	mustOK(t, p.InsertEntry(lpmEntry(0x0A010203, 32, 4)))
	tests := []struct {
		dst  uint32
		want uint64
		hit  bool
	}{
		{0x0A010203, 4, true}, {0x0A010204, 3, true}, {0x0A01FF01, 2, true}, {0x0AFF0000, 1, true}, {0x0B000000, 0, false},
	}
	for _, tc := range tests {
		if got, hit := routePort(t, p, tc.dst); got != tc.want || hit != tc.hit {
			t.Errorf("dst %#x -> %d %v, want %d %v", tc.dst, got, hit, tc.want, tc.hit)
		}
	}
	mustOK(t, p.DeleteEntry(lpmEntry(0x0A010200, 24, 0)))
	if got, _ := routePort(t, p, 0x0A010204); got != 2 {
		t.Errorf("after deleting the /24: port %d, want 2", got)
	}
	// A /0 default route is a route with the field omitted.
	mustOK(t, p.InsertEntry(&TableEntry{TableID: p4src.TableIPv4Route, Action: nh(9)}))
	if got, hit := routePort(t, p, 0xC0A80001); got != 9 || !hit {
		t.Errorf("/0 route: %d %v", got, hit)
	}
}

func tcEntry(prio int32, vlan uint64, pcp, pcpMask, dscp, dscpMask uint64, outPrio uint64) *TableEntry {
	e := &TableEntry{TableID: p4src.TableTrafficClass, Priority: prio, Match: []FieldMatch{{FieldID: 1, Value: vlan}},
		Action: Action{ID: p4src.ActionSetTrafficClass, Params: []Param{{1, outPrio}, {2, 1}}}}
	if pcpMask != 0 {
		e.Match = append(e.Match, FieldMatch{FieldID: 2, Value: pcp, Mask: pcpMask})
	}
	if dscpMask != 0 {
		e.Match = append(e.Match, FieldMatch{FieldID: 3, Value: dscp, Mask: dscpMask})
	}
	return e
}

func TestTernaryHighestPriorityWins(t *testing.T) {
	p := New(Options{})
	mustOK(t, p.InsertEntry(tcEntry(10, 0, 0, 0, 0x20, 0x30, 2))) // DSCP 32..47
	mustOK(t, p.InsertEntry(tcEntry(20, 0, 0, 0, 0x28, 0x3F, 5))) // DSCP 40 exactly
	mustOK(t, p.InsertEntry(tcEntry(5, 0, 0, 0, 0, 0, 1)))        // everything untagged
	look := func(dscp uint64) uint64 {
		act, pr, _ := p.tTC.lookupTernary(0, 0, dscp)
		if act != p4src.ActionSetTrafficClass {
			return 99
		}
		return pr[0]
	}
	for _, c := range []struct{ dscp, want uint64 }{{40, 5}, {41, 2}, {33, 2}, {0, 1}, {63, 1}} {
		if got := look(c.dscp); got != c.want {
			t.Errorf("dscp %d -> %d, want %d", c.dscp, got, c.want)
		}
	}
	if act, _, hit := p.tTC.lookupTernary(1, 0, 40); hit || act != p4src.ActionNoAction {
		t.Error("tagged packet matched untagged entries")
	}
	// Same key, other priority: a different entry; same key and priority: exists.
	mustOK(t, p.InsertEntry(tcEntry(30, 0, 0, 0, 0x20, 0x30, 7)))
	if got := look(41); got != 7 {
		t.Errorf("after priority-30 entry: %d, want 7", got)
	}
	if err := p.InsertEntry(tcEntry(30, 0, 0, 0, 0x20, 0x30, 1)); !isErr(err, ErrAlreadyExists) {
		t.Errorf("duplicate: %v", err)
	}
	mustOK(t, p.DeleteEntry(tcEntry(30, 0, 0, 0, 0x20, 0x30, 0)))
	if got := look(41); got != 2 {
		t.Errorf("after delete: %d, want 2", got)
	}
}

func TestEntryValidation(t *testing.T) {
	route := func(m ...FieldMatch) *TableEntry {
		return &TableEntry{TableID: p4src.TableIPv4Route, Match: m, Action: nh(1)}
	}
	tests := []struct {
		name string
		e    *TableEntry
	}{
		{"unknown table", &TableEntry{TableID: 0x02000099, Action: nh(1)}},
		{"unknown field", route(FieldMatch{FieldID: 2, Value: 1, PrefixLen: 32})},
		{"repeated field", route(FieldMatch{FieldID: 1, Value: 1, PrefixLen: 32}, FieldMatch{FieldID: 1, Value: 1, PrefixLen: 32})},
		{"value too wide", route(FieldMatch{FieldID: 1, Value: 1 << 32, PrefixLen: 32})},
		{"prefix too long", route(FieldMatch{FieldID: 1, Value: 1, PrefixLen: 33})},
		{"prefix 0 given", route(FieldMatch{FieldID: 1, Value: 0, PrefixLen: 0})},
		{"bits beyond prefix", route(FieldMatch{FieldID: 1, Value: 0x0A000001, PrefixLen: 24})},
		{"mask on lpm", route(FieldMatch{FieldID: 1, Value: 1, Mask: 1, PrefixLen: 32})},
		{"action of another table", &TableEntry{TableID: p4src.TableIPv4Route, Match: []FieldMatch{{FieldID: 1, Value: 1, PrefixLen: 32}}, Action: Action{ID: p4src.ActionSetWindow, Params: []Param{{1, 1}}}}},
		{"unknown action", &TableEntry{TableID: p4src.TableIPv4Route, Match: []FieldMatch{{FieldID: 1, Value: 1, PrefixLen: 32}}, Action: Action{ID: 0x01000099}}},
		{"missing param", &TableEntry{TableID: p4src.TableIPv4Route, Match: []FieldMatch{{FieldID: 1, Value: 1, PrefixLen: 32}}, Action: Action{ID: p4src.ActionSetNexthop, Params: []Param{{1, 1}, {2, 1}}}}},
		{"param too wide", &TableEntry{TableID: p4src.TableIPv4Route, Match: []FieldMatch{{FieldID: 1, Value: 1, PrefixLen: 32}}, Action: nhWith(512)}},
		{"repeated param", &TableEntry{TableID: p4src.TableIPv4Route, Match: []FieldMatch{{FieldID: 1, Value: 1, PrefixLen: 32}}, Action: Action{ID: p4src.ActionSetNexthop, Params: []Param{{1, 1}, {1, 1}, {3, 1}}}}},
		{"unknown param", &TableEntry{TableID: p4src.TableIPv4Route, Match: []FieldMatch{{FieldID: 1, Value: 1, PrefixLen: 32}}, Action: Action{ID: p4src.ActionSetNexthop, Params: []Param{{1, 1}, {2, 1}, {4, 1}}}}},
		{"priority on lpm table", &TableEntry{TableID: p4src.TableIPv4Route, Priority: 1, Match: []FieldMatch{{FieldID: 1, Value: 1, PrefixLen: 32}}, Action: nh(1)}},
		{"no priority on ternary table", tcEntry(0, 0, 0, 0, 1, 0x3F, 1)},
		{"ternary value outside mask", tcEntry(1, 0, 0, 0, 3, 0x2, 1)},
		{"ternary mask too wide", tcEntry(1, 0, 0, 0, 1, 0x7F, 1)},
		{"ternary zero mask given", &TableEntry{TableID: p4src.TableTrafficClass, Priority: 1, Match: []FieldMatch{{FieldID: 1}, {FieldID: 3, Value: 0, Mask: 0}}, Action: Action{ID: p4src.ActionNoAction}}},
		{"exact field missing", &TableEntry{TableID: p4src.TableTrafficClass, Priority: 1, Match: []FieldMatch{{FieldID: 3, Value: 1, Mask: 0x3F}}, Action: Action{ID: p4src.ActionNoAction}}},
		{"exact value too wide", &TableEntry{TableID: p4src.TableTrafficClass, Priority: 1, Match: []FieldMatch{{FieldID: 1, Value: 2}}, Action: Action{ID: p4src.ActionNoAction}}},
		{"mask on exact", &TableEntry{TableID: p4src.TableIncGroup, Match: []FieldMatch{{FieldID: 1, Value: 1, Mask: 1}}, Action: Action{ID: p4src.ActionNoAction}}},
		{"conn_index beyond registers", connEntry([4]byte{1, 2, 3, 4}, 1, 1, 1, 1, p4src.ConnTableSize, 0, 0)},
		{"worker_rank beyond bitmap", connEntry([4]byte{1, 2, 3, 4}, 1, 1, 1, 1, 0, 0, 32)},
		{"child_rank beyond bitmap", &TableEntry{TableID: p4src.TableIncChildPort, Match: []FieldMatch{{FieldID: 1, Value: 4}},
			Action: Action{ID: p4src.ActionSetIncChild, Params: []Param{{1, 32}}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := New(Options{})
			if err := p.InsertEntry(tc.e); !isErr(err, ErrInvalidArgument) {
				t.Fatalf("insert: %v, want invalid argument", err)
			}
			if tc.e.TableID == p4src.TableIPv4Route || tc.e.TableID == p4src.TableTrafficClass {
				if n, _ := p.EntryCount(tc.e.TableID); n != 0 {
					t.Errorf("%d entries after a rejected insert", n)
				}
			}
		})
	}
}

func nhWith(port uint64) Action {
	return Action{ID: p4src.ActionSetNexthop, Params: []Param{{1, port}, {2, 1}, {3, 1}}}
}

func TestModifyDeleteReadAndFull(t *testing.T) {
	p := New(Options{})
	e := lpmEntry(0x0A000000, 8, 1)
	if err := p.ModifyEntry(e); !isErr(err, ErrNotFound) {
		t.Errorf("modify missing: %v", err)
	}
	if err := p.DeleteEntry(e); !isErr(err, ErrNotFound) {
		t.Errorf("delete missing: %v", err)
	}
	mustOK(t, p.InsertEntry(e))
	if err := p.InsertEntry(e); !isErr(err, ErrAlreadyExists) {
		t.Errorf("insert twice: %v", err)
	}
	mustOK(t, p.ModifyEntry(lpmEntry(0x0A000000, 8, 7)))
	got, err := p.ReadEntry(&TableEntry{TableID: p4src.TableIPv4Route, Match: e.Match})
	mustOK(t, err)
	if got.Action.ID != p4src.ActionSetNexthop || got.Action.Params[0] != (Param{1, 7}) || got.Match[0] != e.Match[0] {
		t.Errorf("read back %+v", got)
	}
	all, err := p.ReadEntries(0, nil)
	mustOK(t, err)
	if len(all) != 1 || all[0].TableID != p4src.TableIPv4Route {
		t.Errorf("wildcard read %+v", all)
	}
	// inc_group holds INC_GROUPS entries.
	for g := range p4src.IncGroups {
		mustOK(t, p.InsertEntry(&TableEntry{TableID: p4src.TableIncGroup, Match: []FieldMatch{{FieldID: 1, Value: uint64(g)}},
			Action: Action{ID: p4src.ActionSetIncGroup, Params: []Param{{1, 1}, {2, 1}}}}))
	}
	err = p.InsertEntry(&TableEntry{TableID: p4src.TableIncGroup, Match: []FieldMatch{{FieldID: 1, Value: 999}},
		Action: Action{ID: p4src.ActionSetIncGroup, Params: []Param{{1, 1}, {2, 1}}}})
	if !isErr(err, ErrResourceExhausted) {
		t.Errorf("full table: %v", err)
	}
	mustOK(t, p.DeleteEntry(&TableEntry{TableID: p4src.TableIncGroup, Match: []FieldMatch{{FieldID: 1, Value: 3}}}))
	mustOK(t, p.InsertEntry(&TableEntry{TableID: p4src.TableIncGroup, Match: []FieldMatch{{FieldID: 1, Value: 999}},
		Action: Action{ID: p4src.ActionSetIncGroup, Params: []Param{{1, 1}, {2, 1}}}}))
	if rs, _ := p.ReadEntries(p4src.TableIncGroup, nil); len(rs) != p4src.IncGroups {
		t.Errorf("read %d inc_group entries", len(rs))
	}
}

func TestDefaultAction(t *testing.T) {
	p := newTest(t, p4src.PortModeFastcnp)
	a, err := p.DefaultAction(p4src.TableIPv4Route)
	mustOK(t, err)
	if a.ID != p4src.ActionDrop {
		t.Errorf("ipv4_route default %#x, want drop", a.ID)
	}
	// traffic_class default -> priority 3 lossless: an unclassified packet becomes lossless.
	mustOK(t, p.SetDefaultAction(p4src.TableTrafficClass, &Action{ID: p4src.ActionSetTrafficClass, Params: []Param{{1, 3}, {2, 1}}}))
	k := dataSR(10)
	k.dscp = 0
	if r := ingress(t, p, k.build(t), portS, 0); r.Meta.Priority != 3 || !r.Meta.Lossless {
		t.Errorf("default traffic class not applied: %+v", r.Meta)
	}
	if err := p.SetDefaultAction(p4src.TableTrafficClass, &Action{ID: p4src.ActionSetWindow, Params: []Param{{1, 1}}}); !isErr(err, ErrInvalidArgument) {
		t.Errorf("foreign default action: %v", err)
	}
	// ipv4_route: a set_nexthop default action is a default route.
	k.dst = [4]byte{192, 168, 1, 1}
	if r := ingress(t, p, k.build(t), portS, 0); r.DropReason != DropNoRoute {
		t.Errorf("route miss with the drop default: reason %d", r.DropReason)
	}
	mustOK(t, p.SetDefaultAction(p4src.TableIPv4Route, &Action{ID: p4src.ActionSetNexthop, Params: []Param{{1, 4}, {2, 1}, {3, 1}}}))
	if r := ingress(t, p, k.build(t), portS, 0); r.Verdict != VerdictForward || r.EgressPort != 4 {
		t.Errorf("route miss with a set_nexthop default: verdict %d port %d", r.Verdict, r.EgressPort)
	}
	// An entry whose action is drop: dropped and counted.
	mustOK(t, p.InsertEntry(&TableEntry{TableID: p4src.TableIPv4Route, Match: []FieldMatch{{FieldID: 1, Value: 0xC0A80101, PrefixLen: 32}}, Action: Action{ID: p4src.ActionDrop}}))
	before := ctr(t, p, p4src.CounterDropped, portS).Packets
	if r := ingress(t, p, k.build(t), portS, 0); r.DropReason != DropNoRoute || ctr(t, p, p4src.CounterDropped, portS).Packets != before+1 {
		t.Errorf("drop entry: reason %d", r.DropReason)
	}
	mustOK(t, p.ResetDefaultAction(p4src.TableTrafficClass))
	if a, _ := p.DefaultAction(p4src.TableTrafficClass); a.ID != p4src.ActionNoAction || len(a.Params) != 0 {
		t.Errorf("after reset %+v", a)
	}
	// A const default rejects changes.
	ti := p.tTC.info
	saved := ti.ConstDefault
	ti.ConstDefault = true
	err = p.SetDefaultAction(p4src.TableTrafficClass, &Action{ID: p4src.ActionNoAction})
	ti.ConstDefault = saved
	if !isErr(err, ErrPermissionDenied) {
		t.Errorf("const default: %v", err)
	}
}

func TestRegistersCountersValueSetClone(t *testing.T) {
	p := New(Options{})
	if err := p.WriteRegister(p4src.RegPortPaused, 3, 2); !isErr(err, ErrInvalidArgument) {
		t.Errorf("2 in a 1-bit register: %v", err)
	}
	if err := p.WriteRegister(p4src.RegPortQueueBytes, p4src.NumPorts, 1); !isErr(err, ErrInvalidArgument) {
		t.Errorf("index out of range: %v", err)
	}
	if _, err := p.ReadRegister(0x16000099, 0, nil); !isErr(err, ErrInvalidArgument) {
		t.Errorf("unknown register: %v", err)
	}
	mustOK(t, p.WriteRegister(p4src.RegIncSlotValue0+15, 1023, 0xFFFFFFFF))
	mustOK(t, p.WriteRegister(p4src.RegPortPauseStart, 7, 1<<48-1))
	all, err := p.ReadRegister(p4src.RegIncSlotValue0+15, -1, nil)
	mustOK(t, err)
	if len(all) != p4src.IncSlots || all[1023] != (RegisterValue{1023, 0xFFFFFFFF}) {
		t.Errorf("wildcard register read: %d cells, last %+v", len(all), all[len(all)-1])
	}
	mustOK(t, p.WriteCounter(p4src.CounterDropped, 5, 10, 1000))
	cs, err := p.ReadCounter(p4src.CounterDropped, -1, nil)
	mustOK(t, err)
	if len(cs) != p4src.NumPorts || cs[5] != (CounterValue{5, 10, 1000}) || cs[4].Packets != 0 {
		t.Errorf("counter wildcard read: %+v", cs[5])
	}
	if _, err := p.ReadCounter(0x12000099, 0, nil); !isErr(err, ErrInvalidArgument) {
		t.Errorf("unknown counter: %v", err)
	}
	if err := p.SetValueSet(p4src.AnnounceUDPPortID, []uint64{1, 2, 3, 4, 5}); !isErr(err, ErrResourceExhausted) {
		t.Errorf("5 members: %v", err)
	}
	if err := p.SetValueSet(p4src.AnnounceUDPPortID, []uint64{1 << 16}); !isErr(err, ErrInvalidArgument) {
		t.Errorf("17-bit member: %v", err)
	}
	mustOK(t, p.SetValueSet(p4src.AnnounceUDPPortID, []uint64{4792}))
	if vs, _ := p.ValueSet(p4src.AnnounceUDPPortID); len(vs) != 1 || vs[0] != 4792 {
		t.Errorf("value set %v", vs)
	}
	s := CloneSession{SessionID: p4src.CNPCloneSession, EgressPort: 3}
	mustOK(t, p.InsertCloneSession(s))
	if err := p.InsertCloneSession(s); !isErr(err, ErrAlreadyExists) {
		t.Errorf("clone twice: %v", err)
	}
	if err := p.InsertCloneSession(CloneSession{SessionID: 1, EgressPort: p4src.NumPorts}); !isErr(err, ErrInvalidArgument) {
		t.Errorf("clone to port 512: %v", err)
	}
	s.EgressPort = 4
	mustOK(t, p.ModifyCloneSession(s))
	if got, _ := p.ReadCloneSession(p4src.CNPCloneSession); got.EgressPort != 4 {
		t.Errorf("clone session %+v", got)
	}
	mustOK(t, p.DeleteCloneSession(p4src.CNPCloneSession))
	if _, err := p.ReadCloneSession(p4src.CNPCloneSession); !isErr(err, ErrNotFound) {
		t.Errorf("deleted session: %v", err)
	}
}

func TestDigestQueue(t *testing.T) {
	p := newTest(t, p4src.PortModeFastcnp)
	pause := func(now int64) {
		ingress(t, p, pfcFrame(t, 1<<losslessPr, losslessPr, 100), portR, now)
		ingress(t, p, pfcFrame(t, 1<<losslessPr, losslessPr, 0), portR, now+10)
	}
	pause(1000) // not configured: not queued
	if n, _ := p.DigestsPending(p4src.DigestPortState); n != 0 {
		t.Fatalf("%d queued without a config", n)
	}
	mustOK(t, p.SetDigestConfig(p4src.DigestPortState, DigestConfig{MaxTimeoutNs: 1000, MaxListSize: 3}))
	pause(2000) // PAUSE + RESUME
	var l DigestList
	if p.PollDigestList(2500, &l) {
		t.Fatal("list before timeout or size")
	}
	if !p.PollDigestList(3000, &l) || len(l.Digests) != 2 || l.Digests[0].Event != p4src.PortEventPause || l.Digests[1].Event != p4src.PortEventResumeNotCongested {
		t.Fatalf("list after timeout: %+v", l)
	}
	first := l.ListID
	pause(4000)
	pause(5000) // 4 queued: a full list of 3 is ready at once
	if !p.PollDigestList(5020, &l) || len(l.Digests) != 3 || l.ListID == first {
		t.Fatalf("full list: %+v", l)
	}
	mustOK(t, p.AckDigestList(p4src.DigestPortState, first))
	if err := p.AckDigestList(p4src.DigestPortState, first); !isErr(err, ErrNotFound) {
		t.Errorf("ack twice: %v", err)
	}
	// Overflow: DigestQueueCap digests fit, the rest are counted.
	for i := range DigestQueueCap {
		pause(int64(10_000 + 100*i))
	}
	if d, _ := p.DigestDrops(p4src.DigestPortState); d != DigestQueueCap+1 {
		t.Errorf("drops %d, want %d", d, DigestQueueCap+1)
	}
	mustOK(t, p.DeleteDigestConfig(p4src.DigestPortState))
	if _, err := p.ReadDigestConfig(p4src.DigestPortState); !isErr(err, ErrNotFound) {
		t.Errorf("deleted config: %v", err)
	}
	if err := p.SetDigestConfig(0x17000099, DigestConfig{}); !isErr(err, ErrInvalidArgument) {
		t.Errorf("unknown digest: %v", err)
	}
	d := Digest{DigestID: p4src.DigestCNP, Port: 1, SrcAddr: 2, DstAddr: 3, WindowBytes: 4, QueueBytes: 5, TimestampNs: 6}
	if got := d.AppendFields(nil); len(got) != 6 || got[3] != 4 || got[5] != 6 {
		t.Errorf("AppendFields %v", got)
	}
}
