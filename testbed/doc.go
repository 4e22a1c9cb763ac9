// Package testbed runs fastcnp topologies on real packets: it reads a
// topology description (JSON, in the style of p4lang/tutorials'
// topology.json), builds it from network namespaces and veth pairs
// (internal/netns), starts one fastcnp-switch per switch, the fastcnpd
// controller with a configuration generated from the topology, and one
// fastcnp-host agent per host, runs the topology's flows, and collects what
// happened into a Result: per-flow throughput against the flow's max-min
// fair share (computed analytically from the topology by fairshare.MaxMinFair in model/fairshare), and
// the switch counters (PAUSE frames, CNPs, ECN marks, drops).
//
// The pure parts (topology parsing and validation, routing, the max-min
// fair share, the fastcnpd configuration, the statistics) have no I/O and
// are tested everywhere; Run needs root.
//
// Layout of a built topology: every host is a namespace with one interface
// eth0; all switches share one "fabric" namespace, in which switch s's port
// p is the interface "<s>-p<p>", its P4Runtime server listens on the
// fabric namespace's loopback, and fastcnpd runs (so that nothing but the
// namespaces the testbed creates is touched). See docs/testbed.md.
package testbed
