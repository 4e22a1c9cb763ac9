package p4rtserver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"github.com/sirupsen/logrus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
)

// maxMulticastGroups bounds the stored multicast groups (the pipeline's bound).
const maxMulticastGroups = pipeline.MaxMulticastGroups

// entryMeta is what P4Runtime stores with a table entry that the pipeline does not.
type entryMeta struct {
	controllerMetadata uint64
	metadata           []byte
}

// Write implements p4.v1.P4Runtime. Updates are applied in order, each all or nothing
// (CONTINUE_ON_ERROR), or the whole batch all or nothing (ROLLBACK_ON_ERROR,
// DATAPLANE_ATOMIC); when any
// fails the status is UNKNOWN with one p4.v1.Error per update, OK ones included.
func (s *Server) Write(ctx context.Context, req *p4v1.WriteRequest) (*p4v1.WriteResponse, error) {
	log := s.log.WithFields(logrus.Fields{"rpc": "Write", "updates": len(req.GetUpdates())})
	if err := s.checkDevice(req.GetDeviceId()); err != nil {
		return nil, toStatus(err)
	}
	if err := s.checkPrimary(roleKey(req.GetRole(), req.GetRoleId()), req.GetElectionId()); err != nil {
		return nil, toStatus(err)
	}
	if err := s.requireConfig(); err != nil {
		return nil, toStatus(err)
	}
	// The batch runs under one Exec, so the data path sees it whole or not at all:
	// with rollback that is also DATAPLANE_ATOMIC.
	a := req.GetAtomicity()
	if a != p4v1.WriteRequest_CONTINUE_ON_ERROR && a != p4v1.WriteRequest_ROLLBACK_ON_ERROR && a != p4v1.WriteRequest_DATAPLANE_ATOMIC {
		return nil, toStatus(errorf(codes.InvalidArgument, "atomicity %d not valid", a))
	}
	var errs []error
	var internal error
	s.stateMu.Lock()
	err := s.dp.Exec(ctx, func(p *pipeline.Pipeline) error {
		errs, internal = s.applyAll(p, req.GetUpdates(), a != p4v1.WriteRequest_CONTINUE_ON_ERROR)
		return nil
	})
	s.stateMu.Unlock()
	if err != nil {
		return nil, toStatus(&codedError{code: codes.Unavailable, msg: "data plane", err: err})
	}
	if internal != nil {
		log.WithError(internal).Error("write rollback failed")
		return nil, toStatus(&codedError{code: codes.Internal, msg: "write", err: internal})
	}
	failed := 0
	details := make([]protoadapt.MessageV1, len(errs))
	for i, e := range errs {
		pe := &p4v1.Error{CanonicalCode: int32(codes.OK)}
		if e != nil {
			failed++
			pe = &p4v1.Error{CanonicalCode: int32(codeOf(e)), Message: e.Error()}
			log.WithFields(logrus.Fields{"update": i, "code": codeOf(e).String()}).WithError(e).Debug("update failed")
		}
		details[i] = protoadapt.MessageV1Of(pe)
	}
	if failed == 0 {
		return &p4v1.WriteResponse{}, nil
	}
	st, derr := status.New(codes.Unknown, fmt.Sprintf("%d of %d updates failed", failed, len(errs))).WithDetails(details...)
	if derr != nil {
		return nil, status.Errorf(codes.Internal, "write: encode error details: %v", derr)
	}
	log.WithField("failed", failed).Info("write with failed updates")
	return nil, st.Err()
}

// apply applies one update; s.stateMu is held and p is exclusive.
func (s *Server) apply(p *pipeline.Pipeline, u *p4v1.Update) error {
	t := u.GetType()
	if t != p4v1.Update_INSERT && t != p4v1.Update_MODIFY && t != p4v1.Update_DELETE {
		return errorf(codes.InvalidArgument, "update type %s not valid", t)
	}
	switch e := u.GetEntity().GetEntity().(type) {
	case *p4v1.Entity_TableEntry:
		return s.writeTableEntry(p, t, e.TableEntry)
	case *p4v1.Entity_CounterEntry:
		return s.writeCounter(p, t, e.CounterEntry)
	case *p4v1.Entity_RegisterEntry:
		return s.writeRegister(p, t, e.RegisterEntry)
	case *p4v1.Entity_ValueSetEntry:
		return s.writeValueSet(p, t, e.ValueSetEntry)
	case *p4v1.Entity_DigestEntry:
		return s.writeDigest(p, t, e.DigestEntry)
	case *p4v1.Entity_PacketReplicationEngineEntry:
		return s.writePRE(p, t, e.PacketReplicationEngineEntry)
	case *p4v1.Entity_ActionProfileMember:
		return s.writeProfileMember(p, t, e.ActionProfileMember)
	case *p4v1.Entity_ActionProfileGroup:
		return s.writeProfileGroup(p, t, e.ActionProfileGroup)
	case *p4v1.Entity_MeterEntry:
		return errorf(codes.InvalidArgument, "meter ID %#x unknown: the program has no meters", e.MeterEntry.GetMeterId())
	case *p4v1.Entity_DirectMeterEntry:
		return errorf(codes.InvalidArgument, "table %#x has no direct meter", e.DirectMeterEntry.GetTableEntry().GetTableId())
	case *p4v1.Entity_DirectCounterEntry:
		return errorf(codes.InvalidArgument, "table %#x has no direct counter", e.DirectCounterEntry.GetTableEntry().GetTableId())
	case *p4v1.Entity_ExternEntry:
		return errorf(codes.InvalidArgument, "extern type %d unknown: the program has no externs", e.ExternEntry.GetExternTypeId())
	case nil:
		return errorf(codes.InvalidArgument, "update without an entity")
	}
	return errorf(codes.Unimplemented, "entity kind not supported")
}

// tableInfo looks a table up (INVALID_ARGUMENT for an unknown ID).
func (s *Server) tableInfo(id uint32) (*pipeline.TableInfo, error) {
	ti, ok := s.schema.Table(id)
	if !ok {
		return nil, errorf(codes.InvalidArgument, "table ID %#x unknown", id)
	}
	return ti, nil
}

// matchFromProto converts a match key; it checks IDs, kinds and widths, and leaves
// canonical-form, missing-field and priority checks to the pipeline.
func matchFromProto(ti *pipeline.TableInfo, ms []*p4v1.FieldMatch) ([]pipeline.FieldMatch, error) {
	out := make([]pipeline.FieldMatch, 0, len(ms))
	seen := map[uint32]bool{}
	for _, m := range ms {
		var kf *pipeline.MatchFieldInfo
		for i := range ti.Keys {
			if ti.Keys[i].ID == m.GetFieldId() {
				kf = &ti.Keys[i]
			}
		}
		if kf == nil {
			return nil, errorf(codes.InvalidArgument, "table %s: match field ID %d unknown", ti.Name, m.GetFieldId())
		}
		if seen[kf.ID] {
			return nil, errorf(codes.InvalidArgument, "table %s: match field %s repeated", ti.Name, kf.Name)
		}
		seen[kf.ID] = true
		what := fmt.Sprintf("table %s: match field %s", ti.Name, kf.Name)
		fm := pipeline.FieldMatch{FieldID: kf.ID}
		var err error
		switch kf.Kind {
		case pipeline.MatchExact:
			if m.GetExact() == nil {
				return nil, errorf(codes.InvalidArgument, "%s is exact, the request gives another match kind", what)
			}
			fm.Value, err = decodeBits(m.GetExact().GetValue(), kf.Bitwidth, what)
		case pipeline.MatchLPM:
			if m.GetLpm() == nil {
				return nil, errorf(codes.InvalidArgument, "%s is lpm, the request gives another match kind", what)
			}
			fm.PrefixLen = m.GetLpm().GetPrefixLen()
			fm.Value, err = decodeBits(m.GetLpm().GetValue(), kf.Bitwidth, what)
		case pipeline.MatchTernary:
			if m.GetTernary() == nil {
				return nil, errorf(codes.InvalidArgument, "%s is ternary, the request gives another match kind", what)
			}
			fm.Value, err = decodeBits(m.GetTernary().GetValue(), kf.Bitwidth, what)
			if err == nil {
				fm.Mask, err = decodeBits(m.GetTernary().GetMask(), kf.Bitwidth, what+" mask")
			}
		default:
			return nil, errorf(codes.Internal, "%s: match kind %s not handled", what, kf.Kind)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, fm)
	}
	return out, nil
}

// actionFromProto converts a direct action of table ti (its default action, or an
// entry's action in a table without an action profile).
func (s *Server) actionFromProto(ti *pipeline.TableInfo, ta *p4v1.TableAction) (pipeline.Action, error) {
	if ta == nil {
		return pipeline.Action{}, errorf(codes.InvalidArgument, "table %s: action missing", ti.Name)
	}
	a := ta.GetAction()
	if a == nil {
		return pipeline.Action{}, errorf(codes.InvalidArgument, "table %s: a direct action is needed here", ti.Name)
	}
	return s.convertAction("table "+ti.Name, ti.ActionIDs, a)
}

// entryRunFromProto fills e with what a table entry runs: a direct action, or for a
// table with an action selector a member, a group or a one-shot action set.
func (s *Server) entryRunFromProto(ti *pipeline.TableInfo, ta *p4v1.TableAction, e *pipeline.TableEntry) error {
	if ta == nil {
		return errorf(codes.InvalidArgument, "table %s: action missing", ti.Name)
	}
	indirect := ti.ProfileID != 0
	switch x := ta.GetType().(type) {
	case *p4v1.TableAction_Action:
		if indirect {
			return errorf(codes.InvalidArgument, "table %s has an action selector: an entry runs a member, a group or a one-shot action set", ti.Name)
		}
		a, err := s.convertAction("table "+ti.Name, ti.ActionIDs, x.Action)
		e.Action = a
		return err
	case *p4v1.TableAction_ActionProfileMemberId, *p4v1.TableAction_ActionProfileGroupId, *p4v1.TableAction_ActionProfileActionSet:
		if !indirect {
			return errorf(codes.InvalidArgument, "table %s has no action profile: an entry runs a direct action", ti.Name)
		}
	default:
		return errorf(codes.InvalidArgument, "table %s: action missing", ti.Name)
	}
	switch x := ta.GetType().(type) {
	case *p4v1.TableAction_ActionProfileMemberId:
		if x.ActionProfileMemberId == 0 {
			return errorf(codes.InvalidArgument, "table %s: member ID 0 is not valid", ti.Name)
		}
		e.MemberID = x.ActionProfileMemberId
	case *p4v1.TableAction_ActionProfileGroupId:
		if x.ActionProfileGroupId == 0 {
			return errorf(codes.InvalidArgument, "table %s: group ID 0 is not valid", ti.Name)
		}
		e.GroupID = x.ActionProfileGroupId
	case *p4v1.TableAction_ActionProfileActionSet:
		set := x.ActionProfileActionSet
		switch {
		case set.GetGroupAction() != nil:
			return errorf(codes.Unimplemented, "table %s: a one-shot group action is not supported", ti.Name)
		case set.GetActionSelectionMode() == p4v1.ActionProfileActionSet_RANDOM:
			return errorf(codes.Unimplemented, "table %s: random one-shot selection is not supported (the selector hashes)", ti.Name)
		case set.GetSizeSemantics() == p4v1.ActionProfileActionSet_SUM_OF_MEMBERS:
			return errorf(codes.Unimplemented, "table %s: SUM_OF_MEMBERS size semantics are not supported", ti.Name)
		case len(set.GetActionProfileActions()) == 0:
			return errorf(codes.InvalidArgument, "table %s: an empty one-shot action set", ti.Name)
		}
		e.OneShot = make([]pipeline.WeightedAction, 0, len(set.GetActionProfileActions()))
		for i, pa := range set.GetActionProfileActions() {
			if pa.GetWatchKind() != nil {
				return errorf(codes.Unimplemented, "table %s: one-shot action %d: watch ports are not supported", ti.Name, i)
			}
			if pa.GetAction() == nil {
				return errorf(codes.InvalidArgument, "table %s: one-shot action %d: action missing", ti.Name, i)
			}
			a, err := s.convertAction("table "+ti.Name, ti.ActionIDs, pa.GetAction())
			if err != nil {
				return err
			}
			e.OneShot = append(e.OneShot, pipeline.WeightedAction{Action: a, Weight: pa.GetWeight()})
		}
	}
	return nil
}

// convertAction converts an action that must be one of allowed (the actions of the
// table or profile named what).
func (s *Server) convertAction(what string, allowed []uint32, a *p4v1.Action) (pipeline.Action, error) {
	ai, ok := s.schema.Action(a.GetActionId())
	if !ok {
		return pipeline.Action{}, errorf(codes.InvalidArgument, "action ID %#x unknown", a.GetActionId())
	}
	if !slices.Contains(allowed, ai.ID) {
		return pipeline.Action{}, errorf(codes.InvalidArgument, "%s: action %s is not one of its actions", what, ai.Name)
	}
	out := pipeline.Action{ID: ai.ID}
	for _, p := range a.GetParams() {
		var pi *pipeline.FieldInfo
		for i := range ai.Params {
			if ai.Params[i].ID == p.GetParamId() {
				pi = &ai.Params[i]
			}
		}
		if pi == nil {
			return pipeline.Action{}, errorf(codes.InvalidArgument, "action %s: param ID %d unknown", ai.Name, p.GetParamId())
		}
		v, err := decodeBits(p.GetValue(), pi.Bitwidth, "action "+ai.Name+": param "+pi.Name)
		if err != nil {
			return pipeline.Action{}, err
		}
		out.Params = append(out.Params, pipeline.Param{ID: pi.ID, Value: v})
	}
	return out, nil
}

// metaKey identifies an entry for entryMeta: table, priority and canonical match.
func metaKey(e *pipeline.TableEntry) string {
	ms := slices.Clone(e.Match)
	slices.SortFunc(ms, func(a, b pipeline.FieldMatch) int { return int(a.FieldID) - int(b.FieldID) })
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d", e.TableID, e.Priority)
	for _, m := range ms {
		fmt.Fprintf(&b, "/%d:%x:%x:%d", m.FieldID, m.Value, m.Mask, m.PrefixLen)
	}
	return b.String()
}

func (s *Server) writeTableEntry(p *pipeline.Pipeline, t p4v1.Update_Type, te *p4v1.TableEntry) error {
	ti, err := s.tableInfo(te.GetTableId())
	if err != nil {
		return err
	}
	switch {
	case te.GetMeterConfig() != nil || te.GetMeterCounterData() != nil:
		return errorf(codes.InvalidArgument, "table %s has no direct meter", ti.Name)
	case te.GetCounterData() != nil:
		return errorf(codes.InvalidArgument, "table %s has no direct counter", ti.Name)
	case te.GetIdleTimeoutNs() != 0:
		return errorf(codes.InvalidArgument, "table %s does not support idle timeout", ti.Name)
	}
	if te.GetIsDefaultAction() {
		if t != p4v1.Update_MODIFY {
			return errorf(codes.InvalidArgument, "table %s: the default entry can only be modified (%s)", ti.Name, t)
		}
		if len(te.GetMatch()) > 0 || te.GetPriority() != 0 {
			return errorf(codes.InvalidArgument, "table %s: the default entry has no match or priority", ti.Name)
		}
		if ti.ConstDefault {
			return errorf(codes.PermissionDenied, "table %s: the default action is const", ti.Name)
		}
		if te.GetAction() == nil {
			return wrapPipeline(p.ResetDefaultAction(ti.ID))
		}
		a, err := s.actionFromProto(ti, te.GetAction())
		if err != nil {
			return err
		}
		return wrapPipeline(p.SetDefaultAction(ti.ID, &a))
	}
	match, err := matchFromProto(ti, te.GetMatch())
	if err != nil {
		return err
	}
	e := pipeline.TableEntry{TableID: ti.ID, Match: match, Priority: te.GetPriority()}
	if t != p4v1.Update_DELETE {
		if err := s.entryRunFromProto(ti, te.GetAction(), &e); err != nil {
			return err
		}
	}
	key := metaKey(&e)
	switch t {
	case p4v1.Update_INSERT:
		err = p.InsertEntry(&e)
	case p4v1.Update_MODIFY:
		err = p.ModifyEntry(&e)
	case p4v1.Update_DELETE:
		err = p.DeleteEntry(&e)
	}
	if err != nil {
		return wrapPipeline(err)
	}
	if t == p4v1.Update_DELETE || te.GetControllerMetadata() == 0 && len(te.GetMetadata()) == 0 {
		delete(s.entryMeta, key)
	} else {
		s.entryMeta[key] = entryMeta{te.GetControllerMetadata(), slices.Clone(te.GetMetadata())}
	}
	return nil
}

// profileInfo looks an action profile up (INVALID_ARGUMENT for an unknown ID).
func (s *Server) profileInfo(id uint32) (*pipeline.ActionProfileInfo, error) {
	pi, ok := s.schema.ActionProfile(id)
	if !ok {
		return nil, errorf(codes.InvalidArgument, "action profile ID %#x unknown", id)
	}
	return pi, nil
}

// profileActions are the actions a member of profile pi may run: those of its
// tables (the pipeline refuses the default-only ones).
func (s *Server) profileActions(pi *pipeline.ActionProfileInfo) []uint32 {
	var ids []uint32
	for _, tid := range pi.TableIDs {
		if ti, ok := s.schema.Table(tid); ok {
			ids = append(ids, ti.ActionIDs...)
		}
	}
	return ids
}

func (s *Server) writeProfileMember(p *pipeline.Pipeline, t p4v1.Update_Type, m *p4v1.ActionProfileMember) error {
	pi, err := s.profileInfo(m.GetActionProfileId())
	if err != nil {
		return err
	}
	if m.GetMemberId() == 0 {
		return errorf(codes.InvalidArgument, "action profile %s: member ID 0 is not valid", pi.Name)
	}
	if t == p4v1.Update_DELETE {
		return wrapPipeline(p.DeleteProfileMember(pi.ID, m.GetMemberId()))
	}
	if m.GetAction() == nil {
		return errorf(codes.InvalidArgument, "action profile %s member %d: action missing", pi.Name, m.GetMemberId())
	}
	a, err := s.convertAction("action profile "+pi.Name, s.profileActions(pi), m.GetAction())
	if err != nil {
		return err
	}
	pm := &pipeline.ProfileMember{ProfileID: pi.ID, MemberID: m.GetMemberId(), Action: a}
	if t == p4v1.Update_INSERT {
		return wrapPipeline(p.InsertProfileMember(pm))
	}
	return wrapPipeline(p.ModifyProfileMember(pm))
}

func (s *Server) writeProfileGroup(p *pipeline.Pipeline, t p4v1.Update_Type, g *p4v1.ActionProfileGroup) error {
	pi, err := s.profileInfo(g.GetActionProfileId())
	if err != nil {
		return err
	}
	if g.GetGroupId() == 0 {
		return errorf(codes.InvalidArgument, "action profile %s: group ID 0 is not valid", pi.Name)
	}
	if t == p4v1.Update_DELETE {
		return wrapPipeline(p.DeleteProfileGroup(pi.ID, g.GetGroupId()))
	}
	pg := &pipeline.ProfileGroup{ProfileID: pi.ID, GroupID: g.GetGroupId(), MaxSize: g.GetMaxSize(),
		Members: make([]pipeline.GroupMember, 0, len(g.GetMembers()))}
	for i, m := range g.GetMembers() {
		if m.GetWatchKind() != nil {
			return errorf(codes.Unimplemented, "action profile %s group %d: member %d: watch ports are not supported", pi.Name, g.GetGroupId(), i)
		}
		pg.Members = append(pg.Members, pipeline.GroupMember{MemberID: m.GetMemberId(), Weight: m.GetWeight()})
	}
	if t == p4v1.Update_INSERT {
		return wrapPipeline(p.InsertProfileGroup(pg))
	}
	return wrapPipeline(p.ModifyProfileGroup(pg))
}

// cellIndex converts an optional index: nil is every cell (-1).
func cellIndex(ix *p4v1.Index, size int, what string) (int, error) {
	if ix == nil {
		return -1, nil
	}
	if ix.GetIndex() < 0 || ix.GetIndex() >= int64(size) {
		return 0, errorf(codes.InvalidArgument, "%s: index %d not in 0..%d", what, ix.GetIndex(), size-1)
	}
	return int(ix.GetIndex()), nil
}

func (s *Server) writeCounter(p *pipeline.Pipeline, t p4v1.Update_Type, ce *p4v1.CounterEntry) error {
	ci, ok := s.schema.Counter(ce.GetCounterId())
	if !ok {
		return errorf(codes.InvalidArgument, "counter ID %#x unknown", ce.GetCounterId())
	}
	if t != p4v1.Update_MODIFY {
		return errorf(codes.InvalidArgument, "counter %s: only MODIFY is valid, not %s", ci.Name, t)
	}
	idx, err := cellIndex(ce.GetIndex(), ci.Size, "counter "+ci.Name)
	if err != nil {
		return err
	}
	d := ce.GetData()
	if d.GetPacketCount() < 0 || d.GetByteCount() < 0 {
		return errorf(codes.InvalidArgument, "counter %s: negative count", ci.Name)
	}
	return wrapPipeline(p.WriteCounter(ci.ID, idx, uint64(d.GetPacketCount()), uint64(d.GetByteCount())))
}

func (s *Server) writeRegister(p *pipeline.Pipeline, t p4v1.Update_Type, re *p4v1.RegisterEntry) error {
	ri, ok := s.schema.Register(re.GetRegisterId())
	if !ok {
		return errorf(codes.InvalidArgument, "register ID %#x unknown", re.GetRegisterId())
	}
	if t != p4v1.Update_MODIFY {
		return errorf(codes.InvalidArgument, "register %s: only MODIFY is valid, not %s", ri.Name, t)
	}
	idx, err := cellIndex(re.GetIndex(), ri.Size, "register "+ri.Name)
	if err != nil {
		return err
	}
	bs, ok := re.GetData().GetData().(*p4v1.P4Data_Bitstring)
	if !ok {
		return errorf(codes.InvalidArgument, "register %s: data must be a bitstring", ri.Name)
	}
	v, err := decodeBits(bs.Bitstring, ri.Bitwidth, "register "+ri.Name)
	if err != nil {
		return err
	}
	return wrapPipeline(p.WriteRegister(ri.ID, idx, v))
}

func (s *Server) valueSetInfo(id uint32) (*pipeline.ValueSetInfo, error) {
	for i := range s.schema.ValueSets {
		if s.schema.ValueSets[i].ID == id {
			return &s.schema.ValueSets[i], nil
		}
	}
	return nil, errorf(codes.InvalidArgument, "value set ID %#x unknown", id)
}

func (s *Server) writeValueSet(p *pipeline.Pipeline, t p4v1.Update_Type, ve *p4v1.ValueSetEntry) error {
	vi, err := s.valueSetInfo(ve.GetValueSetId())
	if err != nil {
		return err
	}
	if t != p4v1.Update_MODIFY {
		return errorf(codes.InvalidArgument, "value set %s: only MODIFY is valid, not %s", vi.Name, t)
	}
	var members []uint64
	for i, m := range ve.GetMembers() {
		if len(m.GetMatch()) != 1 || m.GetMatch()[0].GetFieldId() != 1 || m.GetMatch()[0].GetExact() == nil {
			return errorf(codes.InvalidArgument, "value set %s: member %d must be one exact match on field 1", vi.Name, i)
		}
		v, err := decodeBits(m.GetMatch()[0].GetExact().GetValue(), vi.Bitwidth, fmt.Sprintf("value set %s: member %d", vi.Name, i))
		if err != nil {
			return err
		}
		if !slices.Contains(members, v) {
			members = append(members, v)
		}
	}
	return wrapPipeline(p.SetValueSet(vi.ID, members))
}

func (s *Server) writeDigest(p *pipeline.Pipeline, t p4v1.Update_Type, de *p4v1.DigestEntry) error {
	defer s.countDigests(p)
	di, ok := s.schema.Digest(de.GetDigestId())
	if !ok {
		return errorf(codes.InvalidArgument, "digest ID %#x unknown", de.GetDigestId())
	}
	if t == p4v1.Update_DELETE {
		return wrapPipeline(p.DeleteDigestConfig(di.ID))
	}
	c := de.GetConfig()
	if c == nil {
		return errorf(codes.InvalidArgument, "digest %s: config missing", di.Name)
	}
	_, err := p.ReadDigestConfig(di.ID)
	exists := err == nil
	if t == p4v1.Update_INSERT && exists {
		return errorf(codes.AlreadyExists, "digest %s: already configured", di.Name)
	}
	if t == p4v1.Update_MODIFY && !exists {
		return errorf(codes.NotFound, "digest %s: not configured", di.Name)
	}
	return wrapPipeline(p.SetDigestConfig(di.ID, pipeline.DigestConfig{
		MaxTimeoutNs: c.GetMaxTimeoutNs(), MaxListSize: c.GetMaxListSize(), AckTimeoutNs: c.GetAckTimeoutNs()}))
}

// countDigests records how many digests have a config.
func (s *Server) countDigests(p *pipeline.Pipeline) {
	n := int32(0)
	for _, d := range s.schema.Digests {
		if _, err := p.ReadDigestConfig(d.ID); err == nil {
			n++
		}
	}
	s.digestsOn.Store(n)
}

// replicaPort returns a replica's port: the v1.4 port bytes or the older egress_port.
func replicaPort(r *p4v1.Replica) (uint64, error) {
	switch k := r.GetPortKind().(type) {
	case *p4v1.Replica_EgressPort:
		return uint64(k.EgressPort), nil
	case *p4v1.Replica_Port:
		return decodeBits(k.Port, 64, "replica port")
	}
	return 0, errorf(codes.InvalidArgument, "replica without a port")
}

func checkReplicas(rs []*p4v1.Replica, what string) error {
	seen := map[[2]uint64]bool{}
	for i, r := range rs {
		port, err := replicaPort(r)
		if err != nil {
			return err
		}
		if port >= p4src.NumPorts {
			return errorf(codes.InvalidArgument, "%s: replica %d port %d >= %d", what, i, port, p4src.NumPorts)
		}
		if len(r.GetBackupReplicas()) > 0 {
			return errorf(codes.InvalidArgument, "%s: backup replicas are not supported", what)
		}
		k := [2]uint64{port, uint64(r.GetInstance())}
		if seen[k] {
			return errorf(codes.InvalidArgument, "%s: replica (port %d, instance %d) repeated", what, port, r.GetInstance())
		}
		seen[k] = true
	}
	return nil
}

func (s *Server) writePRE(p *pipeline.Pipeline, t p4v1.Update_Type, pe *p4v1.PacketReplicationEngineEntry) error {
	switch {
	case pe.GetCloneSessionEntry() != nil:
		cs := pe.GetCloneSessionEntry()
		what := fmt.Sprintf("clone session %d", cs.GetSessionId())
		if cs.GetSessionId() == 0 {
			return errorf(codes.InvalidArgument, "clone session ID 0 is not valid")
		}
		if t == p4v1.Update_DELETE {
			if err := p.DeleteCloneSession(cs.GetSessionId()); err != nil {
				return wrapPipeline(err)
			}
			delete(s.cloneIDs, cs.GetSessionId())
			return nil
		}
		if len(cs.GetReplicas()) != 1 {
			return errorf(codes.InvalidArgument, "%s: %d replicas, this target supports exactly 1", what, len(cs.GetReplicas()))
		}
		if err := checkReplicas(cs.GetReplicas(), what); err != nil {
			return err
		}
		if cs.GetPacketLengthBytes() < 0 {
			return errorf(codes.InvalidArgument, "%s: negative packet_length_bytes", what)
		}
		port, _ := replicaPort(cs.GetReplicas()[0])
		sess := pipeline.CloneSession{SessionID: cs.GetSessionId(), EgressPort: uint16(port), Instance: cs.GetReplicas()[0].GetInstance(),
			ClassOfService: cs.GetClassOfService(), PacketLengthBytes: cs.GetPacketLengthBytes()}
		var err error
		if t == p4v1.Update_INSERT {
			err = p.InsertCloneSession(sess)
		} else {
			err = p.ModifyCloneSession(sess)
		}
		if err != nil {
			return wrapPipeline(err)
		}
		_, legacy := cs.GetReplicas()[0].GetPortKind().(*p4v1.Replica_EgressPort)
		s.cloneIDs[sess.SessionID] = legacy
		return nil
	case pe.GetMulticastGroupEntry() != nil:
		mg := pe.GetMulticastGroupEntry()
		what := fmt.Sprintf("multicast group %d", mg.GetMulticastGroupId())
		if mg.GetMulticastGroupId() == 0 {
			return errorf(codes.InvalidArgument, "multicast group ID 0 is not valid")
		}
		_, exists := s.mcastGroup[mg.GetMulticastGroupId()]
		switch {
		case t == p4v1.Update_INSERT && exists:
			return errorf(codes.AlreadyExists, "%s exists", what)
		case t != p4v1.Update_INSERT && !exists:
			return errorf(codes.NotFound, "%s does not exist", what)
		case t == p4v1.Update_DELETE:
			if err := p.DeleteMulticastGroup(mg.GetMulticastGroupId()); err != nil {
				return wrapPipeline(err)
			}
			delete(s.mcastGroup, mg.GetMulticastGroupId())
			return nil
		case t == p4v1.Update_INSERT && len(s.mcastGroup) >= maxMulticastGroups:
			return errorf(codes.ResourceExhausted, "%d multicast groups, the maximum", maxMulticastGroups)
		}
		if err := checkReplicas(mg.GetReplicas(), what); err != nil {
			return err
		}
		// The pipeline replicates (l2_flood); the server keeps the entry as written
		// for reads (metadata, the replica port's encoding).
		g := pipeline.MulticastGroup{ID: mg.GetMulticastGroupId(), Replicas: make([]pipeline.Replica, 0, len(mg.GetReplicas()))}
		for _, r := range mg.GetReplicas() {
			port, _ := replicaPort(r) // checked by checkReplicas
			g.Replicas = append(g.Replicas, pipeline.Replica{Port: uint16(port), Instance: r.GetInstance()})
		}
		var err error
		if t == p4v1.Update_INSERT {
			err = p.InsertMulticastGroup(g)
		} else {
			err = p.ModifyMulticastGroup(g)
		}
		if err != nil {
			return wrapPipeline(err)
		}
		s.mcastGroup[mg.GetMulticastGroupId()] = proto.Clone(mg).(*p4v1.MulticastGroupEntry)
		return nil
	}
	return errorf(codes.InvalidArgument, "packet replication engine entry without a clone session or multicast group")
}
