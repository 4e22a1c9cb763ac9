// Package tm is fastcnp's lossless traffic manager: per egress port 8 priority queues,
// a strict-priority (optionally DWRR for lossy classes) scheduler, a shaper at the
// port's link rate, a shared buffer with per ingress (port, priority) accounting,
// PFC generation (static or dynamic XOFF, XON, headroom, refresh) and reception
// (802.1Qbb per priority and 802.3x link level).
//
// The package is pure: no I/O, no goroutines, no wall clock. Every entry point takes
// now (int64 ns) from the caller, so the same model runs under the software switch
// (softswitch: wall clock, real frames), under the packet-level simulator fastcnp-sim
// (sim/network: virtual time, one TM per switch) and under its own tests
// (incast_test.go is a small discrete-event loop). Time must not go backwards between
// calls.
//
// Link propagation delay is not applied by the TM: every departure reports
// TxStart, TxEnd (last bit on the wire) and DeliverAt = TxEnd + PropDelayNs, the time the
// last bit reaches the peer. An event-driven caller (the simulator, the incast test) schedules the
// arrival at DeliverAt; the real-time runtime holds a data frame in a delay line until
// then (AF_PACKET on veth has no delay of its own) and sends PFC frames at once. PFC
// frames the TM asks to send carry SendAt and DeliverAt the same way.
//
// A TM is not safe for concurrent use: the runtime serialises calls.
// See docs/traffic-manager.md for the model, the formulas and the limits.
package tm
