package cc

import (
	"fmt"
	"time"
)

// NPFlow is the DCQCN notification point (spec 02, NP) state of one flow at
// the receiver. The zero value is a flow that has not sent a CNP yet. It is
// small and allocation-free, for runtimes that already keep per-flow state.
type NPFlow struct {
	last time.Duration // time of the last CNP sent
	sent bool          // a CNP has been sent
}

// OnCE handles a CE-marked packet of the flow arriving at now and reports
// whether to send a CNP now: yes unless a CNP was sent for this flow within
// the last interval, i.e. at a time t with now - t < interval. interval 0
// means one CNP per CE-marked packet.
func (f *NPFlow) OnCE(now, interval time.Duration) (bool, error) {
	if interval < 0 {
		return false, fmt.Errorf("np: cnpInterval %v is negative: %w", interval, ErrBadParams)
	}
	var last time.Duration
	if f.sent {
		last = f.last
	}
	if err := checkTime("np: CE packet", now, last); err != nil {
		return false, err
	}
	if f.sent && now-f.last < interval {
		return false, nil
	}
	f.last, f.sent = now, true
	return true, nil
}

// NP is the DCQCN notification point for many flows, keyed by a flow ID type
// the caller chooses (e.g. a QP number or a 5-tuple struct). Looking up a
// known flow does not allocate; the first CE packet of a new flow adds a map
// entry. Use Forget or Expire to bound its size.
type NP[K comparable] struct {
	interval time.Duration
	flows    map[K]NPFlow
}

// NewNP returns an NP with the given cnpInterval (>= 0; see
// DCQCNParams.CNPInterval).
func NewNP[K comparable](interval time.Duration) (*NP[K], error) {
	if interval < 0 {
		return nil, fmt.Errorf("np: cnpInterval %v is negative: %w", interval, ErrBadParams)
	}
	return &NP[K]{interval: interval, flows: make(map[K]NPFlow)}, nil
}

// OnCE handles a CE-marked packet of flow at now and reports whether to send
// a CNP to its sender now.
func (n *NP[K]) OnCE(flow K, now time.Duration) (bool, error) {
	f := n.flows[flow]
	send, err := f.OnCE(now, n.interval)
	if err != nil {
		return false, fmt.Errorf("flow %v: %w", flow, err)
	}
	if send {
		n.flows[flow] = f
	}
	return send, nil
}

// Forget drops the state of flow (e.g. when its connection closes).
func (n *NP[K]) Forget(flow K) { delete(n.flows, flow) }

// Expire drops every flow whose last CNP is at least one interval before
// now, since such a flow behaves exactly like a new one, and returns how
// many it dropped.
func (n *NP[K]) Expire(now time.Duration) int {
	dropped := 0
	for k, f := range n.flows {
		if now-f.last >= n.interval {
			delete(n.flows, k)
			dropped++
		}
	}
	return dropped
}

// Len returns the number of flows with state.
func (n *NP[K]) Len() int { return len(n.flows) }
