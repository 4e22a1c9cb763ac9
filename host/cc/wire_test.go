package cc

import (
	"testing"

	"github.com/fastcnp/fastcnp/wire"
)

func TestCNPExtFromWire(t *testing.T) {
	tests := []struct {
		name string
		in   wire.CNPExt
		want CNPExt
	}{
		{"plain CNP", wire.CNPExt{}, CNPExt{}},
		{"switch window", wire.CNPExt{Version: 1, Flags: wire.CNPExtWindowValid | wire.CNPExtBySwitch,
			SwitchID: 7, Window: 30_000, Port: 3, QueueBytes: 200_000},
			CNPExt{WindowValid: true, BySwitch: true, SwitchID: 7, Port: 3, Window: 30_000, QueueBytes: 200_000}},
		{"by switch, no window", wire.CNPExt{Version: 1, Flags: wire.CNPExtBySwitch, SwitchID: 1},
			CNPExt{BySwitch: true, SwitchID: 1}},
		// uint32 max stays positive in int64: 4294967295
		{"largest fields", wire.CNPExt{Version: 1, Flags: wire.CNPExtWindowValid, Window: 1<<32 - 1, QueueBytes: 1<<32 - 1},
			CNPExt{WindowValid: true, Window: 4294967295, QueueBytes: 4294967295}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := CNPExtFromWire(&tc.in); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
