package p4rtserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/protobuf/proto"
)

// APIVersion is the P4Runtime version the server reports in Capabilities.
const APIVersion = "1.5.0"

// Defaults of Options.
const (
	DefaultMaxStreams         = 16
	DefaultStreamQueue        = 16384
	DefaultDigestPollInterval = time.Millisecond
	// maxListsPerPoll bounds the digest lists taken from the pipeline per poll so that
	// a burst does not hold the pipeline for long.
	maxListsPerPoll = 64
	// readBatch is the number of entities per ReadResponse.
	readBatch = 512

	// DefaultKeepaliveTime and DefaultKeepaliveTimeout: a connection on which
	// nothing has been received for 5 s is pinged, and closed when the ping is not
	// answered within 5 s, so a controller that hangs with its stream open (process
	// stopped, link dead without a reset) loses its stream, and with it primary,
	// within about 10 s. The TCP user timeout is the keepalive timeout too: data left
	// unacknowledged that long also ends the connection.
	DefaultKeepaliveTime    = 5 * time.Second
	DefaultKeepaliveTimeout = 5 * time.Second
	// DefaultKeepaliveMinTime is the shortest interval between a client's pings that
	// the server tolerates (gRPC keepalive enforcement: more than two pings sooner
	// than this end the connection with GOAWAY "too_many_pings"). 5 s lets through
	// every interval controller/p4rt accepts (its floor is gRPC's, 10 s; default
	// 6 min); pings are allowed without an open call too.
	DefaultKeepaliveMinTime = 5 * time.Second
)

// Options configures New.
type Options struct {
	// DeviceID is the P4Runtime device ID the server answers for (non-zero).
	DeviceID uint64
	// DataPlane is the pipeline with its packet I/O (required).
	DataPlane DataPlane
	// Schema is the program the data plane runs (default pipeline.ProgramSchema()).
	Schema *pipeline.Schema
	// Logger receives structured logs (default: logrus' standard logger).
	Logger logrus.FieldLogger
	// TLS, when set, serves gRPC over TLS with this config.
	TLS *tls.Config
	// MaxStreams bounds concurrent StreamChannel sessions (default DefaultMaxStreams);
	// one more is refused with RESOURCE_EXHAUSTED.
	MaxStreams int
	// StreamQueue bounds the packet-ins and digest lists queued per stream (default
	// DefaultStreamQueue); beyond it they are dropped and counted.
	StreamQueue int
	// DigestPollInterval is how often the pipeline's digest queues are polled
	// (default DefaultDigestPollInterval).
	DigestPollInterval time.Duration
	// PromoteHighestBackup, when set, makes the live client with the highest
	// election ID of a role its primary, as BMv2's PI server does: when the primary
	// leaves or downgrades itself, the backup with the highest election ID becomes
	// primary (and the role's highest election ID is lowered to its). This is NOT the
	// P4Runtime specification's arbitration (default): there, the role has no
	// primary until a client sends an election ID of at least the highest ever seen.
	// For controllers whose standby relies on BMv2's promotion.
	PromoteHighestBackup bool
	// KeepaliveTime is how long a connection may be silent (nothing received) before
	// the server pings the client (default DefaultKeepaliveTime; negative: never;
	// gRPC raises values below 1 s to 1 s).
	KeepaliveTime time.Duration
	// KeepaliveTimeout is how long the server waits for the answer to its ping (and
	// for TCP acknowledgements) before closing the connection, which ends its
	// streams (default DefaultKeepaliveTimeout).
	KeepaliveTimeout time.Duration
	// KeepaliveMinTime is the shortest interval between client pings the server
	// accepts (default DefaultKeepaliveMinTime).
	KeepaliveMinTime time.Duration
	// GRPCOptions are extra gRPC server options; they come after the keepalive
	// options, so a grpc.KeepaliveParams or grpc.KeepaliveEnforcementPolicy here wins.
	GRPCOptions []grpc.ServerOption
}

// Server serves p4.v1.P4Runtime for one device around a DataPlane. Create it with New,
// run it with Serve, end it with Stop or by cancelling Serve's context.
type Server struct {
	p4v1.UnimplementedP4RuntimeServer

	opts   Options
	dp     DataPlane
	schema *pipeline.Schema
	log    logrus.FieldLogger
	grpc   *grpc.Server

	// mu guards arbitration and the pipeline configs.
	mu        sync.Mutex
	roles     map[string]*roleState
	nextID    uint64
	streams   int
	saved     *p4v1.ForwardingPipelineConfig
	committed *p4v1.ForwardingPipelineConfig

	// stateMu serialises Write, Read and commit, and guards the state kept beside the
	// pipeline (entry metadata, clone session IDs, multicast groups).
	stateMu    sync.Mutex
	entryMeta  map[string]entryMeta
	cloneIDs   map[uint32]bool // clone session ID -> written with the legacy egress_port
	mcastGroup map[uint32]*p4v1.MulticastGroupEntry

	// afterWriteCheck, when set (tests), runs in Write after the arbitration
	// check passed, with stateMu held.
	afterWriteCheck atomic.Pointer[func()]

	// digestsOn is the number of digests with a config: the digest loop does not
	// touch the pipeline while it is 0.
	digestsOn atomic.Int32

	serveOnce sync.Once
	stopOnce  sync.Once
	stopped   chan struct{}
}

// New validates opts and returns a server.
func New(opts Options) (*Server, error) {
	if opts.DeviceID == 0 {
		return nil, errors.New("p4rtserver: device ID must be non-zero")
	}
	if opts.DataPlane == nil {
		return nil, errors.New("p4rtserver: no data plane")
	}
	if opts.Schema == nil {
		opts.Schema = pipeline.ProgramSchema()
	}
	if opts.Logger == nil {
		opts.Logger = logrus.StandardLogger()
	}
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = DefaultMaxStreams
	}
	if opts.StreamQueue <= 0 {
		opts.StreamQueue = DefaultStreamQueue
	}
	if opts.DigestPollInterval <= 0 {
		opts.DigestPollInterval = DefaultDigestPollInterval
	}
	if opts.KeepaliveTime == 0 {
		opts.KeepaliveTime = DefaultKeepaliveTime
	}
	if opts.KeepaliveTimeout <= 0 {
		opts.KeepaliveTimeout = DefaultKeepaliveTimeout
	}
	if opts.KeepaliveMinTime <= 0 {
		opts.KeepaliveMinTime = DefaultKeepaliveMinTime
	}
	s := &Server{
		opts:       opts,
		dp:         opts.DataPlane,
		schema:     opts.Schema,
		log:        opts.Logger.WithFields(logrus.Fields{"component": "p4rtserver", "device_id": opts.DeviceID}),
		roles:      make(map[string]*roleState),
		entryMeta:  make(map[string]entryMeta),
		cloneIDs:   make(map[uint32]bool),
		mcastGroup: make(map[uint32]*p4v1.MulticastGroupEntry),
		stopped:    make(chan struct{}),
	}
	kp := keepalive.ServerParameters{Time: opts.KeepaliveTime, Timeout: opts.KeepaliveTimeout}
	if opts.KeepaliveTime < 0 {
		kp = keepalive.ServerParameters{Time: time.Duration(math.MaxInt64)} // gRPC's "infinity": no pings
	}
	gopts := []grpc.ServerOption{
		grpc.KeepaliveParams(kp),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: opts.KeepaliveMinTime, PermitWithoutStream: true}),
	}
	gopts = append(gopts, opts.GRPCOptions...)
	if opts.TLS != nil {
		gopts = append(gopts, grpc.Creds(credentials.NewTLS(opts.TLS)))
	}
	s.grpc = grpc.NewServer(gopts...)
	p4v1.RegisterP4RuntimeServer(s.grpc, s)
	return s, nil
}

// Serve serves on lis until ctx is cancelled or Stop is called, then returns once
// every goroutine it started has ended. It may be called once.
func (s *Server) Serve(ctx context.Context, lis net.Listener) error {
	first := false
	s.serveOnce.Do(func() { first = true })
	if !first {
		return errors.New("p4rtserver: Serve called twice")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		select {
		case <-ctx.Done():
		case <-s.stopped:
		}
		s.grpc.Stop()
	}()
	go func() { defer wg.Done(); s.packetInLoop(ctx) }()
	go func() { defer wg.Done(); s.digestLoop(ctx) }()
	s.log.WithFields(logrus.Fields{"addr": lis.Addr().String(), "security": Security(s.opts.TLS)}).Info("serving P4Runtime")
	if w := ExposureWarning(lis.Addr(), s.opts.TLS); w != "" {
		s.log.WithField("addr", lis.Addr().String()).Warn(w)
	}
	err := s.grpc.Serve(lis)
	cancel()
	wg.Wait()
	if err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("p4rtserver: serve %s: %w", lis.Addr(), err)
	}
	return nil
}

// ListenAndServe listens on a TCP address and serves (see Serve).
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	var lc net.ListenConfig
	lis, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("p4rtserver: listen %s: %w", addr, err)
	}
	return s.Serve(ctx, lis)
}

// Stop closes the listener and every open RPC; Serve then returns.
func (s *Server) Stop() {
	s.stopOnce.Do(func() { close(s.stopped) })
	s.grpc.Stop()
}

// Security names how a server with this TLS config authenticates: "mtls"
// (clients need a certificate of the configured CA), "tls" (encrypted, any
// client) or "plaintext".
func Security(tc *tls.Config) string {
	switch {
	case tc == nil:
		return "plaintext"
	case tc.ClientAuth == tls.RequireAndVerifyClientCert && tc.ClientCAs != nil:
		return "mtls"
	}
	return "tls"
}

// ExposureWarning says what any host that reaches addr can do to a server
// with this TLS config when addr is not a loopback address: without mutual
// TLS, any client may arbitrate with a higher election ID, become primary
// and rewrite every table. It is "" for mTLS and for loopback addresses.
func ExposureWarning(addr net.Addr, tc *tls.Config) string {
	ta, ok := addr.(*net.TCPAddr)
	if !ok || ta.IP.IsLoopback() {
		return ""
	}
	switch Security(tc) {
	case "plaintext":
		return "P4Runtime is served in PLAINTEXT on an address other hosts can reach: any client that reaches it can " +
			"become primary with a higher election ID and rewrite or delete every table entry, unauthenticated. " +
			"Serve it with mutual TLS (--ca-cert-file, --server-cert-file, --server-key-file) or on a loopback address"
	case "tls":
		return "P4Runtime is served over TLS without client certificates on an address other hosts can reach: any " +
			"client that reaches it can become primary and rewrite every table entry. Give --ca-cert-file so that " +
			"clients need a certificate signed by it (mutual TLS)"
	}
	return ""
}

// checkDevice answers NOT_FOUND for another device ID (P4Runtime spec).
func (s *Server) checkDevice(id uint64) error {
	if id != s.opts.DeviceID {
		return errorf(codes.NotFound, "device ID %d unknown (this server is device %d)", id, s.opts.DeviceID)
	}
	return nil
}

// requireConfig answers FAILED_PRECONDITION until a config is committed.
func (s *Server) requireConfig() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.committed == nil {
		return errorf(codes.FailedPrecondition, "no forwarding pipeline config set for this device")
	}
	return nil
}

// Capabilities implements p4.v1.P4Runtime.
func (s *Server) Capabilities(_ context.Context, req *p4v1.CapabilitiesRequest) (*p4v1.CapabilitiesResponse, error) {
	if req.GetDeviceId() != 0 {
		if err := s.checkDevice(req.GetDeviceId()); err != nil {
			return nil, toStatus(err)
		}
	}
	return &p4v1.CapabilitiesResponse{P4RuntimeApiVersion: APIVersion}, nil
}

// SetForwardingPipelineConfig implements p4.v1.P4Runtime.
func (s *Server) SetForwardingPipelineConfig(ctx context.Context, req *p4v1.SetForwardingPipelineConfigRequest) (*p4v1.SetForwardingPipelineConfigResponse, error) {
	log := s.log.WithFields(logrus.Fields{"rpc": "SetForwardingPipelineConfig", "action": req.GetAction().String()})
	if err := s.setPipeline(ctx, req); err != nil {
		log.WithError(err).Warn("pipeline config refused")
		return nil, toStatus(err)
	}
	log.Info("pipeline config done")
	return &p4v1.SetForwardingPipelineConfigResponse{}, nil
}

// verifyConfig is the VERIFY step: INVALID_ARGUMENT "if config is not provided or if
// the provided config cannot be realized" (the only program this target realizes is
// the one its pipeline runs).
func (s *Server) verifyConfig(cfg *p4v1.ForwardingPipelineConfig) error {
	if cfg == nil {
		return errorf(codes.InvalidArgument, "config missing")
	}
	if cfg.GetP4Info() == nil {
		return errorf(codes.InvalidArgument, "config.p4info missing")
	}
	if err := CheckP4Info(cfg.GetP4Info(), s.schema); err != nil {
		return errorf(codes.InvalidArgument, "p4info is not the program this target runs: %v", err)
	}
	return nil
}

// setPipeline runs the spec's checks in its order (device and role: NOT_FOUND; not
// primary: PERMISSION_DENIED), then the action. It holds stateMu throughout, so that a
// change of primary waits for it (see arbitrate).
func (s *Server) setPipeline(ctx context.Context, req *p4v1.SetForwardingPipelineConfigRequest) error {
	if err := s.checkDevice(req.GetDeviceId()); err != nil {
		return err
	}
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	if err := s.checkPrimary(roleKey(req.GetRole(), req.GetRoleId()), req.GetElectionId()); err != nil {
		return err
	}
	switch req.GetAction() {
	case p4v1.SetForwardingPipelineConfigRequest_VERIFY:
		// "The forwarding state in the target is not modified."
		return s.verifyConfig(req.GetConfig())
	case p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_SAVE:
		// Saved, not realized: the committed config (Get) and the forwarding state
		// stay until COMMIT.
		if err := s.verifyConfig(req.GetConfig()); err != nil {
			return err
		}
		s.mu.Lock()
		s.saved = proto.Clone(req.GetConfig()).(*p4v1.ForwardingPipelineConfig)
		s.mu.Unlock()
		return nil
	case p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT:
		// "The forwarding state in the target is cleared."
		if err := s.verifyConfig(req.GetConfig()); err != nil {
			return err
		}
		return s.commitLocked(ctx, proto.Clone(req.GetConfig()).(*p4v1.ForwardingPipelineConfig), true)
	case p4v1.SetForwardingPipelineConfigRequest_COMMIT:
		// "Config should not be provided for this action type. Returns a NOT_FOUND
		// error if no saved config is found [...]. Returns an INVALID_ARGUMENT error
		// if a config is provided with this message."
		if req.GetConfig() != nil {
			return errorf(codes.InvalidArgument, "COMMIT must not carry a config: it commits the one saved by VERIFY_AND_SAVE")
		}
		s.mu.Lock()
		cfg := s.saved
		s.mu.Unlock()
		if cfg == nil {
			return errorf(codes.NotFound, "COMMIT: no saved config (VERIFY_AND_SAVE first)")
		}
		// Writes are not logged between VERIFY_AND_SAVE and COMMIT, so there is
		// nothing to replay: the forwarding state is cleared as by VERIFY_AND_COMMIT
		// (docs/target-p4runtime.md, "Differences from the specification").
		return s.commitLocked(ctx, cfg, true)
	case p4v1.SetForwardingPipelineConfigRequest_RECONCILE_AND_COMMIT:
		// INVALID_ARGUMENT "if no config is provided, or if the existing forwarding
		// state cannot be preserved": the only program this target accepts is the one
		// it runs, so all forwarding state is kept.
		if err := s.verifyConfig(req.GetConfig()); err != nil {
			return err
		}
		return s.commitLocked(ctx, proto.Clone(req.GetConfig()).(*p4v1.ForwardingPipelineConfig), false)
	}
	// UNSPECIFIED (unset) or a value the enum does not have.
	return errorf(codes.InvalidArgument, "action %s not valid: want VERIFY, VERIFY_AND_SAVE, VERIFY_AND_COMMIT, COMMIT or RECONCILE_AND_COMMIT", req.GetAction())
}

// commitLocked makes cfg the committed config; clear resets all forwarding state
// first. stateMu is held.
func (s *Server) commitLocked(ctx context.Context, cfg *p4v1.ForwardingPipelineConfig, clear bool) error {
	if clear {
		if err := s.dp.Exec(ctx, func(p *pipeline.Pipeline) error { p.Reset(); return nil }); err != nil {
			return &codedError{code: codes.Internal, msg: "clear forwarding state", err: err}
		}
		s.entryMeta = make(map[string]entryMeta)
		s.cloneIDs = make(map[uint32]bool)
		s.mcastGroup = make(map[uint32]*p4v1.MulticastGroupEntry)
		s.digestsOn.Store(0)
	}
	s.mu.Lock()
	s.committed, s.saved = cfg, nil
	s.mu.Unlock()
	return nil
}

// knownCloneIDs lists the clone sessions that may exist: those written through this
// server and the program's CNP session (a runtime may install it itself).
func (s *Server) knownCloneIDs() []uint32 {
	ids := []uint32{p4src.CNPCloneSession}
	for id := range s.cloneIDs {
		if id != p4src.CNPCloneSession {
			ids = append(ids, id)
		}
	}
	return ids
}

// GetForwardingPipelineConfig implements p4.v1.P4Runtime: the committed config,
// trimmed to response_type; before any commit the response's config is unset (spec:
// "If a P4Runtime server is in a state where the forwarding-pipeline config is not
// known, the top-level config field will be unset in the response").
func (s *Server) GetForwardingPipelineConfig(_ context.Context, req *p4v1.GetForwardingPipelineConfigRequest) (*p4v1.GetForwardingPipelineConfigResponse, error) {
	if err := s.checkDevice(req.GetDeviceId()); err != nil {
		return nil, toStatus(err)
	}
	rt := req.GetResponseType()
	switch rt {
	case p4v1.GetForwardingPipelineConfigRequest_ALL, p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY,
		p4v1.GetForwardingPipelineConfigRequest_P4INFO_AND_COOKIE, p4v1.GetForwardingPipelineConfigRequest_DEVICE_CONFIG_AND_COOKIE:
	default:
		return nil, toStatus(errorf(codes.InvalidArgument, "response type %d not valid", rt))
	}
	s.mu.Lock()
	cfg := s.committed
	s.mu.Unlock()
	if cfg == nil {
		return &p4v1.GetForwardingPipelineConfigResponse{}, nil
	}
	// The cookie always; p4info and p4_device_config as response_type asks.
	out := &p4v1.ForwardingPipelineConfig{Cookie: cfg.GetCookie()}
	if rt == p4v1.GetForwardingPipelineConfigRequest_ALL || rt == p4v1.GetForwardingPipelineConfigRequest_P4INFO_AND_COOKIE {
		out.P4Info = cfg.GetP4Info()
	}
	if rt == p4v1.GetForwardingPipelineConfigRequest_ALL || rt == p4v1.GetForwardingPipelineConfigRequest_DEVICE_CONFIG_AND_COOKIE {
		out.P4DeviceConfig = cfg.GetP4DeviceConfig()
	}
	return &p4v1.GetForwardingPipelineConfigResponse{Config: proto.Clone(out).(*p4v1.ForwardingPipelineConfig)}, nil
}
