package softswitch

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/controller/p4rt"
)

// l2Frame is a 60-byte frame from src to dst with EtherType et and a marker byte.
func l2Frame(dst, src net.HardwareAddr, et uint16, marker byte) []byte {
	f := make([]byte, 60)
	copy(f, dst)
	copy(f[6:], src)
	f[12], f[13], f[20] = byte(et>>8), byte(et), marker
	return f
}

// TestL2FloodAndUnicast: frames that are not IPv4 are bridged by l2_forward: the
// broadcast floods multicast group 1 (ports 1 and 2) but never back to its ingress
// port, a unicast goes to its host's port; both leave unchanged.
func TestL2FloodAndUnicast(t *testing.T) {
	checkGoroutines(t)
	m := newMemSwitch(t, nil)
	bcast := net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	g, err := p4rt.MulticastGroup(1, p4rt.Replica{Port: 1}, p4rt.Replica{Port: 2})
	m.ctl.write("flood group", g, err)
	e, err := m.ctl.info.TableEntry("l2_forward").Match(p4rt.Exact("dst_addr", bcast)).
		Action("l2_flood", p4rt.P("mcast_grp", 1)).Entity()
	m.ctl.write("broadcast entry", e, err)
	e, err = m.ctl.info.TableEntry("l2_forward").Match(p4rt.Exact("dst_addr", hostMAC2)).
		Action("l2_set_port", p4rt.P("port", 2)).Entity()
	m.ctl.write("host 2 entry", e, err)

	steps := []struct {
		name       string
		in         *memLink
		frame      []byte
		out, quiet *memLink
	}{
		{"ARP broadcast from port 1", m.l1, l2Frame(bcast, hostMAC1, 0x0806, 1), m.l2, m.l1},
		{"ARP broadcast from port 2", m.l2, l2Frame(bcast, hostMAC2, 0x0806, 2), m.l1, m.l2},
		{"IPv6 unicast to host 2", m.l1, l2Frame(hostMAC2, hostMAC1, 0x86dd, 3), m.l2, m.l1},
	}
	for i, st := range steps {
		before1, before2 := len(st.out.Sent()), len(st.quiet.Sent())
		st.in.Inject(st.frame)
		sent := st.out.Wait(t, 10*time.Second, st.name, func(s []sentFrame) bool { return len(s) > before1 })
		if got := sent[before1].data; !bytes.Equal(got, st.frame) {
			t.Errorf("%s: sent %x, want %x unchanged", st.name, got, st.frame)
		}
		waitDrained(t, m.sw, uint64(i+1)) // a copy back would be on the link by now
		if n := len(st.quiet.Sent()); n != before2 {
			t.Errorf("%s: %d frames back on the ingress port", st.name, n-before2)
		}
		if n := len(st.out.Sent()); n != before1+1 {
			t.Errorf("%s: %d copies out, want 1", st.name, n-before1)
		}
	}
	if d := m.sw.Dump(); d.Runtime.MulticastCopies != 2 || d.Runtime.IngressDropped != 0 {
		t.Errorf("runtime counters: multicast_copies %d ingress_dropped %d, want 2 and 0",
			d.Runtime.MulticastCopies, d.Runtime.IngressDropped)
	}
}
