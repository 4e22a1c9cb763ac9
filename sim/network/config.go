// Package network is fastcnp-sim's network model: switches that are the project's
// own data plane (model/pipeline: real frames through the P4 tables, registers,
// switch CNPs, RED/ECN, the PFC-aware port state) in front of its lossless traffic
// manager (model/tm: queues, shared buffer, PFC XOFF/XON with headroom), hosts whose
// NICs run the host agent's transport state machines (host/agent: pacing, windows,
// ACKs, NAKs and go-back-N, the DCQCN notification point, PFC at the NIC) driven by
// the host congestion-control algorithms (host/cc), and links with a rate, a
// propagation delay and serialisation, all in the virtual time of sim/engine.
//
// The switches are programmed the way fastcnpd programs them (port_config from
// p4src/portcfg, traffic classes, routes and ECMP groups on the action selector,
// the window tables of p4src/window, the clone session, and one rdma_connection
// entry per flow on every switch, as if the flow's sender had announced it).
//
// A run is deterministic: the same Config gives the same events in the same order
// and byte-identical outputs.
package network

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/model/tm"
	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/sim/hpcc"
	"github.com/fastcnp/fastcnp/wire"
)

// ErrConfig reports a configuration the model cannot run.
var ErrConfig = errors.New("network: bad configuration")

// Mode is the congestion-control scheme of a run: the switch port mode and the
// hosts' algorithm together.
type Mode string

// Modes.
const (
	// ModeDCQCN: classic DCQCN; switch ports in ecn mode (RED marking), receivers'
	// NP makes CNPs, senders run "dcqcn".
	ModeDCQCN Mode = "dcqcn"
	// ModeFastCNP: switch ports in fastcnp mode (switch CNPs with the window, the
	// PFC-aware port state), senders run "dcqcn-fastcnp".
	ModeFastCNP Mode = "fastcnp"
	// ModeFastCNPNoPFCState: the ablation, port mode 3 (no undetermined state).
	ModeFastCNPNoPFCState Mode = "fastcnp-no-pfc-state"
)

// Modes of the other host/cc algorithms: every sender runs the algorithm, with
// its switch support (docs/simulator.md "Modes").
const (
	// ModeTIMELY: RTT samples only; switch ports do not mark (mode off).
	ModeTIMELY Mode = "timely"
	// ModeDCTCP: ports mark at K (RED with Kmin = Kmax = K, Pmax 1), receivers echo
	// CE in their ACKs (no CNPs).
	ModeDCTCP Mode = "dctcp"
	// ModeHPCC: ports in mode int append an INT record to every data packet,
	// receivers echo the records in their ACKs.
	ModeHPCC Mode = "hpcc"
	// ModeLSTMPID and its variants: seed 002's LSTM+PID family, RTT samples only,
	// from 10 Gb/s (seed 002 4.4.1), parameter set "trained".
	ModeLSTMPID         Mode = "lstm-pid"
	ModeLSTMPIDRTTch    Mode = "lstm-pid-rttch"
	ModeLSTMPIDRTTchWin Mode = "lstm-pid-rttch-win"
)

// Modes lists the three modes of the fastcnp comparison (switch feedback for
// DCQCN senders): dcqcn, fastcnp and the ablation.
func Modes() []Mode { return []Mode{ModeDCQCN, ModeFastCNP, ModeFastCNPNoPFCState} }

// AllModes lists every mode Run accepts: Modes and those of the other algorithms.
func AllModes() []Mode {
	return append(Modes(), ModeTIMELY, ModeDCTCP, ModeHPCC, ModeLSTMPID, ModeLSTMPIDRTTch, ModeLSTMPIDRTTchWin)
}

// modeSpec is what a mode sets: the switch ports' mode, the senders' algorithm
// and its parameter set ("" for the DCQCN sets of Config), the start rate (0:
// line rate), and the receivers' NP.
type modeSpec struct {
	port      uint8
	algorithm string
	set       string
	startBps  float64
	np        bool
}

// announces reports whether the mode's switches make switch CNPs, so that
// senders announce their connections (the fastcnp port modes).
func (m Mode) announces() bool {
	s, _ := m.spec()
	return s.port == p4src.PortModeFastcnp || s.port == p4src.PortModeFastcnpNoPFCState
}

// needsINT reports whether the run's senders put an INT header on their data
// (HPCC, by mode or by Config.Algorithm): the switches then run port mode int.
func (c *Config) needsINT() bool {
	s, _ := c.Mode.spec()
	return cc.NeedsINT(s.algorithm) || cc.NeedsINT(c.Algorithm)
}

func (m Mode) spec() (modeSpec, bool) {
	switch m {
	case ModeDCQCN:
		return modeSpec{port: p4src.PortModeECN, algorithm: "dcqcn", np: true}, true
	case ModeFastCNP:
		return modeSpec{port: p4src.PortModeFastcnp, algorithm: "dcqcn-fastcnp", np: true}, true
	case ModeFastCNPNoPFCState:
		return modeSpec{port: p4src.PortModeFastcnpNoPFCState, algorithm: "dcqcn-fastcnp", np: true}, true
	case ModeTIMELY:
		return modeSpec{port: p4src.PortModeOff, algorithm: "timely", set: "hpcc-sim"}, true
	case ModeDCTCP:
		return modeSpec{port: p4src.PortModeECN, algorithm: "dctcp", set: "hpcc-sim"}, true
	case ModeHPCC:
		return modeSpec{port: p4src.PortModeInt, algorithm: "hpcc", set: "hpcc-sim"}, true
	case ModeLSTMPID, ModeLSTMPIDRTTch, ModeLSTMPIDRTTchWin:
		return modeSpec{port: p4src.PortModeOff, algorithm: string(m), set: "trained", startBps: 10e9}, true
	}
	return modeSpec{}, false
}

// SwitchParams are the switch settings of a run. Per-port thresholds are given for a
// 100 Gb/s port and scale with the port's rate (as spec 01 and the HPCC simulator's
// rate maps do).
type SwitchParams struct {
	// BufferBytes is each switch's packet buffer (HPCC: 32 MB).
	BufferBytes int64
	// PFC turns PFC on for the lossless priority (off: the class is lossy and
	// drops, the hosts go back N).
	PFC bool
	// Alpha is the dynamic XOFF threshold factor (0: tm.DefaultAlpha, 1/8); StaticXoff
	// > 0 uses a static XOFF of that many bytes instead.
	Alpha      float64
	StaticXoff int64
	// HeadroomHPCC sizes headroom as the HPCC simulator does (3*delay*rate);
	// false: the round-trip formula of model/tm.
	HeadroomHPCC bool
	// AlphaByRate gives each ingress port the HPCC simulator's dynamic XOFF factor
	// (third.cc's pfc_a_shift): 1/8 at the hosts' link rate, doubled for every
	// doubling of the port's rate above it, at most 1 (400G fabric ports under 100G
	// hosts: 1/2). It replaces Alpha; false: Alpha on every port.
	AlphaByRate bool
	// QthBytes100G is Qth at 100 Gb/s (spec 01: 100 KB).
	QthBytes100G int64
	// DCTCPKBytes100G is DCTCP's marking threshold K at 100 Gb/s (spec 03: 300 KB,
	// the HPCC simulator's), used in mode dctcp unless REDByRate gives thresholds.
	DCTCPKBytes100G int64
	// RED at 100 Gb/s: Kmin, Kmax (bytes), Pmax.
	KminBytes100G, KmaxBytes100G int64
	Pmax                         float64
	// REDByRate, if not nil, gives RED per link rate (b/s) instead, as the HPCC
	// simulator's KMIN_MAP, KMAX_MAP and PMAX_MAP do; every port's rate must be in
	// it.
	REDByRate map[int64]RED
	// Tcheck, CNPGap and RTTBase of spec 01 (RTTBase 0: the topology's largest base
	// RTT between two hosts; Tcheck 0: RTTBase).
	Tcheck, CNPGap, RTTBase time.Duration
}

// RED is one RED curve: marking starts above Kmin and is certain at Kmax.
type RED struct {
	KminBytes, KmaxBytes int64
	Pmax                 float64
}

// DefaultSwitchParams are spec 01's defaults and the HPCC simulator's buffer and RED
// at 100 Gb/s.
func DefaultSwitchParams() SwitchParams {
	return SwitchParams{
		BufferBytes: 32 << 20, PFC: true, QthBytes100G: 100_000, DCTCPKBytes100G: 300_000,
		KminBytes100G: 400_000, KmaxBytes100G: 1_600_000, Pmax: 0.2,
		CNPGap: 4 * time.Microsecond,
	}
}

// Config is one run.
type Config struct {
	// Topo and Flows are the HPCC simulator's inputs (sim/hpcc): a node's ports are
	// its links in file order, port k (0-based) being P4 port and ifindex k+1.
	// Links must have no error rate (losses other than drops are not modelled).
	Topo  *hpcc.Topology
	Flows []hpcc.Flow
	Mode  Mode
	// DCQCNSet names the DCQCN parameter set (host/cc: "hpcc-sim", "paper2015",
	// "nvidia-cx"); CNPInterval, if >= 0, overrides its NP cnpInterval. DCQCN, if
	// its Set is not empty, replaces the named set (parameters from a file).
	DCQCNSet    string
	CNPInterval time.Duration
	DCQCN       cc.DCQCNParams
	// WindowRule is the fastcnp senders' window rule (cc.Config.WindowRule; ""
	// is host/cc's default, aimd).
	WindowRule cc.WindowRule
	// PayloadBytes is the payload of a full data packet (HPCC: 1000).
	PayloadBytes int
	// AckEvery: the sender requests an ACK every AckEvery packets (and on a
	// message's last one, and when its window fills).
	AckEvery int
	// Legacy, if not nil, marks flows (by index) whose sender is a commodity RoCE
	// NIC in the fastcnp modes: it announces no connection (the switches have no
	// rdma_connection entry, so they CE-mark its packets instead of sending it
	// switch CNPs, and its receiver's NP answers) and runs plain "dcqcn".
	Legacy []bool
	Switch SwitchParams
	// Seed seeds the switches' RED random numbers.
	Seed uint64
	// UntilNs stops the run at this time if flows are still running (0: no limit);
	// the run always ends when every flow has finished.
	UntilNs int64
	// Queue is the engine's event queue ("" = the default).
	Queue string
	// RTTSamples records the spec 03 RTT samples of every flow.
	RTTSamples bool
	// QueueSampleNs > 0 samples every switch egress queue at this period.
	QueueSampleNs int64
	// RateSampleNs > 0 records every flow's delivered payload at this period.
	RateSampleNs int64
	// Algorithm, if set, is the senders' host/cc algorithm in place of the mode's
	// DCQCN variant (the switches keep the mode's setting; see AlgorithmModelled):
	// the RTT samples of ACKs drive timely, pid and lstm-pid*; the ECN echo of
	// ACKs drives dctcp (its marking threshold K is the switches' RED, Switch);
	// the INT records ACKs echo drive hpcc, whose senders put an INT header on
	// their data and whose switches run port mode int (Mode must be dcqcn). Tune,
	// if set, adjusts every sender's cc.Config after the model filled it (line
	// rate, MTU, base RTT, DCQCN): parameter sets, the start rate, a shared
	// cc.PIDLearner (called on the simulation's goroutine).
	Algorithm string
	Tune      func(*cc.Config)
	// INC, if not nil, adds INC workers, their switches' INC tables and link
	// failures (inc.go).
	INC *INCConfig
}

// AlgorithmModelled reports whether the model can run host/cc algorithm name as
// Config.Algorithm: every registered one. The model's ACKs give what the host
// agent's give: RTT samples, the ECN echo and echoed INT records.
func AlgorithmModelled(name string) bool { return slices.Contains(cc.Names(), name) }

// maxINTPayload is the largest payload of a packet that can gather
// wire.INTMaxHops records in a slot.
const maxINTPayload = maxPayload - wire.INTHeaderLen - wire.INTMaxHops*wire.INTHopLen

// Constants of the frames the hosts send.
const (
	// dataDSCP and cnpDSCP are the agent's classes (DSCP 26 -> priority 3 lossless,
	// DSCP 48 -> 6), which the switches' traffic_class maps as fastcnpd does.
	losslessPriority = 3
	cnpPriority      = 6
	// wireExtra is what a frame costs on a link beyond its bytes: FCS (4) plus
	// preamble, SFD and inter-frame gap (20), as the switch's shaper counts it.
	fcsBytes   = 4
	minFrame   = 60
	slotBytes  = 2048 + 64 // with the slot's 128-byte head 35 cache lines: headers of consecutive slots fall in different cache sets
	maxPayload = slotBytes - 128
)

// frameWireLen is the length the TM accounts and serialises for a frame of n
// bytes (without FCS): at least the Ethernet minimum, plus the FCS.
func frameWireLen(n int) int { return max(n, minFrame) + fcsBytes }

func (c *Config) validate() error {
	bad := func(f string, a ...any) error { return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(f, a...)) }
	if c.Topo == nil {
		return bad("no topology")
	}
	if _, ok := c.Mode.spec(); !ok {
		return bad("mode %q (known: %v)", c.Mode, AllModes())
	}
	if c.Algorithm != "" && !AlgorithmModelled(c.Algorithm) {
		return bad("algorithm %q: not modelled (known: %v)", c.Algorithm, cc.Names())
	}
	if cc.NeedsINT(c.Algorithm) && c.Mode != ModeDCQCN && c.Mode != ModeHPCC {
		return bad("algorithm %q needs INT switches (port mode int): run it in mode dcqcn or hpcc, not %q", c.Algorithm, c.Mode)
	}
	if c.needsINT() {
		if c.PayloadBytes > maxINTPayload {
			return bad("payload %d bytes: with INT records at most %d", c.PayloadBytes, maxINTPayload)
		}
	}
	if c.PayloadBytes < 1 || c.PayloadBytes > maxPayload {
		return bad("payload %d bytes outside 1..%d", c.PayloadBytes, maxPayload)
	}
	if c.AckEvery < 1 {
		return bad("ack-every %d < 1", c.AckEvery)
	}
	if c.DCQCN.Set != "" {
		if err := c.DCQCN.Validate(); err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
	} else if _, err := cc.DCQCNPreset(c.DCQCNSet); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	t := c.Topo
	if err := t.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	sw := t.SwitchMask()
	for i, l := range t.Links {
		switch {
		case l.RateBps < float64(tm.MinRateBps) || l.RateBps > float64(tm.MaxRateBps) || l.RateBps != math.Trunc(l.RateBps):
			return bad("link %d (%d-%d): rate %v b/s, want whole b/s in %d..%d", i, l.A, l.B, l.RateBps, tm.MinRateBps, tm.MaxRateBps)
		case l.DelayNs < 0 || l.DelayNs > 1e9:
			return bad("link %d (%d-%d): delay %d ns outside 0..1s", i, l.A, l.B, l.DelayNs)
		case l.ErrorRate != 0:
			return bad("link %d (%d-%d): error rate %v: random losses are not modelled", i, l.A, l.B, l.ErrorRate)
		}
	}
	for i, f := range c.Flows {
		switch {
		case f.Src < 0 || f.Src >= t.Nodes || f.Dst < 0 || f.Dst >= t.Nodes || sw[f.Src] || sw[f.Dst]:
			return bad("flow %d: %d -> %d is not host to host", i, f.Src, f.Dst)
		case f.Src == f.Dst:
			return bad("flow %d: source and destination are both %d", i, f.Src)
		case f.Size <= 0 || f.Size > cc.MaxEventBytes:
			return bad("flow %d: size %d", i, f.Size)
		case f.StartNs < 0:
			return bad("flow %d: start %d ns", i, f.StartNs)
		case f.PG != losslessPriority:
			return bad("flow %d: priority group %d (the model carries data in the lossless class, 3)", i, f.PG)
		}
	}
	if c.INC != nil {
		if err := c.INC.validate(c); err != nil {
			return err
		}
	}
	if c.Legacy != nil && len(c.Legacy) != len(c.Flows) {
		return bad("%d legacy flags for %d flows", len(c.Legacy), len(c.Flows))
	}
	if len(c.Flows) >= 1<<24-1 {
		return bad("%d flows: QP numbers are 24 bits", len(c.Flows))
	}
	s := c.Switch
	for rate, r := range s.REDByRate {
		if r.KminBytes < 0 || r.KmaxBytes < r.KminBytes || !(r.Pmax > 0 && r.Pmax <= 1) {
			return bad("RED at %d b/s: %+v", rate, r)
		}
	}
	for i, l := range t.Links {
		if _, ok := s.REDByRate[int64(l.RateBps)]; s.REDByRate != nil && !ok {
			return bad("link %d (%d-%d): no RED thresholds for %v b/s", i, l.A, l.B, l.RateBps)
		}
	}
	if s.BufferBytes <= 0 || s.QthBytes100G <= 0 || s.KminBytes100G < 0 || s.KmaxBytes100G < s.KminBytes100G || !(s.Pmax > 0 && s.Pmax <= 1) {
		return bad("switch params %+v", s)
	}
	return nil
}
