package p4rtserver

import (
	"fmt"
	"slices"

	"github.com/fastcnp/fastcnp/model/pipeline"
	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
)

var matchKinds = map[pipeline.MatchKind]p4configv1.MatchField_MatchType{
	pipeline.MatchExact:   p4configv1.MatchField_EXACT,
	pipeline.MatchLPM:     p4configv1.MatchField_LPM,
	pipeline.MatchTernary: p4configv1.MatchField_TERNARY,
}

func preamble(id uint32, name string) *p4configv1.Preamble {
	return &p4configv1.Preamble{Id: id, Name: name}
}

func bitSpec(w int) *p4configv1.P4DataTypeSpec {
	return &p4configv1.P4DataTypeSpec{TypeSpec: &p4configv1.P4DataTypeSpec_Bitstring{
		Bitstring: &p4configv1.P4BitstringLikeTypeSpec{TypeSpec: &p4configv1.P4BitstringLikeTypeSpec_Bit{
			Bit: &p4configv1.P4BitTypeSpec{Bitwidth: int32(w)}}}}}
}

// P4InfoFromSchema builds the P4Info that describes a pipeline schema: the objects,
// IDs, names and widths that CheckP4Info accepts. It is what the target serves when
// no P4Info file is at hand, and what tests push.
func P4InfoFromSchema(sc *pipeline.Schema) *p4configv1.P4Info {
	info := &p4configv1.P4Info{
		PkgInfo:  &p4configv1.PkgInfo{Name: "fastcnp", Arch: "v1model"},
		TypeInfo: &p4configv1.P4TypeInfo{Structs: map[string]*p4configv1.P4StructTypeSpec{}},
	}
	for _, a := range sc.Actions {
		pa := &p4configv1.Action{Preamble: preamble(a.ID, a.Name)}
		for _, p := range a.Params {
			pa.Params = append(pa.Params, &p4configv1.Action_Param{Id: p.ID, Name: p.Name, Bitwidth: int32(p.Bitwidth)})
		}
		info.Actions = append(info.Actions, pa)
	}
	for _, t := range sc.Tables {
		pt := &p4configv1.Table{Preamble: preamble(t.ID, t.Name), Size: int64(t.Size)}
		for _, k := range t.Keys {
			pt.MatchFields = append(pt.MatchFields, &p4configv1.MatchField{Id: k.ID, Name: k.Name, Bitwidth: int32(k.Bitwidth),
				Match: &p4configv1.MatchField_MatchType_{MatchType: matchKinds[k.Kind]}})
		}
		for _, a := range t.ActionIDs {
			ref := &p4configv1.ActionRef{Id: a}
			if slices.Contains(t.DefaultOnly, a) {
				ref.Scope, ref.Annotations = p4configv1.ActionRef_DEFAULT_ONLY, []string{"@defaultonly"}
			}
			pt.ActionRefs = append(pt.ActionRefs, ref)
		}
		if t.ConstDefault {
			pt.ConstDefaultActionId = t.DefaultAction
		}
		pt.InitialDefaultAction = &p4configv1.TableActionCall{ActionId: t.DefaultAction}
		pt.ImplementationId = t.ProfileID
		info.Tables = append(info.Tables, pt)
	}
	for _, ap := range sc.ActionProfiles {
		info.ActionProfiles = append(info.ActionProfiles, &p4configv1.ActionProfile{Preamble: preamble(ap.ID, ap.Name),
			TableIds: slices.Clone(ap.TableIDs), WithSelector: ap.WithSelector, Size: int64(ap.Size), MaxGroupSize: int32(ap.MaxGroupSize)})
	}
	for _, c := range sc.Counters {
		info.Counters = append(info.Counters, &p4configv1.Counter{Preamble: preamble(c.ID, c.Name),
			Spec: &p4configv1.CounterSpec{Unit: p4configv1.CounterSpec_BOTH}, Size: int64(c.Size)})
	}
	for _, r := range sc.Registers {
		info.Registers = append(info.Registers, &p4configv1.Register{Preamble: preamble(r.ID, r.Name),
			TypeSpec: bitSpec(r.Bitwidth), Size: int32(r.Size)})
	}
	for _, d := range sc.Digests {
		st := &p4configv1.P4StructTypeSpec{}
		for _, f := range d.Fields {
			st.Members = append(st.Members, &p4configv1.P4StructTypeSpec_Member{Name: f.Name, TypeSpec: bitSpec(f.Bitwidth)})
		}
		info.TypeInfo.Structs[d.Name] = st
		info.Digests = append(info.Digests, &p4configv1.Digest{Preamble: preamble(d.ID, d.Name),
			TypeSpec: &p4configv1.P4DataTypeSpec{TypeSpec: &p4configv1.P4DataTypeSpec_Struct{Struct: &p4configv1.P4NamedType{Name: d.Name}}}})
	}
	for _, v := range sc.ValueSets {
		info.ValueSets = append(info.ValueSets, &p4configv1.ValueSet{Preamble: preamble(v.ID, v.Name), Size: int32(v.Size),
			Match: []*p4configv1.MatchField{{Id: 1, Bitwidth: int32(v.Bitwidth),
				Match: &p4configv1.MatchField_MatchType_{MatchType: p4configv1.MatchField_EXACT}}}})
	}
	for _, m := range sc.PacketMetadata {
		pm := &p4configv1.ControllerPacketMetadata{Preamble: preamble(m.ID, m.Name)}
		for _, f := range m.Fields {
			pm.Metadata = append(pm.Metadata, &p4configv1.ControllerPacketMetadata_Metadata{Id: f.ID, Name: f.Name, Bitwidth: int32(f.Bitwidth)})
		}
		info.ControllerPacketMetadata = append(info.ControllerPacketMetadata, pm)
	}
	return info
}

// CheckP4Info reports whether info describes the program the pipeline runs: the same
// objects with the same IDs, names, widths, match kinds, action references and sizes.
// The error names the first mismatch. Aliases, annotations and documentation are not
// compared.
func CheckP4Info(info *p4configv1.P4Info, sc *pipeline.Schema) error {
	if info == nil {
		return fmt.Errorf("no p4info")
	}
	c := checker{}
	c.actions(info, sc)
	c.tables(info, sc)
	c.actionProfiles(info, sc)
	c.counters(info, sc)
	c.registers(info, sc)
	c.digests(info, sc)
	c.valueSets(info, sc)
	c.packetMetadata(info, sc)
	switch {
	case len(info.DirectCounters) > 0:
		c.fail("direct counter %#x %q: the target's program has no direct counters", info.DirectCounters[0].GetPreamble().GetId(), info.DirectCounters[0].GetPreamble().GetName())
	case len(info.Meters) > 0:
		c.fail("meter %#x %q: the target's program has no meters", info.Meters[0].GetPreamble().GetId(), info.Meters[0].GetPreamble().GetName())
	case len(info.DirectMeters) > 0:
		c.fail("direct meter %#x %q: the target's program has no direct meters", info.DirectMeters[0].GetPreamble().GetId(), info.DirectMeters[0].GetPreamble().GetName())
	case len(info.Externs) > 0:
		c.fail("extern type %d %q: the target's program has no externs", info.Externs[0].GetExternTypeId(), info.Externs[0].GetExternTypeName())
	}
	return c.err
}

// checker keeps the first mismatch found.
type checker struct{ err error }

func (c *checker) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf(format, args...)
	}
}

// objects compares the ID sets of one object kind; it returns the P4Info objects by ID.
func objects[T any](c *checker, kind string, got []T, pre func(T) *p4configv1.Preamble, want map[uint32]string) map[uint32]T {
	byID := make(map[uint32]T, len(got))
	for _, o := range got {
		p := pre(o)
		id := p.GetId()
		if _, dup := byID[id]; dup {
			c.fail("%s %#x %q: ID appears twice", kind, id, p.GetName())
		}
		byID[id] = o
		name, ok := want[id]
		if !ok {
			c.fail("%s %#x %q: not in the target's program", kind, id, p.GetName())
			continue
		}
		if p.GetName() != name {
			c.fail("%s %#x: name %q, the target's program has %q", kind, id, p.GetName(), name)
		}
	}
	ids := make([]uint32, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if _, ok := byID[id]; !ok {
			c.fail("%s %#x %q: missing (the target's program has it)", kind, id, want[id])
		}
	}
	return byID
}

func (c *checker) fields(what string, got []*p4configv1.Action_Param, want []pipeline.FieldInfo) {
	if len(got) != len(want) {
		c.fail("%s: %d params, the target's program has %d", what, len(got), len(want))
		return
	}
	for i, f := range want {
		g := got[i]
		if g.GetId() != f.ID || g.GetName() != f.Name || int(g.GetBitwidth()) != f.Bitwidth {
			c.fail("%s: param %d is %d %q bit<%d>, the target's program has %d %q bit<%d>", what, i+1, g.GetId(), g.GetName(), g.GetBitwidth(), f.ID, f.Name, f.Bitwidth)
		}
	}
}

func (c *checker) actions(info *p4configv1.P4Info, sc *pipeline.Schema) {
	want := map[uint32]string{}
	for _, a := range sc.Actions {
		want[a.ID] = a.Name
	}
	got := objects(c, "action", info.Actions, (*p4configv1.Action).GetPreamble, want)
	for _, a := range sc.Actions {
		if g, ok := got[a.ID]; ok {
			c.fields(fmt.Sprintf("action %#x %q", a.ID, a.Name), g.GetParams(), a.Params)
		}
	}
}

func (c *checker) tables(info *p4configv1.P4Info, sc *pipeline.Schema) {
	want := map[uint32]string{}
	for _, t := range sc.Tables {
		want[t.ID] = t.Name
	}
	got := objects(c, "table", info.Tables, (*p4configv1.Table).GetPreamble, want)
	for _, t := range sc.Tables {
		g, ok := got[t.ID]
		if !ok {
			continue
		}
		what := fmt.Sprintf("table %#x %q", t.ID, t.Name)
		if len(g.GetMatchFields()) != len(t.Keys) {
			c.fail("%s: %d match fields, the target's program has %d", what, len(g.GetMatchFields()), len(t.Keys))
			continue
		}
		for i, k := range t.Keys {
			m := g.GetMatchFields()[i]
			if m.GetId() != k.ID || m.GetName() != k.Name || int(m.GetBitwidth()) != k.Bitwidth || m.GetMatchType() != matchKinds[k.Kind] {
				c.fail("%s: match field %d is %d %q %s bit<%d>, the target's program has %d %q %s bit<%d>", what, i+1,
					m.GetId(), m.GetName(), m.GetMatchType(), m.GetBitwidth(), k.ID, k.Name, matchKinds[k.Kind], k.Bitwidth)
			}
		}
		var refs []uint32
		for _, r := range g.GetActionRefs() {
			refs = append(refs, r.GetId())
		}
		wantRefs := slices.Clone(t.ActionIDs)
		slices.Sort(refs)
		slices.Sort(wantRefs)
		if !slices.Equal(refs, wantRefs) {
			c.fail("%s: action refs %#x, the target's program has %#x", what, refs, wantRefs)
		}
		if g.GetSize() != int64(t.Size) {
			c.fail("%s: size %d, the target's program has %d", what, g.GetSize(), t.Size)
		}
		if (g.GetConstDefaultActionId() != 0) != t.ConstDefault {
			c.fail("%s: const default action %#x, the target's program has const=%v", what, g.GetConstDefaultActionId(), t.ConstDefault)
		}
		if g.GetImplementationId() != t.ProfileID {
			c.fail("%s: implementation %#x, the target's program has %#x", what, g.GetImplementationId(), t.ProfileID)
		}
		var defOnly []uint32
		for _, r := range g.GetActionRefs() {
			if r.GetScope() == p4configv1.ActionRef_DEFAULT_ONLY {
				defOnly = append(defOnly, r.GetId())
			}
		}
		if wantDO := slices.Clone(t.DefaultOnly); !slices.Equal(slices.Sorted(slices.Values(defOnly)), slices.Sorted(slices.Values(wantDO))) {
			c.fail("%s: default-only actions %#x, the target's program has %#x", what, defOnly, wantDO)
		}
		if len(g.GetDirectResourceIds()) > 0 {
			c.fail("%s: direct resources, the target's program has none", what)
		}
	}
}

func (c *checker) actionProfiles(info *p4configv1.P4Info, sc *pipeline.Schema) {
	want := map[uint32]string{}
	for _, x := range sc.ActionProfiles {
		want[x.ID] = x.Name
	}
	got := objects(c, "action profile", info.ActionProfiles, (*p4configv1.ActionProfile).GetPreamble, want)
	for _, x := range sc.ActionProfiles {
		g, ok := got[x.ID]
		if !ok {
			continue
		}
		if !slices.Equal(slices.Sorted(slices.Values(g.GetTableIds())), slices.Sorted(slices.Values(x.TableIDs))) ||
			g.GetWithSelector() != x.WithSelector || g.GetSize() != int64(x.Size) || int(g.GetMaxGroupSize()) != x.MaxGroupSize {
			c.fail("action profile %#x %q: tables %#x selector %v size %d max group size %d; the target's program has %#x %v %d %d",
				x.ID, x.Name, g.GetTableIds(), g.GetWithSelector(), g.GetSize(), g.GetMaxGroupSize(), x.TableIDs, x.WithSelector, x.Size, x.MaxGroupSize)
		}
		if g.GetSumOfMembers() != nil || g.GetWeightsDisallowed() {
			c.fail("action profile %#x %q: SumOfMembers or weights_disallowed; the target's program uses weights and SumOfWeights", x.ID, x.Name)
		}
	}
}

func (c *checker) counters(info *p4configv1.P4Info, sc *pipeline.Schema) {
	want := map[uint32]string{}
	for _, x := range sc.Counters {
		want[x.ID] = x.Name
	}
	got := objects(c, "counter", info.Counters, (*p4configv1.Counter).GetPreamble, want)
	for _, x := range sc.Counters {
		g, ok := got[x.ID]
		if !ok {
			continue
		}
		if g.GetSize() != int64(x.Size) {
			c.fail("counter %#x %q: size %d, the target's program has %d", x.ID, x.Name, g.GetSize(), x.Size)
		}
		if u := g.GetSpec().GetUnit(); u != p4configv1.CounterSpec_BOTH {
			c.fail("counter %#x %q: unit %s, the target's program counts BOTH", x.ID, x.Name, u)
		}
	}
}

func bitWidthOf(ts *p4configv1.P4DataTypeSpec) int {
	return int(ts.GetBitstring().GetBit().GetBitwidth())
}

func (c *checker) registers(info *p4configv1.P4Info, sc *pipeline.Schema) {
	want := map[uint32]string{}
	for _, x := range sc.Registers {
		want[x.ID] = x.Name
	}
	got := objects(c, "register", info.Registers, (*p4configv1.Register).GetPreamble, want)
	for _, x := range sc.Registers {
		g, ok := got[x.ID]
		if !ok {
			continue
		}
		if int(g.GetSize()) != x.Size || bitWidthOf(g.GetTypeSpec()) != x.Bitwidth {
			c.fail("register %#x %q: bit<%d>[%d], the target's program has bit<%d>[%d]", x.ID, x.Name, bitWidthOf(g.GetTypeSpec()), g.GetSize(), x.Bitwidth, x.Size)
		}
	}
}

func (c *checker) digests(info *p4configv1.P4Info, sc *pipeline.Schema) {
	want := map[uint32]string{}
	for _, x := range sc.Digests {
		want[x.ID] = x.Name
	}
	got := objects(c, "digest", info.Digests, (*p4configv1.Digest).GetPreamble, want)
	for _, x := range sc.Digests {
		g, ok := got[x.ID]
		if !ok {
			continue
		}
		what := fmt.Sprintf("digest %#x %q", x.ID, x.Name)
		sn := g.GetTypeSpec().GetStruct().GetName()
		st := info.GetTypeInfo().GetStructs()[sn]
		if sn == "" || st == nil {
			c.fail("%s: type is not a struct described in type_info", what)
			continue
		}
		if len(st.GetMembers()) != len(x.Fields) {
			c.fail("%s: struct %q has %d members, the target's program has %d", what, sn, len(st.GetMembers()), len(x.Fields))
			continue
		}
		for i, f := range x.Fields {
			m := st.GetMembers()[i]
			if m.GetName() != f.Name || bitWidthOf(m.GetTypeSpec()) != f.Bitwidth {
				c.fail("%s: member %d is %q bit<%d>, the target's program has %q bit<%d>", what, i+1, m.GetName(), bitWidthOf(m.GetTypeSpec()), f.Name, f.Bitwidth)
			}
		}
	}
}

func (c *checker) valueSets(info *p4configv1.P4Info, sc *pipeline.Schema) {
	want := map[uint32]string{}
	for _, x := range sc.ValueSets {
		want[x.ID] = x.Name
	}
	got := objects(c, "value set", info.ValueSets, (*p4configv1.ValueSet).GetPreamble, want)
	for _, x := range sc.ValueSets {
		g, ok := got[x.ID]
		if !ok {
			continue
		}
		w := 0
		for _, m := range g.GetMatch() {
			w += int(m.GetBitwidth())
		}
		if len(g.GetMatch()) != 1 || w != x.Bitwidth || int(g.GetSize()) != x.Size {
			c.fail("value set %#x %q: %d match fields of %d bits, size %d; the target's program has 1 field of %d bits, size %d", x.ID, x.Name, len(g.GetMatch()), w, g.GetSize(), x.Bitwidth, x.Size)
		}
	}
}

func (c *checker) packetMetadata(info *p4configv1.P4Info, sc *pipeline.Schema) {
	want := map[uint32]string{}
	for _, x := range sc.PacketMetadata {
		want[x.ID] = x.Name
	}
	got := objects(c, "controller packet metadata", info.ControllerPacketMetadata, (*p4configv1.ControllerPacketMetadata).GetPreamble, want)
	for _, x := range sc.PacketMetadata {
		g, ok := got[x.ID]
		if !ok {
			continue
		}
		what := fmt.Sprintf("controller packet metadata %#x %q", x.ID, x.Name)
		if len(g.GetMetadata()) != len(x.Fields) {
			c.fail("%s: %d fields, the target's program has %d", what, len(g.GetMetadata()), len(x.Fields))
			continue
		}
		for i, f := range x.Fields {
			m := g.GetMetadata()[i]
			if m.GetId() != f.ID || m.GetName() != f.Name || int(m.GetBitwidth()) != f.Bitwidth {
				c.fail("%s: field %d is %d %q bit<%d>, the target's program has %d %q bit<%d>", what, i+1, m.GetId(), m.GetName(), m.GetBitwidth(), f.ID, f.Name, f.Bitwidth)
			}
		}
	}
}
