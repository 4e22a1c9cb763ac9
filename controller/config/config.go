// Package config is the schema, defaults and validation of the fastcnpd YAML
// configuration (docs/config.md is the reference).
//
// Parse decodes through yaml.v3 nodes so that every problem names its YAML
// line and field path; unknown fields are errors. All problems of a file are
// reported at once (errors.Join), each as "file:line: field.path: message".
// Values with units use internal/units: sizes "120KiB", rates "100Gb/s",
// durations "8us".
//
// The package is pure apart from Load, which only reads the file.
package config

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/fastcnp/fastcnp/internal/units"
	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/wire"
)

// Config is a validated fastcnpd configuration with all defaults applied.
type Config struct {
	// API is the controller's own API endpoint (used by fastcnpctl).
	API API
	// StateFile is where fastcnpd keeps state across restarts (without HA).
	StateFile string
	// HA, when set, keeps the state in etcd and elects one leader among the
	// fastcnpd instances (nil: single instance, state file).
	HA *HA
	// Metrics is the metrics endpoint.
	Metrics Metrics
	// Announce configures RDMA-connection announcements (spec 04).
	Announce Announce
	// QoS maps DSCP/PCP to priorities and names the lossless priority.
	QoS QoS
	// INC holds the INC settings every switch inherits (the top-level inc).
	INC INCSettings
	// Switches are the switches fastcnpd controls, in file order.
	Switches []Switch
}

// API is the listen address and authentication of the controller API.
type API struct {
	// Listen is host:port.
	Listen string
	// Auth is how clients authenticate.
	Auth Auth
}

// Auth selects exactly one client authentication method.
type Auth struct {
	// TokenFile holds a bearer token clients must present.
	TokenFile string
	// TLS, with TokenFile, serves the API over TLS so that tokens do not
	// cross the network in plaintext (nil: plaintext gRPC).
	TLS *ServerTLS
	// MTLS, if set, requires client certificates signed by MTLS.CA.
	MTLS *TLSFiles
	// Insecure disables authentication (development only).
	Insecure bool
}

// ServerTLS is the API server's certificate for token authentication.
type ServerTLS struct {
	// Cert and Key are the server's certificate and private key (PEM).
	Cert, Key string
	// ClientCA, if set, also requires a client certificate signed by it;
	// the token still decides the role.
	ClientCA string
}

// TLSFiles names PEM files.
type TLSFiles struct {
	// CA is the CA bundle that verifies the peer.
	CA string
	// Cert and Key are this side's certificate and private key.
	Cert, Key string
	// AdminNames (API mTLS only) are the client certificate names (subject
	// common name or DNS SAN) that get the admin role; other verified
	// clients may only read. Empty: every verified client is admin.
	AdminNames []string
}

// Metrics is the metrics endpoint.
type Metrics struct {
	// Listen is host:port; empty disables metrics.
	Listen string
}

// Announce configures the announcement protocol.
type Announce struct {
	// UDPPort is the destination UDP port of announcements.
	UDPPort uint16
	// IdleTimeout removes an RDMA connection that was not refreshed for so long.
	IdleTimeout time.Duration
	// MaxConnectionsPerPort is how many announced connections the hosts
	// behind one ingress port of a switch may hold at once, and
	// MaxConnectionsPerSender how many one sender IP may: an announcement
	// of a new connection beyond either is refused, so that one host cannot
	// fill the CONN_TABLE_SIZE connection table and starve the others.
	// 0 means the default (DefaultMaxConnectionsPerPort,
	// DefaultMaxConnectionsPerSender); see PortQuota and SenderQuota.
	MaxConnectionsPerPort   int
	MaxConnectionsPerSender int
	// Auth authenticates announcements with keys fastcnpd holds (nil:
	// announcements are not authenticated, a lab set-up).
	Auth *AnnounceAuth
}

// AnnounceAuth configures authenticated announcements (docs/config.md,
// "Announcement keys").
type AnnounceAuth struct {
	// KeyFile holds the hosts' keys: "ID HOST KEY SENDERS" lines.
	KeyFile string
	// AllowUnauthenticated also accepts announcements without a trailer
	// from senders no key covers (a fabric moving to keys); off by default.
	AllowUnauthenticated bool
	// MaxClockSkew is how far an announcement's timestamp may be from
	// fastcnpd's clock, either way (0: DefaultMaxClockSkew).
	MaxClockSkew time.Duration
	// ReplayCache is how many recent announcements are remembered against
	// replay (0: DefaultReplayCache).
	ReplayCache int
}

// Skew returns the effective MaxClockSkew.
func (a *AnnounceAuth) Skew() time.Duration {
	if a.MaxClockSkew <= 0 {
		return DefaultMaxClockSkew
	}
	return a.MaxClockSkew
}

// CacheSize returns the effective ReplayCache.
func (a *AnnounceAuth) CacheSize() int {
	if a.ReplayCache <= 0 {
		return DefaultReplayCache
	}
	return a.ReplayCache
}

// PortQuota returns the effective MaxConnectionsPerPort.
func (a Announce) PortQuota() int {
	if a.MaxConnectionsPerPort <= 0 {
		return DefaultMaxConnectionsPerPort
	}
	return a.MaxConnectionsPerPort
}

// SenderQuota returns the effective MaxConnectionsPerSender.
func (a Announce) SenderQuota() int {
	if a.MaxConnectionsPerSender <= 0 {
		return DefaultMaxConnectionsPerSender
	}
	return a.MaxConnectionsPerSender
}

// QoS is the priority classification shared by all switches.
type QoS struct {
	// DSCPPriority maps DSCP (0..63) to priority (0..7).
	DSCPPriority map[uint8]uint8
	// PCPPriority maps 802.1Q PCP (0..7) to priority (0..7).
	PCPPriority map[uint8]uint8
	// LosslessPriority is the PFC-protected priority (0..7).
	LosslessPriority uint8
	// CNPDSCP is the DSCP of CNPs the switch sends (0..63).
	CNPDSCP uint8
}

// INCSettings are the INC settings shared by all switches; a switch's own
// inc block overrides them.
type INCSettings struct {
	// SlotTimeout is how long an INC aggregation slot may stay held by a
	// message before another message may take it over (the message is
	// taken for abandoned: spec 04, "free slots of abandoned messages");
	// 0 turns slot aging off.
	SlotTimeout time.Duration
	// Groups are the INC communication groups: who may join which group
	// with which rank (announcements claiming anything else are refused),
	// and what every switch's aggregation waits for.
	Groups []INCGroup
}

// INCGroup is one INC communication group and its members.
type INCGroup struct {
	// ID is the communication-group ID, 1..65535.
	ID uint16
	// Members are the workers, each with its rank (0..31, unique).
	Members []INCMember
}

// INCMember is a worker of an INC group: its host IPv4 address and rank.
type INCMember struct {
	Host netip.Addr
	Rank uint8
}

// Group returns the INC group with the given ID, or nil.
func (s *INCSettings) Group(id uint16) *INCGroup {
	for i := range s.Groups {
		if s.Groups[i].ID == id {
			return &s.Groups[i]
		}
	}
	return nil
}

// Member returns the member of g at host, or nil.
func (g *INCGroup) Member(host netip.Addr) *INCMember {
	for i := range g.Members {
		if g.Members[i].Host == host {
			return &g.Members[i]
		}
	}
	return nil
}

// Target is the kind of P4Runtime target a switch is.
type Target string

// Targets.
const (
	TargetFastcnp Target = "fastcnp-switch"
	TargetBMv2    Target = "bmv2"
	TargetTofino  Target = "tofino"
)

// Mode is a port's congestion-feedback mode (spec 01).
type Mode string

// Modes.
const (
	// ModeECN is classic DCQCN: RED marking, the receiver makes CNPs.
	ModeECN Mode = "ecn"
	// ModeFastCNP is switch-made CNPs with an explicit window.
	ModeFastCNP Mode = "fastcnp"
	// ModeINT is HPCC's in-band telemetry: the port adds its INT hop record
	// to data packets that carry an INT header (no marking, no CNPs).
	ModeINT Mode = "int"
)

// Modes lists every mode, in the order of their P4 values.
var Modes = []Mode{ModeECN, ModeFastCNP, ModeINT}

// Valid reports whether m is one of Modes.
func (m Mode) Valid() bool { return slices.Contains(Modes, m) }

// ElectionID is a P4Runtime election ID (128 bits as high and low halves).
type ElectionID struct {
	High, Low uint64
}

// IsZero reports whether both halves are 0.
func (e ElectionID) IsZero() bool { return e.High == 0 && e.Low == 0 }

// SwitchTLS is how fastcnpd connects to a switch's P4Runtime server.
type SwitchTLS struct {
	// Insecure uses plaintext gRPC.
	Insecure bool
	// CA verifies the switch; Cert/Key (both or neither) authenticate us.
	CA, Cert, Key string
	// ServerName overrides the name checked in the switch's certificate.
	ServerName string
}

// Switch is one P4Runtime target and its forwarding configuration.
type Switch struct {
	// Name is unique among switches.
	Name string
	// Address is the P4Runtime server, host:port; unique.
	Address string
	// DeviceID is the P4Runtime device_id; non-zero, unique.
	DeviceID uint64
	// ElectionID is the election ID fastcnpd uses; non-zero.
	ElectionID ElectionID
	// Role is the P4Runtime role name; empty is the default role.
	Role string
	// TLS is the transport security to the switch.
	TLS SwitchTLS
	// Target is the target kind.
	Target Target
	// P4Info and DeviceConfig are the pipeline files (optional for
	// fastcnp-switch, which has its pipeline built in). For tofino,
	// DeviceConfig is p4c-barefoot's output directory (or its .conf), from
	// which fastcnpd builds Stratum's BfPipelineConfig, or a serialized
	// BfPipelineConfig.
	P4Info, DeviceConfig string
	// Tofino holds the Tofino settings of a tofino switch (nil otherwise).
	Tofino *TofinoSettings
	// Defaults are the switch-wide port settings, resolved.
	Defaults PortSettings
	// Ports are the configured ports with resolved settings, in file order.
	Ports []Port
	// Routes are the IPv4/IPv6 routes, in file order.
	Routes []Route
	// INC is the INC route table input; nil if not configured.
	INC *INC
	// INCSlotTimeout is the switch's INC slot-aging timeout, resolved (its
	// inc.slot_timeout, else the top-level one, else the default); 0: off.
	INCSlotTimeout time.Duration
	// INCCapacity is the switch's INC capacity weight as an upper next hop
	// of the switches below it (inc.capacity, default 1; 0 takes it out of
	// their INC route tables).
	INCCapacity uint64
	// Keepalive is the gRPC keepalive ping interval towards the switch's
	// P4Runtime server (0: off): a link that dies silently is noticed
	// within about Keepalive + KeepaliveTimeout.
	Keepalive time.Duration
}

// TofinoChip is the Tofino generation a tofino switch runs (docs/tofino.md).
type TofinoChip string

// Tofino chips.
const (
	Tofino1 TofinoChip = "tofino1"
	Tofino2 TofinoChip = "tofino2"
)

// TofinoSettings are a tofino switch's ports the P4 program was compiled for
// (TNA_CPU_PORT, TNA_RECIRC_PORT) and its mirror session's truncation.
type TofinoSettings struct {
	// Chip picks the defaults: Tofino 1 CPU port 192 (a 2-pipe part; 320 on
	// a 4-pipe one), recirculation port 68; Tofino 2: 0 and 6.
	Chip TofinoChip
	// CPUPort is the PCIe CPU port (packet-in and packet-out); it must be
	// the one the program was compiled with.
	CPUPort uint16
	// RecircPort is the recirculation port, the mirror session's port: switch
	// CNPs and egress digests loop back to ingress through it.
	RecircPort uint16
	// MirrorTruncate is the mirror session's max_pkt_len (P4Runtime clone
	// session packet_length_bytes): how much of a data packet its switch CNP
	// carries back.
	MirrorTruncate int32
}

// DefaultMirrorTruncate keeps a mirrored packet's recirculation header and its
// Ethernet, 802.1Q, IPv4, UDP and BTH headers (docs/tofino.md); MinMirrorTruncate
// is the least that does (34 + 18 + 20 + 8 + 12 bytes, rounded up).
const (
	DefaultMirrorTruncate = 128
	MinMirrorTruncate     = 96
)

// DefaultTofino returns the settings of a chip's defaults.
func DefaultTofino(chip TofinoChip) TofinoSettings {
	if chip == Tofino2 {
		return TofinoSettings{Chip: Tofino2, CPUPort: p4src.Tofino2CPUPort, RecircPort: p4src.Tofino2RecircPort,
			MirrorTruncate: DefaultMirrorTruncate}
	}
	return TofinoSettings{Chip: Tofino1, CPUPort: p4src.Tofino1CPUPort, RecircPort: p4src.Tofino1RecircPort,
		MirrorTruncate: DefaultMirrorTruncate}
}

// PortSettings are the per-port settings of spec 01 and 02.
type PortSettings struct {
	// LinkRate is C, the egress link rate.
	LinkRate units.Rate
	// Qth is the queue threshold.
	Qth units.Size
	// Tcheck is the re-check interval of an undetermined port.
	Tcheck time.Duration
	// RTTBase is the fabric base RTT.
	RTTBase time.Duration
	// CNPGap is the least time between two switch CNPs to one flow.
	CNPGap time.Duration
	// Mode is ecn, fastcnp or int.
	Mode Mode
	// RED is the ECN marking curve (used in ecn mode, and as the fallback
	// marking when a CNP cannot be addressed).
	RED RED
	// MTU is the largest packet; the window never drops below it.
	MTU units.Size
}

// RED is DCQCN's marking curve.
type RED struct {
	// Kmin and Kmax are the queue lengths where marking starts and where it
	// reaches certainty.
	Kmin, Kmax units.Size
	// Pmax is the marking probability at Kmax-, in (0, 1].
	Pmax float64
}

// Port is one switch port.
type Port struct {
	// Number is the port number, 1..511.
	Number uint16
	// Settings are the port's effective settings.
	Settings PortSettings
	// MAC is the port's source MAC (nil if not set).
	MAC net.HardwareAddr
	// Subnets are the host subnets behind this port, for announcement checks.
	Subnets []netip.Prefix
	// Peer is the switch port at the other end of this port's link, when
	// it leads to another switch of the config (nil: a host port, or a
	// link fastcnpd does not know). The INC tree is built from these links.
	Peer *PeerPort
}

// PeerPort names a port of another switch.
type PeerPort struct {
	Switch string
	Port   uint16
}

// Route forwards a prefix out of a port to a next-hop MAC, or over several
// weighted next hops (ECMP).
type Route struct {
	// Prefix is the destination prefix (host bits zero).
	Prefix netip.Prefix
	// Port is the egress port of a route with one next hop; it must be
	// configured and have a MAC. 0 for an ECMP route.
	Port uint16
	// NextHopMAC is the destination MAC written on egress (one next hop).
	NextHopMAC net.HardwareAddr
	// NextHops are the next hops of an ECMP route (two or more, distinct);
	// nil for a route with one next hop (a next_hops list of one is read
	// as port and next_hop_mac).
	NextHops []NextHop
}

// NextHop is one next hop of an ECMP route.
type NextHop struct {
	// Port is the egress port; it must be configured and have a MAC.
	Port uint16
	// MAC is the destination MAC written on egress.
	MAC net.HardwareAddr
	// Weight is the hop's share of the flows (1..MaxECMPWeight).
	Weight uint32
}

// Hops returns the route's next hops: NextHops, or the single next hop
// (weight 1).
func (r *Route) Hops() []NextHop {
	if len(r.NextHops) > 0 {
		return r.NextHops
	}
	return []NextHop{{Port: r.Port, MAC: r.NextHopMAC, Weight: 1}}
}

// INC is a switch's INC next hops and bucket count (spec 04 step 5).
type INC struct {
	// Buckets is the table size N, 1..65536.
	Buckets int
	// NextHops are the candidate next hops, in file order.
	NextHops []INCNextHop
}

// INCNextHop is an INC next hop with its capacity weight.
type INCNextHop struct {
	// Port is the egress port (also the next-hop ID of the route table).
	Port uint16
	// MAC is the destination MAC written on egress.
	MAC net.HardwareAddr
	// Weight is the capacity weight (>= 0; 0 takes the hop out).
	Weight uint64
}

// Connection quotas of announcements (Announce).
const (
	// DefaultMaxConnectionsPerPort is a quarter of the connection table
	// (CONN_TABLE_SIZE 4096): no ingress port can take more, so at least
	// four ports can always fill their quota.
	DefaultMaxConnectionsPerPort = p4src.ConnTableSize / 4
	// DefaultMaxConnectionsPerSender is half of a port's quota, so two
	// hosts sharing a port both get room.
	DefaultMaxConnectionsPerSender = DefaultMaxConnectionsPerPort / 2
)

// Defaults (spec 01, 02, 04, 05).
const (
	DefaultAPIListen     = "127.0.0.1:9560"
	DefaultMetricsListen = "127.0.0.1:9561"
	DefaultStateFile     = "/var/lib/fastcnp/state.json"
	DefaultAnnouncePort  = wire.DefaultAnnouncePort
	DefaultIdleTimeout   = 60 * time.Second
	// DefaultMaxClockSkew bounds how old (or how far ahead) an
	// authenticated announcement's timestamp may be: hosts synchronised by
	// NTP are within milliseconds; 30 s leaves room for a clock being
	// stepped while keeping the replay window short.
	DefaultMaxClockSkew = 30 * time.Second
	// DefaultReplayCache is how many authenticated announcements are
	// remembered against replay: 65,536, a minute of 1,000 per second
	// (10,000 hosts refreshing every 10 s) within a 30 s skew either way,
	// about 5 MB.
	DefaultReplayCache      = 1 << 16
	DefaultLosslessPriority = 3
	DefaultCNPDSCP          = 48
	DefaultLinkRate         = 100 * units.Gbps
	DefaultRTTBase          = 8 * time.Microsecond
	DefaultCNPGap           = 4 * time.Microsecond
	DefaultMode             = ModeFastCNP
	DefaultMTU              = units.Size(1500)
	DefaultKmin             = 5 * units.KB
	DefaultKmax             = 200 * units.KB
	DefaultPmax             = 0.01
	DefaultINCBuckets       = 256
	DefaultINCCapacity      = 1
	// MaxINCMembers is the most members of an INC group: the width of the
	// data plane's contributor bitmap (ranks 0..31).
	MaxINCMembers = 32
	// DefaultINCSlotTimeout is the INC slot-aging timeout (docs/config.md
	// explains the choice): longer than a live message may hold a slot,
	// a RoCE retransmission of a lost contribution included.
	DefaultINCSlotTimeout = 100 * time.Millisecond
	// MinINCSlotTimeout and MaxINCSlotTimeout bound a non-zero slot
	// timeout: BMv2 timestamps count microseconds, and the data plane holds
	// the timeout in 32 bits of nanoseconds.
	MinINCSlotTimeout = time.Microsecond
	MaxINCSlotTimeout = time.Duration(math.MaxUint32)
	// MaxECMPWeight is the largest sum of the weights of one ECMP route's
	// next hops, and of all the ECMP routes of a switch together: the size
	// of the action selector next_hop_selector (NEXT_HOP_GROUP_MEMBERS;
	// P4Runtime SumOfWeights semantics, no max_group_size).
	MaxECMPWeight = p4src.NextHopGroupMembers
	// MaxECMPRoutes is the number of ECMP routes (IPv4) a switch holds: the
	// size of next_hop_group_select (NEXT_HOP_GROUPS).
	MaxECMPRoutes = p4src.NextHopGroups
	// QthAt100G is Qth at 100 Gb/s; the default scales linearly with rate.
	QthAt100G = 100 * units.KB
	// MaxPort is the largest port number (9-bit port IDs, 511 usable).
	MaxPort = 511
	// DefaultKeepalive is the keepalive ping interval: above the 5 minutes
	// gRPC servers (BMv2's PI server, fastcnp-switch) accept pings at by
	// default, with a margin.
	DefaultKeepalive = 6 * time.Minute
	// KeepaliveTimeout is how long a keepalive ping may go unanswered.
	KeepaliveTimeout = 20 * time.Second
	// MinKeepalive is the shortest keepalive gRPC sends pings at.
	MinKeepalive = 10 * time.Second
	// ServerPingMinTime is how often a gRPC server accepts pings on a
	// connection by default (grpc-go EnforcementPolicy.MinTime, grpc C++
	// GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS); more often,
	// it closes the connection with GOAWAY "too_many_pings".
	ServerPingMinTime = 5 * time.Minute
)

// DefaultQth returns the default Qth for a link rate: 100 KB at 100 Gb/s,
// proportional to the rate, at least one byte.
func DefaultQth(rate units.Rate) units.Size {
	q := uint64(rate) / (uint64(100*units.Gbps) / uint64(QthAt100G)) // 1e11/1e5 = 1e6 b/s per byte
	if q == 0 {
		q = 1
	}
	return units.Size(q)
}

// DefaultDSCPPriority is the RoCE set-up: DSCP 26 -> 3 (lossless), CNPs at
// DSCP 48 -> 6.
func DefaultDSCPPriority() map[uint8]uint8 { return map[uint8]uint8{26: 3, 48: 6} }

// DefaultPCPPriority maps each PCP to the priority of the same number.
func DefaultPCPPriority() map[uint8]uint8 {
	m := make(map[uint8]uint8, 8)
	for p := uint8(0); p < 8; p++ {
		m[p] = p
	}
	return m
}

// Load reads and parses the config file at path.
func Load(path string) (*Config, error) {
	data, err := ReadFileLimited(path, "config file", MaxConfigSize)
	if IsTooLarge(err) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return ParseFile(path, data)
}

// Parse parses config bytes; errors name the source as "config".
func Parse(data []byte) (*Config, error) { return ParseFile("config", data) }

// ParseFile parses config bytes; errors name the source as name. Bytes
// beyond MaxConfigSize are refused with a *TooLargeError, unparsed; at
// most MaxErrors problems are listed, the rest counted.
func ParseFile(name string, data []byte) (*Config, error) {
	if len(data) > MaxConfigSize {
		return nil, &TooLargeError{What: "config", Name: name, Size: int64(len(data)), Limit: MaxConfigSize}
	}
	d := &decoder{file: name}
	c := d.decodeDocument(data)
	if err := d.err(); err != nil {
		return nil, err
	}
	return c, nil
}

// Switch returns the switch with the given name, or nil.
func (c *Config) Switch(name string) *Switch {
	for i := range c.Switches {
		if c.Switches[i].Name == name {
			return &c.Switches[i]
		}
	}
	return nil
}

// MemberSwitch returns the switch and port behind which host is (the port
// whose subnets hold it), or "" and 0.
func (c *Config) MemberSwitch(host netip.Addr) (string, uint16) {
	for i := range c.Switches {
		for _, p := range c.Switches[i].Ports {
			for _, sn := range p.Subnets {
				if sn.Contains(host) {
					return c.Switches[i].Name, p.Number
				}
			}
		}
	}
	return "", 0
}

// Port returns the port with the given number, or nil.
func (s *Switch) Port(n uint16) *Port {
	for i := range s.Ports {
		if s.Ports[i].Number == n {
			return &s.Ports[i]
		}
	}
	return nil
}
