// Command fastcnp-host is the fastcnp RoCEv2 host agent: a software RC
// transport over one Linux interface (AF_PACKET) that sends and receives
// RoCEv2 frames, runs DCQCN (optionally with the fastcnp switch window),
// answers with RC ACKs and DCQCN NP CNPs, announces its connections to the
// switch, and writes per-flow statistics as JSON lines.
//
//	fastcnp-host --iface eth0 --ip 10.0.0.1 --mac 02:00:00:00:00:01 \
//	    --gateway-mac 02:00:00:00:00:fe --cc dcqcn-fastcnp --params nvidia-cx \
//	    --line-rate 1Gb/s --flow dst=10.0.1.1,src_qpn=0x100,dst_qpn=0x200,size=10MB \
//	    --stats stats.jsonl --exit-when-done
//
// See docs/host-agent.md for every flag, the frames and the statistics schema.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/sirupsen/logrus"

	"github.com/fastcnp/fastcnp/afpacket"
	"github.com/fastcnp/fastcnp/host/agent"
	"github.com/fastcnp/fastcnp/host/agent/live"
	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/internal/readlimit"
	"github.com/fastcnp/fastcnp/internal/units"
	"github.com/fastcnp/fastcnp/wire"
)

func main() {
	log := logrus.New()
	opts, err := parseArgs(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "fastcnp-host: %v\n", err)
		os.Exit(2)
	}
	log.SetLevel(opts.level)
	for _, w := range opts.warnings {
		log.Warn(w)
	}
	if err := run(opts, log); err != nil {
		log.WithError(err).Error("fastcnp-host failed")
		os.Exit(1)
	}
}

// maxKeyFileSize bounds the --announce-key file (one line).
const maxKeyFileSize = 64 << 10

// options is the parsed command line.
type options struct {
	iface      string
	statsPath  string
	level      logrus.Level
	cfg        live.Config
	sendBuffer int
	warnings   []string
}

func run(opts options, log *logrus.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cfg := opts.cfg
	cfg.Log = log.WithField("iface", opts.iface)
	if opts.statsPath != "" {
		var w io.Writer = os.Stdout
		if opts.statsPath != "-" {
			fh, err := os.Create(opts.statsPath)
			if err != nil {
				return fmt.Errorf("stats file: %w", err)
			}
			defer fh.Close()
			w = fh
		}
		cfg.Stats = w
	}
	p, err := afpacket.Open(opts.iface, afpacket.Options{Log: cfg.Log, SendBuffer: opts.sendBuffer})
	if err != nil {
		return fmt.Errorf("open interface %s: %w", opts.iface, err)
	}
	defer p.Close()
	a, err := live.New(cfg, p)
	if err != nil {
		return err
	}
	return a.Run(ctx)
}

// flowList collects repeated --flow specs.
type flowList []live.FlowConfig

func (l *flowList) String() string { return "" }

func (l *flowList) Set(v string) error {
	f, err := live.ParseFlowSpec(v)
	if err != nil {
		return err
	}
	*l = append(*l, f)
	return nil
}

// parseArgs parses the command line into options; every error names the flag.
func parseArgs(args []string, out io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("fastcnp-host", flag.ContinueOnError)
	fs.SetOutput(out)
	var (
		ip, mac, gw, peer, mode, algo, params, level string
		algoParams, ccName, ccParams                 string
		lineRate, startRate, baseRTT, initWin, flows string
		mss, ackEvery, burst                         int
		ccScale                                      float64
		rto, cnpInterval, interval, spin, burstTime  string
		rttTarget, windowRule                        string
		startAt, announceInterval, announceKey       string
		announcePort                                 uint
		noAnnounce, noCNPTarget, exitDone, noICRC    bool
		flowSpecs                                    flowList
	)
	fs.StringVar(&o.iface, "iface", "", "interface to send and receive on (required)")
	fs.StringVar(&ip, "ip", "", "this host's IPv4 address (required; do not configure it on the interface, or the kernel answers RoCEv2 frames with ICMP)")
	fs.StringVar(&mac, "mac", "", "this host's MAC (required: the interface's MAC)")
	fs.StringVar(&gw, "gateway-mac", "", "next-hop MAC for everything the agent originates (the switch port); empty: each flow's dst_mac / --peer MAC")
	fs.StringVar(&peer, "peer", "", "default peer IP[,MAC] for --flow specs without dst= / dst_mac=")
	fs.StringVar(&mode, "mode", "both", "roles: sender, receiver, both or inc-worker")
	fs.StringVar(&ccName, "cc", "", "sender congestion control: "+strings.Join(cc.Names(), ", ")+" (default dcqcn-fastcnp)")
	fs.StringVar(&algo, "algo", "", "the same as --cc (older name)")
	fs.StringVar(&params, "params", "nvidia-cx", "DCQCN parameter set: "+strings.Join(cc.DCQCNPresetNames(), ", ")+" (also the receiver's CNP interval for every algorithm)")
	fs.StringVar(&ccParams, "cc-params", "", "parameter set of a non-DCQCN sender algorithm (timely, dctcp, hpcc: default hpcc-sim; pid, lstm-pid*: default thesis); see docs/host-cc.md")
	fs.StringVar(&algoParams, "algo-params", "", "the same as --cc-params (older name)")
	fs.Float64Var(&ccScale, "cc-scale", 1, "run the DCQCN parameter set K times slower: its periods x K, its rates (R_AI, R_HAI, minRate) / K, byte counts unchanged (a 100 Mb/s testbed with millisecond RTTs runs 100 Gb/s, microsecond parameters with K = 1000)")
	fs.StringVar(&rttTarget, "rtt-target", "", "LSTM+PID family: RTTtarget, replacing the parameter set's (after --cc-scale); seed 002 tuned 5 us to its topology's empty-queue RTT of 4-5 us")
	fs.StringVar(&lineRate, "line-rate", "1Gb/s", "sender line rate C_host (pacing ceiling)")
	fs.StringVar(&startRate, "start-rate", "", "rate before the first CNP (default: line rate)")
	fs.StringVar(&baseRTT, "base-rtt", "100us", "RTTbase; with the line rate it sets Winit = line rate x base RTT")
	fs.StringVar(&initWin, "init-window", "", "Winit in bytes (overrides line rate x base RTT)")
	fs.StringVar(&windowRule, "window-rule", string(cc.WindowRuleAIMD), "dcqcn-fastcnp's reaction to a switch window: aimd (cap the window, no rate cut, grow one MTU per window acknowledged) or spec01 (cut the rate too, restore Winit at the first increase); docs/host-cc.md")
	fs.StringVar(&flows, "flows", "", "flow file (YAML or JSON, see docs/host-agent.md)")
	fs.Var(&flowSpecs, "flow", "a flow, key=value pairs (repeatable): src,dst,dst_mac,src_qpn,dst_qpn,sport,size|sizes|duration,start,count,inc_*")
	fs.StringVar(&startAt, "start-at", "", "common start instant the flows' start times count from (RFC 3339, e.g. 2026-11-22T08:36:00.5Z, or Unix nanoseconds); give every host of an incast the same one (default: when the agent starts)")
	fs.StringVar(&o.statsPath, "stats", "", "write per-flow statistics as JSON lines to FILE (- = stdout)")
	fs.StringVar(&interval, "stats-interval", "10ms", "statistics sampling period")
	fs.UintVar(&announcePort, "announce-port", wire.DefaultAnnouncePort, "UDP port of RDMA-connection announcements")
	fs.BoolVar(&noAnnounce, "no-announce", false, "do not send announcements")
	fs.BoolVar(&noCNPTarget, "no-cnp-target", false, "announce connections without the CNP-target flag")
	fs.StringVar(&announceKey, "announce-key", "", "authenticate announcements with the key in FILE (a line \"ID KEY\": the key ID and the hex key fastcnpd's announce.auth key file holds for this host)")
	fs.StringVar(&announceInterval, "announce-interval", agent.DefaultAnnounceInterval.String(),
		"announce the sending connections again this often while running (keep it below a third of fastcnpd's announce.idle_timeout)")
	fs.BoolVar(&noICRC, "no-icrc-check", false, "accept received RoCEv2 frames with a wrong ICRC (debugging; by default they are dropped and counted, as a NIC does)")
	fs.IntVar(&mss, "mss", agent.DefaultMSS, "payload bytes per data packet")
	fs.IntVar(&ackEvery, "ack-every", 0, fmt.Sprintf("request an ACK every N packets (and on each message's last); 0: the algorithm's (1 for those whose signal rides on ACKs: timely, dctcp, hpcc, pid, lstm-pid*; %d for dcqcn, dcqcn-fastcnp)", agent.DefaultAckEvery))
	fs.IntVar(&burst, "burst", agent.DefaultBurstPackets, "pacing token bucket depth, packets")
	fs.StringVar(&burstTime, "burst-time", live.DefaultBurstTime.String(), "pacing token bucket depth in time, if larger than --burst: how late a wake-up may be and still be caught up")
	fs.StringVar(&rto, "rto", agent.DefaultRTO.String(), "first retransmission timeout")
	fs.StringVar(&cnpInterval, "cnp-interval", "", "receiver NP cnpInterval (default: the parameter set's)")
	fs.StringVar(&spin, "spin-below", "0", "spin instead of sleeping for waits shorter than this (pacing precision vs CPU)")
	fs.IntVar(&o.sendBuffer, "send-buffer", 0, "socket send buffer bytes (0: port default 4 MiB)")
	fs.BoolVar(&exitDone, "exit-when-done", false, "exit when every local sending flow is acknowledged (and INC results are complete)")
	fs.StringVar(&level, "log-level", "info", "log level: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if o.level, err = logrus.ParseLevel(level); err != nil {
		return o, fmt.Errorf("--log-level: %w", err)
	}
	if o.iface == "" {
		return o, errors.New("--iface is required")
	}
	c := &o.cfg
	if ip == "" {
		return o, errors.New("--ip is required")
	}
	if c.IP, err = parseIP(ip); err != nil {
		return o, fmt.Errorf("--ip: %w", err)
	}
	if mac == "" {
		return o, errors.New("--mac is required")
	}
	if c.MAC, err = live.ParseMAC(mac); err != nil {
		return o, fmt.Errorf("--mac: %w", err)
	}
	if gw != "" {
		if c.GatewayMAC, err = live.ParseMAC(gw); err != nil {
			return o, fmt.Errorf("--gateway-mac: %w", err)
		}
	}
	if c.Mode, err = live.ParseMode(mode); err != nil {
		return o, fmt.Errorf("--mode: %w", err)
	}
	if algo, err = alias("--cc", ccName, "--algo", algo, "dcqcn-fastcnp"); err != nil {
		return o, err
	}
	if algoParams, err = alias("--cc-params", ccParams, "--algo-params", algoParams, ""); err != nil {
		return o, err
	}
	c.Algo = algo
	if c.CC.DCQCN, err = cc.DCQCNPreset(params); err != nil {
		return o, fmt.Errorf("--params: %w", err)
	}
	if c.CC.DCQCN, err = c.CC.DCQCN.Scaled(ccScale); err != nil {
		return o, fmt.Errorf("--cc-scale: %w", err)
	}
	if err := useAlgoParams(&c.CC, algo, algoParams, ccScale); err != nil {
		return o, err
	}
	if rttTarget != "" {
		if sets, _ := cc.ParamSetNames(algo); !slices.Contains(sets, "thesis") {
			return o, fmt.Errorf("--rtt-target is for the LSTM+PID family, not %s", algo)
		}
		if c.CC.LSTMPID.Target, err = units.ParseDuration(rttTarget); err != nil {
			return o, fmt.Errorf("--rtt-target: %w", err)
		}
		c.CC.LSTMPID.Set += " target " + rttTarget
	}
	r, err := units.ParseRate(lineRate)
	if err != nil {
		return o, fmt.Errorf("--line-rate: %w", err)
	}
	c.CC.LineRate = float64(r)
	if startRate != "" {
		r, err := units.ParseRate(startRate)
		if err != nil {
			return o, fmt.Errorf("--start-rate: %w", err)
		}
		c.CC.StartRate = float64(r)
	}
	if c.CC.BaseRTT, err = units.ParseDuration(baseRTT); err != nil {
		return o, fmt.Errorf("--base-rtt: %w", err)
	}
	if initWin != "" {
		s, err := units.ParseSize(initWin)
		if err != nil {
			return o, fmt.Errorf("--init-window: %w", err)
		}
		c.CC.InitWindow = int64(s)
	}
	c.CC.WindowRule = cc.WindowRule(windowRule)
	if !slices.Contains(cc.WindowRules(), c.CC.WindowRule) {
		return o, fmt.Errorf("--window-rule %q (known: %v)", windowRule, cc.WindowRules())
	}
	c.CC.MTU = int64(mss + agent.RoCEOverhead + wire.Dot1QLen)
	if cnpInterval != "" {
		if c.CC.DCQCN.CNPInterval, err = units.ParseDuration(cnpInterval); err != nil {
			return o, fmt.Errorf("--cnp-interval: %w", err)
		}
	}
	if ackEvery < 0 {
		return o, fmt.Errorf("--ack-every %d: want 0 (the algorithm's) or more", ackEvery)
	}
	c.Sender = agent.SenderConfig{MSS: mss, AckEvery: ackEvery, BurstPackets: burst}
	if c.Sender.BurstTime, err = units.ParseDuration(burstTime); err != nil {
		return o, fmt.Errorf("--burst-time: %w", err)
	}
	if c.Sender.RTO, err = units.ParseDuration(rto); err != nil {
		return o, fmt.Errorf("--rto: %w", err)
	}
	if c.StatsInterval, err = units.ParseDuration(interval); err != nil {
		return o, fmt.Errorf("--stats-interval: %w", err)
	}
	if c.SpinBelow, err = units.ParseDuration(spin); err != nil {
		return o, fmt.Errorf("--spin-below: %w", err)
	}
	if announcePort == 0 || announcePort > 65535 || announcePort == wire.RoCEv2UDPPort {
		return o, fmt.Errorf("--announce-port %d: want 1..65535, not 4791", announcePort)
	}
	c.AnnouncePort = uint16(announcePort)
	c.NoAnnounce, c.NoCNPTarget, c.ExitWhenDone, c.NoICRCCheck = noAnnounce, noCNPTarget, exitDone, noICRC
	if c.AnnounceInterval, err = units.ParseDuration(announceInterval); err != nil {
		return o, fmt.Errorf("--announce-interval: %w", err)
	}
	if c.AnnounceInterval <= 0 {
		return o, fmt.Errorf("--announce-interval %s: must be positive", announceInterval)
	}
	if announceKey != "" {
		data, err := readlimit.File(announceKey, "announcement key file", maxKeyFileSize)
		if err != nil {
			return o, fmt.Errorf("--announce-key: %w", err)
		}
		k, err := agent.ParseAnnounceKey(string(data))
		if err != nil {
			return o, fmt.Errorf("--announce-key %s: %w", announceKey, err)
		}
		c.AnnounceKey = &k
		if fi, err := os.Stat(announceKey); err == nil && fi.Mode().Perm()&0o077 != 0 {
			o.warnings = append(o.warnings, fmt.Sprintf("announcement key file %s has mode %#o: other users can read the key; chmod 600 it",
				announceKey, fi.Mode().Perm()))
		}
	}
	if startAt != "" {
		if c.StartAt, err = live.ParseStartAt(startAt); err != nil {
			return o, fmt.Errorf("--start-at: %w", err)
		}
	}
	if flows != "" {
		data, err := os.ReadFile(flows)
		if err != nil {
			return o, fmt.Errorf("--flows: %w", err)
		}
		ff, err := live.ParseFlowFile(data)
		if err != nil {
			return o, fmt.Errorf("--flows %s: %w", flows, err)
		}
		c.Flows = append(c.Flows, ff...)
	}
	var peerIP, peerMAC string
	if peer != "" {
		peerIP, peerMAC, _ = strings.Cut(peer, ",")
		if _, err := parseIP(peerIP); err != nil {
			return o, fmt.Errorf("--peer: %w", err)
		}
		if peerMAC != "" {
			if _, err := live.ParseMAC(peerMAC); err != nil {
				return o, fmt.Errorf("--peer: %w", err)
			}
		}
	}
	for _, f := range flowSpecs {
		if f.Src == "" {
			f.Src = ip
		}
		if f.Dst == "" {
			if peerIP == "" {
				return o, errors.New("--flow without dst= needs --peer")
			}
			f.Dst = peerIP
		}
		if f.DstMAC == "" && f.Dst == peerIP {
			f.DstMAC = peerMAC
		}
		c.Flows = append(c.Flows, f)
	}
	if len(c.Flows) == 0 {
		return o, errors.New("no flows: give --flows FILE or --flow SPEC")
	}
	if _, err := live.Expand(c.Flows); err != nil {
		return o, err
	}
	if _, err := cc.New(c.Algo, c.CC); err != nil {
		return o, fmt.Errorf("--cc %s / --params %s / --line-rate %s: %w", algo, params, lineRate, err)
	}
	return o, nil
}

func parseIP(s string) (wire.Addr4, error) { return live.ParseIPv4(s) }

// alias returns the value of a flag that has an older name: the new one's,
// or the old one's, or def when neither is given; both given and different
// is an error.
func alias(name, v, oldName, old, def string) (string, error) {
	switch {
	case v != "" && old != "" && v != old:
		return "", fmt.Errorf("%s %s and %s %s disagree (%s is the older name of %s)", name, v, oldName, old, oldName, name)
	case v != "":
		return v, nil
	case old != "":
		return old, nil
	}
	return def, nil
}

// defaultAlgoParams returns the parameter set of a sender algorithm that is
// not DCQCN when --algo-params is not given: for timely, dctcp and hpcc the
// HPCC simulator's, the one the spec 06 comparisons use; for the LSTM+PID
// family seed 002's ("thesis").
func defaultAlgoParams(algo string) string {
	if sets, err := cc.ParamSetNames(algo); err == nil && slices.Contains(sets, "thesis") {
		return "thesis"
	}
	return "hpcc-sim"
}

// useAlgoParams loads the parameter set of a sender algorithm that is not DCQCN
// (DCQCN's comes from --params) and applies --cc-scale to it where the algorithm
// has rates and periods to scale (TIMELY, HPCC; DCTCP counts windows only).
func useAlgoParams(c *cc.Config, algo, set string, scale float64) error {
	switch algo {
	case "dcqcn", "dcqcn-fastcnp":
		if set != "" {
			return fmt.Errorf("--cc-params is for the algorithms other than DCQCN; %s takes --params", algo)
		}
		return nil
	}
	if set == "" {
		set = defaultAlgoParams(algo)
	}
	if err := c.UseParamSet(algo, set); err != nil {
		return fmt.Errorf("--cc %s --cc-params %s: %w", algo, set, err)
	}
	var err error
	switch algo {
	case "timely":
		c.TIMELY, err = c.TIMELY.Scaled(scale)
	case "hpcc":
		c.HPCC, err = c.HPCC.Scaled(scale)
	case "pid", "lstm-pid", "lstm-pid-rttch", "lstm-pid-rttch-win":
		c.LSTMPID, err = c.LSTMPID.Scaled(scale)
	}
	if err != nil {
		return fmt.Errorf("--cc-scale: %w", err)
	}
	return nil
}
