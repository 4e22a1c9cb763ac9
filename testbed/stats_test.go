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
{"type":"summary","t_s":9,"flow":"victim","role":"sender","cnp_switch":3,"cnp_np":4,"retransmits":5,"timeouts":1,"done":false,"rtt":{"count":2,"mean_us":900,"p99_us":1500,"max_us":1600}}
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
	res := &Result{Topology: topo.Name, Mode: config.ModeFastCNP}
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
		v.Retransmits != 5 || v.Timeouts != 1 || v.RTTP99Us != 1500 {
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
	if sum.RTTP99Us != 1500 || sum.RTTMaxUs != 1600 || sum.Sized != 0 || sum.MeanRateBps != 5e7/4 {
		t.Errorf("summary = %+v", sum)
	}
	var sm bytes.Buffer
	if err := WriteSummaryMarkdown(&sm, runs); err != nil || !strings.Contains(sm.String(), "900 / 1500 / 1600") {
		t.Errorf("summary markdown (%v):\n%s", err, sm.String())
	}
	if n := strings.Count(csv.String(), "\n"); n != 1+2*len(topo.Flows) {
		t.Errorf("csv has %d lines, want %d", n, 1+2*len(topo.Flows))
	}
}

func TestSwitchCounters(t *testing.T) {
	var d softswitch.Dump
	d.Ports = []softswitch.PortDump{{Num: 1, TMIndex: 0, TxBytes: 10}, {Num: 5, TMIndex: 1}}
	d.TM.Ports = make([]tm.PortStats, 3)
	d.TM.Ports[0].Ingress[3] = tm.IngressStats{PFCTxXoff: 2, PFCTxRefresh: 1, PFCTxXon: 2, DroppedPkts: 4, HeadroomReserved: 1}
	d.TM.Ports[0].Egress[3] = tm.QueueStats{LosslessDroppedPkts: 4, DroppedPkts: 4, QueueHighWater: 900}
	d.TM.Ports[1].Egress[3] = tm.QueueStats{PFCRxXoff: 7, PausedNs: 2e6, QueueHighWater: 3000}
	d.TM.Ports[1].Ingress[3] = tm.IngressStats{DroppedPkts: 1, HeadroomReserved: 1}
	d.Pipeline = map[string][]pipeline.CounterValue{
		ctrSwitchCNP: {{Index: 1, Packets: 11}},
		ctrECNMarked: {{Index: 5, Packets: 13}},
		ctrDropped:   {{Index: 5, Packets: 2}},
	}
	peers := map[uint16]Endpoint{1: {Node: "h1"}, 5: {Node: "s2", Port: 3}}
	sc := switchCounters("s1", &d, peers)
	want := SwitchCounters{Name: "s1", PauseTx: 3, PauseRx: 7, SwitchCNPs: 11, ECNMarks: 13, Drops: 4, LosslessDrops: 4,
		NoRouteDrops: 2, HostEdgeLosslessDrops: 4, FabricLosslessDrops: 1}
	got := sc
	got.Ports = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("switchCounters = %+v, want %+v", got, want)
	}
	if p := sc.Ports[1]; p.Peer != "s2-p3" || p.PausedMs != 2 || p.QueueHighWater != 3000 {
		t.Errorf("port 5 = %+v", p)
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
