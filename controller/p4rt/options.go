package p4rt

import (
	"crypto/tls"
	"fmt"
	"io"
	"math"
	"math/bits"
	"math/rand/v2"
	"time"

	"github.com/fastcnp/fastcnp/internal/tlsfiles"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// Uint128 is an election ID: High is the more significant half.
type Uint128 struct{ High, Low uint64 }

// Less reports u < o.
func (u Uint128) Less(o Uint128) bool { return u.High < o.High || (u.High == o.High && u.Low < o.Low) }

// add returns u+o and false on overflow.
func (u Uint128) add(o Uint128) (Uint128, bool) {
	lo, carry := bits.Add64(u.Low, o.Low, 0)
	hi, over := bits.Add64(u.High, o.High, carry)
	return Uint128{High: hi, Low: lo}, over == 0
}

// IsZero reports u == 0.
func (u Uint128) IsZero() bool { return u.High == 0 && u.Low == 0 }

// String prints low, or high:low when high is not zero.
func (u Uint128) String() string {
	if u.High == 0 {
		return fmt.Sprint(u.Low)
	}
	return fmt.Sprintf("%d:%d", u.High, u.Low)
}

func (u Uint128) proto() *p4v1.Uint128 { return &p4v1.Uint128{High: u.High, Low: u.Low} }

func fromProto128(p *p4v1.Uint128) Uint128 { return Uint128{High: p.GetHigh(), Low: p.GetLow()} }

// Backoff is the reconnection schedule: attempt n waits
// min(Max, Initial*Multiplier^n), then scaled by a random factor in
// [1-Jitter, 1+Jitter] so that many controllers do not reconnect in step.
type Backoff struct {
	Initial    time.Duration
	Max        time.Duration
	Multiplier float64
	Jitter     float64 // 0..1
}

// DefaultBackoff is used when WithBackoff is not given.
var DefaultBackoff = Backoff{Initial: 100 * time.Millisecond, Max: 10 * time.Second, Multiplier: 2, Jitter: 0.2}

// Delay is the wait before attempt n (0-based); r is a uniform random
// number in [0, 1).
func (b Backoff) Delay(n int, r float64) time.Duration {
	d := float64(b.Initial) * math.Pow(b.Multiplier, float64(n))
	if d > float64(b.Max) || math.IsInf(d, 0) || math.IsNaN(d) {
		d = float64(b.Max)
	}
	d *= 1 + b.Jitter*(2*r-1)
	return time.Duration(d)
}

func (b Backoff) validate() error {
	if b.Initial <= 0 || b.Max < b.Initial || b.Multiplier < 1 || b.Jitter < 0 || b.Jitter > 1 {
		return fmt.Errorf("p4rt: backoff %+v: want 0 < Initial <= Max, Multiplier >= 1, 0 <= Jitter <= 1: %w", b, ErrInvalidValue)
	}
	return nil
}

// Keepalive is the gRPC (HTTP/2 PING) keepalive of the connection: after
// Interval without anything received, the client pings the server and
// drops the connection if no answer comes within Timeout. Timeout also
// becomes the socket's TCP_USER_TIMEOUT (Linux): data the peer has not
// acknowledged for that long ends the connection. Interval 0 turns both off.
type Keepalive struct {
	Interval time.Duration
	Timeout  time.Duration
}

// DefaultKeepalive is used when WithKeepalive is not given. A P4Runtime
// stream channel is a call that stays open but is often idle, and gRPC
// servers allow pings on a connection that sends them no data only every 5
// minutes by default (grpc C++ GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
// grpc-go EnforcementPolicy.MinTime); a client that pings more often is cut
// off with GOAWAY "too_many_pings" after 3 early pings. BMv2's PI server
// keeps that default, so the default interval stays above it, with a
// margin. A silently dead link is then noticed within about
// Interval+Timeout when idle, and within Timeout while the client has
// unacknowledged data in flight. Without keepalive, gRPC's sockets use
// the kernel's TCP keepalive (2 hours on Linux) and retransmission timeout
// (about 15 minutes). Servers that permit more (Stratum allows a ping every
// 10 s) can be given a shorter interval with WithKeepalive.
var DefaultKeepalive = Keepalive{Interval: 6 * time.Minute, Timeout: 20 * time.Second}

// minKeepalive is the shortest interval grpc-go sends pings at: it raises
// shorter ones to it.
const minKeepalive = 10 * time.Second

func (k Keepalive) validate() error {
	if k.Interval == 0 {
		return nil
	}
	if k.Interval < minKeepalive || k.Timeout <= 0 {
		return fmt.Errorf("p4rt: keepalive %+v: want Interval 0 (off) or >= %v (gRPC's minimum), and Timeout > 0: %w",
			k, minKeepalive, ErrInvalidValue)
	}
	return nil
}

type config struct {
	electionID  Uint128
	takeover    bool
	role        string
	roleConfig  *anypb.Any
	creds       credentials.TransportCredentials
	credsErr    error
	backoff     Backoff
	keepalive   Keepalive
	chunk       int
	atomicity   p4v1.WriteRequest_Atomicity
	eventBuf    int
	packetBuf   int
	digestBuf   int
	idleBuf     int
	autoAck     bool
	packetDrop  func(p *PacketIn, dropped uint64)
	writeGuard  func() error
	info        *Info
	log         logrus.FieldLogger
	dialOpts    []grpc.DialOption
	maxRecvSize int
	rand        func() float64
}

func defaultConfig() config {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return config{
		electionID: Uint128{Low: 1}, takeover: true, backoff: DefaultBackoff, keepalive: DefaultKeepalive, chunk: 500,
		eventBuf: 64, packetBuf: 1024, digestBuf: 256, idleBuf: 256, autoAck: true,
		log: l, maxRecvSize: 64 << 20, rand: rand.Float64,
	}
}

// Option configures Dial.
type Option func(*config)

// WithElectionID sets the election ID (default 1). The highest election ID
// of a role is its primary.
func WithElectionID(id Uint128) Option { return func(c *config) { c.electionID = id } }

// WithTakeover sets whether the client takes over a role left without a primary
// (default on). A P4Runtime server that follows the spec never promotes a backup
// whose election ID is below the highest it has seen, so after the primary dies
// a standby must present a higher ID: on an arbitration update that reports no
// primary (NOT_FOUND) with an ID at or above its own, the client re-arbitrates
// with that ID plus its configured ID. Servers that promote the highest backup
// themselves (BMv2) never report NOT_FOUND to a connected backup, so nothing
// changes there. Turn it off to keep the configured ID fixed.
func WithTakeover(on bool) Option { return func(c *config) { c.takeover = on } }

// WithRole sets the role name ("" is the default, full-access role). The
// name goes in every arbitration update, WriteRequest, ReadRequest and
// SetForwardingPipelineConfigRequest.
func WithRole(name string) Option { return func(c *config) { c.role = name } }

// WithRoleConfig attaches a role configuration (P4Runtime v1.4+
// Role.config, a google.protobuf.Any whose format is agreed between the
// controller and the switch) to the arbitration updates of a named role.
// It says which entities and behaviours the role covers; without it the
// role has full pipeline access. cfg is copied. Dial refuses a config
// without WithRole: the default role is sent with no Role message at all,
// so it cannot carry one.
func WithRoleConfig(cfg *anypb.Any) Option {
	var cp *anypb.Any
	if cfg != nil {
		cp = proto.Clone(cfg).(*anypb.Any) // copied now, not when Dial applies it
	}
	return func(c *config) { c.roleConfig = cp }
}

// WithTLS uses TLS with cfg (set cfg.Certificates for mutual TLS).
func WithTLS(cfg *tls.Config) Option {
	return func(c *config) { c.creds = credentials.NewTLS(cfg) }
}

// WithTLSFiles uses TLS with a CA bundle to verify the server and, if
// certFile and keyFile are not empty, a client certificate (mutual TLS).
// serverName overrides the name checked in the server certificate. The
// files are read (each up to tlsfiles.MaxFileSize) when Dial applies the
// option; a problem with them fails Dial with ErrInvalidValue.
func WithTLSFiles(caFile, certFile, keyFile, serverName string) Option {
	return func(c *config) {
		cfg, err := tlsfiles.Client(caFile, certFile, keyFile, serverName)
		if err != nil {
			c.credsErr = fmt.Errorf("p4rt: TLS files: %w: %w", err, ErrInvalidValue)
			return
		}
		c.creds = credentials.NewTLS(cfg)
	}
}

// WithBackoff sets the reconnection schedule.
func WithBackoff(b Backoff) Option { return func(c *config) { c.backoff = b } }

// WithChunkSize sets how many updates go in one WriteRequest (default 500).
func WithChunkSize(n int) Option { return func(c *config) { c.chunk = n } }

// WithAtomicity sets the WriteRequest atomicity (default CONTINUE_ON_ERROR,
// the only mode BMv2 supports).
func WithAtomicity(a p4v1.WriteRequest_Atomicity) Option {
	return func(c *config) { c.atomicity = a }
}

// WithBuffers sets the capacity of the Events, Packets, Digests and
// IdleTimeouts channels. When a channel is full the message is dropped and
// counted in Stats: the stream receiver never blocks on a slow consumer.
func WithBuffers(events, packets, digests, idle int) Option {
	return func(c *config) { c.eventBuf, c.packetBuf, c.digestBuf, c.idleBuf = events, packets, digests, idle }
}

// WithPacketDropHandler calls fn for every PacketIn dropped because the
// Packets channel was full (WithBuffers), with the packet and the number
// of packet-ins dropped so far (Stats().PacketsDropped). fn runs on the
// stream's receive goroutine: it must be quick and must not block (count,
// log; not handle the packet).
func WithPacketDropHandler(fn func(p *PacketIn, dropped uint64)) Option {
	return func(c *config) { c.packetDrop = fn }
}

// WithWriteGuard sets a fence that Write consults before every WriteRequest
// it sends and SetPipeline before SetForwardingPipelineConfig: an error
// from guard stops the call before anything is sent, and the call returns
// it (errors.Is finds it). A controller whose right to write can lapse (a
// leader whose lease may have expired) checks it there, as close to the
// send as the client can; the switch's own arbitration (the election ID of
// every write) fences what gets past it.
func WithWriteGuard(guard func() error) Option { return func(c *config) { c.writeGuard = guard } }

// WithAutoDigestAck sets whether the client acknowledges every DigestList
// as soon as it has been queued or dropped (default true). With false, call
// Client.AckDigest after processing. Until a list is acknowledged (or its
// DigestEntry ack timeout expires) the server does not report the same
// digest data again, so an ack is what re-arms duplicate suppression.
func WithAutoDigestAck(on bool) Option { return func(c *config) { c.autoAck = on } }

// WithInfo gives the client a P4Info index for decoding PacketIn metadata
// and digests (SetPipeline sets it too).
func WithInfo(in *Info) Option { return func(c *config) { c.info = in } }

// WithLogger sets the logger (default: discard).
func WithLogger(l logrus.FieldLogger) Option { return func(c *config) { c.log = l } }

// WithKeepalive sets the keepalive (default DefaultKeepalive: 6 min, 20
// s): gRPC pings the server after every interval without anything received
// and drops the connection when no answer comes within timeout, so that a
// link that dies silently (no RST) still ends the stream and triggers
// reconnection. Pings go only while a call is open (the stream channel
// always is while connected). The interval must not be shorter than the
// switch's gRPC server permits (5 minutes unless configured; see
// DefaultKeepalive), or the server closes the connection with
// "too_many_pings". Dial refuses an interval below 10 s (gRPC's floor)
// or a timeout <= 0; WithKeepalive(0, 0) turns keepalive off.
func WithKeepalive(interval, timeout time.Duration) Option {
	return func(c *config) { c.keepalive = Keepalive{Interval: interval, Timeout: timeout} }
}

func (k Keepalive) dialOptions() []grpc.DialOption {
	if k.Interval == 0 {
		return nil
	}
	return []grpc.DialOption{grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: k.Interval, Timeout: k.Timeout})}
}

// WithDialOptions appends raw gRPC dial options.
func WithDialOptions(o ...grpc.DialOption) Option {
	return func(c *config) { c.dialOpts = append(c.dialOpts, o...) }
}
