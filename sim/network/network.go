package network

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fastcnp/fastcnp/host/agent"
	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/model/tm"
	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/p4src/portcfg"
	"github.com/fastcnp/fastcnp/sim/engine"
	"github.com/fastcnp/fastcnp/sim/hpcc"
	"github.com/fastcnp/fastcnp/wire"
)

// Event kinds.
const (
	evArrive      uint16 = iota + 1 // A node, B port, C frame: the frame's last bit arrives
	evSwitchTx                      // A switch, B port: transmit attempt
	evHostTx                        // A host: NIC transmit attempt
	evSwitchTimer                   // A switch: TM timers (XOFF refresh)
	evFlowStart                     // A flow
	evSample                        // periodic samples
)

// Network is one simulation: the engine, the nodes, the flows and the counters.
type Network struct {
	cfg      Config
	eng      *engine.Engine
	pool     pool
	schema   *schemaIndex
	switches []*Switch
	hosts    []*Host
	kind     []nodeRef // per node: switch or host index
	flows    []*flowState
	rttBase  time.Duration
	acct     accounting
	err      error
	pfcLog   []hpcc.PFC
	llDrops  []LosslessDrop // the first maxLosslessDrops
	finished int
	// rdma_connection indexes (fastcnp modes)
	connFree []uint16
	// dist[h][node]: hops from node to host h (routing)
	hostIdx   map[int]int
	queueSamp []hpcc.QlenSample
	kindCount [8]uint64 // events run, by kind
	// onTx, set by tests, sees every frame a node starts to send: at its first
	// bit, from port (0-based); frame is valid during the call only.
	onTx       func(node, port int, at int64, frame []byte)
	rateSamp   []RateSample
	lastSample int64
	inc        *incState // INC streams, tables and link states (nil: none)
	// laneOf[node] + port is the engine lane of the frames arriving at that port
	// (nil: no lanes, every arrival is scheduled on its own).
	laneOf []int
	// startLane is the engine lane of the flow starts (-1: none): they are
	// scheduled at once, mostly in time order, and would otherwise all wait in
	// the event queue, making every operation on it deeper.
	startLane int
}

type nodeRef struct {
	sw  bool
	idx int
}

// fail records the first model error; the run stops at the next event.
func (n *Network) fail(err error) {
	if n.err == nil {
		n.err = err
	}
}

func (n *Network) schedule(ev engine.Event) {
	if err := n.eng.Schedule(ev); err != nil {
		n.fail(err)
	}
}

// send puts frame i on the link to port peerPort of node peer; its last bit
// arrives at at.
func (n *Network) send(peer, peerPort int, i int32, at int64) {
	n.acct.onWire(n.pool.s(i).cls, int(n.pool.s(i).n))
	ev := engine.Event{At: at, Kind: evArrive, A: int32(peer), B: int32(peerPort), C: i}
	if n.laneOf == nil {
		n.schedule(ev)
		return
	}
	// A link delivers its frames in order: one lane per receiving port keeps the
	// event queue at one event per busy link.
	if err := n.eng.ScheduleLane(n.laneOf[peer]+peerPort, ev); err != nil {
		n.fail(err)
	}
}

// Handle implements engine.Handler.
func (n *Network) Handle(ev *engine.Event) {
	if n.err != nil {
		return
	}
	n.kindCount[ev.Kind&7]++
	switch ev.Kind {
	case evArrive:
		if n.inc != nil && n.incLost(int(ev.A), int(ev.B), ev.C) {
			return
		}
		r := n.kind[ev.A]
		if r.sw {
			n.switches[r.idx].arrive(int(ev.B), ev.C, ev.At)
		} else {
			n.hosts[r.idx].arrive(ev.C, ev.At)
		}
	case evSwitchTx:
		n.switches[ev.A].txEvent(int(ev.B), ev.At)
	case evHostTx:
		n.hosts[ev.A].txEvent(ev.At)
	case evSwitchTimer:
		n.switches[ev.A].timerEvent(ev.At)
	case evFlowStart:
		if err := n.startFlow(n.flows[ev.A], ev.At); err != nil {
			n.fail(err)
		}
	case evSample:
		n.sample(ev.At)
	case evINC:
		n.incEvent(ev)
	}
}

// New builds the network of cfg: switches programmed, hosts ready, flow starts
// scheduled.
func New(cfg Config) (*Network, error) {
	if cfg.Queue == "" {
		cfg.Queue = engine.QueueHeap
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	q, err := engine.NewQueue(cfg.Queue)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	n := &Network{cfg: cfg, eng: engine.New(q), schema: newSchemaIndex(), kind: make([]nodeRef, cfg.Topo.Nodes), hostIdx: map[int]int{}}
	t := cfg.Topo
	isSwitch := t.SwitchMask()
	// Ports: a node's links in file order.
	ports := make([][]portEnd, t.Nodes)
	for _, l := range t.Links {
		pa, pb := len(ports[l.A]), len(ports[l.B])
		rate := int64(l.RateBps)
		ports[l.A] = append(ports[l.A], portEnd{peer: l.B, peerPort: pb, rate: rate, delay: l.DelayNs, mac: macOf(l.A, pa)})
		ports[l.B] = append(ports[l.B], portEnd{peer: l.A, peerPort: pa, rate: rate, delay: l.DelayNs, mac: macOf(l.B, pb)})
	}
	for id := range t.Nodes {
		if isSwitch[id] {
			if len(ports[id]) == 0 || len(ports[id]) >= int(p4src.CPUPort) {
				return nil, fmt.Errorf("%w: switch %d has %d ports (1..%d)", ErrConfig, id, len(ports[id]), p4src.CPUPort-1)
			}
			n.kind[id] = nodeRef{sw: true, idx: len(n.switches)}
			n.switches = append(n.switches, &Switch{net: n, idx: len(n.switches), node: id, timer: -1, cnp: -1})
			continue
		}
		if len(ports[id]) != 1 {
			return nil, fmt.Errorf("%w: host %d has %d links (one supported)", ErrConfig, id, len(ports[id]))
		}
		if !isSwitch[ports[id][0].peer] {
			return nil, fmt.Errorf("%w: host %d is linked to host %d (hosts hang off switches)", ErrConfig, id, ports[id][0].peer)
		}
		gate, err := agent.NewPauseGate(float64(ports[id][0].rate))
		if err != nil {
			return nil, fmt.Errorf("%w: host %d: %w", ErrConfig, id, err)
		}
		n.kind[id] = nodeRef{idx: len(n.hosts)}
		n.hostIdx[id] = len(n.hosts)
		n.hosts = append(n.hosts, &Host{net: n, idx: len(n.hosts), node: id, ip: hpcc.NodeIP(id), port: ports[id][0], gate: gate, armed: -1})
	}
	lanes := 0
	n.laneOf = make([]int, t.Nodes)
	for id := range t.Nodes {
		n.laneOf[id] = lanes
		lanes += len(ports[id])
	}
	n.startLane = lanes
	if err := n.eng.SetLanes(lanes + 1); err != nil {
		n.laneOf, n.startLane = nil, -1 // too many ports: every event on its own
	}
	rt, err := n.routes(ports, isSwitch)
	if err != nil {
		return nil, err
	}
	n.rttBase = cfg.Switch.RTTBase
	if n.rttBase == 0 {
		n.rttBase = rt.maxBaseRTT
	}
	for _, s := range n.switches {
		if err := n.buildSwitch(s, ports[s.node], rt); err != nil {
			return nil, err
		}
	}
	if cfg.Mode.announces() {
		for i := p4src.ConnTableSize - 1; i >= 0; i-- {
			n.connFree = append(n.connFree, uint16(i))
		}
	}
	// Flows: one sender and receiver each; UDP source ports per sender from
	// 10000, as the HPCC simulator numbers them.
	sport := map[int]int{}
	for i, f := range cfg.Flows {
		fs := &flowState{net: n, id: i, spec: f, src: n.hosts[n.hostIdx[f.Src]], dst: n.hosts[n.hostIdx[f.Dst]], conn: -1}
		fs.sport = uint16(10000 + sport[f.Src]%55000)
		sport[f.Src]++
		fs.stats.StandaloneNs = rt.standalone(n, f)
		n.flows = append(n.flows, fs)
		ev := engine.Event{At: f.StartNs, Kind: evFlowStart, A: int32(i)}
		if n.startLane < 0 {
			n.schedule(ev)
		} else if err := n.eng.ScheduleLane(n.startLane, ev); err != nil {
			return nil, fmt.Errorf("%w: flow %d: %w", ErrConfig, i, err)
		}
	}
	if cfg.INC != nil {
		if err := n.incSetup(ports); err != nil {
			return nil, err
		}
	}
	if cfg.QueueSampleNs > 0 || cfg.RateSampleNs > 0 {
		n.schedule(engine.Event{At: 0, Kind: evSample})
	}
	return n, nil
}

// hpccAlpha is the HPCC simulator's dynamic XOFF factor of a port of rate bps when
// the hosts' links run at host (third.cc: pfc_a_shift from 3, one less per halving
// of the rate down to the host rate, not below 0).
func hpccAlpha(bps, host int64) float64 {
	shift := 3
	for bps > host && shift > 0 {
		shift--
		bps /= 2
	}
	return 1 / float64(int64(1)<<shift)
}

// buildSwitch makes switch s's pipeline and TM and programs the pipeline.
func (n *Network) buildSwitch(s *Switch, ports []portEnd, rt *routing) error {
	cfg := n.cfg
	sp := cfg.Switch
	// The largest frame sizes PFC headroom: with INT records only where the
	// senders put an INT header on their data.
	maxFrame := agent.RoCEOverhead + cfg.PayloadBytes
	if cfg.needsINT() {
		maxFrame += wire.INTHeaderLen + wire.INTMaxHops*wire.INTHopLen
	}
	tc := tm.Config{BufferBytes: sp.BufferBytes, WireOverhead: true, Scheduler: tm.SchedStrict,
		MaxFrameBytes: frameWireLen(maxFrame), Alpha: sp.Alpha}
	if sp.PFC {
		tc.Lossless = 1 << losslessPriority
	}
	if sp.StaticXoff > 0 {
		tc.Threshold, tc.XoffBytes = tm.ThresholdStatic, sp.StaticXoff
	}
	if sp.HeadroomHPCC {
		tc.Headroom = tm.HeadroomHPCC
	}
	s.ports = make([]swPort, len(ports))
	for i, p := range ports {
		pc := tm.PortConfig{RateBps: p.rate, PropDelayNs: p.delay}
		if sp.AlphaByRate && len(n.hosts) > 0 {
			pc.Alpha = hpccAlpha(p.rate, n.hosts[0].port.rate)
		}
		tc.Ports = append(tc.Ports, pc)
		s.ports[i] = swPort{portEnd: p, armed: -1}
	}
	t, err := tm.New[int32](tc, hooks{s})
	if err != nil {
		return fmt.Errorf("%w: switch %d: %w", ErrConfig, s.node, err)
	}
	s.tm = t
	s.pl = pipeline.New(pipeline.Options{Seed: cfg.Seed*1_000_003 + uint64(s.node)})
	x := n.schema
	if err := x.programBase(s.pl, cfg.Mode.announces()); err != nil {
		return fmt.Errorf("switch %d: %w", s.node, err)
	}
	ms, _ := cfg.Mode.spec()
	mode := ms.port
	if cfg.needsINT() {
		mode = p4src.PortModeInt // HPCC's records
	}
	tcheck := sp.Tcheck
	if tcheck == 0 {
		tcheck = n.rttBase
	}
	mtu := uint64(agent.RoCEOverhead + cfg.PayloadBytes)
	for i, p := range ports {
		scale := func(b int64) uint64 { return uint64(float64(b) * float64(p.rate) / 100e9) }
		kmin, kmax, pmax := scale(sp.KminBytes100G), scale(sp.KmaxBytes100G), sp.Pmax
		if cfg.Mode == ModeDCTCP {
			kmin, kmax, pmax = scale(sp.DCTCPKBytes100G), scale(sp.DCTCPKBytes100G), 1
		}
		if r, ok := sp.REDByRate[p.rate]; ok {
			kmin, kmax, pmax = uint64(r.KminBytes), uint64(r.KmaxBytes), r.Pmax
		}
		pp, err := portcfg.Compute(portcfg.Settings{
			Port: uint16(i + 1), SwitchID: uint64(s.idx + 1), LinkRateBps: uint64(p.rate),
			QthBytes: scale(sp.QthBytes100G), Tcheck: tcheck, CNPGap: sp.CNPGap, RTTBase: n.rttBase, Mode: mode,
			REDKminBytes: kmin, REDKmaxBytes: kmax, REDPmax: pmax,
			MTUBytes: mtu, LosslessPriority: losslessPriority,
		})
		if err != nil {
			return fmt.Errorf("%w: switch %d: %w", ErrConfig, s.node, err)
		}
		if err := x.programPort(s.pl, pp); err != nil {
			return fmt.Errorf("switch %d: %w", s.node, err)
		}
	}
	return rt.program(n, s)
}

// peerMAC is the MAC of the switch port host h is linked to.
func (n *Network) peerMAC(h *Host) wire.MAC { return macOf(h.port.peer, h.port.peerPort) }

// flowOfData returns the flow of a data frame leaving a switch, or nil.
func (n *Network) flowOfData(frame []byte, m *pipeline.PacketMeta) *flowState {
	if !m.HasBTH {
		return nil
	}
	b := int(m.L3Offset) + wire.IPv4Len + wire.UDPLen
	if b+wire.BTHLen > len(frame) || frame[b] > wire.OpRCSendOnlyImm {
		return nil
	}
	qpn := int(frame[b+5])<<16 | int(frame[b+6])<<8 | int(frame[b+7])
	if qpn < 1 || qpn > len(n.flows) {
		return nil
	}
	return n.flows[qpn-1]
}

// flowOfCNP returns the flow a switch CNP is for, or nil.
func (n *Network) flowOfCNP(frame []byte) *flowState {
	b := wire.EthernetLen + wire.IPv4Len + wire.UDPLen
	if len(frame) < b+wire.BTHLen || frame[12] != 0x08 || frame[13] != 0x00 {
		return nil
	}
	qpn := int(frame[b+5])<<16 | int(frame[b+6])<<8 | int(frame[b+7])
	if qpn < 1 || qpn > len(n.flows) {
		return nil
	}
	return n.flows[qpn-1]
}

// announce installs the flow's rdma_connection entry on every switch, as fastcnpd
// does from the sender's announcement. With the table full the flow has none (its
// congested packets are CE-marked instead: the data plane's fallback).
func (n *Network) announce(f *flowState) error {
	if len(n.connFree) == 0 {
		n.acct.ConnTableFull++
		return nil
	}
	idx := n.connFree[len(n.connFree)-1]
	n.connFree = n.connFree[:len(n.connFree)-1]
	e, err := n.schema.connEntry(f.src.ip, f.sport, f.qpn(), f.qpn(), idx)
	if err != nil {
		return err
	}
	for _, s := range n.switches {
		if err := s.pl.InsertEntry(e); err != nil {
			return fmt.Errorf("switch %d: flow %d connection: %w", s.node, f.id, err)
		}
	}
	f.conn = int(idx)
	return nil
}

// finishFlow records a flow's completion (its last byte acknowledged) and tears
// its connection down.
func (n *Network) finishFlow(f *flowState, now int64) {
	f.done = true
	f.finish = now
	f.stats.FCTNs = now - f.spec.StartNs
	n.finished++
	if n.finished == len(n.flows) {
		n.eng.Stop()
	}
	if k := slices.Index(f.src.qps, f); k >= 0 {
		f.src.qps = slices.Delete(f.src.qps, k, k+1)
		if f.src.rr > k {
			f.src.rr--
		}
		if len(f.src.qps) > 0 {
			f.src.rr %= len(f.src.qps)
		} else {
			f.src.rr = 0
		}
	}
	st := f.snd.Stats()
	f.stats.Timeouts = st.Timeouts
	f.stats.Naks = st.Naks
	f.stats.ECEAcks, f.stats.INTAcks = st.ECEAcks, st.INTAcks
	if f.conn >= 0 {
		e, err := n.schema.connEntry(f.src.ip, f.sport, f.qpn(), f.qpn(), uint16(f.conn))
		if err == nil {
			for _, s := range n.switches {
				if derr := s.pl.DeleteEntry(e); derr != nil && !errors.Is(derr, pipeline.ErrNotFound) {
					n.fail(fmt.Errorf("switch %d: flow %d connection: %w", s.node, f.id, derr))
				}
			}
		}
		n.connFree = append(n.connFree, uint16(f.conn))
		f.conn = -1
	}
	f.snd = nil
}

// logPFC records a PFC frame received for the lossless priority (pfc.txt).
func (n *Network) logPFC(now int64, node int, sw bool, port int, paused bool) {
	n.pfcLog = append(n.pfcLog, hpcc.PFC{TimeNs: now, Node: node, Switch: sw, IfIndex: port + 1, Paused: paused})
}

// Run runs the simulation to its end (the last flow's last ACK, or cfg.UntilNs if
// that comes first)
// and returns the results. progress, if not nil, is called every 2^20 events with
// the virtual time reached and the events run.
func (n *Network) Run(progress func(nowNs int64, events uint64)) (*Result, error) {
	until := n.cfg.UntilNs
	if until <= 0 {
		until = engine.Never
	}
	if len(n.flows) == 0 && n.cfg.UntilNs <= 0 {
		return n.result(), nil
	}
	const budget = 1 << 20
	for {
		ran := n.eng.Run(n, until, budget)
		if n.err != nil {
			return nil, n.err
		}
		if progress != nil {
			progress(n.eng.Now(), n.eng.Events())
		}
		if ran < budget || n.eng.Stopped() {
			break
		}
	}
	return n.result(), nil
}

// Stop ends a run early (from Run's progress callback): Run returns the results
// so far.
func (n *Network) Stop() { n.eng.Stop() }
