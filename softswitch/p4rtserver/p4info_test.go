package p4rtserver

import (
	"strings"
	"testing"

	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
	"google.golang.org/protobuf/proto"
)

// TestCommittedP4InfoMatchesPipeline: the P4Info the controller pushes (p4src) is
// accepted by the target whose pipeline runs the program.
func TestCommittedP4InfoMatchesPipeline(t *testing.T) {
	info, err := p4src.P4Info()
	if err != nil {
		t.Fatalf("p4src.P4Info: %v", err)
	}
	if err := CheckP4Info(info, pipeline.ProgramSchema()); err != nil {
		t.Fatalf("committed P4Info refused: %v", err)
	}
}

func TestP4InfoFromSchemaAccepted(t *testing.T) {
	if err := CheckP4Info(P4InfoFromSchema(pipeline.ProgramSchema()), pipeline.ProgramSchema()); err != nil {
		t.Fatalf("own P4Info refused: %v", err)
	}
}

// TestCheckP4InfoMismatches: each change to a good P4Info is refused with a message
// naming the object.
func TestCheckP4InfoMismatches(t *testing.T) {
	cases := []struct {
		name   string
		change func(*p4configv1.P4Info)
		want   string
	}{
		{"nil", nil, "no p4info"},
		{"table renamed", func(i *p4configv1.P4Info) { i.Tables[0].Preamble.Name = "Other.t" }, `"Other.t"`},
		{"table missing", func(i *p4configv1.P4Info) { i.Tables = i.Tables[1:] }, "FastcnpIngress.ipv4_route"},
		{"extra table", func(i *p4configv1.P4Info) {
			i.Tables = append(i.Tables, &p4configv1.Table{Preamble: &p4configv1.Preamble{Id: 0x020000FF, Name: "x.y"}})
		}, "0x20000ff"},
		{"match width", func(i *p4configv1.P4Info) { i.Tables[0].MatchFields[0].Bitwidth = 16 }, "match field 1"},
		{"match kind", func(i *p4configv1.P4Info) {
			i.Tables[0].MatchFields[0].Match = &p4configv1.MatchField_MatchType_{MatchType: p4configv1.MatchField_EXACT}
		}, "EXACT"},
		{"action refs", func(i *p4configv1.P4Info) { i.Tables[0].ActionRefs = i.Tables[0].ActionRefs[:1] }, "action refs"},
		{"table size", func(i *p4configv1.P4Info) { i.Tables[0].Size = 7 }, "size 7"},
		{"param width", func(i *p4configv1.P4Info) { i.Actions[1].Params[0].Bitwidth = 16 }, "set_nexthop"},
		{"counter size", func(i *p4configv1.P4Info) { i.Counters[0].Size = 1 }, "switch_cnp_sent"},
		{"register width", func(i *p4configv1.P4Info) {
			i.Registers[1].TypeSpec = bitSpec(8)
		}, "port_pause_start_ns"},
		{"digest member", func(i *p4configv1.P4Info) {
			i.TypeInfo.Structs["cnp_digest_t"].Members[0].Name = "prt"
		}, "cnp_digest_t"},
		{"value set width", func(i *p4configv1.P4Info) { i.ValueSets[0].Match[0].Bitwidth = 8 }, "announce_udp_port"},
		{"packet metadata", func(i *p4configv1.P4Info) { i.ControllerPacketMetadata[1].Metadata[0].Bitwidth = 16 }, "packet_out"},
		{"meter", func(i *p4configv1.P4Info) {
			i.Meters = append(i.Meters, &p4configv1.Meter{Preamble: &p4configv1.Preamble{Id: 0x15000001, Name: "m"}})
		}, "meter"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var info *p4configv1.P4Info
			if c.change != nil {
				info = proto.Clone(P4InfoFromSchema(pipeline.ProgramSchema())).(*p4configv1.P4Info)
				c.change(info)
			}
			err := CheckP4Info(info, pipeline.ProgramSchema())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}
