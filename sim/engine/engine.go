package engine

import "fmt"

// Handler runs one event. It may Schedule more (at or after the event's time).
// The event is valid during the call only.
type Handler interface {
	Handle(e *Event)
}

// MaxLanes bounds the lanes of an engine (the event stores its lane in 16 bits).
const MaxLanes = 1<<16 - 1

// lane is a FIFO of scheduled events in (At, seq) order whose first event is in
// the queue (inQ) and the rest wait here, in a ring (a busy lane never empties, so
// an appended slice would only grow).
type lane struct {
	ring []Event // len is a power of two
	head int
	n    int
	last int64 // At of the lane's latest event
	inQ  bool
}

func (ln *lane) push(ev Event) {
	if ln.n == len(ln.ring) {
		grown := make([]Event, max(8, 2*len(ln.ring)))
		for k := range ln.n {
			grown[k] = ln.ring[(ln.head+k)&(len(ln.ring)-1)]
		}
		ln.ring, ln.head = grown, 0
	}
	ln.ring[(ln.head+ln.n)&(len(ln.ring)-1)] = ev
	ln.n++
}

// Engine is the event loop: the current time, the queue and the sequence counter.
// Not safe for concurrent use (a simulation is one goroutine; independent runs are
// independent engines).
type Engine struct {
	q       Queue
	now     int64
	seq     uint64
	events  uint64
	stopped bool
	cur     Event // the event being handled (a field, so that it does not escape per event)
	lanes   []lane
	waiting int // events held in lanes, not in q
}

// New returns an engine at time 0 with an empty queue q.
func New(q Queue) *Engine { return &Engine{q: q} }

// Now returns the current virtual time, ns.
func (e *Engine) Now() int64 { return e.now }

// Events returns how many events have run.
func (e *Engine) Events() uint64 { return e.events }

// Pending returns how many events wait (in the queue and in lanes).
func (e *Engine) Pending() int { return e.q.Len() + e.waiting }

// Schedule adds ev (at ev.At, which must not be before Now). Events at the same time
// run in the order they were scheduled.
func (e *Engine) Schedule(ev Event) error {
	if ev.At < e.now {
		return fmt.Errorf("%w: kind %d at %d ns, now %d ns", ErrPast, ev.Kind, ev.At, e.now)
	}
	e.seq++
	ev.seq = e.seq
	ev.lane = 0
	e.q.Push(ev)
	return nil
}

// SetLanes gives the engine n lanes (0..n-1, at most MaxLanes), all empty.
func (e *Engine) SetLanes(n int) error {
	if n < 0 || n > MaxLanes {
		return fmt.Errorf("engine: %d lanes (0..%d)", n, MaxLanes)
	}
	e.lanes = make([]lane, n)
	return nil
}

// ScheduleLane is Schedule for an event of a stream whose events are mostly
// scheduled in time order, such as the frames arriving over one link: only the
// lane's earliest event is in the queue, the others wait in the lane's FIFO, so the
// queue holds one event per busy lane rather than one per frame in flight. The
// order in which events run is the same as with Schedule (time, then scheduling
// order): an event earlier than the lane's latest one goes to the queue directly.
func (e *Engine) ScheduleLane(l int, ev Event) error {
	if ev.At < e.now {
		return fmt.Errorf("%w: kind %d at %d ns, now %d ns", ErrPast, ev.Kind, ev.At, e.now)
	}
	if l < 0 || l >= len(e.lanes) {
		return fmt.Errorf("engine: lane %d of %d", l, len(e.lanes))
	}
	e.seq++
	ev.seq = e.seq
	ln := &e.lanes[l]
	switch {
	case !ln.inQ:
		ev.lane = uint16(l + 1)
		ln.inQ, ln.last = true, ev.At
		e.q.Push(ev)
	case ev.At >= ln.last:
		ev.lane = uint16(l + 1)
		ln.last = ev.At
		ln.push(ev)
		e.waiting++
	default:
		ev.lane = 0
		e.q.Push(ev)
	}
	return nil
}

// advance puts the next event of lane l (1-based, as in Event.lane) in the queue,
// its earlier event having been taken out.
func (e *Engine) advance(l uint16) {
	ln := &e.lanes[l-1]
	if ln.n == 0 {
		ln.inQ = false
		return
	}
	e.q.Push(ln.ring[ln.head])
	ln.head = (ln.head + 1) & (len(ln.ring) - 1)
	ln.n--
	e.waiting--
}

// Stop makes Run return after the event being handled; later calls of Run run
// nothing.
func (e *Engine) Stop() { e.stopped = true }

// Stopped reports whether Stop was called.
func (e *Engine) Stopped() bool { return e.stopped }

// Run hands the events to h in time order until the queue is empty, the next
// event is later than until (that event stays queued; Now becomes until when
// until < Never) or a handler calls Stop. budget > 0 bounds the events run in this
// call (0: no bound), so a caller can report progress between calls. It returns
// the events run.
func (e *Engine) Run(h Handler, until int64, budget uint64) uint64 {
	var n uint64
	for (budget == 0 || n < budget) && !e.stopped {
		ev, ok := e.q.Pop()
		if !ok {
			break
		}
		if ev.At > until {
			e.q.Push(ev) // keeps its seq and lane: the order does not change
			e.now = until
			return n
		}
		if ev.lane != 0 {
			e.advance(ev.lane)
		}
		e.now = ev.At
		n++
		e.events++
		e.cur = ev
		h.Handle(&e.cur)
	}
	if !e.stopped && (n < budget || budget == 0) {
		if _, ok := e.q.Peek(); !ok && until < Never && until > e.now {
			e.now = until
		}
	}
	return n
}
