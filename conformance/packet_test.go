package conformance

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.NewReplacer(" ", "", "\n", "", "\t", "").Replace(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func kvs(s string) []KV {
	var out []KV
	for _, w := range strings.Fields(s) {
		k, v, _ := strings.Cut(w, "=")
		out = append(out, KV{k, v})
	}
	return out
}

// TestBuildPacketBytes pins DSL packets to bytes written by hand from
// docs/wire-formats.md.
func TestBuildPacketBytes(t *testing.T) {
	pad := func(b string, n int) string { return b + strings.Repeat("00", n) }
	tests := []struct {
		kind, args string
		want       string
	}{
		{"pfc", "smac=02:00:00:00:00:02 prio=3 quanta=0xffff",
			pad("0180c2000001 020000000002 8808 0101 0008 0000 0000 0000 ffff 0000 0000 0000 0000", 26)},
		{"pause", "quanta=10", pad("0180c2000001 020000000001 8808 0001 000a", 42)},
		{"eth", "type=0x88b5 payload=46", pad("0200000000ee 020000000001 88b5", 46)},
		// 802.1Q TCI: PCP 3, DEI 0, VID 10 = 0110 0000 0000 1010 = 0x600a; 18 + 28 bytes, padded to 60.
		{"eth", "vlan=10 pcp=3 type=0x0806 payload=28", pad("0200000000ee 020000000001 8100 600a 0806", 42)},
		// PCP 0, DEI 1, VID 4095 = 0x1fff; 18 + 50 = 68 bytes, no padding; len= counts the tag.
		{"eth", "vlan=4095 dei=1 type=0x86dd len=68", pad("0200000000ee 020000000001 8100 1fff 86dd", 50)},
		// IPv4 4500 001c 0000 0000 4011 csum 0a00 0001 0a00 0102: the words sum to
		// 0x9a30, checksum ^0x9a30 = 0x65cf; UDP 1388 2328 0008 0000.
		{"udp", "dport=9000", pad("0200000000ee 020000000001 0800 4500001c00000000 4011 65cf 0a000001 0a000102 13882328 00080000", 18)},
		{"hex", "", "0102"},
	}
	for _, tc := range tests {
		t.Run(tc.kind, func(t *testing.T) {
			var hexArgs []string
			var kv []KV
			if tc.kind == "hex" {
				hexArgs = []string{"01", "02"}
			} else {
				kv = kvs(tc.args)
			}
			p, err := BuildPacket(tc.kind, kv, hexArgs, false)
			if err != nil {
				t.Fatal(err)
			}
			if want := mustHex(t, tc.want); !bytes.Equal(p.Bytes, want) {
				t.Errorf("got  %x\nwant %x", p.Bytes, want)
			}
		})
	}
}

// TestBuildPacketFields checks the fields the DSL sets, at their wire-formats.md
// offsets.
func TestBuildPacketFields(t *testing.T) {
	p, err := BuildPacket("roce", kvs("vlan=5 pcp=3 dscp=26 ecn=ect0 ttl=7 dqp=0x123 psn=5 pkey=0x8001 len=1062"), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	b := p.Bytes
	switch {
	case len(b) != 1062:
		t.Errorf("len %d, want 1062 (len= is the whole frame)", len(b))
	case !bytes.Equal(b[12:16], []byte{0x81, 0x00, 0x60, 0x05}):
		t.Errorf("802.1Q tag %x, want 8100 6005 (PCP 3, VID 5)", b[12:16])
	case b[19] != 26<<2|2 || b[26] != 7:
		t.Errorf("TOS %#x TTL %d", b[19], b[26])
	case !bytes.Equal(b[46:58], []byte{0x04, 0, 0x80, 0x01, 0, 0, 0x01, 0x23, 0, 0, 0, 5}):
		t.Errorf("BTH %x", b[46:58])
	}
	a, err := BuildPacket("announce", kvs("aflags=2 rank=3 csport=5000 sqpn=0x456 rqpn=0x123 agroup=9"), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	want := mustHex(t, "46434e50 01 01 02 03 0a000001 0a000102 1388 0000 00000456 00000123 0009 0000")
	if len(a.Bytes) != 74 || !bytes.Equal(a.Bytes[42:74], want) || a.Bytes[36] != 0x12 || a.Bytes[37] != 0xb8 {
		t.Errorf("announcement %x", a.Bytes)
	}
	in, err := BuildPacket("inc", kvs("flags=2 group=1 msg=7 first=100 flen=4 vec=-1,0x7fffffff"), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	wantINC := mustHex(t, "03 01 0000 0001 0007 00 000064 0000 0000 00000004 ffffffff 7fffffff 00000000")
	if len(in.Bytes) != 142 || in.Bytes[46] != 0x01 || !bytes.Equal(in.Bytes[54:54+len(wantINC)], wantINC) {
		t.Errorf("INC %x", in.Bytes[42:90])
	}
}

// TestPacketModifiers checks truncate, set and ignore, and Match.
func TestPacketModifiers(t *testing.T) {
	p, err := BuildPacket("udp", kvs("payload=100 set=14:46 set=0x10:ffff truncate=40 ignore=2+3,39+1"), nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Bytes) != 40 || p.Bytes[14] != 0x46 || p.Bytes[16] != 0xff || p.Bytes[17] != 0xff {
		t.Fatalf("modified packet %x", p.Bytes)
	}
	got := append([]byte(nil), p.Bytes...)
	got[3], got[39] = ^got[3], ^got[39]
	if ok, why := p.Match(got); !ok {
		t.Errorf("don't-care bytes compared: %s", why)
	}
	got[5] ^= 1
	if ok, _ := p.Match(got); ok {
		t.Error("a cared-for byte differs but Match says equal")
	}
	if ok, _ := p.Match(got[:39]); ok {
		t.Error("a shorter frame matches")
	}
}

// The int kind: the INT header and records at the offsets of
// docs/wire-formats.md, "*" fields as don't-cares in expectations only.
func TestBuildPacketINT(t *testing.T) {
	p, err := BuildPacket("int", kvs("dqp=0x123 psn=1 hop0=0x010203040506:2:5158:3000:12500000 payload=0"), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	// Ethernet 14, IPv4 20, UDP 8, BTH 12: the INT header at 54 (BTH byte 4 at 46).
	want := mustHex(t, "00 01 01 00"+ // flags 0, version 1, 1 record, reserved
		"010203040506 0002 0000000000001426 00000bb8 00bebc20") // ts, port 2, tx 5158, qlen 3000, rate
	if p.Bytes[46] != 0x02 || !bytes.Equal(p.Bytes[54:54+len(want)], want) || len(p.Bytes) != 54+28+4 {
		t.Errorf("int packet: byte 4 %#x, % x (%d bytes)", p.Bytes[46], p.Bytes[54:], len(p.Bytes))
	}
	e, err := BuildPacket("int", kvs("echo=1 hop0=*:2:*:0:1"), nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if e.Bytes[54] != 0x01 {
		t.Errorf("echo flag %#x", e.Bytes[54])
	}
	for i, m := range e.Mask {
		dc := (i >= 58 && i < 64) || (i >= 66 && i < 74)
		if (m == 0) != dc {
			t.Fatalf("mask byte %d = %#x", i, m)
		}
	}
	for _, bad := range []string{"hop0=*:2:3:4:5", "hop0=1:2:3", "hop0=1:0x10000:3:4:5"} {
		if _, err := BuildPacket("int", kvs(bad), nil, false); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
