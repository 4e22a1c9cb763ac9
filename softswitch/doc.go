// Package softswitch is fastcnp-switch's real-time runtime: it drives the Go
// reference pipeline (model/pipeline) and the lossless traffic manager (model/tm)
// with the wall clock, on real Linux interfaces (afpacket, AF_PACKET), and serves
// P4Runtime (softswitch/p4rtserver) for the controller. It is the only fastcnp target
// with real PFC on real packets.
//
// Goroutines (fit for 2 cores): one RX goroutine per port reads batches of frames
// and runs them through ingress and into the TM; one scheduler goroutine sleeps
// until the next event (departure, timer, link-delay release), dequeues, and writes
// the frames to the sockets; the P4Runtime server and the optional HTTP debug
// endpoint run their own. One mutex serialises the pipeline and the TM; whoever
// holds it first brings the data plane up to the current time (advance), so every
// TM and pipeline call sees non-decreasing time and departures keep their exact
// shaped times even when a goroutine wakes late.
//
// Per received frame: PFC / PAUSE -> tm.ReceivePFC / ReceivePause and
// pipeline.Ingress (the fastcnp port state machine); otherwise pipeline.Ingress ->
// to-CPU (packet-in to the P4Runtime server) or forward -> tm.Enqueue with the
// pipeline's priority (pipeline.OnEnqueue in the TM's enqueue hook); a multicast
// (an L2 flood) is one copy per replica the pipeline lists, each enqueued on its
// port like a forwarded frame (the packet replication engine). PFC XOFF/XON
// and refreshes from the TM are built with wire.BuildPFC and written at once out of
// the ingress port they concern, by the goroutine that made them, bypassing the
// egress queues, the scheduler and the delay line. At each departure the
// dequeue hook runs pipeline.Egress (ECN CE mark, switch CNP); a switch CNP is
// enqueued after the TM's Dequeue returns. Departures wait in a per-port
// tm.DelayLine for the link delay and are then written to the socket by the
// scheduler.
//
// Input (input.go): frames wait in each port's socket receive queue (32 MiB) until
// its RX goroutine reads them. After a read that filled its batch it measures the
// queue (afpacket.Port.Backlog); above a quarter of the buffer it holds the port
// (tm.SetInputHold: PFC XOFF for the lossless priorities out of that port), below an
// eighth it releases it. A lossless frame the TM has no room for (tm.Admits) is kept,
// and the port is not read until it is in, so that the frames behind it wait in the
// queue rather than overrun the headroom. Kernel drops at the queue are counted
// (input_drops, and the P4 counter dropped[port]).
//
// See docs/target.md for the command, flags, P4Runtime support and limits.
package softswitch
