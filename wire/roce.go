package wire

import "hash/crc32"

// Header lengths and constants of RoCEv2.
const (
	BTHLen    = 12
	AETHLen   = 4
	CNPExtLen = 16
	ICRCLen   = 4

	// RoCEv2UDPPort is the IANA UDP destination port of RoCEv2.
	RoCEv2UDPPort = 4791
	// DefaultPKey is the default (full-membership) partition key.
	DefaultPKey = 0xFFFF
	// MaxQPN and MaxPSN are the largest 24-bit values.
	MaxQPN = 0xFFFFFF
	MaxPSN = 0xFFFFFF

	// BTHResv7ECE is fastcnp's ECN echo (ECE) in an RC ACK: the highest
	// reserved bit of BTH byte 8 (Resv7 0x40), set by the receiver when data
	// this ACK acknowledges arrived CE-marked (for DCTCP senders).
	BTHResv7ECE = 0x40
)

// BTH opcodes (IBTA Vol. 1, 9.2; 0x81 is RoCEv2's CNP, Annex A17).
const (
	OpRCSendFirst          uint8 = 0x00
	OpRCSendMiddle         uint8 = 0x01
	OpRCSendLast           uint8 = 0x02
	OpRCSendLastImm        uint8 = 0x03
	OpRCSendOnly           uint8 = 0x04
	OpRCSendOnlyImm        uint8 = 0x05
	OpRCWriteFirst         uint8 = 0x06
	OpRCWriteMiddle        uint8 = 0x07
	OpRCWriteLast          uint8 = 0x08
	OpRCWriteLastImm       uint8 = 0x09
	OpRCWriteOnly          uint8 = 0x0A
	OpRCWriteOnlyImm       uint8 = 0x0B
	OpRCReadRequest        uint8 = 0x0C
	OpRCReadResponseFirst  uint8 = 0x0D
	OpRCReadResponseMiddle uint8 = 0x0E
	OpRCReadResponseLast   uint8 = 0x0F
	OpRCReadResponseOnly   uint8 = 0x10
	OpRCAcknowledge        uint8 = 0x11
	OpRCAtomicAcknowledge  uint8 = 0x12
	OpRCCompareSwap        uint8 = 0x13
	OpRCFetchAdd           uint8 = 0x14
	OpRCSendLastInvalidate uint8 = 0x16
	OpRCSendOnlyInvalidate uint8 = 0x17
	OpUCSendFirst          uint8 = 0x20
	OpUCSendMiddle         uint8 = 0x21
	OpUCSendLast           uint8 = 0x22
	OpUCSendOnly           uint8 = 0x24
	OpUCWriteOnly          uint8 = 0x2A
	OpUDSendOnly           uint8 = 0x64
	OpUDSendOnlyImm        uint8 = 0x65
	OpCNP                  uint8 = 0x81
)

// AETH syndromes (IBTA Vol. 1, 9.7.5.2.2): bit 7 reserved, bits 6-5 the
// kind, bits 4-0 the credit count (ACK), timer (RNR NAK) or code (NAK).
const (
	AETHKindACK    uint8 = 0x00
	AETHKindRNRNAK uint8 = 0x20
	AETHKindNAK    uint8 = 0x60

	// SyndromeACK is an ACK with an invalid credit count (0x1F): what RoCE
	// NICs send when end-to-end credits are not used.
	SyndromeACK uint8 = AETHKindACK | 0x1F
	// SyndromeNAKPSNSequence is a NAK for a PSN sequence error.
	SyndromeNAKPSNSequence uint8 = AETHKindNAK | 0x00
	// SyndromeNAKInvalidRequest is a NAK for an invalid request.
	SyndromeNAKInvalidRequest uint8 = AETHKindNAK | 0x01
	// SyndromeNAKRemoteAccess is a NAK for a remote access error.
	SyndromeNAKRemoteAccess uint8 = AETHKindNAK | 0x02
	// SyndromeNAKRemoteOperational is a NAK for a remote operational error.
	SyndromeNAKRemoteOperational uint8 = AETHKindNAK | 0x03
)

// BTH is the InfiniBand Base Transport Header.
type BTH struct {
	Opcode   uint8
	SE       bool   // solicited event
	M        bool   // migration request
	PadCount uint8  // 2 bits
	TVer     uint8  // 4 bits, transport header version (0)
	PKey     uint16 // partition key
	// Resv8a is byte 4: reserved in IBTA (FECN/BECN in RoCE practice), masked
	// out of the ICRC; fastcnp sets it to INCBTHMark on INC packets.
	Resv8a uint8
	DestQP uint32 // 24 bits
	AckReq bool   // A bit
	Resv7  uint8  // 7 bits, 0
	PSN    uint32 // 24 bits
}

// Decode reads the header from b[:BTHLen].
func (h *BTH) Decode(b []byte) error {
	if len(b) < BTHLen {
		return truncErr[LayerBTH]
	}
	h.Opcode = b[0]
	h.SE = b[1]&0x80 != 0
	h.M = b[1]&0x40 != 0
	h.PadCount = b[1] >> 4 & 3
	h.TVer = b[1] & 0x0F
	h.PKey = be.Uint16(b[2:4])
	h.Resv8a = b[4]
	h.DestQP = be.Uint32(b[4:8]) & MaxQPN
	h.AckReq = b[8]&0x80 != 0
	h.Resv7 = b[8] & 0x7F
	h.PSN = be.Uint32(b[8:12]) & MaxPSN
	return nil
}

// Encode writes the header into b and returns BTHLen.
func (h *BTH) Encode(b []byte) (int, error) {
	if h.PadCount > 3 || h.TVer > 15 || h.DestQP > MaxQPN || h.PSN > MaxPSN || h.Resv7 > 0x7F {
		return 0, errRangeBTH
	}
	if len(b) < BTHLen {
		return 0, shortErr[LayerBTH]
	}
	b[0] = h.Opcode
	b1 := h.PadCount<<4 | h.TVer
	if h.SE {
		b1 |= 0x80
	}
	if h.M {
		b1 |= 0x40
	}
	b[1] = b1
	be.PutUint16(b[2:4], h.PKey)
	be.PutUint32(b[4:8], uint32(h.Resv8a)<<24|h.DestQP)
	a := uint32(h.Resv7) << 24
	if h.AckReq {
		a |= 0x80 << 24
	}
	be.PutUint32(b[8:12], a|h.PSN)
	return BTHLen, nil
}

// AETH is the ACK Extended Transport Header of RC ACKs and NAKs.
type AETH struct {
	Syndrome uint8
	MSN      uint32 // 24 bits, message sequence number
}

// Decode reads the header from b[:AETHLen].
func (h *AETH) Decode(b []byte) error {
	if len(b) < AETHLen {
		return truncErr[LayerAETH]
	}
	v := be.Uint32(b)
	h.Syndrome = uint8(v >> 24)
	h.MSN = v & 0xFFFFFF
	return nil
}

// Encode writes the header into b and returns AETHLen.
func (h *AETH) Encode(b []byte) (int, error) {
	if h.MSN > 0xFFFFFF {
		return 0, errRangeAETH
	}
	if len(b) < AETHLen {
		return 0, shortErr[LayerAETH]
	}
	be.PutUint32(b, uint32(h.Syndrome)<<24|h.MSN)
	return AETHLen, nil
}

// IsACK reports whether the syndrome is a positive ACK.
func (h *AETH) IsACK() bool { return h.Syndrome&0x60 == AETHKindACK }

// IsNAK reports whether the syndrome is a NAK (not an RNR NAK).
func (h *AETH) IsNAK() bool { return h.Syndrome&0x60 == AETHKindNAK }

// CNP extension flags and version.
const (
	CNPExtVersion     = 1
	CNPExtWindowValid = 0x1 // Window carries a window
	CNPExtBySwitch    = 0x2 // made by a switch (congestion point), not a receiver NP
)

// CNPExt is the fastcnp CNP extension carried in the 16 reserved bytes that
// follow the BTH of a CNP. An all-zero extension is a plain CNP.
type CNPExt struct {
	Version    uint8 // high 4 bits of byte 0, = CNPExtVersion
	Flags      uint8 // low 4 bits of byte 0
	Resv1      uint8
	SwitchID   uint16 // congestion-point switch ID
	Window     uint32 // bytes, 0 = none
	Port       uint16 // egress port at the congestion point
	QueueBytes uint32 // queued bytes at that port when the CNP was made
	Resv2      uint16
}

// IsZero reports whether the extension is all zeros (a plain CNP).
func (h *CNPExt) IsZero() bool { return *h == CNPExt{} }

// WindowValid reports whether the window-valid flag is set.
func (h *CNPExt) WindowValid() bool { return h.Flags&CNPExtWindowValid != 0 }

// BySwitch reports whether the by-switch flag is set.
func (h *CNPExt) BySwitch() bool { return h.Flags&CNPExtBySwitch != 0 }

// Decode reads the extension from b[:CNPExtLen].
func (h *CNPExt) Decode(b []byte) error {
	if len(b) < CNPExtLen {
		return truncErr[LayerCNPExt]
	}
	h.Version = b[0] >> 4
	h.Flags = b[0] & 0x0F
	h.Resv1 = b[1]
	h.SwitchID = be.Uint16(b[2:4])
	h.Window = be.Uint32(b[4:8])
	h.Port = be.Uint16(b[8:10])
	h.QueueBytes = be.Uint32(b[10:14])
	h.Resv2 = be.Uint16(b[14:16])
	return nil
}

// Encode writes the extension into b and returns CNPExtLen.
func (h *CNPExt) Encode(b []byte) (int, error) {
	if h.Version > 15 || h.Flags > 15 {
		return 0, errRangeCNPExt
	}
	if len(b) < CNPExtLen {
		return 0, shortErr[LayerCNPExt]
	}
	b[0] = h.Version<<4 | h.Flags
	b[1] = h.Resv1
	be.PutUint16(b[2:4], h.SwitchID)
	be.PutUint32(b[4:8], h.Window)
	be.PutUint16(b[8:10], h.Port)
	be.PutUint32(b[10:14], h.QueueBytes)
	be.PutUint16(b[14:16], h.Resv2)
	return CNPExtLen, nil
}

// crcTables are the slicing-by-8 tables of the reflected CRC-32
// (polynomial 0x04C11DB7, reflected 0xEDB88320): the Ethernet CRC that the
// ICRC uses. crcTables[0] is the classic byte-wise table.
var crcTables = func() (t [8][256]uint32) {
	t[0] = *crc32.MakeTable(crc32.IEEE)
	for i := 0; i < 256; i++ {
		c := t[0][i]
		for k := 1; k < 8; k++ {
			c = t[0][byte(c)] ^ c>>8
			t[k][i] = c
		}
	}
	return t
}()

// crcUpdate follows hash/crc32's Update convention (pre- and post-inverted).
// It exists so that the masked pseudo-header, on the stack, does not escape
// through hash/crc32's indirect fast path (which would allocate).
func crcUpdate(crc uint32, p []byte) uint32 {
	t := &crcTables
	crc = ^crc
	for len(p) >= 8 {
		crc ^= uint32(p[0]) | uint32(p[1])<<8 | uint32(p[2])<<16 | uint32(p[3])<<24
		crc = t[0][p[7]] ^ t[1][p[6]] ^ t[2][p[5]] ^ t[3][p[4]] ^
			t[4][crc>>24] ^ t[5][crc>>16&0xFF] ^ t[6][crc>>8&0xFF] ^ t[7][crc&0xFF]
		p = p[8:]
	}
	for _, v := range p {
		crc = t[0][byte(crc)^v] ^ crc>>8
	}
	return ^crc
}

// crcAfterLRH is crcUpdate(0, 8 bytes of 0xFF): the state after the masked
// LRH (rxe_icrc.c's seed 0xdebb20e3, un-inverted).
const crcAfterLRH = ^uint32(0xdebb20e3)

// icrcPrefixLen is the masked part after the LRH: IPv4, UDP, BTH.
const icrcPrefixLen = IPv4Len + UDPLen + BTHLen

// ICRC computes the RoCEv2 invariant CRC (IBTA Annex A17) of the packet whose
// IPv4 header starts at ip[0]. The packet's extent is the IPv4 total length
// (so Ethernet padding after it is ignored); its last 4 bytes are the ICRC
// field, which is not covered. It returns the CRC value c and the offset of
// the ICRC field within ip; on the wire the field holds c least-significant
// byte first (binary.LittleEndian.PutUint32), as RoCE NICs send it.
//
// Covered: 8 bytes of 0xFF (masked LRH), the IPv4 header with TOS, TTL and
// checksum set to all ones, the UDP header with its checksum set to all
// ones, the BTH with byte 4 set to all ones, then everything up to the ICRC.
// The IPv4 header must have no options (IHL 5), as in RoCEv2. A packet whose
// BTH byte 4 is INTBTHMark (not a CNP) is covered as if its INT header and
// records were absent: the IPv4 total length and UDP length less their
// bytes, and the bytes after them.
func ICRC(ip []byte) (crc uint32, icrcOff int, err error) {
	if len(ip) < IPv4Len {
		return 0, 0, truncErr[LayerICRC]
	}
	if ip[0] != 0x45 {
		return 0, 0, errICRCIHL
	}
	total := int(be.Uint16(ip[2:4]))
	if total < IPv4Len+UDPLen+BTHLen+ICRCLen {
		return 0, 0, errICRCTotalLen
	}
	if total > len(ip) {
		return 0, 0, errICRCTrunc
	}
	if int(be.Uint16(ip[IPv4Len+4:])) != total-IPv4Len {
		return 0, 0, errICRCUDPLen
	}
	// An INT header and its records are not covered (switches add records
	// without updating the ICRC): the CRC is that of the packet without them.
	skip, err := intExtent(ip[:total])
	if err != nil {
		return 0, 0, err
	}
	if total < icrcPrefixLen+skip+ICRCLen {
		return 0, 0, errICRCINT
	}
	var m [icrcPrefixLen]byte
	copy(m[:], ip[:icrcPrefixLen])
	if skip > 0 {
		be.PutUint16(m[2:4], uint16(total-skip))
		be.PutUint16(m[IPv4Len+4:IPv4Len+6], uint16(total-IPv4Len-skip))
	}
	m[1] = 0xFF                // TOS
	m[8] = 0xFF                // TTL
	m[10], m[11] = 0xFF, 0xFF  // IPv4 checksum
	m[IPv4Len+6] = 0xFF        // UDP checksum
	m[IPv4Len+7] = 0xFF        //
	m[IPv4Len+UDPLen+4] = 0xFF // BTH resv8a
	crc = crcUpdate(crcAfterLRH, m[:])
	off := total - ICRCLen
	if rest := ip[icrcPrefixLen+skip : off]; len(rest) < 64 {
		crc = crcUpdate(crc, rest) // hash/crc32 only pays off (CLMUL) from 64 bytes
	} else {
		crc = crc32.Update(crc, crc32.IEEETable, rest)
	}
	return crc, off, nil
}

// SetICRC computes the ICRC of the RoCEv2 packet whose IPv4 header starts at
// ip[0] (see ICRC) and writes it into the packet's last 4 bytes.
func SetICRC(ip []byte) error {
	c, off, err := ICRC(ip)
	if err != nil {
		return err
	}
	putICRC(ip[off:], c)
	return nil
}

// VerifyICRC reports whether the ICRC field of the RoCEv2 packet whose IPv4
// header starts at ip[0] matches its content.
func VerifyICRC(ip []byte) (bool, error) {
	c, off, err := ICRC(ip)
	if err != nil {
		return false, err
	}
	return getICRC(ip[off:]) == c, nil
}

func putICRC(b []byte, c uint32) {
	b[0], b[1], b[2], b[3] = byte(c), byte(c>>8), byte(c>>16), byte(c>>24)
}

func getICRC(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
