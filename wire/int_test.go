package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// A hop record and the INT header against bytes written by hand from
// docs/wire-formats.md "INT header and hop records".
func TestINTLayouts(t *testing.T) {
	h := INTHop{TimestampNs: 0x0102_0304_0506, Port: 0x0708, TxBytes: 0x1112_1314_1516_1718, QueueBytes: 0x2122_2324, RateBytesPerMs: 12_500_000}
	want := []byte{
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, // timestamp, 48 bits
		0x07, 0x08, // egress port
		0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, // tx bytes
		0x21, 0x22, 0x23, 0x24, // queue bytes
		0x00, 0xbe, 0xbc, 0x20, // 12,500,000 B/ms = 100 Gb/s
	}
	b := make([]byte, INTHopLen)
	if n, err := h.Encode(b); err != nil || n != INTHopLen || !bytes.Equal(b, want) {
		t.Fatalf("encode: %d %v\n% x\nwant\n% x", n, err, b, want)
	}
	var g INTHop
	if err := g.Decode(want); err != nil || g != h || g.RateBps() != 100e9 {
		t.Errorf("decode %+v %v (%v b/s)", g, err, g.RateBps())
	}
	ih := INTHeader{Flags: INTFlagEcho, Version: INTVersion, HopCount: 2}
	hb := make([]byte, INTHeaderLen)
	if _, err := ih.Encode(hb); err != nil || !bytes.Equal(hb, []byte{0x01, 0x01, 0x02, 0x00}) {
		t.Errorf("header % x %v", hb, err)
	}
	if !ih.Echo() || ih.Len() != 4+48 {
		t.Errorf("echo %v len %d", ih.Echo(), ih.Len())
	}
	for _, tc := range []struct {
		name string
		f    func() error
	}{
		{"timestamp above 48 bits", func() error { _, err := (&INTHop{TimestampNs: 1 << 48}).Encode(b); return err }},
		{"6 hops", func() error { _, err := (&INTHeader{HopCount: 6}).Encode(hb); return err }},
	} {
		if err := tc.f(); !errors.Is(err, ErrRange) {
			t.Errorf("%s: err %v, want ErrRange", tc.name, err)
		}
	}
	if _, err := h.Encode(b[:23]); !errors.Is(err, ErrShortBuffer) {
		t.Errorf("short: %v", err)
	}
	if err := g.Decode(want[:23]); !errors.Is(err, ErrTruncated) {
		t.Errorf("truncated: %v", err)
	}
}

func intTestHops(n int) []INTHop {
	hops := make([]INTHop, n)
	for i := range hops {
		hops[i] = INTHop{TimestampNs: uint64(1000 * (i + 1)), Port: uint16(i + 1), TxBytes: uint64(1 << (10 + i)),
			QueueBytes: uint32(100 * i), RateBytesPerMs: 12_500_000}
	}
	return hops
}

// The parser extracts the INT header and its records after a BTH with the
// INT mark; a hop count above INTMaxHops is malformed, a cut record truncated.
func TestParseINT(t *testing.T) {
	env := Envelope{DstMAC: macB, SrcMAC: macA, SrcIP: ipA, DstIP: ipB, DSCP: 26, ECN: ECT0, SrcPort: 0xc000}
	bth := BTH{Opcode: OpRCSendOnly, PKey: DefaultPKey, DestQP: 0x11, PSN: 7}
	const bthOff = 42
	for n := 0; n <= INTMaxHops; n++ {
		hops := intTestHops(n)
		fr := mustBuild(t, func(b []byte) (int, error) {
			return BuildRoCEINT(b, &env, bth, INTHeader{Version: INTVersion}, hops, []byte("payload!"))
		})
		var f Frame
		if err := Parse(fr, ParseOptions{}, &f); err != nil {
			t.Fatalf("%d hops: %v", n, err)
		}
		want := layerSet(LayerEthernet, LayerIPv4, LayerUDP, LayerBTH, LayerINT)
		if n > 0 {
			want |= layerSet(LayerINTHops)
		}
		if f.Layers() != want || f.BTH.Resv8a != INTBTHMark || f.INT.HopCount != uint8(n) || f.INT.Echo() ||
			f.End != bthOff+BTHLen+INTHeaderLen+n*INTHopLen {
			t.Errorf("%d hops: layers %b end %d header %+v", n, f.Layers(), f.End, f.INT)
		}
		for i := range n {
			if f.INTHops[i] != hops[i] {
				t.Errorf("%d hops: hop %d = %+v, want %+v", n, i, f.INTHops[i], hops[i])
			}
		}
		pay, err := f.RoCEPayload(fr)
		if err != nil || string(pay) != "payload!" {
			t.Errorf("%d hops: payload %q %v", n, pay, err)
		}
		if ok, err := VerifyICRC(fr[14:]); !ok || err != nil {
			t.Errorf("%d hops: ICRC %v %v", n, ok, err)
		}
	}
	good := mustBuild(t, func(b []byte) (int, error) {
		return BuildRoCEINT(b, &env, bth, INTHeader{Version: INTVersion}, intTestHops(2), nil)
	})
	var f Frame
	bad := clone(good, func(b []byte) { b[bthOff+BTHLen+2] = INTMaxHops + 1 })
	if err := Parse(bad, ParseOptions{}, &f); !errors.Is(err, ErrMalformed) || !IsMalformed(err) {
		t.Errorf("6 hops: %v", err)
	}
	cut := good[:bthOff+BTHLen+INTHeaderLen+INTHopLen+10]
	if err := Parse(cut, ParseOptions{}, &f); !errors.Is(err, ErrTruncated) {
		t.Errorf("cut record: %v", err)
	}
	// A CNP with byte 4 = the INT mark is still a CNP (the opcode decides).
	cnp := mustBuild(t, func(b []byte) (int, error) { return BuildCNP(b, &env, BTH{Resv8a: INTBTHMark, DestQP: 3}, nil) })
	if err := Parse(cnp, ParseOptions{}, &f); err != nil || !f.Has(LayerCNPExt) || f.Has(LayerINT) {
		t.Errorf("cnp: %v layers %b", err, f.Layers())
	}
}

// The ICRC of a packet with the INT mark does not cover the INT header and
// records: a switch that adds a record (and fixes the lengths) keeps it
// valid, and the ICRC equals that of the same packet without INT.
func TestICRCExcludesINT(t *testing.T) {
	env := Envelope{DstMAC: macB, SrcMAC: macA, SrcIP: ipA, DstIP: ipB, DSCP: 26, ECN: ECT0, SrcPort: 0xc000}
	bth := BTH{Opcode: OpRCSendOnly, PKey: DefaultPKey, DestQP: 0x11, PSN: 7}
	pay := bytes.Repeat([]byte{0xab}, 100)
	plain := mustBuild(t, func(b []byte) (int, error) { return BuildRoCE(b, &env, &bth, pay) })
	withINT := mustBuild(t, func(b []byte) (int, error) {
		return BuildRoCEINT(b, &env, bth, INTHeader{Version: INTVersion}, nil, pay)
	})
	icrc := func(fr []byte) []byte { return fr[len(fr)-ICRCLen:] }
	if !bytes.Equal(icrc(plain), icrc(withINT)) {
		t.Errorf("ICRC with an empty INT header % x, without INT % x", icrc(withINT), icrc(plain))
	}
	// A switch adds a record in front: 24 bytes after the INT header, the
	// hop count, the IPv4 total length and checksum, the UDP length.
	grown := addHop(t, withINT, intTestHops(1)[0])
	if ok, err := VerifyICRC(grown[14:]); !ok || err != nil {
		t.Errorf("after a switch added a record: %v %v", ok, err)
	}
	if !bytes.Equal(icrc(grown), icrc(plain)) {
		t.Error("the ICRC field changed")
	}
	// The records are not covered; the payload is.
	rec := clone(grown, func(b []byte) { b[42+BTHLen+INTHeaderLen+3] ^= 0xff })
	if ok, err := VerifyICRC(rec[14:]); !ok || err != nil {
		t.Errorf("a changed record broke the ICRC: %v %v", ok, err)
	}
	data := clone(grown, func(b []byte) { b[len(b)-ICRCLen-1] ^= 0xff })
	if ok, err := VerifyICRC(data[14:]); ok || err != nil {
		t.Errorf("a changed payload: valid %v, %v", ok, err)
	}
	// An echoing ACK verifies too.
	ack := mustBuild(t, func(b []byte) (int, error) {
		return BuildRCAckINT(b, &env, bth, AETH{Syndrome: SyndromeACK, MSN: 1}, intTestHops(3))
	})
	var f Frame
	if err := Parse(ack, ParseOptions{}, &f); err != nil || !f.INT.Echo() || f.INT.HopCount != 3 || f.BTH.Opcode != OpRCAcknowledge {
		t.Fatalf("ack: %v %+v", err, f.INT)
	}
	aeth, err := f.RoCEPayload(ack)
	var a AETH
	if err != nil || a.Decode(aeth) != nil || a.MSN != 1 || len(aeth) != AETHLen {
		t.Errorf("ack AETH % x %v", aeth, err)
	}
	if ok, err := VerifyICRC(ack[14:]); !ok || err != nil {
		t.Errorf("ack ICRC: %v %v", ok, err)
	}
	// A mark whose header is cut or claims too many records is an ICRC error.
	tooMany := clone(withINT, func(b []byte) { b[42+BTHLen+2] = 9 })
	if _, _, err := ICRC(tooMany[14:]); !errors.Is(err, ErrMalformed) {
		t.Errorf("9 hops: %v", err)
	}
	if _, err := BuildRoCEINT(make([]byte, 512), &env, bth, INTHeader{}, intTestHops(6), nil); !errors.Is(err, ErrRange) {
		t.Errorf("build with 6 hops: %v", err)
	}
}

// addHop does what a switch port in INT mode does to a parsed data packet
// (docs/dataplane.md "INT"): a record in front of the others, the hop count,
// and the IPv4 and UDP lengths (and the IPv4 checksum) grown by INTHopLen.
func addHop(t *testing.T, fr []byte, h INTHop) []byte {
	t.Helper()
	const ip, udp, intOff = 14, 34, 42 + BTHLen
	out := make([]byte, 0, len(fr)+INTHopLen)
	out = append(out, fr[:intOff+INTHeaderLen]...)
	rec := make([]byte, INTHopLen)
	if _, err := h.Encode(rec); err != nil {
		t.Fatal(err)
	}
	out = append(out, rec...)
	out = append(out, fr[intOff+INTHeaderLen:]...)
	out[intOff+2]++
	binary.BigEndian.PutUint16(out[ip+2:], binary.BigEndian.Uint16(out[ip+2:])+INTHopLen)
	binary.BigEndian.PutUint16(out[udp+4:], binary.BigEndian.Uint16(out[udp+4:])+INTHopLen)
	if err := SetIPv4Checksum(out[ip : ip+IPv4Len]); err != nil {
		t.Fatal(err)
	}
	return out
}
