package fabric

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/controller/incroute"
	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/p4src"
)

// leafSpine is three leaves (two workers each, 10.0.L.1 and 10.0.L.2 on
// ports 1 and 2) and two spines: leaf L's port 9 goes to spine1 port L,
// port 10 to spine2 port L. spine2 has three times spine1's capacity.
// Group 1 spans leaf1 and leaf2, group 2 is behind leaf3 alone, group 3
// spans all three.
func leafSpine(t *testing.T, extra string) *config.Config {
	t.Helper()
	var b strings.Builder
	b.WriteString(`api: {auth: {insecure: true}}
inc:
  groups:
    - {id: 1, members: [{host: 10.0.1.1, rank: 0}, {host: 10.0.1.2, rank: 1}, {host: 10.0.2.1, rank: 2}]}
    - {id: 2, members: [{host: 10.0.3.1, rank: 4}, {host: 10.0.3.2, rank: 6}]}
    - {id: 3, members: [{host: 10.0.1.1, rank: 0}, {host: 10.0.2.2, rank: 1}, {host: 10.0.3.1, rank: 2}]}
switches:
`)
	for l := 1; l <= 3; l++ {
		fmt.Fprintf(&b, `  - name: leaf%d
    address: 127.0.0.1:90%02d
    device_id: %d
    tls: {insecure: true}
    ports:
      - {port: 1, mac: "02:00:00:00:0%d:01", subnets: [10.0.%d.1/32]}
      - {port: 2, mac: "02:00:00:00:0%d:02", subnets: [10.0.%d.2/32]}
      - {port: 9, mac: "02:00:00:00:0%d:09", peer: {switch: spine1, port: %d}}
      - {port: 10, mac: "02:00:00:00:0%d:0a", peer: {switch: spine2, port: %d}}
`, l, l, l, l, l, l, l, l, l, l, l)
	}
	for s := 1; s <= 2; s++ {
		fmt.Fprintf(&b, `  - name: spine%d
    address: 127.0.0.1:91%02d
    device_id: %d
    tls: {insecure: true}
    inc: {capacity: %d}
    ports:
      - {port: 1, mac: "02:00:00:00:a%d:01"}
      - {port: 2, mac: "02:00:00:00:a%d:02"}
      - {port: 3, mac: "02:00:00:00:a%d:03"}
`, s, s, 10+s, 2*s-1, s, s, s)
	}
	b.WriteString(extra)
	c, err := config.Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestINCTreeLeafSpine(t *testing.T) {
	c := leafSpine(t, "")
	tree, err := ComputeINCTree(c, Failures{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tree.Warnings) != 0 || !reflect.DeepEqual(tree.Leaves, []string{"leaf1", "leaf2", "leaf3"}) {
		t.Fatalf("leaves %v, warnings %q", tree.Leaves, tree.Warnings)
	}
	if want := []INCUpper{{"spine1", 4, 1}, {"spine2", 5, 3}}; !reflect.DeepEqual(tree.Uppers, want) {
		t.Errorf("uppers %+v, want %+v", tree.Uppers, want)
	}
	want := map[string]map[uint16]INCGroupEntry{
		// Leaves wait for their own members' ranks and are not roots,
		// except leaf3 for group 2, all of whose members it holds.
		"leaf1": {1: {Mask: 0b011}, 3: {Mask: 0b001}},
		"leaf2": {1: {Mask: 0b100}, 3: {Mask: 0b010}},
		"leaf3": {2: {Mask: 0b1010000, Root: true}, 3: {Mask: 0b100}},
		// Spines wait for one bit per leaf of the group: leaf L has rank L-1.
		"spine1": {1: {Mask: 0b011, Root: true}, 3: {Mask: 0b111, Root: true}},
		"spine2": {1: {Mask: 0b011, Root: true}, 3: {Mask: 0b111, Root: true}},
	}
	for sw, groups := range want {
		if got := tree.Switch(sw).Groups; !reflect.DeepEqual(got, groups) {
			t.Errorf("%s groups %v, want %v", sw, got, groups)
		}
	}
	for _, sp := range []string{"spine1", "spine2"} {
		if got := tree.Switch(sp).Children; !reflect.DeepEqual(got, map[uint16]uint8{1: 0, 2: 1, 3: 2}) {
			t.Errorf("%s child ports %v", sp, got)
		}
	}
	up := tree.Switch("leaf2").Up
	if up[4].Port != 9 || up[4].DstMAC.String() != "02:00:00:00:a1:02" || up[5].Port != 10 || up[5].SrcMAC.String() != "02:00:00:00:02:0a" {
		t.Errorf("leaf2 up links %+v", up)
	}
	if err := incroute.Check(tree.Table, []incroute.Hop{{ID: 4, Weight: 1}, {ID: 5, Weight: 3}}); err != nil {
		t.Errorf("table: %v", err)
	}
	if cnt := incroute.Counts(tree.Table); cnt[4] != 64 || cnt[5] != 192 {
		t.Errorf("bucket counts %v, want 64 and 192 (weights 1:3 of 256)", cnt)
	}
	if tree.Members[netip.MustParseAddr("10.0.2.2")] != "leaf2" {
		t.Errorf("members %v", tree.Members)
	}
}

// TestINCTreeFailures: a failed link or switch takes its upper switch out
// of every leaf's table (path consistency: one table for all leaves), and
// only that switch's buckets move.
func TestINCTreeFailures(t *testing.T) {
	c := leafSpine(t, "")
	before, err := ComputeINCTree(c, Failures{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		f      Failures
		uppers []string
		warn   string
	}{
		{"link leaf2-spine1 (leaf end)", Failures{Links: map[config.PeerPort]bool{{Switch: "leaf2", Port: 9}: true}}, []string{"spine2"}, ""},
		{"link leaf3-spine2 (spine end)", Failures{Links: map[config.PeerPort]bool{{Switch: "spine2", Port: 3}: true}}, []string{"spine1"}, ""},
		{"switch spine2", Failures{Switches: map[string]bool{"spine2": true}}, []string{"spine1"}, ""},
		{"both spines", Failures{Switches: map[string]bool{"spine1": true, "spine2": true}}, nil, "no live upper switch"},
		{"a leaf", Failures{Switches: map[string]bool{"leaf1": true}}, nil, "leaf leaf1 has failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			after, err := ComputeINCTree(c, tc.f, before.Table)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, u := range after.Uppers {
				names = append(names, u.Name)
			}
			if !reflect.DeepEqual(names, tc.uppers) {
				t.Fatalf("uppers %v, want %v", names, tc.uppers)
			}
			if tc.warn != "" {
				if len(after.Warnings) != 1 || !strings.Contains(after.Warnings[0], tc.warn) || after.Table != nil {
					t.Errorf("warnings %q (want %q), table %v", after.Warnings, tc.warn, after.Table)
				}
				// Nothing of the groups spanning leaves is installed; leaf3's
				// own group 2 still is (unless leaf3 is the failed one).
				for sw, part := range after.Switches {
					if _, ok := part.Groups[1]; ok || len(part.Children) > 0 || len(part.Up) > 0 {
						t.Errorf("%s still holds spanning groups: %+v", sw, part)
					}
				}
				if g := after.Switch("leaf3").Groups[2]; !g.Root {
					t.Errorf("leaf3 lost group 2: %+v", after.Switch("leaf3"))
				}
				return
			}
			// The surviving upper switch keeps its buckets and takes the
			// other's: exactly the lost switch's buckets moved.
			survivor := after.Uppers[0].ID
			moved := incroute.Moved(before.Table, after.Table)
			if lost := 256 - incroute.Counts(before.Table)[survivor]; moved != lost {
				t.Errorf("%d buckets moved, want %d (the failed switch's)", moved, lost)
			}
			for b, id := range before.Table {
				if id == survivor && after.Table[b] != survivor {
					t.Errorf("bucket %d of the survivor moved", b)
				}
			}
			for _, sp := range []string{"spine1", "spine2"} {
				if part := after.Switch(sp); part != nil && sp != after.Uppers[0].Name && (len(part.Groups) > 0 || len(part.Children) > 0) {
					t.Errorf("%s is out but still aggregates: %+v", sp, part)
				}
			}
		})
	}
	// The link comes back: the table returns to both spines in proportion.
	down, _ := ComputeINCTree(c, Failures{Links: map[config.PeerPort]bool{{Switch: "leaf2", Port: 9}: true}}, before.Table)
	up, err := ComputeINCTree(c, Failures{}, down.Table)
	if err != nil {
		t.Fatal(err)
	}
	if cnt := incroute.Counts(up.Table); cnt[4] != 64 || cnt[5] != 192 || incroute.Moved(down.Table, up.Table) != 64 {
		t.Errorf("after repair: counts %v, %d moved", cnt, incroute.Moved(down.Table, up.Table))
	}
}

func TestINCTreeCases(t *testing.T) {
	// A group of one switch only: no upper switch needed, no table.
	c := leafSpine(t, "")
	c.INC.Groups = c.INC.Groups[1:2]
	tree, err := ComputeINCTree(c, Failures{}, nil)
	if err != nil || tree.Table != nil || len(tree.Uppers) != 0 || len(tree.Switches) != 1 {
		t.Errorf("one-leaf group: %+v, %v", tree, err)
	}
	// No groups: nothing.
	c.INC.Groups = nil
	if tree, err := ComputeINCTree(c, Failures{}, nil); err != nil || len(tree.Switches) != 0 {
		t.Errorf("no groups: %+v, %v", tree, err)
	}
	// A capacity of 0 takes a spine out.
	c = leafSpine(t, "")
	c.Switch("spine1").INCCapacity = 0
	if tree, err := ComputeINCTree(c, Failures{}, nil); err != nil || len(tree.Uppers) != 1 || tree.Uppers[0].Name != "spine2" {
		t.Errorf("capacity 0: %+v, %v", tree.Uppers, err)
	}
	// A leaf with its own next_hops contradicts the tree.
	c = leafSpine(t, "")
	c.Switch("leaf1").INC = &config.INC{Buckets: 256, NextHops: []config.INCNextHop{{Port: 9, MAC: c.Switch("leaf1").Port(9).MAC, Weight: 1}}}
	if _, err := ComputeINCTree(c, Failures{}, nil); err == nil || !strings.Contains(err.Error(), "leaf1: inc.next_hops given") {
		t.Errorf("leaf with next_hops: %v", err)
	}
	// A link without MACs is not usable.
	c = leafSpine(t, "")
	c.Switch("spine2").Port(3).MAC = nil
	if tree, err := ComputeINCTree(c, Failures{}, nil); err != nil || len(tree.Uppers) != 1 || tree.Uppers[0].Name != "spine1" {
		t.Errorf("link without MAC: %+v, %v", tree.Uppers, err)
	}
}

// TestDesiredINCTree: the tree's entries on a leaf and a spine; the INC
// flag of a connection stays only on its sender's leaf.
func TestDesiredINCTree(t *testing.T) {
	info := testInfo(t)
	c := leafSpine(t, "")
	tree, err := ComputeINCTree(c, Failures{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := conn("10.0.1.2", 5000, 0x100)
	w.Flags, w.INCGroup, w.WorkerRank = p4src.ConnFlagIncUplink|p4src.ConnFlagCNPTarget, 1, 1
	for _, tc := range []struct {
		sw                        string
		groups, children, buckets int
		flags                     uint64
		bucketPorts               map[uint64]bool
	}{
		{"leaf1", 2, 0, 256, uint64(w.Flags), map[uint64]bool{9: true, 10: true}},
		{"spine1", 2, 3, 0, p4src.ConnFlagCNPTarget, nil},
	} {
		res, err := Desired(info, Input{Config: c, Switch: c.Switch(tc.sw), Connections: []Connection{w}, INCTree: tree})
		if err != nil {
			t.Fatal(err)
		}
		count := func(table string) int {
			id, _ := info.TableID(table)
			return res.State.CountByPrefix(TablePrefix(id))
		}
		if count(TableINCGroup) != tc.groups || count(TableINCChildPort) != tc.children || count(TableINCRoute) != tc.buckets {
			t.Errorf("%s: inc_group %d, inc_child_port %d, inc_route %d; want %d %d %d", tc.sw,
				count(TableINCGroup), count(TableINCChildPort), count(TableINCRoute), tc.groups, tc.children, tc.buckets)
		}
		ports := map[uint64]bool{}
		conns := 0
		for _, e := range res.State.Entries() {
			te := e.Entity.GetTableEntry()
			switch info.TableName(te.GetTableId()) {
			case TableRDMAConnection:
				conns++
				if f, _ := p4rt.DecodeUint(te.GetAction().GetAction().GetParams()[1].GetValue()); f != tc.flags {
					t.Errorf("%s: connection flags %#x, want %#x", tc.sw, f, tc.flags)
				}
			case TableINCRoute:
				p, _ := p4rt.DecodeUint(te.GetAction().GetAction().GetParams()[0].GetValue())
				ports[p] = true
			}
		}
		if conns != 1 {
			t.Errorf("%s: %d connections", tc.sw, conns)
		}
		if tc.bucketPorts != nil && !reflect.DeepEqual(ports, tc.bucketPorts) {
			t.Errorf("%s: inc_route ports %v, want %v", tc.sw, ports, tc.bucketPorts)
		}
		if tc.buckets > 0 && (len(res.INC) != 256 || res.INC[0] != 9 && res.INC[0] != 10) {
			t.Errorf("%s: result table %v", tc.sw, res.INC)
		}
	}
}

func TestCheckINCMembership(t *testing.T) {
	c := leafSpine(t, "")
	for _, tc := range []struct {
		name  string
		ip    string
		flags uint8
		group uint16
		rank  uint8
		want  string
	}{
		{"member", "10.0.2.1", p4src.ConnFlagIncUplink, 1, 2, ""},
		{"member of another group", "10.0.1.1", p4src.ConnFlagIncUplink, 3, 0, ""},
		{"no INC flag: nothing claimed", "10.9.9.9", p4src.ConnFlagCNPTarget, 7, 31, ""},
		{"unknown group", "10.0.2.1", p4src.ConnFlagIncUplink, 7, 2, "INC group 7 is not configured (inc.groups)"},
		{"not a member", "10.0.3.1", p4src.ConnFlagIncUplink, 1, 2, "10.0.3.1 is not a member of INC group 1"},
		{"wrong rank", "10.0.2.1", p4src.ConnFlagIncUplink, 1, 31, "10.0.2.1 is rank 2 in INC group 1, not rank 31"},
	} {
		cn := conn(tc.ip, 5000, 1)
		cn.Flags, cn.INCGroup, cn.WorkerRank = tc.flags, tc.group, tc.rank
		err := CheckINCMembership(c, cn)
		if (tc.want == "") != (err == nil) || err != nil && err.Error() != tc.want {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	// Desired does not aggregate a connection whose claim the config does
	// not back (a state file from an older config): INC flag cleared.
	tree, err := ComputeINCTree(c, Failures{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	info := testInfo(t)
	bad := conn("10.0.2.1", 5000, 1)
	bad.Flags, bad.INCGroup, bad.WorkerRank = p4src.ConnFlagIncUplink, 1, 31
	res, err := Desired(info, Input{Config: c, Switch: c.Switch("leaf2"), Connections: []Connection{bad}, INCTree: tree})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res.State.Entries() {
		if te := e.Entity.GetTableEntry(); info.TableName(te.GetTableId()) == TableRDMAConnection {
			if f, _ := p4rt.DecodeUint(te.GetAction().GetAction().GetParams()[1].GetValue()); f != 0 {
				t.Errorf("connection flags %#x, want the INC flag cleared", f)
			}
		}
	}
}
