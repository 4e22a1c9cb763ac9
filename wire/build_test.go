package wire

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

var (
	macA = MAC{2, 0, 0, 0, 0, 1}
	macB = MAC{2, 0, 0, 0, 0, 2}
	ipA  = Addr4{10, 0, 0, 1}
	ipB  = Addr4{10, 0, 0, 2}
)

// dataEnv is host A -> host B, DSCP 26 ECT(0), DF, UDP sport 0xc000.
func dataEnv() Envelope {
	return Envelope{DstMAC: macB, SrcMAC: macA, SrcIP: ipA, DstIP: ipB, DSCP: 26, ECN: ECT0,
		DontFragment: true, SrcPort: 0xc000}
}

// checkRoCE compares a built frame with hand-written bytes, all but the last
// 4 (the ICRC), and verifies the ICRC.
func checkRoCE(t *testing.T, got []byte, wantHex string, icrcEnd int) {
	t.Helper()
	want := unhex(t, wantHex)
	if len(got) != len(want)+4 && icrcEnd == 0 {
		t.Fatalf("length %d, want %d", len(got), len(want)+4)
	}
	if !bytes.Equal(got[:len(want)], want) {
		t.Fatalf("frame\n got % x\nwant % x", got[:len(want)], want)
	}
	end := len(got)
	if icrcEnd != 0 {
		end = icrcEnd
	}
	ipOff := EthernetLen
	if got[12] == 0x81 && got[13] == 0x00 {
		ipOff += Dot1QLen
	}
	if ok, err := VerifyICRC(got[ipOff:end]); !ok || err != nil {
		t.Fatalf("ICRC invalid: %v, %v", ok, err)
	}
}

func TestBuildRoCEData(t *testing.T) {
	buf := make([]byte, 256)
	env := dataEnv()
	bth := BTH{Opcode: OpRCSendOnly, PKey: DefaultPKey, DestQP: 0x11, AckReq: true, PSN: 5}
	n, err := BuildRoCE(buf, &env, &bth, []byte("hello world!"))
	if err != nil {
		t.Fatal(err)
	}
	checkRoCE(t, buf[:n], `
		020000000002 020000000001 0800
		45 6a 0038 0000 4000 40 11 2649 0a000001 0a000002   # checksum computed by hand
		c000 12b7 0024 0000
		04 00 ffff 00 000011 80 000005
		68656c6c6f20776f726c6421`, 0)

	env.VLAN, env.PCP, env.VID = true, 3, 100
	n, err = BuildRoCE(buf, &env, &bth, []byte("hello world!"))
	if err != nil {
		t.Fatal(err)
	}
	checkRoCE(t, buf[:n], `
		020000000002 020000000001 8100 6064 0800
		45 6a 0038 0000 4000 40 11 2649 0a000001 0a000002
		c000 12b7 0024 0000
		04 00 ffff 00 000011 80 000005
		68656c6c6f20776f726c6421`, 0)
}

func TestBuildRoCEPadded(t *testing.T) {
	buf := bytes.Repeat([]byte{0xAA}, 128)
	env := dataEnv()
	bth := BTH{Opcode: OpRCWriteOnly, PKey: DefaultPKey, DestQP: 1}
	n, err := BuildRoCE(buf, &env, &bth, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 14+20+8+12+4 = 58 bytes, padded with two zeros to 60.
	if n != MinFrameLen || buf[58] != 0 || buf[59] != 0 || buf[60] != 0xAA {
		t.Fatalf("n=%d tail % x", n, buf[56:61])
	}
	if ok, err := VerifyICRC(buf[EthernetLen:n]); !ok || err != nil {
		t.Fatalf("ICRC of padded frame: %v %v", ok, err)
	}
}

func TestBuildRCAck(t *testing.T) {
	buf := make([]byte, 128)
	env := dataEnv()
	env.SrcMAC, env.DstMAC, env.SrcIP, env.DstIP = macB, macA, ipB, ipA
	bth := BTH{Opcode: 0xEE /* overridden */, PKey: DefaultPKey, DestQP: 0x22, PSN: 5}
	n, err := BuildRCAck(buf, &env, bth, AETH{Syndrome: SyndromeACK, MSN: 1})
	if err != nil {
		t.Fatal(err)
	}
	checkRoCE(t, buf[:n], `
		020000000001 020000000002 0800
		45 6a 0030 0000 4000 40 11 2651 0a000002 0a000001
		c000 12b7 001c 0000
		11 00 ffff 00 000022 00 000005
		1f 000001`, 0)
}

func TestBuildCNP(t *testing.T) {
	buf := make([]byte, 128)
	env := Envelope{DstMAC: macA, SrcMAC: macB, SrcIP: ipB, DstIP: ipA, DSCP: 48, DontFragment: true, SrcPort: 0xc000}
	bth := BTH{PKey: DefaultPKey, DestQP: 0x33}
	ext := CNPExt{Version: CNPExtVersion, Flags: CNPExtWindowValid | CNPExtBySwitch, SwitchID: 7,
		Window: 65536, Port: 12, QueueBytes: 100000}
	n, err := BuildCNP(buf, &env, bth, &ext)
	if err != nil {
		t.Fatal(err)
	}
	hdr := `
		020000000001 020000000002 0800
		45 c0 003c 0000 4000 40 11 25ef 0a000002 0a000001
		c000 12b7 0028 0000
		81 00 ffff 00 000033 00 000000`
	checkRoCE(t, buf[:n], hdr+"13 00 0007 00010000 000c 000186a0 0000", 0)
	n, err = BuildCNP(buf, &env, bth, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkRoCE(t, buf[:n], hdr+"00000000000000000000000000000000", 0)
}

func TestBuildINC(t *testing.T) {
	buf := make([]byte, 256)
	env := dataEnv()
	bth := BTH{Opcode: OpRCWriteOnly, PKey: DefaultPKey, DestQP: 0x44, PSN: 100}
	var vec INCVector
	for i := range vec {
		vec[i] = int32(i + 1)
	}
	ids := INCIDs{GroupID: 5, MessageID: 0x102, FirstPSN: 100, OpID: 9, FlowLen: 16}
	n, err := BuildINC(buf, &env, bth, INC{Version: INCVersion}, &ids, &vec)
	if err != nil {
		t.Fatal(err)
	}
	checkRoCE(t, buf[:n], `
		020000000002 020000000001 0800
		45 6a 0080 0000 4000 40 11 2601 0a000001 0a000002
		c000 12b7 006c 0000
		0a 00 ffff 01 000044 00 000064            # BTH byte 4 = INC mark
		01 01 0000                                # INC flags IDS, version 1
		0005 0102 00 000064 0009 0000 00000010    # IDS part
		00000001 00000002 00000003 00000004 00000005 00000006 00000007 00000008
		00000009 0000000a 0000000b 0000000c 0000000d 0000000e 0000000f 00000010`, 0)
	// Without IDS: the flag is cleared even if the caller set it.
	n, err = BuildINC(buf, &env, bth, INC{Flags: INCFlagIDs | INCFlagResult, Version: 1}, nil, &vec)
	if err != nil {
		t.Fatal(err)
	}
	if n != EthernetLen+IPv4Len+UDPLen+BTHLen+INCLen+INCVectorBytes+ICRCLen || buf[54] != 0x02 {
		t.Fatalf("INC without IDS: n=%d flags %#x", n, buf[54])
	}
	if ok, _ := VerifyICRC(buf[EthernetLen:n]); !ok {
		t.Fatal("ICRC invalid")
	}
}

func TestBuildAnnouncement(t *testing.T) {
	buf := make([]byte, 128)
	env := Envelope{DstMAC: macB, SrcMAC: macA, SrcIP: ipA, DstIP: Addr4{10, 0, 0, 254}, SrcPort: 40000}
	ann := NewAnnouncement(AnnounceUp, AnnounceFlagINCUplink|AnnounceFlagCNPTarget)
	ann.WorkerRank, ann.SenderIP, ann.ReceiverIP, ann.UDPSrcPort = 2, ipA, ipB, 50001
	ann.SenderQPN, ann.ReceiverQPN, ann.INCGroup = 0x11, 0x22, 7
	n, err := BuildAnnouncement(buf, &env, &ann)
	if err != nil {
		t.Fatal(err)
	}
	// IPv4 and UDP checksums computed by hand.
	want := unhex(t, `
		020000000002 020000000001 0800
		45 00 003c 0000 0000 40 11 65b3 0a000001 0a0000fe
		9c40 12b8 0028 cb81
		46434e50 01 01 03 02 0a000001 0a000002 c351 0000 00 000011 00 000022 0007 0000`)
	if !bytes.Equal(buf[:n], want) {
		t.Fatalf("announcement\n got % x\nwant % x", buf[:n], want)
	}
}

func TestBuildPFCAndPause(t *testing.T) {
	buf := bytes.Repeat([]byte{0xAA}, 64)
	n, err := BuildPFC(buf, macA, 1<<3, [8]uint16{3: 0xffff})
	if err != nil {
		t.Fatal(err)
	}
	want := unhex(t, `0180c2000001 020000000001 8808 0101 0008
		0000 0000 0000 ffff 0000 0000 0000 0000`)
	want = append(want, make([]byte, 60-len(want))...)
	if n != 60 || !bytes.Equal(buf[:n], want) {
		t.Fatalf("PFC\n got % x\nwant % x", buf[:n], want)
	}
	n, err = BuildPFCXON(buf, macA, 0xff)
	if err != nil || n != 60 {
		t.Fatal(n, err)
	}
	want = unhex(t, `0180c2000001 020000000001 8808 0101 00ff`)
	want = append(want, make([]byte, 60-len(want))...)
	if !bytes.Equal(buf[:n], want) {
		t.Fatalf("XON\n got % x\nwant % x", buf[:n], want)
	}
	n, err = BuildPause(buf, macA, 256)
	want = unhex(t, `0180c2000001 020000000001 8808 0001 0100`)
	want = append(want, make([]byte, 60-len(want))...)
	if err != nil || n != 60 || !bytes.Equal(buf[:n], want) {
		t.Fatalf("PAUSE %v\n got % x\nwant % x", err, buf[:n], want)
	}
	if buf[60] != 0xAA {
		t.Fatal("wrote past 60 bytes")
	}
}

func TestBuildErrors(t *testing.T) {
	env := dataEnv()
	bth := BTH{Opcode: OpRCSendOnly}
	small := make([]byte, 40)
	if _, err := BuildRoCE(small, &env, &bth, nil); !errors.Is(err, ErrShortBuffer) {
		t.Errorf("short buffer: %v", err)
	}
	if _, err := BuildRoCE(make([]byte, 59), &env, &bth, nil); !errors.Is(err, ErrShortBuffer) {
		t.Errorf("no room for padding: %v", err)
	}
	if _, err := BuildPFC(make([]byte, 64), macA, 0x100, [8]uint16{}); !errors.Is(err, ErrRange) {
		t.Errorf("PFC class-enable bit 8: %v", err)
	}
	if _, err := BuildPFC(make([]byte, 59), macA, 1, [8]uint16{}); !errors.Is(err, ErrShortBuffer) {
		t.Errorf("PFC short buffer: %v", err)
	}
	big := make([]byte, 70000)
	if _, err := BuildRoCE(big, &env, &bth, make([]byte, 65500)); !errors.Is(err, ErrRange) {
		t.Errorf("oversize payload: %v", err)
	}
	bad := bth
	bad.DestQP = 1 << 24
	if _, err := BuildRoCE(big, &env, &bad, nil); !errors.Is(err, ErrRange) {
		t.Errorf("bad DestQP: %v", err)
	}
	env.DSCP = 64
	if _, err := BuildRoCE(big, &env, &bth, nil); !errors.Is(err, ErrRange) {
		t.Errorf("bad DSCP: %v", err)
	}
}

// signedAnnouncementKey is the key of the announcement authentication
// vectors: bytes 0x10..0x2f.
func signedAnnouncementKey() []byte {
	k := make([]byte, 32)
	for i := range k {
		k[i] = byte(0x10 + i)
	}
	return k
}

// TestBuildSignedAnnouncement: the frame of an authenticated announcement
// byte for byte, its tag and checksums computed independently (Python's
// hmac and hashlib, RFC 2104 / FIPS 180-4); the switch's parser still sees
// the announcement.
func TestBuildSignedAnnouncement(t *testing.T) {
	buf := make([]byte, 128)
	env := Envelope{DstMAC: macB, SrcMAC: macA, SrcIP: ipA, DstIP: Addr4{10, 0, 0, 254}, SrcPort: 40000}
	ann := NewAnnouncement(AnnounceUp, AnnounceFlagINCUplink|AnnounceFlagCNPTarget)
	ann.WorkerRank, ann.SenderIP, ann.ReceiverIP, ann.UDPSrcPort = 2, ipA, ipB, 50001
	ann.SenderQPN, ann.ReceiverQPN, ann.INCGroup = 0x11, 0x22, 7
	auth := AnnounceAuth{Type: AnnounceAuthHMACSHA256, KeyID: 7, Timestamp: 1_700_000_000_123_456_789, Nonce: 0x0123456789abcdef}
	n, err := BuildSignedAnnouncement(buf, &env, &ann, &auth, signedAnnouncementKey())
	if err != nil {
		t.Fatal(err)
	}
	want := unhex(t, `
		020000000002 020000000001 0800
		45 00 0064 0000 0000 40 11 658b 0a000001 0a0000fe
		9c40 12b8 0050 e76d
		46434e50 01 01 03 02 0a000001 0a000002 c351 0000 00 000011 00 000022 0007 0000
		01 00 0000 00000007 17979cfe3d85cd15 0123456789abcdef
		20375a5b21dffe3bb96611efddc94199`)
	if !bytes.Equal(buf[:n], want) {
		t.Fatalf("signed announcement\n got % x\nwant % x", buf[:n], want)
	}
	var f Frame
	if err := Parse(buf[:n], ParseOptions{AnnouncePorts: []uint16{DefaultAnnouncePort}}, &f); err != nil || !f.Has(LayerAnnouncement) ||
		f.Announcement.SenderQPN != 0x11 {
		t.Errorf("parser: %v, announcement %+v", err, f.Announcement)
	}
	if _, err := BuildSignedAnnouncement(buf, &env, &ann, &auth, make([]byte, 15)); !errors.Is(err, ErrRange) {
		t.Errorf("15-byte key: %v, want ErrRange", err)
	}
}

// TestVerifyAnnouncement: the tag verifies with its key only, and a change
// of any signed byte (the announcement, the key ID, the timestamp, the
// nonce) or of the tag makes it fail.
func TestVerifyAnnouncement(t *testing.T) {
	key := signedAnnouncementKey()
	payload := unhex(t, `46434e50 01 01 03 02 0a000001 0a000002 c351 0000 00 000011 00 000022 0007 0000
		01 00 0000 00000007 17979cfe3d85cd15 0123456789abcdef 20375a5b21dffe3bb96611efddc94199`)
	if !VerifyAnnouncement(payload, key) {
		t.Fatal("the vector does not verify")
	}
	other := append([]byte(nil), key...)
	other[31] ^= 1
	tests := []struct {
		name    string
		payload []byte
		key     []byte
	}{
		{"other key", payload, other},
		{"no key", payload, nil},
		{"truncated", payload[:AnnouncementAuthLen-1], key},
	}
	for i := range AnnouncementAuthLen {
		p := append([]byte(nil), payload...)
		p[i] ^= 0x40
		tests = append(tests, struct {
			name    string
			payload []byte
			key     []byte
		}{fmt.Sprintf("byte %d changed", i), p, key})
	}
	for _, tt := range tests {
		if VerifyAnnouncement(tt.payload, tt.key) {
			t.Errorf("%s: verifies", tt.name)
		}
	}
	// Signing the changed bytes again makes them verify: the tag is all
	// that binds them.
	p := append([]byte(nil), payload...)
	p[21+3] ^= 1 // sender QPN
	if err := SignAnnouncement(p, key); err != nil || !VerifyAnnouncement(p, key) || bytes.Equal(p[56:], payload[56:]) {
		t.Errorf("re-signed: %v", err)
	}
}
