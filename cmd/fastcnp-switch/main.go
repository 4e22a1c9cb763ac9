// Command fastcnp-switch is the fastcnp software switch: the Go reference pipeline
// and the lossless traffic manager (real PFC) on Linux interfaces, controlled over
// P4Runtime. Its command line is shaped like BMv2's simple_switch_grpc so that the
// same Mininet glue can launch either:
//
//	fastcnp-switch --device-id 1 -i 1@veth1 -i 2@veth2 --cpu-port 255 \
//	    --grpc-server-addr 127.0.0.1:9559 --port-rate 100Mb/s --port-rate 2=1Gb/s
//
// See docs/target.md for every flag.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/fastcnp/fastcnp/internal/tlsfiles"
	"github.com/fastcnp/fastcnp/internal/units"
	"github.com/fastcnp/fastcnp/model/tm"
	softswitch "github.com/fastcnp/fastcnp/softswitch"
)

func main() {
	log := logrus.New()
	opts, err := parseArgs(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "fastcnp-switch: %v\n", err)
		os.Exit(2)
	}
	log.SetLevel(opts.level)
	opts.cfg.Log = log
	for _, w := range opts.warnings {
		log.Warn(w)
	}
	if err := run(opts.cfg, log); err != nil {
		log.WithError(err).Error("fastcnp-switch failed")
		os.Exit(1)
	}
}

// run runs the switch until SIGINT/SIGTERM; SIGUSR1 logs the counters as JSON.
func run(cfg softswitch.Config, log *logrus.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	sw, err := softswitch.New(cfg)
	if err != nil {
		return err
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	done := make(chan struct{})
	dumped := make(chan struct{})
	go func() {
		defer close(dumped)
		for {
			select {
			case <-done:
				return
			case <-usr1:
				b, err := sw.DumpJSON()
				if err != nil {
					log.WithError(err).Warn("dump failed")
					continue
				}
				fmt.Fprintf(os.Stderr, "%s\n", b)
			}
		}
	}()
	err = sw.Run(ctx)
	close(done)
	<-dumped
	return err
}

// options is the parsed command line.
type options struct {
	cfg      softswitch.Config
	level    logrus.Level
	warnings []string
}

// ifaceList collects -i NUM@IFNAME.
type ifaceList []softswitch.PortConfig

func (l *ifaceList) String() string { return "" }

func (l *ifaceList) Set(v string) error {
	num, name, ok := strings.Cut(v, "@")
	if !ok || num == "" || name == "" {
		return fmt.Errorf("%q: want PORT@IFNAME, e.g. 1@veth1", v)
	}
	n, err := strconv.ParseUint(num, 10, 16)
	if err != nil {
		return fmt.Errorf("%q: port number %q: %w", v, num, err)
	}
	*l = append(*l, softswitch.PortConfig{Num: uint16(n), Ifname: name})
	return nil
}

// rateList collects --port-rate RATE (the default) and --port-rate PORT=RATE.
type rateList struct {
	def     int64
	perPort map[uint16]int64
}

func (r *rateList) String() string { return "" }

func (r *rateList) Set(v string) error {
	num, rate, per := strings.Cut(v, "=")
	if !per {
		rate = v
	}
	bps, err := units.ParseRate(rate)
	if err != nil {
		return err
	}
	if bps > units.Rate(tm.MaxRateBps) || bps < units.Rate(tm.MinRateBps) {
		return fmt.Errorf("%q: rate outside %s..%s", v, units.FormatRate(units.Rate(tm.MinRateBps)), units.FormatRate(units.Rate(tm.MaxRateBps)))
	}
	if !per {
		r.def = int64(bps)
		return nil
	}
	n, err := strconv.ParseUint(num, 10, 16)
	if err != nil {
		return fmt.Errorf("%q: port number %q: %w", v, num, err)
	}
	if r.perPort == nil {
		r.perPort = make(map[uint16]int64)
	}
	r.perPort[uint16(n)] = int64(bps)
	return nil
}

// sizeFlag is a byte size in units syntax ("4MiB", "100KB"); set records use.
type sizeFlag struct {
	v   int64
	set bool
}

func (s *sizeFlag) String() string { return "" }

func (s *sizeFlag) Set(v string) error {
	n, err := units.ParseSize(v)
	if err != nil {
		return err
	}
	if n > 1<<40 {
		return fmt.Errorf("%q: larger than 1 TiB", v)
	}
	s.v, s.set = int64(n), true
	return nil
}

// durFlag is a duration in units syntax ("2us", "1 ms").
type durFlag struct{ v int64 }

func (d *durFlag) String() string { return "" }

func (d *durFlag) Set(v string) error {
	x, err := units.ParseDuration(v)
	if err != nil {
		return err
	}
	d.v = int64(x)
	return nil
}

// parsePriorities reads "3", "3,4" or "none" into a bit mask.
func parsePriorities(v string) (mask uint8, none bool, err error) {
	if v == "none" {
		return 0, true, nil
	}
	for _, f := range strings.Split(v, ",") {
		p, err := strconv.ParseUint(strings.TrimSpace(f), 10, 8)
		if err != nil || p > 7 {
			return 0, false, fmt.Errorf("--lossless-priorities %q: want priorities 0..7 separated by commas, or none", v)
		}
		mask |= 1 << p
	}
	return mask, false, nil
}

// parseArgs parses the command line. BMv2 options that make no sense here are
// accepted and reported as warnings; target options after "--" (simple_switch_grpc
// style) are parsed like the others.
func parseArgs(args []string, out io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("fastcnp-switch", flag.ContinueOnError)
	fs.SetOutput(out)
	var ifaces ifaceList
	var rates rateList
	var buffer, xoff, xonOffset, rxBuffer sizeFlag
	var delay, response durFlag
	deviceID := fs.Uint64("device-id", 0, "P4Runtime device ID (non-zero)")
	fs.Var(&ifaces, "i", "port: PORT@IFNAME (repeat for each port)")
	fs.Var(&ifaces, "interface", "same as -i")
	cpuPort := fs.Uint("cpu-port", 255, "CPU port of the P4 program (must be 255, the program's CPU_PORT)")
	grpcAddr := fs.String("grpc-server-addr", "127.0.0.1:9559", "P4Runtime listen address")
	// TLS as Stratum's flags (its underscore spellings are accepted too).
	var caCert, srvCert, srvKey string
	for _, f := range []struct {
		v          *string
		name, help string
	}{
		{&caCert, "ca-cert-file", "P4Runtime mutual TLS: clients must present a certificate signed by this CA (PEM); needs --server-cert-file and --server-key-file"},
		{&srvCert, "server-cert-file", "P4Runtime over TLS: the server's certificate (PEM), with --server-key-file"},
		{&srvKey, "server-key-file", "P4Runtime over TLS: the server's private key (PEM), with --server-cert-file"},
	} {
		fs.StringVar(f.v, f.name, "", f.help)
		fs.StringVar(f.v, strings.ReplaceAll(f.name, "-", "_"), "", "same as --"+f.name+" (Stratum's spelling)")
	}
	fs.Var(&buffer, "buffer-size", "switch buffer: headroom + shared pool (e.g. 4MiB; default 4MiB)")
	fs.Var(&xoff, "pfc-xoff", "static PFC XOFF threshold per ingress port and priority (e.g. 20KB); default: dynamic")
	alpha := fs.Float64("pfc-alpha", 0, "dynamic PFC threshold: XOFF = alpha * free shared buffer (default 0.125)")
	fs.Var(&xonOffset, "pfc-xon-offset", "PFC resume offset: XON = XOFF - offset (default 3KiB)")
	fs.Var(&rates, "port-rate", "egress shaping rate: RATE for every port or PORT=RATE (e.g. 1Gb/s, 2=100Mb/s; default 1Gb/s)")
	fs.Var(&delay, "link-delay", "one-way link delay applied to every departure and used for headroom (e.g. 2us; default 0)")
	fs.Var(&response, "pfc-response-time", "peers' PAUSE response time added to the headroom (e.g. 1ms; default 0)")
	lossless := fs.String("lossless-priorities", "3", "lossless (PFC) priorities: e.g. 3 or 3,4, or none")
	sched := fs.String("scheduler", "lossless-first", "egress scheduler: strict, lossless-first or lossless-first-dwrr")
	level := fs.String("log-level", "info", "log level: debug, info, warn, error")
	debugAddr := fs.String("debug-addr", "", "loopback HTTP address serving the counters as JSON at "+softswitch.DebugPath+" (e.g. 127.0.0.1:9560)")
	fs.Var(&rxBuffer, "rx-buffer", "receive buffer of each port's socket (SO_RCVBUFFORCE; e.g. 64MiB; default 32MiB): the input burst it absorbs")
	rxXoff := fs.String("rx-pfc-xoff", "", "input backpressure: PFC XOFF out of a port whose receive queue fills this fraction of --rx-buffer (default 0.25), or off")
	rxXon := fs.Float64("rx-pfc-xon", 0, "input backpressure: XON once the queue is down to this fraction (default 0.125, at most half of --rx-pfc-xoff)")
	rxBatch := fs.Int("rx-batch", 0, "frames read per system call on each port (default 64, at most 1024)")
	rxDefer := fs.Bool("rx-defer-lossless", true, "keep a lossless frame the TM has no room for and stop reading its port until there is (false: the TM drops it, a lossless drop)")
	// simple_switch_grpc options accepted for compatibility.
	noP4 := fs.Bool("no-p4", false, "accepted for simple_switch_grpc compatibility (the switch always waits for SetForwardingPipelineConfig)")
	thrift := fs.Int("thrift-port", 0, "accepted for simple_switch_grpc compatibility; ignored (no Thrift)")
	logConsole := fs.Bool("log-console", false, "accepted for simple_switch_grpc compatibility (logs go to stderr)")
	prioQueues := fs.Int("priority-queues", 8, "accepted for simple_switch_grpc compatibility: every port has 8 priority queues")
	nanolog := fs.String("nanolog", "", "accepted for simple_switch_grpc compatibility; ignored")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	// flag stops at "--" (simple_switch_grpc's separator before target options) and
	// at the first positional argument (its JSON program): parse what follows too.
	for rest := fs.Args(); len(rest) > 0; rest = fs.Args() {
		next := rest[1:]
		switch {
		case rest[0] == "--":
		case len(rest[0]) > 1 && rest[0][0] == '-':
			next = rest // options that followed a "--" flag.Parse consumed
		default:
			o.warnings = append(o.warnings, fmt.Sprintf("ignoring positional argument %q (the program comes through P4Runtime)", rest[0]))
		}
		if err := fs.Parse(next); err != nil {
			return o, err
		}
	}
	_ = noP4
	_ = logConsole
	if *prioQueues != 8 {
		o.warnings = append(o.warnings, fmt.Sprintf("--priority-queues %d ignored: every port has 8 priority queues", *prioQueues))
	}
	if *nanolog != "" {
		o.warnings = append(o.warnings, "--nanolog ignored: logs go to stderr (logrus)")
	}
	if *thrift != 0 {
		o.warnings = append(o.warnings, "--thrift-port ignored: fastcnp-switch has no Thrift server")
	}

	var err error
	if *level == "off" { // simple_switch_grpc's value
		*level = "panic"
	}
	if o.level, err = logrus.ParseLevel(*level); err != nil {
		return o, fmt.Errorf("--log-level: %w", err)
	}
	if *deviceID == 0 {
		return o, errors.New("--device-id: must be non-zero (P4Runtime)")
	}
	if len(ifaces) == 0 {
		return o, errors.New("no ports: give -i PORT@IFNAME at least once")
	}
	if *cpuPort != 255 {
		return o, fmt.Errorf("--cpu-port %d: the fastcnp program's CPU_PORT is 255", *cpuPort)
	}
	c := &o.cfg
	switch {
	case (srvCert == "") != (srvKey == ""):
		return o, errors.New("--server-cert-file and --server-key-file go together")
	case caCert != "" && srvCert == "":
		return o, errors.New("--ca-cert-file (client certificates) needs --server-cert-file and --server-key-file")
	case srvCert != "":
		if c.GRPCTLS, err = tlsfiles.Server(srvCert, srvKey, caCert); err != nil {
			return o, fmt.Errorf("P4Runtime TLS: %w", err)
		}
	}
	c.DeviceID = *deviceID
	c.CPUPort = uint16(*cpuPort)
	c.GRPCAddr = *grpcAddr
	c.DebugAddr = *debugAddr
	c.DefaultRateBps = rates.def
	known := make(map[uint16]bool)
	for _, p := range ifaces {
		known[p.Num] = true
	}
	for n := range rates.perPort {
		if !known[n] {
			return o, fmt.Errorf("--port-rate %d=...: no port %d (give -i %d@IFNAME)", n, n, n)
		}
	}
	for _, p := range ifaces {
		p.RateBps = rates.perPort[p.Num]
		c.Ports = append(c.Ports, p)
	}
	c.LinkDelay = time.Duration(delay.v)
	c.TM.ProcessingAllowanceNs = response.v
	c.TM.WireOverhead = true
	if buffer.set {
		if buffer.v == 0 {
			return o, errors.New("--buffer-size: must be > 0")
		}
		c.TM.BufferBytes = buffer.v
	}
	switch {
	case xoff.set && *alpha != 0:
		return o, errors.New("--pfc-xoff (static threshold) and --pfc-alpha (dynamic threshold) exclude each other")
	case xoff.set:
		if xoff.v == 0 {
			return o, errors.New("--pfc-xoff: must be > 0")
		}
		c.TM.Threshold, c.TM.XoffBytes = tm.ThresholdStatic, xoff.v
	case *alpha < 0 || *alpha > 64:
		return o, fmt.Errorf("--pfc-alpha %v: want 0 < alpha <= 64", *alpha)
	default:
		c.TM.Threshold, c.TM.Alpha = tm.ThresholdDynamic, *alpha
	}
	offset := int64(tm.DefaultResumeOffsetBytes)
	if xonOffset.set {
		if xonOffset.v == 0 {
			return o, errors.New("--pfc-xon-offset: must be > 0")
		}
		offset = xonOffset.v
		c.TM.ResumeOffsetBytes = xonOffset.v
	}
	if xoff.set && offset >= xoff.v {
		return o, fmt.Errorf("--pfc-xon-offset %d B must be below --pfc-xoff %d B (XON = XOFF - offset)", offset, xoff.v)
	}
	mask, none, err := parsePriorities(*lossless)
	if err != nil {
		return o, err
	}
	c.TM.Lossless, c.LosslessNone = mask, none
	switch *sched {
	case "strict":
		c.TM.Scheduler = tm.SchedStrict
	case "lossless-first":
		c.TM.Scheduler = tm.SchedLosslessFirst
	case "lossless-first-dwrr":
		c.TM.Scheduler = tm.SchedLosslessFirstDWRR
	default:
		return o, fmt.Errorf("--scheduler %q: want strict, lossless-first or lossless-first-dwrr", *sched)
	}
	if rxBuffer.set {
		if rxBuffer.v < 64<<10 || rxBuffer.v > 1<<30 {
			return o, fmt.Errorf("--rx-buffer %d B: want 64KiB .. 1GiB", rxBuffer.v)
		}
		c.PortOptions.RecvBuffer = int(rxBuffer.v)
	}
	switch *rxXoff {
	case "":
	case "off":
		c.InputXoff = -1
	default:
		f, err := strconv.ParseFloat(*rxXoff, 64)
		if err != nil || f <= 0 || f > 1 {
			return o, fmt.Errorf("--rx-pfc-xoff %q: want a fraction 0 < f <= 1 of --rx-buffer, or off", *rxXoff)
		}
		c.InputXoff = f
	}
	if *rxXon < 0 || *rxXon >= 1 {
		return o, fmt.Errorf("--rx-pfc-xon %v: want a fraction 0 <= f < --rx-pfc-xoff", *rxXon)
	}
	c.InputXon = *rxXon
	if *rxBatch < 0 || *rxBatch > 1024 {
		return o, fmt.Errorf("--rx-batch %d: want 1 .. 1024", *rxBatch)
	}
	c.PortOptions.Batch = *rxBatch
	c.NoLosslessDefer = !*rxDefer
	if err := softswitch.Validate(*c); err != nil {
		return o, err
	}
	return o, nil
}
