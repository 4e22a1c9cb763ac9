package agent

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/wire"
)

// At 100 Mb/s one quantum (512 bit times) lasts 5.12 us.
const rate100M = 100e6

func mustGate(t *testing.T, rate float64) *PauseGate {
	t.Helper()
	g, err := NewPauseGate(rate)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestPauseGateTrace drives the gate through hand-computed traces: each
// step applies a frame (or nothing) at a time and checks when priorities
// 3 and 6 may send and the paused times so far.
func TestPauseGateTrace(t *testing.T) {
	type step struct {
		at      time.Duration
		frame   string // "pfc", "pause" or "" (only check)
		enable  uint16
		quanta  [8]uint16 // PFC; quanta[0] is the PAUSE time for "pause"
		until3  time.Duration
		until6  time.Duration
		paused3 time.Duration // PausedNs[3] at `at`
		link    time.Duration // LinkPausedNs at `at`
	}
	q3 := func(n uint16) [8]uint16 { var q [8]uint16; q[3] = n; return q }
	cases := []struct {
		name  string
		steps []step
		xoff3 uint64
		xon3  uint64
		idle3 uint64 // XONs that found priority 3 not paused
	}{
		{"expires on its own", []step{
			// 1000 quanta = 5.12 ms at 100 Mb/s.
			{at: 0, frame: "pfc", enable: 1 << 3, quanta: q3(1000), until3: 5120 * us, until6: 0},
			{at: 1000 * us, until3: 5120 * us, until6: 1000 * us, paused3: 1000 * us},
			{at: 9000 * us, until3: 9000 * us, until6: 9000 * us, paused3: 5120 * us},
			// An XON after the expiry finds nothing paused.
			{at: 9500 * us, frame: "pfc", enable: 1 << 3, quanta: q3(0), until3: 9500 * us, until6: 9500 * us, paused3: 5120 * us},
		}, 1, 1, 1},
		{"refresh replaces the time left", []step{
			{at: 0, frame: "pfc", enable: 1 << 3, quanta: q3(1000), until3: 5120 * us, until6: 0},
			{at: 4000 * us, frame: "pfc", enable: 1 << 3, quanta: q3(100), until3: 4512 * us, until6: 4000 * us, paused3: 4000 * us},
			{at: 6000 * us, until3: 6000 * us, until6: 6000 * us, paused3: 4512 * us},
		}, 2, 0, 0},
		{"XON resumes at once", []step{
			{at: 10 * us, frame: "pfc", enable: 1 << 3, quanta: q3(0xFFFF), until3: 10*us + 335539200, until6: 10 * us},
			{at: 2010 * us, frame: "pfc", enable: 1 << 3, quanta: q3(0), until3: 2010 * us, until6: 2010 * us, paused3: 2000 * us},
			{at: 3000 * us, until3: 3000 * us, until6: 3000 * us, paused3: 2000 * us},
		}, 1, 1, 0},
		{"class-enable bit off: its time is ignored", []step{
			{at: 0, frame: "pfc", enable: 1 << 6, quanta: q3(1000), until3: 0, until6: 0},
		}, 0, 0, 0},
		{"only the enabled priorities", []step{
			{at: 0, frame: "pfc", enable: 1<<3 | 1<<6, quanta: [8]uint16{3: 10, 6: 20}, until3: 51200, until6: 102400},
			{at: 60 * us, until3: 60 * us, until6: 102400, paused3: 51200},
		}, 1, 0, 0},
		{"reserved class-enable bits are ignored", []step{
			{at: 0, frame: "pfc", enable: 0xFF00, quanta: q3(1000), until3: 0, until6: 0},
		}, 0, 0, 0},
		{"802.3x PAUSE holds every priority, apart from PFC", []step{
			{at: 0, frame: "pause", quanta: [8]uint16{0: 200}, until3: 1024 * us, until6: 1024 * us},
			{at: 100 * us, frame: "pfc", enable: 1 << 3, quanta: q3(0), until3: 1024 * us, until6: 1024 * us, link: 100 * us},
			{at: 500 * us, frame: "pause", quanta: [8]uint16{}, until3: 500 * us, until6: 500 * us, link: 500 * us},
		}, 0, 1, 1},
		{"XON of an idle priority changes nothing", []step{
			{at: 5 * us, frame: "pfc", enable: 1 << 3, quanta: q3(0), until3: 5 * us, until6: 5 * us},
		}, 0, 1, 1},
		// A peer's XON then XOFF delivered the other way round: the XOFF
		// refreshes, the late XON resumes while the peer is in XOFF.
		{"reordered XOFF and XON", []step{
			{at: 0, frame: "pfc", enable: 1 << 3, quanta: q3(1000), until3: 5120 * us, until6: 0},
			{at: 100 * us, frame: "pfc", enable: 1 << 3, quanta: q3(1000), until3: 5220 * us, until6: 100 * us, paused3: 100 * us},
			{at: 101 * us, frame: "pfc", enable: 1 << 3, quanta: q3(0), until3: 101 * us, until6: 101 * us, paused3: 101 * us},
		}, 2, 1, 0},
		{"an older time counts as the latest", []step{
			{at: 1000 * us, frame: "pfc", enable: 1 << 3, quanta: q3(100), until3: 1512 * us, until6: 1000 * us},
			{at: 900 * us, until3: 1512 * us, until6: 1000 * us},
		}, 1, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := mustGate(t, rate100M)
			for i, s := range tc.steps {
				switch s.frame {
				case "pfc":
					g.OnPFC(s.at, s.enable, s.quanta)
				case "pause":
					g.OnPause(s.at, s.quanta[0])
				}
				if u := g.Until(DataPriority, s.at); u != s.until3 {
					t.Errorf("step %d: priority 3 until %v, want %v", i, u, s.until3)
				}
				if u := g.Until(CNPPriority, s.at); u != s.until6 {
					t.Errorf("step %d: priority 6 until %v, want %v", i, u, s.until6)
				}
				now := max(s.at, g.last)
				if p := g.Paused(DataPriority, s.at); p != (s.until3 > now) {
					t.Errorf("step %d: Paused(3) = %v, until %v", i, p, s.until3)
				}
				st := g.Stats(s.at)
				if time.Duration(st.PausedNs[3]) != s.paused3 || time.Duration(st.LinkPausedNs) != s.link {
					t.Errorf("step %d: paused %v, link %v; want %v, %v", i, time.Duration(st.PausedNs[3]), time.Duration(st.LinkPausedNs), s.paused3, s.link)
				}
			}
			st := g.Stats(0)
			if st.XOFF[3] != tc.xoff3 || st.XON[3] != tc.xon3 || st.XONIdle[3] != tc.idle3 {
				t.Errorf("XOFF %d XON %d idle XON %d, want %d %d %d", st.XOFF[3], st.XON[3], st.XONIdle[3], tc.xoff3, tc.xon3, tc.idle3)
			}
		})
	}
}

// TestPauseGateDurationMatchesSwitch: the host's pause time is the
// switch traffic manager's formula (quanta x 512 bit times, rounded up).
func TestPauseGateDurationMatchesSwitch(t *testing.T) {
	cases := []struct {
		rate   float64
		quanta uint16
		want   time.Duration
	}{
		{100e6, 1, 5120},
		{100e6, 0xFFFF, 335539200},
		{1e9, 3, 1536},
		{25e9, 1, 21},    // 20.48 ns, rounded up
		{3e6, 1, 170667}, // 170666.67 ns, rounded up
		{100e6, 0, 0},
	}
	for _, tc := range cases {
		if d := mustGate(t, tc.rate).PauseDuration(tc.quanta); d != tc.want {
			t.Errorf("%v b/s, %d quanta: %v, want %v", tc.rate, tc.quanta, d, tc.want)
		}
	}
	for _, bad := range []float64{0, -1, math.NaN(), math.Inf(1), 0.5} {
		if _, err := NewPauseGate(bad); !errors.Is(err, ErrConfig) {
			t.Errorf("NewPauseGate(%v) = %v, want ErrConfig", bad, err)
		}
	}
}

// TestPauseGateOnFrame feeds frames built and parsed by package wire.
func TestPauseGateOnFrame(t *testing.T) {
	src := wire.MAC{2, 0xfc, 0, 1, 0, 1}
	build := func(kind string) []byte {
		b := make([]byte, 64)
		var n int
		var err error
		switch kind {
		case "pfc":
			n, err = wire.BuildPFC(b, src, 1<<3, [8]uint16{3: 2000})
		case "xon":
			n, err = wire.BuildPFCXON(b, src, 1<<3)
		case "pause":
			n, err = wire.BuildPause(b, src, 10)
		case "data":
			var p Path
			p.SrcMAC, p.DstMAC, p.SrcIP, p.DstIP = src, src, wire.Addr4{10, 0, 0, 1}, wire.Addr4{10, 0, 0, 2}
			b = make([]byte, 1500)
			n, err = p.BuildData(b, 0x100, &Packet{Payload: 100})
		}
		if err != nil {
			t.Fatal(err)
		}
		return b[:n]
	}
	cases := []struct {
		kind   string
		isCtl  bool
		until3 time.Duration
	}{
		{"pfc", true, 2000 * 5120},
		{"xon", true, 0},
		{"pause", true, 51200},
		{"data", false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			g := mustGate(t, rate100M)
			var f wire.Frame
			if err := wire.Parse(build(tc.kind), wire.ParseOptions{}, &f); err != nil {
				t.Fatal(err)
			}
			if got := g.OnFrame(0, &f); got != tc.isCtl {
				t.Fatalf("OnFrame = %v, want %v", got, tc.isCtl)
			}
			if u := g.Until(DataPriority, 0); u != tc.until3 {
				t.Errorf("until %v, want %v", u, tc.until3)
			}
		})
	}
}

// TestPrioritiesMatchSwitchDefaults: the priorities the agent gates its
// frames by are the ones the switch classifies them into.
func TestPrioritiesMatchSwitchDefaults(t *testing.T) {
	m := config.DefaultDSCPPriority()
	cases := []struct {
		dscp uint8
		want uint8
	}{{DataDSCP, DataPriority}, {CNPDSCP, CNPPriority}}
	for _, tc := range cases {
		if m[tc.dscp] != tc.want || PriorityOfDSCP(tc.dscp) != tc.want {
			t.Errorf("DSCP %d: switch default %d, agent %d, want %d", tc.dscp, m[tc.dscp], PriorityOfDSCP(tc.dscp), tc.want)
		}
	}
	if DataPriority != config.DefaultLosslessPriority {
		t.Errorf("data priority %d, the switch's lossless priority %d", DataPriority, config.DefaultLosslessPriority)
	}
	p := Path{VLAN: true, PCP: 5}
	if p.Priority(DataDSCP) != 5 {
		t.Errorf("tagged path: priority %d, want its PCP 5", p.Priority(DataDSCP))
	}
}

// TestSenderHold checks the sender under a link hold: nothing is sent,
// the algorithm's timers still run, the retransmission timer neither
// fires nor counts the held time, and pacing resumes without a burst
// larger than the bucket.
func TestSenderHold(t *testing.T) {
	const rto = 1000 * us
	cases := []struct {
		name      string
		holdFrom  time.Duration
		holdTo    time.Duration
		ackDuring bool          // an ACK of the first packet arrives during the hold
		wantRTOAt time.Duration // when the timer fires after the hold (no ACK of the rest)
	}{
		// First sent at 0, timer due at 1000; held 300..5300 (5000 us): due at 6000.
		{"hold longer than the RTO", 300 * us, 5300 * us, false, 6000 * us},
		// Held 500..700: due at 1200.
		{"short hold", 500 * us, 700 * us, false, 1200 * us},
		// Progress (the first packet's ACK) at 400 during a hold from 300 to
		// 900: only the held time after the progress is given back, due at
		// 400 + 1000 + 500.
		{"progress during the hold", 300 * us, 900 * us, true, 1900 * us},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := &stub{rate: 8e6, window: cc.NoWindowCap} // 1 byte/us
			s := mustSender(t, SenderConfig{MSS: 100, Overhead: 100, AckEvery: 1, BurstPackets: 1, RTO: rto}, a)
			if err := s.Post(0, 100*100); err != nil {
				t.Fatal(err)
			}
			// 200-byte frames at 1 byte/us: one every 200 us.
			for _, at := range []time.Duration{0, 200 * us} {
				if got := len(drain(t, s, at)); got != 1 {
					t.Fatalf("%d packets at %v, want 1", got, at)
				}
			}
			if err := s.Hold(tc.holdFrom, true); err != nil {
				t.Fatal(err)
			}
			if !s.Held() || s.NextWake() != NoWake {
				t.Fatalf("held %v, next wake %v (want NoWake)", s.Held(), s.NextWake())
			}
			for at := tc.holdFrom; at < tc.holdTo; at += 100 * us {
				if tc.ackDuring && at == tc.holdFrom+100*us {
					if err := s.OnAck(at, s.PSNOf(0), wire.SyndromeACK); err != nil {
						t.Fatal(err)
					}
				}
				if ps := drain(t, s, at); len(ps) != 0 {
					t.Fatalf("sent %d packets at %v while held", len(ps), at)
				}
			}
			if st := s.Stats(); st.Timeouts != 0 {
				t.Fatalf("%d timeouts during the hold", st.Timeouts)
			}
			if err := s.Hold(tc.holdTo, false); err != nil {
				t.Fatal(err)
			}
			// Resume: one bucket of packets, then the pacer.
			if got := len(drain(t, s, tc.holdTo)); got != 2 {
				t.Fatalf("%d packets on release, want 2 (a full bucket)", got)
			}
			st := s.Stats()
			if st.Holds != 1 || st.Held != tc.holdTo-tc.holdFrom {
				t.Fatalf("holds %d held %v, want 1, %v", st.Holds, st.Held, tc.holdTo-tc.holdFrom)
			}
			// The timer: not yet just before, fired at wantRTOAt.
			_, _, _ = s.Next(tc.wantRTOAt - 1)
			if s.Stats().Timeouts != 0 {
				t.Fatalf("timeout before %v", tc.wantRTOAt)
			}
			_, _, _ = s.Next(tc.wantRTOAt)
			if s.Stats().Timeouts != 1 {
				t.Fatalf("no timeout at %v", tc.wantRTOAt)
			}
		})
	}
}

// TestSenderHoldRunsAlgorithmTimers: DCQCN's timers keep running while
// the link holds the sender (a real NIC's rate-increase timer does).
func TestSenderHoldRunsAlgorithmTimers(t *testing.T) {
	p, err := cc.DCQCNPreset("nvidia-cx")
	if err != nil {
		t.Fatal(err)
	}
	alg, err := cc.New("dcqcn", cc.Config{LineRate: 100e6, BaseRTT: time.Millisecond, MTU: 1500, DCQCN: p})
	if err != nil {
		t.Fatal(err)
	}
	s := mustSender(t, SenderConfig{}, alg)
	if err := s.Post(0, Unbounded); err != nil {
		t.Fatal(err)
	}
	drain(t, s, 0)
	if err := s.OnCNP(10*us, cc.CNPExt{}); err != nil {
		t.Fatal(err)
	}
	cut := alg.Rate()
	if err := s.Hold(20*us, true); err != nil {
		t.Fatal(err)
	}
	wake := s.NextWake()
	if wake == NoWake || wake != alg.NextTimer() {
		t.Fatalf("held sender wakes at %v, algorithm timer %v", wake, alg.NextTimer())
	}
	for at := wake; at < 50*time.Millisecond; at = s.NextWake() {
		if ps := drain(t, s, at); len(ps) != 0 {
			t.Fatalf("sent while held at %v", at)
		}
	}
	if alg.Rate() <= cut {
		t.Fatalf("rate %v did not recover from %v while held", alg.Rate(), cut)
	}
}

// TestSenderHoldTimeBackwards: Hold checks time like every other event.
func TestSenderHoldTimeBackwards(t *testing.T) {
	s := mustSender(t, SenderConfig{}, fast())
	if err := s.Hold(10*us, true); err != nil {
		t.Fatal(err)
	}
	if err := s.Hold(5*us, false); !errors.Is(err, cc.ErrTimeBackwards) {
		t.Fatalf("Hold backwards: %v", err)
	}
	if !s.Held() {
		t.Fatal("a rejected Hold changed the state")
	}
}
