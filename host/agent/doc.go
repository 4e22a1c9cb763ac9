// Package agent is the pure part of fastcnp's RoCEv2 host agent
// (cmd/fastcnp-host): the per-connection transport state machines and the
// frame codec, with no I/O, no goroutines and no wall clock. Time is an
// argument (a time.Duration since an epoch the runtime picks), as in
// host/cc.
//
//   - Sender: RC-style reliable send of a byte stream cut into RC SEND Only
//     packets (one PSN each). It requests an ACK (BTH A bit) every AckEvery
//     packets and on the last packet of every message, takes an RTT sample
//     per cumulative ACK from its own send time of that PSN (Karn's rule:
//     never from a retransmitted PSN), caps bytes in flight at the
//     algorithm's Window(), paces departures at the algorithm's Rate() with
//     a small token bucket, feeds CNPs to the algorithm and goes back N on
//     a NAK (PSN sequence error) or a retransmission timeout.
//   - Receiver: in-order acceptance by PSN, coalesced RC ACKs (opcode 0x11
//     with AETH) when the sender asks for one, one NAK per sequence error,
//     and the DCQCN notification point: a CE-marked arrival makes a CNP to
//     the sender's QP at most once per cnpInterval (host/cc NPFlow).
//   - INC: deterministic worker vectors, their expected element-wise sum,
//     and a checker for switch RESULT packets.
//   - Codec: builds and classifies the frames (docs/wire-formats.md).
//
// The live runtime around these (one AF_PACKET port, pacing loop, receive
// loop, statistics) is package host/agent/live. See docs/host-agent.md.
package agent
