package tm

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// TestRandomOpsKeepInvariants drives the TM with random (also invalid) calls and checks
// the accounting after each one: what the queues hold is what the priority groups hold
// is what the buffer holds, every queue's bytes = enqueued - dequeued, no PG beyond its
// headroom, and invalid calls never panic.
func TestRandomOpsKeepInvariants(t *testing.T) {
	for _, sched := range []SchedulerMode{SchedStrict, SchedLosslessFirst, SchedLosslessFirstDWRR} {
		for _, thr := range []ThresholdMode{ThresholdDynamic, ThresholdStatic} {
			cfg := Config{
				Ports: ports(5, gbps, 500), BufferBytes: 80_000, Lossless: 1<<3 | 1<<6,
				Scheduler: sched, Threshold: thr, XoffBytes: 6000, PauseQuanta: 50, LossyAlpha: 2,
			}
			cfg.Ports[2].RateBps = 10 * gbps
			cfg.QueueCapBytes[1] = 5000
			m := mustNew(t, cfg, nil)
			rng := rand.New(rand.NewPCG(uint64(sched), uint64(thr)))
			now := int64(0)
			var evs []PFCEvent
			for step := range 20000 {
				now += rng.Int64N(3000)
				switch op := rng.IntN(10); {
				case op < 5:
					length, in, eg, pr := rng.IntN(1600)-10, rng.IntN(6)-1, rng.IntN(6)-1, rng.IntN(10)-1
					want, werr := m.Admits(length, in, eg, pr)
					r, err := m.Enqueue(step, length, in, eg, pr, now)
					if (werr != nil) != (err != nil && !errors.Is(err, ErrLosslessDrop)) || (werr == nil && want != r.Verdict) {
						t.Fatalf("step %d: Admits said %v (%v), Enqueue did %v (%v)", step, want, werr, r.Verdict, err)
					}
				case op < 8:
					_, _, _ = m.Dequeue(rng.IntN(6)-1, now)
				case op == 8:
					var q [8]uint16
					for i := range q {
						q[i] = uint16(rng.IntN(3) * 40)
					}
					_ = m.ReceivePFC(rng.IntN(6)-1, uint16(rng.IntN(1<<9)), q, now)
				default:
					switch rng.IntN(3) {
					case 0:
						_ = m.ReceivePause(rng.IntN(6)-1, uint16(rng.IntN(2)*30), now)
					case 1:
						evs = m.Advance(now, evs[:0])
					default:
						_, _ = m.SetInputHold(rng.IntN(6)-1, rng.IntN(2) == 0, now)
					}
				}
				checkInvariants(t, m, step)
			}
			s := m.Snapshot(now)
			holds := uint64(0)
			for _, p := range s.Ports {
				holds += p.InputHoldXoff
			}
			if s.TotalEnqueuedPkts == 0 || s.TotalDequeuedPkts == 0 || s.TotalPFCTxFrames == 0 || s.TotalPFCRxPauseXoff == 0 || holds == 0 {
				t.Fatalf("sched %d thr %d: the random run exercised too little: %+v", sched, thr, s)
			}
		}
	}
}

func checkInvariants(t *testing.T, m *TM[int], step int) {
	t.Helper()
	var queued, held, shared, hdrm int64
	for i := range m.ports {
		p := &m.ports[i]
		var portBytes int64
		for pr := range NumPriorities {
			q := &p.q[pr]
			if q.bytes != int64(q.enqBytes-q.deqBytes) || q.bytes < 0 || (q.f.n == 0) != (q.bytes == 0) {
				t.Fatalf("step %d: queue %d/%d bytes %d, enq %d deq %d, %d frames", step, i, pr, q.bytes, q.enqBytes, q.deqBytes, q.f.n)
			}
			portBytes += q.bytes
			g := &p.pg[pr]
			if g.shared < 0 || g.headroom < 0 || g.headroom > p.headroom {
				t.Fatalf("step %d: PG %d/%d shared %d headroom %d (reserved %d)", step, i, pr, g.shared, g.headroom, p.headroom)
			}
			held += g.shared + g.headroom
			shared += g.shared
			hdrm += g.headroom
			if g.xoff != (p.xoffMask&(1<<pr) != 0) || (g.xoff && !m.lossless(pr)) {
				t.Fatalf("step %d: PG %d/%d xoff %v, port mask %#x", step, i, pr, g.xoff, p.xoffMask)
			}
		}
		if portBytes != p.bytes {
			t.Fatalf("step %d: port %d bytes %d, queues hold %d", step, i, p.bytes, portBytes)
		}
		queued += portBytes
	}
	if queued != held || held != m.BufferUsed() || shared != m.sharedUsed || hdrm != m.headroomUsed || m.sharedUsed > m.sharedSize {
		t.Fatalf("step %d: queues %d, PGs %d (shared %d, headroom %d), buffer %d (shared %d/%d, headroom %d)",
			step, queued, held, shared, hdrm, m.BufferUsed(), m.sharedUsed, m.sharedSize, m.headroomUsed)
	}
}
