package p4rtserver

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/fastcnp/fastcnp/internal/testpki"
	"github.com/fastcnp/fastcnp/internal/tlsfiles"
	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
)

// dialWith returns a P4Runtime client over creds to the harness's server.
func (h *harness) dialWith(t *testing.T, creds credentials.TransportCredentials) p4v1.P4RuntimeClient {
	t.Helper()
	conn, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return p4v1.NewP4RuntimeClient(conn)
}

// TestMutualTLS serves P4Runtime with the TLS config fastcnp-switch builds
// from --ca-cert-file, --server-cert-file and --server-key-file: clients
// without a certificate of the CA (plaintext, TLS without a certificate,
// a certificate of another CA) can neither arbitrate, push a pipeline nor
// write; one with a certificate of the CA can, and becomes primary with
// election ID 1, so none of the refused clients' election ID 100 ever
// reached the arbitration (the spec keeps the highest ID seen).
func TestMutualTLS(t *testing.T) {
	ca, other := testpki.New(t, "fabric-ca"), testpki.New(t, "other-ca")
	srvCert, srvKey := ca.Issue(t, "fastcnp-switch")
	tc, err := tlsfiles.Server(srvCert, srvKey, ca.File)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(o *Options) { o.TLS = tc })
	trust := func(certs ...tls.Certificate) credentials.TransportCredentials {
		return credentials.NewTLS(&tls.Config{RootCAs: ca.Pool(), ServerName: "fastcnp-switch", Certificates: certs,
			MinVersion: tls.VersionTLS12})
	}
	rogues := []struct {
		name  string
		creds credentials.TransportCredentials
	}{
		{"plaintext", insecure.NewCredentials()},
		{"TLS without a client certificate", trust()},
		{"certificate of another CA", trust(other.Certificate(t, "controller"))},
	}
	for _, r := range rogues {
		t.Run(r.name, func(t *testing.T) {
			cli := h.dialWith(t, r.creds)
			ctx := ctxT(t)
			err := func() error {
				st, err := cli.StreamChannel(ctx)
				if err != nil {
					return err
				}
				if err := st.Send(arbReq(testDevice, eid(100), "")); err != nil {
					_, err = st.Recv() // the stream's status
					return err
				}
				_, err = st.Recv()
				return err
			}()
			if status.Code(err) != codes.Unavailable {
				t.Errorf("arbitration: %v, want UNAVAILABLE (no connection)", err)
			}
			_, err = cli.SetForwardingPipelineConfig(ctx, &p4v1.SetForwardingPipelineConfigRequest{
				DeviceId: testDevice, ElectionId: eid(100), Action: p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT,
				Config: &p4v1.ForwardingPipelineConfig{P4Info: P4InfoFromSchema(pipeline.ProgramSchema())}})
			if status.Code(err) != codes.Unavailable {
				t.Errorf("pipeline push: %v, want UNAVAILABLE", err)
			}
			_, err = cli.Write(ctx, &p4v1.WriteRequest{DeviceId: testDevice, ElectionId: eid(100),
				Updates: []*p4v1.Update{ins(route(b(10, 0, 0, 0), 8, b(0, 1)))}})
			if status.Code(err) != codes.Unavailable {
				t.Errorf("write: %v, want UNAVAILABLE", err)
			}
		})
	}

	// A certificate of the CA: primary with ID 1, pipeline, write, read back.
	h.cli = h.dialWith(t, trust(ca.Certificate(t, "fastcnpd")))
	h.primary(t, 1)
	if err := h.setPipeline(t, 1, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, 1); err != nil {
		t.Fatalf("pipeline push with a valid certificate: %v", err)
	}
	if err := h.write(t, 1, ins(route(b(10, 0, 0, 0), 8, b(0, 1)))); err != nil {
		t.Fatalf("write with a valid certificate: %v", err)
	}
	got := h.mustRead(t, te(p4src.TableIPv4Route, 0, nil))
	if len(got) != 1 {
		t.Errorf("read back %d routes, want the 1 written", len(got))
	}
}

// TestExposureWarning: a server that any host can reach without a client
// certificate (plaintext or TLS alone, on an address that is not loopback)
// logs a warning when it starts serving; mutual TLS and loopback do not.
func TestExposureWarning(t *testing.T) {
	ca := testpki.New(t, "fabric-ca")
	cert, key := ca.Issue(t, "fastcnp-switch")
	tlsOnly, err := tlsfiles.Server(cert, key, "")
	if err != nil {
		t.Fatal(err)
	}
	mtls, err := tlsfiles.Server(cert, key, ca.File)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, listen string
		tls          *tls.Config
		security     string
		warn         string // substring of the warning; "" = none
	}{
		{"plaintext on every address", "0.0.0.0:0", nil, "plaintext", "PLAINTEXT"},
		{"plaintext on loopback", "127.0.0.1:0", nil, "plaintext", ""},
		{"TLS without client certificates", "0.0.0.0:0", tlsOnly, "tls", "without client certificates"},
		{"mutual TLS on every address", "0.0.0.0:0", mtls, "mtls", ""},
		{"mutual TLS on loopback", "127.0.0.1:0", mtls, "mtls", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, hook := logtest.NewNullLogger()
			srv, err := New(Options{DeviceID: 1, DataPlane: NewLocalDataPlane(pipeline.New(pipeline.Options{}), LocalOptions{}),
				Logger: log, TLS: tt.tls})
			if err != nil {
				t.Fatal(err)
			}
			lis, err := net.Listen("tcp", tt.listen)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- srv.Serve(ctx, lis) }()
			waitLogged(t, hook, "serving P4Runtime")
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			var warnings []string
			for _, e := range hook.AllEntries() {
				if e.Message == "serving P4Runtime" && e.Data["security"] != tt.security {
					t.Errorf("security %v, want %s", e.Data["security"], tt.security)
				}
				if e.Level == logrus.WarnLevel {
					warnings = append(warnings, e.Message)
				}
			}
			switch {
			case tt.warn == "" && len(warnings) > 0:
				t.Errorf("warnings %q, want none", warnings)
			case tt.warn != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], tt.warn)):
				t.Errorf("warnings %q, want one with %q", warnings, tt.warn)
			}
		})
	}
}

// waitLogged waits until msg was logged.
func waitLogged(t *testing.T, hook *logtest.Hook, msg string) {
	t.Helper()
	ctx := ctxT(t)
	for {
		for _, e := range hook.AllEntries() {
			if e.Message == msg {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%q not logged", msg)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
