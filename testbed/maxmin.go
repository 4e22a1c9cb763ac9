package testbed

import (
	"errors"
	"fmt"
	"math"
)

// MaxMinFair returns the max-min fair rates of flows over links by
// progressive filling (water filling): all unfrozen flows grow at the same
// pace; a link that fills freezes the flows crossing it, a flow that
// reaches its demand freezes itself; repeat until every flow is frozen.
//
// capacity[l] is link l's capacity (>= 0), paths[f] the links flow f
// crosses (each at most once; a flow may cross no link), and demand[f] the
// most flow f wants (math.Inf(1) for no limit); demand may be nil (no
// limits). Units are the caller's (bits/s in this package).
func MaxMinFair(capacity []float64, paths [][]int, demand []float64) ([]float64, error) {
	if demand != nil && len(demand) != len(paths) {
		return nil, fmt.Errorf("testbed: maxmin: %d demands for %d flows", len(demand), len(paths))
	}
	for l, c := range capacity {
		if c < 0 || math.IsNaN(c) {
			return nil, fmt.Errorf("testbed: maxmin: link %d capacity %v", l, c)
		}
	}
	users := make([][]int, len(capacity))
	for f, p := range paths {
		seen := map[int]bool{}
		for _, l := range p {
			if l < 0 || l >= len(capacity) {
				return nil, fmt.Errorf("testbed: maxmin: flow %d crosses unknown link %d", f, l)
			}
			if seen[l] {
				return nil, fmt.Errorf("testbed: maxmin: flow %d crosses link %d twice", f, l)
			}
			seen[l] = true
			users[l] = append(users[l], f)
		}
	}
	rate := make([]float64, len(paths))
	frozen := make([]bool, len(paths))
	left := append([]float64(nil), capacity...)
	want := func(f int) float64 {
		if demand == nil {
			return math.Inf(1)
		}
		if demand[f] < 0 || math.IsNaN(demand[f]) {
			return 0
		}
		return demand[f]
	}
	active := len(paths)
	for active > 0 {
		// The largest equal increment every unfrozen flow can take.
		inc := math.Inf(1)
		for l := range capacity {
			n := 0
			for _, f := range users[l] {
				if !frozen[f] {
					n++
				}
			}
			if n > 0 {
				inc = math.Min(inc, left[l]/float64(n))
			}
		}
		for f := range paths {
			if !frozen[f] {
				inc = math.Min(inc, want(f)-rate[f])
			}
		}
		if math.IsInf(inc, 1) {
			return nil, errors.New("testbed: maxmin: a flow crosses no link and has no demand limit")
		}
		inc = math.Max(inc, 0)
		for f := range paths {
			if !frozen[f] {
				rate[f] += inc
				for _, l := range paths[f] {
					left[l] -= inc
				}
			}
		}
		// Freeze flows on full links and flows that reached their demand.
		const eps = 1e-9
		for l := range capacity {
			if left[l] <= eps*math.Max(1, capacity[l]) {
				for _, f := range users[l] {
					if !frozen[f] {
						frozen[f] = true
						active--
					}
				}
			}
		}
		for f := range paths {
			if !frozen[f] && rate[f] >= want(f)-eps*math.Max(1, want(f)) {
				frozen[f] = true
				active--
			}
		}
	}
	return rate, nil
}

// FairShares returns each flow's max-min fair share in bits/s, in the order
// of t.Flows, assuming all flows are active at once. Each direction of a
// link is a resource with the link's rate; a host's link carries its
// sending flows in one direction and its receiving flows in the other.
func (t *Topology) FairShares() ([]float64, error) {
	idx := map[DirLink]int{}
	var capacity []float64
	paths := make([][]int, len(t.Flows))
	for f, fl := range t.Flows {
		hops, err := t.Path(fl.Src, fl.Dst)
		if err != nil {
			return nil, fmt.Errorf("testbed: fair share of %s: %w", fl.Name, err)
		}
		for _, h := range hops {
			d := h.Dir(t)
			i, ok := idx[d]
			if !ok {
				i = len(capacity)
				idx[d] = i
				capacity = append(capacity, float64(t.Links[d.Link].rate))
			}
			paths[f] = append(paths[f], i)
		}
	}
	return MaxMinFair(capacity, paths, nil)
}
