package conformance

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

var errValue = errors.New("bad value")

// ParseValue parses a scalar value of a vector: decimal, 0x hex, 0b binary, a dotted
// IPv4 address (as its 32-bit value) or a colon-separated MAC (as its 48-bit value).
func ParseValue(s string) (uint64, error) {
	switch {
	case s == "":
		return 0, fmt.Errorf("empty value: %w", errValue)
	case strings.Count(s, ":") == 5:
		var v uint64
		for _, part := range strings.Split(s, ":") {
			b, err := strconv.ParseUint(part, 16, 8)
			if err != nil || len(part) == 0 || len(part) > 2 {
				return 0, fmt.Errorf("MAC %q: %w", s, errValue)
			}
			v = v<<8 | b
		}
		return v, nil
	case strings.Count(s, ".") == 3:
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is4() {
			return 0, fmt.Errorf("IPv4 address %q: %w", s, errValue)
		}
		b := a.As4()
		return uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3]), nil
	}
	clean := strings.ReplaceAll(s, "_", "")
	v, err := strconv.ParseUint(clean, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("number %q: %w", s, errValue)
	}
	return v, nil
}

// parseSigned parses a signed 32-bit value (INC vector elements).
func parseSigned(s string) (int32, error) {
	v, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 0, 64)
	if err != nil || v < -1<<31 || v > 1<<32-1 {
		return 0, fmt.Errorf("int32 %q: %w", s, errValue)
	}
	return int32(uint32(v)), nil // 0xffffffff and -1 are the same lane value
}

// fitWidth checks that v fits in width bits.
func fitWidth(v uint64, width int) error {
	if width < 64 && v>>uint(width) != 0 {
		return fmt.Errorf("value %#x does not fit in %d bits: %w", v, width, errValue)
	}
	return nil
}

// parseHex parses hex digits (spaces, ':' and '.' ignored); "**" is a don't-care byte,
// reported with mask 0x00 (otherwise 0xff).
func parseHex(s string) (b, mask []byte, err error) {
	s = strings.NewReplacer(" ", "", ":", "", ".", "").Replace(s)
	if len(s)%2 != 0 {
		return nil, nil, fmt.Errorf("hex %q: odd number of digits: %w", s, errValue)
	}
	for i := 0; i < len(s); i += 2 {
		if s[i:i+2] == "**" {
			b, mask = append(b, 0), append(mask, 0)
			continue
		}
		v, err := strconv.ParseUint(s[i:i+2], 16, 8)
		if err != nil {
			return nil, nil, fmt.Errorf("hex %q at digit %d: %w", s, i, errValue)
		}
		b, mask = append(b, byte(v)), append(mask, 0xff)
	}
	return b, mask, nil
}
