package hpcc

import "fmt"

// PathInfo is what the HPCC simulator knows of the path between two hosts
// (CalculateRoute in third.cc): the shortest path in hops, its base RTT
// (twice the propagation delay plus the serialization of one payload-sized
// packet at every hop, one way) and its bottleneck rate.
type PathInfo struct {
	Hops  int
	RTTNs int64
	Bps   uint64
}

// Paths answers PathInfo for ordered pairs of hosts and holds the maxima the
// simulator derives from all pairs (maxRtt and maxBdp: the window and global
// T of HAS_WIN and GLOBAL_T). Rows are computed on first use and kept, so a
// Paths is not safe for concurrent use.
type Paths struct {
	t       *Topology
	payload uint64
	sw      []bool
	ports   [][]Port
	hostIdx []int        // node ID -> index among hosts, -1 for switches
	rows    [][]PathInfo // rows[dst host index][src node ID]; nil until computed
	// search scratch: BFS queue, one-way delay and serialization per node
	queue     []int
	delay, tx []int64
	// MaxRTTNs is the largest base RTT between two hosts (maxRtt).
	MaxRTTNs int64
	// MaxBDP is the largest bandwidth-delay product in bytes (maxBdp).
	MaxBDP uint64
}

// NewPaths prepares path queries on t with packets of payload bytes, and
// computes the maxima over all pairs. The simulator's rule: a breadth-first
// search from each host that passes through switches only; where several
// shortest paths exist the first one found fixes delay and rate. The search
// visits a node's links in file order (the simulator visits them in an
// unspecified map order, which matters only if equal-hop paths differ in
// delay or rate). t must not change afterwards.
func NewPaths(t *Topology, payload int) (*Paths, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if payload < 1 {
		return nil, fmt.Errorf("hpcc: paths: payload %d bytes, want at least 1", payload)
	}
	p := &Paths{t: t, payload: uint64(payload), sw: t.SwitchMask(), ports: t.Ports(), hostIdx: make([]int, t.Nodes)}
	n := 0
	for id := range p.hostIdx {
		p.hostIdx[id] = -1
		if !p.sw[id] {
			p.hostIdx[id] = n
			n++
		}
	}
	p.rows = make([][]PathInfo, n)
	row := make([]PathInfo, t.Nodes)
	for root := 0; root < t.Nodes; root++ {
		if p.sw[root] {
			continue
		}
		p.search(root, row)
		for src, pi := range row {
			if pi.Hops == 0 || p.sw[src] {
				continue
			}
			p.MaxRTTNs = max(p.MaxRTTNs, pi.RTTNs)
			p.MaxBDP = max(p.MaxBDP, mulDiv(uint64(pi.RTTNs), pi.Bps, 8_000_000_000))
		}
	}
	return p, nil
}

// search fills row[node] with the path from node to host root (Hops 0: no
// path, and for root itself).
func (p *Paths) search(root int, row []PathInfo) {
	clear(row)
	if p.delay == nil {
		p.delay = make([]int64, p.t.Nodes)
		p.tx = make([]int64, p.t.Nodes)
	}
	seen := func(id int) bool { return id == root || row[id].Hops > 0 }
	p.delay[root], p.tx[root] = 0, 0
	row[root].Bps = ^uint64(0)
	q := append(p.queue[:0], root)
	for qi := 0; qi < len(q); qi++ {
		now := q[qi]
		for _, pt := range p.ports[now] {
			next := pt.Peer
			if seen(next) {
				continue
			}
			l := p.t.Links[pt.Link]
			rate := uint64(l.RateBps)
			p.delay[next] = p.delay[now] + l.DelayNs
			p.tx[next] = p.tx[now] + int64(p.payload*8_000_000_000/rate)
			row[next] = PathInfo{Hops: row[now].Hops + 1, Bps: min(row[now].Bps, rate)}
			if p.sw[next] { // packets never cross a host on the way
				q = append(q, next)
			}
		}
	}
	p.queue = q
	for id := range row {
		if row[id].Hops > 0 {
			row[id].RTTNs = 2*p.delay[id] + p.tx[id]
		}
	}
	row[root] = PathInfo{}
}

// Get returns the path from host src to host dst; ok is false if either is
// not a host or dst cannot be reached from src.
func (p *Paths) Get(src, dst int) (PathInfo, bool) {
	if src < 0 || dst < 0 || src >= len(p.hostIdx) || dst >= len(p.hostIdx) || src == dst {
		return PathInfo{}, false
	}
	d := p.hostIdx[dst]
	if d < 0 || p.hostIdx[src] < 0 {
		return PathInfo{}, false
	}
	if p.rows[d] == nil {
		p.rows[d] = make([]PathInfo, p.t.Nodes)
		p.search(dst, p.rows[d])
	}
	pi := p.rows[d][src]
	return pi, pi.Hops > 0
}
