package live_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/afpacket"
	"github.com/fastcnp/fastcnp/host/agent/live"
	"github.com/fastcnp/fastcnp/internal/netns"
	"github.com/fastcnp/fastcnp/internal/netns/netnstest"
	"github.com/fastcnp/fastcnp/wire"
)

// TestINCWorkers runs two INC worker agents, each in its own namespace,
// behind a stand-in switch written in this test (namespace "s": it reads the
// contributions, sums them per offset as the data plane does, and sends the
// RESULT toward the message's destination, worker 0). Worker 0 checks every
// RESULT against the expected element-wise sum of both workers' seeded
// vectors. It also checks the announcements (INC uplink flag, rank, group).
func TestINCWorkers(t *testing.T) {
	const (
		offsets = 200
		group   = 7
		message = 3
		seed    = 12345
		dstQP   = 0x200
	)
	swMAC := wire.MAC{0x02, 0xfc, 0, 0, 0, 0xee}
	wMAC := []wire.MAC{{0x02, 0xfc, 0, 0, 1, 0}, {0x02, 0xfc, 0, 0, 1, 1}}
	wIP := []wire.Addr4{{10, 8, 0, 10}, {10, 8, 0, 11}}

	tb := netnstest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // safety net only
	defer cancel()
	sw, err := tb.Namespace(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	var wns []*netns.NS
	var wPorts, sPorts []*afpacket.Port
	open := func(ns *netns.NS, name string) *afpacket.Port {
		var p *afpacket.Port
		if err := ns.Do(func() error {
			var err error
			p, err = afpacket.Open(name, afpacket.Options{DisableOffloads: true})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	for i := range 2 {
		ns, err := tb.Namespace(ctx, "w"+string(rune('0'+i)))
		if err != nil {
			t.Fatal(err)
		}
		sp := "p" + string(rune('0'+i))
		if _, err := tb.Veth(ctx,
			netns.LinkConfig{NS: ns, Name: "eth0", MAC: net.HardwareAddr(wMAC[i][:]), DisableIPv6: true},
			netns.LinkConfig{NS: sw, Name: sp, MAC: net.HardwareAddr(swMAC[:]), DisableIPv6: true}); err != nil {
			t.Fatal(err)
		}
		wns = append(wns, ns)
		wPorts = append(wPorts, open(ns, "eth0"))
		sPorts = append(sPorts, open(sw, sp))
	}

	var flows []live.FlowConfig
	for r := range 2 {
		flows = append(flows, live.FlowConfig{Name: "inc-r" + string(rune('0'+r)), Src: wIP[r].String(), Dst: wIP[0].String(),
			SrcQPN: 0x300 + uint32(r), DstQPN: dstQP, SPort: 6000,
			INC: &live.INCFlow{Group: group, Message: message, Op: 1, Rank: uint8(r), Workers: 2, Offsets: offsets, Seed: seed}})
	}

	// The stand-in switch.
	swCtx, swCancel := context.WithCancel(ctx)
	type slot struct {
		sum  wire.INCVector
		seen uint8
	}
	var mu sync.Mutex
	slots := map[uint32]*slot{}
	first := map[wire.Addr4]uint32{}
	anns := map[wire.Addr4][]wire.Announcement{}
	var swErr error
	var swWG sync.WaitGroup
	for i, sp := range sPorts {
		swWG.Add(1)
		go func() {
			defer swWG.Done()
			msgs := sp.NewBatch(32)
			out := make([]byte, 512)
			var f wire.Frame
			for {
				n, err := sp.ReadBatch(swCtx, msgs)
				if err != nil {
					if !errors.Is(err, context.Canceled) {
						mu.Lock()
						swErr = err
						mu.Unlock()
					}
					return
				}
				for _, m := range msgs[:n] {
					fr := m.Buf[:m.N]
					if wire.Parse(fr, wire.ParseOptions{AnnouncePorts: []uint16{wire.DefaultAnnouncePort}}, &f) != nil {
						continue
					}
					mu.Lock()
					if f.Has(wire.LayerAnnouncement) {
						anns[f.IPv4.Src] = append(anns[f.IPv4.Src], f.Announcement)
						mu.Unlock()
						continue
					}
					if !f.Has(wire.LayerINCVector) || f.INC.IsResult() {
						mu.Unlock()
						continue
					}
					if f.Has(wire.LayerINCIDs) {
						first[f.IPv4.Src] = f.INCIDs.FirstPSN
					}
					off := (f.BTH.PSN - first[f.IPv4.Src]) & wire.MaxPSN
					s := slots[off]
					if s == nil {
						s = &slot{}
						slots[off] = s
					}
					bit := uint8(1) << i
					if s.seen&bit == 0 {
						s.seen |= bit
						for k := range s.sum {
							s.sum[k] += f.INCVector[k]
						}
					}
					done := s.seen == 3
					sum := s.sum
					mu.Unlock()
					if !done {
						continue
					}
					// RESULT toward worker 0 (the message's destination).
					env := wire.Envelope{SrcMAC: swMAC, DstMAC: wMAC[0], SrcIP: f.IPv4.Src, DstIP: wIP[0], DSCP: 26, ECN: wire.ECT0, SrcPort: f.UDP.SrcPort}
					ids := wire.INCIDs{GroupID: group, MessageID: message, FirstPSN: off, FlowLen: offsets}
					k, err := wire.BuildINC(out, &env, f.BTH, wire.INC{Flags: wire.INCFlagResult, Version: wire.INCVersion}, &ids, &sum)
					if err == nil {
						err = sPorts[0].WriteFrame(swCtx, out[:k])
					}
					if err != nil && swCtx.Err() == nil {
						mu.Lock()
						swErr = err
						mu.Unlock()
						return
					}
				}
			}
		}()
	}

	agents := make([]*live.Agent, 2)
	for r := range 2 {
		a, err := live.New(live.Config{IP: wIP[r], MAC: wMAC[r], GatewayMAC: swMAC, Mode: live.ModeINCWorker,
			Algo: "dcqcn", CC: ccConfig(t, "nvidia-cx", 100e6, time.Millisecond), Flows: flows,
			ExitWhenDone: true, Log: quietLog()}, wPorts[r])
		if err != nil {
			t.Fatal(err)
		}
		agents[r] = a
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = agents[r].Run(ctx)
		}()
	}
	wg.Wait()
	time.Sleep(10 * time.Millisecond) // the "down" announcements reach the stand-in switch
	swCancel()
	swWG.Wait()
	if swErr != nil {
		t.Fatalf("stand-in switch: %v", swErr)
	}
	for r, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", r, err)
		}
	}
	st := agents[0].INCStatus()
	if len(st) != 1 || st[0].Correct != offsets || st[0].Wrong != 0 {
		t.Fatalf("worker 0 checker: %+v", st)
	}
	if len(agents[1].INCStatus()) != 0 {
		t.Fatal("worker 1 checks results it is not the destination of")
	}
	for r := range 2 {
		fs := agents[r].Status()
		if len(fs) != 1 || !fs[0].Done || fs[0].Send.PacketsSent != offsets {
			t.Fatalf("worker %d flows: %+v", r, fs)
		}
		a := anns[wIP[r]]
		if len(a) != 2 || a[0].Type != wire.AnnounceUp || a[1].Type != wire.AnnounceDown ||
			a[0].Flags != wire.AnnounceFlagINCUplink|wire.AnnounceFlagCNPTarget || a[0].WorkerRank != uint8(r) ||
			a[0].INCGroup != group || a[0].ReceiverQPN != dstQP || a[0].SenderQPN != 0x300+uint32(r) || a[0].UDPSrcPort != 6000 {
			t.Fatalf("worker %d announcements %+v", r, a)
		}
	}
	t.Logf("INC: %d offsets x 2 workers aggregated by the stand-in switch; worker 0 checked %+v", offsets, st[0])
}
