package live

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/fastcnp/fastcnp/host/agent"
	"github.com/fastcnp/fastcnp/internal/units"
	"github.com/fastcnp/fastcnp/wire"
)

// ErrFlowConfig reports an invalid flow definition.
var ErrFlowConfig = errors.New("live: bad flow configuration")

// Duration is a time.Duration that reads "8us", "1.5 ms", ... (internal/units).
type Duration time.Duration

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := units.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// INCFlow is the INC part of a flow: the flow's sender is a worker.
type INCFlow struct {
	Group   uint16 `yaml:"group" json:"group"`
	Message uint16 `yaml:"message" json:"message"`
	// Messages, when given, are the INC messages the flow carries one
	// after the other on its connection, each a data flow of Offsets
	// packets with its own first PSN (Message is then ignored).
	Messages []uint16 `yaml:"messages" json:"messages"`
	// Interval is the time between the starts of consecutive messages
	// (0: all of them are posted at the flow's start, back to back).
	Interval Duration `yaml:"interval" json:"interval"`
	Op       uint16   `yaml:"op" json:"op"`
	Rank     uint8    `yaml:"rank" json:"rank"`
	Workers  int      `yaml:"workers" json:"workers"`
	Offsets  int      `yaml:"offsets" json:"offsets"`
	Seed     uint64   `yaml:"seed" json:"seed"`
	// DupEvery sends every DupEvery-th contribution of the flow a second
	// time, DupDelay after the first (0: never): injected retransmissions,
	// which the switches must not count twice.
	DupEvery int      `yaml:"dup_every" json:"dup_every"`
	DupDelay Duration `yaml:"dup_delay" json:"dup_delay"`
}

// MaxINCMessages bounds the messages of one INC flow.
const MaxINCMessages = 4096

// MessageIDs returns the flow's messages in order: Messages, or Message.
func (i *INCFlow) MessageIDs() []uint16 {
	if len(i.Messages) > 0 {
		return i.Messages
	}
	return []uint16{i.Message}
}

// Params converts to agent.INCParams of the flow's first message.
func (i *INCFlow) Params() agent.INCParams {
	return i.ParamsOf(i.MessageIDs()[0])
}

// ParamsOf converts to agent.INCParams of message msg.
func (i *INCFlow) ParamsOf(msg uint16) agent.INCParams {
	return agent.INCParams{Group: i.Group, Message: msg, Op: i.Op, Rank: i.Rank,
		Workers: i.Workers, Offsets: i.Offsets, Seed: i.Seed}
}

// validate checks the INC part beyond agent.INCParams.Validate.
func (i *INCFlow) validate() error {
	p := i.Params()
	if err := p.Validate(); err != nil {
		return err
	}
	seen := map[uint16]bool{}
	for _, m := range i.Messages {
		if seen[m] {
			return fmt.Errorf("inc: message %d listed twice: %w", m, ErrFlowConfig)
		}
		seen[m] = true
	}
	switch {
	case len(i.Messages) > MaxINCMessages:
		return fmt.Errorf("inc: %d messages, at most %d: %w", len(i.Messages), MaxINCMessages, ErrFlowConfig)
	case uint64(len(i.MessageIDs()))*uint64(i.Offsets) > wire.MaxPSN:
		return fmt.Errorf("inc: %d messages of %d offsets exceed the 24-bit PSN space: %w", len(i.MessageIDs()), i.Offsets, ErrFlowConfig)
	case i.Interval < 0 || i.DupDelay < 0 || i.DupEvery < 0:
		return fmt.Errorf("inc: interval, dup_every and dup_delay must not be negative: %w", ErrFlowConfig)
	}
	return nil
}

// FlowConfig is one connection, written the same for both of its ends:
// the agent whose IP is Src sends, the one whose IP is Dst receives. No
// connection-manager handshake: both sides are configured statically.
type FlowConfig struct {
	// Name labels the flow in statistics (default "src:qpn->dst:qpn").
	Name string `yaml:"name" json:"name"`
	// Src and Dst are the sender's and the receiver's IPv4 addresses.
	Src string `yaml:"src" json:"src"`
	Dst string `yaml:"dst" json:"dst"`
	// DstMAC is the receiver's MAC, used as next hop when the agent has no
	// gateway MAC (hosts on one link). Optional otherwise.
	DstMAC string `yaml:"dst_mac" json:"dst_mac"`
	// SrcQPN and DstQPN are the sender's and the receiver's QP numbers.
	SrcQPN uint32 `yaml:"src_qpn" json:"src_qpn"`
	DstQPN uint32 `yaml:"dst_qpn" json:"dst_qpn"`
	// SPort is the RoCEv2 UDP source port (default 49152 + SrcQPN%16384).
	SPort uint16 `yaml:"sport" json:"sport"`
	// Size is the bytes of a single message; Sizes a list of messages sent
	// back to back on the connection (each gets its FCT); Duration makes a
	// long flow that sends until it elapses. Exactly one of them.
	Size     units.Size   `yaml:"size" json:"size"`
	Sizes    []units.Size `yaml:"sizes" json:"sizes"`
	Duration Duration     `yaml:"duration" json:"duration"`
	// Start delays the flow from the agent's start, or from the common
	// start instant (Config.StartAt, --start-at) when one is set.
	Start Duration `yaml:"start" json:"start"`
	// Count > 1 expands the entry into Count flows (incast from one agent):
	// flow i has QPNs SrcQPN+i, DstQPN+i and UDP source port SPort+i.
	Count int `yaml:"count" json:"count"`
	// INC makes the flow an INC data flow (worker -> switch).
	INC *INCFlow `yaml:"inc" json:"inc"`

	src, dst wire.Addr4
	dstMAC   *wire.MAC
}

// FlowFile is the content of a --flows file (YAML or JSON).
type FlowFile struct {
	Flows []FlowConfig `yaml:"flows" json:"flows"`
}

// ParseFlowFile reads a YAML or JSON flow file (JSON is YAML).
func ParseFlowFile(data []byte) ([]FlowConfig, error) {
	var ff FlowFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&ff); err != nil {
		return nil, fmt.Errorf("flow file: %w: %w", err, ErrFlowConfig)
	}
	return ff.Flows, nil
}

// ParseFlowSpec reads one --flow value: comma-separated key=value pairs with
// the keys of FlowConfig: name, src, dst, dst_mac, src_qpn, dst_qpn, sport,
// size, sizes (colon-separated), duration, start, count, and for INC
// inc_group, inc_message, inc_messages (colon-separated), inc_interval,
// inc_op, inc_rank, inc_workers, inc_offsets, inc_seed, inc_dup_every,
// inc_dup_delay. QPNs accept 0x hex. Example:
//
//	src=10.0.0.1,dst=10.0.0.2,src_qpn=0x100,dst_qpn=0x200,size=10MB
func ParseFlowSpec(spec string) (FlowConfig, error) {
	var f FlowConfig
	var inc INCFlow
	hasINC := false
	for _, kv := range strings.Split(spec, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return f, fmt.Errorf("flow %q: %q is not key=value: %w", spec, kv, ErrFlowConfig)
		}
		var err error
		num := func(bits int) uint64 {
			var n uint64
			n, err = strconv.ParseUint(v, 0, bits)
			return n
		}
		switch k {
		case "name":
			f.Name = v
		case "src":
			f.Src = v
		case "dst":
			f.Dst = v
		case "dst_mac":
			f.DstMAC = v
		case "src_qpn":
			f.SrcQPN = uint32(num(24))
		case "dst_qpn":
			f.DstQPN = uint32(num(24))
		case "sport":
			f.SPort = uint16(num(16))
		case "count":
			f.Count = int(num(16))
		case "size":
			err = f.Size.UnmarshalText([]byte(v))
		case "sizes":
			for _, s := range strings.Split(v, ":") {
				var sz units.Size
				if err = sz.UnmarshalText([]byte(s)); err != nil {
					break
				}
				f.Sizes = append(f.Sizes, sz)
			}
		case "duration":
			err = f.Duration.UnmarshalText([]byte(v))
		case "start":
			err = f.Start.UnmarshalText([]byte(v))
		case "inc_group":
			hasINC, inc.Group = true, uint16(num(16))
		case "inc_message":
			hasINC, inc.Message = true, uint16(num(16))
		case "inc_op":
			hasINC, inc.Op = true, uint16(num(16))
		case "inc_rank":
			hasINC, inc.Rank = true, uint8(num(8))
		case "inc_workers":
			hasINC, inc.Workers = true, int(num(8))
		case "inc_offsets":
			hasINC, inc.Offsets = true, int(num(24))
		case "inc_seed":
			hasINC, inc.Seed = true, num(64)
		case "inc_messages":
			hasINC = true
			for _, m := range strings.Split(v, ":") {
				var n uint64
				if n, err = strconv.ParseUint(m, 0, 16); err != nil {
					break
				}
				inc.Messages = append(inc.Messages, uint16(n))
			}
		case "inc_interval":
			hasINC, err = true, inc.Interval.UnmarshalText([]byte(v))
		case "inc_dup_every":
			hasINC, inc.DupEvery = true, int(num(24))
		case "inc_dup_delay":
			hasINC, err = true, inc.DupDelay.UnmarshalText([]byte(v))
		default:
			return f, fmt.Errorf("flow %q: unknown key %q: %w", spec, k, ErrFlowConfig)
		}
		if err != nil {
			return f, fmt.Errorf("flow %q: %s: %w: %w", spec, k, err, ErrFlowConfig)
		}
	}
	if hasINC {
		f.INC = &inc
	}
	return f, nil
}

// ParseStartAt reads a common start instant: RFC 3339 with optional
// fractional seconds ("2026-11-22T08:36:00.5Z") or Unix time in
// nanoseconds ("1795336560500000000").
func ParseStartAt(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, fmt.Errorf("start instant: empty: %w", ErrFlowConfig)
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n <= 0 {
			return time.Time{}, fmt.Errorf("start instant %q: Unix nanoseconds must be positive: %w", s, ErrFlowConfig)
		}
		return time.Unix(0, n), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("start instant %q: want RFC 3339 (2006-01-02T15:04:05.999999999Z07:00) or Unix nanoseconds: %w", s, ErrFlowConfig)
	}
	return t, nil
}

// ParseIPv4 reads a dotted IPv4 address.
func ParseIPv4(s string) (wire.Addr4, error) { return parseAddr(s, "address") }

func parseAddr(s, what string) (wire.Addr4, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return wire.Addr4{}, fmt.Errorf("%s %q is not an IPv4 address: %w", what, s, ErrFlowConfig)
	}
	return a.As4(), nil
}

// ParseMAC reads a 48-bit MAC address.
func ParseMAC(s string) (wire.MAC, error) {
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != 6 {
		return wire.MAC{}, fmt.Errorf("MAC %q: not a 48-bit address: %w", s, ErrFlowConfig)
	}
	return wire.MAC(hw), nil
}

// Expand validates flows, expands Count and fills defaults.
func Expand(flows []FlowConfig) ([]FlowConfig, error) {
	var out []FlowConfig
	seen := map[[2]uint32]string{}
	for i, f := range flows {
		where := fmt.Sprintf("flow %d (%s)", i, f.Name)
		var err error
		if f.src, err = parseAddr(f.Src, "src"); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if f.dst, err = parseAddr(f.Dst, "dst"); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if f.DstMAC != "" {
			m, err := ParseMAC(f.DstMAC)
			if err != nil {
				return nil, fmt.Errorf("%s: dst_mac: %w", where, err)
			}
			f.dstMAC = &m
		}
		kinds := 0
		if f.Size > 0 {
			kinds++
		}
		if len(f.Sizes) > 0 {
			kinds++
		}
		if f.Duration > 0 {
			kinds++
		}
		if f.INC != nil {
			if kinds != 0 {
				return nil, fmt.Errorf("%s: an INC flow has no size, sizes or duration (its length is inc offsets): %w", where, ErrFlowConfig)
			}
			if err := f.INC.validate(); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
		} else if kinds != 1 {
			return nil, fmt.Errorf("%s: set exactly one of size, sizes, duration: %w", where, ErrFlowConfig)
		}
		for _, s := range f.Sizes {
			if s == 0 {
				return nil, fmt.Errorf("%s: a message size of 0: %w", where, ErrFlowConfig)
			}
		}
		n := max(f.Count, 1)
		if f.SrcQPN == 0 || f.DstQPN == 0 || uint64(f.SrcQPN)+uint64(n) > wire.MaxQPN+1 || uint64(f.DstQPN)+uint64(n) > wire.MaxQPN+1 {
			return nil, fmt.Errorf("%s: QPNs %#x/%#x (count %d) must be in [1, 2^24): %w", where, f.SrcQPN, f.DstQPN, n, ErrFlowConfig)
		}
		if f.SPort == 0 {
			f.SPort = uint16(49152 + f.SrcQPN%16384)
		}
		if uint64(f.SPort)+uint64(n) > 65536 {
			return nil, fmt.Errorf("%s: sport %d + count %d exceeds 65535: %w", where, f.SPort, n, ErrFlowConfig)
		}
		for k := 0; k < n; k++ {
			g := f
			g.Count = 0
			g.SrcQPN += uint32(k)
			g.DstQPN += uint32(k)
			g.SPort += uint16(k)
			if g.INC != nil {
				inc := *f.INC
				inc.Messages = slices.Clone(f.INC.Messages)
				g.INC = &inc
			}
			if g.Name == "" {
				g.Name = fmt.Sprintf("%s:%#x->%s:%#x", g.Src, g.SrcQPN, g.Dst, g.DstQPN)
			} else if n > 1 {
				g.Name = fmt.Sprintf("%s-%d", f.Name, k)
			}
			// A sender QP and a receiver QP must each be unique per host;
			// INC workers share the destination QP by design.
			ks := [2]uint32{g.src.Uint32(), g.SrcQPN}
			if o, dup := seen[ks]; dup {
				return nil, fmt.Errorf("%s: sender QP %s:%#x already used by %s: %w", where, g.Src, g.SrcQPN, o, ErrFlowConfig)
			}
			seen[ks] = g.Name
			if g.INC == nil {
				kd := [2]uint32{g.dst.Uint32(), g.DstQPN}
				if o, dup := seen[kd]; dup {
					return nil, fmt.Errorf("%s: receiver QP %s:%#x already used by %s: %w", where, g.Dst, g.DstQPN, o, ErrFlowConfig)
				}
				seen[kd] = g.Name
			}
			out = append(out, g)
		}
	}
	return out, nil
}
