package live_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/afpacket"
	"github.com/fastcnp/fastcnp/host/agent"
	"github.com/fastcnp/fastcnp/host/agent/live"
	"github.com/fastcnp/fastcnp/internal/units"
)

// memPort is an in-memory PortIO: frames written to one end are read from
// the other. It lets the runtime be tested without root.
type memPort struct {
	in, out chan []byte
}

func memPair() (*memPort, *memPort) {
	a, b := make(chan []byte, 4096), make(chan []byte, 4096)
	return &memPort{in: a, out: b}, &memPort{in: b, out: a}
}

func (m *memPort) MaxFrameLen() int { return 1518 }

func (m *memPort) ReadBatch(ctx context.Context, msgs []afpacket.Message) (int, error) {
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case f := <-m.in:
		msgs[0].N = copy(msgs[0].Buf, f)
	}
	n := 1
	for n < len(msgs) {
		select {
		case f := <-m.in:
			msgs[n].N = copy(msgs[n].Buf, f)
			n++
		default:
			return n, nil
		}
	}
	return n, nil
}

func (m *memPort) WriteBatch(ctx context.Context, frames [][]byte) (int, error) {
	for i, f := range frames {
		select {
		case <-ctx.Done():
			return i, ctx.Err()
		case m.out <- bytes.Clone(f):
		}
	}
	return len(frames), nil
}

// TestRunInMemoryNoLeak runs a sender and a receiver agent over an
// in-memory link (no root needed), checks the transfer, that Run returns
// on ctx cancellation, and that no goroutine is left behind.
func TestRunInMemoryNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	pa, pb := memPair()
	fl := []live.FlowConfig{flowAB(live.FlowConfig{Sizes: []units.Size{256 << 10, 64 << 10, 1000}})}
	var stats bytes.Buffer
	snd, err := live.New(live.Config{IP: ipA, MAC: macA, Algo: "dcqcn-fastcnp", CC: ccConfig(t, "nvidia-cx", 1e9, 100*time.Microsecond),
		Flows: fl, ExitWhenDone: true, Stats: &stats, StatsInterval: time.Millisecond, Log: quietLog()}, pa)
	if err != nil {
		t.Fatal(err)
	}
	rcv, err := live.New(live.Config{IP: ipB, MAC: macB, Algo: "dcqcn-fastcnp", CC: ccConfig(t, "nvidia-cx", 1e9, 100*time.Microsecond),
		Flows: fl, Log: quietLog()}, pb)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runPair(t, ctx, snd, rcv)
	st := snd.Status()[0]
	if !st.Done || len(st.Messages) != 3 || st.Messages[2].Bytes != 1000 || rcv.Status()[0].Recv.Payload != 256<<10+64<<10+1000 {
		t.Fatalf("sender %+v", st)
	}
	recs := readRecords(t, stats.Bytes())
	msgs := 0
	for _, r := range recs {
		if r.Type == "message" {
			msgs++
		}
	}
	if msgs != 3 {
		t.Fatalf("%d message records, want 3", msgs)
	}

	// A receiver-only agent runs until its context ends.
	if err := rcv.Run(ctx); !errors.Is(err, agent.ErrState) {
		t.Fatalf("second Run: %v", err)
	}
	_, pc := memPair()
	rcv2, err := live.New(live.Config{IP: ipB, MAC: macB, Algo: "dcqcn", CC: ccConfig(t, "nvidia-cx", 1e9, 100*time.Microsecond),
		Flows: fl, Log: quietLog()}, pc)
	if err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rcv2.Run(rctx) }()
	time.Sleep(5 * time.Millisecond)
	rcancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("receiver after cancel: %v", err)
	}
	// Goroutines are gone (allow the runtime a moment to reap them).
	var now int
	for i := 0; i < 100; i++ {
		if now = runtime.NumGoroutine(); now <= before {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	buf := make([]byte, 1<<16)
	n := runtime.Stack(buf, true)
	t.Fatalf("goroutines: %d before, %d after:\n%s", before, now, strings.TrimSpace(string(buf[:n])))
}

// TestConfigErrors checks that bad agent configurations give clear errors.
func TestConfigErrors(t *testing.T) {
	pa, _ := memPair()
	good := flowAB(live.FlowConfig{Size: 1000})
	cases := []struct {
		name string
		mut  func(c *live.Config)
		want string
	}{
		{"no IP", func(c *live.Config) { c.IP = [4]byte{} }, "no IP address"},
		{"bad algo", func(c *live.Config) { c.Algo = "bbr" }, "unknown algorithm"},
		{"bad mode", func(c *live.Config) { c.Mode = "relay" }, "mode"},
		{"no size", func(c *live.Config) { c.Flows = []live.FlowConfig{flowAB(live.FlowConfig{})} }, "exactly one of size"},
		{"two sizes", func(c *live.Config) { c.Flows = []live.FlowConfig{flowAB(live.FlowConfig{Size: 1, Duration: 1})} }, "exactly one of size"},
		{"bad src", func(c *live.Config) { f := good; f.Src = "10.0.0"; c.Flows = []live.FlowConfig{f} }, "not an IPv4 address"},
		{"QPN 0", func(c *live.Config) { f := good; f.SrcQPN = 0; c.Flows = []live.FlowConfig{f} }, "QPNs"},
		{"duplicate QP", func(c *live.Config) { c.Flows = []live.FlowConfig{good, good} }, "already used"},
		{"MSS too large", func(c *live.Config) { c.Sender.MSS = 1500 }, "largest frame"},
		{"no next hop", func(c *live.Config) { f := good; f.DstMAC = ""; c.Flows = []live.FlowConfig{f} }, "no next-hop MAC"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := live.Config{IP: ipA, MAC: macA, Algo: "dcqcn", CC: ccConfig(t, "nvidia-cx", 1e9, 100*time.Microsecond),
				Flows: []live.FlowConfig{good}, Log: quietLog()}
			tc.mut(&c)
			_, err := live.New(c, pa)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// TestFlowSpecsAndFiles parses the two flow syntaxes and expands counts.
func TestFlowSpecsAndFiles(t *testing.T) {
	f, err := live.ParseFlowSpec("name=x,src=10.0.0.1,dst=10.0.0.2,src_qpn=0x100,dst_qpn=512,sport=5000,sizes=1MB:10KiB,start=1ms,count=3")
	if err != nil {
		t.Fatal(err)
	}
	if f.SrcQPN != 0x100 || f.DstQPN != 512 || len(f.Sizes) != 2 || f.Sizes[0] != 1000000 || f.Sizes[1] != 10240 || time.Duration(f.Start) != time.Millisecond {
		t.Fatalf("spec %+v", f)
	}
	ex, err := live.Expand([]live.FlowConfig{f})
	if err != nil {
		t.Fatal(err)
	}
	if len(ex) != 3 || ex[2].Name != "x-2" || ex[2].SrcQPN != 0x102 || ex[2].DstQPN != 514 || ex[2].SPort != 5002 {
		t.Fatalf("expanded %+v", ex)
	}
	for _, bad := range []string{"src", "size=1XB", "bogus=1", "src_qpn=0x1000000"} {
		if _, err := live.ParseFlowSpec(bad); !errors.Is(err, live.ErrFlowConfig) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	yml := `
flows:
  - name: long
    src: 10.0.0.1
    dst: 10.0.0.2
    dst_mac: 02:00:00:00:00:02
    src_qpn: 0x100
    dst_qpn: 0x200
    duration: 2s
  - src: 10.0.0.3
    dst: 10.0.0.2
    src_qpn: 0x100
    dst_qpn: 0x300
    inc: {group: 1, message: 2, rank: 1, workers: 2, offsets: 64, seed: 7}
`
	fs, err := live.ParseFlowFile([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	js := `{"flows":[{"src":"10.0.0.1","dst":"10.0.0.2","src_qpn":1,"dst_qpn":2,"size":"10MB"}]}`
	fj, err := live.ParseFlowFile([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	ex, err = live.Expand(append(fs, fj...))
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(ex[0].Duration) != 2*time.Second || ex[1].INC == nil || ex[1].INC.Offsets != 64 || ex[2].Size != 10000000 {
		t.Fatalf("file flows %+v", ex)
	}
	if _, err := live.ParseFlowFile([]byte("flows:\n  - srcc: 1\n")); !errors.Is(err, live.ErrFlowConfig) {
		t.Fatalf("unknown field: %v", err)
	}
}

// TestCommonStartInstant runs a sender and a receiver whose flow starts at
// a common instant (Config.StartAt, --start-at) on the wall clock: the
// flow is due at StartAt + start, no byte arrives before it, the FCT counts
// from it, and the records put start, arrivals and completion on the wall
// clock in causal order. A StartAt already passed starts the flow at once,
// late by at least the time that had passed.
func TestCommonStartInstant(t *testing.T) {
	const start = 10 * time.Millisecond
	cases := []struct {
		name    string
		startAt func() time.Time
		late    time.Duration // least lateness the sender must report
	}{
		{"in the future", func() time.Time { return time.Now().Add(150 * time.Millisecond) }, 0},
		{"already passed", func() time.Time { return time.Now().Add(-time.Second) }, time.Second - start},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pa, pb := memPair()
			fl := []live.FlowConfig{flowAB(live.FlowConfig{Size: 200 << 10, Start: live.Duration(start)})}
			at := tc.startAt()
			var sst, rst bytes.Buffer
			snd, err := live.New(live.Config{IP: ipA, MAC: macA, Algo: "dcqcn", CC: ccConfig(t, "nvidia-cx", 1e9, 100*time.Microsecond),
				Flows: fl, ExitWhenDone: true, Stats: &sst, StatsInterval: 5 * time.Millisecond, StartAt: at, Log: quietLog()}, pa)
			if err != nil {
				t.Fatal(err)
			}
			rcv, err := live.New(live.Config{IP: ipB, MAC: macB, Algo: "dcqcn", CC: ccConfig(t, "nvidia-cx", 1e9, 100*time.Microsecond),
				Flows: fl, Stats: &rst, StatsInterval: 5 * time.Millisecond, StartAt: at, Log: quietLog()}, pb)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			runPair(t, ctx, snd, rcv)
			var first, sum, rsum *live.Record
			for _, r := range readRecords(t, sst.Bytes()) {
				switch {
				case r.Type == "start":
					first = &r
				case r.Type == "summary" && r.Role == "sender":
					sum = &r
				}
			}
			for _, r := range readRecords(t, rst.Bytes()) {
				if r.Type == "summary" && r.Role == "receiver" {
					rsum = &r
				}
			}
			if first == nil || first.StartAtUnixNs == nil || *first.StartAtUnixNs != at.UnixNano() || first.EpochUnixNs == nil {
				t.Fatalf("start record %+v, want start_at_unix_ns %d", first, at.UnixNano())
			}
			if sum == nil || sum.StartUnixNs == nil || sum.EndUnixNs == nil || sum.FCTUs == nil || sum.StartLateUs == nil || rsum == nil || rsum.Recv == nil {
				t.Fatalf("summaries: sender %+v receiver %+v", sum, rsum)
			}
			due := at.Add(start).UnixNano()
			if *sum.StartUnixNs != due {
				t.Errorf("start_unix_ns %d, want StartAt + start = %d", *sum.StartUnixNs, due)
			}
			if rsum.Recv.FirstUnixNs < due || rsum.Recv.LastUnixNs < rsum.Recv.FirstUnixNs || *sum.EndUnixNs < rsum.Recv.LastUnixNs {
				t.Errorf("wall clock out of causal order: due %d, first arrival %d, last arrival %d, last ACK %d",
					due, rsum.Recv.FirstUnixNs, rsum.Recv.LastUnixNs, *sum.EndUnixNs)
			}
			if fct := time.Duration(*sum.EndUnixNs - *sum.StartUnixNs); math.Abs(*sum.FCTUs*1e3-float64(fct)) > 1e3 {
				t.Errorf("fct_us %.1f, want end - start = %v", *sum.FCTUs, fct)
			}
			if late := time.Duration(*sum.StartLateUs * 1e3); late < tc.late {
				t.Errorf("start_late_us %.0f, want at least %v", *sum.StartLateUs, tc.late)
			}
			if rsum.Recv.Bytes != 200<<10 {
				t.Errorf("received %d bytes, want %d", rsum.Recv.Bytes, 200<<10)
			}
		})
	}
}

// TestAckEveryPerAlgorithm checks that a sender without an AckEvery asks
// for the ACKs its algorithm needs (agent.AckEveryFor): one per packet for
// an algorithm fed by ACKs, one per DefaultAckEvery packets for DCQCN; an
// AckEvery given is kept. 64 packets of 1024 bytes, counted as the ACKs
// that acknowledged something.
func TestAckEveryPerAlgorithm(t *testing.T) {
	const packets = 64
	for _, tc := range []struct {
		algo, set string
		ackEvery  int
		acks      uint64
	}{
		{"dcqcn-fastcnp", "nvidia-cx", 0, packets / agent.DefaultAckEvery},
		{"timely", "hpcc-sim", 0, packets},
		{"lstm-pid", "thesis", 0, packets},
		{"timely", "hpcc-sim", 8, packets / 8},
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.algo, tc.ackEvery), func(t *testing.T) {
			pa, pb := memPair()
			// Winit (line rate x base RTT, 125 KB) holds the whole message:
			// no ACK probes when a window is full. The RTO is long: no
			// retransmission when the machine is loaded.
			c := ccConfig(t, "nvidia-cx", 1e9, time.Millisecond)
			if err := c.UseParamSet(tc.algo, tc.set); err != nil {
				t.Fatal(err)
			}
			fl := []live.FlowConfig{flowAB(live.FlowConfig{Sizes: []units.Size{packets * agent.DefaultMSS}})}
			snd, err := live.New(live.Config{IP: ipA, MAC: macA, Algo: tc.algo, CC: c, Flows: fl, ExitWhenDone: true,
				Sender: agent.SenderConfig{AckEvery: tc.ackEvery, RTO: agent.MaxRTO}, Log: quietLog()}, pa)
			if err != nil {
				t.Fatal(err)
			}
			rcv, err := live.New(live.Config{IP: ipB, MAC: macB, Algo: tc.algo, CC: c, Flows: fl, Log: quietLog()}, pb)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			runPair(t, ctx, snd, rcv)
			st := snd.Status()[0]
			// The A bit goes on fixed packets of the message, so a
			// retransmission (a late ACK on a loaded machine) does not
			// change how many ACKs acknowledge something new.
			if !st.Done || st.Send.Acks != tc.acks {
				t.Fatalf("done %v, %d ACKs (want %d), %d retransmits", st.Done, st.Send.Acks, tc.acks, st.Send.Retransmits)
			}
		})
	}
}
