package hpcc

import (
	"bytes"
	"testing"
)

// benchFlows is 100k flows, about one S3 run (10 ms of FB_Hadoop at 30%
// with incasts on the fat tree).
func benchFlows() []Flow {
	flows := make([]Flow, 100_000)
	for i := range flows {
		flows[i] = Flow{Src: i % 320, Dst: (i*7 + 1) % 320, PG: 3, DPort: 100, Size: int64(100 + i*37%1_000_000), StartNs: 2e9 + int64(i)*100}
	}
	return flows
}

func BenchmarkParseFlows(b *testing.B) {
	var buf bytes.Buffer
	if err := WriteFlows(&buf, benchFlows()); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseFlows("bench", bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendFCT(b *testing.B) {
	f := FCT{SIP: NodeIP(2), DIP: NodeIP(300), SPort: 10000, DPort: 100, Size: 1460, StartNs: 2000001234, FCTNs: 9000, StandaloneNs: 8500}
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendFCT(buf[:0], f)
	}
}

func BenchmarkParseFCT(b *testing.B) {
	var buf bytes.Buffer
	recs := make([]FCT, 100_000)
	for i, f := range benchFlows() {
		recs[i] = FCT{SIP: NodeIP(f.Src), DIP: NodeIP(f.Dst), SPort: 10000, DPort: f.DPort, Size: f.Size, StartNs: f.StartNs, FCTNs: 9000 + int64(i), StandaloneNs: 8500}
	}
	if err := WriteFCT(&buf, recs); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseFCT("bench", bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
}
