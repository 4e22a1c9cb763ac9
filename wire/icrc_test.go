package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
)

// cnpConnectX4 is a CNP captured on a Mellanox ConnectX-4 Lx (published in
// scapy's test/contrib/roce.uts): known-good bytes, ICRC included.
const cnpConnectX4 = `
e41d2dab2bc2 7cfe90643b32 0800                    # Ethernet
45c2 003c 718c 4000 4011 9161 0a001101 0a001201   # IPv4 DSCP 48 ECT(0), TTL 64
0000 12b7 0028 0000                               # UDP sport 0, dport 4791, csum 0
81 00 ffff 40 000118 00 000000                    # BTH CNP, byte 4 = 0x40 (BECN), DestQP 0x118
00000000000000000000000000000000                  # 16 reserved bytes
82fd002a                                          # ICRC
`

// ucSendScapy is scapy's RoCE regression packet (UC SEND only), ICRC 78f353f3
// on the wire, IPv4 checksum 0xb4d5, UDP checksum 0xaca2.
const ucSendScapy = `
248a07a8fa22 248a07a8fa22 0800
45 01 0040 0478 4000 40 11 b4d5 c0a80007 c0a80007
c000 12b7 002c aca2
24 60 ffff 00 0000d3 00 cf1710                    # BTH UC SEND only, M, pad 2, DestQP 211
4630818be28935d90e9a95505401be885e500000          # payload
78f353f3                                          # ICRC
`

func TestICRCKnownFrames(t *testing.T) {
	for _, tc := range []struct {
		name, hex string
		wire      [4]byte
	}{
		{"ConnectX-4 Lx CNP", cnpConnectX4, [4]byte{0x82, 0xfd, 0x00, 0x2a}},
		{"scapy UC SEND", ucSendScapy, [4]byte{0x78, 0xf3, 0x53, 0xf3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := unhex(t, tc.hex)
			ip := f[EthernetLen:]
			ok, err := VerifyICRC(ip)
			if err != nil || !ok {
				t.Fatalf("VerifyICRC = %v, %v; want true", ok, err)
			}
			c, off, err := ICRC(ip)
			if err != nil {
				t.Fatal(err)
			}
			if off != len(ip)-4 {
				t.Errorf("ICRC offset %d, want %d", off, len(ip)-4)
			}
			// Least-significant byte first on the wire.
			if got := binary.LittleEndian.Uint32(tc.wire[:]); c != got {
				t.Errorf("ICRC value %#08x, want %#08x", c, got)
			}
			g := bytes.Clone(f)
			clear(g[len(g)-4:])
			if err := SetICRC(g[EthernetLen:]); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(g, f) {
				t.Errorf("SetICRC wrote % x, want % x", g[len(g)-4:], f[len(f)-4:])
			}
			if ok, _ := VerifyIPv4Checksum(ip); !ok {
				t.Error("IPv4 checksum of a known-good frame does not verify")
			}
		})
	}
}

// TestICRCSeed pins the relation rxe_icrc.c documents: the CRC state after 8
// bytes of 0xFF (the masked LRH) from the initial all-ones value is 0xdebb20e3.
func TestICRCSeed(t *testing.T) {
	ff := bytes.Repeat([]byte{0xFF}, 8)
	if got := ^crcUpdate(0, ff); got != 0xdebb20e3 {
		t.Fatalf("state after masked LRH %#x, want 0xdebb20e3", got)
	}
	// The table-driven CRC is the IEEE CRC-32 of hash/crc32.
	data := []byte("123456789")
	if got := crcUpdate(0, data); got != 0xCBF43926 {
		t.Fatalf("CRC-32 check value %#x, want 0xCBF43926", got)
	}
	if crcUpdate(crcUpdate(0, data[:4]), data[4:]) != crc32.ChecksumIEEE(data) {
		t.Fatal("crcUpdate does not chain like hash/crc32")
	}
	if crcAfterLRH != crcUpdate(0, ff) {
		t.Fatal("crcAfterLRH is not the state after 8 bytes of 0xFF")
	}
	// Slicing-by-8 against hash/crc32 for every length and alignment tail.
	p := make([]byte, 200)
	for i := range p {
		p[i] = byte(i*131 + 7)
	}
	for n := 0; n <= len(p); n++ {
		if got, want := crcUpdate(0, p[:n]), crc32.ChecksumIEEE(p[:n]); got != want {
			t.Fatalf("len %d: crcUpdate %#x, hash/crc32 %#x", n, got, want)
		}
	}
}

// TestICRCMasking: the variant fields (TOS, TTL, IPv4 checksum, UDP checksum,
// BTH byte 4) do not change the ICRC; every other covered byte does.
func TestICRCMasking(t *testing.T) {
	base := unhex(t, ucSendScapy)[EthernetLen:]
	want, _, err := ICRC(base)
	if err != nil {
		t.Fatal(err)
	}
	masked := map[int]bool{1: true, 8: true, 10: true, 11: true, 26: true, 27: true, 32: true}
	for i := 0; i < len(base)-ICRCLen; i++ {
		if i == 0 || i == 2 || i == 3 || i == 24 || i == 25 {
			continue // version/IHL and lengths: checked separately
		}
		p := bytes.Clone(base)
		p[i] ^= 0x5A
		got, _, err := ICRC(p)
		if err != nil {
			t.Fatalf("byte %d: %v", i, err)
		}
		if masked[i] && got != want {
			t.Errorf("byte %d is masked but changed the ICRC", i)
		}
		if !masked[i] && got == want {
			t.Errorf("byte %d is covered but did not change the ICRC", i)
		}
	}
}

func TestICRCErrors(t *testing.T) {
	base := unhex(t, ucSendScapy)[EthernetLen:]
	mod := func(f func(p []byte) []byte) []byte { return f(bytes.Clone(base)) }
	for _, tc := range []struct {
		name string
		ip   []byte
		want error
	}{
		{"short", base[:10], ErrTruncated},
		{"options", mod(func(p []byte) []byte { p[0] = 0x46; return p }), ErrMalformed},
		{"ipv6 version", mod(func(p []byte) []byte { p[0] = 0x65; return p }), ErrMalformed},
		{"total len too small", mod(func(p []byte) []byte { p[2], p[3] = 0, 43; return p }), ErrMalformed},
		{"total len beyond frame", mod(func(p []byte) []byte { p[3]++; return p }), ErrTruncated},
		{"udp len mismatch", mod(func(p []byte) []byte { p[25]--; return p }), ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := ICRC(tc.ip); !errors.Is(err, tc.want) {
				t.Fatalf("ICRC error %v, want %v", err, tc.want)
			}
			if _, err := VerifyICRC(tc.ip); !errors.Is(err, tc.want) {
				t.Fatalf("VerifyICRC error %v, want %v", err, tc.want)
			}
		})
	}
	// Ethernet padding after the IPv4 total length is ignored.
	padded := append(bytes.Clone(base), 0, 0, 0, 0, 0, 0)
	if ok, err := VerifyICRC(padded); !ok || err != nil {
		t.Fatalf("padded frame: %v, %v", ok, err)
	}
}

func TestChecksumsKnown(t *testing.T) {
	f := unhex(t, ucSendScapy)
	ip := f[EthernetLen:]
	c, err := IPv4Checksum(ip)
	if err != nil || c != 0xb4d5 {
		t.Fatalf("IPv4Checksum = %#x, %v; want 0xb4d5", c, err)
	}
	u, err := UDPChecksum(Addr4{192, 168, 0, 7}, Addr4{192, 168, 0, 7}, ip[IPv4Len:])
	if err != nil || u != 0xaca2 {
		t.Fatalf("UDPChecksum = %#x, %v; want 0xaca2", u, err)
	}
	x := unhex(t, cnpConnectX4)[EthernetLen:]
	if c, _ := IPv4Checksum(x); c != 0x9161 {
		t.Fatalf("IPv4Checksum(ConnectX-4 CNP) = %#x, want 0x9161", c)
	}
}

// TestMarkCEKeepsICRC: CE marking fixes the IPv4 checksum and, because TOS is
// masked, leaves the ICRC valid.
func TestMarkCEKeepsICRC(t *testing.T) {
	ip := bytes.Clone(unhex(t, cnpConnectX4)[EthernetLen:]) // ECT(0)
	prev, err := MarkCE(ip)
	if err != nil || prev != ECT0 {
		t.Fatalf("MarkCE = %v, %v; want ECT(0), nil", prev, err)
	}
	if ip[1] != 0xc3 {
		t.Fatalf("TOS %#x after MarkCE, want 0xc3 (DSCP 48, CE)", ip[1])
	}
	// 0x9161 - 1 on the TOS word: one's complement arithmetic by hand.
	if got := binary.BigEndian.Uint16(ip[10:]); got != 0x9160 {
		t.Fatalf("checksum %#x after MarkCE, want 0x9160", got)
	}
	if ok, _ := VerifyIPv4Checksum(ip); !ok {
		t.Fatal("IPv4 checksum invalid after MarkCE")
	}
	if ok, err := VerifyICRC(ip); !ok || err != nil {
		t.Fatalf("ICRC invalid after MarkCE: %v, %v", ok, err)
	}
}
