package p4src

import (
	"math/big"
	"math/bits"
	"math/rand/v2"
	"regexp"
	"strconv"
	"testing"
)

// The two pieces of run-time arithmetic of the P4 program that replace wide
// products (v1model/decisions.p4: ps_to_ns and PORT_RESUME_DECISION), transcribed
// statement by statement into Go with the constants read from v1model/defines.p4,
// and checked against exact big-integer arithmetic. Every intermediate value is
// checked to stay below 2^64, the widest type the P4 code uses. This tests the
// algorithm the P4 text spells out, not the P4 text itself (p4c and BMv2 do that).

type p4Consts struct {
	magicHi, magicLo, nsPerMs, rateTHiLimit uint64
}

func readP4Consts(t *testing.T) p4Consts {
	t.Helper()
	src := readRepoFile(t, "p4src/v1model/defines.p4")
	get := func(name string) uint64 {
		m := regexp.MustCompile(`const\s+bit<64>\s+` + name + `\s*=\s*(0x[0-9A-Fa-f]+|\d+)\s*;`).FindStringSubmatch(src)
		if m == nil {
			t.Fatalf("v1model/defines.p4 has no const bit<64> %s", name)
		}
		v, err := strconv.ParseUint(m[1], 0, 64)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return v
	}
	return p4Consts{get("PS_TO_NS_MAGIC_HI"), get("PS_TO_NS_MAGIC_LO"), get("NS_PER_MS"), get("RATE_T_HI_LIMIT")}
}

// u64 is a checked 64-bit value: the operations fail the test on overflow, as a
// bit<64> in P4 would silently wrap.
type u64 struct {
	t *testing.T
}

func (c u64) mul(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 {
		c.t.Fatalf("bit<64> overflow: %d * %d", a, b)
	}
	return lo
}

func (c u64) add(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		c.t.Fatalf("bit<64> overflow: %d + %d", a, b)
	}
	return s
}

// psToNs is decisions.p4 ps_to_ns.
func psToNs(c u64, k p4Consts, ps uint64) uint64 {
	ps &= 1<<48 - 1 // bit<48> argument
	xLo := ps & 0xFFFFFF
	xHi := ps >> 24 & 0xFFFFFF
	p0 := c.mul(xLo, k.magicLo)
	p1 := c.add(c.mul(xHi, k.magicLo), c.mul(xLo, k.magicHi))
	p2 := c.mul(xHi, k.magicHi)
	s1 := c.add(p1, p0>>24)
	return (c.add(p2, s1>>24) >> 10) & (1<<48 - 1)
}

// rxBeatsRate is the BEATS computation of decisions.p4 PORT_RESUME_DECISION.
func rxBeatsRate(c u64, k p4Consts, rx, rate uint32, tNs uint64) bool {
	tNs &= 1<<48 - 1
	rxScaled := c.mul(uint64(rx), k.nsPerMs)
	rateTHi := c.mul(uint64(rate), tNs>>24&0xFFFFFF)
	rateTLo := c.mul(uint64(rate), tNs&0xFFFFFF)
	if rateTHi < k.rateTHiLimit {
		return rxScaled > c.add(rateTHi<<24, rateTLo)
	}
	return false
}

func TestP4MagicConstants(t *testing.T) {
	k := readP4Consts(t)
	m := k.magicHi<<24 + k.magicLo
	// M = ceil(2^58 / 1000) and M*1000 - 2^58 <= 2^(58-48): exact for all x < 2^48.
	want := (uint64(1)<<58 + 999) / 1000
	if m != want || k.magicLo >= 1<<24 {
		t.Fatalf("PS_TO_NS_MAGIC_HI/LO give %d (lo %d), want %d split at bit 24", m, k.magicLo, want)
	}
	if e := m*1000 - 1<<58; e > 1<<10 {
		t.Fatalf("M*1000 - 2^58 = %d > 2^10: not exact for 48-bit inputs", e)
	}
	if k.nsPerMs != 1_000_000 || k.rateTHiLimit != 1<<28 {
		t.Fatalf("NS_PER_MS %d, RATE_T_HI_LIMIT %d", k.nsPerMs, k.rateTHiLimit)
	}
}

func TestP4PsToNsIsExactDivision(t *testing.T) {
	k := readP4Consts(t)
	c := u64{t}
	const max48 = 1<<48 - 1
	tests := []struct {
		name string
		ps   uint64
	}{
		{"zero", 0},
		{"one quantum at 100 Gb/s (5120 ps)", 5120},
		{"999", 999},
		{"1000", 1000},
		{"65535 quanta of 5120 ps", 65535 * 5120},
		{"65535 quanta of 512 us (10 Mb/s)", 65535 * 51_200_000},
		{"largest 16 x 32-bit product", 65535 * (1<<32 - 1)},
		{"limb boundary - 1", 1<<24 - 1},
		{"limb boundary", 1 << 24},
		{"largest 48-bit value", max48},
		{"largest multiple of 1000", max48 / 1000 * 1000},
		{"one below it", max48/1000*1000 - 1},
	}
	for _, tc := range tests {
		if got, want := psToNs(c, k, tc.ps), tc.ps/1000; got != want {
			t.Errorf("%s: ps_to_ns(%d) = %d, want %d", tc.name, tc.ps, got, want)
		}
	}
	// Around every multiple of 1000 near the top of the range, and at random.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		x := rng.Uint64() & max48
		for _, ps := range []uint64{x, x / 1000 * 1000, x/1000*1000 + 999} {
			if ps > max48 {
				continue
			}
			if got := psToNs(c, k, ps); got != ps/1000 {
				t.Fatalf("ps_to_ns(%d) = %d, want %d", ps, got, ps/1000)
			}
		}
	}
}

func TestP4ResumeComparisonIsExact(t *testing.T) {
	k := readP4Consts(t)
	c := u64{t}
	exact := func(rx, rate uint32, tNs uint64) bool {
		lhs := new(big.Int).Mul(big.NewInt(int64(rx)), big.NewInt(1_000_000))
		rhs := new(big.Int).Mul(new(big.Int).SetUint64(uint64(rate)), new(big.Int).SetUint64(tNs))
		return lhs.Cmp(rhs) > 0
	}
	const max48 = 1<<48 - 1
	tests := []struct {
		name string
		rx   uint32
		rate uint32
		t    uint64
	}{
		{"nothing received", 0, 12_500_000, 1000},
		{"zero rate", 1, 0, max48},
		{"zero time", 1, 12_500_000, 0},
		{"100G, 1 us, 12500 B: equal, not beaten", 12_500, 12_500_000, 1000},
		{"100G, 1 us, 12501 B: beaten", 12_501, 12_500_000, 1000},
		{"rate * t_hi just below the limit", 1<<32 - 1, 1<<28 - 1, 1 << 24},
		{"rate * t_hi at the limit", 1<<32 - 1, 1 << 28, 1 << 24},
		{"largest left side against t_lo only", 1<<32 - 1, 1<<32 - 1, 1<<24 - 1},
		{"left side against a huge pause", 1<<32 - 1, 1, max48},
		{"everything at its maximum", 1<<32 - 1, 1<<32 - 1, max48},
	}
	for _, tc := range tests {
		if got, want := rxBeatsRate(c, k, tc.rx, tc.rate, tc.t), exact(tc.rx, tc.rate, tc.t); got != want {
			t.Errorf("%s: %v, exact %v", tc.name, got, want)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 200_000 {
		rx, rate := rng.Uint32(), rng.Uint32()
		tNs := rng.Uint64() & max48
		if i%2 == 1 {
			// Near the decision boundary: t with rate * t about rx * 10^6.
			if rate == 0 {
				rate = 1
			}
			tNs = (uint64(rx)*1_000_000/uint64(rate) + uint64(rng.IntN(3)) - 1) & max48
		}
		if got, want := rxBeatsRate(c, k, rx, rate, tNs), exact(rx, rate, tNs); got != want {
			t.Fatalf("rx %d rate %d t %d: %v, exact %v", rx, rate, tNs, got, want)
		}
	}
}
