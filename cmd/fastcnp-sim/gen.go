package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/fastcnp/fastcnp/internal/units"
	"github.com/fastcnp/fastcnp/sim/hpcc"
	"github.com/fastcnp/fastcnp/sim/sweep"
	"github.com/fastcnp/fastcnp/sim/traffic"
)

func init() {
	registerCommand(&command{
		name: "gen", order: 10,
		summary: "make a flow file: Poisson flows per host from a flow-size CDF at a load, random pairs (HPCC traffic_gen.py), plus incasts",
		usage:   "--cdf FILE (--topology FILE | --hosts N) --load L --duration D [flags]",
		examples: `  # WebSearch at 30% on the HPCC fat tree for 10 ms, seed 1, as traffic_gen.py would
  fastcnp-sim gen --topology sim/data/hpcc/fat.txt --cdf sim/data/hpcc/WebSearch_distribution.txt \
      --load 0.3 --duration 10ms --seed 1 -o web30.txt
  # seed 002's random-flow test: FB_Hadoop at 30% plus 60 x 500 KB incasts at 2% of the load
  fastcnp-sim gen --topology sim/data/hpcc/fat.txt --cdf sim/data/hpcc/FbHdp_distribution.txt \
      --load 0.3 --duration 10ms --incast 60x500KB@0.02 -o fb30_incast.txt
  # traffic_gen.py's own arguments: hosts 0..15 at 10 Gb/s
  fastcnp-sim gen --hosts 16 --rate 10Gbps --cdf sim/data/hpcc/AliStorage2019.txt --load 0.5 --duration 1s`,
		flags: genFlags,
	})
}

func genFlags(fs *flag.FlagSet) func(e *env, args []string) error {
	cdfPath := fs.String("cdf", "", "flow-size CDF file (\"size percent\" lines, as traffic_gen.py's -c)")
	topoPath := fs.String("topology", "", "topology file: flows between its hosts, at its host link rate")
	nHosts := fs.Int("hosts", 0, "hosts 0..N-1 instead of a topology (traffic_gen.py's -n)")
	rate := fs.String("rate", "", "host link rate (ns-3 units: 100Gbps, 25Gb/s); default: the topology's, else 10Gbps as traffic_gen.py")
	load := fs.String("load", "0.3", "offered load per host link: a fraction (0.3) or a percentage (30%)")
	dur := fs.String("duration", "", "length of the arrival window (10ms, 1s)")
	start := fs.String("start", "2s", "first instant (traffic_gen.py starts flows at 2 s)")
	seed := fs.Uint64("seed", 1, "random seed: the same seed gives the same flows")
	incast := fs.String("incast", "", "incasts SENDERSxSIZE@SHARE, e.g. 60x500KB@0.02 (share of the total host capacity)")
	out := fs.String("o", "-", "output flow file (- for stdout)")
	return func(e *env, args []string) error {
		if len(args) > 0 {
			return usagef("unexpected argument %q", args[0])
		}
		if *cdfPath == "" || *dur == "" {
			return usagef("--cdf and --duration are required")
		}
		if (*topoPath == "") == (*nHosts == 0) {
			return usagef("give either --topology or --hosts")
		}
		l, err := parseLoad(*load)
		if err != nil {
			return usagef("--load: %v", err)
		}
		startNs, durNs, err := window(*start, *dur)
		if err != nil {
			return err
		}
		var spec *sweep.IncastSpec
		if *incast != "" {
			if spec, err = parseIncast(*incast); err != nil {
				return usagef("--incast: %v", err)
			}
		}
		var rateBps float64
		if *rate != "" {
			r, err := hpcc.ParseRate(*rate)
			if err != nil {
				return usagef("--rate: %v", err)
			}
			rateBps = float64(r)
		}
		cdf, err := readFile(*cdfPath, hpcc.ParseCDF)
		if err != nil {
			return err
		}
		var hosts []int
		if *topoPath != "" {
			topo, err := readFile(*topoPath, hpcc.ParseTopology)
			if err != nil {
				return err
			}
			hosts = topo.Hosts()
			if rateBps == 0 {
				if rateBps, err = sweep.HostRate(topo); err != nil {
					return fmt.Errorf("%s: %w", *topoPath, err)
				}
			}
		} else {
			if *nHosts < 2 || *nHosts > hpcc.MaxNodes {
				return usagef("--hosts %d: want 2..%d", *nHosts, hpcc.MaxNodes)
			}
			for i := range *nHosts {
				hosts = append(hosts, i)
			}
			if rateBps == 0 {
				rateBps = 10e9
			}
		}
		bg := traffic.Poisson{Hosts: hosts, LinkBps: rateBps, Load: l, StartNs: startNs, DurationNs: durNs, CDF: cdf, Seed: *seed}
		flows, err := bg.Generate()
		if err != nil {
			return err
		}
		nIncast := 0
		if spec != nil {
			in := traffic.Incast{Hosts: hosts, LinkBps: rateBps, Senders: spec.Senders, Size: spec.Size, Share: spec.Share, StartNs: startNs, DurationNs: durNs, Seed: *seed}
			inc, err := in.Generate()
			if err != nil {
				return err
			}
			nIncast = len(inc)
			flows = traffic.Merge(flows, inc)
		}
		w, closeOut, err := createOutput(e, *out)
		if err != nil {
			return err
		}
		if err := hpcc.WriteFlows(w, flows); err != nil {
			closeOut()
			return err
		}
		if err := closeOut(); err != nil {
			return err
		}
		offered := traffic.OfferedLoad(flows, len(hosts), rateBps, durNs)
		fmt.Fprintf(e.stderr, "gen: %d flows (%d incast) from %d hosts at %s, offered load %.3f of the host links over %s (seed %d)\n",
			len(flows), nIncast, len(hosts), hpcc.FormatRate(uint64(rateBps)), offered, units.FormatDuration(time.Duration(durNs)), *seed)
		return nil
	}
}
