package p4rtserver

import (
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/model/pipeline"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"
)

// TestArbitrationThreeClientsAndFailover walks the spec's election: the highest
// election ID is primary, everybody hears of a change of primary, only the sender
// of an update that changes nothing hears back, and when the primary leaves there is
// no primary until a client arbitrates with an ID at least the highest seen.
func TestArbitrationThreeClientsAndFailover(t *testing.T) {
	h := newHarness(t)
	c1 := h.openStream(t)
	c1.arbitrate(eid(10), "")
	c1.expectArb(codes.OK, 10)

	c2 := h.openStream(t)
	c2.arbitrate(eid(5), "")
	c2.expectArb(codes.AlreadyExists, 10)
	c1.expectNone(100 * time.Millisecond) // no change of primary: only the sender hears

	c3 := h.openStream(t)
	c3.arbitrate(eid(20), "")
	c3.expectArb(codes.OK, 20)
	c1.expectArb(codes.AlreadyExists, 20)
	c2.expectArb(codes.AlreadyExists, 20)

	// Only the primary writes.
	if err := h.setPipeline(t, 10, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, 1); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("backup set pipeline: %v, want PERMISSION_DENIED", err)
	}
	if err := h.setPipeline(t, 20, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, 1); err != nil {
		t.Fatalf("primary set pipeline: %v", err)
	}
	r := route(b(10, 0, 0, 0), 8, b(1))
	if err := h.write(t, 10, ins(r)); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("backup write: %v, want PERMISSION_DENIED", err)
	}
	if err := h.write(t, 20, ins(r)); err != nil {
		t.Fatalf("primary write: %v", err)
	}

	// The primary leaves: the role has no primary (the backups' IDs are below the
	// highest seen, 20), everybody is told NOT_FOUND with the highest ID.
	c3.close()
	c1.expectArb(codes.NotFound, 20)
	c2.expectArb(codes.NotFound, 20)
	if err := h.write(t, 20, del(r)); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("write with the old primary's ID: %v, want PERMISSION_DENIED", err)
	}
	if err := h.write(t, 10, del(r)); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("backup write without a primary: %v, want PERMISSION_DENIED", err)
	}

	// A backup raises its election ID above the highest seen: it takes over.
	c2.arbitrate(eid(30), "")
	c2.expectArb(codes.OK, 30)
	c1.expectArb(codes.AlreadyExists, 30)
	if err := h.write(t, 30, del(r)); err != nil {
		t.Fatalf("new primary write: %v", err)
	}

	// The last primary leaves; the remaining client stays a backup.
	c2.close()
	c1.expectArb(codes.NotFound, 30)
}

func TestArbitrationTwoClientsSecondHigher(t *testing.T) {
	h := newHarness(t)
	c1 := h.openStream(t)
	c1.arbitrate(&p4v1.Uint128{High: 1, Low: 0}, "")
	c1.expectArb(codes.OK, 0)
	c2 := h.openStream(t)
	c2.arbitrate(&p4v1.Uint128{High: 0, Low: 99}, "")
	m := c2.next().GetArbitration()
	if codes.Code(m.GetStatus().GetCode()) != codes.AlreadyExists || m.GetElectionId().GetHigh() != 1 {
		t.Fatalf("128-bit comparison: got %v", m)
	}
}

// TestArbitrationNoElectionID: a client without an election ID is a backup forever;
// with no primary the status is NOT_FOUND.
func TestArbitrationNoElectionID(t *testing.T) {
	h := newHarness(t)
	c1 := h.openStream(t)
	c1.arbitrate(nil, "")
	c1.expectArb(codes.NotFound, 0)
	c2 := h.openStream(t)
	c2.arbitrate(eid(3), "")
	c2.expectArb(codes.OK, 3)
	c1.expectArb(codes.AlreadyExists, 3)
	c2.close()
	c1.expectArb(codes.NotFound, 3)
}

// TestArbitrationRoles: roles are elected separately and a named role has full access.
func TestArbitrationRoles(t *testing.T) {
	h := newHarness(t)
	def := h.primary(t, 5)
	named := h.openStream(t)
	named.arbitrate(eid(5), "telemetry") // the same ID in another role is fine
	m := named.next().GetArbitration()
	if codes.Code(m.GetStatus().GetCode()) != codes.OK || m.GetRole().GetName() != "telemetry" {
		t.Fatalf("named role: %v", m)
	}
	def.expectNone(100 * time.Millisecond)
	if err := h.setPipeline(t, 5, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, 1); err != nil {
		t.Fatalf("set pipeline: %v", err)
	}
	_, err := h.cli.Write(ctxT(t), &p4v1.WriteRequest{DeviceId: testDevice, Role: "telemetry", ElectionId: eid(5),
		Updates: []*p4v1.Update{ins(route(b(10, 0, 0, 0), 8, b(1)))}})
	if err != nil {
		t.Fatalf("named role write: %v", err)
	}
	_, err = h.cli.Write(ctxT(t), &p4v1.WriteRequest{DeviceId: testDevice, Role: "nobody", ElectionId: eid(5),
		Updates: []*p4v1.Update{ins(route(b(11, 0, 0, 0), 8, b(1)))}})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("write for a role no controller arbitrated for: %v, want NOT_FOUND", err)
	}
}

// TestArbitrationRefusals: every refused arbitration ends that stream with its code
// and leaves the others (and the server) working.
func TestArbitrationRefusals(t *testing.T) {
	h := newHarness(t)
	p := h.primary(t, 10)
	roleCfg := &p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{Arbitration: &p4v1.MasterArbitrationUpdate{
		DeviceId: testDevice, ElectionId: eid(50), Role: &p4v1.Role{Name: "r", Config: &anypb.Any{TypeUrl: "x/y"}}}}}
	cases := []struct {
		name string
		msgs []*p4v1.StreamMessageRequest
		want codes.Code
	}{
		{"first message not arbitration", []*p4v1.StreamMessageRequest{{Update: &p4v1.StreamMessageRequest_Packet{Packet: &p4v1.PacketOut{}}}}, codes.FailedPrecondition},
		{"wrong device", []*p4v1.StreamMessageRequest{arbReq(testDevice+1, eid(11), "")}, codes.NotFound},
		{"device zero", []*p4v1.StreamMessageRequest{arbReq(0, eid(11), "")}, codes.NotFound},
		{"duplicate election ID", []*p4v1.StreamMessageRequest{arbReq(testDevice, eid(10), "")}, codes.InvalidArgument},
		{"role config", []*p4v1.StreamMessageRequest{roleCfg}, codes.InvalidArgument},
		{"device changed", []*p4v1.StreamMessageRequest{arbReq(testDevice, eid(3), ""), arbReq(testDevice+1, eid(3), "")}, codes.FailedPrecondition},
		{"role changed", []*p4v1.StreamMessageRequest{arbReq(testDevice, eid(3), ""), arbReq(testDevice, eid(3), "other")}, codes.FailedPrecondition},
		{"election ID taken later", []*p4v1.StreamMessageRequest{arbReq(testDevice, eid(3), ""), arbReq(testDevice, eid(10), "")}, codes.InvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sc := h.openStream(t)
			for _, m := range c.msgs {
				sc.send(m)
			}
			sc.expectEnd(c.want)
			// The primary is still primary and the server serves.
			if err := h.setPipeline(t, 10, p4v1.SetForwardingPipelineConfigRequest_VERIFY, 1); err != nil {
				t.Fatalf("primary after refusal: %v", err)
			}
		})
	}
	p.expectNone(50 * time.Millisecond)
}

func TestMaxStreams(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MaxStreams = 2 })
	h.primary(t, 1)
	h.primary(t, 2)
	sc := h.openStream(t)
	sc.arbitrate(eid(3), "")
	sc.expectEnd(codes.ResourceExhausted)
}

func TestNewOptions(t *testing.T) {
	if _, err := New(Options{DataPlane: NewLocalDataPlane(pipeline.New(pipeline.Options{}), LocalOptions{})}); err == nil {
		t.Fatal("device ID 0 accepted")
	}
	if _, err := New(Options{DeviceID: 1}); err == nil {
		t.Fatal("nil data plane accepted")
	}
}
