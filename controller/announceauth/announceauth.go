// Package announceauth checks authenticated RDMA-connection announcements
// (docs/wire-formats.md, "Announcement authentication"): the tag with the
// key the announcement names, the key's right to announce for the sender,
// the timestamp against the clock, and a bounded replay cache. It is pure:
// no I/O, no goroutines, the time is an argument; fastcnpd holds a Verifier
// under a lock.
package announceauth

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/fastcnp/fastcnp/wire"
)

// Reasons an authenticated (or unauthenticated) announcement is refused:
// the reason label of fastcnpd's announcement metrics.
const (
	// ReasonUnauthenticated: no trailer where one is required.
	ReasonUnauthenticated = "unauthenticated"
	// ReasonUnknownKey: the trailer names a key fastcnpd does not hold.
	ReasonUnknownKey = "unknown_key"
	// ReasonBadTag: the tag is not the key's (forged or altered), or the
	// trailer's type is unknown.
	ReasonBadTag = "bad_tag"
	// ReasonKeyNotAllowed: an authentic announcement for a sender the key
	// may not announce for.
	ReasonKeyNotAllowed = "key_not_allowed"
	// ReasonStale: the timestamp is further from fastcnpd's clock than the
	// allowed skew.
	ReasonStale = "stale"
	// ReasonReplay: the announcement was seen before (or is older than
	// what the bounded cache still remembers of its key).
	ReasonReplay = "replay"
)

// Reasons lists every refusal reason of the package.
var Reasons = []string{ReasonUnauthenticated, ReasonUnknownKey, ReasonBadTag, ReasonKeyNotAllowed, ReasonStale, ReasonReplay}

// Key is a host's announcement key as fastcnpd holds it.
type Key struct {
	// ID is the key ID announcements carry (non-zero).
	ID uint32
	// Host names the key's host (logs, events).
	Host string
	// Secret is the HMAC key (wire.AnnounceKeyMinLen..AnnounceKeyMaxLen bytes).
	Secret []byte
	// Senders are the sender IPv4 addresses the key may announce for.
	Senders []netip.Prefix
}

// Allows reports whether the key may announce connections of sender ip.
func (k *Key) Allows(ip netip.Addr) bool {
	for _, p := range k.Senders {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// Refusal is why an announcement is refused.
type Refusal struct {
	Reason, Detail string
}

func (r *Refusal) Error() string { return r.Reason + ": " + r.Detail }

func refuse(reason, format string, a ...any) *Refusal {
	return &Refusal{Reason: reason, Detail: fmt.Sprintf(format, a...)}
}

// Options configures a Verifier.
type Options struct {
	// MaxSkew is how far a timestamp may be from the clock either way.
	MaxSkew time.Duration
	// ReplayCache is how many announcements the replay cache holds.
	ReplayCache int
}

// Verifier checks authenticated announcements. It is not safe for
// concurrent use.
type Verifier struct {
	keys    map[uint32]*Key
	skew    uint64 // ns
	replays replayCache
}

// NewVerifier returns a verifier of announcements signed with keys.
func NewVerifier(keys []Key, o Options) (*Verifier, error) {
	if o.MaxSkew <= 0 || o.ReplayCache <= 0 {
		return nil, errors.New("announceauth: MaxSkew and ReplayCache must be positive")
	}
	v := &Verifier{keys: make(map[uint32]*Key, len(keys)), skew: uint64(o.MaxSkew), replays: newReplayCache(o.ReplayCache)}
	for i := range keys {
		k := keys[i]
		switch {
		case k.ID == 0:
			return nil, fmt.Errorf("announceauth: key of host %q: ID 0", k.Host)
		case len(k.Secret) < wire.AnnounceKeyMinLen || len(k.Secret) > wire.AnnounceKeyMaxLen:
			return nil, fmt.Errorf("announceauth: key %d: %d bytes, want %d..%d", k.ID, len(k.Secret), wire.AnnounceKeyMinLen, wire.AnnounceKeyMaxLen)
		case v.keys[k.ID] != nil:
			return nil, fmt.Errorf("announceauth: key ID %d given twice", k.ID)
		}
		v.keys[k.ID] = &k
	}
	return v, nil
}

// Covers reports whether some key may announce for sender ip: such a
// sender's announcements must be authenticated even where unauthenticated
// ones are allowed.
func (v *Verifier) Covers(ip netip.Addr) bool {
	for _, k := range v.keys {
		if k.Allows(ip) {
			return true
		}
	}
	return false
}

// Check verifies an authenticated announcement payload (the announcement
// and its trailer, wire.AnnouncementAuthLen bytes) of sender at now. It
// returns the key that signed it, or a *Refusal. An authentic announcement
// is remembered in the replay cache whatever else becomes of it, so that
// it can never be accepted twice.
func (v *Verifier) Check(payload []byte, sender netip.Addr, now time.Time) (*Key, error) {
	var a wire.AnnounceAuth
	if len(payload) < wire.AnnouncementAuthLen || a.Decode(payload[wire.AnnouncementLen:]) != nil {
		return nil, refuse(ReasonBadTag, "announcement of %d bytes, want %d", len(payload), wire.AnnouncementAuthLen)
	}
	if a.Type != wire.AnnounceAuthHMACSHA256 {
		return nil, refuse(ReasonBadTag, "authentication type %d unknown", a.Type)
	}
	k := v.keys[a.KeyID]
	if k == nil {
		return nil, refuse(ReasonUnknownKey, "key %d unknown", a.KeyID)
	}
	if !wire.VerifyAnnouncement(payload, k.Secret) {
		return nil, refuse(ReasonBadTag, "tag does not match key %d (host %s)", a.KeyID, k.Host)
	}
	// Authentic from here on.
	t := uint64(now.UnixNano())
	switch {
	case a.Timestamp+v.skew < t:
		return k, refuse(ReasonStale, "timestamp %s is %v behind the clock (at most %v)",
			stamp(a.Timestamp), time.Duration(t-a.Timestamp), time.Duration(v.skew))
	case a.Timestamp > t+v.skew:
		return k, refuse(ReasonStale, "timestamp %s is %v ahead of the clock (at most %v)",
			stamp(a.Timestamp), time.Duration(a.Timestamp-t), time.Duration(v.skew))
	}
	if seen, floor := v.replays.seen(replayID{a.KeyID, a.Timestamp, a.Nonce}); seen {
		if floor {
			return k, refuse(ReasonReplay, "key %d: timestamp %s not after the oldest the replay cache forgot", a.KeyID, stamp(a.Timestamp))
		}
		return k, refuse(ReasonReplay, "key %d: timestamp %s, nonce %#x seen before", a.KeyID, stamp(a.Timestamp), a.Nonce)
	}
	v.replays.add(replayID{a.KeyID, a.Timestamp, a.Nonce}, t-min(t, v.skew))
	if !k.Allows(sender) {
		return k, refuse(ReasonKeyNotAllowed, "key %d (host %s) may not announce for sender %s", a.KeyID, k.Host, sender)
	}
	return k, nil
}

func stamp(ns uint64) string { return time.Unix(0, int64(ns)).UTC().Format(time.RFC3339Nano) }

// replayID is one authenticated announcement.
type replayID struct {
	key       uint32
	timestamp uint64
	nonce     uint64
}

// replayCache remembers the last max authenticated announcements in the
// order they came (a ring), forgetting those older than the skew window
// (refused as stale anyway). When it is full it forgets the oldest and
// raises its key's floor to that timestamp: from then on nothing of that
// key at or below the floor is accepted, so a forgotten announcement can
// never be replayed. A host's own announcements carry strictly increasing
// timestamps, so the floor refuses only announcements reordered behind
// max others. Its memory is bounded by max and by the number of keys (one
// floor each).
type replayCache struct {
	ids   map[replayID]struct{}
	ring  []replayID
	head  int
	n     int
	floor map[uint32]uint64
}

func newReplayCache(max int) replayCache {
	return replayCache{ids: make(map[replayID]struct{}), ring: make([]replayID, max), floor: make(map[uint32]uint64)}
}

// seen reports whether id was seen, and whether because of its key's floor.
func (c *replayCache) seen(id replayID) (seen, floor bool) {
	if f, ok := c.floor[id.key]; ok && id.timestamp <= f {
		return true, true
	}
	_, ok := c.ids[id]
	return ok, false
}

// add remembers id; entries older than oldest (ns) at the front are
// forgotten first.
func (c *replayCache) add(id replayID, oldest uint64) {
	for c.n > 0 && c.ring[c.head].timestamp < oldest {
		c.pop(false)
	}
	if c.n == len(c.ring) {
		c.pop(true)
	}
	c.ring[(c.head+c.n)%len(c.ring)] = id
	c.n++
	c.ids[id] = struct{}{}
}

// pop forgets the oldest entry; evicted (forgotten while still in the
// window) raises its key's floor.
func (c *replayCache) pop(evicted bool) {
	id := c.ring[c.head]
	delete(c.ids, id)
	if evicted && id.timestamp > c.floor[id.key] {
		c.floor[id.key] = id.timestamp
	}
	c.head = (c.head + 1) % len(c.ring)
	c.n--
}

// Len returns how many announcements the replay cache holds.
func (v *Verifier) Len() int { return v.replays.n }
