package daemon

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/internal/testpki"
	fastcnpv1 "github.com/fastcnp/fastcnp/proto/fastcnp/v1"
)

// Tokens of the tests: at least MinTokenLen characters.
const (
	adminTok = "adm1n-0123456789abcdef"
	readTok  = "r3ad-0123456789abcdef"
)

// TestParseTokens: only "ROLE TOKEN" lines, with an optional # comment
// after them (as docs/operations.md shows); a bare token, a role alone, a
// short or repeated token is an error naming its line, without the token.
func TestParseTokens(t *testing.T) {
	long := "0123456789abcdef" // MinTokenLen characters
	tests := []struct {
		name    string
		in      string
		roles   []Role
		tokens  []string
		wantErr string
	}{
		{"roles", "# c\n\nadmin " + adminTok + "\nread " + readTok + "\n", []Role{RoleAdmin, RoleRead}, []string{adminTok, readTok}, ""},
		{"inline comments as documented", "# fastcnpd API tokens\nadmin " + adminTok + "   # may change settings and connections\n" +
			"read  " + readTok + "\t# may only read\n", []Role{RoleAdmin, RoleRead}, []string{adminTok, readTok}, ""},
		{"comment without a space", "admin " + long + " #c\n", []Role{RoleAdmin}, []string{long}, ""},
		{"# inside a token", "read ab#" + long + "\n", []Role{RoleRead}, []string{"ab#" + long}, ""},
		{"exactly 16 characters", "admin " + long + "\n", []Role{RoleAdmin}, []string{long}, ""},
		{"empty", "", nil, nil, "no token"},
		{"comments only", "# admin " + long + "\n", nil, nil, "no token"},
		{"bare role word", "admin " + adminTok + "\nread\n", nil, nil, "line 2: want \"admin <token>\" or \"read <token>\""},
		{"bare role word hint", "read\n", nil, nil, "a role (read) without a token"},
		{"bare token", long + "\n", nil, nil, "line 1: want"},
		{"unknown role", "owner " + long + "\n", nil, nil, "line 1: want"},
		{"three words", "admin " + long + " extra\n", nil, nil, "line 1: want"},
		{"1-character token", "\n\nadmin x\n", nil, nil, "line 3: admin token of 1 characters: at least 16 required"},
		{"15-character token", "read " + long[:15] + "\n", nil, nil, "line 1: read token of 15 characters"},
		{"token twice", "admin " + long + "\nread " + long + "\n", nil, nil, "line 2: the token of line 1 again"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTokens(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("%q: %v, want %q", tt.in, err, tt.wantErr)
				}
				for _, w := range strings.Fields(tt.in) {
					if len(w) > 1 && w != "admin" && w != "read" && !strings.HasPrefix(w, "#") && strings.Contains(err.Error(), w) {
						t.Errorf("error %q repeats a token", err)
					}
				}
				return
			}
			if err != nil || len(got) != len(tt.roles) {
				t.Fatalf("%q: %v %v", tt.in, got, err)
			}
			for i := range got {
				if got[i].role != tt.roles[i] || string(got[i].token) != tt.tokens[i] {
					t.Errorf("%q: token %d = %q role %v, want %q %v", tt.in, i, got[i].token, got[i].role, tt.tokens[i], tt.roles[i])
				}
			}
		})
	}
}

// TestTokenFileModeWarned: fastcnpd warns (logrus warning, with the file)
// when other users can read its token file, and not when only its owner can.
func TestTokenFileModeWarned(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Parse([]byte(fmt.Sprintf(testYAML, filepath.Join(dir, "state.json"), "127.0.0.1:1", "127.0.0.1:2")))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		mode os.FileMode
		warn bool
	}{{0o600, false}, {0o400, false}, {0o640, true}, {0o604, true}, {0o644, true}} {
		t.Run(fmt.Sprintf("%#o", tt.mode), func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("tokens-%o", tt.mode))
			if err := os.WriteFile(path, []byte("admin "+adminTok+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tt.mode); err != nil {
				t.Fatal(err)
			}
			logger, hook := logtest.NewNullLogger()
			d, err := New(Options{Config: cfg, Logger: logger})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := NewGRPCServer(d, config.Auth{TokenFile: path}); err != nil {
				t.Fatal(err)
			}
			warned := false
			var msgs []string
			for _, e := range hook.AllEntries() {
				warned = warned || e.Level == logrus.WarnLevel && e.Data["token_file"] == path && strings.Contains(e.Message, "chmod 600")
				msgs = append(msgs, e.Level.String()+": "+e.Message)
			}
			if warned != tt.warn {
				t.Errorf("mode %#o: warned %v, want %v; logs %q", tt.mode, warned, tt.warn, msgs)
			}
		})
	}
}

// authEnv is a daemon that is not running (no switch connected) behind the
// API server with some authentication, on a loopback port.
type authEnv struct {
	d     *Daemon
	addr  string
	state string
}

func startAuthEnv(t *testing.T, auth config.Auth) *authEnv {
	t.Helper()
	state := filepath.Join(t.TempDir(), "state.json")
	// Nothing listens on the switch addresses: the daemon is not run.
	cfg := testConfig(t, state, &testSwitch{addr: "127.0.0.1:1"}, &testSwitch{addr: "127.0.0.1:2"})
	d, err := New(Options{Config: cfg, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	// As if it had been primary: an admin's change is saved (and reported
	// not installed, the switches being down).
	d.writer.Store(true)
	gs, err := NewGRPCServer(d, auth)
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
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeAPI: %v", err)
		}
	})
	return &authEnv{d: d, addr: lis.Addr().String(), state: state}
}

// apiCall is one RPC of the API, read or write.
type apiCall struct {
	name  string
	write bool
	call  func(context.Context, fastcnpv1.FastcnpClient) error
}

var authQth = uint64(64 * 1024)

var apiCalls = []apiCall{
	{"ListSwitches", false, func(ctx context.Context, c fastcnpv1.FastcnpClient) error {
		_, err := c.ListSwitches(ctx, &fastcnpv1.ListSwitchesRequest{})
		return err
	}},
	{"GetPortSettings", false, func(ctx context.Context, c fastcnpv1.FastcnpClient) error {
		_, err := c.GetPortSettings(ctx, &fastcnpv1.GetPortSettingsRequest{Switch: "s1", Port: 1})
		return err
	}},
	{"ListConnections", false, func(ctx context.Context, c fastcnpv1.FastcnpClient) error {
		_, err := c.ListConnections(ctx, &fastcnpv1.ListConnectionsRequest{})
		return err
	}},
	{"GetINCRoutes", false, func(ctx context.Context, c fastcnpv1.FastcnpClient) error {
		_, err := c.GetINCRoutes(ctx, &fastcnpv1.GetINCRoutesRequest{Switch: "s2"})
		return err
	}},
	// Saved, then answered installed=false: the switches are not connected.
	{"SetPortSettings", true, func(ctx context.Context, c fastcnpv1.FastcnpClient) error {
		_, err := c.SetPortSettings(ctx, &fastcnpv1.SetPortSettingsRequest{Switch: "s1", Port: 1, QthBytes: &authQth})
		return err
	}},
	// Not primary of any switch: FAILED_PRECONDITION once past authentication.
	{"AddConnection", true, func(ctx context.Context, c fastcnpv1.FastcnpClient) error {
		_, err := c.AddConnection(ctx, &fastcnpv1.AddConnectionRequest{Connection: &fastcnpv1.Connection{
			SenderIp: "10.1.1.5", UdpSrcPort: 1, ReceiverQpn: 2}})
		return err
	}},
	{"RemoveConnection", true, func(ctx context.Context, c fastcnpv1.FastcnpClient) error {
		_, err := c.RemoveConnection(ctx, &fastcnpv1.RemoveConnectionRequest{SenderIp: "10.1.1.5", UdpSrcPort: 1, ReceiverQpn: 2})
		return err
	}},
}

// adminCode is what an admin gets from each write of apiCalls.
var adminCode = map[string]codes.Code{"SetPortSettings": codes.OK, "AddConnection": codes.FailedPrecondition,
	"RemoveConnection": codes.FailedPrecondition}

// unchanged fails unless the refused calls left the daemon as it was: port
// settings from the config, no connection, no state file written.
func (e *authEnv) unchanged(t *testing.T) {
	t.Helper()
	pi, err := e.d.PortSettings("s1", 1)
	if err != nil || pi.Params.QthBytes != defaultQth1 {
		t.Errorf("s1 port 1 qth %d (%v) after a refused write, want %d", pi.Params.QthBytes, err, defaultQth1)
	}
	if n := len(e.d.Connections()); n != 0 {
		t.Errorf("%d connections after refused writes", n)
	}
	if _, err := os.Stat(e.state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file written by a refused call: %v", err)
	}
}

// TestTokenAuth: over real gRPC, a read token reads and is refused every
// write with PERMISSION_DENIED (nothing changes); an admin token writes;
// a missing, unknown or malformed token is UNAUTHENTICATED for everything.
func TestTokenAuth(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("# test\nadmin "+adminTok+"\nread "+readTok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		header   string // authorization metadata; "" sends none
		readOK   bool
		writeErr codes.Code // for every write; codes.OK: the admin outcome of adminCode
	}{
		{"admin", "Bearer " + adminTok, true, codes.OK},
		{"read", "Bearer " + readTok, true, codes.PermissionDenied},
		{"none", "", false, codes.Unauthenticated},
		{"unknown", "Bearer " + adminTok + "-", false, codes.Unauthenticated},
		{"not bearer", "Basic " + adminTok, false, codes.Unauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startAuthEnv(t, config.Auth{TokenFile: tokens})
			conn, err := grpc.NewClient(e.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			c := fastcnpv1.NewFastcnpClient(conn)
			ctx := context.Background()
			if tt.header != "" {
				ctx = metadata.AppendToOutgoingContext(ctx, "authorization", tt.header)
			}
			for _, ac := range apiCalls {
				want := codes.Unauthenticated
				switch {
				case !ac.write && tt.readOK:
					want = codes.OK
				case ac.write && tt.writeErr == codes.OK:
					want = adminCode[ac.name]
				case ac.write:
					want = tt.writeErr
				}
				if got := status.Code(ac.call(ctx, c)); got != want {
					t.Errorf("%s: %v, want %v", ac.name, got, want)
				}
			}
			if tt.writeErr != codes.OK {
				e.unchanged(t)
			} else if pi, _ := e.d.PortSettings("s1", 1); uint64(pi.Params.QthBytes) != authQth {
				t.Errorf("admin SetPortSettings: qth %d, want %d", pi.Params.QthBytes, authQth)
			}
		})
	}
}

// TestMTLS serves the API with mTLS over real gRPC: a client certificate
// named in admin_names may write, another one signed by the CA may only
// read (PERMISSION_DENIED on writes), and clients without a certificate or
// with one from another CA do not get through the handshake. Without
// admin_names every verified client is admin.
func TestMTLS(t *testing.T) {
	ca, other := testpki.New(t, "fastcnp-ca"), testpki.New(t, "other-ca")
	caFile := ca.File
	sc, sk := ca.Issue(t, "fastcnpd")
	cert := func(c tls.Certificate) []tls.Certificate { return []tls.Certificate{c} }
	operator, viewer, stranger := ca.Certificate(t, "operator"), ca.Certificate(t, "viewer"), other.Certificate(t, "operator")
	pool := ca.Pool()
	tests := []struct {
		name       string
		adminNames []string
		certs      []tls.Certificate
		reads      bool       // reads succeed; otherwise every call fails
		writeErr   codes.Code // codes.OK: the admin outcome of adminCode
	}{
		{"admin by name", []string{"operator"}, cert(operator), true, codes.OK},
		{"read-only", []string{"operator"}, cert(viewer), true, codes.PermissionDenied},
		{"every client admin", nil, cert(viewer), true, codes.OK},
		{"no certificate", []string{"operator"}, nil, false, codes.Unknown},
		{"other CA", []string{"operator"}, cert(stranger), false, codes.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startAuthEnv(t, config.Auth{MTLS: &config.TLSFiles{CA: caFile, Cert: sc, Key: sk, AdminNames: tt.adminNames}})
			creds := credentials.NewTLS(&tls.Config{RootCAs: pool, ServerName: "fastcnpd", Certificates: tt.certs,
				MinVersion: tls.VersionTLS12})
			conn, err := grpc.NewClient(e.addr, grpc.WithTransportCredentials(creds))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			c := fastcnpv1.NewFastcnpClient(conn)
			for _, ac := range apiCalls {
				err := ac.call(context.Background(), c)
				if !tt.reads {
					if err == nil {
						t.Errorf("%s: admitted without a certificate signed by the CA", ac.name)
					}
					continue
				}
				want := codes.OK
				switch {
				case ac.write && tt.writeErr == codes.OK:
					want = adminCode[ac.name]
				case ac.write:
					want = tt.writeErr
				}
				if got := status.Code(err); got != want {
					t.Errorf("%s: %v (%v), want %v", ac.name, got, err, want)
				}
			}
			if !tt.reads || tt.writeErr != codes.OK {
				e.unchanged(t)
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

// TestTokenTLS: token authentication over TLS (api.auth.tls). A client that
// trusts the server's CA authenticates with its token as over plaintext; a
// plaintext client or one that trusts another CA gets nowhere. With a
// client CA, a client certificate is required as well, and the token still
// decides the role.
func TestTokenTLS(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("admin "+adminTok+"\nread "+readTok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ca, other := testpki.New(t, "fastcnp-ca"), testpki.New(t, "other-ca")
	caFile := ca.File
	sc, sk := ca.Issue(t, "fastcnpd")
	client := ca.Certificate(t, "operator")
	pool, otherPool := ca.Pool(), other.Pool()
	tlsCreds := func(roots *x509.CertPool, withCert bool) grpc.DialOption {
		tc := &tls.Config{RootCAs: roots, ServerName: "fastcnpd", MinVersion: tls.VersionTLS12}
		if withCert {
			tc.Certificates = []tls.Certificate{client}
		}
		return grpc.WithTransportCredentials(credentials.NewTLS(tc))
	}
	plain := grpc.WithTransportCredentials(insecure.NewCredentials())
	get := func(ctx context.Context, c fastcnpv1.FastcnpClient) error {
		_, err := c.GetPortSettings(ctx, &fastcnpv1.GetPortSettingsRequest{Switch: "s1", Port: 1})
		return err
	}
	set := func(ctx context.Context, c fastcnpv1.FastcnpClient) error {
		_, err := c.SetPortSettings(ctx, &fastcnpv1.SetPortSettingsRequest{Switch: "s1", Port: 1, QthBytes: &authQth})
		return err
	}
	tests := []struct {
		name     string
		clientCA string
		dial     grpc.DialOption
		token    string
		call     func(context.Context, fastcnpv1.FastcnpClient) error
		want     codes.Code
	}{
		{"admin token over TLS", "", tlsCreds(pool, false), adminTok, set, codes.OK},
		{"read token over TLS reads", "", tlsCreds(pool, false), readTok, get, codes.OK},
		{"read token over TLS cannot set", "", tlsCreds(pool, false), readTok, set, codes.PermissionDenied},
		{"no token over TLS", "", tlsCreds(pool, false), "", get, codes.Unauthenticated},
		{"plaintext client", "", plain, adminTok, get, codes.Unavailable},
		{"server not trusted", "", tlsCreds(otherPool, false), adminTok, get, codes.Unavailable},
		{"client CA: certificate and token", caFile, tlsCreds(pool, true), adminTok, set, codes.OK},
		{"client CA: certificate, read token", caFile, tlsCreds(pool, true), readTok, set, codes.PermissionDenied},
		{"client CA: no certificate", caFile, tlsCreds(pool, false), adminTok, get, codes.Unavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startAuthEnv(t, config.Auth{TokenFile: tokens, TLS: &config.ServerTLS{Cert: sc, Key: sk, ClientCA: tt.clientCA}})
			conn, err := grpc.NewClient(e.addr, tt.dial)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ctx := context.Background()
			if tt.token != "" {
				ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tt.token)
			}
			err = tt.call(ctx, fastcnpv1.NewFastcnpClient(conn))
			if got := status.Code(err); got != tt.want {
				t.Fatalf("%v (%v), want %v", got, err, tt.want)
			}
			pi, _ := e.d.PortSettings("s1", 1)
			if changed := uint64(pi.Params.QthBytes) == authQth; changed != (tt.want == codes.OK && tt.token == adminTok) {
				t.Errorf("qth %d after the call", pi.Params.QthBytes)
			}
		})
	}
}

// TestSecurityWarnings: a token without TLS, or no authentication, is
// warned about unless the API listens on loopback only.
func TestSecurityWarnings(t *testing.T) {
	tokenOnly := config.Auth{TokenFile: "/t"}
	withTLS := config.Auth{TokenFile: "/t", TLS: &config.ServerTLS{Cert: "/c", Key: "/k"}}
	mtls := config.Auth{MTLS: &config.TLSFiles{CA: "/ca", Cert: "/c", Key: "/k"}}
	tests := []struct {
		listen string
		auth   config.Auth
		warn   string // "" for none
	}{
		{"127.0.0.1:9560", tokenOnly, ""},
		{"[::1]:9560", tokenOnly, ""},
		{"localhost:9560", tokenOnly, ""},
		{"0.0.0.0:9560", tokenOnly, "tokens cross the network in plaintext"},
		{":9560", tokenOnly, "tokens cross the network in plaintext"},
		{"10.0.0.1:9560", tokenOnly, "tokens cross the network in plaintext"},
		{"0.0.0.0:9560", withTLS, ""},
		{"0.0.0.0:9560", mtls, ""},
		{"0.0.0.0:9560", config.Auth{Insecure: true}, "everyone who can reach it is admin"},
		{"127.0.0.1:9560", config.Auth{Insecure: true}, ""},
	}
	for _, tt := range tests {
		w := SecurityWarnings(config.API{Listen: tt.listen, Auth: tt.auth})
		if (len(w) > 0) != (tt.warn != "") || tt.warn != "" && !strings.Contains(w[0], tt.warn) {
			t.Errorf("%s %+v: warnings %q, want %q", tt.listen, tt.auth, w, tt.warn)
		}
	}
}

// TestSwitchSecurityWarnings: plaintext P4Runtime to a switch address that
// is not loopback is warned about; TLS, and plaintext on loopback, are not.
func TestSwitchSecurityWarnings(t *testing.T) {
	plain := config.SwitchTLS{Insecure: true}
	mtls := config.SwitchTLS{CA: "/ca", Cert: "/c", Key: "/k"}
	tests := []struct {
		addr string
		tls  config.SwitchTLS
		warn bool
	}{
		{"127.0.0.1:9559", plain, false},
		{"localhost:9559", plain, false},
		{"10.0.0.3:9559", plain, true},
		{"leaf1.fabric:9559", plain, true},
		{"10.0.0.3:9559", mtls, false},
	}
	for _, tt := range tests {
		w := SwitchSecurityWarnings([]config.Switch{{Name: "leaf1", Address: tt.addr, TLS: tt.tls}})
		if (len(w) > 0) != tt.warn || tt.warn && !strings.Contains(w[0], "switch leaf1: P4Runtime to "+tt.addr+" in plaintext") {
			t.Errorf("%s %+v: warnings %q, want warning %v", tt.addr, tt.tls, w, tt.warn)
		}
	}
}

// TestAnnounceSecurityWarnings: no announce.auth, or unauthenticated
// announcements allowed, are warned about; keys alone are not.
func TestAnnounceSecurityWarnings(t *testing.T) {
	tests := []struct {
		auth *config.AnnounceAuth
		warn string
	}{
		{nil, "announcements are not authenticated"},
		{&config.AnnounceAuth{KeyFile: "/k", AllowUnauthenticated: true}, "allow_unauthenticated is set"},
		{&config.AnnounceAuth{KeyFile: "/k"}, ""},
	}
	for _, tt := range tests {
		w := AnnounceSecurityWarnings(config.Announce{Auth: tt.auth})
		if (len(w) > 0) != (tt.warn != "") || tt.warn != "" && !strings.Contains(w[0], tt.warn) {
			t.Errorf("%+v: warnings %q, want %q", tt.auth, w, tt.warn)
		}
	}
}
