package tm

import (
	"fmt"
	"math/bits"

	"github.com/fastcnp/fastcnp/wire"
)

// Verdict is the outcome of an Enqueue.
type Verdict int

const (
	// Accepted: the frame is queued and accounted in the shared pool.
	Accepted Verdict = iota
	// AcceptedHeadroom: a lossless frame arrived above XOFF and is held in the
	// ingress (port, priority)'s headroom.
	AcceptedHeadroom
	// DroppedBufferFull: a lossy frame found the shared pool full (tail drop).
	DroppedBufferFull
	// DroppedQueueCap: a lossy frame found its egress queue at QueueCapBytes or at the
	// LossyAlpha dynamic cap (tail drop).
	DroppedQueueCap
	// DroppedLossless: a lossless frame found the headroom exhausted. A bug or a
	// misconfiguration; Enqueue also returns ErrLosslessDrop.
	DroppedLossless
)

// IsAccepted reports whether the frame was queued.
func (v Verdict) IsAccepted() bool { return v == Accepted || v == AcceptedHeadroom }

// String names the verdict.
func (v Verdict) String() string {
	switch v {
	case Accepted:
		return "accepted"
	case AcceptedHeadroom:
		return "accepted-headroom"
	case DroppedBufferFull:
		return "dropped-buffer-full"
	case DroppedQueueCap:
		return "dropped-queue-cap"
	case DroppedLossless:
		return "dropped-lossless"
	}
	return fmt.Sprintf("verdict(%d)", int(v))
}

// PFCKind says why a PFC frame is to be sent.
type PFCKind int

const (
	// PFCNone: no frame (the zero value of PFCEvent).
	PFCNone PFCKind = iota
	// PFCXoff: an ingress (port, priority) crossed XOFF: pause it upstream.
	PFCXoff
	// PFCXon: an ingress (port, priority) drained to XON: quanta 0, resume at once.
	PFCXon
	// PFCRefresh: re-send XOFF for priorities still above XON, before the quanta expire.
	PFCRefresh
)

// String names the kind.
func (k PFCKind) String() string {
	switch k {
	case PFCNone:
		return "none"
	case PFCXoff:
		return "xoff"
	case PFCXon:
		return "xon"
	case PFCRefresh:
		return "refresh"
	}
	return fmt.Sprintf("pfckind(%d)", int(k))
}

// PFCEvent asks the caller to send one 802.1Qbb PFC frame. The wire package builds it.
type PFCEvent struct {
	// Kind is PFCNone when there is nothing to send.
	Kind PFCKind
	// Port is the port to send the frame out of: the ingress port whose buffer filled.
	Port int
	// ClassEnable has bit p set for every priority the frame speaks for.
	ClassEnable uint16
	// Quanta are the pause times per priority, in units of 512 bit times (0 = XON).
	Quanta [NumPriorities]uint16
	// SendAt is when the frame starts on the wire: after the data frame in transmission.
	SendAt int64
	// DeliverAt is when its last bit reaches the peer (SendAt + 64 B wire time + delay).
	DeliverAt int64
}

// LinkPause is the priority reported by Hooks.OnEgressPause for 802.3x link-level PAUSE.
const LinkPause = -1

// EnqueueInfo is what the pipeline sees of an accepted enqueue.
type EnqueueInfo[H any] struct {
	Handle   H   // the caller's frame
	Len      int // frame length, bytes
	Ingress  int // port the frame arrived on
	Port     int // egress port
	Priority int // 0..7
	// QueueBytes is the egress (port, priority) queue after the enqueue, bytes.
	QueueBytes int64
	// PortBytes is the egress port's bytes over all priorities after the enqueue.
	PortBytes int64
	// EgressPaused: the (port, priority) is paused by a received PFC or PAUSE.
	EgressPaused bool
	Now          int64 // time of the Enqueue call, ns
}

// DequeueInfo is what the pipeline sees of a dequeue (a frame starting transmission).
// The hook may set Mark (ECN CE, to be applied by the caller) and Tag; both are copied
// into the Departure. With a pointer handle the hook may also rewrite the frame itself.
type DequeueInfo[H any] struct {
	Handle   H   // the caller's frame
	Len      int // frame length, bytes
	Ingress  int // port the frame arrived on
	Port     int // egress port
	Priority int // 0..7
	// QueueBytesBefore is the egress (port, priority) queue with this frame.
	QueueBytesBefore int64
	// QueueBytesAfter is the egress (port, priority) queue without this frame.
	QueueBytesAfter int64
	// PortBytesAfter: the egress port's bytes over all priorities, this frame excluded.
	PortBytesAfter int64
	EnqueuedAt     int64 // when the frame was enqueued, ns
	Now            int64 // time of the Dequeue call = transmission start, ns
	// Mark is an output of the hook: set ECN CE (the caller rewrites the frame).
	Mark bool
	// Tag is an output of the hook, opaque to the TM.
	Tag uint32
}

// Hooks lets the pipeline see the traffic manager's events. The pointers are valid only
// during the call. Hooks run synchronously inside Enqueue, Dequeue, ReceivePFC,
// ReceivePause and Advance and must not call back into the TM: a frame the pipeline
// makes at dequeue (a switch CNP) is enqueued by the caller after the call returns.
type Hooks[H any] interface {
	// OnEnqueue is called for every accepted frame (drops are in EnqueueResult).
	OnEnqueue(e *EnqueueInfo[H])
	// OnDequeue is called for every frame leaving a queue, before it is returned.
	OnDequeue(d *DequeueInfo[H])
	// OnEgressPause is called when a (port, priority) becomes paused (a received PAUSE
	// with quanta > 0 when it was not paused) or resumed (quanta 0, or expiry: then at is
	// the expiry time, which may be before the call's now). Refreshes of a standing
	// pause are not reported. priority is LinkPause for 802.3x.
	OnEgressPause(port, priority int, paused bool, at int64)
}

// NopHooks is a Hooks that does nothing.
type NopHooks[H any] struct{}

// OnEnqueue does nothing.
func (NopHooks[H]) OnEnqueue(*EnqueueInfo[H]) {}

// OnDequeue does nothing.
func (NopHooks[H]) OnDequeue(*DequeueInfo[H]) {}

// OnEgressPause does nothing.
func (NopHooks[H]) OnEgressPause(int, int, bool, int64) {}

// EnqueueResult is the outcome of Enqueue.
type EnqueueResult struct {
	// Verdict says whether the frame was queued, and where, or why it was dropped.
	Verdict Verdict
	// QueueBytes is the egress (port, priority) queue after the call.
	QueueBytes int64
	// PFC is an XOFF to send when this frame made its ingress (port, priority) cross
	// XOFF; Kind == PFCNone otherwise.
	PFC PFCEvent
}

// Departure is a frame the caller must transmit now.
type Departure[H any] struct {
	Handle   H   // the caller's frame
	Len      int // frame length, bytes
	Port     int // egress port
	Ingress  int // port the frame arrived on
	Priority int // 0..7
	// EnqueuedAt is when the frame was enqueued, ns.
	EnqueuedAt int64
	// TxStart is when its first bit goes on the wire: the Dequeue's now.
	TxStart int64
	// TxEnd is when its last bit leaves (the shaper's next free time).
	TxEnd int64
	// DeliverAt is TxEnd + the port's propagation delay: its last bit at the peer.
	DeliverAt int64
	// Mark comes from Hooks.OnDequeue: set ECN CE before sending.
	Mark bool
	// Tag comes from Hooks.OnDequeue.
	Tag uint32
	// PFC is an XON to send when this dequeue drained its ingress (port, priority) to
	// XON; Kind == PFCNone otherwise.
	PFC PFCEvent
}

// queue is one egress (port, priority) queue and its counters.
type queue[H any] struct {
	f     fifo[H]
	bytes int64
	hw    int64

	enqPkts, enqBytes     uint64
	deqPkts, deqBytes     uint64
	dropPkts, dropBytes   uint64
	llDropPkts, llDropBts uint64

	// received PFC state
	paused      bool
	pausedFrom  int64
	pausedUntil int64
	pausedNs    int64
	rxXoff      uint64
	rxXon       uint64

	deficit int64 // DWRR
}

// pgState is the buffer accounting of one ingress (port, priority): the priority group.
type pgState struct {
	shared   int64
	headroom int64
	hw       int64 // high-water of shared+headroom
	hdrmHW   int64

	xoff      bool
	xoffSince int64
	xoffNs    int64
	lastSent  int64 // SendAt of the last XOFF or refresh

	txXoff, txXon, txRefresh uint64
	inPkts, inBytes          uint64
	dropPkts, dropBytes      uint64
}

// port is one port's state. What every frame's enqueue, dequeue and next-departure
// check reads (the shaper, the byte count, the masks) comes first, in one cache
// line; the queues are found through queued rather than by reading each of the
// eight (176 bytes apart: a cache line each) in a large simulated fabric.
type port[H any] struct {
	nextFree int64 // the shaper: earliest start of the next frame
	rem      int64 // fractional ns carried (units of 1/rate ns)
	rate     int64
	delay    int64
	bytes    int64

	queued     uint8 // priorities whose queue holds a frame (q.f.n > 0)
	pausedMask uint8 // priorities with q.paused
	xoffMask   uint8 // priorities with pg.xoff
	linkPaused bool
	linkUntil  int64

	headroom int64   // per lossless priority
	alpha    float64 // dynamic XOFF factor of its priority groups
	refresh  int64   // ns between XOFF refreshes sent out of this port

	q  [NumPriorities]queue[H]
	pg [NumPriorities]pgState

	// input hold (SetInputHold): the caller's input backlog pauses every lossless
	// priority of this ingress port upstream, whatever its priority groups hold
	hold              bool
	holdSince, holdNs int64
	holds             uint64 // holds started
	holdXoff, holdXon uint64 // PFC frames sent because a hold started / ended

	linkFrom     int64
	linkNs       int64
	rxLinkPause  uint64
	rxLinkResume uint64
	pfcTxFrames  uint64

	rr        int // DWRR position in TM.dwrr
	rrVisited bool
}

// TM is the traffic manager. H is the caller's frame handle (a pointer, an index...).
type TM[H any] struct {
	cfg   Config
	hooks Hooks[H]
	ports []port[H]

	sharedSize   int64
	sharedUsed   int64
	headroomUsed int64
	usedHW       int64
	headroomHW   int64
	sharedHW     int64

	losslessDropPkts  uint64
	losslessDropBytes uint64

	strict  [NumPriorities]int8 // served strictly, in this order
	nStrict int
	dwrr    [NumPriorities]int8 // served by DWRR, in round order
	nDWRR   int

	// scratch records handed to hooks: no allocation per call
	enqInfo EnqueueInfo[H]
	deqInfo DequeueInfo[H]
}

// New builds a traffic manager. hooks may be nil.
func New[H any](cfg Config, hooks Hooks[H]) (*TM[H], error) {
	c, err := cfg.normalized()
	if err != nil {
		return nil, err
	}
	if hooks == nil {
		hooks = NopHooks[H]{}
	}
	t := &TM[H]{cfg: c, hooks: hooks, ports: make([]port[H], len(c.Ports)), sharedSize: c.sharedBytes()}
	for i, pc := range c.Ports {
		p := &t.ports[i]
		p.rate = pc.RateBps
		p.delay = pc.PropDelayNs
		p.headroom = pc.HeadroomBytes
		p.alpha = c.Alpha
		if pc.Alpha > 0 {
			p.alpha = pc.Alpha
		}
		p.refresh = max(1, wire.PauseNs(c.PauseQuanta, pc.RateBps)*int64(c.RefreshPercent)/100)
	}
	t.buildOrder()
	return t, nil
}

func (t *TM[H]) buildOrder() {
	ll := func(p int) bool { return t.cfg.Lossless&(1<<p) != 0 }
	add := func(p int) { t.strict[t.nStrict] = int8(p); t.nStrict++ }
	switch t.cfg.Scheduler {
	case SchedStrict:
		for p := NumPriorities - 1; p >= 0; p-- {
			add(p)
		}
	case SchedLosslessFirst, SchedLosslessFirstDWRR:
		for p := NumPriorities - 1; p >= 0; p-- {
			if ll(p) {
				add(p)
			}
		}
		for p := NumPriorities - 1; p >= 0; p-- {
			if ll(p) {
				continue
			}
			if t.cfg.Scheduler == SchedLosslessFirst {
				add(p)
			} else {
				t.dwrr[t.nDWRR] = int8(p)
				t.nDWRR++
			}
		}
	}
}

// Config returns the normalised configuration (defaults filled, headroom computed).
func (t *TM[H]) Config() Config {
	c := t.cfg
	c.Ports = append([]PortConfig(nil), t.cfg.Ports...)
	return c
}

func (t *TM[H]) checkPort(p int) error {
	if p < 0 || p >= len(t.ports) {
		return fmt.Errorf("%w: %d (have %d)", ErrUnknownPort, p, len(t.ports))
	}
	return nil
}

func (t *TM[H]) checkPortPrio(p, prio int) error {
	if err := t.checkPort(p); err != nil {
		return err
	}
	if prio < 0 || prio >= NumPriorities {
		return fmt.Errorf("%w: %d", ErrBadPriority, prio)
	}
	return nil
}

func (t *TM[H]) lossless(prio int) bool { return t.cfg.Lossless&(1<<prio) != 0 }

// XoffThreshold is the current XOFF threshold of every ingress (port, priority)
// without a port Alpha of its own, bytes: static, or Alpha * free shared buffer.
func (t *TM[H]) XoffThreshold() int64 { return t.xoffAt(t.cfg.Alpha) }

// PortXoffThreshold is ingress port p's current XOFF threshold (its PortConfig.Alpha).
func (t *TM[H]) PortXoffThreshold(p int) int64 { return t.xoffAt(t.ports[p].alpha) }

func (t *TM[H]) xoffAt(alpha float64) int64 {
	if t.cfg.Threshold == ThresholdStatic {
		return t.cfg.XoffBytes
	}
	return int64(alpha * float64(t.sharedSize-t.sharedUsed))
}

// XonThreshold is the current XON level: static XonBytes, or XOFF - ResumeOffsetBytes
// (of the ingress ports without an Alpha of their own).
func (t *TM[H]) XonThreshold() int64 { return t.xonAt(t.cfg.Alpha) }

func (t *TM[H]) xonAt(alpha float64) int64 {
	if t.cfg.Threshold == ThresholdStatic {
		return t.cfg.XonBytes
	}
	return t.xoffAt(alpha) - t.cfg.ResumeOffsetBytes
}

// Enqueue offers a frame of length bytes that arrived (last bit received) on ingress at
// now, for egress at priority prio. Invalid arguments return an error and change
// nothing. A lossy drop is a counted verdict with a nil error; a lossless drop returns
// DroppedLossless and an error wrapping ErrLosslessDrop.
func (t *TM[H]) Enqueue(h H, length, ingress, egress, prio int, now int64) (EnqueueResult, error) {
	if err := t.checkPortPrio(egress, prio); err != nil {
		return EnqueueResult{}, fmt.Errorf("enqueue egress: %w", err)
	}
	if err := t.checkPort(ingress); err != nil {
		return EnqueueResult{}, fmt.Errorf("enqueue ingress: %w", err)
	}
	if length <= 0 || length > t.cfg.MaxFrameBytes {
		return EnqueueResult{}, fmt.Errorf("enqueue: %w: %d (max %d)", ErrBadLength, length, t.cfg.MaxFrameBytes)
	}
	ep := &t.ports[egress]
	if ep.pausedMask != 0 || ep.linkPaused {
		t.settle(ep, egress, now)
	}
	q := &ep.q[prio]
	ip := &t.ports[ingress]
	g := &ip.pg[prio]
	n := int64(length)
	lossless := t.lossless(prio)

	v := t.admit(n, q, ip, g, prio)
	if !v.IsAccepted() {
		q.dropPkts++
		q.dropBytes += uint64(n)
		g.dropPkts++
		g.dropBytes += uint64(n)
		res := EnqueueResult{Verdict: v, QueueBytes: q.bytes}
		if v == DroppedLossless {
			q.llDropPkts++
			q.llDropBts += uint64(n)
			t.losslessDropPkts++
			t.losslessDropBytes += uint64(n)
			return res, fmt.Errorf("enqueue ingress %d prio %d (%d B held, headroom %d B) to egress %d: %w",
				ingress, prio, g.shared+g.headroom, ip.headroom, egress, ErrLosslessDrop)
		}
		return res, nil
	}

	// buffer accounting on the ingress side
	if v == Accepted {
		g.shared += n
		t.sharedUsed += n
		t.sharedHW = max(t.sharedHW, t.sharedUsed)
	} else {
		g.headroom += n
		t.headroomUsed += n
		g.hdrmHW = max(g.hdrmHW, g.headroom)
		t.headroomHW = max(t.headroomHW, t.headroomUsed)
	}
	g.hw = max(g.hw, g.shared+g.headroom)
	g.inPkts++
	g.inBytes += uint64(n)
	t.usedHW = max(t.usedHW, t.sharedUsed+t.headroomUsed)

	// the egress queue
	q.f.push(entry[H]{h: h, enqAt: now, length: int32(length), ingress: int32(ingress)})
	ep.queued |= 1 << prio
	q.bytes += n
	q.hw = max(q.hw, q.bytes)
	q.enqPkts++
	q.enqBytes += uint64(n)
	ep.bytes += n

	res := EnqueueResult{Verdict: v, QueueBytes: q.bytes}
	// XOFF when the shared part reaches the threshold (re-evaluated now: dynamic
	// thresholds shrink as the buffer fills) or anything spilled into headroom.
	// Under an input hold the upstream is already paused for every lossless priority:
	// the group goes into XOFF without a frame (the hold's refreshes cover it).
	if lossless && !g.xoff && (g.headroom > 0 || g.shared >= t.xoffAt(ip.alpha)) {
		g.xoff = true
		g.xoffSince = now
		ip.xoffMask |= 1 << prio
		if !ip.hold {
			g.txXoff++
			res.PFC = t.pfcFrame(ingress, 1<<prio, PFCXoff, now)
			g.lastSent = res.PFC.SendAt
		}
	}

	ei := &t.enqInfo
	*ei = EnqueueInfo[H]{
		Handle: h, Len: length, Ingress: ingress, Port: egress, Priority: prio,
		QueueBytes: q.bytes, PortBytes: ep.bytes,
		EgressPaused: q.paused || ep.linkPaused, Now: now,
	}
	t.hooks.OnEnqueue(ei)
	var zero H
	ei.Handle = zero
	return res, nil
}

// admit is Enqueue's admission decision for a frame of n bytes into egress queue q and
// priority group g of ingress port ip, at priority prio. It changes nothing.
func (t *TM[H]) admit(n int64, q *queue[H], ip *port[H], g *pgState, prio int) Verdict {
	if t.lossless(prio) {
		switch {
		case t.sharedUsed+n <= t.sharedSize && g.shared+n <= t.xoffAt(ip.alpha):
			return Accepted
		case g.headroom+n <= ip.headroom:
			return AcceptedHeadroom
		default:
			return DroppedLossless
		}
	}
	switch {
	case t.sharedUsed+n > t.sharedSize:
		return DroppedBufferFull
	case t.cfg.QueueCapBytes[prio] > 0 && q.bytes+n > t.cfg.QueueCapBytes[prio]:
		return DroppedQueueCap
	case t.cfg.LossyAlpha > 0 && float64(q.bytes+n) > t.cfg.LossyAlpha*float64(t.sharedSize-t.sharedUsed):
		return DroppedQueueCap
	}
	return Accepted
}

// Admits returns the verdict Enqueue would give a frame of length bytes from ingress
// to egress at priority prio now, without enqueueing, counting or changing anything:
// a caller that can hold a frame elsewhere (the real-time switch keeps the lossless
// frames that would find their headroom full in its receive queue, docs/target.md)
// asks before it offers. Invalid arguments return an error, as Enqueue's.
func (t *TM[H]) Admits(length, ingress, egress, prio int) (Verdict, error) {
	if err := t.checkPortPrio(egress, prio); err != nil {
		return 0, fmt.Errorf("admits egress: %w", err)
	}
	if err := t.checkPort(ingress); err != nil {
		return 0, fmt.Errorf("admits ingress: %w", err)
	}
	if length <= 0 || length > t.cfg.MaxFrameBytes {
		return 0, fmt.Errorf("admits: %w: %d (max %d)", ErrBadLength, length, t.cfg.MaxFrameBytes)
	}
	ip := &t.ports[ingress]
	return t.admit(int64(length), &t.ports[egress].q[prio], ip, &ip.pg[prio], prio), nil
}

// eligible reports whether queue prio of p may be served at now.
func (p *port[H]) eligible(prio int, now int64) bool {
	if p.queued&(1<<prio) == 0 {
		return false
	}
	q := &p.q[prio]
	return (!q.paused || q.pausedUntil <= now) && (!p.linkPaused || p.linkUntil <= now)
}

// pick returns the priority to serve at now, or -1.
func (t *TM[H]) pick(p *port[H], now int64) int {
	if p.queued == 0 {
		return -1
	}
	for i := range t.nStrict {
		pr := int(t.strict[i])
		if p.eligible(pr, now) {
			return pr
		}
	}
	if t.nDWRR == 0 {
		return -1
	}
	found := false
	for i := range t.nDWRR {
		if p.eligible(int(t.dwrr[i]), now) {
			found = true
			break
		}
	}
	if !found {
		return -1
	}
	// Deficit round robin: each visit adds one quantum; a queue is served while its
	// head fits in its deficit. Terminates: an eligible queue gains a quantum a round.
	for {
		pr := int(t.dwrr[p.rr])
		q := &p.q[pr]
		if !p.eligible(pr, now) {
			if q.f.n == 0 {
				q.deficit = 0
			}
			p.rr = (p.rr + 1) % t.nDWRR
			p.rrVisited = false
			continue
		}
		if !p.rrVisited {
			q.deficit += int64(t.cfg.DWRRQuantumBytes[pr])
			p.rrVisited = true
		}
		if int64(q.f.peek().length) <= q.deficit {
			return pr
		}
		p.rr = (p.rr + 1) % t.nDWRR
		p.rrVisited = false
	}
}

// ser advances p's shaper clock by the wire time of bytes, carrying the fractional ns so
// that the long-run rate is exact (e.g. 30.4 ns per 1520 B at 400 Gb/s).
func (p *port[H]) ser(bytes int) int64 {
	num := int64(bytes)*8*1e9 + p.rem
	p.rem = num % p.rate
	return num / p.rate
}

// startAt reserves the link of p for bytes at the earliest time >= now; returns start, end.
func (p *port[H]) startAt(bytes int, now int64) (int64, int64) {
	start := p.nextFree
	if now > start {
		start = now
		p.rem = 0 // the link was idle: the carried fraction is stale
	}
	end := start + p.ser(bytes)
	p.nextFree = end
	return start, end
}

func (t *TM[H]) wireBytes(length int) int {
	if t.cfg.WireOverhead {
		return length + wire.PreambleIFGBytes
	}
	return length
}

// pfcFrame reserves the wire for one PFC frame out of port (after the frame in
// transmission) and describes it.
func (t *TM[H]) pfcFrame(portIdx int, classEnable uint16, kind PFCKind, now int64) PFCEvent {
	p := &t.ports[portIdx]
	start, end := p.startAt(t.wireBytes(wire.PFCFrameBytes), now)
	p.pfcTxFrames++
	ev := PFCEvent{Kind: kind, Port: portIdx, ClassEnable: classEnable, SendAt: start, DeliverAt: end + p.delay}
	if kind != PFCXon {
		for pr := range NumPriorities {
			if classEnable&(1<<pr) != 0 {
				ev.Quanta[pr] = t.cfg.PauseQuanta
			}
		}
	}
	return ev
}

// Dequeue returns the frame port transmits at now, if the shaper, the received pauses
// and the queues allow one; ok is false otherwise (see NextDeparture for when to call
// again). The frame's transmission starts at now; the caller must not call Dequeue for
// this port again before the returned TxEnd (it would get nothing).
func (t *TM[H]) Dequeue(portIdx int, now int64) (d Departure[H], ok bool, err error) {
	if err := t.checkPort(portIdx); err != nil {
		return d, false, fmt.Errorf("dequeue: %w", err)
	}
	p := &t.ports[portIdx]
	if p.pausedMask != 0 || p.linkPaused {
		t.settle(p, portIdx, now)
	}
	if now < p.nextFree {
		return d, false, nil
	}
	prio := t.pick(p, now)
	if prio < 0 {
		return d, false, nil
	}
	q := &p.q[prio]
	e := q.f.pop()
	if q.f.n == 0 {
		p.queued &^= 1 << prio
	}
	n := int64(e.length)
	if t.nDWRR > 0 && !t.lossless(prio) && t.cfg.Scheduler == SchedLosslessFirstDWRR {
		q.deficit -= n
		if q.f.n == 0 {
			q.deficit = 0
			p.rr = (p.rr + 1) % t.nDWRR
			p.rrVisited = false
		}
	}
	before := q.bytes
	q.bytes -= n
	p.bytes -= n
	q.deqPkts++
	q.deqBytes += uint64(n)

	// ingress accounting: headroom drains first (as in HPCC), then the shared part
	ingress := int(e.ingress)
	g := &t.ports[ingress].pg[prio]
	fromH := min(g.headroom, n)
	g.headroom -= fromH
	t.headroomUsed -= fromH
	g.shared -= n - fromH
	t.sharedUsed -= n - fromH

	start, end := p.startAt(t.wireBytes(int(e.length)), now)

	di := &t.deqInfo
	*di = DequeueInfo[H]{
		Handle: e.h, Len: int(e.length), Ingress: ingress, Port: portIdx, Priority: prio,
		QueueBytesBefore: before, QueueBytesAfter: q.bytes, PortBytesAfter: p.bytes,
		EnqueuedAt: e.enqAt, Now: now,
	}
	t.hooks.OnDequeue(di)
	d = Departure[H]{
		Handle: e.h, Len: int(e.length), Port: portIdx, Ingress: ingress, Priority: prio,
		EnqueuedAt: e.enqAt, TxStart: start, TxEnd: end, DeliverAt: end + p.delay,
		Mark: di.Mark, Tag: di.Tag,
	}
	var zero H
	di.Handle = zero

	// Under an input hold the upstream stays paused: no XON until the hold ends.
	if g.xoff && g.headroom == 0 && (g.shared == 0 || g.shared <= t.xonAt(t.ports[ingress].alpha)) {
		g.xoff = false
		g.xoffNs += now - g.xoffSince
		ip := &t.ports[ingress]
		ip.xoffMask &^= 1 << prio
		if !ip.hold {
			g.txXon++
			d.PFC = t.pfcFrame(ingress, 1<<prio, PFCXon, now)
		}
	}
	return d, true, nil
}

// NextDeparture returns when Dequeue(port) will next yield a frame if nothing else
// happens (no arrival, no PFC received): max(now, shaper) when a queue is eligible, or
// the earliest expiry of the pauses that hold the non-empty queues. ok is false when
// the port has nothing queued.
func (t *TM[H]) NextDeparture(portIdx int, now int64) (at int64, ok bool, err error) {
	if err := t.checkPort(portIdx); err != nil {
		return 0, false, fmt.Errorf("next departure: %w", err)
	}
	p := &t.ports[portIdx]
	if p.bytes == 0 {
		return 0, false, nil
	}
	best := int64(-1)
	for m := p.queued; m != 0; m &= m - 1 {
		q := &p.q[bits.TrailingZeros8(m)]
		r := now
		if q.paused && q.pausedUntil > r {
			r = q.pausedUntil
		}
		if p.linkPaused && p.linkUntil > r {
			r = p.linkUntil
		}
		if best < 0 || r < best {
			best = r
		}
	}
	if best < 0 {
		return 0, false, nil
	}
	return max(best, p.nextFree), true, nil
}

// QueueBytes returns the bytes queued at egress (port, priority).
func (t *TM[H]) QueueBytes(portIdx, prio int) (int64, error) {
	if err := t.checkPortPrio(portIdx, prio); err != nil {
		return 0, fmt.Errorf("queue bytes: %w", err)
	}
	return t.ports[portIdx].q[prio].bytes, nil
}

// BufferUsed returns the bytes held in the buffer (shared pool plus headroom).
func (t *TM[H]) BufferUsed() int64 { return t.sharedUsed + t.headroomUsed }

// LosslessDrops returns the number of frames dropped in lossless classes (must stay 0).
func (t *TM[H]) LosslessDrops() uint64 { return t.losslessDropPkts }
