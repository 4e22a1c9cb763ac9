package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/fastcnp/fastcnp/internal/netns"
)

// Binaries are the paths of the commands a run starts.
type Binaries struct {
	// Switch is fastcnp-switch.
	Switch string
	// Host is fastcnp-host.
	Host string
	// Controller is fastcnpd.
	Controller string
}

// Commands are the packages BuildBinaries builds, relative to the module root.
var Commands = map[string]string{
	"fastcnp-switch": "./cmd/fastcnp-switch",
	"fastcnp-host":   "./cmd/fastcnp-host",
	"fastcnpd":       "./cmd/fastcnpd",
}

// ErrMissingCommand reports a command whose package does not exist (yet).
var ErrMissingCommand = errors.New("testbed: command not available")

// ModuleRoot returns the directory of the go.mod of the current module
// (`go env GOMOD`), for building the commands.
func ModuleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("testbed: go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("testbed: not inside a Go module")
	}
	return filepath.Dir(mod), nil
}

// BuildBinaries builds fastcnp-switch, fastcnp-host and fastcnpd from the
// module at root into dir with `go build`. A command whose package is
// missing yields an error wrapping ErrMissingCommand (the others are still
// built and returned).
func BuildBinaries(ctx context.Context, root, dir string) (Binaries, error) {
	var b Binaries
	var errs []error
	for name, pkg := range Commands {
		if _, err := os.Stat(filepath.Join(root, pkg, "main.go")); err != nil {
			errs = append(errs, fmt.Errorf("%w: %s (%s has no main.go)", ErrMissingCommand, name, pkg))
			continue
		}
		out := filepath.Join(dir, name)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
		cmd.Dir = root
		if msg, err := cmd.CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("testbed: go build %s: %w: %s", pkg, err, strings.TrimSpace(string(msg))))
			continue
		}
		switch name {
		case "fastcnp-switch":
			b.Switch = out
		case "fastcnp-host":
			b.Host = out
		case "fastcnpd":
			b.Controller = out
		}
	}
	return b, errors.Join(errs...)
}

// proc is a command started inside a namespace, its output in a log file.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error
}

// startProc runs argv inside ns (`ip netns exec`, which execs the command:
// the PID is the command's own), with stdout and stderr in logPath. A
// non-zero nice runs it through nice(1) with that niceness (every thread
// of the process inherits it).
func startProc(ns *netns.NS, name, logPath string, argv []string, nice int, log logrus.FieldLogger) (*proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("testbed: %s log: %w", name, err)
	}
	nsName := ""
	if !ns.IsHost() {
		nsName = ns.Name()
	}
	full := procArgv(nsName, argv, nice)
	cmd := exec.Command(full[0], full[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("testbed: start %s (%s): %w", name, strings.Join(argv, " "), err)
	}
	log.WithFields(logrus.Fields{"proc": name, "pid": cmd.Process.Pid, "netns": ns.String()}).Debug("started: " + strings.Join(argv, " "))
	p := &proc{name: name, cmd: cmd, log: f, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// procArgv is the command line startProc runs: argv, through nice(1) for
// a non-zero niceness, inside namespace nsName ("": the caller's) with
// `ip netns exec`. Each wrapper execs the next, so the PID is argv's.
func procArgv(nsName string, argv []string, nice int) []string {
	full := argv
	if nice != 0 {
		full = append([]string{niceTool(), "-n", strconv.Itoa(nice)}, full...)
	}
	if nsName != "" {
		full = append([]string{ipTool(), "netns", "exec", nsName}, full...)
	}
	return full
}

// cpuTime returns the CPU time (user + system) the process has used so
// far, from /proc/<pid>/stat while it runs or from its exit status.
func (p *proc) cpuTime() (time.Duration, error) {
	if p.exited() {
		if st := p.cmd.ProcessState; st != nil {
			return st.UserTime() + st.SystemTime(), nil
		}
		return 0, fmt.Errorf("testbed: %s: no exit status", p.name)
	}
	return procCPU(p.cmd.Process.Pid)
}

// clockTick is USER_HZ, the unit of /proc/<pid>/stat times (100 on Linux
// for every architecture Go supports).
const clockTick = 100

// procCPU reads utime + stime of pid from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("testbed: cpu time of %d: %w", pid, err)
	}
	return parseProcStatCPU(string(b))
}

// parseProcStatCPU extracts utime + stime (fields 14 and 15) from a
// /proc/<pid>/stat line; the command name (field 2) may hold spaces and
// parentheses, so fields are counted after its last ')'.
func parseProcStatCPU(line string) (time.Duration, error) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return 0, errors.New("testbed: /proc stat: no command name")
	}
	f := strings.Fields(line[i+1:])
	// f[0] is field 3 (state): utime is field 14 = f[11], stime f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("testbed: /proc stat: %d fields after the name", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("testbed: /proc stat: bad time %q", s)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / clockTick, nil
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, waits up to grace, then SIGKILL; it returns the
// exit error unless the process ended because of our signal.
func (p *proc) stop(grace time.Duration) error {
	if !p.exited() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
			_ = p.cmd.Process.Kill()
			<-p.done
			return fmt.Errorf("testbed: %s (pid %d) ignored SIGTERM for %v: killed", p.name, p.cmd.Process.Pid, grace)
		}
	}
	return p.exitErr()
}

// exitErr returns the process's exit error, ignoring SIGTERM/SIGINT ends
// and exit status 0.
func (p *proc) exitErr() error {
	if p.err == nil {
		return nil
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() &&
			(ws.Signal() == syscall.SIGTERM || ws.Signal() == syscall.SIGINT) {
			return nil
		}
	}
	return fmt.Errorf("testbed: %s: %w (see %s)", p.name, p.err, p.log.Name())
}

// tail returns the last n bytes of the process's log, for error messages.
func (p *proc) tail(n int64) string {
	b, err := os.ReadFile(p.log.Name())
	if err != nil {
		return ""
	}
	if int64(len(b)) > n {
		b = b[int64(len(b))-n:]
	}
	return strings.TrimSpace(string(b))
}

// procSet stops its processes in reverse start order.
type procSet struct {
	mu    sync.Mutex
	procs []*proc
}

func (s *procSet) add(p *proc) {
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
}

func (s *procSet) stopAll(grace time.Duration) error {
	s.mu.Lock()
	procs := s.procs
	s.procs = nil
	s.mu.Unlock()
	var errs []error
	for i := len(procs) - 1; i >= 0; i-- {
		if err := procs[i].stop(grace); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func niceTool() string {
	for _, p := range []string{"/usr/bin/nice", "/bin/nice"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "nice"
}

func ipTool() string {
	for _, p := range []string{"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "ip"
}

// waitFor polls cond every interval until it returns true, ctx ends or
// timeout passes; the last error of cond is returned on failure.
func waitFor(ctx context.Context, timeout, interval time.Duration, what string, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("testbed: %s: not ready after %v: %w (last: %w)", what, timeout, ctx.Err(), last)
			}
			return fmt.Errorf("testbed: %s: not ready after %v: %w", what, timeout, ctx.Err())
		case <-time.After(interval):
		}
	}
}
