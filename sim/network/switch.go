package network

import (
	"errors"
	"fmt"

	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/model/tm"
	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/sim/engine"
	"github.com/fastcnp/fastcnp/wire"
)

// portEnd is one end of a link as seen from a node's port.
type portEnd struct {
	peer     int // node at the other end
	peerPort int // its port index (0-based)
	rate     int64
	delay    int64
	mac      wire.MAC // this port's MAC
}

// swPort is a switch port: the link, the pending transmit event and counters.
type swPort struct {
	portEnd
	armed int64 // time of the pending evSwitchTx, -1 none
	stats PortStats
	// undetermined state, from the port-state digests
	undetSince int64
	undet      bool
}

// Switch is one switch: the P4 pipeline in front of the traffic manager, glued the
// way fastcnp-switch glues them (softswitch/datapath.go): the TM's enqueue hook runs
// the pipeline's enqueue accounting, its dequeue hook the egress control (ECN mark,
// switch CNP), PFC frames go to the pipeline (port state machine) and to the TM
// (pause the egress queue), and a CNP made at a dequeue is enqueued after it.
type Switch struct {
	net   *Network
	idx   int
	node  int
	pl    *pipeline.Pipeline
	tm    *tm.TM[int32]
	ports []swPort
	inRes pipeline.IngressResult
	egRes pipeline.EgressResult
	cnp   int32 // the switch CNP the dequeue hook made (-1: none), enqueued after the dequeue
	pfcEv []tm.PFCEvent
	pf    wire.Frame
	timer int64 // time of the pending evSwitchTimer, -1 none
}

// hooks connects the TM to the pipeline.
type hooks struct{ s *Switch }

func (h hooks) OnEnqueue(e *tm.EnqueueInfo[int32]) { h.s.pl.OnEnqueue(&h.s.net.pool.s(e.Handle).meta) }

func (h hooks) OnDequeue(d *tm.DequeueInfo[int32]) {
	s := h.s
	n := s.net
	i := d.Handle
	r := &s.egRes
	port := uint16(d.Port + 1)
	if err := s.pl.Egress(n.pool.frame(i), port, d.Now, &n.pool.s(i).meta, r); err != nil {
		n.fail(fmt.Errorf("switch %d: egress on port %d: %w", s.node, port, err))
		return
	}
	if len(r.Frame) != int(n.pool.s(i).n) {
		// Egress added an INT record (port mode int): the frame grew.
		if len(r.Frame) > slotBytes {
			n.fail(fmt.Errorf("switch %d: a frame of %d bytes outgrew its slot", s.node, len(r.Frame)))
			return
		}
		grow := len(r.Frame) - int(n.pool.s(i).n)
		copy(n.pool.buf(i), r.Frame)
		n.pool.s(i).n = int32(len(r.Frame))
		n.acct.grew(n.pool.s(i).cls, grow)
	}
	d.Mark = r.Marked
	ps := &s.ports[d.Port].stats
	if r.Marked {
		ps.ECNMarks++
		if f := n.flowOfData(n.pool.frame(i), &n.pool.s(i).meta); f != nil {
			f.stats.ECNMarks++
		}
	}
	s.portEvents(r.Digests[:r.NumDigests], d.Now)
	if r.CNP {
		ps.SwitchCNPs++
		c := n.pool.get(len(r.CNPFrame))
		copy(n.pool.buf(c), r.CNPFrame)
		n.pool.s(c).meta = r.CNPMeta
		n.pool.s(c).cls = cnpPriority
		n.acct.made(cnpPriority, len(r.CNPFrame))
		if f := n.flowOfCNP(r.CNPFrame); f != nil {
			f.stats.SwitchCNPs++
		}
		s.cnp = c
	}
}

// OnEgressPause: the pipeline sees PFC frames itself (ingress step 4).
func (hooks) OnEgressPause(int, int, bool, int64) {}

// portEvents counts the port-state digests of a packet: PFC-aware state changes.
func (s *Switch) portEvents(ds []pipeline.Digest, now int64) {
	for k := range ds {
		d := &ds[k]
		if d.DigestID != p4src.DigestPortState || int(d.Port) < 1 || int(d.Port) > len(s.ports) {
			continue
		}
		p := &s.ports[d.Port-1]
		st := &p.stats
		switch d.Event {
		case p4src.PortEventPause:
			st.Pauses++
		case p4src.PortEventResumeNotCongested:
			st.ResumeNotCongested++
		case p4src.PortEventResumeCongested:
			st.ResumeCongested++
		case p4src.PortEventResumeUndetermined:
			st.ResumeUndetermined++
			if !p.undet {
				p.undet, p.undetSince = true, now
			}
		case p4src.PortEventCheckDrained:
			st.CheckDrained++
		case p4src.PortEventCheckCongested:
			st.CheckCongested++
		}
		if p.undet && (d.Event == p4src.PortEventCheckDrained || d.Event == p4src.PortEventCheckCongested ||
			d.Event == p4src.PortEventResumeCongested || d.Event == p4src.PortEventResumeNotCongested) {
			st.UndeterminedNs += now - p.undetSince
			p.undet = false
		}
	}
}

// arrive handles a frame whose last bit reached port p at now.
func (s *Switch) arrive(p int, i int32, now int64) {
	n := s.net
	frame := n.pool.frame(i)
	n.acct.landed(n.pool.s(i).cls, len(frame))
	if len(frame) >= wire.EthernetLen && frame[12] == 0x88 && frame[13] == 0x08 {
		s.macControl(p, frame, now)
	}
	r := &s.inRes
	if err := s.pl.Ingress(frame, uint16(p+1), now, r); err != nil {
		n.fail(fmt.Errorf("switch %d: ingress on port %d: %w", s.node, p+1, err))
		n.pool.put(i)
		return
	}
	s.portEvents(r.Digests[:r.NumDigests], now)
	if r.Verdict != pipeline.VerdictForward {
		if r.DropReason == pipeline.DropPFC || r.DropReason == pipeline.DropINCConsumed {
			n.acct.consumed(n.pool.s(i).cls, len(frame))
		} else {
			n.acct.dropped(n.pool.s(i).cls, len(frame))
			s.ports[p].stats.IngressDrops++
		}
		n.pool.put(i)
		return
	}
	if len(r.Frame) != len(frame) || &r.Frame[0] != &frame[0] {
		// Only INC aggregation rewrites a frame at ingress (inc.go).
		if err := n.incRewrote(i, r.Frame); err != nil {
			n.fail(fmt.Errorf("switch %d: ingress on port %d: %w", s.node, p+1, err))
			n.pool.put(i)
			return
		}
	}
	n.pool.s(i).meta = r.Meta
	s.enqueue(i, p, int(r.EgressPort)-1, now)
}

// macControl applies a received PFC or PAUSE frame to the TM's egress queues of
// port p (the pipeline sees the frame too, for the port state machine).
func (s *Switch) macControl(p int, frame []byte, now int64) {
	n := s.net
	if err := wire.Parse(frame, wire.ParseOptions{}, &s.pf); err != nil {
		return
	}
	var err error
	switch {
	case s.pf.Has(wire.LayerPFC):
		s.ports[p].stats.PFCRx++
		if s.pf.PFC.Enabled(losslessPriority) {
			n.logPFC(now, s.node, true, p, s.pf.PFC.Time[losslessPriority] > 0)
		}
		err = s.tm.ReceivePFC(p, s.pf.PFC.ClassEnable, s.pf.PFC.Time, now)
	case s.pf.Has(wire.LayerPause):
		err = s.tm.ReceivePause(p, s.pf.Pause.Time, now)
	}
	if err != nil {
		n.fail(fmt.Errorf("switch %d port %d: %w", s.node, p+1, err))
	}
	s.armTimer()
	s.kick(p, now)
}

// enqueue offers frame i, arrived on port in, to egress port eg.
func (s *Switch) enqueue(i int32, in, eg int, now int64) {
	n := s.net
	if eg < 0 || eg >= len(s.ports) {
		n.acct.dropped(n.pool.s(i).cls, int(n.pool.s(i).n))
		s.ports[in].stats.IngressDrops++
		n.pool.put(i)
		return
	}
	m := &n.pool.s(i).meta
	prio := int(m.Priority & 7)
	// Charged at its size on the wire: with the INT record egress will add.
	length := frameWireLen(int(n.pool.s(i).n) + s.pl.INTGrowth(n.pool.frame(i), m))
	res, err := s.tm.Enqueue(i, length, in, eg, prio, now)
	if err != nil && !errors.Is(err, tm.ErrLosslessDrop) {
		n.fail(fmt.Errorf("switch %d: enqueue: %w", s.node, err))
	}
	if !res.Verdict.IsAccepted() {
		st := &s.ports[eg].stats
		st.Drops++
		if res.Verdict == tm.DroppedLossless {
			st.LosslessDrops++
			s.recordLosslessDrop(in, eg, prio, length, now)
		}
		s.pl.CountQueueDrop(m.EgressPort, uint8(prio), m.AcctLen)
		n.acct.dropped(n.pool.s(i).cls, int(n.pool.s(i).n))
		n.pool.put(i)
	} else {
		n.acct.queue(n.pool.s(i).cls, int(n.pool.s(i).n))
	}
	if res.PFC.Kind != tm.PFCNone {
		s.sendPFC(&res.PFC)
	}
	s.kick(eg, now)
}

// recordLosslessDrop keeps the details of a lossless drop (rare: it may be slow).
func (s *Switch) recordLosslessDrop(in, eg, prio, length int, now int64) {
	n := s.net
	if len(n.llDrops) >= maxLosslessDrops {
		return
	}
	g := s.tm.Snapshot(now).Ports[in].Ingress[prio]
	d := LosslessDrop{AtNs: now, Node: s.node, IngressPort: in + 1, EgressPort: eg + 1, Priority: prio, FrameBytes: length,
		SharedBytes: g.SharedBytes, HeadroomBytes: g.HeadroomBytes, HeadroomReserved: g.HeadroomReserved, Xoff: g.Xoff,
		Upstream: s.ports[in].peer}
	if r := n.kind[d.Upstream]; r.sw {
		d.UpstreamPaused, _ = n.switches[r.idx].tm.EgressPaused(s.ports[in].peerPort, prio, now)
	} else {
		d.UpstreamPaused = n.hosts[r.idx].gate.Paused(uint8(prio), dur(now))
	}
	n.llDrops = append(n.llDrops, d)
}

// kick transmits on port p now if it is free, or arms its next departure.
func (s *Switch) kick(p int, now int64) {
	at, ok, _ := s.tm.NextDeparture(p, now)
	if !ok {
		return
	}
	if at <= now {
		s.transmit(p, now)
		return
	}
	s.arm(p, at)
}

func (s *Switch) arm(p int, at int64) {
	sp := &s.ports[p]
	if sp.armed >= 0 && sp.armed <= at {
		return
	}
	sp.armed = at
	s.net.schedule(engine.Event{At: at, Kind: evSwitchTx, A: int32(s.idx), B: int32(p)})
}

// txEvent is a pending transmit attempt on port p.
func (s *Switch) txEvent(p int, at int64) {
	sp := &s.ports[p]
	if sp.armed != at {
		return // superseded by an earlier attempt
	}
	sp.armed = -1
	s.transmit(p, at)
}

// transmit sends the next frame of port p at now, if the TM gives one, and arms
// the next attempt.
func (s *Switch) transmit(p int, now int64) {
	n := s.net
	d, ok, err := s.tm.Dequeue(p, now)
	if err != nil {
		n.fail(fmt.Errorf("switch %d: dequeue: %w", s.node, err))
		return
	}
	if !ok {
		if at, ok, _ := s.tm.NextDeparture(p, now); ok && at > now {
			s.arm(p, at)
		}
		return
	}
	sp := &s.ports[p]
	i := d.Handle
	if n.onTx != nil {
		n.onTx(s.node, p, d.TxStart, n.pool.frame(i))
	}
	n.acct.unqueue(n.pool.s(i).cls, int(n.pool.s(i).n))
	n.send(sp.peer, sp.peerPort, i, d.DeliverAt)
	sp.stats.TxFrames++
	sp.stats.TxBytes += uint64(n.pool.s(i).n)
	c := s.cnp
	s.cnp = -1
	if at, ok, _ := s.tm.NextDeparture(p, d.TxEnd); ok {
		s.arm(p, at)
	}
	if d.PFC.Kind != tm.PFCNone {
		s.sendPFC(&d.PFC)
	}
	if c >= 0 {
		// The CNP re-enters on the congested port (the pipeline recirculated it).
		m := &n.pool.s(c).meta
		s.enqueue(c, int(m.IngressPort)-1, int(m.EgressPort)-1, now)
	}
}

// sendPFC puts the PFC frame the TM asked for on the wire of its port.
func (s *Switch) sendPFC(ev *tm.PFCEvent) {
	n := s.net
	sp := &s.ports[ev.Port]
	i := n.pool.get(wire.PFCFrameBytes)
	m, err := wire.BuildPFC(n.pool.buf(i), sp.mac, ev.ClassEnable, ev.Quanta)
	if err != nil {
		n.fail(fmt.Errorf("switch %d: build PFC: %w", s.node, err))
		n.pool.put(i)
		return
	}
	n.pool.s(i).n = int32(m)
	n.pool.s(i).cls = classControl
	n.acct.made(classControl, m)
	for prio := range tm.NumPriorities {
		if ev.ClassEnable&(1<<prio) != 0 {
			s.pl.CountPFCSent(uint16(ev.Port+1), uint8(prio), ev.Quanta[prio] > 0, uint32(m))
		}
	}
	switch ev.Kind {
	case tm.PFCXoff:
		sp.stats.PFCXoffTx++
	case tm.PFCXon:
		sp.stats.PFCXonTx++
	case tm.PFCRefresh:
		sp.stats.PFCRefreshTx++
	}
	n.send(sp.peer, sp.peerPort, i, ev.DeliverAt)
	s.armTimer()
}

// armTimer arms the TM timer event (XOFF refresh, pause expiry) if one is due.
func (s *Switch) armTimer() {
	at, ok := s.tm.NextTimer()
	if !ok || (s.timer >= 0 && s.timer <= at) {
		return
	}
	s.timer = at
	s.net.schedule(engine.Event{At: at, Kind: evSwitchTimer, A: int32(s.idx)})
}

// timerEvent runs the TM's timers.
func (s *Switch) timerEvent(at int64) {
	if s.timer != at {
		return
	}
	s.timer = -1
	s.pfcEv = s.tm.Advance(at, s.pfcEv[:0])
	for k := range s.pfcEv {
		s.sendPFC(&s.pfcEv[k])
	}
	s.armTimer()
	for p := range s.ports {
		if s.ports[p].armed < 0 {
			s.kick(p, at)
		}
	}
}
