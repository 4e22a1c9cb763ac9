package report

import (
	"fmt"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/fastcnp/fastcnp/internal/plotpng"
	"github.com/fastcnp/fastcnp/testbed"
)

// INCPlots writes inc-<label>.png for an INC run: the upper switches' load
// against their weights, and each message's completion time (last RESULT
// after its due start) over its due time, incomplete messages marked and
// link events drawn. It returns the file name.
func INCPlots(rep *testbed.INCReport, r *testbed.Result, dir string) (string, error) {
	lp, err := INCLoadPlot(rep, r)
	if err != nil {
		return "", err
	}
	cp, err := INCCompletionPlot(rep, r)
	if err != nil {
		return "", err
	}
	name := "inc-" + r.Label() + ".png"
	if err := plotpng.SaveRow(filepath.Join(dir, name), []*plot.Plot{lp, cp}, 6*vg.Inch, 4*vg.Inch); err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	return name, nil
}

// INCLoadPlot draws, per upper switch, its share of the weights, of the
// bucket table, and of the messages it aggregated (percent).
func INCLoadPlot(rep *testbed.INCReport, r *testbed.Result) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: INC load per upper switch", r.Topology)
	p.Y.Label.Text = "% of the INC messages (or weights, buckets)"
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	var names []string
	var w, b, s plotter.Values
	for _, u := range rep.Uppers {
		names = append(names, u.Name)
		w = append(w, 100*u.WeightShare)
		b = append(b, 100*u.BucketShare)
		s = append(s, 100*u.Share)
	}
	if len(names) == 0 {
		p.Title.Text += " (none)"
		return p, nil
	}
	width := vg.Points(14)
	for i, x := range []struct {
		v     plotter.Values
		label string
	}{{w, "weight"}, {b, "buckets"}, {s, "aggregated"}} {
		bars, err := plotter.NewBarChart(x.v, width)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		bars.Color = plotutil.Color(i)
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(i-1) * width
		p.Add(bars)
		p.Legend.Add(x.label, bars)
	}
	p.NominalX(names...)
	p.Y.Min, p.Y.Max = 0, 110
	return p, nil
}

// INCCompletionPlot draws each message's completion time over its due
// time, by group; incomplete messages are drawn at 0 as crosses, and link
// events as vertical lines.
func INCCompletionPlot(rep *testbed.INCReport, r *testbed.Result) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: INC message completion", r.Topology)
	p.X.Label.Text = "due start of the message (ms since the run's start)"
	p.Y.Label.Text = "last RESULT after the due start (ms)"
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	groups := map[uint16]plotter.XYs{}
	var order []uint16
	var lost plotter.XYs
	ymax := 1.0
	for _, d := range rep.Detail {
		if !d.Complete {
			lost = append(lost, plotter.XY{X: d.DueMs, Y: 0})
			continue
		}
		if _, ok := groups[d.Group]; !ok {
			order = append(order, d.Group)
		}
		groups[d.Group] = append(groups[d.Group], plotter.XY{X: d.DueMs, Y: d.LastResultMs - d.DueMs})
		ymax = max(ymax, d.LastResultMs-d.DueMs)
	}
	for i, g := range order {
		sc, err := plotter.NewScatter(groups[g])
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		sc.GlyphStyle.Color = plotutil.Color(i)
		sc.GlyphStyle.Radius = vg.Points(1.5)
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		p.Add(sc)
		p.Legend.Add(fmt.Sprintf("group %d", g), sc)
	}
	if len(lost) > 0 {
		sc, err := plotter.NewScatter(lost)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		sc.GlyphStyle.Color = plotutil.Color(3)
		sc.GlyphStyle.Radius = vg.Points(4)
		sc.GlyphStyle.Shape = draw.CrossGlyph{}
		p.Add(sc)
		p.Legend.Add(fmt.Sprintf("incomplete (%d)", len(lost)), sc)
	}
	for i, ev := range r.LinkEvents {
		for j, x := range []float64{ev.ChangedMs, ev.InstalledMs} {
			l, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: ymax * 1.1}})
			if err != nil {
				return nil, fmt.Errorf("report: %w", err)
			}
			l.Color = plotutil.Color(4 + i)
			if j == 1 {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			}
			p.Add(l)
			state := "up"
			if ev.Down {
				state = "down"
			}
			label := fmt.Sprintf("%s %s", ev.Port, state)
			if j == 1 {
				label = "new INC tree installed"
			}
			p.Legend.Add(label, l)
		}
	}
	// Room above the points for the legend (top right).
	p.Y.Min, p.Y.Max = 0, ymax*(1.3+0.1*float64(len(r.LinkEvents)*2))
	return p, nil
}
