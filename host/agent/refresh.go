package agent

import (
	"fmt"
	"time"
)

// DefaultAnnounceInterval is how often a sender re-announces its
// connections. fastcnpd removes a connection that was not announced for
// announce.idle_timeout (60 s by default), so a connection that lives
// longer than that must be announced again while it lives: every 10 s
// leaves room for five lost refreshes in the default idle period (the
// announcements travel on a lossy priority). Keep it below a third of the
// controller's idle_timeout.
const DefaultAnnounceInterval = 10 * time.Second

// RefreshSchedule says when a sender re-announces its connections (an
// "up" announcement for a connection the controller already knows is a
// refresh: it resets the connection's idle timer). Refreshes fall on the
// multiples of the interval after the start, so the gap between two of them
// never exceeds the interval by more than the caller's wake-up latency,
// and a caller that wakes late sends one refresh, not a burst of the ones
// it missed. It is pure: time is an argument.
type RefreshSchedule struct {
	interval, next time.Duration
}

// NewRefreshSchedule returns the schedule of a sender that announced its
// connections at start: the first refresh is due at start + interval.
func NewRefreshSchedule(interval, start time.Duration) (*RefreshSchedule, error) {
	if interval <= 0 {
		return nil, fmt.Errorf("announce interval %v: must be positive: %w", interval, ErrConfig)
	}
	return &RefreshSchedule{interval: interval, next: start + interval}, nil
}

// Interval returns the refresh period.
func (r *RefreshSchedule) Interval() time.Duration { return r.interval }

// Next returns when the next refresh is due.
func (r *RefreshSchedule) Next() time.Duration { return r.next }

// Due reports whether a refresh is due at now. When it is, the caller must
// send it: the next one is then due at the first multiple of the interval
// (counted from the start) after now.
func (r *RefreshSchedule) Due(now time.Duration) bool {
	if now < r.next {
		return false
	}
	r.next += ((now-r.next)/r.interval + 1) * r.interval
	return true
}
