package analysis

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/fastcnp/fastcnp/sim/hpcc"
)

func readFCT(t testing.TB, path string) []hpcc.FCT {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := hpcc.ParseFCT(path, f)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// Number for number against fct_analysis.py's own output (testdata/README.md).
func TestMatchesScript(t *testing.T) {
	a, b := readFCT(t, "testdata/fct_fat_a.txt"), readFCT(t, "testdata/fct_fat_b.txt")
	tests := []struct {
		golden string
		filter Filter
		step   int
	}{
		{"script_t0.txt", Filter{Type: TypeNormal, TimeLimitNs: DefaultTimeLimitNs}, 5},
		{"script_t1.txt", Filter{Type: TypeIncast, TimeLimitNs: DefaultTimeLimitNs}, 5},
		{"script_s10_T2000400000.txt", Filter{Type: TypeNormal, TimeLimitNs: 2000400000}, 10},
	}
	for _, tc := range tests {
		t.Run(tc.golden, func(t *testing.T) {
			ra, err := Analyze("a", a, tc.filter, tc.step, nil)
			if err != nil {
				t.Fatal(err)
			}
			rb, err := Analyze("b", b, tc.filter, tc.step, nil)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := WriteScriptText(&buf, []*Report{ra, rb}); err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile("testdata/" + tc.golden)
			if err != nil {
				t.Fatal(err)
			}
			got := buf.String()
			if got != string(want) {
				gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
				for i := range min(len(gl), len(wl)) {
					if gl[i] != wl[i] {
						t.Errorf("line %d:\n got %q\nwant %q", i+1, gl[i], wl[i])
					}
				}
				if len(gl) != len(wl) {
					t.Errorf("%d lines, want %d", len(gl), len(wl))
				}
			}
		})
	}
}

func rec(size, fct, standalone int64, dport uint16) hpcc.FCT {
	return hpcc.FCT{SIP: hpcc.NodeIP(1), DIP: hpcc.NodeIP(2), DPort: dport, Size: size, StartNs: 2e9, FCTNs: fct, StandaloneNs: standalone}
}

func TestSamples(t *testing.T) {
	recs := []hpcc.FCT{
		rec(500, 7000, 3000, 100),  // 2.33333 (six digits)
		rec(100, 2250, 1000, 100),  // 2.25
		rec(100, 10500, 1000, 100), // 10.5: "10.5 100" sorts before "2.25 100"
		rec(300, 900, 1000, 100),   // below 1: floored to 1
		rec(200, 1e6, 3, 100),      // 333333.333 -> 333333
		rec(50, 5000, 1000, 200),   // incast: not a normal flow
		{DPort: 100, Size: 10, StartNs: 2e9, FCTNs: 1e9, StandaloneNs: 1},           // ends at 3 s: out
		{DPort: 100, Size: 10, StartNs: 2e9, FCTNs: 1e9 - 1, StandaloneNs: 1e9 - 1}, // ends just before: in, slowdown 1
	}
	ss, err := Samples(recs, DefaultFilter)
	if err != nil {
		t.Fatal(err)
	}
	type sv struct {
		s    float64
		size int64
	}
	var got []sv
	for _, s := range ss {
		got = append(got, sv{s.Slowdown, s.Size})
	}
	want := []sv{{1, 10}, {10.5, 100}, {2.25, 100}, {333333, 200}, {1, 300}, {2.33333, 500}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("samples %v, want %v", got, want)
	}
	inc, err := Samples(recs, Filter{Type: TypeIncast, TimeLimitNs: DefaultTimeLimitNs})
	if err != nil || len(inc) != 1 || inc[0].Slowdown != 5 {
		t.Errorf("incast samples %+v, %v", inc, err)
	}
	all, err := Samples(recs, Filter{Type: TypeAll, TimeLimitNs: DefaultTimeLimitNs})
	if err != nil || len(all) != 7 {
		t.Errorf("all: %d samples, %v", len(all), err)
	}
	if _, err := Samples(recs, Filter{Type: 3}); err == nil {
		t.Error("type 3 accepted")
	}
	if _, err := Samples([]hpcc.FCT{{DPort: 100, StandaloneNs: 0}}, DefaultFilter); err == nil {
		t.Error("standalone 0 accepted")
	}
}

// Bins by hand: 11 samples, the last dropped, two bins of 50%.
func TestPercentBins(t *testing.T) {
	slows := []float64{3, 1, 4, 1.5, 9, 2, 6, 5.5, 3.5, 8, 100}
	var ss []Sample
	for i, s := range slows {
		ss = append(ss, Sample{Slowdown: s, Size: int64(10 * (i + 1))})
	}
	bins, err := PercentBins(ss, 50)
	if err != nil {
		t.Fatal(err)
	}
	// Bin 0: sizes 10..50, slowdowns sorted 1 1.5 3 4 9: p50 = [int(2.5)] = 3,
	// p95 = [int(4.75)] = 9, p99 = 9, mean 18.5/5.
	// Bin 1: sizes 60..100, sorted 2 3.5 5.5 6 8: p50 5.5, p95 8, p99 8.
	// The 100 of size 110 is dropped, as the script drops its last line.
	want := []Bin{
		{Lo: 0, Hi: 0.5, MaxSize: 50, Flows: 5, P50: 3, P95: 9, P99: 9, Mean: 18.5 / 5},
		{Lo: 0.5, Hi: 1, MaxSize: 100, Flows: 5, P50: 5.5, P95: 8, P99: 8, Mean: 25.0 / 5},
	}
	if !reflect.DeepEqual(bins, want) {
		t.Errorf("bins\n %+v\nwant\n %+v", bins, want)
	}
	// 20 bins of 5% need at least 21 samples.
	if _, err := PercentBins(ss, 5); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("11 samples in 5%% bins: %v", err)
	}
	if _, err := PercentBins(ss, 0); err == nil {
		t.Error("step 0 accepted")
	}
}

func TestSizeBins(t *testing.T) {
	var ss []Sample
	for _, x := range []struct {
		size int64
		s    float64
	}{{300, 2}, {1, 4}, {301, 7}, {325, 1}, {10000000, 3}, {20000000, 50}, {30000000, 60}} {
		ss = append(ss, Sample{Size: x.size, Slowdown: x.s})
	}
	bins, err := SizeBins(ss, Seed002Edges)
	if err != nil {
		t.Fatal(err)
	}
	if len(bins) != len(Seed002Edges)+1 {
		t.Fatalf("%d bins, want %d (one open bin above 10M)", len(bins), len(Seed002Edges)+1)
	}
	check := func(k int, want Bin) {
		t.Helper()
		if !reflect.DeepEqual(bins[k], want) {
			t.Errorf("bin %d = %+v, want %+v", k, bins[k], want)
		}
	}
	check(0, Bin{Lo: 0, Hi: 300, MaxSize: 300, Flows: 2, P50: 4, P95: 4, P99: 4, Mean: 3})
	check(1, Bin{Lo: 300, Hi: 325, MaxSize: 325, Flows: 2, P50: 7, P95: 7, P99: 7, Mean: 4})
	check(2, Bin{Lo: 325, Hi: 351})
	check(19, Bin{Lo: 336000, Hi: 10000000, MaxSize: 10000000, Flows: 1, P50: 3, P95: 3, P99: 3, Mean: 3})
	check(20, Bin{Lo: 10000000, Hi: 0, MaxSize: 30000000, Flows: 2, P50: 60, P95: 60, P99: 60, Mean: 55})
	if _, err := SizeBins(ss, []int64{5, 5}); err == nil {
		t.Error("equal edges accepted")
	}
	b2, _ := SizeBins(ss[:4], Seed002Edges)
	if len(b2) != len(Seed002Edges) {
		t.Errorf("no flow above 10M: %d bins, want %d", len(b2), len(Seed002Edges))
	}
}

func TestSizeLabel(t *testing.T) {
	for in, want := range map[int64]string{300: "300B", 1000: "1K", 36000: "36K", 855: "855B", 336000: "336K", 10000000: "10M", 1500: "2K"} {
		if got := SizeLabel(in); got != want {
			t.Errorf("SizeLabel(%d) = %s, want %s", in, got, want)
		}
	}
}
