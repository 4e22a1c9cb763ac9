package etcdtest

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestCluster: clusters of one and three members come up healthy; a killed
// member stops answering and answers again after a restart with its data.
func TestCluster(t *testing.T) {
	for _, members := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d members", members), func(t *testing.T) {
			c := Start(t, Options{Members: members})
			if len(c.Endpoints) != members {
				t.Fatalf("%d endpoints, want %d", len(c.Endpoints), members)
			}
			c.Kill(members - 1)
			hc := &http.Client{Timeout: time.Second}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if err := health(ctx, hc, c.Endpoints[members-1]); err == nil {
				t.Fatal("a killed member answered /health")
			}
			if err := c.Restart(members - 1); err != nil {
				t.Fatal(err)
			}
			wctx, wcancel := context.WithTimeout(context.Background(), 60*time.Second) // a hang guard
			defer wcancel()
			if err := c.WaitHealthy(wctx); err != nil {
				t.Fatalf("after restart: %v\n%s", err, c.Logs())
			}
		})
	}
}
