package scenario

import (
	"fmt"
	"slices"
	"time"

	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/sim/hpcc"
	"github.com/fastcnp/fastcnp/sim/network"
)

// FromHPCC builds a run from the HPCC simulator's inputs: its topology, its flows
// and its parameter file, with the keys' meanings (sim/hpcc.Config):
//   - the mode: FASTCNP_MODE, else CC_MODE (1 dcqcn, 3 hpcc, 7 timely, 8 dctcp);
//     modes the simulator does not run (HPCC-PINT) are refused; the other
//     algorithms run their mode's parameter set (network.Mode);
//   - PARAM_SET names the host/cc DCQCN set (default hpcc-sim); ALPHA_RESUME_INTERVAL,
//     RATE_DECREASE_INTERVAL, RP_TIMER, EWMA_GAIN, FAST_RECOVERY_TIMES, RATE_AI,
//     RATE_HAI, MIN_RATE and CLAMP_TARGET_RATE (0: KeepTarget, the simulator's
//     default), when the file sets them, override it;
//   - KMIN_MAP, KMAX_MAP, PMAX_MAP: RED per link rate (every link's rate must be
//     there, as the simulator requires);
//   - in mode hpcc, U_TARGET (eta), MI_THRESH (maxStage), RATE_AI and MIN_RATE,
//     when the file sets them, override HPCC's set (run.py writes MI_THRESH 0,
//     scratch/third.cc's default and the hpcc-sim set are 5);
//   - BUFFER_SIZE (MiB per switch), ENABLE_PFC, PACKET_PAYLOAD_SIZE, L2_ACK_INTERVAL
//     (an ACK every N packets; 0 or 1: every packet), SIMULATOR_STOP_TIME (the end
//     of the run; the flows usually finish first).
//
// Keys the model has no counterpart for are refused when they would change the
// run (ENABLE_QCN 0, USE_DYNAMIC_PFC_THRESHOLD 0, ERROR_RATE_PER_LINK > 0,
// LINK_DOWN); the rest (trace and monitor files, HPCC's window keys, PAUSE_TIME:
// the switches pause for 0xFFFF quanta and refresh) are ignored, as docs/simulator.md
// says.
func FromHPCC(c *hpcc.Config, t *hpcc.Topology, flows []hpcc.Flow) (network.Config, error) {
	var out network.Config
	mode := network.Mode(c.ModeName())
	if !slices.Contains(network.AllModes(), mode) {
		return out, fmt.Errorf("parameters: mode %q (%s) is not run by the simulator (modes: %v)", c.ModeName(), where(c, "FASTCNP_MODE", "CC_MODE"), network.AllModes())
	}
	switch {
	case !c.EnableQCN:
		return out, fmt.Errorf("parameters: ENABLE_QCN 0 (%s): the switches always mark in their mode", c.Where("ENABLE_QCN"))
	case !c.UseDynamicPFCThreshold:
		return out, fmt.Errorf("parameters: USE_DYNAMIC_PFC_THRESHOLD 0 (%s): only the dynamic threshold is modelled", c.Where("USE_DYNAMIC_PFC_THRESHOLD"))
	case c.ErrorRatePerLink != 0:
		return out, fmt.Errorf("parameters: ERROR_RATE_PER_LINK %v (%s): random losses are not modelled", c.ErrorRatePerLink, c.Where("ERROR_RATE_PER_LINK"))
	case c.LinkDown != [3]uint64{}:
		return out, fmt.Errorf("parameters: LINK_DOWN (%s): link failures are not modelled", c.Where("LINK_DOWN"))
	}
	sw := network.DefaultSwitchParams()
	sw.BufferBytes = int64(c.BufferBytes())
	sw.PFC = c.EnablePFC
	if len(c.KMinKB)+len(c.KMaxKB)+len(c.PMax) > 0 {
		sw.REDByRate = map[int64]network.RED{}
		for _, l := range t.Links {
			r := uint64(l.RateBps)
			kmin, kmax, pmax, ok := c.ECN(r)
			if !ok {
				return out, fmt.Errorf("parameters: KMIN_MAP, KMAX_MAP and PMAX_MAP must all give %d b/s (the rate of link %d-%d)", r, l.A, l.B)
			}
			sw.REDByRate[int64(r)] = network.RED{KminBytes: int64(kmin), KmaxBytes: int64(kmax), Pmax: pmax}
		}
	}
	set := c.ParamSet
	if set == "" {
		set = "hpcc-sim"
	}
	p, err := cc.DCQCNPreset(set)
	if err != nil {
		return out, fmt.Errorf("parameters: PARAM_SET (%s): %w", c.Where("PARAM_SET"), err)
	}
	custom := false
	us := func(v float64) time.Duration { return time.Duration(v * 1e3) }
	for _, k := range []struct {
		key string
		set func()
	}{
		{"ALPHA_RESUME_INTERVAL", func() { p.AlphaPeriod = us(c.AlphaResumeInterval) }},
		{"RATE_DECREASE_INTERVAL", func() { p.RateReducePeriod = us(c.RateDecreaseInterval) }},
		{"RP_TIMER", func() { p.RPGTimeReset = us(c.RPTimer) }},
		{"EWMA_GAIN", func() { p.G = c.EWMAGain }},
		{"FAST_RECOVERY_TIMES", func() { p.F = c.FastRecoveryTimes }},
		{"RATE_AI", func() { p.AI = float64(c.RateAIBps) }},
		{"RATE_HAI", func() { p.HAI = float64(c.RateHAIBps) }},
		{"MIN_RATE", func() { p.MinRate = float64(c.MinRateBps) }},
		{"CLAMP_TARGET_RATE", func() { p.KeepTarget = !c.ClampTargetRate }},
	} {
		if c.Where(k.key) != "" {
			k.set()
			custom = true
		}
	}
	if custom {
		p.Set = set + " (parameter file)"
		if err := p.Validate(); err != nil {
			return out, fmt.Errorf("parameters: DCQCN keys: %w", err)
		}
	}
	ack := max(c.L2AckInterval, 1)
	out = network.Config{Topo: t, Flows: flows, Mode: mode, DCQCNSet: set, CNPInterval: -1, PayloadBytes: c.PayloadBytes,
		AckEvery: ack, Switch: sw, Seed: 1, UntilNs: int64(c.StopTimeS * 1e9)}
	if custom {
		out.DCQCN = p
	}
	if mode == network.ModeHPCC {
		tune, err := hpccTuning(c)
		if err != nil {
			return network.Config{}, err
		}
		out.Tune = tune
	}
	return out, nil
}

// hpccTuning returns the changes the file's HPCC keys make to the hpcc-sim set,
// nil if it sets none.
func hpccTuning(c *hpcc.Config) (func(*cc.Config), error) {
	h, err := cc.HPCCPreset("hpcc-sim")
	if err != nil {
		return nil, err
	}
	custom := false
	for _, k := range []struct {
		key string
		set func()
	}{
		{"U_TARGET", func() { h.Eta = c.UTarget }},
		{"MI_THRESH", func() { h.MaxStage = c.MIThresh }},
		{"RATE_AI", func() { h.AI = float64(c.RateAIBps) }},
		{"MIN_RATE", func() { h.MinRate = float64(c.MinRateBps) }},
	} {
		if c.Where(k.key) != "" {
			k.set()
			custom = true
		}
	}
	if !custom {
		return nil, nil
	}
	h.Set = "hpcc-sim (parameter file)"
	if err := h.Validate(); err != nil {
		return nil, fmt.Errorf("parameters: HPCC keys: %w", err)
	}
	return func(cfg *cc.Config) { cfg.HPCC = h }, nil
}

func where(c *hpcc.Config, keys ...string) string {
	for _, k := range keys {
		if w := c.Where(k); w != "" {
			return k + " at " + w
		}
	}
	return "default"
}
