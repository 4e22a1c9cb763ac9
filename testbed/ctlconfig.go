package testbed

import (
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/internal/units"
)

// Target names the switch implementation of a run.
type Target string

// Targets.
const (
	// TargetFastcnp is the Go software switch fastcnp-switch (real PFC).
	TargetFastcnp Target = "fastcnp-switch"
	// TargetBMv2 is BMv2 simple_switch_grpc (Mininet path only; no PFC).
	TargetBMv2 Target = "bmv2"
)

// ControllerOptions are the run-specific parts of the fastcnpd configuration.
type ControllerOptions struct {
	// Mode is the congestion-feedback mode of every switch port.
	Mode config.Mode
	// GRPCHost is the host part of the switches' P4Runtime addresses
	// (default 127.0.0.1).
	GRPCHost string
	// APIListen is fastcnpd's API address (default 127.0.0.1:9560).
	APIListen string
	// MetricsListen is fastcnpd's metrics address ("" disables metrics).
	MetricsListen string
	// StateFile is where fastcnpd keeps its state.
	StateFile string
	// Target is the switch kind (default fastcnp-switch).
	Target Target
	// P4Info and DeviceConfig are the pipeline files (BMv2 only).
	P4Info, DeviceConfig string
	// IdleTimeout is announce.idle_timeout (0: config.DefaultIdleTimeout).
	IdleTimeout time.Duration
	// AnnounceKeyFile, if set, is announce.auth.key_file: announcements
	// must be authenticated.
	AnnounceKeyFile string
	// RED, if set, replaces the topology's marking curve (DCTCP's step).
	RED *config.RED
}

// ControllerConfig builds the fastcnpd configuration of the topology: every
// switch with its ports (MAC, rate, mode, thresholds; host subnets as /32s
// behind the host-facing ports) and a /32 route per host along the
// shortest path. The result has passed config validation.
func (t *Topology) ControllerConfig(o ControllerOptions) (*config.Config, error) {
	p := t.Params()
	if o.Mode == "" {
		o.Mode = config.ModeFastCNP
	}
	if o.GRPCHost == "" {
		o.GRPCHost = "127.0.0.1"
	}
	if o.APIListen == "" {
		o.APIListen = config.DefaultAPIListen
	}
	if o.StateFile == "" {
		o.StateFile = "fastcnpd-state.json"
	}
	if o.Target == "" {
		o.Target = TargetFastcnp
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = config.DefaultIdleTimeout
	}
	c := &config.Config{
		API:       config.API{Listen: o.APIListen, Auth: config.Auth{Insecure: true}},
		StateFile: o.StateFile,
		Metrics:   config.Metrics{Listen: o.MetricsListen},
		Announce:  config.Announce{UDPPort: config.DefaultAnnouncePort, IdleTimeout: o.IdleTimeout},
		QoS: config.QoS{
			DSCPPriority:     config.DefaultDSCPPriority(),
			PCPPriority:      config.DefaultPCPPriority(),
			LosslessPriority: config.DefaultLosslessPriority,
			CNPDSCP:          config.DefaultCNPDSCP,
		},
	}
	if o.AnnounceKeyFile != "" {
		c.Announce.Auth = &config.AnnounceAuth{KeyFile: o.AnnounceKeyFile}
	}
	for _, name := range t.SwitchNames() {
		sw := t.Switches[name]
		def := config.PortSettings{
			LinkRate: p.Rate, Qth: p.Qth, Tcheck: p.RTTBase, RTTBase: p.RTTBase, CNPGap: p.CNPGap,
			Mode: o.Mode, RED: config.RED{Kmin: p.REDKmin, Kmax: p.REDKmax, Pmax: p.REDPmax},
			MTU: units.Size(p.MTU),
		}
		if o.RED != nil {
			def.RED = *o.RED
		}
		cs := config.Switch{
			Name: name, Address: net.JoinHostPort(o.GRPCHost, fmt.Sprint(sw.GRPCPort)),
			DeviceID: sw.DeviceID, ElectionID: config.ElectionID{Low: 1},
			TLS: config.SwitchTLS{Insecure: true}, Target: config.Target(o.Target),
			P4Info: o.P4Info, DeviceConfig: o.DeviceConfig, Defaults: def,
		}
		cs.INCCapacity, cs.INCSlotTimeout = config.DefaultINCCapacity, config.DefaultINCSlotTimeout
		if sw.INCCapacity > 0 {
			cs.INCCapacity = sw.INCCapacity
		}
		for _, sp := range t.SwitchPorts(name) {
			set := def
			set.LinkRate = sp.Link.rate
			port := config.Port{Number: sp.Port, Settings: set, MAC: t.PortMAC(name, sp.Port)}
			if sp.Peer.IsHost() {
				a := t.Hosts[sp.Peer.Node].addr.Addr()
				port.Subnets = []netip.Prefix{netip.PrefixFrom(a, 32)}
			} else {
				// The links between switches: fastcnpd builds the INC tree on them.
				port.Peer = &config.PeerPort{Switch: sp.Peer.Node, Port: sp.Peer.Port}
			}
			cs.Ports = append(cs.Ports, port)
		}
		for _, h := range t.HostNames() {
			sp, err := t.nextHop(name, h)
			if err != nil {
				return nil, err
			}
			next := t.PortMACOf(sp.Peer)
			cs.Routes = append(cs.Routes, config.Route{
				Prefix: netip.PrefixFrom(t.Hosts[h].addr.Addr(), 32), Port: sp.Port, NextHopMAC: next,
			})
		}
		c.Switches = append(c.Switches, cs)
	}
	c.INC.SlotTimeout = config.DefaultINCSlotTimeout
	c.INC.Groups = t.incGroups()
	// Validate through the real parser: what fastcnpd reads is what we checked.
	y, err := c.Marshal()
	if err != nil {
		return nil, fmt.Errorf("testbed: controller config: %w", err)
	}
	parsed, err := config.ParseFile("generated fastcnpd.yaml", y)
	if err != nil {
		return nil, fmt.Errorf("testbed: generated controller config is invalid: %w", err)
	}
	return parsed, nil
}

// PortMACOf returns the MAC at an endpoint: the host's MAC or the switch
// port's.
func (t *Topology) PortMACOf(e Endpoint) net.HardwareAddr {
	if e.IsHost() {
		return t.Hosts[e.Node].mac
	}
	return t.PortMAC(e.Node, e.Port)
}

// nextHop returns the port of switch sw on the shortest path to host h.
func (t *Topology) nextHop(sw, h string) (SwitchPort, error) {
	_, hp, err := t.HostLink(h)
	if err != nil {
		return SwitchPort{}, err
	}
	// Shortest path from any host behind sw would do, but switches may have
	// no host: search from the switch itself.
	type item struct {
		node  string
		first SwitchPort
	}
	seen := map[string]bool{sw: true}
	var queue []item
	for _, sp := range t.SwitchPorts(sw) {
		if sp.Peer.Node == h {
			return sp, nil
		}
		if !sp.Peer.IsHost() && !seen[sp.Peer.Node] {
			seen[sp.Peer.Node] = true
			queue = append(queue, item{sp.Peer.Node, sp})
		}
	}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		if it.node == hp.Node {
			return it.first, nil
		}
		for _, sp := range t.SwitchPorts(it.node) {
			if !sp.Peer.IsHost() && !seen[sp.Peer.Node] {
				seen[sp.Peer.Node] = true
				queue = append(queue, item{sp.Peer.Node, it.first})
			}
		}
	}
	return SwitchPort{}, fmt.Errorf("testbed: switch %s has no path to host %s", sw, h)
}

// incGroups returns the INC membership of the topology's INC flows: each
// group with its members (the flows' sources) and their ranks.
func (t *Topology) incGroups() []config.INCGroup {
	var out []config.INCGroup
	idx := map[uint16]int{}
	for _, f := range t.Flows {
		if f.INC == nil {
			continue
		}
		i, ok := idx[f.INC.Group]
		if !ok {
			i = len(out)
			idx[f.INC.Group] = i
			out = append(out, config.INCGroup{ID: f.INC.Group})
		}
		host := t.Hosts[f.Src].addr.Addr()
		if out[i].Member(host) == nil {
			out[i].Members = append(out[i].Members, config.INCMember{Host: host, Rank: uint8(f.incRank)})
		}
	}
	return out
}
