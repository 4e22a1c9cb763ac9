package testbed

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/controller/fabric"
	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/wire"
)

// INCReport is what an INC run (spec 06 S4) measured: exactness, path
// consistency and load of the upper switches against their weights, from
// the destinations' checks and the switches' counters.
type INCReport struct {
	// Messages, offsets and results as the destinations checked them.
	Messages        int    `json:"messages"`
	Complete        int    `json:"complete"`
	Offsets         int    `json:"offsets"`
	CorrectOffsets  uint64 `json:"correct_offsets"`
	MissingOffsets  uint64 `json:"missing_offsets"`
	WrongResults    uint64 `json:"wrong_results"`
	DuplicateResult uint64 `json:"duplicate_results"`
	// PartialsAtHosts: partial aggregates no upper switch aggregated.
	PartialsAtHosts uint64 `json:"partials_at_hosts"`
	// Contributions the workers' flows sent (every message's offsets),
	// injected duplicates sent, and the switches' INC counters summed
	// over leaves and over upper switches.
	Contributions uint64       `json:"contributions"`
	DupsSent      uint64       `json:"dups_sent"`
	Leaves        []INCSwitch  `json:"leaves"`
	Uppers        []INCUpperLd `json:"uppers"`
	LeafSlotBusy  uint64       `json:"leaf_slot_busy"`
	UpperSlotBusy uint64       `json:"upper_slot_busy"`
	Takeovers     uint64       `json:"takeovers"`
	DupsDropped   uint64       `json:"dups_dropped"`
	// LeafDropped are the leaves' pipeline drops (counter dropped): INC
	// packets of no data flow (a copy that came after four newer data
	// flows of its connection) and anything else dropped there.
	LeafDropped uint64 `json:"leaf_dropped"`
	// LeafContributions are the contributions the leaves added: exactly
	// Contributions when no copy was added twice.
	LeafContributions uint64  `json:"leaf_contributions"`
	PartialsSent      uint64  `json:"partials_sent"`
	UpperResults      uint64  `json:"upper_results"`
	LeafSlotsUsed     int     `json:"leaf_slots_used_max"`
	UpperSlotsUsed    int     `json:"upper_slots_used_max"`
	SlotsStuck        int     `json:"slots_stuck"`
	PathConsistent    bool    `json:"path_consistent"`
	MaxDeviationPct   float64 `json:"max_deviation_pct"`
	// Goodput is the aggregated vector bytes the destinations received
	// (64 per correct offset) over the span from the first message's due
	// start to the last RESULT, in b/s; ContribBps the workers' INC
	// payload the switches consumed over the same span.
	SpanMs     float64 `json:"span_ms"`
	GoodputBps float64 `json:"goodput_bps"`
	ContribBps float64 `json:"contrib_bps"`
	// LatencyMs: per complete message, its last RESULT after its due start.
	LatencyP50Ms float64 `json:"latency_p50_ms"`
	LatencyP99Ms float64 `json:"latency_p99_ms"`
	LatencyMaxMs float64 `json:"latency_max_ms"`
	// PeakInFlight is the most messages due and not yet complete at once.
	PeakInFlight int `json:"peak_in_flight"`
	// Detail has one line per message.
	Detail []INCMessageDetail `json:"detail"`
}

// INCMessageDetail is one message of the report.
type INCMessageDetail struct {
	Group   uint16 `json:"group"`
	Message uint16 `json:"message"`
	// Upper is the upper switch the message's bucket named in the tree
	// without failures ("" for a group behind one leaf).
	Upper         string  `json:"upper,omitempty"`
	DueMs         float64 `json:"due_ms"`
	LastResultMs  float64 `json:"last_result_ms,omitempty"`
	Complete      bool    `json:"complete"`
	MissingOffset uint64  `json:"missing_offsets,omitempty"`
}

// INCSwitch is a leaf's INC counters.
type INCSwitch struct {
	Name          string `json:"name"`
	Contributions uint64 `json:"contributions"`
	Duplicates    uint64 `json:"duplicates"`
	Dropped       uint64 `json:"dropped"`
	Partials      uint64 `json:"partials_sent"`
	SlotBusy      uint64 `json:"slot_busy"`
	SlotsUsed     int    `json:"slots_used"`
	SlotsStuck    int    `json:"slots_stuck"`
}

// INCUpperLd is an upper switch's load against its weight.
type INCUpperLd struct {
	Name string `json:"name"`
	// Weight is its inc.capacity, WeightShare its share of the weights,
	// BucketShare its share of the installed bucket table.
	Weight      uint64  `json:"weight"`
	WeightShare float64 `json:"weight_share"`
	BucketShare float64 `json:"bucket_share"`
	// Predicted is the messages whose INC ID hashes to a bucket of this
	// switch in the table (the data plane's hash, offline); Aggregated
	// the messages it aggregated (its RESULTs / offsets per message);
	// Share = Aggregated over all upper switches' messages, and
	// DeviationPct = 100 * (Share - WeightShare).
	Predicted    int     `json:"predicted"`
	Aggregated   float64 `json:"aggregated"`
	Share        float64 `json:"share"`
	DeviationPct float64 `json:"deviation_pct"`
	// Partials received (by ingress port: one per leaf) and RESULTs made;
	// Consistent: every partial it received completed an aggregation of
	// all the leaves of its group (partials = leaves per group x results).
	Partials   uint64            `json:"partials"`
	PerLeaf    map[string]uint64 `json:"partials_per_leaf"`
	Results    uint64            `json:"results"`
	SlotBusy   uint64            `json:"slot_busy"`
	SlotsUsed  int               `json:"slots_used"`
	SlotsStuck int               `json:"slots_stuck"`
	Consistent bool              `json:"consistent"`
}

// AnalyzeINC builds the report of a run of t whose fastcnpd configuration
// was cfg (ControllerConfig); the upper switches' predicted loads come from
// the INC tree fastcnpd computed with no failure.
func AnalyzeINC(t *Topology, cfg *config.Config, res *Result) (*INCReport, error) {
	tree, err := fabric.ComputeINCTree(cfg, fabric.Failures{}, nil)
	if err != nil {
		return nil, fmt.Errorf("testbed: INC tree: %w", err)
	}
	r := &INCReport{PartialsAtHosts: res.INCPartials, PathConsistent: true}
	// Messages and their leaves per group.
	leavesOf := map[uint16]map[string]bool{}
	for _, f := range t.Flows {
		if f.INC == nil {
			continue
		}
		_, hp, err := t.HostLink(f.Src)
		if err != nil {
			return nil, err
		}
		if leavesOf[f.INC.Group] == nil {
			leavesOf[f.INC.Group] = map[string]bool{}
		}
		leavesOf[f.INC.Group][hp.Node] = true
		r.Contributions += uint64(len(f.INC.MessageIDs()) * f.INC.Offsets)
	}
	for _, fr := range res.Flows {
		r.DupsSent += fr.INCDupsSent
	}
	predicted := map[uint32]int{}
	first, last := math.Inf(1), 0.0
	var lat []float64
	type span struct{ from, to float64 }
	var spans []span
	for _, m := range res.INC {
		r.Messages++
		r.Offsets += m.Offsets
		c := m.Check
		r.CorrectOffsets += c.Correct
		r.MissingOffsets += uint64(m.Offsets) - min(uint64(m.Offsets), c.Correct)
		r.WrongResults += c.Wrong
		r.DuplicateResult += c.Duplicates
		first = min(first, m.DueMs)
		if c.Complete {
			r.Complete++
			lat = append(lat, m.LastResultMs-m.DueMs)
			spans = append(spans, span{m.DueMs, m.LastResultMs})
		}
		if m.LastResultMs > 0 {
			last = max(last, m.LastResultMs)
		}
		d := INCMessageDetail{Group: m.Group, Message: m.Message, DueMs: m.DueMs, LastResultMs: m.LastResultMs,
			Complete: c.Complete, MissingOffset: uint64(m.Offsets) - min(uint64(m.Offsets), c.Correct)}
		if len(tree.Table) == p4src.IncBuckets && len(leavesOf[m.Group]) > 1 {
			b := pipeline.IncBucket(uint32(m.Group)<<16|uint32(m.Message), wire.INCVersion, wire.RoCEv2UDPPort)
			predicted[tree.Table[b]]++
			if u := tree.Upper(tree.Table[b]); u != nil {
				d.Upper = u.Name
			}
		}
		r.Detail = append(r.Detail, d)
	}
	if last > first {
		r.SpanMs = last - first
		r.GoodputBps = float64(r.CorrectOffsets) * wire.INCVectorBytes * 8 / (r.SpanMs / 1e3)
		r.ContribBps = float64(r.Contributions) * wire.INCVectorBytes * 8 / (r.SpanMs / 1e3)
	}
	sort.Float64s(lat)
	if n := len(lat); n > 0 {
		r.LatencyP50Ms, r.LatencyP99Ms, r.LatencyMaxMs = lat[(n-1)/2], lat[min(n-1, int(math.Ceil(0.99*float64(n)))-1)], lat[n-1]
	}
	// Peak in flight: sweep the messages' [due, last result] intervals.
	type edge struct {
		t float64
		d int
	}
	var edges []edge
	for _, s := range spans {
		edges = append(edges, edge{s.from, 1}, edge{s.to, -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		return edges[i].t < edges[j].t || edges[i].t == edges[j].t && edges[i].d < edges[j].d
	})
	cur := 0
	for _, e := range edges {
		cur += e.d
		r.PeakInFlight = max(r.PeakInFlight, cur)
	}
	// Switches: the leaves of the tree, and its upper switches.
	sw := map[string]SwitchCounters{}
	for _, s := range res.Switches {
		sw[s.Name] = s
		r.Takeovers += s.INCTakeovers
		r.DupsDropped += s.INCDuplicates
		r.SlotsStuck += s.INCSlotsStuck
	}
	for _, l := range tree.Leaves {
		s := sw[l]
		r.Leaves = append(r.Leaves, INCSwitch{Name: l, Contributions: s.INCContributions, Duplicates: s.INCDuplicates,
			Dropped: s.NoRouteDrops, Partials: s.INCResults, SlotBusy: s.INCSlotBusy, SlotsUsed: s.INCSlotsUsed, SlotsStuck: s.INCSlotsStuck})
		r.LeafDropped += s.NoRouteDrops
		r.LeafContributions += s.INCContributions
		r.PartialsSent += s.INCResults
		r.LeafSlotBusy += s.INCSlotBusy
		r.LeafSlotsUsed = max(r.LeafSlotsUsed, s.INCSlotsUsed)
	}
	// Every spanning group has the same number of leaves in the S4
	// topologies; a mixed tree checks each upper switch with its groups'.
	perGroup := 0
	for _, ls := range leavesOf {
		if len(ls) > 1 {
			perGroup = max(perGroup, len(ls))
		}
	}
	var weights uint64
	var aggregated float64
	for _, u := range tree.Uppers {
		weights += u.Weight
	}
	counts := map[uint32]int{}
	for _, id := range tree.Table {
		counts[id]++
	}
	totalPred := 0
	for _, n := range predicted {
		totalPred += n
	}
	for _, u := range tree.Uppers {
		s := sw[u.Name]
		ld := INCUpperLd{Name: u.Name, Weight: u.Weight, WeightShare: float64(u.Weight) / float64(weights),
			BucketShare: float64(counts[u.ID]) / float64(len(tree.Table)), Predicted: predicted[u.ID],
			Results: s.INCResults, SlotBusy: s.INCSlotBusy, SlotsUsed: s.INCSlotsUsed, SlotsStuck: s.INCSlotsStuck,
			PerLeaf: map[string]uint64{}}
		for _, p := range s.Ports {
			if p.INCContributions == 0 {
				continue
			}
			ld.Partials += p.INCContributions
			peer, _ := ParseEndpoint(p.Peer)
			ld.PerLeaf[peer.Node] += p.INCContributions
		}
		if offs := offsetsPerMessage(res); offs > 0 {
			ld.Aggregated = float64(s.INCResults) / float64(offs)
		}
		aggregated += ld.Aggregated
		ld.Consistent = perGroup > 0 && ld.Partials == uint64(perGroup)*ld.Results
		r.PathConsistent = r.PathConsistent && ld.Consistent
		r.UpperSlotBusy += s.INCSlotBusy
		r.UpperResults += s.INCResults
		r.UpperSlotsUsed = max(r.UpperSlotsUsed, s.INCSlotsUsed)
		r.Uppers = append(r.Uppers, ld)
	}
	for i := range r.Uppers {
		u := &r.Uppers[i]
		if aggregated > 0 {
			u.Share = u.Aggregated / aggregated
		}
		u.DeviationPct = 100 * (u.Share - u.WeightShare)
		r.MaxDeviationPct = max(r.MaxDeviationPct, math.Abs(u.DeviationPct))
	}
	slices.SortFunc(r.Uppers, func(a, b INCUpperLd) int {
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
	return r, nil
}

// offsetsPerMessage is the offsets of the run's INC messages (0 when they
// differ or there are none).
func offsetsPerMessage(res *Result) int {
	n := 0
	for _, m := range res.INC {
		if n != 0 && m.Offsets != n {
			return 0
		}
		n = m.Offsets
	}
	return n
}

// WriteINCMarkdown writes the report of an INC run as Markdown tables.
func WriteINCMarkdown(w io.Writer, rep *INCReport, r *Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "| exactness | |\n|---|---:|\n")
	fmt.Fprintf(&b, "| messages (complete / all) | %d / %d |\n", rep.Complete, rep.Messages)
	fmt.Fprintf(&b, "| offsets with the exact element-wise sum / all | %d / %d |\n", rep.CorrectOffsets, rep.Offsets)
	fmt.Fprintf(&b, "| offsets missing | %d |\n| wrong results | %d |\n| duplicate results | %d |\n", rep.MissingOffsets, rep.WrongResults, rep.DuplicateResult)
	fmt.Fprintf(&b, "| partial aggregates that reached hosts | %d |\n", rep.PartialsAtHosts)
	fmt.Fprintf(&b, "| contributions sent / added by the leaves | %d / %d |\n", rep.Contributions, rep.LeafContributions)
	fmt.Fprintf(&b, "| injected duplicates sent / dropped as duplicates / dropped without their data flow | %d / %d / %d |\n",
		rep.DupsSent, rep.DupsDropped, rep.LeafDropped)
	fmt.Fprintf(&b, "\n| leaf | contributions added | duplicates dropped | other drops | partial aggregates sent | slot busy | slots used | slots stuck |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, l := range rep.Leaves {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %d |\n", l.Name, l.Contributions, l.Duplicates, l.Dropped, l.Partials,
			l.SlotBusy, l.SlotsUsed, l.SlotsStuck)
	}
	fmt.Fprintf(&b, "\n| upper switch | weight | weight share | bucket share | messages predicted | messages aggregated | share | deviation from weight | partials received (per leaf) | RESULTs | consistent | slots stuck |\n|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---:|\n")
	for _, u := range rep.Uppers {
		var per []string
		for _, l := range rep.Leaves {
			per = append(per, fmt.Sprintf("%s %d", l.Name, u.PerLeaf[l.Name]))
		}
		fmt.Fprintf(&b, "| %s | %d | %.1f%% | %.1f%% | %d | %.1f | %.1f%% | %+.2f points | %d (%s) | %d | %v | %d |\n", u.Name, u.Weight,
			100*u.WeightShare, 100*u.BucketShare, u.Predicted, u.Aggregated, 100*u.Share, u.DeviationPct, u.Partials,
			strings.Join(per, ", "), u.Results, u.Consistent, u.SlotsStuck)
	}
	fmt.Fprintf(&b, "\n| measure | |\n|---|---:|\n")
	fmt.Fprintf(&b, "| span (first due start to last RESULT) | %.0f ms |\n", rep.SpanMs)
	fmt.Fprintf(&b, "| goodput: aggregated vectors delivered | %.3f Mb/s |\n", rep.GoodputBps/1e6)
	fmt.Fprintf(&b, "| contributions consumed by the leaves (vectors) | %.3f Mb/s |\n", rep.ContribBps/1e6)
	fmt.Fprintf(&b, "| message completion (last RESULT after due start) p50 / p99 / max | %.1f / %.1f / %.1f ms |\n", rep.LatencyP50Ms, rep.LatencyP99Ms, rep.LatencyMaxMs)
	fmt.Fprintf(&b, "| peak messages in flight (due, not complete) | %d (%d slots of 16 offsets) |\n", rep.PeakInFlight, rep.PeakInFlight*offsetsPerMessage(r))
	fmt.Fprintf(&b, "| slots held at the end of the run (done or waiting), most on a leaf / upper switch | %d / %d of %d |\n", rep.LeafSlotsUsed, rep.UpperSlotsUsed, p4src.IncSlots)
	fmt.Fprintf(&b, "| slot busy (leaves / upper switches), taken over, stuck at the end | %d / %d, %d, %d |\n", rep.LeafSlotBusy, rep.UpperSlotBusy, rep.Takeovers, rep.SlotsStuck)
	fmt.Fprintf(&b, "| largest deviation of an upper switch's share from its weight | %.2f points |\n", rep.MaxDeviationPct)
	fmt.Fprintf(&b, "| machine load (1-min average, start -> end) | %.1f -> %.1f |\n", r.LoadAvg[0], r.LoadAvg[1])
	if len(r.LinkEvents) > 0 {
		fmt.Fprintf(&b, "\n| link event | link | changed | fastcnpd told | new tree installed | buckets moved | error |\n|---|---|---:|---:|---:|---:|---|\n")
		for _, e := range r.LinkEvents {
			state := "up"
			if e.Down {
				state = "down"
			}
			fmt.Fprintf(&b, "| %s | %s - %s | %.1f ms | %.1f ms | %.1f ms | %d | %s |\n", state, e.Port, e.Peer, e.ChangedMs, e.NotifiedMs,
				e.InstalledMs, e.BucketsMoved, e.Err)
		}
		var inc []string
		for _, d := range rep.Detail {
			if !d.Complete {
				inc = append(inc, fmt.Sprintf("%d/%d (bucket of %s, due %.0f ms, %d offsets missing)", d.Group, d.Message, d.Upper, d.DueMs, d.MissingOffset))
			}
		}
		if len(inc) > 0 {
			fmt.Fprintf(&b, "\nIncomplete messages: %s.\n", strings.Join(inc, "; "))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
