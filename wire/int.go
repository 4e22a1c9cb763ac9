package wire

// In-band network telemetry (INT) for HPCC (docs/wire-formats.md "INT header
// and hop records"): a data packet whose BTH byte 4 is INTBTHMark carries an
// INT header right after the BTH; every switch port in INT mode that sends it
// adds a hop record (timestamp, bytes sent, queue length, link rate, the HPCC
// record) in front of the records already there, so records are newest
// first. The receiver copies the records of the packet an ACK acknowledges
// into that ACK with the echo flag set, and switches leave echoed records
// alone. The ICRC of a packet with the mark is computed as if the INT header
// and its records were not there (switches add records without touching the
// ICRC).
const (
	// INTBTHMark is the BTH byte 4 value that announces an INT header.
	INTBTHMark = 0x02
	// INTHeaderLen is the size of the INT header.
	INTHeaderLen = 4
	// INTHopLen is the size of one hop record.
	INTHopLen = 24
	// INTMaxHops is the most records a packet carries (P4 INT_MAX_HOPS); a
	// full packet gets no more. The HPCC simulator keeps 5 too.
	INTMaxHops = 5
	// INTVersion is the INT header version.
	INTVersion = 1
	// INTFlagEcho marks records echoed by a receiver in an ACK: they describe
	// the data path, and switches add nothing.
	INTFlagEcho = 0x01
	// INTMaxTimestamp is the largest 48-bit timestamp.
	INTMaxTimestamp = 1<<48 - 1
)

// INTHeader is the INT header after the BTH.
type INTHeader struct {
	Flags    uint8 // INTFlagEcho
	Version  uint8 // INTVersion
	HopCount uint8 // records that follow, 0..INTMaxHops
	Resv     uint8
}

// Echo reports whether the echo flag is set.
func (h *INTHeader) Echo() bool { return h.Flags&INTFlagEcho != 0 }

// Len returns the bytes of the header and its records.
func (h *INTHeader) Len() int { return INTHeaderLen + int(h.HopCount)*INTHopLen }

// Decode reads the header from b[:INTHeaderLen].
func (h *INTHeader) Decode(b []byte) error {
	if len(b) < INTHeaderLen {
		return truncErr[LayerINT]
	}
	h.Flags, h.Version, h.HopCount, h.Resv = b[0], b[1], b[2], b[3]
	return nil
}

// Encode writes the header into b and returns INTHeaderLen.
func (h *INTHeader) Encode(b []byte) (int, error) {
	if h.HopCount > INTMaxHops {
		return 0, errRangeINT
	}
	if len(b) < INTHeaderLen {
		return 0, shortErr[LayerINT]
	}
	b[0], b[1], b[2], b[3] = h.Flags, h.Version, h.HopCount, h.Resv
	return INTHeaderLen, nil
}

// INTHop is one switch's record (the HPCC INT record) of the port the packet
// left by.
type INTHop struct {
	// TimestampNs is when the packet left, in ns of the switch's clock (48
	// bits; it wraps after 78 hours).
	TimestampNs uint64
	// Port is the egress port.
	Port uint16
	// TxBytes is the bytes the port had sent before this packet (64 bits,
	// frames as sent, INT records included; it wraps).
	TxBytes uint64
	// QueueBytes is the port's lossless queue when the packet left (this
	// packet excluded).
	QueueBytes uint32
	// RateBytesPerMs is the port's line rate in bytes per millisecond
	// (bits/s = 8000 x this).
	RateBytesPerMs uint32
}

// RateBps returns the link rate in bits per second.
func (h *INTHop) RateBps() float64 { return float64(h.RateBytesPerMs) * 8000 }

// Decode reads a record from b[:INTHopLen].
func (h *INTHop) Decode(b []byte) error {
	if len(b) < INTHopLen {
		return truncErr[LayerINTHops]
	}
	h.TimestampNs = uint64(be.Uint16(b[0:2]))<<32 | uint64(be.Uint32(b[2:6]))
	h.Port = be.Uint16(b[6:8])
	h.TxBytes = be.Uint64(b[8:16])
	h.QueueBytes = be.Uint32(b[16:20])
	h.RateBytesPerMs = be.Uint32(b[20:24])
	return nil
}

// Encode writes a record into b and returns INTHopLen.
func (h *INTHop) Encode(b []byte) (int, error) {
	if h.TimestampNs > INTMaxTimestamp {
		return 0, errRangeINTHop
	}
	if len(b) < INTHopLen {
		return 0, shortErr[LayerINTHops]
	}
	be.PutUint16(b[0:2], uint16(h.TimestampNs>>32))
	be.PutUint32(b[2:6], uint32(h.TimestampNs))
	be.PutUint16(b[6:8], h.Port)
	be.PutUint64(b[8:16], h.TxBytes)
	be.PutUint32(b[16:20], h.QueueBytes)
	be.PutUint32(b[20:24], h.RateBytesPerMs)
	return INTHopLen, nil
}

// intExtent returns the bytes of the INT header and records of the RoCEv2
// packet whose IPv4 header starts at ip (no options), or 0 when its BTH does
// not carry INTBTHMark (or the packet is a CNP). ip must hold the BTH.
func intExtent(ip []byte) (int, error) {
	bth := IPv4Len + UDPLen
	if ip[bth] == OpCNP || ip[bth+4] != INTBTHMark {
		return 0, nil
	}
	h := bth + BTHLen
	if len(ip) < h+INTHeaderLen {
		return 0, errICRCINT
	}
	n := int(ip[h+2])
	if n > INTMaxHops {
		return 0, errICRCINT
	}
	return INTHeaderLen + n*INTHopLen, nil
}

// encodeINT writes h (with HopCount = len(hops)) and hops into p.
func encodeINT(p []byte, h INTHeader, hops []INTHop) (int, error) {
	if len(hops) > INTMaxHops {
		return 0, errRangeINT
	}
	h.HopCount = uint8(len(hops))
	n, err := h.Encode(p)
	if err != nil {
		return 0, err
	}
	for i := range hops {
		m, err := hops[i].Encode(p[n:])
		if err != nil {
			return 0, err
		}
		n += m
	}
	return n, nil
}

// BuildRoCEINT writes a RoCEv2 frame like BuildRoCE with an INT header and
// hops (newest first; none for a sender's data packet) between the BTH and
// the payload: bth's byte 4 is set to INTBTHMark and the ICRC excludes the
// INT bytes. It returns the frame length.
func BuildRoCEINT(b []byte, env *Envelope, bth BTH, h INTHeader, hops []INTHop, payload []byte) (int, error) {
	bth.Resv8a = INTBTHMark
	return env.roce(b, &bth, INTHeaderLen+len(hops)*INTHopLen+len(payload), func(p []byte) error {
		n, err := encodeINT(p, h, hops)
		if err != nil {
			return err
		}
		copy(p[n:], payload)
		return nil
	})
}

// BuildRCAckINT writes an RC ACKNOWLEDGE like BuildRCAck that echoes the INT
// records hops (as the data packet carried them, newest first): the INT
// header with INTFlagEcho between the BTH and the AETH. It returns the
// frame length.
func BuildRCAckINT(b []byte, env *Envelope, bth BTH, aeth AETH, hops []INTHop) (int, error) {
	bth.Opcode = OpRCAcknowledge
	bth.Resv8a = INTBTHMark
	h := INTHeader{Flags: INTFlagEcho, Version: INTVersion}
	return env.roce(b, &bth, INTHeaderLen+len(hops)*INTHopLen+AETHLen, func(p []byte) error {
		n, err := encodeINT(p, h, hops)
		if err != nil {
			return err
		}
		_, err = aeth.Encode(p[n:])
		return err
	})
}
