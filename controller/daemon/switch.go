package daemon

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/fastcnp/fastcnp/controller/bfconfig"
	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/controller/fabric"
	"github.com/fastcnp/fastcnp/controller/incroute"
	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/internal/tlsfiles"
	"github.com/fastcnp/fastcnp/p4src"
	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"github.com/fastcnp/fastcnp/wire"
)

// retryDelay is how soon a failed install is retried.
const retryDelay = time.Second

// PacketInBuffer is the capacity of each switch's packet-in buffer (the
// p4rt client's Packets channel): a burst of announcements waits there
// while the runner installs the previous ones.
const PacketInBuffer = 16384

type portRuntime struct {
	state     string
	lastEvent string
	at        time.Time
	queue     uint64
}

// switchRunner keeps one switch in its desired state.
type switchRunner struct {
	d         *Daemon
	name      string
	log       logrus.FieldLogger
	addr      string
	deviceID  uint64
	opts      []p4rt.Option
	info      *p4rt.Info
	p4info    *p4configv1.P4Info
	devConfig []byte
	cookie    uint64

	kick chan struct{}

	mu        sync.Mutex
	client    *p4rt.Client
	primary   bool
	waiters   []chan error
	installed *fabric.State
	pushed    bool // the pipeline was just pushed: the next sync is a full install, not a repair
	inc       incroute.Table
	entries   int
	lastErr   string
	warnings  []string
	ports     map[uint16]*portRuntime
	// counters are the configured ports' counters as last polled through
	// countersFrom (pollCounters); replaced, never modified. They are
	// exported while countersLive (the last poll succeeded).
	counters     map[uint16]portCounters
	queues       map[queueKey]portCounters // the configured ports' queues, polled with counters
	countersFrom *p4rt.Client
	countersLive bool
	// vsUnsupported: the target answered UNIMPLEMENTED to a value-set
	// write (BMv2): value-set updates are left out of later writes and
	// vsErr is the switch's error, until the next connection.
	vsUnsupported bool
	vsErr         string
	// vsUnreadableLogged: the UNIMPLEMENTED answer to value-set reads was
	// logged (once per runner).
	vsUnreadableLogged bool
	// keepalive is the gRPC keepalive interval given to p4rt (0: off).
	keepalive time.Duration
	// portCounters are the P4 counters indexed by port (portCounterNames).
	portCounters []string
	// queueCounters are the P4 counters indexed by queue (queueCounterNames).
	queueCounters []string
	// election is the configured election ID (+ --election-offset); in HA
	// mode the term's epoch is added to it (electionID).
	election p4rt.Uint128
}

func newSwitchRunner(d *Daemon, name string) (*switchRunner, error) {
	sw := d.cfg.Switch(name)
	r := &switchRunner{d: d, name: name, addr: sw.Address, deviceID: sw.DeviceID, kick: make(chan struct{}, 1),
		ports: map[uint16]*portRuntime{}}
	r.log = d.log.WithFields(logrus.Fields{"switch": name, "addr": sw.Address})
	var err error
	if sw.P4Info != "" {
		r.p4info, err = p4rt.LoadP4InfoFile(sw.P4Info, p4rt.FormatAuto)
	} else {
		r.p4info, err = p4src.P4Info()
	}
	if err != nil {
		return nil, fmt.Errorf("daemon: switch %s: p4info: %w", name, err)
	}
	switch {
	case sw.DeviceConfig != "" && sw.Target == config.TargetTofino:
		// Stratum's BfPipelineConfig, built from p4c-barefoot's output
		// directory (or taken as built), docs/tofino.md.
		if r.devConfig, err = bfconfig.DeviceConfig(sw.DeviceConfig); err != nil {
			return nil, fmt.Errorf("daemon: switch %s: device config: %w", name, err)
		}
	case sw.DeviceConfig != "":
		if r.devConfig, err = os.ReadFile(sw.DeviceConfig); err != nil {
			return nil, fmt.Errorf("daemon: switch %s: device config: %w", name, err)
		}
	}
	if r.info, err = p4rt.NewInfo(r.p4info); err != nil {
		return nil, fmt.Errorf("daemon: switch %s: %w", name, err)
	}
	r.portCounters = portCounterNames(r.p4info)
	r.queueCounters = queueCounterNames(r.p4info)
	h := fnv.New64a()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(r.p4info)
	if err != nil {
		return nil, fmt.Errorf("daemon: switch %s: %w", name, err)
	}
	h.Write(b)
	h.Write(r.devConfig)
	r.cookie = h.Sum64() | 1
	r.election = p4rt.Uint128{High: sw.ElectionID.High, Low: sw.ElectionID.Low + d.opts.ElectionOffset}
	r.opts = []p4rt.Option{
		p4rt.WithRole(sw.Role), p4rt.WithInfo(r.info), p4rt.WithLogger(r.log),
		p4rt.WithPacketDropHandler(r.packetDropped),
		// A packet-in buffer that takes a burst of announcements while the
		// runner installs (the other buffers are p4rt's defaults).
		p4rt.WithBuffers(64, PacketInBuffer, 256, 256),
	}
	if !sw.TLS.Insecure {
		// Loaded once at start: a missing or broken file stops fastcnpd
		// with its name instead of failing every reconnection.
		tc, err := tlsfiles.Client(sw.TLS.CA, sw.TLS.Cert, sw.TLS.Key, sw.TLS.ServerName)
		if err != nil {
			return nil, fmt.Errorf("daemon: switch %s: tls: %w", name, err)
		}
		r.opts = append(r.opts, p4rt.WithTLS(tc))
	}
	// Present from the start, so that a switch never reached (address,
	// TLS) shows as 0 rather than missing.
	d.metrics.switchUp.WithLabelValues(name).Set(0)
	d.metrics.switchPrimary.WithLabelValues(name).Set(0)
	// Keepalive (switches[].keepalive): gRPC pings the switch after that
	// long without anything received and drops a connection that does not
	// answer within config.KeepaliveTimeout, so a silently dead link ends
	// the stream and fastcnpd reconnects. 0 turns it off.
	r.keepalive = sw.Keepalive
	if sw.Keepalive > 0 {
		r.opts = append(r.opts, p4rt.WithKeepalive(sw.Keepalive, config.KeepaliveTimeout))
	} else {
		r.opts = append(r.opts, p4rt.WithKeepalive(0, 0))
	}
	if d.opts.ChunkSize > 0 {
		r.opts = append(r.opts, p4rt.WithChunkSize(d.opts.ChunkSize))
	}
	if d.ha != nil {
		// A leader whose lease lapsed writes nothing more (docs/controller.md, "Fencing").
		r.opts = append(r.opts, p4rt.WithWriteGuard(d.ha.fence))
	}
	r.opts = append(r.opts, d.opts.ClientOptions...)
	for _, p := range sw.Ports {
		r.ports[p.Number] = &portRuntime{state: "unknown"}
	}
	return r, nil
}

func (r *switchRunner) kickNow() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// syncWait asks the runner to install the desired state and waits for the
// outcome.
func (r *switchRunner) syncWait(ctx context.Context) error {
	ch := make(chan error, 1)
	r.mu.Lock()
	switch {
	case r.client == nil || !r.client.Status().Connected:
		r.mu.Unlock()
		return errors.New("switch not connected; the change is saved and installed when it is back")
	case !r.primary:
		r.mu.Unlock()
		return errors.New("this fastcnpd is not the switch's primary controller")
	}
	r.waiters = append(r.waiters, ch)
	r.mu.Unlock()
	r.kickNow()
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return fmt.Errorf("waiting for the install: %w", ctx.Err())
	}
}

func (r *switchRunner) status() SwitchStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := SwitchStatus{Name: r.name, Address: r.addr, DeviceID: r.deviceID, Primary: r.primary,
		Entries: r.entries, LastError: r.lastErr, Warnings: append([]string(nil), r.warnings...)}
	if st.LastError == "" {
		st.LastError = r.vsErr
	}
	if r.client != nil {
		st.Connected = r.client.Status().Connected
	}
	return st
}

func (r *switchRunner) incTable() incroute.Table {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append(incroute.Table(nil), r.inc...)
}

func (r *switchRunner) setClient(c *p4rt.Client) {
	r.mu.Lock()
	r.client, r.primary = c, false
	r.vsUnsupported, r.vsErr = false, "" // a new connection may reach another target: try again
	waiters := r.waiters
	if c == nil {
		r.waiters = nil
		r.counters, r.queues, r.countersFrom, r.countersLive = nil, nil, nil, false
	}
	r.mu.Unlock()
	if c == nil {
		for _, w := range waiters {
			w <- errors.New("switch connection closed")
		}
	}
	up := 0.0
	if c != nil {
		up = 1
	}
	r.d.metrics.switchUp.WithLabelValues(r.name).Set(up)
	r.d.metrics.switchPrimary.WithLabelValues(r.name).Set(0)
}

func (r *switchRunner) setPrimary(p bool) {
	r.mu.Lock()
	was := r.primary
	r.primary = p
	var waiters []chan error
	if !p {
		waiters, r.waiters = r.waiters, nil
	}
	r.mu.Unlock()
	for _, w := range waiters {
		w <- errors.New("no longer the primary controller")
	}
	v := 0.0
	if p {
		v = 1
	}
	r.d.metrics.switchPrimary.WithLabelValues(r.name).Set(v)
	if p {
		r.d.claimWriter()
	} else {
		r.d.releaseWriter()
	}
	if p != was {
		kind, msg := EventBackup, "backup controller"
		if p {
			kind, msg = EventPrimary, "primary controller"
		}
		r.log.WithField("primary", p).Info(msg)
		r.d.publish(Event{Kind: kind, Switch: r.name, Message: msg})
	}
}

// isBackup reports whether the switch is connected with another controller
// as its primary.
func (r *switchRunner) isBackup() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.client != nil && r.client.Status().Connected && !r.primary
}

func (r *switchRunner) isPrimary() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.primary
}

// run connects, serves, and reconnects until ctx ends.
func (r *switchRunner) run(ctx context.Context) {
	for ctx.Err() == nil {
		opts := append([]p4rt.Option{p4rt.WithElectionID(r.d.electionID(r.election))}, r.opts...)
		c, err := p4rt.Dial(ctx, r.addr, r.deviceID, opts...)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			r.log.WithError(err).Error("connecting to the switch")
			r.setErr(err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(5 * time.Second):
			}
			continue
		}
		r.setClient(c)
		r.d.publish(Event{Kind: EventSwitchConnected, Switch: r.name, Message: r.addr})
		r.serve(ctx, c)
		r.setClient(nil)
		if err := c.Close(); err != nil {
			r.log.WithError(err).Debug("closing the P4Runtime client")
		}
	}
}

func (r *switchRunner) setErr(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.lastErr = ""
	} else {
		r.lastErr = err.Error()
	}
}

// serve handles one client until ctx ends or the client is closed.
func (r *switchRunner) serve(ctx context.Context, c *p4rt.Client) {
	var audit <-chan time.Time
	if r.d.opts.AuditInterval > 0 {
		t := time.NewTicker(r.d.opts.AuditInterval)
		defer t.Stop()
		audit = t.C
	}
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	resync := func(readBack bool) {
		if err := r.sync(ctx, c, readBack); err != nil && ctx.Err() == nil {
			retry.Reset(retryDelay)
		}
	}
	becomePrimary := func() {
		// Take over the state file as the previous primary left it before
		// writing it (connections, refresh times, port settings).
		r.d.reloadIfChanged()
		r.setPrimary(true)
		r.d.noteElectionID(r, c.ElectionID())
		if err := r.ensurePipeline(ctx, c); err != nil {
			r.log.WithError(err).Error("pushing the pipeline")
			r.setErr(err)
			retry.Reset(retryDelay)
			return
		}
		resync(true)
	}
	if c.IsPrimary() {
		becomePrimary()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-c.Events():
			if !ok {
				return
			}
			switch ev.Type {
			case p4rt.EventArbitration:
				if ev.Status.Primary && !r.isPrimary() {
					becomePrimary()
				} else if !ev.Status.Primary && r.isPrimary() {
					r.setPrimary(false)
				}
			case p4rt.EventDisconnected:
				r.mu.Lock()
				r.primary = false // not "backup": the switch is gone; it re-arbitrates on reconnection
				r.mu.Unlock()
				r.failWaiters(errors.New("switch disconnected"))
				r.d.metrics.switchPrimary.WithLabelValues(r.name).Set(0)
				r.d.metrics.switchUp.WithLabelValues(r.name).Set(0)
				r.log.WithError(ev.Err).Warn("switch disconnected")
				r.d.publish(Event{Kind: EventSwitchDisconnected, Switch: r.name, Message: fmt.Sprint(ev.Err)})
			case p4rt.EventReconnected:
				r.d.metrics.switchUp.WithLabelValues(r.name).Set(1)
				r.d.publish(Event{Kind: EventSwitchConnected, Switch: r.name, Message: "reconnected"})
				if ev.Reconcile && !r.isPrimary() {
					becomePrimary()
				} else if !ev.Status.Primary {
					// Back as a backup: another controller took over while the
					// stream was down (this one hung, or was cut off). Its
					// view of the shared state is stale: give up the state
					// file, as a demotion would.
					r.setPrimary(false)
				}
			case p4rt.EventStreamError:
				r.log.WithField("stream_error", ev.StreamError.String()).Warn("switch reported a stream error")
			case p4rt.EventDigestsDropped:
				// The lists were acknowledged, so the switch will not send
				// them again; the gauges they feed catch up with the next
				// digest of each port.
				r.d.metrics.digestsDropped.WithLabelValues(r.name).Inc()
				r.log.WithField("digests_dropped_total", ev.Dropped).Warn("fell behind the switch's digests: some port-state and CNP events are lost")
			}
		case _, ok := <-c.ReconcileNeeded():
			// The client's lossless signal that it became primary (a
			// reconnection or a promotion); the event that says so may have
			// been dropped from a full Events buffer.
			if !ok {
				return
			}
			if !c.IsPrimary() {
				continue // demoted again since: the arbitration event says so
			}
			if !r.isPrimary() {
				becomePrimary()
			} else {
				resync(true)
			}
		case p, ok := <-c.Packets():
			if !ok {
				return
			}
			r.handlePackets(p, c.Packets())
		case dl, ok := <-c.Digests():
			if !ok {
				return
			}
			r.handleDigest(dl)
		case <-r.kick:
			if r.isPrimary() {
				r.catchUp(c)
				select {
				case <-r.kick: // this install takes the changes of the packet-ins just handled
				default:
				}
				resync(false)
			} else {
				r.failWaiters(errors.New("this fastcnpd is not the switch's primary controller"))
			}
		case <-retry.C:
			if r.isPrimary() {
				if err := r.ensurePipeline(ctx, c); err != nil {
					r.setErr(err)
					retry.Reset(retryDelay)
					continue
				}
				resync(true)
			}
		case <-audit:
			if r.isPrimary() {
				resync(true)
			}
		}
	}
}

func (r *switchRunner) failWaiters(err error) {
	r.mu.Lock()
	w := r.waiters
	r.waiters = nil
	r.mu.Unlock()
	for _, ch := range w {
		ch <- err
	}
}

// ensurePipeline pushes the pipeline unless the switch already runs it
// (same cookie), so that a restart of fastcnpd keeps the switch's state.
func (r *switchRunner) ensurePipeline(ctx context.Context, c *p4rt.Client) error {
	cfg, err := c.GetPipeline(ctx, p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY)
	if err == nil && cfg.GetCookie().GetCookie() == r.cookie {
		c.SetInfo(r.info)
		return nil
	}
	if err := c.SetPipeline(ctx, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, r.p4info,
		r.devConfig, r.cookie); err != nil {
		return fmt.Errorf("switch %s: set pipeline: %w", r.name, err)
	}
	r.mu.Lock()
	r.installed, r.pushed = nil, true
	r.mu.Unlock()
	r.log.WithField("cookie", r.cookie).Info("pipeline pushed")
	return nil
}

// readBack reads every entity fastcnpd manages from the switch. Tables must
// be readable; value sets, digest configs and clone sessions, which some
// servers cannot read (UNIMPLEMENTED), are returned in unreadable instead.
func (r *switchRunner) readBack(ctx context.Context, c *p4rt.Client) (*fabric.State, []fabric.Kind, error) {
	type req struct {
		e        *p4v1.Entity
		optional fabric.Kind
	}
	var reqs []req
	for _, t := range fabric.ManagedTables {
		e, err := r.info.ReadTable(t)
		if err != nil {
			return nil, nil, fmt.Errorf("switch %s: %w", r.name, err)
		}
		reqs = append(reqs, req{e: e})
	}
	for _, ap := range fabric.ManagedProfiles {
		m, err := r.info.ReadActionProfileMembers(ap)
		if err != nil {
			return nil, nil, fmt.Errorf("switch %s: %w", r.name, err)
		}
		g, err := r.info.ReadActionProfileGroups(ap)
		if err != nil {
			return nil, nil, fmt.Errorf("switch %s: %w", r.name, err)
		}
		reqs = append(reqs, req{e: m}, req{e: g})
	}
	vs, err := r.info.ReadValueSet(fabric.ValueSetAnnounce)
	if err != nil {
		return nil, nil, fmt.Errorf("switch %s: %w", r.name, err)
	}
	dg, err := r.info.ReadDigestConfig("")
	if err != nil {
		return nil, nil, fmt.Errorf("switch %s: %w", r.name, err)
	}
	reqs = append(reqs, req{vs, fabric.KindValueSet}, req{dg, fabric.KindDigestConfig},
		req{p4rt.ReadCloneSessions(0), fabric.KindCloneSession})
	st := fabric.NewState()
	var unreadable []fabric.Kind
	for _, q := range reqs {
		err := c.ReadStream(ctx, func(e *p4v1.Entity) error {
			if te := e.GetTableEntry(); te != nil && te.GetIsDefaultAction() {
				return nil
			}
			return st.Put(e)
		}, q.e)
		if err != nil && q.optional != 0 && errors.Is(err, p4rt.ErrUnimplemented) {
			unreadable = append(unreadable, q.optional)
			if q.optional == fabric.KindValueSet {
				r.logValueSetsUnreadable()
			}
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("switch %s: read back: %w", r.name, err)
		}
	}
	return st, unreadable, nil
}

// logValueSetsUnreadable notes, once, that the target cannot report value
// sets: the audit then takes the value set as installed earlier.
func (r *switchRunner) logValueSetsUnreadable() {
	r.mu.Lock()
	logged := r.vsUnreadableLogged
	r.vsUnreadableLogged = true
	r.mu.Unlock()
	if !logged {
		r.log.Info("the switch cannot report parser value sets (reads answer UNIMPLEMENTED, as BMv2 does): " +
			"the audit takes announce_udp_port as last installed")
	}
}

// sync makes the switch equal to its desired state: against the last
// installed state, or against a fresh read-back when readBack is set (or
// the installed state is unknown).
func (r *switchRunner) sync(ctx context.Context, c *p4rt.Client, readBack bool) (err error) {
	r.mu.Lock()
	waiters := r.waiters
	r.waiters = nil
	prev, installed, pushed := r.inc, r.installed, r.pushed
	r.mu.Unlock()
	kind := "install"
	if readBack || installed == nil {
		kind = "audit"
	}
	defer func() {
		result := "ok"
		if err != nil {
			result = "error"
			r.log.WithError(err).WithField("kind", kind).Error("sync failed")
		}
		r.setErr(err)
		r.d.metrics.syncs.WithLabelValues(r.name, kind, result).Inc()
		for _, w := range waiters {
			w <- err
		}
	}()
	actual := installed
	var unreadable []fabric.Kind
	if kind == "audit" {
		if actual, unreadable, err = r.readBack(ctx, c); err != nil {
			return err
		}
		if prev == nil {
			// After a restart: move the fewest buckets from what the switch holds.
			prev = r.incFromState(actual)
			// A leaf of the INC tree: the tree's shared table continues
			// from the one the leaf holds (inc.go, adoptINCTable).
			if prev != nil && r.d.adoptINCTable(r.name, prev) {
				r.d.kickAll()
			}
		}
	}
	res, err := r.d.desired(r, prev)
	if err != nil {
		return fmt.Errorf("switch %s: desired state: %w", r.name, err)
	}
	for _, k := range unreadable {
		// The server cannot read these back: after a pipeline push they are
		// absent; otherwise take them as installed earlier (or as desired).
		// A value set is empty after a push; after a restart of fastcnpd it
		// is written again (idempotent), unless the desired one is empty.
		switch {
		case k == fabric.KindValueSet && (pushed || installed == nil):
			empty, err := r.info.ValueSetEntry(fabric.ValueSetAnnounce)
			if err == nil {
				err = actual.Put(empty)
			}
			if err != nil {
				return fmt.Errorf("switch %s: %w", r.name, err)
			}
		case !pushed:
			actual.AssumeKind(k, installed, res.State)
		}
	}
	plan := fabric.Diff(res.State, actual)
	r.mu.Lock()
	r.warnings = res.Warnings
	r.entries = res.State.Len()
	r.mu.Unlock()
	r.d.metrics.desiredEntries.WithLabelValues(r.name).Set(float64(res.State.Len()))
	if !plan.Empty() {
		start := time.Now()
		// The plan's batches, one after the other (members, groups and the
		// entries that use them depend on each other). Value-set updates go
		// in a write of their own, after the rest: a target without value
		// sets (BMv2) refuses them and nothing else.
		var vs []*p4v1.Update
		var batches [][]*p4v1.Update
		for _, b := range plan.Batches() {
			var rest []*p4v1.Update
			for _, u := range b {
				if u.GetEntity().GetValueSetEntry() != nil {
					vs = append(vs, u)
				} else {
					rest = append(rest, u)
				}
			}
			if len(rest) > 0 {
				batches = append(batches, rest)
			}
		}
		r.mu.Lock()
		skipVS := r.vsUnsupported
		r.mu.Unlock()
		var err error
		for _, b := range batches {
			if err = c.Write(ctx, b); err != nil {
				break
			}
		}
		unwritten := 0 // value-set modifies left out
		switch {
		case err != nil || len(vs) == 0:
		case skipVS:
			unwritten = len(vs)
		default:
			// UNIMPLEMENTED for the RPC, or for every update of the batch.
			if err = c.Write(ctx, vs); err != nil && errors.Is(err, p4rt.ErrUnimplemented) {
				r.valueSetsUnsupported(err)
				unwritten, err = len(vs), nil
			}
		}
		if err != nil {
			r.mu.Lock()
			r.installed = nil // unknown now: read back next time
			r.mu.Unlock()
			return fmt.Errorf("switch %s: write: %w", r.name, err)
		}
		r.d.metrics.updates.WithLabelValues(r.name, "insert").Add(float64(len(plan.Insert)))
		r.d.metrics.updates.WithLabelValues(r.name, "modify").Add(float64(len(plan.Modify) - unwritten))
		r.d.metrics.updates.WithLabelValues(r.name, "delete").Add(float64(len(plan.Delete)))
		lf := logrus.Fields{"kind": kind, "insert": len(plan.Insert), "modify": len(plan.Modify),
			"delete": len(plan.Delete), "took": time.Since(start).String()}
		if kind == "audit" && !pushed {
			r.d.metrics.repaired.WithLabelValues(r.name).Add(float64(plan.Len()))
			r.log.WithFields(lf).Warn("switch state repaired")
			r.d.publish(Event{Kind: EventRepaired, Switch: r.name, Message: fmt.Sprintf(
				"%d inserted, %d modified, %d deleted", len(plan.Insert), len(plan.Modify), len(plan.Delete))})
		} else {
			r.log.WithFields(lf).Info("switch state installed")
		}
	}
	r.mu.Lock()
	r.installed, r.inc, r.pushed = res.State, res.INC, false
	r.mu.Unlock()
	if kind == "audit" {
		r.d.switchAudited(r)
	}
	return nil
}

// forget drops what the runner knows of the switch's state (a new term in
// HA mode: another leader may have changed it), so the next sync reads it
// back, the INC table included.
func (r *switchRunner) forget() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.installed, r.inc = nil, nil
}

// valueSetsUnsupported records that the switch refused the value set with
// UNIMPLEMENTED: the rest of its state is installed, the error stays on the
// switch (ListSwitches, fastcnpctl switches) and later writes leave the
// value set out.
func (r *switchRunner) valueSetsUnsupported(err error) {
	r.d.mu.RLock()
	port := r.d.cfg.Announce.UDPPort
	r.d.mu.RUnlock()
	msg := fmt.Sprintf("switch %s: the target does not support parser value sets (BMv2: behavioral-model issue #854), "+
		"so announce.udp_port %d cannot be installed and announcements to it are not punted: use announce.udp_port %d, "+
		"which the P4 program recognises without the value set, or a target that implements value sets (%v)",
		r.name, port, wire.DefaultAnnouncePort, err)
	r.mu.Lock()
	r.vsUnsupported, r.vsErr = true, msg
	r.mu.Unlock()
	r.log.WithField("announce_udp_port", port).Error(msg)
}

// incFromState extracts the INC route table (bucket -> port) from a
// read-back state; nil unless every bucket is present.
func (r *switchRunner) incFromState(st *fabric.State) incroute.Table {
	id, err := r.info.TableID(fabric.TableINCRoute)
	if err != nil {
		return nil
	}
	t := make(incroute.Table, p4src.IncBuckets)
	seen := 0
	for _, e := range st.Entries() {
		te := e.Entity.GetTableEntry()
		if te == nil || te.GetTableId() != id {
			continue
		}
		de, err := r.info.DecodeTableEntry(te)
		if err != nil || len(de.Matches) != 1 {
			return nil
		}
		b, err1 := p4rt.DecodeUint(de.Matches[0].Value)
		port, err2 := p4rt.DecodeUint(de.Params["port"])
		if err1 != nil || err2 != nil || b >= p4src.IncBuckets {
			return nil
		}
		t[b] = uint32(port)
		seen++
	}
	if seen != p4src.IncBuckets {
		return nil
	}
	return t
}

// packetDropped counts and logs a packet-in the switch's p4rt client
// dropped because its packet-in buffer was full: this runner fell behind
// (a host flooding announcements, or a slow state file). It runs on the
// client's receive goroutine, so it only counts and logs. The announcement
// in it is lost; the host's next refresh brings it again.
func (r *switchRunner) packetDropped(p *p4rt.PacketIn, total uint64) {
	r.d.metrics.packetInsDrop.WithLabelValues(r.name).Inc()
	lf := logrus.Fields{"dropped_total": total, "bytes": len(p.Payload)}
	if port, err := p.Uint("ingress_port"); err == nil {
		lf["port"] = port
	}
	if reason, err := p.Uint("reason"); err == nil {
		lf["reason"] = reason
	}
	r.log.WithFields(lf).Warn("packet-in dropped: fastcnpd's packet-in buffer is full (the announcement in it is lost until the host refreshes it)")
}

// Catching up before an install (catchUp): at most catchUpPackets
// packet-ins, for at most catchUpTime.
const (
	catchUpPackets = 8192
	catchUpTime    = 20 * time.Millisecond
)

// catchUp handles the packet-ins waiting when an install is due, so that
// the announcements of a burst are installed together (one diff, one
// batched Write) rather than one install per handled batch: every install
// recomputes and diffs the switch's whole desired state. It is bounded
// (catchUpPackets, catchUpTime), so the install waits at most that long.
func (r *switchRunner) catchUp(c *p4rt.Client) {
	start := time.Now()
	for n := 0; n < catchUpPackets && time.Since(start) < catchUpTime; {
		select {
		case p, ok := <-c.Packets():
			if !ok {
				return // the serve loop sees the channel closed
			}
			n += r.handlePackets(p, c.Packets())
		default:
			return
		}
	}
}

// handlePackets handles packet-in first and those waiting behind it in
// more (up to maxAnnounceBatch in all) together: one state file append,
// one install for the batch. It returns the number of packet-ins taken.
func (r *switchRunner) handlePackets(first *p4rt.PacketIn, more <-chan *p4rt.PacketIn) int {
	batch := make([]punted, 0, 16)
	add := func(p *p4rt.PacketIn) {
		port, err1 := p.Uint("ingress_port")
		reason, err2 := p.Uint("reason")
		if err := errors.Join(err1, err2); err != nil {
			r.d.metrics.announcements.WithLabelValues("rejected", ReasonMalformed).Inc()
			r.log.WithError(err).Warn("packet-in without packet_in metadata")
			return
		}
		batch = append(batch, punted{port: uint16(port), reason: uint8(reason), frame: p.Payload})
	}
	add(first)
	n := 1
drain:
	for ; n < maxAnnounceBatch; n++ {
		select {
		case p, ok := <-more:
			if !ok {
				break drain // the serve loop sees the channel closed
			}
			add(p)
		default:
			break drain
		}
	}
	if len(batch) > 0 {
		r.d.handleAnnouncements(r.name, batch)
	}
	return n
}

// Port event names (docs/dataplane.md, "Port events").
var portEventNames = map[uint64]string{
	p4src.PortEventPause: "PAUSE", p4src.PortEventResumeNotCongested: "RESUME_NOT_CONGESTED",
	p4src.PortEventResumeCongested: "RESUME_CONGESTED", p4src.PortEventResumeUndetermined: "RESUME_UNDETERMINED",
	p4src.PortEventCheckDrained: "CHECK_DRAINED", p4src.PortEventCheckCongested: "CHECK_CONGESTED",
}

func portStateAfter(ev uint64) string {
	switch ev {
	case p4src.PortEventPause:
		return "paused"
	case p4src.PortEventResumeUndetermined:
		return "undetermined"
	}
	return "determined"
}

func (r *switchRunner) handleDigest(dl *p4rt.DigestList) {
	for i := range dl.Data {
		m, err := dl.Struct(i)
		if err != nil {
			r.log.WithError(err).WithField("digest", dl.Name).Warn("undecodable digest")
			continue
		}
		u := func(k string) uint64 { v, _ := p4rt.DecodeUint(m[k]); return v }
		port := u("port")
		ps := strconv.FormatUint(port, 10)
		now := r.d.opts.Now()
		switch dl.Name {
		case fabric.DigestPortState:
			ev := u("event")
			name, ok := portEventNames[ev]
			if !ok {
				name = "EVENT_" + strconv.FormatUint(ev, 10)
			}
			q := u("queue_bytes")
			r.mu.Lock()
			pr := r.ports[uint16(port)]
			if pr == nil {
				pr = &portRuntime{}
				r.ports[uint16(port)] = pr
			}
			pr.state, pr.lastEvent, pr.at, pr.queue = portStateAfter(ev), name, now, q
			r.mu.Unlock()
			// Gauges first, the event count last: whoever sees the event counted
			// (a scrape, a test) sees the state it left.
			r.d.metrics.portQueue.WithLabelValues(r.name, ps).Set(float64(q))
			paused := 0.0
			if ev == p4src.PortEventPause {
				paused = 1
			}
			r.d.metrics.portPaused.WithLabelValues(r.name, ps).Set(paused)
			r.d.metrics.portEvents.WithLabelValues(r.name, ps, name).Inc()
			r.log.WithFields(logrus.Fields{"port": port, "event": name, "queue_bytes": q,
				"rx_bytes": u("rx_bytes"), "timestamp_ns": u("timestamp_ns")}).Debug("port state")
			r.d.publish(Event{Kind: EventPortState, Switch: r.name, Port: uint16(port), Message: name,
				Fields: map[string]string{"event": name, "queue_bytes": strconv.FormatUint(q, 10),
					"rx_bytes": strconv.FormatUint(u("rx_bytes"), 10), "timestamp_ns": strconv.FormatUint(u("timestamp_ns"), 10)}})
		case fabric.DigestCNP:
			w, q := u("window_bytes"), u("queue_bytes")
			src, dst := ip4(u("src_addr")), ip4(u("dst_addr"))
			r.d.metrics.cnpDigests.WithLabelValues(r.name, ps).Inc()
			r.d.metrics.cnpWindow.WithLabelValues(r.name, ps).Set(float64(w))
			r.d.metrics.portQueue.WithLabelValues(r.name, ps).Set(float64(q))
			r.log.WithFields(logrus.Fields{"port": port, "src": src, "dst": dst, "window_bytes": w,
				"queue_bytes": q}).Debug("switch CNP")
			r.d.publish(Event{Kind: EventCNP, Switch: r.name, Port: uint16(port),
				Message: fmt.Sprintf("CNP %s -> %s window %d B", dst, src, w),
				Fields: map[string]string{"src_addr": src, "dst_addr": dst, "window_bytes": strconv.FormatUint(w, 10),
					"queue_bytes": strconv.FormatUint(q, 10), "timestamp_ns": strconv.FormatUint(u("timestamp_ns"), 10)}})
		default:
			r.log.WithField("digest", dl.Name).Debug("unknown digest")
		}
	}
}

func ip4(v uint64) string {
	return fmt.Sprintf("%d.%d.%d.%d", byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

// ports returns the configured ports' states and counters.
func (r *switchRunner) portStatuses(ctx context.Context) ([]PortStatus, error) {
	r.d.mu.RLock()
	sw := r.d.cfg.Switch(r.name)
	ports := append([]config.Port(nil), sw.Ports...)
	r.d.mu.RUnlock()
	sort.Slice(ports, func(i, j int) bool { return ports[i].Number < ports[j].Number })
	r.mu.Lock()
	c := r.client
	r.mu.Unlock()
	counters := map[uint16]portCounters{}
	if c != nil && c.Status().Connected {
		var err error
		if counters, err = readCounters(ctx, c, r.portCounters, r.configuredPorts()); err != nil {
			return nil, fmt.Errorf("switch %s: reading counters: %w", r.name, err)
		}
	}
	out := make([]PortStatus, 0, len(ports))
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range ports {
		ps := PortStatus{Switch: r.name, Port: p.Number, Settings: p.Settings, State: "unknown",
			Counters: counters[p.Number]}
		if pr := r.ports[p.Number]; pr != nil && pr.lastEvent != "" {
			ps.State, ps.LastEvent, ps.EventTime, ps.Queue = pr.state, pr.lastEvent, pr.at, pr.queue
		}
		out = append(out, ps)
	}
	return out, nil
}

// queueStatuses returns the queues of the switch's configured ports (of
// port only, unless 0; ok reports whether the switch configures it), with
// their counters read from the switch when it is connected.
func (r *switchRunner) queueStatuses(ctx context.Context, port uint16) ([]QueueStatus, bool, error) {
	r.d.mu.RLock()
	lossless := r.d.cfg.QoS.LosslessPriority
	r.d.mu.RUnlock()
	ports := r.configuredPorts()
	if port != 0 {
		if !ports[port] {
			return nil, false, nil
		}
		ports = map[uint16]bool{port: true}
	}
	r.mu.Lock()
	c := r.client
	r.mu.Unlock()
	counters := map[queueKey]portCounters{}
	if c != nil && c.Status().Connected {
		var err error
		if counters, err = readQueueCounters(ctx, c, r.info, r.queueCounters, ports); err != nil {
			return nil, true, fmt.Errorf("switch %s: reading queue counters: %w", r.name, err)
		}
	}
	sorted := make([]uint16, 0, len(ports))
	for p := range ports {
		sorted = append(sorted, p)
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	out := make([]QueueStatus, 0, 8*len(sorted))
	for _, p := range sorted {
		for prio := uint8(0); prio < 8; prio++ {
			out = append(out, QueueStatus{Switch: r.name, Port: p, Priority: prio, Lossless: prio == lossless,
				Counters: counters[queueKey{p, prio}]})
		}
	}
	return out, true, nil
}
