package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"sync"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/fastcnp/fastcnp/internal/plotpng"
	"github.com/fastcnp/fastcnp/sim/network"
	"github.com/fastcnp/fastcnp/sim/scenario"
)

func init() {
	registerCommand(&command{
		name: "s4", order: 26,
		summary: "S4 (spec 06) at leaf-spine scale: INC across two switch tiers, without failure, with a leaf-spine link failure, and failed then repaired",
		usage:   "[flags]",
		examples: `  # the three runs of docs/results/sim/s4.md
  fastcnp-sim s4 --out /tmp/s4
  # a shorter slot timeout, a slower controller
  fastcnp-sim s4 --slot-timeout 20us --notify 50us --out /tmp/s4-slow`,
		flags: s4Flags,
	})
}

// s4Runs are the three runs: normal, the link down at failAt, and down then
// up again at repairAt.
func s4Runs(o scenario.S4Options, failAt, repairAt, notify, install time.Duration) []scenario.S4Options {
	fail := func(repair time.Duration) *scenario.S4Failure {
		return &scenario.S4Failure{Leaf: 1, Spine: 0, AtNs: int64(failAt), RepairAtNs: int64(repair),
			NotifyNs: int64(notify), InstallNs: int64(install)}
	}
	a, b, c := o, o, o
	b.Failure, c.Failure = fail(0), fail(repairAt)
	return []scenario.S4Options{a, b, c}
}

var s4Labels = []string{"normal", "failure", "failure-repair"}

func s4Flags(fs *flag.FlagSet) func(e *env, args []string) error {
	d := scenario.DefaultS4()
	messages := fs.Int("messages", d.Messages, "messages per group")
	interval := fs.Duration("interval", time.Duration(d.IntervalNs), "between the starts of a group's messages")
	slot := fs.Duration("slot-timeout", d.SlotTimeout, "inc.slot_timeout")
	failAt := fs.Duration("fail-at", 200*time.Microsecond, "the link leaf2-spine1 goes down (runs failure, failure-repair)")
	repairAt := fs.Duration("repair-at", 300*time.Microsecond, "it comes back (run failure-repair)")
	notify := fs.Duration("notify", 10*time.Microsecond, "the controller is told this long after each link event")
	install := fs.Duration("install", 2*time.Microsecond, "its new tables then reach the six switches this far apart")
	out := fs.String("out", "", "directory for s4.md, s4.json and s4.png")
	jobs := fs.Int("jobs", 3, "runs at once")
	return func(e *env, args []string) error {
		if len(args) > 0 {
			return usagef("unexpected argument %q", args[0])
		}
		if *jobs < 1 || *messages < 1 || *interval < 0 || *failAt <= 0 || *repairAt <= *failAt || *notify < 0 || *install < 0 {
			return usagef("--jobs, --messages > 0; --repair-at after --fail-at > 0; no negative durations")
		}
		o := d
		o.Messages, o.IntervalNs, o.SlotTimeout = *messages, int64(*interval), *slot
		opts := s4Runs(o, *failAt, *repairAt, *notify, *install)
		runs := make([]scenario.S4Run, len(opts))
		msgs := make([][]network.INCMessageResult, len(opts))
		errs := make([]error, len(opts))
		sem := make(chan struct{}, *jobs)
		errw := &syncWriter{w: e.stderr} // the runs report their progress concurrently
		var wg sync.WaitGroup
		for i := range opts {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				start := time.Now()
				s, r, err := scenario.RunS4(opts[i], nil)
				if err == nil {
					var m *scenario.S4Metrics
					m, err = scenario.MeasureS4(s, r)
					runs[i] = scenario.S4Run{Label: s4Labels[i], Setup: s, Metrics: m}
					msgs[i] = r.INC.Messages
				}
				if err == nil {
					fmt.Fprintf(errw, "s4 %s: %.1f us simulated, %d events, %.1f s wall\n", s4Labels[i], float64(r.EndNs)/1e3, r.Events, time.Since(start).Seconds())
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				return fmt.Errorf("s4 %s: %w", s4Labels[i], err)
			}
		}
		var md bytes.Buffer
		if err := scenario.WriteS4Markdown(&md, runs); err != nil {
			return err
		}
		if *out == "" {
			_, err := e.stdout.Write(md.Bytes())
			return err
		}
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(*out, "s4.md"), md.Bytes(), 0o644); err != nil {
			return err
		}
		type runJSON struct {
			Label    string
			Options  scenario.S4Options
			Metrics  *scenario.S4Metrics
			Messages []network.INCMessageResult
		}
		var js []runJSON
		for i, r := range runs {
			js = append(js, runJSON{Label: r.Label, Options: r.Setup.Options, Metrics: r.Metrics, Messages: msgs[i]})
		}
		b, err := json.MarshalIndent(js, "", " ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(*out, "s4.json"), append(b, '\n'), 0o644); err != nil {
			return err
		}
		var ps []*plot.Plot
		for i, r := range runs {
			p, err := s4Plot(r, msgs[i])
			if err != nil {
				return err
			}
			ps = append(ps, p)
		}
		lp, err := s4LoadPlot(runs)
		if err != nil {
			return err
		}
		ps = append(ps, lp)
		return plotpng.SaveRow(filepath.Join(*out, "s4.png"), ps, 5*vg.Inch, 4*vg.Inch)
	}
}

// s4Plot draws one run: each message's completion (last RESULT after its
// due start) over its due start, lost messages as crosses at 0, the link
// events and the times the new trees were on every switch as lines.
func s4Plot(r scenario.S4Run, msgs []network.INCMessageResult) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "S4 " + r.Label
	p.X.Label.Text = "message due start (us)"
	p.Y.Label.Text = "completion (us)"
	p.Add(plotter.NewGrid())
	var done, lost plotter.XYs
	ymax := 1.0
	for _, m := range msgs {
		x := float64(m.DueNs) / 1e3
		if m.Correct == uint64(m.Offsets) {
			y := float64(m.LastNs-m.DueNs) / 1e3
			done = append(done, plotter.XY{X: x, Y: y})
			ymax = max(ymax, y)
		} else {
			lost = append(lost, plotter.XY{X: x, Y: 0})
		}
	}
	if len(done) > 0 {
		s, err := plotter.NewScatter(done)
		if err != nil {
			return nil, err
		}
		s.GlyphStyle.Radius = vg.Points(1.5)
		s.GlyphStyle.Color = color.RGBA{B: 200, A: 255}
		p.Add(s)
		p.Legend.Add("complete", s)
	}
	if len(lost) > 0 {
		s, err := plotter.NewScatter(lost)
		if err != nil {
			return nil, err
		}
		s.GlyphStyle.Shape = draw.CrossGlyph{}
		s.GlyphStyle.Radius = vg.Points(3)
		s.GlyphStyle.Color = color.RGBA{R: 220, A: 255}
		p.Add(s)
		p.Legend.Add("lost", s)
	}
	vline := func(xus float64, c color.Color, label string) error {
		l, err := plotter.NewLine(plotter.XYs{{X: xus, Y: 0}, {X: xus, Y: ymax * 1.1}})
		if err != nil {
			return err
		}
		l.Color = c
		l.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
		p.Add(l)
		if label != "" {
			p.Legend.Add(label, l)
		}
		return nil
	}
	if f := r.Setup.Options.Failure; f != nil {
		if err := vline(float64(f.AtNs)/1e3, color.RGBA{R: 200, A: 255}, "link down / up"); err != nil {
			return nil, err
		}
		if f.RepairAtNs > 0 {
			if err := vline(float64(f.RepairAtNs)/1e3, color.RGBA{R: 200, A: 255}, ""); err != nil {
				return nil, err
			}
		}
	}
	for k, t := range r.Metrics.InstalledAllNs {
		label := ""
		if k == 0 {
			label = "new tree on every switch"
		}
		if err := vline(float64(t)/1e3, color.RGBA{G: 150, A: 255}, label); err != nil {
			return nil, err
		}
	}
	p.Y.Min, p.Y.Max = -0.5, ymax*1.6
	p.Legend.Top = true
	p.Legend.Left = true
	return p, nil
}

// s4LoadPlot draws each spine's share of the messages aggregated by spines
// in every run, next to its weight's share.
func s4LoadPlot(runs []scenario.S4Run) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "S4 load per spine against its weight"
	p.Y.Label.Text = "share of messages aggregated (%)"
	p.Add(plotter.NewGrid())
	spines := runs[0].Metrics.Uppers
	w := vg.Points(12)
	colors := []color.Color{color.Gray{Y: 120}, color.RGBA{B: 200, A: 255}, color.RGBA{R: 220, A: 255}, color.RGBA{G: 150, A: 255}}
	var names []string
	for _, u := range spines {
		names = append(names, u.Name)
	}
	series := []struct {
		label string
		v     func(u scenario.S4Upper) float64
	}{{"weight", func(u scenario.S4Upper) float64 { return 100 * u.WeightShare }}}
	for i := range runs {
		r := runs[i]
		series = append(series, struct {
			label string
			v     func(u scenario.S4Upper) float64
		}{r.Label, func(u scenario.S4Upper) float64 {
			for _, x := range r.Metrics.Uppers {
				if x.Name == u.Name {
					return 100 * x.Share
				}
			}
			return 0
		}})
	}
	for i, s := range series {
		vals := make(plotter.Values, len(spines))
		for k, u := range spines {
			vals[k] = s.v(u)
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, err
		}
		b.Color = colors[i%len(colors)]
		b.LineStyle.Width = 0
		b.Offset = w * vg.Length(float64(i)-float64(len(series)-1)/2)
		p.Add(b)
		p.Legend.Add(s.label, b)
	}
	p.NominalX(names...)
	p.Y.Min, p.Y.Max = 0, 110
	p.Legend.Top = true
	p.Legend.Left = true
	return p, nil
}
