package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const clusterDocs = "../../docs/sim-cluster/"

// shardPoints returns the point IDs of a --dry-run output, checking its header.
func shardPoints(t *testing.T, out string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "shard ") {
		t.Fatalf("dry run printed %q", out)
	}
	return lines[1:]
}

// checkPartition: the shards' points together are the sweep's, each once.
func checkPartition(t *testing.T, shards [][]string, want int) {
	t.Helper()
	seen := map[string]int{}
	for _, s := range shards {
		for _, id := range s {
			seen[id]++
		}
	}
	if len(seen) != want {
		t.Errorf("the shards run %d distinct points, the sweep has %d", len(seen), want)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("point %s in %d shards", id, n)
		}
	}
}

// The Kubernetes example runs: its arguments parse, its shard count is its
// completions, and its pods' shards cover the sweep once.
func TestKubernetesJobExample(t *testing.T) {
	b, err := os.ReadFile(clusterDocs + "job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var job struct {
		Kind string
		Spec struct {
			CompletionMode string `yaml:"completionMode"`
			Completions    int
			Parallelism    int
			Template       struct {
				Spec struct {
					RestartPolicy string `yaml:"restartPolicy"`
					Containers    []struct{ Args []string }
				}
			}
		}
	}
	if err := yaml.Unmarshal(b, &job); err != nil {
		t.Fatal(err)
	}
	spec := job.Spec
	if job.Kind != "Job" || spec.CompletionMode != "Indexed" || spec.Completions < 2 || spec.Template.Spec.RestartPolicy != "Never" || len(spec.Template.Spec.Containers) != 1 {
		t.Fatalf("job %+v", job)
	}
	args := spec.Template.Spec.Containers[0].Args
	if !slices.Contains(args, "--shard=auto/"+strconv.Itoa(spec.Completions)) {
		t.Fatalf("args %v: want --shard=auto/%d (the completions)", args, spec.Completions)
	}
	dir := t.TempDir()
	params := filepath.Join(dir, "params.txt")
	os.WriteFile(params, []byte("PACKET_PAYLOAD_SIZE 1000\n"), 0o644)
	local := make([]string, len(args))
	for i, a := range args {
		a = strings.ReplaceAll(a, "/data/params.txt", params)
		a = strings.ReplaceAll(a, "/data/", data)
		local[i] = strings.ReplaceAll(a, "/results/", dir+"/")
	}
	var shards [][]string
	total := 0
	for i := 0; i < spec.Completions; i++ {
		code, out, errs := runCLI(t, map[string]string{"JOB_COMPLETION_INDEX": strconv.Itoa(i)}, append(local, "--dry-run")...)
		if code != exitOK {
			t.Fatalf("pod %d: exit %d: %s", i, code, errs)
		}
		if !strings.HasPrefix(out, "shard "+strconv.Itoa(i)+"/"+strconv.Itoa(spec.Completions)+": ") {
			t.Fatalf("pod %d: %q", i, out)
		}
		fmtTotal := regexp.MustCompile(`of (\d+) points`).FindStringSubmatch(out)
		total, _ = strconv.Atoi(fmtTotal[1])
		shards = append(shards, shardPoints(t, out))
	}
	checkPartition(t, shards, total)
}

// The sbatch example runs under bash with the built command: every array
// task gets its shard, and the shards cover the sweep once.
func TestSlurmExample(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fastcnp-sim")
	}
	for _, tool := range []string{"bash", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH", tool)
		}
	}
	script, err := filepath.Abs(clusterDocs + "sweep.sbatch")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(script)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := -1, -1
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := regexp.MustCompile(`^#SBATCH --array=(\d+)-(\d+)$`).FindStringSubmatch(sc.Text()); m != nil {
			lo, _ = strconv.Atoi(m[1])
			hi, _ = strconv.Atoi(m[2])
		}
	}
	f.Close()
	if lo < 0 || hi <= lo {
		t.Fatal("no contiguous #SBATCH --array=A-B line")
	}
	work := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(work, "bin", "fastcnp-sim"), ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	dataDir, _ := filepath.Abs(data)
	params := filepath.Join(work, "params.txt")
	os.WriteFile(params, []byte("PACKET_PAYLOAD_SIZE 1000\n"), 0o644)
	var shards [][]string
	total := 0
	for id := lo; id <= hi; id++ {
		cmd := exec.Command("bash", script, "--dry-run")
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "DATA="+dataDir, "PARAMS="+params,
			"SLURM_ARRAY_TASK_ID="+strconv.Itoa(id), "SLURM_ARRAY_TASK_MIN="+strconv.Itoa(lo), "SLURM_ARRAY_TASK_COUNT="+strconv.Itoa(hi-lo+1))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("task %d: %v", id, err)
		}
		if want := "shard " + strconv.Itoa(id-lo) + "/" + strconv.Itoa(hi-lo+1) + ": "; !strings.HasPrefix(string(out), want) {
			t.Fatalf("task %d: %q, want %q...", id, out, want)
		}
		m := regexp.MustCompile(`of (\d+) points`).FindStringSubmatch(string(out))
		total, _ = strconv.Atoi(m[1])
		shards = append(shards, shardPoints(t, string(out)))
	}
	checkPartition(t, shards, total)
}
