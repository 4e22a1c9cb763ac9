// Package pcapio writes and reads classic libpcap capture files (not
// pcapng) with Ethernet link type, so that frames built or switched by
// fastcnp can be opened in Wireshark/tshark.
//
// File format: a 24-byte global header (magic, version 2.4, time zone 0,
// sigfigs 0, snap length, link type), then per packet a 16-byte record header
// (seconds, microseconds or nanoseconds, captured length, original length)
// and the captured bytes. Files are written little-endian; the magic tells
// readers the byte order and the timestamp resolution.
package pcapio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// Magic numbers and constants of the classic pcap format.
const (
	MagicMicroseconds = 0xA1B2C3D4
	MagicNanoseconds  = 0xA1B23C4D
	// LinkTypeEthernet is LINKTYPE_ETHERNET (DLT_EN10MB).
	LinkTypeEthernet = 1
	// DefaultSnapLen is the snap length used when Options.SnapLen is 0.
	DefaultSnapLen = 262144

	// maxRecordLen bounds what a (possibly corrupt) file can make us allocate.
	maxRecordLen    = 16 << 20
	globalHeaderLen = 24
	recordHeaderLen = 16
)

// Options configure a Writer.
type Options struct {
	// Nanosecond selects nanosecond timestamps (magic 0xA1B23C4D) instead of
	// microseconds.
	Nanosecond bool
	// SnapLen caps the bytes stored per packet (0 means DefaultSnapLen);
	// longer packets are truncated and keep their original length.
	SnapLen uint32
}

// Writer writes a pcap stream. It is not safe for concurrent use.
type Writer struct {
	w       io.Writer
	nano    bool
	snapLen uint32
	rec     [recordHeaderLen]byte
}

// NewWriter writes the global header (LINKTYPE_ETHERNET) to w and returns a
// Writer for the packet records.
func NewWriter(w io.Writer, opts Options) (*Writer, error) {
	pw := &Writer{w: w, nano: opts.Nanosecond, snapLen: opts.SnapLen}
	if pw.snapLen == 0 {
		pw.snapLen = DefaultSnapLen
	}
	var h [globalHeaderLen]byte
	le := binary.LittleEndian
	magic := uint32(MagicMicroseconds)
	if pw.nano {
		magic = MagicNanoseconds
	}
	le.PutUint32(h[0:], magic)
	le.PutUint16(h[4:], 2) // version 2.4
	le.PutUint16(h[6:], 4)
	// thiszone and sigfigs stay 0
	le.PutUint32(h[16:], pw.snapLen)
	le.PutUint32(h[20:], LinkTypeEthernet)
	if _, err := w.Write(h[:]); err != nil {
		return nil, fmt.Errorf("pcapio: write global header: %w", err)
	}
	return pw, nil
}

// WritePacket writes one Ethernet frame (without FCS) captured at ts. Times
// before the Unix epoch are an error.
func (pw *Writer) WritePacket(ts time.Time, frame []byte) error {
	ns := ts.UnixNano()
	if ns < 0 {
		return fmt.Errorf("pcapio: timestamp %v before 1970", ts)
	}
	sec, frac := ns/1e9, ns%1e9
	if !pw.nano {
		frac /= 1000
	}
	if sec > 0xFFFFFFFF {
		return fmt.Errorf("pcapio: timestamp %v beyond 2106", ts)
	}
	incl := uint32(len(frame))
	if incl > pw.snapLen {
		incl = pw.snapLen
	}
	le := binary.LittleEndian
	le.PutUint32(pw.rec[0:], uint32(sec))
	le.PutUint32(pw.rec[4:], uint32(frac))
	le.PutUint32(pw.rec[8:], incl)
	le.PutUint32(pw.rec[12:], uint32(len(frame)))
	if _, err := pw.w.Write(pw.rec[:]); err != nil {
		return fmt.Errorf("pcapio: write record header: %w", err)
	}
	if _, err := pw.w.Write(frame[:incl]); err != nil {
		return fmt.Errorf("pcapio: write packet: %w", err)
	}
	return nil
}

// ErrFormat is wrapped by every error about a malformed pcap stream.
var ErrFormat = errors.New("pcapio: not a valid classic pcap stream")

// Reader reads a classic pcap stream (either byte order, µs or ns).
type Reader struct {
	r        io.Reader
	order    binary.ByteOrder
	nano     bool
	snapLen  uint32
	linkType uint32
	rec      [recordHeaderLen]byte
}

// NewReader reads the global header from r.
func NewReader(r io.Reader) (*Reader, error) {
	var h [globalHeaderLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, fmt.Errorf("%w: global header: %v", ErrFormat, err)
	}
	pr := &Reader{r: r}
	switch {
	case binary.LittleEndian.Uint32(h[:]) == MagicMicroseconds:
		pr.order = binary.LittleEndian
	case binary.LittleEndian.Uint32(h[:]) == MagicNanoseconds:
		pr.order, pr.nano = binary.LittleEndian, true
	case binary.BigEndian.Uint32(h[:]) == MagicMicroseconds:
		pr.order = binary.BigEndian
	case binary.BigEndian.Uint32(h[:]) == MagicNanoseconds:
		pr.order, pr.nano = binary.BigEndian, true
	default:
		return nil, fmt.Errorf("%w: magic % x", ErrFormat, h[:4])
	}
	pr.snapLen = pr.order.Uint32(h[16:])
	pr.linkType = pr.order.Uint32(h[20:])
	return pr, nil
}

// LinkType returns the link type of the stream (1 = Ethernet).
func (pr *Reader) LinkType() uint32 { return pr.linkType }

// Nanosecond reports whether timestamps have nanosecond resolution.
func (pr *Reader) Nanosecond() bool { return pr.nano }

// ReadPacket reads the next record. It returns io.EOF at a clean end of the
// stream; origLen is the packet's length on the wire (>= len(data)).
func (pr *Reader) ReadPacket() (ts time.Time, data []byte, origLen int, err error) {
	if _, err := io.ReadFull(pr.r, pr.rec[:]); err != nil {
		if err == io.EOF {
			return time.Time{}, nil, 0, io.EOF
		}
		return time.Time{}, nil, 0, fmt.Errorf("%w: record header: %v", ErrFormat, err)
	}
	sec := int64(pr.order.Uint32(pr.rec[0:]))
	frac := int64(pr.order.Uint32(pr.rec[4:]))
	incl := pr.order.Uint32(pr.rec[8:])
	orig := pr.order.Uint32(pr.rec[12:])
	if incl > orig || incl > maxRecordLen {
		return time.Time{}, nil, 0, fmt.Errorf("%w: captured length %d (original %d, snap %d)", ErrFormat, incl, orig, pr.snapLen)
	}
	if !pr.nano {
		frac *= 1000
	}
	data = make([]byte, incl)
	if _, err := io.ReadFull(pr.r, data); err != nil {
		return time.Time{}, nil, 0, fmt.Errorf("%w: packet data: %v", ErrFormat, err)
	}
	return time.Unix(sec, frac).UTC(), data, int(orig), nil
}
