package p4src

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
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

// afterGrow and afterShrink are the two macros, branch for branch.
func afterGrow(csum, k uint16) uint16 {
	if csum >= k {
		return csum - k
	}
	return csum - (k + 1)
}

func afterShrink(csum, d uint16) uint16 {
	if csum >= 0xFFFF-d {
		return csum + (d + 1)
	}
	return csum + d
}

func TestTNAChecksumSteps(t *testing.T) {
	src := strings.Join(strings.Fields(readRepoFile(t, "p4src/tna/headers.p4")), " ")
	for _, want := range []string{
		`#define IPV4_CHECKSUM_AFTER_GROW(CSUM, K) \ if (CSUM >= (K)) { CSUM = CSUM - (K); } else { CSUM = CSUM - ((K) + 1); }`,
		`#define IPV4_CHECKSUM_AFTER_SHRINK(CSUM, D) \ if (CSUM >= 16w0xFFFF - (D)) { CSUM = CSUM + ((D) + 1); } else { CSUM = CSUM + (D); }`,
	} {
		if !strings.Contains(src, want) {
			t.Fatalf("tna/headers.p4 no longer has the transcribed macro %q", want)
		}
	}
	// Old words: every value a changed word can have before the change.
	cases := []struct {
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
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
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

// TestTNAFlowSlotWidth: the flow registers' index type (flow_slot_t, the
// fingerprint's low bits) is log2(FLOW_SLOTS) bits wide.
func TestTNAFlowSlotWidth(t *testing.T) {
	hdr := readRepoFile(t, "p4src/tna/headers.p4")
	m := regexp.MustCompile(`typedef\s+bit<(\d+)>\s+flow_slot_t\s*;`).FindStringSubmatch(hdr)
	if m == nil {
		t.Fatal("tna/headers.p4 has no typedef bit<W> flow_slot_t")
	}
	d := regexp.MustCompile(`#define\s+FLOW_SLOTS\s+(\d+)`).FindStringSubmatch(readRepoFile(t, "p4src/include/defines.p4"))
	if d == nil {
		t.Fatal("include/defines.p4 has no FLOW_SLOTS")
	}
	w, _ := strconv.Atoi(m[1])
	slots, _ := strconv.Atoi(d[1])
	if 1<<w != slots {
		t.Errorf("flow_slot_t is bit<%d>, FLOW_SLOTS is %d: want 2^width = FLOW_SLOTS", w, slots)
	}
}
