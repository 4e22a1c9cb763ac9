package network

import (
	"testing"

	"github.com/fastcnp/fastcnp/host/agent"
	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/sim/hpcc"
	"github.com/fastcnp/fastcnp/wire"
)

// TestFeedbackAlgorithms: the model's ACKs carry what the host agent's carry.
// DCTCP gets the ECN echo (and cuts: its queue, hence its RTT, stays below the
// same run with a K no queue reaches); HPCC's data gathers one INT record per
// switch (port mode int, no marking), the ACKs echo them, and HPCC keeps the RTT
// lowest. 4 senders -> switch A -> switch B -> receiver, 100 Gb/s.
func TestFeedbackAlgorithms(t *testing.T) {
	const a, b = 5, 6
	tp := topo(5, 2, topoLink{0, a, 100}, topoLink{1, a, 100}, topoLink{2, a, 100}, topoLink{3, a, 100},
		topoLink{a, b, 100}, topoLink{4, b, 100})
	var flows []hpcc.Flow
	for i := range 4 {
		flows = append(flows, flow(i, 4, 2_000_000, 1000))
	}
	tests := []struct {
		name     string
		algo     string
		kBytes   int64 // DCTCP's K (RED Kmin = Kmax, Pmax 1); 0: the default RED
		ece, int bool  // ACKs with the ECN echo, with INT records
	}{
		{"dctcp K 100 KB", "dctcp", 100_000, true, false},
		{"dctcp K unreached", "dctcp", 30_000_000, false, false},
		{"hpcc", "hpcc", 0, false, true},
	}
	meanRTT := map[string]float64{}
	for _, tt := range tests {
		cfg := baseConfig(tp, ModeDCQCN, flows...)
		cfg.Algorithm, cfg.RTTSamples = tt.algo, true
		cfg.Tune = func(c *cc.Config) {
			c.DCTCP, _ = cc.DCTCPPreset("hpcc-sim")
			c.HPCC, _ = cc.HPCCPreset("hpcc-sim")
		}
		if tt.kBytes > 0 {
			cfg.Switch.KminBytes100G, cfg.Switch.KmaxBytes100G, cfg.Switch.Pmax = tt.kBytes, tt.kBytes, 1
		}
		n, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var atB, withTwo int
		var pf wire.Frame
		n.onTx = func(node, _ int, _ int64, frame []byte) {
			if node != b || wire.Parse(frame, wire.ParseOptions{}, &pf) != nil || !pf.Has(wire.LayerBTH) || pf.BTH.Opcode > wire.OpRCSendOnlyImm {
				return
			}
			atB++
			// Newest first: B's record, then A's; 100 Gb/s each.
			if pf.Has(wire.LayerINT) && pf.INT.HopCount == 2 && pf.INTHops[0].RateBps() == 100e9 && pf.INTHops[1].RateBps() == 100e9 &&
				pf.INTHops[0].TimestampNs > pf.INTHops[1].TimestampNs {
				withTwo++
			}
		}
		r, err := n.Run(nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Finished != len(flows) {
			t.Fatalf("%s: %d of %d flows finished", tt.name, r.Finished, len(flows))
		}
		for c := range NumClasses {
			if k := &r.Classes[c]; !k.Balanced() {
				t.Errorf("%s: class %d does not balance: %+v", tt.name, c, *k)
			}
		}
		if tt.int != (withTwo == atB) || atB == 0 || !tt.int && withTwo != 0 {
			t.Errorf("%s: %d of %d data frames leave B with A's and B's records", tt.name, withTwo, atB)
		}
		var sum, cnt float64
		for i, f := range n.flows {
			st := r.Flows[i]
			if (st.ECEAcks > 0) != tt.ece || (st.INTAcks > 0) != tt.int {
				t.Errorf("%s flow %d: %d ACKs with ECE, %d with INT", tt.name, f.id, st.ECEAcks, st.INTAcks)
			}
			switch alg := f.alg.(type) {
			case *cc.DCTCP:
				if s := alg.State().Stats; (s.Cuts > 0) != tt.ece || s.ECEAcks != int64(st.ECEAcks) {
					t.Errorf("%s flow %d: DCTCP %+v, sender %d ECE ACKs", tt.name, f.id, s, st.ECEAcks)
				}
			case *cc.HPCC:
				if s := alg.State().Stats; s.Updates == 0 || s.FastReacts == 0 {
					t.Errorf("%s flow %d: HPCC used no INT: %+v", tt.name, f.id, s)
				}
			default:
				t.Fatalf("%s flow %d runs %s", tt.name, f.id, f.alg.Name())
			}
			for _, s := range f.rtts {
				sum += float64(s.RTTNs)
				cnt++
			}
		}
		for _, h := range r.Hosts {
			if h.BadINT != 0 || h.Malformed != 0 {
				t.Errorf("%s: host %+v", tt.name, h)
			}
		}
		meanRTT[tt.name] = sum / cnt
	}
	h, d, u := meanRTT["hpcc"], meanRTT["dctcp K 100 KB"], meanRTT["dctcp K unreached"]
	if !(h < d && d < u) {
		t.Errorf("mean RTT ns: hpcc %.0f, dctcp K 100 KB %.0f, dctcp unmarked %.0f; want increasing", h, d, u)
	}
	t.Logf("mean RTT ns: hpcc %.0f, dctcp K 100 KB %.0f, dctcp unmarked %.0f", h, d, u)
}

// TestFeedbackConfig: HPCC needs the INT switches of mode dcqcn's program and
// room for the records.
func TestFeedbackConfig(t *testing.T) {
	tp := topo(2, 1, topoLink{0, 2, 100}, topoLink{1, 2, 100})
	tests := []struct {
		mode    Mode
		algo    string
		payload int
		ok      bool
	}{
		{ModeDCQCN, "hpcc", 1000, true},
		{ModeFastCNP, "hpcc", 1000, false},
		{ModeDCQCN, "hpcc", maxINTPayload, true},
		{ModeDCQCN, "hpcc", maxINTPayload + 1, false},
		{ModeDCQCN, "dctcp", maxINTPayload + 1, true},
		{ModeFastCNP, "dctcp", 1000, true},
		{ModeDCQCN, "nope", 1000, false},
	}
	for _, tt := range tests {
		cfg := baseConfig(tp, tt.mode, flow(0, 1, 10_000, 0))
		cfg.Algorithm, cfg.PayloadBytes = tt.algo, tt.payload
		if _, err := New(cfg); (err == nil) != tt.ok {
			t.Errorf("%s in %s, payload %d: %v", tt.algo, tt.mode, tt.payload, err)
		}
	}
}

// TestMaxFrameByMode: the switches size PFC headroom for the largest frame of
// the run: with five INT records only when the senders put an INT header on
// their data (mode hpcc, or algorithm hpcc), else the plain RoCE frame.
func TestMaxFrameByMode(t *testing.T) {
	tp := topo(2, 1, topoLink{0, 2, 100}, topoLink{1, 2, 100})
	plain := frameWireLen(agent.RoCEOverhead + 1000)
	withINT := frameWireLen(agent.RoCEOverhead + 1000 + wire.INTHeaderLen + wire.INTMaxHops*wire.INTHopLen)
	tests := []struct {
		mode Mode
		algo string
		want int
	}{
		{ModeDCQCN, "", plain},
		{ModeFastCNP, "", plain},
		{ModeDCTCP, "", plain},
		{ModeHPCC, "", withINT},
		{ModeDCQCN, "hpcc", withINT},
	}
	for _, tt := range tests {
		cfg := baseConfig(tp, tt.mode, flow(0, 1, 10_000, 0))
		cfg.Algorithm = tt.algo
		n, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := n.switches[0].tm.Config().MaxFrameBytes; got != tt.want {
			t.Errorf("%s %q: MaxFrameBytes %d, want %d", tt.mode, tt.algo, got, tt.want)
		}
	}
}
