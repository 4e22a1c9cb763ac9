package softswitch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/model/tm"
	"github.com/fastcnp/fastcnp/wire"
)

var (
	swMAC1   = net.HardwareAddr{0x02, 0x5e, 0, 0, 0, 0x01}
	swMAC2   = net.HardwareAddr{0x02, 0x5e, 0, 0, 0, 0x02}
	hostMAC1 = net.HardwareAddr{0x02, 0xaa, 0, 0, 0, 0x01}
	hostMAC2 = net.HardwareAddr{0x02, 0xaa, 0, 0, 0, 0x02}
	hostIP1  = netip.MustParseAddr("10.0.1.1")
	hostIP2  = netip.MustParseAddr("10.0.2.1")
)

// memSwitch is a switch with two in-memory ports (1 and 2), its P4Runtime
// controller with routes between 10.0.1.0/24 (port 1) and 10.0.2.0/24 (port 2), and
// DSCP 26 -> priority 3 lossless.
type memSwitch struct {
	sw     *Switch
	l1, l2 *memLink
	ctl    *controller
}

func newMemSwitch(t *testing.T, tweak func(*Config)) *memSwitch {
	t.Helper()
	m := &memSwitch{l1: newMemLink(), l2: newMemLink()}
	open := func(l *memLink, mac net.HardwareAddr) func() (Link, net.HardwareAddr, error) {
		return func() (Link, net.HardwareAddr, error) { return l, mac, nil }
	}
	lis := localListener(t)
	cfg := Config{
		DeviceID: 7,
		Ports: []PortConfig{
			{Num: 1, Ifname: "mem1", Open: open(m.l1, swMAC1)},
			{Num: 2, Ifname: "mem2", Open: open(m.l2, swMAC2)},
		},
		GRPCListener: lis,
		Log:          testLog(),
	}
	cfg.TM.WireOverhead = true
	if tweak != nil {
		tweak(&cfg)
	}
	sw, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.sw = sw
	runSwitch(t, sw)
	m.ctl = dialController(t, lis.Addr().String(), 7)
	m.ctl.route(netip.MustParsePrefix("10.0.1.0/24"), 1, swMAC1, hostMAC1)
	m.ctl.route(netip.MustParsePrefix("10.0.2.0/24"), 2, swMAC2, hostMAC2)
	m.ctl.trafficClass(26, 3, true)
	return m
}

// TestForwardShaped: frames are routed (MACs rewritten, TTL decremented, order kept)
// and leave at no more than the egress port's rate.
func TestForwardShaped(t *testing.T) {
	checkGoroutines(t)
	const n, size = 100, 1000
	rate := int64(100_000_000)
	m := newMemSwitch(t, func(c *Config) { c.Ports[1].RateBps = rate })
	var frames [][]byte
	for i := range n {
		frames = append(frames, roce(t, hostIP1, hostIP2, hostMAC1, swMAC1, 0, wire.NotECT, uint32(i), size))
	}
	start := time.Now()
	m.l1.Inject(frames...)
	sent := m.l2.Wait(t, 10*time.Second, "all frames on port 2", func(s []sentFrame) bool { return len(s) >= n })
	elapsed := sent[n-1].at.Sub(start)
	// The TM cannot release the last frame before n frames' serialisation at the
	// port rate (FCS and preamble/IFG included): a hard lower bound.
	minNs := int64(n) * tm.SerializationNs(size+fcsBytes+wire.PreambleIFGBytes, rate)
	if elapsed < time.Duration(minNs) {
		t.Errorf("%d frames left in %v, faster than %d b/s allows (%v)", n, elapsed, rate, time.Duration(minNs))
	}
	for i, s := range sent {
		f := parseFrame(t, s.data)
		if f.BTH.PSN != uint32(i) {
			t.Fatalf("frame %d has PSN %d: reordered", i, f.BTH.PSN)
		}
		if net.HardwareAddr(f.Ethernet.Dst[:]).String() != hostMAC2.String() || net.HardwareAddr(f.Ethernet.Src[:]).String() != swMAC2.String() {
			t.Fatalf("frame %d: MACs %v -> %v not rewritten", i, f.Ethernet.Src, f.Ethernet.Dst)
		}
		if f.IPv4.TTL != wire.DefaultTTL-1 {
			t.Fatalf("frame %d: TTL %d", i, f.IPv4.TTL)
		}
	}
	d := m.sw.Dump()
	if d.Runtime.Enqueued != n || d.Runtime.Dequeued != n || d.TM.TotalDroppedPkts != 0 {
		t.Errorf("runtime counters %+v, tm drops %d", d.Runtime, d.TM.TotalDroppedPkts)
	}
	t.Logf("%d x %d B at %d b/s: %v (line rate %v), scheduler wake-ups %d, worst lag %v",
		n, size, rate, elapsed, time.Duration(minNs), d.Runtime.SchedulerWakeups, time.Duration(d.Runtime.LateDepartureMaxNs))
}

// pfcOf returns the PFC frames among s.
func pfcOf(t *testing.T, s []sentFrame) []wire.PFC {
	var out []wire.PFC
	for _, x := range s {
		var f wire.Frame
		if wire.Parse(x.data, wire.ParseOptions{}, &f) == nil && f.Has(wire.LayerPFC) {
			out = append(out, f.PFC)
		}
	}
	return out
}

// TestPFCGenerated: a lossless burst above the static XOFF makes the switch send a
// PFC XOFF for priority 3 out of the ingress port, then an XON once drained; nothing
// is dropped.
func TestPFCGenerated(t *testing.T) {
	checkGoroutines(t)
	const n, size = 60, 1000
	m := newMemSwitch(t, func(c *Config) {
		c.Ports[1].RateBps = 100_000_000
		c.Ports[0].HeadroomBytes = 200_000 // the injector does not obey PAUSE
		c.TM.BufferBytes = 1 << 20
		c.TM.Threshold, c.TM.XoffBytes = tm.ThresholdStatic, 10_000
	})
	var frames [][]byte
	for i := range n {
		frames = append(frames, roce(t, hostIP1, hostIP2, hostMAC1, swMAC1, 26, wire.ECT0, uint32(i), size))
	}
	m.l1.Inject(frames...)
	m.l2.Wait(t, 10*time.Second, "all frames on port 2", func(s []sentFrame) bool { return len(s) >= n })
	// Every frame has been enqueued and dequeued, so the PFC counters are final; once
	// everything the switch made is on the links, port 1 has sent all its PFC frames.
	d := waitDrained(t, m.sw, n)
	s1 := m.l1.Sent()
	pfc := pfcOf(t, s1)
	if len(pfc) == 0 || len(pfc) != len(s1) {
		t.Fatalf("port 1 sent %d frames, %d of them PFC: want only PFC, XOFF and XON", len(s1), len(pfc))
	}
	// The 60 frames come in one burst (one batch): one pause. Each XOFF must be ended
	// by its XON, in that order on the wire, and the PFC counters must agree.
	g := d.TM.Ports[0].Ingress[3]
	xoffs := checkPFCSequence(t, pfc, g.PFCTxRefresh)
	if g.PFCTxXoff != uint64(xoffs) || g.PFCTxXon != g.PFCTxXoff || d.Runtime.PFCTxXoff != g.PFCTxXoff || d.Runtime.PFCTxXon != g.PFCTxXon ||
		g.HeadroomHighWater == 0 || g.Xoff {
		t.Errorf("PG (1, 3): %+v; runtime XOFF %d XON %d; port 1 sent %d XOFF: want the same XOFFs each ended by an XON",
			g, d.Runtime.PFCTxXoff, d.Runtime.PFCTxXon, xoffs)
	}
	f := parseFrame(t, s1[0].data)
	if net.HardwareAddr(f.Ethernet.Src[:]).String() != swMAC1.String() || f.Ethernet.Dst != wire.MACControlDst {
		t.Errorf("PFC from %v to %v", f.Ethernet.Src, f.Ethernet.Dst)
	}
	if d.TM.LosslessDropPkts != 0 || d.Runtime.LosslessDrops != 0 || d.TM.TotalDroppedPkts != 0 {
		t.Errorf("drops: lossless %d (runtime %d), all %d", d.TM.LosslessDropPkts, d.Runtime.LosslessDrops, d.TM.TotalDroppedPkts)
	}
}

// TestPFCReceived: a PFC XOFF received on port 2 stops its priority-3 queue (lossy
// traffic continues), is counted by the pipeline and reported as a PAUSE digest; the
// XON releases the queue.
func TestPFCReceived(t *testing.T) {
	checkGoroutines(t)
	const rate = 100_000_000
	m := newMemSwitch(t, func(c *Config) { c.Ports[1].RateBps = rate })
	m.ctl.portConfig(2, rate, 0, 0, 0) // mode off; lossless_priority 3 for the PFC parser
	dc, err := m.ctl.info.DigestConfig("port_state_digest_t", time.Millisecond, 1, time.Second)
	m.ctl.write("digest config", dc, err)
	// The XOFF is re-sent until the XON: one lasts 335 ms at 100 Mb/s, less than the
	// P4Runtime reads and digests below may take on a loaded machine.
	stopHold := holdPFC(t, m.l2)
	waitCounter(t, m.ctl, "FastcnpIngress.pfc_pause_rx", 2, "at least 1", func(n int64) bool { return n >= 1 })
	select { // the PAUSE event of the port state machine, as a digest
	case dl := <-m.ctl.c.Digests():
		st, err := dl.Struct(0)
		if err != nil || dl.Name != "port_state_digest_t" || len(st["port"]) == 0 || st["port"][len(st["port"])-1] != 2 || st["event"][0] != 1 {
			t.Errorf("digest %s %v (%v), want port 2 event PAUSE", dl.Name, st, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no port_state digest after the PAUSE")
	}
	for i := range 10 {
		m.l1.Inject(roce(t, hostIP1, hostIP2, hostMAC1, swMAC1, 26, wire.ECT0, uint32(i), 500))
		m.l1.Inject(roce(t, hostIP1, hostIP2, hostMAC1, swMAC1, 0, wire.NotECT, uint32(100+i), 500))
	}
	held := m.l2.Wait(t, 10*time.Second, "lossy frames", func(s []sentFrame) bool { return len(s) >= 10 })
	for _, s := range held {
		if f := parseFrame(t, s.data); f.IPv4.DSCP() == 26 {
			t.Fatalf("a lossless frame left port 2 while it was paused")
		}
	}
	if !m.sw.Dump().TM.Ports[1].Egress[3].Paused {
		t.Errorf("egress (2, 3) not paused")
	}
	xoffs := stopHold()
	injectPFC(t, m.l2, 0) // XON, after the last XOFF
	sent := m.l2.Wait(t, 10*time.Second, "lossless frames after XON", func(s []sentFrame) bool { return len(s) >= 20 })
	for i, s := range sent[10:] {
		if f := parseFrame(t, s.data); f.IPv4.DSCP() != 26 || f.BTH.PSN != uint32(i) {
			t.Errorf("frame %d after the lossy ones: DSCP %d PSN %d, want the lossless frames in order", i, f.IPv4.DSCP(), f.BTH.PSN)
		}
	}
	d := waitDrained(t, m.sw, uint64(20+xoffs+1))
	waitCounter(t, m.ctl, "FastcnpIngress.pfc_pause_rx", 2, fmt.Sprint(xoffs), func(n int64) bool { return n == int64(xoffs) })
	waitCounter(t, m.ctl, "FastcnpIngress.pfc_resume_rx", 2, "1", func(n int64) bool { return n == 1 })
	if e := d.TM.Ports[1].Egress[3]; d.Runtime.PFCRx != uint64(xoffs+1) || e.PFCRxXoff != uint64(xoffs) || e.PFCRxXon != 1 || e.Paused || len(m.l2.Sent()) != 20 {
		t.Errorf("PFC rx: runtime %d, tm xoff %d xon %d (paused %v), want %d XOFF and 1 XON; port 2 sent %d frames, want 20",
			d.Runtime.PFCRx, e.PFCRxXoff, e.PFCRxXon, e.Paused, xoffs, len(m.l2.Sent()))
	}
}

// waitCounter polls a P4 counter cell until its packet count satisfies ok (a guard
// against hangs, not a timing claim).
func waitCounter(t *testing.T, c *controller, name string, index int, want string, ok func(int64) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := c.counter(name, index)
		if ok(got.Packets) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("counter %s[%d] = %d packets, want %s", name, index, got.Packets, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestECNAndPacketIO: an ecn-mode port CE-marks lossless ECT packets at dequeue
// (counted in ecn_marked); packet-out reaches the wire and an announcement reaches the
// controller as a packet-in.
func TestECNAndPacketIO(t *testing.T) {
	checkGoroutines(t)
	m := newMemSwitch(t, nil)
	m.ctl.portConfig(2, DefaultRateBps, 1, 0, 1) // RED: every packet above 1 byte is marked
	for i := range 5 {
		m.l1.Inject(roce(t, hostIP1, hostIP2, hostMAC1, swMAC1, 26, wire.ECT0, uint32(i), 300))
	}
	sent := m.l2.Wait(t, 10*time.Second, "5 frames", func(s []sentFrame) bool { return len(s) >= 5 })
	for i, s := range sent {
		f := parseFrame(t, s.data)
		if f.IPv4.ECN() != wire.CE {
			t.Errorf("frame %d: ECN %v, want CE", i, f.IPv4.ECN())
		}
		if ok, err := wire.VerifyIPv4Checksum(f.IPv4Bytes(s.data)); !ok || err != nil {
			t.Errorf("frame %d: bad IPv4 checksum after marking", i)
		}
	}
	if c := m.ctl.counter("FastcnpEgress.ecn_marked", 2); c.Packets != 5 {
		t.Errorf("ecn_marked[2] = %d, want 5", c.Packets)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	payload := roce(t, hostIP2, hostIP1, swMAC1, hostMAC1, 0, wire.NotECT, 1, 100)
	if err := m.ctl.c.PacketOut(ctx, payload, p4rt.P("egress_port", 1), p4rt.P("pad", 0)); err != nil {
		t.Fatal(err)
	}
	out := m.l1.Wait(t, 10*time.Second, "packet-out on port 1", func(s []sentFrame) bool { return len(s) >= 1 })
	if string(out[0].data) != string(payload) {
		t.Errorf("packet-out arrived changed")
	}

	e, err := m.ctl.info.ValueSetEntry("announce_udp_port", []p4rt.Match{p4rt.Exact("", wire.DefaultAnnouncePort)})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.ctl.c.Write(ctx, p4rt.Modify(e)); err != nil {
		t.Fatal(err)
	}
	ann := wire.NewAnnouncement(wire.AnnounceUp, wire.AnnounceFlagCNPTarget)
	ann.SenderIP, ann.ReceiverIP, ann.SenderQPN, ann.ReceiverQPN = hostIP1.As4(), hostIP2.As4(), 5, 6
	env := wire.Envelope{SrcIP: hostIP1.As4(), DstIP: hostIP2.As4(), SrcPort: 1000}
	copy(env.SrcMAC[:], hostMAC1)
	b := make([]byte, 128)
	n, err := wire.BuildAnnouncement(b, &env, &ann)
	if err != nil {
		t.Fatal(err)
	}
	m.l1.Inject(b[:n])
	select {
	case p := <-m.ctl.c.Packets():
		if port, err := p.Uint("ingress_port"); err != nil || port != 1 {
			t.Errorf("packet-in ingress_port %d (%v), want 1", port, err)
		}
	case <-ctx.Done():
		t.Fatal("no packet-in")
	}
}

// TestValidate: configuration errors are reported before anything opens.
func TestValidate(t *testing.T) {
	ok := Config{DeviceID: 1, Ports: []PortConfig{{Num: 1, Ifname: "a"}, {Num: 2, Ifname: "b"}}}
	for _, tc := range []struct {
		name  string
		tweak func(*Config)
		bad   bool
	}{
		{"ok", func(*Config) {}, false},
		{"device 0", func(c *Config) { c.DeviceID = 0 }, true},
		{"no ports", func(c *Config) { c.Ports = nil }, true},
		{"cpu port", func(c *Config) { c.CPUPort = 64 }, true},
		{"port is cpu", func(c *Config) { c.Ports[0].Num = 255 }, true},
		{"port too big", func(c *Config) { c.Ports[0].Num = 512 }, true},
		{"same number", func(c *Config) { c.Ports[1].Num = 1 }, true},
		{"same ifname", func(c *Config) { c.Ports[1].Ifname = "a" }, true},
		{"long ifname", func(c *Config) { c.Ports[1].Ifname = "abcdefghijklmnop" }, true},
		{"rate too low", func(c *Config) { c.Ports[0].RateBps = 10_000_000 }, true},
		{"rate too high", func(c *Config) { c.DefaultRateBps = 1e12 }, true},
		{"negative delay", func(c *Config) { c.LinkDelay = -1 }, true},
		{"buffer below headroom", func(c *Config) { c.TM.BufferBytes = 1000 }, true},
		{"xon above xoff", func(c *Config) {
			c.TM.Threshold, c.TM.XoffBytes, c.TM.XonBytes = tm.ThresholdStatic, 10000, 20000
		}, true},
		{"lossless none", func(c *Config) { c.LosslessNone = true }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			c.Ports = append([]PortConfig(nil), ok.Ports...)
			tc.tweak(&c)
			err := Validate(c)
			if (err != nil) != tc.bad {
				t.Fatalf("Validate = %v, want error %v", err, tc.bad)
			}
			if err != nil && !errors.Is(err, ErrConfig) {
				t.Errorf("%v does not wrap ErrConfig", err)
			}
		})
	}
}

// TestDebugEndpoint: the JSON dump is served on loopback and refused elsewhere.
func TestDebugEndpoint(t *testing.T) {
	if err := checkLoopback("0.0.0.0:9560"); err == nil {
		t.Error("debug address 0.0.0.0 accepted")
	}
	for _, a := range []string{"127.0.0.1:9560", "[::1]:1", "localhost:1"} {
		if err := checkLoopback(a); err != nil {
			t.Errorf("%s: %v", a, err)
		}
	}
}

// TestTransmitError: a frame the link refuses is dropped and counted; the frames
// after it in the same batch still go out.
func TestTransmitError(t *testing.T) {
	checkGoroutines(t)
	m := newMemSwitch(t, func(c *Config) { c.Ports[1].RateBps = 100_000_000 })
	m.l2.mu.Lock()
	m.l2.refuseLen = 777
	m.l2.mu.Unlock()
	for i, n := range []int{500, 777, 600} {
		m.l1.Inject(roce(t, hostIP1, hostIP2, hostMAC1, swMAC1, 0, wire.NotECT, uint32(i), n))
	}
	sent := m.l2.Wait(t, 10*time.Second, "2 frames", func(s []sentFrame) bool { return len(s) >= 2 })
	if len(sent[0].data) != 500 || len(sent[1].data) != 600 {
		t.Errorf("sent %d and %d bytes, want 500 and 600", len(sent[0].data), len(sent[1].data))
	}
	p := waitDrained(t, m.sw, 3).Ports[1]
	if p.TxErrors != 1 || p.TxDropped != 1 || p.TxFrames != 2 || len(m.l2.Sent()) != 2 {
		t.Fatalf("port 2: %+v, %d frames on the link; want 2 sent, 1 error, 1 dropped", p, len(m.l2.Sent()))
	}
}

// TestLinkDown: a port whose link goes down (reads fail with ENETDOWN, as
// AF_PACKET reports it) stays: the switch keeps running, counts the event,
// and forwards again once frames come in.
func TestLinkDown(t *testing.T) {
	checkGoroutines(t)
	m := newMemSwitch(t, nil)
	m.l1.readErrs <- fmt.Errorf("port mem1: recvmmsg: %w", unix.ENETDOWN)
	m.l1.readErrs <- fmt.Errorf("port mem1: recvmmsg: %w", unix.ENETDOWN)
	waitDump(t, m.sw, "two link downs counted", func(d *Dump) bool { return d.Ports[0].LinkDowns == 2 })
	m.l1.Inject(roce(t, hostIP1, hostIP2, hostMAC1, swMAC1, 0, wire.NotECT, 1, 200))
	m.l2.Wait(t, 10*time.Second, "the frame after the link came back", func(s []sentFrame) bool { return len(s) >= 1 })
	if p := waitDrained(t, m.sw, 1).Ports[0]; p.LinkDowns != 2 {
		t.Errorf("port 1 link downs %d, want 2", p.LinkDowns)
	}
}

// TestSwitchCNP: on a congested fastcnp port, egress makes switch CNPs for a flow
// whose connection asks for them; the runtime enqueues each CNP after the dequeue
// that made it, and it leaves towards the sender with the sender's QP and the
// fastcnp extension.
func TestSwitchCNP(t *testing.T) {
	checkGoroutines(t)
	const rate = 100_000_000
	m := newMemSwitch(t, func(c *Config) { c.Ports[1].RateBps = rate })
	m.ctl.portConfigQth(2, rate, 2, 3000, 0, 0) // fastcnp, Qth 3000 B
	c := m.ctl
	e, err := c.info.TableEntry("rdma_connection").
		Match(p4rt.Exact("src_addr", net.IP(hostIP1.AsSlice())), p4rt.Exact("udp_sport", 49152), p4rt.Exact("dest_qp", 0x11)).
		Action("set_connection", p4rt.P("sender_qpn", 0x22), p4rt.P("flags", 2), p4rt.P("conn_index", 0),
			p4rt.P("inc_group", 0), p4rt.P("worker_rank", 0)).Entity()
	c.write("rdma_connection", e, err)
	cs, err := p4rt.CloneSession(100, 0, 0, p4rt.Replica{Port: 255})
	c.write("clone session", cs, err)

	const n = 10
	var burst [][]byte // one burst: the queue builds up above Qth whatever the scheduling
	for i := range n {
		burst = append(burst, roce(t, hostIP1, hostIP2, hostMAC1, swMAC1, 26, wire.ECT0, uint32(i), 1000))
	}
	m.l1.Inject(burst...)
	m.l2.Wait(t, 10*time.Second, "data frames", func(s []sentFrame) bool { return len(s) >= n })
	cnps := m.l1.Wait(t, 10*time.Second, "a switch CNP on port 1", func(s []sentFrame) bool { return len(s) >= 1 })
	f := parseFrame(t, cnps[0].data)
	if !f.Has(wire.LayerCNPExt) || f.BTH.Opcode != wire.OpCNP || f.BTH.DestQP != 0x22 {
		t.Fatalf("not a switch CNP to QP 0x22: opcode %#x dest QP %#x layers %#x", f.BTH.Opcode, f.BTH.DestQP, f.Layers())
	}
	if f.IPv4.Src != hostIP2.As4() || f.IPv4.Dst != hostIP1.As4() || f.CNPExt.Port != 2 || f.CNPExt.Flags&wire.CNPExtBySwitch == 0 {
		t.Errorf("CNP %v -> %v, extension %+v", f.IPv4.Src, f.IPv4.Dst, f.CNPExt)
	}
	if net.HardwareAddr(f.Ethernet.Dst[:]).String() != hostMAC1.String() {
		t.Errorf("CNP to %v, want the sender %v", f.Ethernet.Dst, hostMAC1)
	}
	// Every CNP egress made was enqueued by the runtime and left on port 1, and
	// nothing else did.
	d := waitDrained(t, m.sw, n)
	cell := c.counter("FastcnpEgress.switch_cnp_sent", 2)
	if cell.Packets == 0 || d.Runtime.SwitchCNPs != uint64(cell.Packets) || d.Ports[0].TxFrames != d.Runtime.SwitchCNPs || len(m.l1.Sent()) != int(cell.Packets) {
		t.Errorf("switch_cnp_sent[2] = %d, runtime CNPs %d, port 1 sent %d (%d on the link)", cell.Packets, d.Runtime.SwitchCNPs, d.Ports[0].TxFrames, len(m.l1.Sent()))
	}
}

// TestINTRecords: a port in mode int adds the HPCC record to lossless data packets
// with an INT header; the frames leave 24 bytes longer, with valid checksums, and
// the runtime counts the records.
func TestINTRecords(t *testing.T) {
	checkGoroutines(t)
	m := newMemSwitch(t, nil)
	m.ctl.portConfig(2, DefaultRateBps, 4, 0, 0) // mode int (p4src.PortModeInt)
	const n = 4
	var in [][]byte
	for i := range n {
		b := make([]byte, 2048)
		env := wire.Envelope{SrcIP: hostIP1.As4(), DstIP: hostIP2.As4(), DSCP: 26, ECN: wire.ECT0, SrcPort: 4000}
		copy(env.SrcMAC[:], hostMAC1)
		copy(env.DstMAC[:], swMAC1)
		l, err := wire.BuildRoCEINT(b, &env, wire.BTH{Opcode: wire.OpRCSendOnly, DestQP: 9, PSN: uint32(i)},
			wire.INTHeader{Version: wire.INTVersion}, nil, make([]byte, 500))
		if err != nil {
			t.Fatal(err)
		}
		in = append(in, b[:l])
	}
	m.l1.Inject(in...)
	sent := m.l2.Wait(t, 10*time.Second, "INT frames on port 2", func(s []sentFrame) bool { return len(s) >= n })
	var tx uint64
	for i, s := range sent {
		f := parseFrame(t, s.data)
		if len(s.data) != len(in[i])+wire.INTHopLen || f.INT.HopCount != 1 {
			t.Fatalf("frame %d: %d bytes, %d records", i, len(s.data), f.INT.HopCount)
		}
		h := f.INTHops[0]
		if h.Port != 2 || h.RateBytesPerMs != uint32(DefaultRateBps/8000) || h.TxBytes != tx {
			t.Errorf("frame %d: record %+v, want port 2, tx %d", i, h, tx)
		}
		tx += uint64(len(in[i]) + wire.INTHopLen)
		ip := f.IPv4Bytes(s.data)
		if ok, err := wire.VerifyICRC(ip); !ok || err != nil {
			t.Errorf("frame %d: ICRC %v %v", i, ok, err)
		}
		if ok, err := wire.VerifyIPv4Checksum(ip); !ok || err != nil {
			t.Errorf("frame %d: IPv4 checksum %v %v", i, ok, err)
		}
	}
	if d := m.sw.Dump(); d.Runtime.INTRecords != n || d.Runtime.INTTooLarge != 0 {
		t.Errorf("runtime counters: %d records, %d too large", d.Runtime.INTRecords, d.Runtime.INTTooLarge)
	}
}
