package engine

import "fmt"

// Handler runs one event. It may Schedule more (at or after the event's time).
type Handler interface {
	Handle(e *Event)
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
}

// New returns an engine at time 0 with an empty queue q.
func New(q Queue) *Engine { return &Engine{q: q} }

// Now returns the current virtual time, ns.
func (e *Engine) Now() int64 { return e.now }

// Events returns how many events have run.
func (e *Engine) Events() uint64 { return e.events }

// Pending returns how many events wait in the queue.
func (e *Engine) Pending() int { return e.q.Len() }

// Schedule adds ev (at ev.At, which must not be before Now). Events at the same time
// run in the order they were scheduled.
func (e *Engine) Schedule(ev Event) error {
	if ev.At < e.now {
		return fmt.Errorf("%w: kind %d at %d ns, now %d ns", ErrPast, ev.Kind, ev.At, e.now)
	}
	e.seq++
	ev.seq = e.seq
	e.q.Push(ev)
	return nil
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
			e.q.Push(ev) // keeps its seq: the order does not change
			e.now = until
			return n
		}
		e.now = ev.At
		n++
		e.events++
		h.Handle(&ev)
	}
	if !e.stopped && (n < budget || budget == 0) {
		if _, ok := e.q.Peek(); !ok && until < Never && until > e.now {
			e.now = until
		}
	}
	return n
}
