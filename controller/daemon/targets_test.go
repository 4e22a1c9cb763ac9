package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"google.golang.org/protobuf/proto"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	bfpb "github.com/fastcnp/fastcnp/proto/stratum/hal/lib/barefoot"
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

// TestTofinoDeviceConfig: for a tofino switch fastcnpd pushes Stratum's
// BfPipelineConfig built from p4c-barefoot's output directory (docs/tofino.md), and
// writes clone session CNP_CLONE_SESSION as the mirror session to the
// recirculation port with the configured truncation; the other switch keeps its
// clone session to the CPU port.
func TestTofinoDeviceConfig(t *testing.T) {
	out := t.TempDir()
	files := map[string]string{
		"fastcnp.conf": `{"p4_devices": [{"p4_programs": [{"program-name": "fastcnp",
			"bfrt-config": "share/tofinopd/fastcnp/bf-rt.json",
			"p4_pipelines": [{"p4_pipeline_name": "pipe", "context": "share/tofinopd/fastcnp/pipe/context.json",
			"config": "share/tofinopd/fastcnp/pipe/tofino.bin", "pipe_scope": [0, 1, 2, 3]}]}]}]}`,
		"bf-rt.json":        `{"schema_version": "1.0.0"}`,
		"pipe/context.json": `{"program_name": "fastcnp"}`,
		"pipe/tofino.bin":   "\x01\x02\x03",
	}
	for p, c := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(out, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s1, s2 := startSwitch(t, "", 1), startSwitch(t, "", 2)
	cfg := testConfig(t, filepath.Join(t.TempDir(), "state.json"), s1, s2)
	sw := &cfg.Switches[0]
	tofino := config.DefaultTofino(config.Tofino1)
	sw.Target, sw.Tofino = config.TargetTofino, &tofino
	sw.P4Info = filepath.Join(p4src.SourceDir(), p4src.P4InfoFileName)
	sw.DeviceConfig = out
	d := startDaemon(t, cfg, nil)
	waitInSync(t, d.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})

	s1.writes.mu.Lock()
	dc := s1.writes.deviceConfig
	s1.writes.mu.Unlock()
	var got bfpb.BfPipelineConfig
	if err := proto.Unmarshal(dc, &got); err != nil {
		t.Fatalf("s1's device config is not a BfPipelineConfig: %v", err)
	}
	want := &bfpb.BfPipelineConfig{P4Name: "fastcnp", BfruntimeInfo: []byte(files["bf-rt.json"]),
		Profiles: []*bfpb.BfPipelineConfig_Profile{{ProfileName: "pipe", Context: []byte(files["pipe/context.json"]),
			Binary: []byte(files["pipe/tofino.bin"]), PipeScope: []uint32{0, 1, 2, 3}}}}
	if !proto.Equal(&got, want) {
		t.Errorf("device config %v, want %v", &got, want)
	}
	for _, c := range []struct {
		s        *testSwitch
		port     uint16
		truncate int32
	}{{s1, p4src.Tofino1RecircPort, config.DefaultMirrorTruncate}, {s2, p4src.CPUPort, 0}} {
		var cs pipeline.CloneSession
		err := c.s.dp.Exec(context.Background(), func(p *pipeline.Pipeline) error {
			var err error
			cs, err = p.ReadCloneSession(p4src.CNPCloneSession)
			return err
		})
		if err != nil || cs.EgressPort != c.port || cs.PacketLengthBytes != c.truncate {
			t.Errorf("switch %d clone session %+v (%v), want port %d truncation %d", c.s.deviceID, cs, err, c.port, c.truncate)
		}
	}
}
