package daemon

import (
	"context"
	"reflect"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/target/pipeline"
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

// TestCounterPolling: PFC frames and dropped packets on fastcnp-switch show
// up, after a counter poll, as Prometheus counters, as a structured log
// line per port (warning for drops) and as "counters" events.
func TestCounterPolling(t *testing.T) {
	s1, s2, state := twoSwitches(t)
	logger, hook := logtest.NewNullLogger()
	d := startDaemon(t, testConfig(t, state, s1, s2), func(o *Options) { o.Logger = logger })
	waitInSync(t, d.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	r := d.byName["s1"]
	ctx := context.Background()
	if err := r.pollCounters(ctx); err != nil { // baseline
		t.Fatal(err)
	}
	events, cancel := d.Subscribe(64)
	defer cancel()
	hook.Reset()

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
		if c.GetSize() == pipeline.NumQueues {
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
