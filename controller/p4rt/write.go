package p4rt

import (
	"context"
	"errors"
	"fmt"
	"io"

	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"github.com/sirupsen/logrus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Write sends updates in WriteRequests of at most the chunk size (default
// 500), one chunk after the other, keeping their order. It stops at the
// first failed chunk and returns a *WriteError saying which chunk failed,
// which of its updates failed and why (decoded from the p4.v1.Error
// details of the gRPC status), and so how many updates were applied.
// Zero updates send nothing.
func (c *Client) Write(ctx context.Context, updates []*p4v1.Update) error {
	n := len(updates)
	if n == 0 {
		return nil
	}
	size := c.cfg.chunk
	chunks := (n + size - 1) / size
	for i := 0; i < chunks; i++ {
		lo, hi := i*size, min((i+1)*size, n)
		if err := c.guard("Write"); err != nil {
			return err
		}
		req := &p4v1.WriteRequest{DeviceId: c.deviceID, Role: c.cfg.role, ElectionId: c.ElectionID().proto(),
			Updates: updates[lo:hi], Atomicity: c.cfg.atomicity}
		if _, err := c.rpc.Write(ctx, req); err != nil {
			werr := decodeWriteError(err, updates, lo, hi)
			werr.Chunks, werr.FailedChunk, werr.Total = chunks, i, n
			c.log.WithFields(logrus.Fields{"chunk": i, "chunks": chunks, "failed_updates": len(werr.Updates), "code": werr.Status.Code}).Debug("p4rt: write failed")
			return werr
		}
	}
	return nil
}

// guard runs the write guard (WithWriteGuard), if any, before op.
func (c *Client) guard(op string) error {
	if c.cfg.writeGuard == nil {
		return nil
	}
	if err := c.cfg.writeGuard(); err != nil {
		return fmt.Errorf("p4rt: %s not sent: %w", op, err)
	}
	return nil
}

// decodeWriteError reads the per-update p4.v1.Error details of a failed
// Write. The spec: the status code is UNKNOWN and details holds one
// p4.v1.Error per update, in order, OK ones included. Details that do not
// line up with the updates are still reported, with Index -1.
func decodeWriteError(err error, updates []*p4v1.Update, lo, hi int) *WriteError {
	we := &WriteError{ChunkStart: lo, ChunkLen: hi - lo}
	st, ok := status.FromError(err)
	if !ok {
		we.Status = &RPCError{Op: "Write", Code: codes.Unknown, Message: err.Error()}
		return we
	}
	we.Status = &RPCError{Op: "Write", Code: st.Code(), Message: st.Message()}
	details := st.Proto().GetDetails()
	aligned := len(details) == hi-lo
	for i, d := range details {
		pe := &p4v1.Error{}
		if d.UnmarshalTo(pe) != nil {
			continue
		}
		if codes.Code(pe.CanonicalCode) == codes.OK {
			continue
		}
		ue := UpdateError{Index: -1, Code: codes.Code(pe.CanonicalCode), Message: pe.Message, Space: pe.Space, SpaceCode: pe.Code}
		if aligned {
			ue.Index, ue.Update = lo+i, updates[lo+i]
		}
		we.Updates = append(we.Updates, ue)
	}
	return we
}

// ReadStream reads the given entities (wildcards allowed: see the Read*
// methods of Info) and calls fn for every entity the server returns, as
// they stream in. An error from fn stops the read and is returned.
// UNIMPLEMENTED from the server satisfies errors.Is(err, ErrUnimplemented).
func (c *Client) ReadStream(ctx context.Context, fn func(*p4v1.Entity) error, entities ...*p4v1.Entity) error {
	if len(entities) == 0 {
		return nil
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the server stream if fn stops early
	s, err := c.rpc.Read(rctx, &p4v1.ReadRequest{DeviceId: c.deviceID, Role: c.cfg.role, Entities: entities})
	if err != nil {
		return rpcError("Read", err)
	}
	for {
		resp, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return rpcError("Read", err)
		}
		for _, e := range resp.Entities {
			if err := fn(e); err != nil {
				return fmt.Errorf("p4rt: read callback: %w", err)
			}
		}
	}
}

// Read reads the given entities and returns all of them.
func (c *Client) Read(ctx context.Context, entities ...*p4v1.Entity) ([]*p4v1.Entity, error) {
	var out []*p4v1.Entity
	err := c.ReadStream(ctx, func(e *p4v1.Entity) error {
		out = append(out, e)
		return nil
	}, entities...)
	return out, err
}

// ReadTableEntries reads a table ("" for all tables) and decodes the
// entries by name with the client's P4Info.
func (c *Client) ReadTableEntries(ctx context.Context, table string) ([]*DecodedTableEntry, error) {
	in := c.info.Load()
	if in == nil {
		return nil, ErrNoP4Info
	}
	e, err := in.ReadTable(table)
	if err != nil {
		return nil, err
	}
	var out []*DecodedTableEntry
	err = c.ReadStream(ctx, func(e *p4v1.Entity) error {
		te := e.GetTableEntry()
		if te == nil {
			return fmt.Errorf("p4rt: asked for table entries, got %T: %w", e.GetEntity(), ErrInvalidValue)
		}
		d, err := in.DecodeTableEntry(te)
		if err != nil {
			return err
		}
		out = append(out, d)
		return nil
	}, e)
	return out, err
}

// CounterCell is one decoded counter cell.
type CounterCell struct {
	Counter string
	Index   int64
	Bytes   int64
	Packets int64
}

// ReadCounters reads a counter ("" for all) at index (or AllIndexes) and
// decodes the cells by name.
func (c *Client) ReadCounters(ctx context.Context, counter string, index int64) ([]CounterCell, error) {
	in := c.info.Load()
	if in == nil {
		return nil, ErrNoP4Info
	}
	f, err := in.ReadCounter(counter, index)
	if err != nil {
		return nil, err
	}
	var out []CounterCell
	err = c.ReadStream(ctx, func(e *p4v1.Entity) error {
		ce := e.GetCounterEntry()
		if ce == nil {
			return fmt.Errorf("p4rt: asked for counter cells, got %T: %w", e.GetEntity(), ErrInvalidValue)
		}
		out = append(out, CounterCell{Counter: in.CounterName(ce.CounterId), Index: ce.GetIndex().GetIndex(),
			Bytes: ce.GetData().GetByteCount(), Packets: ce.GetData().GetPacketCount()})
		return nil
	}, f)
	return out, err
}

// RegisterCell is one decoded register cell (bit<W> registers).
type RegisterCell struct {
	Register string
	Index    int64
	Value    []byte // canonical bytestring
}

// ReadRegisters reads a register ("" for all) at index (or AllIndexes).
// BMv2 answers UNIMPLEMENTED: errors.Is(err, ErrUnimplemented).
func (c *Client) ReadRegisters(ctx context.Context, register string, index int64) ([]RegisterCell, error) {
	in := c.info.Load()
	if in == nil {
		return nil, ErrNoP4Info
	}
	f, err := in.ReadRegister(register, index)
	if err != nil {
		return nil, err
	}
	var out []RegisterCell
	err = c.ReadStream(ctx, func(e *p4v1.Entity) error {
		re := e.GetRegisterEntry()
		if re == nil {
			return fmt.Errorf("p4rt: asked for register cells, got %T: %w", e.GetEntity(), ErrInvalidValue)
		}
		bs, ok := re.GetData().GetData().(*p4v1.P4Data_Bitstring)
		if !ok {
			return fmt.Errorf("p4rt: register %s[%d]: data %T is not a bitstring: %w",
				in.RegisterName(re.RegisterId), re.GetIndex().GetIndex(), re.GetData().GetData(), ErrInvalidValue)
		}
		out = append(out, RegisterCell{Register: in.RegisterName(re.RegisterId), Index: re.GetIndex().GetIndex(), Value: Canonical(bs.Bitstring)})
		return nil
	}, f)
	return out, err
}
