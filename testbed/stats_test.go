package testbed

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/target/pipeline"
	softswitch "github.com/fastcnp/fastcnp/target/switch"
	"github.com/fastcnp/fastcnp/target/tm"
)

// Lines in the format of host/agent/live.Record.
const senderLines = `{"type":"sample","t_s":0.6,"flow":"victim","role":"sender","rate_bps":9e7,"cc_rate_bps":1e8}
{"type":"sample","t_s":1.6,"flow":"victim","role":"sender","rate_bps":5e7,"cc_rate_bps":5e7}
not json: a log line
{"type":"summary","t_s":9,"flow":"victim","role":"sender","cnp_switch":3,"cnp_np":4,"retransmits":5,"timeouts":1,"done":false,"rtt":{"count":2,"mean_us":900,"p99_us":1500,"max_us":1600},"paused_us":250000,"holds":4,"pause_rx":6}
`

const receiverLines = `{"type":"sample","t_s":0.5,"flow":"victim","role":"receiver","recv":{"rate_bps":1e6,"bytes":10,"ce":0}}
{"type":"sample","t_s":2.0,"flow":"victim","role":"receiver","recv":{"rate_bps":4e7,"bytes":100,"ce":1}}
{"type":"sample","t_s":4.0,"flow":"victim","role":"receiver","recv":{"rate_bps":6e7,"bytes":200,"ce":2}}
{"type":"sample","t_s":8.9,"flow":"victim","role":"receiver","recv":{"rate_bps":5e7,"bytes":300,"ce":3}}
{"type":"summary","t_s":9,"flow":"victim","role":"receiver","recv":{"rate_bps":4.5e7,"bytes":5000000,"ce":7}}
`

func TestCollectFlows(t *testing.T) {
	topo := loadTopo(t, "s1-victim.json")
	dir := t.TempDir()
	for _, h := range topo.HostNames() {
		var content string
		switch h {
		case "h4":
			content = senderLines
		case "h6":
			content = receiverLines
		}
		if err := os.WriteFile(filepath.Join(dir, h+".jsonl"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res := &Result{Topology: topo.Name, Mode: config.ModeFastCNP,
		Switches:   []SwitchCounters{{Name: "s1"}, {Name: "s2"}},
		CPUSeconds: map[string]float64{"s1": 1, "s2": 2, "h1": 0.5, "h6": 0.25, "fastcnpd": 0.125}, LoadAvg: [2]float64{1.5, 2.5}}
	if err := collectFlows(res, topo, dir, 9*time.Second); err != nil {
		t.Fatal(err)
	}
	v := res.Victim()
	if v == nil || v.Name != "victim" {
		t.Fatalf("victim = %+v", v)
	}
	// Flow from 0.5 s to 8.5 s: warm-up 1 s, so the samples at 2.0 and 4.0
	// count (8.9 is after the flow's end).
	if want := 5e7; math.Abs(v.ThroughputBps-want) > 1 {
		t.Errorf("throughput = %v, want %v", v.ThroughputBps, want)
	}
	if math.Abs(v.ShareOfFair-0.5) > 1e-9 || v.FairShareBps != 1e8 {
		t.Errorf("fair share %v, share %v; want 1e8 and 0.5", v.FairShareBps, v.ShareOfFair)
	}
	if v.BytesReceived != 5000000 || v.ECNMarks != 7 || v.CNPsSwitch != 3 || v.CNPsNP != 4 ||
		v.Retransmits != 5 || v.Timeouts != 1 || v.RTTP99Us != 1500 || v.PauseRx != 6 || v.PausedMs != 250 {
		t.Errorf("victim counters = %+v", v)
	}
	if len(v.Series) != 4 || v.Series[0].SendBps != 9e7 || v.Series[1].SendBps != 5e7 || v.Series[2].CCBps != 5e7 {
		t.Errorf("series = %+v", v.Series)
	}
	if f := res.Flow("h1-h5"); f == nil || f.ThroughputBps != 0 || f.FairShareBps == 0 {
		t.Errorf("silent flow = %+v", f)
	}
	var tab, md, csv bytes.Buffer
	runs := []*Result{res, res}
	if err := WriteTable(&tab, runs); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, runs); err != nil {
		t.Fatal(err)
	}
	if err := WriteCSV(&csv, runs); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"table": tab.String(), "markdown": md.String()} {
		if !strings.Contains(out, "victim") || !strings.Contains(out, "50.0") || !strings.Contains(out, "PAUSE frames sent") {
			t.Errorf("%s lacks the victim row or the counters:\n%s", name, out)
		}
	}
	sum := res.Summary()
	if sum.RTTP99Us != 1500 || sum.RTTMaxUs != 1600 || sum.Sized != 0 || sum.MeanRateBps != 5e7/4 || sum.HostPauseRx != 6 ||
		sum.CPUSwitches != 3 || sum.CPUHosts != 0.75 || sum.CPUController != 0.125 || sum.LoadAvg != [2]float64{1.5, 2.5} {
		t.Errorf("summary = %+v", sum)
	}
	var sm bytes.Buffer
	if err := WriteSummaryMarkdown(&sm, runs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"900 / 1500 / 1600", "| PAUSE frames received by hosts | 6 | 6 |", "| 3.0 / 0.8 / 0.1 |", "| 1.5 / 2.5 |"} {
		if !strings.Contains(sm.String(), want) {
			t.Errorf("summary markdown lacks %q:\n%s", want, sm.String())
		}
	}
	if n := strings.Count(csv.String(), "\n"); n != 1+2*len(topo.Flows) {
		t.Errorf("csv has %d lines, want %d", n, 1+2*len(topo.Flows))
	}
}

func TestSwitchCounters(t *testing.T) {
	var d softswitch.Dump
	d.Ports = []softswitch.PortDump{{Num: 1, TMIndex: 0, TxBytes: 10}, {Num: 5, TMIndex: 1}}
	d.TM.Ports = make([]tm.PortStats, 3)
	d.TM.Ports[0].Ingress[3] = tm.IngressStats{PFCTxXoff: 2, PFCTxRefresh: 1, PFCTxXon: 2, DroppedPkts: 4, HeadroomReserved: 1000, HeadroomHighWater: 1000}
	d.TM.Ports[0].Egress[3] = tm.QueueStats{LosslessDroppedPkts: 4, DroppedPkts: 4, QueueHighWater: 900}
	d.TM.Ports[1].Egress[3] = tm.QueueStats{PFCRxXoff: 7, PausedNs: 2e6, QueueHighWater: 3000}
	d.TM.Ports[1].Ingress[3] = tm.IngressStats{DroppedPkts: 1, HeadroomReserved: 3000, HeadroomHighWater: 1001}
	d.Runtime.LateDepartureMaxNs = 2_500_000
	d.Pipeline = map[string][]pipeline.CounterValue{
		ctrSwitchCNP: {{Index: 1, Packets: 11}},
		ctrECNMarked: {{Index: 5, Packets: 13}},
		ctrDropped:   {{Index: 5, Packets: 2}},
	}
	peers := map[uint16]Endpoint{1: {Node: "h1"}, 5: {Node: "s2", Port: 3}}
	sc := switchCounters("s1", &d, peers)
	want := SwitchCounters{Name: "s1", PauseTx: 3, PauseRx: 7, SwitchCNPs: 11, ECNMarks: 13, Drops: 4, LosslessDrops: 4,
		NoRouteDrops: 2, HostEdgeLosslessDrops: 4, FabricLosslessDrops: 1, LateMaxMs: 2.5}
	got := sc
	got.Ports = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("switchCounters = %+v, want %+v", got, want)
	}
	if p := sc.Ports[1]; p.Peer != "s2-p3" || p.PausedMs != 2 || p.QueueHighWater != 3000 || p.HeadroomHighWater != 1001 || p.HeadroomReserved != 3000 {
		t.Errorf("port 5 = %+v", p)
	}
	// Port 1 used all its headroom; port 5 a third of it, rounded up.
	if got := sc.HeadroomPeakPercent(); got != 100 {
		t.Errorf("headroom peak %d%%, want 100", got)
	}
	sc.Ports = sc.Ports[1:]
	if got := sc.HeadroomPeakPercent(); got != 34 {
		t.Errorf("headroom peak of port 5 %d%%, want 34", got)
	}
	q := queueSample(1.5, "s1", &d)
	if q.Switch != "s1" || len(q.Bytes) != 2 {
		t.Errorf("queue sample = %+v", q)
	}
}

func TestFlowEntries(t *testing.T) {
	topo := loadTopo(t, "s2-incast-4.json")
	es := topo.flowEntries(5 * time.Second)
	if len(es) != 4 {
		t.Fatalf("entries = %d", len(es))
	}
	if e := es[0]; e.Src != "10.0.0.1" || e.Dst != "10.0.0.100" || e.Size != "2MB" || e.Duration != "" || e.SrcQPN != 0x100 || e.DstQPN != 0x200 {
		t.Errorf("entry 0 = %+v", e)
	}
	s1 := loadTopo(t, "s1-victim.json")
	for _, e := range s1.flowEntries(5 * time.Second) {
		if e.Duration != "4.5s" { // capped at the run's end
			t.Errorf("%s: duration %q, want 4.5s", e.Name, e.Duration)
		}
	}
}

func TestParseProcStatCPU(t *testing.T) {
	cases := []struct {
		name, line string
		want       time.Duration
		err        bool
	}{
		// utime 250, stime 50 ticks (fields 14, 15) = 3 s.
		{"plain", "1234 (fastcnp-switch) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0 100 0 0", 3 * time.Second, false},
		{"name with spaces and parentheses", "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0", 30 * time.Millisecond, false},
		{"no name", "7 a R 1", 0, true},
		{"short", "7 (x) R 1 2 3", 0, true},
		{"bad number", "7 (x) S 1 1 1 0 -1 0 0 0 0 0 x 2 0 0", 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseProcStatCPU(tc.line)
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("parseProcStatCPU = %v, %v; want %v, error %v", got, err, tc.want, tc.err)
			}
		})
	}
	// The test's own process is readable and has used some CPU.
	if d, err := procCPU(os.Getpid()); err != nil || d < 0 {
		t.Fatalf("procCPU(self) = %v, %v", d, err)
	}
}
