package pipeline

import (
	"testing"
)

// BenchmarkIngressData: parser + ingress of a RoCEv2 data packet with a connection hit.
func BenchmarkIngressData(b *testing.B) {
	p := newTest(b, ModeFastcnp)
	tmpl := dataSR(1000).build(b)
	frame := make([]byte, len(tmpl))
	var r IngressResult
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		copy(frame, tmpl) // ingress decrements the TTL in place
		if err := p.Ingress(frame, portS, int64(i), &r); err != nil || r.Verdict != VerdictForward {
			b.Fatal(err, r.Verdict)
		}
	}
}

// BenchmarkEgressData: enqueue accounting plus the egress of a lossless data packet
// on an uncongested fastcnp port.
func BenchmarkEgressData(b *testing.B) {
	p := newTest(b, ModeFastcnp)
	frame, meta := through(b, p, dataSR(1000).build(b), portS, 0)
	p.OnEnqueue(&meta) // one packet stays queued so that the queue never underflows
	var r EgressResult
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		m := meta
		p.OnEnqueue(&m)
		if err := p.Egress(frame, portR, int64(i), &m, &r); err != nil || r.CNP || r.Marked {
			b.Fatal(err)
		}
	}
}

// BenchmarkCNPPath: a congested fastcnp port makes a switch CNP for every packet
// (time advances by cnpGap): window lookups, CNP build, ICRC, ingress of the CNP.
func BenchmarkCNPPath(b *testing.B) {
	p := newTest(b, ModeFastcnp)
	mustOK(b, p.WriteRegister(RegPortQueueBytes, portR, 200_000))
	frame, meta := through(b, p, dataSR(1000).build(b), portS, 0)
	p.OnEnqueue(&meta)
	var r EgressResult
	b.ReportAllocs()
	for i := 1; b.Loop(); i++ {
		m := meta
		p.OnEnqueue(&m)
		if err := p.Egress(frame, portR, int64(i)*cnpGap, &m, &r); err != nil || !r.CNP {
			b.Fatal(err, r.CNP)
		}
	}
}

// BenchmarkINCPath: INC contributions of three workers; every third packet completes
// the slot and becomes the RESULT (sum, IDS part, ICRC). Half the packets carry no IDS
// part, so half the RESULTs grow by 16 bytes.
func BenchmarkINCPath(b *testing.B) {
	p := newINC(b)
	const flen = 1 << 20
	var frames [3][2][]byte // worker, with / without IDS
	for w := range 3 {
		frames[w][0] = incPkt(w, 0, idsFor(incMsg, 0, flen), int32(w)).build(b)
		frames[w][1] = incPkt(w, 0, nil, int32(w)).build(b)
	}
	buf := make([]byte, 256)
	var r IngressResult
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		w, psn := i%3, uint32(i/3)%flen
		tmpl := frames[w][(i/3)&1]
		if i/3 == 0 {
			tmpl = frames[w][0] // the first packet of each flow carries the IDS part
		}
		f := buf[:len(tmpl)]
		copy(f, tmpl)
		f[14+20+8+9], f[14+20+8+10], f[14+20+8+11] = byte(psn>>16), byte(psn>>8), byte(psn)
		if err := p.Ingress(f, portS, int64(i), &r); err != nil {
			b.Fatal(err)
		}
		if want := w == 2; (r.Verdict == VerdictForward) != want {
			b.Fatalf("i=%d: verdict %d reason %d", i, r.Verdict, r.DropReason)
		}
	}
}
