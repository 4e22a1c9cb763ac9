package tm

import "testing"

func TestDelayLine(t *testing.T) {
	var l DelayLine[string]
	if _, ok := l.Next(); ok {
		t.Fatal("empty line has a next")
	}
	l.Push(100, "a")
	l.Push(250, "b")
	l.Push(200, "c") // earlier than b: held until 250, never overtakes b
	steps := []struct {
		now  int64
		want []string
		next int64 // 0 = empty afterwards
	}{
		{99, nil, 100},
		{100, []string{"a"}, 250},
		{249, nil, 250},
		{300, []string{"b", "c"}, 0},
	}
	for _, s := range steps {
		var got []string
		for {
			h, ok := l.Pop(s.now)
			if !ok {
				break
			}
			got = append(got, h)
		}
		if len(got) != len(s.want) {
			t.Fatalf("at %d: got %v, want %v", s.now, got, s.want)
		}
		for i := range got {
			if got[i] != s.want[i] {
				t.Fatalf("at %d: got %v, want %v", s.now, got, s.want)
			}
		}
		next, ok := l.Next()
		if (s.next == 0) == ok || (ok && next != s.next) {
			t.Fatalf("at %d: Next = %d,%v want %d", s.now, next, ok, s.next)
		}
	}
	if l.Len() != 0 {
		t.Fatalf("Len %d", l.Len())
	}
}

// TestDelayLineWithDepartures feeds a port's data and PFC departures through a delay
// line: each comes out exactly at its DeliverAt.
func TestDelayLineWithDepartures(t *testing.T) {
	m := mustNew(t, staticCfg(1000, 0), nil)
	var line DelayLine[int]
	mustEnq(t, m, 7, 1500, 0, 1, 0, 0)
	d := mustDeq(t, m, 1, 0) // port 1: 0..12000, at the peer at 13000
	line.Push(d.DeliverAt, d.Handle)
	r := mustEnq(t, m, 8, 1000, 1, 0, 3, 100) // XOFF out of port 1 after the frame
	line.Push(r.PFC.DeliverAt, -1)
	if h, ok := line.Pop(12999); ok {
		t.Fatalf("released %d early", h)
	}
	if h, _ := line.Pop(13000); h != 7 {
		t.Fatalf("got %d, want the data frame", h)
	}
	if at, _ := line.Next(); at != 12000+512+1000 {
		t.Fatalf("PFC due at %d, want %d", at, 12000+512+1000)
	}
}
