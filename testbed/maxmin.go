package testbed

import (
	"fmt"
	"math"
	"time"

	"github.com/fastcnp/fastcnp/host/agent"
	"github.com/fastcnp/fastcnp/internal/units"
	"github.com/fastcnp/fastcnp/model/fairshare"
	"github.com/fastcnp/fastcnp/wire"
)

// PayloadRate is the most payload a link of rate bits/s carries, in
// bits/s: every frame of a flow is a full RoCE payload (the hosts' MSS,
// IBMTU of the topology's MTU) plus the RoCEv2 headers and ICRC
// (agent.RoCEOverhead) plus the preamble and inter-frame gap that the
// switch's shaper and the agents' pacers charge (wire.PreambleIFGBytes). It
// is the capacity in the terms of the throughput the testbed measures
// (receiver payload). Shorter last packets carry less.
func (t *Topology) PayloadRate(rate units.Rate) float64 {
	mss := float64(IBMTU(t.Params().MTU))
	return float64(rate) * mss / (mss + float64(agent.RoCEOverhead+wire.PreambleIFGBytes))
}

// resources returns the directed links the flows cross as resources:
// capacity (payload bits/s, PayloadRate), names ("h1>s1-p1"), and per
// flow of t.Flows its path as resource indices. Each direction of a link
// is a resource with the link's rate: a host's link carries its sending
// flows one way and its receiving flows the other.
func (t *Topology) resources() (capacity []float64, names []string, paths [][]int, err error) {
	idx := map[DirLink]int{}
	paths = make([][]int, len(t.Flows))
	for f, fl := range t.Flows {
		hops, err := t.Path(fl.Src, fl.Dst)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("testbed: path of %s: %w", fl.Name, err)
		}
		for _, h := range hops {
			d := h.Dir(t)
			i, ok := idx[d]
			if !ok {
				i = len(capacity)
				idx[d] = i
				capacity = append(capacity, t.PayloadRate(t.Links[d.Link].rate))
				names = append(names, h.From.String()+">"+h.To.String())
			}
			paths[f] = append(paths[f], i)
		}
	}
	return capacity, names, paths, nil
}

// FairShares returns each flow's max-min fair share in payload bits/s
// (link capacities in PayloadRate terms), in the order of t.Flows,
// assuming all of its flows active at once: the reference of long
// (duration) flows. INC flows get 0 and take no share: their contributions
// end at the first switch. Sized flows get the same max-min value here;
// their reference is the fluid model (IdealFCTs).
func (t *Topology) FairShares() ([]float64, error) {
	capacity, _, paths, err := t.resources()
	if err != nil {
		return nil, err
	}
	var sel []int
	var ps [][]int
	for f, fl := range t.Flows {
		if fl.INC == nil {
			sel = append(sel, f)
			ps = append(ps, paths[f])
		}
	}
	r, err := fairshare.MaxMinFair(capacity, ps, nil)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(t.Flows))
	for k, f := range sel {
		out[f] = r[k]
	}
	return out, nil
}

// IdealFCTs returns each sized flow's ideal completion time under the
// fluid processor-sharing max-min model (fairshare.FluidFinish): flows start at
// their start times, long flows send from their start until their end
// (their duration, or runFor), every flow gets its max-min share of the
// PayloadRate capacities, recomputed whenever a flow starts, finishes or
// stops. Long and INC flows get 0. No propagation or queueing delay is
// included: a measured FCT is at least one fabric RTT longer.
func (t *Topology) IdealFCTs(runFor time.Duration) ([]time.Duration, error) {
	capacity, _, paths, err := t.resources()
	if err != nil {
		return nil, err
	}
	var sel []int
	var ff []fairshare.FluidFlow
	for f, fl := range t.Flows {
		if fl.INC != nil {
			continue
		}
		x := fairshare.FluidFlow{Start: fl.start.Seconds(), Path: paths[f]}
		if fl.size > 0 {
			x.Bits = float64(fl.size) * 8
		} else {
			x.Bits = math.Inf(1)
			x.Stop = runFor.Seconds()
			if fl.duration > 0 {
				x.Stop = min(x.Stop, (fl.start + fl.duration).Seconds())
			}
			if x.Stop <= x.Start {
				continue // never runs within the run
			}
		}
		sel = append(sel, f)
		ff = append(ff, x)
	}
	fin, _, err := fairshare.FluidFinish(capacity, ff)
	if err != nil {
		return nil, err
	}
	out := make([]time.Duration, len(t.Flows))
	for k, f := range sel {
		if t.Flows[f].size > 0 {
			out[f] = time.Duration(math.Round((fin[k] - ff[k].Start) * 1e9))
		}
	}
	return out, nil
}
