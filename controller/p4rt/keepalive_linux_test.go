//go:build linux

package p4rt_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/controller/p4rt"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
)

// TestKeepaliveApplied checks on the client's socket that the keepalive in
// force is the one asked for, the default included: with keepalive on, gRPC
// sets TCP_USER_TIMEOUT to the keepalive timeout; with it off, it leaves
// the socket alone.
func TestKeepaliveApplied(t *testing.T) {
	checkLeaks(t)
	s := startServer(t)
	for i, tc := range []struct {
		name   string
		opts   []p4rt.Option
		wantMS int
	}{
		{"default", nil, int(p4rt.DefaultKeepalive.Timeout / time.Millisecond)},
		{"explicit", []p4rt.Option{p4rt.WithKeepalive(30*time.Second, 7*time.Second)}, 7000},
		{"off", []p4rt.Option{p4rt.WithKeepalive(0, 0)}, 0},
	} {
		// A distinct election ID per case: the server may not yet have seen the
		// previous case's stream close, and refuses an ID still in use.
		tc.opts = append(tc.opts, p4rt.WithElectionID(p4rt.Uint128{Low: uint64(10 + i)}))
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var conns []net.Conn
			dialer := grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
				c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
				if err == nil {
					mu.Lock()
					conns = append(conns, c)
					mu.Unlock()
				}
				return c, err
			})
			dial(t, s.Addr(), append(tc.opts, p4rt.WithDialOptions(dialer))...)
			mu.Lock()
			defer mu.Unlock()
			if len(conns) != 1 {
				t.Fatalf("%d connections, want 1", len(conns))
			}
			raw, err := conns[0].(*net.TCPConn).SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			var ms int
			var gerr error
			if err := raw.Control(func(fd uintptr) {
				ms, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
			}); err != nil || gerr != nil {
				t.Fatal(err, gerr)
			}
			if ms != tc.wantMS {
				t.Fatalf("TCP_USER_TIMEOUT %d ms, want %d", ms, tc.wantMS)
			}
		})
	}
}
