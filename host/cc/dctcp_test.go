package cc

import (
	"testing"
	"time"
)

// dctcpCustom is an easy-to-compute DCTCP set for hand-made traces: g = 1/2,
// alpha0 = 1, one MTU (1500 B) per window, paced at cwnd/T. With a 100G line
// and the default T = 8us, Winit = 100,000 B and Rate = cwnd * 1e6 bits/s.
func dctcpCustom() DCTCPParams {
	return DCTCPParams{Set: "custom", G: 0.5, InitialAlpha: 1, AI: 0, Pace: true}
}

func mustDCTCP(t testing.TB, cfg Config) *DCTCP {
	t.Helper()
	d, err := NewDCTCP(cfg)
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	return d
}

func dctcpProbe(d *DCTCP) probe {
	return func(k string) (float64, bool, bool) {
		st := d.State()
		switch k {
		case "Cwnd":
			return st.Cwnd, false, true
		case "Alpha":
			return st.Alpha, false, true
		case "CWR":
			if st.CWR {
				return 1, true, true
			}
			return 0, true, true
		case "Windows":
			return float64(st.Stats.Windows), true, true
		case "Cuts":
			return float64(st.Stats.Cuts), true, true
		case "Increases":
			return float64(st.Stats.Increases), true, true
		case "ECEAcks":
			return float64(st.Stats.ECEAcks), true, true
		}
		return 0, false, false
	}
}

// DCTCP's rules in one trace (dctcpCustom, start 50G: cwnd0 = 100000*0.5 =
// 50000 B). Windows end at the first ACK that brings the bytes acknowledged
// past the bytes sent at the window's start.
func TestDCTCPRules(t *testing.T) {
	for _, pace := range []bool{true, false} {
		name := "paced"
		if !pace {
			name = "window only"
		}
		t.Run(name, func(t *testing.T) {
			p := dctcpCustom()
			p.Pace = pace
			d := mustDCTCP(t, Config{LineRate: 100 * gbps, StartRate: 50 * gbps, DCTCP: p})
			rate := func(cwnd float64) float64 {
				if !pace {
					return 100 * gbps // window only: the line rate
				}
				return cwnd * 1e6 // cwnd*8/8us
			}
			c8 := 27250.0 * 31 / 44 // 27250*(1 - (13/22)/2) = 19198.8636...
			runAlgTrace(t, d, dctcpProbe(d), []step{
				{tick(0), map[string]float64{"Cwnd": 50_000, "Window": 50_000, "Rate": rate(50_000), "Alpha": 1, "Next": float64(NoTimer)}},
				{sendAt(0, 10_000), nil}, // sent 10000
				// acked 1000 > 0: the first boundary starts the first window
				// (no alpha update; it ends after 10000 B); no CWR: +1500.
				{ackAt(1*us, 1000, 0), map[string]float64{"Cwnd": 51_500, "Rate": rate(51_500), "Windows": 0, "Increases": 1, "Alpha": 1}},
				// ECE, not in CWR: cwnd = 51500*(1 - 1/2) = 25750; CWR until
				// the bytes sent so far (10000) are acknowledged.
				{eceAt(2*us, 1000), map[string]float64{"Cwnd": 25_750, "Window": 25_750, "Rate": rate(25_750), "CWR": 1, "Cuts": 1}},
				// ECE in CWR: no second cut in this window.
				{eceAt(3*us, 1000), map[string]float64{"Cwnd": 25_750, "Cuts": 1, "ECEAcks": 2}},
				{sendAt(4*us, 10_000), nil}, // sent 20000
				// acked 10000 is not past 10000: window and CWR go on.
				{ackAt(5*us, 7000, 0), map[string]float64{"Windows": 0, "CWR": 1}},
				// acked 11000 > 10000: the window ends with 2000 of 11000 bytes
				// marked: F = 2/11, alpha = 1/2*1 + 1/2*2/11 = 13/22; CWR ends
				// (11000 > 10000); +1500: cwnd = 27250.
				{ackAt(6*us, 1000, 0), map[string]float64{"Alpha": 13.0 / 22, "Windows": 1, "CWR": 0, "Cwnd": 27_250, "Rate": rate(27_250), "Increases": 2}},
				// ECE: cwnd = 27250*(1 - 13/44) = 27250*31/44 = 19198.86...
				{eceAt(7*us, 1000), map[string]float64{"Cwnd": c8, "Window": 19_198, "Rate": rate(c8), "Cuts": 2, "CWR": 1}},
				{sendAt(8*us, 10_000), nil}, // sent 30000
				// acked 21000 > 20000: F = 1000/10000 = 0.1, alpha = 13/44 + 1/20
				// = 19/55; CWR ends (21000 > 20000); +1500.
				{ackAt(9*us, 9000, 0), map[string]float64{"Alpha": 19.0 / 55, "Windows": 2, "CWR": 0, "Cwnd": c8 + 1500, "Rate": rate(c8 + 1500)}},
				// CNPs, sends and timers do not drive DCTCP.
				{cnpAt(10 * us), map[string]float64{"Cwnd": c8 + 1500, "Cuts": 2}},
				{tick(11 * us), map[string]float64{"Cwnd": c8 + 1500, "Next": float64(NoTimer)}},
			})
		})
	}
}

// Rule "alpha decays": windows without marks give alpha = (1-g)*alpha.
func TestDCTCPAlphaDecay(t *testing.T) {
	d := mustDCTCP(t, Config{LineRate: 100 * gbps, DCTCP: dctcpCustom()})
	steps := []step{
		{sendAt(0, 1000), nil},
		{ackAt(1*us, 1000, 0), map[string]float64{"Alpha": 1, "Windows": 0}}, // first boundary
	}
	alpha := 1.0
	for i := range 3 {
		at := time.Duration(2+2*i) * us
		alpha /= 2 // (1 - 1/2)*alpha + 1/2*0
		steps = append(steps,
			step{sendAt(at, 1000), nil},
			step{ackAt(at+us, 1000, 0), map[string]float64{"Alpha": alpha, "Windows": float64(i + 1)}})
	}
	runAlgTrace(t, d, dctcpProbe(d), steps)
}

// Rule "window bounds": cwnd stays within [MTU, Winit].
func TestDCTCPWindowBounds(t *testing.T) {
	t.Run("never above Winit", func(t *testing.T) {
		d := mustDCTCP(t, Config{LineRate: 100 * gbps, DCTCP: dctcpCustom()})
		runAlgTrace(t, d, dctcpProbe(d), []step{
			{sendAt(0, 10_000), map[string]float64{"Cwnd": 100_000, "Rate": 100 * gbps}},
			// +1500 from 100000: capped at Winit = 100000.
			{ackAt(1*us, 1000, 0), map[string]float64{"Cwnd": 100_000, "Increases": 1, "Rate": 100 * gbps}},
			// alpha 1: 100000/2.
			{eceAt(2*us, 1000), map[string]float64{"Cwnd": 50_000, "Rate": 50 * gbps}},
		})
	})
	t.Run("never below one MTU", func(t *testing.T) {
		// Winit = 3000 B (InitWindow), MTU 1500.
		d := mustDCTCP(t, Config{LineRate: 100 * gbps, InitWindow: 3000, DCTCP: dctcpCustom()})
		runAlgTrace(t, d, dctcpProbe(d), []step{
			{sendAt(0, 3000), map[string]float64{"Cwnd": 3000}},
			// first boundary, then the cut: 3000/2 = 1500; CWR until 3000.
			{eceAt(1*us, 1000), map[string]float64{"Cwnd": 1500, "Cuts": 1, "Increases": 0}},
			{eceAt(2*us, 2000), map[string]float64{"Cwnd": 1500, "Cuts": 1}},
			{sendAt(3*us, 3000), nil},
			// acked 4000 > 3000: the window ends with every byte marked
			// (F = 4000/4000, the first boundary's ACK included): alpha =
			// 1/2 + 1/2 = 1; CWR ends; cut: 1500/2 = 750 -> 1500.
			{eceAt(4*us, 1000), map[string]float64{"Alpha": 1, "Cwnd": 1500, "Window": 1500, "Cuts": 2}},
		})
	})
}

// The presets: spec03 is window only, hpcc-sim paced; g = 1/16.
func TestDCTCPPresetTraces(t *testing.T) {
	for _, name := range []string{"spec03", "hpcc-sim"} {
		t.Run(name, func(t *testing.T) {
			p, err := DCTCPPreset(name)
			if err != nil {
				t.Fatal(err)
			}
			d := mustDCTCP(t, Config{LineRate: 100 * gbps, DCTCP: p})
			rate := func(cwnd float64) float64 {
				if name == "spec03" {
					return 100 * gbps
				}
				return cwnd * 1e6
			}
			runAlgTrace(t, d, dctcpProbe(d), []step{
				{sendAt(0, 10_000), nil},
				{ackAt(1*us, 1000, 0), map[string]float64{"Cwnd": 100_000}},
				// alpha0 = 1: 100000/2 = 50000.
				{eceAt(2*us, 1000), map[string]float64{"Cwnd": 50_000, "Rate": rate(50_000)}},
				{sendAt(3*us, 10_000), nil},
				// F = 1000/11000: alpha = 15/16 + 1/16*1/11 = 15/16 + 1/176 = 166/176.
				{ackAt(4*us, 9000, 0), map[string]float64{"Alpha": 166.0 / 176, "Cwnd": 51_500, "Rate": rate(51_500)}},
			})
		})
	}
}
