package main

import (
	"flag"

	"github.com/fastcnp/fastcnp/sim/sweep"
)

func init() {
	registerCommand(&command{
		name: "merge", order: 50,
		summary: "build a sweep's tables and plots from its result files (after all shards ran)",
		usage:   "[flags] DIR",
		examples: `  # after the shards of a sweep wrote into /shared/s3/points
  fastcnp-sim merge /shared/s3
  # incast flows only, into another directory, with points still missing
  fastcnp-sim merge --type incast --allow-missing --out /shared/s3/incast /shared/s3`,
		flags: mergeFlags,
	})
}

func mergeFlags(fs *flag.FlagSet) func(e *env, args []string) error {
	var af analysisFlags
	af.register(fs)
	out := fs.String("out", "", "output directory (default DIR/merged)")
	allow := fs.Bool("allow-missing", false, "merge even if some points have no result file yet")
	return func(e *env, args []string) error {
		if len(args) != 1 {
			return usagef("want the sweep's output directory")
		}
		f, err := af.filter()
		if err != nil {
			return err
		}
		o := *out
		if o == "" {
			o = mergedDir(args[0])
		}
		return mergeAndReport(e, args[0], o, sweep.MergeOptions{Filter: f, Step: af.step, AllowMissing: *allow})
	}
}
