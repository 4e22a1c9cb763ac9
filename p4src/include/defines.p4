// fastcnp: every size and constant of the data plane, in one place.
//
// Contract: docs/dataplane.md "Units and constants". Go code reads these values
// from p4src/defines_gen.go, which `go generate ./p4src` writes from this file
// (a test in p4src fails when the two differ): change them here only.
// Sizes are preprocessor macros (they are used as table sizes, register sizes and
// in index masks); everything else is a typed P4 constant. Architecture-neutral:
// what only one architecture needs lives in v1model/defines.p4 or tna/.

#ifndef _FASTCNP_DEFINES_P4_
#define _FASTCNP_DEFINES_P4_

// ---------------------------------------------------------------------------
// Resource sizes (docs/dataplane.md "Units and constants").
// ---------------------------------------------------------------------------
#define NUM_PORTS                512   // 9-bit port numbers: one cell per port
#define ROUTE_TABLE_SIZE         1024  // FastcnpIngress.ipv4_route
#define NEXT_HOP_GROUPS          256   // FastcnpIngress.next_hop_group_select (one entry per ECMP group)
#define NEXT_HOP_GROUP_MEMBERS   1024  // FastcnpIngress.next_hop_selector: sum of member weights over all groups
#define NEXT_HOP_SELECTOR_WIDTH  14    // output width of the selector hash (bits; BMv2 ignores it)
#define NUM_QUEUES               4096  // NUM_PORTS * 8 priorities: queue_* and pfc_*_sent counters, index port*8+priority
#define L2_FORWARD_TABLE_SIZE    1024  // FastcnpIngress.l2_forward (one entry per MAC: hosts, broadcast)
#define TRAFFIC_CLASS_TABLE_SIZE 64    // FastcnpIngress.traffic_class
#define CONN_TABLE_SIZE          4096  // FastcnpIngress.rdma_connection, inc_flow_* registers
#define FLOW_SLOTS               4096  // flow_* registers (power of two: slot = hash & (FLOW_SLOTS-1))
#define INC_SLOTS                1024  // inc_slot_* registers (power of two)
#define INC_VECTOR_LEN           16    // 32-bit lanes in an INC vector (wire-formats.md "INC header")
#define INC_GROUPS               256   // FastcnpIngress.inc_group
#define INC_BUCKETS              256   // FastcnpIngress.inc_route (power of two, key is 8 bits)
// INC data-flow map (spec 04 step 2; docs/dataplane.md ingress 8): the data
// flows remembered per connection, newest first, and the cells of the
// inc_flow_* registers (connection index * INC_FLOW_WAYS + way).
#define INC_FLOW_WAYS            4
#define INC_FLOW_SLOTS           16384 // CONN_TABLE_SIZE * INC_FLOW_WAYS
#define LOG2_TABLE_SIZE          2048  // *_bytes_log2 and window_exp2
#define ANNOUNCE_UDP_PORTS       4     // entries of the announce_udp_port parser value set (extra ports)
#define INT_MAX_HOPS             5     // INT hop records a packet carries at most (wire-formats.md "INT header")

// The UDP destination port of RDMA-connection announcements that the parser
// ALWAYS recognises, as a constant select case (wire-formats.md; Go's
// wire.DefaultAnnouncePort). Changeable at compile time only, e.g.
// p4c -DANNOUNCE_UDP_PORT=5000 ... (the Go target, the hosts and the
// controller's default must then be changed to match). The value set
// announce_udp_port adds ports at run time on targets that implement value
// sets (fastcnp-switch); BMv2's P4Runtime server (PI) does not: it answers
// every ValueSetEntry write and read with UNIMPLEMENTED (behavioral-model
// issue #854), so on BMv2 this constant is the only announcement port.
#ifndef ANNOUNCE_UDP_PORT
#define ANNOUNCE_UDP_PORT        4792
#endif

// The INT records are unrolled (int_hop_0 .. int_hop_4 in headers.p4, the
// parser states in parser.p4). A different count needs new ones there.
#if INT_MAX_HOPS != 5
#error "INT_MAX_HOPS is unrolled for 5 records in headers.p4 and parser.p4"
#endif

// The INC code is unrolled lane by lane (one register per lane, pinned IDs
// 0x16000013 .. 0x16000022). A different vector length needs new lanes there.
#if INC_VECTOR_LEN != 16
#error "INC_VECTOR_LEN is unrolled for 16 lanes in headers.p4, registers.p4 and v1model/fastcnp.p4"
#endif
// The data-flow map is unrolled way by way (v1model/fastcnp.p4 INC_FLOW_WAY).
#if INC_FLOW_WAYS != 4
#error "INC_FLOW_WAYS is unrolled for 4 ways in v1model/fastcnp.p4"
#endif
#if INC_FLOW_SLOTS != CONN_TABLE_SIZE * INC_FLOW_WAYS
#error "INC_FLOW_SLOTS must be CONN_TABLE_SIZE * INC_FLOW_WAYS"
#endif

// ---------------------------------------------------------------------------
// Ports, sessions, receivers.
// ---------------------------------------------------------------------------
const bit<9>  CPU_PORT           = 255;   // P4Runtime packet-in/out port (BMv2 --cpu-port 255)
const bit<32> CNP_CLONE_SESSION  = 100;   // E2E clone (v1model) / mirror (TNA) session that carries switch CNPs and egress digests

// ---------------------------------------------------------------------------
// Time.
// ---------------------------------------------------------------------------
const bit<48> DIGEST_MIN_GAP_NS  = 100000;  // cnp_digest_t at most once per this gap per port

// ---------------------------------------------------------------------------
// Protocol numbers (docs/wire-formats.md).
// ---------------------------------------------------------------------------
const bit<16> ETHERTYPE_IPV4        = 0x0800;
const bit<16> ETHERTYPE_VLAN        = 0x8100;
const bit<16> ETHERTYPE_MAC_CONTROL = 0x8808;
const bit<16> MAC_CONTROL_OPCODE_PFC   = 0x0101;   // 802.1Qbb
const bit<16> MAC_CONTROL_OPCODE_PAUSE = 0x0001;   // 802.3x
const bit<8>  IP_PROTO_UDP          = 17;
const bit<4>  IPV4_VERSION          = 4;
const bit<4>  IPV4_MIN_IHL          = 5;
const bit<8>  IPV4_DEFAULT_TTL      = 64;          // TTL of a switch CNP
const bit<16> IPV4_HEADER_BYTES     = 20;
const bit<16> UDP_HEADER_BYTES      = 8;
const bit<16> ROCE_UDP_PORT         = 4791;
const bit<2>  ECN_NOT_ECT           = 0;
const bit<2>  ECN_ECT1              = 1;
const bit<2>  ECN_ECT0              = 2;
const bit<2>  ECN_CE                = 3;
const bit<6>  CNP_DSCP              = 48;
const bit<32> ETHERNET_HEADER_BYTES = 14;
const bit<32> VLAN_TAG_BYTES        = 4;

// InfiniBand BTH.
const bit<8>  BTH_OPCODE_CNP        = 0x81;
const bit<8>  INC_BTH_MARK          = 0x01;        // BTH byte 4 (resv8a): an INC header follows
const bit<16> BTH_BYTES             = 12;
const bit<16> CNP_EXTENSION_BYTES   = 16;
const bit<16> ICRC_BYTES            = 4;
// IBTA Annex A17: the masked LRH that RoCEv2 prepends to the ICRC input.
const bit<64> ICRC_MASKED_LRH       = 0xFFFFFFFFFFFFFFFF;

// fastcnp CNP extension (wire-formats.md "fastcnp CNP extension").
const bit<4>  CNP_EXT_VERSION           = 1;
const bit<4>  CNP_EXT_FLAG_WINDOW_VALID = 0x1;
const bit<4>  CNP_EXT_FLAG_BY_SWITCH    = 0x2;

// RDMA-connection announcement (wire-formats.md).
const bit<32> ANNOUNCE_MAGIC        = 0x46434E50;  // "FCNP"
const bit<8>  ANNOUNCE_VERSION      = 1;

// INC header (wire-formats.md "INC header").
const bit<8>  INC_FLAG_IDS          = 0x01;
const bit<8>  INC_FLAG_RESULT       = 0x02;        // the final aggregate (root of the tree)
const bit<8>  INC_FLAG_PARTIAL      = 0x04;        // a partial aggregate on its way up (multi-tier INC)
const bit<16> INC_IDS_BYTES         = 16;

// INT header (wire-formats.md "INT header and hop records"; HPCC).
const bit<8>  INT_BTH_MARK          = 0x02;        // BTH byte 4 (resv8a): an INT header follows
const bit<8>  INT_FLAG_ECHO         = 0x01;        // records echoed by a receiver: add none
const bit<8>  INT_VERSION           = 1;
const bit<16> INT_HOP_BYTES         = 24;

// set_connection flags (docs/dataplane.md "Actions").
const bit<8>  CONN_FLAG_INC_UPLINK  = 0x01;
const bit<8>  CONN_FLAG_CNP_TARGET  = 0x02;

// packet_in reasons.
const bit<7>  PUNT_REASON_ANNOUNCEMENT = 1;

// ---------------------------------------------------------------------------
// Port modes and states (docs/dataplane.md "Units and constants").
// ---------------------------------------------------------------------------
// 3 bits: room for every mode.
const bit<3> PORT_MODE_OFF     = 0;   // forward only
const bit<3> PORT_MODE_ECN     = 1;   // classic DCQCN CP: RED marking (spec 02)
const bit<3> PORT_MODE_FASTCNP = 2;   // switch CNPs with explicit window (spec 01)
// Ablation of fastcnp (issue 12): switch CNPs with the window, but no PFC-aware port
// state: a RESUME never makes a port undetermined, every port whose queue reaches
// Qth counts as congested.
const bit<3> PORT_MODE_FASTCNP_NO_PFC_STATE = 3;
const bit<3> PORT_MODE_INT     = 4;   // HPCC: an INT hop record on data packets that ask for one (spec 03)

const bit<1> PORT_DETERMINED   = 0;
const bit<1> PORT_UNDETERMINED = 1;

// Port events of port_state_digest_t.
const bit<8> PORT_EVENT_NONE                 = 0;   // internal: nothing to report
const bit<8> PORT_EVENT_PAUSE                = 1;
const bit<8> PORT_EVENT_RESUME_NOT_CONGESTED = 2;
const bit<8> PORT_EVENT_RESUME_CONGESTED     = 3;
const bit<8> PORT_EVENT_RESUME_UNDETERMINED  = 4;
const bit<8> PORT_EVENT_CHECK_DRAINED        = 5;
const bit<8> PORT_EVENT_CHECK_CONGESTED      = 6;

// RED: r is a uniform 16-bit random number.
const bit<16> RED_RANDOM_MAX = 0xFFFF;

// ---------------------------------------------------------------------------
// Tofino (p4src/tna, docs/tofino.md). Macros: the v1model program ignores them.
// ---------------------------------------------------------------------------
#define TOFINO1_CELL_BYTES       80    // traffic-manager buffer cell, Tofino 1 (deq_qdepth unit)
#define TOFINO2_CELL_BYTES       176   // traffic-manager buffer cell, Tofino 2
#define TOFINO1_CPU_PORT         192   // PCIe CPU port of 2-pipe Tofino 1 parts (4-pipe: 320, -DTNA_CPU_PORT=320)
#define TOFINO2_CPU_PORT         0     // PCIe CPU port of Tofino 2 (pipe 0, port 0)
#define TOFINO1_RECIRC_PORT      68    // recirculation port of pipe 0, Tofino 1: the mirror session's port
#define TOFINO2_RECIRC_PORT      6     // recirculation port of pipe 0, Tofino 2
#define PAUSE_GAP_PS_SHIFT       3     // inferred pause: a departure gap > pause_quantum_ps >> 3 ns (~125 quanta)
#define WINDOW_EPOCH_SHIFT       13    // departure shares are counted per 2^13 ns (8.2 us) epoch
#define LOG2_NS_PER_MS_Q6        1276  // round(64 * log2(10^6)): rx > C*T in the log domain
#define RED_RATIO_K_OFFSET       1024  // 64 * 16: exp2(1024 + log2(d) - log2(R)) = 65536 * d/R
#define PFC_EVENT_QID            7     // queue of PFC events ingress -> egress (strict priority, never paused)
#define FASTCNP_RECIRC_ETHERTYPE 0x88B5 // pseudo-Ethernet type of the recirculation header (IEEE local experimental)

#endif  // _FASTCNP_DEFINES_P4_
