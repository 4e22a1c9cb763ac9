package tlsfiles_test

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fastcnp/fastcnp/internal/testpki"
	"github.com/fastcnp/fastcnp/internal/tlsfiles"
)

// TestConfigs: the server and client configurations built from files, and
// the errors of missing, mismatched or empty files.
func TestConfigs(t *testing.T) {
	ca := testpki.New(t, "ca")
	cert, key := ca.Issue(t, "server")
	otherCert, _ := ca.Issue(t, "other")
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")

	srv, err := tlsfiles.Server(cert, key, "")
	if err != nil || len(srv.Certificates) != 1 || srv.MinVersion != tls.VersionTLS12 || tlsfiles.RequiresClientCert(srv) {
		t.Fatalf("server: %+v, %v", srv, err)
	}
	mtls, err := tlsfiles.Server(cert, key, ca.File)
	if err != nil || !tlsfiles.RequiresClientCert(mtls) || mtls.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Fatalf("mutual TLS server: %+v, %v", mtls, err)
	}
	cli, err := tlsfiles.Client(ca.File, cert, key, "leaf1")
	if err != nil || cli.RootCAs == nil || len(cli.Certificates) != 1 || cli.ServerName != "leaf1" || cli.MinVersion != tls.VersionTLS12 {
		t.Fatalf("client: %+v, %v", cli, err)
	}
	tests := []struct {
		name string
		fn   func() error
		want string
	}{
		{"server key missing", func() error { _, err := tlsfiles.Server(cert, missing, ""); return err }, "missing.pem"},
		{"certificate and key of two certificates", func() error { _, err := tlsfiles.Server(otherCert, key, ""); return err }, "private key does not match"},
		{"client CA without a certificate", func() error { _, err := tlsfiles.Server(cert, key, empty); return err }, "no certificate in"},
		{"client certificate without key", func() error { _, err := tlsfiles.Client(ca.File, cert, "", ""); return err }, "both"},
		{"client CA missing", func() error { _, err := tlsfiles.Client(missing, "", "", ""); return err }, "missing.pem"},
		{"CA file that never ends", func() error { _, err := tlsfiles.Client("/dev/zero", "", "", ""); return err }, "larger than the limit of 1 MiB"},
	}
	for _, tt := range tests {
		if err := tt.fn(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}
