// fastcnp: every header the data plane parses or emits, byte for byte as
// docs/wire-formats.md fixes them (spec 05), the controller headers and the
// digest structs. Each architecture keeps its own metadata
// (v1model/metadata.p4, tna/headers.p4).
// Architecture-neutral: no v1model or TNA type appears here.

#ifndef _FASTCNP_HEADERS_P4_
#define _FASTCNP_HEADERS_P4_

#include "defines.p4"

typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;
typedef bit<9>  port_id_t;
typedef bit<48> time_ns_t;

// ---------------------------------------------------------------------------
// Controller headers (wire-formats.md "Controller packet headers"). No @id:
// their P4Info IDs are the ones p4c derives from the header TYPE names
// (packet_in_h 68340960, packet_out_h 74440427, as p4c's real output shows:
// /work/shared/reports/p4c-example, p4src/p4info_test.go TestDerivedIDsMatchP4c).
// Renaming a type changes its ID.
// ---------------------------------------------------------------------------
@controller_header("packet_in")
header packet_in_h {
    bit<9> ingress_port;
    bit<7> reason;          // PUNT_REASON_*
}

@controller_header("packet_out")
header packet_out_h {
    bit<9> egress_port;
    bit<7> pad;             // reserved, 0
}

// ---------------------------------------------------------------------------
// Standard headers.
// ---------------------------------------------------------------------------
header ethernet_h {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

header vlan_h {             // 802.1Q tag, after the source MAC
    bit<3>  pcp;
    bit<1>  dei;
    bit<12> vid;
    bit<16> ether_type;     // inner EtherType
}

// MAC control (EtherType 0x8808): the first 4 bytes after Ethernet[/802.1Q],
// extracted for every opcode (wire-formats.md "MAC control": a frame too short
// for them is malformed, as in Go's wire), then, for PFC only, the 8 pause
// times. The zero padding is not parsed.
header mac_control_h {
    bit<16> opcode;             // 0x0101 PFC, 0x0001 PAUSE
    bit<16> enable_or_time;     // PFC: class-enable vector (bit i = priority i,
                                // low 8 bits defined); PAUSE: pause time (quanta)
}

// PFC (802.1Qbb) body after the class-enable vector: one pause time per
// priority, in quanta of 512 bit times.
header pfc_times_h {
    bit<16> time0;
    bit<16> time1;
    bit<16> time2;
    bit<16> time3;
    bit<16> time4;
    bit<16> time5;
    bit<16> time6;
    bit<16> time7;
}

header ipv4_h {
    bit<4>      version;
    bit<4>      ihl;
    bit<6>      dscp;
    bit<2>      ecn;
    bit<16>     total_len;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     frag_offset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

header udp_h {
    bit<16> src_port;       // RoCEv2: flow entropy
    bit<16> dst_port;       // RoCEv2: 4791
    bit<16> length;
    bit<16> checksum;
}

// InfiniBand Base Transport Header (12 bytes).
header bth_h {
    bit<8>  opcode;
    bit<1>  solicited_event;
    bit<1>  mig_req;
    bit<2>  pad_count;
    bit<4>  transport_version;
    bit<16> partition_key;
    bit<8>  resv8a;         // fastcnp: INC_BTH_MARK / INT_BTH_MARK = an INC / INT header follows (masked in the ICRC)
    bit<24> dest_qp;
    bit<1>  ack_req;
    bit<7>  resv7;
    bit<24> psn;
}

// The fastcnp CNP extension in the CNP's 16 reserved bytes.
header cnp_ext_h {
    bit<4>  version;        // CNP_EXT_VERSION
    bit<4>  flags;          // bit0 window valid, bit1 made by a switch
    bit<8>  reserved0;
    bit<16> switch_id;      // congestion-point switch
    bit<32> window_bytes;   // 0 = none
    bit<16> port;           // egress port at the congestion point
    bit<32> queue_bytes;    // queued bytes at that port when the CNP was made
    bit<16> reserved1;
}

// The RoCEv2 ICRC, as it appears on the wire: the CRC-32 least-significant
// byte first. The switch never parses it; it emits one only in packets it
// builds or rewrites (switch CNPs, INC results).
header icrc_h {
    bit<32> value_lsb_first;
}

// ---------------------------------------------------------------------------
// The project's own headers (wire-formats.md).
// ---------------------------------------------------------------------------
// RDMA-connection announcement: the 32-byte UDP payload.
header announcement_h {
    bit<32> magic;          // ANNOUNCE_MAGIC
    bit<8>  version;        // ANNOUNCE_VERSION
    bit<8>  msg_type;       // 1 up, 2 down (validated by the controller)
    bit<8>  flags;          // bit0 INC uplink, bit1 CNP target
    bit<8>  worker_rank;
    bit<32> sender_ip;
    bit<32> receiver_ip;
    bit<16> udp_src_port;
    bit<16> reserved0;
    bit<8>  reserved1;
    bit<24> sender_qpn;
    bit<8>  reserved2;
    bit<24> receiver_qpn;
    bit<16> inc_group;
    bit<16> reserved3;
}

// INC base header (4 bytes), after the BTH when BTH.resv8a == INC_BTH_MARK.
header inc_base_h {
    bit<8>  flags;          // INC_FLAG_IDS | INC_FLAG_RESULT | INC_FLAG_PARTIAL
    bit<8>  version;        // INC protocol version, 1 (part of the INC bucket hash)
    bit<16> reserved;
}

// INC IDS part (16 bytes), present when flags has INC_FLAG_IDS.
header inc_ids_h {
    bit<16> group_id;       // communication-group ID  } together: the 32-bit INC ID
    bit<16> message_id;     // INC message ID          }
    bit<8>  reserved0;
    bit<24> first_psn;      // first PSN of the data flow (RESULT, PARTIAL: the offset)
    bit<16> operation_id;   // communication-operation ID
    bit<16> reserved1;
    bit<32> flow_len;       // data flow length, packets
}

// INC vector: INC_VECTOR_LEN (16) two's-complement 32-bit lanes, big-endian.
header inc_vector_h {
    bit<32> lane0;
    bit<32> lane1;
    bit<32> lane2;
    bit<32> lane3;
    bit<32> lane4;
    bit<32> lane5;
    bit<32> lane6;
    bit<32> lane7;
    bit<32> lane8;
    bit<32> lane9;
    bit<32> lane10;
    bit<32> lane11;
    bit<32> lane12;
    bit<32> lane13;
    bit<32> lane14;
    bit<32> lane15;
}

// INT header (4 bytes), after the BTH when BTH.resv8a == INT_BTH_MARK; its
// hop records follow, newest first (wire-formats.md "INT header").
header int_header_h {
    bit<8>  flags;          // INT_FLAG_ECHO: records echoed in an ACK
    bit<8>  version;        // INT_VERSION
    bit<8>  hop_count;      // records that follow, at most INT_MAX_HOPS
    bit<8>  reserved;
}

// INT hop record (24 bytes): the HPCC record of the port the packet left by.
header int_hop_h {
    bit<48> timestamp_ns;   // egress timestamp, ns
    bit<16> port;           // egress port
    bit<64> tx_bytes;       // bytes the port sent before this packet
    bit<32> queue_bytes;    // lossless queue when the packet left (it excluded)
    bit<32> rate_bytes_per_ms; // port line rate
}

// Every header, in wire order (the deparser emits them in this order).
struct fastcnp_headers_t {
    packet_in_h    packet_in;
    packet_out_h   packet_out;
    ethernet_h     ethernet;
    vlan_h         vlan;
    mac_control_h  mac_control;
    pfc_times_h    pfc_times;
    ipv4_h         ipv4;
    udp_h          udp;
    announcement_h announcement;
    bth_h          bth;
    cnp_ext_h      cnp_ext;
    inc_base_h     inc_base;
    inc_ids_h      inc_ids;
    inc_vector_h   inc_vector;
    int_header_h   int_header;
    int_hop_h      int_new_hop;  // the record this switch adds, in front of the others
    int_hop_h      int_hop_0;    // the records as received (INT_MAX_HOPS, unrolled)
    int_hop_h      int_hop_1;
    int_hop_h      int_hop_2;
    int_hop_h      int_hop_3;
    int_hop_h      int_hop_4;
    icrc_h         icrc;
}

// ---------------------------------------------------------------------------
// Digests. v1model digests cannot carry @id: p4c names them by struct type
// and derives the ID from the name (dataplane.md "Digests"), so renaming a
// struct changes its ID. Field order is the P4Info member order: do not reorder.
// ---------------------------------------------------------------------------
struct port_state_digest_t {
    bit<9>  port;
    bit<8>  event;          // PORT_EVENT_*
    bit<32> queue_bytes;
    bit<32> rx_bytes;
    bit<48> timestamp_ns;
}

struct cnp_digest_t {
    bit<9>  port;
    bit<32> src_addr;       // the data flow's source (the CNP's destination)
    bit<32> dst_addr;       // the data flow's destination
    bit<32> window_bytes;
    bit<32> queue_bytes;
    bit<48> timestamp_ns;
}

#endif  // _FASTCNP_HEADERS_P4_
