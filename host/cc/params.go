package cc

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/fastcnp/fastcnp/host/cc/lstm"
)

// Defaults applied by Config for zero fields.
const (
	// DefaultMTU is the largest packet a sender puts on the wire, in bytes
	// (the Ethernet MTU). It is the floor of any window (spec 01).
	DefaultMTU int64 = 1500
	// DefaultBaseRTT is the fabric base RTT of spec 01's port table (8 us).
	DefaultBaseRTT = 8 * time.Microsecond
	// maxPeriod bounds every DCQCN period (an hour is already absurd); with
	// MaxTime it keeps deadline arithmetic far from int64 overflow.
	maxPeriod = time.Hour
	// maxMTU bounds Config.MTU (a jumbo frame fits; anything larger is a typo).
	maxMTU int64 = 1 << 16
	// maxRecoverySteps bounds LineRate/R_AI: the number of additive increase
	// events a flow may need to climb from minRate back to line rate. It keeps
	// the worst-case catch-up of a late OnTimer call bounded.
	maxRecoverySteps = 1 << 24
)

// Config configures one flow's algorithm. Fields shared by all algorithms
// sit at the top; each algorithm has its own parameter struct below. Zero
// values of LineRate and of the algorithm's own parameters are errors;
// other zero fields take the documented default.
type Config struct {
	// LineRate is C_host, the sender's line rate in bits/s. Required.
	LineRate float64
	// StartRate is the rate before the first CNP in bits/s; 0 = LineRate.
	StartRate float64
	// MTU is the largest packet size on the wire in bytes; 0 = DefaultMTU.
	MTU int64
	// BaseRTT is RTTbase, the fabric base RTT; 0 = DefaultBaseRTT.
	BaseRTT time.Duration
	// InitWindow is Winit in bytes for window-based algorithms;
	// 0 = LineRate/8 * BaseRTT (the host's bandwidth-delay product, spec 01).
	InitWindow int64
	// DCQCN holds the DCQCN parameters ("dcqcn", "dcqcn-fastcnp"); start
	// from DCQCNPreset and override fields as needed.
	DCQCN DCQCNParams
	// WindowRule is how "dcqcn-fastcnp" reacts to a switch CNP's window and
	// gets it back; "" is WindowRuleAIMD.
	WindowRule WindowRule
	// TIMELY holds the TIMELY parameters ("timely"); start from
	// TIMELYPreset.
	TIMELY TIMELYParams
	// DCTCP holds the DCTCP parameters ("dctcp"); start from DCTCPPreset.
	DCTCP DCTCPParams
	// HPCC holds the HPCC parameters ("hpcc"); start from HPCCPreset.
	HPCC HPCCParams
	// LSTMPID holds the LSTM+PID parameters ("pid", "lstm-pid",
	// "lstm-pid-rttch", "lstm-pid-rttch-win"); start from LSTMPIDPreset.
	LSTMPID LSTMPIDParams
}

// presetNames returns the keys of a preset table, sorted.
func presetNames[P any](m map[string]P) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// lookupPreset returns the named entry of a preset table or an error
// wrapping ErrUnknownParamSet that lists the known names.
func lookupPreset[P any](algo string, m map[string]P, name string) (P, error) {
	p, ok := m[name]
	if !ok {
		return p, fmt.Errorf("%s parameter set %q (known: %s): %w",
			algo, name, strings.Join(presetNames(m), ", "), ErrUnknownParamSet)
	}
	return p, nil
}

// ParamSetNames returns the names of the parameter sets of the algorithm
// called algo (a name New accepts), sorted. An unknown algorithm gives an
// error wrapping ErrUnknownAlgorithm.
func ParamSetNames(algo string) ([]string, error) {
	switch algo {
	case "dcqcn", "dcqcn-fastcnp":
		return DCQCNPresetNames(), nil
	case "timely":
		return TIMELYPresetNames(), nil
	case "dctcp":
		return DCTCPPresetNames(), nil
	case "hpcc":
		return HPCCPresetNames(), nil
	case "pid", "lstm-pid", "lstm-pid-rttch", "lstm-pid-rttch-win":
		return LSTMPIDPresetNames(), nil
	}
	return nil, fmt.Errorf("parameter sets of %q (known algorithms: %s): %w", algo, strings.Join(Names(), ", "), ErrUnknownAlgorithm)
}

// UseParamSet sets the parameters of the algorithm called algo in c to its
// parameter set called set (ParamSetNames lists them), leaving the other
// algorithms' parameters alone. Errors wrap ErrUnknownAlgorithm or
// ErrUnknownParamSet; c is unchanged on error.
func (c *Config) UseParamSet(algo, set string) error {
	var err error
	switch algo {
	case "dcqcn", "dcqcn-fastcnp":
		var p DCQCNParams
		if p, err = DCQCNPreset(set); err == nil {
			c.DCQCN = p
		}
	case "timely":
		var p TIMELYParams
		if p, err = TIMELYPreset(set); err == nil {
			c.TIMELY = p
		}
	case "dctcp":
		var p DCTCPParams
		if p, err = DCTCPPreset(set); err == nil {
			c.DCTCP = p
		}
	case "hpcc":
		var p HPCCParams
		if p, err = HPCCPreset(set); err == nil {
			c.HPCC = p
		}
	case "pid", "lstm-pid", "lstm-pid-rttch", "lstm-pid-rttch-win":
		var p LSTMPIDParams
		if p, err = LSTMPIDPreset(set); err == nil {
			c.LSTMPID = p
		}
	default:
		_, err = ParamSetNames(algo)
	}
	return err
}

// DCQCNParams are the host-side DCQCN parameters of spec 02 (RP and NP).
// The switch-side CP parameters (Kmin, Kmax, Pmax) are port settings of the
// switch, not host parameters, and are not here.
type DCQCNParams struct {
	// Set names the preset these values came from, or "custom". It is only
	// a label for logs and results.
	Set string
	// G is the alpha gain g, in (0, 1].
	G float64
	// InitialAlpha is alpha before the first CNP, in [0, 1]; the paper uses 1
	// so that the first CNP halves the rate.
	InitialAlpha float64
	// AlphaPeriod is alphaPeriod: alpha decays once per period without CNP.
	AlphaPeriod time.Duration
	// RateReducePeriod is rateReducePeriod: at most one cut per period;
	// 0 = every CNP cuts.
	RateReducePeriod time.Duration
	// RPGTimeReset is rpgTimeReset, the period of the rate-increase timer.
	RPGTimeReset time.Duration
	// RPGByteReset is rpgByteReset, bytes sent per byte-counter increase
	// event; 0 = no byte counter (the HPCC simulator has none): BC is
	// absent and the increase stage is decided by T alone.
	RPGByteReset int64
	// F is the number of fast recovery steps.
	F int
	// AI is R_AI, the additive increase step, bits/s.
	AI float64
	// HAI is R_HAI, the hyper increase step, bits/s.
	HAI float64
	// MinRate is minRate, the floor of the rate, bits/s (> 0: a pacer
	// cannot run at 0).
	MinRate float64
	// CNPInterval is the NP's cnpInterval: at most one CNP per flow per
	// interval; 0 = one CNP per CE-marked packet.
	CNPInterval time.Duration
	// KeepTarget: a cut that comes before any rate increase event since the
	// previous cut (or the first cut) leaves RT where it is, instead of the
	// paper's RT = RC; the HPCC simulator's CLAMP_TARGET_RATE 0 (its
	// Mellanox model). No preset sets it; the parameter file does.
	KeepTarget bool
}

// dcqcnPresets are the three columns of spec 02's parameter table. Values the
// table leaves as "-" are chosen here and documented in docs/host-cc.md.
var dcqcnPresets = map[string]DCQCNParams{
	"paper2015": {
		Set: "paper2015", G: 1.0 / 256, InitialAlpha: 1,
		AlphaPeriod: 55 * time.Microsecond, RateReducePeriod: 0,
		RPGTimeReset: 55 * time.Microsecond, RPGByteReset: 10_000_000, F: 5,
		AI: 40e6, HAI: 200e6,
		MinRate:     1e6, // "-" in the paper: the NVIDIA default
		CNPInterval: 50 * time.Microsecond,
	},
	"nvidia-cx": {
		Set: "nvidia-cx", G: 5.0 / 1024, InitialAlpha: 1,
		AlphaPeriod: 1 * time.Microsecond, RateReducePeriod: 4 * time.Microsecond,
		RPGTimeReset: 300 * time.Microsecond, RPGByteReset: 32767, F: 1,
		AI: 5e6, HAI: 50e6, MinRate: 1e6,
		CNPInterval: 4 * time.Microsecond, // table: 2-4 us
	},
	"hpcc-sim": {
		Set: "hpcc-sim", G: 1.0 / 256, InitialAlpha: 1,
		AlphaPeriod: 1 * time.Microsecond, RateReducePeriod: 4 * time.Microsecond,
		RPGTimeReset: 300 * time.Microsecond, RPGByteReset: 0, F: 1,
		AI: 20e6, HAI: 200e6, MinRate: 1e9,
		CNPInterval: 0, // "-": the simulator reacts to every CE echo
	},
}

// DCQCNPresetNames returns the names DCQCNPreset accepts, sorted.
func DCQCNPresetNames() []string {
	names := make([]string, 0, len(dcqcnPresets))
	for n := range dcqcnPresets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// DCQCNPreset returns the named parameter set of spec 02's table:
// "paper2015", "nvidia-cx" or "hpcc-sim".
func DCQCNPreset(name string) (DCQCNParams, error) {
	p, ok := dcqcnPresets[name]
	if !ok {
		return DCQCNParams{}, fmt.Errorf("DCQCN parameter set %q (known: %s): %w",
			name, strings.Join(DCQCNPresetNames(), ", "), ErrUnknownParamSet)
	}
	return p, nil
}

// MaxScale bounds the factor of DCQCNParams.Scaled.
const MaxScale = 1e6

// Scaled returns the parameters for a network k times slower: the same
// dynamics in units of the base RTT and the line rate when rates are
// divided by k and times multiplied by k (a testbed with 100 Mb/s links and
// millisecond RTTs runs a 100 Gb/s, microsecond parameter set with
// k = 1000). Periods (alphaPeriod, rateReducePeriod, rpgTimeReset,
// cnpInterval) are multiplied by k, rates (R_AI, R_HAI, minRate) divided
// by k; g, F, the initial alpha and byte counts (rpgByteReset = rate x
// time) are unchanged. k must be finite and in [1/MaxScale, MaxScale]; the
// result is validated.
func (p DCQCNParams) Scaled(k float64) (DCQCNParams, error) {
	if !(k >= 1/MaxScale && k <= MaxScale) {
		return p, fmt.Errorf("DCQCN scale %v, want %v <= k <= %v: %w", k, 1/MaxScale, MaxScale, ErrBadParams)
	}
	if k == 1 {
		return p, p.Validate()
	}
	per := func(d time.Duration) time.Duration {
		if d == 0 {
			return 0
		}
		return max(time.Duration(math.Round(float64(d)*k)), 1)
	}
	q := p
	q.Set = fmt.Sprintf("%s x%g", p.Set, k)
	q.AlphaPeriod, q.RateReducePeriod = per(p.AlphaPeriod), per(p.RateReducePeriod)
	q.RPGTimeReset, q.CNPInterval = per(p.RPGTimeReset), per(p.CNPInterval)
	q.AI, q.HAI, q.MinRate = p.AI/k, p.HAI/k, p.MinRate/k
	if err := q.Validate(); err != nil {
		return p, err
	}
	return q, nil
}

// finitePos reports whether v is a finite number > 0 (false for NaN).
func finitePos(v float64) bool { return v > 0 && !math.IsInf(v, 1) }

// Validate checks every DCQCN parameter on its own; Config.Validate also
// checks them against the line rate.
func (p DCQCNParams) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("DCQCN parameters %q: %s: %w", p.Set, fmt.Sprintf(format, args...), ErrBadParams)
	}
	switch {
	case p == DCQCNParams{}:
		return fmt.Errorf("DCQCN parameters not set (start from DCQCNPreset: %s): %w",
			strings.Join(DCQCNPresetNames(), ", "), ErrBadParams)
	case !(p.G > 0 && p.G <= 1):
		return bad("g = %v, want 0 < g <= 1", p.G)
	case !(p.InitialAlpha >= 0 && p.InitialAlpha <= 1):
		return bad("initial alpha = %v, want 0 <= alpha <= 1", p.InitialAlpha)
	case p.AlphaPeriod <= 0 || p.AlphaPeriod > maxPeriod:
		return bad("alphaPeriod = %v, want 0 < period <= %v", p.AlphaPeriod, maxPeriod)
	case p.RateReducePeriod < 0 || p.RateReducePeriod > maxPeriod:
		return bad("rateReducePeriod = %v, want 0 <= period <= %v", p.RateReducePeriod, maxPeriod)
	case p.RPGTimeReset <= 0 || p.RPGTimeReset > maxPeriod:
		return bad("rpgTimeReset = %v, want 0 < period <= %v", p.RPGTimeReset, maxPeriod)
	case p.RPGByteReset < 0:
		return bad("rpgByteReset = %d bytes, want >= 0 (0 = off)", p.RPGByteReset)
	case p.F < 0 || p.F > 1<<16:
		return bad("F = %d, want 0 <= F <= 65536", p.F)
	case !finitePos(p.AI):
		return bad("R_AI = %v bits/s, want finite and > 0", p.AI)
	case !finitePos(p.HAI):
		return bad("R_HAI = %v bits/s, want finite and > 0", p.HAI)
	case !finitePos(p.MinRate):
		return bad("minRate = %v bits/s, want finite and > 0", p.MinRate)
	case p.CNPInterval < 0 || p.CNPInterval > maxPeriod:
		return bad("cnpInterval = %v, want 0 <= interval <= %v", p.CNPInterval, maxPeriod)
	}
	return nil
}

// resolved is a Config with its defaults filled in.
type resolved struct {
	Config
	winit int64
}

// resolve validates the shared fields of c and fills in the defaults.
func (c Config) resolve() (resolved, error) {
	r := resolved{Config: c}
	if !finitePos(c.LineRate) {
		return r, fmt.Errorf("line rate = %v bits/s, want finite and > 0: %w", c.LineRate, ErrBadParams)
	}
	if c.StartRate == 0 {
		r.StartRate = c.LineRate
	}
	if !finitePos(r.StartRate) || r.StartRate > c.LineRate {
		return r, fmt.Errorf("start rate = %v bits/s, want 0 < start <= line rate %v: %w", c.StartRate, c.LineRate, ErrBadParams)
	}
	if c.MTU == 0 {
		r.MTU = DefaultMTU
	}
	if r.MTU < 0 || r.MTU > maxMTU {
		return r, fmt.Errorf("MTU = %d bytes, want 0 < MTU <= %d: %w", c.MTU, maxMTU, ErrBadParams)
	}
	if c.BaseRTT == 0 {
		r.BaseRTT = DefaultBaseRTT
	}
	if r.BaseRTT < 0 || r.BaseRTT > maxPeriod {
		return r, fmt.Errorf("base RTT = %v, want 0 < RTT <= %v: %w", c.BaseRTT, maxPeriod, ErrBadParams)
	}
	if c.InitWindow < 0 {
		return r, fmt.Errorf("initial window = %d bytes, want >= 0 (0 = BDP): %w", c.InitWindow, ErrBadParams)
	}
	r.winit = c.InitWindow
	if r.winit == 0 {
		// Winit = C_host * RTTbase, in bytes (floor).
		bdp := c.LineRate / 8 * r.BaseRTT.Seconds()
		if bdp >= float64(MaxEventBytes) {
			return r, fmt.Errorf("initial window = line rate %v * base RTT %v is %v bytes, over %d: %w",
				c.LineRate, r.BaseRTT, bdp, MaxEventBytes, ErrBadParams)
		}
		r.winit = int64(bdp)
	}
	if r.winit < r.MTU {
		return r, fmt.Errorf("initial window = %d bytes is below one MTU (%d): %w", r.winit, r.MTU, ErrBadParams)
	}
	return r, nil
}

// WindowRule is the fastcnp sender's reaction to a switch window.
type WindowRule string

// Window rules of "dcqcn-fastcnp" (docs/host-cc.md "fastcnp window").
const (
	// WindowRuleAIMD: a switch CNP with a window caps the window and does not
	// cut the rate (the window already sizes the flow's share of the queue);
	// the window grows back by one MTU per window of bytes acknowledged, up to
	// Winit. CNPs without a window (the receiver's NP, Win = 0) cut as DCQCN.
	WindowRuleAIMD WindowRule = "aimd"
	// WindowRuleSpec01: spec 01 as written: a switch CNP cuts the rate as any
	// CNP and caps the window; the first rate increase restores Winit.
	WindowRuleSpec01 WindowRule = "spec01"
)

// WindowRules lists the window rules.
func WindowRules() []WindowRule { return []WindowRule{WindowRuleAIMD, WindowRuleSpec01} }

// resolveDCQCN validates c for the DCQCN algorithms.
func (c Config) resolveDCQCN() (resolved, error) {
	r, err := c.resolve()
	if err != nil {
		return r, err
	}
	p := c.DCQCN
	if err := p.Validate(); err != nil {
		return r, err
	}
	switch c.WindowRule {
	case "":
		r.WindowRule = WindowRuleAIMD
	case WindowRuleAIMD, WindowRuleSpec01:
	default:
		return r, fmt.Errorf("window rule %q (known: %v): %w", c.WindowRule, WindowRules(), ErrBadParams)
	}
	if p.MinRate > c.LineRate {
		return r, fmt.Errorf("DCQCN parameters %q: minRate %v bits/s is above the line rate %v: %w", p.Set, p.MinRate, c.LineRate, ErrBadParams)
	}
	if r.StartRate < p.MinRate {
		return r, fmt.Errorf("DCQCN parameters %q: start rate %v bits/s is below minRate %v: %w", p.Set, r.StartRate, p.MinRate, ErrBadParams)
	}
	if c.LineRate/p.AI > maxRecoverySteps {
		return r, fmt.Errorf("DCQCN parameters %q: R_AI %v bits/s is too small for line rate %v (more than %d increase steps to recover): %w",
			p.Set, p.AI, c.LineRate, maxRecoverySteps, ErrBadParams)
	}
	return r, nil
}

// TIMELYParams are the TIMELY parameters (spec 03; Mittal et al., SIGCOMM
// 2015). Rates in bits/s, times as durations.
type TIMELYParams struct {
	// Set names the preset these values came from, or "custom" (a label).
	Set string
	// Alpha is the EWMA weight a of the newest RTT difference, in (0, 1]:
	// rtt_diff = (1-a)*rtt_diff + a*new_rtt_diff.
	Alpha float64
	// Beta is the multiplicative decrease factor b, in (0, 1].
	Beta float64
	// AI is delta, the additive increment, bits/s.
	AI float64
	// HAI is N*delta, the increment in hyperactive increase (HAI) mode,
	// bits/s, >= AI.
	HAI float64
	// HAIAfter is the number of consecutive RTT samples with gradient <= 0
	// after which a gradient increase uses HAI instead of AI (>= 1).
	HAIAfter int
	// TLow is Tlow: an RTT sample below it increases the rate by AI.
	TLow time.Duration
	// THigh is Thigh: an RTT sample above it cuts the rate by
	// b*(1 - Thigh/rtt). TLow <= THigh.
	THigh time.Duration
	// MinRTT is minRTT, the fixed normaliser of the gradient
	// (gradient = rtt_diff/minRTT).
	MinRTT time.Duration
	// MinRate is the floor of the rate, bits/s (> 0).
	MinRate float64
	// PerRTT updates the rate once per round trip, as the HPCC simulator
	// does, instead of on every RTT sample (every completion event, as the
	// paper): a sample is used only when the bytes acknowledged exceed the
	// bytes sent at the previous update, other samples are ignored.
	PerRTT bool
}

// timelyPresets: "paper2015" is the paper's parameter set as spec 03 gives it,
// "hpcc-sim" the HPCC ns-3 simulator's (rdma-hw.cc attributes TimelyAlpha,
// TimelyBeta, TimelyTLow, TimelyTHigh, TimelyMinRtt; run.py "timely" at
// 100 Gb/s: RATE_AI = 10*bw/10 = 100 Mb/s, RATE_HAI = 50*bw/10 = 500 Mb/s,
// MIN_RATE 1000 Mb/s; rate updated once per RTT).
var timelyPresets = map[string]TIMELYParams{
	"paper2015": {
		Set: "paper2015", Alpha: 0.875, Beta: 0.8,
		AI: 10e6, HAI: 50e6, HAIAfter: 5, // N = 5
		TLow: 50 * time.Microsecond, THigh: 500 * time.Microsecond,
		MinRTT:  20 * time.Microsecond,
		MinRate: 10e6, // not in the paper: one delta
		PerRTT:  false,
	},
	"hpcc-sim": {
		Set: "hpcc-sim", Alpha: 0.875, Beta: 0.8,
		AI: 100e6, HAI: 500e6, HAIAfter: 5,
		TLow: 50 * time.Microsecond, THigh: 500 * time.Microsecond,
		MinRTT:  20 * time.Microsecond,
		MinRate: 1e9,
		PerRTT:  true,
	},
}

// TIMELYPresetNames returns the names TIMELYPreset accepts, sorted.
func TIMELYPresetNames() []string { return presetNames(timelyPresets) }

// TIMELYPreset returns the named TIMELY parameter set: "paper2015" or
// "hpcc-sim" (docs/host-cc.md gives the values and their sources).
func TIMELYPreset(name string) (TIMELYParams, error) {
	return lookupPreset("TIMELY", timelyPresets, name)
}

// Scaled returns the TIMELY parameters for a network k times slower (see
// DCQCNParams.Scaled): Tlow, Thigh and minRTT x k; delta, N*delta and
// minRate / k; a, b, HAIAfter and PerRTT unchanged. k must be finite and in
// [1/MaxScale, MaxScale]; the result is validated.
func (p TIMELYParams) Scaled(k float64) (TIMELYParams, error) {
	if !(k >= 1/MaxScale && k <= MaxScale) {
		return p, fmt.Errorf("TIMELY scale %v, want %v <= k <= %v: %w", k, 1/MaxScale, MaxScale, ErrBadParams)
	}
	if k == 1 {
		return p, p.Validate()
	}
	per := func(d time.Duration) time.Duration { return max(time.Duration(math.Round(float64(d)*k)), 1) }
	q := p
	q.Set = fmt.Sprintf("%s x%g", p.Set, k)
	q.TLow, q.THigh, q.MinRTT = per(p.TLow), per(p.THigh), per(p.MinRTT)
	q.AI, q.HAI, q.MinRate = p.AI/k, p.HAI/k, p.MinRate/k
	if err := q.Validate(); err != nil {
		return p, err
	}
	return q, nil
}

// Validate checks every TIMELY parameter on its own; the algorithm also
// checks them against the line and start rates.
func (p TIMELYParams) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("TIMELY parameters %q: %s: %w", p.Set, fmt.Sprintf(format, args...), ErrBadParams)
	}
	per := func(d time.Duration) bool { return d > 0 && d <= maxPeriod }
	switch {
	case p == TIMELYParams{}:
		return fmt.Errorf("TIMELY parameters not set (start from TIMELYPreset: %s): %w",
			strings.Join(TIMELYPresetNames(), ", "), ErrBadParams)
	case !(p.Alpha > 0 && p.Alpha <= 1):
		return bad("alpha = %v, want 0 < alpha <= 1", p.Alpha)
	case !(p.Beta > 0 && p.Beta <= 1):
		return bad("beta = %v, want 0 < beta <= 1", p.Beta)
	case !finitePos(p.AI):
		return bad("AI (delta) = %v bits/s, want finite and > 0", p.AI)
	case !finitePos(p.HAI) || p.HAI < p.AI:
		return bad("HAI = %v bits/s, want finite and >= AI (%v)", p.HAI, p.AI)
	case p.HAIAfter < 1 || p.HAIAfter > 1<<16:
		return bad("HAIAfter = %d, want 1 <= n <= 65536", p.HAIAfter)
	case !per(p.TLow):
		return bad("Tlow = %v, want 0 < Tlow <= %v", p.TLow, maxPeriod)
	case !per(p.THigh) || p.THigh < p.TLow:
		return bad("Thigh = %v, want Tlow (%v) <= Thigh <= %v", p.THigh, p.TLow, maxPeriod)
	case !per(p.MinRTT):
		return bad("minRTT = %v, want 0 < minRTT <= %v", p.MinRTT, maxPeriod)
	case !finitePos(p.MinRate):
		return bad("minRate = %v bits/s, want finite and > 0", p.MinRate)
	}
	return nil
}

// resolveTIMELY validates c for "timely".
func (c Config) resolveTIMELY() (resolved, error) {
	r, err := c.resolve()
	if err != nil {
		return r, err
	}
	p := c.TIMELY
	if err := p.Validate(); err != nil {
		return r, err
	}
	if p.MinRate > c.LineRate {
		return r, fmt.Errorf("TIMELY parameters %q: minRate %v bits/s is above the line rate %v: %w", p.Set, p.MinRate, c.LineRate, ErrBadParams)
	}
	if r.StartRate < p.MinRate {
		return r, fmt.Errorf("TIMELY parameters %q: start rate %v bits/s is below minRate %v: %w", p.Set, r.StartRate, p.MinRate, ErrBadParams)
	}
	return r, nil
}

// DCTCPParams are the host-side DCTCP parameters (spec 03; Alizadeh et al.,
// SIGCOMM 2010). The marking threshold K is a switch port setting (ECN with
// Kmin = Kmax = K, Pmax = 1), not a host parameter, and is not here.
type DCTCPParams struct {
	// Set names the preset these values came from, or "custom" (a label).
	Set string
	// G is the alpha gain g, in (0, 1]: alpha = (1-g)*alpha + g*F once per
	// window of data.
	G float64
	// InitialAlpha is alpha before the first window ends, in [0, 1].
	InitialAlpha float64
	// AI is the window increase per window of data without a cut, bytes;
	// 0 = one MTU (Config.MTU).
	AI int64
	// Pace makes Rate() = cwnd/BaseRTT (at most the line rate), the HPCC
	// simulator's rate-plus-window DCTCP; false: Rate() is the line rate and
	// only the window limits the flow.
	Pace bool
}

// dctcpPresets: "spec03" is spec 03's DCTCP (g = 1/16, window only), "hpcc-sim"
// the HPCC ns-3 simulator's (run.py "dctcp": EWMA_GAIN 0.0625, the rate paced
// at window/T, one MTU per RTT).
var dctcpPresets = map[string]DCTCPParams{
	"spec03":   {Set: "spec03", G: 1.0 / 16, InitialAlpha: 1, AI: 0, Pace: false},
	"hpcc-sim": {Set: "hpcc-sim", G: 1.0 / 16, InitialAlpha: 1, AI: 0, Pace: true},
}

// DCTCPPresetNames returns the names DCTCPPreset accepts, sorted.
func DCTCPPresetNames() []string { return presetNames(dctcpPresets) }

// DCTCPPreset returns the named DCTCP parameter set: "spec03" or "hpcc-sim".
func DCTCPPreset(name string) (DCTCPParams, error) {
	return lookupPreset("DCTCP", dctcpPresets, name)
}

// Validate checks every DCTCP parameter.
func (p DCTCPParams) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("DCTCP parameters %q: %s: %w", p.Set, fmt.Sprintf(format, args...), ErrBadParams)
	}
	switch {
	case p == DCTCPParams{}:
		return fmt.Errorf("DCTCP parameters not set (start from DCTCPPreset: %s): %w",
			strings.Join(DCTCPPresetNames(), ", "), ErrBadParams)
	case !(p.G > 0 && p.G <= 1):
		return bad("g = %v, want 0 < g <= 1", p.G)
	case !(p.InitialAlpha >= 0 && p.InitialAlpha <= 1):
		return bad("initial alpha = %v, want 0 <= alpha <= 1", p.InitialAlpha)
	case p.AI < 0 || p.AI > MaxEventBytes:
		return bad("AI = %d bytes, want 0 <= AI <= %d (0 = one MTU)", p.AI, MaxEventBytes)
	}
	return nil
}

// resolveDCTCP validates c for "dctcp".
func (c Config) resolveDCTCP() (resolved, error) {
	r, err := c.resolve()
	if err != nil {
		return r, err
	}
	return r, c.DCTCP.Validate()
}

// HPCCMaxHops is the most INT records an HPCC flow keeps state for; an ACK
// with more hops is a bad event. (The HPCC simulator's IntHeader holds 5.)
const HPCCMaxHops = 8

// HPCCParams are the HPCC parameters (spec 03; Li et al., SIGCOMM 2019, and
// the HPCC ns-3 simulator's rdma-hw.cc). The base RTT T is Config.BaseRTT
// and the largest window Config's Winit (the BDP by default).
type HPCCParams struct {
	// Set names the preset these values came from, or "custom" (a label).
	Set string
	// Eta is the target utilisation eta, in (0, 1] (simulator U_TARGET).
	Eta float64
	// MaxStage is maxStage: the number of additive-increase steps in a row
	// before a multiplicative update, >= 0 (simulator MI_THRESH; 0 = every
	// update is multiplicative).
	MaxStage int
	// AI is the additive increase as a rate, bits/s: W_AI = AI*T/8 bytes
	// (simulator RATE_AI).
	AI float64
	// MinRate is the floor of the rate, bits/s: the window never drops
	// below max(MTU, MinRate*T/8) (simulator MIN_RATE).
	MinRate float64
	// FastReact recomputes the window from W_c on every ACK with INT, not
	// only once per RTT (simulator FAST_REACT).
	FastReact bool
	// SampleFeedback skips, in the per-ACK (fast-react) updates, the hops
	// whose queue is empty (simulator SAMPLE_FEEDBACK).
	SampleFeedback bool
	// MultiRate keeps a utilisation, a reference window and a stage per hop
	// and uses the smallest hop window (simulator MULTI_RATE); false: one
	// utilisation from the most loaded hop.
	MultiRate bool
}

// hpccPresets: "hpcc-sim" is the HPCC ns-3 simulator's HPCC at 100 Gb/s:
// run.py "hp" (U_TARGET 0.95, RATE_AI = 10*bw/25 = 40 Mb/s, MIN_RATE
// 1000 Mb/s, FAST_REACT 1, MULTI_RATE 0, SAMPLE_FEEDBACK 0) with MI_THRESH 5,
// the default of scratch/third.cc.
var hpccPresets = map[string]HPCCParams{
	"hpcc-sim": {
		Set: "hpcc-sim", Eta: 0.95, MaxStage: 5, AI: 40e6, MinRate: 1e9,
		FastReact: true, SampleFeedback: false, MultiRate: false,
	},
}

// HPCCPresetNames returns the names HPCCPreset accepts, sorted.
func HPCCPresetNames() []string { return presetNames(hpccPresets) }

// HPCCPreset returns the named HPCC parameter set: "hpcc-sim".
func HPCCPreset(name string) (HPCCParams, error) {
	return lookupPreset("HPCC", hpccPresets, name)
}

// Scaled returns the HPCC parameters for a network k times slower (see
// DCQCNParams.Scaled): AI and minRate / k; eta, maxStage and the modes
// unchanged (T is Config.BaseRTT, scaled with the network). k must be finite
// and in [1/MaxScale, MaxScale]; the result is validated.
func (p HPCCParams) Scaled(k float64) (HPCCParams, error) {
	if !(k >= 1/MaxScale && k <= MaxScale) {
		return p, fmt.Errorf("HPCC scale %v, want %v <= k <= %v: %w", k, 1/MaxScale, MaxScale, ErrBadParams)
	}
	if k == 1 {
		return p, p.Validate()
	}
	q := p
	q.Set = fmt.Sprintf("%s x%g", p.Set, k)
	q.AI, q.MinRate = p.AI/k, p.MinRate/k
	if err := q.Validate(); err != nil {
		return p, err
	}
	return q, nil
}

// Validate checks every HPCC parameter on its own; the algorithm also checks
// them against the line rate, the base RTT and Winit.
func (p HPCCParams) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("HPCC parameters %q: %s: %w", p.Set, fmt.Sprintf(format, args...), ErrBadParams)
	}
	switch {
	case p == HPCCParams{}:
		return fmt.Errorf("HPCC parameters not set (start from HPCCPreset: %s): %w",
			strings.Join(HPCCPresetNames(), ", "), ErrBadParams)
	case !(p.Eta > 0 && p.Eta <= 1):
		return bad("eta = %v, want 0 < eta <= 1", p.Eta)
	case p.MaxStage < 0 || p.MaxStage > 1<<16:
		return bad("maxStage = %d, want 0 <= maxStage <= 65536", p.MaxStage)
	case !finitePos(p.AI):
		return bad("AI = %v bits/s, want finite and > 0", p.AI)
	case !finitePos(p.MinRate):
		return bad("minRate = %v bits/s, want finite and > 0", p.MinRate)
	}
	return nil
}

// resolveHPCC validates c for "hpcc".
func (c Config) resolveHPCC() (resolved, error) {
	r, err := c.resolve()
	if err != nil {
		return r, err
	}
	p := c.HPCC
	if err := p.Validate(); err != nil {
		return r, err
	}
	if p.MinRate > c.LineRate {
		return r, fmt.Errorf("HPCC parameters %q: minRate %v bits/s is above the line rate %v: %w", p.Set, p.MinRate, c.LineRate, ErrBadParams)
	}
	if r.StartRate < p.MinRate {
		return r, fmt.Errorf("HPCC parameters %q: start rate %v bits/s is below minRate %v: %w", p.Set, r.StartRate, p.MinRate, ErrBadParams)
	}
	if w := p.MinRate / 8 * r.BaseRTT.Seconds(); w > float64(r.winit) {
		return r, fmt.Errorf("HPCC parameters %q: the smallest window minRate*T = %v bytes is above Winit %d: %w", p.Set, w, r.winit, ErrBadParams)
	}
	return r, nil
}

// LSTMPIDParams are the parameters of the LSTM+PID algorithms (spec 03; seed
// 002). The variant (predictor, RTTch, window) comes from the registry name.
type LSTMPIDParams struct {
	// Set names the preset these values came from, or "custom" (a label).
	Set string
	// Target is RTTtarget, the RTT the PID steers to (thesis: 5 us).
	Target time.Duration
	// Smoothing is s of S_t = s*R_t + (1-s)*S_{t-1}, in (0, 1]; 0 = the
	// model's (the weights file records it), or 0.2 without a model.
	Smoothing float64
	// Kp, Ki, Kd are the PID gains (negative Kp and Ki: an RTT above the
	// target lowers the rate).
	Kp, Ki, Kd float64
	// DMin and DMax clamp the PID output d (thesis: -0.6 and 0.5).
	DMin, DMax float64
	// IntegralSamples is the window of the Ki term's mean of e: 0 = every
	// sample of the flow (the thesis's (1/T) * integral of e dt), n > 0 = the
	// last n samples.
	IntegralSamples int
	// MinRate is the floor of the rate, bits/s (the HPCC simulator's 1 Gb/s).
	MinRate float64
	// RTTchRun is the number of samples in a row on one side of the target
	// that moves it ("lstm-pid-rttch*"; spec 03: 6).
	RTTchRun int
	// Model is the RTT predictor; nil = the committed trained model
	// (DefaultLSTMModel). Unused by "pid".
	Model *lstm.Model
	// Learner, if set, trains the gains online (and its gains are used
	// instead of Kp, Ki, Kd); see PIDLearner.
	Learner *PIDLearner
}

// lstmpidPresets: "thesis" is seed 002's controller with its trained gains
// for RTTtarget = 5 us; "thesis-initial" the same with the gains the thesis
// started its online training from (its untrained PID).
var lstmpidPresets = map[string]LSTMPIDParams{
	"thesis": {
		Set: "thesis", Target: 5 * time.Microsecond, Smoothing: 0,
		Kp: -0.358, Ki: -0.060, Kd: 0.040, DMin: -0.6, DMax: 0.5,
		IntegralSamples: 0, MinRate: 1e9, RTTchRun: 6,
	},
	"thesis-initial": {
		Set: "thesis-initial", Target: 5 * time.Microsecond, Smoothing: 0,
		Kp: -0.2, Ki: -0.05, Kd: 0.1, DMin: -0.6, DMax: 0.5,
		IntegralSamples: 0, MinRate: 1e9, RTTchRun: 6,
	},
}

// trainedSet names the LSTM+PID set whose gains are the ones fastcnp-train
// trained online with the committed model (the weights file's pid_gains).
const trainedSet = "trained"

// trainedLSTMPID returns the "trained" set: "thesis" with the committed weights
// file's trained gains and their target; false when the file has none.
func trainedLSTMPID() (LSTMPIDParams, bool) {
	_, f, err := DefaultLSTMModel()
	if err != nil || f.PIDGains == nil {
		return LSTMPIDParams{}, false
	}
	g := f.PIDGains
	p := lstmpidPresets["thesis"]
	p.Set, p.Kp, p.Ki, p.Kd = trainedSet, g.Kp, g.Ki, g.Kd
	p.Target = time.Duration(g.TargetNs)
	return p, true
}

// LSTMPIDPresetNames returns the names LSTMPIDPreset accepts, sorted.
func LSTMPIDPresetNames() []string {
	names := presetNames(lstmpidPresets)
	if _, ok := trainedLSTMPID(); ok {
		names = append(names, trainedSet)
		slices.Sort(names)
	}
	return names
}

// LSTMPIDPreset returns the named LSTM+PID parameter set: "thesis",
// "thesis-initial", or "trained" (the gains trained with the committed model,
// when its file has them).
func LSTMPIDPreset(name string) (LSTMPIDParams, error) {
	if name == trainedSet {
		if p, ok := trainedLSTMPID(); ok {
			return p, nil
		}
	}
	return lookupPreset("LSTM+PID", lstmpidPresets, name)
}

// Scaled returns the LSTM+PID parameters for a network k times slower (see
// DCQCNParams.Scaled): the target x k, minRate / k; the gains, clamps and
// counts unchanged (the features and the PID error are ratios). k must be
// finite and in [1/MaxScale, MaxScale]; the result is validated.
func (p LSTMPIDParams) Scaled(k float64) (LSTMPIDParams, error) {
	if !(k >= 1/MaxScale && k <= MaxScale) {
		return p, fmt.Errorf("LSTM+PID scale %v, want %v <= k <= %v: %w", k, 1/MaxScale, MaxScale, ErrBadParams)
	}
	if k == 1 {
		return p, p.Validate()
	}
	q := p
	q.Set = fmt.Sprintf("%s x%g", p.Set, k)
	q.Target = max(time.Duration(math.Round(float64(p.Target)*k)), 1)
	q.MinRate = p.MinRate / k
	if err := q.Validate(); err != nil {
		return p, err
	}
	return q, nil
}

// Validate checks every LSTM+PID parameter on its own.
func (p LSTMPIDParams) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("LSTM+PID parameters %q: %s: %w", p.Set, fmt.Sprintf(format, args...), ErrBadParams)
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case p.Target == 0 && p.MinRate == 0 && p.Kp == 0 && p.Ki == 0 && p.Kd == 0:
		return fmt.Errorf("LSTM+PID parameters not set (start from LSTMPIDPreset: %s): %w",
			strings.Join(LSTMPIDPresetNames(), ", "), ErrBadParams)
	case p.Target <= 0 || p.Target > maxPeriod:
		return bad("target = %v, want 0 < target <= %v", p.Target, maxPeriod)
	case p.Smoothing != 0 && !(p.Smoothing > 0 && p.Smoothing <= 1):
		return bad("smoothing = %v, want 0 < s <= 1 (0 = the model's)", p.Smoothing)
	case !finite(p.Kp) || !finite(p.Ki) || !finite(p.Kd):
		return bad("gains [%v %v %v] must be finite", p.Kp, p.Ki, p.Kd)
	case !(p.DMin > -1 && p.DMin <= 0) || !(p.DMax >= 0 && p.DMax <= 10):
		return bad("clamp [%v, %v], want -1 < DMin <= 0 <= DMax <= 10", p.DMin, p.DMax)
	case p.IntegralSamples < 0 || p.IntegralSamples > 1<<20:
		return bad("integral window = %d samples, want 0 <= n <= %d", p.IntegralSamples, 1<<20)
	case !finitePos(p.MinRate):
		return bad("minRate = %v bits/s, want finite and > 0", p.MinRate)
	case p.RTTchRun < 1 || p.RTTchRun > 1<<16:
		return bad("RTTch run = %d, want 1 <= n <= 65536", p.RTTchRun)
	}
	if p.Model != nil {
		if err := p.Model.Validate(); err != nil {
			return bad("model: %v", err)
		}
	}
	if l := p.Learner; l != nil {
		if !finite(l.K[0]) || !finite(l.K[1]) || !finite(l.K[2]) || !finitePos(l.LR) || !finitePos(l.Clip) || !finite(l.Beta) {
			return bad("learner gains %v, lr %v, clip %v, beta %v: want finite gains and beta, lr and clip > 0", l.K, l.LR, l.Clip, l.Beta)
		}
	}
	return nil
}

// resolveLSTMPID validates c for the LSTM+PID algorithms.
func (c Config) resolveLSTMPID() (resolved, error) {
	r, err := c.resolve()
	if err != nil {
		return r, err
	}
	p := c.LSTMPID
	if err := p.Validate(); err != nil {
		return r, err
	}
	if p.MinRate > c.LineRate {
		return r, fmt.Errorf("LSTM+PID parameters %q: minRate %v bits/s is above the line rate %v: %w", p.Set, p.MinRate, c.LineRate, ErrBadParams)
	}
	if r.StartRate < p.MinRate {
		return r, fmt.Errorf("LSTM+PID parameters %q: start rate %v bits/s is below minRate %v: %w", p.Set, r.StartRate, p.MinRate, ErrBadParams)
	}
	return r, nil
}
