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
		{[]string{"cc", "--algo", "bbr"}, "--algo \"bbr\": not a host/cc algorithm"},
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

// TestCCRunsAlgorithm: the columns really run their algorithms next to DCQCN:
// the PID holds the mean RTT within a microsecond of its 5 us target, HPCC (INT
// switches, no marking) keeps it near the base RTT, DCTCP's switches mark at K;
// the files hold every column.
func TestCCRunsAlgorithm(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI(t, nil, "cc", "--scenario", "s2-scaled", "--algo", "pid,hpcc,dctcp", "--mode", "dcqcn", "--out", dir)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "| S2 | dcqcn | pid | hpcc | dctcp |") || !strings.Contains(out, "hpcc: 20 of 20 flows finished") {
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
	if len(ms) != 4 || ms[0].Mode != "dcqcn" || ms[1].Mode != "pid" || ms[2].Mode != "hpcc" || ms[3].Mode != "dctcp" {
		t.Fatalf("metrics: %+v", ms)
	}
	dcqcn, pid, hp, dc := ms[0], ms[1], ms[2], ms[3]
	for _, m := range ms {
		if m.Finished != 20 || m.RTTSamples == 0 {
			t.Errorf("%s: %d flows finished, %d RTT samples", m.Mode, m.Finished, m.RTTSamples)
		}
	}
	if pid.RTTMeanUs < 4 || pid.RTTMeanUs > 6 || pid.RTTP99Us >= dcqcn.RTTP99Us/2 {
		t.Errorf("pid RTT mean %.2f p99 %.2f us, dcqcn p99 %.2f us", pid.RTTMeanUs, pid.RTTP99Us, dcqcn.RTTP99Us)
	}
	if hp.RTTMeanUs >= pid.RTTMeanUs || hp.RTTP99Us >= pid.RTTP99Us || hp.Totals.ECNMarks != 0 {
		t.Errorf("hpcc RTT mean %.2f p99 %.2f us, %d marks; pid %.2f / %.2f us", hp.RTTMeanUs, hp.RTTP99Us, hp.Totals.ECNMarks, pid.RTTMeanUs, pid.RTTP99Us)
	}
	if dc.Totals.ECNMarks == 0 {
		t.Errorf("dctcp: no marks at K")
	}
}
