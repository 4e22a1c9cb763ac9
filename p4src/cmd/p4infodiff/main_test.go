package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	committed := filepath.Join("..", "..", "fastcnp.p4info.txtpb")
	orig, err := os.ReadFile(committed)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	changed := write("changed.txtpb", strings.Replace(string(orig), "size: 1024", "size: 1000", 1))
	tests := []struct {
		name     string
		args     []string
		code     int
		inStdout string
		inStderr string
	}{
		{"same file", []string{committed, committed}, 0, "", ""},
		{"a changed table size", []string{committed, changed}, 1, `tables "FastcnpIngress.ipv4_route" differs`, ""},
		{"one argument", []string{committed}, 2, "", "usage"},
		{"missing file", []string{committed, filepath.Join(dir, "nope")}, 2, "", "read P4Info"},
		{"not a text proto", []string{committed, write("bad.txtpb", "tables {")}, 2, "", "parse"},
		{"empty message", []string{committed, write("empty.txtpb", "")}, 2, "", "not a P4Info"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(tc.args, &out, &errOut); code != tc.code {
				t.Fatalf("exit %d, want %d (stdout %q, stderr %q)", code, tc.code, out.String(), errOut.String())
			}
			if !strings.Contains(out.String(), tc.inStdout) || !strings.Contains(errOut.String(), tc.inStderr) {
				t.Errorf("stdout %q, stderr %q; want %q / %q", out.String(), errOut.String(), tc.inStdout, tc.inStderr)
			}
		})
	}
}
