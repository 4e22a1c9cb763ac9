//go:build linux

package afpacket

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fastcnp/fastcnp/internal/netns"
)

// BenchmarkRecvDrain measures what receiving costs the receiver when frames have
// piled up (the software switch's case under input backpressure: up to a quarter of
// a 64 MiB receive queue waits): the sender queues depth frames on the veth peer
// without anybody reading, then the receiver drains them, copying each frame into a
// buffer it keeps (as the switch does), on one OS thread whose CPU time
// (CLOCK_THREAD_CPUTIME_ID) per frame is the result "rx-cpu-ns/frame". Two receivers:
//
//   - recvmmsg: Port.ReadBatch, batches of 64, a 64 MiB receive buffer;
//   - ringV2: Port.ReadBatch on a port with a 64 MiB TPACKET_V2 ring (Options.RxRing);
//   - ringV3: a minimal TPACKET_V3 receive ring (PACKET_MMAP) of 64 MiB in 1-MiB
//     blocks (this file only), read without system calls while blocks are ready.
//
// This is the measurement behind docs/ports.md "Receive: recvmmsg, or a ring?".
// Run it alone:
//
//	go test -c -o /tmp/port.test ./afpacket
//	taskset -c 0 /tmp/port.test -test.run '^$' -test.bench RecvDrain -test.cpu 1 -test.count 3
func BenchmarkRecvDrain(b *testing.B) {
	for _, size := range []int{64, 1500} {
		for _, depth := range []int{512, 16384} {
			for _, kind := range []string{"recvmmsg", "ringV2", "ringV3"} {
				b.Run(fmt.Sprintf("%s/size=%d/depth=%d", kind, size, depth), func(b *testing.B) {
					benchRecvDrain(b, kind, size, depth)
				})
			}
		}
	}
}

// v3Ring is a minimal TPACKET_V3 receive ring (benchmark only).
type v3Ring struct {
	fd        int
	mem       []byte
	blockSize int
	blocks    int
	cur       int
}

func openV3Ring(ns *netns.NS, ifname string, blockSize, blocks int) (*v3Ring, error) {
	r := &v3Ring{blockSize: blockSize, blocks: blocks}
	err := ns.Do(func() error {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		r.fd = fd
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V3); err != nil {
			return fmt.Errorf("PACKET_VERSION: %w", err)
		}
		req := unix.TpacketReq3{Block_size: uint32(blockSize), Block_nr: uint32(blocks), Frame_size: 2048,
			Frame_nr: uint32(blockSize / 2048 * blocks), Retire_blk_tov: 1}
		if err := unix.SetsockoptTpacketReq3(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
			return fmt.Errorf("PACKET_RX_RING: %w", err)
		}
		r.mem, err = unix.Mmap(fd, 0, blockSize*blocks, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_LOCKED)
		if err != nil {
			return fmt.Errorf("mmap: %w", err)
		}
		ifr, err := unix.NewIfreq(ifname)
		if err != nil {
			return err
		}
		if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(ethPAll), Ifindex: int(ifr.Uint32())})
	})
	if err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

func (r *v3Ring) close() {
	if r.mem != nil {
		_ = unix.Munmap(r.mem)
	}
	if r.fd > 0 {
		_ = unix.Close(r.fd)
	}
}

// drain copies frames out of the ready blocks into bufs (round robin) until want
// frames were read, polling for blocks that are not ready yet; it returns the count.
func (r *v3Ring) drain(want int, bufs [][]byte) int {
	got := 0
	deadline := time.Now().Add(5 * time.Second) // a guard against hangs
	for got < want {
		if time.Now().After(deadline) {
			st, _ := unix.GetsockoptTpacketStats(r.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
			var status []uint32
			for i := range r.blocks {
				status = append(status, (*unix.TpacketHdrV1)(unsafe.Pointer(&r.mem[i*r.blockSize+8])).Block_status)
			}
			panic(fmt.Sprintf("ring: %d of %d frames, block %d, statuses %v, stats %+v", got, want, r.cur, status, st))
		}
		blk := r.mem[r.cur*r.blockSize:]
		hdr := (*unix.TpacketHdrV1)(unsafe.Pointer(&blk[8])) // after version, offset_to_priv
		status := (*atomic.Uint32)(unsafe.Pointer(&hdr.Block_status))
		if status.Load()&unix.TP_STATUS_USER == 0 {
			fds := []unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN | unix.POLLERR}}
			_, _ = unix.Poll(fds, 100)
			continue
		}
		off := int(hdr.Offset_to_first_pkt)
		for i := 0; i < int(hdr.Num_pkts); i++ {
			ph := (*unix.Tpacket3Hdr)(unsafe.Pointer(&blk[off]))
			data := blk[off+int(ph.Mac) : off+int(ph.Mac)+int(ph.Snaplen)]
			copy(bufs[got%len(bufs)], data)
			got++
			off += int(ph.Next_offset)
		}
		status.Store(unix.TP_STATUS_KERNEL)
		r.cur = (r.cur + 1) % r.blocks
	}
	return got
}

func threadCPU() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}

func benchRecvDrain(b *testing.B, kind string, size, depth int) {
	optsB := Options{DisableOffloads: true, RecvBuffer: 64 << 20}
	if kind == "ringV2" {
		optsB.RxRing = 64 << 20
	}
	p := newPair(b, 0, Options{DisableOffloads: true, Batch: 1024}, optsB)
	var ring *v3Ring
	if kind == "ringV3" {
		// The port opened by newPair stays idle; it only keeps the interface promiscuous.
		var err error
		ring, err = openV3Ring(p.nsB, "p0", 1<<20, 64)
		if err != nil {
			b.Fatal(err)
		}
		defer ring.close()
	}
	frames := make([][]byte, 1024)
	for i := range frames {
		frames[i] = frame(macB, macA, 0x88b5, uint32(i), size)
	}
	msgs := p.b.NewBatch(64)
	bufs := make([][]byte, 64)
	for i := range bufs {
		bufs[i] = make([]byte, 2048)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cpu time.Duration
	done := 0
	b.ResetTimer()
	for done < b.N {
		n := min(depth, b.N-done)
		// Queue n frames, nobody reading.
		b.StopTimer()
		for sent := 0; sent < n; {
			k, err := p.a.WriteBatch(context.Background(), frames[:min(len(frames), n-sent)])
			if err != nil {
				b.Fatal(err)
			}
			sent += k
		}
		if ring != nil {
			time.Sleep(5 * time.Millisecond) // the last block retires after 1 ms
		}
		b.StartTimer()
		c0 := threadCPU()
		if ring != nil {
			ring.drain(n, bufs)
		} else {
			for got := 0; got < n; {
				k, err := p.b.ReadBatch(context.Background(), msgs)
				if err != nil {
					b.Fatal(err)
				}
				got += k
			}
		}
		cpu += threadCPU() - c0
		done += n
	}
	b.StopTimer()
	if st := p.b.Stats(); kind != "ringV3" && st.KernelDrops != 0 {
		b.Fatalf("receive queue overflowed: %+v", st)
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "rx-cpu-ns/frame")
}
