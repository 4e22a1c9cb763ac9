package fairshare

import (
	"math"
	"testing"
)

func TestMaxMinFair(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name     string
		capacity []float64
		paths    [][]int
		demand   []float64
		want     []float64
		wantErr  bool
	}{
		{name: "one link shared equally", capacity: []float64{90}, paths: [][]int{{0}, {0}, {0}}, want: []float64{30, 30, 30}},
		{
			// The classic example: flow 0 crosses both links, flows 1 and 2
			// one each; link 0 is the tighter one.
			name: "parking lot", capacity: []float64{10, 20},
			paths: [][]int{{0, 1}, {0}, {1}}, want: []float64{5, 5, 15},
		},
		{
			// S1 in miniature: three senders and a victim share an uplink of
			// 100, the senders also a 40 bottleneck, every host link is 40.
			name: "victim", capacity: []float64{100, 40, 40, 40, 40, 40, 40, 40},
			paths: [][]int{{2, 0, 1}, {3, 0, 1}, {4, 0, 1}, {5, 0, 6}},
			want:  []float64{40.0 / 3, 40.0 / 3, 40.0 / 3, 40},
		},
		{
			name: "demand limits release capacity", capacity: []float64{100},
			paths: [][]int{{0}, {0}, {0}}, demand: []float64{10, inf, 20}, want: []float64{10, 70, 20},
		},
		{name: "zero capacity", capacity: []float64{0, 10}, paths: [][]int{{0, 1}, {1}}, want: []float64{0, 10}},
		{name: "no flows", capacity: []float64{10}, paths: nil, want: []float64{}},
		{name: "unlimited flow without links", capacity: []float64{10}, paths: [][]int{{}}, wantErr: true},
		{name: "flow with no links but a demand", capacity: []float64{10}, paths: [][]int{{}}, demand: []float64{3}, want: []float64{3}},
		{name: "unknown link", capacity: []float64{10}, paths: [][]int{{1}}, wantErr: true},
		{name: "link twice", capacity: []float64{10}, paths: [][]int{{0, 0}}, wantErr: true},
		{name: "negative capacity", capacity: []float64{-1}, paths: [][]int{{0}}, wantErr: true},
		{name: "demand count", capacity: []float64{1}, paths: [][]int{{0}}, demand: []float64{1, 2}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MaxMinFair(tt.capacity, tt.paths, tt.demand)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("MaxMinFair = %v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("MaxMinFair: %v", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("MaxMinFair = %v, want %v", got, tt.want)
			}
			for i := range got {
				if math.Abs(got[i]-tt.want[i]) > 1e-6 {
					t.Fatalf("MaxMinFair = %v, want %v", got, tt.want)
				}
			}
			// Max-min property: no link over capacity.
			used := make([]float64, len(tt.capacity))
			for f, p := range tt.paths {
				for _, l := range p {
					used[l] += got[f]
				}
			}
			for l := range used {
				if used[l] > tt.capacity[l]+1e-6 {
					t.Errorf("link %d carries %v > capacity %v", l, used[l], tt.capacity[l])
				}
			}
		})
	}
}

// TestFluidFinish checks the fluid processor-sharing max-min model against
// hand-computed cases (capacities in Mb/s, sizes in Mbit, times in s).
func TestFluidFinish(t *testing.T) {
	inf := math.Inf(1)
	const mb = 8e6 // bits per MB (10^6 bytes)
	tests := []struct {
		name     string
		capacity []float64
		flows    []FluidFlow
		finish   []float64
		sent     []float64 // nil: the flows' Bits
		wantErr  bool
	}{
		{
			// S2 4-to-1 at 100 Mb/s: four flows share 25 Mb/s until the 50 KB
			// one ends at 0.4 Mbit / 25 Mb/s = 16 ms; three at 33.3 Mb/s until
			// the 1.5 MB one has sent its other 11.6 Mbit: 16 + 348 = 364 ms;
			// two at 50 Mb/s for their last 4 Mbit each: 364 + 80 = 444 ms
			// (= 44.4 Mbit / 100 Mb/s: the link never idles).
			name: "incast 2MB 2MB 1.5MB 50KB", capacity: []float64{100e6},
			flows: []FluidFlow{
				{Bits: 2 * mb, Path: []int{0}}, {Bits: 2 * mb, Path: []int{0}},
				{Bits: 1.5 * mb, Path: []int{0}}, {Bits: 0.05 * mb, Path: []int{0}},
			},
			finish: []float64{0.444, 0.444, 0.364, 0.016},
		},
		{
			// Flow 1 arrives at 40 ms when flow 0 has 4 Mbit left: both at
			// 50 Mb/s, flow 0 ends at 120 ms; flow 1 then has 4 Mbit left
			// alone at 100 Mb/s: 160 ms.
			name: "staggered starts", capacity: []float64{100e6},
			flows:  []FluidFlow{{Bits: 1 * mb, Path: []int{0}}, {Start: 0.04, Bits: 1 * mb, Path: []int{0}}},
			finish: []float64{0.12, 0.16},
		},
		{
			// Two links: flow 0 crosses both and is held to 40 Mb/s by link 1,
			// flow 1 takes the other 60 on link 0. Flow 0 (4 Mbit) ends at
			// 100 ms; flow 1 has sent 6 of 8 Mbit and sends the last 2 alone
			// at 100 Mb/s: 120 ms.
			name: "two links, max-min not an equal split", capacity: []float64{100e6, 40e6},
			flows:  []FluidFlow{{Bits: 0.5 * mb, Path: []int{0, 1}}, {Bits: 1 * mb, Path: []int{0}}},
			finish: []float64{0.1, 0.12},
		},
		{
			// Parking lot, all 100 Mb/s: 0 crosses links 0 and 1, 1 only link
			// 0, 2 only link 1; all at 50. Flow 1 (4 Mbit) ends at 80 ms; flow
			// 0 (8 Mbit) has 4 left and still shares link 1 with flow 2: 50
			// each until 160 ms; flow 2 (12 Mbit) has 4 left alone: 200 ms.
			name: "parking lot with departures", capacity: []float64{100e6, 100e6},
			flows: []FluidFlow{
				{Bits: 1 * mb, Path: []int{0, 1}}, {Bits: 0.5 * mb, Path: []int{0}}, {Bits: 1.5 * mb, Path: []int{1}},
			},
			finish: []float64{0.16, 0.08, 0.2},
		},
		{
			// A long flow (no size) from 0 to 1 s shares the link with a
			// 2 Mbit flow starting at 0.5 s: 50 Mb/s each, the sized flow
			// ends at 0.54 s; the long one sends 0.5*100 + 0.04*50 + 0.46*100
			// = 98 Mbit.
			name: "long flow stops, sized flow finishes", capacity: []float64{100e6},
			flows:  []FluidFlow{{Bits: inf, Stop: 1, Path: []int{0}}, {Start: 0.5, Bits: 0.25 * mb, Path: []int{0}}},
			finish: []float64{inf, 0.54},
			sent:   []float64{98e6, 2e6},
		},
		{
			name: "a flow of 0 bits ends when it starts", capacity: []float64{100e6},
			flows:  []FluidFlow{{Start: 0.3, Bits: 0, Path: []int{0}}, {Bits: 1 * mb, Path: []int{0}}},
			finish: []float64{0.3, 0.08},
		},
		{
			name: "idle gap between flows", capacity: []float64{100e6},
			flows:  []FluidFlow{{Bits: 1 * mb, Path: []int{0}}, {Start: 1, Bits: 1 * mb, Path: []int{0}}},
			finish: []float64{0.08, 1.08},
		},
		{name: "zero capacity never finishes", capacity: []float64{0}, flows: []FluidFlow{{Bits: 1, Path: []int{0}}}, wantErr: true},
		{name: "no link", capacity: []float64{1}, flows: []FluidFlow{{Bits: 1}}, wantErr: true},
		{name: "unknown link", capacity: []float64{1}, flows: []FluidFlow{{Bits: 1, Path: []int{3}}}, wantErr: true},
		{name: "endless", capacity: []float64{1}, flows: []FluidFlow{{Bits: inf, Path: []int{0}}}, wantErr: true},
		{name: "negative size", capacity: []float64{1}, flows: []FluidFlow{{Bits: -1, Path: []int{0}}}, wantErr: true},
		{name: "NaN start", capacity: []float64{1}, flows: []FluidFlow{{Start: math.NaN(), Bits: 1, Path: []int{0}}}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			finish, sent, err := FluidFinish(tt.capacity, tt.flows)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("FluidFinish = %v, want an error", finish)
				}
				return
			}
			if err != nil {
				t.Fatalf("FluidFinish: %v", err)
			}
			for i := range tt.flows {
				if !(finish[i] == tt.finish[i] || math.Abs(finish[i]-tt.finish[i]) < 1e-9) {
					t.Errorf("flow %d finishes at %v s, want %v", i, finish[i], tt.finish[i])
				}
				want := tt.flows[i].Bits
				if tt.sent != nil {
					want = tt.sent[i]
				}
				if math.Abs(sent[i]-want) > 1e-3 {
					t.Errorf("flow %d sent %v bits, want %v", i, sent[i], want)
				}
			}
		})
	}
}
