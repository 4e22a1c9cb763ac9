package p4rt_test

import (
	"context"
	"fmt"
	"net"
	"testing"

	"github.com/fastcnp/fastcnp/controller/p4rt"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
)

// BenchmarkWrite measures updates per second through Client.Write to the
// in-process fake over loopback gRPC, batched and one update per
// WriteRequest. One benchmark op is one update, so allocs/op is
// allocations per update (client and in-process server together).
func BenchmarkWrite(b *testing.B) {
	in := testInfo(b)
	mac, _ := net.ParseMAC("02:00:00:00:00:01")
	const pool = 4096
	ups := make([]*p4v1.Update, pool)
	for i := range ups {
		e, err := in.TableEntry("ipv4_route").Match(p4rt.LPM("dst_addr", uint32(i)<<8, 24)).
			Action("set_nexthop", p4rt.P("port", i%512), p4rt.P("dmac", mac)).Entity()
		if err != nil {
			b.Fatal(err)
		}
		ups[i] = p4rt.Insert(e)[0]
	}
	for _, batch := range []int{1, 500} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s := startServer(b)
			s.Discard(true)
			s.RecordOrder(false)
			c := dial(b, s.Addr(), p4rt.WithChunkSize(batch))
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; {
				n := min(b.N-done, pool)
				if err := c.Write(ctx, ups[:n]); err != nil {
					b.Fatal(err)
				}
				done += n
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "updates/s")
		})
	}
}

// BenchmarkBuildTableEntry measures building and encoding one LPM entry
// with a two-parameter action by name.
func BenchmarkBuildTableEntry(b *testing.B) {
	in := testInfo(b)
	mac, _ := net.ParseMAC("02:00:00:00:00:01")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := in.TableEntry("ipv4_route").Match(p4rt.LPM("dst_addr", uint32(i)<<8, 24)).
			Action("set_nexthop", p4rt.P("port", i%512), p4rt.P("dmac", mac)).Entity(); err != nil {
			b.Fatal(err)
		}
	}
}
