//go:build linux

package afpacket

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/internal/netns"
	"github.com/fastcnp/fastcnp/internal/netns/netnstest"
)

var (
	macA = net.HardwareAddr{0x02, 0xfc, 0x00, 0x00, 0x00, 0x0a}
	macB = net.HardwareAddr{0x02, 0xfc, 0x00, 0x00, 0x00, 0x0b}
)

// pair is two namespaces joined by the veth pair a:p0 <-> b:p0, with a port
// open on each end.
type pair struct {
	nsA, nsB *netns.NS
	a, b     *Port
}

// checkGoroutines records the goroutine count now and, at cleanup (after
// everything registered later has been closed), fails the test if the
// count has not come back to it.
func checkGoroutines(t testing.TB) {
	t.Helper()
	base := runtime.NumGoroutine()
	t.Cleanup(func() {
		var n int
		for i := 0; i < 200; i++ { // up to 2 s for exiting goroutines to finish
			if n = runtime.NumGoroutine(); n <= base {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		buf := make([]byte, 1<<16)
		t.Errorf("goroutine leak: %d goroutines, baseline %d\n%s", n, base, buf[:runtime.Stack(buf, true)])
	})
}

// newPair builds the testbed. linkMTU 0 keeps 1500.
func newPair(t testing.TB, linkMTU int, optsA, optsB Options) *pair {
	t.Helper()
	tb := netnstest.New(t)
	ctx := context.Background()
	nsA, err := tb.Namespace(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	nsB, err := tb.Namespace(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	_, err = tb.Veth(ctx,
		netns.LinkConfig{NS: nsA, Name: "p0", MAC: macA, MTU: linkMTU, DisableIPv6: true},
		netns.LinkConfig{NS: nsB, Name: "p0", MAC: macB, MTU: linkMTU, DisableIPv6: true})
	if err != nil {
		t.Fatal(err)
	}
	return &pair{nsA: nsA, nsB: nsB, a: openIn(t, nsA, "p0", optsA), b: openIn(t, nsB, "p0", optsB)}
}

// diag describes both links and ports, for failure messages.
func (p *pair) diag() string {
	var sb strings.Builder
	for _, e := range []struct {
		ns   *netns.NS
		port *Port
	}{{p.nsA, p.a}, {p.nsB, p.b}} {
		out, err := e.ns.IP(context.Background(), "-s", "-o", "link", "show", "dev", "p0")
		fmt.Fprintf(&sb, "\n%s: %s %v\n  port stats %+v", e.ns, bytes.TrimSpace(out), err, e.port.Stats())
	}
	return sb.String()
}

func openIn(t testing.TB, ns *netns.NS, ifname string, opts Options) *Port {
	t.Helper()
	var p *Port
	err := ns.Do(func() error {
		var err error
		p, err = Open(ifname, opts)
		return err
	})
	if err != nil {
		t.Fatalf("open %s in %s: %v", ifname, ns, err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return p
}

// frame builds dst|src|etherType|seq(4)|pattern up to size bytes.
func frame(dst, src net.HardwareAddr, etherType uint16, seq uint32, size int) []byte {
	f := make([]byte, size)
	copy(f, dst)
	copy(f[6:], src)
	binary.BigEndian.PutUint16(f[12:], etherType)
	if size >= 18 {
		binary.BigEndian.PutUint32(f[14:], seq)
	}
	for i := 18; i < size; i++ {
		f[i] = byte(i*7 + int(seq))
	}
	return f
}

// pfcFrame is an 802.1Qbb PFC frame padded to 64 bytes: all eight classes
// enabled, quanta 0xffff for each.
func pfcFrame(src net.HardwareAddr) []byte {
	f := make([]byte, 64)
	copy(f, []byte{0x01, 0x80, 0xc2, 0x00, 0x00, 0x01})
	copy(f[6:], src)
	binary.BigEndian.PutUint16(f[12:], 0x8808)
	binary.BigEndian.PutUint16(f[14:], 0x0101) // PFC opcode
	binary.BigEndian.PutUint16(f[16:], 0x00ff) // class-enable vector
	for i := 0; i < 8; i++ {
		binary.BigEndian.PutUint16(f[18+2*i:], 0xffff)
	}
	return f
}

// recvFrom reads until want frames with source MAC src have arrived or the
// safety timeout expires (a failure bound, not a performance assertion),
// returning copies of them.
func recvFrom(t testing.TB, p *Port, src net.HardwareAddr, want int, timeout time.Duration) [][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	msgs := p.NewBatch(16)
	var got [][]byte
	for len(got) < want {
		n, err := p.ReadBatch(ctx, msgs)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return got
			}
			t.Fatalf("read: %v", err)
		}
		for _, m := range msgs[:n] {
			f := m.Buf[:m.N]
			if len(f) >= 12 && bytes.Equal(f[6:12], src) {
				got = append(got, bytes.Clone(f))
			}
		}
	}
	return got
}
