// Package bmv2 runs the conformance vectors (package conformance) against BMv2
// simple_switch_grpc over P4Runtime, with veth pairs as ports: the vector's writes
// become P4Runtime updates, its packets are sent on AF_PACKET sockets, outputs are
// captured on the veth peers and compared under the vector's masks, packet-ins and
// digests come from the P4Runtime stream, counters from P4Runtime reads. Vectors that
// need what BMv2 cannot do (@go-only, @requires) are skipped with their reason.
package bmv2

import (
	"fmt"

	"github.com/fastcnp/fastcnp/conformance"
	"github.com/fastcnp/fastcnp/controller/p4rt"
	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
)

// IsWrite reports whether s is a control-plane write (as opposed to an event or an
// expectation).
func IsWrite(s *conformance.Stmt) bool { return conformance.IsWriteOp(s.Op) }

// Updates converts one write statement into P4Runtime updates by P4Info name:
// table entries are INSERTs, default actions and value sets MODIFYs (P4Runtime has
// no INSERT for them), clone sessions, multicast groups (replica instance 0) and
// digest configs INSERTs (digests: lists of one, sent at once, no ack timeout);
// window-tables expands to the generator's entries; action profile members and
// groups are INSERTs or DELETEs.
func Updates(info *p4rt.Info, s *conformance.Stmt) ([]*p4v1.Update, error) {
	switch s.Op {
	case conformance.OpTable, conformance.OpDefault:
		e, err := tableEntity(info, s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Where(), err)
		}
		if s.Op == conformance.OpDefault {
			return p4rt.Modify(e), nil
		}
		return p4rt.Insert(e), nil
	case conformance.OpClone:
		e, err := p4rt.CloneSession(s.Session, 0, 0, p4rt.Replica{Port: uint32(s.Port)})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Where(), err)
		}
		return p4rt.Insert(e), nil
	case conformance.OpMulticast:
		rs := make([]p4rt.Replica, 0, len(s.Ports))
		for _, port := range s.Ports {
			rs = append(rs, p4rt.Replica{Port: uint32(port)})
		}
		e, err := p4rt.MulticastGroup(s.Group, rs...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Where(), err)
		}
		return p4rt.Insert(e), nil
	case conformance.OpValueSet:
		members := make([][]p4rt.Match, 0, len(s.Values))
		for _, v := range s.Values {
			// The value set's single match field has no name in the P4Info.
			members = append(members, []p4rt.Match{p4rt.Exact("", v)})
		}
		e, err := info.ValueSetEntry(s.Name, members...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Where(), err)
		}
		return p4rt.Modify(e), nil
	case conformance.OpDigest:
		e, err := info.DigestConfig(s.Name, 0, 1, 0)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Where(), err)
		}
		return p4rt.Insert(e), nil
	case conformance.OpMember:
		params := make([]p4rt.Param, 0, len(s.Params))
		for _, p := range s.Params {
			params = append(params, p4rt.P(p.Name, p.Value))
		}
		e, err := info.ActionProfileMember(s.Profile, s.ObjectID, s.Action, params...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Where(), err)
		}
		return p4rt.Insert(e), nil
	case conformance.OpGroup, conformance.OpDeleteGroup:
		ms := make([]p4rt.GroupMember, 0, len(s.GroupMembers))
		for _, m := range s.GroupMembers {
			ms = append(ms, p4rt.GroupMember{ID: m.ID, Weight: m.Weight})
		}
		e, err := info.ActionProfileGroup(s.Profile, s.ObjectID, s.MaxSize, ms...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Where(), err)
		}
		if s.Op == conformance.OpDeleteGroup {
			return p4rt.Delete(e), nil
		}
		return p4rt.Insert(e), nil
	case conformance.OpDeleteMember:
		pid, err := info.ActionProfileID(s.Profile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Where(), err)
		}
		return p4rt.Delete(&p4v1.Entity{Entity: &p4v1.Entity_ActionProfileMember{ActionProfileMember: &p4v1.ActionProfileMember{
			ActionProfileId: pid, MemberId: s.ObjectID}}}), nil
	case conformance.OpWindowTables:
		writes := conformance.WindowTableWrites()
		out := make([]*p4v1.Update, 0, len(writes))
		for i := range writes {
			e, err := tableEntity(info, &writes[i])
			if err != nil {
				return nil, fmt.Errorf("%s: window tables: %w", s.Where(), err)
			}
			out = append(out, p4rt.Insert(e)...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: statement kind %d is not a write", s.Where(), s.Op)
}

// tableEntity builds the table entry (or default entry) of s.
func tableEntity(info *p4rt.Info, s *conformance.Stmt) (*p4v1.Entity, error) {
	b := info.TableEntry(s.Table)
	if s.Op == conformance.OpDefault {
		b = b.Default()
	}
	for _, m := range s.Match {
		switch m.Kind {
		case p4configv1.MatchField_EXACT:
			b = b.Match(p4rt.Exact(m.Field, m.Value))
		case p4configv1.MatchField_LPM:
			b = b.Match(p4rt.LPM(m.Field, m.Value, m.PrefixLen))
		case p4configv1.MatchField_TERNARY:
			b = b.Match(p4rt.Ternary(m.Field, m.Value, m.Mask))
		default:
			return nil, fmt.Errorf("table %s field %s: match kind %v", s.Table, m.Field, m.Kind)
		}
	}
	if s.Priority != 0 {
		b = b.Priority(s.Priority)
	}
	switch {
	case s.RefMember != 0:
		b = b.Member(s.RefMember)
	case s.RefGroup != 0:
		b = b.Group(s.RefGroup)
	default:
		params := make([]p4rt.Param, 0, len(s.Params))
		for _, p := range s.Params {
			params = append(params, p4rt.P(p.Name, p.Value))
		}
		b = b.Action(s.Action, params...)
	}
	e, err := b.Entity()
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", s.Table, err)
	}
	return e, nil
}

// PREDeletes returns the P4Runtime DELETEs that remove the packet replication
// engine's entries that the writes in stmts created: every clone session and
// multicast group, each once (with the replicas of its last write), the last
// created first. stmts are the writes that succeeded; refused ones are skipped.
//
// The BMv2 runner sends them at the end of every vector. A pipeline push (once per
// vector) makes PI's P4Runtime server start a new, empty record of multicast groups
// and clone sessions (DeviceMgr creates a new PreMcMgr and PreCloneMgr), while BMv2's
// packet replication engine is not part of the pipeline and keeps its groups. The
// next vector's INSERT of the same group then succeeds in PI, and BMv2's
// mc_mgrp_create keeps the existing group with its nodes and attaches a new node
// with the replicas: every vector that writes group 1 adds one more copy of each
// flood (l2-vlan-arp, the fifth such vector, saw 5 copies on each port), and every
// vector that writes clone session 100 (PI implements it as multicast group
// 32768 + 100) one more clone of each switch CNP. Deleting them while PI still knows
// them removes the nodes and the group from BMv2.
func PREDeletes(info *p4rt.Info, stmts []conformance.Stmt) ([]*p4v1.Update, error) {
	type key struct {
		op conformance.Op
		id uint32
	}
	last := map[key]int{}
	var order []key
	for i := range stmts {
		s := &stmts[i]
		if s.Refused != "" || (s.Op != conformance.OpClone && s.Op != conformance.OpMulticast) {
			continue
		}
		k := key{s.Op, s.Session}
		if s.Op == conformance.OpMulticast {
			k.id = s.Group
		}
		if _, ok := last[k]; !ok {
			order = append(order, k)
		}
		last[k] = i
	}
	out := make([]*p4v1.Update, 0, len(order))
	for j := len(order) - 1; j >= 0; j-- {
		ups, err := Updates(info, &stmts[last[order[j]]])
		if err != nil {
			return nil, err
		}
		for _, u := range ups {
			out = append(out, p4rt.Delete(u.GetEntity())...)
		}
	}
	return out, nil
}
