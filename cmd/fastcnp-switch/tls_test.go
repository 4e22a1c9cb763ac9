package main

import (
	"context"
	"crypto/tls"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/internal/netns"
	"github.com/fastcnp/fastcnp/internal/netns/netnstest"
	"github.com/fastcnp/fastcnp/internal/testpki"
	"github.com/fastcnp/fastcnp/p4src"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
)

// TestParseTLSArgs: Stratum's three files (either spelling) give mutual
// TLS, the certificate and key alone TLS, anything incomplete or unreadable
// is refused.
func TestParseTLSArgs(t *testing.T) {
	ca := testpki.New(t, "fabric-ca")
	cert, key := ca.Issue(t, "fastcnp-switch")
	missing := filepath.Join(t.TempDir(), "missing.pem")
	base := []string{"--device-id", "1", "-i", "1@veth1"}
	tests := []struct {
		name   string
		args   []string
		err    string
		client tls.ClientAuthType // with err == "": want TLS with this client auth
		plain  bool
	}{
		{name: "plaintext by default", args: nil, plain: true},
		{name: "mutual TLS", args: []string{"--ca-cert-file", ca.File, "--server-cert-file", cert, "--server-key-file", key},
			client: tls.RequireAndVerifyClientCert},
		{name: "Stratum spelling", args: []string{"--ca_cert_file", ca.File, "--server_cert_file", cert, "--server_key_file", key},
			client: tls.RequireAndVerifyClientCert},
		{name: "TLS without client certificates", args: []string{"--server-cert-file", cert, "--server-key-file", key},
			client: tls.NoClientCert},
		{name: "certificate without key", args: []string{"--server-cert-file", cert}, err: "go together"},
		{name: "CA alone", args: []string{"--ca-cert-file", ca.File}, err: "needs --server-cert-file"},
		{name: "unreadable CA", args: []string{"--ca-cert-file", missing, "--server-cert-file", cert, "--server-key-file", key},
			err: "missing.pem"},
		{name: "key that is no key", args: []string{"--server-cert-file", cert, "--server-key-file", ca.File}, err: "P4Runtime TLS"},
		{name: "CA file without a certificate", args: []string{"--ca-cert-file", key, "--server-cert-file", cert, "--server-key-file", key},
			err: "no certificate in"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseArgs(append(append([]string{}, base...), tt.args...), io.Discard)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc := o.cfg.GRPCTLS
			switch {
			case tt.plain && tc != nil:
				t.Errorf("TLS config %+v, want plaintext", tc)
			case !tt.plain && (tc == nil || tc.ClientAuth != tt.client || len(tc.Certificates) != 1 || tc.MinVersion < tls.VersionTLS12):
				t.Errorf("TLS config %+v, want client auth %v, one certificate, TLS 1.2+", tc, tt.client)
			}
		})
	}
}

// TestBinaryTLS runs the command in a network namespace with mutual TLS on
// every address (0.0.0.0): clients without a certificate of the CA cannot
// arbitrate or write, one with a certificate of the CA (the P4Runtime
// client fastcnpd uses, configured from files as fastcnpd configures it)
// pushes the pipeline and writes; the log says mtls and warns of nothing.
// Then, served in plaintext on every address, the switch warns loudly.
func TestBinaryTLS(t *testing.T) {
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tb := netnstest.New(t)
	swNS, err := tb.Namespace(ctx, "sw")
	if err != nil {
		t.Fatal(err)
	}
	h1, err := tb.Namespace(ctx, "h1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Veth(ctx, netns.LinkConfig{NS: h1, Name: "eth0", DisableIPv6: true},
		netns.LinkConfig{NS: swNS, Name: "p1", DisableIPv6: true}); err != nil {
		t.Fatal(err)
	}
	ca, other := testpki.New(t, "fabric-ca"), testpki.New(t, "other-ca")
	srvCert, srvKey := ca.Issue(t, "leaf1")
	ctlCert, ctlKey := ca.Issue(t, "fastcnpd")
	strCert, strKey := other.Issue(t, "fastcnpd")
	const addr = "127.0.0.1:9559" // dialled inside the namespace; the switch listens on 0.0.0.0
	dialNS := p4rt.WithDialOptions(grpc.WithContextDialer(nsDialer(swNS)))
	info, err := p4src.P4Info()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("mutual TLS", func(t *testing.T) {
		logs := startSwitch(ctx, t, bin, swNS, "--ca-cert-file", ca.File, "--server-cert-file", srvCert, "--server-key-file", srvKey)
		rogues := []struct {
			name string
			opts []p4rt.Option
		}{
			{"plaintext", nil},
			{"TLS without a client certificate", []p4rt.Option{p4rt.WithTLSFiles(ca.File, "", "", "leaf1")}},
			{"certificate of another CA", []p4rt.Option{p4rt.WithTLSFiles(ca.File, strCert, strKey, "leaf1")}},
		}
		for _, r := range rogues {
			dctx, dcancel := context.WithTimeout(ctx, 3*time.Second)
			c, err := p4rt.Dial(dctx, addr, 9, append(r.opts, p4rt.WithElectionID(p4rt.Uint128{Low: 100}), dialNS)...)
			dcancel()
			if err == nil {
				c.Close()
				t.Errorf("%s: arbitrated", r.name)
			}
		}
		c, err := p4rt.Dial(ctx, addr, 9, p4rt.WithElectionID(p4rt.Uint128{Low: 1}),
			p4rt.WithTLSFiles(ca.File, ctlCert, ctlKey, "leaf1"), dialNS)
		if err != nil {
			t.Fatalf("dial with a certificate of the CA: %v\n%s", err, logs.String())
		}
		defer c.Close()
		if !c.IsPrimary() {
			t.Errorf("not primary with election ID 1: a refused client arbitrated with 100")
		}
		if err := c.SetPipeline(ctx, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, info, nil, 1); err != nil {
			t.Fatalf("pipeline: %v", err)
		}
		e, err := c.Info().TableEntry("ipv4_route").Match(p4rt.LPM("dst_addr", []byte{10, 0, 0, 0}, 8)).
			Action("set_nexthop", p4rt.P("port", 1), p4rt.P("src_mac", []byte{2, 0, 0, 0, 0, 1}), p4rt.P("dst_mac", []byte{2, 0, 0, 0, 0, 2})).Entity()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Write(ctx, p4rt.Insert(e)); err != nil {
			t.Fatalf("write: %v", err)
		}
		if !strings.Contains(logs.String(), "security=mtls") || strings.Contains(logs.String(), "level=warning") {
			t.Errorf("log of a mutual-TLS switch:\n%s", logs.String())
		}
	})
	t.Run("plaintext on every address warns", func(t *testing.T) {
		logs := startSwitch(ctx, t, bin, swNS)
		if !strings.Contains(logs.String(), "level=warning") || !strings.Contains(logs.String(), "PLAINTEXT") {
			t.Errorf("no warning for plaintext on 0.0.0.0:\n%s", logs.String())
		}
	})
}

// startSwitch runs the binary in ns on port p1 with P4Runtime on
// 0.0.0.0:9559 and the extra arguments, and returns its log once it serves
// P4Runtime; the switch is stopped when the test ends.
func startSwitch(ctx context.Context, t *testing.T, bin string, ns *netns.NS, extra ...string) *syncBuffer {
	t.Helper()
	ip, err := exec.LookPath("ip")
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"netns", "exec", ns.Name(), bin, "--device-id", "9", "-i", "1@p1",
		"--grpc-server-addr", "0.0.0.0:9559", "--log-level", "info"}, extra...)
	cmd := exec.CommandContext(ctx, ip, args...)
	logs := &syncBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	for !strings.Contains(logs.String(), "serving P4Runtime") {
		select {
		case <-exited:
			t.Fatalf("switch exited:\n%s", logs.String())
		case <-ctx.Done():
			t.Fatalf("switch not serving:\n%s", logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	time.Sleep(50 * time.Millisecond) // the warning follows the "serving" line
	return logs
}
