package wire

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

type codec interface {
	Decode([]byte) error
	Encode([]byte) (int, error)
}

// TestHeaderLayouts pins every header's layout with bytes written by hand
// from docs/wire-formats.md and the standards.
func TestHeaderLayouts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hex   string
		want  codec
		fresh func() codec
	}{
		{"ethernet", "010203040506 0a0b0c0d0e0f 0800",
			&Ethernet{Dst: MAC{1, 2, 3, 4, 5, 6}, Src: MAC{10, 11, 12, 13, 14, 15}, EtherType: 0x0800},
			func() codec { return new(Ethernet) }},
		// PCP 3 (011), DEI 1, VID 0x064 = 100 -> TCI 0111 0000 0110 0100 = 0x7064.
		{"dot1q", "7064 0800", &Dot1Q{PCP: 3, DEI: true, VID: 100, EtherType: 0x0800},
			func() codec { return new(Dot1Q) }},
		{"dot1q max", "efff 8808", &Dot1Q{PCP: 7, DEI: false, VID: 4095, EtherType: 0x8808},
			func() codec { return new(Dot1Q) }},
		{"mac control", "0101", &MACControl{Opcode: 0x0101}, func() codec { return new(MACControl) }},
		{"pfc", "0088 0000 0000 0000 ffff 0000 0000 0000 1234",
			&PFC{ClassEnable: 0x88, Time: [8]uint16{3: 0xffff, 7: 0x1234}},
			func() codec { return new(PFC) }},
		{"pause", "0100", &Pause{Time: 256}, func() codec { return new(Pause) }},
		// ingress port 300 = 1 0010 1100, reason 1 -> 1001 0110 0000 0001 = 0x9601.
		{"packet_in", "9601", &PacketIn{IngressPort: 300, Reason: 1}, func() codec { return new(PacketIn) }},
		// egress port 511, pad 0 -> 1111 1111 1000 0000 = 0xff80.
		{"packet_out", "ff80", &PacketOut{EgressPort: 511}, func() codec { return new(PacketOut) }},
		{"packet_out pad", "0005", &PacketOut{EgressPort: 0, Pad: 5}, func() codec { return new(PacketOut) }},
		// DSCP 26 ECT(0) = 0110 1010 = 0x6a; flags DF + offset 0x123 = 0x4123.
		{"ipv4", "45 6a 0054 abcd 4123 3f 11 beef 0a000001 c0a80102",
			&IPv4{Version: 4, IHL: 5, TOS: 0x6a, TotalLen: 84, ID: 0xabcd, Flags: 2, FragOff: 0x123,
				TTL: 63, Protocol: 17, Checksum: 0xbeef, Src: Addr4{10, 0, 0, 1}, Dst: Addr4{192, 168, 1, 2}},
			func() codec { return new(IPv4) }},
		{"udp", "c350 12b7 0024 0000", &UDP{SrcPort: 50000, DstPort: 4791, Length: 36},
			func() codec { return new(UDP) }},
		// SE, M clear, pad 3, tver 0 -> 0x30; A set, resv7 0 -> 0x80.
		{"bth", "04 30 ffff 00 123456 80 abcdef",
			&BTH{Opcode: OpRCSendOnly, PadCount: 3, PKey: 0xffff, DestQP: 0x123456, AckReq: true, PSN: 0xabcdef},
			func() codec { return new(BTH) }},
		{"bth all bits", "81 c5 8000 01 ffffff 7f 000001",
			&BTH{Opcode: OpCNP, SE: true, M: true, TVer: 5, PKey: 0x8000, Resv8a: 1, DestQP: MaxQPN, Resv7: 0x7f, PSN: 1},
			func() codec { return new(BTH) }},
		{"aeth", "1f 000102", &AETH{Syndrome: SyndromeACK, MSN: 0x102}, func() codec { return new(AETH) }},
		// version 1, flags window|switch = 0x13; switch 7; window 65536; port 12; queue 100000 = 0x186a0.
		{"cnp ext", "13 00 0007 00010000 000c 000186a0 0000",
			&CNPExt{Version: 1, Flags: 3, SwitchID: 7, Window: 65536, Port: 12, QueueBytes: 100000},
			func() codec { return new(CNPExt) }},
		{"inc", "03 01 0000", &INC{Flags: INCFlagIDs | INCFlagResult, Version: 1}, func() codec { return new(INC) }},
		{"inc partial", "05 01 0000", &INC{Flags: INCFlagIDs | INCFlagPartial, Version: 1}, func() codec { return new(INC) }},
		{"inc ids", "0005 0102 00 000064 0009 0000 00000010",
			&INCIDs{GroupID: 5, MessageID: 0x102, FirstPSN: 100, OpID: 9, FlowLen: 16},
			func() codec { return new(INCIDs) }},
		{"inc vector", "00000001 ffffffff 7fffffff 80000000" + " 00000000 00000000 00000000 00000000" +
			" 00000000 00000000 00000000 00000000 00000000 00000000 00000000 fffffffe",
			&INCVector{1, -1, 2147483647, -2147483648, 15: -2},
			func() codec { return new(INCVector) }},
		{"announcement", "46434e50 01 01 03 02 0a000001 0a000002 c351 0000 00 000011 00 000022 0007 0000",
			&Announcement{Magic: AnnouncementMagic, Version: 1, Type: AnnounceUp, Flags: 3, WorkerRank: 2,
				SenderIP: Addr4{10, 0, 0, 1}, ReceiverIP: Addr4{10, 0, 0, 2}, UDPSrcPort: 50001,
				SenderQPN: 0x11, ReceiverQPN: 0x22, INCGroup: 7},
			func() codec { return new(Announcement) }},
		{"announcement authentication", "01 00 0000 00000007 17979cfe3d85cd15 0123456789abcdef" +
			" 20375a5b21dffe3bb96611efddc94199",
			&AnnounceAuth{Type: AnnounceAuthHMACSHA256, KeyID: 7, Timestamp: 1_700_000_000_123_456_789, Nonce: 0x0123456789abcdef,
				Tag: [16]byte{0x20, 0x37, 0x5a, 0x5b, 0x21, 0xdf, 0xfe, 0x3b, 0xb9, 0x66, 0x11, 0xef, 0xdd, 0xc9, 0x41, 0x99}},
			func() codec { return new(AnnounceAuth) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := unhex(t, tc.hex)
			got := tc.fresh()
			if err := got.Decode(b); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Decode = %+v, want %+v", got, tc.want)
			}
			out := bytes.Repeat([]byte{0xAA}, len(b)+3)
			n, err := tc.want.Encode(out)
			if err != nil || n != len(b) {
				t.Fatalf("Encode = %d, %v; want %d, nil", n, err, len(b))
			}
			if !bytes.Equal(out[:n], b) || !bytes.Equal(out[n:], []byte{0xAA, 0xAA, 0xAA}) {
				t.Errorf("Encode wrote % x, want % x (and nothing after)", out, b)
			}
			if err := tc.fresh().Decode(b[:len(b)-1]); !errors.Is(err, ErrTruncated) {
				t.Errorf("Decode of %d bytes: %v, want ErrTruncated", len(b)-1, err)
			}
			if _, err := tc.want.Encode(out[:len(b)-1]); !errors.Is(err, ErrShortBuffer) {
				t.Errorf("Encode into %d bytes: %v, want ErrShortBuffer", len(b)-1, err)
			}
		})
	}
}

// TestINCKinds pins which flag bits make a contribution, a partial aggregate
// and a RESULT (docs/wire-formats.md "INC header"): RESULT wins over PARTIAL,
// IDS and the reserved bits do not matter.
func TestINCKinds(t *testing.T) {
	for _, tc := range []struct {
		flags                         uint8
		contribution, partial, result bool
	}{
		{0x00, true, false, false},
		{0x01, true, false, false},
		{0xf8, true, false, false},
		{0x02, false, false, true},
		{0x03, false, false, true},
		{0x04, false, true, false},
		{0x05, false, true, false},
		{0x06, false, false, true},
		{0x07, false, false, true},
	} {
		h := INC{Flags: tc.flags}
		if h.IsContribution() != tc.contribution || h.IsPartial() != tc.partial || h.IsResult() != tc.result {
			t.Errorf("flags %#02x: contribution %v partial %v result %v, want %v %v %v", tc.flags,
				h.IsContribution(), h.IsPartial(), h.IsResult(), tc.contribution, tc.partial, tc.result)
		}
	}
}

func TestEncodeRange(t *testing.T) {
	buf := make([]byte, 64)
	for _, tc := range []struct {
		name string
		h    codec
	}{
		{"vlan pcp", &Dot1Q{PCP: 8}},
		{"vlan vid", &Dot1Q{VID: 4096}},
		{"packet_in port", &PacketIn{IngressPort: 512}},
		{"packet_in reason", &PacketIn{Reason: 128}},
		{"packet_out port", &PacketOut{EgressPort: 512}},
		{"ipv4 version", &IPv4{Version: 16}},
		{"ipv4 fragoff", &IPv4{Version: 4, IHL: 5, FragOff: 0x2000}},
		{"ipv4 flags", &IPv4{Version: 4, IHL: 5, Flags: 8}},
		{"bth destqp", &BTH{DestQP: 1 << 24}},
		{"bth psn", &BTH{PSN: 1 << 24}},
		{"bth pad", &BTH{PadCount: 4}},
		{"bth tver", &BTH{TVer: 16}},
		{"bth resv7", &BTH{Resv7: 128}},
		{"aeth msn", &AETH{MSN: 1 << 24}},
		{"cnp ext version", &CNPExt{Version: 16}},
		{"cnp ext flags", &CNPExt{Flags: 16}},
		{"inc ids psn", &INCIDs{FirstPSN: 1 << 24}},
		{"announcement sender qpn", &Announcement{SenderQPN: 1 << 24}},
		{"announcement receiver qpn", &Announcement{ReceiverQPN: 1 << 24}},
	} {
		if _, err := tc.h.Encode(buf); !errors.Is(err, ErrRange) {
			t.Errorf("%s: Encode error %v, want ErrRange", tc.name, err)
		}
	}
}

func TestIPv4Helpers(t *testing.T) {
	// RFC 1071-style example header from Wikipedia's IPv4 checksum article:
	// 4500 0073 0000 4000 4011 [b861] c0a8 0001 c0a8 00c7.
	h := unhex(t, "4500 0073 0000 4000 4011 0000 c0a80001 c0a800c7")
	if err := SetIPv4Checksum(h); err != nil {
		t.Fatal(err)
	}
	if h[10] != 0xb8 || h[11] != 0x61 {
		t.Fatalf("checksum % x, want b8 61", h[10:12])
	}
	if err := DecTTL(h); err != nil {
		t.Fatal(err)
	}
	// TTL 0x40 -> 0x3f lowers the word 0x4011 by 0x100: checksum + 0x100.
	if h[8] != 0x3f || h[10] != 0xb9 || h[11] != 0x61 {
		t.Fatalf("after DecTTL: ttl %#x checksum % x, want 0x3f b9 61", h[8], h[10:12])
	}
	var ip IPv4
	_ = ip.Decode(h)
	if ip.DSCP() != 0 || ip.ECN() != NotECT {
		t.Fatalf("DSCP/ECN %d/%v", ip.DSCP(), ip.ECN())
	}
	if prev, err := MarkCE(h); err != nil || prev != NotECT || h[1] != 0 {
		t.Fatalf("MarkCE on Not-ECT changed the packet: %v %v tos %#x", prev, err, h[1])
	}
	if err := SetECN(h, ECT1); err != nil {
		t.Fatal(err)
	}
	if ok, _ := VerifyIPv4Checksum(h); !ok || h[1] != 0x01 {
		t.Fatalf("SetECN(ECT1): tos %#x checksum ok %v", h[1], ok)
	}
	if err := ip.SetTOS(48, ECT0); err != nil || ip.TOS != 0xc2 {
		t.Fatalf("SetTOS(48, ECT0) = %#x, %v; want 0xc2", ip.TOS, err)
	}
	if err := ip.SetTOS(64, 0); !errors.Is(err, ErrRange) {
		t.Fatalf("SetTOS(64) error %v, want ErrRange", err)
	}
	h[8] = 0
	if err := DecTTL(h); !errors.Is(err, ErrRange) {
		t.Fatalf("DecTTL(0) error %v, want ErrRange", err)
	}
	for _, bad := range []string{"4500", "6500 0073 0000 4000 4011 0000 c0a80001 c0a800c7", "4400 0073 0000 4000 4011 0000 c0a80001 c0a800c7", "4600 0073 0000 4000 4011 0000 c0a80001 c0a800c7"} {
		b := unhex(t, bad)
		if _, err := IPv4Checksum(b); !IsMalformed(err) {
			t.Errorf("IPv4Checksum(%s): %v, want malformed/truncated", bad, err)
		}
		if _, err := MarkCE(b); !IsMalformed(err) {
			t.Errorf("MarkCE(%s): %v, want malformed/truncated", bad, err)
		}
	}
}

func TestECNAndAETHHelpers(t *testing.T) {
	for _, tc := range []struct {
		e    ECN
		ect  bool
		name string
	}{{NotECT, false, "Not-ECT"}, {ECT1, true, "ECT(1)"}, {ECT0, true, "ECT(0)"}, {CE, false, "CE"}} {
		if tc.e.IsECT() != tc.ect || tc.e.String() != tc.name {
			t.Errorf("%d: IsECT %v String %q", tc.e, tc.e.IsECT(), tc.e.String())
		}
	}
	a := AETH{Syndrome: SyndromeACK}
	n := AETH{Syndrome: SyndromeNAKPSNSequence}
	r := AETH{Syndrome: AETHKindRNRNAK | 5}
	if !a.IsACK() || a.IsNAK() || n.IsACK() || !n.IsNAK() || r.IsACK() || r.IsNAK() {
		t.Fatal("AETH ACK/NAK classification wrong")
	}
	if s := (MAC{1, 0x80, 0xc2, 0, 0, 1}).String(); s != "01:80:c2:00:00:01" {
		t.Fatalf("MAC.String = %q", s)
	}
	if s := (Addr4{10, 0, 0, 1}).String(); s != "10.0.0.1" {
		t.Fatalf("Addr4.String = %q", s)
	}
	if (Addr4{10, 0, 0, 1}).Uint32() != 0x0a000001 {
		t.Fatal("Addr4.Uint32 wrong")
	}
}
