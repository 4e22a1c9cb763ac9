package tm

// DelayLine holds frames for their link's propagation delay: the real-time runtime
// (softswitch) pushes each data departure of a port with its DeliverAt and hands it to
// the socket when Pop releases it; it writes PFC frames at once, ahead of the line. An
// event-driven caller schedules DeliverAt itself instead.
// Frames of one port share its shaper, so their DeliverAt never decreases and a FIFO
// keeps them in wire order. Pure and allocation-free in steady state; one per port.
type DelayLine[H any] struct {
	f    fifo[H]
	last int64
}

// Push appends a frame due at deliverAt. A deliverAt earlier than the previous one is
// raised to it, so frames never overtake each other on a link.
func (l *DelayLine[H]) Push(deliverAt int64, h H) {
	deliverAt = max(deliverAt, l.last)
	l.last = deliverAt
	l.f.push(entry[H]{h: h, enqAt: deliverAt})
}

// Pop returns the oldest frame due at or before now.
func (l *DelayLine[H]) Pop(now int64) (h H, ok bool) {
	if l.f.n == 0 || l.f.peek().enqAt > now {
		return h, false
	}
	return l.f.pop().h, true
}

// Next returns when the oldest frame is due; ok is false when the line is empty.
func (l *DelayLine[H]) Next() (at int64, ok bool) {
	if l.f.n == 0 {
		return 0, false
	}
	return l.f.peek().enqAt, true
}

// Len returns the number of frames held.
func (l *DelayLine[H]) Len() int { return l.f.n }
