package wire

// Constants of the project's own headers (docs/wire-formats.md).
const (
	INCLen       = 4  // INC base header
	INCIDsLen    = 16 // INC IDS part
	INCVectorLen = 16 // elements in the INC vector (P4 INC_VECTOR_LEN)
	// INCVectorBytes is the size of the vector on the wire.
	INCVectorBytes = INCVectorLen * 4
	// INCBTHMark is the BTH byte 4 value that announces an INC header.
	INCBTHMark = 0x01
	// INCVersion is the INC protocol version.
	INCVersion = 1

	INCFlagIDs    = 0x1 // the IDS part follows the base header
	INCFlagResult = 0x2 // aggregated by a switch: the final aggregate
	// INCFlagPartial marks a partial aggregate: aggregated by a switch that
	// is not the top of its group's aggregation tree, on its way up to be
	// aggregated again (docs/wire-formats.md "Partial aggregates").
	INCFlagPartial = 0x4

	AnnouncementLen = 32
	// AnnouncementMagic is "FCNP".
	AnnouncementMagic = 0x46434E50
	// AnnouncementVersion is the only version the parser accepts.
	AnnouncementVersion = 1
	// DefaultAnnouncePort is the default UDP destination port of announcements.
	DefaultAnnouncePort = 4792

	AnnounceUp   = 1 // connection up
	AnnounceDown = 2 // connection down

	AnnounceFlagINCUplink = 0x1 // the connection is an INC uplink
	AnnounceFlagCNPTarget = 0x2 // the sender wants switch CNPs
)

// INC is the INC base header that follows the BTH when BTH byte 4 is
// INCBTHMark.
type INC struct {
	Flags   uint8 // INCFlagIDs, INCFlagResult, INCFlagPartial
	Version uint8 // INCVersion
	Resv    uint16
}

// HasIDs reports whether the IDS part follows.
func (h *INC) HasIDs() bool { return h.Flags&INCFlagIDs != 0 }

// IsResult reports whether the packet is a final aggregate (RESULT).
func (h *INC) IsResult() bool { return h.Flags&INCFlagResult != 0 }

// IsPartial reports whether the packet is a partial aggregate that a lower
// switch sends up: PARTIAL set and RESULT clear (a RESULT is final whatever
// else is set).
func (h *INC) IsPartial() bool { return h.Flags&(INCFlagPartial|INCFlagResult) == INCFlagPartial }

// IsContribution reports whether the packet is a worker's contribution:
// neither RESULT nor PARTIAL.
func (h *INC) IsContribution() bool { return h.Flags&(INCFlagPartial|INCFlagResult) == 0 }

// Decode reads the header from b[:INCLen].
func (h *INC) Decode(b []byte) error {
	if len(b) < INCLen {
		return truncErr[LayerINC]
	}
	h.Flags = b[0]
	h.Version = b[1]
	h.Resv = be.Uint16(b[2:4])
	return nil
}

// Encode writes the header into b and returns INCLen.
func (h *INC) Encode(b []byte) (int, error) {
	if len(b) < INCLen {
		return 0, shortErr[LayerINC]
	}
	b[0] = h.Flags
	b[1] = h.Version
	be.PutUint16(b[2:4], h.Resv)
	return INCLen, nil
}

// INCIDs is the IDS part of the INC header: the INC ID and the data flow ID.
type INCIDs struct {
	GroupID   uint16 // communication-group ID
	MessageID uint16 // INC message ID
	Resv1     uint8
	FirstPSN  uint32 // 24 bits, first PSN of the data flow
	OpID      uint16 // communication-operation ID
	Resv2     uint16
	FlowLen   uint32 // data flow length, packets
}

// INCID returns the 32-bit INC ID, group<<16 | message.
func (h *INCIDs) INCID() uint32 { return uint32(h.GroupID)<<16 | uint32(h.MessageID) }

// Decode reads the IDS part from b[:INCIDsLen].
func (h *INCIDs) Decode(b []byte) error {
	if len(b) < INCIDsLen {
		return truncErr[LayerINCIDs]
	}
	h.GroupID = be.Uint16(b[0:2])
	h.MessageID = be.Uint16(b[2:4])
	h.Resv1 = b[4]
	h.FirstPSN = be.Uint32(b[4:8]) & MaxPSN
	h.OpID = be.Uint16(b[8:10])
	h.Resv2 = be.Uint16(b[10:12])
	h.FlowLen = be.Uint32(b[12:16])
	return nil
}

// Encode writes the IDS part into b and returns INCIDsLen.
func (h *INCIDs) Encode(b []byte) (int, error) {
	if h.FirstPSN > MaxPSN {
		return 0, errRangeINCIDs
	}
	if len(b) < INCIDsLen {
		return 0, shortErr[LayerINCIDs]
	}
	be.PutUint16(b[0:2], h.GroupID)
	be.PutUint16(b[2:4], h.MessageID)
	be.PutUint32(b[4:8], uint32(h.Resv1)<<24|h.FirstPSN)
	be.PutUint16(b[8:10], h.OpID)
	be.PutUint16(b[10:12], h.Resv2)
	be.PutUint32(b[12:16], h.FlowLen)
	return INCIDsLen, nil
}

// INCVector is the INC payload: INCVectorLen two's-complement big-endian
// int32 values.
type INCVector [INCVectorLen]int32

// Decode reads the vector from b[:INCVectorBytes].
func (v *INCVector) Decode(b []byte) error {
	if len(b) < INCVectorBytes {
		return truncErr[LayerINCVector]
	}
	for i := range v {
		v[i] = int32(be.Uint32(b[4*i:]))
	}
	return nil
}

// Encode writes the vector into b and returns INCVectorBytes.
func (v *INCVector) Encode(b []byte) (int, error) {
	if len(b) < INCVectorBytes {
		return 0, shortErr[LayerINCVector]
	}
	for i, x := range v {
		be.PutUint32(b[4*i:], uint32(x))
	}
	return INCVectorBytes, nil
}

// Announcement is the RDMA-connection announcement (UDP payload, 32 bytes).
// The connection ID, the key of the switch's rdma_connection table, is
// (SenderIP, UDPSrcPort, ReceiverQPN).
type Announcement struct {
	Magic       uint32 // AnnouncementMagic
	Version     uint8  // AnnouncementVersion
	Type        uint8  // AnnounceUp, AnnounceDown; others ignored by the controller
	Flags       uint8  // AnnounceFlagINCUplink, AnnounceFlagCNPTarget
	WorkerRank  uint8  // 0..31 within the INC group, 0 when not INC
	SenderIP    Addr4
	ReceiverIP  Addr4
	UDPSrcPort  uint16 // UDP source port of the RoCEv2 connection
	Resv1       uint16
	Resv2       uint8
	SenderQPN   uint32 // 24 bits
	Resv3       uint8
	ReceiverQPN uint32 // 24 bits: the DestQP of the connection's data packets
	INCGroup    uint16 // INC communication-group ID, 0 = none
	Resv4       uint16
}

// Check applies the parser's acceptance test: magic and version.
func (h *Announcement) Check() error {
	if h.Magic != AnnouncementMagic {
		return errAnnMagic
	}
	if h.Version != AnnouncementVersion {
		return errAnnVersion
	}
	return nil
}

// Decode reads the announcement from b[:AnnouncementLen] without checking
// it (see Check).
func (h *Announcement) Decode(b []byte) error {
	if len(b) < AnnouncementLen {
		return truncErr[LayerAnnouncement]
	}
	h.Magic = be.Uint32(b[0:4])
	h.Version = b[4]
	h.Type = b[5]
	h.Flags = b[6]
	h.WorkerRank = b[7]
	copy(h.SenderIP[:], b[8:12])
	copy(h.ReceiverIP[:], b[12:16])
	h.UDPSrcPort = be.Uint16(b[16:18])
	h.Resv1 = be.Uint16(b[18:20])
	h.Resv2 = b[20]
	h.SenderQPN = be.Uint32(b[20:24]) & MaxQPN
	h.Resv3 = b[24]
	h.ReceiverQPN = be.Uint32(b[24:28]) & MaxQPN
	h.INCGroup = be.Uint16(b[28:30])
	h.Resv4 = be.Uint16(b[30:32])
	return nil
}

// Encode writes the announcement into b and returns AnnouncementLen. Magic
// and Version are written as given (set them to AnnouncementMagic and
// AnnouncementVersion, or use NewAnnouncement).
func (h *Announcement) Encode(b []byte) (int, error) {
	if h.SenderQPN > MaxQPN || h.ReceiverQPN > MaxQPN {
		return 0, errRangeAnn
	}
	if len(b) < AnnouncementLen {
		return 0, shortErr[LayerAnnouncement]
	}
	be.PutUint32(b[0:4], h.Magic)
	b[4] = h.Version
	b[5] = h.Type
	b[6] = h.Flags
	b[7] = h.WorkerRank
	copy(b[8:12], h.SenderIP[:])
	copy(b[12:16], h.ReceiverIP[:])
	be.PutUint16(b[16:18], h.UDPSrcPort)
	be.PutUint16(b[18:20], h.Resv1)
	be.PutUint32(b[20:24], uint32(h.Resv2)<<24|h.SenderQPN)
	be.PutUint32(b[24:28], uint32(h.Resv3)<<24|h.ReceiverQPN)
	be.PutUint16(b[28:30], h.INCGroup)
	be.PutUint16(b[30:32], h.Resv4)
	return AnnouncementLen, nil
}

// NewAnnouncement returns an announcement with Magic and Version set.
func NewAnnouncement(typ, flags uint8) Announcement {
	return Announcement{Magic: AnnouncementMagic, Version: AnnouncementVersion, Type: typ, Flags: flags}
}
