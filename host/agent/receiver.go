package agent

import (
	"fmt"
	"time"

	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/wire"
)

// ReceiverConfig configures a Receiver.
type ReceiverConfig struct {
	// StartPSN is the PSN of the first packet expected (the sender's
	// SenderConfig.StartPSN).
	StartPSN uint32
	// CNPInterval is the DCQCN NP's cnpInterval: at most one CNP per
	// interval for this connection; 0 = one CNP per CE-marked packet.
	CNPInterval time.Duration
	// NoNP disables the notification point (no CNPs are made).
	NoNP bool
}

// Arrival is a data packet as the receiver sees it.
type Arrival struct {
	// Now is the arrival time.
	Now time.Duration
	// PSN is the BTH PSN.
	PSN uint32
	// AckReq is the BTH A bit.
	AckReq bool
	// CE says the IPv4 ECN field was CE (11).
	CE bool
	// Payload is the payload size in bytes.
	Payload int
	// INT says the packet carries INT records to echo (an INT header
	// without the echo flag): the ACK it triggers echoes them.
	INT bool
}

// Reply is what the receiver does about one arrival.
type Reply struct {
	// Accept: the packet is the next in order; its payload is delivered.
	Accept bool
	// Ack: send an RC ACKNOWLEDGE with AckPSN and Syndrome (an ACK, or a
	// NAK with a PSN sequence error) and MSN in the AETH.
	Ack      bool
	AckPSN   uint32
	Syndrome uint8
	MSN      uint32
	// CNP: send a CNP to the sender's QP (the NP fired).
	CNP bool
	// ECE: the ACK carries the ECN echo (a packet arrived CE-marked since
	// the previous ACK, this one included).
	ECE bool
	// EchoINT: the ACK echoes this arrival's INT records.
	EchoINT bool
}

// ReceiverStats are a receiver's counters.
type ReceiverStats struct {
	Packets    uint64 // data packets accepted in order
	Payload    int64  // payload bytes accepted
	Duplicates uint64 // packets with a PSN already accepted
	OutOfOrder uint64 // packets beyond the expected PSN (dropped)
	CE         uint64 // CE-marked arrivals
	CNPs       uint64 // CNPs the NP decided to send
	Acks       uint64 // ACKs decided
	Naks       uint64 // NAKs decided
	First      time.Duration
	Last       time.Duration
}

// Receiver is the per-connection receiving state machine (the responder
// side of an RC connection, plus the DCQCN NP). Not safe for concurrent use.
type Receiver struct {
	cfg     ReceiverConfig
	epsn    uint32 // expected PSN
	msn     uint32 // messages (SEND Only packets) completed, 24 bits
	nakSent bool   // a NAK for the current gap was sent
	ce      bool   // a CE-marked packet arrived since the last ACK
	np      cc.NPFlow
	stats   ReceiverStats
}

// NewReceiver returns a receiver.
func NewReceiver(cfg ReceiverConfig) (*Receiver, error) {
	if cfg.StartPSN > wire.MaxPSN {
		return nil, fmt.Errorf("receiver: start PSN %#x exceeds 24 bits: %w", cfg.StartPSN, ErrConfig)
	}
	if cfg.CNPInterval < 0 {
		return nil, fmt.Errorf("receiver: cnpInterval %v is negative: %w", cfg.CNPInterval, ErrConfig)
	}
	return &Receiver{cfg: cfg, epsn: cfg.StartPSN}, nil
}

// ExpectedPSN returns the PSN of the next in-order packet.
func (r *Receiver) ExpectedPSN() uint32 { return r.epsn }

// OnData handles a data packet.
//
// In order (PSN = expected): accepted; ACKed if it requests an ACK.
// Duplicate (PSN behind): dropped; ACKed with the last in-order PSN if it
// requests an ACK, so a sender that lost ACKs learns its progress.
// Ahead (a gap: something was lost): dropped; the first such packet of a
// gap gets a NAK (PSN sequence error) carrying the expected PSN, later ones
// nothing until the gap is filled (IBTA 9.7.5.1.2).
// Independently, a CE-marked packet runs the NP: a CNP unless one was sent
// within CNPInterval. Every ACK (or NAK) carries the ECN echo when a packet
// arrived CE-marked since the previous one (this one included), and echoes
// the arrival's INT records when it has some.
func (r *Receiver) OnData(a Arrival) (Reply, error) {
	var rep Reply
	if a.PSN > wire.MaxPSN || a.Payload < 0 {
		return rep, fmt.Errorf("receiver: PSN %#x / payload %d out of range: %w", a.PSN, a.Payload, cc.ErrBadEvent)
	}
	if a.CE && !r.cfg.NoNP {
		send, err := r.np.OnCE(a.Now, r.cfg.CNPInterval)
		if err != nil {
			return rep, fmt.Errorf("receiver: %w", err)
		}
		r.stats.CE++
		if send {
			rep.CNP = true
			r.stats.CNPs++
		}
	} else if a.CE {
		r.stats.CE++
	}
	d := (a.PSN - r.epsn) & wire.MaxPSN
	switch {
	case d == 0:
		rep.Accept = true
		if r.stats.Packets == 0 {
			r.stats.First = a.Now
		}
		r.stats.Last = a.Now
		r.stats.Packets++
		r.stats.Payload += int64(a.Payload)
		r.epsn = (r.epsn + 1) & wire.MaxPSN
		r.msn = (r.msn + 1) & 0xFFFFFF
		r.nakSent = false
		if a.AckReq {
			rep.Ack, rep.AckPSN, rep.Syndrome = true, a.PSN, wire.SyndromeACK
		}
	case d >= 1<<23: // behind: a duplicate
		r.stats.Duplicates++
		if a.AckReq {
			rep.Ack, rep.AckPSN, rep.Syndrome = true, (r.epsn-1)&wire.MaxPSN, wire.SyndromeACK
		}
	default:
		r.stats.OutOfOrder++
		if !r.nakSent {
			r.nakSent = true
			rep.Ack, rep.AckPSN, rep.Syndrome = true, r.epsn, wire.SyndromeNAKPSNSequence
		}
	}
	r.ce = r.ce || a.CE
	if rep.Ack {
		rep.ECE, r.ce = r.ce, false
		rep.EchoINT = a.INT
		rep.MSN = r.msn
		if rep.Syndrome == wire.SyndromeACK {
			r.stats.Acks++
		} else {
			r.stats.Naks++
		}
	}
	return rep, nil
}

// Stats returns the counters.
func (r *Receiver) Stats() ReceiverStats { return r.stats }
