package daemon

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/fastcnp/fastcnp/controller/config"
)

// API limits (docs/controller.md, "API limits").
const (
	// MaxAPIMessageSize is the largest request the API server receives:
	// a ValidateConfig of config.MaxConfigSize with room for its name and
	// framing. Every other request is far smaller.
	MaxAPIMessageSize = config.MaxConfigSize + 64<<10
	// ValidateConfigBurst and ValidateConfigEvery: each caller (token,
	// client certificate, or peer address without authentication) may
	// run ValidateConfig 5 times at once, then once every 2 s; beyond,
	// RESOURCE_EXHAUSTED. A 4 MiB config costs about a second of CPU.
	ValidateConfigBurst = 5
	ValidateConfigEvery = 2 * time.Second
	// maxRateKeys bounds the callers the rate limiter remembers.
	maxRateKeys = 4096
	// MaxStateFileSize is the largest state file fastcnpd reads: 64 MiB.
	// The largest legitimate one (TestStateFileLimit builds it) holds
	// 4096 connections (CONN_TABLE_SIZE, one table for the fabric) of
	// about 500 bytes each as written (indented JSON, IPv6 addresses):
	// 2 MB; and port overrides with every setting for every port a config
	// may list, config.MaxSwitches x 511 ports of about 300 bytes: 40 MB.
	// 64 MiB is that with a margin of 1.5x; a real state is far smaller.
	MaxStateFileSize = 64 << 20
	// maxAnswerLines bounds the errors and the warnings of a
	// ValidateConfig answer (config.MaxErrors, plus the count of the
	// rest), maxAnswerLineLen each of their lines.
	maxAnswerLines   = config.MaxErrors
	maxAnswerLineLen = 2 * config.MaxErrorLen
)

// boundLines keeps the first maxAnswerLines lines, each cut to
// maxAnswerLineLen, and counts the rest in a last line.
func boundLines(name, kind string, lines []string) []string {
	more := 0
	if len(lines) > maxAnswerLines+1 {
		more, lines = len(lines)-maxAnswerLines, lines[:maxAnswerLines]
	}
	out := make([]string, 0, len(lines)+1)
	for _, l := range lines {
		if len(l) > maxAnswerLineLen {
			cut := maxAnswerLineLen - 32
			for cut > 0 && !utf8.RuneStart(l[cut]) {
				cut--
			}
			l = l[:cut] + "... (line cut)"
		}
		out = append(out, l)
	}
	if more > 0 {
		out = append(out, fmt.Sprintf("%s: ... and %d more %s", name, more, kind))
	}
	return out
}
