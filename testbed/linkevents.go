package testbed

import (
	"context"
	"fmt"
	"time"

	"github.com/fastcnp/fastcnp/internal/netns"
	fastcnpv1 "github.com/fastcnp/fastcnp/proto/fastcnp/v1"
)

// LinkEvent fails (or repairs) a link between two switches during a run,
// the way a cable pull does: both ends of the veth pair go down (up), and
// fastcnpd is told through its API (SetLinkState, as a monitoring system
// would) NotifyAfter later.
type LinkEvent struct {
	// At is when the link changes, since the run's common start instant.
	At time.Duration `json:"at_ns"`
	// Port is one end of the link, a switch port ("leaf2-p9") whose peer
	// is another switch.
	Port string `json:"port"`
	// Down fails the link; false repairs it.
	Down bool `json:"down"`
	// NotifyAfter is the detection delay: how long after the link changes
	// fastcnpd learns of it.
	NotifyAfter time.Duration `json:"notify_after_ns"`
}

// LinkEventResult is what became of a LinkEvent.
type LinkEventResult struct {
	LinkEvent
	// Peer is the other end of the link.
	Peer string `json:"peer"`
	// ChangedMs, NotifiedMs and InstalledMs are when the link changed,
	// when fastcnpd was told, and when it had installed the new INC tree
	// on every switch (SetLinkState returned), in ms since the run's start.
	ChangedMs   float64 `json:"changed_ms"`
	NotifiedMs  float64 `json:"notified_ms"`
	InstalledMs float64 `json:"installed_ms"`
	// BucketsMoved are the buckets of the leaves' shared INC route table
	// that moved to another upper switch.
	BucketsMoved uint32 `json:"buckets_moved"`
	// Err is what went wrong, if anything.
	Err string `json:"error,omitempty"`
}

// checkLinkEvents resolves the events' ports: each must be a switch port
// linked to another switch.
func (t *Topology) checkLinkEvents(evs []LinkEvent) ([][2]Endpoint, error) {
	out := make([][2]Endpoint, len(evs))
	for i, ev := range evs {
		e, err := ParseEndpoint(ev.Port)
		if err != nil || e.IsHost() {
			return nil, fmt.Errorf("testbed: link event %d: %q is not a switch port", i, ev.Port)
		}
		found := false
		for _, sp := range t.SwitchPorts(e.Node) {
			if sp.Port == e.Port && !sp.Peer.IsHost() {
				out[i], found = [2]Endpoint{e, sp.Peer}, true
			}
		}
		if !found {
			return nil, fmt.Errorf("testbed: link event %d: %s is not linked to another switch", i, ev.Port)
		}
	}
	return out, nil
}

// runLinkEvents plays the events on the run's clock (started) until ctx
// ends; results[i] is filled in for each event that ran.
func runLinkEvents(ctx context.Context, fab *netns.NS, ctl *controllerHandle, started time.Time, evs []LinkEvent,
	ends [][2]Endpoint, results []LinkEventResult) {
	since := func() float64 { return float64(time.Since(started)) / 1e6 }
	for i, ev := range evs {
		r := &results[i]
		r.LinkEvent, r.Peer = ev, ends[i][1].String()
		if !sleepUntil(ctx, started.Add(ev.At)) {
			return
		}
		state := "up"
		if ev.Down {
			state = "down"
		}
		r.ChangedMs = since()
		for _, e := range ends[i] {
			if _, err := fab.IP(ctx, "link", "set", fmt.Sprintf("%s-p%d", e.Node, e.Port), state); err != nil {
				r.Err = err.Error()
			}
		}
		if !sleepUntil(ctx, time.Now().Add(ev.NotifyAfter)) {
			return
		}
		r.NotifiedMs = since()
		moved, err := ctl.setLinkState(ctx, fab, ends[i][0].Node, ends[i][0].Port, ev.Down)
		r.InstalledMs, r.BucketsMoved = since(), moved
		if err != nil && r.Err == "" {
			r.Err = err.Error()
		}
	}
}

// sleepUntil waits until t or ctx's end; it reports whether t came.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// setLinkState tells fastcnpd of a link's state: the in-process daemon
// directly, the fastcnpd process through its API (in the fabric namespace).
func (h *controllerHandle) setLinkState(ctx context.Context, fab *netns.NS, sw string, port uint16, down bool) (uint32, error) {
	if h.d != nil {
		moved, err := h.d.SetLinkState(ctx, sw, port, down)
		return uint32(moved), err
	}
	conn, err := grpcConn(fab, h.api)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	t, err := fastcnpv1.NewFastcnpClient(conn).SetLinkState(ctx, &fastcnpv1.SetLinkStateRequest{Switch: sw, Port: uint32(port), Down: down})
	if err != nil {
		return 0, fmt.Errorf("testbed: SetLinkState: %w", err)
	}
	return t.GetBucketsMoved(), nil
}
