// Package conformance is the target-neutral conformance suite of the fastcnp data
// plane (docs/dataplane.md): a text format for test vectors (control-plane writes by
// P4Info name, timed packet events built with a small packet DSL, expected packets
// with don't-care masks, packet-ins, digests, counters and registers), its parser,
// and the runner for the Go reference pipeline (RunGo). The vectors live in
// vectors/; the BMv2 runner is package conformance/bmv2. docs/conformance.md
// describes the format, the tags and every vector.
package conformance
