package live_test

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/host/agent"
	"github.com/fastcnp/fastcnp/host/agent/live"
	"github.com/fastcnp/fastcnp/wire"
)

// countPort wraps a memPort and counts the frames written, by kind.
type countPort struct {
	*memPort
	data, acks atomic.Int64
}

func (c *countPort) WriteBatch(ctx context.Context, frames [][]byte) (int, error) {
	var f wire.Frame
	var ev agent.Event
	for _, b := range frames {
		if agent.Decode(b, &f, &ev) != nil {
			continue
		}
		switch ev.Kind {
		case agent.KindData:
			c.data.Add(1)
		case agent.KindAck:
			c.acks.Add(1)
		}
	}
	return c.memPort.WriteBatch(ctx, frames)
}

var _ live.PortIO = (*countPort)(nil)

// inject puts a PFC frame into the input of the agent whose memPort is to.
func inject(t *testing.T, to *memPort, classEnable uint16, quanta [8]uint16) {
	t.Helper()
	b := make([]byte, 64)
	n, err := wire.BuildPFC(b, wire.MAC{2, 0xfc, 0, 1, 0, 1}, classEnable, quanta)
	if err != nil {
		t.Fatal(err)
	}
	to.in <- b[:n]
}

// waitUntil polls cond until it holds or ctx ends (a failure, not a
// measurement: the deadline only bounds a broken run).
func waitUntil(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// TestPFCPauseHoldsAgent runs a sender and a receiver agent over an
// in-memory link and injects PFC frames: a PAUSE of the lossless priority
// stops the sender's data (and the receiver's ACKs) until the XON, a
// PAUSE of the CNP priority does not stop data, and the counters and
// paused times are reported.
func TestPFCPauseHoldsAgent(t *testing.T) {
	const line = 10e6 // 0xFFFF quanta = 3.355 s at 10 Mb/s
	ma, mb := memPair()
	pa, pb := &countPort{memPort: ma}, &countPort{memPort: mb}
	fl := []live.FlowConfig{flowAB(live.FlowConfig{Duration: live.Duration(time.Minute)})}
	cfg := func(ip wire.Addr4, mac wire.MAC) live.Config {
		return live.Config{IP: ip, MAC: mac, Algo: "dcqcn", CC: ccConfig(t, "nvidia-cx", line, 2*time.Millisecond),
			Flows: fl, Log: quietLog(), NoAnnounce: true}
	}
	snd, err := live.New(cfg(ipA, macA), pa)
	if err != nil {
		t.Fatal(err)
	}
	rcv, err := live.New(cfg(ipB, macB), pb)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, a := range []*live.Agent{snd, rcv} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := a.Run(rctx); err != nil && rctx.Err() == nil {
				errs <- err
			}
		}()
	}
	defer func() {
		stop()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("agent: %v", err)
		}
	}()
	// Frames built before a PAUSE is applied may still go out: at most one
	// send-loop batch.
	const inFlight = 64
	full := [8]uint16{3: 0xFFFF, 6: 0xFFFF}

	waitUntil(t, ctx, "data", func() bool { return pa.data.Load() >= 20 })

	// 1. The sender's lossless priority paused: no data until the XON.
	inject(t, ma, 1<<3, full)
	waitUntil(t, ctx, "the PAUSE applied", func() bool { return snd.PauseStats().XOFF[3] == 1 })
	n0 := pa.data.Load()
	const hold = 300 * time.Millisecond // the pause lasts 3.355 s; the expected sender sends ~350 frames meanwhile
	time.Sleep(hold)
	if sent := pa.data.Load() - n0; sent > inFlight {
		t.Fatalf("%d data frames sent during the pause", sent)
	}
	inject(t, ma, 1<<3, [8]uint16{})
	n1 := pa.data.Load()
	waitUntil(t, ctx, "data after the XON", func() bool { return pa.data.Load() >= n1+20 })
	ps := snd.PauseStats()
	maxPause := time.Duration(0xFFFF) * 512 * time.Second / time.Duration(line)
	if ps.PFCFrames != 2 || ps.XON[3] != 1 || ps.XOFF[6] != 0 ||
		time.Duration(ps.PausedNs[3]) < hold || time.Duration(ps.PausedNs[3]) > maxPause {
		t.Fatalf("sender pause stats %+v: want 2 frames, 1 XON, paused in [%v, %v]", ps, hold, maxPause)
	}
	st := snd.Status()[0].Send
	if st.Holds != 1 || st.Held < hold || st.Held > maxPause || st.Timeouts != 0 {
		t.Fatalf("sender: %d holds, held %v, %d timeouts; want 1, in [%v, %v], 0", st.Holds, st.Held, st.Timeouts, hold, maxPause)
	}

	// 2. Only the CNP priority paused: data goes on.
	inject(t, ma, 1<<6, full)
	waitUntil(t, ctx, "the CNP-priority PAUSE applied", func() bool { return snd.PauseStats().XOFF[6] == 1 })
	n2 := pa.data.Load()
	waitUntil(t, ctx, "data during a CNP-priority pause", func() bool { return pa.data.Load() >= n2+50 })

	// 3. The receiver's lossless priority paused: its ACKs wait.
	inject(t, mb, 1<<3, full)
	waitUntil(t, ctx, "the receiver's PAUSE applied", func() bool { return rcv.PauseStats().XOFF[3] == 1 })
	waitUntil(t, ctx, "an ACK held", func() bool { return rcv.Counters().RepliesHeld >= 1 })
	a0 := pb.acks.Load()
	waitUntil(t, ctx, "more ACKs held", func() bool { return rcv.Counters().RepliesHeld >= 3 })
	if a := pb.acks.Load(); a != a0 {
		t.Fatalf("%d ACKs sent while the receiver's priority 3 was paused", a-a0)
	}
	held := rcv.Counters().RepliesHeld
	inject(t, mb, 1<<3, [8]uint16{})
	waitUntil(t, ctx, "the held ACKs sent", func() bool { return pb.acks.Load() >= a0+int64(held) })
	if c := rcv.Counters(); c.RepliesDropped != 0 || c.MACControl != 2 {
		t.Fatalf("receiver counters %+v", c)
	}
}

// TestPFCPauseExpires: without an XON the pause ends after quanta x 512
// bit times at the line rate (the host's paused time is exactly that),
// the sender resumes by itself, and the JSON statistics report the pause
// per flow and per host.
func TestPFCPauseExpires(t *testing.T) {
	const line = 10e6
	ma, mb := memPair()
	pa := &countPort{memPort: ma}
	fl := []live.FlowConfig{flowAB(live.FlowConfig{Duration: live.Duration(time.Minute)})}
	var stats bytes.Buffer
	snd, err := live.New(live.Config{IP: ipA, MAC: macA, Algo: "dcqcn", CC: ccConfig(t, "nvidia-cx", line, 2*time.Millisecond),
		Flows: fl, Log: quietLog(), NoAnnounce: true, Stats: &stats, StatsInterval: 5 * time.Millisecond}, pa)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- snd.Run(rctx) }()
	// No receiver: drain what the sender writes.
	go func() {
		for {
			select {
			case <-rctx.Done():
				return
			case <-mb.in:
			}
		}
	}()
	waitUntil(t, ctx, "data", func() bool { return pa.data.Load() >= 5 })
	const quanta = 2000 // 102.4 ms at 10 Mb/s
	want := time.Duration(quanta) * 512 * time.Second / time.Duration(line)
	inject(t, ma, 1<<3, [8]uint16{3: quanta})
	waitUntil(t, ctx, "the pause over", func() bool {
		ps := snd.PauseStats()
		return ps.XOFF[3] == 1 && time.Duration(ps.PausedNs[3]) == want
	})
	n := pa.data.Load()
	waitUntil(t, ctx, "data after the pause, without an XON", func() bool { return pa.data.Load() >= n+20 })
	held := snd.Status()[0].Send.Held
	if held <= 0 {
		t.Fatalf("sender held %v", held)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	// The statistics carry the pause: per flow and per host.
	recs := readRecords(t, stats.Bytes())
	var flowPaused float64
	var host *live.PauseRecord
	for _, r := range recs {
		if r.Type == "summary" && r.Role == "sender" && r.PausedUs != nil {
			flowPaused = *r.PausedUs
			if r.Holds == nil || *r.Holds != 1 || r.PauseRx == nil || *r.PauseRx != 1 {
				t.Errorf("summary holds %v pause_rx %v, want 1, 1", r.Holds, r.PauseRx)
			}
		}
		if r.Type == "agent" {
			host = r.Pause
		}
	}
	// The sender's held time is the send loop's view (from when it saw the
	// pause to when it saw it end), the host's the exact pause.
	if flowPaused < float64(held)/1e3 {
		t.Errorf("flow paused_us %v, below the %v seen before the end", flowPaused, held)
	}
	if host == nil || host.PFCFrames != 1 || host.XOFF[3] != 1 || host.PausedUs[3] != float64(want)/1e3 {
		t.Errorf("agent pause record %+v", host)
	}
}
