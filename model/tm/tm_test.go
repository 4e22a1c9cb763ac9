package tm

import (
	"errors"
	"testing"

	"github.com/fastcnp/fastcnp/wire"
)

const gbps = 1_000_000_000

// recHooks records what the pipeline would see.
type recHooks struct {
	enq    []EnqueueInfo[int]
	deq    []DequeueInfo[int]
	pauses []pauseEv
	mark   func(*DequeueInfo[int]) // optional: the pipeline's ECN decision
}

type pauseEv struct {
	port, prio int
	paused     bool
	at         int64
}

func (r *recHooks) OnEnqueue(e *EnqueueInfo[int]) { r.enq = append(r.enq, *e) }
func (r *recHooks) OnDequeue(d *DequeueInfo[int]) {
	if r.mark != nil {
		r.mark(d)
	}
	r.deq = append(r.deq, *d)
}
func (r *recHooks) OnEgressPause(port, prio int, paused bool, at int64) {
	r.pauses = append(r.pauses, pauseEv{port, prio, paused, at})
}

func ports(n int, rate, delay int64) []PortConfig {
	ps := make([]PortConfig, n)
	for i := range ps {
		ps[i] = PortConfig{RateBps: rate, PropDelayNs: delay}
	}
	return ps
}

func mustNew(t testing.TB, cfg Config, h Hooks[int]) *TM[int] {
	t.Helper()
	m, err := New[int](cfg, h)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

func mustEnq(t testing.TB, m *TM[int], h, length, in, out, prio int, now int64) EnqueueResult {
	t.Helper()
	r, err := m.Enqueue(h, length, in, out, prio, now)
	if err != nil {
		t.Fatalf("Enqueue(h=%d): %v", h, err)
	}
	return r
}

func mustDeq(t testing.TB, m *TM[int], port int, now int64) Departure[int] {
	t.Helper()
	d, ok, err := m.Dequeue(port, now)
	if err != nil || !ok {
		t.Fatalf("Dequeue(port %d, %d): ok=%v err=%v", port, now, ok, err)
	}
	return d
}

func TestConfigErrors(t *testing.T) {
	good := func() Config {
		return Config{Ports: ports(2, gbps, 1000), BufferBytes: 1 << 20, Lossless: 1 << 3}
	}
	tests := []struct {
		name string
		mod  func(*Config)
	}{
		{"no ports", func(c *Config) { c.Ports = nil }},
		{"zero rate", func(c *Config) { c.Ports[1].RateBps = 0 }},
		{"rate too low", func(c *Config) { c.Ports[0].RateBps = 99_999_999 }},
		{"rate too high", func(c *Config) { c.Ports[0].RateBps = 400*gbps + 1 }},
		{"negative delay", func(c *Config) { c.Ports[0].PropDelayNs = -1 }},
		{"negative headroom", func(c *Config) { c.Ports[0].HeadroomBytes = -5 }},
		{"headroom below one frame", func(c *Config) { c.Ports[0].HeadroomBytes = 1000 }},
		{"zero buffer", func(c *Config) { c.BufferBytes = 0 }},
		{"buffer all headroom", func(c *Config) { c.BufferBytes = 2 * 3418 }},
		{"static without xoff", func(c *Config) { c.Threshold = ThresholdStatic }},
		{"xon above xoff", func(c *Config) { c.Threshold = ThresholdStatic; c.XoffBytes = 5000; c.XonBytes = 5000 }},
		{"negative alpha", func(c *Config) { c.Alpha = -1 }},
		{"refresh 95%", func(c *Config) { c.RefreshPercent = 95 }},
		{"tiny max frame", func(c *Config) { c.MaxFrameBytes = 10 }},
		{"bad scheduler", func(c *Config) { c.Scheduler = 9 }},
		{"bad threshold mode", func(c *Config) { c.Threshold = 9 }},
		{"negative queue cap", func(c *Config) { c.QueueCapBytes[2] = -1 }},
	}
	if _, err := New[int](good(), nil); err != nil {
		t.Fatalf("good config rejected: %v", err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := good()
			tc.mod(&c)
			_, err := New[int](c, nil)
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("err = %v, want ErrConfig", err)
			}
		})
	}
}

func TestBadInputNeverPanics(t *testing.T) {
	m := mustNew(t, Config{Ports: ports(2, gbps, 0), BufferBytes: 1 << 20, Lossless: 1 << 3}, nil)
	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"enqueue unknown egress", func() error { _, err := m.Enqueue(0, 100, 0, 2, 0, 0); return err }, ErrUnknownPort},
		{"enqueue negative egress", func() error { _, err := m.Enqueue(0, 100, 0, -1, 0, 0); return err }, ErrUnknownPort},
		{"enqueue unknown ingress", func() error { _, err := m.Enqueue(0, 100, 7, 0, 0, 0); return err }, ErrUnknownPort},
		{"enqueue priority 8", func() error { _, err := m.Enqueue(0, 100, 0, 1, 8, 0); return err }, ErrBadPriority},
		{"enqueue priority -1", func() error { _, err := m.Enqueue(0, 100, 0, 1, -1, 0); return err }, ErrBadPriority},
		{"enqueue zero length", func() error { _, err := m.Enqueue(0, 0, 0, 1, 0, 0); return err }, ErrBadLength},
		{"enqueue oversized", func() error { _, err := m.Enqueue(0, 1523, 0, 1, 0, 0); return err }, ErrBadLength},
		{"dequeue unknown", func() error { _, _, err := m.Dequeue(2, 0); return err }, ErrUnknownPort},
		{"next departure unknown", func() error { _, _, err := m.NextDeparture(-3, 0); return err }, ErrUnknownPort},
		{"receive PFC unknown", func() error { return m.ReceivePFC(5, 1, [8]uint16{1}, 0) }, ErrUnknownPort},
		{"receive PAUSE unknown", func() error { return m.ReceivePause(5, 1, 0) }, ErrUnknownPort},
		{"queue bytes priority 9", func() error { _, err := m.QueueBytes(0, 9); return err }, ErrBadPriority},
		{"egress paused unknown", func() error { _, err := m.EgressPaused(3, 0, 0); return err }, ErrUnknownPort},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	if got := m.BufferUsed(); got != 0 {
		t.Fatalf("bad input changed the buffer: %d B used", got)
	}
	if _, ok, _ := m.Dequeue(1, 0); ok {
		t.Fatal("bad input queued a frame")
	}
}

func TestHeadroomFormula(t *testing.T) {
	tests := []struct {
		name       string
		rate, dly  int64
		frame      int
		proc       int64
		roundTrip  int64
		hpcc       int64
		serialise  int64 // ns for the frame at rate, no preamble
		pause65535 int64 // ns of a maximal pause at rate
	}{
		// 2*1000*1e9/8e9 = 250; 3*(1522+20) = 4626; PFC 84 -> 4960. HPCC: 375.
		{"1G 1us", gbps, 1000, 1522, 0, 4960, 375, 12176, 33553920},
		// 2*1000*100e9/8e9 = 25000; +4626 +84 = 29710. HPCC: 37500.
		{"100G 1us", 100 * gbps, 1000, 1522, 0, 29710, 37500, 122, 335540},
		// with a 500 ns response allowance at 100G: +6250.
		{"100G 1us proc 500ns", 100 * gbps, 1000, 1522, 500, 35960, 37500, 122, 335540},
		// 4096-B RoCE MTU frames at 400G, 2 us: 200000 + 3*(4136+20) + 84 = 212552.
		{"400G 2us 4136B", 400 * gbps, 2000, 4136, 0, 212552, 300000, 83, 83885},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := HeadroomRoundTripBytes(tc.rate, tc.dly, tc.frame, tc.proc); got != tc.roundTrip {
				t.Errorf("round trip = %d, want %d", got, tc.roundTrip)
			}
			if got := HeadroomHPCCBytes(tc.rate, tc.dly); got != tc.hpcc {
				t.Errorf("HPCC = %d, want %d", got, tc.hpcc)
			}
			if got := SerializationNs(tc.frame, tc.rate); got != tc.serialise {
				t.Errorf("serialisation = %d, want %d", got, tc.serialise)
			}
			if got := wire.PauseNs(0xFFFF, tc.rate); got != tc.pause65535 {
				t.Errorf("pause = %d, want %d", got, tc.pause65535)
			}
		})
	}
	// New fills the computed headroom in.
	m := mustNew(t, Config{Ports: ports(1, gbps, 1000), BufferBytes: 1 << 20, Lossless: 1<<3 | 1<<4}, nil)
	if got := m.Config().Ports[0].HeadroomBytes; got != 4960 {
		t.Fatalf("computed headroom %d, want 4960", got)
	}
	if got := m.Snapshot(0).Buffer.SharedBytes; got != 1<<20-2*4960 {
		t.Fatalf("shared pool %d, want %d (two lossless priorities reserve headroom)", got, 1<<20-2*4960)
	}
}

func TestShapingRate(t *testing.T) {
	tests := []struct {
		name     string
		rate     int64
		overhead bool
		frame    int
		n        int
		// wantStart[k] is frame k's TxStart when the queue is backlogged from t=0.
		wantStart []int64
		wantEnd   int64 // TxEnd of the last frame
	}{
		// 1500 B * 8 / 1 Gb/s = 12 us per frame.
		{"1G 1500B", gbps, false, 1500, 5, []int64{0, 12000, 24000, 36000, 48000}, 60000},
		// with preamble+IFG: 1520 B -> 12.16 us.
		{"1G 1500B+20", gbps, true, 1500, 3, []int64{0, 12160, 24320}, 36480},
		// 1520 B at 400 Gb/s = 30.4 ns: floor(k*30.4) thanks to the carried fraction,
		// ten frames take exactly 304 ns.
		{"400G 1500B+20", 400 * gbps, true, 1500, 10, []int64{0, 30, 60, 91, 121, 152, 182, 212, 243, 273}, 304},
		// 100 Mb/s, 64 B: 5.12 us.
		{"100M 64B", 100_000_000, false, 64, 3, []int64{0, 5120, 10240}, 15360},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const delay = 777
			m := mustNew(t, Config{Ports: ports(2, tc.rate, delay), BufferBytes: 1 << 20, WireOverhead: tc.overhead}, nil)
			for i := range tc.n {
				mustEnq(t, m, i, tc.frame, 1, 0, 0, 0)
			}
			now := int64(0)
			var last Departure[int]
			for k := range tc.n {
				at, ok, err := m.NextDeparture(0, now)
				if err != nil || !ok {
					t.Fatalf("frame %d: NextDeparture ok=%v err=%v", k, ok, err)
				}
				if at != tc.wantStart[k] {
					t.Fatalf("frame %d: NextDeparture = %d, want %d", k, at, tc.wantStart[k])
				}
				if at > 0 {
					if _, ok, _ := m.Dequeue(0, at-1); ok {
						t.Fatalf("frame %d dequeued 1 ns before the shaper allows", k)
					}
				}
				d := mustDeq(t, m, 0, at)
				if d.Handle != k || d.TxStart != at || d.DeliverAt != d.TxEnd+delay {
					t.Fatalf("frame %d: %+v", k, d)
				}
				now, last = d.TxEnd, d
			}
			if last.TxEnd != tc.wantEnd {
				t.Fatalf("last TxEnd = %d, want %d", last.TxEnd, tc.wantEnd)
			}
			if _, ok, _ := m.NextDeparture(0, now); ok {
				t.Fatal("empty port reports a departure")
			}
		})
	}
}

func TestShapingIdleLinkStartsAtNow(t *testing.T) {
	m := mustNew(t, Config{Ports: ports(2, gbps, 0), BufferBytes: 1 << 20}, nil)
	mustEnq(t, m, 1, 1500, 1, 0, 0, 0)
	if d := mustDeq(t, m, 0, 0); d.TxEnd != 12000 {
		t.Fatalf("TxEnd = %d, want 12000", d.TxEnd)
	}
	mustEnq(t, m, 2, 1000, 1, 0, 0, 50000)
	d := mustDeq(t, m, 0, 50000)
	if d.TxStart != 50000 || d.TxEnd != 58000 || d.EnqueuedAt != 50000 {
		t.Fatalf("after idle: %+v, want start 50000 end 58000", d)
	}
}

// TestShapingIdleDropsFraction: a fraction of a ns carried from before an idle gap must
// not shorten or lengthen a later frame: each isolated 1520-B frame at 400G takes 30 ns.
func TestShapingIdleDropsFraction(t *testing.T) {
	m := mustNew(t, Config{Ports: ports(2, 400*gbps, 0), BufferBytes: 1 << 20, WireOverhead: true}, nil)
	for k := range 4 {
		now := int64(k) * 1000
		mustEnq(t, m, k, 1500, 1, 0, 0, now)
		if d := mustDeq(t, m, 0, now); d.TxEnd-d.TxStart != 30 {
			t.Fatalf("frame %d after idle took %d ns, want 30", k, d.TxEnd-d.TxStart)
		}
	}
}

func TestSchedulerOrder(t *testing.T) {
	// frames: handle i at priority prios[i], all 100 B, queued at t=0.
	prios := []int{0, 3, 7, 1, 3, 0}
	tests := []struct {
		name  string
		sched SchedulerMode
		ll    uint8
		want  []int // handles in dequeue order
	}{
		{"strict all", SchedStrict, 1 << 3, []int{2, 1, 4, 3, 0, 5}},
		{"lossless first", SchedLosslessFirst, 1 << 3, []int{1, 4, 2, 3, 0, 5}},
		{"lossless first, two lossless", SchedLosslessFirst, 1<<3 | 1<<1, []int{1, 4, 3, 2, 0, 5}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := mustNew(t, Config{Ports: ports(2, gbps, 0), BufferBytes: 1 << 20, Lossless: tc.ll, Scheduler: tc.sched}, nil)
			for h, p := range prios {
				mustEnq(t, m, h, 100, 1, 0, p, 0)
			}
			now := int64(0)
			for k, want := range tc.want {
				d := mustDeq(t, m, 0, now)
				if d.Handle != want {
					t.Fatalf("position %d: got handle %d (prio %d), want %d", k, d.Handle, d.Priority, want)
				}
				now = d.TxEnd
			}
		})
	}
}

func TestDWRRShares(t *testing.T) {
	cfg := Config{Ports: ports(2, gbps, 0), BufferBytes: 1 << 20, Lossless: 1 << 3, Scheduler: SchedLosslessFirstDWRR}
	cfg.DWRRQuantumBytes[0] = 3000
	cfg.DWRRQuantumBytes[1] = 1500
	m := mustNew(t, cfg, nil)
	for i := range 20 {
		mustEnq(t, m, 100+i, 1500, 1, 0, 0, 0)
		mustEnq(t, m, 200+i, 1500, 1, 0, 1, 0)
	}
	now := int64(0)
	var got []int
	for k := range 12 {
		if k == 7 { // a lossless frame jumps ahead of both lossy classes
			mustEnq(t, m, 999, 500, 1, 0, 3, now)
		}
		d := mustDeq(t, m, 0, now)
		got = append(got, d.Priority)
		now = d.TxEnd
	}
	// The round starts at priority 1 (the round visits lossy priorities high to low):
	// 1 fits one 1500-B frame per 1500-B quantum, 0 two per 3000-B quantum.
	want := []int{1, 0, 0, 1, 0, 0, 1, 3, 0, 0, 1, 0}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
}

func TestLossyTailDrop(t *testing.T) {
	cfg := Config{Ports: ports(2, gbps, 0), BufferBytes: 10_000}
	cfg.QueueCapBytes[1] = 2500
	m := mustNew(t, cfg, nil)
	tests := []struct {
		h, length, prio int
		want            Verdict
	}{
		{1, 1000, 1, Accepted},
		{2, 1000, 1, Accepted},
		{3, 1000, 1, DroppedQueueCap}, // 3000 > cap 2500
		{4, 500, 1, Accepted},         // exactly 2500
		{5, 1500, 0, Accepted},        // 4000 used
		{6, 1500, 0, Accepted},
		{7, 1500, 0, Accepted},
		{8, 1500, 0, Accepted},
		{10, 1500, 0, Accepted}, // 2500 + 5*1500 = 10000 used: full
		{9, 64, 2, DroppedBufferFull},
	}
	for _, tc := range tests {
		r, err := m.Enqueue(tc.h, tc.length, 1, 0, tc.prio, 0)
		if err != nil || r.Verdict != tc.want {
			t.Fatalf("frame %d: verdict %v err %v, want %v", tc.h, r.Verdict, err, tc.want)
		}
	}
	s := m.Snapshot(0)
	if s.Ports[0].Egress[1].DroppedPkts != 1 || s.Ports[0].Egress[1].DroppedBytes != 1000 ||
		s.Ports[0].Egress[2].DroppedPkts != 1 || s.Ports[1].Ingress[2].DroppedBytes != 64 {
		t.Fatalf("drop counters: %+v %+v", s.Ports[0].Egress[1], s.Ports[0].Egress[2])
	}
	if s.LosslessDropPkts != 0 || s.Buffer.UsedBytes != 10_000 || s.Buffer.HighWater != 10_000 {
		t.Fatalf("buffer: %+v lossless drops %d", s.Buffer, s.LosslessDropPkts)
	}
}

func TestHooksSeeEnqueueAndDequeue(t *testing.T) {
	h := &recHooks{mark: func(d *DequeueInfo[int]) {
		// a RED-like pipeline: mark when the queue was above 1500 B before this frame
		d.Mark = d.QueueBytesBefore > 1500
		d.Tag = uint32(d.Handle) * 10
	}}
	m := mustNew(t, Config{Ports: ports(3, gbps, 0), BufferBytes: 1 << 20, Lossless: 1 << 3}, h)
	mustEnq(t, m, 1, 1000, 2, 0, 3, 10)
	mustEnq(t, m, 2, 800, 1, 0, 3, 20)
	mustEnq(t, m, 3, 300, 1, 0, 5, 30)
	want := []EnqueueInfo[int]{
		{Handle: 1, Len: 1000, Ingress: 2, Port: 0, Priority: 3, QueueBytes: 1000, PortBytes: 1000, Now: 10},
		{Handle: 2, Len: 800, Ingress: 1, Port: 0, Priority: 3, QueueBytes: 1800, PortBytes: 1800, Now: 20},
		{Handle: 3, Len: 300, Ingress: 1, Port: 0, Priority: 5, QueueBytes: 300, PortBytes: 2100, Now: 30},
	}
	for i := range want {
		if h.enq[i] != want[i] {
			t.Fatalf("enqueue %d: %+v, want %+v", i, h.enq[i], want[i])
		}
	}
	d1 := mustDeq(t, m, 0, 100) // strict: prio 5 first
	d2 := mustDeq(t, m, 0, d1.TxEnd)
	d3 := mustDeq(t, m, 0, d2.TxEnd)
	wantD := []DequeueInfo[int]{
		{Handle: 3, Len: 300, Ingress: 1, Port: 0, Priority: 5, QueueBytesBefore: 300, QueueBytesAfter: 0, PortBytesAfter: 1800, EnqueuedAt: 30, Now: 100, Mark: false, Tag: 30},
		{Handle: 1, Len: 1000, Ingress: 2, Port: 0, Priority: 3, QueueBytesBefore: 1800, QueueBytesAfter: 800, PortBytesAfter: 800, EnqueuedAt: 10, Now: 2500, Mark: true, Tag: 10},
		{Handle: 2, Len: 800, Ingress: 1, Port: 0, Priority: 3, QueueBytesBefore: 800, QueueBytesAfter: 0, PortBytesAfter: 0, EnqueuedAt: 20, Now: 10500, Mark: false, Tag: 20},
	}
	for i, d := range []Departure[int]{d1, d2, d3} {
		if h.deq[i] != wantD[i] {
			t.Fatalf("dequeue %d: %+v, want %+v", i, h.deq[i], wantD[i])
		}
		if d.Mark != wantD[i].Mark || d.Tag != wantD[i].Tag {
			t.Fatalf("departure %d did not carry the hook's mark/tag: %+v", i, d)
		}
	}
}

func TestSnapshotCounters(t *testing.T) {
	m := mustNew(t, Config{Ports: ports(2, gbps, 0), BufferBytes: 1 << 20, Lossless: 1 << 3}, nil)
	mustEnq(t, m, 1, 1000, 1, 0, 3, 0)
	mustEnq(t, m, 2, 500, 1, 0, 3, 0)
	mustEnq(t, m, 3, 200, 0, 1, 0, 0)
	mustDeq(t, m, 0, 0)
	s := m.Snapshot(0)
	e := s.Ports[0].Egress[3]
	if e.EnqueuedPkts != 2 || e.EnqueuedBytes != 1500 || e.DequeuedPkts != 1 || e.DequeuedBytes != 1000 ||
		e.QueueBytes != 500 || e.QueueHighWater != 1500 {
		t.Fatalf("egress 0/3: %+v", e)
	}
	in := s.Ports[1].Ingress[3]
	if in.ReceivedPkts != 2 || in.ReceivedBytes != 1500 || in.SharedBytes != 500 || in.HighWater != 1500 ||
		in.HeadroomReserved != 3*1542+84 {
		t.Fatalf("ingress 1/3: %+v", in)
	}
	if s.Buffer.UsedBytes != 700 || s.Buffer.HighWater != 1700 || s.TotalEnqueuedPkts != 3 || s.TotalDequeuedPkts != 1 {
		t.Fatalf("totals: %+v", s)
	}
	if s.Ports[1].Ingress[0].HeadroomReserved != 0 {
		t.Fatal("lossy priority reports headroom")
	}
}

// TestFIFOWrap pushes and pops across the ring's wrap point and growth.
func TestFIFOWrap(t *testing.T) {
	var f fifo[int]
	next, want := 0, 0
	for round := range 50 {
		for range round % 7 {
			f.push(entry[int]{h: next})
			next++
		}
		for range round % 5 {
			if f.n == 0 {
				break
			}
			if got := f.pop().h; got != want {
				t.Fatalf("pop %d, want %d", got, want)
			}
			want++
		}
	}
	for f.n > 0 {
		if got := f.pop().h; got != want {
			t.Fatalf("drain pop %d, want %d", got, want)
		}
		want++
	}
	if want != next {
		t.Fatalf("popped %d of %d", want, next)
	}
}

func TestLossyDynamicCap(t *testing.T) {
	m := mustNew(t, Config{Ports: ports(2, gbps, 0), BufferBytes: 10_000, LossyAlpha: 1}, nil)
	// queue q may hold q+len <= 1 * free: 5 frames of 1000 B (5000 <= 6000), not a 6th.
	for i := range 6 {
		r, err := m.Enqueue(i, 1000, 1, 0, 0, 0)
		want := Accepted
		if i == 5 {
			want = DroppedQueueCap
		}
		if err != nil || r.Verdict != want {
			t.Fatalf("prio 0 frame %d: %v %v, want %v", i, r.Verdict, err, want)
		}
	}
	// a second queue sees free = 5000: 1000<=5000, 2000<=4000, 3000<=3000, 4000>2000.
	for i := range 4 {
		r, _ := m.Enqueue(i, 1000, 1, 0, 1, 0)
		if r.Verdict.IsAccepted() != (i < 3) {
			t.Fatalf("prio 1 frame %d: %v", i, r.Verdict)
		}
	}
}

func TestHeadroomFormulaNoOverflow(t *testing.T) {
	// 1 s at 400 Gb/s: 2*1e9 ns * 400e9 b/s overflows int64; the result is 1e11 B.
	if got, want := HeadroomRoundTripBytes(400*gbps, 1e9, 1522, 0), int64(1e11+4626+84); got != want {
		t.Fatalf("got %d, want %d", got, want)
	}
	if got, want := HeadroomHPCCBytes(400*gbps, 1e9), int64(15e10); got != want {
		t.Fatalf("got %d, want %d", got, want)
	}
}
