package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunWritesIdenticalFiles: the same run twice writes byte-identical files
// (fct.txt, pfc.txt, qlen.txt, rtt.txt, result.json), with either event queue.
func TestRunWritesIdenticalFiles(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	for i, d := range dirs {
		queue := "heap"
		if i == 2 {
			queue = "calendar"
		}
		var out, errb bytes.Buffer
		args := []string{"--scenario", "s2-scaled", "--mode", "dcqcn,fastcnp", "--until", "4ms", "--sample", "100us",
			"--queue", queue, "--out", d, "--progress=false"}
		if err := runCmd(context.Background(), args, &out, &errb); err != nil {
			t.Fatalf("run: %v\n%s", err, errb.String())
		}
		if !strings.Contains(out.String(), "| S2 | dcqcn | fastcnp |") {
			t.Fatalf("no side-by-side table:\n%s", out.String())
		}
	}
	for _, mode := range []string{"dcqcn", "fastcnp"} {
		for _, name := range []string{"fct.txt", "pfc.txt", "qlen.txt", "rtt.txt", "result.json"} {
			var ref []byte
			for i, d := range dirs {
				b, err := os.ReadFile(filepath.Join(d, "s2-scaled", mode, name))
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					ref = b
					if name != "pfc.txt" && len(b) == 0 {
						t.Errorf("%s/%s is empty", mode, name)
					}
					continue
				}
				if !bytes.Equal(b, ref) {
					t.Errorf("%s/%s differs between run 1 and run %d", mode, name, i+1)
				}
			}
		}
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "usage"},
		{[]string{"frobnicate"}, 2, "unknown command"},
		{[]string{"run"}, 2, "--scenario"},
		{[]string{"run", "--scenario", "s9"}, 2, "scenario \"s9\""},
		{[]string{"run", "--scenario", "s1", "--mode", "ecn"}, 2, "mode \"ecn\""},
		{[]string{"run", "--scenario", "s1", "--window-rule", "mimd"}, 2, "--window-rule \"mimd\""},
		{[]string{"run", "--topo", "/nonexistent/fat.txt", "--flows", "/nonexistent/f.txt"}, 1, "no such file"},
		{[]string{"run", "--help"}, 0, "Examples"},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code := mainCode(tt.args, &out, &errb)
		if code != tt.code || !strings.Contains(out.String()+errb.String(), tt.want) {
			t.Errorf("%v: exit %d, want %d; output %q does not contain %q", tt.args, code, tt.code, out.String()+errb.String(), tt.want)
		}
	}
}

// TestBadFlowFileNamesLine: a broken flow file is refused with its line number.
func TestBadFlowFileNamesLine(t *testing.T) {
	d := t.TempDir()
	topo := filepath.Join(d, "t.txt")
	flows := filepath.Join(d, "f.txt")
	if err := os.WriteFile(topo, []byte("3 1 2\n2\n0 2 100Gbps 1000ns 0\n1 2 100Gbps 1000ns 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(flows, []byte("2\n0 1 3 100 1000 2.0\n0 1 3 100 lots 2.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := mainCode([]string{"run", "--topo", topo, "--flows", flows}, &out, &errb); code != 1 || !strings.Contains(errb.String(), ":3") {
		t.Errorf("exit %d, stderr %q: want 1 and the file's line 3", code, errb.String())
	}
}

// TestRunProfiles: --cpuprofile and --memprofile write profiles pprof reads
// (gzip-compressed protocol buffers) after a short run of s2-8.
func TestRunProfiles(t *testing.T) {
	d := t.TempDir()
	cpu, mem := filepath.Join(d, "cpu.prof"), filepath.Join(d, "mem.prof")
	var out, errb bytes.Buffer
	args := []string{"--scenario", "s2-8", "--mode", "fastcnp", "--until", "200us", "--progress=false", "--cpuprofile", cpu, "--memprofile", mem}
	if err := runCmd(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("run: %v\n%s", err, errb.String())
	}
	for _, f := range []string{cpu, mem} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			t.Errorf("%s: %d bytes, not a gzip-compressed profile", f, len(b))
		}
	}
}
