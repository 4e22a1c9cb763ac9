package tm

// entry is one queued frame.
type entry[H any] struct {
	h       H
	enqAt   int64
	length  int32
	ingress int32
}

// fifo is a growable ring buffer: amortised zero allocations once it reached its
// working size (the steady state of a switch queue).
type fifo[H any] struct {
	buf  []entry[H]
	head int
	n    int
}

func (f *fifo[H]) push(e entry[H]) {
	if f.n == len(f.buf) {
		f.grow()
	}
	i := f.head + f.n
	if i >= len(f.buf) {
		i -= len(f.buf)
	}
	f.buf[i] = e
	f.n++
}

func (f *fifo[H]) grow() {
	nb := make([]entry[H], max(16, 2*len(f.buf)))
	for i := range f.n {
		j := f.head + i
		if j >= len(f.buf) {
			j -= len(f.buf)
		}
		nb[i] = f.buf[j]
	}
	f.buf = nb
	f.head = 0
}

// peek returns the head; the caller checks n > 0.
func (f *fifo[H]) peek() *entry[H] { return &f.buf[f.head] }

func (f *fifo[H]) pop() entry[H] {
	e := f.buf[f.head]
	var zero entry[H]
	f.buf[f.head] = zero // drop the reference so the GC can free the frame
	f.head++
	if f.head == len(f.buf) {
		f.head = 0
	}
	f.n--
	return e
}
