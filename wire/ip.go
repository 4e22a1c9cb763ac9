package wire

import (
	"fmt"
	"net/netip"
)

// Header lengths and constants of IPv4 and UDP.
const (
	IPv4Len = 20 // without options
	UDPLen  = 8

	IPProtoUDP = 17

	// DefaultTTL is the TTL the builders use when Envelope.TTL is 0.
	DefaultTTL = 64

	// IPv4 flag bits (the 3-bit Flags field).
	IPv4FlagDF = 0x2 // don't fragment
	IPv4FlagMF = 0x1 // more fragments
)

// Addr4 is an IPv4 address in network byte order.
type Addr4 [4]byte

// String formats the address in dotted decimal.
func (a Addr4) String() string { return fmt.Sprintf("%d.%d.%d.%d", a[0], a[1], a[2], a[3]) }

// Netip converts the address to a netip.Addr.
func (a Addr4) Netip() netip.Addr { return netip.AddrFrom4(a) }

// Uint32 returns the address as a big-endian integer (the P4 bit<32> value).
func (a Addr4) Uint32() uint32 { return be.Uint32(a[:]) }

// ECN is the 2-bit ECN codepoint of the IPv4 TOS byte (RFC 3168).
type ECN uint8

// ECN codepoints.
const (
	NotECT ECN = 0 // 00 not ECN-capable
	ECT1   ECN = 1 // 01 ECT(1)
	ECT0   ECN = 2 // 10 ECT(0)
	CE     ECN = 3 // 11 congestion experienced
)

// IsECT reports whether e is ECT(0) or ECT(1): a packet that may be marked.
func (e ECN) IsECT() bool { return e == ECT0 || e == ECT1 }

// String returns "Not-ECT", "ECT(1)", "ECT(0)" or "CE".
func (e ECN) String() string {
	switch e & 3 {
	case NotECT:
		return "Not-ECT"
	case ECT1:
		return "ECT(1)"
	case ECT0:
		return "ECT(0)"
	}
	return "CE"
}

// IPv4 is an IPv4 header without options. Decode does not validate version,
// IHL or the checksum: Parse applies the parser's checks, VerifyIPv4Checksum
// the checksum.
type IPv4 struct {
	Version  uint8 // 4 bits
	IHL      uint8 // 4 bits, header length in 32-bit words
	TOS      uint8 // DSCP (high 6 bits) and ECN (low 2 bits)
	TotalLen uint16
	ID       uint16
	Flags    uint8  // 3 bits: reserved, DF, MF
	FragOff  uint16 // 13 bits, in 8-byte units
	TTL      uint8
	Protocol uint8
	Checksum uint16
	Src, Dst Addr4
}

// DSCP returns the 6-bit DSCP.
func (h *IPv4) DSCP() uint8 { return h.TOS >> 2 }

// ECN returns the ECN codepoint.
func (h *IPv4) ECN() ECN { return ECN(h.TOS & 3) }

// SetTOS sets TOS from a DSCP and an ECN codepoint.
func (h *IPv4) SetTOS(dscp uint8, ecn ECN) error {
	if dscp > 63 || ecn > 3 {
		return errRangeDSCP
	}
	h.TOS = dscp<<2 | uint8(ecn)
	return nil
}

// Decode reads the fixed 20-byte header from b[:IPv4Len].
func (h *IPv4) Decode(b []byte) error {
	if len(b) < IPv4Len {
		return truncErr[LayerIPv4]
	}
	h.Version = b[0] >> 4
	h.IHL = b[0] & 0x0F
	h.TOS = b[1]
	h.TotalLen = be.Uint16(b[2:4])
	h.ID = be.Uint16(b[4:6])
	ff := be.Uint16(b[6:8])
	h.Flags = uint8(ff >> 13)
	h.FragOff = ff & 0x1FFF
	h.TTL = b[8]
	h.Protocol = b[9]
	h.Checksum = be.Uint16(b[10:12])
	copy(h.Src[:], b[12:16])
	copy(h.Dst[:], b[16:20])
	return nil
}

// Encode writes the 20-byte header into b exactly as the fields say
// (including Checksum; see SetIPv4Checksum) and returns IPv4Len.
func (h *IPv4) Encode(b []byte) (int, error) {
	if h.Version > 15 || h.IHL > 15 || h.Flags > 7 || h.FragOff > 0x1FFF {
		return 0, errRangeIPv4
	}
	if len(b) < IPv4Len {
		return 0, shortErr[LayerIPv4]
	}
	b[0] = h.Version<<4 | h.IHL
	b[1] = h.TOS
	be.PutUint16(b[2:4], h.TotalLen)
	be.PutUint16(b[4:6], h.ID)
	be.PutUint16(b[6:8], uint16(h.Flags)<<13|h.FragOff)
	b[8] = h.TTL
	b[9] = h.Protocol
	be.PutUint16(b[10:12], h.Checksum)
	copy(b[12:16], h.Src[:])
	copy(b[16:20], h.Dst[:])
	return IPv4Len, nil
}

// sum16 adds b as big-endian 16-bit words (odd length padded with a zero).
func sum16(sum uint32, b []byte) uint32 {
	n := len(b) &^ 1
	for i := 0; i < n; i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)&1 != 0 {
		sum += uint32(b[len(b)-1]) << 8
	}
	return sum
}

func fold(sum uint32) uint16 {
	for sum > 0xFFFF {
		sum = sum&0xFFFF + sum>>16
	}
	return uint16(sum)
}

// ipv4HeaderLen validates the start of an IPv4 header in b and returns its
// length (4*IHL) when b holds all of it.
func ipv4HeaderLen(b []byte) (int, error) {
	if len(b) < IPv4Len {
		return 0, truncErr[LayerIPv4]
	}
	if b[0]>>4 != 4 {
		return 0, errIPv4Version
	}
	n := int(b[0]&0x0F) * 4
	if n < IPv4Len {
		return 0, errIPv4IHL
	}
	if len(b) < n {
		return 0, truncErr[LayerIPv4]
	}
	return n, nil
}

// IPv4Checksum computes the header checksum of the IPv4 header at the start
// of b (4*IHL bytes, options included), treating the checksum field as zero.
func IPv4Checksum(b []byte) (uint16, error) {
	n, err := ipv4HeaderLen(b)
	if err != nil {
		return 0, err
	}
	s := sum16(0, b[:10])
	s = sum16(s, b[12:n])
	return ^fold(s), nil
}

// SetIPv4Checksum computes the checksum of the IPv4 header at the start of b
// and stores it in the header.
func SetIPv4Checksum(b []byte) error {
	c, err := IPv4Checksum(b)
	if err != nil {
		return err
	}
	be.PutUint16(b[10:12], c)
	return nil
}

// VerifyIPv4Checksum reports whether the checksum of the IPv4 header at the
// start of b is correct (the one's-complement sum of the header is 0xFFFF).
func VerifyIPv4Checksum(b []byte) (bool, error) {
	n, err := ipv4HeaderLen(b)
	if err != nil {
		return false, err
	}
	return fold(sum16(0, b[:n])) == 0xFFFF, nil
}

// updateChecksum adjusts the IPv4 header checksum after the 16-bit word at
// b[off:off+2] changed from old to its current value (RFC 1624, eqn. 3).
func updateChecksum(b []byte, off int, old uint16) {
	nw := be.Uint16(b[off:])
	hc := be.Uint16(b[10:12])
	s := uint32(^hc) + uint32(^old) + uint32(nw)
	be.PutUint16(b[10:12], ^fold(s))
}

// SetECN rewrites the ECN bits of the IPv4 header at the start of b and
// updates the header checksum incrementally. The RoCEv2 ICRC does not cover
// the TOS byte, so it stays valid.
func SetECN(b []byte, e ECN) error {
	if e > 3 {
		return errRangeECNField
	}
	if _, err := ipv4HeaderLen(b); err != nil {
		return err
	}
	old := be.Uint16(b[0:2])
	b[1] = b[1]&^3 | uint8(e)
	updateChecksum(b, 0, old)
	return nil
}

// MarkCE sets CE on the IPv4 header at the start of b if the packet is
// ECN-capable (ECT(0), ECT(1) or already CE), fixing the checksum, and
// returns the codepoint it had before. A Not-ECT packet is left unchanged
// (RFC 3168 forbids marking it); callers that count marks test prev.IsECT().
func MarkCE(b []byte) (prev ECN, err error) {
	if _, err := ipv4HeaderLen(b); err != nil {
		return 0, err
	}
	prev = ECN(b[1] & 3)
	if prev == NotECT || prev == CE {
		return prev, nil
	}
	return prev, SetECN(b, CE)
}

// DecTTL decrements the TTL of the IPv4 header at the start of b and updates
// the checksum incrementally (routing). A TTL of 0 is an ErrRange error and
// the header is left unchanged.
func DecTTL(b []byte) error {
	if _, err := ipv4HeaderLen(b); err != nil {
		return err
	}
	if b[8] == 0 {
		return errRangeTTL
	}
	old := be.Uint16(b[8:10])
	b[8]--
	updateChecksum(b, 8, old)
	return nil
}

// UDP is a UDP header.
type UDP struct {
	SrcPort, DstPort uint16
	Length           uint16 // header + payload
	Checksum         uint16 // 0 = none (RoCEv2 senders use 0)
}

// Decode reads the header from b[:UDPLen].
func (h *UDP) Decode(b []byte) error {
	if len(b) < UDPLen {
		return truncErr[LayerUDP]
	}
	h.SrcPort = be.Uint16(b[0:2])
	h.DstPort = be.Uint16(b[2:4])
	h.Length = be.Uint16(b[4:6])
	h.Checksum = be.Uint16(b[6:8])
	return nil
}

// Encode writes the header into b and returns UDPLen.
func (h *UDP) Encode(b []byte) (int, error) {
	if len(b) < UDPLen {
		return 0, shortErr[LayerUDP]
	}
	be.PutUint16(b[0:2], h.SrcPort)
	be.PutUint16(b[2:4], h.DstPort)
	be.PutUint16(b[4:6], h.Length)
	be.PutUint16(b[6:8], h.Checksum)
	return UDPLen, nil
}

// UDPChecksum computes the UDP checksum of the datagram udp (header and
// payload, len(udp) bytes, checksum field treated as zero) carried between
// IPv4 addresses src and dst. A computed 0 is returned as 0xFFFF (RFC 768).
func UDPChecksum(src, dst Addr4, udp []byte) (uint16, error) {
	if len(udp) < UDPLen {
		return 0, truncErr[LayerUDP]
	}
	if len(udp) > 0xFFFF {
		return 0, errRangePayload
	}
	s := sum16(0, src[:])
	s = sum16(s, dst[:])
	s += IPProtoUDP + uint32(len(udp))
	s = sum16(s, udp[:6])
	s = sum16(s, udp[8:])
	c := ^fold(s)
	if c == 0 {
		c = 0xFFFF
	}
	return c, nil
}
