package cc

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// The presets against spec 02's table, copied from the table by hand.
func TestDCQCNPresets(t *testing.T) {
	tests := []struct {
		name string
		want DCQCNParams
	}{
		{"paper2015", DCQCNParams{Set: "paper2015", G: 1.0 / 256, InitialAlpha: 1,
			AlphaPeriod: 55 * us, RateReducePeriod: 0, RPGTimeReset: 55 * us, RPGByteReset: 10e6,
			F: 5, AI: 40e6, HAI: 200e6, MinRate: 1e6, CNPInterval: 50 * us}},
		// g: the NIC's 1019/1024 is (1-g), so g = 5/1024 = 0.0048828125.
		{"nvidia-cx", DCQCNParams{Set: "nvidia-cx", G: 0.0048828125, InitialAlpha: 1,
			AlphaPeriod: 1 * us, RateReducePeriod: 4 * us, RPGTimeReset: 300 * us, RPGByteReset: 32767,
			F: 1, AI: 5e6, HAI: 50e6, MinRate: 1e6, CNPInterval: 4 * us}},
		{"hpcc-sim", DCQCNParams{Set: "hpcc-sim", G: 1.0 / 256, InitialAlpha: 1,
			AlphaPeriod: 1 * us, RateReducePeriod: 4 * us, RPGTimeReset: 300 * us, RPGByteReset: 0,
			F: 1, AI: 20e6, HAI: 200e6, MinRate: 1e9, CNPInterval: 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DCQCNPreset(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("preset\n got %+v\nwant %+v", got, tc.want)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
	if got := strings.Join(DCQCNPresetNames(), ","); got != "hpcc-sim,nvidia-cx,paper2015" {
		t.Errorf("DCQCNPresetNames = %s", got)
	}
	_, err := DCQCNPreset("paper")
	if !errors.Is(err, ErrUnknownParamSet) {
		t.Fatalf("DCQCNPreset(paper): err = %v, want ErrUnknownParamSet", err)
	}
	for _, n := range []string{"paper2015", "nvidia-cx", "hpcc-sim"} {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not list %q", err, n)
		}
	}
}

// The TIMELY, DCTCP and HPCC presets, copied by hand from docs/host-cc.md
// (spec 03, the TIMELY paper as spec 03 gives it, the HPCC simulator's
// rdma-hw.cc, run.py and scratch/third.cc).
func TestOtherPresets(t *testing.T) {
	timely := map[string]TIMELYParams{
		"paper2015": {Set: "paper2015", Alpha: 0.875, Beta: 0.8, AI: 10e6, HAI: 50e6, HAIAfter: 5,
			TLow: 50 * us, THigh: 500 * us, MinRTT: 20 * us, MinRate: 10e6, PerRTT: false},
		"hpcc-sim": {Set: "hpcc-sim", Alpha: 0.875, Beta: 0.8, AI: 100e6, HAI: 500e6, HAIAfter: 5,
			TLow: 50 * us, THigh: 500 * us, MinRTT: 20 * us, MinRate: 1e9, PerRTT: true},
	}
	dctcp := map[string]DCTCPParams{
		"spec03":   {Set: "spec03", G: 0.0625, InitialAlpha: 1, AI: 0, Pace: false},
		"hpcc-sim": {Set: "hpcc-sim", G: 0.0625, InitialAlpha: 1, AI: 0, Pace: true},
	}
	hpcc := map[string]HPCCParams{
		"hpcc-sim": {Set: "hpcc-sim", Eta: 0.95, MaxStage: 5, AI: 40e6, MinRate: 1e9,
			FastReact: true, SampleFeedback: false, MultiRate: false},
	}
	for name, want := range timely {
		got, err := TIMELYPreset(name)
		if err != nil || got != want || got.Validate() != nil {
			t.Errorf("TIMELYPreset(%s) = %+v, %v (valid: %v)\nwant %+v", name, got, err, got.Validate(), want)
		}
	}
	for name, want := range dctcp {
		got, err := DCTCPPreset(name)
		if err != nil || got != want || got.Validate() != nil {
			t.Errorf("DCTCPPreset(%s) = %+v, %v (valid: %v)\nwant %+v", name, got, err, got.Validate(), want)
		}
	}
	for name, want := range hpcc {
		got, err := HPCCPreset(name)
		if err != nil || got != want || got.Validate() != nil {
			t.Errorf("HPCCPreset(%s) = %+v, %v (valid: %v)\nwant %+v", name, got, err, got.Validate(), want)
		}
	}
	for _, tc := range []struct {
		algo  string
		names []string
		err   error
	}{
		{"dcqcn", DCQCNPresetNames(), nil},
		{"dcqcn-fastcnp", []string{"hpcc-sim", "nvidia-cx", "paper2015"}, nil},
		{"timely", []string{"hpcc-sim", "paper2015"}, nil},
		{"dctcp", []string{"hpcc-sim", "spec03"}, nil},
		{"hpcc", []string{"hpcc-sim"}, nil},
		{"lstm-pid", []string{"thesis", "thesis-initial", "trained"}, nil},
		{"pid", []string{"thesis", "thesis-initial", "trained"}, nil},
		{"bbr", nil, ErrUnknownAlgorithm},
	} {
		got, err := ParamSetNames(tc.algo)
		if !errors.Is(err, tc.err) || strings.Join(got, ",") != strings.Join(tc.names, ",") {
			t.Errorf("ParamSetNames(%s) = %v, %v; want %v, %v", tc.algo, got, err, tc.names, tc.err)
		}
	}
	// Every algorithm runs with each of its sets at 100G (and default
	// StartRate, MTU, base RTT).
	for _, algo := range Names() {
		sets, _ := ParamSetNames(algo)
		for _, set := range sets {
			c := Config{LineRate: 100 * gbps}
			if err := c.UseParamSet(algo, set); err != nil {
				t.Fatalf("UseParamSet(%s, %s): %v", algo, set, err)
			}
			if _, err := New(algo, c); err != nil {
				t.Errorf("New(%s) with %s: %v", algo, set, err)
			}
		}
	}
	c := validBase()
	before := c
	if err := c.UseParamSet("timely", "paper"); !errors.Is(err, ErrUnknownParamSet) || c != before {
		t.Errorf("UseParamSet(timely, paper): %v, config changed %v", err, c != before)
	} else if !strings.Contains(err.Error(), "hpcc-sim, paper2015") {
		t.Errorf("error %q does not list the TIMELY sets", err)
	}
	if err := c.UseParamSet("bbr", "x"); !errors.Is(err, ErrUnknownAlgorithm) || c != before {
		t.Errorf("UseParamSet(bbr, x): %v, config changed %v", err, c != before)
	}
	if err := c.UseParamSet("hpcc", "hpcc-sim"); err != nil || c.HPCC != hpcc["hpcc-sim"] || c.DCQCN != before.DCQCN || c.TIMELY != before.TIMELY {
		t.Errorf("UseParamSet(hpcc, hpcc-sim): %v, %+v", err, c)
	}
	for _, f := range []func() error{
		func() error { _, err := TIMELYPreset("x"); return err },
		func() error { _, err := DCTCPPreset("x"); return err },
		func() error { _, err := HPCCPreset("x"); return err },
	} {
		if err := f(); !errors.Is(err, ErrUnknownParamSet) {
			t.Errorf("unknown preset: err = %v", err)
		}
	}
}

// validBase is a 100 Gb/s config with valid parameters for every algorithm
// (the custom sets of the trace tests).
func validBase() Config {
	c := cfgWith(customParams())
	c.TIMELY, c.DCTCP, c.HPCC, c.LSTMPID = timelyCustom(), dctcpCustom(), hpccCustom(), lstmpidCustom()
	return c
}

// Every bad configuration is an error wrapping ErrBadParams, never a panic.
func TestConfigValidation(t *testing.T) {
	nan := math.NaN()
	inf := math.Inf(1)
	mod := func(f func(c *Config)) Config {
		c := validBase()
		f(&c)
		return c
	}
	dcqcn := []string{"dcqcn", "dcqcn-fastcnp"}
	timely, dctcp, hpcc := []string{"timely"}, []string{"dctcp"}, []string{"hpcc"}
	tests := []struct {
		name string
		cfg  Config
		msg  string   // part of the error text
		algs []string // the algorithms that must reject cfg; nil = all
	}{
		{"zero DCQCN params", Config{LineRate: 100 * gbps}, "DCQCN parameters not set", dcqcn},
		{"zero TIMELY params", Config{LineRate: 100 * gbps}, "TIMELY parameters not set", timely},
		{"zero DCTCP params", Config{LineRate: 100 * gbps}, "DCTCP parameters not set", dctcp},
		{"zero HPCC params", Config{LineRate: 100 * gbps}, "HPCC parameters not set", hpcc},
		{"no line rate", mod(func(c *Config) { c.LineRate = 0 }), "line rate", nil},
		{"negative line rate", mod(func(c *Config) { c.LineRate = -1 }), "line rate", nil},
		{"NaN line rate", mod(func(c *Config) { c.LineRate = nan }), "line rate", nil},
		{"Inf line rate", mod(func(c *Config) { c.LineRate = inf }), "line rate", nil},
		{"start above line", mod(func(c *Config) { c.StartRate = 101 * gbps }), "start rate", nil},
		{"NaN start", mod(func(c *Config) { c.StartRate = nan }), "start rate", nil},
		{"negative start", mod(func(c *Config) { c.StartRate = -1 }), "start rate", nil},
		{"start below minRate", mod(func(c *Config) { c.StartRate = 1e5 }), "below minRate", []string{"dcqcn", "dcqcn-fastcnp", "timely", "hpcc", "pid", "lstm-pid", "lstm-pid-rttch", "lstm-pid-rttch-win"}},
		{"negative MTU", mod(func(c *Config) { c.MTU = -1 }), "MTU", nil},
		{"huge MTU", mod(func(c *Config) { c.MTU = 1 << 20 }), "MTU", nil},
		{"negative base RTT", mod(func(c *Config) { c.BaseRTT = -time.Microsecond }), "base RTT", nil},
		{"negative init window", mod(func(c *Config) { c.InitWindow = -1 }), "initial window", nil},
		{"init window below MTU", mod(func(c *Config) { c.InitWindow = 1000 }), "below one MTU", nil},
		{"BDP below MTU", mod(func(c *Config) { c.LineRate = 1e6 }), "below one MTU", nil}, // 1e6/8*8e-6 = 1 byte
		{"base RTT huge", mod(func(c *Config) { c.BaseRTT = 2 * time.Hour }), "base RTT", nil},
		// DCQCN
		{"g 0", mod(func(c *Config) { c.DCQCN.G = 0 }), "g =", dcqcn},
		{"g NaN", mod(func(c *Config) { c.DCQCN.G = nan }), "g =", dcqcn},
		{"g > 1", mod(func(c *Config) { c.DCQCN.G = 1.5 }), "g =", dcqcn},
		{"alpha NaN", mod(func(c *Config) { c.DCQCN.InitialAlpha = nan }), "initial alpha", dcqcn},
		{"alpha > 1", mod(func(c *Config) { c.DCQCN.InitialAlpha = 2 }), "initial alpha", dcqcn},
		{"alphaPeriod 0", mod(func(c *Config) { c.DCQCN.AlphaPeriod = 0 }), "alphaPeriod", dcqcn},
		{"rateReducePeriod < 0", mod(func(c *Config) { c.DCQCN.RateReducePeriod = -1 }), "rateReducePeriod", dcqcn},
		{"rpgTimeReset 0", mod(func(c *Config) { c.DCQCN.RPGTimeReset = 0 }), "rpgTimeReset", dcqcn},
		{"rpgTimeReset huge", mod(func(c *Config) { c.DCQCN.RPGTimeReset = 1 << 62 }), "rpgTimeReset", dcqcn},
		{"alphaPeriod huge", mod(func(c *Config) { c.DCQCN.AlphaPeriod = 2 * time.Hour }), "alphaPeriod", dcqcn},
		{"rpgByteReset < 0", mod(func(c *Config) { c.DCQCN.RPGByteReset = -1 }), "rpgByteReset", dcqcn},
		{"F < 0", mod(func(c *Config) { c.DCQCN.F = -1 }), "F =", dcqcn},
		{"AI NaN", mod(func(c *Config) { c.DCQCN.AI = nan }), "R_AI", dcqcn},
		{"AI 0", mod(func(c *Config) { c.DCQCN.AI = 0 }), "R_AI", dcqcn},
		{"HAI Inf", mod(func(c *Config) { c.DCQCN.HAI = inf }), "R_HAI", dcqcn},
		{"HAI negative", mod(func(c *Config) { c.DCQCN.HAI = -1 }), "R_HAI", dcqcn},
		{"minRate NaN", mod(func(c *Config) { c.DCQCN.MinRate = nan }), "minRate", dcqcn},
		{"minRate 0", mod(func(c *Config) { c.DCQCN.MinRate = 0 }), "minRate", dcqcn},
		{"minRate above line", mod(func(c *Config) { c.DCQCN.MinRate = 200 * gbps }), "above the line rate", dcqcn},
		{"cnpInterval < 0", mod(func(c *Config) { c.DCQCN.CNPInterval = -1 }), "cnpInterval", dcqcn},
		// 100e9 / 1 = 1e11 > 2^24 steps
		{"AI too small for the line", mod(func(c *Config) { c.DCQCN.AI = 1 }), "too small", dcqcn},
		// TIMELY
		{"TIMELY alpha 0", mod(func(c *Config) { c.TIMELY.Alpha = 0 }), "alpha =", timely},
		{"TIMELY alpha > 1", mod(func(c *Config) { c.TIMELY.Alpha = 1.5 }), "alpha =", timely},
		{"TIMELY beta NaN", mod(func(c *Config) { c.TIMELY.Beta = nan }), "beta =", timely},
		{"TIMELY beta > 1", mod(func(c *Config) { c.TIMELY.Beta = 2 }), "beta =", timely},
		{"TIMELY AI 0", mod(func(c *Config) { c.TIMELY.AI = 0 }), "AI (delta)", timely},
		{"TIMELY AI Inf", mod(func(c *Config) { c.TIMELY.AI = inf }), "AI (delta)", timely},
		{"TIMELY HAI below AI", mod(func(c *Config) { c.TIMELY.HAI = c.TIMELY.AI / 2 }), "HAI =", timely},
		{"TIMELY HAI NaN", mod(func(c *Config) { c.TIMELY.HAI = nan }), "HAI =", timely},
		{"TIMELY HAIAfter 0", mod(func(c *Config) { c.TIMELY.HAIAfter = 0 }), "HAIAfter", timely},
		{"TIMELY Tlow 0", mod(func(c *Config) { c.TIMELY.TLow = 0 }), "Tlow =", timely},
		{"TIMELY Thigh below Tlow", mod(func(c *Config) { c.TIMELY.THigh = c.TIMELY.TLow - 1 }), "Thigh =", timely},
		{"TIMELY Thigh huge", mod(func(c *Config) { c.TIMELY.THigh = 2 * time.Hour }), "Thigh =", timely},
		{"TIMELY minRTT 0", mod(func(c *Config) { c.TIMELY.MinRTT = 0 }), "minRTT", timely},
		{"TIMELY minRate 0", mod(func(c *Config) { c.TIMELY.MinRate = 0 }), "minRate", timely},
		{"TIMELY minRate above line", mod(func(c *Config) { c.TIMELY.MinRate = 200 * gbps }), "above the line rate", timely},
		// DCTCP
		{"DCTCP g 0", mod(func(c *Config) { c.DCTCP.G = 0 }), "g =", dctcp},
		{"DCTCP g NaN", mod(func(c *Config) { c.DCTCP.G = nan }), "g =", dctcp},
		{"DCTCP alpha > 1", mod(func(c *Config) { c.DCTCP.InitialAlpha = 1.5 }), "initial alpha", dctcp},
		{"DCTCP AI < 0", mod(func(c *Config) { c.DCTCP.AI = -1 }), "AI =", dctcp},
		// HPCC
		{"HPCC eta 0", mod(func(c *Config) { c.HPCC.Eta = 0 }), "eta =", hpcc},
		{"HPCC eta > 1", mod(func(c *Config) { c.HPCC.Eta = 1.05 }), "eta =", hpcc},
		{"HPCC maxStage < 0", mod(func(c *Config) { c.HPCC.MaxStage = -1 }), "maxStage", hpcc},
		{"HPCC AI 0", mod(func(c *Config) { c.HPCC.AI = 0 }), "AI =", hpcc},
		{"HPCC minRate NaN", mod(func(c *Config) { c.HPCC.MinRate = nan }), "minRate", hpcc},
		{"HPCC minRate above line", mod(func(c *Config) { c.HPCC.MinRate = 200 * gbps }), "above the line rate", hpcc},
		// minRate*T = 2e9/8*8e-6 = 2000 B > Winit 1500 B
		{"HPCC minRate window above Winit", mod(func(c *Config) { c.InitWindow, c.HPCC.MinRate = 1500, 2*gbps }), "above Winit", hpcc},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			algs := tc.algs
			if algs == nil {
				algs = Names()
			}
			for _, name := range algs {
				a, err := New(name, tc.cfg)
				if !errors.Is(err, ErrBadParams) {
					t.Fatalf("New(%s): err = %v, want ErrBadParams", name, err)
				}
				if a != nil {
					t.Errorf("New(%s) returned an algorithm with an error", name)
				}
				if !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), name) {
					t.Errorf("New(%s): error %q does not mention %q and the algorithm", name, err, tc.msg)
				}
			}
		})
	}
	// The base is valid for every algorithm, and each algorithm checks only
	// its own parameters.
	for _, name := range Names() {
		if _, err := New(name, validBase()); err != nil {
			t.Errorf("New(%s, validBase()): %v", name, err)
		}
	}
	only := Config{LineRate: 100 * gbps, DCTCP: dctcpCustom()}
	if _, err := New("dctcp", only); err != nil {
		t.Errorf("dctcp without the other algorithms' parameters: %v", err)
	}
}

func TestRegistry(t *testing.T) {
	const all = "dcqcn,dcqcn-fastcnp,dctcp,hpcc,lstm-pid,lstm-pid-rttch,lstm-pid-rttch-win,pid,timely"
	if got := strings.Join(Names(), ","); got != all {
		t.Errorf("Names = %s, want %s", got, all)
	}
	for _, tc := range []struct {
		name   string
		window int64
	}{
		{"dcqcn", NoWindowCap},
		{"dcqcn-fastcnp", winit100G},
		{"timely", NoWindowCap},
		{"dctcp", winit100G},
		{"hpcc", winit100G},
		{"pid", NoWindowCap},
		{"lstm-pid", NoWindowCap},
		{"lstm-pid-rttch", NoWindowCap},
		{"lstm-pid-rttch-win", winit100G},
	} {
		a, err := New(tc.name, validBase())
		if err != nil {
			t.Fatalf("New(%s): %v", tc.name, err)
		}
		if a.Name() != tc.name || a.Rate() != 100*gbps || a.Window() != tc.window || a.NextTimer() != NoTimer {
			t.Errorf("New(%s): name %s rate %v window %d next %v", tc.name, a.Name(), a.Rate(), a.Window(), a.NextTimer())
		}
	}
	_, err := New("bbr", validBase())
	if !errors.Is(err, ErrUnknownAlgorithm) {
		t.Fatalf("New(bbr): err = %v, want ErrUnknownAlgorithm", err)
	}
	if !strings.Contains(err.Error(), strings.ReplaceAll(all, ",", ", ")) {
		t.Errorf("error %q does not list the known names", err)
	}
}

// snapshot copies an algorithm's whole state (every field is comparable).
func snapshot(t *testing.T, a Algorithm) any {
	t.Helper()
	switch v := a.(type) {
	case *DCQCN:
		return *v
	case *TIMELY:
		return *v
	case *DCTCP:
		return *v
	case *HPCC:
		return *v
	case *LSTMPID:
		return fmt.Sprintf("%+v", *v) // has a slice: compare the printed state
	}
	t.Fatalf("no snapshot for %T", a)
	return nil
}

// Bad events are errors wrapping ErrBadEvent or ErrTimeBackwards, name the
// algorithm, and leave the state exactly as it was, for every algorithm.
func TestBadEvents(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		ev   any
		want error
	}{
		{"send negative bytes", sendAt(20*us, -1), ErrBadEvent},
		{"send too many bytes", sendAt(20*us, MaxEventBytes+1), ErrBadEvent},
		{"ack negative bytes", Ack{Now: 20 * us, Bytes: -1}, ErrBadEvent},
		{"ack negative RTT", Ack{Now: 20 * us, RTT: -1}, ErrBadEvent},
		{"ack INT NaN rate", Ack{Now: 20 * us, Hops: []INTHop{{LinkRate: 100 * gbps}, {LinkRate: nan}}}, ErrBadEvent},
		{"ack INT zero rate", Ack{Now: 20 * us, Hops: []INTHop{{}}}, ErrBadEvent},
		{"ack INT Inf rate", Ack{Now: 20 * us, Hops: []INTHop{{LinkRate: math.Inf(1)}}}, ErrBadEvent},
		{"ack INT negative queue", Ack{Now: 20 * us, Hops: []INTHop{{LinkRate: 100 * gbps, QLen: -1}}}, ErrBadEvent},
		{"cnp negative window", CNP{Now: 20 * us, Ext: CNPExt{WindowValid: true, Window: -1}}, ErrBadEvent},
		{"cnp negative queue", CNP{Now: 20 * us, Ext: CNPExt{QueueBytes: -1}}, ErrBadEvent},
		{"cnp negative time", cnpAt(-1), ErrBadEvent},
		{"timer beyond MaxTime", tick(MaxTime + 1), ErrBadEvent},
		{"send back in time", sendAt(9*us, 100), ErrTimeBackwards},
		{"ack back in time", Ack{Now: 9 * us}, ErrTimeBackwards},
		{"cnp back in time", cnpAt(9 * us), ErrTimeBackwards},
		{"timer back in time", tick(9 * us), ErrTimeBackwards},
	}
	cfg := validBase()
	cfg.DCQCN.RPGByteReset = 1000
	// A few events first so that every algorithm has state to keep.
	prefix := []any{
		sendAt(1*us, 10_000),
		Ack{Now: 2 * us, Bytes: 1000, RTT: 8 * us, Hops: []INTHop{hop100G(2*us, 1000, 0)}},
		Ack{Now: 3 * us, Bytes: 1000, RTT: 9 * us, ECE: true, Hops: []INTHop{hop100G(3*us, 2000, 3000)}},
		winCNP(10*us, 30_000),
	}
	for _, alg := range Names() {
		for _, tc := range tests {
			t.Run(alg+"/"+tc.name, func(t *testing.T) {
				a, err := New(alg, cfg)
				if err != nil {
					t.Fatal(err)
				}
				for _, ev := range prefix {
					if err := apply(a, ev); err != nil {
						t.Fatal(err)
					}
				}
				before := snapshot(t, a)
				err = apply(a, tc.ev)
				if !errors.Is(err, tc.want) {
					t.Fatalf("err = %v, want %v", err, tc.want)
				}
				if !strings.Contains(err.Error(), alg) {
					t.Errorf("error %q does not name the algorithm", err)
				}
				if after := snapshot(t, a); after != before {
					t.Errorf("state changed by a rejected event:\n%+v\n%+v", before, after)
				}
				// and the flow still works at the old time
				if err := a.OnTimer(10 * us); err != nil {
					t.Errorf("OnTimer at the last time after a rejected event: %v", err)
				}
			})
		}
	}
}

// The per-event hot path does not allocate, through the interface, for
// every algorithm with the parameter sets of allConfig (HPCC with each of
// its modes).
func TestHotPathAllocs(t *testing.T) {
	type variant struct {
		name string
		cfg  func(*Config)
	}
	variants := []variant{{"", func(*Config) {}}}
	for _, alg := range Names() {
		vs := variants
		if alg == "hpcc" {
			vs = []variant{
				{"", func(*Config) {}},
				{"/multi-rate", func(c *Config) { c.HPCC.MultiRate = true }},
				{"/sample-feedback", func(c *Config) { c.HPCC.SampleFeedback = true }},
				{"/no-fast-react", func(c *Config) { c.HPCC.FastReact = false }},
			}
		}
		if alg == "timely" {
			vs = append(vs, variant{"/per-sample", func(c *Config) { c.TIMELY.PerRTT = false }})
		}
		for _, v := range vs {
			t.Run(alg+v.name, func(t *testing.T) {
				cfg := allConfig(t)
				v.cfg(&cfg)
				a, err := New(alg, cfg)
				if err != nil {
					t.Fatal(err)
				}
				hops := []INTHop{hop100G(0, 0, 0), hop100G(0, 0, 0), hop100G(0, 0, 0)}
				now := time.Duration(0)
				i := 0
				allocs := testing.AllocsPerRun(1000, func() {
					now += 100 * time.Nanosecond
					i++
					for j := range hops {
						hops[j].TS, hops[j].TxBytes, hops[j].QLen = now, uint64(i)*1500, int64(i%7)*1000
					}
					_ = a.OnSend(Send{Now: now, Bytes: 1500})
					_ = a.OnAck(Ack{Now: now, Bytes: 1000, RTT: 8*us + time.Duration(i%5)*us, ECE: i%3 == 0, Hops: hops})
					_ = a.OnCNP(winCNP(now, 40_000))
					_ = a.OnTimer(now)
					_, _, _ = a.Rate(), a.Window(), a.NextTimer()
				})
				if allocs != 0 {
					t.Errorf("allocs per event round = %v, want 0", allocs)
				}
			})
		}
	}
}

// TestDCQCNScaled checks the scaling of a parameter set against values
// computed by hand, and that a scaled flow behaves the same in units of the
// scaled time: the rate trace of nvidia-cx x1000 at 100 Mb/s, sampled at
// 1000 x the times, equals the trace of nvidia-cx at 100 Gb/s divided by 1000.
func TestDCQCNScaled(t *testing.T) {
	nv, err := DCQCNPreset("nvidia-cx")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		k    float64
		want DCQCNParams
		err  bool
	}{
		{"x1000", 1000, DCQCNParams{Set: "nvidia-cx x1000", G: 0.0048828125, InitialAlpha: 1,
			AlphaPeriod: time.Millisecond, RateReducePeriod: 4 * time.Millisecond, RPGTimeReset: 300 * time.Millisecond,
			RPGByteReset: 32767, F: 1, AI: 5e3, HAI: 50e3, MinRate: 1e3, CNPInterval: 4 * time.Millisecond}, false},
		{"x1 is the identity", 1, nv, false},
		{"x0.5", 0.5, DCQCNParams{Set: "nvidia-cx x0.5", G: 0.0048828125, InitialAlpha: 1,
			AlphaPeriod: 500 * time.Nanosecond, RateReducePeriod: 2 * us, RPGTimeReset: 150 * us,
			RPGByteReset: 32767, F: 1, AI: 10e6, HAI: 100e6, MinRate: 2e6, CNPInterval: 2 * us}, false},
		{"zero", 0, DCQCNParams{}, true},
		{"NaN", math.NaN(), DCQCNParams{}, true},
		{"too large", 2 * MaxScale, DCQCNParams{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := nv.Scaled(tc.k)
			if tc.err {
				if !errors.Is(err, ErrBadParams) {
					t.Fatalf("Scaled(%v): err %v, want ErrBadParams", tc.k, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Scaled(%v) = %+v, %v\nwant %+v", tc.k, got, err, tc.want)
			}
		})
	}
	// Same dynamics: a CNP, then the rate over the next 2 ms (real) / 2 s (scaled).
	scaled, _ := nv.Scaled(1000)
	fast, err := New("dcqcn", Config{LineRate: 100e9, BaseRTT: 8 * us, DCQCN: nv})
	if err != nil {
		t.Fatal(err)
	}
	slow, err := New("dcqcn", Config{LineRate: 100e6, BaseRTT: 8 * time.Millisecond, DCQCN: scaled})
	if err != nil {
		t.Fatal(err)
	}
	if err := fast.OnCNP(CNP{Now: 10 * us}); err != nil {
		t.Fatal(err)
	}
	if err := slow.OnCNP(CNP{Now: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	for step := 1; step <= 20; step++ {
		at := time.Duration(step) * 100 * us
		for _, a := range []struct {
			alg Algorithm
			now time.Duration
		}{{fast, at}, {slow, 1000 * at}} {
			for tm := a.alg.NextTimer(); tm != NoTimer && tm <= a.now; tm = a.alg.NextTimer() {
				if err := a.alg.OnTimer(tm); err != nil {
					t.Fatal(err)
				}
			}
		}
		if f, s := fast.Rate()/1000, slow.Rate(); math.Abs(f-s) > 1e-6*f {
			t.Fatalf("after %v: 100G rate/1000 = %v, scaled rate %v", at, f, s)
		}
	}
	if fast.Rate() == 100e9 || fast.Rate() <= 50e9 {
		t.Fatalf("the trace did not exercise recovery: rate %v", fast.Rate())
	}
}

// TestOtherScaled: TIMELY and HPCC sets k times slower, against values
// computed by hand, and TIMELY's dynamics in units of the scaled network: the
// same RTT samples x1000 at 100 Mb/s give the 100 Gb/s rates / 1000.
func TestOtherScaled(t *testing.T) {
	paper, _ := TIMELYPreset("paper2015")
	got, err := paper.Scaled(1000)
	want := TIMELYParams{Set: "paper2015 x1000", Alpha: 0.875, Beta: 0.8, AI: 10e3, HAI: 50e3, HAIAfter: 5,
		TLow: 50 * time.Millisecond, THigh: 500 * time.Millisecond, MinRTT: 20 * time.Millisecond, MinRate: 10e3}
	if err != nil || got != want {
		t.Errorf("paper2015.Scaled(1000) = %+v, %v\nwant %+v", got, err, want)
	}
	if got, err := paper.Scaled(1); err != nil || got != paper {
		t.Errorf("Scaled(1) = %+v, %v", got, err)
	}
	hp, _ := HPCCPreset("hpcc-sim")
	wantH := HPCCParams{Set: "hpcc-sim x10", Eta: 0.95, MaxStage: 5, AI: 4e6, MinRate: 1e8, FastReact: true}
	if got, err := hp.Scaled(10); err != nil || got != wantH {
		t.Errorf("hpcc-sim.Scaled(10) = %+v, %v\nwant %+v", got, err, wantH)
	}
	for _, k := range []float64{0, math.NaN(), math.Inf(1), 2 * MaxScale} {
		if _, err := paper.Scaled(k); !errors.Is(err, ErrBadParams) {
			t.Errorf("TIMELY Scaled(%v): err %v", k, err)
		}
		if _, err := hp.Scaled(k); !errors.Is(err, ErrBadParams) {
			t.Errorf("HPCC Scaled(%v): err %v", k, err)
		}
	}
	fast := mustTIMELY(t, Config{LineRate: 100 * gbps, StartRate: 50 * gbps, TIMELY: paper})
	slow := mustTIMELY(t, Config{LineRate: 100 * mbps, StartRate: 50 * mbps, BaseRTT: 8 * time.Millisecond, TIMELY: got})
	rtts := []time.Duration{60, 70, 65, 60, 60, 60, 60, 60, 60, 60, 600, 300, 55, 40, 40}
	for i, r := range rtts {
		at := time.Duration(i+1) * us
		if err := fast.OnAck(ackAt(at, 1000, r*us)); err != nil {
			t.Fatal(err)
		}
		if err := slow.OnAck(ackAt(1000*at, 1000, r*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		if f, s := fast.Rate()/1000, slow.Rate(); math.Abs(f-s) > 1e-9*f {
			t.Fatalf("sample %d: 100G rate/1000 = %v, scaled rate %v", i, f, s)
		}
	}
	if st := fast.State().Stats; st.HAIIncreases == 0 || st.HighDecreases == 0 || st.GradientDecreases == 0 {
		t.Errorf("the trace did not exercise every branch: %+v", st)
	}
}
