package p4rttest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/controller/p4rt/internal/p4rttest"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"google.golang.org/grpc/codes"
)

// A fake switch that refuses every table write with RESOURCE_EXHAUSTED.
func ExampleStart() {
	srv, err := p4rttest.Start("127.0.0.1:0", 1)
	if err != nil {
		panic(err)
	}
	defer srv.Stop()
	srv.FailUpdates(func(u *p4v1.Update) *p4v1.Error {
		return &p4v1.Error{CanonicalCode: int32(codes.ResourceExhausted), Message: "full"}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := p4rt.Dial(ctx, srv.Addr(), 1)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	err = c.Write(ctx, p4rt.Insert(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: 1}}}))
	fmt.Println(err)
	n, sizes := srv.WriteRequests()
	fmt.Println(n, sizes)
	// Output:
	// p4rt: write chunk 1/1 (updates 0..0 of 1) failed: Unknown; update 0: ResourceExhausted: full
	// 1 [1]
}
