package wire

import (
	"testing"
)

func BenchmarkParse(b *testing.B) {
	fr := testFrames(b)
	opts := ParseOptions{AnnouncePorts: testAnnouncePorts}
	for _, bc := range []struct {
		name  string
		frame []byte
	}{
		{"RoCEData", fr.data}, {"CNP", fr.cnp}, {"INCWithIDs", fr.incIDs},
		{"Announcement", fr.ann}, {"PFC", fr.pfc}, {"Truncated", fr.cnp[:60]},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var f Frame
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.frame)))
			for b.Loop() {
				_ = Parse(bc.frame, opts, &f)
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	fr := testFrames(b)
	b.Run("BTH", func(b *testing.B) {
		var h BTH
		b.ReportAllocs()
		for b.Loop() {
			_ = h.Decode(fr.data[42:])
		}
	})
	b.Run("IPv4", func(b *testing.B) {
		var h IPv4
		b.ReportAllocs()
		for b.Loop() {
			_ = h.Decode(fr.data[14:])
		}
	})
	b.Run("INCVector", func(b *testing.B) {
		var v INCVector
		b.ReportAllocs()
		for b.Loop() {
			_ = v.Decode(fr.incNoIDs[58:])
		}
	})
}

func BenchmarkEncode(b *testing.B) {
	buf := make([]byte, 128)
	b.Run("BTH", func(b *testing.B) {
		h := BTH{Opcode: OpRCSendOnly, PKey: DefaultPKey, DestQP: 0x11, PSN: 7}
		b.ReportAllocs()
		for b.Loop() {
			_, _ = h.Encode(buf)
		}
	})
	b.Run("CNPExt", func(b *testing.B) {
		h := CNPExt{Version: 1, Flags: 3, SwitchID: 7, Window: 4096}
		b.ReportAllocs()
		for b.Loop() {
			_, _ = h.Encode(buf)
		}
	})
}

func BenchmarkBuild(b *testing.B) {
	buf := make([]byte, 2048)
	env := dataEnv()
	bth := BTH{Opcode: OpRCSendOnly, PKey: DefaultPKey, DestQP: 0x11, PSN: 7}
	payload := make([]byte, 1024)
	ext := CNPExt{Version: 1, Flags: 3, SwitchID: 7, Window: 4096}
	var vec INCVector
	ids := INCIDs{GroupID: 1}
	ann := NewAnnouncement(AnnounceUp, 0)
	for _, bc := range []struct {
		name string
		f    func() (int, error)
	}{
		{"RoCE1024", func() (int, error) { return BuildRoCE(buf, &env, &bth, payload) }},
		{"RCAck", func() (int, error) { return BuildRCAck(buf, &env, bth, AETH{Syndrome: SyndromeACK}) }},
		{"CNP", func() (int, error) { return BuildCNP(buf, &env, bth, &ext) }},
		{"INC", func() (int, error) { return BuildINC(buf, &env, bth, INC{Version: 1}, &ids, &vec) }},
		{"Announcement", func() (int, error) { return BuildAnnouncement(buf, &env, &ann) }},
		{"PFC", func() (int, error) { return BuildPFC(buf, macA, 8, [8]uint16{3: 0xffff}) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.f(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkICRC(b *testing.B) {
	buf := make([]byte, 2048)
	env := dataEnv()
	bth := BTH{Opcode: OpRCSendOnly, PKey: DefaultPKey}
	for _, size := range []int{16, 1024} {
		n, _ := BuildRoCE(buf, &env, &bth, make([]byte, size))
		ip := buf[EthernetLen:n]
		b.Run("Verify"+map[int]string{16: "16", 1024: "1024"}[size], func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(ip)))
			for b.Loop() {
				if ok, _ := VerifyICRC(ip); !ok {
					b.Fatal("bad ICRC")
				}
			}
		})
	}
}

func BenchmarkMarkCE(b *testing.B) {
	fr := testFrames(b)
	ip := append([]byte(nil), fr.data[14:]...)
	b.ReportAllocs()
	for b.Loop() {
		ip[1] = ip[1]&^3 | byte(ECT0)
		_, _ = MarkCE(ip)
	}
}

// TestZeroAllocs enforces the no-allocation contract of the hot paths.
func TestZeroAllocs(t *testing.T) {
	fr := testFrames(t)
	opts := ParseOptions{AnnouncePorts: testAnnouncePorts}
	var f Frame
	buf := make([]byte, 512)
	env := dataEnv()
	bth := BTH{Opcode: OpRCSendOnly, PKey: DefaultPKey, DestQP: 0x11, PSN: 7}
	ext := CNPExt{Version: 1}
	var vec INCVector
	ids := INCIDs{}
	ann := NewAnnouncement(AnnounceUp, 0)
	hops := intTestHops(3)
	intFrame := mustBuild(t, func(b []byte) (int, error) {
		return BuildRoCEINT(b, &env, bth, INTHeader{Version: INTVersion}, hops, []byte("x"))
	})
	for name, fn := range map[string]func(){
		"ParseINT":          func() { _ = Parse(intFrame, opts, &f) },
		"BuildRoCEINT":      func() { _, _ = BuildRoCEINT(buf, &env, bth, INTHeader{}, hops, []byte("x")) },
		"BuildRCAckINT":     func() { _, _ = BuildRCAckINT(buf, &env, bth, AETH{}, hops) },
		"VerifyICRCINT":     func() { _, _ = VerifyICRC(intFrame[14:]) },
		"Parse":             func() { _ = Parse(fr.incIDs, opts, &f) },
		"ParseError":        func() { _ = Parse(fr.cnp[:50], opts, &f) },
		"ParseMalformed":    func() { _ = Parse(fr.ann[:40], opts, &f) },
		"BuildRoCE":         func() { _, _ = BuildRoCE(buf, &env, &bth, []byte("x")) },
		"BuildRCAck":        func() { _, _ = BuildRCAck(buf, &env, bth, AETH{}) },
		"BuildCNP":          func() { _, _ = BuildCNP(buf, &env, bth, &ext) },
		"BuildINC":          func() { _, _ = BuildINC(buf, &env, bth, INC{}, &ids, &vec) },
		"BuildAnnouncement": func() { _, _ = BuildAnnouncement(buf, &env, &ann) },
		"BuildPFC":          func() { _, _ = BuildPFC(buf, macA, 1, [8]uint16{}) },
		"BuildPause":        func() { _, _ = BuildPause(buf, macA, 1) },
		"VerifyICRC":        func() { _, _ = VerifyICRC(fr.cnp[14:]) },
		"MarkCE":            func() { _, _ = MarkCE(buf[14:]) },
		"DecTTL":            func() { _ = DecTTL(buf[14:]) },
	} {
		if a := testing.AllocsPerRun(100, fn); a != 0 {
			t.Errorf("%s: %v allocs/op, want 0", name, a)
		}
	}
}
