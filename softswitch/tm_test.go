package softswitch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/fastcnp/fastcnp/model/tm"
	"github.com/fastcnp/fastcnp/wire"
)

// pfcFrame is a PFC frame from host 2 for priority 3 with quanta (0: XON).
func pfcFrame(t *testing.T, quanta uint16) []byte {
	t.Helper()
	b := make([]byte, 64)
	n, err := wire.BuildPFC(b, wire.MAC(hostMAC2), 1<<3, [8]uint16{3: quanta})
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

// injectPFC sends a PFC frame for priority 3 with quanta into l (as the peer would).
func injectPFC(t *testing.T, l *memLink, quanta uint16) {
	t.Helper()
	l.Inject(pfcFrame(t, quanta))
}

// holdPFC holds priority 3 of the port behind l with PFC XOFF (65535 quanta) until
// stop, which returns how many XOFF frames were injected (see holdPause).
func holdPFC(t *testing.T, l *memLink) (stop func() int) {
	t.Helper()
	xoff := pfcFrame(t, 0xffff)
	return holdPause(t, func(context.Context) error { l.Inject(xoff); return nil })
}

// waitDump polls the switch's dump until pred holds (a guard, not a timing claim).
func waitDump(t *testing.T, sw *Switch, what string, pred func(*Dump) bool) Dump {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		d := sw.Dump()
		if pred(&d) {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: runtime %+v", what, d.Runtime)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitDrained waits (a guard against hangs, not a timing claim) until the switch has
// read rx frames, its buffer and delay lines are empty, and every frame it dequeued
// or made (PFC) has been handed to its link: from then on, what the switch sent on
// account of those frames is all in the links' Sent.
func waitDrained(t *testing.T, sw *Switch, rx uint64) Dump {
	t.Helper()
	return waitDump(t, sw, fmt.Sprintf("%d frames read and everything sent", rx), func(d *Dump) bool {
		var tx uint64
		inDelay := 0
		for _, p := range d.Ports {
			tx += p.TxFrames + p.TxDropped
			inDelay += p.InDelay
		}
		r := &d.Runtime
		return r.RxFrames >= rx && d.TM.Buffer.UsedBytes == 0 && inDelay == 0 &&
			tx == r.Dequeued+r.PFCTxXoff+r.PFCTxXon+r.PFCTxRefresh
	})
}

// checkPFCSequence checks the PFC frames a switch port sent for priority 3: an XOFF
// (65535 quanta) first, then XOFF refreshes (65535) or an XON (0) ending each pause,
// alternating with new XOFFs, an XON last; refresh is how many refreshes the switch
// reports for that port. It returns the number of XOFF.
func checkPFCSequence(t *testing.T, pfc []wire.PFC, refresh uint64) int {
	t.Helper()
	xoff, xon, refreshes, paused := 0, 0, uint64(0), false
	for i, p := range pfc {
		switch {
		case p.ClassEnable != 1<<3:
			t.Errorf("PFC frame %d: class-enable %#x, want priority 3 only", i, p.ClassEnable)
		case p.Time[3] == tm.DefaultPauseQuanta && !paused:
			xoff++
			paused = true
		case p.Time[3] == tm.DefaultPauseQuanta:
			refreshes++
		case p.Time[3] == 0 && paused:
			xon++
			paused = false
		default:
			t.Errorf("PFC frame %d of %d: quanta %d (paused %v), want XOFF, refreshes, XON in turn", i, len(pfc), p.Time[3], paused)
		}
	}
	if xoff == 0 || xon != xoff || paused || refreshes != refresh {
		t.Errorf("PFC sent: %d XOFF, %d XON, %d refreshes (switch: %d), last one XON %v: %+v", xoff, xon, refreshes, refresh, !paused, pfc)
	}
	return xoff
}

// TestLosslessDropLoggedAndCounted: a peer that ignores PAUSE overruns the headroom of
// its ingress port while the egress is held by received PFC. Every frame beyond
// XOFF + headroom is a lossless drop: refused, counted in the runtime and in the TM
// (per egress queue and per ingress priority group), and logged as a warning (at the
// 1st, 2nd, 4th, 8th... drop). Nothing else is lost: after the XON the accepted frames
// leave, and the ingress port's PFC reads XOFF (refreshed while it lasts) then XON.
func TestLosslessDropLoggedAndCounted(t *testing.T) {
	checkGoroutines(t)
	logger, hook := test.NewNullLogger()
	const n, size = 12, 1000 // TM length 1004 (FCS)
	m := newMemSwitch(t, func(c *Config) {
		c.Log = logger
		c.Ports[1].RateBps = 100_000_000
		c.Ports[0].HeadroomBytes = 1522 // one max frame: the least accepted
		c.TM.Threshold, c.TM.XoffBytes = tm.ThresholdStatic, 4000
		// The TM's own drop accounting is under test: the switch must not keep the
		// frames the headroom has no room for in the receive queue (input.go).
		c.NoLosslessDefer = true
	})
	// The egress stays held until the XON below, however long the checks take.
	stopHold := holdPFC(t, m.l2)
	waitDump(t, m.sw, "egress (2, 3) paused", func(d *Dump) bool { return d.TM.Ports[1].Egress[3].Paused })
	for i := range n {
		m.l1.Inject(roce(t, hostIP1, hostIP2, hostMAC1, swMAC1, 26, wire.ECT0, uint32(i), size))
	}
	d := waitDump(t, m.sw, "12 frames offered to the TM", func(d *Dump) bool { return d.Runtime.Enqueued+d.Runtime.TMDropped == n })
	// 3 frames fit under XOFF (3012 <= 4000 B), the 4th goes to the headroom
	// (1004 <= 1522 B) and sends XOFF, the 8 others find the headroom full.
	const accepted, dropped = 4, n - 4
	eg, pg := d.TM.Ports[1].Egress[3], d.TM.Ports[0].Ingress[3]
	for _, c := range []struct {
		what      string
		got, want uint64
	}{
		{"runtime enqueued", d.Runtime.Enqueued, accepted},
		{"runtime tm_dropped", d.Runtime.TMDropped, dropped},
		{"runtime lossless_drops", d.Runtime.LosslessDrops, dropped},
		{"runtime tm_errors", d.Runtime.TMErrors, 0},
		{"tm lossless drops", d.TM.LosslessDropPkts, dropped},
		{"tm lossless dropped bytes", d.TM.LosslessDropBytes, dropped * (size + fcsBytes)},
		{"egress (2, 3) lossless dropped", eg.LosslessDroppedPkts, dropped},
		{"egress (2, 3) dropped", eg.DroppedPkts, dropped},
		{"egress (2, 3) dequeued while paused", eg.DequeuedPkts, 0},
		{"ingress PG (1, 3) dropped", pg.DroppedPkts, dropped},
		{"ingress PG (1, 3) XOFF sent", pg.PFCTxXoff, 1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.what, c.got, c.want)
		}
	}
	if pg.HeadroomHighWater != size+fcsBytes || !pg.Xoff {
		t.Errorf("ingress PG (1, 3): %+v, want %d B of headroom used and XOFF", pg, size+fcsBytes)
	}
	var logged []uint64
	for _, e := range hook.AllEntries() {
		if !strings.Contains(e.Message, "lossless drop") {
			continue
		}
		err, _ := e.Data[logrus.ErrorKey].(error)
		if e.Level != logrus.WarnLevel || !errors.Is(err, tm.ErrLosslessDrop) {
			t.Errorf("log entry %q level %v error %v, want a warning wrapping tm.ErrLosslessDrop", e.Message, e.Level, err)
		}
		c, _ := e.Data["lossless_drops"].(uint64)
		logged = append(logged, c)
	}
	if want := []uint64{1, 2, 4, 8}; !slices.Equal(logged, want) {
		t.Errorf("lossless drops logged at counts %v, want %v", logged, want)
	}

	// XON: the 4 accepted frames leave, then the PG drains and the switch sends XON.
	xoffs := stopHold()
	injectPFC(t, m.l2, 0)
	sent := m.l2.Wait(t, 10*time.Second, "the accepted frames", func(s []sentFrame) bool { return len(s) >= accepted })
	d = waitDrained(t, m.sw, uint64(n+xoffs+1))
	if len(m.l2.Sent()) != accepted || d.TM.Ports[1].Egress[3].PFCRxXoff != uint64(xoffs) || d.TM.Ports[1].Egress[3].PFCRxXon != 1 {
		t.Errorf("port 2 sent %d frames, want %d; egress (2, 3) %+v, want %d XOFF and 1 XON received",
			len(m.l2.Sent()), accepted, d.TM.Ports[1].Egress[3], xoffs)
	}
	for i, s := range sent {
		if f := parseFrame(t, s.data); f.BTH.PSN != uint32(i) {
			t.Errorf("frame %d out has PSN %d, want %d (the first ones were accepted)", i, f.BTH.PSN, i)
		}
	}
	// While the PG is in XOFF the switch refreshes it every 16.8 ms (half of 65535
	// quanta at port 1's 1 Gb/s), as many times as the test took: XOFF, refreshes, XON.
	g := d.TM.Ports[0].Ingress[3]
	if checkPFCSequence(t, pfcOf(t, m.l1.Sent()), g.PFCTxRefresh) != 1 || g.PFCTxXoff != 1 || g.PFCTxXon != 1 || g.Xoff {
		t.Errorf("ingress PG (1, 3) after the XON: %+v, want 1 XOFF, 1 XON", g)
	}
}

// TestPFCReceivedQuantaAndRefresh: a received PFC XOFF holds the lossless queue for
// quanta x 512 bit times at the port's rate, and a newer PFC frame replaces the
// remaining time: here a 65535-quanta pause (335 ms at 100 Mb/s, re-sent while the
// lossy frames leave) is cut to 15 ms by a refresh with 2930 quanta. The lossless
// frames leave by themselves at expiry (no XON), not before refresh + 15 ms, while
// lossy frames are never held.
func TestPFCReceivedQuantaAndRefresh(t *testing.T) {
	checkGoroutines(t)
	const rate = 100_000_000
	const quanta = 2930 // 2930 * 512 bit / 100 Mb/s = 15.0016 ms
	pause := time.Duration(wire.PauseNs(quanta, rate))
	m := newMemSwitch(t, func(c *Config) { c.Ports[1].RateBps = rate })
	stopHold := holdPFC(t, m.l2)
	waitDump(t, m.sw, "egress (2, 3) paused", func(d *Dump) bool { return d.TM.Ports[1].Egress[3].Paused })
	for i := range 5 {
		m.l1.Inject(roce(t, hostIP1, hostIP2, hostMAC1, swMAC1, 26, wire.ECT0, uint32(i), 500))
	}
	for i := range 5 {
		m.l1.Inject(roce(t, hostIP1, hostIP2, hostMAC1, swMAC1, 0, wire.NotECT, uint32(100+i), 500))
	}
	lossy := m.l2.Wait(t, 10*time.Second, "the lossy frames", func(s []sentFrame) bool { return len(s) >= 5 })
	for _, s := range lossy {
		if parseFrame(t, s.data).IPv4.DSCP() == 26 {
			t.Fatal("a lossless frame left while paused")
		}
	}
	// The last XOFF of the hold reaches the switch before the refresh that cuts it.
	xoffs := stopHold()
	refreshed := time.Now()
	injectPFC(t, m.l2, quanta)
	sent := m.l2.Wait(t, 10*time.Second, "the lossless frames after expiry", func(s []sentFrame) bool { return len(s) >= 10 })
	for i, s := range sent[5:] {
		if f := parseFrame(t, s.data); f.IPv4.DSCP() != 26 || f.BTH.PSN != uint32(i) {
			t.Fatalf("frame %d after the lossy ones: DSCP %d PSN %d, want the lossless frames in order", i, f.IPv4.DSCP(), f.BTH.PSN)
		}
		// The switch received the refresh after we sent it: the pause cannot end sooner.
		if held := s.at.Sub(refreshed); held < pause {
			t.Errorf("a lossless frame left %v after the refresh, before the %v pause ended", held, pause)
		}
	}
	d := waitDrained(t, m.sw, uint64(10+xoffs+1))
	e := d.TM.Ports[1].Egress[3]
	if e.PFCRxXoff != uint64(xoffs+1) || e.PFCRxXon != 0 || e.Paused || e.PausedNs < int64(pause) || e.DequeuedPkts != 5 || len(m.l2.Sent()) != 10 {
		t.Errorf("egress (2, 3): %+v, %d frames sent; want %d XOFF received, no XON, paused >= %v, 5 dequeued, 10 sent",
			e, len(m.l2.Sent()), xoffs+1, pause)
	}
	t.Logf("lossless frames left %v after the refresh (pause %v); paused %v in all, %d XOFF received",
		sent[5].at.Sub(refreshed), pause, time.Duration(e.PausedNs), e.PFCRxXoff)
}

// TestDebugDump: the HTTP debug endpoint serves the whole dump as JSON (runtime, TM
// per port and priority, buffer, pipeline counters), matching what went through; other
// paths and methods are refused.
func TestDebugDump(t *testing.T) {
	checkGoroutines(t)
	lis := localListener(t)
	m := newMemSwitch(t, func(c *Config) { c.DebugListener = lis })
	const lossy, lossless, size = 20, 10, 800
	for i := range lossy {
		m.l1.Inject(roce(t, hostIP1, hostIP2, hostMAC1, swMAC1, 0, wire.NotECT, uint32(i), size))
	}
	for i := range lossless {
		m.l1.Inject(roce(t, hostIP1, hostIP2, hostMAC1, swMAC1, 26, wire.ECT0, uint32(i), size))
	}
	m.l2.Wait(t, 10*time.Second, "all frames", func(s []sentFrame) bool { return len(s) >= lossy+lossless })
	base := "http://" + lis.Addr().String()
	get := func(url string) (*http.Response, []byte) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}
	resp, body := get(base + DebugPath)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %s %q", DebugPath, resp.Status, resp.Header.Get("Content-Type"))
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatalf("not JSON: %v\n%.500s", err, body)
	}
	for _, k := range []string{"now_ns", "uptime", "runtime", "ports", "tm", "pipeline_counters", "digests"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("dump has no %q", k)
		}
	}
	if !strings.Contains(string(raw["runtime"]), `"lossless_drops": 0`) {
		t.Errorf("runtime section without lossless_drops: %s", raw["runtime"])
	}
	var d Dump
	if err := json.Unmarshal(body, &d); err != nil {
		t.Fatal(err)
	}
	l := uint64(size + fcsBytes)
	if len(d.TM.Ports) != 3 || len(d.Ports) != 2 || d.Ports[1].TMIndex != 1 || d.Ports[1].Ifname != "mem2" {
		t.Fatalf("ports: %d TM ports, %+v", len(d.TM.Ports), d.Ports)
	}
	q0, q3 := d.TM.Ports[1].Egress[0], d.TM.Ports[1].Egress[3]
	for _, c := range []struct {
		what      string
		got, want uint64
	}{
		{"runtime enqueued", d.Runtime.Enqueued, lossy + lossless},
		{"runtime dequeued", d.Runtime.Dequeued, lossy + lossless},
		{"runtime rx_frames", d.Runtime.RxFrames, lossy + lossless},
		{"tm total enqueued", d.TM.TotalEnqueuedPkts, lossy + lossless},
		{"tm total dequeued", d.TM.TotalDequeuedPkts, lossy + lossless},
		{"tm total dropped", d.TM.TotalDroppedPkts, 0},
		{"egress (2, 0) enqueued", q0.EnqueuedPkts, lossy},
		{"egress (2, 0) dequeued bytes", q0.DequeuedBytes, lossy * l},
		{"egress (2, 3) enqueued", q3.EnqueuedPkts, lossless},
		{"egress (2, 3) dequeued bytes", q3.DequeuedBytes, lossless * l},
		{"ingress PG (1, 3) received", d.TM.Ports[0].Ingress[3].ReceivedPkts, lossless},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.what, c.got, c.want)
		}
	}
	if d.TM.Buffer.HighWater < int64(l) || d.TM.Buffer.UsedBytes != 0 || q3.QueueHighWater < int64(l) {
		t.Errorf("buffer %+v, queue (2, 3) high-water %d", d.TM.Buffer, q3.QueueHighWater)
	}
	if d.TM.Ports[0].Ingress[3].HeadroomReserved == 0 || d.TM.Ports[0].Ingress[0].HeadroomReserved != 0 {
		t.Errorf("headroom reserved: lossless %d, lossy %d", d.TM.Ports[0].Ingress[3].HeadroomReserved, d.TM.Ports[0].Ingress[0].HeadroomReserved)
	}
	if d.NowNs <= 0 || d.Uptime == "" {
		t.Errorf("clock: now %d, uptime %q", d.NowNs, d.Uptime)
	}
	if resp, _ := get(base + "/"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /: %s, want 404", resp.Status)
	}
	post, err := http.Post(base+DebugPath, "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	if post.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST %s: %s, want 405", DebugPath, post.Status)
	}
	http.DefaultClient.CloseIdleConnections()
}
