// fastcnp: the decisions of the algorithm, as architecture-neutral controls.
//
// These controls and functions hold no state and call no extern: they take what the
// architecture's code read from its registers and tables, and say what to do.
// The v1model program (v1model/fastcnp.p4) does the register I/O around them;
// a TNA program does the same with RegisterActions. Every decision is written
// with additions, comparisons and multiplications only (spec 01: "never as a
// division").

#ifndef _FASTCNP_CONTROLS_P4_
#define _FASTCNP_CONTROLS_P4_

#include "headers.p4"

// RFC 1624 eqn. 3: the IPv4 header checksum after one 16-bit word of the header
// changed from old_word to new_word. Used where the header is not fully
// parsed (IHL > 5: options are not parsed, so update_checksum cannot recompute
// it); gives the same value as a full recomputation.
bit<16> ipv4_checksum_replace_word(in bit<16> checksum, in bit<16> old_word, in bit<16> new_word) {
    bit<32> sum = (bit<32>)(~checksum) + (bit<32>)(~old_word) + (bit<32>)new_word;
    sum = (sum & 0xFFFF) + (sum >> 16);
    sum = (sum & 0xFFFF) + (sum >> 16);
    return ~(sum[15:0]);
}

// floor(ps / 1000) for every ps < 2^48 (defines.p4 PS_TO_NS_MAGIC_*): the 97-bit
// product ps * M of the magic-number division, taken apart into 24-bit limbs so
// that no intermediate value exceeds 64 bits (largest: p2 + (s1 >> 24) < 2^50):
//   ps * M = p2 * 2^48 + p1 * 2^24 + p0, s1 = p1 + (p0 >> 24),
//   (ps * M) >> 58 = (p2 + (s1 >> 24)) >> 10.
// p4src/arith_test.go checks this arithmetic against exact division.
bit<48> ps_to_ns(in bit<48> ps) {
    bit<64> x_lo = (bit<64>)ps[23:0];
    bit<64> x_hi = (bit<64>)ps[47:24];
    bit<64> p0 = x_lo * PS_TO_NS_MAGIC_LO;
    bit<64> p1 = x_hi * PS_TO_NS_MAGIC_LO + x_lo * PS_TO_NS_MAGIC_HI;
    bit<64> p2 = x_hi * PS_TO_NS_MAGIC_HI;
    bit<64> s1 = p1 + (p0 >> 24);
    return (bit<48>)((p2 + (s1 >> 24)) >> 10);
}

// Spec 01 event 3, docs/dataplane.md Ingress step 4 "RESUME(p)": what a resume
// finds. rx_bytes > C*T is evaluated as rx_bytes * 10^6 > rate_bytes_per_ms * T
// (T in ns), exactly, in 64-bit arithmetic: the left side is below 2^52; with
// T = t_hi * 2^24 + t_lo the right side is (rate * t_hi) * 2^24 + rate * t_lo,
// which is at least 2^52 (never beaten) when rate * t_hi >= 2^28 and otherwise
// below 2^57. p4src/arith_test.go checks this against exact arithmetic.
control PortResumeDecision(in bit<32>    queue_bytes,
                           in bit<32>    qth_bytes,
                           in bit<32>    rx_bytes,
                           in bit<32>    rate_bytes_per_ms,
                           in time_ns_t  pause_duration_ns,
                           out bit<1>    undetermined,
                           out bit<8>    event) {
    apply {
        bit<64> rx_scaled = (bit<64>)rx_bytes * NS_PER_MS;
        bit<64> rate_t_hi = (bit<64>)rate_bytes_per_ms * (bit<64>)pause_duration_ns[47:24];
        bit<64> rate_t_lo = (bit<64>)rate_bytes_per_ms * (bit<64>)pause_duration_ns[23:0];
        bool rx_beats_rate = false;
        if (rate_t_hi < RATE_T_HI_LIMIT) {
            rx_beats_rate = rx_scaled > (rate_t_hi << 24) + rate_t_lo;
        }
        if (queue_bytes < qth_bytes) {
            undetermined = PORT_DETERMINED;
            event = PORT_EVENT_RESUME_NOT_CONGESTED;
        } else if (rx_beats_rate) {
            undetermined = PORT_DETERMINED;
            event = PORT_EVENT_RESUME_CONGESTED;
        } else {
            undetermined = PORT_UNDETERMINED;
            event = PORT_EVENT_RESUME_UNDETERMINED;
        }
    }
}

// Spec 01 event 4, docs/dataplane.md Egress step 3 (mode fastcnp): the port
// state machine on a dequeue.
//   hold      : undetermined and the check time has not come: no CNP, no mark
//   congested : send a switch CNP (or mark) for this packet's flow
//   rearm     : stay undetermined, q_snapshot = qlen, check_at = now + Tcheck
//   next_undetermined / event: the state to store and the event to report
control PortCheckDecision(in bit<1>    undetermined,
                          in time_ns_t now_ns,
                          in time_ns_t check_at_ns,
                          in bit<32>   queue_bytes,
                          in bit<32>   qth_bytes,
                          in bit<32>   q_snapshot,
                          out bit<1>   hold,
                          out bit<1>   congested,
                          out bit<1>   rearm,
                          out bit<1>   next_undetermined,
                          out bit<8>   event) {
    apply {
        hold = 0;
        congested = 0;
        rearm = 0;
        next_undetermined = undetermined;
        event = PORT_EVENT_NONE;
        if (undetermined == PORT_DETERMINED) {
            if (queue_bytes >= qth_bytes) {
                congested = 1;
            }
        } else if (now_ns < check_at_ns) {
            hold = 1;
        } else if (queue_bytes < qth_bytes) {
            next_undetermined = PORT_DETERMINED;
            event = PORT_EVENT_CHECK_DRAINED;
        } else if (queue_bytes > q_snapshot) {
            next_undetermined = PORT_DETERMINED;
            event = PORT_EVENT_CHECK_CONGESTED;
            congested = 1;
        } else {
            rearm = 1;
        }
    }
}

// Spec 02 CP, docs/dataplane.md Egress step 4 (mode ecn): RED on the queue
// length. Mark probability Pmax*(q-Kmin)/(Kmax-Kmin) is tested without a
// division: r * (Kmax - Kmin) < Pmax_q16 * (q - Kmin), r uniform in 0..65535.
control RedDecision(in bit<32>  queue_bytes,
                    in bit<32>  kmin_bytes,
                    in bit<32>  kmax_bytes,
                    in bit<16>  pmax_q16,
                    in bit<16>  random_q16,
                    out bit<1>  mark) {
    apply {
        mark = 0;
        if (queue_bytes <= kmin_bytes) {
            mark = 0;
        } else if (queue_bytes >= kmax_bytes) {
            mark = 1;
        } else if ((bit<48>)random_q16 * (bit<48>)(kmax_bytes - kmin_bytes) <
                   (bit<48>)pmax_q16 * (bit<48>)(queue_bytes - kmin_bytes)) {
            mark = 1;
        }
    }
}

// Spec 01 "The explicit window", docs/dataplane.md Egress step 5: the final
// clamp of exp2(k): a window_exp2 miss means BDP; then
// window = min(bdp_bytes, max(mtu_bytes, exp2)).
control ExplicitWindowClamp(in bit<1>   exp2_hit,
                            in bit<32>  exp2_bytes,
                            in bit<32>  bdp_bytes,
                            in bit<16>  mtu_bytes,
                            out bit<32> window_bytes) {
    apply {
        window_bytes = bdp_bytes;
        if (exp2_hit == 1) {
            window_bytes = exp2_bytes;
        }
        if (window_bytes < (bit<32>)mtu_bytes) {
            window_bytes = (bit<32>)mtu_bytes;
        }
        if (window_bytes > bdp_bytes) {
            window_bytes = bdp_bytes;
        }
    }
}

#endif  // _FASTCNP_CONTROLS_P4_
