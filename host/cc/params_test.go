package cc

import (
	"errors"
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

// Every bad configuration is an error wrapping ErrBadParams, never a panic.
func TestConfigValidation(t *testing.T) {
	nan := math.NaN()
	inf := math.Inf(1)
	mod := func(f func(c *Config)) Config {
		c := cfgWith(customParams())
		f(&c)
		return c
	}
	tests := []struct {
		name string
		cfg  Config
		msg  string // part of the error text
	}{
		{"zero DCQCN params", Config{LineRate: 100 * gbps}, "not set"},
		{"no line rate", mod(func(c *Config) { c.LineRate = 0 }), "line rate"},
		{"negative line rate", mod(func(c *Config) { c.LineRate = -1 }), "line rate"},
		{"NaN line rate", mod(func(c *Config) { c.LineRate = nan }), "line rate"},
		{"Inf line rate", mod(func(c *Config) { c.LineRate = inf }), "line rate"},
		{"start above line", mod(func(c *Config) { c.StartRate = 101 * gbps }), "start rate"},
		{"NaN start", mod(func(c *Config) { c.StartRate = nan }), "start rate"},
		{"negative start", mod(func(c *Config) { c.StartRate = -1 }), "start rate"},
		{"start below minRate", mod(func(c *Config) { c.StartRate = 1e5 }), "below minRate"},
		{"negative MTU", mod(func(c *Config) { c.MTU = -1 }), "MTU"},
		{"huge MTU", mod(func(c *Config) { c.MTU = 1 << 20 }), "MTU"},
		{"negative base RTT", mod(func(c *Config) { c.BaseRTT = -time.Microsecond }), "base RTT"},
		{"negative init window", mod(func(c *Config) { c.InitWindow = -1 }), "initial window"},
		{"init window below MTU", mod(func(c *Config) { c.InitWindow = 1000 }), "below one MTU"},
		{"BDP below MTU", mod(func(c *Config) { c.LineRate = 1e6 }), "below one MTU"}, // 1e6/8*8e-6 = 1 byte
		{"g 0", mod(func(c *Config) { c.DCQCN.G = 0 }), "g ="},
		{"g NaN", mod(func(c *Config) { c.DCQCN.G = nan }), "g ="},
		{"g > 1", mod(func(c *Config) { c.DCQCN.G = 1.5 }), "g ="},
		{"alpha NaN", mod(func(c *Config) { c.DCQCN.InitialAlpha = nan }), "initial alpha"},
		{"alpha > 1", mod(func(c *Config) { c.DCQCN.InitialAlpha = 2 }), "initial alpha"},
		{"alphaPeriod 0", mod(func(c *Config) { c.DCQCN.AlphaPeriod = 0 }), "alphaPeriod"},
		{"rateReducePeriod < 0", mod(func(c *Config) { c.DCQCN.RateReducePeriod = -1 }), "rateReducePeriod"},
		{"rpgTimeReset 0", mod(func(c *Config) { c.DCQCN.RPGTimeReset = 0 }), "rpgTimeReset"},
		{"rpgTimeReset huge", mod(func(c *Config) { c.DCQCN.RPGTimeReset = 1 << 62 }), "rpgTimeReset"},
		{"alphaPeriod huge", mod(func(c *Config) { c.DCQCN.AlphaPeriod = 2 * time.Hour }), "alphaPeriod"},
		{"base RTT huge", mod(func(c *Config) { c.BaseRTT = 2 * time.Hour }), "base RTT"},
		{"rpgByteReset < 0", mod(func(c *Config) { c.DCQCN.RPGByteReset = -1 }), "rpgByteReset"},
		{"F < 0", mod(func(c *Config) { c.DCQCN.F = -1 }), "F ="},
		{"AI NaN", mod(func(c *Config) { c.DCQCN.AI = nan }), "R_AI"},
		{"AI 0", mod(func(c *Config) { c.DCQCN.AI = 0 }), "R_AI"},
		{"HAI Inf", mod(func(c *Config) { c.DCQCN.HAI = inf }), "R_HAI"},
		{"HAI negative", mod(func(c *Config) { c.DCQCN.HAI = -1 }), "R_HAI"},
		{"minRate NaN", mod(func(c *Config) { c.DCQCN.MinRate = nan }), "minRate"},
		{"minRate 0", mod(func(c *Config) { c.DCQCN.MinRate = 0 }), "minRate"},
		{"minRate above line", mod(func(c *Config) { c.DCQCN.MinRate = 200 * gbps }), "above the line rate"},
		{"cnpInterval < 0", mod(func(c *Config) { c.DCQCN.CNPInterval = -1 }), "cnpInterval"},
		// 100e9 / 1 = 1e11 > 2^24 steps
		{"AI too small for the line", mod(func(c *Config) { c.DCQCN.AI = 1 }), "too small"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, name := range Names() {
				a, err := New(name, tc.cfg)
				if !errors.Is(err, ErrBadParams) {
					t.Fatalf("New(%s): err = %v, want ErrBadParams", name, err)
				}
				if a != nil {
					t.Errorf("New(%s) returned an algorithm with an error", name)
				}
				if !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("New(%s): error %q does not mention %q", name, err, tc.msg)
				}
			}
		})
	}
}

func TestRegistry(t *testing.T) {
	if got := strings.Join(Names(), ","); got != "dcqcn,dcqcn-fastcnp" {
		t.Errorf("Names = %s, want dcqcn,dcqcn-fastcnp", got)
	}
	for _, tc := range []struct {
		name   string
		window int64
	}{
		{"dcqcn", NoWindowCap},
		{"dcqcn-fastcnp", winit100G},
	} {
		a, err := New(tc.name, cfgWith(customParams()))
		if err != nil {
			t.Fatalf("New(%s): %v", tc.name, err)
		}
		if a.Name() != tc.name || a.Rate() != 100*gbps || a.Window() != tc.window || a.NextTimer() != NoTimer {
			t.Errorf("New(%s): name %s rate %v window %d next %v", tc.name, a.Name(), a.Rate(), a.Window(), a.NextTimer())
		}
	}
	_, err := New("timely", cfgWith(customParams()))
	if !errors.Is(err, ErrUnknownAlgorithm) {
		t.Fatalf("New(timely): err = %v, want ErrUnknownAlgorithm", err)
	}
	if !strings.Contains(err.Error(), "dcqcn, dcqcn-fastcnp") {
		t.Errorf("error %q does not list the known names", err)
	}
}

// Bad events are errors wrapping ErrBadEvent or ErrTimeBackwards, and leave
// the state exactly as it was.
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
	p := customParams()
	p.RPGByteReset = 1000
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := mustDCQCN(t, true, cfgWith(p))
			if err := d.OnCNP(winCNP(10*us, 30_000)); err != nil {
				t.Fatal(err)
			}
			before, next := d.State(), d.NextTimer()
			err := apply(d, tc.ev)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), "dcqcn-fastcnp") {
				t.Errorf("error %q does not name the algorithm", err)
			}
			if d.State() != before || d.NextTimer() != next {
				t.Errorf("state changed by a rejected event:\n%+v\n%+v", before, d.State())
			}
			// and the flow still works at the old time
			if err := d.OnTimer(10 * us); err != nil {
				t.Errorf("OnTimer at the last time after a rejected event: %v", err)
			}
		})
	}
}

// The per-event hot path does not allocate, through the interface.
func TestHotPathAllocs(t *testing.T) {
	p, err := DCQCNPreset("nvidia-cx")
	if err != nil {
		t.Fatal(err)
	}
	a, err := New("dcqcn-fastcnp", cfgWith(p))
	if err != nil {
		t.Fatal(err)
	}
	hops := []INTHop{{TS: 1, TxBytes: 2, QLen: 3, LinkRate: 100 * gbps}}
	now := time.Duration(0)
	allocs := testing.AllocsPerRun(1000, func() {
		now += 100 * time.Nanosecond
		_ = a.OnSend(Send{Now: now, Bytes: 1500})
		_ = a.OnAck(Ack{Now: now, Bytes: 1500, RTT: 8 * us, Hops: hops})
		_ = a.OnCNP(winCNP(now, 40_000))
		_ = a.OnTimer(now)
		_, _, _ = a.Rate(), a.Window(), a.NextTimer()
	})
	if allocs != 0 {
		t.Errorf("allocs per event round = %v, want 0", allocs)
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
