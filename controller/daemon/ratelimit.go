package daemon

import (
	"sync"
	"time"
)

// rateLimiter is a token bucket per caller (GCRA form): each key may make
// burst calls at once, then one every `every`. Time comes from now, so
// tests drive it with a fake clock.
type rateLimiter struct {
	now   func() time.Time
	every time.Duration
	burst int
	// maxKeys bounds the callers remembered; beyond it, callers whose
	// bucket is full again are forgotten, and if that is not enough the
	// newcomers share one bucket (otherKey).
	maxKeys int

	mu sync.Mutex
	// tat is each key's theoretical arrival time: the bucket is full
	// when tat <= now, and empty when tat > now + (burst-1)*every.
	tat map[string]time.Time
}

// otherKey is the shared bucket of callers beyond maxKeys.
const otherKey = "(other callers)"

func newRateLimiter(now func() time.Time, every time.Duration, burst, maxKeys int) *rateLimiter {
	if now == nil {
		now = time.Now
	}
	return &rateLimiter{now: now, every: every, burst: burst, maxKeys: maxKeys, tat: map[string]time.Time{}}
}

// allow takes a token from key's bucket; when it is empty, it returns false
// and how long until the next token.
func (l *rateLimiter) allow(key string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if _, known := l.tat[key]; !known && len(l.tat) >= l.maxKeys {
		for k, t := range l.tat {
			if !t.After(now) {
				delete(l.tat, k)
			}
		}
		if len(l.tat) >= l.maxKeys {
			key = otherKey
		}
	}
	tat := l.tat[key]
	if tat.Before(now) {
		tat = now
	}
	if wait := tat.Sub(now) - time.Duration(l.burst-1)*l.every; wait > 0 {
		return false, wait
	}
	l.tat[key] = tat.Add(l.every)
	return true, 0
}
