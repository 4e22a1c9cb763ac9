package incsched

import (
	"slices"
	"testing"
)

// TestIDs: schedules of several shapes have no clash within their window,
// IDs increase from 1, consecutive IDs would clash (testbed S4), and a bad shape is
// refused.
func TestIDs(t *testing.T) {
	for _, tc := range []struct {
		name            string
		groups          []Group
		offsets, window int
		wantErr         bool
		// naiveClash: consecutive IDs would clash (not in every shape: the
		// slot hash is a CRC, linear, so some messages' slots are disjoint).
		naiveClash bool
	}{
		{"testbed S4", []Group{{Group: 1, Messages: 192}, {Group: 2, Messages: 192}}, 16, 24, false, true},
		{"simulator S4", []Group{{Group: 1, Messages: 400}, {Group: 2, Messages: 400}}, 16, 16, false, false},
		{"uneven groups", []Group{{Group: 3, Messages: 10}, {Group: 9, Messages: 50}}, 4, 8, false, false},
		{"no offsets", []Group{{Group: 1, Messages: 1}}, 0, 4, true, false},
		{"no window", []Group{{Group: 1, Messages: 1}}, 4, 0, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids, err := IDs(tc.groups, tc.offsets, tc.window)
			if tc.wantErr {
				if err == nil {
					t.Fatal("scheduled")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var gs []uint16
			for i, g := range tc.groups {
				gs = append(gs, g.Group)
				if len(ids[i]) != g.Messages || ids[i][0] != 1 || !slices.IsSorted(ids[i]) {
					t.Fatalf("group %d: %d IDs from %d", g.Group, len(ids[i]), ids[i][0])
				}
			}
			if n := Clashes(gs, ids, tc.offsets, tc.window); n != 0 {
				t.Fatalf("%d clashes within the window", n)
			}
			if !tc.naiveClash {
				return
			}
			naive := make([][]uint16, len(ids))
			for i := range ids {
				for k := range ids[i] {
					naive[i] = append(naive[i], uint16(k+1))
				}
			}
			if Clashes(gs, naive, tc.offsets, tc.window) == 0 {
				t.Fatal("consecutive IDs show no clash: the count proves nothing")
			}
		})
	}
}
