package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"

	"github.com/fastcnp/fastcnp/sim/hpcc"
)

// PointsDir is the subdirectory of a sweep's output directory that holds the
// result files: <ID>.json and, for runs with flows, <ID>.fct.txt.
const PointsDir = "points"

// File is the content of a point's result file.
type File struct {
	Sweep   Sweep              `json:"sweep"`
	Point   Point              `json:"point"`
	Metrics map[string]float64 `json:"metrics,omitempty"`
	Flows   int                `json:"flows"`              // records in FCTFile
	FCTFile string             `json:"fct_file,omitempty"` // name in the same directory
}

// Options tune Run.
type Options struct {
	// Dir is the sweep's output directory; result files go to Dir/points.
	Dir string
	// Workers is the number of points run at once; 0 means one per CPU.
	Workers int
	// Rerun runs points whose result file exists; by default they are
	// skipped, so that a sweep interrupted or retried resumes.
	Rerun bool
	// Progress, if set, is called after each point (from one goroutine at a
	// time) with the number of points done, skipped included, and the total.
	Progress func(done, total int, p Point, err error)
}

// Run runs points (a shard of s.Points()) with run, Workers at a time, and
// writes each one's result file as soon as it finishes. A failed point
// leaves no file and does not stop the others; Run returns every failure.
// Cancelling ctx stops starting points and waits for the running ones.
func Run(ctx context.Context, s Sweep, points []Point, run RunFunc, opt Options) error {
	if err := s.Validate(); err != nil {
		return err
	}
	dir := filepath.Join(opt.Dir, PointsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var todo []Point
	skipped := 0
	for _, p := range points {
		if !opt.Rerun {
			if _, err := os.Stat(filepath.Join(dir, p.ID()+".json")); err == nil {
				skipped++
				continue
			}
		}
		todo = append(todo, p)
	}
	total, done := len(points), skipped
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	report := func(p Point, err error) {
		mu.Lock()
		defer mu.Unlock()
		done++
		if err != nil {
			errs = append(errs, fmt.Errorf("point %s: %w", p.ID(), err))
		}
		if opt.Progress != nil {
			opt.Progress(done, total, p, err)
		}
	}
	jobs := make(chan Point)
	for range min(workers, max(len(todo), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range jobs {
				// The feeder's select may hand out a point after the context
				// ended (both cases ready): a cancelled sweep starts no new run.
				if ctx.Err() != nil {
					continue
				}
				res, err := run(ctx, p)
				if err == nil {
					err = writePoint(dir, s, p, res)
				}
				report(p, err)
			}
		}()
	}
feed:
	for _, p := range todo {
		select {
		case jobs <- p:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		errs = append(errs, fmt.Errorf("sweep: stopped after %d of %d points: %w", done, total, err))
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}

// writePoint writes the fct.txt then the result file, each through a
// temporary file and a rename, so that a result file exists only complete
// and only with its fct.txt beside it.
func writePoint(dir string, s Sweep, p Point, res Result) error {
	f := File{Sweep: s, Point: p, Metrics: res.Metrics, Flows: len(res.FCT)}
	for k, v := range res.Metrics {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("metric %s is %v", k, v)
		}
	}
	if res.FCT != nil {
		f.FCTFile = p.ID() + ".fct.txt"
		var buf bytes.Buffer
		if err := hpcc.WriteFCT(&buf, res.FCT); err != nil {
			return err
		}
		if err := writeAtomic(filepath.Join(dir, f.FCTFile), buf.Bytes()); err != nil {
			return err
		}
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	return writeAtomic(filepath.Join(dir, p.ID()+".json"), append(b, '\n'))
}

func writeAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
