package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/fastcnp/fastcnp/controller/config"
)

// fsImmutableFL is FS_IMMUTABLE_FL (linux/fs.h): nobody, root included,
// may create files in a directory that has it.
const fsImmutableFL = 0x10

// readOnlyDir returns a directory nobody can create files in: mode 0555,
// and for root (whom modes do not stop) the immutable attribute. It skips
// the test where neither holds (a file system without the attribute).
func readOnlyDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
	if os.Geteuid() == 0 {
		f, err := os.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
		if err == nil {
			err = unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags|fsImmutableFL))
		}
		if err != nil {
			t.Skipf("cannot make %s read-only for root: %v", dir, err)
		}
		t.Cleanup(func() {
			if g, err := os.Open(dir); err == nil {
				_ = unix.IoctlSetPointerInt(int(g.Fd()), unix.FS_IOC_SETFLAGS, int(flags))
				g.Close()
			}
		})
	}
	if f, err := os.CreateTemp(dir, "probe"); err == nil {
		f.Close()
		os.Remove(f.Name())
		t.Skipf("%s is still writable", dir)
	}
	return dir
}

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
		{"read-only directory", func(t *testing.T) string { return filepath.Join(readOnlyDir(t), "state.json") }, "is not writable"},
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
