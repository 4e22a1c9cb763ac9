package live

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/fastcnp/fastcnp/host/agent"
	"github.com/fastcnp/fastcnp/host/cc"
)

// Record is one JSON line of the statistics stream. Type says which fields
// are present: "start" (first line: the agent's clock on the wall clock),
// "sample" (periodic, per flow), "message" (a message completed: its FCT),
// "summary" (per flow at the end of the run), "inc" (per INC message at the
// end), "agent" (receive counters at the end). docs/host-agent.md has the
// schema.
type Record struct {
	Type string  `json:"type"`
	T    float64 `json:"t_s"` // seconds since the agent started
	Flow string  `json:"flow,omitempty"`
	Role string  `json:"role,omitempty"` // "sender" or "receiver"

	// Wall clock (Unix ns, UTC), the clock the agents of one machine share.
	// "start" and "agent": EpochUnixNs is the wall time of t_s = 0, and
	// StartAtUnixNs the common start instant (--start-at) if one was set.
	// Sender "summary": StartUnixNs is when the flow was due to start (its
	// FCT counts from it), StartLateUs how much later the agent started it,
	// EndUnixNs when its last byte was acknowledged (done flows).
	EpochUnixNs   *int64   `json:"epoch_unix_ns,omitempty"`
	StartAtUnixNs *int64   `json:"start_at_unix_ns,omitempty"`
	StartUnixNs   *int64   `json:"start_unix_ns,omitempty"`
	EndUnixNs     *int64   `json:"end_unix_ns,omitempty"`
	StartLateUs   *float64 `json:"start_late_us,omitempty"`

	// sender
	RateBps       *float64     `json:"rate_bps,omitempty"`    // wire bits sent per second over the interval
	GoodputBps    *float64     `json:"goodput_bps,omitempty"` // payload bits acknowledged per second over the interval
	CCRateBps     *float64     `json:"cc_rate_bps,omitempty"` // the algorithm's pacing rate now
	WindowBytes   *int64       `json:"window_bytes,omitempty"`
	InflightBytes *int64       `json:"inflight_bytes,omitempty"`
	BytesSent     *int64       `json:"bytes_sent,omitempty"`     // wire bytes, retransmissions included
	PayloadSent   *int64       `json:"payload_sent,omitempty"`   // new payload bytes
	BytesAcked    *int64       `json:"bytes_acked,omitempty"`    // payload bytes acknowledged
	CNPSwitch     *uint64      `json:"cnp_switch,omitempty"`     // CNPs from a switch (fastcnp extension)
	CNPNP         *uint64      `json:"cnp_np,omitempty"`         // plain CNPs (receiver NP)
	ECEAcks       *uint64      `json:"ece_acks,omitempty"`       // ACKs with the ECN echo
	INTAcks       *uint64      `json:"int_acks,omitempty"`       // ACKs echoing INT records
	Retransmits   *uint64      `json:"retransmits,omitempty"`    // packets sent again
	Timeouts      *uint64      `json:"timeouts,omitempty"`       // retransmission timeouts
	Naks          *uint64      `json:"naks,omitempty"`           // NAKs received
	RTT           *RTTSummary  `json:"rtt,omitempty"`            // samples of the interval (sample) or run (summary)
	RTTSamplesUs  []float64    `json:"rtt_samples_us,omitempty"` // raw samples of the interval, first RTTPerSample
	FCTUs         *float64     `json:"fct_us,omitempty"`         // message / flow completion time
	Bytes         *int64       `json:"bytes,omitempty"`          // message size
	Index         *int         `json:"index,omitempty"`          // message index
	Done          *bool        `json:"done,omitempty"`
	PeakInflight  *int64       `json:"peak_inflight_bytes,omitempty"`
	MinWindow     *int64       `json:"min_window_bytes,omitempty"`
	SendWindowMax *int64       `json:"send_window_max_bytes,omitempty"` // largest window a packet of the interval was admitted under (-1: no cap, 0: no packet)
	PausedUs      *float64     `json:"paused_us,omitempty"`             // time a PFC pause of its priority held the sender, cumulative
	Holds         *uint64      `json:"holds,omitempty"`                 // pauses that held the sender (a refresh is the same pause)
	PauseRx       *uint64      `json:"pause_rx,omitempty"`              // PFC frames pausing the flow's priority the host received (XOFF, refreshes included), cumulative
	Pause         *PauseRecord `json:"pause,omitempty"`                 // the host's PFC counters (type "agent")
	Recv          *RecvRecord  `json:"recv,omitempty"`
	INC           *INCRecord   `json:"inc,omitempty"`
	// INCDupsSent counts an INC worker's injected duplicates sent (summary).
	INCDupsSent *uint64     `json:"inc_dups_sent,omitempty"`
	Agent       *RxCounters `json:"agent,omitempty"`
	Messages    []MsgRecord `json:"messages,omitempty"`
}

// RTTSummary summarises RTT samples in microseconds.
type RTTSummary struct {
	Count  int     `json:"count"`
	MinUs  float64 `json:"min_us"`
	MeanUs float64 `json:"mean_us"`
	P50Us  float64 `json:"p50_us"`
	P99Us  float64 `json:"p99_us"`
	MaxUs  float64 `json:"max_us"`
}

// RecvRecord holds a receiving flow's counters.
type RecvRecord struct {
	RateBps    float64 `json:"rate_bps"` // payload bits accepted per second over the interval
	Packets    uint64  `json:"packets"`
	Bytes      int64   `json:"bytes"` // payload bytes accepted in order
	Duplicates uint64  `json:"duplicates"`
	OutOfOrder uint64  `json:"out_of_order"`
	CE         uint64  `json:"ce"`
	CNPsSent   uint64  `json:"cnps_sent"`
	Acks       uint64  `json:"acks"`
	Naks       uint64  `json:"naks"`
	BadPayload uint64  `json:"bad_payload"` // accepted packets whose bytes are not the expected stream bytes
	// FirstUnixNs and LastUnixNs are the wall-clock arrival times of the
	// first and the last packet accepted (summary only; absent before any).
	FirstUnixNs int64 `json:"first_unix_ns,omitempty"`
	LastUnixNs  int64 `json:"last_unix_ns,omitempty"`
}

// INCRecord holds an INC checker's counters.
type INCRecord struct {
	Group      uint16 `json:"group"`
	Message    uint16 `json:"message"`
	Offsets    int    `json:"offsets"`
	Results    uint64 `json:"results"`
	Correct    uint64 `json:"correct"`
	Wrong      uint64 `json:"wrong"`
	Duplicates uint64 `json:"duplicates"`
	BadOffset  uint64 `json:"bad_offset"`
	Complete   bool   `json:"complete"`
	// FirstUnixNs and LastUnixNs are the wall-clock arrival times of the
	// message's first and last RESULT (absent before any).
	FirstUnixNs int64 `json:"first_unix_ns,omitempty"`
	LastUnixNs  int64 `json:"last_unix_ns,omitempty"`
}

// PauseRecord holds a host's counters of received PFC and PAUSE frames.
type PauseRecord struct {
	PFCFrames    uint64     `json:"pfc_frames"`   // 802.1Qbb PFC frames received
	PauseFrames  uint64     `json:"pause_frames"` // 802.3x PAUSE frames received
	XOFF         [8]uint64  `json:"xoff"`         // per priority: PFC frames pausing it (quanta > 0)
	XON          [8]uint64  `json:"xon"`          // per priority: PFC frames resuming it (quanta 0)
	XONIdle      [8]uint64  `json:"xon_idle"`     // per priority: XONs that found it not paused (expired, or frames reordered)
	PausedUs     [8]float64 `json:"paused_us"`    // per priority: time paused by PFC
	LinkPausedUs float64    `json:"link_paused_us"`
}

func pauseRecord(st agent.PauseStats) *PauseRecord {
	r := &PauseRecord{PFCFrames: st.PFCFrames, PauseFrames: st.PauseFrames, XOFF: st.XOFF, XON: st.XON, XONIdle: st.XONIdle,
		LinkPausedUs: float64(st.LinkPausedNs) / 1e3}
	for i, ns := range st.PausedNs {
		r.PausedUs[i] = float64(ns) / 1e3
	}
	return r
}

// MsgRecord is one completed message in a summary.
type MsgRecord struct {
	Index int     `json:"index"`
	Bytes int64   `json:"bytes"`
	FCTUs float64 `json:"fct_us"`
}

type jsonLines struct {
	mu  sync.Mutex
	enc *json.Encoder
	err error
}

func newJSONLines(w io.Writer) *jsonLines { return &jsonLines{enc: json.NewEncoder(w)} }

func (j *jsonLines) write(recs []Record) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for i := range recs {
		if j.err != nil {
			return j.err
		}
		j.err = j.enc.Encode(&recs[i])
	}
	return j.err
}

func ptr[T any](v T) *T { return &v }

// normWin writes "no cap" as -1.
func normWin(w int64) int64 {
	if w == cc.NoWindowCap {
		return -1
	}
	return w
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }

// Summarize returns the RTT summary of samples (nil when empty). samples
// is sorted in place.
func Summarize(samples []time.Duration) *RTTSummary {
	if len(samples) == 0 {
		return nil
	}
	slices.Sort(samples)
	var sum float64
	for _, s := range samples {
		sum += float64(s)
	}
	q := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(samples)))) - 1
		return us(samples[max(0, min(i, len(samples)-1))])
	}
	return &RTTSummary{Count: len(samples), MinUs: us(samples[0]), MeanUs: sum / float64(len(samples)) / 1e3,
		P50Us: q(0.5), P99Us: q(0.99), MaxUs: us(samples[len(samples)-1])}
}

// statsLoop writes one sample record per flow every StatsInterval.
func (a *Agent) statsLoop(ctx context.Context) {
	if a.enc == nil {
		return
	}
	tick := time.NewTicker(a.cfg.StatsInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		recs := a.sample()
		if err := a.enc.write(recs); err != nil {
			a.log.WithError(err).Error("statistics: write failed; no more samples")
			return
		}
	}
}

// sample builds the periodic records and the message completions.
func (a *Agent) sample() []Record {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	t := now.Seconds()
	var recs []Record
	ps := a.gate.Stats(now)
	for _, f := range a.flows {
		dt := (now - f.prevT).Seconds()
		if dt <= 0 {
			dt = math.SmallestNonzeroFloat64
		}
		if !f.send {
			st := f.rcv.Stats()
			rate := float64(st.Payload-f.prevRx) * 8 / dt
			f.prevRx, f.prevT = st.Payload, now
			recs = append(recs, Record{Type: "sample", T: t, Flow: f.cfg.Name, Role: "receiver", Recv: recvRecord(st, f.badData, rate)})
			continue
		}
		if !f.started {
			continue
		}
		f.collectRTT()
		for _, m := range f.snd.DrainDone() {
			f.msgs = append(f.msgs, m)
			recs = append(recs, Record{Type: "message", T: t, Flow: f.cfg.Name, Role: "sender",
				Index: ptr(m.Index), Bytes: ptr(m.Bytes), FCTUs: ptr(us(m.FCT()))})
		}
		if f.doneAt != 0 && f.reported {
			continue // nothing moves any more
		}
		st := f.snd.Stats()
		alg := f.snd.Algorithm()
		win := alg.Window()
		if win == cc.NoWindowCap {
			win = -1
		}
		r := Record{Type: "sample", T: t, Flow: f.cfg.Name, Role: "sender",
			RateBps:       ptr(float64(st.WireBytesSent-f.prevWire) * 8 / dt),
			GoodputBps:    ptr(float64(st.PayloadAcked-f.prevPay) * 8 / dt),
			CCRateBps:     ptr(alg.Rate()),
			WindowBytes:   ptr(win),
			InflightBytes: ptr(f.snd.Inflight()),
			PeakInflight:  ptr(f.intPeak),
			SendWindowMax: ptr(normWin(f.intWinMax)),
			BytesSent:     ptr(st.WireBytesSent), PayloadSent: ptr(st.PayloadSent), BytesAcked: ptr(st.PayloadAcked),
			CNPSwitch: ptr(st.CNPSwitch), CNPNP: ptr(st.CNPNP), Retransmits: ptr(st.Retransmits),
			ECEAcks: ptr(st.ECEAcks), INTAcks: ptr(st.INTAcks),
			Timeouts: ptr(st.Timeouts), Naks: ptr(st.Naks),
			PausedUs: ptr(us(st.Held)), Holds: ptr(st.Holds), PauseRx: ptr(ps.XOFF[f.path.Priority(agent.DataDSCP)]),
		}
		n := min(len(f.rttWin), a.cfg.RTTPerSample)
		for _, s := range f.rttWin[:n] {
			r.RTTSamplesUs = append(r.RTTSamplesUs, us(s))
		}
		r.RTT = Summarize(f.rttWin)
		f.rttWin = f.rttWin[:0]
		f.prevWire, f.prevPay, f.prevT = st.WireBytesSent, st.PayloadAcked, now
		f.intPeak, f.intWinMax = 0, 0
		if f.doneAt != 0 {
			f.reported = true
		}
		recs = append(recs, r)
	}
	return recs
}

func recvRecord(st agent.ReceiverStats, bad uint64, rate float64) *RecvRecord {
	return &RecvRecord{RateBps: rate, Packets: st.Packets, Bytes: st.Payload, Duplicates: st.Duplicates,
		OutOfOrder: st.OutOfOrder, CE: st.CE, CNPsSent: st.CNPs, Acks: st.Acks, Naks: st.Naks, BadPayload: bad}
}

// writeStart writes the "start" record: where the agent's clock sits on
// the wall clock.
func (a *Agent) writeStart() {
	if a.enc == nil {
		return
	}
	r := Record{Type: "start", EpochUnixNs: ptr(a.epoch.UnixNano())}
	if !a.cfg.StartAt.IsZero() {
		r.StartAtUnixNs = ptr(a.cfg.StartAt.UnixNano())
	}
	if err := a.enc.write([]Record{r}); err != nil {
		a.log.WithError(err).Error("statistics: write failed")
	}
}

// writeSummary writes the end-of-run records.
func (a *Agent) writeSummary() {
	if a.enc == nil {
		return
	}
	recs := a.sample()
	a.mu.Lock()
	now := a.now()
	t := now.Seconds()
	ps := a.gate.Stats(now)
	for _, f := range a.flows {
		if !f.send {
			st := f.rcv.Stats()
			dur := (st.Last - st.First).Seconds()
			rate := 0.0
			if dur > 0 {
				rate = float64(st.Payload) * 8 / dur
			}
			rr := recvRecord(st, f.badData, rate)
			if st.Packets > 0 {
				rr.FirstUnixNs, rr.LastUnixNs = a.wallNs(st.First), a.wallNs(st.Last)
			}
			recs = append(recs, Record{Type: "summary", T: t, Flow: f.cfg.Name, Role: "receiver", Recv: rr})
			continue
		}
		st := f.snd.Stats()
		win := f.snd.Algorithm().Window()
		if win == cc.NoWindowCap {
			win = -1
		}
		minw := f.minWindow
		if minw == cc.NoWindowCap {
			minw = -1
		}
		r := Record{Type: "summary", T: t, Flow: f.cfg.Name, Role: "sender", Done: ptr(f.done()),
			BytesSent: ptr(st.WireBytesSent), PayloadSent: ptr(st.PayloadSent), BytesAcked: ptr(st.PayloadAcked),
			CNPSwitch: ptr(st.CNPSwitch), CNPNP: ptr(st.CNPNP), Retransmits: ptr(st.Retransmits),
			ECEAcks: ptr(st.ECEAcks), INTAcks: ptr(st.INTAcks),
			Timeouts: ptr(st.Timeouts), Naks: ptr(st.Naks), WindowBytes: ptr(win),
			PeakInflight: ptr(f.peakInflight), MinWindow: ptr(minw),
			PausedUs: ptr(us(st.Held)), Holds: ptr(st.Holds), PauseRx: ptr(ps.XOFF[f.path.Priority(agent.DataDSCP)]),
			RTT: Summarize(slices.Clone(f.rtts))}
		r.StartUnixNs = ptr(a.wallNs(f.start))
		if f.started {
			r.StartLateUs = ptr(us(f.startedAt - f.start))
		}
		if f.doneAt != 0 {
			r.EndUnixNs = ptr(a.wallNs(f.doneAt))
			r.FCTUs = ptr(us(f.doneAt - f.start))
			if d := (f.doneAt - f.start).Seconds(); d > 0 {
				r.GoodputBps = ptr(float64(st.PayloadAcked) * 8 / d)
			}
		}
		for _, m := range f.msgs {
			r.Messages = append(r.Messages, MsgRecord{Index: m.Index, Bytes: m.Bytes, FCTUs: us(m.FCT())})
		}
		if f.inc != nil {
			r.INCDupsSent = ptr(f.dupsSent)
		}
		recs = append(recs, r)
	}
	for _, c := range a.checkers {
		p, s := c.Params(), c.Stats()
		ir := &INCRecord{Group: p.Group, Message: p.Message, Offsets: p.Offsets,
			Results: s.Results, Correct: s.Correct, Wrong: s.Wrong, Duplicates: s.Duplicates, BadOffset: s.BadOffset, Complete: c.Complete()}
		if tm := a.incTimes[c]; tm != nil {
			ir.FirstUnixNs, ir.LastUnixNs = a.wallNs(tm[0]), a.wallNs(tm[1])
		}
		recs = append(recs, Record{Type: "inc", T: t, INC: ir})
	}
	rx := a.rxStats
	recs = append(recs, Record{Type: "agent", T: t, Agent: &rx, Pause: pauseRecord(ps), EpochUnixNs: ptr(a.epoch.UnixNano())})
	a.mu.Unlock()
	if err := a.enc.write(recs); err != nil {
		a.log.WithError(err).Error("statistics: write summary failed")
	}
}
