package p4rtserver

import (
	"testing"

	"github.com/fastcnp/fastcnp/model/pipeline"
	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Conformance with the P4Runtime specification v1.5.0, sections
// "SetForwardingPipelineConfig RPC" and "GetForwardingPipelineConfig RPC".

// TestSpecSetPipelineActions checks every action against the spec's list:
//
//   - VERIFY: "verifies that the target can realize the given config. The forwarding
//     state in the target is not modified. Returns an INVALID_ARGUMENT error if config
//     is not provided or if the provided config cannot be realized."
//   - VERIFY_AND_SAVE: "saves the config if the P4Runtime target can realize it. The
//     forwarding state in the target is not modified. [...] Returns an
//     INVALID_ARGUMENT error if the forwarding config is not provided or if the
//     provided config cannot be realized."
//   - VERIFY_AND_COMMIT: "saves and realizes the given config [...]. The forwarding
//     state in the target is cleared. Returns an INVALID_ARGUMENT error if the
//     forwarding config is not provided or if the provided config cannot be
//     realized."
//   - COMMIT: "realizes the last saved, but not yet committed, config. [...] Config
//     should not be provided for this action type. Returns a NOT_FOUND error if no
//     saved config is found, i.e. if no VERIFY_AND_SAVE action preceded this one.
//     Returns an INVALID_ARGUMENT error if a config is provided with this message."
//   - RECONCILE_AND_COMMIT: "verifies, saves and realizes the given config, while
//     preserving the forwarding state in the target. [...] an INVALID_ARGUMENT error
//     is returned if no config is provided, or if the existing forwarding state
//     cannot be preserved for the given config by the target."
//
// UNSPECIFIED (the action unset) and values outside the enum are no action:
// INVALID_ARGUMENT.
func TestSpecSetPipelineActions(t *testing.T) {
	type pre int
	const (
		fresh     pre = iota // nothing set
		committed            // cookie 1 committed, a route written
		saved                // committed as above, then cookie 2 saved
		savedOnly            // cookie 2 saved, nothing committed
	)
	other := proto.Clone(P4InfoFromSchema(pipeline.ProgramSchema())).(*p4configv1.P4Info)
	other.Tables = append(other.Tables, &p4configv1.Table{Preamble: &p4configv1.Preamble{Id: 0x020000AA, Name: "Other.t"}})
	otherCfg := &p4v1.ForwardingPipelineConfig{P4Info: other, Cookie: &p4v1.ForwardingPipelineConfig_Cookie{Cookie: 9}}
	const (
		VERIFY    = p4v1.SetForwardingPipelineConfigRequest_VERIFY
		SAVE      = p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_SAVE
		VCOMMIT   = p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT
		COMMIT    = p4v1.SetForwardingPipelineConfigRequest_COMMIT
		RECONCILE = p4v1.SetForwardingPipelineConfigRequest_RECONCILE_AND_COMMIT
		UNSET     = p4v1.SetForwardingPipelineConfigRequest_UNSPECIFIED
	)
	ok, ia, nf := codes.OK, codes.InvalidArgument, codes.NotFound
	cases := []struct {
		name   string
		pre    pre
		action p4v1.SetForwardingPipelineConfigRequest_Action
		cfg    *p4v1.ForwardingPipelineConfig
		code   codes.Code
		// After: the cookie Get returns (0: config unset), whether the route written
		// before is still there, and whether a COMMIT without config then succeeds
		// (something is saved).
		cookie    uint64
		route     bool
		canCommit bool
	}{
		{"VERIFY", committed, VERIFY, testConfig(3), ok, 1, true, false},
		{"VERIFY before any config", fresh, VERIFY, testConfig(3), ok, 0, false, false},
		{"VERIFY without config", committed, VERIFY, nil, ia, 1, true, false},
		{"VERIFY another program", committed, VERIFY, otherCfg, ia, 1, true, false},
		{"VERIFY_AND_SAVE", committed, SAVE, testConfig(3), ok, 1, true, true},
		{"VERIFY_AND_SAVE before any config", fresh, SAVE, testConfig(3), ok, 0, false, true},
		{"VERIFY_AND_SAVE without config", committed, SAVE, nil, ia, 1, true, false},
		{"VERIFY_AND_SAVE another program", saved, SAVE, otherCfg, ia, 1, true, true},
		{"VERIFY_AND_COMMIT", committed, VCOMMIT, testConfig(3), ok, 3, false, false},
		{"VERIFY_AND_COMMIT without config", committed, VCOMMIT, nil, ia, 1, true, false},
		{"VERIFY_AND_COMMIT another program", committed, VCOMMIT, otherCfg, ia, 1, true, false},
		{"COMMIT of the saved config", saved, COMMIT, nil, ok, 2, false, false},
		{"COMMIT of the saved config, nothing committed before", savedOnly, COMMIT, nil, ok, 2, false, false},
		{"COMMIT with nothing saved", fresh, COMMIT, nil, nf, 0, false, false},
		{"COMMIT with nothing saved after a commit", committed, COMMIT, nil, nf, 1, true, false},
		{"COMMIT with a config, nothing saved", fresh, COMMIT, testConfig(3), ia, 0, false, false},
		{"COMMIT with a config, a config saved", saved, COMMIT, testConfig(3), ia, 1, true, true},
		{"COMMIT with an empty config", saved, COMMIT, &p4v1.ForwardingPipelineConfig{}, ia, 1, true, true},
		{"RECONCILE_AND_COMMIT", committed, RECONCILE, testConfig(3), ok, 3, true, false},
		{"RECONCILE_AND_COMMIT before any config", fresh, RECONCILE, testConfig(3), ok, 3, false, false},
		{"RECONCILE_AND_COMMIT without config", committed, RECONCILE, nil, ia, 1, true, false},
		{"RECONCILE_AND_COMMIT another program", committed, RECONCILE, otherCfg, ia, 1, true, false},
		{"action unset (UNSPECIFIED)", committed, UNSET, testConfig(3), ia, 1, true, false},
		{"action unset, nothing set", fresh, UNSET, testConfig(3), ia, 0, false, false},
		{"action 99", saved, 99, testConfig(3), ia, 1, true, true},
	}
	r := route(b(10, 0, 0, 0), 8, b(1))
	set := func(h *harness, action p4v1.SetForwardingPipelineConfigRequest_Action, cfg *p4v1.ForwardingPipelineConfig) error {
		_, err := h.cli.SetForwardingPipelineConfig(ctxT(t), &p4v1.SetForwardingPipelineConfigRequest{
			DeviceId: testDevice, ElectionId: eid(10), Action: action, Config: cfg})
		return err
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			h.primary(t, 10)
			if c.pre == committed || c.pre == saved {
				if err := set(h, VCOMMIT, testConfig(1)); err != nil {
					t.Fatal(err)
				}
				h.mustWrite(t, ins(r))
			}
			if c.pre == saved || c.pre == savedOnly {
				if err := set(h, SAVE, testConfig(2)); err != nil {
					t.Fatal(err)
				}
			}
			if err := set(h, c.action, c.cfg); status.Code(err) != c.code {
				t.Fatalf("%s: %v, want %v", c.action, err, c.code)
			}
			got, err := h.cli.GetForwardingPipelineConfig(ctxT(t), &p4v1.GetForwardingPipelineConfigRequest{DeviceId: testDevice})
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			if got.GetConfig().GetCookie().GetCookie() != c.cookie || (c.cookie == 0) != (got.GetConfig() == nil) {
				t.Fatalf("Get after: %v, want cookie %d (0: config unset)", got.GetConfig(), c.cookie)
			}
			if c.cookie != 0 {
				if ents := h.mustRead(t, te(0, 0, nil)); (len(ents) == 1) != c.route {
					t.Fatalf("entries after: %v, want the route: %v", ents, c.route)
				}
			}
			want := nf
			if c.canCommit {
				want = ok
			}
			if err := set(h, COMMIT, nil); status.Code(err) != want {
				t.Fatalf("COMMIT after: %v, want %v", err, want)
			}
		})
	}
}

// TestSpecSetPipelineArbitration: "The server is expected to perform the following
// checks (in this order) before performing the required action: If device_id does
// not match any of the devices known to the P4Runtime server or if role does not
// match any of the roles for the device, the server must return a NOT_FOUND error.
// If the client is not the primary for (device_id, role) according to the
// election_id value, the server must return a PERMISSION_DENIED error."
func TestSpecSetPipelineArbitration(t *testing.T) {
	h := newHarness(t)
	h.primary(t, 10)
	cases := []struct {
		name   string
		device uint64
		role   string
		e      *p4v1.Uint128
		action p4v1.SetForwardingPipelineConfigRequest_Action
		code   codes.Code
	}{
		{"other device", testDevice + 1, "", eid(10), p4v1.SetForwardingPipelineConfigRequest_VERIFY, codes.NotFound},
		{"unknown role", testDevice, "nobody", eid(10), p4v1.SetForwardingPipelineConfigRequest_VERIFY, codes.NotFound},
		{"unknown role, bad action", testDevice, "nobody", eid(10), 0, codes.NotFound},
		{"not primary", testDevice, "", eid(9), p4v1.SetForwardingPipelineConfigRequest_VERIFY, codes.PermissionDenied},
		{"not primary, bad action", testDevice, "", eid(9), 0, codes.PermissionDenied},
		{"no election ID", testDevice, "", nil, p4v1.SetForwardingPipelineConfigRequest_VERIFY, codes.PermissionDenied},
		{"primary", testDevice, "", eid(10), p4v1.SetForwardingPipelineConfigRequest_VERIFY, codes.OK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := h.cli.SetForwardingPipelineConfig(ctxT(t), &p4v1.SetForwardingPipelineConfigRequest{
				DeviceId: c.device, Role: c.role, ElectionId: c.e, Action: c.action, Config: testConfig(1)})
			if status.Code(err) != c.code {
				t.Fatalf("%v, want %v", err, c.code)
			}
		})
	}
}

// TestSpecGetPipelineConfig: "If a P4Runtime server is in a state where the
// forwarding-pipeline config is not known, the top-level config field will be unset
// in the response. Examples are (i) a server that only allows configuration via
// SetForwardingPipelineConfig but this RPC hasn't been invoked yet". response_type:
// "ALL: returns a ForwardingPipelineConfig with all fields set as stored by the
// target. This is the default behaviour if the response_type field is not set.
// COOKIE_ONLY: reply by setting only the cookie field [...] P4INFO_AND_COOKIE: reply
// by setting the p4info and cookie fields. DEVICE_CONFIG_AND_COOKIE: reply by setting
// the p4_device_config and cookie fields." "if a cookie was present in the
// SetForwardingPipelineConfig RPC, the same should be returned". "A NOT_FOUND error
// is returned if the device_id is not recognized by the P4Runtime server."
func TestSpecGetPipelineConfig(t *testing.T) {
	const (
		ALL    = p4v1.GetForwardingPipelineConfigRequest_ALL
		COOKIE = p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY
		P4INFO = p4v1.GetForwardingPipelineConfigRequest_P4INFO_AND_COOKIE
		DEVCFG = p4v1.GetForwardingPipelineConfigRequest_DEVICE_CONFIG_AND_COOKIE
	)
	info := P4InfoFromSchema(pipeline.ProgramSchema())
	withCookie := testConfig(5)
	noCookie := &p4v1.ForwardingPipelineConfig{P4Info: info, P4DeviceConfig: []byte("dev")}
	cookie5 := &p4v1.ForwardingPipelineConfig_Cookie{Cookie: 5}
	cases := []struct {
		name   string
		set    *p4v1.ForwardingPipelineConfig // committed before Get (nil: nothing set)
		device uint64
		rt     p4v1.GetForwardingPipelineConfigRequest_ResponseType
		code   codes.Code
		want   *p4v1.ForwardingPipelineConfig // nil: config unset
	}{
		{"before Set, ALL", nil, testDevice, ALL, codes.OK, nil},
		{"before Set, COOKIE_ONLY", nil, testDevice, COOKIE, codes.OK, nil},
		{"before Set, P4INFO_AND_COOKIE", nil, testDevice, P4INFO, codes.OK, nil},
		{"before Set, DEVICE_CONFIG_AND_COOKIE", nil, testDevice, DEVCFG, codes.OK, nil},
		{"before Set, bad response type", nil, testDevice, 9, codes.InvalidArgument, nil},
		{"before Set, other device", nil, testDevice + 1, ALL, codes.NotFound, nil},
		{"ALL", withCookie, testDevice, ALL, codes.OK, withCookie},
		{"COOKIE_ONLY", withCookie, testDevice, COOKIE, codes.OK, &p4v1.ForwardingPipelineConfig{Cookie: cookie5}},
		{"P4INFO_AND_COOKIE", withCookie, testDevice, P4INFO, codes.OK, &p4v1.ForwardingPipelineConfig{P4Info: info, Cookie: cookie5}},
		{"DEVICE_CONFIG_AND_COOKIE", withCookie, testDevice, DEVCFG, codes.OK, &p4v1.ForwardingPipelineConfig{P4DeviceConfig: []byte("dev"), Cookie: cookie5}},
		{"ALL, set without cookie", noCookie, testDevice, ALL, codes.OK, noCookie},
		{"COOKIE_ONLY, set without cookie", noCookie, testDevice, COOKIE, codes.OK, &p4v1.ForwardingPipelineConfig{}},
		{"bad response type", withCookie, testDevice, 9, codes.InvalidArgument, nil},
		{"other device", withCookie, 1, ALL, codes.NotFound, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			if c.set != nil {
				h.primary(t, 10)
				if _, err := h.cli.SetForwardingPipelineConfig(ctxT(t), &p4v1.SetForwardingPipelineConfigRequest{DeviceId: testDevice,
					ElectionId: eid(10), Action: p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, Config: c.set}); err != nil {
					t.Fatal(err)
				}
			}
			resp, err := h.cli.GetForwardingPipelineConfig(ctxT(t), &p4v1.GetForwardingPipelineConfigRequest{DeviceId: c.device, ResponseType: c.rt})
			if status.Code(err) != c.code {
				t.Fatalf("%v, want %v", err, c.code)
			}
			if err != nil {
				return
			}
			if (resp.GetConfig() == nil) != (c.want == nil) || !proto.Equal(resp.GetConfig(), c.want) {
				t.Fatalf("config %v, want %v", resp.GetConfig(), c.want)
			}
		})
	}
}
