package daemon

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/internal/etcdtest"
	"github.com/fastcnp/fastcnp/p4src"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
)

// incTreeYAML is two leaves (workers behind port 1) and two spines, each
// leaf linked to spine1 on its port 9 and to spine2 on port 10; group 3
// spans both leaves.
const incTreeYAML = `
api: {auth: {insecure: true}}
state_file: %s
metrics: {listen: ""}
inc:
  groups:
    - {id: 3, members: [{host: 10.0.1.1, rank: 0}, {host: 10.0.2.1, rank: 1}]}
switches:
  - {name: leaf1, address: %s, device_id: 1, tls: {insecure: true}, ports: [
      {port: 1, mac: "02:00:00:00:01:01", subnets: [10.0.1.0/24]},
      {port: 9, mac: "02:00:00:00:01:09", peer: {switch: spine1, port: 1}},
      {port: 10, mac: "02:00:00:00:01:0a", peer: {switch: spine2, port: 1}}]}
  - {name: leaf2, address: %s, device_id: 2, tls: {insecure: true}, ports: [
      {port: 1, mac: "02:00:00:00:02:01", subnets: [10.0.2.0/24]},
      {port: 9, mac: "02:00:00:00:02:09", peer: {switch: spine1, port: 2}},
      {port: 10, mac: "02:00:00:00:02:0a", peer: {switch: spine2, port: 2}}]}
  - {name: spine1, address: %s, device_id: 3, tls: {insecure: true}, ports: [
      {port: 1, mac: "02:00:00:00:a1:01"}, {port: 2, mac: "02:00:00:00:a1:02"}]}
  - {name: spine2, address: %s, device_id: 4, tls: {insecure: true}, ports: [
      {port: 1, mac: "02:00:00:00:a2:01"}, {port: 2, mac: "02:00:00:00:a2:02"}]}
`

// TestINCTreeLinkState: fastcnpd installs the INC tree of a leaf-spine
// fabric (leaves send partials up over both spines, the spines aggregate
// them), and a link marked down takes its spine out of every leaf's table,
// moving only that spine's buckets; marked up again, it comes back.
func TestINCTreeLinkState(t *testing.T) {
	sw := map[string]*testSwitch{}
	for i, n := range []string{"leaf1", "leaf2", "spine1", "spine2"} {
		sw[n] = startSwitch(t, "", uint64(i+1))
	}
	state := filepath.Join(t.TempDir(), "state.json")
	cfg, err := config.Parse([]byte(fmt.Sprintf(incTreeYAML, state, sw["leaf1"].addr, sw["leaf2"].addr, sw["spine1"].addr, sw["spine2"].addr)))
	if err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, cfg, nil)
	waitInSync(t, d.Daemon, sw)
	routePorts := func(s *testSwitch) map[uint64]int {
		out := map[uint64]int{}
		for _, e := range s.entries(p4src.TableIncRoute) {
			out[e.Action.Params[0].Value]++
		}
		return out
	}
	check := func(when string, leafPorts map[uint64]int, spine1 bool) {
		t.Helper()
		for _, l := range []string{"leaf1", "leaf2"} {
			if got := routePorts(sw[l]); fmt.Sprint(got) != fmt.Sprint(leafPorts) {
				t.Errorf("%s: %s inc_route ports %v, want %v", when, l, got, leafPorts)
			}
			if m, ok := sw[l].param(p4src.TableIncGroup, 3, 2); !ok || m != 0 {
				t.Errorf("%s: %s group 3 root %d (%v), want a leaf (0)", when, l, m, ok)
			}
		}
		for name, on := range map[string]bool{"spine1": spine1, "spine2": true} {
			s := sw[name]
			mask, ok := s.param(p4src.TableIncGroup, 3, 1)
			if on != ok || on && (mask != 0b11 || s.count(p4src.TableIncChildPort) != 2) {
				t.Errorf("%s: %s group 3 mask %b (%v), %d child ports; want aggregating %v", when, name, mask, ok,
					s.count(p4src.TableIncChildPort), on)
			}
		}
	}
	check("at start", map[uint64]int{9: 128, 10: 128}, true)

	ctx := context.Background()
	moved, err := d.SetLinkState(ctx, "leaf2", 9, true)
	if err != nil || moved != 128 {
		t.Fatalf("link leaf2-spine1 down: %d moved, %v; want spine1's 128", moved, err)
	}
	waitInSync(t, d.Daemon, sw)
	check("link down", map[uint64]int{10: 256}, false)
	if got := testutil.ToFloat64(d.metrics.incMoved); got != 128 {
		t.Errorf("fastcnp_inc_buckets_moved_total = %v", got)
	}
	if got := testutil.ToFloat64(d.metrics.incUppers); got != 1 {
		t.Errorf("fastcnp_inc_upper_switches = %v", got)
	}
	// Up from the other end of the link.
	if moved, err = d.SetLinkState(ctx, "spine1", 2, false); err != nil || moved != 128 {
		t.Fatalf("link up: %d moved, %v", moved, err)
	}
	waitInSync(t, d.Daemon, sw)
	check("link up", map[uint64]int{9: 128, 10: 128}, true)
	// A whole switch.
	if moved, err = d.SetLinkState(ctx, "spine2", 0, true); err != nil || moved != 128 {
		t.Fatalf("spine2 down: %d moved, %v", moved, err)
	}
	tree, fails := d.INCTree()
	if len(tree.Uppers) != 1 || tree.Uppers[0].Name != "spine1" || !fails.Switches["spine2"] {
		t.Errorf("tree uppers %+v, failures %+v", tree.Uppers, fails)
	}

	for _, tc := range []struct {
		sw   string
		port uint16
		want error
		msg  string
	}{
		{"leaf9", 0, ErrUnknownSwitch, ""},
		{"leaf1", 7, ErrUnknownPort, ""},
		{"leaf1", 1, ErrInvalid, "leaf1 port 1 leads to no switch"},
	} {
		if _, err := d.SetLinkState(ctx, tc.sw, tc.port, true); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("SetLinkState(%s, %d): %v, want %v %q", tc.sw, tc.port, err, tc.want, tc.msg)
		}
	}
}

// TestINCTreeTableAcrossRestart: after a failure and a repair the shared
// table is not the one a fresh build makes; a restarted fastcnpd continues
// from the table the leaves hold, so the restart moves no bucket.
func TestINCTreeTableAcrossRestart(t *testing.T) {
	sw := map[string]*testSwitch{}
	for i, n := range []string{"leaf1", "leaf2", "spine1", "spine2"} {
		sw[n] = startSwitch(t, "", uint64(i+1))
	}
	state := filepath.Join(t.TempDir(), "state.json")
	src := fmt.Sprintf(incTreeYAML, state, sw["leaf1"].addr, sw["leaf2"].addr, sw["spine1"].addr, sw["spine2"].addr)
	// Weights 1:2 so that the removal and the return of spine1 leave a
	// table other than Build's.
	src = strings.Replace(src, `{name: spine2, address:`, `{name: spine2, inc: {capacity: 2}, address:`, 1)
	cfg, err := config.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, cfg, nil)
	waitInSync(t, d.Daemon, sw)
	built, _ := d.INCTree()
	ctx := context.Background()
	if _, err := d.SetLinkState(ctx, "spine1", 0, true); err != nil {
		t.Fatal(err)
	}
	if _, err := d.SetLinkState(ctx, "spine1", 0, false); err != nil {
		t.Fatal(err)
	}
	waitInSync(t, d.Daemon, sw)
	repaired, _ := d.INCTree()
	if slices.Equal(built.Table, repaired.Table) {
		t.Fatal("the repaired table equals the built one: the test proves nothing")
	}
	held := sw["leaf1"].entries(p4src.TableIncRoute)
	d.stopNow()

	before := map[string]map[uint64]map[p4v1.Update_Type]int{}
	for n, s := range sw {
		before[n] = s.writes.snapshot()
	}
	d2 := startDaemon(t, cfg, nil)
	waitInSync(t, d2.Daemon, sw)
	after, _ := d2.INCTree()
	if !slices.Equal(after.Table, repaired.Table) {
		t.Errorf("after the restart the shared table differs from the one the leaves held")
	}
	for n, s := range sw {
		if w := s.writes.since(before[n]); w[p4v1.Update_MODIFY]+w[p4v1.Update_INSERT]+w[p4v1.Update_DELETE] != 0 {
			t.Errorf("%s: the restart wrote %v", n, w)
		}
	}
	if got := sw["leaf1"].entries(p4src.TableIncRoute); len(got) != len(held) {
		t.Errorf("leaf1 holds %d buckets, had %d", len(got), len(held))
	}
}

// TestValidateConfigINCTree: config validation computes the INC tree: a leaf
// of a spanning group with its own next_hops is an error, a spanning group
// without an upper switch a warning.
func TestValidateConfigINCTree(t *testing.T) {
	base := fmt.Sprintf(incTreeYAML, "/tmp/state.json", "127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:4")
	for _, tc := range []struct {
		name, old, new string
		valid          bool
		want           string
	}{
		{"the tree", "", "", true, ""},
		{"a leaf with next_hops", `{name: leaf1, address: 127.0.0.1:1, device_id: 1, tls: {insecure: true}, ports: [`,
			`{name: leaf1, address: 127.0.0.1:1, device_id: 1, tls: {insecure: true}, inc: {next_hops: [{port: 9, mac: "02:00:00:00:a1:01", weight: 1}]}, ports: [`,
			false, "leaf1: inc.next_hops given, but it is a leaf of INC groups [3]"},
		{"no upper switch", `, peer: {switch: spine1, port: 1}`, ``, true,
			"no live upper switch has a live link to every one of them"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := base
			if tc.old != "" {
				src = strings.Replace(base, tc.old, tc.new, 1)
				if src == base {
					t.Fatalf("%q not in the config", tc.old)
				}
			}
			if tc.name == "no upper switch" { // leaf1 without links at all
				src = strings.Replace(src, `, peer: {switch: spine2, port: 1}`, ``, 1)
			}
			res := ValidateConfig("c.yaml", []byte(src))
			all := strings.Join(append(res.Errors, res.Warnings...), "\n")
			if res.Valid != tc.valid || tc.want != "" && !strings.Contains(all, tc.want) || tc.want == "" && all != "" {
				t.Errorf("valid %v, errors %q, warnings %q; want valid %v and %q", res.Valid, res.Errors, res.Warnings, tc.valid, tc.want)
			}
		})
	}
}

// TestINCLinkStateAcrossRestart: a link marked down is kept in the state
// file: a restarted fastcnpd keeps avoiding it (its spine stays out of the
// shared table and the restart writes nothing), and a failure the config
// does not have any more is dropped.
func TestINCLinkStateAcrossRestart(t *testing.T) {
	sw := map[string]*testSwitch{}
	for i, n := range []string{"leaf1", "leaf2", "spine1", "spine2"} {
		sw[n] = startSwitch(t, "", uint64(i+1))
	}
	state := filepath.Join(t.TempDir(), "state.json")
	src := fmt.Sprintf(incTreeYAML, state, sw["leaf1"].addr, sw["leaf2"].addr, sw["spine1"].addr, sw["spine2"].addr)
	cfg, err := config.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, cfg, nil)
	waitInSync(t, d.Daemon, sw)
	if _, err := d.SetLinkState(context.Background(), "leaf2", 9, true); err != nil {
		t.Fatal(err)
	}
	waitInSync(t, d.Daemon, sw)
	down, _ := d.INCTree()
	if len(down.Uppers) != 1 {
		t.Fatalf("with leaf2-spine1 down the tree has %d upper switches, want 1", len(down.Uppers))
	}
	d.stopNow()
	fs, err := loadStateFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if fs.INC == nil || len(fs.INC.DownLinks) != 1 || fs.INC.DownLinks[0] != (fileLinkEnd{Switch: "leaf2", Port: 9}) {
		t.Fatalf("state file INC = %+v, want the link at leaf2 port 9 down", fs.INC)
	}

	before := map[string]map[uint64]map[p4v1.Update_Type]int{}
	for n, s := range sw {
		before[n] = s.writes.snapshot()
	}
	d2 := startDaemon(t, cfg, nil)
	waitInSync(t, d2.Daemon, sw)
	after, f := d2.INCTree()
	if !f.Links[config.PeerPort{Switch: "leaf2", Port: 9}] || !slices.Equal(after.Table, down.Table) {
		t.Errorf("after the restart: failures %v, table equal %v; want the link down and the same table",
			f.Links, slices.Equal(after.Table, down.Table))
	}
	for n, s := range sw {
		if w := s.writes.since(before[n]); w[p4v1.Update_MODIFY]+w[p4v1.Update_INSERT]+w[p4v1.Update_DELETE] != 0 {
			t.Errorf("%s: the restart wrote %v", n, w)
		}
	}
	// Up again: the state file forgets it.
	if _, err := d2.SetLinkState(context.Background(), "spine1", 2, false); err != nil {
		t.Fatal(err)
	}
	waitInSync(t, d2.Daemon, sw)
	d2.stopNow()
	if fs, err = loadStateFile(state); err != nil || fs.INC != nil {
		t.Fatalf("after the link came up the state file holds INC %+v (%v), want none", fs.INC, err)
	}

	// A saved failure of a link the config lost is dropped.
	fs.INC = &fileINC{DownLinks: []fileLinkEnd{{Switch: "leaf2", Port: 9}}, DownSwitches: []string{"spine9"}}
	if err := saveStateFile(state, fs); err != nil {
		t.Fatal(err)
	}
	cfg3, err := config.Parse([]byte(strings.Replace(src, `, peer: {switch: spine1, port: 2}`, ``, 1)))
	if err != nil {
		t.Fatal(err)
	}
	d3 := startDaemon(t, cfg3, nil)
	if _, f := d3.INCTree(); len(f.Links)+len(f.Switches) != 0 {
		t.Errorf("failures %v %v restored, want none (neither is in the config)", f.Links, f.Switches)
	}
}

// TestINCLinkStateHA: in HA mode the leader keeps the INC tree's failures in
// etcd; the next leader avoids them from its first write.
func TestINCLinkStateHA(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	sw := map[string]*testSwitch{}
	for i, n := range []string{"leaf1", "leaf2", "spine1", "spine2"} {
		sw[n] = startSwitch(t, "", uint64(i+1))
	}
	state := filepath.Join(t.TempDir(), "state.json")
	cfg, err := config.Parse([]byte(fmt.Sprintf(incTreeYAML, state, sw["leaf1"].addr, sw["leaf2"].addr, sw["spine1"].addr, sw["spine2"].addr)))
	if err != nil {
		t.Fatal(err)
	}
	cfg.HA = &config.HA{Etcd: config.Etcd{Endpoints: c.Endpoints, Prefix: haPrefix, LeaseTTL: config.DefaultEtcdLeaseTTL}}
	start := func(instance string) *testDaemon {
		return startDaemon(t, cfg, func(o *Options) { o.Instance = instance })
	}
	waitLeads := func(d *Daemon) {
		waitFor(t, d.ha.instance+" leads", syncTimeout, func() bool { return leads(d) })
		waitInSync(t, d, sw)
	}
	a := start("a")
	waitLeads(a.Daemon)
	if _, err := a.SetLinkState(context.Background(), "spine1", 0, true); err != nil {
		t.Fatal(err)
	}
	waitInSync(t, a.Daemon, sw)
	down, _ := a.INCTree()
	b := start("b")
	a.stopNow()
	waitLeads(b.Daemon)
	got, f := b.INCTree()
	if !f.Switches["spine1"] || len(got.Uppers) != 1 || !slices.Equal(got.Table, down.Table) {
		t.Errorf("the next leader's tree: failures %v, %d upper switches, same table %v; want spine1 down, 1, true",
			f.Switches, len(got.Uppers), slices.Equal(got.Table, down.Table))
	}
	if n := len(sw["leaf1"].entries(p4src.TableIncRoute)); n == 0 {
		t.Fatal("leaf1 holds no inc_route entry")
	}
	for _, e := range sw["leaf1"].entries(p4src.TableIncRoute) {
		for _, p := range e.Action.Params {
			if p.ID == 1 && p.Value == 9 {
				t.Fatalf("leaf1 routes a bucket to spine1 (port 9) after the failover: %+v", e)
			}
		}
	}
}
