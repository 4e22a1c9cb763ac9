package softswitch

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/fastcnp/fastcnp/target/tm"
	"github.com/fastcnp/fastcnp/wire"
)

// injectPFC sends a PFC frame for priority 3 with quanta into l (as the peer would).
func injectPFC(t *testing.T, l *memLink, quanta uint16) {
	t.Helper()
	b := make([]byte, 64)
	n, err := wire.BuildPFC(b, wire.MAC(hostMAC2), 1<<3, [8]uint16{3: quanta})
	if err != nil {
		t.Fatal(err)
	}
	l.Inject(b[:n])
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

// TestLosslessDropLoggedAndCounted: a peer that ignores PAUSE overruns the headroom of
// its ingress port while the egress is held by a received PFC. Every frame beyond
// XOFF + headroom is a lossless drop: refused, counted in the runtime and in the TM
// (per egress queue and per ingress priority group), and logged as a warning (at the
// 1st, 2nd, 4th, 8th... drop). Nothing else is lost: after the XON the accepted frames
// leave.
func TestLosslessDropLoggedAndCounted(t *testing.T) {
	checkGoroutines(t)
	logger, hook := test.NewNullLogger()
	const n, size = 12, 1000 // TM length 1004 (FCS)
	m := newMemSwitch(t, func(c *Config) {
		c.Log = logger
		c.Ports[1].RateBps = 100_000_000 // 65535 quanta = 335 ms
		c.Ports[0].HeadroomBytes = 1522  // one max frame: the least accepted
		c.TM.Threshold, c.TM.XoffBytes = tm.ThresholdStatic, 4000
	})
	injectPFC(t, m.l2, 0xffff)
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
	if want := []uint64{1, 2, 4, 8}; len(logged) != len(want) || logged[0] != 1 || logged[1] != 2 || logged[2] != 4 || logged[3] != 8 {
		t.Errorf("lossless drops logged at counts %v, want %v", logged, want)
	}

	// XON: the 4 accepted frames leave, then the PG drains and the switch sends XON.
	b := make([]byte, 64)
	k, _ := wire.BuildPFCXON(b, wire.MAC(hostMAC2), 1<<3)
	m.l2.Inject(b[:k])
	sent := m.l2.Wait(t, 10*time.Second, "the accepted frames", func(s []sentFrame) bool { return len(s) >= accepted })
	for i, s := range sent {
		if f := parseFrame(t, s.data); f.BTH.PSN != uint32(i) {
			t.Errorf("frame %d out has PSN %d, want %d (the first ones were accepted)", i, f.BTH.PSN, i)
		}
	}
	pfc := pfcOf(t, m.l1.Wait(t, 10*time.Second, "XOFF and XON on port 1", func(s []sentFrame) bool { return len(pfcOf(t, s)) >= 2 }))
	if pfc[0].Time[3] != tm.DefaultPauseQuanta || pfc[1].Time[3] != 0 {
		t.Errorf("PFC sent on port 1: %+v, want XOFF then XON", pfc)
	}
}

// TestPFCReceivedQuantaAndRefresh: a received PFC XOFF holds the lossless queue for
// quanta x 512 bit times at the port's rate, and a newer PFC frame replaces the
// remaining time: here a 335-ms pause (65535 quanta at 100 Mb/s) is cut to 15 ms by
// a refresh with 2930 quanta. The lossless frames leave by themselves at expiry (no
// XON), not before refresh + 15 ms, while lossy frames are never held.
func TestPFCReceivedQuantaAndRefresh(t *testing.T) {
	checkGoroutines(t)
	const rate = 100_000_000
	const quanta = 2930 // 2930 * 512 bit / 100 Mb/s = 15.0016 ms
	pause := time.Duration(tm.PauseNs(quanta, rate))
	m := newMemSwitch(t, func(c *Config) { c.Ports[1].RateBps = rate })
	injectPFC(t, m.l2, 0xffff)
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
	refreshed := time.Now()
	injectPFC(t, m.l2, quanta)
	sent := m.l2.Wait(t, 10*time.Second, "the lossless frames after expiry", func(s []sentFrame) bool { return len(s) >= 10 })
	for _, s := range sent[5:] {
		if parseFrame(t, s.data).IPv4.DSCP() != 26 {
			t.Fatal("unexpected frame order")
		}
		// The switch received the refresh after we sent it: the pause cannot end sooner.
		if held := s.at.Sub(refreshed); held < pause {
			t.Errorf("a lossless frame left %v after the refresh, before the %v pause ended", held, pause)
		}
	}
	d := m.sw.Dump()
	e := d.TM.Ports[1].Egress[3]
	if e.PFCRxXoff != 2 || e.PFCRxXon != 0 || e.Paused || e.PausedNs < int64(pause) || e.DequeuedPkts != 5 {
		t.Errorf("egress (2, 3): %+v, want 2 XOFF received, no XON, paused >= %v, 5 dequeued", e, pause)
	}
	t.Logf("lossless frames left %v after the refresh (pause %v); paused %v in all",
		sent[5].at.Sub(refreshed), pause, time.Duration(e.PausedNs))
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
