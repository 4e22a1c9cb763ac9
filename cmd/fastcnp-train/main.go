// Command fastcnp-train trains the RTT predictor of the LSTM+PID congestion
// control (spec 03 step 3; seed 002 3.4) from per-flow RTT traces and writes
// its weights file (JSON, with the command, the data and the seeds that made
// it: the same command on the same traces makes the same file). With --sim it
// makes the traces itself, as seed 002 did: fastcnp-sim's S2 incast with TIMELY
// and with the untrained PID; with --pid-runs it also trains the PID gains
// online on S2 (seed 002 3.5.3) and records them in the file.
//
//	fastcnp-train --sim s2 --pid-runs 1 --out host/cc/models/lstm-rtt.json
//	fastcnp-train --traces timely.rtt,pid.rtt --source "fastcnp-sim S2 ..." \
//	    --trace-seed 1 --out /tmp/w.json
//	fastcnp-train --synthetic 1 --out /tmp/synthetic.json
//
// A trace file has one RTT sample per line, "flow time_ns rtt_ns" (fields
// separated by spaces or tabs; '#' starts a comment); a flow's samples are
// taken in file order. See docs/host-cc.md "LSTM+PID".
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/host/cc/lstm"
)

func main() {
	opts, err := parseArgs(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "fastcnp-train: %v\n", err)
		os.Exit(2)
	}
	if err := run(opts, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "fastcnp-train: %v\n", err)
		os.Exit(1)
	}
}

// options is the parsed command line.
type options struct {
	traces     []string
	sim        bool
	simOpt     simOptions
	synthetic  bool
	synthSeed  uint64
	synthFlows int
	synthLen   int
	source     string
	traceSeed  uint64
	data       lstm.DatasetOptions
	testFrac   float64
	initSeed   uint64
	train      lstm.TrainOptions
	out        string
}

func parseArgs(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("fastcnp-train", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var traces string
	fs.StringVar(&traces, "traces", "", "comma-separated RTT trace files (\"flow time_ns rtt_ns\" lines)")
	synth := fs.String("synthetic", "", "train on made-up traces (lstm.SyntheticRTTs) made with this seed instead of --traces")
	sim := fs.String("sim", "", "make the traces in fastcnp-sim: s2 (spec 06 S2, seed 002's incast: TIMELY and the untrained PID)")
	fs.IntVar(&o.simOpt.scale, "sim-scale", 1, "S2's flow sizes divided by this (1: seed 002's)")
	fs.Uint64Var(&o.simOpt.seed, "sim-seed", 1, "the simulated switches' RED seed")
	fs.IntVar(&o.simOpt.pidRuns, "pid-runs", 0, "with --sim: train the PID gains online on this many S2 runs of pid (0: none)")
	fs.IntVar(&o.synthFlows, "synthetic-flows", 40, "flows of the synthetic traces")
	fs.IntVar(&o.synthLen, "synthetic-samples", 1000, "RTT samples per synthetic flow")
	fs.StringVar(&o.source, "source", "", "where the traces came from (recorded in the file; required with --traces)")
	fs.Uint64Var(&o.traceSeed, "trace-seed", 0, "the seed the traces were made with (recorded in the file)")
	fs.Float64Var(&o.data.Smoothing, "smoothing", lstm.DefaultSmoothing, "smoothing factor s of the features")
	fs.IntVar(&o.data.PerBin, "per-bin", 0, "pairs per |K| bin (0 = the smallest bin's count)")
	fs.Uint64Var(&o.data.Seed, "dataset-seed", 1, "seed of the balanced draw and of the train/test split")
	fs.Float64Var(&o.testFrac, "test-fraction", 0.2, "share of the pairs held out for testing")
	fs.Uint64Var(&o.initSeed, "init-seed", 1, "seed of the initial weights")
	fs.Uint64Var(&o.train.Seed, "train-seed", 1, "seed of the epoch draws")
	fs.IntVar(&o.train.Epochs, "epochs", 19, "epochs")
	fs.IntVar(&o.train.EpochSamples, "epoch-samples", 800, "training pairs per epoch")
	fs.IntVar(&o.train.TestSamples, "test-samples", 200, "test pairs drawn per epoch for its MAPE")
	fs.IntVar(&o.train.Batch, "batch", 1, "pairs per Adam step")
	fs.Float64Var(&o.train.LR, "lr", 0.001, "Adam learning rate")
	fs.StringVar(&o.out, "out", "", "weights file to write (required)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if traces != "" {
		o.traces = strings.Split(traces, ",")
	}
	if *synth != "" {
		v, err := strconv.ParseUint(*synth, 10, 64)
		if err != nil {
			return o, fmt.Errorf("--synthetic %q: want a seed (unsigned integer)", *synth)
		}
		o.synthetic, o.synthSeed = true, v
	}
	switch *sim {
	case "":
	case "s2":
		o.sim = true
	default:
		return o, fmt.Errorf("--sim %q: the only scenario is s2", *sim)
	}
	sources := 0
	for _, b := range []bool{o.synthetic, len(o.traces) > 0, o.sim} {
		if b {
			sources++
		}
	}
	switch {
	case sources != 1:
		return o, errors.New("give one of --traces, --synthetic and --sim")
	case o.sim && o.simOpt.scale < 1:
		return o, fmt.Errorf("--sim-scale %d: want >= 1", o.simOpt.scale)
	case o.simOpt.pidRuns < 0 || (o.simOpt.pidRuns > 0 && !o.sim):
		return o, fmt.Errorf("--pid-runs %d: want >= 0, and --sim with it", o.simOpt.pidRuns)
	case len(o.traces) > 0 && o.source == "":
		return o, errors.New("--source is required with --traces (say what made them)")
	case o.synthetic && (o.synthFlows < 1 || o.synthLen < lstm.Steps+1):
		return o, fmt.Errorf("--synthetic-flows %d and --synthetic-samples %d: want >= 1 and >= %d", o.synthFlows, o.synthLen, lstm.Steps+1)
	case o.out == "":
		return o, errors.New("--out is required")
	}
	return o, nil
}

// maxTraceLine bounds one line of a trace file.
const maxTraceLine = 4096

// readTraces parses trace lines "flow time_ns rtt_ns" from r and appends each
// flow's RTTs (seconds) to flows, by flow ID in order of first appearance.
func readTraces(r io.Reader, name string, flows [][]float64, index map[string]int) ([][]float64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, maxTraceLine), maxTraceLine)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return flows, fmt.Errorf("%s:%d: %d fields, want \"flow time_ns rtt_ns\"", name, line, len(f))
		}
		if _, err := strconv.ParseInt(f[1], 10, 64); err != nil {
			return flows, fmt.Errorf("%s:%d: time %q: want integer nanoseconds", name, line, f[1])
		}
		rtt, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || rtt <= 0 {
			return flows, fmt.Errorf("%s:%d: RTT %q: want integer nanoseconds > 0", name, line, f[2])
		}
		k := name + "\x00" + f[0]
		i, ok := index[k]
		if !ok {
			i = len(flows)
			index[k] = i
			flows = append(flows, nil)
		}
		flows[i] = append(flows[i], float64(rtt)/1e9)
	}
	if err := sc.Err(); err != nil {
		return flows, fmt.Errorf("%s: line %d: %w", name, line+1, err)
	}
	return flows, nil
}

// command returns the command line that makes the same weights: every
// option that shapes them, defaults included, without --out.
func (o options) command() string {
	var b strings.Builder
	b.WriteString("fastcnp-train")
	switch {
	case o.sim:
		fmt.Fprintf(&b, " --sim s2 --sim-scale %d --sim-seed %d --pid-runs %d", o.simOpt.scale, o.simOpt.seed, o.simOpt.pidRuns)
	case o.synthetic:
		fmt.Fprintf(&b, " --synthetic %d --synthetic-flows %d --synthetic-samples %d", o.synthSeed, o.synthFlows, o.synthLen)
	default:
		fmt.Fprintf(&b, " --traces %s --source %q --trace-seed %d", strings.Join(o.traces, ","), o.source, o.traceSeed)
	}
	fmt.Fprintf(&b, " --smoothing %g --per-bin %d --dataset-seed %d --test-fraction %g --init-seed %d",
		o.data.Smoothing, o.data.PerBin, o.data.Seed, o.testFrac, o.initSeed)
	fmt.Fprintf(&b, " --train-seed %d --epochs %d --epoch-samples %d --test-samples %d --batch %d --lr %g",
		o.train.Seed, o.train.Epochs, o.train.EpochSamples, o.train.TestSamples, o.train.Batch, o.train.LR)
	return b.String()
}

func run(o options, stdout io.Writer) error {
	var (
		flows [][]float64
		info  lstm.DataInfo
	)
	var gains *lstm.PIDGains
	switch {
	case o.sim:
		var err error
		if flows, err = simTraces(o.simOpt); err != nil {
			return err
		}
		info.Source = fmt.Sprintf("fastcnp-sim S2 (seed 002's 20-to-1 incast at 100 Gb/s, flow sizes / %d): every flow's RTT samples "+
			"(one per completion, an ACK per packet) with TIMELY (%s) and with the untrained PID (pid, %s, from %g Gb/s)",
			o.simOpt.scale, timelySet, pidInitialSet, pidStartBps/1e9)
		info.Seed = o.simOpt.seed
		if o.simOpt.pidRuns > 0 {
			l, err := simGains(o.simOpt)
			if err != nil {
				return err
			}
			p, _ := cc.LSTMPIDPreset(pidInitialSet)
			gains = &lstm.PIDGains{Kp: l.K[0], Ki: l.K[1], Kd: l.K[2], Initial: [3]float64{p.Kp, p.Ki, p.Kd}, Updates: l.Updates,
				TargetNs: p.Target.Nanoseconds(),
				Source: fmt.Sprintf("fastcnp-sim S2 (flow sizes / %d, RED seed %d): %d runs of pid (%s, from %g Gb/s), "+
					"every flow sharing one cc.PIDLearner (lr %g/sqrt(n+1), clip %g, beta %g)",
					o.simOpt.scale, o.simOpt.seed, o.simOpt.pidRuns, pidInitialSet, pidStartBps/1e9, l.LR, l.Clip, l.Beta)}
			fmt.Fprintf(stdout, "PID gains after %d updates: Kp %.4f, Ki %.4f, Kd %.4f (from %v)\n", l.Updates, l.K[0], l.K[1], l.K[2], gains.Initial)
		}
	case o.synthetic:
		flows = lstm.SyntheticRTTs(o.synthSeed, o.synthFlows, o.synthLen)
		info.Source = fmt.Sprintf("synthetic: lstm.SyntheticRTTs(seed, %d flows, %d samples); not a network", o.synthFlows, o.synthLen)
		info.Seed = o.synthSeed
	default:
		index := map[string]int{}
		for _, path := range o.traces {
			fh, err := os.Open(path)
			if err != nil {
				return fmt.Errorf("traces: %w", err)
			}
			flows, err = readTraces(fh, path, flows, index)
			fh.Close()
			if err != nil {
				return fmt.Errorf("traces: %w", err)
			}
		}
		info.Source, info.Seed = o.source, o.traceSeed
	}
	info.Flows = len(flows)
	for _, f := range flows {
		info.RTTSamples += len(f)
	}
	d, err := lstm.BuildDataset(flows, o.data)
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	train, test, err := lstm.Split(d.Samples, o.testFrac)
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	info.Dataset, info.Available, info.Used = o.data, d.Available, d.Used
	info.TestFraction, info.TrainPairs, info.TestPairs = o.testFrac, len(train), len(test)
	fmt.Fprintf(stdout, "traces: %d flows, %d RTT samples; pairs per |K| bin %v available, %v used; %d train, %d test\n",
		info.Flows, info.RTTSamples, d.Available, d.Used, len(train), len(test))

	m := lstm.NewModel(o.initSeed)
	stats, err := lstm.Train(m, train, test, o.train)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	fmt.Fprintln(stdout, "epoch  train-loss  train-MAPE%  test-MAPE%")
	for _, s := range stats {
		fmt.Fprintf(stdout, "%5d  %10.5f  %11.3f  %10.3f\n", s.Epoch, s.TrainLoss, s.TrainMAPE, s.TestMAPE)
	}
	full := m.MAPE(test)
	fmt.Fprintf(stdout, "test MAPE on all %d held-out pairs: %.3f%%\n", len(test), full)

	topts, _ := o.train.WithDefaults()
	prov := &lstm.Provenance{
		Command: o.command(),
		Data:    info, Init: o.initSeed, Train: topts, Epochs: stats, TestMAPE: full,
	}
	b, err := lstm.EncodeWithGains(m, o.data.Smoothing, prov, gains)
	if err != nil {
		return err
	}
	if err := os.WriteFile(o.out, b, 0o644); err != nil {
		return fmt.Errorf("weights file: %w", err)
	}
	fmt.Fprintf(stdout, "wrote %s\n", o.out)
	return nil
}

// splitCommand splits a command line made by options.command into its
// words: spaces separate them, and a word starting with a double quote is a
// Go-quoted string (as %q writes --source).
func splitCommand(s string) ([]string, error) {
	var out []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		if s[0] != '"' {
			i := strings.IndexByte(s, ' ')
			if i < 0 {
				i = len(s)
			}
			out = append(out, s[:i])
			s = s[i:]
			continue
		}
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return nil, fmt.Errorf("command %q: %w", s, err)
		}
		w, _ := strconv.Unquote(q)
		out = append(out, w)
		s = s[len(q):]
	}
	return out, nil
}
