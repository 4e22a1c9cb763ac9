//go:build linux

package bmv2

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/conformance"
	"github.com/fastcnp/fastcnp/p4src"
)

var (
	runBMv2  = flag.Bool("bmv2", false, "run the conformance vectors against BMv2 simple_switch_grpc (root, simple_switch_grpc on PATH, the compiled program)")
	bmv2Addr = flag.String("bmv2-grpc", "127.0.0.1:9559", "P4Runtime address for the simple_switch_grpc the test starts")
	bmv2Bin  = flag.String("bmv2-binary", "", "switch binary with simple_switch_grpc's command line (default: simple_switch_grpc on PATH)")
	bmv2Opts = flag.String("bmv2-target-options", "", "target options after -- (default: --cpu-port 255 --priority-queues 8)")
	bmv2CLI  = flag.String("bmv2-cli", "", "BMv2's Thrift CLI for register writes and reads (default: simple_switch_CLI on PATH; none: vectors that @requires registers are skipped)")
	bmv2Thr  = flag.Int("bmv2-thrift-port", 0, "Thrift port for the switch and the CLI (default: theirs, 9090)")
)

// TestBMv2 runs every target-neutral vector against BMv2:
//
//	sudo go test ./conformance/bmv2/ -run BMv2 -bmv2 -v
//
// It needs root (veth pairs, namespaces, raw sockets), simple_switch_grpc on PATH and
// the compiled program ($FASTCNP_BMV2_JSON or p4src/build/fastcnp.json, `make p4`).
// Vectors tagged @go-only or @requires are skipped with their reason, but
// @requires registers runs when BMv2's Thrift CLI (simple_switch_CLI, -bmv2-cli)
// answers.
func TestBMv2(t *testing.T) {
	if !*runBMv2 {
		t.Skip("BMv2 conformance is off: run with -bmv2 (needs root, simple_switch_grpc and make p4)")
	}
	if os.Geteuid() != 0 {
		t.Skip("BMv2 conformance needs root (veth pairs, namespaces, AF_PACKET)")
	}
	bin := *bmv2Bin
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("simple_switch_grpc"); err != nil {
			t.Skip("simple_switch_grpc is not on PATH (BMv2 with PI; see bmv2-testbed/README.md)")
		}
	}
	json, ok := p4src.BMv2JSONPath()
	if !ok {
		t.Skipf("no compiled program at %s: run make p4 or set %s", json, p4src.BMv2JSONEnv)
	}
	info, err := conformance.Program()
	if err != nil {
		t.Fatal(err)
	}
	vs, err := conformance.LoadDir("../vectors", info)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cfg := Config{Binary: bin, JSON: json, GRPCAddr: *bmv2Addr, CLI: *bmv2CLI, ThriftPort: *bmv2Thr}
	if *bmv2Opts != "" {
		cfg.TargetOptions = strings.Fields(*bmv2Opts)
	}
	sw, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := sw.Close(); err != nil {
			t.Error(err)
		}
	}()
	for _, v := range vs {
		t.Run(v.Name, func(t *testing.T) {
			if r := v.SkipReason(sw.Features()); r != "" {
				t.Skip(r)
			}
			if err := sw.Run(ctx, v); err != nil {
				t.Error(err)
			}
		})
	}
}
