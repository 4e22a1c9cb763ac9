// Package hpcc reads and writes the file formats of the public HPCC ns-3 simulator
// (alibaba-edu/High-Precision-Congestion-Control), so that fastcnp-sim runs the same
// inputs and its outputs can be compared with that simulator's file for file:
// topology, flow and parameter files in; fct.txt, pfc.txt and queue-length samples out.
//
// The package is pure data and parsing: no simulation, no wall clock.
package hpcc

// Topology is a topology file: nodes 0..Nodes-1, of which the IDs in Switches are
// switches and the others hosts, joined by Links.
type Topology struct {
	Nodes    int
	Switches []int
	Links    []Link
}

// Link is one "src dst rate delay error_rate" line: a full-duplex link.
type Link struct {
	A, B      int
	RateBps   float64 // bits per second
	DelayNs   int64   // one-way propagation delay
	ErrorRate float64 // packet error rate, 0..1
}

// Flow is one line of a flow file: "src dst pg dport size start_s".
type Flow struct {
	Src, Dst int
	PG       int    // priority group (traffic class)
	DPort    uint16 // destination port as the flow file gives it
	Size     int64  // bytes
	StartNs  int64  // start time; the file holds seconds
}

// FCT is one line of fct.txt:
// "sip dip sport dport size start_ns fct_ns standalone_fct_ns".
type FCT struct {
	SIP, DIP     uint32 // IPv4 addresses (the file prints them in hex)
	SPort, DPort uint16
	Size         int64
	StartNs      int64
	FCTNs        int64
	StandaloneNs int64 // the FCT on an idle network: base RTT + size at line rate
}

// PFC is one line of pfc.txt: "time node type ifindex paused", type 0 for a
// host, 1 for a switch; paused is 1 for a PAUSE, 0 for a resume.
type PFC struct {
	TimeNs  int64
	Node    int
	Switch  bool
	IfIndex int
	Paused  bool
}
