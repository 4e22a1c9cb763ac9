package p4src

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
)

// The TNA/T2NA program's P4Infos (p4src/tna/fastcnp-{tofino,tofino2}.p4info.txtpb), as
// p4c-barefoot writes them with --p4runtime-force-std-externs, read from the sources
// the way its P4Runtime serializer sees them (docs/tofino.md "P4Info"):
//   - names: a control's objects are Control.name, an @name(".x") is x (the pipe prefix
//     "pipe." that bf-p4c puts in front of every name is stripped by the conversion);
//     aliases are the shortest unique suffixes;
//   - IDs: tables and actions keep their @id; an extern instance (Counter, Register,
//     ActionProfile, ActionSelector, Digest, value_set) cannot be given one: bf-p4c's
//     TNA P4Runtime handler registers it by name only (bfruntime_arch_handler.h), so
//     its ID is p4c's hash of "pipe." and its name under the standard prefix (0x12,
//     0x16, 0x11, 0x17, 0x03), and an @id on it is an error here;
//   - bf-p4c adds the ingress parser's PortMetadata extern, and the value set's alias
//     keeps the pipe prefix;
//   - TNA externs become standard objects: a Counter a counter (unit BOTH for
//     PACKETS_AND_BYTES), a Register a register (its type: bit<W> or a struct, listed in
//     type_info), an ActionProfile with its ActionSelector one action profile
//     with_selector and the selector's max_group_size, a Digest a digest named by its
//     instance; a value set keeps only its size;
//   - tables as any P4Info: const tables are is_const_table, has_initial_entries and
//     const_default_action_id.
// The committed files are this reader's output (go test ./p4src -run TestTNAP4Info
// -update-tna-p4info writes them); on 2026-12-02 they had no difference from what
// p4c-barefoot 9.13.4 wrote (p4src/cmd/p4infodiff; its compiles stop before the end,
// after writing the P4Info: docs/tofino.md "Compiling"). A change of the source that
// is not in the committed P4Info fails here, in CI, without the compiler.

var updateTNAP4Info = flag.Bool("update-tna-p4info", false,
	"write p4src/tna/fastcnp-{tofino,tofino2}.p4info.txtpb from the TNA sources")

// tnaProfiles are the two compilations of p4src/tna/fastcnp.p4.
var tnaProfiles = []struct{ profile, arch string }{{"tofino", "tna"}, {"tofino2", "t2na"}}

func tnaP4InfoPath(profile string) string {
	return filepath.Join("tna", "fastcnp-"+profile+".p4info.txtpb")
}

// bf-p4c's PortMetadata extern of the ingress parser (barefoot/p4info.proto: P4Ids
// PORT_METADATA 0x90), as p4c-barefoot 9.13.4 writes it with the standard externs: its
// info holds the key's name, not a serialized message (p4c warns that it cannot parse it).
const (
	tnaPortMetadataTypeID = 0x90
	tnaPortMetadataName   = "FastcnpParser.$PORT_METADATA"
	tnaPortMetadataURL    = "type.googleapis.com/barefoot.PortMetadata"
	tnaPortMetadataKey    = "ig_intr_md.ingress_port"
)

// tnaIntrinsicWidths are the widths of the TNA intrinsic metadata a key may use.
var tnaIntrinsicWidths = map[string]int{"ingress_intrinsic_metadata_t.ingress_port": 9,
	"egress_intrinsic_metadata_t.egress_port": 9}

// tnaExtern is one TNA extern instance of a control.
type tnaExtern struct {
	kind, idText, nameAnn, local string
	typ                          string // Register: cell type; Digest: the struct
	size                         string // Counter, Register, ActionProfile: cells
	unit                         string // Counter: CounterType_t
	profile, maxGroup            string // ActionSelector
}

var (
	reTNAAnnots   = `((?:@\w+\((?:[^()]|\([^()]*\))*\)\s*)*)`
	reTNACounter  = regexp.MustCompile(reTNAAnnots + `\bCounter\s*<\s*bit\s*<\s*\d+\s*>\s*,\s*bit\s*<\s*\d+\s*>\s*>\s*\(\s*(\w+)\s*,\s*CounterType_t\.(\w+)\s*\)\s*(\w+)\s*;`)
	reTNARegister = regexp.MustCompile(reTNAAnnots + `\bRegister\s*<\s*(bit\s*<\s*\d+\s*>|\w+)\s*,\s*(?:bit\s*<\s*\d+\s*>|\w+)\s*>\s*\(\s*(\w+)\s*\)\s*(\w+)\s*;`)
	reTNAProfile  = regexp.MustCompile(reTNAAnnots + `\bActionProfile\s*\(\s*(\w+)\s*\)\s*(\w+)\s*;`)
	reTNASelector = regexp.MustCompile(reTNAAnnots + `\bActionSelector\s*\(\s*(\w+)\s*,\s*\w+\s*,\s*SelectorMode_t\.\w+\s*,\s*(\w+)\s*,\s*\w+\s*\)\s*(\w+)\s*;`)
	reTNADigest   = regexp.MustCompile(reTNAAnnots + `\bDigest\s*<\s*(\w+)\s*>\s*\([^)]*\)\s*(\w+)\s*;`)
	reTNAValueSet = regexp.MustCompile(reTNAAnnots + `\bvalue_set\s*<\s*bit\s*<\s*(\d+)\s*>\s*>\s*\(\s*(\w+)\s*\)\s*(\w+)\s*;`)
	reAnnID       = regexp.MustCompile(`@id\(\s*([^)]*?)\s*\)`)
	reAnnName     = regexp.MustCompile(`@name\(\s*"([^"]*)"\s*\)`)
	reLocalVar    = regexp.MustCompile(`(?m)(?:^|;)[ \t]*(bit\s*<\s*\d+\s*>|bool)\s+(\w+)\s*;`)
	reTokenPaste  = regexp.MustCompile(`\s*##\s*`)
	// a field name and the spaces after its colon, in prototext's multi-line output
	reTextFieldSpace = regexp.MustCompile(`(?m)^(\s*[\w.\[\]/]+):\s+`)
)

// tnaProgram is the TNA program's declarations: the shared reader's (types, defines,
// controls with their actions and tables) plus the TNA externs of each control and
// the control-level variables a key may use.
type tnaProgram struct {
	*p4Program
	externs map[string][]tnaExtern       // by control
	locals  map[string]map[string]string // control -> variable -> type
}

// tnaSources returns the TNA program's text as p4c's preprocessor would hand it on
// for declarations: include/*.p4, tna/headers.p4 and tna/fastcnp.p4 without comments,
// the function-like macros (#define NAME(...)) expanded and token pasting done. The
// log2 entries file stays out (it is only const entries).
func tnaSources(t *testing.T) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("include", "*.p4"))
	if err != nil || len(files) == 0 {
		t.Fatalf("include/*.p4: %v", err)
	}
	sort.Strings(files)
	files = append(files, filepath.Join("tna", "headers.p4"), filepath.Join("tna", "fastcnp.p4"))
	macros := map[string]p4Macro{}
	var all strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := reLineComment.ReplaceAllString(reBlockComment.ReplaceAllString(string(b), ""), "")
		s = reMacroDef.ReplaceAllStringFunc(s, func(def string) string {
			m := reMacroDef.FindStringSubmatch(def)
			if m[2] == "" {
				return def // object-like: the reader resolves sizes through its defines
			}
			var params []string
			for _, p := range strings.Split(m[3], ",") {
				params = append(params, strings.TrimSpace(p))
			}
			macros[m[1]] = p4Macro{params: params, body: strings.ReplaceAll(m[4], "\\\n", "\n")}
			return ""
		})
		all.WriteString(s)
		all.WriteString("\n")
	}
	out, err := expandMacros(all.String(), macros)
	if err != nil {
		t.Fatal(err)
	}
	return reTokenPaste.ReplaceAllString(out, "")
}

func parseTNAProgram(t *testing.T) *tnaProgram {
	t.Helper()
	prog := &tnaProgram{p4Program: parseP4Source(t, tnaSources(t)), externs: map[string][]tnaExtern{},
		locals: map[string]map[string]string{}}
	for name, c := range prog.controls {
		annots := func(s string) (id, nameAnn string) {
			if m := reAnnID.FindStringSubmatch(s); m != nil {
				id = m[1]
			}
			if m := reAnnName.FindStringSubmatch(s); m != nil {
				nameAnn = m[1]
			}
			return id, nameAnn
		}
		var ex []tnaExtern
		for _, m := range reTNACounter.FindAllStringSubmatch(c.decls, -1) {
			id, n := annots(m[1])
			ex = append(ex, tnaExtern{kind: "Counter", idText: id, nameAnn: n, size: m[2], unit: m[3], local: m[4]})
		}
		for _, m := range reTNARegister.FindAllStringSubmatch(c.decls, -1) {
			id, n := annots(m[1])
			ex = append(ex, tnaExtern{kind: "Register", idText: id, nameAnn: n, typ: strings.ReplaceAll(m[2], " ", ""), size: m[3], local: m[4]})
		}
		for _, m := range reTNAProfile.FindAllStringSubmatch(c.decls, -1) {
			id, n := annots(m[1])
			ex = append(ex, tnaExtern{kind: "ActionProfile", idText: id, nameAnn: n, size: m[2], local: m[3]})
		}
		for _, m := range reTNASelector.FindAllStringSubmatch(c.decls, -1) {
			id, n := annots(m[1])
			ex = append(ex, tnaExtern{kind: "ActionSelector", idText: id, nameAnn: n, profile: m[2], maxGroup: m[3], local: m[4]})
		}
		for _, m := range reTNADigest.FindAllStringSubmatch(c.decls, -1) {
			id, n := annots(m[1])
			ex = append(ex, tnaExtern{kind: "Digest", idText: id, nameAnn: n, typ: m[2], local: m[3]})
		}
		for _, m := range reTNAValueSet.FindAllStringSubmatch(c.decls, -1) {
			id, n := annots(m[1])
			ex = append(ex, tnaExtern{kind: "value_set", idText: id, nameAnn: n, typ: "bit<" + m[2] + ">", size: m[3], local: m[4]})
		}
		prog.externs[name] = ex
		vars := map[string]string{}
		for _, m := range reLocalVar.FindAllStringSubmatch(c.decls, -1) {
			vars[m[2]] = strings.ReplaceAll(m[1], " ", "")
		}
		prog.locals[name] = vars
	}
	return prog
}

// cpName is the control-plane name bf-p4c gives a control's object (after the
// conversion strips "pipe.").
func cpName(control, local, nameAnn string) string {
	switch {
	case strings.HasPrefix(nameAnn, "."):
		return nameAnn[1:]
	case nameAnn != "":
		return control + "." + nameAnn
	}
	return control + "." + local
}

// reKeySlice is a key expression's bit slice, EXPR[HI:LO].
var reKeySlice = regexp.MustCompile(`^(.+)\[(\d+):(\d+)\]$`)

// tnaKeyWidth is the width of a key expression of control c: a field, a variable,
// a header's isValid(), or a slice of one of them within its width.
func (p *tnaProgram) tnaKeyWidth(t *testing.T, c p4Container, expr string) (int, error) {
	if m := reKeySlice.FindStringSubmatch(expr); m != nil {
		w, err := p.tnaKeyWidth(t, c, m[1])
		if err != nil {
			return 0, err
		}
		hi, _ := strconv.Atoi(m[2])
		lo, _ := strconv.Atoi(m[3])
		if hi < lo || hi >= w {
			return 0, fmt.Errorf("key %s: slice [%d:%d] of a %d-bit value", expr, hi, lo, w)
		}
		return hi - lo + 1, nil
	}
	parts := strings.Split(expr, ".")
	if len(parts) == 1 {
		typ, ok := p.locals[c.name][expr]
		if !ok {
			return 0, fmt.Errorf("key %s: not a variable of %s", expr, c.name)
		}
		return p.width(t, typ), nil
	}
	typ := c.params[parts[0]]
	if w, ok := tnaIntrinsicWidths[typ+"."+strings.Join(parts[1:], ".")]; ok {
		return w, nil
	}
	if typ == "" {
		return 0, fmt.Errorf("key %s: %s is no parameter of %s", expr, parts[0], c.name)
	}
	fields := parts[1:]
	valid := fields[len(fields)-1] == "isValid()"
	if valid {
		fields = fields[:len(fields)-1]
	}
	for _, f := range fields {
		typ = p.fieldType(t, typ, f)
	}
	if valid {
		if !p.isHeader[typ] {
			return 0, fmt.Errorf("key %s: isValid() of a non-header", expr)
		}
		return 1, nil
	}
	return p.width(t, typ), nil
}

// typeSpec is the P4Info type of a P4 type (bit<W>, a typedef of one, or a struct
// that type_info lists).
func (p *tnaProgram) typeSpec(t *testing.T, typ string, info *p4configv1.P4Info) *p4configv1.P4DataTypeSpec {
	if fields, ok := p.types[typ]; ok && !p.isHeader[typ] {
		st := &p4configv1.P4StructTypeSpec{}
		for _, f := range fields {
			st.Members = append(st.Members, &p4configv1.P4StructTypeSpec_Member{Name: f.name, TypeSpec: p.typeSpec(t, f.typ, info)})
		}
		if info.TypeInfo == nil {
			info.TypeInfo = &p4configv1.P4TypeInfo{}
		}
		if info.TypeInfo.Structs == nil {
			info.TypeInfo.Structs = map[string]*p4configv1.P4StructTypeSpec{}
		}
		info.TypeInfo.Structs[typ] = st
		return &p4configv1.P4DataTypeSpec{TypeSpec: &p4configv1.P4DataTypeSpec_Struct{Struct: &p4configv1.P4NamedType{Name: typ}}}
	}
	return &p4configv1.P4DataTypeSpec{TypeSpec: &p4configv1.P4DataTypeSpec_Bitstring{Bitstring: &p4configv1.P4BitstringLikeTypeSpec{
		TypeSpec: &p4configv1.P4BitstringLikeTypeSpec_Bit{Bit: &p4configv1.P4BitTypeSpec{Bitwidth: int32(p.width(t, typ))}}}}}
}

// bfExternID is the standard ID bf-p4c gives an extern instance named name: p4c's
// hash of "pipe." and the name, under the standard prefix.
func bfExternID(prefix uint32, name string) uint32 { return p4cDerivedID(prefix, "pipe."+name) }

// tnaExternID is bfExternID for a declared extern; an @id on it is refused: bf-p4c
// would not use it.
func tnaExternID(e tnaExtern, prefix uint32, name string) (uint32, error) {
	if e.idText != "" {
		return 0, fmt.Errorf("%s %s: @id(%s) on an extern instance, which bf-p4c ignores (its ID comes from the name)", e.kind, name, e.idText)
	}
	return bfExternID(prefix, name), nil
}

// buildTNAP4Info derives the standard P4Info bf-p4c writes for arch (tna, t2na).
func buildTNAP4Info(t *testing.T, p *tnaProgram, arch string) (*p4configv1.P4Info, error) {
	info := &p4configv1.P4Info{PkgInfo: &p4configv1.PkgInfo{Arch: arch}}
	var names []string // every object's name, for the aliases
	pre := func(id uint32, name string, annotations ...string) *p4configv1.Preamble {
		names = append(names, name)
		return &p4configv1.Preamble{Id: id, Name: name, Annotations: annotations}
	}
	controls := make([]string, 0, len(p.controls))
	for n := range p.controls {
		controls = append(controls, n)
	}
	sort.Strings(controls)
	actionIDs := map[string]uint32{"NoAction": noActionID} // control.local -> ID
	info.Actions = append(info.Actions, &p4configv1.Action{Preamble: pre(noActionID, "NoAction", `@noWarn("unused")`)})
	profiles := map[string]*p4configv1.ActionProfile{} // control.local of the ActionProfile
	selectors := map[string]tnaExtern{}                // control.local of the selector
	for _, cn := range controls {
		c := p.controls[cn]
		for _, a := range c.actions {
			act := &p4configv1.Action{Preamble: pre(parseID(t, a.idText), cn+"."+a.name)}
			for i, prm := range a.params {
				act.Params = append(act.Params, &p4configv1.Action_Param{Id: uint32(i + 1), Name: prm.name, Bitwidth: int32(p.width(t, prm.typ))})
			}
			actionIDs[cn+"."+a.name] = act.Preamble.Id
			info.Actions = append(info.Actions, act)
		}
		for _, e := range p.externs[cn] {
			name := cpName(cn, e.local, e.nameAnn)
			var id uint32
			var err error
			switch e.kind {
			case "Counter":
				id, err = tnaExternID(e, prefixCounter, name)
			case "Register":
				id, err = tnaExternID(e, prefixRegister, name)
			case "ActionProfile":
				id, err = tnaExternID(e, prefixActionProfile, name)
			case "ActionSelector":
				_, err = tnaExternID(e, prefixActionProfile, name) // no object of its own
			case "Digest":
				id, err = tnaExternID(e, prefixDigest, name)
			case "value_set":
				id, err = tnaExternID(e, prefixValueSet, name)
			}
			if err != nil {
				return nil, err
			}
			switch e.kind {
			case "Counter":
				units := map[string]p4configv1.CounterSpec_Unit{"PACKETS": p4configv1.CounterSpec_PACKETS,
					"BYTES": p4configv1.CounterSpec_BYTES, "PACKETS_AND_BYTES": p4configv1.CounterSpec_BOTH}
				info.Counters = append(info.Counters, &p4configv1.Counter{Preamble: pre(id, name),
					Spec: &p4configv1.CounterSpec{Unit: units[e.unit]}, Size: p.size(t, e.size)})
			case "Register":
				info.Registers = append(info.Registers, &p4configv1.Register{Preamble: pre(id, name),
					TypeSpec: p.typeSpec(t, e.typ, info), Size: int32(p.size(t, e.size))})
			case "ActionProfile":
				ap := &p4configv1.ActionProfile{Preamble: pre(id, name), Size: p.size(t, e.size)}
				profiles[cn+"."+e.local] = ap
				info.ActionProfiles = append(info.ActionProfiles, ap)
			case "ActionSelector":
				// No object of its own: its action profile gets with_selector.
				selectors[cn+"."+e.local] = e
			case "Digest":
				info.Digests = append(info.Digests, &p4configv1.Digest{Preamble: pre(id, name),
					TypeSpec: p.typeSpec(t, e.typ, info)})
			case "value_set":
				info.ValueSets = append(info.ValueSets, &p4configv1.ValueSet{
					Preamble: pre(id, name), Size: int32(p.size(t, e.size))})
			}
		}
	}
	for sel, e := range selectors {
		ap := profiles[sel[:strings.Index(sel, ".")+1]+e.profile]
		if ap == nil {
			return nil, fmt.Errorf("action selector %s: no ActionProfile %s in its control", sel, e.profile)
		}
		ap.WithSelector = true
		ap.MaxGroupSize = int32(p.size(t, e.maxGroup))
	}
	for _, cn := range controls {
		c := p.controls[cn]
		for _, tb := range c.tables {
			name := cn + "." + tb.name
			pt := &p4configv1.Table{Preamble: pre(parseID(t, tb.idText), name), Size: p.size(t, tb.size),
				IsConstTable: tb.constEntries, HasInitialEntries: tb.constEntries}
			for i, k := range tb.keys {
				w, err := p.tnaKeyWidth(t, c, k.expr)
				if err != nil {
					return nil, fmt.Errorf("table %s: %w", name, err)
				}
				mt, ok := p4configv1.MatchField_MatchType_value[strings.ToUpper(k.kind)]
				if !ok {
					return nil, fmt.Errorf("table %s: match kind %s", name, k.kind)
				}
				pt.MatchFields = append(pt.MatchFields, &p4configv1.MatchField{Id: uint32(i + 1), Name: k.name, Bitwidth: int32(w),
					Match: &p4configv1.MatchField_MatchType_{MatchType: p4configv1.MatchField_MatchType(mt)}})
			}
			ref := func(local string) (uint32, error) {
				if local == "NoAction" {
					return noActionID, nil
				}
				if id, ok := actionIDs[cn+"."+local]; ok {
					return id, nil
				}
				return 0, fmt.Errorf("table %s: action %s is not declared in %s", name, local, cn)
			}
			for _, a := range tb.actions {
				id, err := ref(a)
				if err != nil {
					return nil, err
				}
				pt.ActionRefs = append(pt.ActionRefs, &p4configv1.ActionRef{Id: id})
			}
			def := tb.defaultAction
			if tb.implementation != "" {
				// A table with a selector: p4c adds NoAction as its default only.
				if def != "" {
					return nil, fmt.Errorf("table %s: a selector table takes p4c's default", name)
				}
				def = "NoAction"
				pt.ActionRefs = append(pt.ActionRefs, &p4configv1.ActionRef{Id: noActionID,
					Annotations: []string{"@defaultonly"}, Scope: p4configv1.ActionRef_DEFAULT_ONLY})
				sel, ok := selectors[cn+"."+tb.implementation]
				if !ok {
					return nil, fmt.Errorf("table %s: implementation %s is no ActionSelector of %s", name, tb.implementation, cn)
				}
				ap := profiles[cn+"."+sel.profile]
				pt.ImplementationId = ap.Preamble.Id
				ap.TableIds = append(ap.TableIds, pt.Preamble.Id)
			}
			if def == "" {
				return nil, fmt.Errorf("table %s: no default_action", name)
			}
			id, err := ref(def)
			if err != nil {
				return nil, err
			}
			pt.InitialDefaultAction = &p4configv1.TableActionCall{ActionId: id}
			if tb.constDefault {
				pt.ConstDefaultActionId = id
			}
			info.Tables = append(info.Tables, pt)
		}
	}
	// Controller headers (include/headers.p4), IDs derived from the type names.
	hdrs := make([]string, 0, len(p.ctrlHdr))
	for typ := range p.ctrlHdr {
		hdrs = append(hdrs, typ)
	}
	sort.Strings(hdrs)
	for _, typ := range hdrs {
		h := p.ctrlHdr[typ]
		cpm := &p4configv1.ControllerPacketMetadata{Preamble: pre(p4cDerivedID(prefixControllerHeader, typ), h.name,
			fmt.Sprintf("@controller_header(%q)", h.name))}
		for i, f := range p.types[typ] {
			cpm.Metadata = append(cpm.Metadata, &p4configv1.ControllerPacketMetadata_Metadata{Id: uint32(i + 1), Name: f.name, Bitwidth: int32(p.width(t, f.typ))})
		}
		info.ControllerPacketMetadata = append(info.ControllerPacketMetadata, cpm)
	}
	// The ingress parser's PortMetadata, which bf-p4c adds.
	info.Externs = append(info.Externs, &p4configv1.Extern{ExternTypeId: tnaPortMetadataTypeID, ExternTypeName: "PortMetadata",
		Instances: []*p4configv1.ExternInstance{{
			Preamble: pre(bfExternID(tnaPortMetadataTypeID, tnaPortMetadataName), tnaPortMetadataName),
			Info:     &anypb.Any{TypeUrl: tnaPortMetadataURL, Value: []byte(tnaPortMetadataKey)}}}})
	// Aliases: the shortest suffix of dot-separated components no other name ends in;
	// a value set's keeps the pipe prefix (bf-p4c computes it before the conversion).
	alias := shortestUniqueSuffixes(names)
	for _, o := range allPreambles(info) {
		o.Alias = alias[o.Name]
	}
	for _, vs := range info.ValueSets {
		vs.Preamble.Alias = "pipe." + vs.Preamble.Name
	}
	for _, x := range info.Externs {
		for _, in := range x.Instances {
			in.Preamble.Alias = alias[in.Preamble.Name]
		}
	}
	// Name hashes can collide; p4c would then probe for the next free ID, which
	// this reader does not: a collision is an error here.
	seen := map[uint32]string{}
	for _, o := range allPreambles(info) {
		if other, ok := seen[o.Id]; ok {
			return nil, fmt.Errorf("%s and %s have the same ID %#x", other, o.Name, o.Id)
		}
		seen[o.Id] = o.Name
	}
	return info, nil
}

// shortestUniqueSuffixes maps each name to its shortest dot-separated suffix that
// is a suffix of no other name (p4c's P4SymbolSuffixSet).
func shortestUniqueSuffixes(names []string) map[string]string {
	count := map[string]int{}
	for _, n := range names {
		parts := strings.Split(n, ".")
		for i := range parts {
			count[strings.Join(parts[i:], ".")]++
		}
	}
	out := map[string]string{}
	for _, n := range names {
		parts := strings.Split(n, ".")
		out[n] = n
		for i := len(parts) - 1; i >= 0; i-- {
			if s := strings.Join(parts[i:], "."); count[s] == 1 {
				out[n] = s
				break
			}
		}
	}
	return out
}

// allPreambles returns the preamble of every object of info (every repeated
// field whose messages have one).
func allPreambles(info *p4configv1.P4Info) []*p4configv1.Preamble {
	var out []*p4configv1.Preamble
	m := info.ProtoReflect()
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if !fd.IsList() || fd.Message() == nil || fd.Message().Fields().ByName("preamble") == nil {
			continue
		}
		l := m.Get(fd).List()
		for j := 0; j < l.Len(); j++ {
			x := l.Get(j).Message()
			out = append(out, x.Get(x.Descriptor().Fields().ByName("preamble")).Message().Interface().(*p4configv1.Preamble))
		}
	}
	return out
}

func loadTNAP4Info(t *testing.T, profile string) *p4configv1.P4Info {
	t.Helper()
	b, err := os.ReadFile(tnaP4InfoPath(profile))
	if err != nil {
		t.Fatal(err)
	}
	info := &p4configv1.P4Info{}
	if err := prototext.Unmarshal(b, info); err != nil {
		t.Fatalf("%s: %v", tnaP4InfoPath(profile), err)
	}
	return info
}

// tnaP4InfoHeader heads a P4Info file written by this reader (p4c's own files have
// no such comment: build.sh copies the compiler's output over it).
const tnaP4InfoHeader = "# proto-file: p4/config/v1/p4info.proto\n# proto-message: p4.config.v1.P4Info\n" +
	"# Derived from p4src/tna by p4src/tnainfo_test.go (-update-tna-p4info); the same objects\n" +
	"# as p4c-barefoot 9.13.4 writes (docs/tofino.md \"P4Info\").\n\n"

func TestTNAP4InfoMatchesSource(t *testing.T) {
	prog := parseTNAProgram(t)
	for _, pr := range tnaProfiles {
		derived, err := buildTNAP4Info(t, prog, pr.arch)
		if err != nil {
			t.Fatal(err)
		}
		if *updateTNAP4Info {
			b, err := prototext.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(derived)
			if err != nil {
				t.Fatal(err)
			}
			// prototext varies its spacing between builds on purpose ("key:  value"):
			// one space after each field name, so that a rewrite changes only what changed.
			b = reTextFieldSpace.ReplaceAll(b, []byte("$1: "))
			if err := os.WriteFile(tnaP4InfoPath(pr.profile), append([]byte(tnaP4InfoHeader), b...), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		committed := loadTNAP4Info(t, pr.profile)
		for _, d := range DiffP4Info(committed, derived) {
			t.Errorf("%s: %s", pr.profile, strings.ReplaceAll(d, "p4c:", "source:"))
		}
	}
}

// TestTNAReaderSeesTheProgram makes sure the reader reads what it derives from: the
// counts and a few objects of each kind, and a changed declaration changes the P4Info.
func TestTNAReaderSeesTheProgram(t *testing.T) {
	prog := parseTNAProgram(t)
	info, err := buildTNAP4Info(t, prog, "tna")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]proto.Message{}
	for _, x := range info.Registers {
		byName["register "+x.Preamble.Name] = x
	}
	for _, x := range info.Counters {
		byName["counter "+x.Preamble.Name] = x
	}
	for _, x := range info.Tables {
		byName["table "+x.Preamble.Name] = x
	}
	reg := func(n string) *p4configv1.Register {
		r, _ := byName["register "+n].(*p4configv1.Register)
		return r
	}
	tbl := func(n string) *p4configv1.Table {
		r, _ := byName["table "+n].(*p4configv1.Table)
		return r
	}
	tests := []struct {
		name      string
		got, want any
	}{
		{"registers", len(info.Registers) >= 30, true},
		{"counters", len(info.Counters), len(loadP4Info(t).GetCounters())},
		{"digests", len(info.Digests), 2},
		{"controller headers", len(info.ControllerPacketMetadata), 2},
		// IDs p4c-barefoot 9.13.4 wrote for these objects (2026-12-02), beside v1model's.
		{"lane 15 register", fmt.Sprint(reg("inc_slot_value_15").GetPreamble().GetId(), reg("inc_slot_value_15").GetSize()), fmt.Sprint(379983110, IncSlots)},
		{"lane 15 is not v1model's ID", reg("inc_slot_value_15").GetPreamble().GetId() != RegIncSlotValue0+15, true},
		{"pair register type", reg("flow_owner").GetTypeSpec().GetStruct().GetName(), "pair32_t"},
		{"pair32_t members", len(info.GetTypeInfo().GetStructs()["pair32_t"].GetMembers()), 2},
		{"switch_cnp_sent keeps its v1model name", byName["counter FastcnpEgress.switch_cnp_sent"] != nil, true},
		{"rx_bytes_log2 is const", tbl("FastcnpEgress.rx_bytes_log2").GetIsConstTable(), true},
		{"rx_bytes_log2 key", fmt.Sprint(tbl("FastcnpEgress.rx_bytes_log2").GetMatchFields()[0].GetBitwidth()), "32"},
		{"traffic_class vlan_valid", tbl("FastcnpIngress.traffic_class").GetMatchFields()[0].GetBitwidth(), int32(1)},
		{"inc_child_port key", tbl("FastcnpIngress.inc_child_port").GetMatchFields()[0].GetBitwidth(), int32(9)},
		{"selector table", tbl("FastcnpIngress.next_hop_group_select").GetImplementationId(), uint32(293377507)},
		{"selector", fmt.Sprint(info.ActionProfiles[0].GetWithSelector(), info.ActionProfiles[0].GetMaxGroupSize()), "true 1024"},
	}
	for _, tc := range tests {
		if fmt.Sprint(tc.got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: read %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	// A changed size in a copy of the source shows up in the derived P4Info.
	prog.externs["FastcnpEgress"] = append([]tnaExtern(nil), prog.externs["FastcnpEgress"]...)
	for i, e := range prog.externs["FastcnpEgress"] {
		if e.local == "flow_owner" {
			prog.externs["FastcnpEgress"][i].size = strconv.Itoa(FlowSlots / 2)
		}
	}
	changed, err := buildTNAP4Info(t, prog, "tna")
	if err != nil {
		t.Fatal(err)
	}
	if d := DiffP4Info(info, changed); len(d) != 1 || !strings.Contains(d[0], `"flow_owner"`) {
		t.Errorf("a halved flow_owner: differences %q, want the one register", d)
	}
}

// p4infoChanges lists how P4Info b differs from a, one "kind|name|change" per object:
// change is "v1model only", "TNA only", or "differs: " and the fields that differ
// (a preamble's by their own names: "preamble.id").
func p4infoChanges(a, b *p4configv1.P4Info) []string {
	var out []string
	ra, rb := a.ProtoReflect(), b.ProtoReflect()
	fields := ra.Descriptor().Fields()
	changed := func(x, y protoreflect.Message) string {
		var fs []string
		xf := x.Descriptor().Fields()
		for i := 0; i < xf.Len(); i++ {
			fd := xf.Get(i)
			if fd.Name() == "preamble" {
				for _, f := range changedFields(x.Get(fd).Message(), y.Get(fd).Message()) {
					fs = append(fs, "preamble."+f)
				}
				continue
			}
			if !valueEqual(x, y, fd) {
				fs = append(fs, string(fd.Name()))
			}
		}
		return "differs: " + strings.Join(fs, ", ")
	}
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		kind := string(fd.Name())
		switch {
		case fd.IsList() && fd.Message() != nil:
			key := preambleName
			if kind == "externs" {
				key = externTypeName
			} else if fd.Message().Fields().ByName("preamble") == nil {
				continue
			}
			ia, ib := map[string]protoreflect.Message{}, map[string]protoreflect.Message{}
			for j, l := 0, ra.Get(fd).List(); j < l.Len(); j++ {
				ia[key(l.Get(j).Message())] = l.Get(j).Message()
			}
			for j, l := 0, rb.Get(fd).List(); j < l.Len(); j++ {
				ib[key(l.Get(j).Message())] = l.Get(j).Message()
			}
			for n, x := range ia {
				if y, ok := ib[n]; !ok {
					out = append(out, kind+"|"+n+"|v1model only")
				} else if !proto.Equal(x.Interface(), y.Interface()) {
					out = append(out, kind+"|"+n+"|"+changed(x, y))
				}
			}
			for n := range ib {
				if _, ok := ia[n]; !ok {
					out = append(out, kind+"|"+n+"|TNA only")
				}
			}
		case kind == "type_info":
			sa, sb := a.GetTypeInfo().GetStructs(), b.GetTypeInfo().GetStructs()
			for n, x := range sa {
				if y, ok := sb[n]; !ok {
					out = append(out, "type_info.structs|"+n+"|v1model only")
				} else if !proto.Equal(x, y) {
					out = append(out, "type_info.structs|"+n+"|differs")
				}
			}
			for n := range sb {
				if _, ok := sa[n]; !ok {
					out = append(out, "type_info.structs|"+n+"|TNA only")
				}
			}
		case !valueEqual(ra, rb, fd):
			out = append(out, kind+"||"+changed(ra.Get(fd).Message(), rb.Get(fd).Message()))
		}
	}
	sort.Strings(out)
	return out
}

func changedFields(x, y protoreflect.Message) []string {
	var fs []string
	xf := x.Descriptor().Fields()
	for i := 0; i < xf.Len(); i++ {
		if !valueEqual(x, y, xf.Get(i)) {
			fs = append(fs, string(xf.Get(i).Name()))
		}
	}
	return fs
}

// valueEqual compares field fd of two messages of one type.
func valueEqual(x, y protoreflect.Message, fd protoreflect.FieldDescriptor) bool {
	if x.Has(fd) != y.Has(fd) {
		return false
	}
	cx, cy := x.New(), y.New()
	if x.Has(fd) {
		cx.Set(fd, x.Get(fd))
		cy.Set(fd, y.Get(fd))
	}
	return proto.Equal(cx.Interface(), cy.Interface())
}

// The heading of docs/tofino.md whose table lists the differences.
const sectionTNAP4InfoDifferences = "P4Info differences from the v1model program"

// withV1ExternIDs returns a copy of a TNA P4Info in which every counter, register,
// digest and action profile that v1model also has carries v1model's ID (and a table
// its profile's): they all have bf-p4c's IDs instead (docs/tofino.md "P4Info";
// TestTNAP4InfoMatchesSource pins them), so the documented differences are the others.
func withV1ExternIDs(v1, tna *p4configv1.P4Info) *p4configv1.P4Info {
	out := proto.Clone(tna).(*p4configv1.P4Info)
	v1IDs := map[string]uint32{}
	for _, o := range allPreambles(v1) {
		v1IDs[o.Name] = o.Id
	}
	var externs []*p4configv1.Preamble
	for _, x := range out.Counters {
		externs = append(externs, x.Preamble)
	}
	for _, x := range out.Registers {
		externs = append(externs, x.Preamble)
	}
	for _, x := range out.Digests {
		externs = append(externs, x.Preamble)
	}
	for _, x := range out.ActionProfiles {
		externs = append(externs, x.Preamble)
	}
	moved := map[uint32]uint32{}
	for _, pre := range externs {
		if id, ok := v1IDs[pre.Name]; ok {
			moved[pre.Id] = id
			pre.Id = id
		}
	}
	for _, x := range out.Tables {
		if id, ok := moved[x.ImplementationId]; ok {
			x.ImplementationId = id
		}
	}
	return out
}

// TestTNAP4InfoDifferencesDocumented: every way the TNA P4Infos differ from the
// v1model one is a row of docs/tofino.md's table (kind, name, change), and every row
// is a difference; a TNA object that keeps a v1model object's name keeps its ID, its
// fields and its type, unless the table says so.
func TestTNAP4InfoDifferencesDocumented(t *testing.T) {
	doc := readRepoFile(t, "docs/tofino.md")
	i := strings.Index(doc, "### "+sectionTNAP4InfoDifferences)
	if i < 0 {
		t.Fatalf("docs/tofino.md has no section %q", sectionTNAP4InfoDifferences)
	}
	rows := map[string]bool{}
	for _, line := range strings.Split(doc[i:], "\n")[1:] {
		if strings.HasPrefix(line, "### ") || strings.HasPrefix(line, "## ") {
			break
		}
		cells := strings.Split(line, "|")
		if len(cells) < 5 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") || strings.TrimSpace(cells[1]) == "kind" {
			continue
		}
		unquote := func(s string) string { return strings.Trim(strings.TrimSpace(s), "`") }
		rows[unquote(cells[1])+"|"+unquote(cells[2])+"|"+unquote(cells[3])] = true
	}
	if len(rows) < 10 {
		t.Fatalf("read %d rows of the differences table", len(rows))
	}
	v1 := loadP4Info(t)
	for _, pr := range tnaProfiles {
		got := map[string]bool{}
		for _, c := range p4infoChanges(v1, withV1ExternIDs(v1, loadTNAP4Info(t, pr.profile))) {
			got[c] = true
			if !rows[c] {
				t.Errorf("%s: %q is not in docs/tofino.md %q", pr.profile, c, sectionTNAP4InfoDifferences)
			}
		}
		for r := range rows {
			if !got[r] {
				t.Errorf("%s: docs/tofino.md lists %q, which is no difference", pr.profile, r)
			}
		}
	}
}

// ---------------------------------------------------------------------------
// One stateful ALU access per register and one use per counter per packet: on
// Tofino a Register's RegisterActions and a Counter are attached to the tables
// that call them, and bf-p4c lets two tables share one only when they are
// mutually exclusive in the control flow (table_mutex.cpp: exclusive branches of
// an if / else if / else chain or of a switch), whatever values the program
// knows to be exclusive. The test reads each control's apply block and checks that
// every two call sites of one register (any of its RegisterActions) or of one
// counter lie in different branches of one if chain or switch.
// ---------------------------------------------------------------------------

// branchStep is one level of a call site's path: which branch of which if chain
// or switch it is in.
type branchStep struct{ node, branch int }

var (
	reRegisterAction = regexp.MustCompile(`\bRegisterAction\s*<[^(]*>\s*\(\s*(\w+)\s*\)\s*(\w+)\s*=`)
	reStatefulCall   = regexp.MustCompile(`^(\w+)\.(?:execute|count)\s*\(`)
	reWord           = regexp.MustCompile(`^[A-Za-z_]\w*`)
	reApplyBlock     = regexp.MustCompile(`\bapply\s*\{`)
)

// callPaths returns, for every X.execute( and X.count( in an apply block, X and
// the branches each call lies in. An if / else if / else chain is one node whose
// branches are numbered in order; a switch is one node whose cases are.
func callPaths(body string) (map[string][][]branchStep, error) {
	type frame struct {
		step    *branchStep // the branch this block is; nil for other blocks
		switch_ int         // a switch's node (its block holds the cases); 0 otherwise
		cases   int
	}
	var stack []frame
	path := func() []branchStep {
		var p []branchStep
		for _, f := range stack {
			if f.step != nil {
				p = append(p, *f.step)
			}
		}
		return p
	}
	out := map[string][][]branchStep{}
	record := func(s string) {
		for j := 0; j < len(s); j++ {
			if j > 0 && (isWordByte(s[j-1]) || s[j-1] == '.') {
				continue
			}
			if m := reStatefulCall.FindStringSubmatch(s[j:]); m != nil {
				out[m[1]] = append(out[m[1]], path())
			}
		}
	}
	lastIf := map[int]branchStep{} // depth -> the branch of the if chain that closed there last
	pendingIf, pendingBranch, pendingSwitch, nodes := 0, 0, 0, 0
	for i := 0; i < len(body); {
		switch body[i] {
		case '{':
			f := frame{}
			switch {
			case pendingSwitch != 0:
				f.switch_, pendingSwitch = pendingSwitch, 0
			case pendingIf != 0:
				f.step, pendingIf = &branchStep{pendingIf, pendingBranch}, 0
			case len(stack) > 0 && stack[len(stack)-1].switch_ != 0:
				top := &stack[len(stack)-1]
				f.step = &branchStep{top.switch_, top.cases}
				top.cases++
			}
			stack = append(stack, f)
			i++
			continue
		case '}':
			if len(stack) == 0 {
				return nil, fmt.Errorf("unbalanced '}' at %d", i)
			}
			f := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if f.step != nil {
				lastIf[len(stack)] = *f.step
			}
			i++
			continue
		}
		w := reWord.FindString(body[i:])
		if w == "" || (i > 0 && (isWordByte(body[i-1]) || body[i-1] == '.')) {
			i++
			continue
		}
		switch w {
		case "if", "switch":
			open := strings.IndexByte(body[i:], '(')
			if open < 0 {
				return nil, fmt.Errorf("%s without a condition at %d", w, i)
			}
			end, err := matchClose(body, i+open)
			if err != nil {
				return nil, err
			}
			record(body[i+open : end]) // a condition's calls come before its branches
			if w == "switch" {
				nodes++
				pendingSwitch = nodes
			} else if pendingIf == 0 { // a new chain; "else if" continues one
				nodes++
				pendingIf, pendingBranch = nodes, 0
			}
			i = end
			continue
		case "else":
			last, ok := lastIf[len(stack)]
			if !ok {
				return nil, fmt.Errorf("else without an if at %d", i)
			}
			pendingIf, pendingBranch = last.node, last.branch+1
		default:
			if m := reStatefulCall.FindStringSubmatch(body[i:]); m != nil {
				out[m[1]] = append(out[m[1]], path())
			}
		}
		i += len(w)
	}
	if len(stack) != 0 {
		return nil, fmt.Errorf("%d blocks left open", len(stack))
	}
	return out, nil
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// exclusive reports whether two call paths lie in different branches of one node.
func exclusive(a, b []branchStep) bool {
	for k := 0; k < len(a) && k < len(b); k++ {
		if a[k] == b[k] {
			continue
		}
		return a[k].node == b[k].node
	}
	return false
}

// statefulConflicts lists the pairs of calls of one register or counter (group
// maps a called name to what it uses) that are not mutually exclusive.
func statefulConflicts(paths map[string][][]branchStep, group map[string]string) []string {
	type site struct {
		name string
		path []branchStep
	}
	byUse := map[string][]site{}
	for name, ps := range paths {
		use, ok := group[name]
		if !ok {
			continue
		}
		for _, p := range ps {
			byUse[use] = append(byUse[use], site{name, p})
		}
	}
	var out []string
	for use, sites := range byUse {
		for i := range sites {
			for j := i + 1; j < len(sites); j++ {
				if !exclusive(sites[i].path, sites[j].path) {
					out = append(out, fmt.Sprintf("%s: %s and %s on one path", use, sites[i].name, sites[j].name))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestCallPathsExclusive(t *testing.T) {
	group := map[string]string{"a_set": "reg", "a_add": "reg", "c": "ctr"}
	for _, tc := range []struct {
		name, body string
		conflicts  int
	}{
		{"if else", "if (x) { a_set.execute(i); } else { a_add.execute(i); }", 0},
		{"else if chain", "if (x) { a_set.execute(i); } else if (y) { c.count(i); } else { a_add.execute(i); c.count(j); }", 0},
		{"two ifs", "if (x) { a_set.execute(i); } if (!x) { a_add.execute(i); }", 1},
		{"nested same branch", "if (x) { if (y) { c.count(1); } c.count(2); }", 1},
		{"nested exclusive", "if (x) { if (y) { c.count(1); } else { c.count(2); } } else { c.count(3); }", 0},
		{"in a condition", "if (a_set.execute(i) == 1) { a_add.execute(i); }", 1},
		{"switch cases", "switch (t.apply().action_run) { p: { c.count(1); } q: { c.count(2); } }", 0},
		{"after a switch", "switch (t.apply().action_run) { p: { c.count(1); } } c.count(2);", 1},
		{"straight line", "a_set.execute(i); x = 1; c.count(1); a_add.execute(i);", 1},
	} {
		paths, err := callPaths(tc.body)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := statefulConflicts(paths, group); len(got) != tc.conflicts {
			t.Errorf("%s: conflicts %q, want %d", tc.name, got, tc.conflicts)
		}
	}
}

// TestTNAStatefulUsesExclusive: in the TNA program, every register's RegisterActions
// and every counter are called at most once on any path through a control.
func TestTNAStatefulUsesExclusive(t *testing.T) {
	prog := parseTNAProgram(t)
	checked := 0
	for name, c := range prog.controls {
		loc := reApplyBlock.FindStringIndex(c.body)
		if loc == nil {
			continue
		}
		end, err := matchClose(c.body, loc[1]-1)
		if err != nil {
			t.Fatal(err)
		}
		paths, err := callPaths(c.body[loc[1]-1 : end])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		group := map[string]string{}
		for _, m := range reRegisterAction.FindAllStringSubmatch(c.decls, -1) {
			group[m[2]] = "register " + m[1]
		}
		for _, e := range prog.externs[name] {
			if e.kind == "Counter" {
				group[e.local] = "counter " + e.local
			}
		}
		for n := range paths {
			if _, ok := group[n]; ok {
				checked++
			}
		}
		for _, c := range statefulConflicts(paths, group) {
			t.Errorf("%s: %s", name, c)
		}
	}
	if checked < 40 {
		t.Errorf("only %d RegisterActions and counters called: the reader missed calls", checked)
	}
}
