// Package testpki is a certificate authority for tests: it writes a CA
// certificate and certificates it signs as PEM files in a temporary
// directory, for servers and clients loaded the way the commands load
// theirs (internal/tlsfiles).
package testpki

import (
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
)

// CA is a test certificate authority.
type CA struct {
	// File is the CA certificate (PEM), what peers are given to trust it.
	File string
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// New makes a CA named name (its subject common name), valid from an hour
// ago to an hour from now, with its files in a temporary directory of t.
func New(t testing.TB, name string) *CA {
	t.Helper()
	ca := &CA{dir: t.TempDir()}
	ca.cert, ca.key, ca.File, _ = ca.issue(t, name, true)
	return ca
}

// Issue makes a certificate for cn signed by the CA, for servers and
// clients alike: its names are cn (subject common name and DNS name) and
// 127.0.0.1. It returns the certificate and key files (PEM).
func (ca *CA) Issue(t testing.TB, cn string) (certFile, keyFile string) {
	t.Helper()
	_, _, certFile, keyFile = ca.issue(t, cn, false)
	return certFile, keyFile
}

func (ca *CA) issue(t testing.TB, cn string, isCA bool) (*x509.Certificate, *ecdsa.PrivateKey, string, string) {
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
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: isCA,
		BasicConstraintsValid: true, DNSNames: []string{cn}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign}
	parent, signer := tmpl, key
	if !isCA {
		parent, signer = ca.cert, ca.key
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
	cf, kf := filepath.Join(ca.dir, cn+".pem"), filepath.Join(ca.dir, cn+"-key.pem")
	if err := os.WriteFile(cf, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kf, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), 0o600); err != nil {
		t.Fatal(err)
	}
	return c, key, cf, kf
}

// Certificate issues a certificate for cn (as Issue) and returns it loaded,
// for a tls.Config built by hand.
func (ca *CA) Certificate(t testing.TB, cn string) tls.Certificate {
	t.Helper()
	cf, kf := ca.Issue(t, cn)
	c, err := tls.LoadX509KeyPair(cf, kf)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Pool returns a pool holding the CA's certificate.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}
