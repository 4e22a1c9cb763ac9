package cc

import (
	"errors"
	"math"
	"testing"
	"time"
)

// hpccCustom is an easy-to-compute HPCC set for hand-made traces: eta 0.8,
// maxStage 2, AI 1 Gb/s, minRate 1 Gb/s, reference updates only.
//
// With a 100G line and the default T = 8us: Winit = 100,000 B, Rate = W * 1e6
// bits/s, W_AI = 1e9/8 * 8e-6 = 1000 B, the floor max(MTU 1500, 1000) = 1500 B.
// For a 100G hop: qlen term q*8/(B*T) = q/100,000; txRate/B = delta/100,000
// over tau = 8us and delta/50,000 over tau = 4us.
func hpccCustom() HPCCParams {
	return HPCCParams{Set: "custom", Eta: 0.8, MaxStage: 2, AI: 1 * gbps, MinRate: 1 * gbps}
}

func mustHPCC(t testing.TB, cfg Config) *HPCC {
	t.Helper()
	h, err := NewHPCC(cfg)
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	return h
}

func hpccProbe(h *HPCC) probe {
	return func(k string) (float64, bool, bool) {
		st := h.State()
		switch k {
		case "W":
			return st.W, false, true
		case "Wc":
			return st.Wc, false, true
		case "U":
			return st.U, false, true
		case "Stage":
			return float64(st.Stage), true, true
		case "Updates":
			return float64(st.Stats.Updates), true, true
		case "FastReacts":
			return float64(st.Stats.FastReacts), true, true
		case "MI":
			return float64(st.Stats.Multiplicative), true, true
		case "AI":
			return float64(st.Stats.Additive), true, true
		case "Skipped":
			return float64(st.Stats.HopsSkipped), true, true
		}
		// Per hop (MultiRate): U0, Wc0, Stage0, U1, ...
		for i := range HPCCMaxHops {
			hs := h.HopState(i)
			switch k {
			case "U" + string(rune('0'+i)):
				return hs.U, false, true
			case "Wc" + string(rune('0'+i)):
				return hs.Wc, false, true
			case "Stage" + string(rune('0'+i)):
				return float64(hs.Stage), true, true
			}
		}
		return 0, false, false
	}
}

// HPCC's reference update, once per round trip, single rate, no fast react.
func TestHPCCReferenceUpdate(t *testing.T) {
	h := mustHPCC(t, Config{LineRate: 100 * gbps, HPCC: hpccCustom()})
	runAlgTrace(t, h, hpccProbe(h), []step{
		{sendAt(0, 100_000), map[string]float64{"W": 100_000, "Window": 100_000, "Rate": 100 * gbps, "U": 1, "Next": float64(NoTimer)}},
		// First ACK: the hop is recorded, nothing else; the round trip
		// ends after the 100000 B sent.
		{intAck(1*us, 1000, hop100G(1*us, 1_000_000, 0)), map[string]float64{"W": 100_000, "Updates": 0}},
		// acked 2000 <= 100000 and no fast react: ignored (not recorded).
		{intAck(2*us, 1000, hop100G(2*us, 1_010_000, 10_000)), map[string]float64{"W": 100_000, "Updates": 0, "FastReacts": 0}},
		{sendAt(5*us, 100_000), nil},                             // sent 200000
		{intAck(9*us, 98_000), map[string]float64{"W": 100_000}}, // acked 100000: not past it
		// acked 101000 > 100000: tau = 9-1 = 8us, delta 100000: txRate/B =
		// 1; q = min(50000, 0) = 0: u = 1. dt = 8us = T: U = 1. c = 1/0.8 =
		// 1.25 >= 1: W = 100000/1.25 + 1000 = 81000 = W_c, stage 0.
		{intAck(10*us, 1000, hop100G(9*us, 1_100_000, 50_000)), map[string]float64{"U": 1, "W": 81_000, "Wc": 81_000,
			"Window": 81_000, "Rate": 81 * gbps, "Stage": 0, "Updates": 1, "MI": 1}},
		{sendAt(12*us, 100_000), nil}, // sent 300000
		// acked 201000 > 200000: tau 4us, delta 45000: 0.9; q = min(70000,
		// 50000) = 50000: 0.5; u = 1.4. U = (1*4 + 1.4*4)/8 = 1.2; c = 1.5:
		// W = 81000/1.5 + 1000 = 55000.
		{intAck(20*us, 100_000, hop100G(13*us, 1_145_000, 70_000)), map[string]float64{"U": 1.2, "W": 55_000, "Wc": 55_000, "Rate": 55 * gbps, "MI": 2}},
		{sendAt(21*us, 100_000), nil}, // sent 400000
		// tau 8us, delta 20000: 0.2; q = min(0, 70000) = 0: u = 0.2 = U
		// (dt = T). c = 0.25 < 1 and stage 0 < 2: W = 55000 + 1000, stage 1.
		{intAck(30*us, 100_000, hop100G(21*us, 1_165_000, 0)), map[string]float64{"U": 0.2, "W": 56_000, "Wc": 56_000, "Stage": 1, "AI": 1}},
		{sendAt(31*us, 100_000), nil},
		// Same load: stage 1 < 2: W = 57000, stage 2.
		{intAck(40*us, 100_000, hop100G(29*us, 1_185_000, 0)), map[string]float64{"W": 57_000, "Stage": 2, "AI": 2}},
		{sendAt(41*us, 100_000), nil},
		// stage 2 >= maxStage: W = 57000/0.25 + 1000 = 229000 -> Winit
		// 100000; stage 0.
		{intAck(50*us, 100_000, hop100G(37*us, 1_205_000, 0)), map[string]float64{"W": 100_000, "Wc": 100_000, "Rate": 100 * gbps, "Stage": 0, "MI": 3}},
		// CNPs and timers do not drive HPCC.
		{winCNP(51*us, 1500), map[string]float64{"W": 100_000}},
		{tick(52 * us), map[string]float64{"W": 100_000, "Next": float64(NoTimer)}},
	})
}

// Rule "fast react": ACKs within the round trip set W from W_c without
// changing W_c or the stage; the utilisation estimate moves on every ACK.
func TestHPCCFastReact(t *testing.T) {
	p := hpccCustom()
	p.FastReact = true
	h := mustHPCC(t, Config{LineRate: 100 * gbps, HPCC: p})
	runAlgTrace(t, h, hpccProbe(h), []step{
		{sendAt(0, 100_000), nil},
		{intAck(1*us, 1000, hop100G(1*us, 1_000_000, 0)), map[string]float64{"W": 100_000}},
		// fast: tau 8us, delta 100000: 1; q = min(150000, 0) = 0: U = 1,
		// c = 1.25: W = 100000/1.25 + 1000 = 81000; W_c stays 100000.
		{intAck(9*us, 1000, hop100G(9*us, 1_100_000, 150_000)), map[string]float64{"U": 1, "W": 81_000, "Wc": 100_000, "FastReacts": 1, "Updates": 0}},
		// fast: tau 4us, delta 35000: 0.7; q = min(200000, 150000): 1.5; u =
		// 2.2; U = (1*4 + 2.2*4)/8 = 1.6; c = 2: W = 100000/2 + 1000 = 51000.
		{intAck(13*us, 1000, hop100G(13*us, 1_135_000, 200_000)), map[string]float64{"U": 1.6, "W": 51_000, "Wc": 100_000, "FastReacts": 2}},
		// An ACK without INT (made from a NAK, say) changes nothing and keeps
		// the hop records.
		{intAck(13500*time.Nanosecond, 0), map[string]float64{"U": 1.6, "W": 51_000, "FastReacts": 2}},
		{sendAt(14*us, 100_000), nil}, // sent 200000
		// acked 101000 > 100000, reference, against the 13us record: tau 4us, delta 20000: 0.4; q =
		// 200000: 2; u = 2.4; U = (1.6*4 + 2.4*4)/8 = 2; c = 2.5: W = W_c =
		// 100000/2.5 + 1000 = 41000.
		{intAck(17*us, 98_000, hop100G(17*us, 1_155_000, 200_000)), map[string]float64{"U": 2, "W": 41_000, "Wc": 41_000, "Updates": 1}},
		// fast: tau 4us, delta 28000: 0.56; q = min(0, 200000) = 0; U =
		// (2 + 0.56)/2 = 1.28; c = 1.6: W = 41000/1.6 + 1000 = 26625.
		{intAck(21*us, 1000, hop100G(21*us, 1_183_000, 0)), map[string]float64{"U": 1.28, "W": 26_625, "Wc": 41_000, "Stage": 0}},
		// fast: tau 8us, delta 20000: u = 0.2 = U; c = 0.25, stage 0 < 2:
		// W = W_c + W_AI = 42000; the stage is not committed.
		{intAck(25*us, 1000, hop100G(29*us, 1_203_000, 0)), map[string]float64{"U": 0.2, "W": 42_000, "Wc": 41_000, "Stage": 0, "AI": 1}},
		// again: still W_c + W_AI, no accumulation within the round trip.
		{intAck(26*us, 1000, hop100G(37*us, 1_223_000, 0)), map[string]float64{"W": 42_000, "Wc": 41_000, "Stage": 0}},
		{sendAt(27*us, 100_000), nil},
		// reference (acked 201000 > 200000): the same: W = W_c = 42000, stage 1.
		{intAck(30*us, 98_000, hop100G(45*us, 1_243_000, 0)), map[string]float64{"W": 42_000, "Wc": 42_000, "Stage": 1, "Updates": 2}},
	})
}

// Rule "sample feedback": fast-react ACKs skip the hops with an empty queue
// (neither used nor recorded); reference updates use every hop.
func TestHPCCSampleFeedback(t *testing.T) {
	p := hpccCustom()
	p.FastReact, p.SampleFeedback = true, true
	h := mustHPCC(t, Config{LineRate: 100 * gbps, HPCC: p})
	runAlgTrace(t, h, hpccProbe(h), []step{
		{sendAt(0, 100_000), nil},
		{intAck(1*us, 1000, hop100G(1*us, 1_000_000, 0)), nil},
		// fast, qlen 0: skipped.
		{intAck(5*us, 1000, hop100G(5*us, 1_050_000, 0)), map[string]float64{"W": 100_000, "U": 1, "Skipped": 1, "FastReacts": 0}},
		// fast, qlen > 0: measured against the 1us record (the 5us one was
		// not kept): tau 8us, delta 100000: 1; q = min(100000, 0) = 0: U = 1,
		// c = 1.25: W = 81000.
		{intAck(9*us, 1000, hop100G(9*us, 1_100_000, 100_000)), map[string]float64{"W": 81_000, "FastReacts": 1}},
		{sendAt(10*us, 100_000), nil},
		// reference, qlen 0 is used: tau 8us, delta 80000: 0.8; q = 0: U =
		// 0.8; c = 1: W = 100000/1 + 1000 -> 100000.
		{intAck(17*us, 98_000, hop100G(17*us, 1_180_000, 0)), map[string]float64{"U": 0.8, "W": 100_000, "Wc": 100_000, "Stage": 0, "Updates": 1, "MI": 2}},
	})
}

// U is the largest hop utilisation, and the EWMA uses that hop's tau.
func TestHPCCMaxHop(t *testing.T) {
	h := mustHPCC(t, Config{LineRate: 100 * gbps, HPCC: hpccCustom()})
	runAlgTrace(t, h, hpccProbe(h), []step{
		{sendAt(0, 100_000), nil},
		{intAck(1*us, 1000, hop100G(1*us, 0, 0), hop100G(1*us, 0, 75_000)), nil},
		{sendAt(2*us, 100_000), nil},
		// hop 0: tau 8us, delta 50000: u = 0.5. hop 1: tau 4us, delta 37500:
		// 0.75; q = min(80000, 75000): 0.75; u = 1.5. U = (1*4 + 1.5*4)/8 =
		// 1.25; c = 1.5625: W = 100000/1.5625 + 1000 = 65000.
		{intAck(10*us, 100_000, hop100G(9*us, 50_000, 0), hop100G(5*us, 37_500, 80_000)), map[string]float64{"U": 1.25, "W": 65_000}},
	})
}

// TxBytes wraps modulo 2^64; a record whose timestamp does not move forward
// is kept as the new reference and not used.
func TestHPCCCounterWrapAndStaleTimestamp(t *testing.T) {
	// Start at 50G: W = W_c = 50000.
	h := mustHPCC(t, Config{LineRate: 100 * gbps, StartRate: 50 * gbps, HPCC: hpccCustom()})
	runAlgTrace(t, h, hpccProbe(h), []step{
		{sendAt(0, 100_000), map[string]float64{"W": 50_000, "Rate": 50 * gbps}},
		{intAck(1*us, 1000, hop100G(1*us, math.MaxUint64-29_999, 0)), nil},
		{sendAt(2*us, 100_000), nil},
		// delta = 50000 - (2^64 - 30000) mod 2^64 = 80000 over 8us: u = 0.8;
		// c = 1: W = 50000/1 + 1000 = 51000.
		{intAck(10*us, 100_000, hop100G(9*us, 50_000, 0)), map[string]float64{"U": 0.8, "W": 51_000, "Updates": 1}},
		{sendAt(11*us, 100_000), nil},
		// same timestamp: tau 0, not used (kept); no update.
		{intAck(20*us, 100_000, hop100G(9*us, 60_000, 0)), map[string]float64{"W": 51_000, "Updates": 1, "Skipped": 1}},
		{sendAt(21*us, 100_000), nil},
		// against the 9us/60000 record: tau 8us, delta 40000: U = 0.4; c =
		// 0.5, stage 0: W = 51000 + 1000, stage 1.
		{intAck(30*us, 100_000, hop100G(17*us, 100_000, 0)), map[string]float64{"U": 0.4, "W": 52_000, "Stage": 1, "Updates": 2}},
	})
}

// Rule "multi rate": per-hop utilisation, reference window and stage; W is
// the smallest hop window.
func TestHPCCMultiRate(t *testing.T) {
	p := hpccCustom()
	p.MultiRate = true
	h := mustHPCC(t, Config{LineRate: 100 * gbps, HPCC: p})
	runAlgTrace(t, h, hpccProbe(h), []step{
		{sendAt(0, 100_000), map[string]float64{"U0": 1, "Wc0": 100_000, "U1": 1, "Wc1": 100_000}},
		{intAck(1*us, 1000, hop100G(1*us, 0, 0), hop100G(1*us, 0, 0)), nil},
		{sendAt(2*us, 100_000), nil},
		// hop 0: tau 8us, delta 80000: u0 = 0.8, c = 1: 100000/1 + 1000 ->
		// 100000, stage 0. hop 1: delta 100000: 1; q = min(100000, 0) = 0;
		// u1 = 1, c = 1.25: 100000/1.25 + 1000 = 81000. W = 81000.
		{intAck(9*us, 101_000, hop100G(9*us, 80_000, 0), hop100G(9*us, 100_000, 100_000)), map[string]float64{
			"U0": 0.8, "Wc0": 100_000, "Stage0": 0, "U1": 1, "Wc1": 81_000, "Stage1": 0, "W": 81_000, "Rate": 81 * gbps}},
		{sendAt(10*us, 100_000), nil},
		// hop 0: tau 8us, delta 40000: u0 = 0.4, c = 0.5, stage 0 < 2:
		// 100000 + 1000 -> 100000, stage 1. hop 1: tau 4us, delta 50000: 1;
		// q = min(100000, 100000): 1; u = 2; u1 = (1*4 + 2*4)/8 = 1.5, c =
		// 1.875: 81000/1.875 + 1000 = 44200. W = 44200.
		{intAck(17*us, 100_000, hop100G(17*us, 120_000, 0), hop100G(13*us, 150_000, 100_000)), map[string]float64{
			"U0": 0.4, "Wc0": 100_000, "Stage0": 1, "U1": 1.5, "Wc1": 44_200, "Stage1": 0, "W": 44_200, "Rate": 44.2 * gbps}},
		{sendAt(18*us, 100_000), nil},
		// hop 0: tau 8us, delta 80000: u0 = 0.8, c = 1: 100000/1 + 1000 ->
		// 100000, stage 0. hop 1: same timestamp, not measured: its W_c,1 =
		// 44200 counts. W = min(100000, 44200).
		{intAck(25*us, 100_000, hop100G(25*us, 200_000, 0), hop100G(13*us, 160_000, 100_000)), map[string]float64{
			"U0": 0.8, "Stage0": 0, "Wc1": 44_200, "U1": 1.5, "W": 44_200, "Skipped": 1}},
		{sendAt(26*us, 100_000), nil},
		// The path is one hop now: hop 0: tau 8us, delta 80000: u0 = 0.8,
		// c = 1: 100000 + 1000 -> 100000; hop 1 is not on the path.
		{intAck(33*us, 100_000, hop100G(33*us, 280_000, 0)), map[string]float64{"U0": 0.8, "Stage0": 0, "W": 100_000}},
	})
}

// The hpcc-sim preset in a short trace: eta 0.95, W_AI = 40e6/8*8e-6 = 40 B.
func TestHPCCPresetTrace(t *testing.T) {
	p, err := HPCCPreset("hpcc-sim")
	if err != nil {
		t.Fatal(err)
	}
	h := mustHPCC(t, Config{LineRate: 100 * gbps, HPCC: p})
	runAlgTrace(t, h, hpccProbe(h), []step{
		{sendAt(0, 100_000), nil},
		{intAck(1*us, 1000, hop100G(1*us, 0, 0)), nil},
		// fast react: tau 8us, delta 95000: U = 0.95; c = 1: W = 100000/1 +
		// 40 -> 100000.
		{intAck(9*us, 1000, hop100G(9*us, 95_000, 0)), map[string]float64{"U": 0.95, "W": 100_000, "FastReacts": 1, "MI": 1}},
		// fast react: tau 8us, delta 100000, q = min(190000, 0) = 0: U = 1;
		// c = 1/0.95: W = 100000*0.95 + 40 = 95040.
		{intAck(10*us, 1000, hop100G(17*us, 195_000, 190_000)), map[string]float64{"U": 1, "W": 95_040, "Wc": 100_000}},
	})
}

// An ACK with more INT records than HPCCMaxHops is a bad event.
func TestHPCCTooManyHops(t *testing.T) {
	h := mustHPCC(t, Config{LineRate: 100 * gbps, HPCC: hpccCustom()})
	hops := make([]INTHop, HPCCMaxHops+1)
	for i := range hops {
		hops[i] = hop100G(us, 0, 0)
	}
	before := *h
	if err := h.OnAck(intAck(us, 1000, hops...)); !errors.Is(err, ErrBadEvent) {
		t.Fatalf("err = %v, want ErrBadEvent", err)
	}
	if *h != before {
		t.Errorf("a rejected ACK changed the state")
	}
	if err := h.OnAck(intAck(us, 1000, hops[:HPCCMaxHops]...)); err != nil {
		t.Fatalf("%d hops: %v", HPCCMaxHops, err)
	}
}
