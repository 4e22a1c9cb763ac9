package agent

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestSenderInvariantsRandom drives a sender with random windows, ACKs
// (in order, duplicate, lost), NAKs and timeouts against a receiver, and
// checks after every step: bytes in flight equal the sum of the counted
// records, are never negative, and a packet is admitted only within the
// window it reports (or alone).
func TestSenderInvariantsRandom(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		alg := &stub{rate: 1e9, window: 20000}
		s := mustSender(t, SenderConfig{RTO: 300 * us, AckEvery: 1 + rng.IntN(20), StartPSN: uint32(rng.IntN(1 << 24))}, alg)
		r, _ := NewReceiver(ReceiverConfig{StartPSN: s.cfg.StartPSN})
		if err := s.Post(0, 400*1024); err != nil {
			t.Fatal(err)
		}
		type ev struct {
			at  time.Duration
			rep Reply
		}
		var acks []ev
		now := time.Duration(0)
		for step := 0; step < 20000 && !s.Done(); step++ {
			now += time.Duration(rng.IntN(5)) * us
			if rng.IntN(50) == 0 {
				alg.window = int64(500 + rng.IntN(40000))
			}
			p, ok, err := s.Next(now)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				if p.Window != alg.window {
					t.Fatalf("seed %d: packet window %d, algorithm %d", seed, p.Window, alg.window)
				}
				if !p.Probe {
					if s.inflight > p.Window && s.inflight > int64(p.WireBytes) {
						t.Fatalf("seed %d step %d: inflight %d after admitting %+v", seed, step, s.inflight, p)
					}
				}
				if rng.IntN(30) != 0 { // 3% loss
					rep, err := r.OnData(Arrival{Now: now, PSN: p.PSN, AckReq: p.AckReq, Payload: p.Payload})
					if err != nil {
						t.Fatal(err)
					}
					if rep.Ack && rng.IntN(30) != 0 {
						acks = append(acks, ev{now + time.Duration(5+rng.IntN(30))*us, rep})
					}
				}
			}
			var keep []ev
			for _, a := range acks {
				if a.at <= now {
					if err := s.OnAck(now, a.rep.AckPSN, a.rep.Syndrome); err != nil {
						t.Fatal(err)
					}
				} else {
					keep = append(keep, a)
				}
			}
			acks = keep
			var sum int64
			for q := s.una; q < s.highSeq; q++ {
				if rc := s.rec(q); rc.count {
					sum += int64(rc.wire)
				}
			}
			if sum != s.inflight || s.inflight < 0 {
				t.Fatalf("seed %d step %d: inflight %d, counted records %d", seed, step, s.inflight, sum)
			}
		}
	}
}
