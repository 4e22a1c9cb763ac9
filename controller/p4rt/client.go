package p4rt

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// ArbitrationStatus is what the server last said about this client's role.
type ArbitrationStatus struct {
	Connected bool // a stream channel is up and arbitration answered
	Primary   bool // this client is the primary of its role
	// HasPrimary is false when the server reported no primary (NOT_FOUND).
	HasPrimary bool
	// PrimaryElectionID is the election ID the server reported: the
	// primary's, or the highest seen when there is no primary.
	PrimaryElectionID Uint128
	Code              codes.Code // status code of the last arbitration update
	Message           string
}

// EventType tells what an Event is about.
type EventType int

// Event types.
const (
	// EventArbitration: the first arbitration answer, or primary/backup
	// status or the primary's election ID changed. Reconcile is true when
	// this client was promoted from backup to primary.
	EventArbitration EventType = iota + 1
	// EventDisconnected: the stream channel went away; the client is
	// reconnecting. Err says why.
	EventDisconnected
	// EventReconnected: a new stream channel is up and arbitrated after a
	// disconnection. When Reconcile is true this client is primary and must
	// reconcile: the switch may have restarted and lost its state.
	EventReconnected
	// EventStreamError: the server sent a StreamError (a PacketOut or
	// DigestListAck it could not handle).
	EventStreamError
	// EventDigestsDropped: the Digests buffer was full and a DigestList was
	// dropped. It comes once per run of consecutive drops (the next list
	// delivered ends the run); Digest is the first list dropped in the run,
	// Dropped the total of Stats().DigestsDropped then. Dropped lists were
	// acknowledged all the same (with auto-ack), so the switch does not
	// send them again: their data is lost to the caller.
	EventDigestsDropped
)

// String names the event type.
func (t EventType) String() string {
	switch t {
	case EventArbitration:
		return "arbitration"
	case EventDisconnected:
		return "disconnected"
	case EventReconnected:
		return "reconnected"
	case EventStreamError:
		return "stream-error"
	case EventDigestsDropped:
		return "digests-dropped"
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// Event reports a change of connection or arbitration state.
type Event struct {
	Type        EventType
	Status      ArbitrationStatus
	Reconcile   bool              // this event made the client primary: reconnected as primary, or promoted from backup
	Err         error             // EventDisconnected: the cause
	StreamError *p4v1.StreamError // EventStreamError
	Digest      *DigestList       // EventDigestsDropped: the first list dropped in the run
	Dropped     uint64            // EventDigestsDropped: Stats().DigestsDropped when it was sent
}

// Stats counts messages the client dropped because a consumer was slow,
// and other stream anomalies. All counts are cumulative.
type Stats struct {
	PacketsReceived, PacketsDropped uint64
	DigestsReceived, DigestsDropped uint64
	IdleReceived, IdleDropped       uint64
	EventsDropped                   uint64
	AcksDropped                     uint64
	DecodeErrors                    uint64
	Reconnects                      uint64
	// Takeovers counts re-arbitrations with a raised election ID (WithTakeover).
	Takeovers uint64
}

type counters struct {
	packetsRx, packetsDrop, digestsRx, digestsDrop, idleRx, idleDrop,
	eventsDrop, acksDrop, decodeErr, reconnects, takeovers atomic.Uint64
}

// Client is a P4Runtime client for one device. Its methods are safe for
// concurrent use. Close it to stop its goroutines.
type Client struct {
	cfg      config
	addr     string
	deviceID uint64
	conn     *grpc.ClientConn
	rpc      p4v1.P4RuntimeClient
	log      logrus.FieldLogger
	info     atomic.Pointer[Info]

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once

	mu       sync.Mutex
	status   ArbitrationStatus
	election Uint128 // the election ID in use: the configured one, raised by takeovers
	lastErr  error   // last stream failure, for Dial's error
	stream   p4v1.P4Runtime_StreamChannelClient
	sendMu   sync.Mutex // gRPC streams allow one concurrent sender

	events    chan Event
	reconcile chan struct{} // capacity 1: a pending "reconcile needed", never dropped
	packets   chan *PacketIn
	digests   chan *DigestList
	idle      chan *p4v1.IdleTimeoutNotification
	acks      chan *p4v1.DigestListAck

	up    chan struct{} // closed at the first arbitration answer
	fatal chan error    // a permanent error before the first answer
	n     counters

	// Only the run goroutine touches these.
	digestRun      bool   // the last DigestList was dropped
	digestRunStart uint64 // DigestsDropped before the current run
}

// Dial connects to the P4Runtime server at addr (host:port) for the device
// with the given non-zero ID, opens the stream channel and sends its
// arbitration. It returns once the server has answered the arbitration
// (as primary or backup), retrying with backoff until ctx is done. A
// permanent error (for example a duplicate election ID, INVALID_ARGUMENT)
// fails at once.
func Dial(ctx context.Context, addr string, deviceID uint64, opts ...Option) (*Client, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if deviceID == 0 {
		return nil, fmt.Errorf("p4rt: device ID 0: must be non-zero: %w", ErrInvalidValue)
	}
	if cfg.credsErr != nil {
		return nil, cfg.credsErr
	}
	if cfg.roleConfig != nil && cfg.role == "" {
		return nil, fmt.Errorf("p4rt: role config (%s) without a role name: the default role carries no config: %w",
			cfg.roleConfig.GetTypeUrl(), ErrInvalidValue)
	}
	if err := cfg.backoff.validate(); err != nil {
		return nil, err
	}
	if err := cfg.keepalive.validate(); err != nil {
		return nil, err
	}
	if cfg.chunk <= 0 {
		return nil, fmt.Errorf("p4rt: chunk size %d: %w", cfg.chunk, ErrInvalidValue)
	}
	if cfg.eventBuf <= 0 || cfg.packetBuf <= 0 || cfg.digestBuf <= 0 || cfg.idleBuf <= 0 {
		return nil, fmt.Errorf("p4rt: buffer sizes must be > 0: %w", ErrInvalidValue)
	}
	creds := cfg.creds
	if creds == nil {
		creds = insecure.NewCredentials()
	}
	dopts := append([]grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		// gRPC's own reconnect backoff (default up to 120 s) would hide our
		// schedule; keep it in step with ours.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{BaseDelay: cfg.backoff.Initial, Multiplier: cfg.backoff.Multiplier,
				Jitter: cfg.backoff.Jitter, MaxDelay: cfg.backoff.Max},
			MinConnectTimeout: max(cfg.backoff.Max, time.Second),
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(cfg.maxRecvSize)),
	}, append(cfg.keepalive.dialOptions(), cfg.dialOpts...)...)
	conn, err := grpc.NewClient(addr, dopts...)
	if err != nil {
		return nil, fmt.Errorf("p4rt: dial %s: %w", addr, err)
	}
	c := &Client{
		cfg: cfg, addr: addr, deviceID: deviceID, conn: conn, rpc: p4v1.NewP4RuntimeClient(conn),
		log:       cfg.log.WithFields(logrus.Fields{"addr": addr, "device_id": deviceID, "role": cfg.role, "election_id": cfg.electionID.String()}),
		events:    make(chan Event, cfg.eventBuf),
		reconcile: make(chan struct{}, 1),
		packets:   make(chan *PacketIn, cfg.packetBuf),
		digests:   make(chan *DigestList, cfg.digestBuf),
		idle:      make(chan *p4v1.IdleTimeoutNotification, cfg.idleBuf),
		up:        make(chan struct{}),
		fatal:     make(chan error, 1),
	}
	c.election = cfg.electionID
	if cfg.info != nil {
		c.info.Store(cfg.info)
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.wg.Add(1)
	go c.run()
	select {
	case <-c.up:
		return c, nil
	case err := <-c.fatal:
		c.Close()
		return nil, fmt.Errorf("p4rt: connect %s: %w", addr, err)
	case <-ctx.Done():
		c.Close()
		c.mu.Lock()
		last := c.lastErr
		c.mu.Unlock()
		if last != nil {
			return nil, fmt.Errorf("p4rt: connect %s: %w (last attempt: %v)", addr, ctx.Err(), last)
		}
		return nil, fmt.Errorf("p4rt: connect %s: %w", addr, ctx.Err())
	}
}

// Close stops the stream, the reconnection loop and the gRPC connection,
// waits for every goroutine of the client, and closes the Events,
// ReconcileNeeded, Packets, Digests and IdleTimeouts channels. It is
// idempotent.
func (c *Client) Close() error {
	var err error
	c.once.Do(func() {
		c.cancel()
		c.wg.Wait()
		err = c.conn.Close()
		close(c.events)
		close(c.reconcile)
		close(c.packets)
		close(c.digests)
		close(c.idle)
		c.mu.Lock()
		c.status = ArbitrationStatus{}
		c.mu.Unlock()
	})
	if err != nil {
		return fmt.Errorf("p4rt: close: %w", err)
	}
	return nil
}

// Events delivers connection and arbitration events. It is closed by Close.
// It is bounded (WithBuffers): when full, events are dropped and counted,
// so a caller that must not miss "reconcile" also watches ReconcileNeeded.
func (c *Client) Events() <-chan Event { return c.events }

// ReconcileNeeded receives a value when this client became primary on the
// switch after Dial returned: it reconnected as primary (the switch may have
// restarted empty), or a backup was promoted. The caller should then read
// the switch and rewrite what is missing. It is lossless and coalescing:
// the channel holds one pending signal, whatever the state of the Events
// buffer, and signals that come while one is pending merge into it, so one
// receive stands for every promotion since the last receive. At Dial's
// return check IsPrimary instead. Closed by Close: receive with ", ok".
func (c *Client) ReconcileNeeded() <-chan struct{} { return c.reconcile }

// Packets delivers PacketIn messages. It is closed by Close.
func (c *Client) Packets() <-chan *PacketIn { return c.packets }

// Digests delivers digest lists. It is closed by Close.
func (c *Client) Digests() <-chan *DigestList { return c.digests }

// IdleTimeouts delivers idle timeout notifications. It is closed by Close.
func (c *Client) IdleTimeouts() <-chan *p4v1.IdleTimeoutNotification { return c.idle }

// Status returns the current arbitration status.
func (c *Client) Status() ArbitrationStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}

// IsPrimary reports whether this client is currently the primary.
func (c *Client) IsPrimary() bool { return c.Status().Primary }

// Info returns the P4Info index in use (nil if none).
func (c *Client) Info() *Info { return c.info.Load() }

// SetInfo replaces the P4Info index used to decode stream messages.
func (c *Client) SetInfo(in *Info) { c.info.Store(in) }

// DeviceID returns the device ID.
func (c *Client) DeviceID() uint64 { return c.deviceID }

// ElectionID returns the election ID this client uses now: the configured one,
// or a higher one after a takeover (WithTakeover).
func (c *Client) ElectionID() Uint128 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.election
}

// Stats returns the drop and receive counters.
func (c *Client) Stats() Stats {
	return Stats{
		PacketsReceived: c.n.packetsRx.Load(), PacketsDropped: c.n.packetsDrop.Load(),
		DigestsReceived: c.n.digestsRx.Load(), DigestsDropped: c.n.digestsDrop.Load(),
		IdleReceived: c.n.idleRx.Load(), IdleDropped: c.n.idleDrop.Load(),
		EventsDropped: c.n.eventsDrop.Load(), AcksDropped: c.n.acksDrop.Load(),
		DecodeErrors: c.n.decodeErr.Load(), Reconnects: c.n.reconnects.Load(),
		Takeovers: c.n.takeovers.Load(),
	}
}

func (c *Client) emit(e Event) {
	select {
	case c.events <- e:
	default:
		c.n.eventsDrop.Add(1)
		c.log.WithField("event", e.Type.String()).Warn("p4rt: event buffer full, event dropped")
	}
}

// permanent reports whether a stream error before the first arbitration
// answer will not go away by retrying.
func permanent(err error) bool {
	switch status.Code(err) {
	case codes.InvalidArgument, codes.NotFound, codes.PermissionDenied, codes.FailedPrecondition,
		codes.Unimplemented, codes.Unauthenticated, codes.OutOfRange:
		return true
	}
	return false
}

func (c *Client) run() {
	defer c.wg.Done()
	everUp := false
	attempt := 0
	for {
		up, err := c.session(everUp)
		if c.ctx.Err() != nil {
			return
		}
		if up {
			everUp, attempt = true, 0
			c.mu.Lock()
			c.status.Connected, c.status.Primary = false, false
			st := c.status
			c.mu.Unlock()
			c.log.WithError(err).Warn("p4rt: stream channel lost, reconnecting")
			c.emit(Event{Type: EventDisconnected, Status: st, Err: err})
		} else if !everUp && permanent(err) {
			c.fatal <- err
			return
		}
		c.mu.Lock()
		c.lastErr = err
		c.mu.Unlock()
		d := c.cfg.backoff.Delay(attempt, c.cfg.rand())
		attempt++
		c.log.WithError(err).WithFields(logrus.Fields{"attempt": attempt, "delay": d}).Debug("p4rt: stream channel attempt failed")
		t := time.NewTimer(d)
		select {
		case <-c.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// session runs one stream channel until it fails. up reports whether the
// server answered the arbitration.
func (c *Client) session(everUp bool) (up bool, err error) {
	sctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	stream, err := c.rpc.StreamChannel(sctx)
	if err != nil {
		return false, fmt.Errorf("open stream channel: %w", err)
	}
	c.sendMu.Lock()
	err = stream.Send(c.arbitrationRequest(c.ElectionID()))
	c.sendMu.Unlock()
	if err != nil {
		return false, fmt.Errorf("send arbitration: %w", err)
	}
	acks := &ackQueue{wake: make(chan struct{}, 1)}
	var swg sync.WaitGroup
	defer func() {
		cancel()
		swg.Wait()
		c.mu.Lock()
		if c.stream == stream {
			c.stream = nil
		}
		c.mu.Unlock()
	}()
	swg.Add(1)
	go c.ackSender(sctx, &swg, stream, acks)
	for {
		msg, err := stream.Recv()
		if err != nil {
			return up, fmt.Errorf("stream channel: %w", err)
		}
		switch u := msg.Update.(type) {
		case *p4v1.StreamMessageResponse_Arbitration:
			first := !up
			if first {
				up = true
				c.mu.Lock()
				c.stream = stream
				c.mu.Unlock()
			}
			c.onArbitration(u.Arbitration, first, everUp)
		case *p4v1.StreamMessageResponse_Packet:
			c.onPacket(u.Packet)
		case *p4v1.StreamMessageResponse_Digest:
			c.onDigest(u.Digest, acks)
		case *p4v1.StreamMessageResponse_IdleTimeoutNotification:
			c.n.idleRx.Add(1)
			select {
			case c.idle <- u.IdleTimeoutNotification:
			default:
				c.n.idleDrop.Add(1)
			}
		case *p4v1.StreamMessageResponse_Error:
			c.log.WithFields(logrus.Fields{"code": codes.Code(u.Error.CanonicalCode), "msg": u.Error.Message}).Warn("p4rt: stream error from server")
			c.emit(Event{Type: EventStreamError, Status: c.Status(), StreamError: u.Error})
		}
	}
}

// maxPendingAcks bounds the acks waiting to be sent; past it acks are
// dropped and counted (the switch then re-sends after its ack timeout).
const maxPendingAcks = 1 << 16

// ackQueue holds digest acks between the receive goroutine, which must
// never block, and the ack sender.
type ackQueue struct {
	mu      sync.Mutex
	pending []*p4v1.DigestListAck
	wake    chan struct{}
}

func (q *ackQueue) push(a *p4v1.DigestListAck) bool {
	q.mu.Lock()
	if len(q.pending) >= maxPendingAcks {
		q.mu.Unlock()
		return false
	}
	q.pending = append(q.pending, a)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

func (q *ackQueue) take() []*p4v1.DigestListAck {
	q.mu.Lock()
	defer q.mu.Unlock()
	p := q.pending
	q.pending = nil
	return p
}

// ackSender sends digest acks off the receive goroutine, so that a slow
// server never stalls reception.
func (c *Client) ackSender(ctx context.Context, wg *sync.WaitGroup, s p4v1.P4Runtime_StreamChannelClient, q *ackQueue) {
	defer wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.wake:
		}
		for _, a := range q.take() {
			c.sendMu.Lock()
			err := s.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_DigestAck{DigestAck: a}})
			c.sendMu.Unlock()
			if err != nil {
				c.log.WithError(err).Debug("p4rt: digest ack not sent")
				return
			}
		}
	}
}

// roleProto is the Role of the arbitration update: none for the default
// role, else the name and, if given, the role config. The deprecated
// numeric id (field 1) is never sent.
func (c *Client) roleProto() *p4v1.Role {
	if c.cfg.role == "" {
		return nil
	}
	return &p4v1.Role{Name: c.cfg.role, Config: c.cfg.roleConfig}
}

func (c *Client) onArbitration(a *p4v1.MasterArbitrationUpdate, first, everUp bool) {
	code := codes.Code(a.GetStatus().GetCode())
	st := ArbitrationStatus{
		Connected: true, Primary: code == codes.OK, HasPrimary: code != codes.NotFound,
		PrimaryElectionID: fromProto128(a.GetElectionId()), Code: code, Message: a.GetStatus().GetMessage(),
	}
	c.mu.Lock()
	old := c.status
	// Became primary after Dial returned: reconnected as primary (the
	// status was cleared on disconnection) or promoted from backup. The
	// signal goes before the new status is visible, so that whoever sees
	// IsPrimary also finds it.
	reconcile := st.Primary && !old.Primary && (!first || everUp)
	if reconcile {
		c.needReconcile()
	}
	c.status = st
	takeover, stream := c.takeoverLocked(st)
	c.mu.Unlock()
	log := c.log.WithFields(logrus.Fields{"primary": st.Primary, "primary_election_id": st.PrimaryElectionID.String()})
	if stream != nil {
		log.WithField("new_election_id", takeover.String()).Warn("p4rt: no primary and a higher election ID seen before: taking over")
		c.n.takeovers.Add(1)
		c.sendMu.Lock()
		err := stream.Send(c.arbitrationRequest(takeover))
		c.sendMu.Unlock()
		if err != nil {
			log.WithError(err).Warn("p4rt: takeover arbitration not sent")
		}
	}
	switch {
	case first && everUp:
		c.n.reconnects.Add(1)
		log.Info("p4rt: reconnected and re-arbitrated")
		c.emit(Event{Type: EventReconnected, Status: st, Reconcile: reconcile})
	case first:
		log.Info("p4rt: connected")
		c.emit(Event{Type: EventArbitration, Status: st})
		close(c.up)
	case old.Primary != st.Primary || old.PrimaryElectionID != st.PrimaryElectionID || old.HasPrimary != st.HasPrimary:
		log.Info("p4rt: arbitration changed")
		c.emit(Event{Type: EventArbitration, Status: st, Reconcile: reconcile})
	}
}

// arbitrationRequest is the MasterArbitrationUpdate this client sends with election.
func (c *Client) arbitrationRequest(election Uint128) *p4v1.StreamMessageRequest {
	return &p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{Arbitration: &p4v1.MasterArbitrationUpdate{
		DeviceId: c.deviceID, ElectionId: election.proto(), Role: c.roleProto()}}}
}

// takeoverLocked decides, on an arbitration update, whether to take over a role
// that has no primary. A server that follows the P4Runtime spec remembers the
// highest election ID it has seen and makes nobody primary until a client
// presents at least that one (it reports NOT_FOUND with that ID), so a standby
// with a lower configured ID would wait forever after the primary dies. With
// takeover on, the client raises its ID to the reported one plus its configured
// ID (distinct configured IDs keep distinct, ordered results, so two standbys do
// not collide and the one configured higher wins) and re-arbitrates on stream.
// It returns the new ID and the stream to send it on (nil: nothing to do).
// Called with c.mu held.
func (c *Client) takeoverLocked(st ArbitrationStatus) (Uint128, p4v1.P4Runtime_StreamChannelClient) {
	if !c.cfg.takeover || st.HasPrimary || st.PrimaryElectionID.Less(c.election) || c.stream == nil {
		return Uint128{}, nil
	}
	next, ok := st.PrimaryElectionID.add(c.cfg.electionID)
	if !ok || !c.election.Less(next) {
		return Uint128{}, nil // at the top of the 128-bit range: nothing higher to offer
	}
	c.election = next
	return next, c.stream
}

// needReconcile leaves a "reconcile needed" signal; one already pending
// covers this one too.
func (c *Client) needReconcile() {
	select {
	case c.reconcile <- struct{}{}:
	default:
	}
}

func (c *Client) onPacket(p *p4v1.PacketIn) {
	c.n.packetsRx.Add(1)
	var pi *PacketIn
	if in := c.info.Load(); in != nil {
		var err error
		pi, err = in.DecodePacketIn(p)
		if err != nil {
			c.n.decodeErr.Add(1)
			c.log.WithError(err).Warn("p4rt: packet-in metadata not decoded")
		}
	} else {
		pi = &PacketIn{Payload: p.Payload, Raw: p}
	}
	select {
	case c.packets <- pi:
	default:
		total := c.n.packetsDrop.Add(1)
		if c.cfg.packetDrop != nil {
			c.cfg.packetDrop(pi, total)
		}
	}
}

func (c *Client) onDigest(d *p4v1.DigestList, acks *ackQueue) {
	c.n.digestsRx.Add(1)
	dl := &DigestList{DigestID: d.DigestId, ListID: d.ListId, Timestamp: d.Timestamp, Data: d.Data}
	if in := c.info.Load(); in != nil {
		dl.info = in
		dl.Name = in.DigestName(d.DigestId)
	}
	select {
	case c.digests <- dl:
		if c.digestRun {
			c.digestRun = false
			c.log.WithFields(logrus.Fields{"dropped": c.n.digestsDrop.Load() - c.digestRunStart, "dropped_total": c.n.digestsDrop.Load()}).
				Warn("p4rt: digest delivery resumed; the dropped digest lists are lost (acknowledged, not resent)")
		}
	default:
		total := c.n.digestsDrop.Add(1)
		if !c.digestRun {
			c.digestRun, c.digestRunStart = true, total-1
			c.log.WithFields(logrus.Fields{"digest": dl.Name, "digest_id": dl.DigestID, "list_id": dl.ListID, "dropped_total": total}).
				Warn("p4rt: digest buffer full, dropping digest lists until the consumer catches up")
			c.emit(Event{Type: EventDigestsDropped, Status: c.Status(), Digest: dl, Dropped: total})
		}
	}
	if c.cfg.autoAck {
		if !acks.push(&p4v1.DigestListAck{DigestId: d.DigestId, ListId: d.ListId}) {
			c.n.acksDrop.Add(1)
		}
	}
}

func (c *Client) send(ctx context.Context, m *p4v1.StreamMessageRequest) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.ctx.Err() != nil {
		return ErrClosed
	}
	c.mu.Lock()
	s := c.stream
	c.mu.Unlock()
	if s == nil {
		return ErrNotConnected
	}
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if err := s.Send(m); err != nil {
		return fmt.Errorf("p4rt: stream send: %w", err)
	}
	return nil
}

// SendPacketOut sends a PacketOut on the stream channel (build it with
// Info.PacketOut). Only the primary's packets are accepted by the server.
func (c *Client) SendPacketOut(ctx context.Context, p *p4v1.PacketOut) error {
	return c.send(ctx, &p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Packet{Packet: p}})
}

// PacketOut encodes payload and named "packet_out" metadata with the
// client's P4Info and sends it.
func (c *Client) PacketOut(ctx context.Context, payload []byte, md ...Param) error {
	in := c.info.Load()
	if in == nil {
		return ErrNoP4Info
	}
	p, err := in.PacketOut(payload, md...)
	if err != nil {
		return err
	}
	return c.SendPacketOut(ctx, p)
}

// AckDigest acknowledges a digest list (needed with WithAutoDigestAck(false)).
func (c *Client) AckDigest(ctx context.Context, d *DigestList) error {
	return c.send(ctx, &p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_DigestAck{
		DigestAck: &p4v1.DigestListAck{DigestId: d.DigestID, ListId: d.ListID}}})
}

// SetPipeline sends SetForwardingPipelineConfig with the given action
// (VERIFY, VERIFY_AND_SAVE, VERIFY_AND_COMMIT, COMMIT,
// RECONCILE_AND_COMMIT). cookie 0 sends no cookie. For COMMIT the spec
// wants no config: pass p4info nil. On success of an action that commits,
// the client switches to p4info for decoding.
func (c *Client) SetPipeline(ctx context.Context, action p4v1.SetForwardingPipelineConfigRequest_Action,
	p4info *p4configv1.P4Info, deviceConfig []byte, cookie uint64) error {
	var in *Info
	req := &p4v1.SetForwardingPipelineConfigRequest{DeviceId: c.deviceID, Role: c.cfg.role,
		ElectionId: c.ElectionID().proto(), Action: action}
	if p4info != nil {
		var err error
		if in, err = NewInfo(p4info); err != nil {
			return fmt.Errorf("p4rt: set pipeline: %w", err)
		}
		req.Config = &p4v1.ForwardingPipelineConfig{P4Info: p4info, P4DeviceConfig: deviceConfig}
		if cookie != 0 {
			req.Config.Cookie = &p4v1.ForwardingPipelineConfig_Cookie{Cookie: cookie}
		}
	}
	if err := c.guard("SetForwardingPipelineConfig"); err != nil {
		return err
	}
	if _, err := c.rpc.SetForwardingPipelineConfig(ctx, req); err != nil {
		return rpcError("SetForwardingPipelineConfig "+action.String(), err)
	}
	if in != nil && action != p4v1.SetForwardingPipelineConfigRequest_VERIFY && action != p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_SAVE {
		c.info.Store(in)
	}
	return nil
}

// GetPipeline reads the forwarding pipeline config; rt selects what the
// server returns (ALL, COOKIE_ONLY, P4INFO_AND_COOKIE,
// DEVICE_CONFIG_AND_COOKIE).
func (c *Client) GetPipeline(ctx context.Context, rt p4v1.GetForwardingPipelineConfigRequest_ResponseType) (*p4v1.ForwardingPipelineConfig, error) {
	resp, err := c.rpc.GetForwardingPipelineConfig(ctx, &p4v1.GetForwardingPipelineConfigRequest{DeviceId: c.deviceID, ResponseType: rt})
	if err != nil {
		return nil, rpcError("GetForwardingPipelineConfig", err)
	}
	return resp.GetConfig(), nil
}

// Capabilities returns the server's P4Runtime API version.
func (c *Client) Capabilities(ctx context.Context) (string, error) {
	resp, err := c.rpc.Capabilities(ctx, &p4v1.CapabilitiesRequest{})
	if err != nil {
		return "", rpcError("Capabilities", err)
	}
	return resp.GetP4RuntimeApiVersion(), nil
}
