// fastcnp (v1model): the decisions of the algorithm that use run-time products
// (64-bit arithmetic BMv2 has; Tofino has no multiplier: tna/fastcnp.p4 takes these
// decisions in the log domain, docs/tofino.md). No state, no extern: the v1model
// program does the register I/O around them.

#ifndef _FASTCNP_V1MODEL_DECISIONS_P4_
#define _FASTCNP_V1MODEL_DECISIONS_P4_

#include "../include/headers.p4"
#include "defines.p4"

// floor(ps / 1000) for every ps < 2^48 (v1model/defines.p4 PS_TO_NS_MAGIC_*): the 97-bit
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

// The two port-state decisions below are branch-free macros (assignments with
// ?: only, no if, no control call), not controls: the v1model program evaluates
// them between the register reads and writes of ONE straight-line block, which
// p4c's BMv2 back end turns into one action, the unit BMv2 locks registers for
// (docs/dataplane.md "Registers shared by ingress and egress"). Arguments are
// variables or side-effect-free expressions; the outputs are variables the caller
// declared. A TNA program evaluates the same expressions inside its RegisterActions.

// Spec 01 event 3, docs/dataplane.md Ingress step 4 "RESUME(p)": what a resume
// finds. rx_bytes > C*T is evaluated as rx_bytes * 10^6 > rate_bytes_per_ms * T
// (T in ns), exactly, in 64-bit arithmetic: the left side is below 2^52; with
// T = t_hi * 2^24 + t_lo the right side is (rate * t_hi) * 2^24 + rate * t_lo,
// which is at least 2^52 (never beaten) when rate * t_hi >= 2^28 and otherwise
// below 2^57. p4src/arith_test.go checks this against exact arithmetic.
//   QUEUE, QTH, RX, RATE: bit<32>; T: a bit<48> variable (the pause duration, ns);
//   MODE: the port mode (bit<3>): in PORT_MODE_FASTCNP_NO_PFC_STATE a queue at or
//   above Qth resumes congested, never undetermined (the ablation)
//   BEATS (bool): rx_bytes > C*T; UNDET (bit<1>): the new port state;
//   EVENT (bit<8>): RESUME_NOT_CONGESTED, RESUME_CONGESTED or RESUME_UNDETERMINED.
#define PORT_RESUME_DECISION(QUEUE, QTH, RX, RATE, T, MODE, BEATS, UNDET, EVENT)            \
    BEATS = (MODE) == PORT_MODE_FASTCNP_NO_PFC_STATE ||                                     \
            ((bit<64>)(RATE) * (bit<64>)T[47:24] < RATE_T_HI_LIMIT &&                       \
             (bit<64>)(RX) * NS_PER_MS >                                                    \
                 (((bit<64>)(RATE) * (bit<64>)T[47:24]) << 24) + (bit<64>)(RATE) * (bit<64>)T[23:0]); \
    UNDET = ((QUEUE) >= (QTH) && !BEATS) ? PORT_UNDETERMINED : PORT_DETERMINED;             \
    EVENT = (QUEUE) < (QTH) ? PORT_EVENT_RESUME_NOT_CONGESTED :                             \
            (BEATS ? PORT_EVENT_RESUME_CONGESTED : PORT_EVENT_RESUME_UNDETERMINED);

// Spec 01 event 4, docs/dataplane.md Egress step 3 (mode fastcnp): the port
// state machine on a dequeue. Mode fastcnp-no-pfc-state passes UNDET =
// PORT_DETERMINED: every queue at or above Qth is congested.
//   UNDET (bit<1>), NOW, CHECK_AT (bit<48>), QUEUE, QTH, SNAP (bit<32>): inputs
//   HOLD (bool)  : undetermined and the check time has not come: no CNP, no mark
//   CONG (bool)  : send a switch CNP (or mark) for this packet's flow
//   REARM (bool) : stay undetermined, q_snapshot = qlen, check_at = now + Tcheck
//   EVENT (bit<8>): CHECK_DRAINED, CHECK_CONGESTED or NONE
//   NEXT (bit<1>): the state to store
#define PORT_CHECK_DECISION(UNDET, NOW, CHECK_AT, QUEUE, QTH, SNAP, HOLD, CONG, REARM, EVENT, NEXT) \
    HOLD  = (UNDET) == PORT_UNDETERMINED && (NOW) < (CHECK_AT);                             \
    CONG  = ((UNDET) == PORT_DETERMINED && (QUEUE) >= (QTH)) ||                             \
            ((UNDET) == PORT_UNDETERMINED && !HOLD && (QUEUE) >= (QTH) && (QUEUE) > (SNAP)); \
    REARM = (UNDET) == PORT_UNDETERMINED && !HOLD && (QUEUE) >= (QTH) && (QUEUE) <= (SNAP); \
    EVENT = ((UNDET) == PORT_DETERMINED || HOLD) ? PORT_EVENT_NONE :                        \
            ((QUEUE) < (QTH) ? PORT_EVENT_CHECK_DRAINED :                                   \
             ((QUEUE) > (SNAP) ? PORT_EVENT_CHECK_CONGESTED : PORT_EVENT_NONE));            \
    NEXT  = EVENT == PORT_EVENT_NONE ? (UNDET) : PORT_DETERMINED;

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

#endif  // _FASTCNP_V1MODEL_DECISIONS_P4_
