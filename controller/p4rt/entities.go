package p4rt

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
)

// MatchKind is the kind of one field match.
type MatchKind int

// Match kinds, as in P4Info MatchField.MatchType.
const (
	MatchExact MatchKind = iota + 1
	MatchLPM
	MatchTernary
	MatchRange
	MatchOptional
)

// String names the match kind as P4 does.
func (k MatchKind) String() string {
	return [...]string{"?", "exact", "lpm", "ternary", "range", "optional"}[min(int(k), 5)]
}

func (k MatchKind) p4info() p4configv1.MatchField_MatchType {
	switch k {
	case MatchExact:
		return p4configv1.MatchField_EXACT
	case MatchLPM:
		return p4configv1.MatchField_LPM
	case MatchTernary:
		return p4configv1.MatchField_TERNARY
	case MatchRange:
		return p4configv1.MatchField_RANGE
	case MatchOptional:
		return p4configv1.MatchField_OPTIONAL
	}
	return p4configv1.MatchField_UNSPECIFIED
}

// Match is one field match by field name. Values take any type Encode
// accepts. Build them with Exact, LPM, Ternary, Range and Optional.
type Match struct {
	Field     string
	Kind      MatchKind
	Value     any // exact, lpm, ternary, optional; low bound for range
	Mask      any // ternary
	High      any // range
	PrefixLen int32
}

// Exact matches field == v.
func Exact(field string, v any) Match { return Match{Field: field, Kind: MatchExact, Value: v} }

// LPM matches the first prefixLen bits of field against v.
func LPM(field string, v any, prefixLen int32) Match {
	return Match{Field: field, Kind: MatchLPM, Value: v, PrefixLen: prefixLen}
}

// Ternary matches field & mask == v (v must have no bits outside mask).
func Ternary(field string, v, mask any) Match {
	return Match{Field: field, Kind: MatchTernary, Value: v, Mask: mask}
}

// Range matches low <= field <= high.
func Range(field string, low, high any) Match {
	return Match{Field: field, Kind: MatchRange, Value: low, High: high}
}

// Optional matches field == v (an omitted optional field is a wildcard).
func Optional(field string, v any) Match { return Match{Field: field, Kind: MatchOptional, Value: v} }

// Param is one action parameter (or controller metadata field) by name.
type Param struct {
	Name  string
	Value any
}

// P is shorthand for Param{name, v}.
func P(name string, v any) Param { return Param{Name: name, Value: v} }

// encodeMatch builds a FieldMatch for f. The spec (TableEntry.match): a
// "don't care" match must be omitted from the entry, and it defines one per
// match kind: a ternary mask of zero, an LPM prefix length of zero, a range
// that holds every value of the field (low 0, high 2^bitwidth-1), and an
// optional match left out (the Optional builder always carries a value).
// Exact has none. encodeMatch rejects every don't-care form with
// ErrInvalidValue instead of dropping it silently, so that the caller's
// code says what the entry is (and two spellings of one entry cannot
// exist); the caller omits the field.
func encodeMatch(f *Field, m Match, scope string) (*p4v1.FieldMatch, error) {
	if want := f.Match; want != p4configv1.MatchField_UNSPECIFIED && want != m.Kind.p4info() {
		return nil, fmt.Errorf("p4rt: %s field %q is %s, not %s: %w", scope, f.Name, want, m.Kind, ErrInvalidValue)
	}
	enc := func(v any) ([]byte, error) { return encodeField("match field", f.Name, v, f.Bitwidth) }
	fm := &p4v1.FieldMatch{FieldId: f.ID}
	v, err := enc(m.Value)
	if err != nil {
		return nil, err
	}
	switch m.Kind {
	case MatchExact:
		fm.FieldMatchType = &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: v}}
	case MatchOptional:
		fm.FieldMatchType = &p4v1.FieldMatch_Optional_{Optional: &p4v1.FieldMatch_Optional{Value: v}}
	case MatchLPM:
		if err := checkLPM(v, m.PrefixLen, f.Bitwidth); err != nil {
			return nil, fmt.Errorf("match field %q: %w", f.Name, err)
		}
		if m.PrefixLen == 0 {
			return nil, fmt.Errorf("p4rt: match field %q: a /0 LPM is a wildcard, omit the field: %w", f.Name, ErrInvalidValue)
		}
		fm.FieldMatchType = &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: v, PrefixLen: m.PrefixLen}}
	case MatchTernary:
		mask, err := enc(m.Mask)
		if err != nil {
			return nil, err
		}
		if err := checkTernary(v, mask, f.Bitwidth); err != nil {
			return nil, fmt.Errorf("match field %q: %w", f.Name, err)
		}
		if bitLen(mask) == 0 {
			return nil, fmt.Errorf("p4rt: match field %q: a zero ternary mask is a wildcard, omit the field: %w", f.Name, ErrInvalidValue)
		}
		fm.FieldMatchType = &p4v1.FieldMatch_Ternary_{Ternary: &p4v1.FieldMatch_Ternary{Value: v, Mask: mask}}
	case MatchRange:
		hi, err := enc(m.High)
		if err != nil {
			return nil, err
		}
		if DecodeBig(v).Cmp(DecodeBig(hi)) > 0 {
			return nil, fmt.Errorf("p4rt: match field %q: range low 0x%x > high 0x%x: %w", f.Name, v, hi, ErrInvalidValue)
		}
		if bitLen(v) == 0 && isAllOnes(hi, f.Bitwidth) {
			return nil, fmt.Errorf("p4rt: match field %q: range [0, 0x%x] holds every bit<%d> value, a wildcard, omit the field: %w",
				f.Name, hi, f.Bitwidth, ErrInvalidValue)
		}
		fm.FieldMatchType = &p4v1.FieldMatch_Range_{Range: &p4v1.FieldMatch_Range{Low: v, High: hi}}
	default:
		return nil, fmt.Errorf("p4rt: match field %q: match kind %d: %w", f.Name, m.Kind, ErrInvalidValue)
	}
	return fm, nil
}

// Action builds a p4v1.Action by name with its parameters; every parameter
// of the action must be given exactly once.
func (in *Info) Action(name string, params ...Param) (*p4v1.Action, error) {
	id, err := in.ActionID(name)
	if err != nil {
		return nil, err
	}
	set := in.params[id]
	a := &p4v1.Action{ActionId: id, Params: make([]*p4v1.Action_Param, 0, len(params))}
	given := make(map[uint32]bool, len(params))
	for _, p := range params {
		f, err := set.get(p.Name)
		if err != nil {
			return nil, err
		}
		if given[f.ID] {
			return nil, fmt.Errorf("p4rt: action %q: param %q given twice: %w", in.ActionName(id), f.Name, ErrInvalidValue)
		}
		given[f.ID] = true
		v, err := encodeField("action param", f.Name, p.Value, f.Bitwidth)
		if err != nil {
			return nil, fmt.Errorf("action %q: %w", in.ActionName(id), err)
		}
		a.Params = append(a.Params, &p4v1.Action_Param{ParamId: f.ID, Value: v})
	}
	if len(given) != len(set.list) {
		for _, f := range set.list {
			if !given[f.ID] {
				return nil, fmt.Errorf("p4rt: action %q: param %q missing: %w", in.ActionName(id), f.Name, ErrInvalidValue)
			}
		}
	}
	return a, nil
}

// TableEntryBuilder builds a table entry by names. Methods record the first
// error, which Build returns; a builder is for one goroutine.
type TableEntryBuilder struct {
	in  *Info
	te  *p4v1.TableEntry
	err error
}

// TableEntry starts a table entry for the named table.
func (in *Info) TableEntry(table string) *TableEntryBuilder {
	b := &TableEntryBuilder{in: in, te: &p4v1.TableEntry{}}
	b.te.TableId, b.err = in.TableID(table)
	return b
}

func (b *TableEntryBuilder) fail(err error) *TableEntryBuilder {
	if b.err == nil {
		b.err = err
	}
	return b
}

// Match adds field matches.
func (b *TableEntryBuilder) Match(ms ...Match) *TableEntryBuilder {
	if b.err != nil {
		return b
	}
	set := b.in.matchFields[b.te.TableId]
	scope := "table " + b.in.TableName(b.te.TableId)
	for _, m := range ms {
		f, err := set.get(m.Field)
		if err != nil {
			return b.fail(err)
		}
		for _, o := range b.te.Match {
			if o.FieldId == f.ID {
				return b.fail(fmt.Errorf("p4rt: %s: field %q matched twice: %w", scope, f.Name, ErrInvalidValue))
			}
		}
		fm, err := encodeMatch(f, m, scope)
		if err != nil {
			return b.fail(fmt.Errorf("%s: %w", scope, err))
		}
		b.te.Match = append(b.te.Match, fm)
	}
	return b
}

// Priority sets the entry priority; higher wins. The P4Runtime spec wants
// p > 0 for every entry of a table with a ternary, range or optional field
// (even when the entry omits those fields), and no priority (0) for tables
// with only exact and LPM fields and for default entries: Build enforces
// both.
func (b *TableEntryBuilder) Priority(p int32) *TableEntryBuilder {
	if p <= 0 {
		return b.fail(fmt.Errorf("p4rt: priority %d must be > 0: %w", p, ErrInvalidValue))
	}
	b.te.Priority = p
	return b
}

// Action sets a direct action.
func (b *TableEntryBuilder) Action(name string, params ...Param) *TableEntryBuilder {
	if b.err != nil {
		return b
	}
	a, err := b.in.Action(name, params...)
	if err != nil {
		return b.fail(err)
	}
	b.te.Action = &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: a}}
	return b
}

// Member points the entry at an action profile member (indirect table).
func (b *TableEntryBuilder) Member(id uint32) *TableEntryBuilder {
	b.te.Action = &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileMemberId{ActionProfileMemberId: id}}
	return b
}

// Group points the entry at an action profile group (selector table).
func (b *TableEntryBuilder) Group(id uint32) *TableEntryBuilder {
	b.te.Action = &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileGroupId{ActionProfileGroupId: id}}
	return b
}

// Default makes this the table's default entry (use with MODIFY; it must
// have no match fields and no priority).
func (b *TableEntryBuilder) Default() *TableEntryBuilder {
	b.te.IsDefaultAction = true
	return b
}

// IdleTimeout sets the entry's idle timeout (table must support it).
func (b *TableEntryBuilder) IdleTimeout(d time.Duration) *TableEntryBuilder {
	if d <= 0 {
		return b.fail(fmt.Errorf("p4rt: idle timeout %v must be > 0: %w", d, ErrInvalidValue))
	}
	b.te.IdleTimeoutNs = d.Nanoseconds()
	return b
}

// Metadata sets the opaque controller metadata stored with the entry and
// returned by reads (TableEntry.metadata, field 11, bytes). m is copied;
// empty m sets none.
func (b *TableEntryBuilder) Metadata(m []byte) *TableEntryBuilder {
	if len(m) == 0 {
		b.te.Metadata = nil
	} else {
		b.te.Metadata = append([]byte(nil), m...)
	}
	return b
}

// ControllerMetadata stores the cookie c with the entry as 8 big-endian
// bytes in TableEntry.metadata (field 11), the current P4Runtime field; the
// deprecated uint64 controller_metadata (field 5) is not sent. Reads give
// it back as DecodedTableEntry.Metadata and .ControllerMetadata.
func (b *TableEntryBuilder) ControllerMetadata(c uint64) *TableEntryBuilder {
	return b.Metadata(binary.BigEndian.AppendUint64(nil, c))
}

// Build returns the table entry or the first error met. It checks the
// priority against the table's match kinds (see Priority): a missing
// priority on a ternary/range/optional table and a priority on an
// exact/LPM table or a default entry are ErrInvalidValue errors.
func (b *TableEntryBuilder) Build() (*p4v1.TableEntry, error) {
	if b.err != nil {
		return nil, b.err
	}
	table := b.in.TableName(b.te.TableId)
	if b.te.IsDefaultAction {
		if len(b.te.Match) > 0 || b.te.Priority != 0 {
			return nil, fmt.Errorf("p4rt: default entry of %s with match fields or priority: %w", table, ErrInvalidValue)
		}
		return b.te, nil
	}
	switch b.in.priority[b.te.TableId] {
	case priorityPositive:
		if b.te.Priority == 0 {
			_, why := tablePriorityRule(b.in.matchFields[b.te.TableId].list)
			return nil, fmt.Errorf("p4rt: table %s: entry needs a priority > 0 (Priority(p)): field %s: %w",
				table, strings.Join(why, ", field "), ErrInvalidValue)
		}
	case priorityZero:
		if b.te.Priority != 0 {
			return nil, fmt.Errorf("p4rt: table %s: priority %d given, but the table has only exact and LPM fields, whose entries must have none: %w",
				table, b.te.Priority, ErrInvalidValue)
		}
	}
	return b.te, nil
}

// Entity returns the entry wrapped in an Entity.
func (b *TableEntryBuilder) Entity() (*p4v1.Entity, error) {
	te, err := b.Build()
	if err != nil {
		return nil, err
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}, nil
}

// ActionProfileMember builds a member of an action profile.
func (in *Info) ActionProfileMember(profile string, memberID uint32, action string, params ...Param) (*p4v1.Entity, error) {
	pid, err := in.ActionProfileID(profile)
	if err != nil {
		return nil, err
	}
	a, err := in.Action(action, params...)
	if err != nil {
		return nil, err
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_ActionProfileMember{ActionProfileMember: &p4v1.ActionProfileMember{
		ActionProfileId: pid, MemberId: memberID, Action: a}}}, nil
}

// GroupMember is one member of an action profile group and its weight.
type GroupMember struct {
	ID uint32
	// Weight is >= 1; 0 is sent as 1. For a profile whose P4Info says
	// weights_disallowed (v1.5: the target picks members itself, e.g.
	// adaptive load balancing) it must be 0 and is sent unset.
	Weight int32
}

// ActionProfileGroup builds a group of an action selector. maxSize 0 leaves
// the maximum to the target. maxSize and the member weights must not be
// negative.
func (in *Info) ActionProfileGroup(profile string, groupID uint32, maxSize int32, members ...GroupMember) (*p4v1.Entity, error) {
	pid, err := in.ActionProfileID(profile)
	if err != nil {
		return nil, err
	}
	if maxSize < 0 {
		return nil, fmt.Errorf("p4rt: group %d: max size %d: %w", groupID, maxSize, ErrInvalidValue)
	}
	noWeights := in.noWeights[pid]
	g := &p4v1.ActionProfileGroup{ActionProfileId: pid, GroupId: groupID, MaxSize: maxSize}
	for _, m := range members {
		w := m.Weight
		switch {
		case w < 0:
			return nil, fmt.Errorf("p4rt: group %d member %d: weight %d: %w", groupID, m.ID, w, ErrInvalidValue)
		case noWeights && w != 0:
			return nil, fmt.Errorf("p4rt: group %d member %d: weight %d, but action profile %s disallows weights: %w",
				groupID, m.ID, w, in.profiles.names[pid], ErrInvalidValue)
		case w == 0 && !noWeights:
			w = 1
		}
		g.Members = append(g.Members, &p4v1.ActionProfileGroup_Member{MemberId: m.ID, Weight: w})
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_ActionProfileGroup{ActionProfileGroup: g}}, nil
}

// CounterEntry builds an indexed counter entry (to write values, or with
// index AllIndexes to read every cell).
func (in *Info) CounterEntry(counter string, index int64, bytes, packets int64) (*p4v1.Entity, error) {
	id, err := in.CounterID(counter)
	if err != nil {
		return nil, err
	}
	ce := &p4v1.CounterEntry{CounterId: id, Data: &p4v1.CounterData{ByteCount: bytes, PacketCount: packets}}
	if index != AllIndexes {
		if index < 0 {
			return nil, fmt.Errorf("p4rt: counter %q index %d: %w", counter, index, ErrInvalidValue)
		}
		ce.Index = &p4v1.Index{Index: index}
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: ce}}, nil
}

// DirectCounterEntry builds the direct counter cell of a table entry.
func DirectCounterEntry(te *p4v1.TableEntry, bytes, packets int64) *p4v1.Entity {
	return &p4v1.Entity{Entity: &p4v1.Entity_DirectCounterEntry{DirectCounterEntry: &p4v1.DirectCounterEntry{
		TableEntry: te, Data: &p4v1.CounterData{ByteCount: bytes, PacketCount: packets}}}}
}

// RegisterEntry builds a register cell write; the register must be a
// bit<W> register and value must fit W.
func (in *Info) RegisterEntry(register string, index int64, value any) (*p4v1.Entity, error) {
	id, err := in.RegisterID(register)
	if err != nil {
		return nil, err
	}
	w, ok := in.registerBits[id]
	if !ok {
		return nil, fmt.Errorf("p4rt: register %q is not a bit<W> register: %w", register, ErrInvalidValue)
	}
	if index < 0 {
		return nil, fmt.Errorf("p4rt: register %q index %d: %w", register, index, ErrInvalidValue)
	}
	v, err := encodeField("register", in.RegisterName(id), value, w)
	if err != nil {
		return nil, err
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{
		RegisterId: id, Index: &p4v1.Index{Index: index},
		Data: &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: v}}}}}, nil
}

// ValueSetEntry builds the full content of a parser value set: one member
// per []Match. A value set is written with MODIFY only (the spec), which
// replaces all members.
func (in *Info) ValueSetEntry(valueSet string, members ...[]Match) (*p4v1.Entity, error) {
	id, err := in.ValueSetID(valueSet)
	if err != nil {
		return nil, err
	}
	set := in.vsFields[id]
	vs := &p4v1.ValueSetEntry{ValueSetId: id}
	for _, ms := range members {
		mem := &p4v1.ValueSetMember{}
		for _, m := range ms {
			f, err := set.get(m.Field)
			if err != nil {
				return nil, err
			}
			fm, err := encodeMatch(f, m, "value set "+valueSet)
			if err != nil {
				return nil, fmt.Errorf("value set %q: %w", valueSet, err)
			}
			mem.Match = append(mem.Match, fm)
		}
		vs.Members = append(vs.Members, mem)
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_ValueSetEntry{ValueSetEntry: vs}}, nil
}

// Replica is one copy made by the packet replication engine.
type Replica struct {
	Port     uint32 // egress port (sent as the v1.0 egress_port field, which BMv2 and Stratum accept)
	Instance uint32 // replica ID, distinguishes copies to the same port
}

func replicas(rs []Replica) []*p4v1.Replica {
	out := make([]*p4v1.Replica, len(rs))
	for i, r := range rs {
		out[i] = &p4v1.Replica{PortKind: &p4v1.Replica_EgressPort{EgressPort: r.Port}, Instance: r.Instance}
	}
	return out
}

// MulticastGroup builds a multicast group entry.
func MulticastGroup(id uint32, rs ...Replica) (*p4v1.Entity, error) {
	if id == 0 {
		return nil, fmt.Errorf("p4rt: multicast group ID 0 is reserved (read wildcard): %w", ErrInvalidValue)
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
		Type: &p4v1.PacketReplicationEngineEntry_MulticastGroupEntry{MulticastGroupEntry: &p4v1.MulticastGroupEntry{
			MulticastGroupId: id, Replicas: replicas(rs)}}}}}, nil
}

// CloneSession builds a clone session entry; truncate 0 keeps whole packets.
func CloneSession(id, classOfService uint32, truncate int32, rs ...Replica) (*p4v1.Entity, error) {
	if id == 0 {
		return nil, fmt.Errorf("p4rt: clone session ID 0 is reserved (read wildcard): %w", ErrInvalidValue)
	}
	if truncate < 0 {
		return nil, fmt.Errorf("p4rt: clone session %d: truncate %d: %w", id, truncate, ErrInvalidValue)
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
		Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{CloneSessionEntry: &p4v1.CloneSessionEntry{
			SessionId: id, ClassOfService: classOfService, PacketLengthBytes: truncate, Replicas: replicas(rs)}}}}}, nil
}

// Insert wraps entities into INSERT updates.
func Insert(es ...*p4v1.Entity) []*p4v1.Update { return updates(p4v1.Update_INSERT, es) }

// Modify wraps entities into MODIFY updates.
func Modify(es ...*p4v1.Entity) []*p4v1.Update { return updates(p4v1.Update_MODIFY, es) }

// Delete wraps entities into DELETE updates.
func Delete(es ...*p4v1.Entity) []*p4v1.Update { return updates(p4v1.Update_DELETE, es) }

func updates(t p4v1.Update_Type, es []*p4v1.Entity) []*p4v1.Update {
	out := make([]*p4v1.Update, len(es))
	for i, e := range es {
		out[i] = &p4v1.Update{Type: t, Entity: e}
	}
	return out
}

// AllIndexes as an index asks for every cell of a counter, meter or
// register (the index is left unset, the spec's wildcard).
const AllIndexes int64 = -1

// ReadTable returns the read wildcard for every entry of a table, or of
// every table when table is "".
func (in *Info) ReadTable(table string) (*p4v1.Entity, error) {
	te := &p4v1.TableEntry{}
	if table != "" {
		id, err := in.TableID(table)
		if err != nil {
			return nil, err
		}
		te.TableId = id
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}, nil
}

// ReadDefaultEntry returns the read request for a table's default entry.
func (in *Info) ReadDefaultEntry(table string) (*p4v1.Entity, error) {
	id, err := in.TableID(table)
	if err != nil {
		return nil, err
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: id, IsDefaultAction: true}}}, nil
}

// ReadCounter reads one cell (or AllIndexes) of a counter, or every counter
// when counter is "".
func (in *Info) ReadCounter(counter string, index int64) (*p4v1.Entity, error) {
	ce := &p4v1.CounterEntry{}
	if counter != "" {
		id, err := in.CounterID(counter)
		if err != nil {
			return nil, err
		}
		ce.CounterId = id
	}
	if index != AllIndexes {
		ce.Index = &p4v1.Index{Index: index}
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: ce}}, nil
}

// ReadDirectCounters reads the direct counter cells of every entry of a
// table ("" for all tables).
func (in *Info) ReadDirectCounters(table string) (*p4v1.Entity, error) {
	e, err := in.ReadTable(table)
	if err != nil {
		return nil, err
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_DirectCounterEntry{DirectCounterEntry: &p4v1.DirectCounterEntry{TableEntry: e.GetTableEntry()}}}, nil
}

// ReadDirectMeters reads the direct meter configurations of every entry of
// a table ("" for all tables).
func (in *Info) ReadDirectMeters(table string) (*p4v1.Entity, error) {
	e, err := in.ReadTable(table)
	if err != nil {
		return nil, err
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_DirectMeterEntry{DirectMeterEntry: &p4v1.DirectMeterEntry{TableEntry: e.GetTableEntry()}}}, nil
}

// ReadMeter reads one cell (or AllIndexes) of a meter, or every meter when
// meter is "".
func (in *Info) ReadMeter(meter string, index int64) (*p4v1.Entity, error) {
	me := &p4v1.MeterEntry{}
	if meter != "" {
		id, err := in.MeterID(meter)
		if err != nil {
			return nil, err
		}
		me.MeterId = id
	}
	if index != AllIndexes {
		me.Index = &p4v1.Index{Index: index}
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_MeterEntry{MeterEntry: me}}, nil
}

// ReadRegister reads one cell (or AllIndexes) of a register, or every
// register when register is "".
func (in *Info) ReadRegister(register string, index int64) (*p4v1.Entity, error) {
	re := &p4v1.RegisterEntry{}
	if register != "" {
		id, err := in.RegisterID(register)
		if err != nil {
			return nil, err
		}
		re.RegisterId = id
	}
	if index != AllIndexes {
		re.Index = &p4v1.Index{Index: index}
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: re}}, nil
}

// ReadActionProfileMembers reads the members of a profile ("" for all).
func (in *Info) ReadActionProfileMembers(profile string) (*p4v1.Entity, error) {
	m := &p4v1.ActionProfileMember{}
	if profile != "" {
		id, err := in.ActionProfileID(profile)
		if err != nil {
			return nil, err
		}
		m.ActionProfileId = id
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_ActionProfileMember{ActionProfileMember: m}}, nil
}

// ReadActionProfileGroups reads the groups of a profile ("" for all).
func (in *Info) ReadActionProfileGroups(profile string) (*p4v1.Entity, error) {
	g := &p4v1.ActionProfileGroup{}
	if profile != "" {
		id, err := in.ActionProfileID(profile)
		if err != nil {
			return nil, err
		}
		g.ActionProfileId = id
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_ActionProfileGroup{ActionProfileGroup: g}}, nil
}

// ReadValueSet reads a value set ("" for all).
func (in *Info) ReadValueSet(valueSet string) (*p4v1.Entity, error) {
	v := &p4v1.ValueSetEntry{}
	if valueSet != "" {
		id, err := in.ValueSetID(valueSet)
		if err != nil {
			return nil, err
		}
		v.ValueSetId = id
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_ValueSetEntry{ValueSetEntry: v}}, nil
}

// ReadDigestConfig reads a digest's configuration ("" for all).
func (in *Info) ReadDigestConfig(digest string) (*p4v1.Entity, error) {
	d := &p4v1.DigestEntry{}
	if digest != "" {
		id, err := in.DigestID(digest)
		if err != nil {
			return nil, err
		}
		d.DigestId = id
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_DigestEntry{DigestEntry: d}}, nil
}

// ReadMulticastGroups reads one multicast group, or all when id is 0.
func ReadMulticastGroups(id uint32) *p4v1.Entity {
	return &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
		Type: &p4v1.PacketReplicationEngineEntry_MulticastGroupEntry{MulticastGroupEntry: &p4v1.MulticastGroupEntry{MulticastGroupId: id}}}}}
}

// ReadCloneSessions reads one clone session, or all when id is 0.
func ReadCloneSessions(id uint32) *p4v1.Entity {
	return &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
		Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{CloneSessionEntry: &p4v1.CloneSessionEntry{SessionId: id}}}}}
}

// DigestConfig builds a digest configuration entry (INSERT it to enable
// the digest). maxTimeout 0 and maxListSize 1 ask for one digest per list,
// sent at once.
func (in *Info) DigestConfig(digest string, maxTimeout time.Duration, maxListSize int32, ackTimeout time.Duration) (*p4v1.Entity, error) {
	id, err := in.DigestID(digest)
	if err != nil {
		return nil, err
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_DigestEntry{DigestEntry: &p4v1.DigestEntry{DigestId: id, Config: &p4v1.DigestEntry_Config{
		MaxTimeoutNs: maxTimeout.Nanoseconds(), MaxListSize: maxListSize, AckTimeoutNs: ackTimeout.Nanoseconds()}}}}, nil
}
