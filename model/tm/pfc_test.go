package tm

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// staticCfg: port 0 egress, port 1 (and 2) ingress, 1 Gb/s, priority 3 lossless.
func staticCfg(xoff, xon int64) Config {
	return Config{
		Ports: ports(3, gbps, 1000), BufferBytes: 1 << 20, Lossless: 1 << 3,
		Threshold: ThresholdStatic, XoffBytes: xoff, XonBytes: xon,
	}
}

func TestXoffXonStatic(t *testing.T) {
	tests := []struct {
		name      string
		xoff, xon int64
		// XOFF comes with frame number xoffAt (1-based) of 1000 B each, with this verdict.
		xoffAt      int
		xoffVerdict Verdict
		// XON comes with the dequeue number xonAt (1-based) after 11 frames queued.
		xonAt int
	}{
		// held reaches 10000 >= XOFF exactly on frame 10; frame 11 goes to headroom.
		// XON = 10000 - 3072 = 6928: after 5 dequeues (headroom first: 11000 -> 6000).
		{"exact crossing, resume offset", 10000, 0, 10, Accepted, 5},
		// 9000 + 1000 > 9500: frame 10 spills into headroom and triggers XOFF.
		// XON = 9500 - 3072 = 6428: 11000 -> 6000 after 5 dequeues.
		{"spill into headroom", 9500, 0, 10, AcceptedHeadroom, 5},
		// static XON 2000: 11000 -> 2000 after 9 dequeues.
		{"static xon", 10000, 2000, 10, Accepted, 9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := mustNew(t, staticCfg(tc.xoff, tc.xon), nil)
			now := int64(0)
			for i := 1; i <= 11; i++ {
				r := mustEnq(t, m, i, 1000, 1, 0, 3, now)
				switch {
				case i == tc.xoffAt:
					want := PFCEvent{Kind: PFCXoff, Port: 1, ClassEnable: 1 << 3, SendAt: now, DeliverAt: now + 512 + 1000}
					want.Quanta[3] = 0xFFFF
					if r.PFC != want || r.Verdict != tc.xoffVerdict {
						t.Fatalf("frame %d: %+v, want verdict %v and %+v", i, r, tc.xoffVerdict, want)
					}
				case r.PFC.Kind != PFCNone:
					t.Fatalf("frame %d: unexpected PFC %+v", i, r.PFC)
				case i > tc.xoffAt && r.Verdict != AcceptedHeadroom:
					t.Fatalf("frame %d after XOFF: verdict %v, want headroom", i, r.Verdict)
				}
				now += 100
			}
			for k := 1; k <= 11; k++ {
				d := mustDeq(t, m, 0, now)
				now = d.TxEnd
				if k == tc.xonAt {
					want := PFCEvent{Kind: PFCXon, Port: 1, ClassEnable: 1 << 3, SendAt: d.TxStart, DeliverAt: d.TxStart + 512 + 1000}
					if d.PFC != want {
						t.Fatalf("dequeue %d: PFC %+v, want %+v", k, d.PFC, want)
					}
				} else if d.PFC.Kind != PFCNone {
					t.Fatalf("dequeue %d: unexpected PFC %+v", k, d.PFC)
				}
			}
			in := m.Snapshot(now).Ports[1].Ingress[3]
			if in.PFCTxXoff != 1 || in.PFCTxXon != 1 || in.Xoff || in.HeadroomHighWater != int64(11-tc.xoffAt+boolInt(tc.xoffVerdict == AcceptedHeadroom))*1000 {
				t.Fatalf("ingress counters: %+v", in)
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestHeadroomExhaustedIsLosslessDrop(t *testing.T) {
	cfg := staticCfg(5000, 0)
	cfg.Ports[1].HeadroomBytes = 2000
	m := mustNew(t, cfg, nil)
	for i := 1; i <= 7; i++ { // 5 shared, 2 headroom
		want := Accepted
		if i > 5 {
			want = AcceptedHeadroom
		}
		if v, err := m.Admits(1000, 1, 0, 3); v != want || err != nil {
			t.Fatalf("frame %d: Admits %v, %v; want %v", i, v, err, want)
		}
		mustEnq(t, m, i, 1000, 1, 0, 3, 0)
	}
	// Asking changes nothing: the 8th frame would be a lossless drop.
	for range 2 {
		if v, err := m.Admits(1000, 1, 0, 3); v != DroppedLossless || err != nil || m.LosslessDrops() != 0 {
			t.Fatalf("8th frame: Admits %v, %v, %d lossless drops counted; want DroppedLossless, none counted", v, err, m.LosslessDrops())
		}
	}
	if _, err := m.Admits(1000, 1, 0, 9); !errors.Is(err, ErrBadPriority) {
		t.Fatalf("Admits of priority 9: %v", err)
	}
	r, err := m.Enqueue(8, 1000, 1, 0, 3, 0)
	if !errors.Is(err, ErrLosslessDrop) || r.Verdict != DroppedLossless {
		t.Fatalf("8th frame: %+v err %v, want DroppedLossless/ErrLosslessDrop", r, err)
	}
	// lossy traffic from the same port is not a lossless drop
	if _, err := m.Enqueue(9, 1000, 1, 0, 0, 0); err != nil {
		t.Fatalf("lossy frame: %v", err)
	}
	s := m.Snapshot(0)
	if m.LosslessDrops() != 1 || s.LosslessDropBytes != 1000 || s.Ports[0].Egress[3].LosslessDroppedPkts != 1 ||
		s.Ports[1].Ingress[3].HeadroomBytes != 2000 || s.Buffer.HeadroomUsed != 2000 {
		t.Fatalf("counters: lossless drops %d, %+v", m.LosslessDrops(), s.Ports[1].Ingress[3])
	}
}

func TestPFCWaitsForFrameInFlight(t *testing.T) {
	m := mustNew(t, staticCfg(1000, 500), nil)
	// port 1 transmits a 1500-B frame 0..12000 ns
	mustEnq(t, m, 1, 1500, 0, 1, 0, 0)
	mustDeq(t, m, 1, 0)
	r := mustEnq(t, m, 2, 1000, 1, 0, 3, 5000)
	if r.PFC.Kind != PFCXoff || r.PFC.SendAt != 12000 || r.PFC.DeliverAt != 12000+512+1000 {
		t.Fatalf("XOFF %+v, want SendAt 12000 (after the frame in flight)", r.PFC)
	}
	// the PFC frame holds port 1's wire 12000..12512
	mustEnq(t, m, 3, 100, 0, 1, 0, 5000)
	if at, ok, _ := m.NextDeparture(1, 5000); !ok || at != 12512 {
		t.Fatalf("next data frame on port 1 at %d, want 12512", at)
	}
}

func TestXoffRefresh(t *testing.T) {
	cfg := staticCfg(1000, 0)
	cfg.PauseQuanta = 1000 // 512000 ns at 1 Gb/s; refresh after 50%: 256000 ns
	m := mustNew(t, cfg, nil)
	if _, ok := m.NextTimer(); ok {
		t.Fatal("timer pending on an idle TM")
	}
	r := mustEnq(t, m, 1, 1000, 1, 0, 3, 1000)
	if r.PFC.Kind != PFCXoff || r.PFC.Quanta[3] != 1000 || r.PFC.SendAt != 1000 {
		t.Fatalf("XOFF %+v", r.PFC)
	}
	if at, ok := m.NextTimer(); !ok || at != 257000 {
		t.Fatalf("NextTimer = %d,%v want 257000", at, ok)
	}
	if evs := m.Advance(256999, nil); len(evs) != 0 {
		t.Fatalf("refresh 1 ns early: %+v", evs)
	}
	evs := m.Advance(257000, nil)
	want := PFCEvent{Kind: PFCRefresh, Port: 1, ClassEnable: 1 << 3, SendAt: 257000, DeliverAt: 257000 + 512 + 1000}
	want.Quanta[3] = 1000
	if len(evs) != 1 || evs[0] != want {
		t.Fatalf("refresh %+v, want %+v", evs, want)
	}
	// the refresh reaches the upstream at 258512, well before the first XOFF's pause
	// (delivered at 2512) expires at 2512 + 512000.
	if at, _ := m.NextTimer(); at != 257000+256000 {
		t.Fatalf("next refresh at %d, want %d", at, 257000+256000)
	}
	// draining to XON ends the refreshes
	d := mustDeq(t, m, 0, 300000)
	if d.PFC.Kind != PFCXon {
		t.Fatalf("no XON on drain: %+v", d.PFC)
	}
	if at, ok := m.NextTimer(); ok {
		t.Fatalf("timer still pending at %d after XON", at)
	}
	in := m.Snapshot(300000).Ports[1].Ingress[3]
	if in.PFCTxRefresh != 1 || in.XoffNs != 299000 {
		t.Fatalf("counters %+v", in)
	}
}

func TestRefreshCoalescesPriorities(t *testing.T) {
	cfg := staticCfg(1000, 0)
	cfg.Lossless = 1<<3 | 1<<4
	cfg.PauseQuanta = 100 // 51200 ns; refresh every 25600
	m := mustNew(t, cfg, nil)
	mustEnq(t, m, 1, 1000, 1, 0, 3, 0)    // XOFF prio 3, sent 0..512
	mustEnq(t, m, 2, 1000, 1, 0, 4, 1000) // XOFF prio 4, sent at 1000
	evs := m.Advance(26600, nil)
	if len(evs) != 1 || evs[0].ClassEnable != 1<<3|1<<4 || evs[0].Quanta[3] != 100 || evs[0].Quanta[4] != 100 {
		t.Fatalf("want one frame for both priorities, got %+v", evs)
	}
}

func TestReceivePFC(t *testing.T) {
	tests := []struct {
		name    string
		rate    int64
		quanta  uint16
		wantDur int64
	}{
		{"1G 100 quanta", gbps, 100, 51200},
		{"100G 100 quanta", 100 * gbps, 100, 512},
		{"400G 3 quanta", 400 * gbps, 3, 4}, // 3.84 ns, rounded up
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &recHooks{}
			m := mustNew(t, Config{Ports: ports(2, tc.rate, 0), BufferBytes: 1 << 20, Lossless: 1 << 3}, h)
			const t0 = 1000
			var q [8]uint16
			q[3] = tc.quanta
			q[5] = 7 // not enabled in the class vector: ignored
			if err := m.ReceivePFC(0, 1<<3, q, t0); err != nil {
				t.Fatal(err)
			}
			mustEnq(t, m, 30, 64, 1, 0, 3, t0)
			mustEnq(t, m, 0, 64, 1, 0, 0, t0)
			mustEnq(t, m, 50, 64, 1, 0, 5, t0)
			d := mustDeq(t, m, 0, t0)
			if d.Priority != 5 {
				t.Fatalf("first out prio %d, want 5 (3 is paused)", d.Priority)
			}
			d = mustDeq(t, m, 0, d.TxEnd)
			if d.Priority != 0 {
				t.Fatalf("second out prio %d, want 0 (3 is paused)", d.Priority)
			}
			end := t0 + tc.wantDur
			if at, ok, _ := m.NextDeparture(0, d.TxEnd); !ok || at != max(end, d.TxEnd) {
				t.Fatalf("NextDeparture = %d, want %d", at, max(end, d.TxEnd))
			}
			if d.TxEnd < end {
				if _, ok, _ := m.Dequeue(0, end-1); ok {
					t.Fatal("paused priority dequeued 1 ns before the pause ends")
				}
			}
			d = mustDeq(t, m, 0, max(end, d.TxEnd))
			if d.Priority != 3 {
				t.Fatalf("prio %d, want 3", d.Priority)
			}
			wantEv := []pauseEv{{0, 3, true, t0}, {0, 3, false, end}}
			if len(h.pauses) != 2 || h.pauses[0] != wantEv[0] || h.pauses[1] != wantEv[1] {
				t.Fatalf("pause hooks %+v, want %+v", h.pauses, wantEv)
			}
			e := m.Snapshot(end + 5).Ports[0].Egress[3]
			if e.PausedNs != tc.wantDur || e.PFCRxXoff != 1 || e.Paused {
				t.Fatalf("counters %+v", e)
			}
		})
	}
}

// TestReceivePFCSequences: sequences of received PFC frames on egress port 0, whose
// priority-3 queue holds one frame from t=0. Each frame replaces the remaining pause of
// the priorities it enables (refresh: extend or shorten), quanta 0 resumes at once, a
// pause lasts quanta*512 bit times at the port's rate, and only the start and the end
// of a pause reach the hooks.
func TestReceivePFCSequences(t *testing.T) {
	type rx struct {
		at     int64
		ce     uint16 // class-enable vector
		quanta uint16 // for every priority (only the enabled ones count)
	}
	tests := []struct {
		name      string
		rate      int64
		frames    []rx
		leave     int64     // when the priority-3 frame may leave
		pausedNs  int64     // Egress[3].PausedNs once it left
		xoff, xon uint64    // Egress[3].PFCRxXoff / PFCRxXon
		hooks     []pauseEv // OnEgressPause calls, in order
	}{
		{name: "expiry without refresh", rate: gbps, frames: []rx{{0, 1 << 3, 100}},
			leave: 51200, pausedNs: 51200, xoff: 1,
			hooks: []pauseEv{{0, 3, true, 0}, {0, 3, false, 51200}}},
		{name: "refresh extends", rate: gbps, frames: []rx{{0, 1 << 3, 100}, {40000, 1 << 3, 100}},
			leave: 91200, pausedNs: 91200, xoff: 2,
			hooks: []pauseEv{{0, 3, true, 0}, {0, 3, false, 91200}}},
		{name: "refresh shortens", rate: gbps, frames: []rx{{0, 1 << 3, 1000}, {1000, 1 << 3, 10}},
			leave: 6120, pausedNs: 6120, xoff: 2,
			hooks: []pauseEv{{0, 3, true, 0}, {0, 3, false, 6120}}},
		{name: "quanta 0 resumes at once", rate: gbps, frames: []rx{{0, 1 << 3, 100}, {20000, 1 << 3, 0}},
			leave: 20000, pausedNs: 20000, xoff: 1, xon: 1,
			hooks: []pauseEv{{0, 3, true, 0}, {0, 3, false, 20000}}},
		{name: "refresh then quanta 0", rate: gbps, frames: []rx{{0, 1 << 3, 100}, {40000, 1 << 3, 100}, {70000, 1 << 3, 0}},
			leave: 70000, pausedNs: 70000, xoff: 2, xon: 1,
			hooks: []pauseEv{{0, 3, true, 0}, {0, 3, false, 70000}}},
		{name: "quanta 0 when not paused only counts", rate: gbps, frames: []rx{{500, 1 << 3, 0}},
			leave: 500, xon: 1},
		{name: "pause after expiry is a new pause", rate: gbps, frames: []rx{{0, 1 << 3, 10}, {10000, 1 << 3, 10}},
			leave: 15120, pausedNs: 10240, xoff: 2,
			hooks: []pauseEv{{0, 3, true, 0}, {0, 3, false, 5120}, {0, 3, true, 10000}, {0, 3, false, 15120}}},
		{name: "resume of another priority does not lift it", rate: gbps, frames: []rx{{0, 1 << 3, 100}, {1000, 1 << 4, 0}},
			leave: 51200, pausedNs: 51200, xoff: 1,
			hooks: []pauseEv{{0, 3, true, 0}, {0, 3, false, 51200}}},
		{name: "pause of another priority does not hold it", rate: gbps, frames: []rx{{300, 1 << 4, 0xffff}},
			leave: 300, hooks: []pauseEv{{0, 4, true, 300}}},
		{name: "reserved class-enable bits ignored", rate: gbps, frames: []rx{{0, 0xff00 | 1<<3, 100}},
			leave: 51200, pausedNs: 51200, xoff: 1,
			hooks: []pauseEv{{0, 3, true, 0}, {0, 3, false, 51200}}},
		{name: "quanta scale with the rate (100 Gb/s)", rate: 100 * gbps, frames: []rx{{0, 1 << 3, 0xffff}},
			leave: 335540, pausedNs: 335540, xoff: 1, // 65535 * 512 bits / 100 Gb/s = 335539.2 ns, rounded up
			hooks: []pauseEv{{0, 3, true, 0}, {0, 3, false, 335540}}},
		{name: "quanta scale with the rate (100 Mb/s)", rate: 100_000_000, frames: []rx{{0, 1 << 3, 1}}, // 512 bits
			leave: 5120, pausedNs: 5120, xoff: 1,
			hooks: []pauseEv{{0, 3, true, 0}, {0, 3, false, 5120}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &recHooks{}
			m := mustNew(t, Config{Ports: ports(2, tc.rate, 0), BufferBytes: 1 << 20, Lossless: 1 << 3}, h)
			mustEnq(t, m, 1, 64, 1, 0, 3, 0)
			last := int64(0)
			for _, f := range tc.frames {
				var q [NumPriorities]uint16
				for p := range q {
					q[p] = f.quanta
				}
				if err := m.ReceivePFC(0, f.ce, q, f.at); err != nil {
					t.Fatalf("ReceivePFC at %d: %v", f.at, err)
				}
				last = f.at
			}
			if at, ok, _ := m.NextDeparture(0, last); !ok || at != tc.leave {
				t.Fatalf("NextDeparture = %d, %v; want %d", at, ok, tc.leave)
			}
			if tc.leave > last {
				if p, _ := m.EgressPaused(0, 3, tc.leave-1); !p {
					t.Fatalf("not paused 1 ns before %d", tc.leave)
				}
				if _, ok, _ := m.Dequeue(0, tc.leave-1); ok {
					t.Fatalf("dequeued 1 ns before the pause ends at %d", tc.leave)
				}
			}
			if d := mustDeq(t, m, 0, tc.leave); d.Priority != 3 || d.TxStart != tc.leave {
				t.Fatalf("departure %+v, want priority 3 at %d", d, tc.leave)
			}
			e := m.Snapshot(tc.leave + 1).Ports[0].Egress[3]
			if e.PausedNs != tc.pausedNs || e.PFCRxXoff != tc.xoff || e.PFCRxXon != tc.xon || e.Paused {
				t.Fatalf("counters %+v, want paused %d ns, %d XOFF, %d XON received", e, tc.pausedNs, tc.xoff, tc.xon)
			}
			if len(h.pauses) != len(tc.hooks) {
				t.Fatalf("hooks %+v, want %+v", h.pauses, tc.hooks)
			}
			for i := range h.pauses {
				if h.pauses[i] != tc.hooks[i] {
					t.Fatalf("hooks %+v, want %+v", h.pauses, tc.hooks)
				}
			}
		})
	}
}

func TestAdvanceReportsPauseExpiry(t *testing.T) {
	h := &recHooks{}
	m := mustNew(t, Config{Ports: ports(1, gbps, 0), BufferBytes: 1 << 20}, h)
	_ = m.ReceivePFC(0, 1<<2, [8]uint16{2: 10}, 100) // 5120 ns
	if at, ok := m.NextTimer(); !ok || at != 5220 {
		t.Fatalf("NextTimer %d %v, want 5220", at, ok)
	}
	m.Advance(9999, nil)
	if len(h.pauses) != 2 || h.pauses[1] != (pauseEv{0, 2, false, 5220}) {
		t.Fatalf("hooks %+v", h.pauses)
	}
}

func TestLinkLevelPause(t *testing.T) {
	h := &recHooks{}
	m := mustNew(t, Config{Ports: ports(2, gbps, 0), BufferBytes: 1 << 20, Lossless: 1 << 3}, h)
	for p := range NumPriorities {
		mustEnq(t, m, p, 64, 1, 0, p, 0)
	}
	_ = m.ReceivePause(0, 10, 0) // 5120 ns, all priorities
	_ = m.ReceivePFC(0, 1<<3, [8]uint16{}, 100)
	if _, ok, _ := m.Dequeue(0, 100); ok {
		t.Fatal("dequeued during a link-level PAUSE (a PFC XON must not lift it)")
	}
	if at, _, _ := m.NextDeparture(0, 100); at != 5120 {
		t.Fatalf("NextDeparture %d, want 5120", at)
	}
	if d := mustDeq(t, m, 0, 5120); d.Priority != 7 {
		t.Fatalf("prio %d", d.Priority)
	}
	_ = m.ReceivePause(0, 1000, 6000)
	_ = m.ReceivePause(0, 0, 7000) // link XON
	if d := mustDeq(t, m, 0, 7000); d.Priority != 6 {
		t.Fatalf("prio %d after link XON", d.Priority)
	}
	s := m.Snapshot(8000).Ports[0]
	if s.LinkPauseRx != 2 || s.LinkResumeRx != 1 || s.LinkPausedNs != 5120+1000 {
		t.Fatalf("link counters %+v", s)
	}
	if h.pauses[0] != (pauseEv{0, LinkPause, true, 0}) {
		t.Fatalf("hooks %+v", h.pauses)
	}
}

func TestDynamicThresholdFollowsFreeBuffer(t *testing.T) {
	// shared pool 100000 B: buffer 130000 minus 3 ports * 10000 B headroom.
	base := func() Config {
		c := Config{Ports: ports(3, gbps, 1000), BufferBytes: 130_000, Lossless: 1 << 3, Alpha: 0.5}
		for i := range c.Ports {
			c.Ports[i].HeadroomBytes = 10_000
		}
		return c
	}
	tests := []struct {
		name    string
		prefill int // lossy bytes from port 2 first, 1000 B frames
		// XOFF when held x >= 0.5*(100000 - prefill - x), i.e. x >= (100000-prefill)/3
		wantXoffAt int
		wantThr    int64 // XOFF threshold after the prefill
	}{
		{"empty buffer", 0, 34, 50_000},   // 34000 >= 33000; 33000 < 33500
		{"half full", 50_000, 17, 25_000}, // 17000 >= 16500; 16000 < 17000
		{"80% full", 80_000, 7, 10_000},   // 7000 >= 6500; 6000 < 7000
		{"99.5% full", 99_500, 1, 250},    // 1000 > 250: the first frame spills to headroom
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := mustNew(t, base(), nil)
			for i := range tc.prefill / 1000 {
				mustEnq(t, m, i, 1000, 2, 1, 0, 0)
			}
			if tc.prefill%1000 != 0 {
				mustEnq(t, m, -1, tc.prefill%1000, 2, 1, 0, 0)
			}
			if got := m.XoffThreshold(); got != tc.wantThr {
				t.Fatalf("threshold %d, want %d", got, tc.wantThr)
			}
			for i := 1; i <= tc.wantXoffAt; i++ {
				r := mustEnq(t, m, i, 1000, 1, 0, 3, 0)
				if (r.PFC.Kind == PFCXoff) != (i == tc.wantXoffAt) {
					t.Fatalf("frame %d: PFC %v, want XOFF exactly at frame %d", i, r.PFC.Kind, tc.wantXoffAt)
				}
			}
		})
	}
}

func TestDynamicXonUsesResumeOffset(t *testing.T) {
	c := Config{Ports: ports(3, gbps, 1000), BufferBytes: 130_000, Lossless: 1 << 3, Alpha: 0.5}
	for i := range c.Ports {
		c.Ports[i].HeadroomBytes = 10_000
	}
	m := mustNew(t, c, nil)
	for i := 1; i <= 34; i++ { // XOFF at 34 (see above); threshold now 0.5*66000 = 33000
		mustEnq(t, m, i, 1000, 1, 0, 3, 0)
	}
	// XON when held + 3072 <= 0.5*(100000 - held): held <= 31285.3 -> after 3 dequeues (31000).
	now := int64(0)
	for k := 1; k <= 3; k++ {
		d := mustDeq(t, m, 0, now)
		now = d.TxEnd
		if (d.PFC.Kind == PFCXon) != (k == 3) {
			t.Fatalf("dequeue %d: PFC %v, want XON at 3", k, d.PFC.Kind)
		}
	}
}

// TestInputHold: an input hold (the runtime's input backlog) and the priority groups'
// own XOFF combine into one upstream pause per lossless priority: the hold pauses
// the lossless priorities not yet paused, a group crossing or draining during the
// hold sends nothing, the end of the hold resumes only the priorities whose group is
// not in XOFF, and refreshes cover every paused priority on its own timer.
func TestInputHold(t *testing.T) {
	const refresh = 65535 * 512 / 2 // ns: 50% of a 65535-quanta pause at 1 Gb/s
	type step struct {
		op   string // hold, release, enq3, enq4 (one 1000-B frame), deq, advance (to at)
		at   int64  // advance: absolute time; others run at the previous time + 1000
		want string // the PFC frames the step makes: "kind:classEnable" (hex), space separated
	}
	cases := []struct {
		name     string
		lossless uint8
		steps    []step
		holdXoff uint64 // frames the holds' starts sent
		holdXon  uint64
	}{
		{"hold and release, no group in XOFF", 1<<3 | 1<<4, []step{
			{op: "hold", want: "xoff:18"}, {op: "release", want: "xon:18"},
		}, 1, 1},
		{"setting the state it has does nothing", 1<<3 | 1<<4, []step{
			{op: "release"}, {op: "hold", want: "xoff:18"}, {op: "hold"}, {op: "release", want: "xon:18"}, {op: "release"},
		}, 1, 1},
		{"a group in XOFF before the hold keeps its own XON", 1<<3 | 1<<4, []step{
			{op: "enq3"}, {op: "enq3"}, {op: "enq3", want: "xoff:8"},
			{op: "hold", want: "xoff:10"}, {op: "release", want: "xon:10"},
			{op: "deq"}, {op: "deq", want: "xon:8"},
		}, 1, 1},
		{"a group crossing and draining during the hold sends nothing", 1<<3 | 1<<4, []step{
			{op: "hold", want: "xoff:18"},
			{op: "enq3"}, {op: "enq3"}, {op: "enq3"}, {op: "deq"}, {op: "deq"},
			{op: "release", want: "xon:18"},
		}, 1, 1},
		{"a group still in XOFF when the hold ends stays paused until it drains", 1<<3 | 1<<4, []step{
			{op: "hold", want: "xoff:18"},
			{op: "enq4"}, {op: "enq4"}, {op: "enq4"},
			{op: "release", want: "xon:8"},
			{op: "deq"}, {op: "deq", want: "xon:10"},
		}, 1, 1},
		{"refreshes cover the held priorities", 1<<3 | 1<<4, []step{
			{op: "hold", want: "xoff:18"}, // at 1000
			{op: "advance", at: 1000 + refresh - 1},
			{op: "advance", at: 1000 + refresh, want: "refresh:18"},
			{op: "release", want: "xon:18"},
			{op: "advance", at: 1000 + 3*refresh},
		}, 1, 1},
		{"each priority refreshes on its own timer", 1<<3 | 1<<4, []step{
			{op: "enq3"}, {op: "enq3"}, {op: "enq3", want: "xoff:8"}, // at 3000
			{op: "hold", want: "xoff:10"}, // at 4000
			{op: "advance", at: 3000 + refresh, want: "refresh:8"},
			{op: "advance", at: 4000 + refresh, want: "refresh:10"},
		}, 1, 0},
		{"one lossless priority", 1 << 3, []step{
			{op: "hold", want: "xoff:8"}, {op: "enq4"}, {op: "enq4"}, {op: "enq4"}, {op: "release", want: "xon:8"},
		}, 1, 1},
		{"no lossless priority: nothing to pause", 0, []step{
			{op: "hold"}, {op: "enq3"}, {op: "release"},
		}, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := staticCfg(3000, 1000)
			cfg.Lossless = tc.lossless
			m := mustNew(t, cfg, nil)
			now, h := int64(0), 0
			var heldNs, holdStart int64
			held := false
			for i, st := range tc.steps {
				if st.op == "advance" {
					now = st.at
				} else {
					now += 1000
				}
				var evs []PFCEvent
				add := func(ev PFCEvent) {
					if ev.Kind != PFCNone {
						evs = append(evs, ev)
					}
				}
				switch st.op {
				case "hold", "release":
					ev, err := m.SetInputHold(1, st.op == "hold", now)
					if err != nil {
						t.Fatal(err)
					}
					add(ev)
					if on := st.op == "hold"; on != held {
						if held {
							heldNs += now - holdStart
						}
						held, holdStart = on, now
					}
					if m.InputHeld(1) != held {
						t.Fatalf("step %d: InputHeld %v, want %v", i, m.InputHeld(1), held)
					}
				case "enq3", "enq4":
					h++
					add(mustEnq(t, m, h, 1000, 1, 0, int(st.op[3]-'0'), now).PFC)
				case "deq":
					d := mustDeq(t, m, 0, now)
					now = d.TxEnd
					add(d.PFC)
				case "advance":
					if at, ok := m.NextTimer(); ok && at < now && st.want == "" {
						t.Fatalf("step %d: a timer due at %d before %d made nothing", i, at, now)
					}
					evs = m.Advance(now, evs)
				default:
					t.Fatalf("bad op %q", st.op)
				}
				var got []string
				for _, ev := range evs {
					got = append(got, fmt.Sprintf("%v:%x", ev.Kind, ev.ClassEnable))
					if ev.Port != 1 {
						t.Errorf("step %d: %+v out of port %d, want 1 (the held ingress)", i, ev, ev.Port)
					}
					for pr := range NumPriorities {
						want := uint16(0)
						if ev.ClassEnable&(1<<pr) != 0 && ev.Kind != PFCXon {
							want = 0xFFFF
						}
						if ev.Quanta[pr] != want {
							t.Errorf("step %d: %+v: quanta[%d] %d, want %d", i, ev, pr, ev.Quanta[pr], want)
						}
					}
				}
				if g := strings.Join(got, " "); g != st.want {
					t.Fatalf("step %d (%s at %d): PFC %q, want %q", i, st.op, now, g, st.want)
				}
			}
			s := m.Snapshot(now)
			ps := s.Ports[1]
			if held {
				heldNs += now - holdStart
			}
			if ps.InputHold != held || ps.InputHoldNs != heldNs || ps.InputHoldXoff != tc.holdXoff || ps.InputHoldXon != tc.holdXon {
				t.Errorf("snapshot: hold %v %d ns, frames %d/%d; want %v %d ns, %d/%d",
					ps.InputHold, ps.InputHoldNs, ps.InputHoldXoff, ps.InputHoldXon, held, heldNs, tc.holdXoff, tc.holdXon)
			}
			var frames uint64
			for pr := range NumPriorities {
				g := ps.Ingress[pr]
				frames += g.PFCTxXoff + g.PFCTxXon + g.PFCTxRefresh
			}
			if tc.lossless != 0 && frames == 0 || ps.PFCTxFrames > frames {
				t.Errorf("port 1 sent %d PFC frames, its groups count %d frame-priorities", ps.PFCTxFrames, frames)
			}
		})
	}
	m := mustNew(t, staticCfg(3000, 1000), nil)
	if _, err := m.SetInputHold(7, true, 0); !errors.Is(err, ErrUnknownPort) {
		t.Errorf("hold of port 7: %v, want ErrUnknownPort", err)
	}
	if m.InputHeld(7) || m.InputHeld(-1) {
		t.Error("InputHeld of a port that does not exist")
	}
}

// TestPortAlpha: a port's own Alpha sets its priority groups' XOFF and XON; the
// other ports keep Config.Alpha (shared pool 100000 B as above, resume offset 3072).
func TestPortAlpha(t *testing.T) {
	c := Config{Ports: ports(3, gbps, 1000), BufferBytes: 130_000, Lossless: 1 << 3, Alpha: 0.5}
	for i := range c.Ports {
		c.Ports[i].HeadroomBytes = 10_000
	}
	c.Ports[1].Alpha = 0.125
	tests := []struct {
		name       string
		in         int
		wantXoffAt int   // frame of 1000 B that sends XOFF
		wantThr    int64 // the port's threshold on an empty buffer
		wantXonAt  int   // dequeue that sends XON
	}{
		// 12000 >= 0.125*88000 = 11000; 11000 < 0.125*89000. XON: held + 3072 <=
		// 0.125*(100000 - held) from held 8000 on (4 dequeues).
		{"port alpha 1/8", 1, 12, 12_500, 4},
		// Config.Alpha 0.5: XOFF at 34, XON after 3 (TestDynamicXonUsesResumeOffset).
		{"config alpha 1/2", 2, 34, 50_000, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := mustNew(t, c, nil)
			if got := m.PortXoffThreshold(tc.in); got != tc.wantThr {
				t.Fatalf("threshold %d, want %d", got, tc.wantThr)
			}
			for i := 1; i <= tc.wantXoffAt; i++ {
				r := mustEnq(t, m, i, 1000, tc.in, 0, 3, 0)
				if (r.PFC.Kind == PFCXoff) != (i == tc.wantXoffAt) {
					t.Fatalf("frame %d: PFC %v, want XOFF exactly at frame %d", i, r.PFC.Kind, tc.wantXoffAt)
				}
			}
			now := int64(0)
			for k := 1; k <= tc.wantXonAt; k++ {
				d := mustDeq(t, m, 0, now)
				now = d.TxEnd
				if (d.PFC.Kind == PFCXon) != (k == tc.wantXonAt) {
					t.Fatalf("dequeue %d: PFC %v, want XON at %d", k, d.PFC.Kind, tc.wantXonAt)
				}
			}
		})
	}
	bad := c
	bad.Ports = append([]PortConfig(nil), c.Ports...)
	bad.Ports[0].Alpha = -1
	if _, err := New[int](bad, nil); err == nil {
		t.Error("a negative port Alpha was accepted")
	}
}

// TestHeadroomCoversWorstCase builds the most a priority group can receive after
// XOFF and checks that the computed headroom holds it: the frame that crosses XOFF
// does not fit under it (so it is held in headroom itself), the PAUSE waits behind a
// max frame that port has just started, and the upstream, back-to-back max frames,
// starts its last one 1 ns before the PAUSE's last bit reaches it. Every frame it
// started before then arrives, and none may be a lossless drop. Where marked, the
// same case overflows a headroom of one frame less (the formula before this test:
// fastcnp-sim's S3 dropped a lossless frame so), so the test fails when the formula
// loses a frame.
func TestHeadroomCoversWorstCase(t *testing.T) {
	const frame = DefaultMaxFrameBytes
	for _, tc := range []struct {
		name         string
		rate, delay  int64
		wireOverhead bool
		// needsAll: one frame less of headroom overflows. At 400G over 1 us the
		// preamble and gap of the ~66 frames on the wire (20 B each, counted by the
		// formula's rate*delay, not held in the buffer) leave room for one more.
		needsAll bool
	}{
		{"100G 1us", 100 * gbps, 1000, true, true},
		{"400G 1us", 400 * gbps, 1000, true, false},
		{"25G 2us", 25 * gbps, 2000, true, true},
		{"100G 1us no preamble", 100 * gbps, 1000, false, true},
		{"1G 1us", gbps, 1000, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Port 0: the data's egress (never dequeued here); port 1: the upstream's link.
			xoff := int64(10*frame + frame/2) // the 11th frame does not fit under XOFF
			cfg := Config{Ports: ports(2, tc.rate, tc.delay), BufferBytes: 1 << 24, Lossless: 1 << 3,
				Threshold: ThresholdStatic, XoffBytes: xoff, WireOverhead: tc.wireOverhead}
			m := mustNew(t, cfg, nil)
			headroom := m.Config().Ports[1].HeadroomBytes
			wireFrame := int64(frame)
			if tc.wireOverhead {
				wireFrame += 20
			}
			ser := func(b int64) int64 { return SerializationNs(int(b), tc.rate) }
			for i := range 10 {
				mustEnq(t, m, i, frame, 1, 0, 3, 0)
			}
			// t0: port 1 starts a max frame towards the upstream, and the crossing frame arrives.
			t0 := int64(1_000_000)
			mustEnq(t, m, 100, frame, 0, 1, 0, t0)
			mustDeq(t, m, 1, t0)
			r := mustEnq(t, m, 10, frame, 1, 0, 3, t0)
			if r.Verdict != AcceptedHeadroom || r.PFC.Kind != PFCXoff {
				t.Fatalf("crossing frame: %v, PFC %v; want it in headroom with an XOFF", r.Verdict, r.PFC.Kind)
			}
			// The upstream started the crossing frame at s0 (its last bit arrived at t0)
			// and obeys the PAUSE at r.PFC.DeliverAt; back to back since s0, aligned so
			// that its last start is 1 ns before the PAUSE arrives.
			s0 := t0 - tc.delay - ser(frame)
			obeys := r.PFC.DeliverAt
			// Start i is i periods (wireFrame at rate, exact) before obeys-1; the
			// earliest may start one period after s0.
			bits := wireFrame * 8 * 1e9
			var starts []int64
			for i := int64(0); (obeys-1-s0)*tc.rate >= (i+1)*bits; i++ {
				starts = append(starts, obeys-1-i*bits/tc.rate)
			}
			held := int64(frame) // the crossing frame
			for k := len(starts) - 1; k >= 0; k-- {
				at := starts[k] + ser(frame) + tc.delay
				res, err := m.Enqueue(11+k, frame, 1, 0, 3, at)
				if err != nil || !res.Verdict.IsAccepted() {
					t.Fatalf("frame started %d ns after the crossing one: %v, %v (headroom %d B, %d B held in it)",
						starts[k]-s0, res.Verdict, err, headroom, held)
				}
				held += frame
			}
			g := m.Snapshot(obeys + tc.delay).Ports[1].Ingress[3]
			if g.HeadroomHighWater != held || held > headroom {
				t.Fatalf("headroom high-water %d B, held %d B, reserved %d B", g.HeadroomHighWater, held, headroom)
			}
			if tc.needsAll && held <= headroom-wireFrame {
				t.Errorf("worst case %d B fits a headroom of one frame less (%d B): the case is not the worst", held, headroom-wireFrame)
			}
			t.Logf("worst case %d B (%d frames after the crossing one) in a headroom of %d B", held, len(starts), headroom)
		})
	}
}
