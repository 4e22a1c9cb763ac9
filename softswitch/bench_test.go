package softswitch

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/afpacket"
	"github.com/fastcnp/fastcnp/internal/netns"
	"github.com/fastcnp/fastcnp/internal/netns/netnstest"
	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/model/tm"
	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/wire"
)

func macU64(m net.HardwareAddr) uint64 {
	var v uint64
	for _, b := range m {
		v = v<<8 | uint64(b)
	}
	return v
}

// programRoute installs a route directly in the pipeline (no P4Runtime).
func programRoute(b testing.TB, s *Switch, dst netip.Prefix, port uint16, src, dmac net.HardwareAddr) {
	b.Helper()
	a := dst.Addr().As4()
	err := s.Exec(context.Background(), func(p *pipeline.Pipeline) error {
		return p.InsertEntry(&pipeline.TableEntry{TableID: p4src.TableIPv4Route,
			Match: []pipeline.FieldMatch{{FieldID: 1, Value: uint64(a[0])<<24 | uint64(a[1])<<16 | uint64(a[2])<<8 | uint64(a[3]), PrefixLen: int32(dst.Bits())}},
			Action: pipeline.Action{ID: p4src.ActionSetNexthop, Params: []pipeline.Param{
				{ID: 1, Value: uint64(port)}, {ID: 2, Value: macU64(src)}, {ID: 3, Value: macU64(dmac)}}}})
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDataPath is the runtime's per-frame work without sockets or goroutines:
// ingress (parser, tables), TM enqueue (+ pipeline enqueue hook), dequeue at the
// shaped time (+ egress hook), delay line, frame recycling. One op = one frame.
func BenchmarkDataPath(b *testing.B) {
	for _, size := range []int{64, 1500} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			l1, l2 := newMemLink(), newMemLink()
			cfg := Config{DeviceID: 1, DefaultRateBps: tm.MaxRateBps, Log: testLog(), Ports: []PortConfig{
				{Num: 1, Ifname: "m1", Open: func() (Link, net.HardwareAddr, error) { return l1, swMAC1, nil }},
				{Num: 2, Ifname: "m2", Open: func() (Link, net.HardwareAddr, error) { return l2, swMAC2, nil }},
			}}
			s, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			programRoute(b, s, netip.MustParsePrefix("10.0.2.0/24"), 2, swMAC2, hostMAC2)
			tmpl := roce(b, hostIP1, hostIP2, hostMAC1, swMAC1, 0, wire.NotECT, 0, size)
			msg := afpacket.Message{Buf: make([]byte, s.maxFrame)}
			p2 := s.ports[1]
			now := int64(1)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				msg.N = copy(msg.Buf, tmpl)
				s.mu.Lock()
				s.process(msg.Buf[:msg.N], 1, now, &msg, nil)
				now += 100 // 400 Gb/s: a 1500-B frame takes 31 ns
				s.advance(now)
				for {
					f, ok := p2.delay.Pop(now)
					if !ok {
						break
					}
					s.putFrame(f)
				}
				s.mu.Unlock()
			}
			if d := s.Dump(); d.Runtime.Dequeued == 0 || d.TM.TotalDroppedPkts != 0 {
				b.Fatalf("dequeued %d, dropped %d", d.Runtime.Dequeued, d.TM.TotalDroppedPkts)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pps")
		})
	}
}

// BenchmarkSwitchVeth: end to end over veth. Namespace a sends frames (sendmmsg
// batches of 64) to namespace b through the running switch (RX goroutines, the
// scheduler, AF_PACKET on both sides), ports at 400 Gb/s so that shaping does not
// limit; at most 512 frames are in flight (credit flow control) so nothing is lost.
// A lost frame fails the benchmark. Run it on one core with
// `taskset -c 0 ... -test.cpu 1` (sender, switch, receiver and the kernel's veth
// delivery then share that core).
func BenchmarkSwitchVeth(b *testing.B) {
	tb := netnstest.New(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	must := func(err error) {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
	}
	a, err := tb.Namespace(ctx, "a")
	must(err)
	z, err := tb.Namespace(ctx, "b")
	must(err)
	swNS, err := tb.Namespace(ctx, "sw")
	must(err)
	_, err = tb.Veth(ctx, netns.LinkConfig{NS: a, Name: "eth0", MAC: hostMAC1, DisableIPv6: true},
		netns.LinkConfig{NS: swNS, Name: "p1", MAC: swMAC1, DisableIPv6: true})
	must(err)
	_, err = tb.Veth(ctx, netns.LinkConfig{NS: swNS, Name: "p2", MAC: swMAC2, DisableIPv6: true},
		netns.LinkConfig{NS: z, Name: "eth0", MAC: hostMAC2, DisableIPv6: true})
	must(err)
	var s *Switch
	must(swNS.Do(func() error {
		s, err = New(Config{DeviceID: 1, DefaultRateBps: tm.MaxRateBps, Log: testLog(),
			PortOptions: afpacket.Options{DisableOffloads: true},
			Ports:       []PortConfig{{Num: 1, Ifname: "p1"}, {Num: 2, Ifname: "p2"}}})
		return err
	}))
	programRoute(b, s, netip.MustParsePrefix("10.0.2.0/24"), 2, swMAC2, hostMAC2)
	runCtx, runCancel := context.WithCancel(ctx)
	runDone := make(chan error, 1)
	go func() { runDone <- s.Run(runCtx) }()
	defer func() {
		runCancel()
		if err := <-runDone; err != nil {
			b.Error(err)
		}
	}()
	var tx, rx *afpacket.Port
	must(a.Do(func() error {
		tx, err = afpacket.Open("eth0", afpacket.Options{DisableOffloads: true, Log: testLog()})
		return err
	}))
	defer tx.Close()
	must(z.Do(func() error {
		rx, err = afpacket.Open("eth0", afpacket.Options{DisableOffloads: true, Log: testLog()})
		return err
	}))
	defer rx.Close()

	for _, size := range []int{64, 1500} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			tmpl := roce(b, hostIP1, hostIP2, hostMAC1, swMAC1, 0, wire.NotECT, 0, size)
			batch := make([][]byte, 64)
			for i := range batch {
				batch[i] = tmpl
			}
			const window = 512
			var got atomic.Int64
			progress := make(chan struct{}, 1)
			rctx, rcancel := context.WithCancel(ctx)
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				msgs := rx.NewBatch(64)
				for {
					n, err := rx.ReadBatch(rctx, msgs)
					if err != nil {
						return
					}
					k := 0
					for _, m := range msgs[:n] {
						if m.N == len(tmpl) {
							k++
						}
					}
					got.Add(int64(k))
					select {
					case progress <- struct{}{}:
					default:
					}
				}
			}()
			base := s.Dump().Runtime.Dequeued
			b.ReportAllocs()
			b.SetBytes(int64(size))
			b.ResetTimer()
			sent := 0
			for sent < b.N {
				for int64(sent)-got.Load() > window-int64(len(batch)) {
					select {
					case <-progress:
					case <-time.After(10 * time.Second): // no progress: a guard against hangs
						b.Fatalf("lost frames: sent %d, received %d (switch dequeued %d)", sent, got.Load(), s.Dump().Runtime.Dequeued-base)
					}
				}
				k := min(len(batch), b.N-sent)
				if _, err := tx.WriteBatch(ctx, batch[:k]); err != nil {
					b.Fatal(err)
				}
				sent += k
			}
			for got.Load() < int64(b.N) {
				select {
				case <-progress:
				case <-time.After(10 * time.Second): // no progress: a guard against hangs
					b.Fatalf("lost frames: sent %d, received %d", sent, got.Load())
				}
			}
			b.StopTimer()
			rcancel()
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pps")
		})
	}
}
