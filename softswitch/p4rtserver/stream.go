package p4rtserver

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/fastcnp/fastcnp/model/pipeline"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"github.com/sirupsen/logrus"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/emptypb"
)

// uint128 is an election ID.
type uint128 struct{ hi, lo uint64 }

func (a uint128) less(b uint128) bool { return a.hi < b.hi || a.hi == b.hi && a.lo < b.lo }

func (a uint128) proto() *p4v1.Uint128 { return &p4v1.Uint128{High: a.hi, Low: a.lo} }

func electionOf(u *p4v1.Uint128) *uint128 {
	if u == nil {
		return nil
	}
	return &uint128{u.GetHigh(), u.GetLow()}
}

// roleKey names a role: its name, or for the deprecated numeric role ID "#id". The
// default role is "".
func roleKey(name string, id uint64) string {
	if name == "" && id != 0 {
		return fmt.Sprintf("#%d", id)
	}
	return name
}

// client is one StreamChannel session.
type client struct {
	id       uint64
	role     string
	roleMsg  *p4v1.Role // the Role of the client's last arbitration update (nil: default role)
	election *uint128   // nil: no election ID, never primary
	out      *outbox
}

// roleState is the arbitration state of one (device, role). It outlives its streams:
// highest is remembered until the server restarts (P4Runtime spec, "Client
// Arbitration Update": "a full restart is the only way to reset the election_id").
type roleState struct {
	clients map[uint64]*client
	primary *client    // nil: no primary
	highest *uint128   // election_id_past: the highest election ID seen for the role; nil: never a primary
	config  *anypb.Any // the role config last received from a primary, echoed in updates
}

// outbox queues a stream's outgoing messages: control messages (arbitration, stream
// errors) are never dropped, data (packet-ins, digest lists) beyond a bound is.
type outbox struct {
	mu      sync.Mutex
	ctrl    []*p4v1.StreamMessageResponse
	data    []*p4v1.StreamMessageResponse
	dataCap int
	dropped uint64
	wake    chan struct{}
}

func newOutbox(dataCap int) *outbox {
	return &outbox{dataCap: dataCap, wake: make(chan struct{}, 1)}
}

// push queues m; it returns the number of data messages dropped so far when m was
// dropped, else 0.
func (o *outbox) push(m *p4v1.StreamMessageResponse, ctrl bool) uint64 {
	o.mu.Lock()
	var dropped uint64
	switch {
	case ctrl:
		o.ctrl = append(o.ctrl, m)
	case len(o.data) < o.dataCap:
		o.data = append(o.data, m)
	default:
		o.dropped++
		dropped = o.dropped
	}
	o.mu.Unlock()
	if dropped > 0 {
		return dropped
	}
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return 0
}

func (o *outbox) pop() *p4v1.StreamMessageResponse {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.ctrl) > 0 {
		m := o.ctrl[0]
		o.ctrl = o.ctrl[1:]
		return m
	}
	if len(o.data) > 0 {
		m := o.data[0]
		o.data = o.data[1:]
		return m
	}
	return nil
}

// sendLoop sends queued messages until ctx ends or a send fails.
func (o *outbox) sendLoop(ctx context.Context, send func(*p4v1.StreamMessageResponse) error) error {
	for {
		m := o.pop()
		if m == nil {
			select {
			case <-o.wake:
				continue
			case <-ctx.Done():
				return nil
			}
		}
		if err := send(m); err != nil {
			return fmt.Errorf("stream send: %w", err)
		}
	}
}

// arbitrationMsg is the MasterArbitrationUpdate for c (spec "Client Arbitration
// Notifications"): the role as c gave it with the role config last received from a
// primary; election_id the highest seen for the role (unset if there never was a
// primary); status OK for the primary, ALREADY_EXISTS for a backup while there is a
// primary, NOT_FOUND while there is none. s.mu is held.
func (s *Server) arbitrationMsg(rs *roleState, c *client) *p4v1.StreamMessageResponse {
	u := &p4v1.MasterArbitrationUpdate{DeviceId: s.opts.DeviceID}
	if c.roleMsg != nil || rs.config != nil {
		u.Role = &p4v1.Role{Id: c.roleMsg.GetId(), Name: c.roleMsg.GetName(), Config: rs.config} // Id: the deprecated numeric role, echoed as given
	}
	if rs.highest != nil {
		u.ElectionId = rs.highest.proto()
	}
	switch {
	case rs.primary == c:
		u.Status = &spb.Status{Code: int32(codes.OK), Message: "primary"}
	case rs.primary != nil:
		u.Status = &spb.Status{Code: int32(codes.AlreadyExists), Message: "backup: another client is primary"}
	default:
		u.Status = &spb.Status{Code: int32(codes.NotFound), Message: "backup: the role has no primary"}
	}
	return &p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Arbitration{Arbitration: u}}
}

// notify sends every client of rs its arbitration update; s.mu is held.
func (s *Server) notify(rs *roleState) {
	for _, c := range rs.clients {
		c.out.push(s.arbitrationMsg(rs, c), true)
	}
}

// checkRoleConfig accepts the role configs this server understands. It has no role
// definition scheme (spec "Role Config": schemes are agreed out of band), so every
// role has full pipeline access and the only configs it accepts are those that say
// so: unset, an empty Any, or google.protobuf.Empty.
func checkRoleConfig(cfg *anypb.Any) error {
	if cfg == nil || cfg.GetTypeUrl() == "" && len(cfg.GetValue()) == 0 {
		return nil
	}
	var empty emptypb.Empty
	if cfg.MessageIs(&empty) {
		if err := cfg.UnmarshalTo(&empty); err != nil {
			return errorf(codes.InvalidArgument, "role config %s: %v", cfg.GetTypeUrl(), err)
		}
		return nil
	}
	return errorf(codes.InvalidArgument, "role config of type %q not understood: this server has no role definition scheme, every role has full pipeline access (leave role.config unset)", cfg.GetTypeUrl())
}

// arbitrate handles a MasterArbitrationUpdate from c (registered when c.role is set
// by the first one) following the spec's "Rules for Handling MasterArbitrationUpdate
// Messages Received from Controllers"; an error ends the stream.
func (s *Server) arbitrate(c **client, u *p4v1.MasterArbitrationUpdate, out *outbox) error {
	cur := *c
	if err := s.checkDevice(u.GetDeviceId()); err != nil {
		if cur != nil {
			return errorf(codes.FailedPrecondition, "device ID changed to %d on an open stream", u.GetDeviceId())
		}
		return err
	}
	role := roleKey(u.GetRole().GetName(), u.GetRole().GetId())
	if cur != nil && cur.role != role {
		return errorf(codes.FailedPrecondition, "role changed from %q to %q on an open stream", cur.role, role)
	}
	if err := checkRoleConfig(u.GetRole().GetConfig()); err != nil {
		return err
	}
	election := electionOf(u.GetElectionId())
	// A change of primary waits for the Write and SetForwardingPipelineConfig calls
	// in progress (they hold stateMu): the spec's "The server will finish processing
	// any Write requests that have already started" before the new primary is
	// accepted. Lock order: stateMu, then mu.
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.roles[role]
	if election != nil && rs != nil {
		for _, o := range rs.clients {
			if o != cur && o.election != nil && *o.election == *election {
				return errorf(codes.InvalidArgument, "election ID %d:%d is used by another client of role %q", election.hi, election.lo, role)
			}
		}
	}
	if cur == nil && s.streams >= s.opts.MaxStreams {
		return errorf(codes.ResourceExhausted, "%d streams open, the maximum", s.streams)
	}
	if rs == nil {
		rs = &roleState{clients: make(map[uint64]*client)}
		s.roles[role] = rs
	}
	if cur == nil {
		s.streams++
		s.nextID++
		cur = &client{id: s.nextID, role: role, out: out}
		*c = cur
		rs.clients[cur.id] = cur
	}
	cur.roleMsg = nil
	if u.GetRole() != nil {
		cur.roleMsg = proto.Clone(u.GetRole()).(*p4v1.Role)
	}
	cur.election = election
	wasPrimary := rs.primary == cur
	fields := logrus.Fields{"role": role, "stream": cur.id}
	if election != nil {
		fields["election_id"] = fmt.Sprintf("%d:%d", election.hi, election.lo)
	}
	tellAll := false
	if election != nil && (rs.highest == nil || !election.less(*rs.highest)) {
		// "If election_id is greater than or equal to election_id_past, then the
		// controller becomes, or stays, primary": the role config becomes its, the
		// highest election ID is updated, and every client of the role is told.
		h := *election
		rs.primary, rs.highest, rs.config = cur, &h, cur.roleMsg.GetConfig()
		if !wasPrimary {
			s.log.WithFields(fields).Info("primary changed")
		}
		tellAll = true
	} else if wasPrimary {
		// "Otherwise, the controller becomes a backup. If the controller was
		// previously a primary (and downgraded itself), then an advisory message is
		// sent to all controllers"; the role has no primary.
		rs.primary = nil
		s.log.WithFields(fields).Info("primary downgraded itself: the role has no primary")
		tellAll = true
	}
	if rs.primary == nil && s.promote(rs) {
		tellAll = true
	}
	if tellAll {
		s.notify(rs)
	} else {
		// "Otherwise, the advisory message is only sent to the controller that sent
		// the initial MasterArbitrationUpdate."
		cur.out.push(s.arbitrationMsg(rs, cur), true)
	}
	return nil
}

// promote makes the live client with the highest election ID primary when
// Options.PromoteHighestBackup is set (BMv2's behaviour, not the spec's), lowering
// the role's highest election ID to its; it reports whether it did. s.mu is held.
func (s *Server) promote(rs *roleState) bool {
	if !s.opts.PromoteHighestBackup {
		return false
	}
	var best *client
	for _, c := range rs.clients {
		if c.election != nil && (best == nil || best.election.less(*c.election)) {
			best = c
		}
	}
	if best == nil {
		return false
	}
	h := *best.election
	rs.primary, rs.highest, rs.config = best, &h, best.roleMsg.GetConfig()
	s.log.WithFields(logrus.Fields{"role": best.role, "stream": best.id, "election_id": fmt.Sprintf("%d:%d", h.hi, h.lo)}).
		Info("primary changed: highest backup promoted (PromoteHighestBackup)")
	return true
}

// leave removes c. When c was primary the role has no primary until a client sends an
// election ID at least the highest seen (spec: "The P4Runtime server will be without
// a primary controller, until a client sends a successful MasterArbitrationUpdate"),
// and the remaining clients are told.
func (s *Server) leave(c *client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.roles[c.role]
	delete(rs.clients, c.id)
	s.streams--
	if rs.primary == c {
		rs.primary = nil
		s.log.WithFields(logrus.Fields{"role": c.role, "stream": c.id}).Info("primary left: the role has no primary")
		s.promote(rs)
		s.notify(rs)
	}
	if len(rs.clients) == 0 && rs.highest == nil {
		delete(s.roles, c.role) // nothing to remember
	}
}

// checkPrimary is the arbitration check of Write and SetForwardingPipelineConfig
// (spec, in this order): NOT_FOUND when "role does not match any of the roles for
// the device", i.e. no controller has arbitrated for it (since the server started);
// PERMISSION_DENIED when "the client is not the primary for (device_id, role)
// according to the election_id value" (also while the role has no primary).
func (s *Server) checkPrimary(role string, id *p4v1.Uint128) error {
	e := electionOf(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.roles[role]
	if rs == nil {
		return errorf(codes.NotFound, "role %s unknown: no controller has arbitrated for it (open a StreamChannel and arbitrate first)", roleName(role))
	}
	if rs.primary == nil {
		return errorf(codes.PermissionDenied, "role %s has no primary (the primary left or downgraded; a client must arbitrate with an election ID of at least the highest seen)", roleName(role))
	}
	if e == nil || *e != *rs.primary.election {
		return errorf(codes.PermissionDenied, "not primary: election ID %v is not the primary's %d:%d for role %s", id, rs.primary.election.hi, rs.primary.election.lo, roleName(role))
	}
	return nil
}

// roleName is role for messages.
func roleName(role string) string {
	if role == "" {
		return "(default role)"
	}
	return fmt.Sprintf("%q", role)
}

// isPrimary reports whether c is the primary of its role.
func (s *Server) isPrimary(c *client) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.roles[c.role]
	return rs != nil && rs.primary == c
}

// primaries returns the outboxes of every role's primary.
func (s *Server) primaries() []*outbox {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*outbox
	for _, rs := range s.roles {
		if rs.primary != nil {
			out = append(out, rs.primary.out)
		}
	}
	return out
}

func streamError(code codes.Code, msg string) *p4v1.StreamError {
	return &p4v1.StreamError{CanonicalCode: int32(code), Message: msg}
}

// StreamChannel implements p4.v1.P4Runtime.
func (s *Server) StreamChannel(stream grpc.BidiStreamingServer[p4v1.StreamMessageRequest, p4v1.StreamMessageResponse]) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	first, err := stream.Recv()
	if err != nil {
		return nil // the client went away before saying anything
	}
	if first.GetArbitration() == nil {
		return toStatus(errorf(codes.FailedPrecondition, "the first message on a stream must be a MasterArbitrationUpdate"))
	}
	out := newOutbox(s.opts.StreamQueue)
	var c *client
	if err := s.arbitrate(&c, first.GetArbitration(), out); err != nil {
		s.log.WithError(err).Warn("stream refused")
		return toStatus(err)
	}
	log := s.log.WithFields(logrus.Fields{"stream": c.id, "role": c.role})
	log.Info("stream open")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := out.sendLoop(ctx, stream.Send); err != nil {
			log.WithError(err).Debug("stream send ended")
			cancel()
		}
	}()
	defer func() {
		s.leave(c)
		cancel()
		wg.Wait()
		log.Info("stream closed")
	}()
	for {
		m, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("stream %d recv: %w", c.id, err)
		}
		switch u := m.GetUpdate().(type) {
		case *p4v1.StreamMessageRequest_Arbitration:
			if err := s.arbitrate(&c, u.Arbitration, out); err != nil {
				log.WithError(err).Warn("arbitration refused; closing stream")
				return toStatus(err)
			}
		case *p4v1.StreamMessageRequest_Packet:
			if e := s.packetOut(ctx, c, u.Packet); e != nil {
				e.Details = &p4v1.StreamError_PacketOut{PacketOut: &p4v1.PacketOutError{PacketOut: u.Packet}}
				out.push(&p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Error{Error: e}}, true)
			}
		case *p4v1.StreamMessageRequest_DigestAck:
			if e := s.digestAck(ctx, c, u.DigestAck); e != nil {
				e.Details = &p4v1.StreamError_DigestListAck{DigestListAck: &p4v1.DigestListAckError{DigestListAck: u.DigestAck}}
				out.push(&p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Error{Error: e}}, true)
			}
		default:
			e := streamError(codes.Unimplemented, "stream message type not supported")
			e.Details = &p4v1.StreamError_Other{Other: &p4v1.StreamOtherError{Other: m.GetOther()}}
			out.push(&p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Error{Error: e}}, true)
		}
	}
}

// packetOut decodes a PacketOut and hands it to the data plane; a problem becomes a
// StreamError on the sender's stream.
func (s *Server) packetOut(ctx context.Context, c *client, po *p4v1.PacketOut) *p4v1.StreamError {
	if !s.isPrimary(c) {
		return streamError(codes.PermissionDenied, "packet-out from a client that is not primary")
	}
	if err := s.requireConfig(); err != nil {
		return streamError(codes.FailedPrecondition, err.Error())
	}
	md := s.packetMeta("packet_out")
	if md == nil {
		return streamError(codes.FailedPrecondition, "the program has no packet_out header")
	}
	vals := make([]uint64, len(md.Fields))
	widths := make([]int, len(md.Fields))
	seen := make([]bool, len(md.Fields))
	for i, f := range md.Fields {
		widths[i] = f.Bitwidth
	}
	for _, m := range po.GetMetadata() {
		idx := -1
		for i, f := range md.Fields {
			if f.ID == m.GetMetadataId() {
				idx = i
			}
		}
		if idx < 0 {
			return streamError(codes.InvalidArgument, fmt.Sprintf("packet_out metadata ID %d unknown", m.GetMetadataId()))
		}
		if seen[idx] {
			return streamError(codes.InvalidArgument, fmt.Sprintf("packet_out metadata %s repeated", md.Fields[idx].Name))
		}
		seen[idx] = true
		v, err := decodeBits(m.GetValue(), md.Fields[idx].Bitwidth, "packet_out "+md.Fields[idx].Name)
		if err != nil {
			return streamError(codes.InvalidArgument, err.Error())
		}
		vals[idx] = v
	}
	for i, f := range md.Fields {
		// Padding may be omitted; every real field must be given.
		if !seen[i] && f.Name != "pad" && f.Name != "_pad" {
			return streamError(codes.InvalidArgument, fmt.Sprintf("packet_out metadata %s missing", f.Name))
		}
	}
	hdr, err := packHeader(widths, vals)
	if err != nil {
		return streamError(codes.Internal, err.Error())
	}
	frame := append(hdr, po.GetPayload()...)
	if err := s.dp.PacketOut(ctx, frame); err != nil {
		code := codes.Unavailable
		if codeOf(err) != codes.Internal {
			code = codeOf(err)
		}
		return streamError(code, fmt.Sprintf("packet-out: %v", err))
	}
	return nil
}

func (s *Server) packetMeta(name string) *pipeline.PacketMetadataInfo {
	for i := range s.schema.PacketMetadata {
		if s.schema.PacketMetadata[i].Name == name {
			return &s.schema.PacketMetadata[i]
		}
	}
	return nil
}

// digestAck acknowledges a digest list; acks for lists already forgotten are ignored.
func (s *Server) digestAck(ctx context.Context, c *client, a *p4v1.DigestListAck) *p4v1.StreamError {
	if !s.isPrimary(c) {
		return streamError(codes.PermissionDenied, "digest ack from a client that is not primary")
	}
	if _, ok := s.schema.Digest(a.GetDigestId()); !ok {
		return streamError(codes.InvalidArgument, fmt.Sprintf("digest ID %#x unknown", a.GetDigestId()))
	}
	err := s.dp.Exec(ctx, func(p *pipeline.Pipeline) error { return p.AckDigestList(a.GetDigestId(), a.GetListId()) })
	if err != nil && codeOf(wrapPipeline(err)) != codes.NotFound {
		return streamError(codeOf(wrapPipeline(err)), err.Error())
	}
	return nil
}

// pushData queues a packet-in or digest list; drops are logged (the first, then every
// 1000th) because the controller loses data.
func (s *Server) pushData(o *outbox, m *p4v1.StreamMessageResponse, what string) {
	if n := o.push(m, false); n == 1 || (n > 0 && n%1000 == 0) {
		s.log.WithFields(logrus.Fields{"what": what, "dropped": n}).Warn("stream queue full: dropping")
	}
}

// packetInLoop sends the data plane's packet-ins to every primary.
func (s *Server) packetInLoop(ctx context.Context) {
	ch := s.dp.PacketIns()
	if ch == nil {
		return
	}
	md := s.packetMeta("packet_in")
	for {
		select {
		case <-ctx.Done():
			return
		case pin, ok := <-ch:
			if !ok {
				return
			}
			if s.requireConfig() != nil || md == nil {
				continue
			}
			msg := &p4v1.PacketIn{Payload: pin.Payload}
			for _, f := range md.Fields {
				var v uint64
				switch f.Name {
				case "ingress_port":
					v = uint64(pin.Meta.IngressPort)
				case "reason":
					v = uint64(pin.Meta.Reason)
				}
				msg.Metadata = append(msg.Metadata, &p4v1.PacketMetadata{MetadataId: f.ID, Value: encodeBits(v)})
			}
			for _, o := range s.primaries() {
				s.pushData(o, &p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Packet{Packet: msg}}, "packet-in")
			}
		}
	}
}

// digestLoop polls the pipeline's digest queues and sends ready lists to every
// primary. Without a primary the digests wait in the pipeline.
func (s *Server) digestLoop(ctx context.Context) {
	t := time.NewTicker(s.opts.DigestPollInterval)
	defer t.Stop()
	var list pipeline.DigestList
	var fields []uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if s.digestsOn.Load() == 0 || s.requireConfig() != nil {
			continue
		}
		prim := s.primaries()
		if len(prim) == 0 {
			continue
		}
		var msgs []*p4v1.DigestList
		now := s.dp.Now()
		err := s.dp.Exec(ctx, func(p *pipeline.Pipeline) error {
			for range maxListsPerPoll {
				if !p.PollDigestList(now, &list) {
					break
				}
				dl := &p4v1.DigestList{DigestId: list.DigestID, ListId: list.ListID, Timestamp: time.Now().UnixNano()}
				for i := range list.Digests {
					fields = list.Digests[i].AppendFields(fields[:0])
					st := &p4v1.P4StructLike{}
					for _, v := range fields {
						st.Members = append(st.Members, &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: encodeBits(v)}})
					}
					dl.Data = append(dl.Data, &p4v1.P4Data{Data: &p4v1.P4Data_Struct{Struct: st}})
				}
				msgs = append(msgs, dl)
			}
			return nil
		})
		if err != nil {
			if ctx.Err() == nil {
				s.log.WithError(err).Warn("digest poll failed")
			}
			continue
		}
		for _, dl := range msgs {
			for _, o := range prim {
				s.pushData(o, &p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Digest{Digest: dl}}, "digest list")
			}
		}
	}
}
