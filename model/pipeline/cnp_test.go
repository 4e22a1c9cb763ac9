package pipeline

import (
	"math"
	"testing"

	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/p4src/window"
	"github.com/fastcnp/fastcnp/wire"
)

// congest presets port R's queue so that the next packet sees qlen = q + its length.
func congest(t *testing.T, p *Pipeline, q uint64) {
	t.Helper()
	mustOK(t, p.WriteRegister(p4src.RegPortQueueBytes, portR, q))
}

func TestSwitchCNPContents(t *testing.T) {
	p := newTest(t, p4src.PortModeFastcnp)
	mustOK(t, p.SetDigestConfig(p4src.DigestCNP, DigestConfig{}))
	// 50 packets of S->R queued (data = 52900) on top of 100000 other bytes.
	congest(t, p, 100_000)
	var frames [][]byte
	var metas []PacketMeta
	for range 50 {
		f, m := through(t, p, dataSR(1000).build(t), portS, 1000)
		frames, metas = append(frames, f), append(metas, m)
	}
	const qlen, data = 100_000 + 50*dataLen, 50 * dataLen
	r := egress(t, p, frames[0], &metas[0], 2000)
	if !r.CNP || r.Marked {
		t.Fatalf("CNP %v marked %v, want a CNP and no mark", r.CNP, r.Marked)
	}
	bq, _ := window.BDPLog2Q6(bdp)
	wantWin := window.Window(bdp, bq, mtu, data, qlen)
	exact := float64(bdp) * data / qlen // 34597.8
	if math.Abs(float64(wantWin)-exact) > window.MaxRelError*exact+0.5 {
		t.Fatalf("table window %d vs exact %.1f beyond the bound", wantWin, exact)
	}
	if r.CNPPort != portS || len(r.CNPFrame) != CNPFrameLen {
		t.Fatalf("CNP to port %d, %d bytes; want port %d, %d bytes", r.CNPPort, len(r.CNPFrame), portS, CNPFrameLen)
	}
	var f wire.Frame
	mustOK(t, wire.Parse(r.CNPFrame, wire.ParseOptions{}, &f))
	if !f.Has(wire.LayerCNPExt) || f.Has(wire.LayerDot1Q) {
		t.Fatalf("CNP layers %b", f.Layers())
	}
	if f.Ethernet.Dst != macS || f.Ethernet.Src != macSw {
		t.Errorf("CNP MACs %v -> %v, want routed to S", f.Ethernet.Src, f.Ethernet.Dst)
	}
	ip := f.IPv4
	if ip.Src != ipR || ip.Dst != ipS || ip.DSCP() != p4src.CNPDSCP || ip.ECN() != wire.NotECT || ip.TTL != 63 || ip.TotalLen != 60 {
		t.Errorf("CNP IPv4 %+v (TTL 64 at creation, 63 after routing)", ip)
	}
	if ok, err := wire.VerifyIPv4Checksum(r.CNPFrame[14:]); !ok || err != nil {
		t.Errorf("CNP IPv4 checksum invalid (%v)", err)
	}
	if u := f.UDP; u.SrcPort != sportSR || u.DstPort != p4src.RoCEUDPPort || u.Checksum != 0 || u.Length != 40 {
		t.Errorf("CNP UDP %+v", u)
	}
	if b := f.BTH; b.Opcode != wire.OpCNP || b.PKey != wire.DefaultPKey || b.DestQP != qpS || b.PSN != 0 || b.Resv8a != 0 || b.SE || b.AckReq {
		t.Errorf("CNP BTH %+v", b)
	}
	wantExt := wire.CNPExt{Version: 1, Flags: wire.CNPExtWindowValid | wire.CNPExtBySwitch, SwitchID: switchID,
		Window: wantWin, Port: portR, QueueBytes: qlen}
	if f.CNPExt != wantExt {
		t.Errorf("CNP extension %+v, want %+v", f.CNPExt, wantExt)
	}
	if ok, err := wire.VerifyICRC(r.CNPFrame[14:]); !ok || err != nil {
		t.Errorf("CNP ICRC invalid (%v)", err)
	}
	if r.CNPMeta.EgressPort != portS || r.CNPMeta.AcctLen != CNPFrameLen || r.CNPMeta.Lossless {
		t.Errorf("CNP meta %+v", r.CNPMeta)
	}
	// cnp_digest_t.
	var d *Digest
	for i := range r.Digests[:r.NumDigests] {
		if r.Digests[i].DigestID == p4src.DigestCNP {
			d = &r.Digests[i]
		}
	}
	want := Digest{DigestID: p4src.DigestCNP, Port: portR, SrcAddr: ipS.Uint32(), DstAddr: ipR.Uint32(), WindowBytes: wantWin, QueueBytes: qlen, TimestampNs: 2000}
	if d == nil || *d != want {
		t.Errorf("cnp digest %+v, want %+v", d, want)
	}
	if n, _ := p.DigestsPending(p4src.DigestCNP); n != 1 {
		t.Errorf("%d CNP digests queued, want 1", n)
	}
	if c := ctr(t, p, p4src.CounterSwitchCNPSent, portR); c.Packets != 1 || c.Bytes != dataLen {
		t.Errorf("switch_cnp_sent %+v", c)
	}
}

func TestSwitchCNPWindowClamps(t *testing.T) {
	tests := []struct {
		name  string
		other uint64 // bytes of other flows queued
		want  uint32
	}{
		{"single flow: window = BDP", qth, 0}, // computed below: min(bdp, exp2(bdp_q6))
		{"tiny share: window = MTU", 200_000_000, mtu},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newTest(t, p4src.PortModeFastcnp)
			f, m := through(t, p, dataSR(1000).build(t), portS, 1000)
			if tc.other == qth {
				// The packet alone, 1058 < Qth: make it congested with a low Qth-free
				// trick: its own flow holds all of the queue, so add bytes of its flow.
				for range 100 {
					through(t, p, dataSR(1000).build(t), portS, 1000)
				}
				bq, _ := window.BDPLog2Q6(bdp)
				w, _ := window.Exp2(uint32(bq))
				tc.want = min(uint32(bdp), w)
			} else {
				mustOK(t, p.WriteRegister(p4src.RegPortQueueBytes, portR, tc.other+dataLen))
			}
			r := egress(t, p, f, &m, 2000)
			var pf wire.Frame
			if !r.CNP {
				t.Fatal("no CNP")
			}
			mustOK(t, wire.Parse(r.CNPFrame, wire.ParseOptions{}, &pf))
			if pf.CNPExt.Window != tc.want {
				t.Errorf("window %d, want %d", pf.CNPExt.Window, tc.want)
			}
		})
	}
}

func TestSwitchCNPGapAndDigestGap(t *testing.T) {
	p := newTest(t, p4src.PortModeFastcnp)
	congest(t, p, 200_000)
	times := []int64{10_000, 10_000 + cnpGap - 1, 10_000 + cnpGap, 10_000 + 2*cnpGap + 100, 10_000 + p4src.DigestMinGapNs}
	wantCNP := []bool{true, false, true, true, true}
	wantDigest := []bool{true, false, false, false, true}
	for i, now := range times {
		f, m := through(t, p, dataSR(1000).build(t), portS, now-10)
		r := egress(t, p, f, &m, now)
		hasDigest := false
		for _, d := range r.Digests[:r.NumDigests] {
			hasDigest = hasDigest || d.DigestID == p4src.DigestCNP
		}
		if r.CNP != wantCNP[i] || hasDigest != wantDigest[i] || r.Marked {
			t.Errorf("t=%d: CNP %v digest %v marked %v, want %v %v false", now, r.CNP, hasDigest, r.Marked, wantCNP[i], wantDigest[i])
		}
	}
	if c := ctr(t, p, p4src.CounterSwitchCNPSent, portR).Packets; c != 4 {
		t.Errorf("switch_cnp_sent = %d, want 4", c)
	}
}

// TestCloneSessionGatesEgressOutputs: everything egress sends through v1model's E2E
// clone to CNP_CLONE_SESSION (the switch CNP, its count, cnp_digest_t, egress
// port-state digests) exists only with that session; the decisions and the state
// they write do not depend on it, and a missing session never turns into a CE mark.
func TestCloneSessionGatesEgressOutputs(t *testing.T) {
	tests := []struct {
		name    string
		session bool
	}{
		{"with session", true},
		{"without session", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newTest(t, p4src.PortModeFastcnp)
			if !tc.session {
				mustOK(t, p.DeleteCloneSession(p4src.CNPCloneSession))
			}
			mustOK(t, p.SetDigestConfig(p4src.DigestCNP, DigestConfig{}))
			mustOK(t, p.SetDigestConfig(p4src.DigestPortState, DigestConfig{}))
			want := 0
			if tc.session {
				want = 1
			}

			// A congested port and a CNP-target flow: the switch CNP decision.
			congest(t, p, 200_000)
			f, m := through(t, p, dataSR(1000).build(t), portS, 1000)
			r := egress(t, p, f, &m, 2000)
			if r.CNP != tc.session || r.Marked {
				t.Errorf("CNP %v marked %v, want CNP %v, never marked", r.CNP, r.Marked, tc.session)
			}
			if c := ctr(t, p, p4src.CounterSwitchCNPSent, portR); c.Packets != uint64(want) || c.Bytes != uint64(want*dataLen) {
				t.Errorf("switch_cnp_sent = %+v, want %d packets", c, want)
			}
			if n, _ := p.DigestsPending(p4src.DigestCNP); n != want || r.NumDigests != want {
				t.Errorf("cnp_digest_t: %d queued, %d in the result, want %d", n, r.NumDigests, want)
			}
			if reg(t, p, p4src.RegFlowLastCNP, int(m.FlowSlot)) != 2000 || reg(t, p, p4src.RegPortLastDigest, portR) != 2000 {
				t.Error("flow_last_cnp / port_last_digest not written by the decision")
			}
			var pf wire.Frame
			mustOK(t, wire.Parse(f, wire.ParseOptions{}, &pf))
			if pf.IPv4.ECN() != wire.ECT0 {
				t.Errorf("data packet ECN %v, want ECT(0) (no fallback mark)", pf.IPv4.ECN())
			}

			// A pause that expires at a dequeue: the RESUME happens either way, its
			// digest only with the session.
			ingress(t, p, pfcFrame(t, 1<<losslessPr, losslessPr, 10), portR, 3000) // expires at 3051
			f2, m2 := through(t, p, dataSR(1000).build(t), portS, 3010)
			r2 := egress(t, p, f2, &m2, 3100)
			if reg(t, p, p4src.RegPortPaused, portR) != 0 {
				t.Error("not resumed at expiry")
			}
			if n, _ := p.DigestsPending(p4src.DigestPortState); n != 1+want {
				t.Errorf("port_state_digest_t queued %d, want %d (ingress PAUSE + egress RESUME if sent)", n, 1+want)
			}
			resumes := 0
			for _, d := range r2.Digests[:r2.NumDigests] {
				if d.DigestID == p4src.DigestPortState {
					resumes++
				}
			}
			if resumes != want {
				t.Errorf("egress port-state digests %d, want %d", resumes, want)
			}
		})
	}
}

func TestECNFallback(t *testing.T) {
	other := wire.Addr4{10, 0, 0, 9} // no rdma_connection entry
	tests := []struct {
		name     string
		pkt      pkt
		connFlag uint64 // flags of the S->R connection
		wantMark bool
	}{
		{"no connection", pkt{src: other, dst: ipR, sport: sportSR, destQP: qpR, dscp: 26, ecn: wire.ECT0, payload: 1000}, p4src.ConnFlagCNPTarget, true},
		{"no connection ECT(1)", pkt{src: other, dst: ipR, sport: sportSR, destQP: qpR, dscp: 26, ecn: wire.ECT1, payload: 1000}, p4src.ConnFlagCNPTarget, true},
		{"no connection, not ECT", pkt{src: other, dst: ipR, sport: sportSR, destQP: qpR, dscp: 26, ecn: wire.NotECT, payload: 1000}, p4src.ConnFlagCNPTarget, false},
		{"connection without CNP-target flag", dataSR(1000), p4src.ConnFlagIncUplink, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newTest(t, p4src.PortModeFastcnp)
			mustOK(t, p.ModifyEntry(connEntry(ipS, sportSR, qpR, qpS, tc.connFlag, 0, 0, 0)))
			congest(t, p, 200_000)
			f, m := through(t, p, tc.pkt.build(t), portS, 1000)
			r := egress(t, p, f, &m, 2000)
			if r.CNP || r.Marked != tc.wantMark {
				t.Fatalf("CNP %v marked %v, want no CNP, marked %v", r.CNP, r.Marked, tc.wantMark)
			}
			var pf wire.Frame
			mustOK(t, wire.Parse(f, wire.ParseOptions{}, &pf))
			wantECN := tc.pkt.ecn
			if tc.wantMark {
				wantECN = wire.CE
			}
			if pf.IPv4.ECN() != wantECN {
				t.Errorf("ECN %v, want %v", pf.IPv4.ECN(), wantECN)
			}
			if ok, _ := wire.VerifyIPv4Checksum(f[14:]); !ok {
				t.Error("IPv4 checksum invalid after marking")
			}
			if ok, _ := wire.VerifyICRC(f[14:]); !ok {
				t.Error("ICRC invalid after marking (TOS is masked)")
			}
			if got := ctr(t, p, p4src.CounterECNMarked, portR).Packets; (got == 1) != tc.wantMark {
				t.Errorf("ecn_marked = %d", got)
			}
		})
	}
}

// collidingDst finds a destination in 10.0.0.0/8 whose flow slot with src equals
// that of (src, dst) while the fingerprint differs.
func collidingDst(src, dst wire.Addr4) wire.Addr4 {
	h := FlowHash(src.Uint32(), dst.Uint32())
	for a := uint32(0x0A000000); a < 0x0B000000; a++ {
		h2 := FlowHash(src.Uint32(), a)
		if h2&(p4src.FlowSlots-1) == h&(p4src.FlowSlots-1) && h2 != h {
			return wire.Addr4{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)}
		}
	}
	panic("no colliding address")
}

func TestFlowCollisionUntracked(t *testing.T) {
	p := newTest(t, p4src.PortModeFastcnp)
	route(t, p, 0x0A000000, 8, portR, macSw, macR) // 10/8 -> R as well (/24s win)
	x := collidingDst(ipS, ipR)
	congest(t, p, 200_000)
	f1, m1 := through(t, p, dataSR(1000).build(t), portS, 1000)
	px := dataSR(1000)
	px.dst = x
	f2, m2 := through(t, p, px.build(t), portS, 1000)
	if !m1.Tracked || m2.Tracked || m1.FlowSlot != m2.FlowSlot {
		t.Fatalf("tracked %v/%v slots %d/%d, want the second untracked in the same slot", m1.Tracked, m2.Tracked, m1.FlowSlot, m2.FlowSlot)
	}
	if c := ctr(t, p, p4src.CounterFlowCollisions, portR); c.Packets != 1 || c.Bytes != dataLen {
		t.Errorf("flow_collisions %+v", c)
	}
	if got := reg(t, p, p4src.RegFlowBytes, int(m1.FlowSlot)); got != dataLen {
		t.Errorf("flow_bytes = %d, want only the tracked flow's %d", got, dataLen)
	}
	// The untracked flow hits the S->R connection (same sport and DestQP) but cannot
	// get a CNP: ECN fallback.
	if r := egress(t, p, f2, &m2, 2000); r.CNP || !r.Marked {
		t.Errorf("untracked: CNP %v marked %v, want mark", r.CNP, r.Marked)
	}
	if r := egress(t, p, f1, &m1, 2001); !r.CNP {
		t.Error("tracked flow got no CNP")
	}
	// The slot is free again: the other flow now takes it.
	_, m3 := through(t, p, px.build(t), portS, 3000)
	if !m3.Tracked || reg(t, p, p4src.RegFlowKey, int(m3.FlowSlot)) != uint64(FlowHash(ipS.Uint32(), x.Uint32())) {
		t.Error("freed slot not reused")
	}
}

func TestRED(t *testing.T) {
	const kmin, kmax = 5_000, 200_000
	tests := []struct {
		name      string
		qlen      uint64
		pmax      uint64
		ecn       wire.ECN
		want, tol float64
	}{
		{"at Kmin", kmin, 65535, wire.ECT0, 0, 0},
		{"below Kmin", 2_000, 65535, wire.ECT0, 0, 0},
		{"at Kmax", kmax, 1, wire.ECT0, 1, 0},
		{"above Kmax", 500_000, 1, wire.ECT0, 1, 0},
		// r*195000 < 65535*97500 <=> r <= 32767: exactly half of the 16-bit values.
		{"mid-queue Pmax 1", 102_500, 65535, wire.ECT0, 0.5, 0.02},
		// r*195000 < 6553*97500 <=> r < 3276.5: 3277/65536.
		{"mid-queue Pmax 0.1", 102_500, 6553, wire.ECT1, 3277.0 / 65536, 0.01},
		{"not ECT never marked", 500_000, 65535, wire.NotECT, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := New(Options{Seed: 42})
			route(t, p, ipR.Uint32()&0xFFFFFF00, 24, portR, macSw, macR)
			mustOK(t, p.InsertEntry(&TableEntry{TableID: p4src.TableTrafficClass, Priority: 1,
				Match:  []FieldMatch{{FieldID: 1, Value: 0}, {FieldID: 3, Value: 26, Mask: 0x3F}},
				Action: Action{ID: p4src.ActionSetTrafficClass, Params: []Param{{1, 3}, {2, 1}}}}))
			mustOK(t, p.InsertEntry(portConfigEntry(portR, portCfg{mode: p4src.PortModeECN, kmin: kmin, kmax: kmax, pmax: tc.pmax})))
			k := dataSR(1000)
			k.ecn = tc.ecn
			frame := k.build(t)
			const n = 20000
			marked := 0
			for range n {
				mustOK(t, p.WriteRegister(p4src.RegPortQueueBytes, portR, tc.qlen-dataLen))
				f, m := through(t, p, append([]byte(nil), frame...), portS, 1000)
				if r := egress(t, p, f, &m, 2000); r.Marked {
					marked++
				}
			}
			if got := float64(marked) / n; math.Abs(got-tc.want) > tc.tol {
				t.Errorf("marked fraction %.4f, want %.4f +- %.3f", got, tc.want, tc.tol)
			}
			if c := ctr(t, p, p4src.CounterECNMarked, portR).Packets; c != uint64(marked) {
				t.Errorf("ecn_marked %d, marked %d", c, marked)
			}
		})
	}
}

func TestModeOffDoesNothing(t *testing.T) {
	p := newTest(t, p4src.PortModeOff)
	congest(t, p, 500_000)
	f, m := through(t, p, dataSR(1000).build(t), portS, 1000)
	if r := egress(t, p, f, &m, 2000); r.CNP || r.Marked {
		t.Error("mode off marked or made a CNP")
	}
}
