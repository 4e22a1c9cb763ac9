package scenario

import (
	"fmt"
	"math"
	"strings"

	"github.com/fastcnp/fastcnp/host/agent"
	"github.com/fastcnp/fastcnp/sim/network"
	"github.com/fastcnp/fastcnp/wire"
)

// Totals are network-wide counters of a run.
type Totals struct {
	PFCXoff, PFCXon, PFCRefresh uint64 // PFC frames switches sent
	PFCRxHosts                  uint64 // PFC frames hosts received
	ECNMarks                    uint64
	SwitchCNPs                  uint64
	NPCNPs                      uint64
	Drops, LosslessDrops        uint64
	Pauses                      uint64 // port-state PAUSE events (ports that started a pause)
	ResumeNotCongested          uint64
	ResumeCongested             uint64
	ResumeUndetermined          uint64
	CheckDrained                uint64
	CheckCongested              uint64
	UndeterminedNs              int64
	PortsPaused                 int   // switch ports that received at least one PAUSE
	PortsUndetermined           int   // switch ports resumed undetermined at least once
	PausedNs                    int64 // time switch ports' lossless queues were held by PFC, summed over ports
	HostPausedNs                int64 // the same for hosts
	PeakQueueBytes              int64 // largest lossless egress queue of any switch port
	Events                      uint64
	EndNs                       int64
}

// TotalsOf sums a result.
func TotalsOf(r *network.Result) Totals {
	t := Totals{Events: r.Events, EndNs: r.EndNs}
	for _, s := range r.Switches {
		for _, p := range s.Ports {
			t.PFCXoff += p.PFCXoffTx
			t.PFCXon += p.PFCXonTx
			t.PFCRefresh += p.PFCRefreshTx
			t.ECNMarks += p.ECNMarks
			t.SwitchCNPs += p.SwitchCNPs
			t.Drops += p.Drops + p.IngressDrops
			t.LosslessDrops += p.LosslessDrops
			t.Pauses += p.Pauses
			t.ResumeNotCongested += p.ResumeNotCongested
			t.ResumeCongested += p.ResumeCongested
			t.ResumeUndetermined += p.ResumeUndetermined
			t.CheckDrained += p.CheckDrained
			t.CheckCongested += p.CheckCongested
			t.UndeterminedNs += p.UndeterminedNs
			t.PausedNs += p.PausedNs
			if p.Pauses > 0 {
				t.PortsPaused++
			}
			if p.ResumeUndetermined > 0 {
				t.PortsUndetermined++
			}
			t.PeakQueueBytes = max(t.PeakQueueBytes, p.QueueHighWater)
		}
	}
	for _, h := range r.Hosts {
		t.PFCRxHosts += h.PFCRx
		t.HostPausedNs += h.PausedNs
	}
	for _, f := range r.Flows {
		t.NPCNPs += f.NPCNPs
	}
	return t
}

// port returns the stats of switch node's port ifindex.
func port(r *network.Result, node, ifindex int) network.PortStats {
	for _, s := range r.Switches {
		if s.Node == node && ifindex >= 1 && ifindex <= len(s.Ports) {
			return s.Ports[ifindex-1]
		}
	}
	return network.PortStats{}
}

// FlowRate is one long flow's throughput against its fair share.
type FlowRate struct {
	Name       string  `json:"name"`
	Gbps       float64 `json:"gbps"`      // payload, over the measurement window
	FairGbps   float64 `json:"fair_gbps"` // max-min fair share, payload
	ECNMarks   uint64  `json:"ecn_marks"`
	SwitchCNPs uint64  `json:"switch_cnps"`
	NPCNPs     uint64  `json:"np_cnps"`
}

// S1Metrics is what S1 reports for one mode.
type S1Metrics struct {
	Mode   string     `json:"mode"`
	Flows  []FlowRate `json:"flows"`
	Totals Totals     `json:"totals"`
	// Paused is the PFC state of the first switch's uplink.
	Paused network.PortStats `json:"paused_port"`
}

// MeasureS1 computes S1's metrics from a run with rate samples.
func MeasureS1(sc *Scenario, r *network.Result) (S1Metrics, error) {
	m := S1Metrics{Mode: string(r.Mode), Totals: TotalsOf(r), Paused: port(r, sc.PausedNode, sc.PausedIfIndex)}
	from, to := sc.MeasureFromNs, r.EndNs
	at := map[[2]int64]int64{}
	for _, s := range r.RateSamples {
		at[[2]int64{int64(s.Flow), s.TimeNs}] = s.Delivered
	}
	for i, f := range r.Flows[:sc.Long] {
		d0, ok0 := at[[2]int64{int64(i), from}]
		d1 := f.Delivered
		if !ok0 || to <= from {
			return m, fmt.Errorf("S1 %s: no rate sample of flow %d at %d ns (sample period must divide it)", r.Mode, i, from)
		}
		m.Flows = append(m.Flows, FlowRate{Name: sc.FlowNames[i], Gbps: float64(d1-d0) * 8 / float64(to-from),
			FairGbps: sc.FairBps[i] / 1e9, ECNMarks: f.ECNMarks, SwitchCNPs: f.SwitchCNPs, NPCNPs: f.NPCNPs})
	}
	return m, nil
}

// S2Metrics is what S2 reports for one mode (seed 002 Table 6, plus the network's
// counters).
type S2Metrics struct {
	Mode        string  `json:"mode"`
	RTTMeanUs   float64 `json:"rtt_mean_us"`
	RTTP99Us    float64 `json:"rtt_p99_us"`
	RTTMaxUs    float64 `json:"rtt_max_us"`
	RTTSamples  int     `json:"rtt_samples"`
	MeanRateGb  float64 `json:"mean_rate_gbps"` // sum of sizes / sum of FCTs (seed 002 eq. 30)
	MeanFCTMs   float64 `json:"mean_fct_ms"`
	FinishMs    float64 `json:"finish_ms"` // time to finish all: the largest FCT
	IdealMs     float64 `json:"ideal_finish_ms"`
	LinkUse     float64 `json:"link_use"` // ideal / finish: the bottleneck's use over the run
	MeanSlowdwn float64 `json:"mean_slowdown"`
	Totals      Totals  `json:"totals"`
	Finished    int     `json:"finished"`
}

// MeasureS2 computes S2's metrics.
func MeasureS2(sc *Scenario, r *network.Result, payload int) S2Metrics {
	m := S2Metrics{Mode: string(r.Mode), Totals: TotalsOf(r), Finished: r.Finished}
	var rtts []float64
	var sum float64
	for _, f := range r.Flows {
		for _, s := range f.RTTs {
			us := float64(s.RTTNs) / 1e3
			rtts = append(rtts, us)
			sum += us
			m.RTTMaxUs = math.Max(m.RTTMaxUs, us)
		}
	}
	if len(rtts) > 0 {
		m.RTTMeanUs = sum / float64(len(rtts))
		m.RTTP99Us = percentile(rtts, 99)
	}
	m.RTTSamples = len(rtts)
	var size, fct, slow float64
	var total int64
	for _, f := range r.Flows {
		total += f.Spec.Size
		if f.FCTNs == 0 {
			continue
		}
		size += float64(f.Spec.Size)
		fct += float64(f.FCTNs)
		slow += math.Max(1, float64(f.FCTNs)/float64(f.StandaloneNs))
		m.FinishMs = math.Max(m.FinishMs, float64(f.FCTNs)/1e6)
	}
	if fct > 0 {
		m.MeanRateGb = size * 8 / fct
		m.MeanFCTMs = fct / float64(r.Finished) / 1e6
		m.MeanSlowdwn = slow / float64(r.Finished)
	}
	// The bottleneck (the receiver's link) carrying every byte back to back.
	if len(sc.Topo.Links) > 0 {
		rate := sc.Topo.Links[len(sc.Topo.Links)-1].RateBps
		eff := float64(payload) / float64(payload+agent.RoCEOverhead+4+wire.PreambleIFGBytes)
		m.IdealMs = float64(total) * 8 / (rate * eff) * 1e3
		if m.FinishMs > 0 {
			m.LinkUse = m.IdealMs / m.FinishMs
		}
	}
	return m
}

// Table is a side-by-side text table: a header row and rows of cells.
type Table struct {
	Header []string
	Rows   [][]string
}

// Markdown renders t as a GitHub table.
func (t *Table) Markdown() string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(t.Header, " | ") + " |\n|")
	for range t.Header {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}

func f1(v float64) string { return fmt.Sprintf("%.1f", v) }
func f2(v float64) string { return fmt.Sprintf("%.2f", v) }
func u(v uint64) string   { return fmt.Sprintf("%d", v) }

// S1Table puts the modes side by side.
func S1Table(ms []S1Metrics) Table {
	t := Table{Header: []string{"S1"}}
	for _, m := range ms {
		t.Header = append(t.Header, m.Mode)
	}
	row := func(name string, cell func(m *S1Metrics) string) {
		r := []string{name}
		for i := range ms {
			r = append(r, cell(&ms[i]))
		}
		t.Rows = append(t.Rows, r)
	}
	if len(ms) == 0 {
		return t
	}
	for k, f := range ms[0].Flows {
		row(fmt.Sprintf("%s Gb/s (fair %.1f)", f.Name, f.FairGbps), func(m *S1Metrics) string { return f1(m.Flows[k].Gbps) })
	}
	row("senders' long flows, total Gb/s", func(m *S1Metrics) string {
		var s float64
		for _, f := range m.Flows[:len(m.Flows)-1] {
			s += f.Gbps
		}
		return f1(s)
	})
	row("victim: share of its fair rate", func(m *S1Metrics) string {
		v := m.Flows[len(m.Flows)-1]
		return fmt.Sprintf("%.0f%%", 100*v.Gbps/v.FairGbps)
	})
	row("senders: Jain fairness", func(m *S1Metrics) string { return fmt.Sprintf("%.3f", jain(m.Flows[:len(m.Flows)-1])) })
	row("victim ECN marks / switch CNPs / NP CNPs", func(m *S1Metrics) string {
		v := m.Flows[len(m.Flows)-1]
		return fmt.Sprintf("%d / %d / %d", v.ECNMarks, v.SwitchCNPs, v.NPCNPs)
	})
	row("senders ECN marks / switch CNPs / NP CNPs", func(m *S1Metrics) string {
		var a, b, c uint64
		for _, f := range m.Flows[:len(m.Flows)-1] {
			a, b, c = a+f.ECNMarks, b+f.SwitchCNPs, c+f.NPCNPs
		}
		return fmt.Sprintf("%d / %d / %d", a, b, c)
	})
	row("PFC XOFF / XON / refresh sent", func(m *S1Metrics) string {
		return fmt.Sprintf("%d / %d / %d", m.Totals.PFCXoff, m.Totals.PFCXon, m.Totals.PFCRefresh)
	})
	row("uplink: pauses received, paused time us", func(m *S1Metrics) string {
		return fmt.Sprintf("%d, %.1f", m.Paused.Pauses, float64(m.Paused.PausedNs)/1e3)
	})
	row("uplink resumes: not congested / congested / undetermined", func(m *S1Metrics) string {
		p := m.Paused
		return fmt.Sprintf("%d / %d / %d", p.ResumeNotCongested, p.ResumeCongested, p.ResumeUndetermined)
	})
	row("uplink checks: drained / congested; undetermined us", func(m *S1Metrics) string {
		p := m.Paused
		return fmt.Sprintf("%d / %d; %.1f", p.CheckDrained, p.CheckCongested, float64(p.UndeterminedNs)/1e3)
	})
	row("uplink ECN marks / switch CNPs", func(m *S1Metrics) string {
		return fmt.Sprintf("%d / %d", m.Paused.ECNMarks, m.Paused.SwitchCNPs)
	})
	row("peak queue KB", func(m *S1Metrics) string { return f1(float64(m.Totals.PeakQueueBytes) / 1e3) })
	row("drops (lossless)", func(m *S1Metrics) string { return fmt.Sprintf("%d (%d)", m.Totals.Drops, m.Totals.LosslessDrops) })
	return t
}

// jain is Jain's fairness index of the flows' normalised rates.
func jain(fs []FlowRate) float64 {
	var s, s2 float64
	for _, f := range fs {
		x := f.Gbps / f.FairGbps
		s += x
		s2 += x * x
	}
	if s2 == 0 {
		return 0
	}
	return s * s / (float64(len(fs)) * s2)
}

// S2Table puts the modes side by side.
func S2Table(ms []S2Metrics) Table {
	t := Table{Header: []string{"S2"}}
	for _, m := range ms {
		t.Header = append(t.Header, m.Mode)
	}
	row := func(name string, cell func(m *S2Metrics) string) {
		r := []string{name}
		for i := range ms {
			r = append(r, cell(&ms[i]))
		}
		t.Rows = append(t.Rows, r)
	}
	row("RTT mean / p99 / max us", func(m *S2Metrics) string {
		return fmt.Sprintf("%.2f / %.2f / %.1f", m.RTTMeanUs, m.RTTP99Us, m.RTTMaxUs)
	})
	row("mean rate Gb/s (sum size / sum FCT)", func(m *S2Metrics) string { return f2(m.MeanRateGb) })
	row("mean FCT ms", func(m *S2Metrics) string { return f2(m.MeanFCTMs) })
	row("time to finish all ms (ideal)", func(m *S2Metrics) string { return fmt.Sprintf("%.2f (%.2f)", m.FinishMs, m.IdealMs) })
	row("bottleneck use", func(m *S2Metrics) string { return fmt.Sprintf("%.1f%%", 100*m.LinkUse) })
	row("mean FCT slowdown", func(m *S2Metrics) string { return f2(m.MeanSlowdwn) })
	row("peak queue KB", func(m *S2Metrics) string { return f1(float64(m.Totals.PeakQueueBytes) / 1e3) })
	row("PFC XOFF sent", func(m *S2Metrics) string { return u(m.Totals.PFCXoff) })
	row("resumes undetermined / congested", func(m *S2Metrics) string {
		return fmt.Sprintf("%d / %d", m.Totals.ResumeUndetermined, m.Totals.ResumeCongested)
	})
	row("ECN marks / switch CNPs / NP CNPs", func(m *S2Metrics) string {
		return fmt.Sprintf("%d / %d / %d", m.Totals.ECNMarks, m.Totals.SwitchCNPs, m.Totals.NPCNPs)
	})
	row("drops (lossless)", func(m *S2Metrics) string { return fmt.Sprintf("%d (%d)", m.Totals.Drops, m.Totals.LosslessDrops) })
	return t
}
