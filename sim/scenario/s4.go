package scenario

import (
	"fmt"
	"net"
	"net/netip"
	"sort"
	"time"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/controller/fabric"
	"github.com/fastcnp/fastcnp/controller/incroute"
	"github.com/fastcnp/fastcnp/host/agent"
	"github.com/fastcnp/fastcnp/model/incsched"
	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/sim/hpcc"
	"github.com/fastcnp/fastcnp/sim/network"
	"github.com/fastcnp/fastcnp/wire"
)

// S4 (spec 06) at leaf-spine scale: INC workers in racks under leaves, two
// spines above them, two INC groups with their destinations. The switches
// are programmed with the INC tree fastcnpd computes from its config
// (fabric.ComputeINCTree: each leaf aggregates its rack's members and sends
// partial aggregates up by hash routing on the INC ID over one shared
// bucket table weighted by the spines' inc.capacity; each spine aggregates
// the leaves' partials into the RESULT), and, when a link fails, with the
// tree it recomputes (incroute.UpdateBounded: only the failed spine's
// buckets move).

// S4Options shape S4.
type S4Options struct {
	// Racks (leaves) of WorkersPerRack workers each; SpineWeights are the
	// spines' inc.capacity (one spine each).
	Racks, WorkersPerRack int
	SpineWeights          []uint64
	// HostBps, FabricBps: host links and leaf-spine links; DelayNs every
	// link's propagation delay.
	HostBps, FabricBps float64
	DelayNs            int64
	// Group 1 is every worker (destination r1 behind the first leaf);
	// group 2 the first Group2PerRack workers of every rack (destination r2
	// behind the third leaf, or the last with fewer). Each worker's
	// connection of a group carries Messages messages of Offsets offsets,
	// one every IntervalNs from StartNs.
	Group2PerRack       int
	Messages, Offsets   int
	StartNs, IntervalNs int64
	// Window: incsched keeps any Window consecutive messages of the two
	// groups in distinct aggregation slots.
	Window int
	// DupEvery, DupDelayNs: every DupEvery-th contribution is sent again
	// DupDelayNs later (injected retransmissions).
	DupEvery   int
	DupDelayNs int64
	// SlotTimeout is inc.slot_timeout.
	SlotTimeout time.Duration
	// TailNs: the run ends this long after the last message is due.
	TailNs int64
	Seed   uint64
	// Failure, if set, takes a leaf-spine link down mid-run.
	Failure *S4Failure
}

// S4Failure takes the link between leaf Leaf and spine Spine (0-based)
// down at AtNs and, if RepairAtNs > 0, up again then. The controller is
// told NotifyNs after each (fastcnpd's SetLinkState: it does not detect
// failures itself) and its new tables reach the switches InstallNs apart.
type S4Failure struct {
	Leaf, Spine         int
	AtNs, RepairAtNs    int64
	NotifyNs, InstallNs int64
}

// DefaultS4 is S4 at 100 Gb/s: 16 workers in 4 racks, 2 spines weighted 1
// and 3, 1 us links; 2 x 400 messages of 16 offsets, one every 1 us of each
// group (several in flight), every 20th contribution twice, 1 us apart.
func DefaultS4() S4Options {
	return S4Options{Racks: 4, WorkersPerRack: 4, SpineWeights: []uint64{1, 3}, HostBps: 100e9, FabricBps: 100e9,
		DelayNs: 1000, Group2PerRack: 2, Messages: 400, Offsets: 16, StartNs: 10_000, IntervalNs: 1000, Window: 16,
		DupEvery: 20, DupDelayNs: 1000, SlotTimeout: 100 * time.Microsecond, TailNs: 200_000, Seed: 4}
}

// S4Setup is a built S4: the network's configuration, fastcnpd's config of
// the fabric, and what the measurement needs.
type S4Setup struct {
	Options S4Options
	Config  network.Config
	// Fabric is the controller's config (switches, links, INC groups).
	Fabric *config.Config
	// Names of the nodes; Leaves and Spines by node.
	Names          []string
	Leaves, Spines []int
	// Groups: ID -> destination node, members.
	Groups []S4Group
	// Trees are the trees the controller computed, in order (0: at start),
	// with the buckets each moved and the links it avoided.
	Trees []S4Tree
	// FailLink is the failed link's index in the topology (-1: none).
	FailLink int
}

// S4Group is one INC group of S4.
type S4Group struct {
	ID       uint16
	Dst      int
	Workers  []int
	Messages []uint16
}

// S4Tree is one computation of the INC tree.
type S4Tree struct {
	Tree  *fabric.INCTree
	Down  []int
	Moved int
}

// BuildS4 builds S4.
func BuildS4(o S4Options) (*S4Setup, error) {
	switch {
	case o.Racks < 2 || o.Racks > 32 || o.WorkersPerRack < 1 || o.Racks*o.WorkersPerRack > 32:
		return nil, fmt.Errorf("s4: %d racks of %d workers: want 2..32 racks and at most 32 workers", o.Racks, o.WorkersPerRack)
	case len(o.SpineWeights) < 1:
		return nil, fmt.Errorf("s4: no spine")
	case o.Group2PerRack < 0 || o.Group2PerRack > o.WorkersPerRack:
		return nil, fmt.Errorf("s4: %d workers per rack in group 2, of %d", o.Group2PerRack, o.WorkersPerRack)
	case o.Messages < 1 || o.Offsets < 1 || o.Window < 1 || o.IntervalNs < 0 || o.StartNs < 0:
		return nil, fmt.Errorf("s4: %d messages of %d offsets, window %d, interval %d ns", o.Messages, o.Offsets, o.Window, o.IntervalNs)
	}
	s := &S4Setup{Options: o, FailLink: -1}
	var b builder
	workers := o.Racks * o.WorkersPerRack
	for w := range workers {
		b.node(false)
		s.Names = append(s.Names, fmt.Sprintf("w%d", w+1))
	}
	r1, r2 := b.node(false), b.node(false)
	s.Names = append(s.Names, "r1", "r2")
	for l := range o.Racks {
		s.Leaves = append(s.Leaves, b.node(true))
		s.Names = append(s.Names, fmt.Sprintf("leaf%d", l+1))
	}
	for k := range o.SpineWeights {
		s.Spines = append(s.Spines, b.node(true))
		s.Names = append(s.Names, fmt.Sprintf("spine%d", k+1))
	}
	leafOf := func(w int) int { return s.Leaves[w/o.WorkersPerRack] }
	r2Leaf := s.Leaves[min(2, o.Racks-1)]
	for w := range workers {
		b.link(w, leafOf(w), o.HostBps, o.DelayNs)
	}
	b.link(r1, s.Leaves[0], o.HostBps, o.DelayNs)
	b.link(r2, r2Leaf, o.HostBps, o.DelayNs)
	for li, l := range s.Leaves {
		for si, sp := range s.Spines {
			if f := o.Failure; f != nil && f.Leaf == li && f.Spine == si {
				s.FailLink = len(b.t.Links)
			}
			b.link(l, sp, o.FabricBps, o.DelayNs)
		}
	}
	if o.Failure != nil && s.FailLink < 0 {
		return nil, fmt.Errorf("s4: no link between leaf %d and spine %d", o.Failure.Leaf, o.Failure.Spine)
	}
	topo := b.t
	// The groups and their message IDs (clash-free within the window).
	g1 := S4Group{ID: 1, Dst: r1}
	g2 := S4Group{ID: 2, Dst: r2}
	for w := range workers {
		g1.Workers = append(g1.Workers, w)
		if w%o.WorkersPerRack < o.Group2PerRack {
			g2.Workers = append(g2.Workers, w)
		}
	}
	s.Groups = []S4Group{g1}
	if len(g2.Workers) > 0 {
		s.Groups = append(s.Groups, g2)
	}
	var sg []incsched.Group
	for _, g := range s.Groups {
		sg = append(sg, incsched.Group{Group: g.ID, Messages: o.Messages})
	}
	ids, err := incsched.IDs(sg, o.Offsets, o.Window)
	if err != nil {
		return nil, fmt.Errorf("s4: %w", err)
	}
	for i := range s.Groups {
		s.Groups[i].Messages = ids[i]
	}
	fab, err := s4Fabric(s, &topo)
	if err != nil {
		return nil, err
	}
	s.Fabric = fab
	// The workers' streams.
	var streams []network.INCStream
	for _, g := range s.Groups {
		for rank, w := range g.Workers {
			st, err := agent.NewINCStream(agent.INCParams{Group: g.ID, Rank: uint8(rank), Workers: len(g.Workers),
				Offsets: o.Offsets, Seed: o.Seed}, g.Messages, o.DupEvery)
			if err != nil {
				return nil, fmt.Errorf("s4: group %d rank %d: %w", g.ID, rank, err)
			}
			streams = append(streams, network.INCStream{Src: w, Dst: g.Dst, Stream: st, StartNs: o.StartNs,
				IntervalNs: o.IntervalNs, DupDelayNs: o.DupDelayNs})
		}
	}
	inc := &network.INCConfig{Streams: streams, Controller: s.controller()}
	if f := o.Failure; f != nil {
		inc.Links = append(inc.Links, network.LinkEvent{AtNs: f.AtNs, Link: s.FailLink, Down: true})
		if f.RepairAtNs > 0 {
			inc.Links = append(inc.Links, network.LinkEvent{AtNs: f.RepairAtNs, Link: s.FailLink})
		}
		inc.NotifyNs, inc.InstallNs = f.NotifyNs, f.InstallNs
	}
	until := o.StartNs + int64(o.Messages-1)*o.IntervalNs + o.TailNs
	p := DefaultParams()
	s.Config = network.Config{Topo: &topo, Mode: network.ModeFastCNP, DCQCNSet: p.DCQCNSet, CNPInterval: p.CNPInterval,
		PayloadBytes: p.PayloadBytes, AckEvery: p.AckEvery, Switch: network.DefaultSwitchParams(), Seed: o.Seed,
		UntilNs: until, INC: inc}
	return s, nil
}

// s4Fabric is fastcnpd's config of the fabric: every switch port with its
// MAC, the hosts behind host ports, the links between switches (peers), the
// spines' inc.capacity, the INC groups with their members' addresses.
func s4Fabric(s *S4Setup, t *hpcc.Topology) (*config.Config, error) {
	c := &config.Config{INC: config.INCSettings{SlotTimeout: s.Options.SlotTimeout}}
	isSw := t.SwitchMask()
	// Ports: a node's links in file order, P4 port k+1 (network.Config's rule).
	type end struct{ node, port int }
	var ends [][2]end
	count := make([]int, t.Nodes)
	for _, l := range t.Links {
		ends = append(ends, [2]end{{l.A, count[l.A] + 1}, {l.B, count[l.B] + 1}})
		count[l.A]++
		count[l.B]++
	}
	pos := map[int]int{}
	for _, id := range append(append([]int(nil), s.Leaves...), s.Spines...) {
		pos[id] = len(c.Switches)
		sw := config.Switch{Name: s.Names[id], INCSlotTimeout: s.Options.SlotTimeout}
		for k, sp := range s.Spines {
			if sp == id {
				sw.INCCapacity = s.Options.SpineWeights[k]
			}
		}
		c.Switches = append(c.Switches, sw)
	}
	for _, e := range ends {
		for side := range 2 {
			me, other := e[side], e[1-side]
			if !isSw[me.node] {
				continue
			}
			p := config.Port{Number: uint16(me.port), MAC: net.HardwareAddr{0x02, 0, byte(me.node >> 8), byte(me.node), 0, byte(me.port)}}
			if isSw[other.node] {
				p.Peer = &config.PeerPort{Switch: s.Names[other.node], Port: uint16(other.port)}
			} else {
				a := hpcc.NodeIP(other.node)
				p.Subnets = []netip.Prefix{netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)}), 32)}
			}
			sw := &c.Switches[pos[me.node]]
			sw.Ports = append(sw.Ports, p)
		}
	}
	for _, g := range s.Groups {
		cg := config.INCGroup{ID: g.ID}
		for rank, w := range g.Workers {
			a := hpcc.NodeIP(w)
			cg.Members = append(cg.Members, config.INCMember{Host: netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)}), Rank: uint8(rank)})
		}
		c.INC.Groups = append(c.INC.Groups, cg)
	}
	return c, nil
}

// controller is fastcnpd's part: the INC tree of the config with the links
// down, from the previous tree's bucket table (fewest buckets moved), as
// every switch's INC tables.
func (s *S4Setup) controller() network.INCController {
	node := map[string]int{}
	for id, n := range s.Names {
		node[n] = id
	}
	return func(down []int) (map[int]*network.INCTables, error) {
		f := fabric.Failures{Links: map[config.PeerPort]bool{}}
		for _, l := range down {
			// Told for the leaf's end of the link, as SetLinkState is.
			lk := s.Config.Topo.Links[l]
			pp, ok := s.portTo(lk.A, lk.B)
			if !ok {
				return nil, fmt.Errorf("link %d: not between switches", l)
			}
			f.Links[pp] = true
		}
		var prev incroute.Table
		if len(s.Trees) > 0 {
			prev = s.Trees[len(s.Trees)-1].Tree.Table
		}
		t, err := fabric.ComputeINCTree(s.Fabric, f, prev)
		if err != nil {
			return nil, err
		}
		moved := 0
		if len(prev) == len(t.Table) {
			moved = incroute.Moved(prev, t.Table)
		}
		s.Trees = append(s.Trees, S4Tree{Tree: t, Down: append([]int(nil), down...), Moved: moved})
		out := map[int]*network.INCTables{}
		for name, part := range t.Switches {
			it := &network.INCTables{Groups: map[uint16]network.INCGroupEntry{}, Children: part.Children,
				SlotTimeout: s.Fabric.Switch(name).INCSlotTimeout}
			for g, e := range part.Groups {
				it.Groups[g] = network.INCGroupEntry{Mask: e.Mask, Root: e.Root}
			}
			if len(part.Up) > 0 {
				it.Route = make([]uint16, len(t.Table))
				for b, id := range t.Table {
					up, ok := part.Up[id]
					if !ok {
						return nil, fmt.Errorf("switch %s: bucket %d: no link to upper switch %d", name, b, id)
					}
					it.Route[b] = up.Port
				}
			}
			out[node[name]] = it
		}
		return out, nil
	}
}

// portTo is the config port of switch a towards b.
func (s *S4Setup) portTo(a, b int) (config.PeerPort, bool) {
	sw := s.Fabric.Switch(s.Names[a])
	if sw == nil {
		return config.PeerPort{}, false
	}
	for _, p := range sw.Ports {
		if p.Peer != nil && p.Peer.Switch == s.Names[b] {
			return config.PeerPort{Switch: sw.Name, Port: p.Number}, true
		}
	}
	return config.PeerPort{}, false
}

// RunS4 builds and runs S4.
func RunS4(o S4Options, progress func(int64, uint64)) (*S4Setup, *network.Result, error) {
	s, err := BuildS4(o)
	if err != nil {
		return nil, nil, err
	}
	n, err := network.New(s.Config)
	if err != nil {
		return nil, nil, fmt.Errorf("s4: %w", err)
	}
	r, err := n.Run(progress)
	if err != nil {
		return nil, nil, fmt.Errorf("s4: %w", err)
	}
	return s, r, nil
}

// S4Upper is one spine's load.
type S4Upper struct {
	Name string
	// Weight and its share of all spines'; BucketShare its share of the
	// start tree's table.
	Weight       uint64
	WeightShare  float64
	BucketShare  float64
	Predicted    int // messages whose bucket names it in the start tree
	Aggregated   float64
	Share        float64 // of all messages aggregated by spines
	DeviationPts float64 // Share - WeightShare, in points
	// PartialsIn: partial aggregates added, per leaf; Results: aggregates emitted.
	PartialsIn []uint64
	Results    uint64
	Consistent bool // every partial completed an aggregation of all leaves
	SlotsStuck int
}

// S4Metrics is what S4 measured.
type S4Metrics struct {
	Messages, Complete int
	Offsets            int
	CorrectOffsets     uint64
	WrongResults       uint64
	DuplicateResults   uint64
	PartialsAtHosts    uint64
	ContribAtHosts     uint64
	StrayResults       uint64
	// Contributions sent (first copies) and added by the leaves; injected
	// copies sent and dropped as duplicates by the leaves.
	Sent, LeafAdded       uint64
	DupsSent, LeafDupDrop uint64
	LeafDropped           uint64
	PartialsSent          uint64
	Uppers                []S4Upper
	MaxDeviationPts       float64
	SlotBusy, Takeovers   uint64
	SlotsStuck            int
	SlotsHeldMax          int
	// SpanNs: first due start to last RESULT; goodput is the RESULTs'
	// vector bytes over it, ContribBps the contributions' vector bytes.
	SpanNs                 int64
	GoodputBps, ContribBps float64
	// Completion: a message's last RESULT after its due start.
	P50Ns, P99Ns, MaxNs int64
	PeakInFlight        int
	// Failure: frames lost on the link, buckets moved by each recomputation,
	// the times each tree was on every switch; messages not complete, those
	// whose start-tree bucket is on a spine that kept its links.
	LinkLost       uint64
	Moved          []int
	InstalledAllNs []int64
	Lost           []S4Lost
	LostElsewhere  int
	Events         uint64
	EndNs          int64
}

// S4Lost is an incomplete message.
type S4Lost struct {
	Group, Message uint16
	DueNs          int64
	Upper          string
	Missing        int
}

// MeasureS4 computes S4's metrics from a run.
func MeasureS4(s *S4Setup, r *network.Result) (*S4Metrics, error) {
	inc := r.INC
	if inc == nil || len(s.Trees) == 0 {
		return nil, fmt.Errorf("s4: the run has no INC result")
	}
	o := s.Options
	m := &S4Metrics{Events: r.Events, EndNs: r.EndNs, LinkLost: 0}
	if s.FailLink >= 0 {
		m.LinkLost = inc.LinkLost[s.FailLink]
	}
	start := s.Trees[0].Tree
	upperOf := func(g, msg uint16) *fabric.INCUpper {
		b := pipeline.IncBucket(uint32(g)<<16|uint32(msg), wire.INCVersion, wire.RoCEv2UDPPort)
		return start.Upper(start.Table[b])
	}
	failedUpper := ""
	if s.FailLink >= 0 {
		lk := s.Config.Topo.Links[s.FailLink]
		failedUpper = s.Names[lk.B]
	}
	var lat []int64
	first, last := int64(-1), int64(0)
	type ev struct {
		at int64
		d  int
	}
	var evs []ev
	for _, msg := range inc.Messages {
		m.Messages++
		m.Offsets += msg.Offsets
		m.CorrectOffsets += msg.Correct
		m.WrongResults += msg.Wrong
		m.DuplicateResults += msg.Duplicates
		if first < 0 || msg.DueNs < first {
			first = msg.DueNs
		}
		last = max(last, msg.LastNs)
		if msg.Correct == uint64(msg.Offsets) {
			m.Complete++
			lat = append(lat, msg.LastNs-msg.DueNs)
			evs = append(evs, ev{msg.DueNs, 1}, ev{msg.LastNs, -1})
			continue
		}
		u := upperOf(msg.Group, msg.Message)
		l := S4Lost{Group: msg.Group, Message: msg.Message, DueNs: msg.DueNs, Missing: msg.Offsets - int(msg.Correct)}
		if u != nil {
			l.Upper = u.Name
		}
		if l.Upper != failedUpper {
			m.LostElsewhere++
		}
		m.Lost = append(m.Lost, l)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		pick := func(p float64) int64 { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
		m.P50Ns, m.P99Ns, m.MaxNs = pick(0.5), pick(0.99), lat[len(lat)-1]
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].at < evs[j].at || evs[i].at == evs[j].at && evs[i].d < evs[j].d })
	cur := 0
	for _, e := range evs {
		cur += e.d
		m.PeakInFlight = max(m.PeakInFlight, cur)
	}
	m.PartialsAtHosts, m.ContribAtHosts, m.StrayResults = inc.PartialsAtHosts, inc.ContributionsAtHosts, inc.StrayResults
	for k := range inc.Sent {
		m.Sent += inc.Sent[k]
		m.DupsSent += inc.DupsSent[k]
	}
	sum := func(v []uint64) uint64 {
		t := uint64(0)
		for _, x := range v {
			t += x
		}
		return t
	}
	bySw := map[int]*network.INCSwitchResult{}
	for i := range inc.Switches {
		bySw[inc.Switches[i].Node] = &inc.Switches[i]
		sr := &inc.Switches[i]
		m.SlotBusy += sum(sr.SlotBusy)
		m.Takeovers += sum(sr.Takeovers)
		m.SlotsStuck += sr.SlotsStuck
		m.SlotsHeldMax = max(m.SlotsHeldMax, sr.SlotsHeld)
	}
	for _, l := range s.Leaves {
		sr := bySw[l]
		m.LeafAdded += sum(sr.Contributions)
		m.LeafDupDrop += sum(sr.Duplicates)
		m.LeafDropped += sum(sr.Dropped)
		m.PartialsSent += sum(sr.Results)
	}
	// The spines: load against weight, and path consistency from counters.
	totalW, agg := uint64(0), 0.0
	for _, w := range o.SpineWeights {
		totalW += w
	}
	for k, sp := range s.Spines {
		sr := bySw[sp]
		u := S4Upper{Name: s.Names[sp], Weight: o.SpineWeights[k], Results: sum(sr.Results), SlotsStuck: sr.SlotsStuck}
		u.WeightShare = float64(u.Weight) / float64(totalW)
		id := uint32(0)
		for _, up := range start.Uppers {
			if up.Name == u.Name {
				id = up.ID
			}
		}
		n := 0
		for _, b := range start.Table {
			if b == id {
				n++
			}
		}
		u.BucketShare = float64(n) / float64(len(start.Table))
		for _, g := range s.Groups {
			for _, msg := range g.Messages {
				if up := upperOf(g.ID, msg); up != nil && up.Name == u.Name {
					u.Predicted++
				}
			}
		}
		for _, l := range s.Leaves {
			pp, _ := s.portTo(sp, l)
			u.PartialsIn = append(u.PartialsIn, sr.Contributions[pp.Port-1])
		}
		u.Consistent = true
		for _, p := range u.PartialsIn {
			if p != u.Results {
				u.Consistent = false
			}
		}
		u.Aggregated = float64(u.Results) / float64(o.Offsets)
		agg += u.Aggregated
		m.Uppers = append(m.Uppers, u)
	}
	for i := range m.Uppers {
		u := &m.Uppers[i]
		if agg > 0 {
			u.Share = u.Aggregated / agg
		}
		u.DeviationPts = 100 * (u.Share - u.WeightShare)
		if d := u.DeviationPts; d > m.MaxDeviationPts || -d > m.MaxDeviationPts {
			m.MaxDeviationPts = max(d, -d)
		}
	}
	if first >= 0 && last > first {
		m.SpanNs = last - first
		m.GoodputBps = float64(m.CorrectOffsets) * wire.INCVectorBytes * 8 / (float64(m.SpanNs) / 1e9)
		m.ContribBps = float64(m.LeafAdded) * wire.INCVectorBytes * 8 / (float64(m.SpanNs) / 1e9)
	}
	for _, t := range s.Trees[1:] {
		m.Moved = append(m.Moved, t.Moved)
	}
	// When each recomputed tree was on every switch.
	done := map[int]int64{}
	count := map[int]int{}
	for _, in := range inc.Installs {
		if in.N > 0 {
			count[in.N]++
			done[in.N] = max(done[in.N], in.AtNs)
		}
	}
	for k := 1; k < len(s.Trees); k++ {
		if count[k] == len(s.Leaves)+len(s.Spines) {
			m.InstalledAllNs = append(m.InstalledAllNs, done[k])
		}
	}
	return m, nil
}
