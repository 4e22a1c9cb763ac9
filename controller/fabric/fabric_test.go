package fabric

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/controller/incroute"
	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/p4src/window"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"google.golang.org/protobuf/proto"
)

func testInfo(t *testing.T) *p4rt.Info {
	t.Helper()
	p, err := p4src.P4Info()
	if err != nil {
		t.Fatal(err)
	}
	in, err := p4rt.NewInfo(p)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func testConfig(t *testing.T) *config.Config {
	t.Helper()
	c, err := config.Load("../config/testdata/fastcnpd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func conn(ip string, sport uint16, qpn uint32) Connection {
	return Connection{ConnKey: ConnKey{SenderIP: netip.MustParseAddr(ip), UDPSrcPort: sport, ReceiverQPN: qpn},
		SenderQPN: 7, Flags: p4src.ConnFlagCNPTarget}
}

func TestComputePortParams(t *testing.T) {
	cfg := testConfig(t)
	sw := cfg.Switch("leaf1")
	tests := []struct {
		port uint16
		want PortParams
	}{
		{1, PortParams{Port: 1, RateBytesPerMs: 12_500_000, QthBytes: 100_000, TcheckNs: 8000, CNPGapNs: 4000,
			Mode: p4src.PortModeFastcnp, REDKminBytes: 5000, REDKmaxBytes: 200_000, REDPmaxQ16: 655, RTTBaseNs: 8000,
			BDPBytes: 100_000, MTUBytes: 1500, PauseQuantumPs: 5120, SwitchID: 1, LosslessPriority: 3}},
		{3, PortParams{Port: 3, RateBytesPerMs: 50_000_000, QthBytes: 400_000, TcheckNs: 8000, CNPGapNs: 4000,
			Mode: p4src.PortModeFastcnp, REDKminBytes: 5000, REDKmaxBytes: 200_000, REDPmaxQ16: 655, RTTBaseNs: 8000,
			BDPBytes: 400_000, MTUBytes: 1500, PauseQuantumPs: 1280, SwitchID: 1, LosslessPriority: 3}},
		{4, PortParams{Port: 4, RateBytesPerMs: 3_125_000, QthBytes: 25_000, TcheckNs: 8000, CNPGapNs: 4000,
			Mode: p4src.PortModeECN, REDKminBytes: 10240, REDKmaxBytes: 102400, REDPmaxQ16: 13107, RTTBaseNs: 8000,
			BDPBytes: 25_000, MTUBytes: 1500, PauseQuantumPs: 20480, SwitchID: 1, LosslessPriority: 3}},
	}
	for _, tt := range tests {
		got, err := ComputePortParams(sw, sw.Port(tt.port), 3)
		if err != nil {
			t.Fatal(err)
		}
		tt.want.BDPLog2Q6, _ = window.BDPLog2Q6(uint64(tt.want.BDPBytes))
		if got != tt.want {
			t.Errorf("port %d:\n got %+v\nwant %+v", tt.port, got, tt.want)
		}
	}
}

func TestDesiredCounts(t *testing.T) {
	info, cfg := testInfo(t), testConfig(t)
	c1 := conn("10.1.1.5", 1000, 17)
	inc := conn("10.1.2.6", 1001, 18)
	inc.Flags, inc.INCGroup, inc.WorkerRank, inc.Index = p4src.ConnFlagIncUplink, 5, 3, 1
	cfg.INC.Groups = []config.INCGroup{{ID: 5, Members: []config.INCMember{{Host: inc.SenderIP, Rank: 3}}}}
	tree, err := ComputeINCTree(cfg, Failures{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Desired(info, Input{Config: cfg, Switch: cfg.Switch("leaf1"), Connections: []Connection{c1, inc}, INCTree: tree})
	if err != nil {
		t.Fatal(err)
	}
	id := func(name string) string {
		x, err := info.TableID(name)
		if err != nil {
			t.Fatal(err)
		}
		return TablePrefix(x)
	}
	for _, tt := range []struct {
		table string
		want  int
	}{
		{TableIPv4Route, 3}, {TableTrafficClass, 4}, {TablePortConfig, 4}, {TableRDMAConnection, 2},
		{TableINCGroup, 1}, {TableINCRoute, 256}, {TableFlowLog2, window.Log2EntryCount},
		{TablePortLog2, window.Log2EntryCount}, {TableWindowExp2, window.Exp2Size},
	} {
		if got := res.State.CountByPrefix(id(tt.table)); got != tt.want {
			t.Errorf("%s: %d entries, want %d", tt.table, got, tt.want)
		}
	}
	for _, p := range []string{"v/", "c/", "d/"} {
		if res.State.CountByPrefix(p) == 0 {
			t.Errorf("no %s entity", p)
		}
	}
	// spine1 asks for 1024 buckets: warned, 256 installed.
	res2, err := Desired(info, Input{Config: cfg, Switch: cfg.Switch("spine1")})
	if err != nil {
		t.Fatal(err)
	}
	if len(res2.Warnings) != 1 || len(res2.INC) != p4src.IncBuckets {
		t.Errorf("spine1: warnings %q, %d buckets", res2.Warnings, len(res2.INC))
	}
}

// TestINCUpdateBounded: Desired applies a weight change with
// incroute.UpdateBounded: weights 97:20:2 -> 97:0:2 on 256 buckets, where
// the minimal-churn table would leave hop 1 a run of 65 > its bound 52, give
// a table within the bound, proportional, that moves at most the bounded
// extra over the minimum, with no warning.
func TestINCUpdateBounded(t *testing.T) {
	info := testInfo(t)
	cfg, err := config.Parse([]byte(`
api: {auth: {insecure: true}}
switches:
  - name: s1
    address: 127.0.0.1:9559
    device_id: 1
    tls: {insecure: true}
    ports:
      - {port: 1, mac: "02:00:00:00:00:01"}
      - {port: 2, mac: "02:00:00:00:00:02"}
      - {port: 3, mac: "02:00:00:00:00:03"}
    inc:
      next_hops:
        - {port: 1, mac: "02:00:00:00:01:01", weight: 97}
        - {port: 2, mac: "02:00:00:00:01:02", weight: 0}
        - {port: 3, mac: "02:00:00:00:01:03", weight: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	before := []incroute.Hop{{ID: 1, Weight: 97}, {ID: 2, Weight: 20}, {ID: 3, Weight: 2}}
	after := []incroute.Hop{{ID: 1, Weight: 97}, {ID: 2, Weight: 0}, {ID: 3, Weight: 2}}
	prev, err := incroute.Build(before, p4src.IncBuckets)
	if err != nil {
		t.Fatal(err)
	}
	counts, err := incroute.Apportion(after, p4src.IncBuckets)
	if err != nil {
		t.Fatal(err)
	}
	minimal, err := incroute.Update(prev, after)
	if err != nil {
		t.Fatal(err)
	}
	if incroute.Check(minimal, after) == nil {
		t.Fatal("the minimal-churn table meets the run bound: the example no longer shows the conflict")
	}
	for _, tt := range []struct {
		name string
		prev incroute.Table
	}{
		{"fresh table", nil},
		{"weight change", prev},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Desired(info, Input{Config: cfg, Switch: cfg.Switch("s1"), PrevINC: tt.prev})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Warnings) != 0 {
				t.Errorf("warnings %q", res.Warnings)
			}
			if err := incroute.Check(res.INC, after); err != nil {
				t.Error(err)
			}
			if got := incroute.Counts(res.INC); got[1] != counts[1] || got[2] != 0 || got[3] != counts[3] {
				t.Errorf("buckets per hop %v, want %v", got, counts)
			}
			if tt.prev != nil {
				limit := incroute.MinMoves(tt.prev, counts) + incroute.BoundedExtraMoves(minimal, counts)
				if m := incroute.Moved(tt.prev, res.INC); m > limit {
					t.Errorf("%d buckets moved, more than the bound %d", m, limit)
				}
			}
		})
	}
}

// TestAnnounceValueSet: the value set holds the announcement port only when
// it is not the default (which the parser knows as a constant); with the
// default it is empty, like after a pipeline push, so nothing is written.
func TestAnnounceValueSet(t *testing.T) {
	info, cfg := testInfo(t), testConfig(t)
	for _, tt := range []struct {
		port    uint16
		members int
	}{{4792, 0}, {4793, 1}, {9000, 1}} {
		cfg.Announce.UDPPort = tt.port
		res, err := Desired(info, Input{Config: cfg, Switch: cfg.Switch("leaf1")})
		if err != nil {
			t.Fatal(err)
		}
		var vs *p4v1.ValueSetEntry
		for _, e := range res.State.Entries() {
			if e.Kind == KindValueSet {
				vs = e.Entity.GetValueSetEntry()
			}
		}
		if vs == nil || len(vs.GetMembers()) != tt.members {
			t.Fatalf("port %d: value set %v, want %d members", tt.port, vs, tt.members)
		}
		if tt.members == 1 {
			if got := vs.GetMembers()[0].GetMatch()[0].GetExact().GetValue(); len(got) != 2 ||
				uint16(got[0])<<8|uint16(got[1]) != tt.port {
				t.Errorf("port %d: member %x", tt.port, got)
			}
		}
		// Against an empty value set (as a pipeline push leaves it), the
		// default port needs no write and another port one MODIFY.
		empty, err := AnnounceValueSet(info, 4792)
		if err != nil {
			t.Fatal(err)
		}
		actual := NewState()
		for _, e := range res.State.Entries() {
			if e.Kind != KindValueSet {
				_ = actual.Put(e.Entity)
			}
		}
		if err := actual.Put(empty); err != nil {
			t.Fatal(err)
		}
		if p := Diff(res.State, actual); len(p.Modify) != tt.members || p.Len() != tt.members {
			t.Errorf("port %d against an empty value set: plan %d/%d/%d", tt.port, len(p.Insert), len(p.Modify), len(p.Delete))
		}
	}
}

func TestDiff(t *testing.T) {
	info, cfg := testInfo(t), testConfig(t)
	base := Input{Config: cfg, Switch: cfg.Switch("leaf1"), Connections: []Connection{conn("10.1.1.5", 1000, 17)}}
	desired, err := Desired(info, base)
	if err != nil {
		t.Fatal(err)
	}
	full := desired.State
	// A copy of the desired state read back with padded bytestrings.
	padded := NewState()
	for _, e := range full.Entries() {
		c := proto.Clone(e.Entity).(*p4v1.Entity)
		if te := c.GetTableEntry(); te != nil {
			for _, p := range te.GetAction().GetAction().GetParams() {
				p.Value = append(make([]byte, 3), p.Value...)
			}
		}
		if err := padded.Put(c); err != nil {
			t.Fatal(err)
		}
	}
	// The switch holds a different Qth on port 1, one connection too many and
	// lacks the value set and the clone session.
	cfg2 := testConfig(t)
	cfg2.Switch("leaf1").Port(1).Settings.Qth = 120 * 1024
	extra := base
	extra.Config, extra.Switch = cfg2, cfg2.Switch("leaf1")
	extra.Connections = append(extra.Connections, conn("10.1.1.9", 1, 2))
	other, err := Desired(info, extra)
	if err != nil {
		t.Fatal(err)
	}
	drifted := NewState()
	for _, e := range other.State.Entries() {
		if e.Kind == KindValueSet || e.Kind == KindCloneSession {
			continue
		}
		_ = drifted.Put(e.Entity)
	}
	tests := []struct {
		name                   string
		actual                 *State
		insert, modify, delete int
	}{
		{"empty switch", NewState(), full.Len() - 1, 1, 0},
		{"in sync", full, 0, 0, 0},
		{"padded bytestrings", padded, 0, 0, 0},
		{"drifted", drifted, 1, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Diff(full, tt.actual)
			if len(p.Insert) != tt.insert || len(p.Modify) != tt.modify || len(p.Delete) != tt.delete {
				t.Fatalf("insert/modify/delete = %d/%d/%d, want %d/%d/%d", len(p.Insert), len(p.Modify),
					len(p.Delete), tt.insert, tt.modify, tt.delete)
			}
			ups := p.Updates()
			if len(ups) != p.Len() {
				t.Fatalf("%d updates for a plan of %d", len(ups), p.Len())
			}
			for i, u := range ups { // deletes, then modifies, then inserts
				want := p4v1.Update_INSERT
				if i < len(p.Delete) {
					want = p4v1.Update_DELETE
				} else if i < len(p.Delete)+len(p.Modify) {
					want = p4v1.Update_MODIFY
				}
				if u.Type != want {
					t.Fatalf("update %d is %v, want %v", i, u.Type, want)
				}
			}
		})
	}
}

func TestConnTable(t *testing.T) {
	tab := NewConnTable(2)
	now := time.Unix(1000, 0)
	a, b, c := conn("10.0.0.1", 1, 1), conn("10.0.0.2", 1, 1), conn("10.0.0.3", 1, 1)
	a.LastSeen, b.LastSeen, c.LastSeen = now, now.Add(30*time.Second), now
	ga, ch, err := tab.Upsert(a)
	if err != nil || !ch || ga.Index != 0 {
		t.Fatalf("first: %+v %v %v", ga, ch, err)
	}
	if _, ch, _ := tab.Upsert(a); ch {
		t.Error("refresh reported a change")
	}
	gb, _, _ := tab.Upsert(b)
	if gb.Index != 1 {
		t.Errorf("second index %d", gb.Index)
	}
	if _, _, err := tab.Upsert(c); !errors.Is(err, ErrTableFull) {
		t.Errorf("third: %v, want ErrTableFull", err)
	}
	// Idle time counts from the later of LastSeen and since: a controller
	// that took over 30 s ago expires nothing yet.
	if exp := tab.Expire(now.Add(61*time.Second), time.Minute, now.Add(30*time.Second)); len(exp) != 0 {
		t.Fatalf("expired %+v within a minute of the takeover", exp)
	}
	exp := tab.Expire(now.Add(61*time.Second), time.Minute, time.Time{})
	if len(exp) != 1 || exp[0].ConnKey != a.ConnKey {
		t.Fatalf("expired %+v", exp)
	}
	gc, _, err := tab.Upsert(c)
	if err != nil || gc.Index != 0 {
		t.Fatalf("reuse: %+v %v", gc, err)
	}
	if _, err := tab.Remove(a.ConnKey); !errors.Is(err, ErrNoConn) {
		t.Errorf("remove expired: %v", err)
	}
	bad := []Connection{
		func() Connection { x := conn("10.0.0.4", 1, 1<<24); return x }(),
		func() Connection { x := conn("10.0.0.4", 1, 1); x.WorkerRank = 32; return x }(),
		func() Connection { x := conn("10.0.0.4", 1, 1); x.Flags = 0x80; return x }(),
		func() Connection { x := conn("10.0.0.4", 1, 1); x.Flags = p4src.ConnFlagIncUplink; return x }(),
		func() Connection { x := conn("fd00::1", 1, 1); return x }(),
	}
	for i, x := range bad {
		if _, _, err := NewConnTable(0).Upsert(x); !errors.Is(err, ErrInvalidConn) {
			t.Errorf("bad %d: %v", i, err)
		}
	}
}

// TestConnTableQuotaCounts: the announced connections (with an ingress
// port, not static) are counted by ingress port and by sender through every
// change of the table; API connections are not.
func TestConnTableQuotaCounts(t *testing.T) {
	p1, p2 := PortRef{"s1", 1}, PortRef{"s1", 2}
	ann := func(ip string, sport uint16, in PortRef) Connection {
		c := conn(ip, sport, 1)
		c.Ingress = in
		return c
	}
	type counts struct{ p1, p2, s5, s6 int }
	s5, s6 := netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("10.0.0.6")
	tab := NewConnTable(0)
	steps := []struct {
		name string
		do   func() error
		want counts
	}{
		{"two on port 1 from .5", func() error {
			for sp := uint16(1); sp <= 2; sp++ {
				if _, _, err := tab.Upsert(ann("10.0.0.5", sp, p1)); err != nil {
					return err
				}
			}
			return nil
		}, counts{2, 0, 2, 0}},
		{"one on port 2 from .6", func() error { _, _, err := tab.Upsert(ann("10.0.0.6", 1, p2)); return err }, counts{2, 1, 2, 1}},
		{"refresh: no change", func() error { _, _, err := tab.Upsert(ann("10.0.0.5", 1, p1)); return err }, counts{2, 1, 2, 1}},
		{"refresh from another port moves it", func() error { _, _, err := tab.Upsert(ann("10.0.0.5", 1, p2)); return err }, counts{1, 2, 2, 1}},
		{"API connection: not counted", func() error {
			c := conn("10.0.0.5", 9, 1)
			c.Static = true
			_, _, err := tab.Upsert(c)
			return err
		}, counts{1, 2, 2, 1}},
		{"API call on an announced one makes it static", func() error {
			c := conn("10.0.0.6", 1, 1)
			c.Static = true
			_, _, err := tab.Upsert(c)
			return err
		}, counts{1, 1, 2, 0}},
		{"remove", func() error { _, err := tab.Remove(ann("10.0.0.5", 2, p1).ConnKey); return err }, counts{0, 1, 1, 0}},
		{"expire", func() error {
			if n := len(tab.Expire(time.Unix(1e6, 0), time.Second, time.Time{})); n != 1 {
				return fmt.Errorf("%d expired, want 1", n)
			}
			return nil
		}, counts{0, 0, 0, 0}},
		{"restore", func() error {
			c := ann("10.0.0.6", 7, p2)
			c.Index = 100
			return tab.Restore(c)
		}, counts{0, 1, 0, 1}},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		got := counts{tab.PortConns(p1), tab.PortConns(p2), tab.SenderConns(s5), tab.SenderConns(s6)}
		if got != st.want {
			t.Fatalf("%s: counts (port 1, port 2, .5, .6) %+v, want %+v", st.name, got, st.want)
		}
	}
}

func TestAssumeKind(t *testing.T) {
	info, cfg := testInfo(t), testConfig(t)
	res, err := Desired(info, Input{Config: cfg, Switch: cfg.Switch("leaf1")})
	if err != nil {
		t.Fatal(err)
	}
	// A server that cannot read digest configs: the read-back lacks them.
	readBack := NewState()
	for _, e := range res.State.Entries() {
		if e.Kind != KindDigestConfig {
			_ = readBack.Put(e.Entity)
		}
	}
	if p := Diff(res.State, readBack); len(p.Insert) != 2 {
		t.Fatalf("without assumption: %d inserts, want the 2 digests", len(p.Insert))
	}
	readBack.AssumeKind(KindDigestConfig, nil, res.State)
	if p := Diff(res.State, readBack); !p.Empty() {
		t.Errorf("assumed digests: plan %d", p.Len())
	}
}

// TestCNPSession: the clone session CNP_CLONE_SESSION clones whole packets to the
// CPU port on v1model targets; on a tofino switch it is the mirror session to the
// recirculation port, truncated to mirror_truncate bytes (docs/tofino.md).
func TestCNPSession(t *testing.T) {
	tofino := config.DefaultTofino(config.Tofino2)
	tofino.MirrorTruncate = 160
	for _, c := range []struct {
		name     string
		sw       *config.Switch
		port     uint32
		truncate int32
	}{
		{"bmv2", &config.Switch{Target: config.TargetBMv2}, uint32(p4src.CPUPort), 0},
		{"tofino2", &config.Switch{Target: config.TargetTofino, Tofino: &tofino}, p4src.Tofino2RecircPort, 160},
	} {
		e, err := CNPSession(c.sw)
		if err != nil {
			t.Fatal(err)
		}
		cs := e.GetPacketReplicationEngineEntry().GetCloneSessionEntry()
		if cs.GetSessionId() != p4src.CNPCloneSession || len(cs.GetReplicas()) != 1 ||
			cs.GetReplicas()[0].GetEgressPort() != c.port || cs.GetPacketLengthBytes() != c.truncate {
			t.Errorf("%s: %v", c.name, cs)
		}
	}
}

func TestModeValue(t *testing.T) {
	for _, tc := range []struct {
		mode config.Mode
		want uint8
		ok   bool
	}{
		{config.ModeECN, p4src.PortModeECN, true},
		{config.ModeFastCNP, p4src.PortModeFastcnp, true},
		{config.ModeINT, p4src.PortModeInt, true},
		{"dctcp", 0, false},
	} {
		got, err := ModeValue(tc.mode)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ModeValue(%s) = %d, %v; want %d", tc.mode, got, err, tc.want)
		}
	}
}

// TestDesiredWithTNAP4Info: with the TNA program's P4Infos (p4src/tna) fastcnpd
// computes the same desired state as with the v1model one, entity for entity, but
// the announcement value set, whose ID bf-p4c derives (docs/tofino.md "P4Info");
// that value set has no match field there and stays empty with the compiled-in port.
func TestDesiredWithTNAP4Info(t *testing.T) {
	cfg := testConfig(t)
	want, err := Desired(testInfo(t), Input{Config: cfg, Switch: cfg.Switch("leaf1")})
	if err != nil {
		t.Fatal(err)
	}
	for _, profile := range []string{"tofino", "tofino2"} {
		p, err := p4rt.LoadP4InfoFile(filepath.Join(p4src.SourceDir(), "tna", "fastcnp-"+profile+".p4info.txtpb"), p4rt.FormatAuto)
		if err != nil {
			t.Fatal(err)
		}
		// The files hold bf-p4c's PortMetadata extern, which fastcnpd has no use for.
		if len(p.Externs) != 1 || p.Externs[0].ExternTypeName != "PortMetadata" {
			t.Errorf("%s: externs %v, want bf-p4c's PortMetadata", profile, p.Externs)
		}
		info, err := p4rt.NewInfo(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Desired(info, Input{Config: cfg, Switch: cfg.Switch("leaf1")})
		if err != nil {
			t.Fatalf("%s: %v", profile, err)
		}
		if got.State.Len() != want.State.Len() {
			t.Errorf("%s: %d entities, v1model %d", profile, got.State.Len(), want.State.Len())
		}
		wantVS, err := testInfo(t).ValueSetID(ValueSetAnnounce)
		if err != nil {
			t.Fatal(err)
		}
		gotVS, err := info.ValueSetID(ValueSetAnnounce)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range want.State.Entries() {
			if e.Kind == KindValueSet {
				continue
			}
			key, entity := e.Key, e.Entity
			if e.Kind == KindDigestConfig {
				// bf-p4c's digest IDs are its own (docs/tofino.md "P4Info"): the
				// same digest, found by name, with the same configuration.
				name := testInfo(t).DigestName(entity.GetDigestEntry().GetDigestId())
				id, err := info.DigestID(name)
				if err != nil {
					t.Fatalf("%s: digest %q: %v", profile, name, err)
				}
				if id == entity.GetDigestEntry().GetDigestId() {
					t.Errorf("%s: digest %q has v1model's ID %#x, not bf-p4c's", profile, name, id)
				}
				entity = proto.Clone(entity).(*p4v1.Entity)
				entity.GetDigestEntry().DigestId = id
				key = fmt.Sprintf("d/%08x", id)
			}
			g, ok := got.State.Get(key)
			if !ok || !proto.Equal(g.Entity, entity) {
				t.Errorf("%s: %s differs: %v, v1model %v", profile, key, g.Entity, entity)
			}
		}
		var vs *p4v1.ValueSetEntry
		for _, e := range got.State.Entries() {
			if e.Kind == KindValueSet {
				vs = e.Entity.GetValueSetEntry()
			}
		}
		if vs == nil || vs.GetValueSetId() != gotVS || gotVS == wantVS || len(vs.GetMembers()) != 0 {
			t.Errorf("%s: value set %v (ID %#x, v1model %#x), want an empty one", profile, vs, gotVS, wantVS)
		}
	}
}
