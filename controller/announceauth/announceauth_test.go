package announceauth

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/wire"
)

var (
	t0    = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	h1IP  = netip.MustParseAddr("10.1.1.5")
	h2IP  = netip.MustParseAddr("10.1.1.6")
	keyH1 = Key{ID: 1, Host: "h1", Secret: []byte("h1-secret-0123456789abcdef"), Senders: []netip.Prefix{netip.MustParsePrefix("10.1.1.5/32")}}
	keyH2 = Key{ID: 2, Host: "h2", Secret: []byte("h2-secret-0123456789abcdef"), Senders: []netip.Prefix{netip.MustParsePrefix("10.1.1.6/32")}}
)

// signed returns the payload of an announcement of sender signed with
// secret as key id at ts, with nonce.
func signed(t *testing.T, sender netip.Addr, id uint32, secret []byte, ts time.Time, nonce uint64) []byte {
	t.Helper()
	p := make([]byte, wire.AnnouncementAuthLen)
	ann := wire.NewAnnouncement(wire.AnnounceUp, wire.AnnounceFlagCNPTarget)
	ann.SenderIP = wire.Addr4(sender.As4())
	ann.SenderQPN, ann.ReceiverQPN = 0x11, 0x22
	if _, err := ann.Encode(p); err != nil {
		t.Fatal(err)
	}
	a := wire.AnnounceAuth{Type: wire.AnnounceAuthHMACSHA256, KeyID: id, Timestamp: uint64(ts.UnixNano()), Nonce: nonce}
	if _, err := a.Encode(p[wire.AnnouncementLen:]); err != nil {
		t.Fatal(err)
	}
	if err := wire.SignAnnouncement(p, secret); err != nil {
		t.Fatal(err)
	}
	return p
}

func newVerifier(t *testing.T, cache int) *Verifier {
	t.Helper()
	v, err := NewVerifier([]Key{keyH1, keyH2}, Options{MaxSkew: 30 * time.Second, ReplayCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func reason(err error) string {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Reason
	}
	if err != nil {
		return "other: " + err.Error()
	}
	return ""
}

// TestCheck: one verifier, announcements in order; each is accepted or
// refused with its reason.
func TestCheck(t *testing.T) {
	v := newVerifier(t, 1024)
	good := signed(t, h1IP, 1, keyH1.Secret, t0, 1)
	tampered := append([]byte(nil), good...)
	tampered[23] ^= 1 // sender QPN
	badType := signed(t, h1IP, 1, keyH1.Secret, t0, 2)
	badType[wire.AnnouncementLen] = 9
	tests := []struct {
		name    string
		payload []byte
		sender  netip.Addr
		now     time.Time
		want    string // "" = accepted
		key     uint32 // the key returned (0: none)
	}{
		{"valid", good, h1IP, t0, "", 1},
		{"the same again", good, h1IP, t0.Add(time.Second), ReasonReplay, 1},
		{"same timestamp, other nonce", signed(t, h1IP, 1, keyH1.Secret, t0, 2), h1IP, t0, "", 1},
		{"tampered", tampered, h1IP, t0, ReasonBadTag, 0},
		{"unknown type", badType, h1IP, t0, ReasonBadTag, 0},
		{"forged with another key", signed(t, h1IP, 1, keyH2.Secret, t0, 3), h1IP, t0, ReasonBadTag, 0},
		{"unknown key", signed(t, h1IP, 7, keyH1.Secret, t0, 4), h1IP, t0, ReasonUnknownKey, 0},
		{"truncated", good[:wire.AnnouncementAuthLen-1], h1IP, t0, ReasonBadTag, 0},
		{"neighbour's key for h1", signed(t, h1IP, 2, keyH2.Secret, t0, 5), h1IP, t0, ReasonKeyNotAllowed, 2},
		{"31 s old", signed(t, h1IP, 1, keyH1.Secret, t0, 6), h1IP, t0.Add(31 * time.Second), ReasonStale, 1},
		{"30 s old", signed(t, h1IP, 1, keyH1.Secret, t0, 7), h1IP, t0.Add(30 * time.Second), "", 1},
		{"31 s ahead", signed(t, h1IP, 1, keyH1.Secret, t0.Add(31*time.Second), 8), h1IP, t0, ReasonStale, 1},
		{"h2 with its key", signed(t, h2IP, 2, keyH2.Secret, t0, 1), h2IP, t0, "", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := v.Check(tt.payload, tt.sender, tt.now)
			if got := reason(err); got != tt.want {
				t.Fatalf("reason %q (%v), want %q", got, err, tt.want)
			}
			if got := uint32(0); k != nil {
				got = k.ID
				if got != tt.key {
					t.Errorf("key %d, want %d", got, tt.key)
				}
			} else if tt.key != 0 {
				t.Errorf("no key, want %d", tt.key)
			}
		})
	}
	if !v.Covers(h1IP) || v.Covers(netip.MustParseAddr("10.1.1.7")) {
		t.Error("Covers")
	}
}

// TestReplayCacheBounded: a full cache forgets its oldest entry and raises
// that key's floor, so the forgotten announcement is still refused, and
// nothing of the key at or below the floor gets in; newer ones do, and the
// other keys are not affected.
func TestReplayCacheBounded(t *testing.T) {
	v := newVerifier(t, 2)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Millisecond) }
	a, b, c := signed(t, h1IP, 1, keyH1.Secret, at(1), 1), signed(t, h1IP, 1, keyH1.Secret, at(2), 2), signed(t, h1IP, 1, keyH1.Secret, at(3), 3)
	for _, p := range [][]byte{a, b, c} {
		if _, err := v.Check(p, h1IP, at(3)); err != nil {
			t.Fatal(err)
		}
	}
	if v.Len() != 2 {
		t.Fatalf("cache holds %d, want 2", v.Len())
	}
	tests := []struct {
		name    string
		payload []byte
		sender  netip.Addr
		want    string
	}{
		{"forgotten one replayed", a, h1IP, ReasonReplay},
		{"new one at the floor", signed(t, h1IP, 1, keyH1.Secret, at(1), 9), h1IP, ReasonReplay},
		{"remembered one replayed", c, h1IP, ReasonReplay},
		{"newer", signed(t, h1IP, 1, keyH1.Secret, at(4), 4), h1IP, ""},
		{"other key below h1's floor", signed(t, h2IP, 2, keyH2.Secret, at(0), 1), h2IP, ""},
	}
	for _, tt := range tests {
		if _, err := v.Check(tt.payload, tt.sender, at(4)); reason(err) != tt.want {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	if v.Len() != 2 {
		t.Errorf("cache holds %d, want 2", v.Len())
	}
}

// TestReplayCacheExpires: entries older than the skew window are forgotten
// as new ones come (the window refuses them as stale anyway).
func TestReplayCacheExpires(t *testing.T) {
	v := newVerifier(t, 1024)
	for i := range 100 {
		if _, err := v.Check(signed(t, h1IP, 1, keyH1.Secret, t0, uint64(i)), h1IP, t0); err != nil {
			t.Fatal(err)
		}
	}
	later := t0.Add(31 * time.Second)
	if _, err := v.Check(signed(t, h1IP, 1, keyH1.Secret, later, 1), h1IP, later); err != nil {
		t.Fatal(err)
	}
	if v.Len() != 1 {
		t.Errorf("cache holds %d after the window passed, want 1", v.Len())
	}
	if _, err := v.Check(signed(t, h1IP, 1, keyH1.Secret, t0, 3), h1IP, later); reason(err) != ReasonStale {
		t.Errorf("an expired one replayed: %v, want stale", err)
	}
}

// TestNeverAcceptedTwice: random streams of announcements from 4 keys with
// replays of earlier ones mixed in, a small cache and a moving clock: no
// announcement is ever accepted twice, the cache never holds more than its
// size, and fresh announcements (timestamps increasing, as a host's) are
// never refused.
func TestNeverAcceptedTwice(t *testing.T) {
	keys := make([]Key, 4)
	for i := range keys {
		keys[i] = Key{ID: uint32(i + 1), Host: "h", Secret: []byte(strings.Repeat(string(rune('a'+i)), 20)),
			Senders: []netip.Prefix{netip.MustParsePrefix("10.1.1.0/24")}}
	}
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		v, err := NewVerifier(keys, Options{MaxSkew: time.Second, ReplayCache: 16})
		if err != nil {
			t.Fatal(err)
		}
		now := t0
		var sent [][]byte
		accepted := map[string]bool{}
		for range 2000 {
			now = now.Add(time.Duration(1 + rng.IntN(20_000_000))) // strictly increasing, as a host's
			var p []byte
			fresh := len(sent) == 0 || rng.IntN(3) > 0
			if fresh {
				k := keys[rng.IntN(len(keys))]
				p = signed(t, h1IP, k.ID, k.Secret, now, rng.Uint64())
				sent = append(sent, p)
			} else {
				p = sent[rng.IntN(len(sent))]
			}
			_, err := v.Check(p, h1IP, now)
			switch {
			case err == nil && accepted[string(p)]:
				t.Fatalf("seed %d: accepted twice", seed)
			case err == nil:
				accepted[string(p)] = true
			case fresh:
				t.Fatalf("seed %d: a fresh announcement in order refused: %v", seed, err)
			}
			if v.Len() > 16 {
				t.Fatalf("seed %d: cache holds %d > 16", seed, v.Len())
			}
		}
	}
}

func TestNewVerifierErrors(t *testing.T) {
	tests := []struct {
		name string
		keys []Key
		o    Options
		want string
	}{
		{"id 0", []Key{{Host: "h", Secret: keyH1.Secret}}, Options{MaxSkew: time.Second, ReplayCache: 1}, "ID 0"},
		{"short secret", []Key{{ID: 1, Host: "h", Secret: []byte("short")}}, Options{MaxSkew: time.Second, ReplayCache: 1}, "5 bytes"},
		{"twice", []Key{keyH1, keyH1}, Options{MaxSkew: time.Second, ReplayCache: 1}, "twice"},
		{"no cache", []Key{keyH1}, Options{MaxSkew: time.Second}, "positive"},
	}
	for _, tt := range tests {
		if _, err := NewVerifier(tt.keys, tt.o); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

// BenchmarkCheck: the cost of one authenticated announcement (tag, clock,
// replay cache) with a full cache.
func BenchmarkCheck(b *testing.B) {
	v, err := NewVerifier([]Key{keyH1}, Options{MaxSkew: time.Hour, ReplayCache: 1 << 16})
	if err != nil {
		b.Fatal(err)
	}
	t := &testing.T{}
	payloads := make([][]byte, 1<<12)
	for i := range payloads {
		payloads[i] = signed(t, h1IP, 1, keyH1.Secret, t0.Add(time.Duration(i)), uint64(i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		p := payloads[i%len(payloads)]
		// A new timestamp each time: rewrite and re-sign outside the count.
		b.StopTimer()
		a := wire.AnnounceAuth{Type: 1, KeyID: 1, Timestamp: uint64(t0.Add(time.Duration(i)).UnixNano()), Nonce: uint64(i)}
		_, _ = a.Encode(p[wire.AnnouncementLen:])
		_ = wire.SignAnnouncement(p, keyH1.Secret)
		b.StartTimer()
		if _, err := v.Check(p, h1IP, t0); err != nil {
			b.Fatal(err)
		}
	}
}
