package p4src

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
)

// A declaration-level reading of the P4 sources, the way p4c's P4Runtime serializer
// sees them, cross-checked fact by fact against the committed P4Info: names (fully
// qualified by the control), @ids and their kind prefixes, action parameters and
// their widths, table keys (@name, match kind, width of the key expression), action
// lists, default actions, sizes, table implementations, action selectors, counter
// units, register widths, the value set, the controller headers and the digest
// structs. It reads declarations, not statements:
// p4c's own P4Info (p4src/build.sh) remains the final word.

// p4Program is what the test extracts from the .p4 files.
type p4Program struct {
	defines  map[string]int64       // #define NAME NUMBER
	typedefs map[string]int         // typedef bit<W> NAME
	types    map[string][]p4Field   // header and struct types, fields in order
	isHeader map[string]bool        // header (not struct) types
	ctrlHdr  map[string]p4CtrlHdr   // controller header types by type name
	controls map[string]p4Container // controls and parsers, by name
	regs     []p4Extern             // top-level registers
	digests  []string               // digest<T> type arguments, in call order
	ids      []p4ID                 // every @id(...) with what follows it
}

type p4Field struct {
	name string
	typ  string // "bit<W>", a typedef or a struct/header type name
}

type p4CtrlHdr struct {
	name, idText string
}

type p4Container struct {
	name    string
	params  map[string]string // parameter name -> type name
	actions []p4Action
	tables  []p4Table
	externs []p4Extern // counters, value sets
	decls   string     // the body without nested blocks (what is declared in it)
	body    string     // the whole body
}

type p4Action struct {
	name, idText string
	params       []p4Field
}

type p4Key struct {
	expr, kind, name string
}

type p4Table struct {
	name, idText   string
	keys           []p4Key // match fields (selector keys are not: see selectors)
	selectors      []string
	actions        []string
	defaultAction  string
	constDefault   bool
	size           string
	implementation string // an action_selector / action_profile instance of the control
	constEntries   bool   // const entries = { ... }
}

type p4Extern struct {
	kind, name, idText string // kind: counter, register, value_set, action_selector
	width              int    // register cell / value set width; selector output width
	size               string
	unit               string // counter unit; selector hash algorithm
}

type p4ID struct {
	text, kind string // kind: the keyword after the annotations
}

var (
	// A preprocessor line with its continuation lines (a line ending in '\').
	reDefineAny    = regexp.MustCompile(`(?m)^[ \t]*#(?:[^\n]*\\\n)*[^\n]*`)
	reDefineNum    = regexp.MustCompile(`^#define\s+(\w+)\s+(0x[0-9A-Fa-f]+|\d+)\s*$`)
	reTypedef      = regexp.MustCompile(`typedef\s+bit\s*<\s*(\d+)\s*>\s+(\w+)\s*;`)
	reTypeDecl     = regexp.MustCompile(`((?:@\w+(?:\([^)]*\))?\s*)*)\b(header|struct)\s+(\w+)\s*\{`)
	reFieldDecl    = regexp.MustCompile(`^(?:@\w+\([^)]*\)\s*)*(bit\s*<\s*\d+\s*>|\w+)\s+(\w+)$`)
	reContainer    = regexp.MustCompile(`\b(control|parser)\s+(\w+)\s*\(([^)]*)\)\s*\{`)
	reParam        = regexp.MustCompile(`^(?:in|out|inout)?\s*(\w+(?:\s*<\s*\d+\s*>)?)\s+(\w+)$`)
	reAnnotatedID  = regexp.MustCompile(`@id\(\s*([^)]*?)\s*\)((?:\s*@\w+(?:\([^)]*\))?)*)\s*(\w+)`)
	reActionDecl   = regexp.MustCompile(`@id\(\s*([^)]*?)\s*\)\s*action\s+(\w+)\s*\(([^)]*)\)`)
	reTableDecl    = regexp.MustCompile(`@id\(\s*([^)]*?)\s*\)\s*table\s+(\w+)\s*\{`)
	reCounterDecl  = regexp.MustCompile(`@id\(\s*([^)]*?)\s*\)\s*counter\s*\(\s*(\w+)\s*,\s*CounterType\.(\w+)\s*\)\s*(\w+)\s*;`)
	reRegisterDecl = regexp.MustCompile(`@id\(\s*([^)]*?)\s*\)\s*register\s*<\s*bit\s*<\s*(\d+)\s*>\s*>\s*\(\s*(\w+)\s*\)\s*(\w+)\s*;`)
	reValueSetDecl = regexp.MustCompile(`@id\(\s*([^)]*?)\s*\)\s*value_set\s*<\s*bit\s*<\s*(\d+)\s*>\s*>\s*\(\s*(\w+)\s*\)\s*(\w+)\s*;`)
	reCtrlHdrDecl  = regexp.MustCompile(`@controller_header\("(\w+)"\)\s*(?:@id\(\s*([^)]*?)\s*\)\s*)?header\s+(\w+)`)
	reKeyElem      = regexp.MustCompile(`^(.+?)\s*:\s*(exact|lpm|ternary|range|optional)\s*@name\("(\w+)"\)$`)
	reSelectorKey  = regexp.MustCompile(`^(.+?)\s*:\s*selector$`)
	reTableProp    = regexp.MustCompile(`(?s)\b(key|actions)\s*=\s*\{(.*?)\}|\b(const\s+)?default_action\s*=\s*(\w+)\s*\(\s*\)\s*;|\bsize\s*=\s*(\w+)\s*;|\bimplementation\s*=\s*(\w+)\s*;`)
	reSelectorDecl = regexp.MustCompile(`@id\(\s*([^)]*?)\s*\)\s*action_selector\s*\(\s*HashAlgorithm\.(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*\)\s*(\w+)\s*;`)
	reBitType      = regexp.MustCompile(`^bit\s*<\s*(\d+)\s*>$`)
	reConstEntries = regexp.MustCompile(`\bconst\s+entries\s*=`)
)

// matchClose returns the index just past the bracket that closes the '{' or '(' at open.
func matchClose(s string, open int) (int, error) {
	opening := s[open]
	closing := map[byte]byte{'{': '}', '(': ')'}[opening]
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case opening:
			depth++
		case closing:
			depth--
			if depth == 0 {
				return i + 1, nil
			}
		}
	}
	return 0, fmt.Errorf("unbalanced '%c' at offset %d", opening, open)
}

// topLevel returns body with every nested {...} block removed (what is declared
// directly in a container, not inside actions, tables or apply).
func topLevel(body string) string {
	var b strings.Builder
	depth := 0
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '{':
			depth++
			continue
		case '}':
			depth--
			continue
		}
		if depth == 0 {
			b.WriteByte(body[i])
		}
	}
	return b.String()
}

func parseP4Program(t *testing.T) *p4Program {
	t.Helper()
	return parseP4Source(t, p4Sources(t))
}

// parseP4Source reads the declarations of raw, a program's sources with their
// comments stripped (the TNA program's reader adds its externs: tnainfo_test.go).
func parseP4Source(t *testing.T, raw string) *p4Program {
	t.Helper()
	prog := &p4Program{defines: map[string]int64{}, typedefs: map[string]int{}, types: map[string][]p4Field{},
		isHeader: map[string]bool{}, ctrlHdr: map[string]p4CtrlHdr{}, controls: map[string]p4Container{}}
	for _, d := range reDefineAny.FindAllString(raw, -1) {
		if m := reDefineNum.FindStringSubmatch(strings.TrimSpace(d)); m != nil {
			v, err := strconv.ParseInt(m[2], 0, 64)
			if err != nil {
				t.Fatalf("#define %s: %v", m[1], err)
			}
			prog.defines[m[1]] = v
		}
	}
	src := reDefineAny.ReplaceAllString(raw, "") // the program without preprocessor lines
	for _, m := range reTypedef.FindAllStringSubmatch(src, -1) {
		w, _ := strconv.Atoi(m[1])
		prog.typedefs[m[2]] = w
	}
	for _, loc := range reTypeDecl.FindAllStringSubmatchIndex(src, -1) {
		kind, name := src[loc[4]:loc[5]], src[loc[6]:loc[7]]
		end, err := matchClose(src, loc[1]-1)
		if err != nil {
			t.Fatalf("%s %s: %v", kind, name, err)
		}
		var fields []p4Field
		for _, decl := range strings.Split(src[loc[1]:end-1], ";") {
			decl = strings.Join(strings.Fields(decl), " ")
			if decl == "" {
				continue
			}
			m := reFieldDecl.FindStringSubmatch(decl)
			if m == nil {
				t.Fatalf("%s %s: cannot read field %q", kind, name, decl)
			}
			fields = append(fields, p4Field{name: m[2], typ: strings.ReplaceAll(m[1], " ", "")})
		}
		prog.types[name] = fields
		prog.isHeader[name] = kind == "header"
	}
	for _, m := range reCtrlHdrDecl.FindAllStringSubmatch(src, -1) {
		prog.ctrlHdr[m[3]] = p4CtrlHdr{name: m[1], idText: m[2]}
	}
	for _, m := range reAnnotatedID.FindAllStringSubmatch(src, -1) {
		prog.ids = append(prog.ids, p4ID{text: m[1], kind: m[3]})
	}
	for _, m := range reDigestCall.FindAllStringSubmatch(src, -1) {
		prog.digests = append(prog.digests, m[1])
	}
	// Containers: controls and parsers with a body (not control type declarations).
	covered := make([]bool, len(src))
	for _, loc := range reContainer.FindAllStringSubmatchIndex(src, -1) {
		name := src[loc[4]:loc[5]]
		end, err := matchClose(src, loc[1]-1)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i := loc[0]; i < end; i++ {
			covered[i] = true
		}
		c := p4Container{name: name, params: map[string]string{}, decls: topLevel(src[loc[1]:end]), body: src[loc[1]:end]}
		for _, p := range strings.Split(src[loc[6]:loc[7]], ",") {
			if m := reParam.FindStringSubmatch(strings.Join(strings.Fields(p), " ")); m != nil {
				c.params[m[2]] = m[1]
			}
		}
		body := src[loc[1]:end]
		decls := topLevel(body) // tables' and actions' bodies removed
		for _, m := range reActionDecl.FindAllStringSubmatch(decls, -1) {
			a := p4Action{name: m[2], idText: m[1]}
			for _, p := range strings.Split(m[3], ",") {
				p = strings.Join(strings.Fields(p), " ")
				if p == "" {
					continue
				}
				pm := reParam.FindStringSubmatch(p)
				if pm == nil {
					t.Fatalf("action %s: cannot read parameter %q", a.name, p)
				}
				a.params = append(a.params, p4Field{name: pm[2], typ: strings.ReplaceAll(pm[1], " ", "")})
			}
			c.actions = append(c.actions, a)
		}
		for _, tl := range reTableDecl.FindAllStringSubmatchIndex(body, -1) {
			tend, err := matchClose(body, tl[1]-1)
			if err != nil {
				t.Fatalf("table: %v", err)
			}
			tb := p4Table{name: body[tl[4]:tl[5]], idText: body[tl[2]:tl[3]],
				constEntries: reConstEntries.MatchString(body[tl[1] : tend-1])}
			for _, pm := range reTableProp.FindAllStringSubmatch(body[tl[1]:tend-1], -1) {
				switch {
				case pm[1] == "key":
					for _, k := range strings.Split(pm[2], ";") {
						k = strings.Join(strings.Fields(k), " ")
						if k == "" {
							continue
						}
						if sm := reSelectorKey.FindStringSubmatch(k); sm != nil {
							tb.selectors = append(tb.selectors, sm[1])
							continue
						}
						km := reKeyElem.FindStringSubmatch(k)
						if km == nil {
							t.Fatalf("table %s: key element %q lacks a match kind or @name", tb.name, k)
						}
						tb.keys = append(tb.keys, p4Key{expr: km[1], kind: km[2], name: km[3]})
					}
				case pm[1] == "actions":
					for _, a := range strings.Split(pm[2], ";") {
						if a = strings.TrimSpace(a); a != "" {
							tb.actions = append(tb.actions, a)
						}
					}
				case pm[4] != "":
					tb.defaultAction, tb.constDefault = pm[4], pm[3] != ""
				case pm[5] != "":
					tb.size = pm[5]
				case pm[6] != "":
					tb.implementation = pm[6]
				}
			}
			c.tables = append(c.tables, tb)
		}
		for _, m := range reCounterDecl.FindAllStringSubmatch(decls, -1) {
			c.externs = append(c.externs, p4Extern{kind: "counter", idText: m[1], size: m[2], unit: m[3], name: m[4]})
		}
		for _, m := range reSelectorDecl.FindAllStringSubmatch(decls, -1) {
			w := int(prog.size(t, m[4]))
			c.externs = append(c.externs, p4Extern{kind: "action_selector", idText: m[1], unit: m[2], size: m[3], width: w, name: m[5]})
		}
		for _, m := range reValueSetDecl.FindAllStringSubmatch(decls, -1) {
			w, _ := strconv.Atoi(m[2])
			c.externs = append(c.externs, p4Extern{kind: "value_set", idText: m[1], width: w, size: m[3], name: m[4]})
		}
		if _, dup := prog.controls[name]; dup {
			t.Fatalf("two containers named %s", name)
		}
		prog.controls[name] = c
	}
	// Registers: top-level only (a register inside a control would be named
	// Control.name by p4c).
	var outside strings.Builder
	for i := range src {
		if !covered[i] {
			outside.WriteByte(src[i])
		}
	}
	for _, m := range reRegisterDecl.FindAllStringSubmatch(outside.String(), -1) {
		w, _ := strconv.Atoi(m[2])
		prog.regs = append(prog.regs, p4Extern{kind: "register", idText: m[1], width: w, size: m[3], name: m[4]})
	}
	if n := len(reRegisterDecl.FindAllString(src, -1)); n != len(prog.regs) {
		t.Errorf("%d registers declared, %d at top level: p4c would qualify the others by their control", n, len(prog.regs))
	}
	return prog
}

// width returns the bit width of a type name.
func (p *p4Program) width(t *testing.T, typ string) int {
	t.Helper()
	if m := reBitType.FindStringSubmatch(typ); m != nil {
		w, _ := strconv.Atoi(m[1])
		return w
	}
	if w, ok := p.typedefs[typ]; ok {
		return w
	}
	t.Fatalf("type %q is neither bit<W> nor a typedef of one", typ)
	return 0
}

// v1model standard_metadata_t fields a key could use.
var standardMetadataWidths = map[string]int{"ingress_port": 9, "egress_spec": 9, "egress_port": 9, "instance_type": 32, "packet_length": 32, "priority": 3}

// keyWidth resolves the width of a key expression of control c, as p4c types it.
func (p *p4Program) keyWidth(t *testing.T, c p4Container, expr string) int {
	t.Helper()
	parts := strings.Split(expr, ".")
	if len(parts) == 3 && parts[2] == "isValid()" {
		if !p.isHeader[p.fieldType(t, c.params[parts[0]], parts[1])] {
			t.Fatalf("key %s: isValid() of a non-header", expr)
		}
		return 1 // bool: P4Runtime bitwidth 1
	}
	typ := c.params[parts[0]]
	if typ == "standard_metadata_t" && len(parts) == 2 {
		w, ok := standardMetadataWidths[parts[1]]
		if !ok {
			t.Fatalf("key %s: unknown standard_metadata field", expr)
		}
		return w
	}
	if typ == "" || len(parts) < 2 {
		t.Fatalf("key %s: not a parameter field of %s", expr, c.name)
	}
	for _, f := range parts[1:] {
		typ = p.fieldType(t, typ, f)
	}
	return p.width(t, typ)
}

func (p *p4Program) fieldType(t *testing.T, typ, field string) string {
	t.Helper()
	for _, f := range p.types[typ] {
		if f.name == field {
			return f.typ
		}
	}
	t.Fatalf("type %q has no field %q", typ, field)
	return ""
}

// size resolves a size: a number or a #define.
func (p *p4Program) size(t *testing.T, s string) int64 {
	t.Helper()
	if v, err := strconv.ParseInt(s, 0, 64); err == nil {
		return v
	}
	v, ok := p.defines[s]
	if !ok {
		t.Fatalf("size %q is neither a number nor a #define", s)
	}
	return v
}

// idPrefixes are the P4Runtime ID prefixes p4c enforces for @id, by the keyword that
// follows the annotations.
var idPrefixes = map[string]uint32{"action": 0x01, "table": 0x02, "value_set": 0x03, "header": 0x04,
	"action_selector": 0x11, "action_profile": 0x11, "counter": 0x12, "direct_counter": 0x13,
	"meter": 0x14, "direct_meter": 0x15, "register": 0x16}

func TestP4SourceIDsHaveTheirKindPrefix(t *testing.T) {
	prog := parseP4Program(t)
	if len(prog.ids) < 40 {
		t.Fatalf("read only %d @id annotations", len(prog.ids))
	}
	seen := map[uint32]string{}
	for _, id := range prog.ids {
		v, err := strconv.ParseUint(id.text, 0, 32)
		if err != nil {
			t.Errorf("@id(%s): not an unsigned 32-bit literal", id.text)
			continue
		}
		want, ok := idPrefixes[id.kind]
		if !ok {
			t.Errorf("@id(%s) on %q: p4c does not take @id there for P4Runtime", id.text, id.kind)
			continue
		}
		if uint32(v)>>24 != want {
			t.Errorf("@id(%s) on a %s: prefix %#02x, p4c wants %#02x (\"@id has the wrong 8-bit prefix\")", id.text, id.kind, v>>24, want)
		}
		if prev, dup := seen[uint32(v)]; dup {
			t.Errorf("@id(%s) used twice (%s and %s): p4c fails", id.text, prev, id.kind)
		}
		seen[uint32(v)] = id.kind
	}
}

func TestP4SourceDeclarationsMatchP4Info(t *testing.T) {
	info := loadP4Info(t)
	prog := parseP4Program(t)
	id := func(s string) uint32 { return parseID(t, s) }

	// Actions, by qualified name.
	actionByName := map[string]*p4configv1.Action{}
	for _, a := range info.GetActions() {
		actionByName[a.GetPreamble().GetName()] = a
	}
	tableByName := map[string]*p4configv1.Table{}
	for _, tb := range info.GetTables() {
		tableByName[tb.GetPreamble().GetName()] = tb
	}
	counterByName := map[string]*p4configv1.Counter{}
	for _, c := range info.GetCounters() {
		counterByName[c.GetPreamble().GetName()] = c
	}
	valueSetByName := map[string]*p4configv1.ValueSet{}
	for _, v := range info.GetValueSets() {
		valueSetByName[v.GetPreamble().GetName()] = v
	}
	profileByName := map[string]*p4configv1.ActionProfile{}
	for _, ap := range info.GetActionProfiles() {
		profileByName[ap.GetPreamble().GetName()] = ap
	}
	matched := map[string]int{}

	names := make([]string, 0, len(prog.controls))
	for n := range prog.controls {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, cname := range names {
		c := prog.controls[cname]
		localAction := map[string]string{} // local name -> qualified name
		for _, a := range c.actions {
			q := cname + "." + a.name
			localAction[a.name] = q
			pa := actionByName[q]
			if pa == nil {
				t.Errorf("action %s: not in the P4Info", q)
				continue
			}
			matched["action"]++
			if pa.GetPreamble().GetId() != id(a.idText) || pa.GetPreamble().GetAlias() != a.name {
				t.Errorf("action %s: P4Info id %#x alias %q, source @id(%s)", q, pa.GetPreamble().GetId(), pa.GetPreamble().GetAlias(), a.idText)
			}
			if len(pa.GetParams()) != len(a.params) {
				t.Errorf("action %s: %d params in the P4Info, %d in the source", q, len(pa.GetParams()), len(a.params))
				continue
			}
			for i, p := range a.params {
				pp := pa.GetParams()[i]
				if pp.GetId() != uint32(i+1) || pp.GetName() != p.name || int(pp.GetBitwidth()) != prog.width(t, p.typ) {
					t.Errorf("action %s param %d: P4Info %d %s/%d, source %s %s", q, i+1, pp.GetId(), pp.GetName(), pp.GetBitwidth(), p.typ, p.name)
				}
			}
		}
		actionID := func(local string) uint32 {
			if local == "NoAction" {
				return noActionID
			}
			if q, ok := localAction[local]; ok {
				return actionByName[q].GetPreamble().GetId()
			}
			t.Errorf("%s: action %s is not declared in the control", cname, local)
			return 0
		}
		for _, tb := range c.tables {
			q := cname + "." + tb.name
			pt := tableByName[q]
			if pt == nil {
				t.Errorf("table %s: not in the P4Info", q)
				continue
			}
			matched["table"]++
			if pt.GetPreamble().GetId() != id(tb.idText) || pt.GetPreamble().GetAlias() != tb.name {
				t.Errorf("table %s: P4Info id %#x alias %q, source @id(%s)", q, pt.GetPreamble().GetId(), pt.GetPreamble().GetAlias(), tb.idText)
			}
			if len(pt.GetMatchFields()) != len(tb.keys) {
				t.Errorf("table %s: %d match fields in the P4Info, %d keys in the source", q, len(pt.GetMatchFields()), len(tb.keys))
			} else {
				for i, k := range tb.keys {
					m := pt.GetMatchFields()[i]
					w := prog.keyWidth(t, c, k.expr)
					if m.GetId() != uint32(i+1) || m.GetName() != k.name || int(m.GetBitwidth()) != w ||
						!strings.EqualFold(m.GetMatchType().String(), k.kind) {
						t.Errorf("table %s key %d: P4Info %d %s %v/%d, source %s: %s %s (width %d)", q, i+1,
							m.GetId(), m.GetName(), m.GetMatchType(), m.GetBitwidth(), k.expr, k.kind, k.name, w)
					}
				}
			}
			// p4c adds NoAction, @defaultonly, as the default of a table
			// that declares none: the only form a table with an action
			// selector may have (p4c-example's inc_route).
			var want, got []uint32
			for _, a := range tb.actions {
				want = append(want, actionID(a))
			}
			wantDefault := ""
			switch {
			case tb.implementation != "" && tb.defaultAction == "":
				want = append(want, noActionID)
				wantDefault = "NoAction"
			case tb.implementation != "":
				t.Errorf("table %s: a table with an action selector takes no default_action but p4c's NoAction", q)
			case tb.defaultAction == "":
				t.Errorf("table %s: no default_action in the source (p4c would make NoAction the default)", q)
			default:
				wantDefault = tb.defaultAction
			}
			for _, r := range pt.GetActionRefs() {
				got = append(got, r.GetId())
				wantScope, wantAnn := p4configv1.ActionRef_TABLE_AND_DEFAULT, 0
				if tb.implementation != "" && tb.defaultAction == "" && r.GetId() == noActionID {
					wantScope, wantAnn = p4configv1.ActionRef_DEFAULT_ONLY, 1
				}
				if r.GetScope() != wantScope || len(r.GetAnnotations()) != wantAnn ||
					(wantAnn == 1 && r.GetAnnotations()[0] != "@defaultonly") {
					t.Errorf("table %s: action ref %#x has scope %v annotations %q, want %v (p4c)", q, r.GetId(), r.GetScope(), r.GetAnnotations(), wantScope)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("table %s: action refs %v, source %v", q, got, want)
			}
			if wantDefault != "" {
				if d := actionID(wantDefault); pt.GetInitialDefaultAction().GetActionId() != d {
					t.Errorf("table %s: initial default action %#x, source %s", q, pt.GetInitialDefaultAction().GetActionId(), wantDefault)
				}
			}
			// The implementation: an action selector of the same control.
			wantImpl := uint32(0)
			if tb.implementation != "" {
				found := false
				for _, e := range c.externs {
					if e.kind == "action_selector" && e.name == tb.implementation {
						wantImpl, found = id(e.idText), true
					}
				}
				if !found {
					t.Errorf("table %s: implementation %s is not an action_selector of %s", q, tb.implementation, cname)
				}
				if len(tb.selectors) == 0 {
					t.Errorf("table %s: an action selector without selector key fields", q)
				}
			} else if len(tb.selectors) > 0 {
				t.Errorf("table %s: selector keys without an action selector", q)
			}
			if pt.GetImplementationId() != wantImpl {
				t.Errorf("table %s: implementation_id %#x, source %#x", q, pt.GetImplementationId(), wantImpl)
			}
			wantConst := uint32(0)
			if tb.constDefault {
				wantConst = actionID(tb.defaultAction)
			}
			if pt.GetConstDefaultActionId() != wantConst {
				t.Errorf("table %s: const_default_action_id %#x, source const default %v", q, pt.GetConstDefaultActionId(), tb.constDefault)
			}
			if pt.GetSize() != prog.size(t, tb.size) {
				t.Errorf("table %s: size %d, source %s", q, pt.GetSize(), tb.size)
			}
		}
		for _, e := range c.externs {
			q := cname + "." + e.name
			switch e.kind {
			case "counter":
				pc := counterByName[q]
				if pc == nil {
					t.Errorf("counter %s: not in the P4Info", q)
					continue
				}
				matched["counter"]++
				units := map[string]p4configv1.CounterSpec_Unit{"packets": p4configv1.CounterSpec_PACKETS,
					"bytes": p4configv1.CounterSpec_BYTES, "packets_and_bytes": p4configv1.CounterSpec_BOTH}
				if pc.GetPreamble().GetId() != id(e.idText) || pc.GetPreamble().GetAlias() != e.name ||
					pc.GetSize() != prog.size(t, e.size) || pc.GetSpec().GetUnit() != units[e.unit] {
					t.Errorf("counter %s: P4Info %#x %q size %d unit %v, source @id(%s) size %s unit %s", q,
						pc.GetPreamble().GetId(), pc.GetPreamble().GetAlias(), pc.GetSize(), pc.GetSpec().GetUnit(), e.idText, e.size, e.unit)
				}
			case "action_selector":
				pa := profileByName[q]
				if pa == nil {
					t.Errorf("action selector %s: not in the P4Info", q)
					continue
				}
				matched["action_profile"]++
				var tables []uint32
				for _, tb := range c.tables {
					if tb.implementation == e.name {
						tables = append(tables, id(tb.idText))
					}
				}
				// p4c emits max_group_size only for @max_group_size, which the
				// source does not use.
				if pa.GetPreamble().GetId() != id(e.idText) || pa.GetPreamble().GetAlias() != e.name || !pa.GetWithSelector() ||
					pa.GetSize() != prog.size(t, e.size) || pa.GetMaxGroupSize() != 0 || fmt.Sprint(pa.GetTableIds()) != fmt.Sprint(tables) ||
					pa.GetSelectorSizeSemantics() != nil || pa.GetWeightsDisallowed() {
					t.Errorf("action selector %s: P4Info %v, source @id(%s) size %s tables %v", q, pa, e.idText, e.size, tables)
				}
				if e.unit != "crc16" || e.width <= 0 || e.width > 16 {
					t.Errorf("action selector %s: algorithm %s width %d (the Go pipeline implements crc16)", q, e.unit, e.width)
				}
			case "value_set":
				pv := valueSetByName[q]
				if pv == nil {
					t.Errorf("value set %s: not in the P4Info", q)
					continue
				}
				matched["value_set"]++
				if pv.GetPreamble().GetId() != id(e.idText) || int64(pv.GetSize()) != prog.size(t, e.size) ||
					len(pv.GetMatch()) != 1 || int(pv.GetMatch()[0].GetBitwidth()) != e.width ||
					pv.GetMatch()[0].GetId() != 1 || pv.GetMatch()[0].GetMatchType() != p4configv1.MatchField_EXACT {
					t.Errorf("value set %s: P4Info %v, source @id(%s) bit<%d> size %s", q, pv, e.idText, e.width, e.size)
				}
			}
		}
	}

	// Registers: top-level, named without a control.
	regByName := map[string]*p4configv1.Register{}
	for _, r := range info.GetRegisters() {
		regByName[r.GetPreamble().GetName()] = r
	}
	for _, r := range prog.regs {
		pr := regByName[r.name]
		if pr == nil {
			t.Errorf("register %s: not in the P4Info", r.name)
			continue
		}
		matched["register"]++
		if pr.GetPreamble().GetId() != id(r.idText) || pr.GetPreamble().GetAlias() != r.name ||
			int(pr.GetTypeSpec().GetBitstring().GetBit().GetBitwidth()) != r.width || pr.GetSize() != int32(prog.size(t, r.size)) {
			t.Errorf("register %s: P4Info %#x bit<%d> size %d, source @id(%s) bit<%d> size %s", r.name, pr.GetPreamble().GetId(),
				pr.GetTypeSpec().GetBitstring().GetBit().GetBitwidth(), pr.GetSize(), r.idText, r.width, r.size)
		}
	}

	// Controller headers: named by the annotation, fields in order.
	for typ, h := range prog.ctrlHdr {
		var pc *p4configv1.ControllerPacketMetadata
		for _, x := range info.GetControllerPacketMetadata() {
			if x.GetPreamble().GetName() == h.name {
				pc = x
			}
		}
		if pc == nil {
			t.Errorf("controller header %s (%s): not in the P4Info", h.name, typ)
			continue
		}
		matched["controller_packet_metadata"]++
		// Without @id p4c derives the ID from the header type's name.
		want := p4cDerivedID(prefixControllerHeader, typ)
		if h.idText != "" {
			want = id(h.idText)
		}
		if pc.GetPreamble().GetId() != want || pc.GetPreamble().GetAlias() != h.name {
			t.Errorf("controller header %s (type %s): P4Info id %#x, want %#x (source @id %q)", h.name, typ, pc.GetPreamble().GetId(), want, h.idText)
		}
		fields := prog.types[typ]
		if len(fields) != len(pc.GetMetadata()) {
			t.Errorf("controller header %s: %d metadata, %d fields", h.name, len(pc.GetMetadata()), len(fields))
			continue
		}
		for i, f := range fields {
			m := pc.GetMetadata()[i]
			if m.GetId() != uint32(i+1) || m.GetName() != f.name || int(m.GetBitwidth()) != prog.width(t, f.typ) {
				t.Errorf("controller header %s field %d: P4Info %d %s/%d, source %s %s", h.name, i+1, m.GetId(), m.GetName(), m.GetBitwidth(), f.typ, f.name)
			}
		}
	}

	// Digests: one per struct passed to digest<T>, named by T, members in order,
	// ID derived from the name.
	sent := map[string]bool{}
	for _, d := range prog.digests {
		sent[d] = true
	}
	for name := range sent {
		var pd *p4configv1.Digest
		for _, x := range info.GetDigests() {
			if x.GetPreamble().GetName() == name {
				pd = x
			}
		}
		if pd == nil {
			t.Errorf("digest %s: not in the P4Info", name)
			continue
		}
		matched["digest"]++
		if want := p4cDerivedID(prefixDigest, name); pd.GetPreamble().GetId() != want {
			t.Errorf("digest %s: id %#x, p4c derives %#x", name, pd.GetPreamble().GetId(), want)
		}
		st := info.GetTypeInfo().GetStructs()[name]
		fields := prog.types[name]
		if st == nil || len(st.GetMembers()) != len(fields) {
			t.Errorf("digest %s: type_info struct differs from the source's %d fields", name, len(fields))
			continue
		}
		for i, f := range fields {
			m := st.GetMembers()[i]
			if m.GetName() != f.name || int(m.GetTypeSpec().GetBitstring().GetBit().GetBitwidth()) != prog.width(t, f.typ) {
				t.Errorf("digest %s member %d: P4Info %s, source %s %s", name, i+1, m.GetName(), f.typ, f.name)
			}
		}
	}
	if len(prog.digests) != len(sent) {
		t.Errorf("digest call sites %v: each struct must have exactly one (docs/dataplane.md, BMv2 learn lists)", prog.digests)
	}

	// Every P4Info object has its declaration (NoAction is core.p4's).
	counts := map[string]int{
		"action": len(info.GetActions()) - 1, "table": len(info.GetTables()), "counter": len(info.GetCounters()),
		"value_set": len(info.GetValueSets()), "register": len(info.GetRegisters()),
		"controller_packet_metadata": len(info.GetControllerPacketMetadata()), "digest": len(info.GetDigests()),
		"action_profile": len(info.GetActionProfiles()),
	}
	for kind, n := range counts {
		if matched[kind] != n {
			t.Errorf("%s: %d in the P4Info, %d matched to source declarations", kind, n, matched[kind])
		}
	}
	if n := len(info.GetDirectCounters()) + len(info.GetMeters()) + len(info.GetDirectMeters()) + len(info.GetExterns()); n != 0 {
		t.Errorf("the P4Info has %d objects of kinds the program does not declare", n)
	}
}

// TestP4SourceReaderSeesMismatches makes sure the reader above reads what it checks:
// a changed copy of the program must differ from the original where it was changed.
func TestP4SourceReaderSeesMismatches(t *testing.T) {
	prog := parseP4Program(t)
	ing, ok := prog.controls["FastcnpIngress"]
	if !ok {
		t.Fatal("no FastcnpIngress control")
	}
	var route, l2, nhg p4Table
	for _, tb := range ing.tables {
		switch tb.name {
		case "ipv4_route":
			route = tb
		case "l2_forward":
			l2 = tb
		case "next_hop_group_select":
			nhg = tb
		}
	}
	if len(route.keys) == 0 || len(l2.keys) == 0 || len(nhg.keys) == 0 {
		t.Fatalf("ipv4_route, l2_forward or next_hop_group_select not read: %+v %+v %+v", route, l2, nhg)
	}
	var selector p4Extern
	for _, e := range ing.externs {
		if e.kind == "action_selector" {
			selector = e
		}
	}
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"ipv4_route key", fmt.Sprint(route.keys), "[{hdr.ipv4.dst_addr lpm dst_addr}]"},
		{"ipv4_route key width", prog.keyWidth(t, ing, route.keys[0].expr), 32},
		{"traffic_class vlan_valid width", prog.keyWidth(t, ing, "hdr.vlan.isValid()"), 1},
		{"ipv4_route actions", fmt.Sprint(route.actions), "[set_nexthop set_next_hop_group drop]"},
		{"next_hop_group_select key", fmt.Sprint(nhg.keys), "[{meta.next_hop_group exact group_id}]"},
		{"next_hop_group_select selectors", fmt.Sprint(nhg.selectors),
			"[hdr.ipv4.src_addr hdr.ipv4.dst_addr hdr.ipv4.protocol meta.ecmp_l4_src_port meta.ecmp_l4_dst_port]"},
		{"next_hop_group_select implementation", nhg.implementation, "next_hop_selector"},
		{"next_hop_group_select default", nhg.defaultAction, ""},
		{"selector", fmt.Sprint(selector.name, " ", selector.unit, " ", selector.width, " ", prog.size(t, selector.size)), "next_hop_selector crc16 14 1024"},
		{"ipv4_route default", route.defaultAction, "drop"},
		{"ipv4_route size", prog.size(t, route.size), int64(1024)},
		{"l2_forward key", fmt.Sprint(l2.keys), "[{hdr.ethernet.dst_addr exact dst_addr}]"},
		{"l2_forward key width", prog.keyWidth(t, ing, l2.keys[0].expr), 48},
		{"l2_forward actions", fmt.Sprint(l2.actions), "[l2_set_port l2_flood drop]"},
		{"l2_forward default", l2.defaultAction, "drop"},
		{"l2_forward size", prog.size(t, l2.size), int64(1024)},
		{"port_id_t", prog.width(t, "port_id_t"), 9},
		{"registers", len(prog.regs) > 30, true},
		{"controller headers", len(prog.ctrlHdr), 2},
	}
	for _, tc := range tests {
		if fmt.Sprint(tc.got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: read %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// TestL2FloodV1modelForms checks, in the v1model source, the statements that the L2
// flood relies on and no declaration-level test sees (docs/dataplane.md "v1model and
// BMv2"): l2_flood calls mark_to_drop before it sets mcast_grp (BMv2 replicates
// whenever mcast_grp != 0, and mark_to_drop clears it: the other order would never
// flood) and marks the packet; egress drops the flooded copy on the ingress port
// before anything else can send it (the packet-in branch, the early return of lossy
// packets).
func TestL2FloodV1modelForms(t *testing.T) {
	src := p4Sources(t)
	flood := regexp.MustCompile(`action\s+l2_flood\s*\([^)]*\)\s*\{([^}]*)\}`).FindStringSubmatch(src)
	if flood == nil {
		t.Fatal("no action l2_flood")
	}
	body := flood[1]
	drop := strings.Index(body, "mark_to_drop(standard_metadata)")
	grp := strings.Index(body, "standard_metadata.mcast_grp = mcast_grp")
	if drop < 0 || grp < 0 || drop > grp {
		t.Errorf("l2_flood: mark_to_drop at %d, mcast_grp at %d: want mark_to_drop first", drop, grp)
	}
	if !strings.Contains(body, "meta.l2_flood = 1") {
		t.Error("l2_flood does not set meta.l2_flood")
	}
	eg := strings.Index(src, "control FastcnpEgress(")
	if eg < 0 {
		t.Fatal("no FastcnpEgress")
	}
	egress := src[eg:]
	prune := regexp.MustCompile(`if\s*\(\s*meta\.l2_flood\s*==\s*1\s*&&\s*standard_metadata\.egress_port\s*==\s*standard_metadata\.ingress_port\s*\)\s*\{\s*mark_to_drop\(standard_metadata\);\s*return;\s*\}`).FindStringIndex(egress)
	punt := strings.Index(egress, "standard_metadata.egress_port == CPU_PORT")
	lossy := strings.Index(egress, "if (meta.lossless == 0)")
	if prune == nil || punt < 0 || lossy < 0 || prune[0] > punt || prune[0] > lossy {
		t.Errorf("egress pruning %v must come before the packet-in branch (%d) and the lossy return (%d)", prune, punt, lossy)
	}
}

// TestP4HeadersMatchWireFormats: the byte layout of the headers in
// include/headers.p4 is the one docs/wire-formats.md tables give (wire/'s tests pin
// the Go side against the same tables): every row's offset starts a P4 field, every
// byte-aligned field of a byte or more starts a row, and the sizes add up.
func TestP4HeadersMatchWireFormats(t *testing.T) {
	prog := parseP4Program(t)
	doc := readRepoFile(t, "docs/wire-formats.md")
	type row struct{ off, size int }
	sections := map[string][]row{}
	current := ""
	reRow := regexp.MustCompile(`^\|\s*(\d+)\s*\|\s*(\d+)\s*\|`)
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "#") {
			current = strings.TrimSpace(strings.TrimLeft(line, "#"))
			continue
		}
		if m := reRow.FindStringSubmatch(line); m != nil {
			off, _ := strconv.Atoi(m[1])
			size, _ := strconv.Atoi(m[2])
			sections[current] = append(sections[current], row{off, size})
		}
	}
	tests := []struct {
		heading string   // docs/wire-formats.md heading (prefix)
		headers []string // P4 header types, concatenated
	}{
		{"Ethernet II", []string{"ethernet_h"}},
		{"MAC control", []string{"mac_control_h", "pfc_times_h"}},
		{"IPv4", []string{"ipv4_h"}},
		{"UDP", []string{"udp_h"}},
		{"InfiniBand Base Transport Header", []string{"bth_h"}},
		{"fastcnp CNP extension", []string{"cnp_ext_h"}},
		{"RDMA-connection announcement", []string{"announcement_h"}},
		{"INC header", []string{"inc_base_h", "inc_ids_h"}},
		{"INT header", []string{"int_header_h"}},
		{"INT hop record", []string{"int_hop_h"}},
	}
	for _, tc := range tests {
		t.Run(tc.heading, func(t *testing.T) {
			var rows []row
			for h, r := range sections {
				if strings.HasPrefix(h, tc.heading) {
					rows = append(rows, r...)
				}
			}
			if len(rows) == 0 {
				t.Fatalf("no offset table under %q", tc.heading)
			}
			type field struct{ bit, width int }
			var fields []field
			starts := map[int]bool{} // bit offsets where a P4 field starts
			bit := 0
			for _, h := range tc.headers {
				if !prog.isHeader[h] {
					t.Fatalf("%s is not a header in headers.p4", h)
				}
				for _, f := range prog.types[h] {
					w := prog.width(t, f.typ)
					starts[bit] = true
					fields = append(fields, field{bit, w})
					bit += w
				}
			}
			starts[bit] = true
			total := 0
			for _, r := range rows {
				if !starts[r.off*8] || !starts[(r.off+r.size)*8] {
					t.Errorf("row at byte %d, %d bytes: does not start and end at P4 field boundaries", r.off, r.size)
				}
				total = max(total, r.off+r.size)
			}
			// A byte-aligned field of a byte or more starts a row, unless its row is
			// an array of equal fields (PFC time[0..7]).
			for _, f := range fields {
				if f.bit%8 != 0 || f.width < 8 {
					continue
				}
				ok := false
				for _, r := range rows {
					lo, hi := r.off*8, (r.off+r.size)*8
					if f.bit == lo {
						ok = true
					} else if f.bit > lo && f.bit < hi {
						ok = true
						for _, g := range fields {
							if g.bit >= lo && g.bit < hi && g.width != f.width {
								ok = false
							}
						}
					}
				}
				if !ok {
					t.Errorf("P4 field at byte %d (%d bits) has no row of its own in the doc", f.bit/8, f.width)
				}
			}
			if bit != total*8 {
				t.Errorf("P4 headers %v are %d bits, the doc's table %d bytes", tc.headers, bit, total)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Register atomicity on BMv2 (docs/dataplane.md "Registers shared by ingress and
// egress"): BMv2 makes register accesses atomic only within one action, and
// p4c's BMv2 back end makes one action of each straight-line run of statements.
// Every access to a register that egress touches (BMv2 runs several egress
// threads next to the ingress thread) must be inside a block marked
// "// ATOMIC <name>" ... "// END ATOMIC" that holds no branch, table apply,
// return or nested block, after function-like macros are expanded.
// ---------------------------------------------------------------------------

var (
	reMacroDef    = regexp.MustCompile(`(?m)^[ \t]*#define[ \t]+(\w+)(\(([^)]*)\))?((?:[^\n]*\\\n)*[^\n]*)`)
	reAtomicBegin = regexp.MustCompile(`//[ \t]*ATOMIC[ \t]+(\w+)[^\n]*`)
	reAtomicEnd   = regexp.MustCompile(`//[ \t]*END ATOMIC[^\n]*`)
	reRegAccess   = regexp.MustCompile(`\b(\w+)\.(read|write)\(`)
	reBranchy     = regexp.MustCompile(`\b(if|else|switch|return|exit)\b|\.apply\(|[{}]`)
)

const (
	atomicBeginToken = "\x01"
	atomicEndToken   = "\x02"
)

type p4Macro struct {
	params []string
	body   string
}

// expandMacros replaces every invocation of a function-like macro (and every use of
// an object-like one) in s by its body, as cpp would, until none is left.
func expandMacros(s string, macros map[string]p4Macro) (string, error) {
	for round := 0; round < 10; round++ {
		changed := false
		for name, m := range macros {
			re := regexp.MustCompile(`\b` + name + `\b`)
			for {
				loc := re.FindStringIndex(s)
				if loc == nil {
					break
				}
				changed = true
				if m.params == nil {
					s = s[:loc[0]] + m.body + s[loc[1]:]
					continue
				}
				open := loc[1]
				for open < len(s) && (s[open] == ' ' || s[open] == '\t') {
					open++
				}
				if open >= len(s) || s[open] != '(' {
					return "", fmt.Errorf("macro %s used without arguments", name)
				}
				depth, end := 0, -1
				var args []string
				last := open + 1
				for i := open; i < len(s) && end < 0; i++ {
					switch s[i] {
					case '(':
						depth++
					case ')':
						depth--
						if depth == 0 {
							args = append(args, s[last:i])
							end = i + 1
						}
					case ',':
						if depth == 1 {
							args = append(args, s[last:i])
							last = i + 1
						}
					}
				}
				if end < 0 || len(args) != len(m.params) {
					return "", fmt.Errorf("macro %s: %d arguments, want %d", name, len(args), len(m.params))
				}
				body := m.body
				for i, p := range m.params {
					body = regexp.MustCompile(`\b`+regexp.QuoteMeta(p)+`\b`).ReplaceAllLiteralString(body, strings.TrimSpace(args[i]))
				}
				s = s[:loc[0]] + body + s[end:]
			}
		}
		if !changed {
			return s, nil
		}
	}
	return "", fmt.Errorf("macros nested too deep")
}

// atomicityProblems checks the v1model program text src (with its comments; macros
// from src and from extra sources) and returns what breaks the rule above.
func atomicityProblems(src string, extra []string, registers []string) []string {
	macros := map[string]p4Macro{}
	for _, text := range append([]string{src}, extra...) {
		for _, m := range reMacroDef.FindAllStringSubmatch(text, -1) {
			body := strings.ReplaceAll(m[4], "\\\n", "\n")
			mac := p4Macro{body: body}
			if m[2] != "" {
				mac.params = []string{}
				for _, p := range strings.Split(m[3], ",") {
					mac.params = append(mac.params, strings.TrimSpace(p))
				}
			}
			if strings.HasPrefix(m[1], "_") || strings.TrimSpace(body) == "" {
				continue // include guards
			}
			if mac.params != nil || strings.Contains(body, ";") {
				macros[m[1]] = mac // statement macros; numeric #defines stay as they are
			}
		}
	}
	var problems []string
	s := reAtomicEnd.ReplaceAllString(src, atomicEndToken)
	s = reAtomicBegin.ReplaceAllString(s, atomicBeginToken)
	s = reBlockComment.ReplaceAllString(s, "")
	s = reLineComment.ReplaceAllString(s, "")
	s = reDefineAny.ReplaceAllString(s, "")
	s, err := expandMacros(s, macros)
	if err != nil {
		return []string{err.Error()}
	}
	// Control spans.
	type span struct {
		name       string
		start, end int
	}
	var controls []span
	for _, loc := range reContainer.FindAllStringSubmatchIndex(s, -1) {
		end, err := matchClose(s, loc[1]-1)
		if err != nil {
			return []string{err.Error()}
		}
		controls = append(controls, span{s[loc[4]:loc[5]], loc[0], end})
	}
	controlAt := func(pos int) string {
		for _, c := range controls {
			if pos >= c.start && pos < c.end {
				return c.name
			}
		}
		return ""
	}
	// Atomic blocks: well nested, straight-line.
	var blocks [][2]int
	for pos := 0; ; {
		b := strings.Index(s[pos:], atomicBeginToken)
		if b < 0 {
			if strings.Contains(s[pos:], atomicEndToken) {
				problems = append(problems, "END ATOMIC without ATOMIC")
			}
			break
		}
		b += pos
		e := strings.Index(s[b:], atomicEndToken)
		if e < 0 {
			problems = append(problems, "ATOMIC without END ATOMIC")
			break
		}
		e += b
		body := s[b+1 : e]
		if strings.Contains(body, atomicBeginToken) {
			problems = append(problems, "nested ATOMIC blocks")
		}
		if m := reBranchy.FindString(body); m != "" {
			problems = append(problems, fmt.Sprintf("atomic block in %s holds %q: it would be split into several actions", controlAt(b), m))
		}
		blocks = append(blocks, [2]int{b, e})
		pos = e + 1
	}
	inBlock := func(pos int) bool {
		for _, b := range blocks {
			if pos > b[0] && pos < b[1] {
				return true
			}
		}
		return false
	}
	isReg := map[string]bool{}
	for _, r := range registers {
		isReg[r] = true
	}
	type access struct {
		pos     int
		control string
	}
	byReg := map[string][]access{}
	for _, m := range reRegAccess.FindAllStringSubmatchIndex(s, -1) {
		name := s[m[2]:m[3]]
		if isReg[name] {
			byReg[name] = append(byReg[name], access{m[0], controlAt(m[0])})
		}
	}
	for _, r := range registers {
		egress := false
		for _, a := range byReg[r] {
			egress = egress || a.control == "FastcnpEgress"
		}
		if !egress {
			continue // ingress only: one thread
		}
		for _, a := range byReg[r] {
			if !inBlock(a.pos) {
				problems = append(problems, fmt.Sprintf("register %s (accessed in egress) is accessed in %s outside an ATOMIC block", r, a.control))
			}
		}
	}
	return problems
}

func TestRegisterAccessesAtomicOnBMv2(t *testing.T) {
	read := func(rel string) string { return readRepoFile(t, "p4src/"+rel) }
	src := read("v1model/fastcnp.p4")
	extra := []string{read("v1model/decisions.p4")}
	var regs []string
	for _, r := range parseP4Program(t).regs {
		regs = append(regs, r.name)
	}
	if len(regs) < 30 {
		t.Fatalf("read only %d registers", len(regs))
	}
	if p := atomicityProblems(src, extra, regs); len(p) > 0 {
		t.Errorf("%d problems:\n%s", len(p), strings.Join(p, "\n"))
	}
	// The shared registers of docs/dataplane.md are really accessed in both
	// controls or by egress threads, and inside blocks: the checker above sees them.
	for _, r := range []string{"port_queue_bytes", "port_paused", "port_rx_bytes", "port_undetermined",
		"port_q_snapshot", "port_check_at_ns", "port_pause_expire_ns", "port_pause_start_ns", "flow_bytes",
		"flow_last_cnp_ns", "port_last_digest_ns"} {
		if !strings.Contains(src, r+".") && !strings.Contains(extra[0], r+".") {
			t.Errorf("register %s is not accessed by the program", r)
		}
	}

	// The checker fails when the rule is broken.
	mutants := []struct {
		name, old, new string
	}{
		{"a branch inside a block", "bool eq_take = eq_flow_data == 0 || eq_flow_owner == meta.flow_hash;",
			"bool eq_take = false; if (eq_flow_data == 0) { eq_take = true; }"},
		{"an access outside any block", "            // ATOMIC cnp_gap\n", "            flow_bytes.read(last_cnp_ns_dummy, 0);\n            // ATOMIC cnp_gap\n"},
		{"a block without its end", "                    // END ATOMIC\n                    // Inside cnpGap", "                    // Inside cnpGap"},
		{"a table apply inside a block", "            // END ATOMIC\n            if (meta.flow_tracked == 0) {", "            flow_bytes_log2.apply();\n            // END ATOMIC\n            if (meta.flow_tracked == 0) {"},
	}
	for _, m := range mutants {
		if strings.Count(src, m.old) != 1 {
			t.Fatalf("mutant %q: the text to change is not in fastcnp.p4 exactly once", m.name)
		}
		if p := atomicityProblems(strings.Replace(src, m.old, m.new, 1), extra, regs); len(p) == 0 {
			t.Errorf("mutant %q: no problem found", m.name)
		}
	}
	// A branch inside a decision macro of decisions.p4 is seen too.
	bad := strings.Replace(extra[0], "HOLD  = (UNDET) == PORT_UNDETERMINED && (NOW) < (CHECK_AT);",
		"if ((UNDET) == PORT_UNDETERMINED) { HOLD = (NOW) < (CHECK_AT); }", 1)
	if bad == extra[0] {
		t.Fatal("PORT_CHECK_DECISION text not found in decisions.p4")
	}
	if p := atomicityProblems(src, []string{bad}, regs); len(p) == 0 {
		t.Error("a branch in PORT_CHECK_DECISION is not seen")
	}
}
