package p4rtserver

import (
	"strings"
	"testing"

	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

func (h *harness) getConfig(t *testing.T, rt p4v1.GetForwardingPipelineConfigRequest_ResponseType) (*p4v1.ForwardingPipelineConfig, error) {
	t.Helper()
	r, err := h.cli.GetForwardingPipelineConfig(ctxT(t), &p4v1.GetForwardingPipelineConfigRequest{DeviceId: testDevice, ResponseType: rt})
	return r.GetConfig(), err
}

// commitSaved sends COMMIT (no config: the spec wants none).
func (h *harness) commitSaved(t *testing.T, low uint64) error {
	t.Helper()
	_, err := h.cli.SetForwardingPipelineConfig(ctxT(t), &p4v1.SetForwardingPipelineConfigRequest{
		DeviceId: testDevice, ElectionId: eid(low), Action: p4v1.SetForwardingPipelineConfigRequest_COMMIT})
	return err
}

// TestNoPipelineYet: before a commit, Write and Read answer FAILED_PRECONDITION, Get
// answers with the config unset, COMMIT without a save NOT_FOUND.
func TestNoPipelineYet(t *testing.T) {
	h := newHarness(t)
	h.primary(t, 10)
	if err := h.write(t, 10, ins(route(b(10, 0, 0, 0), 8, b(1)))); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("write: %v", err)
	}
	if _, err := h.read(t, te(0, 0, nil)); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("read: %v", err)
	}
	if cfg, err := h.getConfig(t, p4v1.GetForwardingPipelineConfigRequest_ALL); err != nil || cfg != nil {
		t.Fatalf("get: %v %v, want OK with the config unset", cfg, err)
	}
	if err := h.commitSaved(t, 10); status.Code(err) != codes.NotFound {
		t.Fatalf("COMMIT without save: %v", err)
	}
}

// TestPipelineActions: VERIFY changes nothing, VERIFY_AND_SAVE + COMMIT commits,
// VERIFY_AND_COMMIT clears the forwarding state, RECONCILE_AND_COMMIT keeps it; the
// cookie and the response types of Get.
func TestPipelineActions(t *testing.T) {
	h := newHarness(t)
	h.primary(t, 10)
	if err := h.setPipeline(t, 10, p4v1.SetForwardingPipelineConfigRequest_VERIFY, 1); err != nil {
		t.Fatalf("VERIFY: %v", err)
	}
	if err := h.setPipeline(t, 10, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_SAVE, 2); err != nil {
		t.Fatalf("VERIFY_AND_SAVE: %v", err)
	}
	if cfg, err := h.getConfig(t, p4v1.GetForwardingPipelineConfigRequest_ALL); err != nil || cfg != nil {
		t.Fatalf("saved config must not be committed: %v %v", cfg, err)
	}
	if err := h.commitSaved(t, 10); err != nil {
		t.Fatalf("COMMIT: %v", err)
	}
	empty := h.snapshot(t)
	cfg, err := h.getConfig(t, p4v1.GetForwardingPipelineConfigRequest_ALL)
	if err != nil || cfg.GetCookie().GetCookie() != 2 || string(cfg.GetP4DeviceConfig()) != "dev" ||
		!proto.Equal(cfg.GetP4Info(), P4InfoFromSchema(pipeline.ProgramSchema())) {
		t.Fatalf("Get ALL: %v %v", cfg, err)
	}
	for _, c := range []struct {
		rt             p4v1.GetForwardingPipelineConfigRequest_ResponseType
		p4info, devcfg bool
	}{
		{p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY, false, false},
		{p4v1.GetForwardingPipelineConfigRequest_P4INFO_AND_COOKIE, true, false},
		{p4v1.GetForwardingPipelineConfigRequest_DEVICE_CONFIG_AND_COOKIE, false, true},
	} {
		cfg, err := h.getConfig(t, c.rt)
		if err != nil || cfg.GetCookie().GetCookie() != 2 || (cfg.GetP4Info() != nil) != c.p4info || (cfg.GetP4DeviceConfig() != nil) != c.devcfg {
			t.Fatalf("Get %s: %v %v", c.rt, cfg, err)
		}
	}

	// State, then RECONCILE_AND_COMMIT keeps it and stores the new cookie.
	baseline(t, h)
	before := h.snapshot(t)
	if err := h.setPipeline(t, 10, p4v1.SetForwardingPipelineConfigRequest_RECONCILE_AND_COMMIT, 3); err != nil {
		t.Fatalf("RECONCILE_AND_COMMIT: %v", err)
	}
	if !sameSnapshot(before, h.snapshot(t)) {
		t.Fatal("RECONCILE_AND_COMMIT changed the state")
	}
	if cfg, _ := h.getConfig(t, p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY); cfg.GetCookie().GetCookie() != 3 {
		t.Fatalf("cookie after reconcile: %v", cfg)
	}

	// VERIFY_AND_COMMIT clears it all.
	if err := h.setPipeline(t, 10, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, 4); err != nil {
		t.Fatalf("VERIFY_AND_COMMIT: %v", err)
	}
	if !sameSnapshot(empty, h.snapshot(t)) {
		t.Fatal("VERIFY_AND_COMMIT left state behind")
	}
	if ents := h.mustRead(t, te(0, 0, nil)); len(ents) != 0 {
		t.Fatalf("entries after commit: %v", ents)
	}
}

// TestPipelineReject: another program is refused with INVALID_ARGUMENT naming the
// first mismatch, and the committed config and state stay.
func TestPipelineReject(t *testing.T) {
	h, _ := ready(t)
	h.mustWrite(t, ins(route(b(10, 0, 0, 0), 8, b(1))))
	before := h.snapshot(t)
	other := proto.Clone(P4InfoFromSchema(pipeline.ProgramSchema())).(*p4configv1.P4Info)
	for _, tb := range other.Tables {
		if tb.GetPreamble().GetId() == p4src.TablePortConfig {
			tb.MatchFields[0].Bitwidth = 16
		}
	}
	for _, a := range []p4v1.SetForwardingPipelineConfigRequest_Action{
		p4v1.SetForwardingPipelineConfigRequest_VERIFY, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_SAVE,
		p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, p4v1.SetForwardingPipelineConfigRequest_RECONCILE_AND_COMMIT,
	} {
		_, err := h.cli.SetForwardingPipelineConfig(ctxT(t), &p4v1.SetForwardingPipelineConfigRequest{
			DeviceId: testDevice, ElectionId: eid(10), Action: a,
			Config: &p4v1.ForwardingPipelineConfig{P4Info: other, Cookie: &p4v1.ForwardingPipelineConfig_Cookie{Cookie: 9}}})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "FastcnpIngress.port_config") {
			t.Fatalf("%s of another program: %v", a, err)
		}
	}
	if !sameSnapshot(before, h.snapshot(t)) {
		t.Fatal("a refused config changed the state")
	}
	if cfg, _ := h.getConfig(t, p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY); cfg.GetCookie().GetCookie() != 1 {
		t.Fatalf("cookie after refusals: %v", cfg)
	}
	// A refused VERIFY_AND_SAVE saved nothing: COMMIT has nothing to commit.
	if err := h.commitSaved(t, 10); status.Code(err) != codes.NotFound {
		t.Fatalf("COMMIT after a refused save: %v", err)
	}
}

func TestCapabilities(t *testing.T) {
	h := newHarness(t)
	r, err := h.cli.Capabilities(ctxT(t), &p4v1.CapabilitiesRequest{})
	if err != nil || r.GetP4RuntimeApiVersion() != APIVersion {
		t.Fatalf("Capabilities: %v %v", r, err)
	}
	if _, err := h.cli.Capabilities(ctxT(t), &p4v1.CapabilitiesRequest{DeviceId: 99}); status.Code(err) != codes.NotFound {
		t.Fatalf("Capabilities other device: %v", err)
	}
}
