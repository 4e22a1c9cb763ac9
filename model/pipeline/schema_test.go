package pipeline

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"

	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
)

// p4infoPath is the committed P4Info of p4src/, relative to this package.
var p4infoPath = filepath.Join("..", "..", "p4src", "fastcnp.p4info.txtpb")

func loadP4Info(t *testing.T) *p4configv1.P4Info {
	t.Helper()
	text, err := os.ReadFile(p4infoPath)
	if os.IsNotExist(err) {
		t.Skipf("%s does not exist yet: schema not cross-checked", p4infoPath)
	}
	mustOK(t, err)
	info := &p4configv1.P4Info{}
	mustOK(t, prototext.Unmarshal(text, info))
	return info
}

func kindOf(m p4configv1.MatchField_MatchType) MatchKind {
	switch m {
	case p4configv1.MatchField_EXACT:
		return MatchExact
	case p4configv1.MatchField_LPM:
		return MatchLPM
	case p4configv1.MatchField_TERNARY:
		return MatchTernary
	}
	return 0
}

// TestSchemaMatchesP4Info cross-checks every object of the Go schema with the
// committed P4Info, both ways.
func TestSchemaMatchesP4Info(t *testing.T) {
	info := loadP4Info(t)
	s := ProgramSchema()

	if len(info.GetTables()) != len(s.Tables) {
		t.Errorf("%d tables in P4Info, %d in Go", len(info.GetTables()), len(s.Tables))
	}
	for _, pt := range info.GetTables() {
		gt, ok := s.Table(pt.GetPreamble().GetId())
		if !ok {
			t.Errorf("P4Info table %s (%#x) missing in Go", pt.GetPreamble().GetName(), pt.GetPreamble().GetId())
			continue
		}
		if gt.Name != pt.GetPreamble().GetName() || gt.Size != int(pt.GetSize()) {
			t.Errorf("table %#x: Go %s size %d, P4Info %s size %d", gt.ID, gt.Name, gt.Size, pt.GetPreamble().GetName(), pt.GetSize())
		}
		if len(gt.Keys) != len(pt.GetMatchFields()) {
			t.Errorf("table %s: %d keys in Go, %d in P4Info", gt.Name, len(gt.Keys), len(pt.GetMatchFields()))
		}
		for i, mf := range pt.GetMatchFields() {
			if i >= len(gt.Keys) {
				break
			}
			k := gt.Keys[i]
			if k.ID != mf.GetId() || k.Name != mf.GetName() || k.Bitwidth != int(mf.GetBitwidth()) || k.Kind != kindOf(mf.GetMatchType()) {
				t.Errorf("table %s key %d: Go %+v, P4Info %v", gt.Name, i, k, mf)
			}
		}
		var refs []uint32
		for _, r := range pt.GetActionRefs() {
			refs = append(refs, r.GetId())
		}
		if !slices.Equal(refs, gt.ActionIDs) {
			t.Errorf("table %s actions: Go %#x, P4Info %#x", gt.Name, gt.ActionIDs, refs)
		}
		var defOnly []uint32
		for _, r := range pt.GetActionRefs() {
			if r.GetScope() == p4configv1.ActionRef_DEFAULT_ONLY {
				defOnly = append(defOnly, r.GetId())
			}
		}
		if !slices.Equal(defOnly, gt.DefaultOnly) || pt.GetImplementationId() != gt.ProfileID {
			t.Errorf("table %s: Go default-only %#x profile %#x, P4Info %#x implementation %#x", gt.Name, gt.DefaultOnly, gt.ProfileID, defOnly, pt.GetImplementationId())
		}
		def := pt.GetInitialDefaultAction().GetActionId()
		if def == 0 {
			def = pt.GetConstDefaultActionId()
		}
		if def != gt.DefaultAction || (pt.GetConstDefaultActionId() != 0) != gt.ConstDefault {
			t.Errorf("table %s default: Go %#x const %v, P4Info %#x const %#x", gt.Name, gt.DefaultAction, gt.ConstDefault, def, pt.GetConstDefaultActionId())
		}
	}

	if len(info.GetActionProfiles()) != len(s.ActionProfiles) {
		t.Errorf("%d action profiles in P4Info, %d in Go", len(info.GetActionProfiles()), len(s.ActionProfiles))
	}
	for _, pa := range info.GetActionProfiles() {
		ga, ok := s.ActionProfile(pa.GetPreamble().GetId())
		if !ok || ga.Name != pa.GetPreamble().GetName() || !slices.Equal(ga.TableIDs, pa.GetTableIds()) || ga.WithSelector != pa.GetWithSelector() ||
			ga.Size != int(pa.GetSize()) || ga.MaxGroupSize != int(pa.GetMaxGroupSize()) {
			t.Errorf("action profile %s (%#x): P4Info %v, Go %+v", pa.GetPreamble().GetName(), pa.GetPreamble().GetId(), pa, ga)
		}
	}

	if len(info.GetActions()) != len(s.Actions) {
		t.Errorf("%d actions in P4Info, %d in Go", len(info.GetActions()), len(s.Actions))
	}
	for _, pa := range info.GetActions() {
		ga, ok := s.Action(pa.GetPreamble().GetId())
		if !ok || ga.Name != pa.GetPreamble().GetName() || len(ga.Params) != len(pa.GetParams()) {
			t.Errorf("action %s (%#x): Go %+v", pa.GetPreamble().GetName(), pa.GetPreamble().GetId(), ga)
			continue
		}
		for i, pp := range pa.GetParams() {
			gp := ga.Params[i]
			if gp.ID != pp.GetId() || gp.Name != pp.GetName() || gp.Bitwidth != int(pp.GetBitwidth()) {
				t.Errorf("action %s param %d: Go %+v, P4Info %v", ga.Name, i, gp, pp)
			}
		}
	}

	if len(info.GetCounters()) != len(s.Counters) {
		t.Errorf("%d counters in P4Info, %d in Go", len(info.GetCounters()), len(s.Counters))
	}
	for _, pc := range info.GetCounters() {
		gc, ok := s.Counter(pc.GetPreamble().GetId())
		if !ok || gc.Name != pc.GetPreamble().GetName() || gc.Size != int(pc.GetSize()) || pc.GetSpec().GetUnit() != p4configv1.CounterSpec_BOTH {
			t.Errorf("counter %s (%#x) size %d unit %v: Go %+v", pc.GetPreamble().GetName(), pc.GetPreamble().GetId(), pc.GetSize(), pc.GetSpec().GetUnit(), gc)
		}
	}

	if len(info.GetRegisters()) != len(s.Registers) {
		t.Errorf("%d registers in P4Info, %d in Go", len(info.GetRegisters()), len(s.Registers))
	}
	for _, pr := range info.GetRegisters() {
		gr, ok := s.Register(pr.GetPreamble().GetId())
		w := int(pr.GetTypeSpec().GetBitstring().GetBit().GetBitwidth())
		if !ok || gr.Name != pr.GetPreamble().GetName() || gr.Size != int(pr.GetSize()) || gr.Bitwidth != w {
			t.Errorf("register %s (%#x) bit<%d>[%d]: Go %+v", pr.GetPreamble().GetName(), pr.GetPreamble().GetId(), w, pr.GetSize(), gr)
		}
	}

	if len(info.GetDigests()) != len(s.Digests) {
		t.Errorf("%d digests in P4Info, %d in Go", len(info.GetDigests()), len(s.Digests))
	}
	for _, pd := range info.GetDigests() {
		gd, ok := s.Digest(pd.GetPreamble().GetId())
		if !ok || gd.Name != pd.GetPreamble().GetName() {
			t.Errorf("digest %s (%#x): Go %+v", pd.GetPreamble().GetName(), pd.GetPreamble().GetId(), gd)
			continue
		}
		st := info.GetTypeInfo().GetStructs()[pd.GetTypeSpec().GetStruct().GetName()]
		if len(st.GetMembers()) != len(gd.Fields) {
			t.Errorf("digest %s: %d members in P4Info, %d in Go", gd.Name, len(st.GetMembers()), len(gd.Fields))
			continue
		}
		for i, m := range st.GetMembers() {
			if m.GetName() != gd.Fields[i].Name || int(m.GetTypeSpec().GetBitstring().GetBit().GetBitwidth()) != gd.Fields[i].Bitwidth {
				t.Errorf("digest %s member %d: P4Info %v, Go %+v", gd.Name, i, m, gd.Fields[i])
			}
		}
	}

	if len(info.GetValueSets()) != 1 {
		t.Errorf("%d value sets in P4Info, want 1", len(info.GetValueSets()))
	}
	for _, pv := range info.GetValueSets() {
		gv := s.ValueSets[0]
		if pv.GetPreamble().GetId() != gv.ID || pv.GetPreamble().GetName() != gv.Name || int(pv.GetSize()) != gv.Size ||
			len(pv.GetMatch()) != 1 || int(pv.GetMatch()[0].GetBitwidth()) != gv.Bitwidth {
			t.Errorf("value set: P4Info %v, Go %+v", pv, gv)
		}
	}

	if len(info.GetControllerPacketMetadata()) != len(s.PacketMetadata) {
		t.Errorf("%d packet metadata headers in P4Info, %d in Go", len(info.GetControllerPacketMetadata()), len(s.PacketMetadata))
	}
	for _, pm := range info.GetControllerPacketMetadata() {
		var gm *PacketMetadataInfo
		for i := range s.PacketMetadata {
			if s.PacketMetadata[i].ID == pm.GetPreamble().GetId() {
				gm = &s.PacketMetadata[i]
			}
		}
		if gm == nil || gm.Name != pm.GetPreamble().GetName() || len(gm.Fields) != len(pm.GetMetadata()) {
			t.Errorf("packet metadata %s: Go %+v", pm.GetPreamble().GetName(), gm)
			continue
		}
		for i, f := range pm.GetMetadata() {
			if f.GetId() != gm.Fields[i].ID || f.GetName() != gm.Fields[i].Name || int(f.GetBitwidth()) != gm.Fields[i].Bitwidth {
				t.Errorf("packet metadata %s field %d: P4Info %v, Go %+v", gm.Name, i, f, gm.Fields[i])
			}
		}
	}
}

// TestSchemaIDsUnique checks the Go schema on its own: unique IDs, param and key IDs
// 1..n in order, registers addressable.
func TestSchemaIDsUnique(t *testing.T) {
	s := ProgramSchema()
	seen := map[uint32]string{}
	add := func(id uint32, name string) {
		if prev, dup := seen[id]; dup {
			t.Errorf("ID %#x used by %s and %s", id, prev, name)
		}
		seen[id] = name
	}
	for _, x := range s.Tables {
		add(x.ID, x.Name)
		for i, k := range x.Keys {
			if k.ID != uint32(i+1) {
				t.Errorf("table %s key %s ID %d", x.Name, k.Name, k.ID)
			}
		}
	}
	for _, x := range s.Actions {
		add(x.ID, x.Name)
		if len(x.Params) > maxParams {
			t.Errorf("action %s has more than %d params", x.Name, maxParams)
		}
	}
	for _, x := range s.Counters {
		add(x.ID, x.Name)
	}
	p := New(Options{})
	for _, x := range s.Registers {
		add(x.ID, x.Name)
		if got := p.regs.size(x.ID); got != x.Size {
			t.Errorf("register %s: %d cells, want %d", x.Name, got, x.Size)
		}
	}
	for _, x := range s.Digests {
		add(x.ID, x.Name)
	}
}
