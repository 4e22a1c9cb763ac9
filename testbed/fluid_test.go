package testbed

import (
	"math"
	"slices"
	"testing"
	"time"
)

// TestIdealFCTsOfIncast: the 4-to-1 incast's fluid ideal in payload terms:
// the hand-computed 16, 364, 444 ms of 100 Mb/s (TestFluidFinish) divided
// by the payload share of the wire (payloadEff).
func TestIdealFCTsOfIncast(t *testing.T) {
	topo := loadTopo(t, "s2-incast-4.json")
	got, err := topo.IdealFCTs(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"h1-r": 0.444, "h2-r": 0.444, "h3-r": 0.364, "h4-r": 0.016}
	for i, f := range topo.Flows {
		if w := want[f.Name] / payloadEff; math.Abs(got[i].Seconds()-w) > 1e-6 {
			t.Errorf("ideal FCT of %s = %v, want %.6fs", f.Name, got[i], w)
		}
	}
	// Long flows have no ideal FCT.
	s1 := loadTopo(t, "s1-victim.json")
	got, err = s1.IdealFCTs(9 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range got {
		if d != 0 {
			t.Errorf("long flow %s has ideal FCT %v", s1.Flows[i].Name, d)
		}
	}
}

// TestPayloadRate: a 100 Mb/s link carries 100 * 4096/4174 Mb/s of RoCE
// payload in 4096-byte packets, and 100 * 1024/1102 with a 1500 MTU.
func TestPayloadRate(t *testing.T) {
	topo := loadTopo(t, "s2-incast-4.json")
	if got, want := topo.PayloadRate(100e6), 100e6*4096/4174; math.Abs(got-want) > 1e-6 {
		t.Errorf("PayloadRate(100M), MTU 9000 = %v, want %v", got, want)
	}
	topo.Defaults.MTU = 1500
	if got, want := topo.PayloadRate(100e6), 100e6*1024/1102; math.Abs(got-want) > 1e-6 {
		t.Errorf("PayloadRate(100M), MTU 1500 = %v, want %v", got, want)
	}
}

// TestCheckLinks: the payload delivered over a link cannot exceed its
// capacity over the span from the first due start to the last arrival,
// plus the slack and one frame.
func TestCheckLinks(t *testing.T) {
	const ms = int64(time.Millisecond)
	capacity := []float64{80e6, 8e6} // 10 MB/s and 1 MB/s
	names := []string{"a>b", "b>c"}
	tests := []struct {
		name      string
		flows     []linkFlow
		slack     time.Duration
		frame     int64
		wantBytes []int64   // per used link, in order
		wantUse   []float64 // per used link
		violation []bool
	}{
		{
			// 10 MB/s for 100 ms = 1 MB: 0.9 MB fits (90 %).
			name:      "within capacity",
			flows:     []linkFlow{{path: []int{0}, bytes: 900_000, startNs: 1000 * ms, lastArrival: 1100 * ms}},
			wantBytes: []int64{900_000}, wantUse: []float64{0.9}, violation: []bool{false},
		},
		{
			// 1.2 MB in 100 ms through 10 MB/s: impossible, even with 1 ms
			// of slack (1.01 MB) and a 4096-byte frame.
			name:  "over capacity",
			flows: []linkFlow{{path: []int{0}, bytes: 1_200_000, startNs: 1000 * ms, lastArrival: 1100 * ms}},
			slack: time.Millisecond, frame: 4096,
			wantBytes: []int64{1_200_000}, wantUse: []float64{1.2}, violation: []bool{true},
		},
		{
			// Two flows on link 0 (spans joined: 0 to 200 ms, 1.9 MB of 2 MB),
			// one of them also on link 1 (0.1 MB in 100..200 ms of 1 MB/s = 0.1 MB: full).
			name: "spans join per link",
			flows: []linkFlow{
				{path: []int{0}, bytes: 1_800_000, startNs: 0 + 1, lastArrival: 150 * ms},
				{path: []int{0, 1}, bytes: 100_000, startNs: 100 * ms, lastArrival: 200 * ms},
			},
			wantBytes: []int64{1_900_000, 100_000}, wantUse: []float64{1_900_000 / (10e6 * (0.2 - 1e-9)), 1}, violation: []bool{false, false},
		},
		{
			// The slack admits what the span alone does not: 1.005 MB in
			// 100 ms + 1 ms at 10 MB/s (1.01 MB).
			name:      "slack",
			flows:     []linkFlow{{path: []int{0}, bytes: 1_005_000, startNs: 1, lastArrival: 100*ms + 1}},
			slack:     time.Millisecond,
			wantBytes: []int64{1_005_000}, wantUse: []float64{1.005}, violation: []bool{false},
		},
		{
			name: "flows without bytes or times are not counted",
			flows: []linkFlow{
				{path: []int{0}, bytes: 0, startNs: 1, lastArrival: 2},
				{path: []int{0}, bytes: 5, startNs: 0, lastArrival: 2},
				{path: []int{1}, bytes: 5, startNs: 1, lastArrival: 0},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkLinks(capacity, names, tt.flows, tt.slack, tt.frame)
			if len(got) != len(tt.wantBytes) {
				t.Fatalf("checkLinks = %+v, want %d links", got, len(tt.wantBytes))
			}
			for i, u := range got {
				if u.Bytes != tt.wantBytes[i] || math.Abs(u.Use-tt.wantUse[i]) > 1e-6 || u.Violation != tt.violation[i] {
					t.Errorf("link %s = %+v, want bytes %d, use %v, violation %v", u.Link, u, tt.wantBytes[i], tt.wantUse[i], tt.violation[i])
				}
			}
			r := &Result{Links: got}
			if err := r.CheckPhysical(); (err != nil) != slices.Contains(tt.violation, true) {
				t.Errorf("CheckPhysical = %v", err)
			}
		})
	}
}
