package p4rtserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/internal/testpki"
	"github.com/fastcnp/fastcnp/internal/tlsfiles"
	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"github.com/fastcnp/fastcnp/wire"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"
)

// ethFrame is a 60-byte Ethernet frame of an EtherType the parser accepts as is.
func ethFrame(tag byte) []byte {
	f := make([]byte, 60)
	copy(f, []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x88, 0xb5})
	f[14] = tag
	return f
}

func (h *harness) expectForward(t *testing.T, port uint16, frame []byte) {
	t.Helper()
	select {
	case f := <-h.fwd:
		if f.port != port || !bytes.Equal(f.frame, frame) {
			t.Fatalf("forwarded to %d %x, want %d %x", f.port, f.frame, port, frame)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nothing forwarded")
	}
}

// TestPacketOut: the packet_out metadata become the P4 header in front of the
// payload, and the pipeline forwards the payload to egress_port.
func TestPacketOut(t *testing.T) {
	h, sc := ready(t)
	p := ethFrame(1)
	sc.send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Packet{Packet: &p4v1.PacketOut{Payload: p,
		Metadata: []*p4v1.PacketMetadata{pmd(1, b(1, 0x2c)), pmd(2, b(0))}}}})
	h.expectForward(t, 300, p)
	// pad may be omitted; a non-canonical port value is accepted.
	p2 := ethFrame(2)
	sc.send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Packet{Packet: &p4v1.PacketOut{Payload: p2,
		Metadata: []*p4v1.PacketMetadata{pmd(1, b(0, 0, 7))}}}})
	h.expectForward(t, 7, p2)
	sc.expectNone(50 * time.Millisecond)
}

func TestPacketOutBeforePipeline(t *testing.T) {
	h := newHarness(t)
	sc := h.primary(t, 1)
	sc.send(packetOut(pmd(1, b(1))))
	sc.expectStreamError(codes.FailedPrecondition)
}

func TestPackHeader(t *testing.T) {
	got, err := packHeader([]int{9, 7}, []uint64{511, 5})
	if err != nil || !bytes.Equal(got, []byte{0xff, 0x85}) {
		t.Fatalf("packHeader = %x, %v", got, err)
	}
	// The layout is wire's packet_out header.
	var po wire.PacketOut
	if err := po.Decode(got); err != nil || po.EgressPort != 511 || po.Pad != 5 {
		t.Fatalf("wire decode %+v %v", po, err)
	}
	if _, err := packHeader([]int{9}, []uint64{1}); err == nil {
		t.Fatal("9-bit header accepted")
	}
}

func TestBytestrings(t *testing.T) {
	for _, c := range []struct {
		in    []byte
		width int
		want  uint64
		ok    bool
	}{
		{b(0x63), 8, 0x63, true},
		{b(0, 0x63), 16, 0x63, true},
		{b(0, 0, 0x63), 12, 0x63, true},
		{b(0x0f, 0xff), 12, 0xfff, true},
		{b(0), 1, 0, true},
		{b(1, 0x63), 8, 0, false},
		{nil, 8, 0, false},
		{b(0x10, 0x63), 12, 0, false},
		{b(1, 0, 0x63), 16, 0, false},
		{b(1, 0, 0, 0, 0, 0, 0, 0, 0), 64, 0, false},
	} {
		got, err := decodeBits(c.in, c.width, "x")
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("decodeBits(%x, %d) = %d, %v", c.in, c.width, got, err)
		}
	}
	for v, want := range map[uint64][]byte{0: b(0), 1: b(1), 0x100: b(1, 0), 1<<48 - 1: b(0xff, 0xff, 0xff, 0xff, 0xff, 0xff)} {
		if got := encodeBits(v); !bytes.Equal(got, want) {
			t.Errorf("encodeBits(%d) = %x, want %x", v, got, want)
		}
	}
}

// TestPacketIn: an announcement punted by the pipeline reaches the primary only, with
// its packet_in metadata.
func TestPacketIn(t *testing.T) {
	h, prim := ready(t)
	backup := h.openStream(t)
	backup.arbitrate(eid(5), "")
	backup.expectArb(codes.AlreadyExists, 10)
	h.mustWrite(t, mod(valueSetEnt(p4src.AnnounceUDPPortID, encodeBits(wire.DefaultAnnouncePort))))
	frame := make([]byte, 128)
	n, err := wire.BuildAnnouncement(frame, &wire.Envelope{SrcIP: wire.Addr4{10, 0, 0, 1}, DstIP: wire.Addr4{10, 0, 0, 2}, SrcPort: 1234},
		&wire.Announcement{Magic: wire.AnnouncementMagic, Version: wire.AnnouncementVersion, Type: 1})
	if err != nil {
		t.Fatalf("build announcement: %v", err)
	}
	frame = frame[:n]
	if err := h.dp.Receive(ctxT(t), append([]byte(nil), frame...), 3); err != nil {
		t.Fatalf("receive: %v", err)
	}
	m := prim.next().GetPacket()
	want := &p4v1.PacketIn{Payload: frame, Metadata: []*p4v1.PacketMetadata{pmd(1, b(3)), pmd(2, b(p4src.PuntReasonAnnouncement))}}
	if !proto.Equal(m, want) {
		t.Fatalf("packet-in %v, want %v", m, want)
	}
	backup.expectNone(100 * time.Millisecond)
}

// portConfig is set_port_config for a lossless port with priority 3.
func portConfig(port uint64) *p4v1.Entity {
	v := []uint64{12500, 1000, 10000, 1000, 2, 0, 0, 0, 10000, 125000, 1084, 1024, 5120, 1, 3}
	var ps []*p4v1.Action_Param
	for i, x := range v {
		ps = append(ps, param(uint32(i+1), encodeBits(x)))
	}
	return te(p4src.TablePortConfig, 0, act(p4src.ActionSetPortConfig, ps...), exact(1, encodeBits(port)))
}

func pfc(t *testing.T, quanta uint16) []byte {
	t.Helper()
	f := make([]byte, 64)
	var q [8]uint16
	q[3] = quanta
	n, err := wire.BuildPFC(f, wire.MAC{2, 0, 0, 0, 0, 9}, 1<<3, q)
	if err != nil {
		t.Fatalf("build PFC: %v", err)
	}
	return f[:n]
}

func digestFields(t *testing.T, d *p4v1.P4Data) []uint64 {
	t.Helper()
	var out []uint64
	for _, m := range d.GetStruct().GetMembers() {
		v, err := decodeBits(m.GetBitstring(), 64, "member")
		if err != nil {
			t.Fatalf("digest member: %v", err)
		}
		out = append(out, v)
	}
	return out
}

// TestDigests: PFC frames make port_state digests; lists go to the primary per the
// digest config (max_list_size batching, max_timeout), and acks are accepted.
func TestDigests(t *testing.T) {
	h, prim := ready(t)
	backup := h.openStream(t)
	backup.arbitrate(eid(5), "")
	backup.expectArb(codes.AlreadyExists, 10)
	h.mustWrite(t, ins(portConfig(4)), ins(digestEnt(p4src.DigestPortState, &p4v1.DigestEntry_Config{MaxListSize: 1, AckTimeoutNs: 1_000_000_000})))
	ctx := ctxT(t)
	if err := h.dp.Receive(ctx, pfc(t, 100), 4); err != nil {
		t.Fatalf("receive: %v", err)
	}
	m := prim.next().GetDigest()
	if m.GetDigestId() != p4src.DigestPortState || len(m.GetData()) != 1 || m.GetTimestamp() == 0 {
		t.Fatalf("digest list %v", m)
	}
	f := digestFields(t, m.GetData()[0])
	if len(f) != 5 || f[0] != 4 || f[1] != p4src.PortEventPause {
		t.Fatalf("PAUSE digest fields %v", f)
	}
	prim.send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_DigestAck{DigestAck: &p4v1.DigestListAck{DigestId: m.GetDigestId(), ListId: m.GetListId()}}})
	// An ack of a list already forgotten is not an error.
	prim.send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_DigestAck{DigestAck: &p4v1.DigestListAck{DigestId: m.GetDigestId(), ListId: 999}}})
	// Stream messages are handled in order: once this error is back, the acks were.
	prim.send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_DigestAck{DigestAck: &p4v1.DigestListAck{DigestId: 0x17000099}}})
	prim.expectStreamError(codes.InvalidArgument)
	if err := h.dp.Exec(ctx, func(p *pipeline.Pipeline) error { return p.AckDigestList(m.GetDigestId(), m.GetListId()) }); !errors.Is(err, pipeline.ErrNotFound) {
		t.Fatalf("the acked list is still outstanding in the pipeline: %v", err)
	}

	// Batching: two digests wait for each other under max_list_size 2.
	h.mustWrite(t, mod(digestEnt(p4src.DigestPortState, &p4v1.DigestEntry_Config{MaxListSize: 2, MaxTimeoutNs: 1 << 50})))
	if err := h.dp.Receive(ctx, pfc(t, 0), 4); err != nil { // resume
		t.Fatalf("receive: %v", err)
	}
	prim.expectNone(100 * time.Millisecond)
	if err := h.dp.Receive(ctx, pfc(t, 100), 4); err != nil { // pause again
		t.Fatalf("receive: %v", err)
	}
	m2 := prim.next().GetDigest()
	if len(m2.GetData()) != 2 || m2.GetListId() == m.GetListId() {
		t.Fatalf("batched list %v", m2)
	}
	if e := digestFields(t, m2.GetData()[0])[1]; e != p4src.PortEventResumeNotCongested {
		t.Fatalf("first batched event %d", e)
	}
	if e := digestFields(t, m2.GetData()[1])[1]; e != p4src.PortEventPause {
		t.Fatalf("second batched event %d", e)
	}
	backup.expectNone(50 * time.Millisecond)
	// Not acked: still outstanding (acking it here proves it).
	if err := h.dp.Exec(ctx, func(p *pipeline.Pipeline) error { return p.AckDigestList(m2.GetDigestId(), m2.GetListId()) }); err != nil {
		t.Fatalf("unacked list: %v", err)
	}

	// max_timeout: a lone digest goes out once its timeout passed (the test clock
	// advances 1 ms per reading).
	h.mustWrite(t, mod(digestEnt(p4src.DigestPortState, &p4v1.DigestEntry_Config{MaxListSize: 100, MaxTimeoutNs: 5_000_000})))
	if err := h.dp.Receive(ctx, pfc(t, 0), 4); err != nil {
		t.Fatalf("receive: %v", err)
	}
	if m3 := prim.next().GetDigest(); len(m3.GetData()) != 1 {
		t.Fatalf("timed-out list %v", m3)
	}
	// Without a config no digest is queued.
	h.mustWrite(t, del(digestEnt(p4src.DigestPortState, nil)))
	if err := h.dp.Receive(ctx, pfc(t, 100), 4); err != nil {
		t.Fatalf("receive: %v", err)
	}
	prim.expectNone(100 * time.Millisecond)
}

// TestTLS serves over TLS (without client certificates) on loopback.
func TestTLS(t *testing.T) {
	ca := testpki.New(t, "fabric-ca")
	cert, key := ca.Issue(t, "fastcnp-switch")
	srvTLS, err := tlsfiles.Server(cert, key, "")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{DeviceID: 1, DataPlane: NewLocalDataPlane(pipeline.New(pipeline.Options{}), LocalOptions{}), TLS: srvTLS})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
		RootCAs: ca.Pool(), ServerName: "fastcnp-switch", MinVersion: tls.VersionTLS12})))
	if err != nil {
		t.Fatal(err)
	}
	r, err := p4v1.NewP4RuntimeClient(conn).Capabilities(ctxT(t), &p4v1.CapabilitiesRequest{DeviceId: 1})
	if err != nil || r.GetP4RuntimeApiVersion() != APIVersion {
		t.Fatalf("Capabilities over TLS: %v %v", r, err)
	}
	conn.Close()
	srv.Stop()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if err := srv.Serve(context.Background(), lis); err == nil {
		t.Fatal("second Serve accepted")
	}
}

// TestStopWithOpenStreams: Stop ends open streams and Serve returns.
func TestStopWithOpenStreams(t *testing.T) {
	h, prim := ready(t)
	backup := h.openStream(t)
	backup.arbitrate(eid(5), "")
	backup.expectArb(codes.AlreadyExists, 10)
	h.srv.Stop()
	prim.expectEnd(codes.Unavailable)
	backup.expectEnd(codes.Unavailable)
}
