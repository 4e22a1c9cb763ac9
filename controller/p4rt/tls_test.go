package p4rt_test

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
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/controller/p4rt/internal/p4rttest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

type pki struct {
	caPEM                []byte
	pool                 *x509.CertPool
	server, client       tls.Certificate
	clientPEM, clientKey []byte
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	p := &pki{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), pool: x509.NewCertPool()}
	p.pool.AddCert(caCert)
	leaf := func(serial int64, usage x509.ExtKeyUsage) (tls.Certificate, []byte, []byte) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "switch"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"switch"}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, _ := x509.MarshalECPrivateKey(k)
		cp := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		kp := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
		c, err := tls.X509KeyPair(cp, kp)
		if err != nil {
			t.Fatal(err)
		}
		return c, cp, kp
	}
	p.server, _, _ = leaf(2, x509.ExtKeyUsageServerAuth)
	p.client, p.clientPEM, p.clientKey = leaf(3, x509.ExtKeyUsageClientAuth)
	return p
}

func startTLSServer(t *testing.T, p *pki, requireClient bool) *p4rttest.Server {
	cfg := &tls.Config{Certificates: []tls.Certificate{p.server}, MinVersion: tls.VersionTLS12}
	if requireClient {
		cfg.ClientCAs, cfg.ClientAuth = p.pool, tls.RequireAndVerifyClientCert
	}
	s, err := p4rttest.StartWith("127.0.0.1:0", testDevice, grpc.Creds(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

func TestTLS(t *testing.T) {
	checkLeaks(t)
	p := newPKI(t)
	dir := t.TempDir()
	ca, cert, key := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "c.pem"), filepath.Join(dir, "c.key")
	for f, b := range map[string][]byte{ca: p.caPEM, cert: p.clientPEM, key: p.clientKey} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("server TLS", func(t *testing.T) {
		s := startTLSServer(t, p, false)
		c := dial(t, s.Addr(), p4rt.WithTLSFiles(ca, "", "", ""))
		if !c.IsPrimary() {
			t.Fatal("not primary over TLS")
		}
	})
	t.Run("mutual TLS from files", func(t *testing.T) {
		s := startTLSServer(t, p, true)
		c := dial(t, s.Addr(), p4rt.WithTLSFiles(ca, cert, key, "switch"))
		if !c.IsPrimary() {
			t.Fatal("not primary over mTLS")
		}
	})
	t.Run("mutual TLS from config", func(t *testing.T) {
		s := startTLSServer(t, p, true)
		c := dial(t, s.Addr(), p4rt.WithTLS(&tls.Config{RootCAs: p.pool, Certificates: []tls.Certificate{p.client}, MinVersion: tls.VersionTLS12}))
		if !c.IsPrimary() {
			t.Fatal("not primary over mTLS")
		}
	})
	t.Run("no client certificate refused", func(t *testing.T) {
		s := startTLSServer(t, p, true)
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		if c, err := p4rt.Dial(ctx, s.Addr(), testDevice, p4rt.WithTLSFiles(ca, "", "", ""), p4rt.WithBackoff(fastBackoff)); err == nil {
			c.Close()
			t.Fatal("mTLS server accepted a client without certificate")
		}
	})
	t.Run("plaintext to TLS server refused", func(t *testing.T) {
		s := startTLSServer(t, p, false)
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		if c, err := p4rt.Dial(ctx, s.Addr(), testDevice, p4rt.WithBackoff(fastBackoff)); err == nil {
			c.Close()
			t.Fatal("plaintext client connected to a TLS server")
		}
	})
}
