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
		Action: Action{ID: p4src.ActionSetIncGroup, Params: []Param{{1, 0b111}}}}))
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
	if want := (wire.INCIDs{GroupID: incGroup, MessageID: incMsg, FirstPSN: 0, OpID: 0, FlowLen: flowLen}); f.INCIDs != want {
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
	if reg(t, p, p4src.RegIncSlotBitmap, slot) != 0 {
		t.Error("slot not freed")
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

func TestINCResultBucketRouting(t *testing.T) {
	p := newINC(t)
	mac3 := wire.MAC{2, 0, 0, 0, 0, 3}
	bucket := IncBucket(incID, wire.INCVersion, p4src.RoCEUDPPort)
	mustOK(t, p.InsertEntry(&TableEntry{TableID: p4src.TableIncRoute, Match: []FieldMatch{{FieldID: 1, Value: uint64(bucket)}},
		Action: Action{ID: p4src.ActionSetNexthop, Params: []Param{{1, 3}, {2, macU64(macSw)}, {3, macU64(mac3)}}}}))
	// A RESULT made here goes to the bucket's next hop.
	for w := range 3 {
		r := ingress(t, p, incPkt(w, firstPSN, idsFor(incMsg, firstPSN, flowLen), 1).build(t), portS, 1000)
		if w == 2 && (r.Verdict != VerdictForward || r.EgressPort != 3 || wire.MAC(r.Frame[0:6]) != mac3) {
			t.Fatalf("RESULT: verdict %d port %d dst %v, want port 3 to %v", r.Verdict, r.EgressPort, wire.MAC(r.Frame[0:6]), mac3)
		}
		// The packet keeps the port_config of its routed port (none here).
		if w == 2 && r.Meta.PortCfg.Hit {
			t.Error("port config of the bucket port")
		}
	}
	// A RESULT received from another switch (no connection) is routed the same way.
	k := incPkt(0, 7, idsFor(incMsg, 0, flowLen), 1)
	k.src = wire.Addr4{10, 9, 9, 9}
	k.incFlags = wire.INCFlagResult
	r := ingress(t, p, k.build(t), portS, 2000)
	if r.Verdict != VerdictForward || r.EgressPort != 3 {
		t.Fatalf("received RESULT: verdict %d port %d, want 3", r.Verdict, r.EgressPort)
	}
	// Another protocol version hashes elsewhere (a different bucket, no entry): routed by IP.
	k.incVersion = 2
	if IncBucket(incID, 2, p4src.RoCEUDPPort) != bucket {
		r = ingress(t, p, k.build(t), portS, 2000)
		if r.EgressPort != portR {
			t.Errorf("version-2 RESULT to port %d, want %d by IP", r.EgressPort, portR)
		}
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
