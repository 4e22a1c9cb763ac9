package pipeline

import "math/bits"

// flatIndex maps a 128-bit key to an entry index, for the data path's lookups in
// exact and LPM tables: open addressing with linear probing in one array, at most
// half full, deletion by backward shift (no tombstones). A lookup usually reads one
// cache line where a Go map walks its directory, table and group first; in a
// simulated fabric of many switches those are cache misses per packet.
type flatIndex struct {
	slots []flatSlot // power-of-two length (0 until the first insert)
	n     int
	shift uint // 64 - log2(len(slots))
}

// flatSlot is 32 bytes, so that a slot never straddles two cache lines.
type flatSlot struct {
	hi, lo uint64
	v      int32 // entry index + 1; 0: empty
	_      [12]byte
}

func (x *flatIndex) home(hi, lo uint64) int {
	h := hi*0x9E3779B97F4A7C15 ^ bits.RotateLeft64(lo*0xC2B2AE3D27D4EB4F, 31)
	return int((h * 0xD6E8FEB86659FD93) >> x.shift)
}

// get returns the index stored for the key.
func (x *flatIndex) get(hi, lo uint64) (int32, bool) {
	if x.n == 0 {
		return 0, false
	}
	mask := len(x.slots) - 1
	for i := x.home(hi, lo); ; i = (i + 1) & mask {
		s := &x.slots[i]
		if s.v == 0 {
			return 0, false
		}
		if s.hi == hi && s.lo == lo {
			return s.v - 1, true
		}
	}
}

// set stores idx (>= 0) for the key, replacing what was there.
func (x *flatIndex) set(hi, lo uint64, idx int32) {
	if 2*(x.n+1) > len(x.slots) {
		x.grow()
	}
	mask := len(x.slots) - 1
	for i := x.home(hi, lo); ; i = (i + 1) & mask {
		s := &x.slots[i]
		if s.v == 0 {
			*s = flatSlot{hi: hi, lo: lo, v: idx + 1}
			x.n++
			return
		}
		if s.hi == hi && s.lo == lo {
			s.v = idx + 1
			return
		}
	}
}

func (x *flatIndex) grow() {
	old := x.slots
	size := max(16, 2*len(old))
	x.slots = make([]flatSlot, size)
	x.shift = uint(64 - bits.TrailingZeros(uint(size)))
	x.n = 0
	for _, s := range old {
		if s.v != 0 {
			x.set(s.hi, s.lo, s.v-1)
		}
	}
}

// del removes the key (if present), shifting back the slots of its probe run.
func (x *flatIndex) del(hi, lo uint64) {
	if x.n == 0 {
		return
	}
	mask := len(x.slots) - 1
	i := x.home(hi, lo)
	for ; ; i = (i + 1) & mask {
		s := &x.slots[i]
		if s.v == 0 {
			return
		}
		if s.hi == hi && s.lo == lo {
			break
		}
	}
	for j := (i + 1) & mask; x.slots[j].v != 0; j = (j + 1) & mask {
		k := x.home(x.slots[j].hi, x.slots[j].lo)
		// Slot j stays if its home lies cyclically in (i, j].
		if (i <= j && i < k && k <= j) || (i > j && (i < k || k <= j)) {
			continue
		}
		x.slots[i] = x.slots[j]
		i = j
	}
	x.slots[i] = flatSlot{}
	x.n--
}
