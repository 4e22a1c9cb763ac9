package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/fastcnp/fastcnp/afpacket"
	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/internal/netns"
	"github.com/fastcnp/fastcnp/internal/netns/netnstest"
	"github.com/fastcnp/fastcnp/model/tm"
	"github.com/fastcnp/fastcnp/p4src"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	softswitch "github.com/fastcnp/fastcnp/softswitch"
)

func TestParseArgs(t *testing.T) {
	base := []string{"--device-id", "1", "-i", "1@veth1", "-i", "2@veth2"}
	for _, tc := range []struct {
		name  string
		args  []string
		err   string // substring of the error; "" = valid
		check func(t *testing.T, o options)
	}{
		{name: "simple_switch_grpc shape", args: []string{"--device-id", "1", "-i", "1@veth1", "-i", "2@veth2", "--cpu-port", "255", "--grpc-server-addr", "127.0.0.1:9559"},
			check: func(t *testing.T, o options) {
				c := o.cfg
				if c.DeviceID != 1 || len(c.Ports) != 2 || c.Ports[1].Num != 2 || c.Ports[1].Ifname != "veth2" || c.GRPCAddr != "127.0.0.1:9559" {
					t.Errorf("config %+v", c)
				}
				if c.TM.Threshold != tm.ThresholdDynamic || c.TM.Lossless != 1<<3 || !c.TM.WireOverhead || c.TM.Scheduler != tm.SchedLosslessFirst {
					t.Errorf("TM defaults %+v", c.TM)
				}
			}},
		{name: "bmv2 style with -- and --no-p4", args: []string{"--device-id", "3", "--no-p4", "-i", "1@a", "--", "--grpc-server-addr", "127.0.0.1:50001", "--cpu-port", "255"},
			check: func(t *testing.T, o options) {
				if o.cfg.DeviceID != 3 || o.cfg.GRPCAddr != "127.0.0.1:50001" {
					t.Errorf("config %+v", o.cfg)
				}
			}},
		{name: "conformance runner line", args: []string{"--device-id", "1", "--no-p4", "-i", "1@sw1-x", "-i", "2@sw2-x", "--", "--grpc-server-addr", "127.0.0.1:9559", "--cpu-port", "255", "--priority-queues", "8"},
			check: func(t *testing.T, o options) {
				if len(o.cfg.Ports) != 2 || len(o.warnings) != 0 {
					t.Errorf("ports %+v, warnings %q", o.cfg.Ports, o.warnings)
				}
			}},
		{name: "mininet bmv2 line", args: []string{"--device-id", "2", "--thrift-port", "9092", "--no-p4", "-i", "1@s1-eth1", "--", "--grpc-server-addr", "127.0.0.1:50002", "--cpu-port", "255", "--priority-queues", "8"},
			check: func(t *testing.T, o options) {
				if o.cfg.DeviceID != 2 || len(o.warnings) != 1 {
					t.Errorf("device %d, warnings %q", o.cfg.DeviceID, o.warnings)
				}
			}},
		{name: "positional json ignored", args: append(append([]string{}, base...), "prog.json"),
			check: func(t *testing.T, o options) {
				if len(o.warnings) != 1 {
					t.Errorf("warnings %q", o.warnings)
				}
			}},
		{name: "rates", args: append(append([]string{}, base...), "--port-rate", "100Mb/s", "--port-rate", "2=10Gb/s"),
			check: func(t *testing.T, o options) {
				if o.cfg.DefaultRateBps != 100e6 || o.cfg.Ports[0].RateBps != 0 || o.cfg.Ports[1].RateBps != 10e9 {
					t.Errorf("rates: default %d, ports %d %d", o.cfg.DefaultRateBps, o.cfg.Ports[0].RateBps, o.cfg.Ports[1].RateBps)
				}
			}},
		{name: "static pfc", args: append(append([]string{}, base...), "--pfc-xoff", "20KB", "--pfc-xon-offset", "4KiB", "--buffer-size", "2MiB", "--link-delay", "2us", "--pfc-response-time", "1ms"),
			check: func(t *testing.T, o options) {
				c := o.cfg
				if c.TM.Threshold != tm.ThresholdStatic || c.TM.XoffBytes != 20000 || c.TM.ResumeOffsetBytes != 4096 || c.TM.BufferBytes != 2<<20 ||
					c.LinkDelay != 2*time.Microsecond || c.TM.ProcessingAllowanceNs != 1e6 {
					t.Errorf("config %+v", c)
				}
			}},
		{name: "dynamic alpha", args: append(append([]string{}, base...), "--pfc-alpha", "0.25", "--lossless-priorities", "3,4", "--scheduler", "strict"),
			check: func(t *testing.T, o options) {
				if o.cfg.TM.Alpha != 0.25 || o.cfg.TM.Lossless != 0x18 || o.cfg.TM.Scheduler != tm.SchedStrict {
					t.Errorf("TM %+v", o.cfg.TM)
				}
			}},
		{name: "no lossless", args: append(append([]string{}, base...), "--lossless-priorities", "none"),
			check: func(t *testing.T, o options) {
				if !o.cfg.LosslessNone {
					t.Error("LosslessNone not set")
				}
			}},
		{name: "input defaults", args: base,
			check: func(t *testing.T, o options) {
				c := o.cfg
				if c.PortOptions.RecvBuffer != 0 || c.InputXoff != 0 || c.InputXon != 0 || c.PortOptions.Batch != 0 || c.NoLosslessDefer {
					t.Errorf("input options %+v, XOFF %v XON %v: want zero (the softswitch defaults)", c.PortOptions, c.InputXoff, c.InputXon)
				}
			}},
		{name: "input options", args: append(append([]string{}, base...), "--rx-buffer", "64MiB", "--rx-pfc-xoff", "0.5", "--rx-pfc-xon", "0.2", "--rx-batch", "256", "--rx-defer-lossless=false"),
			check: func(t *testing.T, o options) {
				c := o.cfg
				if c.PortOptions.RecvBuffer != 64<<20 || c.InputXoff != 0.5 || c.InputXon != 0.2 || c.PortOptions.Batch != 256 || !c.NoLosslessDefer {
					t.Errorf("input options %+v, XOFF %v XON %v", c.PortOptions, c.InputXoff, c.InputXon)
				}
			}},
		{name: "input backpressure off", args: append(append([]string{}, base...), "--rx-pfc-xoff", "off"),
			check: func(t *testing.T, o options) {
				if o.cfg.InputXoff >= 0 {
					t.Errorf("XOFF %v, want negative (off)", o.cfg.InputXoff)
				}
			}},
		{name: "rx buffer too small", args: append(append([]string{}, base...), "--rx-buffer", "4KiB"), err: "--rx-buffer"},
		{name: "rx xoff not a fraction", args: append(append([]string{}, base...), "--rx-pfc-xoff", "2"), err: "--rx-pfc-xoff"},
		{name: "rx xon above xoff", args: append(append([]string{}, base...), "--rx-pfc-xoff", "0.2", "--rx-pfc-xon", "0.3"), err: "input backpressure"},
		{name: "rx batch", args: append(append([]string{}, base...), "--rx-batch", "5000"), err: "--rx-batch"},
		{name: "no device id", args: []string{"-i", "1@a"}, err: "--device-id"},
		{name: "no ports", args: []string{"--device-id", "1"}, err: "no ports"},
		{name: "bad interface", args: []string{"--device-id", "1", "-i", "veth1"}, err: "PORT@IFNAME"},
		{name: "bad port number", args: []string{"--device-id", "1", "-i", "x@veth1"}, err: "port number"},
		{name: "port 512", args: []string{"--device-id", "1", "-i", "512@veth1"}, err: "0..511"},
		{name: "duplicate port", args: []string{"--device-id", "1", "-i", "1@a", "-i", "1@b"}, err: "used twice"},
		{name: "cpu port", args: append(append([]string{}, base...), "--cpu-port", "64"), err: "CPU_PORT is 255"},
		{name: "bad rate", args: append(append([]string{}, base...), "--port-rate", "fast"), err: "port-rate"},
		{name: "rate too low", args: append(append([]string{}, base...), "--port-rate", "10Mb/s"), err: "outside"},
		{name: "rate unknown port", args: append(append([]string{}, base...), "--port-rate", "7=1Gb/s"), err: "no port 7"},
		{name: "xoff and alpha", args: append(append([]string{}, base...), "--pfc-xoff", "20KB", "--pfc-alpha", "0.5"), err: "exclude"},
		{name: "xon offset above xoff", args: append(append([]string{}, base...), "--pfc-xoff", "2KB", "--pfc-xon-offset", "3KB"), err: "below"},
		{name: "xoff below default xon offset", args: append(append([]string{}, base...), "--pfc-xoff", "2KB"), err: "below"},
		{name: "bad size", args: append(append([]string{}, base...), "--buffer-size", "lots"), err: "buffer-size"},
		{name: "buffer below headroom", args: append(append([]string{}, base...), "--buffer-size", "1KB"), err: "shared pool"},
		{name: "bad delay", args: append(append([]string{}, base...), "--link-delay", "5"), err: "unit"},
		{name: "bad priorities", args: append(append([]string{}, base...), "--lossless-priorities", "9"), err: "0..7"},
		{name: "bad scheduler", args: append(append([]string{}, base...), "--scheduler", "wfq"), err: "scheduler"},
		{name: "bad log level", args: append(append([]string{}, base...), "--log-level", "loud"), err: "log-level"},
		{name: "debug not loopback", args: append(append([]string{}, base...), "--debug-addr", "0.0.0.0:9560"), err: "loopback"},
		{name: "unknown flag", args: append(append([]string{}, base...), "--frobnicate"), err: "not defined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseArgs(tc.args, io.Discard)
			if tc.err == "" {
				if err != nil {
					t.Fatalf("parseArgs: %v", err)
				}
				if tc.check != nil {
					tc.check(t, o)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("parseArgs error %v, want one containing %q", err, tc.err)
			}
		})
	}
	if _, err := parseArgs([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}

// freePort returns a loopback TCP address that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// nsDialer dials TCP addresses inside ns (the socket is made there and then works
// from any goroutine).
func nsDialer(ns *netns.NS) func(ctx context.Context, addr string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		var c net.Conn
		err := ns.Do(func() error {
			var d net.Dialer
			var err error
			c, err = d.DialContext(ctx, "tcp", addr)
			return err
		})
		return c, err
	}
}

// promiscuity returns the promiscuous-mode reference count of dev in ns.
func promiscuity(ctx context.Context, t *testing.T, ns *netns.NS, dev string) int {
	t.Helper()
	out, err := ns.IP(ctx, "-d", "-j", "link", "show", "dev", dev)
	if err != nil {
		t.Fatal(err)
	}
	var links []struct {
		Promiscuity int `json:"promiscuity"`
	}
	if err := json.Unmarshal(out, &links); err != nil || len(links) != 1 {
		t.Fatalf("ip -j link show %s: %v\n%s", dev, err, out)
	}
	return links[0].Promiscuity
}

// TestBinary builds the command and, once per stop signal, runs it inside a network
// namespace (ip netns exec) as simple_switch_grpc is run, between two host
// namespaces: the P4Runtime client pushes the pipeline and the routes, h1 pings h2
// through it, the debug endpoint and SIGUSR1 dump the counters; then the signal
// stops it: exit status 0, and nothing is left behind (no process in the namespace,
// the interfaces out of promiscuous mode and still there, the P4Runtime and debug
// ports closed).
func TestBinary(t *testing.T) {
	bin := buildBinary(t)
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
	}{{"SIGTERM", syscall.SIGTERM}, {"SIGINT", syscall.SIGINT}} {
		t.Run(tc.name, func(t *testing.T) { runBinary(t, bin, tc.sig) })
	}
}

// buildBinary builds the command into a temporary directory, for tests
// that run it as root (skipped otherwise, and in -short mode).
func buildBinary(t *testing.T) string {
	t.Helper()
	netnstest.RequireRoot(t)
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "fastcnp-switch")
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, gobin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func runBinary(t *testing.T, bin string, stopSig syscall.Signal) {
	tb := netnstest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	swNS, err := tb.Namespace(ctx, "sw")
	must(err)
	h1, err := tb.Namespace(ctx, "h1")
	must(err)
	h2, err := tb.Namespace(ctx, "h2")
	must(err)
	mac := func(s string) net.HardwareAddr { m, _ := net.ParseMAC(s); return m }
	sw1, sw2 := mac("02:5e:00:00:00:01"), mac("02:5e:00:00:00:02")
	host1, host2 := mac("02:aa:00:00:00:01"), mac("02:aa:00:00:00:02")
	_, err = tb.Veth(ctx,
		netns.LinkConfig{NS: h1, Name: "eth0", MAC: host1, Addrs: []netip.Prefix{netip.MustParsePrefix("10.0.1.1/24")}, DisableIPv6: true},
		netns.LinkConfig{NS: swNS, Name: "p1", MAC: sw1, DisableIPv6: true})
	must(err)
	_, err = tb.Veth(ctx,
		netns.LinkConfig{NS: swNS, Name: "p2", MAC: sw2, DisableIPv6: true},
		netns.LinkConfig{NS: h2, Name: "eth0", MAC: host2, Addrs: []netip.Prefix{netip.MustParsePrefix("10.0.2.1/24")}, DisableIPv6: true})
	must(err)
	for _, h := range []struct {
		ns      *netns.NS
		gw      string
		gwMAC   net.HardwareAddr
		farSide string
	}{{h1, "10.0.1.254", sw1, "10.0.2.0/24"}, {h2, "10.0.2.254", sw2, "10.0.1.0/24"}} {
		must(h.ns.Do(func() error { return afpacket.DisableOffloads("eth0") }))
		must(h.ns.AddNeighbor(ctx, "eth0", netip.MustParseAddr(h.gw), h.gwMAC))
		must(h.ns.AddRoute(ctx, netns.Route{Dst: netip.MustParsePrefix(h.farSide), Via: netip.MustParseAddr(h.gw), Dev: "eth0"}))
	}

	// Fresh namespace: the simple_switch_grpc default ports are free there.
	const grpcAddr, debugAddr = "127.0.0.1:9559", "127.0.0.1:9560"
	ip, err := exec.LookPath("ip")
	must(err)
	cmd := exec.CommandContext(ctx, ip, "netns", "exec", swNS.Name(), bin,
		"--device-id", "9", "-i", "1@p1", "-i", "2@p2", "--cpu-port", "255", "--grpc-server-addr", grpcAddr,
		"--debug-addr", debugAddr, "--port-rate", "100Mb/s", "--port-rate", "2=1Gb/s", "--link-delay", "1us",
		"--buffer-size", "2MiB", "--pfc-alpha", "0.25", "--log-level", "info")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	must(cmd.Start())
	exited := make(chan struct{})
	var exitErr error
	go func() { exitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	dial := nsDialer(swNS)

	c, err := p4rt.Dial(ctx, grpcAddr, 9, p4rt.WithElectionID(p4rt.Uint128{Low: 1}),
		p4rt.WithDialOptions(grpc.WithContextDialer(dial)))
	if err != nil {
		t.Fatalf("dial: %v\n%s", err, stderr.String())
	}
	defer c.Close()
	info, err := p4src.P4Info()
	must(err)
	must(c.SetPipeline(ctx, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, info, nil, 1))
	for _, r := range []struct {
		dst            string
		port           int
		srcMAC, dstMAC net.HardwareAddr
	}{{"10.0.1.0", 1, sw1, host1}, {"10.0.2.0", 2, sw2, host2}} {
		e, err := c.Info().TableEntry("ipv4_route").Match(p4rt.LPM("dst_addr", net.ParseIP(r.dst).To4(), 24)).
			Action("set_nexthop", p4rt.P("port", r.port), p4rt.P("src_mac", r.srcMAC), p4rt.P("dst_mac", r.dstMAC)).Entity()
		must(err)
		must(c.Write(ctx, p4rt.Insert(e)))
	}
	out, err := h1.Exec(ctx, "ping", "-c", "2", "-i", "0.2", "-W", "5", "10.0.2.1")
	if err != nil || !strings.Contains(string(out), " 2 received") || !strings.Contains(string(out), "ttl=63") {
		t.Errorf("ping through the binary: %v\n%s", err, out)
	}

	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) { return dial(ctx, addr) }}}
	resp, err := hc.Get("http://" + debugAddr + softswitch.DebugPath)
	must(err)
	var d softswitch.Dump
	err = json.NewDecoder(resp.Body).Decode(&d)
	resp.Body.Close()
	must(err)
	hc.CloseIdleConnections()
	if len(d.Ports) != 2 || d.Ports[0].RateBps != 100e6 || d.Ports[1].RateBps != 1e9 || d.Ports[0].Ifname != "p1" ||
		d.TM.Buffer.SizeBytes != 2<<20 || len(d.TM.Ports) != 3 {
		t.Errorf("debug dump: ports %+v, buffer %+v", d.Ports, d.TM.Buffer)
	}
	if d.Runtime.Dequeued < 4 || d.TM.TotalDequeuedPkts != d.Runtime.Dequeued || d.Runtime.LosslessDrops != 0 {
		t.Errorf("debug dump after 2 pings: runtime %+v, TM dequeued %d", d.Runtime, d.TM.TotalDequeuedPkts)
	}
	for _, dev := range []string{"p1", "p2"} {
		if n := promiscuity(ctx, t, swNS, dev); n < 1 {
			t.Errorf("%s: promiscuity %d while the switch runs", dev, n)
		}
	}
	must(cmd.Process.Signal(syscall.SIGUSR1))
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stderr.String(), `"tm_index"`); {
		if time.Now().After(deadline) {
			t.Fatalf("no JSON dump on SIGUSR1:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	nsPids := func() []string {
		t.Helper()
		// From the host namespace: `ip -n NS netns pids` would list itself.
		out, err := exec.CommandContext(ctx, ip, "netns", "pids", swNS.Name()).Output()
		must(err)
		return strings.Fields(string(out))
	}
	if pids := nsPids(); len(pids) != 1 || pids[0] != strconv.Itoa(cmd.Process.Pid) {
		t.Errorf("processes in the switch's namespace: %q, want only the switch (%d)", pids, cmd.Process.Pid)
	}

	must(cmd.Process.Signal(stopSig))
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("still running 20 s after %v:\n%s", stopSig, stderr.String())
	}
	if exitErr != nil {
		t.Errorf("exit after %v: %v (want status 0)\n%s", stopSig, exitErr, stderr.String())
	}
	if !strings.Contains(stderr.String(), "switch stopped") {
		t.Errorf("no clean stop in the log:\n%s", stderr.String())
	}
	// Nothing left behind.
	if pids := nsPids(); len(pids) != 0 {
		t.Errorf("processes left in the namespace: %q", pids)
	}
	for _, dev := range []string{"p1", "p2"} {
		if n := promiscuity(ctx, t, swNS, dev); n != 0 {
			t.Errorf("%s: promiscuity %d after exit, want 0", dev, n)
		}
	}
	for _, addr := range []string{grpcAddr, debugAddr} {
		conn, err := dial(ctx, addr)
		if err == nil {
			conn.Close()
			t.Errorf("%s still accepts connections after exit", addr)
		} else if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("dial %s after exit: %v, want connection refused", addr, err)
		}
	}
	t.Logf("%v: exit status 0; dump had %d frames dequeued", stopSig, d.Runtime.Dequeued)
}
