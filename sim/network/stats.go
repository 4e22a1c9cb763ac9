package network

import (
	"github.com/fastcnp/fastcnp/sim/engine"
	"github.com/fastcnp/fastcnp/sim/hpcc"
)

// classControl is the accounting class of PFC frames (MAC control has no priority);
// classes 0..7 are the priorities the switches give frames.
const classControl = 8

// NumClasses is the number of accounting classes: 8 priorities and control.
const NumClasses = 9

// ClassCount is frames and bytes.
type ClassCount struct {
	Frames uint64 `json:"frames"`
	Bytes  uint64 `json:"bytes"`
}

func (c *ClassCount) add(n int)   { c.Frames++; c.Bytes += uint64(n) }
func (c *ClassCount) sub(n int)   { c.Frames--; c.Bytes -= uint64(n) }
func (c ClassCount) IsZero() bool { return c.Frames == 0 && c.Bytes == 0 }

// Conservation is the byte and frame account of one class over the whole network:
// every frame put on a link by a host or made by a switch (CNP, PFC) is, at any
// time, delivered to a host, consumed by a switch (PFC), dropped, queued in a
// switch, or on a link: Sent = Delivered + Consumed + Dropped + Queued + OnWire.
type Conservation struct {
	Sent      ClassCount `json:"sent"`
	Delivered ClassCount `json:"delivered"`
	Consumed  ClassCount `json:"consumed"`
	Dropped   ClassCount `json:"dropped"`
	Queued    ClassCount `json:"queued"`
	OnWire    ClassCount `json:"on_wire"`
}

// Balanced reports whether the account closes.
func (c *Conservation) Balanced() bool {
	f := c.Delivered.Frames + c.Consumed.Frames + c.Dropped.Frames + c.Queued.Frames + c.OnWire.Frames
	b := c.Delivered.Bytes + c.Consumed.Bytes + c.Dropped.Bytes + c.Queued.Bytes + c.OnWire.Bytes
	return f == c.Sent.Frames && b == c.Sent.Bytes
}

type accounting struct {
	cls           [NumClasses]Conservation
	ConnTableFull uint64
}

func (a *accounting) made(c uint8, n int)      { a.cls[c].Sent.add(n) }
func (a *accounting) onWire(c uint8, n int)    { a.cls[c].OnWire.add(n) }
func (a *accounting) landed(c uint8, n int)    { a.cls[c].OnWire.sub(n) }
func (a *accounting) delivered(c uint8, n int) { a.cls[c].OnWire.sub(n); a.cls[c].Delivered.add(n) }
func (a *accounting) consumed(c uint8, n int)  { a.cls[c].Consumed.add(n) }
func (a *accounting) dropped(c uint8, n int)   { a.cls[c].Dropped.add(n) }
func (a *accounting) queue(c uint8, n int)     { a.cls[c].Queued.add(n) }
func (a *accounting) unqueue(c uint8, n int)   { a.cls[c].Queued.sub(n) }

// grew accounts n bytes a switch added to a queued frame (an INT record): they are
// sent (made) and queued, without a frame.
func (a *accounting) grew(c uint8, n int) {
	a.cls[c].Sent.Bytes += uint64(n)
	a.cls[c].Queued.Bytes += uint64(n)
}

// FlowStats is what one flow measured.
type FlowStats struct {
	Start        int64  `json:"start_ns"`
	FCTNs        int64  `json:"fct_ns"` // 0: not finished
	StandaloneNs int64  `json:"standalone_ns"`
	PacketsSent  uint64 `json:"packets_sent"`
	Retransmits  uint64 `json:"retransmits"`
	Timeouts     uint64 `json:"timeouts"`
	Naks         uint64 `json:"naks"`
	ECNMarks     uint64 `json:"ecn_marks"`          // its data packets CE-marked by switches
	SwitchCNPs   uint64 `json:"switch_cnps"`        // switch CNPs made for it
	NPCNPs       uint64 `json:"np_cnps"`            // CNPs its receiver's NP made
	SwitchCNPsRx uint64 `json:"switch_cnps_rx"`     // switch CNPs its sender received
	NPCNPsRx     uint64 `json:"np_cnps_rx"`         // NP CNPs its sender received
	ECEAcks      uint64 `json:"ece_acks,omitempty"` // ACKs with the ECN echo its sender received (finished flows)
	INTAcks      uint64 `json:"int_acks,omitempty"` // ACKs with INT records its sender received (finished flows)
	Delivered    int64  `json:"delivered_bytes"`    // payload accepted in order by the receiver
}

// PortStats are one switch port's counters.
type PortStats struct {
	TxFrames, TxBytes  uint64
	Drops              uint64 // frames the TM refused for this egress
	LosslessDrops      uint64 // of which in the lossless class (must be 0)
	IngressDrops       uint64 // frames the pipeline dropped on arrival here
	ECNMarks           uint64
	SwitchCNPs         uint64 // switch CNPs made for packets leaving here
	PFCXoffTx          uint64 // PFC frames sent out of this port
	PFCXonTx           uint64
	PFCRefreshTx       uint64
	PFCRx              uint64 // PFC frames received on this port
	Pauses             uint64 // port-state events (digests): PAUSE, and the RESUME outcomes
	ResumeNotCongested uint64
	ResumeCongested    uint64
	ResumeUndetermined uint64
	CheckDrained       uint64 // an undetermined port found drained / congested at check_at
	CheckCongested     uint64
	UndeterminedNs     int64 // time spent undetermined (closed episodes)
	QueueHighWater     int64 // lossless egress queue, bytes
	PausedNs           int64 // time the lossless egress queue was held by PFC received
}

// HostStats are one host's counters.
type HostStats struct {
	TxFrames, TxBytes uint64
	PFCRx             uint64
	Malformed, Stray  uint64
	BadINT            uint64 // ACKs whose echoed INT records name no link rate (not given to host/cc)
	PausedNs          int64  // time its data priority was held by PFC
}

// RTTSample is one RTT sample of a flow (spec 03: one packet timed at a time).
type RTTSample struct {
	AtNs  int64 `json:"at_ns"`
	RTTNs int64 `json:"rtt_ns"`
}

// RateSample is a flow's delivered payload at a time.
type RateSample struct {
	TimeNs    int64
	Flow      int
	Delivered int64
}

// SwitchResult is one switch's ports.
type SwitchResult struct {
	Node  int
	Ports []PortStats
}

// LosslessDrop is a frame of a lossless class that a switch's traffic manager
// refused (spec 06: there must be none): where and when, and the state of its
// ingress priority group and upstream then, which is what tells an undersized
// headroom from an upstream that kept sending while paused.
type LosslessDrop struct {
	AtNs        int64 `json:"at_ns"`
	Node        int   `json:"node"`
	IngressPort int   `json:"ingress_port"` // 1-based, as in pfc.txt
	EgressPort  int   `json:"egress_port"`
	Priority    int   `json:"priority"`
	FrameBytes  int   `json:"frame_bytes"` // as charged: its size on the wire
	// The ingress group's buffer: shared and headroom bytes held, the headroom
	// reserved, whether it is in XOFF.
	SharedBytes      int64 `json:"shared_bytes"`
	HeadroomBytes    int64 `json:"headroom_bytes"`
	HeadroomReserved int64 `json:"headroom_reserved"`
	Xoff             bool  `json:"xoff"`
	// The upstream (the node at the other end of the ingress link) and whether it
	// was held by PFC for this priority at the drop.
	Upstream       int  `json:"upstream"`
	UpstreamPaused bool `json:"upstream_paused"`
}

// maxLosslessDrops bounds Result.LosslessDrops (the counters count them all).
const maxLosslessDrops = 64

// FlowResult is one flow.
type FlowResult struct {
	ID    int
	Spec  hpcc.Flow
	SIP   uint32
	DIP   uint32
	SPort uint16
	FlowStats
	RTTs []RTTSample
}

// Result is the outcome of a run.
type Result struct {
	Mode          Mode
	EndNs         int64 // virtual time reached
	Events        uint64
	Finished      int // flows finished
	RTTBaseNs     int64
	Flows         []FlowResult
	Switches      []SwitchResult
	Hosts         []HostStats
	Classes       [NumClasses]Conservation
	PFC           []hpcc.PFC
	QueueSamples  []hpcc.QlenSample
	RateSamples   []RateSample
	ConnTableFull uint64
	// LosslessDrops are the first maxLosslessDrops lossless drops, in time order
	// (PortStats.LosslessDrops counts every one).
	LosslessDrops []LosslessDrop `json:",omitempty"`
	// INC is the INC part of the run (Config.INC), nil without.
	INC *INCResult `json:",omitempty"`
	// MaxBufferBytes is the largest buffer use of any switch.
	MaxBufferBytes int64
	// EventsByKind counts the events run: arrivals, switch transmit attempts, host
	// transmit attempts, switch timers, flow starts, samples.
	EventsByKind map[string]uint64
}

func (n *Network) result() *Result {
	r := &Result{Mode: n.cfg.Mode, EndNs: n.eng.Now(), Events: n.eng.Events(), Finished: n.finished,
		RTTBaseNs: int64(n.rttBase), Classes: n.acct.cls, PFC: n.pfcLog, QueueSamples: n.queueSamp,
		RateSamples: n.rateSamp, ConnTableFull: n.acct.ConnTableFull, LosslessDrops: n.llDrops, EventsByKind: map[string]uint64{}}
	for k, name := range []string{evArrive: "arrive", evSwitchTx: "switch-tx", evHostTx: "host-tx",
		evSwitchTimer: "switch-timer", evFlowStart: "flow-start", evSample: "sample", evINC: "inc"} {
		if name != "" && n.kindCount[k] > 0 {
			r.EventsByKind[name] = n.kindCount[k]
		}
	}
	for _, f := range n.flows {
		fs := f.stats
		fs.Delivered = f.delivered
		r.Flows = append(r.Flows, FlowResult{ID: f.id, Spec: f.spec, SIP: f.src.ip, DIP: f.dst.ip, SPort: f.sport, FlowStats: fs, RTTs: f.rtts})
	}
	for _, s := range n.switches {
		sr := SwitchResult{Node: s.node}
		snap := s.tm.Snapshot(r.EndNs)
		for p := range s.ports {
			st := s.ports[p].stats
			if s.ports[p].undet {
				st.UndeterminedNs += r.EndNs - s.ports[p].undetSince
			}
			q := &snap.Ports[p].Egress[losslessPriority]
			st.QueueHighWater, st.PausedNs = q.QueueHighWater, q.PausedNs
			sr.Ports = append(sr.Ports, st)
		}
		r.MaxBufferBytes = max(r.MaxBufferBytes, snap.Buffer.HighWater)
		r.Switches = append(r.Switches, sr)
	}
	r.INC = n.incResult()
	for _, h := range n.hosts {
		hs := h.stats
		ps := h.gate.Stats(dur(r.EndNs))
		hs.PausedNs = ps.PausedNs[losslessPriority]
		r.Hosts = append(r.Hosts, hs)
	}
	return r
}

// sample records the periodic samples and schedules the next.
func (n *Network) sample(now int64) {
	if n.cfg.QueueSampleNs > 0 && now%n.cfg.QueueSampleNs == 0 {
		for _, s := range n.switches {
			for p := range s.ports {
				b, _ := s.tm.QueueBytes(p, losslessPriority)
				n.queueSamp = append(n.queueSamp, hpcc.QlenSample{TimeNs: now, Node: s.node, IfIndex: p + 1, Bytes: b})
			}
		}
	}
	if n.cfg.RateSampleNs > 0 && now%n.cfg.RateSampleNs == 0 {
		for _, f := range n.flows {
			if f.started && (!f.done || f.finish > now-n.cfg.RateSampleNs) {
				n.rateSamp = append(n.rateSamp, RateSample{TimeNs: now, Flow: f.id, Delivered: f.delivered})
			}
		}
	}
	next := nextMultiple(now, n.cfg.QueueSampleNs, n.cfg.RateSampleNs)
	if next < engine.Never {
		n.schedule(engine.Event{At: next, Kind: evSample})
	}
}

// nextMultiple is the smallest time > now that is a multiple of a or b (> 0 ones).
func nextMultiple(now int64, periods ...int64) int64 {
	best := int64(engine.Never)
	for _, p := range periods {
		if p > 0 {
			best = min(best, (now/p+1)*p)
		}
	}
	return best
}

// FCTs returns the fct.txt records of the finished flows, in order of flow ID. The
// standalone column is this model's FCT of the flow on an idle network
// (FlowStats.StandaloneNs), so that a slowdown of 1 means "as fast as alone".
func (r *Result) FCTs() []hpcc.FCT {
	out := make([]hpcc.FCT, 0, r.Finished)
	for i := range r.Flows {
		f := &r.Flows[i]
		if f.FCTNs == 0 {
			continue
		}
		out = append(out, hpcc.FCT{SIP: f.SIP, DIP: f.DIP, SPort: f.SPort, DPort: f.Spec.DPort, Size: f.Spec.Size,
			StartNs: f.Spec.StartNs, FCTNs: f.FCTNs, StandaloneNs: f.StandaloneNs})
	}
	return out
}
