package daemon

import (
	"errors"
	"fmt"
	"net"

	"github.com/sirupsen/logrus"

	"github.com/fastcnp/fastcnp/controller/announceauth"
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
	// ReasonNotOwner: the connection belongs to another host (announced
	// with another key, or unauthenticated from another port or MAC), or
	// was added through the API.
	ReasonNotOwner = "not_owner"
	// Authentication (announce.auth, controller/announceauth).
	ReasonUnauthenticated = announceauth.ReasonUnauthenticated // no trailer where one is required
	ReasonUnknownKey      = announceauth.ReasonUnknownKey      // the key ID is not in the key file
	ReasonBadTag          = announceauth.ReasonBadTag          // forged or altered: the tag is not the key's
	ReasonKeyNotAllowed   = announceauth.ReasonKeyNotAllowed   // the key may not announce for this sender
	ReasonStale           = announceauth.ReasonStale           // timestamp beyond max_clock_skew
	ReasonReplay          = announceauth.ReasonReplay          // seen before
	// ReasonINCMembership (inc.go): an INC group or rank the config does not give the sender.
)

// Accepted announcement outcomes (reason label with result="accepted").
const (
	AcceptUp      = "up"
	AcceptRefresh = "refresh"
	AcceptDown    = "down"
)

// refused reports whether a rejection reason is a refusal for want of room
// (a quota or the full table), for security (authentication, ownership)
// or of INC membership: those are also counted in
// fastcnp_announcements_refused_total.
func refused(reason string) bool {
	switch reason {
	case ReasonPortQuota, ReasonSenderQuota, ReasonTableFull, ReasonNotOwner, ReasonUnauthenticated, ReasonUnknownKey,
		ReasonBadTag, ReasonKeyNotAllowed, ReasonStale, ReasonReplay, ReasonINCMembership:
		return true
	}
	return false
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
	// Host is the name of the key that authenticated the announcement
	// ("" when it was not authenticated).
	Host string
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
	return d.handleAnnouncements(sw, []punted{{port: port, reason: reason, frame: frame}})[0]
}

// punted is a packet-in: the ingress port, the reason and the frame.
type punted struct {
	port   uint16
	reason uint8
	frame  []byte
}

// maxAnnounceBatch bounds the packet-ins a switch runner handles together
// (handleAnnouncements): one state file append and fsync, one install.
const maxAnnounceBatch = 512

// handleAnnouncements is HandleAnnouncement for packet-ins of switch sw
// handled together, in order: each is validated, the valid ones are
// applied under one lock, their changes are appended to the state file
// with one fsync (group commit) and installed with one kick of every
// switch. Every result is what HandleAnnouncement would have returned for
// the packet-in alone, except that a failed state file write rejects every
// change of the batch (state_file).
func (d *Daemon) handleAnnouncements(sw string, pkts []punted) []AnnounceResult {
	results := make([]AnnounceResult, len(pkts))
	valid := make([]bool, len(pkts))
	types := make([]uint8, len(pkts))
	n := 0
	for i, p := range pkts {
		results[i], types[i], valid[i] = d.checkAnnouncement(sw, p.port, p.reason, p.frame)
		if valid[i] {
			n++
		}
	}
	if n > 0 && d.applyAnnouncements(results, types, valid) {
		d.kickAll()
	}
	for i, p := range pkts {
		d.reportAnnouncement(sw, p.port, results[i])
	}
	return results
}

// reportAnnouncement counts, logs and publishes the outcome of an
// announcement.
func (d *Daemon) reportAnnouncement(sw string, port uint16, res AnnounceResult) {
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
	if res.Host != "" {
		lf["host"] = res.Host
		fields["host"] = res.Host
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
}

func reject(reason, format string, a ...any) AnnounceResult {
	return AnnounceResult{Reason: reason, Detail: fmt.Sprintf(format, a...)}
}

// checkAnnouncement validates a punted announcement up to the connection
// table: ok with the connection in res.Conn and the announcement type, or
// the rejection.
func (d *Daemon) checkAnnouncement(sw string, port uint16, reason uint8, frame []byte) (res AnnounceResult, typ uint8, ok bool) {
	if reason != wire.ReasonAnnouncement {
		return reject(ReasonNotAnnouncement, "packet-in reason %d", reason), 0, false
	}
	var f wire.Frame
	if err := wire.Parse(frame, wire.ParseOptions{}, &f); err != nil {
		return reject(ReasonMalformed, "parse: %v", err), 0, false
	}
	if !f.Has(wire.LayerIPv4) || !f.Has(wire.LayerUDP) {
		return reject(ReasonMalformed, "not IPv4/UDP"), 0, false
	}
	d.mu.RLock()
	udpPort := d.cfg.Announce.UDPPort
	d.mu.RUnlock()
	if f.UDP.DstPort != udpPort {
		return reject(ReasonWrongPort, "UDP destination %d, want %d", f.UDP.DstPort, udpPort), 0, false
	}
	// The UDP payload, without the Ethernet padding: an announcement
	// (32 bytes) or an authenticated one (72).
	udpEnd := f.Off[wire.LayerUDP] + int(f.UDP.Length)
	if int(f.UDP.Length) < wire.UDPLen || udpEnd > len(frame) {
		return reject(ReasonMalformed, "UDP length %d does not fit the frame", f.UDP.Length), 0, false
	}
	payload := frame[f.End:udpEnd]
	signed := len(payload) == wire.AnnouncementAuthLen
	if len(payload) != wire.AnnouncementLen && !signed {
		return reject(ReasonMalformed, "announcement of %d bytes, want %d (or %d authenticated)",
			len(payload), wire.AnnouncementLen, wire.AnnouncementAuthLen), 0, false
	}
	var a wire.Announcement
	if err := a.Decode(payload); err != nil {
		return reject(ReasonMalformed, "decode: %v", err), 0, false
	}
	switch {
	case a.Magic != wire.AnnouncementMagic:
		return reject(ReasonBadMagic, "magic %#08x", a.Magic), 0, false
	case a.Version != wire.AnnouncementVersion:
		return reject(ReasonBadVersion, "version %d", a.Version), 0, false
	case a.Type != wire.AnnounceUp && a.Type != wire.AnnounceDown:
		return reject(ReasonUnknownType, "type %d", a.Type), 0, false
	}
	c := fabric.Connection{
		ConnKey:    fabric.ConnKey{SenderIP: a.SenderIP.Netip(), UDPSrcPort: a.UDPSrcPort, ReceiverQPN: a.ReceiverQPN},
		ReceiverIP: a.ReceiverIP.Netip(), SenderQPN: a.SenderQPN, Flags: a.Flags, WorkerRank: a.WorkerRank,
		INCGroup: a.INCGroup, Source: "announce", LastSeen: d.opts.Now(),
		Ingress: fabric.PortRef{Switch: sw, Port: port}, Owner: fabric.Owner{MAC: f.Ethernet.Src},
	}
	if a.SenderIP != f.IPv4.Src {
		r := reject(ReasonSenderMismatch, "IPv4 source %s announces sender %s", f.IPv4.Src, a.SenderIP)
		r.Conn = c
		return r, 0, false
	}
	d.mu.RLock()
	s := d.cfg.Switch(sw)
	var inSubnet bool
	if s != nil {
		if p := s.Port(port); p != nil {
			inSubnet = subnetOf(c.SenderIP, p.Subnets)
		}
	}
	d.mu.RUnlock()
	if !inSubnet {
		r := reject(ReasonSpoofed, "sender %s is not in a subnet behind %s port %d", c.SenderIP, sw, port)
		r.Conn = c
		return r, 0, false
	}
	if !d.writer.Load() {
		// Switches send packet-ins to their primary only; a standby that
		// got one anyway must not change the shared state.
		r := reject(ReasonNotPrimary, "this fastcnpd is not the primary controller")
		r.Conn = c
		return r, 0, false
	}
	var host string
	switch {
	case d.auth == nil:
		// No keys: a trailer cannot be checked, and is ignored (a lab).
	case signed:
		key, err := d.auth.check(payload, c.SenderIP, d.opts.Now())
		var ref *announceauth.Refusal
		if errors.As(err, &ref) {
			r := reject(ref.Reason, "%s", ref.Detail)
			r.Conn = c
			return r, 0, false
		}
		c.Owner.Key, host = key.ID, key.Host
	default:
		if why := d.auth.unsignedRefusal(c.SenderIP); why != "" {
			r := reject(ReasonUnauthenticated, "%s", why)
			r.Conn = c
			return r, 0, false
		}
	}
	// INC membership (inc.go) after authentication: the claim of a group
	// and rank is checked against the configuration for an authentic
	// sender.
	if a.Type == wire.AnnounceUp {
		d.mu.RLock()
		err := fabric.CheckINCMembership(d.cfg, c)
		d.mu.RUnlock()
		if err != nil {
			r := reject(ReasonINCMembership, "%v", err)
			r.Conn, r.Host = c, host
			return r, 0, false
		}
	}
	return AnnounceResult{Conn: c, Host: host}, a.Type, true
}

// ownerMismatch says why announcement c may not change or remove the
// connection old ("" when it may): only the host that owns a connection
// may. With authentication the owner is the key (its host may move to
// another port); without, the ingress port and the source MAC of the
// announcement that made it. An authenticated announcement whose key
// covers the sender (checked before) may take over a connection of an
// unauthenticated owner: keys are the stronger proof. Connections added
// through the API belong to the operator.
func ownerMismatch(old, c fabric.Connection) string {
	mac := func(m [6]byte) string { return net.HardwareAddr(m[:]).String() }
	switch {
	case old.Static:
		return "added through the API: announcements do not change it"
	case old.Owner.Key != 0 && c.Owner.Key != old.Owner.Key:
		if c.Owner.Key == 0 {
			return fmt.Sprintf("owned by key %d: an unauthenticated announcement may not change it", old.Owner.Key)
		}
		return fmt.Sprintf("owned by key %d, announced with key %d", old.Owner.Key, c.Owner.Key)
	case old.Owner.Key != 0 || c.Owner.Key != 0:
		return ""
	case !old.Ingress.IsZero() && old.Ingress != c.Ingress:
		return fmt.Sprintf("owned by the host on %s, announced on %s", old.Ingress, c.Ingress)
	case old.Owner.MAC != ([6]byte{}) && old.Owner.MAC != c.Owner.MAC:
		return fmt.Sprintf("owned by %s on %s, announced by %s", mac(old.Owner.MAC), old.Ingress, mac(c.Owner.MAC))
	}
	return ""
}

// applyAnnouncements applies the valid announcements (results[i].Conn, of
// type types[i]) to the connection table in order, writes their changes to
// the state file at once and fills in their results; it reports whether
// the table changed.
func (d *Daemon) applyAnnouncements(results []AnnounceResult, types []uint8, valid []bool) bool {
	var recs []logRecord
	changes := make([]bool, len(results))
	var added, removed []fabric.Connection
	d.mu.Lock()
	for i := range results {
		if !valid[i] {
			continue
		}
		c := results[i].Conn
		if old, known := d.conns.Get(c.ConnKey); known {
			if why := ownerMismatch(old, c); why != "" {
				r := reject(ReasonNotOwner, "connection %s %s", c.ConnKey, why)
				r.Conn, r.Host = c, results[i].Host
				results[i] = r
				continue
			}
		}
		if types[i] == wire.AnnounceDown {
			gone, err := d.conns.Remove(c.ConnKey)
			if err != nil {
				r := reject(ReasonUnknownConn, "%v", err)
				r.Conn = c
				results[i] = r
				continue
			}
			d.metrics.connections.Set(float64(d.conns.Len()))
			recs = append(recs, deleteRecord(c.ConnKey))
			results[i] = AnnounceResult{Accepted: true, Reason: AcceptDown, Conn: c, Host: results[i].Host}
			changes[i] = true
			removed = append(removed, gone)
			continue
		}
		got, changed, rec, err := d.upsertLocked(c)
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
			results[i] = r
			continue
		}
		if rec != nil {
			recs = append(recs, *rec)
		}
		if !changed {
			results[i] = AnnounceResult{Accepted: true, Reason: AcceptRefresh, Conn: got, Host: results[i].Host}
			continue
		}
		results[i] = AnnounceResult{Accepted: true, Reason: AcceptUp, Conn: got, Host: results[i].Host}
		changes[i] = true
		added = append(added, got)
	}
	err := d.appendLocked(recs)
	d.mu.Unlock()
	anyChange := len(added)+len(removed) > 0
	if err != nil {
		// The changes hold in memory (and are installed), as a failed
		// write always left them; the announcements that made them are
		// refused, so that their hosts announce them again. A refresh
		// holds either way: the next one tries again.
		d.log.WithError(err).Error("saving announced connections")
		for i := range results {
			if changes[i] {
				r := reject(ReasonStateFile, "%v", err)
				r.Conn = results[i].Conn
				results[i] = r
			}
		}
		return false // not kicked, as before: written before installed
	}
	for _, c := range added {
		d.publish(Event{Kind: EventConnectionAdded, Message: c.Source, Fields: connFields(c)})
	}
	for _, c := range removed {
		d.publish(Event{Kind: EventConnectionRemoved, Message: "down", Fields: connFields(c)})
	}
	return anyChange
}

// RemoveConnectionAsync removes a connection and schedules the removal on
// every switch without waiting.
func (d *Daemon) RemoveConnectionAsync(k fabric.ConnKey) error {
	d.mu.Lock()
	c, err := d.conns.Remove(k)
	if err == nil {
		d.metrics.connections.Set(float64(d.conns.Len()))
		err = d.appendLocked([]logRecord{deleteRecord(k)})
	}
	d.mu.Unlock()
	if err != nil {
		return err
	}
	d.publish(Event{Kind: EventConnectionRemoved, Message: "down", Fields: connFields(c)})
	d.kickAll()
	return nil
}
