package agent

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/wire"
)

const us = time.Microsecond

// stub is a cc.Algorithm with a fixed rate and window that records events.
type stub struct {
	rate   float64
	window int64
	sends  []cc.Send
	acks   []cc.Ack
	cnps   []cc.CNP
}

func (s *stub) Name() string                { return "stub" }
func (s *stub) OnSend(ev cc.Send) error     { s.sends = append(s.sends, ev); return nil }
func (s *stub) OnAck(ev cc.Ack) error       { s.acks = append(s.acks, ev); return nil }
func (s *stub) OnCNP(ev cc.CNP) error       { s.cnps = append(s.cnps, ev); return nil }
func (s *stub) OnTimer(time.Duration) error { return nil }
func (s *stub) Rate() float64               { return s.rate }
func (s *stub) Window() int64               { return s.window }
func (s *stub) NextTimer() time.Duration    { return cc.NoTimer }
func fast() *stub                           { return &stub{rate: math.Inf(1), window: cc.NoWindowCap} }
func mustSender(t *testing.T, c SenderConfig, a cc.Algorithm) *Sender {
	t.Helper()
	s, err := NewSender(c, a)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// drain calls Next at now until it returns nothing.
func drain(t *testing.T, s *Sender, now time.Duration) []Packet {
	t.Helper()
	var out []Packet
	for {
		p, ok, err := s.Next(now)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out
		}
		out = append(out, p)
	}
}

func TestPSNSequencing(t *testing.T) {
	s := mustSender(t, SenderConfig{MSS: 1000, StartPSN: 0xFFFFFE, AckEvery: 100}, fast())
	if err := s.Post(0, 4500); err != nil {
		t.Fatal(err)
	}
	ps := drain(t, s, 0)
	want := []struct {
		psn     uint32
		off     int64
		pay     int
		first   bool
		last    bool
		ackReq  bool
		wireLen int
	}{
		{0xFFFFFE, 0, 1000, true, false, false, 1058},
		{0xFFFFFF, 1000, 1000, false, false, false, 1058},
		{0x000000, 2000, 1000, false, false, false, 1058},
		{0x000001, 3000, 1000, false, false, false, 1058},
		{0x000002, 4000, 500, false, true, true, 558},
	}
	if len(ps) != len(want) {
		t.Fatalf("%d packets, want %d", len(ps), len(want))
	}
	for i, w := range want {
		p := ps[i]
		if p.Seq != uint64(i) || p.PSN != w.psn || p.Offset != w.off || p.Payload != w.pay || p.First != w.first ||
			p.Last != w.last || p.AckReq != w.ackReq || p.WireBytes != w.wireLen || p.Retransmit {
			t.Errorf("packet %d = %+v, want %+v", i, p, w)
		}
	}
	// The ACK of the last PSN (after the wrap) acknowledges everything.
	if err := s.OnAck(10*us, 2, wire.SyndromeACK); err != nil {
		t.Fatal(err)
	}
	if !s.Done() || s.Inflight() != 0 || s.Stats().PayloadAcked != 4500 {
		t.Fatalf("done %v inflight %d stats %+v", s.Done(), s.Inflight(), s.Stats())
	}
	d := s.DrainDone()
	if len(d) != 1 || d[0].Bytes != 4500 || d[0].FCT() != 10*us {
		t.Fatalf("messages done %+v", d)
	}
}

func TestAckRequestCoalescing(t *testing.T) {
	cases := []struct {
		name     string
		ackEvery int
		sizes    []int64
		window   int64
		want     []uint64 // seqs with the A bit
	}{
		{"every 4, one message", 4, []int64{10 * 100}, cc.NoWindowCap, []uint64{3, 7, 9}},
		{"every 1", 1, []int64{3 * 100}, cc.NoWindowCap, []uint64{0, 1, 2}},
		{"group restarts per message", 4, []int64{6 * 100, 5 * 100}, cc.NoWindowCap, []uint64{3, 5, 9, 10}},
		{"small message", 16, []int64{50, 50}, cc.NoWindowCap, []uint64{0, 1}},
		// Window of 3 full frames (158 B each): the third fills it.
		{"window closes the group", 16, []int64{3 * 100}, 3 * 158, []uint64{2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := mustSender(t, SenderConfig{MSS: 100, AckEvery: tc.ackEvery}, &stub{rate: math.Inf(1), window: tc.window})
			for _, sz := range tc.sizes {
				if err := s.Post(0, sz); err != nil {
					t.Fatal(err)
				}
			}
			var got []uint64
			for _, p := range drain(t, s, 0) {
				if p.AckReq {
					got = append(got, p.Seq)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("A bit on %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("A bit on %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestRTTSampling(t *testing.T) {
	alg := fast()
	s := mustSender(t, SenderConfig{MSS: 100, AckEvery: 2, RTO: time.Second}, alg)
	if err := s.Post(0, 600); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if _, ok, err := s.Next(time.Duration(i) * 10 * us); err != nil || !ok {
			t.Fatalf("send %d: %v %v", i, ok, err)
		}
	}
	steps := []struct {
		at      time.Duration
		psn     uint32
		wantRTT time.Duration // 0: no sample
		acked   int64         // wire bytes newly acknowledged
	}{
		{100 * us, 1, 100*us - 10*us, 2 * 158}, // seq 1 sent at 10us
		{105 * us, 1, 0, 0},                    // duplicate: stale, no event
		{130 * us, 3, 130*us - 30*us, 2 * 158}, // seq 3 sent at 30us
	}
	for _, st := range steps {
		n := len(alg.acks)
		if err := s.OnAck(st.at, st.psn, wire.SyndromeACK); err != nil {
			t.Fatal(err)
		}
		if st.acked == 0 {
			if len(alg.acks) != n {
				t.Fatalf("stale ACK at %v reached the algorithm", st.at)
			}
			continue
		}
		ev := alg.acks[len(alg.acks)-1]
		if ev.RTT != st.wantRTT || ev.Bytes != st.acked || ev.Now != st.at {
			t.Fatalf("ack at %v: event %+v, want RTT %v bytes %d", st.at, ev, st.wantRTT, st.acked)
		}
	}
	// Karn: after a timeout every outstanding packet is retransmitted; the
	// ACK of a retransmitted PSN gives no sample.
	now := 130*us + time.Second
	ps := drain(t, s, now)
	if len(ps) != 2 || !ps[0].Retransmit || ps[0].Seq != 4 || s.Stats().Timeouts != 1 {
		t.Fatalf("after RTO: %+v, stats %+v", ps, s.Stats())
	}
	if err := s.OnAck(now+50*us, 5, wire.SyndromeACK); err != nil {
		t.Fatal(err)
	}
	if ev := alg.acks[len(alg.acks)-1]; ev.RTT != 0 || ev.Bytes != 2*158 {
		t.Fatalf("ACK of a retransmission: %+v, want no RTT sample", ev)
	}
	if got := s.DrainRTT(nil); len(got) != 2 || got[0] != 90*us || got[1] != 100*us {
		t.Fatalf("RTT samples %v", got)
	}
	if s.Stats().RTTSamples != 2 {
		t.Fatalf("stats %+v", s.Stats())
	}
}

func TestWindowCapHonoured(t *testing.T) {
	const frame = 1082 // 1024 + 58
	cases := []struct {
		window   int64
		wantSent int
	}{
		{cc.NoWindowCap, 20},
		{10 * frame, 10},
		{10*frame - 1, 9},
		{frame, 1},
		{1, 1}, // below one packet: one packet is always allowed when nothing is in flight
	}
	for _, tc := range cases {
		alg := &stub{rate: math.Inf(1), window: tc.window}
		s := mustSender(t, SenderConfig{}, alg)
		if err := s.Post(0, 20*1024); err != nil {
			t.Fatal(err)
		}
		ps := drain(t, s, 0)
		if len(ps) != tc.wantSent {
			t.Errorf("window %d: sent %d, want %d", tc.window, len(ps), tc.wantSent)
		}
		if tc.window != cc.NoWindowCap && tc.window >= frame && s.Inflight() > tc.window {
			t.Errorf("window %d: inflight %d", tc.window, s.Inflight())
		}
		if tc.window != cc.NoWindowCap && s.NextWake() != NoWake-0 && s.NextWake() < s.cfg.RTO {
			t.Errorf("window-blocked sender wants a wake at %v before its RTO", s.NextWake())
		}
		// An ACK of the first packet opens room for exactly one more.
		if err := s.OnAck(time.Microsecond, ps[0].PSN, wire.SyndromeACK); err != nil {
			t.Fatal(err)
		}
		more := drain(t, s, time.Microsecond)
		if want := min(1, 20-tc.wantSent); tc.window != cc.NoWindowCap && len(more) != want {
			t.Errorf("window %d: after one ACK sent %d more, want %d", tc.window, len(more), want)
		}
	}
}

func TestPacingArithmetic(t *testing.T) {
	if g := PacingGap(1250, 1e9); g != 10*us {
		t.Errorf("1250 B at 1 Gb/s: %v, want 10us", g)
	}
	if g := PacingGap(1082, 400e6); g != 21640*time.Nanosecond {
		t.Errorf("1082 B at 400 Mb/s: %v, want 21.64us", g)
	}
	if g := PacingGap(1, 3e9); g != 3 { // 2.67 ns rounds up
		t.Errorf("1 B at 3 Gb/s: %v, want 3ns", g)
	}
	// 1 Gb/s, full frames of 1250 B (MSS 1192): gap 10us, bucket 2 frames.
	alg := &stub{rate: 1e9, window: cc.NoWindowCap}
	s := mustSender(t, SenderConfig{MSS: 1192, BurstPackets: 2}, alg)
	if err := s.Post(0, 100*1192); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		now  time.Duration
		sent int
		wake time.Duration
	}{
		// At 1ms (idle since 0): the bucket (20us) allows 1 + 2 frames.
		{time.Millisecond, 3, time.Millisecond + 10*us},
		{time.Millisecond + 5*us, 0, time.Millisecond + 10*us}, // too early
		{time.Millisecond + 10*us, 1, time.Millisecond + 20*us},
		// 35us late: the bucket caps the catch-up at 2 frames plus the due one.
		{time.Millisecond + 55*us, 3, time.Millisecond + 65*us},
	}
	for _, st := range steps {
		ps := drain(t, s, st.now)
		if len(ps) != st.sent || s.NextWake() != st.wake {
			t.Fatalf("at %v: sent %d (want %d), next wake %v (want %v)", st.now, len(ps), st.sent, s.NextWake(), st.wake)
		}
	}
	// Long-run rate: calls every 1us for 10ms send exactly 1000 frames
	// (+ the initial bucket), i.e. the paced rate.
	s = mustSender(t, SenderConfig{MSS: 1192, BurstPackets: 2}, alg)
	if err := s.Post(0, 5000*1192); err != nil {
		t.Fatal(err)
	}
	n := 0
	for now := time.Duration(0); now < 10*time.Millisecond; now += us {
		n += len(drain(t, s, now))
	}
	if n != 1000 {
		t.Errorf("10 ms at 1 Gb/s: %d frames of 1250 B, want 1000", n)
	}
	// A gap that is not a whole number of ns keeps its fraction: 1082 B at
	// 100 Gb/s is 86.56 ns. After the bucket's two frames at 1 ms (its depth
	// is one 87 ns gap, counted from 1 ms - 87 ns), departure k >= 1 comes at
	// 1 ms - 87 ns + floor(k * 86.56): +86, +172, +259, ..., the 1000th at
	// +86473 ns; rounding every gap up would put it at +86913.
	fine := &stub{rate: 100e9, window: cc.NoWindowCap}
	s = mustSender(t, SenderConfig{MSS: 1024, BurstPackets: 1}, fine)
	if err := s.Post(0, 2000*1024); err != nil {
		t.Fatal(err)
	}
	var deps []time.Duration
	for now := time.Millisecond; len(deps) < 1001; now++ {
		for range drain(t, s, now) {
			deps = append(deps, now-time.Millisecond)
		}
	}
	for _, k := range []int{2, 3, 4, 1000} {
		if want := time.Duration(math.Floor(float64(k)*86.56)) - 87; deps[k] != want || deps[1] != 0 {
			t.Errorf("departure %d at +%v, want +%v", k, deps[k], want)
		}
	}
	// BurstTime overrides a smaller packet bucket.
	s = mustSender(t, SenderConfig{MSS: 1192, BurstPackets: 1, BurstTime: 50 * us}, alg)
	if err := s.Post(0, 100*1192); err != nil {
		t.Fatal(err)
	}
	if ps := drain(t, s, time.Millisecond); len(ps) != 6 {
		t.Errorf("burst time 50us at 10us per frame: %d frames at once, want 6", len(ps))
	}
	// LineGap: pacing charges the frame plus the gap (1230 + 20 B = 10us at
	// 1 Gb/s); the window and the byte counters see the frame only.
	cases := []struct {
		gap    int
		frames int // sent in 10 ms, calls every 1us, after the first
	}{{0, 1016}, {20, 1000}}
	for _, tc := range cases {
		s = mustSender(t, SenderConfig{MSS: 1172, BurstPackets: 1, LineGap: tc.gap}, alg)
		if err := s.Post(0, 5000*1172); err != nil {
			t.Fatal(err)
		}
		drain(t, s, 0)
		n := 0
		for now := us; now <= 10*time.Millisecond; now += us {
			n += len(drain(t, s, now))
		}
		if n != tc.frames || s.Inflight() != int64(n+1)*1230 {
			t.Errorf("gap %d: %d frames in 10 ms (want %d), in flight %d", tc.gap, n, tc.frames, s.Inflight())
		}
	}
}

func TestGoBackN(t *testing.T) {
	t.Run("NAK", func(t *testing.T) {
		s := mustSender(t, SenderConfig{MSS: 100, AckEvery: 100, RTO: time.Second, StartPSN: 10}, fast())
		if err := s.Post(0, 1000); err != nil {
			t.Fatal(err)
		}
		drain(t, s, 0) // seqs 0..9, PSNs 10..19
		// The receiver got PSNs 10..13 and then a gap: NAK with ePSN 14.
		if err := s.OnAck(5*us, 14, wire.SyndromeNAKPSNSequence); err != nil {
			t.Fatal(err)
		}
		if st := s.Stats(); st.PayloadAcked != 400 || st.Naks != 1 {
			t.Fatalf("after NAK: %+v", st)
		}
		// A second NAK of the same episode changes nothing.
		if err := s.OnAck(6*us, 14, wire.SyndromeNAKPSNSequence); err != nil {
			t.Fatal(err)
		}
		ps := drain(t, s, 10*us)
		if len(ps) != 6 || ps[0].Seq != 4 || ps[0].PSN != 14 || !ps[0].Retransmit || !ps[5].Last || !ps[5].AckReq {
			t.Fatalf("retransmitted %+v", ps)
		}
		if s.Stats().Retransmits != 6 || s.Inflight() != 6*158 {
			t.Fatalf("stats %+v inflight %d", s.Stats(), s.Inflight())
		}
		if err := s.OnAck(20*us, 19, wire.SyndromeACK); err != nil {
			t.Fatal(err)
		}
		if !s.Done() {
			t.Fatal("not done")
		}
	})
	t.Run("timeout with backoff", func(t *testing.T) {
		s := mustSender(t, SenderConfig{MSS: 100, RTO: time.Millisecond}, fast())
		if err := s.Post(0, 300); err != nil {
			t.Fatal(err)
		}
		drain(t, s, 0)
		if w := s.NextWake(); w != time.Millisecond {
			t.Fatalf("RTO wake %v", w)
		}
		if ps := drain(t, s, time.Millisecond-1); len(ps) != 0 {
			t.Fatal("retransmitted before the RTO")
		}
		ps := drain(t, s, time.Millisecond)
		if len(ps) != 3 || ps[0].Seq != 0 || !ps[0].Retransmit {
			t.Fatalf("after RTO: %+v", ps)
		}
		if w := s.NextWake(); w != 3*time.Millisecond { // doubled
			t.Fatalf("backed-off RTO wake %v, want 3ms", w)
		}
		if err := s.OnAck(2*time.Millisecond, 2, wire.SyndromeACK); err != nil {
			t.Fatal(err)
		}
		if !s.Done() || s.Stats().Timeouts != 1 {
			t.Fatalf("stats %+v", s.Stats())
		}
	})
	t.Run("other NAK is an error", func(t *testing.T) {
		s := mustSender(t, SenderConfig{}, fast())
		if err := s.OnAck(0, 0, wire.SyndromeNAKRemoteAccess); !errors.Is(err, ErrState) {
			t.Fatalf("err %v", err)
		}
	})
}

func TestCNPFeeding(t *testing.T) {
	p, err := cc.DCQCNPreset("nvidia-cx")
	if err != nil {
		t.Fatal(err)
	}
	// Spec 01's window rule: the switch CNP also cuts the rate, and the
	// window stays capped until the first increase.
	alg, err := cc.New("dcqcn-fastcnp", cc.Config{LineRate: 1e9, BaseRTT: 100 * us, DCQCN: p, WindowRule: cc.WindowRuleSpec01})
	if err != nil {
		t.Fatal(err)
	}
	s := mustSender(t, SenderConfig{}, alg)
	if err := s.Post(0, 1<<20); err != nil {
		t.Fatal(err)
	}
	drain(t, s, 0)
	if s.Inflight() > 12500 || alg.Window() != 12500 {
		t.Fatalf("Winit: window %d, inflight %d", alg.Window(), s.Inflight())
	}
	ext := cc.CNPExt{WindowValid: true, BySwitch: true, Window: 3000}
	if err := s.OnCNP(10*us, ext); err != nil {
		t.Fatal(err)
	}
	if alg.Window() != 3000 || alg.Rate() >= 1e9 {
		t.Fatalf("after switch CNP: window %d rate %v", alg.Window(), alg.Rate())
	}
	if err := s.OnCNP(20*us, cc.CNPExt{}); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.CNPSwitch != 1 || st.CNPNP != 1 || st.LastCNPWindow != 3000 {
		t.Fatalf("stats %+v", st)
	}
	// Now the cap binds: after ACKs drain inflight, at most 3000 B go out.
	if err := s.OnAck(30*us, s.PSNOf(s.highSeq-1), wire.SyndromeACK); err != nil {
		t.Fatal(err)
	}
	drain(t, s, 130*us) // before the first increase (300us) restores Winit
	if s.Inflight() > 3000 {
		t.Fatalf("inflight %d above the switch window", s.Inflight())
	}
	if err := s.OnCNP(0, cc.CNPExt{}); !errors.Is(err, cc.ErrTimeBackwards) {
		t.Fatalf("time going back: %v", err)
	}
}

func TestNoAckStream(t *testing.T) {
	s := mustSender(t, SenderConfig{MSS: 68, NoAck: true, PayloadFunc: func(seq uint64) int { return INCPayload(seq == 0) }}, &stub{rate: math.Inf(1), window: 1})
	if err := s.Post(0, 5*68); err != nil {
		t.Fatal(err)
	}
	ps := drain(t, s, 0)
	if len(ps) != 5 || ps[0].Payload != 84 || ps[1].Payload != 68 || ps[4].AckReq || !s.Done() || s.Inflight() != 0 {
		t.Fatalf("packets %+v done %v", ps, s.Done())
	}
	if s.NextWake() != NoWake {
		t.Fatalf("wake %v", s.NextWake())
	}
}

func TestLongFlowStop(t *testing.T) {
	s := mustSender(t, SenderConfig{MSS: 100, AckEvery: 4}, &stub{rate: 8e6, window: cc.NoWindowCap}) // 158 B per 158us
	if err := s.Post(0, Unbounded); err != nil {
		t.Fatal(err)
	}
	if err := s.Post(0, 10); !errors.Is(err, ErrState) {
		t.Fatalf("post after unbounded: %v", err)
	}
	var sent []Packet
	for now := time.Duration(0); now < 1000*us; now += 10 * us {
		sent = append(sent, drain(t, s, now)...)
	}
	if err := s.Stop(1000 * us); err != nil {
		t.Fatal(err)
	}
	for now := 1000 * us; s.Pending(); now += 10 * us {
		sent = append(sent, drain(t, s, now)...)
	}
	last := sent[len(sent)-1]
	if len(sent)%4 != 0 || !last.Last || !last.AckReq {
		t.Fatalf("%d packets, last %+v: want a whole ACK group ending with A", len(sent), last)
	}
	if err := s.OnAck(2*time.Millisecond, last.PSN, wire.SyndromeACK); err != nil {
		t.Fatal(err)
	}
	if d := s.DrainDone(); !s.Done() || len(d) != 1 || d[0].Bytes != int64(len(sent))*100 {
		t.Fatalf("done %v %+v", s.Done(), d)
	}
}

func TestSenderConfigErrors(t *testing.T) {
	for _, c := range []SenderConfig{{MSS: -1}, {AckEvery: -1}, {RTO: -1}, {StartPSN: 1 << 24}, {BurstPackets: -2}, {MSS: 10000}} {
		if _, err := NewSender(c, fast()); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: err %v", c, err)
		}
	}
	if _, err := NewSender(SenderConfig{}, nil); !errors.Is(err, ErrConfig) {
		t.Error("nil algorithm accepted")
	}
	s := mustSender(t, SenderConfig{}, fast())
	for _, sz := range []int64{0, -5} {
		if err := s.Post(0, sz); !errors.Is(err, ErrConfig) {
			t.Errorf("size %d: %v", sz, err)
		}
	}
}

// TestLossyLoop runs a sender and a receiver against each other through a
// lossy, delaying in-memory link (both directions) and checks that go-back-N
// delivers every byte in order.
func TestLossyLoop(t *testing.T) {
	for _, loss := range []float64{0, 0.01, 0.1} {
		rng := rand.New(rand.NewPCG(1, uint64(loss*1000)))
		alg := &stub{rate: 1e9, window: 20 * 1082}
		s := mustSender(t, SenderConfig{RTO: 200 * us, StartPSN: 0xFFFF00}, alg)
		r, err := NewReceiver(ReceiverConfig{StartPSN: 0xFFFF00})
		if err != nil {
			t.Fatal(err)
		}
		const size = 300 * 1024
		if err := s.Post(0, size); err != nil {
			t.Fatal(err)
		}
		type inflight struct {
			at  time.Duration
			p   Packet
			rep Reply
			ack bool
		}
		var q []inflight
		var got int64
		now := time.Duration(0)
		for step := 0; !s.Done(); step++ {
			if step > 1e6 {
				t.Fatalf("loss %v: no progress, stats %+v", loss, s.Stats())
			}
			now += us
			for _, p := range drain(t, s, now) {
				if rng.Float64() >= loss {
					q = append(q, inflight{at: now + 10*us, p: p})
				}
			}
			var keep []inflight
			for _, e := range q {
				if e.at > now {
					keep = append(keep, e)
					continue
				}
				if e.ack {
					if err := s.OnAck(now, e.rep.AckPSN, e.rep.Syndrome); err != nil {
						t.Fatal(err)
					}
					continue
				}
				rep, err := r.OnData(Arrival{Now: now, PSN: e.p.PSN, AckReq: e.p.AckReq, Payload: e.p.Payload})
				if err != nil {
					t.Fatal(err)
				}
				if rep.Accept {
					if e.p.Offset != got {
						t.Fatalf("accepted offset %d, want %d", e.p.Offset, got)
					}
					got += int64(e.p.Payload)
				}
				if rep.Ack && rng.Float64() >= loss {
					keep = append(keep, inflight{at: now + 10*us, rep: rep, ack: true})
				}
			}
			q = keep
		}
		st := s.Stats()
		t.Logf("loss %.0f%%: %d packets, %d retransmits, %d NAKs, %d timeouts, finished at %v", loss*100, st.PacketsSent, st.Retransmits, st.Naks, st.Timeouts, now)
		if got != size || r.Stats().Payload != size {
			t.Fatalf("loss %v: delivered %d of %d", loss, got, size)
		}
		if loss == 0 && st.Retransmits != 0 {
			t.Fatalf("retransmits without loss: %+v", st)
		}
	}
}

// TestAckProbeAfterWindowShrinks: packets sent under a large window carry
// no A bit until their group ends; when the window then shrinks below what
// is in flight (a switch CNP), the sender re-sends its newest packet once
// with the A bit instead of stalling until the RTO, and the receiver's
// duplicate ACK acknowledges everything.
func TestAckProbeAfterWindowShrinks(t *testing.T) {
	alg := &stub{rate: math.Inf(1), window: cc.NoWindowCap}
	s := mustSender(t, SenderConfig{MSS: 100, AckEvery: 16, RTO: time.Second}, alg)
	r, _ := NewReceiver(ReceiverConfig{})
	if err := s.Post(0, 100*100); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ { // seqs 0..4, no A bit
		p, ok, err := s.Next(0)
		if err != nil || !ok || p.AckReq {
			t.Fatalf("send %d: %+v %v %v", i, p, ok, err)
		}
		if _, err := r.OnData(Arrival{PSN: p.PSN, AckReq: p.AckReq, Payload: p.Payload}); err != nil {
			t.Fatal(err)
		}
	}
	alg.window = 2 * 158 // the switch window: below the 5 packets in flight
	if w := s.NextWake(); w != 0 {
		t.Fatalf("blocked sender with an unrequested tail: wake %v, want now", w)
	}
	p, ok, err := s.Next(1)
	if err != nil || !ok || p.Seq != 4 || !p.AckReq || !p.Retransmit || !p.Probe {
		t.Fatalf("probe: %+v %v %v", p, ok, err)
	}
	if _, ok, _ := s.Next(2); ok {
		t.Fatal("second probe for the same tail")
	}
	rep, err := r.OnData(Arrival{PSN: p.PSN, AckReq: true, Payload: p.Payload})
	if err != nil || !rep.Ack || rep.AckPSN != 4 {
		t.Fatalf("receiver answer to the probe: %+v %v", rep, err)
	}
	if err := s.OnAck(3, rep.AckPSN, rep.Syndrome); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.AckProbes != 1 || st.PayloadAcked != 500 || s.Inflight() != 0 || st.RTTSamples != 0 {
		t.Fatalf("after the probe's ACK: %+v inflight %d", st, s.Inflight())
	}
}

// TestStopWhenAllAcked: stopping a long flow whose every packet is already
// acknowledged completes it at once.
func TestStopWhenAllAcked(t *testing.T) {
	s := mustSender(t, SenderConfig{MSS: 100, AckEvery: 2}, fast())
	if err := s.Post(0, Unbounded); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Next(0); err != nil {
		t.Fatal(err)
	}
	p, _, _ := s.Next(0)
	if !p.AckReq {
		t.Fatal("no A bit on the second packet")
	}
	if err := s.OnAck(1, p.PSN, wire.SyndromeACK); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(2); err != nil {
		t.Fatal(err)
	}
	if !s.Done() || s.Pending() {
		t.Fatalf("done %v pending %v stats %+v", s.Done(), s.Pending(), s.Stats())
	}
}

// TestAckEveryFor checks the ACK request interval per algorithm: one ACK
// per packet where the signal rides on ACKs, DefaultAckEvery for DCQCN
// (its signal is the CNP) and for names that are no algorithm.
func TestAckEveryFor(t *testing.T) {
	for _, tc := range []struct {
		algo string
		want int
	}{
		{"dcqcn", DefaultAckEvery},
		{"dcqcn-fastcnp", DefaultAckEvery},
		{"timely", 1},
		{"dctcp", 1},
		{"hpcc", 1},
		{"pid", 1},
		{"lstm-pid", 1},
		{"lstm-pid-rttch", 1},
		{"lstm-pid-rttch-win", 1},
		{"nope", DefaultAckEvery},
	} {
		if got := AckEveryFor(tc.algo); got != tc.want {
			t.Errorf("AckEveryFor(%q) = %d, want %d", tc.algo, got, tc.want)
		}
	}
}
