// fastcnp (TNA): what only the Tofino program has (docs/tofino.md): the target
// constants, the bridged metadata ingress hands the traffic manager, the mirror /
// recirculation header that carries egress events back to ingress, the resubmit
// header, and the metadata of each control. The wire headers and digest structs are
// the shared ones of ../include/headers.p4.

#ifndef _FASTCNP_TNA_HEADERS_P4_
#define _FASTCNP_TNA_HEADERS_P4_

#include "../include/headers.p4"

// ---------------------------------------------------------------------------
// Target constants: one source, __TARGET_TOFINO__ picks (docs/tofino.md). The CPU
// and recirculation ports can be overridden at compile time (-DTNA_CPU_PORT=320 on
// a 4-pipe Tofino 1).
// ---------------------------------------------------------------------------
#if __TARGET_TOFINO__ == 2
#define TNA_CELL_BYTES TOFINO2_CELL_BYTES
#ifndef TNA_CPU_PORT
#define TNA_CPU_PORT TOFINO2_CPU_PORT
#endif
#ifndef TNA_RECIRC_PORT
#define TNA_RECIRC_PORT TOFINO2_RECIRC_PORT
#endif
#else
#define TNA_CELL_BYTES TOFINO1_CELL_BYTES
#ifndef TNA_CPU_PORT
#define TNA_CPU_PORT TOFINO1_CPU_PORT
#endif
#ifndef TNA_RECIRC_PORT
#define TNA_RECIRC_PORT TOFINO1_RECIRC_PORT
#endif
#endif

// deq_qdepth (cells) to bytes without a multiplier: the cell size is a sum of three
// powers of two, 80 = 64 + 8 + 8 and 176 = 128 + 32 + 16 (p4src TestTNACellShifts).
// Each term is deq_qdepth with CELL_SHIFT_* zero bits below it, from an identity hash
// (a hash places its input bits anywhere, so the shift costs no ALU step); two adds
// then make the bytes (FastcnpEgress e_qd_sums, e_qlen).
#if __TARGET_TOFINO__ == 2
#define CELL_SHIFT_A 7
#define CELL_SHIFT_B 5
#define CELL_SHIFT_C 4
#else
#define CELL_SHIFT_A 6
#define CELL_SHIFT_B 3
#define CELL_SHIFT_C 3
#endif

// The first byte of every packet that reaches egress: what follows.
const bit<8> BRIDGE_PACKET    = 1;   // a packet from ingress: bridged_h [bridged_cfg_h]
const bit<8> BRIDGE_PFC_EVENT = 2;   // a PFC / PAUSE frame: an event for its port's egress
const bit<8> BRIDGE_MIRROR    = 3;   // an E2E mirror copy: recirc_h, then the data frame

// recirc_h flags.
const bit<4> RECIRC_CNP        = 0x1;  // the frame becomes a switch CNP in ingress
const bit<4> RECIRC_EV0        = 0x2;  // ev0 (a PAUSE: ev0_queue_bytes, ev0_ns) is a digest
const bit<4> RECIRC_EV1        = 0x4;  // ev1 (RESUME_*, CHECK_*: qlen, rx, now) is a digest
const bit<4> RECIRC_CNP_DIGEST = 0x8;  // a cnp_digest_t

// Resubmit types (ingress_intrinsic_metadata_for_deparser_t.resubmit_type).
const bit<3> RESUBMIT_DIGEST2  = 1;    // a carrier's second digest
const bit<3> RESUBMIT_TAKEOVER = 2;    // an INC packet takes over an abandoned slot

// Digest types (ingress_intrinsic_metadata_for_deparser_t.digest_type).
const bit<3> DIGEST_TYPE_PORT_STATE = 1;
const bit<3> DIGEST_TYPE_CNP        = 2;

// Mirror type of the E2E mirror (egress_intrinsic_metadata_for_deparser_t.mirror_type).
const MirrorType_t MIRROR_TYPE_E2E = 2;

// slot_key_update's outcome, the stateful ALU's predicate: bit (2 * free + same key)
// is set, free = "remaining == 0", same key = "fingerprint equal".
// 0x2 (same key, not free) is this message's slot.
const bit<32> INC_KEY_BUSY = 0x1;    // another message's slot
const bit<32> INC_KEY_FREE = 0xC;    // a free slot (with or without a stale equal key)

// ---------------------------------------------------------------------------
// Bridged metadata, ingress -> egress (the traffic manager keeps it with the packet).
// ---------------------------------------------------------------------------
// Laid out for Tofino's action constraints (docs/tofino.md "Compiling"): a container
// an action writes takes one PHV source with constants, or two PHV sources without,
// and a source with constants must sit at its destination's bit offset. So the
// flags, which only constants set, share a byte with nothing copied; the port sits in
// the low 9 bits of 16 as ig_intr_md.ingress_port and eg_intr_md.egress_port do;
// the priority, copied from metadata, has a byte of its own.
header bridged_h {
    bit<8>    kind;           // BRIDGE_PACKET / BRIDGE_PFC_EVENT
    bit<1>    lossless;
    bit<1>    l2_flood;       // sent to a multicast group: egress prunes the ingress port's copy
    bit<1>    cnp_target;     // rdma_connection hit with CONN_FLAG_CNP_TARGET
    bit<1>    has_bth;
    bit<1>    pfc_pause;      // BRIDGE_PFC_EVENT: PAUSE (1) or XON (0)
    bit<3>    flags_pad;
    bit<7>    port_pad;
    port_id_t ingress_port;
    bit<48>   ingress_ns;     // BRIDGE_PFC_EVENT: the frame's arrival time
    bit<5>    priority_pad;
    bit<3>    priority;
    bit<8>    pad;
}

// The egress port's port_config (an ingress table, FastcnpIngress.port_config),
// for lossless packets.
header bridged_cfg_h {
    bit<32> rate_bytes_per_ms;
    bit<32> qth_bytes;
    bit<32> tcheck_ns;
    bit<32> cnp_gap_ns;
    bit<32> red_kmin_bytes;
    bit<32> red_kmax_bytes;
    bit<32> bdp_bytes;
    bit<32> pause_gap_ns;     // pause_quantum_ps >> PAUSE_GAP_PS_SHIFT
    bit<16> red_pmax_q16;
    bit<16> bdp_log2_q6;
    bit<16> mtu_bytes;
    bit<5>  pad;
    bit<3>  mode;
}

// ---------------------------------------------------------------------------
// The E2E mirror header and, once the copy loops back through the recirculation
// port, the recirculation header: the same bytes. Its bytes 12-13 are
// FASTCNP_RECIRC_ETHERTYPE, so that ingress recognises it where Ethernet's type is.
// It carries up to two port-state digests and a cnp_digest_t, and the CNP's window.
// ---------------------------------------------------------------------------
header recirc_h {
    bit<8>    kind;             // BRIDGE_MIRROR
    bit<4>    flags;            // RECIRC_*
    bit<4>    ev0;              // PORT_EVENT_* (a PAUSE)
    bit<4>    ev1;              // PORT_EVENT_* (RESUME_*, CHECK_*)
    bit<4>    pad;
    bit<7>    port_pad;         // the port in the low 9 bits of 16, as eg_intr_md's
    port_id_t port;             // the egress port the events and the CNP concern
    bit<48>   now_ns;           // the departure (or PFC frame) time
    bit<8>    reserved;         // 0 (puts ether_type at bytes 12-13)
    bit<16>   ether_type;       // FASTCNP_RECIRC_ETHERTYPE
    bit<32>   qlen_bytes;       // ev1's queue_bytes, the CNP's and its digest's
    bit<32>   rx_bytes;         // ev1's rx_bytes
    bit<32>   ev0_queue_bytes;  // ev0's queue_bytes
    bit<32>   ev0_ns;           // ev0's time, low 32 bits (the high 16 are now_ns's)
    bit<32>   window_bytes;     // the CNP's window
}

// Resubmit data: 8 bytes on Tofino 1, 16 on Tofino 2 (then 8 bytes of padding).
header resubmit_h {
    bit<8>  type;               // RESUBMIT_*
    bit<56> pad;
#if __TARGET_TOFINO__ == 2
    bit<64> pad2;
#endif
}

// Every header of the TNA program, in emit order.
struct tna_headers_t {
    bridged_h       bridged;
    bridged_cfg_h   bridged_cfg;
    recirc_h        recirc;
    fastcnp_headers_t w;        // the wire headers (include/headers.p4)
}

// The queue counters' index, port * 8 + priority (NUM_QUEUES entries): the identity
// hash of { port, priority }, 9 + 3 bits (p4src TestTNAIndexWidths).
typedef bit<12> queue_index_t;

// ---------------------------------------------------------------------------
// Ingress metadata.
// ---------------------------------------------------------------------------
struct tna_ingress_metadata_t {
    bit<1>    malformed;
    resubmit_h resubmit;
    bit<32>   now32;
    port_id_t in_port;              // the port the counters index (a CNP's: its congested port)
    // Counters with several reasons to count are counted once, at the end of
    // ingress (a counter is one table's: its uses must exclude each other).
    bit<1>    count_dropped;        // dropped[in_port]
    bit<1>    count_enqueued;       // queue_enqueued[enqueued_index]
    queue_index_t enqueued_index;   // port * 8 + priority

    // traffic_class, port_config.
    bit<3>    priority;
    bit<1>    lossless;
    port_id_t config_port;
    bit<1>    port_configured;
    bit<32>   rate_bytes_per_ms;
    bit<32>   qth_bytes;
    bit<32>   tcheck_ns;
    bit<32>   cnp_gap_ns;
    bit<3>    mode;
    bit<32>   red_kmin_bytes;
    bit<32>   red_kmax_bytes;
    bit<16>   red_pmax_q16;
    bit<32>   bdp_bytes;
    bit<16>   bdp_log2_q6;
    bit<16>   mtu_bytes;
    bit<32>   pause_quantum_ps;
    bit<16>   switch_id;
    bit<3>    lossless_priority;

    // ECMP.
    bit<16>   next_hop_group;
    bit<16>   ecmp_l4_src_port;
    bit<16>   ecmp_l4_dst_port;
    bit<1>    drop_ran;
    bit<1>    nexthop_ran;

    // rdma_connection.
    bit<1>    conn_hit;
    bit<24>   sender_qpn;
    bit<8>    conn_flags;
    bit<16>   conn_index;
    bit<16>   inc_group;
    bit<8>    worker_rank;

    // INC.
    bit<32>   contributors_mask;
    bit<1>    inc_root;
    bit<8>    inc_bucket;
    bit<8>    inc_child_rank;
    bit<32>   inc_slot_timeout_ns;

    // Punt, L2.
    bit<7>    punt_reason;
    bit<1>    l2_flood;

    // The digest this pass sends (from a recirculated carrier).
    port_id_t dg_port;
    bit<8>    dg_event;
    bit<32>   dg_queue_bytes;
    bit<32>   dg_rx_bytes;
    bit<48>   dg_ts_ns;
    bit<32>   dg_src_addr;
    bit<32>   dg_dst_addr;
    bit<32>   dg_window_bytes;

    // A switch CNP built in this pass: recompute its IPv4 checksum.
    bit<1>    ipv4_checksum_recompute;
}

// ---------------------------------------------------------------------------
// Egress metadata.
// ---------------------------------------------------------------------------
// The IPv4 checksum after one 16-bit word of the header grew by K, or shrank by D
// (no wrap): v1model's ipv4_checksum_replace_word (RFC 1624 eq. 3) evaluated per
// case, the same value for every checksum (p4src TestTNAChecksumSteps). Each branch
// is one addition, what a Tofino action can do; the general form is seven
// dependent operations, which bf-p4c rejects ("action spanning multiple stages"),
// and a deparser recomputation would not cover IPv4 options.
// A gateway compares bytes with constants and has 12 bits for a range, so the
// 16-bit "CSUM >= constant" is spelt by bytes: GROW takes K < 256 (CSUM >= K when
// its high byte is not 0 or its low byte is >= K), SHRINK takes D a multiple of
// 256 (CSUM >= 0xFFFF - D when the high byte is above 0xFF - D/256, or equal to
// it with a low byte of 0xFF).
#define IPV4_CHECKSUM_AFTER_GROW(CSUM, K)                                           \
    if (CSUM[15:8] != 0 || CSUM[7:0] >= (K)[7:0]) { CSUM = CSUM - (K); } else { CSUM = CSUM - ((K) + 1); }
#define IPV4_CHECKSUM_AFTER_SHRINK(CSUM, D)                                         \
    if (CSUM[15:8] > 8w0xFF - (D)[15:8] || (CSUM[15:8] == 8w0xFF - (D)[15:8] && CSUM[7:0] == 8w0xFF)) { CSUM = CSUM + ((D) + 1); } else { CSUM = CSUM + (D); }

// RESULT = (A >= B), unsigned 32-bit, given DIFF = A - B computed by an action: a
// gateway tests single bits against constants, never two fields. With equal top
// bits the difference's sign decides; otherwise the top bits do (p4src
// TestTNAUnsignedGE). RESULT is a bool set in branches.
#define UNSIGNED_GE_32(RESULT, A, B, DIFF)                                          \
    RESULT = false;                                                                 \
    if (A[31:31] == 1) {                                                            \
        if (B[31:31] == 0) { RESULT = true; } else if (DIFF[31:31] == 0) { RESULT = true; } \
    } else if (B[31:31] == 0) {                                                     \
        if (DIFF[31:31] == 0) { RESULT = true; }                                    \
    }

// The flow registers' index: the flow fingerprint's low log2(FLOW_SLOTS) bits (a
// field, since Tofino takes no "fingerprint & mask" expression as an index; p4src
// TestTNAFlowSlotWidth checks the width against FLOW_SLOTS).
typedef bit<12> flow_slot_t;
// The INC slot registers' index: the INC slot hash's output, log2(INC_SLOTS) bits
// (TestTNAIndexWidths), so that the hash feeds the index with no mask step.
typedef bit<10> inc_slot_t;

struct tna_egress_metadata_t {
    bit<1>    malformed;
    bit<32>   now32;
    recirc_h  mirror;               // the mirror header of this packet's E2E copy
    MirrorId_t mirror_session;

    // Explicit window and RED: the log2 LPM tables' keys and results.
    bit<32>   flow_data_bytes;
    bit<32>   port_data_bytes;
    bit<16>   port_log2_q6;
    bit<32>   window_exp2_bytes;
    bit<1>    window_exp2_hit;

    // The RESUME decision's constant log2 tables.
    bit<16>   pause_log2_q6;
    bit<16>   rate_log2_q6;

    // Register and counter indices computed from other values: Tofino takes an
    // index from a field (or a hash), not from an expression.
    flow_slot_t flow_slot;          // flow fingerprint & (FLOW_SLOTS - 1)

    // The egress arithmetic's steps (FastcnpEgress e_* actions): values, and
    // differences whose sign bit a gateway tests ("a < b" of two fields).
    bit<32>   pkt_bytes;            // eg_intr_md.pkt_length
    bit<32>   qd_bytes;             // deq_qdepth in bytes
    bit<32>   qd_a;                 // its three terms: deq_qdepth << CELL_SHIFT_A
    bit<32>   qd_b;
    bit<32>   qd_c;
    bit<32>   qd_ab;                // qd_a + qd_b
    bit<32>   qd_cp;                // qd_c + pkt_bytes
    bit<32>   qlen;                 // bytes: deq_qdepth * CELL + this packet
    bit<32>   qlen1;                // qlen + 1 (port_check_qlen1's encoding)
    bit<32>   qth_diff;             // qlen - Qth
    bit<32>   kmax_diff;            // qlen - Kmax
    bit<32>   kmin_diff;            // Kmin - qlen
    bit<32>   last;                 // the port's previous departure, ns
    bit<32>   last_qd_bytes;        // its deq_qdepth, bytes
    bit<32>   gap_ns;               // now - last
    bit<32>   gap_excess;           // pause_gap - gap_ns
    bit<32>   rx_diff;              // qlen - last_qd_bytes
    bit<32>   pause_start;          // a framed pause's start (0: none)
    bit<32>   pause_end;            // its end (0: still open)
    bit<16>   beats_base;           // log2(rate) + log2(pause) - log2(10^6), q6
    bit<16>   beats_neg;            // log2(rx) - beats_base: rx beats C*T iff > 0
    bit<32>   check_old;            // port_check_qlen1 before this departure
    bit<32>   check_grew;           // check_old - qlen1
    bit<32>   port_share_a;         // the port's bytes in this epoch and the last
    bit<32>   port_share_b;
    bit<32>   flow_share_a;         // the flow's
    bit<32>   flow_share_b;
    bit<16>   k_base;               // log2 of the window's base (BDP or RED's 65536)
    bit<16>   k_sum;                // k_base + log2(flow)
    bit<16>   k_diff;               // k_sum - log2(port): the window's log2 (q6)
    bit<32>   red_r;                // RED's random word
    bit<32>   red_lo;               // its low half - Pmax
    bit<32>   red_hi;               // its high half - exp2
    bit<32>   red_pmax;             // Pmax, 32 bits
    queue_index_t dequeued_index;   // port * 8 + priority
}

#endif  // _FASTCNP_TNA_HEADERS_P4_
