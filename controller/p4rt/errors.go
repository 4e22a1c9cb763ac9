package p4rt

import (
	"errors"
	"fmt"
	"strings"

	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Sentinel errors. Test for them with errors.Is; the concrete errors carry
// the details.
var (
	// ErrUnknownName: a P4Info name that names no object of the asked kind.
	ErrUnknownName = errors.New("unknown P4Info name")
	// ErrAmbiguousName: an alias that matches more than one object.
	ErrAmbiguousName = errors.New("ambiguous P4Info name")
	// ErrValueTooWide: a value that does not fit its declared bitwidth.
	ErrValueTooWide = errors.New("value too wide for its bitwidth")
	// ErrInvalidValue: a value that cannot be encoded (bad type, negative,
	// ternary value outside its mask, bad prefix length...).
	ErrInvalidValue = errors.New("invalid value")
	// ErrUnimplemented: the server answered UNIMPLEMENTED (BMv2 does so for
	// register reads and writes).
	ErrUnimplemented = errors.New("not implemented by the P4Runtime server")
	// ErrPermissionDenied: the server refused the request because this
	// client is not the primary for its role.
	ErrPermissionDenied = errors.New("permission denied by the P4Runtime server")
	// ErrNotConnected: no stream channel is up right now (the client is
	// reconnecting).
	ErrNotConnected = errors.New("p4rt: stream channel not connected")
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("p4rt: client closed")
	// ErrNoP4Info: the operation needs a P4Info and the client has none.
	ErrNoP4Info = errors.New("p4rt: no P4Info (use WithInfo or SetPipeline)")
)

// RPCError is a failed P4Runtime RPC: which operation and the gRPC status.
// errors.Is maps UNIMPLEMENTED to ErrUnimplemented and PERMISSION_DENIED to
// ErrPermissionDenied.
type RPCError struct {
	Op      string
	Code    codes.Code
	Message string
}

// Error formats the operation and the gRPC status.
func (e *RPCError) Error() string {
	return fmt.Sprintf("p4rt: %s: %s: %s", e.Op, e.Code, e.Message)
}

// codeSentinels maps the sentinel errors that stand for a gRPC status code
// to that code, for the Is methods of RPCError and WriteError.
var codeSentinels = map[error]codes.Code{
	ErrUnimplemented:    codes.Unimplemented,
	ErrPermissionDenied: codes.PermissionDenied,
}

// Is reports whether target is the sentinel for e.Code.
func (e *RPCError) Is(target error) bool {
	c, ok := codeSentinels[target]
	return ok && e.Code == c
}

// GRPCStatus lets status.FromError and status.Code see the original code.
func (e *RPCError) GRPCStatus() *status.Status { return status.New(e.Code, e.Message) }

func rpcError(op string, err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("p4rt: %s: %w", op, err)
	}
	return &RPCError{Op: op, Code: st.Code(), Message: st.Message()}
}

// NameError reports an unknown or ambiguous P4Info name. Scope is the
// enclosing object for per-object names (the table of a match field).
type NameError struct {
	Kind        string   // "table", "match field", "action param", ...
	Name        string   // the name as given
	Scope       string   // enclosing object, "" for top-level kinds
	Suggestions []string // close matches (unknown) or candidates (ambiguous)
	Ambiguous   bool
}

// Error names the kind, the name and the suggestions.
func (e *NameError) Error() string {
	var b strings.Builder
	b.WriteString("p4rt: ")
	if e.Ambiguous {
		b.WriteString("ambiguous ")
	} else {
		b.WriteString("unknown ")
	}
	fmt.Fprintf(&b, "%s %q", e.Kind, e.Name)
	if e.Scope != "" {
		fmt.Fprintf(&b, " in %s", e.Scope)
	}
	if len(e.Suggestions) > 0 {
		if e.Ambiguous {
			b.WriteString(": matches ")
		} else {
			b.WriteString(": did you mean ")
		}
		b.WriteString(strings.Join(e.Suggestions, ", "))
	}
	return b.String()
}

// Is matches ErrUnknownName or ErrAmbiguousName.
func (e *NameError) Is(target error) bool {
	if e.Ambiguous {
		return target == ErrAmbiguousName
	}
	return target == ErrUnknownName
}

// UpdateError is the outcome of one failed update of a Write.
type UpdateError struct {
	Index     int          // position in the slice given to Write
	Update    *p4v1.Update // the update itself
	Code      codes.Code   // canonical gRPC code from p4.v1.Error
	Message   string
	Space     string // target-specific error space, if any
	SpaceCode int32
}

// String formats the update index, code and message.
func (u UpdateError) String() string {
	return fmt.Sprintf("update %d: %s: %s", u.Index, u.Code, u.Message)
}

// WriteError is returned by Client.Write when a WriteRequest failed.
// Updates before FailedChunk were all applied; in the failed chunk, the
// updates not listed in Updates were applied too (the server's default
// atomicity is CONTINUE_ON_ERROR), unless Status says the whole request was
// refused (for example PERMISSION_DENIED); chunks after it were not sent.
type WriteError struct {
	Status      *RPCError     // the RPC's top-level status
	Updates     []UpdateError // failed updates, in request order
	Total       int           // updates given to Write
	Chunks      int           // chunks the write was split into
	FailedChunk int           // index of the chunk that failed
	ChunkStart  int           // index of the failed chunk's first update
	ChunkLen    int           // updates in the failed chunk
}

// Applied is the number of updates known to be applied: those of the chunks
// before the failed one, plus the failed chunk's updates that reported OK
// (only when the server sent per-update details).
func (e *WriteError) Applied() int {
	n := e.ChunkStart
	if len(e.Updates) > 0 {
		n += e.ChunkLen - len(e.Updates)
	}
	return n
}

// Error summarises the failed chunk and its first failed updates.
func (e *WriteError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "p4rt: write chunk %d/%d (updates %d..%d of %d) failed: %s",
		e.FailedChunk+1, e.Chunks, e.ChunkStart, e.ChunkStart+e.ChunkLen-1, e.Total, e.Status.Code)
	if len(e.Updates) == 0 {
		fmt.Fprintf(&b, ": %s", e.Status.Message)
	}
	for i, u := range e.Updates {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", len(e.Updates)-3)
			break
		}
		b.WriteString("; ")
		b.WriteString(u.String())
	}
	return b.String()
}

// Is matches a code sentinel (ErrUnimplemented, ErrPermissionDenied) when
// every failed update of the chunk carries that code. A batch failure's
// top-level status is UNKNOWN (the spec), so this is how a refused register
// write on BMv2 satisfies errors.Is(err, ErrUnimplemented), alone or in a
// batch; a batch whose failures have different codes matches none, and the
// caller looks at Updates. A request refused as a whole (PERMISSION_DENIED
// for a backup) has no per-update errors and matches through Unwrap.
func (e *WriteError) Is(target error) bool {
	c, ok := codeSentinels[target]
	if !ok || len(e.Updates) == 0 {
		return false
	}
	for _, u := range e.Updates {
		if u.Code != c {
			return false
		}
	}
	return true
}

// Unwrap exposes the RPC status, so errors.Is(err, ErrPermissionDenied) works
// for a request refused as a whole.
func (e *WriteError) Unwrap() error { return e.Status }
