package agent

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/fastcnp/fastcnp/wire"
)

var testSecret = []byte("host-announcement-key-0123456789")

// TestParseAnnounceKey: the host's key file and its errors, which never
// repeat the key.
func TestParseAnnounceKey(t *testing.T) {
	k := hex.EncodeToString(testSecret)
	got, err := ParseAnnounceKey("# fastcnp-host announcement key\n\n7 " + k + "   # h1\n")
	if err != nil || got.ID != 7 || string(got.Secret) != string(testSecret) {
		t.Fatalf("%+v, %v", got, err)
	}
	tests := []struct{ name, file, want string }{
		{"empty", "# none\n", "no key"},
		{"key alone", k + "\n", "want \"ID KEY\""},
		{"id 0", "0 " + k + "\n", "key ID \"0\""},
		{"not hex", "7 x" + k + "\n", "not hex"},
		{"short", "7 00112233\n", "4 bytes, want 16..64"},
		{"two keys", "7 " + k + "\n8 " + k + "\n", "line 2: a second key"},
	}
	for _, tt := range tests {
		_, err := ParseAnnounceKey(tt.file)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrConfig) || strings.Contains(err.Error(), k) {
			t.Errorf("%s: %v, want %q (ErrConfig, without the key)", tt.name, err, tt.want)
		}
	}
}

// TestAnnounceSigner: timestamps follow the clock and strictly increase
// when it repeats or steps back; announcements built with the trailers
// verify with the key.
func TestAnnounceSigner(t *testing.T) {
	s, err := NewAnnounceSigner(AnnounceKey{ID: 7, Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		now  int64
		want uint64
	}{{1000, 1000}, {1000, 1001}, {500, 1002}, {5000, 5000}, {-1, 5001}}
	for _, tt := range tests {
		if a := s.Next(tt.now, 9); a.Timestamp != tt.want || a.KeyID != 7 || a.Type != wire.AnnounceAuthHMACSHA256 || a.Nonce != 9 {
			t.Errorf("Next(%d) = %+v, want timestamp %d", tt.now, a, tt.want)
		}
	}
	p := Path{SrcIP: wire.Addr4{10, 1, 1, 5}, DstIP: wire.Addr4{10, 1, 2, 5}, SrcPort: 50000}
	ann := wire.NewAnnouncement(wire.AnnounceUp, wire.AnnounceFlagCNPTarget)
	tr := s.Next(6000, 1)
	b := make([]byte, 128)
	n, err := p.BuildAnnouncement(b, 0, &ann, &tr, s.Secret())
	if err != nil {
		t.Fatal(err)
	}
	payload := b[n-wire.AnnouncementAuthLen : n]
	if !wire.VerifyAnnouncement(payload, testSecret) || wire.VerifyAnnouncement(payload, []byte("another-key-of-32-bytes-01234567")) {
		t.Error("the announcement does not verify with its key only")
	}
	if _, err := NewAnnounceSigner(AnnounceKey{ID: 7, Secret: []byte("short")}); !errors.Is(err, ErrConfig) {
		t.Errorf("short key: %v", err)
	}
}
