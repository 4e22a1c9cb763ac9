package engine

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"
)

// holdDelay draws the time to the next event the way fastcnp-sim's events are spread:
// mostly serialisation times (tens of ns), link delays (about 1 us), ties (0), and
// now and then a long timer (hundreds of us).
func holdDelay(r *rand.Rand) int64 {
	switch x := r.IntN(100); {
	case x < 10:
		return 0
	case x < 60:
		return 5 + r.Int64N(100)
	case x < 95:
		return 900 + r.Int64N(300)
	default:
		return 50_000 + r.Int64N(300_000)
	}
}

// drain pops every event of q, checking the order, and returns them.
func drain(t *testing.T, q Queue) []Event {
	t.Helper()
	var out []Event
	for {
		e, ok := q.Pop()
		if !ok {
			break
		}
		if n := len(out); n > 0 && before(&e, &out[n-1]) {
			t.Fatalf("pop %d: (%d, %d) after (%d, %d)", n, e.At, e.seq, out[n-1].At, out[n-1].seq)
		}
		out = append(out, e)
	}
	return out
}

// TestQueuesAgree runs the same hold workload (pop one, push one or two later
// events) through every queue and requires the identical sequence of events.
func TestQueuesAgree(t *testing.T) {
	tests := []struct {
		name  string
		seed  uint64
		start int
		steps int
	}{
		{"small", 1, 10, 2_000},
		{"many ties and timers", 2, 1_000, 50_000},
		{"empty gaps", 3, 1, 5_000},
	}
	kinds := []Queue{&Heap{}, NewCalendar(DefaultWidthBits, DefaultBucketBits), NewCalendar(2, 3)}
	names := []string{"heap", "calendar", "tiny calendar"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ref []Event
			for k, q := range kinds {
				r := rand.New(rand.NewPCG(tt.seed, 7))
				var seq uint64
				push := func(at int64) {
					seq++
					q.Push(Event{At: at, seq: seq, A: int32(seq)})
				}
				for range tt.start {
					push(r.Int64N(2000))
				}
				var got []Event
				for range tt.steps {
					e, ok := q.Pop()
					if !ok {
						push(r.Int64N(1e6))
						continue
					}
					if n := len(got); n > 0 && before(&e, &got[n-1]) {
						t.Fatalf("%s: pop out of order", names[k])
					}
					got = append(got, e)
					push(e.At + holdDelay(r))
					if r.IntN(3) == 0 {
						push(e.At + holdDelay(r))
					}
				}
				got = append(got, drain(t, q)...)
				if k == 0 {
					ref = got
					continue
				}
				if len(got) != len(ref) {
					t.Fatalf("%s: %d events, heap %d", names[k], len(got), len(ref))
				}
				for i := range got {
					if got[i] != ref[i] {
						t.Fatalf("%s: event %d = %+v, heap %+v", names[k], i, got[i], ref[i])
					}
				}
			}
		})
	}
}

// TestCalendarPushBeforeWindow covers pushes in decreasing time before any pop (the
// window rewinds) and far events that refill the wheel.
func TestCalendarPushBeforeWindow(t *testing.T) {
	c := NewCalendar(2, 2) // 4 buckets of 4 ns: one turn is 16 ns
	ats := []int64{100, 50, 1000, 3, 99, 16, 17, 0, 1 << 40}
	for i, at := range ats {
		c.Push(Event{At: at, seq: uint64(i + 1)})
	}
	if got, _ := c.Peek(); got != 0 {
		t.Fatalf("Peek = %d, want 0", got)
	}
	out := drain(t, c)
	want := []int64{0, 3, 16, 17, 50, 99, 100, 1000, 1 << 40}
	if len(out) != len(want) {
		t.Fatalf("%d events, want %d", len(out), len(want))
	}
	for i := range want {
		if out[i].At != want[i] {
			t.Fatalf("event %d at %d, want %d", i, out[i].At, want[i])
		}
	}
}

type recorder struct {
	e    *Engine
	seen []Event
	more func(r *recorder, ev *Event)
}

func (r *recorder) Handle(ev *Event) {
	if ev.At != r.e.Now() {
		panic("Now is not the event's time")
	}
	r.seen = append(r.seen, *ev)
	if r.more != nil {
		r.more(r, ev)
	}
}

// TestEngineOrder: ties run in scheduling order, events scheduled by a handler at
// the current time run after the ones already queued for it, Run stops at until
// and keeps the later event, and scheduling in the past fails.
func TestEngineOrder(t *testing.T) {
	for _, kind := range []string{QueueHeap, QueueCalendar} {
		t.Run(kind, func(t *testing.T) {
			q, err := NewQueue(kind)
			if err != nil {
				t.Fatal(err)
			}
			e := New(q)
			r := &recorder{e: e}
			r.more = func(r *recorder, ev *Event) {
				if ev.Kind == 1 {
					if err := e.Schedule(Event{At: ev.At, Kind: 9, A: ev.A}); err != nil {
						t.Fatal(err)
					}
				}
			}
			for i, at := range []int64{10, 5, 10, 5, 30} {
				if err := e.Schedule(Event{At: at, Kind: 1, A: int32(i)}); err != nil {
					t.Fatal(err)
				}
			}
			if n := e.Run(r, 20, 0); n != 8 {
				t.Fatalf("ran %d events, want 8", n)
			}
			if e.Now() != 20 || e.Pending() != 1 {
				t.Fatalf("now %d pending %d, want 20 and 1", e.Now(), e.Pending())
			}
			want := []struct {
				at   int64
				kind uint16
				a    int32
			}{{5, 1, 1}, {5, 1, 3}, {5, 9, 1}, {5, 9, 3}, {10, 1, 0}, {10, 1, 2}, {10, 9, 0}, {10, 9, 2}}
			for i, w := range want {
				g := r.seen[i]
				if g.At != w.at || g.Kind != w.kind || g.A != w.a {
					t.Fatalf("event %d = at %d kind %d a %d, want %+v", i, g.At, g.Kind, g.A, w)
				}
			}
			if err := e.Schedule(Event{At: 19}); !errors.Is(err, ErrPast) {
				t.Fatalf("Schedule in the past: %v, want ErrPast", err)
			}
			if n := e.Run(r, Never, 0); n != 2 || e.Now() != 30 {
				t.Fatalf("second run: %d events, now %d; want 2 and 30", n, e.Now())
			}
			// Stop ends Run after the event that called it.
			r.more = func(r *recorder, ev *Event) {
				if ev.Kind == 2 {
					e.Stop()
				}
			}
			for _, k := range []uint16{2, 3} {
				if err := e.Schedule(Event{At: 40, Kind: k}); err != nil {
					t.Fatal(err)
				}
			}
			if n := e.Run(r, Never, 0); n != 1 || !e.Stopped() || e.Pending() != 1 {
				t.Fatalf("run with Stop: %d events, stopped %v, %d pending; want 1, true, 1", n, e.Stopped(), e.Pending())
			}
			if n := e.Run(r, Never, 0); n != 0 {
				t.Fatalf("run after Stop ran %d events", n)
			}
		})
	}
}

func TestNewQueueUnknown(t *testing.T) {
	if _, err := NewQueue("splay"); err == nil {
		t.Fatal("NewQueue(splay) succeeded")
	}
}

// BenchmarkQueues measures Push+Pop pairs (the hold model) at queue sizes of the
// simulator (S1 holds about 1000 pending events, S3 about 10 000) for each queue,
// and for calendar geometries (bucket width and count as powers of two).
func BenchmarkQueues(b *testing.B) {
	queues := map[string]func() Queue{
		QueueHeap: func() Queue { return &Heap{} }, QueueCalendar: func() Queue { q, _ := NewQueue(QueueCalendar); return q },
		"calendar-16ns": func() Queue { return NewCalendar(4, 14) }, "calendar-4ns": func() Queue { return NewCalendar(2, 16) },
	}
	for _, size := range []int{1_000, 10_000, 100_000} {
		for _, kind := range []string{QueueHeap, QueueCalendar, "calendar-16ns", "calendar-4ns"} {
			b.Run(kind+"/"+strconv.Itoa(size), func(b *testing.B) {
				q := queues[kind]()
				r := rand.New(rand.NewPCG(1, 2))
				var seq uint64
				for range size {
					seq++
					q.Push(Event{At: r.Int64N(1000), seq: seq})
				}
				delays := make([]int64, 4096)
				for i := range delays {
					delays[i] = holdDelay(r)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					e, _ := q.Pop()
					seq++
					e.At += delays[i&4095]
					e.seq = seq
					q.Push(e)
				}
			})
		}
	}
}

// TestLanes schedules the same random events once with Schedule and once with
// ScheduleLane (lanes mostly in time order, sometimes not) and requires the same
// run: the same events in the same order, with Run stopping at until and resuming.
func TestLanes(t *testing.T) {
	tests := []struct {
		name  string
		lanes int
		seed  uint64
		back  int // one scheduling in back goes earlier than its lane's latest
	}{
		{"one lane", 1, 1, 0},
		{"many lanes in order", 16, 2, 0},
		{"out of order", 8, 3, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			type rec struct {
				at   int64
				a, b int32
			}
			runOnce := func(useLanes bool) []rec {
				e := New(&Heap{})
				if err := e.SetLanes(tt.lanes); err != nil {
					t.Fatal(err)
				}
				r := rand.New(rand.NewPCG(tt.seed, 9))
				var out []rec
				last := make([]int64, tt.lanes)
				var h handlerFunc
				sched := func(now int64) {
					l := r.IntN(tt.lanes)
					at := max(last[l], now) + r.Int64N(50)
					if tt.back > 0 && r.IntN(tt.back) == 0 {
						at = now + r.Int64N(10)
					}
					last[l] = max(last[l], at)
					ev := Event{At: at, Kind: 1, A: int32(l), B: int32(r.IntN(1000))}
					var err error
					if useLanes {
						err = e.ScheduleLane(l, ev)
					} else {
						err = e.Schedule(ev)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				n := 0
				h = func(ev *Event) {
					out = append(out, rec{ev.At, ev.A, ev.B})
					if n++; n < 5_000 {
						sched(ev.At)
						if r.IntN(2) == 0 {
							sched(ev.At)
						}
					}
				}
				for range 20 {
					sched(0)
				}
				// Stop at a time in the middle, then run to the end.
				e.Run(h, 20_000, 0)
				if e.Now() != 20_000 && e.Pending() > 0 {
					t.Fatalf("now %d after Run until 20000", e.Now())
				}
				e.Run(h, Never, 0)
				if e.Pending() != 0 {
					t.Fatalf("%d events pending after the end", e.Pending())
				}
				return out
			}
			want, got := runOnce(false), runOnce(true)
			if len(got) != len(want) || len(got) < 5_000 {
				t.Fatalf("lanes ran %d events, Schedule %d", len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("event %d: lanes %+v, Schedule %+v", i, got[i], want[i])
				}
			}
		})
	}
}

type handlerFunc func(*Event)

func (f handlerFunc) Handle(e *Event) { f(e) }

func TestLaneErrors(t *testing.T) {
	e := New(&Heap{})
	if err := e.SetLanes(MaxLanes + 1); err == nil {
		t.Fatal("SetLanes(MaxLanes+1) succeeded")
	}
	if err := e.SetLanes(2); err != nil {
		t.Fatal(err)
	}
	if err := e.ScheduleLane(2, Event{At: 1}); err == nil {
		t.Fatal("lane 2 of 2 accepted")
	}
	e.Run(handlerFunc(func(*Event) {}), 10, 0)
	if err := e.ScheduleLane(0, Event{At: 5}); !errors.Is(err, ErrPast) {
		t.Fatalf("lane event in the past: %v, want ErrPast", err)
	}
}
