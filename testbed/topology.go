package testbed

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/fastcnp/fastcnp/host/agent"
	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/internal/units"
	"github.com/fastcnp/fastcnp/model/tm"
)

// ErrTopology reports an invalid topology description.
var ErrTopology = errors.New("testbed: invalid topology")

// Topology is a testbed description: hosts, switches, links and the flows
// to run. It is read from JSON (see testbed/topologies/ and
// docs/testbed.md for the format) and checked by Validate.
type Topology struct {
	// Name names the topology in results ("s1-victim").
	Name string `json:"name"`
	// Description is free text.
	Description string `json:"description,omitempty"`
	// Defaults apply to every link and switch port that does not set its own.
	Defaults Defaults `json:"defaults"`
	// Hosts by name.
	Hosts map[string]*Host `json:"hosts"`
	// Switches by name.
	Switches map[string]*Switch `json:"switches"`
	// Links between a host and a switch port or between two switch ports.
	Links []*Link `json:"links"`
	// Flows are the RoCEv2 flows the hosts run.
	Flows []*Flow `json:"flows"`
}

// Defaults are topology-wide settings. Sizes, rates and durations are
// strings with units as in the fastcnpd configuration ("100Mb/s", "20KB",
// "50us"; see docs/config.md).
type Defaults struct {
	// Rate is the link rate of links without their own ("100Mb/s").
	Rate string `json:"rate,omitempty"`
	// Delay is the one-way propagation delay of links without their own.
	Delay string `json:"delay,omitempty"`
	// Buffer is each switch's buffer (PFC headroom plus shared pool).
	Buffer string `json:"buffer,omitempty"`
	// RTTBase is the fabric base RTT the switch program and fastcnpd use.
	RTTBase string `json:"rtt_base,omitempty"`
	// Qth is the fastcnp queue threshold of every switch port.
	Qth string `json:"qth,omitempty"`
	// CNPGap is the least time between two switch CNPs to one flow.
	CNPGap string `json:"cnp_gap,omitempty"`
	// REDKmin, REDKmax and REDPmax are the DCQCN marking curve (ecn mode).
	REDKmin string  `json:"red_kmin,omitempty"`
	REDKmax string  `json:"red_kmax,omitempty"`
	REDPmax float64 `json:"red_pmax,omitempty"`
	// MTU is the largest frame payload (IP packet) in bytes.
	MTU int `json:"mtu,omitempty"`
	// PFCXoff is a static PFC XOFF threshold per ingress port and priority
	// (fastcnp-switch --pfc-xoff); empty: the switch's dynamic threshold.
	PFCXoff string `json:"pfc_xoff,omitempty"`
	// PFCResponse is the time a peer takes to stop after a PAUSE, added to
	// the PFC headroom (fastcnp-switch --pfc-response-time). Real-time
	// software peers need milliseconds.
	PFCResponse string `json:"pfc_response_time,omitempty"`
	// RTO is the hosts' retransmission timeout (fastcnp-host --rto): far
	// above the loaded RTT, which PFC pauses stretch to 100 ms and more,
	// so that go-back-N never runs on a lossless fabric.
	RTO string `json:"rto,omitempty"`
	// CCScale runs the hosts' DCQCN parameter set that many times slower
	// (fastcnp-host --cc-scale: periods x k, rate steps / k).
	CCScale float64 `json:"cc_scale,omitempty"`
	// BurstTime is the depth of the hosts' pacing bucket in time
	// (fastcnp-host --burst-time): how late an agent may wake up and still
	// send at its rate on average.
	BurstTime string `json:"burst_time,omitempty"`
	// Duration is how long a run lasts when flows do not say (flows
	// without a size run until the end).
	Duration string `json:"duration,omitempty"`
}

// Host is an end host: one interface eth0 with an IPv4 address and a MAC.
type Host struct {
	// IP is the address with its prefix length ("10.0.1.1/24"); without a
	// length /24 is assumed.
	IP string `json:"ip"`
	// MAC is the unicast MAC of eth0.
	MAC string `json:"mac"`

	name string
	addr netip.Prefix
	mac  net.HardwareAddr
}

// Switch is a fastcnp switch (or BMv2 in Mininet).
type Switch struct {
	// DeviceID is the P4Runtime device ID (non-zero, unique).
	DeviceID uint64 `json:"device_id"`
	// GRPCPort is the TCP port of its P4Runtime server (unique).
	GRPCPort int `json:"grpc_port"`
	// Buffer overrides Defaults.Buffer.
	Buffer string `json:"buffer,omitempty"`
	// INCCapacity is the switch's inc.capacity in fastcnpd's config: its
	// weight as an upper switch of the INC tree (0: the default, 1).
	INCCapacity uint64 `json:"inc_capacity,omitempty"`

	name   string
	buffer units.Size
}

// Link is a full-duplex link between two endpoints: a host name ("h1") or
// a switch port ("s1-p3").
type Link struct {
	// A and B are the endpoints.
	A string `json:"a"`
	B string `json:"b"`
	// Rate is the link rate in each direction (empty: Defaults.Rate).
	Rate string `json:"rate,omitempty"`
	// Delay is the one-way propagation delay (empty: Defaults.Delay). The
	// switch's traffic manager models it; a switch applies the largest
	// delay of its links to all of its departures.
	Delay string `json:"delay,omitempty"`

	a, b  Endpoint
	rate  units.Rate
	delay time.Duration
}

// Endpoint is one end of a link.
type Endpoint struct {
	// Node is a host or switch name.
	Node string
	// Port is the switch port number, 0 for a host.
	Port uint16
}

// IsHost reports whether the endpoint is a host.
func (e Endpoint) IsHost() bool { return e.Port == 0 }

// String formats the endpoint as in the JSON ("h1", "s1-p3").
func (e Endpoint) String() string {
	if e.IsHost() {
		return e.Node
	}
	return fmt.Sprintf("%s-p%d", e.Node, e.Port)
}

// Flow is one RoCEv2 flow (one queue pair) from Src to Dst.
type Flow struct {
	// Name names the flow in results (default "<src>-<dst>").
	Name string `json:"name,omitempty"`
	// Src and Dst are host names.
	Src string `json:"src"`
	Dst string `json:"dst"`
	// Start is when the flow starts, relative to the start of the run.
	Start string `json:"start,omitempty"`
	// Size is the number of bytes to send ("2MB"); empty or "0" means the
	// flow sends until Duration (or the run) ends.
	Size string `json:"size,omitempty"`
	// Duration bounds how long the flow sends (empty: until the run ends).
	Duration string `json:"duration,omitempty"`
	// Victim marks the flow the scenario is about (S1's victim flow).
	Victim bool `json:"victim,omitempty"`
	// INC makes the flow a worker's contribution to in-network aggregation
	// messages (spec 04): no size or duration, one vector per offset. The
	// flows with the same group and message are the message's workers; they
	// share Dst, which receives and checks the aggregated results. A group's
	// members are the sources of its flows, ranked in topology order of
	// their first flow; every message of the group has them all as workers.
	INC *FlowINC `json:"inc,omitempty"`

	start    time.Duration
	size     units.Size
	duration time.Duration
	// INC: rank in the group, the group's size, and the index of the
	// group's first flow (whose receiver QP all of the group's flows target).
	incRank, incWorkers, incFirst int
}

// FlowINC describes an INC flow.
type FlowINC struct {
	// Group (> 0) and Message identify the INC message.
	Group   uint16 `json:"group"`
	Message uint16 `json:"message"`
	// Messages, when given, are the INC messages the flow carries one
	// after the other on its connection (Message is then ignored).
	Messages []uint16 `json:"messages,omitempty"`
	// Interval is the time between the starts of consecutive messages
	// ("20ms"; empty: all posted at the flow's start).
	Interval string `json:"interval,omitempty"`
	// Offsets is the number of vectors (packets) each worker sends per message.
	Offsets int `json:"offsets"`
	// Seed makes the vectors deterministic (the receiver recomputes the sums).
	Seed uint64 `json:"seed,omitempty"`
	// DupEvery sends every DupEvery-th contribution twice, DupDelay apart:
	// injected retransmissions (0: none).
	DupEvery int    `json:"dup_every,omitempty"`
	DupDelay string `json:"dup_delay,omitempty"`

	interval, dupDelay time.Duration
}

// MessageIDs returns the flow's messages in order.
func (i *FlowINC) MessageIDs() []uint16 {
	if len(i.Messages) > 0 {
		return i.Messages
	}
	return []uint16{i.Message}
}

// incKey identifies an INC message.
type incKey struct{ group, message uint16 }

// Parsed values, available after Validate.

// Addr returns the host's address with its prefix length.
func (h *Host) Addr() netip.Prefix { return h.addr }

// HardwareAddr returns the host's MAC.
func (h *Host) HardwareAddr() net.HardwareAddr { return h.mac }

// Name returns the host's name.
func (h *Host) Name() string { return h.name }

// Name returns the switch's name.
func (s *Switch) Name() string { return s.name }

// BufferBytes returns the switch's buffer size.
func (s *Switch) BufferBytes() units.Size { return s.buffer }

// Ends returns the parsed endpoints.
func (l *Link) Ends() (Endpoint, Endpoint) { return l.a, l.b }

// RateBps returns the link rate in bits per second.
func (l *Link) RateBps() units.Rate { return l.rate }

// DelayValue returns the one-way propagation delay.
func (l *Link) DelayValue() time.Duration { return l.delay }

// StartAt returns when the flow starts.
func (f *Flow) StartAt() time.Duration { return f.start }

// SizeBytes returns the flow size (0: unbounded).
func (f *Flow) SizeBytes() units.Size { return f.size }

// DurationValue returns how long the flow may send (0: until the run ends).
func (f *Flow) DurationValue() time.Duration { return f.duration }

// Params are the parsed topology-wide settings (see Defaults for each
// field's meaning).
type Params struct {
	Rate        units.Rate
	Delay       time.Duration
	Buffer      units.Size
	RTTBase     time.Duration
	Qth         units.Size
	CNPGap      time.Duration
	REDKmin     units.Size
	REDKmax     units.Size
	REDPmax     float64
	MTU         int
	PFCXoff     units.Size
	PFCResponse time.Duration
	RTO         time.Duration
	CCScale     float64
	BurstTime   time.Duration
	Duration    time.Duration
}

// Built-in defaults of Defaults, for what a 2-core machine shared with
// other work carries in real time through software switches (docs/testbed.md
// has the measurements behind each): 100 Mb/s links (the smallest rate
// fastcnp-switch shapes), jumbo frames (a quarter of the packets per byte),
// a base RTT of 10 ms (the loaded round trip through two Go switches and two
// agents is several milliseconds), PFC headroom for 200 ms (software peers
// and switches react in milliseconds, and fastcnp-switch can deliver an XON
// ahead of the XOFF before it, so a peer may run until the next refresh).
const (
	DefaultRate     = "100Mb/s"
	DefaultDelay    = "20us"
	DefaultBuffer   = "32MB"
	DefaultRTTBase  = "10ms"
	DefaultQth      = "100KB"
	DefaultCNPGap   = "200us"
	DefaultREDKmin  = "5KB"
	DefaultREDKmax  = "100KB"
	DefaultREDPmax  = 0.1
	DefaultMTU      = 9000
	DefaultDuration = "10s"
	// DefaultPFCResponse covers, in the headroom, how long a software peer
	// may keep sending after the switch decided XOFF.
	DefaultPFCResponse = "200ms"
	// DefaultRTO is the hosts' retransmission timeout.
	DefaultRTO = "500ms"
	// DefaultCCScale leaves the DCQCN parameter set as it is.
	DefaultCCScale = 1.0
	// DefaultBurstTime lets an agent catch up 2 ms of lateness (the
	// scheduling delays of a loaded 2-core machine).
	DefaultBurstTime = "2ms"
)

// minMTU is the smallest link MTU a RoCE host can use: a 256-byte
// payload with the IPv4, UDP, BTH and ICRC headers.
const minMTU = 256 + 44

var (
	nameRE     = regexp.MustCompile(`^[a-z][a-z0-9]{0,7}$`)
	switchPort = regexp.MustCompile(`^([a-z][a-z0-9]{0,7})-p([0-9]{1,3})$`)
)

// Load reads and validates a topology file.
func Load(path string) (*Topology, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("testbed: read topology: %w", err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Parse decodes and validates a topology. Unknown fields are errors.
func Parse(data []byte) (*Topology, error) {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	var t Topology
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTopology, err)
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return &t, nil
}

// Params returns the parsed defaults (valid after Validate).
func (t *Topology) Params() Params {
	p, _ := t.params()
	return p
}

func (t *Topology) params() (Params, error) {
	d := t.Defaults
	or := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	var p Params
	var errs []error
	rate := func(what, s string) units.Rate {
		r, err := units.ParseRate(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("defaults.%s: %w", what, err))
		}
		return r
	}
	size := func(what, s string) units.Size {
		v, err := units.ParseSize(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("defaults.%s: %w", what, err))
		}
		return v
	}
	dur := func(what, s string) time.Duration {
		v, err := units.ParseDuration(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("defaults.%s: %w", what, err))
		}
		return v
	}
	p.Rate = rate("rate", or(d.Rate, DefaultRate))
	p.Delay = dur("delay", or(d.Delay, DefaultDelay))
	p.Buffer = size("buffer", or(d.Buffer, DefaultBuffer))
	p.RTTBase = dur("rtt_base", or(d.RTTBase, DefaultRTTBase))
	p.Qth = size("qth", or(d.Qth, DefaultQth))
	p.CNPGap = dur("cnp_gap", or(d.CNPGap, DefaultCNPGap))
	p.REDKmin = size("red_kmin", or(d.REDKmin, DefaultREDKmin))
	p.REDKmax = size("red_kmax", or(d.REDKmax, DefaultREDKmax))
	p.REDPmax = d.REDPmax
	if p.REDPmax == 0 {
		p.REDPmax = DefaultREDPmax
	}
	p.MTU = d.MTU
	if p.MTU == 0 {
		p.MTU = DefaultMTU
	}
	p.Duration = dur("duration", or(d.Duration, DefaultDuration))
	p.PFCResponse = dur("pfc_response_time", or(d.PFCResponse, DefaultPFCResponse))
	p.RTO = dur("rto", or(d.RTO, DefaultRTO))
	p.BurstTime = dur("burst_time", or(d.BurstTime, DefaultBurstTime))
	p.CCScale = d.CCScale
	if p.CCScale == 0 {
		p.CCScale = DefaultCCScale
	}
	if d.PFCXoff != "" {
		p.PFCXoff = size("pfc_xoff", d.PFCXoff)
	}
	switch {
	case p.REDPmax < 0 || p.REDPmax > 1:
		errs = append(errs, fmt.Errorf("defaults.red_pmax %v outside (0, 1]", p.REDPmax))
	case p.REDKmin >= p.REDKmax:
		errs = append(errs, fmt.Errorf("defaults: red_kmin %v must be below red_kmax %v", p.REDKmin, p.REDKmax))
	case p.MTU < minMTU || p.MTU > 9000:
		errs = append(errs, fmt.Errorf("defaults.mtu %d outside %d..9000 (the smallest RoCE payload, 256 bytes, and its headers)", p.MTU, minMTU))
	case p.Duration <= 0:
		errs = append(errs, errors.New("defaults.duration must be positive"))
	case p.Rate == 0:
		errs = append(errs, errors.New("defaults.rate must be positive"))
	case p.BurstTime < 0 || p.BurstTime > agent.MaxRTO:
		errs = append(errs, fmt.Errorf("defaults.burst_time %v outside [0, %v]", p.BurstTime, agent.MaxRTO))
	case p.RTO <= 0 || p.RTO > agent.MaxRTO:
		errs = append(errs, fmt.Errorf("defaults.rto %v outside (0, %v]", p.RTO, agent.MaxRTO))
	case !(p.CCScale >= 1/cc.MaxScale && p.CCScale <= cc.MaxScale):
		errs = append(errs, fmt.Errorf("defaults.cc_scale %v outside [%v, %v]", p.CCScale, 1/cc.MaxScale, cc.MaxScale))
	}
	return p, errors.Join(errs...)
}

// ParseEndpoint parses "h1" or "s1-p3".
func ParseEndpoint(s string) (Endpoint, error) {
	if m := switchPort.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[2])
		if n < 1 || n > 511 || n == 255 {
			return Endpoint{}, fmt.Errorf("endpoint %q: port %d outside 1..511 or the CPU port 255", s, n)
		}
		return Endpoint{Node: m[1], Port: uint16(n)}, nil
	}
	if nameRE.MatchString(s) {
		return Endpoint{Node: s}, nil
	}
	return Endpoint{}, fmt.Errorf("endpoint %q: want a host name or SWITCH-pPORT (names: lower-case letter, then up to 7 letters or digits)", s)
}

// Validate parses every value, fills defaults and checks the topology: names,
// unique addresses, MACs, device IDs and ports, links between existing nodes
// (every host on exactly one link, to a switch), flows between connected
// hosts.
func (t *Topology) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if t.Name == "" {
		add("name is required")
	}
	p, err := t.params()
	if err != nil {
		errs = append(errs, err)
	}
	if len(t.Hosts) == 0 || len(t.Switches) == 0 {
		add("at least one host and one switch are required")
	}
	ips := map[netip.Addr]string{}
	macs := map[string]string{}
	for _, name := range sortedKeys(t.Hosts) {
		h := t.Hosts[name]
		if h == nil {
			add("hosts.%s: empty", name)
			continue
		}
		h.name = name
		if !nameRE.MatchString(name) {
			add("hosts.%s: invalid name (lower-case letter, then up to 7 letters or digits)", name)
		}
		ip := h.IP
		if !strings.Contains(ip, "/") {
			ip += "/24"
		}
		pfx, err := netip.ParsePrefix(ip)
		if err != nil || !pfx.Addr().Is4() {
			add("hosts.%s.ip %q: want an IPv4 address", name, h.IP)
		} else {
			h.addr = pfx
			if o, dup := ips[pfx.Addr()]; dup {
				add("hosts.%s.ip %s: also used by %s", name, pfx.Addr(), o)
			}
			ips[pfx.Addr()] = name
		}
		mac, err := net.ParseMAC(h.MAC)
		if err != nil || len(mac) != 6 || mac[0]&1 != 0 {
			add("hosts.%s.mac %q: want a unicast Ethernet MAC", name, h.MAC)
		} else {
			h.mac = mac
			if o, dup := macs[mac.String()]; dup {
				add("hosts.%s.mac %s: also used by %s", name, mac, o)
			}
			macs[mac.String()] = name
		}
	}
	ids := map[uint64]string{}
	grpc := map[int]string{}
	for _, name := range sortedKeys(t.Switches) {
		s := t.Switches[name]
		if s == nil {
			add("switches.%s: empty", name)
			continue
		}
		s.name = name
		if !nameRE.MatchString(name) {
			add("switches.%s: invalid name (lower-case letter, then up to 7 letters or digits)", name)
		}
		if _, dup := t.Hosts[name]; dup {
			add("switches.%s: also a host name", name)
		}
		if s.DeviceID == 0 {
			add("switches.%s.device_id: must be non-zero", name)
		} else if o, dup := ids[s.DeviceID]; dup {
			add("switches.%s.device_id %d: also used by %s", name, s.DeviceID, o)
		}
		ids[s.DeviceID] = name
		if s.GRPCPort < 1024 || s.GRPCPort > 65535 {
			add("switches.%s.grpc_port %d: want 1024..65535", name, s.GRPCPort)
		} else if o, dup := grpc[s.GRPCPort]; dup {
			add("switches.%s.grpc_port %d: also used by %s", name, s.GRPCPort, o)
		}
		grpc[s.GRPCPort] = name
		s.buffer = p.Buffer
		if s.Buffer != "" {
			b, err := units.ParseSize(s.Buffer)
			if err != nil {
				add("switches.%s.buffer: %v", name, err)
			}
			s.buffer = b
		}
	}
	used := map[string]int{}
	hostLinks := map[string]int{}
	for i, l := range t.Links {
		if l == nil {
			add("links[%d]: empty", i)
			continue
		}
		var err error
		if l.a, err = ParseEndpoint(l.A); err != nil {
			add("links[%d].a: %v", i, err)
			continue
		}
		if l.b, err = ParseEndpoint(l.B); err != nil {
			add("links[%d].b: %v", i, err)
			continue
		}
		for _, e := range []Endpoint{l.a, l.b} {
			if e.IsHost() {
				if t.Hosts[e.Node] == nil {
					add("links[%d]: unknown host %q", i, e.Node)
				}
				hostLinks[e.Node]++
			} else if t.Switches[e.Node] == nil {
				add("links[%d]: unknown switch %q", i, e.Node)
			}
			if j, dup := used[e.String()]; dup {
				add("links[%d]: endpoint %s already used by links[%d]", i, e, j)
			}
			used[e.String()] = i
		}
		if l.a.IsHost() && l.b.IsHost() {
			add("links[%d]: host-to-host links are not supported (%s, %s)", i, l.a, l.b)
		}
		if l.a.Node == l.b.Node {
			add("links[%d]: both ends on %s", i, l.a.Node)
		}
		l.rate = p.Rate
		if l.Rate != "" {
			if l.rate, err = units.ParseRate(l.Rate); err != nil {
				add("links[%d].rate: %v", i, err)
			}
		}
		l.delay = p.Delay
		if l.Delay != "" {
			if l.delay, err = units.ParseDuration(l.Delay); err != nil {
				add("links[%d].delay: %v", i, err)
			}
		}
		if l.rate < units.Rate(tm.MinRateBps) || l.rate > units.Rate(10_000_000_000) {
			add("links[%d].rate %v: want %v..10Gb/s (fastcnp-switch's shaper minimum; real time on a small machine)",
				i, l.rate, units.Rate(tm.MinRateBps))
		}
	}
	for _, name := range sortedKeys(t.Hosts) {
		if hostLinks[name] != 1 {
			add("hosts.%s: on %d links, want exactly 1", name, hostLinks[name])
		}
	}
	names := map[string]bool{}
	for i, f := range t.Flows {
		if f == nil {
			add("flows[%d]: empty", i)
			continue
		}
		if t.Hosts[f.Src] == nil || t.Hosts[f.Dst] == nil || f.Src == f.Dst {
			add("flows[%d]: src %q and dst %q must be two different hosts", i, f.Src, f.Dst)
		}
		if f.Name == "" {
			f.Name = f.Src + "-" + f.Dst
		}
		if names[f.Name] {
			add("flows[%d]: name %q used twice", i, f.Name)
		}
		names[f.Name] = true
		var err error
		if f.Start != "" {
			if f.start, err = units.ParseDuration(f.Start); err != nil {
				add("flows[%d].start: %v", i, err)
			}
		}
		if f.Size != "" {
			if f.size, err = units.ParseSize(f.Size); err != nil {
				add("flows[%d].size: %v", i, err)
			}
		}
		if f.Duration != "" {
			if f.duration, err = units.ParseDuration(f.Duration); err != nil {
				add("flows[%d].duration: %v", i, err)
			}
		}
		if f.start >= p.Duration {
			add("flows[%d]: starts at %v, not before the run ends (%v)", i, f.start, p.Duration)
		}
		if f.INC != nil {
			switch {
			case f.size > 0 || f.duration > 0:
				add("flows[%d]: an INC flow has no size or duration (it sends inc.offsets vectors)", i)
			case f.INC.Group == 0:
				add("flows[%d].inc.group: must be non-zero", i)
			case f.INC.Offsets < 1 || f.INC.Offsets > 1<<22:
				add("flows[%d].inc.offsets %d: want 1..%d", i, f.INC.Offsets, 1<<22)
			case f.INC.DupEvery < 0:
				add("flows[%d].inc.dup_every %d: must not be negative", i, f.INC.DupEvery)
			}
			for _, d := range []struct {
				name string
				s    string
				into *time.Duration
			}{{"interval", f.INC.Interval, &f.INC.interval}, {"dup_delay", f.INC.DupDelay, &f.INC.dupDelay}} {
				if d.s == "" {
					continue
				}
				if *d.into, err = units.ParseDuration(d.s); err != nil || *d.into < 0 {
					add("flows[%d].inc.%s %q: want a duration >= 0", i, d.name, d.s)
				}
			}
			if len(f.INC.Messages) > 0 && f.INC.Message != 0 {
				add("flows[%d].inc: give message or messages, not both", i)
			}
		}
	}
	// INC groups: members (flow sources) ranked in topology order; every
	// message of a group has every member as a worker, one destination.
	members := map[uint16][]string{}
	groupFirst := map[uint16]int{}
	for i, f := range t.Flows {
		if f == nil || f.INC == nil || slices.Contains(members[f.INC.Group], f.Src) {
			continue
		}
		if _, ok := groupFirst[f.INC.Group]; !ok {
			groupFirst[f.INC.Group] = i
		}
		members[f.INC.Group] = append(members[f.INC.Group], f.Src)
	}
	workers := map[incKey][]int{}
	for i, f := range t.Flows {
		if f == nil || f.INC == nil {
			continue
		}
		for _, m := range f.INC.MessageIDs() {
			k := incKey{f.INC.Group, m}
			ws := workers[k]
			if len(ws) > 0 {
				if g := t.Flows[ws[0]]; g.Dst != f.Dst || g.INC.Offsets != f.INC.Offsets || g.INC.Seed != f.INC.Seed {
					add("flows[%d]: INC message %d/%d: dst, offsets and seed must be those of flows[%d]", i, k.group, k.message, ws[0])
				}
			}
			for _, j := range ws {
				if t.Flows[j].Src == f.Src {
					add("flows[%d]: INC message %d/%d: %s is already a worker (flows[%d])", i, k.group, k.message, f.Src, j)
				}
			}
			workers[k] = append(ws, i)
		}
	}
	for k, ws := range workers {
		m := members[k.group]
		switch {
		case len(m) > 32:
			add("INC group %d: %d members, at most 32", k.group, len(m))
		case len(ws) != len(m):
			add("INC message %d/%d: %d workers, but group %d has %d members (every message has them all)", k.group, k.message,
				len(ws), k.group, len(m))
		}
		for _, i := range ws {
			t.Flows[i].incRank, t.Flows[i].incWorkers, t.Flows[i].incFirst = slices.Index(m, t.Flows[i].Src), len(m), groupFirst[k.group]
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrTopology, errors.Join(errs...))
	}
	// Paths need a valid graph.
	for i, f := range t.Flows {
		if _, err := t.Path(f.Src, f.Dst); err != nil {
			errs = append(errs, fmt.Errorf("flows[%d]: %w", i, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrTopology, errors.Join(errs...))
	}
	return nil
}

// Hop is one directed traversal of a link.
type Hop struct {
	// Link indexes Topology.Links.
	Link int
	// From and To are the endpoints in the direction of travel.
	From, To Endpoint
}

// DirLink identifies a direction of a link: Link indexes Topology.Links,
// Reverse is false for A -> B.
type DirLink struct {
	Link    int
	Reverse bool
}

// Dir returns the directed link of the hop.
func (h Hop) Dir(t *Topology) DirLink {
	return DirLink{Link: h.Link, Reverse: t.Links[h.Link].a != h.From}
}

// Path returns the shortest path (fewest links; ties broken by link order)
// from host src to host dst. Hosts do not forward.
func (t *Topology) Path(src, dst string) ([]Hop, error) {
	type adj struct {
		link     int
		from, to Endpoint
	}
	out := map[string][]adj{}
	for i, l := range t.Links {
		out[l.a.Node] = append(out[l.a.Node], adj{i, l.a, l.b})
		out[l.b.Node] = append(out[l.b.Node], adj{i, l.b, l.a})
	}
	prev := map[string]adj{}
	seen := map[string]bool{src: true}
	queue := []string{src}
	for len(queue) > 0 && !seen[dst] {
		n := queue[0]
		queue = queue[1:]
		if n != src && t.Hosts[n] != nil {
			continue // hosts do not forward
		}
		for _, a := range out[n] {
			if !seen[a.to.Node] {
				seen[a.to.Node] = true
				prev[a.to.Node] = a
				queue = append(queue, a.to.Node)
			}
		}
	}
	if !seen[dst] {
		return nil, fmt.Errorf("no path from %s to %s", src, dst)
	}
	var path []Hop
	for n := dst; n != src; {
		a := prev[n]
		path = append(path, Hop{Link: a.link, From: a.from, To: a.to})
		n = a.from.Node
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return path, nil
}

// HostLink returns the link of a host and the switch port at its other end.
func (t *Topology) HostLink(host string) (*Link, Endpoint, error) {
	for _, l := range t.Links {
		if l.a.Node == host && l.a.IsHost() {
			return l, l.b, nil
		}
		if l.b.Node == host && l.b.IsHost() {
			return l, l.a, nil
		}
	}
	return nil, Endpoint{}, fmt.Errorf("host %s has no link", host)
}

// SwitchPorts returns the ports of a switch in ascending order, each with
// its link and the endpoint at the far end.
func (t *Topology) SwitchPorts(sw string) []SwitchPort {
	var ps []SwitchPort
	for _, l := range t.Links {
		for _, e := range [][2]Endpoint{{l.a, l.b}, {l.b, l.a}} {
			if e[0].Node == sw && !e[0].IsHost() {
				ps = append(ps, SwitchPort{Port: e[0].Port, Link: l, Peer: e[1]})
			}
		}
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Port < ps[j].Port })
	return ps
}

// SwitchPort is a port of a switch with its link and peer.
type SwitchPort struct {
	Port uint16
	Link *Link
	Peer Endpoint
}

// IfName is the Linux interface of a switch port in the fabric namespace.
func (sp SwitchPort) IfName(sw string) string { return fmt.Sprintf("%s-p%d", sw, sp.Port) }

// LinkDelay is the delay a switch's traffic manager applies: the largest
// delay of its links.
func (t *Topology) LinkDelay(sw string) time.Duration {
	var d time.Duration
	for _, sp := range t.SwitchPorts(sw) {
		d = max(d, sp.Link.delay)
	}
	return d
}

// PortMAC is the deterministic MAC of a switch port: 02:fc:<device id
// (16 bits)>:<port (16 bits)>.
func (t *Topology) PortMAC(sw string, port uint16) net.HardwareAddr {
	id := t.Switches[sw].DeviceID
	return net.HardwareAddr{0x02, 0xfc, byte(id >> 8), byte(id), byte(port >> 8), byte(port)}
}

// SwitchNames returns the switch names in order of device ID.
func (t *Topology) SwitchNames() []string {
	names := sortedKeys(t.Switches)
	sort.SliceStable(names, func(i, j int) bool {
		return t.Switches[names[i]].DeviceID < t.Switches[names[j]].DeviceID
	})
	return names
}

// HostNames returns the host names in sorted order.
func (t *Topology) HostNames() []string { return sortedKeys(t.Hosts) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
