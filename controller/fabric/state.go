package fabric

import (
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/fastcnp/fastcnp/controller/p4rt"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
)

// Kind orders entity kinds for installation: objects that others depend on
// come first.
type Kind int

// Entity kinds fastcnpd manages.
const (
	KindValueSet Kind = iota + 1
	KindCloneSession
	KindDigestConfig
	// KindActionProfileMember and KindActionProfileGroup are the ECMP
	// selector's members and groups: members before the groups that hold
	// them, groups before the table entries that run them.
	KindActionProfileMember
	KindActionProfileGroup
	KindTableEntry
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case KindValueSet:
		return "value_set"
	case KindCloneSession:
		return "clone_session"
	case KindDigestConfig:
		return "digest_config"
	case KindActionProfileMember:
		return "action_profile_member"
	case KindActionProfileGroup:
		return "action_profile_group"
	case KindTableEntry:
		return "table_entry"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Entry is one entity with its canonical key and value.
type Entry struct {
	// Kind is the entity kind.
	Kind Kind
	// Key identifies the entity on a switch (table + match + priority, value
	// set ID, clone session ID, digest ID).
	Key string
	// Value is the canonical content (action and params, members, replicas,
	// digest config); two entries with equal keys and values are the same.
	Value string
	// Entity is the P4Runtime entity.
	Entity *p4v1.Entity
}

// State is a set of entries keyed canonically.
type State struct {
	entries map[string]Entry
}

// NewState returns an empty state.
func NewState() *State { return &State{entries: make(map[string]Entry)} }

// Len returns the number of entries.
func (s *State) Len() int { return len(s.entries) }

// Get returns the entry with key k.
func (s *State) Get(k string) (Entry, bool) {
	e, ok := s.entries[k]
	return e, ok
}

// Add adds an entity; a second entity with the same key is an error.
func (s *State) Add(e *p4v1.Entity) error {
	en, err := Canonical(e)
	if err != nil {
		return err
	}
	if _, dup := s.entries[en.Key]; dup {
		return fmt.Errorf("fabric: duplicate entity %s", en.Key)
	}
	s.entries[en.Key] = en
	return nil
}

// addEntry adds a canonical entry; a duplicate key is an error.
func (s *State) addEntry(e Entry) error {
	if _, dup := s.entries[e.Key]; dup {
		return fmt.Errorf("fabric: duplicate entity %s", e.Key)
	}
	s.entries[e.Key] = e
	return nil
}

// Put adds or replaces an entity (read-back states use it: a server never
// returns two entities with one key, but a replacement must not fail).
func (s *State) Put(e *p4v1.Entity) error {
	en, err := Canonical(e)
	if err != nil {
		return err
	}
	s.entries[en.Key] = en
	return nil
}

// AssumeKind fills in the entries of kind k that a server could not read
// back: from known (the state installed earlier) when it is not nil, else
// from desired.
func (s *State) AssumeKind(k Kind, known, desired *State) {
	src := known
	if src == nil {
		src = desired
	}
	for key, e := range src.entries {
		if e.Kind == k {
			s.entries[key] = e
		}
	}
}

// Entries returns the entries in installation order: by kind, then key.
func (s *State) Entries() []Entry {
	out := make([]Entry, 0, len(s.entries))
	for _, e := range s.entries {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Key < out[j].Key
	})
	return out
}

// CountByPrefix returns how many keys start with prefix (a table's key
// prefix is TablePrefix(id)).
func (s *State) CountByPrefix(prefix string) int {
	n := 0
	for k := range s.entries {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}

// TablePrefix is the key prefix of every entry of a table.
func TablePrefix(tableID uint32) string { return fmt.Sprintf("t/%08x/", tableID) }

// MemberKey is the key of an action profile member; MemberPrefix(profile)
// is the key prefix of every member of the profile.
func MemberKey(profileID, memberID uint32) string {
	return fmt.Sprintf("%s%d", MemberPrefix(profileID), memberID)
}

// MemberPrefix is the key prefix of the members of an action profile.
func MemberPrefix(profileID uint32) string { return fmt.Sprintf("m/%08x/", profileID) }

// GroupKey is the key of an action profile group.
func GroupKey(profileID, groupID uint32) string {
	return fmt.Sprintf("%s%d", GroupPrefix(profileID), groupID)
}

// GroupPrefix is the key prefix of the groups of an action profile.
func GroupPrefix(profileID uint32) string { return fmt.Sprintf("g/%08x/", profileID) }

func hexCanon(b []byte) string { return hex.EncodeToString(p4rt.Canonical(b)) }

// Canonical computes the kind, key and value of a managed entity. Entities
// fastcnpd does not manage (counters, registers, meters...) are an error.
func Canonical(e *p4v1.Entity) (Entry, error) {
	switch x := e.GetEntity().(type) {
	case *p4v1.Entity_TableEntry:
		k, v, err := tableKeyValue(x.TableEntry)
		if err != nil {
			return Entry{}, err
		}
		return Entry{Kind: KindTableEntry, Key: k, Value: v, Entity: e}, nil
	case *p4v1.Entity_ValueSetEntry:
		vs := x.ValueSetEntry
		members := make([]string, 0, len(vs.GetMembers()))
		for _, m := range vs.GetMembers() {
			var parts []string
			for _, fm := range m.GetMatch() {
				parts = append(parts, matchString(fm))
			}
			sort.Strings(parts)
			members = append(members, strings.Join(parts, "&"))
		}
		sort.Strings(members)
		members = dedup(members)
		return Entry{Kind: KindValueSet, Key: fmt.Sprintf("v/%08x", vs.GetValueSetId()),
			Value: strings.Join(members, ","), Entity: e}, nil
	case *p4v1.Entity_PacketReplicationEngineEntry:
		cs := x.PacketReplicationEngineEntry.GetCloneSessionEntry()
		if cs == nil {
			return Entry{}, fmt.Errorf("fabric: unmanaged PRE entity %v", x.PacketReplicationEngineEntry)
		}
		reps := make([]string, 0, len(cs.GetReplicas()))
		for _, r := range cs.GetReplicas() {
			port := hexCanon(r.GetPort())
			if len(r.GetPort()) == 0 {
				port = hexCanon(uintBytes(uint64(r.GetEgressPort())))
			}
			reps = append(reps, fmt.Sprintf("%s.%d", port, r.GetInstance()))
		}
		sort.Strings(reps)
		return Entry{Kind: KindCloneSession, Key: fmt.Sprintf("c/%d", cs.GetSessionId()),
			Value: fmt.Sprintf("cos=%d;trunc=%d;%s", cs.GetClassOfService(), cs.GetPacketLengthBytes(),
				strings.Join(reps, ",")), Entity: e}, nil
	case *p4v1.Entity_ActionProfileMember:
		m := x.ActionProfileMember
		if m.GetAction() == nil {
			return Entry{}, fmt.Errorf("fabric: action profile %#x member %d has no action", m.GetActionProfileId(), m.GetMemberId())
		}
		return Entry{Kind: KindActionProfileMember, Key: MemberKey(m.GetActionProfileId(), m.GetMemberId()),
			Value: actionValue(m.GetAction()), Entity: e}, nil
	case *p4v1.Entity_ActionProfileGroup:
		g := x.ActionProfileGroup
		ms := make([]string, 0, len(g.GetMembers()))
		for _, m := range g.GetMembers() {
			w := m.GetWeight()
			if w == 0 {
				w = 1 // P4Runtime: an unset weight is 1
			}
			ms = append(ms, fmt.Sprintf("%d*%d", m.GetMemberId(), w))
		}
		sort.Strings(ms)
		// max_size is left out: fastcnpd never sets it, and a server may
		// read back its own bound there.
		return Entry{Kind: KindActionProfileGroup, Key: GroupKey(g.GetActionProfileId(), g.GetGroupId()),
			Value: strings.Join(ms, ","), Entity: e}, nil
	case *p4v1.Entity_DigestEntry:
		d := x.DigestEntry
		c := d.GetConfig()
		return Entry{Kind: KindDigestConfig, Key: fmt.Sprintf("d/%08x", d.GetDigestId()),
			Value:  fmt.Sprintf("t=%d;n=%d;a=%d", c.GetMaxTimeoutNs(), c.GetMaxListSize(), c.GetAckTimeoutNs()),
			Entity: e}, nil
	}
	return Entry{}, fmt.Errorf("fabric: unmanaged entity type %T", e.GetEntity())
}

func uintBytes(v uint64) []byte {
	b := make([]byte, 8)
	for i := 7; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
	return b
}

func dedup(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func matchString(fm *p4v1.FieldMatch) string {
	id := fm.GetFieldId()
	switch m := fm.GetFieldMatchType().(type) {
	case *p4v1.FieldMatch_Exact_:
		return fmt.Sprintf("%d=%s", id, hexCanon(m.Exact.GetValue()))
	case *p4v1.FieldMatch_Lpm:
		return fmt.Sprintf("%d=%s/%d", id, hexCanon(m.Lpm.GetValue()), m.Lpm.GetPrefixLen())
	case *p4v1.FieldMatch_Ternary_:
		return fmt.Sprintf("%d=%s&%s", id, hexCanon(m.Ternary.GetValue()), hexCanon(m.Ternary.GetMask()))
	case *p4v1.FieldMatch_Range_:
		return fmt.Sprintf("%d=%s..%s", id, hexCanon(m.Range.GetLow()), hexCanon(m.Range.GetHigh()))
	case *p4v1.FieldMatch_Optional_:
		return fmt.Sprintf("%d=%s?", id, hexCanon(m.Optional.GetValue()))
	}
	return fmt.Sprintf("%d=?", id)
}

func tableKeyValue(te *p4v1.TableEntry) (string, string, error) {
	if te.GetIsDefaultAction() {
		return "", "", fmt.Errorf("fabric: default entries of table %#x are not managed", te.GetTableId())
	}
	ms := make([]*p4v1.FieldMatch, len(te.GetMatch()))
	copy(ms, te.GetMatch())
	sort.Slice(ms, func(i, j int) bool { return ms[i].GetFieldId() < ms[j].GetFieldId() })
	var b strings.Builder
	b.WriteString(TablePrefix(te.GetTableId()))
	for i, m := range ms {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(matchString(m))
	}
	fmt.Fprintf(&b, ";p=%d", te.GetPriority())
	switch ta := te.GetAction().GetType().(type) {
	case *p4v1.TableAction_Action:
		return b.String(), actionValue(ta.Action), nil
	case *p4v1.TableAction_ActionProfileGroupId:
		return b.String(), fmt.Sprintf("g=%d", ta.ActionProfileGroupId), nil
	case *p4v1.TableAction_ActionProfileMemberId:
		return b.String(), fmt.Sprintf("m=%d", ta.ActionProfileMemberId), nil
	}
	return "", "", fmt.Errorf("fabric: table entry %s has no action, group or member", b.String())
}

// actionValue is the canonical form of an action and its parameters.
func actionValue(a *p4v1.Action) string {
	ps := make([]*p4v1.Action_Param, len(a.GetParams()))
	copy(ps, a.GetParams())
	sort.Slice(ps, func(i, j int) bool { return ps[i].GetParamId() < ps[j].GetParamId() })
	var v strings.Builder
	fmt.Fprintf(&v, "a=%08x", a.GetActionId())
	for _, p := range ps {
		fmt.Fprintf(&v, ";%d=%s", p.GetParamId(), hexCanon(p.GetValue()))
	}
	return v.String()
}
