package main

import (
	"encoding/json"
	"fmt"
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

// TestCCFiles: with --topo and --flows every column writes the run's files (fct.txt
// with every flow, for fastcnp-sim analyze); HPCC crosses two INT switches.
func TestCCFiles(t *testing.T) {
	d := t.TempDir()
	topo, flows, out := filepath.Join(d, "t.txt"), filepath.Join(d, "f.txt"), filepath.Join(d, "out")
	if err := os.WriteFile(topo, []byte("6 2 5\n4 5\n0 4 100Gbps 1000ns 0\n1 4 100Gbps 1000ns 0\n2 5 100Gbps 1000ns 0\n3 5 100Gbps 1000ns 0\n4 5 100Gbps 1000ns 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// 40 flows from hosts 0 and 1 to 2 and 3, 1 to 40 KB, 1 us apart.
	fl := "40\n"
	for i := range 40 {
		fl += fmt.Sprintf("%d %d 3 100 %d 2.%06d\n", i%2, 2+i/2%2, 1000*(i+1), i)
	}
	if err := os.WriteFile(flows, []byte(fl), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, errs := runCLI(t, nil, "cc", "--topo", topo, "--flows", flows, "--algo", "hpcc,dctcp", "--mode", "dcqcn", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, col := range []string{"dcqcn", "hpcc", "dctcp"} {
		if !strings.Contains(stdout, col+": 40 of 40 flows finished") {
			t.Errorf("%s: stdout %q", col, stdout)
		}
		b, err := os.ReadFile(filepath.Join(out, col, "fct.txt"))
		if err != nil || strings.Count(string(b), "\n") != 40 {
			t.Errorf("%s/fct.txt: %v\n%s", col, err, b)
		}
	}
	if code, _, errs := runCLI(t, nil, "analyze", "--type", "all", "hpcc="+filepath.Join(out, "hpcc", "fct.txt")); code != exitOK {
		t.Errorf("analyze: exit %d: %s", code, errs)
	}
	for _, args := range [][]string{
		{"cc", "--topo", topo},
		{"cc", "--topo", topo, "--flows", flows},
	} {
		if code, _, errs := runCLI(t, nil, args...); code != exitUsage || !strings.Contains(errs, "--topo") {
			t.Errorf("%v: exit %d, %s", args, code, errs)
		}
	}
}
