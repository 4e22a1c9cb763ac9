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

// countEntries reads every entry of a table from the P4Runtime server at
// addr inside ns (a Read needs no arbitration) and returns how many there
// are.
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
	dial := func(ctx context.Context, a string) (net.Conn, error) {
		var c net.Conn
		err := ns.Do(func() error {
			var d net.Dialer
			var err error
			c, err = d.DialContext(ctx, "tcp", a)
			return err
		})
		return c, err
	}
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(dial))
	if err != nil {
		return 0, fmt.Errorf("testbed: P4Runtime %s: %w", addr, err)
	}
	defer conn.Close()
	stream, err := p4v1.NewP4RuntimeClient(conn).Read(ctx, &p4v1.ReadRequest{DeviceId: deviceID,
		Entities: []*p4v1.Entity{{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: id}}}}})
	if err != nil {
		return 0, fmt.Errorf("testbed: read %s on %s: %w", table, addr, err)
	}
	n := 0
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("testbed: read %s on %s: %w", table, addr, err)
		}
		n += len(resp.GetEntities())
	}
}

func jsonIndent(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("testbed: json: %w", err)
	}
	return append(b, '\n'), nil
}
