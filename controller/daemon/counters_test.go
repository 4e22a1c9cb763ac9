package daemon

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/wire"
)

func TestCounterDeltas(t *testing.T) {
	cell := func(p int64) p4rt.CounterCell { return p4rt.CounterCell{Packets: p, Bytes: 64 * p} }
	tests := []struct {
		name      string
		prev, cur portCounters
		want      map[string]int64
	}{
		{"increase", portCounters{"dropped": cell(3)}, portCounters{"dropped": cell(5)}, map[string]int64{"dropped": 2}},
		{"unchanged", portCounters{"dropped": cell(3)}, portCounters{"dropped": cell(3)}, map[string]int64{}},
		{"reset by a switch restart", portCounters{"dropped": cell(9)}, portCounters{"dropped": cell(4)}, map[string]int64{"dropped": 4}},
		{"new counter", nil, portCounters{"ecn_marked": cell(7), "dropped": cell(0)}, map[string]int64{"ecn_marked": 7}},
		{"several", portCounters{"a": cell(1), "b": cell(1)}, portCounters{"a": cell(1), "b": cell(2)}, map[string]int64{"b": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := counterDeltas(tt.prev, tt.cur); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// gathered returns the value of the metric with the given labels, and
// whether it exists.
func gathered(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue metric
				}
			}
			return m.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

// startPolledDaemon starts fastcnpd on two in-process switches, takes a
// baseline counter poll of s1, and returns s1, the daemon, s1's runner, a
// log hook reset after the baseline and an event subscription.
func startPolledDaemon(t *testing.T) (*testSwitch, *testDaemon, *switchRunner, *logtest.Hook, <-chan Event) {
	t.Helper()
	s1, s2, state := twoSwitches(t)
	logger, hook := logtest.NewNullLogger()
	d := startDaemon(t, testConfig(t, state, s1, s2), func(o *Options) { o.Logger = logger })
	waitInSync(t, d.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	r := d.byName["s1"]
	if err := r.pollCounters(context.Background()); err != nil { // baseline
		t.Fatal(err)
	}
	events, cancel := d.Subscribe(64)
	t.Cleanup(cancel)
	hook.Reset()
	return s1, d, r, hook, events
}

// TestCounterPolling: PFC frames and dropped packets on fastcnp-switch show
// up, after a counter poll, as Prometheus counters, as a structured log
// line per port (warning for drops) and as "counters" events.
func TestCounterPolling(t *testing.T) {
	s1, d, r, hook, events := startPolledDaemon(t)
	ctx := context.Background()

	pfc := make([]byte, 64)
	var quanta [8]uint16
	quanta[3] = 100
	n, err := wire.BuildPFC(pfc, wire.MAC{2, 0, 0, 0, 0, 7}, 1<<3, quanta)
	if err != nil {
		t.Fatal(err)
	}
	// An ARP-typed frame: not IPv4, counted in "dropped".
	arp := make([]byte, 60)
	copy(arp, []byte{2, 0, 0, 0, 1, 2, 2, 0, 0, 0, 0, 8, 0x08, 0x06})
	for _, f := range []struct {
		frame []byte
		port  uint16
	}{{pfc[:n], 1}, {arp, 2}, {arp, 2}} {
		if err := s1.dp.Receive(ctx, f.frame, f.port); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.pollCounters(ctx); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		port, counter string
		packets       float64
		bytes         float64
	}{
		{"1", "pfc_pause_rx", 1, float64(n)},
		{"2", "dropped", 2, 2 * float64(len(arp))},
		{"3", "dropped", 0, 0},
	} {
		labels := map[string]string{"switch": "s1", "port": tt.port, "counter": tt.counter}
		p, ok1 := gathered(t, d.reg, "fastcnp_port_counter_packets_total", labels)
		b, ok2 := gathered(t, d.reg, "fastcnp_port_counter_bytes_total", labels)
		if !ok1 || !ok2 || p != tt.packets || b != tt.bytes {
			t.Errorf("port %s %s: %v packets %v bytes (found %v %v), want %v, %v", tt.port, tt.counter, p, b, ok1, ok2,
				tt.packets, tt.bytes)
		}
	}
	if _, ok := gathered(t, d.reg, "fastcnp_port_counter_packets_total", map[string]string{"switch": "s1", "port": "4"}); ok {
		t.Error("counters exported for port 4, which is not configured")
	}

	// Logs and events, published before pollCounters returned.
	got := map[uint16]map[string]string{}
	for len(events) > 0 {
		if e := <-events; e.Kind == EventCounters && e.Switch == "s1" {
			got[e.Port] = e.Fields
		}
	}
	want := map[uint16]map[string]string{1: {"pfc_pause_rx": "1"}, 2: {"dropped": "2"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("counters events %v, want %v", got, want)
	}
	levels := map[any]logrus.Level{}
	for _, e := range hook.AllEntries() {
		if e.Message == "data-plane counters increased" {
			levels[e.Data["port"]] = e.Level
			if e.Data["port"] == uint16(2) && e.Data["dropped"] != int64(2) {
				t.Errorf("log fields %v", e.Data)
			}
		}
	}
	if levels[uint16(1)] != logrus.InfoLevel || levels[uint16(2)] != logrus.WarnLevel || len(levels) != 2 {
		t.Errorf("log levels by port %v, want port 1 info, port 2 warning", levels)
	}

	// Nothing new: no event.
	if err := r.pollCounters(ctx); err != nil {
		t.Fatal(err)
	}
	for len(events) > 0 {
		if e := <-events; e.Kind == EventCounters {
			t.Errorf("counters event without traffic: %+v", e)
		}
	}

	// While the switch is away its counters are not exported.
	s1.stop()
	waitFor(t, "s1 disconnected", syncTimeout, func() bool { return !r.status().Connected })
	if err := r.pollCounters(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := gathered(t, d.reg, "fastcnp_port_counter_packets_total", map[string]string{"switch": "s1"}); ok {
		t.Error("counters of a disconnected switch still exported")
	}
	if _, ok := gathered(t, d.reg, "fastcnp_port_counter_packets_total", map[string]string{"switch": "s2"}); ok {
		t.Error("counters of s2 exported, which was never polled")
	}
}

// TestPortCounterNames: the counters polled per port include the
// program's port-indexed ones (docs/dataplane.md) and none of those indexed
// by egress queue (port * 8 + priority), whose index is not a port.
func TestPortCounterNames(t *testing.T) {
	info, err := p4src.P4Info()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, n := range portCounterNames(info) {
		got[n] = true
	}
	for _, n := range []string{"FastcnpIngress.pfc_pause_rx", "FastcnpIngress.pfc_resume_rx", "FastcnpIngress.dropped",
		"FastcnpIngress.malformed", "FastcnpIngress.flow_collisions", "FastcnpIngress.announcements",
		"FastcnpIngress.inc_contributions", "FastcnpIngress.inc_duplicates", "FastcnpIngress.inc_results",
		"FastcnpIngress.inc_slot_busy", "FastcnpEgress.switch_cnp_sent", "FastcnpEgress.ecn_marked"} {
		if !got[n] {
			t.Errorf("port counter %s not polled", n)
		}
	}
	queues := 0
	for _, c := range info.GetCounters() {
		if c.GetSize() == p4src.NumQueues {
			queues++
			if got[c.GetPreamble().GetName()] {
				t.Errorf("queue-indexed counter %s polled as a port counter", c.GetPreamble().GetName())
			}
		}
	}
	if queues == 0 {
		t.Log("the program has no queue-indexed counter: nothing to leave out")
	}
}

// queueTraffic runs n RoCEv2 packets (DSCP 26: the lossless priority 3)
// from port 1 to 10.0.0.0/8 (port 3) through s1's ingress and egress, and
// returns their length. The P4 program counts them in queue_enqueued and
// queue_dequeued of queue (3, 3).
func queueTraffic(t *testing.T, s *testSwitch, n int) int {
	t.Helper()
	env := &wire.Envelope{SrcMAC: wire.MAC{2, 0, 0, 0, 0, 9}, DstMAC: wire.MAC{2, 0, 0, 0, 1, 1},
		SrcIP: wire.Addr4{10, 1, 1, 5}, DstIP: wire.Addr4{10, 2, 0, 7}, DSCP: 26, SrcPort: 49152}
	b := make([]byte, 256)
	size, err := wire.BuildRoCE(b, env, &wire.BTH{Opcode: wire.OpRCSendOnly, PKey: wire.DefaultPKey, DestQP: 0x11, PSN: 1}, make([]byte, 100))
	if err != nil {
		t.Fatal(err)
	}
	err = s.dp.Exec(context.Background(), func(p *pipeline.Pipeline) error {
		for i := 0; i < n; i++ {
			var in pipeline.IngressResult
			var eg pipeline.EgressResult
			frame := append([]byte(nil), b[:size]...)
			if err := p.Ingress(frame, 1, int64(i+1)*1000, &in); err != nil {
				return err
			}
			if in.Verdict != pipeline.VerdictForward || in.EgressPort != 3 || in.Meta.Priority != 3 {
				return fmt.Errorf("packet %d: verdict %v port %d priority %d", i, in.Verdict, in.EgressPort, in.Meta.Priority)
			}
			p.OnEnqueue(&in.Meta)
			if err := p.Egress(in.Frame, in.EgressPort, int64(i+1)*1000+500, &in.Meta, &eg); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return size
}

// TestQueueCounters: traffic through fastcnp-switch's pipeline and its
// traffic manager's counts (drops, PFC frames sent) show up per queue
// (port, priority) as Prometheus counters, in the API (Queues) and as logs
// and "counters" events; only configured ports are exported.
func TestQueueCounters(t *testing.T) {
	s1, d, r, hook, events := startPolledDaemon(t)
	ctx := context.Background()

	const n = 5
	size := queueTraffic(t, s1, n)
	// The traffic manager's counts (fastcnp-switch feeds them; BMv2 leaves
	// them at 0): two lossy drops on (3, 0), one lossless drop on (3, 3),
	// an XOFF and an XON sent out of port 1 for priority 3, and counts on
	// port 4, which s1 does not configure.
	err := s1.dp.Exec(ctx, func(p *pipeline.Pipeline) error {
		p.CountQueueDrop(3, 0, 1000)
		p.CountQueueDrop(3, 0, 1000)
		p.CountQueueDrop(3, 3, 1500)
		p.CountPFCSent(1, 3, true, 60)
		p.CountPFCSent(1, 3, false, 60)
		p.CountQueueDrop(4, 0, 100)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.pollCounters(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		port, prio, counter string
		packets, bytes      float64
	}{
		{"3", "3", "queue_enqueued", n, n * float64(size)},
		{"3", "3", "queue_dequeued", n, n * float64(size)},
		{"3", "0", "queue_dropped", 2, 2000},
		{"3", "3", "queue_dropped", 1, 1500},
		{"1", "3", "pfc_xoff_sent", 1, 60},
		{"1", "3", "pfc_xon_sent", 1, 60},
		{"1", "3", "queue_enqueued", 0, 0},
		{"2", "7", "pfc_xon_sent", 0, 0},
	} {
		labels := map[string]string{"switch": "s1", "port": tt.port, "priority": tt.prio, "counter": tt.counter}
		p, ok1 := gathered(t, d.reg, "fastcnp_queue_counter_packets_total", labels)
		b, ok2 := gathered(t, d.reg, "fastcnp_queue_counter_bytes_total", labels)
		if !ok1 || !ok2 || p != tt.packets || b != tt.bytes {
			t.Errorf("queue (%s, %s) %s: %v packets %v bytes (found %v %v), want %v, %v", tt.port, tt.prio, tt.counter,
				p, b, ok1, ok2, tt.packets, tt.bytes)
		}
	}
	if _, ok := gathered(t, d.reg, "fastcnp_queue_counter_packets_total", map[string]string{"switch": "s1", "port": "4"}); ok {
		t.Error("queue counters exported for port 4, which is not configured")
	}
	series := 0
	mfs, _ := d.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "fastcnp_queue_counter_packets_total" {
			series = len(mf.GetMetric())
		}
	}
	if want := 3 * 8 * 5; series != want { // s1: 3 configured ports x 8 priorities x 5 counters
		t.Errorf("%d queue packet series, want %d", series, want)
	}

	// The API reads them live.
	qs, err := d.Queues(ctx, "s1", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 8 {
		t.Fatalf("%d queues of s1 port 3, want 8", len(qs))
	}
	for _, q := range qs {
		if q.Switch != "s1" || q.Port != 3 || q.Lossless != (q.Priority == 3) || len(q.Counters) != 5 {
			t.Errorf("queue %+v", q)
		}
	}
	if c := qs[3].Counters["queue_enqueued"]; c.Packets != n || c.Bytes != int64(n*size) {
		t.Errorf("API queue (3, 3) enqueued %+v, want %d packets", c, n)
	}
	if c := qs[0].Counters["queue_dropped"]; c.Packets != 2 || c.Bytes != 2000 {
		t.Errorf("API queue (3, 0) dropped %+v, want 2 packets", c)
	}
	if all, err := d.Queues(ctx, "", 0); err != nil || len(all) != 6*8 {
		t.Errorf("all queues: %d, %v; want %d", len(all), err, 6*8)
	}
	if q4, err := d.Queues(ctx, "", 4); err != nil || len(q4) != 8 || q4[0].Switch != "s2" {
		t.Errorf("port 4 of every switch: %+v, %v; want s2's 8 queues", q4, err)
	}
	for _, tt := range []struct {
		sw   string
		port uint16
		want error
	}{{"s1", 4, ErrUnknownPort}, {"", 9, ErrUnknownPort}, {"s9", 0, ErrUnknownSwitch}} {
		if _, err := d.Queues(ctx, tt.sw, tt.port); !errors.Is(err, tt.want) {
			t.Errorf("Queues(%q, %d): %v, want %v", tt.sw, tt.port, err, tt.want)
		}
	}

	// Logs and events: drops and XOFF frames, an error for the lossless drop.
	got := map[string]map[string]string{}
	for len(events) > 0 {
		if e := <-events; e.Kind == EventCounters && e.Fields["priority"] != "" {
			got[fmt.Sprintf("%d/%s", e.Port, e.Fields["priority"])] = e.Fields
		}
	}
	want := map[string]map[string]string{
		"3/0": {"priority": "0", "queue_dropped": "2"},
		"3/3": {"priority": "3", "queue_dropped": "1"},
		"1/3": {"priority": "3", "pfc_xoff_sent": "1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("queue counter events %v, want %v", got, want)
	}
	levels := map[string]logrus.Level{}
	for _, e := range hook.AllEntries() {
		if prio, ok := e.Data["priority"]; ok {
			levels[fmt.Sprintf("%v/%v", e.Data["port"], prio)] = e.Level
		}
	}
	if want := map[string]logrus.Level{"3/0": logrus.WarnLevel, "3/3": logrus.ErrorLevel, "1/3": logrus.InfoLevel}; !reflect.DeepEqual(levels, want) {
		t.Errorf("queue log levels %v, want %v", levels, want)
	}

	// While the switch is away nothing is exported, and the API shows the
	// queues without counters.
	s1.stop()
	waitFor(t, "s1 disconnected", syncTimeout, func() bool { return !r.status().Connected })
	if err := r.pollCounters(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := gathered(t, d.reg, "fastcnp_queue_counter_packets_total", map[string]string{"switch": "s1"}); ok {
		t.Error("queue counters of a disconnected switch still exported")
	}
	if qs, err := d.Queues(ctx, "s1", 3); err != nil || len(qs) != 8 || len(qs[0].Counters) != 0 {
		t.Errorf("queues of a disconnected switch: %+v, %v", qs, err)
	}
}

// TestQueueCounterNames: the queue-indexed counters are the five of
// docs/dataplane.md, none of the port-indexed ones.
func TestQueueCounterNames(t *testing.T) {
	info, err := p4src.P4Info()
	if err != nil {
		t.Fatal(err)
	}
	got := queueCounterNames(info)
	want := []string{"FastcnpIngress.queue_enqueued", "FastcnpEgress.queue_dequeued", "FastcnpEgress.queue_dropped",
		"FastcnpIngress.pfc_xoff_sent", "FastcnpIngress.pfc_xon_sent"}
	sort.Strings(got)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("queue counters %v, want %v", got, want)
	}
}
