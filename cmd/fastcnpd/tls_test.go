package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/controller/ctl"
	"github.com/fastcnp/fastcnp/internal/testpki"
	"github.com/fastcnp/fastcnp/internal/tlsfiles"
	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/softswitch/p4rtserver"
)

// mtlsSwitch serves an in-process switch with mutual TLS as fastcnp-switch
// does with --ca-cert-file, --server-cert-file and --server-key-file.
func mtlsSwitch(t *testing.T, ca *testpki.CA, name string, device uint64) (*p4rtserver.LocalDataPlane, string) {
	t.Helper()
	cert, key := ca.Issue(t, name)
	tc, err := tlsfiles.Server(cert, key, ca.File)
	if err != nil {
		t.Fatal(err)
	}
	return startSwitch(t, device, tc)
}

// TestTLSSwitches runs fastcnpd against two switches that require client
// certificates: with a certificate of the switches' CA it pushes the
// pipeline and the config to leaf1 and installs a threshold set with
// fastcnpctl; leaf2 is configured with a certificate of another CA, is
// never connected, gets nothing written, and the change for it is saved
// but not installed (exit 8).
func TestTLSSwitches(t *testing.T) {
	ca, other := testpki.New(t, "fabric-ca"), testpki.New(t, "other-ca")
	dp1, addr1 := mtlsSwitch(t, ca, "leaf1", 1)
	dp2, addr2 := mtlsSwitch(t, ca, "leaf2", 2)
	cert, key := ca.Issue(t, "fastcnpd")
	strCert, strKey := other.Issue(t, "fastcnpd")

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
    tls: {ca: %s, cert: %s, key: %s, server_name: leaf1}
    ports: [{port: 3, mac: "02:00:00:00:01:03"}]
  - name: leaf2
    address: %s
    device_id: 2
    tls: {ca: %s, cert: %s, key: %s, server_name: leaf2}
    ports: [{port: 3, mac: "02:00:00:00:02:03"}]
`, api, filepath.Join(dir, "state.json"), metrics, addr1, ca.File, cert, key, addr2, ca.File, strCert, strKey)), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"--config", cfg, "--log-level", "info"}, logs) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()

	setQth := func(sw string) int {
		return ctl.Run(context.Background(), []string{"--addr", api, "threshold", "set", "--switch", sw,
			"--port", "3", "--qth", "120KiB"}, io.Discard, io.Discard)
	}
	deadline := time.Now().Add(60 * time.Second) // guards against a hang only
	code := setQth("leaf1")
	for ; code != ctl.ExitOK && time.Now().Before(deadline); code = setQth("leaf1") {
		time.Sleep(50 * time.Millisecond)
	}
	if code != ctl.ExitOK {
		t.Fatalf("threshold set on leaf1: exit %d; logs:\n%s", code, logs.String())
	}
	count := func(dp *p4rtserver.LocalDataPlane, table uint32) int {
		var n int
		err := dp.Exec(context.Background(), func(p *pipeline.Pipeline) error {
			var err error
			n, err = p.EntryCount(table)
			return err
		})
		if err != nil {
			return -1 // no pipeline committed
		}
		return n
	}
	if n := count(dp1, p4src.TablePortConfig); n != 1 {
		t.Errorf("leaf1 has %d port_config entries, want 1", n)
	}
	if code := setQth("leaf2"); code != ctl.ExitNotInstalled {
		t.Errorf("threshold set on leaf2: exit %d, want %d (not installed)", code, ctl.ExitNotInstalled)
	}
	if n := count(dp2, p4src.TablePortConfig); n > 0 {
		t.Errorf("leaf2 has %d port_config entries: a refused controller wrote", n)
	}
	resp, err := http.Get("http://" + metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`fastcnp_switch_primary{switch="leaf1"} 1`, `fastcnp_switch_connected{switch="leaf2"} 0`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
