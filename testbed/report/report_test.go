package report

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/testbed"
)

func TestPlots(t *testing.T) {
	mk := func(m config.Mode) *testbed.Result {
		return &testbed.Result{Topology: "t", Mode: m,
			Flows: []testbed.FlowResult{
				{Name: "a", FairShareBps: 5e7, Series: []testbed.RatePoint{{T: 0, Bps: 1e7}, {T: 1, Bps: 4e7}}},
				{Name: "victim", Victim: true, FairShareBps: 1e8, Series: []testbed.RatePoint{{T: 0, Bps: 2e7}, {T: 1, Bps: 9e7}}},
				{Name: "silent", FairShareBps: 1e7},
			},
			Switches: []testbed.SwitchCounters{{Name: "s1", Ports: []testbed.PortCounters{{Port: 1, Peer: "h1"}}}},
			Queues: []testbed.QueueSample{
				{T: 0, Switch: "s1", Bytes: map[uint16]int64{1: 0, 2: 0}},
				{T: 1, Switch: "s1", Bytes: map[uint16]int64{1: 30000, 2: 100}},
			}}
	}
	tests := []struct {
		name string
		runs []*testbed.Result
		want []string
	}{
		{"one run", []*testbed.Result{mk(config.ModeECN)}, []string{"rates-ecn.png", "queues-ecn.png"}},
		{"two runs", []*testbed.Result{mk(config.ModeECN), mk(config.ModeFastCNP)},
			[]string{"rates-ecn.png", "queues-ecn.png", "rates-fastcnp.png", "queues-fastcnp.png", "rates.png", "queues.png"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			files, err := Plots(tt.runs, dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(files) != len(tt.want) {
				t.Fatalf("files = %v, want %v", files, tt.want)
			}
			for i, f := range tt.want {
				if files[i] != f {
					t.Errorf("file %d = %s, want %s", i, files[i], f)
				}
				st, err := os.Stat(filepath.Join(dir, f))
				if err != nil {
					t.Errorf("%s: %v", f, err)
				} else if st.Size() < 1000 {
					t.Errorf("%s: only %d bytes", f, st.Size())
				}
			}
		})
	}
}

// TestINCPlots: the INC plot of a run with two upper switches, an
// incomplete message and a link event is a PNG of both panels.
func TestINCPlots(t *testing.T) {
	rep := &testbed.INCReport{
		Uppers: []testbed.INCUpperLd{{Name: "spine1", WeightShare: 0.25, BucketShare: 0.25, Share: 0.26},
			{Name: "spine2", WeightShare: 0.75, BucketShare: 0.75, Share: 0.74}},
		Detail: []testbed.INCMessageDetail{{Group: 1, Message: 1, DueMs: 500, LastResultMs: 510, Complete: true},
			{Group: 2, Message: 1, DueMs: 500, LastResultMs: 530, Complete: true}, {Group: 1, Message: 2, DueMs: 515}},
	}
	r := &testbed.Result{Topology: "t", Mode: config.ModeFastCNP,
		LinkEvents: []testbed.LinkEventResult{{LinkEvent: testbed.LinkEvent{Port: "leaf2-p9", Down: true}, ChangedMs: 512, InstalledMs: 540}}}
	dir := t.TempDir()
	name, err := INCPlots(rep, r, dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil || name != "inc-fastcnp.png" {
		t.Fatalf("%s: %v", name, err)
	}
	if b := img.Bounds(); b.Dx() < 2*b.Dy() { // two panels side by side
		t.Errorf("image %v: not two panels wide", b)
	}
}
