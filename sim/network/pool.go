package network

import "github.com/fastcnp/fastcnp/model/pipeline"

// pool holds the frames in the network: a frame is an index (its handle in the
// traffic managers and in events) to a fixed slot of slotBytes bytes, its length and
// the pipeline metadata it carries from ingress to egress. Slots come in chunks and
// are recycled, so a run allocates only while the network fills up; no pointers in
// the slots keep the garbage collector away.
type pool struct {
	chunks [][]byte
	n      []int32 // frame length per slot
	cls    []uint8 // accounting class per slot (classOf)
	meta   []pipeline.PacketMeta
	free   []int32
	inUse  int
}

const (
	chunkBits  = 10
	chunkSlots = 1 << chunkBits
)

// get returns a free slot whose frame is n bytes long.
func (p *pool) get(n int) int32 {
	if len(p.free) == 0 {
		base := int32(len(p.n))
		p.chunks = append(p.chunks, make([]byte, chunkSlots*slotBytes))
		p.n = append(p.n, make([]int32, chunkSlots)...)
		p.cls = append(p.cls, make([]uint8, chunkSlots)...)
		p.meta = append(p.meta, make([]pipeline.PacketMeta, chunkSlots)...)
		for i := int32(chunkSlots) - 1; i >= 0; i-- {
			p.free = append(p.free, base+i)
		}
	}
	i := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	p.n[i] = int32(n)
	p.inUse++
	return i
}

// put recycles slot i.
func (p *pool) put(i int32) {
	p.free = append(p.free, i)
	p.inUse--
}

// buf returns the whole slot of i (slotBytes long).
func (p *pool) buf(i int32) []byte {
	off := int(i&(chunkSlots-1)) * slotBytes
	return p.chunks[i>>chunkBits][off : off+slotBytes : off+slotBytes]
}

// frame returns the frame in slot i.
func (p *pool) frame(i int32) []byte { return p.buf(i)[:p.n[i]] }
