package testbed

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/internal/netns/netnstest"
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
	res, err := Run(ctx, Options{Topology: topo, Mode: mode, Binaries: b, WorkDir: dir, Duration: dur,
		Nice: DefaultNice, Log: log.WithField("test", t.Name())})
	if err != nil {
		if errors.Is(err, ErrMissingCommand) {
			t.Skip(err)
		}
		t.Fatalf("Run(%s, %s): %v", file, mode, err)
	}
	for _, f := range res.Flows {
		t.Logf("%s %s: %.1f Mb/s of a fair %.1f Mb/s (%.0f%%), CNPs switch %d NP %d, CE %d, retransmits %d, PAUSE rx %d (held %.2f s)",
			mode, f.Name, f.ThroughputBps/1e6, f.FairShareBps/1e6, 100*f.ShareOfFair, f.CNPsSwitch, f.CNPsNP, f.ECNMarks, f.Retransmits,
			f.PauseRx, f.PausedMs/1e3)
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

// TestS2Incast runs the 4-to-1 incast in fastcnp mode: every flow
// completes and the lossless class drops nothing.
func TestS2Incast(t *testing.T) {
	res := runTopo(t, "s2-incast-4.json", config.ModeFastCNP, 0)
	checkLossless(t, res)
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
