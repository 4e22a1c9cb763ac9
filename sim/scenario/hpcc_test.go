package scenario

import (
	"strings"
	"testing"
	"time"

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
	// CC_MODE 1 without FASTCNP_MODE is dcqcn; no DCQCN key: the set as is.
	cfg, err = FromHPCC(parseConfig(t, "CC_MODE 1\n"+maps), twoRateTopo(), nil)
	if err != nil || cfg.Mode != network.ModeDCQCN || cfg.DCQCN.Set != "" || cfg.DCQCNSet != "hpcc-sim" || cfg.AckEvery != 1 {
		t.Errorf("CC_MODE 1: %v %+v", err, cfg)
	}
	if _, err := network.New(cfg); err != nil {
		t.Errorf("the configuration does not build: %v", err)
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
