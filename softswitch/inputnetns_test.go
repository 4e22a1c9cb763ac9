package softswitch

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/afpacket"
	"github.com/fastcnp/fastcnp/internal/netns"
	"github.com/fastcnp/fastcnp/internal/netns/netnstest"
	"github.com/fastcnp/fastcnp/wire"
)

// devRxPackets reads the received-packets counter of dev in ns (/proc/net/dev).
func devRxPackets(ns *netns.NS, dev string) (uint64, error) {
	var v uint64
	err := ns.Do(func() error {
		b, err := os.ReadFile("/proc/thread-self/net/dev")
		if err != nil {
			return err
		}
		for _, l := range strings.Split(string(b), "\n") {
			name, counters, ok := strings.Cut(l, ":")
			if !ok || strings.TrimSpace(name) != dev {
				continue
			}
			f := strings.Fields(counters)
			if len(f) < 2 {
				break
			}
			v, err = strconv.ParseUint(f[1], 10, 64)
			return err
		}
		return fmt.Errorf("no interface %s in /proc/net/dev", dev)
	})
	return v, err
}

// genSwitchSink makes the input tests' line: namespace gen (eth0, hostMAC1) to the
// switch's p1, the switch's p2 to namespace sink (eth0, hostMAC2), offloads off on
// the host ends.
func genSwitchSink(ctx context.Context, t *testing.T, tb *netns.Testbed) (gen, sw, sink *netns.NS) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	var err error
	gen, err = tb.Namespace(ctx, "gen")
	must(err)
	sw, err = tb.Namespace(ctx, "sw")
	must(err)
	sink, err = tb.Namespace(ctx, "sink")
	must(err)
	_, err = tb.Veth(ctx, netns.LinkConfig{NS: gen, Name: "eth0", MAC: hostMAC1, DisableIPv6: true},
		netns.LinkConfig{NS: sw, Name: "p1", MAC: swMAC1, DisableIPv6: true})
	must(err)
	_, err = tb.Veth(ctx, netns.LinkConfig{NS: sw, Name: "p2", MAC: swMAC2, DisableIPv6: true},
		netns.LinkConfig{NS: sink, Name: "eth0", MAC: hostMAC2, DisableIPv6: true})
	must(err)
	for _, ns := range []*netns.NS{gen, sink} {
		must(ns.Do(func() error { return afpacket.DisableOffloads("eth0") }))
	}
	return gen, sw, sink
}

// TestInputBurstPFC: a sender bursts lossless frames into a switch port (sendmmsg
// batches of 256) much faster than the switch forwards them, and sends more than
// the port's receive queue could ever hold. The switch must turn its input backlog
// into PFC: XOFF out of that port when the queue fills an eighth of its buffer, XON
// once it has drained. The sender obeys PAUSE (checked before each batch), so nothing
// is lost: 0 input drops (the kernel's, at the switch's socket), 0 lossless drops, 0
// drops anywhere, every frame delivered. Counts only, no timing.
//
// A PAUSE lasts 33.5 ms at the ports' 1 Gb/s and the switch refreshes it every
// 16.8 ms while the port is held; on a host so loaded that the switch's goroutines
// miss a refresh, the sender's pause lapses and it sends on (it counts that). A try
// that lost frames after such a lapse is run again once; the second one must be
// clean.
func TestInputBurstPFC(t *testing.T) {
	for try := 1; ; try++ {
		var lapsed int
		var lost uint64
		t.Run(fmt.Sprintf("try%d", try), func(t *testing.T) { lapsed, lost = runInputBurst(t, try == 2) })
		if lost == 0 || try == 2 {
			return
		}
		t.Logf("try %d: %d frames lost after %d PAUSE lapses (the switch missed refreshes: host load); trying again", try, lost, lapsed)
	}
}

// runInputBurst is one try of TestInputBurstPFC; it returns the sender's PAUSE lapses
// and the frames lost. Unless final, losses after lapses are left to the caller.
func runInputBurst(t *testing.T, final bool) (lapsed int, lost uint64) {
	checkGoroutines(t)
	tb := netnstest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	gen, swNS, sink := genSwitchSink(ctx, t, tb)
	netDevBase, err := netDevDrops(gen, swNS, sink)
	must(err)

	// 1 Gb/s ports: a 65535-quanta PAUSE lasts 33.5 ms (the switch refreshes it every
	// 16.8 ms while held); the egress is no bottleneck for 64-byte frames (1.8 Mpps).
	const linkBps = 1_000_000_000
	// An 8 MiB receive buffer (the kernel grants twice that) with XOFF at an eighth of
	// it (2 MiB): reached within a few thousand frames even when the switch nearly
	// keeps up with the sender, as it does on an idle host without -race (2026-12-01:
	// the queue peaked at 2.9-3.7 MB, below the default quarter, 4 MiB, in 2 of 2
	// runs; with the 32 MiB default one run peaked at 11.7 MB without crossing its
	// XOFF), while a switch slowed down by -race and a loaded host still stops its
	// sender long before 16 MiB (peaks of 6.0-6.5 MB with XOFF at 4 MiB).
	sw, ctl := nsSwitch(t, swNS, 11, Config{DefaultRateBps: linkBps, InputXoff: 0.125,
		PortOptions: afpacket.Options{RecvBuffer: 8 << 20},
		Ports:       []PortConfig{{Num: 1, Ifname: "p1"}, {Num: 2, Ifname: "p2"}}})
	ctl.route(netip.MustParsePrefix("10.0.2.0/24"), 2, swMAC2, hostMAC2)
	ctl.trafficClass(26, 3, true)
	d0 := sw.Dump()
	capacity := d0.Ports[0].Input.BufferBytes
	if capacity == 0 {
		capacity = int64(d0.Ports[0].Socket.RecvBuffer)
	}
	rx0, err := devRxPackets(sink, "eth0")
	must(err)

	// Batches of 256 (about 210 KB of receive buffer each): after XOFF the queue
	// grows until the switch has sent the PAUSE and the sender has seen it (2-5 MB
	// above XOFF in the runs above), far less than the 14 MiB of room left.
	const total, burst, size = 250_000, 256, 64
	// The sender: 64-byte RoCEv2 frames, DSCP 26 (priority 3, lossless), in sendmmsg
	// batches; it reads the PFC frames the switch sends and checks the pause
	// before each batch, as a lossless NIC would (within its goroutines' latency).
	var port *afpacket.Port
	must(gen.Do(func() error {
		port, err = afpacket.Open("eth0", afpacket.Options{DisableOffloads: true, Batch: burst, Log: testLog()})
		return err
	}))
	t.Cleanup(func() { _ = port.Close() })
	s := &pfcSender{p: port, linkBps: linkBps, obey: true}
	// More than the receive queue can hold, at any frame's charge (at least 512 B of
	// buffer per frame; 830 B measured on veth): without PAUSE, drops are certain.
	if total*512 <= capacity {
		t.Fatalf("%d frames fit in the %d-B receive queue: the test proves nothing", total, capacity)
	}
	f := roce(t, hostIP1, hostIP2, hostMAC1, swMAC1, 26, wire.ECT0, 1, size)
	batch := make([][]byte, burst)
	for i := range batch {
		batch[i] = f
	}
	rctx, rcancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { rcancel(); wg.Wait() }()
	wg.Add(1)
	go func() { defer wg.Done(); s.readPFC(rctx) }()
	deferred := 0 // batches held back by a PAUSE, with frames left to send
	for sent := 0; sent < total; {
		if until := s.pausedUntil.Load(); time.Now().UnixNano() < until {
			deferred++
			time.Sleep(100 * time.Microsecond)
			continue
		} else if until != 0 && s.pausedUntil.CompareAndSwap(until, 0) {
			lapsed++ // expired without XON: no refresh came in time
		}
		k := min(burst, total-sent)
		n, err := port.WriteBatch(ctx, batch[:k])
		must(err)
		sent += n
		s.sent.Store(int64(sent))
	}

	// Wait (a guard against hangs, not a timing claim) until every frame is delivered
	// or counted as lost somewhere, and the switch has let the sender go again.
	var d Dump
	var delivered uint64
	for {
		rx, err := devRxPackets(sink, "eth0")
		must(err)
		delivered = rx - rx0
		d = sw.Dump()
		nd, err := netDevDrops(gen, swNS, sink)
		must(err)
		lost = d.Runtime.InputDrops + d.TM.TotalDroppedPkts + d.Runtime.IngressDropped + (nd - netDevBase)
		if delivered+lost >= total && !d.Ports[0].Input.Held && d.TM.Buffer.UsedBytes == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("gave up: delivered %d + lost %d of %d, port 1 held %v; runtime %+v", delivered, lost, total, d.Ports[0].Input.Held, d.Runtime)
		}
		time.Sleep(20 * time.Millisecond)
	}
	in, r, tp := d.Ports[0].Input, d.Runtime, d.TM.Ports[0]
	t.Logf("%d frames of %d B in batches of %d: delivered %d; sender held back %d batches, saw %d PAUSEs, %d lapsed; switch: %d input holds, "+
		"PFC XOFF %d XON %d refresh %d (input holds: %d XOFF, %d XON), receive queue max %d B of %d B (%.0f%%), input drops %d, lossless drops %d",
		total, size, burst, delivered, deferred, s.pauses.Load(), lapsed, in.Holds, r.PFCTxXoff, r.PFCTxXon, r.PFCTxRefresh,
		tp.InputHoldXoff, tp.InputHoldXon, in.BacklogMaxBytes, in.BufferBytes, 100*float64(in.BacklogMaxBytes)/float64(max(1, in.BufferBytes)),
		r.InputDrops, r.LosslessDrops)

	if in.Drops != r.InputDrops || d.Ports[0].Socket.KernelDrops != r.InputDrops {
		t.Errorf("input drops disagree: runtime %d, port %d, socket %d", r.InputDrops, in.Drops, d.Ports[0].Socket.KernelDrops)
	}
	if c := ctl.counter("FastcnpIngress.input_dropped", 1); c.Packets != int64(r.InputDrops) {
		t.Errorf("input_dropped[1] = %d, the switch counted %d input drops", c.Packets, r.InputDrops)
	}
	if lost != 0 && lapsed > 0 && !final {
		return lapsed, lost
	}
	if r.InputDrops != 0 || r.LosslessDrops != 0 || d.TM.TotalDroppedPkts != 0 || lost != 0 || delivered != total {
		t.Errorf("drops: input %d, lossless %d, TM %d, everywhere %d; delivered %d of %d (sender's PAUSE lapses: %d); want 0 and all",
			r.InputDrops, r.LosslessDrops, d.TM.TotalDroppedPkts, lost, delivered, total, lapsed)
	}
	// PFC did it: the switch held its input and the sender stopped with frames left.
	if in.Holds == 0 || tp.InputHoldXoff == 0 || r.PFCTxXoff == 0 || deferred == 0 || s.pauses.Load() == 0 {
		t.Errorf("no input backpressure: %d holds (%d XOFF), PFC XOFF sent %d, sender held back %d batches after %d PAUSEs",
			in.Holds, tp.InputHoldXoff, r.PFCTxXoff, deferred, s.pauses.Load())
	}
	// Every pause ended: as many XON as XOFF, per hold and in all.
	if tp.InputHoldXon != tp.InputHoldXoff || r.PFCTxXon != r.PFCTxXoff || in.Held {
		t.Errorf("pauses not all ended: input holds %d XOFF / %d XON, all %d XOFF / %d XON, held %v",
			tp.InputHoldXoff, tp.InputHoldXon, r.PFCTxXoff, r.PFCTxXon, in.Held)
	}
	// Every XOFF and refresh the switch sent reached the sender (waited for: its
	// reader runs on its own).
	for deadline := time.Now().Add(10 * time.Second); s.pauses.Load() < int64(r.PFCTxXoff+r.PFCTxRefresh) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if got := s.pauses.Load(); got != int64(r.PFCTxXoff+r.PFCTxRefresh) {
		t.Errorf("sender saw %d PAUSEs, the switch sent %d XOFF + %d refreshes", got, r.PFCTxXoff, r.PFCTxRefresh)
	}
	// Over P4Runtime: the XOFFs (the input drops, none, were checked above).
	if c := ctl.counter("FastcnpIngress.pfc_xoff_sent", 1*8+3); c.Packets != int64(r.PFCTxXoff+r.PFCTxRefresh) {
		t.Errorf("pfc_xoff_sent[1*8+3] = %d, the switch sent %d XOFF + %d refreshes", c.Packets, r.PFCTxXoff, r.PFCTxRefresh)
	}
	return lapsed, lost
}
