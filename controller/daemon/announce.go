package daemon

import (
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/fastcnp/fastcnp/controller/fabric"
	"github.com/fastcnp/fastcnp/wire"
)

// Announcement rejection reasons (the "reason" label of
// fastcnp_announcements_total{result="rejected"}).
const (
	ReasonNotAnnouncement = "not_announcement"   // packet-in reason is not 1
	ReasonMalformed       = "malformed"          // not Ethernet/IPv4/UDP, truncated
	ReasonWrongPort       = "wrong_udp_port"     // UDP destination is not announce.udp_port
	ReasonBadMagic        = "bad_magic"          // magic is not "FCNP"
	ReasonBadVersion      = "bad_version"        // version is not 1
	ReasonUnknownType     = "unknown_type"       // type neither up nor down (ignored)
	ReasonSenderMismatch  = "sender_mismatch"    // IPv4 source differs from the announced sender
	ReasonSpoofed         = "spoofed"            // sender not in a subnet behind the ingress port
	ReasonInvalid         = "invalid"            // QPN, rank, flags or group the data plane cannot hold
	ReasonTableFull       = "table_full"         // CONN_TABLE_SIZE connections already
	ReasonPortQuota       = "port_quota"         // the ingress port holds announce.max_connections_per_port already
	ReasonSenderQuota     = "sender_quota"       // the sender holds announce.max_connections_per_sender already
	ReasonUnknownConn     = "unknown_connection" // down for a connection that is not installed
	ReasonStateFile       = "state_file"         // the state file could not be written
	ReasonNotPrimary      = "not_primary"        // this instance is a standby: the primary handles it
)

// Accepted announcement outcomes (reason label with result="accepted").
const (
	AcceptUp      = "up"
	AcceptRefresh = "refresh"
	AcceptDown    = "down"
)

// refused reports whether a rejection reason is a refusal for want of room
// (a quota or the full table): those are also counted in
// fastcnp_announcements_refused_total.
func refused(reason string) bool {
	return reason == ReasonPortQuota || reason == ReasonSenderQuota || reason == ReasonTableFull
}

// AnnounceResult is what became of one announcement.
type AnnounceResult struct {
	Accepted bool
	// Reason is the rejection reason or the accepted outcome.
	Reason string
	// Detail explains a rejection.
	Detail string
	Conn   fabric.Connection
	// Held and Limit, for a quota refusal: the connections the port or
	// sender holds and its quota.
	Held, Limit int
}

// quotaError refuses a new announced connection: its ingress port or its
// sender holds its quota of connections already.
type quotaError struct {
	reason      string // ReasonPortQuota or ReasonSenderQuota
	who, key    string // "switch s1 port 1" / "sender 10.1.1.5"; the config key
	held, limit int
}

func (e *quotaError) Error() string {
	return fmt.Sprintf("%s holds %d announced connections, its quota (announce.%s %d): new connection refused",
		e.who, e.held, e.key, e.limit)
}

// checkQuotaLocked refuses a new announced connection beyond the quota of
// its ingress port or of its sender (d.mu held). A known connection (a
// refresh) and an API connection are never refused.
func (d *Daemon) checkQuotaLocked(c fabric.Connection) error {
	if c.Static || c.Ingress.IsZero() {
		return nil
	}
	if _, known := d.conns.Get(c.ConnKey); known {
		return nil
	}
	a := d.cfg.Announce
	if n, q := d.conns.PortConns(c.Ingress), a.PortQuota(); n >= q {
		return &quotaError{reason: ReasonPortQuota, who: fmt.Sprintf("switch %s port %d", c.Ingress.Switch, c.Ingress.Port),
			key: "max_connections_per_port", held: n, limit: q}
	}
	if n, q := d.conns.SenderConns(c.SenderIP), a.SenderQuota(); n >= q {
		return &quotaError{reason: ReasonSenderQuota, who: "sender " + c.SenderIP.String(),
			key: "max_connections_per_sender", held: n, limit: q}
	}
	return nil
}

// HandleAnnouncement validates an announcement punted by switch sw on port
// (packet-in reason reason, frame from the Ethernet header on) and applies it
// to the connection table. It never panics on any input; accepted changes
// are persisted and scheduled for installation on every switch.
func (d *Daemon) HandleAnnouncement(sw string, port uint16, reason uint8, frame []byte) AnnounceResult {
	res := d.announce(sw, port, reason, frame)
	result := "rejected"
	if res.Accepted {
		result = "accepted"
	}
	d.metrics.announcements.WithLabelValues(result, res.Reason).Inc()
	fields := connFields(res.Conn)
	fields["reason"] = res.Reason
	lf := logrus.Fields{"switch": sw, "port": port, "reason": res.Reason}
	if res.Conn.SenderIP.IsValid() {
		lf["connection"] = res.Conn.ConnKey.String()
	}
	if !res.Accepted && refused(res.Reason) {
		d.metrics.refused.WithLabelValues(res.Reason).Inc()
		lf["sender"] = res.Conn.SenderIP.String()
		if res.Limit > 0 {
			lf["held"], lf["limit"] = res.Held, res.Limit
		}
	}
	if res.Accepted {
		d.log.WithFields(lf).Debug("announcement accepted")
		d.publish(Event{Kind: EventAnnounceAccepted, Switch: sw, Port: port, Message: res.Reason, Fields: fields})
	} else {
		d.log.WithFields(lf).WithField("detail", res.Detail).Warn("announcement rejected")
		d.publish(Event{Kind: EventAnnounceRejected, Switch: sw, Port: port, Message: res.Detail, Fields: fields})
	}
	return res
}

func reject(reason, format string, a ...any) AnnounceResult {
	return AnnounceResult{Reason: reason, Detail: fmt.Sprintf(format, a...)}
}

func (d *Daemon) announce(sw string, port uint16, reason uint8, frame []byte) AnnounceResult {
	if reason != wire.ReasonAnnouncement {
		return reject(ReasonNotAnnouncement, "packet-in reason %d", reason)
	}
	var f wire.Frame
	if err := wire.Parse(frame, wire.ParseOptions{}, &f); err != nil {
		return reject(ReasonMalformed, "parse: %v", err)
	}
	if !f.Has(wire.LayerIPv4) || !f.Has(wire.LayerUDP) {
		return reject(ReasonMalformed, "not IPv4/UDP")
	}
	d.mu.RLock()
	udpPort := d.cfg.Announce.UDPPort
	d.mu.RUnlock()
	if f.UDP.DstPort != udpPort {
		return reject(ReasonWrongPort, "UDP destination %d, want %d", f.UDP.DstPort, udpPort)
	}
	payload := frame[f.End:]
	if len(payload) < wire.AnnouncementLen {
		return reject(ReasonMalformed, "announcement of %d bytes, want %d", len(payload), wire.AnnouncementLen)
	}
	var a wire.Announcement
	if err := a.Decode(payload); err != nil {
		return reject(ReasonMalformed, "decode: %v", err)
	}
	switch {
	case a.Magic != wire.AnnouncementMagic:
		return reject(ReasonBadMagic, "magic %#08x", a.Magic)
	case a.Version != wire.AnnouncementVersion:
		return reject(ReasonBadVersion, "version %d", a.Version)
	case a.Type != wire.AnnounceUp && a.Type != wire.AnnounceDown:
		return reject(ReasonUnknownType, "type %d", a.Type)
	}
	c := fabric.Connection{
		ConnKey:    fabric.ConnKey{SenderIP: a.SenderIP.Netip(), UDPSrcPort: a.UDPSrcPort, ReceiverQPN: a.ReceiverQPN},
		ReceiverIP: a.ReceiverIP.Netip(), SenderQPN: a.SenderQPN, Flags: a.Flags, WorkerRank: a.WorkerRank,
		INCGroup: a.INCGroup, Source: "announce", LastSeen: d.opts.Now(),
		Ingress: fabric.PortRef{Switch: sw, Port: port},
	}
	if a.SenderIP != f.IPv4.Src {
		r := reject(ReasonSenderMismatch, "IPv4 source %s announces sender %s", f.IPv4.Src, a.SenderIP)
		r.Conn = c
		return r
	}
	d.mu.RLock()
	s := d.cfg.Switch(sw)
	var ok bool
	if s != nil {
		if p := s.Port(port); p != nil {
			ok = subnetOf(c.SenderIP, p.Subnets)
		}
	}
	d.mu.RUnlock()
	if !ok {
		r := reject(ReasonSpoofed, "sender %s is not in a subnet behind %s port %d", c.SenderIP, sw, port)
		r.Conn = c
		return r
	}
	if !d.writer.Load() {
		// Switches send packet-ins to their primary only; a standby that
		// got one anyway must not change the shared state.
		r := reject(ReasonNotPrimary, "this fastcnpd is not the primary controller")
		r.Conn = c
		return r
	}
	if a.Type == wire.AnnounceDown {
		if err := d.RemoveConnectionAsync(c.ConnKey); err != nil {
			r := reject(ReasonUnknownConn, "%v", err)
			if !errors.Is(err, fabric.ErrNoConn) {
				r.Reason = ReasonStateFile
			}
			r.Conn = c
			return r
		}
		return AnnounceResult{Accepted: true, Reason: AcceptDown, Conn: c}
	}
	got, changed, err := d.upsert(c)
	if err != nil {
		r := reject(ReasonInvalid, "%v", err)
		var qe *quotaError
		switch {
		case errors.As(err, &qe):
			r.Reason, r.Held, r.Limit = qe.reason, qe.held, qe.limit
		case errors.Is(err, fabric.ErrTableFull):
			r.Reason = ReasonTableFull
		case !errors.Is(err, fabric.ErrInvalidConn):
			r.Reason = ReasonStateFile
		}
		r.Conn = c
		return r
	}
	if !changed {
		return AnnounceResult{Accepted: true, Reason: AcceptRefresh, Conn: got}
	}
	d.kickAll()
	return AnnounceResult{Accepted: true, Reason: AcceptUp, Conn: got}
}

// RemoveConnectionAsync removes a connection and schedules the removal on
// every switch without waiting.
func (d *Daemon) RemoveConnectionAsync(k fabric.ConnKey) error {
	d.mu.Lock()
	c, err := d.conns.Remove(k)
	if err == nil {
		d.metrics.connections.Set(float64(d.conns.Len()))
		err = d.saveLocked()
	}
	d.mu.Unlock()
	if err != nil {
		return err
	}
	d.publish(Event{Kind: EventConnectionRemoved, Message: "down", Fields: connFields(c)})
	d.kickAll()
	return nil
}
