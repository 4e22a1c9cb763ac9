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

// INCStream is a worker's connection that carries INC messages one after
// the other (spec 04; seed 004: several INC flows per connection over
// time): message k is the data flow of the sender's packets k*Offsets to
// (k+1)*Offsets-1, with its own first PSN; the first packet of each carries
// the IDS part. fastcnp-host and fastcnp-sim send INC through it.
type INCStream struct {
	// Params are the stream's (Message unused: Messages names them).
	Params INCParams
	// Messages are the INC message IDs in the order they are sent.
	Messages []uint16
	// DupEvery > 0 sends every DupEvery-th contribution a second time
	// (an injected retransmission, which the switches must not add twice).
	DupEvery uint64
}

// NewINCStream checks and returns a stream of messages msgs.
func NewINCStream(p INCParams, msgs []uint16, dupEvery int) (*INCStream, error) {
	p.Message = 0
	if len(msgs) > 0 {
		p.Message = msgs[0]
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	switch {
	case len(msgs) == 0:
		return nil, fmt.Errorf("inc: no messages: %w", ErrConfig)
	case uint64(len(msgs))*uint64(p.Offsets) > wire.MaxPSN:
		return nil, fmt.Errorf("inc: %d messages of %d offsets exceed the 24-bit PSN space: %w", len(msgs), p.Offsets, ErrConfig)
	case dupEvery < 0:
		return nil, fmt.Errorf("inc: dup_every %d < 0: %w", dupEvery, ErrConfig)
	}
	return &INCStream{Params: p, Messages: append([]uint16(nil), msgs...), DupEvery: uint64(dupEvery)}, nil
}

// SenderConfig returns sc set up for the stream: unacknowledged (INC
// contributions are consumed by the switches, never acknowledged or
// retransmitted), packets of INCPayload bytes, the IDS part on each
// message's first.
func (s *INCStream) SenderConfig(sc SenderConfig) SenderConfig {
	offsets := uint64(s.Params.Offsets)
	sc.NoAck = true
	sc.MSS = INCPayload(false)
	sc.PayloadFunc = func(seq uint64) int { return INCPayload(seq%offsets == 0) }
	return sc
}

// MessageBytes is what the sender posts for one message (SenderConfig's
// MSS per offset).
func (s *INCStream) MessageBytes() int64 { return int64(s.Params.Offsets) * int64(INCPayload(false)) }

// Message returns the parameters of the stream's message of packet seq.
func (s *INCStream) Message(seq uint64) INCParams {
	p := s.Params
	p.Message = s.Messages[seq/uint64(p.Offsets)]
	return p
}

// Dup reports whether packet seq is sent a second time.
func (s *INCStream) Dup(seq uint64) bool { return s.DupEvery > 0 && (seq+1)%s.DupEvery == 0 }

// Build writes the contribution of packet p, as snd (the stream's sender)
// gave it, or again (an injected copy: Packet{Seq, PSN: snd.PSNOf(Seq)}).
func (s *INCStream) Build(b []byte, path *Path, destQP uint32, snd *Sender, p Packet) (int, error) {
	n := uint64(s.Params.Offsets)
	k := p.Seq / n
	if k >= uint64(len(s.Messages)) {
		return 0, fmt.Errorf("inc: packet %d beyond the stream's %d messages: %w", p.Seq, len(s.Messages), ErrConfig)
	}
	ip := s.Message(p.Seq)
	p.Seq %= n
	p.First = p.Seq == 0
	return path.BuildINC(b, destQP, &p, snd.PSNOf(k*n), ip)
}
