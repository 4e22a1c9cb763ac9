package fabric

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"time"

	"github.com/fastcnp/fastcnp/p4src"
)

// ConnKey is the RDMA connection ID (spec 04): the rdma_connection key.
type ConnKey struct {
	SenderIP    netip.Addr
	UDPSrcPort  uint16
	ReceiverQPN uint32
}

// String formats the key as sender:port/qpn.
func (k ConnKey) String() string {
	return fmt.Sprintf("%s:%d/%d", k.SenderIP, k.UDPSrcPort, k.ReceiverQPN)
}

// Connection is one RDMA connection fastcnpd installs on every switch.
type Connection struct {
	ConnKey
	// ReceiverIP is the peer's address (informational).
	ReceiverIP netip.Addr
	// SenderQPN is the QPN switch CNPs are addressed to (24 bits).
	SenderQPN uint32
	// Flags: bit0 INC uplink, bit1 CNP target.
	Flags uint8
	// WorkerRank is the rank in the INC group (0..31).
	WorkerRank uint8
	// INCGroup is the INC communication group, 0 = none.
	INCGroup uint16
	// Index is conn_index, allocated by ConnTable (unique, < CONN_TABLE_SIZE).
	Index uint16
	// Source says who added it: "announce" or "api".
	Source string
	// Static connections (added by the API) never expire.
	Static bool
	// LastSeen is the last announcement (or the API call).
	LastSeen time.Time
	// Ingress is the switch port whose packet-in carried the connection's
	// last announcement (zero for the API's connections): the connection
	// counts against that port's quota (PortConns).
	Ingress PortRef
	// Owner is the host whose announcements made the connection: only it
	// may change, refresh or remove it (the controller checks; zero for the
	// API's connections and for those of a state file without owners).
	Owner Owner
}

// Owner identifies the host behind an announced connection.
type Owner struct {
	// Key is the ID of the announcement key that authenticated it (0: its
	// announcements were not authenticated).
	Key uint32
	// MAC is the Ethernet source address of its announcements.
	MAC [6]byte
}

// IsZero reports whether o names nobody.
func (o Owner) IsZero() bool { return o == Owner{} }

// PortRef names a port of a switch.
type PortRef struct {
	Switch string
	Port   uint16
}

// IsZero reports whether p names no port.
func (p PortRef) IsZero() bool { return p.Switch == "" }

// String formats the port as switch/port.
func (p PortRef) String() string { return fmt.Sprintf("%s/%d", p.Switch, p.Port) }

// Errors of ConnTable.
var (
	ErrTableFull   = errors.New("connection table full")
	ErrInvalidConn = errors.New("invalid connection")
	ErrNoConn      = errors.New("no such connection")
)

// ConnTable holds the connections and allocates conn_index values. It
// counts the announced connections (not static, with an Ingress) by
// ingress port and by sender IP, for the controller's quotas. It is not
// safe for concurrent use.
type ConnTable struct {
	size  int
	conns map[ConnKey]*Connection
	used  map[uint16]bool
	// free is at most the lowest free conn_index: the search for one
	// starts there (a burst of new connections costs O(1) each, not a
	// scan of the table).
	free      int
	perPort   map[PortRef]int
	perSender map[netip.Addr]int
}

// NewConnTable returns an empty table for size connections (0 means
// CONN_TABLE_SIZE).
func NewConnTable(size int) *ConnTable {
	if size <= 0 || size > p4src.ConnTableSize {
		size = p4src.ConnTableSize
	}
	return &ConnTable{size: size, conns: make(map[ConnKey]*Connection), used: make(map[uint16]bool),
		perPort: make(map[PortRef]int), perSender: make(map[netip.Addr]int)}
}

// quotaCounted reports whether c counts against the quotas of its ingress
// port and its sender: announced, not static.
func quotaCounted(c *Connection) bool { return !c.Static && !c.Ingress.IsZero() }

// count adds d (1 or -1) to the quota counts of c.
func (t *ConnTable) count(c *Connection, d int) {
	if !quotaCounted(c) {
		return
	}
	if t.perPort[c.Ingress] += d; t.perPort[c.Ingress] <= 0 {
		delete(t.perPort, c.Ingress)
	}
	if t.perSender[c.SenderIP] += d; t.perSender[c.SenderIP] <= 0 {
		delete(t.perSender, c.SenderIP)
	}
}

// PortConns returns how many announced connections came in on port p.
func (t *ConnTable) PortConns(p PortRef) int { return t.perPort[p] }

// SenderConns returns how many announced connections sender ip holds.
func (t *ConnTable) SenderConns(ip netip.Addr) int { return t.perSender[ip] }

// Get returns the connection with key k.
func (t *ConnTable) Get(k ConnKey) (Connection, bool) {
	c, ok := t.conns[k]
	if !ok {
		return Connection{}, false
	}
	return *c, true
}

// Validate checks the fields the data plane cannot hold.
func (c *Connection) Validate() error {
	switch {
	case !c.SenderIP.Is4():
		return fmt.Errorf("%w: sender %s is not IPv4", ErrInvalidConn, c.SenderIP)
	case c.ReceiverQPN >= 1<<24:
		return fmt.Errorf("%w: receiver QPN %d exceeds 24 bits", ErrInvalidConn, c.ReceiverQPN)
	case c.SenderQPN >= 1<<24:
		return fmt.Errorf("%w: sender QPN %d exceeds 24 bits", ErrInvalidConn, c.SenderQPN)
	case c.WorkerRank >= 32:
		return fmt.Errorf("%w: worker rank %d >= 32", ErrInvalidConn, c.WorkerRank)
	case c.Flags&^uint8(p4src.ConnFlagIncUplink|p4src.ConnFlagCNPTarget) != 0:
		return fmt.Errorf("%w: unknown flags %#x", ErrInvalidConn, c.Flags)
	case c.Flags&p4src.ConnFlagIncUplink != 0 && c.INCGroup == 0:
		return fmt.Errorf("%w: INC uplink without an INC group", ErrInvalidConn)
	}
	return nil
}

// Upsert adds c or refreshes the connection with its key (keeping its
// index); it returns the stored connection and whether the table changed in
// a way the switches see (new connection or different action data).
func (t *ConnTable) Upsert(c Connection) (Connection, bool, error) {
	if err := c.Validate(); err != nil {
		return Connection{}, false, err
	}
	if old, ok := t.conns[c.ConnKey]; ok {
		changed := old.SenderQPN != c.SenderQPN || old.Flags != c.Flags || old.WorkerRank != c.WorkerRank ||
			old.INCGroup != c.INCGroup
		c.Index = old.Index
		c.Static = c.Static || old.Static
		if c.LastSeen.Before(old.LastSeen) {
			c.LastSeen = old.LastSeen
		}
		if c.Ingress.IsZero() {
			c.Ingress = old.Ingress // an API call does not move it
		}
		t.count(old, -1)
		*old = c
		t.count(old, 1)
		return c, changed, nil
	}
	if len(t.conns) >= t.size {
		return Connection{}, false, fmt.Errorf("%w: %d connections", ErrTableFull, t.size)
	}
	idx := -1
	for i := t.free; i < t.size; i++ {
		if !t.used[uint16(i)] {
			idx = i
			break
		}
	}
	if idx < 0 { // cannot happen: fewer than size connections
		return Connection{}, false, fmt.Errorf("%w: no free conn_index", ErrTableFull)
	}
	t.free = idx + 1
	c.Index = uint16(idx)
	t.used[c.Index] = true
	cc := c
	t.conns[c.ConnKey] = &cc
	t.count(&cc, 1)
	return c, true, nil
}

// Restore adds a connection with its index as persisted; a clash is an error.
func (t *ConnTable) Restore(c Connection) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if int(c.Index) >= t.size || t.used[c.Index] {
		return fmt.Errorf("%w: conn_index %d unavailable", ErrInvalidConn, c.Index)
	}
	if _, ok := t.conns[c.ConnKey]; ok {
		return fmt.Errorf("%w: duplicate %s", ErrInvalidConn, c.ConnKey)
	}
	t.used[c.Index] = true
	cc := c
	t.conns[c.ConnKey] = &cc
	t.count(&cc, 1)
	return nil
}

// Remove deletes the connection with key k.
func (t *ConnTable) Remove(k ConnKey) (Connection, error) {
	c, ok := t.conns[k]
	if !ok {
		return Connection{}, fmt.Errorf("%w: %s", ErrNoConn, k)
	}
	delete(t.conns, k)
	t.release(c.Index)
	t.count(c, -1)
	return *c, nil
}

// Expire removes the non-static connections idle for longer than idle at
// now and returns them. A connection's idle time counts from the later of
// its LastSeen and since: a controller that has just (re)started or taken
// over passes the moment it did, so that a connection whose refreshes it
// could not see (or whose last refresh was not saved) gets a full idle
// period to be announced again.
func (t *ConnTable) Expire(now time.Time, idle time.Duration, since time.Time) []Connection {
	var out []Connection
	for k, c := range t.conns {
		seen := c.LastSeen
		if since.After(seen) {
			seen = since
		}
		if !c.Static && now.Sub(seen) > idle {
			out = append(out, *c)
			delete(t.conns, k)
			t.release(c.Index)
			t.count(c, -1)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// release frees conn_index i.
func (t *ConnTable) release(i uint16) {
	delete(t.used, i)
	t.free = min(t.free, int(i))
}

// Len returns the number of connections.
func (t *ConnTable) Len() int { return len(t.conns) }

// List returns the connections ordered by index.
func (t *ConnTable) List() []Connection {
	out := make([]Connection, 0, len(t.conns))
	for _, c := range t.conns {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}
