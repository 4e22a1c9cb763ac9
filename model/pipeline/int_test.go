package pipeline

import (
	"testing"

	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/wire"
)

// intFrame is a RoCEv2 SEND from S to R (DSCP 26, ECT(0)) with an INT header
// carrying hops (newest first) and the header flags.
func intFrame(t testing.TB, payload int, flags uint8, hops []wire.INTHop) []byte {
	t.Helper()
	b := make([]byte, 4096)
	env := &wire.Envelope{DstMAC: macSw, SrcMAC: macS, SrcIP: ipS, DstIP: ipR, DSCP: 26, ECN: wire.ECT0, SrcPort: sportSR}
	bth := wire.BTH{Opcode: wire.OpRCSendOnly, PKey: wire.DefaultPKey, DestQP: qpR, PSN: 1}
	n, err := wire.BuildRoCEINT(b, env, bth, wire.INTHeader{Flags: flags, Version: wire.INTVersion}, hops, make([]byte, payload))
	mustOK(t, err)
	return b[:n]
}

func parse(t testing.TB, frame []byte) *wire.Frame {
	t.Helper()
	var f wire.Frame
	mustOK(t, wire.Parse(frame, wire.ParseOptions{}, &f))
	return &f
}

// Egress step 7 (docs/dataplane.md "INT"): a port in INT mode puts the HPCC
// record of the port in front of the records of a lossless packet with an INT
// header; port_tx_bytes counts every packet that leaves, records included.
func TestINTRecord(t *testing.T) {
	p := newTest(t, p4src.PortModeInt)
	old := wire.INTHop{TimestampNs: 5, Port: 9, TxBytes: 77, QueueBytes: 3, RateBytesPerMs: 1_250_000}
	in := intFrame(t, 1000, 0, []wire.INTHop{old})
	// A lossy packet of 100 bytes of payload leaves port 2 first: it counts in
	// port_tx_bytes (no record: not lossless, no INT header).
	lossy := dataSR(100)
	lossy.dscp = 0
	lf, lm := through(t, p, lossy.build(t), portS, 500)
	if r := egress(t, p, lf, &lm, 600); len(r.Frame) != len(lf) {
		t.Fatalf("lossy packet grew to %d bytes", len(r.Frame))
	}
	tx0 := uint64(len(lf))
	// Two INT packets queued back to back: the first leaves with the second
	// still queued (queue after it: len(in)); the second with an empty queue.
	f1, m1 := through(t, p, append([]byte(nil), in...), portS, 1000)
	f2, m2 := through(t, p, append([]byte(nil), in...), portS, 1100)
	r1 := egress(t, p, f1, &m1, 0x1234_5678_9abc) // a 48-bit time above 2^32
	out1 := append([]byte(nil), r1.Frame...)
	r2 := egress(t, p, f2, &m2, 2000)
	out2 := append([]byte(nil), r2.Frame...)
	for i, tc := range []struct {
		out  []byte
		want wire.INTHop
	}{
		{out1, wire.INTHop{TimestampNs: 0x1234_5678_9abc, Port: portR, TxBytes: tx0, QueueBytes: uint32(len(in)), RateBytesPerMs: rate100G}},
		{out2, wire.INTHop{TimestampNs: 2000, Port: portR, TxBytes: tx0 + uint64(len(in)) + wire.INTHopLen, QueueBytes: 0, RateBytesPerMs: rate100G}},
	} {
		if len(tc.out) != len(in)+wire.INTHopLen {
			t.Fatalf("packet %d: %d bytes, want %d", i, len(tc.out), len(in)+wire.INTHopLen)
		}
		f := parse(t, tc.out)
		if f.INT.HopCount != 2 || f.INTHops[0] != tc.want || f.INTHops[1] != old {
			t.Errorf("packet %d: %+v records %+v %+v, want %+v then %+v", i, f.INT, f.INTHops[0], f.INTHops[1], tc.want, old)
		}
		ip := tc.out[wire.EthernetLen:]
		if f.IPv4.TotalLen != uint16(len(in)-wire.EthernetLen+wire.INTHopLen) || f.UDP.Length != f.IPv4.TotalLen-wire.IPv4Len {
			t.Errorf("packet %d: lengths IPv4 %d UDP %d", i, f.IPv4.TotalLen, f.UDP.Length)
		}
		if ok, err := wire.VerifyIPv4Checksum(ip); !ok || err != nil {
			t.Errorf("packet %d: IPv4 checksum %v %v", i, ok, err)
		}
		if ok, err := wire.VerifyICRC(ip); !ok || err != nil {
			t.Errorf("packet %d: ICRC %v %v", i, ok, err)
		}
		pay, err := f.RoCEPayload(tc.out)
		if err != nil || len(pay) != 1000 {
			t.Errorf("packet %d: payload %d %v", i, len(pay), err)
		}
		// Everything else as routing left it: MACs, TTL.
		if f.Ethernet.Src != macSw || f.Ethernet.Dst != macR || f.IPv4.TTL != 63 {
			t.Errorf("packet %d: %+v TTL %d", i, f.Ethernet, f.IPv4.TTL)
		}
	}
	want := tx0 + 2*(uint64(len(in))+wire.INTHopLen)
	if got := reg(t, p, p4src.RegPortTxBytes, portR); got != want {
		t.Errorf("port_tx_bytes[2] = %d, want %d", got, want)
	}
}

// No record: the echo flag, a full packet, another port mode, a lossy class, no
// INT header. port_tx_bytes counts them without a record.
func TestINTNoRecord(t *testing.T) {
	full := make([]wire.INTHop, wire.INTMaxHops)
	for i := range full {
		full[i] = wire.INTHop{TimestampNs: uint64(i), RateBytesPerMs: 1}
	}
	lossy := func(b []byte) []byte {
		// DSCP 0: priority 0, lossy (checksum fixed by hand: the TOS word).
		c := append([]byte(nil), b...)
		ip := c[wire.EthernetLen:]
		_ = wire.SetECN(ip, wire.ECT0)
		ip[1] = 0<<2 | byte(wire.ECT0)
		mustOK(t, wire.SetIPv4Checksum(ip[:wire.IPv4Len]))
		return c
	}
	for _, tc := range []struct {
		name  string
		mode  uint64
		frame []byte
	}{
		{"echo flag", p4src.PortModeInt, intFrame(t, 100, wire.INTFlagEcho, nil)},
		{"full", p4src.PortModeInt, intFrame(t, 100, 0, full)},
		{"mode ecn", p4src.PortModeECN, intFrame(t, 100, 0, nil)},
		{"mode fastcnp", p4src.PortModeFastcnp, intFrame(t, 100, 0, nil)},
		{"mode off", 0, intFrame(t, 100, 0, nil)},
		{"lossy", p4src.PortModeInt, lossy(intFrame(t, 100, 0, nil))},
		{"no INT header", p4src.PortModeInt, dataSR(100).build(t)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newTest(t, tc.mode)
			f, m := through(t, p, tc.frame, portS, 1000)
			r := egress(t, p, f, &m, 2000)
			if len(r.Frame) != len(f) || string(r.Frame) != string(f) {
				t.Errorf("frame changed: %d -> %d bytes", len(f), len(r.Frame))
			}
			if got := reg(t, p, p4src.RegPortTxBytes, portR); got != uint64(len(tc.frame)) {
				t.Errorf("port_tx_bytes = %d, want %d", got, len(tc.frame))
			}
		})
	}
}

// Two switches in INT mode (the same pipeline twice, as two hops): the records
// are newest first, and the ICRC the sender made still verifies.
func TestINTTwoHops(t *testing.T) {
	p := newTest(t, p4src.PortModeInt)
	q := newTest(t, p4src.PortModeInt)
	in := intFrame(t, 64, 0, nil)
	f, m := through(t, p, in, portS, 100)
	h1 := append([]byte(nil), egress(t, p, f, &m, 200).Frame...)
	// Restore the MACs the next switch expects.
	copy(h1[0:6], macSw[:])
	f2, m2 := through(t, q, h1, portS, 300)
	h2 := egress(t, q, f2, &m2, 400).Frame
	pf := parse(t, h2)
	if pf.INT.HopCount != 2 || pf.INTHops[0].TimestampNs != 400 || pf.INTHops[1].TimestampNs != 200 {
		t.Errorf("records %+v %+v %+v", pf.INT, pf.INTHops[0], pf.INTHops[1])
	}
	if ok, err := wire.VerifyICRC(h2[wire.EthernetLen:]); !ok || err != nil {
		t.Errorf("ICRC after two hops: %v %v", ok, err)
	}
	if pf.IPv4.TTL != 62 {
		t.Errorf("TTL %d", pf.IPv4.TTL)
	}
}

// A hop count above INT_MAX_HOPS is malformed (v1model parser error FastcnpMalformed).
func TestINTMalformed(t *testing.T) {
	p := newTest(t, p4src.PortModeInt)
	fr := intFrame(t, 100, 0, nil)
	fr[wire.EthernetLen+wire.IPv4Len+wire.UDPLen+wire.BTHLen+2] = wire.INTMaxHops + 1
	r := ingress(t, p, fr, portS, 10)
	if r.Verdict != VerdictDrop || r.DropReason != DropMalformed || ctr(t, p, p4src.CounterMalformed, portS).Packets != 1 {
		t.Errorf("verdict %d reason %d", r.Verdict, r.DropReason)
	}
}

// Egress with a record does not allocate (the record is written into the
// pipeline's buffer).
func TestINTAllocs(t *testing.T) {
	p := newTest(t, p4src.PortModeInt)
	in := intFrame(t, 1000, 0, nil)
	now := int64(0)
	var r IngressResult
	var e EgressResult
	buf := make([]byte, len(in))
	allocs := testing.AllocsPerRun(100, func() {
		now += 1000
		copy(buf, in)
		_ = p.Ingress(buf, portS, now, &r)
		p.OnEnqueue(&r.Meta)
		_ = p.Egress(r.Frame, r.Meta.EgressPort, now+100, &r.Meta, &e)
	})
	if allocs != 0 || len(e.Frame) != len(in)+wire.INTHopLen {
		t.Errorf("%v allocs, frame %d", allocs, len(e.Frame))
	}
}
