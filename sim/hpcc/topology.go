package hpcc

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
)

// Limits on what a topology file may declare, so that a corrupt header cannot
// make the reader allocate without bound.
const (
	MaxNodes = 1 << 20
	MaxLinks = 1 << 24
)

// ParseTopology reads a topology file: "nodes switches links", then the
// switch node IDs on one line (no line when there are no switches), then one
// "a b rate delay error_rate" line per link (rate and delay as ns-3 strings:
// "100Gbps", "1000ns"). Blank lines are skipped. name is used in errors
// ("fat.txt:12: ...").
func ParseTopology(name string, r io.Reader) (*Topology, error) {
	lr := newLineReader(name, r)
	f, ok, err := lr.next()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, lr.errf("empty file: want a \"nodes switches links\" line")
	}
	if len(f) != 3 {
		return nil, lr.errf("want \"nodes switches links\", got %d fields", len(f))
	}
	nodes, err1 := atoiRange(f[0], 1, MaxNodes)
	nsw, err2 := atoiRange(f[1], 0, MaxNodes)
	nlinks, err3 := atoiRange(f[2], 0, MaxLinks)
	for i, e := range []error{err1, err2, err3} {
		if e != nil {
			return nil, lr.errf("%s: %v", []string{"nodes", "switches", "links"}[i], e)
		}
	}
	if nsw > nodes {
		return nil, lr.errf("%d switches but only %d nodes", nsw, nodes)
	}
	t := &Topology{Nodes: nodes, Switches: make([]int, 0, nsw), Links: make([]Link, 0, min(nlinks, 1<<16))}
	if nsw > 0 {
		f, ok, err := lr.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, lr.errf("want a line with the %d switch IDs, file ends", nsw)
		}
		if len(f) != nsw {
			return nil, lr.errf("want %d switch IDs, got %d", nsw, len(f))
		}
		seen := make(map[int]bool, nsw)
		for _, s := range f {
			id, err := atoiRange(s, 0, nodes-1)
			if err != nil {
				return nil, lr.errf("switch ID: %v", err)
			}
			if seen[id] {
				return nil, lr.errf("switch %d listed twice", id)
			}
			seen[id] = true
			t.Switches = append(t.Switches, id)
		}
	}
	pairs := make(map[[2]int]int, min(nlinks, 1<<16))
	for len(t.Links) < nlinks {
		f, ok, err := lr.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, lr.errf("header declares %d links, file has %d", nlinks, len(t.Links))
		}
		l, err := parseLink(f, nodes)
		if err != nil {
			return nil, lr.errf("%v", err)
		}
		key := [2]int{min(l.A, l.B), max(l.A, l.B)}
		if prev, dup := pairs[key]; dup {
			return nil, lr.errf("second link between %d and %d (first on line %d)", l.A, l.B, prev)
		}
		pairs[key] = lr.line
		t.Links = append(t.Links, l)
	}
	if _, ok, err := lr.next(); err != nil {
		return nil, err
	} else if ok {
		return nil, lr.errf("text after the %d links the header declares", nlinks)
	}
	return t, nil
}

func parseLink(f []string, nodes int) (Link, error) {
	if len(f) != 5 {
		return Link{}, fmt.Errorf("want \"a b rate delay error_rate\", got %d fields", len(f))
	}
	a, err := atoiRange(f[0], 0, nodes-1)
	if err != nil {
		return Link{}, fmt.Errorf("node a: %v", err)
	}
	b, err := atoiRange(f[1], 0, nodes-1)
	if err != nil {
		return Link{}, fmt.Errorf("node b: %v", err)
	}
	if a == b {
		return Link{}, fmt.Errorf("link from node %d to itself", a)
	}
	rate, err := ParseRate(f[2])
	if err != nil {
		return Link{}, err
	}
	delay, err := ParseTime(f[3])
	if err != nil {
		return Link{}, err
	}
	er, err := strconv.ParseFloat(f[4], 64)
	if err != nil || !(er >= 0 && er <= 1) {
		return Link{}, fmt.Errorf("error rate %q: want a number in [0, 1]", f[4])
	}
	return Link{A: a, B: b, RateBps: float64(rate), DelayNs: delay, ErrorRate: er}, nil
}

// atoiRange parses a decimal integer in [lo, hi].
func atoiRange(s string, lo, hi int) (int, error) {
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer", s)
	}
	if v < lo || v > hi {
		return 0, fmt.Errorf("%d out of range [%d, %d]", v, lo, hi)
	}
	return v, nil
}

// Validate checks what ParseTopology checks, for topologies built in code.
func (t *Topology) Validate() error {
	if t.Nodes < 1 || t.Nodes > MaxNodes {
		return fmt.Errorf("hpcc: topology: %d nodes, want 1..%d", t.Nodes, MaxNodes)
	}
	seen := make(map[int]bool, len(t.Switches))
	for _, s := range t.Switches {
		if s < 0 || s >= t.Nodes || seen[s] {
			return fmt.Errorf("hpcc: topology: switch ID %d out of range or repeated", s)
		}
		seen[s] = true
	}
	pairs := make(map[[2]int]bool, len(t.Links))
	for i, l := range t.Links {
		switch {
		case l.A < 0 || l.A >= t.Nodes || l.B < 0 || l.B >= t.Nodes || l.A == l.B:
			return fmt.Errorf("hpcc: topology: link %d: bad nodes %d-%d", i, l.A, l.B)
		case !(l.RateBps >= 1 && l.RateBps <= maxRate) || l.RateBps != float64(uint64(l.RateBps)):
			return fmt.Errorf("hpcc: topology: link %d: rate %v b/s is not a whole number in [1, 1e15]", i, l.RateBps)
		case l.DelayNs < 0 || l.DelayNs > maxTimeNs:
			return fmt.Errorf("hpcc: topology: link %d: delay %d ns out of range", i, l.DelayNs)
		case !(l.ErrorRate >= 0 && l.ErrorRate <= 1):
			return fmt.Errorf("hpcc: topology: link %d: error rate %v not in [0, 1]", i, l.ErrorRate)
		}
		key := [2]int{min(l.A, l.B), max(l.A, l.B)}
		if pairs[key] {
			return fmt.Errorf("hpcc: topology: link %d: second link between %d and %d", i, l.A, l.B)
		}
		pairs[key] = true
	}
	return nil
}

// WriteTopology writes t in the topology file format; ParseTopology reads
// it back to an equal Topology.
func WriteTopology(w io.Writer, t *Topology) error {
	if err := t.Validate(); err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%d %d %d\n", t.Nodes, len(t.Switches), len(t.Links))
	if len(t.Switches) > 0 {
		for i, s := range t.Switches {
			if i > 0 {
				bw.WriteByte(' ')
			}
			bw.WriteString(strconv.Itoa(s))
		}
		bw.WriteByte('\n')
	}
	for _, l := range t.Links {
		fmt.Fprintf(bw, "%d %d %s %dns %s\n", l.A, l.B, FormatRate(uint64(l.RateBps)), l.DelayNs, strconv.FormatFloat(l.ErrorRate, 'f', -1, 64))
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("hpcc: write topology: %w", err)
	}
	return nil
}

// SwitchMask returns, for every node ID, whether it is a switch.
func (t *Topology) SwitchMask() []bool {
	m := make([]bool, t.Nodes)
	for _, s := range t.Switches {
		if s >= 0 && s < t.Nodes {
			m[s] = true
		}
	}
	return m
}

// Hosts returns the IDs of the nodes that are not switches, in increasing order.
func (t *Topology) Hosts() []int {
	m := t.SwitchMask()
	hosts := make([]int, 0, t.Nodes-len(t.Switches))
	for id, sw := range m {
		if !sw {
			hosts = append(hosts, id)
		}
	}
	return hosts
}

// Port is one end of a link as seen from a node.
type Port struct {
	IfIndex int // ns-3 device index: 1 for the node's first link in the file, 2 for the next...
	Peer    int // the node at the other end
	Link    int // index into Topology.Links
}

// Ports returns every node's ports in the order the HPCC simulator numbers
// them: ns-3 gives each node device 0 (loopback) and then one device per link
// in the order the links appear in the file, so a node's k-th link (0-based)
// is IfIndex k+1. pfc.txt and the queue-length files name ports this way.
func (t *Topology) Ports() [][]Port {
	ports := make([][]Port, t.Nodes)
	for i, l := range t.Links {
		ports[l.A] = append(ports[l.A], Port{IfIndex: len(ports[l.A]) + 1, Peer: l.B, Link: i})
		ports[l.B] = append(ports[l.B], Port{IfIndex: len(ports[l.B]) + 1, Peer: l.A, Link: i})
	}
	return ports
}
