package tm

import (
	"errors"
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
		mustEnq(t, m, i, 1000, 1, 0, 3, 0)
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

func TestReceivePFCRefreshAndResume(t *testing.T) {
	h := &recHooks{}
	m := mustNew(t, Config{Ports: ports(2, gbps, 0), BufferBytes: 1 << 20, Lossless: 1 << 3}, h)
	q := [8]uint16{3: 100}
	mustEnq(t, m, 1, 64, 1, 0, 3, 0)
	_ = m.ReceivePFC(0, 1<<3, q, 0)     // until 51200
	_ = m.ReceivePFC(0, 1<<3, q, 40000) // refresh: until 91200
	if p, _ := m.EgressPaused(0, 3, 91199); !p {
		t.Fatal("refresh did not extend the pause")
	}
	if at, _, _ := m.NextDeparture(0, 60000); at != 91200 {
		t.Fatalf("NextDeparture %d, want 91200", at)
	}
	_ = m.ReceivePFC(0, 1<<3, [8]uint16{}, 70000) // XON
	if len(h.pauses) != 2 {
		t.Fatalf("XON not reported to the hook at once: %+v", h.pauses)
	}
	d := mustDeq(t, m, 0, 70000)
	if d.Priority != 3 {
		t.Fatalf("prio %d", d.Priority)
	}
	e := m.Snapshot(80000).Ports[0].Egress[3]
	if e.PausedNs != 70000 || e.PFCRxXoff != 2 || e.PFCRxXon != 1 {
		t.Fatalf("counters %+v", e)
	}
	want := []pauseEv{{0, 3, true, 0}, {0, 3, false, 70000}}
	if len(h.pauses) != 2 || h.pauses[0] != want[0] || h.pauses[1] != want[1] {
		t.Fatalf("hooks %+v, want %+v (refresh not reported)", h.pauses, want)
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
