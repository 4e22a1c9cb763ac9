//go:build linux

package afpacket_test

import (
	"context"
	"log"

	"github.com/fastcnp/fastcnp/afpacket"
	"github.com/fastcnp/fastcnp/internal/netns"
)

// Open a port inside a namespace and forward every frame back out of it
// until ctx ends (a one-port "switch").
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns, err := netns.Open("fcnp-example")
	if err != nil {
		log.Fatal(err)
	}
	var p *afpacket.Port
	if err := ns.Do(func() error {
		var err error
		p, err = afpacket.Open("eth0", afpacket.Options{DisableOffloads: true})
		return err
	}); err != nil {
		log.Fatal(err)
	}
	defer p.Close()

	msgs := p.NewBatch(p.BatchSize())
	frames := make([][]byte, 0, len(msgs))
	for {
		n, err := p.ReadBatch(ctx, msgs)
		if err != nil {
			log.Print(err) // ctx.Err() or port.ErrClosed
			return
		}
		frames = frames[:0]
		for _, m := range msgs[:n] {
			frames = append(frames, m.Buf[:m.N])
		}
		if _, err := p.WriteBatch(ctx, frames); err != nil {
			log.Print(err)
			return
		}
	}
}
