package softswitch

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/fastcnp/fastcnp/afpacket"
	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/p4src"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"github.com/fastcnp/fastcnp/wire"
)

// memLink is an in-memory Link: the test injects frames (Inject) and reads what the
// switch sent (Sent, Wait), with the wall-clock time each frame was written.
type memLink struct {
	// refuseLen, if set, makes WriteBatch refuse frames of that length as the kernel
	// refuses a frame longer than the MTU: an error at that frame.
	refuseLen int

	// readErrs are errors ReadBatch returns, one per call, before any frame
	// (a link that went down: ENETDOWN).
	readErrs  chan error
	rx        chan [][]byte // one element per Inject call: a burst
	pending   [][]byte      // the rest of a burst longer than a batch (ReadBatch only)
	closed    chan struct{}
	closeOnce sync.Once

	mu   sync.Mutex
	sent []sentFrame
	cond chan struct{} // closed and replaced on every write
}

type sentFrame struct {
	at   time.Time
	data []byte
}

func newMemLink() *memLink {
	return &memLink{rx: make(chan [][]byte, 4096), readErrs: make(chan error, 16), closed: make(chan struct{}), cond: make(chan struct{})}
}

// Inject offers frames to the switch as one burst: its RX goroutine reads them in
// as few batches as its batch size allows, however the goroutines are scheduled (a
// test that needs a queue to build up does not depend on the injector outrunning
// the switch).
func (l *memLink) Inject(frames ...[]byte) {
	burst := make([][]byte, len(frames))
	for i, f := range frames {
		burst[i] = append([]byte(nil), f...)
	}
	l.rx <- burst
}

// ReadBatch implements Link. It is called by one goroutine (the port's RX loop).
func (l *memLink) ReadBatch(ctx context.Context, msgs []afpacket.Message) (int, error) {
	select {
	case err := <-l.readErrs:
		return 0, err
	default:
	}
	for len(l.pending) == 0 {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-l.closed:
			return 0, afpacket.ErrClosed
		case err := <-l.readErrs:
			return 0, err
		case l.pending = <-l.rx:
		}
	}
	n := 0
	for n < len(msgs) {
		if len(l.pending) == 0 {
			select {
			case l.pending = <-l.rx:
				continue
			default:
				return n, nil
			}
		}
		msgs[n].N = copy(msgs[n].Buf, l.pending[0])
		l.pending[0] = nil
		l.pending = l.pending[1:]
		n++
	}
	return n, nil
}

func (l *memLink) WriteBatch(_ context.Context, frames [][]byte) (int, error) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	defer func() {
		close(l.cond)
		l.cond = make(chan struct{})
	}()
	for i, f := range frames {
		if l.refuseLen != 0 && len(f) == l.refuseLen {
			return i, fmt.Errorf("memlink: frame %d of %d bytes: %w", i, len(f), syscall.EMSGSIZE)
		}
		l.sent = append(l.sent, sentFrame{at: now, data: append([]byte(nil), f...)})
	}
	return len(frames), nil
}

func (l *memLink) MaxFrameLen() int { return 1518 }

func (l *memLink) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

// Sent returns a copy of the frames written so far.
func (l *memLink) Sent() []sentFrame {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]sentFrame(nil), l.sent...)
}

// Wait waits until pred holds for the frames sent, or fails t after timeout.
func (l *memLink) Wait(t *testing.T, timeout time.Duration, what string, pred func([]sentFrame) bool) []sentFrame {
	t.Helper()
	deadline := time.After(timeout)
	for {
		l.mu.Lock()
		ok := pred(l.sent)
		c := l.cond
		l.mu.Unlock()
		if ok {
			return l.Sent()
		}
		select {
		case <-c:
		case <-deadline:
			t.Fatalf("timeout after %v waiting for %s (%d frames sent)", timeout, what, len(l.Sent()))
		}
	}
}

// pauseRefresh is how often holdPause re-sends its PAUSE: about a thirtieth of the
// longest pause there is (65535 quanta last 335 ms at 100 Mb/s, the least port rate).
const pauseRefresh = 10 * time.Millisecond

// holdPause keeps a pause received by the switch in force for as long as a test
// needs it, however late the test's goroutines run (a test that polls P4Runtime,
// waits for digests and injects frames can take longer than any one pause): it calls
// send at once (the caller may then wait until the switch applies it) and again every
// pauseRefresh from a goroutine, until stop. stop ends the goroutine and waits for it,
// so that whatever the test sends next reaches the switch after the last refresh; it
// returns how many frames send sent (failed sends are not counted). stop is
// idempotent and also runs at cleanup.
func holdPause(t testing.TB, send func(ctx context.Context) error) (stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if err := send(ctx); err != nil {
		cancel()
		t.Fatalf("send PAUSE: %v", err)
	}
	sent := 1
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(pauseRefresh)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if send(ctx) == nil {
					sent++
				}
			}
		}
	}()
	var once sync.Once
	stop = func() int {
		once.Do(func() { cancel(); <-done })
		return sent // written by the goroutine before done was closed
	}
	t.Cleanup(func() { stop() })
	return stop
}

// testLog is a quiet logger for tests (warnings and errors only).
func testLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	return l
}

// runSwitch starts sw in the background; the cleanup cancels it and waits for Run.
func runSwitch(t testing.TB, sw *Switch) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sw.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Run did not return after cancel")
		}
	})
}

// localListener listens on an ephemeral loopback port.
func localListener(t testing.TB) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// controller is a P4Runtime client that has pushed the fastcnp pipeline.
type controller struct {
	t    testing.TB
	c    *p4rt.Client
	info *p4rt.Info
}

// dialController connects to a switch, becomes primary and commits the pipeline.
// The cleanup closes the client.
func dialController(t testing.TB, addr string, deviceID uint64) *controller {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := p4rt.Dial(ctx, addr, deviceID, p4rt.WithElectionID(p4rt.Uint128{Low: 1}))
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	info, err := p4src.P4Info()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetPipeline(ctx, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, info, nil, 1); err != nil {
		t.Fatalf("set pipeline: %v", err)
	}
	return &controller{t: t, c: c, info: c.Info()}
}

func (c *controller) write(what string, e *p4v1.Entity, err error) {
	c.t.Helper()
	if err != nil {
		c.t.Fatalf("%s: %v", what, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.c.Write(ctx, p4rt.Insert(e)); err != nil {
		c.t.Fatalf("write %s: %v", what, err)
	}
}

// route installs ipv4_route dst -> set_nexthop(port, src_mac, dst_mac).
func (c *controller) route(dst netip.Prefix, port int, src, dstMAC net.HardwareAddr) {
	c.t.Helper()
	e, err := c.info.TableEntry("ipv4_route").
		Match(p4rt.LPM("dst_addr", net.IP(dst.Addr().AsSlice()), int32(dst.Bits()))).
		Action("set_nexthop", p4rt.P("port", port), p4rt.P("src_mac", src), p4rt.P("dst_mac", dstMAC)).Entity()
	c.write("route "+dst.String(), e, err)
}

// trafficClass maps untagged packets with dscp to (priority, lossless).
func (c *controller) trafficClass(dscp, prio int, lossless bool) {
	c.t.Helper()
	ll := 0
	if lossless {
		ll = 1
	}
	e, err := c.info.TableEntry("traffic_class").
		Match(p4rt.Exact("vlan_valid", 0), p4rt.Ternary("dscp", dscp, 0x3f)).Priority(10).
		Action("set_traffic_class", p4rt.P("priority", prio), p4rt.P("lossless", ll)).Entity()
	c.write("traffic_class", e, err)
}

// portConfig installs set_port_config for port: mode (0 off, 1 ecn), RED thresholds
// (bytes) with Pmax 1.0, lossless priority 3.
func (c *controller) portConfig(port int, rateBps int64, mode, kmin, kmax int) {
	c.t.Helper()
	c.portConfigQth(port, rateBps, mode, 100_000, kmin, kmax)
}

// portConfigQth is portConfig with the fastcnp queue threshold Qth (bytes).
func (c *controller) portConfigQth(port int, rateBps int64, mode, qth, kmin, kmax int) {
	c.t.Helper()
	e, err := c.info.TableEntry("port_config").Match(p4rt.Exact("port", port)).
		Action("set_port_config",
			p4rt.P("rate_bytes_per_ms", rateBps/8/1000), p4rt.P("qth_bytes", qth), p4rt.P("tcheck_ns", 8000),
			p4rt.P("cnp_gap_ns", 4000), p4rt.P("mode", mode), p4rt.P("red_kmin_bytes", kmin), p4rt.P("red_kmax_bytes", kmax),
			p4rt.P("red_pmax_q16", 65535), p4rt.P("rtt_base_ns", 8000), p4rt.P("bdp_bytes", 10000),
			p4rt.P("bdp_log2_q6", 850), p4rt.P("mtu_bytes", 1500), p4rt.P("pause_quantum_ps", 512*1_000_000_000_000/rateBps),
			p4rt.P("switch_id", 1), p4rt.P("lossless_priority", 3)).Entity()
	c.write("port_config", e, err)
}

// counter reads one cell of a P4 counter.
func (c *controller) counter(name string, index int) p4rt.CounterCell {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cells, err := c.c.ReadCounters(ctx, name, int64(index))
	if err != nil {
		c.t.Fatalf("read counter %s[%d]: %v", name, index, err)
	}
	if len(cells) != 1 {
		c.t.Fatalf("read counter %s[%d]: %d cells", name, index, len(cells))
	}
	return cells[0]
}

// roce builds a RoCEv2 frame (RC SEND only, PSN psn) of total length n with dscp and ECN.
func roce(t testing.TB, src, dst netip.Addr, srcMAC, dstMAC net.HardwareAddr, dscp uint8, ecn wire.ECN, psn uint32, n int) []byte {
	t.Helper()
	env := wire.Envelope{SrcIP: src.As4(), DstIP: dst.As4(), DSCP: dscp, ECN: ecn, SrcPort: 49152}
	copy(env.SrcMAC[:], srcMAC)
	copy(env.DstMAC[:], dstMAC)
	hdr := wire.EthernetLen + wire.IPv4Len + wire.UDPLen + wire.BTHLen + wire.ICRCLen
	b := make([]byte, max(n, 64))
	l, err := wire.BuildRoCE(b, &env, &wire.BTH{Opcode: wire.OpRCSendOnly, PKey: 0xffff, DestQP: 0x11, PSN: psn}, make([]byte, max(0, n-hdr)))
	if err != nil {
		t.Fatal(err)
	}
	return b[:l]
}

// checkGoroutines fails t when goroutines started during the test are still running
// after cleanup (the check runs as the last cleanup).
func checkGoroutines(t *testing.T) {
	base := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(10 * time.Second) // a guard against hangs only
		for {
			n := runtime.NumGoroutine()
			if n <= base {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				t.Errorf("goroutine leak: %d goroutines, %d at start\n%s", n, base, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// parseFrame parses b or fails t.
func parseFrame(t testing.TB, b []byte) *wire.Frame {
	t.Helper()
	var f wire.Frame
	if err := wire.Parse(b, wire.ParseOptions{}, &f); err != nil {
		t.Fatalf("parse: %v", err)
	}
	return &f
}
