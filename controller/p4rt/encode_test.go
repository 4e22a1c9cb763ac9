package p4rt_test

import (
	"bytes"
	"errors"
	"math/big"
	"net"
	"strings"
	"testing"

	"github.com/fastcnp/fastcnp/controller/p4rt"
	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"google.golang.org/protobuf/proto"
)

func TestEncode(t *testing.T) {
	two128 := new(big.Int).Lsh(big.NewInt(1), 128)
	max128 := new(big.Int).Sub(two128, big.NewInt(1))
	for _, tc := range []struct {
		name  string
		v     any
		width int
		want  []byte
		err   error
	}{
		{"zero is one zero byte", uint64(0), 32, []byte{0}, nil},
		{"zero in 1 bit", 0, 1, []byte{0}, nil},
		{"one bit set", true, 1, []byte{1}, nil},
		{"1-bit overflow", 2, 1, nil, p4rt.ErrValueTooWide},
		{"9-bit port max", uint32(511), 9, []byte{0x01, 0xff}, nil},
		{"9-bit port small", uint16(3), 9, []byte{3}, nil},
		{"9-bit port overflow", 512, 9, nil, p4rt.ErrValueTooWide},
		{"8-bit max", uint8(255), 8, []byte{0xff}, nil},
		{"16-bit 256", 256, 16, []byte{1, 0}, nil},
		{"32-bit max", uint64(0xffffffff), 32, []byte{0xff, 0xff, 0xff, 0xff}, nil},
		{"32-bit overflow", uint64(1) << 32, 32, nil, p4rt.ErrValueTooWide},
		{"64-bit max", ^uint64(0), 64, bytes.Repeat([]byte{0xff}, 8), nil},
		{"IPv4", net.ParseIP("10.0.0.1"), 32, []byte{10, 0, 0, 1}, nil},
		{"IPv4 leading zero", net.ParseIP("0.0.1.2"), 32, []byte{1, 2}, nil},
		{"IPv4 all zero", net.IPv4zero, 32, []byte{0}, nil},
		{"IPv6 in 128", net.ParseIP("2001:db8::1"), 128,
			[]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, nil},
		{"IPv6 into 32 bits", net.ParseIP("2001:db8::1"), 32, nil, p4rt.ErrValueTooWide},
		{"MAC 48", net.HardwareAddr{0x02, 0, 0, 0, 0, 0x01}, 48, []byte{2, 0, 0, 0, 0, 1}, nil},
		{"MAC leading zeros", net.HardwareAddr{0, 0, 0, 0, 0x12, 0x34}, 48, []byte{0x12, 0x34}, nil},
		{"MAC zero", net.HardwareAddr{0, 0, 0, 0, 0, 0}, 48, []byte{0}, nil},
		{"MAC into 47 bits", net.HardwareAddr{0x80, 0, 0, 0, 0, 0}, 47, nil, p4rt.ErrValueTooWide},
		{"bytes with leading zeros", []byte{0, 0, 5}, 16, []byte{5}, nil},
		{"bytes padded but fitting", []byte{0, 0, 0, 0x01, 0xff}, 9, []byte{0x01, 0xff}, nil},
		{"bytes too wide", []byte{0x02, 0x00}, 9, nil, p4rt.ErrValueTooWide},
		{"big 128 max", max128, 128, bytes.Repeat([]byte{0xff}, 16), nil},
		{"big 2^128 overflow", two128, 128, nil, p4rt.ErrValueTooWide},
		{"big zero", new(big.Int), 128, []byte{0}, nil},
		{"big negative", big.NewInt(-1), 8, nil, p4rt.ErrInvalidValue},
		{"negative int", -1, 8, nil, p4rt.ErrInvalidValue},
		{"empty bytes", []byte{}, 8, nil, p4rt.ErrInvalidValue},
		{"string", "10", 8, nil, p4rt.ErrInvalidValue},
		{"width 0", 0, 0, nil, p4rt.ErrInvalidValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p4rt.Encode(tc.v, tc.width)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Encode(%v, %d) error %v, want %v", tc.v, tc.width, err, tc.err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, tc.want) {
				t.Fatalf("Encode(%v, %d) = %x, %v; want %x", tc.v, tc.width, got, err, tc.want)
			}
		})
	}
}

func TestCanonicalAndDecode(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want []byte
		u    uint64
	}{
		{nil, []byte{0}, 0},
		{[]byte{0, 0}, []byte{0}, 0},
		{[]byte{0, 1, 0}, []byte{1, 0}, 256},
		{[]byte{0xab}, []byte{0xab}, 0xab},
	} {
		if got := p4rt.Canonical(tc.in); !bytes.Equal(got, tc.want) {
			t.Errorf("Canonical(%x) = %x, want %x", tc.in, got, tc.want)
		}
		if u, err := p4rt.DecodeUint(tc.in); err != nil || u != tc.u {
			t.Errorf("DecodeUint(%x) = %d, %v; want %d", tc.in, u, err, tc.u)
		}
	}
	if _, err := p4rt.DecodeUint(bytes.Repeat([]byte{1}, 9)); !errors.Is(err, p4rt.ErrValueTooWide) {
		t.Errorf("DecodeUint of 72 bits: %v", err)
	}
	// Padded 64-bit value with leading zeros still decodes.
	if u, err := p4rt.DecodeUint(append([]byte{0, 0}, bytes.Repeat([]byte{0xff}, 8)...)); err != nil || u != ^uint64(0) {
		t.Errorf("padded max: %d %v", u, err)
	}
}

// Errors from builders name the object, the field and its width.
func TestWidthErrorNamesField(t *testing.T) {
	in := testInfo(t)
	_, err := in.Action("set_nexthop", p4rt.P("port", 512), p4rt.P("dmac", 1))
	if !errors.Is(err, p4rt.ErrValueTooWide) {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{`"port"`, "bit<9>", "Ing.set_nexthop"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %s", err, want)
		}
	}
}

func TestMatchChecks(t *testing.T) {
	in := testInfo(t)
	for _, tc := range []struct {
		name  string
		table string
		m     p4rt.Match
		err   error
		check func(*p4v1.FieldMatch) bool
	}{
		{"lpm /8", "ipv4_route", p4rt.LPM("dst_addr", net.ParseIP("10.0.0.0"), 8), nil,
			func(f *p4v1.FieldMatch) bool {
				return bytes.Equal(f.GetLpm().Value, []byte{10, 0, 0, 0}) && f.GetLpm().PrefixLen == 8
			}},
		{"lpm /32", "ipv4_route", p4rt.LPM("dst_addr", net.ParseIP("10.0.0.1"), 32), nil, nil},
		{"lpm trailing bits", "ipv4_route", p4rt.LPM("dst_addr", net.ParseIP("10.0.0.1"), 24), p4rt.ErrInvalidValue, nil},
		{"lpm /33", "ipv4_route", p4rt.LPM("dst_addr", net.ParseIP("10.0.0.0"), 33), p4rt.ErrInvalidValue, nil},
		{"lpm negative", "ipv4_route", p4rt.LPM("dst_addr", 0, -1), p4rt.ErrInvalidValue, nil},
		{"lpm /0 is a wildcard", "ipv4_route", p4rt.LPM("dst_addr", 0, 0), p4rt.ErrInvalidValue, nil},
		{"lpm 128 /64", "v6_route", p4rt.LPM("dst", net.ParseIP("2001:db8::"), 32), nil, nil},
		{"lpm 128 trailing", "v6_route", p4rt.LPM("dst", net.ParseIP("2001:db8::1"), 64), p4rt.ErrInvalidValue, nil},
		{"ternary ok", "Ing.acl", p4rt.Ternary("src", net.ParseIP("10.0.0.0"), uint32(0xff000000)), nil,
			func(f *p4v1.FieldMatch) bool { return bytes.Equal(f.GetTernary().Mask, []byte{0xff, 0, 0, 0}) }},
		{"ternary value outside mask", "Ing.acl", p4rt.Ternary("src", 0x0a000001, 0xff000000), p4rt.ErrInvalidValue, nil},
		{"ternary zero mask", "Ing.acl", p4rt.Ternary("src", 0, 0), p4rt.ErrInvalidValue, nil},
		{"range ok", "Ing.acl", p4rt.Range("proto", 6, 17), nil,
			func(f *p4v1.FieldMatch) bool {
				return bytes.Equal(f.GetRange().Low, []byte{6}) && bytes.Equal(f.GetRange().High, []byte{17})
			}},
		{"range inverted", "Ing.acl", p4rt.Range("proto", 17, 6), p4rt.ErrInvalidValue, nil},
		{"range full is a wildcard", "Ing.acl", p4rt.Range("proto", 0, 255), p4rt.ErrInvalidValue, nil},
		{"range full, padded bytes", "Ing.acl", p4rt.Range("proto", []byte{0, 0}, []byte{0, 0xff}), p4rt.ErrInvalidValue, nil},
		{"range all but the top", "Ing.acl", p4rt.Range("proto", 0, 254), nil,
			func(f *p4v1.FieldMatch) bool {
				return bytes.Equal(f.GetRange().Low, []byte{0}) && bytes.Equal(f.GetRange().High, []byte{254})
			}},
		{"range all but zero", "Ing.acl", p4rt.Range("proto", 1, 255), nil, nil},
		{"range single value", "Ing.acl", p4rt.Range("proto", 255, 255), nil, nil},
		{"range too wide", "Ing.acl", p4rt.Range("proto", 0, 256), p4rt.ErrValueTooWide, nil},
		{"optional", "Egr.acl", p4rt.Optional("dport", 4791), nil,
			func(f *p4v1.FieldMatch) bool { return bytes.Equal(f.GetOptional().Value, []byte{0x12, 0xb7}) }},
		{"wrong kind", "port_config", p4rt.LPM("port", 0, 1), p4rt.ErrInvalidValue, nil},
		{"unknown field", "port_config", p4rt.Exact("prot", 1), p4rt.ErrUnknownName, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := in.TableEntry(tc.table).Match(tc.m)
			if strings.HasSuffix(tc.table, ".acl") { // ternary/range/optional tables need a priority
				b = b.Priority(1)
			}
			te, err := b.Build()
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("got %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil && !tc.check(te.Match[0]) {
				t.Fatalf("wrong encoding: %v", te.Match[0])
			}
		})
	}
}

func TestTableEntryBuilder(t *testing.T) {
	in := testInfo(t)
	mac, _ := net.ParseMAC("00:00:5e:00:53:01")
	te, err := in.TableEntry("Ing.ipv4_route").
		Match(p4rt.LPM("dst_addr", net.ParseIP("192.168.0.0"), 16)).
		Action("set_nexthop", p4rt.P("port", 0), p4rt.P("dmac", mac)).
		Build()
	if err != nil {
		t.Fatal(err)
	}
	a := te.GetAction().GetAction()
	if te.TableId != 33554433 || a.ActionId != 16777474 || len(a.Params) != 2 {
		t.Fatalf("entry %v", te)
	}
	if !bytes.Equal(a.Params[0].Value, []byte{0}) || !bytes.Equal(a.Params[1].Value, []byte{0x5e, 0, 0x53, 1}) {
		t.Fatalf("params %x %x", a.Params[0].Value, a.Params[1].Value)
	}
	d, err := in.DecodeTableEntry(te)
	if err != nil || d.Table != "Ing.ipv4_route" || d.Action != "Ing.set_nexthop" || d.Matches[0].Field != "dst_addr" ||
		d.Matches[0].PrefixLen != 16 || !bytes.Equal(d.Params["dmac"], []byte{0x5e, 0, 0x53, 1}) {
		t.Fatalf("decode: %+v %v", d, err)
	}

	for _, tc := range []struct {
		name string
		b    *p4rt.TableEntryBuilder
		err  error
	}{
		{"missing param", in.TableEntry("ipv4_route").Action("set_nexthop", p4rt.P("port", 1)), p4rt.ErrInvalidValue},
		{"param twice", in.TableEntry("ipv4_route").Action("set_nexthop", p4rt.P("port", 1), p4rt.P("port", 1), p4rt.P("dmac", 1)), p4rt.ErrInvalidValue},
		{"unknown param", in.TableEntry("ipv4_route").Action("set_nexthop", p4rt.P("prt", 1), p4rt.P("dmac", 1)), p4rt.ErrUnknownName},
		{"unknown action", in.TableEntry("ipv4_route").Action("set_nexthp"), p4rt.ErrUnknownName},
		{"unknown table", in.TableEntry("ipv4_rout"), p4rt.ErrUnknownName},
		{"ambiguous table", in.TableEntry("acl"), p4rt.ErrAmbiguousName},
		{"field twice", in.TableEntry("port_config").Match(p4rt.Exact("port", 1), p4rt.Exact("port", 2)), p4rt.ErrInvalidValue},
		{"priority 0", in.TableEntry("Ing.acl").Priority(0), p4rt.ErrInvalidValue},
		{"default with match", in.TableEntry("port_config").Match(p4rt.Exact("port", 1)).Default(), p4rt.ErrInvalidValue},
		{"idle timeout 0", in.TableEntry("port_config").IdleTimeout(0), p4rt.ErrInvalidValue},
	} {
		if _, err := tc.b.Build(); !errors.Is(err, tc.err) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.err)
		}
	}
}

func TestOtherBuilders(t *testing.T) {
	in := testInfo(t)
	m, err := in.ActionProfileMember("inc_selector", 1, "set_nexthop", p4rt.P("port", 3), p4rt.P("dmac", 0))
	if err != nil || m.GetActionProfileMember().ActionProfileId != 285212673 {
		t.Fatalf("member %v %v", m, err)
	}
	g, err := in.ActionProfileGroup("inc_selector", 9, 16, p4rt.GroupMember{ID: 1, Weight: 3}, p4rt.GroupMember{ID: 2})
	if err != nil || len(g.GetActionProfileGroup().Members) != 2 || g.GetActionProfileGroup().Members[1].Weight != 1 {
		t.Fatalf("group %v %v", g, err)
	}
	if _, err := in.ActionProfileGroup("inc_selector", 9, 0, p4rt.GroupMember{ID: 1, Weight: -1}); !errors.Is(err, p4rt.ErrInvalidValue) {
		t.Errorf("negative weight: %v", err)
	}
	r, err := in.RegisterEntry("port_rx_bytes", 5, uint32(0xffffffff))
	if err != nil || !bytes.Equal(r.GetRegisterEntry().Data.GetBitstring(), []byte{0xff, 0xff, 0xff, 0xff}) {
		t.Fatalf("register %v %v", r, err)
	}
	if _, err := in.RegisterEntry("port_rx_bytes", 5, uint64(1)<<32); !errors.Is(err, p4rt.ErrValueTooWide) {
		t.Errorf("register overflow: %v", err)
	}
	vs, err := in.ValueSetEntry("roce_ports", []p4rt.Match{p4rt.Exact("port", 4791)}, []p4rt.Match{p4rt.Exact("port", 4792)})
	if err != nil || len(vs.GetValueSetEntry().Members) != 2 {
		t.Fatalf("value set %v %v", vs, err)
	}
	if _, err := in.ValueSetEntry("roce_ports", []p4rt.Match{p4rt.Exact("port", 1<<16)}); !errors.Is(err, p4rt.ErrValueTooWide) {
		t.Errorf("value set overflow: %v", err)
	}
	mg, err := p4rt.MulticastGroup(1, p4rt.Replica{Port: 1}, p4rt.Replica{Port: 2, Instance: 1})
	if err != nil || len(mg.GetPacketReplicationEngineEntry().GetMulticastGroupEntry().Replicas) != 2 {
		t.Fatalf("mcast %v %v", mg, err)
	}
	if _, err := p4rt.MulticastGroup(0); !errors.Is(err, p4rt.ErrInvalidValue) {
		t.Errorf("mcast 0: %v", err)
	}
	cs, err := p4rt.CloneSession(5, 0, 128, p4rt.Replica{Port: 64})
	if err != nil || cs.GetPacketReplicationEngineEntry().GetCloneSessionEntry().PacketLengthBytes != 128 {
		t.Fatalf("clone %v %v", cs, err)
	}
	c, err := in.CounterEntry("cnp_sent", 3, 100, 2)
	if err != nil || c.GetCounterEntry().GetIndex().GetIndex() != 3 {
		t.Fatalf("counter %v %v", c, err)
	}
	if _, err := in.DigestConfig("state_change_t", 0, 1, 0); err != nil {
		t.Fatal(err)
	}
}

// TestGroupWeights checks member weights of ActionProfileGroup against the
// profile's P4Info: the default (weighted) semantics, and v1.5's
// weights_disallowed, where every weight must be left unset.
func TestGroupWeights(t *testing.T) {
	in := testInfo(t)
	p := proto.Clone(in.P4Info()).(*p4configv1.P4Info)
	for _, ap := range p.ActionProfiles {
		if ap.GetPreamble().GetName() == "Ing.inc_selector" {
			ap.WeightsDisallowed = true
		}
	}
	noWeights, err := p4rt.NewInfo(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		in      *p4rt.Info
		maxSize int32
		weights []int32
		want    []int32 // weights on the wire; nil with err
		err     error
	}{
		{"weighted", in, 16, []int32{3, 1}, []int32{3, 1}, nil},
		{"weight 0 sent as 1", in, 0, []int32{0, 2}, []int32{1, 2}, nil},
		{"negative weight", in, 0, []int32{-1}, nil, p4rt.ErrInvalidValue},
		{"negative max size", in, -1, []int32{1}, nil, p4rt.ErrInvalidValue},
		{"disallowed: unset weights", noWeights, 8, []int32{0, 0}, []int32{0, 0}, nil},
		{"disallowed: weight given", noWeights, 8, []int32{0, 1}, nil, p4rt.ErrInvalidValue},
		{"disallowed: negative", noWeights, 8, []int32{-2}, nil, p4rt.ErrInvalidValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ms []p4rt.GroupMember
			for i, w := range tc.weights {
				ms = append(ms, p4rt.GroupMember{ID: uint32(i + 1), Weight: w})
			}
			e, err := tc.in.ActionProfileGroup("inc_selector", 9, tc.maxSize, ms...)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || e != nil {
					t.Fatalf("got %v, %v; want %v", e, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			g := e.GetActionProfileGroup()
			if g.MaxSize != tc.maxSize || len(g.Members) != len(tc.want) {
				t.Fatalf("group %v", g)
			}
			for i, m := range g.Members {
				if m.MemberId != uint32(i+1) || m.Weight != tc.want[i] {
					t.Errorf("member %d = {%d, weight %d}, want {%d, weight %d}", i, m.MemberId, m.Weight, i+1, tc.want[i])
				}
			}
		})
	}
}

// TestPriorityRules checks Build against the spec's priority rule: > 0 for
// every entry of a table with a ternary, range or optional field, 0 for
// tables with only exact and LPM fields and for default entries.
func TestPriorityRules(t *testing.T) {
	in := testInfo(t)
	// A table whose only field has an architecture-specific match kind: the
	// rule is the target's, so the client checks neither way.
	p := proto.Clone(in.P4Info()).(*p4configv1.P4Info)
	for _, tb := range p.Tables {
		if tb.GetPreamble().GetName() == "Ing.port_config" {
			tb.MatchFields[0].Match = &p4configv1.MatchField_OtherMatchType{OtherMatchType: "dst_range"}
		}
	}
	other, err := p4rt.NewInfo(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		b     *p4rt.TableEntryBuilder
		prio  int32    // wanted on the wire when err is nil
		err   error    // nil: builds
		names []string // in the error
	}{
		{"ternary+range without priority", in.TableEntry("Ing.acl").Match(p4rt.Ternary("src", 1, 1)).Action("drop"),
			0, p4rt.ErrInvalidValue, []string{"Ing.acl", `"src" is ternary`, `"proto" is range`, "priority > 0"}},
		{"ternary table, every field omitted, no priority", in.TableEntry("Ing.acl").Action("drop"),
			0, p4rt.ErrInvalidValue, []string{"Ing.acl", "priority > 0"}},
		{"optional without priority", in.TableEntry("Egr.acl").Match(p4rt.Optional("dport", 1)).Action("NoAction"),
			0, p4rt.ErrInvalidValue, []string{"Egr.acl", `"dport" is optional`}},
		{"ternary with priority", in.TableEntry("Ing.acl").Match(p4rt.Ternary("src", 1, 1)).Priority(5).Action("drop"), 5, nil, nil},
		{"ternary table, fields omitted, priority", in.TableEntry("Ing.acl").Priority(2).Action("drop"), 2, nil, nil},
		{"lpm with priority", in.TableEntry("ipv4_route").Match(p4rt.LPM("dst_addr", 0x0a000000, 8)).Priority(1).Action("drop"),
			0, p4rt.ErrInvalidValue, []string{"Ing.ipv4_route", "priority 1", "only exact and LPM"}},
		{"exact with priority", in.TableEntry("port_config").Match(p4rt.Exact("port", 1)).Priority(7).Action("NoAction"),
			0, p4rt.ErrInvalidValue, []string{"Ing.port_config", "priority 7"}},
		{"lpm+exact with priority", in.TableEntry("v6_route").Match(p4rt.Exact("smac", 1)).Priority(3).Action("set_nexthop", p4rt.P("port", 1), p4rt.P("dmac", 1)),
			0, p4rt.ErrInvalidValue, []string{"Ing.v6_route"}},
		{"exact without priority", in.TableEntry("port_config").Match(p4rt.Exact("port", 1)).Action("NoAction"), 0, nil, nil},
		{"default entry of a ternary table", in.TableEntry("Ing.acl").Default().Action("drop"), 0, nil, nil},
		{"default entry with priority", in.TableEntry("Ing.acl").Default().Priority(1).Action("drop"), 0, p4rt.ErrInvalidValue, nil},
		{"other match kind, no priority", other.TableEntry("port_config").Match(p4rt.Exact("port", 1)).Action("NoAction"), 0, nil, nil},
		{"other match kind, priority", other.TableEntry("port_config").Match(p4rt.Exact("port", 1)).Priority(4).Action("NoAction"), 4, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			te, err := tc.b.Build()
			if tc.err != nil {
				if !errors.Is(err, tc.err) || te != nil {
					t.Fatalf("got %v, %v; want %v", te, err, tc.err)
				}
				for _, n := range tc.names {
					if !strings.Contains(err.Error(), n) {
						t.Errorf("error %q does not say %s", err, n)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if te.Priority != tc.prio {
				t.Fatalf("priority %d, want %d", te.Priority, tc.prio)
			}
		})
	}
}

// TestPacketOutMetadataRequired: every field of the packet_out header must
// be given, also when none is; the error names each missing field.
func TestPacketOutMetadataRequired(t *testing.T) {
	in := testInfo(t)
	p := proto.Clone(in.P4Info()).(*p4configv1.P4Info)
	var kept []*p4configv1.ControllerPacketMetadata
	for _, h := range p.ControllerPacketMetadata {
		if h.GetPreamble().GetName() != "packet_out" {
			kept = append(kept, h)
		}
	}
	p.ControllerPacketMetadata = kept
	noHeader, err := p4rt.NewInfo(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		in      *p4rt.Info
		md      []p4rt.Param
		err     error
		missing []string // named in the error
		present []string // not named as missing
	}{
		{"no metadata at all", in, nil, p4rt.ErrInvalidValue, []string{`"egress_port"`, `"pad"`}, nil},
		{"one missing", in, []p4rt.Param{p4rt.P("egress_port", 3)}, p4rt.ErrInvalidValue, []string{`"pad"`}, []string{`"egress_port"`}},
		{"all given", in, []p4rt.Param{p4rt.P("pad", 0), p4rt.P("egress_port", 3)}, nil, nil, nil},
		{"no packet_out header, no metadata", noHeader, nil, nil, nil, nil},
		{"no packet_out header, metadata", noHeader, []p4rt.Param{p4rt.P("egress_port", 3)}, p4rt.ErrUnknownName, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pkt, err := tc.in.PacketOut([]byte("x"), tc.md...)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || pkt != nil {
					t.Fatalf("got %v, %v; want %v", pkt, err, tc.err)
				}
				for _, m := range tc.missing {
					if !strings.Contains(err.Error(), m) {
						t.Errorf("error %q does not name %s", err, m)
					}
				}
				for _, m := range tc.present {
					if strings.Contains(err.Error(), m) {
						t.Errorf("error %q names %s, which was given", err, m)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(pkt.Payload) != "x" || len(pkt.Metadata) != len(tc.md) {
				t.Fatalf("packet %v", pkt)
			}
		})
	}
}

// TestEntryMetadata: the builder writes the controller metadata to
// TableEntry.metadata (field 11) only; decoding reads field 11 and, from
// older writers, the deprecated controller_metadata (field 5).
func TestEntryMetadata(t *testing.T) {
	in := testInfo(t)
	base := func() *p4rt.TableEntryBuilder {
		return in.TableEntry("port_config").Match(p4rt.Exact("port", 1)).Action("NoAction")
	}
	te, err := base().ControllerMetadata(0x0102).Build()
	if err != nil {
		t.Fatal(err)
	}
	if te.ControllerMetadata != 0 || !bytes.Equal(te.Metadata, []byte{0, 0, 0, 0, 0, 0, 1, 2}) {
		t.Fatalf("ControllerMetadata(0x102) wrote field 5 = %d, field 11 = %x; want only field 11", te.ControllerMetadata, te.Metadata)
	}
	cookie := []byte("owner=fabric;gen=7")
	te, err = base().Metadata(cookie).Build()
	if err != nil {
		t.Fatal(err)
	}
	cookie[0] = 'X' // the builder copied it
	if string(te.Metadata) != "owner=fabric;gen=7" || te.ControllerMetadata != 0 {
		t.Fatalf("Metadata: field 11 %q, field 5 %d", te.Metadata, te.ControllerMetadata)
	}
	for _, tc := range []struct {
		name   string
		f5     uint64
		f11    []byte
		wantMD []byte
		wantC  uint64
	}{
		{"none", 0, nil, nil, 0},
		{"field 11, 8 bytes", 0, []byte{0, 0, 0, 0, 0, 0, 0, 99}, []byte{0, 0, 0, 0, 0, 0, 0, 99}, 99},
		{"field 11, short", 0, []byte{1, 0}, []byte{1, 0}, 256},
		{"field 11, longer than 8 bytes", 0, []byte("0123456789"), []byte("0123456789"), 0},
		{"field 5 only (older writer)", 0x0a0b, nil, []byte{0, 0, 0, 0, 0, 0, 0x0a, 0x0b}, 0x0a0b},
		{"both", 5, []byte{7}, []byte{7}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := base().Build()
			if err != nil {
				t.Fatal(err)
			}
			raw.ControllerMetadata, raw.Metadata = tc.f5, tc.f11
			d, err := in.DecodeTableEntry(raw)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(d.Metadata, tc.wantMD) || (d.Metadata == nil) != (tc.wantMD == nil) || d.ControllerMetadata != tc.wantC {
				t.Fatalf("decoded metadata %x / %d, want %x / %d", d.Metadata, d.ControllerMetadata, tc.wantMD, tc.wantC)
			}
		})
	}
}
