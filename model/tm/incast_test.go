package tm

import (
	"container/heap"
	"fmt"
	"testing"
)

// A small discrete-event simulation of an N-to-1 incast: N hosts, each a one-port TM
// (it obeys received PFC), send backlogged priority-3 traffic through one switch TM to
// one receiver. Virtual time only; links are full duplex with propagation delay.

const (
	evTx       = iota // try to transmit on (node, port)
	evSwitchRx        // a frame arrives at the switch on port
	evHostPFC         // a PFC frame arrives at host node
	evTimer           // switch timers (XOFF refresh)
)

type simEvent struct {
	at     int64
	seq    uint64
	kind   int
	node   int // -1 = switch, else host index
	port   int
	length int
	pfc    PFCEvent
}

type evHeap []simEvent

func (h evHeap) Len() int { return len(h) }
func (h evHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h evHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *evHeap) Push(x any)   { *h = append(*h, x.(simEvent)) }
func (h *evHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

type incastCfg struct {
	senders  int
	rate     int64
	delay    int64
	frame    int
	buffer   int64
	lossless bool  // PFC on priority 3 at the switch
	xoff     int64 // static XOFF bytes; 0 = dynamic threshold
	duration int64
}

type incastResult struct {
	sw          *TM[int]
	delivered   int64 // bytes at the receiver (last bit arrived by the end)
	hostSent    int64 // frames the hosts put on the wire
	switchRx    int64 // frames that reached the switch
	pfcFrames   int64 // PFC frames the switch sent
	llDropErrs  int64 // ErrLosslessDrop seen
	otherErrors []error
	events      int64
}

type incastSim struct {
	cfg      incastCfg
	sw       *TM[int]
	hosts    []*TM[int]
	q        evHeap
	seq      uint64
	armedSw  []int64 // pending evTx time per switch port, -1 none
	armedH   []int64
	armedTmr int64
	res      incastResult
}

func newIncast(cfg incastCfg) (*incastSim, error) {
	n := cfg.senders
	swCfg := Config{Ports: ports(n+1, cfg.rate, cfg.delay), BufferBytes: cfg.buffer}
	if cfg.lossless {
		swCfg.Lossless = 1 << 3
	}
	if cfg.xoff > 0 {
		swCfg.Threshold, swCfg.XoffBytes = ThresholdStatic, cfg.xoff
	}
	sw, err := New[int](swCfg, nil)
	if err != nil {
		return nil, fmt.Errorf("switch: %w", err)
	}
	s := &incastSim{cfg: cfg, sw: sw, armedSw: make([]int64, n+1), armedH: make([]int64, n), armedTmr: -1}
	for i := range s.armedSw {
		s.armedSw[i] = -1
	}
	for i := range n {
		// host: port 0 = uplink, port 1 = the application; lossy locally, honours PFC
		h, err := New[int](Config{Ports: ports(2, cfg.rate, cfg.delay), BufferBytes: 1 << 20}, nil)
		if err != nil {
			return nil, fmt.Errorf("host %d: %w", i, err)
		}
		s.hosts = append(s.hosts, h)
		s.armedH[i] = -1
		for range 2 {
			if _, err := h.Enqueue(i, cfg.frame, 1, 0, 3, 0); err != nil {
				return nil, fmt.Errorf("host %d source: %w", i, err)
			}
		}
		s.kick(i, 0, 0)
	}
	s.res.sw = sw
	return s, nil
}

func (s *incastSim) push(e simEvent) {
	s.seq++
	e.seq = s.seq
	heap.Push(&s.q, e)
}

func (s *incastSim) tmOf(node int) *TM[int] {
	if node < 0 {
		return s.sw
	}
	return s.hosts[node]
}

func (s *incastSim) armed(node, port int) *int64 {
	if node < 0 {
		return &s.armedSw[port]
	}
	return &s.armedH[node]
}

// kick schedules a transmit attempt at the port's next departure if none is pending
// earlier.
func (s *incastSim) kick(node, port int, now int64) {
	at, ok, err := s.tmOf(node).NextDeparture(port, now)
	if err != nil {
		s.res.otherErrors = append(s.res.otherErrors, err)
		return
	}
	if a := s.armed(node, port); ok && (*a < 0 || at < *a) {
		*a = at
		s.push(simEvent{at: at, kind: evTx, node: node, port: port})
	}
}

func (s *incastSim) armTimer() {
	if at, ok := s.sw.NextTimer(); ok && (s.armedTmr < 0 || at < s.armedTmr) {
		s.armedTmr = at
		s.push(simEvent{at: at, kind: evTimer})
	}
}

func (s *incastSim) sendPFC(ev PFCEvent) {
	if ev.Kind == PFCNone {
		return
	}
	s.res.pfcFrames++
	if ev.Port < s.cfg.senders {
		s.push(simEvent{at: ev.DeliverAt, kind: evHostPFC, node: ev.Port, pfc: ev})
	}
}

func (s *incastSim) run() incastResult {
	recv := s.cfg.senders
	var buf []PFCEvent
	for s.q.Len() > 0 {
		e := heap.Pop(&s.q).(simEvent)
		if e.at > s.cfg.duration {
			break
		}
		s.res.events++
		if s.res.events > 50_000_000 { // a TM bug that never advances time must fail, not hang
			s.res.otherErrors = append(s.res.otherErrors, fmt.Errorf("simulation stuck at %d ns", e.at))
			break
		}
		now := e.at
		switch e.kind {
		case evTx:
			a := s.armed(e.node, e.port)
			if *a != e.at {
				continue // superseded by an earlier attempt
			}
			*a = -1
			tm := s.tmOf(e.node)
			d, ok, err := tm.Dequeue(e.port, now)
			if err != nil {
				s.res.otherErrors = append(s.res.otherErrors, err)
				continue
			}
			if ok {
				if e.node < 0 {
					s.sendPFC(d.PFC)
					if d.DeliverAt <= s.cfg.duration {
						s.res.delivered += int64(d.Len)
					}
					s.armTimer()
				} else {
					s.res.hostSent++
					s.push(simEvent{at: d.DeliverAt, kind: evSwitchRx, port: e.node, length: d.Len})
					// backlogged source: refill
					if _, err := tm.Enqueue(e.node, s.cfg.frame, 1, 0, 3, now); err != nil {
						s.res.otherErrors = append(s.res.otherErrors, err)
					}
				}
			}
			s.kick(e.node, e.port, now)
		case evSwitchRx:
			s.res.switchRx++
			r, err := s.sw.Enqueue(e.port, e.length, e.port, recv, 3, now)
			if err != nil {
				if r.Verdict == DroppedLossless {
					s.res.llDropErrs++
				} else {
					s.res.otherErrors = append(s.res.otherErrors, err)
				}
			}
			s.sendPFC(r.PFC)
			s.kick(-1, recv, now)
			s.armTimer()
		case evHostPFC:
			if err := s.hosts[e.node].ReceivePFC(0, e.pfc.ClassEnable, e.pfc.Quanta, now); err != nil {
				s.res.otherErrors = append(s.res.otherErrors, err)
			}
			s.kick(e.node, 0, now)
		case evTimer:
			if s.armedTmr != e.at {
				continue
			}
			s.armedTmr = -1
			buf = s.sw.Advance(now, buf[:0])
			for _, ev := range buf {
				s.sendPFC(ev)
			}
			s.armTimer()
		}
	}
	return s.res
}

func runIncast(t testing.TB, cfg incastCfg) incastResult {
	t.Helper()
	s, err := newIncast(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res := s.run()
	if len(res.otherErrors) > 0 {
		t.Fatalf("%d errors, first: %v", len(res.otherErrors), res.otherErrors[0])
	}
	return res
}

func TestIncast20to1(t *testing.T) {
	base := incastCfg{
		senders: 20, rate: gbps, delay: 2000, frame: 1500,
		buffer: 300_000, duration: 20_000_000, // 20 ms of virtual time
	}
	pfcOn := []struct {
		name string
		mod  func(*incastCfg)
	}{
		{"1G dynamic", func(*incastCfg) {}},
		{"1G static 10KB", func(c *incastCfg) { c.xoff = 10_000 }},
		// HPCC's set-up: 32 MB at 100G, 1-us links; 2 ms of virtual time.
		{"100G dynamic 32MB", func(c *incastCfg) {
			c.rate, c.delay, c.buffer, c.duration, c.frame = 100*gbps, 1000, 32<<20, 2_000_000, 1000
		}},
	}
	for _, tc := range pfcOn {
		t.Run("PFC on: lossless, "+tc.name, func(t *testing.T) {
			c := base
			c.lossless = true
			tc.mod(&c)
			incastLossless(t, c)
		})
	}
	t.Run("PFC off: lossy drops", func(t *testing.T) {
		c := base
		r := runIncast(t, c)
		s := r.sw.Snapshot(c.duration)
		dropped := s.Ports[c.senders].Egress[3].DroppedPkts
		if dropped == 0 || r.pfcFrames != 0 || s.LosslessDropPkts != 0 {
			t.Fatalf("without PFC: dropped %d, PFC frames %d, lossless drops %d", dropped, r.pfcFrames, s.LosslessDropPkts)
		}
		if uint64(r.switchRx) != s.TotalEnqueuedPkts+s.TotalDroppedPkts {
			t.Fatalf("received %d != enqueued %d + dropped %d", r.switchRx, s.TotalEnqueuedPkts, s.TotalDroppedPkts)
		}
		if s.Buffer.HighWater > c.buffer {
			t.Fatalf("high-water %d above buffer %d", s.Buffer.HighWater, c.buffer)
		}
		t.Logf("no PFC: %d of %d frames dropped", dropped, r.switchRx)
	})
	t.Run("PFC on, undersized headroom: lossless drops surface", func(t *testing.T) {
		// 20 us of propagation with the headroom sized for 2 us: the round trip outruns it.
		c := base
		c.lossless = true
		c.delay = 20_000
		s, err := newIncast(c)
		if err != nil {
			t.Fatal(err)
		}
		// rebuild the switch with headroom for a 2-us link
		swCfg := s.sw.Config()
		for i := range swCfg.Ports {
			swCfg.Ports[i].HeadroomBytes = HeadroomRoundTripBytes(c.rate, 2000, DefaultMaxFrameBytes, 0)
		}
		if s.sw, err = New[int](swCfg, nil); err != nil {
			t.Fatal(err)
		}
		s.res.sw = s.sw
		r := s.run()
		if r.llDropErrs == 0 || r.sw.LosslessDrops() != uint64(r.llDropErrs) {
			t.Fatalf("undersized headroom: %d ErrLosslessDrop, counter %d; want > 0 and equal", r.llDropErrs, r.sw.LosslessDrops())
		}
	})
}

// incastLossless runs an N-to-1 incast with PFC on and checks the lossless guarantees.
func incastLossless(t *testing.T, c incastCfg) {
	t.Helper()
	r := runIncast(t, c)
	s := r.sw.Snapshot(c.duration)
	if r.llDropErrs != 0 || s.LosslessDropPkts != 0 || s.TotalDroppedPkts != 0 {
		t.Fatalf("drops with PFC: lossless errs %d, counter %d, total %d", r.llDropErrs, s.LosslessDropPkts, s.TotalDroppedPkts)
	}
	var xoff, xon uint64
	for _, p := range s.Ports {
		xoff += p.Ingress[3].PFCTxXoff + p.Ingress[3].PFCTxRefresh
		xon += p.Ingress[3].PFCTxXon
	}
	if xoff == 0 || xon == 0 || r.pfcFrames != int64(xoff+xon) {
		t.Fatalf("PFC frames: xoff %d xon %d, sim saw %d", xoff, xon, r.pfcFrames)
	}
	if s.Buffer.HighWater >= c.buffer || s.Buffer.HighWater <= 0 {
		t.Fatalf("buffer high-water %d, want in (0, %d)", s.Buffer.HighWater, c.buffer)
	}
	// Each PG is bounded by its XOFF (static, or dynamic <= alpha*shared) plus its headroom.
	thr := int64(float64(s.Buffer.SharedBytes) * DefaultAlpha)
	if c.xoff > 0 {
		thr = c.xoff
	}
	perPG := thr + r.sw.Config().Ports[0].HeadroomBytes
	for i, p := range s.Ports[:c.senders] {
		if p.Ingress[3].HighWater > perPG {
			t.Fatalf("port %d PG high-water %d > XOFF+headroom bound %d", i, p.Ingress[3].HighWater, perPG)
		}
	}
	// Every frame that reached the switch is queued, delivered or on the last wire.
	if uint64(r.switchRx) != s.TotalEnqueuedPkts {
		t.Fatalf("switch received %d frames, enqueued %d", r.switchRx, s.TotalEnqueuedPkts)
	}
	// The bottleneck stays busy: the receiver gets the line rate (minus the first
	// frame's latency, PFC frames share no wire with the data direction here).
	want := c.rate / 8 * c.duration / 1e9
	if r.delivered < want*99/100 || r.delivered > want {
		t.Fatalf("delivered %d B, want ~%d (line rate)", r.delivered, want)
	}
	var pgHdrm int64
	for _, p := range s.Ports {
		pgHdrm = max(pgHdrm, p.Ingress[3].HeadroomHighWater)
	}
	t.Logf("PFC: xoff+refresh %d, xon %d, high-water %d/%d B, headroom HW %d B (max per PG %d of %d), delivered %d B",
		xoff, xon, s.Buffer.HighWater, c.buffer, s.Buffer.HeadroomHighWater, pgHdrm, r.sw.Config().Ports[0].HeadroomBytes, r.delivered)
}
