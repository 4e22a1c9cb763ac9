// Package netnstest wires netns.Testbed into Go tests: it skips tests that
// are not run as root and registers cleanup with t.Cleanup so that every
// namespace and link is removed even when the test fails.
package netnstest

import (
	"os"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/fastcnp/fastcnp/internal/netns"
)

// RequireRoot skips t unless the process runs as root (CAP_NET_ADMIN and
// CAP_SYS_ADMIN are needed to create namespaces and links).
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: needs root to create network namespaces and veth pairs (CI runs as root)")
	}
}

// New returns a fresh testbed whose Close is registered with t.Cleanup.
// Register it before anything that uses its namespaces (ports, sockets), so
// that those are closed first (t.Cleanup runs last-in first-out).
func New(t testing.TB) *netns.Testbed {
	t.Helper()
	RequireRoot(t)
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	tb, err := netns.NewTestbed(log.WithField("test", t.Name()))
	if err != nil {
		t.Fatalf("netnstest: %v", err)
	}
	t.Cleanup(func() {
		if err := tb.Close(); err != nil {
			t.Errorf("netnstest: cleanup: %v", err)
		}
	})
	return tb
}
