package testbed

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/fastcnp/fastcnp/host/agent/live"
)

// hostRecord is the subset of a fastcnp-host statistics line
// (host/agent/live.Record, docs/host-agent.md) the testbed reads.
type hostRecord struct {
	Type        string   `json:"type"`
	T           float64  `json:"t_s"`
	Flow        string   `json:"flow"`
	Role        string   `json:"role"`
	RateBps     *float64 `json:"rate_bps"`
	GoodputBps  *float64 `json:"goodput_bps"`
	CCRateBps   *float64 `json:"cc_rate_bps"`
	WindowBytes *int64   `json:"window_bytes"`
	BytesAcked  *int64   `json:"bytes_acked"`
	CNPSwitch   *uint64  `json:"cnp_switch"`
	CNPNP       *uint64  `json:"cnp_np"`
	ECEAcks     *uint64  `json:"ece_acks"`
	INTAcks     *uint64  `json:"int_acks"`
	Retransmits *uint64  `json:"retransmits"`
	Timeouts    *uint64  `json:"timeouts"`
	FCTUs       *float64 `json:"fct_us"`
	PausedUs    *float64 `json:"paused_us"`
	PauseRx     *uint64  `json:"pause_rx"`
	Done        *bool    `json:"done"`
	// INCDupsSent: an INC worker's injected duplicates ("summary");
	// Agent.INCPartials: partial aggregates the host received ("agent").
	INCDupsSent *uint64 `json:"inc_dups_sent"`
	Agent       *struct {
		INCPartials uint64 `json:"inc_partials"`
	} `json:"agent"`
	// Wall clock (Unix ns): the agent's epoch ("start", "agent"), a sender
	// flow's due start, completion and lateness ("summary").
	EpochUnixNs *int64   `json:"epoch_unix_ns"`
	StartUnixNs *int64   `json:"start_unix_ns"`
	EndUnixNs   *int64   `json:"end_unix_ns"`
	StartLateUs *float64 `json:"start_late_us"`
	RTT         *struct {
		Count  int     `json:"count"`
		MeanUs float64 `json:"mean_us"`
		P99Us  float64 `json:"p99_us"`
		MaxUs  float64 `json:"max_us"`
	} `json:"rtt"`
	Recv *struct {
		RateBps    float64 `json:"rate_bps"`
		Packets    uint64  `json:"packets"`
		Bytes      int64   `json:"bytes"`
		CE         uint64  `json:"ce"`
		CNPsSent   uint64  `json:"cnps_sent"`
		BadPayload uint64  `json:"bad_payload"`
		// FirstUnixNs and LastUnixNs: arrivals of the first and the last
		// accepted packet (receiver summary).
		FirstUnixNs int64 `json:"first_unix_ns"`
		LastUnixNs  int64 `json:"last_unix_ns"`
	} `json:"recv"`
	INC *INCCheck `json:"inc"`
}

// INCCheck is what the destination of an INC message checked, the
// agent's "inc" record: RESULT packets, distinct offsets whose vector was
// the element-wise sum of the workers' vectors, wrong vectors, duplicates,
// offsets out of range, and whether every offset had a correct result.
type INCCheck = live.INCRecord

// RatePoint is one sample of a flow's rate.
type RatePoint struct {
	// T is seconds since the run's common start instant (the agents'
	// --start-at), from the agent's wall clock; for statistics without it,
	// seconds since the agent started.
	T float64 `json:"t_s"`
	// Bps is the receiver's in-order payload rate over the sample interval.
	Bps float64 `json:"bps"`
	// SendBps is the sender's wire rate, CCBps the algorithm's pacing rate
	// (0 when unknown).
	SendBps float64 `json:"send_bps,omitempty"`
	CCBps   float64 `json:"cc_bps,omitempty"`
}

// flowStats accumulates one flow's records from both agents.
type flowStats struct {
	recv     []RatePoint
	send     []RatePoint
	recvSum  *hostRecord
	sendSum  *hostRecord
	lastRecv *hostRecord
	lastSend *hostRecord
}

// parseHostStats reads JSON lines of one agent into per-flow stats and
// returns the INC checks it reports and the partial aggregates it received. Sample times are moved onto the run's
// clock (seconds since runStartNs, Unix ns) with the agent's "start"
// record; runStartNs 0 or no such record leaves them in agent time. Lines
// that are not JSON objects are skipped (the agent's logs go to stderr,
// but a partial last line after a kill is possible).
func parseHostStats(r io.Reader, into map[string]*flowStats, runStartNs int64) ([]INCCheck, uint64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var off float64
	var incs []INCCheck
	var partials uint64
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var rec hostRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			continue
		}
		if rec.Type == "start" && rec.EpochUnixNs != nil && runStartNs != 0 {
			off = float64(*rec.EpochUnixNs-runStartNs) / 1e9
		}
		if rec.Type == "inc" && rec.INC != nil {
			incs = append(incs, *rec.INC)
		}
		if rec.Type == "agent" && rec.Agent != nil {
			partials += rec.Agent.INCPartials
		}
		if rec.Flow == "" {
			continue
		}
		rec.T += off
		fs := into[rec.Flow]
		if fs == nil {
			fs = &flowStats{}
			into[rec.Flow] = fs
		}
		r := rec
		switch {
		case rec.Type == "sample" && rec.Role == "receiver" && rec.Recv != nil:
			fs.recv = append(fs.recv, RatePoint{T: rec.T, Bps: rec.Recv.RateBps})
			fs.lastRecv = &r
		case rec.Type == "sample" && rec.Role == "sender":
			p := RatePoint{T: rec.T}
			if rec.RateBps != nil {
				p.SendBps = *rec.RateBps
			}
			if rec.CCRateBps != nil {
				p.CCBps = *rec.CCRateBps
			}
			fs.send = append(fs.send, p)
			fs.lastSend = &r
		case rec.Type == "summary" && rec.Role == "receiver":
			fs.recvSum = &r
		case rec.Type == "summary" && rec.Role == "sender":
			fs.sendSum = &r
		}
	}
	if err := sc.Err(); err != nil {
		return nil, 0, fmt.Errorf("testbed: host statistics: %w", err)
	}
	for _, fs := range into {
		sort.Slice(fs.recv, func(i, j int) bool { return fs.recv[i].T < fs.recv[j].T })
		sort.Slice(fs.send, func(i, j int) bool { return fs.send[i].T < fs.send[j].T })
	}
	return incs, partials, nil
}

// meanRate averages the receiver's rate samples whose time lies in
// [from, to]; ok is false when there are none.
func meanRate(pts []RatePoint, from, to float64) (float64, bool) {
	var sum float64
	n := 0
	for _, p := range pts {
		if p.T >= from && p.T <= to {
			sum += p.Bps
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

func (fs *flowStats) recvRecord() *hostRecord {
	if fs.recvSum != nil {
		return fs.recvSum
	}
	return fs.lastRecv
}

func (fs *flowStats) sendRecord() *hostRecord {
	if fs.sendSum != nil {
		return fs.sendSum
	}
	return fs.lastSend
}

func u64(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}
