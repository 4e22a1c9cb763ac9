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
// run, the throughput, its share of the max-min fair share, CNPs, ECN
// marks, the PAUSE frames its sender's host received and how long they held
// the sender; then one row per switch counter. Runs should be of the same
// topology (the flows of the first run name the rows).
func WriteTable(w io.Writer, runs []*Result) error {
	if len(runs) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"flow", "fair Mb/s"}
	for _, r := range runs {
		m := string(r.Mode)
		head = append(head, m+" Mb/s", m+" %fair", m+" CNPs", m+" ECN", m+" PAUSE", m+" paused s")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, f := range runs[0].Flows {
		row := []string{label(f), mbps(f.FairShareBps)}
		for _, r := range runs {
			g := r.Flow(f.Name)
			if g == nil {
				row = append(row, "-", "-", "-", "-", "-", "-")
				continue
			}
			row = append(row, mbps(g.ThroughputBps), fmt.Sprintf("%.0f%%", 100*g.ShareOfFair),
				strconv.FormatUint(g.CNPsSwitch+g.CNPsNP, 10), strconv.FormatUint(g.ECNMarks, 10),
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
	head = []string{"switch counter", ""}
	for _, r := range runs {
		head = append(head, string(r.Mode), "", "", "", "", "")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, c := range counters {
		row := []string{c.name, ""}
		for _, r := range runs {
			var parts []string
			for _, s := range r.Switches {
				parts = append(parts, fmt.Sprintf("%s:%d", s.Name, c.get(s)))
			}
			row = append(row, strings.Join(parts, " "), "", "", "", "", "")
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
	var b strings.Builder
	b.WriteString("| flow | fair share (Mb/s) |")
	for _, r := range runs {
		fmt.Fprintf(&b, " %s: Mb/s | %s: %% of fair | %s: CNPs | %s: ECN marks | %s: PAUSE rx | %s: paused s |", r.Mode, r.Mode, r.Mode, r.Mode, r.Mode, r.Mode)
	}
	b.WriteString("\n|---|---:|" + strings.Repeat("---:|---:|---:|---:|---:|---:|", len(runs)) + "\n")
	for _, f := range runs[0].Flows {
		name := label(f)
		if f.Victim {
			name = "**" + name + "**"
		}
		fmt.Fprintf(&b, "| %s | %s |", name, mbps(f.FairShareBps))
		for _, r := range runs {
			g := r.Flow(f.Name)
			if g == nil {
				b.WriteString(" - | - | - | - | - | - |")
				continue
			}
			fmt.Fprintf(&b, " %s | %.0f%% | %d | %d | %d | %.2f |", mbps(g.ThroughputBps), 100*g.ShareOfFair, g.CNPsSwitch+g.CNPsNP, g.ECNMarks,
				g.PauseRx, g.PausedMs/1e3)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n| switch counter (all switches) |")
	for _, r := range runs {
		fmt.Fprintf(&b, " %s |", r.Mode)
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
	// MeanFCTMs and MaxFCTMs cover completed sized flows; Completed counts
	// them out of Sized.
	MeanFCTMs, MaxFCTMs float64
	Completed, Sized    int
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
			fcts++
		}
	}
	if rtts > 0 {
		s.RTTMeanUs /= float64(rtts)
	}
	if fcts > 0 {
		s.MeanFCTMs /= float64(fcts)
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
		fmt.Fprintf(&b, " %s |", r.Mode)
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
		{"mean FCT / time to finish all (ms)", func(s RunSummary) string {
			return fmt.Sprintf("%.0f / %.0f", s.MeanFCTMs, s.MaxFCTMs)
		}},
		{"peak egress queue (KB)", func(s RunSummary) string { return fmt.Sprintf("%.1f", float64(s.PeakQueueBytes)/1e3) }},
		{"PAUSE frames sent", func(s RunSummary) string { return strconv.FormatUint(s.PauseTx, 10) }},
		{"drops (all / lossless)", func(s RunSummary) string { return fmt.Sprintf("%d / %d", s.Drops, s.LosslessDrops) }},
		{"PAUSE frames received by hosts", func(s RunSummary) string { return strconv.FormatUint(s.HostPauseRx, 10) }},
		{"CPU s: switches / hosts / fastcnpd", func(s RunSummary) string {
			return fmt.Sprintf("%.1f / %.1f / %.1f", s.CPUSwitches, s.CPUHosts, s.CPUController)
		}},
		{"machine load (1-min average, start / end)", func(s RunSummary) string {
			return fmt.Sprintf("%.1f / %.1f", s.LoadAvg[0], s.LoadAvg[1])
		}},
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
		"done", "fct_ms", "rtt_mean_us", "rtt_p99_us", "rtt_max_us", "pause_rx", "paused_ms"})
	for _, r := range runs {
		for _, f := range r.Flows {
			_ = cw.Write([]string{r.Topology, string(r.Mode), f.Name, f.Src, f.Dst, strconv.FormatBool(f.Victim),
				ff(f.FairShareBps), ff(f.ThroughputBps), ff(f.ShareOfFair), strconv.FormatInt(f.BytesReceived, 10),
				strconv.FormatUint(f.CNPsSwitch, 10), strconv.FormatUint(f.CNPsNP, 10), strconv.FormatUint(f.ECNMarks, 10),
				strconv.FormatUint(f.Retransmits, 10), strconv.FormatUint(f.Timeouts, 10), strconv.FormatBool(f.Done),
				ff(f.FCTMs), ff(f.RTTMeanUs), ff(f.RTTP99Us), ff(f.RTTMaxUs), strconv.FormatUint(f.PauseRx, 10), ff(f.PausedMs)})
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("testbed: csv: %w", err)
	}
	return nil
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
