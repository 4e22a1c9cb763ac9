// Package daemon is fastcnpd's runtime: it connects to every switch of the
// configuration over P4Runtime, becomes primary, pushes the pipeline and
// keeps each switch equal to its desired state (controller/fabric): it
// installs changes in batches, repairs drift on reconnection and on a
// periodic audit, learns RDMA connections from announcements (packet-in
// reason 1), expires idle ones, persists the dynamic state atomically, and
// turns digests into logs, Prometheus metrics and an event stream. API
// serves the northbound gRPC API (proto/fastcnp/v1).
package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/controller/fabric"
	"github.com/fastcnp/fastcnp/controller/incroute"
	"github.com/fastcnp/fastcnp/controller/p4rt"
)

// Options configure a Daemon.
type Options struct {
	// Config is the validated configuration (required).
	Config *config.Config
	// Logger receives structured logs (default: logrus' standard logger).
	Logger logrus.FieldLogger
	// Registry receives the metrics (default: a new registry, see Registry).
	Registry *prometheus.Registry
	// AuditInterval is how often every switch is read back and repaired
	// (default 30 s; negative disables the audit).
	AuditInterval time.Duration
	// ExpiryInterval is how often idle connections are looked for
	// (default 1 s).
	ExpiryInterval time.Duration
	// CounterInterval is how often every switch's data-plane counters are
	// polled into metrics, logs and events (default 10 s; negative
	// disables the polling).
	CounterInterval time.Duration
	// ElectionOffset is added to the low half of every switch's election ID
	// (a standby instance runs with a different one).
	ElectionOffset uint64
	// ChunkSize is the number of updates per WriteRequest (0: p4rt's 500).
	ChunkSize int
	// ClientOptions are extra p4rt options for every switch (tests: backoff).
	ClientOptions []p4rt.Option
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Instance names this fastcnpd in the etcd election (HA mode; default
	// hostname:pid).
	Instance string
}

// Daemon is fastcnpd. Create it with New and run it with Run; its methods
// are safe for concurrent use.
type Daemon struct {
	opts    Options
	log     logrus.FieldLogger
	reg     *prometheus.Registry
	metrics *metrics
	events  *broker

	mu        sync.RWMutex
	cfg       *config.Config // with the port overrides applied
	base      *config.Config // as loaded
	conns     *fabric.ConnTable
	overrides map[string]map[uint16]PortOverride

	// savedSeen is each connection's LastSeen as last written to the state
	// file (d.mu): refreshes are written once it is idle_timeout/4 old.
	savedSeen map[fabric.ConnKey]time.Time
	// since is when this instance last became the writer (d.mu): no
	// connection expires sooner than idle_timeout after it.
	since time.Time
	// writer: this instance has been primary (and not demoted since), so it
	// owns the state file; a standby never writes it.
	writer atomic.Bool

	saveMu sync.Mutex // serialises state file writes
	stamp  fileStamp  // the state file as last read or written (saveMu)
	// token is the election ID this instance was made primary with, by
	// switch (saveMu): written into every snapshot, it tells a writer that
	// took over from a stale one (persist.go, supplantedLocked).
	token    map[string]p4rt.Uint128
	slog     stateLog // the state file's log (saveMu)
	switches []*switchRunner
	byName   map[string]*switchRunner
	// auth checks authenticated announcements (nil: announce.auth not set).
	auth *announceAuth

	// incFail are the links and switches the INC tree avoids, incTree the
	// tree installed (d.mu; inc.go).
	incFail fabric.Failures
	incTree *fabric.INCTree
	// incSettled: the shared table was adopted from a leaf after a restart,
	// or changed since the start, so no leaf's table is adopted any more.
	incSettled bool

	// ha is the etcd side in HA mode (config ha.etcd), nil otherwise.
	ha *haState
}

// Sentinel errors of the API methods (the gRPC layer maps them to codes).
var (
	ErrUnknownSwitch = errors.New("unknown switch")
	ErrUnknownPort   = errors.New("unknown port")
	ErrInvalid       = errors.New("invalid value")
	ErrNotInstalled  = errors.New("not installed")
	// ErrNotPrimary: this instance is a standby (primary of no switch, or
	// not of the switch concerned); changes go to the primary instance.
	ErrNotPrimary = errors.New("this fastcnpd is not the primary controller (a standby, or not connected to the switches)")
)

// primaryAnywhere reports whether this instance is the primary of some switch.
func (d *Daemon) primaryAnywhere() bool {
	for _, r := range d.switches {
		if r.isPrimary() {
			return true
		}
	}
	return false
}

// New checks that the state file's directory is writable, loads the state
// file and prepares every switch (pipeline files); it does not connect yet.
func New(opts Options) (*Daemon, error) {
	if opts.Config == nil {
		return nil, errors.New("daemon: no config")
	}
	if opts.Logger == nil {
		opts.Logger = logrus.StandardLogger()
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	if opts.AuditInterval == 0 {
		opts.AuditInterval = 30 * time.Second
	}
	if opts.ExpiryInterval <= 0 {
		opts.ExpiryInterval = time.Second
	}
	if opts.CounterInterval == 0 {
		opts.CounterInterval = 10 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	d := &Daemon{opts: opts, log: opts.Logger, reg: opts.Registry, base: opts.Config, byName: map[string]*switchRunner{},
		token: map[string]p4rt.Uint128{}}
	d.metrics = newMetrics(opts.Registry)
	d.events = newBroker(d.metrics.eventsDropped.Inc, func(n int) { d.metrics.subscribers.Set(float64(n)) })
	auth, warnings, err := newAnnounceAuth(opts.Config.Announce.Auth)
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	for _, w := range warnings {
		d.log.Warn(w)
	}
	d.auth = auth
	if opts.Config.HA != nil {
		// The state lives in etcd and is loaded by each term (ha.go).
		if d.ha, err = newHA(d, opts.Config.HA.Etcd, opts.Instance); err != nil {
			return nil, err
		}
		d.installState(opts.Config, fabric.NewConnTable(0), nil)
	} else {
		if err := checkStateDir(opts.Config.StateFile); err != nil {
			return nil, fmt.Errorf("daemon: %w", err)
		}
		if err := d.loadState(); err != nil {
			return nil, err
		}
	}
	d.mu.Lock()
	_, err = d.computeINCTreeLocked()
	d.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	for i := range d.cfg.Switches {
		r, err := newSwitchRunner(d, d.cfg.Switches[i].Name)
		if err != nil {
			return nil, err
		}
		d.switches = append(d.switches, r)
		d.byName[r.name] = r
	}
	if err := opts.Registry.Register(newCounterCollector(d)); err != nil {
		return nil, fmt.Errorf("daemon: registering the counter metrics: %w", err)
	}
	return d, nil
}

// Registry returns the metrics registry.
func (d *Daemon) Registry() *prometheus.Registry { return d.reg }

// loadState reads the state file and rebuilds the connections and port
// overrides from it.
func (d *Daemon) loadState() error {
	fs, warnings, err := readState(d.base.StateFile)
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	for _, w := range warnings {
		d.log.WithField("state_file", d.base.StateFile).Warn(w)
	}
	cfg, conns, err := d.buildState(fs, "state file "+d.base.StateFile)
	if err != nil {
		return err
	}
	d.saveMu.Lock()
	d.stamp = statStamp(d.base.StateFile)
	if err := d.slog.closeLocked(false); err != nil {
		d.log.WithError(err).Warn("closing the state log")
	}
	d.slog.gen = fs.LogGeneration // the next change starts the next generation
	d.saveMu.Unlock()
	d.installState(cfg, conns, fs.Ports)
	d.restoreINCFailures(fs.INC, "state file "+d.base.StateFile)
	d.log.WithFields(logrus.Fields{"state_file": d.base.StateFile, "connections": conns.Len()}).Info("state loaded")
	return nil
}

// buildState rebuilds the connection table and the configuration with the
// port overrides from a saved state (source names it in errors).
func (d *Daemon) buildState(fs *fileState, source string) (*config.Config, *fabric.ConnTable, error) {
	conns := fabric.NewConnTable(0)
	for i, fc := range fs.Connections {
		c, err := fromFile(fc)
		if err == nil {
			err = conns.Restore(c)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("daemon: %s: connection %d: %w", source, i, err)
		}
	}
	cfg, err := applyOverrides(d.base, fs.Ports)
	if err != nil {
		return nil, nil, fmt.Errorf("daemon: %s: %w", source, err)
	}
	return cfg, conns, nil
}

// installState makes a rebuilt state the current one; what it holds counts
// as saved.
func (d *Daemon) installState(cfg *config.Config, conns *fabric.ConnTable, overrides map[string]map[uint16]PortOverride) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cfg, d.conns, d.overrides = cfg, conns, overrides
	if d.overrides == nil {
		d.overrides = map[string]map[uint16]PortOverride{}
	}
	d.savedSeen = make(map[fabric.ConnKey]time.Time, conns.Len())
	for _, c := range conns.List() {
		d.savedSeen[c.ConnKey] = c.LastSeen
	}
	d.metrics.connections.Set(float64(conns.Len()))
}

// saveLocked writes the whole state file (a new snapshot, the log
// compacted into it); d.mu must be held for writing. Only the writer (an
// instance that is or was primary, not demoted since) may: a standby's
// view is stale and the file is shared. Connection changes go to the log
// instead (appendLocked).
func (d *Daemon) saveLocked() error {
	if !d.writer.Load() {
		return fmt.Errorf("daemon: state file not written: %w", ErrNotPrimary)
	}
	if d.ha != nil {
		return d.ha.saveOverridesLocked(d.overrides)
	}
	d.saveMu.Lock()
	defer d.saveMu.Unlock()
	if err := d.supplantedLocked(); err != nil {
		return err
	}
	return d.compactLocked()
}

// claimWriter makes this instance the state file's writer when one of its
// switches made it primary; the expiry grace period starts then.
func (d *Daemon) claimWriter() {
	if d.ha != nil {
		return // the etcd leadership makes the writer (ha.go)
	}
	if d.writer.Swap(true) {
		return
	}
	d.mu.Lock()
	d.since = d.opts.Now()
	d.mu.Unlock()
	d.log.Info("primary: this instance now writes the state file")
}

// releaseWriter gives up the state file when a switch demoted this instance
// (another controller is primary) and it is primary of no switch.
func (d *Daemon) releaseWriter() {
	if d.ha != nil {
		return
	}
	if d.primaryAnywhere() || !d.writer.Swap(false) {
		return
	}
	d.disownLog()
	d.log.Info("standby: this instance no longer writes the state file")
}

// fileStamp identifies a version of the state file and its log.
type fileStamp struct {
	mod, logMod   time.Time
	size, logSize int64
	ok, logOK     bool
}

func statStamp(path string) fileStamp {
	var st fileStamp
	if fi, err := os.Stat(path); err == nil {
		st.mod, st.size, st.ok = fi.ModTime(), fi.Size(), true
	}
	if fi, err := os.Stat(logPath(path)); err == nil {
		st.logMod, st.logSize, st.logOK = fi.ModTime(), fi.Size(), true
	}
	return st
}

// reloadIfChanged rereads the state file when another fastcnpd instance
// (the previous primary, sharing the file) wrote it since this one last did.
func (d *Daemon) reloadIfChanged() {
	if d.ha != nil {
		return // each term loads the state from etcd
	}
	d.saveMu.Lock()
	changed := statStamp(d.base.StateFile) != d.stamp
	d.saveMu.Unlock()
	if !changed {
		return
	}
	if err := d.loadState(); err != nil {
		d.log.WithError(err).Error("reloading the state file written by another instance")
		return
	}
	d.kickAll()
}

// Run connects to every switch and keeps them in their desired state until
// ctx ends; it returns once every goroutine it started has ended. When ctx
// ends a primary writes the state file a last time (refresh times not yet
// saved), before it lets the switches go; a standby leaves it alone.
func (d *Daemon) Run(ctx context.Context) error {
	if d.ha != nil {
		return d.runHA(ctx)
	}
	// The switches are let go only after the final write: while this
	// instance is still their primary no standby can take over and write
	// the shared file in between (its changes would be lost under this
	// final snapshot).
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.run(rctx)
	}()
	<-ctx.Done()
	var err error
	if d.writer.Load() {
		// The final write compacts the log into the snapshot, unless another
		// instance took the file over meanwhile (it is then left as that one
		// wrote it: only refresh times newer than idle_timeout/4 are not saved).
		d.mu.Lock()
		err = d.saveLocked()
		d.mu.Unlock()
		if errors.Is(err, errSupplanted) {
			err = nil
		}
	}
	stop()
	<-done
	return err
}

// run is Run without the final save (what a crash leaves behind).
func (d *Daemon) run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, r := range d.switches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.run(ctx)
		}()
		if d.opts.CounterInterval > 0 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.counterLoop(ctx, d.opts.CounterInterval)
			}()
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		d.expiryLoop(ctx)
	}()
	wg.Wait()
	d.closeLog()
}

func (d *Daemon) expiryLoop(ctx context.Context) {
	t := time.NewTicker(d.opts.ExpiryInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			d.expire()
		}
	}
}

func (d *Daemon) expire() {
	if !d.primaryAnywhere() {
		return // a standby leaves the shared state to the primary
	}
	d.mu.Lock()
	gone := d.conns.Expire(d.opts.Now(), d.cfg.Announce.IdleTimeout, d.since)
	var err error
	if len(gone) > 0 {
		recs := make([]logRecord, 0, len(gone))
		for _, c := range gone {
			recs = append(recs, deleteRecord(c.ConnKey))
		}
		err = d.appendLocked(recs)
		d.metrics.connections.Set(float64(d.conns.Len()))
	}
	d.mu.Unlock()
	for _, c := range gone {
		d.log.WithFields(logrus.Fields{"connection": c.ConnKey.String(), "conn_index": c.Index}).Info("connection idle, removed")
		d.publish(Event{Kind: EventConnectionRemoved, Message: "idle timeout", Fields: connFields(c)})
	}
	if err != nil {
		d.log.WithError(err).Error("saving state")
	}
	if len(gone) > 0 {
		d.kickAll()
	}
}

func (d *Daemon) publish(e Event) {
	if e.Time.IsZero() {
		e.Time = d.opts.Now()
	}
	d.events.publish(e)
}

// Subscribe returns a stream of events and its cancel function.
func (d *Daemon) Subscribe(buffer int) (<-chan Event, func()) { return d.events.subscribe(buffer) }

func (d *Daemon) kickAll() {
	for _, r := range d.switches {
		r.kickNow()
	}
}

// desired computes the desired state of a switch.
func (d *Daemon) desired(r *switchRunner, prev incroute.Table) (*fabric.Result, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return fabric.Desired(r.info, fabric.Input{Config: d.cfg, Switch: d.cfg.Switch(r.name),
		Connections: d.conns.List(), PrevINC: prev, INCTree: d.incTree})
}

// SwitchStatus is a switch's connection state.
type SwitchStatus struct {
	Name, Address string
	DeviceID      uint64
	Connected     bool
	Primary       bool
	Entries       int
	LastError     string
	Warnings      []string
}

// Switches returns the status of every switch in config order.
func (d *Daemon) Switches() []SwitchStatus {
	out := make([]SwitchStatus, 0, len(d.switches))
	for _, r := range d.switches {
		out = append(out, r.status())
	}
	return out
}

func (d *Daemon) runner(name string) (*switchRunner, error) {
	r, ok := d.byName[name]
	if !ok {
		names := make([]string, 0, len(d.byName))
		for n := range d.byName {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("%w %q (known: %v)", ErrUnknownSwitch, name, names)
	}
	return r, nil
}

// runners returns the runner of switch sw, or every runner for "".
func (d *Daemon) runners(sw string) ([]*switchRunner, error) {
	if sw == "" {
		return d.switches, nil
	}
	r, err := d.runner(sw)
	if err != nil {
		return nil, err
	}
	return []*switchRunner{r}, nil
}

// PortInfo is a port's effective settings and data-plane parameters.
type PortInfo struct {
	Switch   string
	Port     uint16
	Settings config.PortSettings
	Params   fabric.PortParams
}

// PortSettings returns the effective settings of a port.
func (d *Daemon) PortSettings(sw string, port uint16) (PortInfo, error) {
	if _, err := d.runner(sw); err != nil {
		return PortInfo{}, err
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	return portInfoLocked(d.cfg, sw, port)
}

func portInfoLocked(cfg *config.Config, sw string, port uint16) (PortInfo, error) {
	s := cfg.Switch(sw)
	p := s.Port(port)
	if p == nil {
		var known []uint16
		for _, q := range s.Ports {
			known = append(known, q.Number)
		}
		return PortInfo{}, fmt.Errorf("%w %d on switch %s (configured: %v)", ErrUnknownPort, port, sw, known)
	}
	pp, err := fabric.ComputePortParams(s, p, cfg.QoS.LosslessPriority)
	if err != nil {
		return PortInfo{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return PortInfo{Switch: sw, Port: port, Settings: p.Settings, Params: pp}, nil
}

// SetPortSettings changes settings of a port, persists the change and
// installs it. The returned error wraps ErrNotInstalled when the change was
// saved but the switch could not take it now (it is installed when the
// switch is back).
func (d *Daemon) SetPortSettings(ctx context.Context, sw string, port uint16, o PortOverride) (PortInfo, error) {
	r, err := d.runner(sw)
	if err != nil {
		return PortInfo{}, err
	}
	if r.isBackup() || !d.writer.Load() {
		return PortInfo{}, fmt.Errorf("switch %s: %w", sw, ErrNotPrimary)
	}
	d.mu.Lock()
	merged := mergeOverride(d.overrides[sw][port], o)
	trial := map[string]map[uint16]PortOverride{sw: {port: merged}}
	if d.cfg.Switch(sw).Port(port) == nil {
		d.mu.Unlock()
		_, err := d.PortSettings(sw, port)
		return PortInfo{}, err
	}
	// Check the change on top of the current settings before keeping it.
	cfg, err := applyOverrides(d.cfg, trial)
	if err == nil {
		_, err = portInfoLocked(cfg, sw, port)
	}
	if err != nil {
		d.mu.Unlock()
		return PortInfo{}, err
	}
	if d.overrides[sw] == nil {
		d.overrides[sw] = map[uint16]PortOverride{}
	}
	d.overrides[sw][port] = merged
	d.cfg = cfg
	info, _ := portInfoLocked(cfg, sw, port)
	err = d.saveLocked()
	d.mu.Unlock()
	if err != nil {
		return info, err
	}
	d.log.WithFields(logrus.Fields{"switch": sw, "port": port, "qth_bytes": info.Params.QthBytes,
		"mode": info.Settings.Mode}).Info("port settings changed")
	d.publish(Event{Kind: EventPortSettings, Switch: sw, Port: port,
		Message: fmt.Sprintf("qth %d B, mode %s", info.Params.QthBytes, info.Settings.Mode)})
	if err := r.syncWait(ctx); err != nil {
		return info, fmt.Errorf("%w on %s: %v", ErrNotInstalled, sw, err)
	}
	return info, nil
}

// Connections returns the connections ordered by conn_index.
func (d *Daemon) Connections() []fabric.Connection {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.conns.List()
}

// AddConnection adds (or refreshes) a static connection on every switch.
func (d *Daemon) AddConnection(ctx context.Context, c fabric.Connection) (fabric.Connection, error) {
	if !d.primaryAnywhere() {
		return fabric.Connection{}, ErrNotPrimary
	}
	c.Source, c.Static, c.LastSeen = "api", true, d.opts.Now()
	d.mu.RLock()
	err := fabric.CheckINCMembership(d.cfg, c)
	d.mu.RUnlock()
	if err != nil {
		return c, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	got, changed, err := d.upsert(c)
	if err != nil {
		return got, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if changed {
		return got, d.syncAll(ctx)
	}
	return got, nil
}

// RemoveConnection removes a connection from every switch.
func (d *Daemon) RemoveConnection(ctx context.Context, k fabric.ConnKey) error {
	if !d.primaryAnywhere() {
		return ErrNotPrimary
	}
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
	d.publish(Event{Kind: EventConnectionRemoved, Message: "removed", Fields: connFields(c)})
	return d.syncAll(ctx)
}

// upsert adds or refreshes a connection (a new announced one within the
// quotas of its ingress port and sender) and logs it to the state file
// (upsertLocked says when).
func (d *Daemon) upsert(c fabric.Connection) (fabric.Connection, bool, error) {
	d.mu.Lock()
	got, changed, rec, err := d.upsertLocked(c)
	if rec != nil {
		if serr := d.appendLocked([]logRecord{*rec}); serr != nil {
			if changed {
				err = serr
			} else {
				// The refresh holds in memory either way: a failed write is
				// only logged, and the next refresh tries again.
				d.log.WithError(serr).WithField("connection", got.ConnKey.String()).Warn("saving a refresh time")
			}
		}
	}
	d.mu.Unlock()
	if err == nil && changed {
		d.publish(Event{Kind: EventConnectionAdded, Message: got.Source, Fields: connFields(got)})
	}
	return got, changed, err
}

// upsertLocked adds or refreshes a connection in the table (d.mu held for
// writing) and returns the state file record to write: when the table
// changed, or when the refresh time saved for the connection is
// idle_timeout/4 old (so that a restarted or standby instance, which reads
// the file, does not take a live connection for idle; refreshes in between
// are not written).
func (d *Daemon) upsertLocked(c fabric.Connection) (fabric.Connection, bool, *logRecord, error) {
	var got fabric.Connection
	var changed bool
	err := d.checkQuotaLocked(c)
	if err == nil {
		got, changed, err = d.conns.Upsert(c)
	}
	var rec *logRecord
	switch {
	case err != nil:
	case changed:
		d.metrics.connections.Set(float64(d.conns.Len()))
		r := putRecord(got)
		rec = &r
	case !got.Static && got.LastSeen.Sub(d.savedSeen[got.ConnKey]) >= d.cfg.Announce.IdleTimeout/4:
		r := putRecord(got)
		rec = &r
	}
	return got, changed, rec, err
}

// syncAll installs the current desired state on every switch and waits.
func (d *Daemon) syncAll(ctx context.Context) error {
	var errs []error
	for _, r := range d.switches {
		if err := r.syncWait(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.name, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrNotInstalled, errors.Join(errs...))
	}
	return nil
}

// INCRoutes returns a switch's INC route table (nil without INC) and its
// next hops.
func (d *Daemon) INCRoutes(sw string) (incroute.Table, []config.INCNextHop, error) {
	r, err := d.runner(sw)
	if err != nil {
		return nil, nil, err
	}
	d.mu.RLock()
	s := d.cfg.Switch(sw)
	var hops []config.INCNextHop
	if s.INC != nil {
		hops = append(hops, s.INC.NextHops...)
	}
	d.mu.RUnlock()
	t := r.incTable()
	if t == nil && len(hops) > 0 {
		res, err := d.desired(r, nil)
		if err != nil {
			return nil, nil, err
		}
		t = res.INC
	}
	return t, hops, nil
}

// PortStatus is the state and counters of one port.
type PortStatus struct {
	Switch    string
	Port      uint16
	Settings  config.PortSettings
	State     string
	LastEvent string
	EventTime time.Time
	Queue     uint64
	Counters  map[string]p4rt.CounterCell
}

// Ports returns the state of every configured port of a switch ("" = all
// switches), with counters read from the switches that are connected.
func (d *Daemon) Ports(ctx context.Context, sw string) ([]PortStatus, error) {
	rs, err := d.runners(sw)
	if err != nil {
		return nil, err
	}
	var out []PortStatus
	for _, r := range rs {
		ps, err := r.portStatuses(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	return out, nil
}

// QueueStatus is the counters of one egress queue (port, priority).
type QueueStatus struct {
	Switch   string
	Port     uint16
	Priority uint8
	// Lossless: Priority is the PFC-protected one (qos.lossless_priority).
	Lossless bool
	// Counters by short counter name; empty while the switch is away.
	Counters map[string]p4rt.CounterCell
}

// Queues returns the counters of the 8 queues of the configured ports of a
// switch ("" = every switch), or of one port (0 = every configured port),
// read from the switches that are connected. A port that no selected
// switch configures is ErrUnknownPort.
func (d *Daemon) Queues(ctx context.Context, sw string, port uint16) ([]QueueStatus, error) {
	rs, err := d.runners(sw)
	if err != nil {
		return nil, err
	}
	var out []QueueStatus
	found := port == 0
	for _, r := range rs {
		qs, ok, err := r.queueStatuses(ctx, port)
		if err != nil {
			return nil, err
		}
		found = found || ok
		out = append(out, qs...)
	}
	if !found {
		if sw != "" {
			_, err := d.PortSettings(sw, port) // the error names the configured ports
			return nil, err
		}
		return nil, fmt.Errorf("%w %d on any switch", ErrUnknownPort, port)
	}
	return out, nil
}

func connFields(c fabric.Connection) map[string]string {
	m := map[string]string{
		"sender_ip": c.SenderIP.String(), "udp_src_port": fmt.Sprint(c.UDPSrcPort),
		"receiver_qpn": fmt.Sprint(c.ReceiverQPN), "sender_qpn": fmt.Sprint(c.SenderQPN),
		"flags": fmt.Sprint(c.Flags), "conn_index": fmt.Sprint(c.Index), "inc_group": fmt.Sprint(c.INCGroup),
		"worker_rank": fmt.Sprint(c.WorkerRank),
	}
	if !c.Ingress.IsZero() {
		m["ingress"] = c.Ingress.String()
	}
	if c.Owner.MAC != ([6]byte{}) {
		m["owner_mac"] = net.HardwareAddr(c.Owner.MAC[:]).String()
	}
	if c.Owner.Key != 0 {
		m["owner_key"] = fmt.Sprint(c.Owner.Key)
	}
	return m
}

// subnetOf reports whether ip is in one of the subnets.
func subnetOf(ip netip.Addr, subnets []netip.Prefix) bool {
	for _, p := range subnets {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
