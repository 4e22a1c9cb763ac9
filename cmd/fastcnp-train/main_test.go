package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/host/cc/lstm"
)

func TestParseArgsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"nothing", []string{"--out", "x"}, "one of --traces, --synthetic and --sim"},
		{"both", []string{"--traces", "a", "--synthetic", "1", "--source", "s", "--out", "x"}, "one of"},
		{"no out", []string{"--synthetic", "1"}, "--out"},
		{"no source", []string{"--traces", "a", "--out", "x"}, "--source"},
		{"bad seed", []string{"--synthetic", "x", "--out", "x"}, "seed"},
		{"extra", []string{"--synthetic", "1", "--out", "x", "y"}, "unexpected"},
		{"short synthetic", []string{"--synthetic", "1", "--synthetic-samples", "2", "--out", "x"}, "synthetic-samples"},
		{"sim and synthetic", []string{"--synthetic", "1", "--sim", "s2", "--out", "x"}, "one of"},
		{"unknown scenario", []string{"--sim", "s3", "--out", "x"}, "s2"},
		{"pid runs without sim", []string{"--synthetic", "1", "--pid-runs", "2", "--out", "x"}, "--pid-runs"},
		{"sim scale 0", []string{"--sim", "s2", "--sim-scale", "0", "--out", "x"}, "--sim-scale"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseArgs(tc.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v, want one mentioning %q", err, tc.msg)
			}
		})
	}
}

func TestReadTraces(t *testing.T) {
	in := "# flow time_ns rtt_ns\n1 100 5000\n2 150 6000\n\n1 200 7000 # comment\n"
	index := map[string]int{}
	flows, err := readTraces(strings.NewReader(in), "a", nil, index)
	if err != nil {
		t.Fatal(err)
	}
	if len(flows) != 2 || len(flows[0]) != 2 || flows[0][1] != 7e-6 || flows[1][0] != 6e-6 {
		t.Errorf("flows %v", flows)
	}
	// Same flow IDs in another file are other flows.
	flows, err = readTraces(strings.NewReader("1 1 1\n"), "b", flows, index)
	if err != nil || len(flows) != 3 {
		t.Errorf("second file: %v, %d flows", err, len(flows))
	}
	for _, bad := range []string{"1 2\n", "1 x 3\n", "1 2 0\n", "1 2 -5\n", "1 2 3.5\n", strings.Repeat("9", maxTraceLine+1) + "\n"} {
		if _, err := readTraces(strings.NewReader(bad), "bad", nil, map[string]int{}); err == nil || !strings.Contains(err.Error(), "bad") {
			t.Errorf("%q: err = %v", bad[:min(len(bad), 20)], err)
		}
	}
}

func train(t *testing.T, args ...string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "w.json")
	o, err := parseArgs(append(args, "--out", out), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if err := run(o, &log); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Same seeds, same weights file, byte for byte; another seed, another file.
// Traces from files give the same result as the same traces made in memory.
func TestTrainDeterministic(t *testing.T) {
	args := []string{"--synthetic", "3", "--synthetic-flows", "10", "--synthetic-samples", "300", "--epochs", "3"}
	a, b := train(t, args...), train(t, args...)
	if !bytes.Equal(a, b) {
		t.Fatal("same command, different files")
	}
	if c := train(t, append(args, "--init-seed", "2")...); bytes.Equal(a, c) {
		t.Error("another init seed, same file")
	}
	m, f, err := lstm.Decode(a)
	if err != nil || m == nil {
		t.Fatal(err)
	}
	if p := f.Provenance; p == nil || len(p.Epochs) != 3 || p.Data.Seed != 3 || p.Data.Flows != 10 || p.TestMAPE <= 0 ||
		!strings.Contains(p.Command, "--synthetic 3 ") || strings.Contains(p.Command, "--out") {
		t.Errorf("provenance %+v", f.Provenance)
	}
	// The same traces through a file.
	dir := t.TempDir()
	var buf bytes.Buffer
	for i, f := range lstm.SyntheticRTTs(3, 10, 300) {
		for j, r := range f {
			// Whole nanoseconds: the file format's resolution.
			fmt.Fprintf(&buf, "%d %d %d\n", i, j, int(r*1e9+0.5))
		}
	}
	path := filepath.Join(dir, "syn.rtt")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	d := train(t, "--traces", path, "--source", "test", "--epochs", "3")
	_, fd, err := lstm.Decode(d)
	if err != nil {
		t.Fatal(err)
	}
	if fd.Provenance.Data.RTTSamples != 3000 || fd.Provenance.Data.Source != "test" {
		t.Errorf("trace file provenance %+v", fd.Provenance.Data)
	}
}

// The committed weights file (host/cc/models/lstm-rtt.json) is what its
// recorded command makes. Trace-based files need their traces: the test then
// reads the trace paths from the command and skips if they are absent.
func TestCommittedWeightsReproduce(t *testing.T) {
	committed := cc.DefaultLSTMFile()
	_, f, err := lstm.Decode(committed)
	if err != nil {
		t.Fatal(err)
	}
	args, err := splitCommand(f.Provenance.Command)
	if err != nil {
		t.Fatal(err)
	}
	if args[0] != "fastcnp-train" {
		t.Fatalf("command %q", f.Provenance.Command)
	}
	if raceEnabled && strings.Contains(f.Provenance.Command, "--sim ") {
		t.Skip("the recorded command simulates S2 several times: minutes under the race detector; " +
			"`go test ./cmd/fastcnp-train` (no -race) reproduces it, TestSimDeterministic covers the simulator's part here")
	}
	t.Chdir(filepath.Join("..", "..")) // trace paths are relative to the repository
	for i, a := range args {
		if a == "--traces" && i+1 < len(args) {
			for _, p := range strings.Split(args[i+1], ",") {
				if _, err := os.Stat(p); err != nil {
					t.Skipf("trace file %s not present: %v", p, err)
				}
			}
		}
	}
	got := train(t, args[1:]...)
	if !bytes.Equal(got, committed) {
		t.Errorf("the recorded command %q does not make the committed file", f.Provenance.Command)
	}
}

func TestSplitCommand(t *testing.T) {
	o := options{traces: []string{"a.rtt", "b.rtt"}, source: `fastcnp-sim "S2" run`, traceSeed: 4}
	o.data.Smoothing, o.testFrac = 0.2, 0.2
	words, err := splitCommand(o.command())
	if err != nil {
		t.Fatal(err)
	}
	p, err := parseArgs(append(words[1:], "--out", "x"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if p.source != o.source || strings.Join(p.traces, ",") != "a.rtt,b.rtt" || p.traceSeed != 4 {
		t.Errorf("round trip of %q: %+v", o.command(), p)
	}
	if _, err := splitCommand(`x "unterminated`); err == nil {
		t.Error("unterminated quote accepted")
	}
}

// The simulator's traces and the online gain training are deterministic (a
// small S2: flow sizes / 20), and training moves the gains away from the
// initial ones.
func TestSimDeterministic(t *testing.T) {
	o := simOptions{scale: 20, seed: 1, pidRuns: 1}
	a, err := simTraces(o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := simTraces(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 40 || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("%d flows; two runs differ: %v", len(a), fmt.Sprint(a) != fmt.Sprint(b))
	}
	total := 0
	for _, f := range a {
		total += len(f)
	}
	if total < 1000 {
		t.Errorf("%d RTT samples in all", total)
	}
	g1, err := simGains(o)
	if err != nil {
		t.Fatal(err)
	}
	g2, err := simGains(o)
	if err != nil {
		t.Fatal(err)
	}
	if g1.K != g2.K || g1.Updates != g2.Updates || g1.Updates == 0 {
		t.Errorf("gains %+v and %+v", g1, g2)
	}
	if g1.K == [3]float64{-0.2, -0.05, 0.1} {
		t.Error("training did not move the gains")
	}
	t.Logf("%d flows; gains %v after %d updates", len(a), g1.K, g1.Updates)
}
