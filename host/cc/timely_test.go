package cc

import (
	"testing"
	"time"
)

// timelyCustom is an easy-to-compute TIMELY set for hand-made traces:
// a = 1/2, b = 1/2, delta 1 Gb/s, N*delta 5 Gb/s after 2 samples in a row
// with gradient <= 0, Tlow 10us, Thigh 100us, minRTT 10us, minRate 1 Gb/s,
// every sample updates.
func timelyCustom() TIMELYParams {
	return TIMELYParams{
		Set: "custom", Alpha: 0.5, Beta: 0.5, AI: 1 * gbps, HAI: 5 * gbps, HAIAfter: 2,
		TLow: 10 * us, THigh: 100 * us, MinRTT: 10 * us, MinRate: 1 * gbps,
	}
}

func mustTIMELY(t testing.TB, cfg Config) *TIMELY {
	t.Helper()
	m, err := NewTIMELY(cfg)
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	return m
}

func timelyProbe(m *TIMELY) probe {
	return func(k string) (float64, bool, bool) {
		st := m.State()
		switch k {
		case "RTTDiff":
			return st.RTTDiff, false, true
		case "Gradient":
			return st.Gradient, false, true
		case "PrevRTT":
			return float64(st.PrevRTT), true, true
		case "NegRun":
			return float64(st.NegRun), true, true
		case "Samples":
			return float64(st.Stats.Samples), true, true
		case "Skipped":
			return float64(st.Stats.Skipped), true, true
		case "Low":
			return float64(st.Stats.LowIncreases), true, true
		case "High":
			return float64(st.Stats.HighDecreases), true, true
		case "AI":
			return float64(st.Stats.GradientIncreases), true, true
		case "HAI":
			return float64(st.Stats.HAIIncreases), true, true
		case "Dec":
			return float64(st.Stats.GradientDecreases), true, true
		}
		return 0, false, false
	}
}

// TIMELY's rules, one RTT sample per ACK (timelyCustom, 100G line, start
// 50G). Each step: new_rtt_diff = rtt - prev; rtt_diff = rtt_diff/2 +
// new_rtt_diff/2; gradient = rtt_diff/10us; then the branch named.
func TestTIMELYRules(t *testing.T) {
	cfg := Config{LineRate: 100 * gbps, StartRate: 50 * gbps, TIMELY: timelyCustom()}
	m := mustTIMELY(t, cfg)
	runAlgTrace(t, m, timelyProbe(m), []step{
		// First sample: prev_rtt = 20us, no update.
		{ackAt(1*us, 1000, 20*us), map[string]float64{"Rate": 50 * gbps, "PrevRTT": float64(20 * us), "RTTDiff": 0, "Samples": 1,
			"Window": float64(NoWindowCap), "Next": float64(NoTimer)}},
		// new 10000ns; rtt_diff = 0 + 5000 = 5000; g = 0.5 > 0 (10 <= 30 <= 100us):
		// rate = 50G*(1 - 0.5*0.5) = 37.5G.
		{ackAt(2*us, 1000, 30*us), map[string]float64{"RTTDiff": 5000, "Gradient": 0.5, "Rate": 37.5 * gbps, "Dec": 1, "NegRun": 0}},
		// new 0; rtt_diff = 2500; g = 0.25: 37.5G*(1 - 0.125) = 32.8125G.
		{ackAt(3*us, 1000, 30*us), map[string]float64{"RTTDiff": 2500, "Gradient": 0.25, "Rate": 32.8125 * gbps, "Dec": 2}},
		// new -5000; rtt_diff = 1250 - 2500 = -1250; g = -0.125 <= 0, run 0 < 2: +delta = 33.8125G.
		{ackAt(4*us, 1000, 25*us), map[string]float64{"RTTDiff": -1250, "Gradient": -0.125, "Rate": 33.8125 * gbps, "AI": 1, "NegRun": 1}},
		// new 0; rtt_diff = -625; g = -0.0625, run 1 < 2: +delta = 34.8125G.
		{ackAt(5*us, 1000, 25*us), map[string]float64{"RTTDiff": -625, "Rate": 34.8125 * gbps, "AI": 2, "NegRun": 2}},
		// new 0; rtt_diff = -312.5; run 2 >= 2: HAI, +5G = 39.8125G.
		{ackAt(6*us, 1000, 25*us), map[string]float64{"RTTDiff": -312.5, "Rate": 39.8125 * gbps, "HAI": 1, "AI": 2, "NegRun": 3}},
		// rtt 5us < Tlow: +delta (never HAI) = 40.8125G; new -20000,
		// rtt_diff = -156.25 - 10000 = -10156.25, g < 0: the run goes on.
		{ackAt(7*us, 1000, 5*us), map[string]float64{"RTTDiff": -10156.25, "Rate": 40.8125 * gbps, "Low": 1, "HAI": 1, "NegRun": 4}},
		// rtt 200us > Thigh: rate *= 1 - 0.5*(1 - 100/200) = 0.75: 30.609375G;
		// new 195000, rtt_diff = -5078.125 + 97500 = 92421.875, g > 0: run 0.
		{ackAt(8*us, 1000, 200*us), map[string]float64{"RTTDiff": 92421.875, "Gradient": 9.2421875, "Rate": 30.609375 * gbps, "High": 1, "NegRun": 0}},
		// rtt 100us = Thigh is not above it: new -100000, rtt_diff =
		// 46210.9375 - 50000 = -3789.0625, g < 0, run 0: +delta = 31.609375G.
		{ackAt(9*us, 1000, 100*us), map[string]float64{"RTTDiff": -3789.0625, "Rate": 31.609375 * gbps, "High": 1, "AI": 3, "NegRun": 1}},
		// rtt 10us = Tlow is not below it: new -90000, rtt_diff =
		// -1894.53125 - 45000 = -46894.53125, run 1: +delta = 32.609375G.
		{ackAt(10*us, 1000, 10*us), map[string]float64{"RTTDiff": -46894.53125, "Rate": 32.609375 * gbps, "Low": 1, "AI": 4, "NegRun": 2}},
		// new 0: rtt_diff = -23447.265625, run 2: HAI +5G = 37.609375G.
		{ackAt(11*us, 1000, 10*us), map[string]float64{"RTTDiff": -23447.265625, "Rate": 37.609375 * gbps, "HAI": 2, "NegRun": 3}},
		// new 50000: rtt_diff = -11723.6328125 + 25000 = 13276.3671875,
		// g = 1.32763671875: rate = 37.609375G*(1 - 0.663818359375)
		// = 37.609375G*0.336181640625 = 12.643581390380859375G.
		{ackAt(12*us, 1000, 60*us), map[string]float64{"Gradient": 1.32763671875, "Rate": 12.643581390380859375 * gbps, "Dec": 3, "NegRun": 0}},
		// ACKs without a sample, sends, CNPs and timers change nothing.
		{ackAt(13*us, 1000, 0), map[string]float64{"Rate": 12.643581390380859375 * gbps, "Samples": 12}},
		{sendAt(14*us, 100_000), map[string]float64{"Rate": 12.643581390380859375 * gbps}},
		{winCNP(15*us, 1000), map[string]float64{"Rate": 12.643581390380859375 * gbps, "Window": float64(NoWindowCap)}},
		{tick(16 * us), map[string]float64{"Rate": 12.643581390380859375 * gbps, "Next": float64(NoTimer)}},
	})
}

// Rule "clamp": the rate stays within [minRate, line rate].
func TestTIMELYClamp(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start float64
		steps []step
	}{
		{"1 - b*gradient < 0 gives minRate", 50 * gbps, []step{
			{ackAt(1*us, 1000, 20*us), nil},
			// new 60000; rtt_diff = 30000; g = 3: 50G*(1 - 1.5) < 0 -> 1G.
			{ackAt(2*us, 1000, 80*us), map[string]float64{"Gradient": 3, "Rate": 1 * gbps}},
			// new 0; rtt_diff = 15000; g = 1.5: 1G*0.25 -> 1G.
			{ackAt(3*us, 1000, 80*us), map[string]float64{"Rate": 1 * gbps, "Dec": 2}},
		}},
		{"line rate", 99.5 * gbps, []step{
			{ackAt(1*us, 1000, 20*us), nil},
			// rtt 5us < Tlow: 99.5G + 1G -> 100G.
			{ackAt(2*us, 1000, 5*us), map[string]float64{"Rate": 100 * gbps, "Low": 1}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mustTIMELY(t, Config{LineRate: 100 * gbps, StartRate: tc.start, TIMELY: timelyCustom()})
			runAlgTrace(t, m, timelyProbe(m), tc.steps)
		})
	}
}

// Rule "once per RTT" (PerRTT, the HPCC simulator): a sample updates the
// rate only if the bytes acknowledged exceed the bytes sent at the previous
// update; prev_rtt is the sample of that update.
func TestTIMELYPerRTT(t *testing.T) {
	p := timelyCustom()
	p.PerRTT = true
	m := mustTIMELY(t, Config{LineRate: 100 * gbps, StartRate: 50 * gbps, TIMELY: p})
	runAlgTrace(t, m, timelyProbe(m), []step{
		{sendAt(0, 10_000), nil},
		// First sample: prev_rtt = 20us; the round trip ends after 10000 B.
		{ackAt(1*us, 1000, 20*us), map[string]float64{"PrevRTT": float64(20 * us), "Rate": 50 * gbps}},
		// acked 2000 <= 10000: ignored (prev_rtt stays 20us).
		{ackAt(2*us, 1000, 40*us), map[string]float64{"PrevRTT": float64(20 * us), "Rate": 50 * gbps, "Skipped": 1}},
		{sendAt(3*us, 10_000), nil}, // sent 20000
		// acked 10000 is not above 10000: ignored.
		{ackAt(4*us, 8000, 30*us), map[string]float64{"Rate": 50 * gbps, "Skipped": 2}},
		// acked 11000 > 10000: update with new 10000: rtt_diff 5000, g 0.5:
		// 50G*0.75 = 37.5G; the next round trip ends after 20000 B.
		{ackAt(5*us, 1000, 30*us), map[string]float64{"Rate": 37.5 * gbps, "RTTDiff": 5000, "PrevRTT": float64(30 * us), "Dec": 1}},
		{sendAt(5500*time.Nanosecond, 10_000), nil}, // sent 30000
		// acked 21000 > 20000 but no sample: nothing, the boundary stays.
		{ackAt(6*us, 10_000, 0), map[string]float64{"Rate": 37.5 * gbps, "Samples": 4}},
		// the next sample: new 0, rtt_diff 2500, g 0.25: 37.5G*0.875 =
		// 32.8125G; the next round trip ends after 30000 B.
		{ackAt(7*us, 0, 30*us), map[string]float64{"Rate": 32.8125 * gbps, "RTTDiff": 2500, "Dec": 2, "Skipped": 2}},
		// acked 21000 <= 30000: ignored.
		{ackAt(8*us, 0, 90*us), map[string]float64{"Rate": 32.8125 * gbps, "PrevRTT": float64(30 * us), "Skipped": 3}},
	})
}

// The presets in a short trace each, with the values of docs/host-cc.md.
func TestTIMELYPresetTraces(t *testing.T) {
	paper, err := TIMELYPreset("paper2015")
	if err != nil {
		t.Fatal(err)
	}
	sim, err := TIMELYPreset("hpcc-sim")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("paper2015", func(t *testing.T) {
		m := mustTIMELY(t, Config{LineRate: 100 * gbps, StartRate: 50 * gbps, TIMELY: paper})
		runAlgTrace(t, m, timelyProbe(m), []step{
			{ackAt(1*us, 1000, 30*us), nil},
			// a = 0.875: rtt_diff = 0.875*10000 = 8750; g = 8750/20us = 0.4375;
			// rtt 40us < Tlow 50us: +10 Mb/s = 50.01G.
			{ackAt(2*us, 1000, 40*us), map[string]float64{"RTTDiff": 8750, "Gradient": 0.4375, "Rate": 50.01 * gbps, "Low": 1}},
			// rtt 600us > Thigh 500us: *(1 - 0.8*(1 - 500/600)) = *(1 - 0.8/6).
			{ackAt(3*us, 1000, 600*us), map[string]float64{"Rate": 50.01 * gbps * (1 - 0.8/6), "High": 1}},
			// new -500000: rtt_diff = 0.125*491093.75 - 437500 = -376113.28125
			// (491093.75 = 0.125*8750 + 0.875*560000); 50 <= 100 <= 500us,
			// g < 0, run 0: +10 Mb/s.
			{ackAt(4*us, 1000, 100*us), map[string]float64{"RTTDiff": -376113.28125, "Rate": 50.01*gbps*(1-0.8/6) + 10*mbps, "AI": 1}},
		})
	})
	t.Run("hpcc-sim", func(t *testing.T) {
		m := mustTIMELY(t, Config{LineRate: 100 * gbps, StartRate: 50 * gbps, TIMELY: sim})
		runAlgTrace(t, m, timelyProbe(m), []step{
			{sendAt(0, 10_000), nil},
			{ackAt(1*us, 1000, 30*us), nil},
			// once per RTT: within the first 10000 B, ignored.
			{ackAt(2*us, 1000, 90*us), map[string]float64{"Rate": 50 * gbps, "Skipped": 1}},
			{sendAt(3*us, 10_000), nil},
			// acked 11000 > 10000: new 0, g 0, rtt 30us < Tlow: +100 Mb/s.
			{ackAt(4*us, 9000, 30*us), map[string]float64{"Rate": 50.1 * gbps, "Low": 1}},
		})
	})
}
