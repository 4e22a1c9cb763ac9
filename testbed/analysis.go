package testbed

import (
	"fmt"
	"math"
	"time"
)

// LinkUse is the physical sanity check of one direction of a link: the
// payload the flows crossing it delivered cannot exceed what the link
// carries in the time they had. A violation means the measurement (a
// clock, a counter, a rate) is wrong, not the network.
type LinkUse struct {
	// Link names the direction ("s1-p9>r").
	Link string `json:"link"`
	// CapacityBps is the link's payload capacity (Topology.PayloadRate).
	CapacityBps float64 `json:"capacity_bps"`
	// Bytes is the payload the receivers of the flows crossing it accepted.
	Bytes int64 `json:"bytes"`
	// SpanMs runs from the earliest due start of those flows (no byte is
	// sent before it) to the latest last arrival at their receivers (every
	// byte crossed the link before it), on the wall clock the agents share.
	SpanMs float64 `json:"span_ms"`
	// AllowedBytes is CapacityBps over the span plus the slack (clock
	// granularity, a pacing bucket and one frame), in bytes.
	AllowedBytes float64 `json:"allowed_bytes"`
	// Use is Bytes over CapacityBps*span (1 = the link was full all along).
	Use float64 `json:"use"`
	// Violation reports Bytes > AllowedBytes.
	Violation bool `json:"violation,omitempty"`
}

// linkFlow is one flow as the link check sees it.
type linkFlow struct {
	path        []int
	bytes       int64
	startNs     int64 // due start (wall clock)
	lastArrival int64 // last accepted packet at the receiver (wall clock)
}

// checkLinks computes LinkUse for every link that a flow with delivered
// bytes and known times crossed. slack is the time added to every span
// (clock granularity and the senders' pacing bucket), frame the bytes of
// one more packet per link. Pure: no clock, no I/O.
func checkLinks(capacity []float64, names []string, flows []linkFlow, slack time.Duration, frame int64) []LinkUse {
	type acc struct {
		bytes       int64
		first, last int64
		used        bool
	}
	a := make([]acc, len(capacity))
	for _, f := range flows {
		if f.bytes <= 0 || f.startNs == 0 || f.lastArrival == 0 {
			continue
		}
		for _, l := range f.path {
			x := &a[l]
			if !x.used {
				x.first, x.last, x.used = f.startNs, f.lastArrival, true
			}
			x.bytes += f.bytes
			x.first = min(x.first, f.startNs)
			x.last = max(x.last, f.lastArrival)
		}
	}
	var out []LinkUse
	for l, x := range a {
		if !x.used {
			continue
		}
		span := time.Duration(max(x.last-x.first, 0))
		u := LinkUse{Link: names[l], CapacityBps: capacity[l], Bytes: x.bytes, SpanMs: float64(span) / 1e6}
		u.AllowedBytes = capacity[l]/8*(span+slack).Seconds() + float64(frame)
		if full := capacity[l] / 8 * span.Seconds(); full > 0 {
			u.Use = float64(x.bytes) / full
		} else {
			u.Use = math.Inf(1)
		}
		u.Violation = float64(x.bytes) > u.AllowedBytes
		out = append(out, u)
	}
	return out
}

// Violations returns the links whose check failed.
func (r *Result) Violations() []LinkUse {
	var v []LinkUse
	for _, l := range r.Links {
		if l.Violation {
			v = append(v, l)
		}
	}
	return v
}

// CheckPhysical returns an error naming every link that delivered more
// than it can carry in the run's span (LinkUse), nil if none did.
func (r *Result) CheckPhysical() error {
	v := r.Violations()
	if len(v) == 0 {
		return nil
	}
	msg := ""
	for _, l := range v {
		msg += fmt.Sprintf("; %s: %d bytes in %.1f ms, at most %.0f at %.1f Mb/s (%.0f%% of capacity)",
			l.Link, l.Bytes, l.SpanMs, l.AllowedBytes, l.CapacityBps/1e6, 100*l.Use)
	}
	return fmt.Errorf("testbed: %s %s: physically impossible measurement%s", r.Topology, r.Mode, msg)
}

// makespan returns the time from the earliest due start to the latest
// completion of the sized flows on the common clock (ok only when every
// sized flow completed and reported both).
func makespan(flows []FlowResult) (time.Duration, bool) {
	var first, last int64
	n := 0
	for _, f := range flows {
		if !f.Sized {
			continue
		}
		if !f.Done || f.StartUnixNs == 0 || f.EndUnixNs == 0 {
			return 0, false
		}
		if n == 0 || f.StartUnixNs < first {
			first = f.StartUnixNs
		}
		last = max(last, f.EndUnixNs)
		n++
	}
	if n == 0 {
		return 0, false
	}
	return time.Duration(last - first), true
}
