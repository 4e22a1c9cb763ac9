package pipeline

import (
	"fmt"
	"strings"

	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/p4src/window"
	"github.com/fastcnp/fastcnp/wire"
)

// Profile is the compiled program a Pipeline models. The control plane (tables, IDs,
// counters, digests) is the same for every profile; what differs is how the data
// plane keeps its state (docs/tofino.md).
type Profile uint8

// Profiles.
const (
	// ProfileV1Model is p4src/v1model (BMv2; fastcnp-switch runs it): queue and
	// flow bytes counted by the program, pauses from PFC frames with their expiry
	// time, 48-bit times. The default.
	ProfileV1Model Profile = iota
	// ProfileTofino1 is p4src/tna compiled for Tofino 1 (tna): the queue depth in
	// 80-byte traffic-manager cells, pauses framed by PFC frames or inferred from
	// departure gaps and ended at the first departure after them, departure
	// shares instead of per-flow queued bytes, 32-bit register times.
	ProfileTofino1
	// ProfileTofino2 is the same program compiled for Tofino 2 (t2na): 176-byte cells.
	ProfileTofino2
)

var profileNames = [...]string{ProfileV1Model: "v1model", ProfileTofino1: "tofino1", ProfileTofino2: "tofino2"}

func (pr Profile) String() string {
	if int(pr) < len(profileNames) {
		return profileNames[pr]
	}
	return fmt.Sprintf("Profile(%d)", pr)
}

// Profiles lists every profile, v1model first.
func Profiles() []Profile { return []Profile{ProfileV1Model, ProfileTofino1, ProfileTofino2} }

// ParseProfile reads a profile name (v1model, tofino1, tofino2).
func ParseProfile(s string) (Profile, error) {
	for i, n := range profileNames {
		if strings.EqualFold(s, n) {
			return Profile(i), nil
		}
	}
	return 0, fmt.Errorf("profile %q: want one of %s: %w", s, strings.Join(profileNames[:], ", "), ErrInvalidArgument)
}

// Tofino reports whether the profile is a TNA program.
func (pr Profile) Tofino() bool { return pr == ProfileTofino1 || pr == ProfileTofino2 }

// CellBytes is the traffic manager's buffer cell (the unit of deq_qdepth), 0 for v1model.
func (pr Profile) CellBytes() uint32 {
	switch pr {
	case ProfileTofino1:
		return p4src.Tofino1CellBytes
	case ProfileTofino2:
		return p4src.Tofino2CellBytes
	}
	return 0
}

// cells is the number of whole cells a frame of n bytes occupies in the traffic
// manager. The model counts the frame; the TNA program's bridged metadata and the
// traffic manager's own per-packet overhead are not modelled (docs/tofino.md).
func (pr Profile) cells(n uint32) uint32 {
	c := pr.CellBytes()
	return (n + c - 1) / c
}

// epochCount is one {epoch, bytes} pair register cell of the departure shares.
type epochCount struct{ epoch, bytes uint32 }

// flowOwnerCell is flow_owner: the fingerprint of the flow that owns a slot and its
// last departure epoch + 2 (so that a never-used cell, 0, reads as stale).
type flowOwnerCell struct{ fp, tag uint32 }

// tnaState is the TNA program's data-plane state (docs/tofino.md, "State by gress"),
// one field per register, plus cells, the traffic manager's queue depths that the
// program reads as deq_qdepth. Times are 32-bit nanoseconds.
type tnaState struct {
	cells [p4src.NumPorts][8]uint32
	// Egress, per port.
	lastDequeue, lastQdBytes, pfcPause, pfcResume, lastRx, checkAt, checkQlen1, lastDigest [p4src.NumPorts]uint32
	portDeparted                                                                           [2][p4src.NumPorts]epochCount
	// Egress, per flow slot.
	flowOwner    [p4src.FlowSlots]flowOwnerCell
	flowDeparted [2][p4src.FlowSlots]epochCount
	flowLastCNP  [p4src.FlowSlots]uint32
}

// tnaEnqueue is the traffic manager's side of an enqueue: the queue (port, priority)
// grows by the frame's cells, whatever its class (deq_qdepth counts every packet of
// the queue). The TNA program itself does nothing at enqueue.
func (p *Pipeline) tnaEnqueue(meta *PacketMeta) {
	meta.Tracked = false
	if meta.EgressPort >= p4src.NumPorts {
		return
	}
	p.tna.cells[meta.EgressPort][meta.Priority&7] += p.prof.cells(uint32(meta.FrameLen))
}

// tnaPFC is ingress step 4 of the TNA program: a PFC / PAUSE frame received on port
// is an event for egress port `port` (sent there on PFC_EVENT_QID, which overtakes
// the paused lossless queue; the model takes its latency as zero). PAUSE opens a pause
// (a PAUSE digest, carried to the controller like every egress digest) or refreshes
// it; XON records the end. The pause is closed, and judged, at the next departure.
func (p *Pipeline) tnaPFC(f *wire.Frame, port uint16, now uint64, rawNow int64, acct uint32, out *IngressResult) {
	cfg := p.portConfig(port)
	q, ok := f.PauseQuanta(cfg.LosslessPriority)
	if !ok {
		return
	}
	t := p.tna
	now32 := uint32(now) | 1 // 0 marks "none" in port_pfc_pause_ns / port_pfc_resume_ns
	if q > 0 {
		p.count(p4src.CounterPFCPauseRx, port, acct)
		if t.pfcPause[port] == 0 {
			t.pfcPause[port] = now32
			if p.cnpCloneSession() {
				p.emit(out.Digests[:], &out.NumDigests, Digest{DigestID: p4src.DigestPortState, Port: port,
					Event: p4src.PortEventPause, QueueBytes: t.lastQdBytes[port], TimestampNs: now}, rawNow)
			}
		}
		t.pfcResume[port] = 0
		return
	}
	p.count(p4src.CounterPFCResumeRx, port, acct)
	if t.pfcPause[port] != 0 {
		t.pfcResume[port] = now32
	}
}

// tnaEgress is the TNA program's egress for a packet leaving queue (port, priority)
// at now (48-bit ns): the traffic manager's depth drops by its cells, then a lossless
// packet runs the departure bookkeeping, the pause decision, the departure shares,
// the state machine and RED or a CNP (docs/tofino.md, "Egress, per lossless
// departure").
func (p *Pipeline) tnaEgress(frame []byte, port uint16, now uint64, rawNow int64, meta *PacketMeta, out *EgressResult, intAdd bool, tx uint64) {
	t := p.tna
	q := &t.cells[port][meta.Priority&7]
	*q -= min(*q, p.prof.cells(uint32(meta.FrameLen)))
	if !meta.Lossless {
		return
	}
	cell := p.prof.CellBytes()
	cfg := &meta.PortCfg
	n := meta.AcctLen
	qd := *q // deq_qdepth: the queue this packet leaves behind
	qlen := qd*cell + n
	now32 := uint32(now)

	// 1. Departure bookkeeping: four RegisterActions, each returns the old word.
	// port_last_qdepth_bytes holds the depth in bytes (the program converts it once).
	last, lastQdBytes := t.lastDequeue[port], t.lastQdBytes[port]
	t.lastDequeue[port], t.lastQdBytes[port] = now32, qd*cell
	pfcStart, pfcEnd := t.pfcPause[port], t.pfcResume[port]
	t.pfcPause[port], t.pfcResume[port] = 0, 0

	// 2. The pause: framed by a PAUSE frame, or inferred from a gap after a
	// departure that left packets waiting.
	gapNs := cfg.PauseQuantumPs >> p4src.PauseGapPsShift
	framed := pfcStart != 0
	inferred := !framed && lastQdBytes != 0 && gapNs != 0 && now32-last > gapNs
	var events [2]Digest
	nev := 0
	hold, congested := false, false
	if framed || inferred {
		start, end := pfcStart, now32
		if inferred {
			start = last
			events[nev] = Digest{DigestID: p4src.DigestPortState, Port: port, Event: p4src.PortEventPause,
				QueueBytes: lastQdBytes, TimestampNs: (now - uint64(now32-last)) & mask48}
			nev++
		} else if pfcEnd != 0 {
			end = pfcEnd
		}
		pause := end - start
		rx := int64(qlen) - int64(lastQdBytes)
		rx = max(rx, 0)
		t.lastRx[port] = uint32(rx)
		ev, undet := p.tnaResume(cfg, qlen, uint32(rx), pause)
		events[nev] = Digest{DigestID: p4src.DigestPortState, Port: port, Event: ev, QueueBytes: qlen,
			RxBytes: uint32(rx), TimestampNs: now}
		nev++
		if undet {
			t.checkAt[port] = now32 + cfg.TcheckNs
			t.checkQlen1[port] = qlen + 1
			hold = true // Tcheck > 0: not yet; Tcheck = 0: re-armed at qlen, not congested
		} else {
			t.checkQlen1[port] = 0
			congested = qlen >= cfg.QthBytes
		}
	}

	// 3. Departure shares (every lossless departure, any mode).
	sum, data, tracked := p.tnaShares(port, now, n, meta)
	meta.Tracked = tracked

	// 4. The state machine (mode fastcnp), when no RESUME decided for this packet.
	// The ablation mode fastcnp-no-pfc-state has none: a queue at or above Qth is
	// congested.
	if cfg.Mode == p4src.PortModeFastcnpNoPFCState && !(framed || inferred) {
		t.checkQlen1[port] = 0
		congested = qlen >= cfg.QthBytes
	}
	if cfg.Mode == p4src.PortModeFastcnp && !(framed || inferred) {
		due := int32(now32-t.checkAt[port]) >= 0
		if due {
			t.checkAt[port] = now32 + cfg.TcheckNs // tentative re-arm
		}
		high := qlen >= cfg.QthBytes
		old := t.checkQlen1[port]
		switch {
		case old == 0: // DETERMINED
			congested = high
		case !due:
			hold = true
		case !high:
			t.checkQlen1[port] = 0
			events[nev] = Digest{DigestID: p4src.DigestPortState, Port: port, Event: p4src.PortEventCheckDrained,
				QueueBytes: qlen, RxBytes: t.lastRx[port], TimestampNs: now}
			nev++
		case qlen+1 > old:
			t.checkQlen1[port] = 0
			congested = true
			events[nev] = Digest{DigestID: p4src.DigestPortState, Port: port, Event: p4src.PortEventCheckCongested,
				QueueBytes: qlen, RxBytes: t.lastRx[port], TimestampNs: now}
			nev++
		default:
			t.checkQlen1[port] = qlen + 1
		}
	}
	// The digests leave with the mirrored carrier: none without the session.
	if p.cnpCloneSession() {
		for i := range nev {
			p.emit(out.Digests[:], &out.NumDigests, events[i], rawNow)
		}
	}

	switch cfg.Mode {
	case p4src.PortModeFastcnp, p4src.PortModeFastcnpNoPFCState:
		if hold || !congested {
			return
		}
		if meta.ConnHit && meta.ConnFlags&p4src.ConnFlagCNPTarget != 0 && tracked && meta.HasBTH {
			s := meta.FlowSlot
			if last := t.flowLastCNP[s]; last != 0 && now32-last < cfg.CNPGapNs {
				return
			}
			t.flowLastCNP[s] = now32
			// At most two digests ride one carrier: a cnp_digest_t behind two port
			// events waits for the port's next CNP.
			digest := false
			if nev < 2 {
				if last := t.lastDigest[port]; last == 0 || now32-last >= p4src.DigestMinGapNs {
					t.lastDigest[port] = now32
					digest = true
				}
			}
			p.switchCNP(frame, port, now, rawNow, qlen, data, sum, digest, meta, out)
			return
		}
		p.markCE(frame, port, meta, out)
	case p4src.PortModeECN:
		if p.tnaRED(cfg, qlen) {
			p.markCE(frame, port, meta, out)
		}
	case p4src.PortModeInt:
		// 7b. The HPCC hop record; its queue is the traffic manager's
		// deq_qdepth in cells.
		if intAdd {
			out.Frame = p.addINTRecord(frame, meta, wire.INTHop{TimestampNs: now, Port: port, TxBytes: tx,
				QueueBytes: qd * cell, RateBytesPerMs: cfg.RateBytesPerMs})
		}
	}
}

// tnaResume is spec 01's RESUME decision with the TNA program's arithmetic: rx > C*T
// as log2(rx) + log2(10^6) > log2(rate) + log2(T), each log2 the window generator's
// LPM lookup (compiled in as constant tables); a T of 0 reads as 1 ns, an rx of 0
// never beats. It returns the event and whether the port becomes UNDETERMINED.
func (p *Pipeline) tnaResume(cfg *PortConfig, qlen, rx, pause uint32) (uint8, bool) {
	if qlen < cfg.QthBytes {
		return p4src.PortEventResumeNotCongested, false
	}
	if cfg.Mode == p4src.PortModeFastcnpNoPFCState {
		return p4src.PortEventResumeCongested, false // the ablation: never undetermined
	}
	lrx, ok := window.Log2Q6(rx)
	lt, _ := window.Log2Q6(pause)
	lrate, _ := window.Log2Q6(cfg.RateBytesPerMs)
	if ok && uint32(lrx)+p4src.Log2NsPerMsQ6 > uint32(lrate)+uint32(lt) {
		return p4src.PortEventResumeCongested, false
	}
	return p4src.PortEventResumeUndetermined, true
}

// tnaShares updates the departure shares with this packet (n bytes) and returns the
// port's and the flow's departures over the current and the previous epoch (both
// including it), and whether the packet's flow owns its slot. An untracked flow
// (another flow holds the slot) is counted in flow_collisions.
func (p *Pipeline) tnaShares(port uint16, now uint64, n uint32, meta *PacketMeta) (sum, data uint32, tracked bool) {
	t := p.tna
	epoch := uint32(now >> p4src.WindowEpochShift)
	par := epoch & 1
	sum = addDeparture(&t.portDeparted[par][port], epoch, n) + prevDeparture(&t.portDeparted[par^1][port], epoch)
	if !meta.HasIPv4 {
		return sum, 0, false
	}
	h := FlowHash(meta.SrcAddr, meta.DstAddr)
	s := h & (p4src.FlowSlots - 1)
	meta.FlowHash, meta.FlowSlot = h, uint16(s)
	own := &t.flowOwner[s]
	if own.fp != h && epoch+2-own.tag < 2 {
		p.count(p4src.CounterFlowCollisions, port, n)
		return sum, 0, false
	}
	*own = flowOwnerCell{fp: h, tag: epoch + 2}
	data = addDeparture(&t.flowDeparted[par][s], epoch, n) + prevDeparture(&t.flowDeparted[par^1][s], epoch)
	return sum, data, true
}

// addDeparture is the current epoch's RegisterAction: add n, or restart at n.
func addDeparture(c *epochCount, epoch, n uint32) uint32 {
	if c.epoch == epoch {
		c.bytes += n
	} else {
		*c = epochCount{epoch, n}
	}
	return c.bytes
}

// prevDeparture is the other parity's RegisterAction: the previous epoch's bytes, or 0.
func prevDeparture(c *epochCount, epoch uint32) uint32 {
	if c.epoch == epoch-1 {
		return c.bytes
	}
	return 0
}

// tnaRED is spec 02's RED without a multiplier: between Kmin and Kmax the window
// tables give ratio = exp2(1024 + log2(q-Kmin) - log2(Kmax-Kmin)) (65536 * d/R; a
// miss reads as 0), and the packet is marked when r1 < Pmax_q16 and r2 < ratio for
// two independent 16-bit random numbers.
func (p *Pipeline) tnaRED(cfg *PortConfig, qlen uint32) bool {
	kmin, kmax := cfg.RedKminBytes, cfg.RedKmaxBytes
	switch {
	case qlen <= kmin:
		return false
	case qlen >= kmax:
		return true
	}
	var ld, lr uint32
	if act, pr, _ := p.tFlowLog2.lookupLPM(qlen - kmin); act == p4src.ActionSetFlowLog2 {
		ld = uint32(pr[0])
	}
	if act, pr, _ := p.tPortLog2.lookupLPM(kmax - kmin); act == p4src.ActionSetPortLog2 {
		lr = uint32(pr[0])
	}
	var ratio uint32
	if p4src.REDRatioKOffset+ld >= lr {
		if act, pr, _ := p.tExp2.lookupExact(uint64(p4src.REDRatioKOffset+ld-lr), 0, 0); act == p4src.ActionSetWindow {
			ratio = uint32(pr[0])
		}
	}
	r := p.rand32()
	return r&0xFFFF < uint32(cfg.RedPmaxQ16) && r>>16 < ratio
}
