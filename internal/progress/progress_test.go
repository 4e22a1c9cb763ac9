package progress

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLine(t *testing.T) {
	tests := []struct {
		done, total int64
		elapsed     time.Duration
		want        string
	}{
		{0, 10, 0, "run [>                             ] 0/10   0% 0s"},
		{5, 10, 30 * time.Second, "run [===============>              ] 5/10  50% 30s, about 30s left"},
		{10, 10, time.Minute, "run [==============================] 10/10 100% 1m0s"},
		{1, 4, 10 * time.Second, "run [=======>                      ] 1/4  25% 10s, about 30s left"},
	}
	for _, tc := range tests {
		if got := Line("run", tc.done, tc.total, tc.elapsed); got != tc.want {
			t.Errorf("Line(%d/%d, %v)\n got %q\nwant %q", tc.done, tc.total, tc.elapsed, got, tc.want)
		}
	}
}

func TestBarDrawsOnlyWhenOn(t *testing.T) {
	clock := time.Unix(0, 0)
	now := func() time.Time { return clock }
	var buf bytes.Buffer
	b := newBar(&buf, "sweep", 4, true, now)
	b.Set(1)
	clock = clock.Add(50 * time.Millisecond)
	b.Set(2) // within 100 ms of the last draw: not drawn
	clock = clock.Add(time.Second)
	b.Add(1)
	b.Set(4) // the end is always drawn
	b.Done()
	out := buf.String()
	if n := strings.Count(out, "\r"); n != 4 {
		t.Errorf("%d draws, want 4 (1, 3, 4, Done):\n%q", n, out)
	}
	if !strings.HasSuffix(out, "4/4 100% 1s\n") || strings.Contains(out, "2/4") {
		t.Errorf("output %q", out)
	}

	var off bytes.Buffer
	b = newBar(&off, "sweep", 4, false, now)
	b.Set(3)
	b.Done()
	if off.Len() != 0 {
		t.Errorf("bar off wrote %q", off.String())
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) || IsTerminal(&bytes.Buffer{}) {
		t.Error("a file or a buffer taken for a terminal")
	}
	if New(f, "x", 1).on {
		t.Error("bar on for a file")
	}
}
