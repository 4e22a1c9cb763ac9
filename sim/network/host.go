package network

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/fastcnp/fastcnp/host/agent"
	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/sim/engine"
	"github.com/fastcnp/fastcnp/wire"
)

// Host is one host and its NIC: one port; the send queues of its flows (one
// agent.Sender each, paced by its algorithm's rate and capped by its window), round
// robin among them; ACKs, NAKs and CNPs first (strict priority, CNPs highest); PFC
// received from the switch holds the paused priority (agent.PauseGate). Frames are
// serialised at the link rate (frame + FCS + preamble and gap, the switch's count),
// so a flow paced at line rate keeps the link exactly busy.
type Host struct {
	net   *Network
	idx   int
	node  int
	ip    uint32
	port  portEnd
	gate  *agent.PauseGate
	free  int64 // the link is busy until free
	rem   int64 // fractional ns carried by the serialiser
	armed int64 // time of the pending evHostTx, -1 none
	held  bool  // the data priority is paused (senders held)
	qps   []*flowState
	rr    int
	acks  fifo // ACKs and NAKs (priority 3)
	cnps  fifo // CNPs (priority 6)
	pf    wire.Frame
	ev    agent.Event
	hops  [wire.INTMaxHops]cc.INTHop
	stats HostStats
}

// fifo is a queue of frames (pool slots).
type fifo struct {
	q    []int32
	head int
}

func (f *fifo) push(i int32) { f.q = append(f.q, i) }
func (f *fifo) len() int     { return len(f.q) - f.head }
func (f *fifo) pop() int32 {
	i := f.q[f.head]
	f.head++
	if f.head == len(f.q) {
		f.q, f.head = f.q[:0], 0
	}
	return i
}

func dur(ns int64) time.Duration { return time.Duration(ns) }

// kick makes the NIC look for a frame to send at now (or when its link is free).
func (h *Host) kick(now int64) { h.arm(max(now, h.free)) }

func (h *Host) arm(at int64) {
	if h.armed >= 0 && h.armed <= at {
		return
	}
	h.armed = at
	h.net.schedule(engine.Event{At: at, Kind: evHostTx, A: int32(h.idx)})
}

// txEvent is a pending transmit attempt.
func (h *Host) txEvent(at int64) {
	if h.armed != at {
		return
	}
	h.armed = -1
	h.transmit(at)
}

// ser returns the link time of a frame of n bytes, carrying the fraction of a ns.
func (h *Host) ser(n int) int64 {
	num := int64(frameWireLen(n)+wire.PreambleIFGBytes)*8e9 + h.rem
	h.rem = num % h.port.rate
	return num / h.port.rate
}

// put puts frame i on the link at now.
func (h *Host) put(i int32, now int64) {
	n := h.net
	if now > h.free {
		h.rem = 0 // the link was idle: the carried fraction is stale
	}
	start := max(now, h.free)
	h.free = start + h.ser(int(n.pool.s(i).n))
	if n.onTx != nil {
		n.onTx(h.node, 0, start, n.pool.frame(i))
	}
	h.stats.TxFrames++
	h.stats.TxBytes += uint64(n.pool.s(i).n)
	n.acct.made(n.pool.s(i).cls, int(n.pool.s(i).n))
	n.send(h.port.peer, h.port.peerPort, i, h.free+h.port.delay)
	h.arm(h.free)
}

// hold tells the senders whether the data priority is paused.
func (h *Host) hold(now int64) {
	paused := h.gate.Paused(losslessPriority, dur(now))
	if paused == h.held {
		return
	}
	h.held = paused
	for _, f := range h.qps {
		if err := f.snd.Hold(dur(now), paused); err != nil {
			h.net.fail(fmt.Errorf("host %d: hold: %w", h.node, err))
		}
		f.wake = now
	}
}

// transmit sends one frame at now if one may go: CNPs, then ACKs, then data round
// robin over the flows whose pacer and window allow a packet.
func (h *Host) transmit(now int64) {
	if now < h.free {
		h.arm(h.free)
		return
	}
	h.hold(now)
	if h.cnps.len() > 0 && !h.gate.Paused(cnpPriority, dur(now)) {
		h.put(h.cnps.pop(), now)
		return
	}
	if h.held {
		if h.acks.len() > 0 || len(h.qps) > 0 {
			h.arm(int64(h.gate.Until(losslessPriority, dur(now))))
		}
		if h.cnps.len() > 0 {
			h.arm(int64(h.gate.Until(cnpPriority, dur(now))))
		}
		return
	}
	if h.acks.len() > 0 {
		h.put(h.acks.pop(), now)
		return
	}
	next := h.incDupNext(now) // an INC worker's injected copy
	if next < 0 {
		return
	}
	nq := len(h.qps)
	for k := range nq {
		j := (h.rr + k) % nq
		f := h.qps[j]
		if f.wake > now {
			next = min(next, f.wake)
			continue
		}
		pkt, ok, err := f.snd.Next(dur(now))
		if err != nil {
			h.net.fail(fmt.Errorf("flow %d: next: %w", f.id, err))
			continue
		}
		f.wake = int64(f.snd.NextWake())
		if !ok {
			next = min(next, f.wake)
			continue
		}
		h.rr = (j + 1) % nq
		h.put(h.net.dataFrame(f, &pkt, now), now)
		return
	}
	if h.cnps.len() > 0 {
		next = min(next, int64(h.gate.Until(cnpPriority, dur(now))))
	}
	if next != engine.Never && next < int64(agent.NoWake) {
		h.arm(max(next, now))
	}
}

// arrive handles a frame whose last bit reached the host at now.
func (h *Host) arrive(i int32, now int64) {
	n := h.net
	frame := n.pool.frame(i)
	n.acct.delivered(n.pool.s(i).cls, len(frame))
	defer n.pool.put(i)
	ev := &h.ev
	if err := agent.Decode(frame, &h.pf, ev); err != nil {
		h.stats.Malformed++
		return
	}
	if f := &h.pf; f.Has(wire.LayerMACControl) {
		if f.Has(wire.LayerPFC) {
			h.stats.PFCRx++
			if f.PFC.Enabled(losslessPriority) {
				n.logPFC(now, h.node, false, 0, f.PFC.Time[losslessPriority] > 0)
			}
		}
		h.gate.OnFrame(dur(now), f)
		h.hold(now)
		h.kick(now)
		return
	}
	if ev.Kind == agent.KindINCResult || ev.Kind == agent.KindINCPartial || ev.Kind == agent.KindINC {
		h.incArrive(ev, now)
		return
	}
	qpn := ev.DestQP
	if ev.Kind == agent.KindOther || qpn == 0 || int(qpn) > len(n.flows) {
		h.stats.Stray++
		return
	}
	fl := n.flows[qpn-1]
	mine := fl.spec.Src == h.node
	switch {
	case ev.Kind == agent.KindCNP && mine:
		fl.cnp(ev.CNP, now)
	case ev.Kind == agent.KindAck && mine:
		hops, ok := ev.CCHops(&h.hops)
		if !ok {
			h.stats.BadINT++
		}
		fl.ack(ev.PSN, ev.AETH.Syndrome, agent.AckFeedback{ECE: ev.ECE, Hops: hops}, now)
	case ev.Kind == agent.KindData && fl.spec.Dst == h.node:
		fl.data(ev, now)
	default:
		h.stats.Stray++
	}
}

func addr4(ip uint32) wire.Addr4 {
	var a wire.Addr4
	binary.BigEndian.PutUint32(a[:], ip)
	return a
}

// macOf is the MAC of port p (0-based) of node id.
func macOf(id, p int) wire.MAC {
	return wire.MAC{0x02, byte(id >> 16), byte(id >> 8), byte(id), byte(p >> 8), byte(p)}
}

func macU64(m wire.MAC) uint64 {
	return uint64(m[0])<<40 | uint64(m[1])<<32 | uint64(m[2])<<24 | uint64(m[3])<<16 | uint64(m[4])<<8 | uint64(m[5])
}
