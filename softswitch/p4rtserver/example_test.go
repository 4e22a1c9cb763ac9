package p4rtserver_test

import (
	"context"
	"fmt"
	"net"

	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/softswitch/p4rtserver"
)

// The switch runtime builds the server around its data plane; here a pipeline
// without ports.
func Example() {
	dp := p4rtserver.NewLocalDataPlane(pipeline.New(pipeline.Options{}), p4rtserver.LocalOptions{
		Forward: func(port uint16, frame []byte) { /* to the port's queue */ },
	})
	srv, err := p4rtserver.New(p4rtserver.Options{DeviceID: 1, DataPlane: dp})
	if err != nil {
		fmt.Println(err)
		return
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	// ... controllers connect to lis.Addr() ...
	cancel()
	fmt.Println("served:", <-done)
	// Output: served: <nil>
}
