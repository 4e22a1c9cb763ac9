package pipeline

import (
	"fmt"
	"slices"

	"github.com/fastcnp/fastcnp/p4src"
)

// maxKeys and maxParams bound the key fields of a table and the parameters of an
// action in this program (rdma_connection has 3 keys, set_port_config 15 params).
const (
	maxKeys   = 3
	maxParams = pcCount
)

// FieldMatch is one field of a match key, P4Runtime style. Exact: Value. LPM: Value and
// PrefixLen (1..width; a zero-length prefix is expressed by omitting the field).
// Ternary: Value and Mask (non-zero; a don't-care is expressed by omitting the field).
// Values must be canonical: below 2^width, Value&^Mask == 0, LPM bits beyond the
// prefix 0.
type FieldMatch struct {
	FieldID   uint32
	Value     uint64
	Mask      uint64
	PrefixLen int32
}

// Param is one action parameter value.
type Param struct {
	ID    uint32
	Value uint64
}

// Action is an action with its parameters (all of them, any order).
type Action struct {
	ID     uint32
	Params []Param
}

// TableEntry is a table entry, P4Runtime style. Priority is > 0 for tables with a
// ternary field (highest wins) and 0 otherwise. An entry of a direct table runs
// Action; an entry of a table with an action profile (TableInfo.ProfileID) runs
// exactly one of: member MemberID, group GroupID (of that profile), or the one-shot
// action set OneShot (an anonymous group); its Action is then empty.
type TableEntry struct {
	TableID  uint32
	Match    []FieldMatch
	Priority int32
	Action   Action
	MemberID uint32
	GroupID  uint32
	OneShot  []WeightedAction
}

// entryKey identifies an entry (canonical values, masks, priority).
type entryKey struct {
	v    [maxKeys]uint64
	m    [maxKeys]uint64
	prio int32
}

// entry is a table entry; what a lookup reads (the action and its first
// parameters) comes first, so that a hit touches as few cache lines as possible.
type entry struct {
	action uint32
	plen   int32 // LPM prefix length (LPM tables)
	params [maxParams]uint64
	// Indirect tables: the member or the group (a one-shot's has ID 0) it runs.
	member *apMember
	group  *apGroup
	em     [maxKeys]uint64 // effective match masks: all ones for exact fields
	key    entryKey
	used   bool
	// 256 bytes in all: an entry starts on a cache line (Go places the slice on a
	// 64-byte boundary), so the action and its first seven parameters are one line.
	_ [24]byte
}

// ternaryRow is what a ternary lookup compares, for one entry in priority order:
// the scan reads these rows one after the other instead of each entry's key
// fields (a line or two of a 256-byte entry each).
type ternaryRow struct {
	em, v [maxKeys]uint64
	idx   int32
}

// table is one table. What a data-path lookup reads comes first (the per-length
// LPM indexes, 1.3 KB, last): a lookup in a cold table touches few cache lines.
type table struct {
	entries []entry
	// ternary: entry indexes, highest priority first (stable for equal priorities),
	// and their keys in that order (setOrder).
	tern  []ternaryRow
	order []int32
	// LPM: lens lists the prefix lengths in use, longest first; lpm (below) maps
	// per prefix length the masked value to an entry index.
	lens []int32
	// The data path's index of an all-exact table (byKey stays the control plane's):
	// direct, for one field of at most 16 bits, is indexed by the value (-1: no
	// entry; allocated at the first insert); packed maps the values packed in 128
	// bits (field 0 in hi, the others in lo), when they fit.
	direct    []int32
	packed    flatIndex
	hasPacked bool
	lowW      uint // width of field 2 (field 1 is shifted by it in lo)
	defAction uint32
	// gen changes with every write to the table (entries, default action): caches
	// of what a lookup returns are valid while it stays the same.
	gen       uint64
	defParams [maxParams]uint64

	info  *TableInfo
	free  []int32
	byKey map[entryKey]int32
	lpm   [33]flatIndex
}

func newTable(info *TableInfo) *table {
	t := &table{
		info:      info,
		entries:   make([]entry, info.Size),
		free:      make([]int32, 0, info.Size),
		byKey:     make(map[entryKey]int32, info.Size),
		defAction: info.DefaultAction,
		gen:       1,
	}
	for i := info.Size - 1; i >= 0; i-- {
		t.free = append(t.free, int32(i))
	}
	t.initIndex()
	return t
}

// packedKey is an exact key packed into 128 bits.
type packedKey struct{ hi, lo uint64 }

// initIndex chooses the data path's index of an all-exact table.
func (t *table) initIndex() {
	keys := t.info.Keys
	if len(keys) == 0 {
		return
	}
	for _, k := range keys {
		if k.Kind != MatchExact || k.Bitwidth > 64 {
			return
		}
	}
	if len(keys) == 1 && keys[0].Bitwidth <= 16 {
		t.direct = []int32{} // allocated at the first insert
		return
	}
	low := 0
	for _, k := range keys[1:] {
		low += k.Bitwidth
	}
	if low > 64 {
		return
	}
	if len(keys) == 3 {
		t.lowW = uint(keys[2].Bitwidth)
	}
	t.hasPacked = true
}

func (t *table) pack(v0, v1, v2 uint64) packedKey { return packedKey{v0, v1<<t.lowW | v2} }

// indexSet records (idx >= 0) or removes (idx < 0) the entry with key k in the
// data path's index.
func (t *table) indexSet(k entryKey, idx int32) {
	switch {
	case t.direct != nil:
		if len(t.direct) == 0 {
			t.direct = make([]int32, 1<<t.info.Keys[0].Bitwidth)
			for i := range t.direct {
				t.direct[i] = -1
			}
		}
		t.direct[k.v[0]] = idx
	case t.hasPacked:
		pk := t.pack(k.v[0], k.v[1], k.v[2])
		if idx < 0 {
			t.packed.del(pk.hi, pk.lo)
			return
		}
		t.packed.set(pk.hi, pk.lo, idx)
	}
}

func (t *table) isLPM() bool { return len(t.info.Keys) == 1 && t.info.Keys[0].Kind == MatchLPM }

func widthMask(w int) uint64 { return uint64(1)<<uint(w) - 1 }

func prefixMask(plen, width int32) uint64 {
	if plen == 0 {
		return 0
	}
	return widthMask(int(width)) &^ widthMask(int(width-plen))
}

// canonKey validates e.Match and e.Priority against the table and returns the key.
func (t *table) canonKey(e *TableEntry) (entryKey, int32, error) {
	var k entryKey
	var plen int32
	seen := [maxKeys]bool{}
	for _, fm := range e.Match {
		idx := -1
		for i, kf := range t.info.Keys {
			if kf.ID == fm.FieldID {
				idx = i
			}
		}
		if idx < 0 {
			return k, 0, fmt.Errorf("table %s: unknown match field ID %d: %w", t.info.Name, fm.FieldID, ErrInvalidArgument)
		}
		kf := t.info.Keys[idx]
		if seen[idx] {
			return k, 0, fmt.Errorf("table %s: match field %s repeated: %w", t.info.Name, kf.Name, ErrInvalidArgument)
		}
		seen[idx] = true
		wm := widthMask(kf.Bitwidth)
		if fm.Value&^wm != 0 {
			return k, 0, fmt.Errorf("table %s: field %s value %#x wider than %d bits: %w", t.info.Name, kf.Name, fm.Value, kf.Bitwidth, ErrInvalidArgument)
		}
		switch kf.Kind {
		case MatchExact:
			if fm.Mask != 0 || fm.PrefixLen != 0 {
				return k, 0, fmt.Errorf("table %s: field %s is exact (no mask or prefix): %w", t.info.Name, kf.Name, ErrInvalidArgument)
			}
			k.v[idx] = fm.Value
		case MatchLPM:
			if fm.Mask != 0 {
				return k, 0, fmt.Errorf("table %s: field %s is lpm (no mask): %w", t.info.Name, kf.Name, ErrInvalidArgument)
			}
			if fm.PrefixLen <= 0 || int(fm.PrefixLen) > kf.Bitwidth {
				return k, 0, fmt.Errorf("table %s: field %s prefix length %d not in 1..%d (omit the field for /0): %w", t.info.Name, kf.Name, fm.PrefixLen, kf.Bitwidth, ErrInvalidArgument)
			}
			pm := prefixMask(fm.PrefixLen, int32(kf.Bitwidth))
			if fm.Value&^pm != 0 {
				return k, 0, fmt.Errorf("table %s: field %s value %#x has bits beyond its /%d prefix: %w", t.info.Name, kf.Name, fm.Value, fm.PrefixLen, ErrInvalidArgument)
			}
			k.v[idx], k.m[idx], plen = fm.Value, pm, fm.PrefixLen
		case MatchTernary:
			if fm.PrefixLen != 0 {
				return k, 0, fmt.Errorf("table %s: field %s is ternary (no prefix): %w", t.info.Name, kf.Name, ErrInvalidArgument)
			}
			if fm.Mask == 0 || fm.Mask&^wm != 0 {
				return k, 0, fmt.Errorf("table %s: field %s mask %#x must be non-zero (omit a don't-care) and within %d bits: %w", t.info.Name, kf.Name, fm.Mask, kf.Bitwidth, ErrInvalidArgument)
			}
			if fm.Value&^fm.Mask != 0 {
				return k, 0, fmt.Errorf("table %s: field %s value %#x has bits outside mask %#x: %w", t.info.Name, kf.Name, fm.Value, fm.Mask, ErrInvalidArgument)
			}
			k.v[idx], k.m[idx] = fm.Value, fm.Mask
		}
	}
	for i, kf := range t.info.Keys {
		if kf.Kind == MatchExact && !seen[i] {
			return k, 0, fmt.Errorf("table %s: exact field %s missing: %w", t.info.Name, kf.Name, ErrInvalidArgument)
		}
	}
	if t.info.NeedsPriority() {
		if e.Priority <= 0 {
			return k, 0, fmt.Errorf("table %s: priority %d must be > 0: %w", t.info.Name, e.Priority, ErrInvalidArgument)
		}
		k.prio = e.Priority
	} else if e.Priority != 0 {
		return k, 0, fmt.Errorf("table %s: priority %d must be 0 (no ternary field): %w", t.info.Name, e.Priority, ErrInvalidArgument)
	}
	return k, plen, nil
}

// canonAction validates an action for the table and returns its parameter values.
func canonAction(ti *TableInfo, a *Action) ([maxParams]uint64, error) {
	if !slices.Contains(ti.ActionIDs, a.ID) {
		return [maxParams]uint64{}, fmt.Errorf("table %s: action ID %#x not an action of the table: %w", ti.Name, a.ID, ErrInvalidArgument)
	}
	return checkParams(a)
}

// checkParams validates the parameters of an action of the program.
func checkParams(a *Action) ([maxParams]uint64, error) {
	var out [maxParams]uint64
	ai, ok := schema.Action(a.ID)
	if !ok {
		return out, fmt.Errorf("action ID %#x: %w", a.ID, ErrInvalidArgument)
	}
	if len(a.Params) != len(ai.Params) {
		return out, fmt.Errorf("action %s: %d params given, %d expected: %w", ai.Name, len(a.Params), len(ai.Params), ErrInvalidArgument)
	}
	var seen [maxParams]bool
	for _, p := range a.Params {
		if p.ID == 0 || int(p.ID) > len(ai.Params) {
			return out, fmt.Errorf("action %s: unknown param ID %d: %w", ai.Name, p.ID, ErrInvalidArgument)
		}
		pi := ai.Params[p.ID-1]
		if seen[p.ID-1] {
			return out, fmt.Errorf("action %s: param %s repeated: %w", ai.Name, pi.Name, ErrInvalidArgument)
		}
		seen[p.ID-1] = true
		if p.Value&^widthMask(pi.Bitwidth) != 0 {
			return out, fmt.Errorf("action %s: param %s value %#x wider than %d bits: %w", ai.Name, pi.Name, p.Value, pi.Bitwidth, ErrInvalidArgument)
		}
		out[p.ID-1] = p.Value
	}
	// Values the data plane uses as register indexes or shift counts must stay in range.
	if a.ID == p4src.ActionSetConnection {
		if out[2] >= p4src.ConnTableSize {
			return out, fmt.Errorf("action %s: conn_index %d >= CONN_TABLE_SIZE %d: %w", ai.Name, out[2], p4src.ConnTableSize, ErrInvalidArgument)
		}
		if out[4] >= 32 {
			return out, fmt.Errorf("action %s: worker_rank %d >= 32 (bitmap width): %w", ai.Name, out[4], ErrInvalidArgument)
		}
	}
	if a.ID == p4src.ActionSetIncChild && out[0] >= 32 {
		return out, fmt.Errorf("action %s: child_rank %d >= 32 (bitmap width): %w", ai.Name, out[0], ErrInvalidArgument)
	}
	return out, nil
}

func (p *Pipeline) table(id uint32) (*table, error) {
	for _, t := range p.tables {
		if t.info.ID == id {
			return t, nil
		}
	}
	return nil, fmt.Errorf("table ID %#x: %w", id, ErrInvalidArgument)
}

// entryRun is what an entry runs: an action (direct tables) or a member or group of
// the table's action profile.
type entryRun struct {
	action uint32
	params [maxParams]uint64
	member *apMember
	group  *apGroup
}

// entryRun validates what e runs for table t. For an indirect table it resolves the
// member or group (ErrNotFound when it does not exist) or builds the one-shot group.
func (p *Pipeline) entryRun(t *table, e *TableEntry) (entryRun, error) {
	ti := t.info
	refs := 0
	for _, set := range []bool{e.MemberID != 0, e.GroupID != 0, len(e.OneShot) > 0} {
		if set {
			refs++
		}
	}
	if ti.ProfileID == 0 {
		if refs > 0 {
			return entryRun{}, fmt.Errorf("table %s has no action profile: an entry runs an action: %w", ti.Name, ErrInvalidArgument)
		}
		if slices.Contains(ti.DefaultOnly, e.Action.ID) {
			return entryRun{}, fmt.Errorf("table %s: action %#x is default-only: %w", ti.Name, e.Action.ID, ErrInvalidArgument)
		}
		params, err := canonAction(ti, &e.Action)
		return entryRun{action: e.Action.ID, params: params}, err
	}
	if refs != 1 || e.Action.ID != 0 || len(e.Action.Params) > 0 {
		return entryRun{}, fmt.Errorf("table %s has an action selector: an entry runs exactly one member, group or one-shot action set, not an action: %w", ti.Name, ErrInvalidArgument)
	}
	pr, err := p.profile(ti.ProfileID)
	if err != nil {
		return entryRun{}, err
	}
	switch {
	case e.MemberID != 0:
		mb, ok := pr.members[e.MemberID]
		if !ok {
			return entryRun{}, fmt.Errorf("table %s: %s has no member %d: %w", ti.Name, pr.info.Name, e.MemberID, ErrNotFound)
		}
		return entryRun{member: mb}, nil
	case e.GroupID != 0:
		g, ok := pr.groups[e.GroupID]
		if !ok {
			return entryRun{}, fmt.Errorf("table %s: %s has no group %d: %w", ti.Name, pr.info.Name, e.GroupID, ErrNotFound)
		}
		return entryRun{group: g}, nil
	}
	g, err := pr.oneShot(e.OneShot)
	if err != nil {
		return entryRun{}, fmt.Errorf("table %s: %w", ti.Name, err)
	}
	return entryRun{group: g}, nil
}

// use counts (delta 1) or uncounts (-1) the member or group an entry runs; a
// one-shot group's weight counts against its profile.
func (p *Pipeline) use(t *table, member *apMember, group *apGroup, delta int) {
	switch {
	case member != nil:
		member.entries += delta
	case group != nil && group.id == 0:
		if pr, err := p.profile(t.info.ProfileID); err == nil {
			pr.weight += delta * group.weight
			pr.oneShots += delta
		}
	case group != nil:
		group.entries += delta
	}
}

// InsertEntry adds an entry. Errors: ErrInvalidArgument, ErrAlreadyExists,
// ErrResourceExhausted (table full, or a one-shot beyond the profile's size),
// ErrNotFound (the member or group of an indirect entry does not exist).
func (p *Pipeline) InsertEntry(e *TableEntry) error {
	t, err := p.table(e.TableID)
	if err != nil {
		return fmt.Errorf("insert: %w", err)
	}
	k, plen, err := t.canonKey(e)
	if err != nil {
		return fmt.Errorf("insert: %w", err)
	}
	run, err := p.entryRun(t, e)
	if err != nil {
		return fmt.Errorf("insert: %w", err)
	}
	if _, dup := t.byKey[k]; dup {
		return fmt.Errorf("insert: table %s: entry exists: %w", t.info.Name, ErrAlreadyExists)
	}
	if len(t.free) == 0 {
		return fmt.Errorf("insert: table %s full (%d entries): %w", t.info.Name, t.info.Size, ErrResourceExhausted)
	}
	idx := t.free[len(t.free)-1]
	t.free = t.free[:len(t.free)-1]
	t.gen++
	t.entries[idx] = entry{used: true, key: k, plen: plen, action: run.action, params: run.params, member: run.member, group: run.group}
	p.use(t, run.member, run.group, 1)
	for i, kf := range t.info.Keys {
		t.entries[idx].em[i] = k.m[i]
		if kf.Kind == MatchExact {
			t.entries[idx].em[i] = widthMask(kf.Bitwidth)
		}
	}
	t.byKey[k] = idx
	t.indexSet(k, idx)
	switch {
	case t.isLPM():
		m := &t.lpm[plen]
		if m.n == 0 {
			t.lens = append(t.lens, plen)
			slices.SortFunc(t.lens, func(a, b int32) int { return int(b - a) })
		}
		m.set(0, uint64(uint32(k.v[0])), idx)
	case t.info.NeedsPriority():
		pos, _ := slices.BinarySearchFunc(t.order, k.prio, func(i int32, prio int32) int {
			if t.entries[i].key.prio >= prio {
				return -1
			}
			return 1
		})
		t.setOrder(slices.Insert(t.order, pos, idx))
	}
	return nil
}

// ModifyEntry replaces the action of an existing entry. Errors: ErrInvalidArgument,
// ErrNotFound.
func (p *Pipeline) ModifyEntry(e *TableEntry) error {
	t, err := p.table(e.TableID)
	if err != nil {
		return fmt.Errorf("modify: %w", err)
	}
	k, _, err := t.canonKey(e)
	if err != nil {
		return fmt.Errorf("modify: %w", err)
	}
	idx, ok := t.byKey[k]
	if !ok {
		return fmt.Errorf("modify: table %s: no such entry: %w", t.info.Name, ErrNotFound)
	}
	en := &t.entries[idx]
	// A one-shot being replaced frees its weight for the new one.
	old := en.group
	if old != nil && old.id == 0 {
		p.use(t, nil, old, -1)
	}
	run, err := p.entryRun(t, e)
	if err != nil {
		if old != nil && old.id == 0 {
			p.use(t, nil, old, 1)
		}
		return fmt.Errorf("modify: %w", err)
	}
	if old == nil || old.id != 0 {
		p.use(t, en.member, en.group, -1)
	}
	t.gen++
	en.action, en.params, en.member, en.group = run.action, run.params, run.member, run.group
	p.use(t, run.member, run.group, 1)
	return nil
}

// DeleteEntry removes the entry with e's match key (and priority); e.Action is ignored.
// Errors: ErrInvalidArgument, ErrNotFound.
func (p *Pipeline) DeleteEntry(e *TableEntry) error {
	t, err := p.table(e.TableID)
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	k, plen, err := t.canonKey(e)
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	idx, ok := t.byKey[k]
	if !ok {
		return fmt.Errorf("delete: table %s: no such entry: %w", t.info.Name, ErrNotFound)
	}
	p.use(t, t.entries[idx].member, t.entries[idx].group, -1)
	delete(t.byKey, k)
	t.indexSet(k, -1)
	switch {
	case t.isLPM():
		m := &t.lpm[plen]
		m.del(0, uint64(uint32(k.v[0])))
		if m.n == 0 {
			t.lens = slices.DeleteFunc(t.lens, func(l int32) bool { return l == plen })
		}
	case t.info.NeedsPriority():
		t.setOrder(slices.DeleteFunc(t.order, func(i int32) bool { return i == idx }))
	}
	t.gen++
	t.entries[idx] = entry{}
	t.free = append(t.free, idx)
	return nil
}

func (t *table) toEntry(en *entry) TableEntry {
	out := TableEntry{TableID: t.info.ID, Priority: en.key.prio}
	for i, kf := range t.info.Keys {
		switch kf.Kind {
		case MatchExact:
			out.Match = append(out.Match, FieldMatch{FieldID: kf.ID, Value: en.key.v[i]})
		case MatchLPM:
			if en.plen > 0 {
				out.Match = append(out.Match, FieldMatch{FieldID: kf.ID, Value: en.key.v[i], PrefixLen: en.plen})
			}
		case MatchTernary:
			if en.key.m[i] != 0 {
				out.Match = append(out.Match, FieldMatch{FieldID: kf.ID, Value: en.key.v[i], Mask: en.key.m[i]})
			}
		}
	}
	switch {
	case en.member != nil:
		out.MemberID = en.member.id
	case en.group != nil && en.group.id != 0:
		out.GroupID = en.group.id
	case en.group != nil:
		out.OneShot = slices.Clone(en.group.set)
	default:
		out.Action = makeAction(en.action, &en.params)
	}
	return out
}

func makeAction(id uint32, params *[maxParams]uint64) Action {
	a := Action{ID: id}
	ai, _ := schema.Action(id)
	for i, pi := range ai.Params {
		a.Params = append(a.Params, Param{ID: pi.ID, Value: params[i]})
	}
	return a
}

// ReadEntries appends to dst the entries of table tableID (0: every table), in
// insertion-slot order; a wildcard read as in P4Runtime. Errors: ErrInvalidArgument.
func (p *Pipeline) ReadEntries(tableID uint32, dst []TableEntry) ([]TableEntry, error) {
	for _, t := range p.tables {
		if tableID != 0 && t.info.ID != tableID {
			continue
		}
		for i := range t.entries {
			if t.entries[i].used {
				dst = append(dst, t.toEntry(&t.entries[i]))
			}
		}
		if tableID != 0 {
			return dst, nil
		}
	}
	if tableID != 0 {
		return dst, fmt.Errorf("read: table ID %#x: %w", tableID, ErrInvalidArgument)
	}
	return dst, nil
}

// ReadEntry returns the entry with e's match key (and priority). Errors:
// ErrInvalidArgument, ErrNotFound.
func (p *Pipeline) ReadEntry(e *TableEntry) (TableEntry, error) {
	t, err := p.table(e.TableID)
	if err != nil {
		return TableEntry{}, fmt.Errorf("read: %w", err)
	}
	k, _, err := t.canonKey(e)
	if err != nil {
		return TableEntry{}, fmt.Errorf("read: %w", err)
	}
	idx, ok := t.byKey[k]
	if !ok {
		return TableEntry{}, fmt.Errorf("read: table %s: no such entry: %w", t.info.Name, ErrNotFound)
	}
	return t.toEntry(&t.entries[idx]), nil
}

// EntryCount returns the number of entries installed in a table.
func (p *Pipeline) EntryCount(tableID uint32) (int, error) {
	t, err := p.table(tableID)
	if err != nil {
		return 0, fmt.Errorf("entry count: %w", err)
	}
	return len(t.byKey), nil
}

// SetDefaultAction changes a table's default action (P4Runtime MODIFY with
// is_default_action). Errors: ErrInvalidArgument, ErrPermissionDenied (const default).
func (p *Pipeline) SetDefaultAction(tableID uint32, a *Action) error {
	t, err := p.table(tableID)
	if err != nil {
		return fmt.Errorf("set default: %w", err)
	}
	if t.info.ConstDefault {
		return fmt.Errorf("set default: table %s has a const default action: %w", t.info.Name, ErrPermissionDenied)
	}
	if t.info.ProfileID != 0 && !slices.Contains(t.info.DefaultOnly, a.ID) {
		return fmt.Errorf("set default: table %s has an action selector: its default can only be %#x: %w", t.info.Name, t.info.DefaultOnly, ErrInvalidArgument)
	}
	params, err := canonAction(t.info, a)
	if err != nil {
		return fmt.Errorf("set default: %w", err)
	}
	t.gen++
	t.defAction, t.defParams = a.ID, params
	return nil
}

// ResetDefaultAction restores the program's default action of a table (P4Runtime MODIFY
// of the default entry without an action). Errors: ErrInvalidArgument.
func (p *Pipeline) ResetDefaultAction(tableID uint32) error {
	t, err := p.table(tableID)
	if err != nil {
		return fmt.Errorf("reset default: %w", err)
	}
	t.gen++
	t.defAction, t.defParams = t.info.DefaultAction, [maxParams]uint64{}
	return nil
}

// DefaultAction returns a table's current default action. Errors: ErrInvalidArgument.
func (p *Pipeline) DefaultAction(tableID uint32) (Action, error) {
	t, err := p.table(tableID)
	if err != nil {
		return Action{}, fmt.Errorf("read default: %w", err)
	}
	return makeAction(t.defAction, &t.defParams), nil
}

// Data-path lookups: they return the action ID and its parameters (the default
// action's on a miss) and whether an entry was hit. No allocation.

func (t *table) hitOrDefault(idx int32, ok bool) (uint32, *[maxParams]uint64, bool) {
	if !ok {
		return t.defAction, &t.defParams, false
	}
	en := &t.entries[idx]
	return en.action, &en.params, true
}

// find returns the index of the entry of an all-exact table with key (v0, v1, v2).
func (t *table) find(v0, v1, v2 uint64) (int32, bool) {
	switch {
	case t.direct != nil:
		if v0 >= uint64(len(t.direct)) {
			return 0, false // no entry yet (or a value wider than the field)
		}
		idx := t.direct[v0]
		return idx, idx >= 0
	case t.hasPacked:
		pk := t.pack(v0, v1, v2)
		return t.packed.get(pk.hi, pk.lo)
	}
	idx, ok := t.byKey[entryKey{v: [maxKeys]uint64{v0, v1, v2}}]
	return idx, ok
}

// lookupEntry returns the entry of an exact table with key v0 (indirect tables).
func (t *table) lookupEntry(v0 uint64) (*entry, bool) {
	idx, ok := t.find(v0, 0, 0)
	if !ok {
		return nil, false
	}
	return &t.entries[idx], true
}

func (t *table) lookupExact(v0, v1, v2 uint64) (uint32, *[maxParams]uint64, bool) {
	idx, ok := t.find(v0, v1, v2)
	return t.hitOrDefault(idx, ok)
}

func (t *table) lookupLPM(v uint32) (uint32, *[maxParams]uint64, bool) {
	for _, l := range t.lens {
		m := uint32(prefixMask(l, 32))
		if idx, ok := t.lpm[l].get(0, uint64(v&m)); ok {
			return t.hitOrDefault(idx, true)
		}
	}
	return t.hitOrDefault(0, false)
}

func (t *table) lookupTernary(v0, v1, v2 uint64) (uint32, *[maxParams]uint64, bool) {
	for i := range t.tern {
		r := &t.tern[i]
		if v0&r.em[0] == r.v[0] && v1&r.em[1] == r.v[1] && v2&r.em[2] == r.v[2] {
			return t.hitOrDefault(r.idx, true)
		}
	}
	return t.hitOrDefault(0, false)
}

// setOrder sets the ternary order (entry indexes, highest priority first) and the
// rows lookupTernary scans.
func (t *table) setOrder(order []int32) {
	t.order = order
	t.tern = t.tern[:0]
	for _, idx := range order {
		en := &t.entries[idx]
		t.tern = append(t.tern, ternaryRow{em: en.em, v: en.key.v, idx: idx})
	}
}
