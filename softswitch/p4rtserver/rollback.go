package p4rtserver

import (
	"errors"
	"fmt"
	"maps"

	"github.com/fastcnp/fastcnp/model/pipeline"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"google.golang.org/grpc/codes"
)

// undoFunc restores what one update changed.
type undoFunc func(p *pipeline.Pipeline) error

// undoFor captures, before u is applied, how to put back the state u may change
// (for ROLLBACK_ON_ERROR). It returns nil when u cannot succeed anyway (its entity
// does not convert), so there is nothing to undo. s.stateMu is held, p exclusive.
func (s *Server) undoFor(p *pipeline.Pipeline, u *p4v1.Update) undoFunc {
	switch e := u.GetEntity().GetEntity().(type) {
	case *p4v1.Entity_TableEntry:
		return s.undoTableEntry(p, e.TableEntry)
	case *p4v1.Entity_CounterEntry:
		ci, ok := s.schema.Counter(e.CounterEntry.GetCounterId())
		if !ok {
			return nil
		}
		idx, err := cellIndex(e.CounterEntry.GetIndex(), ci.Size, ci.Name)
		if err != nil {
			return nil
		}
		old, err := p.ReadCounter(ci.ID, idx, nil)
		if err != nil {
			return nil
		}
		return func(p *pipeline.Pipeline) error {
			for _, v := range old {
				if err := p.WriteCounter(ci.ID, v.Index, v.Packets, v.Bytes); err != nil {
					return fmt.Errorf("restore counter %s[%d]: %w", ci.Name, v.Index, err)
				}
			}
			return nil
		}
	case *p4v1.Entity_RegisterEntry:
		ri, ok := s.schema.Register(e.RegisterEntry.GetRegisterId())
		if !ok {
			return nil
		}
		idx, err := cellIndex(e.RegisterEntry.GetIndex(), ri.Size, ri.Name)
		if err != nil {
			return nil
		}
		old, err := p.ReadRegister(ri.ID, idx, nil)
		if err != nil {
			return nil
		}
		return func(p *pipeline.Pipeline) error {
			for _, v := range old {
				if err := p.WriteRegister(ri.ID, v.Index, v.Value); err != nil {
					return fmt.Errorf("restore register %s[%d]: %w", ri.Name, v.Index, err)
				}
			}
			return nil
		}
	case *p4v1.Entity_ValueSetEntry:
		id := e.ValueSetEntry.GetValueSetId()
		old, err := p.ValueSet(id)
		if err != nil {
			return nil
		}
		return func(p *pipeline.Pipeline) error { return p.SetValueSet(id, old) }
	case *p4v1.Entity_DigestEntry:
		id := e.DigestEntry.GetDigestId()
		old, err := p.ReadDigestConfig(id)
		existed := err == nil
		return func(p *pipeline.Pipeline) error {
			defer s.countDigests(p)
			if existed {
				return p.SetDigestConfig(id, old)
			}
			if err := p.DeleteDigestConfig(id); err != nil && !errors.Is(err, pipeline.ErrNotFound) {
				return err
			}
			return nil
		}
	case *p4v1.Entity_ActionProfileMember:
		return s.undoProfileMember(p, e.ActionProfileMember)
	case *p4v1.Entity_ActionProfileGroup:
		return s.undoProfileGroup(p, e.ActionProfileGroup)
	case *p4v1.Entity_PacketReplicationEngineEntry:
		if cs := e.PacketReplicationEngineEntry.GetCloneSessionEntry(); cs != nil {
			id := cs.GetSessionId()
			old, err := p.ReadCloneSession(id)
			existed := err == nil
			legacy, tracked := s.cloneIDs[id]
			return func(p *pipeline.Pipeline) error {
				if err := p.DeleteCloneSession(id); err != nil && !errors.Is(err, pipeline.ErrNotFound) {
					return err
				}
				delete(s.cloneIDs, id)
				if tracked {
					s.cloneIDs[id] = legacy
				}
				if existed {
					return p.InsertCloneSession(old)
				}
				return nil
			}
		}
		// Multicast groups: the pipeline's group and the server's map (entries are
		// replaced on write, never changed in place, so a shallow copy is enough).
		old := maps.Clone(s.mcastGroup)
		id := e.PacketReplicationEngineEntry.GetMulticastGroupEntry().GetMulticastGroupId()
		oldGroup, err := p.ReadMulticastGroup(id)
		existed := err == nil
		return func(p *pipeline.Pipeline) error {
			s.mcastGroup = old
			if err := p.DeleteMulticastGroup(id); err != nil && !errors.Is(err, pipeline.ErrNotFound) {
				return err
			}
			if existed {
				return p.InsertMulticastGroup(oldGroup)
			}
			return nil
		}
	}
	return nil
}

// undoProfileMember puts back a member: its old action, or its absence. Undos run
// in reverse order, so the groups and entries of later updates that used the
// member were undone first.
func (s *Server) undoProfileMember(p *pipeline.Pipeline, m *p4v1.ActionProfileMember) undoFunc {
	pi, ok := s.schema.ActionProfile(m.GetActionProfileId())
	if !ok || m.GetMemberId() == 0 {
		return nil
	}
	id := m.GetMemberId()
	read := func(p *pipeline.Pipeline) ([]pipeline.ProfileMember, error) {
		return p.ReadProfileMembers(pi.ID, id, nil)
	}
	return undoProfileObject(p, read, (*pipeline.Pipeline).InsertProfileMember, (*pipeline.Pipeline).ModifyProfileMember,
		func(p *pipeline.Pipeline) error { return p.DeleteProfileMember(pi.ID, id) })
}

// undoProfileGroup puts back a group: its old members, or its absence.
func (s *Server) undoProfileGroup(p *pipeline.Pipeline, g *p4v1.ActionProfileGroup) undoFunc {
	pi, ok := s.schema.ActionProfile(g.GetActionProfileId())
	if !ok || g.GetGroupId() == 0 {
		return nil
	}
	id := g.GetGroupId()
	read := func(p *pipeline.Pipeline) ([]pipeline.ProfileGroup, error) {
		return p.ReadProfileGroups(pi.ID, id, nil)
	}
	undo := undoProfileObject(p, read, (*pipeline.Pipeline).InsertProfileGroup, (*pipeline.Pipeline).ModifyProfileGroup,
		func(p *pipeline.Pipeline) error { return p.DeleteProfileGroup(pi.ID, id) })
	if undo == nil {
		return nil
	}
	restore := s.metaRestorer(groupMetaKey(pi.ID, id))
	return func(p *pipeline.Pipeline) error {
		restore()
		return undo(p)
	}
}

// metaRestorer captures the entryMeta stored under key (or its absence) and returns
// the function that puts it back.
func (s *Server) metaRestorer(key string) func() {
	old, had := s.entryMeta[key]
	return func() {
		delete(s.entryMeta, key)
		if had {
			s.entryMeta[key] = old
		}
	}
}

// undoProfileObject captures a member or group (read returns it, or nothing) and
// returns the undo that puts it back: modified back, inserted again, or deleted.
func undoProfileObject[T any](p *pipeline.Pipeline, read func(*pipeline.Pipeline) ([]T, error),
	insert, modify func(*pipeline.Pipeline, *T) error, del func(*pipeline.Pipeline) error) undoFunc {
	old, err := read(p)
	if err != nil {
		return nil
	}
	return func(p *pipeline.Pipeline) error {
		now, err := read(p)
		if err != nil {
			return err
		}
		switch {
		case len(old) == 1 && len(now) == 1:
			return modify(p, &old[0])
		case len(old) == 1:
			return insert(p, &old[0])
		case len(now) == 1:
			return del(p)
		}
		return nil
	}
}

func (s *Server) undoTableEntry(p *pipeline.Pipeline, te *p4v1.TableEntry) undoFunc {
	ti, ok := s.schema.Table(te.GetTableId())
	if !ok {
		return nil
	}
	if te.GetIsDefaultAction() {
		old, err := p.DefaultAction(ti.ID)
		if err != nil {
			return nil
		}
		restore := s.metaRestorer(defaultMetaKey(ti.ID))
		return func(p *pipeline.Pipeline) error {
			restore()
			return p.SetDefaultAction(ti.ID, &old)
		}
	}
	match, err := matchFromProto(ti, te.GetMatch())
	if err != nil {
		return nil
	}
	key := pipeline.TableEntry{TableID: ti.ID, Match: match, Priority: te.GetPriority()}
	mk := metaKey(&key)
	old, err := p.ReadEntry(&key)
	existed := err == nil
	oldMeta, hadMeta := s.entryMeta[mk]
	return func(p *pipeline.Pipeline) error {
		if err := p.DeleteEntry(&key); err != nil && !errors.Is(err, pipeline.ErrNotFound) {
			return err
		}
		delete(s.entryMeta, mk)
		if hadMeta {
			s.entryMeta[mk] = oldMeta
		}
		if existed {
			return p.InsertEntry(&old)
		}
		return nil
	}
}

// applyAll applies updates in order. CONTINUE_ON_ERROR: each on its own. With
// rollback (ROLLBACK_ON_ERROR), the first failure undoes the updates already applied,
// in reverse order, and the others are reported ABORTED. s.stateMu is held.
func (s *Server) applyAll(p *pipeline.Pipeline, updates []*p4v1.Update, rollback bool) ([]error, error) {
	errs := make([]error, len(updates))
	if !rollback {
		for i, u := range updates {
			errs[i] = s.apply(p, u)
		}
		return errs, nil
	}
	var undo []undoFunc
	for i, u := range updates {
		un := s.undoFor(p, u)
		if errs[i] = s.apply(p, u); errs[i] == nil {
			if un == nil {
				return errs, fmt.Errorf("update %d: applied without an undo", i)
			}
			undo = append(undo, un)
			continue
		}
		for j := len(undo) - 1; j >= 0; j-- {
			if err := undo[j](p); err != nil {
				return errs, fmt.Errorf("roll back update %d: %w", j, err)
			}
		}
		for j := range errs {
			if j < i {
				errs[j] = errorf(codes.Aborted, "rolled back: update %d failed", i)
			} else if j > i {
				errs[j] = errorf(codes.Aborted, "not applied: update %d failed", i)
			}
		}
		return errs, nil
	}
	return errs, nil
}
