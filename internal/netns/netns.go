// Package netns provides network-namespace helpers for tests and testbeds:
// named namespaces, veth pairs, addresses, neighbours, routes, tc shapers,
// running Go code or commands inside a namespace, and cleanup of everything
// that was created.
//
// Everything is driven through iproute2 (`ip`, `tc`) except entering a
// namespace from Go, which uses setns(2) on a locked OS thread (see NS.Do).
// Every error names the command that failed and its standard error.
//
// All functions need CAP_NET_ADMIN and CAP_SYS_ADMIN (in practice: root).
package netns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// RunDir is where iproute2 keeps the bind mounts of named namespaces.
const RunDir = "/run/netns"

// NS is a network namespace: either a named one (created with Create or
// found with Open, living under RunDir) or the host namespace (Host).
// An NS is a handle only; it holds no file descriptor and needs no Close.
type NS struct {
	name string
}

// Host returns the namespace the process was started in (the namespace of
// its main thread, /proc/self/ns/net). Commands run for it get no `-n`.
func Host() *NS { return &NS{} }

// Open returns a handle for an existing named namespace.
func Open(name string) (*NS, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(RunDir, name)); err != nil {
		return nil, fmt.Errorf("netns: open %q: %w", name, err)
	}
	return &NS{name: name}, nil
}

// Create runs `ip netns add name` and returns the new namespace. The caller
// owns it and must Delete it (a Testbed does this for you).
func Create(ctx context.Context, name string) (*NS, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	var err error
	// The first `ip netns add` on a machine makes /run/netns a shared mount;
	// two processes doing that at the same moment can make one of them fail
	// spuriously. Retry a couple of times unless the name already exists.
	for attempt := 0; attempt < 3; attempt++ {
		if _, err = runCmd(ctx, ipPath(), "netns", "add", name); err == nil {
			return &NS{name: name}, nil
		}
		if strings.Contains(err.Error(), "File exists") {
			break
		}
	}
	return nil, err
}

// Name returns the namespace name ("" for the host namespace).
func (n *NS) Name() string { return n.name }

// IsHost reports whether n is the host namespace.
func (n *NS) IsHost() bool { return n.name == "" }

// Path returns the file that identifies the namespace.
func (n *NS) Path() string {
	if n.IsHost() {
		return "/proc/self/ns/net"
	}
	return filepath.Join(RunDir, n.name)
}

// String implements fmt.Stringer.
func (n *NS) String() string {
	if n.IsHost() {
		return "host"
	}
	return n.name
}

// Delete runs `ip netns del`. Deleting a namespace destroys the interfaces in
// it (and the peers of its veth ends) once no socket or process still holds
// the namespace. Deleting a namespace that no longer exists is not an error.
func (n *NS) Delete(ctx context.Context) error {
	if n.IsHost() {
		return errors.New("netns: refusing to delete the host namespace")
	}
	if _, err := os.Stat(n.Path()); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	_, err := runCmd(ctx, ipPath(), "netns", "del", n.name)
	if err != nil && strings.Contains(err.Error(), "No such file") {
		return nil
	}
	return err
}

// Do runs fn with the calling goroutine inside namespace n.
//
// The goroutine is locked to its OS thread (runtime.LockOSThread) while fn
// runs, the thread is moved with setns(2), and the original namespace is
// restored before Do returns. Consequences for fn:
//   - sockets created by fn belong to n and keep working after Do returns,
//     from any goroutine (this is how to open a port inside a namespace);
//   - goroutines started by fn do NOT run in n (they run on other threads);
//   - fn must not call runtime.UnlockOSThread.
//
// If the original namespace cannot be restored, the thread stays locked so
// that the Go runtime destroys it when the goroutine exits, and Do returns
// an error. fn's error is returned unchanged (not wrapped).
func (n *NS) Do(fn func() error) (err error) {
	runtime.LockOSThread()
	orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns: open current namespace: %w", err)
	}
	defer unix.Close(orig)
	target, err := unix.Open(n.Path(), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns: open namespace %s: %w", n, err)
	}
	defer unix.Close(target)
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns: setns %s: %w", n, err)
	}
	defer func() {
		if rerr := unix.Setns(orig, unix.CLONE_NEWNET); rerr != nil {
			// Leave the thread locked: it is tainted and will be discarded.
			err = errors.Join(err, fmt.Errorf("netns: restore namespace after %s: %w", n, rerr))
			return
		}
		runtime.UnlockOSThread()
	}()
	return fn()
}

// DialContext opens a connection from inside the namespace (the socket is
// created there, see Do), so that a process in another namespace reaches
// the addresses of n: use it as a net.Dialer's or gRPC's dial function.
func (n *NS) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := n.Do(func() error {
		var err error
		c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("netns: dial %s %s in %s: %w", network, addr, n, err)
	}
	return c, nil
}

// Exec runs a command inside the namespace (`ip netns exec NAME cmd args...`,
// or the command directly for the host namespace) and returns its standard
// output. The error names the command and includes its standard error.
func (n *NS) Exec(ctx context.Context, name string, args ...string) ([]byte, error) {
	if n.IsHost() {
		return runCmd(ctx, name, args...)
	}
	full := append([]string{"netns", "exec", n.name, name}, args...)
	return runCmd(ctx, ipPath(), full...)
}

// IP runs `ip -n NAME args...` (plain `ip args...` for the host namespace).
func (n *NS) IP(ctx context.Context, args ...string) ([]byte, error) {
	return runCmd(ctx, ipPath(), n.nsArgs(args)...)
}

// TC runs `tc -n NAME args...` (plain `tc args...` for the host namespace).
func (n *NS) TC(ctx context.Context, args ...string) ([]byte, error) {
	return runCmd(ctx, tcPath(), n.nsArgs(args)...)
}

func (n *NS) nsArgs(args []string) []string {
	if n.IsHost() {
		return args
	}
	return append([]string{"-n", n.name}, args...)
}

// WriteSysctl writes value to /proc/sys/<key> inside the namespace, where
// key uses slashes or dots ("net/ipv6/conf/eth0/disable_ipv6"). Network
// sysctls are per namespace, so the file is opened from inside n.
func (n *NS) WriteSysctl(key, value string) error {
	p := filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/"))
	if strings.Contains(key, "/") {
		p = filepath.Join("/proc/sys", key)
	}
	return n.Do(func() error {
		if err := os.WriteFile(p, []byte(value), 0o644); err != nil {
			return fmt.Errorf("netns: sysctl %s=%s in %s: %w", key, value, n, err)
		}
		return nil
	})
}

func validName(name string) error {
	if name == "" || len(name) > 200 || strings.ContainsAny(name, "/ \t\n") || name == "." || name == ".." {
		return fmt.Errorf("netns: invalid namespace name %q", name)
	}
	return nil
}

func ipPath() string { return toolPath("ip") }
func tcPath() string { return toolPath("tc") }

func toolPath(name string) string {
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return name
}

// CmdError is returned when an external command fails.
type CmdError struct {
	// Cmd is the command line that was run.
	Cmd string
	// Stderr is the command's trimmed standard error.
	Stderr string
	// Err is the underlying error (usually *exec.ExitError).
	Err error
}

// Error implements error.
func (e *CmdError) Error() string {
	if e.Stderr == "" {
		return fmt.Sprintf("netns: %s: %v", e.Cmd, e.Err)
	}
	return fmt.Sprintf("netns: %s: %v: %s", e.Cmd, e.Err, e.Stderr)
}

// Unwrap returns the underlying error.
func (e *CmdError) Unwrap() error { return e.Err }

func runCmd(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), &CmdError{
			Cmd:    strings.Join(append([]string{name}, args...), " "),
			Stderr: strings.TrimSpace(stderr.String()),
			Err:    err,
		}
	}
	return stdout.Bytes(), nil
}
