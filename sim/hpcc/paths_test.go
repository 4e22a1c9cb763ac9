package hpcc

import "testing"

// Base RTTs on the fat tree, by hand: one-way delay 1 us per link, and one
// 1000 B payload serialized per hop (80 ns at 100G, 20 ns at 400G).
func TestPathsFatTree(t *testing.T) {
	topo := readFat(t)
	p, err := NewPaths(topo, 1000)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		src, dst int
		want     PathInfo
	}{
		// host - ToR - host: 2 hops, RTT 2*2000 + 80 + 80.
		{"same ToR", 0, 1, PathInfo{Hops: 2, RTTNs: 4160, Bps: 100e9}},
		// host - ToR - agg - ToR - host: 2*4000 + 80 + 20 + 20 + 80.
		{"same pod", 0, 16, PathInfo{Hops: 4, RTTNs: 8200, Bps: 100e9}},
		// through a core switch: 2*6000 + 80 + 4*20 + 80.
		{"across the core", 0, 319, PathInfo{Hops: 6, RTTNs: 12240, Bps: 100e9}},
		{"reverse", 319, 0, PathInfo{Hops: 6, RTTNs: 12240, Bps: 100e9}},
	}
	for _, tc := range tests {
		got, ok := p.Get(tc.src, tc.dst)
		if !ok || got != tc.want {
			t.Errorf("%s: Get(%d, %d) = %+v, %v; want %+v", tc.name, tc.src, tc.dst, got, ok, tc.want)
		}
	}
	if p.MaxRTTNs != 12240 {
		t.Errorf("MaxRTTNs %d, want 12240", p.MaxRTTNs)
	}
	// maxBdp = 12240 ns * 100 Gb/s / 8 = 153000 B.
	if p.MaxBDP != 153000 {
		t.Errorf("MaxBDP %d, want 153000", p.MaxBDP)
	}
	for _, pair := range [][2]int{{0, 0}, {0, 320}, {320, 0}, {-1, 0}, {0, 376}} {
		if _, ok := p.Get(pair[0], pair[1]); ok {
			t.Errorf("Get(%d, %d) answered", pair[0], pair[1])
		}
	}
}

// Paths never cross a host, and the bottleneck is the slowest link.
func TestPathsThroughHostsOnly(t *testing.T) {
	// 0 - 1 - 2 are all hosts: 0 cannot reach 2 through host 1.
	// 3 - 4(switch) - 5 with a slow second link.
	topo := &Topology{Nodes: 6, Switches: []int{4}, Links: []Link{
		{0, 1, 1e9, 10, 0}, {1, 2, 1e9, 10, 0}, {3, 4, 10e9, 100, 0}, {4, 5, 1e9, 50, 0},
	}}
	p, err := NewPaths(topo, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Get(0, 2); ok {
		t.Error("path from 0 to 2 through host 1")
	}
	if got, ok := p.Get(0, 1); !ok || got != (PathInfo{Hops: 1, RTTNs: 2*10 + 8000, Bps: 1e9}) {
		t.Errorf("0->1 = %+v", got)
	}
	// 2*150 + 800 (10G) + 8000 (1G).
	if got, ok := p.Get(3, 5); !ok || got != (PathInfo{Hops: 2, RTTNs: 300 + 800 + 8000, Bps: 1e9}) {
		t.Errorf("3->5 = %+v", got)
	}
	if _, err := NewPaths(topo, 0); err == nil {
		t.Error("payload 0 accepted")
	}
}
