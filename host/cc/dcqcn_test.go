package cc

import (
	"math"
	"testing"
	"time"
)

// Rule "cut": RT = RC; RC = RC*(1 - alpha/2); alpha = (1-g)*alpha + g;
// T = BC = 0; timers restart at the CNP.
func TestCut(t *testing.T) {
	half := customParams()
	half.InitialAlpha = 0.5
	withBytes := half
	withBytes.RPGByteReset = 1_000_000
	// alpha after the first cut of the third case, decayed over 15 alpha
	// periods (0..150us): a15 = 0.53125 * (15/16)^15 ~= 0.201772.
	a15 := 0.53125 * math.Pow(15.0/16, 15)
	rc2 := 93.75 * gbps * (1 - a15/2) // ~= 84.2919 Gb/s

	tests := []struct {
		name  string
		cfg   Config
		steps []step
	}{
		{"alpha 1 halves the rate", cfgWith(customParams()), []step{
			// RT = 100G; RC = 100G*(1-1/2) = 50G; alpha = 15/16*1 + 1/16 = 1.
			{cnpAt(10 * us), map[string]float64{"RC": 50 * gbps, "RT": 100 * gbps, "Alpha": 1,
				"T": 0, "BC": 0, "Next": float64(110 * us), "Cuts": 1}},
		}},
		{"alpha 0.5 from 80G", Config{LineRate: 100 * gbps, StartRate: 80 * gbps, DCQCN: half}, []step{
			// RT = 80G; RC = 80G*(1-0.25) = 60G; alpha = 15/16*0.5 + 1/16 = 0.53125.
			{cnpAt(0), map[string]float64{"RC": 60 * gbps, "RT": 80 * gbps, "Alpha": 0.53125, "Next": float64(100 * us)}},
		}},
		{"second cut uses the decayed alpha and resets T, BC and the byte count", cfgWith(withBytes), []step{
			// RC = 100G*(1-0.25) = 75G, RT = 100G, alpha = 0.53125.
			{cnpAt(0), map[string]float64{"RC": 75 * gbps, "RT": 100 * gbps, "Alpha": 0.53125}},
			// 1 MB sent: BC = 1 < F -> fast recovery RC = (100+75)/2 = 87.5G.
			{sendAt(50*us, 1_000_000), map[string]float64{"RC": 87.5 * gbps, "BC": 1, "T": 0}},
			// timer: T = 1 -> RC = (100+87.5)/2 = 93.75G.
			{tick(100 * us), map[string]float64{"RC": 93.75 * gbps, "T": 1, "BC": 1}},
			// 400 kB counted towards the next BC event, none yet.
			{sendAt(120*us, 400_000), map[string]float64{"BC": 1}},
			// cut: RT = 93.75G; RC = 93.75G*(1 - a15/2); alpha = 15/16*a15 + 1/16.
			{cnpAt(150 * us), map[string]float64{"RT": 93.75 * gbps, "RC": rc2,
				"Alpha": 15.0/16*a15 + 1.0/16, "T": 0, "BC": 0, "Next": float64(250 * us), "Cuts": 2}},
			// 600 kB: 400k + 600k would make 1 MB, but the cut reset the count.
			{sendAt(160*us, 600_000), map[string]float64{"BC": 0, "RC": rc2}},
			// T = 1 at 150+100us: fast recovery RC = (93.75G + rc2)/2.
			{tick(250 * us), map[string]float64{"T": 1, "RC": (93.75*gbps + rc2) / 2}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runTrace(t, mustDCQCN(t, false, tc.cfg), tc.steps)
		})
	}
}

// KeepTarget (the HPCC simulator's CLAMP_TARGET_RATE 0): cuts with no
// increase event since the previous cut leave RT; after one, RT = RC again.
func TestKeepTarget(t *testing.T) {
	keep := customParams()
	keep.KeepTarget = true
	keepBytes := keep
	keepBytes.RPGByteReset = 1_000_000
	tests := []struct {
		name  string
		p     DCQCNParams
		steps []step
	}{
		{"cuts in a row keep the line rate as target", keep, []step{
			{cnpAt(10 * us), map[string]float64{"RC": 50 * gbps, "RT": 100 * gbps, "Cuts": 1}},
			// alpha = 1 still: RC = 25G, RT stays 100G (the paper: 50G).
			{cnpAt(10 * us), map[string]float64{"RC": 25 * gbps, "RT": 100 * gbps, "Cuts": 2}},
			// timer at 110us: fast recovery towards 100G: (100+25)/2.
			{tick(110 * us), map[string]float64{"T": 1, "RC": 62.5 * gbps, "RT": 100 * gbps}},
			// an increase came since the last cut: RT = RC = 62.5G.
			{cnpAt(110 * us), map[string]float64{"RT": 62.5 * gbps, "T": 0, "Cuts": 3}},
		}},
		{"a byte-counter event counts as an increase", keepBytes, []step{
			{cnpAt(0), map[string]float64{"RC": 50 * gbps, "RT": 100 * gbps}},
			{sendAt(1*us, 1_000_000), map[string]float64{"BC": 1, "RC": 75 * gbps}},
			{cnpAt(2 * us), map[string]float64{"RT": 75 * gbps, "RC": 37.5 * gbps}},
		}},
		{"without it every cut sets RT = RC", customParams(), []step{
			{cnpAt(10 * us), map[string]float64{"RC": 50 * gbps, "RT": 100 * gbps}},
			{cnpAt(10 * us), map[string]float64{"RC": 25 * gbps, "RT": 50 * gbps}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runTrace(t, mustDCQCN(t, false, cfgWith(tc.p)), tc.steps)
		})
	}
}

// Rule "alpha decay": alpha = (1-g)*alpha every alphaPeriod without a cut,
// counted from the last cut; g = 1/16, alphaPeriod = 10us.
func TestAlphaDecay(t *testing.T) {
	const t0 = 1000 * us
	tests := []struct {
		name  string
		steps []step
	}{
		{"decay per period, re-anchored by a cut", []step{
			// No decay before the first CNP: the RP is idle.
			{tick(t0), map[string]float64{"Alpha": 1, "Next": float64(NoTimer)}},
			// alpha = 15/16*1 + 1/16 = 1; RC = 50G.
			{cnpAt(t0), map[string]float64{"Alpha": 1, "RC": 50 * gbps}},
			{tick(t0 + 10*us - 1), map[string]float64{"Alpha": 1}},
			// one period: 15/16 = 0.9375
			{tick(t0 + 10*us), map[string]float64{"Alpha": 0.9375}},
			// two more periods in one call: 0.9375^3 = 0.823974609375
			{tick(t0 + 30*us), map[string]float64{"Alpha": 0.823974609375}},
			// cut at 35us: RC = 50G*(1 - 0.823974609375/2) = 29.400634765625G;
			// alpha = 0.9375*0.823974609375 + 0.0625 = 0.8349761962890625.
			{cnpAt(t0 + 35*us), map[string]float64{"RT": 50 * gbps, "RC": 29.400634765625 * gbps, "Alpha": 0.8349761962890625}},
			// next decay 10us after the cut, not at t0+40us.
			{tick(t0 + 40*us), map[string]float64{"Alpha": 0.8349761962890625}},
			{tick(t0 + 45*us - 1), map[string]float64{"Alpha": 0.8349761962890625}},
			// 0.8349761962890625 * 0.9375 = 0.78279018402099609375
			{tick(t0 + 45*us), map[string]float64{"Alpha": 0.78279018402099609375}},
		}},
		{"any event advances the decay", []step{
			{cnpAt(0), map[string]float64{"Alpha": 1}},
			// 20us = 2 periods: 0.9375^2 = 0.87890625
			{Ack{Now: 20 * us, Bytes: 1000, RTT: 9 * us}, map[string]float64{"Alpha": 0.87890625}},
			// 30us: 0.9375^3 = 0.823974609375
			{sendAt(30*us, 1000), map[string]float64{"Alpha": 0.823974609375}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runTrace(t, mustDCQCN(t, false, cfgWith(customParams())), tc.steps)
		})
	}
}

// Rule "fast recovery": max(T,BC) < F -> RC = (RT+RC)/2, RT unchanged.
// Start 40G, alpha 1: the cut gives RC = 20G, RT = 40G; F = 5.
func TestFastRecovery(t *testing.T) {
	bytes := customParams()
	bytes.RPGByteReset = 1_000_000
	tests := []struct {
		name  string
		p     DCQCNParams
		steps []step
	}{
		{"timer events", customParams(), []step{
			{cnpAt(0), map[string]float64{"RC": 20 * gbps, "RT": 40 * gbps, "Next": float64(100 * us)}},
			{tick(100 * us), map[string]float64{"T": 1, "RC": 30 * gbps, "RT": 40 * gbps, "FastRecovery": 1, "Next": float64(200 * us)}}, // (40+20)/2
			{tick(200 * us), map[string]float64{"T": 2, "RC": 35 * gbps, "RT": 40 * gbps}},                                               // (40+30)/2
			{tick(300 * us), map[string]float64{"T": 3, "RC": 37.5 * gbps}},                                                              // (40+35)/2
			{tick(400 * us), map[string]float64{"T": 4, "RC": 38.75 * gbps, "RT": 40 * gbps, "FastRecovery": 4, "Additive": 0}},          // (40+37.5)/2
		}},
		{"byte counter events", bytes, []step{
			{cnpAt(0), map[string]float64{"RC": 20 * gbps}},
			{sendAt(10*us, 1_000_000), map[string]float64{"BC": 1, "RC": 30 * gbps}},
			// 2 MB at once: two events, 35G then 37.5G.
			{sendAt(20*us, 2_000_000), map[string]float64{"BC": 3, "RC": 37.5 * gbps}},
			// T = 1, BC = 3: max = 3 < 5 -> (40+37.5)/2 = 38.75G.
			{tick(100 * us), map[string]float64{"T": 1, "BC": 3, "RC": 38.75 * gbps, "RT": 40 * gbps, "FastRecovery": 4}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{LineRate: 100 * gbps, StartRate: 40 * gbps, DCQCN: tc.p}
			runTrace(t, mustDCQCN(t, false, cfg), tc.steps)
		})
	}
}

// Rule "additive increase": max(T,BC) >= F and min(T,BC) <= F ->
// RT += R_AI; RC = (RT+RC)/2.
func TestAdditiveIncrease(t *testing.T) {
	f1 := customParams()
	f1.F = 1
	f1.RPGByteReset = 1000
	// A byte counter that never fires in the trace: BC exists and stays 0,
	// so min(T,BC) = 0 keeps every timer event at or after F additive.
	bc0 := customParams()
	bc0.RPGByteReset = 1 << 40
	tests := []struct {
		name  string
		p     DCQCNParams
		steps []step
	}{
		{"after F timer events, byte counter at 0", bc0, []step{
			{cnpAt(0), nil},
			{tick(400 * us), map[string]float64{"T": 4, "RC": 38.75 * gbps}}, // 4 fast recovery events, see TestFastRecovery
			// T = 5: RT = 40G + 40M = 40.04G; RC = (40.04+38.75)/2 = 39.395G.
			{tick(500 * us), map[string]float64{"T": 5, "RT": 40.04 * gbps, "RC": 39.395 * gbps, "Additive": 1}},
			// T = 6: RT = 40.08G; RC = (40.08+39.395)/2 = 39.7375G.
			{tick(600 * us), map[string]float64{"T": 6, "RT": 40.08 * gbps, "RC": 39.7375 * gbps, "Additive": 2}},
		}},
		{"min(T,BC) = F is additive, F = 1", f1, []step{
			{cnpAt(0), map[string]float64{"RC": 20 * gbps, "RT": 40 * gbps}},
			// BC = 1, T = 0: max = 1 is not < 1 -> additive: RT = 40.04G, RC = (40.04+20)/2 = 30.02G.
			{sendAt(10*us, 1000), map[string]float64{"BC": 1, "RT": 40.04 * gbps, "RC": 30.02 * gbps}},
			// T = 1, BC = 1: min = 1 = F, not > F -> additive: RT = 40.08G, RC = (40.08+30.02)/2 = 35.05G.
			{tick(100 * us), map[string]float64{"T": 1, "RT": 40.08 * gbps, "RC": 35.05 * gbps, "Additive": 2, "Hyper": 0, "FastRecovery": 0}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{LineRate: 100 * gbps, StartRate: 40 * gbps, DCQCN: tc.p}
			runTrace(t, mustDCQCN(t, false, cfg), tc.steps)
		})
	}
}

// Rule "hyper increase": min(T,BC) > F -> RT += i*R_HAI with
// i = min(T,BC) - F + 1; RC = (RT+RC)/2.
func TestHyperIncrease(t *testing.T) {
	f1 := customParams()
	f1.F, f1.RPGByteReset, f1.AI, f1.HAI = 1, 1000, 100*mbps, 1*gbps
	f5 := customParams()
	f5.RPGByteReset = 1000
	tests := []struct {
		name  string
		p     DCQCNParams
		steps []step
	}{
		{"F = 1, timer and byte counter interleaved", f1, []step{
			{cnpAt(0), map[string]float64{"RC": 20 * gbps, "RT": 40 * gbps}},
			// T0 BC1: additive: RT = 40.1G, RC = (40.1+20)/2 = 30.05G
			{sendAt(10*us, 1000), map[string]float64{"RT": 40.1 * gbps, "RC": 30.05 * gbps}},
			// T1 BC1: min = F: additive: RT = 40.2G, RC = (40.2+30.05)/2 = 35.125G
			{tick(100 * us), map[string]float64{"RT": 40.2 * gbps, "RC": 35.125 * gbps}},
			// T1 BC2: min = 1: additive: RT = 40.3G, RC = (40.3+35.125)/2 = 37.7125G
			{sendAt(110*us, 1000), map[string]float64{"RT": 40.3 * gbps, "RC": 37.7125 * gbps, "Hyper": 0}},
			// T2 BC2: i = 2-1+1 = 2: RT = 40.3+2 = 42.3G, RC = (42.3+37.7125)/2 = 40.00625G
			{tick(200 * us), map[string]float64{"T": 2, "BC": 2, "RT": 42.3 * gbps, "RC": 40.00625 * gbps, "Hyper": 1}},
			// T2 BC3: i = 2: RT = 44.3G, RC = (44.3+40.00625)/2 = 42.153125G
			{sendAt(210*us, 1000), map[string]float64{"RT": 44.3 * gbps, "RC": 42.153125 * gbps, "Hyper": 2}},
			// T3 BC3: i = 3: RT = 47.3G, RC = (47.3+42.153125)/2 = 44.7265625G
			{tick(300 * us), map[string]float64{"RT": 47.3 * gbps, "RC": 44.7265625 * gbps, "Hyper": 3}},
		}},
		{"F = 5: i = min(T,BC) - 4 as in seed 001", f5, []step{
			{cnpAt(0), map[string]float64{"RT": 40 * gbps}},
			// BC 1..6 with T = 0: BC1-4 fast recovery, BC5-6 additive (min = 0).
			{sendAt(10*us, 6000), map[string]float64{"BC": 6, "FastRecovery": 4, "Additive": 2, "RT": 40.08 * gbps}},
			// T 1..5: min(T,6) = T <= 5: five additive: RT = 40G + 7*40M = 40.28G.
			{tick(500 * us), map[string]float64{"T": 5, "Additive": 7, "Hyper": 0, "RT": 40.28 * gbps}},
			// T = 6: min = 6 > 5, i = 6-5+1 = 2: RT = 40.28G + 2*200M = 40.68G.
			{tick(600 * us), map[string]float64{"T": 6, "Hyper": 1, "RT": 40.68 * gbps}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{LineRate: 100 * gbps, StartRate: 40 * gbps, DCQCN: tc.p}
			runTrace(t, mustDCQCN(t, false, cfg), tc.steps)
		})
	}
}

// Without a byte counter (rpgByteReset = 0, the hpcc-sim preset) BC is
// absent and the stage is decided by T alone: additive at T = F, hyper
// from T = F+1 with i = T-F+1. The same timer events with a byte counter
// that never fired (nvidia-cx, BC = 0) stay additive: min(T,BC) = 0.
func TestNoByteCounterStages(t *testing.T) {
	preset := func(name string) DCQCNParams {
		p, err := DCQCNPreset(name)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name  string
		p     DCQCNParams
		steps []step
	}{
		// hpcc-sim: F = 1, R_AI 20 Mb/s, R_HAI 200 Mb/s, rpgTimeReset 300us.
		{"hpcc-sim: AI then HAI on T alone", preset("hpcc-sim"), []step{
			// alpha 1: RT = 40G, RC = 20G; timer at 300us.
			{cnpAt(0), map[string]float64{"RC": 20 * gbps, "RT": 40 * gbps, "Next": float64(300 * us)}},
			// T = 1 = F: additive: RT = 40.02G, RC = (40.02+20)/2 = 30.01G.
			{tick(300 * us), map[string]float64{"T": 1, "BC": 0, "RT": 40.02 * gbps, "RC": 30.01 * gbps,
				"Additive": 1, "Hyper": 0, "FastRecovery": 0}},
			// T = 2 > F: hyper, i = 2-1+1 = 2: RT = 40.02G + 0.4G = 40.42G,
			// RC = (40.42+30.01)/2 = 35.215G.
			{tick(600 * us), map[string]float64{"T": 2, "BC": 0, "RT": 40.42 * gbps, "RC": 35.215 * gbps,
				"Additive": 1, "Hyper": 1}},
			// T = 3: i = 3: RT = 40.42G + 0.6G = 41.02G, RC = (41.02+35.215)/2 = 38.1175G.
			{tick(900 * us), map[string]float64{"T": 3, "RT": 41.02 * gbps, "RC": 38.1175 * gbps, "Hyper": 2}},
			// Sends do not count: no byte counter, no event.
			{sendAt(950*us, 10_000_000), map[string]float64{"BC": 0, "RC": 38.1175 * gbps, "Hyper": 2}},
			// A cut resets T: RT = 38.1175G, and the next event is additive again.
			{cnpAt(1000 * us), map[string]float64{"T": 0, "RT": 38.1175 * gbps, "Cuts": 2}},
		}},
		// nvidia-cx: F = 1, R_AI 5 Mb/s, byte counter 32767 B that never fires here.
		{"nvidia-cx: BC = 0 keeps the timer events additive", preset("nvidia-cx"), []step{
			{cnpAt(0), map[string]float64{"RC": 20 * gbps, "RT": 40 * gbps, "Next": float64(300 * us)}},
			// T = 1: RT = 40.005G, RC = (40.005+20)/2 = 30.0025G.
			{tick(300 * us), map[string]float64{"T": 1, "RT": 40.005 * gbps, "RC": 30.0025 * gbps, "Additive": 1}},
			// T = 2, BC = 0: min = 0 <= F: additive: RT = 40.01G, RC = (40.01+30.0025)/2 = 35.00625G.
			{tick(600 * us), map[string]float64{"T": 2, "RT": 40.01 * gbps, "RC": 35.00625 * gbps, "Additive": 2, "Hyper": 0}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{LineRate: 100 * gbps, StartRate: 40 * gbps, DCQCN: tc.p}
			runTrace(t, mustDCQCN(t, false, cfg), tc.steps)
		})
	}
}

// Rule "min rate clamp": RC never drops below minRate.
func TestMinRateClamp(t *testing.T) {
	p := customParams()
	p.MinRate = 30 * gbps
	hpcc, err := DCQCNPreset("hpcc-sim")
	if err != nil {
		t.Fatal(err)
	}
	// alpha after 4 periods of hpcc-sim (g = 1/256, alphaPeriod 1us): (255/256)^4 ~= 0.98447.
	a4 := math.Pow(255.0/256, 4)
	tests := []struct {
		name  string
		cfg   Config
		steps []step
	}{
		{"custom minRate 30G", Config{LineRate: 100 * gbps, StartRate: 40 * gbps, DCQCN: p}, []step{
			// 40G*(1-1/2) = 20G < 30G -> 30G
			{cnpAt(0), map[string]float64{"RC": 30 * gbps, "RT": 40 * gbps}},
			// 30G*(1-1/2) = 15G -> 30G; RT = 30G
			{cnpAt(1 * us), map[string]float64{"RC": 30 * gbps, "RT": 30 * gbps, "Cuts": 2}},
		}},
		{"hpcc-sim minRate 1G at 2G line", Config{LineRate: 2 * gbps, DCQCN: hpcc}, []step{
			// 2G*(1-1/2) = 1G, exactly minRate
			{cnpAt(0), map[string]float64{"RC": 1 * gbps}},
			// 1G*(1 - a4/2) ~= 0.508G -> 1G; (4us: rateReducePeriod allows it)
			{cnpAt(4 * us), map[string]float64{"RC": 1 * gbps, "RT": 1 * gbps, "Cuts": 2, "Alpha": 255.0/256*a4 + 1.0/256}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runTrace(t, mustDCQCN(t, false, tc.cfg), tc.steps)
		})
	}
}

// Rule "line-rate clamp": RT and RC never exceed the line rate; once both
// are there, the increase timer stops.
func TestLineRateClamp(t *testing.T) {
	p := customParams()
	p.InitialAlpha, p.F, p.AI, p.HAI, p.RPGByteReset = 0.002, 0, 1*gbps, 50*gbps, 1000
	steps := []step{
		// RC = 100G*(1-0.001) = 99.9G; RT = 100G
		{cnpAt(0), map[string]float64{"RC": 99.9 * gbps, "RT": 100 * gbps}},
		// F = 0, T1 BC0: additive: RT = min(101G, 100G) = 100G; RC = (100+99.9)/2 = 99.95G
		{tick(100 * us), map[string]float64{"RT": 100 * gbps, "RC": 99.95 * gbps, "Additive": 1}},
		// T1 BC1: hyper i = 1-0+1 = 2: RT = min(200G, 100G); RC = (100+99.95)/2 = 99.975G
		{sendAt(110*us, 1000), map[string]float64{"RT": 100 * gbps, "RC": 99.975 * gbps, "Hyper": 1}},
		// many events later: RC has converged to 100G (within float rounding)
		// and the timer stopped.
		{tick(1 * time.Second), map[string]float64{"RT": 100 * gbps, "RC": 100 * gbps, "Next": float64(NoTimer)}},
		// a send after recovery changes nothing
		{sendAt(2*time.Second, 10_000), map[string]float64{"RC": 100 * gbps, "Next": float64(NoTimer)}},
	}
	d := mustDCQCN(t, false, cfgWith(p))
	runTrace(t, d, steps)
	if d.Rate() > 100*gbps {
		t.Errorf("RC = %v exceeds line rate", d.Rate())
	}
	// a new CNP restarts the RP: RT = RC, timer armed 100us later.
	if err := d.OnCNP(cnpAt(3 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if got, want := d.NextTimer(), 3*time.Second+100*us; got != want {
		t.Errorf("NextTimer after a new CNP = %v, want %v", got, want)
	}
}

// Rule "rate-reduce period": at most one cut per rateReducePeriod; a CNP
// inside the period changes no DCQCN state.
func TestRateReducePeriod(t *testing.T) {
	rrp := customParams()
	rrp.RateReducePeriod = 4 * us
	rrpHalf := rrp
	rrpHalf.InitialAlpha = 0.5
	rrpBytes := rrp
	rrpBytes.RPGByteReset = 1000
	tests := []struct {
		name  string
		p     DCQCNParams
		steps []step
	}{
		{"second CNP suppressed, third at the period boundary applied", rrp, []step{
			{cnpAt(10 * us), map[string]float64{"RC": 50 * gbps, "RT": 100 * gbps, "Next": float64(110 * us), "Cuts": 1}},
			{cnpAt(12 * us), map[string]float64{"RC": 50 * gbps, "RT": 100 * gbps, "Next": float64(110 * us), "Cuts": 1, "Suppressed": 1}},
			// 14us - 10us = 4us = rateReducePeriod: allowed. RT = 50G, RC = 25G.
			{cnpAt(14 * us), map[string]float64{"RC": 25 * gbps, "RT": 50 * gbps, "Next": float64(114 * us), "Cuts": 2}},
		}},
		{"suppressed CNP does not raise alpha", rrpHalf, []step{
			// RC = 75G, alpha = 0.53125
			{cnpAt(10 * us), map[string]float64{"RC": 75 * gbps, "Alpha": 0.53125}},
			{cnpAt(12 * us), map[string]float64{"RC": 75 * gbps, "Alpha": 0.53125}},
			{cnpAt(14*us - 1), map[string]float64{"RC": 75 * gbps, "Alpha": 0.53125, "Suppressed": 2}},
			// RT = 75G; RC = 75G*(1-0.265625) = 55.078125G;
			// alpha = 0.9375*0.53125 + 0.0625 = 0.560546875
			{cnpAt(14 * us), map[string]float64{"RT": 75 * gbps, "RC": 55.078125 * gbps, "Alpha": 0.560546875}},
		}},
		{"suppressed CNP does not reset T and BC", rrpBytes, []step{
			{cnpAt(0), map[string]float64{"RC": 50 * gbps}},
			// BC = 1 < 5: RC = (100+50)/2 = 75G
			{sendAt(1*us, 1000), map[string]float64{"BC": 1, "RC": 75 * gbps}},
			{cnpAt(2 * us), map[string]float64{"BC": 1, "RC": 75 * gbps, "Next": float64(100 * us), "Suppressed": 1}},
		}},
		{"period 0: every CNP cuts", customParams(), []step{
			{cnpAt(10 * us), map[string]float64{"RC": 50 * gbps}},
			{cnpAt(10 * us), map[string]float64{"RC": 25 * gbps, "RT": 50 * gbps, "Cuts": 2, "Suppressed": 0}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runTrace(t, mustDCQCN(t, false, cfgWith(tc.p)), tc.steps)
		})
	}
}

// Rule "dormant RP": before the first CNP nothing changes the rate.
func TestIdleBeforeFirstCNP(t *testing.T) {
	p := customParams()
	p.RPGByteReset = 1000
	d := mustDCQCN(t, false, Config{LineRate: 100 * gbps, StartRate: 40 * gbps, DCQCN: p})
	runTrace(t, d, []step{
		{tick(0), map[string]float64{"RC": 40 * gbps, "RT": 40 * gbps, "Next": float64(NoTimer), "Window": float64(NoWindowCap)}},
		{sendAt(1*us, 10_000_000), map[string]float64{"RC": 40 * gbps, "BC": 0}},
		{tick(time.Second), map[string]float64{"RC": 40 * gbps, "T": 0, "Alpha": 1}},
	})
}

// A late OnTimer call runs every missed period, so one call at the end
// gives the same state as a call at every deadline.
func TestTimerCatchUp(t *testing.T) {
	for _, name := range DCQCNPresetNames() {
		t.Run(name, func(t *testing.T) {
			p, err := DCQCNPreset(name)
			if err != nil {
				t.Fatal(err)
			}
			cfg := cfgWith(p)
			onTime, late := mustDCQCN(t, false, cfg), mustDCQCN(t, false, cfg)
			for _, d := range []*DCQCN{onTime, late} {
				if err := d.OnCNP(cnpAt(0)); err != nil {
					t.Fatal(err)
				}
			}
			end := 10*p.RPGTimeReset + p.RPGTimeReset/2
			calls := 0
			for next := onTime.NextTimer(); next <= end; next = onTime.NextTimer() {
				if err := onTime.OnTimer(next); err != nil {
					t.Fatal(err)
				}
				calls++
			}
			if calls != 10 {
				t.Errorf("on-time calls = %d, want 10 (one per rpgTimeReset)", calls)
			}
			if err := onTime.OnTimer(end); err != nil {
				t.Fatal(err)
			}
			if err := late.OnTimer(end); err != nil {
				t.Fatal(err)
			}
			a, b := onTime.State(), late.State()
			if a.RC != b.RC || a.RT != b.RT || a.T != b.T || !approx(a.Alpha, b.Alpha) || onTime.NextTimer() != late.NextTimer() {
				t.Errorf("on time %+v next %v, late %+v next %v", a, onTime.NextTimer(), b, late.NextTimer())
			}
			if a.T != 10 {
				t.Errorf("T = %d, want 10", a.T)
			}
		})
	}
}
