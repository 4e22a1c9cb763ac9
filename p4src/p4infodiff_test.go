package p4src

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
)

func TestDiffP4Info(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *p4configv1.P4Info)
		want   []string // substrings, one per expected difference line
	}{
		{"identical", func(*p4configv1.P4Info) {}, nil},
		{"objects listed in another order", func(p *p4configv1.P4Info) {
			t := p.Tables
			t[0], t[len(t)-1] = t[len(t)-1], t[0]
			r := p.Registers
			r[0], r[1] = r[1], r[0]
			p.Digests[0], p.Digests[1] = p.Digests[1], p.Digests[0]
		}, nil},
		{"action param width", func(p *p4configv1.P4Info) {
			for _, a := range p.Actions {
				if a.GetPreamble().GetName() == "FastcnpIngress.set_nexthop" {
					a.Params[0].Bitwidth = 10
				}
			}
		}, []string{`actions "FastcnpIngress.set_nexthop" differs`}},
		{"table id", func(p *p4configv1.P4Info) { p.Tables[0].Preamble.Id++ }, []string{`tables "FastcnpIngress.ipv4_route" differs`}},
		{"register missing from p4c's", func(p *p4configv1.P4Info) { p.Registers = p.Registers[1:] }, []string{`registers "port_paused": only in the committed`}},
		{"extra counter in p4c's", func(p *p4configv1.P4Info) {
			c := proto.Clone(p.Counters[0]).(*p4configv1.Counter)
			c.Preamble.Name, c.Preamble.Id = "FastcnpEgress.extra", 0x12000099
			p.Counters = append(p.Counters, c)
		}, []string{`counters "FastcnpEgress.extra": only in p4c's`}},
		{"digest struct member", func(p *p4configv1.P4Info) {
			p.TypeInfo.Structs["cnp_digest_t"].Members[0].Name = "egress_port"
		}, []string{`type_info struct "cnp_digest_t" differs`}},
		{"pkg_info", func(p *p4configv1.P4Info) { p.PkgInfo.Arch = "psa" }, []string{"pkg_info differs"}},
		{"controller header id", func(p *p4configv1.P4Info) { p.ControllerPacketMetadata[0].Preamble.Id = 0x04000001 },
			[]string{`controller_packet_metadata "packet_in" differs`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			committed, err := P4Info()
			if err != nil {
				t.Fatal(err)
			}
			emitted := proto.Clone(committed).(*p4configv1.P4Info)
			tc.change(emitted)
			got := DiffP4Info(committed, emitted)
			if len(got) != len(tc.want) {
				t.Fatalf("%d differences, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("difference %q does not say %q", got[i], w)
				}
			}
		})
	}
}
