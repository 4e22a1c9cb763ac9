package softswitch

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/afpacket"
	"github.com/fastcnp/fastcnp/internal/netns/netnstest"
	"github.com/fastcnp/fastcnp/wire"
)

// The input benchmark (docs/performance.md, "Input: delivered vs offered"): a
// generator in its own namespace and process offers frames to the running switch
// (port 1), which forwards them to a sink namespace (port 2, counted by the kernel
// there); for each case it reports delivered vs offered, where frames were lost, the
// PFC the switch sent and the switch's CPU per frame. Run as root:
//
//	go test -c -o /tmp/sw.test ./softswitch
//	taskset -c 1 /tmp/sw.test -test.run '^TestInputBench$' -test.v -test.cpu 1 -inputbench default -inputbench.gencpu 0
//	/tmp/sw.test -test.run '^TestInputBench$' -test.v -test.cpu 2 -inputbench default
//
// The first line is "1 core" (the switch on CPU 1 with GOMAXPROCS 1, the generator
// on CPU 0), the second "2 cores" (the switch on both, sharing them with the
// generator). A case is gen/size/rate/class: gen paced (one frame per system call,
// evenly spaced, as tcpreplay --pps), burst (sendmmsg bursts of 1024 frames, spaced
// to the rate) or trafgen (netsniff-ng's TX ring; skipped when not installed);
// rate in frames/s (k suffix) or max; class lossy (DSCP 0) or lossless (DSCP 26,
// priority 3: the generator obeys the switch's PFC). The ports run at
// -inputbench.portrate (10 Gb/s: no shaping limit, 3.4-ms pauses); the switch's
// input options can be set (-inputbench.rxbuffer, .rxxoff, .rxbatch, .rxring,
// .nodefer); "before" (issue 18: 4 MiB, no input backpressure, lossless drops in the
// TM) is -inputbench.rxbuffer 4194304 -inputbench.rxxoff -1 -inputbench.nodefer.
var (
	inputBench        = flag.String("inputbench", "", "TestInputBench cases: comma-separated gen/size/rate/class, or default")
	inputBenchGenCPU  = flag.String("inputbench.gencpu", "", "TestInputBench: CPU list to pin the generator process to (taskset -c)")
	inputBenchFrames  = flag.Int("inputbench.frames", 200_000, "TestInputBench: frames offered per case")
	inputBenchOut     = flag.String("inputbench.out", "", "TestInputBench: append the table's rows (markdown) to this file")
	inputBenchBatch   = flag.Int("inputbench.rxbatch", 0, "TestInputBench: the switch's RX batch (0: default)")
	inputBenchRcvBuf  = flag.Int("inputbench.rxbuffer", 0, "TestInputBench: the switch's receive buffer per port, bytes (0: default)")
	inputBenchRing    = flag.Int("inputbench.rxring", 0, "TestInputBench: receive through a TPACKET_V2 ring of this many bytes per port (0: recvmmsg)")
	inputBenchNoDefer = flag.Bool("inputbench.nodefer", false, "TestInputBench: the TM drops lossless frames without room (Config.NoLosslessDefer)")
	inputBenchRate    = flag.Int64("inputbench.portrate", benchLinkBps, "TestInputBench: the ports' rate, b/s (the egress shaper, and the PAUSE time)")
	inputBenchXoff    = flag.Float64("inputbench.rxxoff", 0, "TestInputBench: the switch's input XOFF, a fraction of the receive buffer (0: default, -1: no input backpressure)")
)

// inputBenchDefault is the default case list.
var inputBenchDefault = []string{
	"paced/64/100k/lossy", "paced/64/max/lossy",
	"burst/64/100k/lossy", "burst/64/300k/lossy", "burst/64/max/lossy", "trafgen/64/max/lossy", "burst/64/max/lossless",
	"paced/1500/100k/lossy", "paced/1500/max/lossy",
	"burst/1500/100k/lossy", "burst/1500/300k/lossy", "burst/1500/max/lossy", "trafgen/1500/max/lossy", "burst/1500/max/lossless",
}

// genJob is what the generator process does (JSON in FASTCNP_INPUTBENCH_GEN).
type genJob struct {
	Mode     string  // paced, burst
	Size     int     // frame length
	Rate     float64 // frames/s, 0 = as fast as possible
	Frames   int
	Lossless bool    // DSCP 26, obey PFC
	LinkBps  float64 // for the pause time
}

// genResult is what it reports.
type genResult struct {
	Sent      int     `json:"sent"`
	Seconds   float64 `json:"seconds"`
	Deferred  int     `json:"deferred"` // sends held back by a PAUSE
	Lapsed    int     `json:"lapsed"`   // sends after a PAUSE expired without XON (no refresh in time)
	Pauses    int64   `json:"pauses"`
	CPUSecond float64 `json:"cpu_seconds"`
}

var benchSinkMAC = net.HardwareAddr{0x02, 0xaa, 0, 0, 0, 0x99}

const (
	benchLinkBps = 10_000_000_000 // ports: no shaping limit, 3.4-ms pauses
	benchBurst   = 1024
	genEnv       = "FASTCNP_INPUTBENCH_GEN"
)

// TestInputBenchGenerator is the generator process of TestInputBench (it does
// nothing unless started by it).
func TestInputBenchGenerator(t *testing.T) {
	spec := os.Getenv(genEnv)
	if spec == "" {
		t.Skip("the generator process of TestInputBench")
	}
	var job genJob
	if err := json.Unmarshal([]byte(spec), &job); err != nil {
		t.Fatal(err)
	}
	port, err := afpacket.Open("eth0", afpacket.Options{DisableOffloads: true, Batch: benchBurst, Log: testLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer port.Close()
	ctx, cancel := context.WithCancel(context.Background())
	s := &pfcSender{p: port, linkBps: job.LinkBps, obey: job.Lossless}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); s.readPFC(ctx) }()
	dscp := uint8(0)
	if job.Lossless {
		dscp = 26
	}
	f := roce(t, hostIP1, hostIP2, hostMAC1, swMAC1, dscp, wire.NotECT, 1, job.Size)
	batch := make([][]byte, benchBurst)
	for i := range batch {
		batch[i] = f
	}
	per := benchBurst
	if job.Mode == "paced" {
		per = 1
	}
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	start := time.Now()
	res := genResult{}
	for res.Sent < job.Frames {
		if job.Lossless {
			if until := s.pausedUntil.Load(); time.Now().UnixNano() < until {
				res.Deferred++
				time.Sleep(50 * time.Microsecond)
				continue
			} else if until != 0 {
				res.Lapsed++
				s.pausedUntil.CompareAndSwap(until, 0)
			}
		}
		if job.Rate > 0 {
			due := start.Add(time.Duration(float64(res.Sent) / job.Rate * 1e9))
			for d := time.Until(due); d > 0; d = time.Until(due) {
				if d > 200*time.Microsecond {
					time.Sleep(d - 100*time.Microsecond)
				} // else spin, as tcpreplay does
			}
		}
		k := min(per, job.Frames-res.Sent)
		n, err := port.WriteBatch(ctx, batch[:k])
		if err != nil {
			t.Fatal(err)
		}
		res.Sent += n
	}
	res.Seconds = time.Since(start).Seconds()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	res.CPUSecond = time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano()).Seconds()
	cancel()
	wg.Wait()
	res.Pauses = s.pauses.Load()
	b, _ := json.Marshal(res)
	fmt.Printf("GENRESULT %s\n", b)
}

// benchCase is one parsed case.
type benchCase struct {
	gen      string
	size     int
	rate     float64
	lossless bool
}

func parseBenchCase(s string) (benchCase, error) {
	f := strings.Split(s, "/")
	if len(f) != 4 {
		return benchCase{}, fmt.Errorf("case %q: want gen/size/rate/class", s)
	}
	c := benchCase{gen: f[0]}
	var err error
	if c.gen != "paced" && c.gen != "burst" && c.gen != "trafgen" {
		return c, fmt.Errorf("case %q: gen paced, burst or trafgen", s)
	}
	if c.size, err = strconv.Atoi(f[1]); err != nil || c.size < 64 || c.size > 1514 {
		return c, fmt.Errorf("case %q: size 64..1514", s)
	}
	if f[2] != "max" {
		r, k := f[2], 1.0
		if strings.HasSuffix(r, "k") {
			r, k = strings.TrimSuffix(r, "k"), 1000
		}
		v, err := strconv.ParseFloat(r, 64)
		if err != nil || v <= 0 {
			return c, fmt.Errorf("case %q: rate N, Nk or max", s)
		}
		c.rate = v * k
	}
	switch f[3] {
	case "lossy":
	case "lossless":
		c.lossless = true
		if c.gen == "trafgen" {
			return c, fmt.Errorf("case %q: trafgen does not obey PFC: lossy only", s)
		}
	default:
		return c, fmt.Errorf("case %q: class lossy or lossless", s)
	}
	return c, nil
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return f[0] + " " + f[1] + " " + f[2]
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestInputBench runs the input benchmark (see the comment on inputBench). It is
// skipped unless -inputbench is given.
func TestInputBench(t *testing.T) {
	if *inputBench == "" {
		t.Skip("the input benchmark: run with -inputbench default (docs/performance.md)")
	}
	specs := strings.Split(*inputBench, ",")
	if *inputBench == "default" {
		specs = inputBenchDefault
	}
	var cases []benchCase
	for _, s := range specs {
		c, err := parseBenchCase(s)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, c)
	}
	tb := netnstest.New(t)
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	gen, swNS, sink := genSwitchSink(ctx, t, tb)
	cfg := Config{DefaultRateBps: *inputBenchRate, Ports: []PortConfig{{Num: 1, Ifname: "p1"}, {Num: 2, Ifname: "p2"}}}
	cfg.PortOptions.Batch = *inputBenchBatch
	cfg.PortOptions.RecvBuffer = *inputBenchRcvBuf
	cfg.InputXoff = *inputBenchXoff
	cfg.PortOptions.RxRing = *inputBenchRing
	cfg.NoLosslessDefer = *inputBenchNoDefer
	sw, ctl := nsSwitch(t, swNS, 21, cfg)
	// The next hop's MAC is not the sink's: its kernel counts the frame on eth0 and
	// drops it as PACKET_OTHERHOST at once. With the sink's own MAC its IP layer
	// would route (and drop) every frame, work that veth runs inside the switch's
	// sendmmsg and charges to the switch (about 0.3 us a frame here).
	ctl.route(netip.MustParsePrefix("10.0.2.0/24"), 2, swMAC2, benchSinkMAC)
	ctl.trafficClass(26, 3, true)
	exe, err := os.Executable()
	must(err)
	tmp := t.TempDir()

	cores := runtime.GOMAXPROCS(0)
	header := "| cores | gen | frame | class | offered pps | delivered | delivered pps | input drops | other drops | PFC XOFF (input holds) | PAUSE lapses | switch CPU per frame | switch pps per CPU-s | load (1, 5, 15 min) |\n" +
		"|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
	var rows []string
	t.Logf("switch: GOMAXPROCS %d, RX batch %d, receive buffer %d B per port, RX ring %d B, input XOFF %v XON %v, defer lossless %v, ports %d b/s; generator CPUs %q; %d frames per case",
		cores, sw.rxBatch, sw.cfg.PortOptions.RecvBuffer, sw.cfg.PortOptions.RxRing, sw.cfg.InputXoff, sw.cfg.InputXon, !sw.cfg.NoLosslessDefer,
		*inputBenchRate, *inputBenchGenCPU, *inputBenchFrames)
	for _, c := range cases {
		if c.gen == "trafgen" {
			if _, err := exec.LookPath("trafgen"); err != nil {
				t.Logf("%+v: skipped, trafgen not installed (apt-get install netsniff-ng)", c)
				continue
			}
		}
		load := loadAvg()
		d0 := sw.Dump()
		rx0, err := devRxPackets(sink, "eth0")
		must(err)
		cpu0 := cpuTime()
		start := time.Now()
		var gr genResult
		var args []string
		if *inputBenchGenCPU != "" {
			args = append(args, "taskset", "-c", *inputBenchGenCPU)
		}
		if c.gen == "trafgen" {
			conf := filepath.Join(tmp, "trafgen.cfg")
			f := roce(t, hostIP1, hostIP2, hostMAC1, swMAC1, 0, wire.NotECT, 1, c.size)
			var sb strings.Builder
			sb.WriteString("{ ")
			for i, b := range f {
				if i > 0 {
					sb.WriteString(", ")
				}
				fmt.Fprintf(&sb, "0x%02x", b)
			}
			sb.WriteString(" }\n")
			must(os.WriteFile(conf, []byte(sb.String()), 0o644))
			// --no-sock-mem: trafgen would raise the host's socket memory sysctls.
			args = append(args, "trafgen", "-o", "eth0", "-i", conf, "-n", strconv.Itoa(*inputBenchFrames), "-P", "1",
				"--no-sock-mem", "--notouch-irq", "-C")
			if c.rate > 0 {
				args = append(args, "-b", fmt.Sprintf("%.0fpps", c.rate))
			}
			out, err := gen.Exec(ctx, args[0], args[1:]...)
			if err != nil {
				t.Fatalf("trafgen: %v\n%s", err, out)
			}
			gr = genResult{Sent: *inputBenchFrames, Seconds: time.Since(start).Seconds()}
		} else {
			job, _ := json.Marshal(genJob{Mode: c.gen, Size: c.size, Rate: c.rate, Frames: *inputBenchFrames, Lossless: c.lossless, LinkBps: float64(*inputBenchRate)})
			args = append(args, exe, "-test.run", "^TestInputBenchGenerator$", "-test.v=false")
			cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", gen.Name()}, args...)...)
			cmd.Env = append(os.Environ(), genEnv+"="+string(job), "GOMAXPROCS=2")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("generator: %v\n%s", err, out)
			}
			sc := bufio.NewScanner(strings.NewReader(string(out)))
			for sc.Scan() {
				if rest, ok := strings.CutPrefix(sc.Text(), "GENRESULT "); ok {
					must(json.Unmarshal([]byte(rest), &gr))
				}
			}
			if gr.Sent == 0 {
				t.Fatalf("generator reported nothing:\n%s", out)
			}
		}
		// Until every frame is delivered or counted lost (a guard of 60 s against
		// hangs), noting when the last one arrived. The switch's dump (which takes
		// its lock and allocates) is read only once deliveries stop or are complete.
		var d Dump
		var delivered uint64
		last, lastAt := uint64(0), time.Now()
		for deadline := time.Now().Add(60 * time.Second); ; {
			rx, err := devRxPackets(sink, "eth0")
			must(err)
			delivered = rx - rx0
			if delivered != last {
				last, lastAt = delivered, time.Now()
			}
			if delivered >= uint64(gr.Sent) || time.Since(lastAt) > 20*time.Millisecond {
				d = sw.Dump()
				lost := (d.Runtime.InputDrops - d0.Runtime.InputDrops) + (d.TM.TotalDroppedPkts - d0.TM.TotalDroppedPkts)
				if delivered+lost >= uint64(gr.Sent) && !d.Ports[0].Input.Held && d.TM.Buffer.UsedBytes == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Logf("%+v: gave up waiting: delivered %d + lost %d of %d (frames lost outside the switch?)", c, delivered, lost, gr.Sent)
					break
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		cpu := cpuTime() - cpu0
		fwd := lastAt.Sub(start).Seconds()
		inDrops := d.Runtime.InputDrops - d0.Runtime.InputDrops
		other := uint64(gr.Sent) - delivered - inDrops
		class := "lossy"
		if c.lossless {
			class = "lossless (PFC)"
		}
		lapses := "-"
		if c.lossless {
			lapses = strconv.Itoa(gr.Lapsed)
		}
		rate := "max"
		if c.rate > 0 {
			rate = fmt.Sprintf("%.0fk", c.rate/1000)
		}
		row := fmt.Sprintf("| %d | %s %s | %d B | %s | %.0f | %.2f%% (%d of %d) | %.0f | %d | %d | %d (%d) | %s | %.2f us | %.0f | %s |",
			cores, c.gen, rate, c.size, class, float64(gr.Sent)/gr.Seconds, 100*float64(delivered)/float64(gr.Sent), delivered, gr.Sent,
			float64(delivered)/fwd, inDrops, other, d.Runtime.PFCTxXoff-d0.Runtime.PFCTxXoff, d.Runtime.InputHolds-d0.Runtime.InputHolds, lapses,
			cpu.Seconds()*1e6/float64(max(1, delivered)), float64(delivered)/cpu.Seconds(), load)
		rows = append(rows, row)
		t.Logf("%s (generator: %.2f s, %.2f CPU-s, %d sends deferred by %d PAUSEs, %d pauses lapsed)", row, gr.Seconds, gr.CPUSecond, gr.Deferred, gr.Pauses, gr.Lapsed)
	}
	table := header + "\n" + strings.Join(rows, "\n") + "\n"
	t.Logf("\n%s", table)
	if *inputBenchOut != "" {
		f, err := os.OpenFile(*inputBenchOut, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		must(err)
		_, err = fmt.Fprintf(f, "<!-- %s, GOMAXPROCS %d, generator CPUs %q, RX batch %d, receive buffer %d B, RX ring %d B, input XOFF %v, defer lossless %v, ports %d b/s -->\n%s",
			time.Now().UTC().Format(time.RFC3339), cores, *inputBenchGenCPU, sw.rxBatch, sw.cfg.PortOptions.RecvBuffer, sw.cfg.PortOptions.RxRing,
			sw.cfg.InputXoff, !sw.cfg.NoLosslessDefer, *inputBenchRate, table)
		must(err)
		must(f.Close())
	}
}
