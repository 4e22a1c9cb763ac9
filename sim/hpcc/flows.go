package hpcc

import (
	"fmt"
	"io"
	"strconv"
)

// Flow-file conventions of the HPCC tools.
const (
	// DataPG is the priority group traffic_gen.py gives every flow.
	DataPG = 3
	// DPortNormal marks background flows; fct_analysis.py selects them with
	// "-t 0" by this destination port.
	DPortNormal = 100
	// DPortIncast marks incast flows ("-t 1" in fct_analysis.py).
	DPortIncast = 200
	// FirstSPort is the first source port the simulator gives a (src, dst) pair.
	FirstSPort = 10000
	// MaxFlows bounds the count a flow file may declare.
	MaxFlows = 1 << 26
	// MaxFlowSize is the largest flow the HPCC simulator can carry (it reads
	// the size into a 32-bit integer).
	MaxFlowSize = 1<<32 - 1
	// NumPGs is the number of priority groups (PFC classes).
	NumPGs = 8
)

// ParseFlows reads a flow file: the number of flows, then one line per flow
// "src dst pg dport size start_s" (start in seconds, as a decimal). The count
// must match the lines and start times must not decrease: the HPCC simulator
// reads flows in order and schedules each at its start. Start times are
// converted exactly (to the nanosecond, fractions dropped). Node IDs are
// checked against a topology by ValidateFlows.
func ParseFlows(name string, r io.Reader) ([]Flow, error) {
	lr := newLineReader(name, r)
	f, ok, err := lr.next()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, lr.errf("empty file: want the number of flows")
	}
	if len(f) != 1 {
		return nil, lr.errf("want the number of flows alone on the first line, got %d fields", len(f))
	}
	n, err := atoiRange(f[0], 0, MaxFlows)
	if err != nil {
		return nil, lr.errf("flow count: %v", err)
	}
	flows := make([]Flow, 0, min(n, 1<<16))
	err = lr.each(func(f []string) error {
		if len(flows) == n {
			return lr.errf("more flows than the %d the first line declares (the HPCC simulator reads only the first %d)", n, n)
		}
		fl, err := parseFlow(f)
		if err != nil {
			return lr.errf("%v", err)
		}
		if len(flows) > 0 && fl.StartNs < flows[len(flows)-1].StartNs {
			return lr.errf("start %s s is before the previous flow's (flows must be in start order)", f[5])
		}
		flows = append(flows, fl)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(flows) != n {
		return nil, lr.errf("first line declares %d flows, file has %d", n, len(flows))
	}
	return flows, nil
}

func parseFlow(f []string) (Flow, error) {
	if len(f) != 6 {
		return Flow{}, fmt.Errorf("want \"src dst pg dport size start_s\", got %d fields", len(f))
	}
	var fl Flow
	var err error
	if fl.Src, err = atoiRange(f[0], 0, MaxNodes-1); err != nil {
		return fl, fmt.Errorf("src: %v", err)
	}
	if fl.Dst, err = atoiRange(f[1], 0, MaxNodes-1); err != nil {
		return fl, fmt.Errorf("dst: %v", err)
	}
	if fl.Src == fl.Dst {
		return fl, fmt.Errorf("flow from node %d to itself", fl.Src)
	}
	if fl.PG, err = atoiRange(f[2], 0, NumPGs-1); err != nil {
		return fl, fmt.Errorf("pg: %v", err)
	}
	dport, err := atoiRange(f[3], 0, 65535)
	if err != nil {
		return fl, fmt.Errorf("dport: %v", err)
	}
	fl.DPort = uint16(dport)
	size, err := strconv.ParseInt(f[4], 10, 64)
	if err != nil || size < 1 || size > MaxFlowSize {
		return fl, fmt.Errorf("size %q: want a whole number of bytes in [1, %d]", f[4], int64(MaxFlowSize))
	}
	fl.Size = size
	if fl.StartNs, err = decimalToNs(f[5], 9); err != nil {
		return fl, fmt.Errorf("start %q: %v", f[5], err)
	}
	return fl, nil
}

// ValidateFlows checks flows against a topology: every source and
// destination is a host of t, and flows are in start order.
func ValidateFlows(t *Topology, flows []Flow) error {
	sw := t.SwitchMask()
	isHost := func(id int) bool { return id >= 0 && id < t.Nodes && !sw[id] }
	for i, fl := range flows {
		switch {
		case !isHost(fl.Src):
			return fmt.Errorf("hpcc: flow %d: source %d is not a host of the topology", i+1, fl.Src)
		case !isHost(fl.Dst):
			return fmt.Errorf("hpcc: flow %d: destination %d is not a host of the topology", i+1, fl.Dst)
		case fl.Src == fl.Dst:
			return fmt.Errorf("hpcc: flow %d: from host %d to itself", i+1, fl.Src)
		case fl.Size < 1 || fl.Size > MaxFlowSize:
			return fmt.Errorf("hpcc: flow %d: size %d out of range", i+1, fl.Size)
		case fl.PG < 0 || fl.PG >= NumPGs:
			return fmt.Errorf("hpcc: flow %d: priority group %d out of range", i+1, fl.PG)
		case fl.StartNs < 0 || fl.StartNs > maxTimeNs:
			return fmt.Errorf("hpcc: flow %d: start %d ns out of range", i+1, fl.StartNs)
		case i > 0 && fl.StartNs < flows[i-1].StartNs:
			return fmt.Errorf("hpcc: flow %d: starts before flow %d (flows must be in start order)", i+1, i)
		}
	}
	return nil
}

// AppendFlow appends one flow-file line ("src dst pg dport size start_s\n").
func AppendFlow(dst []byte, fl Flow) []byte {
	dst = appendInts(dst, int64(fl.Src), int64(fl.Dst), int64(fl.PG), int64(fl.DPort), fl.Size)
	dst = append(dst, ' ')
	dst = append(dst, formatSeconds(fl.StartNs)...)
	return append(dst, '\n')
}

// appendInts appends the values separated by spaces.
func appendInts(dst []byte, vs ...int64) []byte {
	for i, v := range vs {
		if i > 0 {
			dst = append(dst, ' ')
		}
		dst = strconv.AppendInt(dst, v, 10)
	}
	return dst
}

// WriteFlows writes a flow file (count, then one line per flow, start times
// with nine decimals as traffic_gen.py prints them).
func WriteFlows(w io.Writer, flows []Flow) error {
	for i, fl := range flows {
		if fl.StartNs < 0 || (i > 0 && fl.StartNs < flows[i-1].StartNs) {
			return fmt.Errorf("hpcc: write flows: flow %d: start %d ns out of order", i+1, fl.StartNs)
		}
	}
	if _, err := io.WriteString(w, strconv.Itoa(len(flows))+"\n"); err != nil {
		return fmt.Errorf("hpcc: write flows: %w", err)
	}
	return writeRecords(w, "flows", flows, AppendFlow)
}

// SourcePorts returns the source port the HPCC simulator gives each flow:
// every (src, dst) pair counts from FirstSPort in file order (16 bits, so
// the count wraps as the simulator's does).
func SourcePorts(flows []Flow) []uint16 {
	next := make(map[[2]int]uint16)
	out := make([]uint16, len(flows))
	for i, fl := range flows {
		k := [2]int{fl.Src, fl.Dst}
		p, ok := next[k]
		if !ok {
			p = FirstSPort
		}
		out[i] = p
		next[k] = p + 1
	}
	return out
}
