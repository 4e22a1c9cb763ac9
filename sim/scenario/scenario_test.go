package scenario

import (
	"math"
	"os"
	"reflect"
	"testing"

	"github.com/fastcnp/fastcnp/sim/hpcc"
	"github.com/fastcnp/fastcnp/sim/network"
)

func TestS1Shape(t *testing.T) {
	sc, err := S1(DefaultS1())
	if err != nil {
		t.Fatal(err)
	}
	// 8 senders, V, R, W, then switches A (11) and B (12); A's uplink is its 10th
	// link (ifindex 10).
	if sc.Topo.Nodes != 13 || len(sc.Flows) != 9 || sc.Victim != 8 || sc.PausedNode != 11 || sc.PausedIfIndex != 10 {
		t.Fatalf("S1: %d nodes, %d flows, victim %d, paused %d/%d", sc.Topo.Nodes, len(sc.Flows), sc.Victim, sc.PausedNode, sc.PausedIfIndex)
	}
	ports := sc.Topo.Ports()
	if p := ports[11][9]; p.Peer != 12 || sc.Topo.Links[p.Link].RateBps != 400e9 {
		t.Errorf("A's ifindex 10 goes to %d at %v b/s, want B at 400 Gb/s", p.Peer, sc.Topo.Links[p.Link].RateBps)
	}
	// Fair shares, payload (1000 of 1082 wire bytes): R's 100 Gb/s among 8 senders,
	// the victim alone on W's.
	eff := 1000.0 / 1082
	for i, f := range sc.FairBps {
		want := 100e9 * eff / 8
		if i == sc.Victim {
			want = 100e9 * eff
		}
		if math.Abs(f-want) > 1 {
			t.Errorf("flow %d fair share %.4g, want %.4g", i, f, want)
		}
	}
	o := DefaultS1()
	o.LegacySenders = true
	sc, err = S1(o)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range sc.Legacy {
		if l != (i < 8) {
			t.Errorf("legacy flag of flow %d = %v", i, l)
		}
	}
	if _, err := S1(S1Options{}); err == nil {
		t.Error("S1 with zero options succeeded")
	}
}

func TestS2Sizes(t *testing.T) {
	for _, scale := range []int{1, 10} {
		o := DefaultS2()
		o.Scale = scale
		sc, err := S2(o)
		if err != nil {
			t.Fatal(err)
		}
		var total int64
		for _, f := range sc.Flows {
			total += f.Size
			if f.Dst != 20 || f.PG != hpcc.DataPG {
				t.Errorf("flow %+v", f)
			}
		}
		if want := int64(635_000_000) / int64(scale); len(sc.Flows) != 20 || total != want {
			t.Errorf("scale %d: %d flows, %d bytes; want 20 and %d", scale, len(sc.Flows), total, want)
		}
	}
}

func TestPercentile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for _, tt := range []struct{ p, want float64 }{{50, 5}, {99, 10}, {10, 1}, {0, 1}, {100, 10}} {
		if got := percentile(xs, tt.p); got != tt.want {
			t.Errorf("p%v = %v, want %v", tt.p, got, tt.want)
		}
	}
	if !math.IsNaN(percentile(nil, 50)) {
		t.Error("percentile of nothing is not NaN")
	}
}

// TestMeasureS1NeedsSample: without a rate sample at the window's start the
// measurement fails instead of reporting made-up rates.
func TestMeasureS1NeedsSample(t *testing.T) {
	sc, err := S1(DefaultS1())
	if err != nil {
		t.Fatal(err)
	}
	r := &network.Result{Mode: network.ModeDCQCN, EndNs: sc.UntilNs, Flows: make([]network.FlowResult, len(sc.Flows))}
	if _, err := MeasureS1(sc, r); err == nil {
		t.Error("MeasureS1 without samples succeeded")
	}
}

// TestFatTreeIsFatTxt: 5 pods of 4 ToRs (16 hosts each) and 4 aggregation switches
// with 16 cores is the HPCC simulator's fat.txt, node for node and link for link.
func TestFatTreeIsFatTxt(t *testing.T) {
	f, err := os.Open("../data/hpcc/fat.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want, err := hpcc.ParseTopology("fat.txt", f)
	if err != nil {
		t.Fatal(err)
	}
	o, err := FatTreeFor(320)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := FatTree(o)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(topo, want) {
		t.Errorf("FatTree(320) differs from fat.txt")
	}
	for _, tt := range []struct{ hosts, nodes, links int }{{16, 17, 16}, {64, 72, 80}, {1024, 1024 + 64 + 64 + 16, 1024 + 256 + 256}} {
		o, err := FatTreeFor(tt.hosts)
		if err != nil {
			t.Fatal(err)
		}
		topo, err := FatTree(o)
		if err != nil {
			t.Fatal(err)
		}
		if topo.Nodes != tt.nodes || len(topo.Links) != tt.links || len(topo.Hosts()) != tt.hosts || topo.Validate() != nil {
			t.Errorf("%d hosts: %d nodes, %d links, %d hosts, %v", tt.hosts, topo.Nodes, len(topo.Links), len(topo.Hosts()), topo.Validate())
		}
	}
	if _, err := FatTreeFor(100); err == nil {
		t.Error("FatTreeFor(100) succeeded")
	}
}
