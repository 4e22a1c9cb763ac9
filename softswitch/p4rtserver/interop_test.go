package p4rtserver_test

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"github.com/fastcnp/fastcnp/softswitch/p4rtserver"
	"github.com/sirupsen/logrus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestControllerClientInterop drives the server with the controller's own P4Runtime
// client and the committed P4Info: what the controller does against BMv2 works here.
func TestControllerClientInterop(t *testing.T) {
	log := logrus.New()
	log.SetOutput(io.Discard)
	fwd := make(chan uint16, 4)
	dp := p4rtserver.NewLocalDataPlane(pipeline.New(pipeline.Options{}), p4rtserver.LocalOptions{
		Forward: func(port uint16, _ []byte) { fwd <- port }})
	srv, err := p4rtserver.New(p4rtserver.Options{DeviceID: 3, DataPlane: dp, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()

	c, err := p4rt.Dial(ctx, lis.Addr().String(), 3, p4rt.WithElectionID(p4rt.Uint128{Low: 1}), p4rt.WithLogger(log))
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	defer c.Close()
	if !c.IsPrimary() {
		t.Fatalf("not primary: %+v", c.Status())
	}
	info, err := p4src.P4Info()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetPipeline(ctx, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, info, nil, 42); err != nil {
		t.Fatalf("SetPipeline: %v", err)
	}
	route := &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{
		TableId: p4src.TableIPv4Route,
		Match:   []*p4v1.FieldMatch{{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: []byte{10, 0, 0, 0}, PrefixLen: 8}}}},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{ActionId: p4src.ActionSetNexthop,
			Params: []*p4v1.Action_Param{{ParamId: 1, Value: []byte{5}}, {ParamId: 2, Value: []byte{1}}, {ParamId: 3, Value: []byte{2}}}}}},
	}}}
	if err := c.Write(ctx, []*p4v1.Update{{Type: p4v1.Update_INSERT, Entity: route}}); err != nil {
		t.Fatalf("Write: %v", err)
	}
	err = c.Write(ctx, []*p4v1.Update{{Type: p4v1.Update_INSERT, Entity: route}})
	if err == nil {
		t.Fatal("duplicate insert accepted")
	}
	got, err := c.Read(ctx, &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{}}})
	if err != nil || len(got) != 1 {
		t.Fatalf("Read: %v %v", got, err)
	}
	if err := c.SendPacketOut(ctx, &p4v1.PacketOut{Payload: make([]byte, 60),
		Metadata: []*p4v1.PacketMetadata{{MetadataId: 1, Value: []byte{9}}}}); err != nil {
		t.Fatalf("PacketOut: %v", err)
	}
	select {
	case port := <-fwd:
		if port != 9 {
			t.Fatalf("packet-out forwarded to %d", port)
		}
	case <-ctx.Done():
		t.Fatal("packet-out not forwarded")
	}
	cfg, err := c.GetPipeline(ctx, p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY)
	if err != nil || cfg.GetCookie().GetCookie() != 42 {
		t.Fatalf("GetPipeline: %v %v", cfg, err)
	}
	// A second controller with a lower election ID is a backup and cannot write.
	c2, err := p4rt.Dial(ctx, lis.Addr().String(), 3, p4rt.WithElectionID(p4rt.Uint128{Low: 0, High: 0}), p4rt.WithLogger(log))
	if err != nil {
		t.Fatalf("Dial backup: %v", err)
	}
	defer c2.Close()
	if c2.IsPrimary() || c2.Status().Code != codes.AlreadyExists {
		t.Fatalf("backup status %+v", c2.Status())
	}
	if err := c2.Write(ctx, []*p4v1.Update{{Type: p4v1.Update_DELETE, Entity: route}}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("backup write: %v", err)
	}
}
