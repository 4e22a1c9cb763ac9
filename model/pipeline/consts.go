// Package pipeline is the Go reference model of the fastcnp P4 data plane
// (docs/dataplane.md): the same tables, actions, registers, counters, digests and
// per-packet algorithm as p4src/, addressed by the same P4Info IDs, so that a P4Runtime
// server (softswitch/p4rtserver) can sit on top of it and fastcnp-switch (softswitch)
// and the conformance suite can drive it.
//
// The package is pure: no goroutines, no sockets, no wall clock. Time is an argument
// (int64 ns from an arbitrary origin, e.g. switch start; the data plane keeps it modulo
// 2^48 like the 48-bit P4 timestamp). A Pipeline is not safe for concurrent use: the
// caller serialises control-plane and data-plane calls.
//
// Control plane (P4Runtime-shaped, by ID; errors wrap ErrInvalidArgument,
// ErrAlreadyExists, ErrNotFound, ErrResourceExhausted, ErrPermissionDenied or
// ErrFailedPrecondition):
//   - tables: InsertEntry, ModifyEntry, DeleteEntry, ReadEntry, ReadEntries (table 0 =
//     all), EntryCount; default actions: SetDefaultAction, ResetDefaultAction,
//     DefaultAction. Values are uint64 (ValueFromBytes / ValueToBytes convert P4Runtime
//     bytestrings); match fields and params are addressed by their P4Info IDs.
//   - action profiles (the ECMP selector next_hop_selector): InsertProfileMember,
//     ModifyProfileMember, DeleteProfileMember, ReadProfileMembers,
//     InsertProfileGroup, ModifyProfileGroup, DeleteProfileGroup, ReadProfileGroups;
//     entries of its table run a member, a group or a one-shot action set
//     (TableEntry.MemberID, GroupID, OneShot).
//   - registers and counters by index (index < 0 = every cell): ReadRegister,
//     WriteRegister, ReadCounter, WriteCounter. The counters a traffic manager
//     fills (queue_dropped, pfc_xoff_sent, pfc_xon_sent) are fed by the target:
//     CountQueueDrop, CountPFCSent.
//   - parser value set: SetValueSet, ValueSet. Clone sessions: InsertCloneSession,
//     ModifyCloneSession, DeleteCloneSession, ReadCloneSession. Multicast groups:
//     InsertMulticastGroup, ModifyMulticastGroup, DeleteMulticastGroup,
//     ReadMulticastGroup.
//   - digests: SetDigestConfig, DeleteDigestConfig, ReadDigestConfig, PollDigestList,
//     AckDigestList, DigestDrops, DigestsPending. Reset clears everything.
//
// ProgramSchema describes every object (IDs, names, widths, match kinds, sizes); it is
// cross-checked against p4src/fastcnp.p4info.txtpb by the tests.
//
// Data plane: a packet goes through Ingress (parser, ingress steps 1-9), then OnEnqueue
// when the traffic manager queues it (step 10), then Egress when it is dequeued. A
// bridged frame sent to a multicast group (VerdictMulticast) is one such packet per
// replica, the caller making the copies (the packet replication engine). Egress
// may hand back a switch CNP that already went through Ingress (like BMv2's
// recirculation); the caller enqueues it like any other packet (OnEnqueue, then Egress
// at its dequeue). None of them allocates.
//
// Profiles (Options.Profile): the pipeline models the v1model program by default
// (ProfileV1Model), or the TNA program of p4src/tna compiled for Tofino 1 or 2
// (ProfileTofino1, ProfileTofino2; docs/tofino.md), whose data-plane state differs: the
// queue depth in traffic-manager cells, pauses framed by PFC frames or inferred from
// departure gaps, departure shares, 32-bit times. The control plane is the same.
package pipeline
