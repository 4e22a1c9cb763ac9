package softswitch

import (
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/fastcnp/fastcnp/afpacket"
	"github.com/fastcnp/fastcnp/model/tm"
	"github.com/fastcnp/fastcnp/p4src"
)

// Input backpressure (docs/target.md, "Input backlog and PFC").
//
// Frames reach the traffic manager only when a port's RX goroutine has read them from
// the socket; until then they wait in the socket's receive queue, which the kernel
// drops from once it is full (afpacket.Backlog). The TM cannot see that queue, so the
// runtime watches it: after a read that filled its batch (more may be waiting) it
// measures the queue, and while the queue holds more than InputXoff of the receive
// buffer it holds the port (tm.SetInputHold): PFC XOFF for the lossless priorities out
// of that port, refreshed like the TM's own; once the queue is down to InputXon the
// hold ends with XON (for the priorities whose priority group is not in XOFF itself).

// Defaults of the input backpressure (fractions of a port's receive buffer).
const (
	// DefaultRecvBuffer is the receive buffer the switch asks for on each port
	// (SO_RCVBUFFORCE; the kernel accounts twice that): 32 MiB hold about 80 000
	// 64-byte or 29 000 1500-byte frames on veth, 0.1 to 0.2 s of input at the
	// switch's forwarding rate.
	DefaultRecvBuffer = 32 << 20
	// DefaultInputXoff: hold a port when its receive queue fills a quarter of the
	// buffer. The three quarters above absorb what the upstream sends until it obeys
	// the PAUSE (and reads the switch misses while it is descheduled).
	DefaultInputXoff = 0.25
	// DefaultInputXon: release it at an eighth, so that the switch still has frames to
	// forward while the upstream resumes.
	DefaultInputXon = 0.125
)

// BacklogReporter is a Link that reports its receive queue (afpacket.Port does). The
// switch's input backpressure and input-drop counters need it; links without it
// (in-memory test links) have neither.
type BacklogReporter interface {
	Backlog() (afpacket.Backlog, error)
}

// inputGate is the input-hold decision with hysteresis: hold when the receive queue
// fills xoff of the buffer or more, release when it is down to xon or less, keep the
// current state in between. It is pure.
type inputGate struct {
	xoff, xon float64 // fractions of the receive buffer; xoff <= 0: never hold
}

// decide returns whether the port is to be held, given whether it is now and the
// receive queue's fill (afpacket.Backlog.Fill).
func (g inputGate) decide(held bool, fill float64) bool {
	switch {
	case g.xoff <= 0:
		return false
	case fill >= g.xoff:
		return true
	case fill <= g.xon:
		return false
	}
	return held
}

// measure says whether the RX goroutine should measure its receive queue after a read
// (one system call). A read that filled its batch may have left frames behind; the
// first read that did not fill it, after one that did, tells the queue has drained
// (the measurement then also collects the drops of the burst); a held port measures
// after every read, until it is released. Otherwise the queue was empty when read
// and nothing is measured. It is pure.
func measure(full, lastFull, held bool) bool { return full || lastFull || held }

// inputState is the input side of one port: written under Switch.mu (the RX
// goroutine applies its measurements with the lock held), read by Dump.
type inputState struct {
	drops      uint64 // frames the kernel dropped at this port's socket (since Open)
	dropsSeen  uint64 // Backlog.Drops at the last measurement
	backlog    int64  // bytes queued at the last measurement
	backlogMax int64  // the most measured
	capacity   int64  // the receive buffer (kernel accounting)
	measured   uint64 // measurements by the RX goroutine
	holds      uint64 // holds started
	dropEvents uint64 // measurements that found new drops (log throttling)
	deferred   uint64 // lossless frames kept out of the TM for want of room (deferLossless)
	stalls     uint64 // times the RX goroutine stopped reading for that
}

// applyBacklog takes a measurement of p's receive queue at now (the RX goroutine's,
// after a read): noteBacklog, then the port's input hold is started or ended as the
// gate decides; a PFC frame that results is queued for unlock to write. It returns
// whether the port is held. Only p's RX goroutine calls it, so the hold follows its
// reads. Called with mu held.
func (s *Switch) applyBacklog(p *swPort, b afpacket.Backlog, now int64) bool {
	p.input.measured++
	s.noteBacklog(p, b)
	held := s.tm.InputHeld(p.tmIdx)
	hold := s.gate.decide(held, b.Fill())
	if hold == held {
		return held
	}
	ev, err := s.tm.SetInputHold(p.tmIdx, hold, now)
	if err != nil {
		s.log.WithError(err).Warn("input hold")
		return held
	}
	if hold {
		p.input.holds++
		s.ctr.InputHolds++
	}
	if ev.Kind != tm.PFCNone {
		s.sendPFC(&ev)
	}
	return hold
}

// noteBacklog records a measurement of p's receive queue: its level, and the frames
// the kernel dropped since the last one, counted in the runtime, the port and the P4
// counter dropped[port] (and logged at the 1st, 2nd, 4th... measurement that finds
// some). Called with mu held.
func (s *Switch) noteBacklog(p *swPort, b afpacket.Backlog) {
	in := &p.input
	in.backlog, in.capacity = b.Bytes, b.Capacity
	in.backlogMax = max(in.backlogMax, b.Bytes)
	if b.Drops <= in.dropsSeen {
		return
	}
	d := b.Drops - in.dropsSeen
	in.dropsSeen = b.Drops
	in.drops += d
	s.ctr.InputDrops += d
	s.countInputDrops(p.cfg.Num, d)
	in.dropEvents++
	if in.dropEvents&(in.dropEvents-1) == 0 {
		s.log.WithFields(logrus.Fields{"port": p.cfg.Num, "ifname": p.cfg.Ifname, "input_drops": in.drops,
			"rx_buffer": b.Capacity, "input_xoff": s.gate.xoff}).
			Warn("input drops: the receive queue overflowed before the switch read it (raise --rx-buffer, lower --rx-pfc-xoff, or the upstream ignores PAUSE)")
	}
}

// countInputDrops adds n frames to the P4 counter FastcnpIngress.input_dropped[port]:
// frames lost at the port's socket, which never reached the pipeline (their bytes
// are unknown: the kernel counts frames). Called with mu held.
func (s *Switch) countInputDrops(port uint16, n uint64) { s.pl.CountInputDrops(port, n) }

// deferLossless keeps a lossless frame read from port from out of the TM when the TM
// has no room for it (it would be a lossless drop: its priority group is past XOFF
// and its headroom is full) or when an earlier lossless frame of that port is already
// waiting: it goes to from.pending, in order, and the port's RX goroutine stops
// reading until they are all in (stall). The frames behind it wait in the receive
// queue, which the input hold turns into PFC, instead of being dropped: the TM's
// headroom covers the wire, not what the switch has not read yet. It reports whether
// the frame was kept. Config.NoLosslessDefer turns it off (the TM then drops, as an
// ASIC whose headroom is too small). Called with mu held.
func (s *Switch) deferLossless(f *frame, from *swPort, length, in, eg, prio int) bool {
	if s.cfg.NoLosslessDefer || s.lossless&(1<<prio) == 0 {
		return false
	}
	if len(from.pending) == 0 {
		if v, err := s.tm.Admits(length, in, eg, prio); err != nil || v != tm.DroppedLossless {
			return false
		}
		from.input.stalls++
	}
	from.pending = append(from.pending, f)
	from.input.deferred++
	s.ctr.InputDeferred++
	return true
}

// retryPending offers p's pending frames to the TM in order, as long as it has room
// for the first. Called with mu held.
func (s *Switch) retryPending(p *swPort, now int64) {
	k := 0
	for ; k < len(p.pending); k++ {
		f := p.pending[k]
		m := &f.meta
		in := s.p4ToTM[m.IngressPort&(p4src.NumPorts-1)]
		eg := s.p4ToTM[m.EgressPort&(p4src.NumPorts-1)]
		length := s.wireLength(f)
		if v, err := s.tm.Admits(length, int(in), int(eg), int(m.Priority&7)); err == nil && v == tm.DroppedLossless {
			break
		}
		s.enqueue(f, now, nil)
	}
	n := copy(p.pending, p.pending[k:])
	clear(p.pending[n:])
	p.pending = p.pending[:n]
}

// checkInputThresholds validates the input backpressure fractions (after defaults).
func checkInputThresholds(xoff, xon float64) error {
	if xoff <= 0 {
		return nil // disabled
	}
	if xoff > 1 || xon < 0 || xon >= xoff {
		return fmt.Errorf("%w: input backpressure: want 0 <= XON (%v) < XOFF (%v) <= 1 (fractions of the receive buffer)", ErrConfig, xon, xoff)
	}
	return nil
}
