package p4rtserver

import (
	"fmt"
	"math/bits"

	"google.golang.org/grpc/codes"
)

// decodeBits decodes a P4Runtime bytestring (big-endian; leading zero bytes allowed,
// spec section 8.3) into a value of at most width bits. Empty strings and values that
// do not fit are INVALID_ARGUMENT.
func decodeBits(b []byte, width int, what string) (uint64, error) {
	if len(b) == 0 {
		return 0, errorf(codes.InvalidArgument, "%s: empty bytestring", what)
	}
	i := 0
	for i < len(b) && b[i] == 0 {
		i++
	}
	b = b[i:]
	if len(b) > 8 {
		return 0, errorf(codes.InvalidArgument, "%s: value 0x%x wider than %d bits", what, b, width)
	}
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	if width < 64 && v>>uint(width) != 0 {
		return 0, errorf(codes.InvalidArgument, "%s: value %#x wider than %d bits", what, v, width)
	}
	return v, nil
}

// encodeBits returns the canonical bytestring of v: the shortest big-endian form, at
// least one byte (zero is "\x00").
func encodeBits(v uint64) []byte {
	n := (bits.Len64(v) + 7) / 8
	if n == 0 {
		return []byte{0}
	}
	out := make([]byte, n)
	for i := n - 1; i >= 0; i-- {
		out[i] = byte(v)
		v >>= 8
	}
	return out
}

// packHeader packs field values MSB first into a header of whole bytes, as a P4 header
// with those bit fields is laid out on the wire.
func packHeader(widths []int, values []uint64) ([]byte, error) {
	total := 0
	for _, w := range widths {
		total += w
	}
	if total%8 != 0 {
		return nil, fmt.Errorf("header of %d bits is not whole bytes", total)
	}
	out := make([]byte, total/8)
	pos := 0
	for i, w := range widths {
		for b := w - 1; b >= 0; b-- {
			if values[i]>>uint(b)&1 != 0 {
				out[pos/8] |= 0x80 >> uint(pos%8)
			}
			pos++
		}
	}
	return out, nil
}
