package layout

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"testing"
)

// TestTreeFollowsRule runs `go list -deps` over the module and fails on any package
// that depends against the rule (non-test dependencies: what ships).
func TestTreeFollowsRule(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go tool not on PATH")
	}
	cmd := exec.Command("go", "list", "-json=ImportPath,Deps", Module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	deps := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		deps[p.ImportPath] = p.Deps
	}
	if len(deps) < 20 {
		t.Fatalf("go list found only %d packages", len(deps))
	}
	for _, v := range Check(deps) {
		t.Error(v)
	}
}

// TestCheckFindsViolations: the checker itself catches each kind of forbidden edge.
func TestCheckFindsViolations(t *testing.T) {
	m := func(s string) string { return Module + "/" + s }
	tests := []struct {
		name string
		pkg  string
		deps []string
		want int
	}{
		{"controller on switch runtime", m("controller/daemon"), []string{m("softswitch"), m("p4src")}, 1},
		{"controller on the model", m("controller/fabric"), []string{m("model/pipeline")}, 1},
		{"host on the traffic manager", m("host/agent"), []string{m("model/tm"), m("wire")}, 1},
		{"wire on anything", m("wire"), []string{m("p4src")}, 1},
		{"cc on p4src", m("host/cc"), []string{m("p4src"), m("wire")}, 1},
		{"model on a runtime", m("model/tm"), []string{m("softswitch/p4rtserver"), m("afpacket")}, 2},
		{"allowed: controller on the contract", m("controller/daemon"), []string{m("p4src"), m("p4src/window"), m("wire"), "google.golang.org/grpc"}, 0},
		{"allowed: switch on models and ports", m("softswitch"), []string{m("model/pipeline"), m("model/tm"), m("afpacket")}, 0},
		{"allowed: testbed on everything", m("testbed"), []string{m("softswitch"), m("controller/daemon"), m("host/agent")}, 0},
		{"prefix is by path element", m("hostile"), []string{m("softswitch")}, 0},
		{"hpcc formats on anything", m("sim/hpcc"), []string{m("internal/units"), m("sim/traffic")}, 2},
		{"analysis on the generator", m("sim/analysis"), []string{m("sim/hpcc"), m("sim/traffic")}, 1},
		{"generator on analysis or a helper", m("sim/traffic"), []string{m("sim/analysis"), m("internal/units"), m("sim/hpcc")}, 2},
		{"simulator on a runtime", m("sim/engine"), []string{m("softswitch"), m("host/agent/live"), m("model/tm"), m("host/cc")}, 2},
		{"allowed: simulator on the agent's state machines", m("sim/network"), []string{m("host/agent"), m("p4src/portcfg"), m("model/fairshare")}, 0},
		{"allowed: simulator on the controller's INC tree", m("sim/scenario"), []string{m("controller/fabric"), m("controller/config"), m("controller/incroute"), m("controller/p4rt")}, 0},
		{"simulator on the daemon or the CLI", m("sim/scenario"), []string{m("controller/daemon"), m("controller/ctl"), m("controller/fabric")}, 2},
		{"allowed: simulator on models and algorithms", m("sim/engine"), []string{m("model/tm"), m("model/pipeline"), m("host/cc"), m("sim/hpcc"), m("wire")}, 0},
		{"allowed: sweep on the formats and analysis", m("sim/sweep"), []string{m("sim/hpcc"), m("sim/analysis"), m("internal/plotpng")}, 0},
		{"sweep on the engine", m("sim/sweep"), []string{m("sim/engine"), m("model/tm"), m("sim/hpcc")}, 2},
		{"internal on the simulator", m("internal/units"), []string{m("sim/hpcc")}, 1},
	}
	for _, tc := range tests {
		got := Check(map[string][]string{tc.pkg: tc.deps})
		if len(got) != tc.want {
			t.Errorf("%s: %d violations %v, want %d", tc.name, len(got), got, tc.want)
		}
	}
}
