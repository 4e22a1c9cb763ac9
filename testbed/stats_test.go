package testbed

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/host/agent/live"
	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/model/tm"
	softswitch "github.com/fastcnp/fastcnp/softswitch"
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
	if fair := payloadEff * 1e8; math.Abs(v.ShareOfFair-5e7/fair) > 1e-9 || math.Abs(v.FairShareBps-fair) > 1e-3 {
		t.Errorf("fair share %v, share %v; want %v and %v", v.FairShareBps, v.ShareOfFair, fair, 5e7/fair)
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

// TestFlowFilesReadByAgent: the flow file of every shipped topology is
// what fastcnp-host reads (live.ParseFlowFile with unknown fields refused,
// live.Expand), and the INC workers of a message share its receiver QP and
// are ranked in topology order.
func TestFlowFilesReadByAgent(t *testing.T) {
	files, err := filepath.Glob("topologies/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no topologies: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			topo := loadTopo(t, filepath.Base(file))
			path := filepath.Join(t.TempDir(), "flows.json")
			if err := writeFlowFile(path, topo, topo.Params().Duration); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			fl, err := live.ParseFlowFile(b)
			if err != nil {
				t.Fatal(err)
			}
			ex, err := live.Expand(fl)
			if err != nil {
				t.Fatal(err)
			}
			if len(ex) != len(topo.Flows) {
				t.Fatalf("%d flows expanded, want %d", len(ex), len(topo.Flows))
			}
		})
	}
	topo := loadTopo(t, "s4-inc.json")
	es := topo.flowEntries(3 * time.Second)
	for i, e := range es {
		// Every flow of group 1 targets the receiver QP of its first flow.
		msg, rank := i/3, i%3
		if e.INC == nil || e.INC.Rank != uint8(rank) || e.INC.Workers != 3 || e.INC.Message != uint16(msg+1) ||
			e.DstQPN != 0x200 || e.SrcQPN != uint32(0x100+i) || e.Size != "" || e.Duration != "" {
			t.Errorf("entry %d = %+v inc %+v", i, e, e.INC)
		}
	}
}

// TestProcArgv: the niceness applies inside a namespace too (it used to
// be dropped there, so no switch or agent ran at the documented -10).
func TestProcArgv(t *testing.T) {
	argv := []string{"/bin/fastcnp-switch", "--device-id", "1"}
	nice, ip := niceTool(), ipTool()
	cases := []struct {
		ns   string
		nice int
		want []string
	}{
		{"", 0, argv},
		{"", -10, append([]string{nice, "-n", "-10"}, argv...)},
		{"fcnp-1-fabric", 0, append([]string{ip, "netns", "exec", "fcnp-1-fabric"}, argv...)},
		{"fcnp-1-h1", -10, append([]string{ip, "netns", "exec", "fcnp-1-h1", nice, "-n", "-10"}, argv...)},
	}
	for _, tc := range cases {
		if got := procArgv(tc.ns, argv, tc.nice); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("procArgv(%q, nice %d) = %q, want %q", tc.ns, tc.nice, got, tc.want)
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

// TestCollectOnCommonClock: sized flows of the 4-to-1 incast whose agents
// started at different times: sample times move onto the run's clock, the
// makespan is the last completion minus the first due start, each flow gets
// its fluid ideal and slowdown, and the link check passes for a physically
// possible run and fails for one that delivered more than the receiver's
// link carries in the span.
func TestCollectOnCommonClock(t *testing.T) {
	const s0 = int64(1_795_000_000_000_000_000) // run start, Unix ns
	const ms = int64(time.Millisecond)
	topo := loadTopo(t, "s2-incast-4.json")
	// Flow -> (size, FCT ms); every flow is due at s0 + 500 ms.
	type fl struct {
		src   string
		bytes int64
		fct   int64 // ms
	}
	flows := map[string]fl{"h1-r": {"h1", 2_000_000, 470}, "h2-r": {"h2", 2_000_000, 480}, "h3-r": {"h3", 1_500_000, 400}, "h4-r": {"h4", 50_000, 40}}
	write := func(t *testing.T, dir string, lastArrivalAt func(f fl) int64) {
		lines := map[string]string{}
		for name, f := range flows {
			// Each sender's agent started 100 ms * its number before s0.
			epoch := s0 - int64(f.src[1]-'0')*100*ms
			start := s0 + 500*ms
			lines[f.src] += fmt.Sprintf(`{"type":"start","t_s":0,"epoch_unix_ns":%d,"start_at_unix_ns":%d}
{"type":"sample","t_s":%g,"flow":%q,"role":"sender","rate_bps":1e7,"cc_rate_bps":1e8}
{"type":"summary","t_s":9,"flow":%q,"role":"sender","done":true,"fct_us":%d,"start_unix_ns":%d,"end_unix_ns":%d,"start_late_us":%d}
`, epoch, s0, float64(start+10*ms-epoch)/1e9, name, name, f.fct*1000, start, start+f.fct*ms, 100*int(f.src[1]-'0'))
			lines["r"] += fmt.Sprintf(`{"type":"summary","t_s":9,"flow":%q,"role":"receiver","recv":{"rate_bps":1,"bytes":%d,"first_unix_ns":%d,"last_unix_ns":%d}}
`, name, f.bytes, start+ms, lastArrivalAt(f))
		}
		lines["r"] = fmt.Sprintf(`{"type":"start","t_s":0,"epoch_unix_ns":%d}`+"\n", s0-50*ms) + lines["r"]
		for _, h := range topo.HostNames() {
			if err := os.WriteFile(filepath.Join(dir, h+".jsonl"), []byte(lines[h]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("possible", func(t *testing.T) {
		dir := t.TempDir()
		// Last arrival 1 ms before the sender's completion.
		write(t, dir, func(f fl) int64 { return s0 + 500*ms + f.fct*ms - ms })
		res := &Result{Topology: topo.Name, Mode: config.ModeFastCNP, Started: time.Unix(0, s0)}
		if err := collectFlows(res, topo, dir, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		// First due start s0+500ms, last completion h2-r at +480 ms.
		if res.MakespanMs != 480 {
			t.Errorf("makespan %v ms, want 480", res.MakespanMs)
		}
		if want := 444 / payloadEff; math.Abs(res.IdealMakespanMs-want) > 1e-6 {
			t.Errorf("ideal makespan %v ms, want %v", res.IdealMakespanMs, want)
		}
		if res.MaxStartLateMs != 0.4 {
			t.Errorf("max start lateness %v ms, want 0.4", res.MaxStartLateMs)
		}
		for _, f := range res.Flows {
			ideal := map[string]float64{"h1-r": 444, "h2-r": 444, "h3-r": 364, "h4-r": 16}[f.Name] / payloadEff
			// (IdealFCTs rounds to the nanosecond.)
			if math.Abs(f.IdealFCTMs-ideal) > 1e-6 || math.Abs(f.Slowdown/(float64(flows[f.Name].fct)/ideal)-1) > 1e-6 ||
				math.Abs(f.FairShareBps/(float64(flows[f.Name].bytes)*8/(ideal/1e3))-1) > 1e-6 {
				t.Errorf("%s: ideal %v ms, slowdown %v, reference %v b/s; want ideal %v ms", f.Name, f.IdealFCTMs, f.Slowdown, f.FairShareBps, ideal)
			}
			// The sender sample at its agent's t_s = (due + 10 ms - epoch) is
			// at 0.51 s of the run.
			if len(f.Series) != 1 || math.Abs(f.Series[0].T-0.51) > 1e-9 {
				t.Errorf("%s: series %+v, want one point at 0.51 s", f.Name, f.Series)
			}
		}
		if err := res.CheckPhysical(); err != nil {
			t.Error(err)
		}
		var rx *LinkUse
		for i := range res.Links {
			if res.Links[i].Link == "s1-p5>r" {
				rx = &res.Links[i]
			}
		}
		// 5.55 MB from +500 ms to +479 ms later: 44.4 Mbit in 479 ms of
		// 98.13 Mb/s = 94.5 % of the link.
		if rx == nil || rx.Bytes != 5_550_000 || math.Abs(rx.SpanMs-479) > 1e-9 || math.Abs(rx.Use-44.4e6/(100e6*payloadEff*0.479)) > 1e-9 {
			t.Errorf("receiver link %+v", rx)
		}
		s := res.Summary()
		if s.MakespanMs != 480 || s.MaxFCTMs != 480 || s.Violations != 0 || s.MaxLinkUseLink != "s1-p5>r" {
			t.Errorf("summary %+v", s)
		}
		var md bytes.Buffer
		if err := WriteSummaryMarkdown(&md, []*Result{res}); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"| time to finish all: measured / fluid ideal (ms) | 480 / 452 |", "| FCT mean / max (ms) | 348 / 480 |", "/ 0 |"} {
			if !strings.Contains(md.String(), want) {
				t.Errorf("summary lacks %q:\n%s", want, md.String())
			}
		}
	})
	t.Run("impossible", func(t *testing.T) {
		dir := t.TempDir()
		// Every byte arrived within 300 ms of the start: 44.4 Mbit in
		// 300 ms is 148 Mb/s through a 100 Mb/s port.
		write(t, dir, func(f fl) int64 { return s0 + 800*ms })
		res := &Result{Topology: topo.Name, Mode: config.ModeFastCNP, Started: time.Unix(0, s0)}
		if err := collectFlows(res, topo, dir, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		err := res.CheckPhysical()
		if err == nil || !strings.Contains(err.Error(), "s1-p5>r") {
			t.Fatalf("CheckPhysical = %v, want a violation on s1-p5>r", err)
		}
		if s := res.Summary(); s.Violations != 1 {
			t.Errorf("violations %d, want 1 (only the receiver's link)", s.Violations)
		}
	})
}

// TestCollectINC: the destination's "inc" records become the run's INC
// messages, with the workers whose flows completed.
func TestCollectINC(t *testing.T) {
	topo := loadTopo(t, "s4-inc.json")
	dir := t.TempDir()
	lines := map[string]string{
		"r": `{"type":"inc","t_s":3,"inc":{"group":1,"message":1,"offsets":256,"results":257,"correct":256,"wrong":0,"duplicates":1,"bad_offset":0,"complete":true}}
{"type":"inc","t_s":3,"inc":{"group":1,"message":2,"offsets":256,"results":250,"correct":249,"wrong":1,"duplicates":0,"bad_offset":0,"complete":false}}
`}
	for _, h := range []string{"h1", "h2", "h3"} {
		for _, m := range []string{"m1", "m2"} {
			done := !(m == "m2" && h == "h3")
			lines[h] += fmt.Sprintf(`{"type":"summary","t_s":3,"flow":"%s-%s","role":"sender","done":%v}`+"\n", m, h, done)
		}
	}
	for _, h := range topo.HostNames() {
		if err := os.WriteFile(filepath.Join(dir, h+".jsonl"), []byte(lines[h]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res := &Result{Topology: topo.Name, Mode: config.ModeFastCNP}
	if err := collectFlows(res, topo, dir, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	if len(res.INC) != 2 {
		t.Fatalf("INC = %+v", res.INC)
	}
	m1, m2 := res.INC[0], res.INC[1]
	if m1.Message != 1 || m1.Workers != 3 || m1.WorkersDone != 3 || !m1.Reported || !m1.Check.Complete || m1.Check.Duplicates != 1 || m1.Dst != "r" {
		t.Errorf("message 1 = %+v", m1)
	}
	if m2.Message != 2 || m2.WorkersDone != 2 || m2.Check.Wrong != 1 || m2.Check.Complete {
		t.Errorf("message 2 = %+v", m2)
	}
	for _, f := range res.Flows {
		if !f.INC || f.FairShareBps != 0 || f.ThroughputBps != 0 {
			t.Errorf("INC flow %+v", f)
		}
	}
	if s := res.Summary(); s.INCMessages != 2 || s.INCComplete != 1 || s.INCCorrect != 505 || s.INCWrong != 1 || s.INCDuplicates != 1 {
		t.Errorf("summary %+v", s)
	}
}
