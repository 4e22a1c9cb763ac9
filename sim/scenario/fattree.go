package scenario

import (
	"fmt"

	"github.com/fastcnp/fastcnp/sim/hpcc"
)

// FatTreeOptions shape a fat tree like the HPCC simulator's fat.txt: pods of ToRs
// and aggregation switches (every ToR to every aggregation switch of its pod), the
// aggregation switches of a pod spread over the cores (aggregation switch k of
// every pod to cores k*C/A .. (k+1)*C/A - 1).
type FatTreeOptions struct {
	Pods, ToRsPerPod, AggsPerPod, HostsPerToR, Cores int
	HostBps, FabricBps                               float64
	DelayNs                                          int64
}

// FatTreeFor returns the fat tree of the speed measurements for a host count: 16
// (one ToR), 64 (one pod: 4 ToRs, 4 aggregation switches), and multiples of 64
// above (pods of 4 ToRs of 16 hosts, 4 aggregation switches, 16 cores: 320 hosts is
// fat.txt), 100 Gb/s hosts, 400 Gb/s fabric, 1 us links.
func FatTreeFor(hosts int) (FatTreeOptions, error) {
	o := FatTreeOptions{ToRsPerPod: 4, AggsPerPod: 4, HostsPerToR: 16, Cores: 16, HostBps: 100e9, FabricBps: 400e9, DelayNs: 1000}
	switch {
	case hosts == 16:
		o.Pods, o.ToRsPerPod, o.AggsPerPod, o.Cores = 1, 1, 0, 0
	case hosts == 64:
		o.Pods, o.Cores = 1, 0
	case hosts > 64 && hosts%64 == 0:
		o.Pods = hosts / 64
	default:
		return o, fmt.Errorf("fat tree of %d hosts: 16, 64 or a multiple of 64", hosts)
	}
	return o, nil
}

// FatTree builds the topology: hosts first, then ToRs, aggregation switches and
// cores; links host-ToR, ToR-aggregation, aggregation-core, in that order. With 5
// pods of 4 + 4 switches, 16 hosts per ToR and 16 cores it is fat.txt, link for
// link.
func FatTree(o FatTreeOptions) (*hpcc.Topology, error) {
	switch {
	case o.Pods < 1 || o.ToRsPerPod < 1 || o.HostsPerToR < 1 || o.AggsPerPod < 0 || o.Cores < 0:
		return nil, fmt.Errorf("fat tree %+v: counts", o)
	case o.Pods*o.ToRsPerPod > 1 && o.AggsPerPod == 0:
		return nil, fmt.Errorf("fat tree %+v: several ToRs need aggregation switches", o)
	case o.Pods > 1 && (o.Cores == 0 || o.Cores%o.AggsPerPod != 0):
		return nil, fmt.Errorf("fat tree %+v: pods need cores, a multiple of the aggregation switches per pod", o)
	case !(o.HostBps > 0) || !(o.FabricBps > 0) || o.DelayNs < 0:
		return nil, fmt.Errorf("fat tree %+v: rates and delay", o)
	}
	var b builder
	tors := o.Pods * o.ToRsPerPod
	aggs := o.Pods * o.AggsPerPod
	for range tors * o.HostsPerToR {
		b.node(false)
	}
	torID, aggID := b.t.Nodes, b.t.Nodes+tors
	for range tors + aggs + o.Cores {
		b.node(true)
	}
	coreID := aggID + aggs
	for h := range tors * o.HostsPerToR {
		b.link(h, torID+h/o.HostsPerToR, o.HostBps, o.DelayNs)
	}
	for t := range tors {
		pod := t / o.ToRsPerPod
		for a := range o.AggsPerPod {
			b.link(torID+t, aggID+pod*o.AggsPerPod+a, o.FabricBps, o.DelayNs)
		}
	}
	if o.Pods > 1 {
		per := o.Cores / o.AggsPerPod
		for a := range aggs {
			k := a % o.AggsPerPod
			for c := range per {
				b.link(aggID+a, coreID+k*per+c, o.FabricBps, o.DelayNs)
			}
		}
	}
	return &b.t, nil
}
