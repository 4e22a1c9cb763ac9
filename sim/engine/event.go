// Package engine is fastcnp-sim's discrete-event core: virtual time in int64
// nanoseconds, an event queue, and a loop that hands events to the model in time
// order. It has no wall clock, no goroutines and no I/O: the same inputs give the
// same order of events, and so the same outputs, on every run.
//
// Events that fall on the same nanosecond run in the order they were scheduled
// (every event gets a sequence number at Schedule), so the order is total and does
// not depend on the queue implementation: the binary heap and the calendar queue
// give identical runs (TestQueuesAgree), and the faster one is the default
// (BenchmarkQueues, docs/performance.md).
package engine

import (
	"errors"
	"fmt"
	"math"
)

// Event is one thing that happens at a time. Kind and the three arguments are the
// model's: the engine only orders events by (At, seq).
type Event struct {
	// At is when the event happens, ns of virtual time.
	At int64
	// seq is the scheduling order, set by Schedule: it breaks ties between events
	// at the same At.
	seq uint64
	// Kind says what happens (the model's numbering).
	Kind uint16
	// lane is the lane the event was scheduled on, plus one (0: none); it fits in
	// Kind's padding, so an event stays 32 bytes.
	lane uint16
	// A, B and C are the model's arguments (a node, a port, a packet...).
	A, B, C int32
}

// Seq returns the event's scheduling order (0 before Schedule).
func (e *Event) Seq() uint64 { return e.seq }

// before is the total order of events: time, then scheduling order.
func before(a, b *Event) bool {
	if a.At != b.At {
		return a.At < b.At
	}
	return a.seq < b.seq
}

// Never is a time no event reaches: Run's until for "until the queue is empty".
const Never int64 = math.MaxInt64

// ErrPast reports an event scheduled before the current time.
var ErrPast = errors.New("engine: event scheduled in the past")

// Queue is a priority queue of events in (At, seq) order.
type Queue interface {
	// Push adds an event.
	Push(e Event)
	// Pop removes and returns the earliest event; ok is false when empty.
	Pop() (e Event, ok bool)
	// Peek returns the earliest event's time; ok is false when empty.
	Peek() (at int64, ok bool)
	// Len returns the number of events held.
	Len() int
}

// Kinds of queue New accepts.
const (
	QueueHeap     = "heap"
	QueueCalendar = "calendar"
)

// NewQueue returns an empty queue of the named kind: QueueHeap (a binary heap) or
// QueueCalendar (a calendar queue of 2^bucketBits buckets of 2^widthBits ns each, with
// a heap for events beyond one turn of the calendar).
func NewQueue(kind string) (Queue, error) {
	switch kind {
	case QueueHeap:
		return &Heap{}, nil
	case QueueCalendar:
		return NewCalendar(DefaultWidthBits, DefaultBucketBits), nil
	}
	return nil, fmt.Errorf("engine: queue %q (known: %s, %s)", kind, QueueHeap, QueueCalendar)
}
