// Package live is the real-time runtime of the fastcnp host agent: one
// AF_PACKET port (afpacket), a paced send loop, a receive loop, the
// announcements, and per-flow statistics as JSON lines. The transport and
// congestion-control logic is pure and lives in host/agent and host/cc.
package live

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/fastcnp/fastcnp/afpacket"
	"github.com/fastcnp/fastcnp/host/agent"
	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/wire"
)

// Mode selects the roles an agent plays for the flows it is part of.
type Mode string

// Modes.
const (
	ModeSender    Mode = "sender"     // send the flows whose src is the agent
	ModeReceiver  Mode = "receiver"   // receive the flows whose dst is the agent
	ModeBoth      Mode = "both"       // both of the above
	ModeINCWorker Mode = "inc-worker" // INC flows only: send contributions, check RESULTs addressed to the agent
)

// ParseMode checks a mode name.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeSender, ModeReceiver, ModeBoth, ModeINCWorker:
		return m, nil
	}
	return "", fmt.Errorf("mode %q: want sender, receiver, both or inc-worker: %w", s, ErrFlowConfig)
}

// PortIO is what the agent needs from a port (*afpacket.Port implements it).
type PortIO interface {
	ReadBatch(ctx context.Context, msgs []afpacket.Message) (int, error)
	WriteBatch(ctx context.Context, frames [][]byte) (int, error)
	MaxFrameLen() int
}

// Defaults of Config.
const (
	// DefaultSleepBelow: waits below 2 ms use nanosleep.
	DefaultSleepBelow = 2 * time.Millisecond
	// DefaultBurstTime is the pacing bucket depth in time: the measured
	// overshoot of a short nanosleep on the 2-core test VM is 60-100 us.
	DefaultBurstTime = 100 * time.Microsecond
	// DefaultLineGap is the per-frame line time the pacer charges beyond
	// the frame (Sender.LineGap): preamble, SFD and inter-frame gap, as
	// the switch's shaper (wire.PreambleIFGBytes).
	DefaultLineGap = wire.PreambleIFGBytes
)

// Config configures an Agent.
type Config struct {
	// IP and MAC are the agent's addresses.
	IP  wire.Addr4
	MAC wire.MAC
	// GatewayMAC, if non-zero, is the next hop of everything the agent
	// sends first (data, announcements); otherwise each flow's DstMAC.
	// Replies (ACKs, CNPs) go to the source MAC of the frame that caused them.
	GatewayMAC wire.MAC
	// Mode selects roles (default ModeBoth).
	Mode Mode
	// Algo is the host/cc algorithm name ("dcqcn", "dcqcn-fastcnp").
	Algo string
	// CC is the algorithm configuration (LineRate required, DCQCN params
	// from a preset). Its DCQCN.CNPInterval is also the receivers' NP interval.
	CC cc.Config
	// Sender holds the transport settings of sending connections; an
	// AckEvery of 0 takes the algorithm's (agent.AckEveryFor).
	Sender agent.SenderConfig
	// AnnouncePort is the UDP port of announcements (0 = 4792);
	// NoAnnounce disables them.
	AnnouncePort uint16
	NoAnnounce   bool
	// AnnounceInterval is how often the local sending connections are
	// announced again while Run runs (0: agent.DefaultAnnounceInterval).
	// The controller removes a connection that was not announced for its
	// announce.idle_timeout, so this must stay well below that (a third
	// or less: refreshes travel on a lossy priority).
	AnnounceInterval time.Duration
	// AnnounceKey, if set, authenticates every announcement with the
	// host's key (docs/wire-formats.md, "Announcement authentication"), as
	// fastcnpd requires once its announce.auth has keys.
	AnnounceKey *agent.AnnounceKey
	// NoICRCCheck accepts received RoCEv2 frames whose ICRC is wrong
	// (debugging). By default they are dropped and counted (BadICRC), as
	// a RoCE NIC does.
	NoICRCCheck bool
	// NoCNPTarget clears the CNP-target flag of announcements (the sender
	// then gets only receiver NP CNPs through an ECN-marking switch).
	NoCNPTarget bool
	// Flows are the connections (both ends configured alike; see Expand).
	Flows []FlowConfig
	// StartAt, if set, is the instant the flows' Start times count from
	// (wall clock): agents given the same StartAt start their flows
	// together however late each was launched (an incast from several
	// hosts). Zero: the instant Run starts. When StartAt has already passed
	// as Run starts, the flows due by then start at once (a warning is
	// logged, and their FCT still counts from their due instant).
	StartAt time.Time
	// Stats receives JSON lines (nil: none); StatsInterval is the sampling
	// period (default 10ms); RTTPerSample caps the raw RTT samples listed
	// in one sample record (default 64; summaries use all of them).
	Stats         io.Writer
	StatsInterval time.Duration
	RTTPerSample  int
	// ExitWhenDone makes Run return once every local sender flow is
	// acknowledged and every local INC checker is complete (agents with
	// only receiving flows run until ctx ends).
	ExitWhenDone bool
	// SpinBelow: waits shorter than this are spun (with runtime.Gosched)
	// instead of sleeping on a timer, for pacing precision (default 0:
	// always sleep). See docs/host-agent.md for the measured accuracy.
	SpinBelow time.Duration
	// SleepBelow: waits shorter than this use nanosleep(2) with a 1 ns
	// timer slack instead of a Go timer, which rounds short sleeps up to
	// about 1 ms (default DefaultSleepBelow; negative: never).
	SleepBelow time.Duration
	// Capture, if set, is called with every frame the agent sends and
	// every RoCEv2 frame it accepts for a local flow (e.g. a pcap writer).
	// It runs in the agent's loops: keep it short, copy the frame if kept.
	Capture func(ts time.Time, frame []byte, sent bool)
	// Log receives structured logs (default: the standard logrus logger).
	Log logrus.FieldLogger
}

// flow is one local end of a connection.
type flow struct {
	cfg  FlowConfig
	send bool // this end sends
	path agent.Path
	lqpn uint32 // local QPN
	rqpn uint32 // remote QPN
	snd  *agent.Sender
	rcv  *agent.Receiver
	// INC: the flow's messages (agent.INCStream), how many are posted,
	// the interval between their starts, and the injected duplicates
	// still to send (due time, sequence number).
	inc         *agent.INCStream
	incPosted   int
	incInterval time.Duration
	dupDelay    time.Duration
	dups        []dupCopy
	dupsSent    uint64
	start       time.Duration
	// sender state
	started, stopped bool
	startedAt        time.Duration // when the send loop started the flow (>= start)
	stopAt           time.Duration
	ann              wire.Announcement
	// receiver state
	learned  bool
	rxOffset int64
	badData  uint64
	// statistics
	prevWire, prevPay  int64
	prevRx             int64
	prevT              time.Duration
	rtts               []time.Duration // all samples (capped at maxKeptRTT)
	rttWin             []time.Duration // since the last sample record
	msgs               []agent.MessageDone
	doneAt             time.Duration
	reported           bool
	peakInflight       int64
	intPeak            int64 // peak inflight since the last sample record
	intWinMax          int64 // largest window a packet was admitted under since then
	minWindow          int64
	inflightSum, nInfl float64
}

const maxKeptRTT = 1 << 20

// dupCopy is a contribution to send again at a time (an injected
// retransmission).
type dupCopy struct {
	at  time.Duration
	seq uint64
}

// maxPendingDups bounds a flow's injected duplicates waiting to be sent.
const maxPendingDups = 1 << 16

// done reports whether a sending flow sent everything it will: every
// message posted and sent, no injected duplicate pending.
func (f *flow) done() bool {
	return f.snd.Done() && (f.inc == nil || f.incPosted == len(f.inc.Messages)) && len(f.dups) == 0
}

// Agent is a running host agent.
type Agent struct {
	cfg   Config
	p     PortIO
	log   logrus.FieldLogger
	epoch time.Time

	mu       sync.Mutex
	flows    []*flow
	senders  []*flow
	byQPN    map[uint32]*flow // local QPN -> flow (data: receivers; ACK/CNP: senders)
	checkers []*agent.INCChecker
	incRecv  map[uint32][]*agent.INCChecker          // local QPN -> checkers
	incTimes map[*agent.INCChecker]*[2]time.Duration // first and last RESULT of each checker
	rr       int
	rxStats  RxCounters
	ccHops   [wire.INTMaxHops]cc.INTHop // an ACK's echoed records for host/cc (under mu)
	// PFC: the received pauses, and the replies (ACKs, CNPs) waiting for
	// their priority to resume, oldest first.
	gate      *agent.PauseGate
	heldReply [8][][]byte
	// refresh schedules the re-announcements of the sending connections
	// (nil: none, set by Run after the first announcements).
	refresh *agent.RefreshSchedule
	// signer authenticates announcements (nil: none) with nonces from
	// nonces, both under signMu.
	signMu sync.Mutex
	signer *agent.AnnounceSigner
	nonces *rand.ChaCha8

	ran     atomic.Bool
	kick    chan struct{}
	statsMu sync.Mutex
	enc     *jsonLines
}

// RxCounters count frames the receive loop saw.
type RxCounters struct {
	Frames     uint64 `json:"frames"`      // frames read from the port
	NotForUs   uint64 `json:"not_for_us"`  // not RoCEv2 to the agent's IP
	UnknownQP  uint64 `json:"unknown_qp"`  // RoCEv2 to the agent's IP with no local flow on the QP
	Malformed  uint64 `json:"malformed"`   // frames with truncated or malformed headers (any destination)
	INCResults uint64 `json:"inc_results"` // INC RESULT frames received
	// INCPartials counts partial aggregates received: a lower switch's
	// aggregate that no upper switch aggregated (none for its group, or a
	// failure on the way), so its message misses those offsets.
	INCPartials uint64 `json:"inc_partials"`
	MACControl  uint64 `json:"mac_control"` // PFC and PAUSE frames applied (see PauseStats)
	AcksSent    uint64 `json:"acks_sent"`
	ECEAcksSent uint64 `json:"ece_acks_sent"` // ACKs sent with the ECN echo
	INTAcksSent uint64 `json:"int_acks_sent"` // ACKs sent echoing INT records
	CNPsSent    uint64 `json:"cnps_sent"`
	// BadINT counts ACKs whose echoed INT records were unusable (a record
	// without a link rate): the algorithm got the ACK without them.
	BadINT      uint64 `json:"bad_int"`
	ReplyErrors uint64 `json:"reply_errors"`
	// RepliesHeld counts ACKs and CNPs that waited for their priority to
	// resume from a PFC pause before being sent; RepliesDropped the held
	// ones dropped because MaxHeldReplies were already waiting (the oldest
	// goes: ACKs are cumulative, a newer one covers it).
	RepliesHeld    uint64 `json:"replies_held"`
	RepliesDropped uint64 `json:"replies_dropped"`
	// BadICRC counts RoCEv2 frames to the agent's IP dropped because their
	// ICRC did not match their content (Config.NoICRCCheck turns the check
	// off), as a NIC drops them.
	BadICRC uint64 `json:"bad_icrc"`
	// AnnounceRefreshes counts the rounds of refresh announcements sent
	// (one "up" per local sending connection every AnnounceInterval).
	AnnounceRefreshes uint64 `json:"announce_refreshes"`
}

// MaxHeldReplies bounds the replies waiting per priority during a pause.
const MaxHeldReplies = 4096

// New checks cfg and builds the agent's flows. The agent is idle until Run.
func New(cfg Config, p PortIO) (*Agent, error) {
	if p == nil {
		return nil, fmt.Errorf("agent: nil port: %w", agent.ErrConfig)
	}
	if cfg.Mode == "" {
		cfg.Mode = ModeBoth
	}
	if _, err := ParseMode(string(cfg.Mode)); err != nil {
		return nil, err
	}
	if cfg.StatsInterval <= 0 {
		cfg.StatsInterval = 10 * time.Millisecond
	}
	if cfg.SleepBelow == 0 {
		cfg.SleepBelow = DefaultSleepBelow
	}
	if cfg.Sender.BurstTime == 0 {
		cfg.Sender.BurstTime = DefaultBurstTime
	}
	if cfg.RTTPerSample <= 0 {
		cfg.RTTPerSample = 64
	}
	if cfg.AnnounceInterval < 0 {
		return nil, fmt.Errorf("agent: announce interval %v: must not be negative (0: %v): %w",
			cfg.AnnounceInterval, agent.DefaultAnnounceInterval, agent.ErrConfig)
	}
	if cfg.AnnounceInterval == 0 {
		cfg.AnnounceInterval = agent.DefaultAnnounceInterval
	}
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	var signer *agent.AnnounceSigner
	var nonces *rand.ChaCha8
	if cfg.AnnounceKey != nil {
		var err error
		if signer, err = agent.NewAnnounceSigner(*cfg.AnnounceKey); err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
		var seed [32]byte
		if _, err := crand.Read(seed[:]); err != nil {
			return nil, fmt.Errorf("agent: announcement nonces: %w", err)
		}
		nonces = rand.NewChaCha8(seed)
	}
	if cfg.IP == (wire.Addr4{}) {
		return nil, fmt.Errorf("agent: no IP address: %w", agent.ErrConfig)
	}
	mss := cfg.Sender.MSS
	if mss == 0 {
		mss = agent.DefaultMSS
	}
	if max(mss, agent.INCPayload(true))+agent.RoCEOverhead+wire.Dot1QLen > p.MaxFrameLen() {
		return nil, fmt.Errorf("agent: MSS %d plus %d header bytes exceeds the port's largest frame (%d): %w",
			mss, agent.RoCEOverhead, p.MaxFrameLen(), agent.ErrConfig)
	}
	flows, err := Expand(cfg.Flows)
	if err != nil {
		return nil, err
	}
	// Check the algorithm once, with a clear error.
	if _, err := cc.New(cfg.Algo, cfg.CC); err != nil {
		return nil, fmt.Errorf("agent: algorithm %q: %w", cfg.Algo, err)
	}
	gate, err := agent.NewPauseGate(cfg.CC.LineRate)
	if err != nil {
		return nil, fmt.Errorf("agent: line rate: %w", err)
	}
	a := &Agent{
		cfg: cfg, p: p, log: cfg.Log.WithField("ip", cfg.IP.String()),
		byQPN: map[uint32]*flow{}, incRecv: map[uint32][]*agent.INCChecker{}, incTimes: map[*agent.INCChecker]*[2]time.Duration{},
		kick: make(chan struct{}, 1), gate: gate, signer: signer, nonces: nonces,
	}
	if cfg.Stats != nil {
		a.enc = newJSONLines(cfg.Stats)
	}
	incChk := map[[2]uint16]*agent.INCChecker{}
	for i := range flows {
		fc := flows[i]
		isSrc, isDst := fc.src == cfg.IP, fc.dst == cfg.IP
		inc := fc.INC != nil
		wantSend := isSrc && (cfg.Mode == ModeSender || cfg.Mode == ModeBoth || (cfg.Mode == ModeINCWorker && inc))
		wantRecv := isDst && (cfg.Mode == ModeReceiver || cfg.Mode == ModeBoth || (cfg.Mode == ModeINCWorker && inc))
		if wantSend {
			f, err := a.newSender(fc)
			if err != nil {
				return nil, fmt.Errorf("agent: flow %s: %w", fc.Name, err)
			}
			if o, dup := a.byQPN[f.lqpn]; dup {
				return nil, fmt.Errorf("agent: flow %s: local QP %#x already used by %s: %w", fc.Name, f.lqpn, o.cfg.Name, agent.ErrConfig)
			}
			a.byQPN[f.lqpn] = f
			a.flows = append(a.flows, f)
			a.senders = append(a.senders, f)
		}
		if wantRecv && inc {
			for _, m := range fc.INC.MessageIDs() {
				p := fc.INC.ParamsOf(m)
				key := [2]uint16{p.Group, p.Message}
				if incChk[key] == nil {
					c, err := agent.NewINCChecker(p)
					if err != nil {
						return nil, fmt.Errorf("agent: flow %s: %w", fc.Name, err)
					}
					incChk[key] = c
					a.checkers = append(a.checkers, c)
					a.incRecv[fc.DstQPN] = append(a.incRecv[fc.DstQPN], c)
				}
			}
		} else if wantRecv {
			r, err := agent.NewReceiver(agent.ReceiverConfig{CNPInterval: cfg.CC.DCQCN.CNPInterval})
			if err != nil {
				return nil, fmt.Errorf("agent: flow %s: %w", fc.Name, err)
			}
			f := &flow{cfg: fc, lqpn: fc.DstQPN, rqpn: fc.SrcQPN, rcv: r,
				path: agent.Path{SrcMAC: cfg.MAC, SrcIP: cfg.IP, DstIP: fc.src, SrcPort: fc.SPort}}
			if o, dup := a.byQPN[f.lqpn]; dup {
				return nil, fmt.Errorf("agent: flow %s: local QP %#x already used by %s: %w", fc.Name, f.lqpn, o.cfg.Name, agent.ErrConfig)
			}
			a.byQPN[f.lqpn] = f
			a.flows = append(a.flows, f)
		}
	}
	if len(a.flows) == 0 && len(a.checkers) == 0 {
		a.log.Warn("no flow has this agent's IP as source or destination (for its mode): it will only count frames")
	}
	return a, nil
}

func (a *Agent) newSender(fc FlowConfig) (*flow, error) {
	next := a.cfg.GatewayMAC
	if next == (wire.MAC{}) {
		if fc.dstMAC == nil {
			return nil, fmt.Errorf("no next-hop MAC: set the agent's gateway MAC or the flow's dst_mac: %w", agent.ErrConfig)
		}
		next = *fc.dstMAC
	}
	f := &flow{cfg: fc, send: true, lqpn: fc.SrcQPN, rqpn: fc.DstQPN, start: time.Duration(fc.Start), minWindow: cc.NoWindowCap,
		path: agent.Path{SrcMAC: a.cfg.MAC, DstMAC: next, SrcIP: a.cfg.IP, DstIP: fc.dst, SrcPort: fc.SPort}}
	alg, err := cc.New(a.cfg.Algo, a.cfg.CC)
	if err != nil {
		return nil, err
	}
	sc := a.cfg.Sender
	if sc.AckEvery == 0 {
		sc.AckEvery = agent.AckEveryFor(a.cfg.Algo)
	}
	sc.Overhead = f.path.Overhead()
	if sc.INT = cc.NeedsINT(a.cfg.Algo) && fc.INC == nil; sc.INT {
		sc.Overhead += wire.INTHeaderLen
	}
	if sc.LineGap == 0 {
		sc.LineGap = DefaultLineGap
	}
	flags := uint8(wire.AnnounceFlagCNPTarget)
	if a.cfg.NoCNPTarget {
		flags = 0
	}
	if fc.INC != nil {
		if f.inc, err = agent.NewINCStream(fc.INC.Params(), fc.INC.MessageIDs(), fc.INC.DupEvery); err != nil {
			return nil, err
		}
		f.incInterval, f.dupDelay = time.Duration(fc.INC.Interval), time.Duration(fc.INC.DupDelay)
		// Each message is one data flow of Offsets packets; the first of
		// each carries the IDS part.
		sc = f.inc.SenderConfig(sc)
		flags |= wire.AnnounceFlagINCUplink
	}
	f.snd, err = agent.NewSender(sc, alg)
	if err != nil {
		return nil, err
	}
	f.ann = wire.NewAnnouncement(wire.AnnounceUp, flags)
	f.ann.SenderQPN, f.ann.ReceiverQPN = fc.SrcQPN, fc.DstQPN
	if f.inc != nil {
		f.ann.INCGroup, f.ann.WorkerRank = f.inc.Params.Group, f.inc.Params.Rank
	}
	return f, nil
}

func (a *Agent) now() time.Duration { return time.Since(a.epoch) }

// wallNs converts agent time to wall-clock Unix nanoseconds (UTC): the one
// clock the agents of a testbed share.
func (a *Agent) wallNs(d time.Duration) int64 { return a.epoch.UnixNano() + int64(d) }

// Run sends the announcements, runs the send loop, the receive loop and
// the statistics sampler until ctx ends (or, with ExitWhenDone, until the
// local flows are done), sends the "down" announcements and writes the
// summary records. It returns ctx's error only if ctx ended before the
// flows were done while ExitWhenDone was set.
//
// Run may be called once per Agent (its clock starts with Run).
func (a *Agent) Run(ctx context.Context) error {
	if !a.ran.CompareAndSwap(false, true) {
		return fmt.Errorf("agent: Run called twice: %w", agent.ErrState)
	}
	a.epoch = time.Now()
	if !a.cfg.StartAt.IsZero() {
		// Agent time 0 stays the epoch (every clock the state machines see
		// starts at 0); the flows' start times move to the common instant.
		// On the wall clock: StartAt is a wall instant other processes share.
		off := time.Duration(a.cfg.StartAt.UnixNano() - a.epoch.UnixNano())
		if off < 0 {
			a.log.WithFields(logrus.Fields{"start_at": a.cfg.StartAt.UTC().Format(time.RFC3339Nano), "late": (-off).String()}).
				Warn("the common start instant had passed when the agent started: flows already due start at once")
		}
		a.mu.Lock()
		for _, f := range a.senders {
			f.start = off + time.Duration(f.cfg.Start)
		}
		a.mu.Unlock()
	}
	a.writeStart()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := a.announce(ctx, wire.AnnounceUp); err != nil {
		return err
	}
	if !a.cfg.NoAnnounce && len(a.senders) > 0 {
		// From now on the send loop announces the connections again every
		// AnnounceInterval, so the controller keeps them however long they
		// live (it removes a connection not announced for its idle_timeout).
		r, err := agent.NewRefreshSchedule(a.cfg.AnnounceInterval, a.now())
		if err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		a.mu.Lock()
		a.refresh = r
		a.mu.Unlock()
	}
	var wg sync.WaitGroup
	errc := make(chan error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := a.recvLoop(ctx); err != nil {
			errc <- err
			cancel()
		}
	}()
	go func() {
		defer wg.Done()
		a.statsLoop(ctx)
	}()
	sendErr := a.sendLoop(ctx)
	cancel()
	wg.Wait()
	close(errc)
	var errs []error
	if sendErr != nil && !errors.Is(sendErr, context.Canceled) {
		errs = append(errs, sendErr)
	}
	for err := range errc {
		errs = append(errs, err)
	}
	// Tear-down: a fresh context, the run's one is over.
	dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	if err := a.announce(dctx, wire.AnnounceDown); err != nil {
		errs = append(errs, err)
	}
	dcancel()
	a.writeSummary()
	return errors.Join(errs...)
}

// announce sends one announcement of type typ per local sending flow.
func (a *Agent) announce(ctx context.Context, typ uint8) error {
	if a.cfg.NoAnnounce || len(a.senders) == 0 {
		return nil
	}
	if err := a.waitResumed(ctx, a.announcePriority()); err != nil {
		return fmt.Errorf("agent: announcements: %w", err)
	}
	frames, err := a.buildAnnouncements(typ, make([]byte, announceSlot*len(a.senders)))
	if err != nil {
		return err
	}
	if _, err := a.p.WriteBatch(ctx, frames); err != nil {
		return fmt.Errorf("agent: send announcements: %w", err)
	}
	a.capture(frames, true)
	a.log.WithFields(logrus.Fields{"type": typ, "count": len(frames), "port": a.cfg.AnnouncePort}).Info("announcements sent")
	return nil
}

// announceSlot is the buffer space of one announcement frame.
const announceSlot = 128

// announcePriority is the priority announcements travel on (that of CNPs).
func (a *Agent) announcePriority() uint8 { return a.senders[0].path.Priority(agent.CNPDSCP) }

// buildAnnouncements builds one announcement of type typ per local sending
// flow into buf (announceSlot bytes per flow).
func (a *Agent) buildAnnouncements(typ uint8, buf []byte) ([][]byte, error) {
	frames := make([][]byte, 0, len(a.senders))
	if a.signer != nil {
		a.signMu.Lock()
		defer a.signMu.Unlock()
	}
	for i, f := range a.senders {
		ann := f.ann
		ann.Type = typ
		b := buf[i*announceSlot : (i+1)*announceSlot]
		var auth *wire.AnnounceAuth
		var secret []byte
		if a.signer != nil {
			tr := a.signer.Next(a.wallNs(a.now()), a.nonces.Uint64())
			auth, secret = &tr, a.signer.Secret()
		}
		n, err := f.path.BuildAnnouncement(b, a.cfg.AnnouncePort, &ann, auth, secret)
		if err != nil {
			return nil, fmt.Errorf("agent: flow %s: %w", f.cfg.Name, err)
		}
		frames = append(frames, b[:n])
	}
	return frames, nil
}

// refreshLocked appends the refresh announcements to frames when they are
// due at now (under a.mu) and returns the earliest time the send loop must
// wake for them. A paused announcement priority (PFC) defers them until it
// resumes.
func (a *Agent) refreshLocked(now time.Duration, buf []byte, frames [][]byte) ([][]byte, time.Duration, error) {
	if a.refresh == nil {
		return frames, agent.NoWake, nil
	}
	if a.refresh.Next() <= now {
		if until := a.gate.Until(a.announcePriority(), now); until > now {
			return frames, until, nil
		}
		a.refresh.Due(now)
		anns, err := a.buildAnnouncements(wire.AnnounceUp, buf)
		if err != nil {
			return frames, agent.NoWake, err
		}
		frames = append(frames, anns...)
		a.rxStats.AnnounceRefreshes++
		a.log.WithFields(logrus.Fields{"count": len(anns), "next": a.refresh.Next().String()}).Debug("connections announced again (refresh)")
	}
	return frames, a.refresh.Next(), nil
}

// waitResumed returns once priority prio is not paused (PFC), or with
// ctx's error.
func (a *Agent) waitResumed(ctx context.Context, prio uint8) error {
	for {
		a.mu.Lock()
		now := a.now()
		until := a.gate.Until(prio, now)
		a.mu.Unlock()
		if until <= now {
			return nil
		}
		t := time.NewTimer(until - now)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (a *Agent) capture(frames [][]byte, sent bool) {
	if a.cfg.Capture == nil {
		return
	}
	ts := time.Now()
	for _, f := range frames {
		a.cfg.Capture(ts, f, sent)
	}
}

// sendLoop runs the senders: starts flows at their start time, stops long
// flows, collects the paced departures of all flows round-robin (one packet
// per flow per pass, up to a batch) and writes them, then sleeps until the
// earliest next departure or timer, or until the receive loop kicks it.
func (a *Agent) sendLoop(ctx context.Context) error {
	const batch = 64
	frameLen := a.p.MaxFrameLen()
	store := make([]byte, batch*frameLen)
	annStore := make([]byte, announceSlot*len(a.senders))
	frames := make([][]byte, 0, batch)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	if a.cfg.SleepBelow > 0 {
		defer preciseSleepThread(a.log)()
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		frames = frames[:0]
		a.mu.Lock()
		now := a.now()
		wake := agent.NoWake
		var err error
		for _, f := range a.senders {
			if w, e := a.startStop(f, now); e != nil {
				err = e
			} else {
				wake = min(wake, w)
			}
		}
		// PFC: hold the senders whose priority is paused (they wake when
		// it ends, or on the XON's kick), release the waiting replies of
		// the priorities that resumed.
		for _, f := range a.senders {
			prio := f.path.Priority(agent.DataDSCP)
			until := a.gate.Until(prio, now)
			if e := f.snd.Hold(now, until > now); e != nil && err == nil {
				err = fmt.Errorf("agent: flow %s: %w", f.cfg.Name, e)
			}
			if until > now {
				wake = min(wake, until)
			}
		}
		for prio := range a.heldReply {
			if len(a.heldReply[prio]) == 0 {
				continue
			}
			if until := a.gate.Until(uint8(prio), now); until > now {
				wake = min(wake, until)
				continue
			}
			frames = append(frames, a.heldReply[prio]...)
			a.heldReply[prio] = nil
		}
		// Refreshes of the announcements, when due: the controller keeps a
		// connection only while it is announced again within its idle time.
		if err == nil {
			var w time.Duration
			var e error
			if frames, w, e = a.refreshLocked(now, annStore, frames); e != nil {
				err = e
			}
			wake = min(wake, w)
		}
		nReplies := len(frames)
		// Injected duplicates that are due go first.
		for _, f := range a.senders {
			for err == nil && len(f.dups) > 0 && f.dups[0].at <= now && len(frames) < nReplies+batch {
				d := f.dups[0]
				j := len(frames) - nReplies
				b := store[j*frameLen : (j+1)*frameLen]
				n, e := f.inc.Build(b, &f.path, f.rqpn, f.snd, agent.Packet{Seq: d.seq, PSN: f.snd.PSNOf(d.seq)})
				if e != nil {
					err = fmt.Errorf("agent: flow %s: duplicate: %w", f.cfg.Name, e)
					break
				}
				frames = append(frames, b[:n])
				f.dups = f.dups[1:]
				f.dupsSent++
			}
			if len(f.dups) > 0 {
				wake = min(wake, f.dups[0].at)
			}
		}
		for err == nil && len(frames) < nReplies+batch {
			progressed := false
			for k := 0; k < len(a.senders) && len(frames) < nReplies+batch; k++ {
				f := a.senders[(a.rr+k)%len(a.senders)]
				if !f.started {
					continue
				}
				p, ok, e := f.snd.Next(now)
				if e != nil {
					err = fmt.Errorf("agent: flow %s: %w", f.cfg.Name, e)
					break
				}
				if !ok {
					continue
				}
				j := len(frames) - nReplies
				b := store[j*frameLen : (j+1)*frameLen]
				var n int
				if f.inc != nil {
					n, e = f.inc.Build(b, &f.path, f.rqpn, f.snd, p)
					if e == nil && f.inc.Dup(p.Seq) && len(f.dups) < maxPendingDups {
						f.dups = append(f.dups, dupCopy{at: now + f.dupDelay, seq: p.Seq})
					}
				} else {
					n, e = f.path.BuildData(b, f.rqpn, &p)
				}
				if e != nil {
					err = fmt.Errorf("agent: flow %s: %w", f.cfg.Name, e)
					break
				}
				frames = append(frames, b[:n])
				progressed = true
				if !p.Probe { // a probe adds no bytes in flight
					f.peakInflight = max(f.peakInflight, f.snd.Inflight())
					f.intPeak = max(f.intPeak, f.snd.Inflight())
					f.intWinMax = max(f.intWinMax, p.Window)
				}
			}
			if !progressed {
				break
			}
		}
		if len(a.senders) > 0 {
			a.rr = (a.rr + 1) % len(a.senders)
		}
		for _, f := range a.senders {
			if f.started {
				wake = min(wake, f.snd.NextWake())
			}
		}
		done := a.cfg.ExitWhenDone && a.allDoneLocked()
		a.mu.Unlock()
		if err != nil {
			return err
		}
		if len(frames) > 0 {
			if _, err := a.p.WriteBatch(ctx, frames); err != nil {
				return fmt.Errorf("agent: send: %w", err)
			}
			a.capture(frames, true)
			continue
		}
		if done {
			return nil
		}
		if err := a.wait(ctx, timer, wake); err != nil {
			return err
		}
	}
}

// startStop posts a flow's messages at its start time and stops a long
// flow at its end; it returns the flow's next such deadline.
func (a *Agent) startStop(f *flow, now time.Duration) (time.Duration, error) {
	if !f.started {
		if now < f.start {
			return f.start, nil
		}
		f.started, f.startedAt = true, now
		var err error
		switch {
		case f.inc != nil:
			// Later messages are posted at their own start times below.
		case f.cfg.Duration > 0:
			err = f.snd.Post(now, agent.Unbounded)
			f.stopAt = now + time.Duration(f.cfg.Duration)
		case len(f.cfg.Sizes) > 0:
			for _, s := range f.cfg.Sizes {
				if err = f.snd.Post(now, int64(s)); err != nil {
					break
				}
			}
		default:
			err = f.snd.Post(now, int64(f.cfg.Size))
		}
		if err != nil {
			return agent.NoWake, fmt.Errorf("agent: flow %s: start: %w", f.cfg.Name, err)
		}
		f.prevT = now
		a.log.WithField("flow", f.cfg.Name).Debug("flow started")
	}
	// INC: message k is posted at start + k*interval (all at once with
	// interval 0), each a data flow of Offsets packets.
	for f.inc != nil && f.incPosted < len(f.inc.Messages) {
		due := f.start + time.Duration(f.incPosted)*f.incInterval
		if now < due {
			return due, nil
		}
		if err := f.snd.Post(now, f.inc.MessageBytes()); err != nil {
			return agent.NoWake, fmt.Errorf("agent: flow %s: message %d: %w", f.cfg.Name, f.inc.Messages[f.incPosted], err)
		}
		f.incPosted++
	}
	if f.cfg.Duration > 0 && !f.stopped {
		if now < f.stopAt {
			return f.stopAt, nil
		}
		f.stopped = true
		if err := f.snd.Stop(now); err != nil {
			return agent.NoWake, fmt.Errorf("agent: flow %s: stop: %w", f.cfg.Name, err)
		}
	}
	if f.done() && f.doneAt == 0 {
		f.doneAt = now
		a.log.WithFields(logrus.Fields{"flow": f.cfg.Name, "fct": (now - f.start).String()}).Info("flow done")
	}
	return agent.NoWake, nil
}

func (a *Agent) allDoneLocked() bool {
	if len(a.senders) == 0 && len(a.checkers) == 0 {
		return false
	}
	for _, f := range a.senders {
		if !f.done() {
			return false
		}
	}
	for _, c := range a.checkers {
		if !c.Complete() {
			return false
		}
	}
	return true
}

// wait sleeps until wake (agent time), a kick, or ctx's end. Short waits
// (below SleepBelow) use nanosleep(2) on the send loop's own OS thread with
// a 1 ns timer slack, because Go timers round sub-millisecond sleeps up to
// about a millisecond; they are not interrupted by kicks (they are short,
// and a sender waiting for its pacer needs no ACK to proceed).
func (a *Agent) wait(ctx context.Context, timer *time.Timer, wake time.Duration) error {
	d := wake - a.now()
	if d <= 0 {
		return nil
	}
	if d < a.cfg.SpinBelow {
		for a.now() < wake {
			select {
			case <-a.kick:
				return nil
			default:
			}
			runtime.Gosched()
		}
		return nil
	}
	if d < a.cfg.SleepBelow {
		ts := unix.NsecToTimespec(int64(d))
		for {
			err := unix.Nanosleep(&ts, &ts)
			if err != unix.EINTR {
				return nil
			}
		}
	}
	if wake == agent.NoWake {
		d = time.Hour
	}
	timer.Reset(d)
	select {
	case <-ctx.Done():
		timer.Stop()
		return ctx.Err()
	case <-a.kick:
		timer.Stop()
	case <-timer.C:
	}
	return nil
}

// preciseSleepThread locks the calling goroutine to its thread and sets the
// thread's timer slack to 1 ns; the returned function restores both.
func preciseSleepThread(log logrus.FieldLogger) func() {
	runtime.LockOSThread()
	old, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err == nil {
		err = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	}
	if err != nil {
		log.WithError(err).Debug("timer slack unchanged")
		return runtime.UnlockOSThread
	}
	return func() {
		_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(old), 0, 0, 0)
		runtime.UnlockOSThread()
	}
}

func (a *Agent) kickSender() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// recvLoop reads frames, runs them through the state machines, and sends
// the replies (ACKs, NAKs, CNPs) they call for.
func (a *Agent) recvLoop(ctx context.Context) error {
	msgs := make([]afpacket.Message, 64)
	for i := range msgs {
		msgs[i].Buf = make([]byte, a.p.MaxFrameLen())
	}
	replyStore := make([]byte, 64*replySlot)
	var replies [][]byte
	var out []reply
	var pf wire.Frame
	var ev agent.Event
	var accepted [][]byte
	for {
		n, err := a.p.ReadBatch(ctx, msgs)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, afpacket.ErrClosed) {
				return nil
			}
			return fmt.Errorf("agent: receive: %w", err)
		}
		replies, accepted = replies[:0], accepted[:0]
		kick := false
		a.mu.Lock()
		now := a.now()
		for i := 0; i < n; i++ {
			frame := msgs[i].Buf[:msgs[i].N]
			a.rxStats.Frames++
			if err := agent.Decode(frame, &pf, &ev); err != nil {
				a.rxStats.Malformed++ // truncated or malformed headers (any destination)
				continue
			}
			if pf.Has(wire.LayerMACControl) && (pf.Ethernet.Dst == wire.MACControlDst || pf.Ethernet.Dst == a.cfg.MAC) &&
				a.gate.OnFrame(now, &pf) {
				a.rxStats.MACControl++
				kick = true // the send loop re-reads the gate: stop now, or resume on an XON
				continue
			}
			if ev.Kind == agent.KindOther || ev.DstIP != a.cfg.IP {
				a.rxStats.NotForUs++
				continue
			}
			// A NIC drops a RoCEv2 packet whose ICRC does not match (it
			// was corrupted on the way): so does the agent.
			if !a.cfg.NoICRCCheck {
				if ok, err := wire.VerifyICRC(frame[pf.Off[wire.LayerIPv4]:]); err != nil || !ok {
					a.rxStats.BadICRC++
					a.log.WithFields(logrus.Fields{"src": ev.SrcIP.String(), "dest_qp": ev.DestQP, "kind": ev.Kind.String()}).
						Debug("RoCEv2 frame with a bad ICRC dropped")
					continue
				}
			}
			rb := replyStore[i*replySlot : (i+1)*replySlot]
			var k bool
			var err error
			out, k, err = a.handle(now, &ev, rb, out[:0])
			if err != nil {
				a.rxStats.ReplyErrors++
				a.log.WithError(err).Warn("receive")
				continue
			}
			accepted = append(accepted, frame)
			kick = kick || k
			for _, r := range out {
				// A paused priority (or one with replies still waiting,
				// to keep their order) holds the reply; the send loop
				// sends it when the priority resumes.
				if q := a.heldReply[r.prio]; len(q) > 0 || a.gate.Paused(r.prio, now) {
					a.holdReply(r)
					kick = true
					continue
				}
				replies = append(replies, r.frame)
			}
		}
		a.mu.Unlock()
		a.capture(accepted, false)
		if kick {
			a.kickSender()
		}
		if len(replies) > 0 {
			if _, err := a.p.WriteBatch(ctx, replies); err != nil {
				if ctx.Err() != nil || errors.Is(err, afpacket.ErrClosed) {
					return nil
				}
				return fmt.Errorf("agent: send replies: %w", err)
			}
			a.capture(replies, true)
		}
	}
}

// replySlot is the reply buffer space per received frame: an ACK (62
// bytes, padded to 64; up to agent.AckFrameMax with echoed INT records) and
// a CNP (74 bytes).
const (
	ackSlot   = 192
	replySlot = ackSlot + 128
)

var _ [ackSlot - agent.AckFrameMax]struct{} // an echoing ACK fits its slot

// reply is a frame the receive loop answers with and its priority.
type reply struct {
	frame []byte
	prio  uint8
}

// holdReply queues a copy of r until its priority resumes (under a.mu).
func (a *Agent) holdReply(r reply) {
	q := a.heldReply[r.prio]
	if len(q) >= MaxHeldReplies {
		q = q[1:]
		a.rxStats.RepliesDropped++
	}
	a.heldReply[r.prio] = append(q, slices.Clone(r.frame))
	a.rxStats.RepliesHeld++
}

// handle processes one decoded frame under a.mu. rb (replySlot bytes) holds the
// replies it builds (at most an ACK and a CNP), appended to replies; kick asks
// the sender loop to re-examine its flows.
func (a *Agent) handle(now time.Duration, ev *agent.Event, rb []byte, replies []reply) ([]reply, bool, error) {
	if ev.Kind == agent.KindINCPartial {
		a.rxStats.INCPartials++
		return replies, false, nil
	}
	if ev.Kind == agent.KindINCResult {
		a.rxStats.INCResults++
		cs := a.incRecv[ev.DestQP]
		for _, c := range cs {
			if ev.HasIDs && c.Matches(&ev.IDs) {
				tm := a.incTimes[c]
				if tm == nil {
					tm = &[2]time.Duration{now, now}
					a.incTimes[c] = tm
				}
				tm[1] = now
				if !c.OnResult(&ev.IDs, &ev.Vector) {
					a.log.WithFields(logrus.Fields{"group": ev.IDs.GroupID, "message": ev.IDs.MessageID, "offset": ev.IDs.FirstPSN}).Warn("INC RESULT differs from the expected sum")
				}
				return replies, true, nil
			}
		}
		a.rxStats.UnknownQP++
		return replies, false, nil
	}
	f := a.byQPN[ev.DestQP]
	if f == nil {
		a.rxStats.UnknownQP++
		return replies, false, nil
	}
	switch ev.Kind {
	case agent.KindAck:
		if !f.send {
			a.rxStats.UnknownQP++
			return replies, false, nil
		}
		hops, ok := ev.CCHops(&a.ccHops)
		if !ok {
			a.rxStats.BadINT++
		}
		if err := f.snd.OnAckFeedback(now, ev.PSN, ev.AETH.Syndrome, agent.AckFeedback{ECE: ev.ECE, Hops: hops}); err != nil {
			return replies, false, fmt.Errorf("flow %s: %w", f.cfg.Name, err)
		}
		f.collectRTT()
		return replies, true, nil
	case agent.KindCNP:
		if !f.send {
			a.rxStats.UnknownQP++
			return replies, false, nil
		}
		if err := f.snd.OnCNP(now, ev.CNP); err != nil {
			return replies, false, fmt.Errorf("flow %s: %w", f.cfg.Name, err)
		}
		f.minWindow = min(f.minWindow, f.snd.Algorithm().Window())
		return replies, true, nil
	case agent.KindData:
		if f.send || ev.SrcIP != f.cfg.src {
			a.rxStats.UnknownQP++
			return replies, false, nil
		}
		if !f.learned || f.path.DstMAC != ev.SrcMAC {
			f.path.DstMAC, f.learned = ev.SrcMAC, true
		}
		rep, err := f.rcv.OnData(agent.Arrival{Now: now, PSN: ev.PSN, AckReq: ev.AckReq, CE: ev.CE, Payload: len(ev.Payload),
			INT: ev.INT && !ev.INTEcho})
		if err != nil {
			return replies, false, fmt.Errorf("flow %s: %w", f.cfg.Name, err)
		}
		if rep.Accept {
			if !agent.CheckPattern(ev.Payload, f.rxOffset) {
				f.badData++
			}
			f.rxOffset += int64(len(ev.Payload))
		}
		off := 0
		if rep.Ack {
			n, err := f.path.BuildAck(rb[off:ackSlot], f.rqpn, &rep, ev.Hops[:ev.NumHops])
			if err != nil {
				return replies, false, fmt.Errorf("flow %s: %w", f.cfg.Name, err)
			}
			replies = append(replies, reply{rb[off : off+n], f.path.Priority(agent.DataDSCP)})
			off = ackSlot
			a.rxStats.AcksSent++
			if rep.ECE {
				a.rxStats.ECEAcksSent++
			}
			if rep.EchoINT {
				a.rxStats.INTAcksSent++
			}
		}
		if rep.CNP {
			n, err := f.path.BuildCNP(rb[off:], f.rqpn, nil)
			if err != nil {
				return replies, false, fmt.Errorf("flow %s: %w", f.cfg.Name, err)
			}
			replies = append(replies, reply{rb[off : off+n], f.path.Priority(agent.CNPDSCP)})
			a.rxStats.CNPsSent++
		}
		return replies, false, nil
	}
	a.rxStats.NotForUs++
	return replies, false, nil
}

func (f *flow) collectRTT() {
	start := len(f.rttWin)
	f.rttWin = f.snd.DrainRTT(f.rttWin)
	if room := maxKeptRTT - len(f.rtts); room > 0 {
		add := f.rttWin[start:]
		f.rtts = append(f.rtts, add[:min(len(add), room)]...)
	}
	if len(f.rttWin) > 1<<16 { // nobody samples: keep it bounded
		f.rttWin = f.rttWin[:0]
	}
}

// Counters returns the receive-loop counters.
func (a *Agent) Counters() RxCounters {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rxStats
}

// FlowStatus is a snapshot of one local flow end.
type FlowStatus struct {
	Name     string
	Sender   bool
	Done     bool
	Send     agent.SenderStats
	Recv     agent.ReceiverStats
	BadData  uint64
	Window   int64
	Inflight int64
	Messages []agent.MessageDone
	RTTs     []time.Duration
}

// Status returns a snapshot of every local flow (RTTs: all samples kept).
func (a *Agent) Status() []FlowStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]FlowStatus, 0, len(a.flows))
	for _, f := range a.flows {
		s := FlowStatus{Name: f.cfg.Name, Sender: f.send, BadData: f.badData}
		if f.send {
			f.collectRTT()
			f.msgs = append(f.msgs, f.snd.DrainDone()...)
			s.Done, s.Send = f.done(), f.snd.Stats()
			s.Window, s.Inflight = f.snd.Algorithm().Window(), f.snd.Inflight()
			s.Messages = slices.Clone(f.msgs)
			s.RTTs = slices.Clone(f.rtts)
		} else {
			s.Recv = f.rcv.Stats()
		}
		out = append(out, s)
	}
	return out
}

// PauseStats returns the counters of the PFC and PAUSE frames received.
func (a *Agent) PauseStats() agent.PauseStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.gate.Stats(a.now())
}

// INCStatus returns the counters of the local INC checkers.
func (a *Agent) INCStatus() []agent.INCStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []agent.INCStats
	for _, c := range a.checkers {
		out = append(out, c.Stats())
	}
	return out
}
