package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/sim/network"
	"github.com/fastcnp/fastcnp/sim/scenario"
)

func init() {
	registerCommand(&command{
		name: "cc", order: 25,
		summary: "S2 (seed 002 Table 6) with the senders on other host/cc algorithms (timely, dctcp, hpcc, pid, lstm-pid*), next to the modes",
		usage:   "[flags]",
		examples: `  # seed 002 Table 6's rows with DCQCN and fastcnp beside them
  fastcnp-sim cc --scenario s2 --algo hpcc,timely,dctcp,lstm-pid --mode dcqcn,fastcnp
  # the same, a tenth of the sizes, into a directory
  fastcnp-sim cc --scenario s2-scaled --out /tmp/s2cc`,
		flags: ccFlags,
	})
}

// ccRun is one column: an algorithm on the switches of mode dcqcn (RED; DCTCP's
// K; port mode int for HPCC), or a mode's own DCQCN variant (algo "").
type ccRun struct {
	label string
	mode  network.Mode
	algo  string
}

// Seed 002 4.4.1: LSTM+PID starts at 10 Gb/s, the others at line rate.
const ccLSTMPIDStartBps = 10e9

// ccDCTCPK is DCTCP's marking threshold at 100 Gb/s (the HPCC simulator's
// run.py --cc dctcp: KMIN_MAP = KMAX_MAP = 30*bw/10 KB, PMAX_MAP 1).
const ccDCTCPK = 300_000

// ccTune sets an algorithm's parameter set: TIMELY, DCTCP and HPCC hpcc-sim
// (the HPCC simulator's, which seed 002 ran); the LSTM+PID family set lstmSet
// from 10 Gb/s.
func ccTune(algo, lstmSet string) func(*cc.Config) {
	return func(c *cc.Config) {
		switch algo {
		case "timely":
			c.TIMELY, _ = cc.TIMELYPreset("hpcc-sim")
		case "dctcp":
			c.DCTCP, _ = cc.DCTCPPreset("hpcc-sim")
		case "hpcc":
			c.HPCC, _ = cc.HPCCPreset("hpcc-sim")
		case "pid", "lstm-pid", "lstm-pid-rttch", "lstm-pid-rttch-win":
			c.LSTMPID, _ = cc.LSTMPIDPreset(lstmSet)
			c.StartRate = ccLSTMPIDStartBps
		}
	}
}

func ccFlags(fs *flag.FlagSet) func(e *env, args []string) error {
	scen := fs.String("scenario", "s2", "s2 (seed 002's incast) or s2-scaled (sizes / 10)")
	algos := fs.String("algo", "hpcc,timely,dctcp,pid,lstm-pid,lstm-pid-rttch,lstm-pid-rttch-win", "comma-separated host/cc algorithms")
	modes := fs.String("mode", "dcqcn,fastcnp", "modes run beside them (their own DCQCN variants; \"\" for none)")
	lstmSet := fs.String("lstm-params", "trained", "LSTM+PID parameter set (host/cc): trained, thesis, thesis-initial")
	out := fs.String("out", "", "directory for table.md and metrics.json (none: print only)")
	jobs := fs.Int("jobs", 2, "runs at once")
	return func(e *env, args []string) error {
		if len(args) > 0 {
			return usagef("unexpected argument %q", args[0])
		}
		if *scen != "s2" && *scen != "s2-scaled" {
			return usagef("--scenario %q: s2 or s2-scaled", *scen)
		}
		if _, err := cc.LSTMPIDPreset(*lstmSet); err != nil {
			return usagef("--lstm-params: %v", err)
		}
		if *jobs < 1 {
			return usagef("--jobs %d", *jobs)
		}
		sc, err := scenarioByName(*scen)
		if err != nil {
			return err
		}
		var runs []ccRun
		if *modes != "" {
			ms, err := parseModes(*modes)
			if err != nil {
				return usagef("--mode: %v", strings.TrimPrefix(err.Error(), "usage: "))
			}
			for _, m := range ms {
				runs = append(runs, ccRun{label: string(m), mode: m})
			}
		}
		for _, a := range strings.Split(*algos, ",") {
			if a = strings.TrimSpace(a); a == "" {
				continue
			}
			if !network.AlgorithmModelled(a) {
				return usagef("--algo %q: not a host/cc algorithm (%s)", a, strings.Join(cc.Names(), ", "))
			}
			runs = append(runs, ccRun{label: a, mode: network.ModeDCQCN, algo: a})
		}
		ms, footer, err := runCC(sc, runs, *lstmSet, *jobs)
		if err != nil {
			return err
		}
		t := scenario.S2Table(ms)
		md := fmt.Sprintf("%s\n\n%s\n%s", sc.Description, t.Markdown(), footer)
		fmt.Fprint(e.stdout, md)
		if *out == "" {
			return nil
		}
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(*out, "table.md"), []byte(md), 0o644); err != nil {
			return err
		}
		b, err := json.MarshalIndent(ms, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(*out, "metrics.json"), append(b, '\n'), 0o644)
	}
}

// runCC runs the columns of the table, jobs at a time, and measures each as
// S2; footer has a line per run (flows finished, events, wall time).
func runCC(sc *scenario.Scenario, runs []ccRun, lstmSet string, jobs int) ([]scenario.S2Metrics, string, error) {
	p := scenario.DefaultParams()
	p.RTTSamples = true
	ms := make([]scenario.S2Metrics, len(runs))
	lines := make([]string, len(runs))
	errs := make([]error, len(runs))
	sem := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	for i, r := range runs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			cfg := sc.Config(r.mode, p)
			if r.algo != "" {
				cfg.Algorithm, cfg.Tune = r.algo, ccTune(r.algo, lstmSet)
			}
			if r.algo == "dctcp" {
				cfg.Switch.KminBytes100G, cfg.Switch.KmaxBytes100G, cfg.Switch.Pmax = ccDCTCPK, ccDCTCPK, 1
			}
			start := time.Now()
			n, err := network.New(cfg)
			if err == nil {
				var res *network.Result
				if res, err = n.Run(nil); err == nil {
					ms[i] = scenario.MeasureS2(sc, res, p.PayloadBytes)
					ms[i].Mode = r.label
					wall := time.Since(start).Seconds()
					lines[i] = fmt.Sprintf("%s: %d of %d flows finished, %.3f ms simulated, %d events, %.1f s wall\n",
						r.label, res.Finished, len(res.Flows), float64(res.EndNs)/1e6, res.Events, wall)
				}
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, "", fmt.Errorf("%s %s: %w", sc.Name, runs[i].label, err)
		}
	}
	return ms, strings.Join(lines, ""), nil
}
