package hpcc

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// QlenHist is the HPCC simulator's queue-length record of one switch port
// (QlenDistribution in third.cc): Counts[k] is the number of samples in which
// the port's egress queues (all priorities together) held k KB, that is
// bytes/1000 rounded down.
type QlenHist struct {
	Node, IfIndex int
	Counts        []uint64
}

// MaxQlenKB bounds the histogram's length (1 GB of queue).
const MaxQlenKB = 1 << 20

// Add counts one sample of bytes queued.
func (h *QlenHist) Add(bytes int64) {
	kb := int(min(max(bytes, 0)/1000, MaxQlenKB-1))
	if kb >= len(h.Counts) {
		h.Counts = append(h.Counts, make([]uint64, kb+1-len(h.Counts))...)
	}
	h.Counts[kb]++
}

// QlenDump is one dump of qlen.txt: the histograms of every switch port
// accumulated from the start of monitoring up to TimeNs.
type QlenDump struct {
	TimeNs int64
	Hists  []QlenHist
}

// AppendQlenDump appends a dump as the simulator prints it:
// "time: T\n" and one "node ifindex c0 c1 ...\n" line per port, in
// (node, ifindex) order.
func AppendQlenDump(dst []byte, d QlenDump) []byte {
	hs := make([]QlenHist, len(d.Hists))
	copy(hs, d.Hists)
	sort.Slice(hs, func(i, j int) bool {
		if hs[i].Node != hs[j].Node {
			return hs[i].Node < hs[j].Node
		}
		return hs[i].IfIndex < hs[j].IfIndex
	})
	dst = append(dst, "time: "...)
	dst = strconv.AppendInt(dst, d.TimeNs, 10)
	dst = append(dst, '\n')
	for _, h := range hs {
		dst = appendInts(dst, int64(h.Node), int64(h.IfIndex))
		for _, c := range h.Counts {
			dst = append(dst, ' ')
			dst = strconv.AppendUint(dst, c, 10)
		}
		dst = append(dst, '\n')
	}
	return dst
}

// ParseQlen reads a qlen.txt file: a sequence of dumps.
func ParseQlen(name string, r io.Reader) ([]QlenDump, error) {
	lr := newLineReader(name, r)
	var out []QlenDump
	err := lr.each(func(f []string) error {
		if f[0] == "time:" {
			if len(f) != 2 {
				return lr.errf("want \"time: T\"")
			}
			t, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil || t < 0 {
				return lr.errf("time %q: want a non-negative integer (ns)", f[1])
			}
			out = append(out, QlenDump{TimeNs: t})
			return nil
		}
		if len(out) == 0 {
			return lr.errf("port line before the first \"time:\" line")
		}
		h, err := parseQlenHist(f)
		if err != nil {
			return lr.errf("%v", err)
		}
		d := &out[len(out)-1]
		d.Hists = append(d.Hists, h)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func parseQlenHist(f []string) (QlenHist, error) {
	if len(f) < 2 {
		return QlenHist{}, fmt.Errorf("want \"node ifindex count...\"")
	}
	if len(f)-2 > MaxQlenKB {
		return QlenHist{}, fmt.Errorf("more than %d histogram buckets", MaxQlenKB)
	}
	node, err := atoiRange(f[0], 0, MaxNodes-1)
	if err != nil {
		return QlenHist{}, fmt.Errorf("node: %v", err)
	}
	ifi, err := atoiRange(f[1], 0, MaxLinks)
	if err != nil {
		return QlenHist{}, fmt.Errorf("ifindex: %v", err)
	}
	h := QlenHist{Node: node, IfIndex: ifi, Counts: make([]uint64, len(f)-2)}
	for i, s := range f[2:] {
		if h.Counts[i], err = strconv.ParseUint(s, 10, 64); err != nil {
			return QlenHist{}, fmt.Errorf("count %q: want a non-negative integer", s)
		}
	}
	return h, nil
}

// QlenSample is one queue-length sample of a switch port: fastcnp-sim's
// time series ("time node ifindex bytes" per line), finer than the
// simulator's histograms and what the plots over time are drawn from.
type QlenSample struct {
	TimeNs  int64
	Node    int
	IfIndex int
	Bytes   int64
}

// AppendQlenSample appends "time node ifindex bytes\n".
func AppendQlenSample(dst []byte, s QlenSample) []byte {
	return append(appendInts(dst, s.TimeNs, int64(s.Node), int64(s.IfIndex), s.Bytes), '\n')
}

// ParseQlenSamples reads a file of AppendQlenSample lines.
func ParseQlenSamples(name string, r io.Reader) ([]QlenSample, error) {
	return parseRecords(name, r, parseQlenSample)
}

func parseQlenSample(f []string) (QlenSample, error) {
	if len(f) != 4 {
		return QlenSample{}, fmt.Errorf("want \"time node ifindex bytes\", got %d fields", len(f))
	}
	var s QlenSample
	var e1, e2, e3, e4 error
	s.TimeNs, e1 = strconv.ParseInt(f[0], 10, 64)
	s.Node, e2 = atoiRange(f[1], 0, MaxNodes-1)
	s.IfIndex, e3 = atoiRange(f[2], 0, MaxLinks)
	s.Bytes, e4 = strconv.ParseInt(f[3], 10, 64)
	if e1 != nil || e2 != nil || e3 != nil || e4 != nil || s.TimeNs < 0 || s.Bytes < 0 {
		return QlenSample{}, fmt.Errorf("bad sample %q", strings.Join(f, " "))
	}
	return s, nil
}

// WriteQlenSamples writes samples, one per line.
func WriteQlenSamples(w io.Writer, ss []QlenSample) error {
	return writeRecords(w, "qlen samples", ss, AppendQlenSample)
}
