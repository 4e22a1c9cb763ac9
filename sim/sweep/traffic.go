package sweep

import (
	"fmt"

	"github.com/fastcnp/fastcnp/sim/hpcc"
	"github.com/fastcnp/fastcnp/sim/traffic"
)

// Traffic makes the flows of a point: Poisson background from the point's
// workload CDF at its load, plus incasts if set, from the point's seed. The
// flows depend on workload, load and seed only, so every mode of the sweep
// runs the same flows.
type Traffic struct {
	Topology   *hpcc.Topology
	CDFs       map[string]*hpcc.CDF // by workload name
	LinkBps    float64              // host link rate; 0: the hosts' links' rate in the topology
	StartNs    int64                // first instant (traffic.DefaultStartNs in the HPCC tools)
	DurationNs int64
	Incast     *IncastSpec // nil: no incasts
}

// IncastSpec is N senders x Size bytes to one receiver, the incasts taking
// Share of the hosts' capacity.
type IncastSpec struct {
	Senders int
	Size    int64
	Share   float64
}

// HostRate returns the rate of the hosts' links in t, which must be the same
// for every host.
func HostRate(t *hpcc.Topology) (float64, error) {
	sw := t.SwitchMask()
	rate := 0.0
	for _, l := range t.Links {
		for _, end := range []int{l.A, l.B} {
			if sw[end] {
				continue
			}
			if rate != 0 && l.RateBps != rate {
				return 0, fmt.Errorf("sweep: hosts have links of %v and %v b/s: give the host rate", rate, l.RateBps)
			}
			rate = l.RateBps
		}
	}
	if rate == 0 {
		return 0, fmt.Errorf("sweep: no host has a link")
	}
	return rate, nil
}

// Flows returns the point's flows in start order.
func (t *Traffic) Flows(p Point) ([]hpcc.Flow, error) {
	cdf := t.CDFs[p.Workload]
	if cdf == nil {
		return nil, fmt.Errorf("sweep: no flow-size CDF for workload %q", p.Workload)
	}
	rate := t.LinkBps
	if rate == 0 {
		var err error
		if rate, err = HostRate(t.Topology); err != nil {
			return nil, err
		}
	}
	hosts := t.Topology.Hosts()
	bg := traffic.Poisson{Hosts: hosts, LinkBps: rate, Load: p.Load, StartNs: t.StartNs, DurationNs: t.DurationNs, CDF: cdf, Seed: p.Seed}
	flows, err := bg.Generate()
	if err != nil {
		return nil, fmt.Errorf("sweep: %s: %w", p.ID(), err)
	}
	if t.Incast == nil {
		return flows, nil
	}
	in := traffic.Incast{Hosts: hosts, LinkBps: rate, Senders: t.Incast.Senders, Size: t.Incast.Size, Share: t.Incast.Share,
		StartNs: t.StartNs, DurationNs: t.DurationNs, Seed: p.Seed}
	inc, err := in.Generate()
	if err != nil {
		return nil, fmt.Errorf("sweep: %s: %w", p.ID(), err)
	}
	return traffic.Merge(flows, inc), nil
}
