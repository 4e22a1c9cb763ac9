package agent

import (
	"errors"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/wire"
)

func TestReceiverSequencing(t *testing.T) {
	type step struct {
		psn    uint32
		ackReq bool
		want   Reply
	}
	ack := func(psn, msn uint32) Reply {
		return Reply{Ack: true, AckPSN: psn, Syndrome: wire.SyndromeACK, MSN: msn}
	}
	cases := []struct {
		name  string
		start uint32
		steps []step
	}{
		{"in order, coalesced ACK", 5, []step{
			{5, false, Reply{Accept: true}},
			{6, false, Reply{Accept: true}},
			{7, true, func() Reply { r := ack(7, 3); r.Accept = true; return r }()},
		}},
		{"gap: one NAK, then recovery", 0, []step{
			{0, false, Reply{Accept: true}},
			{2, false, Reply{Ack: true, AckPSN: 1, Syndrome: wire.SyndromeNAKPSNSequence, MSN: 1}},
			{3, true, Reply{}}, // same gap: silent
			{1, false, Reply{Accept: true}},
			{2, true, func() Reply { r := ack(2, 3); r.Accept = true; return r }()},
		}},
		{"duplicates", 0, []step{
			{0, false, Reply{Accept: true}},
			{1, false, Reply{Accept: true}},
			{0, false, Reply{}},  // duplicate without A: dropped silently
			{1, true, ack(1, 2)}, // with A: re-ACK of the last in-order PSN
		}},
		{"PSN wrap", 0xFFFFFF, []step{
			{0xFFFFFF, false, Reply{Accept: true}},
			{0, true, func() Reply { r := ack(0, 2); r.Accept = true; return r }()},
			{0xFFFFFF, true, ack(0, 2)}, // behind across the wrap: duplicate
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewReceiver(ReceiverConfig{StartPSN: tc.start})
			if err != nil {
				t.Fatal(err)
			}
			for i, st := range tc.steps {
				got, err := r.OnData(Arrival{Now: time.Duration(i), PSN: st.psn, AckReq: st.ackReq, Payload: 10})
				if err != nil {
					t.Fatal(err)
				}
				if got != st.want {
					t.Fatalf("step %d (PSN %#x): %+v, want %+v", i, st.psn, got, st.want)
				}
			}
		})
	}
}

func TestNPCNPInterval(t *testing.T) {
	cases := []struct {
		interval time.Duration
		ce       []time.Duration // CE arrivals
		want     []bool          // CNP sent
	}{
		{4 * us, []time.Duration{0, 1 * us, 3 * us, 4 * us, 5 * us, 9 * us}, []bool{true, false, false, true, false, true}},
		{0, []time.Duration{0, 0, 1}, []bool{true, true, true}},
		{50 * us, []time.Duration{10 * us, 59 * us, 60 * us}, []bool{true, false, true}},
	}
	for _, tc := range cases {
		r, err := NewReceiver(ReceiverConfig{CNPInterval: tc.interval})
		if err != nil {
			t.Fatal(err)
		}
		for i, at := range tc.ce {
			rep, err := r.OnData(Arrival{Now: at, PSN: uint32(i), CE: true})
			if err != nil {
				t.Fatal(err)
			}
			if rep.CNP != tc.want[i] || !rep.Accept {
				t.Fatalf("interval %v, CE at %v: CNP %v accept %v, want CNP %v", tc.interval, at, rep.CNP, rep.Accept, tc.want[i])
			}
		}
		// A packet without CE never makes a CNP.
		if rep, _ := r.OnData(Arrival{Now: time.Second, PSN: uint32(len(tc.ce))}); rep.CNP {
			t.Fatal("CNP without CE")
		}
		n := 0
		for _, w := range tc.want {
			if w {
				n++
			}
		}
		if st := r.Stats(); st.CE != uint64(len(tc.ce)) || st.CNPs != uint64(n) {
			t.Fatalf("stats %+v", st)
		}
	}
	// A duplicate that is CE-marked still runs the NP (congestion is real).
	r, _ := NewReceiver(ReceiverConfig{StartPSN: 10, CNPInterval: time.Millisecond})
	if rep, _ := r.OnData(Arrival{Now: 0, PSN: 9, CE: true}); !rep.CNP || rep.Accept {
		t.Fatalf("CE duplicate: %+v", rep)
	}
	if _, err := r.OnData(Arrival{Now: 0, PSN: 1 << 24}); !errors.Is(err, cc.ErrBadEvent) {
		t.Fatalf("bad PSN: %v", err)
	}
	if _, err := NewReceiver(ReceiverConfig{CNPInterval: -1}); !errors.Is(err, ErrConfig) {
		t.Fatal("negative interval accepted")
	}
}
