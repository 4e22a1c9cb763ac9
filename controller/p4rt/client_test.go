package p4rt_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/controller/p4rt/internal/p4rttest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestDialRejectsDeviceZero(t *testing.T) {
	checkLeaks(t)
	_, err := p4rt.Dial(context.Background(), "127.0.0.1:1", 0)
	if !errors.Is(err, p4rt.ErrInvalidValue) {
		t.Fatalf("device 0: got %v, want ErrInvalidValue", err)
	}
}

func TestDialOptionsValidated(t *testing.T) {
	checkLeaks(t)
	for _, tc := range []struct {
		name string
		opt  p4rt.Option
	}{
		{"chunk 0", p4rt.WithChunkSize(0)},
		{"backoff", p4rt.WithBackoff(p4rt.Backoff{Initial: time.Second, Max: time.Millisecond, Multiplier: 2})},
		{"buffers", p4rt.WithBuffers(0, 1, 1, 1)},
		{"tls files", p4rt.WithTLSFiles("/nonexistent/ca.pem", "", "", "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := p4rt.Dial(context.Background(), "127.0.0.1:1", 1, tc.opt); err == nil {
				t.Fatal("Dial accepted a bad option")
			}
		})
	}
}

func TestDialDeadlineWithoutServer(t *testing.T) {
	checkLeaks(t)
	s := startServer(t)
	addr := s.Addr()
	s.Stop() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := p4rt.Dial(ctx, addr, testDevice, p4rt.WithBackoff(fastBackoff))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "last attempt") {
		t.Fatalf("got %v, want deadline exceeded with the last attempt's error", err)
	}
}

func TestDialWrongDeviceFailsAtOnce(t *testing.T) {
	checkLeaks(t)
	s := startServer(t)
	_, err := p4rt.Dial(ctx(t), s.Addr(), testDevice+1, p4rt.WithBackoff(fastBackoff))
	if !isCode(err, codes.NotFound) {
		t.Fatalf("got %v, want NOT_FOUND", err)
	}
}

func isCode(err error, c codes.Code) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if st, ok := status.FromError(e); ok && st.Code() == c {
			return true
		}
	}
	return false
}

func TestDuplicateElectionIDRefused(t *testing.T) {
	checkLeaks(t)
	s := startServer(t)
	dial(t, s.Addr(), p4rt.WithElectionID(p4rt.Uint128{Low: 5}))
	_, err := p4rt.Dial(ctx(t), s.Addr(), testDevice, p4rt.WithElectionID(p4rt.Uint128{Low: 5}), p4rt.WithBackoff(fastBackoff))
	if !isCode(err, codes.InvalidArgument) {
		t.Fatalf("got %v, want INVALID_ARGUMENT", err)
	}
}

func TestArbitration(t *testing.T) {
	checkLeaks(t)
	s := startServer(t)
	in := testInfo(t)
	low := dial(t, s.Addr(), p4rt.WithElectionID(p4rt.Uint128{Low: 10}))
	if st := low.Status(); !st.Primary || !st.Connected || st.PrimaryElectionID != (p4rt.Uint128{Low: 10}) {
		t.Fatalf("sole client: status %+v, want primary with election ID 10", st)
	}
	if e := waitEvent(t, low, p4rt.EventArbitration); !e.Status.Primary {
		t.Fatalf("first event %+v, want primary", e)
	}

	// A higher election ID takes over; the old primary is told.
	high := dial(t, s.Addr(), p4rt.WithElectionID(p4rt.Uint128{High: 1, Low: 0}))
	if !high.IsPrimary() {
		t.Fatalf("high: %+v, want primary", high.Status())
	}
	e := waitEvent(t, low, p4rt.EventArbitration)
	if e.Status.Primary || e.Status.PrimaryElectionID != (p4rt.Uint128{High: 1}) || e.Status.Code != codes.AlreadyExists || e.Reconcile {
		t.Fatalf("low after takeover: %+v, want backup seeing primary 1:0", e.Status)
	}
	if low.IsPrimary() {
		t.Fatal("low still says primary")
	}

	// The backup's write is refused, typed.
	ent, err := in.TableEntry("port_config").Match(p4rt.Exact("port", 1)).Action("NoAction").Entity()
	if err != nil {
		t.Fatal(err)
	}
	err = low.Write(ctx(t), p4rt.Insert(ent))
	var we *p4rt.WriteError
	if !errors.Is(err, p4rt.ErrPermissionDenied) || !errors.As(err, &we) || we.Applied() != 0 {
		t.Fatalf("backup write: %v, want *WriteError with PERMISSION_DENIED and 0 applied", err)
	}
	if err := high.Write(ctx(t), p4rt.Insert(ent)); err != nil {
		t.Fatalf("primary write: %v", err)
	}

	// The primary leaves; the backup becomes primary and is told.
	if err := high.Close(); err != nil {
		t.Fatal(err)
	}
	e = waitEvent(t, low, p4rt.EventArbitration)
	if !e.Status.Primary || e.Status.PrimaryElectionID != (p4rt.Uint128{Low: 10}) || !e.Reconcile {
		t.Fatalf("low after primary left: %+v (reconcile %v), want primary and reconcile", e.Status, e.Reconcile)
	}
	oneSignal(t, low, "low promoted")
	ent2, _ := in.TableEntry("port_config").Match(p4rt.Exact("port", 2)).Action("NoAction").Entity()
	if err := low.Write(ctx(t), p4rt.Insert(ent2)); err != nil {
		t.Fatalf("new primary write: %v", err)
	}
}

func TestRolesArbitrateSeparately(t *testing.T) {
	checkLeaks(t)
	s := startServer(t)
	a := dial(t, s.Addr(), p4rt.WithRole("cc"), p4rt.WithElectionID(p4rt.Uint128{Low: 1}))
	b := dial(t, s.Addr(), p4rt.WithRole("inc"), p4rt.WithElectionID(p4rt.Uint128{Low: 1}))
	if !a.IsPrimary() || !b.IsPrimary() {
		t.Fatalf("each role's sole client must be primary: %v %v", a.Status(), b.Status())
	}
}

func TestReconnect(t *testing.T) {
	checkLeaks(t)
	s := startServer(t)
	addr := s.Addr()
	c := dial(t, addr)
	waitEvent(t, c, p4rt.EventArbitration)

	s.Stop()
	e := waitEvent(t, c, p4rt.EventDisconnected)
	if e.Err == nil {
		t.Error("disconnect event without cause")
	}
	if c.IsPrimary() || c.Status().Connected {
		t.Errorf("status while disconnected: %+v", c.Status())
	}
	if err := c.PacketOut(ctx(t), []byte{1}); !errors.Is(err, p4rt.ErrNoP4Info) {
		t.Errorf("PacketOut without info: %v", err)
	}

	// Same address, new server process (empty state).
	s2, err := p4rttest.Start(addr, testDevice)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s2.Stop)
	e = waitEvent(t, c, p4rt.EventReconnected)
	if !e.Reconcile || !e.Status.Primary {
		t.Fatalf("reconnected event %+v, want primary and reconcile", e)
	}
	if got := c.Stats().Reconnects; got != 1 {
		t.Errorf("Reconnects = %d, want 1", got)
	}
	in := testInfo(t)
	ent, _ := in.TableEntry("port_config").Match(p4rt.Exact("port", 1)).Action("NoAction").Entity()
	if err := c.Write(ctx(t), p4rt.Insert(ent)); err != nil {
		t.Fatalf("write after reconnect: %v", err)
	}
}

func TestBackoffDelay(t *testing.T) {
	b := p4rt.Backoff{Initial: 100 * time.Millisecond, Max: time.Second, Multiplier: 2, Jitter: 0.5}
	for _, tc := range []struct {
		n    int
		r    float64
		want time.Duration
	}{
		{0, 0.5, 100 * time.Millisecond},
		{1, 0.5, 200 * time.Millisecond},
		{3, 0.5, 800 * time.Millisecond},
		{4, 0.5, time.Second}, // capped
		{1000, 0.5, time.Second},
		{0, 0, 50 * time.Millisecond},             // -50% jitter
		{4, 0.999999, 1499999 * time.Microsecond}, // +50% jitter, still bounded
	} {
		got := b.Delay(tc.n, tc.r)
		if d := got - tc.want; d < -time.Microsecond || d > time.Microsecond {
			t.Errorf("Delay(%d, %v) = %v, want %v", tc.n, tc.r, got, tc.want)
		}
	}
}

func TestCloseIdempotentAndClosesChannels(t *testing.T) {
	checkLeaks(t)
	s := startServer(t)
	c := dial(t, s.Addr())
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for range c.Events() {
	}
	if _, ok := <-c.Packets(); ok {
		t.Error("Packets not closed")
	}
	if _, ok := <-c.ReconcileNeeded(); ok {
		t.Error("ReconcileNeeded not closed")
	}
	in := testInfo(t)
	c.SetInfo(in)
	if err := c.PacketOut(context.Background(), []byte{1}, p4rt.P("egress_port", 1), p4rt.P("pad", 0)); !errors.Is(err, p4rt.ErrClosed) {
		t.Errorf("PacketOut after Close: %v, want ErrClosed", err)
	}
}

// noSignal fails the test if a reconcile signal is pending.
func noSignal(t *testing.T, c *p4rt.Client, when string) {
	t.Helper()
	select {
	case _, ok := <-c.ReconcileNeeded():
		t.Fatalf("%s: reconcile signal pending (open %v)", when, ok)
	default:
	}
}

// oneSignal fails the test unless exactly one reconcile signal is pending.
func oneSignal(t *testing.T, c *p4rt.Client, when string) {
	t.Helper()
	select {
	case _, ok := <-c.ReconcileNeeded():
		if !ok {
			t.Fatalf("%s: ReconcileNeeded closed", when)
		}
	default:
		t.Fatalf("%s: no reconcile signal", when)
	}
	noSignal(t, c, when+", after one receive")
}

// TestReconcileNeededSurvivesFullEvents: with the Events buffer full, the
// EventDisconnected and EventReconnected events are dropped, but the caller
// still learns it must reconcile; two reconnections before the caller
// looks give one pending signal.
func TestReconcileNeededSurvivesFullEvents(t *testing.T) {
	checkLeaks(t)
	s := startServer(t)
	addr := s.Addr()
	c := dial(t, addr, p4rt.WithBuffers(1, 1, 1, 1)) // the first arbitration event fills Events; nobody reads it
	noSignal(t, c, "after Dial")
	for round := 1; round <= 2; round++ {
		s.Stop()
		eventually(t, "disconnected", func() bool { return !c.Status().Connected })
		s2, err := p4rttest.Start(addr, testDevice)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s2.Stop)
		s = s2
		eventually(t, "reconnected", func() bool { return c.Stats().Reconnects == uint64(round) })
	}
	eventually(t, "4 events dropped", func() bool { return c.Stats().EventsDropped == 4 })
	if !c.IsPrimary() {
		t.Fatalf("status %+v, want primary", c.Status())
	}
	oneSignal(t, c, "after two reconnections")
	if e := <-c.Events(); e.Type != p4rt.EventArbitration {
		t.Fatalf("buffered event %v, want the first arbitration", e.Type)
	}
}

// TestReconcileNeededOnPromotion: a backup promoted to primary is told to
// reconcile even when its Events buffer is full; becoming backup is not a
// reason to.
func TestReconcileNeededOnPromotion(t *testing.T) {
	checkLeaks(t)
	s := startServer(t)
	low := dial(t, s.Addr(), p4rt.WithElectionID(p4rt.Uint128{Low: 10}), p4rt.WithBuffers(1, 1, 1, 1))
	high := dial(t, s.Addr(), p4rt.WithElectionID(p4rt.Uint128{Low: 20}))
	eventually(t, "low is backup", func() bool { return !low.IsPrimary() && low.Status().Connected })
	noSignal(t, low, "after becoming backup")
	if err := high.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "low promoted", func() bool { return low.IsPrimary() })
	oneSignal(t, low, "after promotion")
	eventually(t, "2 events dropped (backup, then promotion)", func() bool { return low.Stats().EventsDropped == 2 })
}
