package pipeline

import "github.com/fastcnp/fastcnp/p4src"

// MatchKind is the match kind of a table key field.
type MatchKind uint8

// Match kinds used by the fastcnp tables.
const (
	MatchExact MatchKind = iota + 1
	MatchLPM
	MatchTernary
)

// String returns the P4 name of the match kind.
func (k MatchKind) String() string {
	switch k {
	case MatchExact:
		return "exact"
	case MatchLPM:
		return "lpm"
	case MatchTernary:
		return "ternary"
	}
	return "unknown"
}

// FieldInfo names one bit field (match field, action parameter, digest or packet
// metadata member); ID is its P4Info ID (1-based, in declaration order).
type FieldInfo struct {
	ID       uint32
	Name     string
	Bitwidth int
}

// MatchFieldInfo is one key field of a table.
type MatchFieldInfo struct {
	FieldInfo
	Kind MatchKind
}

// ActionInfo describes an action and its parameters (in ID order).
type ActionInfo struct {
	ID     uint32
	Name   string
	Params []FieldInfo
}

// TableInfo describes a table. DefaultAction is the program's default (without
// parameters); ConstDefault tables reject default-action changes. ActionIDs are the
// table's actions in P4Info order; DefaultOnly those of them with scope
// DEFAULT_ONLY (never an entry's action). ProfileID is the action profile that
// implements the table (P4Info implementation_id; 0 for a direct table): its entries
// run a member or a group of that profile instead of an action.
type TableInfo struct {
	ID            uint32
	Name          string
	Keys          []MatchFieldInfo
	ActionIDs     []uint32
	DefaultOnly   []uint32
	DefaultAction uint32
	ConstDefault  bool
	Size          int
	ProfileID     uint32
}

// ActionProfileInfo describes an action profile (with_selector: an action selector).
// Size bounds the members, the groups and the sum of the weights of all groups
// (P4Runtime SumOfWeights semantics); MaxGroupSize bounds one group's weights (0:
// only Size does).
type ActionProfileInfo struct {
	ID           uint32
	Name         string
	TableIDs     []uint32
	WithSelector bool
	Size         int
	MaxGroupSize int
}

// NeedsPriority reports whether entries of the table carry a priority (P4Runtime: the
// table has a ternary, range or optional field).
func (t *TableInfo) NeedsPriority() bool {
	for _, k := range t.Keys {
		if k.Kind == MatchTernary {
			return true
		}
	}
	return false
}

// CounterInfo describes an indexed counter array (unit BOTH: packets and bytes).
type CounterInfo struct {
	ID   uint32
	Name string
	Size int
}

// RegisterInfo describes a register array.
type RegisterInfo struct {
	ID       uint32
	Name     string
	Bitwidth int
	Size     int
}

// DigestInfo describes a digest and its struct members, in order.
type DigestInfo struct {
	ID     uint32
	Name   string
	Fields []FieldInfo
}

// ValueSetInfo describes a parser value set.
type ValueSetInfo struct {
	ID       uint32
	Name     string
	Bitwidth int
	Size     int
}

// PacketMetadataInfo describes a controller packet metadata header.
type PacketMetadataInfo struct {
	ID     uint32
	Name   string
	Fields []FieldInfo
}

// Schema lists every P4Info object of the program. The values returned by
// ProgramSchema are shared: callers must not modify them.
type Schema struct {
	Actions        []ActionInfo
	Tables         []TableInfo
	ActionProfiles []ActionProfileInfo
	Counters       []CounterInfo
	Registers      []RegisterInfo
	Digests        []DigestInfo
	ValueSets      []ValueSetInfo
	PacketMetadata []PacketMetadataInfo
}

func fields(spec ...any) []FieldInfo {
	out := make([]FieldInfo, 0, len(spec)/2)
	for i := 0; i+1 < len(spec); i += 2 {
		out = append(out, FieldInfo{ID: uint32(i/2 + 1), Name: spec[i].(string), Bitwidth: spec[i+1].(int)})
	}
	return out
}

func keys(spec ...any) []MatchFieldInfo {
	out := make([]MatchFieldInfo, 0, len(spec)/3)
	for i := 0; i+2 < len(spec); i += 3 {
		out = append(out, MatchFieldInfo{
			FieldInfo: FieldInfo{ID: uint32(i/3 + 1), Name: spec[i].(string), Bitwidth: spec[i+2].(int)},
			Kind:      spec[i+1].(MatchKind),
		})
	}
	return out
}

// Parameter indexes (ID - 1) of set_port_config, used by the data path.
const (
	pcRate = iota
	pcQth
	pcTcheck
	pcCNPGap
	pcMode
	pcKmin
	pcKmax
	pcPmax
	pcRTTBase
	pcBDP
	pcBDPLog2
	pcMTU
	pcQuantum
	pcSwitchID
	pcLosslessPrio
	pcCount
)

var schema = &Schema{
	Actions: []ActionInfo{
		{ID: p4src.ActionDrop, Name: "FastcnpIngress.drop"},
		{ID: p4src.ActionSetNexthop, Name: "FastcnpIngress.set_nexthop", Params: fields("port", 9, "src_mac", 48, "dst_mac", 48)},
		{ID: p4src.ActionSetTrafficClass, Name: "FastcnpIngress.set_traffic_class", Params: fields("priority", 3, "lossless", 1)},
		{ID: p4src.ActionSetPortConfig, Name: "FastcnpIngress.set_port_config", Params: fields(
			"rate_bytes_per_ms", 32, "qth_bytes", 32, "tcheck_ns", 32, "cnp_gap_ns", 32, "mode", 3,
			"red_kmin_bytes", 32, "red_kmax_bytes", 32, "red_pmax_q16", 16, "rtt_base_ns", 32,
			"bdp_bytes", 32, "bdp_log2_q6", 16, "mtu_bytes", 16, "pause_quantum_ps", 32,
			"switch_id", 16, "lossless_priority", 3)},
		{ID: p4src.ActionSetConnection, Name: "FastcnpIngress.set_connection", Params: fields(
			"sender_qpn", 24, "flags", 8, "conn_index", 16, "inc_group", 16, "worker_rank", 8)},
		{ID: p4src.ActionSetIncGroup, Name: "FastcnpIngress.set_inc_group", Params: fields("contributors_mask", 32, "root", 1)},
		{ID: p4src.ActionSetIncChild, Name: "FastcnpIngress.set_inc_child", Params: fields("child_rank", 8)},
		{ID: p4src.ActionL2SetPort, Name: "FastcnpIngress.l2_set_port", Params: fields("port", 9)},
		{ID: p4src.ActionL2Flood, Name: "FastcnpIngress.l2_flood", Params: fields("mcast_grp", 16)},
		{ID: p4src.ActionSetNextHopGroup, Name: "FastcnpIngress.set_next_hop_group", Params: fields("group_id", 16)},
		{ID: p4src.ActionSetIncSlotTimeout, Name: "FastcnpIngress.set_inc_slot_timeout", Params: fields("timeout_ns", 32)},
		{ID: p4src.ActionSetFlowLog2, Name: "FastcnpEgress.set_flow_bytes_log2", Params: fields("log2_q6", 16)},
		{ID: p4src.ActionSetPortLog2, Name: "FastcnpEgress.set_port_bytes_log2", Params: fields("log2_q6", 16)},
		{ID: p4src.ActionSetWindow, Name: "FastcnpEgress.set_window", Params: fields("window_bytes", 32)},
		{ID: p4src.ActionNoAction, Name: "NoAction"},
	},
	Tables: []TableInfo{
		{ID: p4src.TableIPv4Route, Name: "FastcnpIngress.ipv4_route", Keys: keys("dst_addr", MatchLPM, 32),
			ActionIDs: []uint32{p4src.ActionSetNexthop, p4src.ActionSetNextHopGroup, p4src.ActionDrop}, DefaultAction: p4src.ActionDrop, Size: p4src.RouteTableSize},
		{ID: p4src.TableNextHopGroupSelect, Name: "FastcnpIngress.next_hop_group_select", Keys: keys("group_id", MatchExact, 16),
			ActionIDs: []uint32{p4src.ActionSetNexthop, p4src.ActionDrop, p4src.ActionNoAction}, DefaultOnly: []uint32{p4src.ActionNoAction},
			DefaultAction: p4src.ActionNoAction, Size: p4src.NextHopGroups, ProfileID: p4src.ProfileNextHopSelector},
		{ID: p4src.TableTrafficClass, Name: "FastcnpIngress.traffic_class",
			Keys:      keys("vlan_valid", MatchExact, 1, "pcp", MatchTernary, 3, "dscp", MatchTernary, 6),
			ActionIDs: []uint32{p4src.ActionSetTrafficClass, p4src.ActionNoAction}, DefaultAction: p4src.ActionNoAction, Size: p4src.TrafficClassTableSize},
		{ID: p4src.TablePortConfig, Name: "FastcnpIngress.port_config", Keys: keys("port", MatchExact, 9),
			ActionIDs: []uint32{p4src.ActionSetPortConfig, p4src.ActionNoAction}, DefaultAction: p4src.ActionNoAction, Size: p4src.NumPorts},
		{ID: p4src.TableRDMAConnection, Name: "FastcnpIngress.rdma_connection",
			Keys:      keys("src_addr", MatchExact, 32, "udp_sport", MatchExact, 16, "dest_qp", MatchExact, 24),
			ActionIDs: []uint32{p4src.ActionSetConnection, p4src.ActionNoAction}, DefaultAction: p4src.ActionNoAction, Size: p4src.ConnTableSize},
		{ID: p4src.TableIncGroup, Name: "FastcnpIngress.inc_group", Keys: keys("group_id", MatchExact, 16),
			ActionIDs: []uint32{p4src.ActionSetIncGroup, p4src.ActionNoAction}, DefaultAction: p4src.ActionNoAction, Size: p4src.IncGroups},
		{ID: p4src.TableIncChildPort, Name: "FastcnpIngress.inc_child_port", Keys: keys("port", MatchExact, 9),
			ActionIDs: []uint32{p4src.ActionSetIncChild, p4src.ActionNoAction}, DefaultAction: p4src.ActionNoAction, Size: p4src.NumPorts},
		{ID: p4src.TableIncSlotTimeout, Name: "FastcnpIngress.inc_slot_timeout", Keys: keys("group_id", MatchExact, 16),
			ActionIDs: []uint32{p4src.ActionSetIncSlotTimeout, p4src.ActionNoAction}, DefaultAction: p4src.ActionNoAction, Size: p4src.IncGroups},
		{ID: p4src.TableIncRoute, Name: "FastcnpIngress.inc_route", Keys: keys("bucket", MatchExact, 8),
			ActionIDs: []uint32{p4src.ActionSetNexthop, p4src.ActionNoAction}, DefaultAction: p4src.ActionNoAction, Size: p4src.IncBuckets},
		{ID: p4src.TableL2Forward, Name: "FastcnpIngress.l2_forward", Keys: keys("dst_addr", MatchExact, 48),
			ActionIDs: []uint32{p4src.ActionL2SetPort, p4src.ActionL2Flood, p4src.ActionDrop}, DefaultAction: p4src.ActionDrop, Size: p4src.L2ForwardTableSize},
		{ID: p4src.TableFlowBytesLog2, Name: "FastcnpEgress.flow_bytes_log2", Keys: keys("bytes", MatchLPM, 32),
			ActionIDs: []uint32{p4src.ActionSetFlowLog2, p4src.ActionNoAction}, DefaultAction: p4src.ActionNoAction, Size: p4src.Log2TableSize},
		{ID: p4src.TablePortBytesLog2, Name: "FastcnpEgress.port_bytes_log2", Keys: keys("bytes", MatchLPM, 32),
			ActionIDs: []uint32{p4src.ActionSetPortLog2, p4src.ActionNoAction}, DefaultAction: p4src.ActionNoAction, Size: p4src.Log2TableSize},
		{ID: p4src.TableWindowExp2, Name: "FastcnpEgress.window_exp2", Keys: keys("log2_q6", MatchExact, 16),
			ActionIDs: []uint32{p4src.ActionSetWindow, p4src.ActionNoAction}, DefaultAction: p4src.ActionNoAction, Size: p4src.Log2TableSize},
	},
	ActionProfiles: []ActionProfileInfo{
		{ID: p4src.ProfileNextHopSelector, Name: "FastcnpIngress.next_hop_selector", TableIDs: []uint32{p4src.TableNextHopGroupSelect},
			WithSelector: true, Size: p4src.NextHopGroupMembers},
	},
	Counters: []CounterInfo{
		{p4src.CounterSwitchCNPSent, "FastcnpEgress.switch_cnp_sent", p4src.NumPorts},
		{p4src.CounterECNMarked, "FastcnpEgress.ecn_marked", p4src.NumPorts},
		{p4src.CounterPFCPauseRx, "FastcnpIngress.pfc_pause_rx", p4src.NumPorts},
		{p4src.CounterPFCResumeRx, "FastcnpIngress.pfc_resume_rx", p4src.NumPorts},
		{p4src.CounterDropped, "FastcnpIngress.dropped", p4src.NumPorts},
		{p4src.CounterMalformed, "FastcnpIngress.malformed", p4src.NumPorts},
		{p4src.CounterFlowCollisions, "FastcnpIngress.flow_collisions", p4src.NumPorts},
		{p4src.CounterAnnouncements, "FastcnpIngress.announcements", p4src.NumPorts},
		{p4src.CounterIncContributions, "FastcnpIngress.inc_contributions", p4src.NumPorts},
		{p4src.CounterIncDuplicates, "FastcnpIngress.inc_duplicates", p4src.NumPorts},
		{p4src.CounterIncResults, "FastcnpIngress.inc_results", p4src.NumPorts},
		{p4src.CounterIncSlotBusy, "FastcnpIngress.inc_slot_busy", p4src.NumPorts},
		{p4src.CounterQueueEnqueued, "FastcnpIngress.queue_enqueued", p4src.NumQueues},
		{p4src.CounterQueueDequeued, "FastcnpEgress.queue_dequeued", p4src.NumQueues},
		{p4src.CounterQueueDropped, "FastcnpEgress.queue_dropped", p4src.NumQueues},
		{p4src.CounterPFCXoffSent, "FastcnpIngress.pfc_xoff_sent", p4src.NumQueues},
		{p4src.CounterPFCXonSent, "FastcnpIngress.pfc_xon_sent", p4src.NumQueues},
		{p4src.CounterIncSlotTakeovers, "FastcnpIngress.inc_slot_takeovers", p4src.NumPorts},
		{p4src.CounterInputDropped, "FastcnpIngress.input_dropped", p4src.NumPorts},
	},
	Registers: registerList(),
	Digests: []DigestInfo{
		{ID: p4src.DigestPortState, Name: "port_state_digest_t", Fields: fields(
			"port", 9, "event", 8, "queue_bytes", 32, "rx_bytes", 32, "timestamp_ns", 48)},
		{ID: p4src.DigestCNP, Name: "cnp_digest_t", Fields: fields(
			"port", 9, "src_addr", 32, "dst_addr", 32, "window_bytes", 32, "queue_bytes", 32, "timestamp_ns", 48)},
	},
	ValueSets: []ValueSetInfo{{ID: p4src.AnnounceUDPPortID, Name: "FastcnpParser.announce_udp_port", Bitwidth: 16, Size: p4src.AnnounceUDPPorts}},
	PacketMetadata: []PacketMetadataInfo{
		{ID: p4src.PacketInID, Name: "packet_in", Fields: fields("ingress_port", 9, "reason", 7)},
		{ID: p4src.PacketOutID, Name: "packet_out", Fields: fields("egress_port", 9, "pad", 7)},
	},
}

func registerList() []RegisterInfo {
	r := []RegisterInfo{
		{p4src.RegPortPaused, "port_paused", 1, p4src.NumPorts},
		{p4src.RegPortPauseStart, "port_pause_start_ns", 48, p4src.NumPorts},
		{p4src.RegPortPauseExpire, "port_pause_expire_ns", 48, p4src.NumPorts},
		{p4src.RegPortRxBytes, "port_rx_bytes", 32, p4src.NumPorts},
		{p4src.RegPortUndetermined, "port_undetermined", 1, p4src.NumPorts},
		{p4src.RegPortQSnapshot, "port_q_snapshot", 32, p4src.NumPorts},
		{p4src.RegPortCheckAt, "port_check_at_ns", 48, p4src.NumPorts},
		{p4src.RegPortQueueBytes, "port_queue_bytes", 32, p4src.NumPorts},
		{p4src.RegPortLastDigest, "port_last_digest_ns", 48, p4src.NumPorts},
		{p4src.RegPortTxBytes, "port_tx_bytes", 64, p4src.NumPorts},
		{p4src.RegFlowBytes, "flow_bytes", 32, p4src.FlowSlots},
		{p4src.RegFlowKey, "flow_key", 32, p4src.FlowSlots},
		{p4src.RegFlowLastCNP, "flow_last_cnp_ns", 48, p4src.FlowSlots},
		{p4src.RegIncFlowIncID, "inc_flow_inc_id", 32, p4src.IncFlowSlots},
		{p4src.RegIncFlowFirstPSN, "inc_flow_first_psn", 24, p4src.IncFlowSlots},
		{p4src.RegIncFlowLen, "inc_flow_len", 32, p4src.IncFlowSlots},
		{p4src.RegIncFlowOp, "inc_flow_op", 16, p4src.IncFlowSlots},
		{p4src.RegIncFlowNextWay, "inc_flow_next_way", 2, p4src.ConnTableSize},
		{p4src.RegIncSlotIncID, "inc_slot_inc_id", 32, p4src.IncSlots},
		{p4src.RegIncSlotOffset, "inc_slot_offset", 32, p4src.IncSlots},
		{p4src.RegIncSlotBitmap, "inc_slot_bitmap", 32, p4src.IncSlots},
	}
	for i := 0; i < p4src.IncVectorLen; i++ {
		r = append(r, RegisterInfo{p4src.RegIncSlotValue0 + uint32(i), "inc_slot_value_" + itoa(i), 32, p4src.IncSlots})
	}
	return append(r, RegisterInfo{p4src.RegIncSlotStart, "inc_slot_start_ns", 48, p4src.IncSlots},
		RegisterInfo{p4src.RegIncSlotOp, "inc_slot_op", 16, p4src.IncSlots},
		RegisterInfo{p4src.RegIncSlotDone, "inc_slot_done", 1, p4src.IncSlots})
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return string(rune('0'+i/10)) + string(rune('0'+i%10))
}

// ProgramSchema returns the program's P4Info objects (shared; do not modify).
func ProgramSchema() *Schema { return schema }

// Table returns the table with the given ID.
func (s *Schema) Table(id uint32) (*TableInfo, bool) {
	for i := range s.Tables {
		if s.Tables[i].ID == id {
			return &s.Tables[i], true
		}
	}
	return nil, false
}

// ActionProfile returns the action profile with the given ID.
func (s *Schema) ActionProfile(id uint32) (*ActionProfileInfo, bool) {
	for i := range s.ActionProfiles {
		if s.ActionProfiles[i].ID == id {
			return &s.ActionProfiles[i], true
		}
	}
	return nil, false
}

// Action returns the action with the given ID.
func (s *Schema) Action(id uint32) (*ActionInfo, bool) {
	for i := range s.Actions {
		if s.Actions[i].ID == id {
			return &s.Actions[i], true
		}
	}
	return nil, false
}

// Counter returns the counter with the given ID.
func (s *Schema) Counter(id uint32) (*CounterInfo, bool) {
	for i := range s.Counters {
		if s.Counters[i].ID == id {
			return &s.Counters[i], true
		}
	}
	return nil, false
}

// Register returns the register with the given ID.
func (s *Schema) Register(id uint32) (*RegisterInfo, bool) {
	for i := range s.Registers {
		if s.Registers[i].ID == id {
			return &s.Registers[i], true
		}
	}
	return nil, false
}

// Digest returns the digest with the given ID.
func (s *Schema) Digest(id uint32) (*DigestInfo, bool) {
	for i := range s.Digests {
		if s.Digests[i].ID == id {
			return &s.Digests[i], true
		}
	}
	return nil, false
}
