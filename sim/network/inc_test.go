package network

import (
	"errors"
	"testing"

	"github.com/fastcnp/fastcnp/host/agent"
)

// TestINCConfigErrors: INC parts the model cannot run are refused, and a
// controller that fails at the start fails New.
func TestINCConfigErrors(t *testing.T) {
	tp := topo(2, 1, topoLink{0, 2, 100}, topoLink{1, 2, 100})
	st, err := agent.NewINCStream(agent.INCParams{Group: 1, Workers: 1, Offsets: 4}, []uint16{1, 2}, 0)
	if err != nil {
		t.Fatal(err)
	}
	none := func([]int) (map[int]*INCTables, error) { return nil, nil }
	tests := []struct {
		name string
		edit func(c *Config)
	}{
		{"no controller", func(c *Config) { c.INC.Controller = nil }},
		{"no end", func(c *Config) { c.UntilNs = 0 }},
		{"stream to a switch", func(c *Config) { c.INC.Streams[0].Dst = 2 }},
		{"stream to itself", func(c *Config) { c.INC.Streams[0].Dst = 0 }},
		{"no messages", func(c *Config) { c.INC.Streams[0].Stream = nil }},
		{"negative interval", func(c *Config) { c.INC.Streams[0].IntervalNs = -1 }},
		{"unknown link", func(c *Config) { c.INC.Links = []LinkEvent{{AtNs: 5, Link: 2, Down: true}} }},
		{"negative delay", func(c *Config) { c.INC.NotifyNs = -1 }},
		{"link events out of order", func(c *Config) {
			c.INC.Links = []LinkEvent{{AtNs: 9, Link: 0, Down: true}, {AtNs: 5, Link: 0}}
		}},
		{"controller fails", func(c *Config) {
			c.INC.Controller = func([]int) (map[int]*INCTables, error) { return nil, errors.New("no tree") }
		}},
		{"route to a missing port", func(c *Config) {
			c.INC.Controller = func([]int) (map[int]*INCTables, error) {
				return map[int]*INCTables{2: {Route: []uint16{9}}}, nil
			}
		}},
	}
	for _, tt := range tests {
		cfg := baseConfig(tp, ModeFastCNP)
		cfg.UntilNs = 100_000
		cfg.INC = &INCConfig{Streams: []INCStream{{Src: 0, Dst: 1, Stream: st}}, Controller: none}
		tt.edit(&cfg)
		if _, err := New(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: New error %v, want ErrConfig", tt.name, err)
		}
	}
}
