package softswitch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/fastcnp/fastcnp/afpacket"
	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/model/tm"
	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/softswitch/p4rtserver"
	"github.com/fastcnp/fastcnp/wire"
)

// maxRxBatch bounds the frames an RX goroutine reads per system call (UIO_MAXIOV).
const maxRxBatch = 1024

// minBufLen is the least frame-buffer length (switch CNPs, PFC frames, packet-outs).
const minBufLen = 2048

// defaultMaxLinkFrame is the longest frame of a 1500-byte-MTU link with one VLAN tag
// (what Validate assumes).
const defaultMaxLinkFrame = 1500 + afpacket.EthHeaderLen + afpacket.VLANTagLen

// frame is one frame owned by the switch: a buffer, the frame in it, and the
// pipeline's metadata. It is the traffic manager's handle.
type frame struct {
	buf  []byte // full-length buffer
	data []byte // the frame, aliasing buf
	meta pipeline.PacketMeta
	out  *swPort // an urgent (PFC) frame's port
}

// swPort is one data-plane port.
type swPort struct {
	cfg   PortConfig
	link  Link
	mac   wire.MAC
	tmIdx int
	// delay holds departures and PFC frames for the link delay (guarded by Switch.mu).
	delay tm.DelayLine[*frame]
	// scheduler-goroutine scratch
	txFrames [][]byte
	txRecs   []*frame

	rxFrames, rxBytes   atomic.Uint64
	txPkts, txBytes     atomic.Uint64
	txErrors, txDropped atomic.Uint64
	// linkDowns counts the times a read found the port's link down.
	linkDowns atomic.Uint64

	// input is the receive queue's state (guarded by Switch.mu).
	input inputState
	// pending are lossless frames read from this port that wait for room in the TM
	// (guarded by Switch.mu); drained wakes the port's stalled RX goroutine.
	pending []*frame
	drained chan struct{}
}

// Switch is the software switch. Create it with New, run it with Run.
type Switch struct {
	cfg      Config
	log      logrus.FieldLogger
	start    time.Time
	ports    []*swPort
	byTM     []*swPort // TM port index -> port; nil for the internal CPU port
	p4ToTM   [p4src.NumPorts]int32
	cpuTM    int
	maxFrame int
	rxBatch  int // frames an RX goroutine reads per system call (PortOptions.Batch)
	pool     sync.Pool
	server   *p4rtserver.Server
	wake     chan struct{}
	pktIn    chan p4rtserver.PacketIn

	// mu serialises the pipeline, the TM, the delay lines and what follows.
	mu         sync.Mutex
	pl         *pipeline.Pipeline
	tm         *tm.TM[*frame]
	clk        int64 // the latest time given to the TM and pipeline
	inRes      pipeline.IngressResult
	egRes      pipeline.EgressResult
	pendingCNP []*frame
	urgent     []*frame // PFC frames to write at once, in the order they were made
	// urgentTx is held by the one goroutine writing urgent frames, so that
	// they reach the wire in the order they were made (an XOFF never after
	// the XON that ends it). Never taken while holding mu; its holder takes mu
	// briefly to collect the queued frames.
	urgentTx sync.Mutex
	pfcEvs   []tm.PFCEvent
	pf       wire.Frame
	blocked  []bool
	lossless uint8 // the TM's lossless priority mask
	ctr      Counters
	// gate decides input holds from the ports' receive queues (input.go).
	gate inputGate

	runOnce   sync.Once
	closeOnce sync.Once
	closeErr  error
}

// New opens the ports (in the network namespace of the calling goroutine's thread)
// and builds the pipeline, the traffic manager and the P4Runtime server. Nothing runs
// until Run. Close releases the ports if Run is never called.
func New(cfg Config) (*Switch, error) {
	c, err := cfg.normalized()
	if err != nil {
		return nil, err
	}
	s := &Switch{
		cfg:     c,
		log:     c.Log.WithFields(logrus.Fields{"component": "fastcnp-switch", "device_id": c.DeviceID}),
		start:   time.Now(),
		wake:    make(chan struct{}, 1),
		pktIn:   make(chan p4rtserver.PacketIn, c.PacketInQueue),
		pl:      pipeline.New(pipeline.Options{Seed: c.Seed}),
		cpuTM:   len(c.Ports),
		rxBatch: c.PortOptions.Batch,
	}
	for i := range s.p4ToTM {
		s.p4ToTM[i] = -1
	}
	popts := c.PortOptions
	if popts.Log == nil {
		popts.Log = s.log
	}
	maxLinkFrame := 0
	for i, pc := range c.Ports {
		p := &swPort{cfg: pc, tmIdx: i, drained: make(chan struct{}, 1)}
		var hw net.HardwareAddr
		if pc.Open != nil {
			p.link, hw, err = pc.Open()
		} else {
			p.link, hw, err = openPort(pc.Ifname, popts)
		}
		if err != nil {
			s.closePorts()
			return nil, fmt.Errorf("softswitch: port %d@%s: %w", pc.Num, pc.Ifname, err)
		}
		copy(p.mac[:], hw)
		s.ports = append(s.ports, p)
		s.p4ToTM[pc.Num] = int32(i)
		maxLinkFrame = max(maxLinkFrame, p.link.MaxFrameLen())
	}
	s.maxFrame = max(minBufLen, maxLinkFrame)
	s.p4ToTM[c.CPUPort] = int32(s.cpuTM)
	s.byTM = make([]*swPort, len(s.ports)+1)
	copy(s.byTM, s.ports)
	s.pool.New = func() any { return &frame{buf: make([]byte, s.maxFrame)} }

	s.tm, err = tm.New[*frame](tmConfig(&c, maxLinkFrame), hooks{s})
	if err != nil {
		s.closePorts()
		return nil, fmt.Errorf("softswitch: traffic manager: %w", err)
	}
	s.blocked = make([]bool, len(s.ports)+1)
	s.lossless = s.tm.Config().Lossless
	s.gate = inputGate{xoff: c.InputXoff, xon: c.InputXon}
	if c.GRPCAddr != "" || c.GRPCListener != nil {
		s.server, err = p4rtserver.New(p4rtserver.Options{
			DeviceID: c.DeviceID, DataPlane: s, Logger: c.Log, DigestPollInterval: c.DigestPollInterval, TLS: c.GRPCTLS,
		})
		if err != nil {
			s.closePorts()
			return nil, fmt.Errorf("softswitch: %w", err)
		}
	}
	tcfg := s.tm.Config()
	s.log.WithFields(logrus.Fields{
		"ports": len(s.ports), "buffer_bytes": tcfg.BufferBytes, "lossless_mask": fmt.Sprintf("%#02x", tcfg.Lossless),
		"threshold": thresholdName(tcfg.Threshold), "link_delay": c.LinkDelay,
		"rx_buffer": c.PortOptions.RecvBuffer, "rx_pfc_xoff": c.InputXoff, "rx_pfc_xon": c.InputXon,
	}).Info("switch configured")
	return s, nil
}

// tmConfig is the TM configuration of c: c.TM with one TM port per data-plane port
// (in order) plus the internal CPU port, and frames up to maxFrame (+FCS).
func tmConfig(c *Config, maxFrame int) tm.Config {
	tc := c.TM
	tc.Ports = make([]tm.PortConfig, 0, len(c.Ports)+1)
	for _, p := range c.Ports {
		tc.Ports = append(tc.Ports, tm.PortConfig{RateBps: p.RateBps, PropDelayNs: c.LinkDelay.Nanoseconds(), HeadroomBytes: p.HeadroomBytes})
	}
	tc.MaxFrameBytes = max(tm.DefaultMaxFrameBytes, maxFrame+fcsBytes)
	// The CPU port has no link and no peer to pause: the formula gives three frames of headroom.
	tc.Ports = append(tc.Ports, tm.PortConfig{RateBps: cpuTMPortRate,
		HeadroomBytes: tm.HeadroomRoundTripBytes(cpuTMPortRate, 0, tc.MaxFrameBytes, 0)})
	return tc
}

// Validate checks cfg without opening anything, assuming 1500-byte MTUs: the same
// checks as New, including the traffic manager's (buffer larger than the headroom
// reservations, thresholds...).
func Validate(cfg Config) error {
	c, err := cfg.normalized()
	if err != nil {
		return err
	}
	if _, err := tm.New[*frame](tmConfig(&c, defaultMaxLinkFrame), nil); err != nil {
		return fmt.Errorf("%w: traffic manager: %w", ErrConfig, err)
	}
	return nil
}

func thresholdName(m tm.ThresholdMode) string {
	if m == tm.ThresholdStatic {
		return "static"
	}
	return "dynamic"
}

// openPort opens an AF_PACKET port and reads the interface's MAC address.
func openPort(ifname string, opts afpacket.Options) (Link, net.HardwareAddr, error) {
	ifc, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, nil, fmt.Errorf("interface %s: %w", ifname, err)
	}
	p, err := afpacket.Open(ifname, opts)
	if err != nil {
		return nil, nil, err
	}
	return p, ifc.HardwareAddr, nil
}

func (s *Switch) closePorts() error {
	var errs []error
	for _, p := range s.ports {
		if err := p.link.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close closes the ports. Run closes them itself when it returns; Close is for a
// Switch that never ran, and is idempotent.
func (s *Switch) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.closePorts() })
	return s.closeErr
}

// Run starts the data path, the P4Runtime server and the debug endpoint, and blocks
// until ctx ends or a port fails; it then stops everything it started, closes the
// ports and returns (nil after a cancellation). It may be called once.
func (s *Switch) Run(ctx context.Context) error {
	first := false
	s.runOnce.Do(func() { first = true })
	if !first {
		return errors.New("softswitch: Run called twice")
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	grpcLis, err := s.listen(ctx, s.cfg.GRPCListener, s.cfg.GRPCAddr, false)
	if err != nil {
		return err
	}
	debugLis, err := s.listen(ctx, s.cfg.DebugListener, s.cfg.DebugAddr, true)
	if err != nil {
		if grpcLis != nil {
			grpcLis.Close()
		}
		return err
	}

	var wg sync.WaitGroup
	errc := make(chan error, len(s.ports)+3)
	fail := func(err error) {
		if err != nil && ctx.Err() == nil {
			errc <- err
			cancel()
		}
	}
	for _, p := range s.ports {
		wg.Add(1)
		go func() { defer wg.Done(); fail(s.rxLoop(ctx, p)) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); s.schedLoop(ctx) }()
	if grpcLis != nil {
		wg.Add(1)
		go func() { defer wg.Done(); fail(s.server.Serve(ctx, grpcLis)) }()
	}
	if debugLis != nil {
		wg.Add(1)
		go func() { defer wg.Done(); fail(s.serveDebug(ctx, debugLis)) }()
	}
	s.log.Info("switch running")
	<-ctx.Done()
	// Closing the ports ends the RX goroutines' reads (they read without a context)
	// and any write blocked in a full socket.
	if err := s.Close(); err != nil {
		s.log.WithError(err).Warn("closing the ports")
	}
	wg.Wait()
	s.log.Info("switch stopped")
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

// listen returns lis, or a listener on addr (nil when both are empty).
func (s *Switch) listen(ctx context.Context, lis net.Listener, addr string, loopbackOnly bool) (net.Listener, error) {
	if lis != nil {
		return lis, nil
	}
	if addr == "" {
		return nil, nil
	}
	if loopbackOnly {
		if err := checkLoopback(addr); err != nil {
			return nil, err
		}
	}
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("softswitch: listen %s: %w", addr, err)
	}
	return l, nil
}

// checkLoopback refuses a debug address that is not on loopback.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: debug address %q: %w", ErrConfig, addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%w: debug address %q must be on loopback (127.0.0.1, ::1 or localhost)", ErrConfig, addr)
	}
	return nil
}

// Now is the data plane's clock: monotonic ns since New (never 0).
func (s *Switch) Now() int64 { return int64(time.Since(s.start)) + 1 }

// lock takes mu and returns the time to run at: read after taking the lock, so that
// the times given to the TM and the pipeline never go backwards between holders.
func (s *Switch) lock() int64 {
	s.mu.Lock()
	return max(s.Now(), s.clk)
}

// unlock releases mu and then writes the PFC frames made meanwhile: they leave at
// once, ahead of the departures waiting in the delay lines (as a MAC sends PAUSE
// ahead of its queues). One goroutine at a time writes them, oldest first; a
// goroutine that finds another one writing leaves its frames to it and goes on
// (the writer looks again after it lets go, so nothing is stranded). scratch is
// reused storage.
func (s *Switch) unlock(ctx context.Context, scratch []*frame) []*frame {
	pending := len(s.urgent) > 0
	s.mu.Unlock()
	for pending {
		if !s.urgentTx.TryLock() {
			return scratch // the writer in charge sends ours after its own
		}
		for {
			s.mu.Lock()
			scratch = append(scratch[:0], s.urgent...)
			clear(s.urgent)
			s.urgent = s.urgent[:0]
			s.mu.Unlock()
			if len(scratch) == 0 {
				break
			}
			scratch = s.writeUrgent(ctx, scratch)
		}
		s.urgentTx.Unlock()
		// Frames queued by a goroutine whose TryLock failed after our last
		// look: ours to send.
		s.mu.Lock()
		pending = len(s.urgent) > 0
		s.mu.Unlock()
	}
	return scratch
}

// writeUrgent writes frames in order on their ports and recycles them.
func (s *Switch) writeUrgent(ctx context.Context, frames []*frame) []*frame {
	for i, f := range frames {
		p := f.out
		one := [1][]byte{f.data}
		if _, err := p.link.WriteBatch(ctx, one[:]); err != nil {
			p.txErrors.Add(1)
			p.txDropped.Add(1)
			if ctx.Err() == nil {
				s.log.WithError(err).WithField("port", p.cfg.Num).Warn("PFC frame not sent")
			}
		} else {
			p.txPkts.Add(1)
			p.txBytes.Add(uint64(len(f.data)))
		}
		f.out = nil
		s.putFrame(f)
		frames[i] = nil
	}
	return frames[:0]
}

// Exec implements p4rtserver.DataPlane: fn runs with exclusive use of the pipeline.
func (s *Switch) Exec(ctx context.Context, fn func(p *pipeline.Pipeline) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("softswitch: exec: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return fn(s.pl)
}

// PacketIns implements p4rtserver.DataPlane.
func (s *Switch) PacketIns() <-chan p4rtserver.PacketIn { return s.pktIn }

// PacketOut implements p4rtserver.DataPlane: the frame (packet_out header + payload)
// goes through ingress on the CPU port and is enqueued like any forwarded frame.
func (s *Switch) PacketOut(ctx context.Context, b []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("softswitch: packet-out: %w", err)
	}
	if len(b) > s.maxFrame {
		return fmt.Errorf("softswitch: packet-out of %d bytes: longer than the largest frame (%d)", len(b), s.maxFrame)
	}
	f := s.getFrame()
	n := copy(f.buf, b)
	now := s.lock()
	s.advance(now)
	s.ctr.PacketOuts++
	s.process(f.buf[:n], s.cfg.CPUPort, now, nil, f)
	s.unlock(context.WithoutCancel(ctx), nil)
	s.kick()
	return nil
}

// Dataplane checks at compile time that Switch is a p4rtserver.DataPlane.
var _ p4rtserver.DataPlane = (*Switch)(nil)

func (s *Switch) getFrame() *frame { return s.pool.Get().(*frame) }

func (s *Switch) putFrame(f *frame) {
	f.data = nil
	s.pool.Put(f)
}

// kick wakes the scheduler goroutine.
func (s *Switch) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
