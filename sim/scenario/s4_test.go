package scenario

import (
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/controller/incroute"
)

// s4Test is a short S4 (80 messages per group, 1 us apart) for CI.
func s4Test(fail bool, repairAt int64) S4Options {
	o := DefaultS4()
	o.Messages, o.TailNs = 80, 150_000
	o.SlotTimeout = 30 * time.Microsecond
	if fail {
		o.Failure = &S4Failure{Leaf: 1, Spine: 0, AtNs: 40_000, NotifyNs: 5000, InstallNs: 1000}
		o.Failure.RepairAtNs = repairAt
	}
	return o
}

// bucketsOf counts a table's buckets naming id.
func bucketsOf(t incroute.Table, id uint32) int {
	n := 0
	for _, b := range t {
		if b == id {
			n++
		}
	}
	return n
}

// TestS4 runs S4 on the simulator (16 workers, 4 leaves, 2 spines weighted 1
// and 3, two groups, 100 Gb/s) with fastcnpd's INC tree: every RESULT is the
// exact element-wise sum, injected copies are never added, each spine
// aggregates exactly the messages its buckets name, in proportion to its
// weight, and every partial it receives completes there (path
// consistency, from the counters). With the link leaf2-spine1 down mid-run
// (and up again), the controller moves exactly spine1's buckets to spine2
// (and back), nothing is ever wrong, and messages lost are confined to the
// transition: those due before the failure and after the new tree plus
// the slot timeout all complete.
func TestS4(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fail     bool
		repairAt int64
	}{
		{"normal", false, 0}, {"failure", true, 0}, {"failure-repair", true, 70_000},
		// Repaired while the first new tree is still being installed: the
		// two computations' installs interleave, the last one wins.
		{"quick repair", true, 43_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := s4Test(tc.fail, tc.repairAt)
			s, r, err := RunS4(o, nil)
			if err != nil {
				t.Fatal(err)
			}
			for c, cl := range r.Classes {
				if !cl.Balanced() {
					t.Errorf("class %d: the byte account does not close: %+v", c, cl)
				}
			}
			m, err := MeasureS4(s, r)
			if err != nil {
				t.Fatal(err)
			}
			if m.Messages != 2*o.Messages || m.WrongResults != 0 || m.DuplicateResults != 0 || m.StrayResults != 0 {
				t.Fatalf("messages %d, wrong %d, duplicate %d, stray %d", m.Messages, m.WrongResults, m.DuplicateResults, m.StrayResults)
			}
			if m.PartialsAtHosts != 0 || m.ContribAtHosts != 0 {
				t.Errorf("partials %d and contributions %d reached hosts", m.PartialsAtHosts, m.ContribAtHosts)
			}
			// Injected retransmissions: sent, dropped as duplicates, never added.
			if m.DupsSent == 0 || m.LeafDupDrop != m.DupsSent || m.LeafAdded != m.Sent {
				t.Errorf("copies sent %d, dropped %d; contributions sent %d, added %d", m.DupsSent, m.LeafDupDrop, m.Sent, m.LeafAdded)
			}
			if m.PeakInFlight < 4 {
				t.Errorf("at most %d messages in flight: not concurrent", m.PeakInFlight)
			}
			start := s.Trees[0].Tree
			if len(start.Uppers) != 2 || bucketsOf(start.Table, start.Uppers[0].ID) != 64 {
				t.Fatalf("start tree: uppers %+v, spine1 %d buckets", start.Uppers, bucketsOf(start.Table, start.Uppers[0].ID))
			}
			if !tc.fail {
				if m.Complete != m.Messages || m.CorrectOffsets != uint64(m.Offsets) || m.SlotBusy != 0 {
					t.Fatalf("complete %d of %d, offsets %d of %d, slot busy %d", m.Complete, m.Messages, m.CorrectOffsets, m.Offsets, m.SlotBusy)
				}
				total := 0
				for _, u := range m.Uppers {
					total += u.Predicted
					if !u.Consistent || u.Aggregated != float64(u.Predicted) || u.Results != uint64(u.Predicted*o.Offsets) {
						t.Errorf("%s: consistent %v, aggregated %g of %d predicted, %d RESULTs", u.Name, u.Consistent, u.Aggregated, u.Predicted, u.Results)
					}
					// 160 messages: a spine's share is within 4 messages of its weight.
					if d := u.DeviationPts; d > 2.5 || d < -2.5 {
						t.Errorf("%s: share %.3f against weight %.3f", u.Name, u.Share, u.WeightShare)
					}
				}
				if total != m.Messages {
					t.Errorf("predicted %d of %d messages", total, m.Messages)
				}
				return
			}
			f := o.Failure
			wantMoves := []int{64}
			repair := tc.repairAt > 0
			if repair {
				wantMoves = []int{64, 64}
			}
			if len(m.Moved) != len(wantMoves) || m.Moved[0] != 64 || (repair && m.Moved[1] != 64) {
				t.Fatalf("buckets moved %v, want %v", m.Moved, wantMoves)
			}
			down := s.Trees[1].Tree
			if len(down.Uppers) != 1 || down.Uppers[0].Name != "spine2" || bucketsOf(down.Table, down.Uppers[0].ID) != 256 {
				t.Fatalf("tree with the link down: uppers %+v", down.Uppers)
			}
			if m.LinkLost == 0 || len(m.Lost) == 0 {
				t.Errorf("the failure lost %d frames and %d messages", m.LinkLost, len(m.Lost))
			}
			if len(m.InstalledAllNs) != len(wantMoves) {
				t.Fatalf("new trees on every switch at %v, want %d", m.InstalledAllNs, len(wantMoves))
			}
			if repair && bucketsOf(s.Trees[2].Tree.Table, start.Uppers[0].ID) != 64 {
				t.Errorf("after the repair spine1 has %d buckets", bucketsOf(s.Trees[2].Tree.Table, start.Uppers[0].ID))
			}
			settled := m.InstalledAllNs[len(m.InstalledAllNs)-1] + int64(o.SlotTimeout)
			for _, l := range m.Lost {
				if l.DueNs < f.AtNs-5000 || l.DueNs > settled {
					t.Errorf("message %d/%d due at %d ns lost outside the transition (%d..%d ns)", l.Group, l.Message, l.DueNs, f.AtNs, settled)
				}
			}
		})
	}
}

// TestS4Errors: shapes S4 cannot build are refused.
func TestS4Errors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*S4Options)
	}{
		{"one rack", func(o *S4Options) { o.Racks = 1 }},
		{"no spine", func(o *S4Options) { o.SpineWeights = nil }},
		{"too many workers", func(o *S4Options) { o.Racks, o.WorkersPerRack = 8, 8 }},
		{"no messages", func(o *S4Options) { o.Messages = 0 }},
		{"group 2 larger than a rack", func(o *S4Options) { o.Group2PerRack = 5 }},
		{"no such link", func(o *S4Options) { o.Failure = &S4Failure{Leaf: 1, Spine: 7, AtNs: 1} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultS4()
			tc.edit(&o)
			if _, err := BuildS4(o); err == nil {
				t.Fatal("built")
			}
		})
	}
}

// BenchmarkS4 runs the default S4 (800 messages, no failure) and reports the
// simulator's speed on it (events/s) and the aggregation's (messages/s of
// wall time).
func BenchmarkS4(b *testing.B) {
	var events uint64
	var msgs int
	start := time.Now()
	for b.Loop() {
		s, r, err := RunS4(DefaultS4(), nil)
		if err != nil {
			b.Fatal(err)
		}
		m, err := MeasureS4(s, r)
		if err != nil || m.Complete != m.Messages {
			b.Fatalf("complete %v, err %v", m, err)
		}
		events += r.Events
		msgs += m.Messages
	}
	sec := time.Since(start).Seconds()
	b.ReportMetric(float64(events)/sec, "events/s")
	b.ReportMetric(float64(msgs)/sec, "messages/s")
}
