package p4src

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/fastcnp/fastcnp/p4src/window"
)

// The TNA program's IPv4 checksum steps (tna/headers.p4 IPV4_CHECKSUM_AFTER_GROW
// and _SHRINK), transcribed into Go and checked for every checksum against
// v1model's ipv4_checksum_replace_word (include/controls.p4, RFC 1624 eq. 3),
// for the word changes the program makes: ECN ECT(0)/ECT(1) to CE (+1, +2),
// total length + INC_IDS_BYTES (16) and + INT_HOP_BYTES (24), TTL - 1 (-0x100).
// As arith_test.go, this tests the algorithm the P4 text spells out; the test
// first checks that the macros still have the transcribed form.

// replaceWord is include/controls.p4's ipv4_checksum_replace_word.
func replaceWord(checksum, oldWord, newWord uint16) uint16 {
	sum := uint32(^checksum) + uint32(^oldWord) + uint32(newWord)
	sum = sum&0xFFFF + sum>>16
	sum = sum&0xFFFF + sum>>16
	return ^uint16(sum)
}

// afterGrow and afterShrink are the two macros, branch for branch: their
// conditions are spelt by bytes (a Tofino gateway's 12 range bits take no 16-bit
// comparison), for K < 256 and D a multiple of 256.
func afterGrow(csum, k uint16) uint16 {
	if csum>>8 != 0 || uint8(csum) >= uint8(k) {
		return csum - k
	}
	return csum - (k + 1)
}

func afterShrink(csum, d uint16) uint16 {
	hi, lo, dHi := uint8(csum>>8), uint8(csum), uint8(d>>8)
	if hi > 0xFF-dHi || (hi == 0xFF-dHi && lo == 0xFF) {
		return csum + (d + 1)
	}
	return csum + d
}

// tnaChecksumCases are the word changes the TNA program makes (TestTNAChecksumCalls
// checks that every macro call is one of them).
var tnaChecksumCases = []struct {
	name     string
	delta    int // new word - old word
	oldWords func(yield func(uint16) bool)
}{
	{"ECT(0) to CE", +1, wordsWithLowBits(0b10)},
	{"ECT(1) to CE", +2, wordsWithLowBits(0b01)},
	{"total length + INC_IDS_BYTES", +16, wordsBelow(0xFFFF - 16)},
	{"total length + INT_HOP_BYTES", +24, wordsBelow(0xFFFF - 24)},
	{"TTL - 1", -0x100, wordsFrom(0x100)},
}

// TestTNAChecksumCalls: every IPV4_CHECKSUM_AFTER_GROW / _SHRINK in the TNA program
// changes the word by one of tnaChecksumCases' deltas (a literal or an
// include/defines.p4 constant), so TestTNAChecksumSteps covers it and the byte-wise
// conditions' preconditions hold for it.
func TestTNAChecksumCalls(t *testing.T) {
	src := readRepoFile(t, "p4src/tna/fastcnp.p4")
	defines := readRepoFile(t, "p4src/include/defines.p4")
	calls := regexp.MustCompile(`IPV4_CHECKSUM_AFTER_(GROW|SHRINK)\(\s*[\w.]+\s*,\s*(\w+)\s*\)`).FindAllStringSubmatch(src, -1)
	if len(calls) < 5 {
		t.Fatalf("found %d checksum macro calls in tna/fastcnp.p4", len(calls))
	}
	covered := map[int]bool{}
	for _, c := range tnaChecksumCases {
		covered[c.delta] = true
	}
	for _, m := range calls {
		arg := m[2]
		if d := regexp.MustCompile(`const\s+bit<\d+>\s+` + arg + `\s*=\s*(\w+)\s*;`).FindStringSubmatch(defines); d != nil {
			arg = d[1]
		}
		if i := strings.Index(arg, "w"); i >= 0 {
			arg = arg[i+1:] // 16w0x0100 -> 0x0100
		}
		v, err := strconv.ParseInt(arg, 0, 32)
		if err != nil {
			t.Errorf("%s(%s): cannot read the constant: %v", m[1], m[2], err)
			continue
		}
		delta := int(v)
		if m[1] == "SHRINK" {
			delta = -delta
		}
		if !covered[delta] {
			t.Errorf("%s(%s): a word change of %+d, which TestTNAChecksumSteps does not check", m[1], m[2], delta)
		}
	}
}

func TestTNAChecksumSteps(t *testing.T) {
	src := strings.Join(strings.Fields(readRepoFile(t, "p4src/tna/headers.p4")), " ")
	for _, want := range []string{
		`#define IPV4_CHECKSUM_AFTER_GROW(CSUM, K) \ if (CSUM[15:8] != 0 || CSUM[7:0] >= (K)[7:0]) { CSUM = CSUM - (K); } else { CSUM = CSUM - ((K) + 1); }`,
		`#define IPV4_CHECKSUM_AFTER_SHRINK(CSUM, D) \ if (CSUM[15:8] > 8w0xFF - (D)[15:8] || (CSUM[15:8] == 8w0xFF - (D)[15:8] && CSUM[7:0] == 8w0xFF)) { CSUM = CSUM + ((D) + 1); } else { CSUM = CSUM + (D); }`,
	} {
		if !strings.Contains(src, want) {
			t.Fatalf("tna/headers.p4 no longer has the transcribed macro %q", want)
		}
	}
	// Old words: every value a changed word can have before the change.
	for _, c := range tnaChecksumCases {
		t.Run(c.name, func(t *testing.T) {
			// The byte-wise conditions hold for these constants only.
			if c.delta > 0 && c.delta >= 256 || c.delta < 0 && (-c.delta)%256 != 0 {
				t.Fatalf("word change %+d: the macros take K < 256 and D a multiple of 256", c.delta)
			}
			n := 0
			for old := range c.oldWords {
				// Every checksum for a spread of old words (all of them is 2^32 pairs).
				if old%97 != 0 && old > 300 && old < 0xFF00 {
					continue
				}
				for cs := 0; cs <= 0xFFFF; cs++ {
					var got uint16
					if c.delta > 0 {
						got = afterGrow(uint16(cs), uint16(c.delta))
					} else {
						got = afterShrink(uint16(cs), uint16(-c.delta))
					}
					want := replaceWord(uint16(cs), old, uint16(int(old)+c.delta))
					if got != want {
						t.Fatalf("checksum %#04x, word %#04x%+d: TNA steps give %#04x, v1model %#04x", cs, old, c.delta, got, want)
					}
					n++
				}
			}
			if n < 1<<20 {
				t.Fatalf("only %d cases checked", n)
			}
		})
	}
}

func wordsWithLowBits(low uint16) func(func(uint16) bool) {
	return func(yield func(uint16) bool) {
		for w := 0; w <= 0xFFFF; w++ {
			if uint16(w)&3 == low && !yield(uint16(w)) {
				return
			}
		}
	}
}

func wordsBelow(max int) func(func(uint16) bool) {
	return func(yield func(uint16) bool) {
		for w := 0; w <= max; w++ {
			if !yield(uint16(w)) {
				return
			}
		}
	}
}

func wordsFrom(min int) func(func(uint16) bool) {
	return func(yield func(uint16) bool) {
		for w := min; w <= 0xFFFF; w++ {
			if !yield(uint16(w)) {
				return
			}
		}
	}
}

// TestTNAIndexWidths: the TNA program's index types are as wide as the arrays they
// index: flow_slot_t (the flow fingerprint's low bits) is log2(FLOW_SLOTS) bits,
// inc_slot_t (the INC slot hash's output) log2(INC_SLOTS) bits, and
// queue_index_t (the identity hash of port ++ priority) is log2(NUM_QUEUES) bits,
// a port's 9 bits and a priority's 3.
func TestTNAIndexWidths(t *testing.T) {
	hdr := readRepoFile(t, "p4src/tna/headers.p4")
	defines := readRepoFile(t, "p4src/include/defines.p4")
	for _, tc := range []struct{ typ, size string }{
		{"flow_slot_t", "FLOW_SLOTS"},
		{"queue_index_t", "NUM_QUEUES"},
		{"inc_slot_t", "INC_SLOTS"},
	} {
		m := regexp.MustCompile(`typedef\s+bit<(\d+)>\s+` + tc.typ + `\s*;`).FindStringSubmatch(hdr)
		if m == nil {
			t.Errorf("tna/headers.p4 has no typedef bit<W> %s", tc.typ)
			continue
		}
		d := regexp.MustCompile(`#define\s+` + tc.size + `\s+(\d+)`).FindStringSubmatch(defines)
		if d == nil {
			t.Errorf("include/defines.p4 has no %s", tc.size)
			continue
		}
		w, _ := strconv.Atoi(m[1])
		n, _ := strconv.Atoi(d[1])
		if 1<<w != n {
			t.Errorf("%s is bit<%d>, %s is %d: want 2^width = %s", tc.typ, w, tc.size, n, tc.size)
		}
	}
	if m := regexp.MustCompile(`typedef\s+bit<(\d+)>\s+port_id_t\s*;`).FindStringSubmatch(readRepoFile(t, "p4src/include/headers.p4")); m == nil || m[1] != "9" {
		t.Errorf("port_id_t is not bit<9> (%v): queue_index_t = port ++ 3-bit priority assumes it", m)
	}
}

// unsignedGE is tna/headers.p4's UNSIGNED_GE_32, branch for branch: a >= b for
// unsigned 32-bit values from the top bits of a and b and the sign of a - b.
func unsignedGE(a, b uint32) bool {
	diff := a - b
	result := false
	if a>>31 == 1 {
		if b>>31 == 0 {
			result = true
		} else if diff>>31 == 0 {
			result = true
		}
	} else if b>>31 == 0 {
		if diff>>31 == 0 {
			result = true
		}
	}
	return result
}

// TestTNAUnsignedGE: UNSIGNED_GE_32 (how the TNA program compares two fields, which
// a Tofino gateway cannot) is a >= b for every pair of a spread of 32-bit values
// around 0, 2^31 and 2^32, and for random pairs.
func TestTNAUnsignedGE(t *testing.T) {
	src := strings.Join(strings.Fields(readRepoFile(t, "p4src/tna/headers.p4")), " ")
	want := `#define UNSIGNED_GE_32(RESULT, A, B, DIFF) \ RESULT = false; \ if (A[31:31] == 1) { \ if (B[31:31] == 0) { RESULT = true; } else if (DIFF[31:31] == 0) { RESULT = true; } \ } else if (B[31:31] == 0) { \ if (DIFF[31:31] == 0) { RESULT = true; } \ }`
	if !strings.Contains(src, want) {
		t.Fatalf("tna/headers.p4 no longer has the transcribed macro %q", want)
	}
	var values []uint32
	for _, base := range []uint32{0, 1 << 31, 0xFFFFFFFF} {
		for d := uint32(0); d < 3; d++ {
			values = append(values, base+d, base-d)
		}
	}
	rng := uint32(2463534242)
	for i := 0; i < 2000; i++ {
		rng ^= rng << 13
		rng ^= rng >> 17
		rng ^= rng << 5
		values = append(values, rng)
	}
	n := 0
	for _, a := range values {
		for _, b := range values[:40] {
			for _, pair := range [][2]uint32{{a, b}, {b, a}} {
				if got, want := unsignedGE(pair[0], pair[1]), pair[0] >= pair[1]; got != want {
					t.Fatalf("UNSIGNED_GE_32(%#x, %#x) = %v, want %v", pair[0], pair[1], got, want)
				}
				n++
			}
		}
	}
	if n < 10000 {
		t.Fatalf("only %d pairs checked", n)
	}
}

// TestTNACellShifts: the three CELL_SHIFT_* terms of each chip (tna/headers.p4) add up
// to its buffer cell, and the egress takes each term from deq_qdepth with that many
// zero bits below it, so deq_qdepth * cell is a + b + c.
func TestTNACellShifts(t *testing.T) {
	hdr := readRepoFile(t, "p4src/tna/headers.p4")
	block := regexp.MustCompile(`(?s)#if __TARGET_TOFINO__ == 2\s*\n(#define CELL_SHIFT_A.*?)#else\s*\n(#define CELL_SHIFT_A.*?)#endif`).FindStringSubmatch(hdr)
	if block == nil {
		t.Fatal("tna/headers.p4 has no #if __TARGET_TOFINO__ == 2 block of CELL_SHIFT_* defines")
	}
	shift := regexp.MustCompile(`#define\s+CELL_SHIFT_([ABC])\s+(\d+)`)
	for _, tc := range []struct {
		chip string
		text string
		cell int
	}{
		{"tofino2", block[1], Tofino2CellBytes},
		{"tofino", block[2], Tofino1CellBytes},
	} {
		ms := shift.FindAllStringSubmatch(tc.text, -1)
		if len(ms) != 3 {
			t.Errorf("%s: %d CELL_SHIFT_* defines, want A, B and C", tc.chip, len(ms))
			continue
		}
		sum := 0
		for _, m := range ms {
			n, _ := strconv.Atoi(m[2])
			sum += 1 << n
		}
		if sum != tc.cell {
			t.Errorf("%s: CELL_SHIFT_* terms add up to %d bytes, the cell is %d", tc.chip, sum, tc.cell)
		}
	}
	prog := readRepoFile(t, "p4src/tna/fastcnp.p4")
	for _, term := range []string{"a", "b", "c"} {
		want := regexp.MustCompile(`meta\.qd_` + term + `\s*=\s*qd_` + term + `_hash\.get\(\{\s*eg_intr_md\.deq_qdepth,\s*\(bit<CELL_SHIFT_` + strings.ToUpper(term) + `>\)0\s*\}\)`)
		if !want.MatchString(prog) {
			t.Errorf("tna/fastcnp.p4 does not take meta.qd_%s from deq_qdepth followed by CELL_SHIFT_%s zero bits", term, strings.ToUpper(term))
		}
	}
	if !regexp.MustCompile(`meta\.qd_ab\s*=\s*meta\.qd_a\s*\+\s*meta\.qd_b;`).MatchString(prog) ||
		!regexp.MustCompile(`meta\.qd_bytes\s*=\s*meta\.qd_ab\s*\+\s*meta\.qd_c;`).MatchString(prog) {
		t.Error("tna/fastcnp.p4: qd_bytes is not qd_a + qd_b + qd_c")
	}
}

// tnaClamp is TnaExplicitWindowClamp's apply block (tna/fastcnp.p4), branch for
// branch: the window from the exp2 lookup, clamped to [mtu, bdp] by the signs of
// three differences and the operands' top bits.
func tnaClamp(hit bool, exp2, bdp uint32, mtu uint16) uint32 {
	mtu32 := uint32(mtu)
	exp2MinusMtu, bdpMinusExp2, bdpMinusMtu := exp2-mtu32, bdp-exp2, bdp-mtu32
	window := bdp
	if hit {
		if exp2>>31 == 0 && exp2MinusMtu>>31 == 1 {
			if bdp>>31 == 1 || bdpMinusMtu>>31 == 0 {
				window = mtu32
			}
		} else if (bdp>>31 == 1 && (exp2>>31 == 0 || bdpMinusExp2>>31 == 0)) ||
			(bdp>>31 == 0 && exp2>>31 == 0 && bdpMinusExp2>>31 == 0) {
			window = exp2
		}
	}
	return window
}

// TestTNAWindowClamp: the TNA program's clamp (transcribed above; the test first
// checks the P4 text still has that form) is window.Clamp, min(bdp, max(mtu, w)),
// with w = bdp when the exp2 lookup gave nothing, for values around 0, the MTU,
// 2^31 and 2^32.
func TestTNAWindowClamp(t *testing.T) {
	want := strings.Join(strings.Fields(`window_bytes = bdp_bytes;
        if (exp2_hit == 1) {
            if (exp2_bytes[31:31] == 0 && exp2_minus_mtu[31:31] == 1) {
                if (bdp_bytes[31:31] == 1 || bdp_minus_mtu[31:31] == 0) {
                    window_bytes = mtu32;
                }
            } else if ((bdp_bytes[31:31] == 1 && (exp2_bytes[31:31] == 0 || bdp_minus_exp2[31:31] == 0)) ||
                       (bdp_bytes[31:31] == 0 && exp2_bytes[31:31] == 0 && bdp_minus_exp2[31:31] == 0)) {
                window_bytes = exp2_bytes;
            }
        }`), " ")
	// Comments are dropped from the source before the comparison.
	src := regexp.MustCompile(`\s*//[^\n]*`).ReplaceAllString(readRepoFile(t, "p4src/tna/fastcnp.p4"), "")
	src = strings.Join(strings.Fields(src), " ")
	if !strings.Contains(src, want) {
		t.Fatalf("TnaExplicitWindowClamp no longer has the transcribed form %q", want)
	}
	if !strings.Contains(src, "exp2_minus_mtu = exp2_bytes - mtu32; bdp_minus_exp2 = bdp_bytes - exp2_bytes; bdp_minus_mtu = bdp_bytes - mtu32;") {
		t.Fatal("TnaExplicitWindowClamp's differences are not the transcribed ones")
	}
	var values []uint32
	for _, base := range []uint32{0, 1500, 9000, 65535, 1 << 31, 0xFFFFFFFF} {
		for d := uint32(0); d < 3; d++ {
			values = append(values, base+d, base-d)
		}
	}
	n := 0
	for _, mtu := range []uint16{0, 1, 1500, 9000, 65535} {
		for _, exp2 := range values {
			for _, bdp := range values {
				for _, hit := range []bool{false, true} {
					w := bdp
					if hit {
						w = exp2
					}
					if got, want := tnaClamp(hit, exp2, bdp, mtu), window.Clamp(bdp, mtu, w); got != want {
						t.Fatalf("clamp(hit %v, exp2 %#x, bdp %#x, mtu %d) = %#x, want %#x", hit, exp2, bdp, mtu, got, want)
					}
					n++
				}
			}
		}
	}
	if n < 10000 {
		t.Fatalf("only %d cases checked", n)
	}
}
