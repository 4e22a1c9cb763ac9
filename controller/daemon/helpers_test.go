package daemon

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/controller/fabric"
	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"github.com/fastcnp/fastcnp/softswitch/p4rtserver"
	"github.com/fastcnp/fastcnp/wire"
)

// TestMain fails the run if goroutines of the daemon, p4rt, the server or
// gRPC outlive the tests. They may take a while to end on a loaded machine:
// the deadline only guards against a hang.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaks := waitNoLeaks(30 * time.Second); leaks != "" {
			fmt.Fprintf(os.Stderr, "goroutine leak:\n%s\n", leaks)
			code = 1
		}
	}
	os.Exit(code)
}

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
			for _, pkg := range []string{"controller/daemon", "controller/p4rt", "p4rtserver", "google.golang.org/grpc"} {
				if strings.Contains(g, pkg) {
					leaks = append(leaks, g)
					break
				}
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

func quietLogger() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	if os.Getenv("FASTCNP_TEST_LOG") != "" {
		l.SetOutput(os.Stderr)
		l.SetLevel(logrus.DebugLevel)
	}
	return l
}

// testSwitch is an in-process fastcnp-switch on a loopback port.
type testSwitch struct {
	t        testing.TB
	addr     string
	deviceID uint64
	dp       *p4rtserver.LocalDataPlane
	srv      *p4rtserver.Server
	cancel   context.CancelFunc
	done     chan struct{}
	writes   *writeLog
	vs       *valueSetRefuser // nil unless started with noValueSets
}

// proxy is a TCP relay in front of a switch; cut closes the connections
// through it (the switch keeps its state, the controller sees its stream
// break and reconnects through the proxy).
type proxy struct {
	lis    net.Listener
	target string
	// held: connections are accepted and closed at once (the switch is
	// unreachable through the proxy).
	held  atomic.Bool
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func startProxy(t testing.TB, target string) *proxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{lis: lis, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		lis.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) addr() string { return p.lis.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.lis.Accept()
		if err != nil {
			return
		}
		if p.held.Load() {
			c.Close()
			continue
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		for _, pair := range [][2]net.Conn{{c, u}, {u, c}} {
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				_, _ = io.Copy(pair[0], pair[1])
				pair[0].Close()
				pair[1].Close()
			}()
		}
	}
}

// cut closes every connection through the proxy.
func (p *proxy) cut() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// writeLog counts the updates of the Write RPCs a switch accepted, by the
// writer's election ID (low half) and update type: what reached the switch,
// independently of fastcnpd's own metrics.
type writeLog struct {
	mu        sync.Mutex
	n         map[uint64]map[p4v1.Update_Type]int
	pipelines int // SetForwardingPipelineConfig calls accepted
	// deviceConfig is the p4_device_config of the last accepted push.
	deviceConfig []byte
	// kinds counts the accepted updates by "TYPE kind" (fabric.Kind names,
	// "MODIFY action_profile_group"), from any writer.
	kinds map[string]int
	// batches is the list of accepted Write RPCs, each as its "TYPE kind"s.
	batches [][]string
}

// updateKind names an update as "TYPE kind".
func updateKind(u *p4v1.Update) string {
	k := "other"
	if e, err := fabric.Canonical(u.GetEntity()); err == nil {
		k = e.Kind.String()
	}
	return u.GetType().String() + " " + k
}

// kindSnapshot returns the counts so far by "TYPE kind" and the number of
// Write RPCs.
func (w *writeLog) kindSnapshot() (map[string]int, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int, len(w.kinds))
	for k, v := range w.kinds {
		out[k] = v
	}
	return out, len(w.batches)
}

// kindsSince returns the updates by "TYPE kind" accepted since the
// snapshot, and the Write RPCs since, each as its "TYPE kind"s.
func (w *writeLog) kindsSince(before map[string]int, batches int) (map[string]int, [][]string) {
	now, _ := w.kindSnapshot()
	out := map[string]int{}
	for k, v := range now {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return out, append([][]string(nil), w.batches[batches:]...)
}

func (w *writeLog) pushes() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pipelines
}

func (w *writeLog) interceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	resp, err := h(ctx, req)
	if sp, ok := req.(*p4v1.SetForwardingPipelineConfigRequest); ok && err == nil {
		w.mu.Lock()
		w.pipelines++
		w.deviceConfig = sp.GetConfig().GetP4DeviceConfig()
		w.mu.Unlock()
	}
	if wr, ok := req.(*p4v1.WriteRequest); ok && err == nil {
		w.mu.Lock()
		id := wr.GetElectionId().GetLow()
		if w.n[id] == nil {
			w.n[id] = map[p4v1.Update_Type]int{}
		}
		var batch []string
		for _, u := range wr.GetUpdates() {
			w.n[id][u.GetType()]++
			k := updateKind(u)
			w.kinds[k]++
			batch = append(batch, k)
		}
		w.batches = append(w.batches, batch)
		w.mu.Unlock()
	}
	return resp, err
}

// snapshot returns the counts so far: election ID -> type -> updates.
func (w *writeLog) snapshot() map[uint64]map[p4v1.Update_Type]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[uint64]map[p4v1.Update_Type]int{}
	for id, m := range w.n {
		out[id] = map[p4v1.Update_Type]int{}
		for k, v := range m {
			out[id][k] = v
		}
	}
	return out
}

// since returns the updates of each type accepted from any writer since
// the snapshot before.
func (w *writeLog) since(before map[uint64]map[p4v1.Update_Type]int) map[p4v1.Update_Type]int {
	out := map[p4v1.Update_Type]int{}
	for id, m := range w.snapshot() {
		for k, v := range m {
			if d := v - before[id][k]; d != 0 {
				out[k] += d
			}
		}
	}
	return out
}

// valueSetRefuser makes a switch answer like BMv2's P4Runtime server (PI,
// behavioral-model issue #854) does for parser value sets: a read of a
// value set fails with UNIMPLEMENTED, and a write applies its other updates
// and fails with UNKNOWN, reporting UNIMPLEMENTED for each value-set update
// and OK for the others (the P4Runtime batch error).
type valueSetRefuser struct {
	writes, reads atomic.Int64 // value-set writes and reads refused
}

func (v *valueSetRefuser) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	wr, ok := req.(*p4v1.WriteRequest)
	if !ok {
		return h(ctx, req)
	}
	var rest []*p4v1.Update
	for _, u := range wr.GetUpdates() {
		if u.GetEntity().GetValueSetEntry() == nil {
			rest = append(rest, u)
		}
	}
	if len(rest) == len(wr.GetUpdates()) {
		return h(ctx, req)
	}
	v.writes.Add(1)
	var applied error
	if len(rest) > 0 {
		sub := proto.Clone(wr).(*p4v1.WriteRequest)
		sub.Updates = rest
		_, applied = h(ctx, sub)
	}
	st := status.New(codes.Unknown, "batch failed")
	for _, u := range wr.GetUpdates() {
		e := &p4v1.Error{CanonicalCode: int32(codes.OK)}
		switch {
		case u.GetEntity().GetValueSetEntry() != nil:
			e = &p4v1.Error{CanonicalCode: int32(codes.Unimplemented), Message: "value sets are not supported"}
		case applied != nil:
			e = &p4v1.Error{CanonicalCode: int32(codes.Unknown), Message: applied.Error()}
		}
		var err error
		if st, err = st.WithDetails(e); err != nil {
			return nil, err
		}
	}
	return nil, st.Err()
}

func (v *valueSetRefuser) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return h(srv, &refusingStream{ServerStream: ss, v: v})
}

type refusingStream struct {
	grpc.ServerStream
	v *valueSetRefuser
}

func (s *refusingStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if rr, ok := m.(*p4v1.ReadRequest); ok {
		for _, e := range rr.GetEntities() {
			if e.GetValueSetEntry() != nil {
				s.v.reads.Add(1)
				return status.Error(codes.Unimplemented, "value sets are not supported")
			}
		}
	}
	return nil
}

// switchOpts vary a test switch.
type switchOpts struct {
	// noValueSets answers value-set reads and writes as BMv2 does.
	noValueSets bool
}

func startSwitch(t testing.TB, addr string, deviceID uint64) *testSwitch {
	t.Helper()
	return startSwitchOpts(t, addr, deviceID, switchOpts{})
}

func startSwitchOpts(t testing.TB, addr string, deviceID uint64, so switchOpts) *testSwitch {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var lis net.Listener
	var err error
	// The previous server's port may take a while to free on a loaded
	// machine; the deadline only guards against a hang.
	for deadline := time.Now().Add(syncTimeout); ; time.Sleep(20 * time.Millisecond) {
		if lis, err = net.Listen("tcp", addr); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	dp := p4rtserver.NewLocalDataPlane(pipeline.New(pipeline.Options{}), p4rtserver.LocalOptions{})
	wl := &writeLog{n: map[uint64]map[p4v1.Update_Type]int{}, kinds: map[string]int{}}
	unary := []grpc.UnaryServerInterceptor{wl.interceptor}
	var streams []grpc.StreamServerInterceptor
	var vs *valueSetRefuser
	if so.noValueSets {
		vs = &valueSetRefuser{}
		unary = append([]grpc.UnaryServerInterceptor{vs.unary}, unary...) // outermost: wl counts what was applied
		streams = append(streams, vs.stream)
	}
	srv, err := p4rtserver.New(p4rtserver.Options{DeviceID: deviceID, DataPlane: dp, Logger: quietLogger(),
		GRPCOptions: []grpc.ServerOption{grpc.ChainUnaryInterceptor(unary...), grpc.ChainStreamInterceptor(streams...)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &testSwitch{t: t, addr: lis.Addr().String(), deviceID: deviceID, dp: dp, srv: srv, cancel: cancel,
		done: make(chan struct{}), writes: wl, vs: vs}
	go func() {
		defer close(s.done)
		_ = srv.Serve(ctx, lis)
	}()
	t.Cleanup(s.stop)
	return s
}

func (s *testSwitch) stop() {
	s.cancel()
	s.srv.Stop()
	<-s.done
}

func (s *testSwitch) entries(tableID uint32) []pipeline.TableEntry {
	var out []pipeline.TableEntry
	err := s.dp.Exec(context.Background(), func(p *pipeline.Pipeline) error {
		var err error
		out, err = p.ReadEntries(tableID, nil)
		return err
	})
	if err != nil {
		s.t.Fatalf("read table %#x: %v", tableID, err)
	}
	return out
}

func (s *testSwitch) count(tableID uint32) int {
	var n int
	err := s.dp.Exec(context.Background(), func(p *pipeline.Pipeline) error {
		var err error
		n, err = p.EntryCount(tableID)
		return err
	})
	if err != nil {
		s.t.Fatalf("count table %#x: %v", tableID, err)
	}
	return n
}

// param returns an action parameter of the single entry of a table whose
// first match value is key.
func (s *testSwitch) param(tableID uint32, key uint64, paramID uint32) (uint64, bool) {
	for _, e := range s.entries(tableID) {
		if e.Match[0].Value != key {
			continue
		}
		for _, p := range e.Action.Params {
			if p.ID == paramID {
				return p.Value, true
			}
		}
	}
	return 0, false
}

const testYAML = `
api:
  auth: {insecure: true}
state_file: %s
metrics: {listen: ""}
announce: {udp_port: 4792, idle_timeout: 10s}
inc:
  # INC membership: group 7 behind s1 (10.1.1.5 rank 0, 10.1.2.9 rank 1),
  # group 9 behind s2 (10.2.1.5 rank 4).
  groups:
    - {id: 7, members: [{host: 10.1.1.5, rank: 0}, {host: 10.1.2.9, rank: 1}]}
    - {id: 9, members: [{host: 10.2.1.5, rank: 4}]}
switches:
  - name: s1
    address: %s
    device_id: 1
    election_id: 10
    tls: {insecure: true}
    ports:
      - {port: 1, mac: "02:00:00:00:01:01", subnets: [10.1.1.0/24]}
      - {port: 2, mac: "02:00:00:00:01:02", subnets: [10.1.2.0/24]}
      - {port: 3, mac: "02:00:00:00:01:03", link_rate: 400Gb/s}
    routes:
      - {prefix: 10.1.1.0/24, port: 1, next_hop_mac: "02:00:00:00:aa:01"}
      - {prefix: 10.1.2.0/24, port: 2, next_hop_mac: "02:00:00:00:aa:02"}
      - {prefix: 10.0.0.0/8, port: 3, next_hop_mac: "02:00:00:00:03:01"}
    inc:
      next_hops: [{port: 3, mac: "02:00:00:00:03:01", weight: 1}]
  - name: s2
    address: %s
    device_id: 2
    election_id: 10
    tls: {insecure: true}
    ports:
      - {port: 1, mac: "02:00:00:00:02:01", subnets: [10.2.1.0/24]}
      - {port: 3, mac: "02:00:00:00:02:03"}
      - {port: 4, mac: "02:00:00:00:02:04"}
    routes:
      - {prefix: 10.2.1.0/24, port: 1, next_hop_mac: "02:00:00:00:bb:01"}
      - {prefix: 10.0.0.0/8, port: 3, next_hop_mac: "02:00:00:00:03:02"}
    inc:
      next_hops: [{port: 3, mac: "02:00:00:00:03:02", weight: 3}, {port: 4, mac: "02:00:00:00:03:04", weight: 1}]
`

func testConfig(t *testing.T, stateFile string, s1, s2 *testSwitch) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(fmt.Sprintf(testYAML, stateFile, s1.addr, s2.addr)))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// testDaemon is a running Daemon.
type testDaemon struct {
	*Daemon
	cancel context.CancelFunc
	done   chan error
}

// clock is a test clock that moves only when the test advances it, so that
// nothing expires because the machine is slow.
type clock struct{ off atomic.Int64 }

// clockBase is where every test clock starts.
var clockBase = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func (c *clock) now() time.Time          { return clockBase.Add(time.Duration(c.off.Load())) }
func (c *clock) advance(d time.Duration) { c.off.Add(int64(d)) }

// startDaemon runs a daemon with a fake clock (unless mod sets Now).
func startDaemon(t testing.TB, cfg *config.Config, mod func(*Options)) *testDaemon {
	t.Helper()
	return startDaemonRun(t, cfg, mod, false)
}

// startCrashingDaemon is startDaemon for a daemon that crashes when
// stopped: it ends without the final write of the state file.
func startCrashingDaemon(t testing.TB, cfg *config.Config, mod func(*Options)) *testDaemon {
	t.Helper()
	return startDaemonRun(t, cfg, mod, true)
}

func startDaemonRun(t testing.TB, cfg *config.Config, mod func(*Options), crash bool) *testDaemon {
	t.Helper()
	opts := Options{Config: cfg, Logger: quietLogger(), AuditInterval: -1, CounterInterval: -1, ExpiryInterval: 20 * time.Millisecond,
		Now: (&clock{}).now, ClientOptions: []p4rt.Option{p4rt.WithBackoff(p4rt.Backoff{Initial: 20 * time.Millisecond,
			Max: 200 * time.Millisecond, Multiplier: 2, Jitter: 0.1})}}
	if mod != nil {
		mod(&opts)
	}
	d, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	td := &testDaemon{Daemon: d, cancel: cancel, done: make(chan error, 1)}
	go func() {
		if crash {
			d.run(ctx)
			td.done <- nil
			return
		}
		td.done <- d.Run(ctx)
	}()
	var once sync.Once
	t.Cleanup(func() { once.Do(td.stopNow) })
	return td
}

func (td *testDaemon) stopNow() {
	td.cancel()
	<-td.done
	td.done <- nil // later stops return at once
}

// waitStandby waits until d is connected to every switch as a backup.
func waitStandby(t testing.TB, d *Daemon) {
	t.Helper()
	waitFor(t, "standby connected", syncTimeout, func() bool {
		for _, st := range d.Switches() {
			if !st.Connected || st.Primary {
				return false
			}
		}
		return true
	})
}

// waitPrimary waits until d is the primary of every switch.
func waitPrimary(t testing.TB, d *Daemon) {
	t.Helper()
	waitFor(t, "primary of every switch", syncTimeout, func() bool {
		for _, st := range d.Switches() {
			if !st.Primary {
				return false
			}
		}
		return true
	})
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// inSync reports whether the switch holds exactly the daemon's desired state.
func inSync(t *testing.T, d *Daemon, name string, s *testSwitch) bool {
	t.Helper()
	r := d.byName[name]
	res, err := d.desired(r, r.incTable())
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint32]int{}
	members, groups := 0, 0
	for _, e := range res.State.Entries() {
		if te := e.Entity.GetTableEntry(); te != nil {
			want[te.GetTableId()]++
		}
		switch e.Kind {
		case fabric.KindActionProfileMember:
			members++
		case fabric.KindActionProfileGroup:
			groups++
		}
	}
	for _, id := range []uint32{p4src.TableIPv4Route, p4src.TableTrafficClass, p4src.TablePortConfig,
		p4src.TableRDMAConnection, p4src.TableIncGroup, p4src.TableIncRoute, p4src.TableFlowBytesLog2,
		p4src.TablePortBytesLog2, p4src.TableWindowExp2, p4src.TableNextHopGroupSelect,
		p4src.TableIncSlotTimeout, p4src.TableIncChildPort} {
		if s.count(id) != want[id] {
			return false
		}
	}
	m, g := s.profile()
	return len(m) == members && len(g) == groups
}

// profile returns the members and groups of the switch's ECMP selector.
func (s *testSwitch) profile() ([]pipeline.ProfileMember, []pipeline.ProfileGroup) {
	var ms []pipeline.ProfileMember
	var gs []pipeline.ProfileGroup
	err := s.dp.Exec(context.Background(), func(p *pipeline.Pipeline) error {
		var err error
		if ms, err = p.ReadProfileMembers(p4src.ProfileNextHopSelector, 0, nil); err != nil {
			return err
		}
		gs, err = p.ReadProfileGroups(p4src.ProfileNextHopSelector, 0, nil)
		return err
	})
	if err != nil {
		s.t.Fatalf("read the ECMP selector: %v", err)
	}
	return ms, gs
}

// readBackPlan reads the switch like an audit and returns the repair plan.
func readBackPlan(t *testing.T, d *Daemon, name string, s *testSwitch) fabric.Plan {
	t.Helper()
	r := d.byName[name]
	c, err := p4rt.Dial(context.Background(), s.addr, s.deviceID, p4rt.WithElectionID(p4rt.Uint128{Low: 1}),
		p4rt.WithInfo(r.info))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, unreadable, err := r.readBack(context.Background(), c)
	if err != nil || len(unreadable) != 0 {
		t.Fatalf("read back: %v, unreadable %v", err, unreadable)
	}
	res, err := d.desired(r, r.incTable())
	if err != nil {
		t.Fatal(err)
	}
	return fabric.Diff(res.State, st)
}

func announceFrame(t *testing.T, typ uint8, src string, sport uint16, rqpn uint32, mod func(*wire.Announcement)) []byte {
	t.Helper()
	ip := net.ParseIP(src).To4()
	a := wire.NewAnnouncement(typ, wire.AnnounceFlagCNPTarget)
	copy(a.SenderIP[:], ip)
	a.ReceiverIP = wire.Addr4{10, 2, 1, 9}
	a.UDPSrcPort, a.ReceiverQPN, a.SenderQPN = sport, rqpn, 0x77
	if mod != nil {
		mod(&a)
	}
	env := &wire.Envelope{SrcMAC: wire.MAC{2, 0, 0, 0, 0, 9}, DstMAC: wire.MAC{2, 0, 0, 0, 1, 1},
		DstIP: wire.Addr4{10, 2, 1, 9}, SrcPort: 5000}
	copy(env.SrcIP[:], ip)
	b := make([]byte, 128)
	n, err := wire.BuildAnnouncement(b, env, &a)
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}
