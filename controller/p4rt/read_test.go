package p4rt_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/controller/p4rt"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"google.golang.org/protobuf/proto"
)

// TestReadMetersDefaultEntryDigestConfig reads back, and checks the content
// of, meter cells, direct meters, a table's default entry, digest
// configuration and entry metadata, with the wildcards selecting exactly
// what they should.
func TestReadMetersDefaultEntryDigestConfig(t *testing.T) {
	checkLeaks(t)
	in := testInfo(t)
	s := startServer(t)
	c := dial(t, s.Addr(), p4rt.WithInfo(in))
	must := func(e *p4v1.Entity, err error) *p4v1.Entity {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	write := func(ups []*p4v1.Update) {
		t.Helper()
		if err := c.Write(ctx(t), ups); err != nil {
			t.Fatal(err)
		}
	}

	// Meter cells 2 and 5 of port_meter.
	meterID, err := in.MeterID("port_meter")
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[int64]*p4v1.MeterConfig{
		2: {Cir: 1000, Cburst: 100, Pir: 2000, Pburst: 200},
		5: {Cir: 5000, Cburst: 500, Pir: 9000, Pburst: 900},
	}
	for _, i := range []int64{2, 5} {
		write(p4rt.Modify(&p4v1.Entity{Entity: &p4v1.Entity_MeterEntry{MeterEntry: &p4v1.MeterEntry{
			MeterId: meterID, Index: &p4v1.Index{Index: i}, Config: cfg[i]}}}))
	}
	// A direct meter on a v6_route entry.
	v6, err := in.TableEntry("v6_route").Match(p4rt.LPM("dst", 0, 1), p4rt.Exact("smac", 1)).
		Action("set_nexthop", p4rt.P("port", 1), p4rt.P("dmac", 1)).Build()
	if err != nil {
		t.Fatal(err)
	}
	dcfg := &p4v1.MeterConfig{Cir: 10, Cburst: 1, Pir: 20, Pburst: 2}
	write(p4rt.Modify(&p4v1.Entity{Entity: &p4v1.Entity_DirectMeterEntry{DirectMeterEntry: &p4v1.DirectMeterEntry{TableEntry: v6, Config: dcfg}}}))
	// A regular entry and the default entry of ipv4_route.
	write(p4rt.Insert(must(in.TableEntry("ipv4_route").Match(p4rt.LPM("dst_addr", 0x0a000000, 8)).Action("drop").Entity())))
	write(p4rt.Modify(must(in.TableEntry("ipv4_route").Default().Action("set_nexthop", p4rt.P("port", 3), p4rt.P("dmac", 0x0a)).Entity())))
	// Digest configuration.
	write(p4rt.Insert(must(in.DigestConfig("state_change_t", time.Millisecond, 16, time.Second))))

	read := func(f *p4v1.Entity) []*p4v1.Entity {
		t.Helper()
		got, err := c.Read(ctx(t), f)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	t.Run("meter cells", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			f    *p4v1.Entity
			want []int64 // indexes, in order
		}{
			{"all cells", must(in.ReadMeter("port_meter", p4rt.AllIndexes)), []int64{2, 5}},
			{"all meters", must(in.ReadMeter("", p4rt.AllIndexes)), []int64{2, 5}},
			{"one cell", must(in.ReadMeter("port_meter", 5)), []int64{5}},
			{"unwritten cell", must(in.ReadMeter("port_meter", 3)), nil},
		} {
			got := read(tc.f)
			if len(got) != len(tc.want) {
				t.Fatalf("%s: %d cells, want %d: %v", tc.name, len(got), len(tc.want), got)
			}
			for i, e := range got {
				me := e.GetMeterEntry()
				if me.GetMeterId() != meterID || me.GetIndex().GetIndex() != tc.want[i] || !proto.Equal(me.GetConfig(), cfg[tc.want[i]]) {
					t.Errorf("%s: cell %d = %v, want index %d config %v", tc.name, i, me, tc.want[i], cfg[tc.want[i]])
				}
			}
		}
	})

	t.Run("direct meters", func(t *testing.T) {
		for _, f := range []*p4v1.Entity{must(in.ReadDirectMeters("v6_route")), must(in.ReadDirectMeters(""))} {
			got := read(f)
			if len(got) != 1 {
				t.Fatalf("%d direct meters, want 1: %v", len(got), got)
			}
			dm := got[0].GetDirectMeterEntry()
			if !proto.Equal(dm.GetConfig(), dcfg) || dm.GetTableEntry().GetTableId() != v6.TableId || !proto.Equal(dm.GetTableEntry().GetMatch()[1], v6.Match[1]) {
				t.Errorf("direct meter %v, want config %v on the v6_route entry", dm, dcfg)
			}
		}
		if got := read(must(in.ReadDirectMeters("ipv4_route"))); len(got) != 0 {
			t.Errorf("ipv4_route has no direct meter, read %v", got)
		}
	})

	t.Run("default entry", func(t *testing.T) {
		got := read(must(in.ReadDefaultEntry("ipv4_route")))
		if len(got) != 1 {
			t.Fatalf("%d default entries, want 1: %v", len(got), got)
		}
		d, err := in.DecodeTableEntry(got[0].GetTableEntry())
		if err != nil {
			t.Fatal(err)
		}
		if !d.Default || d.Action != "Ing.set_nexthop" || !bytes.Equal(d.Params["port"], []byte{3}) || len(d.Matches) != 0 || d.Priority != 0 {
			t.Errorf("default entry %+v, want set_nexthop(port 3)", d)
		}
		// A table wildcard gives the regular entries only.
		des, err := c.ReadTableEntries(ctx(t), "ipv4_route")
		if err != nil || len(des) != 1 || des[0].Default || des[0].Action != "Ing.drop" {
			t.Errorf("table read %+v %v, want the one regular entry", des, err)
		}
		if got := read(must(in.ReadDefaultEntry("port_config"))); len(got) != 0 {
			t.Errorf("port_config default never written, read %v", got)
		}
	})

	t.Run("digest config", func(t *testing.T) {
		id, _ := in.DigestID("state_change_t")
		want := &p4v1.DigestEntry_Config{MaxTimeoutNs: int64(time.Millisecond), MaxListSize: 16, AckTimeoutNs: int64(time.Second)}
		for _, f := range []*p4v1.Entity{must(in.ReadDigestConfig("state_change_t")), must(in.ReadDigestConfig(""))} {
			got := read(f)
			if len(got) != 1 || got[0].GetDigestEntry().GetDigestId() != id || !proto.Equal(got[0].GetDigestEntry().GetConfig(), want) {
				t.Errorf("digest config %v, want %v for ID %d", got, want, id)
			}
		}
	})

	t.Run("entry metadata round trip", func(t *testing.T) {
		b := func(md string) *p4v1.Entity {
			return must(in.TableEntry("port_config").Match(p4rt.Exact("port", 9)).Action("NoAction").Metadata([]byte(md)).Entity())
		}
		write(p4rt.Insert(b("gen=1")))
		write(p4rt.Modify(b("gen=2"))) // metadata is not part of the key
		des, err := c.ReadTableEntries(ctx(t), "port_config")
		if err != nil || len(des) != 1 || string(des[0].Metadata) != "gen=2" {
			t.Fatalf("read %+v %v, want one entry with metadata gen=2", des, err)
		}
	})
}
