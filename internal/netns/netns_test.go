package netns_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fastcnp/fastcnp/internal/netns"
	"github.com/fastcnp/fastcnp/internal/netns/netnstest"
)

func nsInode(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	return st.Ino
}

func TestDoEntersAndRestores(t *testing.T) {
	tb := netnstest.New(t)
	ctx := context.Background()
	ns, err := tb.Namespace(ctx, "do")
	if err != nil {
		t.Fatal(err)
	}
	runtime.LockOSThread() // so that before/after are read on the same thread
	defer runtime.UnlockOSThread()
	before := nsInode(t, "/proc/thread-self/ns/net")
	want := nsInode(t, ns.Path())
	if before == want {
		t.Fatal("test namespace equals the current one")
	}
	var inside uint64
	if err := ns.Do(func() error {
		inside = nsInode(t, "/proc/thread-self/ns/net")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if inside != want {
		t.Errorf("inside Do: namespace inode %d, want %d", inside, want)
	}
	if after := nsInode(t, "/proc/thread-self/ns/net"); after != before {
		t.Errorf("after Do: namespace inode %d, want original %d", after, before)
	}
	// fn's error comes back unchanged; a panic still restores the thread.
	sentinel := errors.New("sentinel")
	if err := ns.Do(func() error { return sentinel }); err != sentinel {
		t.Errorf("Do returned %v, want the sentinel", err)
	}
	func() {
		defer func() { _ = recover() }()
		_ = ns.Do(func() error { panic("boom") })
	}()
	if after := nsInode(t, "/proc/thread-self/ns/net"); after != before {
		t.Errorf("after panicking Do: namespace inode %d, want %d", after, before)
	}
}

func TestVethAddressesNeighborRoute(t *testing.T) {
	tb := netnstest.New(t)
	ctx := context.Background()
	a, err := tb.Namespace(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := tb.Namespace(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	macA := net.HardwareAddr{2, 0xfc, 0, 0, 1, 0xa}
	macB := net.HardwareAddr{2, 0xfc, 0, 0, 1, 0xb}
	_, err = tb.Veth(ctx,
		netns.LinkConfig{NS: a, Name: "eth0", MAC: macA, MTU: 9000, Addrs: []netip.Prefix{netip.MustParsePrefix("10.77.0.1/24")}},
		netns.LinkConfig{NS: b, Name: "eth0", MAC: macB, MTU: 9000, Addrs: []netip.Prefix{netip.MustParsePrefix("10.77.0.2/24")}, DisableIPv6: true})
	if err != nil {
		t.Fatal(err)
	}
	out, err := a.IP(ctx, "-o", "link", "show", "dev", "eth0")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mtu 9000", macA.String(), "UP"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("link a:eth0 lacks %q: %s", want, out)
		}
	}
	// Static neighbours: no ARP needed. A loopback-routed address on b
	// reached through a route on a.
	if err := a.AddNeighbor(ctx, "eth0", netip.MustParseAddr("10.77.0.2"), macB); err != nil {
		t.Fatal(err)
	}
	if err := b.AddNeighbor(ctx, "eth0", netip.MustParseAddr("10.77.0.1"), macA); err != nil {
		t.Fatal(err)
	}
	if _, err := b.IP(ctx, "addr", "add", "10.99.0.1/32", "dev", "lo"); err != nil {
		t.Fatal(err)
	}
	if err := a.AddRoute(ctx, netns.Route{Dst: netip.MustParsePrefix("10.99.0.0/24"), Via: netip.MustParseAddr("10.77.0.2")}); err != nil {
		t.Fatal(err)
	}
	neigh, err := a.IP(ctx, "neigh", "show", "dev", "eth0")
	if err != nil || !strings.Contains(string(neigh), "PERMANENT") {
		t.Errorf("neighbour entry missing: %s %v", neigh, err)
	}
	if v6, err := os.ReadFile("/proc/sys/net/ipv6/conf/all/disable_ipv6"); err == nil {
		var got string
		_ = b.Do(func() error {
			d, err := os.ReadFile("/proc/sys/net/ipv6/conf/eth0/disable_ipv6")
			got = strings.TrimSpace(string(d))
			return err
		})
		if got != "1" {
			t.Errorf("b:eth0 disable_ipv6 = %q (host all=%q), want 1", got, strings.TrimSpace(string(v6)))
		}
	}

	// UDP from a to 10.99.0.1 (routed via b), sockets made inside each
	// namespace with Do.
	var srv *net.UDPConn
	if err := b.Do(func() error {
		var err error
		srv, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 99, 0, 1), Port: 4791})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var cli *net.UDPConn
	if err := a.Do(func() error {
		var err error
		cli, err = net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(10, 99, 0, 1), Port: 4791})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	_ = srv.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	n, from, err := srv.ReadFromUDP(buf)
	if err != nil {
		t.Fatalf("no datagram through veth and route: %v", err)
	}
	if string(buf[:n]) != "hello" || !from.IP.Equal(net.IPv4(10, 77, 0, 1)) {
		t.Errorf("got %q from %v", buf[:n], from)
	}
}

func TestShapers(t *testing.T) {
	tb := netnstest.New(t)
	ctx := context.Background()
	a, err := tb.Namespace(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Veth(ctx, netns.LinkConfig{NS: a, Name: "x0"}, netns.LinkConfig{NS: a, Name: "x1"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		apply func() error
		want  string
	}{
		{"tbf", func() error { return a.SetTBF(ctx, "x0", netns.TBF{RateBitsPerSec: 100e6}) }, "qdisc tbf"},
		{"htb", func() error { return a.SetHTB(ctx, "x0", 50e6, 0) }, "qdisc htb 1:"},
		{"clear", func() error { return a.ClearQdisc(ctx, "x0") }, "qdisc noqueue"},
		{"clear-again", func() error { return a.ClearQdisc(ctx, "x0") }, "qdisc noqueue"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.apply(); err != nil {
				t.Fatal(err)
			}
			out, err := a.TC(ctx, "qdisc", "show", "dev", "x0")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("qdisc show = %q, want %q", out, tc.want)
			}
		})
	}
	if err := a.SetTBF(ctx, "x0", netns.TBF{}); err == nil {
		t.Error("tbf without a rate accepted")
	}
}

func TestCleanupRemovesEverything(t *testing.T) {
	netnstest.RequireRoot(t)
	ctx := context.Background()
	tb, err := netns.NewTestbed(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tb.Close() }) // in case of an early failure
	a, err := tb.Namespace(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	hostEnd := tb.IfName("fch")
	if _, err := tb.Veth(ctx, netns.LinkConfig{Name: hostEnd, DisableIPv6: true}, netns.LinkConfig{NS: a, Name: "eth0"}); err != nil {
		t.Fatal(err)
	}
	host2 := tb.IfName("fcx")
	if _, err := tb.Veth(ctx, netns.LinkConfig{Name: host2}, netns.LinkConfig{Name: tb.IfName("fcy")}); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Namespace(ctx, "a"); err == nil {
		t.Error("duplicate short name accepted")
	}
	if err := tb.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := tb.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, err := os.Stat(a.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("namespace %s still exists: %v", a, err)
	}
	for _, l := range []string{hostEnd, host2, tb.IfName("fcy")} {
		if _, err := net.InterfaceByName(l); err == nil {
			t.Errorf("host interface %s still exists", l)
		}
	}
	if _, err := tb.Namespace(ctx, "b"); err == nil {
		t.Error("Namespace after Close succeeded")
	}
}

func TestErrorsNameCommandAndStderr(t *testing.T) {
	tb := netnstest.New(t)
	ctx := context.Background()
	a, err := tb.Namespace(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.IP(ctx, "link", "set", "dev", "doesnotexist0", "up")
	var ce *netns.CmdError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not a *CmdError", err)
	}
	if !strings.Contains(ce.Cmd, "link set dev doesnotexist0 up") || !strings.Contains(ce.Stderr, "doesnotexist0") {
		t.Errorf("error lacks command or stderr: %v", err)
	}
	if !strings.Contains(err.Error(), ce.Stderr) {
		t.Errorf("Error() lacks stderr: %v", err)
	}
	out, err := a.Exec(ctx, "/usr/sbin/ip", "-o", "link", "show", "lo")
	if err != nil || !strings.Contains(string(out), "lo:") {
		t.Errorf("Exec: %q, %v", out, err)
	}
	if _, err := netns.Open("fcnp-no-such-namespace"); err == nil {
		t.Error("Open of a missing namespace succeeded")
	}
	if _, err := netns.Create(ctx, "bad/name"); err == nil {
		t.Error("Create accepted a name with a slash")
	}
	if err := netns.Host().Delete(ctx); err == nil {
		t.Error("deleting the host namespace was accepted")
	}
}

func TestSweepStale(t *testing.T) {
	netnstest.RequireRoot(t)
	ctx := context.Background()
	dead := 0
	for pid := 4194000; pid > 4000000; pid-- { // pick a pid that does not exist
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); errors.Is(err, os.ErrNotExist) {
			dead = pid
			break
		}
	}
	if dead == 0 {
		t.Skip("no free pid found")
	}
	tb, err := netns.NewTestbed(nil)
	if err != nil {
		t.Fatal(err)
	}
	stale := fmt.Sprintf("%s%d-%s-stale", netns.NamePrefix, dead, tb.ID())
	ns, err := netns.Create(ctx, stale)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Delete(context.Background()) })
	live := netnstest.New(t)
	liveNS, err := live.Namespace(ctx, "live")
	if err != nil {
		t.Fatal(err)
	}
	deleted, err := netns.SweepStale(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range deleted {
		found = found || d == stale
		if d == liveNS.Name() {
			t.Errorf("sweep deleted a live namespace %s", d)
		}
	}
	if !found {
		t.Errorf("sweep did not delete %s (deleted %v)", stale, deleted)
	}
	if _, err := os.Stat(liveNS.Path()); err != nil {
		t.Errorf("live namespace gone: %v", err)
	}
}

// TestDialContext: a connection opened with DialContext starts inside the
// namespace, so it reaches a listener there on an address only the namespace
// has (its own loopback), and keeps working from any goroutine.
func TestDialContext(t *testing.T) {
	tb := netnstest.New(t)
	ctx := context.Background()
	ns, err := tb.Namespace(ctx, "dial")
	if err != nil {
		t.Fatal(err)
	}
	var lis net.Listener
	if err := ns.Do(func() error {
		var err error
		lis, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	go func() {
		c, err := lis.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c)
	}()
	c, err := ns.DialContext(ctx, "tcp", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := io.ReadFull(c, b); err != nil || b[0] != 'x' {
		t.Fatalf("echo through the namespace: %q, %v", b, err)
	}
	// A namespace without a listener on that address refuses it.
	other, err := tb.Namespace(ctx, "dial2")
	if err != nil {
		t.Fatal(err)
	}
	if c2, err := other.DialContext(ctx, "tcp", lis.Addr().String()); err == nil {
		c2.Close()
		t.Fatal("dial from a namespace without the listener succeeded")
	}
}
