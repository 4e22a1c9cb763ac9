package wire

import (
	"encoding/binary"
	"fmt"
)

var be = binary.BigEndian

// Header lengths and constants of the link layer.
const (
	EthernetLen   = 14
	Dot1QLen      = 4
	MACControlLen = 2  // the opcode
	PFCLen        = 18 // class-enable vector + 8 pause times
	PauseLen      = 2  // pause time
	// MACControlMinLen is what the parser needs after Ethernet[/802.1Q] for
	// any MAC control frame: the P4 header mac_control_h (opcode + 16 bits).
	MACControlMinLen = 4
	PacketInLen      = 2
	PacketOutLen     = 2
	// MinFrameLen is the Ethernet minimum frame length without FCS; the
	// builders pad shorter frames with zeros up to it, as NICs do.
	MinFrameLen = 60

	EtherTypeIPv4       = 0x0800
	EtherTypeDot1Q      = 0x8100
	EtherTypeMACControl = 0x8808

	MACControlOpPause = 0x0001 // 802.3x link PAUSE
	MACControlOpPFC   = 0x0101 // 802.1Qbb priority-based flow control

	// ReasonAnnouncement is the packet_in reason of a punted announcement.
	ReasonAnnouncement = 1
	// MaxPort is the largest 9-bit port number.
	MaxPort = 511
)

// MAC is an Ethernet address.
type MAC [6]byte

// MACControlDst is the destination of PFC and PAUSE frames, 01:80:C2:00:00:01.
var MACControlDst = MAC{0x01, 0x80, 0xC2, 0x00, 0x00, 0x01}

// String formats the address as aa:bb:cc:dd:ee:ff.
func (m MAC) String() string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

// Ethernet is an Ethernet II header.
type Ethernet struct {
	Dst, Src  MAC
	EtherType uint16
}

// Decode reads the header from b[:EthernetLen].
func (h *Ethernet) Decode(b []byte) error {
	if len(b) < EthernetLen {
		return truncErr[LayerEthernet]
	}
	copy(h.Dst[:], b[0:6])
	copy(h.Src[:], b[6:12])
	h.EtherType = be.Uint16(b[12:14])
	return nil
}

// Encode writes the header into b and returns EthernetLen.
func (h *Ethernet) Encode(b []byte) (int, error) {
	if len(b) < EthernetLen {
		return 0, shortErr[LayerEthernet]
	}
	copy(b[0:6], h.Dst[:])
	copy(b[6:12], h.Src[:])
	be.PutUint16(b[12:14], h.EtherType)
	return EthernetLen, nil
}

// Dot1Q is an 802.1Q tag as the P4 program sees it: the 4 bytes after an
// Ethernet header whose EtherType is 0x8100 (TCI, then the inner EtherType).
type Dot1Q struct {
	PCP       uint8  // 3 bits
	DEI       bool   // 1 bit
	VID       uint16 // 12 bits
	EtherType uint16 // inner EtherType
}

// Decode reads the tag from b[:Dot1QLen].
func (h *Dot1Q) Decode(b []byte) error {
	if len(b) < Dot1QLen {
		return truncErr[LayerDot1Q]
	}
	tci := be.Uint16(b[0:2])
	h.PCP = uint8(tci >> 13)
	h.DEI = tci&0x1000 != 0
	h.VID = tci & 0x0FFF
	h.EtherType = be.Uint16(b[2:4])
	return nil
}

// Encode writes the tag into b and returns Dot1QLen.
func (h *Dot1Q) Encode(b []byte) (int, error) {
	if h.PCP > 7 || h.VID > 0x0FFF {
		return 0, errRangeVLAN
	}
	if len(b) < Dot1QLen {
		return 0, shortErr[LayerDot1Q]
	}
	tci := uint16(h.PCP)<<13 | h.VID
	if h.DEI {
		tci |= 0x1000
	}
	be.PutUint16(b[0:2], tci)
	be.PutUint16(b[2:4], h.EtherType)
	return Dot1QLen, nil
}

// MACControl is the opcode that starts every MAC control frame (EtherType
// 0x8808). The PFC or PAUSE body follows it. (The P4 parser extracts the
// opcode and the next 16 bits as one 4-byte header for any opcode; Parse
// requires those 4 bytes too, see Parse.)
type MACControl struct {
	Opcode uint16
}

// Decode reads the opcode from b[:MACControlLen].
func (h *MACControl) Decode(b []byte) error {
	if len(b) < MACControlLen {
		return truncErr[LayerMACControl]
	}
	h.Opcode = be.Uint16(b)
	return nil
}

// Encode writes the opcode into b and returns MACControlLen.
func (h *MACControl) Encode(b []byte) (int, error) {
	if len(b) < MACControlLen {
		return 0, shortErr[LayerMACControl]
	}
	be.PutUint16(b, h.Opcode)
	return MACControlLen, nil
}

// PFC is the body of an 802.1Qbb PFC frame (after the opcode 0x0101).
type PFC struct {
	// ClassEnable: bit i set means Time[i] applies to priority i.
	ClassEnable uint16
	// Time holds the pause time of each priority in quanta of 512 bit times;
	// 0 for an enabled class means resume (XON).
	Time [8]uint16
}

// Enabled reports whether the class-enable bit of priority prio is set.
func (h *PFC) Enabled(prio uint8) bool { return prio < 8 && h.ClassEnable&(1<<prio) != 0 }

// Decode reads the body from b[:PFCLen].
func (h *PFC) Decode(b []byte) error {
	if len(b) < PFCLen {
		return truncErr[LayerPFC]
	}
	h.ClassEnable = be.Uint16(b[0:2])
	for i := range h.Time {
		h.Time[i] = be.Uint16(b[2+2*i:])
	}
	return nil
}

// Encode writes the body into b and returns PFCLen.
func (h *PFC) Encode(b []byte) (int, error) {
	if len(b) < PFCLen {
		return 0, shortErr[LayerPFC]
	}
	be.PutUint16(b[0:2], h.ClassEnable)
	for i, t := range h.Time {
		be.PutUint16(b[2+2*i:], t)
	}
	return PFCLen, nil
}

// Pause is the body of an 802.3x PAUSE frame (after the opcode 0x0001).
type Pause struct {
	// Time is the pause time in quanta of 512 bit times; 0 resumes.
	Time uint16
}

// Decode reads the body from b[:PauseLen].
func (h *Pause) Decode(b []byte) error {
	if len(b) < PauseLen {
		return truncErr[LayerPause]
	}
	h.Time = be.Uint16(b)
	return nil
}

// Encode writes the body into b and returns PauseLen.
func (h *Pause) Encode(b []byte) (int, error) {
	if len(b) < PauseLen {
		return 0, shortErr[LayerPause]
	}
	be.PutUint16(b, h.Time)
	return PauseLen, nil
}

// PacketIn is the P4Runtime packet-in metadata header (2 bytes before the
// Ethernet header on the CPU port): ingress_port bit<9>, reason bit<7>.
type PacketIn struct {
	IngressPort uint16 // 9 bits
	Reason      uint8  // 7 bits; ReasonAnnouncement = 1
}

// Decode reads the header from b[:PacketInLen].
func (h *PacketIn) Decode(b []byte) error {
	if len(b) < PacketInLen {
		return truncErr[LayerPacketIn]
	}
	v := be.Uint16(b)
	h.IngressPort = v >> 7
	h.Reason = uint8(v & 0x7F)
	return nil
}

// Encode writes the header into b and returns PacketInLen.
func (h *PacketIn) Encode(b []byte) (int, error) {
	if h.IngressPort > MaxPort || h.Reason > 0x7F {
		return 0, errRangePort
	}
	if len(b) < PacketInLen {
		return 0, shortErr[LayerPacketIn]
	}
	be.PutUint16(b, h.IngressPort<<7|uint16(h.Reason))
	return PacketInLen, nil
}

// PacketOut is the P4Runtime packet-out metadata header (2 bytes before the
// Ethernet header from the CPU port): egress_port bit<9>, pad bit<7>.
type PacketOut struct {
	EgressPort uint16 // 9 bits
	Pad        uint8  // 7 bits, 0 when sent; kept so re-encoding is exact
}

// Decode reads the header from b[:PacketOutLen].
func (h *PacketOut) Decode(b []byte) error {
	if len(b) < PacketOutLen {
		return truncErr[LayerPacketOut]
	}
	v := be.Uint16(b)
	h.EgressPort = v >> 7
	h.Pad = uint8(v & 0x7F)
	return nil
}

// Encode writes the header into b and returns PacketOutLen.
func (h *PacketOut) Encode(b []byte) (int, error) {
	if h.EgressPort > MaxPort || h.Pad > 0x7F {
		return 0, errRangePortOut
	}
	if len(b) < PacketOutLen {
		return 0, shortErr[LayerPacketOut]
	}
	be.PutUint16(b, h.EgressPort<<7|uint16(h.Pad))
	return PacketOutLen, nil
}
