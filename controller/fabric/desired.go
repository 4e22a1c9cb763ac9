package fabric

import (
	"fmt"
	"net"
	"sort"
	"sync"
	"time"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/controller/incroute"
	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/p4src/portcfg"
	"github.com/fastcnp/fastcnp/p4src/window"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"github.com/fastcnp/fastcnp/wire"
)

// P4 object names used by the controller (docs/dataplane.md).
const (
	TableIPv4Route      = "FastcnpIngress.ipv4_route"
	TableTrafficClass   = "FastcnpIngress.traffic_class"
	TablePortConfig     = "FastcnpIngress.port_config"
	TableRDMAConnection = "FastcnpIngress.rdma_connection"
	TableINCGroup       = "FastcnpIngress.inc_group"
	TableINCRoute       = "FastcnpIngress.inc_route"
	TableINCSlotTimeout = "FastcnpIngress.inc_slot_timeout"
	TableINCChildPort   = "FastcnpIngress.inc_child_port"
	TableNextHopGroup   = "FastcnpIngress.next_hop_group_select"
	ProfileNextHops     = "FastcnpIngress.next_hop_selector"
	TableFlowLog2       = "FastcnpEgress.flow_bytes_log2"
	TablePortLog2       = "FastcnpEgress.port_bytes_log2"
	TableWindowExp2     = "FastcnpEgress.window_exp2"
	ValueSetAnnounce    = "FastcnpParser.announce_udp_port"
	DigestPortState     = "port_state_digest_t"
	DigestCNP           = "cnp_digest_t"
)

// ManagedTables are the tables whose entries fastcnpd owns (extra entries
// in them are deleted by a repair).
var ManagedTables = []string{
	TableIPv4Route, TableTrafficClass, TablePortConfig, TableRDMAConnection, TableINCGroup,
	TableINCRoute, TableFlowLog2, TablePortLog2, TableWindowExp2, TableNextHopGroup, TableINCSlotTimeout,
	TableINCChildPort,
}

// ManagedProfiles are the action profiles whose members and groups
// fastcnpd owns (extra ones are deleted by a repair).
var ManagedProfiles = []string{ProfileNextHops}

// ManagedDigests are the digests fastcnpd configures.
var ManagedDigests = []string{DigestPortState, DigestCNP}

// Digest list settings: one digest per list, sent at once, acked within 1 s.
const (
	DigestMaxTimeout  = time.Duration(0)
	DigestMaxListSize = 1
	DigestAckTimeout  = time.Second
	// CloneReplicaPort is where the clone session's single replica goes
	// (CPU_PORT, as docs/dataplane.md recommends).
	CloneReplicaPort = p4src.CPUPort
)

// PortParams are the set_port_config action parameters of one port
// (computed by p4src/portcfg, which fastcnp-sim shares).
type PortParams = portcfg.Params

// ModeValue is the set_port_config mode of a config mode.
func ModeValue(m config.Mode) (uint8, error) {
	switch m {
	case config.ModeECN:
		return p4src.PortModeECN, nil
	case config.ModeFastCNP:
		return p4src.PortModeFastcnp, nil
	case config.ModeINT:
		return p4src.PortModeInt, nil
	}
	return 0, fmt.Errorf("unknown mode %q", m)
}

// ComputePortParams derives the set_port_config parameters of a port: the
// rate in bytes per ms, the BDP and its q6 log2, the pause quantum (512 bit
// times in ps) and Pmax in q16 (p4src/portcfg.Compute).
func ComputePortParams(sw *config.Switch, p *config.Port, losslessPriority uint8) (PortParams, error) {
	s := p.Settings
	mode, err := ModeValue(s.Mode)
	if err != nil {
		return PortParams{Port: p.Number}, fmt.Errorf("port %d: %w", p.Number, err)
	}
	out, err := portcfg.Compute(portcfg.Settings{
		Port: p.Number, SwitchID: sw.DeviceID, LinkRateBps: uint64(s.LinkRate), QthBytes: uint64(s.Qth),
		Tcheck: s.Tcheck, CNPGap: s.CNPGap, RTTBase: s.RTTBase, Mode: mode,
		REDKminBytes: uint64(s.RED.Kmin), REDKmaxBytes: uint64(s.RED.Kmax), REDPmax: s.RED.Pmax,
		MTUBytes: uint64(s.MTU), LosslessPriority: losslessPriority,
	})
	if err != nil {
		return out, fmt.Errorf("switch %s: %w", sw.Name, err)
	}
	return out, nil
}

// AnnounceValueSet is the desired announce_udp_port value set for the
// configured announcement port. The parser recognises
// wire.DefaultAnnouncePort as a compile-time constant, so the value set
// holds only another port: with the default port it is empty, which is
// also what a pipeline push leaves, so nothing is written (BMv2's P4Runtime
// server cannot write or read value sets at all).
func AnnounceValueSet(info *p4rt.Info, port uint16) (*p4v1.Entity, error) {
	if port == wire.DefaultAnnouncePort {
		return info.ValueSetEntry(ValueSetAnnounce)
	}
	return info.ValueSetEntry(ValueSetAnnounce, []p4rt.Match{p4rt.Exact("", port)})
}

// Input is everything the desired state of one switch depends on.
type Input struct {
	// Config is the whole configuration (QoS and announce settings).
	Config *config.Config
	// Switch is the switch (an element of Config.Switches).
	Switch *config.Switch
	// Connections are installed on every switch.
	Connections []Connection
	// PrevINC is the switch's current INC route table (nil: build afresh);
	// with the same length, the new table moves the fewest buckets. Used
	// for a switch with its own inc.next_hops.
	PrevINC incroute.Table
	// INCTree is the fabric's INC tree (ComputeINCTree; nil: no INC group):
	// the switch's inc_group, inc_child_port and, on a leaf of groups
	// spanning several leaves, inc_route entries.
	INCTree *INCTree
}

// Result is a switch's desired state plus what was derived on the way.
type Result struct {
	State *State
	// INC is the INC route table installed (nil without INC).
	INC incroute.Table
	// Ports are the port parameters, by port number order.
	Ports []PortParams
	// ECMP are the groups of the switch's ECMP routes, by prefix.
	ECMP []ECMPGroup
	// Warnings are config parts the data plane cannot express (IPv6 routes,
	// an INC bucket count other than the data plane's).
	Warnings []string
}

type builder struct {
	info *p4rt.Info
	st   *State
	err  error
}

func (b *builder) table(t string, prio int32, ms []p4rt.Match, action string, ps ...p4rt.Param) {
	if b.err != nil {
		return
	}
	tb := b.info.TableEntry(t).Match(ms...)
	if prio != 0 {
		tb = tb.Priority(prio)
	}
	e, err := tb.Action(action, ps...).Entity()
	if err != nil {
		b.err = fmt.Errorf("fabric: %s: %w", t, err)
		return
	}
	if err := b.st.Add(e); err != nil {
		b.err = err
	}
}

func (b *builder) add(e *p4v1.Entity, err error) {
	if b.err != nil {
		return
	}
	if err != nil {
		b.err = fmt.Errorf("fabric: %w", err)
		return
	}
	if err := b.st.Add(e); err != nil {
		b.err = err
	}
}

// CNPSession is the clone session CNP_CLONE_SESSION of a switch. On v1model
// targets it clones whole packets to CloneReplicaPort; on a tofino switch it is
// the E2E mirror session (Stratum makes a Tofino mirror session of it): its
// replica is the recirculation port, through which switch CNPs and egress digests
// loop back to ingress, and it truncates the mirrored packet to
// tofino.mirror_truncate bytes (docs/tofino.md).
func CNPSession(sw *config.Switch) (*p4v1.Entity, error) {
	if sw.Tofino != nil {
		return p4rt.CloneSession(p4src.CNPCloneSession, 0, sw.Tofino.MirrorTruncate,
			p4rt.Replica{Port: uint32(sw.Tofino.RecircPort), Instance: 1})
	}
	return p4rt.CloneSession(p4src.CNPCloneSession, 0, 0, p4rt.Replica{Port: CloneReplicaPort, Instance: 1})
}

// Desired computes the desired state of one switch.
func Desired(info *p4rt.Info, in Input) (*Result, error) {
	if in.Config == nil || in.Switch == nil {
		return nil, fmt.Errorf("fabric: config and switch are required")
	}
	sw := in.Switch
	res := &Result{}
	b := &builder{info: info, st: NewState()}

	// Value set (AnnounceValueSet), clone session, digests.
	b.add(AnnounceValueSet(info, in.Config.Announce.UDPPort))
	b.add(CNPSession(sw))
	for _, d := range ManagedDigests {
		b.add(info.DigestConfig(d, DigestMaxTimeout, DigestMaxListSize, DigestAckTimeout))
	}

	// Traffic classes: untagged packets by DSCP, tagged ones by PCP.
	qos := in.Config.QoS
	if n := len(qos.DSCPPriority) + len(qos.PCPPriority); n > p4src.TrafficClassTableSize {
		return nil, fmt.Errorf("fabric: switch %s: %d traffic classes exceed the table size %d",
			sw.Name, n, p4src.TrafficClassTableSize)
	}
	for _, d := range sortedKeys(qos.DSCPPriority) {
		prio := qos.DSCPPriority[d]
		b.table(TableTrafficClass, 1, []p4rt.Match{p4rt.Exact("vlan_valid", 0), p4rt.Ternary("dscp", d, 0x3f)},
			"set_traffic_class", p4rt.P("priority", prio), p4rt.P("lossless", b2u(prio == qos.LosslessPriority)))
	}
	for _, p := range sortedKeys(qos.PCPPriority) {
		prio := qos.PCPPriority[p]
		b.table(TableTrafficClass, 1, []p4rt.Match{p4rt.Exact("vlan_valid", 1), p4rt.Ternary("pcp", p, 0x7)},
			"set_traffic_class", p4rt.P("priority", prio), p4rt.P("lossless", b2u(prio == qos.LosslessPriority)))
	}

	// Ports.
	ports := append([]config.Port(nil), sw.Ports...)
	sort.Slice(ports, func(i, j int) bool { return ports[i].Number < ports[j].Number })
	for i := range ports {
		pp, err := ComputePortParams(sw, &ports[i], qos.LosslessPriority)
		if err != nil {
			return nil, fmt.Errorf("fabric: switch %s: %w", sw.Name, err)
		}
		res.Ports = append(res.Ports, pp)
		b.table(TablePortConfig, 0, []p4rt.Match{p4rt.Exact("port", pp.Port)}, "set_port_config",
			p4rt.P("rate_bytes_per_ms", pp.RateBytesPerMs), p4rt.P("qth_bytes", pp.QthBytes),
			p4rt.P("tcheck_ns", pp.TcheckNs), p4rt.P("cnp_gap_ns", pp.CNPGapNs), p4rt.P("mode", pp.Mode),
			p4rt.P("red_kmin_bytes", pp.REDKminBytes), p4rt.P("red_kmax_bytes", pp.REDKmaxBytes),
			p4rt.P("red_pmax_q16", pp.REDPmaxQ16), p4rt.P("rtt_base_ns", pp.RTTBaseNs),
			p4rt.P("bdp_bytes", pp.BDPBytes), p4rt.P("bdp_log2_q6", pp.BDPLog2Q6),
			p4rt.P("mtu_bytes", pp.MTUBytes), p4rt.P("pause_quantum_ps", pp.PauseQuantumPs),
			p4rt.P("switch_id", pp.SwitchID), p4rt.P("lossless_priority", pp.LosslessPriority))
	}

	// Routes (IPv4 only: the data plane has no IPv6 table). A route with
	// one next hop is a set_nexthop entry; an ECMP route runs its group.
	v4 := 0
	var ecmpRoutes []config.Route
	for _, r := range sw.Routes {
		if !r.Prefix.Addr().Is4() {
			res.Warnings = append(res.Warnings, fmt.Sprintf("route %s skipped: the data plane routes IPv4 only", r.Prefix))
			continue
		}
		v4++
		if len(r.NextHops) > 1 {
			ecmpRoutes = append(ecmpRoutes, r)
			continue
		}
		port := sw.Port(r.Port)
		if port == nil || port.MAC == nil {
			return nil, fmt.Errorf("fabric: switch %s: route %s: port %d has no MAC", sw.Name, r.Prefix, r.Port)
		}
		b.table(TableIPv4Route, 0, routeMatch(r.Prefix), "set_nexthop", p4rt.P("port", r.Port), p4rt.P("src_mac", port.MAC),
			p4rt.P("dst_mac", r.NextHopMAC))
	}
	if v4 > p4src.RouteTableSize {
		return nil, fmt.Errorf("fabric: switch %s: %d IPv4 routes exceed ROUTE_TABLE_SIZE %d", sw.Name, v4, p4src.RouteTableSize)
	}
	if len(ecmpRoutes) > 0 {
		groups, err := ECMPGroups(info, sw, ecmpRoutes)
		if err != nil {
			return nil, fmt.Errorf("fabric: switch %s: %w", sw.Name, err)
		}
		res.ECMP = groups
		b.ecmp(groups)
	}

	// INC route table: the switch's own (inc.next_hops), or its part of the
	// tree's shared table.
	part := in.INCTree.Switch(sw.Name)
	switch {
	case sw.INC == nil && part != nil && len(part.Up) > 0:
		res.INC = make(incroute.Table, len(in.INCTree.Table))
		for bucket, id := range in.INCTree.Table {
			up, ok := part.Up[id]
			if !ok {
				return nil, fmt.Errorf("fabric: switch %s: INC tree bucket %d: no link to upper switch %d", sw.Name, bucket, id)
			}
			res.INC[bucket] = uint32(up.Port)
			b.table(TableINCRoute, 0, []p4rt.Match{p4rt.Exact("bucket", bucket)}, "set_nexthop",
				p4rt.P("port", up.Port), p4rt.P("src_mac", up.SrcMAC), p4rt.P("dst_mac", up.DstMAC))
		}
	case sw.INC != nil:
		if sw.INC.Buckets != p4src.IncBuckets {
			res.Warnings = append(res.Warnings, fmt.Sprintf(
				"inc.buckets %d: the data plane hashes into %d buckets; installing %d", sw.INC.Buckets,
				p4src.IncBuckets, p4src.IncBuckets))
		}
		hops := make([]incroute.Hop, 0, len(sw.INC.NextHops))
		macs := make(map[uint32]config.INCNextHop)
		for _, h := range sw.INC.NextHops {
			hops = append(hops, incroute.Hop{ID: uint32(h.Port), Weight: h.Weight})
			macs[uint32(h.Port)] = h
		}
		var t incroute.Table
		var err error
		if len(in.PrevINC) == p4src.IncBuckets {
			// Proportional and within the run bound always; the fewest moves
			// whenever those allow it, else a bounded few more
			// (controller/incroute, docs/controller.md).
			t, err = incroute.UpdateBounded(in.PrevINC, hops)
		} else {
			t, err = incroute.Build(hops, p4src.IncBuckets)
		}
		if err != nil {
			return nil, fmt.Errorf("fabric: switch %s: inc routes: %w", sw.Name, err)
		}
		res.INC = t
		for bucket, id := range t {
			h := macs[id]
			port := sw.Port(h.Port)
			if port == nil || port.MAC == nil {
				return nil, fmt.Errorf("fabric: switch %s: inc next hop port %d has no MAC", sw.Name, h.Port)
			}
			b.table(TableINCRoute, 0, []p4rt.Match{p4rt.Exact("bucket", bucket)}, "set_nexthop",
				p4rt.P("port", h.Port), p4rt.P("src_mac", port.MAC), p4rt.P("dst_mac", h.MAC))
		}
	}

	// Connections. A connection aggregates (INC uplink flag) only on the
	// switch its sender is behind, and only as the member the config's INC
	// groups make it: elsewhere its contributions are partial aggregates by
	// then, and a claim the config does not back is not aggregated.
	for _, c := range in.Connections {
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("fabric: connection %s: %w", c.ConnKey, err)
		}
		if int(c.Index) >= p4src.ConnTableSize {
			return nil, fmt.Errorf("fabric: connection %s: conn_index %d >= %d", c.ConnKey, c.Index, p4src.ConnTableSize)
		}
		flags := c.Flags
		if in.INCTree == nil || in.INCTree.Members[c.SenderIP] != sw.Name || CheckINCMembership(in.Config, c) != nil {
			flags &^= p4src.ConnFlagIncUplink
		}
		b.table(TableRDMAConnection, 0, []p4rt.Match{
			p4rt.Exact("src_addr", net.IP(c.SenderIP.AsSlice())), p4rt.Exact("udp_sport", c.UDPSrcPort),
			p4rt.Exact("dest_qp", c.ReceiverQPN)},
			"set_connection", p4rt.P("sender_qpn", c.SenderQPN), p4rt.P("flags", flags),
			p4rt.P("conn_index", c.Index), p4rt.P("inc_group", c.INCGroup), p4rt.P("worker_rank", c.WorkerRank))
	}
	// INC groups (their masks and roots from the tree) and child ports.
	if part != nil {
		if len(part.Groups) > p4src.IncGroups {
			return nil, fmt.Errorf("fabric: switch %s: %d INC groups exceed INC_GROUPS %d", sw.Name, len(part.Groups), p4src.IncGroups)
		}
		timeoutNs, err := portcfg.NS32("inc.slot_timeout", sw.INCSlotTimeout)
		if err != nil {
			return nil, fmt.Errorf("fabric: switch %s: %w", sw.Name, err)
		}
		for _, g := range sortedKeys(part.Groups) {
			e := part.Groups[g]
			b.table(TableINCGroup, 0, []p4rt.Match{p4rt.Exact("group_id", g)}, "set_inc_group",
				p4rt.P("contributors_mask", e.Mask), p4rt.P("root", b2u(e.Root)))
			// Slot aging for the group: no entry (timeout 0) leaves it off.
			if timeoutNs != 0 {
				b.table(TableINCSlotTimeout, 0, []p4rt.Match{p4rt.Exact("group_id", g)}, "set_inc_slot_timeout",
					p4rt.P("timeout_ns", timeoutNs))
			}
		}
		for _, port := range sortedKeys(part.Children) {
			b.table(TableINCChildPort, 0, []p4rt.Match{p4rt.Exact("port", port)}, "set_inc_child",
				p4rt.P("child_rank", part.Children[port]))
		}
	}

	// The window tables (the same for every switch: built once per P4Info).
	if b.err == nil {
		ws, err := windowEntries(info)
		if err != nil {
			return nil, fmt.Errorf("fabric: switch %s: %w", sw.Name, err)
		}
		for _, e := range ws {
			if err := b.st.addEntry(e); err != nil {
				return nil, err
			}
		}
	}
	if b.err != nil {
		return nil, fmt.Errorf("switch %s: %w", sw.Name, b.err)
	}
	res.State = b.st
	return res, nil
}

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

func sortedKeys[K ~uint8 | ~uint16, V any](m map[K]V) []K {
	ks := make([]K, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	return ks
}

var windowCache sync.Map // *p4rt.Info -> []Entry

// windowEntries returns the entries of the two log2 tables and window_exp2
// (window.Log2Entries, window.Exp2Entries), cached per P4Info index. Entries
// are immutable, so states share them.
func windowEntries(info *p4rt.Info) ([]Entry, error) {
	if v, ok := windowCache.Load(info); ok {
		return v.([]Entry), nil
	}
	b := &builder{info: info, st: NewState()}
	for _, e := range window.Log2Entries() {
		b.table(TableFlowLog2, 0, []p4rt.Match{p4rt.LPM("bytes", e.Value, int32(e.PrefixLen))}, "set_flow_bytes_log2",
			p4rt.P("log2_q6", e.Log2Q6))
		b.table(TablePortLog2, 0, []p4rt.Match{p4rt.LPM("bytes", e.Value, int32(e.PrefixLen))}, "set_port_bytes_log2",
			p4rt.P("log2_q6", e.Log2Q6))
	}
	for _, e := range window.Exp2Entries() {
		b.table(TableWindowExp2, 0, []p4rt.Match{p4rt.Exact("log2_q6", e.K)}, "set_window",
			p4rt.P("window_bytes", e.Window))
	}
	if b.err != nil {
		return nil, b.err
	}
	out := make([]Entry, 0, b.st.Len())
	for _, e := range b.st.entries {
		out = append(out, e)
	}
	windowCache.Store(info, out)
	return out, nil
}
