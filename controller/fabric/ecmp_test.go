package fabric

import (
	"net"
	"net/netip"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/p4src"
	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
)

func mustMAC(t *testing.T, s string) net.HardwareAddr {
	t.Helper()
	m, err := net.ParseMAC(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// ecmpSwitch returns the example's spine1 (ports 1 and 2 with MACs) with
// the given routes.
func ecmpSwitch(t *testing.T, routes ...config.Route) (*config.Config, *config.Switch) {
	t.Helper()
	cfg := testConfig(t)
	sw := cfg.Switch("spine1")
	sw.Routes = routes
	return cfg, sw
}

func ecmpRoute(t *testing.T, prefix string, hops ...config.NextHop) config.Route {
	t.Helper()
	return config.Route{Prefix: netip.MustParsePrefix(prefix), NextHops: hops}
}

func hop(t *testing.T, port uint16, mac string, w uint32) config.NextHop {
	t.Helper()
	return config.NextHop{Port: port, MAC: mustMAC(t, mac), Weight: w}
}

// ecmpEntities returns the members, groups and next_hop_group_select and
// ipv4_route entries of a desired state.
func ecmpEntities(t *testing.T, info *p4rt.Info, st *State) (members []*p4v1.ActionProfileMember, groups []*p4v1.ActionProfileGroup, sel, routes []*p4v1.TableEntry) {
	t.Helper()
	selID, _ := info.TableID(TableNextHopGroup)
	routeID, _ := info.TableID(TableIPv4Route)
	for _, e := range st.Entries() {
		switch {
		case e.Entity.GetActionProfileMember() != nil:
			members = append(members, e.Entity.GetActionProfileMember())
		case e.Entity.GetActionProfileGroup() != nil:
			groups = append(groups, e.Entity.GetActionProfileGroup())
		case e.Entity.GetTableEntry().GetTableId() == selID:
			sel = append(sel, e.Entity.GetTableEntry())
		case e.Entity.GetTableEntry().GetTableId() == routeID:
			routes = append(routes, e.Entity.GetTableEntry())
		}
	}
	return members, groups, sel, routes
}

// TestECMPDesired: an ECMP route becomes members (one per distinct next
// hop, shared between routes), a weighted group per route, its
// next_hop_group_select entry and an ipv4_route set_next_hop_group entry;
// a route with one next hop stays a set_nexthop entry. IDs do not depend on
// the order of the routes.
func TestECMPDesired(t *testing.T) {
	info := testInfo(t)
	a := ecmpRoute(t, "10.2.0.0/16", hop(t, 1, "02:00:00:00:01:03", 3), hop(t, 2, "02:00:00:00:02:03", 1))
	b := ecmpRoute(t, "10.3.0.0/16", hop(t, 2, "02:00:00:00:02:03", 2), hop(t, 1, "02:00:00:00:01:09", 5))
	single := config.Route{Prefix: netip.MustParsePrefix("10.1.0.0/16"), Port: 1, NextHopMAC: mustMAC(t, "02:00:00:00:01:03")}
	cfg, sw := ecmpSwitch(t, a, single, b)
	res, err := Desired(info, Input{Config: cfg, Switch: sw})
	if err != nil {
		t.Fatal(err)
	}
	members, groups, sel, routes := ecmpEntities(t, info, res.State)
	if len(members) != 3 || len(groups) != 2 || len(sel) != 2 || len(routes) != 3 {
		t.Fatalf("%d members, %d groups, %d group entries, %d routes; want 3, 2, 2, 3", len(members), len(groups), len(sel), len(routes))
	}
	if len(res.ECMP) != 2 || res.ECMP[0].Prefix != a.Prefix || res.ECMP[0].Weight() != 4 || res.ECMP[1].Weight() != 7 {
		t.Fatalf("groups %+v", res.ECMP)
	}
	// The member of (port 2, 02:00:00:00:02:03) is shared.
	if res.ECMP[0].Hops[1].MemberID != res.ECMP[1].Hops[0].MemberID {
		t.Errorf("shared next hop has members %d and %d", res.ECMP[0].Hops[1].MemberID, res.ECMP[1].Hops[0].MemberID)
	}
	setNH, _ := info.ActionID("set_nexthop")
	byMember := map[uint32]*p4v1.ActionProfileMember{}
	for _, m := range members {
		if m.GetAction().GetActionId() != setNH {
			t.Errorf("member %d runs action %#x", m.GetMemberId(), m.GetAction().GetActionId())
		}
		byMember[m.GetMemberId()] = m
	}
	for _, g := range res.ECMP {
		var pg *p4v1.ActionProfileGroup
		for _, x := range groups {
			if x.GetGroupId() == g.ID {
				pg = x
			}
		}
		if pg == nil || len(pg.GetMembers()) != len(g.Hops) {
			t.Fatalf("group %d: %v", g.ID, pg)
		}
		for i, h := range g.Hops {
			gm := pg.GetMembers()[i]
			if gm.GetMemberId() != h.MemberID || gm.GetWeight() != int32(h.Weight) {
				t.Errorf("group %d member %d: %v, want %d*%d", g.ID, i, gm, h.MemberID, h.Weight)
			}
			m := byMember[h.MemberID]
			if m == nil {
				t.Fatalf("group %d names member %d, which is not desired", g.ID, h.MemberID)
			}
			ps := m.GetAction().GetParams()
			if p, _ := p4rt.DecodeUint(ps[0].GetValue()); p != uint64(h.Port) || !equalBytes(ps[1].GetValue(), sw.Port(h.Port).MAC) ||
				!equalBytes(ps[2].GetValue(), h.DstMAC) {
				t.Errorf("member %d params %v, want port %d src %s dst %s", h.MemberID, ps, h.Port, sw.Port(h.Port).MAC, h.DstMAC)
			}
		}
		// next_hop_group_select: group_id -> the group.
		found := false
		for _, te := range sel {
			k, _ := p4rt.DecodeUint(te.GetMatch()[0].GetExact().GetValue())
			if k == uint64(g.ID) {
				found = te.GetAction().GetActionProfileGroupId() == g.ID
			}
		}
		if !found {
			t.Errorf("no next_hop_group_select entry %d -> group %d", g.ID, g.ID)
		}
	}
	// ipv4_route: set_next_hop_group(group_id) for the ECMP prefixes.
	setGroup, _ := info.ActionID("set_next_hop_group")
	groupOf := map[string]uint64{}
	for _, te := range routes {
		a := te.GetAction().GetAction()
		lpm := te.GetMatch()[0].GetLpm()
		ip := net.IP(p4rt.Canonical(lpm.GetValue()))
		if len(ip) < 4 {
			ip = append(make(net.IP, 4-len(ip)), ip...)
		}
		pfx := netip.PrefixFrom(netip.AddrFrom4([4]byte(ip)), int(lpm.GetPrefixLen())).String()
		if a.GetActionId() == setGroup {
			groupOf[pfx], _ = p4rt.DecodeUint(a.GetParams()[0].GetValue())
		} else if a.GetActionId() != setNH || pfx != single.Prefix.String() {
			t.Errorf("route %s runs %#x", pfx, a.GetActionId())
		}
	}
	for _, g := range res.ECMP {
		if groupOf[g.Prefix.String()] != uint64(g.ID) {
			t.Errorf("route %s runs group %d, want %d", g.Prefix, groupOf[g.Prefix.String()], g.ID)
		}
	}
	// The same routes in another order give the same state.
	cfg2, sw2 := ecmpSwitch(t, b, a, single)
	res2, err := Desired(info, Input{Config: cfg2, Switch: sw2})
	if err != nil {
		t.Fatal(err)
	}
	if p := Diff(res.State, res2.State); !p.Empty() {
		t.Errorf("route order changed the state: %d/%d/%d", len(p.Insert), len(p.Modify), len(p.Delete))
	}
}

func equalBytes(a, b []byte) bool { return string(p4rt.Canonical(a)) == string(p4rt.Canonical(b)) }

// batchKinds describes batches as "TYPE kind" lists.
func batchKinds(t *testing.T, bs [][]*p4v1.Update) [][]string {
	t.Helper()
	var out [][]string
	for _, b := range bs {
		var ks []string
		for _, u := range b {
			e, err := Canonical(u.GetEntity())
			if err != nil {
				t.Fatal(err)
			}
			ks = append(ks, u.GetType().String()+" "+e.Kind.String())
		}
		out = append(out, ks)
	}
	return out
}

// TestECMPChanges: changes of an ECMP route cost the fewest updates, in
// batches that respect the references (members before the groups that
// hold them, groups before the entries that run them; deletes the other
// way round).
func TestECMPChanges(t *testing.T) {
	info := testInfo(t)
	h1, h2, h3 := hop(t, 1, "02:00:00:00:01:03", 3), hop(t, 2, "02:00:00:00:02:03", 1), hop(t, 2, "02:00:00:00:02:09", 1)
	state := func(routes ...config.Route) *State {
		cfg, sw := ecmpSwitch(t, routes...)
		res, err := Desired(info, Input{Config: cfg, Switch: sw})
		if err != nil {
			t.Fatal(err)
		}
		return res.State
	}
	base := state(ecmpRoute(t, "10.2.0.0/16", h1, h2))
	h1b := h1
	h1b.Weight = 5
	single := config.Route{Prefix: netip.MustParsePrefix("10.2.0.0/16"), Port: 1, NextHopMAC: h1.MAC}
	const (
		insMember = "INSERT action_profile_member"
		delMember = "DELETE action_profile_member"
		insGroup  = "INSERT action_profile_group"
		modGroup  = "MODIFY action_profile_group"
		delGroup  = "DELETE action_profile_group"
		insEntry  = "INSERT table_entry"
		modEntry  = "MODIFY table_entry"
		delEntry  = "DELETE table_entry"
	)
	for _, tt := range []struct {
		name    string
		from    *State
		to      *State
		batches [][]string
	}{
		{"weight change", base, state(ecmpRoute(t, "10.2.0.0/16", h1b, h2)), [][]string{{modGroup}}},
		{"hop added", base, state(ecmpRoute(t, "10.2.0.0/16", h1, h2, h3)), [][]string{{insMember}, {modGroup}}},
		{"hop removed", state(ecmpRoute(t, "10.2.0.0/16", h1, h2, h3)), base, [][]string{{modGroup}, {delMember}}},
		{"route added", state(), base, [][]string{{insMember, insMember}, {insGroup}, {insEntry, insEntry}}},
		{"route removed", base, state(), [][]string{{delEntry, delEntry}, {delGroup}, {delMember, delMember}}},
		{"to one next hop", base, state(single), [][]string{{delEntry, modEntry}, {delGroup}, {delMember, delMember}}},
		{"from one next hop", state(single), base, [][]string{{insMember, insMember}, {insGroup}, {modEntry, insEntry}}},
		{"unchanged", base, state(ecmpRoute(t, "10.2.0.0/16", h1, h2)), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := Diff(tt.to, tt.from)
			got := batchKinds(t, p.Batches())
			if len(got) != len(tt.batches) {
				t.Fatalf("batches %q, want %q", got, tt.batches)
			}
			n := 0
			for i := range got {
				if strings.Join(sortedCopy(got[i]), ",") != strings.Join(sortedCopy(tt.batches[i]), ",") {
					t.Errorf("batch %d: %q, want %q", i, got[i], tt.batches[i])
				}
				n += len(got[i])
			}
			if n != p.Len() {
				t.Errorf("%d updates in batches for a plan of %d", n, p.Len())
			}
		})
	}
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}

// TestBatchesWithoutGroups: a plan that touches no group is one batch,
// ordered as Updates (deletes, modifies, inserts).
func TestBatchesWithoutGroups(t *testing.T) {
	info, cfg := testInfo(t), testConfig(t)
	res, err := Desired(info, Input{Config: cfg, Switch: cfg.Switch("leaf1"), Connections: []Connection{conn("10.1.1.5", 1, 2)}})
	if err != nil {
		t.Fatal(err)
	}
	other, err := Desired(info, Input{Config: cfg, Switch: cfg.Switch("leaf1"), Connections: []Connection{conn("10.1.1.6", 1, 2)}})
	if err != nil {
		t.Fatal(err)
	}
	p := Diff(res.State, other.State)
	bs := p.Batches()
	if len(bs) != 1 || !proto.Equal(&p4v1.WriteRequest{Updates: bs[0]}, &p4v1.WriteRequest{Updates: p.Updates()}) {
		t.Errorf("batches %q, want one batch equal to Updates", batchKinds(t, bs))
	}
}

// TestAllocate: preferred IDs are kept; collisions take the next free ID,
// wrapping within 1..limit, in the order given.
func TestAllocate(t *testing.T) {
	for _, tt := range []struct {
		prefs []uint32
		limit uint32
		want  []uint32
	}{
		{[]uint32{5, 9, 7}, 10, []uint32{5, 9, 7}},
		{[]uint32{5, 5, 5}, 10, []uint32{5, 6, 7}},
		{[]uint32{10, 10, 0}, 10, []uint32{10, 1, 2}},
		{[]uint32{0, 1<<32 - 1}, 1<<32 - 1, []uint32{1<<32 - 1, 1}},
		{[]uint32{3, 13}, 10, []uint32{3, 4}},
		{[]uint32{1<<32 - 1, 1<<32 - 1}, 1<<32 - 1, []uint32{1<<32 - 1, 1}},
	} {
		got := allocate(tt.prefs, tt.limit)
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("allocate(%v, %d) = %v, want %v", tt.prefs, tt.limit, got, tt.want)
				break
			}
		}
	}
}

// TestECMPLimitsFromP4Info: the P4Info's selector size and max_group_size
// and the group table's size bound the ECMP routes.
func TestECMPLimitsFromP4Info(t *testing.T) {
	route := ecmpRoute(t, "10.2.0.0/16", hop(t, 1, "02:00:00:00:01:03", 3), hop(t, 2, "02:00:00:00:02:03", 1))
	other := ecmpRoute(t, "10.3.0.0/16", hop(t, 1, "02:00:00:00:01:03", 1), hop(t, 2, "02:00:00:00:02:03", 1))
	for _, tt := range []struct {
		name   string
		mod    func(p *p4configv1.P4Info)
		routes []config.Route
		want   string
	}{
		{"selector size", func(p *p4configv1.P4Info) { p.GetActionProfiles()[0].Size = 3 }, []config.Route{route}, "add up to 4, more than the 3"},
		{"max group size", func(p *p4configv1.P4Info) { p.GetActionProfiles()[0].MaxGroupSize = 2 }, []config.Route{route}, "more than the max_group_size 2"},
		{"group table size", func(p *p4configv1.P4Info) {
			for _, tb := range p.GetTables() {
				if tb.GetPreamble().GetName() == TableNextHopGroup {
					tb.Size = 1
				}
			}
		}, []config.Route{route, other}, "2 ECMP routes exceed the 1 entries"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := p4src.P4Info()
			if err != nil {
				t.Fatal(err)
			}
			tt.mod(p)
			info, err := p4rt.NewInfo(p)
			if err != nil {
				t.Fatal(err)
			}
			cfg, sw := ecmpSwitch(t, tt.routes...)
			if _, err := Desired(info, Input{Config: cfg, Switch: sw}); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// TestCanonicalGroup: a group read back with its members in another order
// and weight 0 for 1 (an unset weight) is the same group.
func TestCanonicalGroup(t *testing.T) {
	info := testInfo(t)
	a, err := info.ActionProfileGroup(ProfileNextHops, 7, 0, p4rt.GroupMember{ID: 1, Weight: 1}, p4rt.GroupMember{ID: 2, Weight: 3})
	if err != nil {
		t.Fatal(err)
	}
	b := proto.Clone(a).(*p4v1.Entity)
	g := b.GetActionProfileGroup()
	g.Members[0], g.Members[1] = g.Members[1], g.Members[0]
	g.Members[1].Weight = 0
	ca, _ := Canonical(a)
	cb, _ := Canonical(b)
	if ca.Key != cb.Key || ca.Value != cb.Value {
		t.Errorf("%+v != %+v", ca, cb)
	}
	g.Members[0].Weight = 2
	if cc, _ := Canonical(b); cc.Value == ca.Value {
		t.Error("a weight change is not seen")
	}
}

// TestINCSlotTimeoutEntries: every INC group gets an inc_slot_timeout entry
// with the switch's timeout; 0 writes none.
func TestINCSlotTimeoutEntries(t *testing.T) {
	info, cfg := testInfo(t), testConfig(t)
	var conns []Connection
	for i, g := range []uint16{5, 9, 5} {
		c := conn("10.1.2.6", uint16(1000+i), 18)
		c.Flags, c.INCGroup, c.WorkerRank, c.Index = p4src.ConnFlagIncUplink, g, uint8(i), uint16(i)
		conns = append(conns, c)
	}
	// Groups 5 and 9, their members behind leaf1 (its roots).
	cfg.INC.Groups = []config.INCGroup{
		{ID: 5, Members: []config.INCMember{{Host: netip.MustParseAddr("10.1.2.6"), Rank: 0}, {Host: netip.MustParseAddr("10.1.1.9"), Rank: 2}}},
		{ID: 9, Members: []config.INCMember{{Host: netip.MustParseAddr("10.1.2.6"), Rank: 1}}},
	}
	tree, err := ComputeINCTree(cfg, Failures{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tid, _ := info.TableID(TableINCSlotTimeout)
	for _, tt := range []struct {
		timeout time.Duration
		want    int
	}{{20 * time.Millisecond, 2}, {0, 0}, {config.MaxINCSlotTimeout, 2}} {
		sw := cfg.Switch("leaf1")
		sw.INCSlotTimeout = tt.timeout
		res, err := Desired(info, Input{Config: cfg, Switch: sw, Connections: conns, INCTree: tree})
		if err != nil {
			t.Fatal(err)
		}
		groups := map[uint64]bool{}
		for _, e := range res.State.Entries() {
			te := e.Entity.GetTableEntry()
			if te.GetTableId() != tid {
				continue
			}
			g, _ := p4rt.DecodeUint(te.GetMatch()[0].GetExact().GetValue())
			v, _ := p4rt.DecodeUint(te.GetAction().GetAction().GetParams()[0].GetValue())
			groups[g] = true
			if v != uint64(tt.timeout) {
				t.Errorf("timeout %v: group %d entry says %d ns", tt.timeout, g, v)
			}
		}
		if len(groups) != tt.want || (tt.want > 0 && (!groups[5] || !groups[9])) {
			t.Errorf("timeout %v: entries for groups %v, want groups 5 and 9 (%d)", tt.timeout, groups, tt.want)
		}
	}
}
