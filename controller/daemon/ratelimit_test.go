package daemon

import (
	"fmt"
	"testing"
	"time"
)

// TestRateLimiter: burst calls at once, then one per period; keys are
// independent; beyond maxKeys, full buckets are forgotten and newcomers
// share one bucket. Fake clock.
func TestRateLimiter(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1e9, 0)}
	l := newRateLimiter(clk.Now, 2*time.Second, 3, 2)
	for i := 0; i < 3; i++ {
		if ok, _ := l.allow("a"); !ok {
			t.Fatalf("call %d of the burst refused", i+1)
		}
	}
	if ok, wait := l.allow("a"); ok || wait != 2*time.Second {
		t.Fatalf("4th call: %v, wait %v; want refused, 2s", ok, wait)
	}
	if ok, _ := l.allow("b"); !ok {
		t.Fatal("another key refused")
	}
	// Two keys known: a third shares the overflow bucket while a and b
	// are not full again.
	for i := 0; i < 3; i++ {
		if ok, _ := l.allow(fmt.Sprintf("c%d", i)); !ok {
			t.Fatalf("newcomer %d refused: the shared bucket has a burst of 3", i)
		}
	}
	if ok, _ := l.allow("c9"); ok {
		t.Fatal("newcomers beyond maxKeys got more than one shared burst")
	}
	clk.Advance(6 * time.Second) // every bucket full again: forgotten
	if ok, _ := l.allow("d"); !ok {
		t.Fatal("a newcomer after the buckets refilled was refused")
	}
	if len(l.tat) > 2 {
		t.Errorf("%d keys remembered; want at most 2", len(l.tat))
	}
}
