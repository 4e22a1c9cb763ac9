package daemon

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are fastcnpd's Prometheus metrics (docs/operations.md explains
// each).
type metrics struct {
	announcements  *prometheus.CounterVec // result, reason
	connections    prometheus.Gauge
	portEvents     *prometheus.CounterVec // switch, port, event
	portQueue      *prometheus.GaugeVec   // switch, port
	portPaused     *prometheus.GaugeVec   // switch, port
	cnpDigests     *prometheus.CounterVec // switch, port
	cnpWindow      *prometheus.GaugeVec   // switch, port
	switchUp       *prometheus.GaugeVec   // switch
	switchPrimary  *prometheus.GaugeVec   // switch
	updates        *prometheus.CounterVec // switch, type
	syncs          *prometheus.CounterVec // switch, kind (install, audit), result
	repaired       *prometheus.CounterVec // switch
	desiredEntries *prometheus.GaugeVec   // switch
	eventsDropped  prometheus.Counter
	subscribers    prometheus.Gauge
	digestsDropped *prometheus.CounterVec // switch
	refused        *prometheus.CounterVec // reason
	packetInsDrop  *prometheus.CounterVec // switch
	incUppers      prometheus.Gauge
	incRecomputes  prometheus.Counter
	incMoved       prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		announcements: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fastcnp_announcements_total",
			Help: "RDMA-connection announcements received, by result (accepted, rejected) and reason."},
			[]string{"result", "reason"}),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{Name: "fastcnp_connections",
			Help: "RDMA connections in the desired state (installed on every switch)."}),
		portEvents: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fastcnp_port_events_total",
			Help: "Port state digests (PAUSE, RESUME_*, CHECK_*), by switch, port and event."},
			[]string{"switch", "port", "event"}),
		portQueue: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "fastcnp_port_queue_bytes",
			Help: "Lossless queue length reported by the last port state or CNP digest, bytes."},
			[]string{"switch", "port"}),
		portPaused: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "fastcnp_port_paused",
			Help: "1 while the last port state digest of the port was PAUSE."}, []string{"switch", "port"}),
		cnpDigests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fastcnp_cnp_digests_total",
			Help: "cnp_digest_t digests (switch CNPs, at most one per 100 us per port), by switch and port."},
			[]string{"switch", "port"}),
		cnpWindow: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "fastcnp_cnp_window_bytes",
			Help: "Window of the last switch CNP reported by a cnp digest, bytes."}, []string{"switch", "port"}),
		switchUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "fastcnp_switch_connected",
			Help: "1 while the P4Runtime stream to the switch is up."}, []string{"switch"}),
		switchPrimary: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "fastcnp_switch_primary",
			Help: "1 while this fastcnpd is the primary controller of the switch."}, []string{"switch"}),
		updates: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fastcnp_p4rt_updates_total",
			Help: "P4Runtime updates written, by switch and type (insert, modify, delete)."},
			[]string{"switch", "type"}),
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fastcnp_syncs_total",
			Help: "Installs (desired state changed) and audits (read back, diff, repair), by result."},
			[]string{"switch", "kind", "result"}),
		repaired: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fastcnp_repaired_entries_total",
			Help: "Entries an audit or reconnection found wrong on the switch and rewrote."}, []string{"switch"}),
		desiredEntries: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "fastcnp_desired_entries",
			Help: "Entities in the switch's desired state."}, []string{"switch"}),
		eventsDropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "fastcnp_events_dropped_total",
			Help: "Events not delivered to a slow WatchEvents subscriber."}),
		subscribers: prometheus.NewGauge(prometheus.GaugeOpts{Name: "fastcnp_event_subscribers",
			Help: "Event stream subscribers (WatchEvents clients) now."}),
		digestsDropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fastcnp_digests_dropped_total",
			Help: "Digest lists from the switch that fastcnpd dropped (and acknowledged) because it fell behind: their port-state and CNP events are lost."},
			[]string{"switch"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fastcnp_announcements_refused_total",
			Help: "Announcements refused: for want of room, port_quota (announce.max_connections_per_port), sender_quota (announce.max_connections_per_sender), table_full (CONN_TABLE_SIZE); " +
				"inc_membership, an INC group or rank the config's inc.groups do not give the sender; for security, not_owner (the connection is another host's), " +
				"unauthenticated, unknown_key, bad_tag (forged or altered), key_not_allowed (the key may not announce for the sender), stale (timestamp beyond announce.auth.max_clock_skew), replay."},
			[]string{"reason"}),
		packetInsDrop: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fastcnp_packet_ins_dropped_total",
			Help: "Packet-ins (announcements) from the switch that fastcnpd dropped because its packet-in buffer was full: it fell behind."},
			[]string{"switch"}),
		incUppers: prometheus.NewGauge(prometheus.GaugeOpts{Name: "fastcnp_inc_upper_switches",
			Help: "Upper switches of the INC tree: where the leaves send partial aggregates (0: no group spans several leaves, or none is left)."}),
		incRecomputes: prometheus.NewCounter(prometheus.CounterOpts{Name: "fastcnp_inc_tree_recomputes_total",
			Help: "INC tree recomputations after a link or switch changed state (SetLinkState)."}),
		incMoved: prometheus.NewCounter(prometheus.CounterOpts{Name: "fastcnp_inc_buckets_moved_total",
			Help: "Buckets of the leaves' shared INC route table that moved to another upper switch in recomputations."}),
	}
	reg.MustRegister(m.announcements, m.connections, m.portEvents, m.portQueue, m.portPaused, m.cnpDigests,
		m.cnpWindow, m.switchUp, m.switchPrimary, m.updates, m.syncs, m.repaired, m.desiredEntries, m.eventsDropped,
		m.subscribers, m.digestsDropped, m.refused, m.packetInsDrop, m.incUppers, m.incRecomputes, m.incMoved)
	return m
}
