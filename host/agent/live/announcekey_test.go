package live_test

import (
	"sync"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/host/agent"
	"github.com/fastcnp/fastcnp/host/agent/live"
	"github.com/fastcnp/fastcnp/wire"
)

// TestAnnouncementsAuthenticated: with AnnounceKey, every announcement the
// agent sends (the first up, the refreshes, the down) carries the
// authentication trailer with the key's ID, a tag that verifies with the
// key, strictly increasing timestamps on the wall clock, and distinct
// nonces.
func TestAnnouncementsAuthenticated(t *testing.T) {
	key := agent.AnnounceKey{ID: 42, Secret: []byte("live-agent-announcement-key-0123")}
	fl := []live.FlowConfig{flowAB(live.FlowConfig{Duration: live.Duration(200 * time.Millisecond)})}
	var mu sync.Mutex
	var trailers []wire.AnnounceAuth
	capture := func(ts time.Time, frame []byte, out bool) {
		var f wire.Frame
		if !out || wire.Parse(frame, wire.ParseOptions{AnnouncePorts: []uint16{wire.DefaultAnnouncePort}}, &f) != nil ||
			!f.Has(wire.LayerAnnouncement) {
			return
		}
		payload := frame[f.Off[wire.LayerAnnouncement]:]
		var a wire.AnnounceAuth
		if len(payload) != wire.AnnouncementAuthLen || int(f.UDP.Length) != wire.UDPLen+wire.AnnouncementAuthLen ||
			a.Decode(payload[wire.AnnouncementLen:]) != nil {
			t.Errorf("announcement of %d bytes (UDP length %d), want %d authenticated", len(payload), f.UDP.Length, wire.AnnouncementAuthLen)
			return
		}
		if !wire.VerifyAnnouncement(payload, key.Secret) {
			t.Errorf("announcement %+v does not verify with the key", a)
		}
		mu.Lock()
		trailers = append(trailers, a)
		mu.Unlock()
	}
	before := time.Now()
	runSender(t, fl, live.Config{AnnounceInterval: 40 * time.Millisecond, AnnounceKey: &key, Capture: capture})
	after := time.Now()

	mu.Lock()
	defer mu.Unlock()
	if len(trailers) < 3 {
		t.Fatalf("%d announcements, want the up, refreshes and the down", len(trailers))
	}
	nonces := map[uint64]bool{}
	for i, a := range trailers {
		if a.KeyID != 42 || a.Type != wire.AnnounceAuthHMACSHA256 {
			t.Errorf("trailer %d: %+v", i, a)
		}
		if ts := time.Unix(0, int64(a.Timestamp)); ts.Before(before) || ts.After(after) {
			t.Errorf("trailer %d: timestamp %v outside the run [%v, %v]", i, ts, before, after)
		}
		if i > 0 && a.Timestamp <= trailers[i-1].Timestamp {
			t.Errorf("trailer %d: timestamp %d not after %d", i, a.Timestamp, trailers[i-1].Timestamp)
		}
		if nonces[a.Nonce] {
			t.Errorf("trailer %d: nonce %#x again", i, a.Nonce)
		}
		nonces[a.Nonce] = true
	}
}
