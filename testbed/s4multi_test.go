package testbed

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/internal/netns/netnstest"
	"github.com/fastcnp/fastcnp/model/incsched"
)

// s4Multi is the leaf-spine S4 topology and its schedule parameters.
const (
	s4MultiFile    = "s4-multitier.json"
	s4MultiWindow  = 24
	s4MultiOffsets = 16
)

// TestS4MultiTierSchedule: the message IDs of s4-multitier.json are
// incsched.IDs's, and no two of any 24 consecutive messages of the two
// groups share an aggregation slot (the precondition under which no
// contribution meets a busy slot); a naive schedule would.
func TestS4MultiTierSchedule(t *testing.T) {
	topo := loadTopo(t, s4MultiFile)
	lists := map[uint16][]uint16{}
	for _, f := range topo.Flows {
		if f.INC == nil {
			continue
		}
		if l, ok := lists[f.INC.Group]; ok && !slices.Equal(l, f.INC.Messages) {
			t.Fatalf("group %d: flows with other message lists", f.INC.Group)
		}
		lists[f.INC.Group] = f.INC.Messages
	}
	want, err := incsched.IDs([]incsched.Group{{Group: 1, Messages: len(lists[1])}, {Group: 2, Messages: len(lists[2])}}, s4MultiOffsets, s4MultiWindow)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(want[0], lists[1]) || !slices.Equal(want[1], lists[2]) {
		t.Fatalf("s4-multitier.json's message IDs are not incsched.IDs's: regenerate them")
	}
	if n := incsched.Clashes([]uint16{1, 2}, want, s4MultiOffsets, s4MultiWindow); n != 0 {
		t.Fatalf("%d clashes within the window", n)
	}
	// The check sees clashes: message IDs that go on past the schedule's
	// gaps do share slots within the window.
	naive := [][]uint16{make([]uint16, 192), make([]uint16, 192)}
	for i := range naive[0] {
		naive[0][i], naive[1][i] = uint16(1+i), uint16(1+i)
	}
	if n := incsched.Clashes([]uint16{1, 2}, naive, s4MultiOffsets, s4MultiWindow); n == 0 {
		t.Fatal("consecutive message IDs show no clash: the clash count proves nothing")
	}
}

// runS4Multi runs s4-multitier.json with fastcnp-switch and fastcnpd, with
// the link events given, and analyses it.
func runS4Multi(t *testing.T, events []LinkEvent) (*Result, *INCReport) {
	t.Helper()
	netnstest.RequireRoot(t)
	if testing.Short() {
		t.Skip("skipping: real-time testbed run (seconds of traffic) in -short mode")
	}
	b := testBinaries(t)
	topo := loadTopo(t, s4MultiFile)
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	if keep := os.Getenv("FASTCNP_S4_KEEP"); keep != "" {
		dir = filepath.Join(keep, t.Name())
	}
	res, err := Run(ctx, Options{Topology: topo, Mode: config.ModeFastCNP, Binaries: b, WorkDir: dir, Nice: DefaultNice,
		LinkEvents: events, Log: log.WithField("test", t.Name())})
	if err != nil {
		if errors.Is(err, ErrMissingCommand) {
			t.Skip(err)
		}
		t.Fatalf("Run: %v", err)
	}
	cfg, err := topo.ControllerConfig(ControllerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := AnalyzeINC(topo, cfg, res)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := jsonIndent(rep); err == nil {
		_ = os.WriteFile(filepath.Join(dir, "inc-report.json"), b, 0o644)
	}
	t.Logf("load %.1f -> %.1f; %d messages, %d complete, %d of %d offsets correct, %d missing, %d wrong, %d duplicate results, %d partials at hosts",
		res.LoadAvg[0], res.LoadAvg[1], rep.Messages, rep.Complete, rep.CorrectOffsets, rep.Offsets, rep.MissingOffsets,
		rep.WrongResults, rep.DuplicateResult, rep.PartialsAtHosts)
	t.Logf("contributions %d (leaves added %d), duplicates sent %d, dropped as duplicates %d, leaf drops %d; partials sent %d, upper results %d; slot busy leaves %d uppers %d, takeovers %d, stuck %d; slots used leaf max %d upper max %d",
		rep.Contributions, rep.LeafContributions, rep.DupsSent, rep.DupsDropped, rep.LeafDropped, rep.PartialsSent, rep.UpperResults, rep.LeafSlotBusy, rep.UpperSlotBusy,
		rep.Takeovers, rep.SlotsStuck, rep.LeafSlotsUsed, rep.UpperSlotsUsed)
	for _, u := range rep.Uppers {
		t.Logf("%s: weight %d (%.1f%%), buckets %.1f%%, predicted %d messages, aggregated %.1f (%.1f%%, deviation %+.2f points), partials %d %v, results %d, consistent %v",
			u.Name, u.Weight, 100*u.WeightShare, 100*u.BucketShare, u.Predicted, u.Aggregated, 100*u.Share, u.DeviationPct,
			u.Partials, u.PerLeaf, u.Results, u.Consistent)
	}
	t.Logf("goodput %.2f Mb/s of aggregated vectors (contributions %.2f Mb/s) over %.0f ms; latency p50 %.1f p99 %.1f max %.1f ms; peak %d messages in flight; max start lateness %.1f ms",
		rep.GoodputBps/1e6, rep.ContribBps/1e6, rep.SpanMs, rep.LatencyP50Ms, rep.LatencyP99Ms, rep.LatencyMaxMs, rep.PeakInFlight, res.MaxStartLateMs)
	return res, rep
}

// TestS4MultiTier runs S4 at leaf-spine scale on real packets: 16 workers
// in 4 racks, 2 spines weighted 1:3, two groups of 192 messages each in
// flight together, every 20th contribution sent twice. Every offset of
// every message must arrive once with the exact element-wise sum; every
// partial a spine received must have completed an aggregation of all the
// group's leaves there (path consistency, from the counters); each spine
// must aggregate exactly the messages the shared bucket table sends it
// (the data plane's hash, predicted offline); the injected duplicates must
// all be dropped at the leaves, none added.
func TestS4MultiTier(t *testing.T) {
	res, rep := runS4Multi(t, nil)
	checkLossless(t, res)
	if rep.Messages != 384 || rep.Complete != rep.Messages || rep.CorrectOffsets != uint64(rep.Offsets) ||
		rep.WrongResults != 0 || rep.DuplicateResult != 0 || rep.PartialsAtHosts != 0 {
		t.Errorf("every offset of the %d messages must arrive once with the element-wise sum: %d complete, %d of %d correct, %d wrong, %d duplicates, %d partials at hosts",
			rep.Messages, rep.Complete, rep.CorrectOffsets, rep.Offsets, rep.WrongResults, rep.DuplicateResult, rep.PartialsAtHosts)
	}
	if !rep.PathConsistent || rep.UpperResults != uint64(rep.Offsets) || rep.PartialsSent != 4*uint64(rep.Offsets) {
		t.Errorf("path consistency: consistent %v, upper results %d (want %d), partials sent %d (want %d)",
			rep.PathConsistent, rep.UpperResults, rep.Offsets, rep.PartialsSent, 4*rep.Offsets)
	}
	for _, u := range rep.Uppers {
		if u.Aggregated != float64(u.Predicted) {
			t.Errorf("%s aggregated %.1f messages, the bucket table sends it %d", u.Name, u.Aggregated, u.Predicted)
		}
	}
	// Every injected copy is dropped: as a duplicate (its slot still
	// waits for others, or remembers it done), or, when it comes after
	// four newer data flows of its connection (a worker that fell behind
	// sends several messages back to back), for want of its data flow.
	// None is added: the leaves added exactly the original contributions.
	if rep.DupsSent == 0 || rep.DupsDropped+rep.LeafDropped != rep.DupsSent || rep.LeafContributions != rep.Contributions {
		t.Errorf("injected duplicates: %d sent, %d dropped as duplicates, %d for want of their data flow; leaves added %d contributions of %d",
			rep.DupsSent, rep.DupsDropped, rep.LeafDropped, rep.LeafContributions, rep.Contributions)
	}
	if rep.LeafSlotBusy+rep.UpperSlotBusy != 0 || rep.Takeovers != 0 || rep.SlotsStuck != 0 {
		t.Errorf("slots: busy %d+%d, takeovers %d, stuck %d; want none (the schedule keeps messages in flight apart)",
			rep.LeafSlotBusy, rep.UpperSlotBusy, rep.Takeovers, rep.SlotsStuck)
	}
}

// TestS4MultiTierLinkFailure fails the link leaf2 - spine1 in the middle of
// the run of s4-multitier.json (both ends down, fastcnpd told at once): the
// tree loses spine1, every leaf's table moves spine1's buckets (exactly
// those) to spine2. Messages whose bucket stayed with spine2 keep their
// path and all complete; the messages of moved buckets that were in flight
// lose the offsets whose partials were split between the spines (measured,
// logged); messages due well after the new tables are in place complete on
// spine2. No result is ever wrong or duplicated.
func TestS4MultiTierLinkFailure(t *testing.T) {
	ev := LinkEvent{At: 2300 * time.Millisecond, Port: "leaf2-p9", Down: true}
	res, rep := runS4Multi(t, []LinkEvent{ev})
	if len(res.LinkEvents) != 1 || res.LinkEvents[0].Err != "" {
		t.Fatalf("link event: %+v", res.LinkEvents)
	}
	le := res.LinkEvents[0]
	t.Logf("link %s - %s down at %.1f ms, fastcnpd told at %.1f ms, new tree installed at %.1f ms (%.1f ms later), %d buckets moved",
		le.Port, le.Peer, le.ChangedMs, le.NotifiedMs, le.InstalledMs, le.InstalledMs-le.NotifiedMs, le.BucketsMoved)
	if le.BucketsMoved != 64 {
		t.Errorf("%d buckets moved, want spine1's 64", le.BucketsMoved)
	}
	if rep.WrongResults != 0 || rep.DuplicateResult != 0 {
		t.Errorf("%d wrong and %d duplicate results", rep.WrongResults, rep.DuplicateResult)
	}
	var affected, lost uint64
	for _, d := range rep.Detail {
		if d.Complete {
			continue
		}
		affected++
		lost += d.MissingOffset
		switch {
		case d.Upper != "spine1":
			t.Errorf("message %d/%d (bucket of %s, due %.0f ms) is missing %d offsets: a message of a bucket that did not move",
				d.Group, d.Message, d.Upper, d.DueMs, d.MissingOffset)
		case d.DueMs > le.InstalledMs+200:
			t.Errorf("message %d/%d, due at %.0f ms, 200 ms after the new tree, is missing %d offsets", d.Group, d.Message, d.DueMs, d.MissingOffset)
		}
	}
	t.Logf("affected: %d of %d messages incomplete, %d offsets lost; %d partial aggregates reached hosts; slots taken over %d, busy %d, stuck at the end %d",
		affected, rep.Messages, lost, rep.PartialsAtHosts, rep.Takeovers, rep.LeafSlotBusy+rep.UpperSlotBusy, rep.SlotsStuck)
	if affected == uint64(rep.Messages) || rep.Complete == 0 {
		t.Errorf("%d of %d messages complete", rep.Complete, rep.Messages)
	}
}
