package main

import (
	"errors"
	"flag"
	"fmt"

	"github.com/fastcnp/fastcnp/sim/hpcc"
	"github.com/fastcnp/fastcnp/sim/scenario"
)

func init() {
	registerCommand(&command{
		name: "topo", order: 15,
		summary: "write a fat-tree topology file (HPCC format) of 16, 64 or a multiple of 64 hosts (320: fat.txt)",
		usage:   "--hosts N [-o FILE]",
		examples: `  # the 1024-host fat tree of the speed measurements (docs/performance.md)
  fastcnp-sim topo --hosts 1024 -o fat1024.txt`,
		flags: func(fs *flag.FlagSet) func(e *env, args []string) error {
			hosts := fs.Int("hosts", 320, "hosts: 16 (one ToR), 64 (one pod) or a multiple of 64 (pods of 4 ToRs x 16 hosts, 4 aggregation switches, 16 cores)")
			out := fs.String("o", "-", "output file (- for stdout)")
			return func(e *env, args []string) error {
				if len(args) > 0 {
					return usagef("unexpected argument %q", args[0])
				}
				o, err := scenario.FatTreeFor(*hosts)
				if err != nil {
					return usagef("--hosts: %v", err)
				}
				t, err := scenario.FatTree(o)
				if err != nil {
					return err
				}
				w, closeOut, err := createOutput(e, *out)
				if err != nil {
					return err
				}
				if err := hpcc.WriteTopology(w, t); err != nil {
					return errors.Join(fmt.Errorf("write topology: %w", err), closeOut())
				}
				return closeOut()
			}
		},
	})
}
