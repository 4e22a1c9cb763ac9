package sweep

import (
	"fmt"
	"strconv"
	"strings"
)

// Shard is the part of a sweep one process runs: the points whose index is
// Index modulo Count. Round robin spreads modes and loads over the shards.
type Shard struct{ Index, Count int }

// All is the whole sweep as one shard.
var All = Shard{0, 1}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Select returns the points of the shard.
func (s Shard) Select(ps []Point) []Point {
	var out []Point
	for _, p := range ps {
		if p.Index%s.Count == s.Index {
			out = append(out, p)
		}
	}
	return out
}

// Environment variables of the batch systems.
const (
	EnvK8sIndex   = "JOB_COMPLETION_INDEX"   // Kubernetes Indexed Job: 0..completions-1
	EnvSlurmID    = "SLURM_ARRAY_TASK_ID"    // Slurm job array: this task's ID
	EnvSlurmMin   = "SLURM_ARRAY_TASK_MIN"   // the array's first ID
	EnvSlurmCount = "SLURM_ARRAY_TASK_COUNT" // the number of tasks
)

// ParseShard reads a shard spec:
//
//	""        the whole sweep
//	"i/n"     shard i of n, from 0
//	"auto/n"  shard i of n, i from the environment: JOB_COMPLETION_INDEX
//	          (Kubernetes Indexed Job) or SLURM_ARRAY_TASK_ID minus
//	          SLURM_ARRAY_TASK_MIN (Slurm job array)
//	"auto"    index and count from a Slurm job array (Kubernetes does not
//	          tell a pod the number of completions: use auto/n there)
//
// getenv is os.Getenv in a command. A Slurm array must be contiguous
// (--array=A-B, no step) so that its task IDs map onto 0..count-1.
func ParseShard(spec string, getenv func(string) string) (Shard, error) {
	if spec == "" {
		return All, nil
	}
	idx, cnt, hasCount := strings.Cut(spec, "/")
	var s Shard
	if hasCount {
		n, err := strconv.Atoi(cnt)
		if err != nil || n < 1 {
			return s, fmt.Errorf("shard %q: the count after '/' must be a positive integer", spec)
		}
		s.Count = n
	}
	if idx != "auto" {
		if !hasCount {
			return s, fmt.Errorf("shard %q: want i/n, auto/n or auto", spec)
		}
		i, err := strconv.Atoi(idx)
		if err != nil || i < 0 || i >= s.Count {
			return s, fmt.Errorf("shard %q: index must be an integer in [0, %d)", spec, s.Count)
		}
		s.Index = i
		return s, nil
	}
	// From the environment.
	slurmID, k8s := getenv(EnvSlurmID), getenv(EnvK8sIndex)
	switch {
	case k8s != "" && slurmID != "":
		return s, fmt.Errorf("shard %q: both %s and %s are set", spec, EnvK8sIndex, EnvSlurmID)
	case k8s != "":
		if !hasCount {
			return s, fmt.Errorf("shard %q: a Kubernetes Indexed Job gives the index only: use auto/N with N the job's completions", spec)
		}
		i, err := strconv.Atoi(k8s)
		if err != nil || i < 0 {
			return s, fmt.Errorf("shard: %s=%q is not an index", EnvK8sIndex, k8s)
		}
		s.Index = i
	case slurmID != "":
		id, err1 := strconv.Atoi(slurmID)
		lo, err2 := 0, error(nil)
		if v := getenv(EnvSlurmMin); v != "" {
			lo, err2 = strconv.Atoi(v)
		}
		if err1 != nil || err2 != nil || id < lo {
			return s, fmt.Errorf("shard: %s=%q, %s=%q: not a task ID at or above the minimum", EnvSlurmID, slurmID, EnvSlurmMin, getenv(EnvSlurmMin))
		}
		s.Index = id - lo
		if v := getenv(EnvSlurmCount); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return s, fmt.Errorf("shard: %s=%q is not a count", EnvSlurmCount, v)
			}
			if hasCount && n != s.Count {
				return s, fmt.Errorf("shard %q: the Slurm array has %d tasks", spec, n)
			}
			s.Count = n
		} else if !hasCount {
			return s, fmt.Errorf("shard %q: %s is not set: use auto/N", spec, EnvSlurmCount)
		}
	default:
		return s, fmt.Errorf("shard %q: neither %s (Kubernetes) nor %s (Slurm) is set", spec, EnvK8sIndex, EnvSlurmID)
	}
	if s.Index >= s.Count {
		return s, fmt.Errorf("shard %q: index %d from the environment is not below the count %d (a Slurm array with a step is not contiguous)", spec, s.Index, s.Count)
	}
	return s, nil
}
