package analysis

import (
	"fmt"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/fastcnp/fastcnp/internal/plotpng"
)

// Binnings a plot can show.
const (
	PercentBinning = "percent"
	SizeBinning    = "size"
)

// Plot draws one percentile (0.5, 0.95 or 0.99) of the slowdown per bin,
// one line per report, on a log scale; the x axis is the bin, labelled with
// the largest flow size of the first report (percent bins) or the bin's
// upper edge (size bins). Empty bins are left out of a line.
func Plot(reps []*Report, binning string, p float64) (*plot.Plot, error) {
	if len(reps) == 0 {
		return nil, fmt.Errorf("analysis: no report to plot")
	}
	pick := map[float64]func(Bin) float64{
		0.5: func(b Bin) float64 { return b.P50 }, 0.95: func(b Bin) float64 { return b.P95 }, 0.99: func(b Bin) float64 { return b.P99 },
	}[p]
	if pick == nil {
		return nil, fmt.Errorf("analysis: percentile %v, want 0.5, 0.95 or 0.99", p)
	}
	bins := func(r *Report) []Bin {
		if binning == SizeBinning {
			return r.Size
		}
		return r.Percent
	}
	if binning != SizeBinning && binning != PercentBinning {
		return nil, fmt.Errorf("analysis: binning %q, want %q or %q", binning, PercentBinning, SizeBinning)
	}
	pl := plot.New()
	pl.Title.Text = fmt.Sprintf("p%g FCT slowdown", p*100)
	pl.X.Label.Text = "flow size (upper edge of the bin)"
	if binning == PercentBinning {
		pl.X.Label.Text = fmt.Sprintf("flow size (%d%% of flows per bin, largest flow)", reps[0].Step)
	}
	pl.Y.Label.Text = "slowdown"
	pl.Y.Scale = plot.LogScale{}
	pl.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	pl.Legend.Top = true
	pl.Legend.Left = true
	pl.Add(plotter.NewGrid())
	var ticks []plot.Tick
	for i, b := range bins(reps[0]) {
		label := SizeLabel(b.MaxSize)
		if binning == SizeBinning {
			label = SizeLabel(int64(b.Hi))
			if b.Hi == 0 {
				label = ">" + SizeLabel(int64(b.Lo))
			}
		}
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: label})
	}
	pl.X.Tick.Marker = plot.ConstantTicks(ticks)
	pl.X.Tick.Label.Rotation = 0.8
	pl.X.Tick.Label.XAlign = -0.9
	ymax := 1.0
	for i, r := range reps {
		var pts plotter.XYs
		for k, b := range bins(r) {
			if b.Flows > 0 {
				pts = append(pts, plotter.XY{X: float64(k), Y: pick(b)})
				ymax = max(ymax, pick(b))
			}
		}
		if len(pts) == 0 {
			continue
		}
		l, s, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, fmt.Errorf("analysis: plot %s: %w", r.Label, err)
		}
		l.Color, s.Color = plotutil.Color(i), plotutil.Color(i)
		s.Shape = plotutil.Shape(i)
		pl.Add(l, s)
		pl.Legend.Add(r.Label, l, s)
	}
	pl.Y.Min, pl.Y.Max = 1, ymax*2
	return pl, nil
}

// WritePNG draws p50, p95 and p99 side by side for one binning and writes
// the PNG to w.
func WritePNG(w io.Writer, reps []*Report, binning string) error {
	var ps []*plot.Plot
	for _, p := range []float64{0.5, 0.95, 0.99} {
		pl, err := Plot(reps, binning, p)
		if err != nil {
			return err
		}
		ps = append(ps, pl)
	}
	return plotpng.WriteRow(w, ps, 6*vg.Inch, 4.5*vg.Inch)
}
