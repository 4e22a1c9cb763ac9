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
	Num      uint16 `json:"num"`
	Ifname   string `json:"ifname"`
	MAC      string `json:"mac"`
	RateBps  int64  `json:"rate_bps"`
	TMIndex  int    `json:"tm_index"`
	RxFrames uint64 `json:"rx_frames"`
	RxBytes  uint64 `json:"rx_bytes"`
	TxFrames uint64 `json:"tx_frames"`
	TxBytes  uint64 `json:"tx_bytes"`
	TxErrors uint64 `json:"tx_errors"`
	// LinkDowns counts the reads that found the link down (the switch
	// keeps reading: frames flow again when it comes back up).
	LinkDowns uint64 `json:"link_downs,omitempty"`
	TxDropped uint64 `json:"tx_dropped"`
	InDelay   int    `json:"in_delay_line"`
	// Input is the receive queue as the switch last measured it, and what it lost.
	Input  InputDump       `json:"input"`
	Socket *afpacket.Stats `json:"socket,omitempty"`
}

// InputDump is a port's input side in a Dump (docs/target.md, "Input backlog and PFC").
type InputDump struct {
	// Drops are the frames the kernel dropped at this port's full receive queue: they
	// never reached the pipeline (also counted in the P4 counter dropped[port]).
	Drops uint64 `json:"drops"`
	// BacklogBytes is the receive queue at the last measurement (the kernel's
	// accounting: a frame's buffer, ~830 B for 64 B on veth), BacklogMaxBytes the most
	// measured, BufferBytes the receive buffer (the queue's capacity).
	BacklogBytes    int64 `json:"backlog_bytes"`
	BacklogMaxBytes int64 `json:"backlog_max_bytes"`
	BufferBytes     int64 `json:"buffer_bytes"`
	// Held: the port is under an input hold now (PFC XOFF sent for its lossless
	// priorities); Holds counts the holds started.
	Held  bool   `json:"held"`
	Holds uint64 `json:"holds"`
	// Measurements counts the times the RX goroutine measured the receive queue (a
	// dump measures it too, uncounted).
	Measurements uint64 `json:"measurements"`
	// Deferred counts the lossless frames kept out of the TM for want of room, Pending
	// those waiting now, Stalls the times the port stopped reading for them.
	Deferred uint64 `json:"deferred"`
	Pending  int    `json:"pending"`
	Stalls   uint64 `json:"stalls"`
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
	// The receive queues now (system calls, outside the lock), so that the input
	// drops are current.
	backlogs := make([]*afpacket.Backlog, len(s.ports))
	for i, p := range s.ports {
		if bl, ok := p.link.(BacklogReporter); ok {
			if b, err := bl.Backlog(); err == nil {
				backlogs[i] = &b
			}
		}
	}
	now := s.lock()
	for i, b := range backlogs {
		if b != nil {
			s.noteBacklog(s.ports[i], *b)
		}
	}
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
	inputs := make([]InputDump, len(s.ports))
	for i, p := range s.ports {
		inDelay[i] = p.delay.Len()
		in := &p.input
		inputs[i] = InputDump{Drops: in.drops, BacklogBytes: in.backlog, BacklogMaxBytes: in.backlogMax, BufferBytes: in.capacity,
			Held: s.tm.InputHeld(p.tmIdx), Holds: in.holds, Measurements: in.measured,
			Deferred: in.deferred, Pending: len(p.pending), Stalls: in.stalls}
	}
	s.unlock(context.Background(), nil)
	for i, p := range s.ports {
		pd := PortDump{Num: p.cfg.Num, Ifname: p.cfg.Ifname, MAC: p.mac.String(), RateBps: p.cfg.RateBps, TMIndex: p.tmIdx,
			RxFrames: p.rxFrames.Load(), RxBytes: p.rxBytes.Load(), TxFrames: p.txPkts.Load(), TxBytes: p.txBytes.Load(),
			TxErrors: p.txErrors.Load(), TxDropped: p.txDropped.Load(), LinkDowns: p.linkDowns.Load(), InDelay: inDelay[i], Input: inputs[i]}
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
