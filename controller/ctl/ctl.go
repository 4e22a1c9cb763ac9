// Package ctl is fastcnpctl: the command-line client of the fastcnpd API
// (proto/fastcnp/v1). cmd/fastcnpctl only calls Run, so tests drive the very
// same code path over loopback gRPC.
//
// Exit codes (scripts can rely on them; docs/operations.md lists them too):
//
//	0  success
//	1  other error (internal, unexpected answer)
//	2  usage: any error of the command line, found before fastcnpd is
//	   asked: unknown command, verb, flag or event kind, unexpected
//	   argument, missing required flag, malformed value ("12QB",
//	   "--for -1s", "--addr host")
//	3  fastcnpd unreachable (connection refused, timeout)
//	4  not found: unknown switch, port or connection
//	5  value rejected by fastcnpd (out of range, inconsistent)
//	6  authentication or permission denied (token refused, read-only
//	   token or certificate used for a change, TLS handshake failed)
//	7  configuration invalid (config validate)
//	8  accepted but not installed (switch down, or this fastcnpd is a standby)
package ctl

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"gopkg.in/yaml.v3"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/controller/daemon"
	"github.com/fastcnp/fastcnp/internal/tlsfiles"
	"github.com/fastcnp/fastcnp/internal/units"
	fastcnpv1 "github.com/fastcnp/fastcnp/proto/fastcnp/v1"
)

// Exit codes.
const (
	ExitOK           = 0
	ExitError        = 1
	ExitUsage        = 2
	ExitUnreachable  = 3
	ExitNotFound     = 4
	ExitInvalid      = 5
	ExitAuth         = 6
	ExitConfig       = 7
	ExitNotInstalled = 8
)

// DefaultAddr is fastcnpd's default API address.
const DefaultAddr = "127.0.0.1:9560"

// exitError carries an exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, a ...any) error {
	return &exitError{ExitUsage, fmt.Errorf(format, a...)}
}

// globals are the flags every command accepts.
type globals struct {
	addr, token, tokenFile string
	ca, cert, key, srvName string
	output                 string
	timeout                time.Duration
	stdout, stderr         io.Writer
	tlsConf                *tls.Config // set by client() when TLS is used
}

func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.addr, "addr", g.addr, "fastcnpd API address host:port (env FASTCNP_ADDR)")
	fs.StringVar(&g.token, "token", g.token, "bearer token (env FASTCNP_TOKEN)")
	fs.StringVar(&g.tokenFile, "token-file", g.tokenFile, "file holding the bearer token")
	fs.StringVar(&g.ca, "ca", g.ca, "CA bundle to verify fastcnpd (enables TLS)")
	fs.StringVar(&g.cert, "cert", g.cert, "client certificate (mTLS)")
	fs.StringVar(&g.key, "key", g.key, "client key (mTLS)")
	fs.StringVar(&g.srvName, "server-name", g.srvName, "name expected in fastcnpd's certificate")
	fs.StringVar(&g.output, "o", g.output, "output format: table, json or yaml")
	fs.StringVar(&g.output, "output", g.output, "output format: table, json or yaml")
	fs.DurationVar(&g.timeout, "timeout", g.timeout, "timeout of each request")
}

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, g *globals, args []string) error
}

func commands() []command {
	return []command{
		{"switches", "list switches and their connection state", cmdSwitches},
		{"threshold", "threshold get|set --switch S --port P [--qth SIZE]: a port's queue threshold Qth", cmdThreshold},
		{"port", "port get|set --switch S --port P [--qth --mode --tcheck --cnp-gap --red-kmin --red-kmax --red-pmax]", cmdPort},
		{"ports", "ports [--switch S]: port states and counters", cmdPorts},
		{"queues", "queues [--switch S] [--port P]: per-queue (port, priority) counters", cmdQueues},
		{"connections", "connections [list|add|remove]: RDMA connections", cmdConnections},
		{"inc", "inc routes --switch S | inc tree: a switch's INC route table, the INC aggregation tree", cmdINC},
		{"link", "link down|up --switch S [--port P]: mark a link between switches (or a switch) down or up for the INC tree", cmdLink},
		{"events", "events [--follow] [--kind K]...: the event stream", cmdEvents},
		{"config", "config validate FILE [--remote]: check a configuration", cmdConfig},
		{"completion", "completion bash|zsh|fish: print a shell completion script", cmdCompletion},
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: fastcnpctl [flags] COMMAND [flags] [args]\n\ncommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nflags (accepted before or after the command):\n")
	fs := flag.NewFlagSet("fastcnpctl", flag.ContinueOnError)
	(&globals{}).register(fs)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprintf(w, "\nexit codes: 0 ok, 1 error, 2 usage, 3 fastcnpd unreachable, 4 not found, 5 value rejected,\n"+
		"6 auth/permission, 7 config invalid, 8 saved but not installed\n")
}

// Run runs fastcnpctl with args (without the program name) and returns the
// exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	g := &globals{addr: envOr("FASTCNP_ADDR", DefaultAddr), token: os.Getenv("FASTCNP_TOKEN"), output: "table",
		timeout: 10 * time.Second, stdout: stdout, stderr: stderr}
	fs := flag.NewFlagSet("fastcnpctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout)
			return ExitOK
		}
		fmt.Fprintf(stderr, "fastcnpctl: %v\n", err)
		usage(stderr)
		return ExitUsage
	}
	rest := fs.Args()
	if len(rest) == 0 {
		usage(stderr)
		return ExitUsage
	}
	if rest[0] == "help" {
		usage(stdout)
		return ExitOK
	}
	for _, c := range commands() {
		if c.name == rest[0] {
			err := c.run(ctx, g, rest[1:])
			return report(stderr, g, err)
		}
	}
	fmt.Fprintf(stderr, "fastcnpctl: unknown command %q\n", rest[0])
	usage(stderr)
	return ExitUsage
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// report prints err and maps it to an exit code.
func report(w io.Writer, g *globals, err error) int {
	if err == nil {
		return ExitOK
	}
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		fmt.Fprintf(w, "fastcnpctl: %v\n", ee.err)
		return ee.code
	}
	st, ok := status.FromError(err)
	if !ok {
		fmt.Fprintf(w, "fastcnpctl: %v\n", err)
		return ExitError
	}
	msg := st.Message()
	switch st.Code() {
	case codes.Unavailable:
		if tlsFailure(msg) {
			fmt.Fprintf(w, "fastcnpctl: TLS handshake with fastcnpd at %s failed (check --ca, --cert, --key, --server-name): %s\n", g.addr, msg)
			return ExitAuth
		}
		if g.tlsConf != nil {
			if perr := probeTLS(g.addr, g.tlsConf); perr != nil {
				fmt.Fprintf(w, "fastcnpctl: TLS handshake with fastcnpd at %s failed: it refused the connection (check --cert and --key: fastcnpd's CA must have signed them): %v\n", g.addr, perr)
				return ExitAuth
			}
		} else if servesTLS(g.addr) {
			fmt.Fprintf(w, "fastcnpctl: fastcnpd at %s serves TLS and fastcnpctl spoke plaintext: give --ca (the CA that signed fastcnpd's certificate) with --token, or --cert and --key for mTLS\n", g.addr)
			return ExitAuth
		}
		fmt.Fprintf(w, "fastcnpctl: fastcnpd unreachable at %s: %s\n", g.addr, msg)
		return ExitUnreachable
	case codes.DeadlineExceeded:
		fmt.Fprintf(w, "fastcnpctl: fastcnpd unreachable at %s: %s\n", g.addr, msg)
		return ExitUnreachable
	case codes.NotFound:
		fmt.Fprintf(w, "fastcnpctl: not found: %s\n", msg)
		return ExitNotFound
	case codes.InvalidArgument, codes.OutOfRange, codes.ResourceExhausted:
		fmt.Fprintf(w, "fastcnpctl: rejected: %s\n", msg)
		return ExitInvalid
	case codes.Unauthenticated, codes.PermissionDenied:
		fmt.Fprintf(w, "fastcnpctl: %s (%s)\n", msg, st.Code())
		return ExitAuth
	case codes.FailedPrecondition, codes.Aborted:
		fmt.Fprintf(w, "fastcnpctl: not installed: %s\n", msg)
		return ExitNotInstalled
	}
	fmt.Fprintf(w, "fastcnpctl: %s: %s\n", st.Code(), msg)
	return ExitError
}

// tlsFailure reports whether an UNAVAILABLE error is a failed TLS
// handshake (certificate refused or not trusted, on either side) rather
// than fastcnpd being down: gRPC reports both as UNAVAILABLE and only the
// message tells them apart.
func tlsFailure(msg string) bool {
	for _, s := range []string{"tls:", "x509:", "authentication handshake failed"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// probeTLS tells a refused TLS connection from fastcnpd being down, after
// an UNAVAILABLE error whose message did not say: with TLS 1.3 the server
// judges the client certificate after the client's side of the handshake
// is done, so the RPC may fail on a broken pipe instead of the server's
// alert. probeTLS connects again, does the handshake and waits briefly for
// that verdict. It returns nil when the server is unreachable or accepted
// the connection, and the refusal otherwise.
func probeTLS(addr string, tc *tls.Config) error {
	raw, err := net.DialTimeout("tcp", addr, probeTimeout)
	if err != nil {
		return nil // unreachable: not a TLS problem
	}
	defer raw.Close()
	cfg := tc.Clone()
	cfg.NextProtos = []string{"h2"} // as gRPC does; the server requires it
	c := tls.Client(raw, cfg)
	if err := c.SetDeadline(time.Now().Add(probeTimeout)); err != nil {
		return nil
	}
	if err := c.Handshake(); err != nil {
		return err
	}
	if err := c.SetReadDeadline(time.Now().Add(probeVerdict)); err != nil {
		return nil
	}
	var b [1]byte
	_, err = c.Read(b[:])
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() {
		return nil // the server sent HTTP/2 data, or waits for ours: accepted
	}
	return err
}

// servesTLS reports whether the server at addr completes a TLS handshake:
// after a plaintext RPC failed, it tells "fastcnpd wants TLS" from
// "fastcnpd is down". The handshake does not verify the server (nothing is
// sent over it): it only detects TLS.
func servesTLS(addr string) bool {
	d := &net.Dialer{Timeout: probeTimeout}
	c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{
		InsecureSkipVerify: true, //nolint:gosec // detection only; no data is sent
		NextProtos:         []string{"h2"}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// probeTimeout bounds probeTLS's connection and handshake, probeVerdict its
// wait for the server's verdict on the client certificate.
const (
	probeTimeout = 5 * time.Second
	probeVerdict = 2 * time.Second
)

// client dials fastcnpd (lazily: the first RPC connects).
func (g *globals) client() (fastcnpv1.FastcnpClient, func(), error) {
	creds := insecure.NewCredentials()
	if g.ca != "" || g.cert != "" {
		if (g.cert == "") != (g.key == "") {
			return nil, nil, usageErr("--cert/--key: give both or neither")
		}
		tc, err := tlsfiles.Client(g.ca, g.cert, g.key, g.srvName)
		if err != nil {
			return nil, nil, usageErr("--ca/--cert/--key: %v", err)
		}
		creds = credentials.NewTLS(tc)
		g.tlsConf = tc
	}
	conn, err := grpc.NewClient(g.addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, nil, usageErr("--addr %q: %v", g.addr, err)
	}
	return fastcnpv1.NewFastcnpClient(conn), func() { _ = conn.Close() }, nil
}

// rpcCtx adds the timeout (none when follow) and the bearer token.
func (g *globals) rpcCtx(ctx context.Context, follow bool) (context.Context, context.CancelFunc, error) {
	tok := g.token
	if g.tokenFile != "" {
		b, err := config.ReadFileLimited(g.tokenFile, "token file", config.MaxTokenFileSize)
		if err != nil {
			return nil, nil, usageErr("--token-file: %v", err)
		}
		if tok, err = tokenFromFile(string(b)); err != nil {
			return nil, nil, usageErr("--token-file %s: %v", g.tokenFile, err)
		}
	}
	if tok != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
	}
	if follow {
		c, cancel := context.WithCancel(ctx)
		return c, cancel, nil
	}
	c, cancel := context.WithTimeout(ctx, g.timeout)
	return c, cancel, nil
}

// tokenFromFile returns the token of a --token-file: its first line that
// is not blank or a comment, "TOKEN" or a line of fastcnpd's token file
// ("admin TOKEN", "read TOKEN"), either optionally followed by a # comment.
func tokenFromFile(data string) (string, error) {
	for i, line := range strings.Split(data, "\n") {
		f := strings.Fields(line)
		for j, w := range f {
			if strings.HasPrefix(w, "#") {
				f = f[:j]
				break
			}
		}
		switch {
		case len(f) == 0:
			continue
		case len(f) == 1 && f[0] != "admin" && f[0] != "read":
			return f[0], nil
		case len(f) == 2 && (f[0] == "admin" || f[0] == "read"):
			return f[1], nil
		}
		return "", fmt.Errorf("line %d: want TOKEN or \"admin|read TOKEN\" (optionally followed by a # comment)", i+1)
	}
	return "", errors.New("no token in the file")
}

// call runs fn with a connected client and a request context.
func call(ctx context.Context, g *globals, follow bool, fn func(context.Context, fastcnpv1.FastcnpClient) error) error {
	if err := g.check(); err != nil {
		return err
	}
	c, closeFn, err := g.client()
	if err != nil {
		return err
	}
	defer closeFn()
	rctx, cancel, err := g.rpcCtx(ctx, follow)
	if err != nil {
		return err
	}
	defer cancel()
	return fn(rctx, c)
}

// check validates the global flags that every RPC uses, so that a bad
// value is a usage error (exit 2) rather than a failed call.
func (g *globals) check() error {
	if err := checkOutput(g.output); err != nil {
		return err
	}
	if g.timeout <= 0 {
		return usageErr("--timeout %v: must be positive", g.timeout)
	}
	return checkAddr(g.addr)
}

// checkAddr accepts host:port (the host may be empty or a name) and gRPC
// target URIs (dns:///host:port, unix:///path, ...).
func checkAddr(addr string) error {
	if strings.Contains(addr, ":/") || strings.HasPrefix(addr, "unix:") {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErr("--addr %q: want host:port: %v", addr, err)
	}
	if port == "" {
		return usageErr("--addr %q: want host:port, the port is missing", addr)
	}
	return nil
}

// noArgs refuses positional arguments of a command that takes none.
func noArgs(cmd string, pos []string) error {
	if len(pos) > 0 {
		return usageErr("%s: unexpected argument %q", cmd, pos[0])
	}
	return nil
}

// ipv4Arg parses the IPv4 address of a flag.
func ipv4Arg(name, v string) (netip.Addr, error) {
	a, err := netip.ParseAddr(v)
	if err != nil || !a.Is4() {
		return netip.Addr{}, usageErr("--%s %q: want an IPv4 address", name, v)
	}
	return a, nil
}

func checkOutput(o string) error {
	switch o {
	case "table", "json", "yaml":
		return nil
	}
	return usageErr("-o %q: want table, json or yaml", o)
}

// newFlags makes a subcommand flag set that also takes the global flags.
func newFlags(g *globals, name string) *flag.FlagSet {
	fs := flag.NewFlagSet("fastcnpctl "+name, flag.ContinueOnError)
	fs.SetOutput(g.stderr)
	g.register(fs)
	return fs
}

// parse parses flags and positional arguments in any order.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &exitError{ExitUsage, err}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// emit prints m as JSON or YAML, or calls table.
func emit(g *globals, m proto.Message, table func(w *tabwriter.Writer)) error {
	switch g.output {
	case "json", "yaml":
		b, err := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true, Indent: "  "}.Marshal(m)
		if err != nil {
			return fmt.Errorf("encoding output: %w", err)
		}
		if g.output == "json" {
			_, err = fmt.Fprintln(g.stdout, string(b))
			return err
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return fmt.Errorf("encoding output: %w", err)
		}
		y, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("encoding output: %w", err)
		}
		_, err = g.stdout.Write(y)
		return err
	}
	tw := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}

func sizeArg(name, v string) (uint64, error) {
	s, err := units.ParseSize(v)
	if err != nil {
		return 0, usageErr("--%s: %v", name, err)
	}
	return uint64(s), nil
}

func durArg(name, v string) (uint64, error) {
	d, err := units.ParseDuration(v)
	if err != nil {
		return 0, usageErr("--%s: %v", name, err)
	}
	return uint64(d), nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func cmdSwitches(ctx context.Context, g *globals, args []string) error {
	fs := newFlags(g, "switches")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs("switches", pos); err != nil {
		return err
	}
	return call(ctx, g, false, func(ctx context.Context, c fastcnpv1.FastcnpClient) error {
		r, err := c.ListSwitches(ctx, &fastcnpv1.ListSwitchesRequest{})
		if err != nil {
			return err
		}
		return emit(g, r, func(w *tabwriter.Writer) {
			fmt.Fprintln(w, "SWITCH\tADDRESS\tDEVICE\tCONNECTED\tPRIMARY\tENTRIES\tLAST ERROR")
			for _, s := range r.GetSwitches() {
				fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%d\t%s\n", s.GetName(), s.GetAddress(), s.GetDeviceId(),
					yesNo(s.GetConnected()), yesNo(s.GetPrimary()), s.GetEntries(), s.GetLastError())
			}
			for _, s := range r.GetSwitches() {
				for _, warn := range s.GetWarnings() {
					fmt.Fprintf(w, "warning: %s: %s\n", s.GetName(), warn)
				}
			}
		})
	})
}

// portFlags are the flags of threshold/port set.
type portFlags struct {
	sw                                    string
	port                                  uint
	qth, mode, tcheck, cnpGap, kmin, kmax string
	pmax                                  float64
}

func (p *portFlags) register(fs *flag.FlagSet, all bool) {
	fs.StringVar(&p.sw, "switch", "", "switch name (required)")
	fs.UintVar(&p.port, "port", 0, "port number (required)")
	fs.StringVar(&p.qth, "qth", "", "queue threshold, e.g. 120KiB")
	if all {
		fs.StringVar(&p.mode, "mode", "", "ecn, fastcnp or int")
		fs.StringVar(&p.tcheck, "tcheck", "", "re-check interval, e.g. 8us")
		fs.StringVar(&p.cnpGap, "cnp-gap", "", "least time between CNPs to one flow, e.g. 4us")
		fs.StringVar(&p.kmin, "red-kmin", "", "RED Kmin, e.g. 5KB")
		fs.StringVar(&p.kmax, "red-kmax", "", "RED Kmax, e.g. 200KB")
		fs.Float64Var(&p.pmax, "red-pmax", 0, "RED Pmax in (0, 1]")
	}
}

func (p *portFlags) check() error {
	if p.sw == "" {
		return usageErr("--switch is required")
	}
	if p.port == 0 {
		return usageErr("--port is required")
	}
	if p.port > 511 {
		return usageErr("--port %d out of range 1..511", p.port)
	}
	return nil
}

func (p *portFlags) request(fs *flag.FlagSet) (*fastcnpv1.SetPortSettingsRequest, error) {
	req := &fastcnpv1.SetPortSettingsRequest{Switch: p.sw, Port: uint32(p.port)}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	size := func(name, v string) *uint64 {
		if !set[name] || err != nil {
			return nil
		}
		var x uint64
		x, err = sizeArg(name, v)
		return &x
	}
	dur := func(name, v string) *uint64 {
		if !set[name] || err != nil {
			return nil
		}
		var x uint64
		x, err = durArg(name, v)
		return &x
	}
	req.QthBytes = size("qth", p.qth)
	req.RedKminBytes = size("red-kmin", p.kmin)
	req.RedKmaxBytes = size("red-kmax", p.kmax)
	req.TcheckNs = dur("tcheck", p.tcheck)
	req.CnpGapNs = dur("cnp-gap", p.cnpGap)
	if set["mode"] {
		if !config.Mode(p.mode).Valid() {
			return nil, usageErr("--mode %q: want ecn, fastcnp or int", p.mode)
		}
		req.Mode = &p.mode
	}
	if set["red-pmax"] {
		req.RedPmax = &p.pmax
	}
	if err != nil {
		return nil, err
	}
	if req.QthBytes == nil && req.RedKminBytes == nil && req.RedKmaxBytes == nil && req.TcheckNs == nil &&
		req.CnpGapNs == nil && req.Mode == nil && req.RedPmax == nil {
		return nil, usageErr("nothing to set")
	}
	return req, nil
}

func cmdThreshold(ctx context.Context, g *globals, args []string) error {
	return portCmd(ctx, g, args, false)
}
func cmdPort(ctx context.Context, g *globals, args []string) error {
	return portCmd(ctx, g, args, true)
}

func portCmd(ctx context.Context, g *globals, args []string, all bool) error {
	name := "threshold"
	if all {
		name = "port"
	}
	if len(args) == 0 || (args[0] != "get" && args[0] != "set") {
		return usageErr("%s: want get or set", name)
	}
	verb := args[0]
	fs := newFlags(g, name+" "+verb)
	var pf portFlags
	pf.register(fs, all && verb == "set")
	pos, err := parse(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("%s %s: unexpected argument %q", name, verb, pos[0])
	}
	if err := pf.check(); err != nil {
		return err
	}
	var req *fastcnpv1.SetPortSettingsRequest
	if verb == "set" {
		if req, err = pf.request(fs); err != nil {
			return err
		}
	}
	return call(ctx, g, false, func(ctx context.Context, c fastcnpv1.FastcnpClient) error {
		var ps *fastcnpv1.PortSettings
		var err error
		if verb == "set" {
			ps, err = c.SetPortSettings(ctx, req)
		} else {
			ps, err = c.GetPortSettings(ctx, &fastcnpv1.GetPortSettingsRequest{Switch: pf.sw, Port: uint32(pf.port)})
		}
		if err != nil {
			return err
		}
		err = emit(g, ps, func(w *tabwriter.Writer) { portTable(w, ps, all) })
		if err == nil && verb == "set" && !ps.GetInstalled() {
			return &exitError{ExitNotInstalled, fmt.Errorf("saved but not installed: %s", ps.GetInstallError())}
		}
		return err
	})
}

func portTable(w *tabwriter.Writer, ps *fastcnpv1.PortSettings, all bool) {
	if !all {
		fmt.Fprintln(w, "SWITCH\tPORT\tQTH\tRATE\tMODE")
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\n", ps.GetSwitch(), ps.GetPort(), units.FormatSize(units.Size(ps.GetQthBytes())),
			units.FormatRate(units.Rate(ps.GetLinkRateBps())), ps.GetMode())
		return
	}
	p := ps.GetParams()
	rows := [][2]string{
		{"switch", ps.GetSwitch()}, {"port", fmt.Sprint(ps.GetPort())},
		{"link_rate", units.FormatRate(units.Rate(ps.GetLinkRateBps()))},
		{"qth", units.FormatSize(units.Size(ps.GetQthBytes()))},
		{"tcheck", units.FormatDuration(time.Duration(ps.GetTcheckNs()))},
		{"rtt_base", units.FormatDuration(time.Duration(ps.GetRttBaseNs()))},
		{"cnp_gap", units.FormatDuration(time.Duration(ps.GetCnpGapNs()))},
		{"mode", ps.GetMode()},
		{"red", fmt.Sprintf("kmin %s, kmax %s, pmax %g", units.FormatSize(units.Size(ps.GetRedKminBytes())),
			units.FormatSize(units.Size(ps.GetRedKmaxBytes())), ps.GetRedPmax())},
		{"mtu", units.FormatSize(units.Size(ps.GetMtuBytes()))},
		{"bdp", fmt.Sprintf("%s (log2_q6 %d)", units.FormatSize(units.Size(p.GetBdpBytes())), p.GetBdpLog2Q6())},
		{"rate_bytes_per_ms", fmt.Sprint(p.GetRateBytesPerMs())},
		{"pause_quantum", fmt.Sprintf("%d ps", p.GetPauseQuantumPs())},
		{"red_pmax_q16", fmt.Sprint(p.GetRedPmaxQ16())},
	}
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\n", r[0], r[1])
	}
}

func cmdPorts(ctx context.Context, g *globals, args []string) error {
	fs := newFlags(g, "ports")
	sw := fs.String("switch", "", "only this switch")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs("ports", pos); err != nil {
		return err
	}
	return call(ctx, g, false, func(ctx context.Context, c fastcnpv1.FastcnpClient) error {
		r, err := c.ListPorts(ctx, &fastcnpv1.ListPortsRequest{Switch: *sw})
		if err != nil {
			return err
		}
		return emit(g, r, func(w *tabwriter.Writer) {
			fmt.Fprintln(w, "SWITCH\tPORT\tRATE\tMODE\tQTH\tSTATE\tLAST EVENT\tQUEUE\tCNPS\tECN MARKS\tPAUSES RX\tDROPPED")
			for _, p := range r.GetPorts() {
				cnt := func(n string) string {
					if v, ok := p.GetCounters()[n]; ok {
						return fmt.Sprint(v.GetPackets())
					}
					return "-"
				}
				fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.GetSwitch(), p.GetPort(),
					units.FormatRate(units.Rate(p.GetLinkRateBps())), p.GetMode(),
					units.FormatSize(units.Size(p.GetQthBytes())), p.GetState(), orDash(p.GetLastEvent()),
					units.FormatSize(units.Size(p.GetQueueBytes())), cnt("switch_cnp_sent"), cnt("ecn_marked"),
					cnt("pfc_pause_rx"), cnt("dropped"))
			}
		})
	})
}

func cmdQueues(ctx context.Context, g *globals, args []string) error {
	fs := newFlags(g, "queues")
	sw := fs.String("switch", "", "only this switch")
	port := fs.Uint("port", 0, "only this port")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("queues: unexpected argument %q", pos[0])
	}
	if *port > 511 {
		return usageErr("--port %d out of range 1..511", *port)
	}
	return call(ctx, g, false, func(ctx context.Context, c fastcnpv1.FastcnpClient) error {
		r, err := c.ListQueues(ctx, &fastcnpv1.ListQueuesRequest{Switch: *sw, Port: uint32(*port)})
		if err != nil {
			return err
		}
		return emit(g, r, func(w *tabwriter.Writer) {
			fmt.Fprintln(w, "SWITCH\tPORT\tPRIO\tCLASS\tENQUEUED\tDEQUEUED\tDROPPED\tPFC XOFF SENT\tPFC XON SENT")
			for _, q := range r.GetQueues() {
				// Packets with their bytes for the queue counters; frames
				// for PFC (each 60 bytes).
				cnt := func(n string, withBytes bool) string {
					v, ok := q.GetCounters()[n]
					switch {
					case !ok:
						return "-"
					case withBytes:
						return fmt.Sprintf("%d (%s)", v.GetPackets(), units.FormatSize(units.Size(v.GetBytes())))
					}
					return fmt.Sprint(v.GetPackets())
				}
				class := "lossy"
				if q.GetLossless() {
					class = "lossless"
				}
				fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", q.GetSwitch(), q.GetPort(), q.GetPriority(), class,
					cnt("queue_enqueued", true), cnt("queue_dequeued", true), cnt("queue_dropped", true),
					cnt("pfc_xoff_sent", false), cnt("pfc_xon_sent", false))
			}
		})
	})
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func cmdConnections(ctx context.Context, g *globals, args []string) error {
	verb := "list"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		verb, args = args[0], args[1:]
	}
	fs := newFlags(g, "connections "+verb)
	var sender, receiver string
	var sport, dqp, sqp, flags, rank, group uint
	if verb == "add" || verb == "remove" {
		fs.StringVar(&sender, "sender-ip", "", "sender IPv4 address (required)")
		fs.UintVar(&sport, "udp-sport", 0, "UDP source port of the connection")
		fs.UintVar(&dqp, "dest-qp", 0, "receiver QPN (the data packets' DestQP)")
	}
	if verb == "add" {
		fs.StringVar(&receiver, "receiver-ip", "", "receiver IPv4 address")
		fs.UintVar(&sqp, "sender-qpn", 0, "sender QPN (switch CNPs go to it)")
		fs.UintVar(&flags, "flags", 2, "bit0 INC uplink, bit1 CNP target")
		fs.UintVar(&rank, "worker-rank", 0, "INC worker rank 0..31")
		fs.UintVar(&group, "inc-group", 0, "INC group, 0 = none")
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("connections %s: unexpected argument %q", verb, pos[0])
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	switch verb {
	case "list":
		return call(ctx, g, false, func(ctx context.Context, c fastcnpv1.FastcnpClient) error {
			r, err := c.ListConnections(ctx, &fastcnpv1.ListConnectionsRequest{})
			if err != nil {
				return err
			}
			return emit(g, r, func(w *tabwriter.Writer) {
				fmt.Fprintln(w, "INDEX\tSENDER\tUDP SPORT\tDEST QP\tRECEIVER\tSENDER QPN\tFLAGS\tINC GROUP\tRANK\tSOURCE\tLAST SEEN")
				for _, x := range r.GetConnections() {
					seen := "-"
					if x.GetLastSeenUnixNano() != 0 {
						seen = time.Unix(0, x.GetLastSeenUnixNano()).UTC().Format(time.RFC3339)
					}
					fmt.Fprintf(w, "%d\t%s\t%d\t%#x\t%s\t%#x\t%s\t%d\t%d\t%s\t%s\n", x.GetConnIndex(), x.GetSenderIp(),
						x.GetUdpSrcPort(), x.GetReceiverQpn(), orDash(x.GetReceiverIp()), x.GetSenderQpn(),
						flagNames(x.GetFlags()), x.GetIncGroup(), x.GetWorkerRank(), x.GetSource(), seen)
				}
			})
		})
	case "add", "remove":
		// The connection's key: all three, or the call would name another
		// connection (port 0, QP 0) than the one meant.
		for _, f := range []string{"sender-ip", "udp-sport", "dest-qp"} {
			if !given[f] {
				return usageErr("connections %s: --%s is required (the key is --sender-ip, --udp-sport and --dest-qp)", verb, f)
			}
		}
		if _, err := ipv4Arg("sender-ip", sender); err != nil {
			return err
		}
		if given["receiver-ip"] {
			if _, err := ipv4Arg("receiver-ip", receiver); err != nil {
				return err
			}
		}
		if sport > 0xffff || dqp >= 1<<24 || sqp >= 1<<24 || flags > 0xff || rank > 0xff || group > 0xffff {
			return usageErr("value out of range (udp-sport 0..65535, QPNs 24 bits, flags 0..255, inc-group 0..65535)")
		}
		return call(ctx, g, false, func(ctx context.Context, c fastcnpv1.FastcnpClient) error {
			if verb == "remove" {
				_, err := c.RemoveConnection(ctx, &fastcnpv1.RemoveConnectionRequest{SenderIp: sender,
					UdpSrcPort: uint32(sport), ReceiverQpn: uint32(dqp)})
				return err
			}
			x, err := c.AddConnection(ctx, &fastcnpv1.AddConnectionRequest{Connection: &fastcnpv1.Connection{
				SenderIp: sender, UdpSrcPort: uint32(sport), ReceiverQpn: uint32(dqp), ReceiverIp: receiver,
				SenderQpn: uint32(sqp), Flags: uint32(flags), WorkerRank: uint32(rank), IncGroup: uint32(group)}})
			if err != nil {
				return err
			}
			return emit(g, x, func(w *tabwriter.Writer) {
				fmt.Fprintf(w, "connection %s:%d/%#x installed as conn_index %d\n", x.GetSenderIp(), x.GetUdpSrcPort(),
					x.GetReceiverQpn(), x.GetConnIndex())
			})
		})
	}
	return usageErr("connections: unknown subcommand %q (list, add, remove)", verb)
}

func flagNames(f uint32) string {
	var s []string
	if f&1 != 0 {
		s = append(s, "inc")
	}
	if f&2 != 0 {
		s = append(s, "cnp")
	}
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ",")
}

func cmdINC(ctx context.Context, g *globals, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "tree":
			return incTree(ctx, g, args[1:])
		}
	}
	if len(args) == 0 || args[0] != "routes" {
		return usageErr("inc: want \"inc routes --switch S\" or \"inc tree\"")
	}
	fs := newFlags(g, "inc routes")
	sw := fs.String("switch", "", "switch name (required)")
	full := fs.Bool("buckets", false, "list every bucket")
	pos, err := parse(fs, args[1:])
	if err != nil {
		return err
	}
	if err := noArgs("inc routes", pos); err != nil {
		return err
	}
	if *sw == "" {
		return usageErr("--switch is required")
	}
	return call(ctx, g, false, func(ctx context.Context, c fastcnpv1.FastcnpClient) error {
		r, err := c.GetINCRoutes(ctx, &fastcnpv1.GetINCRoutesRequest{Switch: *sw})
		if err != nil {
			return err
		}
		return emit(g, r, func(w *tabwriter.Writer) {
			if len(r.GetBuckets()) == 0 {
				fmt.Fprintf(w, "switch %s has no INC routes\n", *sw)
				return
			}
			n := len(r.GetBuckets())
			fmt.Fprintln(w, "PORT\tMAC\tWEIGHT\tBUCKETS\tSHARE")
			hops := r.GetNextHops()
			sort.Slice(hops, func(i, j int) bool { return hops[i].GetPort() < hops[j].GetPort() })
			for _, h := range hops {
				fmt.Fprintf(w, "%d\t%s\t%d\t%d\t%.1f%%\n", h.GetPort(), h.GetMac(), h.GetWeight(), h.GetBuckets(),
					100*float64(h.GetBuckets())/float64(n))
			}
			if *full {
				fmt.Fprintln(w, "\nBUCKET\tPORT")
				for i, p := range r.GetBuckets() {
					fmt.Fprintf(w, "%d\t%d\n", i, p)
				}
			}
		})
	})
}

func cmdEvents(ctx context.Context, g *globals, args []string) error {
	fs := newFlags(g, "events")
	follow := fs.Bool("follow", false, "keep printing events until interrupted")
	wait := fs.Duration("for", 2*time.Second, "without --follow: how long to collect events")
	var kinds multi
	fs.Var(&kinds, "kind", "only events of this kind (repeatable): "+strings.Join(eventKinds, ", "))
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs("events", pos); err != nil {
		return err
	}
	for _, k := range kinds {
		if !slices.Contains(eventKinds, k) {
			return usageErr("--kind %q: unknown event kind (known: %s)", k, strings.Join(eventKinds, ", "))
		}
	}
	if !*follow && *wait <= 0 {
		return usageErr("--for %v: must be positive (or give --follow)", *wait)
	}
	return call(ctx, g, true, func(ctx context.Context, c fastcnpv1.FastcnpClient) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		st, err := c.WatchEvents(ctx, &fastcnpv1.WatchEventsRequest{Kinds: kinds})
		if err != nil {
			return err
		}
		if !*follow {
			// --for counts from the subscription: time spent connecting
			// does not shorten it, and its end is not a failed call.
			t := time.AfterFunc(*wait, cancel)
			defer t.Stop()
		}
		enc := json.NewEncoder(g.stdout)
		for {
			e, err := st.Recv()
			if err != nil {
				if errors.Is(err, io.EOF) || ctx.Err() != nil && status.Code(err) != codes.Unavailable {
					return nil
				}
				return err
			}
			switch g.output {
			case "json":
				b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(e)
				if err != nil {
					return fmt.Errorf("encoding event: %w", err)
				}
				if err := enc.Encode(json.RawMessage(b)); err != nil {
					return err
				}
			case "yaml":
				if err := emit(g, e, nil); err != nil {
					return err
				}
				fmt.Fprintln(g.stdout, "---")
			default:
				keys := make([]string, 0, len(e.GetFields()))
				for k := range e.GetFields() {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				var kv []string
				for _, k := range keys {
					kv = append(kv, k+"="+e.GetFields()[k])
				}
				where := e.GetSwitch()
				if e.GetPort() != 0 {
					where = fmt.Sprintf("%s/%d", where, e.GetPort())
				}
				fmt.Fprintf(g.stdout, "%s %-20s %-10s %s %s\n", time.Unix(0, e.GetTimeUnixNano()).UTC().Format(time.RFC3339Nano),
					e.GetKind(), orDash(where), e.GetMessage(), strings.Join(kv, " "))
			}
		}
	})
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func cmdConfig(ctx context.Context, g *globals, args []string) error {
	if len(args) == 0 || args[0] != "validate" {
		return usageErr("config: want \"config validate FILE\"")
	}
	fs := newFlags(g, "config validate")
	remote := fs.Bool("remote", false, "ask fastcnpd to validate instead of checking locally")
	pos, err := parse(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("config validate: want one FILE")
	}
	if err := checkOutput(g.output); err != nil {
		return err
	}
	if *remote {
		if err := g.check(); err != nil {
			return err
		}
	}
	data, err := config.ReadFileLimited(pos[0], "config file", config.MaxConfigSize)
	if config.IsTooLarge(err) {
		return &exitError{ExitConfig, fmt.Errorf("config validate: %w", err)}
	}
	if err != nil {
		return &exitError{ExitUsage, fmt.Errorf("config validate: %w", err)}
	}
	var res *fastcnpv1.ValidateConfigResponse
	if *remote {
		err = call(ctx, g, false, func(ctx context.Context, c fastcnpv1.FastcnpClient) error {
			var err error
			res, err = c.ValidateConfig(ctx, &fastcnpv1.ValidateConfigRequest{Config: data, Name: pos[0]})
			return err
		})
		if err != nil {
			return err
		}
	} else {
		res = daemon.ValidateConfig(pos[0], data)
	}
	err = emit(g, res, func(w *tabwriter.Writer) {
		for _, e := range res.GetErrors() {
			fmt.Fprintln(w, e)
		}
		for _, e := range res.GetWarnings() {
			fmt.Fprintln(w, "warning: "+e)
		}
		if res.GetValid() {
			fmt.Fprintf(w, "%s: valid\n", pos[0])
		}
	})
	if err != nil {
		return err
	}
	if !res.GetValid() {
		return &exitError{ExitConfig, fmt.Errorf("%s: %d problem(s)", pos[0], problems(res.GetErrors()))}
	}
	return nil
}

// eventKinds are the event kinds fastcnpd publishes (events --kind).
var eventKinds = []string{daemon.EventPortState, daemon.EventCNP, daemon.EventCounters, daemon.EventAnnounceAccepted,
	daemon.EventAnnounceRejected, daemon.EventConnectionAdded, daemon.EventConnectionRemoved,
	daemon.EventSwitchConnected, daemon.EventSwitchDisconnected, daemon.EventPrimary, daemon.EventBackup,
	daemon.EventRepaired, daemon.EventPortSettings, daemon.EventINCTree}

// problems counts the errors of a ValidateConfig answer: its lines, the
// last one possibly counting those not listed ("... and N more errors").
func problems(errs []string) int {
	if len(errs) == 0 {
		return 0
	}
	last := errs[len(errs)-1]
	if i := strings.LastIndex(last, ": ... and "); i >= 0 {
		var n int
		if _, err := fmt.Sscanf(last[i:], ": ... and %d more", &n); err == nil {
			return len(errs) - 1 + n
		}
	}
	return len(errs)
}
