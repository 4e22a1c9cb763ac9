package traffic

import "testing"

// One S3 workload: 10 ms of FB_Hadoop at 30% on 320 hosts (about 100k flows)
// plus seed 002's incasts.
func BenchmarkGenerateS3(b *testing.B) {
	cdf := readCDF(b, "FbHdp_distribution.txt")
	p := &Poisson{Hosts: hostRange(320), LinkBps: 100e9, Load: 0.3, StartNs: DefaultStartNs, DurationNs: 10e6, CDF: cdf, Seed: 1}
	in := &Incast{Hosts: hostRange(320), LinkBps: 100e9, Senders: 60, Size: 500_000, Share: 0.02, StartNs: DefaultStartNs, DurationNs: 10e6, Seed: 1}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		a, err := p.Generate()
		if err != nil {
			b.Fatal(err)
		}
		c, err := in.Generate()
		if err != nil {
			b.Fatal(err)
		}
		n = len(Merge(a, c))
	}
	b.ReportMetric(float64(n), "flows")
}
