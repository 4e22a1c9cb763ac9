package softswitch

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/fastcnp/fastcnp/afpacket"
	"github.com/fastcnp/fastcnp/model/tm"
	"github.com/fastcnp/fastcnp/p4src"
)

// Defaults of Config.
const (
	// DefaultRateBps is the port rate when neither the port nor Config sets one.
	DefaultRateBps int64 = 1_000_000_000
	// DefaultBufferBytes is the switch buffer (headroom reservations + shared pool).
	DefaultBufferBytes int64 = 4 << 20
	// DefaultLossless is the lossless priority mask: priority 3 (the RoCE set-up of
	// docs/dataplane.md, DSCP 26 -> priority 3).
	DefaultLossless uint8 = 1 << 3
	// DefaultPacketInQueue is the capacity of the packet-in channel: a burst of
	// 10,000 announcements fits (docs/performance.md, "Announcement bursts").
	DefaultPacketInQueue = 16384
	// DefaultDigestPollInterval is how often the P4Runtime server polls digests.
	DefaultDigestPollInterval = time.Millisecond
	// cpuTMPortRate is the rate of the TM's internal CPU port (packet-outs enter the
	// buffer through it; nothing leaves through it).
	cpuTMPortRate int64 = 10_000_000_000
	// fcsBytes is added to every frame's TM length: AF_PACKET frames come without FCS.
	fcsBytes = 4
	// minWireFrame is the shortest Ethernet frame without FCS (veth does not pad).
	minWireFrame = 60
)

// ErrConfig reports an invalid Config.
var ErrConfig = errors.New("softswitch: invalid config")

// Link is what the switch needs of a port: *afpacket.Port implements it. Tests and
// tools may substitute other implementations through PortConfig.Open.
type Link interface {
	// ReadBatch blocks until frames arrive and fills msgs[:n] (see afpacket.Port).
	ReadBatch(ctx context.Context, msgs []afpacket.Message) (int, error)
	// WriteBatch sends frames in order.
	WriteBatch(ctx context.Context, frames [][]byte) (int, error)
	// MaxFrameLen is the longest frame the link carries (buffers are this long).
	MaxFrameLen() int
	// Close ends the link; a blocked ReadBatch returns.
	Close() error
}

// PortConfig is one data-plane port.
type PortConfig struct {
	// Num is the P4 port number (0..511, not the CPU port): the -i NUM@IFNAME number.
	Num uint16
	// Ifname is the Linux interface, opened with port.Open in the namespace of the
	// goroutine that calls New.
	Ifname string
	// RateBps is the link rate the egress is shaped to (0 = Config.DefaultRateBps).
	RateBps int64
	// Open, when set, opens the link instead of port.Open(Ifname) and returns it
	// with the MAC address the switch sends PFC frames from.
	Open func() (Link, net.HardwareAddr, error)
	// HeadroomBytes overrides the computed PFC headroom of this ingress port (0 = the
	// TM's formula).
	HeadroomBytes int64
}

// Config configures New.
type Config struct {
	// DeviceID is the P4Runtime device ID (non-zero).
	DeviceID uint64
	// Ports are the data-plane ports (at least one).
	Ports []PortConfig
	// CPUPort is the P4 program's CPU_PORT; it must be pipeline.CPUPort (255), the
	// value compiled into the program (0 = 255).
	CPUPort uint16
	// DefaultRateBps is the rate of ports without their own (0 = DefaultRateBps).
	DefaultRateBps int64
	// LinkDelay is the one-way propagation delay of every link, applied to departures
	// (and PFC frames) before they are written, and used to size PFC headroom.
	LinkDelay time.Duration
	// TM is the traffic manager template: BufferBytes, Lossless, Threshold, Alpha,
	// XoffBytes, XonBytes, ResumeOffsetBytes, Scheduler, Headroom,
	// ProcessingAllowanceNs... Ports and MaxFrameBytes are filled by New. Zero
	// BufferBytes means DefaultBufferBytes; zero Lossless means DefaultLossless
	// (set LosslessNone to have no lossless priority).
	TM tm.Config
	// LosslessNone makes every priority lossy (TM.Lossless 0 would mean the default).
	LosslessNone bool
	// GRPCAddr is the P4Runtime listen address (e.g. 127.0.0.1:9559), used when
	// GRPCListener is nil. Both empty: no P4Runtime server (tests, benchmarks).
	GRPCAddr string
	// GRPCListener, when set, is served instead of listening on GRPCAddr.
	GRPCListener net.Listener
	// GRPCTLS, when set, serves P4Runtime over TLS (internal/tlsfiles.Server:
	// with client CAs, mutual TLS). Nil serves plaintext, with a warning when
	// the address is not loopback (p4rtserver.ExposureWarning).
	GRPCTLS *tls.Config
	// DebugAddr is the loopback address of the HTTP debug endpoint (empty: none).
	DebugAddr string
	// DebugListener, when set, is served instead of listening on DebugAddr.
	DebugListener net.Listener
	// PortOptions are passed to port.Open (Log is set by New when nil; RecvBuffer 0
	// means DefaultRecvBuffer). Batch is also the number of frames an RX goroutine
	// reads at a time (0 = afpacket.DefaultBatch, at most 1024).
	PortOptions afpacket.Options
	// InputXoff and InputXon are the input backpressure thresholds, fractions of a
	// port's receive buffer (input.go, docs/target.md): when the frames waiting in a
	// port's socket fill InputXoff of it or more, the switch sends PFC XOFF for the
	// lossless priorities out of that port; when they are down to InputXon, XON.
	// 0 means DefaultInputXoff / DefaultInputXon (at most half of InputXoff); a
	// negative InputXoff disables input backpressure.
	InputXoff, InputXon float64
	// NoLosslessDefer lets the TM drop the lossless frames read from a port that find
	// their priority group's headroom full (a lossless drop, as on an ASIC whose
	// headroom is too small). By default the switch keeps such a frame and stops
	// reading that port until the TM has room, so that the frames behind it wait in the
	// receive queue (and the input hold pauses the upstream): the headroom covers the
	// wire, not the frames the switch has not read yet (input.go).
	NoLosslessDefer bool
	// PacketInQueue is the capacity of the packet-in channel (0 = DefaultPacketInQueue).
	PacketInQueue int
	// DigestPollInterval is the P4Runtime server's digest poll period (0 = default).
	DigestPollInterval time.Duration
	// Seed seeds the pipeline's RED random numbers.
	Seed uint64
	// Log receives structured logs (nil = logrus.StandardLogger()).
	Log logrus.FieldLogger
}

// normalized validates c and fills defaults.
func (c Config) normalized() (Config, error) {
	if c.DeviceID == 0 {
		return c, fmt.Errorf("%w: device ID must be non-zero", ErrConfig)
	}
	if len(c.Ports) == 0 {
		return c, fmt.Errorf("%w: no ports (give at least one -i NUM@IFNAME)", ErrConfig)
	}
	if c.CPUPort == 0 {
		c.CPUPort = p4src.CPUPort
	}
	if c.CPUPort != p4src.CPUPort {
		return c, fmt.Errorf("%w: CPU port %d: the fastcnp program's CPU_PORT is %d", ErrConfig, c.CPUPort, p4src.CPUPort)
	}
	if c.DefaultRateBps == 0 {
		c.DefaultRateBps = DefaultRateBps
	}
	if err := checkRate(c.DefaultRateBps); err != nil {
		return c, fmt.Errorf("%w: default port rate: %w", ErrConfig, err)
	}
	if c.LinkDelay < 0 {
		return c, fmt.Errorf("%w: link delay %v < 0", ErrConfig, c.LinkDelay)
	}
	seenNum := make(map[uint16]bool)
	seenIf := make(map[string]bool)
	ports := make([]PortConfig, len(c.Ports))
	copy(ports, c.Ports)
	for i := range ports {
		p := &ports[i]
		switch {
		case p.Num >= p4src.NumPorts:
			return c, fmt.Errorf("%w: port %d@%s: port numbers are 0..%d", ErrConfig, p.Num, p.Ifname, p4src.NumPorts-1)
		case p.Num == c.CPUPort:
			return c, fmt.Errorf("%w: port %d@%s: %d is the CPU port", ErrConfig, p.Num, p.Ifname, c.CPUPort)
		case p.Ifname == "" || len(p.Ifname) > 15:
			return c, fmt.Errorf("%w: port %d: invalid interface name %q", ErrConfig, p.Num, p.Ifname)
		case seenNum[p.Num]:
			return c, fmt.Errorf("%w: port number %d used twice", ErrConfig, p.Num)
		case seenIf[p.Ifname]:
			return c, fmt.Errorf("%w: interface %s used twice", ErrConfig, p.Ifname)
		}
		seenNum[p.Num], seenIf[p.Ifname] = true, true
		if p.RateBps == 0 {
			p.RateBps = c.DefaultRateBps
		}
		if err := checkRate(p.RateBps); err != nil {
			return c, fmt.Errorf("%w: port %d@%s: %w", ErrConfig, p.Num, p.Ifname, err)
		}
		if p.HeadroomBytes < 0 {
			return c, fmt.Errorf("%w: port %d@%s: headroom %d < 0", ErrConfig, p.Num, p.Ifname, p.HeadroomBytes)
		}
	}
	c.Ports = ports
	if c.TM.BufferBytes == 0 {
		c.TM.BufferBytes = DefaultBufferBytes
	}
	if c.LosslessNone {
		c.TM.Lossless = 0
	} else if c.TM.Lossless == 0 {
		c.TM.Lossless = DefaultLossless
	}
	if c.DebugAddr != "" && c.DebugListener == nil {
		if err := checkLoopback(c.DebugAddr); err != nil {
			return c, err
		}
	}
	if c.PacketInQueue <= 0 {
		c.PacketInQueue = DefaultPacketInQueue
	}
	if c.PortOptions.RecvBuffer <= 0 {
		c.PortOptions.RecvBuffer = DefaultRecvBuffer
	}
	if c.PortOptions.Batch <= 0 {
		c.PortOptions.Batch = afpacket.DefaultBatch
	}
	c.PortOptions.Batch = min(c.PortOptions.Batch, maxRxBatch)
	if c.InputXoff == 0 {
		c.InputXoff = DefaultInputXoff
	}
	if c.InputXon == 0 && c.InputXoff > 0 {
		c.InputXon = min(DefaultInputXon, c.InputXoff/2)
	}
	if err := checkInputThresholds(c.InputXoff, c.InputXon); err != nil {
		return c, err
	}
	if c.DigestPollInterval <= 0 {
		c.DigestPollInterval = DefaultDigestPollInterval
	}
	if c.Log == nil {
		c.Log = logrus.StandardLogger()
	}
	return c, nil
}

func checkRate(bps int64) error {
	if bps < tm.MinRateBps || bps > tm.MaxRateBps {
		return fmt.Errorf("rate %d b/s outside %d..%d b/s", bps, tm.MinRateBps, tm.MaxRateBps)
	}
	return nil
}
