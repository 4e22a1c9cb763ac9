package tm

// QueueStats are the counters of one egress (port, priority) queue.
type QueueStats struct {
	// EnqueuedPkts/Bytes count accepted frames.
	EnqueuedPkts, EnqueuedBytes uint64
	// DequeuedPkts/Bytes count transmitted frames.
	DequeuedPkts, DequeuedBytes uint64
	// DroppedPkts/Bytes count every drop of frames headed here (lossy and lossless).
	DroppedPkts, DroppedBytes uint64
	// LosslessDroppedPkts/Bytes: the subset in a lossless class (must stay 0).
	LosslessDroppedPkts, LosslessDroppedBytes uint64
	// QueueBytes is the queue now; QueueHighWater its maximum so far.
	QueueBytes, QueueHighWater int64
	// PausedNs is the time this priority was held by received PFC frames.
	PausedNs int64
	// Paused: held by a received PFC at the snapshot's now.
	Paused bool
	// PFCRxXoff counts received PFC frames with quanta > 0 for this priority (refreshes
	// included); PFCRxXon those with quanta 0.
	PFCRxXoff, PFCRxXon uint64
}

// IngressStats are the buffer counters of one ingress (port, priority).
type IngressStats struct {
	ReceivedPkts, ReceivedBytes uint64 // accepted
	DroppedPkts, DroppedBytes   uint64 // refused (lossy or lossless)
	SharedBytes, HeadroomBytes  int64  // held now
	HighWater                   int64  // of shared+headroom
	HeadroomHighWater           int64  // of the headroom part
	HeadroomReserved            int64  // 0 for lossy priorities
	// Xoff: the group is in XOFF (it crossed XOFF and has not drained to XON): its
	// upstream is paused for this priority (by the group's XOFF, or by an input hold
	// that was there first: SetInputHold).
	Xoff bool
	// XoffNs is the time spent in XOFF.
	XoffNs int64
	// PFCTxXoff, PFCTxXon, PFCTxRefresh count the PFC frames sent for this priority.
	PFCTxXoff, PFCTxXon, PFCTxRefresh uint64
}

// PortStats are one port's counters.
type PortStats struct {
	RateBps     int64                       // link rate, b/s
	PropDelayNs int64                       // one-way delay, ns
	Bytes       int64                       // queued at this egress, all priorities
	Egress      [NumPriorities]QueueStats   // per egress queue
	Ingress     [NumPriorities]IngressStats // per priority group of this ingress
	// PFCTxFrames counts PFC frames sent out of this port (one may carry several classes).
	PFCTxFrames uint64
	// LinkPauseRx / LinkResumeRx: 802.3x PAUSE received with quanta > 0 / quanta 0.
	LinkPauseRx, LinkResumeRx uint64
	// LinkPausedNs is the time held by 802.3x PAUSE; LinkPaused: held now.
	LinkPausedNs int64
	LinkPaused   bool
	// InputHold: the port is under an input hold now (SetInputHold); InputHoldNs is
	// the time held, InputHolds the holds started, InputHoldXoff / InputHoldXon the
	// PFC frames a hold's start / end sent (its refreshes count in the groups'
	// PFCTxRefresh).
	InputHold                   bool
	InputHoldNs                 int64
	InputHolds                  uint64
	InputHoldXoff, InputHoldXon uint64
}

// BufferStats describe the shared buffer.
type BufferStats struct {
	SizeBytes         int64 // Config.BufferBytes
	SharedBytes       int64 // size of the shared pool
	HeadroomReserved  int64 // sum of the headroom reservations
	UsedBytes         int64 // shared + headroom in use
	HighWater         int64 // of UsedBytes
	SharedUsed        int64 // shared pool in use
	SharedHighWater   int64 // of SharedUsed
	HeadroomUsed      int64 // headroom in use, all PGs
	HeadroomHighWater int64 // of HeadroomUsed
	XoffThreshold     int64 // current (dynamic thresholds move)
	XonThreshold      int64 // current
}

// Snapshot is a copy of every counter, for a debug dump or P4Runtime counters.
type Snapshot struct {
	Now                 int64       // the snapshot's time
	Buffer              BufferStats // the shared buffer
	Ports               []PortStats // indexed by port
	LosslessDropPkts    uint64      // must stay 0
	LosslessDropBytes   uint64      // must stay 0
	TotalDroppedPkts    uint64      // all drops
	TotalEnqueuedPkts   uint64      // all accepted frames
	TotalDequeuedPkts   uint64      // all transmitted frames
	TotalPFCTxFrames    uint64      // PFC frames sent
	TotalPFCRxPauseXoff uint64      // PFC received with quanta > 0
}

// Snapshot copies the counters at now; open pause intervals are counted up to now.
// It allocates (one slice); it is not for the per-packet path.
func (t *TM[H]) Snapshot(now int64) Snapshot {
	s := Snapshot{
		Now: now,
		Buffer: BufferStats{
			SizeBytes:         t.cfg.BufferBytes,
			SharedBytes:       t.sharedSize,
			HeadroomReserved:  t.cfg.headroomTotal(),
			UsedBytes:         t.sharedUsed + t.headroomUsed,
			HighWater:         t.usedHW,
			SharedUsed:        t.sharedUsed,
			SharedHighWater:   t.sharedHW,
			HeadroomUsed:      t.headroomUsed,
			HeadroomHighWater: t.headroomHW,
			XoffThreshold:     t.XoffThreshold(),
			XonThreshold:      t.XonThreshold(),
		},
		Ports:             make([]PortStats, len(t.ports)),
		LosslessDropPkts:  t.losslessDropPkts,
		LosslessDropBytes: t.losslessDropBytes,
	}
	for i := range t.ports {
		p := &t.ports[i]
		ps := &s.Ports[i]
		ps.RateBps, ps.PropDelayNs, ps.Bytes = p.rate, p.delay, p.bytes
		ps.PFCTxFrames = p.pfcTxFrames
		ps.LinkPauseRx, ps.LinkResumeRx = p.rxLinkPause, p.rxLinkResume
		ps.LinkPausedNs = p.linkNs
		if p.linkPaused {
			ps.LinkPausedNs += min(now, p.linkUntil) - p.linkFrom
			ps.LinkPaused = p.linkUntil > now
		}
		s.TotalPFCTxFrames += p.pfcTxFrames
		ps.InputHold, ps.InputHoldNs, ps.InputHolds = p.hold, p.holdNs, p.holds
		ps.InputHoldXoff, ps.InputHoldXon = p.holdXoff, p.holdXon
		if p.hold {
			ps.InputHoldNs += now - p.holdSince
		}
		for pr := range NumPriorities {
			q := &p.q[pr]
			qs := &ps.Egress[pr]
			*qs = QueueStats{
				EnqueuedPkts: q.enqPkts, EnqueuedBytes: q.enqBytes,
				DequeuedPkts: q.deqPkts, DequeuedBytes: q.deqBytes,
				DroppedPkts: q.dropPkts, DroppedBytes: q.dropBytes,
				LosslessDroppedPkts: q.llDropPkts, LosslessDroppedBytes: q.llDropBts,
				QueueBytes: q.bytes, QueueHighWater: q.hw,
				PausedNs:  q.pausedNs,
				PFCRxXoff: q.rxXoff, PFCRxXon: q.rxXon,
			}
			if q.paused {
				qs.PausedNs += min(now, q.pausedUntil) - q.pausedFrom
				qs.Paused = q.pausedUntil > now
			}
			s.TotalEnqueuedPkts += q.enqPkts
			s.TotalDequeuedPkts += q.deqPkts
			s.TotalDroppedPkts += q.dropPkts
			s.TotalPFCRxPauseXoff += q.rxXoff

			g := &p.pg[pr]
			is := &ps.Ingress[pr]
			*is = IngressStats{
				ReceivedPkts: g.inPkts, ReceivedBytes: g.inBytes,
				DroppedPkts: g.dropPkts, DroppedBytes: g.dropBytes,
				SharedBytes: g.shared, HeadroomBytes: g.headroom,
				HighWater: g.hw, HeadroomHighWater: g.hdrmHW,
				Xoff: g.xoff, XoffNs: g.xoffNs,
				PFCTxXoff: g.txXoff, PFCTxXon: g.txXon, PFCTxRefresh: g.txRefresh,
			}
			if t.lossless(pr) {
				is.HeadroomReserved = p.headroom
			}
			if g.xoff {
				is.XoffNs += now - g.xoffSince
			}
		}
	}
	return s
}
