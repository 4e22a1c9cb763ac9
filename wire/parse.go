package wire

// ParseOptions are the inputs of the parser that are not in the frame.
type ParseOptions struct {
	// PacketOut: the frame starts with packet_out. Set it iff the frame
	// entered on CPU_PORT and is not a recirculated or resubmitted packet
	// (p4src/v1model FastcnpParser.start).
	PacketOut bool
	// AnnouncePorts is the parser value set announce_udp_port (the P4
	// program holds at most 4 entries): UDP destination ports on which an
	// announcement is parsed. RoCEv2UDPPort takes precedence over it.
	AnnouncePorts []uint16
}

func (o *ParseOptions) isAnnouncePort(p uint16) bool {
	for _, a := range o.AnnouncePorts {
		if a == p {
			return true
		}
	}
	return false
}

// Frame is the result of Parse: which headers are present, where each
// starts, and its decoded fields. Only the fields of present layers are
// meaningful (Parse zeroes the rest).
type Frame struct {
	// Len is the length of the parsed frame.
	Len int
	// Off[l] is the offset of layer l in the frame, valid when Has(l).
	Off [NumLayers]int
	// End is the offset of the first byte the parser did not extract: the
	// start of the unparsed payload (IPv4 options, UDP payload, RoCE payload
	// and ICRC, ...).
	End int

	PacketOut  PacketOut
	Ethernet   Ethernet
	Dot1Q      Dot1Q
	MACControl MACControl
	PFC        PFC
	Pause      Pause
	IPv4       IPv4
	UDP        UDP
	BTH        BTH
	CNPExt     CNPExt
	INC        INC
	INCIDs     INCIDs
	INCVector  INCVector
	INT        INTHeader
	// INTHops are the INT records, newest first: INT.HopCount of them.
	INTHops      [INTMaxHops]INTHop
	Announcement Announcement

	present uint32
}

// Has reports whether layer l was extracted.
func (f *Frame) Has(l Layer) bool { return f.present&(1<<l) != 0 }

// Layers returns the bit set of present layers (bit l for Layer l).
func (f *Frame) Layers() uint32 { return f.present }

func (f *Frame) mark(l Layer, off int) {
	f.present |= 1 << l
	f.Off[l] = off
}

// EtherType returns the EtherType that selected the layer after Ethernet:
// the inner one when an 802.1Q tag is present.
func (f *Frame) EtherType() uint16 {
	if f.Has(LayerDot1Q) {
		return f.Dot1Q.EtherType
	}
	return f.Ethernet.EtherType
}

// PauseQuanta reads a parsed MAC control frame the way ingress step 4 does
// for priority prio: a PFC frame whose class-enable bit prio is set gives
// Time[prio]; an 802.3x PAUSE gives its pause time (it pauses every
// priority). ok is false for anything else (not MAC control, another opcode,
// or PFC without prio enabled). q == 0 means resume.
func (f *Frame) PauseQuanta(prio uint8) (q uint16, ok bool) {
	switch {
	case prio > 7:
		return 0, false
	case f.Has(LayerPFC):
		return f.PFC.Time[prio], f.PFC.Enabled(prio)
	case f.Has(LayerPause):
		return f.Pause.Time, true
	}
	return 0, false
}

// IPv4Bytes returns the frame bytes from the IPv4 header on (nil when IPv4 is
// absent); frame must be the slice that was parsed.
func (f *Frame) IPv4Bytes(frame []byte) []byte {
	if !f.Has(LayerIPv4) {
		return nil
	}
	return frame[f.Off[LayerIPv4]:]
}

// RoCEPayload returns the bytes of a parsed RoCEv2 frame between the last
// header Parse extracted and the ICRC: the extended headers and data the
// switch does not parse (for example the AETH of an RC ACK, or the payload
// of a SEND). The end comes from the IPv4 total length, so Ethernet padding
// is excluded. Frames without a BTH, or whose total length does not cover
// the parsed headers plus the ICRC, are an error.
func (f *Frame) RoCEPayload(frame []byte) ([]byte, error) {
	if !f.Has(LayerBTH) {
		return nil, truncErr[LayerBTH]
	}
	end := f.Off[LayerIPv4] + int(f.IPv4.TotalLen) - ICRCLen
	if end < f.End || end+ICRCLen > len(frame) {
		return nil, errPayloadLen
	}
	return frame[f.End:end], nil
}

// Parse runs the fastcnp switch parse graph (docs/dataplane.md "Parser") on
// frame and fills out. It either extracts every header the graph selects and
// returns nil, or returns an *Error wrapping ErrTruncated (an extract past
// the end of the frame) or ErrMalformed (IPv4 version != 4 or IHL < 5,
// announcement magic or version wrong); the switch counts both as malformed
// and drops the packet. On error out has no layers.
//
// The graph: [packet_out] -> Ethernet; EtherType 0x8100 -> one 802.1Q tag ->
// inner EtherType; 0x0800 -> IPv4; 0x8808 -> MAC control: at least 4 bytes
// for any opcode (P4 mac_control_h), then 0x0101 -> PFC body (the 8 pause
// times too), 0x0001 -> PAUSE body, else accept; else accept. IPv4 with IHL 5,
// fragment offset 0 and protocol 17 -> UDP, else accept. UDP destination
// 4791 -> BTH; a port in opts.AnnouncePorts -> announcement; else accept.
// BTH opcode 0x81 -> CNP extension; else BTH byte 4 == INCBTHMark -> INC
// base, the IDS part if its flag IDS is set, then the vector; BTH byte 4 ==
// INTBTHMark -> the INT header and its HopCount records (more than
// INTMaxHops is malformed); else accept.
// Nothing else is checked: not the IPv4 checksum or lengths, not the ICRC.
func Parse(frame []byte, opts ParseOptions, out *Frame) error {
	*out = Frame{Len: len(frame)}
	if err := parse(frame, &opts, out); err != nil {
		out.present = 0
		return err
	}
	return nil
}

func parse(b []byte, opts *ParseOptions, f *Frame) error {
	off := 0
	if opts.PacketOut {
		if err := f.PacketOut.Decode(b); err != nil {
			return err
		}
		f.mark(LayerPacketOut, off)
		off += PacketOutLen
	}
	if err := f.Ethernet.Decode(b[off:]); err != nil {
		return err
	}
	f.mark(LayerEthernet, off)
	off += EthernetLen
	et := f.Ethernet.EtherType
	if et == EtherTypeDot1Q {
		if err := f.Dot1Q.Decode(b[off:]); err != nil {
			return err
		}
		f.mark(LayerDot1Q, off)
		off += Dot1QLen
		et = f.Dot1Q.EtherType
	}
	switch et {
	case EtherTypeIPv4:
		return parseIPv4(b, off, opts, f)
	case EtherTypeMACControl:
		return parseMACControl(b, off, f)
	}
	f.End = off
	return nil
}

func parseMACControl(b []byte, off int, f *Frame) error {
	// The P4 parser extracts 4 bytes (opcode + class-enable vector / pause
	// time) whatever the opcode: shorter is truncated even for opcodes that
	// are otherwise accepted unparsed.
	if len(b)-off < MACControlMinLen {
		return truncErr[LayerMACControl]
	}
	_ = f.MACControl.Decode(b[off:])
	f.mark(LayerMACControl, off)
	off += MACControlLen
	switch f.MACControl.Opcode {
	case MACControlOpPFC:
		if err := f.PFC.Decode(b[off:]); err != nil {
			return err
		}
		f.mark(LayerPFC, off)
		off += PFCLen
	case MACControlOpPause:
		_ = f.Pause.Decode(b[off:]) // length checked above
		f.mark(LayerPause, off)
		off += PauseLen
	default:
		off += MACControlMinLen - MACControlLen // extracted by P4, not decoded here
	}
	f.End = off
	return nil
}

func parseIPv4(b []byte, off int, opts *ParseOptions, f *Frame) error {
	ip := &f.IPv4
	if err := ip.Decode(b[off:]); err != nil {
		return err
	}
	if ip.Version != 4 {
		return errIPv4Version
	}
	if ip.IHL < 5 {
		return errIPv4IHL
	}
	f.mark(LayerIPv4, off)
	off += IPv4Len
	f.End = off
	if ip.IHL != 5 || ip.FragOff != 0 || ip.Protocol != IPProtoUDP {
		return nil
	}
	if err := f.UDP.Decode(b[off:]); err != nil {
		return err
	}
	f.mark(LayerUDP, off)
	off += UDPLen
	f.End = off
	switch {
	case f.UDP.DstPort == RoCEv2UDPPort:
		return parseBTH(b, off, f)
	case opts.isAnnouncePort(f.UDP.DstPort):
		if err := f.Announcement.Decode(b[off:]); err != nil {
			return err
		}
		if err := f.Announcement.Check(); err != nil {
			return err
		}
		f.mark(LayerAnnouncement, off)
		f.End = off + AnnouncementLen
	}
	return nil
}

func parseBTH(b []byte, off int, f *Frame) error {
	if err := f.BTH.Decode(b[off:]); err != nil {
		return err
	}
	f.mark(LayerBTH, off)
	off += BTHLen
	f.End = off
	if f.BTH.Opcode == OpCNP {
		if err := f.CNPExt.Decode(b[off:]); err != nil {
			return err
		}
		f.mark(LayerCNPExt, off)
		f.End = off + CNPExtLen
		return nil
	}
	if f.BTH.Resv8a == INTBTHMark {
		return parseINT(b, off, f)
	}
	if f.BTH.Resv8a != INCBTHMark {
		return nil
	}
	if err := f.INC.Decode(b[off:]); err != nil {
		return err
	}
	f.mark(LayerINC, off)
	off += INCLen
	if f.INC.HasIDs() {
		if err := f.INCIDs.Decode(b[off:]); err != nil {
			return err
		}
		f.mark(LayerINCIDs, off)
		off += INCIDsLen
	}
	if err := f.INCVector.Decode(b[off:]); err != nil {
		return err
	}
	f.mark(LayerINCVector, off)
	f.End = off + INCVectorBytes
	return nil
}

func parseINT(b []byte, off int, f *Frame) error {
	if err := f.INT.Decode(b[off:]); err != nil {
		return err
	}
	if f.INT.HopCount > INTMaxHops {
		return errINTHops
	}
	f.mark(LayerINT, off)
	off += INTHeaderLen
	for i := 0; i < int(f.INT.HopCount); i++ {
		if err := f.INTHops[i].Decode(b[off+i*INTHopLen:]); err != nil {
			return err
		}
	}
	if f.INT.HopCount > 0 {
		f.mark(LayerINTHops, off)
	}
	f.End = off + int(f.INT.HopCount)*INTHopLen
	return nil
}
