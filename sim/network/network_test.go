package network

import (
	"errors"
	"reflect"
	"testing"

	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/sim/engine"
	"github.com/fastcnp/fastcnp/sim/hpcc"
	"github.com/fastcnp/fastcnp/wire"
)

// topo builds a topology: n hosts then the switches; links given as (a, b, Gb/s).
type topoLink struct {
	a, b int
	gbps float64
}

func topo(hosts, switches int, links ...topoLink) *hpcc.Topology {
	t := &hpcc.Topology{Nodes: hosts + switches}
	for s := range switches {
		t.Switches = append(t.Switches, hosts+s)
	}
	for _, l := range links {
		t.Links = append(t.Links, hpcc.Link{A: l.a, B: l.b, RateBps: l.gbps * 1e9, DelayNs: 1000})
	}
	return t
}

func flow(src, dst int, size, start int64) hpcc.Flow {
	return hpcc.Flow{Src: src, Dst: dst, PG: hpcc.DataPG, DPort: hpcc.DPortNormal, Size: size, StartNs: start}
}

func baseConfig(t *hpcc.Topology, mode Mode, flows ...hpcc.Flow) Config {
	return Config{Topo: t, Flows: flows, Mode: mode, DCQCNSet: "hpcc-sim", CNPInterval: -1, PayloadBytes: 1000,
		AckEvery: 1, Switch: DefaultSwitchParams(), Seed: 1}
}

func run(t *testing.T, cfg Config) *Result {
	t.Helper()
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := n.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestStandaloneFCT: one flow alone on an idle path finishes in exactly its
// standalone FCT, computed here by hand from the link model: with host links of
// 86 Gb/s and fabric links of 172 Gb/s every frame's link time is a whole number of
// ns (a data frame of 993 B payload is 1075 B on the wire: 100 ns at 86 Gb/s, 50 at
// 172; a last packet of 47 B payload: 129 B, 12 and 6 ns; an ACK: 62 + 4 + 20 =
// 86 B, 8 and 4 ns; 1 us per link). The sender's packets leave back to back; they
// cross each switch store and forward, a short last packet behind the full one
// before it; the last one's ACK comes back.
func TestStandaloneFCT(t *testing.T) {
	// hosts 0, 1 under switch 4; host 2 under switch 5, host 3 under switch 6;
	// switches 4 - 5 - 6 in a line at 172 Gb/s.
	tp := topo(4, 3, topoLink{0, 4, 86}, topoLink{1, 4, 86}, topoLink{4, 5, 172}, topoLink{2, 5, 86},
		topoLink{5, 6, 172}, topoLink{3, 6, 86})
	const (
		full, last  = 100, 12 // ns at 86 Gb/s: a 1075 B and a 129 B frame
		ack86       = 8       // an ACK at 86 Gb/s
		lastF, ackF = 6, 4    // at 172 Gb/s
		d           = 1000
	)
	tests := []struct {
		name     string
		src, dst int
		size     int64
		want     int64
	}{
		// h0 -> h1 through one switch: n frames on the host link, the last again on
		// the switch's port to h1, the ACK back over two links.
		{"one packet, one switch", 0, 1, 993, full + d + full + d + (ack86+d)*2},
		{"50 packets, one switch", 0, 1, 50 * 993, 50*full + d + full + d + (ack86+d)*2},
		// The 47 B packet arrives at the switch 12 ns after the full one before it,
		// which still takes 100 ns to leave: it leaves right after it.
		{"partial last packet, one switch", 0, 1, 50*993 + 47, 50*full + d + full + last + d + (ack86+d)*2},
		// h0 -> h3 through three switches: host link, two fabric links, host link;
		// the last packet waits behind the one before it at every hop.
		{"partial last packet, three switches", 0, 3, 20*993 + 47,
			20*full + (d+50)*2 + d + full + last + d + (ack86+d)*2 + (ackF+d)*2},
		{"one packet, three switches", 3, 0, 993, full + d + (50+d)*2 + full + d + (ack86+d)*2 + (ackF+d)*2},
	}
	for _, mode := range Modes() {
		for _, ackEvery := range []int{1, 16} {
			for _, tt := range tests {
				cfg := baseConfig(tp, mode, flow(tt.src, tt.dst, tt.size, 5000))
				cfg.PayloadBytes, cfg.AckEvery = 993, ackEvery
				r := run(t, cfg)
				f := r.Flows[0]
				if f.FCTNs != tt.want || f.StandaloneNs != tt.want {
					t.Errorf("%s, %s, ack every %d: FCT %d ns, standalone %d ns; want both %d", mode, tt.name, ackEvery, f.FCTNs, f.StandaloneNs, tt.want)
				}
				if f.Retransmits != 0 || f.ECNMarks != 0 || f.SwitchCNPs != 0 {
					t.Errorf("%s, %s: retransmits %d, marks %d, CNPs %d on an idle path", mode, tt.name, f.Retransmits, f.ECNMarks, f.SwitchCNPs)
				}
			}
		}
	}
}

// s1Topo is a small S1: senders 0..n-1 and the victim n under switch A, R (n+1) and
// W (n+2) under switch B; uplink at upGbps.
func s1Topo(n int, upGbps float64) (*hpcc.Topology, []hpcc.Flow) {
	a, b := n+3, n+4
	var ls []topoLink
	for i := 0; i <= n; i++ {
		ls = append(ls, topoLink{i, a, 100})
	}
	ls = append(ls, topoLink{a, b, upGbps}, topoLink{n + 1, b, 100}, topoLink{n + 2, b, 100})
	tp := topo(n+3, 2, ls...)
	var fs []hpcc.Flow
	for i := range n {
		fs = append(fs, flow(i, n+1, 1<<40, 1000))
	}
	fs = append(fs, flow(n, n+2, 1<<40, 1000))
	return tp, fs
}

// TestDeterminism: the same configuration gives the same result, event for event,
// run twice and with either event queue (PFC storms, CNPs and RED's random numbers
// included).
func TestDeterminism(t *testing.T) {
	tp, fs := s1Topo(8, 400)
	for _, mode := range Modes() {
		cfg := baseConfig(tp, mode, fs...)
		cfg.Switch.BufferBytes = 4 << 20
		cfg.UntilNs = 400_000
		cfg.RTTSamples, cfg.QueueSampleNs, cfg.RateSampleNs = true, 10_000, 10_000
		var ref *Result
		for i, q := range []string{engine.QueueHeap, engine.QueueHeap, engine.QueueCalendar} {
			cfg.Queue = q
			r := run(t, cfg)
			if i == 0 {
				ref = r
				if r.Events < 50_000 {
					t.Fatalf("%s: only %d events", mode, r.Events)
				}
				continue
			}
			if !reflect.DeepEqual(r, ref) {
				t.Errorf("%s: run %d (queue %s) differs from the first", mode, i, q)
			}
		}
		if mode == ModeDCQCN && len(ref.PFC) == 0 {
			t.Errorf("dcqcn: no PFC in the determinism run; it should exercise PFC")
		}
	}
}

// TestConservation: in the middle of a run (frames queued and on links) and at its
// end, per class, every frame sent is delivered, consumed, dropped, queued or on a
// link; with PFC the lossless class drops nothing; without PFC it drops, the
// senders go back N, and every flow still completes.
func TestConservation(t *testing.T) {
	tp, fs := s1Topo(8, 400)
	for _, mode := range Modes() {
		cfg := baseConfig(tp, mode, fs...)
		cfg.Switch.BufferBytes = 4 << 20
		cfg.UntilNs = 300_000
		r := run(t, cfg)
		busy := ClassCount{}
		for c := range NumClasses {
			k := &r.Classes[c]
			if !k.Balanced() {
				t.Errorf("%s: class %d does not balance: %+v", mode, c, *k)
			}
			busy.Frames += k.Queued.Frames + k.OnWire.Frames
		}
		if busy.Frames == 0 {
			t.Errorf("%s: nothing queued or on a link mid-run: the check is vacuous", mode)
		}
		if d := r.Classes[losslessPriority].Dropped; !d.IsZero() {
			t.Errorf("%s: lossless class dropped %+v with PFC on", mode, d)
		}
		if r.Classes[losslessPriority].Sent.Frames < 1000 || r.Classes[classControl].Sent.Frames == 0 && mode == ModeDCQCN {
			t.Errorf("%s: sent %+v, PFC %+v: too little traffic for the check", mode, r.Classes[losslessPriority].Sent, r.Classes[classControl].Sent)
		}
	}
	// Lossy: 8 x 1 MB incast into a 200 KB buffer without PFC.
	var ls []topoLink
	var flows []hpcc.Flow
	for i := range 8 {
		ls = append(ls, topoLink{i, 9, 100})
		flows = append(flows, flow(i, 8, 1_000_000, 1000))
	}
	ls = append(ls, topoLink{8, 9, 100})
	for _, mode := range Modes() {
		cfg := baseConfig(topo(9, 1, ls...), mode, flows...)
		cfg.Switch.PFC, cfg.Switch.BufferBytes = false, 200_000
		r := run(t, cfg)
		k := r.Classes[losslessPriority]
		if !k.Balanced() || k.Dropped.Frames == 0 {
			t.Errorf("%s without PFC: %+v; want drops and a balanced account", mode, k)
		}
		var retx uint64
		for _, f := range r.Flows {
			retx += f.Retransmits
		}
		if r.Finished != len(flows) || retx == 0 {
			t.Errorf("%s without PFC: %d of %d flows finished, %d retransmissions", mode, r.Finished, len(flows), retx)
		}
	}
}

// tx records the frames a node starts to send.
type tx struct {
	at    int64
	port  int
	frame []byte
}

func isData(f []byte) bool {
	var p wire.Frame
	return wire.Parse(f, wire.ParseOptions{}, &p) == nil && p.Has(wire.LayerBTH) && p.BTH.Opcode <= wire.OpRCSendOnlyImm
}

// inject delivers a PFC frame for priority 3 with quanta q to port of node at at.
func inject(t *testing.T, n *Network, node, port int, q uint16, at int64) {
	t.Helper()
	i := n.pool.get(wire.PFCFrameBytes)
	var quanta [8]uint16
	quanta[losslessPriority] = q
	m, err := wire.BuildPFC(n.pool.buf(i), wire.MAC{2}, 1<<losslessPriority, quanta)
	if err != nil {
		t.Fatal(err)
	}
	n.pool.s(i).n, n.pool.s(i).cls = int32(m), classControl
	n.acct.made(classControl, m)
	n.send(node, port, i, at)
}

// TestPFCPauseExact: a PFC PAUSE holds the lossless priority for exactly quanta x
// 512 bit times, at a NIC and at a switch egress, and an XON ends it at once; a
// frame already on the wire finishes. At 86 Gb/s, 1000 quanta are 512000/86 =
// 5953.5 ns, rounded up to 5954 (wire.PauseNs).
func TestPFCPauseExact(t *testing.T) {
	const pause = 5954
	tp := topo(2, 1, topoLink{0, 2, 86}, topoLink{1, 2, 86})
	tests := []struct {
		name      string
		node      int // where the PFC arrives
		port      int
		xonAfter  int64 // > 0: an XON that long after the XOFF
		wantStart int64 // after the XOFF's arrival
	}{
		{"NIC: expiry", 0, 0, 0, pause},
		{"NIC: XON", 0, 0, 1500, 1500},
		{"switch egress: expiry", 2, 1, 0, pause},
		{"switch egress: XON", 2, 1, 2500, 2500},
	}
	for _, tt := range tests {
		cfg := baseConfig(tp, ModeDCQCN, flow(0, 1, 2_000_000, 1000))
		cfg.PayloadBytes = 993
		n, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var sent []tx
		n.onTx = func(node, port int, at int64, frame []byte) {
			if node == tt.node && port == tt.port && isData(frame) {
				sent = append(sent, tx{at: at})
			}
		}
		const xoff = 20_003 // mid-frame at the NIC: frames start every 100 ns
		inject(t, n, tt.node, tt.port, 1000, xoff)
		if tt.xonAfter > 0 {
			inject(t, n, tt.node, tt.port, 0, xoff+tt.xonAfter)
		}
		r, err := n.Run(nil)
		if err != nil {
			t.Fatal(err)
		}
		var before, after int64 = -1, -1
		for _, s := range sent {
			if s.at <= xoff {
				before = s.at
			} else if after < 0 {
				after = s.at
			}
		}
		if before < 0 || after < 0 {
			t.Fatalf("%s: no data frames around the pause", tt.name)
		}
		if after != xoff+tt.wantStart {
			t.Errorf("%s: the first data frame after the PAUSE at %d starts at +%d ns, want +%d", tt.name, xoff, after-xoff, tt.wantStart)
		}
		if xoff-before >= 100 {
			t.Errorf("%s: the last frame before the PAUSE started %d ns before it: the link idled", tt.name, xoff-before)
		}
		if r.Finished != 1 {
			t.Errorf("%s: the flow did not finish", tt.name)
		}
		if tt.node == 0 {
			if got := r.Hosts[0].PausedNs; got != tt.wantStart {
				t.Errorf("%s: host paused %d ns, want %d", tt.name, got, tt.wantStart)
			}
		}
	}
}

// TestPFCEpisodes: in an incast held by PFC (static XOFF, no ECN marks), every
// PAUSE a sender receives stops its data until the matching XON or the expiry, and
// its paused time is exactly the sum of those episodes.
func TestPFCEpisodes(t *testing.T) {
	tp := topo(3, 1, topoLink{0, 3, 100}, topoLink{1, 3, 100}, topoLink{2, 3, 100})
	cfg := baseConfig(tp, ModeDCQCN, flow(0, 2, 3_000_000, 1000), flow(1, 2, 3_000_000, 1000))
	cfg.Switch.StaticXoff = 30_000
	cfg.Switch.KminBytes100G, cfg.Switch.KmaxBytes100G = 20_000_000, 30_000_000 // no marks
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sent := map[int][]int64{}
	n.onTx = func(node, _ int, at int64, frame []byte) {
		if node < 2 && isData(frame) {
			sent[node] = append(sent[node], at)
		}
	}
	r, err := n.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	for h := range 2 {
		var paused, from int64
		open := false
		quanta := wire.PauseNs(0xFFFF, 100e9)
		episodes := 0
		for _, p := range r.PFC {
			if p.Switch || p.Node != h {
				continue
			}
			switch {
			case p.Paused && !open:
				open, from = true, p.TimeNs
			case p.Paused && open: // a refresh: the pause runs on
				if p.TimeNs > from+quanta {
					t.Fatalf("host %d: a pause expired unseen", h)
				}
			case !p.Paused && open:
				open = false
				episodes++
				paused += p.TimeNs - from
				for _, at := range sent[h] {
					if at > from && at < p.TimeNs {
						t.Errorf("host %d sent data at %d, inside the pause %d..%d", h, at, from, p.TimeNs)
					}
				}
			}
		}
		if episodes == 0 {
			t.Fatalf("host %d: no pause episodes: the test needs PFC", h)
		}
		if open {
			t.Fatalf("host %d: a pause still open at the end", h)
		}
		if r.Hosts[h].PausedNs != paused {
			t.Errorf("host %d: paused %d ns, the PFC log's episodes sum to %d", h, r.Hosts[h].PausedNs, paused)
		}
	}
	if r.Finished != 2 || r.Classes[losslessPriority].Dropped.Frames != 0 {
		t.Errorf("finished %d of 2, lossless drops %d", r.Finished, r.Classes[losslessPriority].Dropped.Frames)
	}
}

// TestConfigErrors: configurations the model cannot run are refused with ErrConfig.
func TestConfigErrors(t *testing.T) {
	tp := topo(2, 1, topoLink{0, 2, 100}, topoLink{1, 2, 100})
	tests := []struct {
		name string
		edit func(c *Config)
	}{
		{"unknown mode", func(c *Config) { c.Mode = "ecn" }},
		{"flow to a switch", func(c *Config) { c.Flows[0].Dst = 2 }},
		{"flow to itself", func(c *Config) { c.Flows[0].Dst = 0 }},
		{"lossy priority group", func(c *Config) { c.Flows[0].PG = 1 }},
		{"empty flow", func(c *Config) { c.Flows[0].Size = 0 }},
		{"payload too large", func(c *Config) { c.PayloadBytes = 4000 }},
		{"unknown DCQCN set", func(c *Config) { c.DCQCNSet = "fast" }},
		{"error rate", func(c *Config) {
			c.Topo = topo(2, 1, topoLink{0, 2, 100}, topoLink{1, 2, 100})
			c.Topo.Links[0].ErrorRate = 0.01
		}},
		{"slow link", func(c *Config) { c.Topo = topo(2, 1, topoLink{0, 2, 0.05}, topoLink{1, 2, 100}) }},
		{"multi-homed host", func(c *Config) { c.Topo = topo(2, 1, topoLink{0, 2, 100}, topoLink{1, 2, 100}, topoLink{0, 2, 100}) }},
		{"legacy flags", func(c *Config) { c.Legacy = []bool{true, false} }},
		{"unknown algorithm", func(c *Config) { c.Algorithm = "bbr" }},
		{"algorithm needing INT in mode fastcnp", func(c *Config) { c.Algorithm, c.Mode = "hpcc", ModeFastCNP }},
		{"INT records past the slot", func(c *Config) { c.Algorithm, c.PayloadBytes = "hpcc", maxINTPayload+1 }},
	}
	for _, tt := range tests {
		cfg := baseConfig(tp, ModeFastCNP, flow(0, 1, 1000, 0))
		tt.edit(&cfg)
		if _, err := New(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: New error %v, want ErrConfig", tt.name, err)
		}
	}
}

// TestConvergence: N equal long flows on one 100 Gb/s bottleneck converge to
// 1/N each within 5%, measured over 5..45 ms. In the fastcnp modes (window rule
// aimd) each gets 1/N of the bottleneck (payload), whether the flows start
// together or 1 ms apart; the switch windows follow each flow's share of the
// queue, so 5 ms averages still swing by about 10% and 20 ms ones by about 6%
// (docs/simulator.md). DCQCN with the HPCC simulator's parameters does not
// settle: it runs a sawtooth of about 4 ms (flows ramp up on the 300 us timer
// until the queue passes Kmin, then a burst of cuts) and keeps 85-90% of the
// link busy, so it is checked over 5..25 ms for 1/N of what the flows get
// together, and for that total.
func TestConvergence(t *testing.T) {
	if raceDetector {
		t.Skip("simulates 140 ms at 100 Gb/s (seconds, minutes under -race; the model is single-threaded): make test runs it without -race")
	}
	const n = 4
	const payload = 1000
	capacity := 100e9 * payload / float64(payload+82) // payload bits/s
	tests := []struct {
		mode    Mode
		stagger int64 // ns between the flows' starts
		to      int64
	}{
		{ModeDCQCN, 0, 25_000_000},
		{ModeFastCNP, 0, 45_000_000},
		{ModeFastCNP, 1_000_000, 45_000_000},
		{ModeFastCNPNoPFCState, 0, 45_000_000},
	}
	for _, tt := range tests {
		var ls []topoLink
		var flows []hpcc.Flow
		for i := range n {
			ls = append(ls, topoLink{i, n + 1, 100})
			flows = append(flows, flow(i, n, 1<<40, 1000+int64(i)*tt.stagger))
		}
		ls = append(ls, topoLink{n, n + 1, 100})
		const from = int64(5_000_000)
		cfg := baseConfig(topo(n+1, 1, ls...), tt.mode, flows...)
		cfg.UntilNs, cfg.RateSampleNs = tt.to, from
		cfg.PayloadBytes = payload
		r := run(t, cfg)
		at := map[int]int64{}
		for _, s := range r.RateSamples {
			if s.TimeNs == from {
				at[s.Flow] = s.Delivered
			}
		}
		rates := make([]float64, n)
		var total float64
		for i, f := range r.Flows {
			rates[i] = float64(f.Delivered-at[i]) * 8 / (float64(tt.to-from) / 1e9)
			total += rates[i]
		}
		share := capacity / n
		if tt.mode == ModeDCQCN {
			share = total / n
			if total < 0.85*capacity {
				t.Errorf("dcqcn: the flows use %.1f%% of the bottleneck, want >= 85%%", 100*total/capacity)
			}
		}
		for i, got := range rates {
			if d := got/share - 1; d < -0.05 || d > 0.05 {
				t.Errorf("%s, starts %d ns apart: flow %d at %.2f Gb/s, 1/N is %.2f (%+.1f%%)", tt.mode, tt.stagger, i, got/1e9, share/1e9, 100*d)
			}
		}
	}
}

// TestAlgorithm: Config.Algorithm replaces the mode's DCQCN variant on every
// sender and Tune sets its parameters: a TIMELY flow alone on an idle path
// finishes, and its sender ran TIMELY (its RTT samples reached it).
func TestAlgorithm(t *testing.T) {
	tp := topo(2, 1, topoLink{0, 2, 100}, topoLink{1, 2, 100})
	cfg := baseConfig(tp, ModeDCQCN, flow(0, 1, 1_000_000, 0))
	tuned := 0
	cfg.Algorithm = "timely"
	cfg.Tune = func(c *cc.Config) {
		p, _ := cc.TIMELYPreset("hpcc-sim")
		c.TIMELY = p
		tuned++
	}
	cfg.RTTSamples = true
	r := run(t, cfg)
	if tuned != 1 || len(r.Flows) != 1 || r.Flows[0].FCTNs == 0 || len(r.Flows[0].RTTs) == 0 {
		t.Fatalf("tuned %d times; flows %+v", tuned, r.Flows)
	}
	if !AlgorithmModelled("timely") || !AlgorithmModelled("lstm-pid-rttch-win") || !AlgorithmModelled("hpcc") || !AlgorithmModelled("dctcp") || AlgorithmModelled("nope") {
		t.Error("AlgorithmModelled")
	}
}

// TestAlgorithmModes: every mode runs an 8:1 incast to completion with nothing lost
// and a balanced account, and each algorithm gets its signal: DCTCP's ACKs carry
// ECN echoes of its marked packets (no CNPs; 8 windows of one BDP pass K), HPCC's
// ACKs carry the INT records its data packets collected, TIMELY and LSTM+PID run
// on RTT samples with no marking.
func TestAlgorithmModes(t *testing.T) {
	var ls []topoLink
	var flows []hpcc.Flow
	for i := range 8 {
		ls = append(ls, topoLink{i, 9, 100})
		flows = append(flows, flow(i, 8, 1_000_000, 1000))
	}
	ls = append(ls, topoLink{8, 9, 100})
	for _, mode := range AllModes() {
		cfg := baseConfig(topo(9, 1, ls...), mode, flows...)
		cfg.RTTSamples = true
		r := run(t, cfg)
		var marks, npCNPs, swCNPs, ece, intAcks uint64
		for _, f := range r.Flows {
			marks, npCNPs, swCNPs, ece, intAcks = marks+f.ECNMarks, npCNPs+f.NPCNPs, swCNPs+f.SwitchCNPs, ece+f.ECEAcks, intAcks+f.INTAcks
			if len(f.RTTs) == 0 {
				t.Errorf("%s: flow %d has no RTT sample", mode, f.ID)
			}
		}
		k := r.Classes[losslessPriority]
		if r.Finished != len(flows) || !k.Balanced() || k.Dropped.Frames != 0 {
			t.Errorf("%s: %d of %d finished, account %+v", mode, r.Finished, len(flows), k)
		}
		switch mode {
		case ModeDCTCP:
			if marks == 0 || ece == 0 || npCNPs != 0 {
				t.Errorf("dctcp: %d marks, %d ECN-echo ACKs, %d NP CNPs; want marks echoed, no CNP", marks, ece, npCNPs)
			}
		case ModeHPCC:
			if intAcks == 0 || marks != 0 {
				t.Errorf("hpcc: %d ACKs with INT, %d marks", intAcks, marks)
			}
		case ModeTIMELY, ModeLSTMPID, ModeLSTMPIDRTTch, ModeLSTMPIDRTTchWin:
			if marks != 0 || npCNPs != 0 || swCNPs != 0 || intAcks != 0 {
				t.Errorf("%s: marks %d, CNPs %d/%d, INT ACKs %d: want none", mode, marks, npCNPs, swCNPs, intAcks)
			}
		case ModeDCQCN:
			if marks == 0 || npCNPs == 0 {
				t.Errorf("dcqcn: %d marks, %d NP CNPs", marks, npCNPs)
			}
		default:
			if swCNPs == 0 {
				t.Errorf("%s: no switch CNP", mode)
			}
		}
	}
}

// The HPCC simulator's pfc_a_shift: 3 at the hosts' rate, one less per doubling.
func TestHPCCAlpha(t *testing.T) {
	for _, tc := range []struct {
		bps, host int64
		want      float64
	}{
		{100e9, 100e9, 0.125}, {25e9, 100e9, 0.125}, {200e9, 100e9, 0.25},
		{400e9, 100e9, 0.5}, {800e9, 100e9, 1}, {1600e9, 100e9, 1}, {300e9, 100e9, 0.5},
	} {
		if got := hpccAlpha(tc.bps, tc.host); got != tc.want {
			t.Errorf("hpccAlpha(%d, %d) = %v, want %v", tc.bps, tc.host, got, tc.want)
		}
	}
}

// TestLosslessDropRecorded: a sender that ignores PAUSE (copies of its data frames
// injected at the switch while the switch's egress to the receiver is paused and the
// sender itself has been sent XOFF) overruns the headroom: the lossless drops are
// counted per port and in the lossless class's account, and the first ones are
// recorded with where and when they happened and the ingress group's state.
func TestLosslessDropRecorded(t *testing.T) {
	tp := topo(2, 1, topoLink{0, 2, 100}, topoLink{1, 2, 100})
	cfg := baseConfig(tp, ModeDCQCN, flow(0, 1, 2_000_000, 1000))
	cfg.Switch.BufferBytes = 1 << 20
	cfg.UntilNs = 200_000
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	inject(t, n, 2, 1, 0xFFFF, 1000) // the switch's port to the receiver: paused 335 us
	const copies = 1000
	replayed := false
	n.onTx = func(node, port int, at int64, frame []byte) {
		if node != 0 || replayed || !isData(frame) {
			return
		}
		replayed = true
		for k := range copies { // back to back at 100 Gb/s, after the host's own frame
			i := n.pool.get(len(frame))
			copy(n.pool.buf(i), frame)
			n.pool.s(i).n, n.pool.s(i).cls = int32(len(frame)), losslessPriority
			n.acct.made(losslessPriority, len(frame))
			n.send(2, 0, i, at+2000+int64(k)*90)
		}
	}
	r, err := n.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	ps := r.Switches[0].Ports
	if ps[1].LosslessDrops == 0 {
		t.Fatalf("no lossless drop: the case does not overrun the headroom (port stats %+v)", ps)
	}
	want := min(int(ps[1].LosslessDrops), maxLosslessDrops)
	if len(r.LosslessDrops) != want {
		t.Fatalf("%d drops recorded, want %d (of %d counted)", len(r.LosslessDrops), want, ps[1].LosslessDrops)
	}
	if d := r.Classes[losslessPriority].Dropped.Frames; d != ps[1].LosslessDrops || !r.Classes[losslessPriority].Balanced() {
		t.Errorf("lossless class dropped %d frames, the port counted %d; account %+v", d, ps[1].LosslessDrops, r.Classes[losslessPriority])
	}
	for k, d := range r.LosslessDrops {
		if d.Node != 2 || d.IngressPort != 1 || d.EgressPort != 2 || d.Priority != losslessPriority || d.Upstream != 0 ||
			!d.Xoff || d.HeadroomBytes+int64(d.FrameBytes) <= d.HeadroomReserved || d.SharedBytes == 0 ||
			(k > 0 && d.AtNs < r.LosslessDrops[k-1].AtNs) {
			t.Fatalf("drop %d: %+v", k, d)
		}
	}
	t.Logf("%d lossless drops, the first %+v", ps[1].LosslessDrops, r.LosslessDrops[0])
	if d := r.LosslessDrops[0]; !d.UpstreamPaused {
		t.Errorf("first drop %+v: the sender should have been paused by then (it was sent XOFF)", d)
	}
}
