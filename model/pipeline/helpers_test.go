package pipeline

import (
	"errors"
	"testing"

	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/p4src/window"
	"github.com/fastcnp/fastcnp/wire"
)

// Test topology: the sender S (10.0.0.1) behind port 1, the receiver R (10.0.1.2)
// behind port 2; port 2 is the congestion point (100 Gb/s, fastcnp).
var (
	ipS   = wire.Addr4{10, 0, 0, 1}
	ipR   = wire.Addr4{10, 0, 1, 2}
	macS  = wire.MAC{0x02, 0, 0, 0, 0, 0x01}
	macR  = wire.MAC{0x02, 0, 0, 0, 0, 0x02}
	macSw = wire.MAC{0x02, 0, 0, 0, 0, 0xEE}
)

const (
	portS      = 1
	portR      = 2
	sportSR    = 5000
	qpR        = 0x123 // receiver QPN: DestQP of data packets
	qpS        = 0x456 // sender QPN
	rate100G   = 12_500_000
	qth        = 100_000
	tcheck     = 8_000
	cnpGap     = 4_000
	bdp        = 100_000
	mtu        = 1024
	quantumPs  = 5_120
	switchID   = 7
	losslessPr = 3
)

func mustOK(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func route(t testing.TB, p *Pipeline, prefix uint32, plen int32, port uint16, src, dst wire.MAC) {
	t.Helper()
	mustOK(t, p.InsertEntry(&TableEntry{TableID: p4src.TableIPv4Route,
		Match:  []FieldMatch{{FieldID: 1, Value: uint64(prefix), PrefixLen: plen}},
		Action: Action{ID: p4src.ActionSetNexthop, Params: []Param{{1, uint64(port)}, {2, macU64(src)}, {3, macU64(dst)}}}}))
}

func macU64(m wire.MAC) uint64 {
	var v uint64
	for _, b := range m {
		v = v<<8 | uint64(b)
	}
	return v
}

type portCfg struct {
	mode             uint64
	kmin, kmax, pmax uint64
}

func portConfigEntry(port uint16, c portCfg) *TableEntry {
	bq, _ := window.BDPLog2Q6(bdp)
	vals := []uint64{rate100G, qth, tcheck, cnpGap, c.mode, c.kmin, c.kmax, c.pmax, 8000, bdp, uint64(bq), mtu, quantumPs, switchID, losslessPr}
	a := Action{ID: p4src.ActionSetPortConfig}
	for i, v := range vals {
		a.Params = append(a.Params, Param{uint32(i + 1), v})
	}
	return &TableEntry{TableID: p4src.TablePortConfig, Match: []FieldMatch{{FieldID: 1, Value: uint64(port)}}, Action: a}
}

func connEntry(src wire.Addr4, sport uint16, destQP, senderQPN uint32, flags, connIndex, group, rank uint64) *TableEntry {
	return &TableEntry{TableID: p4src.TableRDMAConnection,
		Match:  []FieldMatch{{FieldID: 1, Value: uint64(src.Uint32())}, {FieldID: 2, Value: uint64(sport)}, {FieldID: 3, Value: uint64(destQP)}},
		Action: Action{ID: p4src.ActionSetConnection, Params: []Param{{1, uint64(senderQPN)}, {2, flags}, {3, connIndex}, {4, group}, {5, rank}}}}
}

// newTest returns a pipeline with routes to S and R, DSCP 26 -> priority 3 lossless,
// port_config on ports 1 and 2 (mode as given), the S->R connection (CNP target),
// the window tables and clone session 100.
func newTest(t testing.TB, mode uint64) *Pipeline {
	t.Helper()
	return newTestProfile(t, mode, ProfileV1Model)
}

// newTestProfile is newTest for a pipeline modelling profile pr.
func newTestProfile(t testing.TB, mode uint64, pr Profile) *Pipeline {
	t.Helper()
	p := New(Options{Seed: 1, Profile: pr})
	route(t, p, ipR.Uint32()&0xFFFFFF00, 24, portR, macSw, macR)
	route(t, p, ipS.Uint32()&0xFFFFFF00, 24, portS, macSw, macS)
	mustOK(t, p.InsertEntry(&TableEntry{TableID: p4src.TableTrafficClass, Priority: 10,
		Match:  []FieldMatch{{FieldID: 1, Value: 0}, {FieldID: 3, Value: 26, Mask: 0x3F}},
		Action: Action{ID: p4src.ActionSetTrafficClass, Params: []Param{{1, 3}, {2, 1}}}}))
	for _, port := range []uint16{portS, portR} {
		mustOK(t, p.InsertEntry(portConfigEntry(port, portCfg{mode: mode, kmin: 5_000, kmax: 200_000, pmax: 655})))
	}
	mustOK(t, p.InsertEntry(connEntry(ipS, sportSR, qpR, qpS, p4src.ConnFlagCNPTarget, 0, 0, 0)))
	installWindowTables(t, p)
	mustOK(t, p.InsertCloneSession(CloneSession{SessionID: p4src.CNPCloneSession, EgressPort: portR}))
	return p
}

func installWindowTables(t testing.TB, p *Pipeline) {
	t.Helper()
	for _, e := range window.Log2Entries() {
		for _, tb := range []struct{ table, action uint32 }{{p4src.TableFlowBytesLog2, p4src.ActionSetFlowLog2}, {p4src.TablePortBytesLog2, p4src.ActionSetPortLog2}} {
			mustOK(t, p.InsertEntry(&TableEntry{TableID: tb.table,
				Match:  []FieldMatch{{FieldID: 1, Value: uint64(e.Value), PrefixLen: int32(e.PrefixLen)}},
				Action: Action{ID: tb.action, Params: []Param{{1, uint64(e.Log2Q6)}}}}))
		}
	}
	for _, e := range window.Exp2Entries() {
		mustOK(t, p.InsertEntry(&TableEntry{TableID: p4src.TableWindowExp2, Match: []FieldMatch{{FieldID: 1, Value: uint64(e.K)}},
			Action: Action{ID: p4src.ActionSetWindow, Params: []Param{{1, uint64(e.Window)}}}}))
	}
}

type pkt struct {
	src, dst   wire.Addr4
	sport      uint16
	destQP     uint32
	psn        uint32
	dscp       uint8
	ecn        wire.ECN
	payload    int
	ttl        uint8
	vlan       bool
	pcp        uint8
	incFlags   uint8
	ids        *wire.INCIDs
	vec        *wire.INCVector
	incVersion uint8
}

// dataSR is a RoCEv2 SEND from S to R, DSCP 26, ECT(0), with payload bytes.
func dataSR(payload int) pkt {
	return pkt{src: ipS, dst: ipR, sport: sportSR, destQP: qpR, dscp: 26, ecn: wire.ECT0, payload: payload}
}

func (k pkt) build(t testing.TB) []byte {
	t.Helper()
	b := make([]byte, 4096)
	env := &wire.Envelope{DstMAC: macSw, SrcMAC: macS, SrcIP: k.src, DstIP: k.dst, DSCP: k.dscp, ECN: k.ecn,
		TTL: k.ttl, SrcPort: k.sport, VLAN: k.vlan, PCP: k.pcp}
	bth := wire.BTH{Opcode: wire.OpRCSendOnly, PKey: wire.DefaultPKey, DestQP: k.destQP, PSN: k.psn}
	var n int
	var err error
	if k.vec != nil {
		v := k.incVersion
		if v == 0 {
			v = wire.INCVersion
		}
		n, err = wire.BuildINC(b, env, bth, wire.INC{Flags: k.incFlags, Version: v}, k.ids, k.vec)
	} else {
		n, err = wire.BuildRoCE(b, env, &bth, make([]byte, k.payload))
	}
	mustOK(t, err)
	return b[:n]
}

func ingress(t testing.TB, p *Pipeline, frame []byte, port uint16, now int64) IngressResult {
	t.Helper()
	var r IngressResult
	mustOK(t, p.Ingress(frame, port, now, &r))
	return r
}

// through runs a data frame through ingress and enqueue, and returns the forwarded
// frame (copied) and its meta.
func through(t testing.TB, p *Pipeline, frame []byte, port uint16, now int64) ([]byte, PacketMeta) {
	t.Helper()
	r := ingress(t, p, frame, port, now)
	if r.Verdict != VerdictForward {
		t.Fatalf("verdict %d reason %d, want forward", r.Verdict, r.DropReason)
	}
	p.OnEnqueue(&r.Meta)
	return append([]byte(nil), r.Frame...), r.Meta
}

func egress(t testing.TB, p *Pipeline, frame []byte, meta *PacketMeta, now int64) EgressResult {
	t.Helper()
	var r EgressResult
	mustOK(t, p.Egress(frame, meta.EgressPort, now, meta, &r))
	return r
}

func reg(t testing.TB, p *Pipeline, id uint32, index int) uint64 {
	t.Helper()
	v, err := p.ReadRegister(id, index, nil)
	mustOK(t, err)
	return v[0].Value
}

func ctr(t testing.TB, p *Pipeline, id uint32, index int) CounterValue {
	t.Helper()
	v, err := p.ReadCounter(id, index, nil)
	mustOK(t, err)
	return v[0]
}

func pfcFrame(t testing.TB, classEnable uint16, prio int, quanta uint16) []byte {
	t.Helper()
	b := make([]byte, 128)
	var q [8]uint16
	q[prio] = quanta
	n, err := wire.BuildPFC(b, macR, classEnable, q)
	mustOK(t, err)
	return b[:n]
}

func pauseFrame(t testing.TB, quanta uint16) []byte {
	t.Helper()
	b := make([]byte, 128)
	n, err := wire.BuildPause(b, macR, quanta)
	mustOK(t, err)
	return b[:n]
}

func isErr(err, target error) bool { return errors.Is(err, target) }
