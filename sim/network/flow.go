package network

import (
	"encoding/binary"
	"fmt"

	"github.com/fastcnp/fastcnp/host/agent"
	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/sim/hpcc"
	"github.com/fastcnp/fastcnp/wire"
)

// flowState is one flow: its sender (at spec.Src) and receiver (at spec.Dst), both
// the host agent's state machines, and what it measured. Its QP numbers are id+1 at
// both ends: the receiver's is the DestQP of its data, the sender's that of its ACKs
// and CNPs.
type flowState struct {
	net     *Network
	id      int
	spec    hpcc.Flow
	sport   uint16
	src     *Host
	dst     *Host
	alg     cc.Algorithm
	snd     *agent.Sender
	rcv     *agent.Receiver
	back    agent.Path // receiver -> sender (ACKs, NP CNPs)
	tmpl    []byte     // the data frames' headers (Ethernet to BTH, and an empty INT header for HPCC)
	wake    int64      // the sender's NextWake, cached by the NIC
	started bool
	done    bool
	finish  int64
	conn    int        // conn_index of its rdma_connection entries, -1 none
	inc     *incWorker // an INC worker's stream (inc.go), nil for a flow
	stats   FlowStats
	// spec 03 RTT sampling: one packet timed at a time.
	rttArmed bool
	rttPSN   uint32
	rttSent  int64
	rtts     []RTTSample
	// payload delivered in order, sampled for rates
	delivered int64
}

func (f *flowState) qpn() uint32 { return uint32(f.id + 1) }

// startFlow posts the flow's message at now: its sender runs the mode's algorithm
// (Config.Algorithm if set; plain dcqcn for a legacy flow), its receiver the NP in
// the DCQCN modes; in the fastcnp modes its connection is announced.
func (n *Network) startFlow(f *flowState, now int64) error {
	if f.inc != nil {
		return n.startINC(f, now)
	}
	ms, _ := n.cfg.Mode.spec()
	c, err := n.ccConfig(f.src, ms)
	if err != nil {
		return fmt.Errorf("flow %d: %w", f.id, err)
	}
	legacy := n.cfg.Legacy != nil && n.cfg.Legacy[f.id]
	name := ms.algorithm
	if legacy {
		name = "dcqcn"
	}
	if n.cfg.Algorithm != "" {
		name = n.cfg.Algorithm
	}
	if n.cfg.Tune != nil {
		n.cfg.Tune(&c)
	}
	alg, err := cc.New(name, c)
	if err != nil {
		return fmt.Errorf("flow %d: %w", f.id, err)
	}
	intHdr := cc.NeedsINT(name)
	snd, err := agent.NewSender(agent.SenderConfig{
		MSS: n.cfg.PayloadBytes, LineGap: fcsBytes + wire.PreambleIFGBytes, AckEvery: n.cfg.AckEvery,
		BurstPackets: 1, INT: intHdr,
	}, alg)
	if err != nil {
		return fmt.Errorf("flow %d: %w", f.id, err)
	}
	if err := snd.Post(dur(now), f.spec.Size); err != nil {
		return fmt.Errorf("flow %d: %w", f.id, err)
	}
	rcv, err := agent.NewReceiver(agent.ReceiverConfig{CNPInterval: c.DCQCN.CNPInterval, NoNP: !ms.np})
	if err != nil {
		return fmt.Errorf("flow %d: %w", f.id, err)
	}
	f.alg, f.snd, f.rcv = alg, snd, rcv
	f.started = true
	f.stats.Start = now
	f.back = agent.Path{SrcMAC: f.dst.port.mac, DstMAC: n.peerMAC(f.dst), SrcIP: addr4(f.dst.ip), DstIP: addr4(f.src.ip), SrcPort: f.sport}
	fwd := agent.Path{SrcMAC: f.src.port.mac, DstMAC: n.peerMAC(f.src), SrcIP: addr4(f.src.ip), DstIP: addr4(f.dst.ip), SrcPort: f.sport}
	var b [slotBytes]byte
	m, err := fwd.BuildData(b[:], f.qpn(), &agent.Packet{Payload: 0, INT: intHdr})
	hdr := fwd.Overhead() - wire.ICRCLen
	if intHdr {
		hdr += wire.INTHeaderLen
	}
	if err != nil || m < hdr {
		return fmt.Errorf("flow %d: data header: %v", f.id, err)
	}
	f.tmpl = append(f.tmpl[:0], b[:hdr]...)
	if n.cfg.Mode.announces() && !legacy {
		if err := n.announce(f); err != nil {
			return err
		}
	}
	if f.src.held {
		if err := snd.Hold(dur(now), true); err != nil {
			return fmt.Errorf("flow %d: %w", f.id, err)
		}
	}
	f.wake = now
	f.src.qps = append(f.src.qps, f)
	f.src.kick(now)
	return nil
}

// ccConfig is the algorithm configuration of a flow sent by host h in a mode.
func (n *Network) ccConfig(h *Host, ms modeSpec) (cc.Config, error) {
	p, _ := cc.DCQCNPreset(n.cfg.DCQCNSet)
	if n.cfg.DCQCN.Set != "" {
		p = n.cfg.DCQCN
	}
	if n.cfg.CNPInterval >= 0 {
		p.CNPInterval = n.cfg.CNPInterval
	}
	c := cc.Config{
		LineRate: float64(h.port.rate), MTU: int64(agent.RoCEOverhead + n.cfg.PayloadBytes),
		BaseRTT: n.rttBase, DCQCN: p, StartRate: min(ms.startBps, float64(h.port.rate)),
		WindowRule: n.cfg.WindowRule,
	}
	if ms.set != "" {
		if err := c.UseParamSet(ms.algorithm, ms.set); err != nil {
			return c, err
		}
	}
	return c, nil
}

// dataFrame builds the data packet pkt of flow f into a new slot: the flow's header
// template with the packet's lengths, IPv4 checksum, A bit and PSN. The payload
// bytes and the ICRC are not written: nothing in the simulated network reads them
// (switches parse headers only, the receiver counts bytes).
func (n *Network) dataFrame(f *flowState, pkt *agent.Packet, now int64) int32 {
	if f.inc != nil {
		return n.incFrame(f, pkt, now)
	}
	size := len(f.tmpl) + pkt.Payload + wire.ICRCLen
	i := n.pool.get(max(size, wire.MinFrameLen))
	b := n.pool.buf(i)
	copy(b, f.tmpl[:])
	if size < wire.MinFrameLen {
		clear(b[size:wire.MinFrameLen])
	}
	ip := b[wire.EthernetLen:]
	binary.BigEndian.PutUint16(ip[2:], uint16(size-wire.EthernetLen))
	_ = wire.SetIPv4Checksum(ip[:wire.IPv4Len])
	udp := ip[wire.IPv4Len:]
	binary.BigEndian.PutUint16(udp[4:], uint16(size-wire.EthernetLen-wire.IPv4Len))
	bth := udp[wire.UDPLen:]
	a := byte(0)
	if pkt.AckReq {
		a = 0x80
	}
	bth[8] = a
	bth[9], bth[10], bth[11] = byte(pkt.PSN>>16), byte(pkt.PSN>>8), byte(pkt.PSN)
	n.pool.s(i).cls = losslessPriority
	f.stats.PacketsSent++
	if pkt.Retransmit {
		f.stats.Retransmits++
		if f.rttArmed && pkt.PSN == f.rttPSN {
			f.rttArmed = false // Karn: a retransmitted packet gives no sample
		}
	}
	if n.cfg.RTTSamples && !f.rttArmed && !pkt.Retransmit {
		// Spec 03: time the first packet sent after the previous sample's ACK.
		f.rttArmed, f.rttPSN, f.rttSent = true, pkt.PSN, now
	}
	return i
}

// data handles a data packet of the flow at its receiver.
func (f *flowState) data(ev *agent.Event, now int64) {
	n := f.net
	if f.rcv == nil {
		return
	}
	payload := len(ev.Payload)
	rep, err := f.rcv.OnData(agent.Arrival{Now: dur(now), PSN: ev.PSN, AckReq: ev.AckReq, CE: ev.CE, Payload: payload,
		INT: ev.INT && !ev.INTEcho})
	if err != nil {
		n.fail(fmt.Errorf("flow %d: receive: %w", f.id, err))
		return
	}
	if rep.Accept {
		f.delivered += int64(payload)
	}
	if rep.CNP {
		f.stats.NPCNPs++
		i := n.pool.get(slotBytes)
		m, err := f.back.BuildCNP(n.pool.buf(i), f.qpn(), nil)
		if err != nil {
			n.fail(fmt.Errorf("flow %d: CNP: %w", f.id, err))
			n.pool.put(i)
		} else {
			n.pool.s(i).n, n.pool.s(i).cls = int32(m), cnpPriority
			f.dst.cnps.push(i)
		}
	}
	if rep.Ack {
		i := n.pool.get(slotBytes)
		m, err := f.back.BuildAck(n.pool.buf(i), f.qpn(), &rep, ev.Hops[:ev.NumHops])
		if err != nil {
			n.fail(fmt.Errorf("flow %d: ACK: %w", f.id, err))
			n.pool.put(i)
		} else {
			n.pool.s(i).n, n.pool.s(i).cls = int32(m), losslessPriority
			f.dst.acks.push(i)
		}
	}
	if rep.CNP || rep.Ack {
		f.dst.kick(now)
	}
}

// ack handles an ACK or NAK of the flow at its sender, with its ECN echo and
// echoed INT records.
func (f *flowState) ack(psn uint32, syndrome uint8, fb agent.AckFeedback, now int64) {
	n := f.net
	if f.done || f.snd == nil {
		return
	}
	if err := f.snd.OnAckFeedback(dur(now), psn, syndrome, fb); err != nil {
		n.fail(fmt.Errorf("flow %d: ack: %w", f.id, err))
		return
	}
	if f.rttArmed && syndrome == wire.SyndromeACK && (psn-f.rttPSN)&wire.MaxPSN < 1<<23 {
		f.rttArmed = false
		f.rtts = append(f.rtts, RTTSample{AtNs: now, RTTNs: now - f.rttSent})
	}
	if f.snd.Done() {
		n.finishFlow(f, now)
		return
	}
	f.wake = now
	f.src.kick(now)
}

// cnp handles a CNP of the flow at its sender.
func (f *flowState) cnp(ext cc.CNPExt, now int64) {
	if f.done || f.snd == nil {
		return
	}
	if ext.BySwitch {
		f.stats.SwitchCNPsRx++
	} else {
		f.stats.NPCNPsRx++
	}
	if err := f.snd.OnCNP(dur(now), ext); err != nil {
		f.net.fail(fmt.Errorf("flow %d: cnp: %w", f.id, err))
		return
	}
	f.wake = now
	f.src.kick(now)
}
