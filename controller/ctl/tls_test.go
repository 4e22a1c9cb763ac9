package ctl

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fastcnp/fastcnp/internal/testpki"
	"github.com/fastcnp/fastcnp/p4src"
)

// TestMTLS runs fastcnpctl against fastcnpd serving its API with mTLS:
// the certificate named in admin_names changes a threshold (visible in the
// switch's table), another certificate of the CA only reads, and a missing
// or untrusted certificate is an authentication failure (exit 6), not
// "unreachable".
func TestMTLS(t *testing.T) {
	ca, other := testpki.New(t, "fastcnp-ca"), testpki.New(t, "other-ca")
	srvCert, srvKey := ca.Issue(t, "fastcnpd")
	opCert, opKey := ca.Issue(t, "operator")
	viewCert, viewKey := ca.Issue(t, "viewer")
	strCert, strKey := other.Issue(t, "operator")
	e := startEnvAuth(t, fmt.Sprintf("{mtls: {ca: %s, cert: %s, key: %s, admin_names: [operator]}}", ca.File, srvCert, srvKey))
	flags := func(cert, key string) []string {
		a := []string{"--ca", ca.File, "--server-name", "fastcnpd"}
		if cert != "" {
			a = append(a, "--cert", cert, "--key", key)
		}
		return a
	}
	set := []string{"threshold", "set", "--switch", "s1", "--port", "3", "--qth", "64KiB"}
	get := []string{"threshold", "get", "--switch", "s1", "--port", "3"}
	tests := []qthCase{
		{"read-only certificate reads", append(flags(viewCert, viewKey), get...), ExitOK, "", 400000},
		{"read-only certificate cannot set", append(flags(viewCert, viewKey), set...), ExitAuth, "PermissionDenied", 400000},
		{"no client certificate", append(flags("", ""), get...), ExitAuth, "TLS handshake", 400000},
		{"certificate of another CA", append(flags(strCert, strKey), set...), ExitAuth, "TLS handshake", 400000},
		{"server not trusted", append([]string{"--ca", other.File, "--server-name", "fastcnpd", "--cert", opCert, "--key", opKey}, get...),
			ExitAuth, "x509", 400000},
		{"admin certificate sets", append(flags(opCert, opKey), set...), ExitOK, "", 64 * 1024},
	}
	e.runQthCases(t, tests, e.runNoToken)
}

// TestTokenOverTLS runs fastcnpctl against fastcnpd serving token
// authentication over TLS (api.auth.tls): with --ca and a token it works
// as over plaintext; a client that trusts another CA, or speaks plaintext
// to the TLS server, fails with exit 6 and says why.
func TestTokenOverTLS(t *testing.T) {
	ca, other := testpki.New(t, "fastcnp-ca"), testpki.New(t, "other-ca")
	srvCert, srvKey := ca.Issue(t, "fastcnpd")
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("admin "+adminToken+"\nread "+readToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := startEnvAuth(t, fmt.Sprintf("{token_file: %s, tls: {cert: %s, key: %s}}", tokens, srvCert, srvKey))
	set := []string{"threshold", "set", "--switch", "s1", "--port", "3", "--qth", "64KiB"}
	get := []string{"threshold", "get", "--switch", "s1", "--port", "3"}
	trust := func(caFile string, args ...string) []string {
		return append([]string{"--ca", caFile, "--server-name", "fastcnpd"}, args...)
	}
	tests := []qthCase{
		{"read token reads", trust(ca.File, append([]string{"--token", readToken}, get...)...), ExitOK, "", 400000},
		{"read token cannot set", trust(ca.File, append([]string{"--token", readToken}, set...)...), ExitAuth, "needs an admin token", 400000},
		{"no token", trust(ca.File, append([]string{"--token", ""}, get...)...), ExitAuth, "missing bearer token", 400000},
		{"server not trusted", trust(other.File, get...), ExitAuth, "x509", 400000},
		{"plaintext to a TLS server", get, ExitAuth, "serves TLS", 400000},
		{"admin token sets", trust(ca.File, set...), ExitOK, "", 64 * 1024},
	}
	e.runQthCases(t, tests, e.run)
}

// TestProbeTLS: the probe behind exit code 6 for a refused TLS connection
// tells a refused client certificate from an accepted one and from nothing
// listening, against fastcnpd's mTLS API server.
func TestProbeTLS(t *testing.T) {
	ca, other := testpki.New(t, "fastcnp-ca"), testpki.New(t, "other-ca")
	srvCert, srvKey := ca.Issue(t, "fastcnpd")
	e := startEnvAuth(t, fmt.Sprintf("{mtls: {ca: %s, cert: %s, key: %s}}", ca.File, srvCert, srvKey))
	pool := ca.Pool()
	keyPair := func(p *testpki.CA, cn string) []tls.Certificate {
		return []tls.Certificate{p.Certificate(t, cn)}
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := lis.Addr().String()
	lis.Close()
	tests := []struct {
		name    string
		addr    string
		certs   []tls.Certificate
		refused bool
	}{
		{"accepted", e.addr, keyPair(ca, "operator"), false},
		{"certificate of another CA", e.addr, keyPair(other, "operator"), true},
		{"no certificate", e.addr, nil, true},
		{"nothing listening", dead, keyPair(ca, "operator"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := probeTLS(tt.addr, &tls.Config{RootCAs: pool, ServerName: "fastcnpd", Certificates: tt.certs,
				MinVersion: tls.VersionTLS12})
			if (err != nil) != tt.refused {
				t.Errorf("probe: %v, want refused %v", err, tt.refused)
			}
		})
	}
}

// TestNotInstalled: a change while its switch is down is saved and
// reported with exit 8 ("not installed"); fastcnpd answers with the saved
// value. (That it is installed when the switch is back is tested in
// controller/daemon.)
func TestNotInstalled(t *testing.T) {
	e := startEnv(t)
	e.stop["s1"]()
	code, _, stderr := e.run("threshold", "set", "--switch", "s1", "--port", "3", "--qth", "64KiB")
	if code != ExitNotInstalled || !strings.Contains(stderr, "not installed") {
		t.Fatalf("exit %d stderr %q, want %d and \"not installed\"", code, stderr, ExitNotInstalled)
	}
	// Saved: fastcnpd answers with the new value.
	code, out, _ := e.run("threshold", "get", "--switch", "s1", "--port", "3")
	if code != ExitOK || !strings.Contains(out, "64KiB") {
		t.Errorf("get after a saved change: %d %q", code, out)
	}
	// The other switch is unaffected.
	if n := e.count("s2", p4src.TableIncRoute); n != 256 {
		t.Errorf("s2 has %d INC routes", n)
	}
}
