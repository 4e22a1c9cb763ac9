package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fastcnp/fastcnp/internal/units"
	"github.com/fastcnp/fastcnp/sim/hpcc"
	"github.com/fastcnp/fastcnp/sim/sweep"
)

// readFile opens path and parses it with parse; parse errors carry the
// file name and line (hpcc.Error).
func readFile[T any](path string, parse func(name string, r io.Reader) (T, error)) (T, error) {
	var zero T
	f, err := os.Open(path)
	if err != nil {
		return zero, err
	}
	defer f.Close()
	return parse(path, bufio.NewReader(f))
}

// createOutput returns a writer for path ("-" or "" is stdout) and a
// function that flushes and closes it.
func createOutput(e *env, path string) (io.Writer, func() error, error) {
	if path == "" || path == "-" {
		bw := bufio.NewWriter(e.stdout)
		return bw, bw.Flush, nil
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, err
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	bw := bufio.NewWriter(f)
	return bw, func() error {
		if err := bw.Flush(); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}, nil
}

// parseIncast reads "NxSIZE@SHARE", e.g. "60x500KB@0.02" (sizes as
// internal/units reads them: KB = 1000 B, KiB = 1024 B).
func parseIncast(s string) (*sweep.IncastSpec, error) {
	nx, share, ok := strings.Cut(s, "@")
	n, size, ok2 := strings.Cut(nx, "x")
	if !ok || !ok2 {
		return nil, fmt.Errorf("incast %q: want SENDERSxSIZE@SHARE, e.g. 60x500KB@0.02", s)
	}
	senders, err := strconv.Atoi(n)
	if err != nil || senders < 1 {
		return nil, fmt.Errorf("incast %q: %q senders: want a positive integer", s, n)
	}
	sz, err := units.ParseSize(size)
	if err != nil || sz < 1 || sz > hpcc.MaxFlowSize {
		return nil, fmt.Errorf("incast %q: size %q: want 1 B to 4 GB (e.g. 500KB)", s, size)
	}
	sh, err := strconv.ParseFloat(share, 64)
	if err != nil || !(sh > 0 && sh <= 1) {
		return nil, fmt.Errorf("incast %q: share %q: want a fraction of the load in (0, 1], e.g. 0.02", s, share)
	}
	return &sweep.IncastSpec{Senders: senders, Size: int64(sz), Share: sh}, nil
}

// parseLoad reads a load as a fraction ("0.3") or a percentage ("30%").
func parseLoad(s string) (float64, error) {
	v, pct := strings.CutSuffix(s, "%")
	l, err := strconv.ParseFloat(v, 64)
	if pct {
		l /= 100
	}
	if err != nil || !(l > 0 && l <= 1) {
		return 0, fmt.Errorf("load %q: want a fraction in (0, 1] or a percentage", s)
	}
	return l, nil
}

// durationNs reads a duration flag ("10ms", "2s").
func durationNs(what, s string) (int64, error) {
	d, err := units.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %v", what, err)
	}
	return d.Nanoseconds(), nil
}

// window reads the --start and --duration flags of an arrival window.
func window(start, dur string) (startNs, durNs int64, err error) {
	if durNs, err = durationNs("--duration", dur); err != nil || durNs <= 0 {
		return 0, 0, usagef("--duration %q: want a positive duration such as 10ms", dur)
	}
	if startNs, err = durationNs("--start", start); err != nil {
		return 0, 0, usagef("%v", err)
	}
	return startNs, durNs, nil
}
