package softswitch

import (
	"context"
	"errors"
	"runtime"
	"time"
	"unsafe"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/fastcnp/fastcnp/afpacket"
	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/model/tm"
	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/softswitch/p4rtserver"
	"github.com/fastcnp/fastcnp/wire"
)

// Counters are the runtime's own counters (the TM and the pipeline have theirs).
type Counters struct {
	RxFrames           uint64 `json:"rx_frames"`             // frames read from all ports
	PFCRx              uint64 `json:"pfc_rx"`                // PFC frames received (applied to the TM)
	PauseRx            uint64 `json:"pause_rx"`              // 802.3x PAUSE frames received
	IngressDropped     uint64 `json:"ingress_dropped"`       // pipeline verdict drop (incl. consumed PFC / INC)
	ToCPU              uint64 `json:"to_cpu"`                // packet-ins queued for the server
	PacketInDrops      uint64 `json:"packet_in_drops"`       // packet-ins dropped: channel full
	PacketOuts         uint64 `json:"packet_outs"`           // packet-outs from the server
	Enqueued           uint64 `json:"enqueued"`              // frames accepted by the TM
	TMDropped          uint64 `json:"tm_dropped"`            // frames refused by the TM (all classes)
	LosslessDrops      uint64 `json:"lossless_drops"`        // of which lossless (must stay 0)
	TMErrors           uint64 `json:"tm_errors"`             // TM calls that failed (bad length...)
	UnknownEgress      uint64 `json:"unknown_egress"`        // forwarded to a port the switch does not have
	MulticastCopies    uint64 `json:"multicast_copies"`      // copies made for multicast groups (L2 floods), each then enqueued
	ClassMismatch      uint64 `json:"class_mismatch"`        // pipeline lossless flag != TM lossless mask
	Dequeued           uint64 `json:"dequeued"`              // departures
	INTRecords         uint64 `json:"int_records"`           // INT hop records added (ports in mode int)
	INTTooLarge        uint64 `json:"int_too_large"`         // INT records dropped for want of frame buffer room
	ECNMarked          uint64 `json:"ecn_marked"`            // departures CE-marked by egress
	SwitchCNPs         uint64 `json:"switch_cnps"`           // switch CNPs made by egress and enqueued
	EgressErrors       uint64 `json:"egress_errors"`         // pipeline.Egress errors
	PFCTxXoff          uint64 `json:"pfc_tx_xoff"`           // PFC XOFF frames built
	PFCTxXon           uint64 `json:"pfc_tx_xon"`            // PFC XON frames built
	PFCTxRefresh       uint64 `json:"pfc_tx_refresh"`        // PFC refresh frames built
	InputDrops         uint64 `json:"input_drops"`           // frames the kernel dropped at the ports' full receive queues (never read)
	InputHolds         uint64 `json:"input_holds"`           // input holds started: a receive queue above --rx-pfc-xoff (PFC XOFF out of that port)
	InputDeferred      uint64 `json:"input_deferred"`        // lossless frames kept out of the TM for want of room, until it had some (their port stopped reading meanwhile)
	SchedulerWakeups   uint64 `json:"scheduler_wakeups"`     // scheduler loop passes
	LateDepartureMaxNs int64  `json:"late_departure_max_ns"` // worst lag of a departure behind its shaped time
}

// hooks connects the TM to the pipeline. It runs with Switch.mu held.
type hooks struct{ s *Switch }

// OnEnqueue is step 10 of the pipeline (enqueue accounting).
func (h hooks) OnEnqueue(e *tm.EnqueueInfo[*frame]) { h.s.pl.OnEnqueue(&e.Handle.meta) }

// OnDequeue runs the egress pipeline: ECN mark in place, maybe a switch CNP, which is
// kept and enqueued after Dequeue returns (hooks must not re-enter the TM).
func (h hooks) OnDequeue(d *tm.DequeueInfo[*frame]) {
	s, f := h.s, d.Handle
	p := s.byTM[d.Port]
	if p == nil {
		return
	}
	r := &s.egRes
	if err := s.pl.Egress(f.data, p.cfg.Num, d.Now, &f.meta, r); err != nil {
		s.ctr.EgressErrors++
		s.log.WithError(err).WithField("port", p.cfg.Num).Debug("egress failed")
		return
	}
	d.Mark = r.Marked
	if r.Marked {
		s.ctr.ECNMarked++
	}
	if len(r.Frame) != len(f.data) { // an INT record in the pipeline's buffer
		if len(r.Frame) <= len(f.buf) {
			f.data = f.buf[:copy(f.buf, r.Frame)]
			s.ctr.INTRecords++
		} else {
			s.ctr.INTTooLarge++ // no room: the frame leaves without the record
		}
	}
	if r.CNP {
		c := s.getFrame()
		c.data = c.buf[:copy(c.buf, r.CNPFrame)]
		c.meta = r.CNPMeta
		s.pendingCNP = append(s.pendingCNP, c)
	}
}

// OnEgressPause: the pipeline parses PFC frames itself (ingress step 4).
func (hooks) OnEgressPause(int, int, bool, int64) {}

// rxLoop reads batches from one port and runs them through the data path.
func (s *Switch) rxLoop(ctx context.Context, p *swPort) error {
	msgs := make([]afpacket.Message, s.rxBatch)
	for i := range msgs {
		msgs[i].Buf = make([]byte, s.maxFrame)
	}
	log := s.log.WithFields(logrus.Fields{"port": p.cfg.Num, "ifname": p.cfg.Ifname})
	var urgent []*frame
	bl, _ := p.link.(BacklogReporter)
	lastFull, held := false, false
	for {
		// No context: Run closes the ports to stop the RX goroutines, and a read
		// with a cancellable context would cost an allocation each.
		n, err := p.link.ReadBatch(context.Background(), msgs)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, afpacket.ErrClosed) {
				return nil
			}
			if errors.Is(err, unix.ENETDOWN) {
				// The link went down (a cable pulled, the peer gone): the
				// port stays, and frames flow again once the link is back.
				if n := p.linkDowns.Add(1); n&(n-1) == 0 { // 1, 2, 4...: log without flooding
					log.WithField("link_downs", n).Warn("link down: the port receives nothing until it is up again")
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(linkDownRetry):
				}
				continue
			}
			log.WithError(err).Error("receive failed")
			return err
		}
		// The receive queue behind this batch (input.go), measured outside the lock.
		var b afpacket.Backlog
		measured := false
		full := n == len(msgs)
		if bl != nil && measure(full, lastFull, held) {
			b, err = bl.Backlog()
			measured = err == nil // ErrClosed: the next read ends the loop
		}
		lastFull = full
		var bytes uint64
		now := s.lock()
		s.advance(now)
		for i := range msgs[:n] {
			m := &msgs[i]
			bytes += uint64(m.N)
			s.process(m.Buf[:m.N], p.cfg.Num, now, m, nil)
		}
		if measured {
			held = s.applyBacklog(p, b, now)
		}
		s.ctr.RxFrames += uint64(n)
		stalled := len(p.pending) > 0
		urgent = s.unlock(ctx, urgent)
		p.rxFrames.Add(uint64(n))
		p.rxBytes.Add(bytes)
		s.kick()
		if stalled {
			if held, urgent, err = s.stall(ctx, p, bl, urgent); err != nil {
				return nil // ctx ended
			}
		}
	}
}

// linkDownRetry is how long the RX goroutine of a port whose link is down
// waits before it reads again.
const linkDownRetry = 10 * time.Millisecond

// stallRetry bounds how long a stalled RX goroutine waits for a departure signal
// before it looks again.
const stallRetry = time.Millisecond

// stall is the RX goroutine of p while lossless frames it read wait for room in the
// TM (p.pending, input.go): it reads nothing more, so that further frames wait in the
// receive queue, and until the pending frames are in it retries them at each
// departure of p's frames (or every stallRetry), measuring the receive queue each
// time so that the input hold can start while it does not read. It returns the
// port's hold state, or ctx.Err() when ctx ends.
func (s *Switch) stall(ctx context.Context, p *swPort, bl BacklogReporter, urgent []*frame) (bool, []*frame, error) {
	timer := time.NewTimer(stallRetry)
	defer timer.Stop()
	held := false
	for {
		var b afpacket.Backlog
		measured := false
		if bl != nil {
			var err error
			b, err = bl.Backlog()
			measured = err == nil
		}
		now := s.lock()
		s.advance(now)
		s.retryPending(p, now)
		if measured {
			held = s.applyBacklog(p, b, now)
		} else {
			held = s.tm.InputHeld(p.tmIdx)
		}
		stalled := len(p.pending) > 0
		urgent = s.unlock(ctx, urgent)
		s.kick()
		if !stalled {
			return held, urgent, nil
		}
		timer.Reset(stallRetry)
		select {
		case <-ctx.Done():
			return held, urgent, ctx.Err()
		case <-p.drained:
		case <-timer.C:
		}
	}
}

// process runs one frame received on inPort through ingress and into the TM. The
// frame is in m.Buf (RX: a forwarded frame takes the buffer, m gets a fresh one) or
// in f.buf (packet-out: f is released unless forwarded). Called with mu held.
func (s *Switch) process(data []byte, inPort uint16, now int64, m *afpacket.Message, f *frame) {
	if inPort != s.cfg.CPUPort && len(data) >= wire.EthernetLen && data[12] == 0x88 && data[13] == 0x08 {
		s.macControl(data, inPort, now)
	}
	r := &s.inRes
	if err := s.pl.Ingress(data, inPort, now, r); err != nil {
		s.log.WithError(err).Warn("ingress failed")
		r.Verdict = pipeline.VerdictDrop
	}
	switch r.Verdict {
	case pipeline.VerdictForward:
		if f == nil {
			f = s.getFrame()
			f.buf, m.Buf = m.Buf, f.buf
		}
		if len(r.Frame) > 0 && unsafe.SliceData(r.Frame) == unsafe.SliceData(f.buf) {
			f.data = r.Frame
		} else { // packet-out without its header, or an INC result in a pipeline buffer
			f.data = f.buf[:copy(f.buf, r.Frame)]
		}
		f.meta = r.Meta
		var from *swPort // a frame read from a port may wait for room (input.go)
		if m != nil {
			if i := s.p4ToTM[inPort&(p4src.NumPorts-1)]; i >= 0 {
				from = s.byTM[i]
			}
		}
		s.enqueue(f, now, from)
		return
	case pipeline.VerdictMulticast:
		// The packet replication engine: one copy per replica (the pipeline left
		// out the ingress port), each a packet of its own egress port.
		for _, rep := range r.Replicas {
			c := s.getFrame()
			c.data = c.buf[:copy(c.buf, r.Frame)]
			c.meta = r.Meta
			c.meta.EgressPort = rep.Port
			s.ctr.MulticastCopies++
			s.enqueue(c, now, nil)
		}
	case pipeline.VerdictToCPU:
		s.ctr.ToCPU++
		pin := p4rtserver.PacketIn{Payload: append([]byte(nil), r.Frame...), Meta: r.PacketIn}
		select {
		case s.pktIn <- pin:
		default:
			s.ctr.PacketInDrops++
		}
	default:
		s.ctr.IngressDropped++
	}
	if f != nil {
		s.putFrame(f)
	}
}

// macControl applies a received PFC or 802.3x PAUSE frame to the TM's egress queues
// of that port (the pipeline sees the frame too, for the port state machine).
func (s *Switch) macControl(data []byte, inPort uint16, now int64) {
	if err := wire.Parse(data, wire.ParseOptions{}, &s.pf); err != nil {
		return
	}
	idx := int(s.p4ToTM[inPort])
	switch {
	case s.pf.Has(wire.LayerPFC):
		s.ctr.PFCRx++
		if err := s.tm.ReceivePFC(idx, s.pf.PFC.ClassEnable, s.pf.PFC.Time, now); err != nil {
			s.log.WithError(err).Warn("receive PFC")
		}
	case s.pf.Has(wire.LayerPause):
		s.ctr.PauseRx++
		if err := s.tm.ReceivePause(idx, s.pf.Pause.Time, now); err != nil {
			s.log.WithError(err).Warn("receive PAUSE")
		}
	}
}

// enqueue offers f to the TM at now; a refused frame is released. A lossless frame read
// from port from (nil: a packet-out, a copy, a CNP) that the TM has no room for, or
// that follows such a frame, waits in from.pending instead (deferLossless). Called with
// mu held.
func (s *Switch) enqueue(f *frame, now int64, from *swPort) {
	m := &f.meta
	eg := int32(-1)
	if m.EgressPort < p4src.NumPorts {
		eg = s.p4ToTM[m.EgressPort]
	}
	if eg < 0 || int(eg) == s.cpuTM {
		s.ctr.UnknownEgress++
		s.putFrame(f)
		return
	}
	in := s.p4ToTM[m.IngressPort&(p4src.NumPorts-1)]
	if in < 0 {
		in = int32(s.cpuTM)
	}
	prio := int(m.Priority & 7)
	length := s.wireLength(f)
	if from != nil && s.deferLossless(f, from, length, int(in), int(eg), prio) {
		return
	}
	if m.Lossless != (s.lossless&(1<<prio) != 0) {
		s.ctr.ClassMismatch++
	}
	res, err := s.tm.Enqueue(f, length, int(in), int(eg), prio, now)
	if err != nil {
		if errors.Is(err, tm.ErrLosslessDrop) {
			s.ctr.LosslessDrops++
			if s.ctr.LosslessDrops&(s.ctr.LosslessDrops-1) == 0 { // 1, 2, 4, 8...: log without flooding
				s.log.WithError(err).WithField("lossless_drops", s.ctr.LosslessDrops).Warn("lossless drop: headroom too small or a peer ignores PAUSE")
			}
		} else {
			s.ctr.TMErrors++
			s.log.WithError(err).Debug("enqueue refused")
		}
	}
	if !res.Verdict.IsAccepted() {
		s.ctr.TMDropped++
		// The P4 counter queue_dropped that only a traffic manager can fill.
		s.pl.CountQueueDrop(m.EgressPort, uint8(prio), m.AcctLen)
		s.putFrame(f)
	} else {
		s.ctr.Enqueued++
	}
	if res.PFC.Kind != tm.PFCNone {
		s.sendPFC(&res.PFC)
	}
}

// sendPFC builds the 802.1Qbb frame of ev; it bypasses the egress queues, the
// scheduler and the delay line: unlock writes it at once. Called with mu held.
func (s *Switch) sendPFC(ev *tm.PFCEvent) {
	if ev.Port < 0 || ev.Port >= len(s.byTM) || s.byTM[ev.Port] == nil {
		return // the internal CPU port has no wire
	}
	p := s.byTM[ev.Port]
	f := s.getFrame()
	n, err := wire.BuildPFC(f.buf, p.mac, ev.ClassEnable, ev.Quanta)
	if err != nil {
		s.putFrame(f)
		s.log.WithError(err).Warn("build PFC")
		return
	}
	f.data, f.out = f.buf[:n], p
	s.urgent = append(s.urgent, f)
	// The P4 counters pfc_xoff_sent / pfc_xon_sent, per priority of the frame.
	for prio := range tm.NumPriorities {
		if ev.ClassEnable&(1<<prio) != 0 {
			s.pl.CountPFCSent(p.cfg.Num, uint8(prio), ev.Quanta[prio] > 0, uint32(n))
		}
	}
	switch ev.Kind {
	case tm.PFCXoff:
		s.ctr.PFCTxXoff++
	case tm.PFCXon:
		s.ctr.PFCTxXon++
	case tm.PFCRefresh:
		s.ctr.PFCTxRefresh++
	}
}

// maxAdvanceSteps bounds the events one advance call processes (a safety net: each
// step moves a shaper or a timer forward, so the loop ends by itself).
const maxAdvanceSteps = 1 << 16

// advance brings the data plane up to now: it runs, in time order and each at its own
// time, every departure and TM timer due at or before now. Departures go to their
// port's delay line; XON and refresh frames are sent; switch CNPs made by egress are
// enqueued right after their dequeue. Called with mu held.
func (s *Switch) advance(now int64) int {
	clear(s.blocked)
	steps := 0
	for ; steps < maxAdvanceSteps; steps++ {
		best, bestAt := -1, int64(0)
		for i := range s.ports {
			if s.blocked[i] {
				continue
			}
			at, ok, _ := s.tm.NextDeparture(i, s.clk)
			if ok && at <= now && (best < 0 || at < bestAt) {
				best, bestAt = i, at
			}
		}
		timerAt, timerOK := s.tm.NextTimer()
		timer := timerOK && timerAt <= now && (best < 0 || timerAt < bestAt)
		if !timer && best < 0 {
			break
		}
		if timer {
			s.clk = max(s.clk, timerAt)
			s.pfcEvs = s.tm.Advance(s.clk, s.pfcEvs[:0])
			for i := range s.pfcEvs {
				s.sendPFC(&s.pfcEvs[i])
			}
			continue
		}
		s.clk = max(s.clk, bestAt)
		d, ok, err := s.tm.Dequeue(best, s.clk)
		if err != nil || !ok {
			s.blocked[best] = true
			continue
		}
		s.ctr.Dequeued++
		s.ctr.LateDepartureMaxNs = max(s.ctr.LateDepartureMaxNs, now-d.TxStart)
		if ip := s.byTM[d.Ingress]; ip != nil && len(ip.pending) > 0 {
			select { // room for the frames its RX goroutine holds back
			case ip.drained <- struct{}{}:
			default:
			}
		}
		s.byTM[best].delay.Push(d.DeliverAt, d.Handle)
		if d.PFC.Kind != tm.PFCNone {
			s.sendPFC(&d.PFC)
		}
		for i, c := range s.pendingCNP {
			s.ctr.SwitchCNPs++
			s.enqueue(c, s.clk, nil)
			s.pendingCNP[i] = nil
		}
		s.pendingCNP = s.pendingCNP[:0]
	}
	s.clk = max(s.clk, now)
	return steps
}

// nextEvent is the earliest time the scheduler has work: a departure, a TM timer or
// a delay-line release. Called with mu held.
func (s *Switch) nextEvent() (int64, bool) {
	best, ok := int64(0), false
	take := func(at int64) {
		if !ok || at < best {
			best, ok = at, true
		}
	}
	for i, p := range s.ports {
		if at, dok, _ := s.tm.NextDeparture(i, s.clk); dok {
			take(at)
		}
		if at, dok := p.delay.Next(); dok {
			take(at)
		}
	}
	if at, tok := s.tm.NextTimer(); tok {
		take(at)
	}
	return best, ok
}

// idleRetry is how long the scheduler waits when an event is due but nothing could
// be done (it should not happen; it keeps a disagreement from spinning a core).
const idleRetry = 100 * time.Microsecond

// schedLoop is the scheduler and transmit goroutine: it sleeps until the next event
// or a kick, advances the data plane, releases the frames whose link delay is over
// and writes them, one batch per port.
func (s *Switch) schedLoop(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var urgent []*frame
	for {
		now := s.lock()
		s.ctr.SchedulerWakeups++
		work := s.advance(now)
		for _, p := range s.ports {
			for {
				f, ok := p.delay.Pop(now)
				if !ok {
					break
				}
				p.txFrames = append(p.txFrames, f.data)
				p.txRecs = append(p.txRecs, f)
			}
			work += len(p.txRecs)
		}
		next, ok := s.nextEvent()
		urgent = s.unlock(ctx, urgent)
		for _, p := range s.ports {
			if len(p.txRecs) > 0 {
				s.transmit(ctx, p)
			}
		}
		if ctx.Err() != nil {
			return
		}
		wait := time.Hour
		if ok {
			wait = max(0, time.Duration(next-s.Now()))
			if wait == 0 && work == 0 {
				wait = idleRetry
			}
		}
		if wait == 0 {
			continue
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-timer.C:
		}
	}
}

// txChunk is the number of frames transmit writes before it lets other goroutines run.
const txChunk = 256

// transmit writes p's released frames and recycles them. A frame the kernel refuses
// (e.g. longer than the interface MTU) is dropped and counted; the rest still go.
func (s *Switch) transmit(ctx context.Context, p *swPort) {
	for off := 0; off < len(p.txFrames); {
		// A chunk at a time, yielding in between: a long backlog written in one call
		// keeps the RX goroutines off the CPU for milliseconds when GOMAXPROCS is 1
		// (the goroutine keeps its P across the system calls), and with them the
		// input measurements and the PFC refreshes they make.
		if off > 0 {
			runtime.Gosched()
		}
		chunk := min(len(p.txFrames), off+txChunk)
		sent, err := p.link.WriteBatch(ctx, p.txFrames[off:chunk])
		var bytes uint64
		for _, b := range p.txFrames[off : off+sent] {
			bytes += uint64(len(b))
		}
		p.txPkts.Add(uint64(sent))
		p.txBytes.Add(bytes)
		off += sent
		if err == nil {
			continue
		}
		if ctx.Err() != nil || errors.Is(err, afpacket.ErrClosed) {
			p.txDropped.Add(uint64(len(p.txFrames) - off))
			break
		}
		p.txErrors.Add(1)
		p.txDropped.Add(1)
		if n := p.txErrors.Load(); n&(n-1) == 0 { // 1, 2, 4...: log without flooding
			s.log.WithError(err).WithFields(logrus.Fields{"port": p.cfg.Num, "tx_errors": n}).Warn("transmit failed: frame dropped")
		}
		off++ // skip the refused frame
	}
	for i, f := range p.txRecs {
		s.putFrame(f)
		p.txRecs[i], p.txFrames[i] = nil, nil
	}
	p.txRecs, p.txFrames = p.txRecs[:0], p.txFrames[:0]
}

// wireLength is the length the TM charges for f: the frame as it will leave
// (with the INT record egress adds to it, if any), at least the minimum frame,
// plus the FCS.
func (s *Switch) wireLength(f *frame) int {
	return max(len(f.data)+s.pl.INTGrowth(f.data, &f.meta), minWireFrame) + fcsBytes
}
