package testbed

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/fastcnp/fastcnp/internal/units"
	"github.com/fastcnp/fastcnp/wire"
)

// Plan is everything another launcher (mininet/fastcnp_mininet.py) needs
// to run a topology without re-implementing the testbed's rules: the
// command-line arguments of every switch and host (without binary,
// interface names and statistics file), the links with port numbers and
// MACs, and the files of the controller configuration and the flows.
type Plan struct {
	Topology string `json:"topology"`
	Mode     string `json:"mode"`
	Target   Target `json:"target"`
	// ControllerConfig and FlowsFile are absolute paths written by WritePlan.
	ControllerConfig string `json:"controller_config"`
	FlowsFile        string `json:"flows_file"`
	// DurationS is the run duration in seconds.
	DurationS float64 `json:"duration_s"`
	// MTU is the link MTU every interface must have (jumbo frames).
	MTU      int          `json:"mtu"`
	Switches []PlanSwitch `json:"switches"`
	Hosts    []PlanHost   `json:"hosts"`
	Links    []PlanLink   `json:"links"`
}

// PlanSwitch is one switch of a plan.
type PlanSwitch struct {
	Name     string `json:"name"`
	DeviceID uint64 `json:"device_id"`
	GRPCPort int    `json:"grpc_port"`
	// Args are fastcnp-switch arguments besides --device-id, -i and
	// --grpc-server-addr: port rates, buffer, link delay, PFC settings.
	Args []string `json:"args"`
}

// PlanHost is one host of a plan.
type PlanHost struct {
	Name string `json:"name"`
	IP   string `json:"ip"`
	MAC  string `json:"mac"`
	// Args are fastcnp-host arguments besides --iface and --stats.
	Args []string `json:"args"`
}

// PlanLink is one link; a host end has Port 0.
type PlanLink struct {
	A     string `json:"a"`
	APort uint16 `json:"a_port"`
	AMAC  string `json:"a_mac"`
	B     string `json:"b"`
	BPort uint16 `json:"b_port"`
	BMAC  string `json:"b_mac"`
	// Rate is the link rate; RateBps the same in bits/s. fastcnp-switch
	// shapes its ports itself; under BMv2, Mininet shapes the link (htb).
	Rate    string  `json:"rate"`
	RateBps float64 `json:"rate_bps"`
}

// hostArgs returns fastcnp-host's arguments for host h (without --iface
// and --stats).
func (t *Topology) hostArgs(h string, algo, flowsPath string, statsEvery time.Duration, dcqcn string) ([]string, error) {
	host := t.Hosts[h]
	hl, sp, err := t.HostLink(h)
	if err != nil {
		return nil, err
	}
	p := t.Params()
	args := []string{"--ip", host.addr.Addr().String(), "--mac", host.mac.String(),
		"--gateway-mac", t.PortMAC(sp.Node, sp.Port).String(), "--cc", algo,
		"--line-rate", units.FormatRate(hl.rate), "--base-rtt", units.FormatDuration(p.RTTBase),
		"--flows", flowsPath, "--stats-interval", units.FormatDuration(statsEvery), "--log-level", "warn",
		"--mss", strconv.Itoa(IBMTU(p.MTU)), "--rto", units.FormatDuration(p.RTO),
		"--cc-scale", strconv.FormatFloat(p.CCScale, 'g', -1, 64), "--burst-time", units.FormatDuration(p.BurstTime)}
	if dcqcn != "" {
		args = append(args, "--params", dcqcn)
	}
	return args, nil
}

// IBMTU returns the RoCE payload size (the InfiniBand MTU: 256, 512, 1024,
// 2048 or 4096) a host uses on a link of IP MTU mtu: the largest that fits
// with the IPv4, UDP, BTH and ICRC headers (44 bytes), as a RoCE NIC picks
// its active MTU from the interface MTU. 1500 gives 1024, 9000 gives 4096;
// 256 is the floor (topologies have an MTU of at least 300).
func IBMTU(mtu int) int {
	over := wire.IPv4Len + wire.UDPLen + wire.BTHLen + wire.ICRCLen
	for _, m := range []int{4096, 2048, 1024, 512} {
		if m+over <= mtu {
			return m
		}
	}
	return 256
}

// switchArgs returns fastcnp-switch's arguments for switch sw besides
// --device-id, -i and --grpc-server-addr.
func (t *Topology) switchArgs(sw string) []string {
	p := t.Params()
	var args []string
	for _, sp := range t.SwitchPorts(sw) {
		args = append(args, "--port-rate", fmt.Sprintf("%d=%s", sp.Port, units.FormatRate(sp.Link.rate)))
	}
	args = append(args, "--cpu-port", "255", "--buffer-size", units.FormatSize(t.Switches[sw].buffer),
		"--link-delay", units.FormatDuration(t.LinkDelay(sw)), "--log-level", "warn")
	if p.PFCResponse != 0 {
		args = append(args, "--pfc-response-time", units.FormatDuration(p.PFCResponse))
	}
	if p.PFCXoff != 0 {
		args = append(args, "--pfc-xoff", units.FormatSize(p.PFCXoff))
	}
	return args
}

// WritePlan writes fastcnpd.yaml, flows.json and plan.json into dir for
// the given mode and switch target and returns the plan.
func (t *Topology) WritePlan(dir string, o ControllerOptions) (*Plan, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("testbed: plan dir: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("testbed: plan dir: %w", err)
	}
	if o.StateFile == "" {
		o.StateFile = filepath.Join(dir, "fastcnpd-state.json")
	}
	cfg, err := t.ControllerConfig(o)
	if err != nil {
		return nil, err
	}
	y, err := cfg.Marshal()
	if err != nil {
		return nil, fmt.Errorf("testbed: plan: %w", err)
	}
	pl := &Plan{Topology: t.Name, Mode: string(cfg.Switches[0].Defaults.Mode), Target: o.Target,
		ControllerConfig: filepath.Join(dir, "fastcnpd.yaml"), FlowsFile: filepath.Join(dir, "flows.json"),
		DurationS: t.Params().Duration.Seconds(), MTU: t.Params().MTU}
	if pl.Target == "" {
		pl.Target = TargetFastcnp
	}
	if err := os.WriteFile(pl.ControllerConfig, y, 0o644); err != nil {
		return nil, fmt.Errorf("testbed: plan: %w", err)
	}
	if err := writeFlowFile(pl.FlowsFile, t, t.Params().Duration); err != nil {
		return nil, err
	}
	for _, name := range t.SwitchNames() {
		sw := t.Switches[name]
		pl.Switches = append(pl.Switches, PlanSwitch{Name: name, DeviceID: sw.DeviceID, GRPCPort: sw.GRPCPort, Args: t.switchArgs(name)})
	}
	for _, h := range t.HostNames() {
		args, err := t.hostArgs(h, hostAlgo(cfg.Switches[0].Defaults.Mode), pl.FlowsFile, 100*time.Millisecond, "")
		if err != nil {
			return nil, err
		}
		host := t.Hosts[h]
		pl.Hosts = append(pl.Hosts, PlanHost{Name: h, IP: host.addr.Addr().String(), MAC: host.mac.String(), Args: args})
	}
	for _, l := range t.Links {
		pl.Links = append(pl.Links, PlanLink{A: l.a.Node, APort: l.a.Port, AMAC: t.PortMACOf(l.a).String(),
			B: l.b.Node, BPort: l.b.Port, BMAC: t.PortMACOf(l.b).String(), Rate: units.FormatRate(l.rate), RateBps: float64(l.rate)})
	}
	b, err := jsonIndent(pl)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "plan.json"), b, 0o644); err != nil {
		return nil, fmt.Errorf("testbed: plan: %w", err)
	}
	return pl, nil
}

// grpcAddr formats the loopback P4Runtime address of a switch.
func grpcAddr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
