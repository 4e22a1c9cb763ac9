// Package readlimit reads files and streams up to a size limit, so that a
// wrong path (/dev/zero), a runaway generator or a hostile peer costs at
// most the limit: every file the commands read (configs, tokens, keys,
// certificates, state) goes through it.
package readlimit

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// TooLargeError is a file or input beyond its size limit.
type TooLargeError struct {
	// What is the kind of input ("config file", "state file"), Name the
	// file (or the source name of bytes).
	What, Name string
	// Size is the input's size when known (0: unknown, it was read
	// up to the limit only); Limit the limit in bytes.
	Size, Limit int64
}

// Error names the input and the limit.
func (e *TooLargeError) Error() string {
	if e.Size > 0 {
		return fmt.Sprintf("%s %s: %d bytes: larger than the limit of %s", e.What, e.Name, e.Size, FormatLimit(e.Limit))
	}
	return fmt.Sprintf("%s %s: larger than the limit of %s", e.What, e.Name, FormatLimit(e.Limit))
}

// IsTooLarge reports whether err is (or wraps) a *TooLargeError.
func IsTooLarge(err error) bool {
	var e *TooLargeError
	return errors.As(err, &e)
}

// FormatLimit prints a byte limit: "4 MiB", "64 KiB", "1000 bytes".
func FormatLimit(n int64) string {
	switch {
	case n > 0 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n > 0 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// File reads the file at path, refusing one larger than limit bytes with a
// *TooLargeError (what names the kind of file in it). It never reads more
// than limit+1 bytes, so a file that never ends (/dev/zero, a pipe) is
// refused as soon as the limit is passed.
func File(path, what string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := int64(0)
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		if fi.Size() > limit {
			return nil, &TooLargeError{What: what, Name: path, Size: fi.Size(), Limit: limit}
		}
		size = fi.Size()
	}
	return read(f, path, what, limit, size)
}

// Reader reads r to its end, or fails with a *TooLargeError once more than
// limit bytes came. It allocates at most about twice the limit.
func Reader(r io.Reader, name, what string, limit int64) ([]byte, error) {
	return read(r, name, what, limit, 0)
}

// read is Reader starting with room for hint bytes.
func read(r io.Reader, name, what string, limit, hint int64) ([]byte, error) {
	r = io.LimitReader(r, limit+1)
	buf := make([]byte, 0, min(max(hint+1, 64<<10), limit+1))
	for {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(2*int64(cap(buf)), limit+1))
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, &TooLargeError{What: what, Name: name, Limit: limit}
		}
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
