package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/fastcnp/fastcnp/internal/etcdtest"
	"github.com/fastcnp/fastcnp/internal/netns"
	"github.com/fastcnp/fastcnp/internal/netns/netnstest"
	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	fastcnpv1 "github.com/fastcnp/fastcnp/proto/fastcnp/v1"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"github.com/fastcnp/fastcnp/softswitch/p4rtserver"
	"github.com/fastcnp/fastcnp/wire"
)

// The failover tests run fastcnpd as it is deployed: the command built
// without the race detector, each instance in its own network namespace
// ("a", "b"), reaching etcd and two fastcnp-switch P4Runtime servers in a
// third ("hub") over a veth pair each. The switches run in the test process
// (their listeners opened inside hub), so the test reads their tables
// directly and sees every write and arbitration they accept. A fault hits
// the leader: SIGSTOP, SIGKILL, or its veth taken down.

// Addresses: hub has 10.77.<i>.1 on the veth to instance i (1: a, 2: b),
// the instance 10.77.<i>.2. etcd and the switches listen on 10.77.1.1, which
// b reaches through its default route to hub (hub owns the address).
const (
	haHub      = "10.77.1.1"
	haEtcdPort = 2379
)

var haInstances = []string{"a", "b"}

func haIP(i int) string  { return fmt.Sprintf("10.77.%d.2", i+1) }
func hubIP(i int) string { return fmt.Sprintf("10.77.%d.1", i+1) }

// haSwitch is an in-process fastcnp-switch server listening inside hub, with
// what it accepted: writes by election ID and type, and the arbitration
// updates it received, with their times.
type haSwitch struct {
	name   string
	addr   string
	dp     *p4rtserver.LocalDataPlane
	mu     sync.Mutex
	writes []haWrite
	arbs   []haArb
	pushes int
}

// haWrite is a Write the switch accepted: when it returned, the writer's
// election ID, its updates by type.
type haWrite struct {
	at    time.Time
	id    [2]uint64
	types map[p4v1.Update_Type]int
}

type haArb struct {
	at time.Time
	id [2]uint64
}

func (s *haSwitch) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	resp, err := h(ctx, req)
	if err != nil {
		return resp, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r := req.(type) {
	case *p4v1.WriteRequest:
		w := haWrite{at: time.Now(), id: [2]uint64{r.GetElectionId().GetHigh(), r.GetElectionId().GetLow()},
			types: map[p4v1.Update_Type]int{}}
		for _, u := range r.GetUpdates() {
			w.types[u.GetType()]++
		}
		s.writes = append(s.writes, w)
	case *p4v1.SetForwardingPipelineConfigRequest:
		s.pushes++
	}
	return resp, err
}

func (s *haSwitch) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return h(srv, &arbStream{ServerStream: ss, s: s})
}

type arbStream struct {
	grpc.ServerStream
	s *haSwitch
}

func (a *arbStream) RecvMsg(m any) error {
	if err := a.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if r, ok := m.(*p4v1.StreamMessageRequest); ok && r.GetArbitration() != nil {
		e := r.GetArbitration().GetElectionId()
		a.s.mu.Lock()
		a.s.arbs = append(a.s.arbs, haArb{at: time.Now(), id: [2]uint64{e.GetHigh(), e.GetLow()}})
		a.s.mu.Unlock()
	}
	return nil
}

// topArb returns the highest election ID the switch was offered so far.
func (s *haSwitch) topArb() [2]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var top [2]uint64
	for _, a := range s.arbs {
		if idLess(top, a.id) {
			top = a.id
		}
	}
	return top
}

// firstAbove returns the first arbitration with an election ID above id
// received after since.
func (s *haSwitch) firstAbove(id [2]uint64, since time.Time) (haArb, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.arbs {
		if idLess(id, a.id) && !a.at.Before(since) {
			return a, true
		}
	}
	return haArb{}, false
}

func idLess(a, b [2]uint64) bool { return a[0] < b[0] || (a[0] == b[0] && a[1] < b[1]) }

// writesBy returns the Writes accepted from election ID id at or after t0.
func (s *haSwitch) writesBy(id [2]uint64, t0 time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, w := range s.writes {
		if w.id == id && !w.at.Before(t0) {
			n++
		}
	}
	return n
}

// haConn is a connection as the switch's rdma_connection table holds it.
type haConn struct {
	sender              string
	sport, rqpn         uint64
	senderQPN, connSlot uint64
}

func (c haConn) key() string { return fmt.Sprintf("%s/%d/%d", c.sender, c.sport, c.rqpn) }

// conns reads the switch's rdma_connection table.
func (s *haSwitch) conns(t *testing.T) map[string]haConn {
	t.Helper()
	var es []pipeline.TableEntry
	if err := s.dp.Exec(context.Background(), func(p *pipeline.Pipeline) error {
		var err error
		es, err = p.ReadEntries(p4src.TableRDMAConnection, nil)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	out := map[string]haConn{}
	for _, e := range es {
		var c haConn
		for _, m := range e.Match {
			switch m.FieldID {
			case 1:
				c.sender = netip.AddrFrom4([4]byte{byte(m.Value >> 24), byte(m.Value >> 16), byte(m.Value >> 8), byte(m.Value)}).String()
			case 2:
				c.sport = m.Value
			case 3:
				c.rqpn = m.Value
			}
		}
		for _, p := range e.Action.Params {
			switch p.ID {
			case 1:
				c.senderQPN = p.Value
			case 3:
				c.connSlot = p.Value
			}
		}
		out[c.key()] = c
	}
	return out
}

// tableCounts counts the entries of every table but rdma_connection.
func (s *haSwitch) tableCounts(t *testing.T) map[uint32]int {
	t.Helper()
	out := map[uint32]int{}
	for _, id := range []uint32{p4src.TableIPv4Route, p4src.TableTrafficClass, p4src.TablePortConfig, p4src.TableIncRoute,
		p4src.TableFlowBytesLog2, p4src.TablePortBytesLog2, p4src.TableWindowExp2} {
		if err := s.dp.Exec(context.Background(), func(p *pipeline.Pipeline) error {
			n, err := p.EntryCount(id)
			out[id] = n
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// haProc is one fastcnpd process.
type haProc struct {
	name, ns, cfg, log string
	cmd                *exec.Cmd
	done               chan struct{}
	api                fastcnpv1.FastcnpClient
	conn               *grpc.ClientConn
	metrics            string
}

// haBed is the whole setup.
type haBed struct {
	t        *testing.T
	tb       *netns.Testbed
	hub      *netns.NS
	nss      []*netns.NS
	dir, bin string
	etcd     *etcdtest.Cluster
	cli      *clientv3.Client
	switches []*haSwitch
	procs    []*haProc
	http     *http.Client
}

func buildFastcnpd(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "fastcnpd")
	// Without -race: the takeover times measured are the command's.
	cmd := exec.Command("go", "build", "-o", out, ".")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, msg)
	}
	return out
}

// newHABed builds fastcnpd, the namespaces, etcd (when ha) and the switches,
// and writes each instance's config; it starts no fastcnpd.
func newHABed(t *testing.T, ha bool) *haBed {
	t.Helper()
	tb := netnstest.New(t)
	if ha {
		etcdtest.Require(t)
	}
	ctx := context.Background()
	b := &haBed{t: t, tb: tb, dir: t.TempDir()}
	if d := os.Getenv("FASTCNP_HA_DIR"); d != "" {
		b.dir = d
	}
	b.bin = buildFastcnpd(t, b.dir)
	var err error
	if b.hub, err = tb.Namespace(ctx, "hub"); err != nil {
		t.Fatal(err)
	}
	for i, name := range haInstances {
		ns, err := tb.Namespace(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		b.nss = append(b.nss, ns)
		if _, err := tb.Veth(ctx,
			netns.LinkConfig{NS: b.hub, Name: "to-" + name, Addrs: []netip.Prefix{netip.MustParsePrefix(hubIP(i) + "/24")}},
			netns.LinkConfig{NS: ns, Name: "eth0", Addrs: []netip.Prefix{netip.MustParsePrefix(haIP(i) + "/24")}}); err != nil {
			t.Fatal(err)
		}
		if err := ns.AddRoute(ctx, netns.Route{Dst: netip.MustParsePrefix("0.0.0.0/0"), Via: netip.MustParseAddr(hubIP(i))}); err != nil {
			t.Fatal(err)
		}
	}
	b.http = &http.Client{Transport: &http.Transport{DialContext: b.hub.DialContext, DisableKeepAlives: true}, Timeout: 2 * time.Second}
	if ha {
		b.etcd = etcdtest.Start(t, etcdtest.Options{Hosts: []string{haHub}, Ports: []int{haEtcdPort}, Netns: b.hub.Name(),
			Dial: b.hub.DialContext})
		b.cli, err = clientv3.New(clientv3.Config{Endpoints: b.etcd.Endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
			DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
				return b.hub.DialContext(ctx, "tcp", addr)
			})}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.cli.Close() })
	}
	for i := range 2 {
		b.switches = append(b.switches, b.startSwitch(fmt.Sprintf("s%d", i+1), uint64(i+1), 9559+i))
	}
	state := filepath.Join(b.dir, "state.json")
	for i, name := range haInstances {
		p := &haProc{name: name, ns: b.nss[i].Name(), cfg: filepath.Join(b.dir, name+".yaml"),
			log: filepath.Join(b.dir, name+".log"), metrics: net.JoinHostPort(haIP(i), "9561")}
		store := "state_file: " + state
		if ha {
			store = fmt.Sprintf("ha: {etcd: {endpoints: [\"http://%s:%d\"]}}", haHub, haEtcdPort)
		}
		if err := os.WriteFile(p.cfg, []byte(haConfig(haIP(i), store, b.switches)), 0o600); err != nil {
			t.Fatal(err)
		}
		p.conn, err = grpc.NewClient(net.JoinHostPort(haIP(i), "9560"), grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
				return b.hub.DialContext(ctx, "tcp", addr)
			}))
		if err != nil {
			t.Fatal(err)
		}
		p.api = fastcnpv1.NewFastcnpClient(p.conn)
		t.Cleanup(func() { p.conn.Close() })
		b.procs = append(b.procs, p)
	}
	t.Cleanup(b.stopAll)
	return b
}

// haConfig is an instance's configuration: the same but for its own API and
// metrics addresses (and the store: a shared state file, or etcd).
func haConfig(ip, store string, switches []*haSwitch) string {
	var sw strings.Builder
	for i, s := range switches {
		fmt.Fprintf(&sw, `  - name: %s
    address: %s
    device_id: %d
    election_id: 10
    tls: {insecure: true}
    ports:
      - {port: 1, mac: "02:00:00:00:0%d:01", subnets: [10.1.0.0/16]}
      - {port: 2, mac: "02:00:00:00:0%d:02", subnets: [10.2.0.0/16]}
      - {port: 3, mac: "02:00:00:00:0%d:03"}
    routes:
      - {prefix: 10.1.0.0/16, port: 1, next_hop_mac: "02:00:00:00:aa:01"}
      - {prefix: 10.2.0.0/16, port: 2, next_hop_mac: "02:00:00:00:aa:02"}
      - {prefix: 10.0.0.0/8, port: 3, next_hop_mac: "02:00:00:00:aa:03"}
`, s.name, s.addr, i+1, i+1, i+1, i+1)
	}
	return fmt.Sprintf(`api: {listen: "%s:9560", auth: {insecure: true}}
metrics: {listen: "%s:9561"}
%s
announce: {idle_timeout: 1h}
switches:
%s`, ip, ip, store, sw.String())
}

func (b *haBed) startSwitch(name string, deviceID uint64, port int) *haSwitch {
	t := b.t
	s := &haSwitch{name: name, addr: net.JoinHostPort(haHub, strconv.Itoa(port))}
	var lis net.Listener
	if err := b.hub.Do(func() error {
		var err error
		lis, err = net.Listen("tcp", s.addr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	s.dp = p4rtserver.NewLocalDataPlane(pipeline.New(pipeline.Options{}), p4rtserver.LocalOptions{PacketInQueue: 16384})
	serveSwitch(t, lis, p4rtserver.Options{DeviceID: deviceID, DataPlane: s.dp,
		GRPCOptions: []grpc.ServerOption{grpc.ChainUnaryInterceptor(s.unary), grpc.ChainStreamInterceptor(s.stream)}})
	return s
}

// start runs instance i (extra flags appended).
func (b *haBed) start(i int, extra ...string) {
	t := b.t
	p := b.procs[i]
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"ip", "netns", "exec", p.ns, b.bin, "--config", p.cfg, "--instance-name", p.name,
		"--log-format", "json", "--counter-interval", "0"}, extra...)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatal(err)
	}
	p.cmd, p.done = cmd, make(chan struct{})
	go func(done chan struct{}) {
		_ = cmd.Wait()
		f.Close()
		close(done)
	}(p.done)
}

func (b *haBed) signal(i int, sig syscall.Signal) {
	if err := b.procs[i].cmd.Process.Signal(sig); err != nil {
		b.t.Fatalf("%s: %v: %v", b.procs[i].name, sig, err)
	}
}

// kill stops instance i at once and waits for it.
func (b *haBed) kill(i int) {
	p := b.procs[i]
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Kill()
	<-p.done
}

// stopAll ends every running instance (SIGTERM, then SIGKILL after 10 s).
func (b *haBed) stopAll() {
	for _, p := range b.procs {
		if p.cmd == nil {
			continue
		}
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	if b.t.Failed() {
		for _, p := range b.procs {
			data, _ := os.ReadFile(p.log)
			lines := strings.Split(string(data), "\n")
			if len(lines) > 60 {
				lines = lines[len(lines)-60:]
			}
			b.t.Logf("== %s (last lines)\n%s", p.name, strings.Join(lines, "\n"))
		}
	}
}

// link sets instance i's veth up or down (inside its namespace).
func (b *haBed) link(i int, up bool) {
	state := "down"
	if up {
		state = "up"
	}
	if _, err := b.nss[i].IP(context.Background(), "link", "set", "dev", "eth0", state); err != nil {
		b.t.Fatal(err)
	}
	if up {
		if err := b.nss[i].WaitUp(context.Background(), "eth0", 10*time.Second); err != nil {
			b.t.Fatal(err)
		}
		if err := b.nss[i].AddRoute(context.Background(), netns.Route{Dst: netip.MustParsePrefix("0.0.0.0/0"),
			Via: netip.MustParseAddr(hubIP(i))}); err != nil {
			b.t.Fatal(err)
		}
	}
}

// primaryOfAll reports whether instance i answers that it is the primary of
// every switch.
func (b *haBed) primaryOfAll(i int) bool { return b.everySwitch(i, true) }

// backupOfAll reports whether instance i answers that it is connected to
// every switch as a backup.
func (b *haBed) backupOfAll(i int) bool { return b.everySwitch(i, false) }

// everySwitch reports whether instance i answers that it is connected to
// every switch, as their primary or as a backup.
func (b *haBed) everySwitch(i int, primary bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	resp, err := b.procs[i].api.ListSwitches(ctx, &fastcnpv1.ListSwitchesRequest{})
	if err != nil || len(resp.GetSwitches()) != len(b.switches) {
		return false
	}
	for _, s := range resp.GetSwitches() {
		if s.GetPrimary() != primary || !s.GetConnected() {
			return false
		}
	}
	return true
}

// waitPrimary waits until instance i is the primary of every switch.
func (b *haBed) waitPrimary(i int) {
	b.t.Helper()
	waitUntil(b.t, b.procs[i].name+" primary of every switch", func() bool { return b.primaryOfAll(i) })
}

// metric returns a metric's value as instance i exports it (-1: not found).
func (b *haBed) metric(i int, name string) float64 {
	resp, err := b.http.Get("http://" + b.procs[i].metrics + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == name {
			v, err := strconv.ParseFloat(f[1], 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

// waitUntil polls cond; the deadline only guards against a hang.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// adder adds API connections through every instance at once, each
// attempt with a new key, and keeps the ones acknowledged: the load during
// the faults, and the measure of when the new leader serves changes.
type adder struct {
	once   sync.Once
	paused sync.RWMutex // held for writing while paused; each attempt holds it for reading
	b      *haBed
	next   atomic.Uint32
	mu     sync.Mutex
	acked  map[string]ack
	stop   chan struct{}
	wg     sync.WaitGroup
}

// ack is an acknowledged change: when, by which instance.
type ack struct {
	at time.Time
	by int
}

func (b *haBed) startAdder(every time.Duration) *adder {
	a := &adder{b: b, acked: map[string]ack{}, stop: make(chan struct{})}
	a.next.Store(1)
	for i := range b.procs {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			tick := time.NewTicker(every)
			defer tick.Stop()
			for {
				select {
				case <-a.stop:
					return
				case <-tick.C:
				}
				a.paused.RLock()
				n := a.next.Add(1)
				c := &fastcnpv1.Connection{SenderIp: "10.2.0.9", UdpSrcPort: n, ReceiverQpn: n, SenderQpn: 0x777}
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_, err := b.procs[i].api.AddConnection(ctx, &fastcnpv1.AddConnectionRequest{Connection: c})
				cancel()
				if err == nil {
					a.mu.Lock()
					a.acked[fmt.Sprintf("10.2.0.9/%d/%d", n, n)] = ack{at: time.Now(), by: i}
					a.mu.Unlock()
				}
				a.paused.RUnlock()
			}
		}()
	}
	return a
}

func (a *adder) close() {
	a.once.Do(func() { close(a.stop) })
	a.wg.Wait()
}

// pause stops new attempts and waits for those under way (each bounded by
// its timeout); resume lets them go on.
func (a *adder) pause()  { a.paused.Lock() }
func (a *adder) resume() { a.paused.Unlock() }

// firstAckAfter is the first acknowledgement by instance by at or after t0.
func (a *adder) firstAckAfter(by int, t0 time.Time) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var first time.Time
	for _, k := range a.acked {
		if k.by == by && !k.at.Before(t0) && (first.IsZero() || k.at.Before(first)) {
			first = k.at
		}
	}
	return first, !first.IsZero()
}

// ackOf returns who acknowledged key, and when.
func (a *adder) ackOf(key string) ack {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.acked[key]
}

func (a *adder) ackedKeys() map[string]bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]bool, len(a.acked))
	for k := range a.acked {
		out[k] = true
	}
	return out
}

// etcdConns reads the connections fastcnpd keeps in etcd.
func (b *haBed) etcdConns(t *testing.T) map[string]haConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := b.cli.Get(ctx, "/fastcnp/conns/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]haConn{}
	for _, kv := range resp.Kvs {
		var fc struct {
			SenderIP    string `json:"sender_ip"`
			UDPSrcPort  uint64 `json:"udp_src_port"`
			ReceiverQPN uint64 `json:"receiver_qpn"`
			SenderQPN   uint64 `json:"sender_qpn"`
			Index       uint64 `json:"conn_index"`
		}
		if err := json.Unmarshal(kv.Value, &fc); err != nil {
			t.Fatalf("%s: %v", kv.Key, err)
		}
		c := haConn{sender: fc.SenderIP, sport: fc.UDPSrcPort, rqpn: fc.ReceiverQPN, senderQPN: fc.SenderQPN, connSlot: fc.Index}
		if want := "/fastcnp/conns/" + c.key(); want != string(kv.Key) {
			t.Fatalf("etcd key %s holds %s", kv.Key, want)
		}
		out[c.key()] = c
	}
	return out
}

// checkState compares every switch with the desired state in etcd: the same
// connections, each in the same slot, no slot twice, every acknowledged
// connection there; the other tables as at the start. Changes under way
// (an install goes to one switch after the other) get 10 s to land: a
// difference that stays is a failure.
func (b *haBed) checkState(t *testing.T, what string, acked map[string]bool, tables []map[uint32]int) {
	t.Helper()
	var problems []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		problems = b.stateProblems(t, acked, tables)
		if len(problems) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", what, p)
	}
}

func (b *haBed) stateProblems(t *testing.T, acked map[string]bool, tables []map[uint32]int) []string {
	t.Helper()
	var out []string
	want := b.etcdConns(t)
	slots := map[uint64]string{}
	for k, c := range want {
		if o, dup := slots[c.connSlot]; dup {
			out = append(out, fmt.Sprintf("conn_index %d held by %s and %s in etcd", c.connSlot, o, k))
		}
		slots[c.connSlot] = k
	}
	for k := range acked {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("acknowledged connection %s is not in etcd", k))
		}
	}
	for i, s := range b.switches {
		got := s.conns(t)
		var diff []string
		for k, c := range want {
			switch g, ok := got[k]; {
			case !ok:
				diff = append(diff, "missing "+k)
			case g != c:
				diff = append(diff, "other slot or QPN "+k)
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				diff = append(diff, "not desired "+k)
			}
		}
		if len(diff) > 0 {
			sort.Strings(diff)
			out = append(out, fmt.Sprintf("%s: %d connections in etcd, %d on the switch, %d differ (%s)",
				s.name, len(want), len(got), len(diff), strings.Join(diff[:min(len(diff), 5)], ", ")))
		}
		if tc := s.tableCounts(t); fmt.Sprint(tc) != fmt.Sprint(tables[i]) {
			out = append(out, fmt.Sprintf("%s: table sizes %v, at the start %v", s.name, tc, tables[i]))
		}
	}
	return out
}

// announce punts n announcements (up) of senders in 10.1.0.0/16 into s1's
// port 1, as hosts would.
func (b *haBed) announce(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		ip := wire.Addr4{10, 1, byte(1 + i/200), byte(1 + i%200)}
		a := wire.NewAnnouncement(wire.AnnounceUp, wire.AnnounceFlagCNPTarget)
		a.SenderIP = ip
		a.ReceiverIP = wire.Addr4{10, 2, 0, 1}
		a.UDPSrcPort, a.ReceiverQPN, a.SenderQPN = uint16(49152+i), uint32(0x1000+i), 0x55
		env := &wire.Envelope{SrcMAC: wire.MAC{2, 0, 0, 0, 0, 9}, DstMAC: wire.MAC{2, 0, 0, 0, 1, 1}, SrcIP: ip,
			DstIP: wire.Addr4{10, 2, 0, 1}, SrcPort: 5000}
		buf := make([]byte, 128)
		m, err := wire.BuildAnnouncement(buf, env, &a)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.switches[0].dp.Receive(context.Background(), buf[:m], 1); err != nil {
			t.Fatal(err)
		}
	}
}

// haFault is one way the leader goes, and how it comes back as a follower.
type haFault struct {
	name    string
	inflict func(b *haBed, i int)
	recover func(b *haBed, i int)
}

var haFaults = []haFault{
	{"SIGSTOP", func(b *haBed, i int) { b.signal(i, syscall.SIGSTOP) }, func(b *haBed, i int) { b.signal(i, syscall.SIGCONT) }},
	{"SIGKILL", func(b *haBed, i int) { b.signal(i, syscall.SIGKILL); <-b.procs[i].done }, func(b *haBed, i int) { b.start(i) }},
	{"network cut", func(b *haBed, i int) { b.link(i, false) }, func(b *haBed, i int) { b.link(i, true) }},
}

// haRounds is how many times each fault hits the leader (FASTCNP_HA_ROUNDS;
// 1 in CI, more to measure).
func haRounds(t *testing.T) int {
	n := 1
	if v := os.Getenv("FASTCNP_HA_ROUNDS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("FASTCNP_HA_ROUNDS=%q", v)
		}
	}
	return n
}

// TestHAFailoverProcesses: two fastcnpd instances on etcd, the leader hit by
// SIGSTOP, SIGKILL and a network cut in turn (each FASTCNP_HA_ROUNDS
// times, 1 by default). Each time the other instance takes over: it becomes
// primary of both switches with a higher election ID, and serves changes;
// the switches then hold exactly the desired state in etcd (every
// connection in its slot, none lost, none twice, every acknowledged change
// there, the other tables as they were), the switches never accepted a
// delete or a second pipeline, and nothing written under an old leader's
// election ID after its successor's arbitration. The old leader comes back
// (SIGCONT, restart, link up) as a follower. The times are logged
// (docs/performance.md), not asserted.
func TestHAFailoverProcesses(t *testing.T) {
	b := newHABed(t, true)
	b.start(0)
	b.waitPrimary(0)
	b.start(1)
	waitUntil(t, "b follows", func() bool { return b.metric(1, "fastcnp_ha_leader") == 0 })
	// Preload: 1000 announced connections, as hosts would bring them.
	b.announce(t, 1000)
	waitUntil(t, "1000 announced connections in etcd", func() bool { return len(b.etcdConns(t)) == 1000 })
	tables := []map[uint32]int{b.switches[0].tableCounts(t), b.switches[1].tableCounts(t)}
	ad := b.startAdder(20 * time.Millisecond)
	defer ad.close()
	leader := 0
	var samples []haSample
	for _, f := range haFaults {
		for round := range haRounds(t) {
			what := fmt.Sprintf("%s #%d (leader %s)", f.name, round+1, b.procs[leader].name)
			follower := 1 - leader
			time.Sleep(300 * time.Millisecond) // some acknowledged load before the fault
			var old [][2]uint64                // the leader's election ID on each switch
			for _, s := range b.switches {
				old = append(old, s.topArb())
			}
			t0 := time.Now()
			f.inflict(b, leader)
			// Mastership: every switch got the new leader's higher election ID.
			var arb time.Duration
			for i, s := range b.switches {
				waitUntil(t, what+": "+s.name+" arbitration above the old leader's", func() bool {
					_, ok := s.firstAbove(old[i], t0)
					return ok
				})
				a, _ := s.firstAbove(old[i], t0)
				arb = max(arb, a.at.Sub(t0))
			}
			// Service: the new leader acknowledged a change.
			waitUntil(t, what+": a change acknowledged after the fault", func() bool {
				_, ok := ad.firstAckAfter(follower, t0)
				return ok
			})
			first, _ := ad.firstAckAfter(follower, t0)
			samples = append(samples, haSample{fault: f.name, arb: arb, api: first.Sub(t0)})
			t.Logf("%s: every switch arbitrated by the new leader after %v, first change served after %v",
				what, arb.Round(time.Millisecond), first.Sub(t0).Round(time.Millisecond))
			b.waitPrimary(follower)
			// The old leader comes back and must follow, writing nothing.
			back := time.Now()
			f.recover(b, leader)
			waitUntil(t, what+": the old leader follows", func() bool { return b.metric(leader, "fastcnp_ha_leader") == 0 })
			time.Sleep(500 * time.Millisecond) // room for a stray write of the old leader to show
			b.waitPrimary(follower)
			ad.pause()
			b.checkState(t, what, ad.ackedKeys(), tables)
			ad.resume()
			for i, s := range b.switches {
				if n := s.writesBy(old[i], back); n != 0 {
					t.Errorf("%s: %s accepted %d writes under the old leader's election ID %v after it came back", what, s.name, n, old[i])
				}
			}
			leader = follower
		}
	}
	ad.close()
	// Everything acknowledged is installed, after the last takeover too.
	b.checkState(t, "end", ad.ackedKeys(), tables)
	for _, s := range b.switches {
		s.mu.Lock()
		pushes, deletes := s.pushes, 0
		for _, w := range s.writes {
			deletes += w.types[p4v1.Update_DELETE]
		}
		s.mu.Unlock()
		if pushes != 1 || deletes != 0 {
			t.Errorf("%s: %d pipeline pushes (want the first leader's only) and %d deletes (want none)", s.name, pushes, deletes)
		}
	}
	logTakeovers(t, samples)
}

// haSample is one takeover: the fault, when every switch had the new
// leader's arbitration, when it first served a change.
type haSample struct {
	fault    string
	arb, api time.Duration
}

// logTakeovers logs min / median / max per fault, with the machine's load.
func logTakeovers(t *testing.T, samples []haSample) {
	load, _ := os.ReadFile("/proc/loadavg")
	by := map[string][]haSample{}
	var order []string
	for _, s := range samples {
		if by[s.fault] == nil {
			order = append(order, s.fault)
		}
		by[s.fault] = append(by[s.fault], s)
	}
	stat := func(ds []time.Duration) string {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		r := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
		return fmt.Sprintf("%s / %s / %s", r(ds[0]), r(ds[len(ds)/2]), r(ds[len(ds)-1]))
	}
	t.Logf("takeover times (min / median / max), load average %s", strings.TrimSpace(string(load)))
	for _, f := range order {
		var arb, api []time.Duration
		for _, s := range by[f] {
			arb, api = append(arb, s.arb), append(api, s.api)
		}
		t.Logf("  %-12s n=%d  mastership %s  first change served %s", f, len(by[f]), stat(arb), stat(api))
	}
}

// TestFileModeFailoverAfterSIGSTOP: two instances without etcd (a shared
// state file, the primary with --election-offset 1). SIGSTOP on the primary
// leaves its streams open; fastcnp-switch's server keepalive (a ping after
// 5 s of silence, 5 s for the answer) ends them, and the standby takes over
// with a raised election ID. Resumed, the old primary comes back as a
// backup, writes nothing and, stopped, leaves the state file with what the
// new primary saved. The time is logged (docs/performance.md), not asserted.
func TestFileModeFailoverAfterSIGSTOP(t *testing.T) {
	b := newHABed(t, false)
	b.start(0, "--election-offset", "1")
	b.waitPrimary(0)
	b.start(1)
	waitUntil(t, "b connected as a standby", func() bool { return b.backupOfAll(1) })
	ad := b.startAdder(20 * time.Millisecond)
	defer ad.close()
	var samples []haSample
	for round := range haRounds(t) {
		what := fmt.Sprintf("SIGSTOP #%d", round+1)
		time.Sleep(300 * time.Millisecond)
		var old [][2]uint64
		for _, s := range b.switches {
			old = append(old, s.topArb())
		}
		t0 := time.Now()
		b.signal(0, syscall.SIGSTOP)
		var arb time.Duration
		for i, s := range b.switches {
			waitUntil(t, what+": "+s.name+" taken over", func() bool { _, ok := s.firstAbove(old[i], t0); return ok })
			a, _ := s.firstAbove(old[i], t0)
			arb = max(arb, a.at.Sub(t0))
		}
		waitUntil(t, what+": a change served by b", func() bool { _, ok := ad.firstAckAfter(1, t0); return ok })
		first, _ := ad.firstAckAfter(1, t0)
		samples = append(samples, haSample{fault: "SIGSTOP", arb: arb, api: first.Sub(t0)})
		t.Logf("%s: every switch taken over after %v, first change served after %v", what, arb.Round(time.Millisecond),
			first.Sub(t0).Round(time.Millisecond))
		back := time.Now()
		b.signal(0, syscall.SIGCONT)
		waitUntil(t, what+": a back as a backup", func() bool { return b.backupOfAll(0) })
		for i, s := range b.switches {
			if n := s.writesBy(old[i], back); n != 0 {
				t.Errorf("%s: %s accepted %d writes from the resumed primary", what, s.name, n)
			}
		}
		if round+1 < haRounds(t) {
			// Make a the primary again for the next round: b goes, a takes over.
			b.signal(1, syscall.SIGTERM)
			<-b.procs[1].done
			b.waitPrimary(0)
			b.start(1)
			waitUntil(t, "b connected as a standby", func() bool { return b.backupOfAll(1) })
		}
	}
	ad.close()
	acked := ad.ackedKeys()
	// The resumed primary stops: the state file keeps what b saved.
	b.signal(0, syscall.SIGTERM)
	<-b.procs[0].done
	saved := savedConns(t, filepath.Join(b.dir, "state.json"))
	for k := range acked {
		if !saved[k] {
			t.Errorf("acknowledged connection %s (by %s at %s) is not in the state file", k, b.procs[ad.ackOf(k).by].name,
				ad.ackOf(k).at.Format("15:04:05.000"))
		}
	}
	for _, s := range b.switches {
		got := s.conns(t)
		for k := range acked {
			if _, ok := got[k]; !ok {
				t.Errorf("%s: acknowledged connection %s is not installed", s.name, k)
			}
		}
	}
	logTakeovers(t, samples)
}

// savedConns reads the state file as fastcnpd would: the snapshot, and the
// log when it continues the snapshot's generation (docs/controller.md,
// "State file").
func savedConns(t *testing.T, path string) map[string]bool {
	t.Helper()
	type conn struct {
		SenderIP    string `json:"sender_ip"`
		UDPSrcPort  uint64 `json:"udp_src_port"`
		ReceiverQPN uint64 `json:"receiver_qpn"`
	}
	key := func(c conn) string { return fmt.Sprintf("%s/%d/%d", c.SenderIP, c.UDPSrcPort, c.ReceiverQPN) }
	var snap struct {
		Connections   []conn `json:"connections"`
		LogGeneration uint64 `json:"log_generation"`
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &snap); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, c := range snap.Connections {
		out[key(c)] = true
	}
	log, err := os.ReadFile(path + ".log")
	if err != nil {
		return out
	}
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	var head struct {
		Gen uint64 `json:"gen"`
	}
	if len(lines) == 0 || json.Unmarshal([]byte(lines[0]), &head) != nil || head.Gen != snap.LogGeneration {
		return out
	}
	for _, l := range lines[1:] {
		var rec struct {
			Op   string `json:"op"`
			Conn conn   `json:"conn"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("state log: %q: %v", l, err)
		}
		out[key(rec.Conn)] = rec.Op == "put"
	}
	return out
}
