package pcapio

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestWriterBytes(t *testing.T) {
	// Expected bytes written by hand from the pcap format: little-endian
	// global header (magic, 2.4, zone 0, sigfigs 0, snaplen 2, link type 1),
	// then per record seconds, fraction, captured and original length.
	// 123456 us = 0x0001e240, 123456789 ns = 0x075bcd15.
	for _, tc := range []struct {
		name string
		nano bool
		want string
	}{
		{"microseconds", false, "d4c3b2a1 0200 0400 00000000 00000000 02000000 01000000" +
			"02000000 40e20100 02000000 03000000 aabb" +
			"03000000 00000000 02000000 04000000 0102"},
		{"nanoseconds", true, "4d3cb2a1 0200 0400 00000000 00000000 02000000 01000000" +
			"02000000 15cd5b07 02000000 03000000 aabb" +
			"03000000 00000000 02000000 04000000 0102"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			w, err := NewWriter(&buf, Options{Nanosecond: tc.nano, SnapLen: 2})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.WritePacket(time.Unix(2, 123456789), []byte{0xaa, 0xbb, 0xcc}); err != nil {
				t.Fatal(err)
			}
			if err := w.WritePacket(time.Unix(3, 0), []byte{1, 2, 3, 4}); err != nil {
				t.Fatal(err)
			}
			want, _ := hex.DecodeString(strings.ReplaceAll(tc.want, " ", ""))
			if !bytes.Equal(buf.Bytes(), want) {
				t.Fatalf("got  % x\nwant % x", buf.Bytes(), want)
			}
			r, err := NewReader(bytes.NewReader(buf.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			if r.LinkType() != LinkTypeEthernet || r.Nanosecond() != tc.nano {
				t.Fatalf("link type %d nano %v", r.LinkType(), r.Nanosecond())
			}
			wantTS := time.Unix(2, 123456000)
			if tc.nano {
				wantTS = time.Unix(2, 123456789)
			}
			ts, data, orig, err := r.ReadPacket()
			if err != nil || !ts.Equal(wantTS) || orig != 3 || !bytes.Equal(data, []byte{0xaa, 0xbb}) {
				t.Fatalf("first record: %v % x %d %v", ts, data, orig, err)
			}
			ts, data, orig, err = r.ReadPacket()
			if err != nil || !ts.Equal(time.Unix(3, 0)) || !bytes.Equal(data, []byte{1, 2}) || orig != 4 {
				t.Fatalf("second record: %v % x %d %v", ts, data, orig, err)
			}
			if _, _, _, err = r.ReadPacket(); err != io.EOF {
				t.Fatalf("end: %v, want io.EOF", err)
			}
		})
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return len(p), nil
}

func TestErrors(t *testing.T) {
	if _, err := NewWriter(&failWriter{}, Options{}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("NewWriter on a failing writer: %v", err)
	}
	w, _ := NewWriter(&failWriter{n: 1}, Options{})
	if err := w.WritePacket(time.Unix(0, 0), []byte{1}); err == nil {
		t.Fatal("WritePacket on a failing writer succeeded")
	}
	w, _ = NewWriter(io.Discard, Options{})
	if err := w.WritePacket(time.Unix(-1, 0), []byte{1}); err == nil {
		t.Fatal("negative timestamp accepted")
	}
	for _, bad := range []string{"", "00000000000000000000000000000000000000000000000000", "d4c3b2a1"} {
		b, _ := hex.DecodeString(bad)
		if _, err := NewReader(bytes.NewReader(b)); !errors.Is(err, ErrFormat) {
			t.Errorf("NewReader(%q): %v, want ErrFormat", bad, err)
		}
	}
	// A record whose captured length exceeds its original length.
	h, _ := hex.DecodeString(strings.ReplaceAll("d4c3b2a1020004000000000000000000ffff000001000000"+"00000000 00000000 05000000 04000000 0102030405", " ", ""))
	r, err := NewReader(bytes.NewReader(h))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := r.ReadPacket(); !errors.Is(err, ErrFormat) {
		t.Fatalf("incl > orig: %v, want ErrFormat", err)
	}
	// Truncated packet data.
	r, _ = NewReader(bytes.NewReader(h[:len(h)-2]))
	if _, _, _, err := r.ReadPacket(); !errors.Is(err, ErrFormat) {
		t.Fatalf("truncated data: %v, want ErrFormat", err)
	}
}
