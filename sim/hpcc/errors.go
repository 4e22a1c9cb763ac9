package hpcc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MaxLineBytes bounds one line of any input file (a topology's switch list is
// the longest line in practice: 56 IDs in fat.txt).
const MaxLineBytes = 16 << 20

// Error is a problem at a place in an input file. Line is 1-based; 0 means
// the file as a whole (for example a record count that does not match).
type Error struct {
	File string
	Line int
	Msg  string
	Err  error // the underlying error, if any
}

func (e *Error) Error() string {
	where := e.File
	if where == "" {
		where = "<input>"
	}
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d", where, e.Line)
	}
	if e.Err != nil && e.Err != ErrSyntax {
		return fmt.Sprintf("%s: %s: %v", where, e.Msg, e.Err)
	}
	return where + ": " + e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// ErrSyntax is wrapped by every Error that reports malformed text (as
// opposed to a read failure of the underlying reader).
var ErrSyntax = errors.New("malformed input")

// lineReader yields the non-blank lines of a file, split into fields, with
// their line numbers.
type lineReader struct {
	name string
	sc   *bufio.Scanner
	line int
	eof  bool
}

func newLineReader(name string, r io.Reader) *lineReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	return &lineReader{name: name, sc: sc}
}

// next returns the fields of the next non-blank line; ok is false at the end
// of the input. err reports a read failure or an over-long line.
func (lr *lineReader) next() (fields []string, ok bool, err error) {
	for lr.sc.Scan() {
		lr.line++
		f := strings.Fields(lr.sc.Text())
		if len(f) > 0 {
			return f, true, nil
		}
	}
	lr.eof = true
	if err := lr.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, false, &Error{File: lr.name, Line: lr.line + 1, Msg: fmt.Sprintf("line longer than %d bytes", MaxLineBytes), Err: ErrSyntax}
		}
		return nil, false, &Error{File: lr.name, Line: lr.line + 1, Msg: "read", Err: err}
	}
	return nil, false, nil
}

// errf reports a syntax error on the current line.
func (lr *lineReader) errf(format string, a ...any) error {
	line := lr.line
	if lr.eof {
		line = 0
	}
	return &Error{File: lr.name, Line: line, Msg: fmt.Sprintf(format, a...), Err: ErrSyntax}
}

// each calls fn with the fields of every remaining non-blank line and stops
// at the first error.
func (lr *lineReader) each(fn func(f []string) error) error {
	for {
		f, ok, err := lr.next()
		if err != nil || !ok {
			return err
		}
		if err := fn(f); err != nil {
			return err
		}
	}
}

// parseRecords reads a file of one record per line; parse's errors are
// reported at their line.
func parseRecords[T any](name string, r io.Reader, parse func(f []string) (T, error)) ([]T, error) {
	lr := newLineReader(name, r)
	var out []T
	err := lr.each(func(f []string) error {
		rec, err := parse(f)
		if err != nil {
			return lr.errf("%v", err)
		}
		out = append(out, rec)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// writeRecords writes one line per record, made by appendRec.
func writeRecords[T any](w io.Writer, what string, recs []T, appendRec func([]byte, T) []byte) error {
	bw := bufio.NewWriter(w)
	buf := make([]byte, 0, 128)
	for _, r := range recs {
		buf = appendRec(buf[:0], r)
		bw.Write(buf)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("hpcc: write %s: %w", what, err)
	}
	return nil
}
