package live_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/host/agent"
	"github.com/fastcnp/fastcnp/host/agent/live"
	"github.com/fastcnp/fastcnp/wire"
)

// TestINCMessagesOnOneConnection: a worker's flow carries several INC
// messages one after the other on its connection (spec 04: several data
// flows per connection), each a data flow of its own with its first PSN in
// its first packet's IDS part, and injects a second copy of every 4th
// contribution. The frames are read off an in-memory link.
func TestINCMessagesOnOneConnection(t *testing.T) {
	const (
		offsets  = 6
		dupEvery = 4
		group    = 3
		seed     = 99
		rank     = 1
	)
	msgs := []uint16{40, 17, 901}
	pa, pb := memPair()
	fl := []live.FlowConfig{flowAB(live.FlowConfig{Name: "w", INC: &live.INCFlow{Group: group, Messages: msgs, Op: 5,
		Interval: live.Duration(2 * time.Millisecond), Rank: rank, Workers: 2, Offsets: offsets, Seed: seed,
		DupEvery: dupEvery, DupDelay: live.Duration(time.Millisecond)}})}
	var stats bytes.Buffer
	w, err := live.New(live.Config{IP: ipA, MAC: macA, Mode: live.ModeINCWorker, Algo: "dcqcn",
		CC: ccConfig(t, "nvidia-cx", 1e9, 100*time.Microsecond), Flows: fl, ExitWhenDone: true, Stats: &stats,
		StatsInterval: time.Millisecond, Log: quietLog()}, pa)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a guard against a hang
	defer cancel()
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
	var f wire.Frame
	seen := map[uint32]int{}
	var order []uint32 // PSNs of first copies, in sending order
	firstPSN := map[uint16]uint32{}
	var ids []wire.INCIDs
	for len(pb.in) > 0 {
		fr := <-pb.in
		if wire.Parse(fr, wire.ParseOptions{AnnouncePorts: []uint16{wire.DefaultAnnouncePort}}, &f) != nil || !f.Has(wire.LayerINCVector) {
			continue
		}
		if !f.INC.IsContribution() {
			t.Fatalf("a worker sent flags %#x", f.INC.Flags)
		}
		psn := f.BTH.PSN
		if seen[psn] == 0 {
			order = append(order, psn)
		}
		seen[psn]++
		if f.Has(wire.LayerINCIDs) && seen[psn] == 1 {
			ids = append(ids, f.INCIDs)
			firstPSN[f.INCIDs.MessageID] = psn
		}
		// Every copy carries the worker's vector of its message and offset.
		k := (psn - order[0]) & wire.MaxPSN
		msg, off := msgs[k/offsets], k%offsets
		if want := agent.INCContribution(seed, group, msg, rank, off); f.INCVector != want {
			t.Fatalf("PSN %d (message %d offset %d): vector %v, want %v", psn, msg, off, f.INCVector, want)
		}
		if f.Has(wire.LayerINCIDs) != (off == 0) {
			t.Fatalf("PSN %d: IDS part %v at offset %d", psn, f.Has(wire.LayerINCIDs), off)
		}
	}
	if len(order) != len(msgs)*offsets {
		t.Fatalf("%d distinct contributions, want %d", len(order), len(msgs)*offsets)
	}
	for i, id := range ids {
		want := wire.INCIDs{GroupID: group, MessageID: msgs[i], FirstPSN: order[0] + uint32(i*offsets), OpID: 5, FlowLen: offsets}
		if id != want {
			t.Errorf("message %d IDS %+v, want %+v", i, id, want)
		}
	}
	dups := 0
	for i, psn := range order {
		want := 1
		if (i+1)%dupEvery == 0 {
			want, dups = 2, dups+1
		}
		if seen[psn] != want {
			t.Errorf("contribution %d (PSN %d) sent %d times, want %d", i, psn, seen[psn], want)
		}
	}
	var summary *live.Record
	for _, r := range readRecords(t, stats.Bytes()) {
		if r.Type == "summary" && r.Role == "sender" {
			summary = &r
		}
	}
	if summary == nil || summary.INCDupsSent == nil || int(*summary.INCDupsSent) != dups || summary.Done == nil || !*summary.Done {
		t.Fatalf("sender summary %+v, want done with %d duplicates", summary, dups)
	}
}

// TestINCResultsOfSeveralMessages: the destination of a flow of several
// messages checks each message's RESULTs apart, records when the first and
// last came, and counts a partial aggregate that reached it (one no upper
// switch aggregated).
func TestINCResultsOfSeveralMessages(t *testing.T) {
	const offsets = 3
	msgs := []uint16{7, 8}
	inc := &live.INCFlow{Group: 2, Messages: msgs, Rank: 0, Workers: 1, Offsets: offsets, Seed: 5}
	pa, pb := memPair()
	fl := []live.FlowConfig{flowAB(live.FlowConfig{Name: "w", INC: inc})}
	var stats bytes.Buffer
	r, err := live.New(live.Config{IP: ipB, MAC: macB, Mode: live.ModeINCWorker, Algo: "dcqcn",
		CC: ccConfig(t, "nvidia-cx", 1e9, 100*time.Microsecond), Flows: fl, ExitWhenDone: true, Stats: &stats,
		StatsInterval: time.Millisecond, Log: quietLog()}, pb)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 512)
	send := func(flags uint8, msg uint16, off uint32) {
		p := inc.ParamsOf(msg)
		sum := agent.INCExpected(p, off)
		env := wire.Envelope{SrcMAC: macA, DstMAC: macB, SrcIP: ipA, DstIP: ipB, DSCP: 26, SrcPort: 6000, DstPort: wire.RoCEv2UDPPort}
		ids := wire.INCIDs{GroupID: 2, MessageID: msg, FirstPSN: off, FlowLen: offsets}
		n, err := wire.BuildINC(buf, &env, wire.BTH{Opcode: wire.OpRCSendOnly, PKey: wire.DefaultPKey, DestQP: qpB, PSN: off},
			wire.INC{Flags: flags, Version: wire.INCVersion}, &ids, &sum)
		if err != nil {
			t.Fatal(err)
		}
		pa.out <- bytes.Clone(buf[:n])
	}
	send(wire.INCFlagPartial, 7, 0)
	for _, m := range msgs {
		for off := range uint32(offsets) {
			send(wire.INCFlagResult, m, off)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a guard against a hang
	defer cancel()
	if err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
	st := r.INCStatus()
	if len(st) != 2 || st[0].Correct != offsets || st[1].Correct != offsets || st[0].Wrong+st[1].Wrong != 0 {
		t.Fatalf("checkers %+v", st)
	}
	if c := r.Counters(); c.INCPartials != 1 || c.INCResults != 2*offsets {
		t.Errorf("counters: %d partials, %d results; want 1 and %d", c.INCPartials, c.INCResults, 2*offsets)
	}
	n := 0
	for _, rec := range readRecords(t, stats.Bytes()) {
		if rec.Type == "inc" && rec.INC != nil {
			n++
			if !rec.INC.Complete || rec.INC.FirstUnixNs == 0 || rec.INC.LastUnixNs < rec.INC.FirstUnixNs {
				t.Errorf("inc record %+v", rec.INC)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d inc records, want 2", n)
	}
}
