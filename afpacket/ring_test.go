//go:build linux

package afpacket

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"
)

// TestRing: a port with a TPACKET_V2 receive ring (Options.RxRing) behaves as a
// recvmmsg port: frames byte-identical (VLAN tags put back), in order across batch
// boundaries, oversize frames dropped and counted, Backlog and Stats.Queued count the
// waiting frames, a full ring drops and says so, Close and ctx wake a blocked reader,
// no allocation per batch.
func TestRing(t *testing.T) {
	const ring = 256 << 10 // 128 slots of 2 KiB
	t.Run("frames", func(t *testing.T) {
		checkGoroutines(t)
		p := newPair(t, 9000, Options{}, Options{MTU: 1500, RxRing: ring, Batch: 8})
		if st := p.b.Stats(); st.RecvBuffer != ring {
			t.Fatalf("RecvBuffer %d, want the ring's %d", st.RecvBuffer, ring)
		}
		vlan := frame(macB, macA, 0x8100, 0, 100)
		binary.BigEndian.PutUint16(vlan[14:], 0x6005) // PCP 3, VID 5
		binary.BigEndian.PutUint16(vlan[16:], 0x0800)
		qinq := frame(macB, macA, 0x88a8, 0, 100)
		binary.BigEndian.PutUint16(qinq[14:], 0x0064)
		binary.BigEndian.PutUint16(qinq[16:], 0x8100)
		binary.BigEndian.PutUint16(qinq[18:], 0xa007)
		binary.BigEndian.PutUint16(qinq[20:], 0x88b5)
		sent := [][]byte{pfcFrame(macA), frame(macB, macA, 0x88b5, 1, 60), vlan, qinq, frame(macB, macA, 0x0800, 6, 1514),
			frame(macB, macA, 0x88b5, 7, 1518), frame(macB, macA, 0x88b5, 8, 1519), frame(macB, macA, 0x88b5, 9, 9014)}
		for i := range 20 {
			sent = append(sent, frame(macB, macA, 0x88b5, uint32(100+i), 60+i))
		}
		var want [][]byte
		for _, f := range sent {
			if err := p.a.WriteFrame(context.Background(), f); err != nil {
				t.Fatal(err)
			}
			if len(f) <= 1518 {
				want = append(want, f)
			}
		}
		got := recvFrom(t, p.b, macA, len(want), safety)
		if len(got) != len(want) {
			t.Fatalf("received %d frames, want %d", len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Errorf("frame %d changed:\n got % x\nwant % x", i, got[i], want[i])
			}
		}
		st := p.b.Stats()
		if st.Oversize != 2 || st.RxPackets != uint64(len(want)) || st.Queued != 0 || st.KernelDrops != 0 {
			t.Errorf("stats %+v: want 2 oversize, %d received", st, len(want))
		}
		if _, err := p.b.ReadBatch(context.Background(), []Message{{Buf: make([]byte, 100)}}); !errors.Is(err, ErrShortBuffer) {
			t.Errorf("ReadBatch with short buffer = %v, want ErrShortBuffer", err)
		}
	})
	t.Run("backlog and drops", func(t *testing.T) {
		checkGoroutines(t)
		p := newPair(t, 0, Options{}, Options{RxRing: ring})
		b0, err := p.b.Backlog()
		if err != nil || b0 != (Backlog{Capacity: ring}) {
			t.Fatalf("fresh ring: %+v, %v", b0, err)
		}
		frames := make([][]byte, 40)
		for i := range frames {
			frames[i] = frame(macB, macA, 0x88b5, uint32(i), 200)
		}
		if _, err := p.a.WriteBatch(context.Background(), frames); err != nil {
			t.Fatal(err)
		}
		b1, _ := p.b.Backlog()
		if st := p.b.Stats(); b1.Bytes != 40*2048 || b1.Drops != 0 || st.Queued != 40 {
			t.Errorf("40 frames waiting: backlog %+v, stats %+v", b1, st)
		}
		// 200 more: the ring (128 slots) overflows.
		more := make([][]byte, 200)
		for i := range more {
			more[i] = frame(macB, macA, 0x88b5, uint32(1000+i), 200)
		}
		if _, err := p.a.WriteBatch(context.Background(), more); err != nil {
			t.Fatal(err)
		}
		b2, _ := p.b.Backlog()
		st := p.b.Stats()
		if b2.Bytes != ring || b2.Fill() != 1 || b2.Drops != 240-128 || st.KernelDrops != b2.Drops || st.Queued != 128 {
			t.Errorf("overflowed: backlog %+v, stats %+v; want full, %d drops", b2, st, 240-128)
		}
		// The frames kept are the first 128, in order; then the ring is empty.
		got := recvFrom(t, p.b, macA, 128, safety)
		if len(got) != 128 || !bytes.Equal(got[0], frames[0]) || !bytes.Equal(got[127], more[127-40]) {
			t.Fatalf("read %d frames after the overflow", len(got))
		}
		b3, _ := p.b.Backlog()
		if st := p.b.Stats(); b3.Bytes != 0 || st.Queued != 0 {
			t.Errorf("drained: backlog %+v, stats %+v", b3, st)
		}
		// The ring wraps around and goes on.
		for range 3 {
			if _, err := p.a.WriteBatch(context.Background(), frames); err != nil {
				t.Fatal(err)
			}
			if got := recvFrom(t, p.b, macA, len(frames), safety); len(got) != len(frames) || !bytes.Equal(got[39], frames[39]) {
				t.Fatalf("after wrapping: %d frames", len(got))
			}
		}
	})
	t.Run("close and ctx wake the reader", func(t *testing.T) {
		checkGoroutines(t)
		p := newPair(t, 0, Options{}, Options{RxRing: ring})
		msgs := p.b.NewBatch(4)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		if _, err := p.b.ReadBatch(ctx, msgs); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled: %v", err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := p.b.ReadBatch(context.Background(), msgs)
			done <- err
		}()
		time.Sleep(50 * time.Millisecond) // let the reader park
		if err := p.b.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if !errors.Is(err, ErrClosed) {
				t.Fatalf("blocked ReadBatch returned %v, want ErrClosed", err)
			}
		case <-time.After(safety):
			t.Fatal("ReadBatch still blocked after Close")
		}
		if _, err := p.b.Backlog(); !errors.Is(err, ErrClosed) {
			t.Errorf("Backlog after Close: %v", err)
		}
		if _, err := p.b.ReadBatch(context.Background(), msgs); !errors.Is(err, ErrClosed) {
			t.Errorf("ReadBatch after Close: %v", err)
		}
	})
	t.Run("no allocations", func(t *testing.T) {
		p := newPair(t, 0, Options{Batch: 16}, Options{Batch: 16, RxRing: ring})
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
			if _, err := p.b.Backlog(); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%v allocations per 16-frame write+read+backlog, want 0", allocs)
		}
	})
}
