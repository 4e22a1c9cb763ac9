package daemon

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/wire"
)

// valueSet returns the members of a switch's announce_udp_port value set.
func (s *testSwitch) valueSet() []uint64 {
	var out []uint64
	err := s.dp.Exec(context.Background(), func(p *pipeline.Pipeline) error {
		var err error
		out, err = p.ValueSet(p4src.AnnounceUDPPortID)
		return err
	})
	if err != nil {
		s.t.Fatalf("read value set: %v", err)
	}
	return out
}

// TestValueSetsDefaultPort: with the default announcement port, which the
// parser knows without the value set, fastcnpd writes no value set at all,
// and a switch that answers value-set reads with UNIMPLEMENTED (as BMv2
// does) passes its audits without an error (logged once, at info); an
// announcement punted by it is installed everywhere.
func TestValueSetsDefaultPort(t *testing.T) {
	s1 := startSwitchOpts(t, "", 1, switchOpts{noValueSets: true})
	s2 := startSwitch(t, "", 2)
	state := filepath.Join(t.TempDir(), "state.json")
	logger, hook := logtest.NewNullLogger()
	d := startDaemon(t, testConfig(t, state, s1, s2), func(o *Options) {
		o.AuditInterval, o.Logger = 50*time.Millisecond, logger
	})
	waitInSync(t, d.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	audits := syncs(d.Daemon, "s1", "audit")
	waitFor(t, "three more audits", syncTimeout, func() bool { return syncs(d.Daemon, "s1", "audit") >= audits+3 })
	if n := testutil.ToFloat64(d.metrics.syncs.WithLabelValues("s1", "audit", "error")); n != 0 {
		t.Errorf("%v failed audits of s1", n)
	}
	if st := d.byName["s1"].status(); st.LastError != "" {
		t.Errorf("s1 error %q", st.LastError)
	}
	if s1.vs.reads.Load() < 3 || s1.vs.writes.Load() != 0 {
		t.Errorf("s1 refused %d value-set reads and %d writes; want >= 3 reads (audits) and no write",
			s1.vs.reads.Load(), s1.vs.writes.Load())
	}
	if vs := s2.valueSet(); len(vs) != 0 {
		t.Errorf("s2 value set %v, want empty (the parser knows %d)", vs, wire.DefaultAnnouncePort)
	}
	logged := 0
	for _, e := range hook.AllEntries() {
		if strings.Contains(e.Message, "cannot report parser value sets") {
			logged++
		}
	}
	if logged != 1 {
		t.Errorf("value-set reads refused logged %d times, want once", logged)
	}
	// The default port works through the switch that has no value set.
	if err := s1.dp.Receive(context.Background(), announceFrame(t, wire.AnnounceUp, connSender, connSrcPort, connDestQP, nil), 1); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*testSwitch{s1, s2} {
		waitFor(t, "connection installed", syncTimeout, func() bool { return s.count(p4src.TableRDMAConnection) == 1 })
	}
}

// TestValueSetsOtherPort: with another announcement port, a switch that
// implements value sets gets it (and punts announcements to it), while on a
// switch that answers UNIMPLEMENTED everything else is installed and the
// switch reports a clear error; fastcnpd does not retry the refused write
// on every audit.
func TestValueSetsOtherPort(t *testing.T) {
	s1 := startSwitchOpts(t, "", 1, switchOpts{noValueSets: true})
	s2 := startSwitch(t, "", 2)
	state := filepath.Join(t.TempDir(), "state.json")
	cfg := testConfig(t, state, s1, s2)
	cfg.Announce.UDPPort = 4793
	d := startDaemon(t, cfg, func(o *Options) { o.AuditInterval = 50 * time.Millisecond })
	waitInSync(t, d.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	waitFor(t, "s1 value-set write refused", syncTimeout, func() bool { return s1.vs.writes.Load() >= 1 })
	audits := syncs(d.Daemon, "s1", "audit")
	waitFor(t, "three more audits", syncTimeout, func() bool { return syncs(d.Daemon, "s1", "audit") >= audits+3 })
	if n := s1.vs.writes.Load(); n != 1 {
		t.Errorf("s1 was sent the value set %d times, want once", n)
	}
	st := d.byName["s1"].status()
	for _, want := range []string{"does not support parser value sets", "announce.udp_port 4793", "use announce.udp_port 4792"} {
		if !strings.Contains(st.LastError, want) {
			t.Errorf("s1 error %q lacks %q", st.LastError, want)
		}
	}
	if !inSync(t, d.Daemon, "s1", s1) {
		t.Error("s1 lacks table entries: the value-set refusal failed the rest of the install")
	}
	if st := d.byName["s2"].status(); st.LastError != "" {
		t.Errorf("s2 error %q", st.LastError)
	}
	if vs := s2.valueSet(); len(vs) != 1 || vs[0] != 4793 {
		t.Errorf("s2 value set %v, want [4793]", vs)
	}
	frame := announceFrame(t, wire.AnnounceUp, "10.2.1.5", connSrcPort, connDestQP, nil)
	frame[14+20+2], frame[14+20+3] = 4793>>8, 4793&0xff // UDP destination 4793
	if err := s2.dp.Receive(context.Background(), frame, 1); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*testSwitch{s1, s2} {
		waitFor(t, "connection installed", syncTimeout, func() bool { return s.count(p4src.TableRDMAConnection) == 1 })
	}
}
