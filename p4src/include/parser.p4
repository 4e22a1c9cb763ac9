// fastcnp: the architecture-neutral parts of the parser and the deparser
// (docs/dataplane.md "Parser"; docs/wire-formats.md; spec 05).
//
// Each architecture's own parser (v1model/fastcnp.p4, tna/fastcnp.p4: FastcnpParser)
// owns what is not neutral: the CPU-port packet_out header, the switch's own
// recirculated or resubmitted packets, and the `announce_udp_port` value set (a
// value set must be declared in the top-level parser to keep its P4Info name
// FastcnpParser.announce_udp_port). It calls the sub-parsers below:
//   FASTCNP_FRAME_STATES      Ethernet, 802.1Q, MAC control (PFC/PAUSE), IPv4, UDP: a
//                             macro of parser states, expanded in place by each top-level
//                             parser so that it dispatches on the UDP port after UDP
//   FastcnpRoceParser         BTH, then the CNP extension, the INC header or the INT header
//   FastcnpAnnouncementParser the 32-byte RDMA-connection announcement
// A malformed header (IPv4 version != 4 or IHL < 5, an INT hop count above
// INT_MAX_HOPS, an announcement's magic or version wrong) sets `malformed` and ends the sub-parser; the caller turns it into
// its architecture's parser error (v1model: verify; TNA: a metadata flag, since
// p4c's Tofino back end drops `verify`). Checks are select cases, not expressions,
// so that Tofino's parser can evaluate them. Extracting past the end of the packet
// fails with the architecture's own error (v1model: PacketTooShort; TNA: the
// partial-header bit of parser_err); the ingress control checks both first
// (Ingress step 1).

#ifndef _FASTCNP_PARSER_P4_
#define _FASTCNP_PARSER_P4_

#include "headers.p4"

// The frame states: Ethernet -> [802.1Q] -> MAC control [-> PFC times] | IPv4 ->
// UDP, entered at parse_frame_ethernet, leaving to UDP_NEXT after the UDP header.
// A macro, so that a parser can continue in its own states after UDP: Tofino's parser
// selects only on bytes extracted on every path into a state, so the dispatch on the
// UDP port has to sit in the parser that extracted UDP (p4src/tna), not in a caller
// after a sub-parser returns. HDR is the fastcnp_headers_t, MALFORMED the flag a bad
// IPv4 header sets, BAD_NEXT the state after it (v1model: its parser error; TNA:
// accept), and the parser's packet_in is `pkt`. Both architectures expand it in their
// top-level parsers.
//
// One tag only: a second 0x8100 is accepted unparsed. MAC control: the opcode and
// the next 16 bits (PFC class-enable vector / PAUSE pause time) for every opcode, then
// the 16 bytes of PFC pause times (0x0101); any other opcode (PAUSE 0x0001 included):
// accept. IPv4 options are forwarded, not parsed: only IHL 5, unfragmented (offset 0)
// UDP goes further; version != 4 or IHL < 5 is malformed (first match wins).
#define FASTCNP_FRAME_STATES(HDR, MALFORMED, UDP_NEXT, BAD_NEXT)                              \
    state parse_frame_ethernet {                                                    \
        pkt.extract(HDR.ethernet);                                                  \
        transition select(HDR.ethernet.ether_type) {                                \
            ETHERTYPE_VLAN:        parse_frame_vlan;                                \
            ETHERTYPE_IPV4:        parse_frame_ipv4;                                \
            ETHERTYPE_MAC_CONTROL: parse_frame_mac_control;                         \
            default:               accept;                                          \
        }                                                                           \
    }                                                                               \
    state parse_frame_vlan {                                                        \
        pkt.extract(HDR.vlan);                                                      \
        transition select(HDR.vlan.ether_type) {                                    \
            ETHERTYPE_IPV4:        parse_frame_ipv4;                                \
            ETHERTYPE_MAC_CONTROL: parse_frame_mac_control;                         \
            default:               accept;                                          \
        }                                                                           \
    }                                                                               \
    state parse_frame_mac_control {                                                 \
        pkt.extract(HDR.mac_control);                                               \
        transition select(HDR.mac_control.opcode) {                                 \
            MAC_CONTROL_OPCODE_PFC: parse_frame_pfc_times;                          \
            default:                accept;                                         \
        }                                                                           \
    }                                                                               \
    state parse_frame_pfc_times {                                                   \
        pkt.extract(HDR.pfc_times);                                                 \
        transition accept;                                                          \
    }                                                                               \
    state parse_frame_ipv4 {                                                        \
        pkt.extract(HDR.ipv4);                                                      \
        transition select(HDR.ipv4.version, HDR.ipv4.ihl, HDR.ipv4.frag_offset, HDR.ipv4.protocol) { \
            (IPV4_VERSION, IPV4_MIN_IHL, 0, IP_PROTO_UDP): parse_frame_udp;         \
            (IPV4_VERSION, 4w0 &&& 4w0xC, _, _):          parse_frame_ipv4_malformed; /* IHL 0..3 */ \
            (IPV4_VERSION, 4w4, _, _):                    parse_frame_ipv4_malformed; /* IHL 4 */ \
            (IPV4_VERSION, _, _, _):                      accept;                   \
            default:                                      parse_frame_ipv4_malformed; /* version != 4 */ \
        }                                                                           \
    }                                                                               \
    state parse_frame_ipv4_malformed {                                              \
        MALFORMED = 1;                                                              \
        transition BAD_NEXT;                                                        \
    }                                                                               \
    state parse_frame_udp {                                                         \
        pkt.extract(HDR.udp);                                                       \
        transition UDP_NEXT;                                                        \
    }

// After UDP destination port 4791: the BTH; opcode 0x81 (CNP) -> the 16-byte
// fastcnp extension; else BTH byte 4 == INC_BTH_MARK -> the INC header
// (base, IDS part if flag IDS, vector); else BTH byte 4 == INT_BTH_MARK -> the
// INT header and its hop_count records (more than INT_MAX_HOPS: malformed, the
// v1model error formerly named IntTooManyHops); else nothing more. The ICRC is not
// parsed.
parser FastcnpRoceParser(packet_in pkt, inout fastcnp_headers_t hdr, out bit<1> malformed) {
    state start {
        malformed = 0;
        pkt.extract(hdr.bth);
        transition select(hdr.bth.opcode, hdr.bth.resv8a) {
            (BTH_OPCODE_CNP, _): parse_cnp_ext;
            (_, INC_BTH_MARK):   parse_inc_base;
            (_, INT_BTH_MARK):   parse_int_header;
            default:             accept;
        }
    }

    // The records, unrolled for INT_MAX_HOPS = 5: state parse_int_hop_i
    // extracts record i and stops after hop_count of them.
    state parse_int_header {
        pkt.extract(hdr.int_header);
        transition select(hdr.int_header.hop_count) {
            0:       accept;
            1:       parse_int_hop_0;
            2:       parse_int_hop_0;
            3:       parse_int_hop_0;
            4:       parse_int_hop_0;
            5:       parse_int_hop_0;
            default: parse_int_too_many;
        }
    }

    state parse_int_too_many {
        malformed = 1;
        transition accept;
    }

    state parse_int_hop_0 {
        pkt.extract(hdr.int_hop_0);
        transition select(hdr.int_header.hop_count) {
            1:       accept;
            default: parse_int_hop_1;
        }
    }

    state parse_int_hop_1 {
        pkt.extract(hdr.int_hop_1);
        transition select(hdr.int_header.hop_count) {
            2:       accept;
            default: parse_int_hop_2;
        }
    }

    state parse_int_hop_2 {
        pkt.extract(hdr.int_hop_2);
        transition select(hdr.int_header.hop_count) {
            3:       accept;
            default: parse_int_hop_3;
        }
    }

    state parse_int_hop_3 {
        pkt.extract(hdr.int_hop_3);
        transition select(hdr.int_header.hop_count) {
            4:       accept;
            default: parse_int_hop_4;
        }
    }

    state parse_int_hop_4 {
        pkt.extract(hdr.int_hop_4);
        transition accept;
    }

    state parse_cnp_ext {
        pkt.extract(hdr.cnp_ext);
        transition accept;
    }

    state parse_inc_base {
        pkt.extract(hdr.inc_base);
        transition select(hdr.inc_base.flags) {
            INC_FLAG_IDS &&& INC_FLAG_IDS: parse_inc_ids;
            default:                       parse_inc_vector;
        }
    }

    state parse_inc_ids {
        pkt.extract(hdr.inc_ids);
        transition parse_inc_vector;
    }

    state parse_inc_vector {
        pkt.extract(hdr.inc_vector);
        transition accept;
    }
}

// The RDMA-connection announcement (wire-formats.md): wrong magic or version
// is malformed. Its type, flags and addresses are the controller's to validate.
parser FastcnpAnnouncementParser(packet_in pkt, inout fastcnp_headers_t hdr, inout bit<1> malformed) {
    state start {
        pkt.extract(hdr.announcement);
        transition select(hdr.announcement.magic, hdr.announcement.version) {
            (ANNOUNCE_MAGIC, ANNOUNCE_VERSION): accept;
            default:                            announcement_malformed;
        }
    }

    state announcement_malformed {
        malformed = 1;
        transition accept;
    }
}

// Deparser body: every header in wire order; invalid headers emit nothing.
// `icrc` follows the last header the switch built (CNP extension or INC
// vector); the architecture truncates the old payload behind it.
control FastcnpEmit(packet_out pkt, in fastcnp_headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.vlan);
        pkt.emit(hdr.mac_control);
        pkt.emit(hdr.pfc_times);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.announcement);
        pkt.emit(hdr.bth);
        pkt.emit(hdr.cnp_ext);
        pkt.emit(hdr.inc_base);
        pkt.emit(hdr.inc_ids);
        pkt.emit(hdr.inc_vector);
        pkt.emit(hdr.int_header);
        pkt.emit(hdr.int_new_hop);
        pkt.emit(hdr.int_hop_0);
        pkt.emit(hdr.int_hop_1);
        pkt.emit(hdr.int_hop_2);
        pkt.emit(hdr.int_hop_3);
        pkt.emit(hdr.int_hop_4);
        pkt.emit(hdr.icrc);
    }
}

#endif  // _FASTCNP_PARSER_P4_
