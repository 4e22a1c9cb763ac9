package wire

import (
	"encoding/hex"
	"strings"
	"testing"
)

// unhex decodes hex written by hand, ignoring spaces, newlines and comments
// (from '#' to the end of a line).
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	var sb strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		sb.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(sb.String())
	if err != nil {
		t.Fatalf("bad test hex: %v", err)
	}
	return b
}
