package testbed

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/fastcnp/fastcnp/controller/fabric"
	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/wire"
)

// s4Result is a synthetic result of s4-multitier.json in which every
// message completed (message k due at 1000 + 15k ms, done 10 ms later) and
// each spine aggregated exactly the messages the bucket table sends it.
func s4Result(t *testing.T) (*Topology, *Result, map[string]int) {
	t.Helper()
	topo := loadTopo(t, s4MultiFile)
	cfg, err := topo.ControllerConfig(ControllerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tree, err := fabric.ComputeINCTree(cfg, fabric.Failures{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := &Result{Topology: topo.Name}
	perSpine := map[string]int{}
	// Group 1's messages, then group 2's, in this order (a map's order would move
	// res.INC[3], which the test edits, between the groups from run to run).
	for _, grp := range []struct {
		g    uint16
		msgs []uint16
	}{{1, topo.Flows[0].INC.Messages}, {2, topo.Flows[16].INC.Messages}} {
		g := grp.g
		for k, m := range grp.msgs {
			due := 1000 + 15*float64(k)
			res.INC = append(res.INC, INCMessage{Group: g, Message: m, Offsets: 16, DueMs: due, LastResultMs: due + 10,
				FirstResultMs: due + 1, Check: INCCheck{Group: g, Message: m, Offsets: 16, Results: 16, Correct: 16, Complete: true}})
			b := pipeline.IncBucket(uint32(g)<<16|uint32(m), wire.INCVersion, wire.RoCEv2UDPPort)
			perSpine[tree.Upper(tree.Table[b]).Name]++
		}
	}
	for l := 1; l <= 4; l++ {
		res.Switches = append(res.Switches, SwitchCounters{Name: fmt.Sprintf("leaf%d", l), INCContributions: 6 * 3072,
			INCResults: 2 * 192 * 16})
	}
	for _, sp := range []string{"spine1", "spine2"} {
		sc := SwitchCounters{Name: sp, INCResults: uint64(perSpine[sp] * 16)}
		for l := 1; l <= 4; l++ {
			sc.Ports = append(sc.Ports, PortCounters{Port: uint16(l), Peer: fmt.Sprintf("leaf%d-p9", l), INCContributions: uint64(perSpine[sp] * 16)})
			sc.INCContributions += uint64(perSpine[sp] * 16)
		}
		res.Switches = append(res.Switches, sc)
	}
	for _, f := range topo.Flows {
		res.Flows = append(res.Flows, FlowResult{Name: f.Name, INC: true})
	}
	return topo, res, perSpine
}

// TestAnalyzeINC: the report of a run: exactness, the spines' loads
// against their weights (1:3) and the prediction from the bucket table,
// path consistency from the per-port partials, latency, goodput; a missing
// partial breaks consistency, an incomplete message shows in the detail.
func TestAnalyzeINC(t *testing.T) {
	topo, res, perSpine := s4Result(t)
	cfg, _ := topo.ControllerConfig(ControllerOptions{})
	rep, err := AnalyzeINC(topo, cfg, res)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Messages != 384 || rep.Complete != 384 || rep.CorrectOffsets != 6144 || rep.MissingOffsets != 0 || !rep.PathConsistent {
		t.Fatalf("report %+v", rep)
	}
	if rep.Contributions != 73728 || rep.LeafContributions != 73728 || rep.PartialsSent != 24576 || rep.UpperResults != 6144 {
		t.Errorf("counts: contributions %d/%d, partials %d, upper results %d", rep.Contributions, rep.LeafContributions, rep.PartialsSent, rep.UpperResults)
	}
	if len(rep.Uppers) != 2 || rep.Uppers[0].Name != "spine1" || rep.Uppers[0].WeightShare != 0.25 || rep.Uppers[1].BucketShare != 0.75 {
		t.Fatalf("uppers %+v", rep.Uppers)
	}
	for _, u := range rep.Uppers {
		share := float64(perSpine[u.Name]) / 384
		if u.Predicted != perSpine[u.Name] || u.Aggregated != float64(perSpine[u.Name]) || math.Abs(u.Share-share) > 1e-12 ||
			math.Abs(u.DeviationPct-100*(share-u.WeightShare)) > 1e-9 || !u.Consistent || u.PerLeaf["leaf3"] != uint64(16*perSpine[u.Name]) {
			t.Errorf("%s: %+v (want %d messages, share %.4f)", u.Name, u, perSpine[u.Name], share)
		}
	}
	if rep.LatencyP50Ms != 10 || rep.LatencyMaxMs != 10 || rep.PeakInFlight != 2 {
		t.Errorf("latency %.1f/%.1f, peak %d", rep.LatencyP50Ms, rep.LatencyMaxMs, rep.PeakInFlight)
	}
	// 6144 vectors of 512 bits over the span 1000 ms .. 1000+15*191+10 ms.
	if want := 6144 * 512 / ((15*191 + 10) / 1e3); math.Abs(rep.GoodputBps-want) > 1 {
		t.Errorf("goodput %.0f, want %.0f", rep.GoodputBps, want)
	}
	// A partial that did not come (leaf2 -> spine1 one short), a message
	// with two offsets missing.
	res.Switches[4].Ports[1].INCContributions--
	res.INC[3].Check.Correct, res.INC[3].Check.Complete = 14, false
	rep, err = AnalyzeINC(topo, cfg, res)
	if err != nil {
		t.Fatal(err)
	}
	if rep.PathConsistent || rep.Uppers[0].Consistent || !rep.Uppers[1].Consistent || rep.MissingOffsets != 2 || rep.Complete != 383 {
		t.Errorf("after the changes: consistent %v %v %v, missing %d, complete %d", rep.PathConsistent, rep.Uppers[0].Consistent,
			rep.Uppers[1].Consistent, rep.MissingOffsets, rep.Complete)
	}
	if d := rep.Detail[3]; d.Complete || d.MissingOffset != 2 || d.Upper == "" {
		t.Errorf("detail %+v", d)
	}
	var md bytes.Buffer
	res.LinkEvents = []LinkEventResult{{LinkEvent: LinkEvent{Port: "leaf2-p9", Down: true}, Peer: "spine1-p2", ChangedMs: 1500, InstalledMs: 1600, BucketsMoved: 64}}
	if err := WriteINCMarkdown(&md, rep, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| messages (complete / all) | 383 / 384 |", "| spine1 | 1 | 25.0% | 25.0% |",
		"| down | leaf2-p9 - spine1-p2 | 1500.0 ms |", "Incomplete messages: 1/4 (bucket of"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}
