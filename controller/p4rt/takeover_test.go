package p4rt

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/softswitch/p4rtserver"
)

// specServer starts fastcnp-switch's P4Runtime server, which follows the spec's
// arbitration: it remembers the highest election ID seen and promotes nobody
// below it.
func specServer(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dp := p4rtserver.NewLocalDataPlane(pipeline.New(pipeline.Options{}), p4rtserver.LocalOptions{})
	srv, err := p4rtserver.New(p4rtserver.Options{DeviceID: 1, DataPlane: dp})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ctx, lis) }()
	t.Cleanup(func() { cancel(); <-done })
	return lis.Addr().String()
}

// waitStatus polls c until ok holds for its arbitration status (events are
// asynchronous; the poll has a generous bound only to fail instead of hanging).
func waitStatus(t *testing.T, c *Client, what string, ok func(ArbitrationStatus) bool) ArbitrationStatus {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := c.Status()
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: status stayed %+v", what, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestTakeoverAfterPrimaryLeaves: the P4Runtime spec (v1.5, "Client arbitration
// and controller replication"): "Let election_id_past be the highest election ID
// the server has ever seen for the given device_id and role (including the one of
// the current primary if there is one). If election_id is greater than or equal
// to election_id_past, then the controller becomes, or stays, primary." So after
// the primary (5) leaves, a standby with 3 is never promoted. With takeover on it
// raises its ID to 5 + 3 and becomes primary; with takeover off it stays a backup.
func TestTakeoverAfterPrimaryLeaves(t *testing.T) {
	tests := []struct {
		name     string
		takeover bool
		want     Uint128 // the standby's election ID at the end
	}{
		{"takeover", true, Uint128{Low: 5 + 3}},
		{"fixed ID", false, Uint128{Low: 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr := specServer(t)
			ctx := context.Background()
			primary, err := Dial(ctx, addr, 1, WithElectionID(Uint128{Low: 5}))
			if err != nil {
				t.Fatal(err)
			}
			waitStatus(t, primary, "primary", func(s ArbitrationStatus) bool { return s.Primary })
			standby, err := Dial(ctx, addr, 1, WithElectionID(Uint128{Low: 3}), WithTakeover(tc.takeover))
			if err != nil {
				t.Fatal(err)
			}
			defer standby.Close()
			waitStatus(t, standby, "backup", func(s ArbitrationStatus) bool { return !s.Primary && s.HasPrimary })
			if err := primary.Close(); err != nil {
				t.Fatal(err)
			}
			if tc.takeover {
				waitStatus(t, standby, "taken over", func(s ArbitrationStatus) bool { return s.Primary })
				if got := standby.Stats().Takeovers; got != 1 {
					t.Errorf("takeovers %d, want 1", got)
				}
			} else {
				st := waitStatus(t, standby, "no primary", func(s ArbitrationStatus) bool { return !s.HasPrimary })
				if st.Primary || st.PrimaryElectionID != (Uint128{Low: 5}) {
					t.Errorf("status %+v, want backup, no primary, highest 5", st)
				}
			}
			if got := standby.ElectionID(); got != tc.want {
				t.Errorf("election ID %v, want %v", got, tc.want)
			}
		})
	}
}

func TestUint128Add(t *testing.T) {
	max := Uint128{High: ^uint64(0), Low: ^uint64(0)}
	tests := []struct {
		a, b, want Uint128
		ok         bool
	}{
		{Uint128{Low: 5}, Uint128{Low: 3}, Uint128{Low: 8}, true},
		{Uint128{Low: ^uint64(0)}, Uint128{Low: 1}, Uint128{High: 1}, true},
		{max, Uint128{Low: 1}, Uint128{}, false},
	}
	for _, tc := range tests {
		got, ok := tc.a.add(tc.b)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("%v + %v = %v, %v; want %v, %v", tc.a, tc.b, got, ok, tc.want, tc.ok)
		}
	}
}
