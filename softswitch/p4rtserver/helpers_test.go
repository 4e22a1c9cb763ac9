package p4rtserver

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

const testDevice = 7

// TestMain fails the run if goroutines of the server or gRPC outlive the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaks := waitNoLeaks(5 * time.Second); leaks != "" {
			fmt.Fprintf(os.Stderr, "goroutine leak:\n%s\n", leaks)
			code = 1
		}
	}
	os.Exit(code)
}

// waitNoLeaks returns the stacks of goroutines still in the server or gRPC after d.
func waitNoLeaks(d time.Duration) string {
	deadline := time.Now().Add(d)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var leaks []string
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "TestMain") || strings.Contains(g, "waitNoLeaks") {
				continue
			}
			if strings.Contains(g, "p4rtserver") || strings.Contains(g, "google.golang.org/grpc") {
				leaks = append(leaks, g)
			}
		}
		if len(leaks) == 0 {
			return ""
		}
		if time.Now().After(deadline) {
			return strings.Join(leaks, "\n\n")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type forwarded struct {
	port  uint16
	frame []byte
}

// harness is a server on loopback around the real pipeline, and a client.
type harness struct {
	t    *testing.T
	srv  *Server
	dp   *LocalDataPlane
	cli  p4v1.P4RuntimeClient
	fwd  chan forwarded
	addr string
}

type harnessOpt func(*Options)

func newHarness(t *testing.T, hopts ...harnessOpt) *harness {
	t.Helper()
	h := &harness{t: t, fwd: make(chan forwarded, 64)}
	var clock struct {
		sync.Mutex
		now int64
	}
	h.dp = NewLocalDataPlane(pipeline.New(pipeline.Options{Seed: 1}), LocalOptions{
		Clock: func() int64 {
			clock.Lock()
			defer clock.Unlock()
			clock.now += 1_000_000 // 1 ms per reading
			return clock.now
		},
		Forward: func(port uint16, frame []byte) {
			select {
			case h.fwd <- forwarded{port, frame}:
			default:
			}
		},
	})
	log := logrus.New()
	log.SetOutput(io.Discard)
	if testing.Verbose() {
		log.SetOutput(os.Stderr)
		log.SetLevel(logrus.DebugLevel)
	}
	opts := Options{DeviceID: testDevice, DataPlane: h.dp, Logger: log, DigestPollInterval: 200 * time.Microsecond}
	for _, o := range hopts {
		o(&opts)
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.srv = srv
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	h.addr = lis.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	conn, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	h.cli = p4v1.NewP4RuntimeClient(conn)
	t.Cleanup(func() {
		conn.Close()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("Serve did not return")
		}
	})
	return h
}

// ctxT is one RPC's deadline: a guard against a hung server, not a measure
// of speed. A wildcard read of every register cell (about 110,000 cells) takes
// seconds under -race on a loaded machine.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func eid(low uint64) *p4v1.Uint128 { return &p4v1.Uint128{Low: low} }

// streamClient is one StreamChannel with its received messages.
type streamClient struct {
	t      *testing.T
	stream p4v1.P4Runtime_StreamChannelClient
	msgs   chan *p4v1.StreamMessageResponse
	end    chan error
	cancel context.CancelFunc
}

func (h *harness) openStream(t *testing.T) *streamClient {
	t.Helper()
	return openStreamOn(t, h.cli)
}

// openStreamOn opens a StreamChannel with cli.
func openStreamOn(t *testing.T, cli p4v1.P4RuntimeClient) *streamClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := cli.StreamChannel(ctx)
	if err != nil {
		cancel()
		t.Fatalf("StreamChannel: %v", err)
	}
	sc := &streamClient{t: t, stream: st, msgs: make(chan *p4v1.StreamMessageResponse, 1024), end: make(chan error, 1), cancel: cancel}
	go func() {
		for {
			m, err := st.Recv()
			if err != nil {
				sc.end <- err
				close(sc.msgs)
				return
			}
			sc.msgs <- m
		}
	}()
	t.Cleanup(sc.close)
	return sc
}

func (sc *streamClient) close() {
	sc.cancel()
	for range sc.msgs {
	}
}

func (sc *streamClient) send(m *p4v1.StreamMessageRequest) {
	sc.t.Helper()
	if err := sc.stream.Send(m); err != nil {
		sc.t.Fatalf("stream send: %v", err)
	}
}

func arbReq(device uint64, election *p4v1.Uint128, role string) *p4v1.StreamMessageRequest {
	u := &p4v1.MasterArbitrationUpdate{DeviceId: device, ElectionId: election}
	if role != "" {
		u.Role = &p4v1.Role{Name: role}
	}
	return &p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{Arbitration: u}}
}

func (sc *streamClient) arbitrate(election *p4v1.Uint128, role string) {
	sc.t.Helper()
	sc.send(arbReq(testDevice, election, role))
}

// next returns the next message, failing after a timeout.
func (sc *streamClient) next() *p4v1.StreamMessageResponse {
	sc.t.Helper()
	select {
	case m, ok := <-sc.msgs:
		if !ok {
			sc.t.Fatalf("stream ended: %v", <-sc.end)
		}
		return m
	case <-time.After(5 * time.Second):
		sc.t.Fatalf("no stream message within 5 s")
	}
	return nil
}

// expectNone checks that nothing arrives for d.
func (sc *streamClient) expectNone(d time.Duration) {
	sc.t.Helper()
	select {
	case m, ok := <-sc.msgs:
		if ok {
			sc.t.Fatalf("unexpected stream message %v", m)
		}
	case <-time.After(d):
	}
}

// expectArb reads the next message and checks it is an arbitration update with code
// and the election ID low.
func (sc *streamClient) expectArb(code codes.Code, low uint64) {
	sc.t.Helper()
	m := sc.next()
	a := m.GetArbitration()
	if a == nil {
		sc.t.Fatalf("want arbitration, got %v", m)
	}
	if codes.Code(a.GetStatus().GetCode()) != code || a.GetElectionId().GetLow() != low || a.GetDeviceId() != testDevice {
		sc.t.Fatalf("arbitration: got code %v election %v device %d, want %v %d", codes.Code(a.GetStatus().GetCode()), a.GetElectionId(), a.GetDeviceId(), code, low)
	}
}

// expectEnd waits for the stream to end with code.
func (sc *streamClient) expectEnd(code codes.Code) {
	sc.t.Helper()
	for {
		select {
		case _, ok := <-sc.msgs:
			if ok {
				continue
			}
			err := <-sc.end
			if status.Code(err) != code {
				sc.t.Fatalf("stream ended with %v, want %v", err, code)
			}
			return
		case <-time.After(5 * time.Second):
			sc.t.Fatalf("stream did not end")
		}
	}
}

// expectStreamError reads the next message and checks it is a StreamError with code.
func (sc *streamClient) expectStreamError(code codes.Code) *p4v1.StreamError {
	sc.t.Helper()
	m := sc.next()
	e := m.GetError()
	if e == nil || codes.Code(e.GetCanonicalCode()) != code {
		sc.t.Fatalf("want stream error %v, got %v", code, m)
	}
	return e
}

// primary opens a stream and becomes primary with election ID low.
func (h *harness) primary(t *testing.T, low uint64) *streamClient {
	t.Helper()
	sc := h.openStream(t)
	sc.arbitrate(eid(low), "")
	sc.expectArb(codes.OK, low)
	return sc
}

func (h *harness) setPipeline(t *testing.T, low uint64, action p4v1.SetForwardingPipelineConfigRequest_Action, cookie uint64) error {
	t.Helper()
	_, err := h.cli.SetForwardingPipelineConfig(ctxT(t), &p4v1.SetForwardingPipelineConfigRequest{
		DeviceId: testDevice, ElectionId: eid(low), Action: action,
		Config: &p4v1.ForwardingPipelineConfig{P4Info: P4InfoFromSchema(pipeline.ProgramSchema()), P4DeviceConfig: []byte("dev"),
			Cookie: &p4v1.ForwardingPipelineConfig_Cookie{Cookie: cookie}}})
	return err
}

// ready is a harness with a primary (election ID 10) and the pipeline committed.
func ready(t *testing.T, hopts ...harnessOpt) (*harness, *streamClient) {
	t.Helper()
	h := newHarness(t, hopts...)
	sc := h.primary(t, 10)
	if err := h.setPipeline(t, 10, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, 1); err != nil {
		t.Fatalf("set pipeline: %v", err)
	}
	return h, sc
}

func (h *harness) write(t *testing.T, low uint64, updates ...*p4v1.Update) error {
	t.Helper()
	_, err := h.cli.Write(ctxT(t), &p4v1.WriteRequest{DeviceId: testDevice, ElectionId: eid(low), Updates: updates})
	return err
}

func (h *harness) mustWrite(t *testing.T, updates ...*p4v1.Update) {
	t.Helper()
	if err := h.write(t, 10, updates...); err != nil {
		t.Fatalf("write: %v", err)
	}
}

func (h *harness) read(t *testing.T, entities ...*p4v1.Entity) ([]*p4v1.Entity, error) {
	t.Helper()
	rs, err := h.cli.Read(ctxT(t), &p4v1.ReadRequest{DeviceId: testDevice, Entities: entities})
	if err != nil {
		return nil, err
	}
	var out []*p4v1.Entity
	for {
		r, err := rs.Recv()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, r.GetEntities()...)
	}
}

func (h *harness) mustRead(t *testing.T, entities ...*p4v1.Entity) []*p4v1.Entity {
	t.Helper()
	out, err := h.read(t, entities...)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return out
}

// updateErrors returns the canonical codes of a failed Write's p4.v1.Error details.
func updateErrors(t *testing.T, err error) []codes.Code {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unknown {
		t.Fatalf("want a Write status UNKNOWN with details, got %v", err)
	}
	var out []codes.Code
	for _, d := range st.Details() {
		pe, ok := d.(*p4v1.Error)
		if !ok {
			t.Fatalf("detail %T is not a p4.v1.Error", d)
		}
		out = append(out, codes.Code(pe.GetCanonicalCode()))
	}
	return out
}

// Entity builders.

func upd(t p4v1.Update_Type, e *p4v1.Entity) *p4v1.Update { return &p4v1.Update{Type: t, Entity: e} }

func ins(e *p4v1.Entity) *p4v1.Update { return upd(p4v1.Update_INSERT, e) }
func mod(e *p4v1.Entity) *p4v1.Update { return upd(p4v1.Update_MODIFY, e) }
func del(e *p4v1.Entity) *p4v1.Update { return upd(p4v1.Update_DELETE, e) }

func b(v ...byte) []byte { return v }

func exact(id uint32, v []byte) *p4v1.FieldMatch {
	return &p4v1.FieldMatch{FieldId: id, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: v}}}
}

func lpm(id uint32, v []byte, plen int32) *p4v1.FieldMatch {
	return &p4v1.FieldMatch{FieldId: id, FieldMatchType: &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: v, PrefixLen: plen}}}
}

func ternary(id uint32, v, m []byte) *p4v1.FieldMatch {
	return &p4v1.FieldMatch{FieldId: id, FieldMatchType: &p4v1.FieldMatch_Ternary_{Ternary: &p4v1.FieldMatch_Ternary{Value: v, Mask: m}}}
}

func param(id uint32, v []byte) *p4v1.Action_Param { return &p4v1.Action_Param{ParamId: id, Value: v} }

func act(id uint32, ps ...*p4v1.Action_Param) *p4v1.TableAction {
	return &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: id, Params: ps}}}
}

func te(table uint32, prio int32, a *p4v1.TableAction, ms ...*p4v1.FieldMatch) *p4v1.Entity {
	return &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: table, Priority: prio, Action: a, Match: ms}}}
}

// route is an ipv4_route entry dst/plen -> set_nexthop(port, 2, 3).
func route(dst []byte, plen int32, port []byte) *p4v1.Entity {
	return te(p4src.TableIPv4Route, 0, act(p4src.ActionSetNexthop, param(1, port), param(2, b(2)), param(3, b(3))), lpm(1, dst, plen))
}

func counterEnt(id uint32, idx int64, pk, by int64) *p4v1.Entity {
	ce := &p4v1.CounterEntry{CounterId: id, Data: &p4v1.CounterData{PacketCount: pk, ByteCount: by}}
	if idx >= 0 {
		ce.Index = &p4v1.Index{Index: idx}
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: ce}}
}

func registerEnt(id uint32, idx int64, v []byte) *p4v1.Entity {
	re := &p4v1.RegisterEntry{RegisterId: id}
	if v != nil {
		re.Data = &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: v}}
	}
	if idx >= 0 {
		re.Index = &p4v1.Index{Index: idx}
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: re}}
}

func valueSetEnt(id uint32, members ...[]byte) *p4v1.Entity {
	ve := &p4v1.ValueSetEntry{ValueSetId: id}
	for _, m := range members {
		ve.Members = append(ve.Members, &p4v1.ValueSetMember{Match: []*p4v1.FieldMatch{exact(1, m)}})
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_ValueSetEntry{ValueSetEntry: ve}}
}

func digestEnt(id uint32, cfg *p4v1.DigestEntry_Config) *p4v1.Entity {
	return &p4v1.Entity{Entity: &p4v1.Entity_DigestEntry{DigestEntry: &p4v1.DigestEntry{DigestId: id, Config: cfg}}}
}

func replica(port uint64, instance uint32) *p4v1.Replica {
	return &p4v1.Replica{PortKind: &p4v1.Replica_Port{Port: encodeBits(port)}, Instance: instance}
}

func cloneEnt(id uint32, rs ...*p4v1.Replica) *p4v1.Entity {
	return preEntity(&p4v1.PacketReplicationEngineEntry{Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{
		CloneSessionEntry: &p4v1.CloneSessionEntry{SessionId: id, Replicas: rs}}})
}

func mcastEnt(id uint32, rs ...*p4v1.Replica) *p4v1.Entity {
	return preEntity(&p4v1.PacketReplicationEngineEntry{Type: &p4v1.PacketReplicationEngineEntry_MulticastGroupEntry{
		MulticastGroupEntry: &p4v1.MulticastGroupEntry{MulticastGroupId: id, Replicas: rs}}})
}

func memberEnt(profile, id uint32, a *p4v1.TableAction) *p4v1.Entity {
	m := &p4v1.ActionProfileMember{ActionProfileId: profile, MemberId: id}
	if a != nil {
		m.Action = a.GetAction()
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_ActionProfileMember{ActionProfileMember: m}}
}

// groupEnt is a group of profile with members given as member ID, weight pairs.
func groupEnt(profile, id uint32, maxSize int32, idWeight ...int32) *p4v1.Entity {
	g := &p4v1.ActionProfileGroup{ActionProfileId: profile, GroupId: id, MaxSize: maxSize}
	for i := 0; i+1 < len(idWeight); i += 2 {
		g.Members = append(g.Members, &p4v1.ActionProfileGroup_Member{MemberId: uint32(idWeight[i]), Weight: idWeight[i+1]})
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_ActionProfileGroup{ActionProfileGroup: g}}
}

// snapshot reads back the whole controller-visible state as sorted text, to compare
// before and after a refused request: over P4Runtime the table entries and defaults,
// action profile members and groups, the value set, digest configs, clone sessions and
// multicast groups; and every cell of every counter and register, straight from the
// pipeline (what a P4Runtime read of them returns, without the codec cost of some
// 75 000 entities per check; fullSnapshot reads them over P4Runtime too).
func (h *harness) snapshot(t *testing.T) []string {
	t.Helper()
	out := h.readSnapshot(t,
		te(0, 0, nil),
		&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{IsDefaultAction: true}}},
		memberEnt(0, 0, nil),
		groupEnt(0, 0, 0),
		valueSetEnt(0),
		digestEnt(0, nil),
		cloneEnt(0),
		mcastEnt(0),
	)
	err := h.dp.Exec(ctxT(t), func(p *pipeline.Pipeline) error {
		sc := pipeline.ProgramSchema()
		var cv []pipeline.CounterValue
		var rv []pipeline.RegisterValue
		var err error
		for _, c := range sc.Counters {
			if cv, err = p.ReadCounter(c.ID, -1, cv[:0]); err != nil {
				return err
			}
			// strconv, not fmt: a snapshot formats every cell (~110,000), many
			// times per test, under -race.
			b := fmt.Appendf(nil, "counter %#x:", c.ID)
			for _, v := range cv {
				b = strconv.AppendUint(append(strconv.AppendUint(append(b, ' '), v.Packets, 10), '/'), v.Bytes, 10)
			}
			out = append(out, string(b))
		}
		for _, r := range sc.Registers {
			if rv, err = p.ReadRegister(r.ID, -1, rv[:0]); err != nil {
				return err
			}
			b := fmt.Appendf(nil, "register %#x:", r.ID)
			for _, v := range rv {
				b = strconv.AppendUint(append(b, ' '), v.Value, 10)
			}
			out = append(out, string(b))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot of counters and registers: %v", err)
	}
	sort.Strings(out)
	return out
}

// fullSnapshot is everything snapshot reads, all of it over P4Runtime: every cell of
// every counter and register included.
func (h *harness) fullSnapshot(t *testing.T) []string {
	t.Helper()
	out := h.readSnapshot(t,
		te(0, 0, nil),
		&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{IsDefaultAction: true}}},
		counterEnt(0, -1, 0, 0),
		registerEnt(0, -1, nil),
		memberEnt(0, 0, nil),
		groupEnt(0, 0, 0),
		valueSetEnt(0),
		digestEnt(0, nil),
		cloneEnt(0),
		mcastEnt(0),
	)
	sort.Strings(out)
	return out
}

// readSnapshot reads the entities and returns them marshalled (deterministic).
func (h *harness) readSnapshot(t *testing.T, entities ...*p4v1.Entity) []string {
	t.Helper()
	ents := h.mustRead(t, entities...)
	out := make([]string, len(ents))
	for i, e := range ents {
		bs, err := proto.MarshalOptions{Deterministic: true}.Marshal(e)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		out[i] = string(bs)
	}
	return out
}

func sameSnapshot(a, b []string) bool { return slices.Equal(a, b) }
