package window

import (
	"math"
	"testing"
)

func TestLog2EntriesShape(t *testing.T) {
	es := Log2Entries()
	if len(es) != Log2EntryCount || len(es) > 2048 {
		t.Fatalf("%d entries, want %d (<= LOG2_TABLE_SIZE)", len(es), Log2EntryCount)
	}
	seen := map[[2]uint32]bool{}
	for _, e := range es {
		if e.PrefixLen < 7 || e.PrefixLen > 32 {
			t.Fatalf("entry %+v: prefix length out of 7..32", e)
		}
		if e.Value&^uint32(uint64(1<<32-1)<<(32-e.PrefixLen)) != 0 {
			t.Fatalf("entry %+v: bits beyond the prefix", e)
		}
		k := [2]uint32{e.Value, uint32(e.PrefixLen)}
		if seen[k] {
			t.Fatalf("duplicate entry %+v", e)
		}
		seen[k] = true
	}
}

func TestLog2Values(t *testing.T) {
	tests := []struct {
		x    uint32
		want uint16
	}{
		{1, 0}, {2, 64}, {3, 101}, // 64*log2(3) = 101.44
		{64, 384}, {127, 447}, // 64*log2(127) = 447.27
		{128, 448},             // e=7: the /31 covers 128..129, mid 128.5: 448.36
		{1 << 20, 1281},        // e=20: covers 2^20 .. 2^20+2^14-1, mid 2^20+8191.5: 1280.72
		{math.MaxUint32, 2048}, // top prefix: mid 2^32-2^25+(2^25-1)/2: 2047.64
		{1000, 638},            // e=9: covers 1000..1003, mid 1001.5: 637.95
		{52900, 1004},          // e=15: covers 52736..53247, mid 52991.5: 1004.38
		{100000, 1063},         // e=16: covers 99840..100863, mid 100351.5: 1063.34
	}
	for _, tc := range tests {
		got, ok := Log2Q6(tc.x)
		if !ok || got != tc.want {
			t.Errorf("Log2Q6(%d) = %d %v, want %d", tc.x, got, ok, tc.want)
		}
	}
	if _, ok := Log2Q6(0); ok {
		t.Error("Log2Q6(0) hit")
	}
}

// TestLog2MatchesEntries checks that Log2Q6 is what a longest-prefix match over
// Log2Entries gives, on a sample of 32-bit values.
func TestLog2MatchesEntries(t *testing.T) {
	type key struct {
		v uint32
		l int
	}
	m := map[key]uint16{}
	for _, e := range Log2Entries() {
		m[key{e.Value, e.PrefixLen}] = e.Log2Q6
	}
	lpm := func(x uint32) (uint16, bool) {
		for l := 32; l >= 1; l-- {
			if v, ok := m[key{x & uint32(uint64(1<<32-1)<<(32-l)), l}]; ok {
				return v, true
			}
		}
		return 0, false
	}
	for x := uint64(0); x <= math.MaxUint32; x = x*5/4 + 1 {
		for _, y := range []uint32{uint32(x), uint32(x) | 1, uint32(x) ^ 0x5A5A} {
			a, okA := lpm(y)
			b, okB := Log2Q6(y)
			if a != b || okA != okB {
				t.Fatalf("x=%d: LPM %d %v, Log2Q6 %d %v", y, a, okA, b, okB)
			}
		}
	}
}

func TestExp2Entries(t *testing.T) {
	es := Exp2Entries()
	if len(es) != Exp2Size {
		t.Fatalf("%d entries", len(es))
	}
	for _, c := range []struct {
		k    uint16
		want uint32
	}{{0, 1}, {64, 2}, {640, 1024}, {1063, 99982}, {2047, 4248701965}} {
		// 2^(1063/64) = 99981.60; 2^(2047/64) = 4248701964.96
		if es[c.k].K != c.k || es[c.k].Window != c.want {
			t.Errorf("exp2[%d] = %+v, want %d", c.k, es[c.k], c.want)
		}
	}
	if _, ok := Exp2(2048); ok {
		t.Error("Exp2(2048) hit")
	}
}

func TestBDPLog2Q6(t *testing.T) {
	for _, c := range []struct {
		bdp  uint64
		want uint16
		err  bool
	}{{1, 0, false}, {100_000, 1063, false}, {1 << 20, 1280, false}, {0, 0, true}, {1 << 32, 0, true}} {
		got, err := BDPLog2Q6(c.bdp)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("BDPLog2Q6(%d) = %d, %v; want %d (error %v)", c.bdp, got, err, c.want, c.err)
		}
	}
	if got := BDPBytes(12_500_000, 8000); got != 100_000 {
		t.Errorf("BDPBytes(100G, 8us) = %d, want 100000", got)
	}
}

// TestWindowErrorBound compares the table-driven window with the exact
// max(MTU, bdp*data/sum) over a grid of (bdp, data, sum), data <= sum, and checks
// the documented bound |w - exact| <= MaxRelError*exact + 0.5.
func TestWindowErrorBound(t *testing.T) {
	if MaxRelError < 0.032 || MaxRelError > 0.033 {
		t.Fatalf("MaxRelError = %v, want about 3.25%%", MaxRelError)
	}
	grid := func(lo, hi uint64) []uint32 {
		var out []uint32
		for x := lo; x <= hi; x = x*9/8 + 7 {
			out = append(out, uint32(x))
		}
		return out
	}
	const mtu = 1024
	worst, n := 0.0, 0
	for _, bdp := range grid(2_000, 1<<30) {
		bq, err := BDPLog2Q6(uint64(bdp))
		if err != nil {
			t.Fatal(err)
		}
		for _, sum := range grid(64, 1<<31) {
			for _, data := range grid(1, uint64(sum)) {
				w := Window(bdp, bq, mtu, data, sum)
				exact := ExactWindow(bdp, mtu, data, sum)
				rel := (math.Abs(float64(w)-exact) - 0.5) / exact
				if rel > MaxRelError {
					t.Fatalf("bdp %d data %d sum %d: window %d, exact %.2f, error %.4f > %.4f", bdp, data, sum, w, exact, rel, MaxRelError)
				}
				worst = max(worst, rel)
				n++
			}
		}
	}
	t.Logf("%d points, worst relative error %.4f (bound %.4f)", n, worst, MaxRelError)
}

func TestWindowEdges(t *testing.T) {
	bq, _ := BDPLog2Q6(100_000)
	tests := []struct {
		name      string
		data, sum uint32
		want      uint32
	}{
		{"one flow owns the queue", 50_000, 50_000, 99_982},   // exp2(1063) = 99981.6 < bdp
		{"tiny share: k < 0 gives MTU", 64, 1 << 30, 1024},    // 100000*64/2^30 < 1 byte
		{"small share clamps to MTU", 1_000, 1_000_000, 1024}, // 100 bytes
		{"data 0 (table miss) and sum 0", 0, 0, 99_982},       // k = bdp_q6
	}
	for _, tc := range tests {
		if got := Window(100_000, bq, 1024, tc.data, tc.sum); got != tc.want {
			t.Errorf("%s: Window = %d, want %d", tc.name, got, tc.want)
		}
	}
	if got := Clamp(500, 1024, 10); got != 500 {
		t.Errorf("Clamp with bdp < mtu = %d, want bdp", got)
	}
	if k, neg := K(10, 5, 20); !neg || k != 0 {
		t.Errorf("K(10,5,20) = %d %v, want negative", k, neg)
	}
	if k, neg := K(1063, 900, 1000); neg || k != 963 {
		t.Errorf("K = %d %v, want 963", k, neg)
	}
}
