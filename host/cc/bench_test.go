package cc

import (
	"testing"
	"time"
)

// benchAlg returns an armed nvidia-cx "dcqcn-fastcnp" flow at 100 Gb/s,
// behind the Algorithm interface as the runtimes use it.
func benchAlg(b *testing.B) Algorithm {
	b.Helper()
	p, err := DCQCNPreset("nvidia-cx")
	if err != nil {
		b.Fatal(err)
	}
	a, err := New("dcqcn-fastcnp", cfgWith(p))
	if err != nil {
		b.Fatal(err)
	}
	if err := a.OnCNP(winCNP(0, 50_000)); err != nil {
		b.Fatal(err)
	}
	return a
}

// BenchmarkDCQCNOnSend: one 1500-byte packet per event at 100 Gb/s spacing
// (120 ns); a byte-counter event every 22 packets.
func BenchmarkDCQCNOnSend(b *testing.B) {
	a := benchAlg(b)
	now := time.Duration(0)
	b.ReportAllocs()
	for b.Loop() {
		now += 120
		if err := a.OnSend(Send{Now: now, Bytes: 1500}); err != nil {
			b.Fatal(err)
		}
		if a.NextTimer() == NoTimer { // recovered: cut again to stay on the busy path
			if err := a.OnCNP(cnpAt(now)); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkDCQCNOnAck: ACK with an RTT sample and one INT hop (validated,
// otherwise unused by DCQCN).
func BenchmarkDCQCNOnAck(b *testing.B) {
	a := benchAlg(b)
	hops := []INTHop{{TS: 1, TxBytes: 2, QLen: 3, LinkRate: 100 * gbps}}
	now := time.Duration(0)
	b.ReportAllocs()
	for b.Loop() {
		now += 120
		if err := a.OnAck(Ack{Now: now, Bytes: 1500, RTT: 8 * us, Hops: hops}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDCQCNOnCNP: a switch CNP with a window every 2 us, so that cuts
// (every 4 us, nvidia-cx rateReducePeriod) and suppressed CNPs alternate.
func BenchmarkDCQCNOnCNP(b *testing.B) {
	a := benchAlg(b)
	now := time.Duration(0)
	b.ReportAllocs()
	for b.Loop() {
		now += 2 * us
		if err := a.OnCNP(winCNP(now, 40_000)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDCQCNOnTimer: OnTimer at every NextTimer deadline, with a CNP
// every 100 timer events so that the flow never stays recovered.
func BenchmarkDCQCNOnTimer(b *testing.B) {
	a := benchAlg(b)
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		next := a.NextTimer()
		if i++; i%100 == 0 || next == NoTimer {
			if err := a.OnCNP(cnpAt(a.(*DCQCN).now + 1)); err != nil {
				b.Fatal(err)
			}
			continue
		}
		if err := a.OnTimer(next); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNPOnCE: the receiver NP for a known flow.
func BenchmarkNPOnCE(b *testing.B) {
	np, err := NewNP[uint32](4 * us)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Duration(0)
	b.ReportAllocs()
	for b.Loop() {
		now += 120
		if _, err := np.OnCE(uint32(now/120)%64, now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNPFlowOnCE: the per-flow NP state without a map.
func BenchmarkNPFlowOnCE(b *testing.B) {
	var f NPFlow
	now := time.Duration(0)
	b.ReportAllocs()
	for b.Loop() {
		now += 120
		if _, err := f.OnCE(now, 4*us); err != nil {
			b.Fatal(err)
		}
	}
}

// newBench returns algorithm algo at 100 Gb/s with the parameter sets of
// allConfig, changed by mod.
func newBench(b *testing.B, algo string, mod func(*Config)) Algorithm {
	b.Helper()
	cfg := allConfig(b)
	if mod != nil {
		mod(&cfg)
	}
	a, err := New(algo, cfg)
	if err != nil {
		b.Fatal(err)
	}
	return a
}

// benchAcks drives a with one 1000-byte packet sent and one ACK per
// iteration, 80 ns apart (100 Gb/s), one window of data (100 packets) in
// flight; RTT samples between 8 and 12 us, ECE on every 8th ACK, and hops
// INT records (a 100 Gb/s port with a queue that rises and falls).
func benchAcks(b *testing.B, a Algorithm, hops int) {
	b.Helper()
	rec := make([]INTHop, hops)
	now := time.Duration(0)
	for range 100 {
		now += 80
		if err := a.OnSend(Send{Now: now, Bytes: 1000}); err != nil {
			b.Fatal(err)
		}
	}
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		now += 80
		i++
		if err := a.OnSend(Send{Now: now, Bytes: 1000}); err != nil {
			b.Fatal(err)
		}
		for j := range rec {
			rec[j] = INTHop{TS: now, TxBytes: uint64(i) * 1000, QLen: int64(i%50) * 1000, LinkRate: 100 * gbps}
		}
		ack := Ack{Now: now, Bytes: 1000, RTT: 8*us + time.Duration(i%5)*us, ECE: i%8 == 0, Hops: rec}
		if err := a.OnAck(ack); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTIMELYOnAck: paper2015 behaviour (every RTT sample updates).
func BenchmarkTIMELYOnAck(b *testing.B) {
	benchAcks(b, newBench(b, "timely", func(c *Config) { c.TIMELY.PerRTT = false }), 0)
}

// BenchmarkTIMELYOnAckPerRTT: hpcc-sim (one update per round trip).
func BenchmarkTIMELYOnAckPerRTT(b *testing.B) {
	benchAcks(b, newBench(b, "timely", nil), 0)
}

// BenchmarkDCTCPOnAck: hpcc-sim, ECE on every 8th ACK.
func BenchmarkDCTCPOnAck(b *testing.B) {
	benchAcks(b, newBench(b, "dctcp", nil), 0)
}

// BenchmarkHPCCOnAck: hpcc-sim (fast react), 3 INT hops per ACK.
func BenchmarkHPCCOnAck(b *testing.B) {
	benchAcks(b, newBench(b, "hpcc", nil), 3)
}

// BenchmarkHPCCOnAckMultiRate: hpcc-sim with MultiRate, 3 INT hops per ACK.
func BenchmarkHPCCOnAckMultiRate(b *testing.B) {
	benchAcks(b, newBench(b, "hpcc", func(c *Config) { c.HPCC.MultiRate = true }), 3)
}

// BenchmarkHPCCOnAck5Hops: hpcc-sim, 5 INT hops (a fat-tree path).
func BenchmarkHPCCOnAck5Hops(b *testing.B) {
	benchAcks(b, newBench(b, "hpcc", nil), 5)
}
