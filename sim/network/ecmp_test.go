package network

import (
	"testing"

	"github.com/fastcnp/fastcnp/sim/hpcc"
)

// TestECMPNoPolarization: in a two-tier ECMP fabric (two pods of two ToRs and two
// aggregation switches, four cores, each aggregation switch to two of them) the
// aggregation switches spread what they get over both their cores, though every
// switch hashes the same fields with the same function: ecmpWeights gives the
// aggregation switches' members weight 2 (the ToRs' group size), so their pick
// uses the hash bit the ToRs' did not. With weight 1 each aggregation switch
// would send everything to one core (the ToR chose it by hash % 2, and so would
// it). Every core must carry at least 1/8 of the inter-pod bytes.
func TestECMPNoPolarization(t *testing.T) {
	const (
		t0, t1, t2, t3 = 8, 9, 10, 11
		a0, a1, a2, a3 = 12, 13, 14, 15
		c0, c1, c2, c3 = 16, 17, 18, 19
	)
	ls := []topoLink{
		{0, t0, 100}, {1, t0, 100}, {2, t1, 100}, {3, t1, 100}, {4, t2, 100}, {5, t2, 100}, {6, t3, 100}, {7, t3, 100},
		{t0, a0, 100}, {t0, a1, 100}, {t1, a0, 100}, {t1, a1, 100}, {t2, a2, 100}, {t2, a3, 100}, {t3, a2, 100}, {t3, a3, 100},
		{a0, c0, 100}, {a0, c1, 100}, {a1, c2, 100}, {a1, c3, 100}, {a2, c0, 100}, {a2, c1, 100}, {a3, c2, 100}, {a3, c3, 100},
	}
	var flows []hpcc.Flow
	for i := range 64 {
		flows = append(flows, flow(i%4, 4+(i/4)%4, 20_000, int64(i)*2_000))
	}
	cfg := baseConfig(topo(8, 12, ls...), ModeDCQCN, flows...)
	r := run(t, cfg)
	if r.Finished != len(flows) {
		t.Fatalf("%d of %d flows finished", r.Finished, len(flows))
	}
	core := map[int]uint64{}
	var total uint64
	for _, s := range r.Switches {
		if s.Node >= c0 && s.Node <= c3 {
			for _, p := range s.Ports {
				core[s.Node] += p.TxBytes
				total += p.TxBytes
			}
		}
	}
	for c := c0; c <= c3; c++ {
		if core[c]*8 < total {
			t.Errorf("core %d forwarded %d of %d bytes: polarized ECMP", c, core[c], total)
		}
	}
	t.Logf("core bytes: %v", core)
}
