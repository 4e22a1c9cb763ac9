// Package tlsfiles builds TLS configurations from PEM files, the one way
// every server and client of the project loads its certificates: the
// software switch's P4Runtime server, fastcnpd's API and its P4Runtime
// clients, fastcnpctl. Files are read through readlimit (MaxFileSize), and
// every configuration requires TLS 1.2 or later.
package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/fastcnp/fastcnp/internal/readlimit"
)

// MaxFileSize bounds every certificate, key and CA file: 1 MiB (a chain of
// a few certificates is a few kB).
const MaxFileSize = 1 << 20

// Server returns the TLS configuration of a server presenting certFile and
// keyFile. With clientCAFile, clients must present a certificate signed by
// one of its CAs (mutual TLS); the handshake fails otherwise.
func Server(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	cert, err := KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCAFile == "" {
		return tc, nil
	}
	pool, err := CertPool(clientCAFile)
	if err != nil {
		return nil, err
	}
	tc.ClientCAs, tc.ClientAuth = pool, tls.RequireAndVerifyClientCert
	return tc, nil
}

// Client returns the TLS configuration of a client that verifies the server
// with caFile (empty: the system's roots) and, with certFile and keyFile
// (both or neither), presents a client certificate. serverName, when not
// empty, is the name checked in the server's certificate instead of the
// dialled host.
func Client(caFile, certFile, keyFile, serverName string) (*tls.Config, error) {
	tc := &tls.Config{ServerName: serverName, MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pool, err := CertPool(caFile)
		if err != nil {
			return nil, err
		}
		tc.RootCAs = pool
	}
	if certFile != "" || keyFile != "" {
		cert, err := KeyPair(certFile, keyFile)
		if err != nil {
			return nil, err
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// KeyPair loads a certificate (chain) and its private key.
func KeyPair(certFile, keyFile string) (tls.Certificate, error) {
	if certFile == "" || keyFile == "" {
		return tls.Certificate{}, errors.New("a certificate needs both its certificate and its key file")
	}
	certPEM, err := readlimit.File(certFile, "certificate file", MaxFileSize)
	if err != nil {
		return tls.Certificate{}, err
	}
	keyPEM, err := readlimit.File(keyFile, "key file", MaxFileSize)
	if err != nil {
		return tls.Certificate{}, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certificate %s and key %s: %w", certFile, keyFile, err)
	}
	return cert, nil
}

// CertPool loads the CA certificates of caFile; a file without any is an
// error.
func CertPool(caFile string) (*x509.CertPool, error) {
	pem, err := readlimit.File(caFile, "CA file", MaxFileSize)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", caFile)
	}
	return pool, nil
}

// RequiresClientCert reports whether a server configuration makes every
// client present a verified certificate.
func RequiresClientCert(tc *tls.Config) bool {
	return tc != nil && tc.ClientAuth == tls.RequireAndVerifyClientCert && tc.ClientCAs != nil
}
