package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/fastcnp/fastcnp/controller/fabric"
	"github.com/fastcnp/fastcnp/controller/incroute"
	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"github.com/fastcnp/fastcnp/wire"
)

const (
	paramQth    = 2                // set_port_config.qth_bytes
	syncTimeout = 60 * time.Second // a guard against hangs on a loaded machine, not a timing assertion
	qth120KiB   = 120 * 1024
	defaultQth1 = 100_000
	connSender  = "10.1.1.5"
	spoofedIP   = "10.9.9.9"
	otherSubnet = "10.1.2.7"
	connSrcPort = 49152
	connDestQP  = 0x123
	connDestQP2 = 0x124
)

func twoSwitches(t *testing.T) (*testSwitch, *testSwitch, string) {
	return startSwitch(t, "", 1), startSwitch(t, "", 2), filepath.Join(t.TempDir(), "state.json")
}

// waitInSync waits until every switch holds its desired state and a sync
// has completed (so the writes that installed it have been answered).
func waitInSync(t *testing.T, d *Daemon, switches map[string]*testSwitch) {
	t.Helper()
	for name, s := range switches {
		waitFor(t, name+" in sync", syncTimeout, func() bool {
			st := d.byName[name].status()
			return st.Primary && st.Entries > 0 && syncs(d, name, "audit")+syncs(d, name, "install") > 0 &&
				inSync(t, d, name, s)
		})
	}
}

func updates(d *Daemon, sw, typ string) float64 {
	return testutil.ToFloat64(d.metrics.updates.WithLabelValues(sw, typ))
}

// syncs is the number of successful syncs of a kind ("install", "audit").
func syncs(d *Daemon, sw, kind string) float64 {
	return testutil.ToFloat64(d.metrics.syncs.WithLabelValues(sw, kind, "ok"))
}

func TestInstallAndSetThreshold(t *testing.T) {
	s1, s2, state := twoSwitches(t)
	d := startDaemon(t, testConfig(t, state, s1, s2), nil)
	waitInSync(t, d.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	for name, s := range map[string]*testSwitch{"s1": s1, "s2": s2} {
		if p := readBackPlan(t, d.Daemon, name, s); !p.Empty() {
			t.Errorf("%s: read back differs: %d/%d/%d", name, len(p.Insert), len(p.Modify), len(p.Delete))
		}
	}
	if q, _ := s1.param(p4src.TablePortConfig, 1, paramQth); q != defaultQth1 {
		t.Fatalf("s1 port 1 qth %d, want %d", q, defaultQth1)
	}
	qth := uint64(qth120KiB)
	modifies := updates(d.Daemon, "s1", "modify")
	pi, err := d.SetPortSettings(context.Background(), "s1", 1, PortOverride{QthBytes: &qth})
	if err != nil {
		t.Fatal(err)
	}
	if pi.Params.QthBytes != qth120KiB {
		t.Errorf("returned qth %d", pi.Params.QthBytes)
	}
	if q, _ := s1.param(p4src.TablePortConfig, 1, paramQth); q != qth120KiB {
		t.Errorf("s1 port 1 qth after set: %d, want %d", q, qth120KiB)
	}
	if got := updates(d.Daemon, "s1", "modify") - modifies; got != 1 {
		t.Errorf("%v modifies for one threshold change, want 1", got)
	}
	// Errors: unknown switch, unknown port, out of range, inconsistent RED.
	big, kmin := uint64(1)<<33, uint64(500_000)
	for _, tt := range []struct {
		sw   string
		port uint16
		o    PortOverride
		want error
	}{
		{"nope", 1, PortOverride{QthBytes: &qth}, ErrUnknownSwitch},
		{"s1", 9, PortOverride{QthBytes: &qth}, ErrUnknownPort},
		{"s1", 1, PortOverride{QthBytes: &big}, ErrInvalid},
		{"s1", 1, PortOverride{REDKminBytes: &kmin}, ErrInvalid},
	} {
		if _, err := d.SetPortSettings(context.Background(), tt.sw, tt.port, tt.o); !errors.Is(err, tt.want) {
			t.Errorf("%s/%d: %v, want %v", tt.sw, tt.port, err, tt.want)
		}
	}
}

// TestDriftRepaired: entries changed behind fastcnpd's back are found by the
// periodic audit and repaired with one write each, and later audits write
// nothing.
func TestDriftRepaired(t *testing.T) {
	s1, s2, state := twoSwitches(t)
	d := startDaemon(t, testConfig(t, state, s1, s2), func(o *Options) { o.AuditInterval = 100 * time.Millisecond })
	waitInSync(t, d.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})

	// Drift: an entry deleted, one modified, one extra, behind fastcnpd's back.
	before := s2.writes.snapshot()
	err := s2.dp.Exec(context.Background(), func(p *pipeline.Pipeline) error {
		es, err := p.ReadEntries(p4src.TableIPv4Route, nil)
		if err != nil {
			return err
		}
		if err := p.DeleteEntry(&es[0]); err != nil {
			return err
		}
		pc, err := p.ReadEntries(p4src.TablePortConfig, nil)
		if err != nil {
			return err
		}
		pc[0].Action.Params[1].Value = 1
		if err := p.ModifyEntry(&pc[0]); err != nil {
			return err
		}
		extra := es[1]
		extra.Match = []pipeline.FieldMatch{{FieldID: 1, Value: 0xC0A80000, PrefixLen: 16}}
		return p.InsertEntry(&extra)
	})
	if err != nil {
		t.Fatal(err)
	}
	// An audit reads the tables one by one, so the drift may land between
	// two reads and be repaired by two audits; either way each drifted
	// entry is repaired once.
	waitFor(t, "drift repaired", syncTimeout, func() bool {
		return testutil.ToFloat64(d.metrics.repaired.WithLabelValues("s2")) >= 3 && inSync(t, d.Daemon, "s2", s2)
	})
	// The fewest writes: the switch received exactly one update per drifted
	// entry, and two more audits write nothing.
	audits := syncs(d.Daemon, "s2", "audit")
	waitFor(t, "two more audits", syncTimeout, func() bool { return syncs(d.Daemon, "s2", "audit") >= audits+2 })
	if n := testutil.ToFloat64(d.metrics.repaired.WithLabelValues("s2")); n != 3 {
		t.Errorf("%v entries repaired, want 3", n)
	}
	want := map[p4v1.Update_Type]int{p4v1.Update_INSERT: 1, p4v1.Update_MODIFY: 1, p4v1.Update_DELETE: 1}
	if got := s2.writes.since(before); !reflect.DeepEqual(got, want) {
		t.Errorf("updates written to s2 to repair the drift: %v, want %v", got, want)
	}
	if p := readBackPlan(t, d.Daemon, "s2", s2); !p.Empty() {
		t.Errorf("s2 not repaired: %d/%d/%d", len(p.Insert), len(p.Modify), len(p.Delete))
	}
}

// TestSwitchRestartRepaired: a switch restart comes back empty; fastcnpd
// pushes the pipeline and everything, including a change made while the
// switch was down. The periodic audit is off: reconnection alone does it.
func TestSwitchRestartRepaired(t *testing.T) {
	s1, s2, state := twoSwitches(t)
	d := startDaemon(t, testConfig(t, state, s1, s2), nil)
	waitInSync(t, d.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	s1.stop()
	qth := uint64(qth120KiB)
	if _, err := d.SetPortSettings(context.Background(), "s1", 1, PortOverride{QthBytes: &qth}); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("change while the switch is down: %v, want ErrNotInstalled", err)
	}
	s1 = startSwitch(t, s1.addr, s1.deviceID)
	if n := s1.count(p4src.TablePortConfig); n != 0 {
		t.Fatalf("restarted switch has %d port configs", n)
	}
	waitInSync(t, d.Daemon, map[string]*testSwitch{"s1": s1})
	if p := readBackPlan(t, d.Daemon, "s1", s1); !p.Empty() {
		t.Errorf("s1 after restart: %d/%d/%d", len(p.Insert), len(p.Modify), len(p.Delete))
	}
	if q, _ := s1.param(p4src.TablePortConfig, 1, paramQth); q != qth120KiB {
		t.Errorf("s1 port 1 qth %d after the restart, want the change made while it was down (%d)", q, qth120KiB)
	}
}

// TestReconnectRepairs: the stream to a switch breaks while the switch
// keeps running (and someone changed it meanwhile); on reconnection
// fastcnpd audits it without pushing the pipeline again and repairs the
// drift with exactly one write. The periodic audit is off.
func TestReconnectRepairs(t *testing.T) {
	s1, s2, state := twoSwitches(t)
	px := startProxy(t, s1.addr)
	d := startDaemon(t, testConfig(t, state, &testSwitch{addr: px.addr()}, s2), nil)
	waitInSync(t, d.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	before, pushes, audits := s1.writes.snapshot(), s1.writes.pushes(), syncs(d.Daemon, "s1", "audit")
	err := s1.dp.Exec(context.Background(), func(p *pipeline.Pipeline) error {
		es, err := p.ReadEntries(p4src.TableIPv4Route, nil)
		if err != nil {
			return err
		}
		return p.DeleteEntry(&es[0])
	})
	if err != nil {
		t.Fatal(err)
	}
	px.cut()
	waitFor(t, "audit after reconnection", syncTimeout, func() bool {
		return syncs(d.Daemon, "s1", "audit") > audits && inSync(t, d.Daemon, "s1", s1)
	})
	if got, want := s1.writes.since(before), map[p4v1.Update_Type]int{p4v1.Update_INSERT: 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("updates on reconnection: %v, want %v", got, want)
	}
	if n := s1.writes.pushes() - pushes; n != 0 {
		t.Errorf("pipeline pushed %d times on reconnection, want 0 (the switch still runs it)", n)
	}
	if n := testutil.ToFloat64(d.metrics.repaired.WithLabelValues("s1")); n != 1 {
		t.Errorf("%v entries repaired, want 1", n)
	}
}

func TestDaemonRestartKeepsState(t *testing.T) {
	s1, s2, state := twoSwitches(t)
	cfg := testConfig(t, state, s1, s2)
	d := startDaemon(t, cfg, nil)
	waitInSync(t, d.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	ctx := context.Background()
	var added []fabric.Connection
	for i := uint32(0); i < 5; i++ {
		c, err := d.AddConnection(ctx, fabric.Connection{ConnKey: fabric.ConnKey{
			SenderIP: netip.MustParseAddr("10.1.1.5"), UDPSrcPort: 1000, ReceiverQPN: 100 + i},
			SenderQPN: 7, Flags: p4src.ConnFlagCNPTarget})
		if err != nil {
			t.Fatal(err)
		}
		added = append(added, c)
	}
	qth := uint64(qth120KiB)
	if _, err := d.SetPortSettings(ctx, "s2", 3, PortOverride{QthBytes: &qth}); err != nil {
		t.Fatal(err)
	}
	d.stopNow()

	before := map[string]map[uint64]map[p4v1.Update_Type]int{"s1": s1.writes.snapshot(), "s2": s2.writes.snapshot()}
	d2 := startDaemon(t, cfg, nil)
	waitInSync(t, d2.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	for name, s := range map[string]*testSwitch{"s1": s1, "s2": s2} {
		// The first sync after the restart is an audit (read back and diff).
		waitFor(t, name+" audited", syncTimeout, func() bool { return syncs(d2.Daemon, name, "audit") >= 1 })
		for _, typ := range []string{"insert", "modify", "delete"} {
			if n := updates(d2.Daemon, name, typ); n != 0 {
				t.Errorf("%s: restarted daemon wrote %v %s updates, want none", name, n, typ)
			}
		}
		if got := s.writes.since(before[name]); len(got) != 0 {
			t.Errorf("%s received %v updates from the restarted daemon, want none", name, got)
		}
	}
	got := d2.Connections()
	if len(got) != len(added) {
		t.Fatalf("%d connections after restart, want %d", len(got), len(added))
	}
	for i := range got {
		if got[i].ConnKey != added[i].ConnKey || got[i].Index != added[i].Index {
			t.Errorf("connection %d: %+v, want %+v", i, got[i], added[i])
		}
	}
	for _, s := range []*testSwitch{s1, s2} {
		if n := s.count(p4src.TableRDMAConnection); n != len(added) {
			t.Errorf("switch %d: %d connections", s.deviceID, n)
		}
	}
	if q, _ := s2.param(p4src.TablePortConfig, 3, paramQth); q != qth120KiB {
		t.Errorf("s2 port 3 qth %d after restart", q)
	}
}

func TestTwoInstancesFailover(t *testing.T) {
	s1, s2, state := twoSwitches(t)
	cfg := testConfig(t, state, s1, s2)
	a := startDaemon(t, cfg, func(o *Options) { o.ElectionOffset = 1 }) // higher election ID: primary
	waitInSync(t, a.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	b := startDaemon(t, cfg, nil)
	waitStandby(t, b.Daemon)
	ctx := context.Background()
	if _, err := a.AddConnection(ctx, fabric.Connection{ConnKey: fabric.ConnKey{
		SenderIP: netip.MustParseAddr("10.1.1.5"), UDPSrcPort: 1, ReceiverQPN: 2}, SenderQPN: 3}); err != nil {
		t.Fatal(err)
	}
	// The standby refuses changes (they go to the primary) and writes nothing.
	qth := uint64(qth120KiB)
	if _, err := b.SetPortSettings(ctx, "s1", 1, PortOverride{QthBytes: &qth}); !errors.Is(err, ErrNotPrimary) {
		t.Errorf("standby set: %v, want ErrNotPrimary", err)
	}
	for _, sw := range []string{"s1", "s2"} {
		if n := updates(b.Daemon, sw, "insert") + updates(b.Daemon, sw, "modify") + updates(b.Daemon, sw, "delete"); n != 0 {
			t.Errorf("standby wrote %v updates to %s", n, sw)
		}
	}
	// What the switches received: only the primary's election ID (10+1).
	const primaryID, standbyID = 11, 10
	for _, s := range []*testSwitch{s1, s2} {
		w := s.writes.snapshot()
		if len(w[primaryID]) == 0 || len(w) != 1 {
			t.Errorf("switch %d: writes by election ID %v, want only from %d", s.deviceID, w, primaryID)
		}
	}
	fromA := s1.writes.snapshot()[primaryID]
	a.stopNow()
	waitPrimary(t, b.Daemon)
	waitInSync(t, b.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	if n := s1.count(p4src.TableRDMAConnection); n != 1 {
		t.Errorf("after failover s1 has %d connections, want 1 (taken over from the shared state file)", n)
	}
	// The new primary takes changes.
	if _, err := b.SetPortSettings(ctx, "s1", 1, PortOverride{QthBytes: &qth}); err != nil {
		t.Fatal(err)
	}
	if q, _ := s1.param(p4src.TablePortConfig, 1, paramQth); q != qth120KiB {
		t.Errorf("qth %d after the new primary's change", q)
	}
	// The switch follows the spec: it never promotes an ID below the highest it
	// has seen (11), so the standby took over with 11 + its configured 10.
	const takeoverID = primaryID + standbyID
	w := s1.writes.snapshot()
	if !reflect.DeepEqual(w[primaryID], fromA) || w[takeoverID][p4v1.Update_MODIFY] == 0 || len(w[standbyID]) != 0 {
		t.Errorf("s1 writes by election ID after failover: %v (the old primary's before: %v)", w, fromA)
	}
}

func TestAnnouncements(t *testing.T) {
	s1, s2, state := twoSwitches(t)
	clk := &clock{}
	logger, hook := logtest.NewNullLogger()
	d := startDaemon(t, testConfig(t, state, s1, s2), func(o *Options) { o.Now, o.Logger = clk.now, logger })
	waitInSync(t, d.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	ctx := context.Background()
	accepted := func(reason string) float64 {
		return testutil.ToFloat64(d.metrics.announcements.WithLabelValues("accepted", reason))
	}
	rejected := func(reason string) float64 {
		return testutil.ToFloat64(d.metrics.announcements.WithLabelValues("rejected", reason))
	}

	// Through the switch: punted on port 1 of s1, installed on both switches.
	if err := s1.dp.Receive(ctx, announceFrame(t, wire.AnnounceUp, connSender, connSrcPort, connDestQP, nil), 1); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*testSwitch{s1, s2} {
		waitFor(t, "connection installed", syncTimeout, func() bool { return s.count(p4src.TableRDMAConnection) == 1 })
	}
	if accepted(AcceptUp) != 1 {
		t.Errorf("accepted up = %v", accepted(AcceptUp))
	}
	// Spoofed through the switch: sender not behind port 1.
	if err := s1.dp.Receive(ctx, announceFrame(t, wire.AnnounceUp, spoofedIP, 1, 1, nil), 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "spoofed rejected", syncTimeout, func() bool { return rejected(ReasonSpoofed) == 1 })

	// Directly, every rejection reason (the data plane drops some before they reach us).
	frame := func(mod func(*wire.Announcement)) []byte {
		return announceFrame(t, wire.AnnounceUp, connSender, 7, 7, mod)
	}
	mismatch := frame(nil)
	mismatch[14+12+3] = 99 // IPv4 source 10.1.1.99 while the announcement says 10.1.1.5
	wrongPort := frame(nil)
	wrongPort[14+20+2], wrongPort[14+20+3] = 0x12, 0x34 // UDP destination 4660, not 4792
	tests := []struct {
		name   string
		port   uint16
		reason uint8
		frame  []byte
		want   string
	}{
		{"packet-in reason", 1, 2, frame(nil), ReasonNotAnnouncement},
		{"truncated", 1, 1, frame(nil)[:40], ReasonMalformed},
		{"garbage", 1, 1, []byte{1, 2, 3}, ReasonMalformed},
		{"bad magic", 1, 1, frame(func(a *wire.Announcement) { a.Magic = 1 }), ReasonBadMagic},
		{"bad version", 1, 1, frame(func(a *wire.Announcement) { a.Version = 9 }), ReasonBadVersion},
		{"unknown type", 1, 1, frame(func(a *wire.Announcement) { a.Type = 7 }), ReasonUnknownType},
		{"sender mismatch", 1, 1, mismatch, ReasonSenderMismatch},
		{"wrong UDP port", 1, 1, wrongPort, ReasonWrongPort},
		{"wrong port", 2, 1, frame(nil), ReasonSpoofed},
		{"unknown port", 77, 1, frame(nil), ReasonSpoofed},
		{"other subnet", 1, 1, announceFrame(t, wire.AnnounceUp, otherSubnet, 7, 7, nil), ReasonSpoofed},
		// INC membership comes from the config (inc.groups), not from the
		// host's word.
		{"rank beyond the bitmap", 1, 1, frame(func(a *wire.Announcement) {
			a.Flags, a.INCGroup, a.WorkerRank = wire.AnnounceFlagINCUplink, 7, 40
		}), ReasonINCMembership},
		{"another rank", 1, 1, frame(func(a *wire.Announcement) {
			a.Flags, a.INCGroup, a.WorkerRank = wire.AnnounceFlagINCUplink, 7, 1
		}), ReasonINCMembership},
		{"group not configured", 1, 1, frame(func(a *wire.Announcement) {
			a.Flags, a.INCGroup, a.WorkerRank = wire.AnnounceFlagINCUplink, 8, 0
		}), ReasonINCMembership},
		{"not a member", 1, 1, frame(func(a *wire.Announcement) {
			a.Flags, a.INCGroup, a.WorkerRank = wire.AnnounceFlagINCUplink, 9, 4
		}), ReasonINCMembership},
		{"inc without group", 1, 1, frame(func(a *wire.Announcement) { a.Flags = wire.AnnounceFlagINCUplink }), ReasonINCMembership},
		{"down unknown", 1, 1, announceFrame(t, wire.AnnounceDown, connSender, 9, 9, nil), ReasonUnknownConn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := rejected(tt.want)
			hook.Reset()
			res := d.HandleAnnouncement("s1", tt.port, tt.reason, tt.frame)
			if res.Accepted || res.Reason != tt.want {
				t.Fatalf("got %+v, want rejected %s", res, tt.want)
			}
			if rejected(tt.want) != before+1 {
				t.Errorf("counter %s not incremented", tt.want)
			}
			// Logged with the reason and a detail, as a warning.
			logged := false
			for _, e := range hook.AllEntries() {
				logged = logged || e.Message == "announcement rejected" && e.Level == logrus.WarnLevel &&
					e.Data["reason"] == tt.want && e.Data["detail"] != "" && e.Data["switch"] == "s1" && e.Data["port"] == tt.port
			}
			if !logged {
				t.Errorf("no warning log with reason %s: %v", tt.want, hook.AllEntries())
			}
		})
	}
	if n := len(d.Connections()); n != 1 {
		t.Fatalf("%d connections after rejections, want 1", n)
	}
	// Nothing installed for them: after one more install, still one entry.
	if err := d.syncAll(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*testSwitch{s1, s2} {
		if n := s.count(p4src.TableRDMAConnection); n != 1 {
			t.Errorf("switch %d: %d connections after rejections, want 1", s.deviceID, n)
		}
	}

	// The refusals of INC membership are counted apart.
	if got := testutil.ToFloat64(d.metrics.refused.WithLabelValues(ReasonINCMembership)); got != 5 {
		t.Errorf("fastcnp_announcements_refused_total{reason=inc_membership} = %v, want 5", got)
	}
	// The config's groups are on the switch their members are behind, with
	// every member's bit, before any announcement; an INC connection of a
	// member (group 7, rank 0) aggregates there only.
	if m, ok := s1.param(p4src.TableIncGroup, 7, 1); !ok || m != 0b11 {
		t.Errorf("s1 inc_group 7 mask %b (%v), want 0b11 from the config", m, ok)
	}
	res := d.HandleAnnouncement("s1", 1, 1, announceFrame(t, wire.AnnounceUp, connSender, connSrcPort, connDestQP2,
		func(a *wire.Announcement) { a.Flags, a.INCGroup, a.WorkerRank = wire.AnnounceFlagINCUplink, 7, 0 }))
	if !res.Accepted || res.Conn.Index != 1 {
		t.Fatalf("inc announcement: %+v", res)
	}
	incFlag := func(s *testSwitch) (bool, bool) {
		for _, e := range s.entries(p4src.TableRDMAConnection) {
			if e.Match[2].Value == connDestQP2 {
				return e.Action.Params[1].Value&p4src.ConnFlagIncUplink != 0, true
			}
		}
		return false, false
	}
	waitFor(t, "inc connection", syncTimeout, func() bool {
		f1, ok1 := incFlag(s1)
		f2, ok2 := incFlag(s2)
		return ok1 && ok2 && f1 && !f2
	})
	// Refresh, then down.
	if res := d.HandleAnnouncement("s1", 1, 1, announceFrame(t, wire.AnnounceUp, connSender, connSrcPort, connDestQP2,
		func(a *wire.Announcement) { a.Flags, a.INCGroup, a.WorkerRank = wire.AnnounceFlagINCUplink, 7, 0 })); res.Reason != AcceptRefresh {
		t.Errorf("refresh: %+v", res)
	}
	if res := d.HandleAnnouncement("s1", 1, 1, announceFrame(t, wire.AnnounceDown, connSender, connSrcPort, connDestQP2, nil)); res.Reason != AcceptDown {
		t.Errorf("down: %+v", res)
	}
	for _, s := range []*testSwitch{s1, s2} {
		waitFor(t, "down removed", syncTimeout, func() bool {
			return s.count(p4src.TableRDMAConnection) == 1
		})
	}
	// Idle timeout: the last connection goes when not refreshed for 10 s.
	clk.advance(11 * time.Second)
	for _, s := range []*testSwitch{s1, s2} {
		waitFor(t, "idle removed", syncTimeout, func() bool { return s.count(p4src.TableRDMAConnection) == 0 })
	}
	if n := len(d.Connections()); n != 0 {
		t.Errorf("%d connections after idle timeout", n)
	}
	// A connection added through the API is static: it never expires.
	static, err := d.AddConnection(ctx, fabric.Connection{ConnKey: fabric.ConnKey{
		SenderIP: netip.MustParseAddr(connSender), UDPSrcPort: 1, ReceiverQPN: 2}, SenderQPN: 3})
	if err != nil {
		t.Fatal(err)
	}
	clk.advance(24 * time.Hour)
	d.expire()
	if got := d.Connections(); len(got) != 1 || got[0].ConnKey != static.ConnKey {
		t.Errorf("connections a day later: %+v, want the static one", got)
	}
}

// TestAnnouncementTableFull: with CONN_TABLE_SIZE connections, an "up" for
// a new one is rejected as table_full and changes nothing.
func TestAnnouncementTableFull(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.json")
	d, err := New(Options{Config: testConfig(t, state, &testSwitch{addr: "127.0.0.1:1"}, &testSwitch{addr: "127.0.0.1:2"}),
		Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	d.writer.Store(true) // as if it had been primary: its switches are down now
	d.mu.Lock()
	for i := 0; i < p4src.ConnTableSize; i++ {
		_, _, err := d.conns.Upsert(fabric.Connection{ConnKey: fabric.ConnKey{SenderIP: netip.MustParseAddr("10.1.1.6"),
			UDPSrcPort: uint16(i), ReceiverQPN: 1}, Static: true})
		if err != nil {
			d.mu.Unlock()
			t.Fatal(err)
		}
	}
	d.mu.Unlock()
	res := d.HandleAnnouncement("s1", 1, 1, announceFrame(t, wire.AnnounceUp, connSender, connSrcPort, connDestQP, nil))
	if res.Accepted || res.Reason != ReasonTableFull {
		t.Fatalf("got %+v, want rejected %s", res, ReasonTableFull)
	}
	if n := testutil.ToFloat64(d.metrics.announcements.WithLabelValues("rejected", ReasonTableFull)); n != 1 {
		t.Errorf("table_full counted %v times", n)
	}
	if n := len(d.Connections()); n != p4src.ConnTableSize {
		t.Errorf("%d connections, want %d", n, p4src.ConnTableSize)
	}
}

func TestDigests(t *testing.T) {
	s1, s2, state := twoSwitches(t)
	d := startDaemon(t, testConfig(t, state, s1, s2), nil)
	waitInSync(t, d.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	events, cancel := d.Subscribe(64)
	defer cancel()
	// A PFC PAUSE for the lossless priority (3) received on s1 port 1.
	b := make([]byte, 64)
	var quanta [8]uint16
	quanta[3] = 1000
	n, err := wire.BuildPFC(b, wire.MAC{2, 0, 0, 0, 0, 7}, 1<<3, quanta)
	if err != nil {
		t.Fatal(err)
	}
	if err := s1.dp.Receive(context.Background(), b[:n], 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "PAUSE digest", syncTimeout, func() bool {
		return testutil.ToFloat64(d.metrics.portEvents.WithLabelValues("s1", "1", "PAUSE")) == 1
	})
	if v := testutil.ToFloat64(d.metrics.portPaused.WithLabelValues("s1", "1")); v != 1 {
		t.Errorf("fastcnp_port_paused = %v", v)
	}
	deadline := time.After(syncTimeout)
	for found := false; !found; {
		select {
		case e := <-events:
			found = e.Kind == EventPortState && e.Switch == "s1" && e.Port == 1 && e.Message == "PAUSE"
		case <-deadline:
			t.Fatal("no port_state event")
		}
	}
	ps, err := d.Ports(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	if ps[0].Port != 1 || ps[0].State != "paused" || ps[0].LastEvent != "PAUSE" {
		t.Errorf("port 1: %+v", ps[0])
	}
	if c := ps[0].Counters["pfc_pause_rx"]; c.Packets != 1 {
		t.Errorf("pfc_pause_rx = %+v", c)
	}

	// A switch CNP: a RoCEv2 packet of an announced connection meets port 2's
	// queue above Qth; s1 sends a CNP and reports it in a cnp_digest_t.
	if res := d.HandleAnnouncement("s1", 1, 1, announceFrame(t, wire.AnnounceUp, connSender, connSrcPort, connDestQP, nil)); !res.Accepted {
		t.Fatalf("announcement: %+v", res)
	}
	if err := d.syncAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2048)
	env := &wire.Envelope{DstMAC: wire.MAC{2, 0, 0, 0, 1, 1}, SrcMAC: wire.MAC{2, 0, 0, 0, 0, 9},
		SrcIP: wire.Addr4{10, 1, 1, 5}, DstIP: wire.Addr4{10, 1, 2, 7}, DSCP: 26, ECN: wire.ECT0, SrcPort: connSrcPort}
	n, err = wire.BuildRoCE(buf, env, &wire.BTH{Opcode: wire.OpRCSendOnly, PKey: wire.DefaultPKey, DestQP: connDestQP},
		make([]byte, 1000))
	if err != nil {
		t.Fatal(err)
	}
	var cnp bool
	now := s1.dp.Now()
	err = s1.dp.Exec(context.Background(), func(p *pipeline.Pipeline) error {
		if err := p.WriteRegister(p4src.RegPortQueueBytes, 2, 1_000_000); err != nil {
			return err
		}
		var in pipeline.IngressResult
		if err := p.Ingress(buf[:n], 1, now, &in); err != nil {
			return err
		}
		if in.Verdict != pipeline.VerdictForward || in.EgressPort != 2 {
			return fmt.Errorf("verdict %d to port %d, want forwarded to port 2", in.Verdict, in.EgressPort)
		}
		p.OnEnqueue(&in.Meta)
		var out pipeline.EgressResult
		if err := p.Egress(in.Frame, in.EgressPort, now, &in.Meta, &out); err != nil {
			return err
		}
		cnp = out.CNP
		return nil
	})
	if err != nil || !cnp {
		t.Fatalf("no switch CNP (%v)", err)
	}
	waitFor(t, "CNP digest", syncTimeout, func() bool {
		return testutil.ToFloat64(d.metrics.cnpDigests.WithLabelValues("s1", "2")) == 1
	})
	if w := testutil.ToFloat64(d.metrics.cnpWindow.WithLabelValues("s1", "2")); w <= 0 {
		t.Errorf("fastcnp_cnp_window_bytes = %v", w)
	}
	for found := false; !found; {
		select {
		case e := <-events:
			found = e.Kind == EventCNP && e.Switch == "s1" && e.Port == 2 && e.Fields["src_addr"] == "10.1.1.5" &&
				e.Fields["dst_addr"] == "10.1.2.7" && e.Fields["window_bytes"] != ""
		case <-deadline:
			t.Fatal("no cnp event")
		}
	}
}

// TestINCWeightChangeAcrossRestart: fastcnpd restarted with new INC weights
// moves the fewest buckets from the table the switch holds.
func TestINCWeightChangeAcrossRestart(t *testing.T) {
	s1, s2, state := twoSwitches(t)
	cfg := testConfig(t, state, s1, s2)
	d := startDaemon(t, cfg, nil)
	waitInSync(t, d.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	d.stopNow()
	before := map[uint64]uint64{}
	for _, e := range s2.entries(p4src.TableIncRoute) {
		before[e.Match[0].Value] = e.Action.Params[0].Value
	}
	prev := make(incroute.Table, p4src.IncBuckets)
	for b, p := range before {
		prev[b] = uint32(p)
	}
	cfg2 := testConfig(t, state, s1, s2)
	cfg2.Switch("s2").INC.NextHops[1].Weight = 3 // 3:1 -> 3:3
	hops := []incroute.Hop{{ID: 3, Weight: 3}, {ID: 4, Weight: 3}}
	counts, err := incroute.Apportion(hops, p4src.IncBuckets)
	if err != nil {
		t.Fatal(err)
	}
	want := incroute.MinMoves(prev, counts)
	d2 := startDaemon(t, cfg2, nil)
	waitInSync(t, d2.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	waitFor(t, "weights applied", syncTimeout, func() bool {
		n := 0
		for _, e := range s2.entries(p4src.TableIncRoute) {
			if e.Action.Params[0].Value == 4 {
				n++
			}
		}
		return n == counts[4]
	})
	if got := updates(d2.Daemon, "s2", "modify"); int(got) != want || want == 0 {
		t.Errorf("%v buckets rewritten, want the minimum %d", got, want)
	}
}
