package cc

import (
	"errors"
	"testing"
	"time"
)

// The fastcnp window rules (spec 01, sender with a switch CNP). Unless a case
// says otherwise: line rate 100 Gb/s, BaseRTT 8us (default), MTU 1500
// (default), so Winit = 100e9/8 B/s * 8e-6 s = 100,000 bytes.
const winit100G = 100_000

// runWindowCases runs the cases with window rule rule (cases that set one keep
// theirs).
func runWindowCases(t *testing.T, rule WindowRule, tests []windowCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(string(rule)+"/"+tc.name, func(t *testing.T) {
			cfg := tc.cfg
			if cfg.WindowRule == "" {
				cfg.WindowRule = rule
			}
			if cfg.LineRate == 0 {
				cfg.LineRate = 100 * gbps
			}
			if cfg.DCQCN == (DCQCNParams{}) {
				cfg.DCQCN = customParams()
			}
			runTrace(t, mustDCQCN(t, true, cfg), tc.steps)
		})
	}
}

type windowCase struct {
	name  string
	cfg   Config // zero LineRate and DCQCN mean 100G and customParams
	steps []step
}

// Rule "window cap" (spec01): a CNP whose extension has window-valid set
// caps the window to min(Winit, max(MTU, Win)) and cuts the rate as any CNP;
// the latest window wins.
func TestWindowCap(t *testing.T) {
	rrp := customParams()
	rrp.RateReducePeriod = 4 * us
	runWindowCases(t, WindowRuleSpec01, []windowCase{
		{"Winit before any CNP, then the switch window", Config{}, []step{
			{tick(0), map[string]float64{"Window": winit100G}},
			// the cut happens as for any CNP: RC = 50G
			{winCNP(10*us, 30_000), map[string]float64{"Window": 30_000, "RC": 50 * gbps}},
		}},
		{"latest window wins, also on a suppressed cut", Config{DCQCN: rrp}, []step{
			{winCNP(10*us, 30_000), map[string]float64{"Window": 30_000}},
			{winCNP(11*us, 60_000), map[string]float64{"Window": 60_000, "Suppressed": 1, "RC": 50 * gbps}},
			{winCNP(12*us, 20_000), map[string]float64{"Window": 20_000, "Suppressed": 2}},
		}},
		{"never above Winit", Config{}, []step{
			{winCNP(0, 250_000), map[string]float64{"Window": winit100G}},
		}},
		{"explicit InitWindow", Config{InitWindow: 50_000}, []step{
			{tick(0), map[string]float64{"Window": 50_000}},
			{winCNP(1*us, 80_000), map[string]float64{"Window": 50_000}},
			{winCNP(2*us, 40_000), map[string]float64{"Window": 40_000}},
		}},
		// Winit = 25e9/8 * 4e-6 = 12,500 bytes
		{"Winit from a 25G line and 4us base RTT", Config{LineRate: 25 * gbps, BaseRTT: 4 * us}, []step{
			{tick(0), map[string]float64{"Window": 12_500}},
		}},
	})
}

// Rule "window never below one MTU", in both rules.
func TestWindowNeverBelowMTU(t *testing.T) {
	for _, rule := range WindowRules() {
		runWindowCases(t, rule, []windowCase{
			{"500 -> MTU 1500", Config{}, []step{{winCNP(0, 500), map[string]float64{"Window": 1500}}}},
			{"1 -> MTU 1500", Config{}, []step{{winCNP(0, 1), map[string]float64{"Window": 1500}}}},
			{"1500 stays", Config{}, []step{{winCNP(0, 1500), map[string]float64{"Window": 1500}}}},
			{"1501 stays", Config{}, []step{{winCNP(0, 1501), map[string]float64{"Window": 1501}}}},
			{"1000 -> MTU 4096", Config{MTU: 4096}, []step{{winCNP(0, 1000), map[string]float64{"Window": 4096}}}},
		})
	}
}

// Rule "window restore" (spec01): the first rate increase after a switch
// window restores Winit.
func TestWindowRestore(t *testing.T) {
	f1 := customParams()
	f1.F = 1
	bytes := customParams()
	bytes.RPGByteReset = 1000
	// A rate-reduce period longer than the recovery, and alpha0 = 0 so that
	// the cut leaves RC at line rate: the RP is recovered when the window
	// arrives, and must re-arm its timer on the old phase.
	long := customParams()
	long.InitialAlpha, long.RateReducePeriod = 0, time.Second
	runWindowCases(t, WindowRuleSpec01, []windowCase{
		{"at the first timer event (fast recovery, F = 5)", Config{}, []step{
			{winCNP(0, 30_000), map[string]float64{"Window": 30_000, "Next": float64(100 * us)}},
			{tick(100*us - 1), map[string]float64{"Window": 30_000}},
			{tick(100 * us), map[string]float64{"Window": winit100G, "FastRecovery": 1}},
		}},
		{"at the first timer event when it is additive (F = 1)", Config{DCQCN: f1}, []step{
			{winCNP(0, 30_000), map[string]float64{"Window": 30_000}},
			{tick(100 * us), map[string]float64{"Window": winit100G, "Additive": 1, "FastRecovery": 0}},
		}},
		{"at the first byte-counter event", Config{DCQCN: bytes}, []step{
			{winCNP(0, 30_000), nil},
			{sendAt(1*us, 999), map[string]float64{"Window": 30_000, "BC": 0}},
			{sendAt(2*us, 1), map[string]float64{"Window": winit100G, "BC": 1}},
		}},
		{"a new cap after a restore waits for the next increase", Config{}, []step{
			{winCNP(0, 30_000), nil},
			{tick(100 * us), map[string]float64{"Window": winit100G}},
			// new cut at 150us re-arms the timer at 250us
			{winCNP(150*us, 20_000), map[string]float64{"Window": 20_000, "Next": float64(250 * us), "T": 0}},
			{tick(250*us - 1), map[string]float64{"Window": 20_000}},
			{tick(250 * us), map[string]float64{"Window": winit100G}},
		}},
		{"recovered RP re-arms its timer on the old phase", Config{DCQCN: long}, []step{
			// alpha 0: RC = 100G*(1-0) = 100G = RT.
			{cnpAt(0), map[string]float64{"RC": 100 * gbps, "Next": float64(100 * us)}},
			// T = 1: RC = (100+100)/2 unchanged, RT = line: recovered.
			{tick(100 * us), map[string]float64{"Next": float64(NoTimer), "RC": 100 * gbps}},
			// suppressed cut (within 1s) but the window applies; next tick on
			// the old phase: 200us.
			{winCNP(150*us, 30_000), map[string]float64{"Window": 30_000, "Suppressed": 1, "Next": float64(200 * us)}},
			{tick(200 * us), map[string]float64{"Window": winit100G, "Next": float64(NoTimer)}},
			// phase kept across a longer stop: 200us + k*100us > 1234us -> 1300us
			{winCNP(1234*us, 30_000), map[string]float64{"Next": float64(1300 * us)}},
		}},
	})
}

// Rule "plain CNP leaves the window alone": only window-valid extensions
// with Win > 0 (0 means none on the wire) touch the window; plain CNPs cut
// the rate in both rules.
func TestPlainCNPLeavesWindow(t *testing.T) {
	runWindowCases(t, WindowRuleSpec01, []windowCase{
		{"plain CNP before any window: Winit, and the cut", Config{}, []step{
			{cnpAt(0), map[string]float64{"Window": winit100G, "RC": 50 * gbps}},
		}},
		{"plain CNP keeps a switch window", Config{}, []step{
			{winCNP(0, 30_000), map[string]float64{"Window": 30_000}},
			// RC = 50G*(1-1/2) = 25G
			{cnpAt(1 * us), map[string]float64{"Window": 30_000, "RC": 25 * gbps, "Cuts": 2}},
		}},
		{"window-valid with window 0 is no window", Config{}, []step{
			{CNP{Now: 0, Ext: CNPExt{WindowValid: true, BySwitch: true}}, map[string]float64{"Window": winit100G, "RC": 50 * gbps}},
		}},
		{"window without the valid flag is ignored", Config{}, []step{
			{CNP{Now: 0, Ext: CNPExt{BySwitch: true, Window: 30_000}}, map[string]float64{"Window": winit100G}},
		}},
	})
	// "dcqcn" (no fastcnp) never caps, whatever the CNP says.
	d := mustDCQCN(t, false, cfgWith(customParams()))
	if err := d.OnCNP(winCNP(0, 30_000)); err != nil {
		t.Fatal(err)
	}
	if d.Window() != NoWindowCap {
		t.Errorf("dcqcn Window = %d after a switch window, want NoWindowCap", d.Window())
	}
	if d.Rate() != 50*gbps {
		t.Errorf("dcqcn RC = %v, want 50G (the cut still applies)", d.Rate())
	}
}

// Rule aimd (the default): a switch window caps the window without cutting
// the rate or touching DCQCN's state; every window's worth of bytes
// acknowledged grows it by one MTU, up to Winit; plain CNPs cut as DCQCN.
func TestWindowAIMD(t *testing.T) {
	runWindowCases(t, WindowRuleAIMD, []windowCase{
		{"a switch window caps without a cut", Config{}, []step{
			{winCNP(10*us, 30_000), map[string]float64{"Window": 30_000, "RC": 100 * gbps, "Cuts": 0, "CNPs": 1,
				"Next": float64(NoTimer), "Capped": 1}},
		}},
		{"one MTU per window acknowledged", Config{}, []step{
			{winCNP(0, 30_000), nil},
			{ackAt(1*us, 29_999, 0), map[string]float64{"Window": 30_000, "Growth": 0}},
			{ackAt(2*us, 1, 0), map[string]float64{"Window": 31_500, "Growth": 1}},
			// the next step needs 31,500 bytes; 63,000 at once gives it and
			// keeps 31,500 towards the one after (33,000 needs 1,500 more)
			{ackAt(3*us, 63_000, 0), map[string]float64{"Window": 33_000, "Growth": 2}},
			{ackAt(4*us, 1_499, 0), map[string]float64{"Window": 33_000, "Growth": 2}},
			{ackAt(5*us, 1, 0), map[string]float64{"Window": 34_500, "Growth": 3}},
		}},
		{"growth stops at Winit, uncapped", Config{}, []step{
			{winCNP(0, 99_000), nil},
			{ackAt(1*us, 99_000, 0), map[string]float64{"Window": winit100G, "Growth": 1, "Restore": 1, "Capped": 0}},
			{ackAt(2*us, 500_000, 0), map[string]float64{"Window": winit100G, "Growth": 1}},
		}},
		{"a new window restarts the count", Config{}, []step{
			{winCNP(0, 30_000), nil},
			{ackAt(1*us, 20_000, 0), nil},
			{winCNP(2*us, 40_000), map[string]float64{"Window": 40_000}},
			{ackAt(3*us, 39_999, 0), map[string]float64{"Window": 40_000, "Growth": 0}},
			{ackAt(4*us, 1, 0), map[string]float64{"Window": 41_500, "Growth": 1}},
		}},
		{"rate increases do not restore the window", Config{}, []step{
			{cnpAt(0), map[string]float64{"RC": 50 * gbps, "Cuts": 1}},
			{winCNP(1*us, 30_000), map[string]float64{"RC": 50 * gbps, "Cuts": 1}},
			{tick(100 * us), map[string]float64{"Window": 30_000, "FastRecovery": 1, "RC": 75 * gbps}},
		}},
		{"plain CNP cuts and keeps the window", Config{}, []step{
			{winCNP(0, 30_000), nil},
			{cnpAt(1 * us), map[string]float64{"Window": 30_000, "RC": 50 * gbps, "Cuts": 1}},
		}},
		{"Win 0 is no window: a DCQCN cut", Config{}, []step{
			{CNP{Now: 0, Ext: CNPExt{WindowValid: true, BySwitch: true}}, map[string]float64{"Window": winit100G, "RC": 50 * gbps}},
		}},
	})
}

func TestWindowRuleUnknown(t *testing.T) {
	cfg := cfgWith(customParams())
	cfg.WindowRule = "mimd"
	if _, err := NewDCQCNFastCNP(cfg); !errors.Is(err, ErrBadParams) {
		t.Errorf("window rule mimd: %v, want ErrBadParams", err)
	}
}
