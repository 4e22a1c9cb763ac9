package network

import (
	"fmt"
	"time"

	"github.com/fastcnp/fastcnp/host/agent"
	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/sim/hpcc"
	"github.com/fastcnp/fastcnp/wire"
)

// routing holds the shortest paths: per destination host, every node's hop count
// to it. A switch forwards to a host over every port whose peer is one hop
// closer (ECMP when there are several), as fastcnpd's routes over the fabric do.
type routing struct {
	ports      [][]portEnd
	hosts      []int   // host node IDs, in order
	dist       [][]int // dist[k][node]: hops from node to hosts[k]; -1 unreachable
	maxBaseRTT time.Duration
	weight     []int // weight of every member of node's ECMP groups (ecmpWeights)
}

func (n *Network) routes(ports [][]portEnd, isSwitch []bool) (*routing, error) {
	t := n.cfg.Topo
	rt := &routing{ports: ports}
	for id := range t.Nodes {
		if !isSwitch[id] {
			rt.hosts = append(rt.hosts, id)
		}
	}
	if len(rt.hosts) > p4src.RouteTableSize {
		return nil, fmt.Errorf("%w: %d hosts need more routes than ROUTE_TABLE_SIZE %d", ErrConfig, len(rt.hosts), p4src.RouteTableSize)
	}
	queue := make([]int, 0, t.Nodes)
	for _, h := range rt.hosts {
		d := make([]int, t.Nodes)
		for i := range d {
			d[i] = -1
		}
		d[h] = 0
		queue = append(queue[:0], h)
		for len(queue) > 0 {
			u := queue[0]
			queue = queue[1:]
			if u != h && !isSwitch[u] {
				continue // hosts do not forward
			}
			for _, p := range ports[u] {
				if d[p.peer] < 0 {
					d[p.peer] = d[u] + 1
					queue = append(queue, p.peer)
				}
			}
		}
		rt.dist = append(rt.dist, d)
	}
	rt.ecmpWeights(isSwitch)
	// The fabric's base RTT (spec 01 RTTbase): the largest over host pairs of a
	// full data frame out and an ACK back on an idle path.
	mtu := agent.RoCEOverhead + n.cfg.PayloadBytes
	ack := agent.RoCEOverhead + wire.AETHLen
	for a, src := range rt.hosts {
		for b, dst := range rt.hosts {
			if a == b {
				continue
			}
			if rt.dist[b][src] < 0 {
				return nil, fmt.Errorf("%w: host %d cannot reach host %d", ErrConfig, src, dst)
			}
			fwd := rt.path(src, b)
			back := rt.path(dst, a)
			rtt := pathTime(fwd, mtu) + pathTime(back, ack)
			rt.maxBaseRTT = max(rt.maxBaseRTT, time.Duration(rtt))
		}
	}
	return rt, nil
}

// path returns the links (as portEnds, in order) from node src to host hosts[k]
// along the first shortest next hop at each step.
func (rt *routing) path(src, k int) []portEnd {
	var out []portEnd
	d := rt.dist[k]
	for u := src; d[u] > 0; {
		for _, p := range rt.ports[u] {
			if d[p.peer] == d[u]-1 {
				out = append(out, p)
				u = p.peer
				break
			}
		}
	}
	return out
}

// serNs is the link time of a frame of n bytes at rate (frame, FCS, preamble and
// gap), rounded down as the serialisers round the first frame on an idle link.
func serNs(n int, rate int64) int64 {
	return int64(frameWireLen(n)+wire.PreambleIFGBytes) * 8e9 / rate
}

// pathTime is the time a lone frame of n bytes takes over path (store and forward).
func pathTime(path []portEnd, n int) int64 {
	var t int64
	for _, p := range path {
		t += serNs(n, p.rate) + p.delay
	}
	return t
}

// standalone is the flow's FCT alone on an idle network, in this model: the sender
// puts its packets back to back at its line rate (the serialiser carries the
// fractions of a ns), they cross the switches store and forward, the last one
// behind the one before it (a short last packet catches up and waits), and the
// last one's ACK comes back; the HPCC simulator's fct.txt column has the same
// meaning. It is exact when every frame's link time is a whole number of ns and no
// link of the path is slower than the sender's (TestStandaloneFCT); otherwise a
// switch port that carries fractions of a ns from one packet to the next may end
// the last one up to 1 ns later per hop.
func (rt *routing) standalone(n *Network, f hpcc.Flow) int64 {
	ks, kd := -1, -1
	for k, h := range rt.hosts {
		if h == f.Src {
			ks = k
		}
		if h == f.Dst {
			kd = k
		}
	}
	fwd := rt.path(f.Src, kd)
	back := rt.path(f.Dst, ks)
	if len(fwd) == 0 || len(back) == 0 {
		return 0
	}
	mss := int64(n.cfg.PayloadBytes)
	full := (f.Size - 1) / mss // packets before the last
	hdr := agent.RoCEOverhead
	fullLen, lastLen := hdr+int(mss), hdr+int(f.Size-full*mss)
	wireBits := func(n int) int64 { return int64(frameWireLen(n)+wire.PreambleIFGBytes) * 8 }
	rate := fwd[0].rate
	lastEnd := (full*wireBits(fullLen) + wireBits(lastLen)) * 1e9 / rate
	prevEnd := full * wireBits(fullLen) * 1e9 / rate // the packet before the last
	for i := 1; i < len(fwd); i++ {
		d, r := fwd[i-1].delay, fwd[i].rate
		lastEnd += d
		if full > 0 {
			prevEnd += d + serNs(fullLen, r)
			lastEnd = max(lastEnd, prevEnd)
		}
		lastEnd += serNs(lastLen, r)
	}
	return lastEnd + fwd[len(fwd)-1].delay + pathTime(back, hdr+wire.AETHLen)
}

// nextHops returns the ports (indices) of node s one hop closer to hosts[k].
func (rt *routing) nextHops(s, k int) []int {
	d := rt.dist[k]
	if d[s] < 0 {
		return nil
	}
	var hops []int
	for pi, p := range rt.ports[s] {
		if d[p.peer] == d[s]-1 {
			hops = append(hops, pi)
		}
	}
	return hops
}

// ecmpWeights decorrelates the ECMP stages of a multi-tier fabric. The program
// picks a group's member as pick[hash % len(pick)] with the same hash on every
// switch (no per-switch seed), so with weight 1 everywhere a switch whose packets
// all arrived through one member of a lower tier's group of n picks one member
// too: in fat.txt 12 of the 16 cores carried nothing. A switch at tier t (hops
// to its nearest host, minus one) gives every member the weight W_t, the product
// of the largest group sizes of the tiers below: a member then owns W_t
// consecutive entries of pick, and given the lower tiers' residues of the hash the
// member index is hash / W_t mod n, uniform over the members. The weights of a
// switch's groups stay within NEXT_HOP_GROUP_MEMBERS (1024): W_t is lowered to fit.
func (rt *routing) ecmpWeights(isSwitch []bool) {
	nodes := len(rt.ports)
	tier := make([]int, nodes)
	fan := map[int]int{}
	groups := make([]map[string]int, nodes) // per switch: its groups' sizes
	for s := range nodes {
		if !isSwitch[s] {
			continue
		}
		tier[s] = -1
		groups[s] = map[string]int{}
		for k := range rt.hosts {
			if d := rt.dist[k][s]; d > 0 && (tier[s] < 0 || d-1 < tier[s]) {
				tier[s] = d - 1
			}
		}
		for k := range rt.hosts {
			if hops := rt.nextHops(s, k); len(hops) > 1 {
				groups[s][fmt.Sprint(hops)] = len(hops)
			}
		}
	}
	for s := range nodes {
		for _, n := range groups[s] {
			fan[tier[s]] = max(fan[tier[s]], n)
		}
	}
	rt.weight = make([]int, nodes)
	for s := range nodes {
		w := 1
		for t := 0; t < tier[s]; t++ {
			w *= max(fan[t], 1)
		}
		sum := 0
		for _, n := range groups[s] {
			sum += n
		}
		if sum > 0 && w*sum > p4src.NextHopGroupMembers {
			w = max(p4src.NextHopGroupMembers/sum, 1)
		}
		rt.weight[s] = w
	}
}

// program writes switch s's routes: one /32 per host; a single next hop is a
// set_nexthop entry, several an ECMP group on the action selector (one member per
// port, weighted by ecmpWeights), as fastcnpd writes weighted ECMP routes.
func (rt *routing) program(n *Network, s *Switch) error {
	x := n.schema
	ports := rt.ports[s.node]
	members := map[int]bool{}
	groups := map[string]uint32{}
	for k, h := range rt.hosts {
		hops := rt.nextHops(s.node, k)
		if len(hops) == 0 {
			continue
		}
		dst := []match{{name: "dst_addr", value: uint64(hpcc.NodeIP(h)), plen: 32}}
		if len(hops) == 1 {
			p := ports[hops[0]]
			nh := nextHop{port: uint16(hops[0] + 1), srcMAC: macU64(p.mac), dstMAC: macU64(macOf(p.peer, p.peerPort))}
			if err := x.insert(s.pl, "ipv4_route", 0, dst, "set_nexthop", x.nextHopParams(nh)...); err != nil {
				return fmt.Errorf("switch %d: %w", s.node, err)
			}
			continue
		}
		key := fmt.Sprint(hops)
		gid, ok := groups[key]
		if !ok {
			if len(groups) >= p4src.NextHopGroups {
				return fmt.Errorf("%w: switch %d needs more than %d ECMP groups", ErrConfig, s.node, p4src.NextHopGroups)
			}
			gid = uint32(len(groups) + 1)
			groups[key] = gid
			g := &pipeline.ProfileGroup{ProfileID: p4src.ProfileNextHopSelector, GroupID: gid}
			for _, pi := range hops {
				if !members[pi] {
					p := ports[pi]
					nh := nextHop{port: uint16(pi + 1), srcMAC: macU64(p.mac), dstMAC: macU64(macOf(p.peer, p.peerPort))}
					a, err := x.action("set_nexthop", x.nextHopParams(nh)...)
					if err != nil {
						return err
					}
					if err := s.pl.InsertProfileMember(&pipeline.ProfileMember{ProfileID: p4src.ProfileNextHopSelector, MemberID: uint32(pi + 1), Action: a}); err != nil {
						return fmt.Errorf("switch %d: ECMP member: %w", s.node, err)
					}
					members[pi] = true
				}
				g.Members = append(g.Members, pipeline.GroupMember{MemberID: uint32(pi + 1), Weight: int32(rt.weight[s.node])})
			}
			if err := s.pl.InsertProfileGroup(g); err != nil {
				return fmt.Errorf("switch %d: ECMP group: %w", s.node, err)
			}
			e, err := x.entry("next_hop_group_select", 0, []match{{name: "group_id", value: uint64(gid)}}, "")
			if err != nil {
				return err
			}
			e.GroupID = gid
			if err := s.pl.InsertEntry(e); err != nil {
				return fmt.Errorf("switch %d: ECMP group entry: %w", s.node, err)
			}
		}
		if err := x.insert(s.pl, "ipv4_route", 0, dst, "set_next_hop_group", param{"group_id", uint64(gid)}); err != nil {
			return fmt.Errorf("switch %d: %w", s.node, err)
		}
	}
	return nil
}
