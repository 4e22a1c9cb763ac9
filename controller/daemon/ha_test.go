package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/controller/fabric"
	"github.com/fastcnp/fastcnp/internal/etcdtest"
	"github.com/fastcnp/fastcnp/p4src"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"github.com/fastcnp/fastcnp/wire"
)

const haPrefix = "/fastcnp-test/"

// haSetup is an etcd cluster, two switches and a config in HA mode.
type haSetup struct {
	etcd   *etcdtest.Cluster
	cli    *clientv3.Client
	s1, s2 *testSwitch
	cfg    *config.Config
}

func newHASetup(t *testing.T) *haSetup {
	t.Helper()
	c := etcdtest.Start(t, etcdtest.Options{})
	s1, s2, state := twoSwitches(t)
	cfg := testConfig(t, state, s1, s2)
	cfg.HA = &config.HA{Etcd: config.Etcd{Endpoints: c.Endpoints, Prefix: haPrefix, LeaseTTL: config.DefaultEtcdLeaseTTL}}
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return &haSetup{etcd: c, cli: cli, s1: s1, s2: s2, cfg: cfg}
}

func (hs *haSetup) switches() map[string]*testSwitch {
	return map[string]*testSwitch{"s1": hs.s1, "s2": hs.s2}
}

func (hs *haSetup) start(t *testing.T, instance string) *testDaemon {
	t.Helper()
	return startDaemon(t, hs.cfg, func(o *Options) { o.Instance = instance })
}

// leads reports whether d leads: its term loaded the state and it is the
// primary of every switch.
func leads(d *Daemon) bool {
	if d.ha.current() == nil || !d.writer.Load() {
		return false
	}
	for _, st := range d.Switches() {
		if !st.Primary {
			return false
		}
	}
	return true
}

// waitLeads waits until d leads and every switch holds its desired state.
func (hs *haSetup) waitLeads(t *testing.T, d *Daemon) {
	t.Helper()
	waitFor(t, d.ha.instance+" leads", syncTimeout, func() bool { return leads(d) })
	waitInSync(t, d, hs.switches())
}

// etcdConns returns the connections stored in etcd, by key.
func (hs *haSetup) etcdConns(t *testing.T) map[string]fileConnection {
	t.Helper()
	resp, err := hs.cli.Get(context.Background(), haPrefix+"conns/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]fileConnection{}
	for _, kv := range resp.Kvs {
		var fc fileConnection
		if err := json.Unmarshal(kv.Value, &fc); err != nil {
			t.Fatalf("%s: %v", kv.Key, err)
		}
		out[string(kv.Key)] = fc
	}
	return out
}

// connIndexes returns the switch's rdma_connection entries as sender QPN by
// conn_index (what identifies an installed connection and its slot).
func connIndexes(t *testing.T, s *testSwitch) map[uint64]uint64 {
	t.Helper()
	out := map[uint64]uint64{}
	for _, e := range s.entries(p4src.TableRDMAConnection) {
		var idx, qpn uint64
		for _, p := range e.Action.Params {
			switch p.ID {
			case 1:
				qpn = p.Value
			case 3:
				idx = p.Value
			}
		}
		if _, dup := out[idx]; dup {
			t.Fatalf("conn_index %d installed twice", idx)
		}
		out[idx] = qpn
	}
	return out
}

func conn(ip string, sport uint16, rqpn, sqpn uint32) fabric.Connection {
	return fabric.Connection{ConnKey: fabric.ConnKey{SenderIP: netip.MustParseAddr(ip), UDPSrcPort: sport, ReceiverQPN: rqpn},
		SenderQPN: sqpn}
}

// TestHAFailover: two fastcnpd instances on etcd. The leader installs the
// switches and keeps connections (from the API and from announcements) and
// a port setting in etcd; when it goes, the other takes over with a higher
// epoch (so a higher election ID on every switch), finds everything in etcd,
// and the switches need no write at all: nothing was lost or duplicated.
// The leader goes gracefully (it resigns) or has its lease taken away in
// etcd while it runs (as when it is cut off from etcd): then it must stop
// writing, to etcd and to the switches, and follow.
func TestHAFailover(t *testing.T) {
	tests := []struct {
		name string
		// fault takes leadership away from a.
		fault func(t *testing.T, hs *haSetup, a *testDaemon)
		// reason is the end of a's term, as counted.
		reason string
	}{
		{"stop", func(t *testing.T, hs *haSetup, a *testDaemon) { a.stopNow() }, "stopped"},
		{"lease revoked", func(t *testing.T, hs *haSetup, a *testDaemon) {
			if _, err := hs.cli.Revoke(context.Background(), a.ha.current().session.Lease()); err != nil {
				t.Fatal(err)
			}
		}, "lease_lost"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHASetup(t)
			a := hs.start(t, "a")
			hs.waitLeads(t, a.Daemon)
			b := hs.start(t, "b")
			// b follows: no switch connection, no write, no change taken.
			ctx := context.Background()
			time.Sleep(100 * time.Millisecond)
			if b.ha.current() != nil || b.writer.Load() {
				t.Fatal("b leads while a does")
			}
			if _, err := b.AddConnection(ctx, conn("10.1.1.6", 1, 1, 1)); !errors.Is(err, ErrNotPrimary) {
				t.Fatalf("follower AddConnection: %v, want ErrNotPrimary", err)
			}

			// State on the leader: two API connections, one announced, a port setting.
			for _, c := range []fabric.Connection{conn("10.1.1.7", 100, 200, 300), conn("10.1.2.8", 101, 201, 301)} {
				if _, err := a.AddConnection(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
			if err := hs.s1.dp.Receive(ctx, announceFrame(t, wire.AnnounceUp, connSender, connSrcPort, connDestQP, nil), 1); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "announced connection installed", syncTimeout, func() bool {
				return hs.s2.count(p4src.TableRDMAConnection) == 3 && hs.s1.count(p4src.TableRDMAConnection) == 3
			})
			qth := uint64(qth120KiB)
			if _, err := a.SetPortSettings(ctx, "s1", 1, PortOverride{QthBytes: &qth}); err != nil {
				t.Fatal(err)
			}
			waitInSync(t, a.Daemon, hs.switches())
			inEtcd := hs.etcdConns(t)
			if len(inEtcd) != 3 {
				t.Fatalf("etcd holds %d connections, want 3: %v", len(inEtcd), inEtcd)
			}
			before := map[string]map[uint64]uint64{"s1": connIndexes(t, hs.s1), "s2": connIndexes(t, hs.s2)}
			aConns := a.Connections()
			aEpoch := a.ha.epoch.Load()
			oldTerm := a.ha.current()
			r := a.byName["s1"]
			r.mu.Lock()
			oldClient := r.client
			r.mu.Unlock()
			w1, w2 := hs.s1.writes.snapshot(), hs.s2.writes.snapshot()

			tc.fault(t, hs, a)
			hs.waitLeads(t, b.Daemon)
			bEpoch := b.ha.epoch.Load()
			if bEpoch <= aEpoch {
				t.Fatalf("b leads with epoch %d, not above a's %d", bEpoch, aEpoch)
			}
			// Nothing to repair: the switches held the new leader's desired state.
			for name, w := range map[string]map[uint64]map[p4v1.Update_Type]int{"s1": w1, "s2": w2} {
				s := hs.switches()[name]
				if got := s.writes.since(w); len(got) != 0 {
					t.Errorf("%s: %v updates written across the takeover, want none", name, got)
				}
				if got := connIndexes(t, s); !reflect.DeepEqual(got, before[name]) {
					t.Errorf("%s connections after the takeover %v, before %v", name, got, before[name])
				}
			}
			if got := b.Connections(); !sameConns(got, aConns) {
				t.Errorf("b's connections %v, a's %v", got, aConns)
			}
			if q, _ := hs.s1.param(p4src.TablePortConfig, 1, paramQth); q != qth120KiB {
				t.Errorf("s1 port 1 qth %d after the takeover, want the API's %d", q, qth120KiB)
			}

			// a's term ended for the right reason, and a writes nothing more.
			waitFor(t, "a's term ended", syncTimeout, func() bool {
				return testutil.ToFloat64(a.ha.m.ends.WithLabelValues(tc.reason)) == 1
			})
			if tc.reason != "stopped" {
				if _, err := a.AddConnection(ctx, conn("10.1.1.9", 1, 1, 1)); !errors.Is(err, ErrNotPrimary) {
					t.Errorf("deposed leader's AddConnection: %v, want ErrNotPrimary", err)
				}
			}
			// Its switch writes stop at its fence (p4rt's write guard), before
			// the switch would even be asked.
			if err := oldClient.Write(ctx, []*p4v1.Update{{Type: p4v1.Update_INSERT}}); !errors.Is(err, ErrNotPrimary) {
				t.Errorf("a switch write of the old term: %v, want the fence's ErrNotPrimary", err)
			}
			// Its old term's fence holds in etcd: a write under it changes
			// nothing (through a's own client while a still runs).
			k := haPrefix + "conns/fenced"
			if tc.reason != "stopped" {
				if err := a.ha.commit(oldTerm, []clientv3.Op{clientv3.OpPut(k, "x")}); !errors.Is(err, errDeposed) {
					t.Errorf("a's write under its old term: %v, want errDeposed", err)
				}
			}
			tr, err := hs.cli.Txn(ctx).If(oldTerm.leaderCmp()).Then(clientv3.OpPut(k, "x")).Commit()
			if err != nil || tr.Succeeded {
				t.Errorf("a write fenced on the old term's leader key: succeeded %v, %v", tr != nil && tr.Succeeded, err)
			}
			if resp, err := hs.cli.Get(ctx, k); err != nil || len(resp.Kvs) != 0 {
				t.Errorf("the old term's write landed: %v %v", resp, err)
			}

			// The new leader takes changes, into etcd and onto the switches.
			if _, err := b.AddConnection(ctx, conn("10.1.1.10", 102, 202, 302)); err != nil {
				t.Fatal(err)
			}
			if n := len(hs.etcdConns(t)); n != 4 {
				t.Errorf("etcd holds %d connections after b's change, want 4", n)
			}
			wantID := uint64(10) + bEpoch // election_id 10 in testYAML
			if w := hs.s1.writes.snapshot()[wantID]; w[p4v1.Update_INSERT] != 1 {
				t.Errorf("s1 writes by the new leader's election ID %d: %v", wantID, w)
			}
		})
	}
}

// sameConns compares two connection lists by what the switches get (the
// refresh times aside).
func sameConns(a, b []fabric.Connection) bool {
	norm := func(cs []fabric.Connection) []string {
		var out []string
		for _, c := range cs {
			c.LastSeen = time.Time{}
			out = append(out, fmt.Sprintf("%+v", c))
		}
		sort.Strings(out)
		return out
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

// TestHAEpochFollowsSwitch: the epoch never goes backwards, even when etcd
// lost it (restored from an old backup, or wiped): the switch remembers the
// highest election ID it saw and makes nobody primary below it, so the new
// leader's client raises its ID past it, and the leader raises the epoch in
// etcd to match, so that the next leader outranks it in turn.
func TestHAEpochFollowsSwitch(t *testing.T) {
	hs := newHASetup(t)
	a := hs.start(t, "a")
	hs.waitLeads(t, a.Daemon)
	a.stopNow()
	b := hs.start(t, "b")
	hs.waitLeads(t, b.Daemon)
	if e := b.ha.epoch.Load(); e != 2 {
		t.Fatalf("b's epoch %d, want 2", e)
	}
	ctx := context.Background()
	if _, err := hs.cli.Delete(ctx, haPrefix+"epoch"); err != nil {
		t.Fatal(err)
	}
	b.stopNow()
	// What a wrote with epoch 1 (ID 11), before c gets epoch 1 again.
	byA := []map[p4v1.Update_Type]int{hs.s1.writes.snapshot()[11], hs.s2.writes.snapshot()[11]}
	c := hs.start(t, "c")
	hs.waitLeads(t, c.Daemon)
	// c started at epoch 1 (ID 11, below b's 12): each switch answered "no
	// primary, highest 12", and c's client took over with 12 + its 11 = 23,
	// epoch 13.
	waitFor(t, "epoch raised in etcd", syncTimeout, func() bool {
		resp, err := hs.cli.Get(ctx, haPrefix+"epoch")
		return err == nil && len(resp.Kvs) == 1 && string(resp.Kvs[0].Value) == "13"
	})
	c.stopNow()
	d := hs.start(t, "d")
	hs.waitLeads(t, d.Daemon)
	if e := d.ha.epoch.Load(); e != 14 {
		t.Errorf("d's epoch %d, want 14 (above the ID the switch last took, 23 = 10 + 13)", e)
	}
	// d was made primary with its own ID 24, no takeover needed, and had
	// nothing to repair.
	for _, s := range []*testSwitch{hs.s1, hs.s2} {
		if w := s.writes.snapshot(); len(w[24]) != 0 {
			t.Errorf("switch %d: d wrote %v, want nothing", s.deviceID, w[24])
		}
	}
	if n := testutil.ToFloat64(d.ha.m.terms); n != 1 {
		t.Errorf("d's terms %v", n)
	}
	for i, s := range []*testSwitch{hs.s1, hs.s2} {
		if got := s.writes.snapshot()[11]; !reflect.DeepEqual(got, byA[i]) {
			t.Errorf("switch %d: writes under election ID 11 %v, a's alone were %v: c wrote with its stale ID", s.deviceID, got, byA[i])
		}
	}
}

// TestHAWrites: connection changes reach etcd as the last change of each
// connection (etcd refuses a transaction that names a key twice), in
// transactions of at most maxTxnOps, all under the term's fence.
func TestHAWrites(t *testing.T) {
	hs := newHASetup(t)
	a := hs.start(t, "a")
	hs.waitLeads(t, a.Daemon)
	put := func(i int) logRecord {
		c := conn("10.1.1.5", uint16(i), 7, 8)
		return putRecord(c)
	}
	del := func(i int) logRecord { return deleteRecord(conn("10.1.1.5", uint16(i), 7, 8).ConnKey) }
	many := make([]logRecord, 0, 3*maxTxnOps+5)
	for i := range 3*maxTxnOps + 5 {
		many = append(many, put(1000+i))
	}
	tests := []struct {
		name string
		recs []logRecord
		want map[uint16]bool // sport -> present
	}{
		{"put then delete", []logRecord{put(1), del(1)}, map[uint16]bool{1: false}},
		{"delete then put", []logRecord{del(2), put(2)}, map[uint16]bool{2: true}},
		{"put twice", []logRecord{put(3), put(3), put(4)}, map[uint16]bool{3: true, 4: true}},
		{"beyond one transaction", many, map[uint16]bool{1000: true, 1000 + 3*maxTxnOps + 4: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a.mu.Lock()
			err := a.ha.writeLocked(tc.recs)
			a.mu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			got := hs.etcdConns(t)
			for sport, present := range tc.want {
				k := fmt.Sprintf("%sconns/10.1.1.5/%d/7", haPrefix, sport)
				if _, ok := got[k]; ok != present {
					t.Errorf("%s present %v, want %v", k, ok, present)
				}
			}
		})
	}
	if n := len(hs.etcdConns(t)); n != 3+3*maxTxnOps+5 {
		t.Errorf("%d connections in etcd, want %d", n, 3+3*maxTxnOps+5)
	}
}

// TestHAFollowerAlone: an instance that cannot reach etcd never leads, so it
// never touches a switch.
func TestHAFollowerAlone(t *testing.T) {
	etcdtest.Require(t)
	s1, s2, state := twoSwitches(t)
	cfg := testConfig(t, state, s1, s2)
	cfg.HA = &config.HA{Etcd: config.Etcd{Endpoints: []string{"http://127.0.0.1:1"}, Prefix: haPrefix,
		LeaseTTL: config.DefaultEtcdLeaseTTL}}
	d := startDaemon(t, cfg, nil)
	waitFor(t, "two failed campaigns", syncTimeout, func() bool {
		return testutil.ToFloat64(d.ha.m.errs.WithLabelValues("campaign")) >= 2
	})
	if d.ha.current() != nil || d.writer.Load() {
		t.Fatal("leads without etcd")
	}
	for _, s := range []*testSwitch{s1, s2} {
		if n := len(s.writes.snapshot()); n != 0 || s.writes.pushes() != 0 {
			t.Errorf("switch %d written without etcd", s.deviceID)
		}
	}
}

// TestHAEtcdDown: without etcd nobody leads: the leader's renewals fail and
// its lease lapses by its own clock, so it stops (its switches keep their
// state: nothing is written, nothing removed); once etcd is back an instance
// leads again with the state as it was, and the switches need no write.
func TestHAEtcdDown(t *testing.T) {
	hs := newHASetup(t)
	a := hs.start(t, "a")
	hs.waitLeads(t, a.Daemon)
	b := hs.start(t, "b")
	ctx := context.Background()
	if _, err := a.AddConnection(ctx, conn("10.1.1.7", 100, 200, 300)); err != nil {
		t.Fatal(err)
	}
	waitInSync(t, a.Daemon, hs.switches())
	w1, w2 := hs.s1.writes.snapshot(), hs.s2.writes.snapshot()
	before := connIndexes(t, hs.s1)
	hs.etcd.Kill(0)
	waitFor(t, "a's lease lapsed", syncTimeout, func() bool {
		return testutil.ToFloat64(a.ha.m.ends.WithLabelValues("lease_lapsed")) == 1
	})
	if a.writer.Load() || b.writer.Load() {
		t.Fatal("an instance writes without etcd")
	}
	if _, err := a.AddConnection(ctx, conn("10.1.1.8", 1, 1, 1)); !errors.Is(err, ErrNotPrimary) {
		t.Errorf("AddConnection without etcd: %v, want ErrNotPrimary", err)
	}
	if err := hs.etcd.Restart(0); err != nil {
		t.Fatal(err)
	}
	var leader *testDaemon
	waitFor(t, "a leader again", syncTimeout, func() bool {
		for _, d := range []*testDaemon{a, b} {
			if leads(d.Daemon) {
				leader = d
				return true
			}
		}
		return false
	})
	hs.waitLeads(t, leader.Daemon)
	for name, w := range map[string]map[uint64]map[p4v1.Update_Type]int{"s1": w1, "s2": w2} {
		if got := hs.switches()[name].writes.since(w); len(got) != 0 {
			t.Errorf("%s: %v updates written across the outage, want none", name, got)
		}
	}
	if got := connIndexes(t, hs.s1); !reflect.DeepEqual(got, before) {
		t.Errorf("s1 connections after the outage %v, before %v", got, before)
	}
}
