package pipeline

import (
	"fmt"
	"slices"

	"github.com/fastcnp/fastcnp/p4src"
)

const mask48 = 1<<48 - 1

// incFlowWays is the number of data flows the INC data-flow map keeps per
// connection: INC_FLOW_WAYS in v1model, 1 in the TNA program (its stateful ALUs
// cannot hold four ways next to the 16 vector lanes; docs/tofino.md "INC").
func (p *Pipeline) incFlowWays() uint32 {
	if p.prof.Tofino() {
		return 1
	}
	return p4src.IncFlowWays
}

// timeMask is the width of the times the program keeps in registers: 48 bits in
// v1model, 32 in the TNA program.
func (p *Pipeline) timeMask() uint64 {
	if p.prof.Tofino() {
		return 0xFFFFFFFF
	}
	return mask48
}

// registers holds every register array, one uint64 per cell, masked to the register's
// width on every write (as a bit<W> register would wrap).
//
// The port_* and flow_* cells a packet reads at enqueue and dequeue are laid out by
// index, one struct per port and per flow slot, instead of one array per register:
// in a simulated fabric of many switches they are cache misses, and a packet then
// reads one cache line of its port and one of its flow slot rather than one line
// per register. ReadRegister and WriteRegister reach the same cells (cell).
type registers struct {
	// port and flow are allocated on their own (New): a large allocation starts on
	// a page, so every portCells is one cache line and no flowCells straddles two.
	port []portCells // NumPorts
	flow []flowCells // FlowSlots
	*otherRegisters
}

// otherRegisters are the registers a packet of the congestion-control path does
// not touch (or only at a PAUSE or a switch CNP), one array each.
type otherRegisters struct {
	portPauseStart, portLastDigest [p4src.NumPorts]uint64

	incFlowIncID, incFlowFirstPSN, incFlowLen  [p4src.IncFlowSlots]uint64
	incFlowOp                                  [p4src.IncFlowSlots]uint64
	incFlowNextWay                             [p4src.ConnTableSize]uint64
	incSlotIncID, incSlotOffset, incSlotBitmap [p4src.IncSlots]uint64
	incSlotStart, incSlotOp, incSlotDone       [p4src.IncSlots]uint64
	incSlotValue                               [p4src.IncVectorLen][p4src.IncSlots]uint64
}

// portCells is one port's cell of port_queue_bytes, port_paused, port_tx_bytes,
// port_undetermined, port_rx_bytes, port_pause_expire, port_check_at and
// port_q_snapshot: 64 bytes.
type portCells struct {
	queueBytes, paused, txBytes, undetermined, rxBytes, pauseExpire, checkAt, qSnapshot uint64
}

// flowCells is one slot's cell of flow_key, flow_bytes and flow_last_cnp, padded to
// 32 bytes.
type flowCells struct {
	key, bytes, lastCNP, _ uint64
}

func newRegisters() registers {
	return registers{port: make([]portCells, p4src.NumPorts), flow: make([]flowCells, p4src.FlowSlots), otherRegisters: &otherRegisters{}}
}

// size returns the number of cells of register id (0: no such register).
func (r *registers) size(id uint32) int {
	switch id {
	case p4src.RegPortPaused, p4src.RegPortPauseStart, p4src.RegPortPauseExpire, p4src.RegPortRxBytes,
		p4src.RegPortUndetermined, p4src.RegPortQSnapshot, p4src.RegPortCheckAt, p4src.RegPortQueueBytes,
		p4src.RegPortLastDigest, p4src.RegPortTxBytes:
		return p4src.NumPorts
	case p4src.RegFlowBytes, p4src.RegFlowKey, p4src.RegFlowLastCNP:
		return p4src.FlowSlots
	case p4src.RegIncFlowIncID, p4src.RegIncFlowFirstPSN, p4src.RegIncFlowLen, p4src.RegIncFlowOp:
		return p4src.IncFlowSlots
	case p4src.RegIncFlowNextWay:
		return p4src.ConnTableSize
	case p4src.RegIncSlotIncID, p4src.RegIncSlotOffset, p4src.RegIncSlotBitmap, p4src.RegIncSlotStart,
		p4src.RegIncSlotOp, p4src.RegIncSlotDone:
		return p4src.IncSlots
	}
	if id >= p4src.RegIncSlotValue0 && id < p4src.RegIncSlotValue0+p4src.IncVectorLen {
		return p4src.IncSlots
	}
	return 0
}

// cell returns cell i (0 <= i < size(id)) of register id.
func (r *registers) cell(id uint32, i int) *uint64 {
	switch id {
	case p4src.RegPortPaused:
		return &r.port[i].paused
	case p4src.RegPortPauseStart:
		return &r.portPauseStart[i]
	case p4src.RegPortPauseExpire:
		return &r.port[i].pauseExpire
	case p4src.RegPortRxBytes:
		return &r.port[i].rxBytes
	case p4src.RegPortUndetermined:
		return &r.port[i].undetermined
	case p4src.RegPortQSnapshot:
		return &r.port[i].qSnapshot
	case p4src.RegPortCheckAt:
		return &r.port[i].checkAt
	case p4src.RegPortQueueBytes:
		return &r.port[i].queueBytes
	case p4src.RegPortLastDigest:
		return &r.portLastDigest[i]
	case p4src.RegPortTxBytes:
		return &r.port[i].txBytes
	case p4src.RegFlowBytes:
		return &r.flow[i].bytes
	case p4src.RegFlowKey:
		return &r.flow[i].key
	case p4src.RegFlowLastCNP:
		return &r.flow[i].lastCNP
	case p4src.RegIncFlowIncID:
		return &r.incFlowIncID[i]
	case p4src.RegIncFlowFirstPSN:
		return &r.incFlowFirstPSN[i]
	case p4src.RegIncFlowLen:
		return &r.incFlowLen[i]
	case p4src.RegIncSlotIncID:
		return &r.incSlotIncID[i]
	case p4src.RegIncSlotOffset:
		return &r.incSlotOffset[i]
	case p4src.RegIncSlotBitmap:
		return &r.incSlotBitmap[i]
	case p4src.RegIncSlotStart:
		return &r.incSlotStart[i]
	case p4src.RegIncFlowOp:
		return &r.incFlowOp[i]
	case p4src.RegIncFlowNextWay:
		return &r.incFlowNextWay[i]
	case p4src.RegIncSlotOp:
		return &r.incSlotOp[i]
	case p4src.RegIncSlotDone:
		return &r.incSlotDone[i]
	}
	return &r.incSlotValue[id-p4src.RegIncSlotValue0][i]
}

// CounterValue is one counter cell (unit BOTH).
type CounterValue struct {
	Index   int
	Packets uint64
	Bytes   uint64
}

type counterCell struct{ packets, bytes uint64 }

// numCounters is the number of counter arrays; their IDs are consecutive from
// CounterSwitchCNPSent.
const numCounters = 19

// RegisterValue is one register cell.
type RegisterValue struct {
	Index int
	Value uint64
}

// CloneSession is a clone session (P4Runtime CloneSessionEntry, one replica).
type CloneSession struct {
	SessionID uint32
	// EgressPort and Instance are the (single) replica; the Go pipeline routes the
	// switch CNP through ingress, so only the session's existence changes behaviour.
	EgressPort uint16
	Instance   uint32
	// ClassOfService and PacketLengthBytes are stored and read back.
	ClassOfService    uint32
	PacketLengthBytes int32
}

// maxCloneSessions bounds the stored clone sessions.
const maxCloneSessions = 64

func (p *Pipeline) counterIndex(id uint32) (int, error) {
	if id < p4src.CounterSwitchCNPSent || id >= p4src.CounterSwitchCNPSent+numCounters {
		return 0, fmt.Errorf("counter ID %#x: %w", id, ErrInvalidArgument)
	}
	return int(id - p4src.CounterSwitchCNPSent), nil
}

// ReadCounter appends to dst the cell index of counter id, or every cell when index < 0
// (a wildcard read). Errors: ErrInvalidArgument (unknown ID, index >= size).
func (p *Pipeline) ReadCounter(id uint32, index int, dst []CounterValue) ([]CounterValue, error) {
	ci, err := p.counterIndex(id)
	if err != nil {
		return dst, fmt.Errorf("read counter: %w", err)
	}
	c := p.counters[ci]
	if index >= len(c) {
		return dst, fmt.Errorf("read counter %#x: index %d >= %d: %w", id, index, len(c), ErrInvalidArgument)
	}
	if index >= 0 {
		return append(dst, CounterValue{index, c[index].packets, c[index].bytes}), nil
	}
	for i := range c {
		dst = append(dst, CounterValue{i, c[i].packets, c[i].bytes})
	}
	return dst, nil
}

// WriteCounter sets one counter cell (index >= 0), or every cell (index < 0).
// Errors: ErrInvalidArgument.
func (p *Pipeline) WriteCounter(id uint32, index int, packets, bytes uint64) error {
	ci, err := p.counterIndex(id)
	if err != nil {
		return fmt.Errorf("write counter: %w", err)
	}
	c := p.counters[ci]
	if index >= len(c) {
		return fmt.Errorf("write counter %#x: index %d >= %d: %w", id, index, len(c), ErrInvalidArgument)
	}
	if index >= 0 {
		c[index] = counterCell{packets, bytes}
		return nil
	}
	for i := range c {
		c[i] = counterCell{packets, bytes}
	}
	return nil
}

// ReadRegister appends to dst cell index of register id, or every cell when index < 0.
// Errors: ErrInvalidArgument (unknown ID, index out of range).
func (p *Pipeline) ReadRegister(id uint32, index int, dst []RegisterValue) ([]RegisterValue, error) {
	n := p.regs.size(id)
	if n == 0 {
		return dst, fmt.Errorf("read register: ID %#x: %w", id, ErrInvalidArgument)
	}
	if index >= n {
		return dst, fmt.Errorf("read register %#x: index %d >= %d: %w", id, index, n, ErrInvalidArgument)
	}
	if index >= 0 {
		return append(dst, RegisterValue{index, *p.regs.cell(id, index)}), nil
	}
	for i := range n {
		dst = append(dst, RegisterValue{i, *p.regs.cell(id, i)})
	}
	return dst, nil
}

// WriteRegister sets cell index of register id (every cell when index < 0). The value
// must fit the register's width. Errors: ErrInvalidArgument.
func (p *Pipeline) WriteRegister(id uint32, index int, value uint64) error {
	n := p.regs.size(id)
	if n == 0 {
		return fmt.Errorf("write register: ID %#x: %w", id, ErrInvalidArgument)
	}
	ri, _ := schema.Register(id)
	if value&^widthMask(ri.Bitwidth) != 0 {
		return fmt.Errorf("write register %s: value %#x wider than %d bits: %w", ri.Name, value, ri.Bitwidth, ErrInvalidArgument)
	}
	if index >= n {
		return fmt.Errorf("write register %s: index %d >= %d: %w", ri.Name, index, n, ErrInvalidArgument)
	}
	if index >= 0 {
		*p.regs.cell(id, index) = value
		return nil
	}
	for i := range n {
		*p.regs.cell(id, i) = value
	}
	return nil
}

// SetValueSet replaces the members of a parser value set (P4Runtime ValueSetEntry
// MODIFY). Errors: ErrInvalidArgument (unknown ID, value wider than 16 bits),
// ErrAlreadyExists (a member given twice: P4Runtime refuses duplicates for
// read-write symmetry), ErrResourceExhausted (more members than the set's size).
func (p *Pipeline) SetValueSet(id uint32, members []uint64) error {
	if id != p4src.AnnounceUDPPortID {
		return fmt.Errorf("set value set: ID %#x: %w", id, ErrInvalidArgument)
	}
	for i, m := range members {
		if m > 0xFFFF {
			return fmt.Errorf("set value set announce_udp_port: member %#x wider than 16 bits: %w", m, ErrInvalidArgument)
		}
		if slices.Contains(members[:i], m) {
			return fmt.Errorf("set value set announce_udp_port: member %#x given twice: %w", m, ErrAlreadyExists)
		}
	}
	if len(members) > p4src.AnnounceUDPPorts {
		return fmt.Errorf("set value set announce_udp_port: %d members > size %d: %w", len(members), p4src.AnnounceUDPPorts, ErrResourceExhausted)
	}
	p.announcePorts = p.announcePorts[:0]
	p.parsePorts = p.parsePorts[:1] // AnnounceUDPPort, always
	for _, m := range members {
		p.announcePorts = append(p.announcePorts, uint16(m))
		p.parsePorts = append(p.parsePorts, uint16(m))
	}
	return nil
}

// CountQueueDrop counts, in queue_dropped, a packet of bytes (its acct_len) that the
// traffic manager refused for egress queue (port, priority): the counter the P4
// program declares but only a target with a traffic manager maintains. Ports >=
// NUM_PORTS are ignored.
func (p *Pipeline) CountQueueDrop(port uint16, priority uint8, bytes uint32) {
	if port < p4src.NumPorts {
		p.count(p4src.CounterQueueDropped, p4src.QueueIndex(port, priority), bytes)
	}
}

// CountInputDrops adds n frames, lost at port's input before the parser saw them,
// to input_dropped (packets only: a target that loses frames at input does not
// know their bytes). Maintained by the target (the P4 program declares the
// counter). Ports >= NUM_PORTS are ignored.
func (p *Pipeline) CountInputDrops(port uint16, n uint64) {
	if port >= p4src.NumPorts || n == 0 {
		return
	}
	c := &p.counters[p4src.CounterInputDropped-p4src.CounterSwitchCNPSent][port]
	c.packets += n
}

// CountPFCSent counts a PFC frame of bytes sent out of port for priority: in
// pfc_xoff_sent when its quanta for that priority are > 0 (refreshes included), in
// pfc_xon_sent when they are 0. A frame that speaks for several priorities is
// counted once for each. Maintained by the target's traffic manager (the P4
// program declares the counters; BMv2 has no PFC). Ports >= NUM_PORTS are ignored.
func (p *Pipeline) CountPFCSent(port uint16, priority uint8, xoff bool, bytes uint32) {
	if port >= p4src.NumPorts {
		return
	}
	id := p4src.CounterPFCXonSent
	if xoff {
		id = p4src.CounterPFCXoffSent
	}
	p.count(id, p4src.QueueIndex(port, priority), bytes)
}

// ValueSet returns the members of a parser value set. Errors: ErrInvalidArgument.
func (p *Pipeline) ValueSet(id uint32) ([]uint64, error) {
	if id != p4src.AnnounceUDPPortID {
		return nil, fmt.Errorf("read value set: ID %#x: %w", id, ErrInvalidArgument)
	}
	out := make([]uint64, len(p.announcePorts))
	for i, m := range p.announcePorts {
		out[i] = uint64(m)
	}
	return out, nil
}

// InsertCloneSession adds a clone session. Errors: ErrInvalidArgument (session 0, port
// >= NUM_PORTS), ErrAlreadyExists, ErrResourceExhausted.
func (p *Pipeline) InsertCloneSession(s CloneSession) error {
	if s.SessionID == 0 || s.EgressPort >= p4src.NumPorts {
		return fmt.Errorf("insert clone session %d (port %d): %w", s.SessionID, s.EgressPort, ErrInvalidArgument)
	}
	if _, ok := p.clones[s.SessionID]; ok {
		return fmt.Errorf("insert clone session %d: %w", s.SessionID, ErrAlreadyExists)
	}
	if len(p.clones) >= maxCloneSessions {
		return fmt.Errorf("insert clone session %d: %d sessions: %w", s.SessionID, maxCloneSessions, ErrResourceExhausted)
	}
	p.clones[s.SessionID] = s
	return nil
}

// ModifyCloneSession replaces a clone session. Errors: ErrInvalidArgument, ErrNotFound.
func (p *Pipeline) ModifyCloneSession(s CloneSession) error {
	if s.EgressPort >= p4src.NumPorts {
		return fmt.Errorf("modify clone session %d: port %d: %w", s.SessionID, s.EgressPort, ErrInvalidArgument)
	}
	if _, ok := p.clones[s.SessionID]; !ok {
		return fmt.Errorf("modify clone session %d: %w", s.SessionID, ErrNotFound)
	}
	p.clones[s.SessionID] = s
	return nil
}

// DeleteCloneSession removes a clone session. Errors: ErrNotFound.
func (p *Pipeline) DeleteCloneSession(id uint32) error {
	if _, ok := p.clones[id]; !ok {
		return fmt.Errorf("delete clone session %d: %w", id, ErrNotFound)
	}
	delete(p.clones, id)
	return nil
}

// ReadCloneSession returns a clone session. Errors: ErrNotFound.
func (p *Pipeline) ReadCloneSession(id uint32) (CloneSession, error) {
	s, ok := p.clones[id]
	if !ok {
		return CloneSession{}, fmt.Errorf("read clone session %d: %w", id, ErrNotFound)
	}
	return s, nil
}
