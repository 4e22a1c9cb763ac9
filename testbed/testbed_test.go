package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/internal/netns/netnstest"
	"github.com/fastcnp/fastcnp/model/pipeline"
)

var (
	binOnce sync.Once
	bins    Binaries
	binErr  error
	binDir  string
)

// testBinaries builds the commands once per test binary; it skips the test
// when fastcnp-switch or fastcnp-host cannot be built (the in-process
// controller stands in for a missing fastcnpd).
func testBinaries(t *testing.T) Binaries {
	t.Helper()
	binOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		root, err := ModuleRoot(ctx)
		if err != nil {
			binErr = err
			return
		}
		binDir, err = os.MkdirTemp("", "fastcnp-testbed-test-")
		if err != nil {
			binErr = err
			return
		}
		bins, binErr = BuildBinaries(ctx, root, binDir)
	})
	if bins.Switch == "" || bins.Host == "" {
		t.Skipf("testbed: cannot build the commands the testbed runs: %v", binErr)
	}
	if binErr != nil {
		t.Logf("testbed: %v (the controller runs in-process)", binErr)
	}
	return bins
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func runTopo(t *testing.T, file string, mode config.Mode, dur time.Duration) *Result {
	t.Helper()
	return runTopoCC(t, file, mode, "", dur)
}

// runTopoCC is runTopo with the hosts' sender algorithm (cc; "" = the mode's).
func runTopoCC(t *testing.T, file string, mode config.Mode, cc string, dur time.Duration) *Result {
	t.Helper()
	netnstest.RequireRoot(t)
	if testing.Short() {
		t.Skip("skipping: real-time testbed run (seconds of traffic) in -short mode")
	}
	b := testBinaries(t)
	topo := loadTopo(t, file)
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := filepath.Join(t.TempDir(), string(mode))
	res, err := Run(ctx, Options{Topology: topo, Mode: mode, CC: cc, Binaries: b, WorkDir: dir, Duration: dur,
		Nice: DefaultNice, Log: log.WithField("test", t.Name())})
	if err != nil {
		if errors.Is(err, ErrMissingCommand) {
			t.Skip(err)
		}
		t.Fatalf("Run(%s, %s): %v", file, mode, err)
	}
	for _, f := range res.Flows {
		t.Logf("%s %s: %.1f Mb/s of a fair %.1f Mb/s (%.0f%%), CNPs switch %d NP %d, CE %d, retransmits %d, PAUSE rx %d (held %.2f s), started %.1f ms late",
			mode, f.Name, f.ThroughputBps/1e6, f.FairShareBps/1e6, 100*f.ShareOfFair, f.CNPsSwitch, f.CNPsNP, f.ECNMarks, f.Retransmits,
			f.PauseRx, f.PausedMs/1e3, f.StartLateMs)
		if f.Sized {
			t.Logf("%s %s: FCT %.1f ms, fluid ideal %.1f ms, slowdown %.2f", mode, f.Name, f.FCTMs, f.IdealFCTMs, f.Slowdown)
		}
	}
	for _, l := range res.Links {
		t.Logf("%s link %s: %d bytes in %.1f ms, %.1f%% of %.1f Mb/s (payload)", mode, l.Link, l.Bytes, l.SpanMs, 100*l.Use, l.CapacityBps/1e6)
	}
	if res.MakespanMs > 0 {
		t.Logf("%s: time to finish all %.1f ms (fluid ideal %.1f ms)", mode, res.MakespanMs, res.IdealMakespanMs)
	}
	for _, s := range res.Switches {
		t.Logf("%s %s: PAUSE tx %d rx %d, switch CNPs %d, ECN marks %d, lossless drops %d (host ingress %d, fabric ingress %d), headroom peak %d%%, lag max %.1f ms, rdma connections %d",
			mode, s.Name, s.PauseTx, s.PauseRx, s.SwitchCNPs, s.ECNMarks, s.LosslessDrops, s.HostEdgeLosslessDrops, s.FabricLosslessDrops,
			s.HeadroomPeakPercent(), s.LateMaxMs, s.RDMAConnections)
	}
	sum := res.Summary()
	t.Logf("%s: CPU seconds switches %.1f, hosts %.1f, fastcnpd %.1f; load average %.1f -> %.1f",
		mode, sum.CPUSwitches, sum.CPUHosts, sum.CPUController, res.LoadAvg[0], res.LoadAvg[1])
	return res
}

// checkLossless asserts that the lossless class dropped nothing. Drops at
// ingress ports facing hosts are reported apart: they mean the host agent
// kept sending after the switch paused it.
func checkLossless(t *testing.T, res *Result) {
	t.Helper()
	tot := res.Totals()
	if tot.FabricLosslessDrops != 0 {
		t.Errorf("%s: %d lossless drops at switch-to-switch ingress ports: the upstream switch kept sending longer after PAUSE than the headroom covers (pfc_response_time; a CPU-starved software switch reacts late)", res.Mode, tot.FabricLosslessDrops)
	}
	if tot.HostEdgeLosslessDrops != 0 {
		t.Errorf("%s: %d lossless drops at ingress ports facing hosts: fastcnp-host does not stop on PFC PAUSE", res.Mode, tot.HostEdgeLosslessDrops)
	}
	if other := tot.LosslessDrops - min(tot.LosslessDrops, tot.HostEdgeLosslessDrops+tot.FabricLosslessDrops); other != 0 {
		t.Errorf("%s: %d further lossless drops", res.Mode, other)
	}
}

// checkPhysical fails the test if a link delivered more than it can carry
// in the run's span (Result.CheckPhysical): the measurement is wrong.
func checkPhysical(t *testing.T, res *Result) {
	t.Helper()
	if len(res.Links) == 0 {
		t.Errorf("%s: no link could be checked (no flow reported its times)", res.Mode)
	}
	if err := res.CheckPhysical(); err != nil {
		t.Error(err)
	}
}

// TestS2Incast runs the 4-to-1 incast in fastcnp mode: every flow
// completes, the lossless class drops nothing, no link delivered more than
// it can carry, and the time to finish all (on the agents' common clock)
// is at least the fluid ideal.
func TestS2Incast(t *testing.T) {
	res := runTopo(t, "s2-incast-4.json", config.ModeFastCNP, 0)
	checkLossless(t, res)
	checkPhysical(t, res)
	var sum float64
	for _, f := range res.Flows {
		if !f.Done {
			t.Errorf("flow %s did not complete (%d bytes received)", f.Name, f.BytesReceived)
		}
		sum += f.ThroughputBps
	}
	if sum == 0 {
		t.Fatal("no traffic")
	}
	if res.MakespanMs == 0 || res.MakespanMs < res.IdealMakespanMs {
		t.Errorf("time to finish all %.1f ms, fluid ideal %.1f ms: the measured one cannot be shorter", res.MakespanMs, res.IdealMakespanMs)
	}
}

// TestS2IncastOtherCC runs the 4-to-1 incast with the senders HPCC and
// DCTCP need a switch for: every flow completes without a lossless drop,
// and the feedback reached the senders end to end: with hpcc (ports in mode
// int) ACKs echo INT records, with dctcp (ports marking at K) ACKs carry the
// ECN echo.
func TestS2IncastOtherCC(t *testing.T) {
	for _, tc := range []struct {
		cc   string
		mode config.Mode
		int_ bool
	}{
		{"hpcc", config.ModeINT, true},
		{"dctcp", config.ModeECN, false},
	} {
		t.Run(tc.cc, func(t *testing.T) {
			res := runTopoCC(t, "s2-incast-4.json", "", tc.cc, 0)
			if res.Mode != tc.mode || res.CC != tc.cc || res.Label() != tc.cc {
				t.Errorf("ran mode %s, cc %s, label %s", res.Mode, res.CC, res.Label())
			}
			checkLossless(t, res)
			var intAcks, eceAcks uint64
			for _, f := range res.Flows {
				if !f.Done {
					t.Errorf("flow %s did not complete (%d bytes received)", f.Name, f.BytesReceived)
				}
				intAcks += f.INTAcks
				eceAcks += f.ECEAcks
			}
			if tc.int_ && intAcks == 0 {
				t.Error("no ACK echoed INT records")
			}
			if !tc.int_ && intAcks != 0 {
				t.Errorf("%d ACKs with INT records without INT", intAcks)
			}
			// Four senders start with a window of one BDP (125 KB) each:
			// the queue passes K = 100 KB, so DCTCP must see echoes.
			if !tc.int_ && eceAcks == 0 {
				t.Error("dctcp: no ACK carried the ECN echo")
			}
			t.Logf("%s: %d ACKs with INT records, %d with ECE", tc.cc, intAcks, eceAcks)
		})
	}
}

// TestS1Victim runs the victim-flow scenario in ecn mode and then in
// fastcnp mode and compares the victim's throughput as a fraction of its
// max-min fair share: fastcnp must give it clearly more (measured ratios
// and their spread: docs/testbed.md).
func TestS1Victim(t *testing.T) {
	const dur = 7 * time.Second
	ecn := runTopo(t, "s1-victim.json", config.ModeECN, dur)
	fc := runTopo(t, "s1-victim.json", config.ModeFastCNP, dur)
	t.Run("lossless-ecn", func(t *testing.T) { checkLossless(t, ecn) })
	t.Run("lossless-fastcnp", func(t *testing.T) { checkLossless(t, fc) })
	t.Run("physical-ecn", func(t *testing.T) { checkPhysical(t, ecn) })
	t.Run("physical-fastcnp", func(t *testing.T) { checkPhysical(t, fc) })
	ve, vf := ecn.Victim(), fc.Victim()
	if ve == nil || vf == nil {
		t.Fatal("no victim flow in the results")
	}
	if vf.ThroughputBps == 0 {
		t.Fatalf("victim carried nothing in fastcnp mode")
	}
	// Margin: fastcnp must give the victim at least 1.5 times the share of
	// its fair share that ecn gives it; a ratio measured in this run, not a
	// wall-clock threshold. Runs on the 2-core development machine under
	// other load measured 1.9 to 3.1 (docs/testbed.md).
	const wantRatio = 1.5
	ratio := vf.ShareOfFair / max(ve.ShareOfFair, 1e-9)
	t.Logf("victim share of fair: ecn %.1f%%, fastcnp %.1f%%, ratio %.2f (want >= %.1f)",
		100*ve.ShareOfFair, 100*vf.ShareOfFair, ratio, wantRatio)
	if ratio < wantRatio {
		t.Errorf("victim: fastcnp gives %.1f%% of its fair share, ecn %.1f%%: ratio %.2f < %.1f",
			100*vf.ShareOfFair, 100*ve.ShareOfFair, ratio, wantRatio)
	}
}

// TestS4INC runs INC workers (fastcnp-host) through a real fastcnp-switch
// programmed by fastcnpd: three workers aggregate two concurrent messages
// toward a fourth host, which checks every aggregated vector against the
// element-wise sum of the workers' seeded vectors. fastcnpd installs the
// workers' connections from their announcements (rdma_connection, with
// rank and group) and the group's contributors mask (inc_group).
// Contributions are not acknowledged, so the workload sends no
// retransmission; a duplicate would show in the switch's inc_duplicates and
// the destination's duplicate count, and both must be 0.
func TestS4INC(t *testing.T) {
	topo := loadTopo(t, "s4-inc.json")
	// Precondition of the topology, not of the switch: no two offsets of
	// the concurrent messages share an aggregation slot, so no contribution
	// can meet a busy slot (which the data plane drops and the workers never
	// resend) whatever the skew between the workers.
	slots := map[uint32]string{}
	want := map[incKey]bool{}
	var contributions, results uint64
	for _, f := range topo.Flows {
		if f.INC == nil {
			continue
		}
		k := incKey{f.INC.Group, f.INC.Message}
		contributions += uint64(f.INC.Offsets)
		if want[k] {
			continue
		}
		want[k] = true
		results += uint64(f.INC.Offsets)
		for o := 0; o < f.INC.Offsets; o++ {
			s := pipeline.IncSlot(uint32(k.group)<<16|uint32(k.message), uint32(o))
			id := fmt.Sprintf("message %d/%d offset %d", k.group, k.message, o)
			if prev, dup := slots[s]; dup {
				t.Fatalf("s4-inc.json: %s and %s share slot %d: pick other message IDs or fewer offsets", prev, id, s)
			}
			slots[s] = id
		}
	}
	res := runTopo(t, "s4-inc.json", config.ModeFastCNP, 0)
	checkLossless(t, res)
	if len(res.INC) != len(want) {
		t.Fatalf("%d INC messages in the results, want %d: %+v", len(res.INC), len(want), res.INC)
	}
	for _, m := range res.INC {
		c := m.Check
		t.Logf("INC %d/%d: %d workers (%d done), %d offsets; at %s: %d results, %d correct, %d wrong, %d duplicates, %d bad offsets, complete %v",
			m.Group, m.Message, m.Workers, m.WorkersDone, m.Offsets, m.Dst, c.Results, c.Correct, c.Wrong, c.Duplicates, c.BadOffset, c.Complete)
		if !m.Reported || m.WorkersDone != m.Workers {
			t.Errorf("INC %d/%d: reported %v, %d of %d workers sent every vector", m.Group, m.Message, m.Reported, m.WorkersDone, m.Workers)
		}
		if !c.Complete || c.Correct != uint64(m.Offsets) || c.Results != uint64(m.Offsets) || c.Wrong != 0 || c.Duplicates != 0 || c.BadOffset != 0 {
			t.Errorf("INC %d/%d: every one of the %d offsets must arrive once with the element-wise sum: %+v", m.Group, m.Message, m.Offsets, c)
		}
	}
	var tot SwitchCounters
	for _, s := range res.Switches {
		t.Logf("%s: INC contributions %d, results %d, duplicates %d, slot busy %d; rdma connections %d",
			s.Name, s.INCContributions, s.INCResults, s.INCDuplicates, s.INCSlotBusy, s.RDMAConnections)
		tot.INCContributions += s.INCContributions
		tot.INCResults += s.INCResults
		tot.INCDuplicates += s.INCDuplicates
		tot.INCSlotBusy += s.INCSlotBusy
		tot.RDMAConnections += s.RDMAConnections
	}
	if tot.INCContributions != contributions || tot.INCResults != results || tot.INCDuplicates != 0 || tot.INCSlotBusy != 0 {
		t.Errorf("switch INC counters %+v: want %d contributions, %d results, no duplicate, no busy slot", tot, contributions, results)
	}
	if n := len(topo.Flows); tot.RDMAConnections != n {
		t.Errorf("fastcnpd installed %d RDMA connections, want the %d announced", tot.RDMAConnections, n)
	}
}

// runTopology runs the topology of topoJSON in real time in network
// namespaces (root; skipped in -short mode or without the commands) with
// o's run-specific options, in fastcnp mode, and returns the result.
func runTopology(t *testing.T, topoJSON string, o Options) *Result {
	t.Helper()
	netnstest.RequireRoot(t)
	if testing.Short() {
		t.Skip("skipping: real-time testbed run (seconds of traffic) in -short mode")
	}
	b := testBinaries(t)
	file := filepath.Join(t.TempDir(), "topology.json")
	if err := os.WriteFile(file, []byte(topoJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	topo, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o.Topology, o.Mode, o.Binaries, o.WorkDir = topo, config.ModeFastCNP, b, filepath.Join(t.TempDir(), "run")
	o.Nice, o.Log = DefaultNice, log.WithField("test", t.Name())
	res, err := Run(ctx, o)
	if err != nil {
		if errors.Is(err, ErrMissingCommand) {
			t.Skip(err)
		}
		t.Fatalf("Run: %v", err)
	}
	return res
}

// longFlowTopo is one switch, two hosts and one long flow: the real-time
// check of announcement refreshes.
const longFlowTopo = `{
  "name": "long-flow",
  "description": "One long flow through one switch: fastcnpd must keep its connection while the host refreshes it.",
  "defaults": {"rate": "100Mb/s", "delay": "20us", "buffer": "32MB", "rtt_base": "10ms", "qth": "100KB",
               "cnp_gap": "200us", "mtu": 9000, "pfc_response_time": "200ms", "rto": "500ms", "cc_scale": 10,
               "duration": "8s"},
  "hosts": {
    "h1": {"ip": "10.0.0.1/24", "mac": "02:00:00:00:00:01"},
    "h2": {"ip": "10.0.0.2/24", "mac": "02:00:00:00:00:02"}
  },
  "switches": {"s1": {"device_id": 1, "grpc_port": 50001}},
  "links": [{"a": "h1", "b": "s1-p1"}, {"a": "h2", "b": "s1-p2"}],
  "flows": [{"name": "long", "src": "h1", "dst": "h2", "start": "100ms", "duration": "7900ms"}]
}`

// TestLongFlowKeepsConnection runs fastcnp-switch, fastcnpd (announce
// idle_timeout 2 s) and two fastcnp-host agents in network namespaces, in
// real time: the sender refreshes its announcement every 500 ms, so its
// connection is still installed at the end of a flow of 8 s, four idle
// timeouts long.
func TestLongFlowKeepsConnection(t *testing.T) {
	const idle = 2 * time.Second
	res := runTopology(t, longFlowTopo, Options{IdleTimeout: idle, HostArgs: []string{"--announce-interval", "500ms"}})
	f := res.Flow("long")
	if f == nil || f.BytesReceived == 0 {
		t.Fatalf("the long flow carried nothing: %+v", f)
	}
	if res.Duration < 3*idle {
		t.Fatalf("the run lasted %v, not more than 3 idle timeouts (%v)", res.Duration, 3*idle)
	}
	if n := res.Switches[0].RDMAConnections; n != 1 {
		t.Errorf("%d rdma_connection entries on s1 after %v of a flow whose host refreshed it (idle_timeout %v), want 1",
			n, res.Duration, idle)
	}
}

// authTopo is one switch and three hosts: h1 and h2 each send to h3.
const authTopo = `{
  "name": "auth",
  "description": "Authenticated announcements: h1 has its key, h2 a forged one.",
  "defaults": {"rate": "100Mb/s", "delay": "20us", "buffer": "32MB", "rtt_base": "10ms", "qth": "100KB",
               "cnp_gap": "200us", "mtu": 9000, "pfc_response_time": "200ms", "rto": "500ms", "cc_scale": 10,
               "duration": "3s"},
  "hosts": {
    "h1": {"ip": "10.0.0.1/24", "mac": "02:00:00:00:00:01"},
    "h2": {"ip": "10.0.0.2/24", "mac": "02:00:00:00:00:02"},
    "h3": {"ip": "10.0.0.3/24", "mac": "02:00:00:00:00:03"}
  },
  "switches": {"s1": {"device_id": 1, "grpc_port": 50001}},
  "links": [{"a": "h1", "b": "s1-p1"}, {"a": "h2", "b": "s1-p2"}, {"a": "h3", "b": "s1-p3"}],
  "flows": [{"name": "keyed", "src": "h1", "dst": "h3", "start": "100ms", "duration": "2900ms"},
            {"name": "forged", "src": "h2", "dst": "h3", "start": "100ms", "duration": "2900ms"}]
}`

// TestAuthenticatedAnnouncementsEndToEnd runs fastcnp-switch, fastcnpd
// with announce.auth and three fastcnp-host agents in network namespaces,
// in real time: h1's announcements, signed with its key, go through the
// switch's punt to fastcnpd and become an rdma_connection entry; h2's,
// signed with a key fastcnpd does not hold, are refused as forged
// (bad_tag) and install nothing.
func TestAuthenticatedAnnouncementsEndToEnd(t *testing.T) {
	res := runTopology(t, authTopo, Options{AnnounceKeys: true, ForgedKeyHosts: []string{"h2"},
		HostArgs: []string{"--announce-interval", "500ms"}})
	work := res.WorkDir
	if f := res.Flow("keyed"); f == nil || f.BytesReceived == 0 {
		t.Fatalf("h1's flow carried nothing: %+v", f)
	}
	if n := res.Switches[0].RDMAConnections; n != 1 {
		t.Errorf("%d rdma_connection entries on s1, want 1 (h1's; h2's forged announcements refused)", n)
	}
	logs, err := os.ReadFile(filepath.Join(work, "fastcnpd.log"))
	if err != nil {
		t.Fatal(err)
	}
	var forged, keyed int
	for _, line := range strings.Split(string(logs), "\n") {
		if !strings.Contains(line, "announcement rejected") {
			continue
		}
		switch {
		case strings.Contains(line, "reason=bad_tag") && strings.Contains(line, "connection=\"10.0.0.2:"):
			forged++
		case strings.Contains(line, "connection=\"10.0.0.1:"):
			keyed++
			t.Errorf("h1's announcement rejected: %s", line)
		}
	}
	if forged == 0 {
		t.Errorf("no bad_tag refusal of h2's announcements in fastcnpd's log:\n%s", logs)
	}
	t.Logf("h2's forged announcements refused: %d; h1's rejected: %d", forged, keyed)
}
