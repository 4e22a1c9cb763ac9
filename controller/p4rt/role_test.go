package p4rt_test

import (
	"errors"
	"testing"

	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/controller/p4rt/internal/p4rttest"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestRoleConfig checks what the arbitration update carries for each way of
// choosing a role (P4Runtime v1.4+: Role{name = 3, config = 2}, the
// deprecated id never set), that the config is sent again when the client
// re-arbitrates after a reconnection, and that writes go out under the role.
func TestRoleConfig(t *testing.T) {
	checkLeaks(t)
	in := testInfo(t)
	cfg, err := anypb.New(wrapperspb.String("tables: Ing.port_config"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		opts     []p4rt.Option
		wantRole *p4v1.Role // nil: no Role message (the default role)
	}{
		{"default role", nil, nil},
		{"named role", []p4rt.Option{p4rt.WithRole("cc")}, &p4v1.Role{Name: "cc"}},
		{"named role with config", []p4rt.Option{p4rt.WithRole("cc"), p4rt.WithRoleConfig(cfg)},
			&p4v1.Role{Name: "cc", Config: cfg}},
		{"config cleared by nil", []p4rt.Option{p4rt.WithRole("cc"), p4rt.WithRoleConfig(cfg), p4rt.WithRoleConfig(nil)},
			&p4v1.Role{Name: "cc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t)
			addr := s.Addr()
			c := dial(t, addr, tc.opts...)
			checkArbitration(t, s, tc.wantRole)

			// Writes are checked against the primary of the request's role:
			// success shows the role name travels with them.
			ent, err := in.TableEntry("port_config").Match(p4rt.Exact("port", 1)).Action("NoAction").Entity()
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Write(ctx(t), p4rt.Insert(ent)); err != nil {
				t.Fatalf("write as primary of role %q: %v", tc.wantRole.GetName(), err)
			}

			// The switch goes away and comes back: the new arbitration
			// carries the same role and config.
			s.Stop()
			waitEvent(t, c, p4rt.EventDisconnected)
			s2, err := p4rttest.Start(addr, testDevice)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s2.Stop)
			if e := waitEvent(t, c, p4rt.EventReconnected); !e.Reconcile {
				t.Fatalf("reconnected %+v, want primary with reconcile", e)
			}
			checkArbitration(t, s2, tc.wantRole)
		})
	}
}

// checkArbitration asserts that s received exactly one arbitration update
// and that its role is want.
func checkArbitration(t *testing.T, s *p4rttest.Server, want *p4v1.Role) {
	t.Helper()
	arbs := s.Arbitrations()
	if len(arbs) != 1 {
		t.Fatalf("server got %d arbitration updates, want 1", len(arbs))
	}
	got := arbs[0].GetRole()
	if (got == nil) != (want == nil) || !proto.Equal(got, want) {
		t.Fatalf("arbitration role = %v, want %v", got, want)
	}
	if got.GetId() != 0 {
		t.Errorf("deprecated Role.id sent: %d", got.GetId())
	}
}

func TestRoleConfigOptionErrors(t *testing.T) {
	checkLeaks(t)
	cfg, err := anypb.New(wrapperspb.String("x"))
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t)

	// A config without a role name is refused before anything is sent.
	_, err = p4rt.Dial(ctx(t), s.Addr(), testDevice, p4rt.WithRoleConfig(cfg), p4rt.WithBackoff(fastBackoff))
	if !errors.Is(err, p4rt.ErrInvalidValue) {
		t.Fatalf("config without role: %v, want ErrInvalidValue", err)
	}
	if n := len(s.Arbitrations()); n != 0 {
		t.Fatalf("server got %d arbitration updates from a refused Dial", n)
	}

	// The option copies the config: changing the caller's Any afterwards
	// does not change what is sent.
	opt := p4rt.WithRoleConfig(cfg)
	want := proto.Clone(cfg).(*anypb.Any)
	cfg.Value = append(cfg.Value, 0xff)
	dial(t, s.Addr(), p4rt.WithRole("inc"), opt)
	checkArbitration(t, s, &p4v1.Role{Name: "inc", Config: want})
}
