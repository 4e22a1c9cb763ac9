// Package pipeline is the Go reference model of the fastcnp P4 data plane
// (docs/dataplane.md): the same tables, actions, registers, counters, digests and
// per-packet algorithm as p4src/, addressed by the same P4Info IDs, so that a P4Runtime
// server can sit on top of it and a simulator can drive it.
//
// The package is pure: no goroutines, no sockets, no wall clock. Time is an argument
// (int64 ns from an arbitrary origin, e.g. switch start; the data plane keeps it modulo
// 2^48 like the 48-bit P4 timestamp). A Pipeline is not safe for concurrent use: the
// caller serialises control-plane and data-plane calls.
//
// Control plane (P4Runtime-shaped, by ID; errors wrap ErrInvalidArgument,
// ErrAlreadyExists, ErrNotFound, ErrResourceExhausted, ErrPermissionDenied or
// ErrFailedPrecondition):
//   - tables: InsertEntry, ModifyEntry, DeleteEntry, ReadEntry, ReadEntries (table 0 =
//     all), EntryCount; default actions: SetDefaultAction, ResetDefaultAction,
//     DefaultAction. Values are uint64 (ValueFromBytes / ValueToBytes convert P4Runtime
//     bytestrings); match fields and params are addressed by their P4Info IDs.
//   - action profiles (the ECMP selector next_hop_selector): InsertProfileMember,
//     ModifyProfileMember, DeleteProfileMember, ReadProfileMembers,
//     InsertProfileGroup, ModifyProfileGroup, DeleteProfileGroup, ReadProfileGroups;
//     entries of its table run a member, a group or a one-shot action set
//     (TableEntry.MemberID, GroupID, OneShot).
//   - registers and counters by index (index < 0 = every cell): ReadRegister,
//     WriteRegister, ReadCounter, WriteCounter. The counters a traffic manager
//     fills (queue_dropped, pfc_xoff_sent, pfc_xon_sent) are fed by the target:
//     CountQueueDrop, CountPFCSent.
//   - parser value set: SetValueSet, ValueSet. Clone sessions: InsertCloneSession,
//     ModifyCloneSession, DeleteCloneSession, ReadCloneSession. Multicast groups:
//     InsertMulticastGroup, ModifyMulticastGroup, DeleteMulticastGroup,
//     ReadMulticastGroup.
//   - digests: SetDigestConfig, DeleteDigestConfig, ReadDigestConfig, PollDigestList,
//     AckDigestList, DigestDrops, DigestsPending. Reset clears everything.
//
// ProgramSchema describes every object (IDs, names, widths, match kinds, sizes); it is
// cross-checked against p4src/fastcnp.p4info.txtpb by the tests.
//
// Data plane: a packet goes through Ingress (parser, ingress steps 1-9), then OnEnqueue
// when the traffic manager queues it (step 10), then Egress when it is dequeued. A
// bridged frame sent to a multicast group (VerdictMulticast) is one such packet per
// replica, the caller making the copies (the packet replication engine). Egress
// may hand back a switch CNP that already went through Ingress (like BMv2's
// recirculation); the caller enqueues it like any other packet (OnEnqueue, then Egress
// at its dequeue). None of them allocates.
package pipeline

// Sizes and constants of docs/dataplane.md ("Units and constants"), mirrored from
// p4src/include/defines.p4.
const (
	NumPorts        = 512
	RouteTableSize  = 1024
	ConnTableSize   = 4096
	FlowSlots       = 4096
	IncSlots        = 1024
	IncVectorLen    = 16
	IncGroups       = 256
	IncBuckets      = 256
	Log2TableSize   = 2048
	CNPCloneSession = 100
	DigestMinGapNs  = 100000
	CPUPort         = 255
	CNPDSCP         = 48
	RoCEUDPPort     = 4791
	IncBTHMark      = 0x01
	// TrafficClassSize is the size of FastcnpIngress.traffic_class.
	TrafficClassSize = 64
	// AnnounceValueSetSize is the size of FastcnpParser.announce_udp_port.
	AnnounceValueSetSize = 4
	// L2ForwardTableSize is the size of FastcnpIngress.l2_forward.
	L2ForwardTableSize = 1024
	// AnnounceUDPPort is ANNOUNCE_UDP_PORT: the UDP destination port the parser
	// always takes for an announcement, whatever the value set holds
	// (wire.DefaultAnnouncePort).
	AnnounceUDPPort = 4792
	// NumQueues is NUM_QUEUES: one cell per egress queue (port * 8 + priority) of
	// the queue_* and pfc_*_sent counters.
	NumQueues = NumPorts * 8
	// NextHopGroups is the size of FastcnpIngress.next_hop_group_select.
	NextHopGroups = 256
	// NextHopGroupMembers is the size of FastcnpIngress.next_hop_selector: the sum
	// of member weights over all its groups (P4Runtime SumOfWeights semantics).
	NextHopGroupMembers = 1024
	// NextHopSelectorWidth is the selector's declared hash output width (bits).
	NextHopSelectorWidth = 14
)

// Port modes (set_port_config.mode).
const (
	ModeOff     = 0
	ModeECN     = 1
	ModeFastcnp = 2
)

// Port events carried in port_state_digest_t.event.
const (
	EventPause              = 1
	EventResumeNotCongested = 2
	EventResumeCongested    = 3
	EventResumeUndetermined = 4
	EventCheckDrained       = 5
	EventCheckCongested     = 6
)

// Packet-in reasons.
const (
	// ReasonAnnouncement marks an RDMA-connection announcement punted to the CPU.
	ReasonAnnouncement = 1
)

// set_connection flags.
const (
	ConnFlagINC       = 0x01
	ConnFlagCNPTarget = 0x02
)

// P4Info IDs pinned with @id in p4src/ (docs/dataplane.md "Objects").
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

	DigestPortState uint32 = 0x1782DA91
	DigestCNP       uint32 = 0x1721670C
)
