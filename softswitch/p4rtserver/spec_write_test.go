package p4rtserver

// Spec-conformance tests of writes (P4Runtime specification v1.5.0, section numbers
// of docs/v1/P4Runtime-Spec.adoc at tag v1.5.0): table entries (9.1), counters
// (9.3.2) and registers (9.7). Each case quotes the sentence it checks.

import (
	"testing"

	"github.com/fastcnp/fastcnp/p4src"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// writeCode writes one update and returns its code: OK, or its p4.v1.Error code.
func writeCode(t *testing.T, h *harness, u *p4v1.Update) codes.Code {
	t.Helper()
	err := h.write(t, 10, u)
	if err == nil {
		return codes.OK
	}
	got := updateErrors(t, err)
	if len(got) != 1 {
		t.Fatalf("%d errors for one update: %v", len(got), err)
	}
	return got[0]
}

// teMsg wraps a TableEntry message in an entity.
func teMsg(e *p4v1.TableEntry) *p4v1.Entity { return tableEnt(e) }

// routeMsg is the ipv4_route entry dst/plen -> set_nexthop(port, 2, 3) as a message.
func routeMsg(dst []byte, plen int32, port byte) *p4v1.TableEntry {
	return route(dst, plen, b(port)).GetTableEntry()
}

// TestSpecTableEntryWriteFlags: is_const and time_since_last_hit in a write.
func TestSpecTableEntryWriteFlags(t *testing.T) {
	// Spec 9.1: "The `is_const` field must be `false` in any `INSERT`, `MODIFY`, or
	// `DELETE` write request of a table entry. If it is true, the server must reject
	// the operation and return an `INVALID_ARGUMENT` error."
	// Spec 9.1.8: "The `time_since_last_hit` field must be unset for a `TableEntry`
	// write." and "If idle timeout is not supported by the table, the P4Runtime
	// server must return an `INVALID_ARGUMENT` error code if at least one of these
	// conditions is met: [...] `time_since_last_hit` is set"; "When the
	// `is_default_action` flag is set [...] `time_since_last_hit` must be unset. If
	// the server receives a `TableEntry` message which violates this, it must return
	// an `INVALID_ARGUMENT` error."
	h, _ := ready(t)
	baseline(t, h) // route 10.0.0.0/8 exists
	constE := func(e *p4v1.TableEntry) *p4v1.Entity { e.IsConst = true; return teMsg(e) }
	hitE := func(e *p4v1.TableEntry) *p4v1.Entity {
		e.TimeSinceLastHit = &p4v1.TableEntry_IdleTimeout{}
		return teMsg(e)
	}
	def := func() *p4v1.TableEntry {
		return &p4v1.TableEntry{TableId: p4src.TableIPv4Route, IsDefaultAction: true, Action: act(p4src.ActionDrop)}
	}
	for _, c := range []struct {
		name string
		u    *p4v1.Update
		want codes.Code
	}{
		{"INSERT is_const", ins(constE(routeMsg(b(11, 0, 0, 0), 8, 1))), codes.InvalidArgument},
		{"MODIFY is_const", mod(constE(routeMsg(b(10, 0, 0, 0), 8, 5))), codes.InvalidArgument},
		{"DELETE is_const", del(constE(routeMsg(b(10, 0, 0, 0), 8, 1))), codes.InvalidArgument},
		{"MODIFY default entry is_const", mod(constE(def())), codes.InvalidArgument},
		{"INSERT time_since_last_hit", ins(hitE(routeMsg(b(11, 0, 0, 0), 8, 1))), codes.InvalidArgument},
		{"MODIFY time_since_last_hit", mod(hitE(routeMsg(b(10, 0, 0, 0), 8, 5))), codes.InvalidArgument},
		{"DELETE time_since_last_hit", del(hitE(routeMsg(b(10, 0, 0, 0), 8, 1))), codes.InvalidArgument},
		{"MODIFY default entry time_since_last_hit", mod(hitE(def())), codes.InvalidArgument},
		{"INSERT time_since_last_hit with elapsed_ns", ins(teMsg(&p4v1.TableEntry{TableId: p4src.TableIPv4Route,
			Match: []*p4v1.FieldMatch{lpm(1, b(11), 8)}, Action: nhAct(1), TimeSinceLastHit: &p4v1.TableEntry_IdleTimeout{ElapsedNs: 5}})), codes.InvalidArgument},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := h.snapshot(t)
			if got := writeCode(t, h, c.u); got != c.want {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			if !sameSnapshot(before, h.snapshot(t)) {
				t.Fatal("a refused write changed the state")
			}
		})
	}
	// The same updates without the flags are fine (the refusals above are the flags').
	h.mustWrite(t, ins(route(b(11, 0, 0, 0), 8, b(1))), mod(route(b(10, 0, 0, 0), 8, b(5))), del(route(b(11, 0, 0, 0), 8, b(1))))
}

// TestSpecDeleteIgnoresNonKeyFields: a DELETE considers the key only.
func TestSpecDeleteIgnoresNonKeyFields(t *testing.T) {
	// Spec 9.1: "When deleting an entry, these key fields (along with
	// `is_default_action`) are the only fields considered by the server. All other
	// fields must be ignored, even if they have nonsensical values (such as an
	// invalid action field)."
	for _, c := range []struct {
		name string
		junk func(e *p4v1.TableEntry)
	}{
		{"invalid action", func(e *p4v1.TableEntry) { e.Action = act(0x01000099) }},
		{"counter_data", func(e *p4v1.TableEntry) { e.CounterData = &p4v1.CounterData{PacketCount: 3} }},
		{"meter_config", func(e *p4v1.TableEntry) { e.MeterConfig = &p4v1.MeterConfig{Cir: 1} }},
		{"meter_counter_data", func(e *p4v1.TableEntry) { e.MeterCounterData = &p4v1.MeterCounterData{} }},
		{"metadata", func(e *p4v1.TableEntry) { e.ControllerMetadata, e.Metadata = 9, b(9) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, _ := ready(t)
			h.mustWrite(t, ins(route(b(10, 0, 0, 0), 8, b(1))))
			e := routeMsg(b(10, 0, 0, 0), 8, 1)
			c.junk(e)
			if got := writeCode(t, h, del(teMsg(e))); got != codes.OK {
				t.Fatalf("DELETE with %s: %v, want OK", c.name, got)
			}
			if got := h.mustRead(t, te(p4src.TableIPv4Route, 0, nil)); len(got) != 0 {
				t.Fatalf("entry still there: %v", got)
			}
		})
	}
}

// TestSpecModifyWithoutAction: a MODIFY that leaves the action unset.
func TestSpecModifyWithoutAction(t *testing.T) {
	// Spec 9.1.2: "The `TableEntry` `action` field must be set for every `INSERT`
	// update but may be left unset for `MODIFY` updates, in which case the action
	// specification for the table entry will not be modified (if a `MODIFY` update
	// has an unset action field and does not modify any direct resource attached to
	// the table then the `MODIFY` update is a no-op)." The program's tables have no
	// direct resources, so such a MODIFY changes nothing (its metadata included) but
	// the entry must exist (NOT_FOUND otherwise, as any MODIFY).
	nhs := p4src.ProfileNextHopSelector
	withMeta := func(e *p4v1.Entity, cm uint64, md []byte) *p4v1.Entity {
		e.GetTableEntry().ControllerMetadata, e.GetTableEntry().Metadata = cm, md
		return e
	}
	tc := te(p4src.TableTrafficClass, 5, act(p4src.ActionSetTrafficClass, param(1, b(3)), param(2, b(1))), exact(1, b(0)), ternary(3, b(0x1a), b(0x3f)))
	memberRef := &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileMemberId{ActionProfileMemberId: 1}}
	set := oneShot(0, &p4v1.ActionProfileAction{Action: nhAct(3).GetAction(), Weight: 2})
	for _, c := range []struct {
		name  string
		setup []*p4v1.Update
		entry *p4v1.Entity // as installed and as it must read back
		mod   *p4v1.Entity // the MODIFY (no action)
		want  codes.Code
	}{
		{"lpm entry with metadata", []*p4v1.Update{ins(withMeta(route(b(10, 1, 0, 0), 16, b(1)), 7, b(1, 2)))},
			withMeta(route(b(10, 1, 0, 0), 16, b(1)), 7, b(1, 2)),
			withMeta(te(p4src.TableIPv4Route, 0, nil, lpm(1, b(10, 1, 0, 0), 16)), 9, b(3)), codes.OK},
		{"lpm entry, metadata unset", []*p4v1.Update{ins(withMeta(route(b(10, 1, 0, 0), 16, b(1)), 7, b(1, 2)))},
			withMeta(route(b(10, 1, 0, 0), 16, b(1)), 7, b(1, 2)),
			te(p4src.TableIPv4Route, 0, nil, lpm(1, b(10, 1, 0, 0), 16)), codes.OK},
		{"ternary entry", []*p4v1.Update{ins(tc)}, tc,
			te(p4src.TableTrafficClass, 5, nil, exact(1, b(0)), ternary(3, b(0x1a), b(0x3f))), codes.OK},
		{"entry running a member", []*p4v1.Update{ins(memberEnt(nhs, 1, nhAct(2))), ins(te(p4src.TableNextHopGroupSelect, 0, memberRef, exact(1, b(7))))},
			te(p4src.TableNextHopGroupSelect, 0, memberRef, exact(1, b(7))),
			te(p4src.TableNextHopGroupSelect, 0, nil, exact(1, b(7))), codes.OK},
		{"entry running a one-shot", []*p4v1.Update{ins(te(p4src.TableNextHopGroupSelect, 0, set, exact(1, b(7))))},
			te(p4src.TableNextHopGroupSelect, 0, set, exact(1, b(7))),
			te(p4src.TableNextHopGroupSelect, 0, nil, exact(1, b(7))), codes.OK},
		{"absent entry", nil, nil, te(p4src.TableIPv4Route, 0, nil, lpm(1, b(10, 1, 0, 0), 16)), codes.NotFound},
		{"bad key", nil, nil, te(p4src.TableIPv4Route, 0, nil, lpm(1, b(10, 1, 0, 1), 16)), codes.InvalidArgument},
		{"ternary entry without its priority", []*p4v1.Update{ins(tc)}, tc,
			te(p4src.TableTrafficClass, 0, nil, exact(1, b(0)), ternary(3, b(0x1a), b(0x3f))), codes.InvalidArgument},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, _ := ready(t)
			if len(c.setup) > 0 {
				h.mustWrite(t, c.setup...)
			}
			before := h.snapshot(t)
			if got := writeCode(t, h, mod(c.mod)); got != c.want {
				t.Fatalf("MODIFY without action: %v, want %v", got, c.want)
			}
			if !sameSnapshot(before, h.snapshot(t)) {
				t.Fatal("MODIFY without action changed the state")
			}
			if c.entry != nil {
				key := proto.Clone(c.entry).(*p4v1.Entity)
				key.GetTableEntry().Action, key.GetTableEntry().ControllerMetadata, key.GetTableEntry().Metadata = nil, 0, nil
				equal(t, "entry after the MODIFY", one(t, h, key), c.entry)
			}
		})
	}
}

// TestSpecDefaultEntry: the default entry's MODIFY rules and metadata.
func TestSpecDefaultEntry(t *testing.T) {
	// Spec 9.1.3: "we do not allow `INSERT` and `DELETE` updates on the default
	// entry and the P4Runtime server must return an `INVALID_ARGUMENT` error code if
	// the client attempts one." "When this flag is set to true, the repeated `match`
	// field must be empty and the `priority` field must be set to zero, otherwise the
	// P4Runtime server must return an `INVALID_ARGUMENT` error code. When performing a
	// `MODIFY` update on the default entry, the client can either provide a valid
	// action for the table or leave the action field unset, in which case the
	// default entry will be reset to its original value, as defined in the P4
	// program. When resetting the default entry, its `controller_metadata` and
	// `metadata` value [...] will be reset to their defaults." "Apart from the above
	// restrictions, the default entry is treated like a regular entry" (so its
	// metadata are stored and read back, spec 9.1: "it must be returned by the server
	// along with the rest of the entry when the client performs a read").
	h, _ := ready(t)
	defKey := &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: p4src.TableIPv4Route, IsDefaultAction: true}}}
	defWith := func(a *p4v1.TableAction, cm uint64, md []byte) *p4v1.Entity {
		return teMsg(&p4v1.TableEntry{TableId: p4src.TableIPv4Route, IsDefaultAction: true, Action: a, ControllerMetadata: cm, Metadata: md})
	}
	nh := nhAct(4)
	for _, c := range []struct {
		name string
		u    *p4v1.Update
		want codes.Code
		read *p4v1.Entity // the default entry read afterwards (nil: unchanged)
	}{
		{"MODIFY with an action and metadata", mod(defWith(nh, 42, b(7, 7))), codes.OK, defWith(nh, 42, b(7, 7))},
		{"MODIFY with an action, metadata cleared", mod(defWith(nh, 0, nil)), codes.OK, defWith(nh, 0, nil)},
		{"MODIFY with metadata again", mod(defWith(nh, 43, b(8))), codes.OK, defWith(nh, 43, b(8))},
		{"INSERT", ins(defWith(act(p4src.ActionDrop), 0, nil)), codes.InvalidArgument, nil},
		{"DELETE", del(defWith(nil, 0, nil)), codes.InvalidArgument, nil},
		{"with a match", mod(teMsg(&p4v1.TableEntry{TableId: p4src.TableIPv4Route, IsDefaultAction: true, Action: nh,
			Match: []*p4v1.FieldMatch{lpm(1, b(11), 8)}})), codes.InvalidArgument, nil},
		{"with a priority", mod(teMsg(&p4v1.TableEntry{TableId: p4src.TableIPv4Route, IsDefaultAction: true, Action: nh, Priority: 1})), codes.InvalidArgument, nil},
		{"with idle_timeout_ns", mod(teMsg(&p4v1.TableEntry{TableId: p4src.TableIPv4Route, IsDefaultAction: true, Action: nh, IdleTimeoutNs: 5})), codes.InvalidArgument, nil},
		{"action not of the table", mod(defWith(act(p4src.ActionSetWindow, param(1, b(1))), 0, nil)), codes.InvalidArgument, nil},
		{"MODIFY without an action resets action and metadata", mod(defWith(nil, 99, b(9))), codes.OK, defWith(act(p4src.ActionDrop), 0, nil)},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := one(t, h, defKey)
			if got := writeCode(t, h, c.u); got != c.want {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			want := c.read
			if want == nil {
				want = before
			}
			equal(t, "default entry", one(t, h, defKey), want)
		})
	}
}

// TestSpecCounterRegisterCells: indexes and data of CounterEntry and RegisterEntry.
func TestSpecCounterRegisterCells(t *testing.T) {
	// Spec 9.3.2 (CounterEntry MODIFY): "The counter value is set to the value
	// specified by the client in the `data` field. Note that the counter value is not
	// modified if this Protobuf field is not set. If `index` is omitted all counter
	// values in the array will be set to the value provided by the client. The server
	// must return `INVALID_ARGUMENT` for a negative index value and `OUT_OF_RANGE` if
	// the index value exceeds the size of the counter array."
	// Spec 9.7 (RegisterEntry): "When an `index` is provided , the server must
	// validate its value, and return `INVALID_ARGUMENT` for a negative index or
	// `OUT_OF_RANGE` if the index exceeds the size of the register array." "The
	// `data` field is a `P4Data` message and must match the format described by the
	// `type_spec` field of the corresponding Register entry in the P4Info, or the
	// server must return an `INVALID_ARGUMENT` error." (No "unset: unchanged" rule
	// for registers: a RegisterEntry MODIFY without data is refused.)
	// Spec 9.3.1: "`data` is used to set the counter value [...] Note that if this
	// Protobuf field is not set, the counter value is not modified." (DirectCounterEntry;
	// the program has no direct counters, so any DirectCounterEntry write is refused.)
	h, _ := ready(t)
	cid, rid := p4src.CounterDropped, p4src.RegPortQueueBytes
	h.mustWrite(t, mod(counterEnt(cid, -1, 2, 20)), mod(counterEnt(cid, 3, 4, 5)), mod(registerEnt(rid, -1, b(6))), mod(registerEnt(rid, 2, b(9))))
	noData := func(idx *p4v1.Index) *p4v1.Entity {
		return &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: cid, Index: idx}}}
	}
	for _, c := range []struct {
		name   string
		u      *p4v1.Update
		want   codes.Code
		change bool // the state changes (OK updates that write something)
	}{
		{"counter index = size", mod(counterEnt(cid, p4src.NumPorts, 1, 1)), codes.OutOfRange, false},
		{"counter index far beyond", mod(counterEnt(cid, 1<<40, 1, 1)), codes.OutOfRange, false},
		{"counter negative index", mod(&p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: cid,
			Index: &p4v1.Index{Index: -1}, Data: &p4v1.CounterData{}}}}), codes.InvalidArgument, false},
		{"counter MODIFY without data, one cell", mod(noData(&p4v1.Index{Index: 3})), codes.OK, false},
		{"counter MODIFY without data, every cell", mod(noData(nil)), codes.OK, false},
		{"counter MODIFY without data, index out of range", mod(noData(&p4v1.Index{Index: p4src.NumPorts})), codes.OutOfRange, false},
		{"counter MODIFY with zero data", mod(counterEnt(cid, 3, 0, 0)), codes.OK, true},
		{"register index = size", mod(registerEnt(rid, p4src.NumPorts, b(1))), codes.OutOfRange, false},
		{"register negative index", mod(&p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{RegisterId: rid,
			Index: &p4v1.Index{Index: -2}, Data: &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: b(1)}}}}}), codes.InvalidArgument, false},
		{"register MODIFY without data, one cell", mod(registerEnt(rid, 2, nil)), codes.InvalidArgument, false},
		{"register MODIFY without data, every cell", mod(registerEnt(rid, -1, nil)), codes.InvalidArgument, false},
		{"register data not a bitstring", mod(&p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{RegisterId: rid,
			Index: &p4v1.Index{Index: 2}, Data: &p4v1.P4Data{Data: &p4v1.P4Data_Bool{Bool: true}}}}}), codes.InvalidArgument, false},
		{"direct counter entry without data", mod(&p4v1.Entity{Entity: &p4v1.Entity_DirectCounterEntry{DirectCounterEntry: &p4v1.DirectCounterEntry{
			TableEntry: routeMsg(b(10, 0, 0, 0), 8, 1)}}}), codes.InvalidArgument, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := h.snapshot(t)
			if got := writeCode(t, h, c.u); got != c.want {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			if !c.change && !sameSnapshot(before, h.snapshot(t)) {
				t.Fatal("the cells changed")
			}
		})
	}
	equal(t, "counter cell 3", one(t, h, counterEnt(cid, 3, 0, 0)), counterEnt(cid, 3, 0, 0))
	equal(t, "counter cell 4", one(t, h, counterEnt(cid, 4, 0, 0)), counterEnt(cid, 4, 2, 20))
	equal(t, "register cell 2", one(t, h, registerEnt(rid, 2, nil)), registerEnt(rid, 2, b(9)))

	// Reads answer an index the same way, per request (spec 13.3).
	for _, c := range []struct {
		name string
		e    *p4v1.Entity
		want codes.Code
	}{
		{"read counter index = size", counterEnt(cid, p4src.NumPorts, 0, 0), codes.OutOfRange},
		{"read counter negative index", &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: cid, Index: &p4v1.Index{Index: -1}}}}, codes.InvalidArgument},
		{"read register index = size", registerEnt(rid, p4src.NumPorts, nil), codes.OutOfRange},
		{"read register negative index", &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{RegisterId: rid,
			Index: &p4v1.Index{Index: -5}}}}, codes.InvalidArgument},
	} {
		t.Run(c.name, func(t *testing.T) {
			ents, got := readCodes(t, h, c.e)
			if len(ents) != 0 || len(got) != 1 || got[0] != c.want {
				t.Fatalf("got %d entities, codes %v, want [%v]", len(ents), got, c.want)
			}
		})
	}
}
