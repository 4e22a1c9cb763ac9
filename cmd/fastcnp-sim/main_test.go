package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fastcnp/fastcnp/sim/hpcc"
	"github.com/fastcnp/fastcnp/sim/sweep"
)

const data = "../../sim/data/hpcc/"

// runCLI runs the command line and returns exit code, stdout and stderr.
func runCLI(t *testing.T, environ map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(&env{ctx: context.Background(), stdout: &out, stderr: &errb, getenv: func(k string) string { return environ[k] }}, args)
	return code, out.String(), errb.String()
}

func TestUsage(t *testing.T) {
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{nil, exitUsage, "", "commands:"},
		{[]string{"-h"}, exitOK, "gen ", ""},
		{[]string{"help"}, exitOK, "merge ", ""},
		{[]string{"help", "sweep"}, exitOK, "--shard auto/8", ""},
		{[]string{"help", "nope"}, exitUsage, "", "unknown command \"nope\""},
		{[]string{"nope"}, exitUsage, "", "unknown command \"nope\""},
		{[]string{"gen", "-h"}, exitOK, "examples:", ""},
		{[]string{"gen", "--bogus"}, exitUsage, "", "flag provided but not defined: -bogus"},
		{[]string{"gen", "--cdf", "x"}, exitUsage, "", "--cdf and --duration are required"},
		{[]string{"gen", "--cdf", "x", "--duration", "1ms", "--hosts", "4", "--topology", "t"}, exitUsage, "", "either --topology or --hosts"},
		{[]string{"gen", "--cdf", "x", "--duration", "1ms", "--hosts", "4", "--load", "1.5"}, exitUsage, "", "--load"},
		{[]string{"gen", "--cdf", "x", "--duration", "-1ms", "--hosts", "4"}, exitUsage, "", "--duration"},
		{[]string{"gen", "--cdf", "x", "--duration", "1ms", "--hosts", "4", "--incast", "60x500KB"}, exitUsage, "", "SENDERSxSIZE@SHARE"},
		{[]string{"gen", "--cdf", "x", "--duration", "1ms", "--hosts", "4", "--rate", "fast"}, exitUsage, "", "--rate"},
		{[]string{"gen", "--cdf", "x", "--duration", "1ms", "--hosts", "4", "extra"}, exitUsage, "", "unexpected argument"},
		{[]string{"analyze"}, exitUsage, "", "no fct.txt file"},
		{[]string{"analyze", "--type", "big", "f"}, exitUsage, "", "--type"},
		{[]string{"analyze", "--step", "0", "f"}, exitUsage, "", "--step"},
		{[]string{"analyze", "--time-limit", "soon", "f"}, exitUsage, "", "--time-limit"},
		{[]string{"analyze", "a=f", "a=g"}, exitUsage, "", "label \"a\" used twice"},
		{[]string{"analyze", "--format", "xml", "f"}, exitUsage, "", "--format"},
		{[]string{"analyze", "--standalone", "mine", "f"}, exitUsage, "", "--standalone \"mine\""},
		{[]string{"analyze", "--standalone", "hpcc", "f"}, exitUsage, "", "--standalone hpcc needs --topo"},
		{[]string{"analyze", "--topo", "t", "f"}, exitUsage, "", "--topo is for --standalone hpcc"},
		{[]string{"sweep"}, exitUsage, "", "give --modes"},
		{[]string{"sweep", "--modes", "a", "--workload", "w=f", "--loads", "0.3"}, exitUsage, "", "--topology, --duration and --out are required"},
		{[]string{"sweep", "--modes", "a", "--workload", "w", "--loads", "0.3"}, exitUsage, "", "NAME=CDF_FILE"},
		{[]string{"sweep", "--modes", "a/b", "--workload", "w=f", "--loads", "0.3"}, exitUsage, "", "mode name \"a/b\""},
		{[]string{"sweep", "--modes", "a", "--workload", "w=f", "--loads", "0.3", "--seeds", "x"}, exitUsage, "", "--seeds"},
		{[]string{"sweep", "--modes", "a", "--workload", "w=f", "--loads", "0.3", "--topology", "t", "--duration", "1ms", "--out", "o", "--shard", "3/3"}, exitUsage, "", "--shard"},
		{[]string{"sweep", "--modes", "a", "--workload", "w=f", "--loads", "0.3", "--topology", "t", "--duration", "1ms", "--out", "o", "--shard", "auto"}, exitUsage, "", "neither JOB_COMPLETION_INDEX"},
		{[]string{"merge"}, exitUsage, "", "want the sweep's output directory"},
	}
	for _, tc := range tests {
		code, out, errs := runCLI(t, nil, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.stdout) || !strings.Contains(errs, tc.stderr) {
			t.Errorf("%v: exit %d (want %d)\nstdout %q (want %q)\nstderr %q (want %q)", tc.args, code, tc.code, out, tc.stdout, errs, tc.stderr)
		}
	}
}

func TestGen(t *testing.T) {
	dir := t.TempDir()
	gen := func(name string, extra ...string) []hpcc.Flow {
		path := filepath.Join(dir, name)
		args := append([]string{"gen", "--topology", data + "fat.txt", "--cdf", data + "FbHdp_distribution.txt", "--load", "30%", "--duration", "1ms", "-o", path}, extra...)
		code, _, errs := runCLI(t, nil, args...)
		if code != exitOK || !strings.Contains(errs, "from 320 hosts at 100Gbps") {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		flows, err := hpcc.ParseFlows(path, f)
		if err != nil {
			t.Fatal(err)
		}
		return flows
	}
	a, b := gen("a.txt", "--seed", "5"), gen("b.txt", "--seed", "5")
	ab, _ := os.ReadFile(filepath.Join(dir, "a.txt"))
	bb, _ := os.ReadFile(filepath.Join(dir, "b.txt"))
	if len(a) < 1000 || !bytes.Equal(ab, bb) {
		t.Fatalf("same seed: %d flows, files equal %v", len(a), bytes.Equal(ab, bb))
	}
	c := gen("c.txt", "--seed", "5", "--incast", "60x500KB@0.5")
	incast := 0
	for _, f := range c {
		if f.DPort == hpcc.DPortIncast {
			incast++
			if f.Size != 500000 {
				t.Fatalf("incast flow %+v", f)
			}
		}
	}
	if incast == 0 || incast%60 != 0 || len(c)-incast != len(b) {
		t.Errorf("%d incast flows, %d background (want %d)", incast, len(c)-incast, len(b))
	}
	if first := a[0]; first.StartNs < 2e9 || first.PG != 3 || first.DPort != 100 {
		t.Errorf("first flow %+v", first)
	}
	// --hosts and stdout, as traffic_gen.py's -n.
	code, out, _ := runCLI(t, nil, "gen", "--hosts", "4", "--cdf", data+"AliStorage2019.txt", "--load", "0.5", "--duration", "1ms", "--start", "0s")
	flows, err := hpcc.ParseFlows("stdout", strings.NewReader(out))
	if code != exitOK || err != nil || len(flows) == 0 {
		t.Fatalf("--hosts 4: exit %d, %v", code, err)
	}
	for _, f := range flows {
		if f.Src > 3 || f.Dst > 3 || f.StartNs > 1e6 {
			t.Fatalf("flow %+v outside hosts 0..3 or the window", f)
		}
	}
	// A broken CDF file: exit 1 and its line.
	bad := filepath.Join(dir, "bad.cdf")
	os.WriteFile(bad, []byte("0 0\n100 50\nx 100\n"), 0o644)
	code, _, errs := runCLI(t, nil, "gen", "--hosts", "4", "--cdf", bad, "--duration", "1ms")
	if code != exitError || !strings.Contains(errs, bad+":3: ") {
		t.Errorf("bad CDF: exit %d, %q", code, errs)
	}
}

func TestAnalyze(t *testing.T) {
	td := "../../sim/analysis/testdata/"
	code, out, errs := runCLI(t, nil, "analyze", "a="+td+"fct_fat_a.txt", "b="+td+"fct_fat_b.txt")
	want, _ := os.ReadFile(td + "script_t0.txt")
	if code != exitOK || out != string(want) {
		t.Fatalf("exit %d, stderr %q; stdout differs from fct_analysis.py's", code, errs)
	}
	code, out, _ = runCLI(t, nil, "analyze", "--type", "1", "--format", "text", "a="+td+"fct_fat_a.txt", "b="+td+"fct_fat_b.txt")
	want, _ = os.ReadFile(td + "script_t1.txt")
	if code != exitOK || out != string(want) {
		t.Fatalf("incast: exit %d; stdout differs from fct_analysis.py's", code)
	}
	code, out, _ = runCLI(t, nil, "analyze", "--format", "csv", td+"fct_fat_a.txt")
	if code != exitOK || !strings.HasPrefix(out, "label,bins,bin,") || !strings.Contains(out, "\nfct_fat_a,percent,0,") {
		t.Fatalf("csv: exit %d: %.200s", code, out)
	}
	dir := t.TempDir()
	code, _, errs = runCLI(t, nil, "analyze", "--out", dir, "x="+td+"fct_fat_a.txt")
	if code != exitOK {
		t.Fatalf("--out: exit %d: %s", code, errs)
	}
	for _, f := range []string{"slowdown.txt", "slowdown.csv", "slowdown.json", "slowdown-percent.png", "slowdown-size.png"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte("0b000201 0b012c01 10000 100 1460 2000001234 9000 8500\n0b000201 0b012c01 10000 100\n"), 0o644)
	code, _, errs = runCLI(t, nil, "analyze", bad)
	if code != exitError || !strings.Contains(errs, bad+":2: want \"sip dip") {
		t.Errorf("bad fct.txt: exit %d, %q", code, errs)
	}
	code, _, errs = runCLI(t, nil, "analyze", "--step", "50", "a="+td+"fct_fat_a.txt")
	if code != exitOK {
		t.Errorf("--step 50: exit %d %s", code, errs)
	}
}

// --standalone hpcc divides by the HPCC simulator's standalone FCTs: on its own
// output with the last column overwritten, the table is the one of the
// original file; a flow between nodes that are not two hosts is an error.
func TestAnalyzeStandaloneHPCC(t *testing.T) {
	orig := "../../sim/hpcc/testdata/fct_ns3_fat_web30.txt"
	fat := "../../sim/data/hpcc/fat.txt"
	b, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		f[7] = "1"
		lines = append(lines, strings.Join(f, " "))
	}
	dir := t.TempDir()
	ones := filepath.Join(dir, "ones.txt")
	os.WriteFile(ones, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	_, want, _ := runCLI(t, nil, "analyze", "--format", "csv", "x="+orig)
	_, wrong, _ := runCLI(t, nil, "analyze", "--format", "csv", "x="+ones)
	code, got, errs := runCLI(t, nil, "analyze", "--format", "csv", "--standalone", "hpcc", "--topo", fat, "x="+ones)
	if code != exitOK || got != want {
		t.Fatalf("exit %d %s\ngot  %.300s\nwant %.300s", code, errs, got, want)
	}
	if wrong == want {
		t.Fatal("the overwritten column did not change the table: the test shows nothing")
	}
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte("0b000001 0b014001 10000 100 1000 2000000000 9000 1\n"), 0o644) // to node 320, a switch
	code, _, errs = runCLI(t, nil, "analyze", "--standalone", "hpcc", "--topo", fat, bad)
	if code != exitError || !strings.Contains(errs, "no path from node 0 to node 320") {
		t.Errorf("flow to a switch: exit %d, %q", code, errs)
	}
}

// fakeEngine stands in for the simulator: each flow takes its standalone
// FCT times a factor of the mode; metrics from the flows.
func fakeEngine(ctx context.Context, in pointInput) (sweep.Result, error) {
	paths, err := hpcc.NewPaths(in.Topology, in.Config.PayloadBytes)
	if err != nil {
		return sweep.Result{}, err
	}
	factor := map[string]int64{"dcqcn": 3, "fastcnp": 2}[in.Config.ModeName()]
	ports := hpcc.SourcePorts(in.Flows)
	var recs []hpcc.FCT
	for i, f := range in.Flows {
		p, _ := paths.Get(f.Src, f.Dst)
		sa := hpcc.StandaloneFCT(f.Size, in.Config.PayloadBytes, p)
		recs = append(recs, hpcc.FCT{SIP: hpcc.NodeIP(f.Src), DIP: hpcc.NodeIP(f.Dst), SPort: ports[i], DPort: f.DPort, Size: f.Size,
			StartNs: f.StartNs, FCTNs: sa * (factor + int64(i%3)), StandaloneNs: sa})
	}
	return sweep.Result{FCT: recs, Metrics: map[string]float64{"flows_in": float64(len(in.Flows)), "buffer_mb": float64(in.Config.BufferMB),
		"stop_s": in.Config.StopTimeS}}, nil
}

func readPointMetrics(t *testing.T, path string) map[string]float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pf sweep.File
	if err := json.Unmarshal(b, &pf); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return pf.Metrics
}

func TestSweepAndMerge(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "params.txt")
	os.WriteFile(cfg, []byte("BUFFER_SIZE 32\nPACKET_PAYLOAD_SIZE 1000\n"), 0o644)
	args := []string{"sweep", "--modes", "dcqcn,fastcnp", "--workload", "fb=" + data + "FbHdp_distribution.txt",
		"--loads", "0.3,50%", "--seeds", "1", "--topology", data + "fat.txt", "--config", cfg, "--duration", "200us",
		"--incast", "60x500KB@0.02", "--out", filepath.Join(dir, "s")}

	simulatePoint = nil
	code, _, errs := runCLI(t, nil, args...)
	if code != exitError || !strings.Contains(errs, "no simulator engine") {
		t.Fatalf("without an engine: exit %d, %q", code, errs)
	}

	simulatePoint = fakeEngine
	checkMode = func(m string) error {
		if m != "dcqcn" && m != "fastcnp" {
			return os.ErrInvalid
		}
		return nil
	}
	defer func() { simulatePoint, checkMode = nil, nil }()
	code, _, errs = runCLI(t, nil, append(args[:2:2], append([]string{"nope"}, args[3:]...)...)...)
	if code != exitUsage || !strings.Contains(errs, "--modes") {
		t.Errorf("unknown mode: exit %d, %q", code, errs)
	}

	// Two shards as a Kubernetes Indexed Job would run them, then merge.
	for _, idx := range []string{"0", "1"} {
		code, _, errs = runCLI(t, map[string]string{"JOB_COMPLETION_INDEX": idx}, append(args, "--shard", "auto/2")...)
		if code != exitOK || !strings.Contains(errs, "fastcnp-sim merge") {
			t.Fatalf("shard %s: exit %d: %s", idx, code, errs)
		}
	}
	code, _, errs = runCLI(t, nil, "merge", filepath.Join(dir, "s"))
	if code != exitOK || !strings.Contains(errs, "merge: 4 of 4 points") {
		t.Fatalf("merge: exit %d: %s", code, errs)
	}
	sum, err := os.ReadFile(filepath.Join(dir, "s", "merged", "summary.md"))
	if err != nil || !strings.Contains(string(sum), "| flow size | dcqcn | fastcnp |") || !strings.Contains(string(sum), "| 0000-dcqcn-fb-0.3-s1 |") {
		t.Fatalf("summary: %v\n%s", err, sum)
	}
	// The whole sweep in one go merges by itself, to the same tables.
	code, _, errs = runCLI(t, nil, append(args[:len(args)-1:len(args)-1], filepath.Join(dir, "one"))...)
	if code != exitOK || !strings.Contains(errs, "merge: 4 of 4 points") {
		t.Fatalf("whole sweep: exit %d: %s", code, errs)
	}
	for _, f := range []string{"summary.md", "points.csv", "slowdown-fb-0.3.txt", "slowdown-fb-0.5.csv"} {
		a, _ := os.ReadFile(filepath.Join(dir, "s", "merged", f))
		b, _ := os.ReadFile(filepath.Join(dir, "one", "merged", f))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s differs between the sharded and the whole sweep", f)
		}
	}
	// --stop-after ends each point that long after the window (2 s + 200 us);
	// the result file says what the flows offer.
	code, _, errs = runCLI(t, nil, append(args[:len(args)-1:len(args)-1], filepath.Join(dir, "stop"), "--stop-after", "300us")...)
	if code != exitOK {
		t.Fatalf("--stop-after: exit %d: %s", code, errs)
	}
	if m := readPointMetrics(t, filepath.Join(dir, "stop", "points", "0000-dcqcn-fb-0.3-s1.json")); m["stop_s"] != 2.0005 || !(m["offered_load"] > 0.2 && m["offered_load"] < 0.45) || m["incast_flows"]/60 != math.Trunc(m["incast_flows"]/60) {
		t.Errorf("--stop-after 300us: stop at %v s, offered load %v, %v incast flows", m["stop_s"], m["offered_load"], m["incast_flows"])
	}
	if m := readPointMetrics(t, filepath.Join(dir, "one", "points", "0000-dcqcn-fb-0.3-s1.json")); m["stop_s"] != 3.01 {
		t.Errorf("without --stop-after: stop at %v s, want the parameter file's default 3.01", m["stop_s"])
	}
	code, _, errs = runCLI(t, nil, append(args, "--stop-after", "-1ms")...)
	if code != exitUsage || !strings.Contains(errs, "--stop-after") {
		t.Errorf("negative --stop-after: exit %d, %q", code, errs)
	}
	// Merging a directory without results fails with exit 1.
	code, _, errs = runCLI(t, nil, "merge", t.TempDir())
	if code != exitError || !strings.Contains(errs, "no result file") {
		t.Errorf("empty merge: exit %d, %q", code, errs)
	}
}

// Commands that parse their own arguments (register): help, usage errors and
// failures map to exit codes 0, 2 and 1, and they show in the listing.
func TestRawCommand(t *testing.T) {
	register("zz-raw", "a raw test command", func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		switch {
		case len(args) > 0 && args[0] == "-h":
			fmt.Fprintln(stdout, "Examples: zz-raw ok")
			return flag.ErrHelp
		case len(args) > 0 && args[0] == "bad":
			return fmt.Errorf("%w: what is %q", errUsage, args[0])
		case len(args) > 0 && args[0] == "fail":
			return errors.New("it broke")
		}
		fmt.Fprintln(stdout, "ran", args)
		return nil
	})
	defer delete(commands, "zz-raw")
	for _, tc := range []struct {
		args         []string
		code         int
		stdout, errs string
	}{
		{[]string{"zz-raw", "x"}, exitOK, "ran [x]", ""},
		{[]string{"zz-raw", "-h"}, exitOK, "Examples:", ""},
		{[]string{"help", "zz-raw"}, exitOK, "Examples:", ""},
		{[]string{"zz-raw", "bad"}, exitUsage, "", "fastcnp-sim zz-raw: what is \"bad\""},
		{[]string{"zz-raw", "fail"}, exitError, "", "fastcnp-sim zz-raw: it broke"},
		{[]string{"help"}, exitOK, "zz-raw   a raw test command", ""},
	} {
		code, out, errs := runCLI(t, nil, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.stdout) || !strings.Contains(errs, tc.errs) {
			t.Errorf("%v: exit %d (want %d), stdout %q, stderr %q", tc.args, code, tc.code, out, errs)
		}
	}
	var out, errb bytes.Buffer
	if code := mainCode([]string{"zz-raw", "y"}, &out, &errb); code != exitOK || out.String() != "ran [y]\n" {
		t.Errorf("mainCode: exit %d, %q", code, out.String())
	}
}
