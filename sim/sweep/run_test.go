package sweep

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fastcnp/fastcnp/sim/hpcc"
)

var small = Sweep{Modes: []string{"a", "b"}, Workloads: []string{"w"}, Loads: []float64{0.5}, Seeds: []uint64{1, 2, 3}}

func metricsRun(calls *atomic.Int32) RunFunc {
	return func(ctx context.Context, p Point) (Result, error) {
		calls.Add(1)
		return Result{Metrics: map[string]float64{"x": float64(p.Index)}}, nil
	}
}

// Points run in parallel, each writes its result file, and a second run
// skips the points that have one.
func TestRunResumes(t *testing.T) {
	dir := t.TempDir()
	var calls atomic.Int32
	var progress [][2]int
	var mu sync.Mutex
	opt := Options{Dir: dir, Workers: 4, Progress: func(done, total int, p Point, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			t.Errorf("progress %d/%d %v", done, total, err)
		}
		progress = append(progress, [2]int{done, total})
	}}
	pts := small.Points()
	if err := Run(context.Background(), small, pts[:4], metricsRun(&calls), opt); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 4 || !reflect.DeepEqual(progress, [][2]int{{1, 4}, {2, 4}, {3, 4}, {4, 4}}) {
		t.Fatalf("%d calls, progress %v", calls.Load(), progress)
	}
	progress = nil
	if err := Run(context.Background(), small, pts, metricsRun(&calls), opt); err != nil {
		t.Fatal(err)
	}
	// The skipped points count as done from the start.
	if calls.Load() != 6 || !reflect.DeepEqual(progress, [][2]int{{5, 6}, {6, 6}}) {
		t.Fatalf("resume: %d calls in all, progress %v; want 2 more calls", calls.Load(), progress)
	}
	opt.Rerun, opt.Progress = true, nil
	if err := Run(context.Background(), small, pts, metricsRun(&calls), opt); err != nil || calls.Load() != 12 {
		t.Fatalf("rerun: %d calls, %v", calls.Load(), err)
	}
	_, files, err := ReadPoints(dir)
	if err != nil || len(files) != 6 {
		t.Fatalf("%d files, %v", len(files), err)
	}
	for i, f := range files {
		if f.Point != pts[i] || f.Metrics["x"] != float64(i) || f.FCTFile != "" {
			t.Errorf("file %d: %+v", i, f)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, PointsDir, pts[0].ID()+".fct.txt")); !os.IsNotExist(err) {
		t.Error("fct file written for a run without flows")
	}
}

// A failing point leaves no file and does not stop the others; bad metrics
// fail their point.
func TestRunFailures(t *testing.T) {
	dir := t.TempDir()
	run := func(ctx context.Context, p Point) (Result, error) {
		switch p.Index {
		case 1:
			return Result{}, errors.New("engine exploded")
		case 3:
			return Result{Metrics: map[string]float64{"nan": math.NaN()}}, nil
		}
		return Result{FCT: []hpcc.FCT{{DPort: 100, Size: 1, FCTNs: 2, StandaloneNs: 1}}}, nil
	}
	err := Run(context.Background(), small, small.Points(), run, Options{Dir: dir, Workers: 2})
	if err == nil || !strings.Contains(err.Error(), "0001-b-w-0.5-s1: engine exploded") || !strings.Contains(err.Error(), "0003-b-w-0.5-s2: metric nan is NaN") {
		t.Fatalf("error %v", err)
	}
	_, files, err := ReadPoints(dir)
	if err != nil || len(files) != 4 {
		t.Fatalf("%d files, %v", len(files), err)
	}
	if files[0].Flows != 1 || files[0].FCTFile != "0000-a-w-0.5-s1.fct.txt" {
		t.Errorf("file 0: %+v", files[0])
	}
	// Missing points are an error for Merge unless allowed.
	if _, err := Merge(dir, filepath.Join(dir, "m"), MergeOptions{}); err == nil || !strings.Contains(err.Error(), "2 of 6 points have no result file: 0001-b-w-0.5-s1, 0003-b-w-0.5-s2") {
		t.Errorf("merge error %v", err)
	}
	m, err := Merge(dir, filepath.Join(dir, "m"), MergeOptions{AllowMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	// Three flows in all are too few for 5% bins: noted, no slowdown files.
	if len(m.Notes) != 1 || !strings.Contains(m.Notes[0], "too few") || !reflect.DeepEqual(m.Files, []string{"points.csv", "summary.md"}) {
		t.Errorf("merged %+v", m)
	}
	sum, _ := os.ReadFile(filepath.Join(dir, "m", "summary.md"))
	if !strings.Contains(string(sum), "Missing points: 0001-b-w-0.5-s1, 0003-b-w-0.5-s2.") {
		t.Errorf("summary:\n%s", sum)
	}
}

func TestRunCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	run := func(ctx context.Context, p Point) (Result, error) {
		if calls.Add(1) == 2 {
			cancel()
		}
		return Result{}, ctx.Err()
	}
	err := Run(ctx, small, small.Points(), run, Options{Dir: t.TempDir(), Workers: 1})
	if !errors.Is(err, context.Canceled) || calls.Load() > 3 {
		t.Fatalf("error %v after %d calls", err, calls.Load())
	}
}

func TestReadPointsRejects(t *testing.T) {
	setup := func(t *testing.T) string {
		dir := t.TempDir()
		var calls atomic.Int32
		if err := Run(context.Background(), small, small.Points(), metricsRun(&calls), Options{Dir: dir}); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	pdir := func(dir, id string) string { return filepath.Join(dir, PointsDir, id+".json") }
	tests := []struct {
		name string
		mod  func(dir string)
		msg  string
	}{
		{"empty", func(dir string) {
			os.RemoveAll(filepath.Join(dir, PointsDir))
			os.Mkdir(filepath.Join(dir, PointsDir), 0o755)
		}, "no result file"},
		{"foreign sweep", func(dir string) {
			other := small
			other.Seeds = []uint64{1, 2, 4}
			var calls atomic.Int32
			d2 := filepath.Join(dir, "other")
			Run(context.Background(), other, other.Points()[:1], metricsRun(&calls), Options{Dir: d2})
			b, _ := os.ReadFile(pdir(d2, other.Points()[0].ID()))
			os.WriteFile(pdir(dir, "0000-a-w-0.5-s1"), b, 0o644)
		}, "another sweep"},
		{"renamed", func(dir string) {
			os.Rename(pdir(dir, "0005-b-w-0.5-s3"), pdir(dir, "0009-b-w-0.5-s3"))
		}, "holds point 0005-b-w-0.5-s3"},
		{"bad json", func(dir string) { os.WriteFile(pdir(dir, "0002-a-w-0.5-s2"), []byte("{"), 0o644) }, "0002-a-w-0.5-s2.json"},
		{"unknown field", func(dir string) {
			b, _ := os.ReadFile(pdir(dir, "0002-a-w-0.5-s2"))
			os.WriteFile(pdir(dir, "0002-a-w-0.5-s2"), []byte(strings.Replace(string(b), "\"flows\"", "\"flowz\"", 1)), 0o644)
		}, "unknown field"},
		{"point not of the sweep", func(dir string) {
			b, _ := os.ReadFile(pdir(dir, "0002-a-w-0.5-s2"))
			os.WriteFile(pdir(dir, "0002-a-w-0.5-s2"), []byte(strings.Replace(string(b), "\"mode\": \"a\"", "\"mode\": \"b\"", 1)), 0o644)
		}, "is not point 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := setup(t)
			tc.mod(dir)
			if _, _, err := ReadPoints(dir); err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %v, want %q", err, tc.msg)
			}
		})
	}
}

// The flows of a point depend on workload, load and seed, not on the mode.
func TestTrafficFlows(t *testing.T) {
	tr := testTraffic(t)
	p := Point{Mode: "dcqcn", Workload: "fb", Load: 0.3, Seed: 1}
	a, err := tr.Flows(p)
	if err != nil {
		t.Fatal(err)
	}
	p.Mode = "fastcnp"
	b, _ := tr.Flows(p)
	p.Seed = 2
	c, _ := tr.Flows(p)
	if len(a) < 100 || !reflect.DeepEqual(a, b) || reflect.DeepEqual(a, c) {
		t.Fatalf("flows: %d; same across modes %v; differ across seeds %v", len(a), reflect.DeepEqual(a, b), !reflect.DeepEqual(a, c))
	}
	if err := hpcc.ValidateFlows(tr.Topology, a); err != nil {
		t.Error(err)
	}
	incast := 0
	for _, f := range a {
		if f.DPort == hpcc.DPortIncast {
			incast++
		}
	}
	if incast%60 != 0 {
		t.Errorf("%d incast flows: not whole incasts of 60", incast)
	}
	if rate, err := HostRate(tr.Topology); err != nil || rate != 100e9 {
		t.Errorf("host rate %v, %v", rate, err)
	}
	if _, err := tr.Flows(Point{Workload: "nope", Load: 0.3}); err == nil {
		t.Error("unknown workload accepted")
	}
	mixed := &hpcc.Topology{Nodes: 3, Switches: []int{2}, Links: []hpcc.Link{{A: 0, B: 2, RateBps: 1e9}, {A: 1, B: 2, RateBps: 2e9}}}
	if _, err := HostRate(mixed); err == nil {
		t.Error("hosts with different rates: no error")
	}
}

// The summary puts each workload and load's counters side by side, one
// column per mode, averaged over the seeds.
func TestMergeCounters(t *testing.T) {
	dir := t.TempDir()
	run := func(ctx context.Context, p Point) (Result, error) {
		m := map[string]float64{"x": float64(p.Index), "pfc": 1e6 / 3, "events": 57522171}
		if p.Mode == "b" && p.Seed == 3 {
			delete(m, "pfc")
		}
		return Result{Metrics: m}, nil
	}
	if err := Run(context.Background(), small, small.Points(), run, Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(dir, filepath.Join(dir, "m"), MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	sum, _ := os.ReadFile(filepath.Join(dir, "m", "summary.md"))
	// Mode a ran points 0, 2, 4 and b 1, 3, 5 (seeds 1, 2, 3).
	for _, want := range []string{
		"## w at load 0.5: counters by mode\n\nThe mean over seeds 1, 2, 3.\n\n| metric | a | b |\n|---|---|---|\n",
		"| events | 57522171 | 57522171 |\n| pfc | 333333 | 333333 |\n| x | 2 | 3 |\n",
	} {
		if !strings.Contains(string(sum), want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
}
