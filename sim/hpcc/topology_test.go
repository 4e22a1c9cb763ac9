package hpcc

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

const fatTree = "../data/hpcc/fat.txt"

func readFat(t *testing.T) *Topology {
	t.Helper()
	f, err := os.Open(fatTree)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	topo, err := ParseTopology("fat.txt", f)
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// The HPCC paper's fat tree: 320 hosts under 20 ToRs at 100G, 400G above.
func TestParseTopologyFatTree(t *testing.T) {
	topo := readFat(t)
	if topo.Nodes != 376 || len(topo.Switches) != 56 || len(topo.Links) != 480 {
		t.Fatalf("nodes %d switches %d links %d, want 376 56 480", topo.Nodes, len(topo.Switches), len(topo.Links))
	}
	hosts := topo.Hosts()
	if len(hosts) != 320 || hosts[0] != 0 || hosts[319] != 319 {
		t.Fatalf("hosts %d (%v..%v), want 0..319", len(hosts), hosts[0], hosts[len(hosts)-1])
	}
	rates := map[float64]int{}
	for _, l := range topo.Links {
		rates[l.RateBps]++
		if l.DelayNs != 1000 || l.ErrorRate != 0 {
			t.Fatalf("link %+v: want 1000 ns, error 0", l)
		}
	}
	if rates[100e9] != 320 || rates[400e9] != 160 {
		t.Errorf("rates %v, want 320 x 100G and 160 x 400G", rates)
	}
	// ToR 320: its 16 hosts first (ifindex 1..16), then its uplinks.
	ports := topo.Ports()
	tor := ports[320]
	if len(tor) != 16+4 {
		t.Fatalf("ToR 320 has %d ports, want 16 hosts + 4 uplinks", len(tor))
	}
	for _, p := range tor[16:] {
		if r := topo.Links[p.Link].RateBps; r != 400e9 || p.Peer < 340 || p.Peer >= 360 {
			t.Errorf("ToR uplink %+v: rate %v, want 400G to an aggregation switch (340..359)", p, r)
		}
	}
	for i := 0; i < 16; i++ {
		if tor[i].IfIndex != i+1 || tor[i].Peer != i {
			t.Fatalf("ToR port %d = %+v, want ifindex %d to host %d", i, tor[i], i+1, i)
		}
	}
	if h := ports[5]; len(h) != 1 || h[0].IfIndex != 1 || h[0].Peer != 320 {
		t.Errorf("host 5 ports %+v, want one port (ifindex 1) to 320", h)
	}
}

func TestTopologyRoundTrip(t *testing.T) {
	for _, topo := range []*Topology{
		readFat(t),
		{Nodes: 3, Switches: []int{2}, Links: []Link{{0, 2, 25e9, 500, 0.001}, {1, 2, 1, 0, 1}}},
		{Nodes: 2, Switches: []int{}, Links: []Link{{0, 1, 1234567, 7, 0}}},
		{Nodes: 1, Switches: []int{}, Links: []Link{}},
	} {
		var buf bytes.Buffer
		if err := WriteTopology(&buf, topo); err != nil {
			t.Fatal(err)
		}
		got, err := ParseTopology("rt", &buf)
		if err != nil {
			t.Fatalf("%v\n%s", err, buf.String())
		}
		if !reflect.DeepEqual(got, topo) {
			t.Errorf("round trip changed the topology:\n got %+v\nwant %+v", got, topo)
		}
	}
}

func TestParseTopologyErrors(t *testing.T) {
	tests := []struct {
		name, in string
		line     int
		msg      string
	}{
		{"empty", "", 0, "empty file"},
		{"header fields", "3 1\n", 1, "want \"nodes switches links\""},
		{"header number", "3 x 1\n", 1, "switches: \"x\" is not an integer"},
		{"too many nodes", "99999999 0 0\n", 1, "out of range"},
		{"more switches than nodes", "2 3 0\n", 1, "3 switches but only 2 nodes"},
		{"switch count", "3 2 0\n2\n", 2, "want 2 switch IDs, got 1"},
		{"switch range", "3 1 0\n3\n", 2, "switch ID: 3 out of range"},
		{"switch twice", "3 2 0\n2 2\n", 2, "switch 2 listed twice"},
		{"link fields", "3 1 1\n2\n0 2 100Gbps 1us\n", 3, "got 4 fields"},
		{"link node", "3 1 1\n2\n0 7 100Gbps 1us 0\n", 3, "node b: 7 out of range"},
		{"self link", "3 1 1\n2\n2 2 100Gbps 1us 0\n", 3, "to itself"},
		{"rate unit", "3 1 1\n2\n0 2 100Gbit 1us 0\n", 3, "unknown unit \"Gbit\""},
		{"rate zero", "3 1 1\n2\n0 2 0Gbps 1us 0\n", 3, "out of range"},
		{"delay unit", "3 1 1\n2\n0 2 100Gbps 1min 0\n", 3, "unknown unit \"min\""},
		{"negative delay", "3 1 1\n2\n0 2 100Gbps -1ns 0\n", 3, "negative"},
		{"error rate", "3 1 1\n2\n0 2 100Gbps 1us 2\n", 3, "want a number in [0, 1]"},
		{"duplicate link", "3 1 2\n2\n0 2 1Gbps 1us 0\n\n2 0 1Gbps 1us 0\n", 5, "second link between 2 and 0 (first on line 3)"},
		{"missing links", "3 1 2\n2\n0 2 1Gbps 1us 0\n", 0, "header declares 2 links, file has 1"},
		{"trailing text", "3 1 1\n2\n0 2 1Gbps 1us 0\n1 2 1Gbps 1us 0\n", 4, "text after the 1 links"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTopology("topo.txt", strings.NewReader(tc.in))
			var pe *Error
			if !errors.As(err, &pe) || !errors.Is(err, ErrSyntax) {
				t.Fatalf("error %v, want an *Error wrapping ErrSyntax", err)
			}
			if pe.Line != tc.line || pe.File != "topo.txt" || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q (line %d), want line %d containing %q", err, pe.Line, tc.line, tc.msg)
			}
		})
	}
}

func TestTopologyValidate(t *testing.T) {
	bad := []*Topology{
		{Nodes: 0},
		{Nodes: 2, Switches: []int{2}},
		{Nodes: 2, Switches: []int{1, 1}},
		{Nodes: 2, Links: []Link{{0, 1, 1.5, 0, 0}}},
		{Nodes: 2, Links: []Link{{0, 1, 1e9, -1, 0}}},
		{Nodes: 2, Links: []Link{{0, 1, 1e9, 0, -0.1}}},
		{Nodes: 2, Links: []Link{{0, 1, 1e9, 0, 0}, {1, 0, 1e9, 0, 0}}},
		{Nodes: 2, Links: []Link{{0, 0, 1e9, 0, 0}}},
	}
	for i, topo := range bad {
		if err := topo.Validate(); err == nil {
			t.Errorf("case %d: %+v accepted", i, topo)
		}
		if err := WriteTopology(&bytes.Buffer{}, topo); err == nil {
			t.Errorf("case %d: written", i)
		}
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		bad  bool
	}{
		{"100Gbps", 100e9, false},
		{"100Gb/s", 100e9, false},
		{"12.5GB/s", 100e9, false},
		{"50Mb/s", 50e6, false},
		{"1.5Kbps", 1500, false},
		{"1Kib/s", 1024, false},
		{"2MiB/s", 2 * 8 << 20, false},
		{"25000000000", 25e9, false},
		{"1.5bps", 1, false}, // ns-3 truncates
		{"", 0, true},
		{"Gbps", 0, true},
		{"1.2.3Gbps", 0, true},
		{"100gbps", 0, true},
		{"-1Gbps", 0, true},
		{"2000Tbps", 0, true},
		{"0.1bps", 0, true},
		{"1e9", 0, true},
	}
	for _, tc := range tests {
		got, err := ParseRate(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d, bad=%v", tc.in, got, err, tc.want, tc.bad)
		}
		if err == nil {
			if back, err := ParseRate(FormatRate(got)); err != nil || back != got {
				t.Errorf("FormatRate(%d) = %q reads back as %d, %v", got, FormatRate(got), back, err)
			}
		}
	}
}

func TestParseTime(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		bad  bool
	}{
		{"1000ns", 1000, false},
		{"0.001ms", 1000, false},
		{"1us", 1000, false},
		{"2", 2e9, false},
		{"0.0000005", 500, false}, // exact, where a double gives 499
		{"1.9ns", 1, false},
		{"1500ps", 1, false},
		{"+3us", 3000, false},
		{"2.000000001s", 2000000001, false},
		{"0", 0, false},
		{"1min", 0, true},
		{"", 0, true},
		{"us", 0, true},
		{"-5ns", 0, true},
		{"1.2.3ns", 0, true},
		{"99999999999s", 0, true},
	}
	for _, tc := range tests {
		got, err := ParseTime(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseTime(%q) = %d, %v; want %d, bad=%v", tc.in, got, err, tc.want, tc.bad)
		}
	}
}
