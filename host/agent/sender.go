package agent

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/wire"
)

// Defaults of SenderConfig.
const (
	// DefaultMSS is the payload of a full data packet: the InfiniBand MTU
	// of 1024 bytes, which fits a 1500-byte Ethernet MTU with the RoCEv2
	// headers.
	DefaultMSS = 1024
	// DefaultAckEvery is how many packets share one ACK request (DCQCN;
	// AckEveryFor gives every algorithm's).
	DefaultAckEvery = 16
	// DefaultRTO is the first retransmission timeout. The lossless class
	// should never need it; it is long compared with a fabric RTT so that
	// scheduling hiccups of a software agent do not trigger it.
	DefaultRTO = 20 * time.Millisecond
	// MaxRTO bounds the exponential back-off of the retransmission timer.
	MaxRTO = 2 * time.Second
	// DefaultBurstPackets is the pacing token bucket depth in full packets.
	DefaultBurstPackets = 4
	// MaxOutstanding bounds the packets in flight (PSN space is 2^24; RC
	// allows at most 2^23 outstanding).
	MaxOutstanding = 1 << 20
)

// RoCEOverhead is the wire size of a RoCEv2 SEND Only frame without its
// payload and without an 802.1Q tag: Ethernet 14 + IPv4 20 + UDP 8 + BTH 12
// + ICRC 4.
const RoCEOverhead = wire.EthernetLen + wire.IPv4Len + wire.UDPLen + wire.BTHLen + wire.ICRCLen

// Errors of this package; test with errors.Is.
var (
	// ErrConfig reports an invalid configuration value.
	ErrConfig = errors.New("agent: bad configuration")
	// ErrState reports a call that the state machine cannot accept now
	// (posting to a stopped stream, ...).
	ErrState = errors.New("agent: invalid state")
)

// NoWake is the NextWake value of a state machine that needs no call.
const NoWake time.Duration = math.MaxInt64

// Unbounded is the size of a message that lasts until Stop (a long flow).
const Unbounded int64 = -1

// AckEveryFor returns the ACK request interval, in packets, that suits the
// sender algorithm called algo: 1 for those whose signal rides on ACKs
// (cc.AckPerPacket), DefaultAckEvery for DCQCN and unknown names.
func AckEveryFor(algo string) int {
	if cc.AckPerPacket(algo) {
		return 1
	}
	return DefaultAckEvery
}

// SenderConfig configures a Sender. Zero values take the defaults.
type SenderConfig struct {
	// MSS is the payload bytes of a full data packet (default DefaultMSS).
	MSS int
	// Overhead is the frame bytes around the payload (default
	// RoCEOverhead; +4 with an 802.1Q tag). Frames are at least
	// wire.MinFrameLen long.
	Overhead int
	// LineGap is the line time per frame beyond the frame, in bytes, that
	// pacing charges (Ethernet's preamble, SFD and minimum inter-frame gap:
	// 20, as the switch's shaper counts them; default 0). The window and
	// the byte counters use frame bytes only. With it, a sender paced at
	// its line rate does not outrun a switch port of the same rate.
	LineGap int
	// PayloadFunc, if set, overrides the payload size of packet seq (the
	// INC worker: its first packet carries the IDS part). Messages then
	// count packets, not bytes: a message of n bytes is n/MSS packets.
	PayloadFunc func(seq uint64) int
	// AckEvery sets the A bit on every AckEvery-th packet of a message and
	// on its last one (default DefaultAckEvery).
	AckEvery int
	// RTO is the first retransmission timeout (default DefaultRTO); it
	// doubles on each timeout without progress, up to MaxRTO.
	RTO time.Duration
	// BurstPackets is the depth of the pacing token bucket in full frames
	// (default DefaultBurstPackets): a runtime that wakes late may send
	// that much back to back to catch up, no more.
	BurstPackets int
	// BurstTime, if larger, sets the bucket depth in time at the current
	// rate instead: a runtime whose sleeps overshoot by up to BurstTime
	// still reaches the paced rate on average.
	BurstTime time.Duration
	// StartPSN is the PSN of the first packet (24 bits).
	StartPSN uint32
	// NoAck makes the stream unacknowledged (INC contributions, which a
	// switch consumes): a packet counts as delivered when it is sent, no
	// window, no RTO. Pacing and CNPs still apply.
	NoAck bool
	// INT puts an INT header on every data packet (Packet.INT), so that
	// switches in INT mode add their records (HPCC, cc.NeedsINT). The
	// default Overhead then includes its 4 bytes.
	INT bool
}

func (c *SenderConfig) withDefaults() (SenderConfig, error) {
	o := *c
	if o.MSS == 0 {
		o.MSS = DefaultMSS
	}
	if o.Overhead == 0 {
		o.Overhead = RoCEOverhead
		if o.INT {
			o.Overhead += wire.INTHeaderLen
		}
	}
	if o.AckEvery == 0 {
		o.AckEvery = DefaultAckEvery
	}
	if o.RTO == 0 {
		o.RTO = DefaultRTO
	}
	if o.BurstPackets == 0 {
		o.BurstPackets = DefaultBurstPackets
	}
	switch {
	case o.MSS < 1 || o.MSS > 9000:
		return o, fmt.Errorf("sender: MSS %d outside [1, 9000]: %w", o.MSS, ErrConfig)
	case o.Overhead < 0 || o.Overhead > 1024:
		return o, fmt.Errorf("sender: overhead %d outside [0, 1024]: %w", o.Overhead, ErrConfig)
	case o.LineGap < 0 || o.LineGap > 1024:
		return o, fmt.Errorf("sender: line gap %d outside [0, 1024]: %w", o.LineGap, ErrConfig)
	case o.AckEvery < 1:
		return o, fmt.Errorf("sender: ack-every %d must be >= 1: %w", o.AckEvery, ErrConfig)
	case o.RTO < 0 || o.RTO > MaxRTO:
		return o, fmt.Errorf("sender: RTO %v outside (0, %v]: %w", o.RTO, MaxRTO, ErrConfig)
	case o.BurstTime < 0 || o.BurstTime > MaxRTO:
		return o, fmt.Errorf("sender: burst time %v outside [0, %v]: %w", o.BurstTime, MaxRTO, ErrConfig)
	case o.BurstPackets < 1:
		return o, fmt.Errorf("sender: burst %d packets must be >= 1: %w", o.BurstPackets, ErrConfig)
	case o.StartPSN > wire.MaxPSN:
		return o, fmt.Errorf("sender: start PSN %#x exceeds 24 bits: %w", o.StartPSN, ErrConfig)
	}
	return o, nil
}

// Packet is one departure chosen by Sender.Next.
type Packet struct {
	// Seq is the packet's sequence number in the stream (0-based, 64 bits).
	Seq uint64
	// PSN is the 24-bit PSN on the wire.
	PSN uint32
	// Offset is the stream byte offset of the payload's first byte.
	Offset int64
	// Payload is the payload size in bytes.
	Payload int
	// WireBytes is the frame size the sender accounts for (pacing, window).
	WireBytes int
	// AckReq is the BTH A bit.
	AckReq bool
	// Retransmit marks a packet sent again after a NAK or a timeout.
	Retransmit bool
	// First marks the first packet of a message (INC: carries the IDS part).
	First bool
	// Last marks the last packet of a message.
	Last bool
	// Window is the algorithm's window when the packet was admitted (its
	// bytes in flight then included this packet and were at most Window,
	// unless nothing else was in flight).
	Window int64
	// Probe marks an ACK probe: the newest packet sent again with the A bit
	// because the window shrank below what is in flight (see Sender). It
	// adds nothing to the bytes in flight.
	Probe bool
	// INT asks for INT records: the frame carries an INT header after the
	// BTH (SenderConfig.INT).
	INT bool
}

// MessageDone reports a message whose every byte is acknowledged.
type MessageDone struct {
	// Index is the message's position in the order of Post calls.
	Index int
	// Bytes is the message size (for an unbounded message, the bytes sent
	// before Stop).
	Bytes int64
	// Posted and Done are the post time and the time of its last ACK.
	Posted, Done time.Duration
}

// FCT returns the flow completion time of the message.
func (m MessageDone) FCT() time.Duration { return m.Done - m.Posted }

// SenderStats are a sender's counters.
type SenderStats struct {
	PacketsSent    uint64        // data packets sent, retransmissions included
	Retransmits    uint64        // data packets sent again
	WireBytesSent  int64         // frame bytes sent, retransmissions included
	PayloadSent    int64         // new payload bytes sent (first transmissions)
	PayloadAcked   int64         // payload bytes acknowledged
	Acks           uint64        // ACKs that acknowledged something
	StaleAcks      uint64        // ACKs for nothing new (duplicates, old PSNs)
	Naks           uint64        // NAK (PSN sequence error) received
	Timeouts       uint64        // retransmission timeouts
	CNPSwitch      uint64        // CNPs made by a switch (extension flag bit1)
	CNPNP          uint64        // plain CNPs (receiver NP, or a commodity switch)
	RTTSamples     uint64        // RTT samples taken
	WindowBlocked  uint64        // Next calls that found the window full
	AckProbes      uint64        // newest packet re-sent with the A bit (window shrank, see probe)
	LastCNPWindow  int64         // the window of the last switch CNP, bytes
	ECEAcks        uint64        // ACKs with the ECN echo given to the algorithm
	INTAcks        uint64        // ACKs with INT records given to the algorithm
	Holds          uint64        // times the link started holding the sender (PFC pause, see Hold)
	Held           time.Duration // time the sender was held, the hold in progress included
	MessagesPosted int
	MessagesDone   int
}

type sentRec struct {
	at    time.Duration
	wire  int32
	pay   int32
	retx  bool // sent more than once: no RTT sample (Karn)
	count bool // its wire bytes are in inflight
}

type message struct {
	index    int
	first    uint64 // first seq
	end      uint64 // one past the last seq (math.MaxUint64 while unbounded)
	offset   int64  // stream offset of the first byte
	bytes    int64  // size, or Unbounded
	posted   time.Duration
	lastSize int // payload of the last packet
}

// Sender is the per-connection sending state machine. It is not safe for
// concurrent use; the runtime serialises calls and passes non-decreasing
// times.
type Sender struct {
	cfg SenderConfig
	alg cc.Algorithm

	msgs     []message // posted, not yet fully acknowledged, in order
	nextMsg  int       // index of the next posted message
	endSeq   uint64    // one past the last seq of all posted messages
	endOff   int64     // stream bytes of all posted messages
	stopped  bool      // an unbounded message was stopped, no more posts
	nextSeq  uint64    // next seq to send (new or, after go-back-N, again)
	highSeq  uint64    // one past the highest seq ever sent
	una      uint64    // oldest unacknowledged seq
	ring     []sentRec // records of seqs [una, highSeq), ring-indexed
	inflight int64     // wire bytes sent and not acknowledged

	nextDep      time.Duration // earliest next departure (pacing)
	depFrac      float64       // the fraction of a ns after nextDep (pace)
	rto          time.Duration // current timeout
	lastProgress time.Duration // last send of new data after idle, or ACK progress
	lastNAKSeq   uint64
	lastAReq     uint64 // seq+1 of the newest packet sent with the A bit
	probed       uint64 // highSeq when the last ACK probe was sent
	nakActive    bool
	held         bool          // the link holds the sender's priority (Hold)
	heldFrom     time.Duration // start of the current hold
	last         time.Duration // latest event time

	done  []MessageDone
	rtts  []time.Duration // samples since the last DrainRTT
	stats SenderStats
}

// NewSender returns a sender driven by alg (one per connection).
func NewSender(cfg SenderConfig, alg cc.Algorithm) (*Sender, error) {
	if alg == nil {
		return nil, fmt.Errorf("sender: nil algorithm: %w", ErrConfig)
	}
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Sender{cfg: c, alg: alg, rto: c.RTO, ring: make([]sentRec, 64)}, nil
}

// Algorithm returns the congestion-control algorithm.
func (s *Sender) Algorithm() cc.Algorithm { return s.alg }

// Config returns the configuration with defaults applied.
func (s *Sender) Config() SenderConfig { return s.cfg }

func (s *Sender) checkTime(what string, now time.Duration) error {
	if now < s.last {
		return fmt.Errorf("sender: %s at %v, after an event at %v: %w", what, now, s.last, cc.ErrTimeBackwards)
	}
	s.last = now
	return nil
}

// Post appends a message of size bytes (> 0) to the send queue, or an
// unbounded one (size Unbounded) that lasts until Stop. Nothing may be
// posted after an unbounded message.
func (s *Sender) Post(now time.Duration, size int64) error {
	if err := s.checkTime("post", now); err != nil {
		return err
	}
	if s.endSeq == math.MaxUint64 || s.stopped {
		return fmt.Errorf("sender: post after an unbounded message: %w", ErrState)
	}
	if size == 0 || size < Unbounded || size > cc.MaxEventBytes {
		return fmt.Errorf("sender: message size %d must be > 0 (or Unbounded) and <= %d: %w", size, cc.MaxEventBytes, ErrConfig)
	}
	m := message{index: s.nextMsg, first: s.endSeq, offset: s.endOff, bytes: size, posted: now}
	if size == Unbounded {
		m.end = math.MaxUint64
		m.lastSize = s.cfg.MSS
	} else {
		n := uint64((size + int64(s.cfg.MSS) - 1) / int64(s.cfg.MSS))
		m.end = m.first + n
		m.lastSize = int(size - int64(n-1)*int64(s.cfg.MSS))
		s.endOff += size
	}
	s.nextMsg++
	s.stats.MessagesPosted++
	s.endSeq = m.end
	s.msgs = append(s.msgs, m)
	if s.inflight == 0 && s.una == s.highSeq {
		s.lastProgress = now
	}
	return nil
}

// Stop ends an unbounded message: it is completed with full packets up to
// the end of the current ACK group, so its last packet requests an ACK.
// Stop on a sender without an unbounded message does nothing.
func (s *Sender) Stop(now time.Duration) error {
	if err := s.checkTime("stop", now); err != nil {
		return err
	}
	if len(s.msgs) == 0 || s.msgs[len(s.msgs)-1].end != math.MaxUint64 {
		return nil
	}
	m := &s.msgs[len(s.msgs)-1]
	sent := s.highSeq - m.first // packets of it already sent
	k := uint64(s.cfg.AckEvery)
	n := (sent + k - 1) / k * k
	if n == 0 {
		n = 1
	}
	m.end = m.first + n
	m.bytes = int64(n) * int64(s.cfg.MSS)
	s.endSeq = m.end
	s.endOff = m.offset + m.bytes
	s.stopped = true
	s.ackUpTo(now, s.una) // complete it if everything is acknowledged already
	return nil
}

// msgOf returns the message holding seq (seq must be in [una, endSeq)).
func (s *Sender) msgOf(seq uint64) *message {
	for i := range s.msgs {
		if seq < s.msgs[i].end {
			return &s.msgs[i]
		}
	}
	return nil
}

func (s *Sender) rec(seq uint64) *sentRec { return &s.ring[seq%uint64(len(s.ring))] }

// grow makes room for seq in the ring (seq - una < new length).
func (s *Sender) grow(seq uint64) {
	if seq-s.una < uint64(len(s.ring)) {
		return
	}
	n := len(s.ring)
	for seq-s.una >= uint64(n) {
		n *= 2
	}
	r := make([]sentRec, n)
	for q := s.una; q < s.highSeq; q++ {
		r[q%uint64(n)] = *s.rec(q)
	}
	s.ring = r
}

// PSNOf returns the 24-bit PSN of seq.
func (s *Sender) PSNOf(seq uint64) uint32 {
	return uint32((uint64(s.cfg.StartPSN) + seq) & wire.MaxPSN)
}

// wireSize returns the accounted frame size for a payload.
func (s *Sender) wireSize(payload int) int {
	return max(s.cfg.Overhead+payload, wire.MinFrameLen)
}

// PacingGap returns the time a frame of wireBytes occupies at rate bits/s:
// wireBytes*8/rate seconds, rounded up to whole nanoseconds (0 for an
// infinite rate, NoWake for a rate <= 0 or NaN, at most 2000 s).
func PacingGap(wireBytes int, rate float64) time.Duration {
	if !(rate > 0) {
		return NoWake
	}
	if math.IsInf(rate, 1) {
		return 0
	}
	g := math.Ceil(float64(wireBytes) * 8e9 / rate)
	if g >= float64(MaxRTO)*1e3 {
		return time.Duration(float64(MaxRTO) * 1e3)
	}
	return time.Duration(g)
}

// runTimers runs the algorithm's due timers and the retransmission timer.
func (s *Sender) runTimers(now time.Duration) error {
	if t := s.alg.NextTimer(); t != cc.NoTimer && t <= now {
		if err := s.alg.OnTimer(now); err != nil {
			return fmt.Errorf("sender: %s timer: %w", s.alg.Name(), err)
		}
	}
	if !s.cfg.NoAck && !s.held && s.una < s.highSeq && now >= s.lastProgress+s.rto {
		s.stats.Timeouts++
		s.goBack(s.una)
		s.lastProgress = now
		s.rto = min(2*s.rto, MaxRTO)
	}
	return nil
}

// goBack restarts transmission at seq: everything from seq on counts as
// lost (not in flight) and is sent again.
func (s *Sender) goBack(seq uint64) {
	for q := seq; q < s.highSeq; q++ {
		r := s.rec(q)
		if r.count {
			s.inflight -= int64(r.wire)
			r.count = false
		}
		r.retx = true
	}
	s.nextSeq = seq
}

// Inflight returns the wire bytes sent and not acknowledged.
func (s *Sender) Inflight() int64 { return s.inflight }

// Pending reports whether packets remain to be sent now or later.
func (s *Sender) Pending() bool { return s.nextSeq < s.endSeq }

// Done reports whether every posted message is acknowledged (and at least
// one was posted).
func (s *Sender) Done() bool {
	return s.stats.MessagesPosted > 0 && len(s.msgs) == 0
}

// Next runs due timers and returns the packet to send at now, if the
// window and the pacer allow one. The caller must put the returned packet
// on the wire (its send time is now).
func (s *Sender) Next(now time.Duration) (Packet, bool, error) {
	if err := s.checkTime("next", now); err != nil {
		return Packet{}, false, err
	}
	if err := s.runTimers(now); err != nil {
		return Packet{}, false, err
	}
	if s.held || s.nextSeq >= s.endSeq || now < s.nextDep {
		return Packet{}, false, nil
	}
	seq := s.nextSeq
	if seq-s.una >= MaxOutstanding {
		s.stats.WindowBlocked++
		return Packet{}, false, nil
	}
	m := s.msgOf(seq)
	pay := s.cfg.MSS
	if seq == m.end-1 {
		pay = m.lastSize
	}
	if s.cfg.PayloadFunc != nil {
		pay = s.cfg.PayloadFunc(seq)
	}
	w := s.wireSize(pay)
	win := s.alg.Window()
	if !s.cfg.NoAck && s.inflight > 0 && s.inflight+int64(w) > win {
		s.stats.WindowBlocked++
		return s.probe(now)
	}
	s.pace(now, w)

	p := Packet{
		Seq: seq, PSN: s.PSNOf(seq), Offset: m.offset + int64(seq-m.first)*int64(s.cfg.MSS),
		Payload: pay, WireBytes: w, First: seq == m.first, Last: seq == m.end-1, Window: win, INT: s.cfg.INT,
	}
	idx := seq - m.first + 1
	// Request an ACK every AckEvery packets, on a message's last packet,
	// and when this packet fills the window (the next full packet would not
	// fit): otherwise a window smaller than an ACK group would stall until
	// the retransmission timeout.
	full := s.inflight+int64(w)+int64(s.wireSize(s.cfg.MSS)) > s.alg.Window()
	p.AckReq = !s.cfg.NoAck && (p.Last || idx%uint64(s.cfg.AckEvery) == 0 || full)
	if p.AckReq {
		s.lastAReq = seq + 1
	}
	if seq < s.highSeq {
		p.Retransmit = true
		s.stats.Retransmits++
	} else {
		s.stats.PayloadSent += int64(pay)
		if s.una == s.highSeq {
			s.lastProgress = now // timer starts with the first packet in flight
		}
	}
	s.grow(seq)
	r := s.rec(seq)
	if !p.Retransmit {
		*r = sentRec{}
	}
	r.at, r.wire, r.pay, r.retx = now, int32(w), int32(pay), p.Retransmit
	s.nextSeq++
	s.highSeq = max(s.highSeq, s.nextSeq)
	s.stats.PacketsSent++
	s.stats.WireBytesSent += int64(w)
	if err := s.alg.OnSend(cc.Send{Now: now, Bytes: int64(w)}); err != nil {
		return Packet{}, false, fmt.Errorf("sender: %s send: %w", s.alg.Name(), err)
	}
	if s.cfg.NoAck {
		s.ackUpTo(now, s.nextSeq)
	} else {
		r.count = true
		s.inflight += int64(w)
	}
	return p, true, nil
}

// pace charges a departure of w bytes at now to the token bucket. Back-to-back
// gaps keep their fraction of a nanosecond (nextDep is the floor, depFrac the
// rest), so a flow paced at its rate gets exactly that rate: rounding each gap up
// would lose up to 1 ns a packet (0.5% of a 100 Gb/s link).
func (s *Sender) pace(now time.Duration, w int) {
	rate := s.alg.Rate()
	burst := max(PacingGap((s.wireSize(s.cfg.MSS)+s.cfg.LineGap)*s.cfg.BurstPackets, rate), s.cfg.BurstTime)
	base, frac := s.nextDep, s.depFrac
	if now-burst > base {
		base, frac = now-burst, 0
	}
	g := float64(w+s.cfg.LineGap)*8e9/rate + frac
	if math.IsInf(rate, 1) {
		g = 0
	}
	if limit := float64(MaxRTO) * 1e3; g >= limit {
		g = limit
	}
	whole := math.Floor(g)
	s.nextDep = base + time.Duration(whole)
	s.depFrac = g - whole
}

// probe handles a window-blocked sender whose newest packet did not
// request an ACK (the window shrank after it was sent, e.g. on a switch
// CNP): nothing would ever acknowledge the tail, so the newest packet is
// sent once more with the A bit. The receiver drops the duplicate and
// answers with a cumulative ACK. The probe is paced but not counted in
// flight (its bytes already are), and gives no RTT sample.
func (s *Sender) probe(now time.Duration) (Packet, bool, error) {
	if !s.needProbe() {
		return Packet{}, false, nil
	}
	seq := s.highSeq - 1
	r := s.rec(seq)
	m := s.msgOf(seq)
	s.pace(now, int(r.wire))
	r.retx = true
	s.probed = s.highSeq
	s.lastAReq = s.highSeq
	s.stats.AckProbes++
	s.stats.PacketsSent++
	s.stats.WireBytesSent += int64(r.wire)
	p := Packet{Seq: seq, PSN: s.PSNOf(seq), Offset: m.offset + int64(seq-m.first)*int64(s.cfg.MSS),
		Payload: int(r.pay), WireBytes: int(r.wire), AckReq: true, Retransmit: true,
		First: seq == m.first, Last: seq == m.end-1, Window: s.alg.Window(), Probe: true, INT: s.cfg.INT}
	if err := s.alg.OnSend(cc.Send{Now: now, Bytes: int64(r.wire)}); err != nil {
		return Packet{}, false, fmt.Errorf("sender: %s send: %w", s.alg.Name(), err)
	}
	return p, true, nil
}

func (s *Sender) needProbe() bool {
	return s.highSeq > s.una && s.lastAReq < s.highSeq && s.probed != s.highSeq && s.nextSeq == s.highSeq
}

// seqOfPSN maps an acknowledged PSN to the seq it names among the packets
// sent, i.e. in [una-1, highSeq): ok is false for a PSN outside.
func (s *Sender) seqOfPSN(psn uint32) (uint64, bool) {
	d := uint64((psn - s.PSNOf(s.una)) & wire.MaxPSN)
	if d >= 1<<23 { // behind una: old
		return 0, false
	}
	if s.una+d >= s.highSeq {
		return 0, false
	}
	return s.una + d, true
}

// ackUpTo acknowledges seqs [una, end) and returns the wire bytes acked.
func (s *Sender) ackUpTo(now time.Duration, end uint64) int64 {
	var wb int64
	for q := s.una; q < end; q++ {
		r := s.rec(q)
		if r.count {
			s.inflight -= int64(r.wire)
			r.count = false
		}
		wb += int64(r.wire)
		s.stats.PayloadAcked += int64(r.pay)
	}
	s.una = end
	if s.nextSeq < s.una {
		s.nextSeq = s.una
	}
	for len(s.msgs) > 0 && s.msgs[0].end <= s.una {
		m := s.msgs[0]
		size := m.bytes
		if s.cfg.PayloadFunc != nil && size == Unbounded {
			size = 0
		}
		s.done = append(s.done, MessageDone{Index: m.index, Bytes: size, Posted: m.posted, Done: now})
		s.stats.MessagesDone++
		s.msgs = s.msgs[1:]
	}
	return wb
}

// AckFeedback is what an ACK says about the path besides the PSN: the ECN
// echo and the INT records the receiver echoed, in path order (first
// switch first). Hops is passed to the algorithm and not kept.
type AckFeedback struct {
	ECE  bool
	Hops []cc.INTHop
}

// OnAck handles an RC ACK or NAK for psn (the AETH syndrome tells which).
// An ACK acknowledges every packet up to and including psn; a NAK with a
// PSN sequence error acknowledges the packets before psn and makes the
// sender go back to psn. Other NAKs are errors of the peer and are
// returned as ErrState.
func (s *Sender) OnAck(now time.Duration, psn uint32, syndrome uint8) error {
	return s.OnAckFeedback(now, psn, syndrome, AckFeedback{})
}

// OnAckFeedback is OnAck with the ACK's feedback for the algorithm (cc.Ack
// ECE and Hops): counted in ECEAcks and INTAcks.
func (s *Sender) OnAckFeedback(now time.Duration, psn uint32, syndrome uint8, fb AckFeedback) error {
	if err := s.checkTime("ack", now); err != nil {
		return err
	}
	if err := s.runTimers(now); err != nil {
		return err
	}
	aeth := wire.AETH{Syndrome: syndrome}
	switch {
	case aeth.IsACK():
		seq, ok := s.seqOfPSN(psn)
		if !ok || seq < s.una {
			s.stats.StaleAcks++
			return nil
		}
		var rtt time.Duration
		if r := s.rec(seq); !r.retx {
			rtt = max(now-r.at, 1) // 0 means "no sample" to host/cc
			s.stats.RTTSamples++
			if len(s.rtts) < 4096 {
				s.rtts = append(s.rtts, rtt)
			}
		}
		wb := s.ackUpTo(now, seq+1)
		s.stats.Acks++
		s.countFeedback(fb)
		s.progress(now)
		if s.nakActive && s.una > s.lastNAKSeq {
			s.nakActive = false
		}
		if err := s.alg.OnAck(cc.Ack{Now: now, Bytes: wb, RTT: rtt, ECE: fb.ECE, Hops: fb.Hops}); err != nil {
			return fmt.Errorf("sender: %s ack: %w", s.alg.Name(), err)
		}
		return nil
	case aeth.IsNAK() && syndrome == wire.SyndromeNAKPSNSequence:
		s.stats.Naks++
		// psn is the receiver's expected PSN: everything before it arrived.
		d := uint64((psn - s.PSNOf(s.una)) & wire.MaxPSN)
		if d >= 1<<23 || s.una+d > s.highSeq {
			s.stats.StaleAcks++
			return nil
		}
		seq := s.una + d
		wb := s.ackUpTo(now, seq)
		if wb > 0 {
			s.progress(now)
			s.countFeedback(fb)
			if err := s.alg.OnAck(cc.Ack{Now: now, Bytes: wb, ECE: fb.ECE, Hops: fb.Hops}); err != nil {
				return fmt.Errorf("sender: %s ack: %w", s.alg.Name(), err)
			}
		}
		if s.nakActive && s.lastNAKSeq == seq {
			return nil // the same episode: already going back
		}
		if seq < s.nextSeq {
			s.goBack(seq)
		}
		s.nakActive, s.lastNAKSeq = true, seq
		return nil
	default:
		return fmt.Errorf("sender: NAK syndrome %#02x for PSN %#x: %w", syndrome, psn, ErrState)
	}
}

func (s *Sender) countFeedback(fb AckFeedback) {
	if fb.ECE {
		s.stats.ECEAcks++
	}
	if len(fb.Hops) > 0 {
		s.stats.INTAcks++
	}
}

func (s *Sender) progress(now time.Duration) {
	s.lastProgress = now
	s.rto = s.cfg.RTO
}

// OnCNP feeds a CNP (ext is its decoded fastcnp extension, zero for a
// plain CNP) to the algorithm and counts it by origin.
func (s *Sender) OnCNP(now time.Duration, ext cc.CNPExt) error {
	if err := s.checkTime("cnp", now); err != nil {
		return err
	}
	if ext.BySwitch {
		s.stats.CNPSwitch++
		if ext.WindowValid && ext.Window > 0 {
			s.stats.LastCNPWindow = ext.Window
		}
	} else {
		s.stats.CNPNP++
	}
	if err := s.alg.OnCNP(cc.CNP{Now: now, Ext: ext}); err != nil {
		return fmt.Errorf("sender: %s cnp: %w", s.alg.Name(), err)
	}
	return nil
}

// NextWake returns when Next should be called again: the next departure if
// a packet is waiting for the pacer, the algorithm's timer, and the
// retransmission timeout, whichever is first; NoWake if none. A sender
// blocked by its window only needs an ACK (or the timeout).
func (s *Sender) NextWake() time.Duration {
	w := NoWake
	if s.held { // only the algorithm's timers run; Hold(false) ends it
		if t := s.alg.NextTimer(); t != cc.NoTimer {
			w = t
		}
		return w
	}
	if s.nextSeq < s.endSeq {
		blocked := !s.cfg.NoAck && s.inflight > 0 && s.inflight+int64(s.wireSize(s.cfg.MSS)) > s.alg.Window()
		if !blocked || s.needProbe() {
			w = s.nextDep
		}
	}
	if t := s.alg.NextTimer(); t != cc.NoTimer && t < w {
		w = t
	}
	if !s.cfg.NoAck && s.una < s.highSeq {
		w = min(w, s.lastProgress+s.rto)
	}
	return w
}

// Hold tells the sender whether the link holds its priority (a PFC or
// PAUSE frame received for it, see PauseGate), as a NIC's paused queue
// would: while held, Next sends nothing (probes included) but still runs
// the algorithm's timers, and the retransmission timer does not run; on
// release it does not count the held time (packets in flight wait in
// paused queues, they are not lost), and pacing resumes with at most the
// usual burst. Calls that do not change the state only advance the clock.
func (s *Sender) Hold(now time.Duration, held bool) error {
	if err := s.checkTime("hold", now); err != nil {
		return err
	}
	switch {
	case held && !s.held:
		s.held, s.heldFrom = true, now
		s.stats.Holds++
	case !held && s.held:
		s.held = false
		s.stats.Held += now - s.heldFrom
		if s.una < s.highSeq { // the timer was running: give it the held time back
			s.lastProgress += now - max(s.heldFrom, s.lastProgress)
		}
	}
	return nil
}

// Held reports whether the sender is held (see Hold).
func (s *Sender) Held() bool { return s.held }

// Stats returns the counters (Held includes a hold in progress, counted
// up to the latest event).
func (s *Sender) Stats() SenderStats {
	st := s.stats
	if s.held {
		st.Held += s.last - s.heldFrom
	}
	return st
}

// DrainDone returns the messages completed since the last call.
func (s *Sender) DrainDone() []MessageDone {
	d := s.done
	s.done = nil
	return d
}

// DrainRTT appends the RTT samples taken since the last call (at most 4096
// are kept between calls) to dst and returns it.
func (s *Sender) DrainRTT(dst []time.Duration) []time.Duration {
	dst = append(dst, s.rtts...)
	s.rtts = s.rtts[:0]
	return dst
}
