package agent

import (
	"fmt"
	"time"

	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/wire"
)

// Traffic classes the agent sends with (the common RoCE set-up, spec 05).
const (
	// DataDSCP is the DSCP of data packets and ACKs (lossless priority 3).
	DataDSCP = 26
	// CNPDSCP is the DSCP of CNPs.
	CNPDSCP = 48
)

// Path holds the addressing of one direction of a connection: the frames
// the agent sends for it.
type Path struct {
	// SrcMAC is the agent's MAC; DstMAC the next hop (gateway or peer).
	SrcMAC, DstMAC wire.MAC
	// SrcIP is the agent's address, DstIP the peer's.
	SrcIP, DstIP wire.Addr4
	// SrcPort is the RoCEv2 UDP source port (flow entropy).
	SrcPort uint16
	// VLAN adds an 802.1Q tag with PCP and VID.
	VLAN bool
	PCP  uint8
	VID  uint16
}

// Overhead returns the frame bytes around a data payload on this path.
func (p *Path) Overhead() int {
	if p.VLAN {
		return RoCEOverhead + wire.Dot1QLen
	}
	return RoCEOverhead
}

func (p *Path) env(dscp uint8, ecn wire.ECN) wire.Envelope {
	return wire.Envelope{
		DstMAC: p.DstMAC, SrcMAC: p.SrcMAC, VLAN: p.VLAN, PCP: p.PCP, VID: p.VID,
		SrcIP: p.SrcIP, DstIP: p.DstIP, DSCP: dscp, ECN: ecn, DontFragment: true,
		SrcPort: p.SrcPort,
	}
}

// BuildData writes an RC SEND Only data packet for pkt to destQP (the
// receiver's QP): ECT(0), DSCP 26, the payload made by FillPattern, and an
// empty INT header after the BTH when pkt.INT. b must hold the frame; it
// returns the frame length.
func (p *Path) BuildData(b []byte, destQP uint32, pkt *Packet) (int, error) {
	env := p.env(DataDSCP, wire.ECT0)
	bth := wire.BTH{Opcode: wire.OpRCSendOnly, PKey: wire.DefaultPKey, DestQP: destQP, AckReq: pkt.AckReq, PSN: pkt.PSN}
	off := p.Overhead() - wire.ICRCLen
	if pkt.INT {
		off += wire.INTHeaderLen
	}
	if len(b) < off+pkt.Payload+wire.ICRCLen || len(b) < wire.MinFrameLen {
		return 0, fmt.Errorf("data frame: buffer of %d bytes too short for %d payload bytes: %w", len(b), pkt.Payload, ErrConfig)
	}
	// Write the payload in place, then let the builder fill the headers
	// around it (the builders copy payload onto itself: a no-op move).
	pay := b[off : off+pkt.Payload]
	FillPattern(pay, pkt.Offset)
	var n int
	var err error
	if pkt.INT {
		n, err = wire.BuildRoCEINT(b, &env, bth, wire.INTHeader{Version: wire.INTVersion}, nil, pay)
	} else {
		n, err = wire.BuildRoCE(b, &env, &bth, pay)
	}
	if err != nil {
		return 0, fmt.Errorf("data frame PSN %#x: %w", pkt.PSN, err)
	}
	return n, nil
}

// BuildINC writes an INC contribution for pkt (offset = pkt.Seq): the INC
// header (with the IDS part on the first packet of the data flow), the
// worker's vector, ECT(0).
func (p *Path) BuildINC(b []byte, destQP uint32, pkt *Packet, firstPSN uint32, ip INCParams) (int, error) {
	env := p.env(DataDSCP, wire.ECT0)
	bth := wire.BTH{Opcode: wire.OpRCSendOnly, PKey: wire.DefaultPKey, DestQP: destQP, PSN: pkt.PSN}
	vec := INCContribution(ip.Seed, ip.Group, ip.Message, ip.Rank, uint32(pkt.Seq))
	var ids *wire.INCIDs
	if pkt.First {
		ids = &wire.INCIDs{GroupID: ip.Group, MessageID: ip.Message, FirstPSN: firstPSN, OpID: ip.Op, FlowLen: uint32(ip.Offsets)}
	}
	n, err := wire.BuildINC(b, &env, bth, wire.INC{Version: wire.INCVersion}, ids, &vec)
	if err != nil {
		return 0, fmt.Errorf("INC frame offset %d: %w", pkt.Seq, err)
	}
	return n, nil
}

// INCPayload returns the payload (between BTH and ICRC) of an INC
// contribution with or without the IDS part.
func INCPayload(first bool) int {
	if first {
		return wire.INCLen + wire.INCIDsLen + wire.INCVectorBytes
	}
	return wire.INCLen + wire.INCVectorBytes
}

// BuildAck writes the RC ACKNOWLEDGE (or NAK) of rep to destQP (the
// sender's QP): not ECN-capable, DSCP 26; the ECN echo bit when rep.ECE;
// with rep.EchoINT the INT records hops (as the data packet carried them,
// newest first) echoed between the BTH and the AETH. b must hold
// AckFrameMax bytes.
func (p *Path) BuildAck(b []byte, destQP uint32, rep *Reply, hops []wire.INTHop) (int, error) {
	env := p.env(DataDSCP, wire.NotECT)
	bth := wire.BTH{PKey: wire.DefaultPKey, DestQP: destQP, PSN: rep.AckPSN}
	if rep.ECE {
		bth.Resv7 = wire.BTHResv7ECE
	}
	aeth := wire.AETH{Syndrome: rep.Syndrome, MSN: rep.MSN}
	var n int
	var err error
	if rep.EchoINT {
		n, err = wire.BuildRCAckINT(b, &env, bth, aeth, hops)
	} else {
		n, err = wire.BuildRCAck(b, &env, bth, aeth)
	}
	if err != nil {
		return 0, fmt.Errorf("ack frame PSN %#x: %w", rep.AckPSN, err)
	}
	return n, nil
}

// BuildCNP writes a CNP to destQP (the sender's QP): DSCP 48, not
// ECN-capable; ext nil makes a plain CNP (what a receiver NP sends).
func (p *Path) BuildCNP(b []byte, destQP uint32, ext *wire.CNPExt) (int, error) {
	env := p.env(CNPDSCP, wire.NotECT)
	bth := wire.BTH{PKey: wire.DefaultPKey, DestQP: destQP}
	n, err := wire.BuildCNP(b, &env, bth, ext)
	if err != nil {
		return 0, fmt.Errorf("cnp frame to QP %#x: %w", destQP, err)
	}
	return n, nil
}

// BuildAnnouncement writes the RDMA-connection announcement of a connection
// whose sender is this path's source: UDP to port (0 = 4792), DSCP 48.
// With auth (from an AnnounceSigner) it is authenticated with secret.
func (p *Path) BuildAnnouncement(b []byte, port uint16, ann *wire.Announcement, auth *wire.AnnounceAuth, secret []byte) (int, error) {
	env := p.env(CNPDSCP, wire.NotECT)
	env.DstPort = port
	ann.SenderIP, ann.ReceiverIP, ann.UDPSrcPort = p.SrcIP, p.DstIP, p.SrcPort
	n, err := wire.BuildSignedAnnouncement(b, &env, ann, auth, secret)
	if err != nil {
		return 0, fmt.Errorf("announcement frame: %w", err)
	}
	return n, nil
}

// FillPattern writes the deterministic test pattern of the stream bytes
// [offset, offset+len(b)) into b: byte i of the stream is
// byte(i) ^ byte(i>>8) ^ byte(i>>16). Receivers check it with
// CheckPattern, so reordering, loss or corruption is detected.
func FillPattern(b []byte, offset int64) {
	for i := range b {
		x := uint64(offset) + uint64(i)
		b[i] = byte(x) ^ byte(x>>8) ^ byte(x>>16)
	}
}

// CheckPattern reports whether b holds the pattern of stream bytes
// [offset, offset+len(b)).
func CheckPattern(b []byte, offset int64) bool {
	for i := range b {
		x := uint64(offset) + uint64(i)
		if b[i] != byte(x)^byte(x>>8)^byte(x>>16) {
			return false
		}
	}
	return true
}

// Kind classifies a received frame.
type Kind uint8

// Frame kinds.
const (
	KindOther      Kind = iota // not for the agent's transport
	KindData                   // RoCEv2 data (SEND)
	KindAck                    // RC ACKNOWLEDGE (ACK or NAK)
	KindCNP                    // CNP
	KindINCResult              // INC RESULT made by a switch
	KindINC                    // INC contribution (not aggregated)
	KindINCPartial             // INC partial aggregate (left a lower switch, never aggregated above)
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case KindData:
		return "data"
	case KindAck:
		return "ack"
	case KindCNP:
		return "cnp"
	case KindINCResult:
		return "inc-result"
	case KindINC:
		return "inc"
	case KindINCPartial:
		return "inc-partial"
	}
	return "other"
}

// Event is a received frame, decoded.
type Event struct {
	Kind    Kind
	SrcMAC  wire.MAC
	SrcIP   wire.Addr4
	DstIP   wire.Addr4
	SrcPort uint16
	DestQP  uint32
	PSN     uint32
	AckReq  bool
	CE      bool
	// Payload is the data payload (KindData), a slice of the frame.
	Payload []byte
	// AETH of KindAck.
	AETH wire.AETH
	// CNP extension of KindCNP.
	CNP cc.CNPExt
	// ECE is the ECN echo bit of a KindAck.
	ECE bool
	// INT: the frame has an INT header (INTEcho: with the echo flag) and
	// NumHops records in Hops, newest first.
	INT, INTEcho bool
	NumHops      int
	Hops         [wire.INTMaxHops]wire.INTHop
	// IDs and Vector of INC frames (IDs only when the IDS flag is set).
	IDs    wire.INCIDs
	HasIDs bool
	Vector wire.INCVector
}

// Decode parses frame (f is scratch space, reused by the caller) and
// classifies it. Frames that are not RoCEv2 give KindOther and no error;
// truncated or malformed RoCEv2 frames give an error.
func Decode(frame []byte, f *wire.Frame, ev *Event) error {
	*ev = Event{}
	if err := wire.Parse(frame, wire.ParseOptions{}, f); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if !f.Has(wire.LayerBTH) {
		return nil
	}
	ev.SrcMAC = f.Ethernet.Src
	ev.SrcIP, ev.DstIP = f.IPv4.Src, f.IPv4.Dst
	ev.SrcPort = f.UDP.SrcPort
	ev.DestQP, ev.PSN, ev.AckReq = f.BTH.DestQP, f.BTH.PSN, f.BTH.AckReq
	ev.CE = f.IPv4.ECN() == wire.CE
	if f.Has(wire.LayerINT) {
		ev.INT, ev.INTEcho, ev.NumHops = true, f.INT.Echo(), int(f.INT.HopCount)
		ev.Hops = f.INTHops
	}
	pay, err := f.RoCEPayload(frame)
	if err != nil {
		return fmt.Errorf("decode %s: %w", f.IPv4.Src, err)
	}
	switch {
	case f.BTH.Opcode == wire.OpCNP:
		ev.Kind = KindCNP
		ev.CNP = cc.CNPExtFromWire(&f.CNPExt)
	case f.Has(wire.LayerINC):
		switch {
		case f.INC.IsResult():
			ev.Kind = KindINCResult
		case f.INC.IsPartial():
			ev.Kind = KindINCPartial
		default:
			ev.Kind = KindINC
		}
		ev.HasIDs = f.Has(wire.LayerINCIDs)
		ev.IDs, ev.Vector = f.INCIDs, f.INCVector
	case f.BTH.Opcode == wire.OpRCAcknowledge:
		if err := ev.AETH.Decode(pay); err != nil {
			return fmt.Errorf("decode ack from %s: %w", f.IPv4.Src, err)
		}
		ev.Kind = KindAck
		ev.ECE = f.BTH.Resv7&wire.BTHResv7ECE != 0
	case f.BTH.Opcode <= wire.OpRCSendOnlyImm:
		ev.Kind = KindData
		ev.Payload = pay
	}
	return nil
}

// AckFrameMax is the longest ACK BuildAck makes: an 802.1Q tag and
// wire.INTMaxHops echoed records.
const AckFrameMax = wire.EthernetLen + wire.Dot1QLen + wire.IPv4Len + wire.UDPLen + wire.BTHLen +
	wire.INTHeaderLen + wire.INTMaxHops*wire.INTHopLen + wire.AETHLen + wire.ICRCLen

// CCHops writes the INT records an ACK echoed (ev.Hops, newest first) into
// dst in path order (first switch first), as host/cc wants them, and
// returns dst[:n]: link rate 8000 x bytes/ms, times and counters as sent.
// Records are given only when the ACK echoes them (INTEcho) and every one
// names a link rate; otherwise none (ok false: records that are unusable).
func (ev *Event) CCHops(dst *[wire.INTMaxHops]cc.INTHop) (hops []cc.INTHop, ok bool) {
	if !ev.INT || !ev.INTEcho {
		return nil, true
	}
	return ccHops(ev.Hops[:ev.NumHops], dst)
}

// FrameCCHops is CCHops for an ACK parsed by wire.Parse (the simulator's
// hosts parse frames themselves).
func FrameCCHops(f *wire.Frame, dst *[wire.INTMaxHops]cc.INTHop) (hops []cc.INTHop, ok bool) {
	if !f.Has(wire.LayerINT) || !f.INT.Echo() {
		return nil, true
	}
	return ccHops(f.INTHops[:f.INT.HopCount], dst)
}

// ccHops converts echoed records (newest first) into dst in path order.
func ccHops(rec []wire.INTHop, dst *[wire.INTMaxHops]cc.INTHop) ([]cc.INTHop, bool) {
	n := len(rec)
	for i := 0; i < n; i++ {
		h := &rec[n-1-i]
		if h.RateBytesPerMs == 0 {
			return nil, false
		}
		dst[i] = cc.INTHop{TS: time.Duration(h.TimestampNs), TxBytes: h.TxBytes, QLen: int64(h.QueueBytes), LinkRate: h.RateBps()}
	}
	if n == 0 {
		return nil, true
	}
	return dst[:n], true
}
