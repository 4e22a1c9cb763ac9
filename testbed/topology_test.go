package testbed

import (
	"errors"
	"math"
	"net/netip"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/controller/config"
)

func loadTopo(t *testing.T, name string) *Topology {
	t.Helper()
	topo, err := Load(filepath.Join("topologies", name))
	if err != nil {
		t.Fatalf("Load(%s): %v", name, err)
	}
	return topo
}

// payloadEff is the payload share of the wire time of a full frame on the
// shipped topologies (MTU 9000: 4096-byte payload, 58 bytes of Ethernet,
// IPv4, UDP, BTH and ICRC, 20 of preamble and inter-frame gap).
const payloadEff = 4096.0 / (4096 + 58 + 20)

func TestFairSharesOfShippedTopologies(t *testing.T) {
	tests := []struct {
		file string
		want map[string]float64 // flow name -> payload b/s
	}{
		{"s1-victim.json", map[string]float64{"h1-h5": payloadEff * 100e6 / 3, "h2-h5": payloadEff * 100e6 / 3,
			"h3-h5": payloadEff * 100e6 / 3, "victim": payloadEff * 100e6}},
		{"s2-incast.json", map[string]float64{"h1-r": payloadEff * 12.5e6, "h8-r": payloadEff * 12.5e6}},
		{"s2-incast-4.json", map[string]float64{"h1-r": payloadEff * 25e6, "h4-r": payloadEff * 25e6}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			topo := loadTopo(t, tt.file)
			shares, err := topo.FairShares()
			if err != nil {
				t.Fatal(err)
			}
			for i, f := range topo.Flows {
				want, ok := tt.want[f.Name]
				if !ok {
					continue
				}
				if math.Abs(shares[i]-want) > 1 {
					t.Errorf("fair share of %s = %.0f b/s, want %.0f", f.Name, shares[i], want)
				}
				delete(tt.want, f.Name)
			}
			if len(tt.want) != 0 {
				t.Errorf("flows not in topology: %v", tt.want)
			}
		})
	}
}

func TestPathAndRoutes(t *testing.T) {
	topo := loadTopo(t, "s1-victim.json")
	path, err := topo.Path("h4", "h6")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range path {
		got = append(got, h.From.String()+">"+h.To.String())
	}
	if want := "h4>s1-p4 s1-p5>s2-p3 s2-p2>h6"; strings.Join(got, " ") != want {
		t.Errorf("path h4 -> h6 = %q, want %q", strings.Join(got, " "), want)
	}
	cfg, err := topo.ControllerConfig(ControllerOptions{Mode: config.ModeECN})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Switches) != 2 {
		t.Fatalf("switches = %d, want 2", len(cfg.Switches))
	}
	s1 := cfg.Switch("s1")
	routes := map[string]uint16{}
	for _, r := range s1.Routes {
		routes[r.Prefix.String()] = r.Port
	}
	wantRoutes := map[string]uint16{"10.0.0.1/32": 1, "10.0.0.4/32": 4, "10.0.0.5/32": 5, "10.0.0.6/32": 5}
	for p, port := range wantRoutes {
		if routes[p] != port {
			t.Errorf("s1 route %s -> port %d, want %d", p, routes[p], port)
		}
	}
	up := s1.Port(5)
	if up == nil || up.Settings.LinkRate != 250_000_000 || up.Settings.Mode != config.ModeECN || len(up.Subnets) != 0 {
		t.Errorf("s1 uplink port = %+v", up)
	}
	if p1 := s1.Port(1); p1 == nil || p1.Settings.LinkRate != 100_000_000 || len(p1.Subnets) != 1 {
		t.Errorf("s1 port 1 = %+v", p1)
	}
	// Route to h6 on s1 leads to s2's port MAC.
	for _, r := range s1.Routes {
		if r.Prefix.String() == "10.0.0.6/32" && r.NextHopMAC.String() != topo.PortMAC("s2", 3).String() {
			t.Errorf("next hop MAC to h6 = %s, want s2-p3's %s", r.NextHopMAC, topo.PortMAC("s2", 3))
		}
	}
	if d := topo.LinkDelay("s1"); d.Microseconds() != 20 {
		t.Errorf("link delay = %v, want 20us", d)
	}
	// The switch-to-switch link is the INC tree's: both ends name each other.
	if p := s1.Port(5).Peer; p == nil || *p != (config.PeerPort{Switch: "s2", Port: 3}) {
		t.Errorf("s1 port 5 peer %+v, want s2 port 3", p)
	}
	if p := cfg.Switch("s2").Port(3).Peer; p == nil || *p != (config.PeerPort{Switch: "s1", Port: 5}) {
		t.Errorf("s2 port 3 peer %+v, want s1 port 5", p)
	}
	if s1.Port(1).Peer != nil || len(cfg.INC.Groups) != 0 {
		t.Errorf("host port peer %+v, groups %+v", s1.Port(1).Peer, cfg.INC.Groups)
	}
}

// TestINCGroupsOfTopology: fastcnpd's inc.groups are the topology's INC
// groups, members ranked in the order of their first flow; a message
// without every member of its group is refused.
func TestINCGroupsOfTopology(t *testing.T) {
	topo := loadTopo(t, "s4-inc.json")
	cfg, err := topo.ControllerConfig(ControllerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []config.INCGroup{{ID: 1, Members: []config.INCMember{
		{Host: netip.MustParseAddr("10.0.0.1"), Rank: 0}, {Host: netip.MustParseAddr("10.0.0.2"), Rank: 1},
		{Host: netip.MustParseAddr("10.0.0.3"), Rank: 2}}}}
	if !reflect.DeepEqual(cfg.INC.Groups, want) {
		t.Errorf("groups %+v, want %+v", cfg.INC.Groups, want)
	}
	src := `{"name":"x","hosts":{"h1":{"ip":"10.0.0.1","mac":"02:00:00:00:00:01"},"h2":{"ip":"10.0.0.2","mac":"02:00:00:00:00:02"},
"r":{"ip":"10.0.0.9","mac":"02:00:00:00:00:09"}},"switches":{"s1":{"device_id":1,"grpc_port":50001}},
"links":[{"a":"h1","b":"s1-p1"},{"a":"h2","b":"s1-p2"},{"a":"r","b":"s1-p3"}],
"flows":[{"src":"h1","dst":"r","inc":{"group":1,"message":1,"offsets":4}},{"src":"h2","dst":"r","inc":{"group":1,"message":1,"offsets":4}},
{"src":"h1","dst":"r","inc":{"group":1,"message":2,"offsets":4}}]}`
	if _, err := Parse([]byte(src)); err == nil || !strings.Contains(err.Error(), "INC message 1/2: 1 workers, but group 1 has 2 members") {
		t.Errorf("message without every member: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	base := `{"name":"x","hosts":{"h1":{"ip":"10.0.0.1","mac":"02:00:00:00:00:01"},"h2":{"ip":"10.0.0.2","mac":"02:00:00:00:00:02"}},
"switches":{"s1":{"device_id":1,"grpc_port":50001}},
"links":[{"a":"h1","b":"s1-p1"},{"a":"h2","b":"s1-p2"}]%s}`
	tests := []struct {
		name, extra, want string
	}{
		{"ok", `,"flows":[{"src":"h1","dst":"h2"}]`, ""},
		{"unknown field", `,"flowz":[]`, "unknown field"},
		{"unknown host in flow", `,"flows":[{"src":"h1","dst":"h9"}]`, "two different hosts"},
		{"bad size", `,"flows":[{"src":"h1","dst":"h2","size":"2QB"}]`, "flows[0].size"},
		{"late start", `,"flows":[{"src":"h1","dst":"h2","start":"1h"}]`, "not before the run ends"},
		{"bad rate", `,"defaults":{"rate":"fast"}`, "defaults.rate"},
		{"rto too long", `,"defaults":{"rto":"1h"}`, "defaults.rto"},
		{"bad rto", `,"defaults":{"rto":"soon"}`, "defaults.rto"},
		{"negative cc scale", `,"defaults":{"cc_scale":-1}`, "defaults.cc_scale"},
		{"bad burst time", `,"defaults":{"burst_time":"-1ms"}`, "defaults.burst_time"},
		{"inc ok", `,"flows":[{"src":"h1","dst":"h2","inc":{"group":1,"message":1,"offsets":8}}]`, ""},
		{"inc with a size", `,"flows":[{"src":"h1","dst":"h2","size":"1MB","inc":{"group":1,"message":1,"offsets":8}}]`, "no size or duration"},
		{"inc group 0", `,"flows":[{"src":"h1","dst":"h2","inc":{"group":0,"message":1,"offsets":8}}]`, "inc.group"},
		{"inc no offsets", `,"flows":[{"src":"h1","dst":"h2","inc":{"group":1,"message":1}}]`, "inc.offsets"},
		{"inc workers disagree", `,"flows":[{"name":"a","src":"h1","dst":"h2","inc":{"group":1,"message":1,"offsets":8}},
			{"name":"b","src":"h2","dst":"h1","inc":{"group":1,"message":1,"offsets":8}}]`, "must be those of flows[0]"},
		{"inc worker twice", `,"flows":[{"name":"a","src":"h1","dst":"h2","inc":{"group":1,"message":1,"offsets":8}},
			{"name":"b","src":"h1","dst":"h2","inc":{"group":1,"message":1,"offsets":8}}]`, "already a worker"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(strings.Replace(base, "%s", tt.extra, 1)))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrTopology) {
				t.Fatalf("Parse error = %v, want ErrTopology containing %q", err, tt.want)
			}
		})
	}
	graphErrs := []struct{ name, json, want string }{
		{"host on two links", `{"name":"x","hosts":{"h1":{"ip":"10.0.0.1","mac":"02:00:00:00:00:01"}},"switches":{"s1":{"device_id":1,"grpc_port":50001}},"links":[{"a":"h1","b":"s1-p1"},{"a":"h1","b":"s1-p2"}]}`, "already used"},
		{"duplicate device id", `{"name":"x","hosts":{"h1":{"ip":"10.0.0.1","mac":"02:00:00:00:00:01"}},"switches":{"s1":{"device_id":1,"grpc_port":50001},"s2":{"device_id":1,"grpc_port":50002}},"links":[{"a":"h1","b":"s1-p1"}]}`, "device_id 1: also used"},
		{"cpu port", `{"name":"x","hosts":{"h1":{"ip":"10.0.0.1","mac":"02:00:00:00:00:01"}},"switches":{"s1":{"device_id":1,"grpc_port":50001}},"links":[{"a":"h1","b":"s1-p255"}]}`, "CPU port"},
		{"multicast mac", `{"name":"x","hosts":{"h1":{"ip":"10.0.0.1","mac":"01:00:00:00:00:01"}},"switches":{"s1":{"device_id":1,"grpc_port":50001}},"links":[{"a":"h1","b":"s1-p1"}]}`, "unicast"},
		{"no path", `{"name":"x","hosts":{"h1":{"ip":"10.0.0.1","mac":"02:00:00:00:00:01"},"h2":{"ip":"10.0.0.2","mac":"02:00:00:00:00:02"}},"switches":{"s1":{"device_id":1,"grpc_port":50001},"s2":{"device_id":2,"grpc_port":50002}},"links":[{"a":"h1","b":"s1-p1"},{"a":"h2","b":"s2-p1"}],"flows":[{"src":"h1","dst":"h2"}]}`, "no path"},
	}
	for _, tt := range graphErrs {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.json))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestShippedTopologiesMakeValidControllerConfigs(t *testing.T) {
	files, err := filepath.Glob("topologies/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no topologies: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			topo, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range []config.Mode{config.ModeECN, config.ModeFastCNP} {
				if _, err := topo.ControllerConfig(ControllerOptions{Mode: m}); err != nil {
					t.Errorf("mode %s: %v", m, err)
				}
			}
		})
	}
}

// TestHostArgs checks the fastcnp-host arguments a topology gives each
// host: the RoCE MTU from the link MTU, the retransmission timeout, the
// DCQCN scale and the pacing bucket.
func TestHostArgs(t *testing.T) {
	cases := []struct {
		mtu  int
		want int
	}{{1500, 1024}, {9000, 4096}, {1100, 1024}, {1067, 512}, {4139, 2048}, {4140, 4096}, {256, 256}}
	for _, tc := range cases {
		if got := IBMTU(tc.mtu); got != tc.want {
			t.Errorf("IBMTU(%d) = %d, want %d", tc.mtu, got, tc.want)
		}
	}
	topo := loadTopo(t, "s1-victim.json")
	args, err := topo.hostArgs("h4", "dcqcn-fastcnp", "/f.json", 100*time.Millisecond, "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for i := 0; i+1 < len(args); i += 2 {
		got[args[i]] = args[i+1]
	}
	want := map[string]string{"--mss": "4096", "--rto": "500ms", "--cc-scale": "10", "--burst-time": "2ms",
		"--base-rtt": "10ms", "--line-rate": "100Mb/s", "--cc": "dcqcn-fastcnp"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (args %q)", k, got[k], v, args)
		}
	}
}
