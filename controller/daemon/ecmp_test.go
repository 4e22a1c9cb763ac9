package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/controller/fabric"
	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/wire"
)

// The s1 route of testYAML that the ECMP tests put an ECMP route after.
const ecmpAnchor = "      - {prefix: 10.0.0.0/8, port: 3, next_hop_mac: \"02:00:00:00:03:01\"}\n"

// ecmpConfig is testConfig with an ECMP route 10.3.0.0/16 on s1 over the
// given next hops (YAML flow mappings); none: no ECMP route.
func ecmpConfig(t *testing.T, state string, s1, s2 *testSwitch, hops ...string) *config.Config {
	t.Helper()
	src := fmt.Sprintf(testYAML, state, s1.addr, s2.addr)
	if len(hops) > 0 {
		if !strings.Contains(src, ecmpAnchor) {
			t.Fatal("testYAML changed: no ECMP anchor")
		}
		src = strings.Replace(src, ecmpAnchor, ecmpAnchor+"      - {prefix: 10.3.0.0/16, next_hops: ["+strings.Join(hops, ", ")+"]}\n", 1)
	}
	cfg, err := config.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Next hops of the ECMP route (ports 1..3 of s1 have MACs 02:00:00:00:01:0N).
const (
	hopA  = `{port: 2, mac: "02:00:00:00:cc:02", weight: 2}`
	hopA5 = `{port: 2, mac: "02:00:00:00:cc:02", weight: 5}`
	hopB  = `{port: 3, mac: "02:00:00:00:cc:03", weight: 1}`
	hopC  = `{port: 1, mac: "02:00:00:00:cc:01", weight: 1}`
)

// ecmpView is the ECMP state of a switch: member ID -> (port, src, dst),
// group ID -> member ID -> weight, next_hop_group_select key -> group, and
// the group ipv4_route 10.3.0.0/16 runs (0: none, or not a group).
type ecmpView struct {
	members map[uint32][3]uint64
	groups  map[uint32]map[uint32]int32
	sel     map[uint64]uint32
	route   uint64
}

func (s *testSwitch) ecmp() ecmpView {
	v := ecmpView{members: map[uint32][3]uint64{}, groups: map[uint32]map[uint32]int32{}, sel: map[uint64]uint32{}}
	ms, gs := s.profile()
	for _, m := range ms {
		if m.Action.ID != p4src.ActionSetNexthop || len(m.Action.Params) != 3 {
			s.t.Fatalf("member %d runs %+v", m.MemberID, m.Action)
		}
		var p [3]uint64
		for _, x := range m.Action.Params {
			p[x.ID-1] = x.Value
		}
		v.members[m.MemberID] = p
	}
	for _, g := range gs {
		v.groups[g.GroupID] = map[uint32]int32{}
		for _, gm := range g.Members {
			v.groups[g.GroupID][gm.MemberID] = gm.Weight
		}
	}
	for _, e := range s.entries(p4src.TableNextHopGroupSelect) {
		v.sel[e.Match[0].Value] = e.GroupID
	}
	for _, e := range s.entries(p4src.TableIPv4Route) {
		if len(e.Match) == 1 && e.Match[0].Value == 0x0A030000 && e.Match[0].PrefixLen == 16 &&
			e.Action.ID == p4src.ActionSetNextHopGroup {
			v.route = e.Action.Params[0].Value
		}
	}
	return v
}

// weights returns the weights of the route's group by egress port, after
// checking that the route runs the group through next_hop_group_select and
// that each member's source MAC is its port's.
func (v ecmpView) weights(t *testing.T) map[uint64]int32 {
	t.Helper()
	if v.route == 0 {
		t.Fatal("10.3.0.0/16 does not run an ECMP group")
	}
	g, ok := v.sel[v.route]
	if !ok || uint64(g) != v.route {
		t.Fatalf("next_hop_group_select %v has no entry %d -> group %d", v.sel, v.route, v.route)
	}
	out := map[uint64]int32{}
	for m, w := range v.groups[g] {
		p, ok := v.members[m]
		if !ok {
			t.Fatalf("group %d holds member %d, which does not exist", g, m)
		}
		if want := 0x020000000100 | p[0]; p[1] != want {
			t.Errorf("member %d src MAC %012x, want port %d's %012x", m, p[1], p[0], want)
		}
		if want := 0x02000000cc00 | p[0]; p[2] != want {
			t.Errorf("member %d dst MAC %012x, want %012x", m, p[2], want)
		}
		out[p[0]] = w
	}
	return out
}

// restartWith runs a daemon with cfg on s1 and s2 until its first audit
// of both is done and they are in sync, and returns the updates each
// switch accepted meanwhile (by "TYPE kind") and the Write RPCs of s1.
func restartWith(t *testing.T, cfg *config.Config, s1, s2 *testSwitch) (*testDaemon, map[string]int, [][]string, map[string]int) {
	t.Helper()
	k1, b1 := s1.writes.kindSnapshot()
	k2, b2 := s2.writes.kindSnapshot()
	d := startDaemon(t, cfg, nil)
	for name, s := range map[string]*testSwitch{"s1": s1, "s2": s2} {
		waitFor(t, name+" audited and in sync", syncTimeout, func() bool {
			return syncs(d.Daemon, name, "audit") >= 1 && inSync(t, d.Daemon, name, s)
		})
	}
	got1, batches := s1.writes.kindsSince(k1, b1)
	got2, _ := s2.writes.kindsSince(k2, b2)
	return d, got1, batches, got2
}

// TestECMPRoute: a weighted ECMP route is installed on fastcnp-switch as
// members, a group, a next_hop_group_select entry and an ipv4_route entry;
// packets to it leave on the group's ports; a weight change is one group
// MODIFY, a membership change adds or removes one member; a restart with
// the same config writes nothing; removing the route leaks nothing.
func TestECMPRoute(t *testing.T) {
	s1, s2, state := twoSwitches(t)
	d, _, _, _ := restartWith(t, ecmpConfig(t, state, s1, s2, hopA, hopB), s1, s2)
	v := s1.ecmp()
	if len(v.members) != 2 || len(v.groups) != 1 || len(v.sel) != 1 {
		t.Fatalf("s1 ECMP state %+v: want 2 members, 1 group, 1 group entry", v)
	}
	if w := v.weights(t); !reflect.DeepEqual(w, map[uint64]int32{2: 2, 3: 1}) {
		t.Errorf("weights by port %v, want 2:2 3:1", w)
	}
	if v2 := s2.ecmp(); len(v2.members)+len(v2.groups)+len(v2.sel) != 0 {
		t.Errorf("s2 has ECMP state %+v", v2)
	}
	for name, s := range map[string]*testSwitch{"s1": s1, "s2": s2} {
		if p := readBackPlan(t, d.Daemon, name, s); !p.Empty() {
			t.Errorf("%s: read back differs: %d/%d/%d", name, len(p.Insert), len(p.Modify), len(p.Delete))
		}
	}
	checkECMPPackets(t, s1, map[uint16]bool{2: true, 3: true})

	// Restart with the same config: nothing written.
	d.stopNow()
	d, got1, _, got2 := restartWith(t, ecmpConfig(t, state, s1, s2, hopA, hopB), s1, s2)
	if len(got1)+len(got2) != 0 {
		t.Errorf("restart with the same config wrote %v to s1, %v to s2; want nothing", got1, got2)
	}
	for _, sw := range []string{"s1", "s2"} {
		for _, typ := range []string{"insert", "modify", "delete"} {
			if n := updates(d.Daemon, sw, typ); n != 0 {
				t.Errorf("%s: restarted daemon counted %v %s updates", sw, n, typ)
			}
		}
	}

	for _, tt := range []struct {
		name    string
		hops    []string
		batches [][]string // the Write RPCs s1 accepts, each as its updates
		weights map[uint64]int32
	}{
		{"weight change", []string{hopA5, hopB}, [][]string{{"MODIFY action_profile_group"}}, map[uint64]int32{2: 5, 3: 1}},
		{"hop added", []string{hopA5, hopB, hopC}, [][]string{{"INSERT action_profile_member"}, {"MODIFY action_profile_group"}},
			map[uint64]int32{1: 1, 2: 5, 3: 1}},
		{"hop removed", []string{hopA5, hopC}, [][]string{{"MODIFY action_profile_group"}, {"DELETE action_profile_member"}},
			map[uint64]int32{1: 1, 2: 5}},
		{"same again", []string{hopA5, hopC}, nil, map[uint64]int32{1: 1, 2: 5}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d.stopNow()
			var got2 map[string]int
			var batches [][]string
			d, _, batches, got2 = restartWith(t, ecmpConfig(t, state, s1, s2, tt.hops...), s1, s2)
			if !reflect.DeepEqual(batches, tt.batches) {
				t.Errorf("s1 accepted writes %q, want %q", batches, tt.batches)
			}
			if len(got2) != 0 {
				t.Errorf("s2 accepted %v, want nothing", got2)
			}
			v := s1.ecmp()
			if w := v.weights(t); !reflect.DeepEqual(w, tt.weights) {
				t.Errorf("weights by port %v, want %v", w, tt.weights)
			}
			if len(v.members) != len(tt.weights) || len(v.groups) != 1 {
				t.Errorf("%d members, %d groups: want %d, 1 (no leak)", len(v.members), len(v.groups), len(tt.weights))
			}
		})
	}

	// The route removed: its entries, group and members go, tables first.
	d.stopNow()
	_, _, batches, _ := restartWith(t, ecmpConfig(t, state, s1, s2), s1, s2)
	want := [][]string{{"DELETE table_entry", "DELETE table_entry"}, {"DELETE action_profile_group"},
		{"DELETE action_profile_member", "DELETE action_profile_member"}}
	if !reflect.DeepEqual(batches, want) {
		t.Errorf("s1 accepted writes %q, want %q", batches, want)
	}
	if v := s1.ecmp(); len(v.members)+len(v.groups)+len(v.sel) != 0 || v.route != 0 {
		t.Errorf("ECMP state left behind: %+v", v)
	}
}

// checkECMPPackets sends RoCEv2 packets of 64 flows (UDP source ports
// spread over their high bits, which the CRC-16 selector hash spreads
// evenly: docs/dataplane.md) to 10.3.0.0/16 through s1's pipeline and
// checks that each leaves on one of the group's ports, with that next
// hop's MACs, and that every port carries some.
func checkECMPPackets(t *testing.T, s *testSwitch, ports map[uint16]bool) {
	t.Helper()
	seen := map[uint16]int{}
	for i := 0; i < 64; i++ {
		env := &wire.Envelope{SrcMAC: wire.MAC{2, 0, 0, 0, 0, 9}, DstMAC: wire.MAC{2, 0, 0, 0, 1, 1},
			SrcIP: wire.Addr4{10, 1, 1, 5}, DstIP: wire.Addr4{10, 3, 0, 7}, DSCP: 26, SrcPort: uint16(49152 + i*256)}
		b := make([]byte, 256)
		n, err := wire.BuildRoCE(b, env, &wire.BTH{Opcode: wire.OpRCSendOnly, PKey: wire.DefaultPKey, DestQP: 0x11, PSN: 1}, make([]byte, 64))
		if err != nil {
			t.Fatal(err)
		}
		var res pipeline.IngressResult
		err = s.dp.Exec(context.Background(), func(p *pipeline.Pipeline) error {
			return p.Ingress(b[:n], 1, int64(i+1)*1000, &res)
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != pipeline.VerdictForward || !ports[res.EgressPort] {
			t.Fatalf("flow %d: verdict %v port %d, want forwarded to one of %v", i, res.Verdict, res.EgressPort, ports)
		}
		dst, src := res.Frame[0:6], res.Frame[6:12]
		if want := []byte{2, 0, 0, 0, 0xcc, byte(res.EgressPort)}; string(dst) != string(want) {
			t.Errorf("flow %d via port %d: dst MAC % x, want % x", i, res.EgressPort, dst, want)
		}
		if want := []byte{2, 0, 0, 0, 1, byte(res.EgressPort)}; string(src) != string(want) {
			t.Errorf("flow %d via port %d: src MAC % x, want % x", i, res.EgressPort, src, want)
		}
		seen[res.EgressPort]++
	}
	for p := range ports {
		if seen[p] == 0 {
			t.Errorf("no flow of 64 left on port %d (by port: %v)", p, seen)
		}
	}
}

// TestECMPDriftRepaired: ECMP objects changed behind fastcnpd's back are
// repaired by the audit with one write each, in dependency order.
func TestECMPDriftRepaired(t *testing.T) {
	s1, s2, state := twoSwitches(t)
	d := startDaemon(t, ecmpConfig(t, state, s1, s2, hopA, hopB), func(o *Options) { o.AuditInterval = 100 * time.Millisecond })
	waitInSync(t, d.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	gid := uint32(s1.ecmp().route)
	for _, tt := range []struct {
		name  string
		drift func(p *pipeline.Pipeline) error
		want  map[string]int
	}{
		{"group entry deleted", func(p *pipeline.Pipeline) error {
			return p.DeleteEntry(&pipeline.TableEntry{TableID: p4src.TableNextHopGroupSelect,
				Match: []pipeline.FieldMatch{{FieldID: 1, Value: uint64(gid)}}})
		}, map[string]int{"INSERT table_entry": 1}},
		{"group entry and group deleted", func(p *pipeline.Pipeline) error {
			if err := p.DeleteEntry(&pipeline.TableEntry{TableID: p4src.TableNextHopGroupSelect,
				Match: []pipeline.FieldMatch{{FieldID: 1, Value: uint64(gid)}}}); err != nil {
				return err
			}
			return p.DeleteProfileGroup(p4src.ProfileNextHopSelector, gid)
		}, map[string]int{"INSERT action_profile_group": 1, "INSERT table_entry": 1}},
		{"weights changed", func(p *pipeline.Pipeline) error {
			gs, err := p.ReadProfileGroups(p4src.ProfileNextHopSelector, gid, nil)
			if err != nil || len(gs) != 1 {
				return fmt.Errorf("group %d: %v %v", gid, gs, err)
			}
			for i := range gs[0].Members {
				gs[0].Members[i].Weight = 7
			}
			return p.ModifyProfileGroup(&gs[0])
		}, map[string]int{"MODIFY action_profile_group": 1}},
		{"extra member", func(p *pipeline.Pipeline) error {
			return p.InsertProfileMember(&pipeline.ProfileMember{ProfileID: p4src.ProfileNextHopSelector, MemberID: 4242,
				Action: pipeline.Action{ID: p4src.ActionDrop}})
		}, map[string]int{"DELETE action_profile_member": 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			repaired := testutil.ToFloat64(d.metrics.repaired.WithLabelValues("s1"))
			before, batches := s1.writes.kindSnapshot()
			if err := s1.dp.Exec(context.Background(), tt.drift); err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, c := range tt.want {
				n += c
			}
			// An audit reads object kinds one by one, so a drift may land
			// between two reads and be repaired by two audits; either way
			// each drifted object is repaired once.
			waitFor(t, "drift repaired", syncTimeout, func() bool {
				return testutil.ToFloat64(d.metrics.repaired.WithLabelValues("s1")) >= repaired+float64(n) &&
					inSync(t, d.Daemon, "s1", s1) && readBackPlan(t, d.Daemon, "s1", s1).Empty()
			})
			audits := syncs(d.Daemon, "s1", "audit")
			waitFor(t, "two more audits", syncTimeout, func() bool { return syncs(d.Daemon, "s1", "audit") >= audits+2 })
			got, _ := s1.writes.kindsSince(before, batches)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("repair wrote %v, want %v", got, tt.want)
			}
			if w := s1.ecmp().weights(t); !reflect.DeepEqual(w, map[uint64]int32{2: 2, 3: 1}) {
				t.Errorf("weights by port after the repair %v, want 2:2 3:1", w)
			}
		})
	}
	checkECMPPackets(t, s1, map[uint16]bool{2: true, 3: true})
}

// slotTimeouts returns a switch's inc_slot_timeout entries: group -> ns.
func (s *testSwitch) slotTimeouts() map[uint64]uint64 {
	out := map[uint64]uint64{}
	for _, e := range s.entries(p4src.TableIncSlotTimeout) {
		if e.Action.ID != p4src.ActionSetIncSlotTimeout {
			s.t.Fatalf("inc_slot_timeout entry runs %#x", e.Action.ID)
		}
		out[e.Match[0].Value] = e.Action.Params[0].Value
	}
	return out
}

// TestINCSlotTimeout: every INC group fastcnpd installs (the config's, on
// the switch its members are behind) gets the switch's slot timeout (the
// default, or the switch's own), drift is repaired, a group stays when its
// connections go, and turning aging off deletes the entries.
func TestINCSlotTimeout(t *testing.T) {
	s1, s2, state := twoSwitches(t)
	yaml := func(aging string) *config.Config {
		src := fmt.Sprintf(testYAML, state, s1.addr, s2.addr)
		const s2inc = "    inc:\n      next_hops: [{port: 3, mac: \"02:00:00:00:03:02\""
		if !strings.Contains(src, s2inc) || !strings.Contains(src, "inc:\n  # INC membership") {
			t.Fatal("testYAML changed: no s2 inc block or no top-level inc block")
		}
		src = strings.Replace(src, s2inc, "    inc:\n      slot_timeout: 5ms\n      next_hops: [{port: 3, mac: \"02:00:00:00:03:02\"", 1)
		src = strings.Replace(src, "inc:\n  # INC membership", "inc:\n"+aging+"  # INC membership", 1)
		cfg, err := config.Parse([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	d := startDaemon(t, yaml(""), func(o *Options) { o.AuditInterval = 100 * time.Millisecond })
	waitInSync(t, d.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	const def, own = uint64(config.DefaultINCSlotTimeout), uint64(5 * time.Millisecond)
	if got, want := s1.slotTimeouts(), map[uint64]uint64{7: def}; !reflect.DeepEqual(got, want) {
		t.Errorf("s1 slot timeouts %v, want %v (the default)", got, want)
	}
	if got, want := s2.slotTimeouts(), map[uint64]uint64{9: own}; !reflect.DeepEqual(got, want) {
		t.Errorf("s2 slot timeouts %v, want %v (its own)", got, want)
	}

	// Drift: an entry deleted behind fastcnpd's back is put back.
	ctx := context.Background()
	repaired := testutil.ToFloat64(d.metrics.repaired.WithLabelValues("s1"))
	before, batches := s1.writes.kindSnapshot()
	err := s1.dp.Exec(ctx, func(p *pipeline.Pipeline) error {
		return p.DeleteEntry(&pipeline.TableEntry{TableID: p4src.TableIncSlotTimeout, Match: []pipeline.FieldMatch{{FieldID: 1, Value: 7}}})
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "slot timeout repaired", syncTimeout, func() bool {
		return testutil.ToFloat64(d.metrics.repaired.WithLabelValues("s1")) > repaired && len(s1.slotTimeouts()) == 1
	})
	audits := syncs(d.Daemon, "s1", "audit")
	waitFor(t, "two more audits", syncTimeout, func() bool { return syncs(d.Daemon, "s1", "audit") >= audits+2 })
	if got, _ := s1.writes.kindsSince(before, batches); !reflect.DeepEqual(got, map[string]int{"INSERT table_entry": 1}) {
		t.Errorf("repair wrote %v, want one insert", got)
	}

	// A member's connection comes and goes: the group is the config's.
	c, err := d.AddConnection(ctx, incConn(100, 7, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.RemoveConnection(ctx, c.ConnKey); err != nil {
		t.Fatal(err)
	}
	if got := s1.slotTimeouts(); !reflect.DeepEqual(got, map[uint64]uint64{7: def}) {
		t.Errorf("s1 slot timeouts %v after group 7's connection left, want group 7's", got)
	}
	// A connection whose claim the config does not back is refused.
	if _, err := d.AddConnection(ctx, incConn(101, 7, 3)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "is rank 0 in INC group 7, not rank 3") {
		t.Errorf("AddConnection with another rank: %v", err)
	}

	// Aging off at the top level: s1's entry goes, s2 keeps its own timeout.
	d.stopNow()
	_, got1, _, got2 := restartWith(t, yaml("  slot_timeout: 0\n"), s1, s2)
	if !reflect.DeepEqual(got1, map[string]int{"DELETE table_entry": 1}) || len(got2) != 0 {
		t.Errorf("restart with aging off on s1 wrote %v to s1 and %v to s2, want one delete on s1", got1, got2)
	}
	if n := len(s1.slotTimeouts()); n != 0 {
		t.Errorf("s1 keeps %d slot timeouts with aging off", n)
	}
	if got := s2.slotTimeouts(); !reflect.DeepEqual(got, map[uint64]uint64{9: own}) {
		t.Errorf("s2 slot timeouts %v, want group 9 at 5ms", got)
	}
}

// incConn is an INC uplink connection of group g with worker rank rank.
func incConn(qpn uint32, g uint16, rank uint8) fabric.Connection {
	return fabric.Connection{ConnKey: fabric.ConnKey{SenderIP: netip.MustParseAddr("10.1.1.5"), UDPSrcPort: 1000,
		ReceiverQPN: qpn}, SenderQPN: 7, Flags: p4src.ConnFlagIncUplink | p4src.ConnFlagCNPTarget, INCGroup: g, WorkerRank: rank}
}
