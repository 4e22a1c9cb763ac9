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
	roleMsg  *p4v1.Role
	election *uint128 // nil: no election ID, never primary
	out      *outbox
}

// roleState is the arbitration state of one role.
type roleState struct {
	clients map[uint64]*client
	primary *client
	highest *uint128 // the highest election ID seen for the role
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

// arbitrationMsg is the MasterArbitrationUpdate for c; s.mu is held.
func (s *Server) arbitrationMsg(rs *roleState, c *client) *p4v1.StreamMessageResponse {
	u := &p4v1.MasterArbitrationUpdate{DeviceId: s.opts.DeviceID, Role: c.roleMsg}
	switch {
	case rs.primary == c:
		u.ElectionId = c.election.proto()
		u.Status = &spb.Status{Code: int32(codes.OK), Message: "primary"}
	case rs.primary != nil:
		u.ElectionId = rs.primary.election.proto()
		u.Status = &spb.Status{Code: int32(codes.AlreadyExists), Message: "backup: another client is primary"}
	default:
		if rs.highest != nil {
			u.ElectionId = rs.highest.proto()
		}
		u.Status = &spb.Status{Code: int32(codes.NotFound), Message: "backup: no primary"}
	}
	return &p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Arbitration{Arbitration: u}}
}

// elect recomputes the primary of rs and notifies: everybody in the role when the
// primary (or its election ID) changed, else only sender (if any); s.mu is held.
func (s *Server) elect(role string, rs *roleState, sender *client, oldPrimary *client, oldElection *uint128) {
	var best *client
	for _, c := range rs.clients {
		if c.election != nil && (best == nil || best.election.less(*c.election)) {
			best = c
		}
	}
	rs.primary = best
	changed := best != oldPrimary || best != nil && (oldElection == nil || *best.election != *oldElection)
	if changed {
		fields := logrus.Fields{"role": role}
		if best != nil {
			fields["primary_stream"], fields["election_id"] = best.id, fmt.Sprintf("%d:%d", best.election.hi, best.election.lo)
		}
		s.log.WithFields(fields).Info("primary changed")
		for _, c := range rs.clients {
			c.out.push(s.arbitrationMsg(rs, c), true)
		}
		return
	}
	if sender != nil {
		sender.out.push(s.arbitrationMsg(rs, sender), true)
	}
}

// arbitrate handles a MasterArbitrationUpdate from c (registered when c.role is set
// by the first one); it returns an error that ends the stream.
func (s *Server) arbitrate(c **client, u *p4v1.MasterArbitrationUpdate, out *outbox) error {
	if err := s.checkDevice(u.GetDeviceId()); err != nil {
		if *c != nil {
			return errorf(codes.FailedPrecondition, "device ID changed to %d on an open stream", u.GetDeviceId())
		}
		return err
	}
	if u.GetRole().GetConfig() != nil {
		return errorf(codes.Unimplemented, "role configs are not supported: every role has full access")
	}
	role := roleKey(u.GetRole().GetName(), u.GetRole().GetId())
	election := electionOf(u.GetElectionId())
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := *c
	if cur != nil && cur.role != role {
		return errorf(codes.FailedPrecondition, "role changed from %q to %q on an open stream", cur.role, role)
	}
	if cur == nil && s.streams >= s.opts.MaxStreams {
		return errorf(codes.ResourceExhausted, "%d streams open, the maximum", s.streams)
	}
	rs := s.roles[role]
	if rs == nil {
		rs = &roleState{clients: make(map[uint64]*client)}
		s.roles[role] = rs
	}
	if election != nil {
		for _, o := range rs.clients {
			if o != cur && o.election != nil && *o.election == *election {
				return errorf(codes.InvalidArgument, "election ID %d:%d is used by another client of role %q", election.hi, election.lo, role)
			}
		}
		if rs.highest == nil || rs.highest.less(*election) {
			h := *election
			rs.highest = &h
		}
	}
	if cur == nil {
		s.streams++
		s.nextID++
		cur = &client{id: s.nextID, role: role, out: out}
		*c = cur
		rs.clients[cur.id] = cur
	}
	if u.GetRole() != nil {
		cur.roleMsg = proto.Clone(u.GetRole()).(*p4v1.Role)
	}
	oldPrimary := rs.primary
	var oldElection *uint128
	if oldPrimary != nil {
		e := *oldPrimary.election
		oldElection = &e
	}
	cur.election = election
	s.elect(role, rs, cur, oldPrimary, oldElection)
	return nil
}

// leave removes c and elects a new primary if c was it.
func (s *Server) leave(c *client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.roles[c.role]
	delete(rs.clients, c.id)
	s.streams--
	oldPrimary := rs.primary
	var oldElection *uint128
	if oldPrimary != nil {
		e := *oldPrimary.election
		oldElection = &e
	}
	if oldPrimary == c {
		s.elect(c.role, rs, nil, oldPrimary, oldElection)
	}
	if len(rs.clients) == 0 && rs.highest == nil {
		delete(s.roles, c.role)
	}
}

// checkPrimary accepts an election ID that is the primary's of role.
func (s *Server) checkPrimary(role string, id *p4v1.Uint128) error {
	e := electionOf(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.roles[role]
	if rs == nil || rs.primary == nil {
		return errorf(codes.PermissionDenied, "role %q has no primary client (open a StreamChannel and arbitrate first)", role)
	}
	if e == nil || *e != *rs.primary.election {
		return errorf(codes.PermissionDenied, "not primary: election ID %v is not the primary's %d:%d for role %q", id, rs.primary.election.hi, rs.primary.election.lo, role)
	}
	return nil
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
