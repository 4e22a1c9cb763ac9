package netns

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// NamePrefix starts the name of every namespace a Testbed creates:
// "fcnp-<pid>-<id>-<name>". SweepStale uses the pid to find leftovers of
// processes that died without cleaning up.
const NamePrefix = "fcnp-"

// Testbed creates namespaces and links with unique names and removes all of
// them on Close, also after partial failures. It is safe for concurrent use.
type Testbed struct {
	id  string
	log logrus.FieldLogger

	mu        sync.Mutex
	closed    bool
	nss       []*NS          // created namespaces, in creation order
	hostLinks []string       // links created in the host namespace
	byName    map[string]*NS // short name -> namespace
}

// NewTestbed returns an empty testbed with a fresh random id. log may be nil.
func NewTestbed(log logrus.FieldLogger) (*Testbed, error) {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("netns: random testbed id: %w", err)
	}
	if log == nil {
		l := logrus.New()
		l.SetLevel(logrus.WarnLevel)
		log = l
	}
	id := hex.EncodeToString(b[:])
	return &Testbed{
		id:     id,
		log:    log.WithField("testbed", id),
		byName: make(map[string]*NS),
	}, nil
}

// ID returns the testbed's random id (6 hex digits).
func (tb *Testbed) ID() string { return tb.id }

// IfName returns a host-unique interface name made of base and the testbed
// id, cut to the 15 characters Linux allows. Only interfaces in the host
// namespace need this; names inside a testbed namespace cannot collide.
func (tb *Testbed) IfName(base string) string {
	room := 15 - len(tb.id)
	if len(base) > room {
		base = base[:room]
	}
	return base + tb.id
}

// Namespace creates the namespace "fcnp-<pid>-<id>-<name>" and returns it.
// name must be unique within the testbed.
func (tb *Testbed) Namespace(ctx context.Context, name string) (*NS, error) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if tb.closed {
		return nil, errors.New("netns: testbed closed")
	}
	if _, ok := tb.byName[name]; ok {
		return nil, fmt.Errorf("netns: namespace %q already in testbed %s", name, tb.id)
	}
	full := fmt.Sprintf("%s%d-%s-%s", NamePrefix, os.Getpid(), tb.id, name)
	ns, err := Create(ctx, full)
	if err != nil {
		return nil, err
	}
	tb.nss = append(tb.nss, ns)
	tb.byName[name] = ns
	tb.log.WithField("netns", full).Debug("namespace created")
	// Loopback up: many tools and tests expect it.
	if _, err := ns.IP(ctx, "link", "set", "dev", "lo", "up"); err != nil {
		return nil, err
	}
	return ns, nil
}

// Lookup returns the namespace created under the short name, or nil.
func (tb *Testbed) Lookup(name string) *NS {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.byName[name]
}

// LinkConfig is the configuration of one interface.
type LinkConfig struct {
	// NS is the namespace of the interface; nil means the host namespace.
	NS *NS
	// Name is the interface name (at most 15 characters).
	Name string
	// MAC, if set, replaces the random address.
	MAC net.HardwareAddr
	// MTU, if non-zero, replaces the default of 1500.
	MTU int
	// Addrs are IP prefixes to add (e.g. 10.0.0.1/24).
	Addrs []netip.Prefix
	// DisableIPv6 turns IPv6 off on the interface before it goes up, so the
	// kernel sends no router solicitations, MLD or neighbour discovery on it.
	// Raw-frame tests want this.
	DisableIPv6 bool
	// Down leaves the interface administratively down.
	Down bool
}

func (c *LinkConfig) ns() *NS {
	if c.NS == nil {
		return Host()
	}
	return c.NS
}

// Veth is a created veth pair.
type Veth struct {
	// A and B are the two ends, as configured.
	A, B LinkConfig
}

// Veth creates a veth pair with each end directly in its namespace and then
// configures both ends (MAC, MTU, IPv6, addresses, up).
func (tb *Testbed) Veth(ctx context.Context, a, b LinkConfig) (*Veth, error) {
	if a.Name == "" || b.Name == "" || len(a.Name) > 15 || len(b.Name) > 15 {
		return nil, fmt.Errorf("netns: veth: invalid interface names %q, %q", a.Name, b.Name)
	}
	tb.mu.Lock()
	if tb.closed {
		tb.mu.Unlock()
		return nil, errors.New("netns: testbed closed")
	}
	tb.mu.Unlock()

	args := []string{"link", "add", a.Name}
	if a.NS != nil && !a.NS.IsHost() {
		args = append(args, "netns", a.NS.Name())
	}
	args = append(args, "type", "veth", "peer", "name", b.Name)
	if b.NS != nil && !b.NS.IsHost() {
		args = append(args, "netns", b.NS.Name())
	}
	if _, err := runCmd(ctx, ipPath(), args...); err != nil {
		return nil, err
	}
	tb.mu.Lock()
	for _, c := range []*LinkConfig{&a, &b} {
		if c.ns().IsHost() {
			tb.hostLinks = append(tb.hostLinks, c.Name)
		}
	}
	tb.mu.Unlock()
	tb.log.WithFields(logrus.Fields{"a": a.Name, "a_netns": a.ns().String(), "b": b.Name, "b_netns": b.ns().String()}).Debug("veth created")
	for _, c := range []LinkConfig{a, b} {
		if err := ConfigureLink(ctx, c); err != nil {
			return nil, err
		}
	}
	if !a.Down && !b.Down {
		for _, c := range []LinkConfig{a, b} {
			if err := c.ns().WaitUp(ctx, c.Name, 10*time.Second); err != nil {
				return nil, err
			}
		}
	}
	return &Veth{A: a, B: b}, nil
}

// WaitUp waits until dev is operationally up and has its qdisc attached.
//
// Bringing a link up is asynchronous: the kernel's linkwatch worker sets
// the operational state and replaces the "noop" qdisc, which silently
// discards every frame sent (send(2) still reports success), with the real
// one. Under load this takes from microseconds to about a second, so a test
// that sends right after `ip link set up` loses its first frames.
func (n *NS) WaitUp(ctx context.Context, dev string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last string
	for {
		out, err := n.IP(ctx, "-o", "link", "show", "dev", dev)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("netns: %s in %s not up after %v (last: %s): %w", dev, n, timeout, last, err)
			}
			return err
		}
		last = strings.TrimSpace(string(out))
		if strings.Contains(last, "state UP") && strings.Contains(last, "LOWER_UP") && !strings.Contains(last, "qdisc noop") {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("netns: %s in %s not up after %v (last: %s): %w", dev, n, timeout, last, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// ConfigureLink applies c to an existing interface.
func ConfigureLink(ctx context.Context, c LinkConfig) error {
	ns := c.ns()
	set := []string{"link", "set", "dev", c.Name}
	if c.MAC != nil {
		set = append(set, "address", c.MAC.String())
	}
	if c.MTU != 0 {
		set = append(set, "mtu", strconv.Itoa(c.MTU))
	}
	if len(set) > 4 {
		if _, err := ns.IP(ctx, set...); err != nil {
			return err
		}
	}
	if c.DisableIPv6 {
		err := ns.WriteSysctl("net/ipv6/conf/"+c.Name+"/disable_ipv6", "1")
		if err != nil && !errors.Is(err, os.ErrNotExist) { // kernel without IPv6
			return err
		}
	}
	for _, p := range c.Addrs {
		if _, err := ns.IP(ctx, "addr", "add", p.String(), "dev", c.Name); err != nil {
			return err
		}
	}
	if !c.Down {
		if _, err := ns.IP(ctx, "link", "set", "dev", c.Name, "up"); err != nil {
			return err
		}
	}
	return nil
}

// AddNeighbor adds (or replaces) a permanent neighbour entry ip -> mac on dev.
func (n *NS) AddNeighbor(ctx context.Context, dev string, ip netip.Addr, mac net.HardwareAddr) error {
	_, err := n.IP(ctx, "neigh", "replace", ip.String(), "lladdr", mac.String(), "dev", dev, "nud", "permanent")
	return err
}

// Route is a static route. Dst is required; Via and Dev are optional but
// one of them must be set.
type Route struct {
	// Dst is the destination prefix (0.0.0.0/0 for a default route).
	Dst netip.Prefix
	// Via is the gateway, if any.
	Via netip.Addr
	// Dev is the output interface, if any.
	Dev string
}

// AddRoute adds (or replaces) a route.
func (n *NS) AddRoute(ctx context.Context, r Route) error {
	if !r.Dst.IsValid() || (!r.Via.IsValid() && r.Dev == "") {
		return fmt.Errorf("netns: route %+v needs Dst and Via or Dev", r)
	}
	args := []string{"route", "replace", r.Dst.String()}
	if r.Via.IsValid() {
		args = append(args, "via", r.Via.String())
	}
	if r.Dev != "" {
		args = append(args, "dev", r.Dev)
	}
	_, err := n.IP(ctx, args...)
	return err
}

// TBF is a token-bucket shaper for the root qdisc of an interface.
type TBF struct {
	// RateBitsPerSec is the shaped rate.
	RateBitsPerSec uint64
	// BurstBytes is the bucket size; it must be at least one MTU-sized frame
	// plus what the timer granularity needs (rate/HZ). 0 picks
	// max(rate/250/8, 16 KiB).
	BurstBytes uint64
	// Latency bounds the queueing delay (and so the queue size); 0 means 10ms.
	Latency time.Duration
}

// SetTBF replaces the root qdisc of dev with a tbf shaper.
func (n *NS) SetTBF(ctx context.Context, dev string, t TBF) error {
	if t.RateBitsPerSec == 0 {
		return errors.New("netns: tbf needs a rate")
	}
	burst := t.BurstBytes
	if burst == 0 {
		burst = max(t.RateBitsPerSec/250/8, 16<<10)
	}
	lat := t.Latency
	if lat == 0 {
		lat = 10 * time.Millisecond
	}
	_, err := n.TC(ctx, "qdisc", "replace", "dev", dev, "root", "tbf",
		"rate", strconv.FormatUint(t.RateBitsPerSec, 10)+"bit",
		"burst", strconv.FormatUint(burst, 10),
		"latency", strconv.FormatInt(lat.Microseconds(), 10)+"us")
	return err
}

// SetHTB replaces the root qdisc of dev with an htb qdisc whose single
// default class 1:1 has the given rate and ceiling (ceil 0 = rate).
func (n *NS) SetHTB(ctx context.Context, dev string, rateBitsPerSec, ceilBitsPerSec uint64) error {
	if rateBitsPerSec == 0 {
		return errors.New("netns: htb needs a rate")
	}
	if ceilBitsPerSec == 0 {
		ceilBitsPerSec = rateBitsPerSec
	}
	if _, err := n.TC(ctx, "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "1"); err != nil {
		return err
	}
	_, err := n.TC(ctx, "class", "replace", "dev", dev, "parent", "1:", "classid", "1:1", "htb",
		"rate", strconv.FormatUint(rateBitsPerSec, 10)+"bit",
		"ceil", strconv.FormatUint(ceilBitsPerSec, 10)+"bit")
	return err
}

// ClearQdisc removes the root qdisc of dev (back to the default). Removing a
// qdisc that is not there is not an error.
func (n *NS) ClearQdisc(ctx context.Context, dev string) error {
	_, err := n.TC(ctx, "qdisc", "del", "dev", dev, "root")
	var ce *CmdError
	if errors.As(err, &ce) && (strings.Contains(ce.Stderr, "Cannot delete qdisc with handle of zero") ||
		strings.Contains(ce.Stderr, "No such file")) {
		return nil
	}
	return err
}

// Close deletes every link the testbed created in the host namespace and
// every namespace it created (which destroys the interfaces inside). It is
// idempotent and keeps going after errors, returning all of them joined.
// A cancelled ctx is replaced for cleanup so that cleanup still happens.
func (tb *Testbed) Close() error {
	tb.mu.Lock()
	tb.closed = true
	links := tb.hostLinks
	nss := tb.nss
	tb.hostLinks, tb.nss = nil, nil
	tb.byName = make(map[string]*NS)
	tb.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	for _, l := range links {
		if _, err := runCmd(ctx, ipPath(), "link", "del", "dev", l); err != nil {
			var ce *CmdError
			// The peer may have gone first, taking this end with it.
			if errors.As(err, &ce) && strings.Contains(ce.Stderr, "Cannot find device") {
				continue
			}
			errs = append(errs, err)
		}
	}
	for i := len(nss) - 1; i >= 0; i-- {
		if err := nss[i].Delete(ctx); err != nil {
			errs = append(errs, err)
		}
		tb.log.WithField("netns", nss[i].Name()).Debug("namespace deleted")
	}
	return errors.Join(errs...)
}

// SweepStale deletes namespaces named by a Testbed of a process that no
// longer exists (left behind by a crash or SIGKILL). It returns the names
// it deleted. Namespaces of live processes are never touched. It assumes
// that every process using RunDir shares this process's PID namespace (true
// on one host or in one container); do not call it where containers with
// their own PID namespaces share /run/netns.
func SweepStale(ctx context.Context) ([]string, error) {
	entries, err := os.ReadDir(RunDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("netns: sweep: %w", err)
	}
	var deleted []string
	var errs []error
	for _, e := range entries {
		name := e.Name()
		rest, ok := strings.CutPrefix(name, NamePrefix)
		if !ok {
			continue
		}
		pidStr, _, ok := strings.Cut(rest, "-")
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid <= 0 {
			continue
		}
		if _, err := os.Stat("/proc/" + pidStr); err == nil {
			continue // owner alive
		}
		if err := (&NS{name: name}).Delete(ctx); err != nil {
			errs = append(errs, err)
			continue
		}
		deleted = append(deleted, name)
	}
	return deleted, errors.Join(errs...)
}
