package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/internal/units"
)

// base is the smallest valid config; bad cases append to it, so their
// lines start at 8.
const base = `api:
  auth: {insecure: true}
switches:
  - name: s1
    address: 127.0.0.1:9559
    device_id: 1
    tls: {insecure: true}
`

// ecmpPorts configures ports 1 and 2 with MACs (lines 8-11 after base).
const ecmpPorts = `    ports:
      - {port: 1, mac: "02:00:00:00:01:01"}
      - {port: 2, mac: "02:00:00:00:01:02"}
`

// TestECMPRoutes: next_hops of two or more become an ECMP route with their
// weights (default 1); a list of one is the single-next-hop form; the two
// forms round-trip through Marshal.
func TestECMPRoutes(t *testing.T) {
	src := base + ecmpPorts + `    routes:
      - prefix: 10.0.0.0/8
        next_hops:
          - {port: 1, mac: "02:00:00:00:aa:01", weight: 2}
          - {port: 2, mac: "02:00:00:00:aa:02"}
          - {port: 2, mac: "02:00:00:00:aa:03", weight: 5}
      - prefix: 10.1.0.0/16
        next_hops: [{port: 2, mac: "02:00:00:00:aa:02", weight: 7}]
      - {prefix: 10.2.0.0/16, port: 1, next_hop_mac: "02:00:00:00:aa:01"}
`
	c, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	rs := c.Switches[0].Routes
	mac := func(s string) net.HardwareAddr { m, _ := net.ParseMAC(s); return m }
	want := []Route{
		{Prefix: netip.MustParsePrefix("10.0.0.0/8"), NextHops: []NextHop{{1, mac("02:00:00:00:aa:01"), 2},
			{2, mac("02:00:00:00:aa:02"), 1}, {2, mac("02:00:00:00:aa:03"), 5}}},
		{Prefix: netip.MustParsePrefix("10.1.0.0/16"), Port: 2, NextHopMAC: mac("02:00:00:00:aa:02")},
		{Prefix: netip.MustParsePrefix("10.2.0.0/16"), Port: 1, NextHopMAC: mac("02:00:00:00:aa:01")},
	}
	if !reflect.DeepEqual(rs, want) {
		t.Fatalf("routes\n got %+v\nwant %+v", rs, want)
	}
	if h := rs[2].Hops(); len(h) != 1 || h[0].Port != 1 || h[0].Weight != 1 {
		t.Errorf("Hops of a single next hop: %+v", h)
	}
	if h := rs[0].Hops(); len(h) != 3 {
		t.Errorf("Hops of an ECMP route: %+v", h)
	}
	checkRoundTrip(t, c)
}

// TestECMPRouteCount: the switch's IPv4 ECMP routes are limited to the
// data plane's NEXT_HOP_GROUPS; IPv6 routes do not count (not installed).
func TestECMPRouteCount(t *testing.T) {
	var b strings.Builder
	b.WriteString(base + ecmpPorts + "    routes:\n")
	for i := 0; i <= MaxECMPRoutes; i++ {
		fmt.Fprintf(&b, "      - {prefix: 10.%d.%d.0/24, next_hops: [{port: 1, mac: 02:00:00:00:00:09}, {port: 2, mac: 02:00:00:00:00:0a}]}\n", i/256, i%256)
	}
	fmt.Fprintf(&b, "      - {prefix: \"fd00::/64\", next_hops: [{port: 1, mac: 02:00:00:00:00:09}, {port: 2, mac: 02:00:00:00:00:0a}]}\n")
	_, err := Parse([]byte(b.String()))
	if err == nil {
		t.Fatal("no error")
	}
	// Route 257 (line 12 + 256) is one too many; 257*2 weights also
	// exceed 1024 at route 513, which does not exist.
	want := fmt.Sprintf("config:%d: switches[0].routes[%d].next_hops: more than %d ECMP routes", 12+MaxECMPRoutes, MaxECMPRoutes, MaxECMPRoutes)
	if lines := strings.Split(err.Error(), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], want) {
		t.Errorf("got %v, want one problem %q", err, want)
	}
}

// TestINCSlotTimeout: the default, a top-level value, a switch's own value
// (even without INC routing), and 0 (off); all survive Marshal.
func TestINCSlotTimeout(t *testing.T) {
	two := base + "  - {name: s2, address: '127.0.0.1:9560', device_id: 2, tls: {insecure: true}, inc: {slot_timeout: 0}}\n" +
		"  - name: s3\n    address: 127.0.0.1:9561\n    device_id: 3\n    tls: {insecure: true}\n" +
		"    ports: [{port: 1}]\n    inc: {slot_timeout: 2ms, next_hops: [{port: 1, mac: '02:00:00:00:00:01', weight: 1}]}\n"
	for _, tt := range []struct {
		name string
		src  string
		want []time.Duration // s1, s2, s3
		top  time.Duration
	}{
		{"default", two, []time.Duration{DefaultINCSlotTimeout, 0, 2 * time.Millisecond}, DefaultINCSlotTimeout},
		{"top level", two + "inc: {slot_timeout: 250us}\n", []time.Duration{250 * time.Microsecond, 0, 2 * time.Millisecond}, 250 * time.Microsecond},
		{"top level off", two + "inc: {slot_timeout: 0}\n", []time.Duration{0, 0, 2 * time.Millisecond}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if c.INC.SlotTimeout != tt.top {
				t.Errorf("top-level slot timeout %v, want %v", c.INC.SlotTimeout, tt.top)
			}
			for i, w := range tt.want {
				if got := c.Switches[i].INCSlotTimeout; got != w {
					t.Errorf("%s: slot timeout %v, want %v", c.Switches[i].Name, got, w)
				}
			}
			if c.Switches[1].INC != nil || c.Switches[2].INC == nil {
				t.Errorf("INC routing: s2 %+v (want none), s3 %+v", c.Switches[1].INC, c.Switches[2].INC)
			}
			checkRoundTrip(t, c)
		})
	}
}

func TestMinimalDefaults(t *testing.T) {
	c, err := Parse([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if c.API.Listen != DefaultAPIListen || c.Metrics.Listen != DefaultMetricsListen || c.StateFile != DefaultStateFile {
		t.Errorf("endpoint defaults: %+v %+v %q", c.API, c.Metrics, c.StateFile)
	}
	if c.Announce.UDPPort != 4792 || c.Announce.IdleTimeout != time.Minute {
		t.Errorf("announce defaults: %+v", c.Announce)
	}
	q := c.QoS
	if q.DSCPPriority[26] != 3 || q.LosslessPriority != 3 || q.CNPDSCP != 48 || q.PCPPriority[5] != 5 {
		t.Errorf("qos defaults: %+v", q)
	}
	s := c.Switches[0]
	if s.Target != TargetFastcnp || s.ElectionID != (ElectionID{Low: 1}) || s.INC != nil {
		t.Errorf("switch defaults: %+v", s)
	}
	want := PortSettings{
		LinkRate: 100 * units.Gbps, Qth: 100 * units.KB, Tcheck: 8 * time.Microsecond,
		RTTBase: 8 * time.Microsecond, CNPGap: 4 * time.Microsecond, Mode: ModeFastCNP,
		RED: RED{Kmin: 5000, Kmax: 200000, Pmax: 0.01}, MTU: 1500,
	}
	if s.Defaults != want {
		t.Errorf("port defaults = %+v, want %+v", s.Defaults, want)
	}
}

// TestPortInheritance checks the override chain built-in -> switch
// defaults -> port, and the derived Qth (scales with rate) and Tcheck
// (= RTTbase) when they are set nowhere.
func TestPortInheritance(t *testing.T) {
	tests := []struct {
		name     string
		defaults string
		port     string
		want     func(PortSettings) bool
	}{
		{"qth scales with port rate", "", "link_rate: 25Gb/s", func(s PortSettings) bool { return s.Qth == 25000 }},
		{"qth scales with default rate", "link_rate: 400G", "", func(s PortSettings) bool { return s.Qth == 400000 && s.LinkRate == 400*units.Gbps }},
		{"default qth is not rescaled", "qth: 120KiB", "link_rate: 25G", func(s PortSettings) bool { return s.Qth == 120*units.KiB }},
		{"port qth wins", "qth: 120KiB", "qth: 1MB", func(s PortSettings) bool { return s.Qth == units.MB }},
		{"tcheck follows port rtt", "", "rtt_base: 12us", func(s PortSettings) bool { return s.Tcheck == 12*time.Microsecond }},
		{"tcheck follows default rtt", "rtt_base: 5us", "", func(s PortSettings) bool { return s.Tcheck == 5*time.Microsecond }},
		{"explicit default tcheck kept", "tcheck: 20us", "rtt_base: 12us", func(s PortSettings) bool { return s.Tcheck == 20*time.Microsecond }},
		{"mode override", "mode: ecn", "mode: fastcnp", func(s PortSettings) bool { return s.Mode == ModeFastCNP }},
		{"mode int", "mode: ecn", "mode: int", func(s PortSettings) bool { return s.Mode == ModeINT }},
		{"red partly overridden", "red: {kmin: 1KB, kmax: 2MB}", "red: {pmax: 0.5}", func(s PortSettings) bool {
			return s.RED == RED{Kmin: 1000, Kmax: 2000000, Pmax: 0.5}
		}},
		{"mtu", "mtu: 9000", "", func(s PortSettings) bool { return s.MTU == 9000 }},
		{"cnp gap zero", "", "cnp_gap: 0", func(s PortSettings) bool { return s.CNPGap == 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := base
			if tt.defaults != "" {
				src += "    defaults: {" + strings.ReplaceAll(tt.defaults, "\n", ", ") + "}\n"
			}
			src += "    ports:\n      - {port: 1"
			if tt.port != "" {
				src += ", " + tt.port
			}
			src += "}\n"
			c, err := Parse([]byte(src))
			if err != nil {
				t.Fatalf("%v\n%s", err, src)
			}
			if got := c.Switches[0].Ports[0].Settings; !tt.want(got) {
				t.Errorf("settings = %+v", got)
			}
		})
	}
}

func TestElectionIDForms(t *testing.T) {
	tests := []struct {
		in   string
		want ElectionID
	}{
		{"7", ElectionID{Low: 7}},
		{"[1, 2]", ElectionID{High: 1, Low: 2}},
		{"{high: 3, low: 0}", ElectionID{High: 3}},
		{"{low: 9}", ElectionID{Low: 9}},
		{"18446744073709551615", ElectionID{Low: 1<<64 - 1}},
	}
	for _, tt := range tests {
		c, err := Parse([]byte(base + "    election_id: " + tt.in + "\n"))
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		if got := c.Switches[0].ElectionID; got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

// TestBadConfigs: each case must produce exactly the listed messages, each
// as "config:LINE: path: message" (substring match on the message).
func TestBadConfigs(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"unknown top field", base + "swtiches: []\n", []string{"config:8: swtiches: unknown field (known: announce, api, ha, inc, metrics, qos, state_file, switches)"}},
		{"ha without etcd", "ha: {}\n" + base, []string{"config:1: ha.etcd: required"}},
		{"ha without endpoints", "ha: {etcd: {prefix: /x/}}\n" + base, []string{"config:1: ha.etcd.endpoints: required"}},
		{"ha empty endpoints", "ha: {etcd: {endpoints: []}}\n" + base, []string{"config:1: ha.etcd.endpoints: at least one endpoint is required"}},
		{"ha endpoint without scheme", "ha: {etcd: {endpoints: [10.0.0.1:2379]}}\n" + base, []string{"config:1: ha.etcd.endpoints[0]: \"10.0.0.1:2379\": want http://host:port or https://host:port"}},
		{"ha endpoint without port", "ha: {etcd: {endpoints: [\"http://etcd1\"]}}\n" + base, []string{"config:1: ha.etcd.endpoints[0]: \"http://etcd1\": want http://host:port"}},
		{"ha endpoint port 0", "ha: {etcd: {endpoints: [\"http://etcd1:0\"]}}\n" + base, []string{"config:1: ha.etcd.endpoints[0]: \"http://etcd1:0\": port must be 1..65535"}},
		{"ha endpoint with a path", "ha: {etcd: {endpoints: [\"http://etcd1:2379/v3\"]}}\n" + base, []string{"ha.etcd.endpoints[0]: \"http://etcd1:2379/v3\": want http"}},
		{"ha mixed schemes", "ha: {etcd: {endpoints: [\"http://a:1\", \"https://b:1\"], tls: {ca: /ca}}}\n" + base, []string{"config:1: ha.etcd.endpoints: mixes http and https"}},
		{"ha https without tls", "ha: {etcd: {endpoints: [\"https://a:1\"]}}\n" + base, []string{"config:1: ha.etcd.tls: https endpoints need tls"}},
		{"ha tls with http", "ha: {etcd: {endpoints: [\"http://a:1\"], tls: {ca: /ca}}}\n" + base, []string{"config:1: ha.etcd.tls: tls needs https endpoints"}},
		{"ha tls without ca", "ha: {etcd: {endpoints: [\"https://a:1\"], tls: {cert: /c, key: /k}}}\n" + base, []string{"config:1: ha.etcd.tls: set ca"}},
		{"ha tls cert without key", "ha: {etcd: {endpoints: [\"https://a:1\"], tls: {ca: /ca, cert: /c}}}\n" + base, []string{"config:1: ha.etcd.tls: cert and key go together"}},
		{"ha prefix without slashes", "ha: {etcd: {endpoints: [\"http://a:1\"], prefix: fastcnp}}\n" + base, []string{"config:1: ha.etcd.prefix: \"fastcnp\": want a key prefix that starts and ends with /"}},
		{"ha lease fraction", "ha: {etcd: {endpoints: [\"http://a:1\"], lease_ttl: 1500ms}}\n" + base, []string{"config:1: ha.etcd.lease_ttl: 1.5s: etcd leases count whole seconds"}},
		{"ha lease too short", "ha: {etcd: {endpoints: [\"http://a:1\"], lease_ttl: 0s}}\n" + base, []string{"config:1: ha.etcd.lease_ttl:"}},
		{"ha unknown field", "ha: {etcd: {endpoints: [\"http://a:1\"], ttl: 2s}}\n" + base, []string{"config:1: ha.etcd.ttl: unknown field"}},
		{"ha and state_file", "state_file: /s.json\nha: {etcd: {endpoints: [\"http://a:1\"]}}\n" + base, []string{"config:1: state_file: excluded by ha (line 2)"}},
		{"unknown switch field", base + "    prots: []\n", []string{"config:8: switches[0].prots: unknown field"}},
		{"unknown port field", base + "    ports:\n      - port: 1\n        qht: 1KB\n", []string{"config:10: switches[0].ports[0].qht: unknown field"}},
		{"no switches", "api:\n  auth: {insecure: true}\n", []string{"config:1: switches: required: at least one switch"}},
		{"empty switches", "api:\n  auth: {insecure: true}\nswitches: []\n", []string{"config:3: switches: at least one switch is required"}},
		{"missing auth", "switches:\n  - {name: a, address: 'h:1', device_id: 1, tls: {insecure: true}}\n", []string{"config:1: api.auth: required"}},
		{"two auth methods", "api:\n  auth: {insecure: true, token_file: /t}\nswitches:\n  - {name: a, address: 'h:1', device_id: 1, tls: {insecure: true}}\n",
			[]string{"config:2: api.auth: set exactly one of token_file, mtls, insecure: true"}},
		{"mtls incomplete", "api:\n  auth:\n    mtls: {ca: /ca}\nswitches:\n  - {name: a, address: 'h:1', device_id: 1, tls: {insecure: true}}\n",
			[]string{"config:3: api.auth.mtls: mtls needs ca, cert and key"}},
		{"mtls admin_names empty", "api:\n  auth:\n    mtls: {ca: /ca, cert: /c, key: /k, admin_names: []}\nswitches:\n  - {name: a, address: 'h:1', device_id: 1, tls: {insecure: true}}\n",
			[]string{"config:3: api.auth.mtls.admin_names: empty list"}},
		{"mtls admin_names twice", "api:\n  auth:\n    mtls: {ca: /ca, cert: /c, key: /k, admin_names: [ops, ops]}\nswitches:\n  - {name: a, address: 'h:1', device_id: 1, tls: {insecure: true}}\n",
			[]string{`config:3: api.auth.mtls.admin_names[1]: "ops" is listed twice`}},
		{"mtls admin_names not a list", "api:\n  auth:\n    mtls: {ca: /ca, cert: /c, key: /k, admin_names: ops}\nswitches:\n  - {name: a, address: 'h:1', device_id: 1, tls: {insecure: true}}\n",
			[]string{`config:3: api.auth.mtls.admin_names: want a list, got "ops"`}},
		{"missing switch fields", "api:\n  auth: {insecure: true}\nswitches:\n  - role: x\n",
			[]string{"config:4: switches[0].name: required", "config:4: switches[0].address: required",
				"config:4: switches[0].device_id: required", "config:4: switches[0].tls: required"}},
		{"device id zero", strings.Replace(base, "device_id: 1", "device_id: 0", 1), []string{"config:6: switches[0].device_id: 0 is out of range 1..18446744073709551615"}},
		{"device id negative", strings.Replace(base, "device_id: 1", "device_id: -2", 1), []string{"config:6: switches[0].device_id: -2: must be >= 1"}},
		{"device id text", strings.Replace(base, "device_id: 1", "device_id: one", 1), []string{`config:6: switches[0].device_id: "one" is not a whole number`}},
		{"bad address", strings.Replace(base, "127.0.0.1:9559", "127.0.0.1", 1), []string{`config:5: switches[0].address: "127.0.0.1" is not host:port`}},
		{"address port zero", strings.Replace(base, "127.0.0.1:9559", "h:0", 1), []string{`config:5: switches[0].address: "h:0": port must be 1..65535`}},
		{"bad name", strings.Replace(base, "name: s1", "name: 's 1'", 1), []string{`config:4: switches[0].name: "s 1": use letters`}},
		{"duplicate switch", base + "  - name: s1\n    address: 127.0.0.1:9559\n    device_id: 1\n    tls: {insecure: true}\n",
			[]string{`config:8: switches[1].name: "s1" is already the name of switches[0]`,
				"config:9: switches[1].address: 127.0.0.1:9559 is already the address of switches[0]",
				"config:10: switches[1].device_id: 1 is already the device ID of switches[0]"}},
		{"election zero", base + "    election_id: [0, 0]\n", []string{"config:8: switches[0].election_id: election ID must not be 0"}},
		{"election three", base + "    election_id: [1, 2, 3]\n", []string{"config:8: switches[0].election_id: want [high, low], got 3 values"}},
		{"bad target", base + "    target: p4sim\n", []string{`config:8: switches[0].target: "p4sim": want fastcnp-switch, bmv2 or tofino`}},
		{"bmv2 needs files", base + "    target: bmv2\n", []string{"switches[0].p4info: required for target bmv2", "switches[0].device_config: required for target bmv2"}},
		{"tls nothing", strings.Replace(base, "tls: {insecure: true}", "tls: {server_name: x}", 1), []string{"config:7: switches[0].tls: set ca"}},
		{"tls cert without key", strings.Replace(base, "tls: {insecure: true}", "tls: {ca: /ca, cert: /c}", 1), []string{"config:7: switches[0].tls: cert and key go together"}},
		{"tls insecure with ca", strings.Replace(base, "tls: {insecure: true}", "tls: {insecure: true, ca: /ca}", 1), []string{"config:7: switches[0].tls: insecure: true excludes"}},
		{"tls insecure not bool", strings.Replace(base, "tls: {insecure: true}", "tls: {insecure: yes}", 1), []string{`config:7: switches[0].tls.insecure: want true or false, got "yes"`}},
		{"port zero", base + "    ports:\n      - port: 0\n", []string{"config:9: switches[0].ports[0].port: 0 is out of range 1..511"}},
		{"port 512", base + "    ports:\n      - port: 512\n", []string{"config:9: switches[0].ports[0].port: 512 is out of range 1..511"}},
		{"port missing", base + "    ports:\n      - mac: 02:00:00:00:00:01\n", []string{"config:9: switches[0].ports[0].port: required"}},
		{"port duplicate", base + "    ports:\n      - port: 3\n      - port: 3\n", []string{"config:10: switches[0].ports[1].port: port 3 already configured at switches[0].ports[0]"}},
		{"ports not a list", base + "    ports: 3\n", []string{`config:8: switches[0].ports: want a list, got "3"`}},
		{"bad rate", base + "    defaults:\n      link_rate: 100Gb\n", []string{`config:9: switches[0].defaults.link_rate: rate "100Gb": unknown unit "Gb"`}},
		{"rate too small", base + "    defaults:\n      link_rate: 1000\n", []string{"config:9: switches[0].defaults.link_rate: 1kb/s is out of range 1Mb/s..10Tb/s"}},
		{"bad size", base + "    ports:\n      - {port: 1, qth: 12QB}\n", []string{`config:9: switches[0].ports[0].qth: size "12QB": unknown unit "QB"`}},
		{"qth zero", base + "    ports:\n      - {port: 1, qth: 0}\n", []string{"config:9: switches[0].ports[0].qth: 0B is out of range 1B..4294967295B"}},
		{"bad duration", base + "    defaults: {tcheck: 8}\n", []string{`config:8: switches[0].defaults.tcheck: duration "8": missing unit`}},
		{"negative duration", base + "    defaults: {rtt_base: -1us}\n", []string{`config:8: switches[0].defaults.rtt_base: duration "-1us": must not be negative`}},
		{"bad mode", base + "    defaults: {mode: dcqcn}\n", []string{`config:8: switches[0].defaults.mode: "dcqcn": want ecn, fastcnp or int`}},
		{"kmin >= kmax defaults", base + "    defaults:\n      red: {kmin: 200KB, kmax: 100KB}\n", []string{"config:9: switches[0].defaults.red: kmin (200kB) must be less than kmax (100kB)"}},
		{"kmin >= kmax from port over defaults", base + "    defaults:\n      red: {kmax: 100KB}\n    ports:\n      - port: 1\n        red: {kmin: 100KB}\n",
			[]string{"config:12: switches[0].ports[0].red: kmin (100kB) must be less than kmax (100kB)"}},
		{"pmax zero", base + "    defaults:\n      red: {pmax: 0}\n", []string{`config:9: switches[0].defaults.red.pmax: "0": want a probability with 0 < pmax <= 1`}},
		{"pmax above one", base + "    defaults:\n      red: {pmax: 1.5}\n", []string{`config:9: switches[0].defaults.red.pmax: "1.5": want a probability`}},
		{"mtu too small", base + "    defaults: {mtu: 60}\n", []string{"config:8: switches[0].defaults.mtu: 60B is out of range 68B..9KiB"}},
		{"bad mac", base + "    ports:\n      - {port: 1, mac: 02:00:00:00:01}\n", []string{`config:9: switches[0].ports[0].mac: "02:00:00:00:01" is not a MAC address`}},
		{"multicast mac", base + "    ports:\n      - {port: 1, mac: 01:00:5e:00:00:01}\n", []string{"config:9: switches[0].ports[0].mac: 01:00:5e:00:00:01 is a multicast MAC"}},
		{"bad subnet", base + "    ports:\n      - port: 1\n        subnets: [10.1.0.0/33]\n", []string{`config:10: switches[0].ports[0].subnets[0]: "10.1.0.0/33" is not a prefix`}},
		{"subnet host bits", base + "    ports:\n      - port: 1\n        subnets: [10.1.0.1/24]\n", []string{"config:10: switches[0].ports[0].subnets[0]: 10.1.0.1/24 has host bits set (did you mean 10.1.0.0/24?)"}},
		{"subnets overlap", base + "    ports:\n      - port: 1\n        subnets: [10.1.0.0/16]\n      - port: 2\n        subnets: [10.1.2.0/24]\n",
			[]string{"config:12: switches[0].ports[1].subnets[0]: 10.1.2.0/24 overlaps 10.1.0.0/16 at switches[0].ports[0].subnets[0]"}},
		{"route to unknown port", base + "    routes:\n      - {prefix: 10.0.0.0/8, port: 9, next_hop_mac: 02:00:00:00:00:09}\n",
			[]string{"config:9: switches[0].routes[0].port: port 9 is not configured under ports"}},
		{"route port without mac", base + "    ports:\n      - port: 9\n    routes:\n      - {prefix: 10.0.0.0/8, port: 9, next_hop_mac: 02:00:00:00:00:09}\n",
			[]string{"config:11: switches[0].routes[0].port: port 9 has no mac"}},
		{"route missing fields", base + "    routes:\n      - {prefix: 10.0.0.0/8}\n",
			[]string{"config:9: switches[0].routes[0].port: required", "config:9: switches[0].routes[0].next_hop_mac: required"}},
		{"route duplicate prefix", base + "    ports:\n      - {port: 1, mac: 02:00:00:00:00:01}\n    routes:\n      - {prefix: 10.0.0.0/8, port: 1, next_hop_mac: 02:00:00:00:00:09}\n      - {prefix: 10.0.0.0/8, port: 1, next_hop_mac: 02:00:00:00:00:0a}\n",
			[]string{"config:12: switches[0].routes[1].prefix: 10.0.0.0/8 already routed at switches[0].routes[0]"}},
		{"ecmp weight zero", base + ecmpPorts + "    routes:\n      - prefix: 10.0.0.0/8\n        next_hops:\n          - {port: 1, mac: 02:00:00:00:00:09, weight: 0}\n          - {port: 2, mac: 02:00:00:00:00:0a}\n",
			[]string{"config:14: switches[0].routes[0].next_hops[0].weight: 0 is out of range 1..1024"}},
		{"ecmp duplicate next hop", base + ecmpPorts + "    routes:\n      - prefix: 10.0.0.0/8\n        next_hops:\n          - {port: 1, mac: 02:00:00:00:00:09}\n          - {port: 1, mac: 02:00:00:00:00:09, weight: 3}\n",
			[]string{"config:15: switches[0].routes[0].next_hops[1].port: next hop port 1 mac 02:00:00:00:00:09 is already switches[0].routes[0].next_hops[0]"}},
		{"ecmp and single form", base + ecmpPorts + "    routes:\n      - prefix: 10.0.0.0/8\n        port: 1\n        next_hops: [{port: 2, mac: 02:00:00:00:00:0a}]\n",
			[]string{"config:14: switches[0].routes[0].next_hops: give either next_hops or port and next_hop_mac, not both"}},
		{"ecmp hop without port mac", base + ecmpPorts + "      - port: 3\n    routes:\n      - prefix: 10.0.0.0/8\n        next_hops:\n          - {port: 3, mac: 02:00:00:00:00:09}\n          - {port: 4, mac: 02:00:00:00:00:0a}\n          - {mac: 02:00:00:00:00:0b}\n",
			[]string{"config:15: switches[0].routes[0].next_hops[0].port: port 3 has no mac",
				"config:16: switches[0].routes[0].next_hops[1].port: port 4 is not configured under ports",
				"config:17: switches[0].routes[0].next_hops[2].port: required"}},
		{"ecmp empty", base + ecmpPorts + "    routes:\n      - {prefix: 10.0.0.0/8, next_hops: []}\n",
			[]string{"config:12: switches[0].routes[0].next_hops: at least one next hop is required"}},
		{"ecmp route weights", base + ecmpPorts + "    routes:\n      - prefix: 10.0.0.0/8\n        next_hops:\n          - {port: 1, mac: 02:00:00:00:00:09, weight: 1000}\n          - {port: 2, mac: 02:00:00:00:00:0a, weight: 25}\n",
			[]string{"config:14: switches[0].routes[0].next_hops: weights add up to 1025, more than the 1024"}},
		{"ecmp switch weights", base + ecmpPorts + "    routes:\n" +
			"      - {prefix: 10.0.0.0/8, next_hops: [{port: 1, mac: 02:00:00:00:00:09, weight: 600}, {port: 2, mac: 02:00:00:00:00:0a}]}\n" +
			"      - {prefix: 11.0.0.0/8, next_hops: [{port: 1, mac: 02:00:00:00:00:09, weight: 400}, {port: 2, mac: 02:00:00:00:00:0a, weight: 24}]}\n" +
			"      - {prefix: 12.0.0.0/8, next_hops: [{port: 1, mac: 02:00:00:00:00:09, weight: 1}, {port: 2, mac: 02:00:00:00:00:0a}]}\n",
			[]string{"config:13: switches[0].routes[1].next_hops: the weights of the switch's ECMP routes add up to 1025 with this route, more than the 1024"}},
		{"slot timeout too short", base + "inc: {slot_timeout: 500ns}\n", []string{"config:8: inc.slot_timeout: 500ns: want 0 (no slot aging) or at least 1us"}},
		{"slot timeout too long", base + "    inc: {slot_timeout: 5s}\n", []string{"config:8: switches[0].inc.slot_timeout: 5s: want at most 4.294967295s"}},
		{"inc negative weight", base + "    ports:\n      - {port: 1}\n    inc:\n      next_hops:\n        - {port: 1, mac: 02:00:00:00:00:01, weight: -1}\n",
			[]string{"config:12: switches[0].inc.next_hops[0].weight: -1: must be >= 0"}},
		{"inc all zero", base + "    ports:\n      - {port: 1}\n    inc:\n      next_hops:\n        - {port: 1, mac: 02:00:00:00:00:01, weight: 0}\n",
			[]string{"config:12: switches[0].inc.next_hops: at least one next hop needs a positive weight"}},
		{"inc buckets", base + "    inc:\n      buckets: 70000\n      next_hops: []\n", []string{"config:9: switches[0].inc.buckets: 70000 is out of range 1..65536", "config:10: switches[0].inc.next_hops: at least one next hop is required"}},
		{"inc duplicate hop", base + "    ports:\n      - {port: 1}\n    inc:\n      next_hops:\n        - {port: 1, mac: 02:00:00:00:00:01, weight: 1}\n        - {port: 1, mac: 02:00:00:00:00:02, weight: 1}\n",
			[]string{"config:13: switches[0].inc.next_hops[1].port: port 1 is already a next hop at switches[0].inc.next_hops[0]"}},
		{"inc hop on unknown port", base + "    inc:\n      next_hops:\n        - {port: 5, mac: 02:00:00:00:00:01, weight: 1}\n",
			[]string{"config:10: switches[0].inc.next_hops[0].port: port 5 is not configured under ports"}},
		{"inc without next hops", base + "    inc: {buckets: 16}\n", []string{"config:8: switches[0].inc.next_hops: required"}},
		{"announce port roce", base + "announce: {udp_port: 4791}\n", []string{"config:8: announce.udp_port: 4791 is the RoCEv2 port"}},
		{"announce port on bmv2", base + "    target: bmv2\n    p4info: /p\n    device_config: /d\nannounce: {udp_port: 4793}\n",
			[]string{"config:8: switches[0].target: a bmv2 switch cannot take announce.udp_port 4793 (line 11): " +
				"BMv2's P4Runtime server does not implement parser value sets (behavioral-model issue #854), " +
				"so its parser recognises only the compiled-in port 4792; use announce.udp_port 4792"}},
		{"announce port on tofino", base + "    target: tofino\n    p4info: /p\n    device_config: /d\nannounce: {udp_port: 4793}\n",
			[]string{"config:8: switches[0].target: a tofino switch cannot take announce.udp_port 4793 (line 11): " +
				"Stratum's P4Runtime server does not implement parser value sets (a ValueSetEntry is UNIMPLEMENTED), " +
				"so its parser recognises only the compiled-in port 4792; use announce.udp_port 4792"}},
		{"keepalive below gRPC's floor", base + "    keepalive: 5s\n", []string{"config:8: switches[0].keepalive: 5s: want 0 (off) or at least 10s"}},
		{"keepalive below the server's ping policy", base + "    keepalive: 30s\n",
			[]string{"config:8: switches[0].keepalive: 30s is shorter than the 5m a fastcnp-switch P4Runtime server accepts pings at"}},
		{"keepalive below the ping policy on bmv2", base + "    target: bmv2\n    p4info: /p\n    device_config: /d\n    keepalive: 4m\n",
			[]string{"config:11: switches[0].keepalive: 4m is shorter than the 5m a bmv2 P4Runtime server"}},
		{"keepalive negative", base + "    keepalive: -1m\n", []string{`config:8: switches[0].keepalive: duration "-1m": must not be negative`}},
		{"api tls without token", "api:\n  auth:\n    insecure: true\n    tls: {cert: /c, key: /k}\nswitches:\n  - {name: a, address: 'h:1', device_id: 1, tls: {insecure: true}}\n",
			[]string{"config:4: api.auth.tls: tls goes with token_file (mtls has its own cert and key"}},
		{"api tls incomplete", "api:\n  auth:\n    token_file: /t\n    tls: {cert: /c}\nswitches:\n  - {name: a, address: 'h:1', device_id: 1, tls: {insecure: true}}\n",
			[]string{"config:4: api.auth.tls: tls needs cert and key"}},
		{"announce timeout", base + "announce: {idle_timeout: 10ms}\n", []string{"config:8: announce.idle_timeout: 10ms is out of range 1s..168h"}},
		{"dscp out of range", base + "qos:\n  dscp_priority: {64: 3}\n", []string{"config:9: qos.dscp_priority.64: 64 is out of range 0..63"}},
		{"priority out of range", base + "qos:\n  dscp_priority: {26: 8}\n", []string{"config:9: qos.dscp_priority.26: 8 is out of range 0..7"}},
		{"lossless unmapped", base + "qos:\n  dscp_priority: {26: 2}\n  pcp_priority: {}\n", []string{"config:8: qos.lossless_priority: no DSCP or PCP maps to priority 3"}},
		{"cnp in lossless class", base + "qos:\n  cnp_dscp: 26\n", []string{"config:9: qos.cnp_dscp: CNP DSCP 26 maps to the lossless priority 3"}},
		{"api listen", "api:\n  listen: nowhere\n  auth: {insecure: true}\n" + base[strings.Index(base, "switches"):], []string{`config:2: api.listen: "nowhere" is not host:port`}},
		{"duplicate key", base + "    device_id: 2\n", []string{"config:8: switches[0].device_id: field given twice"}},
		{"yaml syntax", "api: [\n", []string{"config:1: (syntax): yaml: line 1: did not find expected node content"}},
		{"not a mapping", "- 1\n", []string{"config:1: (top): want a mapping"}},
		{"empty", "", []string{"config:0: (top): empty config"}},
		{"comments only", "# nothing\n", []string{"config:0: (top): empty config"}},
		// One document per file: a second one is refused at its "---",
		// valid or not (it used to be ignored without a word).
		{"second document", base + "---\nswitches: []\n", []string{"config:8: (document): a second YAML document starts here: fastcnpd reads one document per file"}},
		{"invalid second document", base + "---\nswitches: [\n", []string{"config:9: (syntax): yaml: line 9: did not find expected node content (in a second YAML document"}},
		{"empty second document", base + "---\n", []string{"config:8: (document): a second YAML document starts here"}},
		// Port 255 is CPU_PORT: packet-in and packet-out, never a front panel.
		{"CPU port as a port", base + "    ports:\n      - {port: 255}\n", []string{"config:9: switches[0].ports[0].port: 255 is the CPU port"}},
		{"CPU port as next hops", base + ecmpPorts + "    routes:\n      - {prefix: 10.0.0.0/8, port: 255, next_hop_mac: \"02:00:00:00:aa:01\"}\n" +
			"      - prefix: 10.1.0.0/16\n        next_hops: [{port: 255, mac: \"02:00:00:00:aa:02\"}, {port: 1, mac: \"02:00:00:00:aa:01\"}]\n" +
			"    inc:\n      next_hops: [{port: 255, mac: \"02:00:00:00:aa:02\", weight: 1}]\n",
			[]string{"config:12: switches[0].routes[0].port: 255 is the CPU port", "config:14: switches[0].routes[1].next_hops[0].port: 255 is the CPU port",
				"config:16: switches[0].inc.next_hops[0].port: 255 is the CPU port"}},
		{"connection quotas out of range", "announce:\n  max_connections_per_port: 0\n  max_connections_per_sender: 5000\n" + base,
			[]string{"config:2: announce.max_connections_per_port: 0 is out of range 1..4096", "config:3: announce.max_connections_per_sender: 5000 is out of range 1..4096"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src))
			if err == nil {
				t.Fatalf("no error for\n%s", tt.src)
			}
			lines := strings.Split(err.Error(), "\n")
			for _, w := range tt.want {
				found := false
				for _, l := range lines {
					found = found || strings.Contains(l, w)
				}
				if !found {
					t.Errorf("missing %q in:\n%v", w, err)
				}
			}
			if len(lines) != len(tt.want) {
				t.Errorf("got %d problems, want %d:\n%v", len(lines), len(tt.want), err)
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.File != "config" {
				t.Errorf("error is not a *config.Error: %T", err)
			}
		})
	}
}

// TestAllProblemsAtOnce: a file with several independent problems reports
// every one, in line order.
func TestAllProblemsAtOnce(t *testing.T) {
	src := `api:
  auth: {insecure: true}
switches:
  - name: a
    address: h:1
    device_id: 0
    tls: {insecure: true}
    ports:
      - {port: 600}
      - {port: 2, qth: lots}
    bogus: 1
`
	_, err := ParseFile("f.yaml", []byte(src))
	if err == nil {
		t.Fatal("no error")
	}
	want := []string{
		"f.yaml:6: switches[0].device_id: 0 is out of range",
		"f.yaml:9: switches[0].ports[0].port: 600 is out of range 1..511",
		`f.yaml:10: switches[0].ports[1].qth: size "lots": does not start with a number`,
		"f.yaml:11: switches[0].bogus: unknown field",
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(lines), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("problem %d = %q, want prefix %q", i, lines[i], w)
		}
	}
}

func TestExampleRoundTrip(t *testing.T) {
	c, err := Load("testdata/fastcnpd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Spot checks of the example against its text.
	leaf := c.Switch("leaf1")
	spine := c.Switch("spine1")
	if leaf == nil || spine == nil || c.Switch("nope") != nil {
		t.Fatal("Switch lookup")
	}
	p3, p4 := leaf.Port(3), leaf.Port(4)
	if p3.Settings.LinkRate != 400*units.Gbps || p3.Settings.Qth != 400*units.KB {
		t.Errorf("leaf1 port 3: %+v", p3.Settings)
	}
	if p4.Settings.Mode != ModeECN || p4.Settings.Qth != 25*units.KB || p4.Settings.RED.Kmin != 10*units.KiB ||
		len(p4.Subnets) != 2 || p4.Subnets[1] != netip.MustParsePrefix("fd00:1:4::/64") {
		t.Errorf("leaf1 port 4: %+v", p4)
	}
	if spine.ElectionID != (ElectionID{Low: 10}) || spine.Target != TargetBMv2 || spine.TLS.ServerName != "spine1.fabric" ||
		spine.Keepalive != 10*time.Minute || leaf.Keepalive != DefaultKeepalive {
		t.Errorf("spine1: %+v", spine)
	}
	if a := c.API.Auth; a.TokenFile == "" || a.TLS == nil || a.TLS.Cert != "/etc/fastcnp/api.pem" || a.TLS.ClientCA != "" {
		t.Errorf("api auth: %+v %+v", a, a.TLS)
	}
	if sp := spine.Port(2).Settings; sp.Qth != 480*units.KiB || sp.Tcheck != 12*time.Microsecond || sp.CNPGap != 2*time.Microsecond {
		t.Errorf("spine1 port 2: %+v", sp)
	}
	if spine.INC.Buckets != 1024 || spine.INC.NextHops[1].Weight != 1 {
		t.Errorf("spine1 inc: %+v", spine.INC)
	}
	if c.INC.SlotTimeout != 100*time.Millisecond || leaf.INCSlotTimeout != 100*time.Millisecond ||
		spine.INCSlotTimeout != 20*time.Millisecond {
		t.Errorf("slot timeouts: top %v, leaf1 %v, spine1 %v", c.INC.SlotTimeout, leaf.INCSlotTimeout, spine.INCSlotTimeout)
	}
	if r := spine.Routes[1]; len(r.NextHops) != 2 || r.NextHops[0].Weight != 3 || r.NextHops[1].Port != 2 || r.Port != 0 {
		t.Errorf("spine1 ECMP route: %+v", r)
	}
	mac, _ := net.ParseMAC("02:00:00:00:aa:02")
	if r := leaf.Routes[1]; r.Prefix != netip.MustParsePrefix("10.1.2.0/24") || r.Port != 2 || r.NextHopMAC.String() != mac.String() {
		t.Errorf("leaf1 route 1: %+v", r)
	}

	out, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParseFile("marshaled", out)
	if err != nil {
		t.Fatalf("marshaled config does not parse: %v\n%s", err, out)
	}
	if !reflect.DeepEqual(c, again) {
		t.Fatalf("round trip differs:\n%+v\n%+v\n%s", c, again, out)
	}
	out2, _ := again.Marshal()
	if string(out) != string(out2) {
		t.Fatal("Marshal is not stable")
	}
}

// TestMTLSAdminNames: the admin names of API mTLS are read in order and
// survive Marshal.
func TestMTLSAdminNames(t *testing.T) {
	src := strings.Replace(base, "auth: {insecure: true}", "auth:\n    mtls: {ca: /ca, cert: /c, key: /k, admin_names: [ops, noc.example]}", 1)
	c, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if m := c.API.Auth.MTLS; m == nil || !reflect.DeepEqual(m.AdminNames, []string{"ops", "noc.example"}) {
		t.Fatalf("mtls: %+v", c.API.Auth.MTLS)
	}
	checkRoundTrip(t, c)
}

// TestKeepalive: the per-switch keepalive defaults to 6m, 0 turns it off,
// and a tofino switch may ping more often than the gRPC default allows
// (Stratum permits 10 s); every value survives Marshal.
func TestKeepalive(t *testing.T) {
	tests := []struct {
		name, extra string
		want        time.Duration
	}{
		{"default", "", 6 * time.Minute},
		{"off", "    keepalive: 0\n", 0},
		{"longer", "    keepalive: 10m\n", 10 * time.Minute},
		{"tofino", "    target: tofino\n    p4info: /p\n    device_config: /d\n    keepalive: 30s\n", 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(base + tt.extra))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Switches[0].Keepalive; got != tt.want {
				t.Errorf("keepalive %v, want %v", got, tt.want)
			}
			checkRoundTrip(t, c)
		})
	}
}

// TestTokenTLS: token authentication with server TLS (and an optional
// client CA) parses and survives Marshal.
func TestTokenTLS(t *testing.T) {
	for _, tlsYAML := range []string{"{cert: /c, key: /k}", "{cert: /c, key: /k, client_ca: /ca}"} {
		src := strings.Replace(base, "auth: {insecure: true}", "auth:\n    token_file: /t\n    tls: "+tlsYAML, 1)
		c, err := Parse([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		a := c.API.Auth
		if a.TokenFile != "/t" || a.TLS == nil || a.TLS.Cert != "/c" || a.TLS.Key != "/k" ||
			(a.TLS.ClientCA != "") != strings.Contains(tlsYAML, "client_ca") {
			t.Fatalf("auth %+v, tls %+v", a, a.TLS)
		}
		checkRoundTrip(t, c)
	}
}

// checkRoundTrip fails unless Marshal gives YAML that parses back to c.
func checkRoundTrip(t *testing.T, c *Config) {
	t.Helper()
	out, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParseFile("marshaled", out)
	if err != nil || !reflect.DeepEqual(c, again) {
		t.Fatalf("round trip: %v\n%s", err, out)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/does-not-exist.yaml")
	if err == nil || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "does-not-exist.yaml") {
		t.Fatalf("Load = %v", err)
	}
}

func TestDefaultQth(t *testing.T) {
	tests := []struct {
		rate units.Rate
		want units.Size
	}{
		{100 * units.Gbps, 100000}, {25 * units.Gbps, 25000}, {400 * units.Gbps, 400000}, {units.Mbps, 1}, {0, 1},
	}
	for _, tt := range tests {
		if got := DefaultQth(tt.rate); got != tt.want {
			t.Errorf("DefaultQth(%s) = %d, want %d", tt.rate, got, tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	data, err := os.ReadFile("testdata/fastcnpd.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(base))
	f.Add([]byte("switches: [{name: a, ports: [{port: 1, red: {kmin: 1}}]}]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err != nil {
			for _, l := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(l, "config:") {
					t.Fatalf("problem without file:line: %q", l)
				}
			}
			return
		}
		out, err := c.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse(out)
		if err != nil || !reflect.DeepEqual(c, again) {
			t.Fatalf("round trip: %v\n%s", err, out)
		}
	})
}

// TestDocExampleInSync keeps the example in docs/config.md equal to the
// tested file.
func TestDocExampleInSync(t *testing.T) {
	doc, err := os.ReadFile("../../docs/config.md")
	if err != nil {
		t.Skipf("docs not found: %v", err)
	}
	_, rest, ok := strings.Cut(string(doc), "## Example\n\n```yaml\n")
	block, _, ok2 := strings.Cut(rest, "```\n")
	if !ok || !ok2 {
		t.Fatal("docs/config.md has no example block")
	}
	file, err := os.ReadFile("testdata/fastcnpd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if block != string(file) {
		t.Error("the example in docs/config.md differs from testdata/fastcnpd.yaml")
	}
}

// TestConnectionQuotas: the per-port and per-sender connection quotas of
// announcements default to a quarter of the table and half of that, take
// any value 1..CONN_TABLE_SIZE, and round-trip through Marshal (a Config
// built in Go with 0 gets the defaults).
// TestAnnounceAuth: announce.auth with its defaults, set values, its
// errors, and the round trip through Marshal.
func TestAnnounceAuth(t *testing.T) {
	c, err := Parse([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if c.Announce.Auth != nil {
		t.Errorf("auth without announce.auth: %+v", c.Announce.Auth)
	}
	tests := []struct {
		name, src string
		want      AnnounceAuth
		err       string
	}{
		{"defaults", "{key_file: /k}", AnnounceAuth{KeyFile: "/k", MaxClockSkew: 30 * time.Second, ReplayCache: 65536}, ""},
		{"set", "{key_file: /k, allow_unauthenticated: true, max_clock_skew: 5s, replay_cache: 2048}",
			AnnounceAuth{KeyFile: "/k", AllowUnauthenticated: true, MaxClockSkew: 5 * time.Second, ReplayCache: 2048}, ""},
		{"no key file", "{allow_unauthenticated: true}", AnnounceAuth{}, "config:1: announce.auth.key_file: required"},
		{"skew too short", "{key_file: /k, max_clock_skew: 10ms}", AnnounceAuth{}, "announce.auth.max_clock_skew"},
		{"cache too small", "{key_file: /k, replay_cache: 10}", AnnounceAuth{}, "announce.auth.replay_cache: 10 is out of range 1024..4194304"},
		{"unknown field", "{key_file: /k, keys: []}", AnnounceAuth{}, "announce.auth.keys: unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte("announce: {auth: " + tt.src + "}\n" + base))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Announce.Auth == nil || *c.Announce.Auth != tt.want {
				t.Fatalf("auth %+v, want %+v", c.Announce.Auth, tt.want)
			}
			y, err := c.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			back, err := Parse(y)
			if err != nil || back.Announce.Auth == nil || *back.Announce.Auth != tt.want {
				t.Errorf("round trip: %+v, %v\n%s", back.Announce.Auth, err, y)
			}
		})
	}
}

func TestConnectionQuotas(t *testing.T) {
	c, err := Parse([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if a := c.Announce; a.MaxConnectionsPerPort != 1024 || a.MaxConnectionsPerSender != 512 || a.PortQuota() != 1024 || a.SenderQuota() != 512 {
		t.Errorf("defaults: %+v", a)
	}
	c, err = Parse([]byte("announce: {max_connections_per_port: 4096, max_connections_per_sender: 1}\n" + base))
	if err != nil {
		t.Fatal(err)
	}
	if a := c.Announce; a.PortQuota() != 4096 || a.SenderQuota() != 1 {
		t.Errorf("set: %+v", a)
	}
	c.Announce.MaxConnectionsPerPort, c.Announce.MaxConnectionsPerSender = 0, 0
	y, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(y)
	if err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	if a := back.Announce; a.MaxConnectionsPerPort != DefaultMaxConnectionsPerPort || a.MaxConnectionsPerSender != DefaultMaxConnectionsPerSender {
		t.Errorf("zero quotas marshalled as %+v, want the defaults", a)
	}
}

// TestHA: the ha block with its defaults, TLS, and every form surviving
// Marshal; without it there is no HA.
func TestHA(t *testing.T) {
	tests := []struct {
		name, src string
		want      *HA
	}{
		{"absent", base, nil},
		{"defaults", "ha: {etcd: {endpoints: [\"http://10.0.0.1:2379\", \"http://etcd2.mgmt:2379/\"]}}\n" + base,
			&HA{Etcd: Etcd{Endpoints: []string{"http://10.0.0.1:2379", "http://etcd2.mgmt:2379"}, Prefix: DefaultEtcdPrefix,
				LeaseTTL: DefaultEtcdLeaseTTL}}},
		{"everything", "ha:\n  etcd:\n    endpoints: [\"https://[fd00::1]:2379\"]\n    prefix: /fastcnp/pod1/\n    lease_ttl: 5s\n" +
			"    tls: {ca: /ca.pem, cert: /c.pem, key: /k.pem, server_name: etcd}\n" + base,
			&HA{Etcd: Etcd{Endpoints: []string{"https://[fd00::1]:2379"}, Prefix: "/fastcnp/pod1/", LeaseTTL: 5 * time.Second,
				TLS: &EtcdTLS{CA: "/ca.pem", Cert: "/c.pem", Key: "/k.pem", ServerName: "etcd"}}}},
		{"tls without a client certificate", "ha: {etcd: {endpoints: [\"https://a:1\"], tls: {ca: /ca}}}\n" + base,
			&HA{Etcd: Etcd{Endpoints: []string{"https://a:1"}, Prefix: DefaultEtcdPrefix, LeaseTTL: DefaultEtcdLeaseTTL,
				TLS: &EtcdTLS{CA: "/ca"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.HA, tt.want) {
				t.Fatalf("ha = %+v, want %+v", c.HA, tt.want)
			}
			checkRoundTrip(t, c)
		})
	}
}

// TestTofinoSettings: a tofino switch gets its chip's CPU and recirculation ports
// unless given, the tofino block is refused on other targets, and the reserved
// ports cannot be front-panel ports; the block survives Marshal.
func TestTofinoSettings(t *testing.T) {
	const tofino = "    target: tofino\n    p4info: /p\n    device_config: /d\n"
	tests := []struct {
		name, extra string
		want        *TofinoSettings
		err         string
	}{
		{"not tofino", "", nil, ""},
		{"tofino1 defaults", tofino, &TofinoSettings{Chip: Tofino1, CPUPort: 192, RecircPort: 68, MirrorTruncate: 128}, ""},
		{"tofino2 defaults", tofino + "    tofino: {chip: tofino2}\n", &TofinoSettings{Chip: Tofino2, CPUPort: 0, RecircPort: 6, MirrorTruncate: 128}, ""},
		{"4-pipe tofino1", tofino + "    tofino: {cpu_port: 320, recirculation_port: 196, mirror_truncate: 160}\n",
			&TofinoSettings{Chip: Tofino1, CPUPort: 320, RecircPort: 196, MirrorTruncate: 160}, ""},
		{"block on bmv2", "    target: bmv2\n    p4info: /p\n    device_config: /d\n    tofino: {chip: tofino2}\n", nil,
			"switches[0].tofino: only for target tofino (this switch is bmv2)"},
		{"bad chip", tofino + "    tofino: {chip: tofino3}\n", nil, `switches[0].tofino.chip: "tofino3": want tofino1 or tofino2`},
		{"same ports", tofino + "    tofino: {cpu_port: 68}\n", nil, "cpu_port and recirculation_port are both 68"},
		{"truncation too short", tofino + "    tofino: {mirror_truncate: 64}\n", nil, "switches[0].tofino.mirror_truncate: 64 is out of range 96..65535"},
		{"CPU port as a port", tofino + "    ports:\n      - {port: 192}\n", nil,
			"switches[0].ports[0].port: 192 is the CPU port (tofino.cpu_port), not a front-panel port"},
		{"recirculation port as a port", tofino + "    tofino: {chip: tofino2}\n    ports:\n      - {port: 6}\n", nil,
			"6 is the recirculation port (tofino.recirculation_port)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(base + tt.extra))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Switches[0].Tofino; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("tofino %+v, want %+v", got, tt.want)
			}
			checkRoundTrip(t, c)
		})
	}
}
