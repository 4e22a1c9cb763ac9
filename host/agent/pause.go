package agent

import (
	"fmt"
	"math"
	"time"

	"github.com/fastcnp/fastcnp/wire"
)

// Priorities of the frames the agent sends, as the switch classifies them
// (spec 05, the common RoCE set-up; controller/config's default DSCP map
// gives DSCP 26 -> priority 3, the lossless class, and DSCP 48 -> 6).
const (
	// DataPriority carries data packets and RC ACKs/NAKs (DSCP 26).
	DataPriority uint8 = 3
	// CNPPriority carries CNPs and announcements (DSCP 48).
	CNPPriority uint8 = 6
)

// PriorityOfDSCP returns the priority a frame with DSCP dscp travels in
// (the switch's default map): DataDSCP -> DataPriority, CNPDSCP ->
// CNPPriority, anything else 0 (best effort).
func PriorityOfDSCP(dscp uint8) uint8 {
	switch dscp {
	case DataDSCP:
		return DataPriority
	case CNPDSCP:
		return CNPPriority
	}
	return 0
}

// Priority returns the priority of a frame sent on this path with DSCP
// dscp: the 802.1Q PCP when the path is tagged, else PriorityOfDSCP.
func (p *Path) Priority(dscp uint8) uint8 {
	if p.VLAN {
		return p.PCP
	}
	return PriorityOfDSCP(dscp)
}

// PauseStats are the counters of a PauseGate.
type PauseStats struct {
	// PFCFrames and PauseFrames count the 802.1Qbb PFC and 802.3x PAUSE
	// frames received (any quanta).
	PFCFrames   uint64 `json:"pfc_frames"`
	PauseFrames uint64 `json:"pause_frames"`
	// XOFF and XON count, per priority, the PFC frames that paused
	// (quanta > 0, refreshes included) or resumed (quanta 0) it.
	XOFF [8]uint64 `json:"xoff"`
	XON  [8]uint64 `json:"xon"`
	// XONIdle counts, per priority, the XONs that found it not paused: a
	// pause that had expired, or PFC frames delivered in another order than
	// the peer made them (an XON overtaken by the XOFF before it).
	XONIdle [8]uint64 `json:"xon_idle"`
	// PausedNs is, per priority, the time it was paused by PFC (the
	// episode in progress counted up to the time asked).
	PausedNs [8]int64 `json:"paused_ns"`
	// LinkPausedNs is the time the whole link was paused by 802.3x PAUSE.
	LinkPausedNs int64 `json:"link_paused_ns"`
}

// pauseState is one paused class (a priority, or the whole link).
type pauseState struct {
	paused      bool
	from, until time.Duration
	total       time.Duration
}

func (s *pauseState) settle(now time.Duration) {
	if s.paused && s.until <= now {
		s.paused = false
		s.total += s.until - s.from
	}
}

// apply starts, refreshes (the new time replaces what remained) or, with
// d == 0, ends a pause at now.
func (s *pauseState) apply(now, d time.Duration) {
	s.settle(now)
	switch {
	case d == 0:
		if s.paused {
			s.until = now
			s.settle(now)
		}
	case s.paused:
		s.until = now + d
	default:
		s.paused, s.from, s.until = true, now, now+d
	}
}

func (s *pauseState) held(now time.Duration) time.Duration {
	if s.paused && s.until > now {
		return s.total + now - s.from
	}
	if s.paused { // expired, not settled yet
		return s.total + s.until - s.from
	}
	return s.total
}

// PauseGate is a NIC's receive side of 802.1Qbb PFC and 802.3x PAUSE: a
// PAUSE for priority p stops the frames of p for quanta x 512 bit times
// at the link rate from its arrival; a new PAUSE replaces the time left
// (refresh), quanta 0 (XON) resumes at once. An 802.3x PAUSE holds every
// priority and is tracked apart (an XON of one kind does not lift the
// other). The pause time comes from wire.PauseNs, the same formula
// the switch's traffic manager applies. Pure: time is an argument; times
// earlier than the latest call count as the latest call. Not safe for
// concurrent use.
type PauseGate struct {
	rate  int64 // bits/s
	prio  [8]pauseState
	link  pauseState
	last  time.Duration
	stats PauseStats
}

// NewPauseGate returns a gate for a link of rateBps bits per second.
func NewPauseGate(rateBps float64) (*PauseGate, error) {
	if !(rateBps >= 1) || math.IsInf(rateBps, 1) || rateBps > math.MaxInt64/2 {
		return nil, fmt.Errorf("pause gate: link rate %v b/s must be finite and >= 1: %w", rateBps, ErrConfig)
	}
	return &PauseGate{rate: int64(rateBps)}, nil
}

func (g *PauseGate) clock(now time.Duration) time.Duration {
	g.last = max(g.last, now)
	return g.last
}

// PauseDuration returns how long quanta pause this gate's link.
func (g *PauseGate) PauseDuration(quanta uint16) time.Duration {
	return time.Duration(wire.PauseNs(quanta, g.rate))
}

// OnPFC applies a PFC frame received at now: every priority whose bit is
// set in classEnable is paused for quanta[p] (0: resumed). Bits 8..15 are
// reserved and ignored.
func (g *PauseGate) OnPFC(now time.Duration, classEnable uint16, quanta [8]uint16) {
	now = g.clock(now)
	g.stats.PFCFrames++
	for p := range g.prio {
		if classEnable&(1<<p) == 0 {
			continue
		}
		if quanta[p] == 0 {
			g.stats.XON[p]++
			if s := &g.prio[p]; !s.paused || s.until <= now {
				g.stats.XONIdle[p]++
			}
		} else {
			g.stats.XOFF[p]++
		}
		g.prio[p].apply(now, g.PauseDuration(quanta[p]))
	}
}

// OnPause applies an 802.3x PAUSE received at now (quanta 0 resumes).
func (g *PauseGate) OnPause(now time.Duration, quanta uint16) {
	now = g.clock(now)
	g.stats.PauseFrames++
	g.link.apply(now, g.PauseDuration(quanta))
}

// OnFrame applies f if it is a parsed PFC or PAUSE frame and reports
// whether it was one.
func (g *PauseGate) OnFrame(now time.Duration, f *wire.Frame) bool {
	switch {
	case f.Has(wire.LayerPFC):
		g.OnPFC(now, f.PFC.ClassEnable, f.PFC.Time)
	case f.Has(wire.LayerPause):
		g.OnPause(now, f.Pause.Time)
	default:
		return false
	}
	return true
}

// Until returns when priority prio may send again: a time after now while
// it is paused (by PFC or by an 802.3x PAUSE), now otherwise. A priority
// above 7 is never paused.
func (g *PauseGate) Until(prio uint8, now time.Duration) time.Duration {
	now = g.clock(now)
	u := now
	if prio < 8 {
		if s := &g.prio[prio]; s.paused && s.until > u {
			u = s.until
		}
	}
	if g.link.paused && g.link.until > u {
		u = g.link.until
	}
	return u
}

// Paused reports whether priority prio is held at now.
func (g *PauseGate) Paused(prio uint8, now time.Duration) bool {
	return g.Until(prio, now) > g.clock(now)
}

// Stats returns the counters, paused times counted up to now.
func (g *PauseGate) Stats(now time.Duration) PauseStats {
	now = g.clock(now)
	s := g.stats
	for p := range g.prio {
		g.prio[p].settle(now)
		s.PausedNs[p] = int64(g.prio[p].held(now))
	}
	g.link.settle(now)
	s.LinkPausedNs = int64(g.link.held(now))
	return s
}
