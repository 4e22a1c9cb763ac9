package live_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/host/agent"
	"github.com/fastcnp/fastcnp/host/agent/live"
	"github.com/fastcnp/fastcnp/wire"
)

// TestLongFlowRefreshesAnnouncement: a flow that runs for many announce
// intervals is announced again every interval while it runs (fastcnpd
// removes a connection that was not announced for its idle_timeout), then
// torn down once. The refresh rounds are counted in the agent record.
func TestLongFlowRefreshesAnnouncement(t *testing.T) {
	const (
		interval = 40 * time.Millisecond
		flowDur  = 600 * time.Millisecond // 15 intervals
	)
	fl := []live.FlowConfig{flowAB(live.FlowConfig{Duration: live.Duration(flowDur)})}
	type sent struct {
		at  time.Time
		typ uint8
	}
	var mu sync.Mutex
	var anns []sent
	capture := func(ts time.Time, frame []byte, out bool) {
		var f wire.Frame
		if !out || wire.Parse(frame, wire.ParseOptions{AnnouncePorts: []uint16{wire.DefaultAnnouncePort}}, &f) != nil ||
			!f.Has(wire.LayerAnnouncement) {
			return
		}
		if f.Announcement.SenderQPN != qpA || f.Announcement.ReceiverQPN != qpB || f.IPv4.Src != ipA {
			t.Errorf("announcement for another connection: %+v", f.Announcement)
		}
		mu.Lock()
		anns = append(anns, sent{ts, f.Announcement.Type})
		mu.Unlock()
	}
	var stats bytes.Buffer
	snd := runSender(t, fl, live.Config{AnnounceInterval: interval, Capture: capture, Stats: &stats, StatsInterval: 50 * time.Millisecond})

	mu.Lock()
	defer mu.Unlock()
	if len(anns) < 2 || anns[0].typ != wire.AnnounceUp || anns[len(anns)-1].typ != wire.AnnounceDown {
		t.Fatalf("announcements %+v: want up first and down last", anns)
	}
	refreshes := 0
	for i, a := range anns[1 : len(anns)-1] {
		if a.typ != wire.AnnounceUp {
			t.Fatalf("announcement %d has type %d, want refreshes (up) between the first up and the down", i+1, a.typ)
		}
		refreshes++
	}
	span := anns[len(anns)-1].at.Sub(anns[0].at)
	// Refreshes fall on the multiples of the interval after the first "up":
	// never more than span/interval of them; fewer only if the loaded
	// machine stalled the agent for whole intervals.
	most := int(span / interval)
	if refreshes > most || refreshes < most/2 || refreshes < int(flowDur/interval)/2 {
		t.Errorf("%d refreshes over %v at %v: want between %d and %d", refreshes, span, interval, most/2, most)
	}
	for i := 1; i < len(anns)-1; i++ {
		if gap := anns[i].at.Sub(anns[i-1].at); gap < interval/2 {
			t.Errorf("refresh %d only %v after the previous announcement (interval %v)", i, gap, interval)
		}
	}
	if got := snd.Counters().AnnounceRefreshes; got != uint64(refreshes) {
		t.Errorf("agent counts %d refresh rounds, %d were sent", got, refreshes)
	}
	found := false
	for _, r := range readRecords(t, stats.Bytes()) {
		if r.Type == "agent" && r.Agent != nil {
			found = true
			if r.Agent.AnnounceRefreshes != uint64(refreshes) {
				t.Errorf("agent record: announce_refreshes %d, want %d", r.Agent.AnnounceRefreshes, refreshes)
			}
		}
	}
	if !found {
		t.Error("no agent record")
	}
	t.Logf("%d refreshes at %v over %v", refreshes, interval, span)
}

// TestICRCCheck: like a NIC, the agent drops received RoCEv2 frames whose
// ICRC does not match their content and counts them (bad_icrc in the agent
// record); valid frames pass; with NoICRCCheck the corrupted ones are
// accepted (and their payload shows the corruption).
func TestICRCCheck(t *testing.T) {
	const n = 10
	corrupt := map[uint32]bool{3: true, 7: true} // PSNs first sent corrupted, then valid
	tests := []struct {
		name      string
		noCheck   bool
		flip      func(frame []byte, icrcOff int) // nil: no corruption
		bad       uint64                          // BadICRC
		badData   uint64                          // payloads that fail the pattern
		dups      uint64                          // duplicates (the valid resends of accepted corrupted frames)
		wantFrame uint64
	}{
		{"valid frames pass", false, nil, 0, 0, 0, n},
		{"payload bit flipped: dropped and counted", false, func(f []byte, _ int) { f[wire.EthernetLen+wire.IPv4Len+wire.UDPLen+wire.BTHLen] ^= 0x10 },
			2, 0, 0, n + 2},
		{"ICRC field wrong: dropped and counted", false, func(f []byte, off int) { f[off] ^= 0xff }, 2, 0, 0, n + 2},
		{"check disabled: corrupted payload accepted", true, func(f []byte, _ int) { f[wire.EthernetLen+wire.IPv4Len+wire.UDPLen+wire.BTHLen] ^= 0x10 },
			0, 2, 2, n + 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pa, pb := memPair()
			fl := []live.FlowConfig{flowAB(live.FlowConfig{Size: 1 << 20})}
			var stats bytes.Buffer
			rcv, err := live.New(live.Config{IP: ipB, MAC: macB, Mode: live.ModeReceiver, Algo: "dcqcn",
				CC: ccConfig(t, "nvidia-cx", 1e9, 100*time.Microsecond), Flows: fl, NoICRCCheck: tt.noCheck,
				Stats: &stats, Log: quietLog()}, pb)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- rcv.Run(ctx) }()

			path := agent.Path{SrcMAC: macA, DstMAC: macB, SrcIP: ipA, DstIP: ipB, SrcPort: uint16(49152 + qpA%16384)}
			const mss = 1024
			var frames [][]byte
			for psn := uint32(0); psn < n; psn++ {
				pkt := agent.Packet{Seq: uint64(psn), PSN: psn, Offset: int64(psn) * mss, Payload: mss}
				b := make([]byte, 1518)
				k, err := path.BuildData(b, qpB, &pkt)
				if err != nil {
					t.Fatal(err)
				}
				if corrupt[psn] && tt.flip != nil {
					bad := bytes.Clone(b[:k])
					// The ICRC is the last 4 bytes of the IP packet.
					tt.flip(bad, k-wire.ICRCLen)
					if ok, err := wire.VerifyICRC(bad[wire.EthernetLen:]); err != nil || ok {
						t.Fatalf("corrupted frame PSN %d still has a valid ICRC (%v)", psn, err)
					}
					frames = append(frames, bad)
				}
				frames = append(frames, b[:k])
			}
			if _, err := pa.WriteBatch(ctx, frames); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second) // guards against a hang only
			for rcv.Counters().Frames < uint64(len(frames)) && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("receiver: %v", err)
			}
			c := rcv.Counters()
			st := rcv.Status()[0]
			if c.Frames != tt.wantFrame || c.BadICRC != tt.bad || st.Recv.Packets != n || st.BadData != tt.badData ||
				st.Recv.Duplicates != tt.dups {
				t.Errorf("frames %d bad_icrc %d accepted %d bad payloads %d duplicates %d; want %d, %d, %d, %d, %d",
					c.Frames, c.BadICRC, st.Recv.Packets, st.BadData, st.Recv.Duplicates, tt.wantFrame, tt.bad, n, tt.badData, tt.dups)
			}
			var rec *live.RxCounters
			for _, r := range readRecords(t, stats.Bytes()) {
				if r.Type == "agent" {
					rec = r.Agent
				}
			}
			if rec == nil || rec.BadICRC != tt.bad {
				t.Errorf("agent record %+v: want bad_icrc %d", rec, tt.bad)
			}
		})
	}
}

// runSender runs a sender agent on ipA with snd's other settings (DCQCN at
// 20 Mb/s) and a receiver on ipB for the flows fl over an in-memory link,
// until the sender's flows are done; it returns the sender.
func runSender(t *testing.T, fl []live.FlowConfig, snd live.Config) *live.Agent {
	t.Helper()
	pa, pb := memPair()
	snd.IP, snd.MAC, snd.Mode, snd.Algo = ipA, macA, live.ModeSender, "dcqcn"
	snd.CC, snd.Flows, snd.ExitWhenDone, snd.Log = ccConfig(t, "nvidia-cx", 20e6, time.Millisecond), fl, true, quietLog()
	s, err := live.New(snd, pa)
	if err != nil {
		t.Fatal(err)
	}
	r, err := live.New(live.Config{IP: ipB, MAC: macB, Mode: live.ModeReceiver, Algo: "dcqcn",
		CC: ccConfig(t, "nvidia-cx", 20e6, time.Millisecond), Flows: fl, Log: quietLog()}, pb)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	runPair(t, ctx, s, r)
	return s
}
