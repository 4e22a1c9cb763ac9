package softswitch

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/model/tm"
	"github.com/fastcnp/fastcnp/wire"
)

// gateLink holds the first PFC XOFF written to it until release is closed, as a
// goroutine preempted between Switch.mu.Unlock and its write would.
type gateLink struct {
	*memLink
	once    sync.Once
	held    chan struct{}
	release chan struct{}
}

func (g *gateLink) WriteBatch(ctx context.Context, frames [][]byte) (int, error) {
	var f wire.Frame
	if len(frames) == 1 && wire.Parse(frames[0], wire.ParseOptions{}, &f) == nil && f.Has(wire.LayerPFC) && f.PFC.Time[3] != 0 {
		g.once.Do(func() { close(g.held); <-g.release })
	}
	return g.memLink.WriteBatch(ctx, frames)
}

// TestPFCOrderOnTheWire: an XOFF made by an RX goroutine must not reach the wire
// after the XON that ends it, however late that goroutine writes it.
func TestPFCOrderOnTheWire(t *testing.T) {
	checkGoroutines(t)
	l1, l2 := newMemLink(), newMemLink()
	g1 := &gateLink{memLink: l1, held: make(chan struct{}), release: make(chan struct{})}
	lis := localListener(t)
	cfg := Config{DeviceID: 7, GRPCListener: lis, Log: testLog(), Ports: []PortConfig{
		{Num: 1, Ifname: "mem1", HeadroomBytes: 100_000, Open: func() (Link, net.HardwareAddr, error) { return g1, swMAC1, nil }},
		{Num: 2, Ifname: "mem2", RateBps: 100_000_000, Open: func() (Link, net.HardwareAddr, error) { return l2, swMAC2, nil }},
	}}
	cfg.TM.Threshold, cfg.TM.XoffBytes = tm.ThresholdStatic, 4000
	sw, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runSwitch(t, sw)
	ctl := dialController(t, lis.Addr().String(), 7)
	ctl.route(netip.MustParsePrefix("10.0.2.0/24"), 2, swMAC2, hostMAC2)
	ctl.trafficClass(26, 3, true)
	stopHold := holdPFC(t, l2)
	waitDump(t, sw, "egress (2, 3) paused", func(d *Dump) bool { return d.TM.Ports[1].Egress[3].Paused })
	var burst [][]byte
	for i := range 6 {
		burst = append(burst, roce(t, hostIP1, hostIP2, hostMAC1, swMAC1, 26, wire.ECT0, uint32(i), 1000))
	}
	l1.Inject(burst...)
	select {
	case <-g1.held:
	case <-time.After(10 * time.Second):
		t.Fatal("no XOFF written")
	}
	stopHold()
	injectPFC(t, l2, 0)
	l2.Wait(t, 10*time.Second, "the frames", func(s []sentFrame) bool { return len(s) >= 6 })
	// The XON is made by the goroutine that dequeued while the XOFF's writer is
	// still held; a correct switch keeps the XON back until the XOFF is out.
	// Give it a moment to (wrongly) reach the wire first (a guard, not a
	// timing assertion: the order is checked below).
	waitDump(t, sw, "XON made", func(d *Dump) bool { return d.TM.Ports[0].Ingress[3].PFCTxXon >= 1 })
	for deadline := time.Now().Add(200 * time.Millisecond); len(pfcOf(t, l1.Sent())) == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	close(g1.release)
	s1 := l1.Wait(t, 10*time.Second, "XOFF and XON", func(s []sentFrame) bool { return len(pfcOf(t, s)) >= 2 })
	if p := pfcOf(t, s1); p[0].Time[3] == 0 {
		t.Errorf("port 1 sent %+v: the XON reached the wire before the XOFF it ends", p)
	}
}
