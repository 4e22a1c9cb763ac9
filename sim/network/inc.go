package network

import (
	"fmt"
	"sort"
	"time"

	"github.com/fastcnp/fastcnp/host/agent"
	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/sim/engine"
	"github.com/fastcnp/fastcnp/sim/hpcc"
	"github.com/fastcnp/fastcnp/wire"
)

// In-network aggregation (spec 04; spec 06 S4). Workers send their
// contributions through the host agent's agent.INCStream (the same code as
// fastcnp-host); the switches aggregate them in model/pipeline with the INC
// tables a controller function gives (fastcnp-sim's S4 uses fastcnpd's
// fabric.ComputeINCTree); the destinations check every RESULT with
// agent.INCChecker. Links can fail and come back mid-run: frames on a down
// link are lost, and the controller, told NotifyNs later, recomputes the
// tables, which reach the switches one after the other, InstallNs apart.

// INCStream is one worker's connection to a destination carrying INC messages.
type INCStream struct {
	// Src is the worker's node, Dst the destination's (the RESULTs' receiver).
	Src, Dst int
	Stream   *agent.INCStream
	// Message k is posted at StartNs + k*IntervalNs.
	StartNs, IntervalNs int64
	// DupDelayNs is the delay of the injected copies (Stream.DupEvery).
	DupDelayNs int64
}

// INCGroupEntry is an inc_group entry: the children a slot waits for, and
// whether the switch emits the RESULT (the root) or a partial aggregate.
type INCGroupEntry struct {
	Mask uint32
	Root bool
}

// INCTables are a switch's INC entries.
type INCTables struct {
	Groups map[uint16]INCGroupEntry
	// Children: P4 port -> the rank of the child switch behind it (inc_child_port).
	Children map[uint16]uint8
	// Route: bucket -> P4 port of inc_route (nil: none); the MACs are the port's and its peer's.
	Route []uint16
	// SlotTimeout is inc_slot_timeout of every group (0: none).
	SlotTimeout time.Duration
}

// INCController computes every switch's INC tables (by switch node) with the
// topology links down (indexes into Config.Topo.Links) that it knows of.
type INCController func(down []int) (map[int]*INCTables, error)

// LinkEvent takes a link (index into Config.Topo.Links) down or up at AtNs.
type LinkEvent struct {
	AtNs int64
	Link int
	Down bool
}

// INCConfig is the INC part of a run.
type INCConfig struct {
	Streams    []INCStream
	Controller INCController
	Links      []LinkEvent
	// NotifyNs: the controller learns of a link event this long after it;
	// InstallNs: its tables then reach the switches one after the other
	// (in node order), the first InstallNs after it learnt.
	NotifyNs, InstallNs int64
}

// INC event sub-kinds (evINC's B).
const (
	incPost    = iota // A stream: post its next message
	incLink           // A link event
	incInstall        // A switch index, C install number
)

// incState is the run's INC state.
type incState struct {
	cfg     *INCConfig
	first   int // flow id of stream 0
	workers []*incWorker
	msgs    map[incMsgKey]*INCMessageResult
	chk     map[incMsgKey]*agent.INCChecker
	// links: per node and port index, the topology link; down per link.
	linkOf  [][]int
	down    []bool
	lost    []uint64
	pending map[int32]map[int]*INCTables // by computation (link event + 1): tables by switch node, until installed everywhere
	entries [][]*pipeline.TableEntry
	res     INCResult
	dups    [][]incDup // per host index, in due order
}

type incMsgKey struct {
	dst   int
	incID uint32
}

type incWorker struct {
	s      *INCStream
	path   agent.Path
	posted int
	dups   uint64
}

type incDup struct {
	at  int64
	f   *flowState
	seq uint64
}

// INCMessageResult is one INC message as its destination checked it.
type INCMessageResult struct {
	Dst            int    `json:"dst"`
	Group          uint16 `json:"group"`
	Message        uint16 `json:"message"`
	DueNs          int64  `json:"due_ns"`
	FirstNs        int64  `json:"first_result_ns"`
	LastNs         int64  `json:"last_result_ns"`
	Offsets        int    `json:"offsets"`
	agent.INCStats `json:"stats"`
}

// INCSwitchResult is one switch's INC counters (per P4 port, index 0 =
// port 1) and aggregation slots at the end.
type INCSwitchResult struct {
	Node          int      `json:"node"`
	Contributions []uint64 `json:"contributions"` // added to a slot, by ingress port
	Duplicates    []uint64 `json:"duplicates"`
	Results       []uint64 `json:"results"` // aggregates emitted (RESULT or partial), by the port of the completing packet
	SlotBusy      []uint64 `json:"slot_busy"`
	Takeovers     []uint64 `json:"takeovers"`
	Dropped       []uint64 `json:"dropped"`
	SlotsHeld     int      `json:"slots_held"`  // slots with a bitmap (waiting or done)
	SlotsStuck    int      `json:"slots_stuck"` // waiting for children at the end
}

// INCInstall is one switch taking a controller's tables.
type INCInstall struct {
	AtNs int64 `json:"at_ns"`
	Node int   `json:"node"`
	N    int   `json:"n"` // the controller's computation it came from (0: at start)
}

// INCResult is what the INC part of a run measured.
type INCResult struct {
	Messages []INCMessageResult `json:"messages"`
	// Per stream: contributions sent (first copies) and injected copies sent.
	Sent, DupsSent []uint64
	Switches       []INCSwitchResult `json:"switches"`
	// Frames at hosts that should never reach one: partial aggregates and
	// contributions no switch aggregated; RESULTs of no known message.
	PartialsAtHosts, ContributionsAtHosts, StrayResults uint64
	// LinkLost: frames lost on each topology link while it was down.
	LinkLost []uint64     `json:"link_lost"`
	Installs []INCInstall `json:"installs"`
}

// evINC is the INC event kind (sub-kind in B).
const evINC uint16 = 7

func (c *INCConfig) validate(cfg *Config) error {
	bad := func(f string, a ...any) error { return fmt.Errorf("%w: inc: %s", ErrConfig, fmt.Sprintf(f, a...)) }
	t := cfg.Topo
	sw := t.SwitchMask()
	if c.Controller == nil {
		return bad("no controller")
	}
	if cfg.UntilNs <= 0 {
		return bad("INC streams are never acknowledged: the run needs an end (UntilNs)")
	}
	for i, s := range c.Streams {
		switch {
		case s.Src < 0 || s.Src >= t.Nodes || s.Dst < 0 || s.Dst >= t.Nodes || sw[s.Src] || sw[s.Dst] || s.Src == s.Dst:
			return bad("stream %d: %d -> %d is not host to host", i, s.Src, s.Dst)
		case s.Stream == nil:
			return bad("stream %d: no messages", i)
		case s.StartNs < 0 || s.IntervalNs < 0 || s.DupDelayNs < 0:
			return bad("stream %d: negative time", i)
		}
	}
	for i, e := range c.Links {
		if e.Link < 0 || e.Link >= len(t.Links) || e.AtNs < 0 {
			return bad("link event %d: link %d at %d ns", i, e.Link, e.AtNs)
		}
		if i > 0 && e.AtNs < c.Links[i-1].AtNs {
			return bad("link event %d at %d ns comes before the one before it: give them in time order", i, e.AtNs)
		}
	}
	if c.NotifyNs < 0 || c.InstallNs < 0 {
		return bad("negative controller delay")
	}
	if len(cfg.Flows)+len(c.Streams) >= 1<<24-1 {
		return bad("too many flows")
	}
	return nil
}

// incSetup adds the INC streams as flows (after cfg.Flows), the destinations'
// checkers, and installs the controller's tables without failures.
func (n *Network) incSetup(ports [][]portEnd) error {
	c := n.cfg.INC
	st := &incState{cfg: c, first: len(n.flows), msgs: map[incMsgKey]*INCMessageResult{}, chk: map[incMsgKey]*agent.INCChecker{},
		down: make([]bool, len(n.cfg.Topo.Links)), lost: make([]uint64, len(n.cfg.Topo.Links)),
		entries: make([][]*pipeline.TableEntry, len(n.switches)), dups: make([][]incDup, len(n.hosts))}
	n.inc = st
	st.linkOf = make([][]int, len(ports))
	for id := range ports {
		st.linkOf[id] = make([]int, len(ports[id]))
	}
	seen := make([]int, len(ports))
	for l, lk := range n.cfg.Topo.Links {
		st.linkOf[lk.A][seen[lk.A]] = l
		seen[lk.A]++
		st.linkOf[lk.B][seen[lk.B]] = l
		seen[lk.B]++
	}
	if len(n.connFree) == 0 {
		for i := p4src.ConnTableSize - 1; i >= 0; i-- {
			n.connFree = append(n.connFree, uint16(i))
		}
	}
	sport := map[int]int{}
	for _, f := range n.flows {
		sport[f.spec.Src]++
	}
	for k := range c.Streams {
		s := &c.Streams[k]
		id := len(n.flows)
		p := s.Stream.Params
		spec := hpcc.Flow{Src: s.Src, Dst: s.Dst, PG: losslessPriority, StartNs: s.StartNs,
			Size: int64(len(s.Stream.Messages)) * s.Stream.MessageBytes()}
		f := &flowState{net: n, id: id, spec: spec, src: n.hosts[n.hostIdx[s.Src]], dst: n.hosts[n.hostIdx[s.Dst]], conn: -1}
		f.sport = uint16(10000 + sport[s.Src]%55000)
		sport[s.Src]++
		w := &incWorker{s: s, path: agent.Path{SrcMAC: f.src.port.mac, DstMAC: n.peerMAC(f.src), SrcIP: addr4(f.src.ip),
			DstIP: addr4(f.dst.ip), SrcPort: f.sport}}
		f.inc = w
		st.workers = append(st.workers, w)
		n.flows = append(n.flows, f)
		n.schedule(engine.Event{At: s.StartNs, Kind: evFlowStart, A: int32(id)})
		for m, msg := range s.Stream.Messages {
			key := incMsgKey{dst: s.Dst, incID: uint32(p.Group)<<16 | uint32(msg)}
			due := s.StartNs + int64(m)*s.IntervalNs
			if r := st.msgs[key]; r != nil {
				r.DueNs = min(r.DueNs, due)
				continue
			}
			mp := p
			mp.Message = msg
			chk, err := agent.NewINCChecker(mp)
			if err != nil {
				return fmt.Errorf("%w: inc: stream %d: %w", ErrConfig, k, err)
			}
			st.chk[key] = chk
			st.msgs[key] = &INCMessageResult{Dst: s.Dst, Group: p.Group, Message: msg, DueNs: due, Offsets: p.Offsets}
		}
	}
	st.res.Sent, st.res.DupsSent = make([]uint64, len(c.Streams)), make([]uint64, len(c.Streams))
	tables, err := c.Controller(nil)
	if err != nil {
		return fmt.Errorf("%w: inc: controller: %w", ErrConfig, err)
	}
	for _, s := range n.switches {
		if err := n.incInstall(s, tables[s.node], 0, 0); err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	for k, e := range c.Links {
		n.schedule(engine.Event{At: e.AtNs, Kind: evINC, A: int32(k), B: incLink})
	}
	return nil
}

// incInstall replaces switch s's INC entries by t's.
func (n *Network) incInstall(s *Switch, t *INCTables, now int64, num int) error {
	st := n.inc
	for _, e := range st.entries[s.idx] {
		if err := s.pl.DeleteEntry(e); err != nil {
			return fmt.Errorf("switch %d: inc: delete: %w", s.node, err)
		}
	}
	st.entries[s.idx] = st.entries[s.idx][:0]
	st.res.Installs = append(st.res.Installs, INCInstall{AtNs: now, Node: s.node, N: num})
	if t == nil {
		return nil
	}
	x := n.schema
	add := func(table string, ms []match, action string, ps ...param) error {
		e, err := x.entry(table, 0, ms, action, ps...)
		if err != nil {
			return err
		}
		if err := s.pl.InsertEntry(e); err != nil {
			return fmt.Errorf("switch %d: inc: insert into %s: %w", s.node, table, err)
		}
		st.entries[s.idx] = append(st.entries[s.idx], e)
		return nil
	}
	groups := make([]int, 0, len(t.Groups))
	for g := range t.Groups {
		groups = append(groups, int(g))
	}
	sort.Ints(groups)
	for _, g := range groups {
		e := t.Groups[uint16(g)]
		root := uint64(0)
		if e.Root {
			root = 1
		}
		if err := add("inc_group", []match{{name: "group_id", value: uint64(g)}}, "set_inc_group",
			param{"contributors_mask", uint64(e.Mask)}, param{"root", root}); err != nil {
			return err
		}
		if t.SlotTimeout > 0 {
			if err := add("inc_slot_timeout", []match{{name: "group_id", value: uint64(g)}}, "set_inc_slot_timeout",
				param{"timeout_ns", uint64(t.SlotTimeout)}); err != nil {
				return err
			}
		}
	}
	children := make([]int, 0, len(t.Children))
	for p := range t.Children {
		children = append(children, int(p))
	}
	sort.Ints(children)
	for _, p := range children {
		if err := add("inc_child_port", []match{{name: "port", value: uint64(p)}}, "set_inc_child",
			param{"child_rank", uint64(t.Children[uint16(p)])}); err != nil {
			return err
		}
	}
	for b, port := range t.Route {
		if port < 1 || int(port) > len(s.ports) {
			return fmt.Errorf("switch %d: inc: bucket %d: no port %d", s.node, b, port)
		}
		pe := &s.ports[port-1]
		h := nextHop{port: port, srcMAC: macU64(pe.mac), dstMAC: macU64(macOf(pe.peer, pe.peerPort))}
		if err := add("inc_route", []match{{name: "bucket", value: uint64(b)}}, "set_nexthop", x.nextHopParams(h)...); err != nil {
			return err
		}
	}
	return nil
}

// incEvent runs an INC event.
func (n *Network) incEvent(ev *engine.Event) {
	st := n.inc
	switch ev.B {
	case incPost:
		n.incPost(n.flows[st.first+int(ev.A)], ev.At)
	case incLink:
		e := st.cfg.Links[ev.A]
		st.down[e.Link] = e.Down
		n.schedule(engine.Event{At: ev.At + st.cfg.NotifyNs, Kind: evINC, A: ev.A, B: incInstall, C: -1})
	case incInstall:
		if ev.C < 0 {
			// The controller learns of link event A: it recomputes from
			// every link event it has learnt of by now.
			var down []int
			known := map[int]bool{}
			for _, e := range st.cfg.Links {
				if e.AtNs+st.cfg.NotifyNs <= ev.At {
					known[e.Link] = e.Down
				}
			}
			for l, d := range known {
				if d {
					down = append(down, l)
				}
			}
			sort.Ints(down)
			t, err := st.cfg.Controller(down)
			if err != nil {
				n.fail(fmt.Errorf("inc: controller at %d ns: %w", ev.At, err))
				return
			}
			if st.pending == nil {
				st.pending = map[int32]map[int]*INCTables{}
			}
			st.pending[ev.A+1] = t
			for k, s := range n.switches {
				n.schedule(engine.Event{At: ev.At + int64(k+1)*st.cfg.InstallNs, Kind: evINC, A: int32(s.idx), B: incInstall, C: ev.A + 1})
			}
			return
		}
		s := n.switches[ev.A]
		if err := n.incInstall(s, st.pending[ev.C][s.node], ev.At, int(ev.C)); err != nil {
			n.fail(err)
		}
	}
}

// incLost reports whether a frame arriving at port of node is lost on a down
// link (and accounts it).
func (n *Network) incLost(node, port int, i int32) bool {
	st := n.inc
	if st == nil {
		return false
	}
	l := st.linkOf[node][port]
	if !st.down[l] {
		return false
	}
	st.lost[l]++
	c, b := n.pool.s(i).cls, int(n.pool.s(i).n)
	n.acct.landed(c, b)
	n.acct.dropped(c, b)
	n.pool.put(i)
	return true
}

// startINC starts worker flow f: its sender, its connection (the INC uplink
// flag on the switch it is behind, as fastcnpd installs it) and message 0.
func (n *Network) startINC(f *flowState, now int64) error {
	w := f.inc
	ms, _ := n.cfg.Mode.spec()
	c, err := n.ccConfig(f.src, ms)
	if err != nil {
		return fmt.Errorf("inc flow %d: %w", f.id, err)
	}
	c.MTU = int64(agent.RoCEOverhead + agent.INCPayload(true))
	alg, err := cc.New(ms.algorithm, c)
	if err != nil {
		return fmt.Errorf("inc flow %d: %w", f.id, err)
	}
	snd, err := agent.NewSender(w.s.Stream.SenderConfig(agent.SenderConfig{LineGap: fcsBytes + wire.PreambleIFGBytes,
		AckEvery: n.cfg.AckEvery, BurstPackets: 1}), alg)
	if err != nil {
		return fmt.Errorf("inc flow %d: %w", f.id, err)
	}
	f.alg, f.snd, f.started = alg, snd, true
	f.stats.Start = now
	if len(n.connFree) == 0 {
		return fmt.Errorf("inc flow %d: connection table full", f.id)
	}
	idx := n.connFree[len(n.connFree)-1]
	n.connFree = n.connFree[:len(n.connFree)-1]
	f.conn = int(idx)
	p := w.s.Stream.Params
	for _, s := range n.switches {
		flags := uint64(p4src.ConnFlagCNPTarget)
		if s.node == f.src.port.peer {
			flags |= p4src.ConnFlagIncUplink
		}
		if err := n.schema.insert(s.pl, "rdma_connection", 0, []match{{name: "src_addr", value: uint64(f.src.ip)},
			{name: "udp_sport", value: uint64(f.sport)}, {name: "dest_qp", value: uint64(f.qpn())}}, "set_connection",
			param{"sender_qpn", uint64(f.qpn())}, param{"flags", flags}, param{"conn_index", uint64(idx)},
			param{"inc_group", uint64(p.Group)}, param{"worker_rank", uint64(p.Rank)}); err != nil {
			return fmt.Errorf("switch %d: inc flow %d: %w", s.node, f.id, err)
		}
	}
	if f.src.held {
		if err := snd.Hold(dur(now), true); err != nil {
			return fmt.Errorf("inc flow %d: %w", f.id, err)
		}
	}
	f.src.qps = append(f.src.qps, f)
	n.incPost(f, now)
	return nil
}

// incPost posts the worker's next message (all due ones) and schedules the one after.
func (n *Network) incPost(f *flowState, now int64) {
	w := f.inc
	s := w.s
	for w.posted < len(s.Stream.Messages) && s.StartNs+int64(w.posted)*s.IntervalNs <= now {
		if err := f.snd.Post(dur(now), s.Stream.MessageBytes()); err != nil {
			n.fail(fmt.Errorf("inc flow %d: message %d: %w", f.id, s.Stream.Messages[w.posted], err))
			return
		}
		w.posted++
	}
	if w.posted < len(s.Stream.Messages) {
		n.schedule(engine.Event{At: s.StartNs + int64(w.posted)*s.IntervalNs, Kind: evINC, A: int32(f.id - n.inc.first), B: incPost})
	}
	f.wake = now
	f.src.kick(now)
}

// incFrame builds worker f's contribution pkt into a new slot and queues its
// injected copy if it gets one.
func (n *Network) incFrame(f *flowState, pkt *agent.Packet, now int64) int32 {
	w := f.inc
	i := n.pool.get(0)
	m, err := w.s.Stream.Build(n.pool.buf(i), &w.path, f.qpn(), f.snd, *pkt)
	if err != nil {
		n.fail(fmt.Errorf("inc flow %d: %w", f.id, err))
	}
	n.pool.s(i).n, n.pool.s(i).cls = int32(m), losslessPriority
	f.stats.PacketsSent++
	k := f.id - n.inc.first
	n.inc.res.Sent[k]++
	if w.s.Stream.Dup(pkt.Seq) {
		h := f.src.idx
		n.inc.dups[h] = append(n.inc.dups[h], incDup{at: now + w.s.DupDelayNs, f: f, seq: pkt.Seq})
	}
	return i
}

// incDupNext sends host h's injected copy that is due at now (reporting -1)
// or returns when the next is due (engine.Never: none).
func (h *Host) incDupNext(now int64) int64 {
	st := h.net.inc
	if st == nil || len(st.dups[h.idx]) == 0 {
		return engine.Never
	}
	d := st.dups[h.idx][0]
	if d.at > now {
		return d.at
	}
	st.dups[h.idx] = st.dups[h.idx][1:]
	n := h.net
	f := d.f
	i := n.pool.get(0)
	m, err := f.inc.s.Stream.Build(n.pool.buf(i), &f.inc.path, f.qpn(), f.snd, agent.Packet{Seq: d.seq, PSN: f.snd.PSNOf(d.seq)})
	if err != nil {
		n.fail(fmt.Errorf("inc flow %d: copy: %w", f.id, err))
	}
	n.pool.s(i).n, n.pool.s(i).cls = int32(m), losslessPriority
	st.res.DupsSent[f.id-st.first]++
	h.put(i, now)
	return -1
}

// incArrive handles an INC frame at host h: a RESULT is checked by its
// message's checker; partial aggregates and contributions are counted (no
// host should receive them).
func (h *Host) incArrive(ev *agent.Event, now int64) {
	st := h.net.inc
	if st == nil {
		h.stats.Stray++
		return
	}
	switch ev.Kind {
	case agent.KindINCPartial:
		st.res.PartialsAtHosts++
		return
	case agent.KindINC:
		st.res.ContributionsAtHosts++
		return
	}
	key := incMsgKey{dst: h.node, incID: ev.IDs.INCID()}
	c := st.chk[key]
	if !ev.HasIDs || c == nil {
		st.res.StrayResults++
		return
	}
	r := st.msgs[key]
	if r.FirstNs == 0 {
		r.FirstNs = now
	}
	r.LastNs = now
	c.OnResult(&ev.IDs, &ev.Vector)
}

// incRewrote puts the frame ingress made (an INC aggregate) into slot i.
func (n *Network) incRewrote(i int32, frame []byte) error {
	if len(frame) > slotBytes {
		return fmt.Errorf("an aggregate of %d bytes outgrew its slot", len(frame))
	}
	old := int(n.pool.s(i).n)
	copy(n.pool.buf(i), frame)
	n.pool.s(i).n = int32(len(frame))
	// The switch made (or removed) the difference: the account keeps closing.
	c := &n.acct.cls[n.pool.s(i).cls].Sent
	c.Bytes = uint64(int64(c.Bytes) + int64(len(frame)-old))
	return nil
}

// incResult collects the INC part of the result.
func (n *Network) incResult() *INCResult {
	st := n.inc
	if st == nil {
		return nil
	}
	r := st.res
	r.LinkLost = append([]uint64(nil), st.lost...)
	keys := make([]incMsgKey, 0, len(st.msgs))
	for k := range st.msgs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		if keys[a].dst != keys[b].dst {
			return keys[a].dst < keys[b].dst
		}
		return keys[a].incID < keys[b].incID
	})
	for _, k := range keys {
		m := *st.msgs[k]
		m.INCStats = st.chk[k].Stats()
		r.Messages = append(r.Messages, m)
	}
	read := func(s *Switch, id uint32) []uint64 {
		v, err := s.pl.ReadCounter(id, -1, nil)
		if err != nil {
			n.fail(err)
			return nil
		}
		out := make([]uint64, len(s.ports))
		for _, c := range v {
			if c.Index >= 1 && c.Index <= len(s.ports) {
				out[c.Index-1] = c.Packets
			}
		}
		return out
	}
	for _, s := range n.switches {
		sr := INCSwitchResult{Node: s.node, Contributions: read(s, p4src.CounterIncContributions),
			Duplicates: read(s, p4src.CounterIncDuplicates), Results: read(s, p4src.CounterIncResults),
			SlotBusy: read(s, p4src.CounterIncSlotBusy), Takeovers: read(s, p4src.CounterIncSlotTakeovers),
			Dropped: read(s, p4src.CounterDropped)}
		bm, err1 := s.pl.ReadRegister(p4src.RegIncSlotBitmap, -1, nil)
		done, err2 := s.pl.ReadRegister(p4src.RegIncSlotDone, -1, nil)
		if err1 != nil || err2 != nil {
			n.fail(fmt.Errorf("switch %d: inc slots: %v %v", s.node, err1, err2))
			continue
		}
		for j := range bm {
			if bm[j].Value != 0 {
				sr.SlotsHeld++
				if done[j].Value == 0 {
					sr.SlotsStuck++
				}
			}
		}
		r.Switches = append(r.Switches, sr)
	}
	return &r
}
