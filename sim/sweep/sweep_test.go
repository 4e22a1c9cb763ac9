package sweep

import (
	"context"
	"flag"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/fastcnp/fastcnp/sim/hpcc"
	"github.com/fastcnp/fastcnp/sim/traffic"
)

func TestPoints(t *testing.T) {
	s := Sweep{Modes: []string{"dcqcn", "fastcnp"}, Workloads: []string{"web", "fb"}, Loads: []float64{0.3, 0.5}, Seeds: []uint64{1, 2}}
	ps := s.Points()
	if len(ps) != 16 {
		t.Fatalf("%d points", len(ps))
	}
	want := []Point{
		{0, "dcqcn", "web", 0.3, 1}, {1, "fastcnp", "web", 0.3, 1}, {2, "dcqcn", "web", 0.3, 2},
	}
	if !reflect.DeepEqual(ps[:3], want) {
		t.Errorf("first points %+v", ps[:3])
	}
	if last := ps[15]; last != (Point{15, "fastcnp", "fb", 0.5, 2}) {
		t.Errorf("last point %+v", last)
	}
	if id := ps[7].ID(); id != "0007-fastcnp-web-0.5-s2" {
		t.Errorf("ID %s", id)
	}
	for _, bad := range []Sweep{
		{Modes: []string{"a"}, Workloads: []string{"w"}, Loads: []float64{0.3}},
		{Modes: []string{"a b"}, Workloads: []string{"w"}, Loads: []float64{0.3}, Seeds: []uint64{1}},
		{Modes: []string{"a", "a"}, Workloads: []string{"w"}, Loads: []float64{0.3}, Seeds: []uint64{1}},
		{Modes: []string{"a"}, Workloads: []string{"w/x"}, Loads: []float64{0.3}, Seeds: []uint64{1}},
		{Modes: []string{"a"}, Workloads: []string{"w"}, Loads: []float64{0}, Seeds: []uint64{1}},
		{Modes: []string{"a"}, Workloads: []string{"w"}, Loads: []float64{0.3, 0.3}, Seeds: []uint64{1}},
		{Modes: []string{"a"}, Workloads: []string{"w"}, Loads: []float64{0.3}, Seeds: []uint64{1, 1}},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestParseShard(t *testing.T) {
	tests := []struct {
		spec string
		env  map[string]string
		want Shard
		err  string
	}{
		{"", nil, All, ""},
		{"2/5", nil, Shard{2, 5}, ""},
		{"0/1", nil, Shard{0, 1}, ""},
		{"5/5", nil, Shard{}, "index must be"},
		{"-1/5", nil, Shard{}, "index must be"},
		{"1/0", nil, Shard{}, "positive integer"},
		{"3", nil, Shard{}, "want i/n"},
		{"auto/4", map[string]string{EnvK8sIndex: "3"}, Shard{3, 4}, ""},
		{"auto/4", map[string]string{EnvK8sIndex: "4"}, Shard{}, "not below the count"},
		{"auto", map[string]string{EnvK8sIndex: "1"}, Shard{}, "use auto/N"},
		{"auto/4", map[string]string{EnvK8sIndex: "x"}, Shard{}, "not an index"},
		{"auto", map[string]string{EnvSlurmID: "7", EnvSlurmMin: "5", EnvSlurmCount: "3"}, Shard{2, 3}, ""},
		{"auto", map[string]string{EnvSlurmID: "2", EnvSlurmCount: "3"}, Shard{2, 3}, ""},
		{"auto/3", map[string]string{EnvSlurmID: "1", EnvSlurmMin: "0", EnvSlurmCount: "3"}, Shard{1, 3}, ""},
		{"auto/4", map[string]string{EnvSlurmID: "1", EnvSlurmCount: "3"}, Shard{}, "has 3 tasks"},
		{"auto", map[string]string{EnvSlurmID: "1"}, Shard{}, "is not set"},
		{"auto/3", map[string]string{EnvSlurmID: "1"}, Shard{1, 3}, ""},
		{"auto", map[string]string{EnvSlurmID: "4", EnvSlurmMin: "0", EnvSlurmCount: "3"}, Shard{}, "not contiguous"},
		{"auto", map[string]string{EnvSlurmID: "1", EnvSlurmMin: "2", EnvSlurmCount: "3"}, Shard{}, "minimum"},
		{"auto/2", map[string]string{EnvSlurmID: "1", EnvK8sIndex: "1"}, Shard{}, "both"},
		{"auto/2", nil, Shard{}, "neither"},
	}
	for _, tc := range tests {
		got, err := ParseShard(tc.spec, func(k string) string { return tc.env[k] })
		if tc.err == "" {
			if err != nil || got != tc.want {
				t.Errorf("ParseShard(%q, %v) = %v, %v; want %v", tc.spec, tc.env, got, err, tc.want)
			}
		} else if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseShard(%q, %v): error %v, want %q", tc.spec, tc.env, err, tc.err)
		}
	}
}

func TestShardsPartition(t *testing.T) {
	s := Sweep{Modes: []string{"a", "b", "c"}, Workloads: []string{"w"}, Loads: []float64{0.3, 0.5}, Seeds: []uint64{1, 2, 3}}
	all := s.Points()
	for n := 1; n <= 7; n++ {
		seen := map[int]int{}
		for i := 0; i < n; i++ {
			for _, p := range (Shard{i, n}).Select(all) {
				seen[p.Index]++
			}
		}
		if len(seen) != len(all) {
			t.Fatalf("%d shards cover %d of %d points", n, len(seen), len(all))
		}
		for idx, c := range seen {
			if c != 1 {
				t.Fatalf("%d shards: point %d in %d shards", n, idx, c)
			}
		}
	}
}

// testTraffic is a small fabric: the fat tree, 0.2 ms of traffic.
func testTraffic(t testing.TB) *Traffic {
	t.Helper()
	open := func(name string) *os.File {
		f, err := os.Open("../data/hpcc/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	f := open("fat.txt")
	topo, err := hpcc.ParseTopology("fat.txt", f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	cdfs := map[string]*hpcc.CDF{}
	for name, file := range map[string]string{"web": "WebSearch_distribution.txt", "fb": "FbHdp_distribution.txt"} {
		f := open(file)
		c, err := hpcc.ParseCDF(file, f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		cdfs[name] = c
	}
	return &Traffic{Topology: topo, CDFs: cdfs, StartNs: traffic.DefaultStartNs, DurationNs: 200_000,
		Incast: &IncastSpec{Senders: 60, Size: 500_000, Share: 0.02}}
}

// fakeRun stands in for the simulator: every flow finishes in its
// standalone FCT times a factor drawn from the point's mode and seed, and
// the metrics are made from the point.
func fakeRun(tr *Traffic) RunFunc {
	return func(ctx context.Context, p Point) (Result, error) {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		flows, err := tr.Flows(p)
		if err != nil {
			return Result{}, err
		}
		paths, err := hpcc.NewPaths(tr.Topology, 1000) // one per call: Paths is not safe for concurrent use
		if err != nil {
			return Result{}, err
		}
		h := fnv.New64a()
		h.Write([]byte(p.Mode))
		rng := rand.New(rand.NewPCG(p.Seed, h.Sum64()))
		spread := float64(len(p.Mode) % 4)
		ports := hpcc.SourcePorts(flows)
		recs := make([]hpcc.FCT, len(flows))
		for i, f := range flows {
			pi, _ := paths.Get(f.Src, f.Dst)
			sa := hpcc.StandaloneFCT(f.Size, 1000, pi)
			recs[i] = hpcc.FCT{SIP: hpcc.NodeIP(f.Src), DIP: hpcc.NodeIP(f.Dst), SPort: ports[i], DPort: f.DPort,
				Size: f.Size, StartNs: f.StartNs, FCTNs: int64(float64(sa) * (1 + 3*rng.Float64()*spread)), StandaloneNs: sa}
		}
		return Result{Metrics: map[string]float64{"pause_frames": float64(p.Index * 3), "drops": 0, "load_x10": p.Load * 10}, FCT: recs}, nil
	}
}

var testSweep = Sweep{Modes: []string{"dcqcn", "fastcnp", "hpcc"}, Workloads: []string{"fb"}, Loads: []float64{0.3, 0.5}, Seeds: []uint64{1, 2}}

// Child process mode: `go test -run TestChildShard` with the shard spec in
// SWEEP_CHILD_SHARD runs one shard of testSweep into SWEEP_CHILD_DIR.
var childShard = flag.Bool("sweep-child", false, "run as a shard process (test helper)")

func TestChildShard(t *testing.T) {
	if !*childShard {
		t.Skip("helper for TestShardProcesses")
	}
	sh, err := ParseShard(os.Getenv("SWEEP_CHILD_SHARD"), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	tr := testTraffic(t)
	if err := Run(context.Background(), testSweep, sh.Select(testSweep.Points()), fakeRun(tr), Options{Dir: os.Getenv("SWEEP_CHILD_DIR"), Workers: 1}); err != nil {
		t.Fatal(err)
	}
}

// A sweep run as three shard processes (one told its shard by a flag, one by
// a Kubernetes index, one by a Slurm array) merges to the same bytes as the
// sweep run in one process.
func TestShardProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sharded := t.TempDir()
	for _, c := range []struct {
		spec string
		env  []string
	}{
		{"0/3", nil},
		{"auto/3", []string{EnvK8sIndex + "=1"}},
		{"auto", []string{EnvSlurmID + "=12", EnvSlurmMin + "=10", EnvSlurmCount + "=3"}},
	} {
		cmd := exec.Command(exe, "-test.run=^TestChildShard$", "-sweep-child")
		cmd.Env = append(os.Environ(), append(c.env, "SWEEP_CHILD_SHARD="+c.spec, "SWEEP_CHILD_DIR="+sharded)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("shard %s: %v\n%s", c.spec, err, out)
		}
	}
	whole := t.TempDir()
	tr := testTraffic(t)
	if err := Run(context.Background(), testSweep, testSweep.Points(), fakeRun(tr), Options{Dir: whole}); err != nil {
		t.Fatal(err)
	}
	mOne, err := Merge(whole, filepath.Join(whole, "merged"), MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mSharded, err := Merge(sharded, filepath.Join(sharded, "merged"), MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(mOne.Files) < 10 || !reflect.DeepEqual(mOne.Files, mSharded.Files) {
		t.Fatalf("files %v vs %v", mOne.Files, mSharded.Files)
	}
	for _, dir := range []string{PointsDir, "merged"} {
		a, b := readTree(t, filepath.Join(whole, dir)), readTree(t, filepath.Join(sharded, dir))
		if len(a) == 0 || !reflect.DeepEqual(keys(a), keys(b)) {
			t.Fatalf("%s: files %v vs %v", dir, keys(a), keys(b))
		}
		for name := range a {
			if a[name] != b[name] {
				t.Errorf("%s/%s differs between the sharded and the whole sweep", dir, name)
			}
		}
	}
}

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

func keys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
