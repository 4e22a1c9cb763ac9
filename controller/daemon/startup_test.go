package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fastcnp/fastcnp/internal/testfs"

	"github.com/fastcnp/fastcnp/controller/config"
)

// TestStateDirChecked: fastcnpd refuses to start when it could not write
// its state file, instead of failing at the first announcement or change;
// a missing directory is created, and the check leaves nothing behind.
func TestStateDirChecked(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		state func(t *testing.T) string
		want  string // error substring; "" = starts
	}{
		{"read-only directory", func(t *testing.T) string { return filepath.Join(testfs.ReadOnlyDir(t), "state.json") }, "is not writable"},
		{"directory under a file", func(*testing.T) string { return filepath.Join(file, "state.json") }, "cannot create its directory"},
		{"missing directory created", func(*testing.T) string { return filepath.Join(tmp, "new", "sub", "state.json") }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := tt.state(t)
			cfg, err := config.Parse([]byte(fmt.Sprintf(testYAML, state, "127.0.0.1:1", "127.0.0.1:2")))
			if err != nil {
				t.Fatal(err)
			}
			_, err = New(Options{Config: cfg, Logger: quietLogger()})
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), state) {
					t.Fatalf("New: %v, want an error naming %s with %q", err, state, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			left, err := os.ReadDir(filepath.Dir(state))
			if err != nil || len(left) != 0 {
				t.Errorf("the check left %v behind (%v)", left, err)
			}
		})
	}
}
