package pipeline

import (
	"encoding/binary"
	"fmt"

	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/p4src/window"
	"github.com/fastcnp/fastcnp/wire"
)

// OnEnqueue is step 10, the enqueue accounting: call it when the traffic manager
// queues a forwarded packet (with the Meta of its IngressResult). It sets the flow
// fields of meta. Lossy packets are ignored.
func (p *Pipeline) OnEnqueue(meta *PacketMeta) {
	if p.prof.Tofino() {
		p.tnaEnqueue(meta)
		return
	}
	meta.Tracked = false
	if !meta.Lossless || meta.EgressPort >= p4src.NumPorts {
		return
	}
	port, n := meta.EgressPort, uint64(meta.AcctLen)
	pc := &p.regs.port[port]
	pc.queueBytes = (pc.queueBytes + n) & 0xFFFFFFFF
	if pc.paused == 1 {
		pc.rxBytes = (pc.rxBytes + n) & 0xFFFFFFFF
	}
	if !meta.HasIPv4 {
		return
	}
	h := FlowHash(meta.SrcAddr, meta.DstAddr)
	s := h & (p4src.FlowSlots - 1)
	meta.FlowHash, meta.FlowSlot = h, uint16(s)
	fc := &p.regs.flow[s]
	if fc.bytes == 0 || fc.key == uint64(h) {
		fc.key = uint64(h)
		fc.bytes = (fc.bytes + n) & 0xFFFFFFFF
		meta.Tracked = true
		return
	}
	p.count(p4src.CounterFlowCollisions, port, meta.AcctLen)
}

// Egress is the dequeue hook: the egress control for frame (the Frame of its
// IngressResult) leaving on port at time now, with the meta OnEnqueue updated. It
// counts the packet in queue_dequeued, may CE-mark frame in place and may make a
// switch CNP (see EgressResult). The error is
// only for a port >= NUM_PORTS or a port different from meta.EgressPort.
func (p *Pipeline) Egress(frame []byte, port uint16, now int64, meta *PacketMeta, out *EgressResult) error {
	out.Frame, out.Marked, out.CNP, out.CNPFrame, out.CNPPort, out.NumDigests = frame, false, false, nil, 0, 0
	if port >= p4src.NumPorts || port != meta.EgressPort {
		return fmt.Errorf("egress on port %d (meta port %d): %w", port, meta.EgressPort, ErrPort)
	}
	p.count(p4src.CounterQueueDequeued, p4src.QueueIndex(port, meta.Priority), meta.AcctLen)
	// 7a. The port's byte count, with the record step 7b adds (the TNA program
	// keeps it in two 32-bit registers with a carry: the same 64-bit count).
	add := intAdds(frame, meta)
	pc := &p.regs.port[port]
	tx := pc.txBytes
	pc.txBytes = tx + uint64(meta.AcctLen)
	if add {
		pc.txBytes += wire.INTHopLen
	}
	if p.prof.Tofino() {
		p.tnaEgress(frame, port, uint64(now)&mask48, now, meta, out, add, tx)
		return nil
	}
	if !meta.Lossless {
		return nil
	}
	p.egress(frame, port, uint64(now)&mask48, now, meta, out, add, tx)
	return nil
}

// INTGrowth returns the bytes Egress will add to a forwarded frame (with the
// Meta of its IngressResult): wire.INTHopLen when egress step 7b adds an INT
// record, else 0. A traffic manager can charge the frame at its size on the
// wire when it queues it.
func (p *Pipeline) INTGrowth(frame []byte, meta *PacketMeta) int {
	if intAdds(frame, meta) {
		return wire.INTHopLen
	}
	return 0
}

// intAdds reports whether egress step 7b adds an INT record to the packet: a
// port in INT mode, a lossless packet with an INT header without the echo flag
// and with fewer than INT_MAX_HOPS records.
func intAdds(frame []byte, meta *PacketMeta) bool {
	off := int(meta.INTOffset)
	return meta.PortCfg.Mode == p4src.PortModeInt && meta.Lossless && off != 0 && off+wire.INTHeaderLen <= len(frame) &&
		frame[off]&p4src.IntFlagEcho == 0 && frame[off+2] < p4src.IntMaxHops
}

func (p *Pipeline) egress(frame []byte, port uint16, now uint64, rawNow int64, meta *PacketMeta, out *EgressResult, intAdd bool, tx uint64) {
	r := &p.regs
	pc := &r.port[port]
	cfg := &meta.PortCfg
	n := uint64(meta.AcctLen)
	// 1. Dequeue accounting.
	qlen := pc.queueBytes
	pc.queueBytes = (qlen - n) & 0xFFFFFFFF // bit<32>, as in P4
	var data uint64
	fc := &r.flow[meta.FlowSlot%p4src.FlowSlots]
	if meta.Tracked {
		data = fc.bytes
		fc.bytes = (data - n) & 0xFFFFFFFF
	}
	// 2. Pause expiry. RESUME reads port_queue_bytes: this packet already left.
	if pc.paused == 1 && now >= pc.pauseExpire {
		p.emitEgress(out, p.resume(port, now, cfg, uint32(pc.queueBytes)), rawNow)
	}
	switch cfg.Mode {
	case p4src.PortModeFastcnp, p4src.PortModeFastcnpNoPFCState:
		// 3. The port state machine. The ablation mode fastcnp-no-pfc-state sees
		// every port as determined: a queue at or above Qth is congested.
		congested := false
		switch {
		case cfg.Mode == p4src.PortModeFastcnpNoPFCState:
			pc.undetermined = 0
			congested = qlen >= uint64(cfg.QthBytes)
		case pc.undetermined == 0:
			congested = qlen >= uint64(cfg.QthBytes)
		case now < pc.checkAt:
			return // protect victims: no CNP, no mark
		case qlen < uint64(cfg.QthBytes):
			pc.undetermined = 0
			p.emitEgress(out, Digest{DigestID: p4src.DigestPortState, Port: port, Event: p4src.PortEventCheckDrained,
				QueueBytes: uint32(qlen), RxBytes: uint32(pc.rxBytes), TimestampNs: now}, rawNow)
		case qlen > pc.qSnapshot:
			pc.undetermined = 0
			congested = true
			p.emitEgress(out, Digest{DigestID: p4src.DigestPortState, Port: port, Event: p4src.PortEventCheckCongested,
				QueueBytes: uint32(qlen), RxBytes: uint32(pc.rxBytes), TimestampNs: now}, rawNow)
		default:
			pc.qSnapshot = qlen
			pc.checkAt = (now + uint64(cfg.TcheckNs)) & mask48
		}
		if !congested {
			return
		}
		if meta.ConnHit && meta.ConnFlags&p4src.ConnFlagCNPTarget != 0 && meta.Tracked && meta.HasBTH {
			last := fc.lastCNP
			if last != 0 && (now-last)&mask48 < uint64(cfg.CNPGapNs) {
				return // inside the gap: nothing
			}
			fc.lastCNP = now
			digest := false
			if last := r.portLastDigest[port]; last == 0 || (now-last)&mask48 >= p4src.DigestMinGapNs {
				r.portLastDigest[port] = now
				digest = true
			}
			p.switchCNP(frame, port, now, rawNow, uint32(qlen), uint32(data), uint32(qlen), digest, meta, out)
			return
		}
		p.markCE(frame, port, meta, out)
	case p4src.PortModeInt:
		// 7b. The HPCC hop record, in front of the others.
		if intAdd {
			out.Frame = p.addINTRecord(frame, meta, wire.INTHop{TimestampNs: now, Port: port, TxBytes: tx,
				QueueBytes: uint32(pc.queueBytes), RateBytesPerMs: cfg.RateBytesPerMs})
		}
	case p4src.PortModeECN:
		// 4. RED.
		kmin, kmax := uint64(cfg.RedKminBytes), uint64(cfg.RedKmaxBytes)
		switch {
		case qlen <= kmin:
			return
		case qlen >= kmax:
		default:
			if p.rand16()*(kmax-kmin) >= uint64(cfg.RedPmaxQ16)*(qlen-kmin) {
				return
			}
		}
		p.markCE(frame, port, meta, out)
	}
}

// cnpCloneSession reports whether clone session CNP_CLONE_SESSION exists.
func (p *Pipeline) cnpCloneSession() bool {
	_, ok := p.clones[p4src.CNPCloneSession]
	return ok
}

// emitEgress sends a port-state digest made at dequeue. v1model sends it from the
// next ingress pass of the E2E clone to CNP_CLONE_SESSION (BMv2 sends digests only
// at the end of ingress), so without that session there is none; likewise here.
func (p *Pipeline) emitEgress(out *EgressResult, d Digest, now int64) {
	if p.cnpCloneSession() {
		p.emit(out.Digests[:], &out.NumDigests, d, now)
	}
}

func (p *Pipeline) markCE(frame []byte, port uint16, meta *PacketMeta, out *EgressResult) {
	if !meta.HasIPv4 || int(meta.L3Offset)+wire.IPv4Len > len(frame) {
		return
	}
	prev, err := wire.MarkCE(frame[meta.L3Offset:])
	if err == nil && prev.IsECT() {
		out.Marked = true
		p.count(p4src.CounterECNMarked, port, meta.AcctLen)
	}
}

// cnpWindow is step 5.
func (p *Pipeline) cnpWindow(cfg *PortConfig, data, qlen uint32) uint32 {
	var fq, pq uint16
	if act, pr, _ := p.tFlowLog2.lookupLPM(data); act == p4src.ActionSetFlowLog2 {
		fq = uint16(pr[0])
	}
	if act, pr, _ := p.tPortLog2.lookupLPM(qlen); act == p4src.ActionSetPortLog2 {
		pq = uint16(pr[0])
	}
	k, neg := window.K(cfg.BDPLog2Q6, fq, pq)
	if neg {
		return window.Clamp(cfg.BDPBytes, cfg.MTUBytes, 0)
	}
	w := cfg.BDPBytes
	if act, pr, _ := p.tExp2.lookupExact(uint64(k), 0, 0); act == p4src.ActionSetWindow {
		w = uint32(pr[0])
	}
	return window.Clamp(cfg.BDPBytes, cfg.MTUBytes, w)
}

// switchCNP is steps 5 and 6: count, digest (when the caller's digest gap let it),
// build the CNP and route it through ingress. The window is computed from data and
// sum (v1model: the flow's and the port's queued bytes; Tofino: their departure
// shares); qlen is the queue length the CNP and its digest report.
func (p *Pipeline) switchCNP(frame []byte, port uint16, now uint64, rawNow int64, qlen, data, sum uint32, digest bool, meta *PacketMeta, out *EgressResult) {
	cfg := &meta.PortCfg
	win := p.cnpWindow(cfg, data, sum)
	// The data packet's decision ends here; what follows happens in v1model in the E2E
	// clone's own egress pass. Without clone session CNP_CLONE_SESSION BMv2 makes no
	// clone and the data plane cannot tell: no CNP, nothing counted in switch_cnp_sent,
	// no cnp_digest_t (it rides the clone), and the data packet is not CE-marked (its
	// egress pass already decided on a CNP). flow_last_cnp and port_last_digest stay
	// written, as in P4.
	if !p.cnpCloneSession() {
		return
	}
	p.count(p4src.CounterSwitchCNPSent, port, meta.AcctLen)
	if digest {
		p.emit(out.Digests[:], &out.NumDigests, Digest{DigestID: p4src.DigestCNP, Port: port, SrcAddr: meta.SrcAddr,
			DstAddr: meta.DstAddr, WindowBytes: win, QueueBytes: qlen, TimestampNs: now}, rawNow)
	}
	l3 := int(meta.L3Offset)
	if l3+wire.IPv4Len > len(frame) || l3 > wire.EthernetLen+wire.Dot1QLen {
		return
	}
	// Ethernet and 802.1Q tag copied from the data packet (the E2E clone keeps
	// them; ingress routing rewrites the MACs).
	b := p.cnpBuf[:l3+CNPFrameLen-wire.EthernetLen]
	be := binary.BigEndian
	copy(b[:l3], frame[:l3])
	ip := b[l3:]
	copy(ip[:wire.IPv4Len], frame[l3:l3+wire.IPv4Len])
	ip[0] = 0x45
	ip[1] = p4src.CNPDSCP << 2
	be.PutUint16(ip[2:], CNPFrameLen-wire.EthernetLen) // 60
	ip[8] = 64
	ip[9] = wire.IPProtoUDP
	be.PutUint32(ip[12:], meta.DstAddr)
	be.PutUint32(ip[16:], meta.SrcAddr)
	_ = wire.SetIPv4Checksum(ip)
	udp := ip[wire.IPv4Len:]
	be.PutUint16(udp[0:], meta.UDPSrcPort)
	be.PutUint16(udp[2:], p4src.RoCEUDPPort)
	be.PutUint16(udp[4:], CNPFrameLen-wire.EthernetLen-wire.IPv4Len)
	be.PutUint16(udp[6:], 0)
	bth := udp[wire.UDPLen:]
	clear(bth[:wire.BTHLen+wire.CNPExtLen])
	bth[0] = wire.OpCNP
	be.PutUint16(bth[2:], meta.PKey)
	be.PutUint32(bth[4:], meta.SenderQPN&0xFFFFFF) // byte 4 stays 0
	ext := wire.CNPExt{Version: wire.CNPExtVersion, Flags: wire.CNPExtWindowValid | wire.CNPExtBySwitch,
		SwitchID: cfg.SwitchID, Window: win, Port: port, QueueBytes: qlen}
	_, _ = ext.Encode(bth[wire.BTHLen:])
	_ = wire.SetICRC(ip)
	// Recirculate: the CNP enters ingress on the congested port.
	res := &p.cnpRes
	p.ingress(b, port, rawNow, res)
	if res.Verdict != VerdictForward {
		return
	}
	out.CNP, out.CNPFrame, out.CNPPort, out.CNPMeta = true, res.Frame, res.EgressPort, res.Meta
}

// addINTRecord writes frame with rec inserted after its INT header into p.intBuf
// (grown only for frames above 2 KiB): the hop count + 1, the IPv4 total length
// (checksum updated incrementally) and the UDP length + INTHopLen. The ICRC does
// not cover INT bytes and stays.
func (p *Pipeline) addINTRecord(frame []byte, meta *PacketMeta, rec wire.INTHop) []byte {
	n := len(frame) + wire.INTHopLen
	if cap(p.intBuf) < n {
		p.intBuf = make([]byte, n)
	}
	b := p.intBuf[:n]
	at := int(meta.INTOffset) + wire.INTHeaderLen
	copy(b, frame[:at])
	_, _ = rec.Encode(b[at:])
	copy(b[at+wire.INTHopLen:], frame[at:])
	b[meta.INTOffset+2]++
	ip := b[meta.L3Offset:]
	old := binary.BigEndian.Uint16(ip[2:])
	binary.BigEndian.PutUint16(ip[2:], old+wire.INTHopLen)
	updateCsum(ip, 2, old)
	udp := ip[wire.IPv4Len:]
	binary.BigEndian.PutUint16(udp[4:], binary.BigEndian.Uint16(udp[4:])+wire.INTHopLen)
	return b
}
