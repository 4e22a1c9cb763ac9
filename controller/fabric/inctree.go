package fabric

import (
	"fmt"
	"net"
	"net/netip"
	"sort"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/controller/incroute"
	"github.com/fastcnp/fastcnp/p4src"
)

// The INC aggregation tree (spec 04; issue 16): what every switch holds so
// that a two-tier fabric aggregates each INC message on its way up.
//
//   - A *leaf* of a group is a switch with members of the group behind its
//     host ports (config inc.groups, ports' subnets). Its inc_group entry
//     waits for those members' ranks. A group whose members are all behind
//     one leaf has that leaf as its root: it emits the RESULT.
//   - Groups spanning several leaves are aggregated again one tier up. The
//     *upper* switches are the live switches without members that have a
//     live link (ports' peer) to every leaf of every such group; each is the
//     root of all of them, and its inc_group entry waits for one bit per
//     leaf of the group: the leaf's rank, which inc_child_port gives the
//     upper switch's port towards that leaf. Ranks are the leaves' order in
//     the config (at most 32 leaves).
//   - Every leaf of such a group sends its partial aggregates up by hash
//     routing over ONE bucket table shared by all leaves (Table, over the
//     upper switches' IDs, weighted by their inc.capacity), each leaf
//     translating an upper switch to its own port towards it: the partials
//     of one INC ID from every leaf meet at the same upper switch.
//
// When a link or a switch fails, the upper switches that lost a live link to
// some leaf leave the set, and Table is recomputed from the previous one with
// incroute.UpdateBounded: only their buckets move (within incroute's
// bounds), so the messages of every other bucket keep their path.

// Failures are the links and switches the INC tree must avoid.
type Failures struct {
	// Switches are failed switches, by name.
	Switches map[string]bool
	// Links are failed links, by either end (switch, port).
	Links map[config.PeerPort]bool
}

// linkDown reports whether the link with ends a and b is unusable.
func (f Failures) linkDown(a, b config.PeerPort) bool {
	return f.Switches[a.Switch] || f.Switches[b.Switch] || f.Links[a] || f.Links[b]
}

// INCGroupEntry is a switch's inc_group entry of one group.
type INCGroupEntry struct {
	// Mask is contributors_mask: the children the aggregate waits for.
	Mask uint32
	// Root: the switch emits the RESULT; otherwise a partial aggregate.
	Root bool
}

// INCUpLink is a leaf's way to an upper switch: its port towards it and the
// MACs of set_nexthop.
type INCUpLink struct {
	Port           uint16
	SrcMAC, DstMAC net.HardwareAddr
}

// INCSwitch is one switch's part of the tree.
type INCSwitch struct {
	// Groups are its inc_group entries, by group ID.
	Groups map[uint16]INCGroupEntry
	// Children are its inc_child_port entries: port -> the rank of the
	// leaf behind it.
	Children map[uint16]uint8
	// Up, on a leaf of a group spanning several leaves: the upper switch
	// of each ID of the tree's Table.
	Up map[uint32]INCUpLink
}

// INCUpper is an upper switch of the tree.
type INCUpper struct {
	Name string
	// ID is the switch's position in the config plus 1: its ID in Table.
	ID     uint32
	Weight uint64
}

// INCTree is the INC aggregation tree of the whole fabric.
type INCTree struct {
	// Switches holds the switches that have a part (others hold nothing).
	Switches map[string]*INCSwitch
	// Leaves are the leaves of groups spanning several leaves, in config
	// order: leaf i has rank i at the upper switches.
	Leaves []string
	// Uppers are the upper switches, by ID.
	Uppers []INCUpper
	// Table is the bucket table (INC_BUCKETS) over the Uppers' IDs that
	// every leaf installs (nil: no group spans several leaves, or no
	// upper switch is left).
	Table incroute.Table
	// Members maps each member's host to the switch it is behind.
	Members map[netip.Addr]string
	// Warnings are groups the tree cannot aggregate, and why.
	Warnings []string
}

// Switch returns sw's part of the tree, or nil.
func (t *INCTree) Switch(sw string) *INCSwitch {
	if t == nil {
		return nil
	}
	return t.Switches[sw]
}

// Upper returns the upper switch with the given ID, or nil.
func (t *INCTree) Upper(id uint32) *INCUpper {
	for i := range t.Uppers {
		if t.Uppers[i].ID == id {
			return &t.Uppers[i]
		}
	}
	return nil
}

// ComputeINCTree computes the INC tree of config c with the failures f.
// prev is the previous Table (nil or another length: built afresh); the new
// one moves as few buckets as incroute.UpdateBounded allows. Groups that
// cannot be aggregated (no live upper switch, too many leaves) are left out
// of every switch, with a warning: their contributions are then forwarded
// unaggregated. Errors are configurations that contradict the tree (a leaf
// with its own inc.next_hops).
func ComputeINCTree(c *config.Config, f Failures, prev incroute.Table) (*INCTree, error) {
	t := &INCTree{Switches: map[string]*INCSwitch{}, Members: map[netip.Addr]string{}}
	part := func(sw string) *INCSwitch {
		s := t.Switches[sw]
		if s == nil {
			s = &INCSwitch{Groups: map[uint16]INCGroupEntry{}, Children: map[uint16]uint8{}}
			t.Switches[sw] = s
		}
		return s
	}
	pos := map[string]int{}
	for i := range c.Switches {
		pos[c.Switches[i].Name] = i
	}
	// Each group's leaves and their masks.
	type leafMasks map[string]uint32
	groups := make(map[uint16]leafMasks, len(c.INC.Groups))
	holds := map[string]bool{} // switches with members
	var spanning []uint16      // groups with several leaves
	multiLeaf := map[string]bool{}
	for _, g := range c.INC.Groups {
		lm := leafMasks{}
		ok := true
		for _, m := range g.Members {
			sw, _ := c.MemberSwitch(m.Host)
			if sw == "" {
				t.Warnings = append(t.Warnings, fmt.Sprintf("INC group %d: member %s is behind no switch port: group not aggregated", g.ID, m.Host))
				ok = false
				break
			}
			t.Members[m.Host] = sw
			lm[sw] |= 1 << m.Rank
			holds[sw] = true
		}
		if !ok {
			continue
		}
		groups[g.ID] = lm
		if len(lm) > 1 {
			spanning = append(spanning, g.ID)
			for sw := range lm {
				multiLeaf[sw] = true
			}
		}
	}
	// Groups behind one leaf: that leaf is the root. A failed leaf holds nothing.
	for id, lm := range groups {
		if len(lm) != 1 {
			continue
		}
		for sw, mask := range lm {
			if !f.Switches[sw] {
				part(sw).Groups[id] = INCGroupEntry{Mask: mask, Root: true}
			}
		}
	}
	if len(spanning) == 0 {
		return t, nil
	}
	sort.Slice(spanning, func(i, j int) bool { return spanning[i] < spanning[j] })
	for _, sw := range sortedByPos(multiLeaf, pos) {
		t.Leaves = append(t.Leaves, sw)
	}
	drop := func(why string) (*INCTree, error) {
		t.Warnings = append(t.Warnings, fmt.Sprintf("INC groups %v span several leaves (%v) but %s: not aggregated",
			spanning, t.Leaves, why))
		t.Leaves = nil
		return t, nil
	}
	if len(t.Leaves) > config.MaxINCMembers {
		return drop(fmt.Sprintf("more than %d leaves cannot have a contributor bit each", config.MaxINCMembers))
	}
	for _, l := range t.Leaves {
		if f.Switches[l] {
			return drop(fmt.Sprintf("leaf %s has failed", l))
		}
	}
	// Live, usable links: leaf -> upper switch -> (leaf port, upper port).
	type link struct{ leafPort, upPort uint16 }
	links := map[string]map[string]link{}
	for _, l := range t.Leaves {
		links[l] = map[string]link{}
	}
	for i := range c.Switches {
		a := &c.Switches[i]
		for _, p := range a.Ports {
			if p.Peer == nil {
				continue
			}
			b := c.Switch(p.Peer.Switch)
			bp := b.Port(p.Peer.Port)
			ea, eb := config.PeerPort{Switch: a.Name, Port: p.Number}, *p.Peer
			if f.linkDown(ea, eb) || p.MAC == nil || bp.MAC == nil {
				continue
			}
			// Either end may name the link; keep the lowest leaf port.
			leaf, up, lp, upp := a.Name, b.Name, p.Number, bp.Number
			if !multiLeaf[leaf] {
				leaf, up, lp, upp = b.Name, a.Name, bp.Number, p.Number
			}
			if !multiLeaf[leaf] || holds[up] {
				continue
			}
			if old, seen := links[leaf][up]; !seen || lp < old.leafPort {
				links[leaf][up] = link{lp, upp}
			}
		}
	}
	// Upper switches: linked to every leaf, live, with a positive capacity.
	var hops []incroute.Hop
	for i := range c.Switches {
		s := &c.Switches[i]
		if holds[s.Name] || f.Switches[s.Name] || s.INCCapacity == 0 {
			continue
		}
		all := true
		for _, l := range t.Leaves {
			if _, ok := links[l][s.Name]; !ok {
				all = false
				break
			}
		}
		if all {
			u := INCUpper{Name: s.Name, ID: uint32(i + 1), Weight: s.INCCapacity}
			t.Uppers = append(t.Uppers, u)
			hops = append(hops, incroute.Hop{ID: u.ID, Weight: u.Weight})
		}
	}
	if len(t.Uppers) == 0 {
		t.Uppers = nil
		return drop("no live upper switch has a live link to every one of them")
	}
	for _, l := range t.Leaves {
		if s := c.Switch(l); s.INC != nil {
			return nil, fmt.Errorf("fabric: switch %s: inc.next_hops given, but it is a leaf of INC groups %v, whose upward "+
				"bucket table fastcnpd computes from the links (ports' peer) and the upper switches' inc.capacity: remove next_hops", l, spanning)
		}
	}
	var err error
	if len(prev) == p4src.IncBuckets {
		t.Table, err = incroute.UpdateBounded(prev, hops)
	} else {
		t.Table, err = incroute.Build(hops, p4src.IncBuckets)
	}
	if err != nil {
		return nil, fmt.Errorf("fabric: INC tree: %w", err)
	}
	// The leaves: masks of their members, partials up; the upper
	// switches: a child port per leaf, one bit per leaf of each group.
	for rank, l := range t.Leaves {
		lp := part(l)
		lp.Up = map[uint32]INCUpLink{}
		for _, u := range t.Uppers {
			lk := links[l][u.Name]
			lp.Up[u.ID] = INCUpLink{Port: lk.leafPort, SrcMAC: c.Switch(l).Port(lk.leafPort).MAC,
				DstMAC: c.Switch(u.Name).Port(lk.upPort).MAC}
			part(u.Name).Children[lk.upPort] = uint8(rank)
		}
	}
	for _, id := range spanning {
		var upMask uint32
		for rank, l := range t.Leaves {
			if mask, ok := groups[id][l]; ok {
				part(l).Groups[id] = INCGroupEntry{Mask: mask}
				upMask |= 1 << rank
			}
		}
		for _, u := range t.Uppers {
			part(u.Name).Groups[id] = INCGroupEntry{Mask: upMask, Root: true}
		}
	}
	return t, nil
}

func sortedByPos(set map[string]bool, pos map[string]int) []string {
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return pos[out[i]] < pos[out[j]] })
	return out
}

// CheckINCMembership returns an error when connection c claims INC
// membership (the INC uplink flag) that the config's inc.groups do not give
// its sender: an unknown group, a sender that is not a member, another rank.
// INC membership comes from the controller's configuration, never from the
// host's word (issue 17).
func CheckINCMembership(cfg *config.Config, c Connection) error {
	if c.Flags&p4src.ConnFlagIncUplink == 0 {
		return nil
	}
	g := cfg.INC.Group(c.INCGroup)
	if g == nil {
		return fmt.Errorf("INC group %d is not configured (inc.groups)", c.INCGroup)
	}
	m := g.Member(c.SenderIP)
	if m == nil {
		return fmt.Errorf("%s is not a member of INC group %d", c.SenderIP, c.INCGroup)
	}
	if m.Rank != c.WorkerRank {
		return fmt.Errorf("%s is rank %d in INC group %d, not rank %d", c.SenderIP, m.Rank, c.INCGroup, c.WorkerRank)
	}
	return nil
}
