// fastcnp: the TNA program (Tofino 1, tna) and T2NA program (Tofino 2, t2na), one
// source; __TARGET_TOFINO__ (set by p4c-barefoot) picks where the two differ.
//
//   p4c --target tofino  --arch tna  -g -o OUT --p4runtime-files OUT/fastcnp.p4info.txtpb \
//       --p4runtime-force-std-externs tna/fastcnp.p4
//   p4c --target tofino2 --arch t2na ...            (p4src/build.sh tofino | tofino2)
//
// Design and its reasons: docs/tofino.md (the state of spec 01 lives in egress, pauses
// are framed by PFC frames or inferred from departure gaps, the queue length is the
// traffic manager's, products become log-domain comparisons, egress events and switch
// CNPs reach ingress through an E2E mirror to the recirculation port). The algorithm
// is docs/dataplane.md's; the step numbers in the comments are that page's. Spec
// links: 01 fast precise feedback, 02 DCQCN CP, 04 INC, 05 wire formats. Every
// read-modify-write of state is a RegisterAction, one per register per packet.

#include <core.p4>
#if __TARGET_TOFINO__ == 2
#include <t2na.p4>
#else
#include <tna.p4>
#endif

#include "../include/defines.p4"
#include "../include/headers.p4"
#include "../include/parser.p4"
#include "../include/controls.p4"
#include "headers.p4"

struct pair32_t {
    bit<32> lo;
    bit<32> hi;
}

// ===========================================================================
// Ingress parser (docs/dataplane.md "Parser").
// ===========================================================================
parser FastcnpParser(packet_in pkt,
                     out tna_headers_t hdr,
                     out tna_ingress_metadata_t meta,
                     out ingress_intrinsic_metadata_t ig_intr_md) {
    // Extra UDP destination ports of announcements; ANNOUNCE_UDP_PORT is recognised
    // without it. No @id: bf-p4c checks it against the standard prefix and then
    // derives the ID from the name anyway. Stratum does not write parser value sets
    // (docs/tofino.md "P4Info"): with Stratum, announcements use ANNOUNCE_UDP_PORT.
    value_set<bit<16>>(ANNOUNCE_UDP_PORTS) announce_udp_port;

    FastcnpRoceParser()         roce_parser;
    FastcnpAnnouncementParser() announcement_parser;

    state start {
        pkt.extract(ig_intr_md);
        meta.malformed = 0;
        transition select(ig_intr_md.resubmit_flag) {
            1:       parse_resubmit;
            default: parse_port_metadata;
        }
    }

    state parse_resubmit {
        pkt.extract(meta.resubmit);
#if __TARGET_TOFINO__ == 2
        pkt.advance(64);
#endif
        transition check_port;
    }

    state parse_port_metadata {
        pkt.advance(PORT_METADATA_SIZE);
        transition check_port;
    }

    // The CPU port's packets carry packet_out; the recirculation port's carry the
    // mirror's recirculation header (bytes 12-13 FASTCNP_RECIRC_ETHERTYPE).
    state check_port {
        transition select(ig_intr_md.ingress_port) {
            TNA_CPU_PORT:    parse_packet_out;
            TNA_RECIRC_PORT: check_recirc;
            default:         parse_frame;
        }
    }

    state parse_packet_out {
        pkt.extract(hdr.w.packet_out);
        transition parse_frame;
    }

    state check_recirc {
        transition select(pkt.lookahead<bit<112>>()[15:0]) {
            FASTCNP_RECIRC_ETHERTYPE: parse_recirc;
            default:                  parse_frame;
        }
    }

    state parse_recirc {
        pkt.extract(hdr.recirc);
        transition parse_frame;
    }

    // The frame states in place: Tofino's parser selects only on bytes extracted on
    // every path, so the UDP dispatch follows the UDP header in this parser
    // (include/parser.p4).
    state parse_frame {
        transition parse_frame_ethernet;
    }

    FASTCNP_FRAME_STATES(hdr.w, meta.malformed, dispatch_udp, accept)

    // RoCEv2 first, then the compile-time announcement port, then the value set.
    state dispatch_udp {
        transition select(hdr.w.udp.dst_port) {
            ROCE_UDP_PORT:     parse_roce;
            ANNOUNCE_UDP_PORT: parse_announcement;
            announce_udp_port: parse_announcement;
            default:           accept;
        }
    }

    state parse_roce {
        roce_parser.apply(pkt, hdr.w, meta.malformed);
        transition accept;
    }

    state parse_announcement {
        announcement_parser.apply(pkt, hdr.w, meta.malformed);
        transition accept;
    }
}

// One INC lane (spec 04 step 3): a register per lane, set by a claim (lane_claim),
// added to by a contribution; it returns the slot's new sum into the packet (used
// when it becomes the aggregate). One RegisterAction that chooses, not two in
// branches: a lane is then one table, not two (a stage holds 16 logical tables,
// shared by both gresses). Names are v1model's (top-level there); IDs are
// bf-p4c's, from the names (docs/tofino.md "P4Info").
#define INC_LANE_REGISTER(i, NAME)                                                  \
    @name(NAME)                                                                     \
    Register<bit<32>, inc_slot_t>(INC_SLOTS) inc_slot_value_##i;                    \
    RegisterAction<bit<32>, inc_slot_t, bit<32>>(inc_slot_value_##i) lane##i##_update = { \
        void apply(inout bit<32> value, out bit<32> rv) {                           \
            if (lane_claim == 1) {                                                  \
                value = hdr.w.inc_vector.lane##i;                                   \
            } else {                                                                \
                value = value + hdr.w.inc_vector.lane##i;                           \
            }                                                                       \
            rv = value;                                                             \
        }                                                                           \
    };

#define INC_LANE_APPLY(i)                                                           \
    hdr.w.inc_vector.lane##i = lane##i##_update.execute(inc_slot);

// ===========================================================================
// Ingress (docs/dataplane.md "Ingress, in order"; docs/tofino.md).
// ===========================================================================
control FastcnpIngress(inout tna_headers_t hdr,
                       inout tna_ingress_metadata_t meta,
                       in ingress_intrinsic_metadata_t ig_intr_md,
                       in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                       inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                       inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    // ---- Counters indexed by port (docs/dataplane.md "Counters").
    Counter<bit<64>, bit<32>>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) pfc_pause_rx;
    Counter<bit<64>, bit<32>>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) pfc_resume_rx;
    Counter<bit<64>, bit<32>>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) dropped;
    Counter<bit<64>, bit<32>>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) malformed;
    Counter<bit<64>, bit<32>>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) announcements;
    Counter<bit<64>, bit<32>>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) inc_contributions;
    Counter<bit<64>, bit<32>>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) inc_duplicates;
    Counter<bit<64>, bit<32>>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) inc_results;
    Counter<bit<64>, bit<32>>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) inc_slot_busy;
    Counter<bit<64>, bit<32>>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) inc_slot_takeovers;
    // Filled by the target, never by the program (BMv2 and Tofino leave it at 0).
    Counter<bit<64>, bit<32>>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) input_dropped;
    // Switch CNPs: v1model counts them in egress; here the CNP is built in the
    // recirculated ingress pass, where it exists. Same P4Info name.
    @name(".FastcnpEgress.switch_cnp_sent")
    Counter<bit<64>, bit<32>>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) switch_cnp_sent;
    // ---- Counters indexed by queue, port * 8 + priority.
    Counter<bit<64>, bit<32>>(NUM_QUEUES, CounterType_t.PACKETS_AND_BYTES) queue_enqueued;
    // Filled by a traffic manager that can, never by the program (Tofino: 0).
    Counter<bit<64>, bit<32>>(NUM_QUEUES, CounterType_t.PACKETS_AND_BYTES) pfc_xoff_sent;
    Counter<bit<64>, bit<32>>(NUM_QUEUES, CounterType_t.PACKETS_AND_BYTES) pfc_xon_sent;

    // ---- ECMP: the action profile keeps v1model's P4Info name and ID; TNA needs a
    // selector next to it (its max group size appears in the P4Info).
    @name("next_hop_selector")
    ActionProfile(NEXT_HOP_GROUP_MEMBERS) next_hop_profile;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) next_hop_hash;
    ActionSelector(next_hop_profile, next_hop_hash, SelectorMode_t.FAIR,
                   NEXT_HOP_GROUP_MEMBERS, NEXT_HOP_GROUPS) next_hop_selector_sel;

    // ---- Hashes (docs/dataplane.md "Hashes"): CRC-32/IEEE and CRC-16/ARC as BMv2's.
    CRCPolynomial<bit<32>>(32w0x04C11DB7, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) crc32_ieee;
    CRCPolynomial<bit<16>>(16w0x8005, true, false, false, 16w0x0000, 16w0x0000) crc16_arc;
    // The INC slot key's fingerprint: CRC-32C, independent of the slot hash.
    CRCPolynomial<bit<32>>(32w0x1EDC6F41, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) crc32c;
    Hash<inc_slot_t>(HashAlgorithm_t.CUSTOM, crc32_ieee) inc_slot_hash;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32c) inc_key_hash;
    Hash<bit<16>>(HashAlgorithm_t.CUSTOM, crc16_arc) inc_bucket_hash;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32_ieee) icrc_cnp_hash;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32_ieee) icrc_inc_hash;
    // queue_enqueued's index, port * 8 + priority: the identity hash of the two
    // fields is their concatenation, built by the hash unit from wherever the PHV
    // holds them (a shift and an OR would be two actions and three sources).
    Hash<queue_index_t>(HashAlgorithm_t.IDENTITY) enqueued_index_hash;
    // Header fields that enter 32-bit INC arithmetic come through identity hashes
    // (zero-extended): an ALU copy would tie the arithmetic's containers to the
    // headers' layout (the PSN shares its word with ack_req and resv7), for which
    // PHV allocation finds no slicing.
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) inc_psn_hash;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) inc_ids_id_hash;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) inc_ids_offset_hash;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) inc_ids_op_hash;
    // And back into the IDS part of a result: the offset and the flow length.
    Hash<bit<24>>(HashAlgorithm_t.IDENTITY) inc_ids_first_psn_out_hash;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) inc_ids_flow_len_out_hash;

    // ---- INC registers (spec 04; docs/tofino.md "INC aggregation").
    // The data flow of each connection (one way: docs/tofino.md). Names are
    // v1model's; v1model keeps INC_FLOW_WAYS flows per connection.
    @name(".inc_flow_inc_id")
    Register<bit<32>, bit<32>>(CONN_TABLE_SIZE) inc_flow_inc_id;
    @name(".inc_flow_first_psn")
    Register<bit<32>, bit<32>>(CONN_TABLE_SIZE) inc_flow_first_psn;
    @name(".inc_flow_len")
    Register<bit<32>, bit<32>>(CONN_TABLE_SIZE) inc_flow_len;
    @name(".inc_flow_op")
    Register<bit<32>, bit<32>>(CONN_TABLE_SIZE) inc_flow_op;

    RegisterAction<bit<32>, bit<32>, bit<32>>(inc_flow_inc_id) flow_inc_id_write = {
        void apply(inout bit<32> value, out bit<32> rv) { value = hdr.w.inc_ids.group_id ++ hdr.w.inc_ids.message_id; rv = value; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(inc_flow_inc_id) flow_inc_id_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(inc_flow_first_psn) flow_first_psn_write = {
        void apply(inout bit<32> value, out bit<32> rv) { value = (bit<32>)hdr.w.inc_ids.first_psn; rv = value; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(inc_flow_first_psn) flow_first_psn_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(inc_flow_len) flow_len_write = {
        void apply(inout bit<32> value, out bit<32> rv) { value = hdr.w.inc_ids.flow_len; rv = value; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(inc_flow_len) flow_len_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(inc_flow_op) flow_op_write = {
        void apply(inout bit<32> value, out bit<32> rv) { value = (bit<32>)hdr.w.inc_ids.operation_id; rv = value; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(inc_flow_op) flow_op_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };

    // A slot's key and the contributors it still waits for: {lo: CRC-32C
    // fingerprint of (INC ID, offset, operation ID), hi: remaining contributors
    // (0: free)}. One RegisterAction claims a free slot, takes a contributor off a
    // slot of the same key, or leaves another key's slot alone (busy). Tofino 1's
    // stateful ALU has one output word with one source, so the outcome comes out as
    // the ALU's predicate (INC_KEY_*: which of "same key", "free" held) and the
    // contributors already seen are kept in inc_slot_seen, the next register.
    // Because the remaining set is a subset of contributors_mask, "hi & ~bit" is
    // "hi & inc_remaining_after_claim": two packet inputs, what the ALU takes.
    @name(".inc_slot_key") Register<pair32_t, inc_slot_t>(INC_SLOTS) inc_slot_key;
    bit<32> inc_fp;
    bit<32> inc_remaining_after_claim;  // contributors_mask without this contributor
    RegisterAction<pair32_t, inc_slot_t, bit<32>>(inc_slot_key) slot_key_update = {
        void apply(inout pair32_t value, out bit<32> rv) {
            rv = this.predicate(value.lo == inc_fp, value.hi == 0);
            if (value.hi == 0) {
                value.lo = inc_fp;
                value.hi = inc_remaining_after_claim;
            } else if (value.lo == inc_fp) {
                value.hi = value.hi & inc_remaining_after_claim;
            }
        }
    };
    RegisterAction<pair32_t, inc_slot_t, bit<32>>(inc_slot_key) slot_key_takeover = {
        void apply(inout pair32_t value) {
            value.lo = inc_fp;
            value.hi = inc_remaining_after_claim;
        }
    };
    // The ranks that contributed to the slot's message so far (TNA only: v1model
    // reads them off inc_slot_key's remaining set in the same action).
    @name(".inc_slot_seen") Register<bit<32>, inc_slot_t>(INC_SLOTS) inc_slot_seen;
    bit<32> inc_id;                     // the packet's INC ID (group ++ message)
    bit<1>  lane_claim;                 // 1: this packet claimed its slot (the lanes set)
    bit<32> inc_rank_bit;               // 1 << rank (the rank_bit tables)
    bit<32> inc_rank_in_mask;           // contributors_mask & inc_rank_bit
    inc_slot_t inc_slot;                // the slot: the INC slot hash of (INC ID, offset)
    bit<32> psn32;                      // the BTH PSN, zero-extended
    bit<32> inc_offset;                 // PSN - first PSN, mod 2^24
    // Comparisons of two values as gateways of one field and constants: the
    // differences and masks, each computed by an action.
    bit<32> inc_offset_excess;          // offset - flow_len
    bit<32> inc_slot_age;               // now - the slot's start
    bit<32> inc_age_excess;             // age - the timeout
    bit<32> inc_seen_mask;              // a member's bit not seen yet (0: duplicate)
    bit<32> inc_left_mask;              // the other members not seen yet (0: complete)
    RegisterAction<bit<32>, inc_slot_t, bit<32>>(inc_slot_seen) slot_seen_claim = {
        void apply(inout bit<32> value) { value = inc_rank_bit; }
    };
    RegisterAction<bit<32>, inc_slot_t, bit<32>>(inc_slot_seen) slot_seen_add = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; value = value | inc_rank_bit; }
    };
    // When the slot's message claimed it (slot aging; 32-bit ns).
    @name(".inc_slot_start_ns")
    Register<bit<32>, inc_slot_t>(INC_SLOTS) inc_slot_start_ns;
    RegisterAction<bit<32>, inc_slot_t, bit<32>>(inc_slot_start_ns) slot_start_claim = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; value = meta.now32; }
    };
    RegisterAction<bit<32>, inc_slot_t, bit<32>>(inc_slot_start_ns) slot_start_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };

    INC_LANE_REGISTER(0, ".inc_slot_value_0")
    INC_LANE_REGISTER(1, ".inc_slot_value_1")
    INC_LANE_REGISTER(2, ".inc_slot_value_2")
    INC_LANE_REGISTER(3, ".inc_slot_value_3")
    INC_LANE_REGISTER(4, ".inc_slot_value_4")
    INC_LANE_REGISTER(5, ".inc_slot_value_5")
    INC_LANE_REGISTER(6, ".inc_slot_value_6")
    INC_LANE_REGISTER(7, ".inc_slot_value_7")
    INC_LANE_REGISTER(8, ".inc_slot_value_8")
    INC_LANE_REGISTER(9, ".inc_slot_value_9")
    INC_LANE_REGISTER(10, ".inc_slot_value_10")
    INC_LANE_REGISTER(11, ".inc_slot_value_11")
    INC_LANE_REGISTER(12, ".inc_slot_value_12")
    INC_LANE_REGISTER(13, ".inc_slot_value_13")
    INC_LANE_REGISTER(14, ".inc_slot_value_14")
    INC_LANE_REGISTER(15, ".inc_slot_value_15")

    // ---- Actions (docs/dataplane.md "Actions"; parameter order is the contract).
    @id(0x01000001) action drop() {
        ig_dprsr_md.drop_ctl = 1;
        meta.drop_ran = 1;
    }

    @id(0x01000002) action set_nexthop(bit<9> port, bit<48> src_mac, bit<48> dst_mac) {
        ig_tm_md.ucast_egress_port = port;
        hdr.w.ethernet.src_addr = src_mac;
        hdr.w.ethernet.dst_addr = dst_mac;
        meta.nexthop_ran = 1;
    }

    @id(0x0100000C) action set_next_hop_group(bit<16> group_id) {
        meta.next_hop_group = group_id;
    }

    @id(0x01000003) action set_traffic_class(bit<3> priority, bit<1> lossless) {
        meta.priority = priority;
        meta.lossless = lossless;
        // The queue (step 10) from action data: copied from meta.priority, qid and
        // ingress_cos (one container) would take it twice, at two rotations.
        // A miss sets queue 0 (step 6).
        ig_tm_md.qid = (QueueId_t)priority;
        ig_tm_md.ingress_cos = priority;
    }

    @id(0x01000004) action set_port_config(bit<32> rate_bytes_per_ms,
                                           bit<32> qth_bytes,
                                           bit<32> tcheck_ns,
                                           bit<32> cnp_gap_ns,
                                           bit<3>  mode,
                                           bit<32> red_kmin_bytes,
                                           bit<32> red_kmax_bytes,
                                           bit<16> red_pmax_q16,
                                           bit<32> rtt_base_ns,
                                           bit<32> bdp_bytes,
                                           bit<16> bdp_log2_q6,
                                           bit<16> mtu_bytes,
                                           bit<32> pause_quantum_ps,
                                           bit<16> switch_id,
                                           bit<3>  lossless_priority) {
        meta.port_configured   = 1;
        meta.rate_bytes_per_ms = rate_bytes_per_ms;
        meta.qth_bytes         = qth_bytes;
        meta.tcheck_ns         = tcheck_ns;
        meta.cnp_gap_ns        = cnp_gap_ns;
        meta.mode              = mode;
        meta.red_kmin_bytes    = red_kmin_bytes;
        meta.red_kmax_bytes    = red_kmax_bytes;
        meta.red_pmax_q16      = red_pmax_q16;
        meta.bdp_bytes         = bdp_bytes;
        meta.bdp_log2_q6       = bdp_log2_q6;
        meta.mtu_bytes         = mtu_bytes;
        meta.pause_quantum_ps  = pause_quantum_ps;
        meta.switch_id         = switch_id;
        meta.lossless_priority = lossless_priority;
    }

    @id(0x01000005) action set_connection(bit<24> sender_qpn,
                                          bit<8>  flags,
                                          bit<16> conn_index,
                                          bit<16> inc_group,
                                          bit<8>  worker_rank) {
        meta.conn_hit    = 1;
        meta.sender_qpn  = sender_qpn;
        meta.conn_flags  = flags;
        meta.conn_index  = conn_index;
        meta.inc_group   = inc_group;
        meta.worker_rank = worker_rank;
    }

    @id(0x01000006) action set_inc_group(bit<32> contributors_mask, bit<1> root) {
        meta.contributors_mask = contributors_mask;
        meta.inc_root = root;
    }

    @id(0x01000020) action set_inc_child(bit<8> child_rank) {
        meta.inc_child_rank = child_rank;
    }

    @id(0x0100000D) action set_inc_slot_timeout(bit<32> timeout_ns) {
        meta.inc_slot_timeout_ns = timeout_ns;
    }

    @id(0x0100000A) action l2_set_port(bit<9> port) {
        ig_tm_md.ucast_egress_port = port;
    }

    // Every port of a multicast group of the PRE; egress drops the ingress
    // port's copy (Egress step 0).
    @id(0x0100000B) action l2_flood(bit<16> mcast_grp) {
        ig_tm_md.mcast_grp_a = mcast_grp;
        meta.l2_flood = 1;
    }

    // ---- Tables (docs/dataplane.md "Tables").
    @id(0x02000001) table ipv4_route {
        key = { hdr.w.ipv4.dst_addr: lpm @name("dst_addr"); }
        actions = { set_nexthop; set_next_hop_group; drop; }
        default_action = drop();
        size = ROUTE_TABLE_SIZE;
    }

    @id(0x0200000B) table next_hop_group_select {
        key = {
            meta.next_hop_group:    exact @name("group_id");
            hdr.w.ipv4.src_addr:    selector;
            hdr.w.ipv4.dst_addr:    selector;
            hdr.w.ipv4.protocol:    selector;
            meta.ecmp_l4_src_port:  selector;
            meta.ecmp_l4_dst_port:  selector;
        }
        actions = { set_nexthop; drop; }
        implementation = next_hop_selector_sel;
        size = NEXT_HOP_GROUPS;
    }

    @id(0x02000002) table traffic_class {
        key = {
            hdr.w.vlan.isValid(): exact   @name("vlan_valid");
            hdr.w.vlan.pcp:       ternary @name("pcp");
            hdr.w.ipv4.dscp:      ternary @name("dscp");
        }
        actions = { set_traffic_class; NoAction; }
        default_action = NoAction();
        size = TRAFFIC_CLASS_TABLE_SIZE;
    }

    @id(0x02000003) table port_config {
        key = { meta.config_port: exact @name("port"); }
        actions = { set_port_config; NoAction; }
        default_action = NoAction();
        size = NUM_PORTS;
    }

    @id(0x02000004) table rdma_connection {
        key = {
            hdr.w.ipv4.src_addr: exact @name("src_addr");
            hdr.w.udp.src_port:  exact @name("udp_sport");
            hdr.w.bth.dest_qp:   exact @name("dest_qp");
        }
        actions = { set_connection; NoAction; }
        default_action = NoAction();
        size = CONN_TABLE_SIZE;
    }

    @id(0x02000005) table inc_group {
        key = { inc_id[31:16]: exact @name("group_id"); }
        actions = { set_inc_group; NoAction; }
        default_action = NoAction();
        size = INC_GROUPS;
    }

    @id(0x02000020) table inc_child_port {
        key = { ig_intr_md.ingress_port: exact @name("port"); }
        actions = { set_inc_child; NoAction; }
        default_action = NoAction();
        size = NUM_PORTS;
    }

    @id(0x0200000C) table inc_slot_timeout {
        key = { inc_id[31:16]: exact @name("group_id"); }
        actions = { set_inc_slot_timeout; NoAction; }
        default_action = NoAction();
        size = INC_GROUPS;
    }

    @id(0x02000006) table inc_route {
        key = { meta.inc_bucket: exact @name("bucket"); }
        actions = { set_nexthop; NoAction; }
        default_action = NoAction();
        size = INC_BUCKETS;
    }

    @id(0x0200000A) table l2_forward {
        key = { hdr.w.ethernet.dst_addr: exact @name("dst_addr"); }
        actions = { l2_set_port; l2_flood; drop; }
        default_action = drop();
        size = L2_FORWARD_TABLE_SIZE;
    }

    // The ICRC of a switch CNP (IBTA Annex A17, as v1model's IcrcCnp): CRC-32 over
    // the masked LRH, IPv4 (TOS, TTL, checksum masked), UDP (checksum masked), BTH
    // (byte 4 masked) and the CNP extension, least-significant byte first.
    @hidden action icrc_cnp() {
        bit<32> crc = icrc_cnp_hash.get({ ICRC_MASKED_LRH,
            hdr.w.ipv4.version, hdr.w.ipv4.ihl, 8w0xFF, hdr.w.ipv4.total_len,
            hdr.w.ipv4.identification, hdr.w.ipv4.flags, hdr.w.ipv4.frag_offset,
            8w0xFF, hdr.w.ipv4.protocol, 16w0xFFFF, hdr.w.ipv4.src_addr, hdr.w.ipv4.dst_addr,
            hdr.w.udp.src_port, hdr.w.udp.dst_port, hdr.w.udp.length, 16w0xFFFF,
            hdr.w.bth.opcode, hdr.w.bth.solicited_event, hdr.w.bth.mig_req, hdr.w.bth.pad_count,
            hdr.w.bth.transport_version, hdr.w.bth.partition_key, 8w0xFF, hdr.w.bth.dest_qp,
            hdr.w.bth.ack_req, hdr.w.bth.resv7, hdr.w.bth.psn,
            hdr.w.cnp_ext.version, hdr.w.cnp_ext.flags, hdr.w.cnp_ext.reserved0,
            hdr.w.cnp_ext.switch_id, hdr.w.cnp_ext.window_bytes, hdr.w.cnp_ext.port,
            hdr.w.cnp_ext.queue_bytes, hdr.w.cnp_ext.reserved1 });
        hdr.w.icrc.setValid();
        hdr.w.icrc.value_lsb_first = crc[7:0] ++ crc[15:8] ++ crc[23:16] ++ crc[31:24];
    }

    // The ICRC of an INC aggregate (as v1model's IcrcIncResult).
    @hidden action icrc_inc() {
        bit<32> crc = icrc_inc_hash.get({ ICRC_MASKED_LRH,
            hdr.w.ipv4.version, hdr.w.ipv4.ihl, 8w0xFF, hdr.w.ipv4.total_len,
            hdr.w.ipv4.identification, hdr.w.ipv4.flags, hdr.w.ipv4.frag_offset,
            8w0xFF, hdr.w.ipv4.protocol, 16w0xFFFF, hdr.w.ipv4.src_addr, hdr.w.ipv4.dst_addr,
            hdr.w.udp.src_port, hdr.w.udp.dst_port, hdr.w.udp.length, 16w0xFFFF,
            hdr.w.bth.opcode, hdr.w.bth.solicited_event, hdr.w.bth.mig_req, hdr.w.bth.pad_count,
            hdr.w.bth.transport_version, hdr.w.bth.partition_key, 8w0xFF, hdr.w.bth.dest_qp,
            hdr.w.bth.ack_req, hdr.w.bth.resv7, hdr.w.bth.psn,
            hdr.w.inc_base.flags, hdr.w.inc_base.version, hdr.w.inc_base.reserved,
            hdr.w.inc_ids.group_id, hdr.w.inc_ids.message_id, hdr.w.inc_ids.reserved0,
            hdr.w.inc_ids.first_psn, hdr.w.inc_ids.operation_id, hdr.w.inc_ids.reserved1,
            hdr.w.inc_ids.flow_len,
            hdr.w.inc_vector.lane0,  hdr.w.inc_vector.lane1,  hdr.w.inc_vector.lane2,
            hdr.w.inc_vector.lane3,  hdr.w.inc_vector.lane4,  hdr.w.inc_vector.lane5,
            hdr.w.inc_vector.lane6,  hdr.w.inc_vector.lane7,  hdr.w.inc_vector.lane8,
            hdr.w.inc_vector.lane9,  hdr.w.inc_vector.lane10, hdr.w.inc_vector.lane11,
            hdr.w.inc_vector.lane12, hdr.w.inc_vector.lane13, hdr.w.inc_vector.lane14,
            hdr.w.inc_vector.lane15 });
        hdr.w.icrc.setValid();
        hdr.w.icrc.value_lsb_first = crc[7:0] ++ crc[15:8] ++ crc[23:16] ++ crc[31:24];
    }

    // packet_in's port moves from ig_intr_md's low 9 bits to the high 9 of its
    // word, beside a constant reason: a rotated source with a constant is more than
    // an action can write, so the constant and the copy are two actions (tables).
    @hidden action packet_in_reason() {
        hdr.w.packet_in.setValid();
        hdr.w.packet_in.reason = PUNT_REASON_ANNOUNCEMENT;
    }
    // The switch CNP's rewrite: its constants are one action, its copies actions of
    // their own, so that no container takes a constant beside a rotated source.
    @hidden action cnp_swap_addresses() {
        ipv4_addr_t flow_src_addr = hdr.w.ipv4.src_addr;
        hdr.w.ipv4.src_addr = hdr.w.ipv4.dst_addr;
        hdr.w.ipv4.dst_addr = flow_src_addr;
    }
    @hidden action cnp_dest_qp() { hdr.w.bth.dest_qp = meta.sender_qpn; }
    @hidden action cnp_ext_from_recirc() {
        hdr.w.cnp_ext.window_bytes = hdr.recirc.window_bytes;
        hdr.w.cnp_ext.port = hdr.recirc.port_pad ++ hdr.recirc.port;   // one container
        hdr.w.cnp_ext.queue_bytes = hdr.recirc.qlen_bytes;
    }
    @hidden action packet_in_port() { hdr.w.packet_in.ingress_port = ig_intr_md.ingress_port; }
    // A contribution's offset in its data flow, in two actions (one operation each).
    @hidden action inc_offset_sub(bit<32> first_psn) { inc_offset = psn32 - first_psn; }
    // The identity hashes and the INC hashes, an action each (an action takes 32
    // bits from the hash units).
    @hidden action inc_ids_id(out bit<32> v) { v = inc_ids_id_hash.get({ hdr.w.inc_ids.group_id, hdr.w.inc_ids.message_id }); }
    @hidden action inc_ids_offset(out bit<32> v) { v = inc_ids_offset_hash.get({ hdr.w.inc_ids.first_psn }); }
    @hidden action inc_ids_op(out bit<32> v) { v = inc_ids_op_hash.get({ hdr.w.inc_ids.operation_id }); }
    @hidden action inc_ids_first_psn_out(bit<32> off) {
        hdr.w.inc_ids.first_psn = inc_ids_first_psn_out_hash.get({ off[23:0] });
    }
    @hidden action inc_ids_flow_len_out(bit<32> len) {
        hdr.w.inc_ids.flow_len = inc_ids_flow_len_out_hash.get({ len });
    }
    @hidden action inc_psn() { psn32 = inc_psn_hash.get({ hdr.w.bth.psn }); }
    // The slot straight from its hash (inc_slot_t is as wide as INC_SLOTS needs), the
    // key's fingerprint (any value: a free slot is one with no contributor left).
    @hidden action inc_slot_of(bit<32> id, bit<32> off) { inc_slot = inc_slot_hash.get({ id, off }); }
    @hidden action inc_key_of(bit<32> id, bit<32> off, bit<32> op) { inc_fp = inc_key_hash.get({ id, off, op[15:0] }); }
    @hidden action inc_offset_mod() { inc_offset = inc_offset & 0x00FFFFFF; }
    @hidden action inc_offset_vs_len(bit<32> o, bit<32> len) { inc_offset_excess = o - len; }
    @hidden action inc_age(bit<32> start) { inc_slot_age = meta.now32 - start; }
    @hidden action inc_age_vs_timeout() { inc_age_excess = inc_slot_age - meta.inc_slot_timeout_ns; }
    @hidden action inc_masks(bit<32> seen_before) { inc_seen_mask = inc_rank_in_mask & ~seen_before; }
    @hidden action inc_left(bit<32> seen_before) { inc_left_mask = inc_remaining_after_claim & ~seen_before; }
    // 1 << rank: no run-time shift amount on Tofino, so a constant table per rank
    // source (a rank of 32 or more has no bit, as v1model's shift gives).
    @hidden action set_rank_bit(bit<32> rank_bit) { inc_rank_bit = rank_bit; }
#define RANK_BIT_TABLE(NAME, RANK)                                                  \
    @hidden table NAME {                                                            \
        key = { RANK: exact; }                                                      \
        actions = { set_rank_bit; }                                                 \
        const default_action = set_rank_bit(0);                                     \
        size = 32;                                                                  \
        const entries = {                                                           \
            0: set_rank_bit(32w1 << 0);   1: set_rank_bit(32w1 << 1);              \
            2: set_rank_bit(32w1 << 2);   3: set_rank_bit(32w1 << 3);              \
            4: set_rank_bit(32w1 << 4);   5: set_rank_bit(32w1 << 5);              \
            6: set_rank_bit(32w1 << 6);   7: set_rank_bit(32w1 << 7);              \
            8: set_rank_bit(32w1 << 8);   9: set_rank_bit(32w1 << 9);              \
            10: set_rank_bit(32w1 << 10); 11: set_rank_bit(32w1 << 11);            \
            12: set_rank_bit(32w1 << 12); 13: set_rank_bit(32w1 << 13);            \
            14: set_rank_bit(32w1 << 14); 15: set_rank_bit(32w1 << 15);            \
            16: set_rank_bit(32w1 << 16); 17: set_rank_bit(32w1 << 17);            \
            18: set_rank_bit(32w1 << 18); 19: set_rank_bit(32w1 << 19);            \
            20: set_rank_bit(32w1 << 20); 21: set_rank_bit(32w1 << 21);            \
            22: set_rank_bit(32w1 << 22); 23: set_rank_bit(32w1 << 23);            \
            24: set_rank_bit(32w1 << 24); 25: set_rank_bit(32w1 << 25);            \
            26: set_rank_bit(32w1 << 26); 27: set_rank_bit(32w1 << 27);            \
            28: set_rank_bit(32w1 << 28); 29: set_rank_bit(32w1 << 29);            \
            30: set_rank_bit(32w1 << 30); 31: set_rank_bit(32w1 << 31);            \
        }                                                                           \
    }
    RANK_BIT_TABLE(worker_rank_bit_of, meta.worker_rank)
    RANK_BIT_TABLE(inc_rank_bit_of, meta.inc_child_rank)

    // Step 4's frame: whether it pauses (or resumes) the port's lossless priority,
    // and for how long. An 802.3x PAUSE applies to the whole link; a PFC frame when
    // the lossless priority's enable bit is set, with that priority's time. One
    // constant table instead of an eight-way if chain, each of whose branches was a
    // table of its own.
    bit<1>  pfc_applies;
    bit<16> pfc_quanta;
    @hidden action pfc_pause_8023x() { pfc_applies = 1; pfc_quanta = hdr.w.mac_control.enable_or_time; }
#define PFC_TIME_ACTION(i) \
    @hidden action pfc_time##i() { pfc_applies = 1; pfc_quanta = hdr.w.pfc_times.time##i; }
    PFC_TIME_ACTION(0) PFC_TIME_ACTION(1) PFC_TIME_ACTION(2) PFC_TIME_ACTION(3)
    PFC_TIME_ACTION(4) PFC_TIME_ACTION(5) PFC_TIME_ACTION(6) PFC_TIME_ACTION(7)
    @hidden table pfc_priority_time {
        key = {
            hdr.w.pfc_times.isValid(): exact;
            meta.lossless_priority: ternary;
            hdr.w.mac_control.enable_or_time[7:0]: ternary;
        }
        actions = { pfc_pause_8023x; pfc_time0; pfc_time1; pfc_time2; pfc_time3;
                    pfc_time4; pfc_time5; pfc_time6; pfc_time7; NoAction; }
        const default_action = NoAction();
        size = 16;
        const entries = {
            (false, _, _): pfc_pause_8023x();
            (true, 0, 8w0x01 &&& 8w0x01): pfc_time0();
            (true, 1, 8w0x02 &&& 8w0x02): pfc_time1();
            (true, 2, 8w0x04 &&& 8w0x04): pfc_time2();
            (true, 3, 8w0x08 &&& 8w0x08): pfc_time3();
            (true, 4, 8w0x10 &&& 8w0x10): pfc_time4();
            (true, 5, 8w0x20 &&& 8w0x20): pfc_time5();
            (true, 6, 8w0x40 &&& 8w0x40): pfc_time6();
            (true, 7, 8w0x80 &&& 8w0x80): pfc_time7();
        }
    }

    apply {
        meta.now32 = ig_prsr_md.global_tstamp[31:0];
        meta.in_port = ig_intr_md.ingress_port;
        meta.drop_ran = 0;
        meta.count_dropped = 0;
        meta.count_enqueued = 0;
        meta.nexthop_ran = 0;
        meta.conn_hit = 0;
        meta.l2_flood = 0;
        meta.punt_reason = 0;
        meta.lossless = 0;
        meta.priority = 0;
        meta.port_configured = 0;
        meta.mode = PORT_MODE_OFF;
        meta.ipv4_checksum_recompute = 0;
        // Every packet for the traffic manager carries the bridged header.
        hdr.bridged.setValid();
        hdr.bridged.kind = BRIDGE_PACKET;
        hdr.bridged.ingress_port = ig_intr_md.ingress_port;
        hdr.bridged.ingress_ns = ig_prsr_md.global_tstamp;
        hdr.bridged.lossless = 0;
        hdr.bridged.l2_flood = 0;
        hdr.bridged.cnp_target = 0;
        hdr.bridged.has_bth = 0;
        hdr.bridged.pfc_pause = 0;
        hdr.bridged.flags_pad = 0;
        hdr.bridged.port_pad = 0;
        hdr.bridged.priority_pad = 0;
        hdr.bridged.priority = 0;
        hdr.bridged.pad = 0;

        // Which path a packet takes is decided from its headers alone, by gateways
        // that each table on the path evaluates where it sits (docs/tofino.md
        // "Compiling": a flag that one step sets and the next reads costs a stage,
        // and the paths below exclude each other, so their tables share stages).
        // IS_CNP_PASS: a carrier whose data packet becomes a switch CNP in this
        // pass: flagged CNP, and either the second pass of two digests or a carrier
        // with at most one digest (flags CNP plus at most one of EV0, EV1, DIGEST).
        // A resubmitted carrier is always RESUBMIT_DIGEST2's and a resubmitted data
        // packet RESUBMIT_TAKEOVER's: the flag tells them apart without reading
        // meta.resubmit, which this pass rewrites (a read after it costs a stage).
#define IS_CNP_PASS                                                                 \
    (hdr.recirc.isValid() && (hdr.recirc.flags == RECIRC_CNP ||                     \
        hdr.recirc.flags == (RECIRC_CNP | RECIRC_EV0) ||                            \
        hdr.recirc.flags == (RECIRC_CNP | RECIRC_EV1) ||                            \
        hdr.recirc.flags == (RECIRC_CNP | RECIRC_CNP_DIGEST) ||                     \
        ((hdr.recirc.flags & RECIRC_CNP) != 0 && ig_intr_md.resubmit_flag == 1)))
        // IS_DATA_PASS: an IPv4 packet from a port (not a carrier, not malformed,
        // no packet-out or announcement; PFC and PAUSE frames are not IPv4).
#define IS_DATA_PASS                                                                \
    (!hdr.recirc.isValid() && ig_prsr_md.parser_err == 0 && meta.malformed == 0 &&  \
     !hdr.w.packet_out.isValid() && !hdr.w.announcement.isValid() && hdr.w.ipv4.isValid())

        // ---- A recirculated carrier: egress's digests, possibly a switch CNP
        // (docs/tofino.md "Switch CNPs and egress digests"). One digest per pass;
        // the second through one resubmit, whose pass builds the CNP.
        if (hdr.recirc.isValid()) {
            bool pass2 = ig_intr_md.resubmit_flag == 1;      // RESUBMIT_DIGEST2's
            bool ev0 = (hdr.recirc.flags & RECIRC_EV0) != 0;
            bool ev1 = (hdr.recirc.flags & RECIRC_EV1) != 0;
            bool cnpd = (hdr.recirc.flags & RECIRC_CNP_DIGEST) != 0;
            // Which record this pass sends: the first of (ev0, ev1, cnpd) that is
            // set, or in the second pass the one after it.
            bit<2> sel = 0;
            if (!pass2) {
                if (ev0) { sel = 1; } else if (ev1) { sel = 2; } else if (cnpd) { sel = 3; }
            } else {
                if (ev0 && ev1) { sel = 2; } else if ((ev0 || ev1) && cnpd) { sel = 3; }
            }
            meta.dg_port = hdr.recirc.port;
            meta.dg_ts_ns = hdr.recirc.now_ns;
            if (sel == 1) {
                ig_dprsr_md.digest_type = DIGEST_TYPE_PORT_STATE;
                meta.dg_event = (bit<8>)hdr.recirc.ev0;
                meta.dg_queue_bytes = hdr.recirc.ev0_queue_bytes;
                meta.dg_rx_bytes = 0;
                meta.dg_ts_ns = hdr.recirc.now_ns[47:32] ++ hdr.recirc.ev0_ns;
            } else if (sel == 2) {
                ig_dprsr_md.digest_type = DIGEST_TYPE_PORT_STATE;
                meta.dg_event = (bit<8>)hdr.recirc.ev1;
                meta.dg_queue_bytes = hdr.recirc.qlen_bytes;
                meta.dg_rx_bytes = hdr.recirc.rx_bytes;
            } else if (sel == 3) {
                ig_dprsr_md.digest_type = DIGEST_TYPE_CNP;
                meta.dg_src_addr = hdr.w.ipv4.src_addr;
                meta.dg_dst_addr = hdr.w.ipv4.dst_addr;
                meta.dg_window_bytes = hdr.recirc.window_bytes;
                meta.dg_queue_bytes = hdr.recirc.qlen_bytes;
            }
            bool two = (ev0 && ev1) || ((ev0 || ev1) && cnpd);
            if (two && !pass2) {
                ig_dprsr_md.resubmit_type = RESUBMIT_DIGEST2;
                meta.resubmit.setValid();
                meta.resubmit.type = (bit<8>)RESUBMIT_DIGEST2;
                meta.resubmit.pad = 0;
            } else if ((hdr.recirc.flags & RECIRC_CNP) != 0) {
                // The data packet becomes the switch CNP (below, IS_CNP_PASS), as
                // if received on its congested port (counters by that port,
                // port_config keyed by it for the switch ID).
                meta.in_port = hdr.recirc.port;
            } else {
                ig_dprsr_md.drop_ctl = 1;       // a carrier only: its job is done
            }
            // The deparser does not emit recirc: it leaves no trace on the CNP.
        } else if (ig_prsr_md.parser_err != 0 || meta.malformed == 1) {
            // ---- Step 1: malformed or truncated. (A CNP carrier is the mirror's
            // copy cut at the session's max_pkt_len: a header cut there is no
            // error, so this branch is for packets from ports only.)
            malformed.count((bit<32>)meta.in_port);
            ig_dprsr_md.drop_ctl = 1;
        } else if (hdr.w.packet_out.isValid()) {
            // ---- Step 2: packet-out (priority 0).
            ig_tm_md.ucast_egress_port = hdr.w.packet_out.egress_port;
            meta.count_enqueued = 1;        // queue (egress_port, 0): priority is 0 here
        } else if (hdr.w.announcement.isValid()) {
            // ---- Step 3: announcement -> controller, with packet_in; egress is
            // bypassed (the header is added here).
            announcements.count((bit<32>)meta.in_port);
            ig_tm_md.ucast_egress_port = TNA_CPU_PORT;
            ig_tm_md.bypass_egress = 1;
            hdr.bridged.setInvalid();
            packet_in_reason();
            packet_in_port();
        } else if (hdr.w.pfc_times.isValid() || (hdr.w.mac_control.isValid() &&
                   hdr.w.mac_control.opcode == MAC_CONTROL_OPCODE_PAUSE)) {
            // ---- Step 4 (its port_config lookup; the event below).
            meta.config_port = ig_intr_md.ingress_port;
        } else if (!hdr.w.ipv4.isValid()) {
            // ---- Step 5: not IPv4: bridged by l2_forward (MAC control never).
            if (hdr.w.mac_control.isValid()) {
                meta.count_dropped = 1;
                ig_dprsr_md.drop_ctl = 1;
            } else {
                switch (l2_forward.apply().action_run) {
                    l2_set_port: {
                        meta.count_enqueued = 1;    // queue (port, 0)
                    }
                    l2_flood: {
                        hdr.bridged.l2_flood = 1;
                    }
                    drop: { meta.count_dropped = 1; }
                }
            }
        }

        // ---- Step 7 before 6 (the lookup needs the data packet's addresses, which
        // a CNP rewrite swaps): the connection, for data packets and CNP passes.
        if ((IS_CNP_PASS || IS_DATA_PASS) && hdr.w.bth.isValid()) {
            rdma_connection.apply();
        }

        // ---- The switch CNP (docs/dataplane.md Egress step 6), from the data
        // packet that egress mirrored. Its connection must still be a CNP target.
        bool cnp_ok = false;
        if (IS_CNP_PASS) {
            if (meta.conn_hit == 0 || (meta.conn_flags & CONN_FLAG_CNP_TARGET) == 0) {
                ig_dprsr_md.drop_ctl = 1;
            } else {
                cnp_ok = true;
                hdr.w.ipv4.dscp = CNP_DSCP;
                hdr.w.ipv4.ecn = ECN_NOT_ECT;
                hdr.w.ipv4.ttl = IPV4_DEFAULT_TTL;
                hdr.w.ipv4.total_len = IPV4_HEADER_BYTES + UDP_HEADER_BYTES + BTH_BYTES +
                                       CNP_EXTENSION_BYTES + ICRC_BYTES;
                meta.ipv4_checksum_recompute = 1;
                hdr.w.udp.dst_port = ROCE_UDP_PORT;
                hdr.w.udp.length = UDP_HEADER_BYTES + BTH_BYTES + CNP_EXTENSION_BYTES + ICRC_BYTES;
                hdr.w.udp.checksum = 0;
                hdr.w.bth.opcode = BTH_OPCODE_CNP;
                hdr.w.bth.solicited_event = 0;
                hdr.w.bth.mig_req = 0;
                hdr.w.bth.pad_count = 0;
                hdr.w.bth.transport_version = 0;
                hdr.w.bth.resv8a = 0;
                hdr.w.bth.ack_req = 0;
                hdr.w.bth.resv7 = 0;
                hdr.w.cnp_ext.setValid();
                hdr.w.cnp_ext.version = CNP_EXT_VERSION;
                hdr.w.cnp_ext.flags = CNP_EXT_FLAG_WINDOW_VALID | CNP_EXT_FLAG_BY_SWITCH;
                hdr.w.cnp_ext.reserved0 = 0;
                hdr.w.cnp_ext.reserved1 = 0;
                cnp_swap_addresses();
                cnp_dest_qp();
                cnp_ext_from_recirc();
                // The PSN and the INC and INT headers INC reads are the CNP tail's
                // (below), in a branch INC's excludes.
                switch_cnp_sent.count((bit<32>)hdr.recirc.port);
            }
        }

        // ---- Step 6: class, route, TTL (data packets and switch CNPs). routed:
        // the packet goes on (step 10 follows).
        bool routed = false;
        if (cnp_ok || IS_DATA_PASS) {
            if (!traffic_class.apply().hit) {
                ig_tm_md.qid = 0;           // set_traffic_class sets the queue
                ig_tm_md.ingress_cos = 0;
            }
            if (hdr.w.ipv4.ttl <= 1) {
                meta.count_dropped = 1;
                ig_dprsr_md.drop_ctl = 1;
            } else {
                meta.ecmp_l4_src_port = 0;
                meta.ecmp_l4_dst_port = 0;
                if (hdr.w.udp.isValid()) {
                    meta.ecmp_l4_src_port = hdr.w.udp.src_port;
                    meta.ecmp_l4_dst_port = hdr.w.udp.dst_port;
                }
                switch (ipv4_route.apply().action_run) {
                    set_next_hop_group: {
                        next_hop_group_select.apply();
                    }
                }
                if (meta.nexthop_ran == 0 || meta.drop_ran == 1) {
                    meta.count_dropped = 1;
                    ig_dprsr_md.drop_ctl = 1;
                } else {
                    routed = true;
                    IPV4_CHECKSUM_AFTER_SHRINK(hdr.w.ipv4.hdr_checksum, 16w0x0100)  // TTL - 1
                    hdr.w.ipv4.ttl = hdr.w.ipv4.ttl - 1;
                    if (cnp_ok) {
                        meta.config_port = hdr.recirc.port;
                    } else {
                        meta.config_port = ig_tm_md.ucast_egress_port;
                    }
                }
            }
        }
        bool is_pause_frame = !hdr.recirc.isValid() && ig_prsr_md.parser_err == 0 && meta.malformed == 0 &&
                              !hdr.w.packet_out.isValid() && !hdr.w.announcement.isValid() &&
                              (hdr.w.pfc_times.isValid() || (hdr.w.mac_control.isValid() &&
                               hdr.w.mac_control.opcode == MAC_CONTROL_OPCODE_PAUSE));
        if (routed || is_pause_frame) {
            port_config.apply();
        }

        // ---- Step 10 (docs/tofino.md): the packet goes to its queue (port,
        // priority); lossless ones carry the egress port's configuration.
        // (INC may still consume the packet: then these headers go nowhere.)
        if (routed) {
            // The flags by constants in branches, the priority by itself (the
            // bridged header's layout: tna/headers.p4).
            hdr.bridged.priority = meta.priority;
            if (meta.lossless == 1) {
                hdr.bridged.lossless = 1;
            }
            if (hdr.w.bth.isValid()) {
                hdr.bridged.has_bth = 1;
            }
            if (meta.conn_hit == 1 && (meta.conn_flags & CONN_FLAG_CNP_TARGET) != 0) {
                hdr.bridged.cnp_target = 1;
            }
            if (meta.lossless == 1) {
                hdr.bridged_cfg.setValid();
                hdr.bridged_cfg.rate_bytes_per_ms = meta.rate_bytes_per_ms;
                hdr.bridged_cfg.qth_bytes = meta.qth_bytes;
                hdr.bridged_cfg.tcheck_ns = meta.tcheck_ns;
                hdr.bridged_cfg.cnp_gap_ns = meta.cnp_gap_ns;
                hdr.bridged_cfg.red_kmin_bytes = meta.red_kmin_bytes;
                hdr.bridged_cfg.red_kmax_bytes = meta.red_kmax_bytes;
                hdr.bridged_cfg.bdp_bytes = meta.bdp_bytes;
                hdr.bridged_cfg.pause_gap_ns = meta.pause_quantum_ps >> PAUSE_GAP_PS_SHIFT;
                hdr.bridged_cfg.red_pmax_q16 = meta.red_pmax_q16;
                hdr.bridged_cfg.bdp_log2_q6 = meta.bdp_log2_q6;
                hdr.bridged_cfg.mtu_bytes = meta.mtu_bytes;
                hdr.bridged_cfg.pad = 0;
                hdr.bridged_cfg.mode = meta.mode;
            }
        }

        // Step 4's lookup, outside the if chain below: a table that a branch's
        // gateway is merged into takes that gateway to its stage, and every later
        // branch of the chain (INC's) with it.
        pfc_applies = 0;
        pfc_quanta = 0;
        if (is_pause_frame) {
            pfc_priority_time.apply();
        }

        // ---- The PFC event, the switch CNP's tail and INC: one if chain, so that
        // their tables exclude each other (in bf-p4c's table_mutex) and share stages.
        bool inc_consumed = false;      // dropped by INC (counted or not): no step 9, 10
        if (is_pause_frame) {
            // ---- Step 4: PFC / PAUSE received on port p: counted here, an event
            // for egress port p on the PFC event queue (docs/tofino.md).
            if (pfc_applies == 1) {
                if (pfc_quanta != 0) {
                    pfc_pause_rx.count((bit<32>)meta.in_port);
                    hdr.bridged.pfc_pause = 1;
                } else {
                    pfc_resume_rx.count((bit<32>)meta.in_port);
                }
                hdr.bridged.kind = BRIDGE_PFC_EVENT;
                ig_tm_md.ucast_egress_port = ig_intr_md.ingress_port;
                ig_tm_md.qid = PFC_EVENT_QID;
            } else {
                ig_dprsr_md.drop_ctl = 1;   // consumed, not counted in dropped
            }
        } else if (cnp_ok) {
            // ---- The switch CNP's tail: no PSN, no INC or INT headers, and its
            // extension and ICRC once port_config gave the switch ID (its congested
            // port's).
            hdr.w.bth.psn = 0;
            hdr.w.inc_base.setInvalid();
            hdr.w.inc_ids.setInvalid();
            hdr.w.inc_vector.setInvalid();
            hdr.w.int_header.setInvalid();
            hdr.w.int_new_hop.setInvalid();
            hdr.w.int_hop_0.setInvalid();
            hdr.w.int_hop_1.setInvalid();
            hdr.w.int_hop_2.setInvalid();
            hdr.w.int_hop_3.setInvalid();
            hdr.w.int_hop_4.setInvalid();
            if (routed) {
                hdr.w.cnp_ext.switch_id = meta.switch_id;
                icrc_cnp();
            }
        }

        // ---- Step 8: INC aggregation (spec 04 data path 1-3; docs/tofino.md "INC
        // aggregation": one data flow per connection, slot keys by fingerprint).
        // Entered by header facts and the connection; the forwarding outcome
        // (routed) gates the first write of slot state, where it is known.
        // (Booleans are set in branches: Tofino does not store a comparison's result.)
        else if (IS_DATA_PASS && hdr.w.inc_base.isValid() &&
            ((hdr.w.inc_base.flags & (INC_FLAG_RESULT | INC_FLAG_PARTIAL)) == INC_FLAG_PARTIAL ||
             ((hdr.w.inc_base.flags & (INC_FLAG_RESULT | INC_FLAG_PARTIAL)) == 0 &&
              meta.conn_hit == 1 && (meta.conn_flags & CONN_FLAG_INC_UPLINK) != 0))) {
            bool inc_partial = (hdr.w.inc_base.flags & INC_FLAG_PARTIAL) != 0;
            bool ids_present = hdr.w.inc_ids.isValid();
            bit<32> offset = 0;
            bit<32> op = 0;
            bit<32> flow_len = 0;
            bool    keyed = true;
            if (inc_partial) {
                // A lower switch's partial aggregate: its offset is in the IDS
                // part; its bit is its child port's rank.
                bool child = false;
                if (ids_present) {
                    child = inc_child_port.apply().hit;
                }
                if (!child) {
                    keyed = false;
                }
                inc_ids_id(inc_id);
                inc_ids_offset(offset);
                inc_ids_op(op);
                flow_len = hdr.w.inc_ids.flow_len;
                inc_rank_bit_of.apply();        // keyed by meta.inc_child_rank
            } else {
                // A worker's contribution: the connection's data flow (spec 04
                // step 2): a first packet (IDS part) records it, later packets
                // find it by PSN.
                bit<32> ci = (bit<32>)meta.conn_index;
                bit<32> first_psn;
                if (ids_present) {
                    inc_id = flow_inc_id_write.execute(ci);
                    first_psn = flow_first_psn_write.execute(ci);
                    flow_len = flow_len_write.execute(ci);
                    op = flow_op_write.execute(ci);
                } else {
                    inc_id = flow_inc_id_read.execute(ci);
                    first_psn = flow_first_psn_read.execute(ci);
                    flow_len = flow_len_read.execute(ci);
                    op = flow_op_read.execute(ci);
                }
                // The offset, PSN - first PSN mod 2^24: a step per action.
                inc_psn();
                inc_offset_sub(first_psn);
                inc_offset_mod();
                offset = inc_offset;
                worker_rank_bit_of.apply();     // keyed by meta.worker_rank
            }
            // Past the flow's end (offset >= flow_len, unsigned), or no flow. The
            // offset is below 2^24 (top bit 0), so offset >= flow_len is "flow_len's
            // top bit is 0 and so is offset - flow_len's".
            inc_offset_vs_len(offset, flow_len);
            bool grouped = inc_group.apply().hit;
            meta.inc_slot_timeout_ns = 0;
            inc_slot_timeout.apply();
            inc_slot_of(inc_id, offset);
            inc_key_of(inc_id, offset, op);
            inc_remaining_after_claim = meta.contributors_mask & ~inc_rank_bit;
            inc_rank_in_mask = meta.contributors_mask & inc_rank_bit;
            if (!keyed || !routed || !grouped || flow_len == 0 ||
                (flow_len[31:31] == 0 && inc_offset_excess[31:31] == 0)) {
                // No child port, not forwarded (dropped by step 6), no group, no
                // flow or past its end.
                if (!keyed || flow_len == 0 || (flow_len[31:31] == 0 && inc_offset_excess[31:31] == 0)) {
                    meta.count_dropped = 1;
                    ig_dprsr_md.drop_ctl = 1;
                    inc_consumed = true;
                }
            } else {
                bool takeover = ig_intr_md.resubmit_flag == 1;   // RESUBMIT_TAKEOVER's
                bit<32> key_outcome;
                if (takeover) {
                    slot_key_takeover.execute(inc_slot);
                    key_outcome = INC_KEY_FREE;
                } else {
                    key_outcome = slot_key_update.execute(inc_slot);
                }
                bool inc_claim = (key_outcome & INC_KEY_FREE) != 0;
                bool busy = key_outcome == INC_KEY_BUSY;
                // The ranks seen before this packet (0 for a claim).
                bit<32> seen_before = 0;
                lane_claim = 0;
                if (inc_claim) {
                    lane_claim = 1;
                    slot_seen_claim.execute(inc_slot);
                } else if (!busy) {
                    seen_before = slot_seen_add.execute(inc_slot);
                }
                // What v1model reads off the slot's remaining set: a duplicate
                // (not a claim, and its bit is seen or not a member's) and
                // completion (no other member left unseen).
                inc_masks(seen_before);
                inc_left(seen_before);
                bit<32> slot_start;
                if (inc_claim) {
                    slot_start = slot_start_claim.execute(inc_slot);
                } else {
                    slot_start = slot_start_read.execute(inc_slot);
                }
                if (busy) {
                    // Abandoned when a timeout is set and now - start >= it.
                    bool expired = false;
                    if (meta.inc_slot_timeout_ns != 0) {
                        inc_age(slot_start);
                        inc_age_vs_timeout();
                        UNSIGNED_GE_32(expired, inc_slot_age, meta.inc_slot_timeout_ns, inc_age_excess)
                    }
                    if (expired) {
                        // Abandoned: claim it in a second pass.
                        ig_dprsr_md.resubmit_type = RESUBMIT_TAKEOVER;
                        meta.resubmit.setValid();
                        meta.resubmit.type = (bit<8>)RESUBMIT_TAKEOVER;
                        meta.resubmit.pad = 0;
                    } else {
                        inc_slot_busy.count((bit<32>)meta.in_port);
                        ig_dprsr_md.drop_ctl = 1;
                    }
                    inc_consumed = true;
                } else if (!inc_claim && inc_seen_mask == 0) {
                    inc_duplicates.count((bit<32>)meta.in_port);
                    ig_dprsr_md.drop_ctl = 1;
                    inc_consumed = true;
                } else {
                    if (takeover) {
                        inc_slot_takeovers.count((bit<32>)meta.in_port);
                    }
                    INC_LANE_APPLY(0)
                    INC_LANE_APPLY(1)
                    INC_LANE_APPLY(2)
                    INC_LANE_APPLY(3)
                    INC_LANE_APPLY(4)
                    INC_LANE_APPLY(5)
                    INC_LANE_APPLY(6)
                    INC_LANE_APPLY(7)
                    INC_LANE_APPLY(8)
                    INC_LANE_APPLY(9)
                    INC_LANE_APPLY(10)
                    INC_LANE_APPLY(11)
                    INC_LANE_APPLY(12)
                    INC_LANE_APPLY(13)
                    INC_LANE_APPLY(14)
                    INC_LANE_APPLY(15)
                    inc_contributions.count((bit<32>)meta.in_port);
                    // Complete when no other contributor is left.
                    if (inc_left_mask == 0) {
                        hdr.w.inc_base.flags = INC_FLAG_IDS | INC_FLAG_PARTIAL;
                        if (meta.inc_root == 1) {
                            hdr.w.inc_base.flags = INC_FLAG_IDS | INC_FLAG_RESULT;
                        }
                        if (!ids_present) {
                            hdr.w.inc_ids.setValid();
                            IPV4_CHECKSUM_AFTER_GROW(hdr.w.ipv4.hdr_checksum, INC_IDS_BYTES)
                            hdr.w.ipv4.total_len = hdr.w.ipv4.total_len + INC_IDS_BYTES;
                            hdr.w.udp.length = hdr.w.udp.length + INC_IDS_BYTES;
                        }
                        hdr.w.udp.checksum = 0;
                        hdr.w.inc_ids.group_id = inc_id[31:16];
                        hdr.w.inc_ids.message_id = inc_id[15:0];
                        hdr.w.inc_ids.reserved0 = 0;
                        inc_ids_first_psn_out(offset);
                        hdr.w.inc_ids.operation_id = op[15:0];
                        hdr.w.inc_ids.reserved1 = 0;
                        inc_ids_flow_len_out(flow_len);
                        icrc_inc();
                        inc_results.count((bit<32>)meta.in_port);
                    } else {
                        ig_dprsr_md.drop_ctl = 1;   // consumed
                        inc_consumed = true;
                    }
                }
            }
        }

        // ---- Step 9: partial aggregates go up by hash routing on the INC ID.
        if (routed && !inc_consumed && hdr.w.inc_base.isValid() &&
            (hdr.w.inc_base.flags & (INC_FLAG_RESULT | INC_FLAG_PARTIAL)) == INC_FLAG_PARTIAL) {
            bit<16> bucket_hash = inc_bucket_hash.get({ hdr.w.inc_ids.group_id, hdr.w.inc_ids.message_id,
                                                        hdr.w.inc_base.version, hdr.w.udp.dst_port });
            meta.inc_bucket = bucket_hash[7:0];
            inc_route.apply();
        }

        // ---- Step 10's count: a routed packet INC did not consume is enqueued.
        if (routed && !inc_consumed) {
            meta.count_enqueued = 1;
        }

        // ---- The counters counted for several reasons, once each.
        if (meta.count_dropped == 1) {
            dropped.count((bit<32>)meta.in_port);
        }
        if (meta.count_enqueued == 1) {
            // Every path that enqueues set ucast_egress_port; meta.priority is 0
            // on those that do not classify (packet-out, L2).
            meta.enqueued_index = enqueued_index_hash.get({ ig_tm_md.ucast_egress_port, meta.priority });
            queue_enqueued.count((bit<32>)meta.enqueued_index);
        }
        // packet_out never leaves the switch; removed last, because the path
        // conditions above read its validity.
        hdr.w.packet_out.setInvalid();
    }
}

// ===========================================================================
// Ingress deparser: digests, resubmits, the switch CNP's IPv4 checksum.
// ===========================================================================
control FastcnpIngressDeparser(packet_out pkt,
                               inout tna_headers_t hdr,
                               in tna_ingress_metadata_t meta,
                               in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    // Digest IDs: bf-p4c's hashes of "pipe." and the names (docs/tofino.md "P4Info").
    @name(".port_state_digest_t") Digest<port_state_digest_t>(DIGEST_TYPE_PORT_STATE) port_state_digest;
    @name(".cnp_digest_t") Digest<cnp_digest_t>(DIGEST_TYPE_CNP) cnp_digest;
    Resubmit(RESUBMIT_DIGEST2) resubmit_digest2;
    Resubmit(RESUBMIT_TAKEOVER) resubmit_takeover;
    Checksum() ipv4_checksum;
    FastcnpEmit() emit_headers;

    apply {
        if (meta.ipv4_checksum_recompute == 1) {
            hdr.w.ipv4.hdr_checksum = ipv4_checksum.update({
                hdr.w.ipv4.version, hdr.w.ipv4.ihl, hdr.w.ipv4.dscp, hdr.w.ipv4.ecn,
                hdr.w.ipv4.total_len, hdr.w.ipv4.identification, hdr.w.ipv4.flags,
                hdr.w.ipv4.frag_offset, hdr.w.ipv4.ttl, hdr.w.ipv4.protocol,
                hdr.w.ipv4.src_addr, hdr.w.ipv4.dst_addr });
        }
        if (ig_dprsr_md.digest_type == DIGEST_TYPE_PORT_STATE) {
            port_state_digest.pack({ meta.dg_port, meta.dg_event, meta.dg_queue_bytes,
                                     meta.dg_rx_bytes, meta.dg_ts_ns });
        } else if (ig_dprsr_md.digest_type == DIGEST_TYPE_CNP) {
            cnp_digest.pack({ meta.dg_port, meta.dg_src_addr, meta.dg_dst_addr,
                              meta.dg_window_bytes, meta.dg_queue_bytes, meta.dg_ts_ns });
        }
        if (ig_dprsr_md.resubmit_type == RESUBMIT_DIGEST2) {
            resubmit_digest2.emit(meta.resubmit);
        } else if (ig_dprsr_md.resubmit_type == RESUBMIT_TAKEOVER) {
            resubmit_takeover.emit(meta.resubmit);
        }
        pkt.emit(hdr.bridged);
        pkt.emit(hdr.bridged_cfg);
        emit_headers.apply(pkt, hdr.w);
    }
}

// ===========================================================================
// Egress parser: a packet (bridged header), a PFC event, or a mirror copy.
// ===========================================================================
// Egress reads of a RoCE packet only its BTH and INT header: the INT record this switch
// adds goes in front of the received ones (wire-formats.md "INT header": newest first),
// and INC, the CNP extension and the received records stay in the payload. This is
// also what fits Tofino 1's egress parse depth (160 bytes, bridged headers included):
// with the shared FastcnpRoceParser the INT path was 258 bytes.
parser FastcnpEgressRoceParser(packet_in pkt, inout fastcnp_headers_t hdr) {
    state start {
        pkt.extract(hdr.bth);
        transition select(hdr.bth.resv8a) {
            INT_BTH_MARK: parse_int_header;
            default:      accept;
        }
    }

    state parse_int_header {
        pkt.extract(hdr.int_header);
        transition accept;
    }
}

parser FastcnpEgressParser(packet_in pkt,
                           out tna_headers_t hdr,
                           out tna_egress_metadata_t meta,
                           out egress_intrinsic_metadata_t eg_intr_md) {
    FastcnpEgressRoceParser() roce_parser;

    state start {
        pkt.extract(eg_intr_md);
        meta.malformed = 0;
        transition select(pkt.lookahead<bit<8>>()) {
            BRIDGE_MIRROR: parse_mirror;
            default:       parse_bridged;
        }
    }

    // A mirror copy: only its header matters here; the frame behind it goes back
    // to ingress untouched.
    state parse_mirror {
        pkt.extract(hdr.recirc);
        transition accept;
    }

    state parse_bridged {
        pkt.extract(hdr.bridged);
        transition select(hdr.bridged.kind, hdr.bridged.lossless) {
            (BRIDGE_PACKET, 1): parse_bridged_cfg;
            (BRIDGE_PACKET, 0): parse_frame;
            default:            accept;        // a PFC event: nothing else to read
        }
    }

    state parse_bridged_cfg {
        pkt.extract(hdr.bridged_cfg);
        transition parse_frame;
    }

    state parse_frame {
        transition parse_frame_ethernet;
    }

    FASTCNP_FRAME_STATES(hdr.w, meta.malformed, dispatch_udp, accept)

    state dispatch_udp {
        transition select(hdr.w.udp.dst_port) {
            ROCE_UDP_PORT: parse_roce;
            default:       accept;
        }
    }

    state parse_roce {
        roce_parser.apply(pkt, hdr.w);
        transition accept;
    }
}

// ===========================================================================
// Egress (docs/tofino.md "Egress, per lossless departure"; docs/dataplane.md Egress).
// ===========================================================================
// Spec 01 "The explicit window": include/controls.p4's ExplicitWindowClamp,
// window = min(bdp_bytes, max(mtu_bytes, exp2)), with its two comparisons of
// fields as differences and UNSIGNED_GE_32 (a Tofino gateway compares a field
// with constants only).
control TnaExplicitWindowClamp(in bit<1>   exp2_hit,
                               in bit<32>  exp2_bytes,
                               in bit<32>  bdp_bytes,
                               in bit<16>  mtu_bytes,
                               out bit<32> window_bytes) {
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) mtu_hash;
    bit<32> mtu32;
    bit<32> exp2_minus_mtu;
    bit<32> bdp_minus_exp2;
    bit<32> bdp_minus_mtu;
    // The three differences at once, then the choice by their signs and the top
    // bits (the unsigned comparisons of UNSIGNED_GE_32, written into the gateways:
    // no boolean is stored, and each stored one would be tables of its own). mtu32
    // is below 2^16, so exp2 >= mtu whenever exp2's top bit is set.
    @hidden action clamp_diffs() {
        exp2_minus_mtu = exp2_bytes - mtu32;
        bdp_minus_exp2 = bdp_bytes - exp2_bytes;
        bdp_minus_mtu = bdp_bytes - mtu32;
    }
    apply {
        mtu32 = mtu_hash.get({ mtu_bytes });
        clamp_diffs();
        window_bytes = bdp_bytes;                   // no exp2: min(bdp, max(mtu, bdp))
        if (exp2_hit == 1) {
            if (exp2_bytes[31:31] == 0 && exp2_minus_mtu[31:31] == 1) {         // exp2 < mtu
                if (bdp_bytes[31:31] == 1 || bdp_minus_mtu[31:31] == 0) {       // bdp >= mtu
                    window_bytes = mtu32;
                }
            } else if ((bdp_bytes[31:31] == 1 && (exp2_bytes[31:31] == 0 || bdp_minus_exp2[31:31] == 0)) ||
                       (bdp_bytes[31:31] == 0 && exp2_bytes[31:31] == 0 && bdp_minus_exp2[31:31] == 0)) {
                window_bytes = exp2_bytes;          // mtu <= exp2 <= bdp
            }
        }
    }
}

control FastcnpEgress(inout tna_headers_t hdr,
                      inout tna_egress_metadata_t meta,
                      in egress_intrinsic_metadata_t eg_intr_md,
                      in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                      inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                      inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {

    Counter<bit<64>, bit<32>>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) ecn_marked;
    // v1model counts collisions at enqueue (ingress); here at the departure.
    @name(".FastcnpIngress.flow_collisions")
    Counter<bit<64>, bit<32>>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) flow_collisions;
    Counter<bit<64>, bit<32>>(NUM_QUEUES, CounterType_t.PACKETS_AND_BYTES) queue_dequeued;
    // Filled by a traffic manager that can, never by the program (Tofino: 0).
    Counter<bit<64>, bit<32>>(NUM_QUEUES, CounterType_t.PACKETS_AND_BYTES) queue_dropped;

    CRCPolynomial<bit<32>>(32w0x04C11DB7, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) crc32_ieee;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32_ieee) flow_hash;
    // queue_dequeued's index, port * 8 + priority, as ingress's enqueued_index_hash.
    Hash<queue_index_t>(HashAlgorithm_t.IDENTITY) dequeued_index_hash;
    // Values of the intrinsic metadata that enter 32-bit arithmetic come through
    // identity hashes, each in an action of its own (an action takes 32 bits from
    // the hash units): a copy by the ALU would tie the arithmetic's containers to
    // the intrinsic layout (deq_qdepth straddles two 16-bit containers, the epoch
    // is the timestamp's bits 44..13) and PHV allocation finds no slicing for both.
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) qd_a_hash;     // deq_qdepth's terms (CELL_SHIFT_*)
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) qd_b_hash;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) qd_c_hash;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) epoch_hash;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) pkt_bytes_hash;
    // The departure time, in two parts, so that no ALU copy of the timestamp ties
    // its containers to the epoch's slice [44:13].
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) now_lo_hash;
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) now_hi_hash;
    Random<bit<32>>() red_random;
    TnaExplicitWindowClamp() window_clamp;

    bit<32> now32;
    bit<32> epoch;           // now >> WINDOW_EPOCH_SHIFT
    bit<16> now_hi;          // the departure time's bits 47..32 (now32: 31..0)
    bit<32> epoch_m1;
    bit<32> epoch_p2;
    bit<32> fp;              // the flow's CRC-32 fingerprint
    bit<32> cnp_gap_start;   // now - cnpGap: a CNP at or before it is out of the gap
    bit<32> digest_gap_start;
    bit<32> pfc_ns;          // a PFC event's time, low 32 bits, lowest bit set
    bool    int_add;         // step 7b adds an INT record to this packet
    bit<32> tx_hi;           // port_tx_bytes' high word before this departure

    // ---- Per egress port: departure bookkeeping and framed pauses.
    @name(".port_last_dequeue_ns") Register<bit<32>, bit<32>>(NUM_PORTS) port_last_dequeue_ns;
    RegisterAction<bit<32>, bit<32>, bit<32>>(port_last_dequeue_ns) last_dequeue_swap = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; value = now32; }
    };
    // deq_qdepth in bytes (not cells), so that rx = qlen - last needs no conversion.
    @name(".port_last_qdepth_bytes") Register<bit<32>, bit<32>>(NUM_PORTS) port_last_qdepth_bytes;
    RegisterAction<bit<32>, bit<32>, bit<32>>(port_last_qdepth_bytes) last_qdepth_swap = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; value = meta.qd_bytes; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(port_last_qdepth_bytes) last_qdepth_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    @name(".port_pfc_pause_ns") Register<bit<32>, bit<32>>(NUM_PORTS) port_pfc_pause_ns;
    RegisterAction<bit<32>, bit<32>, bit<32>>(port_pfc_pause_ns) pfc_pause_take = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; value = 0; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(port_pfc_pause_ns) pfc_pause_open = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
            if (value == 0) {
                value = pfc_ns;
            }
        }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(port_pfc_pause_ns) pfc_pause_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    @name(".port_pfc_resume_ns") Register<bit<32>, bit<32>>(NUM_PORTS) port_pfc_resume_ns;
    RegisterAction<bit<32>, bit<32>, bit<32>>(port_pfc_resume_ns) pfc_resume_take = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; value = 0; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(port_pfc_resume_ns) pfc_resume_clear = {
        void apply(inout bit<32> value, out bit<32> rv) { value = 0; rv = 0; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(port_pfc_resume_ns) pfc_resume_set = {
        void apply(inout bit<32> value, out bit<32> rv) { value = pfc_ns; rv = 0; }
    };
    // The rx of the last pause (for CHECK_* digests).
    @name(".port_last_rx_bytes") Register<bit<32>, bit<32>>(NUM_PORTS) port_last_rx_bytes;
    bit<32> rx;
    RegisterAction<bit<32>, bit<32>, bit<32>>(port_last_rx_bytes) last_rx_write = {
        void apply(inout bit<32> value, out bit<32> rv) { value = rx; rv = value; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(port_last_rx_bytes) last_rx_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };

    // ---- The undetermined check (spec 01 event 4): when it is due, and the qlen
    // + 1 stored at arming (0: DETERMINED).
    @name(".port_check_at_ns") Register<bit<32>, bit<32>>(NUM_PORTS) port_check_at_ns;
    bit<32> check_at_new;    // now + Tcheck
    RegisterAction<bit<32>, bit<32>, bit<1>>(port_check_at_ns) check_at_arm = {
        void apply(inout bit<32> value, out bit<1> rv) { value = check_at_new; rv = 0; }
    };
    RegisterAction<bit<32>, bit<32>, bit<1>>(port_check_at_ns) check_at_due = {
        void apply(inout bit<32> value, out bit<1> rv) {
            rv = 0;
            if ((int<32>)(now32 - value) >= 0) {
                value = check_at_new;      // tentative re-arm
                rv = 1;
            }
        }
    };
    @name(".port_check_qlen1") Register<bit<32>, bit<32>>(NUM_PORTS) port_check_qlen1;
    RegisterAction<bit<32>, bit<32>, bit<32>>(port_check_qlen1) check_qlen1_arm = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; value = meta.qlen1; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(port_check_qlen1) check_qlen1_clear = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; value = 0; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(port_check_qlen1) check_qlen1_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    // Due, qlen >= Qth: CHECK_CONGESTED (qlen grew: 0) or re-arm at qlen.
    RegisterAction<bit<32>, bit<32>, bit<32>>(port_check_qlen1) check_qlen1_due_high = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
            if (value != 0) {
                if (meta.qlen1 > value) {
                    value = 0;
                } else {
                    value = meta.qlen1;
                }
            }
        }
    };

    // ---- Departure shares (docs/tofino.md "Per-flow share without a shared counter").
    @name(".port_departed_even") Register<pair32_t, bit<32>>(NUM_PORTS) port_departed_even;
    @name(".port_departed_odd") Register<pair32_t, bit<32>>(NUM_PORTS) port_departed_odd;
    @name(".flow_departed_even") Register<pair32_t, flow_slot_t>(FLOW_SLOTS) flow_departed_even;
    @name(".flow_departed_odd") Register<pair32_t, flow_slot_t>(FLOW_SLOTS) flow_departed_odd;

#define DEPARTED_ACTIONS(REG, INDEX_T)                                                      \
    RegisterAction<pair32_t, INDEX_T, bit<32>>(REG) REG##_add = {                    \
        void apply(inout pair32_t value, out bit<32> rv) {                          \
            if (value.lo == epoch) {                                                \
                value.hi = value.hi + meta.pkt_bytes;                               \
            } else {                                                                \
                value.lo = epoch;                                                   \
                value.hi = meta.pkt_bytes;                                          \
            }                                                                       \
            rv = value.hi;                                                          \
        }                                                                           \
    };                                                                              \
    RegisterAction<pair32_t, INDEX_T, bit<32>>(REG) REG##_prev = {                   \
        void apply(inout pair32_t value, out bit<32> rv) {                          \
            rv = 0;                                                                 \
            if (value.lo == epoch_m1) {                                             \
                rv = value.hi;                                                      \
            }                                                                       \
        }                                                                           \
    };
    DEPARTED_ACTIONS(port_departed_even, bit<32>)
    DEPARTED_ACTIONS(port_departed_odd, bit<32>)
    DEPARTED_ACTIONS(flow_departed_even, flow_slot_t)
    DEPARTED_ACTIONS(flow_departed_odd, flow_slot_t)

    // A flow owns its slot while it departed in this or the previous epoch:
    // {lo: fingerprint, hi: its last epoch + 2 (0: never used)}.
    @name(".flow_owner") Register<pair32_t, flow_slot_t>(FLOW_SLOTS) flow_owner;
    RegisterAction<pair32_t, flow_slot_t, bit<1>>(flow_owner) flow_owner_claim = {
        void apply(inout pair32_t value, out bit<1> rv) {
            rv = 0;
            if (value.lo == fp || epoch_p2 - value.hi >= 2) {
                value.lo = fp;
                value.hi = epoch_p2;
                rv = 1;
            }
        }
    };

    // ---- cnpGap per flow slot, the cnp_digest_t gap per port (32-bit ns).
    @name(".flow_last_cnp_ns") Register<bit<32>, flow_slot_t>(FLOW_SLOTS) flow_last_cnp_ns;
    RegisterAction<bit<32>, flow_slot_t, bit<1>>(flow_last_cnp_ns) cnp_gap_check = {
        void apply(inout bit<32> value, out bit<1> rv) {
            rv = 0;
            if (value == 0 || (int<32>)(value - cnp_gap_start) <= 0) {
                value = now32;
                rv = 1;
            }
        }
    };
    @name(".port_last_digest_ns") Register<bit<32>, bit<32>>(NUM_PORTS) port_last_digest_ns;
    RegisterAction<bit<32>, bit<32>, bit<1>>(port_last_digest_ns) digest_gap_check = {
        void apply(inout bit<32> value, out bit<1> rv) {
            rv = 0;
            if (value == 0 || (int<32>)(value - digest_gap_start) <= 0) {
                value = now32;
                rv = 1;
            }
        }
    };

    // ---- INT (HPCC, docs/dataplane.md "INT"): the bytes each port sent, 64 bits as
    // v1model's port_tx_bytes, in two 32-bit registers: the high word adds the
    // carry of the low word (lo + add overflows iff lo > ~add).
    @name(".port_tx_bytes_lo") Register<bit<32>, bit<32>>(NUM_PORTS) port_tx_bytes_lo;
    @name(".port_tx_bytes_hi") Register<bit<32>, bit<32>>(NUM_PORTS) port_tx_bytes_hi;
    bit<32> tx_add;          // this departure's bytes (with the record it gets)
    bit<32> tx_carry_above;  // ~tx_add
    bit<32> tx_lo;           // the low word before this departure
    RegisterAction<bit<32>, bit<32>, bit<32>>(port_tx_bytes_lo) tx_lo_add = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; value = value + tx_add; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(port_tx_bytes_hi) tx_hi_add = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
            if (tx_lo > tx_carry_above) {
                value = value + 1;
            }
        }
    };

    // ---- The explicit window and RED: v1model's tables (log2 by LPM, exp2).
    // The flow's log2 goes straight into k_base + log2(flow) (one step less).
    @id(0x01000007) action set_flow_bytes_log2(bit<16> log2_q6) { meta.k_sum = log2_q6 + meta.k_base; }
    @id(0x01000008) action set_port_bytes_log2(bit<16> log2_q6) { meta.port_log2_q6 = log2_q6; }
    @id(0x01000009) action set_window(bit<32> window_bytes) {
        meta.window_exp2_bytes = window_bytes;
        meta.window_exp2_hit = 1;
    }

    @id(0x02000007) table flow_bytes_log2 {
        key = { meta.flow_data_bytes: lpm @name("bytes"); }
        actions = { set_flow_bytes_log2; NoAction; }
        default_action = NoAction();
        size = LOG2_TABLE_SIZE;
    }

    @id(0x02000008) table port_bytes_log2 {
        key = { meta.port_data_bytes: lpm @name("bytes"); }
        actions = { set_port_bytes_log2; NoAction; }
        default_action = NoAction();
        size = LOG2_TABLE_SIZE;
    }

    @id(0x02000009) table window_exp2 {
        key = { meta.k_diff: exact @name("log2_q6"); }
        actions = { set_window; NoAction; }
        default_action = NoAction();
        size = LOG2_TABLE_SIZE;
    }

    // ---- The RESUME decision's log2 tables: the window generator's entries,
    // compiled in (docs/tofino.md "The design").
    // log2(rx) - (log2(rate) + log2(pause) - log2(10^6)) in the lookup itself.
    @id(0x01000101) action set_rx_log2(bit<16> log2_q6) { meta.beats_neg = log2_q6 - meta.beats_base; }
    @id(0x01000102) action set_pause_log2(bit<16> log2_q6) { meta.pause_log2_q6 = log2_q6; }
    @id(0x01000103) action set_rate_log2(bit<16> log2_q6) { meta.rate_log2_q6 = log2_q6; }
    bit<32> pause_ns;

    @id(0x02000101) table rx_bytes_log2 {
        key = { meta.rx_diff: lpm @name("bytes"); }
        actions = { set_rx_log2; NoAction; }
        const default_action = NoAction();
        size = LOG2_TABLE_SIZE;
        const entries = {
#define LOG2_ACTION set_rx_log2
#include "log2_entries.p4"
#undef LOG2_ACTION
        }
    }

    @id(0x02000102) table pause_ns_log2 {
        key = { pause_ns: lpm @name("ns"); }
        actions = { set_pause_log2; NoAction; }
        const default_action = NoAction();
        size = LOG2_TABLE_SIZE;
        const entries = {
#define LOG2_ACTION set_pause_log2
#include "log2_entries.p4"
#undef LOG2_ACTION
        }
    }

    @id(0x02000103) table rate_log2 {
        key = { hdr.bridged_cfg.rate_bytes_per_ms: lpm @name("rate_bytes_per_ms"); }
        actions = { set_rate_log2; NoAction; }
        const default_action = NoAction();
        size = LOG2_TABLE_SIZE;
        const entries = {
#define LOG2_ACTION set_rate_log2
#include "log2_entries.p4"
#undef LOG2_ACTION
        }
    }


    // ---- Egress arithmetic in steps (docs/tofino.md "Compiling"). A Tofino action
    // does one operation per destination, and bf-p4c synthesizes consecutive
    // statements into one action, dependent or not: a chain of operations is a chain
    // of actions called one after the other (each call is a table of its own). A
    // gateway compares a field with a constant, so "a < b" of two fields is the sign
    // bit of a difference computed here (bytes, nanoseconds apart and log2 values
    // are below 2^31, 2^15).
    @hidden action e_now_lo() { now32 = now_lo_hash.get({ eg_prsr_md.global_tstamp[31:0] }); }
    @hidden action e_now_hi() { now_hi = now_hi_hash.get({ eg_prsr_md.global_tstamp[47:32] }); }
    @hidden action e_epoch() { epoch = epoch_hash.get({ eg_prsr_md.global_tstamp[44:13] }); }
    @hidden action e_pkt_bytes() { meta.pkt_bytes = pkt_bytes_hash.get({ eg_intr_md.pkt_length }); }
    @hidden action e_tx_add() { tx_add = meta.pkt_bytes; }
    @hidden action e_tx_add_int() { tx_add = meta.pkt_bytes + (bit<32>)INT_HOP_BYTES; }
    // ~tx_add, as a subtraction: arithmetic keeps the word in one container (a
    // bitwise result may be split at bit 31 with its cluster, and then the
    // stateful ALU that compares it cannot read it).
    @hidden action e_tx_carry() { tx_carry_above = 32w0xFFFFFFFF - tx_add; }
    // The queue in bytes: three shifted copies of deq_qdepth (tna/headers.p4), then
    // qd_bytes = a + b + c and qlen = qd_bytes + this packet in two steps.
    @hidden action e_qd_a() { meta.qd_a = qd_a_hash.get({ eg_intr_md.deq_qdepth, (bit<CELL_SHIFT_A>)0 }); }
    @hidden action e_qd_b() { meta.qd_b = qd_b_hash.get({ eg_intr_md.deq_qdepth, (bit<CELL_SHIFT_B>)0 }); }
    @hidden action e_qd_c() { meta.qd_c = qd_c_hash.get({ eg_intr_md.deq_qdepth, (bit<CELL_SHIFT_C>)0 }); }
    @hidden action e_qd_sums() {
        meta.qd_ab = meta.qd_a + meta.qd_b;
        meta.qd_cp = meta.qd_c + meta.pkt_bytes;
    }
    @hidden action e_qlen() {
        meta.qd_bytes = meta.qd_ab + meta.qd_c;
        meta.qlen = meta.qd_ab + meta.qd_cp;
    }
    @hidden action e_qlen_diffs() {
        meta.qlen1 = meta.qlen + 1;
        meta.qth_diff = meta.qlen - hdr.bridged_cfg.qth_bytes;
        meta.kmax_diff = meta.qlen - hdr.bridged_cfg.red_kmax_bytes;
        meta.kmin_diff = hdr.bridged_cfg.red_kmin_bytes - meta.qlen;
    }
    // Values that depend only on the time and the port's configuration, computed
    // for every departure so that no decision waits for them.
    @hidden action e_time_bounds() {
        check_at_new = now32 + hdr.bridged_cfg.tcheck_ns;
        cnp_gap_start = now32 - hdr.bridged_cfg.cnp_gap_ns;
        digest_gap_start = now32 - (bit<32>)DIGEST_MIN_GAP_NS;
    }
    @hidden action e_gap() { meta.gap_ns = now32 - meta.last; }
    @hidden action e_gap_excess() { meta.gap_excess = hdr.bridged_cfg.pause_gap_ns - meta.gap_ns; }
    @hidden action e_rx_diff() { meta.rx_diff = meta.qlen - meta.last_qd_bytes; }
    // The pause's length, whichever way it ends up detected (a framed pause, or the
    // gap since the last departure when none is framed). e_pause_gap is e_gap's
    // difference again, on purpose: copied from gap_ns it would wait a step longer.
    @hidden action e_pause_gap() { pause_ns = now32 - meta.last; }
    @hidden action e_pause_framed() { pause_ns = meta.pause_end - meta.pause_start; }
    @hidden action e_pause_open() { pause_ns = now32 - meta.pause_start; }
    // rx > C*T in the log domain: log2(rx) > log2(rate) + log2(pause) - log2(10^6)
    // (q6); beats_base is the right-hand side, set_rx_log2 subtracts it.
    @hidden action e_beats_rate() { meta.beats_base = meta.rate_log2_q6 - (bit<16>)LOG2_NS_PER_MS_Q6; }
    @hidden action e_beats_base() { meta.beats_base = meta.beats_base + meta.pause_log2_q6; }
    @hidden action e_check_grew() { meta.check_grew = meta.check_old - meta.qlen1; }
    // The flow's fingerprint, then its slot (the low bits), each a step: in one
    // action with the owner's RegisterAction, the hash feeds both the index and
    // the stateful ALU, which does not fit the input crossbar.
    @hidden action e_flow_fp() { fp = flow_hash.get({ hdr.w.ipv4.src_addr, hdr.w.ipv4.dst_addr }); }
    @hidden action e_flow_slot() { meta.flow_slot = (flow_slot_t)fp; }
    @hidden action e_epochs() { epoch_m1 = epoch - 1; epoch_p2 = epoch + 2; }
    @hidden action e_shares() {
        meta.flow_data_bytes = meta.flow_share_a + meta.flow_share_b;
        meta.port_data_bytes = meta.port_share_a + meta.port_share_b;
    }
    @hidden action e_red_bytes() {
        meta.flow_data_bytes = meta.qlen - hdr.bridged_cfg.red_kmin_bytes;
        meta.port_data_bytes = hdr.bridged_cfg.red_kmax_bytes - hdr.bridged_cfg.red_kmin_bytes;
    }
    @hidden action e_k_diff() { meta.k_diff = meta.k_sum - meta.port_log2_q6; }
    @hidden action e_red_halves() {
        meta.red_lo = (bit<32>)meta.red_r[15:0];
        meta.red_hi = (bit<32>)meta.red_r[31:16];
        meta.red_pmax = (bit<32>)hdr.bridged_cfg.red_pmax_q16;
    }
    @hidden action e_red_diffs() {
        meta.red_lo = meta.red_lo - meta.red_pmax;
        meta.red_hi = meta.red_hi - meta.window_exp2_bytes;
    }

    apply {
        bit<32> port_cell = (bit<32>)eg_intr_md.egress_port;
        e_now_lo();
        e_now_hi();
        meta.mirror.setInvalid();
        int_add = false;

        // ---- A mirror copy on its way to the recirculation port: untouched.
        if (hdr.recirc.isValid()) {
            return;
        }

        // ---- A PFC event for this port (docs/tofino.md): record the pause's
        // start or end, a PAUSE digest for a new pause, and drop the event.
        if (hdr.bridged.kind == BRIDGE_PFC_EVENT) {
            pfc_ns = hdr.bridged.ingress_ns[31:0] | 1;
            eg_dprsr_md.drop_ctl = 1;
            if (hdr.bridged.pfc_pause == 1) {
                bit<32> was = pfc_pause_open.execute(port_cell);
                pfc_resume_clear.execute(port_cell);
                if (was == 0) {
                    meta.mirror.setValid();
                    meta.mirror.flags = RECIRC_EV0;
                    meta.mirror.ev0 = (bit<4>)PORT_EVENT_PAUSE;
                    // The register holds bytes: straight into the PAUSE digest.
                    meta.mirror.ev0_queue_bytes = last_qdepth_read.execute(port_cell);
                    meta.mirror.ev1 = 0;
                    meta.mirror.ev0_ns = hdr.bridged.ingress_ns[31:0];
                    meta.mirror.now_ns = hdr.bridged.ingress_ns;
                    meta.mirror.qlen_bytes = 0;
                    meta.mirror.rx_bytes = 0;
                    meta.mirror.window_bytes = 0;
                }
            } else {
                if (pfc_pause_read.execute(port_cell) != 0) {
                    pfc_resume_set.execute(port_cell);
                }
            }
        } else {
            // ---- Step 0: egress pruning of L2 floods.
            if (hdr.bridged.l2_flood == 1 && eg_intr_md.egress_port == hdr.bridged.ingress_port) {
                eg_dprsr_md.drop_ctl = 1;
                return;
            }
            meta.dequeued_index = dequeued_index_hash.get({ eg_intr_md.egress_port, hdr.bridged.priority });
            queue_dequeued.count((bit<32>)meta.dequeued_index);

            // ---- Step 7a (INT): the port's byte count, every departure, with the
            // record step 7b adds to a lossless INT packet on a port in mode int.
            // (Arithmetic in steps: a chain of operations is a chain of actions,
            // "a < b" of two fields the sign of a difference; see e_* above.)
            e_pkt_bytes();
            if (hdr.bridged_cfg.isValid() && hdr.bridged_cfg.mode == PORT_MODE_INT &&
                hdr.w.int_header.isValid() && (hdr.w.int_header.flags & INT_FLAG_ECHO) == 0 &&
                hdr.w.int_header.hop_count < INT_MAX_HOPS) {
                int_add = true;
            }
            if (int_add) {
                e_tx_add_int();
            } else {
                e_tx_add();
            }
            e_tx_carry();
            tx_lo = tx_lo_add.execute(port_cell);
            tx_hi = tx_hi_add.execute(port_cell);

            // ---- Lossless departures (docs/tofino.md "Egress, per lossless departure"),
            // in the branch a PFC event does not take: each register has one
            // RegisterAction per path, syntactically (a stateful ALU per packet).
            if (hdr.bridged_cfg.isValid()) {
                // The work is laid out for table placement (docs/tofino.md
                // "Compiling"): what every departure needs (the queue in bytes, the
                // pause's length and its log2, the shares and the window) is computed
                // before and beside the decisions, which then only select.
                e_qd_a();
                e_qd_b();
                e_qd_c();
                e_qd_sums();
                e_qlen();
                e_qlen_diffs();
                e_time_bounds();
                e_beats_rate();

                // 1. Departure bookkeeping.
                meta.last = last_dequeue_swap.execute(port_cell);
                meta.last_qd_bytes = last_qdepth_swap.execute(port_cell);
                meta.pause_start = pfc_pause_take.execute(port_cell);
                meta.pause_end = pfc_resume_take.execute(port_cell);
                e_gap();
                e_gap_excess();
                e_rx_diff();

                // 2. The pause: framed, or inferred from the gap (now - last >
                // pause_gap: the gap's top bit, or gap_excess = pause_gap - gap < 0).
                bool framed = meta.pause_start != 0;
                bool inferred = false;
                if (!framed && meta.last_qd_bytes != 0 && hdr.bridged_cfg.pause_gap_ns != 0 &&
                    (meta.gap_ns[31:31] == 1 || meta.gap_excess[31:31] == 1)) {
                    inferred = true;
                }
                bool resume = framed || inferred;
                // Its length and spec 01 event 3's rx > C*T, for every departure (the
                // RESUME branch uses them): log2(pause) first, then the rx lookup
                // subtracts log2(rate) + log2(pause) - log2(10^6) from log2(rx).
                if (framed) {
                    if (meta.pause_end != 0) {
                        e_pause_framed();
                    } else {
                        e_pause_open();
                    }
                } else {
                    e_pause_gap();
                }
                meta.pause_log2_q6 = 0;
                meta.rate_log2_q6 = 0;
                rate_log2.apply();
                pause_ns_log2.apply();
                e_beats_base();
                // rx = max(0, qlen - last queue), before the RESUME branch that
                // stores it: computed inside, it would wait for the branch's gateway,
                // which bf-p4c merges with the other branch's read of the same
                // register (one stage for both), and table placement deadlocks.
                rx = 0;
                meta.beats_neg = 0;                 // rx = 0: no lookup, never beats
                if (meta.rx_diff[31:31] == 0) {     // qlen >= last queue
                    rx = meta.rx_diff;
                    rx_bytes_log2.apply();
                }
                bit<4> flags = 0;
                bit<8> event = PORT_EVENT_NONE;
                bool hold = false;
                bool congested = false;
                // qlen >= Qth (qlen and Qth below 2^31: the difference's sign).
                bool high = meta.qth_diff[31:31] == 0;
                bool no_pfc_state = hdr.bridged_cfg.mode == PORT_MODE_FASTCNP_NO_PFC_STATE;
                meta.mirror.ev0 = 0;
                meta.mirror.ev0_queue_bytes = 0;
                meta.mirror.ev0_ns = 0;
                meta.mirror.window_bytes = 0;
                if (resume) {
                    if (inferred) {
                        flags = RECIRC_EV0 | RECIRC_EV1;
                        meta.mirror.ev0 = (bit<4>)PORT_EVENT_PAUSE;
                        meta.mirror.ev0_queue_bytes = meta.last_qd_bytes;
                        meta.mirror.ev0_ns = meta.last;
                    } else {
                        flags = RECIRC_EV1;
                    }
                    last_rx_write.execute(port_cell);
                    // The ablation mode (fastcnp-no-pfc-state) is never undetermined;
                    // rx beats C*T iff beats_neg > 0.
                    if (!high) {
                        event = PORT_EVENT_RESUME_NOT_CONGESTED;
                        check_qlen1_clear.execute(port_cell);
                    } else if (no_pfc_state || (meta.beats_neg[15:15] == 0 && meta.beats_neg != 0)) {
                        event = PORT_EVENT_RESUME_CONGESTED;
                        check_qlen1_clear.execute(port_cell);
                        congested = true;
                    } else {
                        event = PORT_EVENT_RESUME_UNDETERMINED;
                        check_at_arm.execute(port_cell);
                        check_qlen1_arm.execute(port_cell);
                        hold = true;
                    }
                    meta.mirror.rx_bytes = rx;
                } else {
                    rx = last_rx_read.execute(port_cell);
                    meta.mirror.rx_bytes = rx;
                    if (hdr.bridged_cfg.mode == PORT_MODE_FASTCNP) {
                        // 3. The state machine (spec 01 event 4).
                        bit<1> due = check_at_due.execute(port_cell);
                        if (due == 1 && high) {
                            meta.check_old = check_qlen1_due_high.execute(port_cell);
                        } else if (due == 1) {
                            meta.check_old = check_qlen1_clear.execute(port_cell);
                        } else {
                            meta.check_old = check_qlen1_read.execute(port_cell);
                        }
                        e_check_grew();
                        if (meta.check_old == 0) {
                            if (high) {                         // DETERMINED
                                congested = true;
                            }
                        } else if (due == 0) {
                            hold = true;
                        } else if (!high) {
                            event = PORT_EVENT_CHECK_DRAINED;
                            flags = RECIRC_EV1;
                        } else if (meta.check_grew[31:31] == 1) {   // qlen1 > old
                            event = PORT_EVENT_CHECK_CONGESTED;
                            flags = RECIRC_EV1;
                            congested = true;
                        }
                    } else if (no_pfc_state) {
                        // The ablation: no state machine; a queue at or above Qth is
                        // congested.
                        check_qlen1_clear.execute(port_cell);
                        if (high) {
                            congested = true;
                        }
                    }
                }
                meta.mirror.ev1 = (bit<4>)event;

                // 4. Departure shares, every lossless departure.
                e_epoch();
                e_epochs();
                bool tracked = false;
                if (epoch[0:0] == 0) {   // an even epoch
                    meta.port_share_a = port_departed_even_add.execute(port_cell);
                    meta.port_share_b = port_departed_odd_prev.execute(port_cell);
                } else {
                    meta.port_share_a = port_departed_odd_add.execute(port_cell);
                    meta.port_share_b = port_departed_even_prev.execute(port_cell);
                }
                meta.flow_share_a = 0;
                meta.flow_share_b = 0;
                meta.flow_slot = 0;
                if (hdr.w.ipv4.isValid()) {
                    e_flow_fp();
                    e_flow_slot();
                    if (flow_owner_claim.execute(meta.flow_slot) == 1) {
                        tracked = true;
                        if (epoch[0:0] == 0) {   // an even epoch
                            meta.flow_share_a = flow_departed_even_add.execute(meta.flow_slot);
                            meta.flow_share_b = flow_departed_odd_prev.execute(meta.flow_slot);
                        } else {
                            meta.flow_share_a = flow_departed_odd_add.execute(meta.flow_slot);
                            meta.flow_share_b = flow_departed_even_prev.execute(meta.flow_slot);
                        }
                    } else {
                        flow_collisions.count(port_cell);
                    }
                }

                // The window (the flow's share of the port's departures times the BDP,
                // clamped) or, in mode ecn, RED's ratio 65536 * d/R: the same log2 and
                // exp2 tables, for every departure, beside the decisions above.
                if (hdr.bridged_cfg.mode == PORT_MODE_ECN) {
                    e_red_bytes();
                    meta.k_base = (bit<16>)RED_RATIO_K_OFFSET;
                } else {
                    e_shares();                     // flow_data, port_data: the two epochs
                    meta.k_base = hdr.bridged_cfg.bdp_log2_q6;
                }
                meta.k_sum = meta.k_base;           // a miss: log2 = 0
                meta.port_log2_q6 = 0;
                flow_bytes_log2.apply();            // k_sum = k_base + log2(flow)
                port_bytes_log2.apply();
                meta.window_exp2_hit = 0;
                meta.window_exp2_bytes = 0;
                // 16 bits do not overflow: each log2 (q6) is below 2^12.
                e_k_diff();
                if (meta.k_diff[15:15] == 1) {
                    meta.window_exp2_hit = 1;       // k < 0: exp2 = 0
                } else {
                    window_exp2.apply();
                }
                bit<32> window_bytes;
                window_clamp.apply(meta.window_exp2_hit, meta.window_exp2_bytes, hdr.bridged_cfg.bdp_bytes,
                                   hdr.bridged_cfg.mtu_bytes, window_bytes);
                meta.red_r = red_random.get();
                e_red_halves();
                e_red_diffs();

                // 5. Congested: a switch CNP (cnpGap) or the ECN fallback; RED in mode ecn.
                bool make_cnp = false;
                bool mark = false;
                if ((hdr.bridged_cfg.mode == PORT_MODE_FASTCNP || no_pfc_state) && !hold && congested) {
                    if (hdr.bridged.cnp_target == 1 && tracked && hdr.bridged.has_bth == 1) {
                        if (cnp_gap_check.execute(meta.flow_slot) == 1) {
                            make_cnp = true;
                        }
                    } else {
                        mark = true;
                    }
                } else if (hdr.bridged_cfg.mode == PORT_MODE_ECN) {
                    if (meta.kmax_diff[31:31] == 0) {          // qlen >= Kmax
                        mark = true;
                    } else if (meta.kmin_diff[31:31] == 1) {   // Kmin < qlen < Kmax:
                        // RED without a multiplier (docs/tofino.md): r_lo < Pmax and
                        // r_hi < exp2 (the ratio), the signs.
                        if (meta.red_lo[31:31] == 1 && meta.red_hi[31:31] == 1) {
                            mark = true;
                        }
                    }
                }
                if (make_cnp) {
                    flags = flags | RECIRC_CNP;
                    meta.mirror.window_bytes = window_bytes;
                    // A cnp_digest_t, unless two port events ride this carrier (an
                    // inferred pause: ev0 and ev1).
                    if (!inferred) {
                        if (digest_gap_check.execute(port_cell) == 1) {
                            flags = flags | RECIRC_CNP_DIGEST;
                        }
                    }
                }

                // ---- Step 7b (INT mode): the HPCC hop record in front of the others;
                // its queue is deq_qdepth in cells (without this packet). IPv4 and UDP
                // lengths grow by INT_HOP_BYTES; the ICRC does not cover INT bytes.
                if (int_add) {
                    hdr.w.int_new_hop.setValid();
                    hdr.w.int_new_hop.timestamp_ns = now_hi ++ now32;
                    hdr.w.int_new_hop.port = (bit<16>)eg_intr_md.egress_port;
                    hdr.w.int_new_hop.tx_bytes = tx_hi ++ tx_lo;
                    hdr.w.int_new_hop.queue_bytes = meta.qd_bytes;
                    hdr.w.int_new_hop.rate_bytes_per_ms = hdr.bridged_cfg.rate_bytes_per_ms;
                    hdr.w.int_header.hop_count = hdr.w.int_header.hop_count + 1;
                    IPV4_CHECKSUM_AFTER_GROW(hdr.w.ipv4.hdr_checksum, INT_HOP_BYTES)
                    hdr.w.ipv4.total_len = hdr.w.ipv4.total_len + INT_HOP_BYTES;
                    hdr.w.udp.length = hdr.w.udp.length + INT_HOP_BYTES;
                }

                if (mark && hdr.w.ipv4.isValid() &&
                    (hdr.w.ipv4.ecn == ECN_ECT0 || hdr.w.ipv4.ecn == ECN_ECT1)) {
                    // CE-mark: the word with the ECN bits grows by CE - ECT.
                    if (hdr.w.ipv4.ecn == ECN_ECT0) {
                        IPV4_CHECKSUM_AFTER_GROW(hdr.w.ipv4.hdr_checksum, 16w1)
                    } else {
                        IPV4_CHECKSUM_AFTER_GROW(hdr.w.ipv4.hdr_checksum, 16w2)
                    }
                    hdr.w.ipv4.ecn = ECN_CE;
                    ecn_marked.count(port_cell);
                }

                if (flags != 0) {
                    meta.mirror.setValid();
                    meta.mirror.flags = flags;
                    meta.mirror.qlen_bytes = meta.qlen;
                    meta.mirror.now_ns = now_hi ++ now32;
                }
            }
        }

        // 6. One E2E mirror per packet: a CNP and/or digests for ingress.
        if (meta.mirror.isValid()) {
            meta.mirror.kind = BRIDGE_MIRROR;
            meta.mirror.pad = 0;
            meta.mirror.port_pad = 0;
            meta.mirror.port = eg_intr_md.egress_port;
            meta.mirror.reserved = 0;
            meta.mirror.ether_type = FASTCNP_RECIRC_ETHERTYPE;
            meta.mirror_session = (MirrorId_t)CNP_CLONE_SESSION;
            eg_dprsr_md.mirror_type = MIRROR_TYPE_E2E;
#if __TARGET_TOFINO__ == 2
            eg_dprsr_md.mirror_io_select = 1;      // mirror the outgoing packet
#endif
        }
        hdr.bridged.setInvalid();
        hdr.bridged_cfg.setInvalid();
    }
}

// ===========================================================================
// Egress deparser: the E2E mirror, then the packet.
// ===========================================================================
control FastcnpEgressDeparser(packet_out pkt,
                              inout tna_headers_t hdr,
                              in tna_egress_metadata_t meta,
                              in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Mirror(MIRROR_TYPE_E2E) mirror;
    FastcnpEmit() emit_headers;

    apply {
        if (eg_dprsr_md.mirror_type == MIRROR_TYPE_E2E) {
            mirror.emit<recirc_h>(meta.mirror_session, meta.mirror);
        }
        pkt.emit(hdr.recirc);
        emit_headers.apply(pkt, hdr.w);
    }
}

Pipeline(FastcnpParser(),
         FastcnpIngress(),
         FastcnpIngressDeparser(),
         FastcnpEgressParser(),
         FastcnpEgress(),
         FastcnpEgressDeparser()) pipe;

Switch(pipe) main;
