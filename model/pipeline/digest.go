package pipeline

import (
	"fmt"

	"github.com/fastcnp/fastcnp/p4src"
)

// Digest is one digest message: port_state_digest_t (DigestID DigestPortState: Port,
// Event, QueueBytes, RxBytes, TimestampNs) or cnp_digest_t (DigestCNP: Port, SrcAddr,
// DstAddr, WindowBytes, QueueBytes, TimestampNs). Unused fields are 0.
type Digest struct {
	DigestID    uint32
	Port        uint16
	Event       uint8
	SrcAddr     uint32
	DstAddr     uint32
	WindowBytes uint32
	QueueBytes  uint32
	RxBytes     uint32
	// TimestampNs is the 48-bit data-plane time.
	TimestampNs uint64
}

// AppendFields appends the digest's struct members in P4Info order (the order of
// DigestInfo.Fields), for a P4Runtime server to encode as P4Data struct members.
func (d *Digest) AppendFields(dst []uint64) []uint64 {
	if d.DigestID == p4src.DigestPortState {
		return append(dst, uint64(d.Port), uint64(d.Event), uint64(d.QueueBytes), uint64(d.RxBytes), d.TimestampNs)
	}
	return append(dst, uint64(d.Port), uint64(d.SrcAddr), uint64(d.DstAddr), uint64(d.WindowBytes), uint64(d.QueueBytes), d.TimestampNs)
}

// DigestConfig is a P4Runtime DigestEntry config. Digests are queued for the
// controller only while their digest has a config.
type DigestConfig struct {
	// MaxTimeoutNs: a list is ready when its oldest digest waited this long (0: at once).
	MaxTimeoutNs int64
	// MaxListSize: most digests per list, and a full list is ready at once (0: no limit).
	MaxListSize int32
	// AckTimeoutNs: an unacknowledged list is forgotten after this long (0: never,
	// except that at most maxOutstanding lists are remembered).
	AckTimeoutNs int64
}

// DigestList is a batch of digests of one digest ID, as in P4Runtime's DigestList.
type DigestList struct {
	DigestID    uint32
	ListID      uint64
	Digests     []Digest
	TimestampNs int64
}

// DigestQueueCap is the capacity of each digest's queue; beyond it digests are
// dropped and counted (DigestDrops).
const DigestQueueCap = 1024

const maxOutstanding = 16

type outstanding struct {
	listID uint64
	sentAt int64
}

type digestQueue struct {
	configured bool
	cfg        DigestConfig
	ring       [DigestQueueCap]Digest
	at         [DigestQueueCap]int64 // the caller's time when queued
	head, n    int
	drops      uint64
	nextList   uint64
	out        []outstanding
}

func (p *Pipeline) digestQueue(id uint32) (*digestQueue, error) {
	switch id {
	case p4src.DigestPortState:
		return &p.digests[0], nil
	case p4src.DigestCNP:
		return &p.digests[1], nil
	}
	return nil, fmt.Errorf("digest ID %#x: %w", id, ErrInvalidArgument)
}

// SetDigestConfig inserts or modifies a digest's config. Errors: ErrInvalidArgument
// (unknown ID, negative values).
func (p *Pipeline) SetDigestConfig(id uint32, cfg DigestConfig) error {
	q, err := p.digestQueue(id)
	if err != nil {
		return fmt.Errorf("set digest config: %w", err)
	}
	if cfg.MaxTimeoutNs < 0 || cfg.MaxListSize < 0 || cfg.AckTimeoutNs < 0 {
		return fmt.Errorf("set digest config %#x: negative value in %+v: %w", id, cfg, ErrInvalidArgument)
	}
	q.configured, q.cfg = true, cfg
	return nil
}

// DeleteDigestConfig removes a digest's config; its queued digests are discarded.
// Errors: ErrInvalidArgument, ErrNotFound.
func (p *Pipeline) DeleteDigestConfig(id uint32) error {
	q, err := p.digestQueue(id)
	if err != nil {
		return fmt.Errorf("delete digest config: %w", err)
	}
	if !q.configured {
		return fmt.Errorf("delete digest config %#x: %w", id, ErrNotFound)
	}
	q.configured, q.head, q.n, q.out = false, 0, 0, q.out[:0]
	return nil
}

// ReadDigestConfig returns a digest's config. Errors: ErrInvalidArgument, ErrNotFound.
func (p *Pipeline) ReadDigestConfig(id uint32) (DigestConfig, error) {
	q, err := p.digestQueue(id)
	if err != nil {
		return DigestConfig{}, fmt.Errorf("read digest config: %w", err)
	}
	if !q.configured {
		return DigestConfig{}, fmt.Errorf("read digest config %#x: %w", id, ErrNotFound)
	}
	return q.cfg, nil
}

// DigestDrops returns how many digests of id were dropped because the queue was full.
func (p *Pipeline) DigestDrops(id uint32) (uint64, error) {
	q, err := p.digestQueue(id)
	if err != nil {
		return 0, fmt.Errorf("digest drops: %w", err)
	}
	return q.drops, nil
}

// DigestsPending returns how many digests of id wait in the queue.
func (p *Pipeline) DigestsPending(id uint32) (int, error) {
	q, err := p.digestQueue(id)
	if err != nil {
		return 0, fmt.Errorf("digests pending: %w", err)
	}
	return q.n, nil
}

func (q *digestQueue) push(d *Digest, now int64) {
	if !q.configured {
		return
	}
	if q.n == DigestQueueCap {
		q.drops++
		return
	}
	i := (q.head + q.n) % DigestQueueCap
	q.ring[i], q.at[i] = *d, now
	q.n++
}

// PollDigestList fills out with the next ready list (a full list, or one whose oldest
// digest waited MaxTimeoutNs) and reports whether there was one. out.Digests is reused.
// The list is remembered until AckDigestList (or its ack timeout).
func (p *Pipeline) PollDigestList(now int64, out *DigestList) bool {
	for qi := range p.digests {
		q := &p.digests[qi]
		if !q.configured || q.n == 0 {
			continue
		}
		limit := q.n
		if q.cfg.MaxListSize > 0 && int(q.cfg.MaxListSize) < limit {
			limit = int(q.cfg.MaxListSize)
		}
		full := q.cfg.MaxListSize > 0 && q.n >= int(q.cfg.MaxListSize)
		if !full && now-q.at[q.head] < q.cfg.MaxTimeoutNs {
			continue
		}
		q.nextList++
		out.DigestID, out.ListID, out.TimestampNs = schema.Digests[qi].ID, q.nextList, now
		out.Digests = out.Digests[:0]
		for range limit {
			out.Digests = append(out.Digests, q.ring[q.head])
			q.head = (q.head + 1) % DigestQueueCap
			q.n--
		}
		q.expire(now)
		if len(q.out) == maxOutstanding {
			q.out = append(q.out[:0], q.out[1:]...)
		}
		q.out = append(q.out, outstanding{q.nextList, now})
		return true
	}
	return false
}

func (q *digestQueue) expire(now int64) {
	if q.cfg.AckTimeoutNs == 0 {
		return
	}
	keep := q.out[:0]
	for _, o := range q.out {
		if now-o.sentAt < q.cfg.AckTimeoutNs {
			keep = append(keep, o)
		}
	}
	q.out = keep
}

// AckDigestList acknowledges a list. Errors: ErrInvalidArgument (unknown digest),
// ErrNotFound (no such outstanding list).
func (p *Pipeline) AckDigestList(digestID uint32, listID uint64) error {
	q, err := p.digestQueue(digestID)
	if err != nil {
		return fmt.Errorf("ack digest list: %w", err)
	}
	for i, o := range q.out {
		if o.listID == listID {
			q.out = append(q.out[:i], q.out[i+1:]...)
			return nil
		}
	}
	return fmt.Errorf("ack digest list %#x/%d: %w", digestID, listID, ErrNotFound)
}
