// Package p4rtserver is the P4Runtime server of fastcnp-switch: it serves
// p4.v1.P4Runtime (spec v1.5) for one device around a DataPlane, the Go reference
// pipeline (model/pipeline) plus packet I/O.
//
// What it implements, the error codes it returns and its limits are in
// docs/target-p4runtime.md. In short: arbitration per role with election IDs as the
// spec has it (the highest ever seen is primary; after the primary leaves, none until
// a client sends at least that; Options.PromoteHighestBackup gives BMv2's promotion
// of the highest backup instead), with gRPC keepalive to end dead controllers'
// streams; SetForwardingPipelineConfig accepts only the P4Info
// of the program the pipeline runs (CheckP4Info); Write applies updates in order
// (CONTINUE_ON_ERROR, or all or nothing with ROLLBACK_ON_ERROR / DATAPLANE_ATOMIC) and
// reports one p4.v1.Error per update; Read supports the spec's wildcards;
// StreamChannel carries packet-out, packet-in and digest lists to the primary.
package p4rtserver
