package daemon

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/fastcnp/fastcnp/controller/config"
	fastcnpv1 "github.com/fastcnp/fastcnp/proto/fastcnp/v1"
)

func TestParseTokens(t *testing.T) {
	tests := []struct {
		in      string
		roles   []Role
		wantErr string
	}{
		{"tok\n", []Role{RoleAdmin}, ""},
		{"# c\n\nadmin a\nread r\n", []Role{RoleAdmin, RoleRead}, ""},
		{"", nil, "no token"},
		{"owner x\n", nil, "line 1"},
		{"a b c\n", nil, "line 1"},
	}
	for _, tt := range tests {
		got, err := ParseTokens(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || len(got) != len(tt.roles) {
			t.Fatalf("%q: %v %v", tt.in, got, err)
		}
		for i := range got {
			if got[i].role != tt.roles[i] {
				t.Errorf("%q: token %d role %v", tt.in, i, got[i].role)
			}
		}
	}
}

type certKey struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	der  []byte
}

func makeCert(t *testing.T, cn string, parent *certKey, isCA bool) *certKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: isCA,
		BasicConstraintsValid: true, DNSNames: []string{cn}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign}
	signer, parentCert := key, tmpl
	if parent != nil {
		signer, parentCert = parent.key, parent.cert
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parentCert, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &certKey{cert: c, key: key, der: der}
}

func writePEM(t *testing.T, dir, name string, ck *certKey) (string, string) {
	t.Helper()
	cf, kf := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	if err := os.WriteFile(cf, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ck.der}), 0o600); err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(ck.key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kf, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cf, kf
}

// TestMTLS serves the API with mTLS: a client with a certificate signed by
// the CA is admitted, one without is refused.
func TestMTLS(t *testing.T) {
	dir := t.TempDir()
	ca := makeCert(t, "fastcnp-ca", nil, true)
	srvCert := makeCert(t, "fastcnpd", ca, false)
	cliCert := makeCert(t, "operator", ca, false)
	caFile, _ := writePEM(t, dir, "ca", ca)
	sc, sk := writePEM(t, dir, "server", srvCert)

	s1, s2, state := twoSwitches(t)
	d, err := New(Options{Config: testConfig(t, state, s1, s2), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	gs, err := NewGRPCServer(d, config.Auth{MTLS: &config.TLSFiles{CA: caFile, Cert: sc, Key: sk}})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeAPI(ctx, gs, lis) }()
	defer func() { cancel(); <-done }()

	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	for _, tt := range []struct {
		name   string
		certs  []tls.Certificate
		wantOK bool
	}{
		{"client certificate", []tls.Certificate{{Certificate: [][]byte{cliCert.der}, PrivateKey: cliCert.key}}, true},
		{"no certificate", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			creds := credentials.NewTLS(&tls.Config{RootCAs: pool, ServerName: "fastcnpd", Certificates: tt.certs,
				MinVersion: tls.VersionTLS12})
			conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(creds))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer rcancel()
			r, err := fastcnpv1.NewFastcnpClient(conn).ListSwitches(rctx, &fastcnpv1.ListSwitchesRequest{})
			if tt.wantOK {
				if err != nil || len(r.GetSwitches()) != 2 {
					t.Fatalf("ListSwitches: %v %v", r, err)
				}
				return
			}
			if err == nil || status.Code(err) == codes.OK {
				t.Fatal("a client without certificate was admitted")
			}
		})
	}
}

func TestStateFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "state.json")
	fs, err := loadStateFile(path)
	if err != nil || len(fs.Connections) != 0 {
		t.Fatalf("missing file: %v %v", fs, err)
	}
	q := uint64(5)
	fs.Ports = map[string]map[uint16]PortOverride{"s1": {3: {QthBytes: &q}}}
	fs.Connections = []fileConnection{{SenderIP: "10.0.0.1", UDPSrcPort: 1, ReceiverQPN: 2, Index: 3}}
	if err := saveStateFile(path, fs); err != nil {
		t.Fatal(err)
	}
	back, err := loadStateFile(path)
	if err != nil || len(back.Connections) != 1 || *back.Ports["s1"][3].QthBytes != 5 {
		t.Fatalf("round trip: %+v %v", back, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
	for _, tt := range []struct{ content, want string }{
		{"{", "unexpected end"},
		{`{"version": 9}`, "version 9"},
	} {
		if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := loadStateFile(path); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.content, err, tt.want)
		}
	}
}
