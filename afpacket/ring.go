//go:build linux

package afpacket

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The TPACKET_V2 receive ring (Options.RxRing, docs/ports.md). Each slot starts with
// a struct tpacket2_hdr (status word, lengths, offset of the frame, VLAN tag the
// kernel stripped), then the sockaddr_ll, then the frame at tp_mac. The kernel fills
// the slots in order and hands each to user space by setting TP_STATUS_USER; the
// reader hands it back with TP_STATUS_KERNEL. Frames waiting in the ring therefore
// are the run of TP_STATUS_USER slots that starts at the reader's position.

const (
	// ringHdrRoom is what precedes the frame in a slot: the kernel puts the MAC
	// header at TPACKET_ALIGN(TPACKET2_HDRLEN + 16) - 14 = 66 for SOCK_RAW; 96
	// leaves room.
	ringHdrRoom = 96
	// ringBlock is the ring's allocation unit (contiguous kernel pages per block).
	ringBlock = 128 << 10
	// sllPkttypeOff is sll_pkttype's offset in a slot: sockaddr_ll follows the
	// 32-byte tpacket2_hdr, and sll_pkttype is its 11th byte.
	sllPkttypeOff = 32 + 10
)

// setupRing makes fd a TPACKET_V2 socket with a receive ring of about size bytes for
// frames up to maxFrame, and maps it. It returns the mapping, the slot size and the
// number of slots.
func setupRing(fd, maxFrame, size int) ([]byte, int, int, error) {
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V2); err != nil {
		return nil, 0, 0, fmt.Errorf("PACKET_VERSION TPACKET_V2: %w", err)
	}
	slot := 1 << bits.Len(uint(ringHdrRoom+maxFrame-1)) // power of two: slots tile the blocks
	block := max(slot, ringBlock)
	blocks := max(1, size/block)
	req := unix.TpacketReq{Block_size: uint32(block), Block_nr: uint32(blocks), Frame_size: uint32(slot),
		Frame_nr: uint32(blocks * (block / slot))}
	if err := unix.SetsockoptTpacketReq(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return nil, 0, 0, fmt.Errorf("PACKET_RX_RING %+v: %w", req, err)
	}
	mem, err := unix.Mmap(fd, 0, block*blocks, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("mmap of the receive ring: %w", err)
	}
	return mem, slot, int(req.Frame_nr), nil
}

// ringHdr returns the header of slot i.
func (p *Port) ringHdr(i int) *unix.Tpacket2Hdr {
	return (*unix.Tpacket2Hdr)(unsafe.Pointer(&p.ring[i*p.ringSlot]))
}

// ringStatus is the status word of slot i, read and written atomically: the kernel
// hands the slot over with it.
func (p *Port) ringStatus(i int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&p.ringHdr(i).Status))
}

// ringReady is the poller callback of a reader on a ring (rxFn): whether the next slot
// holds a frame. It makes no system call; when it says no, the reader parks until the
// kernel signals a new frame.
func (p *Port) ringReady(uintptr) bool {
	return p.ringStatus(int(p.ringCur.Load())).Load()&unix.TP_STATUS_USER != 0
}

// readRing is ReadBatch on a ring: it waits until a frame is ready, then copies up
// to len(msgs) waiting frames out of the ring (VLAN tag put back, oversize and
// outgoing frames dropped and counted as with recvmmsg) and returns them. Called
// with rxMu held, the port open.
func (p *Port) readRing(ctx context.Context, msgs []Message) (int, error) {
	for i := range msgs {
		if len(msgs[i].Buf) < p.maxFrame {
			return 0, fmt.Errorf("port %s: message %d has %d bytes, need %d: %w",
				p.name, i, len(msgs[i].Buf), p.maxFrame, ErrShortBuffer)
		}
	}
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, p.rxIntr)
		defer stop()
	}
	for {
		if err := p.wait(ctx, false); err != nil { // rxFn is ringReady
			return 0, err
		}
		n, bytes, taken := 0, uint64(0), 0
		cur := int(p.ringCur.Load())
		for n < len(msgs) {
			st := p.ringStatus(cur)
			status := st.Load()
			if status&unix.TP_STATUS_USER == 0 {
				break
			}
			if frameLen, ok := p.ringFrame(cur, status, msgs[n].Buf); ok {
				msgs[n].N = frameLen
				bytes += uint64(frameLen)
				n++
			}
			st.Store(unix.TP_STATUS_KERNEL)
			cur++
			if cur == p.ringSlots {
				cur = 0
			}
			taken++
		}
		p.ringCur.Store(int64(cur))
		p.rxDequeued.Add(uint64(taken))
		if n > 0 {
			p.rxPackets.Add(uint64(n))
			p.rxBytes.Add(bytes)
			return n, nil
		}
		// Everything taken was dropped: wait for more.
	}
}

// ringFrame copies the frame of slot i (status read) into buf, putting back the VLAN
// tag the kernel stripped; ok is false for a frame the port drops (counted).
func (p *Port) ringFrame(i int, status uint32, buf []byte) (int, bool) {
	h := p.ringHdr(i)
	s := p.ring[i*p.ringSlot : (i+1)*p.ringSlot]
	if s[sllPkttypeOff] == unix.PACKET_OUTGOING {
		p.outgoing.Add(1)
		return 0, false
	}
	length, snap, mac := int(h.Len), int(h.Snaplen), int(h.Mac)
	vlan := status&unix.TP_STATUS_VLAN_VALID != 0 || h.Vlan_tci != 0
	frameLen := length
	if vlan {
		frameLen += VLANTagLen
	}
	if frameLen > p.maxFrame || snap < length || mac+snap > len(s) || length < 12 {
		p.oversize.Add(1)
		return 0, false
	}
	if status&unix.TP_STATUS_CSUMNOTREADY != 0 {
		p.csumPartial.Add(1)
	}
	data := s[mac : mac+length]
	if !vlan {
		copy(buf, data)
		return length, true
	}
	tpid := h.Vlan_tpid
	if status&unix.TP_STATUS_VLAN_TPID_VALID == 0 || tpid == 0 {
		tpid = 0x8100
	}
	copy(buf, data[:12])
	binary.BigEndian.PutUint16(buf[12:], tpid)
	binary.BigEndian.PutUint16(buf[14:], h.Vlan_tci)
	copy(buf[12+VLANTagLen:], data[12:])
	return frameLen, true
}

// ringBacklog measures the ring: the run of TP_STATUS_USER slots from the reader's
// position, found by bisection (the kernel fills slots in order and the reader
// empties them in order), and the kernel's drops (PACKET_STATISTICS). Called with
// blMu held, the port open.
func (p *Port) ringBacklog() Backlog {
	cur := int(p.ringCur.Load())
	user := func(k int) bool {
		i := cur + k
		if i >= p.ringSlots {
			i -= p.ringSlots
		}
		return p.ringStatus(i).Load()&unix.TP_STATUS_USER != 0
	}
	lo, hi := 0, p.ringSlots // user(k) for k < lo; !user(k) for k >= hi
	if user(p.ringSlots - 1) {
		lo = p.ringSlots
	}
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if user(mid) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	p.pollKernelStats()
	p.statsMu.Lock()
	drops := p.kernDrops
	p.statsMu.Unlock()
	return Backlog{Bytes: int64(lo * p.ringSlot), Capacity: int64(p.ringSize), Drops: drops}
}
