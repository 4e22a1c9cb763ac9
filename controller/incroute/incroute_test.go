package incroute

import (
	"math/big"
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

func TestApportion(t *testing.T) {
	tests := []struct {
		name string
		hops []Hop
		n    int
		want map[uint32]int
	}{
		{"single hop fills", []Hop{{7, 3}}, 256, map[uint32]int{7: 256}},
		{"equal", []Hop{{1, 1}, {2, 1}, {3, 1}, {4, 1}}, 256, map[uint32]int{1: 64, 2: 64, 3: 64, 4: 64}},
		{"zero weight gets nothing", []Hop{{1, 0}, {2, 5}}, 16, map[uint32]int{1: 0, 2: 16}},
		// 10*1/3 = 3.33 each: one extra bucket, tie broken by the smaller ID.
		{"tie to smaller id", []Hop{{9, 1}, {3, 1}, {5, 1}}, 10, map[uint32]int{3: 4, 5: 3, 9: 3}},
		// Shares 4.5, 3.5, 2.0 (remainders .5 .5 0): the two halves round up? No:
		// only one bucket is left over (4+3+2=9), and it goes to ID 1.
		{"largest remainder", []Hop{{1, 9}, {2, 7}, {3, 4}}, 10, map[uint32]int{1: 5, 2: 3, 3: 2}},
		// Shares 0.6, 0.4: the bigger remainder wins.
		{"one bucket", []Hop{{1, 2}, {2, 3}}, 1, map[uint32]int{1: 0, 2: 1}},
		{"huge weights", []Hop{{1, 1 << 62}, {2, 1 << 62}, {3, 1 << 62}}, 3, map[uint32]int{1: 1, 2: 1, 3: 1}},
		{"max buckets", []Hop{{1, 1}, {2, 3}}, MaxBuckets, map[uint32]int{1: 16384, 2: 49152}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Apportion(tt.hops, tt.n)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Apportion = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		hops []Hop
		n    int
		msg  string
	}{
		{"zero buckets", []Hop{{1, 1}}, 0, "bucket count 0: must be positive"},
		{"negative buckets", []Hop{{1, 1}}, -4, "bucket count -4: must be positive"},
		{"too many buckets", []Hop{{1, 1}}, MaxBuckets + 1, "exceeds the maximum 65536"},
		{"no hops", nil, 16, "no next hop with a positive weight"},
		{"all zero", []Hop{{1, 0}, {2, 0}}, 16, "no next hop with a positive weight"},
		{"duplicate", []Hop{{1, 1}, {2, 1}, {1, 3}}, 16, "duplicate next hop ID 1"},
		{"overflow", []Hop{{1, 1 << 63}, {2, 1 << 63}}, 16, "total weight overflows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Build(tt.hops, tt.n); err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Build error = %v, want %q", err, tt.msg)
			}
			if tt.n <= 0 || tt.n > MaxBuckets {
				return
			}
			prev, err := Build([]Hop{{1, 1}}, tt.n)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Update(prev, tt.hops); err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Update error = %v, want %q", err, tt.msg)
			}
		})
	}
	if _, err := Update(nil, []Hop{{1, 1}}); err == nil {
		t.Error("Update of an empty table: no error")
	}
}

func TestRunBound(t *testing.T) {
	tests := []struct{ c, n, want int }{
		{0, 10, 0}, {1, 10, 2}, {5, 10, 2}, {6, 10, 3}, {8, 10, 5}, {9, 10, 10}, {10, 10, 10},
		{252, 256, 64}, {128, 256, 2}, {129, 256, 3},
	}
	for _, tt := range tests {
		if got := RunBound(tt.c, tt.n); got != tt.want {
			t.Errorf("RunBound(%d, %d) = %d, want %d", tt.c, tt.n, got, tt.want)
		}
	}
}

// TestBuildSmall pins a few tables so that a change of the layout is seen.
func TestBuildSmall(t *testing.T) {
	tests := []struct {
		hops []Hop
		n    int
		want Table
	}{
		{[]Hop{{1, 1}, {2, 1}}, 4, Table{1, 2, 1, 2}},
		{[]Hop{{1, 3}, {2, 1}}, 8, Table{1, 1, 2, 1, 1, 1, 2, 1}},
		{[]Hop{{1, 1}, {2, 1}, {3, 2}}, 8, Table{1, 3, 2, 3, 1, 3, 2, 3}},
		{[]Hop{{5, 1}}, 3, Table{5, 5, 5}},
		{[]Hop{{1, 0}, {2, 1}}, 2, Table{2, 2}},
	}
	for _, tt := range tests {
		got, err := Build(tt.hops, tt.n)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Build(%v, %d) = %v, want %v", tt.hops, tt.n, got, tt.want)
		}
		if err := Check(got, tt.hops); err != nil {
			t.Error(err)
		}
	}
}

// randomHops returns 1..maxHops hops with distinct IDs and a mix of small,
// large and zero weights; at least one weight is positive.
func randomHops(rng *rand.Rand, maxHops int) []Hop {
	k := 1 + rng.Intn(maxHops)
	hops := make([]Hop, k)
	for i := range hops {
		hops[i] = Hop{ID: uint32(i)*20 + uint32(rng.Intn(20)), Weight: uint64(rng.Intn(10))}
		switch rng.Intn(6) {
		case 0:
			hops[i].Weight = uint64(rng.Intn(1000))
		case 1:
			hops[i].Weight = rng.Uint64() >> 8
		}
	}
	hops[rng.Intn(k)].Weight++
	rng.Shuffle(len(hops), func(i, j int) { hops[i], hops[j] = hops[j], hops[i] })
	return hops
}

var sizes = []int{1, 2, 3, 5, 7, 16, 64, 100, 256, 1000, 1024}

// checkProportional asserts counts are Hamilton shares: within one bucket
// of N*w/W (exact rational arithmetic), sum N, zero weight -> zero.
func checkProportional(t *testing.T, tb Table, hops []Hop) {
	t.Helper()
	n := len(tb)
	have := Counts(tb)
	total := new(big.Int)
	for _, h := range hops {
		total.Add(total, new(big.Int).SetUint64(h.Weight))
	}
	sum := 0
	for _, h := range hops {
		c := have[h.ID]
		sum += c
		if h.Weight == 0 && c != 0 {
			t.Fatalf("zero-weight hop %d has %d buckets", h.ID, c)
		}
		// |c*W - n*w| < W  <=>  |c - n*w/W| < 1
		d := new(big.Int).Mul(big.NewInt(int64(c)), total)
		d.Sub(d, new(big.Int).Mul(big.NewInt(int64(n)), new(big.Int).SetUint64(h.Weight)))
		if d.Abs(d).Cmp(total) >= 0 {
			t.Fatalf("hop %d (w=%d of %v) has %d of %d buckets: not within one of its share", h.ID, h.Weight, total, c, n)
		}
	}
	if sum != n {
		t.Fatalf("hops hold %d of %d buckets (table has IDs %v)", sum, n, have)
	}
}

func checkRuns(t *testing.T, tb Table, counts map[uint32]int) {
	t.Helper()
	for id, r := range MaxRuns(tb) {
		if b := RunBound(counts[id], len(tb)); r > b {
			t.Fatalf("hop %d (%d of %d buckets) has a run of %d > bound %d", id, counts[id], len(tb), r, b)
		}
	}
}

// TestBuildProperties: thousands of random weight vectors; every table is
// proportional, meets the run bound, and does not depend on hop order.
func TestBuildProperties(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 5000; i++ {
		n := sizes[rng.Intn(len(sizes))]
		hops := randomHops(rng, 12)
		tb, err := Build(hops, n)
		if err != nil {
			t.Fatal(err)
		}
		checkProportional(t, tb, hops)
		counts, _ := Apportion(hops, n)
		checkRuns(t, tb, counts)
		if err := Check(tb, hops); err != nil {
			t.Fatal(err)
		}
		rng.Shuffle(len(hops), func(i, j int) { hops[i], hops[j] = hops[j], hops[i] })
		again, _ := Build(hops, n)
		if !reflect.DeepEqual(tb, again) {
			t.Fatalf("Build depends on hop order: %v vs %v", tb, again)
		}
	}
}

// TestBuildLarge covers the full-size table with many hops.
func TestBuildLarge(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for _, k := range []int{2, 8, 64, 300} {
		hops := make([]Hop, k)
		for i := range hops {
			hops[i] = Hop{ID: uint32(i), Weight: uint64(1 + rng.Intn(100))}
		}
		hops[0].Weight = uint64(rng.Intn(20000))
		tb, err := Build(hops, MaxBuckets)
		if err != nil {
			t.Fatal(err)
		}
		checkProportional(t, tb, hops)
		if err := Check(tb, hops); err != nil {
			t.Fatalf("%d hops: %v", k, err)
		}
	}
}

// checkMinimalChurn asserts the churn property position by position.
func checkMinimalChurn(t *testing.T, prev, next Table, counts map[uint32]int) {
	t.Helper()
	have := Counts(prev)
	kept := make(map[uint32]int)
	for i := range prev {
		if prev[i] == next[i] {
			kept[prev[i]]++
			continue
		}
		// A bucket may only move from a hop that shrinks to one that grows.
		if counts[prev[i]] >= have[prev[i]] {
			t.Fatalf("bucket %d moved away from hop %d, which does not shrink (%d -> %d)", i, prev[i], have[prev[i]], counts[prev[i]])
		}
		if counts[next[i]] <= have[next[i]] {
			t.Fatalf("bucket %d moved to hop %d, which does not grow (%d -> %d)", i, next[i], have[next[i]], counts[next[i]])
		}
	}
	for id, h := range have {
		if want := min(h, counts[id]); kept[id] != want {
			t.Fatalf("hop %d kept %d buckets, want %d", id, kept[id], want)
		}
	}
	if got, want := Moved(prev, next), MinMoves(prev, counts); got != want {
		t.Fatalf("moved %d buckets, minimum %d", got, want)
	}
}

// nextHops derives new weights from old ones the way operators change them:
// one hop's weight, a hop removed or added, or everything new.
func nextHops(rng *rand.Rand, hops []Hop) []Hop {
	next := append([]Hop(nil), hops...)
	switch rng.Intn(4) {
	case 0:
		i := rng.Intn(len(next))
		next[i].Weight = uint64(rng.Intn(30))
	case 1:
		if len(next) > 1 {
			i := rng.Intn(len(next))
			next = append(next[:i], next[i+1:]...)
		}
	case 2:
		next = append(next, Hop{ID: 1000 + uint32(rng.Intn(1000)), Weight: uint64(1 + rng.Intn(30))})
		if len(next) > 1 && next[len(next)-1].ID == next[len(next)-2].ID {
			next = next[:len(next)-1]
		}
	default:
		return randomHops(rng, 12)
	}
	var total uint64
	for _, h := range next {
		total += h.Weight
	}
	if total == 0 {
		next[0].Weight = 1
	}
	seen := map[uint32]bool{}
	out := next[:0]
	for _, h := range next {
		if !seen[h.ID] {
			seen[h.ID] = true
			out = append(out, h)
		}
	}
	return out
}

// TestUpdateProperties: thousands of random update chains. Every Update is
// proportional, deterministic and has minimal churn; UpdateBounded always
// meets the run bound, equals Update whenever Update meets it, and never
// moves more than MinMoves + BoundedExtraMoves(Update's table). The share
// of Update results that meet the bound is measured and must stay high.
func TestUpdateProperties(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	updates, withinBound, extraMoves, repaired := 0, 0, 0, 0
	for chain := 0; chain < 1000; chain++ {
		n := sizes[rng.Intn(len(sizes))]
		hops := randomHops(rng, 10)
		prev, err := Build(hops, n)
		if err != nil {
			t.Fatal(err)
		}
		bounded := prev
		for step := 0; step < 6; step++ {
			next := nextHops(rng, hops)
			counts, err := Apportion(next, n)
			if err != nil {
				t.Fatal(err)
			}
			tb, err := Update(prev, next)
			if err != nil {
				t.Fatal(err)
			}
			checkProportional(t, tb, next)
			checkMinimalChurn(t, prev, tb, counts)
			again, _ := Update(prev, next)
			if !reflect.DeepEqual(tb, again) {
				t.Fatal("Update is not deterministic")
			}
			updates++
			ok := Check(tb, next) == nil
			if ok {
				withinBound++
			}

			b, err := UpdateBounded(prev, next)
			if err != nil {
				t.Fatal(err)
			}
			checkProportional(t, b, next)
			checkRuns(t, b, counts)
			if ok && !reflect.DeepEqual(b, tb) {
				t.Fatal("UpdateBounded differs from Update although Update meets the bound")
			}
			checkBoundedChurn(t, prev, b, tb, counts)
			if !ok {
				repaired++
				extraMoves += Moved(prev, b) - MinMoves(prev, counts)
			}
			// A chain of UpdateBounded keeps meeting both bounds too.
			bc, err := UpdateBounded(bounded, next)
			if err != nil {
				t.Fatal(err)
			}
			checkRuns(t, bc, counts)
			tbc, _ := Update(bounded, next)
			checkBoundedChurn(t, bounded, bc, tbc, counts)
			prev, bounded, hops = tb, bc, next
		}
	}
	share := float64(withinBound) / float64(updates)
	t.Logf("Update met RunBound in %d of %d updates (%.1f%%); UpdateBounded repaired the other %d with %d extra moves in all",
		withinBound, updates, 100*share, repaired, extraMoves)
	if share < 0.95 {
		t.Errorf("Update met RunBound in only %.1f%% of updates", 100*share)
	}
}

// checkBoundedChurn asserts UpdateBounded's churn bound: b (UpdateBounded's
// table) moves at most MinMoves + BoundedExtraMoves(tb) buckets, tb being
// Update's table for the same input.
func checkBoundedChurn(t *testing.T, prev, b, tb Table, counts map[uint32]int) {
	t.Helper()
	limit := MinMoves(prev, counts) + BoundedExtraMoves(tb, counts)
	if got := Moved(prev, b); got > limit {
		t.Fatalf("UpdateBounded moved %d buckets, bound MinMoves %d + extra %d", got, MinMoves(prev, counts),
			BoundedExtraMoves(tb, counts))
	}
}

// TestBoundedExtraMoves checks the churn allowance against hand counts.
func TestBoundedExtraMoves(t *testing.T) {
	tests := []struct {
		name string
		t    Table
		want int
	}{
		{"within the bound", Table{1, 2, 1, 2}, 0},
		// Hop 1 has 3 of 8 (bound 2): its run of 3 needs one separator.
		{"small hop run of 3", Table{1, 1, 1, 2, 2, 3, 2, 3}, 2},
		// No hop has half of the 24 buckets, so every bound is 2: hop 4's
		// run of 6 needs ceil(4/3) = 2 separators, hop 2's run of 3 one.
		{"two small runs", Table{4, 4, 4, 4, 4, 4, 2, 2, 2, 3, 5, 3, 5, 3, 5, 3, 5, 3, 5, 3, 5, 3, 5, 3}, 2 * (2 + 1)},
		// Hop 9 has 6 of 8 (bound ceil(6/2)+1 = 4): a run of 5 makes the
		// allowance 2 * (8 - 6) whatever the small hops do.
		{"big hop", Table{9, 9, 9, 9, 9, 1, 9, 1}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := BoundedExtraMoves(tt.t, Counts(tt.t)); got != tt.want {
				t.Errorf("BoundedExtraMoves(%v) = %d, want %d", tt.t, got, tt.want)
			}
		})
	}
}

// TestUpdateLarge runs updates on the full-size table.
func TestUpdateLarge(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	hops := make([]Hop, 48)
	for i := range hops {
		hops[i] = Hop{ID: uint32(i + 1), Weight: uint64(1 + rng.Intn(100))}
	}
	prev, err := Build(hops, MaxBuckets)
	if err != nil {
		t.Fatal(err)
	}
	for step := 0; step < 4; step++ {
		next := append([]Hop(nil), hops...)
		next[rng.Intn(len(next))].Weight = uint64(rng.Intn(200))
		counts, _ := Apportion(next, MaxBuckets)
		tb, err := Update(prev, next)
		if err != nil {
			t.Fatal(err)
		}
		checkMinimalChurn(t, prev, tb, counts)
		b, err := UpdateBounded(prev, next)
		if err != nil {
			t.Fatal(err)
		}
		checkRuns(t, b, counts)
		checkBoundedChurn(t, prev, b, tb, counts)
		prev, hops = tb, next
	}
}

// TestChurnRunConflict shows the documented conflict: when the only loser
// is a separator of a big hop that is the only gainer, the one table with
// minimal churn merges the big hop's runs beyond RunBound. Update keeps the
// churn minimal; UpdateBounded restores the bound with a few extra moves.
func TestChurnRunConflict(t *testing.T) {
	before := []Hop{{1, 1}, {2, 7}, {3, 144}, {4, 8}, {5, 7}}
	after := []Hop{{1, 1}, {2, 7}, {3, 144}, {4, 0}, {5, 7}}
	prev, err := Build(before, 64)
	if err != nil {
		t.Fatal(err)
	}
	oldC := Counts(prev)
	newC, _ := Apportion(after, 64)
	if oldC[3] != 55 || MaxRuns(prev)[3] != 7 || newC[3] != 58 || RunBound(58, 64) != 11 {
		t.Fatalf("example numbers changed: %d buckets, run %d -> %d buckets", oldC[3], MaxRuns(prev)[3], newC[3])
	}
	// Only hop 4 shrinks and only hop 3 grows, so the minimal-churn table
	// is unique: hop 4's buckets become hop 3's, nothing else moves.
	for id, c := range newC {
		if id != 3 && id != 4 && c != oldC[id] {
			t.Fatalf("hop %d changes count %d -> %d; example broken", id, oldC[id], c)
		}
	}
	unique := append(Table(nil), prev...)
	for i, id := range unique {
		if id == 4 {
			unique[i] = 3
		}
	}
	tb, err := Update(prev, after)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tb, unique) {
		t.Fatalf("Update = %v, want the unique minimal-churn table %v", tb, unique)
	}
	run, bound := MaxRuns(tb)[3], RunBound(newC[3], 64)
	if run != 14 || run <= bound {
		t.Fatalf("hop 3 run %d within bound %d: example no longer shows the conflict", run, bound)
	}
	if err := Check(tb, after); err == nil || !strings.Contains(err.Error(), "run of") {
		t.Fatalf("Check = %v, want a run error", err)
	}
	b, err := UpdateBounded(prev, after)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(b, after); err != nil {
		t.Fatal(err)
	}
	// The allowance here is 2 * (64 - 58) separators' worth: 12 extra.
	if extra := BoundedExtraMoves(tb, newC); extra != 12 {
		t.Errorf("BoundedExtraMoves = %d, want 12", extra)
	}
	checkBoundedChurn(t, prev, b, tb, newC)
	t.Logf("hop 3: run %d > bound %d with minimal churn (%d moves); UpdateBounded: %d moves",
		run, bound, Moved(prev, tb), Moved(prev, b))
}

func TestCheck(t *testing.T) {
	hops := []Hop{{1, 1}, {2, 1}}
	if err := Check(Table{1, 2, 1, 2}, hops); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		t   Table
		msg string
	}{
		{Table{1, 1, 1, 2}, "hop 1 has 3 buckets, want 2"},
		{Table{1, 2, 1, 3}, "hop 2 has 1 buckets, want 2"},
		{Table{1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2}, "run of 6 buckets, bound 2"},
	}
	for _, tt := range tests {
		if err := Check(tt.t, hops); err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("Check(%v) = %v, want %q", tt.t, err, tt.msg)
		}
	}
}

func FuzzBuildUpdate(f *testing.F) {
	f.Add(uint16(256), []byte{1, 2, 3, 4}, []byte{4, 0, 3, 9})
	f.Add(uint16(7), []byte{0, 9}, []byte{1, 0})
	f.Fuzz(func(t *testing.T, n uint16, w1, w2 []byte) {
		// Small tables keep each exec fast (large ones: TestManyHops); the
		// fuzzer then explores weights, not the size.
		n %= 2048
		hops := func(w []byte) []Hop {
			var hs []Hop
			for i, b := range w {
				hs = append(hs, Hop{ID: uint32(i), Weight: uint64(b)})
			}
			return hs
		}
		prev, err := Build(hops(w1), int(n))
		if err != nil {
			return
		}
		if err := Check(prev, hops(w1)); err != nil {
			t.Fatal(err)
		}
		next, err := Update(prev, hops(w2))
		if err != nil {
			return
		}
		counts, _ := Apportion(hops(w2), int(n))
		if Moved(prev, next) != MinMoves(prev, counts) {
			t.Fatal("churn not minimal")
		}
		b, err := UpdateBounded(prev, hops(w2))
		if err != nil || Check(b, hops(w2)) != nil {
			t.Fatalf("UpdateBounded: %v", err)
		}
		checkBoundedChurn(t, prev, b, next, counts)
	})
}

// TestManyHops: thousands of hops on the full table stay correct (and fast:
// the search work is bounded, so this runs in well under a second a case).
func TestManyHops(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for it := 0; it < 3; it++ {
		h1, h2 := make([]Hop, 1+rng.Intn(5000)), make([]Hop, 1+rng.Intn(5000))
		for i := range h1 {
			h1[i] = Hop{uint32(i), uint64(rng.Intn(256))}
		}
		for i := range h2 {
			h2[i] = Hop{uint32(i), uint64(rng.Intn(256))}
		}
		h1[0].Weight, h2[0].Weight = 1, 1
		prev, err := Build(h1, MaxBuckets)
		if err != nil {
			t.Fatal(err)
		}
		if err := Check(prev, h1); err != nil {
			t.Fatal(err)
		}
		counts, _ := Apportion(h2, MaxBuckets)
		next, err := Update(prev, h2)
		if err != nil {
			t.Fatal(err)
		}
		checkProportional(t, next, h2)
		checkMinimalChurn(t, prev, next, counts)
		b, err := UpdateBounded(prev, h2)
		if err != nil {
			t.Fatal(err)
		}
		if err := Check(b, h2); err != nil {
			t.Fatal(err)
		}
		checkBoundedChurn(t, prev, b, next, counts)
	}
}

// clumpyTable returns a random table of n buckets over k hops built from
// runs of random lengths, so that many runs exceed their bound.
func clumpyTable(rng *rand.Rand, n, k int) Table {
	t := make(Table, 0, n)
	for len(t) < n {
		id := uint32(1 + rng.Intn(k))
		for l := 1 + rng.Intn(1+rng.Intn(12)); l > 0 && len(t) < n; l-- {
			t = append(t, id)
		}
	}
	return t
}

// TestRepairs checks the two repairs behind UpdateBounded on random tables
// whose runs are far beyond their bounds (Update rarely hands them such
// tables): splitLongRuns always succeeds when no hop with half of the
// buckets or more is too long, respace always succeeds when such a hop
// exists, both keep every hop's count and meet the run bound, and each
// changes at most the buckets BoundedExtraMoves allows.
func TestRepairs(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	split, spaced := 0, 0
	for it := 0; it < 20000; it++ {
		n := 1 + rng.Intn(300)
		tb := clumpyTable(rng, n, 1+rng.Intn(6))
		counts := Counts(tb)
		prev := clumpyTable(rng, n, 8) // only steers the choice of receivers
		bigTooLong := false
		for id, r := range MaxRuns(tb) {
			bigTooLong = bigTooLong || (2*counts[id] >= n && r > RunBound(counts[id], n))
		}
		check := func(name string, out Table, limit int) {
			t.Helper()
			if !reflect.DeepEqual(Counts(out), counts) {
				t.Fatalf("%s changed the counts of %v: %v", name, tb, out)
			}
			if !withinBound(out, counts) {
				t.Fatalf("%s of %v: %v exceeds the run bound (runs %v)", name, tb, out, MaxRuns(out))
			}
			if m := Moved(tb, out); m > limit {
				t.Fatalf("%s of %v moved %d buckets, at most %d allowed: %v", name, tb, m, limit, out)
			}
		}
		if !bigTooLong {
			out := splitLongRuns(tb, prev, counts)
			if out == nil {
				t.Fatalf("splitLongRuns found no receiver for %v", tb)
			}
			check("splitLongRuns", out, BoundedExtraMoves(tb, counts))
			split++
		}
		if _, ok := bigHop(tb, counts); ok {
			out := respace(tb, counts)
			if out == nil {
				t.Fatalf("respace failed on %v", tb)
			}
			b, _ := bigHop(tb, counts)
			check("respace", out, 2*(n-counts[b]))
			spaced++
		}
	}
	t.Logf("splitLongRuns checked on %d tables, respace on %d", split, spaced)
	if split < 1000 || spaced < 1000 {
		t.Errorf("too few cases: %d split, %d respaced", split, spaced)
	}
}
