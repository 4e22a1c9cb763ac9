package testbed

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/internal/netns"
	"github.com/fastcnp/fastcnp/internal/units"
)

// Options configure Run.
type Options struct {
	// Topology is the validated topology to build.
	Topology *Topology
	// Mode is the congestion-feedback mode: ecn (switch ports mark, hosts
	// run plain DCQCN) or fastcnp (switch CNPs with a window, hosts run
	// DCQCN with the fastcnp window).
	Mode config.Mode
	// Binaries are the commands to run (see BuildBinaries).
	Binaries Binaries
	// WorkDir receives configurations, logs and statistics (required).
	WorkDir string
	// Duration overrides the topology's run duration.
	Duration time.Duration
	// SampleInterval is how often switch queues are sampled (default 100ms).
	SampleInterval time.Duration
	// StatsInterval is the host agents' sampling period (default 100ms).
	StatsInterval time.Duration
	// HostArgs and SwitchArgs are extra command-line arguments of every
	// fastcnp-host and fastcnp-switch.
	HostArgs, SwitchArgs []string
	// DCQCNParams is fastcnp-host's --params (default: the agent's).
	DCQCNParams string
	// CC is the hosts' sender algorithm (fastcnp-host --cc): "" = the one of
	// Mode (dcqcn for ecn, dcqcn-fastcnp for fastcnp); otherwise Mode must
	// be CCMode(CC) or empty (then it is set to it). CCParams is
	// --cc-params ("" = the agent's default set).
	CC, CCParams string
	// IdleTimeout is fastcnpd's announce.idle_timeout (0: the default,
	// 60 s): connections not announced again for so long are removed.
	IdleTimeout time.Duration
	// AnnounceKeys authenticates the announcements: the run gives every
	// host a random key (fastcnp-host --announce-key) and fastcnpd their
	// key file (announce.auth), each host's key allowed for its address.
	AnnounceKeys bool
	// ForgedKeyHosts (with AnnounceKeys) get a key fastcnpd does not hold:
	// their key ID with another secret, as a host forging announcements.
	ForgedKeyHosts []string
	// LinkEvents fail or repair links between switches during the run.
	LinkEvents []LinkEvent
	// Nice is the niceness of every process the run starts (0: unchanged;
	// DefaultNice in the runner and the tests). The emulation is real
	// time: under other load on a small machine, a negative niceness keeps
	// its switches and agents from waiting tens of milliseconds for a core.
	Nice int
	// Log receives progress (nil: a logger at warning level).
	Log logrus.FieldLogger
}

// FlowResult is one flow's outcome.
type FlowResult struct {
	Name   string `json:"name"`
	Src    string `json:"src"`
	Dst    string `json:"dst"`
	Victim bool   `json:"victim,omitempty"`
	// FairShareBps is the flow's reference rate in payload bits/s: for long
	// flows the max-min fair share (FairShares), for sized flows the mean
	// rate of the fluid ideal (IdealRateBps), 0 for INC flows.
	FairShareBps float64 `json:"fair_share_bps"`
	// ThroughputBps is the receiver's in-order payload rate: for flows with
	// a size, bytes over completion time; for the others the mean of the
	// rate samples over the flow's steady part (after a warm-up of a
	// quarter of its time, at most 1 s).
	ThroughputBps float64 `json:"throughput_bps"`
	// ShareOfFair is ThroughputBps / FairShareBps.
	ShareOfFair float64 `json:"share_of_fair"`
	// IdealFCTMs is a sized flow's completion time in the fluid
	// processor-sharing max-min model (Topology.IdealFCTs), IdealRateBps
	// its size over that time, and Slowdown = FCTMs / IdealFCTMs.
	IdealFCTMs   float64 `json:"ideal_fct_ms,omitempty"`
	IdealRateBps float64 `json:"ideal_rate_bps,omitempty"`
	Slowdown     float64 `json:"slowdown,omitempty"`
	// StartUnixNs is when the flow was due to start, EndUnixNs when its
	// sender had every byte acknowledged (sized flows), StartLateMs how
	// late its agent started it: all on the wall clock the agents share.
	StartUnixNs int64   `json:"start_unix_ns,omitempty"`
	EndUnixNs   int64   `json:"end_unix_ns,omitempty"`
	StartLateMs float64 `json:"start_late_ms,omitempty"`
	// FirstRxUnixNs and LastRxUnixNs are the receiver's first and last
	// accepted packet.
	FirstRxUnixNs int64 `json:"first_rx_unix_ns,omitempty"`
	LastRxUnixNs  int64 `json:"last_rx_unix_ns,omitempty"`
	// BytesReceived is in-order payload at the receiver.
	BytesReceived int64 `json:"bytes_received"`
	// CNPsSwitch and CNPsNP are the CNPs the sender received from switches
	// (fastcnp) and from the receiver's notification point (ecn).
	CNPsSwitch uint64 `json:"cnps_switch"`
	CNPsNP     uint64 `json:"cnps_np"`
	// ECEAcks and INTAcks are the sender's ACKs that carried the ECN echo
	// (dctcp's signal) and INT records (hpcc's).
	ECEAcks uint64 `json:"ece_acks,omitempty"`
	INTAcks uint64 `json:"int_acks,omitempty"`
	// ECNMarks are CE-marked packets that reached the receiver.
	ECNMarks uint64 `json:"ecn_marks"`
	// Retransmits and Timeouts are the sender's.
	Retransmits uint64 `json:"retransmits"`
	Timeouts    uint64 `json:"timeouts"`
	// PauseRx counts the PFC frames pausing the lossless priority that the
	// sender's host received (XOFF and refreshes); PausedMs is how long
	// they held the flow's sender.
	PauseRx  uint64  `json:"pause_rx"`
	PausedMs float64 `json:"paused_ms"`
	// Done reports that a sized flow completed; FCTMs its completion time.
	Done  bool    `json:"done"`
	FCTMs float64 `json:"fct_ms,omitempty"`
	// RTTMeanUs, RTTP99Us, RTTMaxUs summarise the sender's RTT samples.
	RTTMeanUs float64 `json:"rtt_mean_us,omitempty"`
	RTTP99Us  float64 `json:"rtt_p99_us,omitempty"`
	RTTMaxUs  float64 `json:"rtt_max_us,omitempty"`
	// Sized reports a flow with a size (it ends when done).
	Sized bool `json:"sized,omitempty"`
	// INC reports a worker's INC flow (its Done: every vector sent);
	// INCDupsSent its injected duplicates.
	INC         bool   `json:"inc,omitempty"`
	INCDupsSent uint64 `json:"inc_dups_sent,omitempty"`
	// Series is the flow's rate over time (agent time).
	Series []RatePoint `json:"series"`
}

// Result is what a run measured.
type Result struct {
	Topology string      `json:"topology"`
	Mode     config.Mode `json:"mode"`
	// CC is the hosts' sender algorithm (empty in results of older runs:
	// the mode's DCQCN variant).
	CC     string `json:"cc,omitempty"`
	Target Target `json:"target"`
	// Started is the agents' common start instant (--start-at): time 0 of
	// the flows' start times, the rate series and the queue samples.
	// Duration runs from it to the end of the measurement.
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration_ns"`
	// Flows in the order of the topology.
	Flows []FlowResult `json:"flows"`
	// Switches in the order of device ID.
	Switches []SwitchCounters `json:"switches"`
	// Queues are the switch egress queues over time.
	Queues []QueueSample `json:"queues"`
	// MakespanMs is the time from the first due start to the last
	// completion of the sized flows on the common clock (0 unless all
	// completed); IdealMakespanMs the same in the fluid model.
	MakespanMs      float64 `json:"makespan_ms,omitempty"`
	IdealMakespanMs float64 `json:"ideal_makespan_ms,omitempty"`
	// MaxStartLateMs is the most any agent started a flow after it was due
	// (the synchronisation of the flows' starts).
	MaxStartLateMs float64 `json:"max_start_late_ms"`
	// Links is the physical sanity check of every link the flows crossed.
	Links []LinkUse `json:"links,omitempty"`
	// INC lists each INC message as its destination checked it.
	INC []INCMessage `json:"inc,omitempty"`
	// INCPartials counts partial aggregates that reached hosts: offsets
	// no upper switch aggregated (none for the group, or a failure).
	INCPartials uint64 `json:"inc_partials,omitempty"`
	// LinkEvents are the link failures and repairs injected during the run.
	LinkEvents []LinkEventResult `json:"link_events,omitempty"`
	// WorkDir holds the configurations, logs and raw statistics.
	WorkDir string `json:"work_dir"`
	// CPUSeconds is the CPU time (user + system) each process of the run
	// used up to the end of the flows, by name (switches, hosts,
	// "fastcnpd"; absent for an in-process controller).
	CPUSeconds map[string]float64 `json:"cpu_seconds,omitempty"`
	// LoadAvg is the machine's 1-minute load average when the flows
	// started and when they ended (/proc/loadavg; 0 if unreadable): the
	// rest of the machine competes for the same cores.
	LoadAvg [2]float64 `json:"load_avg"`
}

// Flow returns the result of the named flow, or nil.
func (r *Result) Flow(name string) *FlowResult {
	for i := range r.Flows {
		if r.Flows[i].Name == name {
			return &r.Flows[i]
		}
	}
	return nil
}

// Victim returns the first flow marked as victim, or nil.
func (r *Result) Victim() *FlowResult {
	for i := range r.Flows {
		if r.Flows[i].Victim {
			return &r.Flows[i]
		}
	}
	return nil
}

// LosslessDrops sums the lossless-class drops of every switch.
func (r *Result) LosslessDrops() uint64 {
	var n uint64
	for _, s := range r.Switches {
		n += s.LosslessDrops
	}
	return n
}

// Totals sums a switch counter over every switch.
func (r *Result) Totals() SwitchCounters {
	t := SwitchCounters{Name: "total"}
	for _, s := range r.Switches {
		t.PauseTx += s.PauseTx
		t.PauseRx += s.PauseRx
		t.SwitchCNPs += s.SwitchCNPs
		t.ECNMarks += s.ECNMarks
		t.Drops += s.Drops
		t.LosslessDrops += s.LosslessDrops
		t.NoRouteDrops += s.NoRouteDrops
		t.HostEdgeLosslessDrops += s.HostEdgeLosslessDrops
		t.FabricLosslessDrops += s.FabricLosslessDrops
	}
	return t
}

// DefaultNice is the niceness the runner and the tests give the processes
// of a run (Options.Nice).
const DefaultNice = -10

// debugPortOffset: a switch's debug endpoint listens on its gRPC port
// plus this, on the fabric namespace's loopback.
const debugPortOffset = 1000

// hostAlgo is the sender algorithm of a mode.
func hostAlgo(m config.Mode) string {
	if m == config.ModeECN {
		return "dcqcn"
	}
	return "dcqcn-fastcnp"
}

// CCMode returns the switch port mode a sender algorithm needs: ecn for
// dcqcn and dctcp (RED marking; for dctcp with Kmin = Kmax = K, Pmax 1: see
// Run), fastcnp for dcqcn-fastcnp, int for hpcc (INT records) and for the
// RTT-based algorithms (timely, pid, lstm-pid*), which need no signal from
// the switch: a port in mode int forwards packets without an INT header
// untouched (no marks, no CNPs).
func CCMode(cc string) config.Mode {
	switch cc {
	case "dcqcn", "dctcp":
		return config.ModeECN
	case "dcqcn-fastcnp":
		return config.ModeFastCNP
	}
	return config.ModeINT
}

// RunSpec resolves a run name of the runner (fastcnp-testbed -modes): a
// switch mode (ecn, fastcnp: DCQCN hosts, as before) or a host algorithm
// name (cc.Names: its CCMode). It returns the mode and the algorithm ("" for
// a mode's own DCQCN variant).
func RunSpec(name string, known []string) (config.Mode, string, error) {
	switch m := config.Mode(name); m {
	case config.ModeECN, config.ModeFastCNP:
		return m, "", nil
	}
	for _, k := range known {
		if k == name {
			return CCMode(name), name, nil
		}
	}
	return "", "", fmt.Errorf("unknown run %q: want ecn, fastcnp or a sender algorithm (%s)", name, strings.Join(known, ", "))
}

// Run builds the topology in fresh network namespaces, starts the
// switches, fastcnpd and the host agents, runs the flows for the
// topology's duration, collects the statistics and tears everything
// down (namespaces included) before returning. It needs root.
func Run(ctx context.Context, o Options) (res *Result, err error) {
	if o.Topology == nil || o.WorkDir == "" {
		return nil, errors.New("testbed: Run needs a topology and a work directory")
	}
	if o.Binaries.Switch == "" || o.Binaries.Host == "" {
		return nil, fmt.Errorf("%w: need fastcnp-switch and fastcnp-host (got %+v)", ErrMissingCommand, o.Binaries)
	}
	algo := hostAlgo(o.Mode)
	if o.CC != "" {
		if o.Mode != "" && o.Mode != CCMode(o.CC) {
			return nil, fmt.Errorf("testbed: sender algorithm %s runs on ports in mode %s, not %s", o.CC, CCMode(o.CC), o.Mode)
		}
		o.Mode, algo = CCMode(o.CC), o.CC
	}
	if o.Mode == "" {
		o.Mode = config.ModeFastCNP
		algo = hostAlgo(o.Mode)
	}
	if o.SampleInterval <= 0 {
		o.SampleInterval = 100 * time.Millisecond
	}
	if o.StatsInterval <= 0 {
		o.StatsInterval = 100 * time.Millisecond
	}
	log := o.Log
	if log == nil {
		l := logrus.New()
		l.SetLevel(logrus.WarnLevel)
		log = l
	}
	t := o.Topology
	p := t.Params()
	dur := p.Duration
	if o.Duration > 0 {
		dur = o.Duration
	}
	if err := os.MkdirAll(o.WorkDir, 0o755); err != nil {
		return nil, fmt.Errorf("testbed: work dir: %w", err)
	}
	log = log.WithFields(logrus.Fields{"topology": t.Name, "mode": o.Mode})

	tb, err := netns.NewTestbed(log)
	if err != nil {
		return nil, err
	}
	var procs procSet
	// Teardown order: processes first (they hold sockets in the
	// namespaces), then the namespaces.
	defer func() {
		if serr := procs.stopAll(5 * time.Second); serr != nil && err == nil {
			err = serr
		}
		if cerr := tb.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("testbed: cleanup: %w", cerr))
		}
	}()

	linkEnds, err := t.checkLinkEvents(o.LinkEvents)
	if err != nil {
		return nil, err
	}
	fab, hostNS, err := build(ctx, tb, t)
	if err != nil {
		return nil, err
	}
	log.Debug("namespaces and links ready")

	// Switches.
	type swInfo struct {
		name      string
		debugAddr string
		grpcAddr  string
		proc      *proc
		peers     map[uint16]Endpoint
	}
	var sws []*swInfo
	for _, name := range t.SwitchNames() {
		sw := t.Switches[name]
		si := &swInfo{name: name, peers: map[uint16]Endpoint{},
			grpcAddr:  grpcAddr(sw.GRPCPort),
			debugAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(sw.GRPCPort+debugPortOffset))}
		argv := []string{o.Binaries.Switch, "--device-id", strconv.FormatUint(sw.DeviceID, 10)}
		for _, sp := range t.SwitchPorts(name) {
			argv = append(argv, "-i", fmt.Sprintf("%d@%s", sp.Port, sp.IfName(name)))
			si.peers[sp.Port] = sp.Peer
		}
		argv = append(argv, "--grpc-server-addr", si.grpcAddr, "--debug-addr", si.debugAddr)
		argv = append(argv, t.switchArgs(name)...)
		argv = append(argv, o.SwitchArgs...)
		if si.proc, err = startProc(fab, name, filepath.Join(o.WorkDir, name+".log"), argv, o.Nice, log); err != nil {
			return nil, err
		}
		procs.add(si.proc)
		sws = append(sws, si)
	}
	client := nsHTTPClient(fab)
	defer client.CloseIdleConnections()
	for _, si := range sws {
		err := waitFor(ctx, 15*time.Second, 50*time.Millisecond, "switch "+si.name, func() (bool, error) {
			if si.proc.exited() {
				return false, fmt.Errorf("exited: %v: %s", si.proc.err, si.proc.tail(2000))
			}
			_, err := fetchDump(ctx, client, si.debugAddr)
			return err == nil, err
		})
		if err != nil {
			return nil, err
		}
	}
	log.Debug("switches up")

	// Controller.
	var hostKeys map[string]string
	keyFile := ""
	if o.AnnounceKeys {
		keyFile = filepath.Join(o.WorkDir, "announce-keys")
		if hostKeys, err = t.writeAnnounceKeys(keyFile, o.WorkDir, o.ForgedKeyHosts); err != nil {
			return nil, err
		}
	}
	co := ControllerOptions{
		Mode: o.Mode, APIListen: "127.0.0.1:9560", MetricsListen: "",
		StateFile: filepath.Join(o.WorkDir, "fastcnpd-state.json"), IdleTimeout: o.IdleTimeout, AnnounceKeyFile: keyFile,
	}
	if algo == "dctcp" {
		// DCTCP marking: every ECT packet at or above K (the HPCC simulator:
		// Kmin = Kmax = K, Pmax 1; fastcnpd wants Kmin < Kmax, so Kmin is
		// one byte less), K = the topology's RED Kmax.
		co.RED = &config.RED{Kmin: p.REDKmax - 1, Kmax: p.REDKmax, Pmax: 1}
	}
	cfg, err := t.ControllerConfig(co)
	if err != nil {
		return nil, err
	}
	yml, err := cfg.Marshal()
	if err != nil {
		return nil, fmt.Errorf("testbed: controller config: %w", err)
	}
	cfgPath := filepath.Join(o.WorkDir, "fastcnpd.yaml")
	if err := os.WriteFile(cfgPath, yml, 0o644); err != nil {
		return nil, fmt.Errorf("testbed: controller config: %w", err)
	}
	ctl, err := startController(ctx, o, fab, cfg, cfgPath, log)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := ctl.stop(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	for _, name := range t.SwitchNames() {
		sw := t.Switches[name]
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sw.GRPCPort))
		want := len(cfg.Switch(name).Routes)
		err := waitFor(ctx, 20*time.Second, 100*time.Millisecond, "fastcnpd programming "+name, func() (bool, error) {
			if cerr := ctl.failed(); cerr != nil {
				return false, cerr
			}
			n, err := countEntries(ctx, fab, addr, sw.DeviceID, tableIPv4Route)
			if err != nil {
				return false, err
			}
			return n >= want, fmt.Errorf("%d of %d routes", n, want)
		})
		if err != nil {
			return nil, err
		}
	}
	log.Debug("fastcnpd programmed the switches")

	// Hosts.
	flowsPath := filepath.Join(o.WorkDir, "flows.json")
	if err := writeFlowFile(flowsPath, t, dur); err != nil {
		return nil, err
	}
	// One start instant for every agent (--start-at), far enough ahead
	// that all of them are launched, one after the other, before it: the
	// flows' start times count from it, so an incast starts together, and
	// the agents' records share its clock (the wall clock).
	started := time.Now().Add(LaunchLead(len(t.Hosts)))
	loadStart := loadAvg()
	var hosts []*proc
	for _, h := range t.HostNames() {
		args, err := t.hostArgs(h, algo, flowsPath, o.StatsInterval, o.DCQCNParams)
		if err != nil {
			return nil, err
		}
		if o.CCParams != "" {
			args = append(args, "--cc-params", o.CCParams)
		}
		argv := append([]string{o.Binaries.Host, "--iface", "eth0", "--stats", filepath.Join(o.WorkDir, h+".jsonl"),
			"--start-at", strconv.FormatInt(started.UnixNano(), 10)}, args...)
		if k := hostKeys[h]; k != "" {
			argv = append(argv, "--announce-key", k)
		}
		argv = append(argv, o.HostArgs...)
		hp, err := startProc(hostNS[h], h, filepath.Join(o.WorkDir, h+".log"), argv, o.Nice, log)
		if err != nil {
			return nil, err
		}
		procs.add(hp)
		hosts = append(hosts, hp)
	}
	log.WithField("duration", dur).Info("flows running")

	// Sample the queues while the flows run.
	var queues []QueueSample
	var qmu sync.Mutex
	sctx, stopSampling := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(o.SampleInterval)
		defer tick.Stop()
		for {
			select {
			case <-sctx.Done():
				return
			case <-tick.C:
			}
			now := time.Since(started).Seconds()
			if now < 0 {
				continue // before the common start
			}
			for _, si := range sws {
				d, err := fetchDump(sctx, client, si.debugAddr)
				if err != nil {
					continue
				}
				qmu.Lock()
				queues = append(queues, queueSample(now, si.name, d))
				qmu.Unlock()
			}
		}
	}()
	linkResults := make([]LinkEventResult, len(o.LinkEvents))
	if len(o.LinkEvents) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runLinkEvents(sctx, fab, ctl, started, o.LinkEvents, linkEnds, linkResults)
		}()
	}
	runErr := func() error {
		timer := time.NewTimer(time.Until(started) + dur)
		defer timer.Stop()
		check := time.NewTicker(250 * time.Millisecond)
		defer check.Stop()
		for {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-timer.C:
				return nil
			case <-check.C:
				if cerr := ctl.failed(); cerr != nil {
					return fmt.Errorf("testbed: the controller died during the run: %w", cerr)
				}
				for _, pr := range hosts {
					if pr.exited() && pr.exitErr() != nil {
						return fmt.Errorf("testbed: %s died during the run: %w: %s", pr.name, pr.exitErr(), pr.tail(2000))
					}
				}
				for _, si := range sws {
					if si.proc.exited() {
						return fmt.Errorf("testbed: switch %s died during the run: %v: %s", si.name, si.proc.err, si.proc.tail(2000))
					}
				}
			}
		}
	}()
	stopSampling()
	wg.Wait()
	if runErr != nil {
		return nil, runErr
	}
	// RDMA connections fastcnpd learned from the agents' announcements
	// (what switch CNPs are addressed with), read before the agents stop.
	conns := map[string]int{}
	for _, name := range t.SwitchNames() {
		sw := t.Switches[name]
		n, err := countEntries(ctx, fab, net.JoinHostPort("127.0.0.1", strconv.Itoa(sw.GRPCPort)), sw.DeviceID, tableRDMAConnection)
		if err != nil {
			log.WithError(err).Warn("reading rdma_connection")
		}
		conns[name] = n
	}
	cpu := map[string]float64{}
	procs.mu.Lock()
	for _, pr := range procs.procs {
		if d, err := pr.cpuTime(); err == nil {
			cpu[pr.name] = d.Seconds()
		}
	}
	procs.mu.Unlock()
	if cp := ctl.process(); cp != nil {
		if d, err := cp.cpuTime(); err == nil {
			cpu["fastcnpd"] = d.Seconds()
		}
	}
	loadEnd := loadAvg()
	// Stop the hosts first so that they write their summaries, then read
	// the switch counters while the switches still run.
	var errs []error
	for _, hp := range hosts {
		if err := hp.stop(5 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	res = &Result{Topology: t.Name, Mode: o.Mode, CC: algo, Target: TargetFastcnp, Started: started,
		Duration: time.Since(started), Queues: queues, WorkDir: o.WorkDir,
		CPUSeconds: cpu, LoadAvg: [2]float64{loadStart, loadEnd}, LinkEvents: linkResults}
	for _, si := range sws {
		d, err := fetchDump(ctx, client, si.debugAddr)
		if err != nil {
			return nil, err
		}
		if b, err := jsonIndent(d); err == nil {
			_ = os.WriteFile(filepath.Join(o.WorkDir, si.name+"-counters.json"), b, 0o644)
		}
		sc := switchCounters(si.name, d, si.peers)
		sc.RDMAConnections = conns[si.name]
		if sc.INCContributions > 0 {
			sw := t.Switches[si.name]
			if sc.INCSlotsUsed, sc.INCSlotsStuck, err = incSlotUse(ctx, fab, si.grpcAddr, sw.DeviceID); err != nil {
				log.WithError(err).Warn("reading the INC slots")
			}
		}
		res.Switches = append(res.Switches, sc)
	}
	if err := collectFlows(res, t, o.WorkDir, dur); err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return res, errors.Join(errs...)
	}
	return res, nil
}

// LaunchLead is how far ahead of launching the first of n agents the run
// sets their common start instant: each launch (fork, exec, opening the
// port, the announcements) takes a few milliseconds to tens of
// milliseconds on a loaded 2-core machine. An agent launched after the
// instant starts the flows that are due at once and reports how late
// (FlowResult.StartLateMs).
func LaunchLead(n int) time.Duration {
	return 300*time.Millisecond + time.Duration(n)*50*time.Millisecond
}

// loadAvg returns the 1-minute load average (0 when unreadable).
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0
	}
	return v
}

// build creates the fabric namespace, one namespace per host and the
// links: host end "eth0" in the host's namespace, switch ends
// "<switch>-p<port>" in the fabric namespace. No IP addresses are
// configured: the host agents speak RoCEv2 through raw sockets, and a
// kernel that owned the addresses would answer RoCEv2 frames with ICMP.
func build(ctx context.Context, tb *netns.Testbed, t *Topology) (*netns.NS, map[string]*netns.NS, error) {
	fab, err := tb.Namespace(ctx, "fabric")
	if err != nil {
		return nil, nil, err
	}
	hostNS := map[string]*netns.NS{}
	for _, h := range t.HostNames() {
		if hostNS[h], err = tb.Namespace(ctx, h); err != nil {
			return nil, nil, err
		}
	}
	mtu := t.Params().MTU
	end := func(e Endpoint) netns.LinkConfig {
		if e.IsHost() {
			return netns.LinkConfig{NS: hostNS[e.Node], Name: "eth0", MAC: t.Hosts[e.Node].mac, MTU: mtu, DisableIPv6: true}
		}
		return netns.LinkConfig{NS: fab, Name: fmt.Sprintf("%s-p%d", e.Node, e.Port), MAC: t.PortMAC(e.Node, e.Port), MTU: mtu, DisableIPv6: true}
	}
	for _, l := range t.Links {
		if _, err := tb.Veth(ctx, end(l.a), end(l.b)); err != nil {
			return nil, nil, err
		}
	}
	return fab, hostNS, nil
}

// flowFile mirrors fastcnp-host's --flows file (host/agent/live.FlowFile).
type flowFile struct {
	Flows []flowEntry `json:"flows"`
}

type flowEntry struct {
	Name     string    `json:"name"`
	Src      string    `json:"src"`
	Dst      string    `json:"dst"`
	SrcQPN   uint32    `json:"src_qpn"`
	DstQPN   uint32    `json:"dst_qpn"`
	Size     string    `json:"size,omitempty"`
	Duration string    `json:"duration,omitempty"`
	Start    string    `json:"start,omitempty"`
	INC      *incEntry `json:"inc,omitempty"`
}

// incEntry mirrors host/agent/live.INCFlow.
type incEntry struct {
	Group    uint16   `json:"group"`
	Message  uint16   `json:"message"`
	Messages []uint16 `json:"messages,omitempty"`
	Interval string   `json:"interval,omitempty"`
	Rank     uint8    `json:"rank"`
	Workers  int      `json:"workers"`
	Offsets  int      `json:"offsets"`
	Seed     uint64   `json:"seed"`
	DupEvery int      `json:"dup_every,omitempty"`
	DupDelay string   `json:"dup_delay,omitempty"`
}

// flowEntries returns the fastcnp-host flow definitions of the topology:
// every flow once (both of its agents read the same file), QP numbers
// 0x100+i at the sender and 0x200+i at the receiver (the workers of an INC
// message all target the receiver QP of its first flow), unbounded flows
// running until their duration or the end of the run.
func (t *Topology) flowEntries(runFor time.Duration) []flowEntry {
	var out []flowEntry
	for i, f := range t.Flows {
		e := flowEntry{Name: f.Name, Src: t.Hosts[f.Src].addr.Addr().String(), Dst: t.Hosts[f.Dst].addr.Addr().String(),
			SrcQPN: uint32(0x100 + i), DstQPN: uint32(0x200 + i), Start: units.FormatDuration(f.start)}
		switch {
		case f.INC != nil:
			e.DstQPN = uint32(0x200 + f.incFirst)
			e.INC = &incEntry{Group: f.INC.Group, Message: f.INC.Message, Messages: f.INC.Messages, Rank: uint8(f.incRank),
				Workers: f.incWorkers, Offsets: f.INC.Offsets, Seed: f.INC.Seed, DupEvery: f.INC.DupEvery}
			if f.INC.interval > 0 {
				e.INC.Interval = units.FormatDuration(f.INC.interval)
			}
			if f.INC.dupDelay > 0 {
				e.INC.DupDelay = units.FormatDuration(f.INC.dupDelay)
			}
		case f.size > 0:
			e.Size = units.FormatSize(f.size)
		case f.duration > 0:
			e.Duration = units.FormatDuration(min(f.duration, runFor-f.start))
		default:
			e.Duration = units.FormatDuration(runFor - f.start)
		}
		out = append(out, e)
	}
	return out
}

func writeFlowFile(path string, t *Topology, runFor time.Duration) error {
	b, err := jsonIndent(flowFile{Flows: t.flowEntries(runFor)})
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("testbed: flow file: %w", err)
	}
	return nil
}

// INCMessage is one INC message of a run: its workers and what its
// destination checked.
type INCMessage struct {
	Group   uint16 `json:"group"`
	Message uint16 `json:"message"`
	// Dst is the host that received and checked the aggregated results.
	Dst     string `json:"dst"`
	Workers int    `json:"workers"`
	Offsets int    `json:"offsets"`
	// DueMs is when the workers were due to start it (its flows' start
	// plus its position times the interval), FirstResultMs and
	// LastResultMs when its first and last RESULT reached Dst, all in ms
	// since the run's start (0: no result).
	DueMs         float64 `json:"due_ms"`
	FirstResultMs float64 `json:"first_result_ms,omitempty"`
	LastResultMs  float64 `json:"last_result_ms,omitempty"`
	// WorkersDone counts the workers whose agent sent every vector.
	WorkersDone int `json:"workers_done"`
	// Reported is false when the destination wrote no check (it died).
	Reported bool     `json:"reported"`
	Check    INCCheck `json:"check"`
}

// linkSlack is the clock granularity allowed in the link check, on top of
// the hosts' pacing bucket.
const linkSlack = time.Millisecond

// collectFlows reads the agents' statistics files and fills res.Flows,
// res.INC, the makespans and the link check. Times move onto the run's
// clock (res.Started, the agents' common start instant).
func collectFlows(res *Result, t *Topology, dir string, runFor time.Duration) error {
	stats := map[string]*flowStats{}
	var runStart int64
	if !res.Started.IsZero() {
		runStart = res.Started.UnixNano()
	}
	checks := map[incKey]INCCheck{}
	for _, h := range t.HostNames() {
		f, err := os.Open(filepath.Join(dir, h+".jsonl"))
		if err != nil {
			return fmt.Errorf("testbed: statistics of %s: %w", h, err)
		}
		incs, partials, err := parseHostStats(f, stats, runStart)
		f.Close()
		if err != nil {
			return err
		}
		res.INCPartials += partials
		for _, c := range incs {
			checks[incKey{c.Group, c.Message}] = c
		}
	}
	shares, err := t.FairShares()
	if err != nil {
		return err
	}
	ideal, err := t.IdealFCTs(runFor)
	if err != nil {
		return err
	}
	for i, f := range t.Flows {
		fr := FlowResult{Name: f.Name, Src: f.Src, Dst: f.Dst, Victim: f.Victim, FairShareBps: shares[i], Sized: f.size > 0, INC: f.INC != nil}
		fs := stats[f.Name]
		if fs == nil {
			fs = &flowStats{}
		}
		fr.Series = mergeSeries(fs)
		if r := fs.recvRecord(); r != nil && r.Recv != nil {
			fr.BytesReceived = r.Recv.Bytes
			fr.ECNMarks = r.Recv.CE
			fr.FirstRxUnixNs, fr.LastRxUnixNs = r.Recv.FirstUnixNs, r.Recv.LastUnixNs
		}
		if s := fs.sendRecord(); s != nil {
			fr.CNPsSwitch, fr.CNPsNP = u64(s.CNPSwitch), u64(s.CNPNP)
			fr.ECEAcks, fr.INTAcks = u64(s.ECEAcks), u64(s.INTAcks)
			fr.Retransmits, fr.Timeouts = u64(s.Retransmits), u64(s.Timeouts)
			fr.PauseRx = u64(s.PauseRx)
			if s.PausedUs != nil {
				fr.PausedMs = *s.PausedUs / 1e3
			}
			if s.RTT != nil {
				fr.RTTMeanUs, fr.RTTP99Us, fr.RTTMaxUs = s.RTT.MeanUs, s.RTT.P99Us, s.RTT.MaxUs
			}
			if s.Done != nil {
				fr.Done = *s.Done
			}
			if s.INCDupsSent != nil {
				fr.INCDupsSent = *s.INCDupsSent
			}
			if s.FCTUs != nil {
				fr.FCTMs = *s.FCTUs / 1e3
			}
			if s.StartUnixNs != nil {
				fr.StartUnixNs = *s.StartUnixNs
			}
			if s.EndUnixNs != nil {
				fr.EndUnixNs = *s.EndUnixNs
			}
			if s.StartLateUs != nil {
				fr.StartLateMs = *s.StartLateUs / 1e3
				res.MaxStartLateMs = max(res.MaxStartLateMs, fr.StartLateMs)
			}
		}
		start := f.start.Seconds()
		end := runFor.Seconds()
		if f.duration > 0 {
			end = min(end, (f.start + f.duration).Seconds())
		}
		switch {
		case f.INC != nil:
			// Contributions end at the switch: no receiver rate.
		case f.size > 0:
			if ideal[i] > 0 {
				fr.IdealFCTMs = float64(ideal[i]) / 1e6
				fr.IdealRateBps = float64(f.size) * 8 / ideal[i].Seconds()
				fr.FairShareBps = fr.IdealRateBps
			}
			if fr.FCTMs > 0 {
				fr.ThroughputBps = float64(fr.BytesReceived) * 8 / (fr.FCTMs / 1e3)
				if fr.IdealFCTMs > 0 {
					fr.Slowdown = fr.FCTMs / fr.IdealFCTMs
				}
			} else if d := end - start; d > 0 {
				fr.ThroughputBps = float64(fr.BytesReceived) * 8 / d
			}
		default:
			warm := min(1.0, (end-start)/4)
			if v, ok := meanRate(fs.recv, start+warm, end); ok {
				fr.ThroughputBps = v
			} else if d := end - start; d > 0 {
				fr.ThroughputBps = float64(fr.BytesReceived) * 8 / d
			}
		}
		if fr.FairShareBps > 0 {
			fr.ShareOfFair = fr.ThroughputBps / fr.FairShareBps
		}
		res.Flows = append(res.Flows, fr)
	}
	// INC messages, in the order of their first worker.
	seen := map[incKey]int{}
	ms := func(unixNs int64) float64 {
		if unixNs == 0 {
			return 0
		}
		return float64(unixNs-runStart) / 1e6
	}
	for i, f := range t.Flows {
		if f.INC == nil {
			continue
		}
		for pos, m := range f.INC.MessageIDs() {
			k := incKey{f.INC.Group, m}
			j, ok := seen[k]
			if !ok {
				c, rep := checks[k]
				res.INC = append(res.INC, INCMessage{Group: k.group, Message: k.message, Dst: f.Dst, Workers: f.incWorkers,
					Offsets: f.INC.Offsets, Reported: rep, Check: c,
					DueMs:         float64(f.start+time.Duration(pos)*f.INC.interval) / 1e6,
					FirstResultMs: ms(c.FirstUnixNs), LastResultMs: ms(c.LastUnixNs)})
				j = len(res.INC) - 1
				seen[k] = j
			}
			if res.Flows[i].Done {
				res.INC[j].WorkersDone++
			}
		}
	}
	if d, ok := makespan(res.Flows); ok {
		res.MakespanMs = float64(d) / 1e6
	}
	var first, last time.Duration
	n := 0
	for i, f := range t.Flows {
		if f.size == 0 || f.INC != nil || ideal[i] == 0 {
			continue
		}
		if n == 0 || f.start < first {
			first = f.start
		}
		last = max(last, f.start+ideal[i])
		n++
	}
	if n > 0 {
		res.IdealMakespanMs = float64(last-first) / 1e6
	}
	// Physical check on the common clock.
	capacity, names, paths, err := t.resources()
	if err != nil {
		return err
	}
	var lf []linkFlow
	for i, f := range t.Flows {
		if f.INC != nil {
			continue
		}
		fr := res.Flows[i]
		lf = append(lf, linkFlow{path: paths[i], bytes: fr.BytesReceived, startNs: fr.StartUnixNs, lastArrival: fr.LastRxUnixNs})
	}
	res.Links = checkLinks(capacity, names, lf, linkSlack+t.Params().BurstTime, int64(IBMTU(t.Params().MTU)))
	return nil
}

// mergeSeries joins a flow's receiver samples with the nearest sender
// sample (the two agents sample independently).
func mergeSeries(fs *flowStats) []RatePoint {
	out := append([]RatePoint(nil), fs.recv...)
	j := 0
	for i := range out {
		for j+1 < len(fs.send) && fs.send[j+1].T <= out[i].T {
			j++
		}
		if j < len(fs.send) {
			out[i].SendBps, out[i].CCBps = fs.send[j].SendBps, fs.send[j].CCBps
		}
	}
	if len(out) == 0 {
		out = append(out, fs.send...)
	}
	return out
}

// writeAnnounceKeys gives every host of the topology a random
// announcement key: fastcnpd's key file at path (each key allowed for its
// host's address) and one key file per host in dir, whose paths it
// returns by host. The hosts in forged get their key ID with another
// secret.
func (t *Topology) writeAnnounceKeys(path, dir string, forged []string) (map[string]string, error) {
	isForged := map[string]bool{}
	for _, h := range forged {
		if t.Hosts[h] == nil {
			return nil, fmt.Errorf("testbed: forged key for unknown host %q", h)
		}
		isForged[h] = true
	}
	secret := func() (string, error) {
		b := make([]byte, 32)
		if _, err := crand.Read(b); err != nil {
			return "", fmt.Errorf("testbed: announcement key: %w", err)
		}
		return hex.EncodeToString(b), nil
	}
	var ctl strings.Builder
	ctl.WriteString("# fastcnpd announcement keys: ID HOST KEY SENDERS (written by the testbed)\n")
	out := map[string]string{}
	for i, h := range t.HostNames() {
		k, err := secret()
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&ctl, "%d %s %s %s\n", i+1, h, k, t.Hosts[h].Addr().Addr())
		if isForged[h] {
			if k, err = secret(); err != nil {
				return nil, err
			}
		}
		hp := filepath.Join(dir, h+".key")
		if err := os.WriteFile(hp, []byte(fmt.Sprintf("%d %s\n", i+1, k)), 0o600); err != nil {
			return nil, fmt.Errorf("testbed: announcement key: %w", err)
		}
		out[h] = hp
	}
	if err := os.WriteFile(path, []byte(ctl.String()), 0o600); err != nil {
		return nil, fmt.Errorf("testbed: announcement keys: %w", err)
	}
	return out, nil
}

// Label names a run in tables and plots: its mode when the hosts ran the
// mode's own DCQCN variant, else the sender algorithm.
func (r *Result) Label() string {
	if r.CC == "" || r.CC == hostAlgo(r.Mode) {
		return string(r.Mode)
	}
	return r.CC
}
