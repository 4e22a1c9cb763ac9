package p4rtserver

import (
	"context"
	"fmt"
	"sync"

	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
)

// PacketIn is a packet the data plane sends to the controller (the pipeline's
// VerdictToCPU): the frame and its packet_in header values.
type PacketIn struct {
	Payload []byte
	Meta    pipeline.PacketIn
}

// DataPlane is what the server drives: the pipeline (under the data plane's own
// serialisation), a packet-out sink and a packet-in source. The switch runtime
// implements it around its pipeline and ports; LocalDataPlane implements it without
// ports. Digests need nothing extra: they wait in the pipeline's digest queues, which
// the server polls through Exec at Now().
type DataPlane interface {
	// Exec runs fn with exclusive use of the pipeline (the data path does not run the
	// pipeline meanwhile) and returns fn's error.
	Exec(ctx context.Context, fn func(p *pipeline.Pipeline) error) error
	// Now is the data plane's clock in ns: the time base the pipeline runs on.
	Now() int64
	// PacketOut hands the data path a frame from the controller, as the P4 program
	// receives it from CPU_PORT: the packet_out header (encoded by the server from the
	// P4Info's controller_packet_metadata) followed by the payload. The frame is the
	// data plane's to keep.
	PacketOut(ctx context.Context, frame []byte) error
	// PacketIns is the stream of packets for the controller; nil if there are none.
	PacketIns() <-chan PacketIn
}

// LocalOptions configures NewLocalDataPlane.
type LocalOptions struct {
	// Clock is the data plane's time in ns (default: a counter that advances by 1 ms
	// per call, enough for digest timeouts in tests).
	Clock func() int64
	// Forward receives every frame the pipeline forwards (egress port, frame copy):
	// one call per replica for a frame sent to a multicast group.
	Forward func(port uint16, frame []byte)
	// PacketInQueue is the capacity of the packet-in channel (default 256); packets
	// beyond it are dropped.
	PacketInQueue int
}

// LocalDataPlane is a DataPlane around a pipeline without ports: a mutex serialises
// the pipeline, packet-outs go through the pipeline's ingress on CPU_PORT and the
// forwarded frames to a callback, and Receive injects frames as if received on a port.
// Tests and tools use it; the switch runtime has its own.
type LocalDataPlane struct {
	mu      sync.Mutex
	p       *pipeline.Pipeline
	opts    LocalOptions
	ticks   int64
	in      chan PacketIn
	res     pipeline.IngressResult
	dropped uint64
}

// NewLocalDataPlane wraps p.
func NewLocalDataPlane(p *pipeline.Pipeline, opts LocalOptions) *LocalDataPlane {
	if opts.PacketInQueue <= 0 {
		opts.PacketInQueue = 256
	}
	return &LocalDataPlane{p: p, opts: opts, in: make(chan PacketIn, opts.PacketInQueue)}
}

// Exec implements DataPlane.
func (d *LocalDataPlane) Exec(ctx context.Context, fn func(p *pipeline.Pipeline) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("local data plane: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return fn(d.p)
}

// Now implements DataPlane.
func (d *LocalDataPlane) Now() int64 {
	if d.opts.Clock != nil {
		return d.opts.Clock()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ticks += 1_000_000
	return d.ticks
}

// PacketIns implements DataPlane.
func (d *LocalDataPlane) PacketIns() <-chan PacketIn { return d.in }

// PacketOut implements DataPlane: the frame runs through ingress on CPU_PORT.
func (d *LocalDataPlane) PacketOut(ctx context.Context, frame []byte) error {
	return d.Receive(ctx, frame, p4src.CPUPort)
}

// PacketInDrops returns how many packet-ins were dropped because the channel was full.
func (d *LocalDataPlane) PacketInDrops() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dropped
}

// Receive runs a frame through the pipeline's ingress as received on port at Now():
// forwarded frames (each replica of a multicast) go to Options.Forward, packets for
// the CPU to PacketIns.
func (d *LocalDataPlane) Receive(ctx context.Context, frame []byte, port uint16) error {
	now := d.Now()
	type out struct {
		port  uint16
		frame []byte
	}
	var fwd []out
	var pin *PacketIn
	err := d.Exec(ctx, func(p *pipeline.Pipeline) error {
		if err := p.Ingress(frame, port, now, &d.res); err != nil {
			return fmt.Errorf("ingress on port %d: %w", port, err)
		}
		switch d.res.Verdict {
		case pipeline.VerdictForward:
			fwd = append(fwd, out{d.res.EgressPort, append([]byte(nil), d.res.Frame...)})
		case pipeline.VerdictMulticast:
			for _, r := range d.res.Replicas {
				fwd = append(fwd, out{r.Port, append([]byte(nil), d.res.Frame...)})
			}
		case pipeline.VerdictToCPU:
			pin = &PacketIn{Payload: append([]byte(nil), d.res.Frame...), Meta: d.res.PacketIn}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if d.opts.Forward != nil {
		for _, f := range fwd {
			d.opts.Forward(f.port, f.frame)
		}
	}
	if pin != nil {
		select {
		case d.in <- *pin:
		default:
			d.mu.Lock()
			d.dropped++
			d.mu.Unlock()
		}
	}
	return nil
}
