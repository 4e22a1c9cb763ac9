package p4rt_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/controller/p4rt"
)

// TestKeepaliveDefault pins the rule behind DefaultKeepalive: it must not
// ping more often than a gRPC server with default settings accepts (BMv2's
// PI server: grpc C++ min_recv_ping_interval_without_data; grpc-go:
// EnforcementPolicy.MinTime; both 5 minutes), or an idle switch would cut
// the connection with "too_many_pings".
func TestKeepaliveDefault(t *testing.T) {
	const serverMinPingInterval = 5 * time.Minute
	k := p4rt.DefaultKeepalive
	if k.Interval <= serverMinPingInterval || k.Timeout <= 0 || k.Timeout >= k.Interval {
		t.Fatalf("DefaultKeepalive %+v: want Interval > %v (gRPC servers' default minimum) and 0 < Timeout < Interval",
			k, serverMinPingInterval)
	}
}

func TestKeepaliveValidated(t *testing.T) {
	checkLeaks(t)
	for _, tc := range []struct {
		name string
		k    p4rt.Keepalive
		ok   bool
	}{
		{"off", p4rt.Keepalive{}, true},
		{"default", p4rt.DefaultKeepalive, true},
		{"stratum-like 30s", p4rt.Keepalive{Interval: 30 * time.Second, Timeout: 10 * time.Second}, true},
		{"below gRPC's 10s floor", p4rt.Keepalive{Interval: 5 * time.Second, Timeout: time.Second}, false},
		{"negative interval", p4rt.Keepalive{Interval: -time.Minute, Timeout: time.Second}, false},
		{"no timeout", p4rt.Keepalive{Interval: time.Minute}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t)
			c, err := p4rt.Dial(ctx(t), s.Addr(), testDevice, p4rt.WithKeepalive(tc.k.Interval, tc.k.Timeout), p4rt.WithBackoff(fastBackoff))
			if !tc.ok {
				if err == nil {
					c.Close()
				}
				if !errors.Is(err, p4rt.ErrInvalidValue) {
					t.Fatalf("got %v, want ErrInvalidValue", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// blackhole is a TCP proxy whose connections can all go silent at once:
// it keeps reading (so the kernel still acknowledges) but forwards nothing
// either way, and closes nothing: a link that dies without RST or FIN.
type blackhole struct {
	ln    net.Listener
	dead  atomic.Bool
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func newBlackhole(t *testing.T, target string) *blackhole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackhole{ln: ln}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			b.mu.Lock()
			b.conns = append(b.conns, in, out)
			b.mu.Unlock()
			b.wg.Add(2)
			go b.pipe(out, in)
			go b.pipe(in, out)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		b.mu.Lock()
		for _, c := range b.conns {
			c.Close()
		}
		b.mu.Unlock()
		b.wg.Wait()
	})
	return b
}

func (b *blackhole) pipe(dst, src net.Conn) {
	defer b.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			dst.Close()
			return
		}
		if b.dead.Load() {
			continue
		}
		if _, err := dst.Write(buf[:n]); err != nil {
			src.Close()
			return
		}
	}
}

// TestKeepaliveDetectsSilentLink: once the link goes silent, the keepalive
// ping gets no answer and the client reports the disconnection (and then
// retries), instead of keeping a dead stream channel. gRPC's floor makes
// this test take about 11 s.
func TestKeepaliveDetectsSilentLink(t *testing.T) {
	checkLeaks(t)
	s := startServer(t)
	b := newBlackhole(t, s.Addr())
	c := dial(t, b.ln.Addr().String(), p4rt.WithKeepalive(10*time.Second, time.Second))
	waitEvent(t, c, p4rt.EventArbitration)
	b.dead.Store(true)
	wait, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	for {
		select {
		case e := <-c.Events():
			if e.Type != p4rt.EventDisconnected {
				continue
			}
			if e.Err == nil || !strings.Contains(e.Err.Error(), "keepalive") || c.Status().Connected {
				t.Fatalf("disconnect event %+v, status %+v", e, c.Status())
			}
			t.Logf("disconnected: %v", e.Err)
			return
		case <-wait.Done():
			t.Fatal("silent link never detected")
		}
	}
}
