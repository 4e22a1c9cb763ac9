package pipeline

import "errors"

// Error classes of the control-plane API. Every error returned wraps exactly one of
// them (test with errors.Is), so that a P4Runtime server maps them to gRPC codes:
// INVALID_ARGUMENT, ALREADY_EXISTS, NOT_FOUND, RESOURCE_EXHAUSTED, PERMISSION_DENIED,
// FAILED_PRECONDITION.
var (
	// ErrInvalidArgument: unknown ID, wrong match kind, value wider than its field,
	// non-canonical ternary/LPM value, missing or repeated field or parameter.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrAlreadyExists: an entry with the same match key (and priority) exists, or
	// a value set member is given twice.
	ErrAlreadyExists = errors.New("already exists")
	// ErrNotFound: no entry with that match key, or no such digest list.
	ErrNotFound = errors.New("not found")
	// ErrResourceExhausted: the table (or value set, or action profile) is full, or a
	// group max_size is above what the target supports.
	ErrResourceExhausted = errors.New("resource exhausted")
	// ErrPermissionDenied: the default action of a table whose default is const.
	ErrPermissionDenied = errors.New("permission denied")
	// ErrFailedPrecondition: an action profile member or group still in use (by a
	// group or a table entry) cannot be deleted.
	ErrFailedPrecondition = errors.New("failed precondition")
)
