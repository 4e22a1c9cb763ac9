package pipeline

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/fastcnp/fastcnp/p4src"
)

var crc32Table = crc32.MakeTable(crc32.IEEE)

// crc16Table is CRC-16/ARC (poly 0x8005 reflected = 0xA001, init 0, no final xor),
// BMv2's crc16.
var crc16Table = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i)
		for range 8 {
			if c&1 != 0 {
				c = c>>1 ^ 0xA001
			} else {
				c >>= 1
			}
		}
		t[i] = c
	}
	return t
}()

// crc32Of is CRC-32/IEEE (BMv2's crc32) written out so that stack buffers do not escape.
func crc32Of(b []byte) uint32 {
	c := ^uint32(0)
	for _, v := range b {
		c = crc32Table[byte(c)^v] ^ c>>8
	}
	return ^c
}

func crc16Of(b []byte) uint16 {
	var c uint16
	for _, v := range b {
		c = crc16Table[byte(c)^v] ^ c>>8
	}
	return c
}

// FlowHash returns crc32(src_addr ++ dst_addr), the flow fingerprint; the flow slot is
// FlowHash & (FLOW_SLOTS-1).
func FlowHash(src, dst uint32) uint32 {
	var b [8]byte
	binary.BigEndian.PutUint32(b[0:], src)
	binary.BigEndian.PutUint32(b[4:], dst)
	return crc32Of(b[:])
}

// IncSlot returns crc32(inc_id ++ offset) & (INC_SLOTS-1).
func IncSlot(incID, offset uint32) uint32 {
	var b [8]byte
	binary.BigEndian.PutUint32(b[0:], incID)
	binary.BigEndian.PutUint32(b[4:], offset)
	return crc32Of(b[:]) & (p4src.IncSlots - 1)
}

// IncBucket returns crc16(inc_id ++ version ++ udp_dst_port) & (INC_BUCKETS-1).
func IncBucket(incID uint32, version uint8, udpDstPort uint16) uint32 {
	var b [7]byte
	binary.BigEndian.PutUint32(b[0:], incID)
	b[4] = version
	binary.BigEndian.PutUint16(b[5:], udpDstPort)
	return uint32(crc16Of(b[:])) & (p4src.IncBuckets - 1)
}

// updateCsum adjusts the IPv4 checksum of the header ip after the 16-bit word at
// ip[off:] changed from old (RFC 1624 eqn. 3).
func updateCsum(ip []byte, off int, old uint16) {
	nw := binary.BigEndian.Uint16(ip[off:])
	s := uint32(^binary.BigEndian.Uint16(ip[10:])) + uint32(^old) + uint32(nw)
	for s > 0xFFFF {
		s = s&0xFFFF + s>>16
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(s))
}
