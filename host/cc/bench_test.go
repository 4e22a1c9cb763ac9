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
