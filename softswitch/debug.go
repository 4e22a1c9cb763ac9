package softswitch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/fastcnp/fastcnp/afpacket"
	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/model/tm"
)

// DebugPath is the HTTP path of the JSON dump on the debug endpoint.
const DebugPath = "/debug/fastcnp"

// Dump is the switch's state for debugging: every counter of the runtime, the ports,
// the traffic manager and the pipeline. It is what the debug endpoint serves as JSON.
type Dump struct {
	// NowNs is the data-plane clock; Uptime the time since New.
	NowNs  int64  `json:"now_ns"`
	Uptime string `json:"uptime"`
	// Runtime are the runtime's counters.
	Runtime Counters `json:"runtime"`
	// Ports are the data-plane ports in configuration order.
	Ports []PortDump `json:"ports"`
	// TM is the traffic manager's snapshot; its Ports are indexed by PortDump.TMIndex
	// (the last one is the internal CPU port that packet-outs enter through).
	TM tm.Snapshot `json:"tm"`
	// Pipeline are the non-zero cells of the P4 counters, by counter name.
	Pipeline map[string][]pipeline.CounterValue `json:"pipeline_counters"`
	// Digests are the digests waiting in the pipeline and dropped, by digest name.
	Digests map[string]DigestDump `json:"digests"`
}

// PortDump is one port in a Dump.
type PortDump struct {
	Num       uint16          `json:"num"`
	Ifname    string          `json:"ifname"`
	MAC       string          `json:"mac"`
	RateBps   int64           `json:"rate_bps"`
	TMIndex   int             `json:"tm_index"`
	RxFrames  uint64          `json:"rx_frames"`
	RxBytes   uint64          `json:"rx_bytes"`
	TxFrames  uint64          `json:"tx_frames"`
	TxBytes   uint64          `json:"tx_bytes"`
	TxErrors  uint64          `json:"tx_errors"`
	TxDropped uint64          `json:"tx_dropped"`
	InDelay   int             `json:"in_delay_line"`
	Socket    *afpacket.Stats `json:"socket,omitempty"`
}

// DigestDump is one digest's queue in a Dump.
type DigestDump struct {
	Pending int    `json:"pending"`
	Drops   uint64 `json:"drops"`
}

// Dump returns a copy of every counter (it takes the data-plane lock briefly).
func (s *Switch) Dump() Dump {
	d := Dump{Pipeline: make(map[string][]pipeline.CounterValue), Digests: make(map[string]DigestDump)}
	sc := pipeline.ProgramSchema()
	now := s.lock()
	d.NowNs, d.Uptime = now, time.Duration(now).Round(time.Millisecond).String()
	s.advance(now)
	d.Runtime = s.ctr
	d.TM = s.tm.Snapshot(s.clk)
	var cells []pipeline.CounterValue
	for _, c := range sc.Counters {
		var err error
		if cells, err = s.pl.ReadCounter(c.ID, -1, cells[:0]); err != nil {
			continue
		}
		for _, v := range cells {
			if v.Packets != 0 || v.Bytes != 0 {
				d.Pipeline[c.Name] = append(d.Pipeline[c.Name], v)
			}
		}
	}
	for _, g := range sc.Digests {
		pend, _ := s.pl.DigestsPending(g.ID)
		drops, _ := s.pl.DigestDrops(g.ID)
		d.Digests[g.Name] = DigestDump{Pending: pend, Drops: drops}
	}
	inDelay := make([]int, len(s.ports))
	for i, p := range s.ports {
		inDelay[i] = p.delay.Len()
	}
	s.unlock(context.Background(), nil)
	for i, p := range s.ports {
		pd := PortDump{Num: p.cfg.Num, Ifname: p.cfg.Ifname, MAC: p.mac.String(), RateBps: p.cfg.RateBps, TMIndex: p.tmIdx,
			RxFrames: p.rxFrames.Load(), RxBytes: p.rxBytes.Load(), TxFrames: p.txPkts.Load(), TxBytes: p.txBytes.Load(),
			TxErrors: p.txErrors.Load(), TxDropped: p.txDropped.Load(), InDelay: inDelay[i]}
		if pp, ok := p.link.(*afpacket.Port); ok {
			st := pp.Stats()
			pd.Socket = &st
		}
		d.Ports = append(d.Ports, pd)
	}
	return d
}

// DumpJSON returns Dump as indented JSON.
func (s *Switch) DumpJSON() ([]byte, error) {
	b, err := json.MarshalIndent(s.Dump(), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("softswitch: dump: %w", err)
	}
	return b, nil
}

// serveDebug serves DebugPath on lis until ctx ends.
func (s *Switch) serveDebug(ctx context.Context, lis net.Listener) error {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+DebugPath, func(w http.ResponseWriter, _ *http.Request) {
		b, err := s.DumpJSON()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(append(b, '\n'))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	s.log.WithField("addr", lis.Addr().String()).WithField("path", DebugPath).Info("serving debug counters")
	err := srv.Serve(lis)
	cancel()
	<-done
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("softswitch: debug server: %w", err)
	}
	return nil
}
