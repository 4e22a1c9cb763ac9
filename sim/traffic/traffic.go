// Package traffic generates flow files the way the HPCC simulator's
// traffic_gen.py does (Poisson arrivals per host, sizes from a CDF file,
// random pairs), plus incasts (N senders to one receiver at a share of the
// load), deterministically for a seed. It is pure: no I/O, no wall clock.
//
// Where it differs from traffic_gen.py:
//   - the random numbers come from Go's PCG generator seeded by Seed
//     (math/rand/v2), not from Python's Mersenne Twister seeded by the
//     clock, so the same seed always gives the same flows, but not the same
//     flows as a Python run;
//   - hosts are any node IDs (from a topology), not only 0..n-1;
//   - the first line holds the exact flow count; the script writes an
//     estimate and overwrites its first digits, which can leave a wrong
//     count when the two differ in length.
//
// Everything else follows the script, including its quirks: inter-arrival
// times and sizes are truncated to whole nanoseconds and bytes (a size of 0
// becomes 1), and a host's arrival at t is written only if the host's next
// arrival still falls before the end, so each host's last arrival is
// dropped. With an arrival rate lambda per host over a window T, a host
// therefore writes lambda*T - 1 + exp(-lambda*T) flows on average.
package traffic

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/fastcnp/fastcnp/sim/hpcc"
)

// DefaultStartNs is traffic_gen.py's base_t: flows start at 2 s, when the
// HPCC simulator's monitors start.
const DefaultStartNs = 2_000_000_000

// Streams of the generator: the background flows and the incasts draw from
// separate PCG streams, so adding incasts leaves the background unchanged.
const (
	streamPoisson = 0x706f6973736f6e // "poisson"
	streamIncast  = 0x696e63617374   // "incast"
)

// maxFlows bounds what one call may generate (memory, and a guard against
// a load or duration typed in the wrong unit).
const maxFlows = 50_000_000

// Poisson describes background traffic as traffic_gen.py makes it.
type Poisson struct {
	Hosts      []int     // node IDs of the hosts (the script: 0..n-1)
	LinkBps    float64   // host link rate (the script's -b)
	Load       float64   // offered load per host link, 0 < Load <= 1 (-l)
	StartNs    int64     // first instant (base_t; DefaultStartNs)
	DurationNs int64     // length of the window (-t, in seconds there)
	CDF        *hpcc.CDF // flow sizes (-c)
	Seed       uint64
	PG         int    // priority group; 0 means hpcc.DataPG
	DPort      uint16 // destination port; 0 means hpcc.DPortNormal
}

// MeanInterArrivalNs is the mean time between two flows of one host:
// mean size / (link rate * load), in ns, as traffic_gen.py computes it.
func (p *Poisson) MeanInterArrivalNs() float64 {
	return 1 / (p.LinkBps * p.Load / 8 / p.CDF.Mean()) * 1e9
}

// checkCommon checks what background and incasts share: hosts, link
// rate, window and priority group.
func checkCommon(hosts []int, linkBps float64, startNs, durNs int64, pg int) error {
	switch {
	case len(hosts) < 2:
		return fmt.Errorf("traffic: %d hosts, want at least 2", len(hosts))
	case !(linkBps > 0) || math.IsInf(linkBps, 0):
		return fmt.Errorf("traffic: link rate %v b/s, want > 0", linkBps)
	case startNs < 0 || durNs <= 0:
		return fmt.Errorf("traffic: window start %d ns, duration %d ns: want start >= 0 and duration > 0", startNs, durNs)
	case pg < 0 || pg >= hpcc.NumPGs:
		return fmt.Errorf("traffic: priority group %d out of range", pg)
	}
	if dup := duplicate(hosts); dup >= 0 {
		return fmt.Errorf("traffic: host %d listed twice", dup)
	}
	return nil
}

func (p *Poisson) check() error {
	if err := checkCommon(p.Hosts, p.LinkBps, p.StartNs, p.DurationNs, p.PG); err != nil {
		return err
	}
	switch {
	case !(p.Load > 0 && p.Load <= 1):
		return fmt.Errorf("traffic: load %v, want 0 < load <= 1", p.Load)
	case p.CDF == nil || len(p.CDF.Size) < 2:
		return fmt.Errorf("traffic: no flow-size CDF")
	}
	if exp := float64(p.DurationNs) / p.MeanInterArrivalNs() * float64(len(p.Hosts)); exp > maxFlows {
		return fmt.Errorf("traffic: about %.0f flows expected, at most %d per call", exp, maxFlows)
	}
	return nil
}

// orDefault is v, or def if v is zero.
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func duplicate(ids []int) int {
	seen := make(map[int]bool, len(ids))
	for _, id := range ids {
		if seen[id] {
			return id
		}
		seen[id] = true
	}
	return -1
}

// arrival is one host's next arrival in the generator's heap, ordered by
// (time, host) as the script's heap of (t, src) tuples.
type arrival struct {
	t    int64
	host int
	idx  int // index into Hosts
}

type arrivals []arrival

func (a arrivals) Len() int { return len(a) }
func (a arrivals) Less(i, j int) bool {
	return a[i].t < a[j].t || a[i].t == a[j].t && a[i].host < a[j].host
}
func (a arrivals) Swap(i, j int) { a[i], a[j] = a[j], a[i] }
func (a *arrivals) Push(x any)   { *a = append(*a, x.(arrival)) }
func (a *arrivals) Pop() any {
	old := *a
	x := old[len(old)-1]
	*a = old[:len(old)-1]
	return x
}

// Generate returns the background flows in start order (ties by source).
func (p *Poisson) Generate() ([]hpcc.Flow, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	pg, dport := orDefault(p.PG, hpcc.DataPG), orDefault(p.DPort, hpcc.DPortNormal)
	rng := rand.New(rand.NewPCG(p.Seed, streamPoisson))
	mean := p.MeanInterArrivalNs()
	expo := func() int64 { return int64(-math.Log(1-rng.Float64()) * mean) }
	h := make(arrivals, len(p.Hosts))
	for i, id := range p.Hosts {
		h[i] = arrival{t: p.StartNs + expo(), host: id, idx: i}
	}
	heap.Init(&h)
	end := p.StartNs + p.DurationNs
	n := len(p.Hosts)
	var flows []hpcc.Flow
	for len(h) > 0 {
		a := h[0]
		next := a.t + expo()
		// The destination is drawn before the window test, as in the script
		// (it consumes random numbers either way).
		d := rng.IntN(n - 1)
		if d >= a.idx {
			d++ // uniform over the other hosts
		}
		if next > end {
			heap.Pop(&h)
			continue
		}
		size := int64(p.CDF.Quantile(rng.Float64() * 100))
		size = min(max(size, 1), hpcc.MaxFlowSize)
		flows = append(flows, hpcc.Flow{Src: a.host, Dst: p.Hosts[d], PG: pg, DPort: dport, Size: size, StartNs: a.t})
		h[0].t = next
		heap.Fix(&h, 0)
	}
	return flows, nil
}

// Incast describes incasts: events at Poisson times, each with Senders
// distinct hosts sending Size bytes at once to one receiver, the events
// frequent enough that the incasts carry Share of the hosts' total link
// capacity (seed 002 section 4.4.2: 60 senders x 500 KB at 2%).
type Incast struct {
	Hosts      []int
	LinkBps    float64
	Senders    int
	Size       int64
	Share      float64 // fraction of sum over hosts of LinkBps, 0 < Share <= 1
	StartNs    int64
	DurationNs int64
	Seed       uint64
	PG         int    // 0 means hpcc.DataPG
	DPort      uint16 // 0 means hpcc.DPortIncast
}

// EventsPerSecond is the rate of incast events: hosts * link rate * share /
// (8 * senders * size).
func (in *Incast) EventsPerSecond() float64 {
	return float64(len(in.Hosts)) * in.LinkBps * in.Share / 8 / (float64(in.Senders) * float64(in.Size))
}

// Generate returns the incast flows in start order (ties by source).
func (in *Incast) Generate() ([]hpcc.Flow, error) {
	if err := checkCommon(in.Hosts, in.LinkBps, in.StartNs, in.DurationNs, in.PG); err != nil {
		return nil, err
	}
	switch {
	case in.Senders < 1 || in.Senders > len(in.Hosts)-1:
		return nil, fmt.Errorf("traffic: incast of %d senders among %d hosts: want 1..hosts-1", in.Senders, len(in.Hosts))
	case in.Size < 1 || in.Size > hpcc.MaxFlowSize:
		return nil, fmt.Errorf("traffic: incast flow size %d out of range", in.Size)
	case !(in.Share > 0 && in.Share <= 1):
		return nil, fmt.Errorf("traffic: incast share %v, want 0 < share <= 1", in.Share)
	}
	rate := in.EventsPerSecond()
	if exp := rate * float64(in.DurationNs) / 1e9 * float64(in.Senders); exp > maxFlows {
		return nil, fmt.Errorf("traffic: about %.0f incast flows expected, at most %d per call", exp, maxFlows)
	}
	pg, dport := orDefault(in.PG, hpcc.DataPG), orDefault(in.DPort, hpcc.DPortIncast)
	rng := rand.New(rand.NewPCG(in.Seed, streamIncast))
	mean := 1e9 / rate
	end := in.StartNs + in.DurationNs
	perm := make([]int, len(in.Hosts))
	var flows []hpcc.Flow
	for t := in.StartNs + int64(-math.Log(1-rng.Float64())*mean); t <= end; t += int64(-math.Log(1-rng.Float64()) * mean) {
		// A random receiver, then Senders distinct others by a partial
		// Fisher-Yates shuffle of the remaining hosts.
		for i := range perm {
			perm[i] = i
		}
		r := rng.IntN(len(perm))
		perm[0], perm[r] = perm[r], perm[0]
		for i := 1; i <= in.Senders; i++ {
			j := i + rng.IntN(len(perm)-i)
			perm[i], perm[j] = perm[j], perm[i]
		}
		first := len(flows)
		for _, s := range perm[1 : in.Senders+1] {
			flows = append(flows, hpcc.Flow{Src: in.Hosts[s], Dst: in.Hosts[perm[0]], PG: pg, DPort: dport, Size: in.Size, StartNs: t})
		}
		ev := flows[first:]
		sort.Slice(ev, func(i, j int) bool { return ev[i].Src < ev[j].Src })
	}
	return flows, nil
}

// Merge merges flow lists that are each in start order into one in start
// order; on equal starts, flows of an earlier list come first.
func Merge(lists ...[]hpcc.Flow) []hpcc.Flow {
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	out := make([]hpcc.Flow, 0, n)
	for _, l := range lists {
		out = append(out, l...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartNs < out[j].StartNs })
	return out
}

// OfferedLoad is the bytes of flows as a fraction of what hosts links of
// linkBps carry in durationNs: the load a flow file really offers (with the
// generator's rule that drops each host's last arrival, a short window of a
// workload with large flows offers well under its nominal load).
func OfferedLoad(flows []hpcc.Flow, hosts int, linkBps float64, durationNs int64) float64 {
	if hosts <= 0 || linkBps <= 0 || durationNs <= 0 {
		return 0
	}
	var bytes int64
	for _, f := range flows {
		bytes += f.Size
	}
	return float64(bytes) * 8 / (float64(hosts) * linkBps * float64(durationNs) / 1e9)
}
