package wire

// Envelope holds the Ethernet, optional 802.1Q, IPv4 and UDP fields of a
// built frame. Lengths and checksums are computed by the builders.
type Envelope struct {
	DstMAC, SrcMAC MAC
	// VLAN adds an 802.1Q tag with PCP, DEI and VID.
	VLAN bool
	PCP  uint8
	DEI  bool
	VID  uint16

	SrcIP, DstIP Addr4
	DSCP         uint8
	ECN          ECN
	TTL          uint8 // 0 means DefaultTTL
	ID           uint16
	DontFragment bool

	SrcPort uint16 // for RoCEv2: flow entropy
	DstPort uint16 // 0 means the builder's default (4791, or 4792 for announcements)
}

// envelope writes Ethernet[/802.1Q]/IPv4/UDP for a UDP payload of udpPay
// bytes and returns the offset of the UDP payload and of the IPv4 header.
// The IPv4 checksum is set; the UDP checksum is 0.
func (e *Envelope) write(b []byte, dport uint16, udpPay int) (payOff, ipOff int, err error) {
	hdr := EthernetLen + IPv4Len + UDPLen
	if e.VLAN {
		hdr += Dot1QLen
	}
	if IPv4Len+UDPLen+udpPay > 0xFFFF {
		return 0, 0, errRangePayload
	}
	if e.DSCP > 63 || e.ECN > 3 {
		return 0, 0, errRangeDSCP
	}
	if len(b) < hdr+udpPay {
		return 0, 0, shortErr[LayerEthernet]
	}
	eth := Ethernet{Dst: e.DstMAC, Src: e.SrcMAC, EtherType: EtherTypeIPv4}
	off := 0
	if e.VLAN {
		eth.EtherType = EtherTypeDot1Q
	}
	n, _ := eth.Encode(b)
	off += n
	if e.VLAN {
		tag := Dot1Q{PCP: e.PCP, DEI: e.DEI, VID: e.VID, EtherType: EtherTypeIPv4}
		if n, err = tag.Encode(b[off:]); err != nil {
			return 0, 0, err
		}
		off += n
	}
	ttl := e.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}
	ip := IPv4{
		Version: 4, IHL: 5, TOS: e.DSCP<<2 | uint8(e.ECN),
		TotalLen: uint16(IPv4Len + UDPLen + udpPay), ID: e.ID,
		TTL: ttl, Protocol: IPProtoUDP, Src: e.SrcIP, Dst: e.DstIP,
	}
	if e.DontFragment {
		ip.Flags = IPv4FlagDF
	}
	ipOff = off
	n, _ = ip.Encode(b[off:])
	_ = SetIPv4Checksum(b[off : off+n])
	off += n
	udp := UDP{SrcPort: e.SrcPort, DstPort: dport, Length: uint16(UDPLen + udpPay)}
	n, _ = udp.Encode(b[off:])
	off += n
	return off, ipOff, nil
}

// pad zero-fills b[n:MinFrameLen] and returns the padded length.
func pad(b []byte, n int) (int, error) {
	if n >= MinFrameLen {
		return n, nil
	}
	if len(b) < MinFrameLen {
		return 0, shortErr[LayerEthernet]
	}
	clear(b[n:MinFrameLen])
	return MinFrameLen, nil
}

// roce builds Ethernet[/802.1Q]/IPv4/UDP/BTH/<ext bytes written by fill>/ICRC.
func (e *Envelope) roce(b []byte, bth *BTH, extLen int, fill func(b []byte) error) (int, error) {
	dport := e.DstPort
	if dport == 0 {
		dport = RoCEv2UDPPort
	}
	udpPay := BTHLen + extLen + ICRCLen
	off, ipOff, err := e.write(b, dport, udpPay)
	if err != nil {
		return 0, err
	}
	if _, err := bth.Encode(b[off:]); err != nil {
		return 0, err
	}
	off += BTHLen
	if err := fill(b[off : off+extLen]); err != nil {
		return 0, err
	}
	off += extLen
	end := off + ICRCLen
	if err := SetICRC(b[ipOff:end]); err != nil {
		return 0, err
	}
	return pad(b, end)
}

// BuildRoCE writes a RoCEv2 frame into b: Ethernet[/802.1Q]/IPv4 (DSCP, ECN
// from env)/UDP (dst env.DstPort or 4791, checksum 0)/bth/payload/ICRC, padded
// to MinFrameLen. payload is everything between the BTH and the ICRC
// (extended headers and data). It returns the frame length.
func BuildRoCE(b []byte, env *Envelope, bth *BTH, payload []byte) (int, error) {
	return env.roce(b, bth, len(payload), func(p []byte) error {
		copy(p, payload)
		return nil
	})
}

// BuildRCAck writes an RC ACKNOWLEDGE (opcode 0x11): bth (its Opcode is
// overridden) followed by aeth, with a valid ICRC. It returns the length.
func BuildRCAck(b []byte, env *Envelope, bth BTH, aeth AETH) (int, error) {
	bth.Opcode = OpRCAcknowledge
	return env.roce(b, &bth, AETHLen, func(p []byte) error {
		_, err := aeth.Encode(p)
		return err
	})
}

// BuildCNP writes a RoCEv2 CNP (opcode 0x81; bth's Opcode is overridden, its
// DestQP must be the QP of the flow's sender): the BTH, the 16-byte
// extension (all zeros when ext is nil: a plain CNP) and a valid ICRC.
func BuildCNP(b []byte, env *Envelope, bth BTH, ext *CNPExt) (int, error) {
	bth.Opcode = OpCNP
	return env.roce(b, &bth, CNPExtLen, func(p []byte) error {
		if ext == nil {
			clear(p)
			return nil
		}
		_, err := ext.Encode(p)
		return err
	})
}

// BuildINC writes an INC packet: bth with byte 4 set to INCBTHMark, the INC
// base header (its IDS flag is set iff ids != nil), the IDS part, the vector
// and a valid ICRC. It returns the frame length.
func BuildINC(b []byte, env *Envelope, bth BTH, inc INC, ids *INCIDs, vec *INCVector) (int, error) {
	bth.Resv8a = INCBTHMark
	inc.Flags &^= INCFlagIDs
	ext := INCLen + INCVectorBytes
	if ids != nil {
		inc.Flags |= INCFlagIDs
		ext += INCIDsLen
	}
	return env.roce(b, &bth, ext, func(p []byte) error {
		n, _ := inc.Encode(p)
		if ids != nil {
			m, err := ids.Encode(p[n:])
			if err != nil {
				return err
			}
			n += m
		}
		_, err := vec.Encode(p[n:])
		return err
	})
}

// BuildAnnouncement writes an announcement datagram: Ethernet[/802.1Q]/IPv4/
// UDP (dst env.DstPort or DefaultAnnouncePort, with a UDP checksum)/ann. The
// IP source should be the connection's sender. It returns the frame length.
func BuildAnnouncement(b []byte, env *Envelope, ann *Announcement) (int, error) {
	return BuildSignedAnnouncement(b, env, ann, nil, nil)
}

// BuildSignedAnnouncement is BuildAnnouncement with the authentication
// trailer auth (Type, KeyID, Timestamp and Nonce set) after the
// announcement, its tag computed with key (SignAnnouncement). A nil auth
// builds an unauthenticated announcement.
func BuildSignedAnnouncement(b []byte, env *Envelope, ann *Announcement, auth *AnnounceAuth, key []byte) (int, error) {
	dport := env.DstPort
	if dport == 0 {
		dport = DefaultAnnouncePort
	}
	n := AnnouncementLen
	if auth != nil {
		n = AnnouncementAuthLen
	}
	off, ipOff, err := env.write(b, dport, n)
	if err != nil {
		return 0, err
	}
	if _, err := ann.Encode(b[off:]); err != nil {
		return 0, err
	}
	if auth != nil {
		if _, err := auth.Encode(b[off+AnnouncementLen:]); err != nil {
			return 0, err
		}
		if err := SignAnnouncement(b[off:off+n], key); err != nil {
			return 0, err
		}
	}
	udpOff := ipOff + IPv4Len
	end := off + n
	c, err := UDPChecksum(env.SrcIP, env.DstIP, b[udpOff:end])
	if err != nil {
		return 0, err
	}
	be.PutUint16(b[udpOff+6:], c)
	return pad(b, end)
}

// macControl writes the Ethernet header and the opcode of a MAC control
// frame to 01:80:C2:00:00:01 from src, zero-filled to MinFrameLen, and
// returns the offset of the body.
func macControl(b []byte, src MAC, op uint16) (int, error) {
	if len(b) < MinFrameLen {
		return 0, shortErr[LayerMACControl]
	}
	clear(b[:MinFrameLen])
	eth := Ethernet{Dst: MACControlDst, Src: src, EtherType: EtherTypeMACControl}
	n, _ := eth.Encode(b)
	mc := MACControl{Opcode: op}
	m, _ := mc.Encode(b[n:])
	return n + m, nil
}

// BuildPFC writes an 802.1Qbb PFC frame (60 bytes, FCS not included) from
// src: class-enable vector classEnable (bits 0..7; higher bits are an
// ErrRange error), pause times quanta (512 bit times each; 0 for an enabled
// class = XON).
func BuildPFC(b []byte, src MAC, classEnable uint16, quanta [8]uint16) (int, error) {
	if classEnable > 0xFF {
		return 0, errRangePFC
	}
	off, err := macControl(b, src, MACControlOpPFC)
	if err != nil {
		return 0, err
	}
	body := PFC{ClassEnable: classEnable, Time: quanta}
	_, _ = body.Encode(b[off:])
	return MinFrameLen, nil
}

// BuildPFCXON writes a PFC frame that resumes (quanta 0) the classes of
// classEnable.
func BuildPFCXON(b []byte, src MAC, classEnable uint16) (int, error) {
	return BuildPFC(b, src, classEnable, [8]uint16{})
}

// BuildPause writes an 802.3x PAUSE frame (60 bytes) from src with pause
// time quanta (0 = resume).
func BuildPause(b []byte, src MAC, quanta uint16) (int, error) {
	off, err := macControl(b, src, MACControlOpPause)
	if err != nil {
		return 0, err
	}
	body := Pause{Time: quanta}
	_, _ = body.Encode(b[off:])
	return MinFrameLen, nil
}
