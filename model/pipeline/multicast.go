package pipeline

import (
	"fmt"
	"slices"

	"github.com/fastcnp/fastcnp/p4src"
)

// Replica is one copy the packet replication engine makes of a packet sent to a
// multicast group: its egress port and instance (P4Runtime Replica; BMv2's egress_rid).
type Replica struct {
	Port     uint16
	Instance uint32
}

// MulticastGroup is a multicast group of the packet replication engine (P4Runtime
// MulticastGroupEntry). l2_flood sends a frame to the replicas of its group, in the
// order given, but the one on the frame's ingress port (docs/dataplane.md Egress
// step 0).
type MulticastGroup struct {
	ID       uint32
	Replicas []Replica
}

// Bounds of the packet replication engine's multicast groups.
const (
	// MaxMulticastGroups bounds the groups stored at once.
	MaxMulticastGroups = 1024
	// MaxReplicasPerGroup bounds the replicas of one group.
	MaxReplicasPerGroup = 1024
)

// checkGroup validates g: ID not 0, replica ports below NUM_PORTS, no (port, instance)
// twice, at most MaxReplicasPerGroup replicas.
func checkGroup(g *MulticastGroup) error {
	if g.ID == 0 {
		return fmt.Errorf("multicast group ID 0 is not valid: %w", ErrInvalidArgument)
	}
	if len(g.Replicas) > MaxReplicasPerGroup {
		return fmt.Errorf("multicast group %d: %d replicas > %d: %w", g.ID, len(g.Replicas), MaxReplicasPerGroup, ErrResourceExhausted)
	}
	seen := make(map[Replica]bool, len(g.Replicas))
	for i, r := range g.Replicas {
		if r.Port >= p4src.NumPorts {
			return fmt.Errorf("multicast group %d: replica %d port %d >= NUM_PORTS: %w", g.ID, i, r.Port, ErrInvalidArgument)
		}
		if seen[r] {
			return fmt.Errorf("multicast group %d: replica (port %d, instance %d) repeated: %w", g.ID, r.Port, r.Instance, ErrInvalidArgument)
		}
		seen[r] = true
	}
	return nil
}

// InsertMulticastGroup adds a multicast group (its replicas are copied). Errors:
// ErrInvalidArgument, ErrAlreadyExists, ErrResourceExhausted.
func (p *Pipeline) InsertMulticastGroup(g MulticastGroup) error {
	if err := checkGroup(&g); err != nil {
		return fmt.Errorf("insert: %w", err)
	}
	if _, ok := p.mcast[g.ID]; ok {
		return fmt.Errorf("insert multicast group %d: %w", g.ID, ErrAlreadyExists)
	}
	if len(p.mcast) >= MaxMulticastGroups {
		return fmt.Errorf("insert multicast group %d: %d groups: %w", g.ID, MaxMulticastGroups, ErrResourceExhausted)
	}
	p.mcast[g.ID] = slices.Clone(g.Replicas)
	return nil
}

// ModifyMulticastGroup replaces the replicas of a multicast group. Errors:
// ErrInvalidArgument, ErrNotFound, ErrResourceExhausted.
func (p *Pipeline) ModifyMulticastGroup(g MulticastGroup) error {
	if err := checkGroup(&g); err != nil {
		return fmt.Errorf("modify: %w", err)
	}
	if _, ok := p.mcast[g.ID]; !ok {
		return fmt.Errorf("modify multicast group %d: %w", g.ID, ErrNotFound)
	}
	p.mcast[g.ID] = slices.Clone(g.Replicas)
	return nil
}

// DeleteMulticastGroup removes a multicast group. Errors: ErrNotFound.
func (p *Pipeline) DeleteMulticastGroup(id uint32) error {
	if _, ok := p.mcast[id]; !ok {
		return fmt.Errorf("delete multicast group %d: %w", id, ErrNotFound)
	}
	delete(p.mcast, id)
	return nil
}

// ReadMulticastGroup returns a copy of a multicast group. Errors: ErrNotFound.
func (p *Pipeline) ReadMulticastGroup(id uint32) (MulticastGroup, error) {
	rs, ok := p.mcast[id]
	if !ok {
		return MulticastGroup{}, fmt.Errorf("read multicast group %d: %w", id, ErrNotFound)
	}
	return MulticastGroup{ID: id, Replicas: slices.Clone(rs)}, nil
}

// replicate returns the replicas of group but those on inPort, in p.repBuf (valid
// until the next call; no allocation: a group has at most cap(p.repBuf) replicas).
// v1model copies to every replica and drops the one on the ingress port in egress
// (egress pruning); not making it gives the same output.
func (p *Pipeline) replicate(group, inPort uint16) []Replica {
	out := p.repBuf[:0]
	for _, r := range p.mcast[uint32(group)] {
		if r.Port != inPort {
			out = append(out, r)
		}
	}
	p.repBuf = out
	return out
}
