// fastcnp: the decisions of the algorithm, as architecture-neutral controls.
//
// These controls hold no state and call no extern: they take what the
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

// Spec 01 event 3, docs/dataplane.md Ingress step 4 "RESUME(p)": what a resume
// finds. rx_bytes > C*T is evaluated as rx_bytes * 1e6 > rate_bytes_per_ms * T
// (T in ns), exactly, in 128-bit arithmetic.
control PortResumeDecision(in bit<32>    queue_bytes,
                           in bit<32>    qth_bytes,
                           in bit<32>    rx_bytes,
                           in bit<32>    rate_bytes_per_ms,
                           in time_ns_t  pause_duration_ns,
                           out bit<1>    undetermined,
                           out bit<8>    event) {
    apply {
        if (queue_bytes < qth_bytes) {
            undetermined = PORT_DETERMINED;
            event = PORT_EVENT_RESUME_NOT_CONGESTED;
        } else if ((bit<128>)rx_bytes * NS_PER_MS >
                   (bit<128>)rate_bytes_per_ms * (bit<128>)pause_duration_ns) {
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
