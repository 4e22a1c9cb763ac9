package softswitch

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/afpacket"
	"github.com/fastcnp/fastcnp/internal/netns"
	"github.com/fastcnp/fastcnp/internal/netns/netnstest"
)

// mac returns 02:5e:00:00:a:b (switch ports) or 02:aa:00:00:a:b (hosts).
func mac(host bool, a, b byte) net.HardwareAddr {
	if host {
		return net.HardwareAddr{0x02, 0xaa, 0, 0, a, b}
	}
	return net.HardwareAddr{0x02, 0x5e, 0, 0, a, b}
}

// nsSwitch starts a switch whose ports live in namespace ns (opened there; the
// P4Runtime server listens on the host's loopback) and returns it with its
// controller. cfg.Log defaults to a quiet test logger.
func nsSwitch(t *testing.T, ns *netns.NS, deviceID uint64, cfg Config) (*Switch, *controller) {
	t.Helper()
	lis := localListener(t)
	cfg.DeviceID = deviceID
	cfg.GRPCListener = lis
	if cfg.Log == nil {
		cfg.Log = testLog()
	}
	cfg.PortOptions.DisableOffloads = true
	var sw *Switch
	err := ns.Do(func() error {
		var err error
		sw, err = New(cfg)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	runSwitch(t, sw)
	return sw, dialController(t, lis.Addr().String(), deviceID)
}

// TestPingThroughSwitches: two hosts ping each other through one switch and
// through two switches in a row. The controller pushes the pipeline and the routes
// over P4Runtime; hosts reach the gateway by static neighbour entries pointing at
// the MAC the routes rewrite from. The reply's TTL shows one decrement per switch.
func TestPingThroughSwitches(t *testing.T) {
	for _, nsw := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d-switches", nsw), func(t *testing.T) {
			checkGoroutines(t)
			tb := netnstest.New(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			h1, err := tb.Namespace(ctx, "h1")
			must(err)
			h2, err := tb.Namespace(ctx, "h2")
			must(err)
			sws := make([]*netns.NS, nsw)
			for i := range sws {
				sws[i], err = tb.Namespace(ctx, fmt.Sprintf("sw%d", i+1))
				must(err)
			}
			pfx1, pfx2 := netip.MustParsePrefix("10.0.1.0/24"), netip.MustParsePrefix("10.0.2.0/24")
			gw1, gw2 := netip.MustParseAddr("10.0.1.254"), netip.MustParseAddr("10.0.2.254")
			// h1.eth0 - sw1.p1 ; swI.p2 - swI+1.p1 ; swN.p2 - h2.eth0
			_, err = tb.Veth(ctx,
				netns.LinkConfig{NS: h1, Name: "eth0", MAC: mac(true, 1, 1), Addrs: []netip.Prefix{netip.MustParsePrefix("10.0.1.1/24")}, DisableIPv6: true},
				netns.LinkConfig{NS: sws[0], Name: "p1", MAC: mac(false, 1, 1), DisableIPv6: true})
			must(err)
			for i := 0; i+1 < nsw; i++ {
				_, err = tb.Veth(ctx,
					netns.LinkConfig{NS: sws[i], Name: "p2", MAC: mac(false, byte(i+1), 2), DisableIPv6: true},
					netns.LinkConfig{NS: sws[i+1], Name: "p1", MAC: mac(false, byte(i+2), 1), DisableIPv6: true})
				must(err)
			}
			_, err = tb.Veth(ctx,
				netns.LinkConfig{NS: sws[nsw-1], Name: "p2", MAC: mac(false, byte(nsw), 2), DisableIPv6: true},
				netns.LinkConfig{NS: h2, Name: "eth0", MAC: mac(true, 2, 1), Addrs: []netip.Prefix{netip.MustParsePrefix("10.0.2.1/24")}, DisableIPv6: true})
			must(err)
			for _, h := range []*netns.NS{h1, h2} {
				must(h.Do(func() error { return afpacket.DisableOffloads("eth0") }))
			}
			// Hosts: the gateway's MAC is the MAC the first switch's route rewrites from.
			must(h1.AddNeighbor(ctx, "eth0", gw1, mac(false, 1, 1)))
			must(h1.AddRoute(ctx, netns.Route{Dst: pfx2, Via: gw1, Dev: "eth0"}))
			must(h2.AddNeighbor(ctx, "eth0", gw2, mac(false, byte(nsw), 2)))
			must(h2.AddRoute(ctx, netns.Route{Dst: pfx1, Via: gw2, Dev: "eth0"}))

			switches := make([]*Switch, nsw)
			for i := range nsw {
				cfg := Config{Ports: []PortConfig{{Num: 1, Ifname: "p1"}, {Num: 2, Ifname: "p2"}}}
				sw, ctl := nsSwitch(t, sws[i], uint64(i+1), cfg)
				switches[i] = sw
				me1, me2 := mac(false, byte(i+1), 1), mac(false, byte(i+1), 2)
				// Towards h1 (port 1): the next hop is h1 or the previous switch's p2.
				next1 := mac(true, 1, 1)
				if i > 0 {
					next1 = mac(false, byte(i), 2)
				}
				next2 := mac(true, 2, 1)
				if i+1 < nsw {
					next2 = mac(false, byte(i+2), 1)
				}
				ctl.route(pfx1, 1, me1, next1)
				ctl.route(pfx2, 2, me2, next2)
			}
			ttl := fmt.Sprintf("ttl=%d", 64-nsw)
			for _, c := range []struct {
				from *netns.NS
				to   string
			}{{h1, "10.0.2.1"}, {h2, "10.0.1.1"}} {
				out, err := c.from.Exec(ctx, "ping", "-c", "3", "-i", "0.2", "-W", "10", c.to)
				if err != nil {
					t.Fatalf("ping %s: %v\n%s", c.to, err, out)
				}
				if !strings.Contains(string(out), " 3 received") || !strings.Contains(string(out), ttl) {
					t.Errorf("ping %s: want 3 replies with %s:\n%s", c.to, ttl, out)
				}
				for _, l := range strings.Split(string(out), "\n") {
					if strings.Contains(l, "received") || strings.HasPrefix(l, "rtt") {
						t.Logf("ping %s (%s): %s", c.to, ttl, l)
					}
				}
			}
			for i, sw := range switches {
				d := sw.Dump()
				// 6 echo requests and 6 replies cross every switch.
				if d.Runtime.Dequeued < 12 || d.TM.TotalDroppedPkts != 0 {
					t.Errorf("switch %d: dequeued %d, TM drops %d", i+1, d.Runtime.Dequeued, d.TM.TotalDroppedPkts)
				}
			}
		})
	}
}
