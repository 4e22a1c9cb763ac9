package pipeline

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/wire"
)

// crc16ARCBitwise is CRC-16/ARC computed bit by bit (an oracle independent of the
// table-driven crc16Of): reflected poly 0xA001, init 0, no final xor.
func crc16ARCBitwise(b []byte) uint16 {
	var c uint16
	for _, v := range b {
		c ^= uint16(v)
		for range 8 {
			if c&1 != 0 {
				c = c>>1 ^ 0xA001
			} else {
				c >>= 1
			}
		}
	}
	return c
}

func TestSelectorHash(t *testing.T) {
	// The CRC-16/ARC check value (the catalogue's "123456789" -> 0xBB3D).
	if got := crc16Of([]byte("123456789")); got != 0xBB3D {
		t.Fatalf("crc16 check value %#04x, want 0xbb3d", got)
	}
	cases := []struct {
		src, dst     uint32
		proto        uint8
		sport, dport uint16
	}{
		{0x0A000001, 0x0A000102, 17, 5000, 4791},
		{0x0A000001, 0x0A000102, 17, 5001, 4791},
		{0xC0A80001, 0x0A000102, 6, 0, 0},
		{0, 0, 0, 0, 0},
	}
	for _, c := range cases {
		var b [13]byte
		binary.BigEndian.PutUint32(b[0:], c.src)
		binary.BigEndian.PutUint32(b[4:], c.dst)
		b[8] = c.proto
		binary.BigEndian.PutUint16(b[9:], c.sport)
		binary.BigEndian.PutUint16(b[11:], c.dport)
		if got, want := SelectorHash(c.src, c.dst, c.proto, c.sport, c.dport), crc16ARCBitwise(b[:]); got != want {
			t.Errorf("%+v: %#04x, want %#04x", c, got, want)
		}
	}
}

func nhMember(id uint32, port uint16, dmac wire.MAC) *ProfileMember {
	return &ProfileMember{ProfileID: p4src.ProfileNextHopSelector, MemberID: id,
		Action: Action{ID: p4src.ActionSetNexthop, Params: []Param{{1, uint64(port)}, {2, macU64(macSw)}, {3, macU64(dmac)}}}}
}

func nhGroupEntry(group uint64) *TableEntry {
	return &TableEntry{TableID: p4src.TableNextHopGroupSelect, Match: []FieldMatch{{FieldID: 1, Value: group}}}
}

// ecmpPipeline: 10.9.0.0/16 -> group 7 (an ipv4_route entry running set_next_hop_group).
func ecmpPipeline(t *testing.T) *Pipeline {
	t.Helper()
	p := New(Options{Seed: 1})
	mustOK(t, p.InsertEntry(&TableEntry{TableID: p4src.TableIPv4Route, Match: []FieldMatch{{FieldID: 1, Value: 0x0A090000, PrefixLen: 16}},
		Action: Action{ID: p4src.ActionSetNextHopGroup, Params: []Param{{1, 7}}}}))
	return p
}

func ecmpFrame(t *testing.T, sport uint16) []byte {
	t.Helper()
	k := dataSR(64)
	k.dst, k.sport = wire.Addr4{10, 9, 0, 5}, sport
	return k.build(t)
}

func TestProfileMemberAndGroupErrors(t *testing.T) {
	p := ecmpPipeline(t)
	mustOK(t, p.InsertProfileMember(nhMember(1, 3, macR)))
	mustOK(t, p.InsertProfileMember(nhMember(2, 4, macR)))
	dropM := &ProfileMember{ProfileID: p4src.ProfileNextHopSelector, MemberID: 3, Action: Action{ID: p4src.ActionDrop}}
	mustOK(t, p.InsertProfileMember(dropM))
	g := func(id uint32, ms ...GroupMember) *ProfileGroup {
		return &ProfileGroup{ProfileID: p4src.ProfileNextHopSelector, GroupID: id, Members: ms}
	}
	mustOK(t, p.InsertProfileGroup(g(10, GroupMember{1, 1}, GroupMember{2, 3})))

	tests := []struct {
		name string
		err  error
		want error
	}{
		{"member of an unknown profile", p.InsertProfileMember(&ProfileMember{ProfileID: 0x11000099, MemberID: 9, Action: Action{ID: p4src.ActionDrop}}), ErrInvalidArgument},
		{"member ID 0", p.InsertProfileMember(nhMember(0, 3, macR)), ErrInvalidArgument},
		{"member exists", p.InsertProfileMember(nhMember(1, 3, macR)), ErrAlreadyExists},
		{"member action not of the table", p.InsertProfileMember(&ProfileMember{ProfileID: p4src.ProfileNextHopSelector, MemberID: 9,
			Action: Action{ID: p4src.ActionSetNextHopGroup, Params: []Param{{1, 1}}}}), ErrInvalidArgument},
		{"member action default-only", p.InsertProfileMember(&ProfileMember{ProfileID: p4src.ProfileNextHopSelector, MemberID: 9,
			Action: Action{ID: p4src.ActionNoAction}}), ErrInvalidArgument},
		{"member param missing", p.InsertProfileMember(&ProfileMember{ProfileID: p4src.ProfileNextHopSelector, MemberID: 9,
			Action: Action{ID: p4src.ActionSetNexthop, Params: []Param{{1, 3}}}}), ErrInvalidArgument},
		{"modify unknown member", p.ModifyProfileMember(nhMember(99, 3, macR)), ErrNotFound},
		{"delete unknown member", p.DeleteProfileMember(p4src.ProfileNextHopSelector, 99), ErrNotFound},
		{"delete member used by a group", p.DeleteProfileMember(p4src.ProfileNextHopSelector, 1), ErrFailedPrecondition},
		{"group ID 0", p.InsertProfileGroup(g(0, GroupMember{1, 1})), ErrInvalidArgument},
		{"group exists", p.InsertProfileGroup(g(10, GroupMember{1, 1})), ErrAlreadyExists},
		{"group with an unknown member", p.InsertProfileGroup(g(11, GroupMember{1, 1}, GroupMember{42, 1})), ErrNotFound},
		{"group weight 0", p.InsertProfileGroup(g(11, GroupMember{1, 0})), ErrInvalidArgument},
		{"group member twice", p.InsertProfileGroup(g(11, GroupMember{1, 1}, GroupMember{1, 2})), ErrInvalidArgument},
		{"group beyond max_size", p.InsertProfileGroup(&ProfileGroup{ProfileID: p4src.ProfileNextHopSelector, GroupID: 11, MaxSize: 2,
			Members: []GroupMember{{1, 2}, {2, 1}}}), ErrResourceExhausted},
		{"group max_size beyond the profile", p.InsertProfileGroup(&ProfileGroup{ProfileID: p4src.ProfileNextHopSelector, GroupID: 11,
			MaxSize: p4src.NextHopGroupMembers + 1, Members: []GroupMember{{1, 1}}}), ErrResourceExhausted},
		{"group weights beyond the profile size", p.InsertProfileGroup(g(11, GroupMember{1, p4src.NextHopGroupMembers - 3})), ErrResourceExhausted},
		{"modify unknown group", p.ModifyProfileGroup(g(99, GroupMember{1, 1})), ErrNotFound},
		{"delete unknown group", p.DeleteProfileGroup(p4src.ProfileNextHopSelector, 99), ErrNotFound},
		{"direct action in a selector table", p.InsertEntry(&TableEntry{TableID: p4src.TableNextHopGroupSelect, Match: []FieldMatch{{FieldID: 1, Value: 7}},
			Action: Action{ID: p4src.ActionDrop}}), ErrInvalidArgument},
		{"member and group at once", p.InsertEntry(&TableEntry{TableID: p4src.TableNextHopGroupSelect, Match: []FieldMatch{{FieldID: 1, Value: 7}},
			MemberID: 1, GroupID: 10}), ErrInvalidArgument},
		{"entry with an unknown group", p.InsertEntry(&TableEntry{TableID: p4src.TableNextHopGroupSelect, Match: []FieldMatch{{FieldID: 1, Value: 7}}, GroupID: 99}), ErrNotFound},
		{"entry with an unknown member", p.InsertEntry(&TableEntry{TableID: p4src.TableNextHopGroupSelect, Match: []FieldMatch{{FieldID: 1, Value: 7}}, MemberID: 99}), ErrNotFound},
		{"group in a direct table", p.InsertEntry(&TableEntry{TableID: p4src.TableIPv4Route, Match: []FieldMatch{{FieldID: 1, Value: 0x0B000000, PrefixLen: 8}}, GroupID: 10}), ErrInvalidArgument},
		{"NoAction entry (default-only)", p.InsertEntry(&TableEntry{TableID: p4src.TableTrafficClass, Priority: 1, Match: []FieldMatch{{FieldID: 1, Value: 0}},
			Action: Action{ID: p4src.ActionNoAction}}), nil},
		{"selector table default other than NoAction", p.SetDefaultAction(p4src.TableNextHopGroupSelect, &Action{ID: p4src.ActionDrop}), ErrInvalidArgument},
		{"selector table default NoAction", p.SetDefaultAction(p4src.TableNextHopGroupSelect, &Action{ID: p4src.ActionNoAction}), nil},
		{"empty one-shot", p.InsertEntry(&TableEntry{TableID: p4src.TableNextHopGroupSelect, Match: []FieldMatch{{FieldID: 1, Value: 8}}, OneShot: []WeightedAction{}}), ErrInvalidArgument},
	}
	for _, tc := range tests {
		if tc.want == nil && tc.err != nil || tc.want != nil && !isErr(tc.err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		}
	}

	// A group in use by an entry cannot go; its members neither; once the entry
	// is gone, everything can be deleted in order.
	mustOK(t, p.InsertEntry(&TableEntry{TableID: p4src.TableNextHopGroupSelect, Match: []FieldMatch{{FieldID: 1, Value: 7}}, GroupID: 10}))
	mustOK(t, p.InsertEntry(&TableEntry{TableID: p4src.TableNextHopGroupSelect, Match: []FieldMatch{{FieldID: 1, Value: 8}}, MemberID: 3}))
	if err := p.DeleteProfileGroup(p4src.ProfileNextHopSelector, 10); !isErr(err, ErrFailedPrecondition) {
		t.Errorf("delete group in use: %v", err)
	}
	if err := p.DeleteProfileMember(p4src.ProfileNextHopSelector, 3); !isErr(err, ErrFailedPrecondition) {
		t.Errorf("delete member in use by an entry: %v", err)
	}
	mustOK(t, p.DeleteEntry(nhGroupEntry(7)))
	mustOK(t, p.DeleteEntry(nhGroupEntry(8)))
	if err := p.DeleteProfileMember(p4src.ProfileNextHopSelector, 1); !isErr(err, ErrFailedPrecondition) {
		t.Errorf("delete member still in a group: %v", err)
	}
	mustOK(t, p.DeleteProfileGroup(p4src.ProfileNextHopSelector, 10))
	for _, id := range []uint32{1, 2, 3} {
		mustOK(t, p.DeleteProfileMember(p4src.ProfileNextHopSelector, id))
	}
	if ms, _ := p.ReadProfileMembers(0, 0, nil); len(ms) != 0 {
		t.Errorf("members left: %+v", ms)
	}
}

func TestProfileCapacity(t *testing.T) {
	p := ecmpPipeline(t)
	for id := uint32(1); id <= p4src.NextHopGroupMembers; id++ {
		mustOK(t, p.InsertProfileMember(nhMember(id, 3, macR)))
	}
	if err := p.InsertProfileMember(nhMember(p4src.NextHopGroupMembers+1, 3, macR)); !isErr(err, ErrResourceExhausted) {
		t.Errorf("member beyond the profile size: %v", err)
	}
	// Weights of all groups together: at most the size (SumOfWeights).
	mustOK(t, p.InsertProfileGroup(&ProfileGroup{ProfileID: p4src.ProfileNextHopSelector, GroupID: 1, Members: []GroupMember{{1, p4src.NextHopGroupMembers - 2}}}))
	mustOK(t, p.InsertProfileGroup(&ProfileGroup{ProfileID: p4src.ProfileNextHopSelector, GroupID: 2, Members: []GroupMember{{2, 2}}}))
	if err := p.InsertProfileGroup(&ProfileGroup{ProfileID: p4src.ProfileNextHopSelector, GroupID: 3, Members: []GroupMember{{3, 1}}}); !isErr(err, ErrResourceExhausted) {
		t.Errorf("a group beyond the total weight: %v", err)
	}
	// An empty group weighs nothing; a modify may reuse the weight it frees.
	mustOK(t, p.InsertProfileGroup(&ProfileGroup{ProfileID: p4src.ProfileNextHopSelector, GroupID: 3}))
	mustOK(t, p.ModifyProfileGroup(&ProfileGroup{ProfileID: p4src.ProfileNextHopSelector, GroupID: 2, Members: []GroupMember{{2, 1}}}))
	mustOK(t, p.ModifyProfileGroup(&ProfileGroup{ProfileID: p4src.ProfileNextHopSelector, GroupID: 3, Members: []GroupMember{{3, 1}}}))
	// A one-shot counts too.
	err := p.InsertEntry(&TableEntry{TableID: p4src.TableNextHopGroupSelect, Match: []FieldMatch{{FieldID: 1, Value: 1}},
		OneShot: []WeightedAction{{Action: Action{ID: p4src.ActionDrop}, Weight: 1}}})
	if !isErr(err, ErrResourceExhausted) {
		t.Errorf("one-shot beyond the total weight: %v", err)
	}
	mustOK(t, p.DeleteProfileGroup(p4src.ProfileNextHopSelector, 3))
	mustOK(t, p.InsertEntry(&TableEntry{TableID: p4src.TableNextHopGroupSelect, Match: []FieldMatch{{FieldID: 1, Value: 1}},
		OneShot: []WeightedAction{{Action: Action{ID: p4src.ActionDrop}, Weight: 1}}}))
	// Deleting the one-shot entry frees its weight.
	mustOK(t, p.DeleteEntry(nhGroupEntry(1)))
	mustOK(t, p.InsertProfileGroup(&ProfileGroup{ProfileID: p4src.ProfileNextHopSelector, GroupID: 3, Members: []GroupMember{{3, 1}}}))
}

// TestECMPSelection: the member is pick[hash % len(pick)], pick = members by ID,
// each weight times; weights shift the share of flows; modifying the group or a
// member changes the path; an empty group, a miss and a drop member drop.
func TestECMPSelection(t *testing.T) {
	p := ecmpPipeline(t)
	macs := map[uint16]wire.MAC{3: {2, 0, 0, 0, 0, 3}, 4: {2, 0, 0, 0, 0, 4}}
	mustOK(t, p.InsertProfileMember(nhMember(20, 4, macs[4])))
	mustOK(t, p.InsertProfileMember(nhMember(10, 3, macs[3])))
	// Written out of member-ID order: the selection order is by member ID.
	mustOK(t, p.InsertProfileGroup(&ProfileGroup{ProfileID: p4src.ProfileNextHopSelector, GroupID: 70,
		Members: []GroupMember{{20, 3}, {10, 1}}}))
	mustOK(t, p.InsertEntry(&TableEntry{TableID: p4src.TableNextHopGroupSelect, Match: []FieldMatch{{FieldID: 1, Value: 7}}, GroupID: 70}))
	pick := []uint16{3, 4, 4, 4} // member 10 once, member 20 three times
	counts := map[uint16]int{}
	for sport := uint16(1000); sport < 3000; sport++ {
		frame := ecmpFrame(t, sport)
		r := ingress(t, p, frame, portS, 1000)
		h := SelectorHash(ipS.Uint32(), 0x0A090005, wire.IPProtoUDP, sport, p4src.RoCEUDPPort)
		want := pick[int(h)%len(pick)]
		if r.Verdict != VerdictForward || r.EgressPort != want {
			t.Fatalf("sport %d: verdict %d port %d, want port %d", sport, r.Verdict, r.EgressPort, want)
		}
		if m := macs[want]; !slices.Equal(r.Frame[0:6], m[:]) {
			t.Fatalf("sport %d: dst MAC %x, want %x", sport, r.Frame[0:6], m)
		}
		counts[r.EgressPort]++
	}
	// 2000 flows, weights 1:3: 500 : 1500 expected; CRC-16 spreads them within 10%.
	if counts[3] < 400 || counts[3] > 600 || counts[3]+counts[4] != 2000 {
		t.Errorf("flows per port %v, want about 500 on 3 and 1500 on 4", counts)
	}
	// The same flow always takes the same path.
	a := ingress(t, p, ecmpFrame(t, 4242), portS, 1000).EgressPort
	for range 5 {
		if b := ingress(t, p, ecmpFrame(t, 4242), portS, 2000).EgressPort; b != a {
			t.Fatalf("flow moved from %d to %d", a, b)
		}
	}

	// Member 10 now leads to port 4 too: every flow goes to 4.
	mustOK(t, p.ModifyProfileMember(nhMember(10, 4, macs[4])))
	for sport := uint16(1000); sport < 1100; sport++ {
		if r := ingress(t, p, ecmpFrame(t, sport), portS, 1000); r.EgressPort != 4 {
			t.Fatalf("after member modify: sport %d port %d", sport, r.EgressPort)
		}
	}
	// Group of member 10 only, back on port 3.
	mustOK(t, p.ModifyProfileMember(nhMember(10, 3, macs[3])))
	mustOK(t, p.ModifyProfileGroup(&ProfileGroup{ProfileID: p4src.ProfileNextHopSelector, GroupID: 70, Members: []GroupMember{{10, 1}}}))
	if r := ingress(t, p, ecmpFrame(t, 1234), portS, 1000); r.EgressPort != 3 {
		t.Errorf("after group modify: port %d", r.EgressPort)
	}
	got, err := p.ReadProfileGroups(p4src.ProfileNextHopSelector, 70, nil)
	mustOK(t, err)
	if len(got) != 1 || !slices.Equal(got[0].Members, []GroupMember{{10, 1}}) {
		t.Errorf("read group: %+v", got)
	}

	// Empty group, group without an entry, drop member: dropped and counted.
	dropped := func() uint64 { return ctr(t, p, p4src.CounterDropped, portS).Packets }
	mustOK(t, p.ModifyProfileGroup(&ProfileGroup{ProfileID: p4src.ProfileNextHopSelector, GroupID: 70}))
	before := dropped()
	if r := ingress(t, p, ecmpFrame(t, 1), portS, 1000); r.Verdict != VerdictDrop || r.DropReason != DropNoRoute || dropped() != before+1 {
		t.Errorf("empty group: verdict %d reason %d dropped %d", r.Verdict, r.DropReason, dropped()-before)
	}
	mustOK(t, p.InsertProfileMember(&ProfileMember{ProfileID: p4src.ProfileNextHopSelector, MemberID: 30, Action: Action{ID: p4src.ActionDrop}}))
	mustOK(t, p.ModifyEntry(&TableEntry{TableID: p4src.TableNextHopGroupSelect, Match: []FieldMatch{{FieldID: 1, Value: 7}}, MemberID: 30}))
	if r := ingress(t, p, ecmpFrame(t, 1), portS, 1000); r.Verdict != VerdictDrop || dropped() != before+2 {
		t.Errorf("drop member: verdict %d dropped %d", r.Verdict, dropped()-before)
	}
	mustOK(t, p.DeleteEntry(nhGroupEntry(7)))
	if r := ingress(t, p, ecmpFrame(t, 1), portS, 1000); r.Verdict != VerdictDrop || dropped() != before+3 {
		t.Errorf("no entry for the group: verdict %d dropped %d", r.Verdict, dropped()-before)
	}

	// A one-shot entry: two anonymous members, read back as written.
	set := []WeightedAction{
		{Action: nhMember(0, 3, macs[3]).Action, Weight: 1},
		{Action: nhMember(0, 4, macs[4]).Action, Weight: 1},
	}
	mustOK(t, p.InsertEntry(&TableEntry{TableID: p4src.TableNextHopGroupSelect, Match: []FieldMatch{{FieldID: 1, Value: 7}}, OneShot: set}))
	for sport := uint16(1); sport < 200; sport++ {
		h := SelectorHash(ipS.Uint32(), 0x0A090005, wire.IPProtoUDP, sport, p4src.RoCEUDPPort)
		want := []uint16{3, 4}[h%2]
		if r := ingress(t, p, ecmpFrame(t, sport), portS, 1000); r.EgressPort != want {
			t.Fatalf("one-shot: sport %d port %d, want %d", sport, r.EgressPort, want)
		}
	}
	e, err := p.ReadEntry(nhGroupEntry(7))
	mustOK(t, err)
	if len(e.OneShot) != 2 || e.OneShot[1].Weight != 1 || e.OneShot[1].Action.Params[0].Value != 4 || e.GroupID != 0 || e.Action.ID != 0 {
		t.Errorf("one-shot read back: %+v", e)
	}
}

// TestECMPNonUDPHashesZeroPorts: without a parsed UDP header the L4 selector fields
// are 0 (v1model: the program copies them only from a valid UDP header).
func TestECMPNonUDPHashesZeroPorts(t *testing.T) {
	p := ecmpPipeline(t)
	for id, port := range map[uint32]uint16{1: 3, 2: 4, 3: 5} {
		mustOK(t, p.InsertProfileMember(nhMember(id, port, macR)))
	}
	mustOK(t, p.InsertProfileGroup(&ProfileGroup{ProfileID: p4src.ProfileNextHopSelector, GroupID: 1,
		Members: []GroupMember{{1, 1}, {2, 1}, {3, 1}}}))
	mustOK(t, p.InsertEntry(&TableEntry{TableID: p4src.TableNextHopGroupSelect, Match: []FieldMatch{{FieldID: 1, Value: 7}}, GroupID: 1}))
	for last := byte(1); last < 60; last++ {
		// Ethernet, IPv4 (protocol 6, TTL 64), 20 bytes of TCP.
		b := make([]byte, 14+20+20)
		copy(b[0:6], macSw[:])
		copy(b[6:12], macS[:])
		b[12], b[13] = 0x08, 0x00
		ip := b[14:]
		ip[0], ip[8], ip[9] = 0x45, 64, 6
		binary.BigEndian.PutUint16(ip[2:], 40)
		copy(ip[12:16], []byte{10, 0, 0, last})
		copy(ip[16:20], []byte{10, 9, 0, 5})
		mustOK(t, wire.SetIPv4Checksum(ip))
		n := len(b)
		h := SelectorHash(wire.Addr4{10, 0, 0, last}.Uint32(), 0x0A090005, 6, 0, 0)
		want := []uint16{3, 4, 5}[h%3]
		if r := ingress(t, p, b[:n], portS, 1000); r.EgressPort != want {
			t.Fatalf("TCP from .%d: port %d, want %d", last, r.EgressPort, want)
		}
	}
}

func TestECMPPathDoesNotAllocate(t *testing.T) {
	p := ecmpPipeline(t)
	mustOK(t, p.InsertProfileMember(nhMember(1, 3, macR)))
	mustOK(t, p.InsertProfileMember(nhMember(2, 4, macR)))
	mustOK(t, p.InsertProfileGroup(&ProfileGroup{ProfileID: p4src.ProfileNextHopSelector, GroupID: 1, Members: []GroupMember{{1, 1}, {2, 2}}}))
	mustOK(t, p.InsertEntry(&TableEntry{TableID: p4src.TableNextHopGroupSelect, Match: []FieldMatch{{FieldID: 1, Value: 7}}, GroupID: 1}))
	frame := ecmpFrame(t, 777)
	buf := make([]byte, len(frame))
	var r IngressResult
	allocs := testing.AllocsPerRun(200, func() {
		copy(buf, frame)
		_ = p.Ingress(buf, portS, 1000, &r)
	})
	if r.Verdict != VerdictForward || allocs != 0 {
		t.Errorf("verdict %d, %v allocations per packet", r.Verdict, allocs)
	}
}
