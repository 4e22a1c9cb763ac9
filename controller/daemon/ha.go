package daemon

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/controller/p4rt"
)

// High availability on etcd (config ha.etcd; docs/controller.md, "High
// availability on etcd"). The instances that share a key prefix campaign
// for leadership with a lease (concurrency.Election). The leader, and only
// it, runs the switches: it takes a new epoch (a counter in etcd, raised
// under leadership), loads the desired state from etcd, dials every switch
// with its configured election ID plus the epoch, so that it outranks every
// earlier leader, and keeps the state in etcd with writes fenced on its
// leader key. It stops when its lease lapses (the lease's renewals it timed
// itself say so), when etcd says the lease is gone, or when a fenced write
// finds the leader key gone; then it campaigns again.

// Errors that end a term.
var (
	errLeaseLapsed = errors.New("the leader's lease lapsed: no renewal acknowledged in time")
	errLeaseLost   = errors.New("the leader's lease is gone from etcd")
	errDeposed     = errors.New("the leader key is gone: another instance may lead")
	errStopping    = errors.New("fastcnpd is stopping")
)

// maxTxnOps is etcd's default limit of operations per transaction
// (--max-txn-ops): bigger changes go in several transactions.
const maxTxnOps = 128

// haState is the etcd side of a Daemon in HA mode.
type haState struct {
	d        *Daemon
	cfg      config.Etcd
	instance string
	log      logrus.FieldLogger
	cli      *clientv3.Client
	m        *haMetrics

	wg sync.WaitGroup // campaigns running aside (campaign)

	mu   sync.Mutex
	term *term // the current term (nil: follower)
	// epoch is the last epoch this instance led with (0: never).
	epoch atomic.Uint64
}

// term is one leadership of this instance.
type term struct {
	session  *concurrency.Session
	election *concurrency.Election
	key      string // the leader key (its create revision fences every write)
	rev      int64
	epoch    uint64
	won      time.Time
	cancel   context.CancelCauseFunc

	// deadline: the lease is valid until base + deadline (a monotonic
	// clock reading): its last renewal's send time plus the TTL granted,
	// less a margin.
	base     time.Time
	deadline atomic.Int64

	mu      sync.Mutex
	ready   map[string]bool // switches primary and audited in this term
	settled bool
}

func (t *term) leaderCmp() clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(t.key), "=", t.rev)
}

// extend records a renewal sent at sent and granted ttl.
func (t *term) extend(sent time.Time, ttl time.Duration) {
	d := int64(sent.Sub(t.base) + ttl - leaseMargin(ttl))
	for {
		old := t.deadline.Load()
		if d <= old || t.deadline.CompareAndSwap(old, d) {
			return
		}
	}
}

// remaining is how long the lease is still valid (<= 0: lapsed).
func (t *term) remaining() time.Duration {
	return time.Duration(t.deadline.Load()) - time.Since(t.base)
}

// leaseMargin is taken off every renewal: a write checked just before the
// deadline still reaches etcd or the switch before the lease can expire
// there (docs/controller.md, "Fencing").
func leaseMargin(ttl time.Duration) time.Duration { return ttl / 10 }

type haMetrics struct {
	leader   prometheus.Gauge
	terms    prometheus.Counter
	epoch    prometheus.Gauge
	takeover prometheus.Gauge
	ends     *prometheus.CounterVec // reason
	errs     *prometheus.CounterVec // op
}

func newHAMetrics(reg prometheus.Registerer) (*haMetrics, error) {
	m := &haMetrics{
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: "fastcnp_ha_leader",
			Help: "1 while this fastcnpd leads (holds the etcd leadership and runs the switches)."}),
		terms: prometheus.NewCounter(prometheus.CounterOpts{Name: "fastcnp_ha_terms_total",
			Help: "Times this fastcnpd became the leader."}),
		epoch: prometheus.NewGauge(prometheus.GaugeOpts{Name: "fastcnp_ha_epoch",
			Help: "Epoch of this fastcnpd's last term as leader (added to every switch's election ID)."}),
		takeover: prometheus.NewGauge(prometheus.GaugeOpts{Name: "fastcnp_ha_takeover_seconds",
			Help: "Last term: from winning the election to every switch primary and audited, seconds."}),
		ends: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fastcnp_ha_term_ends_total",
			Help: "Terms of this fastcnpd that ended, by reason: stopped, lease_lapsed, lease_lost, deposed, error."},
			[]string{"reason"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fastcnp_ha_etcd_errors_total",
			Help: "etcd operations that failed, by operation: campaign, epoch, load, write, keepalive, resign."},
			[]string{"op"}),
	}
	for _, c := range []prometheus.Collector{m.leader, m.terms, m.epoch, m.takeover, m.ends, m.errs} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("daemon: registering the HA metrics: %w", err)
		}
	}
	return m, nil
}

func newHA(d *Daemon, cfg config.Etcd, instance string) (*haState, error) {
	if instance == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("daemon: instance name: %w", err)
		}
		instance = fmt.Sprintf("%s:%d", h, os.Getpid())
	}
	m, err := newHAMetrics(d.reg)
	if err != nil {
		return nil, err
	}
	return &haState{d: d, cfg: cfg, instance: instance, m: m,
		log: d.log.WithFields(logrus.Fields{"instance": instance, "etcd_prefix": cfg.Prefix})}, nil
}

// etcdTLS builds the client TLS configuration (nil: plaintext).
func etcdTLS(t *config.EtcdTLS) (*tls.Config, error) {
	if t == nil {
		return nil, nil
	}
	ca, err := os.ReadFile(t.CA)
	if err != nil {
		return nil, fmt.Errorf("ha.etcd.tls.ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("ha.etcd.tls.ca %s: no PEM certificate", t.CA)
	}
	c := &tls.Config{RootCAs: pool, ServerName: t.ServerName, MinVersion: tls.VersionTLS12}
	if t.Cert != "" {
		kp, err := tls.LoadX509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, fmt.Errorf("ha.etcd.tls: %w", err)
		}
		c.Certificates = []tls.Certificate{kp}
	}
	return c, nil
}

// current returns the current term, or nil.
func (h *haState) current() *term {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.term
}

// fence is the switches' write guard (p4rt.WithWriteGuard): it passes while
// this instance leads with a lease that has not lapsed.
func (h *haState) fence() error {
	t := h.current()
	if t == nil {
		return fmt.Errorf("%w: not the leader", ErrNotPrimary)
	}
	if t.remaining() <= 0 {
		return fmt.Errorf("%w: %w", ErrNotPrimary, errLeaseLapsed)
	}
	return nil
}

// opContext bounds one etcd operation of a term: the term's end cancels it,
// and none outlives the lease.
func (h *haState) opContext(t *term) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), max(t.remaining(), 100*time.Millisecond))
}

// runHA runs the campaign loop until ctx ends.
func (d *Daemon) runHA(ctx context.Context) error {
	h := d.ha
	tc, err := etcdTLS(h.cfg.TLS)
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: h.cfg.Endpoints, TLS: tc, DialTimeout: 5 * time.Second,
		DialKeepAliveTime: 10 * time.Second, DialKeepAliveTimeout: 3 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("daemon: etcd: %w", err)
	}
	defer func() {
		cli.Close()
		h.wg.Wait() // the campaigns left behind end with the client
	}()
	h.cli = cli
	h.log.WithField("endpoints", h.cfg.Endpoints).Info("HA: campaigning for leadership in etcd")
	for ctx.Err() == nil {
		t, err := h.campaign(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			h.m.errs.WithLabelValues("campaign").Inc()
			h.log.WithError(err).Warn("HA: campaign failed; trying again")
			select {
			case <-ctx.Done():
			case <-time.After(h.cfg.LeaseTTL / 4):
			}
			continue
		}
		d.lead(ctx, t)
	}
	return nil
}

// campaign waits until this instance leads, with a fresh session.
func (h *haState) campaign(ctx context.Context) (*term, error) {
	// The lease is granted here, with a timeout (the session would wait for
	// etcd for ever), and kept alive by the session.
	gctx, gcancel := context.WithTimeout(ctx, h.cfg.LeaseTTL)
	lease, err := h.cli.Grant(gctx, int64(h.cfg.LeaseTTL/time.Second))
	gcancel()
	if err != nil {
		return nil, fmt.Errorf("etcd lease: %w", err)
	}
	s, err := concurrency.NewSession(h.cli, concurrency.WithLease(lease.ID), concurrency.WithContext(ctx))
	if err != nil {
		rctx, rcancel := context.WithTimeout(context.Background(), time.Second)
		_, _ = h.cli.Revoke(rctx, lease.ID)
		rcancel()
		return nil, fmt.Errorf("etcd session: %w", err)
	}
	e := concurrency.NewElection(s, h.cfg.Prefix+"leader")
	cctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	go func() {
		select {
		case <-s.Done(): // our lease is gone: our candidacy with it
			cancel()
		case <-cctx.Done():
		}
	}()
	if lr, err := e.Leader(cctx); err == nil && len(lr.Kvs) > 0 {
		h.log.WithField("leader", string(lr.Kvs[0].Value)).Info("HA: following the current leader")
	}
	// Campaign cleans up after a cancellation with a Resign that waits for
	// etcd without a deadline: it runs aside, and is left to finish (or to
	// the client's Close, which runHA waits for) when etcd is away.
	won := make(chan error, 1)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		won <- e.Campaign(cctx, h.instance)
	}()
	select {
	case err = <-won:
	case <-cctx.Done():
		err = cctx.Err()
	}
	if err != nil {
		h.closeSession(s)
		return nil, fmt.Errorf("etcd election: %w", err)
	}
	t := &term{session: s, election: e, key: e.Key(), rev: e.Rev(), won: time.Now(), base: time.Now(),
		ready: map[string]bool{}}
	// How long the lease is valid is known only from a renewal timed here:
	// one before anything is done as the leader.
	sent := time.Now()
	kctx, kcancel := context.WithTimeout(ctx, h.cfg.LeaseTTL/2)
	resp, err := h.cli.KeepAliveOnce(kctx, s.Lease())
	kcancel()
	if err != nil || resp.TTL <= 0 {
		h.closeSession(s)
		return nil, fmt.Errorf("renewing the lease after winning the election: %w", err)
	}
	if granted := time.Duration(resp.TTL) * time.Second; granted != h.cfg.LeaseTTL {
		h.log.WithFields(logrus.Fields{"lease_ttl": h.cfg.LeaseTTL, "granted": granted}).
			Warn("HA: etcd granted another lease TTL than ha.etcd.lease_ttl (its minimum is 1.5 election timeouts, rounded up)")
	}
	t.extend(sent, time.Duration(resp.TTL)*time.Second)
	return t, nil
}

// closeSession stops renewing the session's lease and revokes it, so that
// its keys (the leader key) go at once rather than at the lease's end. The
// revocation waits at most a second: without etcd the lease runs out by
// itself.
func (h *haState) closeSession(s *concurrency.Session) {
	s.Orphan()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _ = h.cli.Revoke(ctx, s.Lease())
}

// lead runs one term until it ends: epoch, state, switches.
func (d *Daemon) lead(ctx context.Context, t *term) {
	h := d.ha
	tctx, cancel := context.WithCancelCause(ctx)
	t.cancel = cancel
	defer cancel(nil)
	h.mu.Lock()
	h.term = t
	h.mu.Unlock()
	log := h.log.WithField("leader_key", t.key)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		h.keepLease(tctx, t)
	}()
	reason := "error"
	loaded := false
	err := func() error {
		epoch, err := h.nextEpoch(t)
		if err != nil {
			h.m.errs.WithLabelValues("epoch").Inc()
			return fmt.Errorf("epoch: %w", err)
		}
		t.epoch = epoch
		h.epoch.Store(epoch)
		fs, err := h.load(t)
		if err != nil {
			h.m.errs.WithLabelValues("load").Inc()
			return fmt.Errorf("loading the state: %w", err)
		}
		cfg, conns, err := d.buildState(fs, "etcd")
		if err != nil {
			return err
		}
		d.installState(cfg, conns, fs.Ports)
		d.restoreINCFailures(fs.INC, "etcd")
		for _, r := range d.switches {
			r.forget()
		}
		d.mu.Lock()
		d.since = d.opts.Now()
		d.mu.Unlock()
		d.writer.Store(true)
		loaded = true
		h.m.leader.Set(1)
		h.m.terms.Inc()
		h.m.epoch.Set(float64(epoch))
		log.WithFields(logrus.Fields{"epoch": epoch, "connections": conns.Len(),
			"campaign_to_lead": time.Since(t.won).Round(time.Microsecond).String()}).Info("HA: leading")
		d.publish(Event{Kind: EventPrimary, Message: fmt.Sprintf("leader (epoch %d)", epoch)})
		d.run(tctx)
		return nil
	}()
	cause := context.Cause(tctx)
	switch {
	case errors.Is(err, errDeposed) || errors.Is(cause, errDeposed):
		reason = "deposed"
	case errors.Is(cause, errLeaseLapsed):
		reason = "lease_lapsed"
	case errors.Is(cause, errLeaseLost):
		reason = "lease_lost"
	case ctx.Err() != nil:
		reason = "stopped"
		// A last write of the refresh times not yet saved, then hand over
		// at once (the others need not wait for the lease to run out).
		if loaded {
			if ferr := h.flush(t); ferr != nil {
				log.WithError(ferr).Warn("HA: saving the refresh times at the end of the term")
			}
		}
		rctx, rcancel := context.WithTimeout(context.Background(), time.Second)
		if rerr := t.election.Resign(rctx); rerr != nil {
			h.m.errs.WithLabelValues("resign").Inc()
			log.WithError(rerr).Warn("HA: resigning the leadership")
		}
		rcancel()
	}
	d.writer.Store(false)
	h.m.leader.Set(0)
	cancel(errStopping)
	wg.Wait()
	h.mu.Lock()
	h.term = nil
	h.mu.Unlock()
	h.closeSession(t.session)
	h.m.ends.WithLabelValues(reason).Inc()
	lf := logrus.Fields{"reason": reason, "epoch": t.epoch, "led": time.Since(t.won).Round(time.Millisecond).String()}
	if err != nil && reason == "error" {
		log.WithFields(lf).WithError(err).Error("HA: term ended")
	} else if reason != "stopped" {
		log.WithFields(lf).WithError(cause).Warn("HA: term ended, no longer the leader")
	} else {
		log.WithFields(lf).Info("HA: term ended")
	}
	if reason != "stopped" {
		d.publish(Event{Kind: EventBackup, Message: "no longer the leader: " + reason})
	}
}

// keepLease renews the term's lease every TTL/4 and times each renewal
// itself: the lease is valid until the send time of the last acknowledged
// renewal plus the TTL (less a margin). It ends the term when that passes
// (lease_lapsed), or when etcd answers that it no longer has the lease
// (lease_lost: revoked, or expired while this instance was stopped). The
// session's own keep-alive is not watched: its end says neither which nor
// when.
func (h *haState) keepLease(ctx context.Context, t *term) {
	ttl := h.cfg.LeaseTTL
	renewed := make(chan struct{}, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(ttl / 4)
		defer tick.Stop()
		for {
			sent := time.Now()
			kctx, cancel := context.WithTimeout(rctx, ttl/4)
			resp, err := h.cli.KeepAliveOnce(kctx, t.session.Lease())
			cancel()
			switch {
			case err == nil && resp.TTL > 0:
				t.extend(sent, time.Duration(resp.TTL)*time.Second)
				select {
				case renewed <- struct{}{}:
				default:
				}
			case errors.Is(err, rpctypes.ErrLeaseNotFound):
				t.cancel(errLeaseLost)
				return
			case err != nil && rctx.Err() == nil:
				h.m.errs.WithLabelValues("keepalive").Inc()
				h.log.WithError(err).Debug("HA: lease renewal failed")
			}
			select {
			case <-rctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	timer := time.NewTimer(t.remaining())
	defer timer.Stop()
	for {
		left := t.remaining()
		if left <= 0 {
			t.cancel(errLeaseLapsed)
			return
		}
		timer.Reset(left)
		select {
		case <-ctx.Done():
			return
		case <-renewed:
		case <-timer.C:
		}
	}
}

// Keys under the prefix.
func (h *haState) epochKey() string    { return h.cfg.Prefix + "epoch" }
func (h *haState) portsKey() string    { return h.cfg.Prefix + "ports" }
func (h *haState) incKey() string      { return h.cfg.Prefix + "inc" }
func (h *haState) connsPrefix() string { return h.cfg.Prefix + "conns/" }
func (h *haState) connKey(fc *fileConnection) string {
	return fmt.Sprintf("%s%s/%d/%d", h.connsPrefix(), fc.SenderIP, fc.UDPSrcPort, fc.ReceiverQPN)
}

// nextEpoch raises the epoch counter by one under the term's leadership and
// returns it: every term gets an epoch above every earlier one.
func (h *haState) nextEpoch(t *term) (uint64, error) {
	return h.raiseEpoch(t, 0)
}

// raiseEpoch sets the epoch counter to the larger of its value + 1 (at
// least 0 means "the next one") and at least, under the term's leadership.
// It returns the value written.
func (h *haState) raiseEpoch(t *term, atLeast uint64) (uint64, error) {
	ctx, cancel := h.opContext(t)
	defer cancel()
	key := h.epochKey()
	for ctx.Err() == nil {
		resp, err := h.cli.Get(ctx, key)
		if err != nil {
			return 0, err
		}
		var cur uint64
		var modRev int64
		if len(resp.Kvs) == 1 {
			if _, err := fmt.Sscan(string(resp.Kvs[0].Value), &cur); err != nil {
				return 0, fmt.Errorf("%s: %q is not a number: %w", key, resp.Kvs[0].Value, err)
			}
			modRev = resp.Kvs[0].ModRevision
		}
		next := cur + 1
		if atLeast > 0 {
			if atLeast <= cur {
				return cur, nil
			}
			next = atLeast
		}
		if cur == math.MaxUint64 {
			return 0, fmt.Errorf("%s: at its maximum", key)
		}
		tr, err := h.cli.Txn(ctx).If(t.leaderCmp(), clientv3.Compare(clientv3.ModRevision(key), "=", modRev)).
			Then(clientv3.OpPut(key, fmt.Sprint(next))).Else(clientv3.OpGet(t.key)).Commit()
		if err != nil {
			return 0, err
		}
		if tr.Succeeded {
			return next, nil
		}
		if !ours(tr, t) {
			t.cancel(errDeposed)
			return 0, errDeposed
		}
		// The counter moved under us (a deposed leader's write cannot, so
		// this is an operator's): read it again.
	}
	return 0, ctx.Err()
}

// ours reports whether the Else branch of a failed fenced transaction (an
// OpGet of the leader key) found the term's leader key.
func ours(tr *clientv3.TxnResponse, t *term) bool {
	for _, r := range tr.Responses {
		if rr := r.GetResponseRange(); rr != nil {
			for _, kv := range rr.Kvs {
				if string(kv.Key) == t.key && kv.CreateRevision == t.rev {
					return true
				}
			}
		}
	}
	return false
}

// electionID is the election ID a switch runner dials with: its configured
// one, plus the term's epoch in HA mode.
func (d *Daemon) electionID(configured p4rt.Uint128) p4rt.Uint128 {
	if d.ha == nil {
		return configured
	}
	return addUint128(configured, d.ha.epoch.Load())
}

// noteElectionID keeps the epoch in etcd at least as high as the election
// ID a switch made this leader primary with: the p4rt client raises its ID
// when a switch reports a higher one seen before (etcd restored from an
// old backup, or wiped), and the next leader must outrank that too.
//
// With the state file, it records the ID as this instance's claim on the
// file (Daemon.token).
func (d *Daemon) noteElectionID(r *switchRunner, id p4rt.Uint128) {
	if d.ha == nil {
		d.saveMu.Lock()
		d.token[r.name] = id
		d.saveMu.Unlock()
		return
	}
	t := d.ha.current()
	if t == nil {
		return
	}
	epoch, ok := subUint128(id, r.election)
	if !ok || epoch <= t.epoch {
		return
	}
	if _, err := d.ha.raiseEpoch(t, epoch); err != nil {
		d.ha.m.errs.WithLabelValues("epoch").Inc()
		r.log.WithError(err).Warn("HA: raising the epoch to the election ID the switch took")
		return
	}
	r.log.WithFields(logrus.Fields{"election_id": id.String(), "epoch": epoch}).
		Warn("HA: the switch had seen a higher election ID than this term's: epoch raised to match")
}

// switchAudited notes that a switch was read back and repaired: the
// takeover is complete once every switch was, in this term.
func (d *Daemon) switchAudited(r *switchRunner) {
	if d.ha == nil {
		return
	}
	t := d.ha.current()
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.settled {
		return
	}
	t.ready[r.name] = true
	if len(t.ready) < len(d.switches) {
		return
	}
	t.settled = true
	took := time.Since(t.won)
	d.ha.m.takeover.Set(took.Seconds())
	d.ha.log.WithFields(logrus.Fields{"epoch": t.epoch, "took": took.Round(time.Microsecond).String()}).
		Info("HA: every switch primary and audited")
}

// addUint128 returns u + v (saturating).
func addUint128(u p4rt.Uint128, v uint64) p4rt.Uint128 {
	lo, carry := bits.Add64(u.Low, v, 0)
	hi, over := bits.Add64(u.High, 0, carry)
	if over != 0 {
		return p4rt.Uint128{High: math.MaxUint64, Low: math.MaxUint64}
	}
	return p4rt.Uint128{High: hi, Low: lo}
}

// subUint128 returns u - v when it fits 64 bits and is not negative.
func subUint128(u, v p4rt.Uint128) (uint64, bool) {
	lo, borrow := bits.Sub64(u.Low, v.Low, 0)
	hi, under := bits.Sub64(u.High, v.High, borrow)
	return lo, under == 0 && hi == 0
}
