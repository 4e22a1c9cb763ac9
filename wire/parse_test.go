package wire

import (
	"errors"
	"testing"
)

// Test frames, built by the (separately tested) builders.
func mustBuild(t testing.TB, f func(b []byte) (int, error)) []byte {
	t.Helper()
	b := make([]byte, 512)
	n, err := f(b)
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

type frames struct {
	data, dataVLAN, ack, cnp, cnpPlain, incIDs, incNoIDs, ann, pfc, pause []byte
}

var testAnnouncePorts = []uint16{4792, 9000}

func testFrames(t testing.TB) frames {
	env := Envelope{DstMAC: macB, SrcMAC: macA, SrcIP: ipA, DstIP: ipB, DSCP: 26, ECN: ECT0, SrcPort: 0xc000}
	vlan := env
	vlan.VLAN, vlan.PCP, vlan.VID = true, 3, 100
	bth := BTH{Opcode: OpRCSendOnly, PKey: DefaultPKey, DestQP: 0x11, PSN: 7}
	var vec INCVector
	for i := range vec {
		vec[i] = int32(-i)
	}
	ids := INCIDs{GroupID: 5, MessageID: 6, FirstPSN: 7, OpID: 8, FlowLen: 9}
	ext := CNPExt{Version: 1, Flags: 3, SwitchID: 7, Window: 4096, Port: 3, QueueBytes: 1000}
	ann := NewAnnouncement(AnnounceUp, AnnounceFlagCNPTarget)
	ann.SenderIP, ann.ReceiverIP, ann.UDPSrcPort, ann.SenderQPN, ann.ReceiverQPN = ipA, ipB, 0xc000, 0x10, 0x11
	annEnv := env
	annEnv.SrcPort = 1234
	return frames{
		data:     mustBuild(t, func(b []byte) (int, error) { return BuildRoCE(b, &env, &bth, []byte("payload!")) }),
		dataVLAN: mustBuild(t, func(b []byte) (int, error) { return BuildRoCE(b, &vlan, &bth, []byte("payload!")) }),
		ack:      mustBuild(t, func(b []byte) (int, error) { return BuildRCAck(b, &env, bth, AETH{Syndrome: SyndromeACK, MSN: 3}) }),
		cnp:      mustBuild(t, func(b []byte) (int, error) { return BuildCNP(b, &env, bth, &ext) }),
		cnpPlain: mustBuild(t, func(b []byte) (int, error) { return BuildCNP(b, &env, bth, nil) }),
		incIDs:   mustBuild(t, func(b []byte) (int, error) { return BuildINC(b, &env, bth, INC{Version: 1}, &ids, &vec) }),
		incNoIDs: mustBuild(t, func(b []byte) (int, error) { return BuildINC(b, &env, bth, INC{Version: 1}, nil, &vec) }),
		ann:      mustBuild(t, func(b []byte) (int, error) { return BuildAnnouncement(b, &annEnv, &ann) }),
		pfc:      mustBuild(t, func(b []byte) (int, error) { return BuildPFC(b, macA, 0x08, [8]uint16{3: 100}) }),
		pause:    mustBuild(t, func(b []byte) (int, error) { return BuildPause(b, macA, 7) }),
	}
}

func layerSet(ls ...Layer) uint32 {
	var s uint32
	for _, l := range ls {
		s |= 1 << l
	}
	return s
}

func clone(b []byte, mod func(b []byte)) []byte {
	c := append([]byte(nil), b...)
	if mod != nil {
		mod(c)
	}
	return c
}

func TestParseGraph(t *testing.T) {
	fr := testFrames(t)
	opts := ParseOptions{AnnouncePorts: testAnnouncePorts}
	roce := layerSet(LayerEthernet, LayerIPv4, LayerUDP, LayerBTH)
	const ip, udp, bth = 14, 34, 42 // offsets without VLAN
	for _, tc := range []struct {
		name   string
		frame  []byte
		opts   ParseOptions
		layers uint32
		end    int
		check  func(t *testing.T, f *Frame)
	}{
		{"roce data", fr.data, opts, roce, bth + BTHLen, func(t *testing.T, f *Frame) {
			if f.BTH.Opcode != OpRCSendOnly || f.BTH.DestQP != 0x11 || f.BTH.PSN != 7 || f.UDP.SrcPort != 0xc000 ||
				f.IPv4.ECN() != ECT0 || f.IPv4.DSCP() != 26 || f.Off[LayerBTH] != bth || f.Off[LayerUDP] != udp {
				t.Errorf("fields: %+v %+v %+v", f.BTH, f.UDP, f.IPv4)
			}
		}},
		{"roce data vlan", fr.dataVLAN, opts, roce | layerSet(LayerDot1Q), bth + 4 + BTHLen, func(t *testing.T, f *Frame) {
			if f.Dot1Q.PCP != 3 || f.Dot1Q.VID != 100 || f.Off[LayerIPv4] != ip+4 || f.EtherType() != EtherTypeIPv4 {
				t.Errorf("vlan: %+v off %d", f.Dot1Q, f.Off[LayerIPv4])
			}
		}},
		// The switch does not parse the AETH: an ACK is a plain BTH packet.
		{"rc ack", fr.ack, opts, roce, bth + BTHLen, nil},
		{"cnp", fr.cnp, opts, roce | layerSet(LayerCNPExt), bth + BTHLen + CNPExtLen, func(t *testing.T, f *Frame) {
			if f.CNPExt.SwitchID != 7 || f.CNPExt.Window != 4096 || !f.CNPExt.BySwitch() || f.CNPExt.IsZero() {
				t.Errorf("ext %+v", f.CNPExt)
			}
		}},
		{"plain cnp", fr.cnpPlain, opts, roce | layerSet(LayerCNPExt), bth + BTHLen + CNPExtLen, func(t *testing.T, f *Frame) {
			if !f.CNPExt.IsZero() {
				t.Errorf("ext %+v", f.CNPExt)
			}
		}},
		{"cnp with inc mark: extension wins", clone(fr.cnp, func(b []byte) { b[bth+4] = INCBTHMark }), opts,
			roce | layerSet(LayerCNPExt), bth + BTHLen + CNPExtLen, nil},
		{"inc with ids", fr.incIDs, opts, roce | layerSet(LayerINC, LayerINCIDs, LayerINCVector),
			bth + BTHLen + INCLen + INCIDsLen + INCVectorBytes, func(t *testing.T, f *Frame) {
				if f.INCIDs.INCID() != 5<<16|6 || f.INCIDs.FirstPSN != 7 || f.INCIDs.FlowLen != 9 ||
					f.INCVector[15] != -15 || f.Off[LayerINCVector] != bth+BTHLen+INCLen+INCIDsLen {
					t.Errorf("inc %+v %v", f.INCIDs, f.INCVector)
				}
			}},
		{"inc without ids", fr.incNoIDs, opts, roce | layerSet(LayerINC, LayerINCVector),
			bth + BTHLen + INCLen + INCVectorBytes, nil},
		{"bth byte 4 not a mark", clone(fr.incIDs, func(b []byte) { b[bth+4] = 0x04 }), opts, roce, bth + BTHLen, nil},
		{"announcement", fr.ann, opts, layerSet(LayerEthernet, LayerIPv4, LayerUDP, LayerAnnouncement),
			udp + UDPLen + AnnouncementLen, func(t *testing.T, f *Frame) {
				if f.Announcement.ReceiverQPN != 0x11 || f.Announcement.UDPSrcPort != 0xc000 {
					t.Errorf("ann %+v", f.Announcement)
				}
			}},
		{"announcement of unknown type is accepted", clone(fr.ann, func(b []byte) { b[udp+8+5] = 9 }), opts,
			layerSet(LayerEthernet, LayerIPv4, LayerUDP, LayerAnnouncement), udp + UDPLen + AnnouncementLen, nil},
		{"announcement port not in value set", fr.ann, ParseOptions{AnnouncePorts: []uint16{9000}},
			layerSet(LayerEthernet, LayerIPv4, LayerUDP), udp + UDPLen, nil},
		{"4791 wins over the value set", fr.data, ParseOptions{AnnouncePorts: []uint16{4791}}, roce, bth + BTHLen, nil},
		{"second value-set port", clone(fr.ann, func(b []byte) { b[udp+2], b[udp+3] = 0x23, 0x28 }), opts,
			layerSet(LayerEthernet, LayerIPv4, LayerUDP, LayerAnnouncement), udp + UDPLen + AnnouncementLen, nil},
		{"udp to 53", clone(fr.data, func(b []byte) { b[udp+2], b[udp+3] = 0, 53 }), opts,
			layerSet(LayerEthernet, LayerIPv4, LayerUDP), udp + UDPLen, nil},
		{"ipv4 not udp", clone(fr.data, func(b []byte) { b[ip+9] = 6 }), opts, layerSet(LayerEthernet, LayerIPv4), ip + IPv4Len, nil},
		{"ipv4 options: not parsed further", clone(fr.data, func(b []byte) { b[ip] = 0x46 }), opts,
			layerSet(LayerEthernet, LayerIPv4), ip + IPv4Len, nil},
		{"ipv4 fragment", clone(fr.data, func(b []byte) { b[ip+7] = 1 }), opts, layerSet(LayerEthernet, LayerIPv4), ip + IPv4Len, nil},
		{"ipv4 first fragment (MF, offset 0) is parsed", clone(fr.data, func(b []byte) { b[ip+6] = 0x20 }), opts, roce, bth + BTHLen, nil},
		{"pfc", fr.pfc, opts, layerSet(LayerEthernet, LayerMACControl, LayerPFC), 14 + 2 + 18, func(t *testing.T, f *Frame) {
			if !f.PFC.Enabled(3) || f.PFC.Enabled(2) || f.PFC.Time[3] != 100 {
				t.Errorf("pfc %+v", f.PFC)
			}
			q3, ok3 := f.PauseQuanta(3)
			_, ok2 := f.PauseQuanta(2)
			if q3 != 100 || !ok3 || ok2 {
				t.Errorf("PauseQuanta(3) = %d, %v; PauseQuanta(2) ok = %v", q3, ok3, ok2)
			}
		}},
		{"pause", fr.pause, opts, layerSet(LayerEthernet, LayerMACControl, LayerPause), 14 + 2 + 2, func(t *testing.T, f *Frame) {
			if q, ok := f.PauseQuanta(5); f.Pause.Time != 7 || q != 7 || !ok {
				t.Errorf("pause %+v: PauseQuanta(5) = %d, %v", f.Pause, q, ok)
			}
		}},
		{"mac control other opcode", clone(fr.pfc, func(b []byte) { b[15] = 0x02 }), opts,
			layerSet(LayerEthernet, LayerMACControl), 18, func(t *testing.T, f *Frame) {
				if _, ok := f.PauseQuanta(3); ok {
					t.Error("PauseQuanta of opcode 0x0102")
				}
			}},
		{"pfc in vlan", append(unhex(t, "0180c2000001 020000000001 8100 e000 8808 0101 0001 0005"), make([]byte, 14)...), opts,
			layerSet(LayerEthernet, LayerDot1Q, LayerMACControl, LayerPFC), 18 + 2 + 18, nil},
		{"ipv6 ethertype", clone(fr.data, func(b []byte) { b[12], b[13] = 0x86, 0xdd }), opts, layerSet(LayerEthernet), 14, nil},
		{"double tag: only one parsed", unhex(t, "020000000002 020000000001 8100 0064 8100 0065 0800"), opts,
			layerSet(LayerEthernet, LayerDot1Q), 18, nil},
		{"packet_out", append([]byte{0x01, 0x80}, fr.data...), ParseOptions{PacketOut: true},
			roce | layerSet(LayerPacketOut), 2 + bth + BTHLen, func(t *testing.T, f *Frame) {
				if f.PacketOut.EgressPort != 3 || f.Off[LayerEthernet] != 2 || f.Off[LayerBTH] != bth+2 {
					t.Errorf("packet_out %+v offsets %v", f.PacketOut, f.Off)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f Frame
			if err := Parse(tc.frame, tc.opts, &f); err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if f.Layers() != tc.layers {
				t.Errorf("layers %b, want %b", f.Layers(), tc.layers)
			}
			if f.End != tc.end || f.Len != len(tc.frame) {
				t.Errorf("End %d Len %d, want %d %d", f.End, f.Len, tc.end, len(tc.frame))
			}
			if tc.check != nil {
				tc.check(t, &f)
			}
			// Every prefix that cuts an extracted header is truncated; the
			// rest parses the same headers.
			for n := 0; n < len(tc.frame); n++ {
				var g Frame
				err := Parse(tc.frame[:n], tc.opts, &g)
				if n < tc.end {
					if !errors.Is(err, ErrTruncated) || g.Layers() != 0 {
						t.Fatalf("prefix %d: err %v layers %b, want ErrTruncated and none", n, err, g.Layers())
					}
				} else if err != nil || g.Layers() != tc.layers {
					t.Fatalf("prefix %d: err %v layers %b", n, err, g.Layers())
				}
			}
		})
	}
}

func TestParseMalformed(t *testing.T) {
	fr := testFrames(t)
	opts := ParseOptions{AnnouncePorts: testAnnouncePorts}
	const ip, ann = 14, 42
	for _, tc := range []struct {
		name  string
		frame []byte
		want  error
		layer Layer
	}{
		{"empty", nil, ErrTruncated, LayerEthernet},
		{"ipv4 version 6", clone(fr.data, func(b []byte) { b[ip] = 0x65 }), ErrMalformed, LayerIPv4},
		{"ipv4 version 0", clone(fr.data, func(b []byte) { b[ip] = 0x05 }), ErrMalformed, LayerIPv4},
		{"ipv4 ihl 4", clone(fr.data, func(b []byte) { b[ip] = 0x44 }), ErrMalformed, LayerIPv4},
		{"ipv4 ihl 0 not udp", clone(fr.data, func(b []byte) { b[ip] = 0x40; b[ip+9] = 6 }), ErrMalformed, LayerIPv4},
		{"announcement magic", clone(fr.ann, func(b []byte) { b[ann] = 0x47 }), ErrMalformed, LayerAnnouncement},
		{"announcement version", clone(fr.ann, func(b []byte) { b[ann+4] = 2 }), ErrMalformed, LayerAnnouncement},
		{"announcement truncated", fr.ann[:ann+31], ErrTruncated, LayerAnnouncement},
		{"short datagram to the announcement port", clone(fr.data, func(b []byte) { b[36] = 0x12; b[37] = 0xb8 }), ErrTruncated, LayerAnnouncement},
		{"pfc truncated", fr.pfc[:14+2+17], ErrTruncated, LayerPFC},
		// Any opcode needs 4 MAC control bytes, as P4's mac_control_h.
		{"mac control other opcode, 3 bytes", unhex(t, "0180c2000001 020000000001 8808 0002 00"), ErrTruncated, LayerMACControl},
		{"pause, 3 bytes", unhex(t, "0180c2000001 020000000001 8808 0001 00"), ErrTruncated, LayerMACControl},
		{"vlan truncated", unhex(t, "020000000002 020000000001 8100 00"), ErrTruncated, LayerDot1Q},
		{"cnp extension truncated", fr.cnp[:42+12+15], ErrTruncated, LayerCNPExt},
		{"inc vector truncated", fr.incNoIDs[:42+12+4+63], ErrTruncated, LayerINCVector},
		{"packet_out truncated", []byte{1}, ErrTruncated, LayerPacketOut},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f Frame
			po := opts
			po.PacketOut = tc.layer == LayerPacketOut
			err := Parse(tc.frame, po, &f)
			var we *Error
			if !errors.Is(err, tc.want) || !errors.As(err, &we) || we.Layer != tc.layer || !IsMalformed(err) {
				t.Fatalf("Parse error %v, want %v at %v", err, tc.want, tc.layer)
			}
			if f.Layers() != 0 {
				t.Fatalf("layers %b after an error", f.Layers())
			}
			if err.Error() == "" {
				t.Fatal("empty message")
			}
		})
	}
}

func TestFrameIPv4Bytes(t *testing.T) {
	fr := testFrames(t)
	var f Frame
	if err := Parse(fr.cnp, ParseOptions{}, &f); err != nil {
		t.Fatal(err)
	}
	if ok, err := VerifyICRC(f.IPv4Bytes(fr.cnp)); !ok || err != nil {
		t.Fatalf("ICRC via Frame: %v %v", ok, err)
	}
	if err := Parse(fr.pfc, ParseOptions{}, &f); err != nil || f.IPv4Bytes(fr.pfc) != nil {
		t.Fatalf("IPv4Bytes of a PFC frame: %v", err)
	}
}

func TestRoCEPayload(t *testing.T) {
	fr := testFrames(t)
	for _, tc := range []struct {
		name  string
		frame []byte
		want  string
	}{
		{"send", fr.data, "7061796c6f616421"}, // "payload!"
		{"ack", fr.ack, "1f000003"},           // AETH ACK, MSN 3
		{"cnp", fr.cnp, ""},                   // extension parsed, nothing left
		{"padded", mustBuild(t, func(b []byte) (int, error) { // 58 bytes + 2 padding
			env := dataEnv()
			return BuildRoCE(b, &env, &BTH{Opcode: OpRCWriteOnly}, nil)
		}), ""},
	} {
		var f Frame
		if err := Parse(tc.frame, ParseOptions{}, &f); err != nil {
			t.Fatal(err)
		}
		p, err := f.RoCEPayload(tc.frame)
		if err != nil || len(p) != len(unhex(t, tc.want)) || string(p) != string(unhex(t, tc.want)) {
			t.Errorf("%s: payload % x, %v; want %s", tc.name, p, err, tc.want)
		}
	}
	var f Frame
	short := clone(fr.data, func(b []byte) { b[16], b[17] = 0, 40 }) // total length < headers + ICRC
	if err := Parse(short, ParseOptions{}, &f); err != nil {
		t.Fatal(err)
	}
	if _, err := f.RoCEPayload(short); !errors.Is(err, ErrMalformed) {
		t.Errorf("inconsistent total length: %v, want ErrMalformed", err)
	}
	_ = Parse(fr.pfc, ParseOptions{}, &f)
	if _, err := f.RoCEPayload(fr.pfc); err == nil {
		t.Error("RoCEPayload of a PFC frame succeeded")
	}
}
