package cc

import (
	"fmt"
	"time"
)

// HPCC is the HPCC sender (spec 03; Li et al., SIGCOMM 2019, and the HPCC
// ns-3 simulator's rdma-hw.cc) for one flow: window based, driven by the
// in-band telemetry records of ACKs (Ack.Hops, one INTHop per switch hop).
// Build it with NewHPCC or through New ("hpcc").
//
// Per hop i, from the record r of this ACK and the record r' kept from the
// previous one (tau = r.TS - r'.TS > 0, B = r.LinkRate, T = Config.BaseRTT):
//
//	txRate = (r.TxBytes - r'.TxBytes mod 2^64) * 8 / tau
//	u_i    = min(r.QLen, r'.QLen)*8/(B*T) + txRate/B
//
// Single rate (MultiRate off): U = max_i u_i, dt = min(tau of that hop, T);
// u = (u*(T-dt) + U*dt)/T (u starts at 1); c = u/eta;
//
//	c >= 1 or stage >= maxStage:  W = W_c/c + W_AI, stage' = 0
//	otherwise:                    W = W_c + W_AI,   stage' = stage+1
//
// with W_AI = AI*T/8, W clamped to [max(MTU, minRate*T/8), Winit]. W_c and
// stage take W and stage' once per round trip: at the first ACK that
// acknowledges bytes sent after the previous such update (the simulator's
// lastUpdateSeq). With FastReact, the ACKs in between set W from the same
// W_c without changing W_c or stage; without it they are ignored. The first
// ACK only records the hops. MultiRate does the same per hop (u_i, W_c,i,
// stage_i) and takes W = min over hops. Window() is W (floor), Rate() is
// W*8/T (at most the line rate). HPCC has no timer and ignores CNPs.
type HPCC struct {
	p     HPCCParams
	line  float64
	t     float64 // T (base RTT), ns
	qK    float64 // 8e9/T: q*qK is q*8/T in bits/s
	rateK float64 // 8/T in seconds: Rate = W*rateK
	wai   float64 // W_AI, bytes
	wmin  float64 // max(MTU, minRate*T/8)
	wmax  float64 // Winit

	now     time.Duration
	w       float64 // current window W, bytes
	wc      float64 // reference window W_c
	u       float64 // utilisation estimate (single rate)
	stage   int64   // increase stage (single rate)
	hops    [HPCCMaxHops]hpccHop
	started bool // the first ACK recorded the hops

	sent, acked int64 // bytes put on the wire / newly acknowledged
	lastUpdate  int64 // sent at the last reference update

	stats HPCCStats
}

// hpccHop is the per-hop state: the last INT record and, with MultiRate,
// the hop's own control state.
type hpccHop struct {
	rec   INTHop
	valid bool    // rec holds a record of this hop position
	u     float64 // MultiRate: the hop's utilisation estimate
	wc    float64 // MultiRate: the hop's reference window
	stage int64   // MultiRate: the hop's increase stage
}

// HPCCStats counts what HPCC did, for telemetry and tests.
type HPCCStats struct {
	Updates        int64 // once-per-RTT reference updates that used INT
	FastReacts     int64 // per-ACK window updates that used INT
	Multiplicative int64 // hop or flow computations W = W_c/c + W_AI
	Additive       int64 // hop or flow computations W = W_c + W_AI
	HopsSkipped    int64 // hop records not usable (no earlier record, tau <= 0, sampled out)
}

// HPCCState is a snapshot of the HPCC state (single-rate estimate; the
// per-hop state of MultiRate is in HopState).
type HPCCState struct {
	W     float64 // current window, bytes
	Wc    float64 // reference window W_c, bytes
	U     float64 // utilisation estimate
	Stage int64   // increase stage
	Stats HPCCStats
}

// HPCCHopState is the MultiRate state of one hop position.
type HPCCHopState struct {
	U     float64 // the hop's utilisation estimate
	Wc    float64 // the hop's reference window, bytes
	Stage int64   // the hop's increase stage
}

// NewHPCC returns an HPCC sender ("hpcc") configured by cfg.LineRate,
// cfg.StartRate, cfg.MTU, cfg.BaseRTT (T), cfg.InitWindow (the largest
// window, default the BDP) and cfg.HPCC.
func NewHPCC(cfg Config) (*HPCC, error) {
	r, err := cfg.resolveHPCC()
	if err != nil {
		return nil, wrapf(err, "hpcc")
	}
	p := cfg.HPCC
	secs := r.BaseRTT.Seconds()
	h := &HPCC{
		p: p, line: cfg.LineRate, t: float64(r.BaseRTT), qK: 8e9 / float64(r.BaseRTT), rateK: 8 / secs,
		wai:  p.AI / 8 * secs,
		wmin: max(float64(r.MTU), p.MinRate/8*secs),
		wmax: float64(r.winit),
		u:    1,
	}
	h.w = h.clamp(h.wmax * r.StartRate / cfg.LineRate)
	h.wc = h.w
	for i := range h.hops {
		h.hops[i].u, h.hops[i].wc = 1, h.w
	}
	return h, nil
}

// Name implements Algorithm.
func (h *HPCC) Name() string { return "hpcc" }

// Rate implements Algorithm: W*8/T, at most the line rate.
func (h *HPCC) Rate() float64 { return min(h.w*h.rateK, h.line) }

// Window implements Algorithm: W in bytes (floor), at least one MTU.
func (h *HPCC) Window() int64 { return int64(h.w) }

// NextTimer implements Algorithm: HPCC needs no timer (NoTimer).
func (h *HPCC) NextTimer() time.Duration { return NoTimer }

// Params returns the HPCC parameters in use.
func (h *HPCC) Params() HPCCParams { return h.p }

// State returns a snapshot of the HPCC state.
func (h *HPCC) State() HPCCState {
	return HPCCState{W: h.w, Wc: h.wc, U: h.u, Stage: h.stage, Stats: h.stats}
}

// HopState returns the MultiRate state of hop position i (0-based), or the
// zero value for i outside [0, HPCCMaxHops).
func (h *HPCC) HopState(i int) HPCCHopState {
	if i < 0 || i >= HPCCMaxHops {
		return HPCCHopState{}
	}
	s := &h.hops[i]
	return HPCCHopState{U: s.u, Wc: s.wc, Stage: s.stage}
}

// OnSend implements Algorithm: counts the bytes sent (the round trips).
func (h *HPCC) OnSend(ev Send) error {
	if err := validateSend(ev); err != nil {
		return wrapf(err, "hpcc")
	}
	if err := checkTime("send", ev.Now, h.now); err != nil {
		return wrapf(err, "hpcc")
	}
	h.now = ev.Now
	h.sent += ev.Bytes
	return nil
}

// OnAck implements Algorithm: the window update from the ACK's INT records
// (see the type's comment).
func (h *HPCC) OnAck(ev Ack) error {
	if err := validateAck(ev); err != nil {
		return wrapf(err, "hpcc")
	}
	if len(ev.Hops) > HPCCMaxHops {
		return fmt.Errorf("hpcc: ack: %d INT hops, at most %d are kept: %w", len(ev.Hops), HPCCMaxHops, ErrBadEvent)
	}
	if err := checkTime("ack", ev.Now, h.now); err != nil {
		return wrapf(err, "hpcc")
	}
	h.now = ev.Now
	h.acked += ev.Bytes
	switch {
	case !h.started:
		// Rule "first ACK": record the hops, no update.
		for i := range ev.Hops {
			h.hops[i].rec, h.hops[i].valid = ev.Hops[i], true
		}
		h.started = true
		h.lastUpdate = h.sent
	case h.acked > h.lastUpdate:
		// Rule "reference update", once per round trip.
		h.update(ev.Hops, false)
		h.lastUpdate = max(h.lastUpdate, h.sent)
	case h.p.FastReact:
		// Rule "fast react".
		h.update(ev.Hops, true)
	}
	return nil
}

// update measures the hops of one ACK and sets the window; a reference
// update (fast = false) also commits W_c and the stage.
func (h *HPCC) update(hops []INTHop, fast bool) {
	var (
		bigU    float64
		dt      float64 // ns
		updated uint32  // bit i: hop i measured
	)
	for i := range hops {
		r := &hops[i]
		s := &h.hops[i]
		if h.p.SampleFeedback && fast && r.QLen == 0 {
			h.stats.HopsSkipped++
			continue // neither used nor recorded, as in the simulator
		}
		tau := r.TS - s.rec.TS
		if !s.valid || tau <= 0 {
			// No earlier record of this hop (new hop position), or a
			// timestamp that does not move forward: start over from r.
			s.rec, s.valid = *r, true
			h.stats.HopsSkipped++
			continue
		}
		ftau := float64(tau)
		tx := float64(r.TxBytes-s.rec.TxBytes) * 8e9 / ftau // bits/s; the counter wraps
		q := float64(min(r.QLen, s.rec.QLen))
		// u = q*8/(B*T) + txRate/B, with q*8/T in bits/s.
		u := (q*h.qK + tx) / r.LinkRate
		updated |= 1 << i
		if h.p.MultiRate {
			d := min(ftau, h.t)
			s.u = (s.u*(h.t-d) + u*d) / h.t
		} else if u > bigU {
			bigU, dt = u, ftau
		}
		s.rec = *r
	}
	// Positions past this path's length hold no record of it. (An ACK
	// without INT, e.g. one made from a NAK, says nothing about the path.)
	if len(hops) > 0 {
		for i := len(hops); i < HPCCMaxHops; i++ {
			h.hops[i].valid = false
		}
	}
	if updated == 0 {
		return
	}
	if fast {
		h.stats.FastReacts++
	} else {
		h.stats.Updates++
	}
	if !h.p.MultiRate {
		dt = min(dt, h.t)
		h.u = (h.u*(h.t-dt) + bigU*dt) / h.t
		w, stage := h.compute(h.wc, h.u, h.stage)
		h.w = w
		if !fast {
			h.wc, h.stage = w, stage
		}
		return
	}
	w := h.wmax
	for i := range hops {
		s := &h.hops[i]
		if updated&(1<<i) == 0 {
			w = min(w, s.wc)
			continue
		}
		wi, stage := h.compute(s.wc, s.u, s.stage)
		w = min(w, wi)
		if !fast {
			s.wc, s.stage = wi, stage
		}
	}
	h.w = w
}

// compute is the window rule of HPCC's ComputeWind for reference window wc,
// utilisation u and stage; it returns the new window and stage.
func (h *HPCC) compute(wc, u float64, stage int64) (float64, int64) {
	c := u / h.p.Eta
	if c >= 1 || stage >= int64(h.p.MaxStage) {
		h.stats.Multiplicative++
		// c = 0 (an idle path) gives +Inf, clamped to Winit.
		return h.clamp(wc/c + h.wai), 0
	}
	h.stats.Additive++
	return h.clamp(wc + h.wai), stage + 1
}

// clamp keeps a window within [max(MTU, minRate*T/8), Winit].
func (h *HPCC) clamp(w float64) float64 {
	return min(max(w, h.wmin), h.wmax)
}

// OnCNP implements Algorithm: HPCC does not use CNPs; the event only
// advances time.
func (h *HPCC) OnCNP(ev CNP) error {
	if err := validateCNP(ev); err != nil {
		return wrapf(err, "hpcc")
	}
	if err := checkTime("cnp", ev.Now, h.now); err != nil {
		return wrapf(err, "hpcc")
	}
	h.now = ev.Now
	return nil
}

// OnTimer implements Algorithm: HPCC has no timer; the call only advances
// time.
func (h *HPCC) OnTimer(now time.Duration) error {
	if err := checkTime("timer", now, h.now); err != nil {
		return wrapf(err, "hpcc")
	}
	h.now = now
	return nil
}
