// Package analysis computes flow-completion-time slowdowns from fct.txt
// records exactly as the HPCC simulator's analysis/fct_analysis.py does, and
// also in fixed flow-size bins (seed 002's Table 8), and writes them as the
// script's text, CSV, JSON and PNG plots. It is pure: records in, tables
// out, through the writers it is given.
package analysis

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/fastcnp/fastcnp/sim/hpcc"
)

// Flow types of fct_analysis.py's -t option, selected by destination port.
const (
	TypeNormal = 0 // background flows (dport 100)
	TypeIncast = 1 // incast flows (dport 200)
	TypeAll    = 2 // every flow
)

// DefaultTimeLimitNs is the script's -T default: flows that finish at or
// after 3 s are left out.
const DefaultTimeLimitNs = 3_000_000_000

// Filter selects the flows to analyse, as the script's -t and -T do.
type Filter struct {
	Type        int   // TypeNormal, TypeIncast or TypeAll
	TimeLimitNs int64 // keep flows with start + fct < TimeLimitNs
}

// DefaultFilter is the script's default selection: background flows that
// finish before 3 s.
var DefaultFilter = Filter{Type: TypeNormal, TimeLimitNs: DefaultTimeLimitNs}

// Sample is one selected flow: its slowdown and size.
type Sample struct {
	// Slowdown is fct / standalone fct, floored at 1, rounded to six
	// significant digits as the script's awk prints it before Python reads
	// it back.
	Slowdown float64
	Size     int64
	line     string // the text line the script sorts ("slowdown size")
}

// Samples selects records by f and returns their slowdowns in the order of
// the script's "sort -n -k 2" in the C locale: by size, ties by the line's
// bytes (the slowdown as printed, then the size).
func Samples(recs []hpcc.FCT, f Filter) ([]Sample, error) {
	if f.Type < TypeNormal || f.Type > TypeAll {
		return nil, fmt.Errorf("analysis: flow type %d, want 0 (normal), 1 (incast) or 2 (all)", f.Type)
	}
	out := make([]Sample, 0, len(recs))
	for i, r := range recs {
		switch {
		case f.Type == TypeNormal && r.DPort != hpcc.DPortNormal,
			f.Type == TypeIncast && r.DPort != hpcc.DPortIncast:
			continue
		}
		if float64(r.StartNs)+float64(r.FCTNs) >= float64(f.TimeLimitNs) { // awk adds in doubles
			continue
		}
		if r.StandaloneNs <= 0 {
			return nil, fmt.Errorf("analysis: record %d: standalone FCT %d ns, want > 0", i+1, r.StandaloneNs)
		}
		slow := float64(r.FCTNs) / float64(r.StandaloneNs)
		var text string
		if slow < 1 {
			slow, text = 1, "1"
		} else {
			text = awkNumber(slow)
			slow, _ = strconv.ParseFloat(text, 64)
		}
		size := strconv.FormatInt(r.Size, 10)
		out = append(out, Sample{Slowdown: slow, Size: r.Size, line: text + " " + size})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Size != out[j].Size {
			return out[i].Size < out[j].Size
		}
		return out[i].line < out[j].line
	})
	return out, nil
}

// awkNumber prints v as awk's print does: integral values as integers, the
// others with OFMT "%.6g".
func awkNumber(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// Bin is one row of a slowdown table.
type Bin struct {
	// Lo and Hi bound the bin: fractions of the flows (0.05 = 5%) for the
	// script's bins, sizes in bytes (Lo exclusive, Hi inclusive; Hi 0 for
	// the last, open bin) for size bins.
	Lo, Hi float64
	// MaxSize is the largest flow in the bin: the script's size column.
	MaxSize int64
	Flows   int
	// Percentiles of the slowdown, picked as the script's get_pctl does:
	// sorted[int(n*p)]. Zero when the bin is empty.
	P50, P95, P99 float64
	Mean          float64
}

// pctl is fct_analysis.py's get_pctl.
func pctl(sorted []float64, p float64) float64 { return sorted[int(float64(len(sorted))*p)] }

func fill(b *Bin, ss []Sample) {
	b.Flows = len(ss)
	if len(ss) == 0 {
		return
	}
	v := make([]float64, len(ss))
	sum := 0.0
	for i, s := range ss {
		v[i] = s.Slowdown
		sum += s.Slowdown
		b.MaxSize = max(b.MaxSize, s.Size)
	}
	sort.Float64s(v)
	b.P50, b.P95, b.P99 = pctl(v, 0.5), pctl(v, 0.95), pctl(v, 0.99)
	b.Mean = sum / float64(len(v))
}

// PercentBins bins samples (in Samples' order) as fct_analysis.py does with
// -s step: the last sample is dropped (the script's [:-2] drops the empty
// string after the final newline and the last line), then bin i holds
// samples [i*n/100, (i+step)*n/100) in integer arithmetic. The script fails
// on an empty bin; so does this, with an error.
func PercentBins(ss []Sample, step int) ([]Bin, error) {
	if step < 1 || step > 100 {
		return nil, fmt.Errorf("analysis: step %d%%, want 1..100", step)
	}
	n := max(len(ss)-1, 0)
	var bins []Bin
	for i := 0; i < 100; i += step {
		l, r := i*n/100, min((i+step)*n/100, n)
		if l >= r {
			return nil, fmt.Errorf("analysis: bin %d%%-%d%% is empty: %d flows are too few for bins of %d%%", i, i+step, len(ss), step)
		}
		b := Bin{Lo: float64(i) / 100, Hi: float64(i+step) / 100}
		fill(&b, ss[l:r])
		b.MaxSize = ss[r-1].Size // the script's d[-1][1]
		bins = append(bins, b)
	}
	return bins, nil
}

// Seed002Edges are the upper edges (bytes) of seed 002's Table 8 rows:
// 300B, 325B, ... 1K, 2K, 7K, 36K ... 10M. They are the script's 5% bins of
// the FB_Hadoop workload, labelled by their largest flow.
var Seed002Edges = []int64{300, 325, 351, 401, 451, 501, 550, 602, 651, 704, 855,
	1000, 2000, 7000, 36000, 46000, 69000, 124000, 336000, 10000000}

// SizeBins bins samples by size: bin k holds sizes in (edges[k-1], edges[k]]
// (the first from 0), and one more open bin above the last edge holds the
// larger flows if there are any. Every sample counts (no drop).
func SizeBins(ss []Sample, edges []int64) ([]Bin, error) {
	for i := range edges {
		if edges[i] < 1 || i > 0 && edges[i] <= edges[i-1] {
			return nil, fmt.Errorf("analysis: size edges must be positive and increasing: %v", edges)
		}
	}
	byBin := make([][]Sample, len(edges)+1)
	for _, s := range ss {
		k := sort.Search(len(edges), func(k int) bool { return edges[k] >= s.Size })
		byBin[k] = append(byBin[k], s)
	}
	var bins []Bin
	for k, e := range edges {
		lo := 0.0
		if k > 0 {
			lo = float64(edges[k-1])
		}
		b := Bin{Lo: lo, Hi: float64(e)}
		fill(&b, byBin[k])
		bins = append(bins, b)
	}
	if over := byBin[len(edges)]; len(over) > 0 {
		b := Bin{Lo: float64(edges[len(edges)-1])}
		fill(&b, over)
		bins = append(bins, b)
	}
	return bins, nil
}

// Report is the analysis of one run (one fct.txt): what the script computes
// for one of its CCs, and the size-binned table.
type Report struct {
	Label    string  `json:"label"`
	Flows    int     `json:"flows"` // flows selected
	Step     int     `json:"step_percent"`
	Percent  []Bin   `json:"percent_bins"`
	SizeEdge []int64 `json:"size_edges"`
	Size     []Bin   `json:"size_bins"`
}

// Analyze selects records by f and makes both tables: percent bins of step
// and size bins of edges (Seed002Edges if nil).
func Analyze(label string, recs []hpcc.FCT, f Filter, step int, edges []int64) (*Report, error) {
	if edges == nil {
		edges = Seed002Edges
	}
	ss, err := Samples(recs, f)
	if err != nil {
		return nil, err
	}
	pb, err := PercentBins(ss, step)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	sb, err := SizeBins(ss, edges)
	if err != nil {
		return nil, err
	}
	return &Report{Label: label, Flows: len(ss), Step: step, Percent: pb, SizeEdge: edges, Size: sb}, nil
}
