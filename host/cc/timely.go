package cc

import "time"

// TIMELY is the TIMELY sender (spec 03; Mittal et al., SIGCOMM 2015) for one
// flow: rate based, driven by the RTT samples of ACKs (Ack.RTT; an ACK with
// RTT = 0 carries none). Build it with NewTIMELY or through New ("timely").
//
// Each RTT sample used (every sample, or one per round trip with PerRTT):
//
//	new_rtt_diff = rtt - prev_rtt; prev_rtt = rtt
//	rtt_diff = (1-a)*rtt_diff + a*new_rtt_diff
//	gradient = rtt_diff / minRTT
//	rtt < Tlow:     rate += delta
//	rtt > Thigh:    rate *= 1 - b*(1 - Thigh/rtt)
//	gradient <= 0:  rate += N*delta (HAI, after HAIAfter samples in a row with
//	                gradient <= 0) or delta
//	otherwise:      rate *= 1 - b*gradient
//
// and the rate is clamped to [minRate, line rate]. The first sample only sets
// prev_rtt. TIMELY has no window (NoWindowCap) and no timer, and ignores CNPs.
type TIMELY struct {
	p    TIMELYParams
	line float64

	now     time.Duration // time of the last event
	rate    float64
	prevRTT time.Duration // last RTT sample used
	started bool          // prevRTT holds a sample
	rttDiff float64       // EWMA of RTT differences, ns
	grad    float64       // last gradient
	negRun  int64         // samples in a row with gradient <= 0

	sent, acked int64 // bytes put on the wire / newly acknowledged
	lastUpdate  int64 // sent at the last update (PerRTT)

	stats TIMELYStats
}

// TIMELYStats counts what TIMELY did, for telemetry and tests.
type TIMELYStats struct {
	Samples           int64 // ACKs with an RTT sample
	Skipped           int64 // samples not used (PerRTT: within the round trip)
	LowIncreases      int64 // rtt < Tlow: +delta
	HighDecreases     int64 // rtt > Thigh
	GradientIncreases int64 // gradient <= 0: +delta
	HAIIncreases      int64 // gradient <= 0 in HAI mode: +N*delta
	GradientDecreases int64 // gradient > 0
}

// TIMELYState is a snapshot of the TIMELY state.
type TIMELYState struct {
	Rate     float64       // bits/s
	PrevRTT  time.Duration // last RTT sample used
	RTTDiff  float64       // EWMA rtt_diff, ns
	Gradient float64       // last normalised gradient
	NegRun   int64         // samples in a row with gradient <= 0
	Stats    TIMELYStats
}

// NewTIMELY returns a TIMELY sender ("timely") configured by cfg.LineRate,
// cfg.StartRate (the first rate) and cfg.TIMELY.
func NewTIMELY(cfg Config) (*TIMELY, error) {
	r, err := cfg.resolveTIMELY()
	if err != nil {
		return nil, wrapf(err, "timely")
	}
	return &TIMELY{p: cfg.TIMELY, line: cfg.LineRate, rate: r.StartRate}, nil
}

// Name implements Algorithm.
func (m *TIMELY) Name() string { return "timely" }

// Rate implements Algorithm.
func (m *TIMELY) Rate() float64 { return m.rate }

// Window implements Algorithm: TIMELY is rate based (NoWindowCap).
func (m *TIMELY) Window() int64 { return NoWindowCap }

// NextTimer implements Algorithm: TIMELY needs no timer (NoTimer).
func (m *TIMELY) NextTimer() time.Duration { return NoTimer }

// Params returns the TIMELY parameters in use.
func (m *TIMELY) Params() TIMELYParams { return m.p }

// State returns a snapshot of the TIMELY state.
func (m *TIMELY) State() TIMELYState {
	return TIMELYState{Rate: m.rate, PrevRTT: m.prevRTT, RTTDiff: m.rttDiff, Gradient: m.grad, NegRun: m.negRun, Stats: m.stats}
}

// OnSend implements Algorithm: counts the bytes sent (for PerRTT).
func (m *TIMELY) OnSend(ev Send) error {
	if err := validateSend(ev); err != nil {
		return wrapf(err, "timely")
	}
	if err := checkTime("send", ev.Now, m.now); err != nil {
		return wrapf(err, "timely")
	}
	m.now = ev.Now
	m.sent += ev.Bytes
	return nil
}

// OnAck implements Algorithm: an ACK with an RTT sample may update the rate.
func (m *TIMELY) OnAck(ev Ack) error {
	if err := validateAck(ev); err != nil {
		return wrapf(err, "timely")
	}
	if err := checkTime("ack", ev.Now, m.now); err != nil {
		return wrapf(err, "timely")
	}
	m.now = ev.Now
	m.acked += ev.Bytes
	if ev.RTT == 0 {
		return nil
	}
	m.stats.Samples++
	if !m.started {
		// First sample: there is no difference yet.
		m.prevRTT, m.started = ev.RTT, true
		m.lastUpdate = m.sent
		return nil
	}
	if m.p.PerRTT {
		// Rule "once per RTT" (HPCC simulator): only a sample acknowledging
		// data sent after the previous update starts a new update.
		if m.acked <= m.lastUpdate {
			m.stats.Skipped++
			return nil
		}
		m.lastUpdate = max(m.lastUpdate, m.sent)
	}
	m.update(ev.RTT)
	return nil
}

// update applies one RTT sample (see the type's comment).
func (m *TIMELY) update(rtt time.Duration) {
	newDiff := float64(rtt - m.prevRTT)
	m.prevRTT = rtt
	m.rttDiff = (1-m.p.Alpha)*m.rttDiff + m.p.Alpha*newDiff
	g := m.rttDiff / float64(m.p.MinRTT)
	m.grad = g
	switch {
	case rtt < m.p.TLow:
		m.rate += m.p.AI
		m.stats.LowIncreases++
	case rtt > m.p.THigh:
		m.rate *= 1 - m.p.Beta*(1-float64(m.p.THigh)/float64(rtt))
		m.stats.HighDecreases++
	case g <= 0:
		if m.negRun >= int64(m.p.HAIAfter) {
			m.rate += m.p.HAI
			m.stats.HAIIncreases++
		} else {
			m.rate += m.p.AI
			m.stats.GradientIncreases++
		}
	default:
		m.rate *= 1 - m.p.Beta*g
		m.stats.GradientDecreases++
	}
	// The HAI run counts samples by the sign of their gradient, whatever
	// branch applied: "N = 5 after 5 consecutive gradient <= 0".
	if g <= 0 {
		m.negRun = satInc(m.negRun)
	} else {
		m.negRun = 0
	}
	// 1 - b*gradient may be negative: the floor catches it.
	m.rate = min(max(m.rate, m.p.MinRate), m.line)
}

// OnCNP implements Algorithm: TIMELY does not use CNPs; the event only
// advances time.
func (m *TIMELY) OnCNP(ev CNP) error {
	if err := validateCNP(ev); err != nil {
		return wrapf(err, "timely")
	}
	if err := checkTime("cnp", ev.Now, m.now); err != nil {
		return wrapf(err, "timely")
	}
	m.now = ev.Now
	return nil
}

// OnTimer implements Algorithm: TIMELY has no timer; the call only advances
// time.
func (m *TIMELY) OnTimer(now time.Duration) error {
	if err := checkTime("timer", now, m.now); err != nil {
		return wrapf(err, "timely")
	}
	m.now = now
	return nil
}
