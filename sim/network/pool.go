package network

import (
	"unsafe"

	"github.com/fastcnp/fastcnp/model/pipeline"
)

// pool holds the frames in the network: a frame is an index (its handle in the
// traffic managers and in events) to a fixed slot: its length, accounting class and
// the pipeline metadata it carries from ingress to egress, then its bytes (slotBytes
// of them). Slots come in chunks and are recycled, so a run allocates only while the
// network fills up; no pointers in the slots keep the garbage collector away.
type pool struct {
	chunks [][]slot
	free   []int32
	inUse  int
}

// slot is one frame. What a hop reads of a frame (its metadata and its headers)
// lies in a few adjacent cache lines of one page: in a large network the frames in
// flight do not fit in the caches, and separate arrays per field cost a miss each.
type slot struct {
	meta pipeline.PacketMeta
	n    int32                                                     // frame length
	cls  uint8                                                     // accounting class (classOf)
	_    [slotHead - unsafe.Sizeof(pipeline.PacketMeta{}) - 5]byte // a larger PacketMeta needs a larger slotHead
	b    [slotBytes]byte
}

// slotHead puts the frame bytes on a cache line boundary after the metadata.
const slotHead = 128

const (
	chunkBits  = 10
	chunkSlots = 1 << chunkBits
)

// s returns slot i.
func (p *pool) s(i int32) *slot { return &p.chunks[i>>chunkBits][i&(chunkSlots-1)] }

// get returns a free slot whose frame is n bytes long.
func (p *pool) get(n int) int32 {
	if len(p.free) == 0 {
		base := int32(len(p.chunks) * chunkSlots)
		p.chunks = append(p.chunks, make([]slot, chunkSlots))
		for i := int32(chunkSlots) - 1; i >= 0; i-- {
			p.free = append(p.free, base+i)
		}
	}
	i := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	p.s(i).n = int32(n)
	p.inUse++
	return i
}

// put recycles slot i.
func (p *pool) put(i int32) {
	p.free = append(p.free, i)
	p.inUse--
}

// buf returns the whole slot of i (slotBytes long).
func (p *pool) buf(i int32) []byte { return p.s(i).b[:] }

// frame returns the frame in slot i.
func (p *pool) frame(i int32) []byte {
	s := p.s(i)
	return s.b[:s.n]
}
