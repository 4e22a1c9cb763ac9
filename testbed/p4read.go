package testbed

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/internal/netns"
	"github.com/fastcnp/fastcnp/p4src"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
)

// Tables the harness reads to see that fastcnpd has programmed a switch.
const (
	tableIPv4Route      = "FastcnpIngress.ipv4_route"
	tableRDMAConnection = "FastcnpIngress.rdma_connection"
)

// nsDialer returns a TCP dialer whose sockets are opened inside ns (a
// socket keeps the namespace it was created in).
func nsDialer(ns *netns.NS) func(context.Context, string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		var c net.Conn
		err := ns.Do(func() error {
			var d net.Dialer
			var err error
			c, err = d.DialContext(ctx, "tcp", addr)
			return err
		})
		return c, err
	}
}

// grpcConn is a plaintext gRPC client of the server at addr inside ns (a
// switch's P4Runtime server, fastcnpd's API).
func grpcConn(ns *netns.NS, addr string) (*grpc.ClientConn, error) {
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(nsDialer(ns)))
	if err != nil {
		return nil, fmt.Errorf("testbed: gRPC %s: %w", addr, err)
	}
	return conn, nil
}

// readEntities runs one P4Runtime Read (no arbitration needed) and calls
// fn with every entity.
func readEntities(ctx context.Context, ns *netns.NS, addr string, deviceID uint64, what string, e *p4v1.Entity, fn func(*p4v1.Entity)) error {
	conn, err := grpcConn(ns, addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	stream, err := p4v1.NewP4RuntimeClient(conn).Read(ctx, &p4v1.ReadRequest{DeviceId: deviceID, Entities: []*p4v1.Entity{e}})
	if err != nil {
		return fmt.Errorf("testbed: read %s on %s: %w", what, addr, err)
	}
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("testbed: read %s on %s: %w", what, addr, err)
		}
		for _, x := range resp.GetEntities() {
			fn(x)
		}
	}
}

// countEntries reads every entry of a table from the P4Runtime server at
// addr inside ns and returns how many there are.
func countEntries(ctx context.Context, ns *netns.NS, addr string, deviceID uint64, table string) (int, error) {
	pi, err := p4src.P4Info()
	if err != nil {
		return 0, fmt.Errorf("testbed: P4Info: %w", err)
	}
	info, err := p4rt.NewInfo(pi)
	if err != nil {
		return 0, fmt.Errorf("testbed: P4Info: %w", err)
	}
	id, err := info.TableID(table)
	if err != nil {
		return 0, fmt.Errorf("testbed: %w", err)
	}
	n := 0
	err = readEntities(ctx, ns, addr, deviceID, table,
		&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: id}}},
		func(*p4v1.Entity) { n++ })
	return n, err
}

// readRegister reads every cell of a register (fastcnp-switch serves
// registers over P4Runtime) and returns the cells by index.
func readRegister(ctx context.Context, ns *netns.NS, addr string, deviceID uint64, id uint32, size int) ([]uint64, error) {
	out := make([]uint64, size)
	var bad error
	err := readEntities(ctx, ns, addr, deviceID, fmt.Sprintf("register %#x", id),
		&p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{RegisterId: id}}},
		func(e *p4v1.Entity) {
			r := e.GetRegisterEntry()
			i := r.GetIndex().GetIndex()
			v, err := p4rt.DecodeUint(r.GetData().GetBitstring())
			if err != nil || i < 0 || i >= int64(size) {
				bad = fmt.Errorf("testbed: register %#x cell %d: %v", id, i, err)
				return
			}
			out[i] = v
		})
	if err == nil {
		err = bad
	}
	return out, err
}

// incSlotUse reads a switch's aggregation slots: those that hold or held
// an aggregation (done, or a non-empty bitmap), and those stuck with an
// unfinished one (a non-empty bitmap, not done).
func incSlotUse(ctx context.Context, ns *netns.NS, addr string, deviceID uint64) (used, stuck int, err error) {
	done, err := readRegister(ctx, ns, addr, deviceID, p4src.RegIncSlotDone, p4src.IncSlots)
	if err != nil {
		return 0, 0, err
	}
	bitmap, err := readRegister(ctx, ns, addr, deviceID, p4src.RegIncSlotBitmap, p4src.IncSlots)
	if err != nil {
		return 0, 0, err
	}
	for i := range done {
		if done[i] != 0 || bitmap[i] != 0 {
			used++
		}
		if bitmap[i] != 0 && done[i] == 0 {
			stuck++
		}
	}
	return used, stuck, nil
}

func jsonIndent(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("testbed: json: %w", err)
	}
	return append(b, '\n'), nil
}
