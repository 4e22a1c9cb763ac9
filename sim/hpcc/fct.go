package hpcc

import (
	"fmt"
	"io"
	"math/bits"
	"strconv"
)

// NodeIP is the HPCC simulator's address of node id (node_id_to_ip in
// third.cc): 11.x.y.1 with x.y = id in base 256. IDs above 65535 do not
// round-trip through IPNode, as in the simulator.
func NodeIP(id int) uint32 {
	return 0x0b000001 + uint32(id/256)*0x00010000 + uint32(id%256)*0x00000100
}

// IPNode is the inverse of NodeIP (ip_to_node_id in third.cc).
func IPNode(ip uint32) int { return int(ip>>8) & 0xffff }

// HeaderBytes is the per-packet header the simulator counts in a flow's
// standalone FCT: Ethernet 14 + IPv4 20 + UDP 8 + priority group 2 +
// sequence number 4 (the INT header is left out).
const HeaderBytes = 48

// StandaloneFCT is fct.txt's last column as the HPCC simulator computes it
// (qp_finish in third.cc): the base RTT of the path plus the flow's bytes,
// headers of ceil(size/payload) packets included, at the path's bottleneck
// rate, in whole nanoseconds.
func StandaloneFCT(size int64, payload int, p PathInfo) int64 {
	if size < 1 || payload < 1 || p.Bps == 0 {
		return p.RTTNs
	}
	pkts := (size-1)/int64(payload) + 1
	total := uint64(size) + uint64(pkts)*HeaderBytes
	hi, lo := bits.Mul64(total, 8_000_000_000)
	if hi >= p.Bps { // more than 2^64 ns: beyond any run
		return maxTimeNs
	}
	q, _ := bits.Div64(hi, lo, p.Bps)
	return p.RTTNs + int64(min(q, uint64(maxTimeNs)))
}

// SetStandaloneFCT replaces every record's standalone FCT with the HPCC
// simulator's (StandaloneFCT on the path between the hosts its addresses name),
// so that the FCTs of another simulator's fct.txt are divided by the same
// denominators as the HPCC simulator's. An address that names no host of the
// topology behind p is an error, and recs is then left unchanged.
func SetStandaloneFCT(recs []FCT, p *Paths, payload int) error {
	out := make([]int64, len(recs))
	for i, r := range recs {
		src, dst := IPNode(r.SIP), IPNode(r.DIP)
		pi, ok := p.Get(src, dst)
		if !ok {
			return fmt.Errorf("hpcc: fct record %d: no path from node %d to node %d", i+1, src, dst)
		}
		out[i] = StandaloneFCT(r.Size, payload, pi)
	}
	for i := range recs {
		recs[i].StandaloneNs = out[i]
	}
	return nil
}

// AppendFCT appends one fct.txt line:
// "sip dip sport dport size start_ns fct_ns standalone_fct_ns\n", the
// addresses in eight hex digits as the simulator prints them.
func AppendFCT(dst []byte, f FCT) []byte {
	dst = appendHex8(dst, f.SIP)
	dst = append(dst, ' ')
	dst = appendHex8(dst, f.DIP)
	dst = append(dst, ' ')
	dst = appendInts(dst, int64(f.SPort), int64(f.DPort), f.Size, f.StartNs, f.FCTNs, f.StandaloneNs)
	return append(dst, '\n')
}

func appendHex8(dst []byte, v uint32) []byte {
	const hex = "0123456789abcdef"
	for s := 28; s >= 0; s -= 4 {
		dst = append(dst, hex[(v>>s)&0xf])
	}
	return dst
}

// WriteFCT writes fct.txt lines.
func WriteFCT(w io.Writer, recs []FCT) error { return writeRecords(w, "fct", recs, AppendFCT) }

// ParseFCT reads fct.txt. Sizes and times are non-negative and the
// standalone FCT positive (it divides the FCT into a slowdown).
func ParseFCT(name string, r io.Reader) ([]FCT, error) { return parseRecords(name, r, parseFCT) }

func parseFCT(f []string) (FCT, error) {
	var rec FCT
	if len(f) != 8 {
		return rec, fmt.Errorf("want \"sip dip sport dport size start_ns fct_ns standalone_fct_ns\", got %d fields", len(f))
	}
	for i, p := range []*uint32{&rec.SIP, &rec.DIP} {
		v, err := strconv.ParseUint(f[i], 16, 32)
		if err != nil {
			return rec, fmt.Errorf("%s %q: want up to 8 hex digits", []string{"sip", "dip"}[i], f[i])
		}
		*p = uint32(v)
	}
	for i, p := range []*uint16{&rec.SPort, &rec.DPort} {
		v, err := strconv.ParseUint(f[2+i], 10, 16)
		if err != nil {
			return rec, fmt.Errorf("%s %q: want a port number", []string{"sport", "dport"}[i], f[2+i])
		}
		*p = uint16(v)
	}
	names := [...]string{"size", "start_ns", "fct_ns", "standalone_fct_ns"}
	for i, p := range []*int64{&rec.Size, &rec.StartNs, &rec.FCTNs, &rec.StandaloneNs} {
		v, err := strconv.ParseInt(f[4+i], 10, 64)
		if err != nil || v < 0 {
			return rec, fmt.Errorf("%s %q: want a non-negative integer", names[i], f[4+i])
		}
		*p = v
	}
	if rec.StandaloneNs == 0 {
		return rec, fmt.Errorf("standalone_fct_ns is 0 (the slowdown would divide by zero)")
	}
	return rec, nil
}

// AppendPFC appends one pfc.txt line: "time node type ifindex paused\n",
// type 1 for a switch, 0 for a host; paused 1 for a PAUSE received, 0 for a
// resume. The simulator writes a line when a port receives a PFC frame.
func AppendPFC(dst []byte, p PFC) []byte {
	return append(appendInts(dst, p.TimeNs, int64(p.Node), b2i(p.Switch), int64(p.IfIndex), b2i(p.Paused)), '\n')
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// WritePFC writes pfc.txt lines.
func WritePFC(w io.Writer, recs []PFC) error { return writeRecords(w, "pfc", recs, AppendPFC) }

// ParsePFC reads pfc.txt.
func ParsePFC(name string, r io.Reader) ([]PFC, error) { return parseRecords(name, r, parsePFC) }

func parsePFC(f []string) (PFC, error) {
	if len(f) != 5 {
		return PFC{}, fmt.Errorf("want \"time node type ifindex paused\", got %d fields", len(f))
	}
	t, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || t < 0 {
		return PFC{}, fmt.Errorf("time %q: want a non-negative integer (ns)", f[0])
	}
	node, err := atoiRange(f[1], 0, MaxNodes-1)
	if err != nil {
		return PFC{}, fmt.Errorf("node: %v", err)
	}
	typ, err := atoiRange(f[2], 0, 1)
	if err != nil {
		return PFC{}, fmt.Errorf("type (0 host, 1 switch): %v", err)
	}
	ifi, err := atoiRange(f[3], 0, MaxLinks)
	if err != nil {
		return PFC{}, fmt.Errorf("ifindex: %v", err)
	}
	paused, err := atoiRange(f[4], 0, 1)
	if err != nil {
		return PFC{}, fmt.Errorf("paused (1 pause, 0 resume): %v", err)
	}
	return PFC{TimeNs: t, Node: node, Switch: typ == 1, IfIndex: ifi, Paused: paused == 1}, nil
}

// mulDiv returns a*b/c without overflow in the product (saturating).
func mulDiv(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi >= c {
		return ^uint64(0)
	}
	q, _ := bits.Div64(hi, lo, c)
	return q
}
