package pipeline

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/wire"
)

// Options configures New.
type Options struct {
	// Seed seeds the random source of RED marking (deterministic for a given seed).
	Seed uint64
	// Profile is the compiled program to model (default ProfileV1Model).
	Profile Profile
}

// Pipeline is the reference data plane: tables, registers, counters, value set, clone
// sessions and digest queues, plus the per-packet algorithm. Create it with New.
//
// What every packet reads (the profile, the parser's ports, the tables, the
// registers' and counters' slice headers) comes first and the struct stays small:
// the register arrays and the decoded port configurations are allocated apart. A
// simulated fabric runs dozens of pipelines, and a packet's first touches of its
// switch are cache misses: a few adjacent lines, not lines spread over a megabyte.
type Pipeline struct {
	prof                                               Profile
	rng                                                uint64
	parsePorts                                         []uint16 // the parser's announcement ports: AnnounceUDPPort, then the value set
	tRoute, tTC, tPortCfg, tConn, tIncGroup, tIncRoute *table
	tL2, tFlowLog2, tPortLog2, tExp2, tNHG, tIncAging  *table
	tIncChild                                          *table
	regs                                               registers
	counters                                           [numCounters][]counterCell
	// pcCache holds port_config decoded per port (NumPorts), valid while its gen
	// is the table's: a packet reads one cache line instead of the entry's
	// parameters.
	pcCache []pcCacheEntry
	pf      wire.Frame

	tables   []*table
	profiles []*profile
	// announcePorts is the value set announce_udp_port.
	announcePorts []uint16
	clones        map[uint32]CloneSession
	mcast         map[uint32][]Replica
	repBuf        []Replica
	digests       [2]digestQueue
	seed          uint64
	tna           *tnaState // the TNA program's state (Tofino profiles only)
	cnpBuf        [CNPFrameLen + wire.Dot1QLen]byte
	cnpRes        IngressResult
	incBuf        []byte
	intBuf        []byte
}

// pcCacheEntry is one port's decoded port_config: 64 bytes.
type pcCacheEntry struct {
	gen uint64
	pc  PortConfig
}

// New returns a pipeline with empty tables, program default actions, zero registers
// and counters, an empty value set, no clone session, no multicast group and no
// digest config.
func New(opts Options) *Pipeline {
	p := &Pipeline{
		clones:        make(map[uint32]CloneSession),
		mcast:         make(map[uint32][]Replica),
		repBuf:        make([]Replica, 0, MaxReplicasPerGroup),
		announcePorts: make([]uint16, 0, p4src.AnnounceUDPPorts),
		parsePorts:    append(make([]uint16, 0, 1+p4src.AnnounceUDPPorts), p4src.AnnounceUDPPort),
		incBuf:        make([]byte, 2048),
		intBuf:        make([]byte, 2048),
		regs:          newRegisters(),
		pcCache:       make([]pcCacheEntry, p4src.NumPorts),
		rng:           opts.Seed*0x9E3779B97F4A7C15 + 0x2545F4914F6CDD1D,
		seed:          opts.Seed,
		prof:          opts.Profile,
	}
	if opts.Profile.Tofino() {
		p.tna = &tnaState{}
	}
	if p.rng == 0 {
		p.rng = 1 // xorshift never leaves 0
	}
	byID := map[uint32]**table{
		p4src.TableIPv4Route: &p.tRoute, p4src.TableTrafficClass: &p.tTC, p4src.TablePortConfig: &p.tPortCfg,
		p4src.TableRDMAConnection: &p.tConn, p4src.TableIncGroup: &p.tIncGroup, p4src.TableIncRoute: &p.tIncRoute,
		p4src.TableL2Forward: &p.tL2, p4src.TableFlowBytesLog2: &p.tFlowLog2, p4src.TablePortBytesLog2: &p.tPortLog2,
		p4src.TableWindowExp2: &p.tExp2, p4src.TableNextHopGroupSelect: &p.tNHG, p4src.TableIncSlotTimeout: &p.tIncAging,
		p4src.TableIncChildPort: &p.tIncChild,
	}
	for i := range schema.Tables {
		t := newTable(&schema.Tables[i])
		p.tables = append(p.tables, t)
		if dst, ok := byID[t.info.ID]; ok {
			*dst = t
		}
	}
	for i := range schema.ActionProfiles {
		p.profiles = append(p.profiles, newProfile(&schema.ActionProfiles[i]))
	}
	for i, c := range schema.Counters {
		p.counters[i] = make([]counterCell, c.Size)
	}
	return p
}

// Reset returns the pipeline to the state New gave it (empty tables, program
// defaults, zero registers and counters, no value set members, clone sessions or
// digest configs), keeping the RED random seed and the profile: what a P4Runtime
// server does when a new forwarding pipeline config is committed.
func (p *Pipeline) Reset() {
	*p = *New(Options{Seed: p.seed, Profile: p.prof})
}

// Profile returns the program the pipeline models.
func (p *Pipeline) Profile() Profile { return p.prof }

// rand16 is the uniform 16-bit random number of RED (xorshift64*).
func (p *Pipeline) rand16() uint64 {
	x := p.rng
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	p.rng = x
	return (x * 0x2545F4914F6CDD1D) >> 48
}

// rand32 is a uniform 32-bit random number from the same source (the TNA program's
// Random<bit<32>>, split into two independent 16-bit halves by RED).
func (p *Pipeline) rand32() uint32 {
	x := p.rng
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	p.rng = x
	return uint32((x * 0x2545F4914F6CDD1D) >> 32)
}

// Verdict is the outcome of Ingress.
type Verdict uint8

// Ingress verdicts.
const (
	// VerdictDrop: the packet is dropped or consumed (see DropReason).
	VerdictDrop Verdict = iota
	// VerdictToCPU: send Frame to the controller with PacketIn metadata.
	VerdictToCPU
	// VerdictForward: enqueue Frame on EgressPort with Meta.
	VerdictForward
	// VerdictMulticast: enqueue a copy of Frame on the port of each of Replicas (the
	// multicast group McastGroup without the ingress port), each with Meta whose
	// EgressPort is that port. No replicas: nothing is sent (a group the PRE does not
	// have, or only the ingress port).
	VerdictMulticast
)

// DropReason says why Ingress dropped a packet (for tests and debugging; the data
// plane's observable outcome is the counters).
type DropReason uint8

// Drop reasons.
const (
	DropNone         DropReason = iota
	DropMalformed               // counted in malformed
	DropPFC                     // PFC / PAUSE frame consumed
	DropMACControl              // MAC control, not PFC/PAUSE: never forwarded; counted in dropped
	DropNoRoute                 // route miss or drop action; counted in dropped
	DropTTL                     // TTL 0 or 1 on arrival; counted in dropped
	DropINCOffset               // INC packet of no data flow, or offset >= flow length; counted in dropped
	DropINCDuplicate            // counted in inc_duplicates
	DropINCSlotBusy             // counted in inc_slot_busy
	DropINCConsumed             // contribution absorbed into a slot (not counted as a drop)
	DropL2Miss                  // not IPv4: l2_forward miss or drop entry; counted in dropped
	DropINCNotChild             // INC partial aggregate not from a child port (or without IDS part); counted in dropped
)

// PortConfig is the decoded set_port_config action of a port (all zero and Hit false
// when port_config ran NoAction: mode off).
type PortConfig struct {
	Hit              bool
	RateBytesPerMs   uint32
	QthBytes         uint32
	TcheckNs         uint32
	CNPGapNs         uint32
	Mode             uint8
	RedKminBytes     uint32
	RedKmaxBytes     uint32
	RedPmaxQ16       uint16
	RTTBaseNs        uint32
	BDPBytes         uint32
	BDPLog2Q6        uint16
	MTUBytes         uint16
	PauseQuantumPs   uint32
	SwitchID         uint16
	LosslessPriority uint8
}

// portConfig is port_config of port: the table's action decoded.
func (p *Pipeline) portConfig(port uint16) PortConfig {
	if int(port) >= len(p.pcCache) {
		act, pr, _ := p.tPortCfg.lookupExact(uint64(port), 0, 0)
		return decodePortConfig(act, pr)
	}
	c := &p.pcCache[port]
	if c.gen != p.tPortCfg.gen {
		act, pr, _ := p.tPortCfg.lookupExact(uint64(port), 0, 0)
		c.pc, c.gen = decodePortConfig(act, pr), p.tPortCfg.gen
	}
	return c.pc
}

func decodePortConfig(act uint32, pr *[maxParams]uint64) PortConfig {
	if act != p4src.ActionSetPortConfig {
		return PortConfig{}
	}
	return PortConfig{
		Hit: true, RateBytesPerMs: uint32(pr[pcRate]), QthBytes: uint32(pr[pcQth]), TcheckNs: uint32(pr[pcTcheck]),
		CNPGapNs: uint32(pr[pcCNPGap]), Mode: uint8(pr[pcMode]), RedKminBytes: uint32(pr[pcKmin]),
		RedKmaxBytes: uint32(pr[pcKmax]), RedPmaxQ16: uint16(pr[pcPmax]), RTTBaseNs: uint32(pr[pcRTTBase]),
		BDPBytes: uint32(pr[pcBDP]), BDPLog2Q6: uint16(pr[pcBDPLog2]), MTUBytes: uint16(pr[pcMTU]),
		PauseQuantumPs: uint32(pr[pcQuantum]), SwitchID: uint16(pr[pcSwitchID]), LosslessPriority: uint8(pr[pcLosslessPrio]),
	}
}

// PacketMeta is the per-packet metadata that ingress hands to the traffic manager and
// egress (the P4 program's user metadata). Callers treat it as opaque and pass it back
// unchanged to OnEnqueue and Egress.
type PacketMeta struct {
	// AcctLen is acct_len: the length as received, added at enqueue and subtracted
	// at dequeue.
	AcctLen     uint32
	IngressPort uint16
	EgressPort  uint16
	// Priority and Lossless come from traffic_class (standard_metadata.priority).
	Priority uint8
	Lossless bool
	// HasIPv4 is set for routed packets; L3Offset is the IPv4 header's offset in the
	// forwarded frame; SrcAddr/DstAddr its addresses.
	HasIPv4  bool
	L3Offset uint16
	SrcAddr  uint32
	DstAddr  uint32
	// HasBTH is set for RoCEv2 packets: UDPSrcPort and PKey feed a switch CNP.
	HasBTH bool
	// INTOffset is the offset of the INT header in the forwarded frame (0: none).
	INTOffset  uint16
	UDPSrcPort uint16
	PKey       uint16
	// ConnHit: rdma_connection ran set_connection with ConnFlags and SenderQPN.
	ConnHit   bool
	ConnFlags uint8
	SenderQPN uint32
	// FlowSlot, FlowHash and Tracked are set by OnEnqueue.
	FlowSlot uint16
	FlowHash uint32
	Tracked  bool
	// PortCfg is port_config of the egress port, looked up in ingress.
	PortCfg PortConfig
	// FrameLen is the frame's length as enqueued: what it occupies in the traffic
	// manager (the Tofino profiles count its cells).
	FrameLen uint16
}

// PacketIn is the packet_in metadata of a packet sent to the controller.
type PacketIn struct {
	IngressPort uint16
	Reason      uint8
}

// maxIngressDigests and maxEgressDigests bound the digests one packet makes.
const (
	maxIngressDigests = 2
	maxEgressDigests  = 4
)

// IngressResult is the outcome of Ingress. Frame aliases the caller's frame (modified
// in place: MACs, TTL; a packet_out frame without its header; a bridged frame
// unchanged) or, for an INC RESULT, a pipeline-owned buffer valid until the next
// Ingress call.
type IngressResult struct {
	Verdict    Verdict
	DropReason DropReason
	Frame      []byte
	EgressPort uint16
	// McastGroup and Replicas are set for VerdictMulticast: the group l2_flood
	// named, and its replicas but those on the ingress port (egress pruning), in the
	// group's order. Replicas is pipeline-owned, valid until the next Ingress call.
	McastGroup uint16
	Replicas   []Replica
	PacketIn   PacketIn
	Meta       PacketMeta
	// Digests[:NumDigests] are the digests this packet made (also queued for the
	// controller when their digest is configured).
	Digests    [maxIngressDigests]Digest
	NumDigests int
}

// EgressResult is the outcome of Egress. Frame is the caller's frame, possibly
// CE-marked in place. When CNP is set, CNPFrame (a pipeline-owned buffer valid until
// the next Egress call: copy it) is a switch CNP that already went through Ingress
// and must be enqueued on CNPPort with CNPMeta.
type EgressResult struct {
	Frame      []byte
	Marked     bool
	CNP        bool
	CNPFrame   []byte
	CNPPort    uint16
	CNPMeta    PacketMeta
	Digests    [maxEgressDigests]Digest
	NumDigests int
}

// CNPFrameLen is the length of an untagged switch CNP: Ethernet, IPv4, UDP, BTH,
// extension, ICRC (74 bytes). A CNP for a VLAN-tagged data packet keeps its tag
// (78 bytes).
const CNPFrameLen = wire.EthernetLen + wire.IPv4Len + wire.UDPLen + wire.BTHLen + wire.CNPExtLen + wire.ICRCLen

// ErrPort reports a port argument outside 0 .. NUM_PORTS-1.
var ErrPort = fmt.Errorf("port >= NUM_PORTS (%d): %w", p4src.NumPorts, ErrInvalidArgument)

// count counts a packet of bytes in cell index of counter id (index < its size).
func (p *Pipeline) count(id uint32, index uint16, bytes uint32) {
	cells := p.counters[id-p4src.CounterSwitchCNPSent]
	c := &cells[int(index)&(len(cells)-1)]
	c.packets++
	c.bytes += uint64(bytes)
}

// forward ends ingress with a unicast forward to out.EgressPort: the packet goes
// to its egress queue (queue_enqueued).
func (p *Pipeline) forward(out *IngressResult) {
	out.Verdict = VerdictForward
	out.Meta.FrameLen = uint16(len(out.Frame))
	p.count(p4src.CounterQueueEnqueued, p4src.QueueIndex(out.EgressPort, out.Meta.Priority), out.Meta.AcctLen)
}

func (p *Pipeline) emit(dst []Digest, n *int, d Digest, now int64) {
	if *n < len(dst) {
		dst[*n] = d
		*n++
	}
	if d.DigestID == p4src.DigestPortState {
		p.digests[0].push(&d, now)
	} else {
		p.digests[1].push(&d, now)
	}
}

// Ingress runs the parser and the ingress control on a frame received on inPort at
// time now (ns) and fills out. A malformed packet is counted and dropped, never an
// error; the error is only for an inPort >= NUM_PORTS.
func (p *Pipeline) Ingress(frame []byte, inPort uint16, now int64, out *IngressResult) error {
	if inPort >= p4src.NumPorts {
		*out = IngressResult{}
		return fmt.Errorf("ingress on port %d: %w", inPort, ErrPort)
	}
	p.ingress(frame, inPort, now, out)
	return nil
}

func (p *Pipeline) drop(out *IngressResult, r DropReason) {
	out.Verdict, out.DropReason, out.Frame = VerdictDrop, r, nil
}

func (p *Pipeline) ingress(frame []byte, inPort uint16, rawNow int64, out *IngressResult) {
	out.Verdict, out.DropReason, out.Frame, out.EgressPort = VerdictDrop, DropNone, nil, 0
	out.McastGroup, out.Replicas = 0, nil
	out.PacketIn, out.Meta, out.NumDigests = PacketIn{}, PacketMeta{}, 0
	now := uint64(rawNow) & mask48
	acct := uint32(len(frame))
	f := &p.pf
	// 1. Malformed.
	if err := wire.Parse(frame, wire.ParseOptions{PacketOut: inPort == p4src.CPUPort, AnnouncePorts: p.parsePorts}, f); err != nil {
		p.count(p4src.CounterMalformed, inPort, acct)
		p.drop(out, DropMalformed)
		return
	}
	m := &out.Meta
	m.AcctLen, m.IngressPort = acct, inPort
	// 2. packet_out.
	if f.Has(wire.LayerPacketOut) {
		out.Frame = frame[wire.PacketOutLen:]
		out.EgressPort, m.EgressPort = f.PacketOut.EgressPort, f.PacketOut.EgressPort
		p.forward(out)
		return
	}
	// 3. Announcement.
	if f.Has(wire.LayerAnnouncement) {
		p.count(p4src.CounterAnnouncements, inPort, acct)
		out.Verdict, out.Frame, out.EgressPort = VerdictToCPU, frame, p4src.CPUPort
		out.PacketIn = PacketIn{IngressPort: inPort, Reason: p4src.PuntReasonAnnouncement}
		return
	}
	// 4. PFC / PAUSE.
	if f.Has(wire.LayerMACControl) && (f.MACControl.Opcode == wire.MACControlOpPFC || f.MACControl.Opcode == wire.MACControlOpPause) {
		if p.prof.Tofino() {
			p.tnaPFC(f, inPort, now, rawNow, acct, out)
		} else {
			p.macControl(f, inPort, now, rawNow, acct, out)
		}
		p.drop(out, DropPFC)
		return
	}
	// 5. Not IPv4: bridged (MAC control never).
	if !f.Has(wire.LayerIPv4) {
		p.bridge(frame, f, inPort, acct, out)
		return
	}
	// 6. Traffic class, route.
	l3 := f.Off[wire.LayerIPv4]
	var vlan, pcp uint64
	if f.Has(wire.LayerDot1Q) {
		vlan, pcp = 1, uint64(f.Dot1Q.PCP)
	}
	if act, pr, _ := p.tTC.lookupTernary(vlan, pcp, uint64(f.IPv4.DSCP())); act == p4src.ActionSetTrafficClass {
		m.Priority, m.Lossless = uint8(pr[0]), pr[1] == 1
	}
	m.SrcAddr, m.DstAddr = f.IPv4.Src.Uint32(), f.IPv4.Dst.Uint32()
	if f.IPv4.TTL <= 1 {
		p.count(p4src.CounterDropped, inPort, acct)
		p.drop(out, DropTTL)
		return
	}
	// Routed iff set_nexthop ran (an entry's or the default action, or the member
	// of an ECMP group): a miss with the default drop, an entry or member whose
	// action is drop, a group without an entry or without members, is counted and
	// dropped.
	act, pr, _ := p.tRoute.lookupLPM(m.DstAddr)
	if act == p4src.ActionSetNextHopGroup {
		act, pr = p.nextHopMember(uint64(pr[0]), f)
	}
	if act != p4src.ActionSetNexthop {
		p.count(p4src.CounterDropped, inPort, acct)
		p.drop(out, DropNoRoute)
		return
	}
	egress := uint16(pr[0])
	setMACs(frame, pr[1], pr[2])
	_ = wire.DecTTL(frame[l3:]) // cannot fail: header parsed, TTL > 1
	m.HasIPv4, m.L3Offset = true, uint16(l3)
	out.Frame = frame
	// port_config of the routed egress port, looked up once (before inc_route, which
	// may change the port but not the configuration the packet carries).
	m.PortCfg = p.portConfig(egress)
	// 7. RDMA connection.
	var connIndex, workerRank uint64
	if f.Has(wire.LayerBTH) {
		m.HasBTH, m.UDPSrcPort, m.PKey = true, f.UDP.SrcPort, f.BTH.PKey
		if f.Has(wire.LayerINT) {
			m.INTOffset = uint16(f.Off[wire.LayerINT])
		}
		if act, pr, _ := p.tConn.lookupExact(uint64(m.SrcAddr), uint64(f.UDP.SrcPort), uint64(f.BTH.DestQP)); act == p4src.ActionSetConnection {
			m.ConnHit, m.SenderQPN, m.ConnFlags = true, uint32(pr[0]), uint8(pr[1])
			connIndex, workerRank = pr[2], pr[4]
		}
	}
	// 8. INC aggregation; 9. partial aggregates go up by hash routing.
	if f.Has(wire.LayerINC) {
		if !p.incAggregate(frame, f, inPort, connIndex, workerRank, now, acct, out) {
			return
		}
		if f.INC.IsPartial() {
			b := IncBucket(f.INCIDs.INCID(), f.INC.Version, f.UDP.DstPort)
			if act, pr, _ := p.tIncRoute.lookupExact(uint64(b), 0, 0); act == p4src.ActionSetNexthop {
				egress = uint16(pr[0])
				setMACs(out.Frame, pr[1], pr[2])
			}
		}
	}
	m.EgressPort, out.EgressPort = egress, egress
	p.forward(out)
}

// nextHopMember is next_hop_group_select for ECMP group group: the action the
// entry's member, or the member its group's selector hash picks, runs (NoAction on
// a miss or an empty group).
func (p *Pipeline) nextHopMember(group uint64, f *wire.Frame) (uint32, *[maxParams]uint64) {
	en, hit := p.tNHG.lookupEntry(group)
	if !hit {
		return p.tNHG.defAction, &p.tNHG.defParams
	}
	mb := en.member
	if en.group != nil {
		var sport, dport uint16
		if f.Has(wire.LayerUDP) {
			sport, dport = f.UDP.SrcPort, f.UDP.DstPort
		}
		mb = en.group.choose(SelectorHash(f.IPv4.Src.Uint32(), f.IPv4.Dst.Uint32(), f.IPv4.Protocol, sport, dport))
	}
	if mb == nil {
		return p.tNHG.defAction, &p.tNHG.defParams
	}
	return mb.action, &mb.params
}

// bridge is step 5: L2 forwarding of a frame that is not IPv4, unchanged. MAC control
// (an opcode other than PFC/PAUSE) is never forwarded; anything else goes by
// l2_forward on the destination MAC. Bridged frames are not classified (priority 0,
// lossy: OnEnqueue and Egress leave them alone).
func (p *Pipeline) bridge(frame []byte, f *wire.Frame, inPort uint16, acct uint32, out *IngressResult) {
	if f.Has(wire.LayerMACControl) {
		p.count(p4src.CounterDropped, inPort, acct)
		p.drop(out, DropMACControl)
		return
	}
	d := f.Ethernet.Dst
	key := uint64(d[0])<<40 | uint64(d[1])<<32 | uint64(d[2])<<24 | uint64(d[3])<<16 | uint64(d[4])<<8 | uint64(d[5])
	act, pr, _ := p.tL2.lookupExact(key, 0, 0)
	switch act {
	case p4src.ActionL2SetPort:
		port := uint16(pr[0])
		out.Frame, out.EgressPort, out.Meta.EgressPort = frame, port, port
		p.forward(out)
	case p4src.ActionL2Flood:
		out.Verdict, out.Frame, out.McastGroup = VerdictMulticast, frame, uint16(pr[0])
		out.Meta.FrameLen = uint16(len(frame))
		out.Replicas = p.replicate(out.McastGroup, inPort)
	default: // drop: a miss (the program's default) or an entry whose action is drop
		p.count(p4src.CounterDropped, inPort, acct)
		p.drop(out, DropL2Miss)
	}
}

func setMACs(frame []byte, src, dst uint64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], dst)
	copy(frame[0:6], b[2:])
	binary.BigEndian.PutUint64(b[:], src)
	copy(frame[6:12], b[2:])
}

// macControl is step 4: the PFC / PAUSE state machine of port p.
func (p *Pipeline) macControl(f *wire.Frame, port uint16, now uint64, rawNow int64, acct uint32, out *IngressResult) {
	cfg := p.portConfig(port)
	// PFC: the time of the lossless priority if its class-enable bit is set;
	// 802.3x PAUSE: the pause time.
	q16, ok := f.PauseQuanta(cfg.LosslessPriority)
	if !ok {
		return
	}
	q := uint64(q16)
	r := &p.regs
	pc := &r.port[port]
	if q > 0 {
		p.count(p4src.CounterPFCPauseRx, port, acct)
		if pc.paused == 0 {
			pc.paused, r.portPauseStart[port], pc.rxBytes = 1, now, 0
			p.emit(out.Digests[:], &out.NumDigests, Digest{DigestID: p4src.DigestPortState, Port: port, Event: p4src.PortEventPause,
				QueueBytes: uint32(pc.queueBytes), TimestampNs: now}, rawNow)
		}
		pc.pauseExpire = (now + q*uint64(cfg.PauseQuantumPs)/1000) & mask48
		return
	}
	p.count(p4src.CounterPFCResumeRx, port, acct)
	if pc.paused == 1 {
		d := p.resume(port, now, &cfg, uint32(pc.queueBytes))
		p.emit(out.Digests[:], &out.NumDigests, d, rawNow)
	}
}

// resume is RESUME(p) with qlen the queue length it examines; it returns the digest.
func (p *Pipeline) resume(port uint16, now uint64, cfg *PortConfig, qlen uint32) Digest {
	r := &p.regs
	pc := &r.port[port]
	t := (now - r.portPauseStart[port]) & mask48
	pc.paused = 0
	rx := pc.rxBytes
	var ev uint8
	// rx_bytes * 1e6 > rate_bytes_per_ms * T, exact (P4: the same in 64-bit limbs, controls.p4).
	lhsHi, lhsLo := bits.Mul64(rx, 1_000_000)
	rhsHi, rhsLo := bits.Mul64(uint64(cfg.RateBytesPerMs), t)
	switch {
	case qlen < cfg.QthBytes:
		pc.undetermined, ev = 0, p4src.PortEventResumeNotCongested
	case cfg.Mode == p4src.PortModeFastcnpNoPFCState || lhsHi > rhsHi || lhsHi == rhsHi && lhsLo > rhsLo:
		// The ablation mode has no undetermined state: a queue over Qth is congested.
		pc.undetermined, ev = 0, p4src.PortEventResumeCongested
	default:
		pc.undetermined, ev = 1, p4src.PortEventResumeUndetermined
		pc.qSnapshot = uint64(qlen)
		pc.checkAt = (now + uint64(cfg.TcheckNs)) & mask48
	}
	return Digest{DigestID: p4src.DigestPortState, Port: port, Event: ev, QueueBytes: qlen, RxBytes: uint32(rx), TimestampNs: now}
}

// incKey is what step 8 aggregates a packet under: the slot key (INC ID,
// offset, operation ID) and the data flow length.
type incKey struct {
	incID, offset, flen uint32
	op                  uint16
}

// incAggregate is step 8 for a packet with an INC base header: a worker's
// contribution (connection with the INC flag; connIndex and rank its
// set_connection params) or a lower switch's partial aggregate (its rank: the
// inc_child_port entry of inPort) is added to its aggregation slot. It
// reports false when the packet was dropped or consumed. A packet that
// completes its slot leaves as the aggregate (out.Frame; f updated): the
// RESULT at the root of its group's tree, else a partial aggregate.
// RESULTs, other INC packets and packets of a group without an inc_group
// entry pass unchanged (true).
func (p *Pipeline) incAggregate(frame []byte, f *wire.Frame, inPort uint16, connIndex, rank uint64, now uint64, acct uint32, out *IngressResult) bool {
	var k incKey
	keyed := false
	switch {
	case f.INC.IsPartial():
		act, cp, _ := p.tIncChild.lookupExact(uint64(inPort), 0, 0)
		if !f.Has(wire.LayerINCIDs) || act != p4src.ActionSetIncChild {
			// Not from a lower switch (or no key): refused.
			p.count(p4src.CounterDropped, inPort, acct)
			p.drop(out, DropINCNotChild)
			return false
		}
		ids := &f.INCIDs
		k = incKey{incID: ids.INCID(), offset: ids.FirstPSN, flen: ids.FlowLen, op: ids.OpID}
		keyed, rank = true, cp[0]
	case f.INC.IsContribution() && out.Meta.ConnHit && out.Meta.ConnFlags&p4src.ConnFlagIncUplink != 0:
		k, keyed = p.incFlow(connIndex, f)
	default:
		return true
	}
	if !keyed || k.offset >= k.flen {
		p.count(p4src.CounterDropped, inPort, acct)
		p.drop(out, DropINCOffset)
		return false
	}
	_, gp, hit := p.tIncGroup.lookupExact(uint64(k.incID>>16), 0, 0)
	if !hit {
		return true // forwarded as a normal packet (a partial: passing through)
	}
	r := &p.regs
	slot := IncSlot(k.incID, k.offset)
	bit := uint64(1) << rank
	vec := &f.INCVector
	bm := r.incSlotBitmap[slot]
	same := r.incSlotIncID[slot] == uint64(k.incID) && r.incSlotOffset[slot] == uint64(k.offset) && r.incSlotOp[slot] == uint64(k.op)
	// Slot aging: a slot held (or remembered as done) for at least the
	// timeout of this packet's group (inc_slot_timeout).
	aged := false
	if act, tp, _ := p.tIncAging.lookupExact(uint64(k.incID>>16), 0, 0); act == p4src.ActionSetIncSlotTimeout && tp[0] != 0 {
		aged = (now-r.incSlotStart[slot])&p.timeMask() >= tp[0]
	}
	done := r.incSlotDone[slot] == 1
	claim := false
	switch {
	case done && same && !aged:
		// A late copy of an aggregation this slot completed.
		p.count(p4src.CounterIncDuplicates, inPort, acct)
		p.drop(out, DropINCDuplicate)
		return false
	case bm == 0 || done:
		claim = true
	case same:
		if bm&bit != 0 {
			p.count(p4src.CounterIncDuplicates, inPort, acct)
			p.drop(out, DropINCDuplicate)
			return false
		}
		bm |= bit
		for i := range p4src.IncVectorLen {
			r.incSlotValue[i][slot] = uint64(uint32(r.incSlotValue[i][slot]) + uint32(vec[i]))
		}
	case aged:
		// Another message, abandoned: taken over.
		p.count(p4src.CounterIncSlotTakeovers, inPort, acct)
		claim = true
	default:
		p.count(p4src.CounterIncSlotBusy, inPort, acct)
		p.drop(out, DropINCSlotBusy)
		return false
	}
	if claim {
		r.incSlotIncID[slot], r.incSlotOffset[slot], r.incSlotOp[slot] = uint64(k.incID), uint64(k.offset), uint64(k.op)
		r.incSlotStart[slot], r.incSlotDone[slot], bm = now&p.timeMask(), 0, bit
		for i := range p4src.IncVectorLen {
			r.incSlotValue[i][slot] = uint64(uint32(vec[i]))
		}
	}
	r.incSlotBitmap[slot] = bm
	p.count(p4src.CounterIncContributions, inPort, acct)
	if bm != gp[0] {
		p.drop(out, DropINCConsumed)
		return false
	}
	// Every child is in: the slot is done (it remembers its key for the
	// slot timeout, from now) and the packet becomes the aggregate. The TNA
	// program frees it at once instead (docs/tofino.md "INC aggregation").
	if p.prof.Tofino() {
		r.incSlotBitmap[slot] = 0
	} else {
		r.incSlotDone[slot], r.incSlotStart[slot] = 1, now&p.timeMask()
	}
	out.Frame = p.buildAggregate(frame, f, slot, k, gp[1] == 1)
	p.count(p4src.CounterIncResults, inPort, acct)
	return true
}

// incFlow is the data flow map of step 8 for a contribution of connection
// ci: a first packet (IDS part) is keyed by its IDS part and records its data
// flow in way inc_flow_next_way[ci] unless a way holds it already; a later
// packet takes the newest way whose PSN range holds its PSN (none: not keyed).
func (p *Pipeline) incFlow(ci uint64, f *wire.Frame) (incKey, bool) {
	r := &p.regs
	base := ci * p4src.IncFlowWays
	next := r.incFlowNextWay[ci]
	ways := uint64(p.incFlowWays())
	psn := f.BTH.PSN
	if f.Has(wire.LayerINCIDs) {
		ids := &f.INCIDs
		k := incKey{incID: ids.INCID(), offset: (psn - ids.FirstPSN) & wire.MaxPSN, flen: ids.FlowLen, op: ids.OpID}
		known := false
		for w := range ways {
			c := base + w
			known = known || r.incFlowIncID[c] == uint64(k.incID) && r.incFlowFirstPSN[c] == uint64(ids.FirstPSN) &&
				r.incFlowLen[c] == uint64(k.flen) && r.incFlowOp[c] == uint64(k.op)
		}
		if !known && k.flen != 0 {
			c := base + next
			r.incFlowIncID[c], r.incFlowFirstPSN[c], r.incFlowLen[c], r.incFlowOp[c] = uint64(k.incID), uint64(ids.FirstPSN), uint64(k.flen), uint64(k.op)
			r.incFlowNextWay[ci] = (next + 1) & (ways - 1)
		}
		return k, true
	}
	// Newest first: ways next-1, next-2, ..., next (the oldest).
	for i := uint64(1); i <= ways; i++ {
		c := base + (next-i)&(ways-1)
		flen := uint32(r.incFlowLen[c])
		if off := (psn - uint32(r.incFlowFirstPSN[c])) & wire.MaxPSN; flen != 0 && off < flen {
			return incKey{incID: uint32(r.incFlowIncID[c]), offset: off, flen: flen, op: uint16(r.incFlowOp[c])}, true
		}
	}
	return incKey{}, false
}

// buildAggregate writes the aggregate of slot (key k) into p.incBuf, a RESULT
// when root is set, else a partial aggregate, and updates f (flags, IDS
// part) for step 9.
func (p *Pipeline) buildAggregate(frame []byte, f *wire.Frame, slot uint32, k incKey, root bool) []byte {
	incOff := f.Off[wire.LayerINC]
	idsOff := incOff + wire.INCLen
	grow := 0
	if !f.Has(wire.LayerINCIDs) {
		grow = wire.INCIDsLen
	}
	n := len(frame) + grow
	l3 := f.Off[wire.LayerIPv4]
	if end := l3 + int(f.IPv4.TotalLen) + grow; end >= vecEndOf(f)+grow+wire.ICRCLen && end < n {
		n = end // cut Ethernet padding: the frame ends with the new ICRC
	}
	if cap(p.incBuf) < n {
		p.incBuf = make([]byte, n) // only for frames above 2 KiB
	}
	b := p.incBuf[:n]
	copy(b, frame[:idsOff])
	copy(b[idsOff+grow:], frame[idsOff:n-grow])
	flags := uint8(wire.INCFlagIDs | wire.INCFlagPartial)
	if root {
		flags = wire.INCFlagIDs | wire.INCFlagResult
	}
	b[incOff], f.INC.Flags = flags, flags
	f.INCIDs = wire.INCIDs{GroupID: uint16(k.incID >> 16), MessageID: uint16(k.incID), FirstPSN: k.offset, OpID: k.op, FlowLen: k.flen}
	_, _ = f.INCIDs.Encode(b[idsOff:])
	vecOff := idsOff + wire.INCIDsLen
	for i := range p4src.IncVectorLen {
		binary.BigEndian.PutUint32(b[vecOff+4*i:], uint32(p.regs.incSlotValue[i][slot]))
	}
	ip := b[l3:]
	if grow > 0 {
		old := binary.BigEndian.Uint16(ip[2:])
		binary.BigEndian.PutUint16(ip[2:], old+uint16(grow))
		updateCsum(ip, 2, old)
		udp := ip[wire.IPv4Len:]
		binary.BigEndian.PutUint16(udp[4:], binary.BigEndian.Uint16(udp[4:])+uint16(grow))
	}
	binary.BigEndian.PutUint16(ip[wire.IPv4Len+6:], 0) // UDP checksum: none
	_ = wire.SetICRC(ip)                               // inconsistent lengths: ICRC left as is
	return b
}

// vecEndOf is the offset just past the INC vector.
func vecEndOf(f *wire.Frame) int { return f.Off[wire.LayerINCVector] + wire.INCVectorBytes }
