package agent

import (
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/wire"
)

// The receiver's ECN echo: an ACK (or NAK) carries ECE when a CE-marked
// packet arrived since the previous one, this one included; its INT echo
// follows the arrival that triggers it.
func TestReceiverECEAndINTEcho(t *testing.T) {
	r, err := NewReceiver(ReceiverConfig{NoNP: true})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		psn             uint32
		ackReq, ce, INT bool
		ack, ece, echo  bool
	}{
		{0, false, true, false, false, false, false}, // CE, no ACK yet
		{1, true, false, true, true, true, true},     // the ACK echoes the earlier CE and this packet's INT
		{2, true, false, true, true, false, true},    // no CE since: no ECE
		{3, true, true, false, true, true, false},    // CE on the acked packet itself
		{5, false, false, false, true, false, false}, // NAK for the gap, no CE since
		{6, false, true, false, false, false, false}, // same gap: silent, CE remembered
		{4, true, false, false, true, true, false},   // the next ACK carries it
	}
	for i, st := range steps {
		rep, err := r.OnData(Arrival{Now: time.Duration(i), PSN: st.psn, AckReq: st.ackReq, CE: st.ce, INT: st.INT, Payload: 1})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Ack != st.ack || rep.ECE != st.ece || rep.EchoINT != st.echo {
			t.Errorf("step %d: ack %v ECE %v echo %v, want %v %v %v", i, rep.Ack, rep.ECE, rep.EchoINT, st.ack, st.ece, st.echo)
		}
	}
}

// Data with an INT header, the ACK that echoes its records (and the ECE
// bit), decoded again: the records come back in path order for host/cc.
func TestCodecINTAndECE(t *testing.T) {
	fwd := Path{SrcMAC: tMACA, DstMAC: tMACB, SrcIP: tIPA, DstIP: tIPB, SrcPort: 50000}
	back := Path{SrcMAC: tMACB, DstMAC: tMACA, SrcIP: tIPB, DstIP: tIPA, SrcPort: 50000, VLAN: true, PCP: 3, VID: 9}
	b := make([]byte, 2048)
	var f wire.Frame
	var ev Event
	pkt := Packet{PSN: 7, Offset: 1024, Payload: 1024, AckReq: true, INT: true}
	n, err := fwd.BuildData(b, 0x222, &pkt)
	if err != nil {
		t.Fatal(err)
	}
	if n != fwd.Overhead()+wire.INTHeaderLen+1024 {
		t.Fatalf("data with INT: %d bytes", n)
	}
	if err := Decode(b[:n], &f, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Kind != KindData || !ev.INT || ev.INTEcho || ev.NumHops != 0 || len(ev.Payload) != 1024 || !CheckPattern(ev.Payload, 1024) {
		t.Fatalf("data decoded as kind %v INT %v echo %v hops %d payload %d", ev.Kind, ev.INT, ev.INTEcho, ev.NumHops, len(ev.Payload))
	}
	// Two switches added records: newest (the second switch) first.
	recs := []wire.INTHop{
		{TimestampNs: 9000, Port: 2, TxBytes: 5000, QueueBytes: 300, RateBytesPerMs: 12_500_000},
		{TimestampNs: 8000, Port: 7, TxBytes: 1 << 40, QueueBytes: 0, RateBytesPerMs: 3_125_000},
	}
	rep := Reply{Ack: true, AckPSN: 7, Syndrome: wire.SyndromeACK, MSN: 1, ECE: true, EchoINT: true}
	ab := make([]byte, AckFrameMax)
	five := append(append([]wire.INTHop(nil), recs...), recs[0], recs[1], recs[0])
	if m, err := back.BuildAck(ab, 0x111, &rep, five); err != nil || m != AckFrameMax {
		t.Fatalf("longest ACK: %d bytes, %v; AckFrameMax %d", m, err, AckFrameMax)
	}
	m, err := back.BuildAck(ab, 0x111, &rep, recs)
	if err != nil {
		t.Fatal(err)
	}
	if err := Decode(ab[:m], &f, &ev); err != nil {
		t.Fatal(err)
	}
	if ok, err := wire.VerifyICRC(ab[f.Off[wire.LayerIPv4]:m]); !ok || err != nil {
		t.Errorf("ACK ICRC %v %v", ok, err)
	}
	if ev.Kind != KindAck || !ev.ECE || !ev.INTEcho || ev.NumHops != 2 || ev.AETH.MSN != 1 || ev.PSN != 7 {
		t.Fatalf("ack decoded as kind %v ECE %v echo %v hops %d AETH %+v", ev.Kind, ev.ECE, ev.INTEcho, ev.NumHops, ev.AETH)
	}
	var dst [wire.INTMaxHops]cc.INTHop
	hops, ok := ev.CCHops(&dst)
	want := []cc.INTHop{
		{TS: 8000, TxBytes: 1 << 40, QLen: 0, LinkRate: 25e9}, // first switch first
		{TS: 9000, TxBytes: 5000, QLen: 300, LinkRate: 100e9},
	}
	if !ok || len(hops) != 2 || hops[0] != want[0] || hops[1] != want[1] {
		t.Errorf("CCHops = %+v, %v; want %+v", hops, ok, want)
	}
	// The same from the parsed frame (the simulator's hosts).
	var fdst [wire.INTMaxHops]cc.INTHop
	if fh, ok := FrameCCHops(&f, &fdst); !ok || len(fh) != 2 || fh[0] != want[0] || fh[1] != want[1] {
		t.Errorf("FrameCCHops = %+v, %v; want %+v", fh, ok, want)
	}
	// A record without a link rate makes the records unusable.
	ev.Hops[1].RateBytesPerMs = 0
	if hops, ok := ev.CCHops(&dst); ok || hops != nil {
		t.Errorf("zero rate: %+v %v", hops, ok)
	}
	// A data packet's records (no echo flag) are not feedback.
	ev.INTEcho = false
	if hops, ok := ev.CCHops(&dst); !ok || hops != nil {
		t.Errorf("not an echo: %+v %v", hops, ok)
	}
	// An ACK without ECE or INT.
	plain := Reply{Ack: true, AckPSN: 8, Syndrome: wire.SyndromeACK}
	m, err = back.BuildAck(ab, 0x111, &plain, recs)
	if err != nil {
		t.Fatal(err)
	}
	if err := Decode(ab[:m], &f, &ev); err != nil || ev.ECE || ev.INT || f.BTH.Resv7 != 0 {
		t.Errorf("plain ACK: %v ECE %v INT %v", err, ev.ECE, ev.INT)
	}
	if fh, ok := FrameCCHops(&f, &fdst); !ok || fh != nil {
		t.Errorf("plain ACK: FrameCCHops = %+v, %v", fh, ok)
	}
}

// The sender hands an ACK's feedback to the algorithm (ECE and the INT
// records), on ACKs and on the NAKs that acknowledge something, and puts
// the INT header on its data packets when configured.
func TestSenderFeedback(t *testing.T) {
	st := &stub{rate: 1e9, window: cc.NoWindowCap}
	s, err := NewSender(SenderConfig{AckEvery: 1, INT: true}, st)
	if err != nil {
		t.Fatal(err)
	}
	if s.Config().Overhead != RoCEOverhead+wire.INTHeaderLen {
		t.Errorf("overhead %d, want %d", s.Config().Overhead, RoCEOverhead+wire.INTHeaderLen)
	}
	if err := s.Post(0, 3*DefaultMSS); err != nil {
		t.Fatal(err)
	}
	var pkts []Packet
	for now := time.Duration(0); len(pkts) < 3; now += time.Millisecond {
		p, ok, err := s.Next(now)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			if !p.INT || p.WireBytes != RoCEOverhead+wire.INTHeaderLen+DefaultMSS {
				t.Fatalf("packet %+v", p)
			}
			pkts = append(pkts, p)
		}
	}
	hops := []cc.INTHop{{TS: 1, TxBytes: 2, QLen: 3, LinkRate: 1e9}}
	if err := s.OnAckFeedback(10*time.Millisecond, pkts[0].PSN, wire.SyndromeACK, AckFeedback{ECE: true, Hops: hops}); err != nil {
		t.Fatal(err)
	}
	// A NAK for PSN 2: acknowledges packet 1.
	if err := s.OnAckFeedback(11*time.Millisecond, pkts[2].PSN, wire.SyndromeNAKPSNSequence, AckFeedback{ECE: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.OnAck(12*time.Millisecond, pkts[2].PSN, wire.SyndromeACK); err != nil {
		t.Fatal(err)
	}
	if len(st.acks) != 3 || !st.acks[0].ECE || len(st.acks[0].Hops) != 1 || st.acks[0].Hops[0] != hops[0] ||
		!st.acks[1].ECE || st.acks[1].Hops != nil || st.acks[2].ECE {
		t.Errorf("algorithm saw %+v", st.acks)
	}
	if got := s.Stats(); got.ECEAcks != 2 || got.INTAcks != 1 {
		t.Errorf("stats ECE %d INT %d", got.ECEAcks, got.INTAcks)
	}
}
