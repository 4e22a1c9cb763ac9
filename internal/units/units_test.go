package units

import (
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want Size
	}{
		{"0", 0},
		{"4096", 4096},
		{"4096B", 4096},
		{"120KiB", 122880},
		{"100KB", 100000},
		{"100kB", 100000},
		{"1.5MiB", 1572864},
		{"1.5 MiB", 1572864},
		{"  2MB ", 2000000},
		{"1.5kB", 1500},
		{".5KiB", 512},
		{"1GiB", 1 << 30},
		{"1GB", 1e9},
		{"2TiB", 2 << 40},
		{"3PB", 3e15},
		{"15EiB", 15 << 60},
		{"18446744073709551615", math.MaxUint64},
		{"18.446744073709551615EB", math.MaxUint64},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if err != nil {
			t.Errorf("ParseSize(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseSize(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestParseSizeErrors(t *testing.T) {
	tests := []struct{ in, msg string }{
		{"", "empty"},
		{"   ", "empty"},
		{"-1", "negative"},
		{"KiB", "does not start with a number"},
		{"1.2.3KiB", "does not start with a number"},
		{"10Kib", `unknown unit "Kib"`},
		{"10kb", `unknown unit "kb"`}, // bits are not a size
		{"10K", `unknown unit "K"`},   // ambiguous: 1000 or 1024
		{"10  KiB", `unknown unit " KiB"`},
		{"1.3KiB", "not a whole number of bytes"},
		{"0.5B", "not a whole number of bytes"},
		{"16EiB", "too large"},
		{"18446744073709551616", "too large"},
		{"99999999999999999999999999999EB", "too large"},
	}
	for _, tt := range tests {
		_, err := ParseSize(tt.in)
		if err == nil {
			t.Errorf("ParseSize(%q): no error, want %q", tt.in, tt.msg)
			continue
		}
		if !strings.Contains(err.Error(), tt.msg) || !strings.Contains(err.Error(), "\""+tt.in+"\"") {
			t.Errorf("ParseSize(%q) error %q: want it to quote the input and contain %q", tt.in, err, tt.msg)
		}
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want Rate
	}{
		{"100Gb/s", 100e9},
		{"100Gbps", 100e9},
		{"100Gbit/s", 100e9},
		{"25G", 25e9},
		{"400G", 400e9},
		{"1.5 Mb/s", 1.5e6},
		{"10kb/s", 10e3},
		{"10Kbps", 10e3},
		{"1Tb/s", 1e12},
		{"1000", 1000},
		{"1000b/s", 1000},
		{"1000bps", 1000},
		{"12.5GB/s", 100e9},
		{"1B/s", 8},
	}
	for _, tt := range tests {
		got, err := ParseRate(tt.in)
		if err != nil {
			t.Errorf("ParseRate(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseRate(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestParseRateErrors(t *testing.T) {
	tests := []struct{ in, msg string }{
		{"", "empty"},
		{"-1G", "negative"},
		{"G", "does not start with a number"},
		{"100Gb", `unknown unit "Gb"`},
		{"100GBps", `unknown unit "GBps"`},
		{"100 gbps", `unknown unit "gbps"`},
		{"0.001b/s", "not a whole number of bits/s"},
		{"1.0000000001kb/s", "not a whole number of bits/s"},
		{"20000000Tb/s", "too large"},
	}
	for _, tt := range tests {
		_, err := ParseRate(tt.in)
		if err == nil {
			t.Errorf("ParseRate(%q): no error, want %q", tt.in, tt.msg)
			continue
		}
		if !strings.Contains(err.Error(), tt.msg) || !strings.Contains(err.Error(), "\""+tt.in+"\"") {
			t.Errorf("ParseRate(%q) error %q: want it to quote the input and contain %q", tt.in, err, tt.msg)
		}
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"0", 0},
		{"8us", 8 * time.Microsecond},
		{"4µs", 4 * time.Microsecond},
		{"4μs", 4 * time.Microsecond}, // Greek mu
		{"8 us", 8 * time.Microsecond},
		{"1ms", time.Millisecond},
		{"1.5ms", 1500 * time.Microsecond},
		{"500ns", 500},
		{"1m30s", 90 * time.Second},
		{"2h", 2 * time.Hour},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if err != nil {
			t.Errorf("ParseDuration(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParseDurationErrors(t *testing.T) {
	tests := []struct{ in, msg string }{
		{"", "empty"},
		{"-1us", "negative"},
		{"8", "missing unit"},
		{"8.5", "missing unit"},
		{"8 u s", "invalid"},
		{"1 2us", "invalid"},
		{"8xs", "invalid"},
		{"99999999999h", "out of range"},
	}
	for _, tt := range tests {
		_, err := ParseDuration(tt.in)
		if err == nil {
			t.Errorf("ParseDuration(%q): no error, want %q", tt.in, tt.msg)
			continue
		}
		if !strings.Contains(err.Error(), tt.msg) || !strings.Contains(err.Error(), "\""+tt.in+"\"") {
			t.Errorf("ParseDuration(%q) error %q: want it to quote the input and contain %q", tt.in, err, tt.msg)
		}
	}
}

func TestFormat(t *testing.T) {
	sizes := []struct {
		in   Size
		want string
	}{
		{0, "0B"},
		{1, "1B"},
		{999, "999B"},
		{1000, "1kB"},
		{1024, "1KiB"},
		{4096, "4KiB"},
		{4097, "4097B"},
		{1500, "1.5kB"},
		{122880, "120KiB"},
		{100000, "100kB"},
		{1572864, "1.5MiB"},
		{1 << 30, "1GiB"},
		{math.MaxUint64, "18446744073709551615B"},
	}
	for _, tt := range sizes {
		if got := FormatSize(tt.in); got != tt.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
	rates := []struct {
		in   Rate
		want string
	}{
		{0, "0b/s"},
		{1e11, "100Gb/s"},
		{25e9, "25Gb/s"},
		{1.5e6, "1.5Mb/s"},
		{1e12, "1Tb/s"},
		{1234, "1234b/s"},
		{1250, "1250b/s"},
		{12500, "12.5kb/s"},
		{1000001, "1000001b/s"},
	}
	for _, tt := range rates {
		if got := FormatRate(tt.in); got != tt.want {
			t.Errorf("FormatRate(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
	durs := []struct {
		in   time.Duration
		want string
	}{
		{0, "0ns"},
		{8 * time.Microsecond, "8us"},
		{1500 * time.Nanosecond, "1.5us"},
		{time.Millisecond, "1ms"},
		{90 * time.Second, "90s"},
		{150 * time.Second, "2.5m"},
		{time.Hour, "1h"},
		{-4 * time.Microsecond, "-4us"},
		{1234567, "1234567ns"},
	}
	for _, tt := range durs {
		if got := FormatDuration(tt.in); got != tt.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := FormatDuration(math.MinInt64); !strings.HasPrefix(got, "-") {
		t.Errorf("FormatDuration(MinInt64) = %q", got)
	}
}

// TestRoundTrip checks Parse(Format(x)) == x over many random values, with
// a bias towards "round" numbers that get a unit.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	mults := []uint64{1, 1000, 1024, 1e6, 1 << 20, 1e9, 1 << 30, 1e12, 1 << 40}
	for i := 0; i < 20000; i++ {
		var v uint64
		switch i % 3 {
		case 0:
			v = rng.Uint64()
		case 1:
			v = uint64(rng.Intn(100000)) * mults[rng.Intn(len(mults))]
		default:
			v = uint64(rng.Intn(1 << 20))
		}
		s := FormatSize(Size(v))
		got, err := ParseSize(s)
		if err != nil || uint64(got) != v {
			t.Fatalf("size %d -> %q -> %d, %v", v, s, got, err)
		}
		r := FormatRate(Rate(v))
		gotR, err := ParseRate(r)
		if err != nil || uint64(gotR) != v {
			t.Fatalf("rate %d -> %q -> %d, %v", v, r, gotR, err)
		}
		d := time.Duration(v >> 1) // non-negative
		ds := FormatDuration(d)
		gotD, err := ParseDuration(ds)
		if err != nil || gotD != d {
			t.Fatalf("duration %d -> %q -> %d, %v", d, ds, gotD, err)
		}
	}
}

func TestTextMarshal(t *testing.T) {
	var s Size
	if err := s.UnmarshalText([]byte("120KiB")); err != nil || s != 120*KiB {
		t.Fatalf("Size.UnmarshalText: %v, %v", s, err)
	}
	if b, _ := s.MarshalText(); string(b) != "120KiB" {
		t.Fatalf("Size.MarshalText = %q", b)
	}
	if err := s.UnmarshalText([]byte("1x")); err == nil {
		t.Fatal("Size.UnmarshalText accepted 1x")
	}
	var r Rate
	if err := r.UnmarshalText([]byte("100Gbps")); err != nil || r != 100*Gbps {
		t.Fatalf("Rate.UnmarshalText: %v, %v", r, err)
	}
	if r.String() != "100Gb/s" || r.BytesPerSecond() != 12_500_000_000 {
		t.Fatalf("Rate = %s, %d B/s", r, r.BytesPerSecond())
	}
	if err := r.UnmarshalText([]byte("fast")); err == nil {
		t.Fatal("Rate.UnmarshalText accepted fast")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"120KiB", "1.5 Mb/s", "8us", "18446744073709551615", ".5", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := ParseSize(s); err == nil {
			if back, err := ParseSize(FormatSize(v)); err != nil || back != v {
				t.Fatalf("size %q -> %d does not round-trip", s, v)
			}
		}
		if v, err := ParseRate(s); err == nil {
			if back, err := ParseRate(FormatRate(v)); err != nil || back != v {
				t.Fatalf("rate %q -> %d does not round-trip", s, v)
			}
		}
		if d, err := ParseDuration(s); err == nil {
			if d < 0 {
				t.Fatalf("negative duration from %q", s)
			}
			if back, err := ParseDuration(FormatDuration(d)); err != nil || back != d {
				t.Fatalf("duration %q -> %d does not round-trip", s, d)
			}
		}
	})
}
