package daemon

import (
	"context"
	"crypto/subtle"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/controller/fabric"
	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/internal/tlsfiles"
	"github.com/fastcnp/fastcnp/p4src"
	fastcnpv1 "github.com/fastcnp/fastcnp/proto/fastcnp/v1"
)

// Role is what an API client may do.
type Role int

// Roles.
const (
	RoleNone Role = iota
	RoleRead
	RoleAdmin
)

// adminMethods change state and need RoleAdmin.
var adminMethods = map[string]bool{
	fastcnpv1.Fastcnp_SetPortSettings_FullMethodName:  true,
	fastcnpv1.Fastcnp_AddConnection_FullMethodName:    true,
	fastcnpv1.Fastcnp_RemoveConnection_FullMethodName: true,
	fastcnpv1.Fastcnp_SetLinkState_FullMethodName:     true,
}

// Authenticator decides a caller's role.
type Authenticator struct {
	insecure bool
	mtls     bool
	// adminNames (mTLS): the certificate names that are admin; empty: every
	// verified client is.
	adminNames map[string]bool
	tokens     []tokenRole
}

type tokenRole struct {
	token []byte
	role  Role
}

// MinTokenLen is the shortest API token fastcnpd accepts: 16 characters
// (e.g. "openssl rand -hex 16" gives 32).
const MinTokenLen = 16

// ParseTokens parses a token file: one "ROLE TOKEN" per line, ROLE admin
// or read, optionally followed by a comment ("admin 6f1c...  # the NOC");
// blank lines and lines starting with # are ignored. A comment starts at a
// field that begins with #, so a token may contain # but not start with
// it. Anything else (a bare token, a role without a token, a third word) is
// an error naming the line, and so is a token shorter than MinTokenLen or
// one given twice. Errors never repeat a token.
func ParseTokens(data string) ([]tokenRole, error) {
	var out []tokenRole
	seen := map[string]int{} // token -> line
	for i, line := range strings.Split(data, "\n") {
		f := lineFields(line)
		if len(f) == 0 {
			continue
		}
		n := i + 1
		var r Role
		switch f[0] {
		case "admin":
			r = RoleAdmin
		case "read":
			r = RoleRead
		}
		if r == RoleNone || len(f) != 2 {
			return nil, fmt.Errorf("line %d: want \"admin <token>\" or \"read <token>\" (optionally followed by a # comment), got %d word(s)%s",
				n, len(f), roleHint(f))
		}
		if len(f[1]) < MinTokenLen {
			return nil, fmt.Errorf("line %d: %s token of %d characters: at least %d required (e.g. openssl rand -hex 16)",
				n, f[0], len(f[1]), MinTokenLen)
		}
		if prev, dup := seen[f[1]]; dup {
			return nil, fmt.Errorf("line %d: the token of line %d again", n, prev)
		}
		seen[f[1]] = n
		out = append(out, tokenRole{[]byte(f[1]), r})
	}
	if len(out) == 0 {
		return nil, errors.New("no token")
	}
	return out, nil
}

// roleHint explains a malformed token line without repeating a token.
func roleHint(f []string) string {
	switch {
	case len(f) == 1 && (f[0] == "admin" || f[0] == "read"):
		return fmt.Sprintf(": a role (%s) without a token", f[0])
	case len(f) == 1:
		return ": a bare token needs its role in front (admin or read)"
	case f[0] != "admin" && f[0] != "read":
		return ": the first word must be the role, admin or read"
	}
	return ""
}

// TokenFileWarning returns a warning when the token file at path can be
// read by other users than its owner (group or world bits), "" otherwise.
func TokenFileWarning(path string) (string, error) {
	w, err := secretFileWarning(path, "API token file")
	if err != nil {
		return "", fmt.Errorf("api: token file: %w", err)
	}
	return w, nil
}

// NewAuthenticator builds the API authentication of a config and, for mTLS,
// the server's TLS credentials.
func NewAuthenticator(a config.Auth) (*Authenticator, []grpc.ServerOption, error) {
	switch {
	case a.Insecure:
		return &Authenticator{insecure: true}, nil, nil
	case a.MTLS != nil:
		tc, err := tlsfiles.Server(a.MTLS.Cert, a.MTLS.Key, a.MTLS.CA)
		if err != nil {
			return nil, nil, fmt.Errorf("api: mtls: %w", err)
		}
		auth := &Authenticator{mtls: true}
		if len(a.MTLS.AdminNames) > 0 {
			auth.adminNames = map[string]bool{}
			for _, n := range a.MTLS.AdminNames {
				auth.adminNames[n] = true
			}
		}
		return auth, []grpc.ServerOption{grpc.Creds(credentials.NewTLS(tc))}, nil
	case a.TokenFile != "":
		data, err := config.ReadFileLimited(a.TokenFile, "token file", config.MaxTokenFileSize)
		if err != nil {
			return nil, nil, fmt.Errorf("api: token file: %w", err)
		}
		toks, err := ParseTokens(string(data))
		if err != nil {
			return nil, nil, fmt.Errorf("api: token file %s: %w", a.TokenFile, err)
		}
		var opts []grpc.ServerOption
		if a.TLS != nil {
			tc, err := tlsfiles.Server(a.TLS.Cert, a.TLS.Key, a.TLS.ClientCA)
			if err != nil {
				return nil, nil, fmt.Errorf("api: tls: %w", err)
			}
			opts = append(opts, grpc.Creds(credentials.NewTLS(tc)))
		}
		return &Authenticator{tokens: toks}, opts, nil
	}
	return nil, nil, errors.New("api: no authentication configured")
}

// SecurityWarnings returns what is unsafe about an API configuration that
// is still valid, on an address other hosts can reach: bearer tokens over
// plaintext gRPC, or no authentication at all.
func SecurityWarnings(api config.API) []string {
	if isLoopback(api.Listen) {
		return nil
	}
	switch a := api.Auth; {
	case a.TokenFile != "" && a.TLS == nil:
		return []string{fmt.Sprintf("api.listen %s is not a loopback address and api.auth.tls is not set: "+
			"bearer tokens cross the network in plaintext (set api.auth.tls: {cert, key})", api.Listen)}
	case a.Insecure:
		return []string{fmt.Sprintf("api.listen %s is not a loopback address and api.auth is insecure: "+
			"everyone who can reach it is admin", api.Listen)}
	}
	return nil
}

// SwitchSecurityWarnings returns what is unsafe about the switch
// connections of a valid configuration: P4Runtime in plaintext to an
// address other hosts can reach, where anyone on the path reads and changes
// what fastcnpd writes, and the switch cannot tell fastcnpd from any other
// client (docs/operations.md, "Secure deployment").
func SwitchSecurityWarnings(switches []config.Switch) []string {
	var out []string
	for _, sw := range switches {
		if sw.TLS.Insecure && !isLoopback(sw.Address) {
			out = append(out, fmt.Sprintf("switch %s: P4Runtime to %s in plaintext (tls: {insecure: true}): anyone on the "+
				"path can read and change the writes, and the switch cannot tell fastcnpd from another client; serve it "+
				"with mutual TLS and give tls: {ca, cert, key}", sw.Name, sw.Address))
		}
	}
	return out
}

// AnnounceSecurityWarnings returns what is unsafe about the announcement
// settings of a valid configuration: announcements without authentication
// (no announce.auth), where a host can announce connections for the other
// hosts of its port's subnets before they do, or with unauthenticated
// announcements still allowed.
func AnnounceSecurityWarnings(a config.Announce) []string {
	switch {
	case a.Auth == nil:
		return []string{"announcements are not authenticated (announce.auth is not set): a host can announce connections " +
			"for its neighbours' addresses (those announced first stay bound to their host's port and MAC); " +
			"a lab set-up: give the hosts keys (docs/operations.md, \"Secure deployment\")"}
	case a.Auth.AllowUnauthenticated:
		return []string{"announce.auth.allow_unauthenticated is set: senders without a key may announce without authentication"}
	}
	return nil
}

// isLoopback reports whether a host:port names a loopback address (or
// localhost); unparsable addresses are not.
func isLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback() || host == "localhost"
}

// role returns the caller's role.
func (a *Authenticator) role(ctx context.Context) (Role, error) {
	r, _, err := a.caller(ctx)
	return r, err
}

// caller returns the caller's role and identity, the key of its rate
// limits: which token it sent, the name of its certificate, or without
// authentication its peer's IP address.
func (a *Authenticator) caller(ctx context.Context) (Role, string, error) {
	if a.insecure {
		return RoleAdmin, peerKey(ctx), nil
	}
	if a.mtls {
		p, ok := peer.FromContext(ctx)
		if ok {
			if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.VerifiedChains) > 0 &&
				len(ti.State.VerifiedChains[0]) > 0 {
				c := ti.State.VerifiedChains[0][0]
				return a.certRole(c), "cert:" + c.Subject.CommonName, nil
			}
		}
		return RoleNone, "", status.Error(codes.Unauthenticated, "client certificate required")
	}
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get("authorization")
	if len(vals) == 0 {
		return RoleNone, "", status.Error(codes.Unauthenticated, "missing bearer token")
	}
	tok, ok := strings.CutPrefix(vals[0], "Bearer ")
	if !ok {
		return RoleNone, "", status.Error(codes.Unauthenticated, "authorization is not a bearer token")
	}
	role, which := RoleNone, -1
	for i, t := range a.tokens { // compare with every token: no early exit
		if subtle.ConstantTimeCompare(t.token, []byte(tok)) == 1 && t.role > role {
			role, which = t.role, i
		}
	}
	if role == RoleNone {
		return RoleNone, "", status.Error(codes.Unauthenticated, "invalid token")
	}
	return role, fmt.Sprintf("token:%d", which), nil
}

// peerKey is the caller's IP address (its port changes with every
// connection), or its whole address when it has no IP.
func peerKey(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return "peer:?"
	}
	if host, _, err := net.SplitHostPort(p.Addr.String()); err == nil {
		return "peer:" + host
	}
	return "peer:" + p.Addr.String()
}

// certRole is the role of a verified client certificate: admin when no
// admin names are configured or when its subject common name or one of its
// DNS names is one of them, read otherwise.
func (a *Authenticator) certRole(c *x509.Certificate) Role {
	if len(a.adminNames) == 0 || a.adminNames[c.Subject.CommonName] {
		return RoleAdmin
	}
	for _, n := range c.DNSNames {
		if a.adminNames[n] {
			return RoleAdmin
		}
	}
	return RoleRead
}

func (a *Authenticator) check(ctx context.Context, method string) error {
	_, err := a.checkCaller(ctx, method)
	return err
}

// checkCaller is check, returning the caller's identity (caller).
func (a *Authenticator) checkCaller(ctx context.Context, method string) (string, error) {
	r, key, err := a.caller(ctx)
	if err != nil {
		return "", err
	}
	if adminMethods[method] && r < RoleAdmin {
		return "", status.Errorf(codes.PermissionDenied, "%s needs an admin token", method)
	}
	return key, nil
}

// NewGRPCServer returns a gRPC server with the fastcnp API of d registered,
// authenticated as the config's api.auth says.
func NewGRPCServer(d *Daemon, auth config.Auth) (*grpc.Server, error) {
	a, opts, err := NewAuthenticator(auth)
	if err != nil {
		return nil, err
	}
	if auth.TokenFile != "" {
		w, err := TokenFileWarning(auth.TokenFile)
		if err != nil {
			return nil, err
		}
		if w != "" {
			d.log.WithField("token_file", auth.TokenFile).Warn(w)
		}
	}
	now := time.Now
	if d != nil && d.opts.Now != nil {
		now = d.opts.Now
	}
	validateLimit := newRateLimiter(now, ValidateConfigEvery, ValidateConfigBurst, maxRateKeys)
	opts = append(opts,
		grpc.MaxRecvMsgSize(MaxAPIMessageSize),
		grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			key, err := a.checkCaller(ctx, info.FullMethod)
			if err != nil {
				return nil, err
			}
			if info.FullMethod == fastcnpv1.Fastcnp_ValidateConfig_FullMethodName {
				if ok, wait := validateLimit.allow(key); !ok {
					return nil, status.Errorf(codes.ResourceExhausted,
						"ValidateConfig rate limit: %d calls at once, then one every %s per caller; retry in %s",
						ValidateConfigBurst, ValidateConfigEvery, wait.Round(time.Millisecond))
				}
			}
			return h(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if err := a.check(ss.Context(), info.FullMethod); err != nil {
				return err
			}
			return h(srv, ss)
		}))
	s := grpc.NewServer(opts...)
	fastcnpv1.RegisterFastcnpServer(s, &apiServer{d: d})
	return s, nil
}

// ServeAPI serves the API on lis until ctx ends, then stops gracefully.
func ServeAPI(ctx context.Context, s *grpc.Server, lis net.Listener) error {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-ctx.Done()
		s.GracefulStop()
	}()
	err := s.Serve(lis)
	wg.Wait()
	if err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("api: %w", err)
	}
	return nil
}

type apiServer struct {
	fastcnpv1.UnimplementedFastcnpServer
	d *Daemon
}

// grpcErr maps daemon errors to gRPC codes.
func grpcErr(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok && status.Code(err) != codes.Unknown {
		return err
	}
	c := codes.Internal
	switch {
	case errors.Is(err, ErrUnknownSwitch), errors.Is(err, ErrUnknownPort), errors.Is(err, fabric.ErrNoConn):
		c = codes.NotFound
	case errors.Is(err, ErrInvalid), errors.Is(err, fabric.ErrInvalidConn):
		c = codes.InvalidArgument
	case errors.Is(err, fabric.ErrTableFull):
		c = codes.ResourceExhausted
	case errors.Is(err, ErrNotInstalled):
		c = codes.Aborted // saved, not installed everywhere (Unavailable would read as "fastcnpd down")
	case errors.Is(err, ErrNotPrimary):
		c = codes.FailedPrecondition
	case errors.Is(err, context.Canceled):
		c = codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		c = codes.DeadlineExceeded
	}
	return status.Error(c, err.Error())
}

func (s *apiServer) ListSwitches(context.Context, *fastcnpv1.ListSwitchesRequest) (*fastcnpv1.ListSwitchesResponse, error) {
	out := &fastcnpv1.ListSwitchesResponse{}
	for _, st := range s.d.Switches() {
		out.Switches = append(out.Switches, &fastcnpv1.SwitchStatus{Name: st.Name, Address: st.Address,
			DeviceId: st.DeviceID, Connected: st.Connected, Primary: st.Primary, Entries: uint64(st.Entries),
			LastError: st.LastError, Warnings: st.Warnings})
	}
	return out, nil
}

func portSettingsPB(pi PortInfo) *fastcnpv1.PortSettings {
	s, p := pi.Settings, pi.Params
	return &fastcnpv1.PortSettings{Switch: pi.Switch, Port: uint32(pi.Port), LinkRateBps: uint64(s.LinkRate),
		QthBytes: uint64(s.Qth), TcheckNs: uint64(s.Tcheck), RttBaseNs: uint64(s.RTTBase), CnpGapNs: uint64(s.CNPGap),
		Mode: string(s.Mode), RedKminBytes: uint64(s.RED.Kmin), RedKmaxBytes: uint64(s.RED.Kmax), RedPmax: s.RED.Pmax,
		MtuBytes: uint64(s.MTU), Params: &fastcnpv1.PortParams{RateBytesPerMs: p.RateBytesPerMs, QthBytes: p.QthBytes,
			TcheckNs: p.TcheckNs, CnpGapNs: p.CNPGapNs, Mode: uint32(p.Mode), RedKminBytes: p.REDKminBytes,
			RedKmaxBytes: p.REDKmaxBytes, RedPmaxQ16: uint32(p.REDPmaxQ16), RttBaseNs: p.RTTBaseNs, BdpBytes: p.BDPBytes,
			BdpLog2Q6: uint32(p.BDPLog2Q6), MtuBytes: uint32(p.MTUBytes), PauseQuantumPs: p.PauseQuantumPs,
			SwitchId: uint32(p.SwitchID), LosslessPriority: uint32(p.LosslessPriority)}}
}

func portArg(p uint32) (uint16, error) {
	if p < 1 || p > config.MaxPort {
		return 0, status.Errorf(codes.InvalidArgument, "port %d out of range 1..%d", p, config.MaxPort)
	}
	return uint16(p), nil
}

func (s *apiServer) GetPortSettings(_ context.Context, req *fastcnpv1.GetPortSettingsRequest) (*fastcnpv1.PortSettings, error) {
	port, err := portArg(req.GetPort())
	if err != nil {
		return nil, err
	}
	pi, err := s.d.PortSettings(req.GetSwitch(), port)
	if err != nil {
		return nil, grpcErr(err)
	}
	return portSettingsPB(pi), nil
}

func (s *apiServer) SetPortSettings(ctx context.Context, req *fastcnpv1.SetPortSettingsRequest) (*fastcnpv1.PortSettings, error) {
	port, err := portArg(req.GetPort())
	if err != nil {
		return nil, err
	}
	o := PortOverride{QthBytes: req.QthBytes, TcheckNs: req.TcheckNs, CNPGapNs: req.CnpGapNs, Mode: req.Mode,
		REDKminBytes: req.RedKminBytes, REDKmaxBytes: req.RedKmaxBytes, REDPmax: req.RedPmax}
	pi, err := s.d.SetPortSettings(ctx, req.GetSwitch(), port, o)
	if err != nil && !errors.Is(err, ErrNotInstalled) {
		return nil, grpcErr(err)
	}
	out := portSettingsPB(pi)
	out.Installed = err == nil
	if err != nil {
		out.InstallError = err.Error()
	}
	return out, nil
}

func (s *apiServer) ListPorts(ctx context.Context, req *fastcnpv1.ListPortsRequest) (*fastcnpv1.ListPortsResponse, error) {
	ps, err := s.d.Ports(ctx, req.GetSwitch())
	if err != nil {
		return nil, grpcErr(err)
	}
	out := &fastcnpv1.ListPortsResponse{}
	for _, p := range ps {
		pb := &fastcnpv1.PortState{Switch: p.Switch, Port: uint32(p.Port), Mode: string(p.Settings.Mode),
			QthBytes: uint64(p.Settings.Qth), LinkRateBps: uint64(p.Settings.LinkRate), State: p.State,
			LastEvent: p.LastEvent, QueueBytes: p.Queue, Counters: map[string]*fastcnpv1.CounterValue{}}
		if !p.EventTime.IsZero() {
			pb.LastEventUnixNano = p.EventTime.UnixNano()
		}
		for name, c := range p.Counters {
			pb.Counters[name] = &fastcnpv1.CounterValue{Packets: uint64(c.Packets), Bytes: uint64(c.Bytes)}
		}
		out.Ports = append(out.Ports, pb)
	}
	return out, nil
}

func (s *apiServer) ListQueues(ctx context.Context, req *fastcnpv1.ListQueuesRequest) (*fastcnpv1.ListQueuesResponse, error) {
	var port uint16
	if req.GetPort() != 0 {
		var err error
		if port, err = portArg(req.GetPort()); err != nil {
			return nil, err
		}
	}
	qs, err := s.d.Queues(ctx, req.GetSwitch(), port)
	if err != nil {
		return nil, grpcErr(err)
	}
	out := &fastcnpv1.ListQueuesResponse{}
	for _, q := range qs {
		pb := &fastcnpv1.QueueState{Switch: q.Switch, Port: uint32(q.Port), Priority: uint32(q.Priority),
			Lossless: q.Lossless, Counters: map[string]*fastcnpv1.CounterValue{}}
		for name, c := range q.Counters {
			pb.Counters[name] = &fastcnpv1.CounterValue{Packets: uint64(c.Packets), Bytes: uint64(c.Bytes)}
		}
		out.Queues = append(out.Queues, pb)
	}
	return out, nil
}

func connPB(c fabric.Connection) *fastcnpv1.Connection {
	pb := &fastcnpv1.Connection{SenderIp: c.SenderIP.String(), UdpSrcPort: uint32(c.UDPSrcPort),
		ReceiverQpn: c.ReceiverQPN, SenderQpn: c.SenderQPN, Flags: uint32(c.Flags), WorkerRank: uint32(c.WorkerRank),
		IncGroup: uint32(c.INCGroup), ConnIndex: uint32(c.Index), Source: c.Source, Static: c.Static}
	if c.ReceiverIP.IsValid() {
		pb.ReceiverIp = c.ReceiverIP.String()
	}
	if !c.LastSeen.IsZero() {
		pb.LastSeenUnixNano = c.LastSeen.UnixNano()
	}
	return pb
}

func (s *apiServer) ListConnections(context.Context, *fastcnpv1.ListConnectionsRequest) (*fastcnpv1.ListConnectionsResponse, error) {
	out := &fastcnpv1.ListConnectionsResponse{}
	for _, c := range s.d.Connections() {
		out.Connections = append(out.Connections, connPB(c))
	}
	return out, nil
}

func connKeyArg(ip string, port, qpn uint32) (fabric.ConnKey, error) {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return fabric.ConnKey{}, status.Errorf(codes.InvalidArgument, "sender_ip: %v", err)
	}
	if port > 0xffff {
		return fabric.ConnKey{}, status.Errorf(codes.InvalidArgument, "udp_src_port %d exceeds 65535", port)
	}
	return fabric.ConnKey{SenderIP: a, UDPSrcPort: uint16(port), ReceiverQPN: qpn}, nil
}

func (s *apiServer) AddConnection(ctx context.Context, req *fastcnpv1.AddConnectionRequest) (*fastcnpv1.Connection, error) {
	pc := req.GetConnection()
	k, err := connKeyArg(pc.GetSenderIp(), pc.GetUdpSrcPort(), pc.GetReceiverQpn())
	if err != nil {
		return nil, err
	}
	if pc.GetFlags() > 0xff || pc.GetWorkerRank() > 0xff || pc.GetIncGroup() > 0xffff {
		return nil, status.Error(codes.InvalidArgument, "flags, worker_rank or inc_group out of range")
	}
	c := fabric.Connection{ConnKey: k, SenderQPN: pc.GetSenderQpn(), Flags: uint8(pc.GetFlags()),
		WorkerRank: uint8(pc.GetWorkerRank()), INCGroup: uint16(pc.GetIncGroup())}
	if pc.GetReceiverIp() != "" {
		if c.ReceiverIP, err = netip.ParseAddr(pc.GetReceiverIp()); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "receiver_ip: %v", err)
		}
	}
	got, err := s.d.AddConnection(ctx, c)
	if err != nil {
		return nil, grpcErr(err)
	}
	return connPB(got), nil
}

func (s *apiServer) RemoveConnection(ctx context.Context, req *fastcnpv1.RemoveConnectionRequest) (*fastcnpv1.RemoveConnectionResponse, error) {
	k, err := connKeyArg(req.GetSenderIp(), req.GetUdpSrcPort(), req.GetReceiverQpn())
	if err != nil {
		return nil, err
	}
	if err := s.d.RemoveConnection(ctx, k); err != nil {
		return nil, grpcErr(err)
	}
	return &fastcnpv1.RemoveConnectionResponse{}, nil
}

func (s *apiServer) GetINCRoutes(_ context.Context, req *fastcnpv1.GetINCRoutesRequest) (*fastcnpv1.INCRouteTable, error) {
	t, hops, err := s.d.INCRoutes(req.GetSwitch())
	if err != nil {
		return nil, grpcErr(err)
	}
	out := &fastcnpv1.INCRouteTable{Switch: req.GetSwitch()}
	counts := map[uint32]uint32{}
	for _, h := range t {
		out.Buckets = append(out.Buckets, h)
		counts[h]++
	}
	for _, h := range hops {
		out.NextHops = append(out.NextHops, &fastcnpv1.INCNextHop{Port: uint32(h.Port), Mac: h.MAC.String(),
			Weight: h.Weight, Buckets: counts[uint32(h.Port)]})
	}
	return out, nil
}

func (s *apiServer) WatchEvents(req *fastcnpv1.WatchEventsRequest, stream grpc.ServerStreamingServer[fastcnpv1.Event]) error {
	want := map[string]bool{}
	for _, k := range req.GetKinds() {
		want[k] = true
	}
	ch, cancel := s.d.Subscribe(256)
	defer cancel()
	ctx := stream.Context()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-ch:
			if !ok {
				return nil
			}
			if len(want) > 0 && !want[e.Kind] {
				continue
			}
			if err := stream.Send(&fastcnpv1.Event{TimeUnixNano: e.Time.UnixNano(), Kind: e.Kind, Switch: e.Switch,
				Port: uint32(e.Port), Message: e.Message, Fields: e.Fields}); err != nil {
				return err
			}
		}
	}
}

func (s *apiServer) ValidateConfig(_ context.Context, req *fastcnpv1.ValidateConfigRequest) (*fastcnpv1.ValidateConfigResponse, error) {
	if n := len(req.GetConfig()); n > config.MaxConfigSize {
		return nil, status.Errorf(codes.InvalidArgument, "config of %d bytes: larger than the limit of %s (fastcnpd reads no larger config)",
			n, config.FormatLimit(config.MaxConfigSize))
	}
	if n := len(req.GetName()); n > maxAnswerLineLen {
		return nil, status.Errorf(codes.InvalidArgument, "name of %d bytes: at most %d", n, maxAnswerLineLen)
	}
	return ValidateConfig(req.GetName(), req.GetConfig()), nil
}

// ValidateConfig parses a configuration and computes every switch's desired
// state with the embedded P4Info, so that problems of derived parameters
// show up too. fastcnpctl runs it locally; the API runs it in the daemon.
func ValidateConfig(name string, data []byte) *fastcnpv1.ValidateConfigResponse {
	if name == "" {
		name = "config"
	}
	out := &fastcnpv1.ValidateConfigResponse{}
	defer func() {
		// At most config.MaxErrors errors and as many warnings, each line
		// bounded: the answer stays small whatever the config.
		out.Errors = boundLines(name, "errors", out.Errors)
		out.Warnings = boundLines(name, "warnings", out.Warnings)
	}()
	cfg, err := config.ParseFile(name, data)
	if err != nil {
		out.Errors = strings.Split(err.Error(), "\n")
		return out
	}
	p, err := p4src.P4Info()
	var info *p4rt.Info
	if err == nil {
		info, err = p4rt.NewInfo(p)
	}
	if err != nil {
		out.Errors = append(out.Errors, "embedded p4info: "+err.Error())
		return out
	}
	// The INC tree, as fastcnpd computes it at start (no failure).
	tree, err := fabric.ComputeINCTree(cfg, fabric.Failures{}, nil)
	if err != nil {
		out.Errors = append(out.Errors, fmt.Sprintf("%s: %v", name, err))
	} else {
		for _, w := range tree.Warnings {
			out.Warnings = append(out.Warnings, fmt.Sprintf("%s: %s", name, w))
		}
	}
	for i := range cfg.Switches {
		sw := &cfg.Switches[i]
		res, err := fabric.Desired(info, fabric.Input{Config: cfg, Switch: sw, INCTree: tree})
		if err != nil {
			out.Errors = append(out.Errors, fmt.Sprintf("%s: switch %s: %v", name, sw.Name, err))
			continue
		}
		for _, w := range res.Warnings {
			out.Warnings = append(out.Warnings, fmt.Sprintf("%s: switch %s: %s", name, sw.Name, w))
		}
	}
	out.Valid = len(out.Errors) == 0
	return out
}
