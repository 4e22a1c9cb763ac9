package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/wire"
)

// quotaConfig is testYAML with small connection quotas; its switches are
// not reachable (the tests hand announcements to the daemon directly).
func quotaConfig(t *testing.T, state string, perPort, perSender int) *config.Config {
	t.Helper()
	src := fmt.Sprintf(testYAML, state, "127.0.0.1:1", "127.0.0.1:2")
	src = strings.Replace(src, "announce: {udp_port: 4792, idle_timeout: 10s}",
		fmt.Sprintf("announce: {udp_port: 4792, idle_timeout: 10s, max_connections_per_port: %d, max_connections_per_sender: %d}",
			perPort, perSender), 1)
	cfg, err := config.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// newWriterDaemon is a daemon that has been primary (it accepts
// announcements and writes the state file) whose switches are down.
func newWriterDaemon(t *testing.T, cfg *config.Config, log logrus.FieldLogger) *Daemon {
	t.Helper()
	d, err := New(Options{Config: cfg, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	d.writer.Store(true)
	return d
}

// TestAnnouncementQuotas: hosts behind s1 port 1 flood distinct connections
// beyond the port's quota (6) and one sender beyond its own (4): the
// connections beyond are refused with a reason (counted, logged with
// fields), refreshes of the accepted ones still pass, and a host behind
// port 2 is still accepted. The quotas hold across a restart (the state
// file keeps each connection's ingress port), and a "down" frees room.
func TestAnnouncementQuotas(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.json")
	cfg := quotaConfig(t, state, 6, 4)
	logger, hook := logtest.NewNullLogger()
	d := newWriterDaemon(t, cfg, logger)
	refusedN := func(d *Daemon, reason string) float64 {
		return testutil.ToFloat64(d.metrics.refused.WithLabelValues(reason))
	}
	up := func(d *Daemon, port uint16, src string, sport uint16) AnnounceResult {
		return d.HandleAnnouncement("s1", port, wire.ReasonAnnouncement, announceFrame(t, wire.AnnounceUp, src, sport, connDestQP, nil))
	}

	// The flood: 4 senders of port 1, 5 connections each, in order.
	got := map[string]int{}
	for h := 0; h < 4; h++ {
		for sp := uint16(1); sp <= 5; sp++ {
			got[up(d, 1, fmt.Sprintf("10.1.1.%d", 10+h), sp).Reason]++
		}
	}
	// .10 gets 4 (its sender quota) and 1 refused; .11 the 2 left of the
	// port's 6; everything else is refused for the port.
	want := map[string]int{AcceptUp: 6, ReasonSenderQuota: 1, ReasonPortQuota: 13}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("flood outcomes %v, want %v", got, want)
	}
	if n := len(d.Connections()); n != 6 {
		t.Fatalf("%d connections after the flood, want 6", n)
	}
	for reason, n := range map[string]float64{ReasonPortQuota: 13, ReasonSenderQuota: 1, ReasonTableFull: 0} {
		if got := refusedN(d, reason); got != n {
			t.Errorf("fastcnp_announcements_refused_total{reason=%q} = %v, want %v", reason, got, n)
		}
		if got := testutil.ToFloat64(d.metrics.announcements.WithLabelValues("rejected", reason)); got != n {
			t.Errorf("fastcnp_announcements_total{result=rejected,reason=%q} = %v, want %v", reason, got, n)
		}
	}
	// Logged as warnings with the port, the sender, and the count against
	// the limit.
	logged := map[string]bool{}
	for _, e := range hook.AllEntries() {
		if e.Level == logrus.WarnLevel && e.Message == "announcement rejected" && e.Data["switch"] == "s1" && e.Data["port"] == uint16(1) &&
			e.Data["sender"] != nil && e.Data["held"] == e.Data["limit"] && strings.Contains(fmt.Sprint(e.Data["detail"]), "quota") {
			logged[fmt.Sprint(e.Data["reason"], "/", e.Data["limit"])] = true
		}
	}
	if !logged[ReasonPortQuota+"/6"] || !logged[ReasonSenderQuota+"/4"] {
		t.Errorf("refusals not logged with their fields: %v", logged)
	}

	// Refreshes of accepted connections are never refused.
	if r := up(d, 1, "10.1.1.10", 1); r.Reason != AcceptRefresh {
		t.Errorf("refresh at the quota: %+v", r)
	}
	// Another port is not starved.
	if r := up(d, 2, "10.1.2.5", 1); r.Reason != AcceptUp {
		t.Fatalf("host behind port 2: %+v, want accepted", r)
	}

	// A restart keeps the counts (the state file has the ingress ports).
	d2 := newWriterDaemon(t, quotaConfig(t, state, 6, 4), quietLogger())
	if r := up(d2, 1, "10.1.1.20", 1); r.Reason != ReasonPortQuota {
		t.Errorf("after a restart, a 7th connection on port 1: %+v, want %s", r, ReasonPortQuota)
	}
	// A "down" frees room on the port.
	down := d2.HandleAnnouncement("s1", 1, wire.ReasonAnnouncement, announceFrame(t, wire.AnnounceDown, "10.1.1.11", 1, connDestQP, nil))
	if down.Reason != AcceptDown {
		t.Fatalf("down: %+v", down)
	}
	if r := up(d2, 1, "10.1.1.20", 1); r.Reason != AcceptUp {
		t.Errorf("after a down: %+v, want accepted", r)
	}
}

// TestPacketInsDropped: when fastcnpd falls behind the switch's packet-ins
// (here: its runner is held up while a host floods announcements, and the
// packet-in buffer holds one), every packet-in the buffer cannot take is
// counted in fastcnp_packet_ins_dropped_total and logged; the others are
// handled once the runner catches up.
func TestPacketInsDropped(t *testing.T) {
	s1, s2, state := twoSwitches(t)
	logger, hook := logtest.NewNullLogger()
	d := startDaemon(t, testConfig(t, state, s1, s2), func(o *Options) {
		o.Logger = logger
		o.ClientOptions = append(o.ClientOptions, p4rt.WithBuffers(64, 1, 256, 256))
	})
	waitInSync(t, d.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	dropped := func() float64 { return testutil.ToFloat64(d.metrics.packetInsDrop.WithLabelValues("s1")) }
	handled := func() float64 {
		n := 0.0
		for _, r := range []string{AcceptUp, AcceptRefresh} {
			n += testutil.ToFloat64(d.metrics.announcements.WithLabelValues("accepted", r))
		}
		return n
	}
	const n = 20
	// Hold the daemon's state: s1's runner blocks on the first batch of
	// packet-ins it takes (the one it got and those already waiting behind
	// it, a few at most), and one more fits in the buffer: the rest is
	// dropped.
	d.mu.Lock()
	locked := true
	defer func() {
		if locked { // a failed wait: let the daemon stop
			d.mu.Unlock()
		}
	}()
	for i := 0; i < n; i++ {
		if err := s1.dp.Receive(context.Background(), announceFrame(t, wire.AnnounceUp, connSender, uint16(1000+i), connDestQP, nil), 1); err != nil {
			t.Fatal(err)
		}
	}
	// Until the drops stop (every packet-in is held or dropped).
	last, since := -1.0, time.Now()
	waitFor(t, "packet-ins dropped", syncTimeout, func() bool {
		if got := dropped(); got != last {
			last, since = got, time.Now()
		}
		return last >= n/2 && time.Since(since) > 200*time.Millisecond
	})
	locked = false
	d.mu.Unlock()
	waitFor(t, "every packet-in handled or dropped", syncTimeout, func() bool { return handled()+dropped() == n })
	if got := dropped(); got < n/2 || got > n-1 {
		t.Errorf("%v packet-ins dropped, want %d to %d", got, n/2, n-1)
	}
	if got := s1.count(p4src.TableRDMAConnection); float64(len(d.Connections())) != handled() || got > int(handled()) {
		t.Errorf("%d connections (%d on s1), %v announcements handled", len(d.Connections()), got, handled())
	}
	logged := 0
	for _, e := range hook.AllEntries() {
		if e.Level == logrus.WarnLevel && strings.HasPrefix(e.Message, "packet-in dropped") && e.Data["switch"] == "s1" &&
			e.Data["port"] == uint64(1) && e.Data["reason"] == uint64(wire.ReasonAnnouncement) && e.Data["dropped_total"] != nil {
			logged++
		}
	}
	if float64(logged) != dropped() {
		t.Errorf("%d drops logged with their fields, %v counted", logged, dropped())
	}
}
