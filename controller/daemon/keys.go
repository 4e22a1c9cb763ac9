package daemon

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fastcnp/fastcnp/controller/announceauth"
	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/wire"
)

// Limits of the announcement key file (announce.auth.key_file).
const (
	// MaxKeyFileSize is the largest key file: 8 MiB (a line is about 120
	// bytes: 65,536 keys fit).
	MaxKeyFileSize = 8 << 20
	// MaxAnnounceKeys is the most keys one fastcnpd holds.
	MaxAnnounceKeys = 1 << 16
	// maxKeySenders bounds the senders of one key.
	maxKeySenders = 256
)

var hostNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// lineFields returns the words of a line before a comment: a word that
// begins with # starts the comment (so a value may contain # but not start
// with it).
func lineFields(line string) []string {
	f := strings.Fields(line)
	for j, w := range f {
		if strings.HasPrefix(w, "#") {
			return f[:j]
		}
	}
	return f
}

// ParseAnnounceKeys parses an announcement key file: one key per line,
//
//	ID HOST KEY SENDERS   # comment
//
// ID a key ID 1..4294967295 (unique), HOST the host's name (logs), KEY the
// secret in hex (16 to 64 bytes: 32 to 128 hex digits), SENDERS the IPv4
// addresses or prefixes the key may announce for, separated by commas.
// Blank lines and comments are ignored. Anything else is an error naming
// the line; errors never repeat a key.
func ParseAnnounceKeys(data string) ([]announceauth.Key, error) {
	var out []announceauth.Key
	seen := map[uint32]int{}    // ID -> line
	secrets := map[string]int{} // secret -> line
	for i, line := range strings.Split(data, "\n") {
		f := lineFields(line)
		if len(f) == 0 {
			continue
		}
		n := i + 1
		if len(f) != 4 {
			return nil, fmt.Errorf("line %d: want \"ID HOST KEY SENDERS\" (optionally followed by a # comment), got %d word(s)", n, len(f))
		}
		id, err := strconv.ParseUint(f[0], 10, 32)
		if err != nil || id == 0 {
			return nil, fmt.Errorf("line %d: key ID %q: want 1..4294967295", n, f[0])
		}
		if prev, dup := seen[uint32(id)]; dup {
			return nil, fmt.Errorf("line %d: key ID %d of line %d again", n, id, prev)
		}
		if !hostNameRE.MatchString(f[1]) {
			return nil, fmt.Errorf("line %d: host %q: use letters, digits, '.', '_' and '-'", n, f[1])
		}
		secret, err := hex.DecodeString(f[2])
		switch {
		case err != nil:
			return nil, fmt.Errorf("line %d: key %d: the key is not hex", n, id)
		case len(secret) < wire.AnnounceKeyMinLen || len(secret) > wire.AnnounceKeyMaxLen:
			return nil, fmt.Errorf("line %d: key %d: %d bytes, want %d..%d (e.g. openssl rand -hex 32)",
				n, id, len(secret), wire.AnnounceKeyMinLen, wire.AnnounceKeyMaxLen)
		}
		if prev, dup := secrets[string(secret)]; dup {
			return nil, fmt.Errorf("line %d: key %d has the secret of line %d: every key needs its own", n, id, prev)
		}
		senders, err := parseSenders(f[3])
		if err != nil {
			return nil, fmt.Errorf("line %d: key %d: senders: %w", n, id, err)
		}
		if len(out) == MaxAnnounceKeys {
			return nil, fmt.Errorf("line %d: more than %d keys", n, MaxAnnounceKeys)
		}
		seen[uint32(id)], secrets[string(secret)] = n, n
		out = append(out, announceauth.Key{ID: uint32(id), Host: f[1], Secret: secret, Senders: senders})
	}
	if len(out) == 0 {
		return nil, errors.New("no key")
	}
	return out, nil
}

// parseSenders parses "10.1.1.5,10.1.2.0/28".
func parseSenders(s string) ([]netip.Prefix, error) {
	parts := strings.Split(s, ",")
	if len(parts) > maxKeySenders {
		return nil, fmt.Errorf("%d senders: at most %d", len(parts), maxKeySenders)
	}
	out := make([]netip.Prefix, 0, len(parts))
	for _, p := range parts {
		var pfx netip.Prefix
		var err error
		if strings.Contains(p, "/") {
			pfx, err = netip.ParsePrefix(p)
		} else {
			var a netip.Addr
			if a, err = netip.ParseAddr(p); err == nil {
				pfx = netip.PrefixFrom(a, a.BitLen())
			}
		}
		switch {
		case err != nil:
			return nil, fmt.Errorf("%q: want an IPv4 address or prefix", p)
		case !pfx.Addr().Is4():
			return nil, fmt.Errorf("%q: not IPv4 (announcements carry IPv4 senders)", p)
		case pfx.Masked() != pfx:
			return nil, fmt.Errorf("%q: host bits set (did you mean %s?)", p, pfx.Masked())
		}
		out = append(out, pfx)
	}
	return out, nil
}

// secretFileWarning returns a warning when the file at path, of secrets of
// kind what, can be read by other users than its owner (group or world
// bits), "" otherwise.
func secretFileWarning(path, what string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if m := fi.Mode().Perm(); m&0o077 != 0 {
		return fmt.Sprintf("%s %s has mode %#o: other users can read the secrets in it; chmod 600 it", what, path, m), nil
	}
	return "", nil
}

// announceAuth is the daemon's announcement authentication: the verifier
// of announce.auth under its own lock (the switch runners check their
// packet-ins concurrently), nil when announcements are not authenticated.
type announceAuth struct {
	mu       sync.Mutex
	v        *announceauth.Verifier
	unauthOK bool
}

// newAnnounceAuth loads announce.auth's key file (nil config: nil, no
// authentication) and returns the warnings of its mode.
func newAnnounceAuth(a *config.AnnounceAuth) (*announceAuth, []string, error) {
	if a == nil {
		return nil, nil, nil
	}
	data, err := config.ReadFileLimited(a.KeyFile, "announcement key file", MaxKeyFileSize)
	if err != nil {
		return nil, nil, fmt.Errorf("announce.auth.key_file: %w", err)
	}
	keys, err := ParseAnnounceKeys(string(data))
	if err != nil {
		return nil, nil, fmt.Errorf("announce.auth.key_file %s: %w", a.KeyFile, err)
	}
	v, err := announceauth.NewVerifier(keys, announceauth.Options{MaxSkew: a.Skew(), ReplayCache: a.CacheSize()})
	if err != nil {
		return nil, nil, err
	}
	var warnings []string
	if w, err := secretFileWarning(a.KeyFile, "announcement key file"); err == nil && w != "" {
		warnings = append(warnings, w)
	}
	return &announceAuth{v: v, unauthOK: a.AllowUnauthenticated}, warnings, nil
}

// check verifies an authenticated announcement payload (see
// announceauth.Verifier.Check).
func (a *announceAuth) check(payload []byte, sender netip.Addr, now time.Time) (*announceauth.Key, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.v.Check(payload, sender, now)
}

// unsignedRefusal says why an announcement without a trailer from sender
// is refused ("" when it may go on): authentication is required, or the
// sender is one a key covers.
func (a *announceAuth) unsignedRefusal(sender netip.Addr) string {
	if !a.unauthOK {
		return "announcements must be authenticated (announce.auth)"
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.v.Covers(sender) {
		return fmt.Sprintf("sender %s has a key: its announcements must be authenticated", sender)
	}
	return ""
}
