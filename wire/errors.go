package wire

import "errors"

// Sentinel errors. Every error returned by this package wraps exactly one of
// them; test with errors.Is.
var (
	// ErrTruncated: a header extends past the end of the input.
	ErrTruncated = errors.New("truncated")
	// ErrMalformed: a header is complete but carries values the parser
	// rejects (IPv4 version or IHL, announcement magic or version, lengths
	// that contradict each other).
	ErrMalformed = errors.New("malformed")
	// ErrShortBuffer: the caller's output buffer is too small.
	ErrShortBuffer = errors.New("output buffer too small")
	// ErrRange: a field value does not fit its wire width (for example a
	// 24-bit QPN above 0xFFFFFF), so encoding it would silently truncate.
	ErrRange = errors.New("field value out of range")
)

// Error is the concrete error type of this package: which header, which
// sentinel, and a fixed human-readable reason.
type Error struct {
	// Err is ErrTruncated, ErrMalformed, ErrShortBuffer or ErrRange.
	Err error
	// Layer is the header being decoded or encoded.
	Layer Layer
	// Reason is a short fixed explanation (may be empty).
	Reason string
}

// Error implements error.
func (e *Error) Error() string {
	s := "wire: " + e.Layer.String() + ": " + e.Err.Error()
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// Unwrap returns the sentinel (ErrTruncated, ErrMalformed, ...).
func (e *Error) Unwrap() error { return e.Err }

// IsMalformed reports whether err is a parse failure that a switch counts in
// its `malformed` counter: ErrTruncated or ErrMalformed.
func IsMalformed(err error) bool {
	return errors.Is(err, ErrTruncated) || errors.Is(err, ErrMalformed)
}

// Preallocated per-layer errors, so that returning one never allocates.
var (
	truncErr [numLayers]*Error
	shortErr [numLayers]*Error
)

func init() {
	for l := Layer(0); l < numLayers; l++ {
		truncErr[l] = &Error{Err: ErrTruncated, Layer: l}
		shortErr[l] = &Error{Err: ErrShortBuffer, Layer: l}
	}
}

func malformed(l Layer, reason string) *Error {
	return &Error{Err: ErrMalformed, Layer: l, Reason: reason}
}

func rangeErr(l Layer, reason string) *Error {
	return &Error{Err: ErrRange, Layer: l, Reason: reason}
}

// Specific malformed and range errors (package values: no allocation).
var (
	errIPv4Version  = malformed(LayerIPv4, "version is not 4")
	errIPv4IHL      = malformed(LayerIPv4, "IHL < 5")
	errICRCIHL      = malformed(LayerICRC, "IPv4 header has options (IHL != 5) or version != 4")
	errICRCTotalLen = malformed(LayerICRC, "IPv4 total length too small for UDP+BTH+ICRC")
	errICRCUDPLen   = malformed(LayerICRC, "UDP length does not match IPv4 total length")
	errICRCTrunc    = &Error{Err: ErrTruncated, Layer: LayerICRC, Reason: "IPv4 total length exceeds the frame"}
	errPayloadLen   = malformed(LayerIPv4, "IPv4 total length does not cover the parsed headers and the ICRC")
	errINTHops      = malformed(LayerINT, "hop count above INTMaxHops")
	errICRCINT      = malformed(LayerICRC, "INT header cut or with more than INTMaxHops records")
	errRangeINT     = rangeErr(LayerINT, "more than INTMaxHops records")
	errRangeINTHop  = rangeErr(LayerINTHops, "timestamp above 48 bits")
	errAnnMagic     = malformed(LayerAnnouncement, "bad magic")
	errAnnVersion   = malformed(LayerAnnouncement, "unsupported version")

	errRangePFC      = rangeErr(LayerMACControl, "class-enable vector above bit 7")
	errRangeVLAN     = rangeErr(LayerDot1Q, "PCP > 7 or VID > 4095")
	errRangeIPv4     = rangeErr(LayerIPv4, "version/IHL > 15, flags > 7 or fragment offset > 8191")
	errRangeDSCP     = rangeErr(LayerIPv4, "DSCP > 63 or ECN > 3")
	errRangeBTH      = rangeErr(LayerBTH, "pad count > 3, transport version > 15, DestQP or PSN > 24 bits, reserved7 > 127")
	errRangeAETH     = rangeErr(LayerAETH, "MSN > 24 bits")
	errRangeCNPExt   = rangeErr(LayerCNPExt, "version or flags > 15")
	errRangeINCIDs   = rangeErr(LayerINCIDs, "first PSN > 24 bits")
	errRangeAnn      = rangeErr(LayerAnnouncement, "QPN > 24 bits")
	errRangeAnnKey   = rangeErr(LayerAnnouncement, "authentication key shorter than 16 or longer than 64 bytes")
	errRangePort     = rangeErr(LayerPacketIn, "port > 511 or reason/pad > 127")
	errRangePortOut  = rangeErr(LayerPacketOut, "port > 511 or pad > 127")
	errRangePayload  = rangeErr(LayerIPv4, "packet longer than 65535 bytes")
	errRangeTTL      = rangeErr(LayerIPv4, "TTL is 0")
	errRangeECNField = rangeErr(LayerIPv4, "ECN > 3")
)
