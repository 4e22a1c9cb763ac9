//go:build linux

package bmv2

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc/codes"

	"github.com/fastcnp/fastcnp/afpacket"
	"github.com/fastcnp/fastcnp/conformance"
	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/internal/netns"
	"github.com/fastcnp/fastcnp/p4src"
	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
)

// Config says how to start the switch.
type Config struct {
	// Binary is simple_switch_grpc (default: found on PATH).
	Binary string
	// JSON is the compiled program (default: p4src.BMv2JSONPath()).
	JSON string
	// GRPCAddr is where the switch's P4Runtime server listens (default
	// 127.0.0.1:9559).
	GRPCAddr string
	// Ports are the switch ports to create, one veth pair each (default 1..7, the
	// ports the vectors use).
	Ports []uint16
	// TargetOptions are the simple_switch_grpc target options that follow "--" and the
	// gRPC address (default: --cpu-port 255 --priority-queues 8, as
	// bmv2-testbed/run-switch.sh). Another switch with the same command line (e.g.
	// cmd/fastcnp-switch) may need others.
	TargetOptions []string
	// Settle is how long the switch must stay silent before "nothing more" is
	// believed (flush, expect no-packets, the end of a vector); default 300 ms.
	Settle time.Duration
	// Timeout bounds the wait for one expected packet, digest or counter value;
	// default 2 s.
	Timeout time.Duration
	// CLI is BMv2's Thrift runtime client, through which the runner writes and reads
	// registers when the switch does not implement them over P4Runtime (BMv2): a
	// path, "" for simple_switch_CLI on PATH, or "none". Without either, vectors
	// that @requires registers are skipped.
	CLI string
	// ThriftPort is the switch's Thrift port: given to the switch (--thrift-port)
	// and to the CLI when not 0; 0 leaves both at their default, 9090.
	ThriftPort int
	// Log receives diagnostics; nil: logrus.StandardLogger.
	Log logrus.FieldLogger
}

// CPUPort, DeviceID and PriorityQueues are the switch options of
// bmv2-testbed/run-switch.sh.
const (
	CPUPort        = 255
	DeviceID       = 1
	PriorityQueues = 8
)

// Switch is a running simple_switch_grpc whose ports are veth pairs: switch ends in
// the host namespace, peer ends ("h<port>") in a namespace of their own where the
// runner's AF_PACKET sockets send and capture.
type Switch struct {
	cfg    Config
	tb     *netns.Testbed
	proc   *exec.Cmd
	client *p4rt.Client
	p4info *p4configv1.P4Info
	json   []byte
	ports  map[uint16]*afpacket.Port
	regs   RegisterAccess // nil: registers cannot be written or read
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	out     map[uint16][][]byte
	cpu     []*p4rt.PacketIn
	digests map[string][]map[string][]byte
}

// Start creates the veth pairs, launches the switch without a program and connects
// the P4Runtime client; the program is pushed by Run, once per vector.
func Start(ctx context.Context, cfg Config) (sw *Switch, err error) {
	if cfg.Binary == "" {
		if cfg.Binary, err = exec.LookPath("simple_switch_grpc"); err != nil {
			return nil, fmt.Errorf("bmv2: simple_switch_grpc not on PATH: %w", err)
		}
	}
	if cfg.JSON == "" {
		var ok bool
		if cfg.JSON, ok = p4src.BMv2JSONPath(); !ok {
			return nil, fmt.Errorf("bmv2: no compiled program at %q (make p4, or set %s)", cfg.JSON, p4src.BMv2JSONEnv)
		}
	}
	if cfg.GRPCAddr == "" {
		cfg.GRPCAddr = "127.0.0.1:9559"
	}
	if cfg.TargetOptions == nil {
		cfg.TargetOptions = []string{"--cpu-port", fmt.Sprint(CPUPort), "--priority-queues", fmt.Sprint(PriorityQueues)}
	}
	if len(cfg.Ports) == 0 {
		cfg.Ports = []uint16{1, 2, 3, 4, 5, 6, 7}
	}
	if cfg.Settle == 0 {
		cfg.Settle = 300 * time.Millisecond
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	sw = &Switch{cfg: cfg, ports: map[uint16]*afpacket.Port{}, out: map[uint16][][]byte{}, digests: map[string][]map[string][]byte{}}
	defer func() {
		if err != nil {
			err = errors.Join(err, sw.Close())
			sw = nil
		}
	}()
	if sw.json, err = os.ReadFile(cfg.JSON); err != nil {
		return sw, fmt.Errorf("bmv2: %w", err)
	}
	if sw.p4info, err = p4src.P4Info(); err != nil {
		return sw, fmt.Errorf("bmv2: %w", err)
	}
	if sw.tb, err = netns.NewTestbed(cfg.Log); err != nil {
		return sw, fmt.Errorf("bmv2: testbed: %w", err)
	}
	peers, err := sw.tb.Namespace(ctx, "peers")
	if err != nil {
		return sw, fmt.Errorf("bmv2: %w", err)
	}
	args := []string{"--device-id", fmt.Sprint(DeviceID), "--no-p4"}
	if cfg.ThriftPort != 0 {
		args = append(args, "--thrift-port", fmt.Sprint(cfg.ThriftPort))
	}
	for _, p := range cfg.Ports {
		swName, peer := sw.tb.IfName(fmt.Sprintf("sw%d-", p)), fmt.Sprintf("h%d", p)
		if _, err := sw.tb.Veth(ctx, netns.LinkConfig{Name: swName, DisableIPv6: true},
			netns.LinkConfig{NS: peers, Name: peer, DisableIPv6: true}); err != nil {
			return sw, fmt.Errorf("bmv2: port %d: %w", p, err)
		}
		if err := netns.Host().WaitUp(ctx, swName, 5*time.Second); err != nil {
			return sw, fmt.Errorf("bmv2: port %d: %w", p, err)
		}
		if err := peers.WaitUp(ctx, peer, 5*time.Second); err != nil {
			return sw, fmt.Errorf("bmv2: port %d: %w", p, err)
		}
		args = append(args, "-i", fmt.Sprintf("%d@%s", p, swName))
	}
	args = append(append(args, "--", "--grpc-server-addr", cfg.GRPCAddr), cfg.TargetOptions...)
	sw.proc = exec.Command(cfg.Binary, args...)
	sw.proc.Stdout, sw.proc.Stderr = os.Stderr, os.Stderr
	if err := sw.proc.Start(); err != nil {
		return sw, fmt.Errorf("bmv2: start %s: %w", cfg.Binary, err)
	}
	dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if sw.client, err = p4rt.Dial(dctx, cfg.GRPCAddr, DeviceID); err != nil {
		return sw, fmt.Errorf("bmv2: %w", err)
	}
	sw.regs = sw.probeRegisters(ctx)
	for _, p := range cfg.Ports {
		name := fmt.Sprintf("h%d", p)
		err := peers.Do(func() error {
			pt, err := afpacket.Open(name, afpacket.Options{DisableOffloads: true, Log: cfg.Log})
			sw.ports[p] = pt
			return err
		})
		if err != nil {
			return sw, fmt.Errorf("bmv2: open %s: %w", name, err)
		}
	}
	var rctx context.Context
	rctx, sw.cancel = context.WithCancel(context.Background())
	for p, pt := range sw.ports {
		sw.wg.Add(1)
		go sw.capture(rctx, p, pt)
	}
	sw.wg.Add(1)
	go sw.stream(rctx)
	return sw, nil
}

// probeRegisters finds a way to write and read registers: P4Runtime when the switch
// implements RegisterEntry (fastcnp-switch), else BMv2's Thrift CLI when it is found
// and reaches the switch. It pushes the program first (a register needs one) and
// reads, then writes back, cell 0 of the first register. nil when neither works:
// vectors that @requires registers are then skipped.
func (sw *Switch) probeRegisters(ctx context.Context) RegisterAccess {
	regs := sw.p4info.GetRegisters()
	if len(regs) == 0 {
		return nil
	}
	if err := sw.client.SetPipeline(ctx, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, sw.p4info, sw.json, 0); err != nil {
		sw.cfg.Log.WithError(err).Warn("bmv2: push pipeline for the register probe: vectors that @requires registers are skipped")
		return nil
	}
	probe := func(ra RegisterAccess) error {
		cells := []RegisterCell{{Name: regs[0].GetPreamble().GetName()}}
		v, err := ra.ReadRegisters(ctx, cells)
		if err != nil {
			return err
		}
		cells[0].Value = v[0]
		return ra.WriteRegisters(ctx, cells)
	}
	pr := P4RuntimeRegisters{Client: sw.client}
	err := probe(pr)
	if err == nil {
		sw.cfg.Log.Info("bmv2: registers over P4Runtime")
		return pr
	}
	log := sw.cfg.Log.WithField("p4runtime", err.Error())
	if sw.cfg.CLI == "none" {
		log.Warn("bmv2: no register access over P4Runtime and no Thrift CLI (Config.CLI none): vectors that @requires registers are skipped")
		return nil
	}
	path, err := FindCLI(sw.cfg.CLI)
	if err != nil {
		log.WithError(err).Warn("bmv2: no register access: vectors that @requires registers are skipped")
		return nil
	}
	cli := &CLI{Path: path, ThriftPort: sw.cfg.ThriftPort, JSON: sw.cfg.JSON}
	if err := probe(cli); err != nil {
		log.WithError(err).Warn("bmv2: the Thrift CLI does not work: vectors that @requires registers are skipped")
		return nil
	}
	sw.cfg.Log.WithField("cli", path).Info("bmv2: registers through the Thrift CLI")
	return cli
}

// Features returns the conformance features (Vector.SkipReason) this switch
// supports: "v1model-state", "inc-flow-ways" and "inc-done-slots" (it runs the
// v1model program), and
// "registers" when the
// register probe found a way (P4Runtime or the Thrift CLI).
func (sw *Switch) Features() map[string]bool {
	return map[string]bool{"v1model-state": true, "inc-flow-ways": true, "inc-done-slots": true, "registers": sw.regs != nil}
}

// capture records every frame the switch sends on port p.
func (sw *Switch) capture(ctx context.Context, p uint16, pt *afpacket.Port) {
	defer sw.wg.Done()
	buf := make([]byte, pt.MaxFrameLen())
	for {
		n, err := pt.ReadFrame(ctx, buf)
		if err != nil {
			return
		}
		sw.mu.Lock()
		sw.out[p] = append(sw.out[p], append([]byte(nil), buf[:n]...))
		sw.mu.Unlock()
	}
}

// stream records packet-ins and digests (decoded by member name).
func (sw *Switch) stream(ctx context.Context) {
	defer sw.wg.Done()
	pkts, dls := sw.client.Packets(), sw.client.Digests()
	for {
		select {
		case <-ctx.Done():
			return
		case p, ok := <-pkts:
			if !ok {
				return
			}
			sw.mu.Lock()
			sw.cpu = append(sw.cpu, p)
			sw.mu.Unlock()
		case d, ok := <-dls:
			if !ok {
				return
			}
			for i := range d.Data {
				m, err := d.Struct(i)
				if err != nil {
					sw.cfg.Log.WithError(err).Warn("bmv2: undecodable digest")
					continue
				}
				sw.mu.Lock()
				sw.digests[d.Name] = append(sw.digests[d.Name], m)
				sw.mu.Unlock()
			}
		}
	}
}

// Close stops the client, the switch and removes the veth pairs and namespace.
func (sw *Switch) Close() error {
	var errs []error
	if sw.cancel != nil {
		sw.cancel()
	}
	for _, pt := range sw.ports {
		errs = append(errs, pt.Close())
	}
	if sw.client != nil {
		errs = append(errs, sw.client.Close())
	}
	sw.wg.Wait()
	if sw.proc != nil && sw.proc.Process != nil {
		_ = sw.proc.Process.Kill() // our own child, by PID
		_ = sw.proc.Wait()
	}
	if sw.tb != nil {
		errs = append(errs, sw.tb.Close())
	}
	return errors.Join(errs...)
}

// Run pushes the program afresh (a new pipeline resets every table, register and
// counter), then runs the vector's statements. Vectors with a SkipReason must not be
// given to it. Time statements are ignored (BMv2 keeps its own clock); flush waits
// until the switch is quiet.
func (sw *Switch) Run(ctx context.Context, v *conformance.Vector) (err error) {
	if r := v.SkipReason(sw.Features()); r != "" {
		return fmt.Errorf("bmv2: vector %s cannot run on BMv2: %s", v.Name, r)
	}
	if err := sw.client.SetPipeline(ctx, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, sw.p4info, sw.json, 0); err != nil {
		return fmt.Errorf("bmv2: push pipeline: %w", err)
	}
	info := sw.client.Info()
	time.Sleep(sw.cfg.Settle)
	sw.mu.Lock()
	sw.out, sw.cpu, sw.digests = map[uint16][][]byte{}, nil, map[string][]map[string][]byte{}
	sw.mu.Unlock()
	var errs []error
	var written []conformance.Stmt // PRE writes that succeeded, deleted at the end
	defer func() {
		if cerr := sw.deletePRE(ctx, info, written); cerr != nil {
			err = errors.Join(err, fmt.Errorf("%s: at the end: %w", v.File, cerr))
		}
	}()
	for i := 0; i < len(v.Stmts); {
		s := &v.Stmts[i]
		if s.Op == conformance.OpRegister || s.Op == conformance.OpExpectRegister {
			// A run of register writes (or expectations): one CLI run.
			j := i + 1
			for j < len(v.Stmts) && v.Stmts[j].Op == s.Op {
				j++
			}
			errs = append(errs, sw.registers(ctx, v.Stmts[i:j])...)
			i = j
			continue
		}
		if err := sw.step(ctx, info, s); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Where(), err))
		} else if s.Op == conformance.OpClone || s.Op == conformance.OpMulticast {
			written = append(written, *s)
		}
		i++
	}
	time.Sleep(sw.cfg.Settle)
	if err := sw.leftovers(); err != nil {
		errs = append(errs, fmt.Errorf("%s: at the end: %w", v.File, err))
	}
	return errors.Join(errs...)
}

// deletePRE deletes the clone sessions and multicast groups a vector wrote
// (PREDeletes says why), one update at a time so that one failure does not keep
// the others.
func (sw *Switch) deletePRE(ctx context.Context, info *p4rt.Info, written []conformance.Stmt) error {
	ups, err := PREDeletes(info, written)
	if err != nil {
		return err
	}
	var errs []error
	for _, u := range ups {
		if err := sw.client.Write(ctx, []*p4v1.Update{u}); err != nil {
			errs = append(errs, fmt.Errorf("delete %v: %w", u.GetEntity(), err))
		}
	}
	return errors.Join(errs...)
}

// registers runs a run of register statements of one kind: writes at once (one CLI
// run); expectations read at once, again until every cell has its value (packets
// may still be in flight) or the timeout passes.
func (sw *Switch) registers(ctx context.Context, stmts []conformance.Stmt) []error {
	if sw.regs == nil {
		return []error{fmt.Errorf("%s: no register access (P4Runtime or the Thrift CLI)", stmts[0].Where())}
	}
	cells := make([]RegisterCell, len(stmts))
	for i, s := range stmts {
		cells[i] = RegisterCell{Name: s.Name, Index: s.Index, Value: s.Values[0]}
	}
	if stmts[0].Op == conformance.OpRegister {
		if err := sw.regs.WriteRegisters(ctx, cells); err != nil {
			return []error{fmt.Errorf("%s: %w", stmts[0].Where(), err)}
		}
		return nil
	}
	deadline := time.Now().Add(sw.cfg.Timeout)
	for {
		vals, err := sw.regs.ReadRegisters(ctx, cells)
		if err != nil {
			return []error{fmt.Errorf("%s: %w", stmts[0].Where(), err)}
		}
		var errs []error
		for i, c := range cells {
			if vals[i] != c.Value {
				errs = append(errs, fmt.Errorf("%s: register %s[%d] = %d, want %d", stmts[i].Where(), c.Name, c.Index, vals[i], c.Value))
			}
		}
		if errs == nil || time.Now().After(deadline) {
			return errs
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// refusal checks that a write that must be refused with code (a canonical code
// name) was, with that per-update code.
func refusal(code string, err error) error {
	var want codes.Code
	if uerr := want.UnmarshalJSON([]byte(`"` + code + `"`)); uerr != nil {
		return fmt.Errorf("refusal code %s: %w", code, uerr)
	}
	var we *p4rt.WriteError
	switch {
	case err == nil:
		return fmt.Errorf("the write succeeded, want it refused with %s", code)
	case !errors.As(err, &we) || len(we.Updates) != 1:
		return fmt.Errorf("the write failed without one per-update error (%w), want %s", err, code)
	case we.Updates[0].Code != want:
		return fmt.Errorf("the write was refused with %v, want %s", we.Updates[0].Code, code)
	}
	return nil
}

func (sw *Switch) step(ctx context.Context, info *p4rt.Info, s *conformance.Stmt) error {
	if IsWrite(s) {
		ups, err := Updates(info, s)
		if err != nil {
			return err
		}
		err = sw.client.Write(ctx, ups)
		var we *p4rt.WriteError
		if s.Refused != "" {
			return refusal(s.Refused, err)
		}
		if (s.Op == conformance.OpClone || s.Op == conformance.OpMulticast) && errors.As(err, &we) &&
			len(we.Updates) == 1 && we.Updates[0].Code == codes.AlreadyExists {
			// A clone session or multicast group may outlive the previous vector's
			// pipeline.
			err = sw.client.Write(ctx, p4rt.Modify(ups[0].Entity))
		}
		if err != nil {
			return fmt.Errorf("write: %w", err)
		}
		return nil
	}
	switch s.Op {
	case conformance.OpAt, conformance.OpWait:
		return nil
	case conformance.OpFlush:
		time.Sleep(sw.cfg.Settle)
		return nil
	case conformance.OpIn:
		pt := sw.ports[s.Port]
		if pt == nil {
			return fmt.Errorf("port %d was not created (Config.Ports)", s.Port)
		}
		if err := pt.WriteFrame(ctx, s.Packet.Bytes); err != nil {
			return fmt.Errorf("send on port %d: %w", s.Port, err)
		}
		return nil
	case conformance.OpPacketOut:
		if err := sw.client.PacketOut(ctx, s.Packet.Bytes, p4rt.P("egress_port", s.Port), p4rt.P("pad", 0)); err != nil {
			return fmt.Errorf("packet out: %w", err)
		}
		return nil
	case conformance.OpExpectOut:
		got, ok := sw.wait(func() ([]byte, bool) {
			if q := sw.out[s.Port]; len(q) > 0 {
				sw.out[s.Port] = q[1:]
				return q[0], true
			}
			return nil, false
		})
		if !ok {
			return fmt.Errorf("expected a packet on port %d, none within %v", s.Port, sw.cfg.Timeout)
		}
		if ok, why := s.Packet.Match(got); !ok {
			return fmt.Errorf("port %d: %s (%s)", s.Port, why, conformance.Hexdiff(got, s.Packet.Bytes))
		}
	case conformance.OpExpectCPU:
		var p *p4rt.PacketIn
		_, ok := sw.wait(func() ([]byte, bool) {
			if len(sw.cpu) > 0 {
				p, sw.cpu = sw.cpu[0], sw.cpu[1:]
				return nil, true
			}
			return nil, false
		})
		if !ok {
			return fmt.Errorf("expected a packet-in, none within %v", sw.cfg.Timeout)
		}
		inPort, err1 := p.Uint("ingress_port")
		reason, err2 := p.Uint("reason")
		if err := errors.Join(err1, err2); err != nil {
			return fmt.Errorf("packet-in metadata: %w", err)
		}
		if inPort != uint64(s.Port) || reason != uint64(s.Reason) {
			return fmt.Errorf("packet_in ingress_port=%d reason=%d, want %d %d", inPort, reason, s.Port, s.Reason)
		}
		if ok, why := s.Packet.Match(p.Payload); !ok {
			return fmt.Errorf("CPU packet: %s (%s)", why, conformance.Hexdiff(p.Payload, s.Packet.Bytes))
		}
	case conformance.OpExpectDigest:
		var d map[string][]byte
		_, ok := sw.wait(func() ([]byte, bool) {
			if q := sw.digests[s.Name]; len(q) > 0 {
				d, sw.digests[s.Name] = q[0], q[1:]
				return nil, true
			}
			return nil, false
		})
		if !ok {
			return fmt.Errorf("expected digest %s, none within %v", s.Name, sw.cfg.Timeout)
		}
		for _, kv := range s.Fields {
			want, _ := conformance.ParseValue(kv.Value)
			got, err := p4rt.DecodeUint(d[kv.Key])
			if err != nil || got != want {
				return fmt.Errorf("digest %s: %s = %x, want %d", s.Name, kv.Key, d[kv.Key], want)
			}
		}
	case conformance.OpExpectCounter:
		return sw.counter(ctx, s)
	case conformance.OpExpectNoPackets, conformance.OpExpectNoDigests:
		time.Sleep(sw.cfg.Settle)
		sw.mu.Lock()
		defer sw.mu.Unlock()
		if s.Op == conformance.OpExpectNoPackets {
			if n := sw.countPackets(); n > 0 {
				return fmt.Errorf("expected no packets, %d unmatched", n)
			}
			return nil
		}
		for name, q := range sw.digests {
			if len(q) > 0 {
				return fmt.Errorf("expected no digests, %d unmatched %s", len(q), name)
			}
		}
	default:
		return fmt.Errorf("statement kind %d cannot run on BMv2", s.Op)
	}
	return nil
}

// wait polls take (under the lock) until it succeeds or the timeout passes.
func (sw *Switch) wait(take func() ([]byte, bool)) ([]byte, bool) {
	deadline := time.Now().Add(sw.cfg.Timeout)
	for {
		sw.mu.Lock()
		b, ok := take()
		sw.mu.Unlock()
		if ok || time.Now().After(deadline) {
			return b, ok
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// counter reads a counter cell until it has the expected values (packets may still be
// in flight) or the timeout passes.
func (sw *Switch) counter(ctx context.Context, s *conformance.Stmt) error {
	deadline := time.Now().Add(sw.cfg.Timeout)
	for {
		cells, err := sw.client.ReadCounters(ctx, s.Name, int64(s.Index))
		if err != nil {
			return fmt.Errorf("read counter %s[%d]: %w", s.Name, s.Index, err)
		}
		if len(cells) != 1 {
			return fmt.Errorf("read counter %s[%d]: %d cells", s.Name, s.Index, len(cells))
		}
		c := cells[0]
		okP := s.Values[0] == ^uint64(0) || uint64(c.Packets) == s.Values[0]
		okB := s.Values[1] == ^uint64(0) || uint64(c.Bytes) == s.Values[1]
		if okP && okB {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("counter %s[%d] = %d packets %d bytes, want %v", s.Name, s.Index, c.Packets, c.Bytes, s.Values)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (sw *Switch) countPackets() int {
	n := len(sw.cpu)
	for _, q := range sw.out {
		n += len(q)
	}
	return n
}

// leftovers fails on outputs or digests no expectation matched.
func (sw *Switch) leftovers() error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	var errs []error
	ports := make([]int, 0, len(sw.out))
	for p := range sw.out {
		ports = append(ports, int(p))
	}
	sort.Ints(ports)
	for _, p := range ports {
		for _, f := range sw.out[uint16(p)] {
			errs = append(errs, fmt.Errorf("unexpected packet on port %d: %x", p, f))
		}
	}
	for _, p := range sw.cpu {
		errs = append(errs, fmt.Errorf("unexpected packet-in %v: %x", p.Metadata, p.Payload))
	}
	for name, q := range sw.digests {
		for _, d := range q {
			errs = append(errs, fmt.Errorf("unexpected digest %s: %v", name, d))
		}
	}
	return errors.Join(errs...)
}
