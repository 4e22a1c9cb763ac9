package testbed

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/fastcnp/fastcnp/internal/netns"
	"github.com/fastcnp/fastcnp/model/tm"
	softswitch "github.com/fastcnp/fastcnp/softswitch"
)

// Pipeline counter names (docs/dataplane.md) as the switch's debug dump
// names them.
const (
	ctrSwitchCNP = "FastcnpEgress.switch_cnp_sent"
	ctrECNMarked = "FastcnpEgress.ecn_marked"
	ctrPauseRx   = "FastcnpIngress.pfc_pause_rx"
	ctrResumeRx  = "FastcnpIngress.pfc_resume_rx"
	ctrDropped   = "FastcnpIngress.dropped"
	// INC (spec 04), by ingress port.
	ctrINCContributions = "FastcnpIngress.inc_contributions"
	ctrINCDuplicates    = "FastcnpIngress.inc_duplicates"
	ctrINCResults       = "FastcnpIngress.inc_results"
	ctrINCSlotBusy      = "FastcnpIngress.inc_slot_busy"
	ctrINCTakeovers     = "FastcnpIngress.inc_slot_takeovers"
)

// nsHTTPClient returns an HTTP client whose connections are opened inside
// ns (the socket keeps the namespace it was created in).
func nsHTTPClient(ns *netns.NS) *http.Client {
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := ns.Do(func() error {
			var d net.Dialer
			var err error
			c, err = d.DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}
	return &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{DialContext: dial, DisableKeepAlives: false, MaxIdleConnsPerHost: 1},
	}
}

// fetchDump reads a fastcnp-switch debug dump.
func fetchDump(ctx context.Context, c *http.Client, addr string) (*softswitch.Dump, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+softswitch.DebugPath, nil)
	if err != nil {
		return nil, fmt.Errorf("testbed: debug request: %w", err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("testbed: debug dump %s: %w", addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("testbed: debug dump %s: %w", addr, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("testbed: debug dump %s: %s: %s", addr, resp.Status, body)
	}
	var d softswitch.Dump
	if err := json.Unmarshal(body, &d); err != nil {
		return nil, fmt.Errorf("testbed: debug dump %s: %w", addr, err)
	}
	return &d, nil
}

// PortCounters are one switch port's counters at the end of a run.
type PortCounters struct {
	// Port is the P4 port number; Peer the endpoint at the other end.
	Port uint16 `json:"port"`
	Peer string `json:"peer"`
	// PauseTx counts PFC frames this port sent upstream (XOFF + refresh);
	// XonTx the RESUME frames.
	PauseTx uint64 `json:"pause_tx"`
	XonTx   uint64 `json:"xon_tx"`
	// PauseRx counts PFC PAUSE frames received (this egress was paused);
	// PausedMs is how long the lossless egress queue was held.
	PauseRx  uint64  `json:"pause_rx"`
	PausedMs float64 `json:"paused_ms"`
	// SwitchCNPs and ECNMarks are made at this egress port.
	SwitchCNPs uint64 `json:"switch_cnps"`
	ECNMarks   uint64 `json:"ecn_marks"`
	// Drops are TM drops of frames headed here; LosslessDrops the part in
	// the lossless class (must be 0).
	Drops         uint64 `json:"drops"`
	LosslessDrops uint64 `json:"lossless_drops"`
	// IngressLosslessDrops are lossless-class frames refused at this
	// ingress port (the upstream did not stop in time after PAUSE).
	IngressLosslessDrops uint64 `json:"ingress_lossless_drops"`
	// HeadroomHighWater is the most PFC headroom this ingress port used
	// (lossless bytes that arrived after its XOFF), HeadroomReserved what
	// the switch reserved for it (--pfc-response-time): a lossless drop at
	// ingress means the high water reached the reservation.
	HeadroomHighWater int64 `json:"headroom_high_water"`
	HeadroomReserved  int64 `json:"headroom_reserved"`
	// QueueHighWater is the largest egress queue (all priorities' max).
	QueueHighWater int64 `json:"queue_high_water"`
	// TxBytes are bytes sent out of the port.
	TxBytes uint64 `json:"tx_bytes"`
	// INC counters of packets that came in on this port: contributions
	// (worker contributions, or a lower switch's partial aggregates)
	// added, duplicates dropped, aggregates emitted (by the port of the
	// last contribution), refused for a busy slot, and slots taken over.
	INCContributions uint64 `json:"inc_contributions,omitempty"`
	INCDuplicates    uint64 `json:"inc_duplicates,omitempty"`
	INCResults       uint64 `json:"inc_results,omitempty"`
	INCSlotBusy      uint64 `json:"inc_slot_busy,omitempty"`
	INCTakeovers     uint64 `json:"inc_slot_takeovers,omitempty"`
}

// SwitchCounters are one switch's counters at the end of a run.
type SwitchCounters struct {
	Name  string         `json:"name"`
	Ports []PortCounters `json:"ports"`
	// Totals over the ports.
	PauseTx       uint64 `json:"pause_tx"`
	PauseRx       uint64 `json:"pause_rx"`
	SwitchCNPs    uint64 `json:"switch_cnps"`
	ECNMarks      uint64 `json:"ecn_marks"`
	Drops         uint64 `json:"drops"`
	LosslessDrops uint64 `json:"lossless_drops"`
	// NoRouteDrops are pipeline drops (no route, ...) by ingress port.
	NoRouteDrops uint64 `json:"no_route_drops"`
	// HostEdgeLosslessDrops are the lossless drops at ingress ports facing
	// hosts (a host that does not honour PAUSE), FabricLosslessDrops those
	// at ingress ports facing switches.
	HostEdgeLosslessDrops uint64 `json:"host_edge_lossless_drops"`
	FabricLosslessDrops   uint64 `json:"fabric_lossless_drops"`
	// RDMAConnections is the number of rdma_connection entries fastcnpd
	// had installed (from announcements) at the end of the run.
	RDMAConnections int `json:"rdma_connections"`
	// LateMaxMs is the worst lag of a departure behind its shaped time:
	// how far a CPU-starved switch fell behind real time.
	LateMaxMs float64 `json:"late_max_ms"`
	// INC aggregation (pipeline counters summed over ports): contributions
	// added, duplicates dropped, aggregated results emitted, and packets
	// dropped because their slot held another (INC ID, offset).
	INCContributions uint64 `json:"inc_contributions,omitempty"`
	INCDuplicates    uint64 `json:"inc_duplicates,omitempty"`
	INCResults       uint64 `json:"inc_results,omitempty"`
	INCSlotBusy      uint64 `json:"inc_slot_busy,omitempty"`
	INCTakeovers     uint64 `json:"inc_slot_takeovers,omitempty"`
	// INCSlotsUsed are the aggregation slots that held an aggregation at
	// the end of the run (done, or still waiting), INCSlotsStuck those
	// whose aggregation never completed (read from the registers).
	INCSlotsUsed  int `json:"inc_slots_used,omitempty"`
	INCSlotsStuck int `json:"inc_slots_stuck,omitempty"`
}

// HeadroomPeakPercent returns the largest share of its PFC headroom any
// ingress port of the switch used, in percent (100: exhausted, lossless
// drops follow).
func (s SwitchCounters) HeadroomPeakPercent() uint64 {
	var best uint64
	for _, p := range s.Ports {
		if p.HeadroomReserved > 0 {
			best = max(best, uint64((100*p.HeadroomHighWater+p.HeadroomReserved-1)/p.HeadroomReserved))
		}
	}
	return best
}

// switchCounters extracts the counters of a dump; peers maps port numbers
// to the far endpoint.
func switchCounters(name string, d *softswitch.Dump, peers map[uint16]Endpoint) SwitchCounters {
	sc := SwitchCounters{Name: name, LateMaxMs: float64(d.Runtime.LateDepartureMaxNs) / 1e6}
	cell := func(counter string, port uint16) uint64 {
		for _, v := range d.Pipeline[counter] {
			if v.Index == int(port) {
				return v.Packets
			}
		}
		return 0
	}
	for _, p := range d.Ports {
		pc := PortCounters{Port: p.Num, Peer: peers[p.Num].String(), TxBytes: p.TxBytes}
		if p.TMIndex >= 0 && p.TMIndex < len(d.TM.Ports) {
			ts := d.TM.Ports[p.TMIndex]
			for pr := 0; pr < tm.NumPriorities; pr++ {
				in, eg := ts.Ingress[pr], ts.Egress[pr]
				pc.PauseTx += in.PFCTxXoff + in.PFCTxRefresh
				pc.XonTx += in.PFCTxXon
				pc.PauseRx += eg.PFCRxXoff
				pc.PausedMs = max(pc.PausedMs, float64(eg.PausedNs)/1e6)
				pc.Drops += eg.DroppedPkts
				pc.LosslessDrops += eg.LosslessDroppedPkts
				pc.QueueHighWater = max(pc.QueueHighWater, eg.QueueHighWater)
				if in.HeadroomReserved > 0 {
					pc.IngressLosslessDrops += in.DroppedPkts
					pc.HeadroomHighWater = max(pc.HeadroomHighWater, in.HeadroomHighWater)
					pc.HeadroomReserved = max(pc.HeadroomReserved, in.HeadroomReserved)
				}
			}
		}
		pc.SwitchCNPs = cell(ctrSwitchCNP, p.Num)
		pc.ECNMarks = cell(ctrECNMarked, p.Num)
		sc.NoRouteDrops += cell(ctrDropped, p.Num)
		pc.INCContributions, pc.INCDuplicates = cell(ctrINCContributions, p.Num), cell(ctrINCDuplicates, p.Num)
		pc.INCResults, pc.INCSlotBusy = cell(ctrINCResults, p.Num), cell(ctrINCSlotBusy, p.Num)
		pc.INCTakeovers = cell(ctrINCTakeovers, p.Num)
		sc.INCContributions += pc.INCContributions
		sc.INCDuplicates += pc.INCDuplicates
		sc.INCResults += pc.INCResults
		sc.INCSlotBusy += pc.INCSlotBusy
		sc.INCTakeovers += pc.INCTakeovers
		sc.PauseTx += pc.PauseTx
		sc.PauseRx += pc.PauseRx
		sc.SwitchCNPs += pc.SwitchCNPs
		sc.ECNMarks += pc.ECNMarks
		sc.Drops += pc.Drops
		sc.LosslessDrops += pc.LosslessDrops
		if peers[p.Num].IsHost() {
			sc.HostEdgeLosslessDrops += pc.IngressLosslessDrops
		} else {
			sc.FabricLosslessDrops += pc.IngressLosslessDrops
		}
		sc.Ports = append(sc.Ports, pc)
	}
	// The runtime's own count covers drops the per-queue counters cannot
	// attribute (e.g. a full buffer before the queue is known).
	sc.LosslessDrops = max(sc.LosslessDrops, d.Runtime.LosslessDrops, d.TM.LosslessDropPkts)
	return sc
}

// QueueSample is the egress queue of every port of a switch at one time.
type QueueSample struct {
	// T is seconds since the run started.
	T float64 `json:"t_s"`
	// Switch is the switch name.
	Switch string `json:"switch"`
	// Bytes maps port number to queued bytes (all priorities).
	Bytes map[uint16]int64 `json:"bytes"`
}

func queueSample(t float64, name string, d *softswitch.Dump) QueueSample {
	q := QueueSample{T: t, Switch: name, Bytes: map[uint16]int64{}}
	for _, p := range d.Ports {
		if p.TMIndex >= 0 && p.TMIndex < len(d.TM.Ports) {
			q.Bytes[p.Num] = d.TM.Ports[p.TMIndex].Bytes
		}
	}
	return q
}
