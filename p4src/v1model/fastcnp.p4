// fastcnp: the v1model program (BMv2 simple_switch_grpc).
//
//   p4c --target bmv2 --arch v1model --p4runtime-files fastcnp.p4info.txtpb v1model/fastcnp.p4
//
// Normative behaviour: docs/dataplane.md ("Per-packet algorithm"), which this
// file follows step by step; the step numbers in the comments are that page's.
// Spec links: 01 = fast precise feedback (events 1-4, the explicit window, the
// switch CNP), 02 = DCQCN CP (RED), 04 = INC aggregation data path (steps 1-5),
// 05 = wire formats.
//
// v1model glue kept in this file (a TNA program replaces it):
//   - time: BMv2 timestamps are microseconds, multiplied by NS_PER_US;
//   - switch CNPs: E2E clone of the data packet to CNP_CLONE_SESSION, rewritten
//     into the CNP in the clone's egress pass, recirculated so that ingress
//     routes it; the surplus payload is cut with truncate() on its way out;
//   - digests: BMv2 sends digests at the end of ingress only, one per pass, so
//     egress defers its digests into the same E2E clone (recirculated to
//     ingress, which sends them; a resubmit sends the second when a pass has two);
//     each digest struct has a single digest() call site in ingress (BMv2's
//     P4Runtime server configures and acks a digest through one learn list);
//   - checksums: RFC 1624 incremental IPv4 checksum updates where a field
//     changes, update_checksum only for the switch CNP's new header; the RoCEv2
//     ICRC as a CRC-32 hash over the masked fields of the packets the switch builds;
//   - priority queues: standard_metadata.priority (simple_switch --priority-queues 8);
//   - L2 floods: standard_metadata.mcast_grp (the PRE's multicast groups, written by
//     the controller); the PRE copies to every port of the group, so egress drops
//     the copy for the ingress port (egress pruning).

#include <core.p4>
#include <v1model.p4>

#include "../include/defines.p4"
#include "../include/headers.p4"
#include "../include/parser.p4"
#include "../include/controls.p4"
#include "defines.p4"
#include "metadata.p4"
#include "decisions.p4"
#include "registers.p4"

// A header the shared sub-parsers found malformed (include/parser.p4): the
// parser error ingress step 1 checks.
error { FastcnpMalformed }

// ===========================================================================
// Parser (docs/dataplane.md "Parser").
// ===========================================================================
parser FastcnpParser(packet_in pkt,
                     out fastcnp_headers_t hdr,
                     inout fastcnp_metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    // Extra UDP destination ports on which announcements are parsed and
    // punted, written by the controller on targets that implement value sets
    // (fastcnp-switch; not BMv2: PI answers value-set RPCs with UNIMPLEMENTED).
    // ANNOUNCE_UDP_PORT (defines.p4, default 4792) is recognised without it.
    @id(0x03000001) value_set<bit<16>>(ANNOUNCE_UDP_PORTS) announce_udp_port;

    FastcnpRoceParser()         roce_parser;
    FastcnpAnnouncementParser() announcement_parser;

    // Recirculated and resubmitted packets are the switch's own (switch CNPs,
    // deferred digests): never a packet_out, whatever their ingress port.
    state start {
        transition select(standard_metadata.instance_type) {
            PKT_INSTANCE_TYPE_RECIRC:   parse_frame;
            PKT_INSTANCE_TYPE_RESUBMIT: parse_frame;
            default:                    check_cpu_port;
        }
    }

    state check_cpu_port {
        transition select(standard_metadata.ingress_port) {
            CPU_PORT: parse_packet_out;
            default:  parse_frame;
        }
    }

    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition parse_frame;
    }

    state parse_frame {
        meta.malformed = 0;
        transition parse_frame_ethernet;
    }

    FASTCNP_FRAME_STATES(hdr, meta.malformed, dispatch_udp, malformed)

    // A malformed header: BMv2 sets parser_error and runs ingress (step 1).
    state malformed {
        verify(false, error.FastcnpMalformed);
        transition accept;
    }

    // RoCEv2 first (a value set listing 4791 does not make RoCE packets
    // announcements), then the compile-time announcement port, always, then
    // the run-time value set.
    state dispatch_udp {
        transition select(hdr.udp.dst_port) {
            ROCE_UDP_PORT:     parse_roce;
            ANNOUNCE_UDP_PORT: parse_announcement;
            announce_udp_port: parse_announcement;
            default:           accept;
        }
    }

    state parse_roce {
        roce_parser.apply(pkt, hdr, meta.malformed);
        transition select(meta.malformed) {
            1:       malformed;
            default: accept;
        }
    }

    state parse_announcement {
        announcement_parser.apply(pkt, hdr, meta.malformed);
        transition select(meta.malformed) {
            1:       malformed;
            default: accept;
        }
    }
}

// The IPv4 checksum is not verified: the switch forwards what it receives and
// recomputes the checksum of what it changes.
control FastcnpVerifyChecksum(inout fastcnp_headers_t hdr, inout fastcnp_metadata_t meta) {
    apply { }
}

// ===========================================================================
// Shared v1model pieces: register I/O around the decisions of controls.p4.
// ===========================================================================

// Registers shared by ingress and egress (docs/dataplane.md "Registers shared by
// ingress and egress"): BMv2 runs one ingress thread and several egress threads
// concurrently and makes register accesses atomic only within ONE action, the
// unit p4c's BMv2 back end makes of each straight-line run of statements (an if,
// a switch or a table apply ends it). So every read-modify-write of such a
// register is written as one straight-line block: every read first, decisions as
// ?: expressions (controls.p4 macros), then every write, with "no change" written
// back as the old value. The blocks are marked "ATOMIC <name>" ... "END ATOMIC"
// (p4src/p4source_test.go checks that they hold no branch and that every access
// to a shared register is inside one).

// RESUME(p) (spec 01 event 3; docs/dataplane.md Ingress step 4): from ingress
// on a PFC RESUME (BY_EXPIRY false), from egress when the pause expired (Egress
// step 2, BY_EXPIRY true). The claim (paused 1 -> 0) and the port state it writes
// are one atomic block, so a RESUME frame and an expiry never both resume, and a
// RESUME never interleaves with the dequeue check of Egress step 3. The caller
// declares the rs_* variables (PORT_RESUME_VARS) and gives a bit<32> port index.
#define PORT_RESUME_VARS                                                        \
    bit<1>    rs_paused;                                                        \
    time_ns_t rs_expire_ns;                                                     \
    time_ns_t rs_start_ns;                                                      \
    bit<32>   rs_rx_bytes;                                                      \
    bit<32>   rs_queue_bytes;                                                   \
    bit<1>    rs_undet_old;                                                     \
    bit<32>   rs_snapshot_old;                                                  \
    time_ns_t rs_check_at_old;                                                  \
    time_ns_t rs_pause_ns;                                                      \
    bool      rs_claim;                                                         \
    bool      rs_beats;                                                         \
    bit<1>    rs_undet;                                                         \
    bit<8>    rs_event;

#define PORT_RESUME_ATOMIC(PORT, BY_EXPIRY)                                     \
    port_paused.read(rs_paused, PORT);                                          \
    port_pause_expire_ns.read(rs_expire_ns, PORT);                              \
    port_pause_start_ns.read(rs_start_ns, PORT);                                \
    port_rx_bytes.read(rs_rx_bytes, PORT);                                      \
    port_queue_bytes.read(rs_queue_bytes, PORT);                                \
    port_undetermined.read(rs_undet_old, PORT);                                 \
    port_q_snapshot.read(rs_snapshot_old, PORT);                                \
    port_check_at_ns.read(rs_check_at_old, PORT);                               \
    rs_claim = rs_paused == 1 && (!(BY_EXPIRY) || meta.now_ns >= rs_expire_ns); \
    rs_pause_ns = meta.now_ns - rs_start_ns;                                    \
    PORT_RESUME_DECISION(rs_queue_bytes, meta.qth_bytes, rs_rx_bytes,           \
                         meta.rate_bytes_per_ms, rs_pause_ns, meta.mode,        \
                         rs_beats, rs_undet, rs_event)                          \
    port_paused.write(PORT, rs_claim ? 1w0 : rs_paused);                        \
    port_undetermined.write(PORT, rs_claim ? rs_undet : rs_undet_old);          \
    port_q_snapshot.write(PORT, (rs_claim && rs_undet == PORT_UNDETERMINED) ?   \
                          rs_queue_bytes : rs_snapshot_old);                    \
    port_check_at_ns.write(PORT, (rs_claim && rs_undet == PORT_UNDETERMINED) ?  \
                           meta.now_ns + (time_ns_t)meta.tcheck_ns : rs_check_at_old); \
    meta.deferred_port_event = rs_claim ? rs_event : PORT_EVENT_NONE;           \
    meta.event_port = (port_id_t)PORT;                                          \
    meta.event_queue_bytes = rs_queue_bytes;                                    \
    meta.event_rx_bytes = rs_rx_bytes;                                          \
    meta.event_timestamp_ns = meta.now_ns;

// The RoCEv2 ICRC of a packet the switch built (IBTA Annex A17, wire-formats.md
// "ICRC"): CRC-32 over 8 bytes of 0xFF (masked LRH), the IPv4 header with TOS,
// TTL and header checksum all ones, the UDP header with checksum all ones, the
// BTH with byte 4 all ones, and the headers after the BTH. Covered: exactly the
// headers listed in each field list below (the CNP: IPv4, UDP, BTH, CNP
// extension; an INC result: IPv4, UDP, BTH, INC base, IDS part, vector), which
// is the whole packet up to the ICRC because the switch builds these packets
// completely from parsed headers (IHL 5, no BTH extension headers). Not
// covered: Ethernet/VLAN (RoCEv2 never covers L2), anything after the last
// parsed header (cut by truncate()). The switch never checks a received ICRC.
// The CRC is sent least-significant byte first.
control IcrcCnp(inout fastcnp_headers_t hdr) {
    apply {
        bit<32> crc;
        hash(crc, HashAlgorithm.crc32, 32w0,
             { ICRC_MASKED_LRH,
               hdr.ipv4.version, hdr.ipv4.ihl, 8w0xFF, hdr.ipv4.total_len,
               hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset,
               8w0xFF, hdr.ipv4.protocol, 16w0xFFFF, hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
               hdr.udp.src_port, hdr.udp.dst_port, hdr.udp.length, 16w0xFFFF,
               hdr.bth.opcode, hdr.bth.solicited_event, hdr.bth.mig_req, hdr.bth.pad_count,
               hdr.bth.transport_version, hdr.bth.partition_key, 8w0xFF, hdr.bth.dest_qp,
               hdr.bth.ack_req, hdr.bth.resv7, hdr.bth.psn,
               hdr.cnp_ext.version, hdr.cnp_ext.flags, hdr.cnp_ext.reserved0,
               hdr.cnp_ext.switch_id, hdr.cnp_ext.window_bytes, hdr.cnp_ext.port,
               hdr.cnp_ext.queue_bytes, hdr.cnp_ext.reserved1 },
             64w0x100000000);
        hdr.icrc.setValid();
        hdr.icrc.value_lsb_first = crc[7:0] ++ crc[15:8] ++ crc[23:16] ++ crc[31:24];
    }
}

control IcrcIncResult(inout fastcnp_headers_t hdr) {
    apply {
        bit<32> crc;
        hash(crc, HashAlgorithm.crc32, 32w0,
             { ICRC_MASKED_LRH,
               hdr.ipv4.version, hdr.ipv4.ihl, 8w0xFF, hdr.ipv4.total_len,
               hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset,
               8w0xFF, hdr.ipv4.protocol, 16w0xFFFF, hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
               hdr.udp.src_port, hdr.udp.dst_port, hdr.udp.length, 16w0xFFFF,
               hdr.bth.opcode, hdr.bth.solicited_event, hdr.bth.mig_req, hdr.bth.pad_count,
               hdr.bth.transport_version, hdr.bth.partition_key, 8w0xFF, hdr.bth.dest_qp,
               hdr.bth.ack_req, hdr.bth.resv7, hdr.bth.psn,
               hdr.inc_base.flags, hdr.inc_base.version, hdr.inc_base.reserved,
               hdr.inc_ids.group_id, hdr.inc_ids.message_id, hdr.inc_ids.reserved0,
               hdr.inc_ids.first_psn, hdr.inc_ids.operation_id, hdr.inc_ids.reserved1,
               hdr.inc_ids.flow_len,
               hdr.inc_vector.lane0,  hdr.inc_vector.lane1,  hdr.inc_vector.lane2,
               hdr.inc_vector.lane3,  hdr.inc_vector.lane4,  hdr.inc_vector.lane5,
               hdr.inc_vector.lane6,  hdr.inc_vector.lane7,  hdr.inc_vector.lane8,
               hdr.inc_vector.lane9,  hdr.inc_vector.lane10, hdr.inc_vector.lane11,
               hdr.inc_vector.lane12, hdr.inc_vector.lane13, hdr.inc_vector.lane14,
               hdr.inc_vector.lane15 },
             64w0x100000000);
        hdr.icrc.setValid();
        hdr.icrc.value_lsb_first = crc[7:0] ++ crc[15:8] ++ crc[23:16] ++ crc[31:24];
    }
}

// One INC lane (spec 04 step 3): claim the slot with the packet's value or add
// it (wrapping 32-bit), and leave the slot's sum in the packet (used only when
// the packet becomes the RESULT; otherwise it is dropped).
#define INC_LANE(i)                                                        \
    if (claim == 1) {                                                      \
        lane_sum = hdr.inc_vector.lane##i;                                 \
    } else {                                                               \
        inc_slot_value_##i.read(lane_sum, slot);                           \
        lane_sum = lane_sum + hdr.inc_vector.lane##i;                      \
    }                                                                      \
    inc_slot_value_##i.write(slot, lane_sum);                              \
    hdr.inc_vector.lane##i = lane_sum;

// One way of the INC data-flow map (docs/dataplane.md ingress 8), K = 1 for
// the newest flow of the connection .. 0 (= 4 mod 4) for the oldest: read the
// flow in cell flow_base + (next_way - K); a first packet (IDS part) notes
// whether this way holds its flow already, a later packet takes the first way
// (newest first) whose PSN range [first PSN, first PSN + length) holds its PSN.
#define INC_FLOW_WAY(K)                                                    \
    fw_cell = flow_base + (bit<32>)(next_way - K);                         \
    inc_flow_inc_id.read(fw_inc_id, fw_cell);                              \
    inc_flow_first_psn.read(fw_first_psn, fw_cell);                        \
    inc_flow_len.read(fw_len, fw_cell);                                    \
    inc_flow_op.read(fw_op, fw_cell);                                      \
    fw_offset = (bit<32>)(hdr.bth.psn - fw_first_psn);                     \
    if (ids_present) {                                                     \
        if (fw_inc_id == inc_id && fw_first_psn == hdr.inc_ids.first_psn &&\
            fw_len == flow_len && fw_op == op) {                           \
            known = true;                                                  \
        }                                                                  \
    } else if (!keyed && fw_len != 0 && fw_offset < fw_len) {              \
        inc_id = fw_inc_id;                                                \
        offset = fw_offset;                                                \
        op = fw_op;                                                        \
        flow_len = fw_len;                                                 \
        keyed = true;                                                      \
    }

// Frame length from the IPv4 total length: what a packet the switch built is
// truncated to, and what it accounts for.
#define FRAME_BYTES_FROM_IPV4(frame_bytes)                                 \
    frame_bytes = ETHERNET_HEADER_BYTES + (bit<32>)hdr.ipv4.total_len;     \
    if (hdr.vlan.isValid()) {                                              \
        frame_bytes = frame_bytes + VLAN_TAG_BYTES;                        \
    }

// ===========================================================================
// Ingress (docs/dataplane.md "Ingress, in order").
// ===========================================================================
control FastcnpIngress(inout fastcnp_headers_t hdr,
                       inout fastcnp_metadata_t meta,
                       inout standard_metadata_t standard_metadata) {

    // Counters, indexed by port (docs/dataplane.md "Counters").
    @id(0x12000003) counter(NUM_PORTS, CounterType.packets_and_bytes) pfc_pause_rx;
    @id(0x12000004) counter(NUM_PORTS, CounterType.packets_and_bytes) pfc_resume_rx;
    @id(0x12000005) counter(NUM_PORTS, CounterType.packets_and_bytes) dropped;
    @id(0x12000006) counter(NUM_PORTS, CounterType.packets_and_bytes) malformed;
    @id(0x12000007) counter(NUM_PORTS, CounterType.packets_and_bytes) flow_collisions;
    @id(0x12000008) counter(NUM_PORTS, CounterType.packets_and_bytes) announcements;
    @id(0x12000009) counter(NUM_PORTS, CounterType.packets_and_bytes) inc_contributions;
    @id(0x1200000A) counter(NUM_PORTS, CounterType.packets_and_bytes) inc_duplicates;
    @id(0x1200000B) counter(NUM_PORTS, CounterType.packets_and_bytes) inc_results;
    @id(0x1200000C) counter(NUM_PORTS, CounterType.packets_and_bytes) inc_slot_busy;
    @id(0x12000012) counter(NUM_PORTS, CounterType.packets_and_bytes) inc_slot_takeovers;
    // Maintained by the target, never counted by this program: frames the target
    // lost at port p's input before the parser saw them (fastcnp-switch: the
    // kernel's drops at the port's socket, packets only; docs/target.md "Input
    // backlog and PFC"). BMv2 leaves it at 0.
    @id(0x12000013) counter(NUM_PORTS, CounterType.packets_and_bytes) input_dropped;

    // Counters indexed by egress queue, port * 8 + priority (NUM_QUEUES cells;
    // docs/dataplane.md "Counters indexed by queue").
    // Packets ingress sends to a unicast egress queue (every forward but
    // multicast replicas, which the PRE makes after ingress, and packet-ins).
    @id(0x1200000D) counter(NUM_QUEUES, CounterType.packets_and_bytes) queue_enqueued;
    // Maintained by the target's traffic manager, never counted by this
    // program: PFC frames sent out of port p for priority q, XOFF (quanta > 0,
    // refreshes included) and XON (quanta 0). BMv2 has no PFC and leaves them at 0.
    @id(0x12000010) counter(NUM_QUEUES, CounterType.packets_and_bytes) pfc_xoff_sent;
    @id(0x12000011) counter(NUM_QUEUES, CounterType.packets_and_bytes) pfc_xon_sent;

    IcrcIncResult() icrc_inc_result;

    // ECMP for IPv4 routes (docs/dataplane.md "ECMP"): the members of every
    // next-hop group, chosen by a CRC-16 hash of the selector fields of
    // next_hop_group_select. Size: the sum of member weights over all groups.
    @id(0x11000001) action_selector(HashAlgorithm.crc16, NEXT_HOP_GROUP_MEMBERS,
                                    NEXT_HOP_SELECTOR_WIDTH) next_hop_selector;

    // ---- Actions (docs/dataplane.md "Actions"; parameter order is the contract).
    // meta.drop_ran tells the caller of an indirect table (next_hop_group_select)
    // that its member ran drop.
    @id(0x01000001) action drop() {
        mark_to_drop(standard_metadata);
        meta.drop_ran = 1;
    }

    // Next hop: egress port and MACs. The TTL is decremented in the apply block
    // (once, on an ipv4_route hit), so that inc_route may reuse this action.
    @id(0x01000002) action set_nexthop(bit<9> port, bit<48> src_mac, bit<48> dst_mac) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
    }

    // ECMP: the route's next hop is a member of group group_id of
    // next_hop_selector (next_hop_group_select, applied right after).
    @id(0x0100000C) action set_next_hop_group(bit<16> group_id) {
        meta.next_hop_group = group_id;
    }

    @id(0x01000003) action set_traffic_class(bit<3> priority, bit<1> lossless) {
        meta.priority = priority;
        meta.lossless = lossless;
        standard_metadata.priority = priority;
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
        meta.rtt_base_ns       = rtt_base_ns;
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

    // The children an INC group's aggregate waits for on this switch (worker
    // ranks and child switch ranks), and whether this switch is the root of
    // the group's tree (spec 04 "Controller duties"; issue 16).
    @id(0x01000006) action set_inc_group(bit<32> contributors_mask, bit<1> root) {
        meta.contributors_mask = contributors_mask;
        meta.inc_root = root;
    }

    // The lower switch behind an ingress port: its partial aggregates count
    // as contributor child_rank (issue 16).
    @id(0x01000020) action set_inc_child(bit<8> child_rank) {
        meta.inc_child_rank = child_rank;
    }

    // Slot aging (spec 04 "free slots of abandoned messages"): a slot held by
    // another message for at least timeout_ns is taken over (0: never).
    @id(0x0100000D) action set_inc_slot_timeout(bit<32> timeout_ns) {
        meta.inc_slot_timeout_ns = timeout_ns;
    }

    // L2 forwarding of frames that are not IPv4 (Ingress step 5): the frame
    // leaves unchanged on one port, or on every port of a multicast group of
    // the PRE (broadcast, flooding).
    @id(0x0100000A) action l2_set_port(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    // BMv2 replicates to the group whenever mcast_grp != 0, whatever
    // egress_spec says; mark_to_drop first (it clears mcast_grp too) so that
    // group 0 drops the frame instead of sending it to egress_spec 0. Egress
    // drops the copy for the ingress port (meta.l2_flood, Egress step 0).
    @id(0x0100000B) action l2_flood(bit<16> mcast_grp) {
        mark_to_drop(standard_metadata);
        standard_metadata.mcast_grp = mcast_grp;
        meta.l2_flood = 1;
    }

    // ---- Tables (docs/dataplane.md "Tables"; declaration order = P4Info order).
    @id(0x02000001) table ipv4_route {
        key = { hdr.ipv4.dst_addr: lpm @name("dst_addr"); }
        actions = { set_nexthop; set_next_hop_group; drop; }
        default_action = drop();
        size = ROUTE_TABLE_SIZE;
    }

    // ECMP groups (fabric-tna style): an entry per group, pointing to a group (or
    // a single member) of next_hop_selector; the member is chosen by a hash of
    // the selector fields (IPv4 source, destination, protocol, L4 ports: the
    // RoCEv2 UDP source port is the flow's entropy). As p4c requires for a table
    // with an action selector, no default action but NoAction (p4c adds it,
    // @defaultonly): a miss, or an empty group, drops the packet (step 6).
    @id(0x0200000B) table next_hop_group_select {
        key = {
            meta.next_hop_group:   exact @name("group_id");
            hdr.ipv4.src_addr:     selector;
            hdr.ipv4.dst_addr:     selector;
            hdr.ipv4.protocol:     selector;
            meta.ecmp_l4_src_port: selector;
            meta.ecmp_l4_dst_port: selector;
        }
        actions = { set_nexthop; drop; }
        implementation = next_hop_selector;
        size = NEXT_HOP_GROUPS;
    }

    // PCP or DSCP -> priority and lossless class (spec 05 "Priority of a RoCE packet").
    @id(0x02000002) table traffic_class {
        key = {
            hdr.vlan.isValid(): exact   @name("vlan_valid");
            hdr.vlan.pcp:       ternary @name("pcp");
            hdr.ipv4.dscp:      ternary @name("dscp");
        }
        actions = { set_traffic_class; NoAction; }
        default_action = NoAction();
        size = TRAFFIC_CLASS_TABLE_SIZE;
    }

    // Per-port configuration (spec 01 "Per-port configuration", spec 02 CP),
    // keyed by the port the packet concerns (meta.config_port).
    @id(0x02000003) table port_config {
        key = { meta.config_port: exact @name("port"); }
        actions = { set_port_config; NoAction; }
        default_action = NoAction();
        size = NUM_PORTS;
    }

    // RDMA connections installed by the controller from announcements (spec 04).
    @id(0x02000004) table rdma_connection {
        key = {
            hdr.ipv4.src_addr: exact @name("src_addr");
            hdr.udp.src_port:  exact @name("udp_sport");
            hdr.bth.dest_qp:   exact @name("dest_qp");
        }
        actions = { set_connection; NoAction; }
        default_action = NoAction();
        size = CONN_TABLE_SIZE;
    }

    // Contributions expected per INC group (spec 04 "Controller duties").
    @id(0x02000005) table inc_group {
        key = { meta.inc_lookup_group: exact @name("group_id"); }
        actions = { set_inc_group; NoAction; }
        default_action = NoAction();
        size = INC_GROUPS;
    }

    // Child ports: the ports behind which a lower switch sends partial
    // aggregates, and the contributor bit each one is (multi-tier INC).
    @id(0x02000020) table inc_child_port {
        key = { standard_metadata.ingress_port: exact @name("port"); }
        actions = { set_inc_child; NoAction; }
        default_action = NoAction();
        size = NUM_PORTS;
    }

    // INC slot aging per INC group (the controller writes the same timeout for
    // every group of a switch); a miss (NoAction): slots are never taken over.
    @id(0x0200000C) table inc_slot_timeout {
        key = { meta.inc_lookup_group: exact @name("group_id"); }
        actions = { set_inc_slot_timeout; NoAction; }
        default_action = NoAction();
        size = INC_GROUPS;
    }

    // Scattered weighted INC route buckets (spec 04 step 5).
    @id(0x02000006) table inc_route {
        key = { meta.inc_bucket: exact @name("bucket"); }
        actions = { set_nexthop; NoAction; }
        default_action = NoAction();
        size = INC_BUCKETS;
    }

    // L2 forwarding of frames that are not IPv4 (Ingress step 5), on the
    // destination MAC: a host's MAC -> its port, broadcast -> a flood group.
    @id(0x0200000A) table l2_forward {
        key = { hdr.ethernet.dst_addr: exact @name("dst_addr"); }
        actions = { l2_set_port; l2_flood; drop; }
        default_action = drop();
        size = L2_FORWARD_TABLE_SIZE;
    }

    apply {
        bit<32> in_port = (bit<32>)standard_metadata.ingress_port;
        meta.now_ns = standard_metadata.ingress_global_timestamp * NS_PER_US;
        meta.acct_len = standard_metadata.packet_length;
        meta.truncate_to_bytes = 0;

        // Digests (v1model/BMv2): p4c makes one BMv2 learn list per digest()
        // call, all named after the struct, while BMv2's P4Runtime server
        // configures and acks a digest through ONE learn list found by that
        // name; a second call site of the same digest would get BMv2's
        // defaults (a 16-sample buffer flushed after 1 s) and unacked
        // buffers. So each digest has exactly one call site, below step 4:
        // every path that reports an event reaches it (no `return` before it
        // but the one after it), and BMv2 samples the fields at the end of
        // ingress anyway. The port event to report is in meta.event_* and
        // meta.deferred_port_event (from egress through a recirculation, or
        // made by step 4 of this pass); the CNP digest in meta.cnp_*.
        bool done = false;              // the packet's fate is decided: stop after the digests
        bit<1> send_cnp_digest = 0;
        bool is_pause_frame = false;

        // ---- v1model glue: a recirculated E2E clone (or its resubmit) carries
        // what egress decided: digests, and possibly a finished switch CNP
        // (Egress step 6). One digest per ingress pass (BMv2); a pass with
        // both resubmits itself for the second (the CNP digest).
        if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_RECIRC) {
            if (meta.deferred_port_event != PORT_EVENT_NONE) {
                if (meta.deferred_cnp_digest == 1) {
                    resubmit_preserving_field_list(FL_RESUBMIT);
                    done = true;
                }
            } else if (meta.deferred_cnp_digest == 1) {
                send_cnp_digest = 1;
            }
        } else if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_RESUBMIT) {
            send_cnp_digest = 1;
        }
        if (!done && (standard_metadata.instance_type == PKT_INSTANCE_TYPE_RECIRC ||
                      standard_metadata.instance_type == PKT_INSTANCE_TYPE_RESUBMIT)) {
            if (meta.deferred_cnp == 0) {
                // A digest carrier only: it has done its job.
                mark_to_drop(standard_metadata);
                done = true;
            } else {
                // A switch CNP: from here on an ordinary packet of length
                // (Ethernet + IPv4 total length); the data packet's payload
                // behind its ICRC is cut in egress.
                FRAME_BYTES_FROM_IPV4(meta.acct_len)
                meta.truncate_to_bytes = meta.acct_len;
                // Like the Go pipeline, the CNP enters ingress on the congested
                // port (BMv2 keeps the data packet's ingress port on
                // recirculation).
                in_port = (bit<32>)meta.cnp_port;
            }
        }

        if (!done) {
            if (standard_metadata.parser_error != error.NoError) {
                // ---- Step 1: malformed or truncated.
                malformed.count(in_port);
                mark_to_drop(standard_metadata);
                done = true;
            } else if (hdr.packet_out.isValid()) {
                // ---- Step 2: packet-out from the controller (priority 0).
                standard_metadata.egress_spec = hdr.packet_out.egress_port;
                hdr.packet_out.setInvalid();
                queue_enqueued.count((bit<32>)standard_metadata.egress_spec << 3);
                done = true;
            } else if (hdr.announcement.isValid()) {
                // ---- Step 3: announcement -> controller (spec 04 "Announcements").
                announcements.count(in_port);
                standard_metadata.egress_spec = CPU_PORT;
                meta.punt_ingress_port = standard_metadata.ingress_port;
                meta.punt_reason = PUNT_REASON_ANNOUNCEMENT;
                done = true;
            } else {
                // ---- Steps 4-6 share the single port_config lookup (p4c/BMv2
                // apply a table once per pass): keyed by the ingress port for
                // PFC/PAUSE frames, by the egress port for IPv4.
                // PFC (opcode 0x0101, its pause times parsed) or 802.3x PAUSE
                // (0x0001); other MAC control opcodes are "not IPv4" (step 5),
                // and never forwarded.
                bool is_pfc = hdr.pfc_times.isValid();
                bool is_pause = hdr.mac_control.isValid() &&
                                hdr.mac_control.opcode == MAC_CONTROL_OPCODE_PAUSE;
                is_pause_frame = is_pfc || is_pause;
                if (is_pause_frame) {
                    meta.config_port = (port_id_t)in_port;
                } else if (!hdr.ipv4.isValid()) {
                    // Step 5: not IPv4. MAC control (another opcode) is never
                    // forwarded; anything else (ARP, IPv6, LLDP, ...) is bridged
                    // by l2_forward, unchanged (an 802.1Q tag included; not
                    // classified, not accounted: priority 0, lossy). A miss
                    // (default drop), or an entry whose action is drop: count
                    // and drop.
                    if (hdr.mac_control.isValid()) {
                        dropped.count(in_port);
                        mark_to_drop(standard_metadata);
                    } else {
                        switch (l2_forward.apply().action_run) {
                            l2_set_port: {
                                queue_enqueued.count((bit<32>)standard_metadata.egress_spec << 3);
                            }
                            drop: { dropped.count(in_port); }
                        }
                    }
                    done = true;
                } else {
                    // Step 6: class, route, TTL.
                    traffic_class.apply();
                    if (hdr.ipv4.ttl <= 1) {
                        dropped.count(in_port);
                        mark_to_drop(standard_metadata);
                        done = true;
                    } else {
                        // The selector's L4 fields: the UDP ports when a UDP
                        // header was parsed, else 0 (fields of an invalid header
                        // are undefined in v1model; the Go pipeline hashes 0).
                        meta.ecmp_l4_src_port = 0;
                        meta.ecmp_l4_dst_port = 0;
                        if (hdr.udp.isValid()) {
                            meta.ecmp_l4_src_port = hdr.udp.src_port;
                            meta.ecmp_l4_dst_port = hdr.udp.dst_port;
                        }
                        // Routed iff set_nexthop ran: in ipv4_route, or in the
                        // member next_hop_group_select chose for the route's
                        // group. A miss, a drop (entry or member), a group
                        // without an entry or an empty group: count and drop.
                        bool routed = false;
                        bool grouped = false;
                        switch (ipv4_route.apply().action_run) {
                            set_nexthop:        { routed = true; }
                            set_next_hop_group: { grouped = true; }
                        }
                        if (grouped) {
                            meta.drop_ran = 0;
                            if (next_hop_group_select.apply().hit) {
                                if (meta.drop_ran == 0) {
                                    routed = true;
                                }
                            }
                        }
                        if (!routed) {
                            dropped.count(in_port);
                            mark_to_drop(standard_metadata);
                            done = true;
                        } else {
                            // TTL - 1 with an incremental checksum update (RFC
                            // 1624), as the Go pipeline does: a packet's checksum
                            // is never recomputed from scratch.
                            hdr.ipv4.hdr_checksum = ipv4_checksum_replace_word(
                                hdr.ipv4.hdr_checksum,
                                hdr.ipv4.ttl ++ hdr.ipv4.protocol,
                                (hdr.ipv4.ttl - 1) ++ hdr.ipv4.protocol);
                            hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
                            meta.config_port = standard_metadata.egress_spec;
                        }
                    }
                }
                if (!done) {
                    port_config.apply();
                }

                // ---- Step 4: PFC / PAUSE received on port p pauses our egress p
                // (spec 01 events 1 and 3).
                if (is_pause_frame) {
                    bit<1>  applies = 0;
                    bit<16> quanta = 0;
                    if (is_pause) {
                        applies = 1;
                        quanta = hdr.mac_control.enable_or_time;    // 802.3x: the whole link
                    } else if (((hdr.mac_control.enable_or_time >> meta.lossless_priority) & 1) == 1) {
                        // PFC: the class-enable bit of the lossless priority is set.
                        applies = 1;
                        if      (meta.lossless_priority == 0) { quanta = hdr.pfc_times.time0; }
                        else if (meta.lossless_priority == 1) { quanta = hdr.pfc_times.time1; }
                        else if (meta.lossless_priority == 2) { quanta = hdr.pfc_times.time2; }
                        else if (meta.lossless_priority == 3) { quanta = hdr.pfc_times.time3; }
                        else if (meta.lossless_priority == 4) { quanta = hdr.pfc_times.time4; }
                        else if (meta.lossless_priority == 5) { quanta = hdr.pfc_times.time5; }
                        else if (meta.lossless_priority == 6) { quanta = hdr.pfc_times.time6; }
                        else                                  { quanta = hdr.pfc_times.time7; }
                    }
                    if (applies == 1) {
                        if (quanta > 0) {
                            // Event 1: PAUSE. pause_expire = now + q * pause_quantum_ps
                            // / 1000, the division done exactly by multiply-and-shift
                            // (controls.p4 ps_to_ns); q * pause_quantum_ps < 2^48
                            // fits bit<48>. Then the pause, as one atomic block: a
                            // new one (not paused) starts: paused = 1, pause_start =
                            // now, rx_bytes = 0, digest PAUSE; a running one is only
                            // refreshed (pause_expire).
                            pfc_pause_rx.count(in_port);
                            bit<48> pause_ps = (bit<48>)quanta * (bit<48>)meta.pause_quantum_ps;
                            time_ns_t pause_ns = ps_to_ns(pause_ps);
                            bit<1>    pz_paused;
                            time_ns_t pz_start_ns;
                            bit<32>   pz_rx_bytes;
                            bit<32>   pz_queue_bytes;
                            // ATOMIC pfc_pause
                            port_paused.read(pz_paused, in_port);
                            port_pause_start_ns.read(pz_start_ns, in_port);
                            port_rx_bytes.read(pz_rx_bytes, in_port);
                            port_queue_bytes.read(pz_queue_bytes, in_port);
                            bool pz_starts = pz_paused == 0;
                            port_paused.write(in_port, 1);
                            port_pause_start_ns.write(in_port, pz_starts ? meta.now_ns : pz_start_ns);
                            port_rx_bytes.write(in_port, pz_starts ? 32w0 : pz_rx_bytes);
                            port_pause_expire_ns.write(in_port, meta.now_ns + pause_ns);
                            meta.deferred_port_event = pz_starts ? PORT_EVENT_PAUSE : PORT_EVENT_NONE;
                            meta.event_port = (port_id_t)in_port;
                            meta.event_queue_bytes = pz_queue_bytes;
                            meta.event_rx_bytes = 0;
                            meta.event_timestamp_ns = meta.now_ns;
                            // END ATOMIC
                        } else {
                            // Event 3: RESUME (quanta 0): if paused, RESUME(p).
                            pfc_resume_rx.count(in_port);
                            PORT_RESUME_VARS
                            // ATOMIC pfc_resume
                            PORT_RESUME_ATOMIC(in_port, false)
                            // END ATOMIC
                        }
                    }
                    // Consumed: dropped, not counted in `dropped`.
                    mark_to_drop(standard_metadata);
                    done = true;
                }
            }
        }

        // ---- The digests: the only call site of each (see above).
        if (meta.deferred_port_event != PORT_EVENT_NONE) {
            digest<port_state_digest_t>(DIGEST_RECEIVER,
                { meta.event_port, meta.deferred_port_event, meta.event_queue_bytes,
                  meta.event_rx_bytes, meta.event_timestamp_ns });
        } else if (send_cnp_digest == 1) {
            digest<cnp_digest_t>(DIGEST_RECEIVER,
                { meta.cnp_port, meta.cnp_flow_src_addr, meta.cnp_flow_dst_addr,
                  meta.cnp_window_bytes, meta.cnp_queue_bytes, meta.cnp_timestamp_ns });
        }
        if (done) {
            return;
        }

        // ---- Step 7: RDMA connection lookup (spec 04 data path step 1).
        if (hdr.bth.isValid()) {
            rdma_connection.apply();
        }

        // ==== INC (spec 04; docs/dataplane.md ingress 8-9; issue 16: multi-tier) ====
        // ---- Step 8: INC aggregation (spec 04 data path steps 1-3). A switch
        // aggregates contributions of its workers (RDMA connections with the
        // INC flag) and partial aggregates of the lower switches behind its
        // child ports alike; each child is one bit of the slot's bitmap.
        bool inc_contribution = hdr.inc_base.isValid() &&
            (hdr.inc_base.flags & (INC_FLAG_RESULT | INC_FLAG_PARTIAL)) == 0 &&
            meta.conn_hit == 1 && (meta.conn_flags & CONN_FLAG_INC_UPLINK) != 0;
        bool inc_partial = hdr.inc_base.isValid() &&
            (hdr.inc_base.flags & (INC_FLAG_RESULT | INC_FLAG_PARTIAL)) == INC_FLAG_PARTIAL;
        if (inc_contribution || inc_partial) {
            bool ids_present = hdr.inc_ids.isValid();
            // The aggregation key (INC ID, offset, operation ID), the data
            // flow length and the contributor bit.
            bit<32> inc_id = 0;
            bit<32> offset = 0;
            bit<16> op = 0;
            bit<32> flow_len = 0;
            bit<8>  contributor_rank = 0;
            bool    keyed = false;
            if (ids_present) {
                inc_id = hdr.inc_ids.group_id ++ hdr.inc_ids.message_id;
                offset = (bit<32>)(hdr.bth.psn - hdr.inc_ids.first_psn);   // mod 2^24
                op = hdr.inc_ids.operation_id;
                flow_len = hdr.inc_ids.flow_len;
                keyed = true;
            }
            if (inc_partial) {
                // A partial aggregate of a lower switch: its offset is in the
                // IDS part's first PSN field; its bit is the rank the
                // controller gave the child switch behind the ingress port.
                // Without a child port entry, or without the IDS part, it is
                // refused (a host cannot pose as a lower switch).
                if (!ids_present) {
                    dropped.count(in_port);
                    mark_to_drop(standard_metadata);
                    return;
                }
                if (!inc_child_port.apply().hit) {
                    dropped.count(in_port);
                    mark_to_drop(standard_metadata);
                    return;
                }
                offset = (bit<32>)hdr.inc_ids.first_psn;
                contributor_rank = meta.inc_child_rank;
            } else {
                // A worker's contribution: the data flow map, INC_FLOW_WAYS
                // flows per connection (spec 04 step 2). The first packet of a
                // data flow (IDS part) records the flow unless a way already
                // holds it (a retransmitted first packet); a later packet
                // belongs to the newest flow whose PSN range holds it.
                contributor_rank = meta.worker_rank;
                bit<32> flow_base = (bit<32>)meta.conn_index * INC_FLOW_WAYS;
                bit<2>  next_way;
                inc_flow_next_way.read(next_way, (bit<32>)meta.conn_index);
                bool known = false;
                bit<32> fw_cell;
                bit<32> fw_inc_id;
                bit<24> fw_first_psn;
                bit<32> fw_len;
                bit<16> fw_op;
                bit<32> fw_offset;
                INC_FLOW_WAY(2w1)
                INC_FLOW_WAY(2w2)
                INC_FLOW_WAY(2w3)
                INC_FLOW_WAY(2w0)
                if (ids_present && !known && flow_len != 0) {
                    bit<32> new_cell = flow_base + (bit<32>)next_way;
                    inc_flow_inc_id.write(new_cell, inc_id);
                    inc_flow_first_psn.write(new_cell, hdr.inc_ids.first_psn);
                    inc_flow_len.write(new_cell, flow_len);
                    inc_flow_op.write(new_cell, op);
                    inc_flow_next_way.write((bit<32>)meta.conn_index, next_way + 1);
                }
            }
            if (!keyed || offset >= flow_len) {
                // No data flow holds the PSN, or it is past the flow's end.
                dropped.count(in_port);
                mark_to_drop(standard_metadata);
                return;
            }
            meta.inc_lookup_group = inc_id[31:16];
            if (inc_group.apply().hit) {
                bit<32> slot_hash;
                hash(slot_hash, HashAlgorithm.crc32, 32w0, { inc_id, offset }, 64w0x100000000);
                bit<32> slot = slot_hash & (INC_SLOTS - 1);
                bit<32> contributor = (bit<32>)1 << contributor_rank;
                bit<32> bitmap;
                bit<32> slot_inc_id;
                bit<32> slot_offset;
                bit<16> slot_op;
                bit<1>  slot_done;
                time_ns_t slot_start_ns;
                inc_slot_bitmap.read(bitmap, slot);
                inc_slot_inc_id.read(slot_inc_id, slot);
                inc_slot_offset.read(slot_offset, slot);
                inc_slot_op.read(slot_op, slot);
                inc_slot_done.read(slot_done, slot);
                inc_slot_start_ns.read(slot_start_ns, slot);
                bool same_message = slot_inc_id == inc_id && slot_offset == offset && slot_op == op;
                // Slot aging: a slot held (or remembered as done) for at least
                // the timeout of this packet's group.
                meta.inc_slot_timeout_ns = 0;
                inc_slot_timeout.apply();
                bool aged = meta.inc_slot_timeout_ns != 0 &&
                            meta.now_ns - slot_start_ns >= (time_ns_t)meta.inc_slot_timeout_ns;
                bit<1> claim = 0;
                if (slot_done == 1 && same_message && !aged) {
                    // A late copy of an aggregation this slot completed (a
                    // retransmission, or a lower switch sending again).
                    inc_duplicates.count(in_port);
                    mark_to_drop(standard_metadata);
                    return;
                } else if (bitmap == 0 || slot_done == 1) {
                    claim = 1;
                } else if (same_message) {
                    if ((bitmap & contributor) != 0) {
                        inc_duplicates.count(in_port);
                        mark_to_drop(standard_metadata);
                        return;
                    }
                    bitmap = bitmap | contributor;
                } else if (aged) {
                    // Another message, abandoned: taken over.
                    inc_slot_takeovers.count(in_port);
                    claim = 1;
                } else {
                    inc_slot_busy.count(in_port);
                    mark_to_drop(standard_metadata);
                    return;
                }
                if (claim == 1) {
                    inc_slot_inc_id.write(slot, inc_id);
                    inc_slot_offset.write(slot, offset);
                    inc_slot_op.write(slot, op);
                    inc_slot_start_ns.write(slot, meta.now_ns);
                    bitmap = contributor;
                }
                bit<32> lane_sum;
                INC_LANE(0)
                INC_LANE(1)
                INC_LANE(2)
                INC_LANE(3)
                INC_LANE(4)
                INC_LANE(5)
                INC_LANE(6)
                INC_LANE(7)
                INC_LANE(8)
                INC_LANE(9)
                INC_LANE(10)
                INC_LANE(11)
                INC_LANE(12)
                INC_LANE(13)
                INC_LANE(14)
                INC_LANE(15)
                inc_contributions.count(in_port);
                inc_slot_bitmap.write(slot, bitmap);
                if (bitmap == meta.contributors_mask) {
                    // Every child is in: the slot is done (it remembers the key
                    // for the slot timeout, from now) and this packet becomes
                    // the aggregate: the RESULT at the root of the group's
                    // tree, else a partial aggregate for the switch above.
                    inc_slot_done.write(slot, 1);
                    inc_slot_start_ns.write(slot, meta.now_ns);
                    hdr.inc_base.flags = INC_FLAG_IDS | INC_FLAG_PARTIAL;
                    if (meta.inc_root == 1) {
                        hdr.inc_base.flags = INC_FLAG_IDS | INC_FLAG_RESULT;
                    }
                    if (!ids_present) {
                        hdr.inc_ids.setValid();
                        hdr.ipv4.hdr_checksum = ipv4_checksum_replace_word(hdr.ipv4.hdr_checksum,
                            hdr.ipv4.total_len, hdr.ipv4.total_len + INC_IDS_BYTES);
                        hdr.ipv4.total_len = hdr.ipv4.total_len + INC_IDS_BYTES;
                        hdr.udp.length = hdr.udp.length + INC_IDS_BYTES;
                    }
                    hdr.udp.checksum = 0;       // the payload changed: no UDP checksum
                    hdr.inc_ids.group_id = inc_id[31:16];
                    hdr.inc_ids.message_id = inc_id[15:0];
                    hdr.inc_ids.reserved0 = 0;
                    hdr.inc_ids.first_psn = offset[23:0];
                    hdr.inc_ids.operation_id = op;
                    hdr.inc_ids.reserved1 = 0;
                    hdr.inc_ids.flow_len = flow_len;
                    icrc_inc_result.apply(hdr);
                    FRAME_BYTES_FROM_IPV4(meta.truncate_to_bytes)
                    inc_results.count(in_port);
                } else {
                    // Consumed: more contributions expected.
                    if (claim == 1) {
                        inc_slot_done.write(slot, 0);
                    }
                    mark_to_drop(standard_metadata);
                    return;
                }
            }
        }

        // ---- Step 9: partial aggregates go up by hash routing on the INC ID
        // (spec 04 steps 4-5): the ones made in step 8, and those passing
        // through a switch without their group (inc_group miss). A RESULT goes
        // down by ipv4_route like any packet, and is never aggregated again.
        if (hdr.inc_base.isValid() &&
            (hdr.inc_base.flags & (INC_FLAG_RESULT | INC_FLAG_PARTIAL)) == INC_FLAG_PARTIAL) {
            bit<16> bucket_hash;
            hash(bucket_hash, HashAlgorithm.crc16, 16w0,
                 { hdr.inc_ids.group_id, hdr.inc_ids.message_id, hdr.inc_base.version,
                   hdr.udp.dst_port },
                 32w0x10000);
            meta.inc_bucket = (bit<8>)(bucket_hash & (INC_BUCKETS - 1));
            inc_route.apply();
        }
        // ==== end INC ====

        // ---- Step 10: enqueue accounting, lossless packets (spec 01 event 2,
        // flowTable enqueue): the port's queue, rx_bytes while paused, and the
        // flow slot (taken when free or owned by this flow, else a collision),
        // as one atomic block (egress subtracts from the same cells).
        if (meta.lossless == 1) {
            bit<32> out_port = (bit<32>)standard_metadata.egress_spec;
            hash(meta.flow_hash, HashAlgorithm.crc32, 32w0,
                 { hdr.ipv4.src_addr, hdr.ipv4.dst_addr }, 64w0x100000000);
            meta.flow_slot = meta.flow_hash & (FLOW_SLOTS - 1);
            bit<32> eq_queue_bytes;
            bit<1>  eq_paused;
            bit<32> eq_rx_bytes;
            bit<32> eq_flow_data;
            bit<32> eq_flow_owner;
            // ATOMIC enqueue
            port_queue_bytes.read(eq_queue_bytes, out_port);
            port_paused.read(eq_paused, out_port);
            port_rx_bytes.read(eq_rx_bytes, out_port);
            flow_bytes.read(eq_flow_data, meta.flow_slot);
            flow_key.read(eq_flow_owner, meta.flow_slot);
            bool eq_take = eq_flow_data == 0 || eq_flow_owner == meta.flow_hash;
            port_queue_bytes.write(out_port, eq_queue_bytes + meta.acct_len);
            port_rx_bytes.write(out_port, eq_paused == 1 ? eq_rx_bytes + meta.acct_len : eq_rx_bytes);
            flow_key.write(meta.flow_slot, eq_take ? meta.flow_hash : eq_flow_owner);
            flow_bytes.write(meta.flow_slot, eq_take ? eq_flow_data + meta.acct_len : eq_flow_data);
            meta.flow_tracked = eq_take ? 1w1 : 1w0;
            // END ATOMIC
            if (meta.flow_tracked == 0) {
                flow_collisions.count(out_port);
            }
        }

        // The packet goes to its unicast egress queue (port, priority).
        queue_enqueued.count(((bit<32>)standard_metadata.egress_spec << 3) | (bit<32>)meta.priority);
    }
}

// ===========================================================================
// Egress (docs/dataplane.md "Egress": the dequeue hook).
// ===========================================================================
control FastcnpEgress(inout fastcnp_headers_t hdr,
                      inout fastcnp_metadata_t meta,
                      inout standard_metadata_t standard_metadata) {

    @id(0x12000001) counter(NUM_PORTS, CounterType.packets_and_bytes) switch_cnp_sent;
    @id(0x12000002) counter(NUM_PORTS, CounterType.packets_and_bytes) ecn_marked;
    // Counters indexed by egress queue, port * 8 + priority (NUM_QUEUES cells).
    // Packets egress takes from the queue (multicast replicas included; not
    // packet-ins, not the E2E clone's pass, not pruned flood copies).
    @id(0x1200000E) counter(NUM_QUEUES, CounterType.packets_and_bytes) queue_dequeued;
    // Maintained by the target's traffic manager, never counted by this
    // program: packets the traffic manager refused for the queue (tail drops of
    // lossy classes; in a lossless class a drop is a bug). BMv2 leaves it at 0
    // (its queue drops are not visible to the program).
    @id(0x1200000F) counter(NUM_QUEUES, CounterType.packets_and_bytes) queue_dropped;

    RedDecision() red;
    ExplicitWindowClamp() window_clamp;
    IcrcCnp() icrc_cnp;

    // log2 in Q6 fixed point by longest-prefix match (docs/dataplane.md
    // "The explicit window without division"); entries from the controller.
    @id(0x01000007) action set_flow_bytes_log2(bit<16> log2_q6) {
        meta.flow_log2_q6 = log2_q6;
    }

    @id(0x01000008) action set_port_bytes_log2(bit<16> log2_q6) {
        meta.port_log2_q6 = log2_q6;
    }

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
        key = { meta.window_log2_q6: exact @name("log2_q6"); }
        actions = { set_window; NoAction; }
        default_action = NoAction();
        size = LOG2_TABLE_SIZE;
    }

    apply {
        // ---- v1model glue: the E2E clone of a data packet. It becomes the
        // switch CNP (Egress step 6) if one was made, and is recirculated to
        // ingress either way (ingress sends the deferred digests, routes the CNP).
        if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_EGRESS_CLONE) {
            if (meta.deferred_cnp == 1) {
                // The CNP exists from here on: count it (bytes: BMv2 counts the
                // clone's ingress length, the data packet's). Without clone session
                // CNP_CLONE_SESSION there is no such pass and nothing is counted.
                switch_cnp_sent.count((bit<32>)meta.cnp_port);
                // IPv4: back to the sender, CNP class, not ECT.
                ipv4_addr_t flow_src_addr = hdr.ipv4.src_addr;
                hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
                hdr.ipv4.dst_addr = flow_src_addr;
                hdr.ipv4.dscp = CNP_DSCP;
                hdr.ipv4.ecn = ECN_NOT_ECT;
                hdr.ipv4.ttl = IPV4_DEFAULT_TTL;
                hdr.ipv4.total_len = IPV4_HEADER_BYTES + UDP_HEADER_BYTES + BTH_BYTES +
                                     CNP_EXTENSION_BYTES + ICRC_BYTES;
                meta.ipv4_checksum_recompute = 1;   // a new header: full checksum
                // UDP: same source port (entropy), RoCEv2 port, no checksum.
                hdr.udp.dst_port = ROCE_UDP_PORT;
                hdr.udp.length = UDP_HEADER_BYTES + BTH_BYTES + CNP_EXTENSION_BYTES + ICRC_BYTES;
                hdr.udp.checksum = 0;
                // BTH: CNP to the sender's QP; P_Key copied; every other field 0.
                hdr.bth.opcode = BTH_OPCODE_CNP;
                hdr.bth.solicited_event = 0;
                hdr.bth.mig_req = 0;
                hdr.bth.pad_count = 0;
                hdr.bth.transport_version = 0;
                hdr.bth.resv8a = 0;
                hdr.bth.dest_qp = meta.cnp_sender_qpn;
                hdr.bth.ack_req = 0;
                hdr.bth.resv7 = 0;
                hdr.bth.psn = 0;
                // The fastcnp extension (wire-formats.md).
                hdr.cnp_ext.setValid();
                hdr.cnp_ext.version = CNP_EXT_VERSION;
                hdr.cnp_ext.flags = CNP_EXT_FLAG_WINDOW_VALID | CNP_EXT_FLAG_BY_SWITCH;
                hdr.cnp_ext.reserved0 = 0;
                hdr.cnp_ext.switch_id = meta.cnp_switch_id;
                hdr.cnp_ext.window_bytes = meta.cnp_window_bytes;
                hdr.cnp_ext.port = (bit<16>)meta.cnp_port;
                hdr.cnp_ext.queue_bytes = meta.cnp_queue_bytes;
                hdr.cnp_ext.reserved1 = 0;
                hdr.inc_base.setInvalid();
                hdr.inc_ids.setInvalid();
                hdr.inc_vector.setInvalid();
                hdr.int_header.setInvalid();
                hdr.int_new_hop.setInvalid();
                hdr.int_hop_0.setInvalid();
                hdr.int_hop_1.setInvalid();
                hdr.int_hop_2.setInvalid();
                hdr.int_hop_3.setInvalid();
                hdr.int_hop_4.setInvalid();
                icrc_cnp.apply(hdr);
            }
            recirculate_preserving_field_list(FL_RECIRCULATE);
            return;
        }

        // ---- Step 0: egress pruning of L2 floods (Ingress step 5). BMv2's PRE
        // replicates to every port of the group, the ingress port included
        // (the user metadata and ingress_port are copied into each replica):
        // that copy is dropped, so a flood never goes back where it came from.
        if (meta.l2_flood == 1 &&
            standard_metadata.egress_port == standard_metadata.ingress_port) {
            mark_to_drop(standard_metadata);
            return;
        }

        // ---- Packet-in: header for the controller (announcements, step 3).
        // Only punts stop here: a lossless packet that ipv4_route sent to the
        // CPU port was accounted at enqueue and must be dequeued below.
        if (standard_metadata.egress_port == CPU_PORT && meta.punt_reason != 0) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = meta.punt_ingress_port;
            hdr.packet_in.reason = meta.punt_reason;
            return;
        }

        // The packet left its egress queue (port, priority).
        queue_dequeued.count(((bit<32>)standard_metadata.egress_port << 3) | (bit<32>)meta.priority);

        // Packets the switch built (switch CNPs, INC results): cut what
        // follows their new ICRC.
        if (meta.truncate_to_bytes != 0) {
            truncate(meta.truncate_to_bytes);
        }

        // ---- Step 7a (docs/dataplane.md "INT"): the port's byte count, for every
        // packet that leaves, with the record step 7b adds to it. A port in INT
        // mode adds one to a lossless packet that carries an INT header without
        // the echo flag and with room for one more record.
        bit<32> port_cell = (bit<32>)standard_metadata.egress_port;
        bool int_add = meta.mode == PORT_MODE_INT && meta.lossless == 1 && hdr.int_header.isValid() &&
                       (hdr.int_header.flags & INT_FLAG_ECHO) == 0 &&
                       hdr.int_header.hop_count < INT_MAX_HOPS;
        bit<64> tx_before;
        // ATOMIC tx_bytes
        port_tx_bytes.read(tx_before, port_cell);
        port_tx_bytes.write(port_cell, tx_before + (bit<64>)meta.acct_len +
                                       (int_add ? (bit<64>)INT_HOP_BYTES : 64w0));
        // END ATOMIC

        // Only lossless packets were accounted at enqueue (Ingress step 10).
        if (meta.lossless == 0) {
            return;
        }

        meta.now_ns = standard_metadata.egress_global_timestamp * NS_PER_US;
        meta.deferred_cnp = 0;
        meta.deferred_cnp_digest = 0;
        meta.deferred_port_event = PORT_EVENT_NONE;

        // ---- Steps 1 and 2 as one atomic block (ingress adds to the same
        // cells, and a PFC RESUME may race the expiry).
        // Step 1: dequeue accounting (spec 01 event 4, flowTable dequeue): the
        // port's queue and, for a tracked flow, its slot lose acct_len.
        // Step 2: the pause ran out (spec 01 event 3, by expiry): RESUME(p),
        // which reads the queue after this packet left.
        bit<32> queue_bytes;
        bit<32> dq_flow_cell;
        bit<32> flow_data;
        PORT_RESUME_VARS
        // ATOMIC dequeue
        port_queue_bytes.read(queue_bytes, port_cell);
        flow_bytes.read(dq_flow_cell, meta.flow_slot);
        port_queue_bytes.write(port_cell, queue_bytes - meta.acct_len);
        flow_bytes.write(meta.flow_slot, meta.flow_tracked == 1 ? dq_flow_cell - meta.acct_len : dq_flow_cell);
        flow_data = meta.flow_tracked == 1 ? dq_flow_cell : 32w0;
        PORT_RESUME_ATOMIC(port_cell, true)
        // END ATOMIC

        bit<1> make_cnp = 0;
        bit<1> mark = 0;
        if (meta.mode == PORT_MODE_FASTCNP || meta.mode == PORT_MODE_FASTCNP_NO_PFC_STATE) {
            // ---- Step 3: the port state machine (spec 01 event 4), one atomic
            // block (a RESUME in ingress writes the same cells). The ablation mode
            // fastcnp-no-pfc-state sees every port as determined.
            bit<1>    ck_undet;
            time_ns_t ck_check_at_ns;
            bit<32>   ck_snapshot;
            bit<32>   ck_rx_bytes;
            bool      ck_hold;
            bool      ck_congested;
            bool      ck_rearm;
            bit<8>    ck_event;
            bit<1>    ck_next;
            // ATOMIC port_check
            port_undetermined.read(ck_undet, port_cell);
            port_check_at_ns.read(ck_check_at_ns, port_cell);
            port_q_snapshot.read(ck_snapshot, port_cell);
            port_rx_bytes.read(ck_rx_bytes, port_cell);
            PORT_CHECK_DECISION((meta.mode == PORT_MODE_FASTCNP_NO_PFC_STATE ? PORT_DETERMINED : ck_undet),
                                meta.now_ns, ck_check_at_ns, queue_bytes,
                                meta.qth_bytes, ck_snapshot,
                                ck_hold, ck_congested, ck_rearm, ck_event, ck_next)
            port_undetermined.write(port_cell, ck_next);
            port_q_snapshot.write(port_cell, ck_rearm ? queue_bytes : ck_snapshot);
            port_check_at_ns.write(port_cell, ck_rearm ? meta.now_ns + (time_ns_t)meta.tcheck_ns : ck_check_at_ns);
            // END ATOMIC
            if (ck_event != PORT_EVENT_NONE) {
                meta.deferred_port_event = ck_event;
                meta.event_port = standard_metadata.egress_port;
                meta.event_queue_bytes = queue_bytes;
                meta.event_rx_bytes = ck_rx_bytes;
                meta.event_timestamp_ns = meta.now_ns;
            }
            if (ck_congested) {
                if (meta.conn_hit == 1 && (meta.conn_flags & CONN_FLAG_CNP_TARGET) != 0 &&
                    meta.flow_tracked == 1) {
                    // At most one CNP per flow per cnpGap, one atomic block (two
                    // egress threads may serve the same flow slot).
                    time_ns_t last_cnp_ns;
                    // ATOMIC cnp_gap
                    flow_last_cnp_ns.read(last_cnp_ns, meta.flow_slot);
                    bool gap_over = last_cnp_ns == 0 ||
                                    meta.now_ns - last_cnp_ns >= (time_ns_t)meta.cnp_gap_ns;
                    flow_last_cnp_ns.write(meta.flow_slot, gap_over ? meta.now_ns : last_cnp_ns);
                    make_cnp = gap_over ? 1w1 : 1w0;
                    // END ATOMIC
                    // Inside cnpGap: nothing.
                } else {
                    // No sender QP to address, or untracked flow: ECN fallback.
                    mark = 1;
                }
            }
        } else if (meta.mode == PORT_MODE_ECN) {
            // ---- Step 4: classic DCQCN CP (spec 02).
            bit<16> random_q16;
            random<bit<16>>(random_q16, 0, RED_RANDOM_MAX);
            red.apply(queue_bytes, meta.red_kmin_bytes, meta.red_kmax_bytes,
                      meta.red_pmax_q16, random_q16, mark);
        }

        // CE-mark ECT packets only.
        if (mark == 1 && hdr.ipv4.isValid() &&
            (hdr.ipv4.ecn == ECN_ECT0 || hdr.ipv4.ecn == ECN_ECT1)) {
            hdr.ipv4.hdr_checksum = ipv4_checksum_replace_word(hdr.ipv4.hdr_checksum,
                hdr.ipv4.version ++ hdr.ipv4.ihl ++ hdr.ipv4.dscp ++ hdr.ipv4.ecn,
                hdr.ipv4.version ++ hdr.ipv4.ihl ++ hdr.ipv4.dscp ++ ECN_CE);
            hdr.ipv4.ecn = ECN_CE;
            ecn_marked.count(port_cell);
        }

        // ---- Step 7b (INT mode): the HPCC hop record, in front of the others;
        // the IPv4 and UDP lengths grow by INT_HOP_BYTES (the ICRC does not cover
        // INT bytes: wire-formats.md "INT header").
        if (int_add) {
            hdr.int_new_hop.setValid();
            hdr.int_new_hop.timestamp_ns = meta.now_ns;
            hdr.int_new_hop.port = (bit<16>)standard_metadata.egress_port;
            hdr.int_new_hop.tx_bytes = tx_before;
            hdr.int_new_hop.queue_bytes = queue_bytes - meta.acct_len;
            hdr.int_new_hop.rate_bytes_per_ms = meta.rate_bytes_per_ms;
            hdr.int_header.hop_count = hdr.int_header.hop_count + 1;
            bit<16> int_total_len = hdr.ipv4.total_len + INT_HOP_BYTES;
            hdr.ipv4.hdr_checksum = ipv4_checksum_replace_word(hdr.ipv4.hdr_checksum,
                hdr.ipv4.total_len, int_total_len);
            hdr.ipv4.total_len = int_total_len;
            hdr.udp.length = hdr.udp.length + INT_HOP_BYTES;
        }

        if (make_cnp == 1) {
            // ---- Step 5: the explicit window (spec 01 "The explicit window"):
            // k = log2(BDP) + log2(data) - log2(qlen), window = exp2(k), clamped.
            meta.flow_data_bytes = flow_data;
            meta.port_data_bytes = queue_bytes;
            meta.flow_log2_q6 = 0;
            meta.port_log2_q6 = 0;
            flow_bytes_log2.apply();
            port_bytes_log2.apply();
            meta.window_exp2_hit = 0;
            meta.window_exp2_bytes = 0;
            if ((bit<32>)meta.bdp_log2_q6 + (bit<32>)meta.flow_log2_q6 <
                (bit<32>)meta.port_log2_q6) {
                // k < 0: the flow's share is below one byte; exp2 = 0, so the
                // clamp below makes the window the MTU.
                meta.window_exp2_hit = 1;
            } else {
                meta.window_log2_q6 = meta.bdp_log2_q6 + meta.flow_log2_q6 - meta.port_log2_q6;
                window_exp2.apply();
            }
            bit<32> window_bytes;
            window_clamp.apply(meta.window_exp2_hit, meta.window_exp2_bytes, meta.bdp_bytes,
                               meta.mtu_bytes, window_bytes);

            // ---- Step 6: request the switch CNP (built, and counted in
            // switch_cnp_sent, in the clone's pass).
            meta.deferred_cnp = 1;
            meta.cnp_sender_qpn = meta.sender_qpn;
            meta.cnp_switch_id = meta.switch_id;
            meta.cnp_port = standard_metadata.egress_port;
            meta.cnp_window_bytes = window_bytes;
            meta.cnp_queue_bytes = queue_bytes;
            meta.cnp_flow_src_addr = hdr.ipv4.src_addr;
            meta.cnp_flow_dst_addr = hdr.ipv4.dst_addr;
            meta.cnp_timestamp_ns = meta.now_ns;
            // At most one cnp_digest_t per port per DIGEST_MIN_GAP_NS.
            time_ns_t last_digest_ns;
            // ATOMIC digest_gap
            port_last_digest_ns.read(last_digest_ns, port_cell);
            bool digest_due = last_digest_ns == 0 || meta.now_ns - last_digest_ns >= DIGEST_MIN_GAP_NS;
            port_last_digest_ns.write(port_cell, digest_due ? meta.now_ns : last_digest_ns);
            meta.deferred_cnp_digest = digest_due ? 1w1 : 1w0;
            // END ATOMIC
        }

        if (meta.deferred_cnp == 1 || meta.deferred_port_event != PORT_EVENT_NONE) {
            clone_preserving_field_list(CloneType.E2E, CNP_CLONE_SESSION, FL_EGRESS_CLONE);
        }
    }
}

// ===========================================================================
// Checksums and deparser.
// ===========================================================================
control FastcnpComputeChecksum(inout fastcnp_headers_t hdr, inout fastcnp_metadata_t meta) {
    apply {
        // Only the IPv4 header of a switch CNP is built from scratch; every other
        // change (TTL, ECN, an INC result's length) was applied incrementally
        // where it was made (RFC 1624), so a forwarded packet's checksum is never
        // recomputed (a bad one stays bad, as in the Go pipeline).
        update_checksum(hdr.ipv4.isValid() && meta.ipv4_checksum_recompute == 1,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control FastcnpDeparser(packet_out pkt, in fastcnp_headers_t hdr) {
    FastcnpEmit() emit_headers;
    apply {
        emit_headers.apply(pkt, hdr);
    }
}

V1Switch(FastcnpParser(),
         FastcnpVerifyChecksum(),
         FastcnpIngress(),
         FastcnpEgress(),
         FastcnpComputeChecksum(),
         FastcnpDeparser()) main;
