package fabric

import (
	"net/netip"
	"testing"
	"time"
)

// TestConnTableLowestFreeIndex: a new connection takes the lowest free
// conn_index, also after removals, expiries and restores (the search
// starts from a hint, not from 0).
func TestConnTableLowestFreeIndex(t *testing.T) {
	key := func(i int) ConnKey {
		return ConnKey{SenderIP: netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), UDPSrcPort: uint16(i), ReceiverQPN: uint32(i)}
	}
	tab := NewConnTable(8)
	now := time.Unix(1000, 0)
	add := func(i int, want uint16) {
		t.Helper()
		c, changed, err := tab.Upsert(Connection{ConnKey: key(i), LastSeen: now})
		if err != nil || !changed || c.Index != want {
			t.Fatalf("connection %d: index %d, changed %v, %v; want index %d", i, c.Index, changed, err, want)
		}
	}
	for i := 0; i < 5; i++ {
		add(i, uint16(i))
	}
	if _, err := tab.Remove(key(3)); err != nil {
		t.Fatal(err)
	}
	if _, err := tab.Remove(key(1)); err != nil {
		t.Fatal(err)
	}
	add(10, 1)
	add(11, 3)
	add(12, 5)
	if err := tab.Restore(Connection{ConnKey: key(13), Index: 6, LastSeen: now}); err != nil {
		t.Fatal(err)
	}
	add(14, 7)
	if _, _, err := tab.Upsert(Connection{ConnKey: key(15), LastSeen: now}); err == nil {
		t.Fatal("a 9th connection in a table of 8 was accepted")
	}
	// Expire connection 0 (old), keep the rest (refreshed).
	for _, i := range []int{2, 4, 10, 11, 12, 13, 14} {
		if _, _, err := tab.Upsert(Connection{ConnKey: key(i), LastSeen: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	if gone := tab.Expire(now.Add(time.Hour), time.Minute, time.Time{}); len(gone) != 1 || gone[0].Index != 0 {
		t.Fatalf("expired %+v, want the connection with index 0", gone)
	}
	add(16, 0)
}
