package agent

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/fastcnp/fastcnp/wire"
)

// AnnounceKey is the host's announcement key: the key ID and the secret
// fastcnpd holds for it in its announce.auth key file.
type AnnounceKey struct {
	ID     uint32
	Secret []byte
}

// ParseAnnounceKey parses a host's key file: one line "ID KEY", the key
// ID (1..4294967295) and the secret in hex (16 to 64 bytes), optionally
// followed by a # comment; blank lines and comment lines are ignored.
// Errors never repeat the key.
func ParseAnnounceKey(data string) (AnnounceKey, error) {
	var k AnnounceKey
	for i, line := range strings.Split(data, "\n") {
		f := strings.Fields(line)
		for j, w := range f {
			if strings.HasPrefix(w, "#") {
				f = f[:j]
				break
			}
		}
		if len(f) == 0 {
			continue
		}
		if k.ID != 0 {
			return AnnounceKey{}, fmt.Errorf("line %d: a second key: the file holds one: %w", i+1, ErrConfig)
		}
		if len(f) != 2 {
			return AnnounceKey{}, fmt.Errorf("line %d: want \"ID KEY\", got %d word(s): %w", i+1, len(f), ErrConfig)
		}
		id, err := strconv.ParseUint(f[0], 10, 32)
		if err != nil || id == 0 {
			return AnnounceKey{}, fmt.Errorf("line %d: key ID %q: want 1..4294967295: %w", i+1, f[0], ErrConfig)
		}
		secret, err := hex.DecodeString(f[1])
		if err != nil {
			return AnnounceKey{}, fmt.Errorf("line %d: key %d: the key is not hex: %w", i+1, id, ErrConfig)
		}
		if len(secret) < wire.AnnounceKeyMinLen || len(secret) > wire.AnnounceKeyMaxLen {
			return AnnounceKey{}, fmt.Errorf("line %d: key %d: %d bytes, want %d..%d: %w",
				i+1, id, len(secret), wire.AnnounceKeyMinLen, wire.AnnounceKeyMaxLen, ErrConfig)
		}
		k = AnnounceKey{ID: uint32(id), Secret: secret}
	}
	if k.ID == 0 {
		return AnnounceKey{}, fmt.Errorf("no key (want a line \"ID KEY\"): %w", ErrConfig)
	}
	return k, nil
}

// AnnounceSigner issues the authentication trailers of a host's
// announcements. Their timestamps strictly increase (the controller's
// replay cache relies on it), even when the clock reads the same twice or
// steps back.
type AnnounceSigner struct {
	key  AnnounceKey
	last uint64
}

// NewAnnounceSigner returns a signer with key.
func NewAnnounceSigner(key AnnounceKey) (*AnnounceSigner, error) {
	if key.ID == 0 || len(key.Secret) < wire.AnnounceKeyMinLen || len(key.Secret) > wire.AnnounceKeyMaxLen {
		return nil, fmt.Errorf("announcement key %d of %d bytes: want a non-zero ID and %d..%d bytes: %w",
			key.ID, len(key.Secret), wire.AnnounceKeyMinLen, wire.AnnounceKeyMaxLen, ErrConfig)
	}
	return &AnnounceSigner{key: key}, nil
}

// Next returns the trailer of the next announcement sent at wall-clock
// time nowNs (Unix nanoseconds) with a random nonce; the tag is computed
// when the frame is built (Path.BuildAnnouncement).
func (s *AnnounceSigner) Next(nowNs int64, nonce uint64) wire.AnnounceAuth {
	ts := uint64(max(nowNs, 0))
	if ts <= s.last {
		ts = s.last + 1
	}
	s.last = ts
	return wire.AnnounceAuth{Type: wire.AnnounceAuthHMACSHA256, KeyID: s.key.ID, Timestamp: ts, Nonce: nonce}
}

// Secret returns the key's secret.
func (s *AnnounceSigner) Secret() []byte { return s.key.Secret }
