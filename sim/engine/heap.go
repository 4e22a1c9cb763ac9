package engine

// Heap is a 4-ary min-heap of events in (At, seq) order. The zero value is empty.
// Four children per node halve the depth of a binary heap and keep siblings in
// one or two cache lines, which is what a pop costs on a large queue
// (BenchmarkQueues); it works on the slice directly (no container/heap calls).
type Heap struct {
	h []Event
}

const arity = 4

// Len implements Queue.
func (q *Heap) Len() int { return len(q.h) }

// Peek implements Queue.
func (q *Heap) Peek() (int64, bool) {
	if len(q.h) == 0 {
		return 0, false
	}
	return q.h[0].At, true
}

// Push implements Queue.
func (q *Heap) Push(e Event) {
	q.h = append(q.h, e)
	h := q.h
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / arity
		if !before(&e, &h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = e
}

// Pop implements Queue.
func (q *Heap) Pop() (Event, bool) {
	h := q.h
	n := len(h)
	if n == 0 {
		return Event{}, false
	}
	top := h[0]
	last := h[n-1]
	h = h[:n-1]
	q.h = h
	n--
	if n == 0 {
		return top, true
	}
	i := 0
	for {
		first := arity*i + 1
		if first >= n {
			break
		}
		// The earliest child, its key kept in registers (a pop is mostly these
		// comparisons: before's loads and bounds checks cost twice as much).
		ch := h[first:min(first+arity, n)]
		c, at, seq := 0, ch[0].At, ch[0].seq
		for k := 1; k < len(ch); k++ {
			if a := ch[k].At; a < at || a == at && ch[k].seq < seq {
				c, at, seq = k, a, ch[k].seq
			}
		}
		if at > last.At || at == last.At && seq > last.seq {
			break
		}
		h[i] = ch[c]
		i = first + c
	}
	h[i] = last
	return top, true
}
