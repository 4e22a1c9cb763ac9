package p4rt_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/fastcnp/fastcnp/controller/p4rt"
	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
	"google.golang.org/protobuf/proto"
)

func TestParseP4InfoFormats(t *testing.T) {
	text, err := os.ReadFile("testdata/test.p4info.txtpb")
	if err != nil {
		t.Fatal(err)
	}
	want, err := p4rt.ParseP4Info(text, p4rt.FormatText)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := proto.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
		f    p4rt.Format
		ok   bool
	}{
		{"text explicit", text, p4rt.FormatText, true},
		{"text auto", text, p4rt.FormatAuto, true},
		{"binary explicit", bin, p4rt.FormatBinary, true},
		{"binary auto", bin, p4rt.FormatAuto, true},
		{"binary as text", bin, p4rt.FormatText, false},
		{"garbage auto", []byte("tables { preamble { id: x } }"), p4rt.FormatAuto, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p4rt.ParseP4Info(tc.data, tc.f)
			if !tc.ok {
				if err == nil {
					t.Fatal("parsed")
				}
				return
			}
			if err != nil || !proto.Equal(got, want) {
				t.Fatalf("err %v, equal %v", err, proto.Equal(got, want))
			}
		})
	}
}

func TestInfoLookups(t *testing.T) {
	in := testInfo(t)
	type lookup func(string) (uint32, error)
	for _, tc := range []struct {
		name string
		f    lookup
		arg  string
		want uint32
		err  error
	}{
		{"table full", in.TableID, "Ing.ipv4_route", 33554433, nil},
		{"table alias", in.TableID, "ipv4_route", 33554433, nil},
		{"table ambiguous alias", in.TableID, "acl", 0, p4rt.ErrAmbiguousName},
		{"table full resolves ambiguity", in.TableID, "Egr.acl", 33554437, nil},
		{"table unknown", in.TableID, "ipv4_routes", 0, p4rt.ErrUnknownName},
		{"action", in.ActionID, "set_nexthop", 16777474, nil},
		{"NoAction", in.ActionID, "NoAction", 21257015, nil},
		{"profile", in.ActionProfileID, "inc_selector", 285212673, nil},
		{"counter", in.CounterID, "Ing.cnp_sent", 301989889, nil},
		{"direct counter", in.DirectCounterID, "v6_hits", 318767105, nil},
		{"meter", in.MeterID, "port_meter", 335544321, nil},
		{"register", in.RegisterID, "port_rx_bytes", 369098753, nil},
		{"digest", in.DigestID, "state_change_t", 393884964, nil},
		{"value set", in.ValueSetID, "roce_ports", 50331649, nil},
		{"controller header", in.ControllerHeaderID, "packet_out", 74440427, nil},
		{"kind matters", in.CounterID, "port_rx_bytes", 0, p4rt.ErrUnknownName},
		{"empty name", in.TableID, "", 0, p4rt.ErrUnknownName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := tc.f(tc.arg)
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if id != tc.want {
				t.Fatalf("id %d, want %d", id, tc.want)
			}
		})
	}
	if f, err := in.MatchField("acl", "src"); !errors.Is(err, p4rt.ErrAmbiguousName) || f != nil {
		t.Errorf("field of ambiguous table: %v", err)
	}
	if f, err := in.MatchField("Ing.acl", "proto"); err != nil || f.ID != 2 || f.Bitwidth != 8 {
		t.Errorf("Ing.acl proto: %+v %v", f, err)
	}
	if f, err := in.ActionParam("set_port_config", "mode"); err != nil || f.Bitwidth != 1 {
		t.Errorf("param mode: %+v %v", f, err)
	}
	if f, err := in.ControllerMetadataField("packet_in", "ingress_port"); err != nil || f.Bitwidth != 9 {
		t.Errorf("ingress_port: %+v %v", f, err)
	}
	if f, err := in.ValueSetField("roce_ports", "port"); err != nil || f.Bitwidth != 16 {
		t.Errorf("vs port: %+v %v", f, err)
	}
}

func TestUnknownNameError(t *testing.T) {
	in := testInfo(t)
	_, err := in.TableID("ipv4_rout")
	var ne *p4rt.NameError
	if !errors.As(err, &ne) || ne.Name != "ipv4_rout" || ne.Kind != "table" {
		t.Fatalf("got %v", err)
	}
	if len(ne.Suggestions) == 0 || ne.Suggestions[0] != "Ing.ipv4_route" {
		t.Errorf("suggestions %v", ne.Suggestions)
	}
	if !strings.Contains(err.Error(), `"ipv4_rout"`) || !strings.Contains(err.Error(), "did you mean Ing.ipv4_route") {
		t.Errorf("message %q", err)
	}
	_, err = in.MatchField("ipv4_route", "dst")
	if !errors.As(err, &ne) || ne.Scope != "table Ing.ipv4_route" || !strings.Contains(err.Error(), "dst_addr") {
		t.Errorf("match field: %v", err)
	}
	_, err = in.TableID("acl")
	if !errors.As(err, &ne) || !ne.Ambiguous || strings.Join(ne.Suggestions, ",") != "Egr.acl,Ing.acl" {
		t.Errorf("ambiguous: %v", err)
	}
	if _, err := in.TableID("zzzzzzzz"); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("far name got suggestions: %v", err)
	}
}

func TestNewInfoRejectsBadP4Info(t *testing.T) {
	pre := func(id uint32, name string) *p4configv1.Preamble { return &p4configv1.Preamble{Id: id, Name: name} }
	for _, tc := range []struct {
		name string
		p    *p4configv1.P4Info
	}{
		{"nil", nil},
		{"zero id", &p4configv1.P4Info{Tables: []*p4configv1.Table{{Preamble: pre(0, "t")}}}},
		{"dup id", &p4configv1.P4Info{Tables: []*p4configv1.Table{{Preamble: pre(1, "t")}}, Actions: []*p4configv1.Action{{Preamble: pre(1, "a")}}}},
		{"dup name", &p4configv1.P4Info{Tables: []*p4configv1.Table{{Preamble: pre(1, "t")}, {Preamble: pre(2, "t")}}}},
		{"zero width", &p4configv1.P4Info{Actions: []*p4configv1.Action{{Preamble: pre(1, "a"),
			Params: []*p4configv1.Action_Param{{Id: 1, Name: "p", Bitwidth: 0}}}}}},
	} {
		if _, err := p4rt.NewInfo(tc.p); !errors.Is(err, p4rt.ErrInvalidValue) {
			t.Errorf("%s: got %v", tc.name, err)
		}
	}
}

// The project's committed P4Info must index cleanly, and every object must
// resolve by its full name and by its alias.
func TestProjectP4Info(t *testing.T) {
	const path = "../../p4src/fastcnp.p4info.txtpb"
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no project P4Info: %v", err)
	}
	p, err := p4rt.LoadP4InfoFile(path, p4rt.FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	in, err := p4rt.NewInfo(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range p.Tables {
		for _, name := range []string{tb.Preamble.Name, tb.Preamble.Alias} {
			if id, err := in.TableID(name); err != nil || id != tb.Preamble.Id {
				t.Errorf("table %q: %d %v", name, id, err)
			}
		}
		for _, mf := range tb.MatchFields {
			if f, err := in.MatchField(tb.Preamble.Name, mf.Name); err != nil || f.ID != mf.Id {
				t.Errorf("%s.%s: %v", tb.Preamble.Name, mf.Name, err)
			}
		}
	}
	for _, a := range p.Actions {
		for _, prm := range a.Params {
			if f, err := in.ActionParam(a.Preamble.Name, prm.Name); err != nil || f.ID != prm.Id {
				t.Errorf("%s(%s): %v", a.Preamble.Name, prm.Name, err)
			}
		}
	}
	for _, r := range p.Registers {
		if id, err := in.RegisterID(r.Preamble.Alias); err != nil || id != r.Preamble.Id {
			t.Errorf("register %q: %v", r.Preamble.Alias, err)
		}
	}
	// p4c's unnamed value_set<bit<16>> field is addressed by "".
	if vs, err := in.ValueSetEntry("announce_udp_port", []p4rt.Match{p4rt.Exact("", 4791)}); err != nil ||
		vs.GetValueSetEntry().Members[0].Match[0].FieldId != 1 {
		t.Errorf("unnamed value set field: %v %v", vs, err)
	}
}
