package hpcc

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestNodeIP(t *testing.T) {
	for _, tc := range []struct {
		id int
		ip uint32
	}{{0, 0x0b000001}, {1, 0x0b000101}, {255, 0x0b00ff01}, {256, 0x0b010001}, {300, 0x0b012c01}, {65535, 0x0bffff01}} {
		if got := NodeIP(tc.id); got != tc.ip {
			t.Errorf("NodeIP(%d) = %08x, want %08x", tc.id, got, tc.ip)
		}
	}
	for id := 0; id < 65536; id++ {
		if got := IPNode(NodeIP(id)); got != id {
			t.Fatalf("IPNode(NodeIP(%d)) = %d", id, got)
		}
	}
}

func TestStandaloneFCT(t *testing.T) {
	p := PathInfo{Hops: 2, RTTNs: 4160, Bps: 100e9}
	tests := []struct {
		size    int64
		payload int
		want    int64
	}{
		// 1 packet: (1000 + 48) B * 8 / 100 Gb/s = 83.84 ns, floored.
		{1000, 1000, 4160 + 83},
		// 2 packets: 1001 + 96 = 1097 B -> 87.76 ns.
		{1001, 1000, 4160 + 87},
		// 1 byte: 49 B -> 3.92 ns.
		{1, 1000, 4160 + 3},
		// 200 MB in 1000 B packets: 200e6 + 200000*48 = 209.6e6 B -> 16.768 ms.
		{200e6, 1000, 4160 + 16768000},
	}
	for _, tc := range tests {
		if got := StandaloneFCT(tc.size, tc.payload, p); got != tc.want {
			t.Errorf("StandaloneFCT(%d, %d) = %d, want %d", tc.size, tc.payload, got, tc.want)
		}
	}
	// A rate so low that the time overflows saturates instead of wrapping.
	if got := StandaloneFCT(1<<40, 1, PathInfo{RTTNs: 1, Bps: 1}); got <= 0 {
		t.Errorf("saturation: %d", got)
	}
}

func TestFCTFormat(t *testing.T) {
	recs := []FCT{
		{SIP: NodeIP(2), DIP: NodeIP(300), SPort: 10000, DPort: 100, Size: 1460, StartNs: 2000001234, FCTNs: 9000, StandaloneNs: 8500},
		{SIP: 0xffffffff, DIP: 0, SPort: 65535, DPort: 0, Size: 0, StartNs: 0, FCTNs: 0, StandaloneNs: 1},
	}
	var buf bytes.Buffer
	if err := WriteFCT(&buf, recs); err != nil {
		t.Fatal(err)
	}
	want := "0b000201 0b012c01 10000 100 1460 2000001234 9000 8500\nffffffff 00000000 65535 0 0 0 0 1\n"
	if buf.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", buf.String(), want)
	}
	back, err := ParseFCT("fct.txt", &buf)
	if err != nil || !reflect.DeepEqual(back, recs) {
		t.Fatalf("round trip %+v, %v", back, err)
	}
}

func TestParseFCTErrors(t *testing.T) {
	for _, tc := range []struct{ in, msg string }{
		{"0b000201 0b012c01 10000 100 1460 2000001234 9000\n", "got 7 fields"},
		{"zz000201 0b012c01 10000 100 1460 2000001234 9000 8500\n", "sip \"zz000201\""},
		{"0b000201 1ffffffff 10000 100 1460 2000001234 9000 8500\n", "dip"},
		{"0b000201 0b012c01 70000 100 1460 2000001234 9000 8500\n", "sport"},
		{"0b000201 0b012c01 10000 100 -1 2000001234 9000 8500\n", "size \"-1\""},
		{"0b000201 0b012c01 10000 100 1460 2000001234 9000 0\n", "standalone_fct_ns is 0"},
	} {
		_, err := ParseFCT("fct.txt", strings.NewReader("0b000201 0b012c01 10000 100 1460 2000001234 9000 8500\n"+tc.in))
		if err == nil || !strings.HasPrefix(err.Error(), "fct.txt:2: ") || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%q: error %v, want fct.txt:2: ...%q", tc.in, err, tc.msg)
		}
	}
}

func TestPFCFormat(t *testing.T) {
	recs := []PFC{
		{TimeNs: 2000012345, Node: 320, Switch: true, IfIndex: 17, Paused: true},
		{TimeNs: 2000015000, Node: 4, Switch: false, IfIndex: 1, Paused: false},
	}
	var buf bytes.Buffer
	if err := WritePFC(&buf, recs); err != nil {
		t.Fatal(err)
	}
	want := "2000012345 320 1 17 1\n2000015000 4 0 1 0\n"
	if buf.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", buf.String(), want)
	}
	back, err := ParsePFC("pfc.txt", &buf)
	if err != nil || !reflect.DeepEqual(back, recs) {
		t.Fatalf("round trip %+v, %v", back, err)
	}
	for _, bad := range []string{"1 2 3 4\n", "1 2 2 4 1\n", "1 2 1 4 2\n", "-1 2 1 4 1\n", "1 x 1 4 1\n"} {
		if _, err := ParsePFC("pfc.txt", strings.NewReader(bad)); err == nil || !strings.HasPrefix(err.Error(), "pfc.txt:1: ") {
			t.Errorf("%q: error %v", bad, err)
		}
	}
}

func TestQlenFormat(t *testing.T) {
	var a, b QlenHist
	a.Node, a.IfIndex = 321, 2
	b.Node, b.IfIndex = 320, 17
	for _, q := range []int64{0, 999, 1000, 2500, 0} {
		a.Add(q)
	}
	b.Add(-5) // never below zero
	d := QlenDump{TimeNs: 2100000000, Hists: []QlenHist{a, b}}
	got := string(AppendQlenDump(nil, d))
	want := "time: 2100000000\n320 17 1\n321 2 3 1 1\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	back, err := ParseQlen("qlen.txt", strings.NewReader(got+got))
	if err != nil || len(back) != 2 || !reflect.DeepEqual(back[1].Hists, []QlenHist{b, a}) {
		t.Fatalf("round trip %+v, %v", back, err)
	}
	for _, bad := range []string{"320 17 1\n", "time: x\n", "time: 1\n320\n", "time: 1\n320 17 -1\n"} {
		if _, err := ParseQlen("qlen.txt", strings.NewReader(bad)); err == nil || !strings.HasPrefix(err.Error(), "qlen.txt:") {
			t.Errorf("%q: error %v", bad, err)
		}
	}

	ss := []QlenSample{{TimeNs: 5, Node: 320, IfIndex: 3, Bytes: 12345}, {TimeNs: 6, Node: 1, IfIndex: 1, Bytes: 0}}
	var buf bytes.Buffer
	if err := WriteQlenSamples(&buf, ss); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "5 320 3 12345\n6 1 1 0\n" {
		t.Fatalf("samples written as %q", buf.String())
	}
	sb, err := ParseQlenSamples("q", &buf)
	if err != nil || !reflect.DeepEqual(sb, ss) {
		t.Fatalf("samples round trip %+v, %v", sb, err)
	}
}

// The HPCC simulator's own output (testdata/fct_ns3_fat_web30.txt: 33 lines of
// its fct.txt on fat.txt, WebSearch, 1000 B payloads, hosts 2, 4 and 6 hops
// apart) keeps its last column when SetStandaloneFCT recomputes it.
func TestSetStandaloneFCTMatchesSimulator(t *testing.T) {
	f, err := os.Open("testdata/fct_ns3_fat_web30.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := ParseFCT("fct_ns3_fat_web30.txt", f)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]int64, len(recs))
	for i := range recs {
		want[i] = recs[i].StandaloneNs
		recs[i].StandaloneNs = 0
	}
	p, err := NewPaths(readFat(t), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if err := SetStandaloneFCT(recs, p, 1000); err != nil {
		t.Fatal(err)
	}
	rtts := map[int64]bool{}
	for i, r := range recs {
		if r.StandaloneNs != want[i] {
			t.Errorf("line %d (%d B): standalone %d, the simulator wrote %d", i+1, r.Size, r.StandaloneNs, want[i])
		}
		pi, _ := p.Get(IPNode(r.SIP), IPNode(r.DIP))
		rtts[pi.RTTNs] = true
	}
	if len(rtts) != 3 {
		t.Errorf("the file covers %d path lengths, want 3 (same ToR, same pod, across the core)", len(rtts))
	}
}

func TestSetStandaloneFCTErrors(t *testing.T) {
	p, err := NewPaths(readFat(t), 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		src, dst int
	}{
		{"switch source", 320, 1},
		{"unknown node", 1, 5000},
		{"to itself", 7, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := []FCT{
				{SIP: NodeIP(0), DIP: NodeIP(1), Size: 1000, StandaloneNs: 11},
				{SIP: NodeIP(tc.src), DIP: NodeIP(tc.dst), Size: 1000, StandaloneNs: 22},
			}
			if err := SetStandaloneFCT(recs, p, 1000); err == nil {
				t.Fatal("no error")
			}
			if recs[0].StandaloneNs != 11 || recs[1].StandaloneNs != 22 {
				t.Errorf("records changed on error: %+v", recs)
			}
		})
	}
}
