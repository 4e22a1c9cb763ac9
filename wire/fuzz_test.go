package wire

import (
	"bytes"
	"errors"
	"testing"
)

// reencode encodes every layer Parse reported and compares it with the
// frame's bytes at that layer's offset.
func reencode(t *testing.T, frame []byte, f *Frame) {
	t.Helper()
	layers := []struct {
		l Layer
		h codec
		n int
	}{
		{LayerPacketOut, &f.PacketOut, PacketOutLen},
		{LayerEthernet, &f.Ethernet, EthernetLen},
		{LayerDot1Q, &f.Dot1Q, Dot1QLen},
		{LayerMACControl, &f.MACControl, MACControlLen},
		{LayerPFC, &f.PFC, PFCLen},
		{LayerPause, &f.Pause, PauseLen},
		{LayerIPv4, &f.IPv4, IPv4Len},
		{LayerUDP, &f.UDP, UDPLen},
		{LayerBTH, &f.BTH, BTHLen},
		{LayerCNPExt, &f.CNPExt, CNPExtLen},
		{LayerINC, &f.INC, INCLen},
		{LayerINCIDs, &f.INCIDs, INCIDsLen},
		{LayerINCVector, &f.INCVector, INCVectorBytes},
		{LayerAnnouncement, &f.Announcement, AnnouncementLen},
	}
	var buf [128]byte
	seen := 0
	next := 0 // headers are contiguous, in wire order
	for _, x := range layers {
		if !f.Has(x.l) {
			continue
		}
		seen++
		off := f.Off[x.l]
		if off != next {
			t.Fatalf("%v at %d, want %d (contiguous)", x.l, off, next)
		}
		n, err := x.h.Encode(buf[:])
		if err != nil || n != x.n {
			t.Fatalf("re-encode %v: %d, %v", x.l, n, err)
		}
		if !bytes.Equal(buf[:n], frame[off:off+n]) {
			t.Fatalf("re-encode %v: % x, frame has % x", x.l, buf[:n], frame[off:off+n])
		}
		next = off + n
	}
	if f.Has(LayerMACControl) && !f.Has(LayerPFC) && !f.Has(LayerPause) {
		next += MACControlMinLen - MACControlLen // extracted by P4, not decoded
	}
	if next != f.End || f.End > len(frame) || seen == 0 {
		t.Fatalf("End %d, last header ends at %d, len %d", f.End, next, len(frame))
	}
}

func FuzzParse(f *testing.F) {
	fr := testFrames(f)
	for _, b := range [][]byte{fr.data, fr.dataVLAN, fr.ack, fr.cnp, fr.cnpPlain, fr.incIDs, fr.incNoIDs, fr.ann, fr.pfc, fr.pause} {
		f.Add(b, false)
		f.Add(append([]byte{0x01, 0x80}, b...), true)
		for _, n := range []int{0, 1, 13, 14, 17, 33, 35, 41, 45, 53, 57, 69, len(b) - 1} {
			if n < len(b) {
				f.Add(b[:n], false)
			}
		}
	}
	f.Fuzz(func(t *testing.T, frame []byte, packetOut bool) {
		var fm Frame
		err := Parse(frame, ParseOptions{PacketOut: packetOut, AnnouncePorts: testAnnouncePorts}, &fm)
		if err != nil {
			var we *Error
			if !errors.As(err, &we) || !IsMalformed(err) || fm.Layers() != 0 {
				t.Fatalf("untyped error or leftover layers: %v, %b", err, fm.Layers())
			}
			return
		}
		reencode(t, frame, &fm)
		if fm.Has(LayerBTH) {
			if p, err := fm.RoCEPayload(frame); err == nil && len(p) > len(frame)-fm.End {
				t.Fatal("RoCEPayload beyond the frame")
			}
		}
		// The checksum helpers must not panic on whatever IPv4 came in.
		if ip := fm.IPv4Bytes(frame); ip != nil {
			_, _ = VerifyICRC(ip)
			c := bytes.Clone(ip)
			okBefore, _ := VerifyIPv4Checksum(c)
			if _, err := MarkCE(c); err == nil && okBefore {
				if ok, _ := VerifyIPv4Checksum(c); !ok {
					t.Fatal("MarkCE broke a valid IPv4 checksum")
				}
			}
		}
	})
}
