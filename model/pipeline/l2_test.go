package pipeline

import (
	"bytes"
	"slices"
	"testing"

	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/wire"
)

// L2 topology on top of newTest: S behind port 1, R behind port 2, W behind port 3;
// broadcast floods to group 1 = ports 1, 2, 3 and a second instance on port 2.
var (
	macBcast   = wire.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	macW       = wire.MAC{0x02, 0, 0, 0, 0, 0x03}
	macBlocked = wire.MAC{0x02, 0, 0, 0, 0, 0x66} // l2_forward entry with action drop
	macNoGroup = wire.MAC{0x01, 0, 0x5e, 0, 0, 0x09}
	macPFC     = wire.MAC{0x01, 0x80, 0xc2, 0, 0, 0x01}
)

const (
	portW      = 3
	floodGroup = 1
)

var floodReplicas = []Replica{{1, 0}, {2, 0}, {3, 0}, {2, 1}}

func l2Entry(mac wire.MAC, action uint32, param uint64) *TableEntry {
	e := &TableEntry{TableID: p4src.TableL2Forward, Match: []FieldMatch{{FieldID: 1, Value: macU64(mac)}}, Action: Action{ID: action}}
	if action != p4src.ActionDrop {
		e.Action.Params = []Param{{1, param}}
	}
	return e
}

// newL2Test is newTest with l2_forward entries (R, W, broadcast, a drop entry, a flood
// to a group the PRE lacks, the PFC address) and multicast group 1.
func newL2Test(t testing.TB) *Pipeline {
	t.Helper()
	p := newTest(t, p4src.PortModeFastcnp)
	for _, e := range []*TableEntry{
		l2Entry(macR, p4src.ActionL2SetPort, portR),
		l2Entry(macW, p4src.ActionL2SetPort, portW),
		l2Entry(macBcast, p4src.ActionL2Flood, floodGroup),
		l2Entry(macBlocked, p4src.ActionDrop, 0),
		l2Entry(macNoGroup, p4src.ActionL2Flood, 9),
		l2Entry(macPFC, p4src.ActionL2SetPort, portR),
	} {
		mustOK(t, p.InsertEntry(e))
	}
	mustOK(t, p.InsertMulticastGroup(MulticastGroup{ID: floodGroup, Replicas: floodReplicas}))
	return p
}

// l2Frame builds an Ethernet frame (optionally 802.1Q-tagged) with the given
// EtherType and body, padded to 60 bytes.
func l2Frame(dst wire.MAC, etherType uint16, vid uint16, body []byte) []byte {
	b := make([]byte, 0, 64+len(body))
	b = append(b, dst[:]...)
	b = append(b, macS[:]...)
	if vid != 0 {
		b = append(b, 0x81, 0x00, byte(3<<5|vid>>8), byte(vid)) // PCP 3: lossless if it were classified
	}
	b = append(b, byte(etherType>>8), byte(etherType))
	b = append(b, body...)
	for len(b) < 60 {
		b = append(b, 0)
	}
	return b
}

// arpRequest is an ARP request body: who has 10.0.1.2, tell 10.0.0.1.
var arpRequest = []byte{0, 1, 8, 0, 6, 4, 0, 1, 2, 0, 0, 0, 0, 1, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 10, 0, 1, 2}

// ipv6UDP is an IPv6 header (fe80::1 -> fe80::2, UDP, hop limit 64) and 8 bytes of UDP.
var ipv6UDP = []byte{0x60, 0, 0, 0, 0, 8, 17, 64,
	0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
	0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2,
	0x13, 0x88, 0x13, 0x89, 0, 8, 0xab, 0xcd}

func TestBridge(t *testing.T) {
	other := pfcFrame(t, 8, 3, 1)
	other[15] = 0x02 // opcode 0x0102: other MAC control, parsed, never forwarded
	unrouted := dataSR(100)
	unrouted.dst = wire.Addr4{10, 9, 9, 9} // no route; its destination MAC (the switch's) is irrelevant
	tests := []struct {
		name     string
		frame    []byte
		in       uint16
		verdict  Verdict
		reason   DropReason
		port     uint16    // VerdictForward
		replicas []Replica // VerdictMulticast
		dropped  uint64    // dropped[in] afterwards
	}{
		{"ARP broadcast floods, not back to port 1", l2Frame(macBcast, 0x0806, 0, arpRequest), portS,
			VerdictMulticast, DropNone, 0, []Replica{{2, 0}, {3, 0}, {2, 1}}, 0},
		{"ARP broadcast from port 3", l2Frame(macBcast, 0x0806, 0, arpRequest), portW,
			VerdictMulticast, DropNone, 0, []Replica{{1, 0}, {2, 0}, {2, 1}}, 0},
		{"ARP broadcast from a port outside the group", l2Frame(macBcast, 0x0806, 0, arpRequest), 7,
			VerdictMulticast, DropNone, 0, floodReplicas, 0},
		{"tagged ARP broadcast", l2Frame(macBcast, 0x0806, 10, arpRequest), portS,
			VerdictMulticast, DropNone, 0, []Replica{{2, 0}, {3, 0}, {2, 1}}, 0},
		{"IPv6 unicast to R", l2Frame(macR, 0x86dd, 0, ipv6UDP), portS, VerdictForward, DropNone, portR, nil, 0},
		{"tagged IPv6 unicast to W", l2Frame(macW, 0x86dd, 20, ipv6UDP), portR, VerdictForward, DropNone, portW, nil, 0},
		{"unicast back to the ingress port is not pruned", l2Frame(macR, 0x86dd, 0, ipv6UDP), portR, VerdictForward, DropNone, portR, nil, 0},
		{"unknown MAC", l2Frame(wire.MAC{2, 0, 0, 0, 0, 0x77}, 0x88b5, 0, nil), portS, VerdictDrop, DropL2Miss, 0, nil, 1},
		{"drop entry", l2Frame(macBlocked, 0x0806, 0, arpRequest), portS, VerdictDrop, DropL2Miss, 0, nil, 1},
		{"flood to a group the PRE lacks", l2Frame(macNoGroup, 0x88b5, 0, nil), portS, VerdictMulticast, DropNone, 0, []Replica{}, 0},
		{"other MAC control with an entry for its address", other, portS, VerdictDrop, DropMACControl, 0, nil, 1},
		{"PFC with an entry for its address", pfcFrame(t, 8, 3, 1), portS, VerdictDrop, DropPFC, 0, nil, 0},
		{"IPv4 without a route is not bridged", unrouted.build(t), portS, VerdictDrop, DropNoRoute, 0, nil, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newL2Test(t)
			in := append([]byte(nil), tc.frame...)
			r := ingress(t, p, in, tc.in, 1000)
			if r.Verdict != tc.verdict || r.DropReason != tc.reason {
				t.Fatalf("verdict %d reason %d, want %d %d", r.Verdict, r.DropReason, tc.verdict, tc.reason)
			}
			if got := ctr(t, p, p4src.CounterDropped, int(tc.in)); got.Packets != tc.dropped || got.Bytes != tc.dropped*uint64(len(tc.frame)) {
				t.Errorf("dropped[%d] = %+v, want %d packets of %d bytes", tc.in, got, tc.dropped, len(tc.frame))
			}
			switch tc.verdict {
			case VerdictForward:
				if r.EgressPort != tc.port || r.Meta.EgressPort != tc.port {
					t.Errorf("egress port %d (meta %d), want %d", r.EgressPort, r.Meta.EgressPort, tc.port)
				}
			case VerdictMulticast:
				if !slices.Equal(r.Replicas, tc.replicas) {
					t.Errorf("replicas %v, want %v", r.Replicas, tc.replicas)
				}
			default:
				return
			}
			if !bytes.Equal(r.Frame, tc.frame) {
				t.Errorf("frame changed:\n got %x\nwant %x", r.Frame, tc.frame)
			}
			// Bridged frames are lossy priority 0: no accounting, nothing at egress.
			m := r.Meta
			if m.Lossless || m.Priority != 0 || m.HasIPv4 || m.IngressPort != tc.in || m.AcctLen != uint32(len(tc.frame)) {
				t.Errorf("meta %+v", m)
			}
			for _, port := range []uint16{tc.port, 2, 3} {
				m.EgressPort = port
				p.OnEnqueue(&m)
				if er := egress(t, p, r.Frame, &m, 2000); er.Marked || er.CNP || er.NumDigests != 0 {
					t.Errorf("egress on %d: %+v", port, er)
				}
			}
			if q := reg(t, p, p4src.RegPortQueueBytes, portR); q != 0 {
				t.Errorf("port_queue_bytes[R] = %d, want 0", q)
			}
		})
	}
}

// TestBridgeDefaultAction: l2_forward's default action decides a miss, as for any
// table (flood unknown unicast to group 1).
func TestBridgeDefaultAction(t *testing.T) {
	p := newL2Test(t)
	mustOK(t, p.SetDefaultAction(p4src.TableL2Forward, &Action{ID: p4src.ActionL2Flood, Params: []Param{{1, floodGroup}}}))
	r := ingress(t, p, l2Frame(wire.MAC{2, 0, 0, 0, 0, 0x77}, 0x88b5, 0, nil), portR, 0)
	if r.Verdict != VerdictMulticast || r.McastGroup != floodGroup || !slices.Equal(r.Replicas, []Replica{{1, 0}, {3, 0}}) {
		t.Errorf("verdict %d group %d replicas %v", r.Verdict, r.McastGroup, r.Replicas)
	}
	mustOK(t, p.ResetDefaultAction(p4src.TableL2Forward))
	if r := ingress(t, p, l2Frame(wire.MAC{2, 0, 0, 0, 0, 0x77}, 0x88b5, 0, nil), portR, 0); r.DropReason != DropL2Miss {
		t.Errorf("after reset: verdict %d reason %d", r.Verdict, r.DropReason)
	}
}

// TestMulticastGroupChangesApply: the data path sees modified and deleted groups.
func TestMulticastGroupChangesApply(t *testing.T) {
	p := newL2Test(t)
	arp := l2Frame(macBcast, 0x0806, 0, arpRequest)
	steps := []struct {
		name string
		op   func() error
		want []Replica
	}{
		{"modified to ports 1 and 5", func() error {
			return p.ModifyMulticastGroup(MulticastGroup{ID: floodGroup, Replicas: []Replica{{1, 0}, {5, 0}}})
		}, []Replica{{5, 0}}},
		{"deleted", func() error { return p.DeleteMulticastGroup(floodGroup) }, []Replica{}},
		{"inserted again", func() error {
			return p.InsertMulticastGroup(MulticastGroup{ID: floodGroup, Replicas: []Replica{{4, 2}}})
		}, []Replica{{4, 2}}},
	}
	for _, st := range steps {
		mustOK(t, st.op())
		r := ingress(t, p, arp, portS, 0)
		if r.Verdict != VerdictMulticast || !slices.Equal(r.Replicas, st.want) {
			t.Errorf("%s: verdict %d replicas %v, want %v", st.name, r.Verdict, r.Replicas, st.want)
		}
	}
}

func TestMulticastGroupAPI(t *testing.T) {
	many := make([]Replica, MaxReplicasPerGroup+1)
	for i := range many {
		many[i] = Replica{Port: uint16(i % p4src.NumPorts), Instance: uint32(i / p4src.NumPorts)}
	}
	tests := []struct {
		name string
		op   func(p *Pipeline) error
		want error // nil: success
	}{
		{"insert", func(p *Pipeline) error {
			return p.InsertMulticastGroup(MulticastGroup{ID: 2, Replicas: []Replica{{1, 0}}})
		}, nil},
		{"insert empty", func(p *Pipeline) error { return p.InsertMulticastGroup(MulticastGroup{ID: 2}) }, nil},
		{"insert ID 0", func(p *Pipeline) error { return p.InsertMulticastGroup(MulticastGroup{ID: 0}) }, ErrInvalidArgument},
		{"insert existing", func(p *Pipeline) error { return p.InsertMulticastGroup(MulticastGroup{ID: floodGroup}) }, ErrAlreadyExists},
		{"port 512", func(p *Pipeline) error {
			return p.InsertMulticastGroup(MulticastGroup{ID: 2, Replicas: []Replica{{p4src.NumPorts, 0}}})
		}, ErrInvalidArgument},
		{"repeated replica", func(p *Pipeline) error {
			return p.InsertMulticastGroup(MulticastGroup{ID: 2, Replicas: []Replica{{1, 0}, {1, 0}}})
		}, ErrInvalidArgument},
		{"same port, two instances", func(p *Pipeline) error {
			return p.InsertMulticastGroup(MulticastGroup{ID: 2, Replicas: []Replica{{1, 0}, {1, 1}}})
		}, nil},
		{"too many replicas", func(p *Pipeline) error { return p.InsertMulticastGroup(MulticastGroup{ID: 2, Replicas: many}) }, ErrResourceExhausted},
		{"modify absent", func(p *Pipeline) error { return p.ModifyMulticastGroup(MulticastGroup{ID: 2}) }, ErrNotFound},
		{"modify invalid", func(p *Pipeline) error {
			return p.ModifyMulticastGroup(MulticastGroup{ID: floodGroup, Replicas: []Replica{{600, 0}}})
		}, ErrInvalidArgument},
		{"delete absent", func(p *Pipeline) error { return p.DeleteMulticastGroup(2) }, ErrNotFound},
		{"read absent", func(p *Pipeline) error { _, err := p.ReadMulticastGroup(2); return err }, ErrNotFound},
		{"too many groups", func(p *Pipeline) error {
			for id := uint32(2); id <= MaxMulticastGroups; id++ {
				if err := p.InsertMulticastGroup(MulticastGroup{ID: id}); err != nil {
					return err
				}
			}
			return p.InsertMulticastGroup(MulticastGroup{ID: MaxMulticastGroups + 1})
		}, ErrResourceExhausted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newL2Test(t)
			err := tc.op(p)
			if tc.want == nil && err != nil || tc.want != nil && !isErr(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if tc.want != nil {
				// A refused write leaves group 1 as it was.
				g, err := p.ReadMulticastGroup(floodGroup)
				mustOK(t, err)
				if !slices.Equal(g.Replicas, floodReplicas) {
					t.Errorf("group 1 changed to %v", g.Replicas)
				}
			}
		})
	}
}

// TestMulticastGroupIsCopied: the pipeline keeps its own copy of the replicas, and
// hands out copies.
func TestMulticastGroupIsCopied(t *testing.T) {
	p := New(Options{})
	rs := []Replica{{1, 0}, {2, 0}}
	mustOK(t, p.InsertMulticastGroup(MulticastGroup{ID: 5, Replicas: rs}))
	rs[0].Port = 9
	g, err := p.ReadMulticastGroup(5)
	mustOK(t, err)
	g.Replicas[1].Port = 8
	g2, err := p.ReadMulticastGroup(5)
	mustOK(t, err)
	if !slices.Equal(g2.Replicas, []Replica{{1, 0}, {2, 0}}) || g2.ID != 5 {
		t.Errorf("group %+v", g2)
	}
	p.Reset()
	if _, err := p.ReadMulticastGroup(5); !isErr(err, ErrNotFound) {
		t.Errorf("after Reset: %v", err)
	}
}

// TestL2ForwardEntries: the table's key and params have the P4Info widths.
func TestL2ForwardEntries(t *testing.T) {
	p := New(Options{})
	tests := []struct {
		name string
		e    *TableEntry
		ok   bool
	}{
		{"port 511", l2Entry(macR, p4src.ActionL2SetPort, 511), true},
		{"port 512", l2Entry(macR, p4src.ActionL2SetPort, 512), false},
		{"group 0xffff", l2Entry(macBcast, p4src.ActionL2Flood, 0xffff), true},
		{"group 0x10000", l2Entry(macW, p4src.ActionL2Flood, 0x10000), false},
		{"MAC wider than 48 bits", &TableEntry{TableID: p4src.TableL2Forward, Match: []FieldMatch{{FieldID: 1, Value: 1 << 48}},
			Action: Action{ID: p4src.ActionDrop}}, false},
		{"route action", &TableEntry{TableID: p4src.TableL2Forward, Match: []FieldMatch{{FieldID: 1, Value: 1}},
			Action: Action{ID: p4src.ActionSetNexthop, Params: []Param{{1, 1}, {2, 0}, {3, 0}}}}, false},
	}
	for _, tc := range tests {
		err := p.InsertEntry(tc.e)
		if (err == nil) != tc.ok || err != nil && !isErr(err, ErrInvalidArgument) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
