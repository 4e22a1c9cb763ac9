//go:generate go run ./cmd/p4defines -in include/defines.p4 -out defines_gen.go
//go:generate go run ./cmd/p4log2 -out tna/log2_entries.p4

package p4src

// Names of the digests the program sends (the P4 struct type names, which are also
// the P4Info digest names).
const (
	DigestPortStateName = "port_state_digest_t"
	DigestCNPName       = "cnp_digest_t"
)

// QueueIndex is the cell of egress queue (port, priority) in the counters indexed
// by queue (queue_*, pfc_*_sent): port * 8 + priority, NUM_QUEUES cells.
func QueueIndex(port uint16, priority uint8) uint16 {
	return (port&(NumPorts-1))<<3 | uint16(priority&7)
}

// P4Info IDs of the v1model program's objects, pinned with @id in p4src/v1model
// (docs/dataplane.md "Objects"); TestIDsMatchP4Info checks each against the committed
// P4Info. The TNA program's tables and actions have the same IDs; its extern objects
// have bf-p4c's (docs/tofino.md "P4Info"), which fastcnpd finds by name.
const (
	// PacketInID and PacketOutID are not pinned: p4c derives them from the header
	// type names packet_in_h and packet_out_h (docs/dataplane.md "Controller
	// packet metadata").
	PacketInID  uint32 = 68340960
	PacketOutID uint32 = 74440427

	AnnounceUDPPortID uint32 = 0x03000001

	ActionDrop              uint32 = 0x01000001
	ActionSetNexthop        uint32 = 0x01000002
	ActionSetTrafficClass   uint32 = 0x01000003
	ActionSetPortConfig     uint32 = 0x01000004
	ActionSetConnection     uint32 = 0x01000005
	ActionSetIncGroup       uint32 = 0x01000006
	ActionSetFlowLog2       uint32 = 0x01000007
	ActionSetPortLog2       uint32 = 0x01000008
	ActionSetWindow         uint32 = 0x01000009
	ActionL2SetPort         uint32 = 0x0100000A
	ActionL2Flood           uint32 = 0x0100000B
	ActionSetNextHopGroup   uint32 = 0x0100000C
	ActionSetIncSlotTimeout uint32 = 0x0100000D
	// ActionSetIncChild is inc_child_port's action (multi-tier INC).
	ActionSetIncChild uint32 = 0x01000020
	// ActionNoAction is core.p4's NoAction; its ID is the one p4c assigns (not pinned).
	ActionNoAction uint32 = 21257015

	TableIPv4Route      uint32 = 0x02000001
	TableTrafficClass   uint32 = 0x02000002
	TablePortConfig     uint32 = 0x02000003
	TableRDMAConnection uint32 = 0x02000004
	TableIncGroup       uint32 = 0x02000005
	TableIncRoute       uint32 = 0x02000006
	TableFlowBytesLog2  uint32 = 0x02000007
	TablePortBytesLog2  uint32 = 0x02000008
	TableWindowExp2     uint32 = 0x02000009
	TableL2Forward      uint32 = 0x0200000A
	// TableNextHopGroupSelect is the ECMP group table (implementation:
	// ProfileNextHopSelector).
	TableNextHopGroupSelect uint32 = 0x0200000B
	TableIncSlotTimeout     uint32 = 0x0200000C
	// TableIncChildPort maps an ingress port to the contributor rank of the
	// lower switch behind it (multi-tier INC).
	TableIncChildPort uint32 = 0x02000020

	// ProfileNextHopSelector is the action selector FastcnpIngress.next_hop_selector.
	ProfileNextHopSelector uint32 = 0x11000001

	CounterSwitchCNPSent    uint32 = 0x12000001
	CounterECNMarked        uint32 = 0x12000002
	CounterPFCPauseRx       uint32 = 0x12000003
	CounterPFCResumeRx      uint32 = 0x12000004
	CounterDropped          uint32 = 0x12000005
	CounterMalformed        uint32 = 0x12000006
	CounterFlowCollisions   uint32 = 0x12000007
	CounterAnnouncements    uint32 = 0x12000008
	CounterIncContributions uint32 = 0x12000009
	CounterIncDuplicates    uint32 = 0x1200000A
	CounterIncResults       uint32 = 0x1200000B
	CounterIncSlotBusy      uint32 = 0x1200000C
	// Counters indexed by queue (QueueIndex): counted by the pipeline...
	CounterQueueEnqueued uint32 = 0x1200000D
	CounterQueueDequeued uint32 = 0x1200000E
	// ... and fed by the target's traffic manager (CountQueueDrop, CountPFCSent).
	CounterQueueDropped uint32 = 0x1200000F
	CounterPFCXoffSent  uint32 = 0x12000010
	CounterPFCXonSent   uint32 = 0x12000011
	// CounterIncSlotTakeovers counts INC slots taken over from abandoned messages.
	CounterIncSlotTakeovers uint32 = 0x12000012
	// CounterInputDropped counts frames a target lost at a port's input, before
	// the parser (filled by the target, like CounterQueueDropped).
	CounterInputDropped uint32 = 0x12000013

	RegPortPaused       uint32 = 0x16000001
	RegPortPauseStart   uint32 = 0x16000002
	RegPortPauseExpire  uint32 = 0x16000003
	RegPortRxBytes      uint32 = 0x16000004
	RegPortUndetermined uint32 = 0x16000005
	RegPortQSnapshot    uint32 = 0x16000006
	RegPortCheckAt      uint32 = 0x16000007
	RegPortQueueBytes   uint32 = 0x16000008
	RegPortLastDigest   uint32 = 0x16000009
	RegFlowBytes        uint32 = 0x1600000A
	RegFlowKey          uint32 = 0x1600000B
	RegFlowLastCNP      uint32 = 0x1600000C
	RegIncFlowIncID     uint32 = 0x1600000D
	RegIncFlowFirstPSN  uint32 = 0x1600000E
	RegIncFlowLen       uint32 = 0x1600000F
	RegIncSlotIncID     uint32 = 0x16000010
	RegIncSlotOffset    uint32 = 0x16000011
	RegIncSlotBitmap    uint32 = 0x16000012
	// RegIncSlotValue0 is inc_slot_value_0; inc_slot_value_i is RegIncSlotValue0 + i.
	RegIncSlotValue0 uint32 = 0x16000013
	// RegIncSlotStart is inc_slot_start_ns: when the slot's message claimed it.
	RegIncSlotStart uint32 = 0x16000023
	// RegPortTxBytes is port_tx_bytes: bytes a port sent (INT records' tx_bytes).
	RegPortTxBytes uint32 = 0x16000024
	// The data-flow map's operation IDs and round-robin pointer, and the
	// slots' operation IDs and done flags (multi-tier INC, issue 16).
	RegIncFlowOp      uint32 = 0x16000040
	RegIncFlowNextWay uint32 = 0x16000041
	RegIncSlotOp      uint32 = 0x16000042
	RegIncSlotDone    uint32 = 0x16000043

	DigestPortState uint32 = 0x1782DA91
	DigestCNP       uint32 = 0x1721670C
)
