package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fastcnp/fastcnp/internal/progress"
	"github.com/fastcnp/fastcnp/sim/hpcc"
	"github.com/fastcnp/fastcnp/sim/sweep"
	"github.com/fastcnp/fastcnp/sim/traffic"
)

// pointInput is the simulation input of one sweep point.
type pointInput struct {
	Point    sweep.Point
	Topology *hpcc.Topology // shared by all points: read only
	Config   *hpcc.Config   // the sweep's parameter file, FASTCNP_MODE set to the point's mode
	Flows    []hpcc.Flow    // the point's workload at its load and seed, the same for every mode
	// Progress, if set, is called now and then with the virtual time and
	// the events so far.
	Progress func(nowNs int64, events uint64)
}

// The simulator as sweep uses it. The engine's command (run.go) sets these;
// sweep works without knowing the engine.
var (
	// simulatePoint runs one point; it is called from several goroutines.
	simulatePoint func(ctx context.Context, in pointInput) (sweep.Result, error)
	// checkMode, if set, rejects an unknown mode before a sweep starts.
	checkMode func(mode string) error
)

func init() {
	registerCommand(&command{
		name: "sweep", order: 40,
		summary: "simulate modes x workloads x loads x seeds, all cores in parallel, optionally one shard of it; one result file per point",
		usage:   "--modes M,.. --workload NAME=CDF [--workload ..] --loads L,.. --seeds S,.. --topology FILE --duration D --out DIR [flags]",
		examples: `  # S3: WebSearch and FB_Hadoop at 30% and 50% with incasts, three modes, on this machine
  fastcnp-sim sweep --modes dcqcn,fastcnp,fastcnp-no-pfc-state \
      --workload websearch=sim/data/hpcc/WebSearch_distribution.txt --workload fbhdp=sim/data/hpcc/FbHdp_distribution.txt \
      --loads 0.3,0.5 --seeds 1 --topology sim/data/hpcc/fat.txt --config params.txt \
      --duration 10ms --incast 60x500KB@0.02 --out results/s3
  # the same sweep as 8 shards: shard 3 here; then merge once all shards are done
  fastcnp-sim sweep ... --out /shared/s3 --shard 3/8
  fastcnp-sim merge /shared/s3
  # in a Kubernetes Indexed Job of 8 completions, or a Slurm array (--array=0-7)
  fastcnp-sim sweep ... --shard auto/8
  fastcnp-sim sweep ... --shard auto
  (docs/sim-cluster/ has a Job manifest and an sbatch file)`,
		flags: sweepFlags,
	})
}

// workloadFlag collects --workload NAME=FILE.
type workloadFlag struct {
	names []string
	paths map[string]string
}

func (w *workloadFlag) String() string { return strings.Join(w.names, ",") }

func (w *workloadFlag) Set(s string) error {
	name, path, ok := strings.Cut(s, "=")
	if !ok || name == "" || path == "" {
		return fmt.Errorf("want NAME=CDF_FILE")
	}
	if w.paths == nil {
		w.paths = map[string]string{}
	}
	if _, dup := w.paths[name]; dup {
		return fmt.Errorf("workload %q given twice", name)
	}
	w.names = append(w.names, name)
	w.paths[name] = path
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func sweepFlags(fs *flag.FlagSet) func(e *env, args []string) error {
	modes := fs.String("modes", "", "modes, comma-separated (dcqcn, fastcnp, fastcnp-no-pfc-state, ...)")
	var wl workloadFlag
	fs.Var(&wl, "workload", "a workload NAME=CDF_FILE (repeat for several)")
	loads := fs.String("loads", "", "loads, comma-separated fractions (0.3,0.5) or percentages (30%,50%)")
	seeds := fs.String("seeds", "1", "seeds, comma-separated")
	topoPath := fs.String("topology", "", "topology file (HPCC format)")
	cfgPath := fs.String("config", "", "parameter file (HPCC config keys); default: the HPCC simulator's defaults")
	dur := fs.String("duration", "", "length of each point's arrival window (10ms)")
	start := fs.String("start", "2s", "first arrival window instant")
	stopAfter := fs.Duration("stop-after", 0, "stop each point this long after the arrival window ends, flows still running reported as unfinished (0: the parameter file's SIMULATOR_STOP_TIME)")
	incast := fs.String("incast", "", "incasts SENDERSxSIZE@SHARE added to every point, e.g. 60x500KB@0.02")
	out := fs.String("out", "", "output directory: DIR/points/ gets one result file per point, DIR/merged/ the tables")
	shard := fs.String("shard", "", "run one shard: i/n, auto/n (Kubernetes JOB_COMPLETION_INDEX) or auto (Slurm array)")
	jobs := fs.Int("jobs", 0, "points run at once (default: one per CPU)")
	rerun := fs.Bool("rerun", false, "run points that already have a result file (default: skip them, so a sweep resumes)")
	dry := fs.Bool("dry-run", false, "read the inputs, print the points of the shard on stdout and stop")
	var af analysisFlags
	af.register(fs)
	return func(e *env, args []string) error {
		if len(args) > 0 {
			return usagef("unexpected argument %q", args[0])
		}
		s := sweep.Sweep{Modes: splitList(*modes), Workloads: wl.names}
		for _, l := range splitList(*loads) {
			v, err := parseLoad(l)
			if err != nil {
				return usagef("--loads: %v", err)
			}
			s.Loads = append(s.Loads, v)
		}
		for _, sd := range splitList(*seeds) {
			v, err := strconv.ParseUint(sd, 10, 64)
			if err != nil {
				return usagef("--seeds: %q is not a seed", sd)
			}
			s.Seeds = append(s.Seeds, v)
		}
		if err := s.Validate(); err != nil {
			return usagef("%v (give --modes, --workload, --loads and --seeds)", err)
		}
		if *topoPath == "" || *dur == "" || *out == "" {
			return usagef("--topology, --duration and --out are required")
		}
		startNs, durNs, err := window(*start, *dur)
		if err != nil {
			return err
		}
		sh, err := sweep.ParseShard(*shard, e.getenv)
		if err != nil {
			return usagef("--shard: %v", err)
		}
		if *jobs < 0 {
			return usagef("--jobs %d: want 0 (one per CPU) or more", *jobs)
		}
		if *stopAfter < 0 {
			return usagef("--stop-after %v: want 0 or more", *stopAfter)
		}
		mf, err := af.filter()
		if err != nil {
			return err
		}
		tr := &sweep.Traffic{StartNs: startNs, DurationNs: durNs, CDFs: map[string]*hpcc.CDF{}}
		if *incast != "" {
			if tr.Incast, err = parseIncast(*incast); err != nil {
				return usagef("--incast: %v", err)
			}
		}
		if checkMode != nil {
			for _, m := range s.Modes {
				if err := checkMode(m); err != nil {
					return usagef("--modes: %v", err)
				}
			}
		}
		if tr.Topology, err = readFile(*topoPath, hpcc.ParseTopology); err != nil {
			return err
		}
		for _, name := range wl.names {
			if tr.CDFs[name], err = readFile(wl.paths[name], hpcc.ParseCDF); err != nil {
				return err
			}
		}
		base := hpcc.DefaultConfig()
		if *cfgPath != "" {
			if base, err = readFile(*cfgPath, hpcc.ParseConfig); err != nil {
				return err
			}
		}
		if *dry {
			w, closeOut, err := createOutput(e, "-")
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "shard %s: %d of %d points\n", sh, len(sh.Select(s.Points())), len(s.Points()))
			for _, p := range sh.Select(s.Points()) {
				fmt.Fprintln(w, p.ID())
			}
			return closeOut()
		}
		if simulatePoint == nil {
			return errors.New("this build has no simulator engine to run points with (issue 12: the engine's `run` command plugs in here)")
		}
		if *stopAfter > 0 {
			base.StopTimeS = float64(startNs+durNs+int64(*stopAfter)) / 1e9
		}
		hostBps, err := sweep.HostRate(tr.Topology)
		if err != nil {
			return err
		}
		nHosts := len(tr.Topology.Hosts())
		// Points run in parallel and each reports on stderr.
		errw := &syncWriter{w: e.stderr}
		runPoint := func(ctx context.Context, p sweep.Point) (sweep.Result, error) {
			flows, err := tr.Flows(p)
			if err != nil {
				return sweep.Result{}, err
			}
			cfg := base.Clone()
			cfg.Mode = p.Mode
			began := time.Now()
			last := began
			progress := func(nowNs int64, events uint64) {
				if time.Since(last) >= time.Minute {
					last = time.Now()
					fmt.Fprintf(errw, "sweep: %s: %.3f ms simulated, %.1fM events, %.0f s wall\n", p.ID(),
						float64(nowNs-startNs)/1e6, float64(events)/1e6, time.Since(began).Seconds())
				}
			}
			res, err := simulatePoint(ctx, pointInput{Point: p, Topology: tr.Topology, Config: cfg, Flows: flows, Progress: progress})
			if err != nil {
				return res, err
			}
			// What the flows offer, next to what the run did with them.
			if res.Metrics == nil {
				res.Metrics = map[string]float64{}
			}
			incasts := 0
			for _, f := range flows {
				if f.DPort == hpcc.DPortIncast {
					incasts++
				}
			}
			res.Metrics["offered_load"] = traffic.OfferedLoad(flows, nHosts, hostBps, durNs)
			res.Metrics["incast_flows"] = float64(incasts)
			fmt.Fprintf(errw, "sweep: %s: %d flows, %.1fM events, %.1f s wall (load %s)\n", p.ID(), len(flows),
				res.Metrics["events"]/1e6, time.Since(began).Seconds(), loadAvg())
			return res, nil
		}
		points := sh.Select(s.Points())
		bar := progress.New(errw, "sweep "+sh.String(), int64(len(points)))
		onTerm := progress.IsTerminal(e.stderr)
		opt := sweep.Options{Dir: *out, Workers: *jobs, Rerun: *rerun, Progress: func(done, total int, p sweep.Point, err error) {
			bar.Set(int64(done))
			if !onTerm {
				status := "done"
				if err != nil {
					status = "failed: " + err.Error()
				}
				fmt.Fprintf(errw, "sweep %s: %d/%d %s %s\n", sh, done, total, p.ID(), status)
			}
		}}
		fmt.Fprintf(e.stderr, "sweep: %d of %d points in shard %s, results in %s\n", len(points), len(s.Points()), sh, *out)
		err = sweep.Run(e.ctx, s, points, runPoint, opt)
		bar.Done()
		if err != nil {
			return err
		}
		if sh != sweep.All {
			fmt.Fprintf(e.stderr, "sweep: shard %s done; once every shard is: fastcnp-sim merge %s\n", sh, *out)
			return nil
		}
		return mergeAndReport(e, *out, mergedDir(*out), sweep.MergeOptions{Filter: mf, Step: af.step})
	}
}

func mergedDir(out string) string { return strings.TrimRight(out, "/") + "/merged" }

func mergeAndReport(e *env, dir, out string, opt sweep.MergeOptions) error {
	m, err := sweep.Merge(dir, out, opt)
	if err != nil {
		return err
	}
	for _, n := range m.Notes {
		fmt.Fprintf(e.stderr, "merge: note: %s\n", n)
	}
	fmt.Fprintf(e.stderr, "merge: %d of %d points, %d files in %s (summary.md first)\n", m.Points, len(m.Sweep.Points()), len(m.Files), out)
	return nil
}

// syncWriter serialises writes from several goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
