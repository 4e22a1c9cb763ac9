package analysis

import (
	"testing"

	"github.com/fastcnp/fastcnp/sim/hpcc"
)

// 100k flows (one S3 run) through selection, sorting and both binnings.
func BenchmarkAnalyze(b *testing.B) {
	recs := make([]hpcc.FCT, 100_000)
	for i := range recs {
		recs[i] = hpcc.FCT{DPort: 100, Size: int64(100 + i*37%1_000_000), StartNs: 2e9, FCTNs: int64(10000 + i*7919%500000), StandaloneNs: 9000}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Analyze("bench", recs, DefaultFilter, 5, nil); err != nil {
			b.Fatal(err)
		}
	}
}
