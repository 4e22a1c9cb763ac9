package wireshark

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/internal/pcapio"
	"github.com/fastcnp/fastcnp/wire"
)

// Values of _ws.expert.severity (PI_WARN, PI_ERROR).
const (
	sevWarn  = "6291456"
	sevError = "8388608"
)

// Fields every run prints, whatever the cases ask for.
var baseFields = []string{"frame.protocols", "_ws.col.Info", "_ws.expert.message", "_ws.expert.severity", "_ws.lua.error"}

// tsharkCase is one frame of the capture and what tshark must decode.
type tsharkCase struct {
	name  string
	frame []byte
	// want maps a field to the value tshark -T fields prints (all
	// occurrences, joined by ","); "" means the field must be absent.
	want map[string]string
	// info is a substring of the Info column.
	info string
	// expert are substrings of the expert messages.
	expert []string
	// clean: no expert info of severity warning or error.
	clean bool
	// notProto are protocols that must not be in frame.protocols.
	notProto []string
}

// scriptPath returns the absolute path of fastcnp.lua (tests run in the
// package directory).
func scriptPath(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("fastcnp.lua")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

func lookTshark(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed (make setup, or apt-get install -y tshark); skipping the dissector test")
	}
	return p
}

func build(t *testing.T, f func(b []byte) (int, error)) []byte {
	t.Helper()
	b := make([]byte, 2048)
	n, err := f(b)
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

// ipOffset is the offset of the IPv4 header of a frame built by package wire.
func ipOffset(frame []byte) int {
	if binary.BigEndian.Uint16(frame[12:14]) == wire.EtherTypeDot1Q {
		return wire.EthernetLen + wire.Dot1QLen
	}
	return wire.EthernetLen
}

// icrc is the ICRC of a RoCEv2 frame as tshark prints fastcnp.icrc.
func icrc(t *testing.T, frame []byte) string {
	t.Helper()
	c, _, err := wire.ICRC(frame[ipOffset(frame):])
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("0x%08x", c)
}

// cutUDP returns a copy of a frame built by package wire whose UDP payload
// is cut to n bytes, with consistent IPv4 and UDP lengths and checksums
// (the UDP checksum stays 0 if it was 0): a packet that is short on the wire.
func cutUDP(t *testing.T, frame []byte, n int) []byte {
	t.Helper()
	ip := ipOffset(frame)
	udp := ip + wire.IPv4Len
	end := udp + wire.UDPLen + n
	if end > len(frame) {
		t.Fatalf("cutUDP: %d bytes > frame", n)
	}
	out := make([]byte, max(end, wire.MinFrameLen))
	copy(out, frame[:end])
	binary.BigEndian.PutUint16(out[ip+2:], uint16(wire.IPv4Len+wire.UDPLen+n))
	if err := wire.SetIPv4Checksum(out[ip:]); err != nil {
		t.Fatal(err)
	}
	binary.BigEndian.PutUint16(out[udp+4:], uint16(wire.UDPLen+n))
	if binary.BigEndian.Uint16(out[udp+6:]) != 0 {
		var src, dst wire.Addr4
		copy(src[:], out[ip+12:])
		copy(dst[:], out[ip+16:])
		c, err := wire.UDPChecksum(src, dst, out[udp:end])
		if err != nil {
			t.Fatal(err)
		}
		binary.BigEndian.PutUint16(out[udp+6:], c)
	}
	return out
}

func writePcap(t *testing.T, name string, frames [][]byte) string {
	t.Helper()
	return writePcapSnap(t, name, 0, frames)
}

// writePcapSnap writes frames to a pcap whose records keep at most snapLen
// bytes of each frame (0: all of it) and returns its path.
func writePcapSnap(t *testing.T, name string, snapLen uint32, frames [][]byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if d := os.Getenv("FASTCNP_PCAP_OUT"); d != "" {
		path = filepath.Join(d, name) // keep the capture: FASTCNP_PCAP_OUT=<dir>
	}
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	pw, err := pcapio.NewWriter(fh, pcapio.Options{Nanosecond: true, SnapLen: snapLen})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1700000000, 0)
	for i, f := range frames {
		if err := pw.WritePacket(t0.Add(time.Duration(i)*time.Microsecond), f); err != nil {
			t.Fatal(err)
		}
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// runTshark runs tshark on pcap with extra arguments and returns, per frame,
// the printed value of each field. A Lua error anywhere fails the test.
func runTshark(t *testing.T, tshark, pcap string, extra []string, fields []string) []map[string]string {
	t.Helper()
	args := append([]string{"-r", pcap}, extra...)
	args = append(args, "-T", "fields", "-E", "separator=\t", "-E", "occurrence=a", "-E", "aggregator=,")
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	cmd := exec.Command(tshark, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tshark %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	if s := stderr.String(); strings.Contains(strings.ToLower(s), "lua") {
		t.Fatalf("tshark reported a Lua problem:\n%s", s)
	}
	var rows []map[string]string
	for _, line := range strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n") {
		cols := strings.Split(line, "\t")
		row := map[string]string{}
		for i, f := range fields {
			if i < len(cols) {
				row[f] = cols[i]
			}
		}
		if e := row["_ws.lua.error"]; e != "" {
			t.Errorf("Lua error in frame (%s): %s", row["frame.protocols"], row["_ws.expert.message"])
		}
		rows = append(rows, row)
	}
	return rows
}

// fieldsOf returns baseFields, then every other field the cases name.
func fieldsOf(cases []tsharkCase) []string {
	seen := map[string]bool{}
	var extra []string
	for _, c := range cases {
		for k := range c.want {
			if !seen[k] {
				seen[k] = true
				extra = append(extra, k)
			}
		}
	}
	sort.Strings(extra)
	out := append([]string{}, baseFields...)
	for _, f := range extra {
		if !containsStr(baseFields, f) {
			out = append(out, f)
		}
	}
	return out
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func joinInts(v []int32) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(int(x))
	}
	return strings.Join(s, ",")
}

// TestDissector builds fastcnp's frames with package wire, writes them to a
// pcap and checks, frame by frame, what tshark decodes with fastcnp.lua: the
// CNP extension, the INC header and the announcement field by field, the
// expert info of truncated or odd headers, and never a Lua error.
func TestDissector(t *testing.T) {
	tshark := lookTshark(t)
	script := scriptPath(t)

	mA, mB := wire.MAC{2, 0, 0, 0, 0, 1}, wire.MAC{2, 0, 0, 0, 0, 2}
	ipA, ipB := wire.Addr4{10, 0, 0, 1}, wire.Addr4{10, 0, 0, 2}
	ipC, ipD := wire.Addr4{10, 1, 2, 3}, wire.Addr4{10, 4, 5, 6}
	fwd := wire.Envelope{DstMAC: mB, SrcMAC: mA, SrcIP: ipA, DstIP: ipB, DSCP: 26, ECN: wire.ECT0, SrcPort: 0xc123, DontFragment: true}
	rev := wire.Envelope{DstMAC: mA, SrcMAC: mB, SrcIP: ipB, DstIP: ipA, DSCP: 48, SrcPort: 0xc123, DontFragment: true}
	vlan := fwd
	vlan.VLAN, vlan.PCP, vlan.VID = true, 3, 100
	other := wire.Envelope{DstMAC: mB, SrcMAC: mA, SrcIP: ipC, DstIP: ipD, SrcPort: 50000}

	data := wire.BTH{Opcode: wire.OpRCSendOnly, PKey: wire.DefaultPKey, DestQP: 0x000111, AckReq: true, PSN: 1000}
	extSwitch := wire.CNPExt{Version: wire.CNPExtVersion, Flags: wire.CNPExtWindowValid | wire.CNPExtBySwitch,
		SwitchID: 7, Window: 65536, Port: 12, QueueBytes: 100000}
	extWindow := wire.CNPExt{Version: wire.CNPExtVersion, Flags: wire.CNPExtWindowValid,
		SwitchID: 0xBEEF, Window: 0xFFFFFFFF, Port: 0xFFFF, QueueBytes: 1}
	vec1 := wire.INCVector{math.MinInt32, -1, 0, 1, math.MaxInt32, 100, -100, 7, 8, 9, 10, 11, 12, 13, 14, -15}
	vec2 := wire.INCVector{}
	for i := range vec2 {
		vec2[i] = int32(i*1000 - 5000)
	}
	vec3 := wire.INCVector{1, -2, 3}
	idsFirst := wire.INCIDs{GroupID: 5, MessageID: 9, FirstPSN: 0xABCDEF, OpID: 3, FlowLen: 4}
	idsResult := wire.INCIDs{GroupID: 0xFFFF, MessageID: 1, FirstPSN: 0, OpID: 0xFFFF, FlowLen: 0xFFFFFFFF}
	incBTH := wire.BTH{Opcode: wire.OpRCSendOnly, PKey: wire.DefaultPKey, DestQP: 0x000111, PSN: 0xABCDEF}
	intHops := []wire.INTHop{
		{TimestampNs: wire.INTMaxTimestamp, Port: 3, TxBytes: math.MaxUint64, QueueBytes: 3000, RateBytesPerMs: 12_500_000},
		{TimestampNs: 1000, Port: 12, TxBytes: 5158, QueueBytes: 0, RateBytesPerMs: 3_125_000},
	}
	// markINT sets the INT mark on a frame built without it (a malformed INT
	// header has no ICRC to compute; the dissector does not check it).
	markINT := func(f []byte) []byte {
		f[ipOffset(f)+wire.IPv4Len+wire.UDPLen+4] = wire.INTBTHMark
		return f
	}

	annUp := wire.NewAnnouncement(wire.AnnounceUp, wire.AnnounceFlagCNPTarget)
	annUp.SenderIP, annUp.ReceiverIP, annUp.UDPSrcPort, annUp.SenderQPN, annUp.ReceiverQPN = ipA, ipB, 0xc123, 0x333, 0x111
	annDown := wire.NewAnnouncement(wire.AnnounceDown, wire.AnnounceFlagINCUplink|wire.AnnounceFlagCNPTarget)
	annDown.WorkerRank, annDown.SenderIP, annDown.ReceiverIP = 7, ipC, ipD
	annDown.UDPSrcPort, annDown.SenderQPN, annDown.ReceiverQPN, annDown.INCGroup = 0xFFFF, 0xABCDEF, 0x000001, 42
	annOdd := wire.NewAnnouncement(9, 0)
	annOdd.SenderIP, annOdd.ReceiverIP = ipA, ipB
	annBad := annUp
	annBad.Magic = 0xDEADBEEF
	annV2 := annUp
	annV2.Version = 2
	extOdd := wire.CNPExt{Version: 2, Flags: wire.CNPExtBySwitch | 0x4, Resv1: 5, SwitchID: 1, Resv2: 0x0102}
	annKey := []byte("wireshark-test-announcement-key!")
	annAuth := wire.AnnounceAuth{Type: wire.AnnounceAuthHMACSHA256, KeyID: 4000000000, Timestamp: 1_700_000_000_123_456_789, Nonce: 0x0123456789abcdef}
	annAuthOdd := annAuth
	annAuthOdd.Type, annAuthOdd.Resv2 = 2, 1
	signed := build(t, func(b []byte) (int, error) { return wire.BuildSignedAnnouncement(b, &fwd, &annUp, &annAuth, annKey) })
	tag := fmt.Sprintf("%x", signed[len(signed)-wire.AnnounceTagLen:])

	// Raw header bytes for the packets that are short on the wire.
	extBytes := make([]byte, wire.CNPExtLen)
	if _, err := extSwitch.Encode(extBytes); err != nil {
		t.Fatal(err)
	}
	incBytes := make([]byte, wire.INCLen+wire.INCIDsLen+wire.INCVectorBytes)
	inc := wire.INC{Flags: wire.INCFlagIDs, Version: wire.INCVersion}
	if _, err := inc.Encode(incBytes); err != nil {
		t.Fatal(err)
	}
	if _, err := idsFirst.Encode(incBytes[wire.INCLen:]); err != nil {
		t.Fatal(err)
	}
	if _, err := vec1.Encode(incBytes[wire.INCLen+wire.INCIDsLen:]); err != nil {
		t.Fatal(err)
	}
	incMarked := incBTH
	incMarked.Resv8a = wire.INCBTHMark
	cnpBTH := wire.BTH{Opcode: wire.OpCNP, PKey: wire.DefaultPKey, DestQP: 0x000555}

	cnpFull := build(t, func(b []byte) (int, error) {
		return wire.BuildCNP(b, &rev, wire.BTH{PKey: wire.DefaultPKey, DestQP: 0x000666}, &extSwitch)
	})
	annTo4791 := fwd
	annTo4791.DstPort = wire.RoCEv2UDPPort

	absent := func(fields ...string) map[string]string {
		m := map[string]string{}
		for _, f := range fields {
			m[f] = ""
		}
		return m
	}
	with := func(m map[string]string, kv ...string) map[string]string {
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}

	cases := []tsharkCase{
		{
			name:  "data_plain_roce",
			frame: build(t, func(b []byte) (int, error) { return wire.BuildRoCE(b, &fwd, &data, bytes.Repeat([]byte{0x5a}, 64)) }),
			want: with(absent("fastcnp.bth.opcode", "fastcnp.cnp", "fastcnp.inc", "fastcnp.ann", "fastcnp.icrc"),
				"infiniband.bth.opcode", "4", "infiniband.bth.destqp", "0x000111"),
			info:  "RC Send Only",
			clean: true,
		},
		{
			name: "cnp_by_switch",
			frame: build(t, func(b []byte) (int, error) {
				return wire.BuildCNP(b, &rev, wire.BTH{PKey: wire.DefaultPKey, DestQP: 0x000333}, &extSwitch)
			}),
			want: with(absent("fastcnp.inc", "fastcnp.ann"),
				"infiniband.bth.opcode", "129", "infiniband.bth.destqp", "0x000333",
				"fastcnp.bth.opcode", "0x81", "fastcnp.bth.byte4", "0x00", "fastcnp.cnp", "1",
				"fastcnp.cnp.version", "1", "fastcnp.cnp.flags", "0x03",
				"fastcnp.cnp.flags.window_valid", "1", "fastcnp.cnp.flags.by_switch", "1",
				"fastcnp.cnp.reserved1", "0x00", "fastcnp.cnp.switch_id", "7", "fastcnp.cnp.window", "65536",
				"fastcnp.cnp.port", "12", "fastcnp.cnp.queue_bytes", "100000", "fastcnp.cnp.reserved2", "0x0000",
				"fastcnp.cnp.plain", "0"),
			info:  "CNP QP=0x000333",
			clean: true,
		},
		{
			name: "cnp_window_vlan_becn",
			frame: build(t, func(b []byte) (int, error) {
				return wire.BuildCNP(b, &vlan, wire.BTH{PKey: wire.DefaultPKey, DestQP: 0xABCDEF, Resv8a: 0x40}, &extWindow)
			}),
			want: with(absent("fastcnp.inc"),
				"vlan.id", "100", "infiniband.bth.destqp", "0xabcdef",
				"fastcnp.bth.opcode", "0x81", "fastcnp.bth.byte4", "0x40",
				"fastcnp.cnp.version", "1", "fastcnp.cnp.flags", "0x01",
				"fastcnp.cnp.flags.window_valid", "1", "fastcnp.cnp.flags.by_switch", "0",
				"fastcnp.cnp.switch_id", "48879", "fastcnp.cnp.window", "4294967295",
				"fastcnp.cnp.port", "65535", "fastcnp.cnp.queue_bytes", "1", "fastcnp.cnp.plain", "0"),
			info:  "CNP QP=0xabcdef",
			clean: true,
		},
		{
			// A plain CNP whose BTH byte 4 is the INC mark: the opcode wins,
			// as in wire.Parse.
			name: "cnp_plain_inc_mark",
			frame: build(t, func(b []byte) (int, error) {
				return wire.BuildCNP(b, &rev, wire.BTH{PKey: wire.DefaultPKey, DestQP: 0x000444, Resv8a: wire.INCBTHMark}, nil)
			}),
			want: with(absent("fastcnp.inc", "fastcnp.inc.flags"),
				"fastcnp.bth.opcode", "0x81", "fastcnp.bth.byte4", "0x01", "fastcnp.cnp.plain", "1",
				"fastcnp.cnp.version", "0", "fastcnp.cnp.flags", "0x00", "fastcnp.cnp.switch_id", "0",
				"fastcnp.cnp.window", "0"),
			info:   "CNP QP=0x000444",
			expert: []string{"Plain CNP"},
			clean:  true,
		},
		{
			name: "inc_first_packet",
			frame: build(t, func(b []byte) (int, error) {
				return wire.BuildINC(b, &fwd, incBTH, wire.INC{Version: wire.INCVersion}, &idsFirst, &vec1)
			}),
			want: with(absent("fastcnp.cnp", "fastcnp.ann"),
				"infiniband.bth.opcode", "4", "fastcnp.bth.opcode", "0x04", "fastcnp.bth.byte4", "0x01",
				"fastcnp.inc", "1", "fastcnp.inc.flags", "0x01", "fastcnp.inc.flags.ids", "1",
				"fastcnp.inc.flags.result", "0", "fastcnp.inc.flags.partial", "0", "fastcnp.inc.kind", "contribution",
				"fastcnp.inc.version", "1", "fastcnp.inc.reserved", "0x0000",
				"fastcnp.inc.group", "5", "fastcnp.inc.msg", "9", "fastcnp.inc.id", "0x00050009",
				"fastcnp.inc.reserved1", "0x00", "fastcnp.inc.first_psn", "11259375", "fastcnp.inc.op_id", "3",
				"fastcnp.inc.reserved2", "0x0000", "fastcnp.inc.flow_len", "4",
				"fastcnp.inc.vector.elem", joinInts(vec1[:]), "fastcnp.inc.trailing", ""),
			info:  "INC IDS id=0x00050009 first_psn=11259375 op=3 flow_len=4",
			clean: true,
		},
		{
			// The INC header follows the BTH whatever the opcode (as in
			// wire.Parse); Wireshark's own tree reads a RETH there.
			name: "inc_result",
			frame: build(t, func(b []byte) (int, error) {
				return wire.BuildINC(b, &rev, wire.BTH{Opcode: wire.OpRCWriteOnly, PKey: wire.DefaultPKey, DestQP: 0x000222},
					wire.INC{Flags: wire.INCFlagResult, Version: wire.INCVersion}, &idsResult, &vec2)
			}),
			want: with(absent("fastcnp.cnp"),
				"fastcnp.bth.opcode", "0x0a", "fastcnp.inc.flags", "0x03", "fastcnp.inc.flags.ids", "1",
				"fastcnp.inc.flags.result", "1", "fastcnp.inc.flags.partial", "0", "fastcnp.inc.kind", "result",
				"fastcnp.inc.group", "65535", "fastcnp.inc.msg", "1",
				"fastcnp.inc.id", "0xffff0001", "fastcnp.inc.first_psn", "0", "fastcnp.inc.op_id", "65535",
				"fastcnp.inc.flow_len", "4294967295", "fastcnp.inc.vector.elem", joinInts(vec2[:])),
			info:  "INC IDS, RESULT id=0xffff0001",
			clean: true,
		},
		{
			// A partial aggregate (multi-tier INC): IDS and PARTIAL; with
			// RESULT also set it is a RESULT.
			name: "inc_partial",
			frame: build(t, func(b []byte) (int, error) {
				return wire.BuildINC(b, &fwd, incBTH, wire.INC{Flags: wire.INCFlagPartial, Version: wire.INCVersion}, &idsResult, &vec2)
			}),
			want: with(absent("fastcnp.cnp"),
				"fastcnp.inc.flags", "0x05", "fastcnp.inc.flags.ids", "1", "fastcnp.inc.flags.result", "0",
				"fastcnp.inc.flags.partial", "1", "fastcnp.inc.flags.reserved", "0x00", "fastcnp.inc.kind", "partial aggregate",
				"fastcnp.inc.id", "0xffff0001", "fastcnp.inc.first_psn", "0", "fastcnp.inc.vector.elem", joinInts(vec2[:])),
			info:  "INC IDS, PARTIAL id=0xffff0001",
			clean: true,
		},
		{
			name: "inc_result_and_partial",
			frame: build(t, func(b []byte) (int, error) {
				return wire.BuildINC(b, &fwd, incBTH, wire.INC{Flags: wire.INCFlagResult | wire.INCFlagPartial, Version: wire.INCVersion}, &idsResult, &vec2)
			}),
			want: with(absent("fastcnp.cnp"),
				"fastcnp.inc.flags", "0x07", "fastcnp.inc.flags.result", "1", "fastcnp.inc.flags.partial", "1",
				"fastcnp.inc.kind", "result"),
			info:  "INC IDS, RESULT, PARTIAL id=0xffff0001",
			clean: true,
		},
		{
			// Without the IDS part; without fastcnp's claim of the
			// InfiniBand payload, Wireshark reads these bytes as RPC over RDMA.
			name: "inc_no_ids",
			frame: build(t, func(b []byte) (int, error) {
				return wire.BuildINC(b, &fwd, incBTH, wire.INC{Flags: wire.INCFlagResult, Version: wire.INCVersion}, nil, &vec3)
			}),
			want: with(absent("fastcnp.inc.id", "fastcnp.inc.group", "fastcnp.inc.first_psn", "fastcnp.cnp"),
				"fastcnp.inc", "1", "fastcnp.inc.flags", "0x02", "fastcnp.inc.flags.ids", "0",
				"fastcnp.inc.flags.result", "1", "fastcnp.inc.vector.elem", joinInts(vec3[:])),
			info:     "INC RESULT",
			clean:    true,
			notProto: []string{"rpcordma", "data"},
		},
		{
			// A data packet with two INT records (newest first).
			name: "int_data_two_hops",
			frame: build(t, func(b []byte) (int, error) {
				return wire.BuildRoCEINT(b, &fwd, data, wire.INTHeader{Version: wire.INTVersion}, intHops, bytes.Repeat([]byte{0x5a}, 32))
			}),
			want: with(absent("fastcnp.cnp", "fastcnp.inc", "fastcnp.int.aeth.syndrome"),
				"fastcnp.bth.opcode", "0x04", "fastcnp.bth.byte4", "0x02", "fastcnp.int", "1",
				"fastcnp.int.flags", "0x00", "fastcnp.int.flags.echo", "0", "fastcnp.int.version", "1",
				"fastcnp.int.hop_count", "2", "fastcnp.int.reserved", "0x00",
				"fastcnp.int.hop.timestamp_ns", "281474976710655,1000", "fastcnp.int.hop.port", "3,12",
				"fastcnp.int.hop.tx_bytes", "18446744073709551615,5158",
				"fastcnp.int.hop.queue_bytes", "3000,0", "fastcnp.int.hop.rate_bytes_per_ms", "12500000,3125000",
				"fastcnp.int.hop.rate_gbps", "100,25"),
			info:     "INT hops=2 [port=3 q=3000] [port=12 q=0]",
			clean:    true,
			notProto: []string{"rpcordma"},
		},
		{
			// An ACK echoing one record: the AETH after it.
			name: "int_ack_echo",
			frame: build(t, func(b []byte) (int, error) {
				return wire.BuildRCAckINT(b, &rev, wire.BTH{PKey: wire.DefaultPKey, DestQP: 0x000333, PSN: 77},
					wire.AETH{Syndrome: wire.SyndromeACK, MSN: 9}, intHops[:1])
			}),
			want: with(absent("fastcnp.cnp", "fastcnp.inc"),
				"fastcnp.bth.opcode", "0x11", "fastcnp.bth.byte4", "0x02", "fastcnp.int.flags", "0x01",
				"fastcnp.int.flags.echo", "1", "fastcnp.int.hop_count", "1", "fastcnp.int.hop.port", "3",
				"fastcnp.int.aeth.syndrome", "0x1f", "fastcnp.int.aeth.msn", "9", "fastcnp.bth.ece", "0"),
			info:  "INT ECHO hops=1 [port=3 q=3000] AETH syndrome=0x1f msn=9",
			clean: true,
		},
		{
			// A plain ACK with the ECN echo bit.
			name: "ack_ece",
			frame: build(t, func(b []byte) (int, error) {
				return wire.BuildRCAck(b, &rev, wire.BTH{PKey: wire.DefaultPKey, DestQP: 0x000333, PSN: 78, Resv7: wire.BTHResv7ECE},
					wire.AETH{Syndrome: wire.SyndromeACK, MSN: 10})
			}),
			want: with(absent("fastcnp.int", "fastcnp.cnp", "fastcnp.inc"),
				"fastcnp.bth.opcode", "0x11", "fastcnp.bth.ece", "1", "infiniband.aeth.msn", "10"),
			info:  "ECE",
			clean: true,
		},
		{
			// A plain ACK without it gets no fastcnp tree.
			name: "ack_plain",
			frame: build(t, func(b []byte) (int, error) {
				return wire.BuildRCAck(b, &rev, wire.BTH{PKey: wire.DefaultPKey, DestQP: 0x000333, PSN: 79}, wire.AETH{Syndrome: wire.SyndromeACK, MSN: 11})
			}),
			want:  absent("fastcnp.bth.opcode", "fastcnp.bth.ece"),
			clean: true,
		},
		{
			// Hop count 6: malformed for the switch.
			name:   "int_too_many_hops",
			frame:  markINT(build(t, func(b []byte) (int, error) { return wire.BuildRoCE(b, &fwd, &data, []byte{0, 1, 6, 0}) })),
			want:   map[string]string{"fastcnp.int.hop_count": "6", "fastcnp.int.hop.port": ""},
			expert: []string{"INT hop count above 5"},
		},
		{
			// A record cut short: 10 of its 24 bytes.
			name: "int_hop_short",
			frame: markINT(build(t, func(b []byte) (int, error) {
				return wire.BuildRoCE(b, &fwd, &data, append([]byte{0, 1, 1, 0}, make([]byte, 10)...))
			})),
			want:   map[string]string{"fastcnp.int.hop_count": "1", "fastcnp.int.hop.port": ""},
			expert: []string{"INT hop record 0 truncated: 10 of 24 bytes"},
		},
		{
			name:  "ann_up",
			frame: build(t, func(b []byte) (int, error) { return wire.BuildAnnouncement(b, &fwd, &annUp) }),
			want: with(absent("fastcnp.cnp", "fastcnp.inc", "fastcnp.ann.trailing"),
				"udp.dstport", "4792", "fastcnp.ann", "1", "fastcnp.ann.magic", "0x46434e50",
				"fastcnp.ann.version", "1", "fastcnp.ann.type", "1", "fastcnp.ann.flags", "0x02",
				"fastcnp.ann.flags.inc_uplink", "0", "fastcnp.ann.flags.cnp_target", "1",
				"fastcnp.ann.rank", "0", "fastcnp.ann.sender_ip", "10.0.0.1", "fastcnp.ann.receiver_ip", "10.0.0.2",
				"fastcnp.ann.udp_srcport", "49443", "fastcnp.ann.reserved1", "0x0000", "fastcnp.ann.reserved2", "0x00",
				"fastcnp.ann.sender_qpn", "0x000333", "fastcnp.ann.reserved3", "0x00",
				"fastcnp.ann.receiver_qpn", "0x000111", "fastcnp.ann.inc_group", "0", "fastcnp.ann.reserved4", "0x0000"),
			info:  "fastcnp announcement: Connection up 10.0.0.1:49443 -> 10.0.0.2 QPN 0x000333 -> 0x000111 [CNP target]",
			clean: true,
		},
		{
			name:  "ann_down_inc",
			frame: build(t, func(b []byte) (int, error) { return wire.BuildAnnouncement(b, &other, &annDown) }),
			want: with(absent("fastcnp.cnp", "fastcnp.inc"),
				"fastcnp.ann.type", "2", "fastcnp.ann.flags", "0x03",
				"fastcnp.ann.flags.inc_uplink", "1", "fastcnp.ann.flags.cnp_target", "1",
				"fastcnp.ann.rank", "7", "fastcnp.ann.sender_ip", "10.1.2.3", "fastcnp.ann.receiver_ip", "10.4.5.6",
				"fastcnp.ann.udp_srcport", "65535", "fastcnp.ann.sender_qpn", "0xabcdef",
				"fastcnp.ann.receiver_qpn", "0x000001", "fastcnp.ann.inc_group", "42"),
			info:  "Connection down 10.1.2.3:65535 -> 10.4.5.6 QPN 0xabcdef -> 0x000001 [INC uplink, CNP target] INC group 42 rank 7",
			clean: true,
		},
		{
			name:  "ann_authenticated",
			frame: signed,
			want: with(absent("fastcnp.cnp", "fastcnp.inc", "fastcnp.ann.trailing"),
				"udp.length", "80", "fastcnp.ann.type", "1", "fastcnp.ann.sender_qpn", "0x000333", "fastcnp.ann.auth", "1",
				"fastcnp.ann.auth.type", "1", "fastcnp.ann.auth.reserved1", "0x00", "fastcnp.ann.auth.reserved2", "0x0000",
				"fastcnp.ann.auth.key_id", "4000000000", "fastcnp.ann.auth.timestamp", "Nov 14, 2023 22:13:20.123456789 UTC",
				"fastcnp.ann.auth.nonce", "0x0123456789abcdef", "fastcnp.ann.auth.tag", tag),
			info:  "Connection up 10.0.0.1:49443 -> 10.0.0.2 QPN 0x000333 -> 0x000111 [CNP target] [authenticated, key 4000000000]",
			clean: true,
		},
		{
			name:   "ann_auth_unknown_type",
			frame:  build(t, func(b []byte) (int, error) { return wire.BuildSignedAnnouncement(b, &fwd, &annUp, &annAuthOdd, annKey) }),
			want:   map[string]string{"fastcnp.ann.auth.type": "2", "fastcnp.ann.auth.reserved2": "0x0001", "fastcnp.ann.auth.key_id": "4000000000"},
			expert: []string{"Unknown authentication type", "Reserved bits are not zero"},
		},
		{
			name:   "ann_auth_short",
			frame:  cutUDP(t, signed, wire.AnnouncementLen+10),
			want:   map[string]string{"fastcnp.ann.type": "1", "fastcnp.ann.auth": "1", "fastcnp.ann.auth.type": "", "fastcnp.ann.auth.key_id": ""},
			info:   "fastcnp announcement: Connection up",
			expert: []string{"Announcement authentication truncated: 10 of 40 bytes"},
		},
		{
			name:   "ann_unknown_type",
			frame:  build(t, func(b []byte) (int, error) { return wire.BuildAnnouncement(b, &fwd, &annOdd) }),
			want:   map[string]string{"fastcnp.ann.type": "9", "fastcnp.ann.flags": "0x00"},
			info:   "type 9",
			expert: []string{"Unknown announcement type"},
		},
		{
			name:   "ann_bad_magic",
			frame:  build(t, func(b []byte) (int, error) { return wire.BuildAnnouncement(b, &fwd, &annBad) }),
			want:   map[string]string{"fastcnp.ann.magic": "0xdeadbeef", "fastcnp.ann.type": "1"},
			expert: []string{"magic is not 0x46434E50"},
		},
		{
			name:   "ann_bad_version",
			frame:  build(t, func(b []byte) (int, error) { return wire.BuildAnnouncement(b, &fwd, &annV2) }),
			want:   map[string]string{"fastcnp.ann.version": "2", "fastcnp.ann.type": "1"},
			expert: []string{"Announcement version 2, expected 1"},
		},
		{
			name: "cnp_version2_reserved",
			frame: build(t, func(b []byte) (int, error) {
				return wire.BuildCNP(b, &rev, wire.BTH{PKey: wire.DefaultPKey, DestQP: 0x000888}, &extOdd)
			}),
			want: map[string]string{"fastcnp.cnp.version": "2", "fastcnp.cnp.flags": "0x06", "fastcnp.cnp.flags.reserved": "0x01",
				"fastcnp.cnp.reserved1": "0x05", "fastcnp.cnp.reserved2": "0x0102", "fastcnp.cnp.switch_id": "1"},
			expert: []string{"CNP extension version 2, expected 1", "Reserved bits are not zero"},
		},
		{
			// 4 bytes more than the header between the vector and the ICRC.
			name: "inc_trailing",
			frame: build(t, func(b []byte) (int, error) {
				return wire.BuildRoCE(b, &fwd, &incMarked, append(append([]byte{}, incBytes...), 0xde, 0xad, 0xbe, 0xef))
			}),
			want:   map[string]string{"fastcnp.inc.id": "0x00050009", "fastcnp.inc.vector.elem": joinInts(vec1[:]), "fastcnp.inc.trailing": "deadbeef"},
			expert: []string{"4 bytes between the INC vector and the ICRC"},
		},
		{
			// Short on the wire: 6 of the 16 extension bytes, then the ICRC.
			name: "cnp_ext_short",
			frame: build(t, func(b []byte) (int, error) {
				return wire.BuildRoCE(b, &rev, &cnpBTH, extBytes[:6])
			}),
			want: with(absent("fastcnp.cnp.window", "fastcnp.cnp.port", "fastcnp.cnp.queue_bytes", "fastcnp.cnp.plain"),
				"fastcnp.bth.opcode", "0x81", "fastcnp.cnp", "1", "fastcnp.cnp.version", "1",
				"fastcnp.cnp.switch_id", "7"),
			info:   "CNP QP=0x000555",
			expert: []string{"fastcnp CNP extension truncated: 6 of 16 bytes"},
		},
		{
			// The frame ends 10 bytes before the end its IPv4 total length
			// gives: Wireshark flags the lengths and trims the UDP payload,
			// whose last 4 bytes are then taken as the ICRC.
			name:   "cnp_frame_shorter_than_ip_length",
			frame:  cnpFull[:len(cnpFull)-10],
			want:   map[string]string{"fastcnp.bth.opcode": "0x81", "fastcnp.cnp": "1", "fastcnp.cnp.switch_id": "7", "fastcnp.cnp.window": ""},
			expert: []string{"IPv4 total length exceeds packet length", "fastcnp CNP extension truncated: 6 of 16 bytes"},
		},
		{
			name: "inc_vector_short",
			frame: build(t, func(b []byte) (int, error) {
				return wire.BuildRoCE(b, &fwd, &incMarked, incBytes[:wire.INCLen+wire.INCIDsLen+10])
			}),
			want: map[string]string{"fastcnp.inc": "1", "fastcnp.inc.id": "0x00050009", "fastcnp.inc.flow_len": "4",
				"fastcnp.inc.vector.elem": ""},
			expert: []string{"INC vector truncated: 10 of 64 bytes"},
		},
		{
			name: "inc_ids_short",
			frame: build(t, func(b []byte) (int, error) {
				return wire.BuildRoCE(b, &fwd, &incMarked, incBytes[:wire.INCLen+8])
			}),
			want:   map[string]string{"fastcnp.inc.flags": "0x01", "fastcnp.inc.version": "1", "fastcnp.inc.group": "", "fastcnp.inc.vector.elem": ""},
			expert: []string{"INC IDS part truncated: 8 of 16 bytes"},
		},
		{
			name:   "inc_base_short",
			frame:  build(t, func(b []byte) (int, error) { return wire.BuildRoCE(b, &fwd, &incMarked, incBytes[:2]) }),
			want:   map[string]string{"fastcnp.inc": "1", "fastcnp.inc.flags": "", "fastcnp.inc.version": ""},
			expert: []string{"INC base header truncated: 2 of 4 bytes"},
		},
		{
			name:   "ann_short",
			frame:  cutUDP(t, build(t, func(b []byte) (int, error) { return wire.BuildAnnouncement(b, &fwd, &annUp) }), 20),
			want:   map[string]string{"udp.length": "28", "fastcnp.ann": "1", "fastcnp.ann.magic": "", "fastcnp.ann.type": ""},
			info:   "fastcnp announcement [20 of 32 bytes]",
			expert: []string{"Announcement truncated: 20 of 32 bytes"},
		},
		{
			// 3 bytes to UDP 4791: no BTH; InfiniBand flags it, fastcnp
			// adds nothing (and no Lua error).
			name:  "bth_short",
			frame: cutUDP(t, build(t, func(b []byte) (int, error) { return wire.BuildAnnouncement(b, &annTo4791, &annUp) }), 3),
			want:  absent("fastcnp.bth.opcode", "fastcnp.cnp", "fastcnp.inc", "fastcnp.ann"),
		},
		{
			// A CNP of a BTH only: no extension, no ICRC.
			name:   "cnp_bth_only",
			frame:  cutUDP(t, cnpFull, wire.BTHLen),
			want:   map[string]string{"fastcnp.bth.opcode": "0x81", "fastcnp.cnp": "1", "fastcnp.cnp.version": "", "fastcnp.icrc": ""},
			expert: []string{"fastcnp CNP extension truncated: 0 of 16 bytes"},
		},
		{
			name:  "roce_empty",
			frame: cutUDP(t, build(t, func(b []byte) (int, error) { return wire.BuildAnnouncement(b, &annTo4791, &annUp) }), 0),
			want:  absent("fastcnp.bth.opcode", "fastcnp.cnp", "fastcnp.inc", "fastcnp.ann"),
		},
		{
			// UDP hands an empty payload to no dissector.
			name:  "ann_empty",
			frame: cutUDP(t, build(t, func(b []byte) (int, error) { return wire.BuildAnnouncement(b, &fwd, &annUp) }), 0),
			want:  map[string]string{"udp.length": "8", "fastcnp.ann": "", "fastcnp.ann.magic": ""},
		},
	}
	// The expected ICRC of the well-formed CNPs.
	for i := range cases {
		if cases[i].want["fastcnp.cnp.plain"] != "" {
			cases[i].want["fastcnp.icrc"] = icrc(t, cases[i].frame)
		}
	}

	frames := make([][]byte, len(cases))
	for i, c := range cases {
		frames[i] = c.frame
	}
	pcap := writePcap(t, "fastcnp-dissector.pcap", frames)
	fields := fieldsOf(cases)
	rows := runTshark(t, tshark, pcap, []string{"-X", "lua_script:" + script}, fields)
	if len(rows) != len(cases) {
		t.Fatalf("tshark printed %d frames, want %d", len(rows), len(cases))
	}
	for i, c := range cases {
		got := rows[i]
		t.Run(c.name, func(t *testing.T) {
			t.Logf("frame %d: %s | %s", i+1, got["frame.protocols"], got["_ws.col.Info"])
			keys := make([]string, 0, len(c.want))
			for k := range c.want {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if got[k] != c.want[k] {
					t.Errorf("%s = %q, want %q", k, got[k], c.want[k])
				}
			}
			if c.info != "" && !strings.Contains(got["_ws.col.Info"], c.info) {
				t.Errorf("Info column %q does not contain %q", got["_ws.col.Info"], c.info)
			}
			for _, e := range c.expert {
				if !strings.Contains(got["_ws.expert.message"], e) {
					t.Errorf("expert info %q does not contain %q", got["_ws.expert.message"], e)
				}
			}
			if c.clean {
				for _, s := range strings.Split(got["_ws.expert.severity"], ",") {
					if s == sevWarn || s == sevError {
						t.Errorf("expert info of severity %s: %s", s, got["_ws.expert.message"])
					}
				}
			}
			protos := strings.Split(got["frame.protocols"], ":")
			for _, p := range c.notProto {
				if containsStr(protos, p) {
					t.Errorf("frame.protocols %s contains %s", got["frame.protocols"], p)
				}
			}
		})
	}
}

// TestAnnouncePortPreference moves the announcement port with the
// preference fastcnp.announce_port: the announcement to the new port is
// decoded, the one to 4792 no longer is.
func TestAnnouncePortPreference(t *testing.T) {
	tshark := lookTshark(t)
	script := scriptPath(t)
	env := wire.Envelope{SrcMAC: wire.MAC{2, 0, 0, 0, 0, 1}, DstMAC: wire.MAC{2, 0, 0, 0, 0, 2},
		SrcIP: wire.Addr4{10, 0, 0, 1}, DstIP: wire.Addr4{10, 0, 0, 2}, SrcPort: 40000}
	ann := wire.NewAnnouncement(wire.AnnounceUp, wire.AnnounceFlagINCUplink)
	ann.SenderIP, ann.ReceiverIP, ann.SenderQPN, ann.ReceiverQPN, ann.INCGroup = env.SrcIP, env.DstIP, 0x10, 0x20, 3
	def := build(t, func(b []byte) (int, error) { return wire.BuildAnnouncement(b, &env, &ann) })
	moved := env
	moved.DstPort = 5000
	alt := build(t, func(b []byte) (int, error) { return wire.BuildAnnouncement(b, &moved, &ann) })
	pcap := writePcap(t, "fastcnp-announce-port.pcap", [][]byte{def, alt})
	fields := append(append([]string{}, baseFields...), "udp.dstport", "fastcnp.ann.type", "fastcnp.ann.inc_group")

	for _, tc := range []struct {
		name       string
		extra      []string
		def, moved string // fastcnp.ann.inc_group of each frame
	}{
		{"default_4792", nil, "3", ""},
		{"pref_5000", []string{"-o", "fastcnp.announce_port:5000"}, "", "3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := runTshark(t, tshark, pcap, append([]string{"-X", "lua_script:" + script}, tc.extra...), fields)
			if len(rows) != 2 {
				t.Fatalf("tshark printed %d frames, want 2", len(rows))
			}
			if rows[0]["udp.dstport"] != "4792" || rows[1]["udp.dstport"] != "5000" {
				t.Fatalf("udp.dstport %q %q", rows[0]["udp.dstport"], rows[1]["udp.dstport"])
			}
			if g := rows[0]["fastcnp.ann.inc_group"]; g != tc.def {
				t.Errorf("port 4792: fastcnp.ann.inc_group = %q, want %q", g, tc.def)
			}
			if g := rows[1]["fastcnp.ann.inc_group"]; g != tc.moved {
				t.Errorf("port 5000: fastcnp.ann.inc_group = %q, want %q", g, tc.moved)
			}
		})
	}
}

// TestCNPNamedByScript shows that the script is what names opcode 0x81:
// without it tshark 4.0 calls it Unknown (the test skips if a newer tshark
// names it already).
func TestCNPNamedByScript(t *testing.T) {
	tshark := lookTshark(t)
	script := scriptPath(t)
	env := wire.Envelope{SrcMAC: wire.MAC{2, 0, 0, 0, 0, 1}, DstMAC: wire.MAC{2, 0, 0, 0, 0, 2},
		SrcIP: wire.Addr4{10, 0, 0, 2}, DstIP: wire.Addr4{10, 0, 0, 1}, DSCP: 48, SrcPort: 0xc123}
	ext := wire.CNPExt{Version: wire.CNPExtVersion, Flags: wire.CNPExtBySwitch, SwitchID: 3, Port: 4, QueueBytes: 5}
	cnp := build(t, func(b []byte) (int, error) {
		return wire.BuildCNP(b, &env, wire.BTH{PKey: wire.DefaultPKey, DestQP: 0x000777}, &ext)
	})
	pcap := writePcap(t, "fastcnp-cnp.pcap", [][]byte{cnp})

	out, err := exec.Command(tshark, "-r", pcap, "-V").Output()
	if err != nil {
		t.Fatalf("tshark -V: %v", err)
	}
	plain := string(out)
	if !strings.Contains(plain, "Opcode: Unknown (129)") {
		t.Skipf("this tshark already decodes opcode 0x81 itself:\n%s", plain)
	}
	if strings.Contains(plain, "CNP") {
		t.Errorf("without the script tshark names CNP somewhere:\n%s", plain)
	}
	out, err = exec.Command(tshark, "-r", pcap, "-V", "-X", "lua_script:"+script).Output()
	if err != nil {
		t.Fatalf("tshark -V -X: %v", err)
	}
	for _, s := range []string{"Opcode: CNP (0x81)", "Congestion-point switch ID: 3", "Egress port: 4", "Queued bytes: 5"} {
		if !strings.Contains(string(out), s) {
			t.Errorf("with the script, tshark -V lacks %q:\n%s", s, out)
		}
	}
}

// TestCaptureCut reads frames cut by the capture's snap length (64 bytes)
// in the middle of each fastcnp header: the dissector decodes what was
// captured, says the capture cut the header (not a malformed packet) and
// raises no Lua error.
func TestCaptureCut(t *testing.T) {
	tshark := lookTshark(t)
	script := scriptPath(t)
	const snap = 64
	env := wire.Envelope{SrcMAC: wire.MAC{2, 0, 0, 0, 0, 1}, DstMAC: wire.MAC{2, 0, 0, 0, 0, 2},
		SrcIP: wire.Addr4{10, 0, 0, 1}, DstIP: wire.Addr4{10, 0, 0, 2}, SrcPort: 0xc123}
	ext := wire.CNPExt{Version: wire.CNPExtVersion, Flags: wire.CNPExtWindowValid, SwitchID: 21, Window: 4096, Port: 9, QueueBytes: 777}
	ids := wire.INCIDs{GroupID: 2, MessageID: 3, FirstPSN: 10, OpID: 1, FlowLen: 8}
	vec := wire.INCVector{5, 6, 7}
	ann := wire.NewAnnouncement(wire.AnnounceUp, 0)
	ann.SenderIP, ann.ReceiverIP, ann.UDPSrcPort = env.SrcIP, env.DstIP, 1234
	bth := wire.BTH{Opcode: wire.OpRCSendOnly, PKey: wire.DefaultPKey, DestQP: 0x000101}
	cases := []tsharkCase{
		{
			// BTH at 42..54: 10 of the 16 extension bytes captured.
			name:   "cnp",
			frame:  build(t, func(b []byte) (int, error) { return wire.BuildCNP(b, &env, bth, &ext) }),
			want:   map[string]string{"fastcnp.bth.opcode": "0x81", "fastcnp.cnp.switch_id": "21", "fastcnp.cnp.window": "4096", "fastcnp.cnp.port": "9", "fastcnp.cnp.queue_bytes": "", "fastcnp.icrc": ""},
			expert: []string{"fastcnp CNP extension cut by the capture: 10 of 16 bytes captured"},
		},
		{
			// INC base at 54..58, then 6 of the 16 IDS bytes.
			name: "inc",
			frame: build(t, func(b []byte) (int, error) {
				return wire.BuildINC(b, &env, bth, wire.INC{Version: wire.INCVersion}, &ids, &vec)
			}),
			want:   map[string]string{"fastcnp.inc.flags": "0x01", "fastcnp.inc.version": "1", "fastcnp.inc.id": "", "fastcnp.inc.vector.elem": ""},
			expert: []string{"INC IDS part cut by the capture: 6 of 16 bytes captured"},
		},
		{
			name:   "announcement",
			frame:  build(t, func(b []byte) (int, error) { return wire.BuildAnnouncement(b, &env, &ann) }),
			want:   map[string]string{"fastcnp.ann": "1", "fastcnp.ann.magic": ""},
			expert: []string{"Announcement cut by the capture: 22 of 32 bytes captured"},
		},
	}
	frames := make([][]byte, len(cases))
	for i, c := range cases {
		if len(c.frame) <= snap {
			t.Fatalf("%s: frame of %d bytes is not cut by snap length %d", c.name, len(c.frame), snap)
		}
		frames[i] = c.frame
	}
	pcap := writePcapSnap(t, "fastcnp-cut.pcap", snap, frames)
	rows := runTshark(t, tshark, pcap, []string{"-X", "lua_script:" + script}, fieldsOf(cases))
	if len(rows) != len(cases) {
		t.Fatalf("tshark printed %d frames, want %d", len(rows), len(cases))
	}
	for i, c := range cases {
		got := rows[i]
		t.Run(c.name, func(t *testing.T) {
			t.Logf("frame %d: %s | %s | %s", i+1, got["frame.protocols"], got["_ws.col.Info"], got["_ws.expert.message"])
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
			for _, e := range c.expert {
				if !strings.Contains(got["_ws.expert.message"], e) {
					t.Errorf("expert info %q does not contain %q", got["_ws.expert.message"], e)
				}
			}
			if strings.Contains(got["_ws.expert.message"], "truncated:") {
				t.Errorf("a header cut by the capture is reported as truncated on the wire: %s", got["_ws.expert.message"])
			}
		})
	}
}
