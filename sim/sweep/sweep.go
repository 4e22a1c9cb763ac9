// Package sweep runs a grid of simulations (modes x workloads x loads x
// seeds) as independent points, in parallel on all cores, one result file per
// point, split into shards for clusters (Kubernetes Indexed Jobs, Slurm job
// arrays), and merges the result files into tables and plots. It does not
// know the simulator: a point is run by a RunFunc the caller gives.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"

	"github.com/fastcnp/fastcnp/sim/hpcc"
)

// Sweep is the grid. Points enumerate it workload-major and mode-minor, so
// that neighbouring points compare modes on the same traffic.
type Sweep struct {
	Modes     []string  `json:"modes"`
	Workloads []string  `json:"workloads"`
	Loads     []float64 `json:"loads"`
	Seeds     []uint64  `json:"seeds"`
}

// Point is one run of a sweep.
type Point struct {
	Index    int     `json:"index"` // position in Sweep.Points, from 0
	Mode     string  `json:"mode"`
	Workload string  `json:"workload"`
	Load     float64 `json:"load"`
	Seed     uint64  `json:"seed"`
}

// ID names the point's files: "0007-fastcnp-websearch-0.3-s2".
func (p Point) ID() string {
	return fmt.Sprintf("%04d-%s-%s-%s-s%d", p.Index, p.Mode, p.Workload, FormatLoad(p.Load), p.Seed)
}

// FormatLoad writes a load as the shortest decimal that reads back to it.
func FormatLoad(l float64) string { return strconv.FormatFloat(l, 'f', -1, 64) }

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)

// Validate checks that the grid is not empty, has no repeated value, names
// fit in file names (letters, digits, '.', '_', '+', '-') and loads are in
// (0, 1].
func (s Sweep) Validate() error {
	if len(s.Modes) == 0 || len(s.Workloads) == 0 || len(s.Loads) == 0 || len(s.Seeds) == 0 {
		return errors.New("sweep: modes, workloads, loads and seeds must each have at least one value")
	}
	for _, set := range []struct {
		what  string
		names []string
	}{{"mode", s.Modes}, {"workload", s.Workloads}} {
		seen := map[string]bool{}
		for _, n := range set.names {
			if !nameRE.MatchString(n) {
				return fmt.Errorf("sweep: %s name %q: use letters, digits, '.', '_', '+' or '-'", set.what, n)
			}
			if seen[n] {
				return fmt.Errorf("sweep: %s %q listed twice", set.what, n)
			}
			seen[n] = true
		}
	}
	seenL := map[float64]bool{}
	for _, l := range s.Loads {
		if !(l > 0 && l <= 1) || math.IsNaN(l) {
			return fmt.Errorf("sweep: load %v, want 0 < load <= 1", l)
		}
		if seenL[l] {
			return fmt.Errorf("sweep: load %v listed twice", l)
		}
		seenL[l] = true
	}
	seenS := map[uint64]bool{}
	for _, sd := range s.Seeds {
		if seenS[sd] {
			return fmt.Errorf("sweep: seed %d listed twice", sd)
		}
		seenS[sd] = true
	}
	return nil
}

// Points returns every point of the grid in order: workload, load, seed,
// then mode.
func (s Sweep) Points() []Point {
	var ps []Point
	for _, w := range s.Workloads {
		for _, l := range s.Loads {
			for _, sd := range s.Seeds {
				for _, m := range s.Modes {
					ps = append(ps, Point{Index: len(ps), Mode: m, Workload: w, Load: l, Seed: sd})
				}
			}
		}
	}
	return ps
}

// Result is what running a point gives.
type Result struct {
	// Metrics are scalar results by name (PAUSE frames, drops, CNPs, peak
	// queue...); merge tabulates them. Values must be finite.
	Metrics map[string]float64
	// FCT are the finished flows; written as the point's fct.txt and
	// analysed by merge. Nil for runs without flows to analyse.
	FCT []hpcc.FCT
}

// RunFunc runs one point. It must honour ctx and be safe to call from
// several goroutines at once (each call its own simulation).
type RunFunc func(ctx context.Context, p Point) (Result, error)
