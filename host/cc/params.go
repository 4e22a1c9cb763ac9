package cc

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
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
