package agent

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// TestRefreshSchedule: a long-running connection is re-announced at every
// multiple of the interval after its first announcement, whatever the
// caller's wake-up pattern; a late wake-up sends one refresh, not the
// missed ones.
func TestRefreshSchedule(t *testing.T) {
	s := time.Second
	tests := []struct {
		name     string
		interval time.Duration
		start    time.Duration
		wakes    []time.Duration // the caller's wake-ups, in order
		want     []time.Duration // the wake-ups at which a refresh is due
		next     time.Duration   // Next() after the last wake-up
	}{
		{"on time", 10 * s, 0, []time.Duration{5 * s, 10 * s, 15 * s, 20 * s, 30 * s},
			[]time.Duration{10 * s, 20 * s, 30 * s}, 40 * s},
		{"start offset", 10 * s, 3 * s, []time.Duration{12 * s, 13 * s, 22 * s, 23 * s},
			[]time.Duration{13 * s, 23 * s}, 33 * s},
		{"late wake-up: one refresh, back on the grid", 10 * s, 0, []time.Duration{27 * s, 29 * s, 30 * s},
			[]time.Duration{27 * s, 30 * s}, 40 * s},
		{"same instant twice", 10 * s, 0, []time.Duration{10 * s, 10 * s}, []time.Duration{10 * s}, 20 * s},
		{"before the first", 10 * s, 0, []time.Duration{0, 9 * s}, nil, 10 * s},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRefreshSchedule(tt.interval, tt.start)
			if err != nil {
				t.Fatal(err)
			}
			var got []time.Duration
			for _, w := range tt.wakes {
				if r.Due(w) {
					got = append(got, w)
				}
			}
			if !slices.Equal(got, tt.want) || r.Next() != tt.next {
				t.Errorf("refreshes at %v, next %v; want %v, next %v", got, r.Next(), tt.want, tt.next)
			}
		})
	}

	// A flow that runs for 10 idle periods of a controller with a 3 s
	// idle_timeout, refreshed every second by a caller that wakes every
	// 7 ms: one refresh per interval, never a gap above the interval plus
	// one wake-up step, never two within an interval.
	r, err := NewRefreshSchedule(time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	const step = 7 * time.Millisecond
	last := time.Duration(0)
	n := 0
	for now := time.Duration(0); now < 30*s+step; now += step {
		if !r.Due(now) {
			continue
		}
		n++
		if gap := now - last; gap > time.Second+step || gap < time.Second-step {
			t.Fatalf("refresh %d at %v, %v after the previous one", n, now, gap)
		}
		last = now
	}
	if n != 30 {
		t.Errorf("%d refreshes in 30 s at 1 s, want 30", n)
	}

	for _, bad := range []time.Duration{0, -time.Second} {
		if _, err := NewRefreshSchedule(bad, 0); !errors.Is(err, ErrConfig) {
			t.Errorf("interval %v: %v, want ErrConfig", bad, err)
		}
	}
}
