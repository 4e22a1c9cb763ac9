package config

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

// incFabric is two leaves and a spine (lines from 1): workers 10.0.1.1
// behind leaf1 port 1, 10.0.2.1 behind leaf2 port 1; each leaf's port 9 is
// linked to the spine (ports 1 and 2).
const incFabric = `api:
  auth: {insecure: true}
inc:
  groups:
    - id: 7
      members:
        - {host: 10.0.1.1, rank: 0}
        - {host: 10.0.2.1, rank: 5}
switches:
  - name: leaf1
    address: 127.0.0.1:9001
    device_id: 1
    tls: {insecure: true}
    ports:
      - {port: 1, mac: "02:00:00:00:01:01", subnets: [10.0.1.0/24]}
      - {port: 9, mac: "02:00:00:00:01:09", peer: {switch: spine, port: 1}}
  - name: leaf2
    address: 127.0.0.1:9002
    device_id: 2
    tls: {insecure: true}
    ports:
      - {port: 1, mac: "02:00:00:00:02:01", subnets: [10.0.2.0/24]}
      - {port: 9, mac: "02:00:00:00:02:09", peer: {switch: spine, port: 2}}
  - name: spine
    address: 127.0.0.1:9003
    device_id: 3
    tls: {insecure: true}
    inc: {capacity: 3}
    ports:
      - {port: 1, mac: "02:00:00:00:03:01"}
      - {port: 2, mac: "02:00:00:00:03:02", peer: {switch: leaf2, port: 9}}
`

// TestINCGroupsAndPeers: inc.groups, ports' peer and a switch's inc.capacity
// are read, defaulted (capacity 1) and round-trip through Marshal; a
// capacity alone configures no INC routing.
func TestINCGroupsAndPeers(t *testing.T) {
	c, err := Parse([]byte(incFabric))
	if err != nil {
		t.Fatal(err)
	}
	want := []INCGroup{{ID: 7, Members: []INCMember{{netip.MustParseAddr("10.0.1.1"), 0}, {netip.MustParseAddr("10.0.2.1"), 5}}}}
	if !reflect.DeepEqual(c.INC.Groups, want) {
		t.Errorf("groups %+v, want %+v", c.INC.Groups, want)
	}
	if p := c.Switch("leaf1").Port(9).Peer; p == nil || *p != (PeerPort{"spine", 1}) {
		t.Errorf("leaf1 port 9 peer %+v", p)
	}
	if p := c.Switch("spine").Port(1).Peer; p != nil {
		t.Errorf("spine port 1 peer %+v, want none (only its other end names it)", p)
	}
	if c.Switch("spine").INCCapacity != 3 || c.Switch("leaf1").INCCapacity != DefaultINCCapacity || c.Switch("spine").INC != nil {
		t.Errorf("capacities %d %d, spine INC routing %+v", c.Switch("spine").INCCapacity, c.Switch("leaf1").INCCapacity, c.Switch("spine").INC)
	}
	if sw, port := c.MemberSwitch(netip.MustParseAddr("10.0.2.1")); sw != "leaf2" || port != 1 {
		t.Errorf("MemberSwitch = %s %d", sw, port)
	}
	g := c.INC.Group(7)
	if g == nil || g.Member(netip.MustParseAddr("10.0.2.1")).Rank != 5 || g.Member(netip.MustParseAddr("10.0.9.9")) != nil || c.INC.Group(8) != nil {
		t.Errorf("Group/Member lookups wrong: %+v", g)
	}
	checkRoundTrip(t, c)
}

func TestBadINCConfigs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new string
		want     string
	}{
		{"group ID zero", "- id: 7", "- id: 0", "config:5: inc.groups[0].id: 0 is out of range 1..65535"},
		{"rank 32", "rank: 5}", "rank: 32}", "config:8: inc.groups[0].members[1].rank: 32 is out of range 0..31"},
		{"rank twice", "rank: 5}", "rank: 0}", `config:8: inc.groups[0].members[1].rank: rank 0 is already 10.0.1.1's`},
		{"host twice", "host: 10.0.2.1", "host: 10.0.1.1", "config:8: inc.groups[0].members[1].host: 10.0.1.1 is already a member at inc.groups[0].members[0]"},
		{"host not IPv4", "host: 10.0.2.1", "host: fd00::1", `config:8: inc.groups[0].members[1].host: "fd00::1": want an IPv4 address`},
		{"member behind no port", "host: 10.0.2.1", "host: 10.0.3.1", "config:8: inc.groups[0].members[1].host: 10.0.3.1 is behind no switch port"},
		{"no members", "      members:\n        - {host: 10.0.1.1, rank: 0}\n        - {host: 10.0.2.1, rank: 5}\n", "      members: []\n",
			"config:6: inc.groups[0].members: at least one member is required"},
		{"group twice", "        - {host: 10.0.2.1, rank: 5}\n", "        - {host: 10.0.2.1, rank: 5}\n    - {id: 7, members: [{host: 10.0.1.1, rank: 1}]}\n",
			"config:9: inc.groups[1].id: INC group 7 is already defined at inc.groups[0]"},
		{"peer is itself", "peer: {switch: spine, port: 1}", "peer: {switch: leaf1, port: 1}", "a port's peer is another switch, not leaf1 itself"},
		{"peer switch unknown", "peer: {switch: spine, port: 1}", "peer: {switch: spine9, port: 1}", `switch "spine9" is not configured`},
		{"peer port unknown", "peer: {switch: spine, port: 1}", "peer: {switch: spine, port: 4}", "switch spine has no port 4 under ports"},
		{"peer does not name back", "peer: {switch: spine, port: 1}", "peer: {switch: spine, port: 2}", "spine port 2 names leaf2 port 9 as its peer, not leaf1 port 9"},
		{"peer with subnets", `"02:00:00:00:01:09", peer`, `"02:00:00:00:01:09", subnets: [10.9.0.0/16], peer`, "a port with a peer switch leads to that switch, not to hosts"},
		{"peer missing port", "peer: {switch: spine, port: 1}", "peer: {switch: spine}", "switches[0].ports[1].peer.port: required"},
		{"capacity negative", "inc: {capacity: 3}", "inc: {capacity: -1}", "switches[2].inc.capacity: -1: must be >= 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(incFabric, tc.old, tc.new, 1)
			if src == incFabric {
				t.Fatalf("replacement %q not found", tc.old)
			}
			_, err := Parse([]byte(src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// A member behind two switches' ports.
	src := strings.Replace(incFabric, "subnets: [10.0.2.0/24]", "subnets: [10.0.0.0/16]", 1)
	if _, err := Parse([]byte(src)); err == nil || !strings.Contains(err.Error(), "10.0.1.1 is behind leaf1 port 1 and leaf2 port 1") {
		t.Errorf("member behind two ports: %v", err)
	}
}
