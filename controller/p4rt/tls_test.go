package p4rt_test

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/controller/p4rt/internal/p4rttest"
	"github.com/fastcnp/fastcnp/internal/testpki"
	"github.com/fastcnp/fastcnp/internal/tlsfiles"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// startTLSServer serves a test device over TLS with a certificate of ca
// (named "switch" and 127.0.0.1), requiring client certificates of ca when
// requireClient.
func startTLSServer(t *testing.T, ca *testpki.CA, requireClient bool) *p4rttest.Server {
	t.Helper()
	cert, key := ca.Issue(t, "switch")
	clientCA := ""
	if requireClient {
		clientCA = ca.File
	}
	cfg, err := tlsfiles.Server(cert, key, clientCA)
	if err != nil {
		t.Fatal(err)
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
	p := testpki.New(t, "test CA")
	ca := p.File
	cert, key := p.Issue(t, "controller")

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
		c := dial(t, s.Addr(), p4rt.WithTLS(&tls.Config{RootCAs: p.Pool(), Certificates: []tls.Certificate{p.Certificate(t, "controller")}, MinVersion: tls.VersionTLS12}))
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
