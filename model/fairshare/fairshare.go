// Package fairshare is the analytic yardstick of the experiments: the max-min fair
// share of flows over links (progressive filling) and the fluid processor-sharing
// finish times of sized flows. The testbed and fastcnp-sim both compare measured
// throughput and completion times against it. Pure: no I/O.
package fairshare

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
		return nil, fmt.Errorf("fairshare: maxmin: %d demands for %d flows", len(demand), len(paths))
	}
	for l, c := range capacity {
		if c < 0 || math.IsNaN(c) {
			return nil, fmt.Errorf("fairshare: maxmin: link %d capacity %v", l, c)
		}
	}
	users := make([][]int, len(capacity))
	for f, p := range paths {
		seen := map[int]bool{}
		for _, l := range p {
			if l < 0 || l >= len(capacity) {
				return nil, fmt.Errorf("fairshare: maxmin: flow %d crosses unknown link %d", f, l)
			}
			if seen[l] {
				return nil, fmt.Errorf("fairshare: maxmin: flow %d crosses link %d twice", f, l)
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
			return nil, errors.New("fairshare: maxmin: a flow crosses no link and has no demand limit")
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

// FluidFlow is one flow of the fluid model (FluidFinish).
type FluidFlow struct {
	// Start is when the flow starts, in seconds.
	Start float64
	// Bits is how much it sends (payload bits); math.Inf(1) for a flow that
	// sends until Stop.
	Bits float64
	// Stop, if > Start, is when the flow stops sending whatever is left
	// (long flows); 0: never.
	Stop float64
	// Path lists the links it crosses (indices into the capacities).
	Path []int
}

// FluidFinish runs the fluid processor-sharing max-min model: at every
// instant the flows that have started and have bits left share the links
// max-min fairly (MaxMinFair with the current set of flows, no demand
// limits), and the shares are recomputed each time a flow starts, finishes
// or stops. It returns, per flow, when it finished (seconds; +Inf for a
// flow with infinite Bits, which never finishes) and the bits it sent (its
// Bits when it finished; for a stopped flow what it sent until Stop).
// capacity[l] is link l's capacity in bits/s, in the same terms as Bits
// (payload bits/s when Bits is payload). A sized flow that cannot finish
// (it crosses a link of capacity 0) is an error, as is a flow that crosses
// no link.
func FluidFinish(capacity []float64, flows []FluidFlow) (finish, sent []float64, err error) {
	for i, f := range flows {
		switch {
		case math.IsNaN(f.Start) || math.IsInf(f.Start, 0) || f.Start < 0:
			return nil, nil, fmt.Errorf("fairshare: fluid: flow %d start %v", i, f.Start)
		case math.IsNaN(f.Bits) || f.Bits < 0:
			return nil, nil, fmt.Errorf("fairshare: fluid: flow %d size %v bits", i, f.Bits)
		case math.IsNaN(f.Stop) || math.IsInf(f.Stop, 0) || f.Stop < 0:
			return nil, nil, fmt.Errorf("fairshare: fluid: flow %d stop %v", i, f.Stop)
		case len(f.Path) == 0:
			return nil, nil, fmt.Errorf("fairshare: fluid: flow %d crosses no link", i)
		case math.IsInf(f.Bits, 1) && f.Stop <= f.Start:
			return nil, nil, fmt.Errorf("fairshare: fluid: flow %d is endless (no size and no stop)", i)
		}
	}
	n := len(flows)
	finish, sent = make([]float64, n), make([]float64, n)
	left := make([]float64, n)
	state := make([]int, n) // 0 waiting, 1 active, 2 over
	for i, f := range flows {
		finish[i] = math.Inf(1)
		left[i] = f.Bits
	}
	// done is true when a flow has (practically) nothing left: a relative
	// tolerance absorbs the rounding of rate*dt.
	done := func(i int) bool { return !math.IsInf(left[i], 1) && left[i] <= 1e-9*math.Max(1, flows[i].Bits) }
	t := math.Inf(1)
	for _, f := range flows {
		t = math.Min(t, f.Start)
	}
	over := 0
	for over < n {
		// Admit the flows due by t; retire finished and stopped ones.
		for i, f := range flows {
			if state[i] == 0 && f.Start <= t {
				state[i] = 1
			}
			if state[i] != 1 {
				continue
			}
			switch {
			case done(i):
				sent[i], finish[i], state[i] = f.Bits, t, 2
				over++
			case f.Stop > f.Start && f.Stop <= t:
				state[i] = 2
				over++
			}
		}
		if over == n {
			break
		}
		var act []int
		var paths [][]int
		for i := range flows {
			if state[i] == 1 {
				act = append(act, i)
				paths = append(paths, flows[i].Path)
			}
		}
		next := math.Inf(1) // next start or stop
		for i, f := range flows {
			if state[i] == 0 {
				next = math.Min(next, f.Start)
			} else if state[i] == 1 && f.Stop > f.Start {
				next = math.Min(next, f.Stop)
			}
		}
		var rates []float64
		if len(act) > 0 {
			var err error
			if rates, err = MaxMinFair(capacity, paths, nil); err != nil {
				return nil, nil, fmt.Errorf("fairshare: fluid at %gs: %w", t, err)
			}
		}
		dt := next - t
		for k, i := range act {
			if rates[k] > 0 && !math.IsInf(left[i], 1) {
				dt = math.Min(dt, left[i]/rates[k])
			}
		}
		if math.IsInf(dt, 1) {
			return nil, nil, fmt.Errorf("fairshare: fluid at %gs: %d flows can never finish (a link of capacity 0)", t, len(act))
		}
		for k, i := range act {
			d := rates[k] * dt
			sent[i] += d
			if !math.IsInf(left[i], 1) {
				left[i] = math.Max(0, left[i]-d)
			}
		}
		t += dt
	}
	return finish, sent, nil
}
