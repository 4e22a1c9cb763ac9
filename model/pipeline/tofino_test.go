package pipeline

import (
	"math"
	"testing"

	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/p4src/window"
)

func TestParseProfile(t *testing.T) {
	for _, pr := range Profiles() {
		got, err := ParseProfile(pr.String())
		if err != nil || got != pr {
			t.Errorf("ParseProfile(%q) = %v, %v", pr, got, err)
		}
	}
	if _, err := ParseProfile("tofino3"); !isErr(err, ErrInvalidArgument) {
		t.Errorf("ParseProfile(tofino3): %v, want ErrInvalidArgument", err)
	}
	for _, c := range []struct {
		pr    Profile
		cell  uint32
		cells uint32 // of a 1058-byte frame
	}{{ProfileTofino1, 80, 14}, {ProfileTofino2, 176, 7}} {
		if c.pr.CellBytes() != c.cell || c.pr.cells(1058) != c.cells || !c.pr.Tofino() {
			t.Errorf("%s: cell %d, cells(1058) %d", c.pr, c.pr.CellBytes(), c.pr.cells(1058))
		}
	}
	if ProfileV1Model.Tofino() || ProfileV1Model.CellBytes() != 0 {
		t.Error("v1model is not a Tofino profile")
	}
}

// TestTofinoResumeDecision: the RESUME rules with rx > C*T in the log domain
// (docs/tofino.md): the cases of spec 01, the approximation's band around equality,
// and rx = 0.
func TestTofinoResumeDecision(t *testing.T) {
	p := New(Options{Profile: ProfileTofino1})
	cfg := &PortConfig{QthBytes: 2000, RateBytesPerMs: 125_000} // 0.125 B/ns
	for _, c := range []struct {
		name         string
		qlen, rx, ns uint32
		event        uint8
		undetermined bool
	}{
		{"below Qth", 1999, 1_000_000, 1, p4src.PortEventResumeNotCongested, false},
		{"rx well above C*T", 10_000, 9680, 70_000, p4src.PortEventResumeCongested, false}, // 9680 > 8750
		{"rx well below C*T", 10_000, 7000, 70_000, p4src.PortEventResumeUndetermined, true},
		{"rx 0 never beats", 10_000, 0, 1, p4src.PortEventResumeUndetermined, true},
		// T = 0 misses the log2 table and reads as 1 ns: log2_q6(1) + 1276 = 1276 >
		// log2_q6(125000) + 0 = 1084, as exactly 1 B > 0.
		{"T 0 reads as 1 ns", 10_000, 1, 0, p4src.PortEventResumeCongested, false},
	} {
		ev, undet := p.tnaResume(cfg, c.qlen, c.rx, c.ns)
		if ev != c.event || undet != c.undetermined {
			t.Errorf("%s: event %d undetermined %v, want %d %v", c.name, ev, undet, c.event, c.undetermined)
		}
	}
	// The ablation mode fastcnp-no-pfc-state is never undetermined: what fastcnp
	// mode would leave undetermined is congested.
	abl := *cfg
	abl.Mode = p4src.PortModeFastcnpNoPFCState
	if ev, undet := p.tnaResume(&abl, 10_000, 7000, 70_000); ev != p4src.PortEventResumeCongested || undet {
		t.Errorf("ablation: event %d undetermined %v, want RESUME_CONGESTED", ev, undet)
	}
	if ev, _ := p.tnaResume(&abl, 1999, 7000, 70_000); ev != p4src.PortEventResumeNotCongested {
		t.Errorf("ablation below Qth: event %d, want RESUME_NOT_CONGESTED", ev)
	}
	// Outside +-5% of equality the log-domain decision is the exact one.
	for _, rate := range []uint32{125_000, 3_125_000, 12_500_000, 50_000_000} {
		for ns := uint32(100); ns < 50_000_000; ns = ns*3/2 + 7 {
			cfg.RateBytesPerMs = rate
			ct := float64(rate) * float64(ns) / 1e6
			for _, f := range []float64{0.2, 0.5, 0.9, 0.949, 1.051, 1.1, 2, 10} {
				rx := math.Round(ct * f)
				if rx < 1 || rx > math.MaxUint32 {
					continue
				}
				ev, _ := p.tnaResume(cfg, 1<<30, uint32(rx), ns)
				if want := rx > ct; (ev == p4src.PortEventResumeCongested) != want {
					t.Fatalf("rate %d T %d rx %.0f (C*T %.1f): congested %v, exact %v", rate, ns, rx, ct, !want, want)
				}
			}
		}
	}
}

// TestTofinoREDProbability: RED without a multiplier marks with probability
// Pmax * d/R (the ratio within the window tables' 3.25%).
func TestTofinoREDProbability(t *testing.T) {
	p := newTestProfile(t, p4src.PortModeECN, ProfileTofino1)
	const n = 40_000
	for _, c := range []struct {
		pmax       uint16
		kmin, kmax uint32
		qlen       uint32
	}{
		{32768, 10_000, 110_000, 60_000}, // 0.5 * 0.5
		{65535, 10_000, 110_000, 30_000}, // 1.0 * 0.2
		{6554, 5_000, 205_000, 185_000},  // 0.1 * 0.9
		{0, 10_000, 110_000, 60_000},     // Pmax 0: never
		{65535, 10_000, 110_000, 10_000}, // qlen = Kmin: never
		{1, 10_000, 110_000, 110_000},    // qlen = Kmax: always
	} {
		cfg := &PortConfig{RedKminBytes: c.kmin, RedKmaxBytes: c.kmax, RedPmaxQ16: c.pmax}
		marks := 0
		for range n {
			if p.tnaRED(cfg, c.qlen) {
				marks++
			}
		}
		var want float64
		switch {
		case c.qlen <= c.kmin:
		case c.qlen >= c.kmax:
			want = 1
		default:
			want = float64(c.pmax) / 65536 * float64(c.qlen-c.kmin) / float64(c.kmax-c.kmin)
		}
		got := float64(marks) / n
		tol := 4*math.Sqrt(want*(1-want)/n) + want*window.MaxRelError
		if math.Abs(got-want) > tol {
			t.Errorf("%+v: marked %.4f, want %.4f +- %.4f", c, got, want, tol)
		}
	}
}

// TestTofinoFlowSlotOwnership: a flow owns its slot while it departed in the current
// or the previous epoch; another flow hashing there is untracked and counted in
// flow_collisions, and takes the slot once the owner has been quiet for two epochs.
func TestTofinoFlowSlotOwnership(t *testing.T) {
	p := New(Options{Profile: ProfileTofino1})
	a := PacketMeta{HasIPv4: true, SrcAddr: 0x0a000001, DstAddr: 0x0a000102}
	// Find another flow whose fingerprint lands in the same slot.
	slot := FlowHash(a.SrcAddr, a.DstAddr) & (p4src.FlowSlots - 1)
	b := a
	for src := uint32(0x0a000002); ; src++ {
		if FlowHash(src, a.DstAddr)&(p4src.FlowSlots-1) == slot {
			b.SrcAddr = src
			break
		}
	}
	const epoch = 1 << p4src.WindowEpochShift
	steps := []struct {
		m       *PacketMeta
		at      uint64
		tracked bool
		data    uint32
	}{
		{&a, 0, true, 100},            // a claims the free slot
		{&b, 10, false, 0},            // b collides
		{&a, epoch + 10, true, 200},   // a, next epoch: 100 (previous) + 100
		{&b, 2*epoch + 10, false, 0},  // a departed in the previous epoch: still a's
		{&b, 3*epoch + 10, true, 100}, // a quiet for two epochs: b takes the slot
		{&a, 3*epoch + 20, false, 0},  // and a is the one untracked now
	}
	for i, s := range steps {
		m := *s.m
		_, data, tracked := p.tnaShares(portR, s.at, 100, &m)
		if tracked != s.tracked || data != s.data {
			t.Errorf("step %d: tracked %v data %d, want %v %d", i, tracked, data, s.tracked, s.data)
		}
	}
	if c := ctr(t, p, p4src.CounterFlowCollisions, portR); c.Packets != 3 || c.Bytes != 300 {
		t.Errorf("flow_collisions[%d] = %+v, want 3 packets 300 bytes", portR, c)
	}
}

// TestTofinoSharesEpochs: the port's departures over the current and the previous
// epoch, nothing older.
func TestTofinoSharesEpochs(t *testing.T) {
	p := New(Options{Profile: ProfileTofino2})
	const epoch = 1 << p4src.WindowEpochShift
	var m PacketMeta
	for _, s := range []struct {
		at  uint64
		sum uint32
	}{{0, 10}, {epoch - 1, 20}, {epoch, 30}, {2*epoch + 5, 20}, {4*epoch + 5, 10}, {5 * epoch, 20}} {
		if sum, _, _ := p.tnaShares(portR, s.at, 10, &m); sum != s.sum {
			t.Errorf("at %d: sum %d, want %d", s.at, sum, s.sum)
		}
	}
}

// TestTofinoIncAgingIs32Bit: the TNA program keeps INC slot claim times in 32 bits,
// so a slot's age is taken modulo 2^32 ns (4.29 s); v1model's are 48-bit. A message
// claims a slot at 1000, another message of the same slot comes 2^32 + 10 ns later,
// with a slot timeout of 1000 ns: v1model takes the slot over, Tofino sees an age of
// 10 ns and finds it busy.
func TestTofinoIncAgingIs32Bit(t *testing.T) {
	want := IncSlot(incID, 0)
	var other uint16
	for m := uint16(0); m < 0xFFFF; m++ {
		if m != incMsg && IncSlot(incGroup<<16|uint32(m), 0) == want {
			other = m
			break
		}
	}
	for _, c := range []struct {
		pr     Profile
		reason DropReason
	}{{ProfileV1Model, DropINCConsumed}, {ProfileTofino1, DropINCSlotBusy}} {
		p := newINCProfile(t, c.pr)
		mustOK(t, p.InsertEntry(&TableEntry{TableID: p4src.TableIncSlotTimeout, Match: []FieldMatch{{FieldID: 1, Value: incGroup}},
			Action: Action{ID: p4src.ActionSetIncSlotTimeout, Params: []Param{{1, 1000}}}}))
		ingress(t, p, incPkt(0, firstPSN, idsFor(incMsg, firstPSN, flowLen), 1).build(t), portS, 1000)
		r := ingress(t, p, incPkt(3, 500, idsFor(other, 500, 2), 1).build(t), portS, 1<<32+1010)
		if r.DropReason != c.reason {
			t.Errorf("%s: drop reason %d, want %d", c.pr, r.DropReason, c.reason)
		}
	}
}
