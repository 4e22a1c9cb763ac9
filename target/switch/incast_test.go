package softswitch

import (
	"bufio"
	"context"
	"fmt"
	"math/bits"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/internal/netns"
	"github.com/fastcnp/fastcnp/internal/netns/netnstest"
	"github.com/fastcnp/fastcnp/target/port"
	"github.com/fastcnp/fastcnp/target/tm"
	"github.com/fastcnp/fastcnp/wire"
)

// pfcSender sends paced RoCEv2 frames out of one port and, when obey is set, obeys
// the PFC frames it receives for priority 3, as a lossless NIC does (within its
// goroutines' wake-up latency, which the switch's headroom covers through
// TM.ProcessingAllowanceNs).
type pfcSender struct {
	p           *port.Port
	rateBps     float64 // pacing rate
	linkBps     float64 // link rate: how long a pause quantum lasts
	obey        bool    // stop while paused
	pausedUntil atomic.Int64
	pauses      atomic.Int64 // PFC frames with quanta > 0 for priority 3 received
	sent        int
}

func (s *pfcSender) readPFC(ctx context.Context) {
	msgs := s.p.NewBatch(16)
	var f wire.Frame
	for {
		n, err := s.p.ReadBatch(ctx, msgs)
		if err != nil {
			return
		}
		for _, m := range msgs[:n] {
			if wire.Parse(m.Buf[:m.N], wire.ParseOptions{}, &f) != nil || !f.Has(wire.LayerPFC) || !f.PFC.Enabled(3) {
				continue
			}
			q := f.PFC.Time[3]
			if q == 0 {
				s.pausedUntil.Store(0)
				continue
			}
			s.pauses.Add(1)
			if s.obey {
				s.pausedUntil.Store(time.Now().UnixNano() + int64(float64(q)*512/s.linkBps*1e9))
			}
		}
	}
}

// send paces frames at rateBps with a token bucket. Go timers sleep about a
// millisecond, so the bucket holds 2 ms of tokens (at least 2 frames): at the link
// rate a sender sends bursts of about a millisecond's worth, as fast as veth takes
// them, and checks the pause before every frame.
func (s *pfcSender) send(ctx context.Context, frames [][]byte) error {
	const tick = 500 * time.Microsecond
	frameBits := float64(len(frames[0])+24) * 8
	burst := max(2*frameBits, s.rateBps*0.002)
	tokens, last := frameBits, time.Now()
	for s.sent < len(frames) {
		now := time.Now()
		tokens = min(tokens+now.Sub(last).Seconds()*s.rateBps, burst)
		last = now
		if now.UnixNano() < s.pausedUntil.Load() || tokens < frameBits {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(tick):
			}
			continue
		}
		if err := s.p.WriteFrame(ctx, frames[s.sent]); err != nil {
			return fmt.Errorf("sender %s: %w", s.p.Name(), err)
		}
		tokens -= frameBits
		s.sent++
	}
	return nil
}

// startTshark captures PFC frames on devs in ns into path until stop is called.
func startTshark(t *testing.T, ctx context.Context, ns *netns.NS, devs []string, path string) (stop func()) {
	t.Helper()
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed (apt-get install tshark)")
	}
	// A capture filter given before the interfaces applies to all of them.
	args := []string{"netns", "exec", ns.Name(), tshark, "-f", "ether proto 0x8808"}
	for _, d := range devs {
		args = append(args, "-i", d)
	}
	args = append(args, "-w", path)
	cmd := exec.CommandContext(ctx, "ip", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	var lines []string
	var mu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
			if strings.Contains(sc.Text(), "Capturing on") {
				once.Do(func() { close(ready) })
			}
		}
		once.Do(func() { close(ready) })
	}()
	select {
	case <-ready:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		t.Fatal("tshark did not start capturing")
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			time.Sleep(200 * time.Millisecond) // let the last frames reach the capture
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
			}
			mu.Lock()
			defer mu.Unlock()
			t.Logf("tshark: %s", strings.Join(lines, " | "))
		})
	}
	t.Cleanup(stop)
	return stop
}

// incastNet is the incast testbed: 20 senders in one namespace, the switch's 21 ports
// in another, the receiver in a third; shared by the cases of TestIncastPFC.
type incastNet struct {
	snd, rcv, sw *netns.NS
	cfg          Config // ports and rates
}

// incastCase is one incast run.
type incastCase struct {
	name      string
	paceBps   float64 // each sender's rate
	perSender int     // frames per sender
	// obey: the senders stop while paused. Otherwise (the control) they ignore PAUSE and
	// the receiver holds the egress with PFC until every frame has been offered to the
	// TM, so that what the switch can absorb per sender is exact.
	obey bool
	// headroom is reserved per sender port (ingress priority group 3). It covers what a
	// sender at paceBps sends between the crossing of XOFF and its stop: the switch's
	// RX backlog (it shares the 2 cores with the 20 senders) and the senders' wake-up
	// latency (milliseconds to tens of ms on the loaded VM), not only the wire.
	headroom int64
	// overflow: each sender sends more than its priority group could absorb without
	// PAUSE at that pace, so that a zero-drop result is due to PFC (checked).
	overflow bool
}

const (
	incastSenders = 20
	incastSize    = 1000
	incastLinkBps = 100_000_000
	incastRcvPort = incastSenders + 1
	incastXoff    = 8_000
	incastTMLen   = incastSize + fcsBytes // the TM's length of one frame
)

// absorbed is how many frames of one sender its priority group holds when nothing
// drains: below XOFF in the shared pool, then the headroom.
func (tc incastCase) absorbed() int {
	return incastXoff/incastTMLen + int(tc.headroom)/incastTMLen
}

// TestIncastPFC: 20 senders (one namespace, 20 veth pairs, AF_PACKET sockets) send
// RoCEv2 frames with DSCP 26 (lossless priority 3 by the traffic_class table) to one
// receiver behind a 100 Mb/s egress; every port is shaped to 100 Mb/s, XOFF is 8 KB
// (static) per ingress priority group.
//   - Senders paced at 10 Mb/s (2:1 oversubscribed) and at the 100 Mb/s link rate
//     (20:1), obeying PFC: the switch sends PFC PAUSE to the senders (captured with
//     tshark on the senders' interfaces and decoded by Wireshark as "Class Based Flow
//     Control"), every frame is delivered, the lossless class drops nothing (TM and
//     socket counters), the egress never beats its shaped rate, and the switch's
//     P4Runtime counters agree (ecn_marked on the congested port in ecn mode, dropped 0).
//     In the paced case each sender sends more than its priority group could absorb
//     without PAUSE, so the zero is earned by PFC, not by a large buffer. The line-rate
//     case reserves 2 MiB per sender (the software's reaction at 20 x 100 Mb/s on 2
//     shared cores needs up to ~0.9 MB) and sends less than that: it shows PFC at 20:1.
//   - Control: the paced case's configuration, line-rate senders that ignore PAUSE, the
//     egress held by the receiver's PFC: each sender's frames beyond XOFF + headroom
//     are lossless drops, exactly counted and logged; the rest leave after the XON.
func TestIncastPFC(t *testing.T) {
	checkGoroutines(t)
	tb := netnstest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now()
	var n incastNet
	var err error
	n.snd, err = tb.Namespace(ctx, "snd")
	must(err)
	n.rcv, err = tb.Namespace(ctx, "rcv")
	must(err)
	n.sw, err = tb.Namespace(ctx, "sw")
	must(err)
	n.cfg = Config{DefaultRateBps: incastLinkBps, LinkDelay: 2 * time.Microsecond}
	for i := range incastSenders {
		_, err = tb.Veth(ctx,
			netns.LinkConfig{NS: n.snd, Name: fmt.Sprintf("s%d", i), MAC: mac(true, 1, byte(i)), DisableIPv6: true},
			netns.LinkConfig{NS: n.sw, Name: fmt.Sprintf("p%d", i+1), MAC: mac(false, 1, byte(i+1)), DisableIPv6: true})
		must(err)
		n.cfg.Ports = append(n.cfg.Ports, PortConfig{Num: uint16(i + 1), Ifname: fmt.Sprintf("p%d", i+1)})
	}
	_, err = tb.Veth(ctx,
		netns.LinkConfig{NS: n.rcv, Name: "eth0", MAC: mac(true, 9, 1), DisableIPv6: true},
		netns.LinkConfig{NS: n.sw, Name: fmt.Sprintf("p%d", incastRcvPort), MAC: mac(false, 9, 1), DisableIPv6: true})
	must(err)
	n.cfg.Ports = append(n.cfg.Ports, PortConfig{Num: incastRcvPort, Ifname: fmt.Sprintf("p%d", incastRcvPort)})
	t.Logf("testbed: %d veth pairs in %v", incastSenders+1, time.Since(t0))

	// Headroom: 256 KB is 200 ms of a 10 Mb/s sender (one group was seen to need
	// 112 KB on the loaded VM under -race), 2 MiB 168 ms of a 100 Mb/s one (seen: 860 KB).
	const paced, line = 10_000_000, incastLinkBps
	for _, tc := range []incastCase{
		{name: "paced 10Mbps 2to1", paceBps: paced, perSender: 600, obey: true, headroom: 256 << 10, overflow: true},
		{name: "line rate 20to1", paceBps: line, perSender: 1000, obey: true, headroom: 2 << 20},
		{name: "line rate senders ignore PFC", paceBps: line, perSender: 600, obey: false, headroom: 256 << 10, overflow: true},
	} {
		t.Run(tc.name, func(t *testing.T) { runIncast(t, &n, tc) })
	}
}

func runIncast(t *testing.T, n *incastNet, tc incastCase) {
	checkGoroutines(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Without PAUSE a sender's group fills at its pace minus its share of the egress
	// (1/20 of 100 Mb/s) and overflows after absorbed / (1 - share/pace) frames.
	share := float64(incastLinkBps) / incastSenders
	if tc.overflow && (tc.paceBps <= share || float64(tc.perSender) <= float64(tc.absorbed())/(1-share/tc.paceBps)) {
		t.Fatalf("%d frames per sender at %.0f b/s fit in XOFF + headroom (%d frames) without PFC: the case proves nothing",
			tc.perSender, tc.paceBps, tc.absorbed())
	}
	cfg := n.cfg
	cfg.Ports = append([]PortConfig(nil), n.cfg.Ports...)
	for i := range incastSenders {
		cfg.Ports[i].HeadroomBytes = tc.headroom
	}
	cfg.TM.BufferBytes = incastSenders*tc.headroom + 8<<20
	cfg.TM.XoffBytes, cfg.TM.Threshold = incastXoff, tm.ThresholdStatic
	cfg.TM.WireOverhead = true
	logger, hook := test.NewNullLogger()
	cfg.Log = logger
	sw, ctl := nsSwitch(t, n.sw, 1, cfg)
	dst := netip.MustParseAddr("10.0.9.1")
	ctl.route(netip.MustParsePrefix("10.0.9.0/24"), incastRcvPort, mac(false, 9, 1), mac(true, 9, 1))
	ctl.trafficClass(26, 3, true)
	ctl.portConfig(incastRcvPort, incastLinkBps, 1, 5_000, 200_000) // ecn mode: RED 5 KB .. 200 KB
	rcvTM := incastSenders                                          // the receiver's port in the TM

	// Receiver: counts the data frames and CE marks, and when the last one came.
	var rp *port.Port
	must(n.rcv.Do(func() error {
		var err error
		rp, err = port.Open("eth0", port.Options{DisableOffloads: true, Log: testLog()})
		return err
	}))
	t.Cleanup(func() { _ = rp.Close() })
	var got, ce, lastAt atomic.Int64
	rctx, rcancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { rcancel(); wg.Wait() }()
	wg.Add(1)
	go func() {
		defer wg.Done()
		msgs := rp.NewBatch(64)
		var f wire.Frame
		for {
			k, err := rp.ReadBatch(rctx, msgs)
			if err != nil {
				return
			}
			for _, m := range msgs[:k] {
				if wire.Parse(m.Buf[:m.N], wire.ParseOptions{}, &f) == nil && f.Has(wire.LayerBTH) && f.IPv4.Dst == dst.As4() {
					got.Add(1)
					lastAt.Store(time.Now().UnixNano())
					if f.IPv4.ECN() == wire.CE {
						ce.Add(1)
					}
				}
			}
		}
	}()
	rcvPFC := func(quanta uint16) {
		b := make([]byte, 64)
		k, err := wire.BuildPFC(b, wire.MAC(mac(true, 9, 1)), 1<<3, [8]uint16{3: quanta})
		must(err)
		must(rp.WriteFrame(ctx, b[:k]))
	}

	// Senders.
	ss := make([]*pfcSender, incastSenders)
	must(n.snd.Do(func() error {
		for i := range ss {
			p, err := port.Open(fmt.Sprintf("s%d", i), port.Options{DisableOffloads: true, Log: testLog()})
			if err != nil {
				return err
			}
			ss[i] = &pfcSender{p: p, rateBps: tc.paceBps, linkBps: incastLinkBps, obey: tc.obey}
		}
		return nil
	}))
	t.Cleanup(func() {
		for _, s := range ss {
			if s != nil {
				_ = s.p.Close()
			}
		}
	})
	var pcap string
	stopCapture := func() {}
	if tc.obey {
		pcap = filepath.Join(t.TempDir(), "senders.pcapng")
		var devs []string
		for i := range incastSenders {
			devs = append(devs, fmt.Sprintf("s%d", i))
		}
		stopCapture = startTshark(t, ctx, n.snd, devs, pcap)
	}
	// One frame per sender, sent perSender times (the receiver counts, it does not
	// check sequence numbers).
	frames := make([][][]byte, incastSenders)
	for i := range frames {
		f := roce(t, netip.AddrFrom4([4]byte{10, 0, 1, byte(i + 1)}), dst, mac(true, 1, byte(i)), mac(false, 1, byte(i+1)), 26, wire.ECT0, 1, incastSize)
		frames[i] = make([][]byte, tc.perSender)
		for k := range frames[i] {
			frames[i][k] = f
		}
	}
	for _, s := range ss {
		wg.Add(1)
		go func() { defer wg.Done(); s.readPFC(rctx) }()
	}
	want := int64(incastSenders * tc.perSender)
	stopHold := func() {}
	if !tc.obey {
		// Hold the egress (65535 quanta = 335 ms, refreshed every 20 ms).
		xoffFrame := make([]byte, 64)
		k, err := wire.BuildPFC(xoffFrame, wire.MAC(mac(true, 9, 1)), 1<<3, [8]uint16{3: 0xffff})
		must(err)
		xoffFrame = xoffFrame[:k]
		rcvPFC(0xffff)
		waitDump(t, sw, "the receiver's egress paused", func(d *Dump) bool { return d.TM.Ports[rcvTM].Egress[3].Paused })
		hctx, hcancel := context.WithCancel(ctx)
		var hwg sync.WaitGroup
		hwg.Add(1)
		go func() {
			defer hwg.Done()
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-hctx.Done():
					return
				case <-tick.C:
					_ = rp.WriteFrame(hctx, xoffFrame)
				}
			}
		}()
		stopHold = func() { hcancel(); hwg.Wait() }
	}

	start := time.Now()
	errc := make(chan error, incastSenders)
	var swg sync.WaitGroup
	for i, s := range ss {
		swg.Add(1)
		go func() { defer swg.Done(); errc <- s.send(ctx, frames[i]) }()
	}
	swg.Wait()
	close(errc)
	for err := range errc {
		must(err)
	}
	if !tc.obey {
		// Every frame offered to the TM while the egress was held: the drops are exact.
		d := waitDump(t, sw, "every frame offered to the TM", func(d *Dump) bool {
			return int64(d.Runtime.Enqueued+d.Runtime.TMDropped) >= want
		})
		stopHold()
		if deq := d.TM.Ports[rcvTM].Egress[3].DequeuedPkts; deq != 0 {
			// The control's premise failed, not the switch: a refresh of the 335-ms
			// pause was not processed in time (seen once, under -race on a crushed VM).
			t.Skipf("the receiver's PAUSE lapsed (%d frames left the held egress): the VM is too loaded for the control", deq)
		}
		wantDrops := uint64(incastSenders * (tc.perSender - tc.absorbed()))
		if d.TM.LosslessDropPkts != wantDrops || d.Runtime.LosslessDrops != wantDrops {
			t.Errorf("lossless drops: TM %d, runtime %d, want %d (%d senders x (%d sent - %d absorbed))",
				d.TM.LosslessDropPkts, d.Runtime.LosslessDrops, wantDrops, incastSenders, tc.perSender, tc.absorbed())
		}
		for i := range incastSenders {
			if g := d.TM.Ports[i].Ingress[3]; g.DroppedPkts != uint64(tc.perSender-tc.absorbed()) || g.HeadroomBytes > tc.headroom {
				t.Errorf("sender %d's priority group: %d dropped, %d B of headroom held", i, g.DroppedPkts, g.HeadroomBytes)
			}
		}
		rcvPFC(0) // XON: the absorbed frames leave
	}
	// Wait (a guard, not a timing claim) until every frame is delivered or counted as
	// dropped and the buffer is empty.
	var d Dump
	for {
		d = sw.Dump()
		if got.Load()+int64(d.TM.TotalDroppedPkts) >= want && d.TM.Buffer.UsedBytes == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("gave up: received %d + dropped %d of %d, buffer %d B", got.Load(), d.TM.TotalDroppedPkts, want, d.TM.Buffer.UsedBytes)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // the last frames' way from the switch's socket to the receiver
	stopCapture()
	d = sw.Dump()

	elapsed := time.Duration(lastAt.Load() - start.UnixNano())
	wireBits := int64(8 * (incastTMLen + tm.PreambleIFGBytes))
	var pauses int64
	for _, s := range ss {
		pauses += s.pauses.Load()
	}
	var xoffNs, pgHdrmMax int64
	var kernelDrops uint64
	for i := range incastSenders {
		xoffNs += d.TM.Ports[i].Ingress[3].XoffNs
		pgHdrmMax = max(pgHdrmMax, d.TM.Ports[i].Ingress[3].HeadroomHighWater)
	}
	for _, p := range d.Ports {
		if p.Socket != nil {
			kernelDrops += p.Socket.KernelDrops
		}
	}
	t.Logf("%d x %d B from %d senders at %.0f Mb/s each (obey PFC %v): received %d (%d CE) in %v = %.1f Mb/s on the wire of the %d Mb/s egress; "+
		"PFC XOFF %d XON %d refresh %d, PAUSEs seen by senders %d, priority groups in XOFF %v on average; lossless drops %d; "+
		"buffer high-water %d B, largest headroom high-water of a priority group %d B of %d B; switch socket drops %d",
		want, incastSize, incastSenders, tc.paceBps/1e6, tc.obey, got.Load(), ce.Load(), elapsed.Round(time.Millisecond),
		float64(got.Load()*wireBits)/elapsed.Seconds()/1e6, incastLinkBps/1_000_000,
		d.Runtime.PFCTxXoff, d.Runtime.PFCTxXon, d.Runtime.PFCTxRefresh, pauses, time.Duration(xoffNs/incastSenders).Round(time.Millisecond),
		d.TM.LosslessDropPkts, d.TM.Buffer.HighWater, pgHdrmMax, tc.headroom, kernelDrops)

	// Common to all cases: nothing is lost outside the TM's counters, the egress never
	// beats its shaper, the runtime and the TM agree, the senders were paused.
	if got.Load()+int64(d.TM.TotalDroppedPkts) != want {
		t.Errorf("received %d + dropped %d != sent %d: frames lost uncounted", got.Load(), d.TM.TotalDroppedPkts, want)
	}
	if kernelDrops != 0 {
		t.Errorf("the switch's sockets dropped %d frames", kernelDrops)
	}
	if minNs := got.Load() * wireBits * 1e9 / incastLinkBps; int64(elapsed) < minNs {
		t.Errorf("%d frames delivered in %v, faster than the %d b/s egress allows (%v)", got.Load(), elapsed, incastLinkBps, time.Duration(minNs))
	}
	if d.Runtime.LosslessDrops != d.TM.LosslessDropPkts || d.TM.TotalDroppedPkts != d.TM.LosslessDropPkts {
		t.Errorf("drops: runtime lossless %d, TM lossless %d, TM all %d", d.Runtime.LosslessDrops, d.TM.LosslessDropPkts, d.TM.TotalDroppedPkts)
	}
	if d.Runtime.PFCTxXoff == 0 || pauses == 0 {
		t.Errorf("no PFC: XOFF sent %d, pauses seen by senders %d", d.Runtime.PFCTxXoff, pauses)
	}
	// P4Runtime counters: readable, and consistent with what happened.
	if c := ctl.counter("FastcnpEgress.ecn_marked", incastRcvPort); c.Packets == 0 || c.Packets != ce.Load() {
		t.Errorf("ecn_marked[%d] = %d packets, receiver saw %d CE", incastRcvPort, c.Packets, ce.Load())
	}
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	defer ccancel()
	cells, err := ctl.c.ReadCounters(cctx, "FastcnpIngress.dropped", p4rt.AllIndexes)
	must(err)
	if len(cells) == 0 {
		t.Error("no dropped counter cells read")
	}
	for _, c := range cells {
		if c.Index >= 1 && c.Index <= incastSenders && c.Packets != 0 {
			t.Errorf("dropped[%d] = %d (the pipeline dropped data frames)", c.Index, c.Packets)
		}
	}

	if !tc.obey {
		warned := 0
		for _, e := range hook.AllEntries() {
			if e.Level == logrus.WarnLevel && strings.Contains(e.Message, "lossless drop") {
				warned++
			}
		}
		// Logged at the 1st, 2nd, 4th, 8th... drop.
		if wantWarn := bits.Len64(d.TM.LosslessDropPkts); warned != wantWarn {
			t.Errorf("%d lossless drops, %d warnings logged, want %d", d.TM.LosslessDropPkts, warned, wantWarn)
		}
		t.Logf("control: %d lossless drops (%d per sender beyond %d absorbed), %d warnings logged",
			d.TM.LosslessDropPkts, tc.perSender-tc.absorbed(), tc.absorbed(), warned)
		return
	}
	if got.Load() != want || d.TM.LosslessDropPkts != 0 || d.TM.TotalDroppedPkts != 0 {
		t.Errorf("receiver got %d of %d frames; lossless drops %d, all drops %d", got.Load(), want, d.TM.LosslessDropPkts, d.TM.TotalDroppedPkts)
	}

	// The PAUSE frames on the wire, as Wireshark decodes them (the Info column reads
	// "Class Based Flow Control [CBFC] Pause").
	out, err := exec.CommandContext(ctx, "tshark", "-r", pcap, "-Y", "macc.opcode == 0x0101", "-T", "fields",
		"-e", "eth.src", "-e", "macc.cbfc.enbv.c3", "-e", "macc.cbfc.pause_time.c3", "-e", "_ws.col.Info").Output()
	if err != nil {
		t.Fatalf("tshark -r: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) == 0 || lines[0] == "" {
		t.Fatalf("no PFC frame captured on the senders' interfaces")
	}
	sent := d.Runtime.PFCTxXoff + d.Runtime.PFCTxXon + d.Runtime.PFCTxRefresh
	// tshark may lose frames under load (20 interfaces on a busy VM): at most what the
	// switch sent, and both kinds.
	if uint64(len(lines)) > sent {
		t.Errorf("captured %d PFC frames, the switch sent %d", len(lines), sent)
	}
	var xoff, xon, decoded int
	for _, l := range lines {
		f := strings.Split(l, "\t")
		if len(f) != 4 || f[1] != "1" {
			t.Errorf("unexpected PFC frame (eth.src, class 3 enabled, quanta, info): %q", l)
			continue
		}
		switch f[2] {
		case "65535":
			xoff++
		case "0":
			xon++
		default:
			t.Errorf("PFC frame with quanta %s: %q", f[2], l)
		}
		if strings.Contains(f[3], "Class Based Flow Control") {
			decoded++
		}
	}
	if xoff == 0 || xon == 0 {
		t.Errorf("captured %d XOFF and %d XON for priority 3, want both", xoff, xon)
	}
	if decoded != len(lines) {
		t.Errorf("Wireshark decodes %d of %d captured frames as Class Based Flow Control", decoded, len(lines))
	}
	t.Logf("tshark on the senders: %d PFC frames (%d XOFF, %d XON) of %d sent, %d decoded as \"Class Based Flow Control\"; first ones: %q",
		len(lines), xoff, xon, sent, decoded, lines[:min(len(lines), 3)])
	_ = os.Remove(pcap)
}
