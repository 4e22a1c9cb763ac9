package scenario

import (
	"fmt"
	"io"
	"strings"
)

// S4Run is one S4 run for the tables: its label, setup and metrics.
type S4Run struct {
	Label   string
	Setup   *S4Setup
	Metrics *S4Metrics
}

// us formats ns as microseconds.
func us(ns int64) string { return fmt.Sprintf("%.1f", float64(ns)/1e3) }

// WriteS4Markdown writes the runs' tables side by side: exactness,
// duplicates, path consistency, load against weight, goodput and slot use,
// the failure.
func WriteS4Markdown(w io.Writer, runs []S4Run) error {
	if len(runs) == 0 {
		return fmt.Errorf("s4: no run")
	}
	o := runs[0].Setup.Options
	var b strings.Builder
	fmt.Fprintf(&b, "%d INC workers in %d racks under %d spines (inc.capacity %v), host and fabric links %g / %g Gb/s, %s us per link. "+
		"Group 1: every worker (destination r1 behind leaf1); group 2: %d per rack (destination r2). Each worker's connection of a group "+
		"carries %d messages of %d offsets (16 int32 lanes each), one every %s us from %s us; every %dth contribution is sent again %s us later. "+
		"Message IDs: incsched.IDs, window %d; inc.slot_timeout %v.\n\n",
		o.Racks*o.WorkersPerRack, o.Racks, len(o.SpineWeights), o.SpineWeights, o.HostBps/1e9, o.FabricBps/1e9, us(o.DelayNs),
		o.Group2PerRack, o.Messages, o.Offsets, us(o.IntervalNs), us(o.StartNs), o.DupEvery, us(o.DupDelayNs), o.Window, o.SlotTimeout)
	head := "| measure |"
	sep := "|---|"
	for _, r := range runs {
		head += " " + r.Label + " |"
		sep += "---:|"
	}
	row := func(name string, f func(r S4Run) string) {
		b.WriteString("| " + name + " |")
		for _, r := range runs {
			b.WriteString(" " + f(r) + " |")
		}
		b.WriteString("\n")
	}
	b.WriteString(head + "\n" + sep + "\n")
	row("messages complete / all", func(r S4Run) string { return fmt.Sprintf("%d / %d", r.Metrics.Complete, r.Metrics.Messages) })
	row("offsets with the exact element-wise sum / all", func(r S4Run) string {
		return fmt.Sprintf("%d / %d", r.Metrics.CorrectOffsets, r.Metrics.Offsets)
	})
	row("wrong / duplicate RESULTs", func(r S4Run) string {
		return fmt.Sprintf("%d / %d", r.Metrics.WrongResults, r.Metrics.DuplicateResults)
	})
	row("partials / contributions that reached hosts", func(r S4Run) string {
		return fmt.Sprintf("%d / %d", r.Metrics.PartialsAtHosts, r.Metrics.ContribAtHosts)
	})
	row("contributions sent / added by the leaves", func(r S4Run) string {
		return fmt.Sprintf("%d / %d", r.Metrics.Sent, r.Metrics.LeafAdded)
	})
	row("injected copies sent / dropped as duplicates by the leaves", func(r S4Run) string {
		return fmt.Sprintf("%d / %d", r.Metrics.DupsSent, r.Metrics.LeafDupDrop)
	})
	row("partials sent by the leaves", func(r S4Run) string { return fmt.Sprint(r.Metrics.PartialsSent) })
	for k := range runs[0].Metrics.Uppers {
		name := runs[0].Metrics.Uppers[k].Name
		row(name+": weight share / bucket share", func(r S4Run) string {
			u := r.Metrics.Uppers[k]
			return fmt.Sprintf("%.1f %% / %.1f %%", 100*u.WeightShare, 100*u.BucketShare)
		})
		row(name+": messages predicted (start tree) / aggregated, share, deviation", func(r S4Run) string {
			u := r.Metrics.Uppers[k]
			return fmt.Sprintf("%d / %g, %.1f %% (%+.2f points)", u.Predicted, u.Aggregated, 100*u.Share, u.DeviationPts)
		})
		row(name+": partials added per leaf / RESULTs (consistent)", func(r S4Run) string {
			u := r.Metrics.Uppers[k]
			ps := make([]string, len(u.PartialsIn))
			for i, p := range u.PartialsIn {
				ps[i] = fmt.Sprint(p)
			}
			return fmt.Sprintf("%s / %d (%v)", strings.Join(ps, ", "), u.Results, u.Consistent)
		})
	}
	row("goodput: aggregated vectors delivered (Gb/s)", func(r S4Run) string { return fmt.Sprintf("%.2f", r.Metrics.GoodputBps/1e9) })
	row("contribution vectors added by the leaves (Gb/s)", func(r S4Run) string { return fmt.Sprintf("%.2f", r.Metrics.ContribBps/1e9) })
	row("span, first due start to last RESULT (us)", func(r S4Run) string { return us(r.Metrics.SpanNs) })
	row("completion, last RESULT after due start, p50 / p99 / max (us)", func(r S4Run) string {
		return fmt.Sprintf("%s / %s / %s", us(r.Metrics.P50Ns), us(r.Metrics.P99Ns), us(r.Metrics.MaxNs))
	})
	row("messages in flight at once, most (slots of their offsets)", func(r S4Run) string {
		return fmt.Sprintf("%d (%d)", r.Metrics.PeakInFlight, r.Metrics.PeakInFlight*o.Offsets)
	})
	row("slot busy / taken over / stuck at the end (all switches)", func(r S4Run) string {
		return fmt.Sprintf("%d / %d / %d", r.Metrics.SlotBusy, r.Metrics.Takeovers, r.Metrics.SlotsStuck)
	})
	row("frames lost on the failed link", func(r S4Run) string { return fmt.Sprint(r.Metrics.LinkLost) })
	row("buckets moved by each recomputation", func(r S4Run) string { return ints(r.Metrics.Moved) })
	row("new tree on every switch at (us)", func(r S4Run) string {
		s := make([]string, len(r.Metrics.InstalledAllNs))
		for i, t := range r.Metrics.InstalledAllNs {
			s[i] = us(t)
		}
		return dash(strings.Join(s, ", "))
	})
	row("messages lost: on the failed spine's buckets / elsewhere", func(r S4Run) string {
		return fmt.Sprintf("%d / %d", len(r.Metrics.Lost)-r.Metrics.LostElsewhere, r.Metrics.LostElsewhere)
	})
	row("simulated (us) / events", func(r S4Run) string { return fmt.Sprintf("%s / %d", us(r.Metrics.EndNs), r.Metrics.Events) })
	b.WriteString("\n")
	for _, r := range runs {
		if len(r.Metrics.Lost) == 0 {
			continue
		}
		fmt.Fprintf(&b, "Lost in %s (group/message, due us, start-tree spine):", r.Label)
		for i, l := range r.Metrics.Lost {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, " %d/%d %s %s", l.Group, l.Message, us(l.DueNs), l.Upper)
		}
		b.WriteString("\n\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func ints(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return dash(strings.Join(s, ", "))
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
