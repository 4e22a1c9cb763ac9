package engine

// Default geometry of the calendar queue: 4096 buckets of 64 ns, one turn is 262 us.
// Chosen by BenchmarkQueues on the simulator's own event mix (docs/performance.md).
const (
	DefaultWidthBits  = 6
	DefaultBucketBits = 12
)

// Calendar is a calendar queue (a timing wheel with one level): time is cut into
// buckets of 2^widthBits ns, 2^bucketBits of them make one turn; an event within one
// turn of the current bucket goes into its bucket (a small heap, for the order within
// the bucket), a later one into an overflow heap that refills the wheel as time
// advances. Pop walks the buckets from the current one. Push and Pop are O(1) on
// average when events are spread over the turn, as a simulator's are (serialisation
// and link delays of nanoseconds to microseconds; the rare long timers overflow).
type Calendar struct {
	wb     uint
	mask   int64
	width  int64
	span   int64 // one turn: buckets * width
	b      []Heap
	n      int   // events in the buckets
	base   int64 // start of the current bucket's time window (a multiple of width)
	cur    int   // index of the current bucket
	far    Heap  // events at or beyond base + span
	inited bool
}

// NewCalendar returns an empty calendar queue of 2^bucketBits buckets of
// 2^widthBits ns.
func NewCalendar(widthBits, bucketBits uint) *Calendar {
	nb := 1 << bucketBits
	return &Calendar{
		wb: widthBits, mask: int64(nb - 1), width: 1 << widthBits,
		span: int64(nb) << widthBits, b: make([]Heap, nb),
	}
}

// Len implements Queue.
func (c *Calendar) Len() int { return c.n + c.far.Len() }

func (c *Calendar) slot(at int64) int { return int((at >> c.wb) & c.mask) }

// Push implements Queue. Events must not be earlier than the last one popped.
func (c *Calendar) Push(e Event) {
	if !c.inited {
		c.inited = true
		c.jump(e.At)
	}
	if e.At >= c.base+c.span {
		c.far.Push(e)
		return
	}
	if e.At < c.base {
		// Earlier than the current window: only possible before anything was popped
		// (the first events pushed in decreasing time). Rewind the window.
		c.rewind(e.At)
	}
	c.b[c.slot(e.At)].Push(e)
	c.n++
}

// jump moves the window to the bucket holding at (the wheel must be empty).
func (c *Calendar) jump(at int64) {
	c.base = at &^ (c.width - 1)
	c.cur = c.slot(at)
}

// rewind moves the window back to at, sending the events that fall beyond the new
// turn to the overflow heap.
func (c *Calendar) rewind(at int64) {
	nb := at &^ (c.width - 1)
	end := nb + c.span
	for i := range c.b {
		h := &c.b[i]
		keep := h.h[:0]
		for _, ev := range h.h {
			if ev.At >= end {
				c.far.Push(ev)
				c.n--
				continue
			}
			keep = append(keep, ev)
		}
		// Re-heapify the survivors (rare path).
		h.h = nil
		for _, ev := range keep {
			h.Push(ev)
		}
	}
	c.base = nb
	c.cur = c.slot(at)
}

// refill moves overflow events that are now within one turn into their buckets.
func (c *Calendar) refill() {
	end := c.base + c.span
	for {
		at, ok := c.far.Peek()
		if !ok || at >= end {
			return
		}
		e, _ := c.far.Pop()
		c.b[c.slot(e.At)].Push(e)
		c.n++
	}
}

// Pop implements Queue.
func (c *Calendar) Pop() (Event, bool) {
	for {
		if c.n == 0 {
			at, ok := c.far.Peek()
			if !ok {
				return Event{}, false
			}
			c.jump(at)
			c.refill()
		}
		h := &c.b[c.cur]
		if len(h.h) > 0 && h.h[0].At < c.base+c.width {
			c.n--
			return h.Pop()
		}
		c.base += c.width
		c.cur = (c.cur + 1) & int(c.mask)
		if c.far.Len() > 0 {
			c.refill()
		}
	}
}

// Peek implements Queue without moving the window.
func (c *Calendar) Peek() (int64, bool) {
	if c.n == 0 {
		return c.far.Peek()
	}
	base, cur := c.base, c.cur
	for {
		h := &c.b[cur]
		if len(h.h) > 0 && h.h[0].At < base+c.width {
			return h.h[0].At, true
		}
		base += c.width
		cur = (cur + 1) & int(c.mask)
	}
}
