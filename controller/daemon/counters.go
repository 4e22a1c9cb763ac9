package daemon

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/p4src"
	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
)

// portCounters are the data-plane counter cells of one port by short
// counter name ("dropped", "pfc_pause_rx", ...).
type portCounters map[string]p4rt.CounterCell

// Counters whose increase is logged at warning level (packets lost), and at
// info level (PFC activity); the others' changes are logged at debug level.
var (
	counterWarn = map[string]bool{"dropped": true, "malformed": true, "input_dropped": true}
	counterInfo = map[string]bool{"pfc_pause_rx": true, "pfc_resume_rx": true}
)

// counterReadTimeout bounds one counter poll.
const counterReadTimeout = 10 * time.Second

// portCounterNames are the counters of a P4Info indexed by port: those with
// one cell per port (NUM_PORTS). Counters indexed otherwise (by egress
// queue, port * 8 + priority) are left out: their index is not a port.
func portCounterNames(info *p4configv1.P4Info) []string {
	var out []string
	for _, c := range info.GetCounters() {
		if c.GetSize() == p4src.NumPorts {
			out = append(out, c.GetPreamble().GetName())
		}
	}
	return out
}

// queueCounterNames are the counters of a P4Info indexed by egress queue:
// those with one cell per queue (NUM_QUEUES = NUM_PORTS * 8, index port *
// 8 + priority).
func queueCounterNames(info *p4configv1.P4Info) []string {
	var out []string
	for _, c := range info.GetCounters() {
		if c.GetSize() == p4src.NumQueues {
			out = append(out, c.GetPreamble().GetName())
		}
	}
	return out
}

// queueKey names an egress queue.
type queueKey struct {
	port     uint16
	priority uint8
}

// shortCounterName is a counter's name without its control ("dropped" for
// "FastcnpIngress.dropped").
func shortCounterName(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// readQueueCounters reads the named queue counters (queueCounterNames) of
// the given ports' 8 queues each, in one Read of the cells wanted (not the
// 4096 cells of each counter), and returns them by queue.
func readQueueCounters(ctx context.Context, c *p4rt.Client, info *p4rt.Info, names []string, ports map[uint16]bool) (map[queueKey]portCounters, error) {
	out := map[queueKey]portCounters{}
	if len(names) == 0 || len(ports) == 0 {
		return out, nil
	}
	var reqs []*p4v1.Entity
	for _, n := range names {
		for port := range ports {
			for prio := range 8 {
				e, err := info.ReadCounter(n, int64(p4src.QueueIndex(port, uint8(prio))))
				if err != nil {
					return nil, err
				}
				reqs = append(reqs, e)
			}
		}
	}
	err := c.ReadStream(ctx, func(e *p4v1.Entity) error {
		ce := e.GetCounterEntry()
		if ce == nil {
			return fmt.Errorf("asked for counter cells, got %T", e.GetEntity())
		}
		idx := ce.GetIndex().GetIndex()
		k := queueKey{port: uint16(idx / 8), priority: uint8(idx % 8)}
		if idx < 0 || idx >= p4src.NumQueues || !ports[k.port] {
			return nil
		}
		if out[k] == nil {
			out[k] = portCounters{}
		}
		name := info.CounterName(ce.GetCounterId())
		out[k][shortCounterName(name)] = p4rt.CounterCell{Counter: name, Index: idx,
			Bytes: ce.GetData().GetByteCount(), Packets: ce.GetData().GetPacketCount()}
		return nil
	}, reqs...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// readCounters reads the named counters (portCounterNames) of the switch
// and returns the cells of the given ports.
func readCounters(ctx context.Context, c *p4rt.Client, names []string, ports map[uint16]bool) (map[uint16]portCounters, error) {
	var cells []p4rt.CounterCell
	for _, n := range names {
		cs, err := c.ReadCounters(ctx, n, p4rt.AllIndexes)
		if err != nil {
			return nil, err
		}
		cells = append(cells, cs...)
	}
	out := map[uint16]portCounters{}
	for _, cell := range cells {
		if cell.Index < 1 || cell.Index > config.MaxPort || !ports[uint16(cell.Index)] {
			continue
		}
		p := uint16(cell.Index)
		if out[p] == nil {
			out[p] = portCounters{}
		}
		out[p][shortCounterName(cell.Counter)] = cell
	}
	return out, nil
}

// configuredPorts returns the set of the switch's configured ports.
func (r *switchRunner) configuredPorts() map[uint16]bool {
	r.d.mu.RLock()
	defer r.d.mu.RUnlock()
	ports := map[uint16]bool{}
	for _, p := range r.d.cfg.Switch(r.name).Ports {
		ports[p.Number] = true
	}
	return ports
}

// counterLoop polls the switch's counters every interval until ctx ends.
func (r *switchRunner) counterLoop(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			// A poll may take longer than a short interval; the ticker
			// drops the ticks it misses.
			pctx, cancel := context.WithTimeout(ctx, max(interval, counterReadTimeout))
			err := r.pollCounters(pctx)
			cancel()
			switch {
			case err != nil && ctx.Err() == nil && err.Error() != lastErr:
				r.log.WithError(err).Warn("polling counters")
				lastErr = err.Error()
			case err == nil:
				lastErr = ""
			}
		}
	}
}

// pollCounters reads the counters of the configured ports (any role may
// read), keeps them for the Prometheus collector, and logs and publishes
// (event "counters") what increased since the previous poll. The first
// poll through a new client only sets the baseline; a counter below its
// previous value (the switch restarted) counts from zero. While the switch
// is not connected (or cannot be read) nothing is exported.
func (r *switchRunner) pollCounters(ctx context.Context) error {
	r.mu.Lock()
	c := r.client
	r.mu.Unlock()
	if c == nil || !c.Status().Connected {
		r.mu.Lock()
		r.countersLive = false // not exported while the switch is away
		r.mu.Unlock()
		return nil
	}
	ports := r.configuredPorts()
	snap, err := readCounters(ctx, c, r.portCounters, ports)
	var qsnap map[queueKey]portCounters
	if err == nil {
		qsnap, err = readQueueCounters(ctx, c, r.info, r.queueCounters, ports)
	}
	if err != nil {
		r.mu.Lock()
		r.countersLive = false
		r.mu.Unlock()
		return fmt.Errorf("switch %s: reading counters: %w", r.name, err)
	}
	r.mu.Lock()
	prev, qprev, baseline := r.counters, r.queues, r.countersFrom == c
	r.counters, r.queues, r.countersFrom, r.countersLive = snap, qsnap, c, true
	r.mu.Unlock()
	if !baseline {
		return nil
	}
	sorted := make([]uint16, 0, len(snap))
	for p := range snap {
		sorted = append(sorted, p)
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	for _, port := range sorted {
		r.reportCounterDeltas(port, prev[port], snap[port])
	}
	r.reportQueueDeltas(qprev, qsnap)
	return nil
}

// Queue counters whose increase is logged and published: drops (an error
// on the lossless priority, where a drop is a bug; a warning elsewhere)
// and PFC XOFF frames sent (info: the switch pushed back).
var queueCounterLevels = map[string]logrus.Level{"queue_dropped": logrus.WarnLevel, "pfc_xoff_sent": logrus.InfoLevel}

// reportQueueDeltas logs and publishes (event "counters", field priority)
// the queues whose drops or PFC XOFF frames increased since prev.
func (r *switchRunner) reportQueueDeltas(prev, cur map[queueKey]portCounters) {
	r.d.mu.RLock()
	lossless := r.d.cfg.QoS.LosslessPriority
	r.d.mu.RUnlock()
	keys := make([]queueKey, 0, len(cur))
	for k := range cur {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].port != keys[j].port {
			return keys[i].port < keys[j].port
		}
		return keys[i].priority < keys[j].priority
	})
	for _, k := range keys {
		deltas := counterDeltas(prev[k], cur[k])
		lf := logrus.Fields{"port": k.port, "priority": k.priority}
		ev := map[string]string{"priority": strconv.Itoa(int(k.priority))}
		var parts []string
		level := logrus.DebugLevel
		for _, n := range []string{"queue_dropped", "pfc_xoff_sent"} {
			d, ok := deltas[n]
			if !ok {
				continue
			}
			lf[n], ev[n] = d, strconv.FormatInt(d, 10)
			parts = append(parts, fmt.Sprintf("%s +%d", n, d))
			if l := queueCounterLevels[n]; l < level {
				level = l
			}
		}
		if len(parts) == 0 {
			continue
		}
		msg := "queue counters increased"
		if _, drop := deltas["queue_dropped"]; drop && k.priority == lossless {
			level, msg = logrus.ErrorLevel, "packets dropped in the lossless class (a bug: PFC should have prevented it)"
		}
		r.log.WithFields(lf).Log(level, msg)
		r.d.publish(Event{Kind: EventCounters, Switch: r.name, Port: k.port,
			Message: fmt.Sprintf("priority %d: %s", k.priority, strings.Join(parts, ", ")), Fields: ev})
	}
}

// counterDeltas returns the packets each counter of cur gained since prev
// (only the counters that gained). A counter below its previous value was
// reset (the switch restarted) and counts from zero; one absent from prev
// counts from zero too.
func counterDeltas(prev, cur portCounters) map[string]int64 {
	out := map[string]int64{}
	for n, c := range cur {
		delta := c.Packets
		if p, ok := prev[n]; ok && p.Packets <= delta {
			delta -= p.Packets
		}
		if delta > 0 {
			out[n] = delta
		}
	}
	return out
}

// reportCounterDeltas logs and publishes the counters of one port that
// increased.
func (r *switchRunner) reportCounterDeltas(port uint16, prev, cur portCounters) {
	deltas := counterDeltas(prev, cur)
	if len(deltas) == 0 {
		return
	}
	names := make([]string, 0, len(deltas))
	for n := range deltas {
		names = append(names, n)
	}
	sort.Strings(names)
	lf := logrus.Fields{"port": port}
	ev := map[string]string{}
	var parts []string
	level := logrus.DebugLevel
	for _, n := range names {
		delta := deltas[n]
		d := strconv.FormatInt(delta, 10)
		lf[n] = delta
		ev[n] = d
		parts = append(parts, n+" +"+d)
		switch {
		case counterWarn[n]:
			level = logrus.WarnLevel
		case counterInfo[n] && level > logrus.InfoLevel:
			level = logrus.InfoLevel
		}
	}
	r.log.WithFields(lf).Log(level, "data-plane counters increased")
	r.d.publish(Event{Kind: EventCounters, Switch: r.name, Port: port, Message: strings.Join(parts, ", "), Fields: ev})
}

// counterCollector exports the last polled data-plane counters as
// Prometheus counters.
type counterCollector struct {
	d                *Daemon
	packets, bytes   *prometheus.Desc
	qpackets, qbytes *prometheus.Desc
}

func newCounterCollector(d *Daemon) *counterCollector {
	labels := []string{"switch", "port", "counter"}
	qlabels := []string{"switch", "port", "priority", "counter"}
	return &counterCollector{d: d,
		packets: prometheus.NewDesc("fastcnp_port_counter_packets_total",
			"Data-plane counter of a configured port (packets), as last polled from the switch.", labels, nil),
		bytes: prometheus.NewDesc("fastcnp_port_counter_bytes_total",
			"Data-plane counter of a configured port (bytes), as last polled from the switch.", labels, nil),
		qpackets: prometheus.NewDesc("fastcnp_queue_counter_packets_total",
			"Data-plane counter of an egress queue (configured port, priority) in packets or frames, as last polled from the switch.",
			qlabels, nil),
		qbytes: prometheus.NewDesc("fastcnp_queue_counter_bytes_total",
			"Data-plane counter of an egress queue (configured port, priority) in bytes, as last polled from the switch.",
			qlabels, nil),
	}
}

func (cc *counterCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- cc.packets
	ch <- cc.bytes
	ch <- cc.qpackets
	ch <- cc.qbytes
}

func (cc *counterCollector) Collect(ch chan<- prometheus.Metric) {
	for _, r := range cc.d.switches {
		r.mu.Lock()
		snap, qsnap := r.counters, r.queues
		if !r.countersLive {
			snap, qsnap = nil, nil
		}
		r.mu.Unlock()
		for port, cells := range snap {
			ps := strconv.FormatUint(uint64(port), 10)
			for name, cell := range cells {
				ch <- prometheus.MustNewConstMetric(cc.packets, prometheus.CounterValue, float64(cell.Packets), r.name, ps, name)
				ch <- prometheus.MustNewConstMetric(cc.bytes, prometheus.CounterValue, float64(cell.Bytes), r.name, ps, name)
			}
		}
		for q, cells := range qsnap {
			ps, prio := strconv.FormatUint(uint64(q.port), 10), strconv.Itoa(int(q.priority))
			for name, cell := range cells {
				ch <- prometheus.MustNewConstMetric(cc.qpackets, prometheus.CounterValue, float64(cell.Packets), r.name, ps, prio, name)
				ch <- prometheus.MustNewConstMetric(cc.qbytes, prometheus.CounterValue, float64(cell.Bytes), r.name, ps, prio, name)
			}
		}
	}
}
