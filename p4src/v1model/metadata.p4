// fastcnp (v1model): the user metadata of the v1model program, set in the parser
// and ingress, read in egress; @field_list marks what survives BMv2's clones,
// recirculations and resubmits.

#ifndef _FASTCNP_V1MODEL_METADATA_P4_
#define _FASTCNP_V1MODEL_METADATA_P4_

#include "../include/headers.p4"
#include "defines.p4"

// ---------------------------------------------------------------------------
// Metadata: one struct, set in the parser and ingress, read in egress.
// Fields marked @field_list survive an E2E clone (FL_EGRESS_CLONE), a
// recirculation (FL_RECIRCULATE) and/or a resubmit (FL_RESUBMIT): they carry a
// switch CNP request and the port-state / CNP digests that egress cannot send
// itself (BMv2 simple_switch sends digests at the end of ingress only, one per
// pass). The event_* fields and deferred_port_event are also what ingress's
// single port_state_digest_t call sends for a PFC/PAUSE event of step 4.
// ---------------------------------------------------------------------------
struct fastcnp_metadata_t {
    // Parser.
    bit<1>    malformed;            // a shared sub-parser found a malformed header

    // Time and length (dataplane.md "Per-packet algorithm").
    time_ns_t now_ns;
    bit<32>   acct_len;             // length as received: enqueue adds, dequeue subtracts it
    bit<32>   truncate_to_bytes;    // egress truncates the frame to this length (0 = keep)
    bit<1>    ipv4_checksum_recompute; // the switch built this IPv4 header: recompute its checksum

    // traffic_class.
    bit<3>    priority;
    bit<1>    lossless;

    // port_config (keyed by config_port).
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
    bit<32>   rtt_base_ns;
    bit<32>   bdp_bytes;
    bit<16>   bdp_log2_q6;
    bit<16>   mtu_bytes;
    bit<32>   pause_quantum_ps;
    bit<16>   switch_id;
    bit<3>    lossless_priority;

    // ECMP (ipv4_route set_next_hop_group, next_hop_group_select).
    bit<16>   next_hop_group;
    bit<16>   ecmp_l4_src_port;     // selector field: UDP source port, 0 without UDP
    bit<16>   ecmp_l4_dst_port;     // selector field: UDP destination port, 0 without UDP
    bit<1>    drop_ran;             // the drop action ran (a member of next_hop_group_select)

    // rdma_connection.
    bit<1>    conn_hit;
    bit<24>   sender_qpn;
    bit<8>    conn_flags;
    bit<16>   conn_index;
    bit<16>   inc_group;
    bit<8>    worker_rank;

    // inc_group, inc_route.
    bit<16>   inc_lookup_group;     // inc_group key: INC ID >> 16
    bit<32>   contributors_mask;
    bit<1>    inc_root;             // set_inc_group: this switch emits the RESULT
    bit<8>    inc_bucket;           // inc_route key: INC bucket hash
    bit<8>    inc_child_rank;       // inc_child_port: the contributor bit of the lower switch behind the ingress port
    bit<32>   inc_slot_timeout_ns;  // inc_slot_timeout: slot aging, 0 = off

    // Flow table (enqueue accounting, dequeue).
    bit<32>   flow_hash;
    bit<32>   flow_slot;
    bit<1>    flow_tracked;

    // Explicit window (egress).
    bit<32>   flow_data_bytes;      // flow_bytes_log2 key: data[f] (this packet included)
    bit<32>   port_data_bytes;      // port_bytes_log2 key: qlen (this packet included)
    bit<16>   window_log2_q6;       // window_exp2 key: k
    bit<16>   flow_log2_q6;
    bit<16>   port_log2_q6;
    bit<32>   window_exp2_bytes;
    bit<1>    window_exp2_hit;

    // Punt.
    port_id_t punt_ingress_port;
    bit<7>    punt_reason;

    // l2_forward (Ingress step 5).
    bit<1>    l2_flood;             // sent to a multicast group: egress prunes the copy for the ingress port

    // Carried by the E2E clone and the recirculation (v1model glue).
    @field_list(FL_EGRESS_CLONE, FL_RECIRCULATE, FL_RESUBMIT) bit<1>    deferred_cnp;         // the clone becomes a switch CNP
    @field_list(FL_EGRESS_CLONE) bit<24>  cnp_sender_qpn;
    @field_list(FL_EGRESS_CLONE) bit<16>  cnp_switch_id;
    @field_list(FL_EGRESS_CLONE, FL_RECIRCULATE, FL_RESUBMIT) bit<9>    cnp_port;
    @field_list(FL_EGRESS_CLONE, FL_RECIRCULATE, FL_RESUBMIT) bit<32>   cnp_window_bytes;
    @field_list(FL_EGRESS_CLONE, FL_RECIRCULATE, FL_RESUBMIT) bit<32>   cnp_queue_bytes;
    @field_list(FL_EGRESS_CLONE, FL_RECIRCULATE, FL_RESUBMIT) bit<1>    deferred_cnp_digest;  // send cnp_digest_t
    @field_list(FL_EGRESS_CLONE, FL_RECIRCULATE, FL_RESUBMIT) bit<32>   cnp_flow_src_addr;
    @field_list(FL_EGRESS_CLONE, FL_RECIRCULATE, FL_RESUBMIT) bit<32>   cnp_flow_dst_addr;
    @field_list(FL_EGRESS_CLONE, FL_RECIRCULATE) bit<8>    deferred_port_event;  // PORT_EVENT_* to report (0 none): egress's, or ingress step 4's
    @field_list(FL_EGRESS_CLONE, FL_RECIRCULATE) bit<9>    event_port;
    @field_list(FL_EGRESS_CLONE, FL_RECIRCULATE) bit<32>   event_queue_bytes;
    @field_list(FL_EGRESS_CLONE, FL_RECIRCULATE) bit<32>   event_rx_bytes;
    @field_list(FL_EGRESS_CLONE, FL_RECIRCULATE) bit<48>   event_timestamp_ns;
    @field_list(FL_EGRESS_CLONE, FL_RECIRCULATE, FL_RESUBMIT) bit<48>   cnp_timestamp_ns;
}

#endif  // _FASTCNP_V1MODEL_METADATA_P4_
