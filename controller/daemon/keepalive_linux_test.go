//go:build linux

package daemon

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"google.golang.org/grpc"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/controller/p4rt"
)

// tcpUserTimeout is TCP_USER_TIMEOUT (linux/tcp.h), which gRPC sets to the
// keepalive timeout on every connection it keeps alive, and leaves alone
// otherwise.
const tcpUserTimeout = 0x12

// TestKeepaliveReachesDial: switches[].keepalive reaches the gRPC dial
// options of that switch's connection. gRPC shows it on the socket: with
// keepalive on, TCP_USER_TIMEOUT is the keepalive timeout; with keepalive
// 0, it is not set. (When pings are sent is gRPC's business: not timed
// here.)
func TestKeepaliveReachesDial(t *testing.T) {
	s1, s2 := startSwitch(t, "", 1), startSwitch(t, "", 2)
	cfg := testConfig(t, filepath.Join(t.TempDir(), "state.json"), s1, s2)
	cfg.Switch("s2").Keepalive = 0
	if got := cfg.Switch("s1").Keepalive; got != config.DefaultKeepalive {
		t.Fatalf("s1 keepalive %v, want the default %v", got, config.DefaultKeepalive)
	}
	var mu sync.Mutex
	conns := map[string][]net.Conn{} // by switch address
	dialer := func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err == nil {
			mu.Lock()
			conns[addr] = append(conns[addr], c)
			mu.Unlock()
		}
		return c, err
	}
	d := startDaemon(t, cfg, func(o *Options) {
		o.ClientOptions = append(o.ClientOptions, p4rt.WithDialOptions(grpc.WithContextDialer(dialer)))
	})
	waitInSync(t, d.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	for _, tt := range []struct {
		s    *testSwitch
		want int // ms
	}{{s1, int(config.KeepaliveTimeout.Milliseconds())}, {s2, 0}} {
		mu.Lock()
		cs := append([]net.Conn(nil), conns[tt.s.addr]...)
		mu.Unlock()
		if len(cs) == 0 {
			t.Fatalf("no connection to %s went through the test dialer", tt.s.addr)
		}
		for _, c := range cs {
			raw, err := c.(*net.TCPConn).SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			var got int
			var gerr error
			if err := raw.Control(func(fd uintptr) {
				got, gerr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpUserTimeout)
			}); err != nil || gerr != nil {
				t.Fatalf("getsockopt: %v %v", err, gerr)
			}
			if got != tt.want {
				t.Errorf("switch %d: TCP_USER_TIMEOUT %d ms, want %d", tt.s.deviceID, got, tt.want)
			}
		}
	}
	if d.byName["s1"].keepalive != config.DefaultKeepalive || d.byName["s2"].keepalive != 0 {
		t.Errorf("runner keepalives %v, %v", d.byName["s1"].keepalive, d.byName["s2"].keepalive)
	}
}
