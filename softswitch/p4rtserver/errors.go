package p4rtserver

import (
	"errors"
	"fmt"

	"github.com/fastcnp/fastcnp/model/pipeline"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// codedError is an error with the gRPC canonical code the server reports for it.
type codedError struct {
	code codes.Code
	msg  string
	err  error
}

func (e *codedError) Error() string {
	if e.err != nil {
		return e.msg + ": " + e.err.Error()
	}
	return e.msg
}

func (e *codedError) Unwrap() error { return e.err }

// GRPCStatus lets status.FromError / status.Code see the code.
func (e *codedError) GRPCStatus() *status.Status { return status.New(e.code, e.Error()) }

func errorf(code codes.Code, format string, args ...any) error {
	return &codedError{code: code, msg: fmt.Sprintf(format, args...)}
}

// pipelineCode maps the pipeline's error classes to gRPC codes.
func pipelineCode(err error) codes.Code {
	switch {
	case errors.Is(err, pipeline.ErrInvalidArgument):
		return codes.InvalidArgument
	case errors.Is(err, pipeline.ErrAlreadyExists):
		return codes.AlreadyExists
	case errors.Is(err, pipeline.ErrNotFound):
		return codes.NotFound
	case errors.Is(err, pipeline.ErrResourceExhausted):
		return codes.ResourceExhausted
	case errors.Is(err, pipeline.ErrPermissionDenied):
		return codes.PermissionDenied
	case errors.Is(err, pipeline.ErrFailedPrecondition):
		return codes.FailedPrecondition
	}
	return codes.Internal
}

// wrapPipeline turns a pipeline error into a coded error (nil stays nil).
func wrapPipeline(err error) error {
	if err == nil {
		return nil
	}
	var ce *codedError
	if errors.As(err, &ce) {
		return err
	}
	return &codedError{code: pipelineCode(err), msg: "pipeline", err: err}
}

// codeOf returns the gRPC code of any error (Internal when it has none).
func codeOf(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	var ce *codedError
	if errors.As(err, &ce) {
		return ce.code
	}
	if st, ok := status.FromError(err); ok {
		return st.Code()
	}
	return codes.Internal
}

// toStatus converts an error into a gRPC status error for an RPC's return value.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	return status.Error(codeOf(err), err.Error())
}
