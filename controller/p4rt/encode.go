package p4rt

import (
	"fmt"
	"math/big"
	"math/bits"
	"net"
)

// Canonical returns the canonical P4Runtime bytestring of a big-endian
// unsigned value: no leading zero bytes, and zero as the single byte 0x00.
// The result may share memory with b.
func Canonical(b []byte) []byte {
	for len(b) > 1 && b[0] == 0 {
		b = b[1:]
	}
	if len(b) == 0 {
		return []byte{0}
	}
	return b
}

// bitLen is the number of significant bits of a big-endian value.
func bitLen(b []byte) int {
	for i, x := range b {
		if x != 0 {
			return (len(b)-i-1)*8 + bits.Len8(x)
		}
	}
	return 0
}

// EncodeUint encodes v as the canonical bytestring of a bit<width> value.
func EncodeUint(v uint64, width int) ([]byte, error) {
	if width <= 0 {
		return nil, fmt.Errorf("p4rt: bitwidth %d: %w", width, ErrInvalidValue)
	}
	if n := bits.Len64(v); n > width {
		return nil, fmt.Errorf("p4rt: %d needs %d bits, bit<%d>: %w", v, n, width, ErrValueTooWide)
	}
	var buf [8]byte
	n := (bits.Len64(v) + 7) / 8
	if n == 0 {
		return []byte{0}, nil
	}
	for i := 0; i < n; i++ {
		buf[i] = byte(v >> (8 * (n - 1 - i)))
	}
	return append([]byte(nil), buf[:n]...), nil
}

// EncodeBytes checks that the big-endian value b fits bit<width> and
// returns its canonical form (a fresh slice).
func EncodeBytes(b []byte, width int) ([]byte, error) {
	if width <= 0 {
		return nil, fmt.Errorf("p4rt: bitwidth %d: %w", width, ErrInvalidValue)
	}
	if n := bitLen(b); n > width {
		return nil, fmt.Errorf("p4rt: 0x%x needs %d bits, bit<%d>: %w", b, n, width, ErrValueTooWide)
	}
	return append([]byte(nil), Canonical(b)...), nil
}

// Encode encodes v for a bit<width> field. Accepted types: unsigned
// integers, non-negative signed integers, *big.Int (non-negative), []byte
// (big-endian), net.IP (4 bytes when width <= 32, else 16) and
// net.HardwareAddr.
func Encode(v any, width int) ([]byte, error) {
	switch x := v.(type) {
	case uint64:
		return EncodeUint(x, width)
	case uint:
		return EncodeUint(uint64(x), width)
	case uint32:
		return EncodeUint(uint64(x), width)
	case uint16:
		return EncodeUint(uint64(x), width)
	case uint8:
		return EncodeUint(uint64(x), width)
	case int:
		return encodeSigned(int64(x), width)
	case int64:
		return encodeSigned(x, width)
	case int32:
		return encodeSigned(int64(x), width)
	case bool:
		if x {
			return EncodeUint(1, width)
		}
		return EncodeUint(0, width)
	case *big.Int:
		if x == nil || x.Sign() < 0 {
			return nil, fmt.Errorf("p4rt: big.Int %v: %w", x, ErrInvalidValue)
		}
		return EncodeBytes(x.Bytes(), width)
	case []byte:
		if len(x) == 0 {
			return nil, fmt.Errorf("p4rt: empty bytestring: %w", ErrInvalidValue)
		}
		return EncodeBytes(x, width)
	case net.IP:
		if len(x) == 0 {
			return nil, fmt.Errorf("p4rt: empty IP: %w", ErrInvalidValue)
		}
		if ip4 := x.To4(); ip4 != nil && width <= 32 {
			return EncodeBytes(ip4, width)
		}
		return EncodeBytes(x.To16(), width)
	case net.HardwareAddr:
		if len(x) == 0 {
			return nil, fmt.Errorf("p4rt: empty MAC: %w", ErrInvalidValue)
		}
		return EncodeBytes(x, width)
	default:
		return nil, fmt.Errorf("p4rt: cannot encode %T: %w", v, ErrInvalidValue)
	}
}

func encodeSigned(v int64, width int) ([]byte, error) {
	if v < 0 {
		return nil, fmt.Errorf("p4rt: negative value %d: %w", v, ErrInvalidValue)
	}
	return EncodeUint(uint64(v), width)
}

// encodeField is Encode with the field's name in the error.
func encodeField(kind, name string, v any, width int) ([]byte, error) {
	b, err := Encode(v, width)
	if err != nil {
		return nil, fmt.Errorf("%s %q (bit<%d>): %w", kind, name, width, err)
	}
	return b, nil
}

// DecodeUint decodes a big-endian bytestring (canonical or padded) into a
// uint64; a value with more than 64 significant bits is an error.
func DecodeUint(b []byte) (uint64, error) {
	if n := bitLen(b); n > 64 {
		return 0, fmt.Errorf("p4rt: 0x%x needs %d bits, more than 64: %w", b, n, ErrValueTooWide)
	}
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v, nil
}

// DecodeBig decodes a big-endian bytestring into a new big.Int.
func DecodeBig(b []byte) *big.Int { return new(big.Int).SetBytes(b) }

// widthBytes is the padded byte length of bit<width>.
func widthBytes(width int) int { return (width + 7) / 8 }

// pad left-pads b with zeros to n bytes (b must not be longer than n).
func pad(b []byte, n int) []byte {
	if len(b) >= n {
		return b[len(b)-n:]
	}
	out := make([]byte, n)
	copy(out[n-len(b):], b)
	return out
}

// isAllOnes reports whether b, a value that fits bit<width>, is
// 2^width-1, the largest bit<width> value: width significant bits all set.
func isAllOnes(b []byte, width int) bool {
	n := 0
	for _, x := range b {
		n += bits.OnesCount8(x)
	}
	return n == width
}

// checkTernary rejects value bits outside mask: the spec requires value &
// ^mask == 0.
func checkTernary(value, mask []byte, width int) error {
	n := widthBytes(width)
	v, m := pad(value, n), pad(mask, n)
	for i := range v {
		if v[i]&^m[i] != 0 {
			return fmt.Errorf("p4rt: ternary value 0x%x has bits outside mask 0x%x: %w", value, mask, ErrInvalidValue)
		}
	}
	return nil
}

// checkLPM checks 0 <= prefixLen <= width and that the bits after the
// prefix are zero.
func checkLPM(value []byte, prefixLen int32, width int) error {
	if prefixLen < 0 || int(prefixLen) > width {
		return fmt.Errorf("p4rt: prefix length %d outside [0, %d]: %w", prefixLen, width, ErrInvalidValue)
	}
	n := widthBytes(width)
	v := pad(value, n)
	// Bit i (from the most significant bit of bit<width>) lives at
	// padded-bit position i + (8n - width).
	off := 8*n - width
	for i := int(prefixLen); i < width; i++ {
		p := i + off
		if v[p/8]&(0x80>>(p%8)) != 0 {
			return fmt.Errorf("p4rt: LPM value 0x%x has bits set after /%d: %w", value, prefixLen, ErrInvalidValue)
		}
	}
	return nil
}
