package p4rtserver

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/fastcnp/fastcnp/model/pipeline"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
)

// Read implements p4.v1.P4Runtime. Every entity of the request (a "request" of the
// batch, spec 13.3) is resolved under one Exec before anything is sent. The entities
// read are streamed in batches of readBatch; then, if any request was invalid, the
// status is UNKNOWN with one p4.v1.Error per request, in order (OK for the good ones),
// as spec 13.3 "Batch Processing" says: "If a client asked to read {a,b,c,d} and b and
// d requests didn't validate, the server will return entities corresponding to a and
// c, followed by a status {p4.Error(OK), p4.Error(xxx), p4.Error(yyy), p4.Error(OK)}
// in the details field." A request that fails contributes no entity.
func (s *Server) Read(req *p4v1.ReadRequest, stream grpc.ServerStreamingServer[p4v1.ReadResponse]) error {
	ctx := stream.Context()
	if err := s.checkDevice(req.GetDeviceId()); err != nil {
		return toStatus(err)
	}
	if err := s.requireConfig(); err != nil {
		return toStatus(err)
	}
	var out []*p4v1.Entity
	emit := func(e *p4v1.Entity) { out = append(out, e) }
	errs := make([]error, len(req.GetEntities()))
	failed := 0
	s.stateMu.Lock()
	err := s.dp.Exec(ctx, func(p *pipeline.Pipeline) error {
		for i, e := range req.GetEntities() {
			n := len(out)
			if err := s.readEntity(p, e, emit); err != nil {
				clear(out[n:])
				out = out[:n]
				errs[i] = err
				failed++
			}
		}
		return nil
	})
	s.stateMu.Unlock()
	if err != nil {
		s.log.WithFields(logrus.Fields{"rpc": "Read"}).WithError(err).Debug("read refused")
		return toStatus(err)
	}
	for len(out) > 0 {
		n := min(len(out), readBatch)
		if err := stream.Send(&p4v1.ReadResponse{Entities: out[:n]}); err != nil {
			return err
		}
		out = out[n:]
	}
	if failed == 0 {
		return nil
	}
	details := make([]protoadapt.MessageV1, len(errs))
	for i, e := range errs {
		pe := &p4v1.Error{CanonicalCode: int32(codes.OK)}
		if e != nil {
			pe = &p4v1.Error{CanonicalCode: int32(codeOf(e)), Message: e.Error()}
		}
		details[i] = protoadapt.MessageV1Of(pe)
	}
	st, derr := status.New(codes.Unknown, fmt.Sprintf("%d of %d read requests failed", failed, len(errs))).WithDetails(details...)
	if derr != nil {
		return status.Errorf(codes.Internal, "read: encode error details: %v", derr)
	}
	s.log.WithFields(logrus.Fields{"rpc": "Read", "failed": failed}).Debug("read with failed requests")
	return st.Err()
}

func tableEntryEntity(te *p4v1.TableEntry) *p4v1.Entity {
	return &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}
}

// actionToProto converts a pipeline action.
func actionToProto(a pipeline.Action) *p4v1.TableAction {
	pa := &p4v1.Action{ActionId: a.ID}
	for _, p := range a.Params {
		pa.Params = append(pa.Params, &p4v1.Action_Param{ParamId: p.ID, Value: encodeBits(p.Value)})
	}
	return &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: pa}}
}

// entryRunToProto converts what a pipeline entry runs; meta holds the one-shot
// set's enums and watch forms as written.
func entryRunToProto(e *pipeline.TableEntry, meta *entryMeta) *p4v1.TableAction {
	switch {
	case e.MemberID != 0:
		return &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileMemberId{ActionProfileMemberId: e.MemberID}}
	case e.GroupID != 0:
		return &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileGroupId{ActionProfileGroupId: e.GroupID}}
	case len(e.OneShot) > 0:
		set := &p4v1.ActionProfileActionSet{ActionSelectionMode: meta.selMode, SizeSemantics: meta.sizeSem}
		for i, wa := range e.OneShot {
			pa := &p4v1.ActionProfileAction{Action: actionToProto(wa.Action).GetAction(), Weight: wa.Weight}
			if i < len(meta.watch) {
				switch meta.watch[i] {
				case watchPortEmpty:
					pa.WatchKind = &p4v1.ActionProfileAction_WatchPort{WatchPort: []byte{}}
				case watchZero:
					pa.WatchKind = &p4v1.ActionProfileAction_Watch{}
				}
			}
			set.ActionProfileActions = append(set.ActionProfileActions, pa)
		}
		return &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileActionSet{ActionProfileActionSet: set}}
	}
	return actionToProto(e.Action)
}

// entryToProto converts a pipeline entry, with what the server keeps beside it.
func (s *Server) entryToProto(e *pipeline.TableEntry) *p4v1.TableEntry {
	md := s.entryMeta[metaKey(e)]
	te := &p4v1.TableEntry{TableId: e.TableID, Priority: e.Priority, Action: entryRunToProto(e, &md),
		ControllerMetadata: md.controllerMetadata, Metadata: slices.Clone(md.metadata)}
	ti, _ := s.schema.Table(e.TableID)
	for _, m := range e.Match {
		fm := &p4v1.FieldMatch{FieldId: m.FieldID}
		kind := pipeline.MatchExact
		for _, k := range ti.Keys {
			if k.ID == m.FieldID {
				kind = k.Kind
			}
		}
		switch kind {
		case pipeline.MatchExact:
			fm.FieldMatchType = &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: encodeBits(m.Value)}}
		case pipeline.MatchLPM:
			fm.FieldMatchType = &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: encodeBits(m.Value), PrefixLen: m.PrefixLen}}
		case pipeline.MatchTernary:
			fm.FieldMatchType = &p4v1.FieldMatch_Ternary_{Ternary: &p4v1.FieldMatch_Ternary{Value: encodeBits(m.Value), Mask: encodeBits(m.Mask)}}
		}
		te.Match = append(te.Match, fm)
	}
	return te
}

// readEntity resolves one entity of a ReadRequest; s.stateMu is held.
func (s *Server) readEntity(p *pipeline.Pipeline, e *p4v1.Entity, emit func(*p4v1.Entity)) error {
	switch x := e.GetEntity().(type) {
	case *p4v1.Entity_TableEntry:
		return s.readTable(p, x.TableEntry, emit)
	case *p4v1.Entity_CounterEntry:
		return s.readCounter(p, x.CounterEntry, emit)
	case *p4v1.Entity_RegisterEntry:
		return s.readRegister(p, x.RegisterEntry, emit)
	case *p4v1.Entity_ValueSetEntry:
		return s.readValueSet(p, x.ValueSetEntry, emit)
	case *p4v1.Entity_DigestEntry:
		return s.readDigest(p, x.DigestEntry, emit)
	case *p4v1.Entity_PacketReplicationEngineEntry:
		return s.readPRE(p, x.PacketReplicationEngineEntry, emit)
	case *p4v1.Entity_ActionProfileMember:
		return s.readProfileMembers(p, x.ActionProfileMember, emit)
	case *p4v1.Entity_ActionProfileGroup:
		return s.readProfileGroups(p, x.ActionProfileGroup, emit)
	case *p4v1.Entity_MeterEntry:
		return noObjects("meter", x.MeterEntry.GetMeterId())
	case *p4v1.Entity_DirectMeterEntry:
		return noObjects("direct meter of table", x.DirectMeterEntry.GetTableEntry().GetTableId())
	case *p4v1.Entity_DirectCounterEntry:
		return noObjects("direct counter of table", x.DirectCounterEntry.GetTableEntry().GetTableId())
	case *p4v1.Entity_ExternEntry:
		return noObjects("extern type", x.ExternEntry.GetExternTypeId())
	case nil:
		return errorf(codes.InvalidArgument, "read of an empty entity")
	}
	return errorf(codes.Unimplemented, "entity kind not supported")
}

// noObjects answers a read of an object kind the program does not have: a wildcard
// (ID 0) reads nothing, any other ID is unknown.
func noObjects(kind string, id uint32) error {
	if id == 0 {
		return nil
	}
	return errorf(codes.InvalidArgument, "%s ID %#x unknown: the program has none", kind, id)
}

// tableFilter is what a TableEntry read selects on, besides table_id and match
// (spec 9.1.6 "Wildcard Reads"): each field at its default value is a wildcard.
type tableFilter struct {
	actionID           uint32 // action: the action_id of a direct action
	priority           int32
	controllerMetadata uint64
	metadata           []byte
}

// keeps reports whether an entry (or a default entry, priority 0) passes the filter.
func (f *tableFilter) keeps(actionID uint32, priority int32, md *entryMeta) bool {
	return (f.actionID == 0 || actionID == f.actionID) &&
		(f.priority == 0 || priority == f.priority) &&
		(f.controllerMetadata == 0 || md.controllerMetadata == f.controllerMetadata) &&
		(len(f.metadata) == 0 || bytes.Equal(md.metadata, f.metadata))
}

// readTable answers a TableEntry read. Spec 9.1.6: "table_id: If default (0),
// entries from all tables [...] will be selected"; "match: [...] results will be
// filtered based on the provided match key, which must be a valid match key for the
// table. The match will be exact"; "action: [...] the client can provide an
// action_id (for direct tables), which will be use to filter table entries. [...]
// the client cannot filter based on action parameter values and cannot filter
// indirect table entries based on action profile member id / action profile group
// id"; "priority", "controller_metadata", "metadata": filters unless default;
// "is_default_action: If default (false), all non-default entries from the
// specified table will be considered. Otherwise, only the default entry will be
// considered."
func (s *Server) readTable(p *pipeline.Pipeline, te *p4v1.TableEntry, emit func(*p4v1.Entity)) error {
	// Spec 9.1.8: with a table that does not support idle timeout, INVALID_ARGUMENT
	// if "idle_timeout_ns is set to a non-zero value, or time_since_last_hit is set"
	// (none of the program's tables does, so in a read too, as PI answers).
	if te.GetTimeSinceLastHit() != nil || te.GetIdleTimeoutNs() != 0 {
		return errorf(codes.InvalidArgument, "no table of the program supports idle timeout: time_since_last_hit / idle_timeout_ns must be unset")
	}
	var tables []*pipeline.TableInfo
	if te.GetTableId() == 0 {
		if len(te.GetMatch()) > 0 {
			return errorf(codes.InvalidArgument, "a read of every table (table_id 0) cannot give a match")
		}
		for i := range s.schema.Tables {
			tables = append(tables, &s.schema.Tables[i])
		}
	} else {
		ti, err := s.tableInfo(te.GetTableId())
		if err != nil {
			return err
		}
		tables = []*pipeline.TableInfo{ti}
	}
	f := tableFilter{priority: te.GetPriority(), controllerMetadata: te.GetControllerMetadata(), metadata: te.GetMetadata()}
	switch x := te.GetAction().GetType().(type) {
	case nil:
	case *p4v1.TableAction_Action:
		if f.actionID = x.Action.GetActionId(); f.actionID != 0 {
			if _, ok := s.schema.Action(f.actionID); !ok {
				return errorf(codes.InvalidArgument, "read filter: action ID %#x unknown", f.actionID)
			}
		}
		if len(x.Action.GetParams()) > 0 {
			return errorf(codes.Unimplemented, "read filter: action parameters cannot be filtered on (only the action_id)")
		}
		if te.GetTableId() != 0 && f.actionID != 0 {
			if ti := tables[0]; ti.ProfileID != 0 {
				return errorf(codes.InvalidArgument, "read filter: table %s has an action selector, its entries have no direct action to filter on", ti.Name)
			} else if !slices.Contains(ti.ActionIDs, f.actionID) {
				return errorf(codes.InvalidArgument, "read filter: action %#x is not an action of table %s", f.actionID, ti.Name)
			}
		}
	default:
		return errorf(codes.Unimplemented, "read filter: only a direct action's action_id can be filtered on, not a member, group or action set")
	}
	if te.GetIsDefaultAction() {
		if len(te.GetMatch()) > 0 || te.GetPriority() != 0 {
			return errorf(codes.InvalidArgument, "the default entry has no match or priority")
		}
		for _, ti := range tables {
			a, err := p.DefaultAction(ti.ID)
			if err != nil {
				return wrapPipeline(err)
			}
			md := s.entryMeta[defaultMetaKey(ti.ID)]
			if !f.keeps(a.ID, 0, &md) {
				continue
			}
			emit(tableEntryEntity(&p4v1.TableEntry{TableId: ti.ID, IsDefaultAction: true, Action: actionToProto(a),
				ControllerMetadata: md.controllerMetadata, Metadata: slices.Clone(md.metadata)}))
		}
		return nil
	}
	keep := func(e *pipeline.TableEntry) {
		md := s.entryMeta[metaKey(e)]
		if f.keeps(e.Action.ID, e.Priority, &md) {
			emit(tableEntryEntity(s.entryToProto(e)))
		}
	}
	if len(te.GetMatch()) == 0 {
		for _, ti := range tables {
			entries, err := p.ReadEntries(ti.ID, nil)
			if err != nil {
				return wrapPipeline(err)
			}
			for i := range entries {
				keep(&entries[i])
			}
		}
		return nil
	}
	ti := tables[0]
	match, err := matchFromProto(ti, te.GetMatch())
	if err != nil {
		return err
	}
	want := pipeline.TableEntry{TableID: ti.ID, Match: match, Priority: te.GetPriority()}
	if !ti.NeedsPriority() || te.GetPriority() != 0 {
		got, err := p.ReadEntry(&want)
		if errors.Is(err, pipeline.ErrNotFound) {
			return nil
		}
		if err != nil {
			return wrapPipeline(err)
		}
		keep(&got)
		return nil
	}
	// A table with priorities and priority 0, a wildcard: the entries with that match
	// key at any priority. The key must still be valid (checked at priority 1).
	want.Priority = 1
	if _, err := p.ReadEntry(&want); err != nil && !errors.Is(err, pipeline.ErrNotFound) {
		return wrapPipeline(err)
	}
	entries, err := p.ReadEntries(ti.ID, nil)
	if err != nil {
		return wrapPipeline(err)
	}
	mk := matchKey(want.Match)
	for i := range entries {
		if matchKey(entries[i].Match) == mk {
			keep(&entries[i])
		}
	}
	return nil
}

// matchKey is a canonical match (as the pipeline reads it back) as a comparable key.
func matchKey(ms []pipeline.FieldMatch) string {
	e := pipeline.TableEntry{Match: ms}
	return metaKey(&e)
}

// readProfileMembers answers a member read: action_profile_id 0 is every profile,
// member_id 0 every member; a member that does not exist reads as nothing.
func (s *Server) readProfileMembers(p *pipeline.Pipeline, m *p4v1.ActionProfileMember, emit func(*p4v1.Entity)) error {
	if id := m.GetActionProfileId(); id != 0 {
		if _, err := s.profileInfo(id); err != nil {
			return err
		}
	}
	ms, err := p.ReadProfileMembers(m.GetActionProfileId(), m.GetMemberId(), nil)
	if err != nil {
		return wrapPipeline(err)
	}
	for _, x := range ms {
		emit(&p4v1.Entity{Entity: &p4v1.Entity_ActionProfileMember{ActionProfileMember: &p4v1.ActionProfileMember{
			ActionProfileId: x.ProfileID, MemberId: x.MemberID, Action: actionToProto(x.Action).GetAction()}}})
	}
	return nil
}

// readProfileGroups answers a group read like readProfileMembers.
func (s *Server) readProfileGroups(p *pipeline.Pipeline, g *p4v1.ActionProfileGroup, emit func(*p4v1.Entity)) error {
	if id := g.GetActionProfileId(); id != 0 {
		if _, err := s.profileInfo(id); err != nil {
			return err
		}
	}
	gs, err := p.ReadProfileGroups(g.GetActionProfileId(), g.GetGroupId(), nil)
	if err != nil {
		return wrapPipeline(err)
	}
	for _, x := range gs {
		out := &p4v1.ActionProfileGroup{ActionProfileId: x.ProfileID, GroupId: x.GroupID, MaxSize: x.MaxSize}
		md := s.entryMeta[groupMetaKey(x.ProfileID, x.GroupID)]
		for _, m := range x.Members {
			om := &p4v1.ActionProfileGroup_Member{MemberId: m.MemberID, Weight: m.Weight}
			switch md.groupWatch[m.MemberID] {
			case watchPortEmpty:
				om.WatchKind = &p4v1.ActionProfileGroup_Member_WatchPort{WatchPort: []byte{}}
			case watchZero:
				om.WatchKind = &p4v1.ActionProfileGroup_Member_Watch{}
			}
			out.Members = append(out.Members, om)
		}
		emit(&p4v1.Entity{Entity: &p4v1.Entity_ActionProfileGroup{ActionProfileGroup: out}})
	}
	return nil
}

func (s *Server) readCounter(p *pipeline.Pipeline, ce *p4v1.CounterEntry, emit func(*p4v1.Entity)) error {
	var cs []*pipeline.CounterInfo
	if ce.GetCounterId() == 0 {
		for i := range s.schema.Counters {
			cs = append(cs, &s.schema.Counters[i])
		}
	} else {
		ci, ok := s.schema.Counter(ce.GetCounterId())
		if !ok {
			return errorf(codes.InvalidArgument, "counter ID %#x unknown", ce.GetCounterId())
		}
		cs = append(cs, ci)
	}
	var vals []pipeline.CounterValue
	for _, ci := range cs {
		idx, err := cellIndex(ce.GetIndex(), ci.Size, "counter "+ci.Name)
		if err != nil {
			return err
		}
		if vals, err = p.ReadCounter(ci.ID, idx, vals[:0]); err != nil {
			return wrapPipeline(err)
		}
		for _, v := range vals {
			emit(&p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{
				CounterId: ci.ID, Index: &p4v1.Index{Index: int64(v.Index)},
				Data: &p4v1.CounterData{PacketCount: int64(v.Packets), ByteCount: int64(v.Bytes)}}}})
		}
	}
	return nil
}

func (s *Server) readRegister(p *pipeline.Pipeline, re *p4v1.RegisterEntry, emit func(*p4v1.Entity)) error {
	var rs []*pipeline.RegisterInfo
	if re.GetRegisterId() == 0 {
		for i := range s.schema.Registers {
			rs = append(rs, &s.schema.Registers[i])
		}
	} else {
		ri, ok := s.schema.Register(re.GetRegisterId())
		if !ok {
			return errorf(codes.InvalidArgument, "register ID %#x unknown", re.GetRegisterId())
		}
		rs = append(rs, ri)
	}
	var vals []pipeline.RegisterValue
	for _, ri := range rs {
		idx, err := cellIndex(re.GetIndex(), ri.Size, "register "+ri.Name)
		if err != nil {
			return err
		}
		if vals, err = p.ReadRegister(ri.ID, idx, vals[:0]); err != nil {
			return wrapPipeline(err)
		}
		for _, v := range vals {
			emit(&p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{
				RegisterId: ri.ID, Index: &p4v1.Index{Index: int64(v.Index)},
				Data: &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: encodeBits(v.Value)}}}}})
		}
	}
	return nil
}

func (s *Server) readValueSet(p *pipeline.Pipeline, ve *p4v1.ValueSetEntry, emit func(*p4v1.Entity)) error {
	var vs []*pipeline.ValueSetInfo
	if ve.GetValueSetId() == 0 {
		for i := range s.schema.ValueSets {
			vs = append(vs, &s.schema.ValueSets[i])
		}
	} else {
		vi, err := s.valueSetInfo(ve.GetValueSetId())
		if err != nil {
			return err
		}
		vs = append(vs, vi)
	}
	for _, vi := range vs {
		members, err := p.ValueSet(vi.ID)
		if err != nil {
			return wrapPipeline(err)
		}
		out := &p4v1.ValueSetEntry{ValueSetId: vi.ID}
		for _, m := range members {
			out.Members = append(out.Members, &p4v1.ValueSetMember{Match: []*p4v1.FieldMatch{{FieldId: 1,
				FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: encodeBits(m)}}}}})
		}
		emit(&p4v1.Entity{Entity: &p4v1.Entity_ValueSetEntry{ValueSetEntry: out}})
	}
	return nil
}

func (s *Server) readDigest(p *pipeline.Pipeline, de *p4v1.DigestEntry, emit func(*p4v1.Entity)) error {
	var ids []uint32
	if de.GetDigestId() == 0 {
		for _, d := range s.schema.Digests {
			ids = append(ids, d.ID)
		}
	} else {
		if _, ok := s.schema.Digest(de.GetDigestId()); !ok {
			return errorf(codes.InvalidArgument, "digest ID %#x unknown", de.GetDigestId())
		}
		ids = []uint32{de.GetDigestId()}
	}
	for _, id := range ids {
		c, err := p.ReadDigestConfig(id)
		if errors.Is(err, pipeline.ErrNotFound) {
			continue
		}
		if err != nil {
			return wrapPipeline(err)
		}
		emit(&p4v1.Entity{Entity: &p4v1.Entity_DigestEntry{DigestEntry: &p4v1.DigestEntry{DigestId: id,
			Config: &p4v1.DigestEntry_Config{MaxTimeoutNs: c.MaxTimeoutNs, MaxListSize: c.MaxListSize, AckTimeoutNs: c.AckTimeoutNs}}}})
	}
	return nil
}

func preEntity(pe *p4v1.PacketReplicationEngineEntry) *p4v1.Entity {
	return &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: pe}}
}

func (s *Server) readPRE(p *pipeline.Pipeline, pe *p4v1.PacketReplicationEngineEntry, emit func(*p4v1.Entity)) error {
	switch {
	case pe.GetCloneSessionEntry() != nil:
		ids := []uint32{pe.GetCloneSessionEntry().GetSessionId()}
		if ids[0] == 0 {
			ids = s.knownCloneIDs()
			slices.Sort(ids)
		}
		for _, id := range ids {
			cs, err := p.ReadCloneSession(id)
			if errors.Is(err, pipeline.ErrNotFound) {
				continue
			}
			if err != nil {
				return wrapPipeline(err)
			}
			// Answer in the port form the session was written with.
			r := &p4v1.Replica{PortKind: &p4v1.Replica_Port{Port: encodeBits(uint64(cs.EgressPort))}, Instance: cs.Instance}
			if s.cloneIDs[id] {
				r.PortKind = &p4v1.Replica_EgressPort{EgressPort: uint32(cs.EgressPort)}
			}
			emit(preEntity(&p4v1.PacketReplicationEngineEntry{Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{
				CloneSessionEntry: &p4v1.CloneSessionEntry{SessionId: cs.SessionID, ClassOfService: cs.ClassOfService,
					PacketLengthBytes: cs.PacketLengthBytes, Replicas: []*p4v1.Replica{r}}}}))
		}
		return nil
	case pe.GetMulticastGroupEntry() != nil:
		id := pe.GetMulticastGroupEntry().GetMulticastGroupId()
		var ids []uint32
		if id != 0 {
			ids = []uint32{id}
		} else {
			for gid := range s.mcastGroup {
				ids = append(ids, gid)
			}
			slices.Sort(ids)
		}
		for _, gid := range ids {
			if g, ok := s.mcastGroup[gid]; ok {
				emit(preEntity(&p4v1.PacketReplicationEngineEntry{Type: &p4v1.PacketReplicationEngineEntry_MulticastGroupEntry{
					MulticastGroupEntry: proto.Clone(g).(*p4v1.MulticastGroupEntry)}}))
			}
		}
		return nil
	}
	return errorf(codes.InvalidArgument, "packet replication engine read without a clone session or multicast group")
}
