package cc

import (
	"errors"
	"testing"
	"time"
)

// Rule "NP cnpInterval": a CE-marked packet yields a CNP unless one was sent
// for the same flow less than cnpInterval ago.
func TestNPFlow(t *testing.T) {
	type ce struct {
		at   time.Duration
		want bool
	}
	tests := []struct {
		name     string
		interval time.Duration
		ces      []ce
	}{
		{"paper 50us", 50 * us, []ce{
			{0, true},           // first CE: CNP
			{10 * us, false},    // 10 < 50
			{50*us - 1, false},  // 49.999 < 50
			{50 * us, true},     // 50 - 0 = 50: not within the last 50us
			{60 * us, false},    // 10 after the last CNP
			{100*us - 1, false}, // 49.999 after
			{1000 * us, true},   // long idle
			{1000 * us, false},  // same instant
		}},
		{"interval 0: one CNP per CE packet", 0, []ce{
			{5 * us, true}, {5 * us, true}, {6 * us, true},
		}},
		{"nvidia 4us", 4 * us, []ce{
			{1 * us, true}, {3 * us, false}, {5 * us, true}, {8 * us, false}, {9 * us, true},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f NPFlow
			for i, c := range tc.ces {
				got, err := f.OnCE(c.at, tc.interval)
				if err != nil {
					t.Fatalf("CE %d at %v: %v", i, c.at, err)
				}
				if got != c.want {
					t.Errorf("CE %d at %v: send = %v, want %v", i, c.at, got, c.want)
				}
			}
		})
	}
}

func TestNPFlowErrors(t *testing.T) {
	var f NPFlow
	if _, err := f.OnCE(10*us, 4*us); err != nil {
		t.Fatal(err)
	}
	if _, err := f.OnCE(9*us, 4*us); !errors.Is(err, ErrTimeBackwards) {
		t.Errorf("backwards: err = %v, want ErrTimeBackwards", err)
	}
	if _, err := f.OnCE(20*us, -1); !errors.Is(err, ErrBadParams) {
		t.Errorf("negative interval: err = %v, want ErrBadParams", err)
	}
	if _, err := f.OnCE(-1, 4*us); !errors.Is(err, ErrBadEvent) {
		t.Errorf("negative time: err = %v, want ErrBadEvent", err)
	}
	// the errors left the state alone: 14us - 10us = 4us -> CNP.
	if got, _ := f.OnCE(14*us, 4*us); !got {
		t.Error("after rejected events, CE at 14us: no CNP, want one")
	}
}

func TestNPPerFlow(t *testing.T) {
	type qp uint32
	np, err := NewNP[qp](50 * us)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		flow qp
		at   time.Duration
		want bool
	}{
		{1, 0, true},
		{2, 10 * us, true}, // another flow has its own interval
		{1, 20 * us, false},
		{2, 30 * us, false},
		{1, 50 * us, true},
		{2, 59 * us, false},
		{2, 60 * us, true},
	}
	for i, s := range steps {
		got, err := np.OnCE(s.flow, s.at)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got != s.want {
			t.Errorf("step %d flow %d at %v: send = %v, want %v", i, s.flow, s.at, got, s.want)
		}
	}
	if np.Len() != 2 {
		t.Errorf("Len = %d, want 2", np.Len())
	}
	// at 100us: flow 1 (last CNP 50us) is exactly 50us old, so a CE would
	// get a CNP as for a new flow -> expired; flow 2 (60us) is 40us old -> kept.
	if n := np.Expire(100 * us); n != 1 || np.Len() != 1 {
		t.Errorf("Expire dropped %d, Len %d; want 1, 1", n, np.Len())
	}
	np.Forget(2)
	if np.Len() != 0 {
		t.Errorf("Len after Forget = %d, want 0", np.Len())
	}
	if _, err := np.OnCE(3, -5); !errors.Is(err, ErrBadEvent) {
		t.Errorf("negative time: err = %v, want ErrBadEvent", err)
	}
	if _, err := NewNP[qp](-1); !errors.Is(err, ErrBadParams) {
		t.Errorf("NewNP(-1): err = %v, want ErrBadParams", err)
	}
}

func TestNPAllocs(t *testing.T) {
	np, err := NewNP[uint32](4 * us)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Duration(0)
	if _, err := np.OnCE(1, now); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		now += time.Microsecond
		if _, err := np.OnCE(1, now); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("NP.OnCE on a known flow: %v allocs, want 0", allocs)
	}
}
