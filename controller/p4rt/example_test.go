package p4rt_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/controller/p4rt/internal/p4rttest"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// exampleInfo loads the test P4Info (p4c's output for a small v1model
// program plus a few hand-written objects).
func exampleInfo() *p4rt.Info {
	p, err := p4rt.LoadP4InfoFile("testdata/test.p4info.txtpb", p4rt.FormatAuto)
	if err != nil {
		panic(err)
	}
	in, err := p4rt.NewInfo(p)
	if err != nil {
		panic(err)
	}
	return in
}

func ExampleEncode() {
	port, _ := p4rt.Encode(uint32(511), 9) // bit<9>
	zero, _ := p4rt.Encode(0, 32)
	mac, _ := p4rt.Encode(net.HardwareAddr{0, 0, 0, 0, 0x12, 0x34}, 48)
	_, err := p4rt.Encode(512, 9)
	fmt.Printf("%x %x %x\n%v\n", port, zero, mac, err)
	// Output:
	// 01ff 00 1234
	// p4rt: 512 needs 10 bits, bit<9>: value too wide for its bitwidth
}

func ExampleCanonical() {
	fmt.Printf("%x %x\n", p4rt.Canonical([]byte{0, 0, 0x0a}), p4rt.Canonical([]byte{0, 0}))
	// Output: 0a 00
}

func ExampleParseP4Info() {
	p, err := p4rt.ParseP4Info([]byte(`tables { preamble { id: 33554433 name: "Ing.t" alias: "t" } }`), p4rt.FormatAuto)
	if err != nil {
		panic(err)
	}
	in, err := p4rt.NewInfo(p)
	if err != nil {
		panic(err)
	}
	id, _ := in.TableID("t")
	fmt.Println(id)
	// Output: 33554433
}

func ExampleInfo_TableID() {
	in := exampleInfo()
	id, _ := in.TableID("ipv4_route")
	fmt.Println(id)
	_, err := in.TableID("ipv4_rout")
	fmt.Println(err, errors.Is(err, p4rt.ErrUnknownName))
	_, err = in.TableID("acl")
	fmt.Println(err)
	// Output:
	// 33554433
	// p4rt: unknown table "ipv4_rout": did you mean Ing.ipv4_route true
	// p4rt: ambiguous table "acl": matches Egr.acl, Ing.acl
}

func ExampleInfo_TableEntry() {
	in := exampleInfo()
	mac, _ := net.ParseMAC("02:00:00:00:00:01")
	te, err := in.TableEntry("ipv4_route").
		Match(p4rt.LPM("dst_addr", net.ParseIP("10.1.0.0"), 16)).
		Action("set_nexthop", p4rt.P("port", 3), p4rt.P("dmac", mac)).
		Build()
	if err != nil {
		panic(err)
	}
	fmt.Printf("table %d lpm %x/%d action %d port %x dmac %x\n", te.TableId,
		te.Match[0].GetLpm().Value, te.Match[0].GetLpm().PrefixLen, te.GetAction().GetAction().ActionId,
		te.GetAction().GetAction().Params[0].Value, te.GetAction().GetAction().Params[1].Value)
	_, err = in.TableEntry("ipv4_route").Match(p4rt.LPM("dst_addr", net.ParseIP("10.1.2.3"), 16)).Build()
	fmt.Println(errors.Is(err, p4rt.ErrInvalidValue))
	// Output:
	// table 33554433 lpm 0a010000/16 action 16777474 port 03 dmac 020000000001
	// true
}

func ExampleInfo_ValueSetEntry() {
	in := exampleInfo()
	e, err := in.ValueSetEntry("roce_ports", []p4rt.Match{p4rt.Exact("port", 4791)})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%x\n", e.GetValueSetEntry().Members[0].Match[0].GetExact().Value)
	// Output: 12b7
}

func ExampleMulticastGroup() {
	e, _ := p4rt.MulticastGroup(1, p4rt.Replica{Port: 1}, p4rt.Replica{Port: 2})
	fmt.Println(len(e.GetPacketReplicationEngineEntry().GetMulticastGroupEntry().Replicas))
	// Output: 2
}

func ExampleBackoff_Delay() {
	b := p4rt.Backoff{Initial: 100 * time.Millisecond, Max: time.Second, Multiplier: 2, Jitter: 0.2}
	for n := 0; n < 6; n++ {
		fmt.Print(b.Delay(n, 0.5), " ") // 0.5: no jitter
	}
	fmt.Println()
	// Output: 100ms 200ms 400ms 800ms 1s 1s
}

// Dial against the in-process fake server; against BMv2 use its gRPC
// address (default 127.0.0.1:9559) and device ID (--device-id).
func ExampleDial() {
	srv, err := p4rttest.Start("127.0.0.1:0", 1)
	if err != nil {
		panic(err)
	}
	defer srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := p4rt.Dial(ctx, srv.Addr(), 1, p4rt.WithElectionID(p4rt.Uint128{Low: 10}))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	st := c.Status()
	fmt.Println(st.Primary, st.PrimaryElectionID)
	// Output: true 10
}

// ReconcileNeeded carries the news that this client became primary again,
// losslessly, whatever the state of the Events buffer. Here the switch
// restarts, empty, under the client.
func ExampleClient_ReconcileNeeded() {
	srv, err := p4rttest.Start("127.0.0.1:0", 1)
	if err != nil {
		panic(err)
	}
	addr := srv.Addr()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := p4rt.Dial(ctx, addr, 1,
		p4rt.WithBackoff(p4rt.Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond, Multiplier: 2}))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	srv.Stop()
	if srv, err = p4rttest.Start(addr, 1); err != nil {
		panic(err)
	}
	defer srv.Stop()
	select {
	case <-c.ReconcileNeeded():
		fmt.Println("primary again:", c.IsPrimary())
		// read the switch and rewrite what is missing
	case <-ctx.Done():
		fmt.Println("no reconcile signal")
	}
	// Output: primary again: true
}

func ExampleClient_Write() {
	srv, _ := p4rttest.Start("127.0.0.1:0", 1)
	defer srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := p4rt.Dial(ctx, srv.Addr(), 1, p4rt.WithChunkSize(2))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	in := exampleInfo()
	var ents []*p4v1.Entity
	for port := 0; port < 5; port++ {
		e, _ := in.TableEntry("port_config").Match(p4rt.Exact("port", port)).Action("NoAction").Entity()
		ents = append(ents, e)
	}
	// The switch refuses port 3.
	srv.FailUpdates(func(u *p4v1.Update) *p4v1.Error {
		if u.GetEntity().GetTableEntry().GetMatch()[0].GetExact().GetValue()[0] == 3 {
			return &p4v1.Error{CanonicalCode: int32(codes.ResourceExhausted), Message: "table full"}
		}
		return nil
	})
	err = c.Write(ctx, p4rt.Insert(ents...))
	var we *p4rt.WriteError
	if errors.As(err, &we) {
		for _, u := range we.Updates {
			fmt.Println("failed:", u.Index, u.Code, u.Message)
		}
		fmt.Println("applied:", we.Applied(), "of", we.Total)
	}
	// Output:
	// failed: 3 ResourceExhausted table full
	// applied: 3 of 5
}

func ExampleClient_Read() {
	srv, _ := p4rttest.Start("127.0.0.1:0", 1)
	defer srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	in := exampleInfo()
	c, err := p4rt.Dial(ctx, srv.Addr(), 1, p4rt.WithInfo(in))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	e, _ := in.TableEntry("ipv4_route").Match(p4rt.LPM("dst_addr", net.ParseIP("10.0.0.0"), 8)).Action("drop").Entity()
	if err := c.Write(ctx, p4rt.Insert(e)); err != nil {
		panic(err)
	}
	all, _ := in.ReadTable("") // every entry of every table
	ents, err := c.Read(ctx, all)
	fmt.Println(len(ents), err)
	srv.RegistersUnimplemented(true) // as BMv2
	regs, _ := in.ReadRegister("port_rx_bytes", p4rt.AllIndexes)
	_, err = c.Read(ctx, regs)
	fmt.Println(errors.Is(err, p4rt.ErrUnimplemented))
	// Output:
	// 1 <nil>
	// true
}

func ExampleClient_SetPipeline() {
	srv, _ := p4rttest.Start("127.0.0.1:0", 1)
	defer srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := p4rt.Dial(ctx, srv.Addr(), 1)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	in := exampleInfo()
	bmv2JSON := []byte("{}") // p4c's BMv2 JSON
	err = c.SetPipeline(ctx, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, in.P4Info(), bmv2JSON, 1)
	fmt.Println(err, c.Info() != nil)
	cfg, _ := c.GetPipeline(ctx, p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY)
	fmt.Println(cfg.GetCookie().GetCookie())
	// Output:
	// <nil> true
	// 1
}

func ExampleClient_PacketOut() {
	srv, _ := p4rttest.Start("127.0.0.1:0", 1)
	defer srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := p4rt.Dial(ctx, srv.Addr(), 1, p4rt.WithInfo(exampleInfo()))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	if err := c.PacketOut(ctx, []byte("frame"), p4rt.P("egress_port", 5), p4rt.P("pad", 0)); err != nil {
		panic(err)
	}
	p := <-srv.PacketOuts()
	fmt.Printf("%s %x\n", p.Payload, p.Metadata[0].Value)
	_ = srv.SendPacketIn(&p4v1.PacketIn{Payload: []byte("back"), Metadata: []*p4v1.PacketMetadata{{MetadataId: 1, Value: []byte{0, 9}}}})
	in := <-c.Packets()
	port, _ := in.Uint("ingress_port")
	fmt.Println(string(in.Payload), port)
	// Output:
	// frame 05
	// back 9
}

func ExampleDigestList_Unmarshal() {
	srv, _ := p4rttest.Start("127.0.0.1:0", 1)
	defer srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	in := exampleInfo()
	c, err := p4rt.Dial(ctx, srv.Addr(), 1, p4rt.WithInfo(in))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	id, _ := in.DigestID("state_change_t")
	_ = srv.SendDigest(&p4v1.DigestList{DigestId: id, ListId: 1, Data: []*p4v1.P4Data{stateChange(4, 1, 1000)}})
	d := <-c.Digests()
	var ev struct {
		Port  uint16
		State uint8
		At    uint64
	}
	if err := d.Unmarshal(0, &ev); err != nil {
		panic(err)
	}
	fmt.Printf("%s %+v\n", d.Name, ev)
	a := <-srv.DigestAcks() // acknowledged automatically
	fmt.Println(a.ListId)
	// Output:
	// state_change_t {Port:4 State:1 At:1000}
	// 1
}

// A controller that owns only part of the pipeline arbitrates for a named
// role and may describe the role with a config (an Any whose format the
// controller and the switch agree on). Both go in every arbitration update,
// reconnections included.
func ExampleWithRoleConfig() {
	srv, err := p4rttest.Start("127.0.0.1:0", 1)
	if err != nil {
		panic(err)
	}
	defer srv.Stop()
	cfg, err := anypb.New(wrapperspb.String("tables: Ing.port_config"))
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := p4rt.Dial(ctx, srv.Addr(), 1, p4rt.WithRole("cc"), p4rt.WithRoleConfig(cfg))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	role := srv.Arbitrations()[0].GetRole()
	var sent wrapperspb.StringValue
	if err := role.GetConfig().UnmarshalTo(&sent); err != nil {
		panic(err)
	}
	fmt.Println(role.GetName(), sent.GetValue(), c.IsPrimary())
	// Output: cc tables: Ing.port_config true
}
