package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/internal/testfs"
	"github.com/sirupsen/logrus"

	"github.com/fastcnp/fastcnp/controller/ctl"
	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/softswitch/p4rtserver"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startSwitch serves an in-process switch (TLS with tc, plaintext when nil)
// on a loopback port until the test ends; it returns its data plane and
// address.
func startSwitch(t *testing.T, device uint64, tc *tls.Config) (*p4rtserver.LocalDataPlane, string) {
	t.Helper()
	dp := p4rtserver.NewLocalDataPlane(pipeline.New(pipeline.Options{}), p4rtserver.LocalOptions{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveSwitch(t, lis, p4rtserver.Options{DeviceID: device, DataPlane: dp, TLS: tc})
	return dp, lis.Addr().String()
}

// serveSwitch serves a switch's P4Runtime server (opts; its logs discarded
// unless opts has a logger) on lis until the test ends.
func serveSwitch(t *testing.T, lis net.Listener, opts p4rtserver.Options) {
	t.Helper()
	if opts.Logger == nil {
		quiet := logrus.New()
		quiet.SetOutput(io.Discard)
		opts.Logger = quiet
	}
	srv, err := p4rtserver.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ctx, lis) }()
	t.Cleanup(func() { cancel(); srv.Stop(); <-done })
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestFastcnpd runs the daemon as the command does (flags, API, metrics)
// against an in-process switch, drives it with fastcnpctl's code and
// scrapes /metrics.
func TestFastcnpd(t *testing.T) {
	_, swAddr := startSwitch(t, 1, nil)
	dir := t.TempDir()
	api, metrics := freeAddr(t), freeAddr(t)
	cfg := filepath.Join(dir, "fastcnpd.yaml")
	err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
api: {listen: %q, auth: {insecure: true}}
state_file: %s
metrics: {listen: %q}
switches:
  - name: leaf1
    address: %s
    device_id: 1
    tls: {insecure: true}
    ports: [{port: 3, mac: "02:00:00:00:01:03"}]
`, api, filepath.Join(dir, "state.json"), metrics, swAddr)), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--config", cfg, "--log-level", "debug", "--log-format", "json",
			"--counter-interval", "20ms"}, logs)
	}()

	deadline := time.Now().Add(60 * time.Second) // guards against a hang only
	var code int
	var out bytes.Buffer
	for {
		out.Reset()
		code = ctl.Run(context.Background(), []string{"--addr", api, "threshold", "set", "--switch", "leaf1",
			"--port", "3", "--qth", "120KiB"}, &out, io.Discard)
		if code == ctl.ExitOK || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code != ctl.ExitOK {
		t.Fatalf("threshold set: exit %d; logs:\n%s", code, logs.String())
	}
	// The data-plane counters appear once polled (every 20 ms here).
	const dropped = `fastcnp_port_counter_packets_total{counter="dropped",port="3",switch="leaf1"} 0`
	var body []byte
	for {
		resp, err := http.Get("http://" + metrics + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), dropped) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, want := range []string{`fastcnp_switch_primary{switch="leaf1"} 1`, `fastcnp_p4rt_updates_total{switch="leaf1",type="modify"}`,
		"go_goroutines", dropped, "fastcnp_event_subscribers 0"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
	if !strings.Contains(logs.String(), `"msg":"port settings changed"`) {
		t.Errorf("no JSON log of the change:\n%s", logs.String())
	}
}

func TestFlags(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("api:\n  auth: {insecure: true}\nswitches:\n  - name: s1\n    address: 127.0.0.1\n    device_id: 0\n    tls: {insecure: true}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--log-level", "loud"}, "--log-level"},
		{[]string{"--log-format", "xml", "--config", "x"}, "--log-format"},
		{[]string{"--config", "/nonexistent/fastcnpd.yaml"}, "no such file"},
		{[]string{"extra"}, "unexpected argument"},
		{[]string{"--counter-interval", "-1s"}, "must not be negative"},
		{[]string{"--config", bad}, bad + `:5: switches[0].address: "127.0.0.1" is not host:port`},
		{[]string{"--config", bad}, bad + ":6: switches[0].device_id: 0 is out of range"},
	} {
		err := run(context.Background(), tt.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want %q", tt.args, err, tt.want)
		}
	}
}

// TestTokenWithoutTLSWarned: bearer tokens over plaintext on an address
// other hosts can reach are logged as a warning at start.
func TestTokenWithoutTLSWarned(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("admin s3cret-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, port, err := net.SplitHostPort(freeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "fastcnpd.yaml")
	// Nothing listens at the switch's address: fastcnpd keeps retrying.
	err = os.WriteFile(cfg, []byte(fmt.Sprintf(`
api: {listen: "0.0.0.0:%s", auth: {token_file: %s}}
state_file: %s
metrics: {listen: ""}
switches:
  - {name: leaf1, address: %q, device_id: 1, tls: {insecure: true}}
`, port, tokens, filepath.Join(dir, "state.json"), freeAddr(t))), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"--config", cfg, "--log-format", "json"}, logs) }()
	const want = `"level":"warning","listen":"0.0.0.0:`
	deadline := time.Now().Add(60 * time.Second) // guards against a hang only
	for !strings.Contains(logs.String(), want) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
	if out := logs.String(); !strings.Contains(out, want) || !strings.Contains(out, "bearer tokens cross the network in plaintext") {
		t.Errorf("no warning about plaintext tokens:\n%s", out)
	}
}

// TestExitCodes: fastcnpd exits 2 on every bad flag or argument (a missing
// config file included), 1 when it cannot start with what it was given
// (invalid config, unwritable state directory, bad token file), 0 for
// --help. The errors name the flag, or the file and line.
func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A config whose switch nobody answers: fastcnpd would run (and retry).
	cfg := func(name, state, auth, extra string) string {
		return write(name, fmt.Sprintf("api: {listen: %q, auth: %s}\nstate_file: %s\nmetrics: {listen: \"\"}\nswitches:\n"+
			"  - name: s1\n    address: %q\n    device_id: 1\n    tls: {insecure: true}\n%s", freeAddr(t), auth, state, freeAddr(t), extra))
	}
	state := filepath.Join(dir, "state.json")
	badTLS := write("tls.yaml", fmt.Sprintf("api: {listen: %q, auth: {insecure: true}}\nstate_file: %s\nmetrics: {listen: \"\"}\n"+
		"switches:\n  - {name: s1, address: %q, device_id: 1, tls: {ca: %s}}\n", freeAddr(t), state, freeAddr(t), filepath.Join(dir, "none-ca.pem")))
	shortTok := write("short-token", "# tokens\nadmin x\n")
	roleOnly := write("role-only", "read\n")
	tests := []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"help", []string{"-h"}, 0, "Usage of fastcnpd"},
		{"unknown flag", []string{"--bogus"}, 2, "flag provided but not defined: -bogus"},
		{"malformed duration", []string{"--audit-interval", "soon"}, 2, "invalid value \"soon\" for flag -audit-interval"},
		{"negative interval", []string{"--counter-interval", "-1s"}, 2, "must not be negative"},
		{"log level", []string{"--log-level", "loud"}, 2, "--log-level"},
		{"log format", []string{"--log-format", "xml"}, 2, "--log-format \"xml\""},
		{"argument", []string{"extra"}, 2, "unexpected argument \"extra\""},
		{"missing config file", []string{"--config", filepath.Join(dir, "none.yaml")}, 2, "--config: open"},
		{"invalid config", []string{"--config", cfg("bad.yaml", state, "{insecure: true}", "    ports: [{port: 255}]\n")}, 1,
			"bad.yaml:9: switches[0].ports[0].port: 255 is the CPU port"},
		{"second document", []string{"--config", cfg("two.yaml", state, "{insecure: true}", "---\nswitches: []\n")}, 1,
			"two.yaml:9: (document): a second YAML document starts here"},
		{"state directory not writable", []string{"--config", cfg("ro.yaml", filepath.Join(testfs.ReadOnlyDir(t), "state.json"), "{insecure: true}", "")}, 1,
			"is not writable"},
		{"1-character token", []string{"--config", cfg("tok.yaml", state, "{token_file: "+shortTok+"}", "")}, 1,
			"line 2: admin token of 1 characters: at least 16 required"},
		{"switch CA file missing", []string{"--config", badTLS}, 1, "switch s1: tls: open " + filepath.Join(dir, "none-ca.pem")},
		{"role without token", []string{"--config", cfg("role.yaml", state, "{token_file: "+roleOnly+"}", "")}, 1,
			"line 1: want \"admin <token>\" or \"read <token>\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Each case fails at start; the deadline only guards against a
			// fastcnpd that started instead (it would then exit 0).
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var stderr syncBuffer
			if code := runMain(ctx, tt.args, &stderr); code != tt.code || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, want %d with %q in:\n%s", code, tt.code, tt.want, stderr.String())
			}
		})
	}
}
