package p4rt_test

import (
	"bytes"
	"errors"
	"math/big"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/controller/p4rt"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
)

// eventually polls cond until it holds, failing after 10 s (a hang guard).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestPacketOutAndIn(t *testing.T) {
	checkLeaks(t)
	in := testInfo(t)
	s := startServer(t)
	c := dial(t, s.Addr(), p4rt.WithInfo(in))

	// Out: metadata encoded by name, width-checked.
	if err := c.PacketOut(ctx(t), []byte("hello"), p4rt.P("egress_port", 511), p4rt.P("pad", 0)); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-s.PacketOuts():
		if string(p.Payload) != "hello" || len(p.Metadata) != 2 ||
			p.Metadata[0].MetadataId != 1 || !bytes.Equal(p.Metadata[0].Value, []byte{0x01, 0xff}) ||
			p.Metadata[1].MetadataId != 2 || !bytes.Equal(p.Metadata[1].Value, []byte{0}) {
			t.Fatalf("server got %v", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no packet-out at the server")
	}
	for _, tc := range []struct {
		name string
		md   []p4rt.Param
		err  error
	}{
		{"too wide", []p4rt.Param{p4rt.P("egress_port", 512), p4rt.P("pad", 0)}, p4rt.ErrValueTooWide},
		{"unknown", []p4rt.Param{p4rt.P("egress_prt", 1), p4rt.P("pad", 0)}, p4rt.ErrUnknownName},
		{"missing", []p4rt.Param{p4rt.P("egress_port", 1)}, p4rt.ErrInvalidValue},
		{"none", nil, p4rt.ErrInvalidValue},
	} {
		if err := c.PacketOut(ctx(t), []byte{1}, tc.md...); !errors.Is(err, tc.err) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.err)
		}
	}

	// In: metadata decoded by name; padded server values are accepted.
	err := s.SendPacketIn(&p4v1.PacketIn{Payload: []byte("world"), Metadata: []*p4v1.PacketMetadata{
		{MetadataId: 1, Value: []byte{0x00, 0x07}}, {MetadataId: 2, Value: []byte{0x7f}}}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-c.Packets():
		port, err := p.Uint("ingress_port")
		if err != nil || port != 7 || string(p.Payload) != "world" {
			t.Fatalf("packet-in %+v port %d %v", p, port, err)
		}
		if r, _ := p.Uint("reason"); r != 127 {
			t.Errorf("reason %d", r)
		}
		if _, err := p.Uint("nope"); !errors.Is(err, p4rt.ErrUnknownName) {
			t.Errorf("unknown metadata: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no packet-in")
	}

	// Unknown metadata ID: delivered raw, counted as a decode error.
	if err := s.SendPacketIn(&p4v1.PacketIn{Payload: []byte{1}, Metadata: []*p4v1.PacketMetadata{{MetadataId: 9, Value: []byte{1}}}}); err != nil {
		t.Fatal(err)
	}
	p := <-c.Packets()
	if p.Raw == nil || c.Stats().DecodeErrors != 1 {
		t.Errorf("bad metadata: %+v, stats %+v", p, c.Stats())
	}
}

func stateChange(port, state, at uint64) *p4v1.P4Data {
	bs := func(v uint64) *p4v1.P4Data {
		b, _ := p4rt.EncodeUint(v, 64)
		return &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: b}}
	}
	return &p4v1.P4Data{Data: &p4v1.P4Data_Struct{Struct: &p4v1.P4StructLike{Members: []*p4v1.P4Data{bs(port), bs(state), bs(at)}}}}
}

func TestDigestDecodeAndAutoAck(t *testing.T) {
	checkLeaks(t)
	in := testInfo(t)
	s := startServer(t)
	c := dial(t, s.Addr(), p4rt.WithInfo(in))
	id, _ := in.DigestID("state_change_t")
	if err := s.SendDigest(&p4v1.DigestList{DigestId: id, ListId: 77, Timestamp: 5,
		Data: []*p4v1.P4Data{stateChange(3, 2, 1<<40), stateChange(511, 0, 0)}}); err != nil {
		t.Fatal(err)
	}
	var d *p4rt.DigestList
	select {
	case d = <-c.Digests():
	case <-time.After(10 * time.Second):
		t.Fatal("no digest")
	}
	if d.Name != "state_change_t" || d.ListID != 77 || len(d.Data) != 2 {
		t.Fatalf("digest %+v", d)
	}
	m, err := d.Struct(0)
	if err != nil || !bytes.Equal(m["port"], []byte{3}) || !bytes.Equal(m["state"], []byte{2}) || len(m["at"]) != 6 {
		t.Fatalf("struct 0: %v %v", m, err)
	}
	var v struct {
		Port  uint16
		State uint8 `p4:"state"`
		At    *big.Int
	}
	if err := d.Unmarshal(1, &v); err != nil || v.Port != 511 || v.State != 0 || v.At.Sign() != 0 {
		t.Fatalf("unmarshal: %+v %v", v, err)
	}
	var small struct{ Port uint8 }
	if err := d.Unmarshal(1, &small); !errors.Is(err, p4rt.ErrValueTooWide) {
		t.Errorf("511 into uint8: %v", err)
	}
	var wrong struct{ Nope uint8 }
	if err := d.Unmarshal(0, &wrong); !errors.Is(err, p4rt.ErrUnknownName) {
		t.Errorf("unknown member: %v", err)
	}
	if _, err := d.Struct(2); !errors.Is(err, p4rt.ErrInvalidValue) {
		t.Errorf("out of range: %v", err)
	}
	select {
	case a := <-s.DigestAcks():
		if a.DigestId != id || a.ListId != 77 {
			t.Fatalf("ack %v", a)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no automatic ack")
	}
}

func TestDigestManualAck(t *testing.T) {
	checkLeaks(t)
	in := testInfo(t)
	s := startServer(t)
	c := dial(t, s.Addr(), p4rt.WithInfo(in), p4rt.WithAutoDigestAck(false))
	id, _ := in.DigestID("state_change_t")
	if err := s.SendDigest(&p4v1.DigestList{DigestId: id, ListId: 1, Data: []*p4v1.P4Data{stateChange(1, 1, 1)}}); err != nil {
		t.Fatal(err)
	}
	d := <-c.Digests()
	// A packet-out round trip on the same stream gives an automatic ack,
	// were there one, time to reach the server first.
	if err := c.PacketOut(ctx(t), []byte{1}, p4rt.P("egress_port", 1), p4rt.P("pad", 0)); err != nil {
		t.Fatal(err)
	}
	<-s.PacketOuts()
	if n := len(s.DigestAcks()); n != 0 {
		t.Fatalf("%d acks before AckDigest with auto-ack off", n)
	}
	if err := c.AckDigest(ctx(t), d); err != nil {
		t.Fatal(err)
	}
	a := <-s.DigestAcks()
	if a.ListId != 1 {
		t.Fatalf("ack %v", a)
	}
	select {
	case a := <-s.DigestAcks():
		t.Fatalf("unexpected second ack %v", a)
	default:
	}
}

func TestBufferOverflowCounted(t *testing.T) {
	checkLeaks(t)
	in := testInfo(t)
	s := startServer(t)
	c := dial(t, s.Addr(), p4rt.WithInfo(in), p4rt.WithBuffers(64, 2, 3, 1))
	id, _ := in.DigestID("state_change_t")
	for i := 0; i < 10; i++ {
		if err := s.SendPacketIn(&p4v1.PacketIn{Payload: []byte{byte(i)}}); err != nil {
			t.Fatal(err)
		}
		if err := s.SendDigest(&p4v1.DigestList{DigestId: id, ListId: uint64(i), Data: []*p4v1.P4Data{stateChange(1, 1, 1)}}); err != nil {
			t.Fatal(err)
		}
		if err := s.SendIdleTimeout(&p4v1.IdleTimeoutNotification{Timestamp: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "all messages received", func() bool {
		st := c.Stats()
		return st.PacketsReceived == 10 && st.DigestsReceived == 10 && st.IdleReceived == 10
	})
	st := c.Stats()
	if st.PacketsDropped != 8 || st.DigestsDropped != 7 || st.IdleDropped != 9 {
		t.Fatalf("drops %+v, want 8 packets, 7 digests, 9 idle", st)
	}
	// The oldest ones were kept; the receiver kept going (nothing blocked).
	if p := <-c.Packets(); p.Payload[0] != 0 {
		t.Errorf("first kept packet %d", p.Payload[0])
	}
	if n := <-c.IdleTimeouts(); n.Timestamp != 0 {
		t.Errorf("kept idle %d", n.Timestamp)
	}
	// Dropped digests were still acked, so the switch does not stall.
	eventually(t, "10 acks", func() bool { return len(s.DigestAcks()) == 10 })
}

// TestPacketDropHandler: every packet-in dropped for a full Packets
// buffer reaches the drop handler, with the running total, in order.
func TestPacketDropHandler(t *testing.T) {
	checkLeaks(t)
	s := startServer(t)
	var mu sync.Mutex
	var payloads []byte
	var totals []uint64
	c := dial(t, s.Addr(), p4rt.WithBuffers(64, 2, 8, 8), p4rt.WithPacketDropHandler(func(p *p4rt.PacketIn, n uint64) {
		mu.Lock()
		defer mu.Unlock()
		payloads = append(payloads, p.Payload[0])
		totals = append(totals, n)
	}))
	for i := 0; i < 10; i++ {
		if err := s.SendPacketIn(&p4v1.PacketIn{Payload: []byte{byte(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "all packet-ins received", func() bool { return c.Stats().PacketsReceived == 10 })
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(payloads, []byte{2, 3, 4, 5, 6, 7, 8, 9}) || !slices.Equal(totals, []uint64{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatalf("dropped payloads %v totals %v, want 2..9 and 1..8", payloads, totals)
	}
	if st := c.Stats(); st.PacketsDropped != 8 {
		t.Errorf("stats %+v, want 8 packets dropped", st)
	}
}

func TestStreamErrorEvent(t *testing.T) {
	checkLeaks(t)
	s := startServer(t)
	c := dial(t, s.Addr())
	waitEvent(t, c, p4rt.EventArbitration)
	if err := s.SendStreamError(&p4v1.StreamError{CanonicalCode: 3, Message: "bad packet-out"}); err != nil {
		t.Fatal(err)
	}
	e := waitEvent(t, c, p4rt.EventStreamError)
	if e.StreamError.GetMessage() != "bad packet-out" {
		t.Fatalf("event %+v", e)
	}
}

func TestEventOverflowCounted(t *testing.T) {
	checkLeaks(t)
	s := startServer(t)
	c := dial(t, s.Addr(), p4rt.WithBuffers(1, 1, 1, 1)) // the arbitration event fills it
	for i := 0; i < 5; i++ {
		if err := s.SendStreamError(&p4v1.StreamError{Message: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "5 events dropped", func() bool { return c.Stats().EventsDropped == 5 })
}

// TestDigestDropsSurfaced: a DigestList dropped on a full Digests buffer is
// counted, acknowledged all the same, and reported: one EventDigestsDropped
// and one warning per run of drops, and a warning with the run's count when
// delivery resumes.
func TestDigestDropsSurfaced(t *testing.T) {
	checkLeaks(t)
	in := testInfo(t)
	s := startServer(t)
	logger, hook := test.NewNullLogger()
	c := dial(t, s.Addr(), p4rt.WithInfo(in), p4rt.WithBuffers(64, 8, 1, 8), p4rt.WithLogger(logger))
	waitEvent(t, c, p4rt.EventArbitration)
	id, _ := in.DigestID("state_change_t")
	send := func(list uint64) {
		t.Helper()
		if err := s.SendDigest(&p4v1.DigestList{DigestId: id, ListId: list, Data: []*p4v1.P4Data{stateChange(1, 1, 1)}}); err != nil {
			t.Fatal(err)
		}
	}
	// barrier returns the events up to a stream error sent after the
	// digests: the receiver handles messages in order, so every event the
	// digests caused is in the list.
	barrier := func() []p4rt.Event {
		t.Helper()
		if err := s.SendStreamError(&p4v1.StreamError{Message: "barrier"}); err != nil {
			t.Fatal(err)
		}
		var evs []p4rt.Event
		for {
			e := waitEvent(t, c, 0) // any type
			if e.Type == p4rt.EventStreamError {
				return evs
			}
			evs = append(evs, e)
		}
	}
	dropEvents := func(evs []p4rt.Event) []p4rt.Event {
		var out []p4rt.Event
		for _, e := range evs {
			if e.Type == p4rt.EventDigestsDropped {
				out = append(out, e)
			}
		}
		return out
	}

	// List 1 fills the buffer; 2..5 are dropped in one run: one event, for list 2.
	for l := uint64(1); l <= 5; l++ {
		send(l)
	}
	evs := dropEvents(barrier())
	if len(evs) != 1 || evs[0].Digest == nil || evs[0].Digest.ListID != 2 || evs[0].Digest.Name != "state_change_t" || evs[0].Dropped != 1 {
		t.Fatalf("drop events %+v, want one for list 2 with 1 dropped so far", evs)
	}
	if st := c.Stats(); st.DigestsDropped != 4 {
		t.Fatalf("DigestsDropped %d, want 4", st.DigestsDropped)
	}
	if d := <-c.Digests(); d.ListID != 1 {
		t.Fatalf("kept list %d, want 1", d.ListID)
	}
	// List 6 is delivered (ends the run); 7 is dropped: a new run, a new event.
	send(6)
	send(7)
	evs = dropEvents(barrier())
	if len(evs) != 1 || evs[0].Digest == nil || evs[0].Digest.ListID != 7 || evs[0].Dropped != 5 {
		t.Fatalf("drop events %+v, want one for list 7 with 5 dropped in all", evs)
	}
	// Every list was acknowledged, dropped or not: the switch does not stall.
	eventually(t, "7 acks", func() bool { return len(s.DigestAcks()) == 7 })

	var started, resumed int
	for _, e := range hook.AllEntries() {
		switch {
		case e.Level == logrus.WarnLevel && strings.Contains(e.Message, "digest buffer full"):
			started++
		case e.Level == logrus.WarnLevel && strings.Contains(e.Message, "digest delivery resumed"):
			resumed++
			if e.Data["dropped"] != uint64(4) {
				t.Errorf("resume warning %v, want dropped=4", e.Data)
			}
		}
	}
	if started != 2 || resumed != 1 {
		t.Errorf("%d drop warnings and %d resume warnings, want 2 and 1", started, resumed)
	}
}
