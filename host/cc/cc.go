// Package cc holds fastcnp's per-flow sender congestion-control algorithms
// (DCQCN, DCQCN with the fastcnp switch window, TIMELY, DCTCP, HPCC) behind
// one interface, Algorithm, and the DCQCN notification point (NP) used by
// receivers.
//
// The package is pure: no I/O, no goroutines, no wall clock. Time is always
// an argument, a time.Duration measured from an epoch the runtime chooses
// (process start for the host agent, 0 in the trace tests). Events given to
// one Algorithm must carry non-decreasing times; an event that goes back in
// time is rejected with ErrTimeBackwards and changes nothing.
//
// Units everywhere: rates in bits per second (float64), sizes and windows in
// bytes (int64), times and periods as time.Duration (nanoseconds).
//
// Hot-path methods (OnSend, OnAck, OnCNP, OnTimer and the getters) do not
// allocate; only the error paths for bad input do.
//
// See docs/host-cc.md for every rule, its formula and where it is coded.
package cc

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// NoWindowCap is the Window value of an algorithm that does not limit bytes
// in flight. It is the largest int64, so "inflight+size <= Window()" needs no
// special case in the sender.
const NoWindowCap int64 = math.MaxInt64

// NoTimer is the NextTimer value when the algorithm needs no timer call.
const NoTimer time.Duration = math.MaxInt64

// MaxTime is the latest event time accepted (about 146 years after the
// epoch); it keeps deadline arithmetic far from overflow.
const MaxTime time.Duration = 1 << 62

// MaxEventBytes bounds the byte count of one event (1 TiB). Larger values
// are surely a bug in the caller and would risk counter overflow.
const MaxEventBytes int64 = 1 << 40

// Errors returned (wrapped, with context) by this package. Test with errors.Is.
var (
	// ErrBadEvent reports an event with an invalid field (negative size,
	// negative RTT, NaN rate in an INT record, ...).
	ErrBadEvent = errors.New("cc: bad event")
	// ErrTimeBackwards reports an event older than one already processed.
	ErrTimeBackwards = errors.New("cc: time went backwards")
	// ErrBadParams reports an invalid configuration value.
	ErrBadParams = errors.New("cc: bad parameters")
	// ErrUnknownAlgorithm reports a name New does not know.
	ErrUnknownAlgorithm = errors.New("cc: unknown algorithm")
	// ErrUnknownParamSet reports a parameter-set name that does not exist.
	ErrUnknownParamSet = errors.New("cc: unknown parameter set")
)

// Algorithm is a per-flow sender congestion-control algorithm. The runtime
// (the host agent, or a test) feeds it events and reads back three outputs:
// the pacing rate, the cap on bytes in flight, and when to call OnTimer next.
//
// Contract:
//   - One Algorithm per flow; not safe for concurrent use (the runtime
//     serialises a flow's events, e.g. under the flow's lock).
//   - Event times never decrease (equal times are fine). A bad event returns
//     an error wrapping ErrBadEvent or ErrTimeBackwards and leaves the state
//     unchanged.
//   - Timers that are due at or before an event's time are run before the
//     event itself, so a late OnTimer call loses nothing: the algorithm
//     catches up on every period it missed, in order.
//   - Outputs may change after any event, including OnSend (byte counters).
type Algorithm interface {
	// Name returns the registry name of the algorithm, e.g. "dcqcn".
	Name() string
	// OnSend reports that the flow put a packet (or segment) on the wire.
	OnSend(ev Send) error
	// OnAck reports an acknowledgement for the flow.
	OnAck(ev Ack) error
	// OnCNP reports a congestion notification packet for the flow.
	OnCNP(ev CNP) error
	// OnTimer runs the timers due at or before now. Call it at NextTimer();
	// calling it early or late is harmless.
	OnTimer(now time.Duration) error
	// Rate returns the current sending rate in bits/s (always > 0).
	Rate() float64
	// Window returns the cap on bytes in flight, or NoWindowCap.
	Window() int64
	// NextTimer returns when OnTimer should next be called, or NoTimer.
	NextTimer() time.Duration
}

// Send is the "packet sent" event.
type Send struct {
	// Now is the time the packet left the sender.
	Now time.Duration
	// Bytes is the packet's size on the wire, >= 0.
	Bytes int64
}

// Ack is the "acknowledgement received" event. Algorithms must not keep Hops
// after the call returns: the runtime reuses its backing array.
type Ack struct {
	// Now is the time the ACK arrived.
	Now time.Duration
	// Bytes is the number of bytes newly acknowledged, >= 0.
	Bytes int64
	// RTT is the round-trip-time sample carried by this ACK, or 0 for none.
	RTT time.Duration
	// ECE is the ECN echo flag (a data packet of this flow was CE-marked).
	ECE bool
	// Hops are the in-band telemetry records, one per switch hop, in path
	// order; nil when the path does not do INT.
	Hops []INTHop
}

// INTHop is one switch's in-band telemetry record (the HPCC format).
type INTHop struct {
	// TS is the egress timestamp at the switch.
	TS time.Duration
	// TxBytes is the egress port's cumulative transmitted byte counter; it
	// may wrap, so users take differences modulo 2^64.
	TxBytes uint64
	// QLen is the egress queue length in bytes, >= 0.
	QLen int64
	// LinkRate is the egress link rate in bits/s, > 0.
	LinkRate float64
}

// CNP is the "congestion notification received" event.
type CNP struct {
	// Now is the time the CNP arrived.
	Now time.Duration
	// Ext is the fastcnp extension (docs/wire-formats.md); the zero value
	// is a plain CNP, as made by a receiver's NP or a commodity switch.
	Ext CNPExt
}

// CNPExt is the decoded fastcnp CNP extension.
type CNPExt struct {
	// WindowValid says Window carries a window (flag bit0).
	WindowValid bool
	// BySwitch says a switch made the CNP (flag bit1), not a receiver.
	BySwitch bool
	// SwitchID identifies the congestion-point switch.
	SwitchID uint16
	// Port is the congested egress port at that switch.
	Port uint16
	// Window is the explicit window Win in bytes; 0 means none, as on the
	// wire, even with WindowValid set. Must be >= 0.
	Window int64
	// QueueBytes is the port's queue length in bytes when the CNP was made.
	QueueBytes int64
}

// checkTime rejects times outside [0, MaxTime] and times before last.
func checkTime(what string, now, last time.Duration) error {
	if now < 0 || now > MaxTime {
		return fmt.Errorf("%s: time %v is out of range [0, %v]: %w", what, now, MaxTime, ErrBadEvent)
	}
	if now < last {
		return fmt.Errorf("%s at %v, after an event at %v: %w", what, now, last, ErrTimeBackwards)
	}
	return nil
}

// checkBytes rejects negative or absurd byte counts.
func checkBytes(what string, n int64) error {
	if n < 0 || n > MaxEventBytes {
		return fmt.Errorf("%s: %d bytes is out of range [0, %d]: %w", what, n, MaxEventBytes, ErrBadEvent)
	}
	return nil
}

// validateSend checks a Send event's fields (not its time order).
func validateSend(ev Send) error {
	return checkBytes("send", ev.Bytes)
}

// validateAck checks an Ack event's fields (not its time order). Every
// algorithm calls it, so all share one contract for INT records too.
func validateAck(ev Ack) error {
	if err := checkBytes("ack", ev.Bytes); err != nil {
		return err
	}
	if ev.RTT < 0 {
		return fmt.Errorf("ack: RTT sample %v is negative: %w", ev.RTT, ErrBadEvent)
	}
	for i := range ev.Hops {
		h := &ev.Hops[i]
		if h.QLen < 0 {
			return fmt.Errorf("ack: INT hop %d: queue length %d is negative: %w", i, h.QLen, ErrBadEvent)
		}
		if !(h.LinkRate > 0) || math.IsInf(h.LinkRate, 0) {
			return fmt.Errorf("ack: INT hop %d: link rate %v must be finite and > 0: %w", i, h.LinkRate, ErrBadEvent)
		}
	}
	return nil
}

// validateCNP checks a CNP event's fields (not its time order).
func validateCNP(ev CNP) error {
	if ev.Ext.Window < 0 || ev.Ext.Window > MaxEventBytes {
		return fmt.Errorf("cnp: window %d bytes is out of range [0, %d]: %w", ev.Ext.Window, MaxEventBytes, ErrBadEvent)
	}
	if ev.Ext.QueueBytes < 0 {
		return fmt.Errorf("cnp: queued bytes %d is negative: %w", ev.Ext.QueueBytes, ErrBadEvent)
	}
	return nil
}
