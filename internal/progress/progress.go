// Package progress draws a one-line progress bar on a terminal: label, bar,
// count, percentage, elapsed time and an estimate of the time left. It
// draws nothing when its writer is not a terminal (a log file, a pipe, a
// cluster job's output), so long runs can always create one.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Bar is a progress bar; safe for concurrent use.
type Bar struct {
	mu      sync.Mutex
	w       io.Writer
	label   string
	total   int64
	done    int64
	on      bool
	start   time.Time
	drawn   time.Time
	now     func() time.Time
	every   time.Duration
	lastLen int
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// New returns a bar counting to total, drawn on w (normally os.Stderr) only
// if w is a terminal.
func New(w io.Writer, label string, total int64) *Bar {
	return newBar(w, label, total, IsTerminal(w), time.Now)
}

func newBar(w io.Writer, label string, total int64, on bool, now func() time.Time) *Bar {
	return &Bar{w: w, label: label, total: max(total, 1), on: on, start: now(), now: now, every: 100 * time.Millisecond}
}

// Set records done units and redraws, at most ten times a second.
func (b *Bar) Set(done int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done = min(max(done, 0), b.total)
	if !b.on {
		return
	}
	if t := b.now(); t.Sub(b.drawn) >= b.every || b.done == b.total {
		b.drawn = t
		b.draw()
	}
}

// Add records n more units done.
func (b *Bar) Add(n int64) {
	b.mu.Lock()
	d := b.done + n
	b.mu.Unlock()
	b.Set(d)
}

// Done draws the final state and ends the line.
func (b *Bar) Done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.on {
		return
	}
	b.draw()
	fmt.Fprintln(b.w)
	b.on = false
}

// Line returns the bar's text for done units after elapsed time.
func Line(label string, done, total int64, elapsed time.Duration) string {
	const width = 30
	total = max(total, 1)
	frac := float64(done) / float64(total)
	fill := int(frac * width)
	bar := strings.Repeat("=", fill)
	if fill < width {
		bar += ">" + strings.Repeat(" ", width-fill-1)
	}
	s := fmt.Sprintf("%s [%s] %d/%d %3.0f%% %s", label, bar, done, total, 100*frac, elapsed.Round(time.Second))
	if done > 0 && done < total {
		left := time.Duration(float64(elapsed) * (1/frac - 1))
		s += fmt.Sprintf(", about %s left", left.Round(time.Second))
	}
	return s
}

func (b *Bar) draw() {
	s := Line(b.label, b.done, b.total, b.now().Sub(b.start))
	pad := ""
	if n := b.lastLen - len(s); n > 0 {
		pad = strings.Repeat(" ", n) // clear the rest of a longer previous line
	}
	b.lastLen = len(s)
	fmt.Fprintf(b.w, "\r%s%s", s, pad)
}
