package pipeline

import "fmt"

// ValueFromBytes decodes a P4Runtime bytestring (big-endian) of a field that is width
// bits wide (1..64). Leading zero bytes are accepted (P4Runtime allows padded strings
// on write); a value that needs more than width bits, or an empty string, is
// ErrInvalidArgument.
func ValueFromBytes(b []byte, width int) (uint64, error) {
	if width < 1 || width > 64 {
		return 0, fmt.Errorf("bitwidth %d not in 1..64: %w", width, ErrInvalidArgument)
	}
	if len(b) == 0 {
		return 0, fmt.Errorf("empty bytestring for a %d-bit field: %w", width, ErrInvalidArgument)
	}
	var v uint64
	for i, c := range b {
		if len(b)-i > 8 && c != 0 {
			return 0, fmt.Errorf("bytestring %x wider than %d bits: %w", b, width, ErrInvalidArgument)
		}
		v = v<<8 | uint64(c)
	}
	if width < 64 && v>>uint(width) != 0 {
		return 0, fmt.Errorf("bytestring %x wider than %d bits: %w", b, width, ErrInvalidArgument)
	}
	return v, nil
}

// ValueToBytes appends the canonical P4Runtime bytestring of v to dst: big-endian, no
// leading zero bytes, and "\x00" for 0.
func ValueToBytes(dst []byte, v uint64) []byte {
	n := 1
	for x := v >> 8; x != 0; x >>= 8 {
		n++
	}
	for i := n - 1; i >= 0; i-- {
		dst = append(dst, byte(v>>(8*uint(i))))
	}
	return dst
}
