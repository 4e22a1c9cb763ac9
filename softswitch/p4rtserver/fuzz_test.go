package p4rtserver

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"google.golang.org/protobuf/proto"
)

// fuzzServer is a server (not serving) with a committed config, for calling the
// update and read paths directly.
func fuzzServer(tb testing.TB) *Server {
	tb.Helper()
	s, err := New(Options{DeviceID: 1, DataPlane: NewLocalDataPlane(pipeline.New(pipeline.Options{}), LocalOptions{})})
	if err != nil {
		tb.Fatal(err)
	}
	s.committed = &p4v1.ForwardingPipelineConfig{}
	return s
}

// seedUpdates are valid updates of every kind, the starting points for mutation.
func seedUpdates() []*p4v1.Update {
	return []*p4v1.Update{
		ins(route(b(10, 0, 0, 0), 8, b(1))),
		ins(te(p4src.TableTrafficClass, 5, act(p4src.ActionSetTrafficClass, param(1, b(3)), param(2, b(1))), exact(1, b(0)), ternary(3, b(0x1a), b(0x3f)))),
		ins(portConfig(4)),
		mod(counterEnt(p4src.CounterDropped, 3, 4, 5)),
		mod(registerEnt(p4src.RegPortQueueBytes, 2, b(9))),
		mod(valueSetEnt(p4src.AnnounceUDPPortID, b(0x12, 0xb8))),
		ins(digestEnt(p4src.DigestPortState, &p4v1.DigestEntry_Config{MaxListSize: 1})),
		ins(cloneEnt(p4src.CNPCloneSession, replica(3, 0))),
		ins(mcastEnt(1, replica(1, 0))),
		ins(l2Ent(bcastMAC, act(p4src.ActionL2Flood, param(1, b(1))))),
	}
}

// failing is an update that always fails (unknown table).
var failing = ins(te(0x020000FF, 0, nil))

// applyAndRead applies an update and reads its entity back, then applies it again in
// a ROLLBACK_ON_ERROR batch that fails: nothing may panic and the rollback must work.
func applyAndRead(tb testing.TB, s *Server, u *p4v1.Update) {
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	_ = s.dp.Exec(context.Background(), func(p *pipeline.Pipeline) error {
		_ = s.apply(p, u)
		if u.GetEntity() != nil {
			_ = s.readEntity(p, u.GetEntity(), func(*p4v1.Entity) {})
		}
		if _, err := s.applyAll(p, []*p4v1.Update{u, failing}, true); err != nil {
			tb.Errorf("rollback of %v: %v", u, err)
		}
		return nil
	})
}

// TestMutatedUpdatesDoNotPanic applies thousands of byte-mutated valid updates (and
// their reads) straight to the server's update path.
func TestMutatedUpdatesDoNotPanic(t *testing.T) {
	s := fuzzServer(t)
	rng := rand.New(rand.NewPCG(1, 2))
	seeds := seedUpdates()
	iters := 5000
	if testing.Short() {
		iters = 500
	}
	for i := range iters {
		raw, err := proto.Marshal(seeds[i%len(seeds)])
		if err != nil {
			t.Fatal(err)
		}
		for range 1 + rng.IntN(4) {
			raw[rng.IntN(len(raw))] ^= byte(1 << rng.IntN(8))
		}
		u := &p4v1.Update{}
		if proto.Unmarshal(raw, u) != nil {
			continue
		}
		applyAndRead(t, s, u)
	}
}

// FuzzApplyUpdate: any Update the wire can carry is answered, never a panic.
func FuzzApplyUpdate(f *testing.F) {
	for _, u := range seedUpdates() {
		raw, err := proto.Marshal(u)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	s := fuzzServer(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		u := &p4v1.Update{}
		if proto.Unmarshal(raw, u) != nil {
			return
		}
		applyAndRead(t, s, u)
	})
}
