package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/internal/netns"
	"github.com/fastcnp/fastcnp/internal/netns/netnstest"
	"github.com/fastcnp/fastcnp/p4src"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	softswitch "github.com/fastcnp/fastcnp/target/switch"
	"github.com/fastcnp/fastcnp/target/tm"
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

// TestBinary builds the command, runs it on two veth ports in the host namespace,
// pushes the pipeline over P4Runtime, reads the debug endpoint, dumps on SIGUSR1 and
// stops it with SIGTERM (exit status 0).
func TestBinary(t *testing.T) {
	tb := netnstest.New(t)
	if testing.Short() {
		t.Skip("builds the binary")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "fastcnp-switch")
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if out, err := exec.CommandContext(ctx, gobin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	peer, err := tb.Namespace(ctx, "peer")
	if err != nil {
		t.Fatal(err)
	}
	var ifs []string
	for i := range 2 {
		name := tb.IfName(fmt.Sprintf("sw%d", i))
		if _, err := tb.Veth(ctx, netns.LinkConfig{Name: name, DisableIPv6: true},
			netns.LinkConfig{NS: peer, Name: fmt.Sprintf("eth%d", i), DisableIPv6: true}); err != nil {
			t.Fatal(err)
		}
		ifs = append(ifs, name)
	}
	grpcAddr, debugAddr := freePort(t), freePort(t)
	cmd := exec.CommandContext(ctx, bin, "--device-id", "9", "-i", "1@"+ifs[0], "-i", "2@"+ifs[1],
		"--cpu-port", "255", "--grpc-server-addr", grpcAddr, "--debug-addr", debugAddr,
		"--port-rate", "100Mb/s", "--port-rate", "2=1Gb/s", "--link-delay", "1us", "--log-level", "info")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
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

	c, err := p4rt.Dial(ctx, grpcAddr, 9, p4rt.WithElectionID(p4rt.Uint128{Low: 1}))
	if err != nil {
		t.Fatalf("dial: %v\n%s", err, stderr.String())
	}
	defer c.Close()
	info, err := p4src.P4Info()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetPipeline(ctx, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, info, nil, 1); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + debugAddr + softswitch.DebugPath)
	if err != nil {
		t.Fatal(err)
	}
	var d softswitch.Dump
	err = json.NewDecoder(resp.Body).Decode(&d)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Ports) != 2 || d.Ports[0].RateBps != 100e6 || d.Ports[1].RateBps != 1e9 || d.Ports[0].Ifname != ifs[0] {
		t.Errorf("debug dump ports %+v", d.Ports)
	}
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stderr.String(), `"tm_index"`); {
		if time.Now().After(deadline) {
			t.Fatalf("no JSON dump on SIGUSR1:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if exitErr != nil {
			t.Errorf("exit: %v\n%s", exitErr, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no exit 10 s after SIGTERM:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "switch stopped") {
		t.Errorf("no clean stop in the log:\n%s", stderr.String())
	}
	_ = os.Remove(bin)
}
