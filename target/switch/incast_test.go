package softswitch

import (
	"bufio"
	"context"
	"errors"
	"fmt"
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

	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/internal/netns"
	"github.com/fastcnp/fastcnp/internal/netns/netnstest"
	"github.com/fastcnp/fastcnp/target/port"
	"github.com/fastcnp/fastcnp/target/tm"
	"github.com/fastcnp/fastcnp/wire"
)

// pfcSender sends paced RoCEv2 frames out of one port and obeys the PFC frames it
// receives for priority 3, as a lossless NIC does (within its goroutines' wake-up
// latency, which the switch's headroom covers through TM.ProcessingAllowanceNs).
type pfcSender struct {
	p           *port.Port
	rateBps     float64 // pacing rate
	linkBps     float64 // link rate: how long a pause quantum lasts
	pausedUntil atomic.Int64
	pauses      atomic.Int64
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
			s.pausedUntil.Store(time.Now().UnixNano() + int64(float64(q)*512/s.linkBps*1e9))
		}
	}
}

func (s *pfcSender) send(ctx context.Context, frames [][]byte) error {
	const tick = 500 * time.Microsecond
	frameBits := float64(len(frames[0])+24) * 8
	tokens, last := frameBits, time.Now()
	for s.sent < len(frames) {
		now := time.Now()
		tokens = min(tokens+now.Sub(last).Seconds()*s.rateBps, 2*frameBits)
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

// TestIncastPFC: 20 senders (one namespace, 20 veth pairs, AF_PACKET sockets) send
// RoCEv2 frames with DSCP 26 (lossless priority 3 by the traffic_class table) to one
// receiver behind a 100 Mb/s egress, 2x oversubscribed. The switch sends PFC PAUSE
// to the senders (captured with tshark on the senders' interfaces and decoded by
// Wireshark as "Class Based Flow Control"), the senders obey it, the lossless class
// drops nothing (TM counters, every frame delivered), and the switch's P4Runtime
// counters are read back (ecn_marked on the congested port in ecn mode).
func TestIncastPFC(t *testing.T) {
	checkGoroutines(t)
	tb := netnstest.New(t)
	const (
		senders   = 20
		perSender = 200
		size      = 1000
		linkBps   = 100_000_000
		paceBps   = 10_000_000
		rcvPort   = senders + 1
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now()
	snd, err := tb.Namespace(ctx, "snd")
	must(err)
	rcv, err := tb.Namespace(ctx, "rcv")
	must(err)
	swNS, err := tb.Namespace(ctx, "sw")
	must(err)
	cfg := Config{DefaultRateBps: linkBps, LinkDelay: 2 * time.Microsecond}
	for i := range senders {
		_, err = tb.Veth(ctx,
			netns.LinkConfig{NS: snd, Name: fmt.Sprintf("s%d", i), MAC: mac(true, 1, byte(i)), DisableIPv6: true},
			netns.LinkConfig{NS: swNS, Name: fmt.Sprintf("p%d", i+1), MAC: mac(false, 1, byte(i+1)), DisableIPv6: true})
		must(err)
		cfg.Ports = append(cfg.Ports, PortConfig{Num: uint16(i + 1), Ifname: fmt.Sprintf("p%d", i+1)})
	}
	_, err = tb.Veth(ctx,
		netns.LinkConfig{NS: rcv, Name: "eth0", MAC: mac(true, 9, 1), DisableIPv6: true},
		netns.LinkConfig{NS: swNS, Name: fmt.Sprintf("p%d", rcvPort), MAC: mac(false, 9, 1), DisableIPv6: true})
	must(err)
	cfg.Ports = append(cfg.Ports, PortConfig{Num: rcvPort, Ifname: fmt.Sprintf("p%d", rcvPort)})
	t.Logf("testbed: %d veth pairs in %v", senders+1, time.Since(t0))

	// The senders react within a few ms (goroutine wake-ups on a loaded 2-core VM):
	// 20 ms of allowance at 100 Mb/s is 250 KB of headroom per ingress port.
	cfg.TM.BufferBytes = 8 << 20
	cfg.TM.ProcessingAllowanceNs = int64(20 * time.Millisecond)
	cfg.TM.XoffBytes, cfg.TM.Threshold = 8_000, tm.ThresholdStatic
	cfg.TM.WireOverhead = true
	sw, ctl := nsSwitch(t, swNS, 1, cfg)
	dst := netip.MustParseAddr("10.0.9.1")
	ctl.route(netip.MustParsePrefix("10.0.9.0/24"), rcvPort, mac(false, 9, 1), mac(true, 9, 1))
	ctl.trafficClass(26, 3, true)
	ctl.portConfig(rcvPort, linkBps, 1, 5_000, 200_000) // ecn mode: RED 5 KB .. 200 KB

	// Receiver.
	var rp *port.Port
	must(rcv.Do(func() error {
		var err error
		rp, err = port.Open("eth0", port.Options{DisableOffloads: true, Log: testLog()})
		return err
	}))
	t.Cleanup(func() { _ = rp.Close() })
	var got, ce atomic.Int64
	rctx, rcancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { rcancel(); wg.Wait() }()
	wg.Add(1)
	go func() {
		defer wg.Done()
		msgs := rp.NewBatch(64)
		var f wire.Frame
		for {
			n, err := rp.ReadBatch(rctx, msgs)
			if err != nil {
				return
			}
			for _, m := range msgs[:n] {
				if wire.Parse(m.Buf[:m.N], wire.ParseOptions{}, &f) == nil && f.Has(wire.LayerBTH) && f.IPv4.Dst == dst.As4() {
					got.Add(1)
					if f.IPv4.ECN() == wire.CE {
						ce.Add(1)
					}
				}
			}
		}
	}()

	// Senders.
	ss := make([]*pfcSender, senders)
	must(snd.Do(func() error {
		for i := range ss {
			p, err := port.Open(fmt.Sprintf("s%d", i), port.Options{DisableOffloads: true, Log: testLog()})
			if err != nil {
				return err
			}
			ss[i] = &pfcSender{p: p, rateBps: paceBps, linkBps: linkBps}
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
	pcap := filepath.Join(t.TempDir(), "senders.pcapng")
	var devs []string
	for i := range senders {
		devs = append(devs, fmt.Sprintf("s%d", i))
	}
	stopCapture := startTshark(t, ctx, snd, devs, pcap)

	start := time.Now()
	errc := make(chan error, senders)
	var swg sync.WaitGroup
	for i, s := range ss {
		wg.Add(1)
		go func() { defer wg.Done(); s.readPFC(rctx) }()
		frames := make([][]byte, perSender)
		for k := range frames {
			frames[k] = roce(t, netip.AddrFrom4([4]byte{10, 0, 1, byte(i + 1)}), dst, mac(true, 1, byte(i)), mac(false, 1, byte(i+1)), 26, wire.ECT0, uint32(k), size)
		}
		swg.Add(1)
		go func() { defer swg.Done(); errc <- s.send(ctx, frames) }()
	}
	swg.Wait()
	close(errc)
	for err := range errc {
		must(err)
	}
	want := int64(senders * perSender)
	for got.Load() < want && ctx.Err() == nil && time.Since(start) < 30*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	elapsed := time.Since(start)
	stopCapture()

	d := sw.Dump()
	var pauses int64
	for _, s := range ss {
		pauses += s.pauses.Load()
	}
	t.Logf("%d frames of %d B from %d senders in %v; received %d (%d CE); PFC XOFF %d XON %d refresh %d; PAUSEs obeyed by senders %d; buffer high-water %d B, headroom high-water %d B",
		want, size, senders, elapsed, got.Load(), ce.Load(), d.Runtime.PFCTxXoff, d.Runtime.PFCTxXon, d.Runtime.PFCTxRefresh,
		pauses, d.TM.Buffer.HighWater, d.TM.Buffer.HeadroomHighWater)
	if got.Load() != want {
		t.Errorf("receiver got %d of %d frames", got.Load(), want)
	}
	if d.TM.LosslessDropPkts != 0 || d.Runtime.LosslessDrops != 0 || d.TM.TotalDroppedPkts != 0 {
		t.Errorf("drops: lossless %d, total %d", d.TM.LosslessDropPkts, d.TM.TotalDroppedPkts)
	}
	if d.Runtime.PFCTxXoff == 0 || pauses == 0 {
		t.Errorf("no PFC: XOFF sent %d, pauses seen by senders %d", d.Runtime.PFCTxXoff, pauses)
	}

	// The PAUSE frames on the wire, as Wireshark decodes them.
	out, err := exec.CommandContext(ctx, "tshark", "-r", pcap, "-Y", "macc.opcode == 0x0101", "-T", "fields",
		"-e", "eth.src", "-e", "macc.cbfc.enbv.c3", "-e", "macc.cbfc.pause_time.c3").Output()
	if err != nil {
		t.Fatalf("tshark -r: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) == 0 || lines[0] == "" {
		t.Fatalf("no PFC frame captured on the senders' interfaces")
	}
	// tshark may lose frames under load (20 interfaces on a busy VM): at most what the
	// switch sent, and both kinds.
	if sent := d.Runtime.PFCTxXoff + d.Runtime.PFCTxXon + d.Runtime.PFCTxRefresh; uint64(len(lines)) > sent {
		t.Errorf("captured %d PFC frames, the switch sent %d", len(lines), sent)
	}
	var xoff, xon int
	for _, l := range lines {
		switch {
		case strings.HasSuffix(l, "\t1\t65535"):
			xoff++
		case strings.HasSuffix(l, "\t1\t0"):
			xon++
		default:
			t.Errorf("unexpected PFC frame (eth.src, class 3 enabled, quanta): %q", l)
		}
	}
	if xoff == 0 || xon == 0 {
		t.Errorf("captured %d XOFF and %d XON for priority 3, want both", xoff, xon)
	}
	verbose, err := exec.CommandContext(ctx, "tshark", "-r", pcap, "-V", "-Y", "macc.opcode == 0x0101").Output()
	if err != nil {
		t.Fatalf("tshark -V: %v", err)
	}
	if !strings.Contains(string(verbose), "Class Based Flow Control") {
		t.Errorf("Wireshark does not decode the capture as PFC:\n%.2000s", verbose)
	}
	t.Logf("tshark on the senders: %d PFC frames (%d XOFF, %d XON) of %d sent; first ones (eth.src, class 3 enabled, quanta): %q",
		len(lines), xoff, xon, d.Runtime.PFCTxXoff+d.Runtime.PFCTxXon+d.Runtime.PFCTxRefresh, lines[:min(len(lines), 4)])

	// P4Runtime counters: readable, and consistent with what happened.
	if c := ctl.counter("FastcnpEgress.ecn_marked", rcvPort); c.Packets == 0 || c.Packets != ce.Load() {
		t.Errorf("ecn_marked[%d] = %d packets, receiver saw %d CE", rcvPort, c.Packets, ce.Load())
	}
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	defer ccancel()
	cells, err := ctl.c.ReadCounters(cctx, "FastcnpIngress.dropped", p4rt.AllIndexes)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cells {
		if c.Index >= 1 && c.Index <= senders && c.Packets != 0 {
			t.Errorf("dropped[%d] = %d", c.Index, c.Packets)
		}
	}
	if len(cells) == 0 {
		t.Error("no dropped counter cells read")
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Error("test ran out of time")
	}
	_ = os.Remove(pcap)
}
