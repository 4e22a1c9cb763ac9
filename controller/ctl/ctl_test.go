package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"gopkg.in/yaml.v3"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/controller/daemon"
	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/softswitch/p4rtserver"
)

// TestMain fails the run if goroutines of fastcnpctl, the daemon, p4rt, the
// server or gRPC outlive the tests. They may take a while to end on a
// loaded machine: the deadline only guards against a hang.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(30 * time.Second)
		for {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			var leaks []string
			for _, g := range strings.Split(string(buf), "\n\n") {
				if strings.Contains(g, "TestMain") {
					continue
				}
				for _, pkg := range []string{"controller/daemon", "controller/p4rt", "controller/ctl", "p4rtserver", "google.golang.org/grpc"} {
					if strings.Contains(g, pkg) {
						leaks = append(leaks, g)
						break
					}
				}
			}
			if len(leaks) == 0 {
				break
			}
			if time.Now().After(deadline) {
				fmt.Fprintf(os.Stderr, "goroutine leak:\n%s\n", strings.Join(leaks, "\n\n"))
				code = 1
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	os.Exit(code)
}

const (
	adminToken = "s3cret-admin-0123456789"
	readToken  = "s3cret-read-0123456789"
)

type env struct {
	addr     string
	d        *daemon.Daemon
	switches map[string]*p4rtserver.LocalDataPlane
	stop     map[string]func() // stops a switch's P4Runtime server
}

func quiet() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// startEnv runs two in-process switches, fastcnpd and its API on loopback,
// with token authentication (adminToken, readToken).
func startEnv(t *testing.T) *env {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("# fastcnpd API tokens\nadmin "+adminToken+"\nread "+readToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return startEnvAuth(t, "{token_file: "+tokens+"}")
}

// startEnvAuth is startEnv with api.auth given as a YAML flow mapping.
func startEnvAuth(t *testing.T, auth string) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{switches: map[string]*p4rtserver.LocalDataPlane{}, stop: map[string]func(){}}
	addrs := map[string]string{}
	for i, name := range []string{"s1", "s2"} {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dp := p4rtserver.NewLocalDataPlane(pipeline.New(pipeline.Options{}), p4rtserver.LocalOptions{})
		srv, err := p4rtserver.New(p4rtserver.Options{DeviceID: uint64(i + 1), DataPlane: dp, Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = srv.Serve(ctx, lis) }()
		var once sync.Once
		e.stop[name] = func() { once.Do(func() { cancel(); srv.Stop(); <-done }) }
		t.Cleanup(e.stop[name])
		e.switches[name], addrs[name] = dp, lis.Addr().String()
	}
	cfg, err := config.Parse([]byte(fmt.Sprintf(`
api: {auth: %s}
state_file: %s
metrics: {listen: ""}
switches:
  - name: s1
    address: %s
    device_id: 1
    tls: {insecure: true}
    ports:
      - {port: 1, mac: "02:00:00:00:01:01", subnets: [10.1.1.0/24]}
      - {port: 3, mac: "02:00:00:00:01:03", link_rate: 400Gb/s}
    routes: [{prefix: 10.0.0.0/8, port: 3, next_hop_mac: "02:00:00:00:03:01"}]
  - name: s2
    address: %s
    device_id: 2
    tls: {insecure: true}
    ports:
      - {port: 3, mac: "02:00:00:00:02:03"}
      - {port: 4, mac: "02:00:00:00:02:04"}
    inc:
      buckets: 128 # warned about: the data plane has 256
      next_hops: [{port: 3, mac: "02:00:00:00:03:02", weight: 3}, {port: 4, mac: "02:00:00:00:03:04", weight: 1}]
`, auth, filepath.Join(dir, "state.json"), addrs["s1"], addrs["s2"])))
	if err != nil {
		t.Fatal(err)
	}
	d, err := daemon.New(daemon.Options{Config: cfg, Logger: quiet(), AuditInterval: -1,
		ClientOptions: []p4rt.Option{p4rt.WithBackoff(p4rt.Backoff{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond, Multiplier: 2})}})
	if err != nil {
		t.Fatal(err)
	}
	gs, err := daemon.NewGRPCServer(d, cfg.API.Auth)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.addr, e.d = lis.Addr().String(), d
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = d.Run(ctx) }()
	go func() { defer wg.Done(); _ = daemon.ServeAPI(ctx, gs, lis) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	deadline := time.Now().Add(60 * time.Second) // guards against a hang only
	for {
		ok := true
		for _, st := range d.Switches() {
			ok = ok && st.Primary && st.Entries > 0 && st.LastError == ""
		}
		if ok && e.count("s1", p4src.TablePortConfig) == 2 && e.count("s2", p4src.TableIncRoute) == 256 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("switches not installed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return e
}

func (e *env) entries(sw string, table uint32) []pipeline.TableEntry {
	var out []pipeline.TableEntry
	_ = e.switches[sw].Exec(context.Background(), func(p *pipeline.Pipeline) error {
		var err error
		out, err = p.ReadEntries(table, nil)
		return err
	})
	return out
}

func (e *env) count(sw string, table uint32) int { return len(e.entries(sw, table)) }

func (e *env) qth(sw string, port uint64) uint64 {
	for _, en := range e.entries(sw, p4src.TablePortConfig) {
		if en.Match[0].Value == port {
			for _, p := range en.Action.Params {
				if p.ID == 2 {
					return p.Value
				}
			}
		}
	}
	return 0
}

// testTimeout is fastcnpctl's --timeout in the tests: a change waits for
// its installation, which may take long on a loaded machine; it only
// guards against a hang.
const testTimeout = "60s"

// run runs fastcnpctl against the env with the admin token unless args
// name another.
func (e *env) run(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	full := append([]string{"--addr", e.addr, "--timeout", testTimeout, "--token", adminToken}, args...)
	code := Run(context.Background(), full, &out, &errb)
	return code, out.String(), errb.String()
}

// runNoToken runs fastcnpctl against the env with args alone.
func (e *env) runNoToken(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Run(context.Background(), append([]string{"--addr", e.addr, "--timeout", testTimeout}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// qthCase is a fastcnpctl command line, its expected exit code and stderr,
// and the qth_bytes of switch s1 port 3 after it.
type qthCase struct {
	name    string
	args    []string
	code    int
	stderr  string
	wantQth uint64
}

// runQthCases runs each case with run (e.run or e.runNoToken) in turn.
func (e *env) runQthCases(t *testing.T, tests []qthCase, run func(...string) (int, string, string)) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := run(tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) {
				t.Fatalf("exit %d stderr %q, want %d containing %q (stdout %q)", code, stderr, tt.code, tt.stderr, out)
			}
			if got := e.qth("s1", 3); got != tt.wantQth {
				t.Errorf("switch s1 port 3 qth_bytes %d, want %d", got, tt.wantQth)
			}
		})
	}
}

func TestThresholdSet(t *testing.T) {
	e := startEnv(t)
	tests := []qthCase{
		{"set", []string{"threshold", "set", "--switch", "s1", "--port", "3", "--qth", "120KiB"}, ExitOK, "", 122880},
		{"flags after", []string{"threshold", "set", "--port", "3", "--qth", "100kB", "--switch", "s1", "-o", "json"}, ExitOK, "", 100000},
		{"read-only token", []string{"--token", readToken, "threshold", "set", "--switch", "s1", "--port", "3", "--qth", "1KiB"}, ExitAuth, "needs an admin token (PermissionDenied)", 100000},
		{"no token", []string{"--token", "", "threshold", "get", "--switch", "s1", "--port", "3"}, ExitAuth, "missing bearer token (Unauthenticated)", 100000},
		{"bad token", []string{"--token", "nope", "threshold", "get", "--switch", "s1", "--port", "3"}, ExitAuth, "invalid token", 100000},
		{"unknown switch", []string{"threshold", "set", "--switch", "s9", "--port", "3", "--qth", "1KiB"}, ExitNotFound, `unknown switch "s9"`, 100000},
		{"unknown port", []string{"threshold", "set", "--switch", "s1", "--port", "2", "--qth", "1KiB"}, ExitNotFound, "unknown port 2", 100000},
		{"out of range", []string{"threshold", "set", "--switch", "s1", "--port", "3", "--qth", "8GiB"}, ExitInvalid, "out of range", 100000},
		{"bad unit", []string{"threshold", "set", "--switch", "s1", "--port", "3", "--qth", "12QB"}, ExitUsage, "--qth", 100000},
		{"port range", []string{"threshold", "set", "--switch", "s1", "--port", "600", "--qth", "1KiB"}, ExitUsage, "out of range", 100000},
		{"missing switch", []string{"threshold", "set", "--port", "3", "--qth", "1KiB"}, ExitUsage, "--switch is required", 100000},
		{"nothing", []string{"threshold", "set", "--switch", "s1", "--port", "3"}, ExitUsage, "nothing to set", 100000},
	}
	e.runQthCases(t, tests, e.run)
	code, out, _ := e.run("threshold", "get", "--switch", "s1", "--port", "3")
	if code != 0 || !strings.Contains(out, "100kB") || !strings.Contains(out, "400Gb/s") {
		t.Errorf("get: %d %q", code, out)
	}
	code, out, _ = e.run("port", "set", "--switch", "s1", "--port", "1", "--mode", "ecn", "--red-kmin", "10KiB",
		"--red-kmax", "100KiB", "--red-pmax", "0.2", "-o", "yaml")
	var y map[string]any
	if code != 0 || yaml.Unmarshal([]byte(out), &y) != nil || y["mode"] != "ecn" || y["installed"] != true {
		t.Errorf("port set: %d %q", code, out)
	}
	// HPCC's INT mode, per port like the others.
	code, out, _ = e.run("port", "set", "--switch", "s1", "--port", "1", "--mode", "int", "-o", "yaml")
	y = nil
	if code != 0 || yaml.Unmarshal([]byte(out), &y) != nil || y["mode"] != "int" || y["installed"] != true {
		t.Errorf("port set --mode int: %d %q", code, out)
	}
}

func TestReadCommands(t *testing.T) {
	e := startEnv(t)
	code, out, stderr := e.run("--token", readToken, "ports", "-o", "json")
	if code != 0 {
		t.Fatalf("ports: %d %s", code, stderr)
	}
	var ports struct {
		Ports []struct {
			Switch   string
			Port     int
			Counters map[string]any
		}
	}
	if err := json.Unmarshal([]byte(out), &ports); err != nil || len(ports.Ports) != 4 {
		t.Fatalf("ports json: %v %q", err, out)
	}
	// The port-indexed counters (docs/dataplane.md), none indexed by queue.
	for _, c := range []string{"pfc_pause_rx", "pfc_resume_rx", "dropped", "malformed", "flow_collisions", "announcements",
		"inc_contributions", "inc_duplicates", "inc_results", "inc_slot_busy", "switch_cnp_sent", "ecn_marked"} {
		if _, ok := ports.Ports[0].Counters[c]; !ok {
			t.Errorf("port counters %v lack %s", ports.Ports[0].Counters, c)
		}
	}
	for c := range ports.Ports[0].Counters {
		if strings.HasPrefix(c, "queue_") || strings.HasPrefix(c, "pfc_x") {
			t.Errorf("queue-indexed counter %s shown for a port", c)
		}
	}
	if code, out, _ := e.run("ports", "--switch", "s2"); code != 0 || strings.Count(out, "\ns2 ") != 2 {
		t.Errorf("ports --switch s2: %d %q", code, out)
	}
	code, out, _ = e.run("inc", "routes", "--switch", "s2")
	if code != 0 || !strings.Contains(out, "75.0%") || !strings.Contains(out, "25.0%") {
		t.Errorf("inc routes: %d %q", code, out)
	}
	if code, _, stderr := e.run("inc", "routes", "--switch", "zz"); code != ExitNotFound || !strings.Contains(stderr, "known: [s1 s2]") {
		t.Errorf("inc routes unknown: %d %q", code, stderr)
	}
	// The INC tree of a config without inc.groups, and link states that
	// fastcnpd refuses (no such switch; a port with no switch behind it).
	if code, out, _ := e.run("inc", "tree"); code != 0 || !strings.Contains(out, "no INC group (inc.groups) is aggregated") {
		t.Errorf("inc tree: %d %q", code, out)
	}
	if code, _, stderr := e.run("link", "down", "--switch", "zz"); code != ExitNotFound {
		t.Errorf("link down unknown switch: %d %q", code, stderr)
	}
	if code, _, stderr := e.run("link", "down", "--switch", "s1", "--port", "3"); code != ExitInvalid || !strings.Contains(stderr, "leads to no switch") {
		t.Errorf("link down of a port without a peer: %d %q", code, stderr)
	}
	if code, _, _ := e.run("link", "sideways", "--switch", "s1"); code != ExitUsage {
		t.Errorf("link sideways: exit %d, want usage", code)
	}
	if code, out, _ := e.run("link", "down", "--switch", "s2"); code != 0 || !strings.Contains(out, "0 buckets moved") || !strings.Contains(out, "down: switch s2") {
		t.Errorf("link down --switch s2: %d %q", code, out)
	}
	if code, out, _ := e.run("link", "up", "--switch", "s2", "-o", "json"); code != 0 || strings.Contains(out, "s2") {
		t.Errorf("link up --switch s2: %d %q", code, out)
	}
	if code, out, _ := e.run("switches"); code != 0 || strings.Count(out, "yes") != 4 ||
		!strings.Contains(out, "warning: s2: inc.buckets 128") {
		t.Errorf("switches: %d %q", code, out)
	}

	// Connections: add, list, remove.
	code, out, stderr = e.run("connections", "add", "--sender-ip", "10.1.1.5", "--udp-sport", "4000", "--dest-qp", "0x11",
		"--sender-qpn", "0x22")
	if code != 0 || !strings.Contains(out, "conn_index 0") {
		t.Fatalf("connections add: %d %q %q", code, out, stderr)
	}
	for _, sw := range []string{"s1", "s2"} {
		if n := e.count(sw, p4src.TableRDMAConnection); n != 1 {
			t.Errorf("%s: %d connections", sw, n)
		}
	}
	code, out, _ = e.run("connections", "-o", "yaml")
	var conns map[string][]map[string]any
	if code != 0 || yaml.Unmarshal([]byte(out), &conns) != nil || len(conns["connections"]) != 1 {
		t.Errorf("connections list: %d %q", code, out)
	}
	if code, _, stderr := e.run("connections", "add", "--sender-ip", "10.1.1.6", "--udp-sport", "1", "--dest-qp", "1", "--worker-rank", "40", "--flags", "1", "--inc-group", "1"); code != ExitInvalid {
		t.Errorf("bad connection: %d %q", code, stderr)
	}
	if code, _, _ := e.run("connections", "remove", "--sender-ip", "10.1.1.5", "--udp-sport", "4000", "--dest-qp", "0x11"); code != 0 {
		t.Errorf("remove: %d", code)
	}
	if code, _, _ := e.run("connections", "remove", "--sender-ip", "10.1.1.5", "--udp-sport", "4000", "--dest-qp", "0x11"); code != ExitNotFound {
		t.Errorf("remove again: %d", code)
	}
	if n := e.count("s1", p4src.TableRDMAConnection); n != 0 {
		t.Errorf("s1: %d connections after remove", n)
	}
}

// notifyWriter is a goroutine-safe buffer that signals every write.
type notifyWriter struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{}
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return w.b.Write(p)
}

func (w *notifyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// subscribers reads fastcnpd's fastcnp_event_subscribers gauge.
func (e *env) subscribers(t *testing.T) float64 {
	t.Helper()
	mfs, err := e.d.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "fastcnp_event_subscribers" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("no fastcnp_event_subscribers metric")
	return 0
}

// TestEvents follows the event stream with a read token while an admin
// changes a threshold; the change arrives as one JSON line.
func TestEvents(t *testing.T) {
	e := startEnv(t)
	out := &notifyWriter{wrote: make(chan struct{}, 1)}
	var errb bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int)
	go func() {
		done <- Run(ctx, []string{"--addr", e.addr, "--token", readToken, "events", "--follow",
			"--kind", "port_settings", "-o", "json"}, out, &errb)
	}()
	// Subscribed once fastcnpd counts the stream (the deadline only guards
	// against a hang).
	deadline := time.Now().Add(60 * time.Second) // guards against a hang only
	for e.subscribers(t) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the events stream never subscribed")
		}
		select {
		case code := <-done:
			t.Fatalf("events ended early: %d %s", code, errb.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if code, _, stderr := e.run("threshold", "set", "--switch", "s2", "--port", "4", "--qth", "64KiB"); code != 0 {
		t.Fatalf("set: %d %s", code, stderr)
	}
	select {
	case <-out.wrote:
	case code := <-done:
		t.Fatalf("events ended before the event: %d %s", code, errb.String())
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("events: exit %d after interrupt, want 0: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var ev map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &ev); err != nil || len(lines) != 1 ||
		ev["kind"] != "port_settings" || ev["switch"] != "s2" || ev["port"] != float64(4) {
		t.Errorf("events output %q (%v)", out.String(), err)
	}
}

func TestOffline(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("switches:\n  - name: s1\n    prots: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := lis.Addr().String()
	lis.Close()
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"valid config", []string{"config", "validate", "../config/testdata/fastcnpd.yaml"}, ExitOK, "valid", ""},
		{"invalid config", []string{"config", "validate", bad}, ExitConfig, "bad.yaml:3", "problem"},
		{"missing file", []string{"config", "validate", filepath.Join(dir, "none")}, ExitUsage, "", "no such file"},
		{"unreachable", []string{"--addr", dead, "ports"}, ExitUnreachable, "", "fastcnpd unreachable"},
		{"unknown command", []string{"frobnicate"}, ExitUsage, "", "unknown command"},
		{"bad output", []string{"-o", "xml", "ports"}, ExitUsage, "", "want table, json or yaml"},
		{"completion", []string{"completion", "bash"}, ExitOK, "complete -F _fastcnpctl", ""},
		{"help", []string{"help"}, ExitOK, "exit codes", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Run(context.Background(), tt.args, &out, &errb)
			if code != tt.code || !strings.Contains(out.String(), tt.stdout) || !strings.Contains(errb.String(), tt.stderr) {
				t.Errorf("exit %d stdout %q stderr %q; want %d, %q, %q", code, out.String(), errb.String(), tt.code, tt.stdout, tt.stderr)
			}
		})
	}
}

// TestQueues: fastcnpctl queues shows the per-queue counters of the
// configured ports as fastcnp-switch counted them: a table with units, and
// JSON with the raw values; filters and errors.
func TestQueues(t *testing.T) {
	e := startEnv(t)
	// What fastcnp-switch's traffic manager counts for queue (3, 3) of s1:
	// 3 packets dequeued (written as the target can), 2 KiB dropped, an XOFF.
	err := e.switches["s1"].Exec(context.Background(), func(p *pipeline.Pipeline) error {
		if err := p.WriteCounter(p4src.CounterQueueDequeued, int(p4src.QueueIndex(3, 3)), 3, 4500); err != nil {
			return err
		}
		p.CountQueueDrop(3, 3, 1024)
		p.CountQueueDrop(3, 3, 1024)
		p.CountPFCSent(3, 3, true, 60)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	code, out, stderr := e.run("--token", readToken, "queues", "--switch", "s1", "--port", "3")
	if code != 0 {
		t.Fatalf("queues: %d %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 9 || !strings.HasPrefix(lines[0], "SWITCH") {
		t.Fatalf("queues table: %q", out)
	}
	// Priority 3 (the lossless one): DEQUEUED 3 (4.5kB), DROPPED 2 (2KiB), XOFF 1.
	if f := strings.Fields(lines[4]); len(f) != 12 || f[2] != "3" || f[3] != "lossless" || f[6] != "3" || f[7] != "(4.5kB)" ||
		f[8] != "2" || f[9] != "(2KiB)" || f[10] != "1" || f[11] != "0" {
		t.Errorf("priority 3 row %q", lines[4])
	}
	if f := strings.Fields(lines[1]); len(f) != 12 || f[3] != "lossy" || f[4] != "0" || f[10] != "0" {
		t.Errorf("priority 0 row %q", lines[1])
	}
	code, out, _ = e.run("queues", "--switch", "s1", "-o", "json")
	var qs struct {
		Queues []struct {
			Switch   string
			Port     int
			Priority int
			Lossless bool
			Counters map[string]struct{ Packets, Bytes string } // uint64 as JSON strings (protojson)
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &qs) != nil || len(qs.Queues) != 16 {
		t.Fatalf("queues json: %d %q", code, out)
	}
	found := false
	for _, q := range qs.Queues {
		if q.Port == 3 && q.Priority == 3 {
			found = true
			if c := q.Counters["queue_dropped"]; c.Packets != "2" || c.Bytes != "2048" || !q.Lossless {
				t.Errorf("queue (3, 3) in json: %+v", q)
			}
		}
		if len(q.Counters) != 5 {
			t.Errorf("queue (%d, %d) has counters %v, want the 5 queue counters", q.Port, q.Priority, q.Counters)
		}
	}
	if !found {
		t.Error("queue (3, 3) missing from the json")
	}
	if code, out, _ := e.run("queues", "--port", "4"); code != 0 || strings.Count(out, "\ns2 ") != 8 || strings.Contains(out, "\ns1 ") {
		t.Errorf("queues --port 4: %d %q, want s2's 8 queues", code, out)
	}
	for _, tt := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"queues", "--switch", "s1", "--port", "4"}, ExitNotFound, "unknown port 4"},
		{[]string{"queues", "--switch", "s9"}, ExitNotFound, `unknown switch "s9"`},
		{[]string{"queues", "--port", "600"}, ExitUsage, "out of range"},
		{[]string{"queues", "extra"}, ExitUsage, "unexpected argument"},
	} {
		if code, _, stderr := e.run(tt.args...); code != tt.code || !strings.Contains(stderr, tt.stderr) {
			t.Errorf("%v: exit %d %q, want %d %q", tt.args, code, stderr, tt.code, tt.stderr)
		}
	}
}
