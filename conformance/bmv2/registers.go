package bmv2

import (
	"context"
	"errors"
	"fmt"

	"github.com/fastcnp/fastcnp/controller/p4rt"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
)

// RegisterAccess writes and reads register cells for the runner (register and
// expect register statements): *CLI through BMv2's Thrift CLI, P4RuntimeRegisters
// through P4Runtime on a switch that implements RegisterEntry (fastcnp-switch; BMv2
// answers UNIMPLEMENTED).
type RegisterAccess interface {
	WriteRegisters(ctx context.Context, cells []RegisterCell) error
	ReadRegisters(ctx context.Context, cells []RegisterCell) ([]uint64, error)
}

// P4RuntimeRegisters is RegisterAccess over P4Runtime: a MODIFY of a RegisterEntry
// per cell, and a read per cell.
type P4RuntimeRegisters struct {
	Client *p4rt.Client
}

// WriteRegisters writes the cells in one WriteRequest.
func (r P4RuntimeRegisters) WriteRegisters(ctx context.Context, cells []RegisterCell) error {
	info := r.Client.Info()
	if info == nil {
		return p4rt.ErrNoP4Info
	}
	ups := make([]*p4v1.Update, 0, len(cells))
	for _, c := range cells {
		e, err := info.RegisterEntry(c.Name, int64(c.Index), c.Value)
		if err != nil {
			return fmt.Errorf("bmv2: register %s[%d]: %w", c.Name, c.Index, err)
		}
		ups = append(ups, p4rt.Modify(e)...)
	}
	if err := r.Client.Write(ctx, ups); err != nil {
		return fmt.Errorf("bmv2: write registers over P4Runtime: %w", err)
	}
	return nil
}

// ReadRegisters reads the cells, one read each.
func (r P4RuntimeRegisters) ReadRegisters(ctx context.Context, cells []RegisterCell) ([]uint64, error) {
	vals := make([]uint64, len(cells))
	var errs []error
	for i, c := range cells {
		got, err := r.Client.ReadRegisters(ctx, c.Name, int64(c.Index))
		if err == nil && len(got) != 1 {
			err = fmt.Errorf("%d cells", len(got))
		}
		if err == nil {
			vals[i], err = p4rt.DecodeUint(got[0].Value)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("bmv2: read register %s[%d] over P4Runtime: %w", c.Name, c.Index, err))
		}
	}
	return vals, errors.Join(errs...)
}
