package pipeline

import (
	"math/rand/v2"
	"testing"

	"github.com/fastcnp/fastcnp/p4src"
)

// TestFlatIndex runs random sets, deletes and gets against a Go map, with keys
// drawn from small ranges so that probe runs collide and deletions shift them.
func TestFlatIndex(t *testing.T) {
	tests := []struct {
		name      string
		keys, ops int
		seed      uint64
	}{
		{"few keys", 8, 2_000, 1},
		{"many keys", 3_000, 60_000, 2},
		{"grow and shrink", 500, 40_000, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(tt.seed, 5))
			var x flatIndex
			ref := map[[2]uint64]int32{}
			key := func() [2]uint64 {
				k := uint64(r.IntN(tt.keys))
				return [2]uint64{k % 3, k * 0x10001} // hi and lo both vary
			}
			for op := range tt.ops {
				k := key()
				switch r.IntN(3) {
				case 0:
					v := int32(r.IntN(1 << 20))
					x.set(k[0], k[1], v)
					ref[k] = v
				case 1:
					x.del(k[0], k[1])
					delete(ref, k)
				}
				got, ok := x.get(k[0], k[1])
				want, wok := ref[k]
				if ok != wok || got != want {
					t.Fatalf("op %d: get(%v) = %d, %v; want %d, %v", op, k, got, ok, want, wok)
				}
				if x.n != len(ref) {
					t.Fatalf("op %d: %d keys, want %d", op, x.n, len(ref))
				}
			}
			for k, want := range ref {
				if got, ok := x.get(k[0], k[1]); !ok || got != want {
					t.Fatalf("get(%v) = %d, %v; want %d", k, got, ok, want)
				}
			}
		})
	}
}

// TestPortConfigFollowsWrites: the port_config a packet carries is the table's at
// that moment (the decoded per-port cache follows modify, delete, insert and the
// default action).
func TestPortConfigFollowsWrites(t *testing.T) {
	p := newTest(t, p4src.PortModeFastcnp)
	tmpl := dataSR(1000).build(t)
	meta := func() PortConfig {
		t.Helper()
		frame := append([]byte(nil), tmpl...)
		return ingress(t, p, frame, portS, 0).Meta.PortCfg
	}
	steps := []struct {
		name     string
		write    func() error
		hit      bool
		mode     uint8
		kminWant uint32
	}{
		{"installed", func() error { return nil }, true, p4src.PortModeFastcnp, 5_000},
		{"modified", func() error {
			return p.ModifyEntry(portConfigEntry(portR, portCfg{mode: p4src.PortModeECN, kmin: 7_000, kmax: 200_000, pmax: 655}))
		}, true, p4src.PortModeECN, 7_000},
		{"deleted", func() error { return p.DeleteEntry(portConfigEntry(portR, portCfg{})) }, false, 0, 0},
		{"inserted again", func() error {
			return p.InsertEntry(portConfigEntry(portR, portCfg{mode: p4src.PortModeFastcnp, kmin: 9_000, kmax: 200_000, pmax: 655}))
		}, true, p4src.PortModeFastcnp, 9_000},
	}
	for _, s := range steps {
		mustOK(t, s.write())
		c := meta()
		if c.Hit != s.hit || c.Mode != s.mode || c.RedKminBytes != s.kminWant {
			t.Fatalf("%s: port config hit %v mode %d kmin %d; want %v %d %d", s.name, c.Hit, c.Mode, c.RedKminBytes, s.hit, s.mode, s.kminWant)
		}
	}
}
