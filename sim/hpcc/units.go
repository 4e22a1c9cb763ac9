package hpcc

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// The topology and config files spell link rates and delays the way ns-3
// parses them (DataRate and Time strings). These parsers follow ns-3's rules,
// not internal/units', because the files are defined by ns-3: a bare rate is
// bits/s, a bare time is seconds, "KB/s" is 8000 b/s and fractions of the base
// unit are dropped.

// rateMults are ns-3's DataRate suffixes and their multipliers (bits/s).
var rateMults = map[string]float64{
	"bps": 1, "b/s": 1, "Bps": 8, "B/s": 8,
	"kbps": 1e3, "kb/s": 1e3, "Kbps": 1e3, "Kb/s": 1e3,
	"kBps": 8e3, "kB/s": 8e3, "KBps": 8e3, "KB/s": 8e3,
	"Kib/s": 1024, "KiB/s": 8192,
	"Mbps": 1e6, "Mb/s": 1e6, "MBps": 8e6, "MB/s": 8e6,
	"Mib/s": 1 << 20, "MiB/s": 8 << 20,
	"Gbps": 1e9, "Gb/s": 1e9, "GBps": 8e9, "GB/s": 8e9,
	"Gib/s": 1 << 30, "GiB/s": 8 << 30,
}

// maxRate bounds a parsed rate (1 Pb/s): anything above is a typo, and the
// bound keeps rate arithmetic far from overflow.
const maxRate = 1e15

// ParseRate parses an ns-3 DataRate string ("100Gbps", "50Mb/s",
// "25000000000") into bits per second. Rates must be positive.
func ParseRate(s string) (uint64, error) {
	n := strings.IndexFunc(s, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '.') })
	var bps float64
	if n < 0 {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("rate %q: not a whole number of bits/s", s)
		}
		bps = float64(v)
	} else {
		mult, ok := rateMults[s[n:]]
		if !ok {
			return 0, fmt.Errorf("rate %q: unknown unit %q (ns-3 units: bps, Kbps, Mbps, Gbps, b/s, Gb/s, GB/s, ...)", s, s[n:])
		}
		v, err := strconv.ParseFloat(s[:n], 64)
		if err != nil || n == 0 {
			return 0, fmt.Errorf("rate %q: bad number %q", s, s[:n])
		}
		bps = math.Trunc(v * mult) // ns-3 truncates: (uint64_t)(r * mult)
	}
	if !(bps >= 1) || bps > maxRate {
		return 0, fmt.Errorf("rate %q: out of range (1 b/s .. 1 Pb/s)", s)
	}
	return uint64(bps), nil
}

// FormatRate writes bps in the largest ns-3 unit that divides it exactly.
func FormatRate(bps uint64) string {
	for _, u := range []struct {
		name string
		mult uint64
	}{{"Gbps", 1e9}, {"Mbps", 1e6}, {"Kbps", 1e3}} {
		if bps >= u.mult && bps%u.mult == 0 {
			return strconv.FormatUint(bps/u.mult, 10) + u.name
		}
	}
	return strconv.FormatUint(bps, 10) + "bps"
}

// timeUnitNs are ns-3's Time suffixes as powers of ten of a nanosecond.
var timeUnitExp = map[string]int{"s": 9, "ms": 6, "us": 3, "ns": 0, "ps": -3, "fs": -6}

// maxTimeNs bounds parsed times (about 106 days): far beyond any run, and
// far from int64 overflow when times are added.
const maxTimeNs = int64(1) << 53

// ParseTime parses an ns-3 Time string ("1000ns", "0.001ms", "1us"; a bare
// number is seconds) into nanoseconds. The decimal is converted exactly and
// a fraction of a nanosecond is dropped (ns-3 converts through a double
// first, which can lose one nanosecond on some fractions; we do not).
// Negative times are rejected.
func ParseTime(s string) (int64, error) {
	n := strings.IndexFunc(s, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '.' || r == '+' || r == '-') })
	num, exp := s, 9
	if n >= 0 {
		e, ok := timeUnitExp[s[n:]]
		if !ok {
			return 0, fmt.Errorf("time %q: unknown unit %q (ns-3 units: s, ms, us, ns, ps, fs)", s, s[n:])
		}
		num, exp = s[:n], e
	}
	ns, err := decimalToNs(num, exp)
	if err != nil {
		return 0, fmt.Errorf("time %q: %w", s, err)
	}
	return ns, nil
}

// decimalToNs converts the decimal num times 10^exp nanoseconds to whole
// nanoseconds, dropping any fraction. Exponent notation ("2e-3") is read too.
func decimalToNs(num string, exp int) (int64, error) {
	if num == "" || len(num) > 64 {
		return 0, fmt.Errorf("bad number %q", num)
	}
	// Fast path: plain decimal with at most 18 digits.
	if v, ok := plainDecimalNs(num, exp); ok {
		return v, nil
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("bad number %q", num)
	}
	if r.Sign() < 0 {
		return 0, fmt.Errorf("negative")
	}
	scale := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(exp))), nil))
	if exp >= 0 {
		r.Mul(r, scale)
	} else {
		r.Quo(r, scale)
	}
	q := new(big.Int).Quo(r.Num(), r.Denom())
	if !q.IsInt64() || q.Int64() > maxTimeNs {
		return 0, fmt.Errorf("too large")
	}
	return q.Int64(), nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// plainDecimalNs handles "123", "123.456", "+1.5" without big numbers.
func plainDecimalNs(num string, exp int) (int64, bool) {
	if num[0] == '+' {
		num = num[1:]
	}
	intPart, frac, _ := strings.Cut(num, ".")
	if intPart == "" && frac == "" || len(intPart)+len(frac) > 18 {
		return 0, false
	}
	digits := intPart + frac
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	// value = digits * 10^(exp - len(frac)); drop what falls below 1 ns.
	shift := exp - len(frac)
	v, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return 0, false
	}
	for ; shift > 0; shift-- {
		if v > uint64(maxTimeNs)/10 {
			return 0, false
		}
		v *= 10
	}
	for ; shift < 0; shift++ {
		v /= 10
	}
	if v > uint64(maxTimeNs) {
		return 0, false
	}
	return int64(v), true
}

// formatSeconds writes ns as seconds with nine decimals, exactly.
func formatSeconds(ns int64) string {
	return fmt.Sprintf("%d.%09d", ns/1e9, ns%1e9)
}
