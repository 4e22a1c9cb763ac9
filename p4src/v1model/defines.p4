// fastcnp (v1model): the constants only the v1model program uses (BMv2 glue and
// its 64-bit arithmetic). Everything shared is in ../include/defines.p4.

#ifndef _FASTCNP_V1MODEL_DEFINES_P4_
#define _FASTCNP_V1MODEL_DEFINES_P4_

const bit<32> DIGEST_RECEIVER    = 1;     // v1model digest receiver id (ignored by BMv2's P4Runtime server)

// Field lists of clone/recirculate/resubmit_preserving_field_list. Macros, not
// constants: they appear in @field_list annotations, where p4c wants literals.
#define FL_EGRESS_CLONE 1   // data packet (egress) -> its E2E clone
#define FL_RECIRCULATE  2   // E2E clone (egress) -> recirculated packet (ingress)
#define FL_RESUBMIT     3   // recirculated packet -> its resubmit (second digest)

// BMv2 time and the 64-bit replacements of wide products (decisions.p4).
const bit<48> NS_PER_US          = 1000;    // BMv2 timestamps count microseconds
// No run-time arithmetic in the program is wider than 64 bits (decisions.p4), so
// that neither p4c's BMv2 back end nor a later TNA program has to handle it.
// Exact floor(x / 1000) for every x < 2^48 without a division (BMv2 and Tofino
// have none): floor(x / 1000) == (x * M) >> 58 with M = ceil(2^58 / 1000) =
// 288230376151712, since M*1000 - 2^58 = 256 <= 2^(58-48) keeps the error below
// one unit for all 48-bit x (Granlund-Montgomery). The 97-bit product x * M is
// formed from 24-bit limbs (decisions.p4 ps_to_ns): M = HI * 2^24 + LO.
const bit<64> PS_TO_NS_MAGIC_HI  = 17179869;
const bit<64> PS_TO_NS_MAGIC_LO  = 3087008;
// rx_bytes > C*T is evaluated as rx_bytes * 10^6 > rate_bytes_per_ms * T_ns
// (decisions.p4 PORT_RESUME_DECISION); the left side is below 2^52.
const bit<64> NS_PER_MS          = 1000000;
// rate_bytes_per_ms * (T_ns >> 24) at or above 2^28 puts the right side at or
// above 2^52, beyond any left side.
const bit<64> RATE_T_HI_LIMIT    = 0x10000000;

// ---------------------------------------------------------------------------
// v1model packet instance types (BMv2 simple_switch.md).
// ---------------------------------------------------------------------------
const bit<32> PKT_INSTANCE_TYPE_NORMAL       = 0;
const bit<32> PKT_INSTANCE_TYPE_EGRESS_CLONE = 2;
const bit<32> PKT_INSTANCE_TYPE_RECIRC       = 4;
const bit<32> PKT_INSTANCE_TYPE_RESUBMIT     = 6;

#endif  // _FASTCNP_V1MODEL_DEFINES_P4_
