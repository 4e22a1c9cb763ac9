package fabric

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"
	"sort"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/controller/p4rt"
	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
)

// ECMP routes (docs/controller.md, "ECMP routes"). A route with two or more
// next hops becomes:
//
//   - one action profile member of next_hop_selector per distinct next hop
//     of the switch (set_nexthop(port, src_mac, dst_mac)), shared by the
//     routes that use it;
//   - one weighted action profile group per route, holding its next hops'
//     members;
//   - a next_hop_group_select entry (group_id -> the group);
//   - an ipv4_route entry set_next_hop_group(group_id).
//
// IDs are derived from content, so that every computation of the desired
// state (after a restart, on another instance) gives the same ones and a
// read-back compares equal: a member's ID is a hash of its action
// parameters, a group's ID (also its group_id in the two tables) a hash of
// the route's prefix, so that a weight or membership change of a route is
// a MODIFY of its group. Colliding hashes are resolved by taking the next
// free ID, in the order of the content (members) or prefix (groups): an ID
// changes only when a new member or route collides with a smaller one.

// ECMPHop is one next hop of an ECMP group: its member and weight.
type ECMPHop struct {
	// MemberID is the action profile member running set_nexthop.
	MemberID uint32
	// Port, SrcMAC and DstMAC are the member's set_nexthop parameters.
	Port           uint16
	SrcMAC, DstMAC net.HardwareAddr
	// Weight is the member's weight in the group.
	Weight uint32
}

// ECMPGroup is the action profile group of one ECMP route.
type ECMPGroup struct {
	// Prefix is the route's prefix.
	Prefix netip.Prefix
	// ID is the P4Runtime group ID and the group_id of ipv4_route's
	// set_next_hop_group and of next_hop_group_select (16 bits, not 0).
	ID uint32
	// Hops are the group's members in the route's order.
	Hops []ECMPHop
}

// Weight returns the sum of the group's weights.
func (g *ECMPGroup) Weight() uint64 {
	var w uint64
	for _, h := range g.Hops {
		w += uint64(h.Weight)
	}
	return w
}

// maxGroupID is the largest group ID: group_id is 16 bits in the P4
// program (set_next_hop_group, next_hop_group_select).
const maxGroupID = 1<<16 - 1

// memberContent is the byte form of a member's action parameters: the key
// of its ID.
func memberContent(port uint16, src, dst net.HardwareAddr) []byte {
	b := binary.BigEndian.AppendUint16(nil, port)
	b = append(b, src...)
	return append(b, dst...)
}

// hashID is FNV-1a of b.
func hashID(b []byte) uint32 {
	h := fnv.New32a()
	h.Write(b)
	return h.Sum32()
}

// allocate gives each key (in the order given) its preferred ID (taken
// modulo limit, 0 standing for limit), or the next free one after it
// (wrapping within 1..limit) when that is taken. len(prefs) <= limit.
func allocate(prefs []uint32, limit uint32) []uint32 {
	used := make(map[uint32]bool, len(prefs))
	out := make([]uint32, len(prefs))
	for i, id := range prefs {
		if id %= limit; id == 0 {
			id = limit
		}
		for used[id] {
			id = id%limit + 1
		}
		used[id] = true
		out[i] = id
	}
	return out
}

// ECMPGroups computes the groups and members of a switch's IPv4 ECMP
// routes (routes with two or more next hops) and checks them against the
// P4Info: the selector's size (sum of the weights of all groups, P4Runtime
// SumOfWeights), its max_group_size if any, and the size of
// next_hop_group_select.
func ECMPGroups(info *p4rt.Info, sw *config.Switch, routes []config.Route) ([]ECMPGroup, error) {
	limits, err := selectorLimits(info)
	if err != nil {
		return nil, err
	}
	if len(routes) > limits.groups {
		return nil, fmt.Errorf("%d ECMP routes exceed the %d entries of %s", len(routes), limits.groups, TableNextHopGroup)
	}
	rs := append([]config.Route(nil), routes...)
	sort.Slice(rs, func(i, j int) bool {
		if c := rs[i].Prefix.Addr().Compare(rs[j].Prefix.Addr()); c != 0 {
			return c < 0
		}
		return rs[i].Prefix.Bits() < rs[j].Prefix.Bits()
	})
	// Members: every distinct (port, src MAC, dst MAC), by content.
	type member struct {
		content  []byte
		port     uint16
		src, dst net.HardwareAddr
	}
	byContent := map[string]*member{}
	var total uint64
	for _, r := range rs {
		var w uint64
		inRoute := map[string]bool{}
		for _, h := range r.NextHops {
			port := sw.Port(h.Port)
			if port == nil || port.MAC == nil {
				return nil, fmt.Errorf("route %s: next hop port %d has no MAC", r.Prefix, h.Port)
			}
			if h.Weight == 0 {
				return nil, fmt.Errorf("route %s: next hop port %d mac %s: weight 0", r.Prefix, h.Port, h.MAC)
			}
			w += uint64(h.Weight)
			c := memberContent(h.Port, port.MAC, h.MAC)
			if inRoute[string(c)] {
				return nil, fmt.Errorf("route %s: next hop port %d mac %s given twice", r.Prefix, h.Port, h.MAC)
			}
			inRoute[string(c)] = true
			if byContent[string(c)] == nil {
				byContent[string(c)] = &member{content: c, port: h.Port, src: port.MAC, dst: h.MAC}
			}
		}
		if limits.maxGroup > 0 && w > uint64(limits.maxGroup) {
			return nil, fmt.Errorf("route %s: weights add up to %d, more than the max_group_size %d of %s",
				r.Prefix, w, limits.maxGroup, ProfileNextHops)
		}
		total += w
	}
	if total > uint64(limits.size) {
		return nil, fmt.Errorf("the weights of the ECMP routes add up to %d, more than the %d of %s",
			total, limits.size, ProfileNextHops)
	}
	members := make([]*member, 0, len(byContent))
	for _, m := range byContent {
		members = append(members, m)
	}
	sort.Slice(members, func(i, j int) bool { return bytes.Compare(members[i].content, members[j].content) < 0 })
	prefs := make([]uint32, len(members))
	for i, m := range members {
		prefs[i] = hashID(m.content)
	}
	ids := allocate(prefs, 1<<32-1)
	memberID := make(map[string]uint32, len(members))
	for i, m := range members {
		memberID[string(m.content)] = ids[i]
	}
	// Groups: one per route, by prefix.
	gprefs := make([]uint32, len(rs))
	for i, r := range rs {
		b, _ := r.Prefix.MarshalBinary()
		h := hashID(b)
		gprefs[i] = (h>>16 ^ h) & maxGroupID
	}
	gids := allocate(gprefs, maxGroupID)
	out := make([]ECMPGroup, len(rs))
	for i, r := range rs {
		g := ECMPGroup{Prefix: r.Prefix, ID: gids[i]}
		for _, h := range r.NextHops {
			src := sw.Port(h.Port).MAC
			g.Hops = append(g.Hops, ECMPHop{MemberID: memberID[string(memberContent(h.Port, src, h.MAC))],
				Port: h.Port, SrcMAC: src, DstMAC: h.MAC, Weight: h.Weight})
		}
		out[i] = g
	}
	return out, nil
}

// selectorLimit are the bounds of the ECMP objects in a P4Info.
type selectorLimit struct {
	size     int // next_hop_selector's size: the weights of all groups
	maxGroup int // its max_group_size (0: none)
	groups   int // next_hop_group_select's size
}

func selectorLimits(info *p4rt.Info) (selectorLimit, error) {
	pid, err := info.ActionProfileID(ProfileNextHops)
	if err != nil {
		return selectorLimit{}, fmt.Errorf("ECMP routes: %w", err)
	}
	tid, err := info.TableID(TableNextHopGroup)
	if err != nil {
		return selectorLimit{}, fmt.Errorf("ECMP routes: %w", err)
	}
	var l selectorLimit
	var ap *p4configv1.ActionProfile
	for _, a := range info.P4Info().GetActionProfiles() {
		if a.GetPreamble().GetId() == pid {
			ap = a
		}
	}
	for _, t := range info.P4Info().GetTables() {
		if t.GetPreamble().GetId() == tid {
			l.groups = int(t.GetSize())
		}
	}
	if ap == nil || ap.GetSize() <= 0 || l.groups <= 0 {
		return l, fmt.Errorf("ECMP routes: the P4Info gives no size for %s or %s", ProfileNextHops, TableNextHopGroup)
	}
	l.size, l.maxGroup = int(ap.GetSize()), int(ap.GetMaxGroupSize())
	return l, nil
}

// routeMatch is the ipv4_route match of a prefix: LPM, or none for the
// default route (/0: P4Runtime wants the field omitted).
func routeMatch(p netip.Prefix) []p4rt.Match {
	if p.Bits() == 0 {
		return nil
	}
	return []p4rt.Match{p4rt.LPM("dst_addr", net.IP(p.Addr().AsSlice()), int32(p.Bits()))}
}

// ecmp adds the members, groups and table entries of the ECMP groups.
func (b *builder) ecmp(groups []ECMPGroup) {
	seen := map[uint32]bool{}
	for _, g := range groups {
		members := make([]p4rt.GroupMember, 0, len(g.Hops))
		for _, h := range g.Hops {
			if !seen[h.MemberID] {
				seen[h.MemberID] = true
				b.add(b.info.ActionProfileMember(ProfileNextHops, h.MemberID, "set_nexthop",
					p4rt.P("port", h.Port), p4rt.P("src_mac", h.SrcMAC), p4rt.P("dst_mac", h.DstMAC)))
			}
			members = append(members, p4rt.GroupMember{ID: h.MemberID, Weight: int32(h.Weight)})
		}
		b.add(b.info.ActionProfileGroup(ProfileNextHops, g.ID, 0, members...))
		b.add(b.info.TableEntry(TableNextHopGroup).Match(p4rt.Exact("group_id", g.ID)).Group(g.ID).Entity())
		b.table(TableIPv4Route, 0, routeMatch(g.Prefix), "set_next_hop_group", p4rt.P("group_id", g.ID))
	}
}
