package pipeline

import (
	"encoding/binary"
	"testing"

	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/wire"
)

const (
	incGroup = 5
	incMsg   = 9
	incID    = incGroup<<16 | incMsg
	incSport = 6000
	incQP    = 0x200
	firstPSN = 100
	flowLen  = 4
)

func workerIP(w int) wire.Addr4 { return wire.Addr4{10, 0, 0, byte(10 + w)} }

// newINC returns a pipeline routing 10.0.1.0/24 to port 2, with an INC group of
// three workers (ranks 0..2, contributors mask 0b111) and their connections.
func newINC(t testing.TB) *Pipeline {
	t.Helper()
	return newINCProfile(t, ProfileV1Model)
}

func newINCProfile(t testing.TB, pr Profile) *Pipeline {
	t.Helper()
	p := New(Options{Profile: pr})
	route(t, p, ipR.Uint32()&0xFFFFFF00, 24, portR, macSw, macR)
	mustOK(t, p.InsertEntry(&TableEntry{TableID: p4src.TableIncGroup, Match: []FieldMatch{{FieldID: 1, Value: incGroup}},
		Action: Action{ID: p4src.ActionSetIncGroup, Params: []Param{{1, 0b111}, {2, 1}}}}))
	for w := range 4 {
		mustOK(t, p.InsertEntry(connEntry(workerIP(w), incSport, incQP, 0x300+uint32(w), p4src.ConnFlagIncUplink, uint64(w), incGroup, uint64(w))))
	}
	return p
}

func incPkt(w int, psn uint32, ids *wire.INCIDs, base int32) pkt {
	var v wire.INCVector
	for i := range v {
		v[i] = base + int32(i)
	}
	return pkt{src: workerIP(w), dst: ipR, sport: incSport, destQP: incQP, psn: psn, dscp: 26, ecn: wire.ECT0, vec: &v, ids: ids}
}

func idsFor(msg uint16, first, flen uint32) *wire.INCIDs {
	return &wire.INCIDs{GroupID: incGroup, MessageID: msg, FirstPSN: first, FlowLen: flen, OpID: 77}
}

func TestINCAggregation(t *testing.T) {
	p := newINC(t)
	ids := idsFor(incMsg, firstPSN, flowLen)
	// Worker 0 claims the slot of offset 0.
	r := ingress(t, p, incPkt(0, firstPSN, ids, 1).build(t), portS, 1000)
	if r.Verdict != VerdictDrop || r.DropReason != DropINCConsumed {
		t.Fatalf("first contribution: verdict %d reason %d, want consumed", r.Verdict, r.DropReason)
	}
	slot := int(IncSlot(incID, 0))
	if reg(t, p, p4src.RegIncSlotBitmap, slot) != 1 || reg(t, p, p4src.RegIncSlotIncID, slot) != incID || reg(t, p, p4src.RegIncSlotValue0+3, slot) != 4 {
		t.Fatal("slot not claimed")
	}
	if reg(t, p, p4src.RegIncFlowIncID, 0) != incID || reg(t, p, p4src.RegIncFlowFirstPSN, 0) != firstPSN || reg(t, p, p4src.RegIncFlowLen, 0) != flowLen {
		t.Fatal("flow map not recorded")
	}
	// A retransmission of worker 0: duplicate.
	r = ingress(t, p, incPkt(0, firstPSN, ids, 1).build(t), portS, 1001)
	if r.DropReason != DropINCDuplicate || ctr(t, p, p4src.CounterIncDuplicates, portS).Packets != 1 {
		t.Fatalf("duplicate: reason %d", r.DropReason)
	}
	// Worker 1 adds; worker 2 (negative values: wrapping sum) completes.
	r = ingress(t, p, incPkt(1, firstPSN, idsFor(incMsg, firstPSN, flowLen), 100).build(t), portS, 1002)
	if r.DropReason != DropINCConsumed || reg(t, p, p4src.RegIncSlotBitmap, slot) != 0b011 {
		t.Fatalf("second contribution: reason %d bitmap %b", r.DropReason, reg(t, p, p4src.RegIncSlotBitmap, slot))
	}
	in := incPkt(2, firstPSN, idsFor(incMsg, firstPSN, flowLen), -1000).build(t)
	r = ingress(t, p, in, portS, 1003)
	if r.Verdict != VerdictForward || r.EgressPort != portR {
		t.Fatalf("last contribution: verdict %d reason %d port %d, want RESULT forwarded to %d", r.Verdict, r.DropReason, r.EgressPort, portR)
	}
	var f wire.Frame
	mustOK(t, wire.Parse(r.Frame, wire.ParseOptions{}, &f))
	if f.INC.Flags != wire.INCFlagIDs|wire.INCFlagResult {
		t.Errorf("RESULT flags %#x", f.INC.Flags)
	}
	// The operation ID is the data flow's (77), carried into the RESULT.
	if want := (wire.INCIDs{GroupID: incGroup, MessageID: incMsg, FirstPSN: 0, OpID: 77, FlowLen: flowLen}); f.INCIDs != want {
		t.Errorf("RESULT IDS %+v, want %+v", f.INCIDs, want)
	}
	for i, v := range f.INCVector {
		if want := int32(1+i) + int32(100+i) + int32(-1000+i); v != want {
			t.Errorf("lane %d = %d, want %d", i, v, want)
		}
	}
	if len(r.Frame) != len(in) || f.IPv4.TTL != 63 {
		t.Errorf("RESULT length %d (in %d), TTL %d", len(r.Frame), len(in), f.IPv4.TTL)
	}
	if ok, err := wire.VerifyICRC(r.Frame[14:]); !ok || err != nil {
		t.Errorf("RESULT ICRC invalid (%v)", err)
	}
	if ok, _ := wire.VerifyIPv4Checksum(r.Frame[14:]); !ok {
		t.Error("RESULT IPv4 checksum invalid")
	}
	if reg(t, p, p4src.RegIncSlotDone, slot) != 1 || reg(t, p, p4src.RegIncSlotBitmap, slot) != 0b111 || reg(t, p, p4src.RegIncSlotStart, slot) != 1003 {
		t.Error("slot not marked done at the completion time")
	}
	for _, c := range []struct {
		id   uint32
		want uint64
	}{{p4src.CounterIncContributions, 3}, {p4src.CounterIncResults, 1}, {p4src.CounterDropped, 0}} {
		if got := ctr(t, p, c.id, portS).Packets; got != c.want {
			t.Errorf("counter %#x = %d, want %d", c.id, got, c.want)
		}
	}

	// Offset 1 without IDS parts: the flow map gives the INC ID; the RESULT grows.
	for w := range 2 {
		if r := ingress(t, p, incPkt(w, firstPSN+1, nil, 10).build(t), portS, 2000); r.DropReason != DropINCConsumed {
			t.Fatalf("worker %d offset 1: reason %d", w, r.DropReason)
		}
	}
	in = incPkt(2, firstPSN+1, nil, 10).build(t)
	r = ingress(t, p, in, portS, 2001)
	if r.Verdict != VerdictForward || len(r.Frame) != len(in)+wire.INCIDsLen {
		t.Fatalf("offset-1 RESULT: verdict %d, %d bytes (in %d)", r.Verdict, len(r.Frame), len(in))
	}
	mustOK(t, wire.Parse(r.Frame, wire.ParseOptions{}, &f))
	if f.INCIDs.FirstPSN != 1 || f.INCIDs.INCID() != incID || f.INCVector[5] != 3*15 {
		t.Errorf("offset-1 RESULT IDS %+v lane5 %d", f.INCIDs, f.INCVector[5])
	}
	inIP := binary.BigEndian.Uint16(in[16:])
	if f.IPv4.TotalLen != inIP+16 || f.UDP.Length != inIP-20+16 {
		t.Errorf("lengths ip %d udp %d, in ip %d", f.IPv4.TotalLen, f.UDP.Length, inIP)
	}
	if ok, err := wire.VerifyICRC(r.Frame[14:]); !ok || err != nil {
		t.Errorf("grown RESULT ICRC invalid (%v)", err)
	}
	if ok, _ := wire.VerifyIPv4Checksum(r.Frame[14:]); !ok {
		t.Error("grown RESULT IPv4 checksum invalid")
	}
	// Beyond the flow length: dropped.
	r = ingress(t, p, incPkt(0, firstPSN+flowLen, nil, 0).build(t), portS, 3000)
	if r.DropReason != DropINCOffset || ctr(t, p, p4src.CounterDropped, portS).Packets != 1 {
		t.Errorf("offset >= flow length: reason %d", r.DropReason)
	}
	// PSN before the first PSN wraps (mod 2^24) far beyond the flow length.
	r = ingress(t, p, incPkt(0, firstPSN-1, nil, 0).build(t), portS, 3001)
	if r.DropReason != DropINCOffset {
		t.Errorf("PSN below first: reason %d", r.DropReason)
	}
}

func TestINCSlotBusy(t *testing.T) {
	p := newINC(t)
	// Find another message whose (INC ID, offset 0) hashes to the same slot.
	want := IncSlot(incID, 0)
	var other uint16
	for m := uint16(0); m < 0xFFFF; m++ {
		if m != incMsg && IncSlot(incGroup<<16|uint32(m), 0) == want {
			other = m
			break
		}
	}
	if other == 0 {
		t.Fatal("no colliding message")
	}
	ingress(t, p, incPkt(0, firstPSN, idsFor(incMsg, firstPSN, flowLen), 1).build(t), portS, 1000)
	r := ingress(t, p, incPkt(3, 500, idsFor(other, 500, 1), 1).build(t), portS, 1001)
	if r.DropReason != DropINCSlotBusy || ctr(t, p, p4src.CounterIncSlotBusy, portS).Packets != 1 {
		t.Fatalf("slot busy: reason %d", r.DropReason)
	}
	if reg(t, p, p4src.RegIncSlotBitmap, int(want)) != 1 || reg(t, p, p4src.RegIncSlotIncID, int(want)) != incID {
		t.Error("busy slot was changed")
	}
}

func TestINCGroupMissAndNonINC(t *testing.T) {
	p := newINC(t)
	// Group 6 has no inc_group entry: forwarded unchanged as a normal packet.
	ids := &wire.INCIDs{GroupID: 6, MessageID: 1, FirstPSN: firstPSN, FlowLen: flowLen}
	r := ingress(t, p, incPkt(0, firstPSN, ids, 1).build(t), portS, 1000)
	if r.Verdict != VerdictForward || r.EgressPort != portR || r.Frame[14+20+8+12] != wire.INCFlagIDs {
		t.Fatalf("group miss: verdict %d reason %d", r.Verdict, r.DropReason)
	}
	// An INC packet of a connection without the INC flag is forwarded too.
	mustOK(t, p.ModifyEntry(connEntry(workerIP(1), incSport, incQP, 0x301, p4src.ConnFlagCNPTarget, 1, incGroup, 1)))
	r = ingress(t, p, incPkt(1, firstPSN, idsFor(incMsg, firstPSN, flowLen), 1).build(t), portS, 1000)
	if r.Verdict != VerdictForward || ctr(t, p, p4src.CounterIncContributions, portS).Packets != 0 {
		t.Fatalf("non-INC connection: verdict %d reason %d", r.Verdict, r.DropReason)
	}
}

// incRoute installs the inc_route entry of the bucket of INC ID id: port 3,
// destination MAC 02:00:00:00:00:03 (the switch above).
func incRoute(t *testing.T, p *Pipeline, id uint32) wire.MAC {
	t.Helper()
	mac3 := wire.MAC{2, 0, 0, 0, 0, 3}
	bucket := IncBucket(id, wire.INCVersion, p4src.RoCEUDPPort)
	mustOK(t, p.InsertEntry(&TableEntry{TableID: p4src.TableIncRoute, Match: []FieldMatch{{FieldID: 1, Value: uint64(bucket)}},
		Action: Action{ID: p4src.ActionSetNexthop, Params: []Param{{1, 3}, {2, macU64(macSw)}, {3, macU64(mac3)}}}}))
	return mac3
}

// setGroup (re)writes the inc_group entry of incGroup.
func setGroup(t *testing.T, p *Pipeline, mask uint64, root bool) {
	t.Helper()
	e := &TableEntry{TableID: p4src.TableIncGroup, Match: []FieldMatch{{FieldID: 1, Value: incGroup}},
		Action: Action{ID: p4src.ActionSetIncGroup, Params: []Param{{1, mask}, {2, b2u(root)}}}}
	mustOK(t, p.ModifyEntry(e))
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// childPort makes port a child port of rank rank.
func childPort(t *testing.T, p *Pipeline, port uint16, rank uint64) {
	t.Helper()
	mustOK(t, p.InsertEntry(&TableEntry{TableID: p4src.TableIncChildPort, Match: []FieldMatch{{FieldID: 1, Value: uint64(port)}},
		Action: Action{ID: p4src.ActionSetIncChild, Params: []Param{{1, rank}}}}))
}

// partialPkt is a partial aggregate of offset off of message incMsg (vector
// base, base+1, ...), as a lower switch sends it.
func partialPkt(off uint32, base int32, flags uint8) pkt {
	k := incPkt(0, firstPSN+off, &wire.INCIDs{GroupID: incGroup, MessageID: incMsg, FirstPSN: off, OpID: 77, FlowLen: flowLen}, base)
	k.src, k.incFlags, k.ttl = wire.Addr4{10, 0, 0, 12}, flags, 63
	return k
}

// TestINCPartialAggregates walks one offset up a two-tier tree (docs/dataplane.md
// ingress 8-9): a leaf that is not the root emits a partial aggregate by
// hash routing; the spine aggregates the partials of its child ports, whose
// ranks come from inc_child_port, into the RESULT, which ipv4_route carries.
func TestINCPartialAggregates(t *testing.T) {
	// The leaf: three local workers, not the root.
	leaf := newINC(t)
	setGroup(t, leaf, 0b111, false)
	mac3 := incRoute(t, leaf, incID)
	var r IngressResult
	for w := range 3 {
		r = ingress(t, leaf, incPkt(w, firstPSN, idsFor(incMsg, firstPSN, flowLen), int32(10*w)).build(t), portS, 1000)
	}
	if r.Verdict != VerdictForward || r.EgressPort != 3 || wire.MAC(r.Frame[0:6]) != mac3 {
		t.Fatalf("leaf aggregate: verdict %d reason %d port %d, want a partial to port 3", r.Verdict, r.DropReason, r.EgressPort)
	}
	var f wire.Frame
	mustOK(t, wire.Parse(r.Frame, wire.ParseOptions{}, &f))
	if f.INC.Flags != wire.INCFlagIDs|wire.INCFlagPartial || !f.INC.IsPartial() {
		t.Errorf("leaf aggregate flags %#x, want IDS|PARTIAL", f.INC.Flags)
	}
	if want := (wire.INCIDs{GroupID: incGroup, MessageID: incMsg, FirstPSN: 0, OpID: 77, FlowLen: flowLen}); f.INCIDs != want {
		t.Errorf("partial IDS %+v, want %+v", f.INCIDs, want)
	}
	if f.INCVector[1] != 1+11+21 {
		t.Errorf("partial lane 1 = %d, want 33", f.INCVector[1])
	}
	if ok, err := wire.VerifyICRC(r.Frame[14:]); !ok || err != nil {
		t.Errorf("partial ICRC invalid (%v)", err)
	}

	// The spine: children on ports 4 (rank 0) and 5 (rank 1), the root.
	spine := New(Options{})
	route(t, spine, ipR.Uint32()&0xFFFFFF00, 24, portR, macSw, macR)
	mustOK(t, spine.InsertEntry(&TableEntry{TableID: p4src.TableIncGroup, Match: []FieldMatch{{FieldID: 1, Value: incGroup}},
		Action: Action{ID: p4src.ActionSetIncGroup, Params: []Param{{1, 0b11}, {2, 1}}}}))
	childPort(t, spine, 4, 0)
	childPort(t, spine, 5, 1)
	incRoute(t, spine, incID) // never used by a RESULT
	for _, tc := range []struct {
		name   string
		k      pkt
		port   uint16
		reason DropReason
		ctr    uint32 // counter of the port that must be 1
	}{
		{"partial from a host port", partialPkt(0, 1, wire.INCFlagPartial), portS, DropINCNotChild, p4src.CounterDropped},
		{"partial without IDS part", func() pkt { k := partialPkt(0, 1, wire.INCFlagPartial); k.ids = nil; return k }(), 4, DropINCNotChild, p4src.CounterDropped},
		{"partial beyond its flow length", partialPkt(flowLen, 1, wire.INCFlagPartial), 4, DropINCOffset, p4src.CounterDropped},
		{"first child", partialPkt(0, 1, wire.INCFlagPartial), 4, DropINCConsumed, p4src.CounterIncContributions},
		{"first child again: duplicate", partialPkt(0, 1, wire.INCFlagPartial), 4, DropINCDuplicate, p4src.CounterIncDuplicates},
	} {
		r := ingress(t, spine, tc.k.build(t), tc.port, 2000)
		if r.Verdict != VerdictDrop || r.DropReason != tc.reason {
			t.Errorf("%s: verdict %d reason %d, want drop %d", tc.name, r.Verdict, r.DropReason, tc.reason)
		}
		if got := ctr(t, spine, tc.ctr, int(tc.port)).Packets; got < 1 {
			t.Errorf("%s: counter %#x[%d] = %d", tc.name, tc.ctr, tc.port, got)
		}
	}
	r = ingress(t, spine, partialPkt(0, 100, wire.INCFlagPartial).build(t), 5, 2001)
	if r.Verdict != VerdictForward || r.EgressPort != portR {
		t.Fatalf("second child: verdict %d reason %d port %d, want the RESULT to port %d", r.Verdict, r.DropReason, r.EgressPort, portR)
	}
	mustOK(t, wire.Parse(r.Frame, wire.ParseOptions{}, &f))
	if f.INC.Flags != wire.INCFlagIDs|wire.INCFlagResult || f.INCIDs.OpID != 77 || f.INCVector[2] != 3+102 || f.IPv4.TTL != 62 {
		t.Errorf("spine RESULT flags %#x op %d lane 2 %d ttl %d", f.INC.Flags, f.INCIDs.OpID, f.INCVector[2], f.IPv4.TTL)
	}
	if got := ctr(t, spine, p4src.CounterIncResults, 5).Packets; got != 1 {
		t.Errorf("inc_results[5] = %d", got)
	}
	// A RESULT is never aggregated again, nor hash routed: it follows ipv4_route.
	res := partialPkt(0, 7, wire.INCFlagResult|wire.INCFlagPartial)
	r = ingress(t, spine, res.build(t), 4, 3000)
	if r.Verdict != VerdictForward || r.EgressPort != portR || ctr(t, spine, p4src.CounterIncContributions, 4).Packets != 1 {
		t.Errorf("received RESULT: verdict %d port %d, want forwarded to %d unaggregated", r.Verdict, r.EgressPort, portR)
	}
}

// TestINCPartialTransit: a partial aggregate of a group this switch does not
// aggregate passes through by hash routing; another protocol version hashes
// to another bucket (no entry: ipv4_route).
func TestINCPartialTransit(t *testing.T) {
	p := newINC(t)
	mustOK(t, p.DeleteEntry(&TableEntry{TableID: p4src.TableIncGroup, Match: []FieldMatch{{FieldID: 1, Value: incGroup}}}))
	childPort(t, p, 4, 0)
	incRoute(t, p, incID)
	k := partialPkt(1, 5, wire.INCFlagPartial)
	r := ingress(t, p, k.build(t), 4, 1000)
	if r.Verdict != VerdictForward || r.EgressPort != 3 {
		t.Fatalf("transit partial: verdict %d reason %d port %d, want port 3", r.Verdict, r.DropReason, r.EgressPort)
	}
	k.incVersion = 2
	if IncBucket(incID, 2, p4src.RoCEUDPPort) != IncBucket(incID, wire.INCVersion, p4src.RoCEUDPPort) {
		if r = ingress(t, p, k.build(t), 4, 1000); r.EgressPort != portR {
			t.Errorf("version-2 partial to port %d, want %d by IP", r.EgressPort, portR)
		}
	}
}

// TestINCDoneSlot: a completed slot remembers its key for the group's slot
// timeout (a late copy is a duplicate, nothing changes), is free at once for
// any other key, and after the timeout takes the same key as a new
// aggregation.
func TestINCDoneSlot(t *testing.T) {
	p := newINC(t)
	mustOK(t, p.InsertEntry(&TableEntry{TableID: p4src.TableIncSlotTimeout, Match: []FieldMatch{{FieldID: 1, Value: incGroup}},
		Action: Action{ID: p4src.ActionSetIncSlotTimeout, Params: []Param{{1, 5000}}}}))
	slot := IncSlot(incID, 0)
	for w := range 3 {
		ingress(t, p, incPkt(w, firstPSN, idsFor(incMsg, firstPSN, flowLen), 1).build(t), portS, 1000)
	}
	var other uint16
	for m := uint16(1); m < 0xFFFF; m++ {
		if m != incMsg && IncSlot(incGroup<<16|uint32(m), 0) == slot {
			other = m
			break
		}
	}
	for _, tc := range []struct {
		name   string
		k      pkt
		now    int64
		reason DropReason
		bitmap uint64
		done   uint64
		id     uint32
	}{
		{"late copy, 4999 ns after completion", incPkt(1, firstPSN, idsFor(incMsg, firstPSN, flowLen), 9), 5999, DropINCDuplicate, 0b111, 1, incID},
		{"late copy of a non-first packet", incPkt(2, firstPSN, nil, 9), 5999, DropINCDuplicate, 0b111, 1, incID},
		{"another key claims at once", incPkt(3, 900, idsFor(other, 900, 1), 1), 6001, DropNone, 0b1000, 0, incGroup<<16 | uint32(other)},
	} {
		r := ingress(t, p, tc.k.build(t), portS, tc.now)
		if tc.reason != DropNone && r.DropReason != tc.reason {
			t.Errorf("%s: reason %d, want %d", tc.name, r.DropReason, tc.reason)
		}
		if b, d, id := reg(t, p, p4src.RegIncSlotBitmap, int(slot)), reg(t, p, p4src.RegIncSlotDone, int(slot)), reg(t, p, p4src.RegIncSlotIncID, int(slot)); b != tc.bitmap || d != tc.done || id != uint64(tc.id) {
			t.Errorf("%s: slot bitmap %b done %d INC ID %#x, want %b %d %#x", tc.name, b, d, id, tc.bitmap, tc.done, tc.id)
		}
	}
	// Rank 3 alone is not the mask 0b111: the other message waits (the slot
	// is held). Its RESULT would need ranks 0..2; the takeover counter stays 0.
	if got := ctr(t, p, p4src.CounterIncSlotTakeovers, portS).Packets; got != 0 {
		t.Errorf("a done slot was counted as taken over: %d", got)
	}
	if got := ctr(t, p, p4src.CounterIncDuplicates, portS).Packets; got != 2 {
		t.Errorf("inc_duplicates = %d, want 2", got)
	}

	// The same key after the timeout: a new aggregation.
	q := newINC(t)
	mustOK(t, q.InsertEntry(&TableEntry{TableID: p4src.TableIncSlotTimeout, Match: []FieldMatch{{FieldID: 1, Value: incGroup}},
		Action: Action{ID: p4src.ActionSetIncSlotTimeout, Params: []Param{{1, 5000}}}}))
	for w := range 3 {
		ingress(t, q, incPkt(w, firstPSN, idsFor(incMsg, firstPSN, flowLen), 1).build(t), portS, 1000)
	}
	r := ingress(t, q, incPkt(0, firstPSN, idsFor(incMsg, firstPSN, flowLen), 1).build(t), portS, 6000)
	if r.DropReason != DropINCConsumed || reg(t, q, p4src.RegIncSlotBitmap, int(slot)) != 1 || reg(t, q, p4src.RegIncSlotDone, int(slot)) != 0 {
		t.Errorf("same key after the timeout: reason %d, bitmap %b", r.DropReason, reg(t, q, p4src.RegIncSlotBitmap, int(slot)))
	}
}

// TestINCOperationID: the operation ID is part of the slot key: the same INC
// ID and offset with another operation ID is another aggregation (here: the
// slot is busy), never added to the first.
func TestINCOperationID(t *testing.T) {
	p := newINC(t)
	ingress(t, p, incPkt(0, firstPSN, idsFor(incMsg, firstPSN, flowLen), 1).build(t), portS, 1000)
	ids := idsFor(incMsg, firstPSN, flowLen)
	ids.OpID = 78
	r := ingress(t, p, incPkt(1, firstPSN, ids, 1).build(t), portS, 1001)
	slot := int(IncSlot(incID, 0))
	if r.DropReason != DropINCSlotBusy || reg(t, p, p4src.RegIncSlotBitmap, slot) != 1 || reg(t, p, p4src.RegIncSlotOp, slot) != 77 {
		t.Errorf("other operation: reason %d bitmap %b op %d, want busy, 0b1, 77", r.DropReason,
			reg(t, p, p4src.RegIncSlotBitmap, slot), reg(t, p, p4src.RegIncSlotOp, slot))
	}
}

// TestINCFlowWays: the data-flow map keeps INC_FLOW_WAYS data flows per
// connection (spec 04 step 2): packets of two flows of one connection find
// their flow by PSN, newest first; a retransmitted first packet records
// nothing new; a fifth flow replaces the oldest.
func TestINCFlowWays(t *testing.T) {
	p := newINC(t)
	setGroup(t, p, 0b1, true) // worker 0 alone completes every slot
	// Flows of messages 1..4 of worker 0 (connection 0), 4 packets each, PSNs 100.. .
	first := func(m uint16) uint32 { return firstPSN + 4*uint32(m-1) }
	for m := uint16(1); m <= 4; m++ {
		r := ingress(t, p, incPkt(0, first(m), idsFor(m, first(m), flowLen), 1).build(t), portS, 1000)
		if r.Verdict != VerdictForward {
			t.Fatalf("message %d first packet: verdict %d reason %d", m, r.Verdict, r.DropReason)
		}
	}
	if got := reg(t, p, p4src.RegIncFlowNextWay, 0); got != 0 {
		t.Fatalf("next way after 4 flows = %d, want 0", got)
	}
	// The first packet of message 4 again: known, nothing written.
	ingress(t, p, incPkt(0, first(4), idsFor(4, first(4), flowLen), 1).build(t), portS, 1000)
	if got := reg(t, p, p4src.RegIncFlowNextWay, 0); got != 0 {
		t.Errorf("a retransmitted first packet moved the next way to %d", got)
	}
	for _, tc := range []struct {
		psn     uint32
		msg     uint16
		offset  uint32
		dropped bool
	}{
		{first(3) + 2, 3, 2, false},
		{first(1) + 3, 1, 3, false},
		{first(4) + 1, 4, 1, false},
		{first(1) - 1, 0, 0, true}, // before every flow
		{first(4) + 4, 0, 0, true}, // past every flow
	} {
		r := ingress(t, p, incPkt(0, tc.psn, nil, 1).build(t), portS, 2000)
		if tc.dropped {
			if r.DropReason != DropINCOffset {
				t.Errorf("PSN %d: reason %d, want no data flow", tc.psn, r.DropReason)
			}
			continue
		}
		var f wire.Frame
		if r.Verdict != VerdictForward || wire.Parse(r.Frame, wire.ParseOptions{}, &f) != nil ||
			f.INCIDs.MessageID != tc.msg || f.INCIDs.FirstPSN != tc.offset || f.INCIDs.OpID != 77 {
			t.Errorf("PSN %d: verdict %d reason %d, IDS %+v, want message %d offset %d", tc.psn, r.Verdict, r.DropReason, f.INCIDs, tc.msg, tc.offset)
		}
	}
	// A zero-length flow is not recorded; a fifth flow replaces message 1's.
	ingress(t, p, incPkt(0, 900, idsFor(9, 900, 0), 1).build(t), portS, 3000)
	ingress(t, p, incPkt(0, first(5), idsFor(5, first(5), flowLen), 1).build(t), portS, 3000)
	if got := reg(t, p, p4src.RegIncFlowIncID, 0); got != incGroup<<16|5 {
		t.Errorf("way 0 holds INC ID %#x, want message 5", got)
	}
	if r := ingress(t, p, incPkt(0, first(1)+1, nil, 1).build(t), portS, 3000); r.DropReason != DropINCOffset {
		t.Errorf("message 1 after eviction: reason %d, want no data flow", r.DropReason)
	}
	if r := ingress(t, p, incPkt(0, first(2)+1, nil, 1).build(t), portS, 3000); r.Verdict != VerdictForward {
		t.Errorf("message 2 after eviction: verdict %d reason %d", r.Verdict, r.DropReason)
	}
}

func TestHashCheckValues(t *testing.T) {
	// Standard check values over "123456789".
	if got := crc32Of([]byte("123456789")); got != 0xCBF43926 {
		t.Errorf("crc32 = %#x, want 0xCBF43926", got)
	}
	if got := crc16Of([]byte("123456789")); got != 0xBB3D {
		t.Errorf("crc16/ARC = %#x, want 0xBB3D", got)
	}
	// The field lists are the big-endian bytes of the fields.
	if FlowHash(0x31323334, 0x35363738) != crc32Of([]byte("12345678")) {
		t.Error("FlowHash is not crc32 of src ++ dst")
	}
	if IncSlot(0x31323334, 0x35363738) != crc32Of([]byte("12345678"))&(p4src.IncSlots-1) {
		t.Error("IncSlot is not crc32 of inc_id ++ offset")
	}
	if IncBucket(0x31323334, '5', 0x3637) != uint32(crc16Of([]byte("1234567")))&(p4src.IncBuckets-1) {
		t.Error("IncBucket is not crc16 of inc_id ++ version ++ port")
	}
}
