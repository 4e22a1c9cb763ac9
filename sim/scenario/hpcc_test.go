package scenario

import (
	"strings"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/sim/hpcc"
	"github.com/fastcnp/fastcnp/sim/network"
)

func parseConfig(t *testing.T, text string) *hpcc.Config {
	t.Helper()
	c, err := hpcc.ParseConfig("params.txt", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func twoRateTopo() *hpcc.Topology {
	return &hpcc.Topology{Nodes: 3, Switches: []int{2}, Links: []hpcc.Link{
		{A: 0, B: 2, RateBps: 100e9, DelayNs: 1000}, {A: 1, B: 2, RateBps: 400e9, DelayNs: 1000}}}
}

const maps = "KMAX_MAP 2 100000000000 1600 400000000000 6400\nKMIN_MAP 2 100000000000 400 400000000000 1600\nPMAX_MAP 2 100000000000 0.2 400000000000 0.1\n"

func TestFromHPCC(t *testing.T) {
	c := parseConfig(t, "FASTCNP_MODE fastcnp-no-pfc-state\nBUFFER_SIZE 8\nENABLE_PFC 0\nPACKET_PAYLOAD_SIZE 1024\nL2_ACK_INTERVAL 4\n"+
		"RP_TIMER 55\nRATE_AI 40Mb/s\nSIMULATOR_STOP_TIME 2.5\n"+maps)
	cfg, err := FromHPCC(c, twoRateTopo(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Mode != network.ModeFastCNPNoPFCState || cfg.Switch.BufferBytes != 8<<20 || cfg.Switch.PFC ||
		cfg.PayloadBytes != 1024 || cfg.AckEvery != 4 || cfg.UntilNs != 2_500_000_000 {
		t.Errorf("config %+v", cfg)
	}
	if r := cfg.Switch.REDByRate[400e9]; r != (network.RED{KminBytes: 1_600_000, KmaxBytes: 6_400_000, Pmax: 0.1}) {
		t.Errorf("RED at 400G %+v", r)
	}
	// The keys the file sets override the named set; the others keep it.
	if p := cfg.DCQCN; p.RPGTimeReset != 55*time.Microsecond || p.AI != 40e6 || p.HAI != 200e6 || !strings.Contains(p.Set, "hpcc-sim") {
		t.Errorf("DCQCN %+v", p)
	}
	// CLAMP_TARGET_RATE 0 (the simulator's Mellanox DCQCN) keeps the target.
	for _, tc := range []struct {
		v    string
		keep bool
	}{{"0", true}, {"1", false}} {
		cfg, err := FromHPCC(parseConfig(t, "CC_MODE 1\nCLAMP_TARGET_RATE "+tc.v+"\n"+maps), twoRateTopo(), nil)
		if err != nil || cfg.DCQCN.KeepTarget != tc.keep || cfg.DCQCN.AI != 20e6 {
			t.Errorf("CLAMP_TARGET_RATE %s: %v, DCQCN %+v", tc.v, err, cfg.DCQCN)
		}
	}
	// CC_MODE 1 without FASTCNP_MODE is dcqcn; no DCQCN key: the set as is.
	cfg, err = FromHPCC(parseConfig(t, "CC_MODE 1\n"+maps), twoRateTopo(), nil)
	if err != nil || cfg.Mode != network.ModeDCQCN || cfg.DCQCN.Set != "" || cfg.DCQCNSet != "hpcc-sim" || cfg.AckEvery != 1 {
		t.Errorf("CC_MODE 1: %v %+v", err, cfg)
	}
	if _, err := network.New(cfg); err != nil {
		t.Errorf("the configuration does not build: %v", err)
	}
}

// In mode hpcc the file's U_TARGET, MI_THRESH, RATE_AI and MIN_RATE replace
// the hpcc-sim set's (run.py writes MI_THRESH 0; the set has 5); without
// them the set is used as is.
func TestFromHPCCTunesHPCC(t *testing.T) {
	preset, err := cc.HPCCPreset("hpcc-sim")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, text string
		want       func(*cc.HPCCParams)
	}{
		{"run.py hp", "CC_MODE 3\nU_TARGET 0.99\nMI_THRESH 0\nRATE_AI 50Mb/s\nMIN_RATE 2000Mb/s\n",
			func(p *cc.HPCCParams) { p.Eta, p.MaxStage, p.AI, p.MinRate = 0.99, 0, 50e6, 2e9 }},
		{"MI_THRESH only", "CC_MODE 3\nMI_THRESH 2\n", func(p *cc.HPCCParams) { p.MaxStage = 2 }},
		{"no HPCC key", "CC_MODE 3\n", nil},
		{"dcqcn ignores them", "CC_MODE 1\nMI_THRESH 0\n", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := FromHPCC(parseConfig(t, tt.text+maps), twoRateTopo(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == nil {
				if cfg.Tune != nil {
					t.Fatal("a tuning without HPCC keys")
				}
				return
			}
			if cfg.Tune == nil {
				t.Fatal("no tuning")
			}
			var got cc.Config
			got.HPCC = preset
			cfg.Tune(&got)
			want := preset
			tt.want(&want)
			want.Set = "hpcc-sim (parameter file)"
			if got.HPCC != want {
				t.Errorf("HPCC %+v, want %+v", got.HPCC, want)
			}
		})
	}
	if _, err := FromHPCC(parseConfig(t, "CC_MODE 3\nU_TARGET 0\n"+maps), twoRateTopo(), nil); err == nil || !strings.Contains(err.Error(), "HPCC keys") {
		t.Errorf("U_TARGET 0: error %v", err)
	}
}

func TestFromHPCCRefuses(t *testing.T) {
	for _, tt := range []struct{ text, want string }{
		{"CC_MODE 10\n" + maps, "mode \"hpcc-pint\""},
		{"ENABLE_QCN 0\n" + maps, "ENABLE_QCN"},
		{"USE_DYNAMIC_PFC_THRESHOLD 0\n" + maps, "dynamic"},
		{"ERROR_RATE_PER_LINK 0.01\n" + maps, "losses"},
		{"KMAX_MAP 1 100000000000 1600\nKMIN_MAP 1 100000000000 400\nPMAX_MAP 1 100000000000 0.2\n", "400000000000"},
		{"PARAM_SET fast\n" + maps, "PARAM_SET"},
		{"EWMA_GAIN 0\n" + maps, "DCQCN"},
	} {
		_, err := FromHPCC(parseConfig(t, tt.text), twoRateTopo(), nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want one about %q", tt.text, err, tt.want)
		}
	}
}
