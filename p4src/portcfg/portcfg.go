// Package portcfg computes the parameters of the P4 action set_port_config from a
// port's physical settings, in the units the data plane uses (bytes per ms, ns, q6
// log2, q16 probability, ps per pause quantum). The controller (controller/fabric)
// and fastcnp-sim program ports with it, so a simulated switch holds exactly the
// entries fastcnpd would install. Pure: no I/O.
package portcfg

import (
	"fmt"
	"math"
	"time"

	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/p4src/window"
)

// Settings are one port's settings (spec 01 and 02) in physical units.
type Settings struct {
	// Port is the P4 port number.
	Port uint16
	// SwitchID is the switch's device ID (it must fit in 16 bits: switch_id).
	SwitchID uint64
	// LinkRateBps is C, the egress link rate in bits/s (>= 8000).
	LinkRateBps uint64
	// QthBytes is the queue threshold Qth.
	QthBytes uint64
	// Tcheck is the re-check interval of an undetermined port.
	Tcheck time.Duration
	// CNPGap is the least time between two switch CNPs to one flow.
	CNPGap time.Duration
	// RTTBase is the fabric base RTT.
	RTTBase time.Duration
	// Mode is the port mode: p4src.PortModeOff, PortModeECN, PortModeFastcnp,
	// PortModeFastcnpNoPFCState or PortModeInt.
	Mode uint8
	// REDKminBytes, REDKmaxBytes and REDPmax are the RED curve (ecn mode, and the
	// fallback marking of fastcnp mode).
	REDKminBytes, REDKmaxBytes uint64
	REDPmax                    float64
	// MTUBytes is the largest packet: the window's floor.
	MTUBytes uint64
	// LosslessPriority is the PFC-protected priority (0..7).
	LosslessPriority uint8
}

// Params are the set_port_config action parameters of one port.
type Params struct {
	Port             uint16
	RateBytesPerMs   uint32
	QthBytes         uint32
	TcheckNs         uint32
	CNPGapNs         uint32
	Mode             uint8
	REDKminBytes     uint32
	REDKmaxBytes     uint32
	REDPmaxQ16       uint16
	RTTBaseNs        uint32
	BDPBytes         uint32
	BDPLog2Q6        uint16
	MTUBytes         uint16
	PauseQuantumPs   uint32
	SwitchID         uint16
	LosslessPriority uint8
}

// PmaxQ16 is Pmax * 65536 rounded, with 1.0 written as 65535.
func PmaxQ16(p float64) uint16 {
	v := math.Round(p * 65536)
	if v >= 65535 {
		return 65535
	}
	if v < 0 {
		return 0
	}
	return uint16(v)
}

func fit32(what string, v uint64) (uint32, error) {
	if v > math.MaxUint32 {
		return 0, fmt.Errorf("%s %d exceeds 32 bits", what, v)
	}
	return uint32(v), nil
}

// NS32 converts a duration to the data plane's bit<32> nanoseconds; what names the
// value in the error (negative, or beyond 32 bits).
func NS32(what string, d time.Duration) (uint32, error) {
	if d < 0 {
		return 0, fmt.Errorf("%s %v is negative", what, d)
	}
	return fit32(what+" (ns)", uint64(d.Nanoseconds()))
}

// Compute derives the set_port_config parameters of a port: the rate in bytes per
// ms, the BDP C*RTTbase and its q6 log2, the pause quantum (512 bit times in ps) and
// Pmax in q16. Errors name the field that does not fit its P4 width.
func Compute(s Settings) (Params, error) {
	out := Params{Port: s.Port, LosslessPriority: s.LosslessPriority, Mode: s.Mode}
	if s.SwitchID > math.MaxUint16 {
		return out, fmt.Errorf("device_id %d does not fit switch_id (16 bits)", s.SwitchID)
	}
	out.SwitchID = uint16(s.SwitchID)
	if s.Mode > p4src.PortModeInt {
		return out, fmt.Errorf("port %d: mode %d is not a port mode", s.Port, s.Mode)
	}
	if s.LosslessPriority > 7 {
		return out, fmt.Errorf("port %d: lossless priority %d outside 0..7", s.Port, s.LosslessPriority)
	}
	var err error
	if s.LinkRateBps < 8000 {
		return out, fmt.Errorf("port %d: link rate %d b/s below 8000 b/s", s.Port, s.LinkRateBps)
	}
	if out.RateBytesPerMs, err = fit32("rate_bytes_per_ms", s.LinkRateBps/8000); err != nil {
		return out, fmt.Errorf("port %d: %w", s.Port, err)
	}
	if out.QthBytes, err = fit32("qth", s.QthBytes); err != nil {
		return out, fmt.Errorf("port %d: %w", s.Port, err)
	}
	if out.TcheckNs, err = NS32("tcheck", s.Tcheck); err != nil {
		return out, fmt.Errorf("port %d: %w", s.Port, err)
	}
	if out.CNPGapNs, err = NS32("cnp_gap", s.CNPGap); err != nil {
		return out, fmt.Errorf("port %d: %w", s.Port, err)
	}
	if out.RTTBaseNs, err = NS32("rtt_base", s.RTTBase); err != nil {
		return out, fmt.Errorf("port %d: %w", s.Port, err)
	}
	if out.REDKminBytes, err = fit32("red.kmin", s.REDKminBytes); err != nil {
		return out, fmt.Errorf("port %d: %w", s.Port, err)
	}
	if out.REDKmaxBytes, err = fit32("red.kmax", s.REDKmaxBytes); err != nil {
		return out, fmt.Errorf("port %d: %w", s.Port, err)
	}
	out.REDPmaxQ16 = PmaxQ16(s.REDPmax)
	if s.MTUBytes > math.MaxUint16 {
		return out, fmt.Errorf("port %d: mtu %d exceeds 16 bits", s.Port, s.MTUBytes)
	}
	out.MTUBytes = uint16(s.MTUBytes)
	bdp := window.BDPBytes(out.RateBytesPerMs, out.RTTBaseNs)
	if bdp == 0 {
		bdp = 1
	}
	if out.BDPBytes, err = fit32("bdp_bytes", bdp); err != nil {
		return out, fmt.Errorf("port %d: %w", s.Port, err)
	}
	if out.BDPLog2Q6, err = window.BDPLog2Q6(bdp); err != nil {
		return out, fmt.Errorf("port %d: %w", s.Port, err)
	}
	// 512 bit times at the rate, in ps: 512e12 / rate, rounded.
	q := (512e12 + s.LinkRateBps/2) / s.LinkRateBps
	if out.PauseQuantumPs, err = fit32("pause_quantum_ps", q); err != nil {
		return out, fmt.Errorf("port %d: %w", s.Port, err)
	}
	return out, nil
}
