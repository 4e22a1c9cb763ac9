//go:build linux

package afpacket

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Run single-core (see docs/ports.md):
//
//	go test -c -o /tmp/port.test ./afpacket
//	taskset -c 0 /tmp/port.test -test.run '^$' -test.bench . -test.cpu 1 -test.benchtime 2s -test.count 3
//
// Everything, including the kernel's veth delivery (done in the sender's
// system call on the same CPU), then shares one core.

// BenchmarkVethOneWay measures frames per second from a port in one
// namespace to a port in another over a veth pair: sender goroutine
// WriteBatch, receiver ReadBatch, with credit-based flow control (at most
// window frames in flight) so that no frame is lost and the rate is the
// lossless rate. A lost frame fails the benchmark.
func BenchmarkVethOneWay(b *testing.B) {
	for _, size := range []int{64, 1500} {
		for _, batch := range []int{1, 64} {
			b.Run(fmt.Sprintf("size=%d/batch=%d", size, batch), func(b *testing.B) {
				benchOneWay(b, size, batch, 512)
			})
		}
	}
}

func benchOneWay(b *testing.B, size, batch, window int) {
	p := newPair(b, 0, Options{Batch: batch, DisableOffloads: true}, Options{Batch: batch, DisableOffloads: true})
	frames := make([][]byte, batch)
	for i := range frames {
		frames[i] = frame(macB, macA, 0x88b5, uint32(i), size)
	}
	msgs := p.b.NewBatch(batch)
	credits := make(chan struct{}, window/batch)
	for i := 0; i < cap(credits); i++ {
		credits <- struct{}{}
	}
	total := b.N
	// On a sender failure, closing the receiving port unblocks its reader.
	cancel := func() { _ = p.b.Close() }
	sendErr := make(chan error, 1)

	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime(b)
	go func() {
		var stall *time.Timer
		defer func() {
			if stall != nil {
				stall.Stop()
			}
		}()
		for sent := 0; sent < total; {
			select {
			case <-credits:
			default:
				if stall == nil {
					stall = time.NewTimer(2 * time.Second)
				} else {
					stall.Reset(2 * time.Second)
				}
				select {
				case <-credits:
				case <-stall.C:
					sendErr <- fmt.Errorf("no credit for 2s: frames lost (receiver stats %+v)", p.b.Stats())
					cancel()
					return
				}
			}
			n, err := p.a.WriteBatch(context.Background(), frames[:min(batch, total-sent)])
			if err != nil {
				sendErr <- err
				cancel()
				return
			}
			sent += n
		}
		sendErr <- nil
	}()
	got, sinceCredit := 0, 0
	var readErr error
	for got < total {
		n, err := p.b.ReadBatch(context.Background(), msgs)
		if err != nil {
			readErr = err
			break
		}
		got += n
		sinceCredit += n
		for sinceCredit >= batch {
			sinceCredit -= batch
			select {
			case credits <- struct{}{}:
			default:
			}
		}
	}
	elapsed, cpu := time.Since(start), cpuTime(b)-cpu0
	b.StopTimer()
	if err := <-sendErr; err != nil {
		b.Fatal(err)
	}
	if readErr != nil {
		b.Fatalf("read: %v", readErr)
	}
	reportRates(b, got, elapsed, cpu)
	if st := p.b.Stats(); st.KernelDrops != 0 {
		b.Errorf("kernel dropped %d frames", st.KernelDrops)
	}
}

// BenchmarkVethSendOnly measures WriteBatch alone: the peer namespace has no
// packet socket, so the kernel delivers each frame to the peer veth and
// discards it (unknown EtherType). batch=1 is plain one-frame-per-syscall
// sending with a reused buffer; batch=64 is sendmmsg.
func BenchmarkVethSendOnly(b *testing.B) {
	for _, size := range []int{64, 1500} {
		for _, batch := range []int{1, 64} {
			b.Run(fmt.Sprintf("size=%d/batch=%d", size, batch), func(b *testing.B) {
				p := newPair(b, 0, Options{Batch: batch, DisableOffloads: true}, Options{})
				_ = p.b.Close() // nobody listens on the peer
				frames := make([][]byte, batch)
				for i := range frames {
					frames[i] = frame(macB, macA, 0x88b5, uint32(i), size)
				}
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				start, cpu0 := time.Now(), cpuTime(b)
				for sent := 0; sent < b.N; {
					n, err := p.a.WriteBatch(context.Background(), frames[:min(batch, b.N-sent)])
					if err != nil {
						b.Fatal(err)
					}
					sent += n
				}
				reportRates(b, b.N, time.Since(start), cpuTime(b)-cpu0)
			})
		}
	}
}

// BenchmarkVethPlainWrite is the baseline for BenchmarkVethSendOnly: one
// write(2) per frame from a reused buffer, through the same runtime-poller
// path, without sendmmsg.
func BenchmarkVethPlainWrite(b *testing.B) {
	for _, size := range []int{64, 1500} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			p := newPair(b, 0, Options{DisableOffloads: true}, Options{})
			_ = p.b.Close()
			buf := frame(macB, macA, 0x88b5, 0, size)
			var werr error
			write := func(fd uintptr) bool {
				_, werr = unix.Write(int(fd), buf)
				return werr != unix.EAGAIN
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			start, cpu0 := time.Now(), cpuTime(b)
			for i := 0; i < b.N; i++ {
				if err := p.a.rc.Write(write); err != nil || werr != nil {
					b.Fatal(err, werr)
				}
			}
			reportRates(b, b.N, time.Since(start), cpuTime(b)-cpu0)
		})
	}
}

// cpuTime is the user+system CPU time of the whole process. The kernel's
// veth delivery runs inside the sender's system call and is charged to it.
func cpuTime(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportRates reports frames per wall-clock second ("pps") and frames per
// CPU-second consumed by the process ("pps/cpu"): on a shared machine the
// wall-clock rate depends on what else runs on the core, the per-CPU-second
// rate much less.
func reportRates(b *testing.B, frames int, wall, cpu time.Duration) {
	b.ReportMetric(float64(frames)/wall.Seconds(), "pps")
	if cpu > 0 {
		b.ReportMetric(float64(frames)/cpu.Seconds(), "pps/cpu")
	}
}
