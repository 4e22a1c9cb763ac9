package scenario

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/sim/engine"
	"github.com/fastcnp/fastcnp/sim/hpcc"
	"github.com/fastcnp/fastcnp/sim/network"
	"github.com/fastcnp/fastcnp/sim/traffic"
)

// s3Bench is one S3-like run: a fat tree of hosts with WebSearch at load, flows
// arriving over windowNs from time 0, the run stopped at windowNs.
func s3Bench(b *testing.B, hosts int, load float64, windowNs int64, mode network.Mode) network.Config {
	b.Helper()
	o, err := FatTreeFor(hosts)
	if err != nil {
		b.Fatal(err)
	}
	topo, err := FatTree(o)
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.Open("../data/hpcc/WebSearch_distribution.txt")
	if err != nil {
		b.Fatal(err)
	}
	cdf, err := hpcc.ParseCDF("WebSearch", f)
	f.Close()
	if err != nil {
		b.Fatal(err)
	}
	var ids []int
	for id, sw := range topo.SwitchMask() {
		if !sw {
			ids = append(ids, id)
		}
	}
	p := &traffic.Poisson{Hosts: ids, LinkBps: o.HostBps, Load: load, DurationNs: windowNs, CDF: cdf, Seed: 1}
	flows, err := p.Generate()
	if err != nil {
		b.Fatal(err)
	}
	sc := &Scenario{Topo: topo, Flows: flows, Victim: -1, Switch: network.DefaultSwitchParams(), UntilNs: windowNs}
	return sc.Config(mode, DefaultParams())
}

// cpuSeconds is the CPU time (user and system) the process has used.
func cpuSeconds(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// BenchmarkS3 measures the engine on the fat tree (docs/performance.md "fastcnp-sim"):
// events per CPU second, and CPU seconds per simulated millisecond (the run only,
// not building the switches).
// The 320-host case is the S3 fabric (fat.txt) with 500 us of WebSearch at 30%.
func BenchmarkS3(b *testing.B) {
	cases := []struct {
		hosts  int
		load   float64
		window int64
		queue  string
	}{
		{16, 0.3, 500_000, engine.QueueHeap},
		{64, 0.3, 500_000, engine.QueueHeap},
		{320, 0.3, 500_000, engine.QueueHeap},
		{320, 0.3, 500_000, engine.QueueCalendar},
		{320, 0.5, 500_000, engine.QueueHeap},
		{1024, 0.3, 200_000, engine.QueueHeap},
	}
	for _, c := range cases {
		b.Run(fmt.Sprintf("hosts=%d/load=%.0f%%/queue=%s", c.hosts, c.load*100, c.queue), func(b *testing.B) {
			cfg := s3Bench(b, c.hosts, c.load, c.window, network.ModeFastCNP)
			cfg.Queue = c.queue
			var events uint64
			var cpu float64
			for i := 0; i < b.N; i++ {
				b.StopTimer() // building the switches is not the engine
				n, err := network.New(cfg)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				c0 := cpuSeconds(b)
				r, err := n.Run(nil)
				if err != nil {
					b.Fatal(err)
				}
				cpu += cpuSeconds(b) - c0
				events += r.Events
			}
			// Per CPU second of the process: on a shared machine the wall time
			// also counts the other jobs' share of the cores.
			b.ReportMetric(float64(events)/cpu, "events/cpu-s")
			b.ReportMetric(cpu/float64(b.N)/(float64(c.window)/1e6), "cpu-s/simulated-ms")
			b.ReportMetric(float64(events)/float64(b.N), "events/op")
		})
	}
}
