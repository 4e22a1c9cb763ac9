package readlimit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFile: a file up to the limit is read whole; one byte more, a file
// that never ends and a stream beyond the limit are refused with the limit
// named, without reading past it.
func TestFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, bytes.Repeat([]byte{'x'}, n), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name    string
		path    string
		limit   int64
		want    int
		wantErr string
	}{
		{"at the limit", write("at", 1000), 1000, 1000, ""},
		{"empty", write("empty", 0), 10, 0, ""},
		{"one byte over", write("over", 1001), 1000, 0, "key file " + filepath.Join(dir, "over") + ": 1001 bytes: larger than the limit of 1000 bytes"},
		{"never ends", "/dev/zero", 4 << 10, 0, "key file /dev/zero: larger than the limit of 4 KiB"},
		{"missing", filepath.Join(dir, "nope"), 10, 0, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := File(tt.path, "key file", tt.limit)
			if tt.wantErr == "" {
				if err != nil || len(b) != tt.want {
					t.Fatalf("got %d bytes, %v; want %d", len(b), err, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err %v, want %q", err, tt.wantErr)
			}
			if strings.Contains(tt.wantErr, "limit") && !IsTooLarge(err) {
				t.Errorf("%v is not a TooLargeError", err)
			}
		})
	}
	if _, err := Reader(strings.NewReader(strings.Repeat("y", 1<<20+1)), "stdin", "config", 1<<20); !IsTooLarge(err) ||
		err.Error() != "config stdin: larger than the limit of 1 MiB" {
		t.Errorf("stream over the limit: %v", err)
	}
}
