package conformance

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseErrors feeds bad vectors to the parser: each must fail at the right line
// with a message naming the problem.
func TestParseErrors(t *testing.T) {
	info, err := Program()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, src string
		line      int
		want      string
	}{
		{"unknown statement", "at 1\nfrobnicate x", 2, `unknown statement "frobnicate"`},
		{"unknown table", "table ipv4_routes dst_addr=1.2.3.0/24 -> drop", 1, "ipv4_routes"},
		{"unknown field", "table ipv4_route dst=1.2.3.0/24 -> drop", 1, "dst"},
		{"unknown action", "table ipv4_route dst_addr=1.2.3.0/24 -> dropp", 1, "dropp"},
		{"missing param", "table ipv4_route dst_addr=1.2.3.0/24 -> set_nexthop port=1", 1, "missing param src_mac"},
		{"param too wide", "table ipv4_route dst_addr=1.2.3.0/24 -> set_nexthop port=512 src_mac=0 dst_mac=0", 1, "does not fit in 9 bits"},
		{"lpm host bits", "table ipv4_route dst_addr=1.2.3.4/24 -> drop", 1, "beyond the /24 prefix"},
		{"lpm bad length", "table ipv4_route dst_addr=1.2.3.0/33 -> drop", 1, "prefix length"},
		{"ternary zero mask", "table traffic_class vlan_valid=0 dscp=0&&&0 priority=1 -> NoAction", 1, "zero mask"},
		{"ternary outside mask", "table traffic_class vlan_valid=0 dscp=3&&&2 priority=1 -> NoAction", 1, "outside the mask"},
		{"no arrow", "table ipv4_route dst_addr=1.2.3.0/24 drop", 1, "TABLE [key=value...] -> ACTION"},
		{"default with key", "default ipv4_route dst_addr=1.2.3.0/24 -> drop", 1, "no match fields"},
		{"bad mac", "table ipv4_route dst_addr=1.2.3.0/24 -> set_nexthop port=1 src_mac=02:00:00:00:00 dst_mac=0", 1, "src_mac"},
		{"time goes back", "at 100\nat 50", 2, "time goes back"},
		{"unknown packet kind", "in port=1 tcp src=1.2.3.4", 1, "want a packet"},
		{"unknown packet key", "in port=1 roce dqpn=5", 1, `unknown key "dqpn"`},
		{"duplicate packet key", "in port=1 roce psn=1 psn=2", 1, "given twice"},
		{"field too wide", "in port=1 roce dqp=0x1000000", 1, "does not fit in 24 bits"},
		{"bad ecn", "in port=1 roce ecn=yes", 1, "ecn=yes"},
		{"truncate beyond", "in port=1 roce truncate=100", 1, "beyond the 60-byte frame"},
		{"ignore in input", "in port=1 roce ignore=0+2", 1, "only in expectations"},
		{"wildcard in input", "in port=1 hex 0102**", 1, "only in expectations"},
		{"odd hex", "in port=1 hex 012", 1, "odd number"},
		{"port too big", "in port=512 roce", 1, "bad port"},
		{"register without tag", "expect register port_paused[2] value=1", 1, "without @requires registers"},
		{"registers tag unused", "@requires registers\nat 1", 1, "no register statement"},
		{"register write without tag", "register port_paused[2] value=1", 1, "register write without @requires registers"},
		{"register write syntax", "@requires registers\nregister port_paused[2]", 2, "register NAME[INDEX] value=V"},
		{"register write bad key", "@requires registers\nregister port_paused[2] val=1", 2, `unknown key "val"`},
		{"register write unknown", "@requires registers\nregister port_pasued[2] value=1", 2, "port_pasued"},
		{"register write too wide", "@requires registers\nregister port_paused[2] value=2", 2, "does not fit in 1 bits"},
		{"register write 48 bits", "@requires registers\nregister port_check_at_ns[2] value=0x1000000000000", 2, "does not fit in 48 bits"},
		{"register write index", "@requires registers\nregister flow_bytes[4096] value=1", 2, "index 4096 >= its size 4096"},
		{"register expect index", "@requires registers\nexpect register port_paused[512] value=0", 2, "index 512 >= its size 512"},
		{"dequeue without tag", "at 1\ndequeue port=2", 2, "dequeue-control"},
		{"timestamp without tag", "expect digest cnp_digest_t timestamp_ns=5", 1, "exact-timing"},
		{"unknown feature", "@requires teleportation", 1, "unknown feature"},
		{"go-only without reason", "@go-only", 1, "reason="},
		{"counter without value", "expect counter dropped[1]", 1, "expect counter NAME[INDEX]"},
		{"counter bad key", "expect counter dropped[1] pkts=1", 1, `unknown key "pkts"`},
		{"counter bad index", "expect counter dropped[x] packets=1", 1, "bad index"},
		{"unknown counter", "expect counter drops[1] packets=1", 1, "drops"},
		{"digest bad field", "expect digest port_state_digest_t evnt=1", 1, `no field "evnt"`},
		{"cpu without metadata", "expect cpu announce", 1, "expect cpu"},
		{"unknown expectation", "expect miracle", 1, "unknown expectation"},
		{"dangling continuation", "at 1 \\", 1, "continuation"},
		{"continuation keeps first line", "at 1\ntable ipv4_route \\\n  dst_addr=1.2.3.4/24 -> drop", 2, "beyond the /24 prefix"},
		{"not key=value", "clone session=100 255", 1, "want key=value"},
		{"clone missing port", "clone session=100", 1, "missing port="},
		{"missing include", "include nowhere.inc", 1, "include"},
		{"multicast group 0", "multicast group=0 ports=1,2", 1, "bad group"},
		{"multicast port too big", "multicast group=1 ports=1,512", 1, `bad port "512"`},
		{"multicast port twice", "multicast group=1 ports=1,2,1", 1, "port 1 given twice"},
		{"multicast no ports", "multicast group=1", 1, "multicast group=G ports="},
		{"multicast empty port", "multicast group=1 ports=1,,2", 1, `bad port ""`},
		{"l2_forward MAC too wide", "table l2_forward dst_addr=0x1000000000000 -> drop", 1, "does not fit in 48 bits"},
		{"l2_flood group too wide", "table l2_forward dst_addr=ff:ff:ff:ff:ff:ff -> l2_flood mcast_grp=65536", 1, "does not fit in 16 bits"},
		{"valueset without tag", "valueset announce_udp_port 4800", 1, "without @requires value-set"},
		{"member unknown profile", "member next_hop_selectr id=1 -> drop", 1, "next_hop_selectr"},
		{"member without id", "member next_hop_selector -> drop", 1, "member PROFILE id=N"},
		{"member without action", "member next_hop_selector id=1", 1, "-> ACTION"},
		{"member missing param", "member next_hop_selector id=1 -> set_nexthop port=1", 1, "missing param src_mac"},
		{"group without members", "group next_hop_selector id=1", 1, "members=none"},
		{"group bad member", "group next_hop_selector id=1 members=1:x", 1, `group member "1:x"`},
		{"group unknown key", "group next_hop_selector id=1 members=1 size=3", 1, `unknown key "size"`},
		{"entry to group 0", "table next_hop_group_select group_id=1 -> group=0", 1, "group ID"},
		{"entry to a group with more", "table next_hop_group_select group_id=1 -> group=3 x=1", 1, "takes nothing else"},
		{"delete what", "delete table ipv4_route", 1, "delete member|group"},
		{"refused bad code", "@requires refusal-codes\nrefused OOPS delete member next_hop_selector id=1", 2, "refused CODE"},
		{"refused not a write", "@requires refusal-codes\nrefused NOT_FOUND at 5", 2, "one write statement"},
		{"refused without tag", "refused NOT_FOUND delete member next_hop_selector id=1", 1, "without @requires refusal-codes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("bad", "testdata/bad/inline.vec", []byte(tc.src), info)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v, want a *ParseError", err)
			}
			if pe.Line != tc.line || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want line %d containing %q", err, tc.line, tc.want)
			}
		})
	}
}

// TestParseErrorInInclude reports the included file and its line.
func TestParseErrorInInclude(t *testing.T) {
	info, err := Program()
	if err != nil {
		t.Fatal(err)
	}
	_, err = ParseFile("testdata/bad/includes-bad.vec", info)
	var pe *ParseError
	if !errors.As(err, &pe) || filepath.Base(pe.File) != "bad.inc" || pe.Line != 3 {
		t.Fatalf("error %v, want bad.inc:3", err)
	}
	if !strings.Contains(err.Error(), "missing param dst_mac") {
		t.Errorf("error %q does not name the missing param", err)
	}
}

// TestParseVector checks what a small vector resolves to.
func TestParseVector(t *testing.T) {
	info, err := Program()
	if err != nil {
		t.Fatal(err)
	}
	src := `@doc example
@requires dequeue-control
table traffic_class vlan_valid=0 dscp=26 priority=10 -> set_traffic_class priority=3 lossless=1
table ipv4_route dst_addr=10.0.1.0/24 -> set_nexthop port=2 src_mac=02:00:00:00:00:ee dst_mac=02:00:00:00:00:02
at 1000
in port=1 roce dscp=26 ecn=ect0 dqp=0x123 len=1058
dequeue port=2
expect out port=2 hex 0200000000** ignore=0+1
expect counter dropped[1] packets=0
`
	v, err := Parse("ex", "ex.vec", []byte(src), info)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Stmts) != 7 || v.Requires[0] != "dequeue-control" || v.Doc[0] != "example" {
		t.Fatalf("parsed %+v", v)
	}
	tc := v.Stmts[0]
	if tc.TableID != 0x02000002 || tc.Priority != 10 || tc.ActionID != 0x01000003 || len(tc.Match) != 2 ||
		tc.Match[1].Field != "dscp" || tc.Match[1].Mask != 0x3f || tc.Match[1].Value != 26 {
		t.Errorf("traffic_class write %+v", tc)
	}
	rt := v.Stmts[1]
	if rt.Match[0].Value != 0x0a000100 || rt.Match[0].PrefixLen != 24 || rt.Params[2].Value != 0x020000000002 {
		t.Errorf("ipv4_route write %+v", rt)
	}
	if in := v.Stmts[3]; len(in.Packet.Bytes) != 1058 || in.Packet.Bytes[15] != 26<<2|2 {
		t.Errorf("packet %d bytes, TOS %#x", len(in.Packet.Bytes), in.Packet.Bytes[15])
	}
	if e := v.Stmts[5].Packet; string(e.Mask) != "\x00\xff\xff\xff\xff\x00" {
		t.Errorf("mask %x", e.Mask)
	}
	if c := v.Stmts[6]; c.Values[0] != 0 || c.Values[1] != ^uint64(0) || c.Name != "FastcnpIngress.dropped" {
		t.Errorf("counter expectation %+v", c)
	}
	if r := v.SkipReason(nil); !strings.Contains(r, "dequeue-control") {
		t.Errorf("skip reason %q", r)
	}
}

// TestParseRegisterWrite checks what a register write resolves to: the P4Info name
// and ID, the cell and the value (48-bit registers take 48-bit values).
func TestParseRegisterWrite(t *testing.T) {
	info, err := Program()
	if err != nil {
		t.Fatal(err)
	}
	src := "@requires registers\nregister port_check_at_ns[511] value=0xffffffffffff\nregister flow_key[2584] value=0x512a5a18\nexpect register flow_key[2584] value=0x512a5a18\n"
	v, err := Parse("reg", "reg.vec", []byte(src), info)
	if err != nil {
		t.Fatal(err)
	}
	want := []Stmt{
		{Op: OpRegister, Name: "port_check_at_ns", ID: 0x16000007, Index: 511, Values: []uint64{1<<48 - 1}},
		{Op: OpRegister, Name: "flow_key", ID: 0x1600000B, Index: 2584, Values: []uint64{0x512a5a18}},
		{Op: OpExpectRegister, Name: "flow_key", ID: 0x1600000B, Index: 2584, Values: []uint64{0x512a5a18}},
	}
	if len(v.Stmts) != len(want) {
		t.Fatalf("%d statements, want %d", len(v.Stmts), len(want))
	}
	for i, w := range want {
		g := v.Stmts[i]
		if g.Op != w.Op || g.Name != w.Name || g.ID != w.ID || g.Index != w.Index || len(g.Values) != 1 || g.Values[0] != w.Values[0] {
			t.Errorf("statement %d: %+v, want %+v", i, g, w)
		}
	}
	if IsWriteOp(OpRegister) {
		t.Error("a register write is not a P4Runtime write (BMv2 makes it through Thrift)")
	}
}
