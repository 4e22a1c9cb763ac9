package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/controller/daemon"
	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/internal/netns"
)

// controllerHandle is a running controller: the fastcnpd binary in the
// fabric namespace, or (without a binary) the daemon package in this
// process dialling into the fabric namespace.
type controllerHandle struct {
	proc *proc          // binary
	api  string         // its API address (in the fabric namespace)
	d    *daemon.Daemon // in-process

	cancel context.CancelFunc // in-process
	done   chan struct{}
	mu     sync.Mutex
	err    error
}

// startController starts fastcnpd with the configuration at cfgPath; with
// no fastcnpd binary it runs controller/daemon in-process instead.
func startController(ctx context.Context, o Options, fab *netns.NS, cfg *config.Config, cfgPath string, log logrus.FieldLogger) (*controllerHandle, error) {
	if o.Binaries.Controller != "" {
		p, err := startProc(fab, "fastcnpd", filepath.Join(o.WorkDir, "fastcnpd.log"),
			[]string{o.Binaries.Controller, "-config", cfgPath}, o.Nice, log)
		if err != nil {
			return nil, err
		}
		return &controllerHandle{proc: p, api: cfg.API.Listen}, nil
	}
	lf, err := os.Create(filepath.Join(o.WorkDir, "fastcnpd.log"))
	if err != nil {
		return nil, fmt.Errorf("testbed: controller log: %w", err)
	}
	dl := logrus.New()
	dl.SetLevel(logrus.InfoLevel)
	dl.SetOutput(lf)
	d, err := daemon.New(daemon.Options{Config: cfg, Logger: dl.WithField("component", "fastcnpd (in-process)"),
		AuditInterval: -1, ClientOptions: []p4rt.Option{p4rt.WithDialOptions(grpc.WithContextDialer(nsDialer(fab)))}})
	if err != nil {
		lf.Close()
		return nil, fmt.Errorf("testbed: in-process controller: %w", err)
	}
	log.Warn("no fastcnpd binary: running the controller in-process (controller/daemon)")
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h := &controllerHandle{cancel: cancel, done: make(chan struct{}), d: d}
	go func() {
		defer close(h.done)
		defer lf.Close()
		err := d.Run(rctx)
		if err != nil && !errors.Is(err, context.Canceled) {
			h.mu.Lock()
			h.err = err
			h.mu.Unlock()
		}
	}()
	return h, nil
}

// process returns the fastcnpd process (nil for the in-process controller).
func (h *controllerHandle) process() *proc { return h.proc }

// failed returns an error once the controller has stopped on its own.
func (h *controllerHandle) failed() error {
	if h.proc != nil {
		if h.proc.exited() {
			return fmt.Errorf("fastcnpd exited: %v: %s", h.proc.err, h.proc.tail(2000))
		}
		return nil
	}
	select {
	case <-h.done:
		h.mu.Lock()
		defer h.mu.Unlock()
		return fmt.Errorf("in-process fastcnpd stopped: %v", h.err)
	default:
		return nil
	}
}

// stop ends the controller and waits for it.
func (h *controllerHandle) stop() error {
	if h.proc != nil {
		// fastcnpd writes its state file and closes every switch stream on
		// SIGTERM: on a loaded machine with six switches that takes seconds.
		return h.proc.stop(20 * time.Second)
	}
	h.cancel()
	select {
	case <-h.done:
	case <-time.After(10 * time.Second):
		return errors.New("testbed: in-process controller did not stop within 10s")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}
