package config

import (
	"container/heap"
	"errors"
	"fmt"
	"io"
	"sort"
	"unicode/utf8"

	"github.com/fastcnp/fastcnp/internal/readlimit"
	"github.com/fastcnp/fastcnp/p4src"
)

// Input limits: every file and every config fastcnpd or fastcnpctl reads is
// bounded, and so is the work and the error output a bad one can cause
// (docs/config.md, "Limits").
const (
	// MaxConfigSize is the largest config file (and ValidateConfig
	// request) accepted: 4 MiB. The largest legitimate config (a few
	// switches with 511 ports, 1024 routes, 1024 subnets each) is a few
	// hundred kB.
	MaxConfigSize = 4 << 20
	// MaxTokenFileSize is the largest API token file: 1 MiB (a line is
	// under 100 bytes; thousands of tokens fit).
	MaxTokenFileSize = 1 << 20
	// MaxErrors is how many problems of a config are reported; the rest
	// are counted in one last line ("... and N more errors").
	MaxErrors = 100
	// MaxErrorLen is the longest message of one problem; a longer one
	// (quoting a huge value) is cut.
	MaxErrorLen = 512
	// MaxNumberLen is the longest number, size, rate or duration value
	// (a 2^64-1 with digit separators is under 30 characters).
	MaxNumberLen = 64
	// MaxValues is the most fields and list items decoded in one config,
	// YAML aliases counted each time they are used: 262,144 (a 4-switch
	// fabric with every port configured has about 25,000).
	MaxValues = 1 << 18
	// MaxSwitches is the most switches one fastcnpd drives.
	MaxSwitches = 256
	// MaxSubnets is the most host subnets of all ports of one switch
	// (their overlap check is quadratic).
	MaxSubnets = 1024
	// MinReplayCache and MaxReplayCache bound announce.auth.replay_cache
	// (entries of about 80 bytes: at most about 330 MB).
	MinReplayCache = 1024
	MaxReplayCache = 1 << 22
	// MaxListItems bounds the lists without a data-plane table behind
	// them (mtls.admin_names).
	MaxListItems = 4096
	// MaxPorts, MaxRoutes: the ports and routes lists of a switch, sized
	// as the data-plane tables they fill.
	MaxPorts  = p4src.NumPorts
	MaxRoutes = p4src.RouteTableSize
)

// TooLargeError is a file or input beyond its size limit (readlimit).
type TooLargeError = readlimit.TooLargeError

// FormatLimit prints a byte limit: "4 MiB", "64 KiB", "1000 bytes".
func FormatLimit(n int64) string { return readlimit.FormatLimit(n) }

// ReadFileLimited reads the file at path, refusing one larger than limit
// bytes with a *TooLargeError (what names the kind of file in it), without
// ever reading more than limit+1 bytes (readlimit.File).
func ReadFileLimited(path, what string, limit int64) ([]byte, error) {
	return readlimit.File(path, what, limit)
}

// ReadLimited reads r to its end, or fails with a *TooLargeError once more
// than limit bytes came (readlimit.Reader).
func ReadLimited(r io.Reader, name, what string, limit int64) ([]byte, error) {
	return readlimit.Reader(r, name, what, limit)
}

// IsTooLarge reports whether err is (or wraps) a *TooLargeError.
func IsTooLarge(err error) bool { return readlimit.IsTooLarge(err) }

// truncate cuts s to at most max bytes (on a rune boundary), saying how
// much was cut.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const room = 32
	cut := max - room
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes cut)", s[:cut], len(s)-cut)
}

// errHeap keeps the MaxErrors problems that come first in line order (then
// in the order found): a max-heap on (line, seq), so the one to drop when a
// problem of an earlier line comes is at the top.
type pendingErr struct {
	e   *Error
	seq int
}

type errHeap []pendingErr

func (h errHeap) Len() int { return len(h) }
func (h errHeap) Less(i, j int) bool {
	if h[i].e.Line != h[j].e.Line {
		return h[i].e.Line > h[j].e.Line
	}
	return h[i].seq > h[j].seq
}
func (h errHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *errHeap) Push(x any)   { *h = append(*h, x.(pendingErr)) }
func (h *errHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// wants reports whether a problem at line would be kept; when not, it is
// only counted, and its message is never formatted.
func (d *decoder) wants(line int) bool {
	return len(d.errs) < MaxErrors || line < d.errs[0].e.Line
}

// add records a problem (d.total counts every one).
func (d *decoder) add(e *Error) {
	seq := d.total
	d.total++
	if !d.wants(e.Line) {
		return
	}
	e.Msg = truncate(e.Msg, MaxErrorLen)
	if len(d.errs) < MaxErrors {
		heap.Push(&d.errs, pendingErr{e, seq})
		return
	}
	d.errs[0] = pendingErr{e, seq}
	heap.Fix(&d.errs, 0)
}

// err returns the kept problems in line order, joined, then a line with
// the count of the others.
func (d *decoder) err() error {
	if d.total == 0 {
		return nil
	}
	kept := append(errHeap(nil), d.errs...)
	sort.Slice(kept, func(i, j int) bool { return kept.Less(j, i) })
	errs := make([]error, 0, len(kept)+2)
	if d.stopped != nil {
		errs = append(errs, d.stopped) // why the rest was not looked at
	}
	for _, p := range kept {
		errs = append(errs, p.e)
	}
	if more := d.total - len(errs); more > 0 {
		errs = append(errs, fmt.Errorf("%s: ... and %d more errors (only the first %d are reported)", d.file, more, len(kept)))
	}
	return errors.Join(errs...)
}
