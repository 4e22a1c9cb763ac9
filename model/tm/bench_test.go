package tm

import (
	"testing"
	"time"
)

// BenchmarkEnqueueDequeue measures one Enqueue plus one Dequeue with a standing queue
// of depth frames spread over 4 ingress ports (the hot path of both runtimes).
func BenchmarkEnqueueDequeue(b *testing.B) {
	cases := []struct {
		name  string
		sched SchedulerMode
		ll    uint8
		prios []int
		depth int
	}{
		{"strict/lossy/depth64", SchedStrict, 0, []int{0}, 64},
		{"strict/lossless/depth64", SchedStrict, 1 << 3, []int{3}, 64},
		{"lossless-first/mixed/depth256", SchedLosslessFirst, 1 << 3, []int{0, 3, 5}, 256},
		{"dwrr/mixed/depth256", SchedLosslessFirstDWRR, 1 << 3, []int{0, 1, 2, 3}, 256},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			m, err := New[int](Config{
				Ports: ports(5, 100*gbps, 1000), BufferBytes: 32 << 20, Lossless: tc.ll,
				Scheduler: tc.sched, WireOverhead: true,
			}, nil)
			if err != nil {
				b.Fatal(err)
			}
			now := int64(0)
			i := 0
			enq := func() {
				p := tc.prios[i%len(tc.prios)]
				if _, err := m.Enqueue(i, 1000, 1+i%4, 0, p, now); err != nil {
					b.Fatal(err)
				}
				i++
			}
			for range tc.depth {
				enq()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				enq()
				d, ok, err := m.Dequeue(0, now)
				if err != nil || !ok {
					b.Fatalf("dequeue: ok=%v err=%v", ok, err)
				}
				now = d.TxEnd
			}
		})
	}
}

// BenchmarkIncast20to1 runs the 20-to-1 incast of TestIncast20to1 (1 Gb/s, PFC on,
// 20 ms of virtual time) and reports simulated packets (switch arrivals) per second.
func BenchmarkIncast20to1(b *testing.B) {
	cfg := incastCfg{senders: 20, rate: gbps, delay: 2000, frame: 1500, buffer: 300_000, duration: 20_000_000, lossless: true}
	var pkts, events int64
	start := time.Now()
	for range b.N {
		r := runIncast(b, cfg)
		if r.sw.LosslessDrops() != 0 {
			b.Fatal("lossless drop")
		}
		pkts += r.switchRx
		events += r.events
	}
	sec := time.Since(start).Seconds()
	b.ReportMetric(float64(pkts)/sec, "sim-pkts/s")
	b.ReportMetric(float64(events)/sec, "sim-events/s")
}

// BenchmarkIncast20to1At100G is the same incast at 100 Gb/s, 1 us links, 2 ms.
func BenchmarkIncast20to1At100G(b *testing.B) {
	cfg := incastCfg{senders: 20, rate: 100 * gbps, delay: 1000, frame: 1000, buffer: 32 << 20, duration: 2_000_000, lossless: true}
	var pkts int64
	start := time.Now()
	for range b.N {
		r := runIncast(b, cfg)
		if r.sw.LosslessDrops() != 0 {
			b.Fatal("lossless drop")
		}
		pkts += r.switchRx
	}
	b.ReportMetric(float64(pkts)/time.Since(start).Seconds(), "sim-pkts/s")
}
