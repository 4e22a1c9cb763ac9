package bmv2

import (
	"bytes"
	"errors"
	"testing"

	"github.com/fastcnp/fastcnp/controller/p4rt"
	"google.golang.org/grpc/codes"

	"github.com/fastcnp/fastcnp/conformance"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
)

func parse(t *testing.T, src string) *conformance.Vector {
	t.Helper()
	info, err := conformance.Program()
	if err != nil {
		t.Fatal(err)
	}
	v, err := conformance.Parse("t", "t.vec", []byte(src), info)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestUpdates converts each kind of write and checks the P4Runtime encoding against
// the IDs and widths of docs/dataplane.md (canonical bytestrings).
func TestUpdates(t *testing.T) {
	info, err := conformance.Program()
	if err != nil {
		t.Fatal(err)
	}
	v := parse(t, `
@requires value-set refusal-codes
table ipv4_route dst_addr=10.0.1.0/24 -> set_nexthop port=2 src_mac=02:00:00:00:00:ee dst_mac=02:00:00:00:00:02
table traffic_class vlan_valid=0 dscp=26 priority=10 -> set_traffic_class priority=3 lossless=1
default ipv4_route -> set_nexthop port=6 src_mac=0 dst_mac=1
clone session=100 port=255
valueset announce_udp_port 4792 4800
digest cnp_digest_t
window-tables
multicast group=7 ports=3,1,2
table l2_forward dst_addr=ff:ff:ff:ff:ff:ff -> l2_flood mcast_grp=7
member next_hop_selector id=4 -> set_nexthop port=3 src_mac=0 dst_mac=5
group next_hop_selector id=9 members=4:3,6 max_size=8
table next_hop_group_select group_id=7 -> group=9
table next_hop_group_select group_id=8 -> member=4
refused FAILED_PRECONDITION delete member next_hop_selector id=4
delete group next_hop_selector id=9
table ipv4_route dst_addr=10.9.0.0/16 -> set_next_hop_group group_id=7
`)
	var ups [][]*p4v1.Update
	for i := range v.Stmts {
		u, err := Updates(info, &v.Stmts[i])
		if err != nil {
			t.Fatal(err)
		}
		ups = append(ups, u)
	}
	route := ups[0][0]
	te := route.GetEntity().GetTableEntry()
	if route.Type != p4v1.Update_INSERT || te.TableId != 0x02000001 || len(te.Match) != 1 {
		t.Fatalf("route update %v", route)
	}
	if l := te.Match[0].GetLpm(); l == nil || !bytes.Equal(l.Value, []byte{10, 0, 1, 0}) || l.PrefixLen != 24 {
		t.Errorf("route match %v", te.Match[0])
	}
	act := te.GetAction().GetAction()
	if act.ActionId != 0x01000002 || len(act.Params) != 3 || !bytes.Equal(act.Params[0].Value, []byte{2}) ||
		act.Params[1].ParamId != 2 || !bytes.Equal(act.Params[1].Value, []byte{2, 0, 0, 0, 0, 0xee}) {
		t.Errorf("route action %v", act)
	}
	tc := ups[1][0].GetEntity().GetTableEntry()
	if tc.Priority != 10 || len(tc.Match) != 2 || tc.Match[0].FieldId != 1 || !bytes.Equal(tc.Match[0].GetExact().Value, []byte{0}) {
		t.Errorf("traffic_class entry %v", tc)
	}
	if tern := tc.Match[1].GetTernary(); tc.Match[1].FieldId != 3 || !bytes.Equal(tern.Value, []byte{26}) || !bytes.Equal(tern.Mask, []byte{0x3f}) {
		t.Errorf("dscp match %v", tc.Match[1])
	}
	def := ups[2][0]
	if def.Type != p4v1.Update_MODIFY || !def.GetEntity().GetTableEntry().IsDefaultAction || len(def.GetEntity().GetTableEntry().Match) != 0 {
		t.Errorf("default action update %v", def)
	}
	cs := ups[3][0].GetEntity().GetPacketReplicationEngineEntry().GetCloneSessionEntry()
	if ups[3][0].Type != p4v1.Update_INSERT || cs.SessionId != 100 || len(cs.Replicas) != 1 || cs.Replicas[0].GetEgressPort() != 255 {
		t.Errorf("clone session %v", cs)
	}
	vs := ups[4][0].GetEntity().GetValueSetEntry()
	if ups[4][0].Type != p4v1.Update_MODIFY || vs.ValueSetId != 0x03000001 || len(vs.Members) != 2 ||
		!bytes.Equal(vs.Members[1].Match[0].GetExact().Value, []byte{0x12, 0xc0}) {
		t.Errorf("value set %v", vs)
	}
	dg := ups[5][0].GetEntity().GetDigestEntry()
	if dg.DigestId != 0x1721670C || dg.Config.MaxListSize != 1 || dg.Config.MaxTimeoutNs != 0 {
		t.Errorf("digest config %v", dg)
	}
	// 127 exact + 25*64 prefixes in each log2 table, 2048 exp2 entries.
	if n := len(ups[6]); n != 2*1727+2048 {
		t.Errorf("window tables: %d updates, want %d", n, 2*1727+2048)
	}
	last := ups[6][len(ups[6])-1].GetEntity().GetTableEntry()
	if last.TableId != 0x02000009 || !bytes.Equal(last.Match[0].GetExact().Value, []byte{0x07, 0xff}) {
		t.Errorf("last exp2 entry %v", last)
	}
	mg := ups[7][0].GetEntity().GetPacketReplicationEngineEntry().GetMulticastGroupEntry()
	if ups[7][0].Type != p4v1.Update_INSERT || mg.GetMulticastGroupId() != 7 || len(mg.GetReplicas()) != 3 {
		t.Fatalf("multicast group %v", mg)
	}
	for i, want := range []uint32{3, 1, 2} {
		if r := mg.GetReplicas()[i]; r.GetEgressPort() != want || r.GetInstance() != 0 {
			t.Errorf("replica %d: %v, want port %d instance 0", i, r, want)
		}
	}
	l2 := ups[8][0].GetEntity().GetTableEntry()
	if l2.TableId != 0x0200000A || !bytes.Equal(l2.Match[0].GetExact().Value, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) ||
		l2.GetAction().GetAction().ActionId != 0x0100000B || !bytes.Equal(l2.GetAction().GetAction().Params[0].Value, []byte{7}) {
		t.Errorf("l2_forward entry %v", l2)
	}
	mb := ups[9][0].GetEntity().GetActionProfileMember()
	if ups[9][0].Type != p4v1.Update_INSERT || mb.ActionProfileId != 0x11000001 || mb.MemberId != 4 || mb.Action.ActionId != 0x01000002 ||
		!bytes.Equal(mb.Action.Params[0].Value, []byte{3}) {
		t.Errorf("member %v", mb)
	}
	g := ups[10][0].GetEntity().GetActionProfileGroup()
	if ups[10][0].Type != p4v1.Update_INSERT || g.ActionProfileId != 0x11000001 || g.GroupId != 9 || g.MaxSize != 8 || len(g.Members) != 2 ||
		g.Members[0].MemberId != 4 || g.Members[0].Weight != 3 || g.Members[1].MemberId != 6 || g.Members[1].Weight != 1 {
		t.Errorf("group %v", g)
	}
	if a := ups[11][0].GetEntity().GetTableEntry().GetAction(); a.GetActionProfileGroupId() != 9 || ups[11][0].GetEntity().GetTableEntry().TableId != 0x0200000B {
		t.Errorf("entry to a group %v", ups[11][0])
	}
	if a := ups[12][0].GetEntity().GetTableEntry().GetAction(); a.GetActionProfileMemberId() != 4 {
		t.Errorf("entry to a member %v", ups[12][0])
	}
	if d := ups[13][0]; d.Type != p4v1.Update_DELETE || d.GetEntity().GetActionProfileMember().GetMemberId() != 4 || v.Stmts[13].Refused != "FAILED_PRECONDITION" {
		t.Errorf("member delete %v (refused %q)", d, v.Stmts[13].Refused)
	}
	if d := ups[14][0]; d.Type != p4v1.Update_DELETE || d.GetEntity().GetActionProfileGroup().GetGroupId() != 9 {
		t.Errorf("group delete %v", d)
	}
	if a := ups[15][0].GetEntity().GetTableEntry().GetAction().GetAction(); a.ActionId != 0x0100000C || !bytes.Equal(a.Params[0].Value, []byte{7}) {
		t.Errorf("route to a group %v", a)
	}
}

func TestRefusal(t *testing.T) {
	we := func(c codes.Code) error {
		return &p4rt.WriteError{Updates: []p4rt.UpdateError{{Code: c}}, Total: 1}
	}
	tests := []struct {
		code string
		err  error
		ok   bool
	}{
		{"FAILED_PRECONDITION", we(codes.FailedPrecondition), true},
		{"FAILED_PRECONDITION", we(codes.InvalidArgument), false},
		{"NOT_FOUND", nil, false},
		{"NOT_FOUND", errors.New("transport"), false},
		{"NOT_FOUND", we(codes.NotFound), true},
	}
	for _, tc := range tests {
		if err := refusal(tc.code, tc.err); (err == nil) != tc.ok {
			t.Errorf("refusal(%s, %v) = %v, want ok %v", tc.code, tc.err, err, tc.ok)
		}
	}
}

// TestAllVectorWritesEncode converts the writes of every vector with the real P4Info:
// what the Go runner installs, the BMv2 runner can install.
func TestAllVectorWritesEncode(t *testing.T) {
	info, err := conformance.Program()
	if err != nil {
		t.Fatal(err)
	}
	vs, err := conformance.LoadDir("../vectors", info)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		for i := range v.Stmts {
			if s := &v.Stmts[i]; IsWrite(s) && s.Op != conformance.OpWindowTables {
				if _, err := Updates(info, s); err != nil {
					t.Errorf("%s: %v", v.Name, err)
				}
			}
		}
	}
}

// TestPREDeletes checks what the runner sends at the end of a vector: a DELETE of
// every clone session and multicast group the vector wrote, each once, the last
// created first; refused writes and other entities are left alone.
func TestPREDeletes(t *testing.T) {
	info, err := conformance.Program()
	if err != nil {
		t.Fatal(err)
	}
	v := parse(t, `
@requires refusal-codes
include ../vectors/include/base.inc
include ../vectors/include/l2.inc
multicast group=7 ports=4,5
refused ALREADY_EXISTS multicast group=9 ports=1
`)
	ups, err := PREDeletes(info, v.Stmts)
	if err != nil {
		t.Fatal(err)
	}
	if len(ups) != 3 {
		t.Fatalf("%d updates, want 3 (group 7, group 1, clone session 100): %v", len(ups), ups)
	}
	for _, u := range ups {
		if u.Type != p4v1.Update_DELETE {
			t.Errorf("update %v, want a DELETE", u)
		}
	}
	g7 := ups[0].GetEntity().GetPacketReplicationEngineEntry().GetMulticastGroupEntry()
	g1 := ups[1].GetEntity().GetPacketReplicationEngineEntry().GetMulticastGroupEntry()
	cs := ups[2].GetEntity().GetPacketReplicationEngineEntry().GetCloneSessionEntry()
	if g7.GetMulticastGroupId() != 7 || len(g7.GetReplicas()) != 2 || g1.GetMulticastGroupId() != 1 || len(g1.GetReplicas()) != 3 {
		t.Errorf("multicast deletes %v, %v", g7, g1)
	}
	if cs.GetSessionId() != 100 || len(cs.GetReplicas()) != 1 || cs.GetReplicas()[0].GetEgressPort() != 255 {
		t.Errorf("clone session delete %v", cs)
	}
	// The same group written twice (a MODIFY after ALREADY_EXISTS on a switch that
	// kept it): deleted once, as last written.
	v = parse(t, "multicast group=3 ports=1\nmulticast group=3 ports=2,3\nclone session=100 port=255\nclone session=100 port=254\n")
	ups, err = PREDeletes(info, v.Stmts)
	if err != nil {
		t.Fatal(err)
	}
	if len(ups) != 2 {
		t.Fatalf("%d updates, want 2", len(ups))
	}
	if cs := ups[0].GetEntity().GetPacketReplicationEngineEntry().GetCloneSessionEntry(); cs.GetReplicas()[0].GetEgressPort() != 254 {
		t.Errorf("clone session delete %v, want the last write's replica 254", cs)
	}
	if g := ups[1].GetEntity().GetPacketReplicationEngineEntry().GetMulticastGroupEntry(); len(g.GetReplicas()) != 2 {
		t.Errorf("group delete %v, want the last write's 2 replicas", g)
	}
	// Every vector's PRE writes can be deleted.
	vs, err := conformance.LoadDir("../vectors", info)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if _, err := PREDeletes(info, v.Stmts); err != nil {
			t.Errorf("%s: %v", v.Name, err)
		}
	}
}
