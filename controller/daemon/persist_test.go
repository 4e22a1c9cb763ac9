package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fastcnp/fastcnp/controller/fabric"
	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/wire"
)

// idle is announce.idle_timeout in testYAML; refreshes are saved once the
// saved time is idle/4 old.
const idle = 10 * time.Second

// announceUp hands d an "up" announcement of the test connection punted by
// s1 port 1 and returns the outcome.
func announceUp(t *testing.T, d *Daemon) AnnounceResult {
	t.Helper()
	return d.HandleAnnouncement("s1", 1, 1, announceFrame(t, wire.AnnounceUp, connSender, connSrcPort, connDestQP, nil))
}

// refreshFor has the host refresh the test connection every 3 s for d of
// the test clock.
func refreshFor(t *testing.T, dm *Daemon, clk *clock, d time.Duration) {
	t.Helper()
	for i := time.Duration(0); i < d; i += 3 * time.Second {
		clk.advance(3 * time.Second)
		if res := announceUp(t, dm); res.Reason != AcceptRefresh {
			t.Fatalf("refresh at +%v: %+v", i+3*time.Second, res)
		}
	}
}

// savedLastSeen returns the last_seen of the only connection in the state
// file, as a restarted instance reads it (the snapshot and its log; zero
// time and false when it holds none).
func savedLastSeen(t *testing.T, path string) (time.Time, bool) {
	t.Helper()
	fs, _, err := readState(path)
	if err != nil {
		t.Fatal(err)
	}
	switch len(fs.Connections) {
	case 0:
		return time.Time{}, false
	case 1:
		return fs.Connections[0].LastSeen, true
	}
	t.Fatalf("state file holds %d connections, want at most 1", len(fs.Connections))
	return time.Time{}, false
}

// TestRefreshSaved: a refresh is written to the state file once the saved
// refresh time is idle_timeout/4 old, and not before (so a steady stream of
// refreshes does not write the file on every packet).
func TestRefreshSaved(t *testing.T) {
	s1, s2, state := twoSwitches(t)
	clk := &clock{}
	d := startDaemon(t, testConfig(t, state, s1, s2), func(o *Options) { o.Now = clk.now })
	waitInSync(t, d.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	if res := announceUp(t, d.Daemon); res.Reason != AcceptUp {
		t.Fatalf("up: %+v", res)
	}
	up := clk.now()
	steps := []struct {
		advance time.Duration
		saved   time.Duration // the saved last_seen, from up
	}{
		{time.Second, 0},                          // 1 s old: not written
		{time.Second, 0},                          // 2 s
		{idle/4 - 2*time.Second, idle / 4},        // 2.5 s: written
		{time.Second, idle / 4},                   // 1 s after that: not written
		{idle / 4, idle/4 + time.Second + idle/4}, // written
	}
	elapsed := time.Duration(0)
	for i, st := range steps {
		clk.advance(st.advance)
		elapsed += st.advance
		if res := announceUp(t, d.Daemon); res.Reason != AcceptRefresh {
			t.Fatalf("refresh %d: %+v", i, res)
		}
		got, ok := savedLastSeen(t, state)
		if want := up.Add(st.saved); !ok || !got.Equal(want) {
			t.Errorf("after a refresh at +%v: saved last_seen %v (%v), want %v", elapsed, got, ok, want)
		}
	}
}

// TestCrashRestartKeepsAnnounced: fastcnpd crashes (no final write) while
// hosts refresh a connection; it comes back after the connection's last
// refresh is older than idle_timeout. The restarted daemon keeps the
// connection on every switch until it has been idle for idle_timeout after
// the restart, and a refresh keeps it (same conn_index).
func TestCrashRestartKeepsAnnounced(t *testing.T) {
	s1, s2, state := twoSwitches(t)
	cfg := testConfig(t, state, s1, s2)
	clk := &clock{}
	a := startCrashingDaemon(t, cfg, func(o *Options) { o.Now = clk.now })
	waitInSync(t, a.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	up := announceUp(t, a.Daemon)
	if up.Reason != AcceptUp {
		t.Fatalf("up: %+v", up)
	}
	refreshFor(t, a.Daemon, clk, 30*time.Second)
	last := clk.now()
	if got, ok := savedLastSeen(t, state); !ok || last.Sub(got) >= idle/4 {
		t.Errorf("saved last_seen %v, want within %v of the last refresh %v", got, idle/4, last)
	}
	a.stopNow() // a crash: Run's final write does not happen

	clk.advance(2 * idle) // down for longer than idle_timeout
	b := startDaemon(t, cfg, func(o *Options) { o.Now = clk.now })
	waitInSync(t, b.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	b.expire()
	if got := b.Connections(); len(got) != 1 || got[0].ConnKey != up.Conn.ConnKey || got[0].Index != up.Conn.Index {
		t.Fatalf("connections after the restart: %+v, want %s", got, up.Conn.ConnKey)
	}
	clk.advance(idle - time.Second)
	b.expire()
	for _, s := range []*testSwitch{s1, s2} {
		if n := s.count(p4src.TableRDMAConnection); n != 1 {
			t.Errorf("switch %d: %d connections %v after the restart, want 1", s.deviceID, n, idle-time.Second)
		}
	}
	// The host's next refresh is a refresh, not a new connection.
	if res := announceUp(t, b.Daemon); res.Reason != AcceptRefresh || res.Conn.Index != up.Conn.Index {
		t.Errorf("refresh after the restart: %+v", res)
	}
	// Idle again for longer than idle_timeout: removed from every switch.
	clk.advance(idle + time.Second)
	for _, s := range []*testSwitch{s1, s2} {
		waitFor(t, "idle removed", syncTimeout, func() bool { return s.count(p4src.TableRDMAConnection) == 0 })
	}
}

// TestCrashFailoverKeepsAnnounced: the primary crashes (no final write)
// while hosts refresh a connection; the standby, promoted, re-reads the
// state file: it has the refresh time of the last saved refresh, and keeps
// the connection for a full idle_timeout after the takeover even when the
// old primary hung for longer than that before dying.
func TestCrashFailoverKeepsAnnounced(t *testing.T) {
	s1, s2, state := twoSwitches(t)
	cfg := testConfig(t, state, s1, s2)
	clk := &clock{}
	a := startCrashingDaemon(t, cfg, func(o *Options) {
		o.ElectionOffset, o.Now = 1, clk.now // higher election ID: primary
		o.ExpiryInterval = time.Hour         // the hung primary expires nothing
	})
	waitInSync(t, a.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	b := startDaemon(t, cfg, func(o *Options) { o.Now = clk.now })
	waitStandby(t, b.Daemon)
	up := announceUp(t, a.Daemon)
	if up.Reason != AcceptUp {
		t.Fatalf("up: %+v", up)
	}
	refreshFor(t, a.Daemon, clk, 30*time.Second)
	last := clk.now()
	clk.advance(2 * idle) // the primary hangs, then dies
	a.stopNow()
	waitPrimary(t, b.Daemon)
	waitInSync(t, b.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	b.expire()
	got := b.Connections()
	if len(got) != 1 || got[0].ConnKey != up.Conn.ConnKey || got[0].Index != up.Conn.Index {
		t.Fatalf("connections after the takeover: %+v, want %s", got, up.Conn.ConnKey)
	}
	if last.Sub(got[0].LastSeen) >= idle/4 {
		t.Errorf("taken-over last_seen %v, want within %v of the last refresh %v", got[0].LastSeen, idle/4, last)
	}
	clk.advance(idle - time.Second)
	b.expire()
	for _, s := range []*testSwitch{s1, s2} {
		if n := s.count(p4src.TableRDMAConnection); n != 1 {
			t.Errorf("switch %d: %d connections after the takeover, want 1", s.deviceID, n)
		}
	}
	if res := announceUp(t, b.Daemon); res.Reason != AcceptRefresh || res.Conn.Index != up.Conn.Index {
		t.Errorf("refresh to the new primary: %+v", res)
	}
	clk.advance(idle + time.Second)
	for _, s := range []*testSwitch{s1, s2} {
		waitFor(t, "idle removed", syncTimeout, func() bool { return s.count(p4src.TableRDMAConnection) == 0 })
	}
}

// TestStandbyStopKeepsStateFile: two instances share the state file; the
// primary holds an announced connection; the standby, whose view predates
// it, stops (gracefully) and leaves the file as the primary wrote it. A
// standby refuses announcements too, and changes nothing.
func TestStandbyStopKeepsStateFile(t *testing.T) {
	s1, s2, state := twoSwitches(t)
	cfg := testConfig(t, state, s1, s2)
	a := startDaemon(t, cfg, func(o *Options) { o.ElectionOffset = 1 })
	waitInSync(t, a.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	b := startDaemon(t, cfg, nil)
	waitStandby(t, b.Daemon)
	if res := announceUp(t, a.Daemon); res.Reason != AcceptUp {
		t.Fatalf("up: %+v", res)
	}
	if res := announceUp(t, b.Daemon); res.Accepted || res.Reason != ReasonNotPrimary {
		t.Errorf("announcement to the standby: %+v, want rejected %s", res, ReasonNotPrimary)
	}
	if _, ok := savedLastSeen(t, state); !ok {
		t.Fatal("the primary did not save the connection")
	}
	b.stopNow()
	if _, ok := savedLastSeen(t, state); !ok {
		t.Error("the standby's stop removed the primary's connection from the state file")
	}
	if n := len(a.Connections()); n != 1 {
		t.Errorf("primary has %d connections, want 1", n)
	}
}

// TestLongFlowKeepsConnection: a host that refreshes its connection (an
// "up" for a known connection, punted by the switch) keeps it for as long
// as it refreshes, many idle_timeouts; once the refreshes stop, the
// connection goes after idle_timeout, not before.
func TestLongFlowKeepsConnection(t *testing.T) {
	s1, s2, state := twoSwitches(t)
	clk := &clock{}
	d := startDaemon(t, testConfig(t, state, s1, s2), func(o *Options) { o.Now = clk.now })
	waitInSync(t, d.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	ctx := context.Background()
	accepted := func(reason string) float64 {
		return testutil.ToFloat64(d.metrics.announcements.WithLabelValues("accepted", reason))
	}
	// announce punts an "up" through s1 port 1, as the host's frame would
	// arrive, and waits until fastcnpd has handled it.
	announce := func(reason string) {
		t.Helper()
		before := accepted(reason)
		if err := s1.dp.Receive(ctx, announceFrame(t, wire.AnnounceUp, connSender, connSrcPort, connDestQP, nil), 1); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "announcement "+reason+" handled", syncTimeout, func() bool { return accepted(reason) == before+1 })
	}
	installed := func() bool {
		return len(d.Connections()) == 1 && s1.count(p4src.TableRDMAConnection) == 1 && s2.count(p4src.TableRDMAConnection) == 1
	}
	announce(AcceptUp)
	waitFor(t, "connection installed", syncTimeout, installed)
	index := d.Connections()[0].Index

	// The flow runs for 5 idle periods; its host refreshes every idle/3.
	for elapsed := time.Duration(0); elapsed < 5*idle; {
		clk.advance(idle / 3)
		elapsed += idle / 3
		announce(AcceptRefresh)
		d.expire()
		if c := d.Connections(); len(c) != 1 || c[0].Index != index || !c[0].LastSeen.Equal(clk.now()) {
			t.Fatalf("after %v of refreshes: connections %+v, want the one with index %d seen now", elapsed, c, index)
		}
	}
	if !installed() {
		t.Fatal("the refreshed connection is not on both switches")
	}

	// The flow ends without a "down" (the host died): the connection stays
	// for idle_timeout after the last refresh, then goes.
	clk.advance(idle - time.Second)
	d.expire()
	if !installed() {
		t.Fatalf("connection gone %v after its last refresh (idle_timeout %v)", idle-time.Second, idle)
	}
	clk.advance(2 * time.Second)
	d.expire()
	waitFor(t, "idle connection removed from both switches", syncTimeout, func() bool {
		return len(d.Connections()) == 0 && s1.count(p4src.TableRDMAConnection) == 0 && s2.count(p4src.TableRDMAConnection) == 0
	})
}

// cutPair is two instances sharing a state file: a, the primary (election
// offset 1), reaches the switches through proxies; b is the standby.
type cutPair struct {
	a, b    *testDaemon
	state   string
	proxies []*proxy
}

func startCutPair(t *testing.T) *cutPair {
	t.Helper()
	s1, s2, state := twoSwitches(t)
	p1, p2 := startProxy(t, s1.addr), startProxy(t, s2.addr)
	via := func(s *testSwitch, p *proxy) *testSwitch { c := *s; c.addr = p.addr(); return &c }
	a := startDaemon(t, testConfig(t, state, via(s1, p1), via(s2, p2)), func(o *Options) { o.ElectionOffset = 1 })
	waitInSync(t, a.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	b := startDaemon(t, testConfig(t, state, s1, s2), nil)
	waitStandby(t, b.Daemon)
	return &cutPair{a: a, b: b, state: state, proxies: []*proxy{p1, p2}}
}

// cut ends a's streams and keeps it from reconnecting; it returns once b
// has taken over.
func (p *cutPair) cut(t *testing.T) {
	t.Helper()
	for _, x := range p.proxies {
		x.held.Store(true)
		x.cut()
	}
	waitPrimary(t, p.b.Daemon)
}

// reconnect lets a reach the switches again.
func (p *cutPair) reconnect() {
	for _, x := range p.proxies {
		x.held.Store(false)
	}
}

// TestResumedPrimaryLeavesStateFile: a primary whose streams the switches
// dropped (a hung process: fastcnp-switch's keepalive ends its streams) comes
// back after the standby took over. It no longer owns the shared state file:
// it must not write it, not even when it stops, or the snapshot it compacts
// from its stale view would drop what the new primary logged since. It may
// learn it from the switches (it reconnects as a backup), or not at all (it is
// stopped while still cut off: systemd sends SIGCONT after SIGTERM): then the
// file itself tells it, changed by another instance since it last wrote it.
func TestResumedPrimaryLeavesStateFile(t *testing.T) {
	for _, reconnect := range []bool{true, false} {
		name := "stops while still cut off"
		if reconnect {
			name = "reconnects as a backup, then stops"
		}
		t.Run(name, func(t *testing.T) {
			pair := startCutPair(t)
			a, b, state := pair.a, pair.b, pair.state
			ctx := context.Background()
			first := fabric.Connection{ConnKey: fabric.ConnKey{SenderIP: netip.MustParseAddr("10.1.1.5"), UDPSrcPort: 1, ReceiverQPN: 2}}
			if _, err := a.AddConnection(ctx, first); err != nil {
				t.Fatal(err)
			}
			pair.cut(t)
			second := fabric.Connection{ConnKey: fabric.ConnKey{SenderIP: netip.MustParseAddr("10.1.1.6"), UDPSrcPort: 3, ReceiverQPN: 4}}
			if _, err := b.AddConnection(ctx, second); err != nil {
				t.Fatal(err)
			}
			if reconnect {
				pair.reconnect()
				waitStandby(t, a.Daemon)
				if a.writer.Load() {
					t.Error("the resumed primary still owns the state file")
				}
			}
			a.stopNow()
			fs, _, err := readState(state)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, fc := range fs.Connections {
				got = append(got, fmt.Sprintf("%s/%d/%d", fc.SenderIP, fc.UDPSrcPort, fc.ReceiverQPN))
			}
			sort.Strings(got)
			if want := []string{"10.1.1.5/1/2", "10.1.1.6/3/4"}; !reflect.DeepEqual(got, want) {
				t.Errorf("state file after the resumed primary stopped: %v, want %v", got, want)
			}
		})
	}
}

// TestStaleWriteReplaced: a primary that has not learnt of a takeover yet
// (its streams dropped, its pending work still running) writes the shared
// state file before the new primary does. The new primary, which outranks it
// (its election ID on the switches is higher), keeps writing: its next change
// compacts its own view over the stale one's; the stale instance, whose next
// write finds the file written by a higher election ID, gives it up.
func TestStaleWriteReplaced(t *testing.T) {
	pair := startCutPair(t)
	a, b, state := pair.a, pair.b, pair.state
	ctx := context.Background()
	conn := func(sport uint16) fabric.Connection {
		return fabric.Connection{ConnKey: fabric.ConnKey{SenderIP: netip.MustParseAddr("10.1.1.5"), UDPSrcPort: sport, ReceiverQPN: 2},
			Source: "api", Static: true}
	}
	if _, err := a.AddConnection(ctx, conn(1)); err != nil {
		t.Fatal(err)
	}
	pair.cut(t)
	// a's pending work: a change it logs as if still primary.
	if _, _, err := a.upsert(conn(2)); err != nil {
		t.Fatalf("the stale write: %v (it should land: nothing newer is in the file yet)", err)
	}
	// b's change: b outranks the file's writer, so it keeps the file.
	if _, err := b.AddConnection(ctx, conn(3)); err != nil {
		t.Fatalf("the new primary's change after a stale write: %v", err)
	}
	if !b.writer.Load() {
		t.Fatal("the new primary gave up the state file to a stale writer")
	}
	// a's next write finds b's snapshot: a gives up.
	if _, _, err := a.upsert(conn(4)); !errors.Is(err, errSupplanted) {
		t.Fatalf("a stale write after the new primary's: %v, want errSupplanted", err)
	}
	if a.writer.Load() {
		t.Error("the stale primary still writes the state file")
	}
	a.stopNow()
	fs, _, err := readState(state)
	if err != nil {
		t.Fatal(err)
	}
	var got []uint16
	for _, fc := range fs.Connections {
		got = append(got, fc.UDPSrcPort)
	}
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	if want := []uint16{1, 3}; !reflect.DeepEqual(got, want) {
		t.Errorf("state file: connections with sports %v, want %v (the new primary's view)", got, want)
	}
}
