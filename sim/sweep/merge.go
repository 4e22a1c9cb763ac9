package sweep

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/fastcnp/fastcnp/sim/analysis"
	"github.com/fastcnp/fastcnp/sim/hpcc"
)

// MergeOptions tune Merge.
type MergeOptions struct {
	// Filter selects the flows of the slowdown tables (analysis.DefaultFilter:
	// background flows finishing before 3 s).
	Filter analysis.Filter
	// Step is the percent-bin width (5 as fct_analysis.py's default).
	Step int
	// Edges are the size bins' edges (nil: analysis.Seed002Edges).
	Edges []int64
	// AllowMissing merges what is there when some points have no result
	// file; otherwise missing points are an error.
	AllowMissing bool
}

// Merged says what Merge found and wrote.
type Merged struct {
	Sweep   Sweep
	Points  int      // result files merged
	Missing []string // IDs of points without a result file
	Files   []string // files written, relative to the output directory
	Notes   []string // tables that could not be made, and why
}

// ReadPoints reads the result files of dir (a sweep's output directory):
// they must all come from the same sweep and match its points.
func ReadPoints(dir string) (Sweep, []File, error) {
	pdir := filepath.Join(dir, PointsDir)
	names, err := filepath.Glob(filepath.Join(pdir, "*.json"))
	if err != nil {
		return Sweep{}, nil, fmt.Errorf("sweep: %w", err)
	}
	if len(names) == 0 {
		return Sweep{}, nil, fmt.Errorf("sweep: no result file in %s", pdir)
	}
	sort.Strings(names)
	var (
		s     Sweep
		files []File
		want  []Point
		seen  = map[int]string{}
	)
	for i, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			return s, nil, fmt.Errorf("sweep: %w", err)
		}
		var f File
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return s, nil, fmt.Errorf("sweep: %s: %w", name, err)
		}
		if i == 0 {
			s = f.Sweep
			if err := s.Validate(); err != nil {
				return s, nil, fmt.Errorf("sweep: %s: %w", name, err)
			}
			want = s.Points()
		} else if !reflect.DeepEqual(f.Sweep, s) {
			return s, nil, fmt.Errorf("sweep: %s belongs to another sweep than %s", name, names[0])
		}
		p := f.Point
		if p.Index < 0 || p.Index >= len(want) || want[p.Index] != p {
			return s, nil, fmt.Errorf("sweep: %s: point %+v is not point %d of its sweep", name, p, p.Index)
		}
		if filepath.Base(name) != p.ID()+".json" {
			return s, nil, fmt.Errorf("sweep: %s holds point %s", name, p.ID())
		}
		if prev, dup := seen[p.Index]; dup {
			return s, nil, fmt.Errorf("sweep: %s and %s hold the same point", prev, name)
		}
		seen[p.Index] = name
		files = append(files, f)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Point.Index < files[j].Point.Index })
	return s, files, nil
}

// Merge reads the result files of dir and writes into out: points.csv (one
// row per point: its coordinates, flows and metrics), for each workload and
// load the slowdown tables of every mode with flows, pooled over seeds
// (slowdown-W-L.txt as fct_analysis.py prints it, .csv, .json, and the
// -percent.png and -size.png plots), and summary.md (seed 002's Table 8
// layout: p95 by flow size, one column per mode; and the metrics). The
// output depends only on the result files: a sweep run in shards merges to
// the same bytes as the sweep run at once.
func Merge(dir, out string, opt MergeOptions) (*Merged, error) {
	s, files, err := ReadPoints(dir)
	if err != nil {
		return nil, err
	}
	m := &Merged{Sweep: s, Points: len(files)}
	have := map[int]bool{}
	for _, f := range files {
		have[f.Point.Index] = true
	}
	for _, p := range s.Points() {
		if !have[p.Index] {
			m.Missing = append(m.Missing, p.ID())
		}
	}
	if len(m.Missing) > 0 && !opt.AllowMissing {
		show := m.Missing
		if len(show) > 5 {
			show = append(show[:5:5], fmt.Sprintf("... %d more", len(m.Missing)-5))
		}
		return m, fmt.Errorf("sweep: %d of %d points have no result file: %s", len(m.Missing), len(s.Points()), strings.Join(show, ", "))
	}
	if opt.Step == 0 {
		opt.Step = 5
	}
	if opt.Filter == (analysis.Filter{}) {
		opt.Filter = analysis.DefaultFilter
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return m, fmt.Errorf("sweep: %w", err)
	}
	write := func(name string, fill func(w io.Writer) error) error {
		var buf bytes.Buffer
		if err := fill(&buf); err != nil {
			return fmt.Errorf("sweep: %s: %w", name, err)
		}
		if err := writeAtomic(filepath.Join(out, name), buf.Bytes()); err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		m.Files = append(m.Files, name)
		return nil
	}
	if err := write("points.csv", func(w io.Writer) error { return writePointsCSV(w, files) }); err != nil {
		return m, err
	}
	var groups []group
	for _, wl := range s.Workloads {
		for _, l := range s.Loads {
			g, err := analyseGroup(dir, s, files, wl, l, opt)
			if err != nil {
				return m, err
			}
			if g == nil {
				continue
			}
			if g.note != "" {
				m.Notes = append(m.Notes, g.note)
				continue
			}
			groups = append(groups, *g)
			base := "slowdown-" + wl + "-" + FormatLoad(l)
			for _, x := range []struct {
				ext  string
				fill func(io.Writer) error
			}{
				{".txt", func(w io.Writer) error { return analysis.WriteScriptText(w, g.reports) }},
				{".csv", func(w io.Writer) error { return analysis.WriteCSV(w, g.reports) }},
				{".json", func(w io.Writer) error { return analysis.WriteJSON(w, g.reports) }},
				{"-percent.png", func(w io.Writer) error { return analysis.WritePNG(w, g.reports, analysis.PercentBinning) }},
				{"-size.png", func(w io.Writer) error { return analysis.WritePNG(w, g.reports, analysis.SizeBinning) }},
			} {
				if err := write(base+x.ext, x.fill); err != nil {
					return m, err
				}
			}
		}
	}
	if err := write("summary.md", func(w io.Writer) error { return writeSummary(w, m, files, groups) }); err != nil {
		return m, err
	}
	return m, nil
}

// group is the slowdown analysis of one workload and load.
type group struct {
	workload string
	load     float64
	seeds    []uint64
	reports  []*analysis.Report
	note     string
}

func analyseGroup(dir string, s Sweep, files []File, wl string, load float64, opt MergeOptions) (*group, error) {
	g := &group{workload: wl, load: load}
	seeds := map[uint64]bool{}
	for _, mode := range s.Modes {
		var recs []hpcc.FCT
		found := false
		for _, f := range files { // index order: seeds in sweep order
			p := f.Point
			if p.Workload != wl || p.Load != load || p.Mode != mode || f.FCTFile == "" {
				continue
			}
			r, err := readFCT(filepath.Join(dir, PointsDir, f.FCTFile))
			if err != nil {
				return nil, err
			}
			if len(r) != f.Flows {
				return nil, fmt.Errorf("sweep: %s has %d records, its result file says %d", f.FCTFile, len(r), f.Flows)
			}
			recs = append(recs, r...)
			seeds[p.Seed] = true
			found = true
		}
		if !found {
			continue
		}
		rep, err := analysis.Analyze(mode, recs, opt.Filter, opt.Step, opt.Edges)
		if err != nil {
			g.note = fmt.Sprintf("%s at load %s: no slowdown tables: %v", wl, FormatLoad(load), err)
			return g, nil
		}
		g.reports = append(g.reports, rep)
	}
	if len(g.reports) == 0 {
		return nil, nil
	}
	for _, sd := range s.Seeds {
		if seeds[sd] {
			g.seeds = append(g.seeds, sd)
		}
	}
	return g, nil
}

func readFCT(path string) ([]hpcc.FCT, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	defer f.Close()
	return hpcc.ParseFCT(filepath.Base(path), bufio.NewReader(f))
}

// metricNames returns every metric name of files, sorted.
func metricNames(files []File) []string {
	set := map[string]bool{}
	for _, f := range files {
		for k := range f.Metrics {
			set[k] = true
		}
	}
	names := make([]string, 0, len(set))
	for k := range set {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func writePointsCSV(w io.Writer, files []File) error {
	names := metricNames(files)
	cw := csv.NewWriter(w)
	cw.Write(append([]string{"index", "mode", "workload", "load", "seed", "flows"}, names...))
	for _, f := range files {
		p := f.Point
		row := []string{strconv.Itoa(p.Index), p.Mode, p.Workload, FormatLoad(p.Load), strconv.FormatUint(p.Seed, 10), strconv.Itoa(f.Flows)}
		for _, n := range names {
			if v, ok := f.Metrics[n]; ok {
				row = append(row, fmtFloat(v))
			} else {
				row = append(row, "")
			}
		}
		cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}

// writeCounters writes, per workload and load, every metric with one column
// per mode (the mean over the seeds that ran): the modes' counters side by side.
func writeCounters(w io.Writer, s Sweep, files []File) {
	names := metricNames(files)
	if len(names) == 0 {
		return
	}
	for _, wl := range s.Workloads {
		for _, l := range s.Loads {
			var modes []string
			sum := map[string]map[string]float64{} // mode -> metric -> sum
			n := map[string]map[string]int{}
			seeds := map[uint64]bool{}
			for _, f := range files {
				p := f.Point
				if p.Workload != wl || p.Load != l {
					continue
				}
				if sum[p.Mode] == nil {
					modes = append(modes, p.Mode)
					sum[p.Mode], n[p.Mode] = map[string]float64{}, map[string]int{}
				}
				seeds[p.Seed] = true
				for k, v := range f.Metrics {
					sum[p.Mode][k] += v
					n[p.Mode][k]++
				}
			}
			if len(modes) == 0 {
				continue
			}
			sort.SliceStable(modes, func(i, j int) bool {
				return slices.Index(s.Modes, modes[i]) < slices.Index(s.Modes, modes[j])
			})
			var sd []string
			for _, x := range s.Seeds {
				if seeds[x] {
					sd = append(sd, strconv.FormatUint(x, 10))
				}
			}
			fmt.Fprintf(w, "\n## %s at load %s: counters by mode\n\nThe mean over seeds %s.\n\n| metric |", wl, FormatLoad(l), strings.Join(sd, ", "))
			for _, m := range modes {
				fmt.Fprintf(w, " %s |", m)
			}
			fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---|", len(modes)))
			for _, k := range names {
				fmt.Fprintf(w, "| %s |", k)
				for _, m := range modes {
					if n[m][k] == 0 {
						fmt.Fprintf(w, " - |")
						continue
					}
					fmt.Fprintf(w, " %s |", fmtCounter(sum[m][k]/float64(n[m][k])))
				}
				fmt.Fprintln(w)
			}
		}
	}
}

// fmtCounter writes whole numbers in full and others to 6 significant digits.
func fmtCounter(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

func writeSummary(w io.Writer, m *Merged, files []File, groups []group) error {
	bw := bufio.NewWriter(w)
	s := m.Sweep
	loads := make([]string, len(s.Loads))
	for i, l := range s.Loads {
		loads[i] = FormatLoad(l)
	}
	seeds := make([]string, len(s.Seeds))
	for i, sd := range s.Seeds {
		seeds[i] = strconv.FormatUint(sd, 10)
	}
	fmt.Fprintf(bw, "# Sweep results\n\nmodes %s; workloads %s; loads %s; seeds %s: %d of %d points.\n",
		strings.Join(s.Modes, ", "), strings.Join(s.Workloads, ", "), strings.Join(loads, ", "), strings.Join(seeds, ", "), m.Points, len(s.Points()))
	if len(m.Missing) > 0 {
		fmt.Fprintf(bw, "\nMissing points: %s.\n", strings.Join(m.Missing, ", "))
	}
	for _, n := range m.Notes {
		fmt.Fprintf(bw, "\nNote: %s.\n", n)
	}
	for _, g := range groups {
		sd := make([]string, len(g.seeds))
		for i, x := range g.seeds {
			sd[i] = strconv.FormatUint(x, 10)
		}
		fmt.Fprintf(bw, "\n## %s at load %s: p95 FCT slowdown by flow size\n\n", g.workload, FormatLoad(g.load))
		fmt.Fprintf(bw, "Flows pooled over seeds %s; bins of seed 002's Table 8 (upper edges); flows per bin in parentheses.\n\n", strings.Join(sd, ", "))
		fmt.Fprintf(bw, "| flow size |")
		for _, r := range g.reports {
			fmt.Fprintf(bw, " %s |", r.Label)
		}
		fmt.Fprintf(bw, "\n|---|")
		for range g.reports {
			fmt.Fprintf(bw, "---|")
		}
		bw.WriteByte('\n')
		rows := g.reports[0]
		for _, r := range g.reports {
			if len(r.Size) > len(rows.Size) {
				rows = r // the one with flows above the last edge, if any
			}
		}
		for k, b := range rows.Size {
			label := analysis.SizeLabel(int64(b.Hi))
			if b.Hi == 0 {
				label = "> " + analysis.SizeLabel(int64(b.Lo))
			}
			fmt.Fprintf(bw, "| %s |", label)
			for _, r := range g.reports {
				if k < len(r.Size) && r.Size[k].Flows > 0 {
					fmt.Fprintf(bw, " %.3f (%d) |", r.Size[k].P95, r.Size[k].Flows)
				} else {
					fmt.Fprintf(bw, " - |")
				}
			}
			bw.WriteByte('\n')
		}
	}
	writeCounters(bw, s, files)
	if names := metricNames(files); len(names) > 0 {
		fmt.Fprintf(bw, "\n## Metrics per point\n\n| point | flows |")
		for _, n := range names {
			fmt.Fprintf(bw, " %s |", n)
		}
		fmt.Fprintf(bw, "\n|---|---|%s\n", strings.Repeat("---|", len(names)))
		for _, f := range files {
			fmt.Fprintf(bw, "| %s | %d |", f.Point.ID(), f.Flows)
			for _, n := range names {
				if v, ok := f.Metrics[n]; ok {
					fmt.Fprintf(bw, " %s |", fmtFloat(v))
				} else {
					fmt.Fprintf(bw, " - |")
				}
			}
			bw.WriteByte('\n')
		}
	}
	return bw.Flush()
}
