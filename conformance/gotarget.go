package conformance

import (
	"errors"
	"fmt"
	"sort"

	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/p4src/window"
	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
	"github.com/fastcnp/fastcnp/wire"
)

// GoFeatures are the @requires features the Go target supports with its default
// profile, v1model: all of them but the Tofino ones.
var GoFeatures = GoFeaturesFor(pipeline.ProfileV1Model)

// GoFeaturesFor returns the @requires features the Go target supports when it models
// profile pr: every target-neutral feature; "v1model-state", "registers" (the
// v1model program's registers), "inc-flow-ways" and "inc-done-slots" for v1model; "tofino-state" and the chip for the Tofino
// profiles.
func GoFeaturesFor(pr pipeline.Profile) map[string]bool {
	m := map[string]bool{"go-only": true}
	for f := range Features {
		m[f] = true
	}
	delete(m, "tofino1")
	delete(m, "tofino2")
	if pr.Tofino() {
		delete(m, "v1model-state")
		delete(m, "registers")
		delete(m, "inc-flow-ways")
		delete(m, "inc-done-slots")
		m[pr.String()] = true
	} else {
		delete(m, "tofino-state")
	}
	return m
}

// refusalErrors are the pipeline's error classes of the refusal codes.
var refusalErrors = map[string]error{
	"INVALID_ARGUMENT": pipeline.ErrInvalidArgument, "NOT_FOUND": pipeline.ErrNotFound,
	"ALREADY_EXISTS": pipeline.ErrAlreadyExists, "RESOURCE_EXHAUSTED": pipeline.ErrResourceExhausted,
	"FAILED_PRECONDITION": pipeline.ErrFailedPrecondition, "PERMISSION_DENIED": pipeline.ErrPermissionDenied,
}

// queued is a packet in the Go target's traffic manager.
type queued struct {
	frame []byte
	meta  pipeline.PacketMeta
}

// observed is a packet or digest the target produced, not yet matched.
type observed struct {
	frame    []byte
	packetIn pipeline.PacketIn
	digest   pipeline.Digest
}

// goTarget runs a vector against model/pipeline. Its traffic manager is one FIFO per
// egress port: "in" enqueues (a multicast: one copy per replica), "dequeue"/"flush"
// run egress; a switch CNP made in egress is enqueued on its port like any packet.
type goTarget struct {
	p       *pipeline.Pipeline
	now     int64
	queues  map[uint16][]queued
	out     map[uint16][]observed
	cpu     []observed
	digests map[uint32][]observed
}

// RunGo runs v against a fresh model/pipeline (profile v1model) and returns every
// failed expectation (nil when the vector passes). Statements that the target rejects
// (a table write, a port) are failures too.
func RunGo(v *Vector) error { return RunGoProfile(v, pipeline.ProfileV1Model) }

// RunGoProfile is RunGo with the pipeline modelling profile pr.
func RunGoProfile(v *Vector, pr pipeline.Profile) error {
	g := &goTarget{p: pipeline.New(pipeline.Options{Seed: 1, Profile: pr}), queues: map[uint16][]queued{},
		out: map[uint16][]observed{}, digests: map[uint32][]observed{}}
	var errs []error
	for i := range v.Stmts {
		s := &v.Stmts[i]
		if err := g.step(s); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Where(), err))
		}
		g.pollDigests()
	}
	if err := g.leftovers(); err != nil {
		errs = append(errs, fmt.Errorf("%s: at the end: %w", v.File, err))
	}
	return errors.Join(errs...)
}

func (g *goTarget) step(s *Stmt) error {
	if s.Refused == "" {
		return g.apply(s)
	}
	err := g.apply(s)
	if err == nil {
		return fmt.Errorf("the write succeeded, want it refused with %s", s.Refused)
	}
	if !errors.Is(err, refusalErrors[s.Refused]) {
		return fmt.Errorf("the write was refused (%v), want %s", err, s.Refused)
	}
	return nil
}

func (g *goTarget) apply(s *Stmt) error {
	p := g.p
	switch s.Op {
	case OpMember:
		m := &pipeline.ProfileMember{ProfileID: s.ProfileID, MemberID: s.ObjectID, Action: toEntry(s).Action}
		if err := p.InsertProfileMember(m); err != nil {
			return fmt.Errorf("member %d of %s: %w", s.ObjectID, s.Profile, err)
		}
	case OpGroup:
		pg := &pipeline.ProfileGroup{ProfileID: s.ProfileID, GroupID: s.ObjectID, MaxSize: s.MaxSize}
		for _, m := range s.GroupMembers {
			pg.Members = append(pg.Members, pipeline.GroupMember{MemberID: m.ID, Weight: m.Weight})
		}
		if err := p.InsertProfileGroup(pg); err != nil {
			return fmt.Errorf("group %d of %s: %w", s.ObjectID, s.Profile, err)
		}
	case OpDeleteMember:
		if err := p.DeleteProfileMember(s.ProfileID, s.ObjectID); err != nil {
			return fmt.Errorf("delete member %d of %s: %w", s.ObjectID, s.Profile, err)
		}
	case OpDeleteGroup:
		if err := p.DeleteProfileGroup(s.ProfileID, s.ObjectID); err != nil {
			return fmt.Errorf("delete group %d of %s: %w", s.ObjectID, s.Profile, err)
		}
	case OpTable:
		if err := p.InsertEntry(toEntry(s)); err != nil {
			return fmt.Errorf("insert into %s: %w", s.Table, err)
		}
	case OpDefault:
		a := toEntry(s).Action
		if err := p.SetDefaultAction(s.TableID, &a); err != nil {
			return fmt.Errorf("default action of %s: %w", s.Table, err)
		}
	case OpClone:
		if err := p.InsertCloneSession(pipeline.CloneSession{SessionID: s.Session, EgressPort: s.Port}); err != nil {
			return fmt.Errorf("clone session %d: %w", s.Session, err)
		}
	case OpMulticast:
		g := pipeline.MulticastGroup{ID: s.Group}
		for _, port := range s.Ports {
			g.Replicas = append(g.Replicas, pipeline.Replica{Port: port})
		}
		if err := p.InsertMulticastGroup(g); err != nil {
			return fmt.Errorf("multicast group %d: %w", s.Group, err)
		}
	case OpValueSet:
		if err := p.SetValueSet(s.ID, s.Values); err != nil {
			return fmt.Errorf("value set %s: %w", s.Name, err)
		}
	case OpDigest:
		if err := p.SetDigestConfig(s.ID, pipeline.DigestConfig{MaxListSize: 1}); err != nil {
			return fmt.Errorf("digest config %s: %w", s.Name, err)
		}
	case OpWindowTables:
		for _, st := range WindowTableWrites() {
			if err := p.InsertEntry(toEntry(&st)); err != nil {
				return fmt.Errorf("window tables: %w", err)
			}
		}
	case OpRegister:
		if err := p.WriteRegister(s.ID, s.Index, s.Values[0]); err != nil {
			return fmt.Errorf("write register %s[%d]: %w", s.Name, s.Index, err)
		}
	case OpAt:
		g.now = s.Time
	case OpWait:
		g.now += s.Time
	case OpIn:
		return g.ingress(s.Packet.Bytes, s.Port)
	case OpPacketOut:
		hdr := wire.PacketOut{EgressPort: s.Port}
		b := make([]byte, wire.PacketOutLen, wire.PacketOutLen+len(s.Packet.Bytes))
		if _, err := hdr.Encode(b); err != nil {
			return fmt.Errorf("packet_out header: %w", err)
		}
		return g.ingress(append(b, s.Packet.Bytes...), p4src.CPUPort)
	case OpDequeue:
		for range s.Count {
			if len(g.queues[s.Port]) == 0 {
				return fmt.Errorf("dequeue: port %d's queue is empty", s.Port)
			}
			if err := g.dequeue(s.Port); err != nil {
				return err
			}
		}
	case OpFlush:
		for guard := 0; ; guard++ {
			ports := g.busyPorts()
			if len(ports) == 0 {
				break
			}
			if guard > 100000 {
				return errors.New("flush: queues never empty")
			}
			for _, port := range ports {
				if err := g.dequeue(port); err != nil {
					return err
				}
			}
		}
	default:
		return g.expect(s)
	}
	return nil
}

func (g *goTarget) busyPorts() []uint16 {
	var ports []uint16
	for port, q := range g.queues {
		if len(q) > 0 {
			ports = append(ports, port)
		}
	}
	sort.Slice(ports, func(i, j int) bool { return ports[i] < ports[j] })
	return ports
}

func (g *goTarget) ingress(frame []byte, port uint16) error {
	var r pipeline.IngressResult
	if err := g.p.Ingress(append([]byte(nil), frame...), port, g.now, &r); err != nil {
		return fmt.Errorf("ingress: %w", err)
	}
	switch r.Verdict {
	case pipeline.VerdictToCPU:
		g.cpu = append(g.cpu, observed{frame: append([]byte(nil), r.Frame...), packetIn: r.PacketIn})
	case pipeline.VerdictForward:
		g.enqueue(r.Frame, r.EgressPort, r.Meta)
	case pipeline.VerdictMulticast:
		// The packet replication engine: a copy per replica, each a packet of its port.
		for _, rep := range r.Replicas {
			meta := r.Meta
			meta.EgressPort = rep.Port
			g.enqueue(r.Frame, rep.Port, meta)
		}
	}
	return nil
}

func (g *goTarget) enqueue(frame []byte, port uint16, meta pipeline.PacketMeta) {
	g.p.OnEnqueue(&meta)
	g.queues[port] = append(g.queues[port], queued{append([]byte(nil), frame...), meta})
}

func (g *goTarget) dequeue(port uint16) error {
	q := g.queues[port][0]
	g.queues[port] = g.queues[port][1:]
	var r pipeline.EgressResult
	if err := g.p.Egress(q.frame, port, g.now, &q.meta, &r); err != nil {
		return fmt.Errorf("egress: %w", err)
	}
	// r.Frame may be the pipeline's buffer (an INT record was added): copy it.
	out := append([]byte(nil), r.Frame...)
	if port == p4src.CPUPort {
		g.cpu = append(g.cpu, observed{frame: out, packetIn: pipeline.PacketIn{IngressPort: q.meta.IngressPort}})
	} else {
		g.out[port] = append(g.out[port], observed{frame: out})
	}
	if r.CNP {
		g.enqueue(r.CNPFrame, r.CNPPort, r.CNPMeta)
	}
	return nil
}

func (g *goTarget) pollDigests() {
	var l pipeline.DigestList
	for g.p.PollDigestList(g.now, &l) {
		for _, d := range l.Digests {
			g.digests[l.DigestID] = append(g.digests[l.DigestID], observed{digest: d})
		}
		_ = g.p.AckDigestList(l.DigestID, l.ListID)
	}
}

func (g *goTarget) expect(s *Stmt) error {
	switch s.Op {
	case OpExpectOut:
		outs := g.out[s.Port]
		if len(outs) == 0 {
			return fmt.Errorf("expected a packet on port %d, none left (%s)", s.Port, g.summary())
		}
		g.out[s.Port] = outs[1:]
		if ok, why := s.Packet.Match(outs[0].frame); !ok {
			return fmt.Errorf("port %d: %s (%s)", s.Port, why, Hexdiff(outs[0].frame, s.Packet.Bytes))
		}
	case OpExpectCPU:
		if len(g.cpu) == 0 {
			return fmt.Errorf("expected a packet to the CPU, none left (%s)", g.summary())
		}
		c := g.cpu[0]
		g.cpu = g.cpu[1:]
		if c.packetIn.IngressPort != s.Port || c.packetIn.Reason != s.Reason {
			return fmt.Errorf("packet_in ingress_port=%d reason=%d, want %d %d", c.packetIn.IngressPort, c.packetIn.Reason, s.Port, s.Reason)
		}
		if ok, why := s.Packet.Match(c.frame); !ok {
			return fmt.Errorf("CPU packet: %s (%s)", why, Hexdiff(c.frame, s.Packet.Bytes))
		}
	case OpExpectNoPackets:
		if n := g.countPackets(); n > 0 {
			return fmt.Errorf("expected no packets, %d unmatched (%s)", n, g.summary())
		}
	case OpExpectNoDigests:
		for id, ds := range g.digests {
			if len(ds) > 0 {
				return fmt.Errorf("expected no digests, %d unmatched of %#x, first %+v", len(ds), id, ds[0].digest)
			}
		}
	case OpExpectDigest:
		ds := g.digests[s.ID]
		if len(ds) == 0 {
			return fmt.Errorf("expected digest %s, none left", s.Name)
		}
		g.digests[s.ID] = ds[1:]
		return matchDigest(s, &ds[0].digest)
	case OpExpectCounter:
		c, err := g.p.ReadCounter(s.ID, s.Index, nil)
		if err != nil {
			return fmt.Errorf("read counter %s[%d]: %w", s.Name, s.Index, err)
		}
		if (s.Values[0] != ^uint64(0) && c[0].Packets != s.Values[0]) || (s.Values[1] != ^uint64(0) && c[0].Bytes != s.Values[1]) {
			return fmt.Errorf("counter %s[%d] = %d packets %d bytes, want %s", s.Name, s.Index, c[0].Packets, c[0].Bytes, wantCounter(s.Values))
		}
	case OpExpectRegister:
		r, err := g.p.ReadRegister(s.ID, s.Index, nil)
		if err != nil {
			return fmt.Errorf("read register %s[%d]: %w", s.Name, s.Index, err)
		}
		if r[0].Value != s.Values[0] {
			return fmt.Errorf("register %s[%d] = %d, want %d", s.Name, s.Index, r[0].Value, s.Values[0])
		}
	default:
		return fmt.Errorf("statement kind %d not supported by the Go runner", s.Op)
	}
	return nil
}

func wantCounter(v []uint64) string {
	f := func(x uint64) string {
		if x == ^uint64(0) {
			return "*"
		}
		return fmt.Sprint(x)
	}
	return f(v[0]) + " packets " + f(v[1]) + " bytes"
}

// matchDigest compares the fields the vector gives with d (by P4Info member name).
func matchDigest(s *Stmt, d *pipeline.Digest) error {
	di, _ := pipeline.ProgramSchema().Digest(s.ID)
	vals := d.AppendFields(nil)
	for _, kv := range s.Fields {
		want, _ := ParseValue(kv.Value)
		for i, f := range di.Fields {
			if f.Name == kv.Key && vals[i] != want {
				return fmt.Errorf("digest %s: %s = %d, want %d (digest %+v)", s.Name, kv.Key, vals[i], want, *d)
			}
		}
	}
	return nil
}

func (g *goTarget) countPackets() int {
	n := len(g.cpu)
	for _, o := range g.out {
		n += len(o)
	}
	return n
}

func (g *goTarget) summary() string {
	s := fmt.Sprintf("unmatched: cpu %d", len(g.cpu))
	for _, port := range sortedKeys(g.out) {
		if len(g.out[port]) > 0 {
			s += fmt.Sprintf(", port %d: %d", port, len(g.out[port]))
		}
	}
	for _, port := range g.busyPorts() {
		s += fmt.Sprintf(", queued on %d: %d", port, len(g.queues[port]))
	}
	return s
}

func sortedKeys(m map[uint16][]observed) []uint16 {
	var k []uint16
	for p := range m {
		k = append(k, p)
	}
	sort.Slice(k, func(i, j int) bool { return k[i] < k[j] })
	return k
}

// leftovers fails when outputs or digests were not matched by an expectation: a
// vector states everything the target does. Packets still queued are allowed (a
// vector may stop before dequeuing).
func (g *goTarget) leftovers() error {
	var errs []error
	if n := g.countPackets(); n > 0 {
		for _, port := range sortedKeys(g.out) {
			for _, o := range g.out[port] {
				errs = append(errs, fmt.Errorf("unexpected packet on port %d: %x", port, o.frame))
			}
		}
		for _, o := range g.cpu {
			errs = append(errs, fmt.Errorf("unexpected packet to the CPU (%+v): %x", o.packetIn, o.frame))
		}
	}
	for id, ds := range g.digests {
		for _, d := range ds {
			errs = append(errs, fmt.Errorf("unexpected digest %#x: %+v", id, d.digest))
		}
	}
	return errors.Join(errs...)
}

// toEntry converts a table write to the Go target's entry (P4Info IDs).
func toEntry(s *Stmt) *pipeline.TableEntry {
	e := &pipeline.TableEntry{TableID: s.TableID, Priority: s.Priority, Action: pipeline.Action{ID: s.ActionID},
		MemberID: s.RefMember, GroupID: s.RefGroup}
	for _, m := range s.Match {
		fm := pipeline.FieldMatch{FieldID: m.FieldID, Value: m.Value}
		switch m.Kind {
		case p4configv1.MatchField_LPM:
			fm.PrefixLen = m.PrefixLen
		case p4configv1.MatchField_TERNARY:
			fm.Mask = m.Mask
		}
		e.Match = append(e.Match, fm)
	}
	for _, pr := range s.Params {
		e.Action.Params = append(e.Action.Params, pipeline.Param{ID: pr.ID, Value: pr.Value})
	}
	return e
}

// WindowTableWrites returns the table writes of the "window-tables" statement: the
// window generator's (p4src/window) entries in flow_bytes_log2,
// port_bytes_log2 and window_exp2, by P4Info name and ID.
func WindowTableWrites() []Stmt {
	l2 := window.Log2Entries()
	ex := window.Exp2Entries()
	out := make([]Stmt, 0, 2*len(l2)+len(ex))
	lpm := func(table string, tid uint32, action string, aid uint32, e window.LPMEntry) Stmt {
		return Stmt{Op: OpTable, Table: table, TableID: tid, Action: action, ActionID: aid,
			Match:  []MatchValue{{Field: "bytes", FieldID: 1, Bitwidth: 32, Kind: p4configv1.MatchField_LPM, Value: uint64(e.Value), PrefixLen: int32(e.PrefixLen)}},
			Params: []ParamValue{{Name: "log2_q6", ID: 1, Bitwidth: 16, Value: uint64(e.Log2Q6)}}}
	}
	for _, e := range l2 {
		out = append(out, lpm("FastcnpEgress.flow_bytes_log2", p4src.TableFlowBytesLog2, "FastcnpEgress.set_flow_bytes_log2", p4src.ActionSetFlowLog2, e))
		out = append(out, lpm("FastcnpEgress.port_bytes_log2", p4src.TablePortBytesLog2, "FastcnpEgress.set_port_bytes_log2", p4src.ActionSetPortLog2, e))
	}
	for _, e := range ex {
		out = append(out, Stmt{Op: OpTable, Table: "FastcnpEgress.window_exp2", TableID: p4src.TableWindowExp2,
			Action: "FastcnpEgress.set_window", ActionID: p4src.ActionSetWindow,
			Match:  []MatchValue{{Field: "log2_q6", FieldID: 1, Bitwidth: 16, Kind: p4configv1.MatchField_EXACT, Value: uint64(e.K)}},
			Params: []ParamValue{{Name: "window_bytes", ID: 1, Bitwidth: 32, Value: uint64(e.Window)}}})
	}
	return out
}
