package pipeline

import (
	"testing"

	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/wire"
)

func announcement(t *testing.T, dport uint16, magic uint32) []byte {
	t.Helper()
	b := make([]byte, 256)
	a := wire.NewAnnouncement(wire.AnnounceUp, wire.AnnounceFlagCNPTarget)
	a.SenderIP, a.ReceiverIP, a.UDPSrcPort, a.SenderQPN, a.ReceiverQPN = ipS, ipR, sportSR, qpS, qpR
	n, err := wire.BuildAnnouncement(b, &wire.Envelope{DstMAC: macSw, SrcMAC: macS, SrcIP: ipS, DstIP: ipR, DstPort: dport}, &a)
	mustOK(t, err)
	if magic != wire.AnnouncementMagic {
		b[14+20+8], b[14+20+8+3] = byte(magic>>24), byte(magic)
	}
	return b[:n]
}

// TestAnnouncementPunted: ANNOUNCE_UDP_PORT (4792) is an announcement port without
// any value-set write (BMv2 cannot write one); the value set adds ports; 4791 stays
// RoCEv2 whatever the value set holds.
func TestAnnouncementPunted(t *testing.T) {
	p := newTest(t, p4src.PortModeFastcnp)
	punted := func(dport uint16) bool {
		t.Helper()
		r := ingress(t, p, announcement(t, dport, wire.AnnouncementMagic), portS, 1000)
		return r.Verdict == VerdictToCPU
	}
	if p4src.AnnounceUDPPort != wire.DefaultAnnouncePort {
		t.Fatalf("AnnounceUDPPort %d, wire.DefaultAnnouncePort %d", p4src.AnnounceUDPPort, wire.DefaultAnnouncePort)
	}
	steps := []struct {
		name     string
		valueSet []uint64
		port     uint16
		want     bool
	}{
		{"default port, empty value set", nil, p4src.AnnounceUDPPort, true},
		{"other port, empty value set", nil, 9000, false},
		{"value-set port", []uint64{9000}, 9000, true},
		{"default port with another value set", []uint64{9000}, p4src.AnnounceUDPPort, true},
		{"a port no longer in the value set", []uint64{9001}, 9000, false},
		{"4791 in the value set stays RoCEv2", []uint64{p4src.RoCEUDPPort}, p4src.RoCEUDPPort, false},
	}
	for _, st := range steps {
		mustOK(t, p.SetValueSet(p4src.AnnounceUDPPortID, st.valueSet))
		if got := punted(st.port); got != st.want {
			t.Errorf("%s: port %d punted %v, want %v", st.name, st.port, got, st.want)
		}
	}
	mustOK(t, p.SetValueSet(p4src.AnnounceUDPPortID, nil))
	frame := announcement(t, p4src.AnnounceUDPPort, wire.AnnouncementMagic)
	before := ctr(t, p, p4src.CounterAnnouncements, portS)
	r := ingress(t, p, frame, portS, 1000)
	if r.Verdict != VerdictToCPU || r.PacketIn != (PacketIn{IngressPort: portS, Reason: p4src.PuntReasonAnnouncement}) || len(r.Frame) != len(frame) {
		t.Fatalf("announcement: verdict %d packet_in %+v", r.Verdict, r.PacketIn)
	}
	if c := ctr(t, p, p4src.CounterAnnouncements, portS); c.Packets != before.Packets+1 || c.Bytes != before.Bytes+uint64(len(frame)) {
		t.Errorf("announcements %+v, before %+v", c, before)
	}
	// Wrong magic on the default port: malformed, without any value set.
	bad := ctr(t, p, p4src.CounterMalformed, portS)
	r = ingress(t, p, announcement(t, p4src.AnnounceUDPPort, 0x12345678), portS, 1000)
	if r.DropReason != DropMalformed || ctr(t, p, p4src.CounterMalformed, portS).Packets != bad.Packets+1 {
		t.Errorf("bad magic: reason %d, malformed %+v before %+v", r.DropReason, ctr(t, p, p4src.CounterMalformed, portS), bad)
	}
}

func TestMalformedCounted(t *testing.T) {
	good := dataSR(100)
	full := func(t *testing.T) []byte { return good.build(t) }
	ipv6 := func(t *testing.T) []byte { b := full(t); b[14] = 0x65; return b }
	ihl4 := func(t *testing.T) []byte { b := full(t); b[14] = 0x44; return b }
	tests := []struct {
		name string
		f    func(t *testing.T) []byte
	}{
		{"short Ethernet", func(t *testing.T) []byte { return full(t)[:13] }},
		{"truncated IPv4", func(t *testing.T) []byte { return full(t)[:30] }},
		{"IPv4 version 6", ipv6},
		{"IHL 4", ihl4},
		{"truncated UDP", func(t *testing.T) []byte { return full(t)[:14+20+5] }},
		{"truncated BTH", func(t *testing.T) []byte { return full(t)[:14+20+8+11] }},
		{"truncated INC vector", func(t *testing.T) []byte {
			return incPkt(0, 1, nil, 0).build(t)[:14+20+8+12+4+63]
		}},
		{"truncated PFC", func(t *testing.T) []byte { return pfcFrame(t, 8, 3, 1)[:14+2+10] }},
		{"empty frame", func(t *testing.T) []byte { return nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newTest(t, p4src.PortModeFastcnp)
			r := ingress(t, p, tc.f(t), portS, 1000)
			if r.Verdict != VerdictDrop || r.DropReason != DropMalformed {
				t.Fatalf("verdict %d reason %d, want malformed drop", r.Verdict, r.DropReason)
			}
			if ctr(t, p, p4src.CounterMalformed, portS).Packets != 1 || ctr(t, p, p4src.CounterDropped, portS).Packets != 0 {
				t.Error("malformed not counted (or counted as dropped)")
			}
			if reg(t, p, p4src.RegPortQueueBytes, portR) != 0 || reg(t, p, p4src.RegPortPaused, portR) != 0 {
				t.Error("state changed by a malformed packet")
			}
		})
	}
}

func TestPacketOut(t *testing.T) {
	p := newTest(t, p4src.PortModeFastcnp)
	inner := dataSR(100).build(t)
	frame := append([]byte{9 >> 1, (9 & 1) << 7}, inner...) // egress_port 9, pad 0
	r := ingress(t, p, frame, p4src.CPUPort, 1000)
	if r.Verdict != VerdictForward || r.EgressPort != 9 || string(r.Frame) != string(inner) {
		t.Fatalf("packet_out: verdict %d port %d len %d", r.Verdict, r.EgressPort, len(r.Frame))
	}
	if r.Meta.Lossless {
		t.Error("packet_out is lossless")
	}
	// Port 300 (9 bits).
	frame = append([]byte{300 >> 1, (300 & 1) << 7}, inner...)
	if r := ingress(t, p, frame, p4src.CPUPort, 1000); r.EgressPort != 300 {
		t.Errorf("packet_out port %d, want 300", r.EgressPort)
	}
	// A truncated packet_out is malformed.
	if r := ingress(t, p, []byte{0}, p4src.CPUPort, 1000); r.DropReason != DropMalformed {
		t.Errorf("1-byte packet_out: reason %d", r.DropReason)
	}
}

func TestRoutingTTLAndDrops(t *testing.T) {
	tests := []struct {
		name       string
		k          pkt
		wantReason DropReason
		wantTTL    uint8
	}{
		{"TTL 2 forwarded", pkt{src: ipS, dst: ipR, sport: 1, dscp: 26, payload: 10, ttl: 2}, DropNone, 1},
		{"TTL 1 dropped", pkt{src: ipS, dst: ipR, sport: 1, dscp: 26, payload: 10, ttl: 1}, DropTTL, 0},
		{"no route", pkt{src: ipS, dst: wire.Addr4{192, 168, 0, 1}, sport: 1, payload: 10}, DropNoRoute, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newTest(t, p4src.PortModeFastcnp)
			r := ingress(t, p, tc.k.build(t), portS, 1000)
			if r.DropReason != tc.wantReason {
				t.Fatalf("reason %d, want %d", r.DropReason, tc.wantReason)
			}
			dropped := ctr(t, p, p4src.CounterDropped, portS).Packets
			if tc.wantReason == DropNone {
				var f wire.Frame
				mustOK(t, wire.Parse(r.Frame, wire.ParseOptions{}, &f))
				if f.IPv4.TTL != tc.wantTTL || f.Ethernet.Dst != macR || f.Ethernet.Src != macSw || dropped != 0 {
					t.Errorf("TTL %d MACs %v->%v dropped %d", f.IPv4.TTL, f.Ethernet.Src, f.Ethernet.Dst, dropped)
				}
				if ok, _ := wire.VerifyIPv4Checksum(r.Frame[14:]); !ok {
					t.Error("checksum invalid after TTL decrement")
				}
				if ok, _ := wire.VerifyICRC(r.Frame[14:]); !ok {
					t.Error("ICRC invalid after routing (TTL is masked)")
				}
			} else if dropped != 1 {
				t.Errorf("dropped = %d, want 1", dropped)
			}
		})
	}
}

func TestTrafficClassVLAN(t *testing.T) {
	p := newTest(t, p4src.PortModeFastcnp)
	// Tagged PCP 5 -> priority 5 lossless, at a higher priority than any DSCP rule.
	mustOK(t, p.InsertEntry(&TableEntry{TableID: p4src.TableTrafficClass, Priority: 20,
		Match:  []FieldMatch{{FieldID: 1, Value: 1}, {FieldID: 2, Value: 5, Mask: 7}},
		Action: Action{ID: p4src.ActionSetTrafficClass, Params: []Param{{1, 5}, {2, 1}}}}))
	k := dataSR(100)
	k.vlan, k.pcp, k.dscp = true, 5, 0
	r := ingress(t, p, k.build(t), portS, 1000)
	if r.Meta.Priority != 5 || !r.Meta.Lossless || r.Meta.L3Offset != 18 {
		t.Errorf("tagged: priority %d lossless %v l3 %d", r.Meta.Priority, r.Meta.Lossless, r.Meta.L3Offset)
	}
	// Untagged DSCP 26 -> 3; tagged DSCP 26 matches neither rule (vlan_valid is exact).
	if r := ingress(t, p, dataSR(100).build(t), portS, 1000); r.Meta.Priority != 3 {
		t.Errorf("untagged DSCP 26: priority %d", r.Meta.Priority)
	}
	k.pcp, k.dscp = 1, 26
	if r := ingress(t, p, k.build(t), portS, 1000); r.Meta.Priority != 0 || r.Meta.Lossless {
		t.Errorf("tagged PCP 1 DSCP 26: priority %d lossless %v, want default", r.Meta.Priority, r.Meta.Lossless)
	}
}

func TestCNPForTaggedPacketKeepsTag(t *testing.T) {
	p := newTest(t, p4src.PortModeFastcnp)
	mustOK(t, p.InsertEntry(&TableEntry{TableID: p4src.TableTrafficClass, Priority: 20,
		Match:  []FieldMatch{{FieldID: 1, Value: 1}, {FieldID: 2, Value: 3, Mask: 7}},
		Action: Action{ID: p4src.ActionSetTrafficClass, Params: []Param{{1, 3}, {2, 1}}}}))
	congest(t, p, 200_000)
	k := dataSR(1000)
	k.vlan, k.pcp = true, 3
	f, m := through(t, p, k.build(t), portS, 1000)
	r := egress(t, p, f, &m, 2000)
	if !r.CNP || len(r.CNPFrame) != CNPFrameLen+4 {
		t.Fatalf("CNP %v len %d", r.CNP, len(r.CNPFrame))
	}
	var pf wire.Frame
	mustOK(t, wire.Parse(r.CNPFrame, wire.ParseOptions{}, &pf))
	if !pf.Has(wire.LayerDot1Q) || pf.Dot1Q.PCP != 3 || !pf.Has(wire.LayerCNPExt) {
		t.Errorf("tagged CNP layers %b pcp %d", pf.Layers(), pf.Dot1Q.PCP)
	}
	if ok, _ := wire.VerifyICRC(r.CNPFrame[18:]); !ok {
		t.Error("tagged CNP ICRC invalid")
	}
	// The CNP was classified by its own headers: PCP 3 -> lossless, accounted length 78.
	if !r.CNPMeta.Lossless || r.CNPMeta.AcctLen != CNPFrameLen+4 {
		t.Errorf("CNP meta %+v", r.CNPMeta)
	}
}

func TestBadPortArguments(t *testing.T) {
	p := newTest(t, p4src.PortModeFastcnp)
	var ir IngressResult
	if err := p.Ingress(dataSR(10).build(t), p4src.NumPorts, 0, &ir); !isErr(err, ErrInvalidArgument) {
		t.Errorf("ingress port 512: %v", err)
	}
	_, m := through(t, p, dataSR(10).build(t), portS, 0)
	var er EgressResult
	if err := p.Egress(nil, portS, 0, &m, &er); !isErr(err, ErrInvalidArgument) {
		t.Errorf("egress on another port than meta: %v", err)
	}
	if reg(t, p, p4src.RegPortQueueBytes, portR) != dataLen-1000+10 {
		t.Error("rejected egress changed the queue")
	}
}
