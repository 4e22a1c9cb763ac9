package network

import (
	"fmt"
	"strings"

	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/p4src/portcfg"
	"github.com/fastcnp/fastcnp/p4src/window"
)

// match is one key field of an entry, by name: exact (Value), lpm (Value, Plen) or
// ternary (Value, Mask).
type match struct {
	name  string
	value uint64
	mask  uint64
	plen  int32
}

// param is one action parameter, by name.
type param struct {
	name  string
	value uint64
}

// schemaIndex resolves P4Info names (the short names after the control's dot, as in
// the conformance vectors) to the pipeline's IDs.
type schemaIndex struct {
	tables  map[string]*pipeline.TableInfo
	actions map[string]*pipeline.ActionInfo
}

func shortName(n string) string {
	if i := strings.LastIndexByte(n, '.'); i >= 0 {
		return n[i+1:]
	}
	return n
}

func newSchemaIndex() *schemaIndex {
	s := pipeline.ProgramSchema()
	x := &schemaIndex{tables: map[string]*pipeline.TableInfo{}, actions: map[string]*pipeline.ActionInfo{}}
	for i := range s.Tables {
		x.tables[shortName(s.Tables[i].Name)] = &s.Tables[i]
	}
	for i := range s.Actions {
		x.actions[shortName(s.Actions[i].Name)] = &s.Actions[i]
	}
	return x
}

// action builds an action by name.
func (x *schemaIndex) action(name string, ps ...param) (pipeline.Action, error) {
	ai, ok := x.actions[name]
	if !ok {
		return pipeline.Action{}, fmt.Errorf("program: no action %q", name)
	}
	a := pipeline.Action{ID: ai.ID}
	for _, p := range ps {
		id := uint32(0)
		for _, f := range ai.Params {
			if f.Name == p.name {
				id = f.ID
			}
		}
		if id == 0 {
			return a, fmt.Errorf("program: action %s has no parameter %q", name, p.name)
		}
		a.Params = append(a.Params, pipeline.Param{ID: id, Value: p.value})
	}
	return a, nil
}

// entry builds a table entry by names (action "" for an entry that runs a group).
func (x *schemaIndex) entry(table string, prio int32, ms []match, action string, ps ...param) (*pipeline.TableEntry, error) {
	ti, ok := x.tables[table]
	if !ok {
		return nil, fmt.Errorf("program: no table %q", table)
	}
	e := &pipeline.TableEntry{TableID: ti.ID, Priority: prio}
	for _, m := range ms {
		id := uint32(0)
		for _, k := range ti.Keys {
			if k.Name == m.name {
				id = k.ID
			}
		}
		if id == 0 {
			return nil, fmt.Errorf("program: table %s has no key %q", table, m.name)
		}
		e.Match = append(e.Match, pipeline.FieldMatch{FieldID: id, Value: m.value, Mask: m.mask, PrefixLen: m.plen})
	}
	if action != "" {
		a, err := x.action(action, ps...)
		if err != nil {
			return nil, err
		}
		e.Action = a
	}
	return e, nil
}

// insert builds an entry and inserts it into p.
func (x *schemaIndex) insert(p *pipeline.Pipeline, table string, prio int32, ms []match, action string, ps ...param) error {
	e, err := x.entry(table, prio, ms, action, ps...)
	if err != nil {
		return err
	}
	if err := p.InsertEntry(e); err != nil {
		return fmt.Errorf("program: insert into %s: %w", table, err)
	}
	return nil
}

// DSCP classes, as controller/config's default map: 26 -> 3 (lossless), 48 -> 6.
const (
	dataDSCP = 26
	cnpDSCP  = 48
)

// programBase writes what fastcnpd installs on every switch before any connection:
// the clone session of switch CNPs, the traffic classes, and the window tables.
func (x *schemaIndex) programBase(p *pipeline.Pipeline, windows bool) error {
	if err := p.InsertCloneSession(pipeline.CloneSession{SessionID: p4src.CNPCloneSession, EgressPort: p4src.CPUPort, Instance: 1}); err != nil {
		return fmt.Errorf("program: clone session: %w", err)
	}
	for _, c := range []struct {
		dscp, prio uint64
	}{{dataDSCP, losslessPriority}, {cnpDSCP, cnpPriority}} {
		lossless := uint64(0)
		if c.prio == losslessPriority {
			lossless = 1
		}
		if err := x.insert(p, "traffic_class", 1, []match{{name: "vlan_valid", value: 0}, {name: "dscp", value: c.dscp, mask: 0x3f}},
			"set_traffic_class", param{"priority", c.prio}, param{"lossless", lossless}); err != nil {
			return err
		}
	}
	if !windows {
		return nil
	}
	for _, e := range window.Log2Entries() {
		for _, t := range []struct{ table, action string }{{"flow_bytes_log2", "set_flow_bytes_log2"}, {"port_bytes_log2", "set_port_bytes_log2"}} {
			if err := x.insert(p, t.table, 0, []match{{name: firstKey(x, t.table), value: uint64(e.Value), plen: int32(e.PrefixLen)}},
				t.action, param{"log2_q6", uint64(e.Log2Q6)}); err != nil {
				return err
			}
		}
	}
	for _, e := range window.Exp2Entries() {
		if err := x.insert(p, "window_exp2", 0, []match{{name: firstKey(x, "window_exp2"), value: uint64(e.K)}},
			"set_window", param{"window_bytes", uint64(e.Window)}); err != nil {
			return err
		}
	}
	return nil
}

func firstKey(x *schemaIndex, table string) string { return x.tables[table].Keys[0].Name }

// programPort writes port_config of one port.
func (x *schemaIndex) programPort(p *pipeline.Pipeline, pp portcfg.Params) error {
	return x.insert(p, "port_config", 0, []match{{name: "port", value: uint64(pp.Port)}}, "set_port_config",
		param{"rate_bytes_per_ms", uint64(pp.RateBytesPerMs)}, param{"qth_bytes", uint64(pp.QthBytes)},
		param{"tcheck_ns", uint64(pp.TcheckNs)}, param{"cnp_gap_ns", uint64(pp.CNPGapNs)}, param{"mode", uint64(pp.Mode)},
		param{"red_kmin_bytes", uint64(pp.REDKminBytes)}, param{"red_kmax_bytes", uint64(pp.REDKmaxBytes)},
		param{"red_pmax_q16", uint64(pp.REDPmaxQ16)}, param{"rtt_base_ns", uint64(pp.RTTBaseNs)},
		param{"bdp_bytes", uint64(pp.BDPBytes)}, param{"bdp_log2_q6", uint64(pp.BDPLog2Q6)},
		param{"mtu_bytes", uint64(pp.MTUBytes)}, param{"pause_quantum_ps", uint64(pp.PauseQuantumPs)},
		param{"switch_id", uint64(pp.SwitchID)}, param{"lossless_priority", uint64(pp.LosslessPriority)})
}

// nextHop is one set_nexthop: out of port (P4 number) to the peer's MAC.
type nextHop struct {
	port           uint16
	srcMAC, dstMAC uint64
}

func (x *schemaIndex) nextHopParams(h nextHop) []param {
	return []param{{"port", uint64(h.port)}, {"src_mac", h.srcMAC}, {"dst_mac", h.dstMAC}}
}

// connEntry is the rdma_connection entry of a flow (spec 01, "The switch CNP"),
// as fastcnpd installs it from the sender's announcement: CNP target.
func (x *schemaIndex) connEntry(senderIP uint32, sport uint16, receiverQPN, senderQPN uint32, index uint16) (*pipeline.TableEntry, error) {
	return x.entry("rdma_connection", 0, []match{{name: "src_addr", value: uint64(senderIP)}, {name: "udp_sport", value: uint64(sport)},
		{name: "dest_qp", value: uint64(receiverQPN)}}, "set_connection",
		param{"sender_qpn", uint64(senderQPN)}, param{"flags", p4src.ConnFlagCNPTarget}, param{"conn_index", uint64(index)},
		param{"inc_group", 0}, param{"worker_rank", 0})
}
