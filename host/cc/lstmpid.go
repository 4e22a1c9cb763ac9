package cc

import (
	"fmt"
	"math"
	"time"

	"github.com/fastcnp/fastcnp/host/cc/lstm"
)

// Units of the PID's online gain update (seed 002 formulas 21-26): the
// thesis computes dJ/dw with RTTs in microseconds and rates in Gb/s, and
// clips the gradient to [-0.1, 0.1] in those units.
const (
	pidRTTUnit  = float64(time.Microsecond) // ns per unit
	pidRateUnit = 1e9                       // bits/s per unit
)

// LSTMPID is seed 002's congestion control (spec 03 "LSTM + PID") for one
// flow: rate based, one RTT sample per completion, an LSTM that predicts the
// next RTT and a PID that sets the rate from the prediction. Build it with
// NewLSTMPID or through New: "lstm-pid", "lstm-pid-rttch" (+ the target
// adjustment of step 5), "lstm-pid-rttch-win" (+ a window of one BDP, step
// 6), or "pid" (the PID on the measured RTT, no predictor: the thesis's
// untrained controller that made its training traces and its 4.2.3 run).
//
// Per sample R_t (ns), in this order:
//
//	gain update (Learner set, after the first decision):
//	    w_j -= mu*clip((R_t - target)/us * beta * rate_prev/Gbps * out_j, +-clip)
//	    mu = lr/sqrt(n+1), n = the learner's updates so far; out_j and
//	    rate_prev are those of the previous decision
//	RTTch: 6 samples in a row on one side of the target move the target to
//	    target + mean(R_i - target) over all samples of the flow
//	S_t = s*R_t + (1-s)*S_{t-1} (S_0 = R_0); K_t = (R_t - S_t)/S_t
//	RTTpred = (1 + LSTM(K_{t-2}, K_{t-1}, K_t))*S_t   ("pid": RTTpred = R_t)
//	e = (RTTpred - target)/target; I = mean of e (all samples, or the last
//	    IntegralSamples); D = e - e_prev (0 at the first sample)
//	d = clamp(Kp*e + Ki*I + Kd*D, DMin, DMax); rate = clamp(rate*(1+d), minRate, line)
//
// Sampling rule (seed 002 3.2): only the first packet sent after the
// previous sample completed is timed; it completes at the first ACK with an
// RTT sample whose newest acknowledged packet left at or after it (Ack.RTT
// is now minus the send time of the newest packet the ACK acknowledges, as
// the host agent gives it), and R is that ACK's RTT sample. With an ACK per
// packet (the thesis's simulator) that is the timed packet's own RTT, T3 -
// T0 of seed 002's formula 1; with coalesced ACKs it is the RTT of the
// packet that asked for the ACK (T3 - T0 of the timed packet would add the
// receiver's wait for the rest of the ACK group, which formula 1 subtracts
// as T2 - T1). LSTMPID has no timer and ignores CNPs; Window() is NoWindowCap, or
// Winit (one BDP by default) for "-win".
type LSTMPID struct {
	name    string
	p       LSTMPIDParams
	gains   [3]float64 // fixed gains (no Learner)
	model   *lstm.Model
	predict bool
	rttch   bool
	line    float64
	win     int64

	now    time.Duration
	rate   float64
	target float64 // ns

	timing bool          // a sampled packet is in flight
	t0     time.Duration // its send time

	sm     lstm.Smoother
	eRing  []float64 // the last IntegralSamples errors (sliding mean)
	eSum   float64
	eN     int64
	eIdx   int
	ePrev  float64
	rttSum float64 // RTTch: sum of every sample, ns
	side   int8    // RTTch: side of the current run (+1 above, -1 not above)
	run    int64   // RTTch: samples in the current run

	prevOuts   [3]float64 // e, I, D of the last decision
	prevRate   float64    // the rate that decision multiplied
	prevTarget float64
	decided    bool

	last  LSTMPIDState
	stats LSTMPIDStats
}

// LSTMPIDStats counts what LSTMPID did.
type LSTMPIDStats struct {
	Samples     int64 // completions timed (one PID decision each)
	Predictions int64 // LSTM predictions
	ClampedLow  int64 // decisions with d clamped at DMin
	ClampedHigh int64 // decisions with d clamped at DMax
	TargetMoves int64 // RTTch target adjustments
	GainUpdates int64 // online gain updates this flow made
}

// LSTMPIDState is a snapshot of the last decision.
type LSTMPIDState struct {
	Rate    float64       // bits/s
	Target  time.Duration // RTTtarget now (RTTch moves it)
	RTT     time.Duration // R_t, the last sample
	S       float64       // S_t, ns
	K       float64       // K_t
	Out     float64       // LSTM output (0 for "pid")
	Pred    float64       // RTTpred, ns
	E, I, D float64       // PID inputs
	Dout    float64       // d after the clamp
	Gains   [3]float64    // Kp, Ki, Kd used
	Run     int64         // RTTch: samples in a row on one side
	Stats   LSTMPIDStats
}

// NewLSTMPID returns the LSTM+PID variant called name ("pid", "lstm-pid",
// "lstm-pid-rttch", "lstm-pid-rttch-win") configured by cfg.LineRate,
// cfg.StartRate (the first rate; the thesis starts at 10 Gb/s),
// cfg.BaseRTT and cfg.InitWindow (the "-win" window, default the BDP) and
// cfg.LSTMPID.
func NewLSTMPID(name string, cfg Config) (*LSTMPID, error) {
	a := &LSTMPID{name: name, win: NoWindowCap}
	switch name {
	case "pid":
	case "lstm-pid":
		a.predict = true
	case "lstm-pid-rttch":
		a.predict, a.rttch = true, true
	case "lstm-pid-rttch-win":
		a.predict, a.rttch = true, true
	default:
		return nil, fmt.Errorf("LSTM+PID variant %q: %w", name, ErrUnknownAlgorithm)
	}
	r, err := cfg.resolveLSTMPID()
	if err != nil {
		return nil, wrapf(err, "%s", name)
	}
	p := cfg.LSTMPID
	if name == "lstm-pid-rttch-win" {
		a.win = r.winit
	}
	a.p, a.line, a.rate = p, cfg.LineRate, r.StartRate
	a.gains = [3]float64{p.Kp, p.Ki, p.Kd}
	a.target = float64(p.Target)
	a.model = p.Model
	s := p.Smoothing
	if a.predict && a.model == nil {
		m, f, err := DefaultLSTMModel()
		if err != nil {
			return nil, wrapf(err, "%s", name)
		}
		a.model = m
		if s == 0 {
			s = f.Smoothing
		}
	}
	if s == 0 {
		s = lstm.DefaultSmoothing
	}
	if a.sm, err = lstm.NewSmoother(s); err != nil {
		return nil, fmt.Errorf("%s: %v: %w", name, err, ErrBadParams)
	}
	if p.IntegralSamples > 0 {
		a.eRing = make([]float64, p.IntegralSamples)
	}
	a.last.Rate, a.last.Target, a.last.Gains = a.rate, p.Target, a.gains
	return a, nil
}

// Name implements Algorithm.
func (a *LSTMPID) Name() string { return a.name }

// Rate implements Algorithm.
func (a *LSTMPID) Rate() float64 { return a.rate }

// Window implements Algorithm: NoWindowCap, or one BDP for "-win".
func (a *LSTMPID) Window() int64 { return a.win }

// NextTimer implements Algorithm: no timer.
func (a *LSTMPID) NextTimer() time.Duration { return NoTimer }

// Params returns the parameters in use.
func (a *LSTMPID) Params() LSTMPIDParams { return a.p }

// State returns a snapshot of the last decision.
func (a *LSTMPID) State() LSTMPIDState {
	s := a.last
	s.Rate, s.Target, s.Run, s.Stats = a.rate, time.Duration(math.Round(a.target)), a.run, a.stats
	return s
}

// OnSend implements Algorithm: the first packet after a completion is timed.
func (a *LSTMPID) OnSend(ev Send) error {
	if err := validateSend(ev); err != nil {
		return wrapf(err, "%s", a.name)
	}
	if err := checkTime("send", ev.Now, a.now); err != nil {
		return wrapf(err, "%s", a.name)
	}
	a.now = ev.Now
	if !a.timing {
		a.timing, a.t0 = true, ev.Now
	}
	return nil
}

// OnAck implements Algorithm: the ACK that completes the timed packet gives
// the sample and one decision.
func (a *LSTMPID) OnAck(ev Ack) error {
	if err := validateAck(ev); err != nil {
		return wrapf(err, "%s", a.name)
	}
	if err := checkTime("ack", ev.Now, a.now); err != nil {
		return wrapf(err, "%s", a.name)
	}
	a.now = ev.Now
	if !a.timing || ev.RTT == 0 || ev.Now-ev.RTT < a.t0 {
		return nil
	}
	a.timing = false
	a.sample(float64(ev.RTT))
	return nil
}

// sample runs one decision on the sample r (ns, > 0); see the type's comment.
func (a *LSTMPID) sample(r float64) {
	a.stats.Samples++
	gains := &a.gains
	if l := a.p.Learner; l != nil {
		if a.decided {
			l.update(r-a.prevTarget, a.prevRate, &a.prevOuts)
			a.stats.GainUpdates++
		}
		gains = &l.K
	}
	if a.rttch {
		a.rttSum += r
		side := int8(-1)
		if r > a.target {
			side = 1
		}
		if side == a.side {
			a.run++
		} else {
			a.side, a.run = side, 1
		}
		if a.run >= int64(a.p.RTTchRun) {
			// target + mean(R_i - target) = mean(R_i), over all samples.
			a.target += a.rttSum/float64(a.stats.Samples) - a.target
			a.run = 0
			a.stats.TargetMoves++
		}
	}
	st, kt := a.sm.Add(r)
	pred, out := r, 0.0
	if a.predict {
		out = a.model.Predict(a.sm.Input())
		pred = (1 + out) * st
		a.stats.Predictions++
	}
	e := (pred - a.target) / a.target
	var i float64
	if a.eRing == nil {
		a.eSum += e
		a.eN++
		i = a.eSum / float64(a.eN)
	} else {
		a.eSum += e - a.eRing[a.eIdx]
		a.eRing[a.eIdx] = e
		a.eIdx = (a.eIdx + 1) % len(a.eRing)
		a.eN = min(a.eN+1, int64(len(a.eRing)))
		i = a.eSum / float64(a.eN)
	}
	var d float64
	if a.decided {
		d = e - a.ePrev
	}
	a.ePrev = e
	dout := gains[0]*e + gains[1]*i + gains[2]*d
	switch {
	case dout < a.p.DMin:
		dout = a.p.DMin
		a.stats.ClampedLow++
	case dout > a.p.DMax:
		dout = a.p.DMax
		a.stats.ClampedHigh++
	}
	a.prevOuts, a.prevRate, a.prevTarget, a.decided = [3]float64{e, i, d}, a.rate, a.target, true
	a.rate = min(max(a.rate*(1+dout), a.p.MinRate), a.line)
	a.last = LSTMPIDState{RTT: time.Duration(r), S: st, K: kt, Out: out, Pred: pred, E: e, I: i, D: d, Dout: dout, Gains: *gains}
}

// OnCNP implements Algorithm: CNPs are not used; the event advances time.
func (a *LSTMPID) OnCNP(ev CNP) error {
	if err := validateCNP(ev); err != nil {
		return wrapf(err, "%s", a.name)
	}
	if err := checkTime("cnp", ev.Now, a.now); err != nil {
		return wrapf(err, "%s", a.name)
	}
	a.now = ev.Now
	return nil
}

// OnTimer implements Algorithm: no timer; the call advances time.
func (a *LSTMPID) OnTimer(now time.Duration) error {
	if err := checkTime("timer", now, a.now); err != nil {
		return wrapf(err, "%s", a.name)
	}
	a.now = now
	return nil
}

// PIDLearner is the online training of the PID gains (seed 002 3.5.2-3.5.3,
// spec 03 step 4): every flow given the same learner (LSTMPIDParams.Learner)
// reads its gains and updates them after each decision's outcome is known.
// Not safe for concurrent use: the runtime serialises the flows that share
// it (the simulator runs on one goroutine).
type PIDLearner struct {
	// K are the gains [Kp, Ki, Kd], updated in place.
	K [3]float64
	// LR is the learning rate scale lr: mu(n) = lr/sqrt(n+1) (0.01).
	LR float64
	// Clip bounds each gradient component to [-Clip, Clip] (0.1).
	Clip float64
	// Beta replaces d rtt/d rate (seed 002: "a constant close to 1").
	Beta float64
	// Updates counts the updates made.
	Updates int64
}

// NewPIDLearner returns a learner starting from the gains k with seed 002's
// settings: lr 0.01, clip 0.1, beta 1.
func NewPIDLearner(k [3]float64) *PIDLearner {
	return &PIDLearner{K: k, LR: 0.01, Clip: 0.1, Beta: 1}
}

// update is one gradient step for J = (rtt - target)^2/2 with
// dJ/dw_j = (rtt - target) * beta * rate_prev * out_j (units: us, Gb/s),
// given dev = rtt - target in ns.
func (l *PIDLearner) update(dev, ratePrev float64, outs *[3]float64) {
	mu := l.LR / math.Sqrt(float64(l.Updates)+1)
	base := dev / pidRTTUnit * l.Beta * ratePrev / pidRateUnit
	for j := range l.K {
		g := min(max(base*outs[j], -l.Clip), l.Clip)
		l.K[j] -= mu * g
	}
	l.Updates++
}
