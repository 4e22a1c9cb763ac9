//go:build linux

// Package testfs holds file-system helpers for tests.
package testfs

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// fsImmutableFL is FS_IMMUTABLE_FL (linux/fs.h): nobody, root included, may
// create files in a directory that has it.
const fsImmutableFL = 0x10

// ReadOnlyDir returns a directory nobody can create files in: mode 0555, and for
// root (whom modes do not stop) the immutable attribute. It skips the test where
// neither holds (a file system without the attribute). The directory is made
// writable again when the test ends.
func ReadOnlyDir(t *testing.T) string {
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
