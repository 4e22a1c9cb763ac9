package tm

import (
	"fmt"

	"github.com/fastcnp/fastcnp/wire"
)

// settle closes the received pauses of p that expired by now and reports them.
func (t *TM[H]) settle(p *port[H], portIdx int, now int64) {
	for pr := range NumPriorities {
		if p.pausedMask&(1<<pr) == 0 {
			continue
		}
		q := &p.q[pr]
		if q.pausedUntil > now {
			continue
		}
		q.paused = false
		p.pausedMask &^= 1 << pr
		q.pausedNs += q.pausedUntil - q.pausedFrom
		t.hooks.OnEgressPause(portIdx, pr, false, q.pausedUntil)
	}
	if p.linkPaused && p.linkUntil <= now {
		p.linkPaused = false
		p.linkNs += p.linkUntil - p.linkFrom
		t.hooks.OnEgressPause(portIdx, LinkPause, false, p.linkUntil)
	}
}

// ReceivePFC applies a PFC frame received (last bit) on port at now: every priority p
// with bit p of classEnable set is paused for quanta[p]*512 bit times at the port's rate
// from now (a new frame replaces the remaining time: refresh or shorten); quanta 0
// resumes it at once. Bits 8..15 of classEnable are reserved and ignored. A paused
// priority is not dequeued; the others are.
func (t *TM[H]) ReceivePFC(portIdx int, classEnable uint16, quanta [NumPriorities]uint16, now int64) error {
	if err := t.checkPort(portIdx); err != nil {
		return fmt.Errorf("receive PFC: %w", err)
	}
	p := &t.ports[portIdx]
	t.settle(p, portIdx, now)
	for pr := range NumPriorities {
		if classEnable&(1<<pr) == 0 {
			continue
		}
		q := &p.q[pr]
		if quanta[pr] == 0 {
			q.rxXon++
			if q.paused {
				q.pausedUntil = now
			}
			continue
		}
		q.rxXoff++
		until := now + wire.PauseNs(quanta[pr], p.rate)
		if q.paused {
			q.pausedUntil = until
			continue
		}
		q.paused = true
		q.pausedFrom = now
		q.pausedUntil = until
		p.pausedMask |= 1 << pr
		t.hooks.OnEgressPause(portIdx, pr, true, now)
	}
	t.settle(p, portIdx, now) // reports the XONs just applied
	return nil
}

// ReceivePause applies an 802.3x link-level PAUSE received on port at now: all
// priorities stop for quanta*512 bit times (quanta 0 resumes). It is tracked apart from
// PFC: a link-level XON does not lift a PFC pause, nor the reverse.
func (t *TM[H]) ReceivePause(portIdx int, quanta uint16, now int64) error {
	if err := t.checkPort(portIdx); err != nil {
		return fmt.Errorf("receive PAUSE: %w", err)
	}
	p := &t.ports[portIdx]
	t.settle(p, portIdx, now)
	if quanta == 0 {
		p.rxLinkResume++
		if p.linkPaused {
			p.linkUntil = now
			t.settle(p, portIdx, now)
		}
		return nil
	}
	p.rxLinkPause++
	until := now + wire.PauseNs(quanta, p.rate)
	if p.linkPaused {
		p.linkUntil = until
		return nil
	}
	p.linkPaused = true
	p.linkFrom = now
	p.linkUntil = until
	t.hooks.OnEgressPause(portIdx, LinkPause, true, now)
	return nil
}

// EgressPaused reports whether (port, priority) is held by a received PFC or PAUSE at now.
func (t *TM[H]) EgressPaused(portIdx, prio int, now int64) (bool, error) {
	if err := t.checkPortPrio(portIdx, prio); err != nil {
		return false, fmt.Errorf("egress paused: %w", err)
	}
	p := &t.ports[portIdx]
	q := &p.q[prio]
	return (q.paused && q.pausedUntil > now) || (p.linkPaused && p.linkUntil > now), nil
}

// upstreamPaused is the mask of priorities p's upstream is paused for: the priority
// groups in XOFF and, under an input hold, every lossless priority.
func (t *TM[H]) upstreamPaused(p *port[H]) uint8 {
	if p.hold {
		return p.xoffMask | t.cfg.Lossless
	}
	return p.xoffMask
}

// SetInputHold starts (hold true) or ends (hold false) an input hold on ingress port
// at now: a pause of every lossless priority of that port's upstream for a reason the
// buffer does not see, such as frames waiting in the runtime's receive queue before
// they reach Enqueue (the real-time switch's input backlog, docs/target.md). The hold
// and the priority groups' own XOFF combine: the upstream of a lossless priority is
// paused while its group is in XOFF or the port is held, so
//   - starting a hold sends XOFF for the lossless priorities whose group is not in XOFF
//     (none: PFCNone), and refreshes cover them as long as the hold lasts;
//   - a group that crosses XOFF during a hold sends no frame of its own, and one that
//     drains to XON during a hold sends no XON;
//   - ending the hold sends XON for the lossless priorities whose group is not in XOFF;
//     the others stay paused until their group drains.
//
// Setting the state the port already has does nothing. The returned event (Kind
// PFCXoff or PFCXon, or PFCNone) is to be sent like Enqueue's. Without lossless
// priorities a hold is recorded (time, count) but sends nothing.
func (t *TM[H]) SetInputHold(portIdx int, hold bool, now int64) (PFCEvent, error) {
	if err := t.checkPort(portIdx); err != nil {
		return PFCEvent{}, fmt.Errorf("input hold: %w", err)
	}
	p := &t.ports[portIdx]
	if p.hold == hold {
		return PFCEvent{}, nil
	}
	p.hold = hold
	kind := PFCXoff
	if hold {
		p.holdSince = now
		p.holds++
	} else {
		p.holdNs += now - p.holdSince
		kind = PFCXon
	}
	mask := t.cfg.Lossless &^ p.xoffMask
	if mask == 0 {
		return PFCEvent{}, nil
	}
	ev := t.pfcFrame(portIdx, uint16(mask), kind, now)
	for pr := range NumPriorities {
		if mask&(1<<pr) == 0 {
			continue
		}
		if hold {
			p.pg[pr].txXoff++
			p.pg[pr].lastSent = ev.SendAt
		} else {
			p.pg[pr].txXon++
		}
	}
	if hold {
		p.holdXoff++
	} else {
		p.holdXon++
	}
	return ev, nil
}

// InputHeld reports whether port is under an input hold (SetInputHold).
func (t *TM[H]) InputHeld(portIdx int) bool {
	return portIdx >= 0 && portIdx < len(t.ports) && t.ports[portIdx].hold
}

// Advance runs the timers due at now: it reports expired received pauses to the hooks
// and appends to dst one refresh PFC frame per ingress port that has priorities in
// XOFF whose last XOFF was sent RefreshPercent of the pause time ago. Call it at
// NextTimer (or more often). It returns dst.
func (t *TM[H]) Advance(now int64, dst []PFCEvent) []PFCEvent {
	for i := range t.ports {
		p := &t.ports[i]
		if p.pausedMask != 0 || p.linkPaused {
			t.settle(p, i, now)
		}
		up := t.upstreamPaused(p)
		if up == 0 {
			continue
		}
		var ce uint16
		for pr := range NumPriorities {
			if up&(1<<pr) != 0 && now >= p.pg[pr].lastSent+p.refresh {
				ce |= 1 << pr
			}
		}
		if ce == 0 {
			continue
		}
		ev := t.pfcFrame(i, ce, PFCRefresh, now)
		for pr := range NumPriorities {
			if ce&(1<<pr) != 0 {
				p.pg[pr].lastSent = ev.SendAt
				p.pg[pr].txRefresh++
			}
		}
		dst = append(dst, ev)
	}
	return dst
}

// NextTimer returns the earliest time Advance has work: an XOFF refresh due or a
// received pause expiring. ok is false when no timer is pending.
func (t *TM[H]) NextTimer() (at int64, ok bool) {
	best := int64(0)
	take := func(v int64) {
		if !ok || v < best {
			best, ok = v, true
		}
	}
	for i := range t.ports {
		p := &t.ports[i]
		up := t.upstreamPaused(p)
		for pr := range NumPriorities {
			if up&(1<<pr) != 0 {
				take(p.pg[pr].lastSent + p.refresh)
			}
			if p.pausedMask&(1<<pr) != 0 {
				take(p.q[pr].pausedUntil)
			}
		}
		if p.linkPaused {
			take(p.linkUntil)
		}
	}
	return best, ok
}
