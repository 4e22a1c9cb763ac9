package tm

import (
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/fastcnp/fastcnp/wire"
)

// NumPriorities is the number of 802.1p priorities (and egress queues per port).
const NumPriorities = wire.NumPriorities

// Wire constants used by the shaper and the headroom formula.
const (
	// DefaultMaxFrameBytes is the default largest frame accepted (1500 B payload, VLAN tag, FCS).
	DefaultMaxFrameBytes = 1522
	// DefaultResumeOffsetBytes is HPCC's resume offset: XON = XOFF - 3 KB.
	DefaultResumeOffsetBytes = 3 * 1024
	// DefaultAlpha is the dynamic-threshold factor (HPCC's pfc_a_shift = 3, i.e. 1/8).
	DefaultAlpha = 0.125
	// DefaultPauseQuanta is the pause time put in an XOFF frame (the maximum).
	DefaultPauseQuanta = 0xFFFF
	// DefaultRefreshPercent: an XOFF is refreshed after this share of its pause time.
	DefaultRefreshPercent = 50
)

// Link-rate limits accepted by New, in bits per second.
const (
	MinRateBps int64 = 100_000_000     // 100 Mb/s
	MaxRateBps int64 = 400_000_000_000 // 400 Gb/s
)

// SchedulerMode selects how a port chooses the next queue to serve.
type SchedulerMode int

const (
	// SchedStrict serves the 8 queues in strict priority, 7 highest, 0 lowest.
	SchedStrict SchedulerMode = iota
	// SchedLosslessFirst serves every lossless priority strictly before every lossy
	// one; within each group strict priority by number.
	SchedLosslessFirst
	// SchedLosslessFirstDWRR serves lossless priorities strictly first (by number) and
	// shares the rest among the lossy priorities by deficit weighted round robin.
	SchedLosslessFirstDWRR
)

// ThresholdMode selects how the PFC XOFF threshold of an ingress (port, priority) is set.
type ThresholdMode int

const (
	// ThresholdDynamic: XOFF = Alpha * (free shared buffer), re-evaluated on every packet.
	ThresholdDynamic ThresholdMode = iota
	// ThresholdStatic: XOFF = Config.XoffBytes.
	ThresholdStatic
)

// HeadroomMode selects the formula used for a port whose HeadroomBytes is 0.
type HeadroomMode int

const (
	// HeadroomRoundTrip is ceil(2*delay*rate/8) + 3*MaxWireFrame + PFC frame + processing
	// allowance: the frame that crossed XOFF and what can arrive after it, up to the
	// last bit the upstream sends before it obeys the PAUSE (see docs/traffic-manager.md).
	HeadroomRoundTrip HeadroomMode = iota
	// HeadroomHPCC is ceil(3*delay*rate/8), as the HPCC ns-3 simulator sizes it.
	HeadroomHPCC
)

// PortConfig describes one port (both directions of one full-duplex link).
type PortConfig struct {
	// RateBps is the link rate in bits/s, MinRateBps..MaxRateBps.
	RateBps int64
	// PropDelayNs is the one-way propagation delay of the link in ns (>= 0).
	PropDelayNs int64
	// HeadroomBytes is the headroom reserved per lossless priority of this ingress
	// port; 0 = computed by Config.Headroom.
	HeadroomBytes int64
	// Alpha is the dynamic XOFF factor of this ingress port's priority groups;
	// 0 = Config.Alpha. (The HPCC simulator raises it with the port's rate.)
	Alpha float64
}

// Config is the traffic manager's static configuration.
type Config struct {
	// Ports lists the ports; the index is the port number.
	Ports []PortConfig
	// BufferBytes is the whole packet buffer: headroom reservations plus shared pool.
	BufferBytes int64
	// MaxFrameBytes is the largest frame accepted (0 = DefaultMaxFrameBytes).
	MaxFrameBytes int
	// WireOverhead adds wire.PreambleIFGBytes to every frame's serialisation time.
	WireOverhead bool
	// Lossless is the bit mask of lossless (PFC-protected) priorities; bit p = priority p.
	Lossless uint8
	// Scheduler selects the egress scheduler.
	Scheduler SchedulerMode
	// DWRRQuantumBytes is the per-round quantum of each lossy priority under
	// SchedLosslessFirstDWRR (0 = MaxFrameBytes); weights are their ratios.
	DWRRQuantumBytes [NumPriorities]int
	// QueueCapBytes caps an egress queue of a lossy priority (0 = no static cap).
	// Lossless queues are never capped: PFC limits them.
	QueueCapBytes [NumPriorities]int64
	// LossyAlpha, when > 0, gives lossy egress queues a dynamic cap (as a Broadcom
	// egress dynamic threshold): a queue may hold at most LossyAlpha * free shared
	// buffer, so lossy traffic cannot take the whole pool from the lossless classes.
	// 0 = lossy queues are limited only by the pool and QueueCapBytes.
	LossyAlpha float64
	// Threshold selects static or dynamic XOFF.
	Threshold ThresholdMode
	// Alpha is the dynamic-threshold factor (0 = DefaultAlpha).
	Alpha float64
	// XoffBytes is the static XOFF threshold per ingress (port, priority).
	XoffBytes int64
	// XonBytes is the static XON level (ThresholdStatic only); 0 = XoffBytes -
	// ResumeOffsetBytes. Dynamic mode always uses XOFF - ResumeOffsetBytes.
	XonBytes int64
	// ResumeOffsetBytes: XON = XOFF - ResumeOffsetBytes (0 = DefaultResumeOffsetBytes).
	ResumeOffsetBytes int64
	// PauseQuanta is the pause time of the XOFF frames sent (0 = DefaultPauseQuanta).
	PauseQuanta uint16
	// RefreshPercent: a standing XOFF is re-sent after this percentage of its pause
	// time at the port's rate (0 = DefaultRefreshPercent; 1..90).
	RefreshPercent int
	// Headroom selects the formula for ports whose HeadroomBytes is 0.
	Headroom HeadroomMode
	// ProcessingAllowanceNs is added to the round trip in the HeadroomRoundTrip
	// formula: the upstream's PAUSE response time (802.1Qbb allows some).
	ProcessingAllowanceNs int64
}

// Errors returned by New, Enqueue, Dequeue and the PFC entry points.
var (
	// ErrConfig reports an invalid configuration.
	ErrConfig = errors.New("tm: invalid config")
	// ErrUnknownPort reports a port number outside the configured ports.
	ErrUnknownPort = errors.New("tm: unknown port")
	// ErrBadPriority reports a priority outside 0..7.
	ErrBadPriority = errors.New("tm: priority out of range 0..7")
	// ErrBadLength reports a frame length <= 0 or above MaxFrameBytes.
	ErrBadLength = errors.New("tm: bad frame length")
	// ErrLosslessDrop reports a drop in a lossless class: the headroom was exhausted.
	// It means the headroom is undersized for the link (or the upstream ignores PAUSE):
	// a configuration bug that must be surfaced, never silently absorbed.
	ErrLosslessDrop = errors.New("tm: lossless drop (headroom exhausted)")
)

// SerializationNs returns the time, rounded up to whole ns, that bytes take on a link of
// rateBps (no preamble/IFG added: pass them in bytes if wanted).
func SerializationNs(bytes int, rateBps int64) int64 {
	if rateBps <= 0 || bytes <= 0 {
		return 0
	}
	return ceilDiv(int64(bytes)*8*1e9, rateBps)
}

// HeadroomRoundTripBytes is the HeadroomRoundTrip formula:
//
//	ceil(2*delay*rate/8) + 3*(maxFrame+20) + (64+20) + ceil(procNs*rate/8)
//
// It covers the frame that crossed XOFF, which is itself held in headroom when it
// did not fit under XOFF (one max frame), and what arrives after it: our own frame
// in transmission that the PAUSE waits behind (one max wire frame), the PAUSE's
// serialisation, its propagation (delay), the upstream's response time (procNs),
// the upstream's frame in transmission that it finishes (one max wire frame), and
// the data already on the wire (delay) — i.e. rate * (2*delay + procNs) + 3 frames
// + one PFC frame (TestHeadroomCoversWorstCase).
func HeadroomRoundTripBytes(rateBps, delayNs int64, maxFrame int, procNs int64) int64 {
	wireFrame := int64(maxFrame + wire.PreambleIFGBytes)
	return mulDivCeil(2*delayNs, rateBps, 8e9) + 3*wireFrame + wire.PFCFrameBytes + wire.PreambleIFGBytes +
		mulDivCeil(procNs, rateBps, 8e9)
}

// HeadroomHPCCBytes is the HPCC simulator's headroom: ceil(3*delay*rate/8).
func HeadroomHPCCBytes(rateBps, delayNs int64) int64 {
	return mulDivCeil(3*delayNs, rateBps, 8e9)
}

// mulDivCeil returns ceil(a*b/c) for a, b >= 0, c > 0 without overflowing the product
// (1 s * 400 Gb/s does not fit in int64); it saturates at MaxInt64.
func mulDivCeil(a, b, c int64) int64 {
	if a <= 0 || b <= 0 || c <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return math.MaxInt64
	}
	q, r := bits.Div64(hi, lo, uint64(c))
	if r != 0 {
		q++
	}
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

func ceilDiv(a, b int64) int64 {
	if a <= 0 {
		return 0
	}
	return (a + b - 1) / b
}

// normalized returns cfg with defaults filled in, or an error wrapping ErrConfig.
func (cfg Config) normalized() (Config, error) {
	if len(cfg.Ports) == 0 {
		return cfg, fmt.Errorf("%w: no ports", ErrConfig)
	}
	if len(cfg.Ports) > math.MaxInt32 {
		return cfg, fmt.Errorf("%w: %d ports", ErrConfig, len(cfg.Ports))
	}
	if cfg.MaxFrameBytes == 0 {
		cfg.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if cfg.MaxFrameBytes < 64 || cfg.MaxFrameBytes > 1<<20 {
		return cfg, fmt.Errorf("%w: MaxFrameBytes %d outside 64..1 MiB", ErrConfig, cfg.MaxFrameBytes)
	}
	if cfg.Alpha == 0 {
		cfg.Alpha = DefaultAlpha
	}
	if !(cfg.Alpha > 0) || math.IsInf(cfg.Alpha, 0) || cfg.Alpha > 64 {
		return cfg, fmt.Errorf("%w: Alpha %v outside (0, 64]", ErrConfig, cfg.Alpha)
	}
	if cfg.LossyAlpha < 0 || math.IsNaN(cfg.LossyAlpha) || math.IsInf(cfg.LossyAlpha, 0) || cfg.LossyAlpha > 64 {
		return cfg, fmt.Errorf("%w: LossyAlpha %v outside [0, 64]", ErrConfig, cfg.LossyAlpha)
	}
	if cfg.ResumeOffsetBytes == 0 {
		cfg.ResumeOffsetBytes = DefaultResumeOffsetBytes
	}
	if cfg.ResumeOffsetBytes < 0 {
		return cfg, fmt.Errorf("%w: ResumeOffsetBytes %d < 0", ErrConfig, cfg.ResumeOffsetBytes)
	}
	if cfg.PauseQuanta == 0 {
		cfg.PauseQuanta = DefaultPauseQuanta
	}
	if cfg.RefreshPercent == 0 {
		cfg.RefreshPercent = DefaultRefreshPercent
	}
	if cfg.RefreshPercent < 1 || cfg.RefreshPercent > 90 {
		return cfg, fmt.Errorf("%w: RefreshPercent %d outside 1..90", ErrConfig, cfg.RefreshPercent)
	}
	if cfg.ProcessingAllowanceNs < 0 {
		return cfg, fmt.Errorf("%w: ProcessingAllowanceNs %d < 0", ErrConfig, cfg.ProcessingAllowanceNs)
	}
	switch cfg.Scheduler {
	case SchedStrict, SchedLosslessFirst, SchedLosslessFirstDWRR:
	default:
		return cfg, fmt.Errorf("%w: unknown scheduler %d", ErrConfig, cfg.Scheduler)
	}
	switch cfg.Headroom {
	case HeadroomRoundTrip, HeadroomHPCC:
	default:
		return cfg, fmt.Errorf("%w: unknown headroom mode %d", ErrConfig, cfg.Headroom)
	}
	for p := range NumPriorities {
		if cfg.DWRRQuantumBytes[p] == 0 {
			cfg.DWRRQuantumBytes[p] = cfg.MaxFrameBytes
		}
		if cfg.DWRRQuantumBytes[p] < 0 {
			return cfg, fmt.Errorf("%w: DWRRQuantumBytes[%d] = %d < 0", ErrConfig, p, cfg.DWRRQuantumBytes[p])
		}
		if cfg.QueueCapBytes[p] < 0 {
			return cfg, fmt.Errorf("%w: QueueCapBytes[%d] = %d < 0", ErrConfig, p, cfg.QueueCapBytes[p])
		}
	}
	switch cfg.Threshold {
	case ThresholdDynamic:
	case ThresholdStatic:
		if cfg.XoffBytes <= 0 {
			return cfg, fmt.Errorf("%w: static threshold needs XoffBytes > 0, got %d", ErrConfig, cfg.XoffBytes)
		}
		if cfg.XonBytes == 0 {
			cfg.XonBytes = max(cfg.XoffBytes-cfg.ResumeOffsetBytes, 0)
		}
		if cfg.XonBytes < 0 || cfg.XonBytes >= cfg.XoffBytes {
			return cfg, fmt.Errorf("%w: XonBytes %d must be in [0, XoffBytes %d)", ErrConfig, cfg.XonBytes, cfg.XoffBytes)
		}
	default:
		return cfg, fmt.Errorf("%w: unknown threshold mode %d", ErrConfig, cfg.Threshold)
	}
	ports := make([]PortConfig, len(cfg.Ports))
	copy(ports, cfg.Ports)
	cfg.Ports = ports
	for i := range cfg.Ports {
		pc := &cfg.Ports[i]
		if pc.RateBps < MinRateBps || pc.RateBps > MaxRateBps {
			return cfg, fmt.Errorf("%w: port %d rate %d b/s outside %d..%d", ErrConfig, i, pc.RateBps, MinRateBps, MaxRateBps)
		}
		if pc.PropDelayNs < 0 || pc.PropDelayNs > 1e9 {
			return cfg, fmt.Errorf("%w: port %d delay %d ns outside 0..1s", ErrConfig, i, pc.PropDelayNs)
		}
		if pc.HeadroomBytes < 0 {
			return cfg, fmt.Errorf("%w: port %d headroom %d < 0", ErrConfig, i, pc.HeadroomBytes)
		}
		if pc.Alpha < 0 || math.IsNaN(pc.Alpha) || math.IsInf(pc.Alpha, 0) || pc.Alpha > 64 {
			return cfg, fmt.Errorf("%w: port %d Alpha %v outside [0, 64]", ErrConfig, i, pc.Alpha)
		}
		if pc.HeadroomBytes == 0 && cfg.Lossless != 0 {
			switch cfg.Headroom {
			case HeadroomHPCC:
				pc.HeadroomBytes = HeadroomHPCCBytes(pc.RateBps, pc.PropDelayNs)
			default:
				pc.HeadroomBytes = HeadroomRoundTripBytes(pc.RateBps, pc.PropDelayNs, cfg.MaxFrameBytes, cfg.ProcessingAllowanceNs)
			}
		}
		if cfg.Lossless != 0 && pc.HeadroomBytes < int64(cfg.MaxFrameBytes) {
			return cfg, fmt.Errorf("%w: port %d headroom %d B < one max frame %d B", ErrConfig, i, pc.HeadroomBytes, cfg.MaxFrameBytes)
		}
	}
	if cfg.BufferBytes <= 0 {
		return cfg, fmt.Errorf("%w: BufferBytes %d <= 0", ErrConfig, cfg.BufferBytes)
	}
	if cfg.sharedBytes() < int64(cfg.MaxFrameBytes) {
		return cfg, fmt.Errorf("%w: BufferBytes %d leaves shared pool %d B after headroom %d B (need >= one max frame)",
			ErrConfig, cfg.BufferBytes, cfg.sharedBytes(), cfg.headroomTotal())
	}
	return cfg, nil
}

func (cfg *Config) losslessCount() int64 {
	n := int64(0)
	for p := range NumPriorities {
		if cfg.Lossless&(1<<p) != 0 {
			n++
		}
	}
	return n
}

// headroomTotal is the sum of all headroom reservations: per port, per lossless priority.
func (cfg *Config) headroomTotal() int64 {
	n := cfg.losslessCount()
	total := int64(0)
	for _, pc := range cfg.Ports {
		total += n * pc.HeadroomBytes
	}
	return total
}

func (cfg *Config) sharedBytes() int64 { return cfg.BufferBytes - cfg.headroomTotal() }
