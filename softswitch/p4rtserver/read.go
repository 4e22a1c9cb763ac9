package p4rtserver

import (
	"errors"
	"slices"

	"github.com/fastcnp/fastcnp/model/pipeline"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// Read implements p4.v1.P4Runtime. Every entity of the request is resolved (wildcards
// per the spec) before anything is sent, so a bad entity fails the whole Read with
// nothing streamed; results then go out in batches of readBatch entities.
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
	s.stateMu.Lock()
	err := s.dp.Exec(ctx, func(p *pipeline.Pipeline) error {
		for _, e := range req.GetEntities() {
			if err := s.readEntity(p, e, emit); err != nil {
				return err
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
	return nil
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

// entryRunToProto converts what a pipeline entry runs.
func entryRunToProto(e *pipeline.TableEntry) *p4v1.TableAction {
	switch {
	case e.MemberID != 0:
		return &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileMemberId{ActionProfileMemberId: e.MemberID}}
	case e.GroupID != 0:
		return &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileGroupId{ActionProfileGroupId: e.GroupID}}
	case len(e.OneShot) > 0:
		set := &p4v1.ActionProfileActionSet{}
		for _, wa := range e.OneShot {
			set.ActionProfileActions = append(set.ActionProfileActions, &p4v1.ActionProfileAction{
				Action: actionToProto(wa.Action).GetAction(), Weight: wa.Weight})
		}
		return &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileActionSet{ActionProfileActionSet: set}}
	}
	return actionToProto(e.Action)
}

// entryToProto converts a pipeline entry, with its stored metadata.
func (s *Server) entryToProto(e *pipeline.TableEntry) *p4v1.TableEntry {
	te := &p4v1.TableEntry{TableId: e.TableID, Priority: e.Priority, Action: entryRunToProto(e)}
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
	if md, ok := s.entryMeta[metaKey(e)]; ok {
		te.ControllerMetadata, te.Metadata = md.controllerMetadata, slices.Clone(md.metadata)
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

func (s *Server) readTable(p *pipeline.Pipeline, te *p4v1.TableEntry, emit func(*p4v1.Entity)) error {
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
	if te.GetIsDefaultAction() {
		if len(te.GetMatch()) > 0 {
			return errorf(codes.InvalidArgument, "the default entry has no match")
		}
		for _, ti := range tables {
			a, err := p.DefaultAction(ti.ID)
			if err != nil {
				return wrapPipeline(err)
			}
			emit(tableEntryEntity(&p4v1.TableEntry{TableId: ti.ID, IsDefaultAction: true, Action: actionToProto(a)}))
		}
		return nil
	}
	if len(te.GetMatch()) == 0 {
		for _, ti := range tables {
			entries, err := p.ReadEntries(ti.ID, nil)
			if err != nil {
				return wrapPipeline(err)
			}
			for i := range entries {
				if te.GetPriority() != 0 && entries[i].Priority != te.GetPriority() {
					continue
				}
				emit(tableEntryEntity(s.entryToProto(&entries[i])))
			}
		}
		return nil
	}
	ti := tables[0]
	match, err := matchFromProto(ti, te.GetMatch())
	if err != nil {
		return err
	}
	got, err := p.ReadEntry(&pipeline.TableEntry{TableID: ti.ID, Match: match, Priority: te.GetPriority()})
	if errors.Is(err, pipeline.ErrNotFound) {
		return nil
	}
	if err != nil {
		return wrapPipeline(err)
	}
	emit(tableEntryEntity(s.entryToProto(&got)))
	return nil
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
		for _, m := range x.Members {
			out.Members = append(out.Members, &p4v1.ActionProfileGroup_Member{MemberId: m.MemberID, Weight: m.Weight})
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
