package testbed

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fastcnp/fastcnp/controller/config"
)

// python is Debian's interpreter, the one Mininet is installed for.
const python = "/usr/bin/python3"

// TestMininetTopology runs mininet/test_fastcnp_mininet.py: the Mininet
// topology of a real plan (s1-victim, written by WritePlan) is built for
// fastcnp-switch (plain links: the switch shapes its ports) and for BMv2
// (TCLink with the topology's rate on every link), without starting
// anything. No root, no BMv2 needed; skipped without Mininet.
func TestMininetTopology(t *testing.T) {
	if _, err := os.Stat(python); err != nil {
		t.Skipf("%s not found: the Mininet script needs Debian's python3 (make setup)", python)
	}
	if out, err := exec.Command(python, "-c", "import mininet.net").CombinedOutput(); err != nil {
		t.Skipf("Mininet is not importable by %s (make setup installs it): %v: %s", python, err, strings.TrimSpace(string(out)))
	}
	topo := loadTopo(t, "s1-victim.json")
	dir := t.TempDir()
	pl, err := topo.WritePlan(dir, ControllerOptions{Mode: config.ModeFastCNP})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range pl.Links {
		if l.RateBps != map[string]float64{"100Mb/s": 100e6, "250Mb/s": 250e6}[l.Rate] {
			t.Fatalf("plan link %+v: rate_bps does not match rate", l)
		}
	}
	cmd := exec.Command(python, "-m", "unittest", "-v", "test_fastcnp_mininet")
	cmd.Dir = filepath.Join("..", "mininet")
	cmd.Env = append(os.Environ(), "FASTCNP_PLAN="+filepath.Join(dir, "plan.json"), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("python tests: %v", err)
	}
	if strings.Contains(string(out), "skipped") {
		t.Fatalf("python tests skipped although Mininet is importable")
	}
}
