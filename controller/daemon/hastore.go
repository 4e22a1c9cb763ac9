package daemon

import (
	"encoding/json"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The desired state in etcd (HA mode), under the prefix:
//
//	conns/<sender_ip>/<udp_src_port>/<receiver_qpn>  one connection, the state file's JSON form
//	ports                                            the port settings changed through the API
//	inc                                              the INC tree's failures told through the API (inc.go)
//	epoch                                            the last leader's epoch (ha.go)
//	leader/<lease>                                   the election (concurrency.Election)
//
// Every write is a transaction that holds only if the term's leader key is
// still there with its create revision: a deposed leader writes nothing.

// load reads the whole state at one revision, while the term leads.
func (h *haState) load(t *term) (*fileState, error) {
	ctx, cancel := h.opContext(t)
	defer cancel()
	tr, err := h.cli.Txn(ctx).If(t.leaderCmp()).
		Then(clientv3.OpGet(h.connsPrefix(), clientv3.WithPrefix()), clientv3.OpGet(h.portsKey()),
			clientv3.OpGet(h.incKey())).
		Else(clientv3.OpGet(t.key)).Commit()
	if err != nil {
		return nil, err
	}
	if !tr.Succeeded {
		t.cancel(errDeposed)
		return nil, errDeposed
	}
	fs := &fileState{Version: stateVersion}
	for _, kv := range tr.Responses[0].GetResponseRange().Kvs {
		var fc fileConnection
		if err := json.Unmarshal(kv.Value, &fc); err != nil {
			return nil, fmt.Errorf("etcd key %s: %w", kv.Key, err)
		}
		if want := h.connKey(&fc); want != string(kv.Key) {
			return nil, fmt.Errorf("etcd key %s holds the connection of key %s", kv.Key, want)
		}
		fs.Connections = append(fs.Connections, fc)
	}
	if kvs := tr.Responses[1].GetResponseRange().Kvs; len(kvs) == 1 {
		if err := json.Unmarshal(kvs[0].Value, &fs.Ports); err != nil {
			return nil, fmt.Errorf("etcd key %s: %w", kvs[0].Key, err)
		}
	}
	if kvs := tr.Responses[2].GetResponseRange().Kvs; len(kvs) == 1 {
		if err := json.Unmarshal(kvs[0].Value, &fs.INC); err != nil {
			return nil, fmt.Errorf("etcd key %s: %w", kvs[0].Key, err)
		}
	}
	return fs, nil
}

// writeLocked writes connection changes (d.mu held for writing): the last
// record of each connection, in fenced transactions of at most maxTxnOps
// operations. A batch larger than that is not atomic: if the term ends in
// the middle, the first transactions hold (the announcements of the rest
// come again with their hosts' refreshes; an API call gets the error).
func (h *haState) writeLocked(recs []logRecord) error {
	t := h.current()
	if t == nil {
		return fmt.Errorf("daemon: state not written: %w", ErrNotPrimary)
	}
	last := make(map[string]int, len(recs))
	keys := make([]string, 0, len(recs))
	for i := range recs {
		k := h.connKey(recs[i].Conn)
		if _, seen := last[k]; !seen {
			keys = append(keys, k)
		}
		last[k] = i
	}
	ops := make([]clientv3.Op, 0, len(keys))
	for _, k := range keys {
		r := recs[last[k]]
		if r.Op == opDelete {
			ops = append(ops, clientv3.OpDelete(k))
			continue
		}
		b, err := json.Marshal(r.Conn)
		if err != nil {
			return fmt.Errorf("daemon: state: %w", err)
		}
		ops = append(ops, clientv3.OpPut(k, string(b)))
	}
	for len(ops) > 0 {
		n := min(len(ops), maxTxnOps)
		if err := h.commit(t, ops[:n]); err != nil {
			return err
		}
		ops = ops[n:]
	}
	return nil
}

// commit runs ops in one transaction fenced on the term's leader key.
func (h *haState) commit(t *term, ops []clientv3.Op) error {
	ctx, cancel := h.opContext(t)
	defer cancel()
	tr, err := h.cli.Txn(ctx).If(t.leaderCmp()).Then(ops...).Else(clientv3.OpGet(t.key)).Commit()
	if err != nil {
		h.m.errs.WithLabelValues("write").Inc()
		return fmt.Errorf("daemon: state not written to etcd: %w", err)
	}
	if !tr.Succeeded {
		t.cancel(errDeposed)
		return fmt.Errorf("daemon: state not written: %w: %w", ErrNotPrimary, errDeposed)
	}
	return nil
}

// saveOverridesLocked writes the port settings changed through the API
// (d.mu held).
func (h *haState) saveOverridesLocked(ov map[string]map[uint16]PortOverride) error {
	t := h.current()
	if t == nil {
		return fmt.Errorf("daemon: state not written: %w", ErrNotPrimary)
	}
	b, err := json.Marshal(ov)
	if err != nil {
		return fmt.Errorf("daemon: state: %w", err)
	}
	return h.commit(t, []clientv3.Op{clientv3.OpPut(h.portsKey(), string(b))})
}

// saveINCLocked writes the INC tree's failures (d.mu held).
func (h *haState) saveINCLocked(f *fileINC) error {
	t := h.current()
	if t == nil {
		return fmt.Errorf("daemon: state not written: %w", ErrNotPrimary)
	}
	if f == nil {
		return h.commit(t, []clientv3.Op{clientv3.OpDelete(h.incKey())})
	}
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("daemon: state: %w", err)
	}
	return h.commit(t, []clientv3.Op{clientv3.OpPut(h.incKey(), string(b))})
}

// flush writes the refresh times not yet saved (the end of a term, as the
// state file's final write).
func (h *haState) flush(t *term) error {
	d := h.d
	d.mu.Lock()
	defer d.mu.Unlock()
	var recs []logRecord
	for _, c := range d.conns.List() {
		if !c.Static && !c.LastSeen.Equal(d.savedSeen[c.ConnKey]) {
			recs = append(recs, putRecord(c))
		}
	}
	if len(recs) == 0 {
		return nil
	}
	if err := h.writeLocked(recs); err != nil {
		return err
	}
	d.noteSavedLocked(recs)
	return nil
}
