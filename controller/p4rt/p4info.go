package p4rt

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strings"

	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// Format says how a P4Info file is encoded.
type Format int

// P4Info encodings.
const (
	FormatAuto   Format = iota // text if it parses as text, else binary
	FormatText                 // protobuf text format (p4c's .p4info.txtpb)
	FormatBinary               // protobuf wire format (p4c's .p4info.bin)
)

// ParseP4Info decodes a P4Info in the given format. FormatAuto tries the
// text format first when the data looks like text (valid UTF-8 without
// control bytes), because a binary P4Info practically never is; otherwise
// binary.
func ParseP4Info(data []byte, f Format) (*p4configv1.P4Info, error) {
	p := &p4configv1.P4Info{}
	switch f {
	case FormatText:
		if err := prototext.Unmarshal(data, p); err != nil {
			return nil, fmt.Errorf("p4rt: parse P4Info text: %w", err)
		}
	case FormatBinary:
		if err := proto.Unmarshal(data, p); err != nil {
			return nil, fmt.Errorf("p4rt: parse P4Info binary: %w", err)
		}
	case FormatAuto:
		if looksLikeText(data) {
			terr := prototext.Unmarshal(data, p)
			if terr == nil {
				return p, nil
			}
			p.Reset()
			if berr := proto.Unmarshal(data, p); berr != nil {
				return nil, fmt.Errorf("p4rt: parse P4Info (text: %v; binary: %w)", terr, berr)
			}
			return p, nil
		}
		if err := proto.Unmarshal(data, p); err != nil {
			return nil, fmt.Errorf("p4rt: parse P4Info binary: %w", err)
		}
	default:
		return nil, fmt.Errorf("p4rt: P4Info format %d: %w", f, ErrInvalidValue)
	}
	return p, nil
}

func looksLikeText(data []byte) bool {
	if !utf8Valid(data) {
		return false
	}
	for _, c := range data {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' {
			return false
		}
	}
	return len(bytes.TrimSpace(data)) > 0
}

func utf8Valid(b []byte) bool { return strings.ToValidUTF8(string(b), "\uFFFD") == string(b) }

// LoadP4InfoFile reads and parses a P4Info file.
func LoadP4InfoFile(path string, f Format) (*p4configv1.P4Info, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("p4rt: read P4Info: %w", err)
	}
	p, err := ParseP4Info(data, f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// nameIndex resolves names of one kind of object to IDs.
type nameIndex struct {
	kind  string
	scope string
	full  map[string]uint32   // fully qualified name -> id
	alias map[string][]uint32 // alias and dotted suffixes -> ids (distinct)
	names map[uint32]string   // id -> fully qualified name
}

func newNameIndex(kind, scope string) *nameIndex {
	return &nameIndex{kind: kind, scope: scope, full: map[string]uint32{},
		alias: map[string][]uint32{}, names: map[uint32]string{}}
}

func (x *nameIndex) add(id uint32, name, alias string) {
	x.full[name] = id
	x.names[id] = name
	keys := []string{alias}
	// Every dotted suffix ("ipv4_route" of "Ing.ipv4_route") is a usable
	// short name as long as it is unique.
	for i := 0; i < len(name); i++ {
		if name[i] == '.' {
			keys = append(keys, name[i+1:])
		}
	}
	for _, k := range keys {
		if k == "" || k == name {
			continue
		}
		ids := x.alias[k]
		dup := false
		for _, o := range ids {
			dup = dup || o == id
		}
		if !dup {
			x.alias[k] = append(ids, id)
		}
	}
}

func (x *nameIndex) lookup(name string) (uint32, error) {
	if id, ok := x.full[name]; ok {
		return id, nil
	}
	ids := x.alias[name]
	switch len(ids) {
	case 1:
		return ids[0], nil
	case 0:
		return 0, &NameError{Kind: x.kind, Name: name, Scope: x.scope, Suggestions: x.suggest(name)}
	}
	cands := make([]string, 0, len(ids))
	for _, id := range ids {
		cands = append(cands, x.names[id])
	}
	sort.Strings(cands)
	return 0, &NameError{Kind: x.kind, Name: name, Scope: x.scope, Suggestions: cands, Ambiguous: true}
}

// suggest returns up to three known names close to name.
func (x *nameIndex) suggest(name string) []string {
	type cand struct {
		n string
		d int
	}
	var cs []cand
	seen := map[string]bool{}
	try := func(full, key string) {
		d := levenshtein(strings.ToLower(name), strings.ToLower(key))
		lim := max(2, len(name)/3)
		if d <= lim || strings.Contains(strings.ToLower(key), strings.ToLower(name)) {
			if !seen[full] {
				seen[full] = true
				cs = append(cs, cand{full, d})
			}
		}
	}
	for n := range x.full {
		try(n, n)
	}
	for a, ids := range x.alias {
		for _, id := range ids {
			try(x.names[id], a)
		}
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].d != cs[j].d {
			return cs[i].d < cs[j].d
		}
		return cs[i].n < cs[j].n
	})
	out := []string{}
	for i := 0; i < len(cs) && i < 3; i++ {
		out = append(out, cs[i].n)
	}
	return out
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Field is a named, sized element inside an object: a match field, an action
// parameter, a controller metadata field.
type Field struct {
	ID       uint32
	Name     string
	Bitwidth int
	Match    p4configv1.MatchField_MatchType // for match fields only
}

// fieldSet indexes the fields of one object by name and ID.
type fieldSet struct {
	idx  *nameIndex
	byID map[uint32]*Field
	list []*Field
}

func newFieldSet(kind, scope string) *fieldSet {
	return &fieldSet{idx: newNameIndex(kind, scope), byID: map[uint32]*Field{}}
}

func (s *fieldSet) add(f *Field) {
	if f.Name == "" {
		s.idx.full[""] = f.ID
		s.idx.names[f.ID] = ""
	} else {
		s.idx.add(f.ID, f.Name, "")
	}
	s.byID[f.ID] = f
	s.list = append(s.list, f)
}

func (s *fieldSet) get(name string) (*Field, error) {
	id, err := s.idx.lookup(name)
	if err != nil {
		return nil, err
	}
	return s.byID[id], nil
}

// Info is an index over a P4Info: names to IDs, IDs to names, and the widths
// needed to encode values. It is immutable after NewInfo and safe for
// concurrent use.
type Info struct {
	p *p4configv1.P4Info

	tables, actions, profiles, counters, directCounters, meters, directMeters,
	registers, digests, valueSets, cpm *nameIndex

	matchFields  map[uint32]*fieldSet // per table
	params       map[uint32]*fieldSet // per action
	vsFields     map[uint32]*fieldSet // per value set
	cpmFields    map[uint32]*fieldSet // per controller packet metadata header
	registerBits map[uint32]int       // register element width (bit<W> only)
	digestByID   map[uint32]*p4configv1.Digest
	noWeights    map[uint32]bool         // action profiles with weights_disallowed (v1.5)
	priority     map[uint32]priorityRule // per table
}

// priorityRule is what the P4Runtime spec asks of the priority of a table's
// entries: > 0 when the table has a ternary, range or optional field (the
// entry is a TCAM-like one), 0 when it has only exact and LPM fields.
type priorityRule uint8

const (
	// priorityAny: the table has an architecture-specific match kind
	// (other_match_type) and no ternary/range/optional field; the rule is
	// then the target's, and the server checks it.
	priorityAny priorityRule = iota
	priorityZero
	priorityPositive
)

// tablePriorityRule derives the rule from a table's match fields, and
// names the fields that make a priority necessary.
func tablePriorityRule(fs []*Field) (priorityRule, []string) {
	var why []string
	other := false
	for _, f := range fs {
		switch f.Match {
		case p4configv1.MatchField_TERNARY, p4configv1.MatchField_RANGE, p4configv1.MatchField_OPTIONAL:
			why = append(why, fmt.Sprintf("%q is %s", f.Name, strings.ToLower(f.Match.String())))
		case p4configv1.MatchField_EXACT, p4configv1.MatchField_LPM:
		default:
			other = true
		}
	}
	switch {
	case len(why) > 0:
		return priorityPositive, why
	case other:
		return priorityAny, nil
	}
	return priorityZero, nil
}

// NewInfo indexes p. It fails on duplicate IDs or names within a kind, on a
// zero ID, and on non-positive bitwidths, so that later lookups never
// silently pick the wrong object.
func NewInfo(p *p4configv1.P4Info) (*Info, error) {
	if p == nil {
		return nil, fmt.Errorf("p4rt: nil P4Info: %w", ErrInvalidValue)
	}
	in := &Info{p: p,
		tables: newNameIndex("table", ""), actions: newNameIndex("action", ""),
		profiles: newNameIndex("action profile", ""), counters: newNameIndex("counter", ""),
		directCounters: newNameIndex("direct counter", ""), meters: newNameIndex("meter", ""),
		directMeters: newNameIndex("direct meter", ""), registers: newNameIndex("register", ""),
		digests: newNameIndex("digest", ""), valueSets: newNameIndex("value set", ""),
		cpm:         newNameIndex("controller packet metadata", ""),
		matchFields: map[uint32]*fieldSet{}, params: map[uint32]*fieldSet{},
		vsFields: map[uint32]*fieldSet{}, cpmFields: map[uint32]*fieldSet{},
		registerBits: map[uint32]int{}, digestByID: map[uint32]*p4configv1.Digest{},
		noWeights: map[uint32]bool{}, priority: map[uint32]priorityRule{},
	}
	seen := map[uint32]string{}
	add := func(x *nameIndex, pre *p4configv1.Preamble) error {
		if pre == nil || pre.Id == 0 || pre.Name == "" {
			return fmt.Errorf("p4rt: %s with missing ID or name (%v): %w", x.kind, pre, ErrInvalidValue)
		}
		if o, ok := seen[pre.Id]; ok {
			return fmt.Errorf("p4rt: ID %d used by %q and %s %q: %w", pre.Id, o, x.kind, pre.Name, ErrInvalidValue)
		}
		if _, ok := x.full[pre.Name]; ok {
			return fmt.Errorf("p4rt: duplicate %s name %q: %w", x.kind, pre.Name, ErrInvalidValue)
		}
		seen[pre.Id] = pre.Name
		x.add(pre.Id, pre.Name, pre.Alias)
		return nil
	}
	fields := func(kind, scope string, get func(i int) (*Field, bool)) (*fieldSet, error) {
		s := newFieldSet(kind, scope)
		for i := 0; ; i++ {
			f, ok := get(i)
			if !ok {
				return s, nil
			}
			// p4c leaves the match field of a value_set<bit<W>> unnamed:
			// it is then addressed by "" (allowed for one field only).
			unnamedOK := strings.HasPrefix(scope, "value set ") && len(s.list) == 0 && f.Name == ""
			if f.ID == 0 || (f.Name == "" && !unnamedOK) || f.Bitwidth <= 0 {
				return nil, fmt.Errorf("p4rt: %s %q of %s: bad ID, name or bitwidth %d: %w", kind, f.Name, scope, f.Bitwidth, ErrInvalidValue)
			}
			if _, dup := s.byID[f.ID]; dup {
				return nil, fmt.Errorf("p4rt: %s ID %d repeated in %s: %w", kind, f.ID, scope, ErrInvalidValue)
			}
			s.add(f)
		}
	}
	matchFields := func(kind, scope string, mfs []*p4configv1.MatchField) (*fieldSet, error) {
		return fields(kind, scope, func(i int) (*Field, bool) {
			if i >= len(mfs) {
				return nil, false
			}
			m := mfs[i]
			return &Field{ID: m.Id, Name: m.Name, Bitwidth: int(m.Bitwidth), Match: m.GetMatchType()}, true
		})
	}
	for _, t := range p.Tables {
		if err := add(in.tables, t.Preamble); err != nil {
			return nil, err
		}
		s, err := matchFields("match field", "table "+t.Preamble.Name, t.MatchFields)
		if err != nil {
			return nil, err
		}
		in.matchFields[t.Preamble.Id] = s
		in.priority[t.Preamble.Id], _ = tablePriorityRule(s.list)
	}
	for _, a := range p.Actions {
		if err := add(in.actions, a.Preamble); err != nil {
			return nil, err
		}
		s, err := fields("action param", "action "+a.Preamble.Name, func(i int) (*Field, bool) {
			if i >= len(a.Params) {
				return nil, false
			}
			return &Field{ID: a.Params[i].Id, Name: a.Params[i].Name, Bitwidth: int(a.Params[i].Bitwidth)}, true
		})
		if err != nil {
			return nil, err
		}
		in.params[a.Preamble.Id] = s
	}
	for _, x := range p.ActionProfiles {
		if err := add(in.profiles, x.Preamble); err != nil {
			return nil, err
		}
		if x.WeightsDisallowed {
			in.noWeights[x.Preamble.Id] = true
		}
	}
	for _, x := range p.Counters {
		if err := add(in.counters, x.Preamble); err != nil {
			return nil, err
		}
	}
	for _, x := range p.DirectCounters {
		if err := add(in.directCounters, x.Preamble); err != nil {
			return nil, err
		}
	}
	for _, x := range p.Meters {
		if err := add(in.meters, x.Preamble); err != nil {
			return nil, err
		}
	}
	for _, x := range p.DirectMeters {
		if err := add(in.directMeters, x.Preamble); err != nil {
			return nil, err
		}
	}
	for _, x := range p.Registers {
		if err := add(in.registers, x.Preamble); err != nil {
			return nil, err
		}
		if bs := x.GetTypeSpec().GetBitstring(); bs != nil {
			if w := bs.GetBit().GetBitwidth(); w > 0 {
				in.registerBits[x.Preamble.Id] = int(w)
			}
		}
	}
	for _, x := range p.Digests {
		if err := add(in.digests, x.Preamble); err != nil {
			return nil, err
		}
		in.digestByID[x.Preamble.Id] = x
	}
	for _, x := range p.ValueSets {
		if err := add(in.valueSets, x.Preamble); err != nil {
			return nil, err
		}
		s, err := matchFields("match field", "value set "+x.Preamble.Name, x.Match)
		if err != nil {
			return nil, err
		}
		in.vsFields[x.Preamble.Id] = s
	}
	for _, x := range p.ControllerPacketMetadata {
		if err := add(in.cpm, x.Preamble); err != nil {
			return nil, err
		}
		md := x.Metadata
		s, err := fields("metadata field", "controller header "+x.Preamble.Name, func(i int) (*Field, bool) {
			if i >= len(md) {
				return nil, false
			}
			return &Field{ID: md[i].Id, Name: md[i].Name, Bitwidth: int(md[i].Bitwidth)}, true
		})
		if err != nil {
			return nil, err
		}
		in.cpmFields[x.Preamble.Id] = s
	}
	return in, nil
}

// P4Info returns the indexed P4Info (do not modify it).
func (in *Info) P4Info() *p4configv1.P4Info { return in.p }

// TableID resolves a table name (fully qualified or alias).
func (in *Info) TableID(name string) (uint32, error) { return in.tables.lookup(name) }

// ActionID resolves an action name.
func (in *Info) ActionID(name string) (uint32, error) { return in.actions.lookup(name) }

// ActionProfileID resolves an action profile (or selector) name.
func (in *Info) ActionProfileID(name string) (uint32, error) { return in.profiles.lookup(name) }

// CounterID resolves an indexed counter name.
func (in *Info) CounterID(name string) (uint32, error) { return in.counters.lookup(name) }

// DirectCounterID resolves a direct counter name.
func (in *Info) DirectCounterID(name string) (uint32, error) { return in.directCounters.lookup(name) }

// MeterID resolves an indexed meter name.
func (in *Info) MeterID(name string) (uint32, error) { return in.meters.lookup(name) }

// DirectMeterID resolves a direct meter name.
func (in *Info) DirectMeterID(name string) (uint32, error) { return in.directMeters.lookup(name) }

// RegisterID resolves a register name.
func (in *Info) RegisterID(name string) (uint32, error) { return in.registers.lookup(name) }

// DigestID resolves a digest name (p4c names digests by their struct type).
func (in *Info) DigestID(name string) (uint32, error) { return in.digests.lookup(name) }

// ValueSetID resolves a parser value set name.
func (in *Info) ValueSetID(name string) (uint32, error) { return in.valueSets.lookup(name) }

// ControllerHeaderID resolves a controller packet metadata header name
// ("packet_in", "packet_out").
func (in *Info) ControllerHeaderID(name string) (uint32, error) { return in.cpm.lookup(name) }

// MatchField resolves a match field of a table.
func (in *Info) MatchField(table, field string) (*Field, error) {
	id, err := in.TableID(table)
	if err != nil {
		return nil, err
	}
	return in.matchFields[id].get(field)
}

// ActionParam resolves a parameter of an action.
func (in *Info) ActionParam(action, param string) (*Field, error) {
	id, err := in.ActionID(action)
	if err != nil {
		return nil, err
	}
	return in.params[id].get(param)
}

// ValueSetField resolves a match field of a value set.
func (in *Info) ValueSetField(valueSet, field string) (*Field, error) {
	id, err := in.ValueSetID(valueSet)
	if err != nil {
		return nil, err
	}
	return in.vsFields[id].get(field)
}

// ControllerMetadataField resolves a field of a controller packet metadata
// header.
func (in *Info) ControllerMetadataField(header, field string) (*Field, error) {
	id, err := in.ControllerHeaderID(header)
	if err != nil {
		return nil, err
	}
	return in.cpmFields[id].get(field)
}

// TableName returns the fully qualified name of a table ID ("" if unknown).
func (in *Info) TableName(id uint32) string { return in.tables.names[id] }

// ActionName returns the fully qualified name of an action ID.
func (in *Info) ActionName(id uint32) string { return in.actions.names[id] }

// DigestName returns the name of a digest ID.
func (in *Info) DigestName(id uint32) string { return in.digests.names[id] }

// RegisterName returns the name of a register ID.
func (in *Info) RegisterName(id uint32) string { return in.registers.names[id] }

// CounterName returns the name of a counter ID.
func (in *Info) CounterName(id uint32) string { return in.counters.names[id] }
