package p4rt_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/fastcnp/fastcnp/controller/p4rt"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// portEntries returns n INSERT updates for port_config, ports 0..n-1.
func portEntries(t testing.TB, in *p4rt.Info, n int) []*p4v1.Update {
	t.Helper()
	ups := make([]*p4v1.Update, n)
	for i := range ups {
		e, err := in.TableEntry("port_config").Match(p4rt.Exact("port", i%512)).
			Action("set_port_config", p4rt.P("qth_bytes", i), p4rt.P("mode", 1)).Entity()
		if err != nil {
			t.Fatal(err)
		}
		ups[i] = p4rt.Insert(e)[0]
	}
	return ups
}

func TestWriteBatching(t *testing.T) {
	checkLeaks(t)
	in := testInfo(t)
	const chunk = 7
	for _, n := range []int{0, 1, chunk - 1, chunk, chunk + 1, 3*chunk + 2} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			s := startServer(t)
			c := dial(t, s.Addr(), p4rt.WithChunkSize(chunk))
			ups := portEntries(t, in, n)
			if err := c.Write(ctx(t), ups); err != nil {
				t.Fatal(err)
			}
			reqs, sizes := s.WriteRequests()
			if want := (n + chunk - 1) / chunk; reqs != want {
				t.Fatalf("%d updates: %d WriteRequests, want %d (sizes %v)", n, reqs, want, sizes)
			}
			for i, sz := range sizes {
				want := chunk
				if i == len(sizes)-1 && n%chunk != 0 {
					want = n % chunk
				}
				if sz != want {
					t.Fatalf("request %d has %d updates, want %d", i, sz, want)
				}
			}
			got := s.Written()
			if len(got) != n {
				t.Fatalf("server saw %d updates, want %d", len(got), n)
			}
			for i := range got {
				if !proto.Equal(got[i], ups[i]) {
					t.Fatalf("update %d out of order", i)
				}
			}
		})
	}
}

func TestWriteErrorDecoding(t *testing.T) {
	checkLeaks(t)
	in := testInfo(t)
	s := startServer(t)
	c := dial(t, s.Addr(), p4rt.WithChunkSize(4))
	ups := portEntries(t, in, 10) // chunks: [0..3] [4..7] [8..9]
	// Fail updates 5 and 7 (ports 5, 7): the second chunk.
	s.FailUpdates(func(u *p4v1.Update) *p4v1.Error {
		v := u.GetEntity().GetTableEntry().GetMatch()[0].GetExact().GetValue()
		switch v[0] {
		case 5:
			return &p4v1.Error{CanonicalCode: int32(codes.ResourceExhausted), Message: "table full", Space: "fake", Code: 42}
		case 7:
			return &p4v1.Error{CanonicalCode: int32(codes.InvalidArgument), Message: "bad port"}
		}
		return nil
	})
	err := c.Write(ctx(t), ups)
	var we *p4rt.WriteError
	if !errors.As(err, &we) {
		t.Fatalf("got %v, want *WriteError", err)
	}
	if we.FailedChunk != 1 || we.Chunks != 3 || we.ChunkStart != 4 || we.ChunkLen != 4 || we.Total != 10 {
		t.Fatalf("chunk bookkeeping %+v", we)
	}
	if we.Status.Code != codes.Unknown {
		t.Errorf("status %v, want UNKNOWN (spec)", we.Status.Code)
	}
	if len(we.Updates) != 2 {
		t.Fatalf("failed updates %+v, want 2", we.Updates)
	}
	u0, u1 := we.Updates[0], we.Updates[1]
	if u0.Index != 5 || u0.Code != codes.ResourceExhausted || u0.Message != "table full" || u0.Space != "fake" || u0.SpaceCode != 42 || u0.Update != ups[5] {
		t.Errorf("first failure %+v", u0)
	}
	if u1.Index != 7 || u1.Code != codes.InvalidArgument || u1.Update != ups[7] {
		t.Errorf("second failure %+v", u1)
	}
	// Chunk 0 (4) + chunk 1's OK updates (4, 6) applied; chunk 2 never sent.
	if we.Applied() != 6 {
		t.Errorf("Applied() = %d, want 6", we.Applied())
	}
	if n, _ := s.WriteRequests(); n != 2 {
		t.Errorf("%d WriteRequests, want 2 (stop after the failed chunk)", n)
	}
	if got := len(s.Stored()); got != 6 {
		t.Errorf("server stored %d entries, want 6", got)
	}
}

func TestWriteFirstChunkFails(t *testing.T) {
	checkLeaks(t)
	in := testInfo(t)
	s := startServer(t)
	c := dial(t, s.Addr(), p4rt.WithChunkSize(3))
	ups := portEntries(t, in, 7)
	s.FailUpdates(func(*p4v1.Update) *p4v1.Error {
		return &p4v1.Error{CanonicalCode: int32(codes.Internal), Message: "boom"}
	})
	err := c.Write(ctx(t), ups)
	var we *p4rt.WriteError
	if !errors.As(err, &we) || we.FailedChunk != 0 || len(we.Updates) != 3 || we.Applied() != 0 {
		t.Fatalf("got %v (%+v)", err, we)
	}
}

func TestWriteDuplicateInsert(t *testing.T) {
	checkLeaks(t)
	in := testInfo(t)
	s := startServer(t)
	c := dial(t, s.Addr())
	ups := portEntries(t, in, 1)
	if err := c.Write(ctx(t), ups); err != nil {
		t.Fatal(err)
	}
	err := c.Write(ctx(t), ups)
	var we *p4rt.WriteError
	if !errors.As(err, &we) || len(we.Updates) != 1 || we.Updates[0].Code != codes.AlreadyExists || we.Updates[0].Index != 0 {
		t.Fatalf("got %v", err)
	}
}

func TestReadWildcards(t *testing.T) {
	checkLeaks(t)
	in := testInfo(t)
	s := startServer(t)
	c := dial(t, s.Addr(), p4rt.WithInfo(in))
	var ents []*p4v1.Entity
	add := func(e *p4v1.Entity, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		ents = append(ents, e)
	}
	add(in.TableEntry("port_config").Match(p4rt.Exact("port", 1)).Action("NoAction").Entity())
	add(in.TableEntry("port_config").Match(p4rt.Exact("port", 2)).Action("NoAction").Entity())
	add(in.TableEntry("ipv4_route").Match(p4rt.LPM("dst_addr", 0x0a000000, 8)).Action("drop").Entity())
	add(in.CounterEntry("cnp_sent", 0, 10, 1))
	add(in.CounterEntry("cnp_sent", 1, 20, 2))
	add(in.ActionProfileMember("inc_selector", 1, "set_nexthop", p4rt.P("port", 1), p4rt.P("dmac", 2)))
	add(in.ActionProfileGroup("inc_selector", 1, 4, p4rt.GroupMember{ID: 1, Weight: 2}))
	add(p4rt.MulticastGroup(3, p4rt.Replica{Port: 1}))
	add(p4rt.CloneSession(4, 0, 0, p4rt.Replica{Port: 2}))
	if err := c.Write(ctx(t), p4rt.Insert(ents...)); err != nil {
		t.Fatal(err)
	}
	vs, err := in.ValueSetEntry("roce_ports", []p4rt.Match{p4rt.Exact("port", 4791)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Write(ctx(t), p4rt.Modify(vs)); err != nil {
		t.Fatal(err)
	}
	reg, _ := in.RegisterEntry("port_rx_bytes", 3, 77)
	if err := c.Write(ctx(t), p4rt.Modify(reg)); err != nil {
		t.Fatal(err)
	}

	must := func(e *p4v1.Entity, err error) *p4v1.Entity {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	for _, tc := range []struct {
		name   string
		filter *p4v1.Entity
		want   int
	}{
		{"all tables", must(in.ReadTable("")), 3},
		{"one table", must(in.ReadTable("port_config")), 2},
		{"counter all indexes", must(in.ReadCounter("cnp_sent", p4rt.AllIndexes)), 2},
		{"counter one index", must(in.ReadCounter("cnp_sent", 1)), 1},
		{"all counters", must(in.ReadCounter("", p4rt.AllIndexes)), 2},
		{"members", must(in.ReadActionProfileMembers("inc_selector")), 1},
		{"groups", must(in.ReadActionProfileGroups("")), 1},
		{"value set", must(in.ReadValueSet("roce_ports")), 1},
		{"register all", must(in.ReadRegister("port_rx_bytes", p4rt.AllIndexes)), 1},
		{"register other index", must(in.ReadRegister("port_rx_bytes", 4)), 0},
		{"multicast all", p4rt.ReadMulticastGroups(0), 1},
		{"clone one", p4rt.ReadCloneSessions(4), 1},
		{"clone other", p4rt.ReadCloneSessions(5), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.Read(ctx(t), tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.want {
				t.Fatalf("%d entities, want %d: %v", len(got), tc.want, got)
			}
		})
	}

	// Decoded table read.
	des, err := c.ReadTableEntries(ctx(t), "ipv4_route")
	if err != nil || len(des) != 1 || des[0].Action != "Ing.drop" || des[0].Matches[0].PrefixLen != 8 {
		t.Fatalf("decoded read %+v %v", des, err)
	}
	cells, err := c.ReadCounters(ctx(t), "cnp_sent", p4rt.AllIndexes)
	if err != nil || len(cells) != 2 || cells[1] != (p4rt.CounterCell{Counter: "Ing.cnp_sent", Index: 1, Bytes: 20, Packets: 2}) {
		t.Fatalf("counter cells %+v %v", cells, err)
	}
	regs, err := c.ReadRegisters(ctx(t), "port_rx_bytes", 3)
	if err != nil || len(regs) != 1 || regs[0].Register != "Ing.port_rx_bytes" || regs[0].Index != 3 || regs[0].Value[0] != 77 {
		t.Fatalf("register cells %+v %v", regs, err)
	}
	// Several filters in one request.
	got, err := c.Read(ctx(t), must(in.ReadTable("port_config")), must(in.ReadCounter("cnp_sent", 0)))
	if err != nil || len(got) != 3 {
		t.Fatalf("multi-filter read: %d %v", len(got), err)
	}
	// A callback error stops the stream and comes back wrapped.
	stop := errors.New("stop")
	err = c.ReadStream(ctx(t), func(*p4v1.Entity) error { return stop }, must(in.ReadTable("")))
	if !errors.Is(err, stop) {
		t.Fatalf("callback error: %v", err)
	}
}

func TestRegisterUnimplemented(t *testing.T) {
	checkLeaks(t)
	in := testInfo(t)
	s := startServer(t)
	s.RegistersUnimplemented(true)
	c := dial(t, s.Addr())
	f, _ := in.ReadRegister("port_rx_bytes", p4rt.AllIndexes)
	_, err := c.Read(ctx(t), f)
	var re *p4rt.RPCError
	if !errors.Is(err, p4rt.ErrUnimplemented) || !errors.As(err, &re) || re.Op != "Read" {
		t.Fatalf("register read: %v, want ErrUnimplemented", err)
	}
	c.SetInfo(in)
	if _, err := c.ReadRegisters(ctx(t), "", p4rt.AllIndexes); !errors.Is(err, p4rt.ErrUnimplemented) {
		t.Fatalf("ReadRegisters: %v, want ErrUnimplemented", err)
	}
	reg, _ := in.RegisterEntry("port_rx_bytes", 0, 1)
	err = c.Write(ctx(t), p4rt.Modify(reg))
	var we *p4rt.WriteError
	if !errors.As(err, &we) || len(we.Updates) != 1 || we.Updates[0].Code != codes.Unimplemented {
		t.Fatalf("register write: %v", err)
	}
}

func TestPipeline(t *testing.T) {
	checkLeaks(t)
	in := testInfo(t)
	s := startServer(t)
	c := dial(t, s.Addr())
	if c.Info() != nil {
		t.Fatal("info before SetPipeline")
	}
	devcfg := []byte(`{"bmv2":"json"}`)
	if _, err := c.GetPipeline(ctx(t), p4v1.GetForwardingPipelineConfigRequest_ALL); err == nil {
		t.Fatal("GetPipeline before any config succeeded")
	}
	if err := c.SetPipeline(ctx(t), p4v1.SetForwardingPipelineConfigRequest_COMMIT, nil, nil, 0); err == nil {
		t.Fatal("COMMIT with nothing saved succeeded")
	}
	if err := c.SetPipeline(ctx(t), p4v1.SetForwardingPipelineConfigRequest_VERIFY, in.P4Info(), devcfg, 1); err != nil {
		t.Fatal(err)
	}
	if c.Info() != nil {
		t.Fatal("VERIFY switched the client's P4Info")
	}
	if err := c.SetPipeline(ctx(t), p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, in.P4Info(), devcfg, 42); err != nil {
		t.Fatal(err)
	}
	if c.Info() == nil {
		t.Fatal("VERIFY_AND_COMMIT did not set the client's P4Info")
	}
	if err := c.SetPipeline(ctx(t), p4v1.SetForwardingPipelineConfigRequest_RECONCILE_AND_COMMIT, in.P4Info(), devcfg, 43); err != nil {
		t.Fatal(err)
	}
	if err := c.SetPipeline(ctx(t), p4v1.SetForwardingPipelineConfigRequest_COMMIT, nil, nil, 0); err != nil {
		t.Fatal(err)
	}
	want := []p4v1.SetForwardingPipelineConfigRequest_Action{
		p4v1.SetForwardingPipelineConfigRequest_COMMIT, p4v1.SetForwardingPipelineConfigRequest_VERIFY,
		p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, p4v1.SetForwardingPipelineConfigRequest_RECONCILE_AND_COMMIT,
		p4v1.SetForwardingPipelineConfigRequest_COMMIT}
	if got := s.PipelineActions(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("actions %v, want %v", got, want)
	}
	for _, tc := range []struct {
		rt                   p4v1.GetForwardingPipelineConfigRequest_ResponseType
		info, device, cookie bool
	}{
		{p4v1.GetForwardingPipelineConfigRequest_ALL, true, true, true},
		{p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY, false, false, true},
		{p4v1.GetForwardingPipelineConfigRequest_P4INFO_AND_COOKIE, true, false, true},
		{p4v1.GetForwardingPipelineConfigRequest_DEVICE_CONFIG_AND_COOKIE, false, true, true},
	} {
		cfg, err := c.GetPipeline(ctx(t), tc.rt)
		if err != nil {
			t.Fatal(err)
		}
		if (cfg.P4Info != nil) != tc.info || (cfg.P4DeviceConfig != nil) != tc.device || (cfg.GetCookie().GetCookie() == 43) != tc.cookie {
			t.Errorf("%v: got %v", tc.rt, cfg)
		}
		if tc.info && !proto.Equal(cfg.P4Info, in.P4Info()) {
			t.Errorf("%v: P4Info differs", tc.rt)
		}
	}
	if v, err := c.Capabilities(ctx(t)); err != nil || v == "" {
		t.Errorf("capabilities %q %v", v, err)
	}
}

// TestWriteErrorIsByUpdateCodes: a failed batch has top-level status
// UNKNOWN; errors.Is matches a code sentinel when every failed update of the
// chunk carries that code (BMv2's UNIMPLEMENTED register writes), alone or
// in a batch, and matches nothing when the failures differ.
func TestWriteErrorIsByUpdateCodes(t *testing.T) {
	checkLeaks(t)
	in := testInfo(t)
	s := startServer(t)
	s.RegistersUnimplemented(true)
	c := dial(t, s.Addr())
	reg := func(i int64) *p4v1.Update {
		e, err := in.RegisterEntry("port_rx_bytes", i, 1)
		if err != nil {
			t.Fatal(err)
		}
		return p4rt.Modify(e)[0]
	}
	dup := portEntries(t, in, 1)[0]
	if err := c.Write(ctx(t), []*p4v1.Update{dup}); err != nil {
		t.Fatal(err)
	}
	fresh := portEntries(t, in, 3)[2] // port 2: not written yet
	for _, tc := range []struct {
		name        string
		ups         []*p4v1.Update
		unimpl      bool
		failedCodes []codes.Code
	}{
		{"one register write", []*p4v1.Update{reg(0)}, true, []codes.Code{codes.Unimplemented}},
		{"three register writes", []*p4v1.Update{reg(0), reg(1), reg(2)}, true,
			[]codes.Code{codes.Unimplemented, codes.Unimplemented, codes.Unimplemented}},
		{"register write among good updates", []*p4v1.Update{fresh, reg(3)}, true, []codes.Code{codes.Unimplemented}},
		{"register write and a duplicate insert", []*p4v1.Update{reg(4), dup}, false,
			[]codes.Code{codes.Unimplemented, codes.AlreadyExists}},
		{"duplicate insert only", []*p4v1.Update{dup}, false, []codes.Code{codes.AlreadyExists}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Write(ctx(t), tc.ups)
			var we *p4rt.WriteError
			if !errors.As(err, &we) || we.Status.Code != codes.Unknown || len(we.Updates) != len(tc.failedCodes) {
				t.Fatalf("got %v, want a *WriteError (UNKNOWN) with %d failed updates", err, len(tc.failedCodes))
			}
			for i, u := range we.Updates {
				if u.Code != tc.failedCodes[i] {
					t.Errorf("update %d: %v, want %v", u.Index, u.Code, tc.failedCodes[i])
				}
			}
			if got := errors.Is(err, p4rt.ErrUnimplemented); got != tc.unimpl {
				t.Errorf("errors.Is(err, ErrUnimplemented) = %v, want %v (err: %v)", got, tc.unimpl, err)
			}
			if errors.Is(err, p4rt.ErrPermissionDenied) {
				t.Errorf("errors.Is(err, ErrPermissionDenied) for %v", err)
			}
		})
	}

	// The rule is the same for every code sentinel, and a WriteError
	// without per-update details falls back to the top-level status.
	denied := &p4rt.WriteError{Status: &p4rt.RPCError{Op: "Write", Code: codes.Unknown}, Updates: []p4rt.UpdateError{
		{Index: 0, Code: codes.PermissionDenied}, {Index: 1, Code: codes.PermissionDenied}}}
	if !errors.Is(denied, p4rt.ErrPermissionDenied) || errors.Is(denied, p4rt.ErrUnimplemented) {
		t.Error("every update PERMISSION_DENIED: want ErrPermissionDenied only")
	}
	whole := &p4rt.WriteError{Status: &p4rt.RPCError{Op: "Write", Code: codes.Unimplemented}}
	if !errors.Is(whole, p4rt.ErrUnimplemented) {
		t.Error("request refused as a whole with UNIMPLEMENTED: want ErrUnimplemented")
	}
	if errors.Is(&p4rt.WriteError{Status: &p4rt.RPCError{Op: "Write", Code: codes.Unknown}}, p4rt.ErrUnimplemented) {
		t.Error("UNKNOWN without details matched ErrUnimplemented")
	}
}

// TestWriteGuard: the guard runs before every WriteRequest and before
// SetForwardingPipelineConfig; once it refuses, nothing more is sent and the
// call returns its error.
func TestWriteGuard(t *testing.T) {
	checkLeaks(t)
	in := testInfo(t)
	errLapsed := errors.New("lease lapsed")
	tests := []struct {
		name      string
		allow     int // guard calls that pass
		updates   int
		wantReqs  int
		wantError bool
	}{
		{name: "always passes", allow: 100, updates: 10, wantReqs: 3},
		{name: "refuses the third chunk", allow: 2, updates: 10, wantReqs: 2, wantError: true},
		{name: "refuses at once", allow: 0, updates: 10, wantReqs: 0, wantError: true},
		{name: "nothing to write", allow: 0, updates: 0, wantReqs: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t)
			calls := 0
			guard := func() error {
				calls++
				if calls > tc.allow {
					return errLapsed
				}
				return nil
			}
			c := dial(t, s.Addr(), p4rt.WithChunkSize(4), p4rt.WithWriteGuard(guard))
			err := c.Write(ctx(t), portEntries(t, in, tc.updates))
			if tc.wantError != (err != nil) || (err != nil && !errors.Is(err, errLapsed)) {
				t.Fatalf("Write: %v, want the guard's error: %v", err, tc.wantError)
			}
			if reqs, _ := s.WriteRequests(); reqs != tc.wantReqs {
				t.Fatalf("%d WriteRequests reached the server, want %d", reqs, tc.wantReqs)
			}
			before := len(s.PipelineActions())
			err = c.SetPipeline(ctx(t), p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, nil, nil, 0)
			refused := calls > tc.allow
			if refused != errors.Is(err, errLapsed) {
				t.Fatalf("SetPipeline after %d guard calls (allowed %d): %v", calls, tc.allow, err)
			}
			if sent := len(s.PipelineActions()) - before; refused && sent != 0 {
				t.Fatalf("SetForwardingPipelineConfig reached the server after the guard refused")
			}
		})
	}
}
