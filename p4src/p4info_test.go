package p4src

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
)

// P4Runtime ID prefixes (top byte), as p4c checks them for @id.
const (
	prefixAction           = 0x01
	prefixTable            = 0x02
	prefixValueSet         = 0x03
	prefixControllerHeader = 0x04
	prefixActionProfile    = 0x11
	prefixCounter          = 0x12
	prefixRegister         = 0x16
	prefixDigest           = 0x17
	noActionID             = 21257015 // core.p4's NoAction: p4c's hash of "NoAction"
)

// object is one named P4Info object of any kind.
type object struct {
	kind  string
	id    uint32
	name  string
	alias string
}

func loadP4Info(t *testing.T) *p4configv1.P4Info {
	t.Helper()
	info, err := P4Info()
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func allObjects(info *p4configv1.P4Info) []object {
	var objs []object
	add := func(kind string, p *p4configv1.Preamble) {
		objs = append(objs, object{kind, p.GetId(), p.GetName(), p.GetAlias()})
	}
	for _, x := range info.GetTables() {
		add("table", x.GetPreamble())
	}
	for _, x := range info.GetActions() {
		add("action", x.GetPreamble())
	}
	for _, x := range info.GetActionProfiles() {
		add("action_profile", x.GetPreamble())
	}
	for _, x := range info.GetCounters() {
		add("counter", x.GetPreamble())
	}
	for _, x := range info.GetDirectCounters() {
		add("direct_counter", x.GetPreamble())
	}
	for _, x := range info.GetMeters() {
		add("meter", x.GetPreamble())
	}
	for _, x := range info.GetDirectMeters() {
		add("direct_meter", x.GetPreamble())
	}
	for _, x := range info.GetControllerPacketMetadata() {
		add("controller_packet_metadata", x.GetPreamble())
	}
	for _, x := range info.GetValueSets() {
		add("value_set", x.GetPreamble())
	}
	for _, x := range info.GetRegisters() {
		add("register", x.GetPreamble())
	}
	for _, x := range info.GetDigests() {
		add("digest", x.GetPreamble())
	}
	return objs
}

var kindPrefix = map[string]uint32{
	"action": prefixAction, "table": prefixTable, "value_set": prefixValueSet,
	"controller_packet_metadata": prefixControllerHeader, "action_profile": prefixActionProfile,
	"counter": prefixCounter, "direct_counter": 0x13, "meter": 0x14, "direct_meter": 0x15,
	"register": prefixRegister, "digest": prefixDigest,
}

func TestP4InfoParsesWithArch(t *testing.T) {
	info := loadP4Info(t)
	if got := info.GetPkgInfo().GetArch(); got != "v1model" {
		t.Errorf("pkg_info.arch = %q, want v1model", got)
	}
	if len(info.GetTables()) == 0 || len(info.GetActions()) == 0 {
		t.Fatal("P4Info has no tables or actions")
	}
}

func TestP4InfoIDsPrefixedAndUnique(t *testing.T) {
	info := loadP4Info(t)
	ids := map[uint32]object{}
	names := map[string]object{}
	for _, o := range allObjects(info) {
		if want := kindPrefix[o.kind]; o.id>>24 != want {
			t.Errorf("%s %q: id %#x has prefix %#02x, want %#02x", o.kind, o.name, o.id, o.id>>24, want)
		}
		if prev, dup := ids[o.id]; dup {
			t.Errorf("id %#x used by %s %q and %s %q", o.id, prev.kind, prev.name, o.kind, o.name)
		}
		ids[o.id] = o
		key := o.kind + "/" + o.name
		if _, dup := names[key]; dup {
			t.Errorf("%s name %q used twice", o.kind, o.name)
		}
		names[key] = o
		if o.alias == "" || !strings.HasSuffix(o.name, o.alias) {
			t.Errorf("%s %q: alias %q is not a suffix of the name", o.kind, o.name, o.alias)
		}
	}
}

// sequential checks that ids are 1..n in order.
func sequential(t *testing.T, what string, ids []uint32) {
	t.Helper()
	for i, id := range ids {
		if id != uint32(i+1) {
			t.Errorf("%s: id #%d is %d, want %d", what, i, id, i+1)
		}
	}
}

func TestP4InfoReferencesAndFieldIDs(t *testing.T) {
	info := loadP4Info(t)
	actions := map[uint32]*p4configv1.Action{}
	for _, a := range info.GetActions() {
		actions[a.GetPreamble().GetId()] = a
		var ids []uint32
		for _, p := range a.GetParams() {
			ids = append(ids, p.GetId())
			if p.GetBitwidth() <= 0 {
				t.Errorf("action %s param %s: bitwidth %d", a.GetPreamble().GetName(), p.GetName(), p.GetBitwidth())
			}
		}
		sequential(t, "params of "+a.GetPreamble().GetName(), ids)
	}
	for _, tb := range info.GetTables() {
		name := tb.GetPreamble().GetName()
		var ids []uint32
		for _, m := range tb.GetMatchFields() {
			ids = append(ids, m.GetId())
		}
		sequential(t, "match fields of "+name, ids)
		refs := map[uint32]bool{}
		for _, r := range tb.GetActionRefs() {
			if actions[r.GetId()] == nil {
				t.Errorf("table %s refers to missing action %d", name, r.GetId())
			}
			refs[r.GetId()] = true
		}
		if d := tb.GetInitialDefaultAction(); d != nil && !refs[d.GetActionId()] {
			t.Errorf("table %s: initial default action %d is not among its action_refs", name, d.GetActionId())
		}
		if tb.GetSize() <= 0 {
			t.Errorf("table %s: size %d", name, tb.GetSize())
		}
	}
	for _, c := range info.GetControllerPacketMetadata() {
		var ids []uint32
		for _, m := range c.GetMetadata() {
			ids = append(ids, m.GetId())
		}
		sequential(t, "metadata of "+c.GetPreamble().GetName(), ids)
	}
	for _, d := range info.GetDigests() {
		name := d.GetPreamble().GetName()
		if d.GetTypeSpec().GetStruct().GetName() != name {
			t.Errorf("digest %s: type_spec struct %q", name, d.GetTypeSpec().GetStruct().GetName())
		}
		if info.GetTypeInfo().GetStructs()[name] == nil {
			t.Errorf("digest %s: no type_info struct", name)
		}
	}
	if a := actions[noActionID]; a == nil || a.GetPreamble().GetName() != "NoAction" {
		t.Errorf("NoAction must have id %d", noActionID)
	}
}

// jenkinsOneAtATime is p4c's hash for IDs it derives from names (objects
// without @id: NoAction, v1model digests).
func jenkinsOneAtATime(s string) uint32 {
	var h uint32
	for i := 0; i < len(s); i++ {
		h += uint32(s[i])
		h += h << 10
		h ^= h >> 6
	}
	h += h << 3
	h ^= h >> 11
	h += h << 15
	return h
}

// p4cDerivedID is the ID p4c gives an object of the kind with prefix without an
// @id: the prefix in the top byte, jenkinsOneAtATime(name) in the low 24 bits (the
// first free one on a collision, which our names do not have).
func p4cDerivedID(prefix uint32, name string) uint32 {
	return prefix<<24 | jenkinsOneAtATime(name)&0xffffff
}

// TestDerivedIDsMatchP4c anchors the hash on IDs that p4c 1.2.5.16 really emitted
// (/work/shared/reports/p4c-example: example.p4info.txtpb), then checks the digests of
// our P4Info, whose IDs cannot be pinned in v1model.
func TestDerivedIDsMatchP4c(t *testing.T) {
	anchors := []struct {
		what   string
		prefix uint32
		name   string // the name p4c hashes
		want   uint32 // p4c's output
	}{
		{"core.p4 action NoAction", prefixAction, "NoAction", 21257015},
		{"digest of struct state_change_t", prefixDigest, "state_change_t", 393884964},
		// Controller headers hash the header type's name, not the
		// @controller_header string ("packet_in"), when they carry no @id.
		{"controller header type packet_in_h", prefixControllerHeader, "packet_in_h", 68340960},
		{"controller header type packet_out_h", prefixControllerHeader, "packet_out_h", 74440427},
	}
	for _, a := range anchors {
		if got := p4cDerivedID(a.prefix, a.name); got != a.want {
			t.Errorf("%s: hash gives %d, p4c emitted %d", a.what, got, a.want)
		}
	}
	if noActionID != anchors[0].want {
		t.Errorf("noActionID %d, p4c emitted %d", noActionID, anchors[0].want)
	}
	info := loadP4Info(t)
	for _, d := range info.GetDigests() {
		name := d.GetPreamble().GetName()
		if want := p4cDerivedID(prefixDigest, name); d.GetPreamble().GetId() != want {
			t.Errorf("digest %s: id %#x, p4c derives %#x (v1model digests cannot be pinned)", name, d.GetPreamble().GetId(), want)
		}
	}
}

// TestControllerHeaderIDsAreDerived: the @controller_header types carry no @id
// (whether p4c 1.2.5 honours @id on a header type is unverified), so their P4Info
// IDs are the ones p4c certainly derives from the header type names, which
// TestDerivedIDsMatchP4c anchors on p4c's real output: packet_in_h 68340960 and
// packet_out_h 74440427.
func TestControllerHeaderIDsAreDerived(t *testing.T) {
	info := loadP4Info(t)
	src := p4Sources(t)
	re := regexp.MustCompile(`@controller_header\("(\w+)"\)((?:\s*@\w+(?:\([^)]*\))?)*)\s*header\s+(\w+)`)
	want := map[string]uint32{"packet_in": 68340960, "packet_out": 74440427} // p4c-example
	found := 0
	for _, m := range re.FindAllStringSubmatch(src, -1) {
		found++
		if strings.Contains(m[2], "@id") {
			t.Errorf("controller header type %s carries %s: leave its ID to p4c", m[3], strings.TrimSpace(m[2]))
		}
		derived := p4cDerivedID(prefixControllerHeader, m[3])
		if derived != want[m[1]] {
			t.Errorf("controller header %s: type %s derives %d, p4c emitted %d for its type name", m[1], m[3], derived, want[m[1]])
		}
		var got uint32
		for _, c := range info.GetControllerPacketMetadata() {
			if c.GetPreamble().GetName() == m[1] {
				got = c.GetPreamble().GetId()
			}
		}
		if got != derived {
			t.Errorf("controller header %s (type %s): P4Info id %d, p4c derives %d", m[1], m[3], got, derived)
		}
	}
	if found != 2 || len(info.GetControllerPacketMetadata()) != 2 {
		t.Errorf("%d controller headers in the sources, %d in the P4Info, want 2", found, len(info.GetControllerPacketMetadata()))
	}
}

// ---------------------------------------------------------------------------
// The contract: docs/dataplane.md and p4src/include/defines.p4.
// ---------------------------------------------------------------------------

func readRepoFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", rel))
	if err != nil {
		t.Fatalf("read %s: %v", rel, err)
	}
	return string(b)
}

var reDefine = regexp.MustCompile(`(?m)^#define\s+(\w+)\s+(\d+)\b`)

func defines(t *testing.T) map[string]int {
	t.Helper()
	m := map[string]int{}
	for _, g := range reDefine.FindAllStringSubmatch(readRepoFile(t, "p4src/include/defines.p4"), -1) {
		n, _ := strconv.Atoi(g[2])
		m[g[1]] = n
	}
	return m
}

func resolveSize(t *testing.T, defs map[string]int, s string) int {
	t.Helper()
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	n, ok := defs[s]
	if !ok {
		t.Fatalf("size %q is neither a number nor a #define in defines.p4", s)
	}
	return n
}

// contractSections returns, per "### " heading of docs/dataplane.md, the rows
// of its markdown table whose first cell starts with a digit (an ID).
func contractSections(t *testing.T) map[string][][]string {
	t.Helper()
	doc := readRepoFile(t, "docs/dataplane.md")
	sections := map[string][][]string{}
	current := ""
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "#") {
			current = strings.TrimSpace(strings.TrimLeft(line, "#"))
			continue
		}
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) == 0 || cells[0] == "" || cells[0][0] < '0' || cells[0][0] > '9' {
			continue
		}
		sections[current] = append(sections[current], cells)
	}
	return sections
}

func parseID(t *testing.T, s string) uint32 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimSpace(s), 0, 32)
	if err != nil {
		t.Fatalf("bad id %q: %v", s, err)
	}
	return uint32(v)
}

var reBitField = regexp.MustCompile(`(\w+) bit<(\d+)>`)

type field struct {
	name  string
	width int32
}

func bitFields(s string) []field {
	var fs []field
	for _, g := range reBitField.FindAllStringSubmatch(s, -1) {
		w, _ := strconv.Atoi(g[2])
		fs = append(fs, field{g[1], int32(w)})
	}
	return fs
}

func TestContractSizesMatchDefines(t *testing.T) {
	defs := defines(t)
	doc := readRepoFile(t, "docs/dataplane.md")
	re := regexp.MustCompile("`([A-Z][A-Z0-9_]+)` (0x[0-9A-Fa-f]+|\\d+)")
	seen := 0
	for _, g := range re.FindAllStringSubmatch(doc, -1) {
		want64, _ := strconv.ParseInt(g[2], 0, 64)
		want := int(want64)
		got, ok := defs[g[1]]
		if !ok {
			// Typed constants (CPU_PORT, CNP_DSCP, ...) live as P4 consts.
			reConst := regexp.MustCompile(`const\s+bit<\d+>\s+` + g[1] + `\s*=\s*(0x[0-9A-Fa-f]+|\d+)\s*;`)
			m := reConst.FindStringSubmatch(readRepoFile(t, "p4src/include/defines.p4") + readRepoFile(t, "p4src/v1model/defines.p4"))
			if m == nil {
				t.Errorf("contract constant %s is not in defines.p4", g[1])
				continue
			}
			v, _ := strconv.ParseInt(m[1], 0, 64)
			got = int(v)
		}
		if got != want {
			t.Errorf("%s: defines.p4 has %d, docs/dataplane.md %d", g[1], got, want)
		}
		seen++
	}
	if seen < 10 {
		t.Errorf("found only %d constants in docs/dataplane.md", seen)
	}
}

func TestContractObjectsPresent(t *testing.T) {
	info := loadP4Info(t)
	defs := defines(t)
	sec := contractSections(t)
	for _, want := range []string{"Controller packet metadata", "Parser value set", "Actions", "Tables", sectionActionProfiles,
		sectionCounters, sectionQueueCounters, sectionRegisters, "Digests"} {
		if len(sec[want]) == 0 {
			t.Fatalf("docs/dataplane.md: no rows under %q", want)
		}
	}

	actionsByID := map[uint32]*p4configv1.Action{}
	actionsByAlias := map[string]*p4configv1.Action{}
	for _, a := range info.GetActions() {
		actionsByID[a.GetPreamble().GetId()] = a
		actionsByAlias[a.GetPreamble().GetAlias()] = a
	}

	// Controller packet metadata.
	cpm := map[uint32]*p4configv1.ControllerPacketMetadata{}
	for _, c := range info.GetControllerPacketMetadata() {
		cpm[c.GetPreamble().GetId()] = c
	}
	for _, row := range sec["Controller packet metadata"] {
		c := cpm[parseID(t, row[0])]
		if c == nil || c.GetPreamble().GetName() != row[1] {
			t.Errorf("controller header %s %s missing", row[0], row[1])
			continue
		}
		fs := bitFields(row[2])
		if len(fs) != len(c.GetMetadata()) {
			t.Errorf("controller header %s: %d fields, contract %d", row[1], len(c.GetMetadata()), len(fs))
			continue
		}
		for i, f := range fs {
			m := c.GetMetadata()[i]
			if m.GetName() != f.name || m.GetBitwidth() != f.width {
				t.Errorf("controller header %s field %d: %s/%d, contract %s/%d", row[1], i+1, m.GetName(), m.GetBitwidth(), f.name, f.width)
			}
		}
	}

	// Value sets.
	for _, row := range sec["Parser value set"] {
		id := parseID(t, row[0])
		found := false
		for _, v := range info.GetValueSets() {
			if v.GetPreamble().GetId() != id {
				continue
			}
			found = true
			w, _ := strconv.Atoi(row[2])
			if v.GetPreamble().GetName() != row[1] || len(v.GetMatch()) != 1 || v.GetMatch()[0].GetBitwidth() != int32(w) ||
				int(v.GetSize()) != resolveSize(t, defs, row[3]) {
				t.Errorf("value set %s differs from the contract", row[1])
			}
		}
		if !found {
			t.Errorf("value set %s %s missing", row[0], row[1])
		}
	}

	// Actions.
	for _, row := range sec["Actions"] {
		a := actionsByID[parseID(t, row[0])]
		if a == nil || a.GetPreamble().GetName() != row[1] {
			t.Errorf("action %s %s missing", row[0], row[1])
			continue
		}
		fs := bitFields(row[2])
		if len(fs) != len(a.GetParams()) {
			t.Errorf("action %s: %d params, contract %d", row[1], len(a.GetParams()), len(fs))
			continue
		}
		for i, f := range fs {
			p := a.GetParams()[i]
			if p.GetName() != f.name || p.GetBitwidth() != f.width {
				t.Errorf("action %s param %d: %s/%d, contract %s/%d", row[1], i+1, p.GetName(), p.GetBitwidth(), f.name, f.width)
			}
		}
	}

	// Tables.
	tables := map[uint32]*p4configv1.Table{}
	for _, tb := range info.GetTables() {
		tables[tb.GetPreamble().GetId()] = tb
	}
	reKey := regexp.MustCompile(`(\w+): (\w+) (\d+)`)
	for _, row := range sec["Tables"] {
		tb := tables[parseID(t, row[0])]
		if tb == nil || tb.GetPreamble().GetName() != row[1] {
			t.Errorf("table %s %s missing", row[0], row[1])
			continue
		}
		keys := reKey.FindAllStringSubmatch(row[2], -1)
		if len(keys) != len(tb.GetMatchFields()) {
			t.Errorf("table %s: %d match fields, contract %d", row[1], len(tb.GetMatchFields()), len(keys))
		} else {
			for i, k := range keys {
				m := tb.GetMatchFields()[i]
				w, _ := strconv.Atoi(k[3])
				if m.GetName() != k[1] || strings.ToLower(m.GetMatchType().String()) != k[2] || m.GetBitwidth() != int32(w) {
					t.Errorf("table %s key %d: %s %s %d, contract %s %s %s", row[1], i+1, m.GetName(), m.GetMatchType(), m.GetBitwidth(), k[1], k[2], k[3])
				}
			}
		}
		var wantRefs []string
		for _, a := range strings.Split(row[3], ",") {
			wantRefs = append(wantRefs, strings.TrimSpace(a))
		}
		var gotRefs []string
		for _, r := range tb.GetActionRefs() {
			gotRefs = append(gotRefs, actionsByID[r.GetId()].GetPreamble().GetAlias())
		}
		if strings.Join(gotRefs, ",") != strings.Join(wantRefs, ",") {
			t.Errorf("table %s: actions %v, contract %v", row[1], gotRefs, wantRefs)
		}
		dflt := strings.Fields(row[4])[0]
		if a := actionsByAlias[dflt]; a == nil || tb.GetInitialDefaultAction().GetActionId() != a.GetPreamble().GetId() {
			t.Errorf("table %s: default action is not %s", row[1], dflt)
		}
		if int(tb.GetSize()) != resolveSize(t, defs, row[5]) {
			t.Errorf("table %s: size %d, contract %s", row[1], tb.GetSize(), row[5])
		}
	}

	// Counters: by port, unit BOTH.
	counters := map[uint32]*p4configv1.Counter{}
	for _, c := range info.GetCounters() {
		counters[c.GetPreamble().GetId()] = c
	}
	for section, size := range map[string]string{sectionCounters: "NUM_PORTS", sectionQueueCounters: "NUM_QUEUES"} {
		for _, row := range sec[section] {
			c := counters[parseID(t, row[0])]
			if c == nil || c.GetPreamble().GetName() != row[1] {
				t.Errorf("counter %s %s missing", row[0], row[1])
				continue
			}
			if c.GetSpec().GetUnit() != p4configv1.CounterSpec_BOTH || int(c.GetSize()) != defs[size] {
				t.Errorf("counter %s: unit %v size %d, contract BOTH %s", row[1], c.GetSpec().GetUnit(), c.GetSize(), size)
			}
		}
	}
	if defs["NUM_QUEUES"] != 8*defs["NUM_PORTS"] {
		t.Errorf("NUM_QUEUES %d is not NUM_PORTS * 8", defs["NUM_QUEUES"])
	}
	if n := len(sec[sectionCounters]) + len(sec[sectionQueueCounters]); n != len(info.GetCounters()) {
		t.Errorf("contract lists %d counters, P4Info has %d", n, len(info.GetCounters()))
	}

	// Action profiles: | ID | name | tables | selector | size |.
	profiles := map[uint32]*p4configv1.ActionProfile{}
	for _, ap := range info.GetActionProfiles() {
		profiles[ap.GetPreamble().GetId()] = ap
	}
	for _, row := range sec[sectionActionProfiles] {
		ap := profiles[parseID(t, row[0])]
		if ap == nil || ap.GetPreamble().GetName() != row[1] {
			t.Errorf("action profile %s %s missing", row[0], row[1])
			continue
		}
		var names []string
		for _, id := range ap.GetTableIds() {
			names = append(names, tables[id].GetPreamble().GetAlias())
		}
		if strings.Join(names, ", ") != row[2] || fmt.Sprint(ap.GetWithSelector()) != row[3] || int(ap.GetSize()) != resolveSize(t, defs, row[4]) {
			t.Errorf("action profile %s: tables %v selector %v size %d, contract %v", row[1], names, ap.GetWithSelector(), ap.GetSize(), row)
		}
		for _, id := range ap.GetTableIds() {
			if tables[id].GetImplementationId() != ap.GetPreamble().GetId() {
				t.Errorf("table %s: implementation_id %#x, not action profile %s", tables[id].GetPreamble().GetName(), tables[id].GetImplementationId(), row[1])
			}
		}
	}
	if len(sec[sectionActionProfiles]) != len(info.GetActionProfiles()) {
		t.Errorf("contract lists %d action profiles, P4Info has %d", len(sec[sectionActionProfiles]), len(info.GetActionProfiles()))
	}

	// Registers (with the "0xA .. 0xB | x_0 .. x_15" range rows).
	registers := map[uint32]*p4configv1.Register{}
	for _, r := range info.GetRegisters() {
		registers[r.GetPreamble().GetId()] = r
	}
	reRange := regexp.MustCompile(`^(\w+?)(\d+) \.\. (\w+?)(\d+)$`)
	nRegs := 0
	for _, row := range sec[sectionRegisters] {
		width, _ := strconv.Atoi(row[2])
		size := resolveSize(t, defs, row[3])
		type reg struct {
			id   uint32
			name string
		}
		var want []reg
		if ids := strings.Split(row[0], ".."); len(ids) == 2 {
			lo, hi := parseID(t, ids[0]), parseID(t, ids[1])
			m := reRange.FindStringSubmatch(row[1])
			if m == nil {
				t.Fatalf("register range row %q: bad names", row[1])
			}
			first, _ := strconv.Atoi(m[2])
			for id := lo; id <= hi; id++ {
				want = append(want, reg{id, fmt.Sprintf("%s%d", m[1], first+int(id-lo))})
			}
		} else {
			want = append(want, reg{parseID(t, row[0]), row[1]})
		}
		for _, w := range want {
			nRegs++
			r := registers[w.id]
			if r == nil || r.GetPreamble().GetName() != w.name {
				t.Errorf("register %#x %s missing", w.id, w.name)
				continue
			}
			if r.GetTypeSpec().GetBitstring().GetBit().GetBitwidth() != int32(width) || int(r.GetSize()) != size {
				t.Errorf("register %s: width %d size %d, contract %d %d", w.name,
					r.GetTypeSpec().GetBitstring().GetBit().GetBitwidth(), r.GetSize(), width, size)
			}
		}
	}
	if nRegs != len(info.GetRegisters()) {
		t.Errorf("contract lists %d registers, P4Info has %d", nRegs, len(info.GetRegisters()))
	}

	// Digests and their structs.
	for _, row := range sec["Digests"] {
		id := parseID(t, strings.Fields(row[0])[0])
		var d *p4configv1.Digest
		for _, x := range info.GetDigests() {
			if x.GetPreamble().GetId() == id {
				d = x
			}
		}
		if d == nil || d.GetPreamble().GetName() != row[1] {
			t.Errorf("digest %s %s missing", row[0], row[1])
			continue
		}
		st := info.GetTypeInfo().GetStructs()[row[1]]
		fs := bitFields(row[2])
		if st == nil || len(st.GetMembers()) != len(fs) {
			t.Errorf("digest %s: struct members differ from the contract", row[1])
			continue
		}
		for i, f := range fs {
			m := st.GetMembers()[i]
			if m.GetName() != f.name || m.GetTypeSpec().GetBitstring().GetBit().GetBitwidth() != f.width {
				t.Errorf("digest %s member %d: %s, contract %s bit<%d>", row[1], i+1, m.GetName(), f.name, f.width)
			}
		}
	}
}

// ---------------------------------------------------------------------------
// A cheap static cross-check of the P4 sources against the committed P4Info:
// every @id in the .p4 files names an object of the P4Info with that ID and
// name, and every P4Info object (but NoAction and the name-derived digests)
// carries an @id in the sources. Not a compiler: p4c's own P4Info, diffed by
// build.sh, is the real check.
// ---------------------------------------------------------------------------

var (
	reLineComment  = regexp.MustCompile(`//[^\n]*`)
	reBlockComment = regexp.MustCompile(`(?s)/\*.*?\*/`)
	reAnyID        = regexp.MustCompile(`@id\(\s*([^)]*?)\s*\)`)
	reP4Decls      = []struct {
		kind string
		re   *regexp.Regexp
	}{
		{"action", regexp.MustCompile(`@id\(\s*([^)]*?)\s*\)\s*action\s+(\w+)`)},
		{"table", regexp.MustCompile(`@id\(\s*([^)]*?)\s*\)\s*table\s+(\w+)`)},
		{"counter", regexp.MustCompile(`@id\(\s*([^)]*?)\s*\)\s*counter\s*\([^;]*?\)\s*(\w+)\s*;`)},
		{"register", regexp.MustCompile(`@id\(\s*([^)]*?)\s*\)\s*register\s*<\s*bit\s*<\s*\d+\s*>\s*>\s*\([^)]*\)\s*(\w+)\s*;`)},
		{"value_set", regexp.MustCompile(`@id\(\s*([^)]*?)\s*\)\s*value_set\s*<[^>]*>+\s*\([^)]*\)\s*(\w+)\s*;`)},
		{"action_profile", regexp.MustCompile(`@id\(\s*([^)]*?)\s*\)\s*action_selector\s*\([^;]*?\)\s*(\w+)\s*;`)},
	}
	reDigestCall = regexp.MustCompile(`digest\s*<\s*(\w+)\s*>`)
)

func p4Sources(t *testing.T) string {
	t.Helper()
	var files []string
	for _, dir := range []string{"include", "v1model"} {
		m, err := filepath.Glob(filepath.Join(dir, "*.p4"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	if len(files) == 0 {
		t.Fatal("no .p4 files")
	}
	var all strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := reBlockComment.ReplaceAllString(string(b), "")
		all.WriteString(reLineComment.ReplaceAllString(s, ""))
		all.WriteString("\n")
	}
	return all.String()
}

func TestP4SourcesMatchP4Info(t *testing.T) {
	info := loadP4Info(t)
	src := p4Sources(t)

	byID := map[uint32]object{}
	for _, o := range allObjects(info) {
		byID[o.id] = o
	}
	inSource := map[uint32]bool{}
	matched := 0
	for _, d := range reP4Decls {
		for _, g := range d.re.FindAllStringSubmatch(src, -1) {
			idText, name := g[1], g[2]
			id := parseID(t, idText)
			matched++
			inSource[id] = true
			o, ok := byID[id]
			if !ok {
				t.Errorf("P4 %s %s @id(%s) is not in the P4Info", d.kind, name, idText)
				continue
			}
			if o.kind != d.kind || o.alias != name {
				t.Errorf("P4 %s %s @id(%s): the P4Info has %s %q there", d.kind, name, idText, o.kind, o.name)
			}
		}
	}
	if all := len(reAnyID.FindAllString(src, -1)); all != matched {
		t.Errorf("%d @id annotations in the P4 sources, only %d recognised by this test", all, matched)
	}
	for _, o := range allObjects(info) {
		// Digests and controller headers: IDs derived from names (their own tests).
		if o.kind == "digest" || o.kind == "controller_packet_metadata" || o.id == noActionID {
			continue
		}
		if !inSource[o.id] {
			t.Errorf("P4Info %s %q (%#x) has no @id in the P4 sources", o.kind, o.name, o.id)
		}
	}

	// Digests: the struct types passed to digest<T>() are the P4Info's digests.
	called := map[string]bool{}
	for _, g := range reDigestCall.FindAllStringSubmatch(src, -1) {
		called[g[1]] = true
	}
	for _, d := range info.GetDigests() {
		if !called[d.GetPreamble().GetName()] {
			t.Errorf("P4Info digest %s is never sent by the P4 program", d.GetPreamble().GetName())
		}
		delete(called, d.GetPreamble().GetName())
	}
	for name := range called {
		t.Errorf("the P4 program sends digest %s, which the P4Info lacks", name)
	}

	// Match-field names: every @name("...") on a key is a match field.
	reKeyName := regexp.MustCompile(`:\s*(?:exact|lpm|ternary|range|optional)\s*@name\("(\w+)"\)`)
	fields := map[string]bool{}
	for _, tb := range info.GetTables() {
		for _, m := range tb.GetMatchFields() {
			fields[m.GetName()] = true
		}
	}
	for _, g := range reKeyName.FindAllStringSubmatch(src, -1) {
		if !fields[g[1]] {
			t.Errorf("P4 key @name(%q) is not a match field of the P4Info", g[1])
		}
	}
}

func TestBMv2JSONPathIsUnderSourceTree(t *testing.T) {
	t.Setenv(BMv2JSONEnv, "")
	path, _ := BMv2JSONPath()
	if dir := SourceDir(); dir != "" && path != filepath.Join(dir, BMv2JSONRelPath) {
		t.Errorf("BMv2JSONPath = %q, want under %q", path, dir)
	}
	t.Setenv(BMv2JSONEnv, "/nonexistent/fastcnp.json")
	if path, ok := BMv2JSONPath(); ok || path != "/nonexistent/fastcnp.json" {
		t.Errorf("override: got %q %v", path, ok)
	}
}

// Headings of docs/dataplane.md whose tables the contract test reads.
const (
	sectionCounters       = "Counters (indexed by port, NUM_PORTS cells, unit BOTH)"
	sectionQueueCounters  = "Counters indexed by queue (port * 8 + priority, NUM_QUEUES cells, unit BOTH)"
	sectionRegisters      = "Registers (data-plane state; top-level instances shared by ingress and egress)"
	sectionActionProfiles = "Action profiles"
)
