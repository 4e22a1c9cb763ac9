package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fastcnp/fastcnp/sim/scenario"
)

func TestCCUsage(t *testing.T) {
	tests := []struct {
		args   []string
		stderr string
	}{
		{[]string{"cc", "--algo", "hpcc"}, "--algo \"hpcc\": not one the simulator runs"},
		{[]string{"cc", "--algo", "dctcp"}, "--algo \"dctcp\""},
		{[]string{"cc", "--scenario", "s1"}, "--scenario \"s1\""},
		{[]string{"cc", "--lstm-params", "bogus"}, "--lstm-params"},
		{[]string{"cc", "--jobs", "0"}, "--jobs 0"},
		{[]string{"cc", "--mode", "ecn"}, "ecn"},
		{[]string{"cc", "extra"}, "unexpected argument"},
	}
	for _, tc := range tests {
		code, _, errs := runCLI(t, nil, tc.args...)
		if code != exitUsage || !strings.Contains(errs, tc.stderr) {
			t.Errorf("%v: exit %d (want %d), stderr %q (want %q)", tc.args, code, exitUsage, errs, tc.stderr)
		}
	}
}

// TestCCRunsAlgorithm: the PID column really runs the PID (no ECN reaction, RTT
// held near its 5 us target) next to DCQCN, and the files hold both columns.
func TestCCRunsAlgorithm(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI(t, nil, "cc", "--scenario", "s2-scaled", "--algo", "pid", "--mode", "dcqcn", "--out", dir)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "| S2 | dcqcn | pid |") || !strings.Contains(out, "pid: 20 of 20 flows finished") {
		t.Fatalf("output:\n%s", out)
	}
	md, err := os.ReadFile(filepath.Join(dir, "table.md"))
	if err != nil || string(md) != out {
		t.Errorf("table.md differs from stdout (%v)", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ms []scenario.S2Metrics
	if err := json.Unmarshal(b, &ms); err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Mode != "dcqcn" || ms[1].Mode != "pid" {
		t.Fatalf("metrics: %+v", ms)
	}
	dcqcn, pid := ms[0], ms[1]
	for _, m := range ms {
		if m.Finished != 20 || m.RTTSamples == 0 {
			t.Errorf("%s: %d flows finished, %d RTT samples", m.Mode, m.Finished, m.RTTSamples)
		}
	}
	// DCQCN lets the queue build to its marking thresholds; the PID keeps
	// the mean RTT within a microsecond of 5 us and the tail far below DCQCN's.
	if pid.RTTMeanUs < 4 || pid.RTTMeanUs > 6 || pid.RTTP99Us >= dcqcn.RTTP99Us/2 {
		t.Errorf("pid RTT mean %.2f p99 %.2f us, dcqcn p99 %.2f us", pid.RTTMeanUs, pid.RTTP99Us, dcqcn.RTTP99Us)
	}
}
