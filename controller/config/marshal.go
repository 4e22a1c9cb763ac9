package config

import (
	"fmt"
	"sort"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/fastcnp/fastcnp/internal/units"
)

// The y* types mirror the YAML schema for Marshal; every value is written
// explicitly so the output is the effective configuration.
type (
	yConfig struct {
		API       yAPI      `yaml:"api"`
		StateFile string    `yaml:"state_file,omitempty"`
		HA        *yHA      `yaml:"ha,omitempty"`
		Metrics   yMetrics  `yaml:"metrics"`
		Announce  yAnnounce `yaml:"announce"`
		QoS       yQoS      `yaml:"qos"`
		INC       yINCTop   `yaml:"inc"`
		Switches  []ySwitch `yaml:"switches"`
	}
	yINCTop struct {
		SlotTimeout string      `yaml:"slot_timeout"`
		Groups      []yINCGroup `yaml:"groups,omitempty"`
	}
	yINCGroup struct {
		ID      uint16       `yaml:"id"`
		Members []yINCMember `yaml:"members"`
	}
	yINCMember struct {
		Host string `yaml:"host"`
		Rank uint8  `yaml:"rank"`
	}
	yPeer struct {
		Switch string `yaml:"switch"`
		Port   uint16 `yaml:"port"`
	}
	yAPI struct {
		Listen string `yaml:"listen"`
		Auth   yAuth  `yaml:"auth"`
	}
	yAuth struct {
		TokenFile string      `yaml:"token_file,omitempty"`
		TLS       *yServerTLS `yaml:"tls,omitempty"`
		MTLS      *yTLS       `yaml:"mtls,omitempty"`
		Insecure  bool        `yaml:"insecure,omitempty"`
	}
	yTLS struct {
		CA         string   `yaml:"ca"`
		Cert       string   `yaml:"cert"`
		Key        string   `yaml:"key"`
		AdminNames []string `yaml:"admin_names,omitempty,flow"`
	}
	yServerTLS struct {
		Cert     string `yaml:"cert"`
		Key      string `yaml:"key"`
		ClientCA string `yaml:"client_ca,omitempty"`
	}
	yMetrics struct {
		Listen string `yaml:"listen"`
	}
	yAnnounce struct {
		UDPPort                 uint16         `yaml:"udp_port"`
		IdleTimeout             string         `yaml:"idle_timeout"`
		MaxConnectionsPerPort   int            `yaml:"max_connections_per_port"`
		MaxConnectionsPerSender int            `yaml:"max_connections_per_sender"`
		Auth                    *yAnnounceAuth `yaml:"auth,omitempty"`
	}
	yAnnounceAuth struct {
		KeyFile              string `yaml:"key_file"`
		AllowUnauthenticated bool   `yaml:"allow_unauthenticated"`
		MaxClockSkew         string `yaml:"max_clock_skew"`
		ReplayCache          int    `yaml:"replay_cache"`
	}
	yQoS struct {
		DSCPPriority yaml.Node `yaml:"dscp_priority"`
		PCPPriority  yaml.Node `yaml:"pcp_priority"`
		Lossless     uint8     `yaml:"lossless_priority"`
		CNPDSCP      uint8     `yaml:"cnp_dscp"`
	}
	ySwitchTLS struct {
		Insecure   bool   `yaml:"insecure,omitempty"`
		CA         string `yaml:"ca,omitempty"`
		Cert       string `yaml:"cert,omitempty"`
		Key        string `yaml:"key,omitempty"`
		ServerName string `yaml:"server_name,omitempty"`
	}
	ySwitch struct {
		Name         string     `yaml:"name"`
		Address      string     `yaml:"address"`
		DeviceID     uint64     `yaml:"device_id"`
		ElectionID   []uint64   `yaml:"election_id,flow"`
		Role         string     `yaml:"role,omitempty"`
		TLS          ySwitchTLS `yaml:"tls"`
		Target       string     `yaml:"target"`
		P4Info       string     `yaml:"p4info,omitempty"`
		DeviceConfig string     `yaml:"device_config,omitempty"`
		Tofino       *yTofino   `yaml:"tofino,omitempty"`
		Keepalive    string     `yaml:"keepalive"`
		Defaults     ySettings  `yaml:"defaults"`
		Ports        []yPort    `yaml:"ports,omitempty"`
		Routes       []yRoute   `yaml:"routes,omitempty"`
		INC          *yINC      `yaml:"inc,omitempty"`
	}
	yTofino struct {
		Chip           string `yaml:"chip"`
		CPUPort        uint16 `yaml:"cpu_port"`
		RecircPort     uint16 `yaml:"recirculation_port"`
		MirrorTruncate int32  `yaml:"mirror_truncate"`
	}
	ySettings struct {
		LinkRate string `yaml:"link_rate"`
		Qth      string `yaml:"qth"`
		Tcheck   string `yaml:"tcheck"`
		RTTBase  string `yaml:"rtt_base"`
		CNPGap   string `yaml:"cnp_gap"`
		Mode     string `yaml:"mode"`
		RED      yRED   `yaml:"red"`
		MTU      string `yaml:"mtu"`
	}
	yRED struct {
		Kmin string  `yaml:"kmin"`
		Kmax string  `yaml:"kmax"`
		Pmax float64 `yaml:"pmax"`
	}
	yPort struct {
		Port      uint16   `yaml:"port"`
		MAC       string   `yaml:"mac,omitempty"`
		Subnets   []string `yaml:"subnets,omitempty,flow"`
		Peer      *yPeer   `yaml:"peer,omitempty,flow"`
		ySettings `yaml:",inline"`
	}
	yRoute struct {
		Prefix     string      `yaml:"prefix"`
		Port       uint16      `yaml:"port,omitempty"`
		NextHopMAC string      `yaml:"next_hop_mac,omitempty"`
		NextHops   []yRouteHop `yaml:"next_hops,omitempty"`
	}
	yRouteHop struct {
		Port   uint16 `yaml:"port"`
		MAC    string `yaml:"mac"`
		Weight uint32 `yaml:"weight"`
	}
	yINC struct {
		Buckets     int        `yaml:"buckets,omitempty"`
		NextHops    []yNextHop `yaml:"next_hops,omitempty"`
		SlotTimeout string     `yaml:"slot_timeout"`
		Capacity    uint64     `yaml:"capacity"`
	}
	yNextHop struct {
		Port   uint16 `yaml:"port"`
		MAC    string `yaml:"mac"`
		Weight uint64 `yaml:"weight"`
	}
)

func ySettingsOf(s PortSettings) ySettings {
	return ySettings{
		LinkRate: units.FormatRate(s.LinkRate),
		Qth:      units.FormatSize(s.Qth),
		Tcheck:   units.FormatDuration(s.Tcheck),
		RTTBase:  units.FormatDuration(s.RTTBase),
		CNPGap:   units.FormatDuration(s.CNPGap),
		Mode:     string(s.Mode),
		RED:      yRED{Kmin: units.FormatSize(s.RED.Kmin), Kmax: units.FormatSize(s.RED.Kmax), Pmax: s.RED.Pmax},
		MTU:      strconv.FormatUint(uint64(s.MTU), 10), // MTUs read best in bytes
	}
}

// prioNode renders a priority map with sorted keys.
func prioNode(m map[uint8]uint8) yaml.Node {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, int(k))
	}
	sort.Ints(keys)
	n := yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	for _, k := range keys {
		n.Content = append(n.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(k)},
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(int(m[uint8(k)]))})
	}
	return n
}

// Marshal renders the effective configuration (every default written out)
// as YAML that Parse reads back to an equal Config.
func (c *Config) Marshal() ([]byte, error) {
	y := yConfig{
		API:       yAPI{Listen: c.API.Listen, Auth: yAuth{TokenFile: c.API.Auth.TokenFile, Insecure: c.API.Auth.Insecure}},
		StateFile: c.StateFile,
		Metrics:   yMetrics{Listen: c.Metrics.Listen},
		Announce: yAnnounce{UDPPort: c.Announce.UDPPort, IdleTimeout: units.FormatDuration(c.Announce.IdleTimeout),
			MaxConnectionsPerPort: c.Announce.PortQuota(), MaxConnectionsPerSender: c.Announce.SenderQuota(),
			Auth: marshalAnnounceAuth(c.Announce.Auth)},
		QoS: yQoS{
			DSCPPriority: prioNode(c.QoS.DSCPPriority),
			PCPPriority:  prioNode(c.QoS.PCPPriority),
			Lossless:     c.QoS.LosslessPriority,
			CNPDSCP:      c.QoS.CNPDSCP,
		},
		INC: yINCTop{SlotTimeout: units.FormatDuration(c.INC.SlotTimeout)},
		HA:  yHAOf(c.HA),
	}
	if c.HA != nil {
		y.StateFile = "" // excluded by ha
	}
	for _, g := range c.INC.Groups {
		yg := yINCGroup{ID: g.ID}
		for _, m := range g.Members {
			yg.Members = append(yg.Members, yINCMember{Host: m.Host.String(), Rank: m.Rank})
		}
		y.INC.Groups = append(y.INC.Groups, yg)
	}
	if t := c.API.Auth.TLS; t != nil {
		y.API.Auth.TLS = &yServerTLS{Cert: t.Cert, Key: t.Key, ClientCA: t.ClientCA}
	}
	if m := c.API.Auth.MTLS; m != nil {
		y.API.Auth.MTLS = &yTLS{CA: m.CA, Cert: m.Cert, Key: m.Key, AdminNames: m.AdminNames}
	}
	for _, s := range c.Switches {
		ys := ySwitch{
			Name: s.Name, Address: s.Address, DeviceID: s.DeviceID,
			ElectionID: []uint64{s.ElectionID.High, s.ElectionID.Low},
			Role:       s.Role,
			TLS: ySwitchTLS{Insecure: s.TLS.Insecure, CA: s.TLS.CA, Cert: s.TLS.Cert, Key: s.TLS.Key,
				ServerName: s.TLS.ServerName},
			Target: string(s.Target), P4Info: s.P4Info, DeviceConfig: s.DeviceConfig,
			Keepalive: units.FormatDuration(s.Keepalive),
			Defaults:  ySettingsOf(s.Defaults),
		}
		if t := s.Tofino; t != nil {
			ys.Tofino = &yTofino{Chip: string(t.Chip), CPUPort: t.CPUPort, RecircPort: t.RecircPort, MirrorTruncate: t.MirrorTruncate}
		}
		for _, p := range s.Ports {
			yp := yPort{Port: p.Number, ySettings: ySettingsOf(p.Settings)}
			if p.MAC != nil {
				yp.MAC = p.MAC.String()
			}
			for _, sn := range p.Subnets {
				yp.Subnets = append(yp.Subnets, sn.String())
			}
			if p.Peer != nil {
				yp.Peer = &yPeer{Switch: p.Peer.Switch, Port: p.Peer.Port}
			}
			ys.Ports = append(ys.Ports, yp)
		}
		for _, r := range s.Routes {
			yr := yRoute{Prefix: r.Prefix.String()}
			if len(r.NextHops) > 0 {
				for _, h := range r.NextHops {
					yr.NextHops = append(yr.NextHops, yRouteHop{Port: h.Port, MAC: h.MAC.String(), Weight: h.Weight})
				}
			} else {
				yr.Port, yr.NextHopMAC = r.Port, r.NextHopMAC.String()
			}
			ys.Routes = append(ys.Routes, yr)
		}
		// The switch's slot timeout is written even without INC routing
		// (an inc block of only slot_timeout).
		yi := &yINC{SlotTimeout: units.FormatDuration(s.INCSlotTimeout), Capacity: s.INCCapacity}
		if s.INC != nil {
			yi.Buckets = s.INC.Buckets
			for _, h := range s.INC.NextHops {
				yi.NextHops = append(yi.NextHops, yNextHop{Port: h.Port, MAC: h.MAC.String(), Weight: h.Weight})
			}
		}
		ys.INC = yi
		y.Switches = append(y.Switches, ys)
	}
	out, err := yaml.Marshal(&y)
	if err != nil {
		return nil, fmt.Errorf("config: marshal: %w", err)
	}
	return out, nil
}

func marshalAnnounceAuth(a *AnnounceAuth) *yAnnounceAuth {
	if a == nil {
		return nil
	}
	return &yAnnounceAuth{KeyFile: a.KeyFile, AllowUnauthenticated: a.AllowUnauthenticated,
		MaxClockSkew: units.FormatDuration(a.Skew()), ReplayCache: a.CacheSize()}
}
