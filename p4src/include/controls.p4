// fastcnp: the decisions of the algorithm, as architecture-neutral controls.
//
// These controls and functions hold no state, call no extern and use additions,
// comparisons and shifts only, so that both architectures can run them: the
// v1model program (v1model/fastcnp.p4, with its 64-bit decisions in
// v1model/decisions.p4) and the TNA program (tna/fastcnp.p4, RegisterActions).

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
