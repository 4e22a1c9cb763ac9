// Package units parses and formats the sizes, bit rates and durations that
// appear in fastcnp configs, CLIs and logs.
//
// All parsing is exact: values are computed with integer arithmetic, a
// fraction that does not give a whole number of the base unit (bytes, bits/s,
// nanoseconds) is an error, and results that do not fit in a uint64 (or a
// time.Duration) are errors. Every error names the offending text.
//
// Sizes (bytes):
//
//	4096, 4096B                   plain bytes
//	kB KB MB GB TB PB EB          decimal: 1000^n (both "kB" and "KB" mean 1000)
//	KiB MiB GiB TiB PiB EiB       binary: 1024^n
//
// Rates (bits per second; decimal multipliers only, as is usual for links):
//
//	100000, 100b/s, 100bps, 100bit/s     plain bits per second
//	k/K, M, G, T followed by b/s, bps, bit/s, or nothing: "25G" = 25 Gb/s
//	B/s kB/s KB/s MB/s GB/s TB/s          bytes per second (x8): "12.5GB/s" = 100Gb/s
//
// Durations: everything time.ParseDuration accepts ("8us", "4µs", "1ms",
// "1m30s"), plus optional spaces between number and unit ("8 us"); negative
// durations are rejected. A bare "0" is zero; any other bare number is an
// error because the unit would be a guess.
//
// Numbers may have a decimal fraction ("1.5MiB") and one optional space or
// none before the unit ("1.5 Mb/s"). Units are case-sensitive except where
// listed above, because "b" (bit) and "B" (byte) differ by a factor of 8.
package units

import (
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"
)

// Size is a number of bytes. Its text form is the one ParseSize reads and
// FormatSize writes.
type Size uint64

// Rate is a bit rate in bits per second. Its text form is the one ParseRate
// reads and FormatRate writes.
type Rate uint64

// Common sizes and rates.
const (
	KB  Size = 1000
	KiB Size = 1024
	MB  Size = 1000 * KB
	MiB Size = 1024 * KiB

	Kbps Rate = 1000
	Mbps Rate = 1000 * Kbps
	Gbps Rate = 1000 * Mbps
)

type unit struct {
	name string
	mult uint64
}

// sizeUnits lists every accepted size suffix. Order matters only for
// formatting (see FormatSize).
var sizeUnits = []unit{
	{"EiB", 1 << 60}, {"PiB", 1 << 50}, {"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"EB", 1e18}, {"PB", 1e15}, {"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"kB", 1e3}, {"KB", 1e3},
	{"B", 1}, {"", 1},
}

// rateUnits lists every accepted rate suffix.
var rateUnits = func() []unit {
	var us []unit
	prefixes := []unit{{"T", 1e12}, {"G", 1e9}, {"M", 1e6}, {"k", 1e3}, {"K", 1e3}, {"", 1}}
	for _, p := range prefixes {
		for _, s := range []string{"b/s", "bps", "bit/s"} {
			us = append(us, unit{p.name + s, p.mult})
		}
		// "25G" is common shorthand for a link speed; a bare number is bits/s.
		us = append(us, unit{p.name, p.mult})
		us = append(us, unit{p.name + "B/s", p.mult * 8})
	}
	return us
}()

// ParseSize parses a byte count such as "120KiB", "100KB", "1.5MiB" or "4096".
func ParseSize(s string) (Size, error) {
	v, err := parse(s, sizeUnits, "size")
	return Size(v), err
}

// ParseRate parses a bit rate such as "100Gb/s", "100Gbps", "25G" or
// "1.5 Mb/s" into bits per second.
func ParseRate(s string) (Rate, error) {
	v, err := parse(s, rateUnits, "rate")
	return Rate(v), err
}

// ParseDuration parses a non-negative duration such as "8us", "4µs" or "1ms".
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("duration %q: empty", s)
	}
	if t == "0" {
		return 0, nil
	}
	if strings.HasPrefix(t, "-") {
		return 0, fmt.Errorf("duration %q: must not be negative", s)
	}
	// Allow "8 us": one space between the leading number and its unit.
	if num, rest, ok := splitNumber(t); ok && len(rest) > 1 && rest[0] == ' ' && (rest[1] < '0' || rest[1] > '9') {
		t = num + rest[1:]
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		if isNumber(t) {
			return 0, fmt.Errorf("duration %q: missing unit (ns, us, ms, s, m, h)", s)
		}
		return 0, fmt.Errorf("duration %q: invalid or out of range (want e.g. 8us, 4µs, 1ms)", s)
	}
	return d, nil
}

func isNumber(s string) bool {
	_, _, ok := splitNumber(s)
	return ok && strings.TrimLeft(s, "0123456789.") == ""
}

// splitNumber splits s into its leading decimal number and the rest.
func splitNumber(s string) (num, rest string, ok bool) {
	i, dots, digits := 0, 0, 0
	for ; i < len(s); i++ {
		c := s[i]
		if c == '.' {
			dots++
			continue
		}
		if c < '0' || c > '9' {
			break
		}
		digits++
	}
	return s[:i], s[i:], digits > 0 && dots <= 1
}

var maxUint64 = new(big.Int).SetUint64(math.MaxUint64)

// parse reads "<number>[ ]<unit>" with exact arithmetic.
func parse(s string, units []unit, what string) (uint64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("%s %q: empty", what, s)
	}
	if strings.HasPrefix(t, "-") {
		return 0, fmt.Errorf("%s %q: must not be negative", what, s)
	}
	num, rest, ok := splitNumber(t)
	if !ok {
		return 0, fmt.Errorf("%s %q: does not start with a number", what, s)
	}
	if strings.HasPrefix(rest, " ") {
		rest = rest[1:]
	}
	var mult uint64
	found := false
	for _, u := range units {
		if u.name == rest {
			mult, found = u.mult, true
			break
		}
	}
	if !found {
		return 0, fmt.Errorf("%s %q: unknown unit %q", what, s, rest)
	}
	intPart, frac, _ := strings.Cut(num, ".")
	if intPart == "" {
		intPart = "0"
	}
	// value = (intPart*10^len(frac) + frac) * mult / 10^len(frac), exactly.
	n, ok := new(big.Int).SetString(intPart+frac, 10)
	if !ok {
		return 0, fmt.Errorf("%s %q: bad number %q", what, s, num)
	}
	n.Mul(n, new(big.Int).SetUint64(mult))
	den := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(frac))), nil)
	q, r := new(big.Int).QuoRem(n, den, new(big.Int))
	if r.Sign() != 0 {
		base := "bytes"
		if what == "rate" {
			base = "bits/s"
		}
		return 0, fmt.Errorf("%s %q: not a whole number of %s", what, s, base)
	}
	if q.Cmp(maxUint64) > 0 {
		return 0, fmt.Errorf("%s %q: too large (max %d)", what, s, uint64(math.MaxUint64))
	}
	return q.Uint64(), nil
}

// format returns the shortest exact rendering of v among units whose value
// has at most 3 fraction digits (earlier units win ties), or v in the base
// unit when that is strictly shorter.
func format(v uint64, units []unit, base string) string {
	plain := fmt.Sprintf("%d%s", v, base)
	best := ""
	for _, u := range units {
		if u.mult <= 1 || v < u.mult {
			continue
		}
		// v*1000 may overflow uint64: use 128-bit-safe big arithmetic.
		n := new(big.Int).Mul(new(big.Int).SetUint64(v), big.NewInt(1000))
		q, r := new(big.Int).QuoRem(n, new(big.Int).SetUint64(u.mult), new(big.Int))
		if r.Sign() != 0 {
			continue
		}
		thousandths := q.Uint64()
		str := fmt.Sprintf("%d", thousandths/1000)
		if f := thousandths % 1000; f != 0 {
			str += strings.TrimRight(fmt.Sprintf(".%03d", f), "0")
		}
		str += u.name
		if best == "" || len(str) < len(best) {
			best = str
		}
	}
	// A unit wins a tie with the plain form: "1.5kB" over "1500B".
	if best == "" || len(best) > len(plain) {
		return plain
	}
	return best
}

// sizeFormatUnits omits the "KB" spelling so that output is canonical ("kB").
var sizeFormatUnits = []unit{
	{"EiB", 1 << 60}, {"PiB", 1 << 50}, {"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"EB", 1e18}, {"PB", 1e15}, {"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"kB", 1e3},
}

var rateFormatUnits = []unit{{"Tb/s", 1e12}, {"Gb/s", 1e9}, {"Mb/s", 1e6}, {"kb/s", 1e3}}

// FormatSize renders a byte count with a readable unit, exactly:
// 122880 -> "120KiB", 100000 -> "100kB", 1572864 -> "1.5MiB", 4097 -> "4097B".
// ParseSize(FormatSize(n)) == n for every n.
func FormatSize(n Size) string { return format(uint64(n), sizeFormatUnits, "B") }

// FormatRate renders bits per second with a readable unit, exactly:
// 1e11 -> "100Gb/s", 1.5e6 -> "1.5Mb/s". ParseRate(FormatRate(r)) == r.
func FormatRate(r Rate) string { return format(uint64(r), rateFormatUnits, "b/s") }

var durationUnits = []unit{{"h", uint64(time.Hour)}, {"m", uint64(time.Minute)}, {"s", uint64(time.Second)}, {"ms", uint64(time.Millisecond)}, {"us", uint64(time.Microsecond)}}

// FormatDuration renders a duration with one readable ASCII unit, exactly:
// 8µs -> "8us", 1.5ms -> "1.5ms", 90s -> "1.5m". Negative durations get a
// leading "-". ParseDuration(FormatDuration(d)) == d for d >= 0.
func FormatDuration(d time.Duration) string {
	if d < 0 {
		// -d overflows for MinInt64; its magnitude still fits in uint64.
		return "-" + format(uint64(-(d+1))+1, durationUnits, "ns")
	}
	return format(uint64(d), durationUnits, "ns")
}

// String returns FormatSize(s).
func (s Size) String() string { return FormatSize(s) }

// String returns FormatRate(r).
func (r Rate) String() string { return FormatRate(r) }

// MarshalText implements encoding.TextMarshaler.
func (s Size) MarshalText() ([]byte, error) { return []byte(FormatSize(s)), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *Size) UnmarshalText(b []byte) error {
	v, err := ParseSize(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (r Rate) MarshalText() ([]byte, error) { return []byte(FormatRate(r)), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (r *Rate) UnmarshalText(b []byte) error {
	v, err := ParseRate(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// BytesPerSecond returns the rate in bytes per second, rounded down.
func (r Rate) BytesPerSecond() uint64 { return uint64(r) / 8 }
