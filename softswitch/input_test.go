package softswitch

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/afpacket"
	"github.com/fastcnp/fastcnp/model/tm"
	"github.com/fastcnp/fastcnp/wire"
)

// TestInputGate: the input-hold decision, with hysteresis between XON and XOFF.
func TestInputGate(t *testing.T) {
	g := inputGate{xoff: 0.25, xon: 0.125}
	for _, tc := range []struct {
		name string
		gate inputGate
		held bool
		fill float64
		want bool
	}{
		{"empty, not held", g, false, 0, false},
		{"below XOFF, not held", g, false, 0.2499, false},
		{"at XOFF: hold", g, false, 0.25, true},
		{"above XOFF: hold", g, false, 0.9, true},
		{"full: hold", g, false, 1, true},
		{"held, above XOFF: stay", g, true, 0.5, true},
		{"held, between XON and XOFF: stay", g, true, 0.2, true},
		{"not held, between XON and XOFF: stay released", g, false, 0.2, false},
		{"held, just above XON: stay", g, true, 0.1251, true},
		{"held, at XON: release", g, true, 0.125, false},
		{"held, drained: release", g, true, 0, false},
		{"disabled: never hold", inputGate{xoff: -1}, false, 1, false},
		{"disabled: a held port is released", inputGate{xoff: -1}, true, 1, false},
		{"XON 0: release only when empty", inputGate{xoff: 0.5}, true, 0.01, true},
		{"XON 0, empty: release", inputGate{xoff: 0.5}, true, 0, false},
	} {
		if got := tc.gate.decide(tc.held, tc.fill); got != tc.want {
			t.Errorf("%s: decide(held %v, fill %v) with %+v = %v, want %v", tc.name, tc.held, tc.fill, tc.gate, got, tc.want)
		}
	}
}

// TestInputMeasure: when the RX goroutine measures its receive queue.
func TestInputMeasure(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		full, lastFull, held bool
		want                 bool
	}{
		{"full batch: more may wait", true, false, false, true},
		{"full after full", true, true, false, true},
		{"first short batch after a full one: drained (collects the burst's drops)", false, true, false, true},
		{"short batch, held: until released", false, false, true, true},
		{"short batches, not held: the queue was empty, no system call", false, false, false, false},
	} {
		if got := measure(tc.full, tc.lastFull, tc.held); got != tc.want {
			t.Errorf("%s: measure(%v, %v, %v) = %v, want %v", tc.name, tc.full, tc.lastFull, tc.held, got, tc.want)
		}
	}
}

func TestInputThresholds(t *testing.T) {
	for _, tc := range []struct {
		xoff, xon float64
		ok        bool
	}{
		{0.25, 0.125, true}, {1, 0, true}, {-1, 0, true}, {-1, 5, true},
		{0.25, 0.25, false}, {0.25, 0.3, false}, {1.5, 0.1, false}, {0.5, -0.1, false},
	} {
		if err := checkInputThresholds(tc.xoff, tc.xon); (err == nil) != tc.ok {
			t.Errorf("XOFF %v XON %v: %v, want ok %v", tc.xoff, tc.xon, err, tc.ok)
		}
	}
	for _, tc := range []struct {
		xoff, xon         float64
		wantXoff, wantXon float64
	}{
		{0, 0, DefaultInputXoff, DefaultInputXon},
		{0.1, 0, 0.1, 0.05},
		{0.5, 0.3, 0.5, 0.3},
		{-1, 0, -1, 0},
	} {
		c, err := Config{DeviceID: 1, Ports: []PortConfig{{Num: 1, Ifname: "x"}}, InputXoff: tc.xoff, InputXon: tc.xon}.normalized()
		if err != nil || c.InputXoff != tc.wantXoff || c.InputXon != tc.wantXon || c.PortOptions.RecvBuffer != DefaultRecvBuffer {
			t.Errorf("XOFF %v XON %v normalised to %v %v, receive buffer %d (%v); want %v %v, %d",
				tc.xoff, tc.xon, c.InputXoff, c.InputXon, c.PortOptions.RecvBuffer, err, tc.wantXoff, tc.wantXon, DefaultRecvBuffer)
		}
	}
}

// backlogLink is a memLink whose receive queue the test sets.
type backlogLink struct {
	*memLink
	mu sync.Mutex
	b  afpacket.Backlog
}

func (l *backlogLink) Backlog() (afpacket.Backlog, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b, nil
}

func (l *backlogLink) set(bytes int64, drops uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = afpacket.Backlog{Bytes: bytes, Capacity: 1000, Drops: drops}
}

// TestInputHoldPFC: the runtime turns a port's receive queue into PFC (in memory, the
// queue set by the test): above XOFF (25%) after a full batch, XOFF for the lossless
// priority out of that port; between XON and XOFF the hold stays; at XON (12.5%), XON.
// The kernel's drops the measurements report are counted in the runtime, the port's
// dump, and the P4 counter dropped[port] read over P4Runtime; the PFC frames in the
// TM's and the P4 counters.
func TestInputHoldPFC(t *testing.T) {
	checkGoroutines(t)
	bl := &backlogLink{memLink: newMemLink()}
	m := newMemSwitch(t, func(c *Config) {
		c.Ports[0].Open = func() (Link, net.HardwareAddr, error) { return bl, swMAC1, nil }
		c.Ports[1].RateBps = 10_000_000_000
	})
	frames := func(n int) [][]byte {
		var fs [][]byte
		for i := range n {
			fs = append(fs, roce(t, hostIP1, hostIP2, hostMAC1, swMAC1, 26, wire.ECT0, uint32(i), 100))
		}
		return fs
	}
	sent := 0
	inject := func(n int, backlog int64, drops uint64) {
		t.Helper()
		bl.set(backlog, drops)
		bl.Inject(frames(n)...)
		sent += n
		m.l2.Wait(t, 10*time.Second, "the frames forwarded", func(s []sentFrame) bool { return len(s) >= sent })
	}
	pfcOn1 := func() []wire.PFC { return pfcOf(t, bl.Sent()) }

	// Short batches with a queue that says 90%: the queue was empty when read, the
	// switch does not measure it (no system call at low load). The dump does (that is
	// the 900 B high-water below), without deciding holds.
	inject(3, 900, 0)
	if d := m.sw.Dump(); len(pfcOn1()) != 0 || d.Ports[0].Input.Measurements != 0 {
		t.Fatalf("short batches: PFC %v, %d measurements; want none", pfcOn1(), d.Ports[0].Input.Measurements)
	}
	// A full batch (the switch's RX batch) leaving 30% behind: hold.
	inject(m.sw.rxBatch, 300, 0)
	bl.Wait(t, 10*time.Second, "XOFF on port 1", func(s []sentFrame) bool { return len(pfcOf(t, s)) >= 1 })
	// Between XON and XOFF: still held (the next reads measure: the port is held).
	inject(5, 200, 0)
	// Drained to XON, and the kernel reports 7 frames dropped meanwhile: XON.
	inject(2, 125, 7)
	bl.Wait(t, 10*time.Second, "XON on port 1", func(s []sentFrame) bool { return len(pfcOf(t, s)) >= 2 })
	d := waitDrained(t, m.sw, uint64(sent))

	pfc := pfcOn1()
	if len(pfc) != 2 || pfc[0].ClassEnable != 1<<3 || pfc[0].Time[3] != 0xFFFF || pfc[1].ClassEnable != 1<<3 || pfc[1].Time[3] != 0 {
		t.Fatalf("port 1 sent PFC %+v, want XOFF then XON for priority 3", pfc)
	}
	in := d.Ports[0].Input
	if in.Drops != 7 || in.Held || in.Holds != 1 || in.BacklogBytes != 125 || in.BacklogMaxBytes != 900 || in.BufferBytes != 1000 || in.Measurements != 3 {
		t.Errorf("port 1 input %+v", in)
	}
	r := d.Runtime
	if r.InputDrops != 7 || r.InputHolds != 1 || r.PFCTxXoff != 1 || r.PFCTxXon != 1 || r.LosslessDrops != 0 || r.RxFrames != uint64(sent) {
		t.Errorf("runtime counters %+v", r)
	}
	if tp := d.TM.Ports[0]; tp.InputHold || tp.InputHolds != 1 || tp.InputHoldXoff != 1 || tp.InputHoldXon != 1 || tp.InputHoldNs <= 0 ||
		tp.Ingress[3].PFCTxXoff != 1 || tp.Ingress[3].PFCTxXon != 1 {
		t.Errorf("TM port 1: hold %v %d ns, %d holds, frames %d/%d, PG 3 XOFF %d XON %d", tp.InputHold, tp.InputHoldNs,
			tp.InputHolds, tp.InputHoldXoff, tp.InputHoldXon, tp.Ingress[3].PFCTxXoff, tp.Ingress[3].PFCTxXon)
	}
	if d.Ports[1].Input != (InputDump{}) {
		t.Errorf("port 2 (no backlog reports) input %+v, want zero", d.Ports[1].Input)
	}
	// Over P4Runtime: the input drops in input_dropped[1] (and not in the pipeline's
	// dropped[1]); the PFC frames per priority.
	if c := m.ctl.counter("FastcnpIngress.input_dropped", 1); c.Packets != 7 || c.Bytes != 0 {
		t.Errorf("input_dropped[1] = %d packets %d bytes, want the 7 input drops, bytes unknown (0)", c.Packets, c.Bytes)
	}
	if c := m.ctl.counter("FastcnpIngress.dropped", 1); c.Packets != 0 {
		t.Errorf("dropped[1] = %d packets, want 0 (input drops go to input_dropped)", c.Packets)
	}
	if c := m.ctl.counter("FastcnpIngress.pfc_xoff_sent", 1*8+3); c.Packets != 1 {
		t.Errorf("pfc_xoff_sent[1*8+3] = %d, want 1", c.Packets)
	}
	if c := m.ctl.counter("FastcnpIngress.pfc_xon_sent", 1*8+3); c.Packets != 1 {
		t.Errorf("pfc_xon_sent[1*8+3] = %d, want 1", c.Packets)
	}
}

// TestInputDeferLossless: lossless frames the TM has no room for (their priority
// group past XOFF, its headroom full: the egress is held by PAUSE) are not dropped:
// the switch keeps them, in order, and stops reading their port, so that what comes
// next waits in the receive queue; once the egress resumes, every frame leaves, in
// order. (TestLosslessDropLoggedAndCounted is the same traffic with
// Config.NoLosslessDefer: lossless drops.)
func TestInputDeferLossless(t *testing.T) {
	checkGoroutines(t)
	const n, more, size = 12, 5, 1000 // TM length 1004 (FCS)
	m := newMemSwitch(t, func(c *Config) {
		c.Ports[1].RateBps = 100_000_000
		c.Ports[0].HeadroomBytes = 1522 // one max frame
		c.TM.Threshold, c.TM.XoffBytes = tm.ThresholdStatic, 4000
	})
	stopHold := holdPFC(t, m.l2)
	waitDump(t, m.sw, "egress (2, 3) paused", func(d *Dump) bool { return d.TM.Ports[1].Egress[3].Paused })
	var burst [][]byte
	for i := range n {
		burst = append(burst, roce(t, hostIP1, hostIP2, hostMAC1, swMAC1, 26, wire.ECT0, uint32(i), size))
	}
	m.l1.Inject(burst...)
	// 3 frames under XOFF, 1 in the headroom (XOFF sent), the 8 others kept.
	d := waitDump(t, m.sw, "the frames without room kept", func(d *Dump) bool { return d.Ports[0].Input.Pending == n-4 })
	// The port reads nothing more while they wait: the next burst stays in the link.
	burst = nil
	for i := range more {
		burst = append(burst, roce(t, hostIP1, hostIP2, hostMAC1, swMAC1, 26, wire.ECT0, uint32(n+i), size))
	}
	m.l1.Inject(burst...)
	d2 := m.sw.Dump()
	if unread := len(m.l1.rx); unread != 1 || d2.Ports[0].RxFrames != n || d2.Ports[0].Input.Pending != n-4 {
		t.Errorf("stalled port: %d bursts unread (want 1), %d frames read (want %d), %d pending", unread, d2.Ports[0].RxFrames, n, d2.Ports[0].Input.Pending)
	}
	if r := d.Runtime; r.Enqueued != 4 || r.LosslessDrops != 0 || r.TMDropped != 0 || r.InputDeferred != n-4 ||
		d.Ports[0].Input.Stalls != 1 || d.Ports[0].Input.Deferred != n-4 || d.TM.Ports[0].Ingress[3].PFCTxXoff != 1 {
		t.Errorf("while held: runtime %+v, input %+v, PG (1, 3) %+v", r, d.Ports[0].Input, d.TM.Ports[0].Ingress[3])
	}

	// XON: everything leaves, in order, nothing is dropped.
	xoffs := stopHold()
	injectPFC(t, m.l2, 0)
	sent := m.l2.Wait(t, 10*time.Second, "every frame", func(s []sentFrame) bool { return len(s) >= n+more })
	d = waitDrained(t, m.sw, uint64(n+more+xoffs+1))
	for i, s := range sent {
		if f := parseFrame(t, s.data); f.BTH.PSN != uint32(i) {
			t.Errorf("frame %d out has PSN %d, want %d", i, f.BTH.PSN, i)
		}
	}
	if r := d.Runtime; len(sent) != n+more || r.Enqueued != n+more || r.LosslessDrops != 0 || d.TM.TotalDroppedPkts != 0 || d.Ports[0].Input.Pending != 0 {
		t.Errorf("after the XON: %d frames out of %d, runtime %+v, input %+v", len(sent), n+more, r, d.Ports[0].Input)
	}
	g := d.TM.Ports[0].Ingress[3]
	if checkPFCSequence(t, pfcOf(t, m.l1.Sent()), g.PFCTxRefresh) < 1 || g.Xoff {
		t.Errorf("ingress PG (1, 3) after the XON: %+v", g)
	}
}
