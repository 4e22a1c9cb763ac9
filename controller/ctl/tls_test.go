package ctl

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/p4src"
)

// pki is a test CA that issues certificates as PEM files in dir.
type pki struct {
	t    *testing.T
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // the CA certificate
}

func newPKI(t *testing.T, name string) *pki {
	t.Helper()
	p := &pki{t: t, dir: t.TempDir()}
	p.cert, p.key, p.file, _ = p.issue(name, true)
	return p
}

// issue makes a certificate for cn (127.0.0.1 and cn as names) signed by
// the CA (self-signed when ca) and returns it and its files.
func (p *pki) issue(cn string, ca bool) (*x509.Certificate, *ecdsa.PrivateKey, string, string) {
	t := p.t
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: ca,
		BasicConstraintsValid: true, DNSNames: []string{cn}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign}
	parent, signer := tmpl, key
	if !ca {
		parent, signer = p.cert, p.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cf, kf := filepath.Join(p.dir, cn+".pem"), filepath.Join(p.dir, cn+"-key.pem")
	if err := os.WriteFile(cf, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kf, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), 0o600); err != nil {
		t.Fatal(err)
	}
	return c, key, cf, kf
}

// TestMTLS runs fastcnpctl against fastcnpd serving its API with mTLS:
// the certificate named in admin_names changes a threshold (visible in the
// switch's table), another certificate of the CA only reads, and a missing
// or untrusted certificate is an authentication failure (exit 6), not
// "unreachable".
func TestMTLS(t *testing.T) {
	ca, other := newPKI(t, "fastcnp-ca"), newPKI(t, "other-ca")
	_, _, srvCert, srvKey := ca.issue("fastcnpd", false)
	_, _, opCert, opKey := ca.issue("operator", false)
	_, _, viewCert, viewKey := ca.issue("viewer", false)
	_, _, strCert, strKey := other.issue("operator", false)
	e := startEnvAuth(t, fmt.Sprintf("{mtls: {ca: %s, cert: %s, key: %s, admin_names: [operator]}}", ca.file, srvCert, srvKey))
	flags := func(cert, key string) []string {
		a := []string{"--ca", ca.file, "--server-name", "fastcnpd"}
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
		{"server not trusted", append([]string{"--ca", other.file, "--server-name", "fastcnpd", "--cert", opCert, "--key", opKey}, get...),
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
	ca, other := newPKI(t, "fastcnp-ca"), newPKI(t, "other-ca")
	_, _, srvCert, srvKey := ca.issue("fastcnpd", false)
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
		{"read token reads", trust(ca.file, append([]string{"--token", readToken}, get...)...), ExitOK, "", 400000},
		{"read token cannot set", trust(ca.file, append([]string{"--token", readToken}, set...)...), ExitAuth, "needs an admin token", 400000},
		{"no token", trust(ca.file, append([]string{"--token", ""}, get...)...), ExitAuth, "missing bearer token", 400000},
		{"server not trusted", trust(other.file, get...), ExitAuth, "x509", 400000},
		{"plaintext to a TLS server", get, ExitAuth, "serves TLS", 400000},
		{"admin token sets", trust(ca.file, set...), ExitOK, "", 64 * 1024},
	}
	e.runQthCases(t, tests, e.run)
}

// TestProbeTLS: the probe behind exit code 6 for a refused TLS connection
// tells a refused client certificate from an accepted one and from nothing
// listening, against fastcnpd's mTLS API server.
func TestProbeTLS(t *testing.T) {
	ca, other := newPKI(t, "fastcnp-ca"), newPKI(t, "other-ca")
	_, _, srvCert, srvKey := ca.issue("fastcnpd", false)
	e := startEnvAuth(t, fmt.Sprintf("{mtls: {ca: %s, cert: %s, key: %s}}", ca.file, srvCert, srvKey))
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	keyPair := func(p *pki, cn string) []tls.Certificate {
		c, k, _, _ := p.issue(cn, false)
		return []tls.Certificate{{Certificate: [][]byte{c.Raw}, PrivateKey: k}}
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
