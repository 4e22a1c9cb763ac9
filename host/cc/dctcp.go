package cc

import "time"

// DCTCP is the DCTCP sender (spec 03; Alizadeh et al., SIGCOMM 2010) for one
// flow: window based, driven by the ECN echo of ACKs (Ack.ECE) and by the
// bytes sent and acknowledged. Build it with NewDCTCP or through New
// ("dctcp").
//
// A window of data is the bytes sent up to a boundary; it ends at the first
// ACK that brings the bytes acknowledged past the bytes sent at the boundary
// (the HPCC simulator's "ack_seq > lastUpdateSeq"), and the next window
// starts there. On each ACK, in this order:
//
//	window ended:        alpha = (1-g)*alpha + g*F, F = ECE bytes / bytes acked in it
//	                     (not for the first boundary, which only starts the first window)
//	CWR ended:           the bytes acknowledged passed the bytes sent at the last cut
//	ECE and not in CWR:  cwnd = cwnd*(1 - alpha/2); enter CWR (once per window)
//	window ended, no CWR: cwnd += AI (one MTU per window: +1 MSS per RTT)
//
// cwnd stays within [MTU, Winit]; it starts at Winit*StartRate/LineRate.
// Window() is cwnd (floor). Rate() is the line rate, or cwnd/BaseRTT with
// Pace (the HPCC simulator). DCTCP has no timer and ignores CNPs.
type DCTCP struct {
	p     DCTCPParams
	line  float64
	mtu   float64
	wmax  float64 // Winit
	ai    float64
	paceK float64 // 8/BaseRTT in seconds: Rate = cwnd*paceK

	now   time.Duration
	cwnd  float64
	alpha float64

	sent, acked     int64 // bytes put on the wire / newly acknowledged
	winEnd          int64 // sent at the start of the current window
	winStarted      bool  // the first boundary has passed
	winAcked, winCE int64 // bytes acknowledged / with ECE in the current window
	cwr             bool  // in congestion window reduction
	cwrEnd          int64 // sent at the last cut

	stats DCTCPStats
}

// DCTCPStats counts what DCTCP did, for telemetry and tests.
type DCTCPStats struct {
	Windows   int64 // windows ended (alpha updates)
	Cuts      int64 // window cuts
	Increases int64 // additive increases
	ECEAcks   int64 // ACKs with ECE
}

// DCTCPState is a snapshot of the DCTCP state.
type DCTCPState struct {
	Cwnd  float64 // congestion window, bytes (Window() is its floor)
	Alpha float64
	CWR   bool // in congestion window reduction
	Stats DCTCPStats
}

// NewDCTCP returns a DCTCP sender ("dctcp") configured by cfg.LineRate,
// cfg.StartRate, cfg.MTU, cfg.BaseRTT, cfg.InitWindow and cfg.DCTCP.
func NewDCTCP(cfg Config) (*DCTCP, error) {
	r, err := cfg.resolveDCTCP()
	if err != nil {
		return nil, wrapf(err, "dctcp")
	}
	p := cfg.DCTCP
	d := &DCTCP{
		p: p, line: cfg.LineRate, mtu: float64(r.MTU), wmax: float64(r.winit),
		ai: float64(p.AI), paceK: 8 / r.BaseRTT.Seconds(), alpha: p.InitialAlpha,
	}
	if p.AI == 0 {
		d.ai = d.mtu
	}
	d.cwnd = d.clamp(d.wmax * r.StartRate / cfg.LineRate)
	return d, nil
}

// Name implements Algorithm.
func (d *DCTCP) Name() string { return "dctcp" }

// Rate implements Algorithm: the line rate, or cwnd/BaseRTT with Pace.
func (d *DCTCP) Rate() float64 {
	if !d.p.Pace {
		return d.line
	}
	return min(d.cwnd*d.paceK, d.line)
}

// Window implements Algorithm: cwnd in bytes (floor), at least one MTU.
func (d *DCTCP) Window() int64 { return int64(d.cwnd) }

// NextTimer implements Algorithm: DCTCP needs no timer (NoTimer).
func (d *DCTCP) NextTimer() time.Duration { return NoTimer }

// Params returns the DCTCP parameters in use.
func (d *DCTCP) Params() DCTCPParams { return d.p }

// State returns a snapshot of the DCTCP state.
func (d *DCTCP) State() DCTCPState {
	return DCTCPState{Cwnd: d.cwnd, Alpha: d.alpha, CWR: d.cwr, Stats: d.stats}
}

// OnSend implements Algorithm: counts the bytes sent (the window boundaries).
func (d *DCTCP) OnSend(ev Send) error {
	if err := validateSend(ev); err != nil {
		return wrapf(err, "dctcp")
	}
	if err := checkTime("send", ev.Now, d.now); err != nil {
		return wrapf(err, "dctcp")
	}
	d.now = ev.Now
	d.sent += ev.Bytes
	return nil
}

// OnAck implements Algorithm: alpha per window, the cut on ECE, the additive
// increase per window (see the type's comment).
func (d *DCTCP) OnAck(ev Ack) error {
	if err := validateAck(ev); err != nil {
		return wrapf(err, "dctcp")
	}
	if err := checkTime("ack", ev.Now, d.now); err != nil {
		return wrapf(err, "dctcp")
	}
	d.now = ev.Now
	d.acked += ev.Bytes
	d.winAcked += ev.Bytes
	if ev.ECE {
		d.winCE += ev.Bytes
		d.stats.ECEAcks++
	}
	// Rule "alpha": once per window of data.
	ended := d.acked > d.winEnd
	if ended {
		if d.winStarted {
			f := 0.0
			if d.winAcked > 0 {
				f = float64(d.winCE) / float64(d.winAcked)
			}
			d.alpha = (1-d.p.G)*d.alpha + d.p.G*f
			d.winAcked, d.winCE = 0, 0
			d.stats.Windows++
		}
		d.winStarted = true
		d.winEnd = d.sent
	}
	// Rule "CWR": one cut per window; CWR ends when the data sent before the
	// cut is acknowledged.
	if d.cwr && d.acked > d.cwrEnd {
		d.cwr = false
	}
	// Rule "cut".
	if ev.ECE && !d.cwr {
		d.cwnd = d.clamp(d.cwnd * (1 - d.alpha/2))
		d.cwr, d.cwrEnd = true, d.sent
		d.stats.Cuts++
	}
	// Rule "additive increase": +AI per window without a cut.
	if ended && !d.cwr {
		d.cwnd = d.clamp(d.cwnd + d.ai)
		d.stats.Increases++
	}
	return nil
}

// clamp keeps a window within [MTU, Winit].
func (d *DCTCP) clamp(w float64) float64 {
	return min(max(w, d.mtu), d.wmax)
}

// OnCNP implements Algorithm: DCTCP reacts to ECN echoes on ACKs, not to
// CNPs; the event only advances time.
func (d *DCTCP) OnCNP(ev CNP) error {
	if err := validateCNP(ev); err != nil {
		return wrapf(err, "dctcp")
	}
	if err := checkTime("cnp", ev.Now, d.now); err != nil {
		return wrapf(err, "dctcp")
	}
	d.now = ev.Now
	return nil
}

// OnTimer implements Algorithm: DCTCP has no timer; the call only advances
// time.
func (d *DCTCP) OnTimer(now time.Duration) error {
	if err := checkTime("timer", now, d.now); err != nil {
		return wrapf(err, "dctcp")
	}
	d.now = now
	return nil
}
