package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/sim/engine"
	"github.com/fastcnp/fastcnp/sim/hpcc"
	"github.com/fastcnp/fastcnp/sim/network"
	"github.com/fastcnp/fastcnp/sim/scenario"
	"github.com/fastcnp/fastcnp/sim/sweep"
)

func init() {
	register("run", "run scenarios or HPCC-simulator input files in one or more modes", runCmd)
	register("demo", "S1, S1 with commodity senders and S2 (scaled) in every mode, side by side (make sim-demo)", demoCmd)
	simulatePoint = runPoint
	checkMode = func(m string) error {
		if !slices.Contains(network.AllModes(), network.Mode(m)) {
			return fmt.Errorf("mode %q is not run by the simulator (modes: %v)", m, network.AllModes())
		}
		return nil
	}
}

// runPoint runs one sweep point: the sweep's parameter file with the point's
// mode, on the point's flows.
func runPoint(ctx context.Context, in pointInput) (sweep.Result, error) {
	cfg, err := scenario.FromHPCC(in.Config, in.Topology, in.Flows)
	if err != nil {
		return sweep.Result{}, err
	}
	n, err := network.New(cfg)
	if err != nil {
		return sweep.Result{}, err
	}
	r, err := n.Run(func(now int64, events uint64) {
		if in.Progress != nil {
			in.Progress(now, events)
		}
		if ctx.Err() != nil {
			n.Stop()
		}
	})
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return sweep.Result{}, err
	}
	return sweep.Result{FCT: r.FCTs(), Metrics: metricsOf(r)}, nil
}

// metricsOf is a run's scalar results, by name (sweep tabulates them).
func metricsOf(r *network.Result) map[string]float64 {
	t := scenario.TotalsOf(r)
	return map[string]float64{
		"flows": float64(len(r.Flows)), "finished": float64(r.Finished), "unfinished": float64(len(r.Flows) - r.Finished),
		"end_ms": float64(r.EndNs) / 1e6, "events": float64(r.Events),
		"pfc_xoff": float64(t.PFCXoff), "pfc_xon": float64(t.PFCXon), "pfc_refresh": float64(t.PFCRefresh),
		"pfc_rx_hosts": float64(t.PFCRxHosts), "paused_us": float64(t.PausedNs) / 1e3, "host_paused_us": float64(t.HostPausedNs) / 1e3,
		"ecn_marks": float64(t.ECNMarks), "switch_cnps": float64(t.SwitchCNPs),
		"np_cnps": float64(t.NPCNPs), "drops": float64(t.Drops), "lossless_drops": float64(t.LosslessDrops),
		"peak_queue_kb": float64(t.PeakQueueBytes) / 1e3, "pauses": float64(t.Pauses), "ports_paused": float64(t.PortsPaused),
		"resume_not_congested": float64(t.ResumeNotCongested), "resume_undetermined": float64(t.ResumeUndetermined),
		"resume_congested": float64(t.ResumeCongested), "check_drained": float64(t.CheckDrained),
		"check_congested": float64(t.CheckCongested), "ports_undetermined": float64(t.PortsUndetermined),
		"undetermined_us": float64(t.UndeterminedNs) / 1e3,
	}
}

const runHelp = `usage: fastcnp-sim run (--scenario NAME | --topo FILE --flows FILE [--config FILE]) [flags]

Runs a scenario of spec 06, or the HPCC ns-3 simulator's topology and flow files,
in each mode given, independent runs in parallel on all cores; prints the modes
side by side and, with --out, writes per run DIR/NAME/MODE/: fct.txt, pfc.txt,
qlen.txt (queue samples), rtt.txt ("flow time_ns rtt_ns", with --rtt) and
result.json.

Scenarios: s1 (victim flow under PFC, 100 Gb/s), s1-legacy (the same with commodity
senders: no announcement, plain DCQCN), s2 (incast 20:1, seed 002's sizes), s2-scaled
(sizes / 10), s2-8 (incast 8:1: 200, 200, 150 and 5 x 5 MB, the testbed's S2 shape).

Examples:
  fastcnp-sim run --scenario s1 --mode all
  fastcnp-sim run --scenario s2 --mode dcqcn,fastcnp --rtt --out /tmp/s2
  fastcnp-sim run --topo sim/data/hpcc/fat.txt --flows flows.txt --mode fastcnp --out /tmp/fat

Flags:
`

// runOpts is the parsed command line of run.
type runOpts struct {
	scenarios  []string
	topo       string
	flows      string
	config     string
	file       *hpcc.Config // the parameter file, parsed
	modes      []network.Mode
	params     scenario.Params
	untilNs    int64
	out        string
	jobs       int
	progress   bool
	cpuProfile string
	memProfile string
	hpccMMU    bool
}

func parseRun(args []string, stderr io.Writer) (runOpts, error) {
	var o runOpts
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, runHelp)
		fs.PrintDefaults()
	}
	scen := fs.String("scenario", "", "scenario(s), comma-separated: s1, s1-legacy, s2, s2-scaled, s2-8")
	fs.StringVar(&o.topo, "topo", "", "HPCC topology file (with --flows)")
	fs.StringVar(&o.flows, "flows", "", "HPCC flow file (with --topo)")
	fs.StringVar(&o.config, "config", "", "HPCC parameter file (with --topo): its CC_MODE/FASTCNP_MODE, RED maps, buffer, PFC, payload, ACK interval and DCQCN keys replace the flags (docs/simulator.md); --mode still picks the modes")
	modes := fs.String("mode", "all", "modes, comma-separated: dcqcn, fastcnp, fastcnp-no-pfc-state, timely, dctcp, hpcc, lstm-pid, lstm-pid-rttch, lstm-pid-rttch-win; all (the first three) or every")
	o.params = scenario.DefaultParams()
	fs.StringVar(&o.params.DCQCNSet, "dcqcn-params", o.params.DCQCNSet, "DCQCN parameter set (host/cc): hpcc-sim, paper2015, nvidia-cx")
	cnp := fs.Duration("cnp-interval", -1, "override the NP's cnpInterval of the parameter set (negative: keep it)")
	rule := fs.String("window-rule", "aimd", "the fastcnp senders' window rule (host/cc): aimd or spec01")
	fs.IntVar(&o.params.PayloadBytes, "payload", o.params.PayloadBytes, "payload bytes of a full packet")
	fs.IntVar(&o.params.AckEvery, "ack-every", o.params.AckEvery, "the sender asks for an ACK every N packets")
	fs.Uint64Var(&o.params.Seed, "seed", o.params.Seed, "seed of the switches' RED random numbers")
	fs.StringVar(&o.params.Queue, "queue", engine.QueueHeap, "event queue: heap or calendar (same results)")
	fs.BoolVar(&o.params.RTTSamples, "rtt", false, "record every flow's RTT samples (spec 03 sampling) in rtt.txt")
	fs.BoolVar(&o.hpccMMU, "hpcc-mmu", false, "the switches' PFC as the HPCC simulator's MMU: XOFF factor 1/8 at the hosts' rate, doubled per doubling of an ingress port's rate (1/2 at 400G under 100G hosts), headroom 3 x rate x delay")
	sample := fs.Duration("sample", 0, "sample switch queues and flow progress this often (0: not at all)")
	until := fs.Duration("until", 0, "stop at this virtual time (0: when every flow has finished)")
	fs.StringVar(&o.out, "out", "", "directory for the output files (none: print the table only)")
	fs.IntVar(&o.jobs, "jobs", runtime.GOMAXPROCS(0), "runs at once")
	fs.BoolVar(&o.progress, "progress", true, "report progress on stderr")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the runs to this file (go tool pprof)")
	fs.StringVar(&o.memProfile, "memprofile", "", "write a heap profile (allocations of the runs) to this file at the end (go tool pprof -sample_index=alloc_space)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	o.params.CNPInterval = *cnp
	o.params.WindowRule = cc.WindowRule(*rule)
	if !slices.Contains(cc.WindowRules(), o.params.WindowRule) {
		return o, fmt.Errorf("%w: --window-rule %q (known: %v)", errUsage, *rule, cc.WindowRules())
	}
	o.params.SampleNs = int64(*sample)
	o.untilNs = int64(*until)
	if *scen != "" {
		o.scenarios = strings.Split(*scen, ",")
	}
	switch {
	case len(o.scenarios) > 0 && (o.topo != "" || o.flows != ""):
		return o, fmt.Errorf("%w: --scenario or --topo/--flows, not both", errUsage)
	case len(o.scenarios) == 0 && (o.topo == "" || o.flows == ""):
		return o, fmt.Errorf("%w: give --scenario, or --topo and --flows", errUsage)
	case o.config != "" && o.topo == "":
		return o, fmt.Errorf("%w: --config goes with --topo and --flows", errUsage)
	case o.jobs < 1:
		return o, fmt.Errorf("%w: --jobs %d", errUsage, o.jobs)
	}
	var err error
	if o.modes, err = parseModes(*modes); err != nil {
		return o, err
	}
	return o, nil
}

func parseModes(s string) ([]network.Mode, error) {
	switch s {
	case "all":
		return network.Modes(), nil
	case "every":
		return network.AllModes(), nil
	}
	var out []network.Mode
	for _, m := range strings.Split(s, ",") {
		if !slices.Contains(network.AllModes(), network.Mode(m)) {
			return nil, fmt.Errorf("%w: mode %q (known: %v; all: the first three; every)", errUsage, m, network.AllModes())
		}
		out = append(out, network.Mode(m))
	}
	return out, nil
}

// scenarioByName builds a named scenario.
func scenarioByName(name string) (*scenario.Scenario, error) {
	switch name {
	case "s1":
		return scenario.S1(scenario.DefaultS1())
	case "s1-legacy":
		o := scenario.DefaultS1()
		o.LegacySenders = true
		sc, err := scenario.S1(o)
		if sc != nil {
			sc.Name = "s1-legacy"
		}
		return sc, err
	case "s2":
		return scenario.S2(scenario.DefaultS2())
	case "s2-scaled":
		o := scenario.DefaultS2()
		o.Scale = 10
		sc, err := scenario.S2(o)
		if sc != nil {
			sc.Name = "s2-scaled"
		}
		return sc, err
	case "s2-8":
		o := scenario.DefaultS2()
		o.Senders = 8
		return scenario.S2(o)
	}
	return nil, fmt.Errorf("%w: scenario %q (known: s1, s1-legacy, s2, s2-scaled, s2-8)", errUsage, name)
}

// fileScenario wraps HPCC input files as a scenario.
func fileScenario(topoPath, flowPath string) (*scenario.Scenario, error) {
	tf, err := os.Open(topoPath)
	if err != nil {
		return nil, err
	}
	defer tf.Close()
	t, err := hpcc.ParseTopology(topoPath, tf)
	if err != nil {
		return nil, err
	}
	ff, err := os.Open(flowPath)
	if err != nil {
		return nil, err
	}
	defer ff.Close()
	flows, err := hpcc.ParseFlows(flowPath, ff)
	if err != nil {
		return nil, err
	}
	if err := hpcc.ValidateFlows(t, flows); err != nil {
		return nil, err
	}
	return &scenario.Scenario{Name: strings.TrimSuffix(filepath.Base(flowPath), filepath.Ext(flowPath)), Topo: t, Flows: flows,
		Victim: -1, Switch: network.DefaultSwitchParams(),
		Description: fmt.Sprintf("%s with %s: %d nodes, %d flows", topoPath, flowPath, t.Nodes, len(flows))}, nil
}

// job is one (scenario, mode) run.
type job struct {
	sc   *scenario.Scenario
	mode network.Mode
	cfg  network.Config
	res  *network.Result
	wall time.Duration
	err  error
}

// runJobs runs the jobs, at most n at once, reporting progress to stderr.
func runJobs(ctx context.Context, js []*job, n int, progress bool, stderr io.Writer) error {
	var mu sync.Mutex
	report := func(j *job, now int64, events uint64, start time.Time) {
		if !progress {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		el := time.Since(start)
		fmt.Fprintf(stderr, "\r%-10s %-22s %8.3f ms simulated, %6.1fM events, %5.1fs wall ", j.sc.Name, j.mode,
			float64(now)/1e6, float64(events)/1e6, el.Seconds())
	}
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for _, j := range js {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				j.err = ctx.Err()
				return
			}
			defer func() { <-sem }()
			start := time.Now()
			net, err := network.New(j.cfg)
			if err != nil {
				j.err = fmt.Errorf("%s %s: %w", j.sc.Name, j.mode, err)
				return
			}
			last := start
			j.res, j.err = net.Run(func(now int64, events uint64) {
				if time.Since(last) > 2*time.Second {
					last = time.Now()
					report(j, now, events, start)
				}
				if ctx.Err() != nil {
					net.Stop()
				}
			})
			j.wall = time.Since(start)
			if j.err == nil && ctx.Err() != nil {
				j.err = ctx.Err()
			}
		}()
	}
	wg.Wait()
	if progress {
		fmt.Fprint(stderr, "\r"+strings.Repeat(" ", 80)+"\r")
	}
	var errs []error
	for _, j := range js {
		if j.err != nil {
			errs = append(errs, j.err)
		}
	}
	return errors.Join(errs...)
}

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseRun(args, stderr)
	if err != nil {
		return err
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if o.memProfile != "" {
		defer func() {
			f, err := os.Create(o.memProfile)
			if err != nil {
				fmt.Fprintf(stderr, "memprofile: %v\n", err)
				return
			}
			defer f.Close()
			if err := pprof.WriteHeapProfile(f); err != nil {
				fmt.Fprintf(stderr, "memprofile: %v\n", err)
			}
		}()
	}
	var scs []*scenario.Scenario
	if o.topo != "" {
		sc, err := fileScenario(o.topo, o.flows)
		if err != nil {
			return err
		}
		scs = append(scs, sc)
	}
	if o.config != "" {
		f, err := os.Open(o.config)
		if err != nil {
			return err
		}
		o.file, err = hpcc.ParseConfig(o.config, f)
		f.Close()
		if err != nil {
			return err
		}
	}
	for _, name := range o.scenarios {
		sc, err := scenarioByName(name)
		if err != nil {
			return err
		}
		scs = append(scs, sc)
	}
	return runScenarios(ctx, scs, o, stdout, stderr)
}

// runScenarios runs every scenario in every mode, prints the tables and writes the
// files.
func runScenarios(ctx context.Context, scs []*scenario.Scenario, o runOpts, stdout, stderr io.Writer) error {
	p := o.params
	var js []*job
	for _, sc := range scs {
		if o.untilNs > 0 {
			sc.UntilNs = o.untilNs
		}
		if sc.MeasureFromNs > 0 && (p.SampleNs <= 0 || sc.MeasureFromNs%p.SampleNs != 0) {
			p.SampleNs = sc.MeasureFromNs / 10 // S1 measures from a sample
		}
		if strings.HasPrefix(sc.Name, "s2") {
			p.RTTSamples = true
		}
		for _, m := range o.modes {
			j := &job{sc: sc, mode: m, cfg: sc.Config(m, p)}
			if o.file != nil {
				c := o.file.Clone()
				c.Mode = string(m)
				cfg, err := scenario.FromHPCC(c, sc.Topo, sc.Flows)
				if err != nil {
					return fmt.Errorf("%s: %w", o.config, err)
				}
				cfg.Queue, cfg.RTTSamples, cfg.QueueSampleNs, cfg.RateSampleNs = p.Queue, p.RTTSamples, p.SampleNs, p.SampleNs
				cfg.WindowRule = p.WindowRule
				if o.untilNs > 0 {
					cfg.UntilNs = o.untilNs
				}
				j.cfg = cfg
			}
			if o.hpccMMU {
				j.cfg.Switch.AlphaByRate, j.cfg.Switch.HeadroomHPCC = true, true
			}
			js = append(js, j)
		}
	}
	start := time.Now()
	if err := runJobs(ctx, js, o.jobs, o.progress, stderr); err != nil {
		return err
	}
	var events uint64
	for _, sc := range scs {
		var runs []*job
		for _, j := range js {
			if j.sc == sc {
				runs = append(runs, j)
				events += j.res.Events
			}
		}
		if err := printTable(stdout, sc, runs, p); err != nil {
			return err
		}
		if o.out != "" {
			for _, j := range runs {
				if err := writeRun(filepath.Join(o.out, sc.Name, string(j.mode)), j); err != nil {
					return err
				}
			}
		}
	}
	fmt.Fprintf(stderr, "%d runs, %.1fM events, %.1f s wall on %d cores (load %s)\n", len(js), float64(events)/1e6,
		time.Since(start).Seconds(), o.jobs, loadAvg())
	return nil
}

// printTable prints the scenario's modes side by side.
func printTable(w io.Writer, sc *scenario.Scenario, runs []*job, p scenario.Params) error {
	fmt.Fprintf(w, "\n%s\n\n", sc.Description)
	switch {
	case strings.HasPrefix(sc.Name, "s1"):
		var ms []scenario.S1Metrics
		for _, j := range runs {
			m, err := scenario.MeasureS1(sc, j.res)
			if err != nil {
				return err
			}
			ms = append(ms, m)
		}
		t := scenario.S1Table(ms)
		fmt.Fprint(w, t.Markdown())
	case strings.HasPrefix(sc.Name, "s2"):
		var ms []scenario.S2Metrics
		for _, j := range runs {
			ms = append(ms, scenario.MeasureS2(sc, j.res, p.PayloadBytes))
		}
		t := scenario.S2Table(ms)
		fmt.Fprint(w, t.Markdown())
	default:
		var ms []scenario.S2Metrics
		for _, j := range runs {
			ms = append(ms, scenario.MeasureS2(sc, j.res, p.PayloadBytes))
		}
		t := scenario.S2Table(ms)
		fmt.Fprint(w, t.Markdown())
	}
	for _, j := range runs {
		fmt.Fprintf(w, "\n%s: %d of %d flows finished, %.3f ms simulated, %d events %v, %.1f s wall (%.2fM events/s)",
			j.mode, j.res.Finished, len(j.res.Flows), float64(j.res.EndNs)/1e6, j.res.Events, j.res.EventsByKind, j.wall.Seconds(),
			float64(j.res.Events)/j.wall.Seconds()/1e6)
	}
	fmt.Fprintln(w)
	return nil
}

// writeRun writes one run's files into dir.
func writeRun(dir string, j *job) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	r := j.res
	write := func(name string, fill func(w io.Writer) error) error {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := fill(f); err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", name, err)
		}
		return f.Close()
	}
	if err := write("fct.txt", func(w io.Writer) error { return hpcc.WriteFCT(w, r.FCTs()) }); err != nil {
		return err
	}
	if err := write("pfc.txt", func(w io.Writer) error { return hpcc.WritePFC(w, r.PFC) }); err != nil {
		return err
	}
	if len(r.QueueSamples) > 0 {
		if err := write("qlen.txt", func(w io.Writer) error { return hpcc.WriteQlenSamples(w, r.QueueSamples) }); err != nil {
			return err
		}
	}
	if err := write("rtt.txt", func(w io.Writer) error { return writeRTTs(w, r) }); err != nil {
		return err
	}
	return write("result.json", func(w io.Writer) error {
		// Nothing of the wall clock: the same run writes the same bytes.
		summary := struct {
			Scenario, Mode, Description string
			Totals                      scenario.Totals
			Classes                     [network.NumClasses]network.Conservation
			Flows                       []network.FlowResult
			Switches                    []network.SwitchResult
			Hosts                       []network.HostStats
			LosslessDrops               []network.LosslessDrop `json:",omitempty"`
		}{j.sc.Name, string(j.mode), j.sc.Description, scenario.TotalsOf(r), r.Classes, r.Flows, r.Switches, r.Hosts, r.LosslessDrops}
		for i := range summary.Flows {
			summary.Flows[i].RTTs = nil
		}
		e := json.NewEncoder(w)
		e.SetIndent("", " ")
		return e.Encode(summary)
	})
}

// writeRTTs writes "flow time_ns rtt_ns" lines (the trace format of
// cmd/fastcnp-train).
func writeRTTs(w io.Writer, r *network.Result) error {
	b := make([]byte, 0, 1<<16)
	for _, f := range r.Flows {
		for _, s := range f.RTTs {
			b = fmt.Appendf(b, "%d %d %d\n", f.ID, s.AtNs, s.RTTNs)
			if len(b) > 1<<15 {
				if _, err := w.Write(b); err != nil {
					return err
				}
				b = b[:0]
			}
		}
	}
	_, err := w.Write(b)
	return err
}

// loadAvg is the 1-minute load average, for the timings printed.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "unknown"
	}
	return f[0]
}

func demoCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "directory for the output files (none: print the tables only)")
	jobs := fs.Int("jobs", runtime.GOMAXPROCS(0), "runs at once")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: fastcnp-sim demo [--out DIR] [--jobs N]\n\nS1, S1 with commodity senders, and S2 scaled by 10, each in dcqcn, fastcnp and\nfastcnp-no-pfc-state, at 100 Gb/s; prints the modes side by side.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	o := runOpts{scenarios: []string{"s1", "s1-legacy", "s2-scaled"}, modes: network.Modes(), params: scenario.DefaultParams(),
		out: *out, jobs: *jobs, progress: true}
	var scs []*scenario.Scenario
	for _, name := range o.scenarios {
		sc, err := scenarioByName(name)
		if err != nil {
			return err
		}
		scs = append(scs, sc)
	}
	return runScenarios(ctx, scs, o, stdout, stderr)
}
