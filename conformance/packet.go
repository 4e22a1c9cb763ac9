package conformance

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/fastcnp/fastcnp/wire"
)

// KV is one key=value token of a statement.
type KV struct {
	Key, Value string
}

// Packet is a frame built from the packet DSL: Bytes and, for expectations, Mask
// (0xff = the byte must match, 0x00 = don't care; same length as Bytes).
type Packet struct {
	Kind  string
	Bytes []byte
	Mask  []byte
}

// Match reports whether got equals the packet's bytes where the mask cares, and
// describes the first difference otherwise.
func (p *Packet) Match(got []byte) (bool, string) {
	if len(got) != len(p.Bytes) {
		return false, fmt.Sprintf("length %d, want %d", len(got), len(p.Bytes))
	}
	for i := range got {
		if (got[i]^p.Bytes[i])&p.Mask[i] != 0 {
			return false, fmt.Sprintf("byte %d is %#02x, want %#02x", i, got[i], p.Bytes[i])
		}
	}
	return true, ""
}

// Hexdiff renders got and want around their first difference (at most 32 bytes each).
func Hexdiff(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	lo := max(i-8, 0)
	cut := func(b []byte) []byte { return b[min(lo, len(b)):min(lo+32, len(b))] }
	return fmt.Sprintf("from byte %d: got %x, want %x", lo, cut(got), cut(want))
}

// Default addresses of the DSL (the topology of vectors/include/base.inc): host S
// 10.0.0.1 behind port 1, host R 10.0.1.2 behind port 2, the switch's MAC.
var (
	defaultSrcMAC = wire.MAC{0x02, 0, 0, 0, 0, 0x01}
	defaultDstMAC = wire.MAC{0x02, 0, 0, 0, 0, 0xee}
	defaultSrcIP  = wire.Addr4{10, 0, 0, 1}
	defaultDstIP  = wire.Addr4{10, 0, 1, 2}
)

// packetKinds lists the first word of every packet description.
var packetKinds = map[string]bool{
	"roce": true, "cnp": true, "inc": true, "int": true, "announce": true, "pfc": true, "pause": true,
	"udp": true, "ipv4": true, "eth": true, "hex": true,
}

// args is the key=value list of one packet description, with use tracking so that
// misspelt keys are errors.
type args struct {
	kv   []KV
	used map[string]bool
	err  error
}

func (a *args) has(k string) bool {
	for _, kv := range a.kv {
		if kv.Key == k {
			return true
		}
	}
	return false
}

func (a *args) str(k, def string) string {
	for _, kv := range a.kv {
		if kv.Key == k {
			a.used[k] = true
			return kv.Value
		}
	}
	return def
}

// num returns key k (width bits) or def.
func (a *args) num(k string, def uint64, width int) uint64 {
	s := a.str(k, "")
	if s == "" {
		return def
	}
	v, err := ParseValue(s)
	if err == nil {
		err = fitWidth(v, width)
	}
	if err != nil && a.err == nil {
		a.err = fmt.Errorf("%s=%s: %w", k, s, err)
	}
	return v
}

func (a *args) mac(k string, def wire.MAC) wire.MAC {
	if !a.has(k) {
		return def
	}
	v := a.num(k, 0, 48)
	var m wire.MAC
	for i := range m {
		m[i] = byte(v >> (40 - 8*i))
	}
	return m
}

func (a *args) ip(k string, def wire.Addr4) wire.Addr4 {
	if !a.has(k) {
		return def
	}
	var b wire.Addr4
	binary.BigEndian.PutUint32(b[:], uint32(a.num(k, 0, 32)))
	return b
}

func (a *args) ecn(def wire.ECN) wire.ECN {
	switch s := a.str("ecn", ""); s {
	case "":
		return def
	case "not", "not-ect":
		return wire.NotECT
	case "ect0":
		return wire.ECT0
	case "ect1":
		return wire.ECT1
	case "ce":
		return wire.CE
	default:
		if a.err == nil {
			a.err = fmt.Errorf("ecn=%s: want not, ect0, ect1 or ce: %w", s, errValue)
		}
		return 0
	}
}

// envelope reads the L2-L4 keys shared by the IP kinds.
func (a *args) envelope(dport uint16) *wire.Envelope {
	e := &wire.Envelope{
		DstMAC: a.mac("dmac", defaultDstMAC), SrcMAC: a.mac("smac", defaultSrcMAC),
		SrcIP: a.ip("src", defaultSrcIP), DstIP: a.ip("dst", defaultDstIP),
		DSCP: uint8(a.num("dscp", 0, 6)), ECN: a.ecn(wire.NotECT), TTL: uint8(a.num("ttl", 64, 8)),
		ID: uint16(a.num("id", 0, 16)), DontFragment: a.num("df", 0, 1) == 1,
		SrcPort: uint16(a.num("sport", 5000, 16)), DstPort: uint16(a.num("dport", uint64(dport), 16)),
	}
	if a.has("vlan") {
		e.VLAN, e.VID = true, uint16(a.num("vlan", 0, 12))
		e.PCP, e.DEI = uint8(a.num("pcp", 0, 3)), a.num("dei", 0, 1) == 1
	}
	return e
}

func (a *args) bth(opcode uint8) wire.BTH {
	return wire.BTH{
		Opcode: uint8(a.num("opcode", uint64(opcode), 8)), PKey: uint16(a.num("pkey", wire.DefaultPKey, 16)),
		Resv8a: uint8(a.num("byte4", 0, 8)), DestQP: uint32(a.num("dqp", 0, 24)),
		AckReq: a.num("ackreq", 0, 1) == 1, PSN: uint32(a.num("psn", 0, 24)),
		SE: a.num("se", 0, 1) == 1, TVer: uint8(a.num("tver", 0, 4)),
	}
}

// headerLen is the Ethernet (+ 802.1Q) + IPv4 + UDP length of an envelope.
func headerLen(e *wire.Envelope) int {
	n := wire.EthernetLen + wire.IPv4Len + wire.UDPLen
	if e.VLAN {
		n += wire.Dot1QLen
	}
	return n
}

// payloadLen reads payload=N, or len=N (the whole frame, before padding) given the
// fixed overhead of the kind.
func (a *args) payloadLen(overhead int) int {
	if a.has("len") {
		n := int(a.num("len", 0, 16)) - overhead
		if n < 0 && a.err == nil {
			a.err = fmt.Errorf("len below the %d bytes of headers: %w", overhead, errValue)
		}
		return max(n, 0)
	}
	return int(a.num("payload", 0, 16))
}

// BuildPacket builds the frame a packet description denotes: kind is the first word
// (roce, cnp, inc, announce, pfc, pause, udp, ipv4, eth, hex), kv its key=value
// arguments (hexArgs: the words of a hex packet). The modifiers truncate=N and
// set=OFF:HEX (repeatable) apply to every kind; expect=true allows ignore=OFF+LEN
// (repeatable, comma-separated) and "**" in hex.
func BuildPacket(kind string, kv []KV, hexArgs []string, expect bool) (*Packet, error) {
	a := &args{used: map[string]bool{}}
	var mods []KV
	seen := map[string]bool{}
	for _, x := range kv {
		if seen[x.Key] && x.Key != "set" && x.Key != "ignore" {
			return nil, fmt.Errorf("%s: key %q given twice: %w", kind, x.Key, errValue)
		}
		seen[x.Key] = true
		switch x.Key {
		case "truncate", "set", "ignore":
			mods = append(mods, x)
		default:
			a.kv = append(a.kv, x)
		}
	}
	buf := make([]byte, 9100)
	var n int
	var err error
	var mask []byte
	switch kind {
	case "roce":
		env := a.envelope(wire.RoCEv2UDPPort)
		bth := a.bth(wire.OpRCSendOnly)
		pay := a.payloadLen(headerLen(env) + wire.BTHLen + wire.ICRCLen)
		n, err = wire.BuildRoCE(buf, env, &bth, make([]byte, pay))
	case "int":
		env := a.envelope(wire.RoCEv2UDPPort)
		bth := a.bth(wire.OpRCSendOnly)
		var hops []wire.INTHop
		var dontCare [][2]int // byte ranges of "*" fields (offset, length)
		intOff := headerLen(env) + wire.BTHLen
		for i := 0; i < wire.INTMaxHops; i++ {
			k := "hop" + strconv.Itoa(i)
			if !a.has(k) {
				break
			}
			h, dc, err := parseINTHop(a.str(k, ""), intOff+wire.INTHeaderLen+i*wire.INTHopLen)
			if err != nil {
				return nil, fmt.Errorf("int %s: %w", k, err)
			}
			if len(dc) > 0 && !expect {
				return nil, fmt.Errorf("int %s: * (don't care) only in expectations: %w", k, errValue)
			}
			hops, dontCare = append(hops, h), append(dontCare, dc...)
		}
		hdr := wire.INTHeader{Version: uint8(a.num("ver", wire.INTVersion, 8))}
		if a.num("echo", 0, 1) == 1 {
			hdr.Flags = wire.INTFlagEcho
		}
		pay := a.payloadLen(headerLen(env) + wire.BTHLen + wire.INTHeaderLen + len(hops)*wire.INTHopLen + wire.ICRCLen)
		n, err = wire.BuildRoCEINT(buf, env, bth, hdr, hops, make([]byte, pay))
		if err == nil && a.has("count") { // a hop count that disagrees with the records
			buf[intOff+2] = uint8(a.num("count", 0, 8))
		}
		if err == nil && len(dontCare) > 0 {
			mask = make([]byte, n)
			for i := range mask {
				mask[i] = 0xff
			}
			for _, r := range dontCare {
				clear(mask[r[0] : r[0]+r[1]])
			}
		}
	case "cnp":
		env := a.envelope(wire.RoCEv2UDPPort)
		bth := a.bth(wire.OpCNP)
		var ext *wire.CNPExt
		if a.has("ver") || a.has("flags") || a.has("switch") || a.has("window") || a.has("eport") || a.has("qlen") {
			ext = &wire.CNPExt{Version: uint8(a.num("ver", wire.CNPExtVersion, 4)), Flags: uint8(a.num("flags", 0, 4)),
				SwitchID: uint16(a.num("switch", 0, 16)), Window: uint32(a.num("window", 0, 32)),
				Port: uint16(a.num("eport", 0, 16)), QueueBytes: uint32(a.num("qlen", 0, 32))}
		}
		n, err = wire.BuildCNP(buf, env, bth, ext)
	case "inc":
		env := a.envelope(wire.RoCEv2UDPPort)
		bth := a.bth(wire.OpRCSendOnly)
		inc := wire.INC{Flags: uint8(a.num("flags", 0, 8)), Version: uint8(a.num("ver", wire.INCVersion, 8))}
		var ids *wire.INCIDs
		if a.has("group") || a.has("msg") || a.has("first") || a.has("op") || a.has("flen") {
			ids = &wire.INCIDs{GroupID: uint16(a.num("group", 0, 16)), MessageID: uint16(a.num("msg", 0, 16)),
				FirstPSN: uint32(a.num("first", 0, 24)), OpID: uint16(a.num("op", 0, 16)), FlowLen: uint32(a.num("flen", 0, 32))}
		}
		var vec wire.INCVector
		if s := a.str("vec", ""); s != "" {
			parts := strings.Split(s, ",")
			if len(parts) > wire.INCVectorLen {
				return nil, fmt.Errorf("vec: %d elements, at most %d: %w", len(parts), wire.INCVectorLen, errValue)
			}
			for i, p := range parts {
				if vec[i], err = parseSigned(p); err != nil {
					return nil, fmt.Errorf("vec element %d: %w", i, err)
				}
			}
		}
		n, err = wire.BuildINC(buf, env, bth, inc, ids, &vec)
	case "announce":
		env := a.envelope(wire.DefaultAnnouncePort)
		ann := wire.Announcement{
			Magic: uint32(a.num("magic", wire.AnnouncementMagic, 32)), Version: uint8(a.num("aver", wire.AnnouncementVersion, 8)),
			Type: uint8(a.num("type", wire.AnnounceUp, 8)), Flags: uint8(a.num("aflags", 0, 8)),
			WorkerRank: uint8(a.num("rank", 0, 8)), SenderIP: a.ip("sender", env.SrcIP), ReceiverIP: a.ip("receiver", env.DstIP),
			UDPSrcPort: uint16(a.num("csport", 0, 16)), SenderQPN: uint32(a.num("sqpn", 0, 24)),
			ReceiverQPN: uint32(a.num("rqpn", 0, 24)), INCGroup: uint16(a.num("agroup", 0, 16)),
		}
		n, err = wire.BuildAnnouncement(buf, env, &ann)
	case "pfc":
		var q [8]uint16
		enable := a.num("enable", 0, 8)
		if a.has("prio") {
			p := a.num("prio", 0, 3)
			enable |= 1 << p
			q[p] = uint16(a.num("quanta", 0, 16))
		}
		for i := range q {
			if k := "t" + strconv.Itoa(i); a.has(k) {
				q[i] = uint16(a.num(k, 0, 16))
			}
		}
		n, err = wire.BuildPFC(buf, a.mac("smac", defaultSrcMAC), uint16(enable), q)
	case "pause":
		n, err = wire.BuildPause(buf, a.mac("smac", defaultSrcMAC), uint16(a.num("quanta", 0, 16)))
	case "udp", "ipv4":
		n, err = buildIP(buf, kind, a)
	case "eth":
		et := uint16(a.num("type", 0x88b5, 16))
		eth := wire.Ethernet{Dst: a.mac("dmac", defaultDstMAC), Src: a.mac("smac", defaultSrcMAC), EtherType: et}
		hdr := wire.EthernetLen
		if a.has("vlan") { // an 802.1Q tag; type is the inner EtherType
			eth.EtherType = wire.EtherTypeDot1Q
			tag := wire.Dot1Q{PCP: uint8(a.num("pcp", 0, 3)), DEI: a.num("dei", 0, 1) == 1, VID: uint16(a.num("vlan", 0, 12)), EtherType: et}
			_, _ = tag.Encode(buf[wire.EthernetLen:])
			hdr += wire.Dot1QLen
		}
		_, _ = eth.Encode(buf)
		n = max(hdr+a.payloadLen(hdr), wire.MinFrameLen)
	case "hex":
		var b []byte
		b, mask, err = parseHex(strings.Join(hexArgs, ""))
		if err == nil && !expect && len(mask) > 0 && strings.Contains(strings.Join(hexArgs, ""), "**") {
			err = fmt.Errorf("** (don't care) only in expectations: %w", errValue)
		}
		n = copy(buf, b)
	default:
		return nil, fmt.Errorf("unknown packet kind %q: %w", kind, errValue)
	}
	if a.err != nil {
		return nil, fmt.Errorf("%s: %w", kind, a.err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kind, err)
	}
	for _, x := range a.kv {
		if !a.used[x.Key] {
			return nil, fmt.Errorf("%s: unknown key %q: %w", kind, x.Key, errValue)
		}
	}
	p := &Packet{Kind: kind, Bytes: buf[:n:n]}
	if mask == nil {
		mask = make([]byte, n)
		for i := range mask {
			mask[i] = 0xff
		}
	}
	p.Mask = mask
	if err := p.modify(mods, expect); err != nil {
		return nil, fmt.Errorf("%s: %w", kind, err)
	}
	return p, nil
}

// buildIP builds a plain UDP datagram (checksum 0) or a bare IPv4 packet.
func buildIP(b []byte, kind string, a *args) (int, error) {
	env := a.envelope(9)
	off := 0
	eth := wire.Ethernet{Dst: env.DstMAC, Src: env.SrcMAC, EtherType: wire.EtherTypeIPv4}
	if env.VLAN {
		eth.EtherType = wire.EtherTypeDot1Q
	}
	n, _ := eth.Encode(b)
	off += n
	if env.VLAN {
		tag := wire.Dot1Q{PCP: env.PCP, DEI: env.DEI, VID: env.VID, EtherType: wire.EtherTypeIPv4}
		n, _ = tag.Encode(b[off:])
		off += n
	}
	proto, l4 := uint8(a.num("proto", 6, 8)), 0
	if kind == "udp" {
		proto, l4 = wire.IPProtoUDP, wire.UDPLen
	}
	pay := a.payloadLen(off + wire.IPv4Len + l4)
	ip := wire.IPv4{Version: 4, IHL: 5, TOS: env.DSCP<<2 | uint8(env.ECN), TotalLen: uint16(wire.IPv4Len + l4 + pay),
		ID: env.ID, TTL: env.TTL, Protocol: proto, Src: env.SrcIP, Dst: env.DstIP,
		FragOff: uint16(a.num("fragoff", 0, 13))}
	if env.DontFragment {
		ip.Flags = wire.IPv4FlagDF
	}
	if _, err := ip.Encode(b[off:]); err != nil {
		return 0, fmt.Errorf("ipv4 header: %w", err)
	}
	_ = wire.SetIPv4Checksum(b[off : off+wire.IPv4Len])
	off += wire.IPv4Len
	if kind == "udp" {
		u := wire.UDP{SrcPort: env.SrcPort, DstPort: env.DstPort, Length: uint16(wire.UDPLen + pay)}
		n, _ = u.Encode(b[off:])
		off += n
	}
	clear(b[off : off+pay])
	return max(off+pay, wire.MinFrameLen), nil
}

// modify applies truncate=N, set=OFF:HEX and ignore=OFF+LEN in the order written.
func (p *Packet) modify(mods []KV, expect bool) error {
	for _, m := range mods {
		switch m.Key {
		case "truncate":
			v, err := ParseValue(m.Value)
			if err != nil || v > uint64(len(p.Bytes)) {
				return fmt.Errorf("truncate=%s: beyond the %d-byte frame: %w", m.Value, len(p.Bytes), errValue)
			}
			p.Bytes, p.Mask = p.Bytes[:v], p.Mask[:v]
		case "set":
			off, hexs, ok := strings.Cut(m.Value, ":")
			o, err := ParseValue(off)
			if !ok || err != nil {
				return fmt.Errorf("set=%s: want OFFSET:HEX: %w", m.Value, errValue)
			}
			b, _, err := parseHex(hexs)
			if err != nil {
				return fmt.Errorf("set=%s: %w", m.Value, err)
			}
			if int(o)+len(b) > len(p.Bytes) {
				return fmt.Errorf("set=%s: beyond the %d-byte frame: %w", m.Value, len(p.Bytes), errValue)
			}
			copy(p.Bytes[o:], b)
		case "ignore":
			if !expect {
				return fmt.Errorf("ignore= only in expectations: %w", errValue)
			}
			for _, r := range strings.Split(m.Value, ",") {
				off, ln, ok := strings.Cut(r, "+")
				o, err1 := ParseValue(off)
				l, err2 := ParseValue(ln)
				if !ok || err1 != nil || err2 != nil || o+l > uint64(len(p.Mask)) {
					return fmt.Errorf("ignore=%s: want OFFSET+LEN inside the frame: %w", r, errValue)
				}
				clear(p.Mask[o : o+l])
			}
		}
	}
	return nil
}

// intHopFields are the fields of an INT record in the DSL's order
// (TS:PORT:TX:QLEN:RATE): offset in the record, size, width in bits.
var intHopFields = [5]struct{ off, size, width int }{{0, 6, 48}, {6, 2, 16}, {8, 8, 64}, {16, 4, 32}, {20, 4, 32}}

// parseINTHop reads "TS:PORT:TX:QLEN:RATE" for the record at frame offset at;
// a field written * is a don't-care, returned as a byte range.
func parseINTHop(s string, at int) (wire.INTHop, [][2]int, error) {
	parts := strings.Split(s, ":")
	if len(parts) != len(intHopFields) {
		return wire.INTHop{}, nil, fmt.Errorf("%q: want TS:PORT:TX:QLEN:RATE: %w", s, errValue)
	}
	var v [5]uint64
	var dc [][2]int
	for i, p := range parts {
		f := intHopFields[i]
		if p == "*" {
			dc = append(dc, [2]int{at + f.off, f.size})
			continue
		}
		x, err := ParseValue(p)
		if err == nil {
			err = fitWidth(x, f.width)
		}
		if err != nil {
			return wire.INTHop{}, nil, fmt.Errorf("%q field %d: %w", s, i+1, err)
		}
		v[i] = x
	}
	return wire.INTHop{TimestampNs: v[0], Port: uint16(v[1]), TxBytes: v[2], QueueBytes: uint32(v[3]), RateBytesPerMs: uint32(v[4])}, dc, nil
}
