package p4rt_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/controller/p4rt"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// An entity's whole life against the fake: insert, read back decoded,
// modify, delete; indirect entries, defaults, direct counters, meters,
// digest configuration.
func TestEntityLifecycle(t *testing.T) {
	checkLeaks(t)
	in := testInfo(t)
	s := startServer(t)
	logger, hook := test.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	c := dial(t, s.Addr(), p4rt.WithInfo(in), p4rt.WithLogger(logger), p4rt.WithAtomicity(p4v1.WriteRequest_CONTINUE_ON_ERROR),
		p4rt.WithKeepalive(time.Minute, 10*time.Second))
	if c.DeviceID() != testDevice || c.ElectionID() != (p4rt.Uint128{Low: 1}) {
		t.Fatalf("ids %d %v", c.DeviceID(), c.ElectionID())
	}
	mustE := func(e *p4v1.Entity, err error) *p4v1.Entity {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return e
	}

	member := mustE(in.TableEntry("inc_route").Match(p4rt.Exact("inc_id", 1)).Member(10).Entity())
	group := mustE(in.TableEntry("inc_route").Match(p4rt.Exact("inc_id", 2)).Group(20).Entity())
	acl := mustE(in.TableEntry("Ing.acl").Match(p4rt.Ternary("src", 0x0a000000, 0xff000000), p4rt.Range("proto", 6, 17)).
		Priority(10).Action("drop").IdleTimeout(time.Second).ControllerMetadata(99).Entity())
	opt := mustE(in.TableEntry("Egr.acl").Match(p4rt.Optional("dport", 4791)).Priority(1).Action("NoAction").Entity())
	if err := c.Write(ctx(t), p4rt.Insert(member, group, acl, opt)); err != nil {
		t.Fatal(err)
	}
	got, err := c.ReadTableEntries(ctx(t), "")
	if err != nil || len(got) != 4 {
		t.Fatalf("read %d %v", len(got), err)
	}
	byTable := map[string][]*p4rt.DecodedTableEntry{}
	for _, d := range got {
		byTable[d.Table] = append(byTable[d.Table], d)
	}
	if r := byTable["Ing.inc_route"]; len(r) != 2 || r[0].MemberID != 10 || r[1].GroupID != 20 {
		t.Errorf("indirect %+v", r)
	}
	a := byTable["Ing.acl"][0]
	if a.Priority != 10 || a.Matches[0].Kind != p4rt.MatchTernary || !bytes.Equal(a.Matches[0].Mask, []byte{0xff, 0, 0, 0}) ||
		a.Matches[1].Kind != p4rt.MatchRange || !bytes.Equal(a.Matches[1].High, []byte{17}) ||
		a.Raw.IdleTimeoutNs != int64(time.Second) || a.ControllerMetadata != 99 || a.Raw.ControllerMetadata != 0 ||
		!bytes.Equal(a.Raw.Metadata, []byte{0, 0, 0, 0, 0, 0, 0, 99}) {
		t.Errorf("acl %+v", a)
	}
	if o := byTable["Egr.acl"][0]; o.Matches[0].Kind != p4rt.MatchOptional || o.Matches[0].Kind.String() != "optional" {
		t.Errorf("optional %+v", o)
	}

	// MODIFY of a regular entry: same key (ternary + range + priority), new
	// action; the read-back shows the new action and still one entry.
	acl2 := mustE(in.TableEntry("Ing.acl").Match(p4rt.Ternary("src", 0x0a000000, 0xff000000), p4rt.Range("proto", 6, 17)).
		Priority(10).Action("NoAction").Entity())
	if err := c.Write(ctx(t), p4rt.Modify(acl2)); err != nil {
		t.Fatal(err)
	}
	if got, err := c.ReadTableEntries(ctx(t), "Ing.acl"); err != nil || len(got) != 1 || got[0].Action != "NoAction" {
		t.Fatalf("after MODIFY: %+v %v, want one Ing.acl entry running NoAction", got, err)
	}

	// Default action: MODIFY, read back with ReadDefaultEntry.
	def := mustE(in.TableEntry("ipv4_route").Default().Action("drop").Entity())
	if err := c.Write(ctx(t), p4rt.Modify(def)); err != nil {
		t.Fatal(err)
	}
	ents, err := c.Read(ctx(t), mustE(in.ReadDefaultEntry("ipv4_route")))
	if err != nil || len(ents) != 1 || !ents[0].GetTableEntry().IsDefaultAction {
		t.Fatalf("default %v %v", ents, err)
	}

	// Direct counter of an entry, meter cell, digest config.
	te, _ := in.TableEntry("v6_route").Match(p4rt.LPM("dst", 0, 1), p4rt.Exact("smac", 1)).Action("set_nexthop", p4rt.P("port", 1), p4rt.P("dmac", 1)).Build()
	if err := c.Write(ctx(t), p4rt.Modify(p4rt.DirectCounterEntry(te, 0, 5))); err != nil {
		t.Fatal(err)
	}
	meterID, _ := in.MeterID("port_meter")
	meter := &p4v1.Entity{Entity: &p4v1.Entity_MeterEntry{MeterEntry: &p4v1.MeterEntry{MeterId: meterID, Index: &p4v1.Index{Index: 2},
		Config: &p4v1.MeterConfig{Cir: 1000, Cburst: 100, Pir: 2000, Pburst: 200}}}}
	if err := c.Write(ctx(t), p4rt.Modify(meter)); err != nil {
		t.Fatal(err)
	}
	dmeter := &p4v1.Entity{Entity: &p4v1.Entity_DirectMeterEntry{DirectMeterEntry: &p4v1.DirectMeterEntry{TableEntry: te,
		Config: &p4v1.MeterConfig{Cir: 10, Cburst: 1, Pir: 20, Pburst: 2}}}}
	if err := c.Write(ctx(t), p4rt.Modify(dmeter)); err != nil {
		t.Fatal(err)
	}
	if err := c.Write(ctx(t), p4rt.Insert(mustE(in.DigestConfig("state_change_t", time.Millisecond, 16, time.Second)))); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]*p4v1.Entity{
		"direct counters": mustE(in.ReadDirectCounters("v6_route")),
		"direct meters":   mustE(in.ReadDirectMeters("v6_route")),
		"all direct mtrs": mustE(in.ReadDirectMeters("")),
		"meter":           mustE(in.ReadMeter("port_meter", 2)),
		"all meters":      mustE(in.ReadMeter("", p4rt.AllIndexes)),
		"digest config":   mustE(in.ReadDigestConfig("state_change_t")),
	} {
		if ents, err := c.Read(ctx(t), f); err != nil || len(ents) != 1 {
			t.Errorf("%s: %v %v", name, ents, err)
		}
	}

	// Delete, then deleting again fails with NOT_FOUND, typed and logged.
	if err := c.Write(ctx(t), p4rt.Delete(member)); err != nil {
		t.Fatal(err)
	}
	err = c.Write(ctx(t), p4rt.Delete(member))
	var we *p4rt.WriteError
	if !errors.As(err, &we) || we.Updates[0].Code != codes.NotFound {
		t.Fatalf("second delete: %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"chunk 1/1", "update 0: NotFound"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	found := false
	for _, e := range hook.AllEntries() {
		if e.Message == "p4rt: write failed" && e.Data["failed_updates"] == 1 && e.Data["device_id"] == uint64(testDevice) {
			found = true
		}
	}
	if !found {
		t.Error("no structured log entry for the failed write")
	}
}

func TestErrorTypes(t *testing.T) {
	re := &p4rt.RPCError{Op: "Read", Code: codes.Unimplemented, Message: "no"}
	if !errors.Is(re, p4rt.ErrUnimplemented) || errors.Is(re, p4rt.ErrPermissionDenied) || status.Code(re) != codes.Unimplemented {
		t.Errorf("RPCError mapping")
	}
	if re.Error() != "p4rt: Read: Unimplemented: no" {
		t.Errorf("%q", re.Error())
	}
	we := &p4rt.WriteError{Status: &p4rt.RPCError{Op: "Write", Code: codes.Unknown}, Total: 10, Chunks: 1, ChunkLen: 10}
	for i := 0; i < 5; i++ {
		we.Updates = append(we.Updates, p4rt.UpdateError{Index: i, Code: codes.Internal, Message: "x"})
	}
	if !strings.Contains(we.Error(), "and 2 more") || we.Applied() != 5 {
		t.Errorf("%q applied %d", we.Error(), we.Applied())
	}
	if !(p4rt.Uint128{Low: 5}).Less(p4rt.Uint128{High: 1}) || (p4rt.Uint128{High: 1}).Less(p4rt.Uint128{Low: 5}) ||
		!(p4rt.Uint128{}).IsZero() || (p4rt.Uint128{High: 1, Low: 2}).String() != "1:2" {
		t.Error("Uint128")
	}
	for _, et := range []p4rt.EventType{p4rt.EventArbitration, p4rt.EventDisconnected, p4rt.EventReconnected, p4rt.EventStreamError, p4rt.EventDigestsDropped, 99} {
		if et.String() == "" {
			t.Errorf("empty name for %d", et)
		}
	}
}
