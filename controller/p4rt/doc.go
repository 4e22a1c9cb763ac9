// Package p4rt is fastcnp's P4Runtime client: it connects to a P4Runtime
// server (BMv2 simple_switch_grpc, Stratum, or fastcnp's software switch),
// takes part in primary/backup arbitration, pushes the forwarding pipeline,
// writes and reads entities by P4Info name, and exchanges PacketIn, PacketOut
// and digests on the stream channel.
//
// The pieces:
//
//   - Info indexes a P4Info by name (fully qualified names and unique
//     aliases; an unknown or ambiguous name is an error, never ID 0) and
//     builds entities whose values are encoded as canonical P4Runtime
//     bytestrings with width checks.
//   - Client owns one gRPC connection and one StreamChannel. It reconnects
//     with bounded, jittered exponential backoff, re-arbitrates, and reports
//     status changes as Events; ReconcileNeeded tells the caller, without
//     ever dropping the news, that it became primary again (after a
//     reconnection or a promotion) and must reconcile its state with the
//     switch. A gRPC keepalive (DefaultKeepalive) notices links that die
//     silently.
//   - Client.Write batches updates into chunks and decodes per-update errors
//     into a *WriteError; Client.Read streams entities back, wildcards
//     included.
//
// See docs/p4runtime-client.md for the error model and how to use the client
// against BMv2 and Stratum.
package p4rt
