package agent

import (
	"testing"

	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/wire"
)

var (
	tMACA = wire.MAC{2, 0, 0, 0, 0, 0xa}
	tMACB = wire.MAC{2, 0, 0, 0, 0, 0xb}
	tIPA  = wire.Addr4{10, 0, 0, 1}
	tIPB  = wire.Addr4{10, 0, 0, 2}
)

func TestCodecRoundTrip(t *testing.T) {
	fwd := Path{SrcMAC: tMACA, DstMAC: tMACB, SrcIP: tIPA, DstIP: tIPB, SrcPort: 50000}
	back := Path{SrcMAC: tMACB, DstMAC: tMACA, SrcIP: tIPB, DstIP: tIPA, SrcPort: 50000}
	vlan := fwd
	vlan.VLAN, vlan.PCP, vlan.VID = true, 3, 7
	b := make([]byte, 2048)
	var f wire.Frame
	var ev Event

	for _, p := range []*Path{&fwd, &vlan} {
		pkt := Packet{PSN: 0x123456, Offset: 70000, Payload: 1000, AckReq: true}
		n, err := p.BuildData(b, 0x222, &pkt)
		if err != nil {
			t.Fatal(err)
		}
		if n != p.Overhead()+1000 {
			t.Fatalf("data frame %d bytes, want %d", n, p.Overhead()+1000)
		}
		if err := Decode(b[:n], &f, &ev); err != nil {
			t.Fatal(err)
		}
		if ok, err := wire.VerifyICRC(b[f.Off[wire.LayerIPv4]:n]); err != nil || !ok {
			t.Fatalf("data ICRC invalid: %v", err)
		}
		if ev.Kind != KindData || ev.DestQP != 0x222 || ev.PSN != 0x123456 || !ev.AckReq || ev.CE ||
			len(ev.Payload) != 1000 || !CheckPattern(ev.Payload, 70000) || CheckPattern(ev.Payload, 70001) ||
			f.IPv4.ECN() != wire.ECT0 || f.IPv4.DSCP() != DataDSCP || ev.SrcIP != tIPA || ev.SrcMAC != tMACA {
			t.Fatalf("data decoded as %+v (ECN %v)", ev, f.IPv4.ECN())
		}
		if _, err := wire.MarkCE(b[f.Off[wire.LayerIPv4]:n]); err != nil {
			t.Fatal(err)
		}
		if err := Decode(b[:n], &f, &ev); err != nil || !ev.CE {
			t.Fatalf("CE not seen: %v", err)
		}
	}

	rep := Reply{Ack: true, AckPSN: 77, Syndrome: wire.SyndromeNAKPSNSequence, MSN: 9}
	n, err := back.BuildAck(b, 0x111, &rep, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := Decode(b[:n], &f, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Kind != KindAck || ev.DestQP != 0x111 || ev.PSN != 77 || ev.AETH.Syndrome != rep.Syndrome || ev.AETH.MSN != 9 || f.IPv4.ECN() != wire.NotECT {
		t.Fatalf("ack decoded as %+v", ev)
	}

	ext := wire.CNPExt{Version: 1, Flags: wire.CNPExtWindowValid | wire.CNPExtBySwitch, SwitchID: 4, Window: 9000, Port: 2, QueueBytes: 5}
	for _, e := range []*wire.CNPExt{nil, &ext} {
		n, err := back.BuildCNP(b, 0x111, e)
		if err != nil {
			t.Fatal(err)
		}
		if err := Decode(b[:n], &f, &ev); err != nil {
			t.Fatal(err)
		}
		want := cc.CNPExt{}
		if e != nil {
			want = cc.CNPExt{WindowValid: true, BySwitch: true, SwitchID: 4, Window: 9000, Port: 2, QueueBytes: 5}
		}
		if ev.Kind != KindCNP || ev.DestQP != 0x111 || ev.CNP != want || f.IPv4.DSCP() != CNPDSCP {
			t.Fatalf("cnp decoded as %+v", ev)
		}
	}

	ann := wire.NewAnnouncement(wire.AnnounceUp, wire.AnnounceFlagCNPTarget)
	ann.SenderQPN, ann.ReceiverQPN = 0x111, 0x222
	n, err = fwd.BuildAnnouncement(b, 0, &ann, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := wire.Parse(b[:n], wire.ParseOptions{AnnouncePorts: []uint16{wire.DefaultAnnouncePort}}, &f); err != nil {
		t.Fatal(err)
	}
	got := f.Announcement
	if !f.Has(wire.LayerAnnouncement) || got.SenderIP != tIPA || got.ReceiverIP != tIPB || got.UDPSrcPort != 50000 ||
		got.SenderQPN != 0x111 || got.ReceiverQPN != 0x222 || got.Flags != wire.AnnounceFlagCNPTarget || got.Type != wire.AnnounceUp {
		t.Fatalf("announcement %+v", got)
	}
	if err := Decode(b[:n], &f, &ev); err != nil || ev.Kind != KindOther {
		t.Fatalf("announcement classified as %v (%v)", ev.Kind, err)
	}
}

func TestINCVectorsAndChecker(t *testing.T) {
	p := INCParams{Group: 5, Message: 9, Op: 3, Workers: 3, Offsets: 4, Seed: 42}
	// Deterministic, and different per rank and offset.
	a, b := INCContribution(42, 5, 9, 0, 0), INCContribution(42, 5, 9, 0, 0)
	if a != b || a == INCContribution(42, 5, 9, 1, 0) || a == INCContribution(42, 5, 9, 0, 1) || a == INCContribution(43, 5, 9, 0, 0) {
		t.Fatal("vectors not deterministic or not distinct")
	}
	// Frames built by workers, summed like the switch (wrapping int32).
	buf := make([]byte, 512)
	var f wire.Frame
	var ev Event
	c, err := NewINCChecker(p)
	if err != nil {
		t.Fatal(err)
	}
	for off := uint32(0); off < 4; off++ {
		var sum wire.INCVector
		for rank := uint8(0); rank < 3; rank++ {
			w := p
			w.Rank = rank
			path := Path{SrcMAC: tMACA, DstMAC: tMACB, SrcIP: wire.Addr4{10, 0, 0, 10 + rank}, DstIP: tIPB, SrcPort: 6000}
			pkt := Packet{Seq: uint64(off), PSN: 100 + off, First: off == 0}
			n, err := path.BuildINC(buf, 0x200, &pkt, 100, w)
			if err != nil {
				t.Fatal(err)
			}
			if err := Decode(buf[:n], &f, &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Kind != KindINC || ev.HasIDs != (off == 0) || n-RoCEOverhead != INCPayload(off == 0) {
				t.Fatalf("worker frame: kind %v ids %v len %d", ev.Kind, ev.HasIDs, n)
			}
			if ev.HasIDs && (ev.IDs.FirstPSN != 100 || ev.IDs.FlowLen != 4 || ev.IDs.GroupID != 5 || ev.IDs.MessageID != 9 || ev.IDs.OpID != 3) {
				t.Fatalf("IDS %+v", ev.IDs)
			}
			for i := range sum {
				sum[i] += ev.Vector[i]
			}
		}
		ids := wire.INCIDs{GroupID: 5, MessageID: 9, FirstPSN: off, FlowLen: 4}
		// The kinds of what a switch makes of them: a partial aggregate
		// on its way up, the RESULT at the root (RESULT wins).
		for _, k := range []struct {
			flags uint8
			kind  Kind
		}{{wire.INCFlagPartial, KindINCPartial}, {wire.INCFlagResult, KindINCResult}, {wire.INCFlagResult | wire.INCFlagPartial, KindINCResult}} {
			env := wire.Envelope{SrcMAC: tMACA, DstMAC: tMACB, SrcIP: tIPA, DstIP: tIPB, SrcPort: 6000, DstPort: wire.RoCEv2UDPPort}
			n, err := wire.BuildINC(buf, &env, wire.BTH{Opcode: wire.OpRCSendOnly, DestQP: 0x200, PSN: 100 + off},
				wire.INC{Flags: k.flags, Version: wire.INCVersion}, &ids, &sum)
			if err != nil {
				t.Fatal(err)
			}
			if err := Decode(buf[:n], &f, &ev); err != nil || ev.Kind != k.kind || ev.Vector != sum {
				t.Fatalf("flags %#x: kind %v (%v), want %v", k.flags, ev.Kind, err, k.kind)
			}
		}
		if !c.Matches(&ids) || !c.OnResult(&ids, &sum) {
			t.Fatalf("offset %d: correct sum rejected", off)
		}
		if c.Complete() != (off == 3) {
			t.Fatalf("complete %v at offset %d", c.Complete(), off)
		}
	}
	bad := INCExpected(p, 0)
	bad[3]++
	ids := wire.INCIDs{GroupID: 5, MessageID: 9, FirstPSN: 0}
	if c.OnResult(&ids, &bad) {
		t.Fatal("wrong sum accepted")
	}
	good := INCExpected(p, 0)
	c.OnResult(&ids, &good) // duplicate
	ids.FirstPSN = 4
	c.OnResult(&ids, &good) // offset past the flow
	if st := c.Stats(); st != (INCStats{Results: 7, Correct: 4, Wrong: 1, Duplicates: 1, BadOffset: 1}) {
		t.Fatalf("stats %+v", st)
	}
	if other := (wire.INCIDs{GroupID: 5, MessageID: 10}); c.Matches(&other) {
		t.Fatal("other message matched")
	}
	for _, bad := range []INCParams{{Workers: 1, Offsets: 1}, {Group: 1, Workers: 0, Offsets: 1}, {Group: 1, Workers: 2, Rank: 2, Offsets: 1}, {Group: 1, Workers: 1}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
