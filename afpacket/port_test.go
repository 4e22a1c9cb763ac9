//go:build linux

package afpacket

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fastcnp/fastcnp/internal/netns"
)

const safety = 5 * time.Second // failure bound for "should arrive", not a benchmark

func TestFramesArriveByteIdentical(t *testing.T) {
	checkGoroutines(t)
	p := newPair(t, 0, Options{DisableOffloads: true}, Options{DisableOffloads: true})
	vlan := frame(macB, macA, 0x8100, 0, 100)
	binary.BigEndian.PutUint16(vlan[14:], 0x6005) // PCP 3, VID 5
	binary.BigEndian.PutUint16(vlan[16:], 0x0800)
	qinq := frame(macB, macA, 0x88a8, 0, 100)
	binary.BigEndian.PutUint16(qinq[14:], 0x0064) // S-VID 100
	binary.BigEndian.PutUint16(qinq[16:], 0x8100)
	binary.BigEndian.PutUint16(qinq[18:], 0xa007) // PCP 5, VID 7
	binary.BigEndian.PutUint16(qinq[20:], 0x88b5)
	prio0 := frame(macB, macA, 0x8100, 0, 80)
	binary.BigEndian.PutUint16(prio0[14:], 0x0000) // priority tag, TCI 0
	binary.BigEndian.PutUint16(prio0[16:], 0x88b5)

	tests := []struct {
		name  string
		frame []byte
	}{
		{"pfc-64-bytes-to-01-80-c2-00-00-01", pfcFrame(macA)},
		{"arbitrary-ethertype-0x88b5", frame(macB, macA, 0x88b5, 1, 60)},
		{"ethertype-0x1234-odd-length", frame(macB, macA, 0x1234, 2, 77)},
		{"header-only-14-bytes", frame(macB, macA, 0x88b6, 3, 14)},
		{"broadcast-arp-ethertype", frame([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, macA, 0x0806, 4, 60)},
		{"foreign-unicast-dst", frame([]byte{0x02, 0, 0, 0, 0, 0x99}, macA, 0x88b5, 5, 60)},
		{"full-size-1514", frame(macB, macA, 0x0800, 6, 1514)},
		{"vlan-tagged-pcp3", vlan},
		{"vlan-priority-tag-tci0", prio0},
		{"qinq-88a8-8100", qinq},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := p.a.WriteFrame(context.Background(), tc.frame); err != nil {
				t.Fatalf("write: %v", err)
			}
			got := recvFrom(t, p.b, macA, 1, safety)
			if len(got) != 1 {
				t.Fatalf("received %d frames, want 1", len(got))
			}
			if !bytes.Equal(got[0], tc.frame) {
				t.Fatalf("frame changed in transit:\n got % x\nwant % x", got[0], tc.frame)
			}
		})
	}
}

func TestBatchBoundaries(t *testing.T) {
	tests := []struct {
		batch, sendChunk, readLen, total int
	}{
		{batch: 8, sendChunk: 29, readLen: 1, total: 29},
		{batch: 8, sendChunk: 3, readLen: 5, total: 29},
		{batch: 8, sendChunk: 8, readLen: 8, total: 64},
		{batch: 8, sendChunk: 1, readLen: 13, total: 30},
		{batch: 64, sendChunk: 200, readLen: 64, total: 200},
		{batch: 1, sendChunk: 5, readLen: 4, total: 10},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("batch%d-send%d-read%d", tc.batch, tc.sendChunk, tc.readLen), func(t *testing.T) {
			checkGoroutines(t)
			p := newPair(t, 0, Options{Batch: tc.batch}, Options{Batch: tc.batch})
			var frames [][]byte
			for i := 0; i < tc.total; i++ {
				frames = append(frames, frame(macB, macA, 0x88b5, uint32(i), 60+i%40))
			}
			for off := 0; off < tc.total; off += tc.sendChunk {
				chunk := frames[off:min(off+tc.sendChunk, tc.total)]
				n, err := p.a.WriteBatch(context.Background(), chunk)
				if err != nil || n != len(chunk) {
					t.Fatalf("WriteBatch = %d, %v; want %d", n, err, len(chunk))
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), safety)
			defer cancel()
			msgs := p.b.NewBatch(tc.readLen)
			next := 0
			for next < tc.total {
				n, err := p.b.ReadBatch(ctx, msgs)
				if err != nil {
					t.Fatalf("after %d frames: %v%s", next, err, p.diag())
				}
				if n < 1 || n > min(tc.readLen, tc.batch) {
					t.Fatalf("ReadBatch returned %d, want 1..%d", n, min(tc.readLen, tc.batch))
				}
				for _, m := range msgs[:n] {
					if !bytes.Equal(m.Buf[:m.N], frames[next]) {
						t.Fatalf("frame %d: got % x", next, m.Buf[:m.N])
					}
					next++
				}
			}
			st := p.b.Stats()
			if st.RxPackets != uint64(tc.total) {
				t.Errorf("RxPackets = %d, want %d", st.RxPackets, tc.total)
			}
		})
	}
}

func TestCloseUnblocksReader(t *testing.T) {
	checkGoroutines(t)
	p := newPair(t, 0, Options{}, Options{})
	done := make(chan error, 1)
	go func() {
		msgs := p.b.NewBatch(4)
		_, err := p.b.ReadBatch(context.Background(), msgs)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond) // let the reader park in the poller
	select {
	case err := <-done:
		t.Fatalf("reader returned before Close: %v", err)
	default:
	}
	if err := p.b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("blocked ReadBatch returned %v, want ErrClosed", err)
		}
	case <-time.After(safety):
		t.Fatal("ReadBatch still blocked after Close")
	}
	if err := p.b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := p.b.ReadBatch(context.Background(), p.b.NewBatch(1)); !errors.Is(err, ErrClosed) {
		t.Errorf("ReadBatch after Close = %v, want ErrClosed", err)
	}
	if err := p.b.WriteFrame(context.Background(), frame(macA, macB, 0x88b5, 0, 60)); !errors.Is(err, ErrClosed) {
		t.Errorf("WriteFrame after Close = %v, want ErrClosed", err)
	}
}

func TestContextCancellation(t *testing.T) {
	checkGoroutines(t)
	p := newPair(t, 0, Options{}, Options{})
	msgs := p.b.NewBatch(4)

	pre, cancelPre := context.WithCancel(context.Background())
	cancelPre()
	if _, err := p.b.ReadBatch(pre, msgs); !errors.Is(err, context.Canceled) {
		t.Fatalf("pre-cancelled ctx: %v", err)
	}

	for i := 0; i < 3; i++ { // repeated, to exercise stale interruptions
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		if _, err := p.b.ReadBatch(ctx, msgs); !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d: got %v, want context.Canceled", i, err)
		}
	}
	tctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := p.b.ReadBatch(tctx, msgs); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timeout ctx: %v", err)
	}
	// The port still works after cancellations.
	f := frame(macB, macA, 0x88b5, 42, 60)
	if err := p.a.WriteFrame(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	got := recvFrom(t, p.b, macA, 1, safety)
	if len(got) != 1 || !bytes.Equal(got[0], f) {
		t.Fatalf("after cancellations got %x", got)
	}
}

func TestOversizeDroppedAndCounted(t *testing.T) {
	checkGoroutines(t)
	// The link carries jumbo frames; the receiving port is configured for
	// MTU 1500 (max frame 1518), as the switch would be for a 1500 fabric.
	p := newPair(t, 9000, Options{}, Options{MTU: 1500})
	if got := p.b.MaxFrameLen(); got != 1518 {
		t.Fatalf("MaxFrameLen = %d, want 1518", got)
	}
	tests := []struct {
		size    int
		deliver bool
	}{
		{1518, true},
		{1519, false},
		{3000, false},
		{9014, false},
		{100, true},
	}
	var want [][]byte
	for i, tc := range tests {
		f := frame(macB, macA, 0x88b5, uint32(i), tc.size)
		if err := p.a.WriteFrame(context.Background(), f); err != nil {
			t.Fatalf("write %d bytes: %v", tc.size, err)
		}
		if tc.deliver {
			want = append(want, f)
		}
	}
	got := recvFrom(t, p.b, macA, len(want), safety)
	if len(got) != len(want) {
		t.Fatalf("received %d frames, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("frame %d differs (len %d, want %d)", i, len(got[i]), len(want[i]))
		}
	}
	if st := p.b.Stats(); st.Oversize != 3 {
		t.Errorf("Oversize = %d, want 3", st.Oversize)
	}
	// Sending side: frames above its own MaxFrameLen are refused.
	if err := p.b.WriteFrame(context.Background(), make([]byte, 1519)); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("WriteFrame(1519) = %v, want ErrFrameTooLarge", err)
	}
	if err := p.b.WriteFrame(context.Background(), make([]byte, 10)); !errors.Is(err, ErrFrameTooShort) {
		t.Errorf("WriteFrame(10) = %v, want ErrFrameTooShort", err)
	}
	if _, err := p.b.ReadBatch(context.Background(), []Message{{Buf: make([]byte, 100)}}); !errors.Is(err, ErrShortBuffer) {
		t.Errorf("ReadBatch with short buffer = %v, want ErrShortBuffer", err)
	}
}

func TestOutgoingFramesIgnored(t *testing.T) {
	checkGoroutines(t)
	p := newPair(t, 0, Options{}, Options{})
	a2 := openIn(t, p.nsA, "p0", Options{}) // second port on the sending interface
	const n = 20
	for i := 0; i < n; i++ {
		if err := p.a.WriteFrame(context.Background(), frame(macB, macA, 0x88b5, uint32(i), 60)); err != nil {
			t.Fatal(err)
		}
	}
	if got := recvFrom(t, p.b, macA, n, safety); len(got) != n {
		t.Fatalf("peer received %d, want %d", len(got), n)
	}
	// Neither the sender nor another socket on its interface sees them.
	for name, port := range map[string]*Port{"sender": p.a, "second port": a2} {
		if got := recvFrom(t, port, macA, 1, 200*time.Millisecond); len(got) != 0 {
			t.Errorf("%s received %d of its interface's outgoing frames", name, len(got))
		}
	}
}

func TestStatsAndKernelDrops(t *testing.T) {
	checkGoroutines(t)
	// A tiny receive buffer that is never read: the kernel must drop and
	// PACKET_STATISTICS must say so.
	p := newPair(t, 0, Options{}, Options{RecvBuffer: 4096})
	const n, size = 500, 200
	frames := make([][]byte, n)
	for i := range frames {
		frames[i] = frame(macB, macA, 0x88b5, uint32(i), size)
	}
	if sent, err := p.a.WriteBatch(context.Background(), frames); err != nil || sent != n {
		t.Fatalf("WriteBatch = %d, %v", sent, err)
	}
	sa := p.a.Stats()
	if sa.TxPackets != n || sa.TxBytes != n*size || sa.TxErrors != 0 {
		t.Errorf("sender stats %+v", sa)
	}
	got := recvFrom(t, p.b, macA, n, 300*time.Millisecond)
	sb := p.b.Stats()
	if sb.KernelDrops == 0 {
		t.Errorf("KernelDrops = 0 with a 4 KiB buffer and %d frames; stats %+v", n, sb)
	}
	if sb.KernelPackets < n {
		t.Errorf("KernelPackets = %d, want >= %d", sb.KernelPackets, n)
	}
	if uint64(len(got))+sb.KernelDrops < n {
		t.Errorf("received %d + dropped %d < sent %d", len(got), sb.KernelDrops, n)
	}
	if sb.RxPackets != uint64(len(got)) || sb.RxBytes != uint64(len(got)*size) {
		t.Errorf("rx counters %+v for %d frames received", sb, len(got))
	}
	t.Logf("received %d, kernel drops %d", len(got), sb.KernelDrops)
}

// TestBacklog: frames that wait in the receive queue show in Backlog (bytes
// against the buffer, the kernel's drops) and in Stats.Queued, and disappear
// from both once read; Backlog.Drops counts the same frames as KernelDrops.
func TestBacklog(t *testing.T) {
	checkGoroutines(t)
	const rcvbuf = 64 << 10
	p := newPair(t, 0, Options{}, Options{RecvBuffer: rcvbuf})
	b0, err := p.b.Backlog()
	if err != nil {
		t.Fatal(err)
	}
	if b0.Capacity != 2*rcvbuf || b0.Bytes != 0 || b0.Drops != 0 {
		t.Fatalf("fresh port: %+v, want capacity %d, nothing queued or dropped", b0, 2*rcvbuf)
	}
	// Fewer frames than the buffer holds: all wait, none dropped.
	const few, size = 20, 200
	frames := make([][]byte, few)
	for i := range frames {
		frames[i] = frame(macB, macA, 0x88b5, uint32(i), size)
	}
	if sent, err := p.a.WriteBatch(context.Background(), frames); err != nil || sent != few {
		t.Fatalf("WriteBatch = %d, %v", sent, err)
	}
	b1, err := p.b.Backlog()
	if err != nil {
		t.Fatal(err)
	}
	st := p.b.Stats()
	if b1.Bytes < few*size || b1.Drops != 0 || st.Queued != few || st.KernelDrops != 0 || st.RecvBuffer != 2*rcvbuf {
		t.Errorf("%d frames queued: backlog %+v, stats %+v", few, b1, st)
	}
	t.Logf("%d frames of %d B hold %d B of the receive buffer (%.0f B each), fill %.3f", few, size, b1.Bytes, float64(b1.Bytes)/few, b1.Fill())
	// Overflow it.
	many := make([][]byte, 1000)
	for i := range many {
		many[i] = frames[0]
	}
	if _, err := p.a.WriteBatch(context.Background(), many); err != nil {
		t.Fatal(err)
	}
	b2, err := p.b.Backlog()
	if err != nil {
		t.Fatal(err)
	}
	st = p.b.Stats()
	if b2.Drops == 0 || b2.Drops != st.KernelDrops || b2.Fill() < 0.9 {
		t.Errorf("overflowed: backlog %+v (fill %.2f), stats %+v", b2, b2.Fill(), st)
	}
	queued := st.Queued
	got := recvFrom(t, p.b, macA, int(queued), 2*time.Second)
	b3, err := p.b.Backlog()
	if err != nil {
		t.Fatal(err)
	}
	st = p.b.Stats()
	if uint64(len(got)) != queued || b3.Bytes != 0 || st.Queued != 0 || b3.Drops != b2.Drops {
		t.Errorf("read %d of %d queued: backlog %+v, stats %+v", len(got), queued, b3, st)
	}
	if err := p.b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.b.Backlog(); !errors.Is(err, ErrClosed) {
		t.Errorf("Backlog after Close: %v, want ErrClosed", err)
	}
}

func TestDisableOffloads(t *testing.T) {
	checkGoroutines(t)
	p := newPair(t, 0, Options{DisableOffloads: true}, Options{})
	err := p.nsA.Do(func() error {
		o, err := ReadOffloads("p0")
		if err != nil {
			return err
		}
		if o.TSO || o.GSO || o.GRO || o.TxChecksum {
			t.Errorf("offloads still on after DisableOffloads: %+v", o)
		}
		t.Logf("a:p0 offloads: %+v", o)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = p.nsB.Do(func() error {
		o, err := ReadOffloads("p0")
		t.Logf("b:p0 offloads (untouched, veth defaults): %+v", o)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestNoAllocationsOnDataPath(t *testing.T) {
	p := newPair(t, 0, Options{Batch: 16}, Options{Batch: 16})
	frames := make([][]byte, 16)
	for i := range frames {
		frames[i] = frame(macB, macA, 0x88b5, uint32(i), 64)
	}
	msgs := p.b.NewBatch(16)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := p.a.WriteBatch(ctx, frames); err != nil {
			t.Fatal(err)
		}
		for got := 0; got < len(frames); {
			n, err := p.b.ReadBatch(ctx, msgs)
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per 16-frame write+read, want 0", allocs)
	}
}

func TestOpenErrors(t *testing.T) {
	p := newPair(t, 0, Options{}, Options{})
	err := p.nsA.Do(func() error {
		_, err := Open("nosuchif0", Options{})
		return err
	})
	if err == nil {
		t.Fatal("Open of a missing interface succeeded")
	}
	t.Logf("error: %v", err)
}

func TestBidirectionalConcurrent(t *testing.T) {
	checkGoroutines(t)
	p := newPair(t, 0, Options{Batch: 16}, Options{Batch: 16})
	const n = 2000
	type result struct {
		got int
		err error
	}
	run := func(tx, rx *Port, dst, src []byte, res chan<- result) {
		// Writer and reader of the same port run concurrently.
		werr := make(chan error, 1)
		go func() {
			frames := make([][]byte, 0, 16)
			for i := 0; i < n; i += 16 {
				frames = frames[:0]
				for j := i; j < min(i+16, n); j++ {
					frames = append(frames, frame(dst, src, 0x88b5, uint32(j), 60+j%64))
				}
				if _, err := tx.WriteBatch(context.Background(), frames); err != nil {
					werr <- err
					return
				}
			}
			werr <- nil
		}()
		ctx, cancel := context.WithTimeout(context.Background(), safety)
		defer cancel()
		msgs := rx.NewBatch(16)
		got := 0
		var err error
		for got < n && err == nil {
			var k int
			k, err = rx.ReadBatch(ctx, msgs)
			for _, m := range msgs[:k] {
				if bytes.Equal(m.Buf[6:12], dst) { // sent by the peer, whose src is our dst
					if seq := binary.BigEndian.Uint32(m.Buf[14:]); seq != uint32(got) {
						err = fmt.Errorf("frame %d has sequence %d", got, seq)
						break
					}
					got++
				}
			}
		}
		res <- result{got, errors.Join(err, <-werr)}
	}
	resA, resB := make(chan result, 1), make(chan result, 1)
	go run(p.a, p.a, macB, macA, resA) // a sends to b, reads b's frames
	go run(p.b, p.b, macA, macB, resB)
	for name, ch := range map[string]chan result{"a": resA, "b": resB} {
		r := <-ch
		if r.err != nil || r.got != n {
			t.Errorf("port %s: received %d/%d in order, err %v%s", name, r.got, n, r.err, p.diag())
		}
	}
}

func TestWriteBatchStopsAtKernelRejection(t *testing.T) {
	checkGoroutines(t)
	p := newPair(t, 0, Options{}, Options{})
	// A port that believes in jumbo frames on a 1500-byte link: the kernel
	// refuses the long frame; WriteBatch reports how far it got.
	big := openIn(t, p.nsA, "p0", Options{MTU: 9000})
	frames := [][]byte{
		frame(macB, macA, 0x88b5, 0, 100),
		frame(macB, macA, 0x88b5, 1, 3000),
		frame(macB, macA, 0x88b5, 2, 100),
	}
	n, err := big.WriteBatch(context.Background(), frames)
	if n != 1 || !errors.Is(err, unix.EMSGSIZE) {
		t.Fatalf("WriteBatch = %d, %v; want 1, EMSGSIZE", n, err)
	}
	if st := big.Stats(); st.TxPackets != 1 || st.TxErrors != 1 {
		t.Errorf("stats %+v, want 1 packet and 1 error", st)
	}
	got := recvFrom(t, p.b, macA, 1, safety)
	if len(got) != 1 || !bytes.Equal(got[0], frames[0]) {
		t.Fatalf("peer got %d frames", len(got))
	}
}

func TestBlockedWriterUnblocks(t *testing.T) {
	checkGoroutines(t)
	// A tbf shaper at 8 kbit/s holds the frames in the qdisc, where they
	// keep charging the socket's small send buffer: sendmmsg returns EAGAIN
	// and WriteBatch parks in the poller.
	p := newPair(t, 0, Options{SendBuffer: 4096}, Options{})
	if err := p.nsA.SetTBF(context.Background(), "p0", netns.TBF{RateBitsPerSec: 8000, BurstBytes: 4096, Latency: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	frames := make([][]byte, 512)
	for i := range frames {
		frames[i] = frame(macB, macA, 0x88b5, uint32(i), 64)
	}
	tests := []struct {
		name   string
		ctx    func() (context.Context, context.CancelFunc)
		action func()
		want   error
	}{
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 100*time.Millisecond)
		}, nil, context.DeadlineExceeded},
		{"cancel", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			nil, context.Canceled},
		{"close", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			func() { _ = p.a.Close() }, ErrClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := tc.ctx()
			defer cancel()
			done := make(chan error, 1)
			var sent int
			go func() {
				var err error
				sent, err = p.a.WriteBatch(ctx, frames)
				done <- err
			}()
			time.Sleep(50 * time.Millisecond)
			if tc.action != nil {
				tc.action()
			} else if tc.want == context.Canceled {
				cancel()
			}
			select {
			case err := <-done:
				if !errors.Is(err, tc.want) {
					t.Fatalf("WriteBatch = %d, %v; want %v", sent, err, tc.want)
				}
				if sent >= len(frames) {
					t.Fatalf("sent all %d frames: the writer never blocked", sent)
				}
				t.Logf("blocked after %d frames", sent)
			case <-time.After(safety):
				t.Fatal("WriteBatch still blocked")
			}
		})
	}
}
