package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fastcnp/fastcnp/sim/analysis"
	"github.com/fastcnp/fastcnp/sim/hpcc"
)

func init() {
	registerCommand(&command{
		name: "analyze", order: 30,
		summary: "FCT slowdowns of fct.txt files: fct_analysis.py's 5% bins (p50/p95/p99) and seed 002's size bins",
		usage:   "[flags] [LABEL=]FCT_FILE...",
		examples: `  # fct_analysis.py's table for two runs, side by side, on stdout
  fastcnp-sim analyze dcqcn=out/dcqcn/fct.txt fastcnp=out/fastcnp/fct.txt
  # every format and the plots into a directory; incast flows only
  fastcnp-sim analyze --type incast --out results/ dcqcn=fct_dcqcn.txt fastcnp=fct_fastcnp.txt
  # HPCC simulator output, flows finishing before 2.01 s, 10% bins
  fastcnp-sim analyze --time-limit 2.01s --step 10 mix/fct_fat_flow_hp95.txt
  # fastcnp-sim's FCTs over the HPCC simulator's standalone FCTs (its formula on fat.txt)
  fastcnp-sim analyze --standalone hpcc --topo sim/data/hpcc/fat.txt ours=out/dcqcn/fct.txt ns3=fct_ns3.txt`,
		flags: analyzeFlags,
	})
}

// parseFlowType reads --type: normal (dport 100), incast (dport 200), all,
// or the script's numbers 0, 1, 2.
func parseFlowType(s string) (int, error) {
	switch s {
	case "normal", "0":
		return analysis.TypeNormal, nil
	case "incast", "1":
		return analysis.TypeIncast, nil
	case "all", "2":
		return analysis.TypeAll, nil
	}
	return 0, fmt.Errorf("flow type %q: want normal, incast or all", s)
}

// analysisFlags are the flags analyze and merge share.
type analysisFlags struct {
	typ, limit string
	step       int
}

func (a *analysisFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.typ, "type", "normal", "flows to analyse: normal (dport 100), incast (dport 200) or all (fct_analysis.py's -t 0, 1, 2)")
	fs.StringVar(&a.limit, "time-limit", "3s", "keep flows that finish before this instant (fct_analysis.py's -T)")
	fs.IntVar(&a.step, "step", 5, "percent of the flows per bin (fct_analysis.py's -s)")
}

func (a *analysisFlags) filter() (analysis.Filter, error) {
	typ, err := parseFlowType(a.typ)
	if err != nil {
		return analysis.Filter{}, usagef("--type: %v", err)
	}
	lim, err := durationNs("--time-limit", a.limit)
	if err != nil {
		return analysis.Filter{}, usagef("%v", err)
	}
	if a.step < 1 || a.step > 100 {
		return analysis.Filter{}, usagef("--step %d: want 1..100", a.step)
	}
	return analysis.Filter{Type: typ, TimeLimitNs: lim}, nil
}

func analyzeFlags(fs *flag.FlagSet) func(e *env, args []string) error {
	var af analysisFlags
	af.register(fs)
	format := fs.String("format", "text", "stdout format without --out: text (fct_analysis.py's), csv or json")
	out := fs.String("out", "", "directory for slowdown.txt, .csv, .json, -percent.png and -size.png")
	edges := fs.String("size-edges", "", "upper edges of the size bins, bytes, comma-separated (default seed 002's Table 8: 300,325,...,10000000)")
	standalone := fs.String("standalone", "file", "the slowdown's denominator: file (each file's last column) or hpcc (the HPCC simulator's formula on --topo: base RTT + size with 48 B per packet at the bottleneck rate)")
	topoPath := fs.String("topo", "", "HPCC topology file of the runs (with --standalone hpcc)")
	payload := fs.Int("payload", 1000, "payload bytes of a full packet (with --standalone hpcc; the simulator's PACKET_PAYLOAD_SIZE)")
	return func(e *env, args []string) error {
		if len(args) == 0 {
			return usagef("no fct.txt file given")
		}
		f, err := af.filter()
		if err != nil {
			return err
		}
		var paths *hpcc.Paths
		switch *standalone {
		case "file":
			if *topoPath != "" {
				return usagef("--topo is for --standalone hpcc")
			}
		case "hpcc":
			if *topoPath == "" {
				return usagef("--standalone hpcc needs --topo")
			}
			topo, err := readFile(*topoPath, hpcc.ParseTopology)
			if err != nil {
				return err
			}
			if paths, err = hpcc.NewPaths(topo, *payload); err != nil {
				return fmt.Errorf("%s: %w", *topoPath, err)
			}
		default:
			return usagef("--standalone %q: want file or hpcc", *standalone)
		}
		var sizeEdges []int64
		if *edges != "" {
			for _, s := range strings.Split(*edges, ",") {
				v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
				if err != nil {
					return usagef("--size-edges: %q is not a number of bytes", s)
				}
				sizeEdges = append(sizeEdges, v)
			}
		}
		if *out == "" && *format != "text" && *format != "csv" && *format != "json" {
			return usagef("--format %q: want text, csv or json", *format)
		}
		type input struct{ label, path string }
		var ins []input
		seen := map[string]bool{}
		for _, a := range args {
			label, path, ok := strings.Cut(a, "=")
			if !ok {
				label, path = strings.TrimSuffix(filepath.Base(a), ".txt"), a
			}
			if label == "" || path == "" {
				return usagef("%q: want LABEL=FILE or FILE", a)
			}
			if seen[label] {
				return usagef("label %q used twice", label)
			}
			seen[label] = true
			ins = append(ins, input{label, path})
		}
		var reps []*analysis.Report
		for _, in := range ins {
			recs, err := readFile(in.path, hpcc.ParseFCT)
			if err != nil {
				return err
			}
			if paths != nil {
				if err := hpcc.SetStandaloneFCT(recs, paths, *payload); err != nil {
					return fmt.Errorf("%s: %w", in.path, err)
				}
			}
			rep, err := analysis.Analyze(in.label, recs, f, af.step, sizeEdges)
			if err != nil {
				return fmt.Errorf("%s: %w", in.path, err)
			}
			reps = append(reps, rep)
		}
		if *out == "" {
			w, closeOut, err := createOutput(e, "-")
			if err != nil {
				return err
			}
			switch *format {
			case "csv":
				err = analysis.WriteCSV(w, reps)
			case "json":
				err = analysis.WriteJSON(w, reps)
			default:
				err = analysis.WriteScriptText(w, reps)
			}
			if err != nil {
				return err
			}
			return closeOut()
		}
		for _, x := range []struct {
			name string
			fill func(io.Writer) error
		}{
			{"slowdown.txt", func(w io.Writer) error { return analysis.WriteScriptText(w, reps) }},
			{"slowdown.csv", func(w io.Writer) error { return analysis.WriteCSV(w, reps) }},
			{"slowdown.json", func(w io.Writer) error { return analysis.WriteJSON(w, reps) }},
			{"slowdown-percent.png", func(w io.Writer) error { return analysis.WritePNG(w, reps, analysis.PercentBinning) }},
			{"slowdown-size.png", func(w io.Writer) error { return analysis.WritePNG(w, reps, analysis.SizeBinning) }},
		} {
			w, closeOut, err := createOutput(e, filepath.Join(*out, x.name))
			if err != nil {
				return err
			}
			if err := x.fill(w); err != nil {
				closeOut()
				return err
			}
			if err := closeOut(); err != nil {
				return err
			}
		}
		fmt.Fprintf(e.stderr, "analyze: %d runs, tables and plots in %s\n", len(reps), *out)
		return nil
	}
}
