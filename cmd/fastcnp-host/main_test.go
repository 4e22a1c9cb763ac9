package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/host/agent"
	"github.com/fastcnp/fastcnp/host/agent/live"
	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/wire"
)

func TestParseArgs(t *testing.T) {
	base := []string{"--iface", "eth0", "--ip", "10.0.0.1", "--mac", "02:00:00:00:00:01"}
	dir := t.TempDir()
	file := filepath.Join(dir, "flows.yaml")
	if err := os.WriteFile(file, []byte("flows:\n  - {src: 10.0.0.1, dst: 10.0.0.2, dst_mac: 02:00:00:00:00:02, src_qpn: 1, dst_qpn: 2, size: 1MB}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	keyFile, openKey, badKey := filepath.Join(dir, "key"), filepath.Join(dir, "open-key"), filepath.Join(dir, "bad-key")
	for f, c := range map[string]struct {
		body string
		mode os.FileMode
	}{keyFile: {"7 68312d616e6e6f756e63656d656e742d6b65792d30313233343536373839616200 # h1\n", 0o600},
		openKey: {"7 68312d616e6e6f756e63656d656e742d6b65792d30313233343536373839616200\n", 0o644},
		badKey:  {"7\n", 0o600}} {
		if err := os.WriteFile(f, []byte(c.body), c.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(f, c.mode); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		args  []string
		want  string // error substring; "" = ok
		check func(t *testing.T, o options)
	}{
		{"announcement key", append(base, "--flows", file, "--announce-key", keyFile), "",
			func(t *testing.T, o options) {
				if k := o.cfg.AnnounceKey; k == nil || k.ID != 7 || len(k.Secret) != 33 || len(o.warnings) != 0 {
					t.Fatalf("key %+v, warnings %q", k, o.warnings)
				}
			}},
		{"announcement key others may read", append(base, "--flows", file, "--announce-key", openKey), "",
			func(t *testing.T, o options) {
				if len(o.warnings) != 1 || !strings.Contains(o.warnings[0], "mode 0644") {
					t.Fatalf("warnings %q", o.warnings)
				}
			}},
		{"bad announcement key", append(base, "--flows", file, "--announce-key", badKey), "--announce-key " + badKey + ": line 1: want \"ID KEY\"", nil},
		{"missing announcement key", append(base, "--flows", file, "--announce-key", filepath.Join(dir, "none")), "--announce-key: open", nil},
		{"flow with peer", append(base, "--peer", "10.0.0.2,02:00:00:00:00:02", "--flow", "src_qpn=0x10,dst_qpn=0x20,size=1MB",
			"--algo", "dcqcn", "--params", "paper2015", "--line-rate", "10Gb/s", "--mode", "sender", "--announce-port", "5000"), "",
			func(t *testing.T, o options) {
				c := o.cfg
				if c.Algo != "dcqcn" || c.CC.DCQCN.Set != "paper2015" || c.CC.LineRate != 10e9 || c.Mode != live.ModeSender || c.AnnouncePort != 5000 {
					t.Fatalf("cfg %+v", c)
				}
				f := c.Flows[0]
				if f.Src != "10.0.0.1" || f.Dst != "10.0.0.2" || f.DstMAC != "02:00:00:00:00:02" || f.SrcQPN != 0x10 {
					t.Fatalf("flow %+v", f)
				}
			}},
		{"flows file, gateway, cnp interval", append(base, "--flows", file, "--gateway-mac", "02:00:00:00:00:fe", "--cnp-interval", "50us", "--rto", "5ms"), "",
			func(t *testing.T, o options) {
				if o.cfg.GatewayMAC != (wire.MAC{2, 0, 0, 0, 0, 0xfe}) || o.cfg.CC.DCQCN.CNPInterval != 50*time.Microsecond ||
					o.cfg.Sender.RTO != 5*time.Millisecond || len(o.cfg.Flows) != 1 || o.cfg.AnnouncePort != 4792 {
					t.Fatalf("cfg %+v", o.cfg)
				}
			}},
		{"cc scale", append(base, "--flows", file, "--params", "nvidia-cx", "--cc-scale", "1000", "--cnp-interval", "1ms"), "",
			func(t *testing.T, o options) {
				d := o.cfg.CC.DCQCN
				if d.RPGTimeReset != 300*time.Millisecond || d.AI != 5e3 || d.CNPInterval != time.Millisecond || d.RPGByteReset != 32767 {
					t.Fatalf("scaled DCQCN %+v (--cnp-interval applies after the scale)", d)
				}
			}},
		{"bad cc scale", append(base, "--flows", file, "--cc-scale", "0"), "--cc-scale", nil},
		{"window rule by default aimd", append(base, "--flows", file), "",
			func(t *testing.T, o options) {
				if o.cfg.CC.WindowRule != cc.WindowRuleAIMD {
					t.Fatalf("window rule %q", o.cfg.CC.WindowRule)
				}
			}},
		{"window rule spec01", append(base, "--flows", file, "--window-rule", "spec01"), "",
			func(t *testing.T, o options) {
				if o.cfg.CC.WindowRule != cc.WindowRuleSpec01 {
					t.Fatalf("window rule %q", o.cfg.CC.WindowRule)
				}
			}},
		{"bad window rule", append(base, "--flows", file, "--window-rule", "mimd"), "--window-rule \"mimd\"", nil},
		{"timely default set", append(base, "--flows", file, "--algo", "timely"), "",
			func(t *testing.T, o options) {
				if o.cfg.Algo != "timely" || o.cfg.CC.TIMELY.Set != "hpcc-sim" {
					t.Fatalf("algo %s, TIMELY %+v", o.cfg.Algo, o.cfg.CC.TIMELY)
				}
			}},
		{"timely paper, scaled", append(base, "--flows", file, "--algo", "timely", "--algo-params", "paper2015", "--cc-scale", "10"), "",
			func(t *testing.T, o options) {
				if p := o.cfg.CC.TIMELY; p.Set != "paper2015 x10" || p.TLow != 500*time.Microsecond {
					t.Fatalf("TIMELY %+v, want paper2015 with T_low 50us x 10", p)
				}
			}},
		{"dctcp", append(base, "--flows", file, "--algo", "dctcp", "--algo-params", "spec03"), "",
			func(t *testing.T, o options) {
				if o.cfg.CC.DCTCP.Set != "spec03" {
					t.Fatalf("DCTCP %+v", o.cfg.CC.DCTCP)
				}
			}},
		{"hpcc", append(base, "--flows", file, "--algo", "hpcc"), "",
			func(t *testing.T, o options) {
				if o.cfg.CC.HPCC.Set != "hpcc-sim" {
					t.Fatalf("HPCC %+v", o.cfg.CC.HPCC)
				}
			}},
		{"lstm-pid default set, scaled", append(base, "--flows", file, "--algo", "lstm-pid-rttch-win", "--start-rate", "100Mb/s", "--cc-scale", "10"), "",
			func(t *testing.T, o options) {
				if p := o.cfg.CC.LSTMPID; p.Set != "thesis x10" || p.Target != 50*time.Microsecond || p.MinRate != 1e8 {
					t.Fatalf("LSTM+PID %+v, want thesis with the target x 10", p)
				}
			}},
		{"rtt target", append(base, "--flows", file, "--cc", "lstm-pid", "--rtt-target", "12ms"), "",
			func(t *testing.T, o options) {
				if p := o.cfg.CC.LSTMPID; p.Target != 12*time.Millisecond || p.Set != "thesis target 12ms" {
					t.Fatalf("LSTM+PID %+v", p)
				}
			}},
		{"rtt target for timely", append(base, "--flows", file, "--cc", "timely", "--rtt-target", "12ms"), "LSTM+PID family", nil},
		{"bad rtt target", append(base, "--flows", file, "--cc", "pid", "--rtt-target", "soon"), "--rtt-target", nil},
		{"unknown algo set", append(base, "--flows", file, "--algo", "hpcc", "--algo-params", "nope"), "--cc-params nope", nil},
		{"algo params with dcqcn", append(base, "--flows", file, "--algo", "dcqcn", "--algo-params", "hpcc-sim"), "--cc-params is for", nil},
		{"--cc and --cc-params", append(base, "--flows", file, "--cc", "timely", "--cc-params", "paper2015"), "",
			func(t *testing.T, o options) {
				if o.cfg.Algo != "timely" || o.cfg.CC.TIMELY.Set != "paper2015" {
					t.Fatalf("algo %s, TIMELY %+v", o.cfg.Algo, o.cfg.CC.TIMELY)
				}
			}},
		{"--cc and --algo agree", append(base, "--flows", file, "--cc", "dctcp", "--algo", "dctcp"), "",
			func(t *testing.T, o options) {
				if o.cfg.Algo != "dctcp" || o.cfg.CC.DCTCP.Set != "hpcc-sim" {
					t.Fatalf("algo %s, DCTCP %+v", o.cfg.Algo, o.cfg.CC.DCTCP)
				}
			}},
		{"--cc and --algo disagree", append(base, "--flows", file, "--cc", "dctcp", "--algo", "hpcc"), "disagree", nil},
		{"default algorithm", append(base, "--flows", file), "",
			func(t *testing.T, o options) {
				if o.cfg.Algo != "dcqcn-fastcnp" {
					t.Fatalf("algo %s", o.cfg.Algo)
				}
			}},
		{"ack every: the algorithm's by default", append(base, "--flows", file, "--cc", "timely"), "",
			func(t *testing.T, o options) {
				if o.cfg.Sender.AckEvery != 0 {
					t.Fatalf("ack every %d, want 0 (the agent picks the algorithm's)", o.cfg.Sender.AckEvery)
				}
			}},
		{"ack every given", append(base, "--flows", file, "--cc", "timely", "--ack-every", "4"), "",
			func(t *testing.T, o options) {
				if o.cfg.Sender.AckEvery != 4 {
					t.Fatalf("ack every %d", o.cfg.Sender.AckEvery)
				}
			}},
		{"bad ack every", append(base, "--flows", file, "--ack-every", "-1"), "--ack-every -1", nil},
		{"burst time", append(base, "--flows", file, "--burst-time", "2ms"), "",
			func(t *testing.T, o options) {
				if o.cfg.Sender.BurstTime != 2*time.Millisecond {
					t.Fatalf("burst time %v", o.cfg.Sender.BurstTime)
				}
			}},
		{"bad burst time", append(base, "--flows", file, "--burst-time", "soon"), "--burst-time", nil},
		{"start at RFC 3339", append(base, "--flows", file, "--start-at", "2026-11-22T08:36:00.5Z"), "",
			func(t *testing.T, o options) {
				if want := time.Date(2026, 11, 22, 8, 36, 0, 500_000_000, time.UTC); !o.cfg.StartAt.Equal(want) {
					t.Fatalf("start at %v, want %v", o.cfg.StartAt, want)
				}
			}},
		{"start at Unix ns", append(base, "--flows", file, "--start-at", "1795336560500000001"), "",
			func(t *testing.T, o options) {
				if got := o.cfg.StartAt.UnixNano(); got != 1795336560500000001 {
					t.Fatalf("start at %d ns", got)
				}
			}},
		{"no start at", append(base, "--flows", file), "",
			func(t *testing.T, o options) {
				if !o.cfg.StartAt.IsZero() {
					t.Fatalf("start at %v without the flag", o.cfg.StartAt)
				}
			}},
		{"bad start at", append(base, "--flows", file, "--start-at", "tomorrow"), "--start-at", nil},
		{"negative start at", append(base, "--flows", file, "--start-at", "-5"), "--start-at", nil},
		{"no iface", []string{"--ip", "10.0.0.1"}, "--iface is required", nil},
		{"no ip", []string{"--iface", "x"}, "--ip is required", nil},
		{"bad ip", []string{"--iface", "x", "--ip", "300.1.1.1", "--mac", "02:00:00:00:00:01"}, "--ip", nil},
		{"bad mac", []string{"--iface", "x", "--ip", "10.0.0.1", "--mac", "zz"}, "--mac", nil},
		{"no flows", base, "no flows", nil},
		{"flow without peer", append(base, "--flow", "src_qpn=1,dst_qpn=2,size=1"), "needs --peer", nil},
		{"bad algo", append(base, "--flows", file, "--algo", "reno"), "--cc reno", nil},
		{"bad params", append(base, "--flows", file, "--params", "fast"), "--params", nil},
		{"bad rate", append(base, "--flows", file, "--line-rate", "fast"), "--line-rate", nil},
		{"window below MTU", append(base, "--flows", file, "--line-rate", "10Mb/s"), "below one MTU", nil},
		{"bad mode", append(base, "--flows", file, "--mode", "relay"), "--mode", nil},
		{"bad announce port", append(base, "--flows", file, "--announce-port", "4791"), "--announce-port", nil},
		{"defaults: refreshes every 10s, ICRC checked", append(base, "--flows", file), "",
			func(t *testing.T, o options) {
				if o.cfg.AnnounceInterval != agent.DefaultAnnounceInterval || o.cfg.NoICRCCheck {
					t.Fatalf("announce interval %v, no ICRC check %v", o.cfg.AnnounceInterval, o.cfg.NoICRCCheck)
				}
			}},
		{"announce interval, no ICRC check", append(base, "--flows", file, "--announce-interval", "500ms", "--no-icrc-check"), "",
			func(t *testing.T, o options) {
				if o.cfg.AnnounceInterval != 500*time.Millisecond || !o.cfg.NoICRCCheck {
					t.Fatalf("announce interval %v, no ICRC check %v", o.cfg.AnnounceInterval, o.cfg.NoICRCCheck)
				}
			}},
		{"bad announce interval", append(base, "--flows", file, "--announce-interval", "often"), "--announce-interval", nil},
		{"zero announce interval", append(base, "--flows", file, "--announce-interval", "0"), "--announce-interval 0: must be positive", nil},
		{"missing file", append(base, "--flows", filepath.Join(dir, "nope")), "--flows", nil},
		{"bad flow spec", append(base, "--flow", "dst=10.0.0.2,size=big"), "size", nil},
		{"bad log level", append(base, "--flows", file, "--log-level", "loud"), "--log-level", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseArgs(tc.args, io.Discard)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				tc.check(t, o)
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}
