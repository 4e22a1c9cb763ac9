package p4rtserver

// Spec-conformance tests of reads (P4Runtime specification v1.5.0): the filters of
// a TableEntry wildcard read (9.1.6) and per-request errors of a Read batch (13.3).

import (
	"slices"
	"testing"

	"github.com/fastcnp/fastcnp/p4src"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// readCodes reads entities and returns what was streamed and one code per request:
// all OK when the Read succeeds, else the p4.v1.Error details of its UNKNOWN status.
func readCodes(t *testing.T, h *harness, entities ...*p4v1.Entity) ([]*p4v1.Entity, []codes.Code) {
	t.Helper()
	out, err := h.read(t, entities...)
	if err == nil {
		cs := make([]codes.Code, len(entities))
		return out, cs
	}
	st, _ := status.FromError(err)
	if st.Code() != codes.Unknown {
		t.Fatalf("Read failed with %v, want OK or UNKNOWN with per-request details", err)
	}
	var cs []codes.Code
	for _, d := range st.Details() {
		pe, ok := d.(*p4v1.Error)
		if !ok {
			t.Fatalf("detail %T is not a p4.v1.Error", d)
		}
		cs = append(cs, codes.Code(pe.GetCanonicalCode()))
	}
	if len(cs) != len(entities) {
		t.Fatalf("%d details for %d requests: %v", len(cs), len(entities), err)
	}
	return out, cs
}

// marshalSorted returns the entities marshalled (deterministic) and sorted.
func marshalSorted(t *testing.T, es []*p4v1.Entity) []string {
	t.Helper()
	out := make([]string, len(es))
	for i, e := range es {
		bs, err := proto.MarshalOptions{Deterministic: true}.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(bs)
	}
	slices.Sort(out)
	return out
}

// TestSpecWildcardReadFilters: every TableEntry field the spec lists as a filter.
func TestSpecWildcardReadFilters(t *testing.T) {
	// Spec 9.1.6: "the P4Runtime client can select all entries from one or all tables
	// on the target and use several of the `TableEntry` fields to filter the results
	// [...] the client may use the default value for the field to act as a wildcard.
	// [...] The following fields may be used to select and filter results:
	// `table_id`: If default (0), entries from all tables [...] will be selected [...].
	// `match`: [...] results will be filtered based on the provided match key, which
	// must be a valid match key for the table. The match will be exact [...].
	// `action`: [...] the client can provide an `action_id` (for direct tables),
	// which will be use to filter table entries. For this P4Runtime release, this is
	// the only kind of action-based filtering we support: the client cannot filter
	// based on action parameter values and cannot filter indirect table entries based
	// on action profile member id / action profile group id.
	// `priority`: If default (0), all entries [...]. Otherwise, results will be
	// filtered based on the provided priority value.
	// `controller_metadata`: [...] filtered based on the provided
	// `controller_metadata` value. `metadata`: [...] filtered based on the provided
	// `metadata` value. `is_default_action`: If default (false), all non-default
	// entries from the specified table will be considered. Otherwise, only the
	// default entry will be considered."
	// "This issue also exists for tables with `TERNARY` [...] matches. However, in
	// this case the priority is also taken into account for wildcard reads" (a match
	// with priority 0 reads that key at every priority).
	// Spec 9.1.8: "If idle timeout is not supported by the table, the P4Runtime server
	// must return an `INVALID_ARGUMENT` error code if at least one of these conditions
	// is met: `idle_timeout_ns` is set to a non-zero value, or `time_since_last_hit`
	// is set".
	h, _ := ready(t)
	meta := func(e *p4v1.Entity, cm uint64, md []byte) *p4v1.Entity {
		e.GetTableEntry().ControllerMetadata, e.GetTableEntry().Metadata = cm, md
		return e
	}
	r1 := meta(route(b(10, 1, 0, 0), 16, b(1)), 1, b(0xa))
	r2 := meta(te(p4src.TableIPv4Route, 0, act(p4src.ActionDrop), lpm(1, b(10, 2, 0, 0), 16)), 2, b(0xb))
	r3 := te(p4src.TableIPv4Route, 0, act(p4src.ActionSetNextHopGroup, param(1, b(7))), lpm(1, b(10, 3, 0, 0), 16))
	tcA := act(p4src.ActionSetTrafficClass, param(1, b(3)), param(2, b(1)))
	t5 := te(p4src.TableTrafficClass, 5, tcA, exact(1, b(0)), ternary(2, b(1), b(7)))
	t6 := meta(te(p4src.TableTrafficClass, 6, tcA, exact(1, b(0)), ternary(2, b(1), b(7))), 1, nil)
	t7 := te(p4src.TableTrafficClass, 7, tcA, exact(1, b(1)), ternary(3, b(0x1a), b(0x3f)))
	l1 := meta(te(p4src.TableL2Forward, 0, act(p4src.ActionDrop), exact(1, b(2, 0, 0, 0, 0, 1))), 1, nil)
	def := teMsg(&p4v1.TableEntry{TableId: p4src.TableIPv4Route, IsDefaultAction: true, Action: act(p4src.ActionDrop), ControllerMetadata: 1})
	h.mustWrite(t, ins(r1), ins(r2), ins(r3), ins(t5), ins(t6), ins(t7), ins(l1), mod(def))

	q := func(f func(e *p4v1.TableEntry)) *p4v1.Entity {
		e := &p4v1.TableEntry{}
		f(e)
		return teMsg(e)
	}
	route4, tc := p4src.TableIPv4Route, p4src.TableTrafficClass
	for _, c := range []struct {
		name string
		req  *p4v1.Entity
		want []*p4v1.Entity
		code codes.Code // of the request, OK when want is what it reads
	}{
		{"table", q(func(e *p4v1.TableEntry) { e.TableId = route4 }), []*p4v1.Entity{r1, r2, r3}, codes.OK},
		{"action set_nexthop", q(func(e *p4v1.TableEntry) { e.TableId, e.Action = route4, act(p4src.ActionSetNexthop) }), []*p4v1.Entity{r1}, codes.OK},
		{"action drop", q(func(e *p4v1.TableEntry) { e.TableId, e.Action = route4, act(p4src.ActionDrop) }), []*p4v1.Entity{r2}, codes.OK},
		{"action drop in every table", q(func(e *p4v1.TableEntry) { e.Action = act(p4src.ActionDrop) }), []*p4v1.Entity{r2, l1}, codes.OK},
		{"action_id 0 is a wildcard", q(func(e *p4v1.TableEntry) { e.TableId, e.Action = route4, act(0) }), []*p4v1.Entity{r1, r2, r3}, codes.OK},
		{"controller_metadata", q(func(e *p4v1.TableEntry) { e.TableId, e.ControllerMetadata = route4, 2 }), []*p4v1.Entity{r2}, codes.OK},
		{"controller_metadata in every table", q(func(e *p4v1.TableEntry) { e.ControllerMetadata = 1 }), []*p4v1.Entity{r1, t6, l1}, codes.OK},
		{"metadata", q(func(e *p4v1.TableEntry) { e.TableId, e.Metadata = route4, b(0xa) }), []*p4v1.Entity{r1}, codes.OK},
		{"metadata matching none", q(func(e *p4v1.TableEntry) { e.TableId, e.Metadata = route4, b(0xc) }), nil, codes.OK},
		{"priority", q(func(e *p4v1.TableEntry) { e.TableId, e.Priority = tc, 6 }), []*p4v1.Entity{t6}, codes.OK},
		{"match at priority 0: every priority", te(tc, 0, nil, exact(1, b(0)), ternary(2, b(1), b(7))), []*p4v1.Entity{t5, t6}, codes.OK},
		{"match and priority", te(tc, 5, nil, exact(1, b(0)), ternary(2, b(1), b(7))), []*p4v1.Entity{t5}, codes.OK},
		{"match and controller_metadata", q(func(e *p4v1.TableEntry) {
			e.TableId, e.Match, e.ControllerMetadata = tc, []*p4v1.FieldMatch{exact(1, b(0)), ternary(2, b(1), b(7))}, 1
		}), []*p4v1.Entity{t6}, codes.OK},
		{"match and action not its own", q(func(e *p4v1.TableEntry) {
			e.TableId, e.Match, e.Action = route4, []*p4v1.FieldMatch{lpm(1, b(10, 1, 0, 0), 16)}, act(p4src.ActionDrop)
		}), nil, codes.OK},
		{"priority and action", q(func(e *p4v1.TableEntry) { e.TableId, e.Priority, e.Action = tc, 7, act(p4src.ActionSetTrafficClass) }), []*p4v1.Entity{t7}, codes.OK},
		{"default entry", q(func(e *p4v1.TableEntry) { e.TableId, e.IsDefaultAction = route4, true }), []*p4v1.Entity{def}, codes.OK},
		{"default entry, action filter kept", q(func(e *p4v1.TableEntry) { e.TableId, e.IsDefaultAction, e.Action = route4, true, act(p4src.ActionDrop) }), []*p4v1.Entity{def}, codes.OK},
		{"default entry, action filter dropped", q(func(e *p4v1.TableEntry) {
			e.TableId, e.IsDefaultAction, e.Action = route4, true, act(p4src.ActionSetNexthop)
		}), nil, codes.OK},
		{"default entries by controller_metadata", q(func(e *p4v1.TableEntry) { e.IsDefaultAction, e.ControllerMetadata = true, 1 }), []*p4v1.Entity{def}, codes.OK},
		{"default entry with a priority", q(func(e *p4v1.TableEntry) { e.TableId, e.IsDefaultAction, e.Priority = route4, true, 3 }), nil, codes.InvalidArgument},
		{"action parameters", q(func(e *p4v1.TableEntry) { e.TableId, e.Action = route4, nhAct(1) }), nil, codes.Unimplemented},
		{"member ID", q(func(e *p4v1.TableEntry) {
			e.TableId, e.Action = p4src.TableNextHopGroupSelect, &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileMemberId{ActionProfileMemberId: 1}}
		}), nil, codes.Unimplemented},
		{"group ID", q(func(e *p4v1.TableEntry) {
			e.Action = &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileGroupId{ActionProfileGroupId: 1}}
		}), nil, codes.Unimplemented},
		{"direct action in the selector table", q(func(e *p4v1.TableEntry) { e.TableId, e.Action = p4src.TableNextHopGroupSelect, act(p4src.ActionDrop) }), nil, codes.InvalidArgument},
		{"action not of the table", q(func(e *p4v1.TableEntry) { e.TableId, e.Action = route4, act(p4src.ActionSetWindow) }), nil, codes.InvalidArgument},
		{"unknown action", q(func(e *p4v1.TableEntry) { e.TableId, e.Action = route4, act(0x01000099) }), nil, codes.InvalidArgument},
		{"time_since_last_hit", q(func(e *p4v1.TableEntry) { e.TableId, e.TimeSinceLastHit = route4, &p4v1.TableEntry_IdleTimeout{} }), nil, codes.InvalidArgument},
		{"time_since_last_hit in every table", q(func(e *p4v1.TableEntry) { e.TimeSinceLastHit = &p4v1.TableEntry_IdleTimeout{} }), nil, codes.InvalidArgument},
		{"idle_timeout_ns", q(func(e *p4v1.TableEntry) { e.TableId, e.IdleTimeoutNs = route4, 5 }), nil, codes.InvalidArgument},
		{"invalid match", te(route4, 0, nil, lpm(1, b(10, 1, 0, 1), 16)), nil, codes.InvalidArgument},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, cs := readCodes(t, h, c.req)
			if cs[0] != c.code {
				t.Fatalf("request code %v, want %v", cs[0], c.code)
			}
			if !slices.Equal(marshalSorted(t, got), marshalSorted(t, c.want)) {
				t.Fatalf("read %d entities:\n%v\nwant %d:\n%v", len(got), got, len(c.want), c.want)
			}
		})
	}
}

// TestReadBatchPerRequestErrors: a bad request does not fail the others.
func TestReadBatchPerRequestErrors(t *testing.T) {
	// Spec 13.3: "Lock state (preventing new writes) and validate each *request* in
	// the batch: If it is a valid *request*, perform the read; [...] If the *request*
	// is invalid (invalid-argument, not-supported, etc.), prepare a `p4.Error` with
	// relevant canonical code to capture the error. [...] Close the `ReadResponse`
	// stream and return a `grpc::Status` as follows: If no errors were encountered,
	// set code to `OK` [...]. Otherwise, the overall code should be set to `UNKNOWN`.
	// [...] Assemble a list of `p4.Error` messages (from step 1 above) such that each
	// element reflects the status of the request in the batch at the same location
	// (1:1 correspondence)." Example: "If a client asked to read `{a,b,c,d}` and `b`
	// and `d` *requests* didn't validate, the server will return entities
	// corresponding to `a` and `c`, followed by a status `{p4.Error(OK),
	// p4.Error(xxx), p4.Error(yyy), p4.Error(OK)}`".
	// Spec 13.2: "The `entity` oneof field in the `Entity` message must always be
	// set, or the server must return an `INVALID_ARGUMENT` error."
	h, _ := ready(t)
	baseline(t, h)
	goodA := te(p4src.TableIPv4Route, 0, nil)
	goodB := valueSetEnt(p4src.AnnounceUDPPortID)
	wantA, wantB := h.mustRead(t, goodA), h.mustRead(t, goodB)
	if len(wantA) != 1 || len(wantB) != 1 {
		t.Fatalf("baseline reads %d and %d entities", len(wantA), len(wantB))
	}
	ia := codes.InvalidArgument
	for _, c := range []struct {
		name string
		bad  *p4v1.Entity
		code codes.Code
	}{
		{"unknown table", te(0x02000099, 0, nil), ia},
		{"every table with a match", te(0, 0, nil, lpm(1, b(10), 8)), ia},
		{"bad match", te(p4src.TableIPv4Route, 0, nil, lpm(1, b(10, 0, 0, 1), 8)), ia},
		{"unknown counter", counterEnt(0x12000099, -1, 0, 0), ia},
		{"counter index out of range", counterEnt(p4src.CounterDropped, 9999, 0, 0), codes.OutOfRange},
		{"unknown register", registerEnt(0x16000099, -1, nil), ia},
		{"register index out of range", registerEnt(p4src.RegPortQueueBytes, p4src.NumPorts, nil), codes.OutOfRange},
		{"unknown value set", valueSetEnt(0x03000099), ia},
		{"unknown digest", digestEnt(0x17000099, nil), ia},
		{"empty entity", &p4v1.Entity{}, ia},
		{"empty PRE entry", preEntity(&p4v1.PacketReplicationEngineEntry{}), ia},
		{"unknown action profile", memberEnt(0x11000099, 0, nil), ia},
		{"groups of an unknown action profile", groupEnt(0x11000099, 0, 0), ia},
		{"unknown meter", &p4v1.Entity{Entity: &p4v1.Entity_MeterEntry{MeterEntry: &p4v1.MeterEntry{MeterId: 0x15000001}}}, ia},
		{"read filter on a member", teMsg(&p4v1.TableEntry{Action: &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileMemberId{ActionProfileMemberId: 1}}}), codes.Unimplemented},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Alone: no entity, the request's code in the details.
			got, cs := readCodes(t, h, c.bad)
			if len(got) != 0 || !slices.Equal(cs, []codes.Code{c.code}) {
				t.Fatalf("alone: %d entities, codes %v, want none and [%v]", len(got), cs, c.code)
			}
			// {a, bad, b, bad}: the entities of a and b, then [OK, code, OK, code].
			got, cs = readCodes(t, h, goodA, c.bad, goodB, c.bad)
			if want := []codes.Code{codes.OK, c.code, codes.OK, c.code}; !slices.Equal(cs, want) {
				t.Fatalf("batch codes %v, want %v", cs, want)
			}
			if len(got) != 2 || !proto.Equal(got[0], wantA[0]) || !proto.Equal(got[1], wantB[0]) {
				t.Fatalf("batch entities %v, want %v and %v", got, wantA[0], wantB[0])
			}
		})
	}
	// A Read that is refused as a whole still has a single status: another device.
	if err := readErr(ctxT(t), h, &p4v1.ReadRequest{DeviceId: testDevice + 1, Entities: []*p4v1.Entity{goodA}}); status.Code(err) != codes.NotFound {
		t.Fatalf("read of another device: %v, want NOT_FOUND", err)
	}
}
