// Command fastcnpd is the fastcnp controller: it keeps every switch of its
// configuration in its desired state over P4Runtime and serves the fastcnp
// API and Prometheus metrics (docs/controller.md, docs/operations.md).
//
//	fastcnpd --config /etc/fastcnp/fastcnpd.yaml [--log-level info] [--log-format text|json]
//	         [--audit-interval 30s] [--counter-interval 10s] [--election-offset 0] [--instance-name NAME]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/controller/daemon"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runMain(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the configuration is invalid, the state directory not writable, a listener failed, ...
	exitUsage = 2 // a bad flag or argument (as fastcnpctl and fastcnp-host)
)

// usageError is a bad flag or argument.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return &usageError{fmt.Errorf(format, a...)} }

// runMain runs fastcnpd like main: it prints the error to stderr and
// returns the exit code.
func runMain(ctx context.Context, args []string, stderr io.Writer) int {
	err := run(ctx, args, stderr)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	fmt.Fprintf(stderr, "fastcnpd: %v\n", err)
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitError
}

// run runs fastcnpd until ctx ends; logs go to logOut. Flag and argument
// errors are *usageError.
func run(ctx context.Context, args []string, logOut io.Writer) error {
	fs := flag.NewFlagSet("fastcnpd", flag.ContinueOnError)
	fs.SetOutput(logOut)
	cfgPath := fs.String("config", "/etc/fastcnp/fastcnpd.yaml", "configuration file (docs/config.md)")
	level := fs.String("log-level", "info", "log level: debug, info, warn, error")
	format := fs.String("log-format", "text", "log format: text or json")
	audit := fs.Duration("audit-interval", 30*time.Second, "read back and repair every switch this often (0 disables)")
	offset := fs.Uint64("election-offset", 0, "added to every election ID's low half (a standby runs with a lower one)")
	counters := fs.Duration("counter-interval", 10*time.Second,
		"poll the data-plane counters into metrics, logs and events this often (0 disables)")
	instance := fs.String("instance-name", "", "this instance's name in the etcd election (ha.etcd; default hostname:pid)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *audit < 0 || *counters < 0 {
		return usagef("--audit-interval and --counter-interval must not be negative (0 disables)")
	}
	log := logrus.New()
	log.SetOutput(logOut)
	lv, err := logrus.ParseLevel(*level)
	if err != nil {
		return usagef("--log-level: %w", err)
	}
	log.SetLevel(lv)
	switch *format {
	case "json":
		log.SetFormatter(&logrus.JSONFormatter{})
	case "text":
	default:
		return usagef("--log-format %q: want text or json", *format)
	}
	data, err := config.ReadFileLimited(*cfgPath, "config file", config.MaxConfigSize)
	if config.IsTooLarge(err) {
		return err // a config problem (exit 1), not a usage one
	}
	if err != nil {
		return usagef("--config: %w", err)
	}
	cfg, err := config.ParseFile(*cfgPath, data)
	if err != nil {
		return err
	}
	for _, w := range daemon.SecurityWarnings(cfg.API) {
		log.WithField("listen", cfg.API.Listen).Warn(w)
	}
	for _, w := range daemon.SwitchSecurityWarnings(cfg.Switches) {
		log.Warn(w)
	}
	for _, w := range daemon.AnnounceSecurityWarnings(cfg.Announce) {
		log.Warn(w)
	}
	auditInterval, counterInterval := *audit, *counters
	if auditInterval == 0 {
		auditInterval = -1
	}
	if counterInterval == 0 {
		counterInterval = -1
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	d, err := daemon.New(daemon.Options{Config: cfg, Logger: log, Registry: reg, AuditInterval: auditInterval,
		CounterInterval: counterInterval, ElectionOffset: *offset, Instance: *instance})
	if err != nil {
		return err
	}
	srv, err := daemon.NewGRPCServer(d, cfg.API.Auth)
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", cfg.API.Listen)
	if err != nil {
		return fmt.Errorf("api: %w", err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	var wg sync.WaitGroup
	errs := make(chan error, 3)
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := daemon.ServeAPI(ctx, srv, lis); err != nil {
			errs <- err
			cancel(err)
		}
	}()
	log.WithField("listen", lis.Addr().String()).Info("API listening")
	if cfg.Metrics.Listen != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		hs := &http.Server{Addr: cfg.Metrics.Listen, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		mlis, err := net.Listen("tcp", cfg.Metrics.Listen)
		if err != nil {
			cancel(err)
			wg.Wait()
			return fmt.Errorf("metrics: %w", err)
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := hs.Serve(mlis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errs <- fmt.Errorf("metrics: %w", err)
				cancel(err)
			}
		}()
		go func() {
			defer wg.Done()
			<-ctx.Done()
			sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
			defer c()
			_ = hs.Shutdown(sctx)
		}()
		log.WithField("listen", mlis.Addr().String()).Info("metrics listening on /metrics")
	}
	runErr := d.Run(ctx)
	cancel(nil)
	wg.Wait()
	close(errs)
	for err := range errs {
		runErr = errors.Join(runErr, err)
	}
	log.Info("fastcnpd stopped")
	return runErr
}
