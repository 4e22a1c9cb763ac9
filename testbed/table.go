package testbed

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteTable prints runs side by side: one row per flow with, for each
// run, the throughput, its share of the reference rate (the max-min fair
// share of a long flow; for sized flows the fluid ideal, with the FCT and
// its slowdown), CNPs, ECN marks, the PAUSE frames its sender's host
// received and how long they held the sender; then one row per switch
// counter. INC flows have no row (WriteSummaryMarkdown reports INC). Runs
// should be of the same topology (the flows of the first run name the rows).
func WriteTable(w io.Writer, runs []*Result) error {
	if len(runs) == 0 {
		return nil
	}
	sized := hasSized(runs[0])
	perRun, lead := 6, 2 // cells per run, leading cells
	if sized {
		perRun, lead = 8, 3
	}
	dash := func(n int) []string { return strings.Split(strings.Repeat("-", n), "") }
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"flow", "fair Mb/s"}
	if sized {
		head = []string{"flow", "ideal FCT ms", "ideal Mb/s"}
	}
	for _, r := range runs {
		m := r.Label()
		if sized {
			head = append(head, m+" Mb/s", m+" %ideal", m+" FCT ms", m+" slowdown")
		} else {
			head = append(head, m+" Mb/s", m+" %fair")
		}
		head = append(head, m+" CNPs", m+" ECN", m+" PAUSE", m+" paused s")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, f := range runs[0].Flows {
		if f.INC {
			continue
		}
		row := []string{label(f), mbps(f.FairShareBps)}
		if sized {
			row = []string{label(f), fmt.Sprintf("%.0f", f.IdealFCTMs), mbps(f.FairShareBps)}
		}
		for _, r := range runs {
			g := r.Flow(f.Name)
			if g == nil {
				row = append(row, dash(perRun)...)
				continue
			}
			row = append(row, mbps(g.ThroughputBps), fmt.Sprintf("%.0f%%", 100*g.ShareOfFair))
			if sized {
				row = append(row, fmt.Sprintf("%.0f", g.FCTMs), fmt.Sprintf("%.2f", g.Slowdown))
			}
			row = append(row, strconv.FormatUint(g.CNPsSwitch+g.CNPsNP, 10), strconv.FormatUint(g.ECNMarks, 10),
				strconv.FormatUint(g.PauseRx, 10), fmt.Sprintf("%.2f", g.PausedMs/1e3))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	fmt.Fprintln(tw, "\t\t")
	counters := []struct {
		name string
		get  func(SwitchCounters) uint64
	}{
		{"PAUSE frames sent", func(s SwitchCounters) uint64 { return s.PauseTx }},
		{"PAUSE frames received", func(s SwitchCounters) uint64 { return s.PauseRx }},
		{"switch CNPs", func(s SwitchCounters) uint64 { return s.SwitchCNPs }},
		{"ECN marks", func(s SwitchCounters) uint64 { return s.ECNMarks }},
		{"drops (all)", func(s SwitchCounters) uint64 { return s.Drops }},
		{"drops (lossless)", func(s SwitchCounters) uint64 { return s.LosslessDrops }},
		{"  at host ingress", func(s SwitchCounters) uint64 { return s.HostEdgeLosslessDrops }},
		{"  at fabric ingress", func(s SwitchCounters) uint64 { return s.FabricLosslessDrops }},
		{"headroom peak %", func(s SwitchCounters) uint64 { return s.HeadroomPeakPercent() }},
		{"lag max ms", func(s SwitchCounters) uint64 { return uint64(s.LateMaxMs + 0.5) }},
	}
	blank := make([]string, perRun-1)
	head = append([]string{"switch counter"}, make([]string, lead-1)...)
	for _, r := range runs {
		head = append(append(head, r.Label()), blank...)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, c := range counters {
		row := append([]string{c.name}, make([]string, lead-1)...)
		for _, r := range runs {
			var parts []string
			for _, s := range r.Switches {
				parts = append(parts, fmt.Sprintf("%s:%d", s.Name, c.get(s)))
			}
			row = append(append(row, strings.Join(parts, " ")), blank...)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	return tw.Flush()
}

// WriteMarkdown writes the same comparison as a Markdown table.
func WriteMarkdown(w io.Writer, runs []*Result) error {
	if len(runs) == 0 {
		return nil
	}
	sized := hasSized(runs[0])
	var b strings.Builder
	perRun := 6
	if sized {
		perRun = 8
		b.WriteString("| flow | ideal FCT (ms) | ideal rate (Mb/s) |")
	} else {
		b.WriteString("| flow | fair share (Mb/s) |")
	}
	for _, r := range runs {
		m := r.Label()
		if sized {
			fmt.Fprintf(&b, " %s: Mb/s | %s: %% of ideal | %s: FCT (ms) | %s: slowdown |", m, m, m, m)
		} else {
			fmt.Fprintf(&b, " %s: Mb/s | %s: %% of fair |", m, m)
		}
		fmt.Fprintf(&b, " %s: CNPs | %s: ECN marks | %s: PAUSE rx | %s: paused s |", m, m, m, m)
	}
	b.WriteString("\n|---|---:|")
	if sized {
		b.WriteString("---:|")
	}
	b.WriteString(strings.Repeat("---:|", perRun*len(runs)) + "\n")
	for _, f := range runs[0].Flows {
		if f.INC {
			continue
		}
		name := label(f)
		if f.Victim {
			name = "**" + name + "**"
		}
		if sized {
			fmt.Fprintf(&b, "| %s | %.0f | %s |", name, f.IdealFCTMs, mbps(f.FairShareBps))
		} else {
			fmt.Fprintf(&b, "| %s | %s |", name, mbps(f.FairShareBps))
		}
		for _, r := range runs {
			g := r.Flow(f.Name)
			if g == nil {
				b.WriteString(strings.Repeat(" - |", perRun))
				continue
			}
			fmt.Fprintf(&b, " %s | %.0f%% |", mbps(g.ThroughputBps), 100*g.ShareOfFair)
			if sized {
				fmt.Fprintf(&b, " %.0f | %.2f |", g.FCTMs, g.Slowdown)
			}
			fmt.Fprintf(&b, " %d | %d | %d | %.2f |", g.CNPsSwitch+g.CNPsNP, g.ECNMarks, g.PauseRx, g.PausedMs/1e3)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n| switch counter (all switches) |")
	for _, r := range runs {
		fmt.Fprintf(&b, " %s |", r.Label())
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(runs)) + "\n")
	rows := []struct {
		name string
		get  func(SwitchCounters) uint64
	}{
		{"PAUSE frames sent", func(s SwitchCounters) uint64 { return s.PauseTx }},
		{"PAUSE frames received", func(s SwitchCounters) uint64 { return s.PauseRx }},
		{"switch CNPs", func(s SwitchCounters) uint64 { return s.SwitchCNPs }},
		{"ECN marks", func(s SwitchCounters) uint64 { return s.ECNMarks }},
		{"drops (all classes)", func(s SwitchCounters) uint64 { return s.Drops }},
		{"drops (lossless class)", func(s SwitchCounters) uint64 { return s.LosslessDrops }},
		{"of which at ingress from hosts", func(s SwitchCounters) uint64 { return s.HostEdgeLosslessDrops }},
		{"of which at ingress from switches", func(s SwitchCounters) uint64 { return s.FabricLosslessDrops }},
		{"PFC headroom peak (% of reserved, worst ingress port)", func(s SwitchCounters) uint64 { return s.HeadroomPeakPercent() }},
		{"scheduler lag max (ms)", func(s SwitchCounters) uint64 { return uint64(s.LateMaxMs + 0.5) }},
	}
	for _, row := range rows {
		fmt.Fprintf(&b, "| %s |", row.name)
		for _, r := range runs {
			var parts []string
			for _, s := range r.Switches {
				parts = append(parts, fmt.Sprintf("%s %d", s.Name, row.get(s)))
			}
			fmt.Fprintf(&b, " %s |", strings.Join(parts, ", "))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// RunSummary condenses a run the way spec 06 reports S2: RTT, rates,
// completion times, peak queue, PAUSE frames and drops.
type RunSummary struct {
	// RTTMeanUs is the mean of the flows' mean RTTs; RTTP99Us and RTTMaxUs
	// the largest p99 and maximum of any flow.
	RTTMeanUs, RTTP99Us, RTTMaxUs float64
	// MeanRateBps is the mean throughput of the flows.
	MeanRateBps float64
	// MeanFCTMs and MaxFCTMs cover completed sized flows (MaxFCTMs is the
	// largest single FCT, not the time to finish all); Completed counts
	// them out of Sized.
	MeanFCTMs, MaxFCTMs float64
	Completed, Sized    int
	// MakespanMs is the time to finish all: the last completion minus the
	// first due start, on the agents' common clock (0 unless every sized
	// flow completed); IdealMakespanMs the same in the fluid model.
	MakespanMs, IdealMakespanMs float64
	// MeanSlowdown and MaxSlowdown are the FCT slowdowns (FCT / fluid
	// ideal FCT) of the completed sized flows.
	MeanSlowdown, MaxSlowdown float64
	// MaxStartLateMs is how late any agent started a flow (Result).
	MaxStartLateMs float64
	// MaxLinkUse is the highest LinkUse.Use of the run, on link
	// MaxLinkUseLink; Violations counts links that failed the check.
	MaxLinkUse     float64
	MaxLinkUseLink string
	Violations     int
	// INCMessages counts INC messages, INCComplete those whose destination
	// checked every offset; INCCorrect, INCWrong, INCDuplicates sum the
	// destinations' counts.
	INCMessages, INCComplete            int
	INCCorrect, INCWrong, INCDuplicates uint64
	// PeakQueueBytes is the largest egress queue of any switch port.
	PeakQueueBytes int64
	// PauseTx, Drops and LosslessDrops are summed over the switches.
	PauseTx, Drops, LosslessDrops uint64
	// HostPauseRx sums the PAUSE frames the flows' senders received.
	HostPauseRx uint64
	// CPU seconds of the run's processes by kind, and the machine's load
	// average at the start and the end (Result.CPUSeconds, LoadAvg).
	CPUSwitches, CPUHosts, CPUController float64
	LoadAvg                              [2]float64
}

// Summary computes the run summary.
func (r *Result) Summary() RunSummary {
	var s RunSummary
	var rtts, fcts int
	for _, f := range r.Flows {
		s.HostPauseRx += f.PauseRx
		s.MeanRateBps += f.ThroughputBps / float64(len(r.Flows))
		if f.RTTMeanUs > 0 {
			s.RTTMeanUs += f.RTTMeanUs
			rtts++
		}
		s.RTTP99Us = max(s.RTTP99Us, f.RTTP99Us)
		s.RTTMaxUs = max(s.RTTMaxUs, f.RTTMaxUs)
		if !f.Sized {
			continue
		}
		s.Sized++
		if f.Done {
			s.Completed++
		}
		if f.FCTMs > 0 {
			s.MeanFCTMs += f.FCTMs
			s.MaxFCTMs = max(s.MaxFCTMs, f.FCTMs)
			s.MeanSlowdown += f.Slowdown
			s.MaxSlowdown = max(s.MaxSlowdown, f.Slowdown)
			fcts++
		}
	}
	if rtts > 0 {
		s.RTTMeanUs /= float64(rtts)
	}
	if fcts > 0 {
		s.MeanFCTMs /= float64(fcts)
		s.MeanSlowdown /= float64(fcts)
	}
	s.MakespanMs, s.IdealMakespanMs, s.MaxStartLateMs = r.MakespanMs, r.IdealMakespanMs, r.MaxStartLateMs
	for _, l := range r.Links {
		if l.Use > s.MaxLinkUse || s.MaxLinkUseLink == "" {
			s.MaxLinkUse, s.MaxLinkUseLink = l.Use, l.Link
		}
		if l.Violation {
			s.Violations++
		}
	}
	for _, m := range r.INC {
		s.INCMessages++
		if m.Check.Complete {
			s.INCComplete++
		}
		s.INCCorrect += m.Check.Correct
		s.INCWrong += m.Check.Wrong
		s.INCDuplicates += m.Check.Duplicates
	}
	for _, sw := range r.Switches {
		for _, p := range sw.Ports {
			s.PeakQueueBytes = max(s.PeakQueueBytes, p.QueueHighWater)
		}
		s.PauseTx += sw.PauseTx
		s.Drops += sw.Drops
		s.LosslessDrops += sw.LosslessDrops
		s.CPUSwitches += r.CPUSeconds[sw.Name]
	}
	for name, v := range r.CPUSeconds {
		switch {
		case name == "fastcnpd":
			s.CPUController += v
		case r.isSwitch(name):
		default:
			s.CPUHosts += v
		}
	}
	s.LoadAvg = r.LoadAvg
	return s
}

func (r *Result) isSwitch(name string) bool {
	for _, sw := range r.Switches {
		if sw.Name == name {
			return true
		}
	}
	return false
}

// WriteSummaryMarkdown writes the run summaries side by side.
func WriteSummaryMarkdown(w io.Writer, runs []*Result) error {
	var b strings.Builder
	b.WriteString("| per run |")
	for _, r := range runs {
		fmt.Fprintf(&b, " %s |", r.Label())
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(runs)) + "\n")
	rows := []struct {
		name string
		get  func(RunSummary) string
	}{
		{"RTT mean / max p99 / max (us)", func(s RunSummary) string {
			return fmt.Sprintf("%.0f / %.0f / %.0f", s.RTTMeanUs, s.RTTP99Us, s.RTTMaxUs)
		}},
		{"mean rate per flow (Mb/s)", func(s RunSummary) string { return mbps(s.MeanRateBps) }},
		{"sized flows completed", func(s RunSummary) string { return fmt.Sprintf("%d of %d", s.Completed, s.Sized) }},
		{"FCT mean / max (ms)", func(s RunSummary) string {
			return fmt.Sprintf("%.0f / %.0f", s.MeanFCTMs, s.MaxFCTMs)
		}},
		{"FCT slowdown vs fluid ideal, mean / max", func(s RunSummary) string {
			return fmt.Sprintf("%.2f / %.2f", s.MeanSlowdown, s.MaxSlowdown)
		}},
		{"time to finish all: measured / fluid ideal (ms)", func(s RunSummary) string {
			if s.MakespanMs == 0 {
				return fmt.Sprintf("- / %.0f", s.IdealMakespanMs)
			}
			return fmt.Sprintf("%.0f / %.0f", s.MakespanMs, s.IdealMakespanMs)
		}},
		{"peak egress queue (KB)", func(s RunSummary) string { return fmt.Sprintf("%.1f", float64(s.PeakQueueBytes)/1e3) }},
		{"PAUSE frames sent", func(s RunSummary) string { return strconv.FormatUint(s.PauseTx, 10) }},
		{"drops (all / lossless)", func(s RunSummary) string { return fmt.Sprintf("%d / %d", s.Drops, s.LosslessDrops) }},
		{"PAUSE frames received by hosts", func(s RunSummary) string { return strconv.FormatUint(s.HostPauseRx, 10) }},
		{"CPU s: switches / hosts / fastcnpd", func(s RunSummary) string {
			return fmt.Sprintf("%.1f / %.1f / %.1f", s.CPUSwitches, s.CPUHosts, s.CPUController)
		}},
		{"flow start lateness, max (ms)", func(s RunSummary) string { return fmt.Sprintf("%.1f", s.MaxStartLateMs) }},
		{"link check: highest use of capacity / violations", func(s RunSummary) string {
			return fmt.Sprintf("%.0f%% (%s) / %d", 100*s.MaxLinkUse, s.MaxLinkUseLink, s.Violations)
		}},
		{"machine load (1-min average, start / end)", func(s RunSummary) string {
			return fmt.Sprintf("%.1f / %.1f", s.LoadAvg[0], s.LoadAvg[1])
		}},
	}
	if len(runs) > 0 && len(runs[0].INC) > 0 {
		rows = append(rows, []struct {
			name string
			get  func(RunSummary) string
		}{
			{"INC messages complete", func(s RunSummary) string { return fmt.Sprintf("%d of %d", s.INCComplete, s.INCMessages) }},
			{"INC results correct / wrong / duplicate", func(s RunSummary) string {
				return fmt.Sprintf("%d / %d / %d", s.INCCorrect, s.INCWrong, s.INCDuplicates)
			}},
		}...)
	}
	if len(runs) > 0 && !hasSized(runs[0]) {
		// FCT, slowdown and makespan rows only mean something for sized flows.
		kept := rows[:0]
		for _, row := range rows {
			if !strings.HasPrefix(row.name, "FCT") && !strings.HasPrefix(row.name, "time to finish") && row.name != "sized flows completed" {
				kept = append(kept, row)
			}
		}
		rows = kept
	}
	for _, row := range rows {
		fmt.Fprintf(&b, "| %s |", row.name)
		for _, r := range runs {
			fmt.Fprintf(&b, " %s |", row.get(r.Summary()))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return fmt.Errorf("testbed: summary: %w", err)
	}
	return nil
}

// WriteCSV writes one row per (run, flow).
func WriteCSV(w io.Writer, runs []*Result) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"topology", "mode", "flow", "src", "dst", "victim", "fair_share_bps", "throughput_bps",
		"share_of_fair", "bytes_received", "cnps_switch", "cnps_np", "ecn_marks", "retransmits", "timeouts",
		"done", "fct_ms", "rtt_mean_us", "rtt_p99_us", "rtt_max_us", "pause_rx", "paused_ms",
		"ideal_fct_ms", "slowdown", "start_unix_ns", "end_unix_ns", "start_late_ms"})
	for _, r := range runs {
		for _, f := range r.Flows {
			_ = cw.Write([]string{r.Topology, r.Label(), f.Name, f.Src, f.Dst, strconv.FormatBool(f.Victim),
				ff(f.FairShareBps), ff(f.ThroughputBps), ff(f.ShareOfFair), strconv.FormatInt(f.BytesReceived, 10),
				strconv.FormatUint(f.CNPsSwitch, 10), strconv.FormatUint(f.CNPsNP, 10), strconv.FormatUint(f.ECNMarks, 10),
				strconv.FormatUint(f.Retransmits, 10), strconv.FormatUint(f.Timeouts, 10), strconv.FormatBool(f.Done),
				ff(f.FCTMs), ff(f.RTTMeanUs), ff(f.RTTP99Us), ff(f.RTTMaxUs), strconv.FormatUint(f.PauseRx, 10), ff(f.PausedMs),
				ff(f.IdealFCTMs), ff(f.Slowdown), strconv.FormatInt(f.StartUnixNs, 10), strconv.FormatInt(f.EndUnixNs, 10), ff(f.StartLateMs)})
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("testbed: csv: %w", err)
	}
	return nil
}

// hasSized reports whether a run has sized (non-INC) flows.
func hasSized(r *Result) bool {
	for _, f := range r.Flows {
		if f.Sized && !f.INC {
			return true
		}
	}
	return false
}

// label names a flow in tables, marking the victim.
func label(f FlowResult) string {
	if f.Victim && f.Name != "victim" {
		return f.Name + " (victim)"
	}
	return f.Name
}

func mbps(bps float64) string { return strconv.FormatFloat(bps/1e6, 'f', 1, 64) }

func ff(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
