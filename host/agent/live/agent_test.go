package live_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/fastcnp/fastcnp/afpacket"
	"github.com/fastcnp/fastcnp/host/agent"
	"github.com/fastcnp/fastcnp/host/agent/live"
	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/internal/netns"
	"github.com/fastcnp/fastcnp/internal/netns/netnstest"
	"github.com/fastcnp/fastcnp/internal/pcapio"
	"github.com/fastcnp/fastcnp/wire"
)

var (
	macA = wire.MAC{0x02, 0xfc, 0, 0, 0, 0x0a}
	macB = wire.MAC{0x02, 0xfc, 0, 0, 0, 0x0b}
	ipA  = wire.Addr4{10, 9, 0, 1}
	ipB  = wire.Addr4{10, 9, 0, 2}
)

const (
	qpA = 0x111 // sender QP (on A)
	qpB = 0x222 // receiver QP (on B)
)

// bed is two namespaces joined by a veth pair, with a port open on each end.
type bed struct {
	a, b   *netns.NS
	pa, pb *afpacket.Port
}

func newBed(t *testing.T, shape func(ctx context.Context, a *netns.NS) error) *bed {
	t.Helper()
	tb := netnstest.New(t)
	ctx := context.Background()
	a, err := tb.Namespace(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := tb.Namespace(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Veth(ctx,
		netns.LinkConfig{NS: a, Name: "eth0", MAC: net.HardwareAddr(macA[:]), DisableIPv6: true},
		netns.LinkConfig{NS: b, Name: "eth0", MAC: net.HardwareAddr(macB[:]), DisableIPv6: true}); err != nil {
		t.Fatal(err)
	}
	if shape != nil {
		if err := shape(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	bd := &bed{a: a, b: b}
	open := func(ns *netns.NS) *afpacket.Port {
		var p *afpacket.Port
		if err := ns.Do(func() error {
			var err error
			p, err = afpacket.Open("eth0", afpacket.Options{DisableOffloads: true, SendBuffer: 256 << 10})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	bd.pa, bd.pb = open(a), open(b)
	return bd
}

func quietLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	return l
}

func ccConfig(t *testing.T, preset string, line float64, baseRTT time.Duration) cc.Config {
	t.Helper()
	p, err := cc.DCQCNPreset(preset)
	if err != nil {
		t.Fatal(err)
	}
	return cc.Config{LineRate: line, BaseRTT: baseRTT, MTU: 1500, DCQCN: p}
}

func flowAB(f live.FlowConfig) live.FlowConfig {
	f.Src, f.Dst, f.DstMAC = ipA.String(), ipB.String(), macB.String()
	f.SrcQPN, f.DstQPN = qpA, qpB
	if f.Name == "" {
		f.Name = "ab"
	}
	return f
}

// runPair runs the receiver agent until the sender agent returns (it has
// ExitWhenDone) and returns both.
func runPair(t *testing.T, ctx context.Context, snd, rcv *live.Agent) {
	t.Helper()
	rctx, rcancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var rerr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		rerr = rcv.Run(rctx)
	}()
	serr := snd.Run(ctx)
	time.Sleep(20 * time.Millisecond) // let the last ACKed frames' stats settle
	rcancel()
	wg.Wait()
	if serr != nil {
		for _, st := range snd.Status() {
			t.Logf("sender %s: done %v window %d inflight %d stats %+v", st.Name, st.Done, st.Window, st.Inflight, st.Send)
		}
		for _, st := range rcv.Status() {
			t.Logf("receiver %s: %+v", st.Name, st.Recv)
		}
		t.Logf("sender rx %+v; receiver rx %+v", snd.Counters(), rcv.Counters())
		t.Fatalf("sender: %v", serr)
	}
	if rerr != nil {
		t.Fatalf("receiver: %v", rerr)
	}
}

// readRecords parses JSON lines and fails on any malformed line.
func readRecords(t *testing.T, b []byte) []live.Record {
	t.Helper()
	var recs []live.Record
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r live.Record
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("stats line %q: %v", sc.Text(), err)
		}
		if r.Type == "" {
			t.Fatalf("stats line without type: %q", sc.Text())
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestTransferOverVeth sends N MB between two agents over a veth pair,
// unshaped and through a tbf bottleneck, and checks that the flow
// completes, the receiver gets every byte in order and the statistics are
// well-formed JSON lines.
func TestTransferOverVeth(t *testing.T) {
	const size = 4 << 20
	cases := []struct {
		name  string
		shape func(ctx context.Context, a *netns.NS) error
		algo  string
		line  float64
		base  time.Duration
	}{
		{name: "paced-400M-dcqcn", algo: "dcqcn", line: 400e6, base: 100 * time.Microsecond},
		{name: "tbf-100M-dcqcn-fastcnp", algo: "dcqcn-fastcnp", line: 1e9, base: 200 * time.Microsecond,
			shape: func(ctx context.Context, a *netns.NS) error {
				return a.SetTBF(ctx, "eth0", netns.TBF{RateBitsPerSec: 100e6, Latency: 50 * time.Millisecond})
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bd := newBed(t, tc.shape)
			var sstats, rstats bytes.Buffer
			fl := []live.FlowConfig{flowAB(live.FlowConfig{Size: size})}
			snd, err := live.New(live.Config{IP: ipA, MAC: macA, Mode: live.ModeSender, Algo: tc.algo,
				CC: ccConfig(t, "nvidia-cx", tc.line, tc.base), Flows: fl, Stats: &sstats,
				StatsInterval: 5 * time.Millisecond, ExitWhenDone: true, Log: quietLog()}, bd.pa)
			if err != nil {
				t.Fatal(err)
			}
			rcv, err := live.New(live.Config{IP: ipB, MAC: macB, Mode: live.ModeReceiver, Algo: tc.algo,
				CC: ccConfig(t, "nvidia-cx", tc.line, tc.base), Flows: fl, Stats: &rstats,
				StatsInterval: 5 * time.Millisecond, Log: quietLog()}, bd.pb)
			if err != nil {
				t.Fatal(err)
			}
			// Safety net only: a hung run fails here instead of at the
			// package timeout. Nothing about speed is asserted.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			runPair(t, ctx, snd, rcv)

			ss, rs := snd.Status()[0], rcv.Status()[0]
			if !ss.Done || ss.Send.PayloadAcked != size {
				t.Fatalf("sender done=%v acked %d of %d", ss.Done, ss.Send.PayloadAcked, size)
			}
			if rs.Recv.Payload != size || rs.BadData != 0 {
				t.Fatalf("receiver got %d bytes of %d, %d packets with wrong bytes", rs.Recv.Payload, size, rs.BadData)
			}
			if len(ss.Messages) != 1 || ss.Messages[0].Bytes != size {
				t.Fatalf("messages %+v", ss.Messages)
			}
			fct := ss.Messages[0].FCT()
			gp := float64(size) * 8 / fct.Seconds()
			sum := live.Summarize(ss.RTTs)
			t.Logf("receiver %+v; port A %+v; port B %+v", rs.Recv, bd.pa.Stats(), bd.pb.Stats())
			t.Logf("%s: FCT %v, goodput %.1f Mb/s (line %.0f Mb/s), retransmits %d, timeouts %d, naks %d, RTT %+v",
				tc.name, fct, gp/1e6, tc.line/1e6, ss.Send.Retransmits, ss.Send.Timeouts, ss.Send.Naks, *sum)
			if gp > tc.line*1.02 {
				t.Errorf("goodput %.1f Mb/s above the line rate: pacing broken", gp/1e6)
			}
			if sum.Count == 0 || sum.MinUs <= 0 {
				t.Errorf("no RTT samples")
			}

			recs := readRecords(t, sstats.Bytes())
			kinds := map[string]int{}
			for _, r := range recs {
				kinds[r.Type]++
				if r.Type == "sample" && (r.RateBps == nil || r.WindowBytes == nil || r.BytesAcked == nil || r.CNPSwitch == nil || r.CNPNP == nil) {
					t.Fatalf("sample record missing fields: %+v", r)
				}
				if r.Type == "summary" && (r.FCTUs == nil || *r.BytesAcked != size || len(r.Messages) != 1) {
					t.Fatalf("summary record: %+v", r)
				}
			}
			if kinds["sample"] == 0 || kinds["message"] != 1 || kinds["summary"] != 1 || kinds["agent"] != 1 {
				t.Fatalf("record kinds %v", kinds)
			}
			rrecs := readRecords(t, rstats.Bytes())
			last := rrecs[len(rrecs)-2] // before the "agent" record
			if last.Type != "summary" || last.Recv == nil || last.Recv.Bytes != size {
				t.Fatalf("receiver summary %+v", last)
			}
		})
	}
}

// TestSwitchCNPCapsWindowAndNP injects, as a switch would, a CNP with a
// window of W bytes toward a dcqcn-fastcnp sender in the middle of a long
// flow, and a CE-marked (duplicate) data packet toward the receiver. It
// checks from the agents' statistics that bytes in flight stay at or below
// W while the window is capped, that the receiver's NP answered the CE mark
// with a CNP which the sender counted, and (with tshark, if installed) that
// Wireshark decodes the frames the agents sent as InfiniBand data (opcode 4,
// DestQP = receiver QP), ACKs (17, sender QP) and CNPs (129, sender QP).
func TestSwitchCNPCapsWindowAndNP(t *testing.T) {
	const W = 6000
	bd := newBed(t, nil)
	var inj *afpacket.Port
	if err := bd.b.Do(func() error {
		var err error
		inj, err = afpacket.Open("eth0", afpacket.Options{NoPromiscuous: true})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer inj.Close()

	var capMu sync.Mutex
	var pcap bytes.Buffer
	pw, err := pcapio.NewWriter(&pcap, pcapio.Options{Nanosecond: true})
	if err != nil {
		t.Fatal(err)
	}
	capture := func(ts time.Time, frame []byte, sent bool) {
		if !sent {
			return
		}
		capMu.Lock()
		defer capMu.Unlock()
		if err := pw.WritePacket(ts, frame); err != nil {
			t.Error(err)
		}
	}
	// Rate increase events far apart, so the capped window lasts (the
	// first increase restores Winit, spec 01) long enough to measure.
	cfg := ccConfig(t, "nvidia-cx", 200e6, 4*time.Millisecond) // Winit = 100 KB
	cfg.DCQCN.RPGTimeReset = 300 * time.Millisecond
	cfg.DCQCN.RPGByteReset = 0
	cfg.DCQCN.CNPInterval = 0
	cfg.DCQCN.Set = "custom"
	// Spec 01's window rule holds the cap until that increase (rule aimd
	// grows it back within a few round trips).
	cfg.WindowRule = cc.WindowRuleSpec01
	// A sized flow (not a duration): the injection point and the end are
	// defined by bytes, so a loaded machine only makes the test slower.
	fl := []live.FlowConfig{flowAB(live.FlowConfig{Size: 12 << 20})}
	var sstats bytes.Buffer
	// No refresh announcement (AnnounceInterval an hour): checkTshark
	// wants the up and the down only, however long a loaded machine makes
	// the flow (a refresh came at 10 s in a run at load 24).
	snd, err := live.New(live.Config{IP: ipA, MAC: macA, Mode: live.ModeSender, Algo: "dcqcn-fastcnp", CC: cfg,
		Flows: fl, Stats: &sstats, StatsInterval: 2 * time.Millisecond, ExitWhenDone: true,
		AnnounceInterval: time.Hour, Capture: capture, Log: quietLog()}, bd.pa)
	if err != nil {
		t.Fatal(err)
	}
	rcv, err := live.New(live.Config{IP: ipB, MAC: macB, Mode: live.ModeReceiver, Algo: "dcqcn-fastcnp", CC: cfg,
		Flows: fl, Capture: capture, Log: quietLog()}, bd.pb)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var injErr error
	var injWG sync.WaitGroup
	injWG.Add(1)
	go func() {
		defer injWG.Done()
		// Wait (on the sender's own progress, not on a clock) until the
		// flow has sent 2 MB, then inject.
		for {
			st := snd.Status()
			if len(st) == 1 && st[0].Send.PayloadSent >= 2<<20 {
				break
			}
			if len(st) == 1 && st[0].Done {
				injErr = fmt.Errorf("flow ended after %d bytes, before the injection point: %+v", st[0].Send.PayloadSent, st[0].Send)
				return
			}
			select {
			case <-ctx.Done():
				injErr = ctx.Err()
				return
			case <-time.After(time.Millisecond):
			}
		}
		back := agent.Path{SrcMAC: macB, DstMAC: macA, SrcIP: ipB, DstIP: ipA, SrcPort: 49152}
		b := make([]byte, 256)
		ext := wire.CNPExt{Version: 1, Flags: wire.CNPExtWindowValid | wire.CNPExtBySwitch, SwitchID: 1, Window: W, Port: 3, QueueBytes: 120000}
		n, err := back.BuildCNP(b, qpA, &ext)
		if err == nil {
			err = inj.WriteFrame(ctx, b[:n])
		}
		if err != nil {
			injErr = err
			return
		}
		// A CE-marked duplicate of PSN 0 (long delivered): the receiver's NP
		// must answer with a plain CNP; the transport drops it silently.
		fwd := agent.Path{SrcMAC: macA, DstMAC: macB, SrcIP: ipA, DstIP: ipB, SrcPort: 49152}
		pkt := agent.Packet{PSN: 0, Payload: 64}
		if n, err = fwd.BuildData(b, qpB, &pkt); err == nil {
			_, err = wire.MarkCE(b[wire.EthernetLen:n])
		}
		if err == nil {
			err = bd.pa.WriteFrame(ctx, b[:n])
		}
		injErr = err
	}()
	runPair(t, ctx, snd, rcv)
	injWG.Wait()
	if injErr != nil {
		t.Fatalf("inject: %v", injErr)
	}
	ss := snd.Status()[0]
	if !ss.Done {
		t.Fatalf("flow not done: %+v", ss.Send)
	}
	if ss.Send.CNPSwitch != 1 || ss.Send.LastCNPWindow != W {
		t.Errorf("switch CNPs %d (window %d), want 1 with window %d", ss.Send.CNPSwitch, ss.Send.LastCNPWindow, W)
	}
	if ss.Send.CNPNP < 1 {
		t.Errorf("receiver NP CNPs counted by the sender: %d, want >= 1", ss.Send.CNPNP)
	}
	rs := rcv.Status()[0]
	if rs.Recv.CE != 1 || rs.Recv.CNPs != 1 || rs.BadData != 0 {
		t.Errorf("receiver CE %d, CNPs %d, bad data %d; want 1, 1, 0", rs.Recv.CE, rs.Recv.CNPs, rs.BadData)
	}

	// The window cap, measured: intervals in which every packet was admitted
	// under the switch window W (send_window_max_bytes == W).
	recs := readRecords(t, sstats.Bytes())
	var capped, peakCapped, peakBefore int64
	var rateBefore, rateCapped []float64
	for _, r := range recs {
		if r.Type != "sample" || r.Role != "sender" {
			continue
		}
		switch {
		case *r.SendWindowMax == W:
			capped++
			peakCapped = max(peakCapped, *r.PeakInflight)
			rateCapped = append(rateCapped, *r.RateBps)
		case *r.CNPSwitch == 0:
			peakBefore = max(peakBefore, *r.PeakInflight)
			rateBefore = append(rateBefore, *r.RateBps)
		}
	}
	t.Logf("window cap W=%d: %d capped samples, peak inflight while capped %d B (before the CNP %d B); median rate before %.1f Mb/s, capped %.1f Mb/s",
		W, capped, peakCapped, peakBefore, median(rateBefore)/1e6, median(rateCapped)/1e6)
	if capped < 3 {
		t.Fatalf("only %d samples with the window capped", capped)
	}
	if peakCapped > W {
		t.Logf("sender stats %+v", ss.Send)
		t.Errorf("bytes in flight %d exceeded the switch window %d", peakCapped, W)
	}
	if peakBefore <= W {
		t.Errorf("before the CNP inflight peaked at %d <= W: the test shows nothing", peakBefore)
	}
	checkTshark(t, pcap.Bytes())
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	c := append([]float64(nil), v...)
	for i := range c { // small: insertion sort
		for j := i; j > 0 && c[j] < c[j-1]; j-- {
			c[j], c[j-1] = c[j-1], c[j]
		}
	}
	return c[len(c)/2]
}

// checkTshark has Wireshark decode the captured frames.
func checkTshark(t *testing.T, pcap []byte) {
	t.Helper()
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Log("tshark not installed: skipping the Wireshark decode check")
		return
	}
	path := filepath.Join(t.TempDir(), "agent.pcap")
	if p := os.Getenv("FASTCNP_AGENT_PCAP"); p != "" {
		path = p
	}
	if err := os.WriteFile(path, pcap, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tshark, "-r", path, "-T", "fields", "-E", "separator=;",
		"-e", "infiniband.bth.opcode", "-e", "infiniband.bth.destqp", "-e", "udp.dstport", "-e", "ip.dsfield.ecn").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	counts := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, ";")
		if len(f) != 4 {
			t.Fatalf("tshark line %q", line)
		}
		switch f[0] {
		case "4":
			if f[1] != "0x000222" || f[3] != "2" {
				t.Fatalf("data frame decoded as destqp %s ecn %s: %q", f[1], f[3], line)
			}
		case "17", "129":
			if f[1] != "0x000111" {
				t.Fatalf("opcode %s frame decoded with destqp %s: %q", f[0], f[1], line)
			}
		case "":
			if f[2] != "4792" {
				t.Fatalf("frame neither InfiniBand nor announcement: %q", line)
			}
		default:
			t.Fatalf("unexpected opcode: %q", line)
		}
		counts[f[0]]++
	}
	t.Logf("tshark decoded: %d data (opcode 4), %d ACKs (17), %d CNPs (129), %d announcements", counts["4"], counts["17"], counts["129"], counts[""])
	if counts["4"] == 0 || counts["17"] == 0 || counts["129"] != 1 || counts[""] != 2 {
		t.Fatalf("decoded kinds %v, want data, ACKs, one CNP and two announcements (up, down)", counts)
	}
}

// TestPacingAccuracy measures how well the send loop holds a paced rate:
// a long dcqcn flow (no window, no CNP: the rate stays at the line rate)
// at several rates, departures timestamped by the capture hook. It asserts
// only that pacing never exceeds the rate (beyond the token bucket): how
// close it gets depends on the machine's load, so the achieved rate and the
// inter-departure gaps are logged, not asserted (docs/host-agent.md quotes
// them).
func TestPacingAccuracy(t *testing.T) {
	for _, rate := range []float64{50e6, 200e6, 500e6, 1e9} {
		t.Run(rateName(rate), func(t *testing.T) {
			bd := newBed(t, nil)
			var mu sync.Mutex
			var stamps []time.Time
			var bytesSent int
			capture := func(ts time.Time, frame []byte, sent bool) {
				if sent && len(frame) > 1000 {
					mu.Lock()
					stamps = append(stamps, ts)
					bytesSent += len(frame)
					mu.Unlock()
				}
			}
			fl := []live.FlowConfig{flowAB(live.FlowConfig{Duration: live.Duration(300 * time.Millisecond)})}
			cfg := ccConfig(t, "nvidia-cx", rate, time.Millisecond)
			snd, err := live.New(live.Config{IP: ipA, MAC: macA, Mode: live.ModeSender, Algo: "dcqcn", CC: cfg,
				Flows: fl, ExitWhenDone: true, Capture: capture, Log: quietLog()}, bd.pa)
			if err != nil {
				t.Fatal(err)
			}
			rcv, err := live.New(live.Config{IP: ipB, MAC: macB, Mode: live.ModeReceiver, Algo: "dcqcn", CC: cfg,
				Flows: fl, Log: quietLog()}, bd.pb)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			runPair(t, ctx, snd, rcv)
			mu.Lock()
			defer mu.Unlock()
			if len(stamps) < 10 {
				t.Fatalf("only %d data frames", len(stamps))
			}
			// Batches share one timestamp: gaps between distinct write times.
			span := stamps[len(stamps)-1].Sub(stamps[0]).Seconds()
			got := float64(bytesSent-1082) * 8 / span
			var gaps []time.Duration
			for i := 1; i < len(stamps); i++ {
				if d := stamps[i].Sub(stamps[i-1]); d > 0 {
					gaps = append(gaps, d)
				}
			}
			gs := live.Summarize(gaps)
			ideal := float64(1082*8) / rate * 1e6
			t.Logf("target %.0f Mb/s: achieved %.1f Mb/s (%.1f%%), %d frames in %d writes (%.1f per write); gap between writes: ideal %.1f us per frame, p50 %.1f us, p99 %.1f us, max %.1f us",
				rate/1e6, got/1e6, 100*got/rate, len(stamps), len(gaps)+1, float64(len(stamps))/float64(len(gaps)+1), ideal, gs.P50Us, gs.P99Us, gs.MaxUs)
			if got > rate*1.03 {
				t.Errorf("achieved %.1f Mb/s exceeds the paced %.1f Mb/s", got/1e6, rate/1e6)
			}
		})
	}
}

func rateName(r float64) string {
	if r >= 1e9 {
		return strconv.FormatFloat(r/1e9, 'f', -1, 64) + "G"
	}
	return strconv.FormatFloat(r/1e6, 'f', -1, 64) + "M"
}

// TestIncastFromOneAgent sends four flows (count: 4) from one agent to one
// receiver through a 100 Mb/s tbf bottleneck: every flow completes with all
// its bytes in order; per-flow FCTs and the fairness of their goodputs are
// logged (measured, not asserted).
func TestIncastFromOneAgent(t *testing.T) {
	const size = 1 << 20
	bd := newBed(t, func(ctx context.Context, a *netns.NS) error {
		return a.SetTBF(ctx, "eth0", netns.TBF{RateBitsPerSec: 100e6, Latency: 50 * time.Millisecond})
	})
	fl := []live.FlowConfig{flowAB(live.FlowConfig{Name: "incast", Size: size, Count: 4})}
	cfg := ccConfig(t, "nvidia-cx", 1e9, 100*time.Microsecond)
	snd, err := live.New(live.Config{IP: ipA, MAC: macA, Mode: live.ModeSender, Algo: "dcqcn-fastcnp", CC: cfg,
		Flows: fl, ExitWhenDone: true, Log: quietLog()}, bd.pa)
	if err != nil {
		t.Fatal(err)
	}
	rcv, err := live.New(live.Config{IP: ipB, MAC: macB, Mode: live.ModeReceiver, Algo: "dcqcn-fastcnp", CC: cfg,
		Flows: fl, Log: quietLog()}, bd.pb)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	runPair(t, ctx, snd, rcv)
	var sum, sumSq float64
	for i, st := range snd.Status() {
		if !st.Done || st.Send.PayloadAcked != size || len(st.Messages) != 1 {
			t.Fatalf("flow %d: %+v", i, st)
		}
		gp := float64(size) * 8 / st.Messages[0].FCT().Seconds()
		sum, sumSq = sum+gp, sumSq+gp*gp
		t.Logf("%s: FCT %v, goodput %.1f Mb/s", st.Name, st.Messages[0].FCT(), gp/1e6)
	}
	for _, st := range rcv.Status() {
		if st.Recv.Payload != size || st.BadData != 0 {
			t.Fatalf("receiver %s: %+v bad %d", st.Name, st.Recv, st.BadData)
		}
	}
	t.Logf("Jain fairness of the 4 goodputs: %.3f", sum*sum/(4*sumSq))
}
