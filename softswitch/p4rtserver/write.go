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

// entryMeta is what the server stores beside the pipeline, keyed by metaKey (a table
// entry), defaultMetaKey (a table's default entry) or groupMetaKey (an action
// profile group): the controller's cookies, and for read-write symmetry the parts of
// a one-shot action set or a group that the pipeline does not keep (the set's
// selection mode and size semantics, the form of each watch_kind).
type entryMeta struct {
	controllerMetadata uint64
	metadata           []byte
	selMode            p4v1.ActionProfileActionSet_ActionSelectionMode
	sizeSem            p4v1.ActionProfileActionSet_SizeSemantics
	watch              []watchForm          // per one-shot action, in order (nil: every one unset)
	groupWatch         map[uint32]watchForm // per group member ID (set forms only)
}

func (m *entryMeta) empty() bool {
	return m.controllerMetadata == 0 && len(m.metadata) == 0 && m.selMode == 0 && m.sizeSem == 0 &&
		!slices.ContainsFunc(m.watch, func(f watchForm) bool { return f != watchUnset }) && len(m.groupWatch) == 0
}

// setMeta stores m under key, or forgets key when m holds nothing.
func (s *Server) setMeta(key string, m entryMeta) {
	if m.empty() {
		delete(s.entryMeta, key)
		return
	}
	s.entryMeta[key] = m
}

// defaultMetaKey and groupMetaKey are the entryMeta keys of a default entry and of
// an action profile group (metaKey's start with a digit, so they never collide).
func defaultMetaKey(tableID uint32) string { return fmt.Sprintf("default/%d", tableID) }

func groupMetaKey(profileID, groupID uint32) string {
	return fmt.Sprintf("group/%d/%d", profileID, groupID)
}

// watchForm is how a one-shot action or a group member gave its watch port. Only
// the forms meaning "no watch port" are accepted (the target has no port liveness);
// the form is kept so that a read returns what was written.
type watchForm uint8

const (
	watchUnset     watchForm = iota // watch_kind unset
	watchPortEmpty                  // watch_port set to the empty bytestring
	watchZero                       // the deprecated int32 watch set to 0 (SDN_PORT_UNKNOWN)
)

// checkWatch validates a watch_kind (of an ActionProfileAction or a group Member).
// Spec 9.2.2: "If watch_port is empty, then the member is always included in the
// selection [...] The value must be empty or the SDN port of an existing port on the
// device, otherwise the server must return INVALID_ARGUMENT. If the target does not
// support using the SDN port as a watch port [...] the server must return
// UNIMPLEMENTED."
func checkWatch(what string, kind any) (watchForm, error) {
	var port int64
	switch w := kind.(type) {
	case nil:
		return watchUnset, nil
	case *p4v1.ActionProfileAction_WatchPort, *p4v1.ActionProfileGroup_Member_WatchPort:
		var b []byte
		if x, ok := w.(*p4v1.ActionProfileAction_WatchPort); ok {
			b = x.WatchPort
		} else {
			b = w.(*p4v1.ActionProfileGroup_Member_WatchPort).WatchPort
		}
		if len(b) == 0 {
			return watchPortEmpty, nil
		}
		v, err := decodeBits(b, 32, what+": watch_port")
		if err != nil {
			return 0, errorf(codes.InvalidArgument, "%s: watch_port 0x%x is not a port of this device", what, b)
		}
		port = int64(v)
	case *p4v1.ActionProfileAction_Watch, *p4v1.ActionProfileGroup_Member_Watch:
		if x, ok := w.(*p4v1.ActionProfileAction_Watch); ok {
			port = int64(x.Watch)
		} else {
			port = int64(w.(*p4v1.ActionProfileGroup_Member_Watch).Watch)
		}
		if port == 0 {
			return watchZero, nil
		}
	default:
		return 0, errorf(codes.InvalidArgument, "%s: watch_kind %T not valid", what, kind)
	}
	if port < 0 || port >= p4src.NumPorts {
		return 0, errorf(codes.InvalidArgument, "%s: watch port %d is not a port of this device (0..%d)", what, port, p4src.NumPorts-1)
	}
	return 0, errorf(codes.Unimplemented, "%s: watch port %d: this target has no port liveness, leave watch_port empty", what, port)
}

// checkSelectorMode enforces spec 9.2.3: "All the tables associated with an action
// selector may either be programmed exclusively with one shots, or exclusively with
// ActionProfileMember and ActionProfileGroup messages. [...] the server must return
// the error code INVALID_ARGUMENT in that case." As in PI, a profile that holds
// nothing may switch mode.
func checkSelectorMode(p *pipeline.Pipeline, pi *pipeline.ActionProfileInfo, oneShot bool) error {
	u, err := p.ProfileUsage(pi.ID)
	if err != nil {
		return wrapPipeline(err)
	}
	if oneShot && u.Members+u.Groups > 0 {
		return errorf(codes.InvalidArgument, "action profile %s is programmed with members and groups (%d members, %d groups): a one-shot action set cannot be mixed in", pi.Name, u.Members, u.Groups)
	}
	if !oneShot && u.OneShots > 0 {
		return errorf(codes.InvalidArgument, "action profile %s is programmed with one-shot action sets (%d table entries): members and groups cannot be mixed in", pi.Name, u.OneShots)
	}
	return nil
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
	// The arbitration check and the updates run under one hold of stateMu, which a
	// change of primary waits for (arbitrate): a write checked against a primary
	// that is then deposed is applied before its successor is told it is primary,
	// never after (a successor's read-back sees it). That is what fences a
	// controller that lost its mastership without knowing it (docs/controller.md,
	// "High availability on etcd").
	s.stateMu.Lock()
	errs, internal, err := s.writeLocked(ctx, req)
	s.stateMu.Unlock()
	if err != nil {
		return nil, err
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

// writeLocked checks that the writer is the primary and the request valid, and
// applies the batch (s.stateMu held). It returns the per-update errors, a failed
// rollback, or the gRPC status of a request refused as a whole.
func (s *Server) writeLocked(ctx context.Context, req *p4v1.WriteRequest) (errs []error, internal, refused error) {
	if err := s.checkPrimary(roleKey(req.GetRole(), req.GetRoleId()), req.GetElectionId()); err != nil {
		return nil, nil, toStatus(err)
	}
	if hook := s.afterWriteCheck.Load(); hook != nil {
		(*hook)()
	}
	if err := s.requireConfig(); err != nil {
		return nil, nil, toStatus(err)
	}
	// The batch runs under one Exec, so the data path sees it whole or not at all:
	// with rollback that is also DATAPLANE_ATOMIC.
	a := req.GetAtomicity()
	if a != p4v1.WriteRequest_CONTINUE_ON_ERROR && a != p4v1.WriteRequest_ROLLBACK_ON_ERROR && a != p4v1.WriteRequest_DATAPLANE_ATOMIC {
		return nil, nil, toStatus(errorf(codes.InvalidArgument, "atomicity %d not valid", a))
	}
	err := s.dp.Exec(ctx, func(p *pipeline.Pipeline) error {
		errs, internal = s.applyAll(p, req.GetUpdates(), a != p4v1.WriteRequest_CONTINUE_ON_ERROR)
		return nil
	})
	if err != nil {
		return nil, nil, toStatus(&codedError{code: codes.Unavailable, msg: "data plane", err: err})
	}
	return errs, internal, nil
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
// table with an action selector a member, a group or a one-shot action set. For a
// one-shot it returns what the server keeps of the set for reads.
func (s *Server) entryRunFromProto(ti *pipeline.TableInfo, ta *p4v1.TableAction, e *pipeline.TableEntry) (entryMeta, error) {
	var meta entryMeta
	if ta == nil {
		return meta, errorf(codes.InvalidArgument, "table %s: action missing", ti.Name)
	}
	indirect := ti.ProfileID != 0
	switch x := ta.GetType().(type) {
	case *p4v1.TableAction_Action:
		if indirect {
			return meta, errorf(codes.InvalidArgument, "table %s has an action selector: an entry runs a member, a group or a one-shot action set", ti.Name)
		}
		a, err := s.convertAction("table "+ti.Name, ti.ActionIDs, x.Action)
		e.Action = a
		return meta, err
	case *p4v1.TableAction_ActionProfileMemberId, *p4v1.TableAction_ActionProfileGroupId, *p4v1.TableAction_ActionProfileActionSet:
		if !indirect {
			return meta, errorf(codes.InvalidArgument, "table %s has no action profile: an entry runs a direct action", ti.Name)
		}
	default:
		return meta, errorf(codes.InvalidArgument, "table %s: action missing", ti.Name)
	}
	switch x := ta.GetType().(type) {
	case *p4v1.TableAction_ActionProfileMemberId:
		if x.ActionProfileMemberId == 0 {
			return meta, errorf(codes.InvalidArgument, "table %s: member ID 0 is not valid", ti.Name)
		}
		e.MemberID = x.ActionProfileMemberId
	case *p4v1.TableAction_ActionProfileGroupId:
		if x.ActionProfileGroupId == 0 {
			return meta, errorf(codes.InvalidArgument, "table %s: group ID 0 is not valid", ti.Name)
		}
		e.GroupID = x.ActionProfileGroupId
	case *p4v1.TableAction_ActionProfileActionSet:
		set := x.ActionProfileActionSet
		switch {
		case set.GetGroupAction() != nil:
			return meta, errorf(codes.Unimplemented, "table %s: a one-shot group action is not supported", ti.Name)
		case set.GetActionSelectionMode() == p4v1.ActionProfileActionSet_RANDOM:
			return meta, errorf(codes.Unimplemented, "table %s: random one-shot selection is not supported (the selector hashes)", ti.Name)
		case set.GetActionSelectionMode() != p4v1.ActionProfileActionSet_DEFAULT_MODE_DETERMINED_BY_ACTION_SELECTOR &&
			set.GetActionSelectionMode() != p4v1.ActionProfileActionSet_HASH:
			return meta, errorf(codes.InvalidArgument, "table %s: action selection mode %d not valid", ti.Name, set.GetActionSelectionMode())
		case set.GetSizeSemantics() == p4v1.ActionProfileActionSet_SUM_OF_MEMBERS:
			return meta, errorf(codes.Unimplemented, "table %s: SUM_OF_MEMBERS size semantics are not supported", ti.Name)
		case set.GetSizeSemantics() != p4v1.ActionProfileActionSet_DEFAULT_SIZE_DETERMINED_BY_ACTION_SELECTOR &&
			set.GetSizeSemantics() != p4v1.ActionProfileActionSet_SUM_OF_WEIGHTS:
			return meta, errorf(codes.InvalidArgument, "table %s: size semantics %d not valid", ti.Name, set.GetSizeSemantics())
		case len(set.GetActionProfileActions()) == 0:
			return meta, errorf(codes.InvalidArgument, "table %s: an empty one-shot action set", ti.Name)
		}
		meta.selMode, meta.sizeSem = set.GetActionSelectionMode(), set.GetSizeSemantics()
		e.OneShot = make([]pipeline.WeightedAction, 0, len(set.GetActionProfileActions()))
		for i, pa := range set.GetActionProfileActions() {
			w, err := checkWatch(fmt.Sprintf("table %s: one-shot action %d", ti.Name, i), pa.GetWatchKind())
			if err != nil {
				return meta, err
			}
			if w != watchUnset && meta.watch == nil {
				meta.watch = make([]watchForm, len(set.GetActionProfileActions()))
			}
			if meta.watch != nil {
				meta.watch[i] = w
			}
			if pa.GetAction() == nil {
				return meta, errorf(codes.InvalidArgument, "table %s: one-shot action %d: action missing", ti.Name, i)
			}
			a, err := s.convertAction("table "+ti.Name, ti.ActionIDs, pa.GetAction())
			if err != nil {
				return meta, err
			}
			e.OneShot = append(e.OneShot, pipeline.WeightedAction{Action: a, Weight: pa.GetWeight()})
		}
	}
	return meta, nil
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
	// Rules of every write, DELETE included. Spec 9.1: "The is_const field must be
	// false in any INSERT, MODIFY, or DELETE write request of a table entry." Spec
	// 9.1.8: "The time_since_last_hit field must be unset for a TableEntry write",
	// and no table of the program supports idle timeout.
	switch {
	case te.GetIsConst():
		return errorf(codes.InvalidArgument, "table %s: is_const must be false in a write (%s)", ti.Name, t)
	case te.GetTimeSinceLastHit() != nil:
		return errorf(codes.InvalidArgument, "table %s: time_since_last_hit must be unset in a write (it is only for reads)", ti.Name)
	case te.GetIdleTimeoutNs() != 0:
		return errorf(codes.InvalidArgument, "table %s does not support idle timeout", ti.Name)
	}
	// Spec 9.1: "When deleting an entry, these key fields (along with
	// is_default_action) are the only fields considered by the server. All other
	// fields must be ignored."
	if t != p4v1.Update_DELETE {
		switch {
		case te.GetMeterConfig() != nil || te.GetMeterCounterData() != nil:
			return errorf(codes.InvalidArgument, "table %s has no direct meter", ti.Name)
		case te.GetCounterData() != nil:
			return errorf(codes.InvalidArgument, "table %s has no direct counter", ti.Name)
		}
	}
	if te.GetIsDefaultAction() {
		return s.writeDefaultEntry(p, t, ti, te)
	}
	match, err := matchFromProto(ti, te.GetMatch())
	if err != nil {
		return err
	}
	e := pipeline.TableEntry{TableID: ti.ID, Match: match, Priority: te.GetPriority()}
	key := metaKey(&e)
	switch {
	case t == p4v1.Update_DELETE:
		if err := p.DeleteEntry(&e); err != nil {
			return wrapPipeline(err)
		}
		delete(s.entryMeta, key)
		return nil
	case t == p4v1.Update_MODIFY && te.GetAction() == nil:
		// Spec 9.1.2: "if a MODIFY update has an unset action field and does not
		// modify any direct resource attached to the table then the MODIFY update is
		// a no-op" (the program's tables have no direct resources): the entry must
		// exist, nothing changes, its metadata included.
		_, err := p.ReadEntry(&e)
		return wrapPipeline(err)
	}
	meta, err := s.entryRunFromProto(ti, te.GetAction(), &e)
	if err != nil {
		return err
	}
	if len(e.OneShot) > 0 {
		if err := checkSelectorMode(p, s.schemaProfile(ti.ProfileID), true); err != nil {
			return err
		}
	}
	if t == p4v1.Update_INSERT {
		err = p.InsertEntry(&e)
	} else {
		err = p.ModifyEntry(&e)
	}
	if err != nil {
		return wrapPipeline(err)
	}
	meta.controllerMetadata, meta.metadata = te.GetControllerMetadata(), slices.Clone(te.GetMetadata())
	s.setMeta(key, meta)
	return nil
}

// schemaProfile returns the action profile of a table's implementation (known to
// exist: the schema checks it).
func (s *Server) schemaProfile(id uint32) *pipeline.ActionProfileInfo {
	pi, ok := s.schema.ActionProfile(id)
	if !ok {
		return &pipeline.ActionProfileInfo{ID: id, Name: fmt.Sprintf("%#x", id)}
	}
	return pi
}

// writeDefaultEntry writes a table's default entry (spec 9.1.3 "Default Entry").
func (s *Server) writeDefaultEntry(p *pipeline.Pipeline, t p4v1.Update_Type, ti *pipeline.TableInfo, te *p4v1.TableEntry) error {
	if t != p4v1.Update_MODIFY {
		return errorf(codes.InvalidArgument, "table %s: the default entry can only be modified (%s)", ti.Name, t)
	}
	if len(te.GetMatch()) > 0 || te.GetPriority() != 0 {
		return errorf(codes.InvalidArgument, "table %s: the default entry has no match or priority", ti.Name)
	}
	if ti.ConstDefault {
		return errorf(codes.PermissionDenied, "table %s: the default action is const", ti.Name)
	}
	key := defaultMetaKey(ti.ID)
	if te.GetAction() == nil {
		// "leave the action field unset, in which case the default entry will be reset
		// to its original value [...] its controller_metadata and metadata value [...]
		// will be reset to their defaults."
		if err := p.ResetDefaultAction(ti.ID); err != nil {
			return wrapPipeline(err)
		}
		delete(s.entryMeta, key)
		return nil
	}
	a, err := s.actionFromProto(ti, te.GetAction())
	if err != nil {
		return err
	}
	if err := p.SetDefaultAction(ti.ID, &a); err != nil {
		return wrapPipeline(err)
	}
	s.setMeta(key, entryMeta{controllerMetadata: te.GetControllerMetadata(), metadata: slices.Clone(te.GetMetadata())})
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
	if err := checkSelectorMode(p, pi, false); err != nil {
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
	key := groupMetaKey(pi.ID, g.GetGroupId())
	if t == p4v1.Update_DELETE {
		if err := p.DeleteProfileGroup(pi.ID, g.GetGroupId()); err != nil {
			return wrapPipeline(err)
		}
		delete(s.entryMeta, key)
		return nil
	}
	pg := &pipeline.ProfileGroup{ProfileID: pi.ID, GroupID: g.GetGroupId(), MaxSize: g.GetMaxSize(),
		Members: make([]pipeline.GroupMember, 0, len(g.GetMembers()))}
	var meta entryMeta
	for i, m := range g.GetMembers() {
		w, err := checkWatch(fmt.Sprintf("action profile %s group %d: member %d", pi.Name, g.GetGroupId(), i), m.GetWatchKind())
		if err != nil {
			return err
		}
		if w != watchUnset {
			if meta.groupWatch == nil {
				meta.groupWatch = map[uint32]watchForm{}
			}
			meta.groupWatch[m.GetMemberId()] = w
		}
		pg.Members = append(pg.Members, pipeline.GroupMember{MemberID: m.GetMemberId(), Weight: m.GetWeight()})
	}
	if err := checkSelectorMode(p, pi, false); err != nil {
		return err
	}
	if t == p4v1.Update_INSERT {
		err = p.InsertProfileGroup(pg)
	} else {
		err = p.ModifyProfileGroup(pg)
	}
	if err != nil {
		return wrapPipeline(err)
	}
	s.setMeta(key, meta)
	return nil
}

// cellIndex converts an optional index: nil is every cell (-1). Spec 9.3.2 and 9.7:
// "The server must return INVALID_ARGUMENT for a negative index value and
// OUT_OF_RANGE if the index value exceeds the size of the counter array" (likewise
// for registers); reads answer the same.
func cellIndex(ix *p4v1.Index, size int, what string) (int, error) {
	if ix == nil {
		return -1, nil
	}
	if ix.GetIndex() < 0 {
		return 0, errorf(codes.InvalidArgument, "%s: index %d is negative", what, ix.GetIndex())
	}
	if ix.GetIndex() >= int64(size) {
		return 0, errorf(codes.OutOfRange, "%s: index %d not in 0..%d", what, ix.GetIndex(), size-1)
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
	if d == nil {
		// Spec 9.3.2: "Note that the counter value is not modified if this Protobuf
		// field is not set."
		return nil
	}
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
	// Spec 9.7: "The data field is a P4Data message and must match the format
	// described by the type_spec field of the corresponding Register entry in the
	// P4Info, or the server must return an INVALID_ARGUMENT error." Unlike
	// CounterEntry, the spec gives no "unset data: unchanged" rule: a MODIFY without
	// data is refused and the cells keep their values.
	bs, ok := re.GetData().GetData().(*p4v1.P4Data_Bitstring)
	if !ok {
		return errorf(codes.InvalidArgument, "register %s: data must be a bitstring (bit<%d>)", ri.Name, ri.Bitwidth)
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
		// Spec 9.6: "the server must return an ALREADY_EXISTS error in case of
		// duplicate members" (the pipeline refuses them); "The maximum number of
		// matches must not exceed the maximum size [...] otherwise the server must
		// return a RESOURCE_EXHAUSTED error."
		members = append(members, v)
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
