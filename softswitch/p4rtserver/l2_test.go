package p4rtserver

import (
	"bytes"
	"slices"
	"testing"

	"github.com/fastcnp/fastcnp/p4src"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"google.golang.org/grpc/codes"
)

var (
	bcastMAC = b(0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	hostMAC  = b(0x02, 0, 0, 0, 0, 0x02)
)

func l2Ent(mac []byte, a *p4v1.TableAction) *p4v1.Entity {
	return te(p4src.TableL2Forward, 0, a, exact(1, mac))
}

// l2Frame is a 60-byte Ethernet frame to dst with EtherType et (body zero).
func l2Frame(dst []byte, et uint16) []byte {
	f := make([]byte, 60)
	copy(f, dst)
	copy(f[6:], []byte{0x02, 0, 0, 0, 0, 0x01})
	f[12], f[13] = byte(et>>8), byte(et)
	f[20] = 0x5a // a payload byte to compare
	return f
}

// receive sends frame in on port and returns the frames forwarded by it, by port
// (each port's frames in order). LocalDataPlane forwards synchronously, so every
// copy is in h.fwd when Receive returns.
func (h *harness) receive(t *testing.T, frame []byte, port uint16) map[uint16][][]byte {
	t.Helper()
	if err := h.dp.Receive(ctxT(t), frame, port); err != nil {
		t.Fatalf("receive: %v", err)
	}
	out := map[uint16][][]byte{}
	for {
		select {
		case f := <-h.fwd:
			out[f.port] = append(out[f.port], f.frame)
		default:
			return out
		}
	}
}

// ports lists the output port of every copy, sorted.
func ports(m map[uint16][][]byte) []uint16 {
	var ps []uint16
	for p, fs := range m {
		for range fs {
			ps = append(ps, p)
		}
	}
	slices.Sort(ps)
	return ps
}

// TestL2ForwardThroughServer: l2_forward entries and multicast groups written over
// P4Runtime steer the data path: a broadcast floods the group but its ingress port,
// a unicast goes to its port, both unchanged; group changes, deletes and a
// rolled-back batch take effect (or not) in the data path too.
func TestL2ForwardThroughServer(t *testing.T) {
	h, _ := ready(t)
	h.mustWrite(t,
		ins(mcastEnt(1, replica(1, 0), replica(2, 0), replica(3, 0))),
		ins(l2Ent(bcastMAC, act(p4src.ActionL2Flood, param(1, b(1))))),
		ins(l2Ent(hostMAC, act(p4src.ActionL2SetPort, param(1, b(2))))),
	)
	arp := l2Frame(bcastMAC, 0x0806)
	steps := []struct {
		name   string
		write  []*p4v1.Update // before the packet
		frame  []byte
		in     uint16
		want   []uint16 // output ports, sorted, one per copy
		failed bool     // the write fails (ROLLBACK_ON_ERROR)
	}{
		{"broadcast from port 1", nil, arp, 1, []uint16{2, 3}, false},
		{"broadcast from port 3", nil, arp, 3, []uint16{1, 2}, false},
		{"unicast to the host MAC", nil, l2Frame(hostMAC, 0x86dd), 1, []uint16{2}, false},
		{"unknown MAC", nil, l2Frame(b(0x02, 0, 0, 0, 0, 0x77), 0x86dd), 1, nil, false},
		{"group modified", []*p4v1.Update{mod(mcastEnt(1, replica(1, 0), replica(4, 0), replica(4, 1)))}, arp, 1, []uint16{4, 4}, false},
		{"rolled back: unchanged", []*p4v1.Update{mod(mcastEnt(1, replica(5, 0))), del(mcastEnt(9))}, arp, 1, []uint16{4, 4}, true},
		{"rolled-back delete: unchanged", []*p4v1.Update{del(mcastEnt(1)), del(mcastEnt(9))}, arp, 1, []uint16{4, 4}, true},
		{"group deleted", []*p4v1.Update{del(mcastEnt(1))}, arp, 1, nil, false},
		{"group inserted again", []*p4v1.Update{ins(mcastEnt(1, replica(6, 0)))}, arp, 1, []uint16{6}, false},
	}
	for _, st := range steps {
		if st.write != nil {
			err := h.writeRollback(t, st.write...)
			if st.failed != (err != nil) {
				t.Fatalf("%s: write error %v, want failure %v", st.name, err, st.failed)
			}
			if st.failed {
				if cs := updateErrors(t, err); cs[len(cs)-1] != codes.NotFound {
					t.Fatalf("%s: codes %v", st.name, cs)
				}
			}
		}
		out := h.receive(t, st.frame, st.in)
		if got := ports(out); !slices.Equal(got, st.want) {
			t.Errorf("%s: copies on ports %v, want %v", st.name, got, st.want)
		}
		for p, fs := range out {
			for _, f := range fs {
				if !bytes.Equal(f, st.frame) {
					t.Errorf("%s: frame on port %d changed: %x", st.name, p, f)
				}
			}
		}
	}
	// A group with an out-of-range port is refused whole, and the data path keeps
	// the old one.
	if err := h.write(t, 10, mod(mcastEnt(1, replica(1, 0), replica(600, 0)))); err == nil {
		t.Fatal("port 600 accepted")
	}
	if got := ports(h.receive(t, arp, 1)); !slices.Equal(got, []uint16{6}) {
		t.Errorf("after a refused modify: %v", got)
	}
}
