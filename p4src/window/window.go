// Package window generates the lookup tables with which the data plane computes the
// explicit window of a switch CNP without division (docs/dataplane.md, "The explicit
// window without division"), and evaluates them the way the data plane does.
//
// The controller installs Log2Entries in both FastcnpEgress.flow_bytes_log2 and
// FastcnpEgress.port_bytes_log2 (LPM on a 32-bit byte count) and Exp2Entries in
// FastcnpEgress.window_exp2 (exact on a 16-bit k). The data plane then computes
//
//	k = bdp_log2_q6 + log2_q6(data) - log2_q6(sum)
//	window = min(bdp, max(mtu, exp2(k)))
//
// Everything here is pure and deterministic; the same functions feed the controller,
// the Go pipeline's tests and the conformance vectors.
package window

import (
	"errors"
	"fmt"
	"math"
)

// FracBits is the number of fractional bits of the fixed-point log2 (q6).
const FracBits = 6

// One is 1.0 in q6 fixed point.
const One = 1 << FracBits

// Exp2Size is the number of window_exp2 entries: k in 0 .. Exp2Size-1 (LOG2_TABLE_SIZE).
const Exp2Size = 2048

// Log2EntryCount is the number of LPM entries Log2Entries returns: the 127 exact values
// 1..127 plus 64 prefixes for each leading-one position 7..31.
const Log2EntryCount = 127 + 25*64

// MaxKErrorQ6 bounds, in q6 units, |k - 64*log2(bdp*data/sum)|: 0.5 for rounding
// bdp_log2_q6, and at most 0.5 (rounding) + 0.7188 (midpoint) for each LPM lookup.
const MaxKErrorQ6 = 0.5 + 2*(0.5+0.7188)

// MaxRelError bounds the relative error of Window against ExactWindow:
// |Window - Exact| <= MaxRelError*Exact + 0.5 (the last term is the rounding of exp2).
// It is 2^(MaxKErrorQ6/64) - 1, about 3.25%.
var MaxRelError = math.Exp2(MaxKErrorQ6/One) - 1

// LPMEntry is one entry of the *_bytes_log2 LPM tables: the 32-bit Value with its top
// PrefixLen bits significant (the other bits are 0) maps to Log2Q6.
type LPMEntry struct {
	// Value is the prefix value, bits beyond PrefixLen zero.
	Value uint32
	// PrefixLen is the prefix length, 7..32.
	PrefixLen int
	// Log2Q6 is round(64*log2(midpoint of the covered values)).
	Log2Q6 uint16
}

// Exp2Entry is one entry of window_exp2: K -> Window = round(2^(K/64)).
type Exp2Entry struct {
	// K is the q6 log2 of the window.
	K uint16
	// Window is round(2^(K/64)) bytes.
	Window uint32
}

// Log2Entries returns the LPM entries of flow_bytes_log2 and port_bytes_log2, ordered
// by value: for every leading-one position e and the 6 bits m below it, a prefix of
// length min(32, 38-e) mapping to round(64*log2(midpoint)); exact for values < 128.
func Log2Entries() []LPMEntry {
	out := make([]LPMEntry, 0, Log2EntryCount)
	for x := uint32(1); x < 128; x++ {
		out = append(out, LPMEntry{Value: x, PrefixLen: 32, Log2Q6: roundLog2Q6(float64(x))})
	}
	for e := 7; e < 32; e++ {
		width := uint64(1) << (e - 6) // values covered by one prefix
		for m := uint64(0); m < 64; m++ {
			lo := uint64(1)<<e | m<<(e-6)
			mid := float64(lo) + float64(width-1)/2
			out = append(out, LPMEntry{Value: uint32(lo), PrefixLen: 38 - e, Log2Q6: roundLog2Q6(mid)})
		}
	}
	return out
}

// Exp2Entries returns the exact entries of window_exp2: k -> round(2^(k/64)) for k in
// 0 .. Exp2Size-1 (the largest, 2^(2047/64), still fits in 32 bits).
func Exp2Entries() []Exp2Entry {
	out := make([]Exp2Entry, Exp2Size)
	for k := range out {
		out[k] = Exp2Entry{K: uint16(k), Window: uint32(math.Round(math.Exp2(float64(k) / One)))}
	}
	return out
}

// ErrBDP reports a BDP outside 1 .. 2^32-1 bytes (bdp_bytes is bit<32>).
var ErrBDP = errors.New("window: bdp_bytes out of range 1..2^32-1")

// BDPLog2Q6 returns bdp_log2_q6 = round(64*log2(bdpBytes)), the set_port_config
// parameter the controller computes (the data plane has no division).
func BDPLog2Q6(bdpBytes uint64) (uint16, error) {
	if bdpBytes == 0 || bdpBytes > math.MaxUint32 {
		return 0, fmt.Errorf("bdp %d bytes: %w", bdpBytes, ErrBDP)
	}
	return roundLog2Q6(float64(bdpBytes)), nil
}

// BDPBytes returns C * RTTbase in bytes for a rate in bytes per millisecond (the
// set_port_config unit) and an RTT in ns, rounded down.
func BDPBytes(rateBytesPerMs uint32, rttNs uint32) uint64 {
	return uint64(rateBytesPerMs) * uint64(rttNs) / 1_000_000
}

func roundLog2Q6(x float64) uint16 { return uint16(math.Round(One * math.Log2(x))) }

// Log2Q6 returns what the LPM tables give for x (the longest installed prefix that
// covers it); ok is false for x == 0, which no entry covers (the table misses).
func Log2Q6(x uint32) (q6 uint16, ok bool) {
	if x == 0 {
		return 0, false
	}
	e := 31
	for x>>uint(e) == 0 {
		e--
	}
	if e <= 6 {
		return roundLog2Q6(float64(x)), true
	}
	lo := uint64(x) &^ (uint64(1)<<(e-6) - 1)
	width := uint64(1) << (e - 6)
	return roundLog2Q6(float64(lo) + float64(width-1)/2), true
}

// Exp2 returns what window_exp2 gives for k; ok is false when k is not installed.
func Exp2(k uint32) (w uint32, ok bool) {
	if k >= Exp2Size {
		return 0, false
	}
	return uint32(math.Round(math.Exp2(float64(k) / One))), true
}

// Window evaluates the data plane's window of a switch CNP from the tables above: a
// table miss of a log2 lookup reads as 0, K gives k, a negative k gives mtu, a k beyond
// window_exp2 gives bdp, and Clamp bounds the result to [mtu, bdp].
func Window(bdp uint32, bdpQ6 uint16, mtu uint16, data, sum uint32) uint32 {
	fq, _ := Log2Q6(data)
	pq, _ := Log2Q6(sum)
	k, neg := K(bdpQ6, fq, pq)
	if neg {
		return Clamp(bdp, mtu, 0)
	}
	w, ok := Exp2(uint32(k))
	if !ok {
		w = bdp
	}
	return Clamp(bdp, mtu, w)
}

// K returns k = bdpQ6 + flowQ6 - portQ6 in bit<16> arithmetic, and negative = true when
// the sum is below portQ6 (exp2(k) < 1 byte: the window is then mtu, not a wrapped k).
func K(bdpQ6, flowQ6, portQ6 uint16) (k uint16, negative bool) {
	if uint32(bdpQ6)+uint32(flowQ6) < uint32(portQ6) {
		return 0, true
	}
	return bdpQ6 + flowQ6 - portQ6, false
}

// Clamp returns min(bdp, max(mtu, w)), in that order (bdp < mtu gives bdp).
func Clamp(bdp uint32, mtu uint16, w uint32) uint32 {
	w = max(w, uint32(mtu))
	return min(w, bdp)
}

// ExactWindow is the specification's Win = max(MTU, bdp*data/sum) (real-valued), clamped
// to bdp like the data plane's result; sum == 0 gives bdp.
func ExactWindow(bdp uint32, mtu uint16, data, sum uint32) float64 {
	if sum == 0 {
		return float64(bdp)
	}
	w := float64(bdp) * float64(data) / float64(sum)
	w = math.Max(w, float64(mtu))
	return math.Min(w, float64(bdp))
}
