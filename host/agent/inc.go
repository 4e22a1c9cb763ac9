package agent

import (
	"fmt"

	"github.com/fastcnp/fastcnp/wire"
)

// INCParams describe one worker's part of an INC message (spec 04).
type INCParams struct {
	// Group is the communication-group ID (> 0), Message the INC message ID.
	Group, Message uint16
	// Op is the communication-operation ID carried in the IDS part.
	Op uint16
	// Rank is this worker's rank in the group (0..31).
	Rank uint8
	// Workers is the number of contributors (ranks 0..Workers-1), 1..32.
	Workers int
	// Offsets is the data flow length in packets (one vector per offset).
	Offsets int
	// Seed makes the vectors deterministic.
	Seed uint64
}

// Validate checks the parameters.
func (p *INCParams) Validate() error {
	switch {
	case p.Group == 0:
		return fmt.Errorf("inc: group ID 0 means none: %w", ErrConfig)
	case p.Workers < 1 || p.Workers > 32:
		return fmt.Errorf("inc: %d workers outside [1, 32]: %w", p.Workers, ErrConfig)
	case int(p.Rank) >= p.Workers:
		return fmt.Errorf("inc: rank %d not below the %d workers: %w", p.Rank, p.Workers, ErrConfig)
	case p.Offsets < 1 || p.Offsets > 1<<22:
		return fmt.Errorf("inc: %d offsets outside [1, 2^22]: %w", p.Offsets, ErrConfig)
	}
	return nil
}

// splitmix64 is the SplitMix64 output function: a fixed, well-mixed hash.
func splitmix64(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ x>>30) * 0xBF58476D1CE4E5B9
	x = (x ^ x>>27) * 0x94D049BB133111EB
	return x ^ x>>31
}

// INCContribution returns worker rank's vector for offset: lane i is the
// low 32 bits of SplitMix64(seed ^ group<<48 ^ message<<32 ^ rank<<24 ^
// offset*INCVectorLen + i), as a two's-complement int32. Any party that
// knows the seed can recompute it.
func INCContribution(seed uint64, group, message uint16, rank uint8, offset uint32) wire.INCVector {
	var v wire.INCVector
	base := seed ^ uint64(group)<<48 ^ uint64(message)<<32 ^ uint64(rank)<<24
	for i := range v {
		v[i] = int32(uint32(splitmix64(base ^ (uint64(offset)*wire.INCVectorLen + uint64(i)))))
	}
	return v
}

// INCExpected returns the element-wise (wrapping 32-bit) sum of the
// vectors of ranks 0..Workers-1 for offset: what a switch's RESULT must carry.
func INCExpected(p INCParams, offset uint32) wire.INCVector {
	var sum wire.INCVector
	for r := 0; r < p.Workers; r++ {
		v := INCContribution(p.Seed, p.Group, p.Message, uint8(r), offset)
		for i := range sum {
			sum[i] += v[i]
		}
	}
	return sum
}

// INCStats count RESULT packets checked.
type INCStats struct {
	Results    uint64 // RESULT packets of the message
	Correct    uint64 // distinct offsets whose vector equals the expected sum
	Wrong      uint64 // RESULTs whose vector differs
	Duplicates uint64 // RESULTs for an offset already seen
	BadOffset  uint64 // RESULTs with an offset >= Offsets
}

// INCChecker checks the RESULT packets of one INC message against
// INCExpected. Not safe for concurrent use.
type INCChecker struct {
	p     INCParams
	seen  []bool
	stats INCStats
}

// NewINCChecker returns a checker for message p (p.Rank is ignored).
func NewINCChecker(p INCParams) (*INCChecker, error) {
	p.Rank = 0
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &INCChecker{p: p, seen: make([]bool, p.Offsets)}, nil
}

// Matches reports whether a RESULT's IDS part belongs to this message.
func (c *INCChecker) Matches(ids *wire.INCIDs) bool {
	return ids.GroupID == c.p.Group && ids.MessageID == c.p.Message
}

// OnResult checks one RESULT (ids.FirstPSN carries the offset, as the
// switch writes it) and reports whether its vector is right.
func (c *INCChecker) OnResult(ids *wire.INCIDs, vec *wire.INCVector) bool {
	c.stats.Results++
	off := ids.FirstPSN
	if int64(off) >= int64(c.p.Offsets) {
		c.stats.BadOffset++
		return false
	}
	if *vec != INCExpected(c.p, off) {
		c.stats.Wrong++
		return false
	}
	if c.seen[off] {
		c.stats.Duplicates++
		return true
	}
	c.seen[off] = true
	c.stats.Correct++
	return true
}

// Complete reports whether every offset has had a correct RESULT.
func (c *INCChecker) Complete() bool { return c.stats.Correct == uint64(c.p.Offsets) }

// Params returns the message parameters.
func (c *INCChecker) Params() INCParams { return c.p }

// Stats returns the counters.
func (c *INCChecker) Stats() INCStats { return c.stats }
