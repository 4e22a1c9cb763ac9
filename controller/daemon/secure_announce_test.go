package daemon

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/wire"
)

// Hosts of the secure-announcement tests: h1 owns a connection, h3 is its
// neighbour behind the same switch port (10.1.1.0/24 on s1 port 1).
var (
	h1MAC = wire.MAC{2, 0, 0, 0, 0, 5}
	h3MAC = wire.MAC{2, 0, 0, 0, 0, 7}
)

// testKey is a host's announcement key.
type testKey struct {
	id     uint32
	secret []byte
}

var (
	keyH1 = testKey{1, []byte("h1-announcement-key-0123456789ab")}
	keyH3 = testKey{3, []byte("h3-announcement-key-0123456789ab")}
)

// ann is an announcement as a host sends it.
type ann struct {
	typ        uint8
	src        string // IPv4 source and announced sender
	mac        wire.MAC
	sqpn       uint32
	key        *testKey // nil: unauthenticated
	ts         time.Time
	nonce      uint64
	signedWith []byte // the secret used to sign (default key.secret): a forgery when different
}

// frame builds the announcement of connection (src, connSrcPort, connDestQP).
func (a ann) frame(t *testing.T) []byte {
	t.Helper()
	ip := net.ParseIP(a.src).To4()
	w := wire.NewAnnouncement(a.typ, wire.AnnounceFlagCNPTarget)
	copy(w.SenderIP[:], ip)
	w.ReceiverIP = wire.Addr4{10, 2, 1, 9}
	w.UDPSrcPort, w.ReceiverQPN, w.SenderQPN = connSrcPort, connDestQP, a.sqpn
	env := &wire.Envelope{SrcMAC: a.mac, DstMAC: wire.MAC{2, 0, 0, 0, 1, 1}, DstIP: wire.Addr4{10, 2, 1, 9}, SrcPort: 5000}
	copy(env.SrcIP[:], ip)
	b := make([]byte, 160)
	var auth *wire.AnnounceAuth
	var secret []byte
	if a.key != nil {
		auth = &wire.AnnounceAuth{Type: wire.AnnounceAuthHMACSHA256, KeyID: a.key.id, Timestamp: uint64(a.ts.UnixNano()), Nonce: a.nonce}
		secret = a.key.secret
		if a.signedWith != nil {
			secret = a.signedWith
		}
	}
	n, err := wire.BuildSignedAnnouncement(b, env, &w, auth, secret)
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

// writeKeyFile writes announce.auth's key file (h1 and h3) and returns
// its path.
func writeKeyFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "announce-keys")
	body := fmt.Sprintf("# test keys\n1 h1 %s 10.1.1.5\n3 h3 %s 10.1.1.7   # the neighbour\n",
		hex.EncodeToString(keyH1.secret), hex.EncodeToString(keyH3.secret))
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// authConfig is testConfig with announce.auth (extra: more fields of it).
func authConfig(t *testing.T, state string, s1, s2 *testSwitch, extra string) *config.Config {
	t.Helper()
	src := fmt.Sprintf(testYAML, state, s1.addr, s2.addr)
	src = strings.Replace(src, "announce: {udp_port: 4792, idle_timeout: 10s}",
		"announce: {udp_port: 4792, idle_timeout: 10s, auth: {key_file: "+writeKeyFile(t)+extra+"}}", 1)
	cfg, err := config.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// senderQPN reads the sender QPN of h1's connection on a switch (false:
// no entry).
func senderQPN(s *testSwitch) (uint64, bool) {
	return s.param(p4src.TableRDMAConnection, 0x0a010105, 1)
}

// TestNeighbourCannotTakeOver, without authentication: h1 announces its
// connection through the switch; its neighbour h3, behind the same port
// and able to use h1's IP address, can neither change its sender QPN (the
// switch would send h1's CNPs elsewhere) nor tear it down, before or after
// a restart of fastcnpd; h1 itself can do both.
func TestNeighbourCannotTakeOver(t *testing.T) {
	s1, s2, state := twoSwitches(t)
	clk := &clock{}
	d := startDaemon(t, testConfig(t, state, s1, s2), func(o *Options) { o.Now = clk.now })
	waitInSync(t, d.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	ctx := context.Background()
	if err := s1.dp.Receive(ctx, ann{typ: wire.AnnounceUp, src: connSender, mac: h1MAC, sqpn: 0x77}.frame(t), 1); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*testSwitch{s1, s2} {
		waitFor(t, "h1's connection installed", syncTimeout, func() bool { q, ok := senderQPN(s); return ok && q == 0x77 })
	}
	attacks := []struct {
		name string
		a    ann
		port uint16
	}{
		{"neighbour changes the sender QPN", ann{typ: wire.AnnounceUp, src: connSender, mac: h3MAC, sqpn: 0x99}, 1},
		{"neighbour tears it down", ann{typ: wire.AnnounceDown, src: connSender, mac: h3MAC}, 1},
	}
	check := func(d *Daemon) {
		t.Helper()
		for _, tt := range attacks {
			before := testutil.ToFloat64(d.metrics.refused.WithLabelValues(ReasonNotOwner))
			res := d.HandleAnnouncement("s1", tt.port, wire.ReasonAnnouncement, tt.a.frame(t))
			if res.Accepted || res.Reason != ReasonNotOwner || !strings.Contains(res.Detail, "owned by 02:00:00:00:00:05 on s1/1") {
				t.Errorf("%s: %+v, want refused %s", tt.name, res, ReasonNotOwner)
			}
			if got := testutil.ToFloat64(d.metrics.refused.WithLabelValues(ReasonNotOwner)); got != before+1 {
				t.Errorf("%s: fastcnp_announcements_refused_total{reason=not_owner} %v, want %v", tt.name, got, before+1)
			}
		}
		if err := d.syncAll(ctx); err != nil {
			t.Fatal(err)
		}
		for _, s := range []*testSwitch{s1, s2} {
			if q, ok := senderQPN(s); !ok || q != 0x77 {
				t.Errorf("switch %d: h1's sender QPN %#x (entry %v), want 0x77", s.deviceID, q, ok)
			}
		}
	}
	check(d.Daemon)

	// A restart keeps the owner (the state file has it).
	d.stopNow()
	d = startDaemon(t, testConfig(t, state, s1, s2), func(o *Options) { o.Now = clk.now })
	waitInSync(t, d.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	check(d.Daemon)

	// h1 itself changes and removes it.
	if res := d.HandleAnnouncement("s1", 1, wire.ReasonAnnouncement, ann{typ: wire.AnnounceUp, src: connSender, mac: h1MAC, sqpn: 0x78}.frame(t)); res.Reason != AcceptUp {
		t.Fatalf("h1 changes its QPN: %+v", res)
	}
	waitFor(t, "h1's new QPN", syncTimeout, func() bool { q, _ := senderQPN(s2); return q == 0x78 })
	if res := d.HandleAnnouncement("s1", 1, wire.ReasonAnnouncement, ann{typ: wire.AnnounceDown, src: connSender, mac: h1MAC}.frame(t)); res.Reason != AcceptDown {
		t.Fatalf("h1 down: %+v", res)
	}
	waitFor(t, "h1's connection removed", syncTimeout, func() bool { _, ok := senderQPN(s2); return !ok })
}

// TestAuthenticatedAnnouncements: with announce.auth, h1's announcement
// signed with its key is installed, with h1 as its owner; replayed,
// forged, stale, unsigned, unknown-key announcements and the neighbour's
// announcements with its own key are refused, each with its reason
// (counted in fastcnp_announcements_refused_total), and none changes h1's
// connection on the switches; h1 refreshes and removes it.
func TestAuthenticatedAnnouncements(t *testing.T) {
	s1, s2, state := twoSwitches(t)
	clk := &clock{}
	d := startDaemon(t, authConfig(t, state, s1, s2, ""), func(o *Options) { o.Now = clk.now })
	waitInSync(t, d.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	ctx := context.Background()
	now := clk.now()
	h1Up := ann{typ: wire.AnnounceUp, src: connSender, mac: h1MAC, sqpn: 0x77, key: &keyH1, ts: now, nonce: 1}
	if err := s1.dp.Receive(ctx, h1Up.frame(t), 1); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*testSwitch{s1, s2} {
		waitFor(t, "h1's connection installed", syncTimeout, func() bool { q, ok := senderQPN(s); return ok && q == 0x77 })
	}
	conns := d.Connections()
	if len(conns) != 1 || conns[0].Owner.Key != 1 || conns[0].Owner.MAC != h1MAC {
		t.Fatalf("connections %+v, want h1's, owned by key 1 and its MAC", conns)
	}

	clk.advance(time.Second)
	now = clk.now()
	h1Down := ann{typ: wire.AnnounceDown, src: connSender, mac: h1MAC, key: &keyH1, ts: now.Add(-500 * time.Millisecond), nonce: 2}
	tests := []struct {
		name string
		a    ann
		want string
	}{
		{"replayed", h1Up, ReasonReplay},
		{"unsigned", ann{typ: wire.AnnounceUp, src: connSender, mac: h1MAC, sqpn: 0x99}, ReasonUnauthenticated},
		{"unsigned down", ann{typ: wire.AnnounceDown, src: connSender, mac: h1MAC}, ReasonUnauthenticated},
		{"forged: h1's key ID, another secret", ann{typ: wire.AnnounceUp, src: connSender, mac: h3MAC, sqpn: 0x99, key: &keyH1, ts: now, nonce: 3,
			signedWith: []byte("a-guess-at-h1s-key-0123456789abc")}, ReasonBadTag},
		{"forged down", ann{typ: wire.AnnounceDown, src: connSender, mac: h3MAC, key: &keyH1, ts: now, nonce: 4,
			signedWith: keyH3.secret}, ReasonBadTag},
		{"unknown key", ann{typ: wire.AnnounceUp, src: connSender, mac: h3MAC, sqpn: 0x99, key: &testKey{9, keyH3.secret}, ts: now, nonce: 5}, ReasonUnknownKey},
		{"neighbour's own key for h1's connection", ann{typ: wire.AnnounceUp, src: connSender, mac: h3MAC, sqpn: 0x99, key: &keyH3, ts: now, nonce: 6}, ReasonKeyNotAllowed},
		{"neighbour's own key, down", ann{typ: wire.AnnounceDown, src: connSender, mac: h3MAC, key: &keyH3, ts: now, nonce: 7}, ReasonKeyNotAllowed},
		{"captured long ago", ann{typ: wire.AnnounceDown, src: connSender, mac: h1MAC, key: &keyH1, ts: now.Add(-31 * time.Second), nonce: 8}, ReasonStale},
		{"from the future", ann{typ: wire.AnnounceUp, src: connSender, mac: h1MAC, sqpn: 0x99, key: &keyH1, ts: now.Add(31 * time.Second), nonce: 9}, ReasonStale},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := testutil.ToFloat64(d.metrics.refused.WithLabelValues(tt.want))
			res := d.HandleAnnouncement("s1", 1, wire.ReasonAnnouncement, tt.a.frame(t))
			if res.Accepted || res.Reason != tt.want || res.Detail == "" {
				t.Fatalf("%+v, want refused %s", res, tt.want)
			}
			if got := testutil.ToFloat64(d.metrics.refused.WithLabelValues(tt.want)); got != before+1 {
				t.Errorf("fastcnp_announcements_refused_total{reason=%q} %v, want %v", tt.want, got, before+1)
			}
		})
	}
	if err := d.syncAll(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*testSwitch{s1, s2} {
		if q, ok := senderQPN(s); !ok || q != 0x77 {
			t.Errorf("switch %d after the attacks: h1's sender QPN %#x (entry %v), want 0x77", s.deviceID, q, ok)
		}
	}

	// h1 refreshes (a new timestamp), then removes it; its "down" replayed
	// after h1 announced the connection again is refused.
	h1Refresh := h1Up
	h1Refresh.ts, h1Refresh.nonce = now, 10
	if res := d.HandleAnnouncement("s1", 1, wire.ReasonAnnouncement, h1Refresh.frame(t)); res.Reason != AcceptRefresh || res.Host != "h1" {
		t.Fatalf("h1's refresh: %+v", res)
	}
	if res := d.HandleAnnouncement("s1", 1, wire.ReasonAnnouncement, h1Down.frame(t)); res.Reason != AcceptDown {
		t.Fatalf("h1's down: %+v", res)
	}
	again := h1Up
	again.ts, again.nonce = now.Add(100*time.Millisecond), 11
	if res := d.HandleAnnouncement("s1", 1, wire.ReasonAnnouncement, again.frame(t)); res.Reason != AcceptUp {
		t.Fatalf("h1 up again: %+v", res)
	}
	if res := d.HandleAnnouncement("s1", 1, wire.ReasonAnnouncement, h1Down.frame(t)); res.Reason != ReasonReplay {
		t.Errorf("h1's down replayed: %+v, want %s", res, ReasonReplay)
	}
	waitFor(t, "h1's connection back", syncTimeout, func() bool { _, ok := senderQPN(s2); return ok })
}

// TestUnauthenticatedAllowed: with allow_unauthenticated, a sender no key
// covers may announce without a trailer (a fabric moving to keys); a
// sender a key covers may not, and a connection made with a key is not
// changed by an unauthenticated announcement.
func TestUnauthenticatedAllowed(t *testing.T) {
	s1, s2, state := twoSwitches(t)
	clk := &clock{}
	d := startDaemon(t, authConfig(t, state, s1, s2, ", allow_unauthenticated: true"), func(o *Options) { o.Now = clk.now })
	waitInSync(t, d.Daemon, map[string]*testSwitch{"s1": s1, "s2": s2})
	tests := []struct {
		name string
		a    ann
		want string
	}{
		{"a sender without a key", ann{typ: wire.AnnounceUp, src: "10.1.1.9", mac: h3MAC, sqpn: 0x55}, AcceptUp},
		{"h1 without its key", ann{typ: wire.AnnounceUp, src: connSender, mac: h1MAC, sqpn: 0x77}, ReasonUnauthenticated},
		{"h1 with its key", ann{typ: wire.AnnounceUp, src: connSender, mac: h1MAC, sqpn: 0x77, key: &keyH1, ts: clk.now(), nonce: 1}, AcceptUp},
	}
	for _, tt := range tests {
		if res := d.HandleAnnouncement("s1", 1, wire.ReasonAnnouncement, tt.a.frame(t)); res.Reason != tt.want {
			t.Errorf("%s: %+v, want %s", tt.name, res, tt.want)
		}
	}
}

// TestAnnounceKeyFile: the key file's lines and errors; errors name the
// line and never repeat a key.
func TestAnnounceKeyFile(t *testing.T) {
	k1 := hex.EncodeToString(keyH1.secret)
	k3 := hex.EncodeToString(keyH3.secret)
	keys, err := ParseAnnounceKeys("# id host key senders\n1 h1 " + k1 + " 10.1.1.5   # h1\n\n3 h3.rack-2 " + k3 + " 10.1.1.7,10.1.2.0/28\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[1].ID != 3 || keys[1].Host != "h3.rack-2" || len(keys[1].Senders) != 2 ||
		string(keys[0].Secret) != string(keyH1.secret) || keys[1].Senders[1].String() != "10.1.2.0/28" {
		t.Errorf("keys %+v", keys)
	}
	tests := []struct {
		name, file, want string
	}{
		{"empty", "# nothing\n", "no key"},
		{"three words", "1 h1 " + k1 + "\n", "line 1: want \"ID HOST KEY SENDERS\""},
		{"id 0", "0 h1 " + k1 + " 10.1.1.5\n", "line 1: key ID \"0\""},
		{"id twice", "1 h1 " + k1 + " 10.1.1.5\n1 h3 " + k3 + " 10.1.1.7\n", "line 2: key ID 1 of line 1 again"},
		{"bad host", "1 h/1 " + k1 + " 10.1.1.5\n", "line 1: host \"h/1\""},
		{"not hex", "1 h1 zz" + k1 + " 10.1.1.5\n", "line 1: key 1: the key is not hex"},
		{"short", "1 h1 00112233445566778899aabbccddee 10.1.1.5\n", "line 1: key 1: 15 bytes, want 16..64"},
		{"same secret", "1 h1 " + k1 + " 10.1.1.5\n2 h2 " + k1 + " 10.1.1.6\n", "line 2: key 2 has the secret of line 1"},
		{"IPv6 sender", "1 h1 " + k1 + " fd00::1\n", "not IPv4"},
		{"host bits", "1 h1 " + k1 + " 10.1.1.5/24\n", "host bits set (did you mean 10.1.1.0/24?)"},
		{"bad sender", "1 h1 " + k1 + " 10.1.1.5,\n", "want an IPv4 address or prefix"},
	}
	for _, tt := range tests {
		_, err := ParseAnnounceKeys(tt.file)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
		if err != nil && (strings.Contains(err.Error(), k1) || strings.Contains(err.Error(), k3)) {
			t.Errorf("%s: the error repeats a key: %v", tt.name, err)
		}
	}
}

// TestAnnounceKeyFileAtStart: a missing or bad key file stops fastcnpd; a
// key file others may read is warned about.
func TestAnnounceKeyFileAtStart(t *testing.T) {
	dir := t.TempDir()
	cfg := quotaConfig(t, filepath.Join(dir, "state.json"), 6, 4)
	cfg.Announce.Auth = &config.AnnounceAuth{KeyFile: filepath.Join(dir, "none")}
	if _, err := New(Options{Config: cfg, Logger: quietLogger()}); err == nil || !strings.Contains(err.Error(), "announce.auth.key_file") {
		t.Errorf("missing key file: %v", err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("1 h1 00 10.1.1.5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Announce.Auth.KeyFile = bad
	if _, err := New(Options{Config: cfg, Logger: quietLogger()}); err == nil || !strings.Contains(err.Error(), "line 1: key 1: 1 bytes") {
		t.Errorf("bad key file: %v", err)
	}
	open := writeKeyFile(t)
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Announce.Auth.KeyFile = open
	logger, hook := logtest.NewNullLogger()
	if _, err := New(Options{Config: cfg, Logger: logger}); err != nil {
		t.Fatal(err)
	}
	warned := false
	for _, e := range hook.AllEntries() {
		warned = warned || strings.Contains(e.Message, "announcement key file "+open+" has mode 0644")
	}
	if !warned {
		t.Errorf("no warning for a key file of mode 0644: %v", hook.AllEntries())
	}
}
