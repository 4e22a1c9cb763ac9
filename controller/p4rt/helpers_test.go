package p4rt_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/controller/p4rt/internal/p4rttest"
)

const testDevice = 7

// fastBackoff keeps reconnection tests short.
var fastBackoff = p4rt.Backoff{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond, Multiplier: 2, Jitter: 0.1}

// checkLeaks fails the test if client, fake-server or gRPC goroutines
// remain after the test's other cleanups ran. Call it first in a test so
// its cleanup runs last.
func checkLeaks(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		deadline := time.Now().Add(10 * time.Second)
		for {
			left := leftovers()
			if len(left) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("%d goroutines leaked:\n%s", len(left), strings.Join(left, "\n\n"))
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

func leftovers() []string {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "leftovers") {
			continue
		}
		if strings.Contains(g, "p4rt.(*Client)") || strings.Contains(g, "p4rttest.(*Server)") ||
			strings.Contains(g, "google.golang.org/grpc") {
			out = append(out, g)
		}
	}
	return out
}

func testInfo(t testing.TB) *p4rt.Info {
	t.Helper()
	p, err := p4rt.LoadP4InfoFile("testdata/test.p4info.txtpb", p4rt.FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	in, err := p4rt.NewInfo(p)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func startServer(t testing.TB) *p4rttest.Server {
	t.Helper()
	s, err := p4rttest.Start("127.0.0.1:0", testDevice)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

func dial(t testing.TB, addr string, opts ...p4rt.Option) *p4rt.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts = append([]p4rt.Option{p4rt.WithBackoff(fastBackoff)}, opts...)
	c, err := p4rt.Dial(ctx, addr, testDevice, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// waitEvent returns the next event of type typ (any type when typ is 0),
// skipping others; it fails the test if none comes within 10 s (a hang
// guard, not a speed check).
func waitEvent(t *testing.T, c *p4rt.Client, typ p4rt.EventType) p4rt.Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e, ok := <-c.Events():
			if !ok {
				t.Fatalf("events closed while waiting for %v", typ)
			}
			if typ == 0 || e.Type == typ {
				return e
			}
		case <-timeout:
			t.Fatalf("no %v event", typ)
		}
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}
