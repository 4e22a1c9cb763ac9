// Package incroute computes the INC route table: the bucket -> next hop table
// that the data plane indexes with hash(INC ID, ...) mod N (spec 04, step 5).
//
// Properties, each checked by property tests (incroute_test.go):
//
//   - Proportionality (Build, Update, UpdateBounded): next hop h gets c_h
//     buckets, its largest-remainder (Hamilton) share of N by weight, so
//     |c_h - N*w_h/W| < 1 and the counts sum to N. Zero-weight hops get
//     nothing; a single hop with positive weight fills the table.
//   - Scattering (Build, UpdateBounded): the longest run (consecutive
//     buckets in index order, not wrapping around) of hop h is at most
//     RunBound(c_h, N) = ceil(c_h/(N-c_h)) + 1, or N when c_h = N. A hop with
//     at most half of the buckets never has three in a row.
//   - Minimal churn (Update): a hop that loses k buckets gives up exactly k
//     and keeps the rest where they were; a hop that gains keeps all it had;
//     a hop with an unchanged count keeps exactly its buckets. The number of
//     changed buckets is MinMoves, the sum of the positive count differences,
//     which no table with the new counts can beat.
//   - Bounded churn (UpdateBounded): at most MinMoves + BoundedExtraMoves
//     of Update's table, and exactly MinMoves whenever Update's table meets
//     the run bound (below).
//
// Minimal churn and the run bound conflict. Example (TestChurnRunConflict):
// 64 buckets, weights 1, 7, 144, 8, 7 for hops 1..5; hop 3 holds 55 buckets
// in runs of at most 7 between the others. Setting hop 4's weight to 0 makes
// hop 4 the only loser and hop 3 the only gainer, so the one table with
// minimal churn gives hop 4's buckets to hop 3, which merges hop 3's runs
// into a run of 14 > RunBound(58, 64) = 11. In general, when a separator of
// a big hop must go and nothing else may move, two of its runs merge.
// Hence:
//
//   - Update always has minimal churn and proportionality; its scattering is
//     best effort: it picks which buckets each loser gives up and where each
//     gainer's buckets go so as to keep runs short (even splitting, and swaps
//     that never add a move), and meets RunBound whenever that search finds a
//     way (most updates: see TestUpdateProperties for the measured share),
//     but it guarantees no run bound.
//   - UpdateBounded always meets RunBound and proportionality, and bounds
//     its churn: it returns Update's table (minimal churn) whenever that
//     meets the bound, and otherwise repairs it with at most
//     BoundedExtraMoves more moves: 2 per separator that a too-long run
//     of a hop with less than half of the buckets needs (such a run of V
//     buckets with bound B needs ceil((V-B)/(B+1))), or, when the hop
//     with at least half of the buckets has a run too long, 2*(N - c) for
//     its c buckets (its N - c separators are respaced). In the example
//     above the allowance is 2*(64-58) = 12 and UpdateBounded moves 6
//     buckets more than the 3 of MinMoves (TestChurnRunConflict); over
//     random update chains TestUpdateProperties logs the extra moves.
//
// Check reports whether a table meets both proportionality and the bound,
// so the controller can choose per update. Output is deterministic: the
// same input gives the same table, whatever the order of the hops.
package incroute

import (
	"errors"
	"fmt"
	"math/bits"
	"sort"
)

// MaxBuckets is the largest table this package builds.
const MaxBuckets = 65536

// Hop is a next hop and its INC capacity weight.
type Hop struct {
	// ID names the next hop (for example an egress port); unique per table.
	ID uint32
	// Weight is the hop's capacity; its share of the buckets is Weight/sum.
	Weight uint64
}

// Table maps bucket index -> next-hop ID. len(Table) is the bucket count N.
type Table []uint32

// Apportion returns the number of buckets per hop ID (largest-remainder
// method; ties go to the larger remainder, then to the smaller ID). Hops
// with zero weight are present with count 0.
func Apportion(hops []Hop, n int) (map[uint32]int, error) {
	if n <= 0 {
		return nil, fmt.Errorf("incroute: bucket count %d: must be positive", n)
	}
	if n > MaxBuckets {
		return nil, fmt.Errorf("incroute: bucket count %d: exceeds the maximum %d", n, MaxBuckets)
	}
	sorted, err := sortHops(hops)
	if err != nil {
		return nil, err
	}
	var total uint64
	for _, h := range sorted {
		var carry uint64
		total, carry = bits.Add64(total, h.Weight, 0)
		if carry != 0 {
			return nil, errors.New("incroute: total weight overflows uint64")
		}
	}
	if total == 0 {
		return nil, errors.New("incroute: no next hop with a positive weight")
	}
	type share struct {
		id   uint32
		rem  uint64
		hops int
	}
	counts := make(map[uint32]int, len(sorted))
	shares := make([]share, 0, len(sorted))
	given := 0
	for _, h := range sorted {
		// floor(n*w/total) and its remainder, without overflow: n*w < 2^80.
		hi, lo := bits.Mul64(uint64(n), h.Weight)
		q, r := bits.Div64(hi, lo, total) // q <= n, so hi < total holds
		counts[h.ID] = int(q)
		given += int(q)
		shares = append(shares, share{id: h.ID, rem: r})
	}
	// All remainders share the denominator total, so they compare directly.
	sort.SliceStable(shares, func(i, j int) bool { return shares[i].rem > shares[j].rem })
	for i := 0; given < n; i++ {
		counts[shares[i].id]++
		given++
	}
	return counts, nil
}

func sortHops(hops []Hop) ([]Hop, error) {
	sorted := append([]Hop(nil), hops...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	for i := 1; i < len(sorted); i++ {
		if sorted[i].ID == sorted[i-1].ID {
			return nil, fmt.Errorf("incroute: duplicate next hop ID %d", sorted[i].ID)
		}
	}
	return sorted, nil
}

// RunBound is the longest run of one hop that a table of n buckets may hold
// when the hop has count of them: ceil(count/(n-count)) + 1, or n when
// count == n. With n-count other buckets there are at most n-count+1 gaps, so
// some run is at least ceil(count/(n-count+1)); the bound leaves one bucket
// of slack over that, which the minimal-churn update needs.
func RunBound(count, n int) int {
	if count >= n {
		return n
	}
	if count <= 0 {
		return 0
	}
	other := n - count
	return (count+other-1)/other + 1
}

// Build returns a scattered table of n buckets for hops.
func Build(hops []Hop, n int) (Table, error) {
	counts, err := Apportion(hops, n)
	if err != nil {
		return nil, err
	}
	t := make(Table, n)
	place(t, allPositions(n), counts)
	s := newSearch(t, nil, counts)
	s.repair()
	return t, nil
}

// Update returns the table for the new hop weights that differs from prev in
// as few buckets as possible (see the package comment). The bucket count
// stays len(prev); to change it, Build a new table. Hops present in prev but
// missing from hops are treated as weight 0 and lose all their buckets.
func Update(prev Table, hops []Hop) (Table, error) {
	n := len(prev)
	counts, err := Apportion(hops, n)
	if err != nil {
		return nil, fmt.Errorf("incroute: update: %w", err)
	}
	t := append(Table(nil), prev...)
	have := Counts(prev)
	gain := make(map[uint32]int)
	big := uint32(0)
	hasBig := false
	for id, c := range counts {
		if d := c - have[id]; d > 0 {
			gain[id] = d
			if 2*c > n {
				big, hasBig = id, true
			}
		}
	}
	if hasBig {
		updateBig(t, counts, have, gain, big)
	} else {
		// Losers give up buckets, each splitting its own longest runs; the
		// gainers' buckets are then spread over the freed positions.
		pos := make(map[uint32][]int)
		for i, id := range t {
			if counts[id] < have[id] {
				pos[id] = append(pos[id], i)
			}
		}
		var freed []int
		for _, id := range sortedIDs(pos) {
			freed = append(freed, chooseFreed(pos[id], have[id]-counts[id])...)
		}
		sort.Ints(freed)
		place(t, freed, gain)
	}
	s := newSearch(t, prev, counts)
	s.repair()
	return t, nil
}

// updateBig handles an update in which gainer big ends with more than half of
// the table. Its runs are then what matters, so the other hops' buckets act
// as separators in table coordinates. Every bucket of a loser is a candidate
// separator; big fills the candidates that are not chosen. Each loser keeps
// counts[l] buckets on its own positions, the other gainers get the rest of
// the separators.
//
//  1. The least run length L is found (binary search) for which a left-to-
//     right sweep can cut every stretch big would fill into pieces of at most
//     L, putting each cut at the latest candidate (the greedy that uses the
//     fewest cuts), without the cuts at a loser's positions beyond what it
//     keeps outnumbering the other gainers' new buckets.
//  2. Losers with cuts to spare keep more of their own buckets, chosen like
//     separators; the other gainers' remaining buckets go the same way.
//  3. Each loser keeps evenly chosen counts[l] of the separators on its
//     positions; the others go to the other gainers.
func updateBig(t Table, counts, have, gain map[uint32]int, big uint32) {
	n := len(t)
	isCand := make([]bool, n)
	for i, id := range t {
		isCand[i] = counts[id] < have[id]
	}
	others := 0 // new buckets of gainers other than big
	for id, d := range gain {
		if id != big {
			others += d
		}
	}
	isSep := make([]bool, n)
	used := make(map[uint32]int)
	var window []int // candidates in the current piece, ascending
	sweep := func(maxRun int, mark bool) bool {
		clear(used)
		overflow, run := 0, 0
		window = window[:0]
		for i := 0; i < n; i++ {
			if !isCand[i] && t[i] != big {
				run, window = 0, window[:0]
				continue
			}
			run++
			if isCand[i] {
				window = append(window, i)
			}
			if run <= maxRun {
				continue
			}
			if len(window) == 0 {
				return false
			}
			// Cut at the latest candidate whose owner still keeps a bucket;
			// failing that, at the latest one, as a new bucket of a gainer.
			j := len(window) - 1
			for k := j; k >= 0; k-- {
				if used[t[window[k]]] < counts[t[window[k]]] {
					j = k
					break
				}
			}
			cut := window[j]
			l := t[cut]
			if used[l]++; used[l] > counts[l] {
				if overflow++; overflow > others {
					return false
				}
			}
			if mark {
				isSep[cut] = true
			}
			run = i - cut
			window = append(window[:0], window[j+1:]...)
		}
		return true
	}
	lo, hi := 0, n // sweep(n) cuts nothing
	for lo < hi {
		mid := (lo + hi) / 2
		if sweep(mid, false) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	sweep(lo, true)
	fill := make([]bool, n)
	refill := func() {
		for i := range fill {
			fill[i] = (isCand[i] && !isSep[i]) || (!isCand[i] && t[i] == big)
		}
	}
	overflow := 0
	losers := make(map[uint32][]int)
	for i := range t {
		if isCand[i] {
			losers[t[i]] = append(losers[t[i]], i)
		}
	}
	// Placing each loser's extra buckets as separators costs O(n) per
	// loser; past manyLosers an even pick among its own positions keeps an
	// update with thousands of hops fast.
	const manyLosers = 64
	withExtra := 0
	for l, ps := range losers {
		if used[l] < counts[l] && len(ps) > 0 {
			withExtra++
		}
	}
	own := make([]bool, n)
	for _, l := range sortedIDs(losers) {
		if used[l] > counts[l] {
			overflow += used[l] - counts[l]
			continue
		}
		extra := counts[l] - used[l]
		if extra <= 0 {
			continue
		}
		var non []int
		for _, p := range losers[l] {
			if !isSep[p] {
				non = append(non, p)
			}
		}
		if withExtra > manyLosers {
			for i, pick := range evenPick(len(non), extra) {
				if pick {
					isSep[non[i]] = true
				}
			}
			continue
		}
		refill()
		for _, p := range non {
			own[p] = true
		}
		for _, p := range separators(fill, own, extra) {
			isSep[p] = true
		}
		for _, p := range non {
			own[p] = false
		}
	}
	if left := others - overflow; left > 0 {
		refill()
		free := make([]bool, n)
		for i := range free {
			free[i] = isCand[i] && !isSep[i]
		}
		for _, p := range separators(fill, free, left) {
			isSep[p] = true
		}
	}
	var slots []int // separators for the other gainers
	for _, l := range sortedIDs(losers) {
		var sep []int
		for _, p := range losers[l] {
			if isSep[p] {
				sep = append(sep, p)
			} else {
				t[p] = big
			}
		}
		keep := evenPick(len(sep), counts[l])
		for i, p := range sep {
			if !keep[i] {
				slots = append(slots, p)
			}
		}
	}
	sort.Ints(slots)
	rest := make(map[uint32]int, len(gain))
	for id, d := range gain {
		if id != big {
			rest[id] = d
		}
	}
	place(t, slots, rest)
}

// evenPick marks k of m items, evenly spaced.
func evenPick(m, k int) []bool {
	pick := make([]bool, m)
	for j := 0; j < k; j++ {
		pick[(2*j+1)*m/(2*k)] = true
	}
	return pick
}

// separators chooses count candidate positions to hold hops other than a
// big hop so that the big hop's longest run is as short as possible. fill
// marks the positions the big hop would hold without separators; isCand
// (a subset of fill) those that may become separators. count must not exceed
// the number of candidates. The stretches of fill get the fewest separators
// that bring every
// piece down to the least feasible length, spare separators go to the
// stretches with the longest average piece, and within a stretch they sit
// at the candidates nearest to evenly spaced ideal positions.
func separators(fill, isCand []bool, count int) []int {
	n := len(fill)
	var ss []*stretch
	for i := 0; i < n; {
		if !fill[i] {
			i++
			continue
		}
		st := &stretch{start: i}
		j := i
		for j < n && fill[j] {
			if isCand[j] {
				st.cand = append(st.cand, j)
			}
			j++
		}
		st.length = j - i
		ss = append(ss, st)
		i = j
	}
	return split(ss, count)
}

// stretch is a run of positions a big hop could fill.
type stretch struct {
	start, length int
	cand          []int // candidate positions inside, ascending
	k             int   // separators given to it
}

// split places count separators over the stretches (see separators).
func split(ss []*stretch, count int) []int {
	n := 0
	for _, st := range ss {
		n = max(n, st.start+st.length)
	}
	// need returns the separators a stretch needs so that no piece is longer
	// than maxRun, or -1 if it has too few candidates for that.
	need := func(st *stretch, maxRun int) int {
		if st.length <= maxRun {
			return 0
		}
		k := (st.length - maxRun + maxRun) / (maxRun + 1) // ceil((len-maxRun)/(maxRun+1))
		if k > len(st.cand) {
			return -1
		}
		return k
	}
	feasible := func(maxRun int) bool {
		total := 0
		for _, st := range ss {
			k := need(st, maxRun)
			if k < 0 {
				return false
			}
			total += k
		}
		return total <= count
	}
	lo, hi := 0, n // feasible(n) holds: no stretch needs a separator
	for lo < hi {
		mid := (lo + hi) / 2
		if feasible(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	left := count
	for _, st := range ss {
		st.k = need(st, lo)
		left -= st.k
	}
	// Spare separators go, one at a time, to the stretch with the longest
	// average piece that still has a candidate for one (a heap: there can
	// be tens of thousands of stretches and spare separators).
	longer := func(a, b *stretch) bool {
		// a.length/(a.k+1) > b.length/(b.k+1), without division; ties: leftmost.
		x, y := a.length*(b.k+1), b.length*(a.k+1)
		if x != y {
			return x > y
		}
		return a.start < b.start
	}
	var h []*stretch
	for _, st := range ss {
		if st.k < len(st.cand) {
			h = append(h, st)
		}
	}
	down := func(i int) {
		for {
			l, r, m := 2*i+1, 2*i+2, i
			if l < len(h) && longer(h[l], h[m]) {
				m = l
			}
			if r < len(h) && longer(h[r], h[m]) {
				m = r
			}
			if m == i {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		down(i)
	}
	for ; left > 0 && len(h) > 0; left-- {
		h[0].k++
		if h[0].k >= len(h[0].cand) {
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
		}
		down(0)
	}
	sep := make([]int, 0, count)
	for _, st := range ss {
		if st.k == 0 {
			continue
		}
		next := 0 // separators are chosen left to right among the candidates
		for i := 0; i < st.k; i++ {
			// Evenly spaced ideal separator, then the nearest candidate that
			// leaves enough candidates for the separators still to come.
			ideal := st.start + (i+1)*(st.length+1)/(st.k+1) - 1
			last := len(st.cand) - (st.k - i) // highest index allowed
			j := next + sort.SearchInts(st.cand[next:last+1], ideal)
			if j > last || (j > next && ideal-st.cand[j-1] <= st.cand[j]-ideal) {
				j--
			}
			sep = append(sep, st.cand[j])
			next = j + 1
		}
	}
	return sep
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// UpdateBounded is Update for callers that put scattering first: it returns
// Update's minimal-churn table when that keeps every run within RunBound,
// and otherwise the cheaper of two repairs of it, each of which always meets
// the bound (the package comment states and proves the churn they add):
//
//   - splitLongRuns: for a hop h with fewer than half of the buckets, each
//     run longer than RunBound gets the fewest separators, evenly spaced, and
//     each separator swaps with a bucket of another hop elsewhere that h can
//     take without making a run too long (one always exists);
//   - respace: for a hop b with at least half of the buckets, the other hops'
//     buckets (b's separators) keep their order and, where the gaps allow,
//     their positions; the others move as little to the right or left as
//     needed for every gap to fit b's bound.
//
// Its result always meets the run bound and proportionality; its churn is
// Update's (minimal) when Update meets the bound, and otherwise at most
// MinMoves + BoundedExtraMoves(Update's table).
func UpdateBounded(prev Table, hops []Hop) (Table, error) {
	t, err := Update(prev, hops)
	if err != nil {
		return nil, err
	}
	counts, err := Apportion(hops, len(t))
	if err != nil {
		return nil, fmt.Errorf("incroute: update: %w", err)
	}
	if withinBound(t, counts) {
		return t, nil
	}
	var best Table
	for _, c := range []Table{splitLongRuns(t, prev, counts), respace(t, counts)} {
		if c != nil && withinBound(c, counts) && (best == nil || Moved(prev, c) < Moved(prev, best)) {
			best = c
		}
	}
	if best == nil {
		// Unreachable: one of the two repairs always succeeds (package
		// comment); an error rather than a table that breaks the promise.
		return nil, errors.New("incroute: update: no repair met the run bound (a bug in UpdateBounded)")
	}
	return best, nil
}

// BoundedExtraMoves is the most buckets UpdateBounded moves beyond MinMoves
// when Update's table t (with the given counts) exceeds the run bound:
//
//   - 2*(N - c_b) when a hop b with 2*c_b >= N has a run longer than
//     RunBound(c_b, N) in t (respace moves at most each of b's N - c_b
//     separators, two buckets each);
//   - otherwise 2 * the sum, over the runs of t longer than their bound B,
//     of ceil((V - B)/(B + 1)) for a run of length V (the fewest separators
//     that split it; splitLongRuns swaps each with one bucket elsewhere).
//
// It is 0 when t meets the bound.
func BoundedExtraMoves(t Table, counts map[uint32]int) int {
	n := len(t)
	bigViolated, big := false, 0
	seps := 0
	for i := 0; i < n; {
		j := i
		for j < n && t[j] == t[i] {
			j++
		}
		c := counts[t[i]]
		if b := RunBound(c, n); j-i > b {
			seps += (j - i - b + b) / (b + 1)
			if 2*c >= n {
				bigViolated, big = true, c
			}
		}
		i = j
	}
	if bigViolated {
		return 2 * (n - big)
	}
	return 2 * seps
}

// withinBound reports whether every run of t is within RunBound.
func withinBound(t Table, counts map[uint32]int) bool {
	n := len(t)
	for i := 0; i < n; {
		j := i
		for j < n && t[j] == t[i] {
			j++
		}
		if j-i > RunBound(counts[t[i]], n) {
			return false
		}
		i = j
	}
	return true
}

// splitLongRuns returns a copy of t in which every run longer than its bound
// is split by separators, or nil when such a run belongs to a hop with at
// least half of the buckets (respace handles that one).
//
// For a hop h with c < N - c = o buckets the bound is B = 2. A run of V > B
// gets k = ceil((V-B)/(B+1)) separators, evenly spaced, so that its pieces
// are 1..B long. Each separator p takes the hop of a receiver q elsewhere,
// which becomes h: q is a bucket of another hop, not one of the new
// separators, whose neighbouring runs of h (L before, R after) satisfy
// L + R + 1 <= B, so the run q joins stays within the bound. The other
// hop's bucket at p sits between two pieces of h (a run of 1), and it only
// loses one at q, so no other hop's run grows. A receiver always exists:
// every run of h borders at most two buckets of other hops, so the sum of
// L + R over them is at most 2 * (h's buckets); with K separators pending,
// j of them matched, and every original separator of h having L + R >= B,
// (o - j) * B <= 2(c - K + j) - 2K, yet (o - j)(c/o + 1) > 2c - 4K + 2j for
// j < K and c < o. Each separator with its receiver changes two buckets.
func splitLongRuns(t, prev Table, counts map[uint32]int) Table {
	n := len(t)
	out := append(Table(nil), t...)
	long := make(map[uint32][][2]int) // hop -> its runs over the bound, as found in t
	for i := 0; i < n; {
		j := i
		for j < n && t[j] == t[i] {
			j++
		}
		if j-i > RunBound(counts[t[i]], n) {
			long[t[i]] = append(long[t[i]], [2]int{i, j})
		}
		i = j
	}
	prevPos := make(map[uint32][]int, len(long)) // where each hop was in prev
	for i, id := range prev {
		if _, ok := long[id]; ok {
			prevPos[id] = append(prevPos[id], i)
		}
	}
	pending := make([]bool, n)
	for _, h := range sortedIDs(long) {
		c := counts[h]
		if 2*c >= n {
			return nil
		}
		bound := RunBound(c, n)
		// The runs of h only shrink while earlier hops are fixed (h may
		// have given them receivers), so look again inside each range.
		var seps []int
		for _, r := range long[h] {
			for i := r[0]; i < r[1]; {
				if out[i] != h {
					i++
					continue
				}
				j := i
				for j < r[1] && out[j] == h {
					j++
				}
				if v := j - i; v > bound {
					k := (v - bound + bound) / (bound + 1)
					for s := 1; s <= k; s++ {
						p := i + s*(v-k)/(k+1) + s - 1
						seps = append(seps, p)
						pending[p] = true
					}
				}
				i = j
			}
		}
		if len(seps) == 0 {
			continue
		}
		isH := func(i int) bool { return i >= 0 && i < n && out[i] == h && !pending[i] }
		receives := func(q int) bool {
			if out[q] == h || pending[q] {
				return false
			}
			l, r := 0, 0
			for l <= bound && isH(q-1-l) {
				l++
			}
			for r <= bound && isH(q+1+r) {
				r++
			}
			return l+r+1 <= bound
		}
		// Separators by the hop they held in prev: giving a separator back
		// to that hop undoes a move.
		byPrev := make(map[uint32][]int)
		for _, p := range seps {
			byPrev[prev[p]] = append(byPrev[prev[p]], p)
		}
		used := make(map[int]bool, len(seps))
		next := 0
		left := len(seps)
		take := func(q int) {
			g := out[q]
			p := -1
			for ps := byPrev[g]; len(ps) > 0 && p < 0; ps = byPrev[g] {
				if byPrev[g] = ps[1:]; !used[ps[0]] {
					p = ps[0]
				}
			}
			for p < 0 {
				if !used[seps[next]] {
					p = seps[next]
				}
				next++
			}
			used[p] = true
			out[p], pending[p] = g, false
			out[q] = h
			left--
		}
		// Receivers where h was in prev first (each undoes a move), then any.
		for _, q := range prevPos[h] {
			if left == 0 {
				break
			}
			if receives(q) {
				take(q)
			}
		}
		for q := 0; q < n && left > 0; q++ {
			if receives(q) {
				take(q)
			}
		}
		if left > 0 {
			return nil // unreachable for c < o (see above)
		}
	}
	return out
}

// bigHop returns the hop of t with the most buckets when it has at least
// half of them and not all: with two hops of N/2 each, the one whose runs
// exceed the bound (else the smaller ID).
func bigHop(t Table, counts map[uint32]int) (uint32, bool) {
	n := len(t)
	b, bc := uint32(0), -1
	for _, id := range sortedIDs(counts) {
		if counts[id] > bc {
			b, bc = id, counts[id]
		}
	}
	if 2*bc < n || bc == n {
		return 0, false
	}
	if 2*bc == n {
		runs := MaxRuns(t)
		for id, c := range counts {
			if id != b && c == bc && runs[id] > RunBound(c, n) {
				b = id
			}
		}
	}
	return b, true
}

// respace returns a copy of t in which the buckets of the hop b with the
// most buckets (at least half; nil if there is none) are spread within
// RunBound: the other buckets, b's separators, keep their order and hops;
// each keeps its position when the gap before it allows, and otherwise moves
// to the nearest position that does. Separator k (of o) goes to a position
// in [lo, hi]: hi = min(previous + B + 1, N - 1 - 2*(o-k-1)) keeps the gap
// before it within B and leaves room for the rest, lo = max(previous + 2,
// N - 1 - B - (o-k-1)*(B+1)) keeps it apart from the previous one and
// lets the rest cover the table; lo <= hi holds at every step when
// N >= 2o and B >= 1 (induction from the first separator, where lo = 0...
// and hi = B). Two kept neighbours of different hops may stay adjacent. So
// b's runs are within B, and every other hop's runs are 1 long. Only the
// separators' old and new positions change: at most 2o buckets.
func respace(t Table, counts map[uint32]int) Table {
	b, ok := bigHop(t, counts)
	if !ok {
		return nil
	}
	n := len(t)
	bound := RunBound(counts[b], n)
	var sepPos []int
	for i, id := range t {
		if id != b {
			sepPos = append(sepPos, i)
		}
	}
	o := len(sepPos)
	out := make(Table, n)
	for i := range out {
		out[i] = b
	}
	last := -1
	for k, s := range sepPos {
		rest := o - k - 1
		hi := min(last+bound+1, n-1-2*rest)
		lo := n - 1 - bound - rest*(bound+1)
		switch {
		case k == 0:
			lo = max(lo, 0)
		case s == last+1 && t[s] != out[last]:
			lo = max(lo, last+1) // kept next to a separator of another hop
		default:
			lo = max(lo, last+2)
		}
		if lo > hi {
			return nil // unreachable (see above)
		}
		pos := min(max(s, lo), hi)
		out[pos] = t[s]
		last = pos
	}
	return out
}

func sortedIDs[V any](m map[uint32]V) []uint32 {
	ids := make([]uint32, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func allPositions(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}

// place fills t at the given positions (len(pos) == sum of counts).
//
// If one hop has more than half of the positions, the others are put on
// evenly spaced positions (never two adjacent, since the spacing exceeds 2)
// and placed among themselves recursively; the big hop fills the long gaps,
// whose lengths then differ by at most one. Otherwise every hop's buckets go
// near evenly spaced ideal slots: the k-th bucket of a hop with c buckets
// ideally lies at index (k+phase)*len(pos)/c, and dealing the sorted ideal
// slots out in order is earliest-deadline-first.
func place(t Table, pos []int, counts map[uint32]int) {
	ids := sortedIDs(counts)
	m := len(pos)
	if m == 0 {
		return
	}
	big, bigC := uint32(0), -1
	for _, id := range ids {
		if counts[id] > bigC {
			big, bigC = id, counts[id]
		}
	}
	if 2*bigC > m {
		o := m - bigC
		other := make([]int, 0, o)
		next := 0 // index in pos of the next other slot
		for i, p := range pos {
			if next < o && i == (2*next+1)*m/(2*o) {
				other = append(other, p)
				next++
				continue
			}
			t[p] = big
		}
		rest := make(map[uint32]int, len(counts)-1)
		for id, c := range counts {
			if id != big && c > 0 {
				rest[id] = c
			}
		}
		place(t, other, rest)
		return
	}
	// Hop j of h (in ID order) starts at phase (j+1/2)/h: hops with equal
	// counts would otherwise share ideal slots and come out in bursts that
	// leave long runs of a bigger hop behind them.
	type item struct {
		num, den uint64 // ideal index = num/den
		id       uint32
	}
	h := uint64(len(ids))
	items := make([]item, 0, m)
	for j, id := range ids {
		c := uint64(counts[id])
		for k := uint64(0); k < c; k++ {
			// (k + (2j+1)/(2h)) * m / c
			items = append(items, item{num: (2*h*k + 2*uint64(j) + 1) * uint64(m), den: 2 * h * c, id: id})
		}
	}
	sort.SliceStable(items, func(i, j int) bool {
		// num/den < num'/den' without division, in 128 bits.
		ah, al := bits.Mul64(items[i].num, items[j].den)
		bh, bl := bits.Mul64(items[j].num, items[i].den)
		if ah != bh {
			return ah < bh
		}
		if al != bl {
			return al < bl
		}
		return items[i].id < items[j].id
	})
	for i, p := range pos {
		t[p] = items[i].id
	}
}

// chooseFreed picks lose buckets of hop id, which sits at the ascending
// positions pos, to give up. The freed buckets split the hop's runs, so they
// are chosen like separators: as few per run as bring every remaining piece
// down to the least feasible length, spread evenly inside each run.
func chooseFreed(pos []int, lose int) []int {
	var ss []*stretch
	for i := 0; i < len(pos); {
		j := i + 1
		for j < len(pos) && pos[j] == pos[j-1]+1 {
			j++
		}
		ss = append(ss, &stretch{start: pos[i], length: j - i, cand: pos[i:j]})
		i = j
	}
	return split(ss, lose)
}

// Counts returns the number of buckets per hop ID in t.
func Counts(t Table) map[uint32]int {
	c := make(map[uint32]int)
	for _, id := range t {
		c[id]++
	}
	return c
}

// MaxRuns returns the longest run (consecutive buckets, not wrapping) of each
// hop ID in t.
func MaxRuns(t Table) map[uint32]int {
	m := make(map[uint32]int)
	for i := 0; i < len(t); {
		j := i
		for j < len(t) && t[j] == t[i] {
			j++
		}
		if j-i > m[t[i]] {
			m[t[i]] = j - i
		}
		i = j
	}
	return m
}

// Moved returns how many buckets differ between two tables of equal length.
func Moved(prev, next Table) int {
	n := 0
	for i := range prev {
		if i < len(next) && prev[i] != next[i] {
			n++
		}
	}
	return n
}

// MinMoves returns the least number of buckets any table with the given
// counts must change relative to prev: the sum of the positive differences
// between the new and the old count of each hop.
func MinMoves(prev Table, counts map[uint32]int) int {
	have := Counts(prev)
	n := 0
	for id, c := range counts {
		if d := c - have[id]; d > 0 {
			n += d
		}
	}
	return n
}

// Check verifies t against the properties for hops: length n, counts equal
// to Apportion, and every run within RunBound. It returns the first problem.
func Check(t Table, hops []Hop) error {
	counts, err := Apportion(hops, len(t))
	if err != nil {
		return err
	}
	have := Counts(t)
	for _, id := range sortedIDs(have) {
		if have[id] != counts[id] {
			return fmt.Errorf("incroute: hop %d has %d buckets, want %d", id, have[id], counts[id])
		}
	}
	for _, id := range sortedIDs(counts) {
		if have[id] != counts[id] {
			return fmt.Errorf("incroute: hop %d has %d buckets, want %d", id, have[id], counts[id])
		}
	}
	runs := MaxRuns(t)
	for _, id := range sortedIDs(runs) {
		if b := RunBound(counts[id], len(t)); runs[id] > b {
			return fmt.Errorf("incroute: hop %d has a run of %d buckets, bound %d", id, runs[id], b)
		}
	}
	return nil
}
