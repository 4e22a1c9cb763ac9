package p4rtserver

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Conformance with the P4Runtime specification v1.5.0, sections "Client Arbitration
// and Controller Replication", "Role Config", "Rules for Handling
// MasterArbitrationUpdate Messages Received from Controllers", "Client Arbitration
// Notifications", "Client Arbitration Update" and "Write RPC". The spec's sentences
// are quoted where they decide a case.

// arbOp is one step of an arbitration scenario.
type arbOp int

const (
	opArb   arbOp = iota // client c sends a MasterArbitrationUpdate (opening its stream if needed)
	opClose              // client c closes its stream
	opWrite              // a Write (one route insert) with election ID e for role
	opSet                // SetForwardingPipelineConfig VERIFY with election ID e for role
)

// arbMsg is an arbitration update a client must receive: its status code and
// election_id (nil: the field must be unset).
type arbMsg struct {
	c    int
	code codes.Code
	e    *p4v1.Uint128
}

type arbStep struct {
	op   arbOp
	c    int
	e    *p4v1.Uint128 // nil: unset
	role string
	cfg  *anypb.Any
	// After the step: these messages, in this order per client, and nothing else on
	// any stream; for opArb with end set the stream ends with that code instead; for
	// opWrite and opSet the RPC's code.
	want []arbMsg
	end  codes.Code
	code codes.Code
}

func mustAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// specHarness is a harness whose pipeline is committed (by a client of the role
// "boot", gone by the time the scenario starts), so that Writes that pass the
// arbitration checks succeed.
func specHarness(t *testing.T, hopts ...harnessOpt) *harness {
	t.Helper()
	h := newHarness(t, hopts...)
	boot := h.openStream(t)
	boot.arbitrate(eid(1), "boot")
	if a := boot.next().GetArbitration(); codes.Code(a.GetStatus().GetCode()) != codes.OK {
		t.Fatalf("boot arbitration: %v", a)
	}
	_, err := h.cli.SetForwardingPipelineConfig(ctxT(t), &p4v1.SetForwardingPipelineConfigRequest{
		DeviceId: testDevice, Role: "boot", ElectionId: eid(1), Action: p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT,
		Config: testConfig(1)})
	if err != nil {
		t.Fatalf("boot commit: %v", err)
	}
	boot.close()
	h.waitStreams(t, 0)
	return h
}

// waitStreams waits until the server counts n open streams (a closed stream has
// then been removed from its role).
func (h *harness) waitStreams(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		h.srv.mu.Lock()
		got := h.srv.streams
		h.srv.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d streams open, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// runArbScenario plays steps on a fresh server.
func runArbScenario(t *testing.T, steps []arbStep, hopts ...harnessOpt) {
	h := specHarness(t, hopts...)
	clients := map[int]*streamClient{}
	open := 0
	for i, st := range steps {
		where := fmt.Sprintf("step %d", i)
		switch st.op {
		case opArb:
			sc := clients[st.c]
			if sc == nil {
				sc = h.openStream(t)
				clients[st.c] = sc
				open++
			}
			u := &p4v1.MasterArbitrationUpdate{DeviceId: testDevice, ElectionId: st.e}
			if st.role != "" || st.cfg != nil {
				u.Role = &p4v1.Role{Name: st.role, Config: st.cfg}
			}
			sc.send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{Arbitration: u}})
			if st.end != codes.OK {
				sc.expectEnd(st.end)
				delete(clients, st.c)
				open--
				h.waitStreams(t, open)
			}
		case opClose:
			clients[st.c].close()
			delete(clients, st.c)
			open--
			h.waitStreams(t, open)
		case opWrite:
			r := route(b(10, byte(i), 0, 0), 16, b(1))
			_, err := h.cli.Write(ctxT(t), &p4v1.WriteRequest{DeviceId: testDevice, Role: st.role, ElectionId: st.e, Updates: []*p4v1.Update{ins(r)}})
			if status.Code(err) != st.code {
				t.Fatalf("%s: Write role %q election %v: %v, want %v", where, st.role, st.e, err, st.code)
			}
		case opSet:
			_, err := h.cli.SetForwardingPipelineConfig(ctxT(t), &p4v1.SetForwardingPipelineConfigRequest{
				DeviceId: testDevice, Role: st.role, ElectionId: st.e, Action: p4v1.SetForwardingPipelineConfigRequest_VERIFY, Config: testConfig(1)})
			if status.Code(err) != st.code {
				t.Fatalf("%s: SetForwardingPipelineConfig role %q election %v: %v, want %v", where, st.role, st.e, err, st.code)
			}
		}
		for _, w := range st.want {
			sc := clients[w.c]
			if sc == nil {
				t.Fatalf("%s: client %d has no stream", where, w.c)
			}
			a := sc.next().GetArbitration()
			if a == nil {
				t.Fatalf("%s: client %d: want an arbitration update", where, w.c)
			}
			if codes.Code(a.GetStatus().GetCode()) != w.code || !proto.Equal(a.GetElectionId(), w.e) || (w.e == nil) != (a.GetElectionId() == nil) ||
				a.GetDeviceId() != testDevice {
				t.Fatalf("%s: client %d got status %v election_id %v device %d, want %v %v %d",
					where, w.c, codes.Code(a.GetStatus().GetCode()), a.GetElectionId(), a.GetDeviceId(), w.code, w.e, testDevice)
			}
		}
		for c, sc := range clients {
			select {
			case m, ok := <-sc.msgs:
				if ok {
					t.Fatalf("%s: client %d got an unexpected %v", where, c, m)
				}
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

func TestSpecArbitration(t *testing.T) {
	unset := (*p4v1.Uint128)(nil)
	ok, ae, nf, pd, ia := codes.OK, codes.AlreadyExists, codes.NotFound, codes.PermissionDenied, codes.InvalidArgument
	cases := []struct {
		name  string
		steps []arbStep
	}{
		// "The primary is the client that has the highest election_id that the device
		// has ever received for the same (device_id, role) values." "When a primary
		// channel gets broken: [...] The P4Runtime server will be without a primary
		// controller, until a client sends a successful MasterArbitrationUpdate".
		// Notifications: "Otherwise, if there is no primary currently, for all backup
		// controllers, status is set to non-OK (with status.code set to
		// google.rpc.NOT_FOUND)"; election_id "is set to the highest election ID that
		// the server has seen for this device_id and role".
		{"primary leaves: no primary, backups told NOT_FOUND with the highest ID", []arbStep{
			{op: opArb, c: 0, e: eid(10), want: []arbMsg{{0, ok, eid(10)}}},
			{op: opArb, c: 1, e: eid(5), want: []arbMsg{{1, ae, eid(10)}}},
			{op: opArb, c: 2, e: eid(7), want: []arbMsg{{2, ae, eid(10)}}},
			{op: opClose, c: 0, want: []arbMsg{{1, nf, eid(10)}, {2, nf, eid(10)}}},
			{op: opWrite, e: eid(7), code: pd},
			{op: opWrite, e: eid(10), code: pd},
			{op: opSet, e: eid(7), code: pd},
		}},
		// "If election_id is greater than or equal to election_id_past, then the
		// controller becomes, or stays, primary." "Otherwise, the controller becomes a
		// backup. [...] the advisory message is only sent to the controller that sent
		// the initial MasterArbitrationUpdate."
		{"lower than the highest seen stays backup; higher becomes primary", []arbStep{
			{op: opArb, c: 0, e: eid(10), want: []arbMsg{{0, ok, eid(10)}}},
			{op: opArb, c: 1, e: eid(5), want: []arbMsg{{1, ae, eid(10)}}},
			{op: opClose, c: 0, want: []arbMsg{{1, nf, eid(10)}}},
			{op: opArb, c: 1, e: eid(9), want: []arbMsg{{1, nf, eid(10)}}},
			{op: opArb, c: 2, e: eid(8), want: []arbMsg{{2, nf, eid(10)}}},
			{op: opWrite, e: eid(9), code: pd},
			{op: opArb, c: 1, e: eid(11), want: []arbMsg{{1, ok, eid(11)}, {2, ae, eid(11)}}},
			{op: opWrite, e: eid(11), code: ok},
			{op: opWrite, e: eid(8), code: pd},
		}},
		// "greater than or equal": a primary that reconnects with its election ID is
		// primary again.
		{"equal to the highest seen becomes primary (reconnect)", []arbStep{
			{op: opArb, c: 0, e: eid(10), want: []arbMsg{{0, ok, eid(10)}}},
			{op: opArb, c: 1, e: eid(5), want: []arbMsg{{1, ae, eid(10)}}},
			{op: opClose, c: 0, want: []arbMsg{{1, nf, eid(10)}}},
			{op: opArb, c: 2, e: eid(10), want: []arbMsg{{1, ae, eid(10)}, {2, ok, eid(10)}}},
			{op: opWrite, e: eid(10), code: ok},
		}},
		// "If the controller was previously a primary (and downgraded itself), then an
		// advisory message is sent to all controllers for this device_id and role."
		{"primary downgrades itself: no primary, everybody told", []arbStep{
			{op: opArb, c: 0, e: eid(10), want: []arbMsg{{0, ok, eid(10)}}},
			{op: opArb, c: 1, e: eid(5), want: []arbMsg{{1, ae, eid(10)}}},
			{op: opArb, c: 0, e: eid(3), want: []arbMsg{{0, nf, eid(10)}, {1, nf, eid(10)}}},
			{op: opWrite, e: eid(3), code: pd},
			{op: opWrite, e: eid(5), code: pd},
			{op: opArb, c: 1, e: eid(10), want: []arbMsg{{0, ae, eid(10)}, {1, ok, eid(10)}}},
			{op: opWrite, e: eid(10), code: ok},
		}},
		// "If there was a previous primary, including this controller, [...] The
		// server notifies all controllers other than the new primary client [...] The
		// server notifies the new primary".
		{"primary repeats its election ID: everybody told", []arbStep{
			{op: opArb, c: 0, e: eid(10), want: []arbMsg{{0, ok, eid(10)}}},
			{op: opArb, c: 1, e: eid(5), want: []arbMsg{{1, ae, eid(10)}}},
			{op: opArb, c: 0, e: eid(10), want: []arbMsg{{0, ok, eid(10)}, {1, ae, eid(10)}}},
			{op: opArb, c: 1, e: eid(6), want: []arbMsg{{1, ae, eid(10)}}},
		}},
		{"a higher election ID takes over", []arbStep{
			{op: opArb, c: 0, e: eid(10), want: []arbMsg{{0, ok, eid(10)}}},
			{op: opArb, c: 1, e: eid(20), want: []arbMsg{{0, ae, eid(20)}, {1, ok, eid(20)}}},
			{op: opWrite, e: eid(10), code: pd},
			{op: opWrite, e: eid(20), code: ok},
			{op: opClose, c: 1, want: []arbMsg{{0, nf, eid(20)}}},
			{op: opWrite, e: eid(10), code: pd},
		}},
		// "If the election_id is unset, the sender's election_id is considered lower
		// than any election_id, and the sender will thus never become primary."
		// "If there has not been any primary at all, the election_id is left unset."
		// "election_id : { high: 0 low: 0 } is different from an unset election_id".
		{"unset election ID: never primary; no primary yet: election_id unset", []arbStep{
			{op: opArb, c: 0, e: unset, want: []arbMsg{{0, nf, unset}}},
			{op: opArb, c: 1, e: unset, want: []arbMsg{{1, nf, unset}}},
			{op: opWrite, e: unset, code: pd},
			{op: opArb, c: 2, e: &p4v1.Uint128{}, want: []arbMsg{{0, ae, &p4v1.Uint128{}}, {1, ae, &p4v1.Uint128{}}, {2, ok, &p4v1.Uint128{}}}},
			{op: opWrite, e: &p4v1.Uint128{}, code: ok},
			{op: opWrite, e: unset, code: pd},
		}},
		// "If the election_id is set and is already used by another live controller
		// for the same (device_id, role), the P4Runtime server shall terminate the
		// stream by returning an INVALID_ARGUMENT error." "This election_id can be the
		// same for different roles".
		{"election IDs are per role, duplicates refused", []arbStep{
			{op: opArb, c: 0, e: eid(10), want: []arbMsg{{0, ok, eid(10)}}},
			{op: opArb, c: 1, e: eid(10), end: ia},
			{op: opArb, c: 2, e: eid(5), role: "b", want: []arbMsg{{2, ok, eid(5)}}},
			{op: opArb, c: 3, e: eid(10), role: "b", want: []arbMsg{{2, ae, eid(10)}, {3, ok, eid(10)}}},
			{op: opWrite, e: eid(10), role: "b", code: ok},
			{op: opWrite, e: eid(10), code: ok},
			{op: opWrite, e: eid(5), role: "b", code: pd},
		}},
		// Write: "If device_id does not match any of the devices known to the
		// P4Runtime server or if role does not match any of the roles for the device,
		// the server must return a NOT_FOUND error." "If the client is not the
		// primary for (device_id, role) according to the election_id value, the
		// server must return a PERMISSION_DENIED error." The roles of the device are
		// those a controller has arbitrated for; SetForwardingPipelineConfig has the
		// same two checks.
		{"role no controller arbitrated for: NOT_FOUND; known role without primary: PERMISSION_DENIED", []arbStep{
			{op: opWrite, e: eid(10), code: nf},
			{op: opWrite, e: eid(10), role: "nobody", code: nf},
			{op: opSet, e: eid(10), role: "nobody", code: nf},
			{op: opArb, c: 0, e: eid(10), role: "a", want: []arbMsg{{0, ok, eid(10)}}},
			{op: opWrite, e: eid(10), role: "a", code: ok},
			{op: opWrite, e: eid(10), code: nf},
			{op: opClose, c: 0},
			{op: opWrite, e: eid(10), role: "a", code: pd},
			{op: opSet, e: eid(10), role: "a", code: pd},
			{op: opWrite, e: eid(10), role: "boot", code: pd},
		}},
		// "An unset role.config implies "full pipeline access"". "If role.config does
		// not match the "out-of-band" scheme previously agreed upon, the server must
		// return an INVALID_ARGUMENT error." This server has no scheme: it accepts only
		// configs that mean full access.
		{"role config: unset, empty or google.protobuf.Empty accepted", []arbStep{
			{op: opArb, c: 0, e: eid(10), role: "a", want: []arbMsg{{0, ok, eid(10)}}},
			{op: opArb, c: 1, e: eid(11), role: "a", cfg: &anypb.Any{}, want: []arbMsg{{0, ae, eid(11)}, {1, ok, eid(11)}}},
			{op: opArb, c: 2, e: eid(12), role: "a", cfg: mustAny(t, &emptypb.Empty{}), want: []arbMsg{{0, ae, eid(12)}, {1, ae, eid(12)}, {2, ok, eid(12)}}},
			{op: opWrite, e: eid(12), role: "a", code: ok},
		}},
		{"role config of an unknown type: INVALID_ARGUMENT", []arbStep{
			{op: opArb, c: 0, e: eid(10), role: "a", cfg: mustAny(t, wrapperspb.String("P4RoleConfig?")), end: ia},
			{op: opArb, c: 1, e: eid(10), role: "a", cfg: &anypb.Any{TypeUrl: "type.googleapis.com/stratum.P4RoleConfig"}, end: ia},
			{op: opArb, c: 2, e: eid(10), cfg: &anypb.Any{TypeUrl: "x/y"}, end: ia},
			{op: opArb, c: 3, e: eid(10), cfg: &anypb.Any{Value: []byte{1}}, end: ia},
			// A live controller too; the role was never arbitrated successfully.
			{op: opArb, c: 4, e: eid(10), role: "b", want: []arbMsg{{4, ok, eid(10)}}},
			{op: opArb, c: 4, e: eid(10), role: "b", cfg: &anypb.Any{TypeUrl: "x/y"}, end: ia},
			{op: opWrite, e: eid(10), role: "a", code: nf},
			{op: opWrite, e: eid(10), role: "b", code: pd},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runArbScenario(t, c.steps) })
	}
}

// TestArbitrationPromoteHighestBackup: Options.PromoteHighestBackup is BMv2's
// arbitration (the live client with the highest election ID is primary), a
// deliberate, opt-in departure from the spec for controllers whose standby relies on
// being promoted.
func TestArbitrationPromoteHighestBackup(t *testing.T) {
	ok, ae, nf, pd := codes.OK, codes.AlreadyExists, codes.NotFound, codes.PermissionDenied
	cases := []struct {
		name  string
		steps []arbStep
	}{
		{"primary leaves: the highest backup is promoted", []arbStep{
			{op: opArb, c: 0, e: eid(10), want: []arbMsg{{0, ok, eid(10)}}},
			{op: opArb, c: 1, e: eid(5), want: []arbMsg{{1, ae, eid(10)}}},
			{op: opArb, c: 2, e: eid(7), want: []arbMsg{{2, ae, eid(10)}}},
			{op: opClose, c: 0, want: []arbMsg{{1, ae, eid(7)}, {2, ok, eid(7)}}},
			{op: opWrite, e: eid(7), code: ok},
			{op: opWrite, e: eid(10), code: pd},
			{op: opArb, c: 3, e: eid(6), want: []arbMsg{{3, ae, eid(7)}}},
		}},
		{"primary downgrades itself: the highest backup is promoted", []arbStep{
			{op: opArb, c: 0, e: eid(10), want: []arbMsg{{0, ok, eid(10)}}},
			{op: opArb, c: 1, e: eid(5), want: []arbMsg{{1, ae, eid(10)}}},
			{op: opArb, c: 0, e: eid(3), want: []arbMsg{{0, ae, eid(5)}, {1, ok, eid(5)}}},
			{op: opWrite, e: eid(5), code: ok},
		}},
		{"no backup with an election ID: no primary, the next client takes it", []arbStep{
			{op: opArb, c: 0, e: eid(10), want: []arbMsg{{0, ok, eid(10)}}},
			{op: opArb, c: 1, want: []arbMsg{{1, ae, eid(10)}}},
			{op: opClose, c: 0, want: []arbMsg{{1, nf, eid(10)}}},
			{op: opWrite, e: eid(10), code: pd},
			{op: opArb, c: 2, e: eid(4), want: []arbMsg{{1, ae, eid(4)}, {2, ok, eid(4)}}},
			{op: opWrite, e: eid(4), code: ok},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runArbScenario(t, c.steps, func(o *Options) { o.PromoteHighestBackup = true })
		})
	}
}

// TestSpecArbitrationRoleInUpdate: "device_id and role as given", "role.config is set
// to the role configuration the server received most recently in a
// MasterArbitrationUpdate from a primary"; a backup's config changes nothing.
func TestSpecArbitrationRoleInUpdate(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct {
		role string
		cfg  *anypb.Any
	}{{"", nil}, {"a", nil}, {"b", &anypb.Any{}}, {"c", mustAny(t, &emptypb.Empty{})}} {
		sc := h.openStream(t)
		u := &p4v1.MasterArbitrationUpdate{DeviceId: testDevice, ElectionId: eid(1)}
		if c.role != "" || c.cfg != nil {
			u.Role = &p4v1.Role{Name: c.role, Config: c.cfg}
		}
		sc.send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{Arbitration: u}})
		a := sc.next().GetArbitration()
		if a.GetRole().GetName() != c.role || !proto.Equal(a.GetRole().GetConfig(), c.cfg) || codes.Code(a.GetStatus().GetCode()) != codes.OK {
			t.Errorf("role %q config %v: got %v", c.role, c.cfg, a)
		}
		if c.role == "" && a.Role != nil {
			t.Errorf("default role: role %v, want unset", a.Role)
		}
	}
	// Role "c" has a primary whose config is google.protobuf.Empty; a backup that
	// sends an empty Any hears the primary's.
	sc := h.openStream(t)
	sc.send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{Arbitration: &p4v1.MasterArbitrationUpdate{
		DeviceId: testDevice, ElectionId: eid(0), Role: &p4v1.Role{Name: "c", Config: &anypb.Any{}}}}})
	a := sc.next().GetArbitration()
	if codes.Code(a.GetStatus().GetCode()) != codes.AlreadyExists || !proto.Equal(a.GetRole().GetConfig(), mustAny(t, &emptypb.Empty{})) {
		t.Errorf("backup of role c: got %v, want ALREADY_EXISTS with the primary's config", a)
	}
}

// freezeProxy forwards TCP connections to target until frozen; frozen, it stops
// forwarding in both directions but keeps the connections open, as a controller
// process that is stopped (SIGSTOP) or a link that dies without a reset would.
type freezeProxy struct {
	lis    net.Listener
	target string
	frozen chan struct{}
	stop   chan struct{}
	once   sync.Once
	mu     sync.Mutex
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newFreezeProxy(t *testing.T, target string) *freezeProxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezeProxy{lis: lis, target: target, frozen: make(chan struct{}), stop: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *freezeProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.lis.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(s, c)
		go p.pipe(c, s)
	}
}

func (p *freezeProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		select {
		case <-p.frozen:
			<-p.stop // hold the connection open, forward nothing
			return
		default:
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return
			}
			if tc, ok := dst.(*net.TCPConn); ok {
				tc.CloseWrite()
			}
			return
		}
	}
}

func (p *freezeProxy) freeze() { p.once.Do(func() { close(p.frozen) }) }

func (p *freezeProxy) close() {
	close(p.stop)
	p.lis.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// TestSpecKeepaliveDeadPrimary: "The streaming channel between the controller and the
// server defines the liveness of the controller session. The controller is considered
// "offline", "disconnected", or "dead" as soon as its stream channel to the switch is
// broken." A primary whose connection stops answering (but is not closed) must lose
// its stream through the server's keepalive, and with it primary; another client can
// then become primary with a higher election ID.
func TestSpecKeepaliveDeadPrimary(t *testing.T) {
	const kaTime, kaTimeout = time.Second, 500 * time.Millisecond // gRPC's floor for Time is 1 s
	h := newHarness(t, func(o *Options) { o.KeepaliveTime, o.KeepaliveTimeout = kaTime, kaTimeout })
	proxy := newFreezeProxy(t, h.addr)
	conn, err := grpc.NewClient(proxy.lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	far := &harness{t: t, srv: h.srv, cli: p4v1.NewP4RuntimeClient(conn)}
	primary := far.openStream(t)
	primary.arbitrate(eid(10), "")
	primary.expectArb(codes.OK, 10)
	backup := h.primaryOr(t, 5, codes.AlreadyExists, 10)
	if _, err := h.cli.SetForwardingPipelineConfig(ctxT(t), &p4v1.SetForwardingPipelineConfigRequest{DeviceId: testDevice,
		ElectionId: eid(10), Action: p4v1.SetForwardingPipelineConfigRequest_VERIFY, Config: testConfig(1)}); err != nil {
		t.Fatalf("primary before the freeze: %v", err)
	}
	// Idle for longer than the keepalive: a live connection is kept.
	time.Sleep(kaTime + kaTimeout + 500*time.Millisecond)
	backup.expectNone(10 * time.Millisecond)
	start := time.Now()
	proxy.freeze()
	backup.expectArb(codes.NotFound, 10)
	if d := time.Since(start); d > 3*(kaTime+kaTimeout) {
		t.Errorf("dead primary noticed after %v, want about %v", d, kaTime+kaTimeout)
	}
	t.Logf("dead primary noticed after %v", time.Since(start))
	if _, err := h.cli.SetForwardingPipelineConfig(ctxT(t), &p4v1.SetForwardingPipelineConfigRequest{DeviceId: testDevice,
		ElectionId: eid(10), Action: p4v1.SetForwardingPipelineConfigRequest_VERIFY, Config: testConfig(1)}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("the dead primary's election ID: %v, want PERMISSION_DENIED", err)
	}
	backup.arbitrate(eid(11), "")
	backup.expectArb(codes.OK, 11)
	if _, err := h.cli.SetForwardingPipelineConfig(ctxT(t), &p4v1.SetForwardingPipelineConfigRequest{DeviceId: testDevice,
		ElectionId: eid(11), Action: p4v1.SetForwardingPipelineConfigRequest_VERIFY, Config: testConfig(1)}); err != nil {
		t.Fatalf("new primary: %v", err)
	}
}

// primaryOr opens a stream, arbitrates with low and expects code with election ID want.
func (h *harness) primaryOr(t *testing.T, low uint64, code codes.Code, want uint64) *streamClient {
	t.Helper()
	sc := h.openStream(t)
	sc.arbitrate(eid(low), "")
	sc.expectArb(code, want)
	return sc
}

// TestSpecKeepaliveOptions: the defaults detect a dead peer within about 10 s and
// tolerate the pings of controller/p4rt (at most one per 10 s, gRPC's floor for a
// client); the options reach the server.
func TestSpecKeepaliveOptions(t *testing.T) {
	if d := DefaultKeepaliveTime + DefaultKeepaliveTimeout; d > 10*time.Second {
		t.Errorf("default keepalive detects a dead peer after %v, want <= 10 s", d)
	}
	if DefaultKeepaliveMinTime > 10*time.Second {
		t.Errorf("default MinTime %v refuses controller/p4rt's shortest keepalive interval (10 s)", DefaultKeepaliveMinTime)
	}
	cases := []struct {
		name string
		in   Options
		want [3]time.Duration
	}{
		{"defaults", Options{}, [3]time.Duration{DefaultKeepaliveTime, DefaultKeepaliveTimeout, DefaultKeepaliveMinTime}},
		{"set", Options{KeepaliveTime: 2 * time.Second, KeepaliveTimeout: time.Second, KeepaliveMinTime: 30 * time.Second},
			[3]time.Duration{2 * time.Second, time.Second, 30 * time.Second}},
		{"off", Options{KeepaliveTime: -1}, [3]time.Duration{-1, DefaultKeepaliveTimeout, DefaultKeepaliveMinTime}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := c.in
			o.DeviceID, o.DataPlane = 1, NewLocalDataPlane(pipeline.New(pipeline.Options{}), LocalOptions{})
			s, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			if got := [3]time.Duration{s.opts.KeepaliveTime, s.opts.KeepaliveTimeout, s.opts.KeepaliveMinTime}; got != c.want {
				t.Errorf("keepalive time, timeout, min time %v, want %v", got, c.want)
			}
		})
	}
}

// TestSpecKeepalivePingPolicy: a client that pings no more often than
// KeepaliveMinTime keeps its connection, also without an open call; one that pings
// faster gets GOAWAY "too_many_pings" (gRPC's enforcement), so the policy is in force.
func TestSpecKeepalivePingPolicy(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.KeepaliveMinTime = 200 * time.Millisecond })
	cases := []struct {
		name     string
		interval time.Duration
		goaway   bool
	}{
		{"pings at the permitted interval", 250 * time.Millisecond, false},
		{"pings too often", 10 * time.Millisecond, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := rawPings(t, h.addr, 6, c.interval)
			if got != c.goaway {
				t.Fatalf("GOAWAY too_many_pings: %v, want %v", got, c.goaway)
			}
		})
	}
}

// rawPings opens an HTTP/2 connection (no call), sends n PINGs interval apart and
// reports whether the server answered GOAWAY with "too_many_pings".
func rawPings(t *testing.T, addr string, n int, interval time.Duration) bool {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	frame := func(typ, flags byte, payload []byte) []byte {
		l := len(payload)
		return append([]byte{byte(l >> 16), byte(l >> 8), byte(l), typ, flags, 0, 0, 0, 0}, payload...)
	}
	const typSettings, typPing, typGoAway = 4, 6, 7
	if _, err := c.Write(append([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), frame(typSettings, 0, nil)...)); err != nil {
		t.Fatal(err)
	}
	goaway := make(chan bool, 1)
	go func() {
		hdr := make([]byte, 9)
		for {
			if _, err := io.ReadFull(c, hdr); err != nil {
				goaway <- false
				return
			}
			l := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
			payload := make([]byte, l)
			if _, err := io.ReadFull(c, payload); err != nil {
				goaway <- false
				return
			}
			if hdr[3] == typSettings && hdr[4]&1 == 0 {
				c.Write(frame(typSettings, 1, nil)) // ack
			}
			if hdr[3] == typGoAway && l >= 8 && string(payload[8:]) == "too_many_pings" {
				goaway <- true
				return
			}
		}
	}()
	for i := range n {
		if _, err := c.Write(frame(typPing, 0, []byte{0, 0, 0, 0, 0, 0, 0, byte(i)})); err != nil {
			break
		}
		time.Sleep(interval)
	}
	select {
	case g := <-goaway:
		return g
	case <-time.After(300 * time.Millisecond):
		c.Close()
		<-goaway
		return false
	}
}

// testConfig is the program's config with a cookie.
func testConfig(cookie uint64) *p4v1.ForwardingPipelineConfig {
	return &p4v1.ForwardingPipelineConfig{P4Info: P4InfoFromSchema(pipeline.ProgramSchema()), P4DeviceConfig: []byte("dev"),
		Cookie: &p4v1.ForwardingPipelineConfig_Cookie{Cookie: cookie}}
}

// TestWriteFencedByArbitration: a Write that passed the arbitration check is
// applied before a new primary is told it is primary, never after (spec: "The
// server will finish processing any Write requests that have already started"
// before the new primary is accepted). The write of the old primary (10) is held
// right after its check; the new primary (20) arbitrates meanwhile. Its answer
// must not come while the old write is held: otherwise the old primary's update
// would land after the new primary's takeover and its read-back, unseen.
func TestWriteFencedByArbitration(t *testing.T) {
	tests := []struct {
		name      string
		write     *p4v1.Update
		atomicity p4v1.WriteRequest_Atomicity
	}{
		{"continue on error", ins(route(b(10, 9, 0, 0), 16, b(1))), p4v1.WriteRequest_CONTINUE_ON_ERROR},
		{"rollback on error", ins(route(b(10, 8, 0, 0), 16, b(2))), p4v1.WriteRequest_ROLLBACK_ON_ERROR},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := ready(t)
			checked := make(chan struct{})
			release := make(chan bool, 1) // true: the new primary was told during the hold
			told := make(chan struct{})
			var once sync.Once
			hook := func() {
				once.Do(func() {
					close(checked)
					select {
					case <-told:
						release <- true
					case <-time.After(500 * time.Millisecond): // the arbitration waits for us, as it must
						release <- false
					}
				})
			}
			h.srv.afterWriteCheck.Store(&hook)
			wrote := make(chan error, 1)
			go func() {
				_, err := h.cli.Write(ctxT(t), &p4v1.WriteRequest{DeviceId: testDevice, ElectionId: eid(10),
					Updates: []*p4v1.Update{tc.write}, Atomicity: tc.atomicity})
				wrote <- err
			}()
			<-checked
			sc := h.openStream(t)
			sc.arbitrate(eid(20), "")
			go func() {
				for m := range sc.msgs {
					if a := m.GetArbitration(); a != nil && codes.Code(a.GetStatus().GetCode()) == codes.OK {
						close(told)
						return
					}
				}
			}()
			if <-release {
				t.Fatal("the new primary was told it is primary while a write checked against the old one was still to be applied")
			}
			if err := <-wrote; err != nil {
				t.Fatalf("the old primary's write, checked before the takeover: %v", err)
			}
			<-told
			// The write landed before the takeover: the new primary reads it.
			got, err := h.read(t, te(p4src.TableIPv4Route, 0, nil))
			if err != nil || len(got) != 1 {
				t.Fatalf("read after the takeover: %d entities, %v", len(got), err)
			}
			// And the old primary is refused from now on.
			if err := h.write(t, 10, ins(route(b(10, 7, 0, 0), 16, b(1)))); status.Code(err) != codes.PermissionDenied {
				t.Fatalf("write of the deposed primary: %v, want PERMISSION_DENIED", err)
			}
		})
	}
}
