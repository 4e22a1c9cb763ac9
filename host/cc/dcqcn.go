package cc

import (
	"math"
	"time"
)

// DCQCN is the DCQCN reaction point (spec 02, RP) for one flow, optionally
// with the fastcnp window (spec 01, "Sender (reaction point) with a switch
// CNP"). Build it with NewDCQCN or NewDCQCNFastCNP, or through New.
//
// The RP is idle until its first CNP: the flow sends at its start rate, no
// timer runs and alpha keeps its initial value, as in the NICs where the
// first CNP arms the RP state machine. Alpha decay is computed lazily from
// the time of the last cut, so it needs no timer calls; only the
// rate-increase timer shows up in NextTimer. Once the flow is back at line
// rate (RT = RC = line rate) increase events cannot change anything until the
// next CNP, which resets T and BC, so the timer stops (NextTimer = NoTimer).
type DCQCN struct {
	name    string
	p       DCQCNParams
	line    float64 // C_host, bits/s
	fastcnp bool    // apply the switch CNP window
	rule    WindowRule
	mtu     int64
	winit   int64

	now     time.Duration // time of the last event
	rc      float64       // current rate RC, bits/s
	rt      float64       // target rate RT, bits/s
	alpha   float64
	t, bc   int64         // increase-event counters T and BC
	byteAcc int64         // bytes sent since the last byte-counter event
	armed   bool          // a CNP has been applied: the RP runs
	lastCut time.Duration // time of the last applied cut

	alphaAnchor time.Duration // alpha decays at alphaAnchor + k*AlphaPeriod
	alphaSteps  int64         // decays applied since alphaAnchor

	nextRate time.Duration // next rpgTimeReset deadline, NoTimer when stopped
	phase    time.Duration // deadline the stopped timer would have had

	window int64 // bytes in flight cap (fastcnp only)
	capped bool  // window is below Winit after a switch CNP
	acked  int64 // bytes acknowledged towards the next window increase (rule aimd)

	stats DCQCNStats
}

// DCQCNStats counts what the RP did, for telemetry and tests.
type DCQCNStats struct {
	CNPs          int64 // CNPs received
	Cuts          int64 // rate decreases applied
	Suppressed    int64 // CNPs ignored by the rateReducePeriod rule
	FastRecovery  int64 // increase events in fast recovery
	Additive      int64 // additive increase events
	Hyper         int64 // hyper increase events
	WindowCaps    int64 // switch windows applied
	WindowRestore int64 // windows back at Winit
	WindowGrowth  int64 // one-MTU window increases (rule aimd)
}

// DCQCNState is a snapshot of the RP state. Alpha is as of the last event;
// call OnTimer(now) first for the value at now.
type DCQCNState struct {
	RC           float64    // current rate, bits/s
	RT           float64    // target rate, bits/s
	Alpha        float64    // congestion estimate alpha
	T            int64      // timer increase events since the last cut
	BC           int64      // byte-counter increase events since the last cut
	Armed        bool       // a CNP has been applied (the RP runs)
	Window       int64      // bytes-in-flight cap, NoWindowCap for "dcqcn"
	WindowCapped bool       // Window is below Winit after a switch window
	Stats        DCQCNStats // event counters
}

// NewDCQCN returns a DCQCN RP ("dcqcn") configured by cfg.LineRate,
// cfg.StartRate and cfg.DCQCN. Its window is NoWindowCap.
func NewDCQCN(cfg Config) (*DCQCN, error) {
	return newDCQCN("dcqcn", cfg, false)
}

// NewDCQCNFastCNP returns a DCQCN RP that also honours the window of
// fastcnp switch CNPs ("dcqcn-fastcnp") by cfg.WindowRule. Its window starts
// at Winit (cfg.InitWindow, default LineRate/8*BaseRTT) and never drops below
// cfg.MTU.
func NewDCQCNFastCNP(cfg Config) (*DCQCN, error) {
	return newDCQCN("dcqcn-fastcnp", cfg, true)
}

func newDCQCN(name string, cfg Config, fastcnp bool) (*DCQCN, error) {
	r, err := cfg.resolveDCQCN()
	if err != nil {
		return nil, wrapf(err, "%s", name)
	}
	d := &DCQCN{
		name:     name,
		p:        cfg.DCQCN,
		line:     cfg.LineRate,
		fastcnp:  fastcnp,
		rule:     r.WindowRule,
		mtu:      r.MTU,
		winit:    r.winit,
		rc:       r.StartRate,
		rt:       r.StartRate,
		alpha:    cfg.DCQCN.InitialAlpha,
		nextRate: NoTimer,
		window:   NoWindowCap,
	}
	if fastcnp {
		// Start at Winit, not uncapped: the spec gives every sender Winit,
		// restores to it, and one BDP in flight is all a flow at line rate
		// needs on an idle path, while it bounds the first RTT of an incast.
		d.window = r.winit
	}
	return d, nil
}

// Name implements Algorithm.
func (d *DCQCN) Name() string { return d.name }

// Rate implements Algorithm: RC in bits/s.
func (d *DCQCN) Rate() float64 { return d.rc }

// Window implements Algorithm: NoWindowCap for "dcqcn"; Winit or the last
// switch window for "dcqcn-fastcnp".
func (d *DCQCN) Window() int64 { return d.window }

// NextTimer implements Algorithm: the next rpgTimeReset deadline, or NoTimer
// before the first CNP and after full recovery.
func (d *DCQCN) NextTimer() time.Duration { return d.nextRate }

// Params returns the DCQCN parameters in use.
func (d *DCQCN) Params() DCQCNParams { return d.p }

// State returns a snapshot of the RP state.
func (d *DCQCN) State() DCQCNState {
	return DCQCNState{
		RC: d.rc, RT: d.rt, Alpha: d.alpha, T: d.t, BC: d.bc, Armed: d.armed,
		Window: d.window, WindowCapped: d.capped, Stats: d.stats,
	}
}

// OnSend implements Algorithm: counts bytes for the byte counter (BC).
func (d *DCQCN) OnSend(ev Send) error {
	if err := validateSend(ev); err != nil {
		return wrapf(err, "%s", d.name)
	}
	if err := checkTime("send", ev.Now, d.now); err != nil {
		return wrapf(err, "%s", d.name)
	}
	d.now = ev.Now
	d.advance(ev.Now)
	// Rule "byte counter": one increase event per rpgByteReset bytes sent.
	if !d.armed || d.p.RPGByteReset == 0 || d.nextRate == NoTimer {
		return nil
	}
	d.byteAcc += ev.Bytes
	for d.byteAcc >= d.p.RPGByteReset {
		d.byteAcc -= d.p.RPGByteReset
		d.bc = satInc(d.bc)
		d.increase()
		if d.nextRate == NoTimer { // recovered: further events change nothing
			d.byteAcc = 0
			break
		}
	}
	return nil
}

// OnAck implements Algorithm. DCQCN is driven by CNPs and its own counters,
// so an ACK advances time (ECE, RTT and INT records are not used) and, with
// window rule aimd, grows a capped window.
func (d *DCQCN) OnAck(ev Ack) error {
	if err := validateAck(ev); err != nil {
		return wrapf(err, "%s", d.name)
	}
	if err := checkTime("ack", ev.Now, d.now); err != nil {
		return wrapf(err, "%s", d.name)
	}
	d.now = ev.Now
	d.advance(ev.Now)
	if d.capped && d.rule == WindowRuleAIMD {
		d.grow(ev.Bytes)
	}
	return nil
}

// grow is the additive increase of rule aimd: one MTU per window of bytes
// acknowledged (about one per round trip), up to Winit.
func (d *DCQCN) grow(acked int64) {
	d.acked += acked
	for d.capped && d.acked >= d.window {
		d.acked -= d.window
		d.window = min(d.window+d.mtu, d.winit)
		d.stats.WindowGrowth++
		if d.window == d.winit {
			d.capped = false
			d.acked = 0
			d.stats.WindowRestore++
		}
	}
}

// OnTimer implements Algorithm: runs the rate-increase timer and alpha
// decay up to now.
func (d *DCQCN) OnTimer(now time.Duration) error {
	if err := checkTime("timer", now, d.now); err != nil {
		return wrapf(err, "%s", d.name)
	}
	d.now = now
	d.advance(now)
	return nil
}

// OnCNP implements Algorithm: the DCQCN cut (at most once per
// rateReducePeriod) and, for "dcqcn-fastcnp", the switch window.
func (d *DCQCN) OnCNP(ev CNP) error {
	if err := validateCNP(ev); err != nil {
		return wrapf(err, "%s", d.name)
	}
	if err := checkTime("cnp", ev.Now, d.now); err != nil {
		return wrapf(err, "%s", d.name)
	}
	d.now = ev.Now
	d.advance(ev.Now)
	d.stats.CNPs++
	switchWin := d.fastcnp && ev.Ext.WindowValid && ev.Ext.Window > 0
	if switchWin && d.rule == WindowRuleAIMD {
		// The window alone reacts: it is the flow's share of the queue the
		// switch wants, and a rate cut on top leaves the link idle.
		d.capWindow(ev.Now, ev.Ext.Window)
		return nil
	}
	// Rule "rate-reduce period": a CNP within rateReducePeriod of the last
	// cut is ignored by DCQCN (it neither cuts nor raises alpha nor resets
	// the timers).
	if d.armed && d.p.RateReducePeriod > 0 && ev.Now-d.lastCut < d.p.RateReducePeriod {
		d.stats.Suppressed++
	} else {
		d.cut(ev.Now)
	}
	// Rule "window cap" (spec 01): applied on every switch window, even when
	// the cut was suppressed, because the window is fresh information from
	// the congestion point, independent of DCQCN's rate limiter. Win = 0
	// means "no window" on the wire.
	if switchWin {
		d.capWindow(ev.Now, ev.Ext.Window)
	}
	return nil
}

// cut is the DCQCN rate decrease (rule "cut"):
// RT = RC; RC = RC*(1 - alpha/2); alpha = (1-g)*alpha + g; reset T, BC, timers.
// With KeepTarget, RT stays when no increase event came since the last cut.
func (d *DCQCN) cut(now time.Duration) {
	if !d.p.KeepTarget || d.t > 0 || d.bc > 0 {
		d.rt = d.rc
	}
	d.rc = d.clamp(d.rc * (1 - d.alpha/2))
	d.alpha = (1-d.p.G)*d.alpha + d.p.G
	d.t, d.bc, d.byteAcc = 0, 0, 0
	d.nextRate = now + d.p.RPGTimeReset
	d.alphaAnchor, d.alphaSteps = now, 0
	d.lastCut = now
	d.armed = true
	d.stats.Cuts++
}

// capWindow applies a switch window: window = min(Winit, max(MTU, Win)).
// The latest window wins: it reflects the flow's current share at the
// congestion point, and taking the minimum would ratchet on stale shares.
func (d *DCQCN) capWindow(now time.Duration, win int64) {
	w := max(win, d.mtu)
	w = min(w, d.winit)
	d.window = w
	d.capped = w < d.winit
	d.acked = 0
	d.stats.WindowCaps++
	if d.rule == WindowRuleSpec01 && d.armed && d.nextRate == NoTimer {
		// Recovered RP (only possible with a long rateReducePeriod): re-arm
		// the increase timer on its old phase so that the restore comes at
		// the next increase event.
		p := d.p.RPGTimeReset
		next := d.phase
		if next <= now {
			next += ((now-next)/p + 1) * p
		}
		d.nextRate = next
	}
}

// advance runs alpha decay and the rate-increase timer up to now, in order.
func (d *DCQCN) advance(now time.Duration) {
	if !d.armed {
		return
	}
	// Rule "alpha decay": alpha = (1-g)*alpha once per alphaPeriod without
	// a cut, counted from the last cut; k missed periods give (1-g)^k.
	if n := int64((now - d.alphaAnchor) / d.p.AlphaPeriod); n > d.alphaSteps {
		k := n - d.alphaSteps
		if k == 1 {
			d.alpha *= 1 - d.p.G
		} else {
			d.alpha *= math.Pow(1-d.p.G, float64(k))
		}
		d.alphaSteps = n
	}
	// Rule "timer": one increase event per rpgTimeReset (T counts them).
	for d.nextRate <= now {
		d.nextRate += d.p.RPGTimeReset
		d.t = satInc(d.t)
		d.increase()
	}
}

// increase is one rate-increase event, after T or BC was bumped:
//
//	max(T,BC) < F:  fast recovery      RC = (RT+RC)/2
//	min(T,BC) > F:  hyper increase     RT += i*R_HAI, i = min(T,BC)-F+1; RC = (RT+RC)/2
//	otherwise:      additive increase  RT += R_AI;                       RC = (RT+RC)/2
//
// Without a byte counter (rpgByteReset = 0, the HPCC simulator's DCQCN) BC
// does not exist: the stage is decided by T alone (max = min = T), as the
// simulator's timer stage does; a BC stuck at 0 would keep min(T,BC) = 0 and
// hyper increase would never fire.
//
// RT is clamped to the line rate (RC = (RT+RC)/2 could not use more), RC to
// [minRate, line rate]. With window rule spec01 the first increase after a
// switch window restores the window to Winit (rule "window restore").
func (d *DCQCN) increase() {
	f := int64(d.p.F)
	hi, lo := max(d.t, d.bc), min(d.t, d.bc)
	if d.p.RPGByteReset == 0 {
		hi, lo = d.t, d.t
	}
	switch {
	case hi < f:
		d.stats.FastRecovery++
	case lo > f:
		d.rt += float64(lo-f+1) * d.p.HAI
		d.stats.Hyper++
	default:
		d.rt += d.p.AI
		d.stats.Additive++
	}
	d.rt = min(d.rt, d.line)
	old := d.rc
	d.rc = d.clamp((d.rt + d.rc) / 2)
	if d.capped && d.rule == WindowRuleSpec01 {
		d.window = d.winit
		d.capped = false
		d.stats.WindowRestore++
	}
	// Recovered: RT is at line rate and RC did not move, so every later
	// increase event would be a no-op until the next CNP resets T and BC.
	// (RC may settle one float ulp below line rate: (a+b)/2 rounds to even.)
	if d.rt == d.line && d.rc == old {
		d.phase = d.nextRate
		d.nextRate = NoTimer
	}
}

// clamp keeps a rate within [minRate, line rate].
func (d *DCQCN) clamp(r float64) float64 {
	return min(max(r, d.p.MinRate), d.line)
}

// satInc increments a counter, saturating far below overflow.
func satInc(n int64) int64 {
	if n >= 1<<62 {
		return n
	}
	return n + 1
}
