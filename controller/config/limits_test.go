package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// allocated returns the bytes fn allocated (runtime.MemStats.TotalAlloc).
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestLoadSizeLimit: a config file larger than the limit is refused with
// an error naming the file and the limit, reading little more than the
// limit (the whole file used to be read, then parsed).
func TestLoadSizeLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.yaml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	line := []byte(strings.Repeat("#", 1023) + "\n")
	for i := 0; i < 64<<10; i++ { // 64 MiB of comments
		if _, err := f.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	const limit = 4 << 20
	var lerr error
	start := time.Now()
	alloc := allocated(func() { _, lerr = Load(path) })
	if lerr == nil || !strings.Contains(lerr.Error(), path) || !strings.Contains(lerr.Error(), "larger than the limit of 4 MiB") {
		t.Fatalf("Load(64 MiB file) = %v; want an error naming %s and the limit of 4 MiB", lerr, path)
	}
	if alloc > 4*limit {
		t.Errorf("Load(64 MiB file) allocated %d bytes; want at most %d (4x the limit)", alloc, 4*limit)
	}
	t.Logf("refused in %v, %d bytes allocated: %v", time.Since(start), alloc, lerr)
}

// TestLoadNeverEnding: /dev/zero (a file that never ends) is refused
// quickly, with bounded memory (it used to grow until the OOM killer).
func TestLoadNeverEnding(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	const limit = 4 << 20
	var lerr error
	alloc := allocated(func() { _, lerr = Load("/dev/zero") })
	if lerr == nil || !strings.Contains(lerr.Error(), "/dev/zero") || !strings.Contains(lerr.Error(), "limit of 4 MiB") {
		t.Fatalf("Load(/dev/zero) = %v; want the size limit error", lerr)
	}
	if alloc > 4*limit {
		t.Errorf("Load(/dev/zero) allocated %d bytes; want at most %d", alloc, 4*limit)
	}
}

// TestParseSizeLimit: bytes beyond the limit (the API hands them over
// directly) are refused before parsing, with one error.
func TestParseSizeLimit(t *testing.T) {
	data := []byte(base + strings.Repeat("#", 4<<20+1-len(base)))
	_, err := ParseFile("big.yaml", data)
	if err == nil || strings.Count(err.Error(), "\n") != 0 || !strings.Contains(err.Error(), "big.yaml: 4194305 bytes: larger than the limit of 4 MiB") {
		t.Fatalf("ParseFile(4 MiB + 1) = %v; want one size error", err)
	}
}

// TestErrorCap: a file with 50,000 bad fields reports the first 100 in
// line order, then how many more there are (it used to report them all).
func TestErrorCap(t *testing.T) {
	const n = 50000
	var b strings.Builder
	b.WriteString(base)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "x%d: 1\n", i)
	}
	if b.Len() > 4<<20 {
		t.Fatalf("test config of %d bytes is beyond the size limit", b.Len())
	}
	start := time.Now()
	_, err := ParseFile("many.yaml", []byte(b.String()))
	took := time.Since(start)
	if err == nil {
		t.Fatal("no error")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 101 {
		t.Fatalf("%d error lines; want 100 errors + 1 line for the rest", len(lines))
	}
	for i, l := range lines[:100] {
		if want := fmt.Sprintf("many.yaml:%d: x%d: unknown field", 8+i, i); !strings.HasPrefix(l, want) {
			t.Fatalf("line %d = %q; want prefix %q", i, l, want)
		}
	}
	if want := fmt.Sprintf("many.yaml: ... and %d more errors (only the first 100 are reported)", n-100); lines[100] != want {
		t.Errorf("last line %q; want %q", lines[100], want)
	}
	var first *Error
	if !errors.As(err, &first) || first.Line != 8 {
		t.Errorf("errors.As: %v; want the first *Error at line 8", first)
	}
	t.Logf("%d bad fields: %v", n, took)
}

// TestListBounds: a list longer than the data-plane table it fills is
// refused with one error, its items not looked at.
func TestListBounds(t *testing.T) {
	items := func(n int, item func(i int) string) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(item(i))
		}
		return b.String()
	}
	tests := []struct {
		name, yaml, want string
	}{
		{"ports", "    ports:\n" + items(600, func(i int) string { return fmt.Sprintf("      - {port: %d, qth: 1QB}\n", i+1) }),
			"many.yaml:9: switches[0].ports: 600 items: at most 512 (NUM_PORTS)"},
		{"routes", "    routes:\n" + items(1100, func(i int) string { return fmt.Sprintf("      - {prefix: 10.%d.%d.0/24, port: 1}\n", i/256, i%256) }),
			"many.yaml:9: switches[0].routes: 1100 items: at most 1024 (ROUTE_TABLE_SIZE)"},
		{"subnets", "    ports:\n      - port: 1\n        subnets:\n" + items(2000, func(i int) string { return fmt.Sprintf("          - 10.%d.%d.0/24\n", i/256, i%256) }),
			"many.yaml:11: switches[0].ports[0].subnets: 2000 items: at most 1024 subnets per switch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseFile("many.yaml", []byte(base+tt.yaml))
			if err == nil || err.Error() != tt.want {
				t.Errorf("got %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestLongValueTruncated: an error quoting a huge value stays short.
func TestLongValueTruncated(t *testing.T) {
	_, err := ParseFile("long.yaml", []byte(base+"    defaults: {qth: "+strings.Repeat("9", 64<<10)+"QB}\n"))
	if err == nil || len(err.Error()) > 1024 || !strings.Contains(err.Error(), "long.yaml:8: switches[0].defaults.qth") {
		t.Fatalf("error of %d bytes (want at most 1024): %.200v", len(fmt.Sprint(err)), err)
	}
}

// TestAliasExpansionBounded: a 14 kB file whose YAML aliases name 256
// switches x 512 ports x 1024 subnets (134 million values) is refused
// after MaxValues of them, in a fraction of a second (it used to run for
// minutes).
func TestAliasExpansionBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("api:\n  auth: {insecure: true}\nx-subnets: &sn [" + strings.Repeat("10.0.0.0/8,", 1023) + "10.0.0.0/8]\n")
	b.WriteString("x-port: &p {port: 1, subnets: *sn}\nx-ports: &ps [" + strings.Repeat("*p,", 511) + "*p]\n")
	b.WriteString("x-sw: &sw {name: a, address: 'h:1', device_id: 1, tls: {insecure: true}, ports: *ps}\n")
	b.WriteString("switches: [" + strings.Repeat("*sw,", 255) + "*sw]\n")
	start := time.Now()
	_, err := ParseFile("bomb.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(strings.Split(err.Error(), "\n")[0], "the config holds more than 262144 values (YAML aliases count each time they are used)") {
		t.Fatalf("got %.500v; want the values limit first", err)
	}
	if n := strings.Count(err.Error(), "\n"); n > 101 {
		t.Errorf("%d error lines; want at most 102", n+1)
	}
	t.Logf("%d bytes refused in %v", b.Len(), time.Since(start))
}
