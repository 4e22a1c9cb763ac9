package hpcc

import (
	"bytes"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// A config as the simulator's run.py writes it for "dcqcn" at 100G.
func TestParseConfigSimulatorFile(t *testing.T) {
	f, err := os.Open("testdata/config_dcqcn.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := ParseConfig("config_dcqcn.txt", f)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"CC_MODE", c.CCMode, 1},
		{"mode name", c.ModeName(), "dcqcn"},
		{"payload", c.PayloadBytes, 1000},
		{"buffer", c.BufferBytes(), uint64(32 << 20)},
		{"RP_TIMER", c.RPTimer, 300.0},
		{"EWMA_GAIN", c.EWMAGain, 1.0 / 256},
		{"RATE_AI", c.RateAIBps, uint64(20e6)},
		{"RATE_HAI", c.RateHAIBps, uint64(200e6)},
		{"MIN_RATE", c.MinRateBps, uint64(1e9)},
		{"HAS_WIN", c.HasWin, false},
		{"ACK_HIGH_PRIO", c.AckHighPrio, true},
		{"ENABLE_PFC (fastcnp, default)", c.EnablePFC, true},
		{"QLEN_MON_END", c.QlenMonEndNs, int64(3e9)},
		{"FCT file", c.FCTOutputFile, "mix/fct_fat_flow_dcqcn.txt"},
		{"where", c.Where("BUFFER_SIZE"), "config_dcqcn.txt:55"},
		{"where unset", c.Where("FASTCNP_MODE"), ""},
	}
	for _, ck := range checks {
		if !reflect.DeepEqual(ck.got, ck.want) {
			t.Errorf("%s = %v, want %v", ck.name, ck.got, ck.want)
		}
	}
	kmin, kmax, pmax, ok := c.ECN(100e9)
	if !ok || kmin != 400000 || kmax != 1600000 || pmax != 0.2 {
		t.Errorf("ECN(100G) = %d %d %v %v", kmin, kmax, pmax, ok)
	}
	if kmin, _, _, ok := c.ECN(400e9); !ok || kmin != 1600000 {
		t.Errorf("ECN(400G) kmin %d %v", kmin, ok)
	}
	if _, _, _, ok := c.ECN(25e9); ok {
		t.Error("ECN(25G) found")
	}
}

func TestConfigRoundTrip(t *testing.T) {
	c := DefaultConfig()
	c.Mode, c.ParamSet, c.EnablePFC = "fastcnp", "hpcc-sim", false
	c.KMinKB[100e9], c.KMaxKB[100e9], c.PMax[100e9] = 400, 1600, 0.2
	c.KMinKB[25e9], c.KMaxKB[25e9], c.PMax[25e9] = 100, 400, 1
	c.RateAIBps, c.UTarget, c.LinkDown = 50e6, 0.9, [3]uint64{10, 320, 340}
	c.FlowFile = "flows/web_0.3.txt"
	for _, cfg := range []*Config{DefaultConfig(), c} {
		var buf bytes.Buffer
		if err := WriteConfig(&buf, cfg); err != nil {
			t.Fatal(err)
		}
		got, err := ParseConfig("rt", bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("%v\n%s", err, buf.String())
		}
		got.where = nil
		if !reflect.DeepEqual(got, cfg) {
			t.Errorf("round trip:\n got %+v\nwant %+v\n%s", got, cfg, buf.String())
		}
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name, in string
		line     int
		msg      string
	}{
		{"unknown key", "CC_MODE 1\nCC_MOD 3\n", 2, "unknown key \"CC_MOD\""},
		{"twice", "CC_MODE 1\n\nCC_MODE 3\n", 3, "CC_MODE set again (first on line 2)"},
		{"no value", "CC_MODE\n", 1, "want one value, got 0"},
		{"two values", "BUFFER_SIZE 32 MB\n", 1, "want one value, got 2"},
		{"bool", "ENABLE_QCN yes\n", 1, "ENABLE_QCN: \"yes\": want 0 or 1"},
		{"payload", "PACKET_PAYLOAD_SIZE 0\n", 1, "out of range"},
		{"rate", "RATE_AI 50Mbit\n", 1, "RATE_AI: rate \"50Mbit\": unknown unit"},
		{"probability", "PMAX_MAP 1 100000000000 1.5\n", 1, "want a probability"},
		{"map count", "KMIN_MAP 2 100000000000 400\n", 1, "declares 2 entries"},
		{"map rate", "KMIN_MAP 1 100G 400\n", 1, "rate \"100G\""},
		{"map duplicate", "KMAX_MAP 2 1 2 1 3\n", 1, "rate 1 listed twice"},
		{"u target", "U_TARGET 1.5\n", 1, "want a number in [0, 1]"},
		{"link down", "LINK_DOWN 0 0\n", 1, "LINK_DOWN"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig("c.txt", strings.NewReader("# a comment\n"+tc.in))
			if err == nil {
				t.Fatal("accepted")
			}
			// The comment line shifts every line by one.
			prefix := "c.txt:" + strconv.Itoa(tc.line+1) + ": "
			if !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q, want prefix %q and %q", err, prefix, tc.msg)
			}
		})
	}
}

func TestConfigClone(t *testing.T) {
	c := DefaultConfig()
	c.KMinKB[1] = 2
	d := c.Clone()
	if !reflect.DeepEqual(c, d) {
		t.Fatal("clone differs")
	}
	d.KMinKB[1], d.Mode = 3, "x"
	if c.KMinKB[1] != 2 || c.Mode != "" {
		t.Error("clone shares state with the original")
	}
}
