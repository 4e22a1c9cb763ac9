// Package p4rttest is an in-process P4Runtime server for testing the p4rt
// client over real gRPC on loopback. It implements what the client needs
// and nothing more: arbitration per device and role (the highest election
// ID is primary, every change is told to every controller of the role),
// Write with recorded requests and injectable per-update errors, Read of
// stored entities with wildcards, Set/GetForwardingPipelineConfig, and the
// stream's packets and digests. It is test infrastructure, not a switch.
package p4rttest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"google.golang.org/genproto/googleapis/rpc/code"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// Server is the fake P4Runtime server. Configure it through its exported
// methods; all are safe for concurrent use.
type Server struct {
	p4v1.UnimplementedP4RuntimeServer

	deviceID uint64
	gs       *grpc.Server
	lis      net.Listener
	done     chan struct{}

	mu          sync.Mutex
	ctrls       map[string][]*ctrl // by role name
	store       []*p4v1.Entity
	writeReqs   int
	writeSizes  []int
	writeOrder  []*p4v1.Update
	failUpdate  func(*p4v1.Update) *p4v1.Error
	regUnimpl   bool
	pipeline    *p4v1.ForwardingPipelineConfig
	pipeActions []p4v1.SetForwardingPipelineConfigRequest_Action
	packetOuts  chan *p4v1.PacketOut
	acks        chan *p4v1.DigestListAck
	recordOrder bool
	discard     bool
	arbs        []*p4v1.MasterArbitrationUpdate
}

type ctrl struct {
	eid     p4v1.Uint128
	role    string
	roleMsg *p4v1.Role // as the controller sent it (name and config)
	stream  grpc.BidiStreamingServer[p4v1.StreamMessageRequest, p4v1.StreamMessageResponse]
	sendMu  sync.Mutex
}

func (c *ctrl) send(m *p4v1.StreamMessageResponse) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	return c.stream.Send(m)
}

func less(a, b *p4v1.Uint128) bool {
	return a.High < b.High || (a.High == b.High && a.Low < b.Low)
}

// Start listens on addr ("127.0.0.1:0" for any port) and serves device
// deviceID until Stop.
func Start(addr string, deviceID uint64) (*Server, error) { return StartWith(addr, deviceID) }

// StartWith is Start with gRPC server options (grpc.Creds for TLS).
func StartWith(addr string, deviceID uint64, opts ...grpc.ServerOption) (*Server, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("p4rttest: listen %s: %w", addr, err)
	}
	s := &Server{deviceID: deviceID, gs: grpc.NewServer(opts...), lis: lis, done: make(chan struct{}),
		ctrls: map[string][]*ctrl{}, packetOuts: make(chan *p4v1.PacketOut, 1024),
		acks: make(chan *p4v1.DigestListAck, 1024), recordOrder: true}
	p4v1.RegisterP4RuntimeServer(s.gs, s)
	go func() {
		defer close(s.done)
		_ = s.gs.Serve(lis)
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Stop closes every stream and connection at once (like a switch that
// dies) and waits for the server's goroutines.
func (s *Server) Stop() {
	s.gs.Stop()
	<-s.done
}

// FailUpdates makes Write fail each update for which f returns a non-nil
// error (nil f: no failures). The others are applied.
func (s *Server) FailUpdates(f func(*p4v1.Update) *p4v1.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failUpdate = f
}

// RegistersUnimplemented makes register reads and writes answer
// UNIMPLEMENTED, as BMv2 does.
func (s *Server) RegistersUnimplemented(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.regUnimpl = on
}

// RecordOrder turns recording of every written update off (benchmarks).
func (s *Server) RecordOrder(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recordOrder = on
}

// Discard makes Write accept every update without storing it, so that
// benchmarks measure the client and the transport, not the fake's store.
func (s *Server) Discard(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.discard = on
}

// WriteRequests returns the number of WriteRequests received and the
// number of updates in each.
func (s *Server) WriteRequests() (int, []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeReqs, append([]int(nil), s.writeSizes...)
}

// Written returns every update received, in arrival order.
func (s *Server) Written() []*p4v1.Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*p4v1.Update(nil), s.writeOrder...)
}

// Stored returns the entities currently stored.
func (s *Server) Stored() []*p4v1.Entity {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*p4v1.Entity(nil), s.store...)
}

// Put stores an entity directly (as if written).
func (s *Server) Put(e *p4v1.Entity) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.store = append(s.store, e)
}

// PipelineActions returns the actions of every SetForwardingPipelineConfig.
func (s *Server) PipelineActions() []p4v1.SetForwardingPipelineConfigRequest_Action {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]p4v1.SetForwardingPipelineConfigRequest_Action(nil), s.pipeActions...)
}

// PacketOuts delivers the PacketOuts received from the primary.
func (s *Server) PacketOuts() <-chan *p4v1.PacketOut { return s.packetOuts }

// DigestAcks delivers the DigestListAcks received.
func (s *Server) DigestAcks() <-chan *p4v1.DigestListAck { return s.acks }

// Arbitrations returns a copy of every MasterArbitrationUpdate received on
// any stream channel, in arrival order, as the controllers sent them.
func (s *Server) Arbitrations() []*p4v1.MasterArbitrationUpdate {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*p4v1.MasterArbitrationUpdate, len(s.arbs))
	for i, a := range s.arbs {
		out[i] = proto.Clone(a).(*p4v1.MasterArbitrationUpdate)
	}
	return out
}

// Controllers returns the number of controllers with an open stream.
func (s *Server) Controllers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, cs := range s.ctrls {
		n += len(cs)
	}
	return n
}

func (s *Server) primaryLocked(role string) *ctrl {
	var p *ctrl
	for _, c := range s.ctrls[role] {
		if p == nil || less(&p.eid, &c.eid) {
			p = c
		}
	}
	return p
}

// toPrimary sends m to the primary of the default role.
func (s *Server) toPrimary(m *p4v1.StreamMessageResponse) error {
	s.mu.Lock()
	p := s.primaryLocked("")
	s.mu.Unlock()
	if p == nil {
		return errors.New("p4rttest: no primary")
	}
	return p.send(m)
}

// SendPacketIn sends a PacketIn to the primary controller.
func (s *Server) SendPacketIn(p *p4v1.PacketIn) error {
	return s.toPrimary(&p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Packet{Packet: p}})
}

// SendDigest sends a DigestList to the primary controller.
func (s *Server) SendDigest(d *p4v1.DigestList) error {
	return s.toPrimary(&p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Digest{Digest: d}})
}

// SendIdleTimeout sends an idle timeout notification to the primary.
func (s *Server) SendIdleTimeout(n *p4v1.IdleTimeoutNotification) error {
	return s.toPrimary(&p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_IdleTimeoutNotification{IdleTimeoutNotification: n}})
}

// SendStreamError sends a StreamError to the primary.
func (s *Server) SendStreamError(e *p4v1.StreamError) error {
	return s.toPrimary(&p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Error{Error: e}})
}

// arbitrationFor is the update c gets: OK if primary, ALREADY_EXISTS if
// backup; election_id is the primary's.
func (s *Server) arbitrationFor(c, primary *ctrl) *p4v1.StreamMessageResponse {
	st := &rpcstatus.Status{Code: int32(code.Code_OK), Message: "primary"}
	if c != primary {
		st = &rpcstatus.Status{Code: int32(code.Code_ALREADY_EXISTS), Message: "backup"}
	}
	var role *p4v1.Role
	if c.roleMsg != nil {
		role = proto.Clone(c.roleMsg).(*p4v1.Role) // name and config echoed
	}
	return &p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Arbitration{Arbitration: &p4v1.MasterArbitrationUpdate{
		DeviceId: s.deviceID, Role: role, ElectionId: proto.Clone(&primary.eid).(*p4v1.Uint128), Status: st}}}
}

// notify sends arbitration updates: to every controller of the role when
// the primary changed, else only to the newcomer.
func (s *Server) notify(role string, oldPrimary *ctrl, newcomer *ctrl) {
	s.mu.Lock()
	p := s.primaryLocked(role)
	cs := append([]*ctrl(nil), s.ctrls[role]...)
	s.mu.Unlock()
	if p == nil {
		return
	}
	for _, c := range cs {
		if p != oldPrimary || c == newcomer {
			_ = c.send(s.arbitrationFor(c, p))
		}
	}
}

// StreamChannel implements arbitration, packets and digest acks.
func (s *Server) StreamChannel(stream grpc.BidiStreamingServer[p4v1.StreamMessageRequest, p4v1.StreamMessageResponse]) error {
	var me *ctrl
	defer func() {
		if me == nil {
			return
		}
		s.mu.Lock()
		old := s.primaryLocked(me.role)
		cs := s.ctrls[me.role]
		for i, c := range cs {
			if c == me {
				s.ctrls[me.role] = append(cs[:i:i], cs[i+1:]...)
				break
			}
		}
		s.mu.Unlock()
		if old == me {
			s.notify(me.role, old, nil)
		}
	}()
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch u := m.Update.(type) {
		case *p4v1.StreamMessageRequest_Arbitration:
			a := u.Arbitration
			s.mu.Lock()
			s.arbs = append(s.arbs, proto.Clone(a).(*p4v1.MasterArbitrationUpdate))
			s.mu.Unlock()
			if a.DeviceId != s.deviceID {
				return status.Errorf(codes.NotFound, "device %d not found", a.DeviceId)
			}
			if me != nil {
				continue // election ID changes are not needed by the tests
			}
			if a.ElectionId == nil {
				return status.Error(codes.InvalidArgument, "p4rttest needs an election ID")
			}
			role := a.GetRole().GetName()
			c := &ctrl{eid: p4v1.Uint128{High: a.ElectionId.High, Low: a.ElectionId.Low}, role: role, stream: stream}
			if a.Role != nil {
				c.roleMsg = proto.Clone(a.Role).(*p4v1.Role)
			}
			s.mu.Lock()
			for _, o := range s.ctrls[role] {
				if o.eid.High == c.eid.High && o.eid.Low == c.eid.Low {
					s.mu.Unlock()
					return status.Errorf(codes.InvalidArgument, "election ID %v already used", a.ElectionId)
				}
			}
			old := s.primaryLocked(role)
			s.ctrls[role] = append(s.ctrls[role], c)
			s.mu.Unlock()
			me = c
			s.notify(role, old, c)
		case *p4v1.StreamMessageRequest_Packet:
			if me != nil && s.isPrimary(me) {
				select {
				case s.packetOuts <- u.Packet:
				default:
				}
			}
		case *p4v1.StreamMessageRequest_DigestAck:
			select {
			case s.acks <- u.DigestAck:
			default:
			}
		}
	}
}

func (s *Server) isPrimary(c *ctrl) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.primaryLocked(c.role) == c
}

// checkPrimary enforces the spec: only the primary of the role (matching
// election ID) may write or set the pipeline.
func (s *Server) checkPrimaryLocked(dev uint64, role string, eid *p4v1.Uint128) error {
	if dev != s.deviceID {
		return status.Errorf(codes.NotFound, "device %d not found", dev)
	}
	p := s.primaryLocked(role)
	if p == nil || eid == nil || p.eid.High != eid.High || p.eid.Low != eid.Low {
		return status.Error(codes.PermissionDenied, "not primary")
	}
	return nil
}

// Write applies updates, failing those FailUpdates selects; any failure
// makes the RPC return UNKNOWN with one p4.v1.Error per update, in order.
func (s *Server) Write(_ context.Context, req *p4v1.WriteRequest) (*p4v1.WriteResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkPrimaryLocked(req.DeviceId, req.Role, req.ElectionId); err != nil {
		return nil, err
	}
	s.writeReqs++
	s.writeSizes = append(s.writeSizes, len(req.Updates))
	if s.recordOrder {
		s.writeOrder = append(s.writeOrder, req.Updates...)
	}
	errs := make([]*p4v1.Error, len(req.Updates))
	failed := false
	for i, u := range req.Updates {
		var pe *p4v1.Error
		if s.failUpdate != nil {
			pe = s.failUpdate(u)
		}
		if pe == nil && s.regUnimpl && u.GetEntity().GetRegisterEntry() != nil {
			pe = &p4v1.Error{CanonicalCode: int32(codes.Unimplemented), Message: "registers not supported"}
		}
		if pe == nil && !s.discard {
			pe = s.applyLocked(u)
		}
		if pe == nil {
			pe = &p4v1.Error{CanonicalCode: int32(codes.OK)}
		} else {
			failed = true
		}
		errs[i] = pe
	}
	if !failed {
		return &p4v1.WriteResponse{}, nil
	}
	st := &rpcstatus.Status{Code: int32(codes.Unknown), Message: "write failed"}
	for _, e := range errs {
		a, err := anypb.New(e)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "pack error: %v", err)
		}
		st.Details = append(st.Details, a)
	}
	return nil, status.ErrorProto(st)
}

// key identifies an entity for INSERT/MODIFY/DELETE: the entity with its
// data parts cleared.
func key(e *p4v1.Entity) string {
	k := proto.Clone(e).(*p4v1.Entity)
	switch x := k.Entity.(type) {
	case *p4v1.Entity_TableEntry:
		x.TableEntry.Action, x.TableEntry.CounterData, x.TableEntry.IdleTimeoutNs = nil, nil, 0
		x.TableEntry.ControllerMetadata, x.TableEntry.Metadata = 0, nil
	case *p4v1.Entity_CounterEntry:
		x.CounterEntry.Data = nil
	case *p4v1.Entity_DirectCounterEntry:
		x.DirectCounterEntry.Data = nil
		if te := x.DirectCounterEntry.TableEntry; te != nil {
			te.Action, te.CounterData = nil, nil
		}
	case *p4v1.Entity_MeterEntry:
		x.MeterEntry.Config, x.MeterEntry.CounterData = nil, nil
	case *p4v1.Entity_DirectMeterEntry:
		x.DirectMeterEntry.Config, x.DirectMeterEntry.CounterData = nil, nil
		if te := x.DirectMeterEntry.TableEntry; te != nil {
			te.Action, te.MeterConfig, te.CounterData = nil, nil, nil
		}
	case *p4v1.Entity_RegisterEntry:
		x.RegisterEntry.Data = nil
	case *p4v1.Entity_ActionProfileMember:
		x.ActionProfileMember.Action = nil
	case *p4v1.Entity_ActionProfileGroup:
		x.ActionProfileGroup.Members, x.ActionProfileGroup.MaxSize = nil, 0
	case *p4v1.Entity_ValueSetEntry:
		x.ValueSetEntry.Members = nil
	case *p4v1.Entity_PacketReplicationEngineEntry:
		if m := x.PacketReplicationEngineEntry.GetMulticastGroupEntry(); m != nil {
			m.Replicas = nil
		}
		if c := x.PacketReplicationEngineEntry.GetCloneSessionEntry(); c != nil {
			c.Replicas, c.ClassOfService, c.PacketLengthBytes = nil, 0, 0
		}
	case *p4v1.Entity_DigestEntry:
		x.DigestEntry.Config = nil
	}
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(k)
	return string(b)
}

func (s *Server) applyLocked(u *p4v1.Update) *p4v1.Error {
	k := key(u.Entity)
	at := -1
	for i, e := range s.store {
		if key(e) == k {
			at = i
			break
		}
	}
	switch u.Type {
	case p4v1.Update_INSERT:
		if at >= 0 {
			return &p4v1.Error{CanonicalCode: int32(codes.AlreadyExists), Message: "entry exists"}
		}
		s.store = append(s.store, u.Entity)
	case p4v1.Update_MODIFY:
		if at < 0 {
			if u.Entity.GetValueSetEntry() != nil || u.Entity.GetCounterEntry() != nil || u.Entity.GetRegisterEntry() != nil ||
				u.Entity.GetDirectCounterEntry() != nil || u.Entity.GetMeterEntry() != nil || u.Entity.GetDirectMeterEntry() != nil ||
				u.Entity.GetTableEntry().GetIsDefaultAction() {
				s.store = append(s.store, u.Entity) // always-present objects
				return nil
			}
			return &p4v1.Error{CanonicalCode: int32(codes.NotFound), Message: "no such entry"}
		}
		s.store[at] = u.Entity
	case p4v1.Update_DELETE:
		if at < 0 {
			return &p4v1.Error{CanonicalCode: int32(codes.NotFound), Message: "no such entry"}
		}
		s.store = append(s.store[:at], s.store[at+1:]...)
	default:
		return &p4v1.Error{CanonicalCode: int32(codes.InvalidArgument), Message: "bad update type"}
	}
	return nil
}

// matches reports whether stored entity e is selected by read filter f:
// same kind, and every ID or index set in f equal in e (0 / unset is a
// wildcard, as in the spec).
func matches(f, e *p4v1.Entity) bool {
	switch ff := f.Entity.(type) {
	case *p4v1.Entity_TableEntry:
		te := e.GetTableEntry()
		if te == nil || (ff.TableEntry.TableId != 0 && ff.TableEntry.TableId != te.TableId) {
			return false
		}
		if len(ff.TableEntry.Match) > 0 {
			return key(f) == key(e)
		}
		return ff.TableEntry.IsDefaultAction == te.IsDefaultAction
	case *p4v1.Entity_CounterEntry:
		ce := e.GetCounterEntry()
		return ce != nil && (ff.CounterEntry.CounterId == 0 || ff.CounterEntry.CounterId == ce.CounterId) &&
			(ff.CounterEntry.Index == nil || ff.CounterEntry.Index.Index == ce.GetIndex().GetIndex())
	case *p4v1.Entity_DirectCounterEntry:
		de := e.GetDirectCounterEntry()
		tid := ff.DirectCounterEntry.GetTableEntry().GetTableId()
		return de != nil && (tid == 0 || tid == de.GetTableEntry().GetTableId())
	case *p4v1.Entity_DirectMeterEntry:
		de := e.GetDirectMeterEntry()
		tid := ff.DirectMeterEntry.GetTableEntry().GetTableId()
		return de != nil && (tid == 0 || tid == de.GetTableEntry().GetTableId())
	case *p4v1.Entity_MeterEntry:
		me := e.GetMeterEntry()
		return me != nil && (ff.MeterEntry.MeterId == 0 || ff.MeterEntry.MeterId == me.MeterId) &&
			(ff.MeterEntry.Index == nil || ff.MeterEntry.Index.Index == me.GetIndex().GetIndex())
	case *p4v1.Entity_RegisterEntry:
		re := e.GetRegisterEntry()
		return re != nil && (ff.RegisterEntry.RegisterId == 0 || ff.RegisterEntry.RegisterId == re.RegisterId) &&
			(ff.RegisterEntry.Index == nil || ff.RegisterEntry.Index.Index == re.GetIndex().GetIndex())
	case *p4v1.Entity_ActionProfileMember:
		m := e.GetActionProfileMember()
		return m != nil && (ff.ActionProfileMember.ActionProfileId == 0 || ff.ActionProfileMember.ActionProfileId == m.ActionProfileId)
	case *p4v1.Entity_ActionProfileGroup:
		g := e.GetActionProfileGroup()
		return g != nil && (ff.ActionProfileGroup.ActionProfileId == 0 || ff.ActionProfileGroup.ActionProfileId == g.ActionProfileId)
	case *p4v1.Entity_ValueSetEntry:
		v := e.GetValueSetEntry()
		return v != nil && (ff.ValueSetEntry.ValueSetId == 0 || ff.ValueSetEntry.ValueSetId == v.ValueSetId)
	case *p4v1.Entity_DigestEntry:
		d := e.GetDigestEntry()
		return d != nil && (ff.DigestEntry.DigestId == 0 || ff.DigestEntry.DigestId == d.DigestId)
	case *p4v1.Entity_PacketReplicationEngineEntry:
		pre := e.GetPacketReplicationEngineEntry()
		if fm := ff.PacketReplicationEngineEntry.GetMulticastGroupEntry(); fm != nil {
			m := pre.GetMulticastGroupEntry()
			return m != nil && (fm.MulticastGroupId == 0 || fm.MulticastGroupId == m.MulticastGroupId)
		}
		if fc := ff.PacketReplicationEngineEntry.GetCloneSessionEntry(); fc != nil {
			c := pre.GetCloneSessionEntry()
			return c != nil && (fc.SessionId == 0 || fc.SessionId == c.SessionId)
		}
	}
	return false
}

// Read streams the stored entities selected by the request, one response
// per filter. Register reads answer UNIMPLEMENTED when so configured.
func (s *Server) Read(req *p4v1.ReadRequest, stream grpc.ServerStreamingServer[p4v1.ReadResponse]) error {
	s.mu.Lock()
	if req.DeviceId != s.deviceID {
		s.mu.Unlock()
		return status.Errorf(codes.NotFound, "device %d not found", req.DeviceId)
	}
	var resps []*p4v1.ReadResponse
	for _, f := range req.Entities {
		if f.GetRegisterEntry() != nil && s.regUnimpl {
			s.mu.Unlock()
			return status.Error(codes.Unimplemented, "register reads not supported")
		}
		r := &p4v1.ReadResponse{}
		for _, e := range s.store {
			if matches(f, e) {
				r.Entities = append(r.Entities, e)
			}
		}
		resps = append(resps, r)
	}
	s.mu.Unlock()
	for _, r := range resps {
		if err := stream.Send(r); err != nil {
			return err
		}
	}
	return nil
}

// SetForwardingPipelineConfig records the action and stores the config;
// COMMIT without a previously saved config is FAILED_PRECONDITION.
func (s *Server) SetForwardingPipelineConfig(_ context.Context, req *p4v1.SetForwardingPipelineConfigRequest) (*p4v1.SetForwardingPipelineConfigResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkPrimaryLocked(req.DeviceId, req.Role, req.ElectionId); err != nil {
		return nil, err
	}
	s.pipeActions = append(s.pipeActions, req.Action)
	switch req.Action {
	case p4v1.SetForwardingPipelineConfigRequest_VERIFY:
		if req.Config.GetP4Info() == nil {
			return nil, status.Error(codes.InvalidArgument, "no P4Info")
		}
	case p4v1.SetForwardingPipelineConfigRequest_COMMIT:
		if s.pipeline == nil {
			return nil, status.Error(codes.FailedPrecondition, "nothing saved to commit")
		}
	case p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT,
		p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_SAVE,
		p4v1.SetForwardingPipelineConfigRequest_RECONCILE_AND_COMMIT:
		if req.Config.GetP4Info() == nil {
			return nil, status.Error(codes.InvalidArgument, "no P4Info")
		}
		s.pipeline = req.Config
		if req.Action == p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT {
			s.store = nil // a new pipeline starts empty; reconcile keeps state
		}
	default:
		return nil, status.Errorf(codes.InvalidArgument, "action %v", req.Action)
	}
	return &p4v1.SetForwardingPipelineConfigResponse{}, nil
}

// GetForwardingPipelineConfig returns the stored config, trimmed to the
// response type.
func (s *Server) GetForwardingPipelineConfig(_ context.Context, req *p4v1.GetForwardingPipelineConfigRequest) (*p4v1.GetForwardingPipelineConfigResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.DeviceId != s.deviceID {
		return nil, status.Errorf(codes.NotFound, "device %d not found", req.DeviceId)
	}
	if s.pipeline == nil {
		return nil, status.Error(codes.FailedPrecondition, "no pipeline")
	}
	c := proto.Clone(s.pipeline).(*p4v1.ForwardingPipelineConfig)
	switch req.ResponseType {
	case p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY:
		c.P4Info, c.P4DeviceConfig = nil, nil
	case p4v1.GetForwardingPipelineConfigRequest_P4INFO_AND_COOKIE:
		c.P4DeviceConfig = nil
	case p4v1.GetForwardingPipelineConfigRequest_DEVICE_CONFIG_AND_COOKIE:
		c.P4Info = nil
	}
	return &p4v1.GetForwardingPipelineConfigResponse{Config: c}, nil
}

// Capabilities answers the API version the fake speaks.
func (s *Server) Capabilities(context.Context, *p4v1.CapabilitiesRequest) (*p4v1.CapabilitiesResponse, error) {
	return &p4v1.CapabilitiesResponse{P4RuntimeApiVersion: "1.5.0-p4rttest"}, nil
}
