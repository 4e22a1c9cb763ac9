package incroute

// search improves a table by swapping two buckets' hops. A swap keeps every
// hop's count; it is taken only when it shortens the runs that exceed their
// bound and, during an update, does not add a bucket that differs from prev.
type search struct {
	t     Table
	prev  Table // nil: any swap is allowed (Build)
	bound map[uint32]int
	// work caps the run-scanning steps so a pathological input cannot make
	// the search quadratic for long; the result is then returned as is.
	work int
}

// workBudget bounds the search: about 1000 steps per bucket, at most a
// fraction of a second at MaxBuckets.
func workBudget(n int) int { return min(20_000_000, 1000*n+100_000) }

func newSearch(t, prev Table, counts map[uint32]int) *search {
	b := make(map[uint32]int, len(counts))
	for id, c := range counts {
		b[id] = RunBound(c, len(t))
	}
	return &search{t: t, prev: prev, bound: b, work: workBudget(len(t))}
}

// runAt returns the run [start, end) that contains i.
func (s *search) runAt(i int) (int, int) {
	id := s.t[i]
	a, b := i, i+1
	for a > 0 && s.t[a-1] == id {
		a--
	}
	for b < len(s.t) && s.t[b] == id {
		b++
	}
	s.work -= b - a
	return a, b
}

// cost returns, over the distinct runs that touch ps, the total excess over
// the bounds and the sum of squared run lengths. Swaps must lower the pair
// lexicographically; the squares let the search cross plateaus where the
// excess stays the same but buckets get more evenly spread.
func (s *search) cost(ps [6]int) (int, int) {
	var starts [6]int
	seen, total, sq := 0, 0, 0
outer:
	for _, p := range ps {
		if p < 0 || p >= len(s.t) {
			continue
		}
		a, b := s.runAt(p)
		for _, st := range starts[:seen] {
			if st == a {
				continue outer
			}
		}
		starts[seen] = a
		seen++
		if e := b - a - s.bound[s.t[a]]; e > 0 {
			total += e
		}
		sq += (b - a) * (b - a)
	}
	return total, sq
}

func (s *search) churnOK(p, q int) bool {
	if s.prev == nil {
		return true
	}
	before := b2i(s.t[p] != s.prev[p]) + b2i(s.t[q] != s.prev[q])
	after := b2i(s.t[q] != s.prev[p]) + b2i(s.t[p] != s.prev[q])
	return after <= before
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// violations lists the runs [start, end) longer than their bound.
func (s *search) violations() [][2]int {
	var v [][2]int
	for i := 0; i < len(s.t); {
		j := i
		for j < len(s.t) && s.t[j] == s.t[i] {
			j++
		}
		if j-i > s.bound[s.t[i]] {
			v = append(v, [2]int{i, j})
		}
		i = j
	}
	s.work -= len(s.t)
	return v
}

// repair swaps until no run exceeds its bound, no swap helps, or the work
// budget is spent. Every accepted swap lowers (excess, sum of squares)
// lexicographically, so it ends.
func (s *search) repair() {
	for s.work > 0 {
		vs := s.violations()
		if len(vs) == 0 {
			return
		}
		improved := false
		for _, v := range vs {
			if s.fix(v[0], v[1]) {
				improved = true
				break
			}
			if s.work <= 0 {
				return
			}
		}
		if !improved {
			return
		}
	}
}

// fix tries to move one bucket out of the run [a, b), middle first.
func (s *search) fix(a, b int) bool {
	mid := (a + b) / 2
	for d := 0; d < b-a; d++ {
		p := mid + (d+1)/2*(1-2*(d%2)) // mid, mid+1, mid-1, mid+2, ...
		if p < a || p >= b {
			continue
		}
		for q := range s.t {
			if s.work--; s.work <= 0 {
				return false
			}
			if s.t[q] == s.t[p] || !s.churnOK(p, q) {
				continue
			}
			ps := [6]int{p - 1, p, p + 1, q - 1, q, q + 1}
			e0, q0 := s.cost(ps)
			s.t[p], s.t[q] = s.t[q], s.t[p]
			if e1, q1 := s.cost(ps); e1 < e0 || (e1 == e0 && q1 < q0) {
				return true
			}
			s.t[p], s.t[q] = s.t[q], s.t[p]
		}
	}
	return false
}
