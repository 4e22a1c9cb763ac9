// Package etcdtest runs a throwaway etcd cluster for tests: Debian's etcd
// binary (package etcd-server, which `make setup` installs), each member's
// data in a temporary directory, listening on loopback with free ports or on
// the addresses a test gives, optionally inside a network namespace. Tests
// that need it call Require, which skips them with the reason when etcd is
// not installed.
package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Hint says how to get etcd.
const Hint = "etcd is not installed: it is Debian's etcd-server package, which `make setup` (scripts/setup.sh) installs"

// Binary returns the path of the etcd binary.
func Binary() (string, error) {
	p, err := exec.LookPath("etcd")
	if err != nil {
		return "", fmt.Errorf("%s (%w)", Hint, err)
	}
	return p, nil
}

// Require skips t unless etcd is installed, and returns its path.
func Require(t testing.TB) string {
	t.Helper()
	p, err := Binary()
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	return p
}

// Options shape a cluster.
type Options struct {
	// Members is the number of members (default 1).
	Members int
	// Hosts are the members' IP addresses, one per member (default:
	// 127.0.0.1 for each).
	Hosts []string
	// Ports are the members' client ports (their peer port is the next
	// one); default: free ports of the test's namespace.
	Ports []int
	// Netns runs the members inside this network namespace (`ip netns exec`;
	// "" is the caller's).
	Netns string
	// Dial opens connections to the members (health checks); default: the
	// caller's namespace. A test using Netns passes the namespace's dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Args are extra etcd flags for every member.
	Args []string
}

// Cluster is a running etcd cluster.
type Cluster struct {
	// Endpoints are the members' client URLs (http://host:port).
	Endpoints []string
	members   []*member
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)
}

type member struct {
	name    string
	dir     string
	args    []string
	log     string
	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	stopped bool
}

// Start starts the cluster and waits until every member reports healthy;
// t.Cleanup stops it. It skips t when etcd is not installed.
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	bin := Require(t)
	if o.Members <= 0 {
		o.Members = 1
	}
	if o.Dial == nil {
		o.Dial = (&net.Dialer{}).DialContext
	}
	hosts := o.Hosts
	if len(hosts) == 0 {
		for range o.Members {
			hosts = append(hosts, "127.0.0.1")
		}
	}
	ports := o.Ports
	if len(ports) == 0 {
		for i := range o.Members {
			ports = append(ports, freePortPair(t, hosts[i]))
		}
	}
	if len(hosts) != o.Members || len(ports) != o.Members {
		t.Fatalf("etcdtest: %d members, %d hosts, %d ports", o.Members, len(hosts), len(ports))
	}
	root := t.TempDir()
	c := &Cluster{dial: o.Dial}
	var initial []string
	for i := range o.Members {
		peer := "http://" + net.JoinHostPort(hosts[i], strconv.Itoa(ports[i]+1))
		initial = append(initial, fmt.Sprintf("m%d=%s", i, peer))
		c.Endpoints = append(c.Endpoints, "http://"+net.JoinHostPort(hosts[i], strconv.Itoa(ports[i])))
	}
	for i := range o.Members {
		name := fmt.Sprintf("m%d", i)
		client, peer := c.Endpoints[i], "http://"+net.JoinHostPort(hosts[i], strconv.Itoa(ports[i]+1))
		args := append([]string{bin, "--name", name, "--data-dir", filepath.Join(root, name),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "etcdtest-" + strconv.Itoa(os.Getpid()), "--log-outputs", "stderr"}, o.Args...)
		if o.Netns != "" {
			args = append([]string{"ip", "netns", "exec", o.Netns}, args...)
		}
		m := &member{name: name, dir: filepath.Join(root, name), args: args, log: filepath.Join(root, name+".log")}
		c.members = append(c.members, m)
	}
	t.Cleanup(c.Stop)
	for _, m := range c.members {
		if err := m.start(); err != nil {
			t.Fatalf("etcdtest: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // guards against a hang only
	defer cancel()
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatalf("etcdtest: %v\n%s", err, c.Logs())
	}
	return c
}

// freePortPair returns a port p of host such that p and p+1 were free.
func freePortPair(t testing.TB, host string) int {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			t.Fatalf("etcdtest: free port: %v", err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l2, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p+1)))
		l.Close()
		if err == nil {
			l2.Close()
			return p
		}
	}
	t.Fatal("etcdtest: no two consecutive free ports")
	return 0
}

func (m *member) start() error {
	f, err := os.OpenFile(m.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(m.args[0], m.args[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	// The member dies with the test process, whatever happens to the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", strings.Join(m.args, " "), err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(done)
	}()
	m.mu.Lock()
	m.cmd, m.done, m.stopped = cmd, done, false
	m.mu.Unlock()
	return nil
}

// stop kills the member and waits for it.
func (m *member) stop() {
	m.mu.Lock()
	cmd, done, stopped := m.cmd, m.done, m.stopped
	m.stopped = true
	m.mu.Unlock()
	if cmd == nil || stopped {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// Stop stops every member (idempotent).
func (c *Cluster) Stop() {
	for _, m := range c.members {
		m.stop()
	}
}

// Kill stops member i at once (SIGKILL), as a crash; Restart brings it
// back with its data.
func (c *Cluster) Kill(i int) {
	m := c.members[i]
	m.mu.Lock()
	cmd, done, stopped := m.cmd, m.done, m.stopped
	m.stopped = true
	m.mu.Unlock()
	if cmd != nil && !stopped {
		_ = cmd.Process.Kill()
		<-done
	}
}

// Restart starts a stopped member again with its data.
func (c *Cluster) Restart(i int) error {
	return c.members[i].start()
}

// WaitHealthy polls every member's /health until all answer healthy.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	hc := &http.Client{Transport: &http.Transport{DialContext: c.dial, DisableKeepAlives: true}, Timeout: 2 * time.Second}
	var last error
	for {
		last = nil
		for i, ep := range c.Endpoints {
			if err := c.members[i].exited(); err != nil {
				return err
			}
			if err := health(ctx, hc, ep); err != nil {
				last = err
				break
			}
		}
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster not healthy: %w (last: %v)", ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (m *member) exited() error {
	m.mu.Lock()
	done, stopped := m.done, m.stopped
	m.mu.Unlock()
	if stopped || done == nil {
		return nil
	}
	select {
	case <-done:
		return fmt.Errorf("member %s exited", m.name)
	default:
		return nil
	}
}

func health(ctx context.Context, hc *http.Client, ep string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"health":"true"`) {
		return fmt.Errorf("%s/health: %s %s", ep, resp.Status, b)
	}
	return nil
}

// Logs returns every member's log (for a failing test's report).
func (c *Cluster) Logs() string {
	var b strings.Builder
	for _, m := range c.members {
		data, err := os.ReadFile(m.log)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(&b, "== %s: %v\n", m.name, err)
			continue
		}
		fmt.Fprintf(&b, "== %s\n%s\n", m.name, data)
	}
	return b.String()
}
