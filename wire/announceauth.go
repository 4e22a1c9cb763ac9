package wire

import (
	"crypto/hmac"
	"crypto/sha256"
)

// Announcement authentication (docs/wire-formats.md, "Announcement
// authentication"): a 40-byte trailer after the 32-byte announcement, whose
// tag is an HMAC-SHA256, truncated to 128 bits, over the announcement and
// the trailer's other fields, with a key the sender shares with the
// controller. The switch parses only the announcement and punts the whole
// datagram; the controller checks the trailer.
const (
	// AnnounceAuthLen is the trailer's length.
	AnnounceAuthLen = 40
	// AnnouncementAuthLen is the UDP payload of an authenticated
	// announcement: the announcement and its trailer.
	AnnouncementAuthLen = AnnouncementLen + AnnounceAuthLen
	// AnnounceAuthHMACSHA256 is the only authentication type: HMAC-SHA256
	// (RFC 2104) truncated to its first AnnounceTagLen bytes.
	AnnounceAuthHMACSHA256 = 1
	// AnnounceTagLen is the length of the tag: 128 bits, as IPsec's
	// HMAC-SHA-256-128 (RFC 4868).
	AnnounceTagLen = 16
	// AnnounceKeyMinLen and AnnounceKeyMaxLen bound a key's length in
	// bytes: at least 128 bits; at most SHA-256's block, beyond which HMAC
	// hashes the key first and nothing is gained.
	AnnounceKeyMinLen = 16
	AnnounceKeyMaxLen = 64
	// announceSignedLen is the part of the payload the tag covers.
	announceSignedLen = AnnouncementAuthLen - AnnounceTagLen
)

// AnnounceAuth is the authentication trailer of an announcement (40 bytes,
// after the 32-byte announcement).
type AnnounceAuth struct {
	Type  uint8  // AnnounceAuthHMACSHA256
	Resv1 uint8  // 0
	Resv2 uint16 // 0
	// KeyID names the sender's key among those the controller holds.
	KeyID uint32
	// Timestamp is the sender's wall clock when it sent the announcement:
	// nanoseconds since the Unix epoch.
	Timestamp uint64
	// Nonce is random, so that two announcements of one timestamp differ.
	Nonce uint64
	// Tag is the truncated HMAC (SignAnnouncement).
	Tag [AnnounceTagLen]byte
}

// Decode reads the trailer from b[:AnnounceAuthLen] (the bytes after the
// announcement).
func (h *AnnounceAuth) Decode(b []byte) error {
	if len(b) < AnnounceAuthLen {
		return truncErr[LayerAnnouncement]
	}
	h.Type = b[0]
	h.Resv1 = b[1]
	h.Resv2 = be.Uint16(b[2:4])
	h.KeyID = be.Uint32(b[4:8])
	h.Timestamp = be.Uint64(b[8:16])
	h.Nonce = be.Uint64(b[16:24])
	copy(h.Tag[:], b[24:40])
	return nil
}

// Encode writes the trailer into b and returns AnnounceAuthLen.
func (h *AnnounceAuth) Encode(b []byte) (int, error) {
	if len(b) < AnnounceAuthLen {
		return 0, shortErr[LayerAnnouncement]
	}
	b[0] = h.Type
	b[1] = h.Resv1
	be.PutUint16(b[2:4], h.Resv2)
	be.PutUint32(b[4:8], h.KeyID)
	be.PutUint64(b[8:16], h.Timestamp)
	be.PutUint64(b[16:24], h.Nonce)
	copy(b[24:40], h.Tag[:])
	return AnnounceAuthLen, nil
}

// announceTag computes the tag of payload (AnnouncementAuthLen bytes) with
// key into tag.
func announceTag(tag *[AnnounceTagLen]byte, payload, key []byte) {
	m := hmac.New(sha256.New, key)
	m.Write(payload[:announceSignedLen])
	var sum [sha256.Size]byte
	copy(tag[:], m.Sum(sum[:0]))
}

// SignAnnouncement writes the tag of an authenticated announcement payload
// (the announcement and its trailer, AnnouncementAuthLen bytes, all other
// fields set) computed with key.
func SignAnnouncement(payload, key []byte) error {
	if len(payload) < AnnouncementAuthLen {
		return shortErr[LayerAnnouncement]
	}
	if len(key) < AnnounceKeyMinLen || len(key) > AnnounceKeyMaxLen {
		return errRangeAnnKey
	}
	var tag [AnnounceTagLen]byte
	announceTag(&tag, payload, key)
	copy(payload[announceSignedLen:AnnouncementAuthLen], tag[:])
	return nil
}

// VerifyAnnouncement reports whether the tag of an authenticated
// announcement payload is the one key gives (compared in constant time).
func VerifyAnnouncement(payload, key []byte) bool {
	if len(payload) < AnnouncementAuthLen || len(key) == 0 {
		return false
	}
	var tag [AnnounceTagLen]byte
	announceTag(&tag, payload, key)
	return hmac.Equal(tag[:], payload[announceSignedLen:AnnouncementAuthLen])
}
