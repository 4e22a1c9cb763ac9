// Package report draws the testbed's plots (PNG, gonum.org/v1/plot): each
// flow's rate over time and the switch egress queues over time, one panel
// per run, so that runs of the same topology in different modes can be
// compared.
package report

import (
	"fmt"
	"path/filepath"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/fastcnp/fastcnp/internal/plotpng"
	"github.com/fastcnp/fastcnp/testbed"
)

// Plots writes rates-<mode>.png and queues-<mode>.png for every run and
// rates.png / queues.png with the runs side by side into dir, and returns
// the file names it wrote.
func Plots(runs []*testbed.Result, dir string) ([]string, error) {
	var files []string
	var ratePlots, queuePlots []*plot.Plot
	for _, r := range runs {
		rp, err := RatePlot(r)
		if err != nil {
			return files, err
		}
		qp, err := QueuePlot(r)
		if err != nil {
			return files, err
		}
		for _, x := range []struct {
			p    *plot.Plot
			name string
		}{{rp, "rates-" + r.Label() + ".png"}, {qp, "queues-" + r.Label() + ".png"}} {
			if err := x.p.Save(7*vg.Inch, 4*vg.Inch, filepath.Join(dir, x.name)); err != nil {
				return files, fmt.Errorf("report: save %s: %w", x.name, err)
			}
			files = append(files, x.name)
		}
		ratePlots = append(ratePlots, rp)
		queuePlots = append(queuePlots, qp)
	}
	if len(runs) > 1 {
		for _, x := range []struct {
			ps   []*plot.Plot
			name string
		}{{ratePlots, "rates.png"}, {queuePlots, "queues.png"}} {
			if err := plotpng.SaveRow(filepath.Join(dir, x.name), x.ps, 6*vg.Inch, 4*vg.Inch); err != nil {
				return files, fmt.Errorf("report: %w", err)
			}
			files = append(files, x.name)
		}
	}
	return files, nil
}

// RatePlot draws each flow's receive rate (Mb/s) over time with its fair
// share as a dashed line.
func RatePlot(r *testbed.Result) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s, %s: rate per flow", r.Topology, runTitle(r))
	p.X.Label.Text = "time since the agents' common start (s)"
	p.Y.Label.Text = "Mb/s (receiver goodput)"
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	var ymax, tmax float64
	for i, f := range r.Flows {
		pts := make(plotter.XYs, 0, len(f.Series))
		for _, s := range f.Series {
			pts = append(pts, plotter.XY{X: s.T, Y: s.Bps / 1e6})
			ymax = max(ymax, s.Bps/1e6)
			if s.Bps > 0 {
				tmax = max(tmax, s.T)
			}
		}
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("report: %s: %w", f.Name, err)
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.2)
		if f.Victim {
			l.Width = vg.Points(2.2)
		}
		name := f.Name
		if f.Victim && name != "victim" {
			name += " (victim)"
		}
		p.Add(l)
		p.Legend.Add(name, l)
		fair, err := plotter.NewLine(plotter.XYs{{X: pts[0].X, Y: f.FairShareBps / 1e6}, {X: pts[len(pts)-1].X, Y: f.FairShareBps / 1e6}})
		if err != nil {
			return nil, fmt.Errorf("report: %s: %w", f.Name, err)
		}
		fair.Color = plotutil.Color(i)
		fair.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(fair)
		ymax = max(ymax, f.FairShareBps/1e6)
	}
	p.Y.Min, p.Y.Max = 0, ymax*1.15+1
	if tmax > 0 {
		// Sized flows end early: do not spend the plot on the idle tail.
		p.X.Min, p.X.Max = 0, tmax+0.5
	}
	return p, nil
}

// QueuePlot draws every switch port's egress queue (KB) over time; ports
// that never queued more than one frame are left out.
func QueuePlot(r *testbed.Result) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s, %s: egress queues", r.Topology, runTitle(r))
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = "KB queued"
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	series := map[string]plotter.XYs{}
	peak := map[string]int64{}
	for _, q := range r.Queues {
		for port, b := range q.Bytes {
			k := fmt.Sprintf("%s-p%d", q.Switch, port)
			series[k] = append(series[k], plotter.XY{X: q.T, Y: float64(b) / 1e3})
			peak[k] = max(peak[k], b)
		}
	}
	keys := make([]string, 0, len(series))
	for k := range series {
		if peak[k] > 1600 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for i, k := range keys {
		l, err := plotter.NewLine(series[k])
		if err != nil {
			return nil, fmt.Errorf("report: %s: %w", k, err)
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.2)
		p.Add(l)
		p.Legend.Add(k+" ("+peerOf(r, k)+")", l)
	}
	if len(keys) == 0 {
		p.Title.Text += " (no queue above one frame)"
	}
	// Room above the highest queue for the legend (top right).
	var top int64
	for _, k := range keys {
		top = max(top, peak[k])
	}
	p.Y.Min, p.Y.Max = 0, float64(top)/1e3*1.25+1
	return p, nil
}

func peerOf(r *testbed.Result, key string) string {
	for _, s := range r.Switches {
		for _, pc := range s.Ports {
			if fmt.Sprintf("%s-p%d", s.Name, pc.Port) == key {
				return "to " + pc.Peer
			}
		}
	}
	return "?"
}

// runTitle names a run in plot titles: "mode M", plus the hosts' algorithm
// when it is not the mode's own DCQCN variant.
func runTitle(r *testbed.Result) string {
	if l := r.Label(); l != string(r.Mode) {
		return fmt.Sprintf("mode %s, %s", r.Mode, l)
	}
	return "mode " + string(r.Mode)
}
