package pipeline

import (
	"testing"

	"github.com/fastcnp/fastcnp/p4src"
)

const dataLen = 14 + 20 + 8 + 12 + 1000 + 4 // dataSR(1000) on the wire

func lastDigest(t *testing.T, r *IngressResult) Digest {
	t.Helper()
	if r.NumDigests != 1 {
		t.Fatalf("%d digests, want 1", r.NumDigests)
	}
	return r.Digests[0]
}

func TestPauseRefreshResumeNotCongested(t *testing.T) {
	p := newTest(t, p4src.PortModeFastcnp)
	// PAUSE, 100 quanta on the lossless priority: expire = 1000 + 100*5120/1000.
	r := ingress(t, p, pfcFrame(t, 1<<losslessPr, losslessPr, 100), portR, 1000)
	if r.Verdict != VerdictDrop || r.DropReason != DropPFC {
		t.Fatalf("PFC frame: verdict %d reason %d, want consumed", r.Verdict, r.DropReason)
	}
	if d := lastDigest(t, &r); d != (Digest{DigestID: p4src.DigestPortState, Port: portR, Event: p4src.PortEventPause, TimestampNs: 1000}) {
		t.Errorf("PAUSE digest %+v", d)
	}
	for _, c := range []struct {
		id   uint32
		want uint64
	}{{p4src.RegPortPaused, 1}, {p4src.RegPortPauseStart, 1000}, {p4src.RegPortPauseExpire, 1512}, {p4src.RegPortRxBytes, 0}} {
		if got := reg(t, p, c.id, portR); got != c.want {
			t.Errorf("register %#x = %d, want %d", c.id, got, c.want)
		}
	}
	if c := ctr(t, p, p4src.CounterPFCPauseRx, portR); c.Packets != 1 || c.Bytes != 60 {
		t.Errorf("pfc_pause_rx = %+v, want 1 packet of 60 bytes", c)
	}
	if c := ctr(t, p, p4src.CounterDropped, portR); c.Packets != 0 {
		t.Errorf("PFC frame counted in dropped")
	}
	// Refresh: only the expiry moves.
	r = ingress(t, p, pfcFrame(t, 1<<losslessPr, losslessPr, 200), portR, 1200)
	if r.NumDigests != 0 {
		t.Errorf("refresh made %d digests", r.NumDigests)
	}
	if s, e := reg(t, p, p4src.RegPortPauseStart, portR), reg(t, p, p4src.RegPortPauseExpire, portR); s != 1000 || e != 1200+1024 {
		t.Errorf("after refresh start %d expire %d, want 1000 2224", s, e)
	}
	// RESUME with an empty queue: not congested.
	r = ingress(t, p, pfcFrame(t, 1<<losslessPr, losslessPr, 0), portR, 2000)
	if d := lastDigest(t, &r); d.Event != p4src.PortEventResumeNotCongested || d.QueueBytes != 0 || d.TimestampNs != 2000 {
		t.Errorf("RESUME digest %+v", d)
	}
	if reg(t, p, p4src.RegPortPaused, portR) != 0 || reg(t, p, p4src.RegPortUndetermined, portR) != 0 {
		t.Error("still paused or undetermined after RESUME")
	}
	if c := ctr(t, p, p4src.CounterPFCResumeRx, portR); c.Packets != 1 {
		t.Errorf("pfc_resume_rx = %+v", c)
	}
	// A second RESUME while not paused is counted but changes nothing.
	r = ingress(t, p, pfcFrame(t, 1<<losslessPr, losslessPr, 0), portR, 2100)
	if r.NumDigests != 0 || ctr(t, p, p4src.CounterPFCResumeRx, portR).Packets != 2 {
		t.Errorf("RESUME while running: %d digests", r.NumDigests)
	}
}

func TestPFCOtherClassAndLinkPause(t *testing.T) {
	p := newTest(t, p4src.PortModeFastcnp)
	// Class-enable bit of another priority: nothing happens.
	r := ingress(t, p, pfcFrame(t, 1<<5, 5, 100), portR, 1000)
	if r.DropReason != DropPFC || reg(t, p, p4src.RegPortPaused, portR) != 0 || ctr(t, p, p4src.CounterPFCPauseRx, portR).Packets != 0 {
		t.Fatal("PFC for another class paused the port")
	}
	// 802.3x PAUSE pauses whatever the class.
	ingress(t, p, pauseFrame(t, 10), portR, 1000)
	if reg(t, p, p4src.RegPortPaused, portR) != 1 || reg(t, p, p4src.RegPortPauseExpire, portR) != 1000+51 {
		t.Fatalf("link PAUSE: paused %d expire %d", reg(t, p, p4src.RegPortPaused, portR), reg(t, p, p4src.RegPortPauseExpire, portR))
	}
	ingress(t, p, pauseFrame(t, 0), portR, 1010)
	if reg(t, p, p4src.RegPortPaused, portR) != 0 {
		t.Fatal("link PAUSE 0 did not resume")
	}
}

// pauseAndFill pauses port R at t=1000 and enqueues n data packets while paused.
func pauseAndFill(t *testing.T, p *Pipeline, n int) {
	t.Helper()
	ingress(t, p, pfcFrame(t, 1<<losslessPr, losslessPr, 0xFFFF), portR, 1000)
	for range n {
		through(t, p, dataSR(1000).build(t), portS, 1100)
	}
}

func TestResumeDecision(t *testing.T) {
	// 100 packets of 1058 bytes enqueued while paused: rx = queue = 105800 >= Qth.
	// Congested iff 105800 * 1e6 > 12.5e6 * T, i.e. T < 8464 ns.
	const rx = 100 * dataLen
	tests := []struct {
		name      string
		n         int
		resumeT   int64
		wantEvent uint8
		wantUndet uint64
	}{
		{"queue below Qth", 10, 5000, p4src.PortEventResumeNotCongested, 0},
		{"congested", 100, 5000, p4src.PortEventResumeCongested, 0},
		{"congested at T=8463", 100, 8463, p4src.PortEventResumeCongested, 0},
		{"equality is not congested", 100, 8464, p4src.PortEventResumeUndetermined, 1},
		{"undetermined", 100, 20000, p4src.PortEventResumeUndetermined, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newTest(t, p4src.PortModeFastcnp)
			pauseAndFill(t, p, tc.n)
			now := 1000 + tc.resumeT
			r := ingress(t, p, pfcFrame(t, 1<<losslessPr, losslessPr, 0), portR, now)
			d := lastDigest(t, &r)
			q := uint32(tc.n * dataLen)
			if d.Event != tc.wantEvent || d.QueueBytes != q || d.RxBytes != q {
				t.Errorf("digest %+v, want event %d queue=rx=%d", d, tc.wantEvent, q)
			}
			if got := reg(t, p, p4src.RegPortUndetermined, portR); got != tc.wantUndet {
				t.Errorf("undetermined = %d, want %d", got, tc.wantUndet)
			}
			if tc.wantUndet == 1 {
				if s, c := reg(t, p, p4src.RegPortQSnapshot, portR), reg(t, p, p4src.RegPortCheckAt, portR); s != rx || c != uint64(now+tcheck) {
					t.Errorf("snapshot %d check_at %d, want %d %d", s, c, rx, now+tcheck)
				}
			}
		})
	}
}

func TestRxBytesOnlyWhilePaused(t *testing.T) {
	p := newTest(t, p4src.PortModeFastcnp)
	through(t, p, dataSR(1000).build(t), portS, 500) // before the pause
	ingress(t, p, pfcFrame(t, 1<<losslessPr, losslessPr, 0xFFFF), portR, 1000)
	through(t, p, dataSR(1000).build(t), portS, 1100)
	through(t, p, dataSR(1000).build(t), portS, 1200)
	ingress(t, p, pfcFrame(t, 1<<losslessPr, losslessPr, 0), portR, 1300)
	through(t, p, dataSR(1000).build(t), portS, 1400) // after the resume
	if got := reg(t, p, p4src.RegPortRxBytes, portR); got != 2*dataLen {
		t.Errorf("rx_bytes = %d, want %d", got, 2*dataLen)
	}
	if got := reg(t, p, p4src.RegPortQueueBytes, portR); got != 4*dataLen {
		t.Errorf("queue_bytes = %d, want %d", got, 4*dataLen)
	}
	// A lossy packet is not accounted at all.
	lossy := dataSR(1000)
	lossy.dscp = 0
	_, m := through(t, p, lossy.build(t), portS, 1500)
	if m.Lossless || reg(t, p, p4src.RegPortQueueBytes, portR) != 4*dataLen {
		t.Error("lossy packet accounted")
	}
}

func TestPauseExpiryResumeInEgress(t *testing.T) {
	p := newTest(t, p4src.PortModeFastcnp)
	ingress(t, p, pfcFrame(t, 1<<losslessPr, losslessPr, 10), portR, 1000) // expire 1051
	f1, m1 := through(t, p, dataSR(1000).build(t), portS, 1010)
	f2, m2 := through(t, p, dataSR(1000).build(t), portS, 1020)
	if r := egress(t, p, f1, &m1, 1050); r.NumDigests != 0 || reg(t, p, p4src.RegPortPaused, portR) != 1 {
		t.Fatal("resumed before the pause expired")
	}
	r := egress(t, p, f2, &m2, 1051)
	// RESUME reads port_queue_bytes after this packet's dequeue: 0 < Qth.
	if r.NumDigests != 1 || r.Digests[0].Event != p4src.PortEventResumeNotCongested || r.Digests[0].QueueBytes != 0 || r.Digests[0].RxBytes != 2*dataLen {
		t.Fatalf("expiry digests %d %+v", r.NumDigests, r.Digests[0])
	}
	if reg(t, p, p4src.RegPortPaused, portR) != 0 {
		t.Fatal("not resumed at expiry")
	}
}

// setPortState writes the port registers of port R directly (P4Runtime register
// writes) to start a test in a given state.
func setPortState(t *testing.T, p *Pipeline, undet, snap, checkAt, queue uint64) {
	t.Helper()
	mustOK(t, p.WriteRegister(p4src.RegPortUndetermined, portR, undet))
	mustOK(t, p.WriteRegister(p4src.RegPortQSnapshot, portR, snap))
	mustOK(t, p.WriteRegister(p4src.RegPortCheckAt, portR, checkAt))
	mustOK(t, p.WriteRegister(p4src.RegPortQueueBytes, portR, queue))
}

func TestEgressStateMachine(t *testing.T) {
	const checkAt = 50_000
	tests := []struct {
		name              string
		undet, snap, q    uint64 // queue before the packet is enqueued
		now               int64
		wantCNP, wantMark bool
		wantEvent         uint8 // 0: no digest
		wantUndet         uint64
		wantSnap, wantAt  uint64
	}{
		{"determined congested", 0, 0, 150_000, 60_000, true, false, 0, 0, 0, checkAt},
		{"determined not congested", 0, 0, 50_000, 60_000, false, false, 0, 0, 0, checkAt},
		{"determined at Qth exactly", 0, 0, qth - dataLen, 60_000, true, false, 0, 0, 0, checkAt},
		{"undetermined before check_at", 1, 120_000, 150_000, checkAt - 1, false, false, 0, 1, 120_000, checkAt},
		{"check: drained", 1, 120_000, 0, checkAt, false, false, p4src.PortEventCheckDrained, 0, 120_000, checkAt},
		{"check: queue grew", 1, 120_000, 150_000, checkAt, true, false, p4src.PortEventCheckCongested, 0, 120_000, checkAt},
		{"check: re-arm", 1, 120_000, 110_000, checkAt + 5, false, false, 0, 1, 110_000 + dataLen, checkAt + 5 + tcheck},
		{"check: equal snapshot re-arms", 1, 110_000 + dataLen, 110_000, checkAt, false, false, 0, 1, 110_000 + dataLen, checkAt + tcheck},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newTest(t, p4src.PortModeFastcnp)
			setPortState(t, p, tc.undet, tc.snap, checkAt, tc.q)
			f, m := through(t, p, dataSR(1000).build(t), portS, tc.now-100)
			r := egress(t, p, f, &m, tc.now)
			if r.CNP != tc.wantCNP || r.Marked != tc.wantMark {
				t.Errorf("CNP %v marked %v, want %v %v", r.CNP, r.Marked, tc.wantCNP, tc.wantMark)
			}
			var ev uint8
			for _, d := range r.Digests[:r.NumDigests] {
				if d.DigestID == p4src.DigestPortState {
					ev = d.Event
					if d.QueueBytes != uint32(tc.q+dataLen) {
						t.Errorf("digest queue %d, want %d", d.QueueBytes, tc.q+dataLen)
					}
				}
			}
			if ev != tc.wantEvent {
				t.Errorf("event %d, want %d", ev, tc.wantEvent)
			}
			if u, s, a := reg(t, p, p4src.RegPortUndetermined, portR), reg(t, p, p4src.RegPortQSnapshot, portR), reg(t, p, p4src.RegPortCheckAt, portR); u != tc.wantUndet || s != tc.wantSnap || a != tc.wantAt {
				t.Errorf("state undet %d snap %d check_at %d, want %d %d %d", u, s, a, tc.wantUndet, tc.wantSnap, tc.wantAt)
			}
			if got := reg(t, p, p4src.RegPortQueueBytes, portR); got != tc.q {
				t.Errorf("queue after dequeue %d, want %d", got, tc.q)
			}
			if got := ctr(t, p, p4src.CounterSwitchCNPSent, portR).Packets; (got == 1) != tc.wantCNP {
				t.Errorf("switch_cnp_sent = %d", got)
			}
		})
	}
}
