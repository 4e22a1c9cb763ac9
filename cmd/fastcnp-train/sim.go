package main

import (
	"fmt"

	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/sim/network"
	"github.com/fastcnp/fastcnp/sim/scenario"
)

// simOptions choose the simulator runs that make the traces and train the gains:
// spec 06 S2 (seed 002's 20-to-1 incast at 100 Gb/s) in fastcnp-sim.
type simOptions struct {
	scale   int    // flow sizes / scale (1: seed 002's 200, 200, 150, 17 x 5 MB)
	seed    uint64 // the switches' RED seed
	pidRuns int    // S2 runs of "pid" that train the PID gains online (0: none)
}

// Seed 002's set-up (4.1, 4.4): LSTM+PID starts at 10 Gb/s, the others at line rate.
const (
	simLineBps    = 100e9
	pidStartBps   = 10e9
	timelySet     = "hpcc-sim"
	pidInitialSet = "thesis-initial"
)

// simRun runs S2 with every sender on algorithm alg (its parameter set set by
// tune) and the RTT samples recorded.
func simRun(o simOptions, alg string, tune func(*cc.Config)) (*network.Result, error) {
	sc, err := scenario.S2(scenario.S2Options{Scale: o.scale, HostBps: simLineBps, DelayNs: 1000})
	if err != nil {
		return nil, err
	}
	p := scenario.DefaultParams()
	p.RTTSamples, p.Seed = true, o.seed
	// The switches as for DCQCN (RED marking, which an RTT-based sender ignores),
	// as the HPCC simulator keeps ECN on for TIMELY.
	cfg := sc.Config(network.ModeDCQCN, p)
	cfg.Algorithm, cfg.Tune = alg, tune
	n, err := network.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("simulator: %s: %w", alg, err)
	}
	r, err := n.Run(nil)
	if err != nil {
		return nil, fmt.Errorf("simulator: %s: %w", alg, err)
	}
	return r, nil
}

// tuneTIMELY gives TIMELY the HPCC simulator's parameter set at line rate.
func tuneTIMELY(c *cc.Config) {
	p, _ := cc.TIMELYPreset(timelySet)
	c.TIMELY = p
}

// tunePID gives "pid" seed 002's initial gains, a 10 Gb/s start, and learner l
// (nil: fixed gains).
func tunePID(l *cc.PIDLearner) func(*cc.Config) {
	return func(c *cc.Config) {
		p, _ := cc.LSTMPIDPreset(pidInitialSet)
		p.Learner = l
		c.LSTMPID, c.StartRate = p, pidStartBps
	}
}

// simTraces returns the RTT series (seconds) of every flow of the TIMELY run and
// of the untrained-PID run, seed 002's two sources of training data.
func simTraces(o simOptions) ([][]float64, error) {
	var flows [][]float64
	for _, run := range []struct {
		alg  string
		tune func(*cc.Config)
	}{{"timely", tuneTIMELY}, {"pid", tunePID(nil)}} {
		r, err := simRun(o, run.alg, run.tune)
		if err != nil {
			return nil, err
		}
		for _, f := range r.Flows {
			s := make([]float64, len(f.RTTs))
			for i, x := range f.RTTs {
				s[i] = float64(x.RTTNs) / 1e9
			}
			flows = append(flows, s)
		}
	}
	return flows, nil
}

// simGains trains the PID gains online (seed 002 3.5.3): o.pidRuns runs of S2
// with "pid", every flow of every run sharing one learner that starts from the
// initial gains. It returns the learner.
func simGains(o simOptions) (*cc.PIDLearner, error) {
	p, _ := cc.LSTMPIDPreset(pidInitialSet)
	l := cc.NewPIDLearner([3]float64{p.Kp, p.Ki, p.Kd})
	for i := 0; i < o.pidRuns; i++ {
		if _, err := simRun(o, "pid", tunePID(l)); err != nil {
			return nil, err
		}
	}
	return l, nil
}
