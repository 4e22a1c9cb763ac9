// Package scenario builds spec 06's scenarios for fastcnp-sim (S1 victim flow under
// PFC, S2 incast 20:1, S3 fat tree), runs them in every mode and measures what spec
// 06 asks for, against the analytic yardsticks of model/fairshare.
package scenario

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/fastcnp/fastcnp/host/agent"
	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/model/fairshare"
	"github.com/fastcnp/fastcnp/sim/hpcc"
	"github.com/fastcnp/fastcnp/sim/network"
	"github.com/fastcnp/fastcnp/wire"
)

// Scenario is a topology, its flows and its switch settings, with what the
// measurements need to know about them.
type Scenario struct {
	Name        string
	Description string
	Topo        *hpcc.Topology
	Flows       []hpcc.Flow
	// FlowNames label the flows in tables.
	FlowNames []string
	// Victim is the index of the victim flow (S1), -1 without one.
	Victim int
	// UntilNs ends the run (0: when every flow has finished).
	UntilNs int64
	// MeasureFromNs starts the throughput window of long flows (S1); it ends at
	// UntilNs.
	MeasureFromNs int64
	Switch        network.SwitchParams
	// Legacy marks flows whose senders are commodity NICs (network.Config.Legacy).
	Legacy []bool
	// PausedPort names the switch port whose PFC state the tables follow (S1: the
	// first switch's uplink, paused by the second): node and ifindex.
	PausedNode, PausedIfIndex int
	// FairBps are the max-min fair shares of the first Long flows (the long
	// ones), payload bits/s, computed without the bursts.
	FairBps []float64
	Long    int
}

// Params are the run settings shared by the scenarios (network.Config's).
type Params struct {
	DCQCNSet     string
	CNPInterval  time.Duration // < 0: the set's
	PayloadBytes int
	AckEvery     int
	Seed         uint64
	Queue        string
	RTTSamples   bool
	SampleNs     int64 // queue and rate samples (0: none)
	WindowRule   cc.WindowRule
}

// DefaultParams: the HPCC simulator's DCQCN parameter set and 1000-byte payload,
// an ACK per packet (as that simulator acknowledges).
func DefaultParams() Params {
	return Params{DCQCNSet: "hpcc-sim", CNPInterval: -1, PayloadBytes: 1000, AckEvery: 1, Seed: 1}
}

// Config returns the network configuration of sc in mode with p.
func (sc *Scenario) Config(mode network.Mode, p Params) network.Config {
	return network.Config{
		Topo: sc.Topo, Flows: sc.Flows, Mode: mode, DCQCNSet: p.DCQCNSet, CNPInterval: p.CNPInterval,
		PayloadBytes: p.PayloadBytes, AckEvery: p.AckEvery, Switch: sc.Switch, Seed: p.Seed, UntilNs: sc.UntilNs,
		Queue: p.Queue, RTTSamples: p.RTTSamples, QueueSampleNs: p.SampleNs, RateSampleNs: p.SampleNs,
		Legacy: sc.Legacy, WindowRule: p.WindowRule,
	}
}

// Run runs sc in mode.
func (sc *Scenario) Run(mode network.Mode, p Params, progress func(int64, uint64)) (*network.Result, error) {
	n, err := network.New(sc.Config(mode, p))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", sc.Name, mode, err)
	}
	r, err := n.Run(progress)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", sc.Name, mode, err)
	}
	return r, nil
}

// builder assembles a topology.
type builder struct {
	t hpcc.Topology
}

func (b *builder) node(sw bool) int {
	id := b.t.Nodes
	b.t.Nodes++
	if sw {
		b.t.Switches = append(b.t.Switches, id)
	}
	return id
}

func (b *builder) link(a, c int, bps float64, delayNs int64) {
	b.t.Links = append(b.t.Links, hpcc.Link{A: a, B: c, RateBps: bps, DelayNs: delayNs})
}

// S1Options shape S1.
type S1Options struct {
	// Senders is how many hosts under the first switch send to the bottleneck
	// receiver under the second.
	Senders int
	// HostBps, UplinkBps: host links and the link between the switches.
	HostBps, UplinkBps float64
	// DelayNs is every link's propagation delay.
	DelayNs int64
	// DurationNs is the run; rates are measured over its second half.
	DurationNs int64
	// BufferBytes is each switch's buffer (the dynamic PFC threshold is 1/8 of
	// what is free).
	BufferBytes int64
	// LegacySenders makes the senders to R commodity RoCE NICs (no connection
	// announced, plain DCQCN: the fastcnp switches mark their packets instead);
	// the victim stays fastcnp-aware.
	LegacySenders bool
}

// DefaultS1 is S1 at 100 Gb/s: 8 senders and the victim under switch 1, a
// 400 Gb/s uplink to switch 2, 1 us links, 4 MB of buffer per switch (a shallow
// buffer: PFC fires in dcqcn mode), 10 ms.
func DefaultS1() S1Options {
	return S1Options{Senders: 8, HostBps: 100e9, UplinkBps: 400e9, DelayNs: 1000, DurationNs: 10_000_000, BufferBytes: 4 << 20}
}

// S1 is spec 06's victim-flow scenario: senders under switch A send long flows
// to one receiver R under switch B, whose port to R is the true bottleneck; PFC
// from B pauses A's uplink; a victim flow V -> W shares that uplink but goes to an
// idle receiver. Nodes: senders 0..n-1, V = n, R = n+1, W = n+2, A = n+3, B = n+4.
func S1(o S1Options) (*Scenario, error) {
	if o.Senders < 1 || o.Senders > 200 || !(o.HostBps > 0) || !(o.UplinkBps > 0) || o.DurationNs <= 0 {
		return nil, fmt.Errorf("scenario S1: options %+v", o)
	}
	var b builder
	senders := make([]int, o.Senders)
	for i := range senders {
		senders[i] = b.node(false)
	}
	v, r, w := b.node(false), b.node(false), b.node(false)
	a, bs := b.node(true), b.node(true)
	for _, s := range senders {
		b.link(s, a, o.HostBps, o.DelayNs)
	}
	b.link(v, a, o.HostBps, o.DelayNs)
	b.link(a, bs, o.UplinkBps, o.DelayNs)
	b.link(r, bs, o.HostBps, o.DelayNs)
	b.link(w, bs, o.HostBps, o.DelayNs)
	sc := &Scenario{
		Name: "s1", Topo: &b.t, Victim: o.Senders, UntilNs: o.DurationNs, MeasureFromNs: o.DurationNs / 2,
		PausedNode: a, PausedIfIndex: o.Senders + 2,
		Description: fmt.Sprintf("S1 victim flow: %d senders -> R through a %g Gb/s uplink, victim V -> W on the same uplink; "+
			"host links %g Gb/s, %d ns per link, %d MB buffer per switch, %d ms", o.Senders, o.UplinkBps/1e9, o.HostBps/1e9,
			o.DelayNs, o.BufferBytes>>20, o.DurationNs/1_000_000),
	}
	sc.Switch = network.DefaultSwitchParams()
	sc.Switch.BufferBytes = o.BufferBytes
	const long = 1 << 40 // longer than any run
	for i, s := range senders {
		sc.Flows = append(sc.Flows, hpcc.Flow{Src: s, Dst: r, PG: hpcc.DataPG, DPort: hpcc.DPortNormal, Size: long, StartNs: 1000})
		sc.FlowNames = append(sc.FlowNames, fmt.Sprintf("s%d->R", i+1))
	}
	sc.Flows = append(sc.Flows, hpcc.Flow{Src: v, Dst: w, PG: hpcc.DataPG, DPort: hpcc.DPortNormal, Size: long, StartNs: 1000})
	sc.FlowNames = append(sc.FlowNames, "victim V->W")
	var err error
	if sc.FairBps, err = FairShares(sc.Topo, sc.Flows, DefaultParams().PayloadBytes); err != nil {
		return nil, err
	}
	sc.Long = len(sc.Flows)
	if o.LegacySenders {
		sc.Description += "; the senders to R are commodity NICs (no announcement, plain DCQCN)"
		sc.Legacy = make([]bool, len(sc.Flows))
		for i := range senders {
			sc.Legacy[i] = true
		}
	}
	return sc, nil
}

// S2Options shape S2.
type S2Options struct {
	// Scale divides seed 002's flow sizes (1: 200, 200, 150 and 17 x 5 MB).
	Scale   int
	HostBps float64
	DelayNs int64
	// Senders is the incast's fan-in (0: 20, seed 002's); the flows past the
	// third are 5 MB. 8 is the testbed's S2 shape (200, 200, 150, 5 x 5 MB).
	Senders int
}

// DefaultS2 is seed 002's incast at 100 Gb/s with 1 us links (base RTT about
// 4.2 us), full size.
func DefaultS2() S2Options { return S2Options{Scale: 1, HostBps: 100e9, DelayNs: 1000} }

// S2 is spec 06's incast: 20 senders (Senders), one switch, one receiver;
// flows of 200, 200, 150 and 17 x 5 MB (divided by Scale), all starting
// together. Nodes: senders 0..n-1, receiver n, switch n+1.
func S2(o S2Options) (*Scenario, error) {
	if o.Senders == 0 {
		o.Senders = 20
	}
	if o.Scale < 1 || !(o.HostBps > 0) || o.Senders < 3 || o.Senders > 200 {
		return nil, fmt.Errorf("scenario S2: options %+v", o)
	}
	var b builder
	senders := make([]int, o.Senders)
	for i := range senders {
		senders[i] = b.node(false)
	}
	r := b.node(false)
	sw := b.node(true)
	for _, s := range senders {
		b.link(s, sw, o.HostBps, o.DelayNs)
	}
	b.link(r, sw, o.HostBps, o.DelayNs)
	name := "s2"
	if o.Senders != 20 {
		name = fmt.Sprintf("s2-%d", o.Senders)
	}
	if o.Scale > 1 {
		name += fmt.Sprintf("-scaled-%d", o.Scale)
	}
	sc := &Scenario{Name: name, Topo: &b.t, Victim: -1, Switch: network.DefaultSwitchParams(), PausedNode: sw, PausedIfIndex: o.Senders + 1,
		Description: fmt.Sprintf("S2 incast %d:1 (seed 002's sizes): 200, 200, 150 and %d x 5 MB / %d, %g Gb/s, %d ns per link",
			o.Senders, o.Senders-3, o.Scale, o.HostBps/1e9, o.DelayNs)}
	for i, s := range senders {
		mb := int64(5)
		switch i {
		case 0, 1:
			mb = 200
		case 2:
			mb = 150
		}
		sc.Flows = append(sc.Flows, hpcc.Flow{Src: s, Dst: r, PG: hpcc.DataPG, DPort: hpcc.DPortIncast, Size: mb * 1_000_000 / int64(o.Scale), StartNs: 1000})
		sc.FlowNames = append(sc.FlowNames, fmt.Sprintf("h%d", i+1))
	}
	return sc, nil
}

// FairShares returns the max-min fair share of each flow in payload bits/s: every
// direction of every link is a resource of its rate times the payload share of a
// full frame on the wire (payload over payload plus RoCEv2 headers, FCS, preamble
// and gap); each flow crosses its shortest path.
func FairShares(t *hpcc.Topology, flows []hpcc.Flow, payload int) ([]float64, error) {
	ports := t.Ports()
	sw := t.SwitchMask()
	eff := float64(payload) / float64(payload+agent.RoCEOverhead+4+wire.PreambleIFGBytes)
	type dirLink struct{ link, from int }
	idx := map[dirLink]int{}
	var capacity []float64
	paths := make([][]int, len(flows))
	for f, fl := range flows {
		// BFS from the destination through switches.
		dist := make([]int, t.Nodes)
		for i := range dist {
			dist[i] = -1
		}
		dist[fl.Dst] = 0
		q := []int{fl.Dst}
		for len(q) > 0 {
			u := q[0]
			q = q[1:]
			if u != fl.Dst && !sw[u] {
				continue
			}
			for _, p := range ports[u] {
				if dist[p.Peer] < 0 {
					dist[p.Peer] = dist[u] + 1
					q = append(q, p.Peer)
				}
			}
		}
		if dist[fl.Src] < 0 {
			return nil, fmt.Errorf("fair shares: flow %d: no path %d -> %d", f, fl.Src, fl.Dst)
		}
		for u := fl.Src; u != fl.Dst; {
			for _, p := range ports[u] {
				if dist[p.Peer] == dist[u]-1 {
					k := dirLink{p.Link, u}
					if _, ok := idx[k]; !ok {
						idx[k] = len(capacity)
						capacity = append(capacity, t.Links[p.Link].RateBps*eff)
					}
					paths[f] = append(paths[f], idx[k])
					u = p.Peer
					break
				}
			}
		}
	}
	return fairshare.MaxMinFair(capacity, paths, nil)
}

// percentile returns the p-th percentile (0..100) of xs by the nearest-rank rule
// on a sorted copy; NaN for none.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	k := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[min(max(k, 0), len(s)-1)]
}
