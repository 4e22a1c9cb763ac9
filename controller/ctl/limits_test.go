package ctl

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateNeverEnding: config validate /dev/zero is refused at once
// with the size limit (it used to grow to 23 GB and be OOM-killed).
func TestValidateNeverEnding(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"config", "validate", "/dev/zero"}, &out, &errb)
	if code != ExitConfig || !strings.Contains(errb.String(), "/dev/zero") || !strings.Contains(errb.String(), "larger than the limit of 4 MiB") {
		t.Errorf("exit %d stdout %q stderr %q; want %d and the size limit", code, out.String(), errb.String(), ExitConfig)
	}
}

// TestValidateManyErrors: config validate lists the first 100 errors and
// the count of the rest, and its summary counts them all.
func TestValidateManyErrors(t *testing.T) {
	var b strings.Builder
	b.WriteString("api:\n  auth: {insecure: true}\nswitches:\n  - {name: s1, address: '127.0.0.1:9559', device_id: 1, tls: {insecure: true}}\n")
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&b, "x%d: 1\n", i)
	}
	path := filepath.Join(t.TempDir(), "many.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"config", "validate", path}, &out, &errb)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if code != ExitConfig || len(lines) != 101 || !strings.HasSuffix(lines[100], "... and 2900 more errors (only the first 100 are reported)") ||
		!strings.Contains(errb.String(), "3000 problem(s)") {
		t.Errorf("exit %d, %d lines (last %q), stderr %q; want %d, 101 lines, 3000 problems", code, len(lines), lines[len(lines)-1], errb.String(), ExitConfig)
	}
}
