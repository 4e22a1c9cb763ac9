package p4rtserver

// The stock Go P4Runtime client, github.com/antoninbas/p4runtime-go-client, is not
// on the module proxy, so it cannot be a test dependency. stockClient below sends
// what that client sends: every request is built the way the client's functions
// build it (read at commit de3748d of the repository: pkg/client/client.go,
// tables.go, action_profiles.go, counters.go, pre.go, digests.go, fwd_pipe.go,
// p4info.go, port.go and pkg/util/conversion/conversion.go; the shapes of the
// examples cmd/wcmp/main.go and cmd/l2_switch/main.go). The code is written anew
// here, with the same message shapes, quirks included:
//   - bytestrings: match values are canonicalised only when the client option
//     CanonicalBytestrings is on (the default; DisableCanonicalBytestrings turns it
//     off); action parameters never are: they go as the caller built them, e.g. with
//     conversion.UInt32ToBinary(v, n), which keeps the last 4-n bytes of the 32-bit
//     big-endian value (a 9-bit port as 2 bytes "\x00\x05"), or MacToBinary (6
//     bytes, leading zeros kept);
//   - LPM: the client clears the bits beyond the prefix itself; a prefix_len 0 is
//     sent as a match field (value zeroed), never omitted;
//   - ReadTableEntry gives field IDs 1, 2, ... in argument order and no priority, even
//     for a ternary table;
//   - one-shot action sets always set watch_kind to watch_port = Port.AsBytes(): the
//     empty bytestring for a zero Port, "\x01" for NewPortFromInt(1) (cmd/wcmp);
//   - default entries: NewTableEntry with nil match fields sets is_default_action;
//     with a nil action too it resets the default (MODIFY without action);
//   - DeleteTableEntry sends the entry without an action;
//   - counters: CounterEntry with index always set, data as given; the wildcard
//     read leaves index unset and takes the answers in order as cells 0, 1, ...;
//   - PRE: replicas with the deprecated egress_port and instance = position;
//   - arbitration: MasterArbitrationUpdate{device_id, election_id, role} (role nil
//     for the default role); Write, Read and SetForwardingPipelineConfig carry
//     role = role.name; COMMIT carries neither role nor config;
//   - packet-out: SendPacketOut sends the caller's PacketOut as is (the client has
//     no packet metadata helper); registers: no helper either (ReadEntitySingle of
//     any entity).
// Where the spec requires something the client does not do, the server follows the
// spec (a prefix_len 0 LPM field, a non-empty watch port on a target without port
// liveness, several clone session ports on this target): those cases assert the
// refusal, and docs/target-p4runtime.md lists them.

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/model/pipeline"
	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// stockClient mirrors client.Client: options, device, election ID, role, P4Info.
type stockClient struct {
	cli        p4v1.P4RuntimeClient
	deviceID   uint64
	electionID *p4v1.Uint128
	role       *p4v1.Role
	canonical  bool
	p4Info     *p4configv1.P4Info
}

// Conversions (pkg/util/conversion).

func stockUInt32ToBinary(i uint32, numBytes int) []byte {
	b := make([]byte, 4)
	binary.BigEndian.PutUint32(b, i)
	return b[numBytes:]
}

func stockToCanonical(v []byte) []byte {
	if len(v) == 0 {
		return v
	}
	i := 0
	for i < len(v) && v[i] == 0 {
		i++
	}
	if i == len(v) {
		return v[:1]
	}
	return v[i:]
}

func stockCanonicalIf(v []byte, cond bool) []byte {
	if cond {
		return stockToCanonical(v)
	}
	return v
}

func stockIP(s string) []byte { return []byte(net.ParseIP(s).To4()) }

func stockMAC(s string) []byte {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return []byte(m)
}

// stockPort is client.Port: NewPortFromInt gives the shortest bytes ("\x00" for 0),
// the zero Port nil bytes.
type stockPort struct{ bytes []byte }

func stockPortFromInt(i uint32) stockPort {
	b := stockUInt32ToBinary(i, 0)
	for j := range b {
		if b[j] != 0 {
			return stockPort{b[j:]}
		}
	}
	return stockPort{[]byte{0}}
}

// Names to IDs (pkg/client/p4info.go): 0 when unknown.

func (c *stockClient) tableID(name string) uint32 {
	for _, t := range c.p4Info.GetTables() {
		if t.GetPreamble().GetName() == name {
			return t.GetPreamble().GetId()
		}
	}
	return 0
}

func (c *stockClient) matchFieldID(table, field string) uint32 {
	for _, t := range c.p4Info.GetTables() {
		if t.GetPreamble().GetName() == table {
			for _, mf := range t.GetMatchFields() {
				if mf.GetName() == field {
					return mf.GetId()
				}
			}
		}
	}
	return 0
}

func (c *stockClient) actionID(name string) uint32 {
	for _, a := range c.p4Info.GetActions() {
		if a.GetPreamble().GetName() == name {
			return a.GetPreamble().GetId()
		}
	}
	return 0
}

func (c *stockClient) actionProfileID(name string) uint32 {
	for _, a := range c.p4Info.GetActionProfiles() {
		if a.GetPreamble().GetName() == name {
			return a.GetPreamble().GetId()
		}
	}
	return 0
}

func (c *stockClient) counterID(name string) uint32 {
	for _, x := range c.p4Info.GetCounters() {
		if x.GetPreamble().GetName() == name {
			return x.GetPreamble().GetId()
		}
	}
	return 0
}

func (c *stockClient) digestID(name string) uint32 {
	for _, x := range c.p4Info.GetDigests() {
		if x.GetPreamble().GetName() == name {
			return x.GetPreamble().GetId()
		}
	}
	return 0
}

// Match fields (pkg/client/tables.go MatchInterface).

type stockMatch interface {
	get(id uint32, canonical bool) *p4v1.FieldMatch
}

type stockExact struct{ value []byte }

func (m stockExact) get(id uint32, canonical bool) *p4v1.FieldMatch {
	return &p4v1.FieldMatch{FieldId: id, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: stockCanonicalIf(m.value, canonical)}}}
}

type stockLPM struct {
	value []byte
	plen  int32
}

// get clears the bits beyond the prefix in the value (in place, as the client does),
// then canonicalises it if asked. A prefix_len 0 is sent as is.
func (m stockLPM) get(id uint32, canonical bool) *p4v1.FieldMatch {
	v := m.value
	first := int(m.plen / 8)
	if first != len(v) {
		r := m.plen % 8
		v[first] &= byte(0xff << (8 - r))
		for i := first + 1; i < len(v); i++ {
			v[i] = 0
		}
	}
	return &p4v1.FieldMatch{FieldId: id, FieldMatchType: &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: stockCanonicalIf(v, canonical), PrefixLen: m.plen}}}
}

type stockTernary struct{ value, mask []byte }

// get clears the masked-off bits of the value, then canonicalises value and mask
// separately if asked.
func (m stockTernary) get(id uint32, canonical bool) *p4v1.FieldMatch {
	v, mask := m.value, m.mask
	off := len(mask) - len(v)
	if off < 0 {
		v, off = v[-off:], 0
	}
	for i, x := range mask[off:] {
		v[i] &= x
	}
	return &p4v1.FieldMatch{FieldId: id, FieldMatchType: &p4v1.FieldMatch_Ternary_{Ternary: &p4v1.FieldMatch_Ternary{
		Value: stockCanonicalIf(v, canonical), Mask: stockCanonicalIf(mask, canonical)}}}
}

// Actions and entries.

// newAction: param IDs 1, 2, ... in order, values exactly as given.
func (c *stockClient) newAction(name string, params [][]byte) *p4v1.Action {
	a := &p4v1.Action{ActionId: c.actionID(name)}
	for i, p := range params {
		a.Params = append(a.Params, &p4v1.Action_Param{ParamId: uint32(i + 1), Value: p})
	}
	return a
}

func (c *stockClient) tableActionDirect(name string, params [][]byte) *p4v1.TableAction {
	return &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: c.newAction(name, params)}}
}

func (c *stockClient) tableActionMember(id uint32) *p4v1.TableAction {
	return &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileMemberId{ActionProfileMemberId: id}}
}

func (c *stockClient) tableActionGroup(id uint32) *p4v1.TableAction {
	return &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileGroupId{ActionProfileGroupId: id}}
}

// stockActionSet is ActionProfileActionSet: AddAction always sets watch_port.
type stockActionSet struct {
	c      *stockClient
	action *p4v1.TableAction
}

func (c *stockClient) newActionSet() *stockActionSet {
	return &stockActionSet{c, &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileActionSet{ActionProfileActionSet: &p4v1.ActionProfileActionSet{}}}}
}

func (s *stockActionSet) addAction(name string, params [][]byte, weight int32, port stockPort) *stockActionSet {
	set := s.action.GetActionProfileActionSet()
	set.ActionProfileActions = append(set.ActionProfileActions, &p4v1.ActionProfileAction{Action: s.c.newAction(name, params), Weight: weight,
		WatchKind: &p4v1.ActionProfileAction_WatchPort{WatchPort: port.bytes}})
	return s
}

type stockEntryOptions struct {
	idleTimeout time.Duration
	priority    int32
}

// newTableEntry: nil match fields make the default entry.
func (c *stockClient) newTableEntry(table string, mfs map[string]stockMatch, action *p4v1.TableAction, opts *stockEntryOptions) *p4v1.TableEntry {
	e := &p4v1.TableEntry{TableId: c.tableID(table), IsDefaultAction: mfs == nil, Action: action}
	for name, mf := range mfs {
		e.Match = append(e.Match, mf.get(c.matchFieldID(table, name), c.canonical))
	}
	if opts != nil {
		e.IdleTimeoutNs, e.Priority = opts.idleTimeout.Nanoseconds(), opts.priority
	}
	return e
}

// RPCs (pkg/client/client.go and the entity files).

func (c *stockClient) writeUpdate(ctx context.Context, u *p4v1.Update) error {
	req := &p4v1.WriteRequest{DeviceId: c.deviceID, ElectionId: c.electionID, Updates: []*p4v1.Update{u}}
	if c.role != nil {
		req.Role = c.role.GetName()
	}
	_, err := c.cli.Write(ctx, req)
	return err
}

func (c *stockClient) write(ctx context.Context, t p4v1.Update_Type, e *p4v1.Entity) error {
	return c.writeUpdate(ctx, &p4v1.Update{Type: t, Entity: e})
}

func (c *stockClient) readEntities(ctx context.Context, e *p4v1.Entity) ([]*p4v1.Entity, error) {
	req := &p4v1.ReadRequest{DeviceId: c.deviceID, Entities: []*p4v1.Entity{e}}
	if c.role != nil {
		req.Role = c.role.GetName()
	}
	rs, err := c.cli.Read(ctx, req)
	if err != nil {
		return nil, err
	}
	var out []*p4v1.Entity
	for {
		r, err := rs.Recv()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r.GetEntities()...)
	}
}

// readEntitySingle fails unless exactly one entity comes back.
func (c *stockClient) readEntitySingle(ctx context.Context, e *p4v1.Entity) (*p4v1.Entity, error) {
	out, err := c.readEntities(ctx, e)
	if err != nil {
		return nil, err
	}
	if len(out) != 1 {
		return nil, fmt.Errorf("expected a single entity, got %d", len(out))
	}
	return out[0], nil
}

func tableEntity(e *p4v1.TableEntry) *p4v1.Entity {
	return &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: e}}
}

// readTableEntry: field IDs by position, no priority.
func (c *stockClient) readTableEntry(ctx context.Context, table string, mfs []stockMatch) (*p4v1.TableEntry, error) {
	e := &p4v1.TableEntry{TableId: c.tableID(table)}
	for i, mf := range mfs {
		e.Match = append(e.Match, mf.get(uint32(i+1), c.canonical))
	}
	got, err := c.readEntitySingle(ctx, tableEntity(e))
	return got.GetTableEntry(), err
}

func (c *stockClient) readTableEntryWildcard(ctx context.Context, table string) ([]*p4v1.TableEntry, error) {
	out, err := c.readEntities(ctx, tableEntity(&p4v1.TableEntry{TableId: c.tableID(table)}))
	var tes []*p4v1.TableEntry
	for _, e := range out {
		tes = append(tes, e.GetTableEntry())
	}
	return tes, err
}

func (c *stockClient) modifyCounterEntry(ctx context.Context, counter string, index int64, data *p4v1.CounterData) error {
	return c.write(ctx, p4v1.Update_MODIFY, &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{
		CounterId: c.counterID(counter), Index: &p4v1.Index{Index: index}, Data: data}}})
}

func (c *stockClient) readCounterEntry(ctx context.Context, counter string, index int64) (*p4v1.CounterData, error) {
	e, err := c.readEntitySingle(ctx, &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{
		CounterId: c.counterID(counter), Index: &p4v1.Index{Index: index}}}})
	return e.GetCounterEntry().GetData(), err
}

func (c *stockClient) readCounterEntryWildcard(ctx context.Context, counter string) ([]*p4v1.CounterData, error) {
	out, err := c.readEntities(ctx, &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: c.counterID(counter)}}})
	var ds []*p4v1.CounterData
	for _, e := range out {
		ds = append(ds, e.GetCounterEntry().GetData())
	}
	return ds, err
}

func stockPRE(pe *p4v1.PacketReplicationEngineEntry) *p4v1.Entity {
	return &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: pe}}
}

func (c *stockClient) insertCloneSession(ctx context.Context, id uint32, ports []uint32) error {
	cs := &p4v1.CloneSessionEntry{SessionId: id}
	for i, p := range ports {
		cs.Replicas = append(cs.Replicas, &p4v1.Replica{PortKind: &p4v1.Replica_EgressPort{EgressPort: p}, Instance: uint32(i)})
	}
	return c.write(ctx, p4v1.Update_INSERT, stockPRE(&p4v1.PacketReplicationEngineEntry{Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{CloneSessionEntry: cs}}))
}

func (c *stockClient) deleteCloneSession(ctx context.Context, id uint32) error {
	return c.write(ctx, p4v1.Update_DELETE, stockPRE(&p4v1.PacketReplicationEngineEntry{Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{
		CloneSessionEntry: &p4v1.CloneSessionEntry{SessionId: id}}}))
}

func (c *stockClient) insertMulticastGroup(ctx context.Context, id uint32, ports []uint32) error {
	mg := &p4v1.MulticastGroupEntry{MulticastGroupId: id}
	for i, p := range ports {
		mg.Replicas = append(mg.Replicas, &p4v1.Replica{PortKind: &p4v1.Replica_EgressPort{EgressPort: p}, Instance: uint32(i)})
	}
	return c.write(ctx, p4v1.Update_INSERT, stockPRE(&p4v1.PacketReplicationEngineEntry{Type: &p4v1.PacketReplicationEngineEntry_MulticastGroupEntry{MulticastGroupEntry: mg}}))
}

func (c *stockClient) deleteMulticastGroup(ctx context.Context, id uint32) error {
	return c.write(ctx, p4v1.Update_DELETE, stockPRE(&p4v1.PacketReplicationEngineEntry{Type: &p4v1.PacketReplicationEngineEntry_MulticastGroupEntry{
		MulticastGroupEntry: &p4v1.MulticastGroupEntry{MulticastGroupId: id}}}))
}

func (c *stockClient) digest(ctx context.Context, t p4v1.Update_Type, name string, cfg *p4v1.DigestEntry_Config) error {
	return c.write(ctx, t, &p4v1.Entity{Entity: &p4v1.Entity_DigestEntry{DigestEntry: &p4v1.DigestEntry{DigestId: c.digestID(name), Config: cfg}}})
}

// setFwdPipeFromBytes parses the P4Info text and sends it with the device config
// and the cookie; on success the client keeps the P4Info for names.
func (c *stockClient) setFwdPipeFromBytes(ctx context.Context, bin, p4infoText []byte, cookie uint64, action p4v1.SetForwardingPipelineConfigRequest_Action) error {
	info := &p4configv1.P4Info{}
	if err := prototext.Unmarshal(p4infoText, info); err != nil {
		return err
	}
	req := &p4v1.SetForwardingPipelineConfigRequest{DeviceId: c.deviceID, ElectionId: c.electionID, Action: action,
		Config: &p4v1.ForwardingPipelineConfig{P4Info: info, P4DeviceConfig: bin, Cookie: &p4v1.ForwardingPipelineConfig_Cookie{Cookie: cookie}}}
	if c.role != nil {
		req.Role = c.role.GetName()
	}
	_, err := c.cli.SetForwardingPipelineConfig(ctx, req)
	if err == nil {
		c.p4Info = info
	}
	return err
}

// commitFwdPipe: COMMIT without config and without role.
func (c *stockClient) commitFwdPipe(ctx context.Context) error {
	_, err := c.cli.SetForwardingPipelineConfig(ctx, &p4v1.SetForwardingPipelineConfigRequest{DeviceId: c.deviceID, ElectionId: c.electionID,
		Action: p4v1.SetForwardingPipelineConfigRequest_COMMIT})
	return err
}

func (c *stockClient) getFwdPipe(ctx context.Context, rt p4v1.GetForwardingPipelineConfigRequest_ResponseType) (*p4v1.ForwardingPipelineConfig, error) {
	r, err := c.cli.GetForwardingPipelineConfig(ctx, &p4v1.GetForwardingPipelineConfigRequest{DeviceId: c.deviceID, ResponseType: rt})
	return r.GetConfig(), err
}

// arbitrationMsg is what Run sends first on its stream.
func (c *stockClient) arbitrationMsg() *p4v1.StreamMessageRequest {
	return &p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{Arbitration: &p4v1.MasterArbitrationUpdate{
		DeviceId: c.deviceID, ElectionId: c.electionID, Role: c.role}}}
}

// p4infoText is the target's P4Info as a P4Info text file (what the client reads).
func p4infoText(t *testing.T) []byte {
	t.Helper()
	bs, err := prototext.Marshal(P4InfoFromSchema(pipeline.ProgramSchema()))
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

// stockReady is a harness whose primary is a stock client (election ID {0, 1}, as
// in the client's examples) that pushed the pipeline with SetFwdPipeFromBytes.
func stockReady(t *testing.T, canonical bool) (*harness, *stockClient, *streamClient) {
	t.Helper()
	h := newHarness(t)
	c := &stockClient{cli: h.cli, deviceID: testDevice, electionID: &p4v1.Uint128{High: 0, Low: 1}, canonical: canonical}
	sc := h.openStream(t)
	sc.send(c.arbitrationMsg())
	sc.expectArb(codes.OK, 1)
	if err := c.setFwdPipeFromBytes(ctxT(t), []byte("bmv2 json"), p4infoText(t), 77, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT); err != nil {
		t.Fatalf("SetFwdPipeFromBytes: %v", err)
	}
	return h, c, sc
}

// TestStockClientPipelineAndArbitration: the client's arbitration (default role and
// a named role) and its SetForwardingPipelineConfig flows.
func TestStockClientPipelineAndArbitration(t *testing.T) {
	// Spec 14 (SetForwardingPipelineConfig): "`VERIFY_AND_COMMIT`: saves and realizes
	// the given config if the P4Runtime target can realize it." "`COMMIT`: realizes
	// the last saved, but not yet committed, config. [...] Config should not be
	// provided for this action type." Spec 15 (GetForwardingPipelineConfig):
	// "`COOKIE_ONLY`: reply by setting only the `cookie` field in the
	// `ForwardingPipelineConfig`, omitting all other fields."
	h, c, _ := stockReady(t, true)
	ctx := ctxT(t)
	cfg, err := c.getFwdPipe(ctx, p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY)
	if err != nil || cfg.GetCookie().GetCookie() != 77 || cfg.GetP4Info() != nil {
		t.Fatalf("GetFwdPipe(cookie only): %v %v", cfg, err)
	}
	cfg, err = c.getFwdPipe(ctx, p4v1.GetForwardingPipelineConfigRequest_ALL)
	if err != nil || !proto.Equal(cfg.GetP4Info(), c.p4Info) || string(cfg.GetP4DeviceConfig()) != "bmv2 json" {
		t.Fatalf("GetFwdPipe(all): %v", err)
	}
	// SaveFwdPipeFromBytes then CommitFwdPipe.
	if err := c.setFwdPipeFromBytes(ctx, []byte("v2"), p4infoText(t), 78, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_SAVE); err != nil {
		t.Fatalf("SaveFwdPipeFromBytes: %v", err)
	}
	if err := c.commitFwdPipe(ctx); err != nil {
		t.Fatalf("CommitFwdPipe: %v", err)
	}
	if cfg, err := c.getFwdPipe(ctx, p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY); err != nil || cfg.GetCookie().GetCookie() != 78 {
		t.Fatalf("after commit: %v %v", cfg, err)
	}

	// NewClientForRole: arbitration with Role{name}, writes with role = name.
	rc := &stockClient{cli: h.cli, deviceID: testDevice, electionID: &p4v1.Uint128{Low: 5}, role: &p4v1.Role{Name: "sdn"}, canonical: true, p4Info: c.p4Info}
	rs := h.openStream(t)
	rs.send(rc.arbitrationMsg())
	if m := rs.next(); m.GetArbitration() == nil || codes.Code(m.GetArbitration().GetStatus().GetCode()) != codes.OK ||
		m.GetArbitration().GetRole().GetName() != "sdn" {
		t.Fatalf("role arbitration answer: %v", m)
	}
	e := rc.newTableEntry("FastcnpIngress.l2_forward", map[string]stockMatch{"dst_addr": stockExact{stockMAC("02:00:00:00:00:09")}},
		rc.tableActionDirect("FastcnpIngress.l2_set_port", [][]byte{stockUInt32ToBinary(5, 2)}), nil)
	if err := rc.write(ctx, p4v1.Update_INSERT, tableEntity(e)); err != nil {
		t.Fatalf("write for role sdn: %v", err)
	}
	if got, err := rc.readTableEntryWildcard(ctx, "FastcnpIngress.l2_forward"); err != nil || len(got) != 1 {
		t.Fatalf("read for role sdn: %v %v", got, err)
	}
}

// TestStockClientTableEntries: table entries as the client writes and reads them,
// with canonical match values (the client's default) and without.
func TestStockClientTableEntries(t *testing.T) {
	// Spec 8.3: "a P4Runtime server must accept a wide assortment of possible binary
	// string encodings for the same integer value" ("If additional bytes are
	// transmitted above the `minimum_string_size` minimum required, they must be
	// filled with 0"); "read-write symmetry requires that the encoder of a P4Runtime
	// request or reply uses the shortest strings that fit the encoded integer values"
	// (so the server answers canonically whatever the client sent).
	// Spec 9.1.6: "`priority`: If default (0), all entries from the specified table
	// will be considered" (ReadTableEntry of a ternary entry without its priority).
	// Spec 9.1.1 (LPM): "\"Don't care\" match must be omitted." with
	// `assert(pLen > 0)`, else INVALID_ARGUMENT.
	for _, canonical := range []bool{true, false} {
		t.Run(fmt.Sprintf("canonical=%v", canonical), func(t *testing.T) {
			_, c, _ := stockReady(t, canonical)
			ctx := ctxT(t)
			const rt = "FastcnpIngress.ipv4_route"
			nhParams := [][]byte{stockUInt32ToBinary(5, 2), stockMAC("00:00:5e:00:01:02"), stockMAC("02:00:00:00:00:03")}
			lpmOf := func(ip string, plen int32) map[string]stockMatch {
				return map[string]stockMatch{"dst_addr": stockLPM{stockIP(ip), plen}}
			}
			// The client clears 0.1.2.3/16 to 0.1.0.0: "\x00\x01\x00\x00", canonical "\x01\x00\x00".
			e := c.newTableEntry(rt, lpmOf("0.1.2.3", 16), c.tableActionDirect("FastcnpIngress.set_nexthop", nhParams), nil)
			if err := c.write(ctx, p4v1.Update_INSERT, tableEntity(e)); err != nil {
				t.Fatalf("InsertTableEntry: %v", err)
			}
			want := route(b(1, 0, 0), 16, b(5)).GetTableEntry()
			want.Action.GetAction().Params[1].Value, want.Action.GetAction().Params[2].Value = b(0x5e, 0, 1, 2), b(2, 0, 0, 0, 0, 3)
			got, err := c.readTableEntry(ctx, rt, []stockMatch{stockLPM{stockIP("0.1.0.0"), 16}})
			if err != nil {
				t.Fatalf("ReadTableEntry: %v", err)
			}
			equal(t, "entry read back (canonical)", got, want)
			if all, err := c.readTableEntryWildcard(ctx, rt); err != nil || len(all) != 1 || !proto.Equal(all[0], want) {
				t.Fatalf("ReadTableEntryWildcard: %v %v", all, err)
			}
			// ModifyTableEntry to drop; DeleteTableEntry without action.
			if err := c.write(ctx, p4v1.Update_MODIFY, tableEntity(c.newTableEntry(rt, lpmOf("0.1.0.0", 16), c.tableActionDirect("FastcnpIngress.drop", nil), nil))); err != nil {
				t.Fatalf("ModifyTableEntry: %v", err)
			}
			if got, err := c.readTableEntry(ctx, rt, []stockMatch{stockLPM{stockIP("0.1.0.0"), 16}}); err != nil || got.GetAction().GetAction().GetActionId() != c.actionID("FastcnpIngress.drop") {
				t.Fatalf("after modify: %v %v", got, err)
			}
			if err := c.write(ctx, p4v1.Update_DELETE, tableEntity(c.newTableEntry(rt, lpmOf("0.1.0.0", 16), nil, nil))); err != nil {
				t.Fatalf("DeleteTableEntry: %v", err)
			}
			if all, err := c.readTableEntryWildcard(ctx, rt); err != nil || len(all) != 0 {
				t.Fatalf("after delete: %v %v", all, err)
			}

			// Ternary with options.Priority; ReadTableEntry sends no priority.
			const tc = "FastcnpIngress.traffic_class"
			tcAction := c.tableActionDirect("FastcnpIngress.set_traffic_class", [][]byte{stockUInt32ToBinary(3, 3), stockUInt32ToBinary(1, 3)})
			tcMatch := func() map[string]stockMatch {
				return map[string]stockMatch{"vlan_valid": stockExact{stockUInt32ToBinary(0, 3)}, "pcp": stockTernary{b(0, 5), b(0, 7)}}
			}
			for _, prio := range []int32{10, 20} {
				if err := c.write(ctx, p4v1.Update_INSERT, tableEntity(c.newTableEntry(tc, tcMatch(), tcAction, &stockEntryOptions{priority: prio}))); err != nil {
					t.Fatalf("insert ternary entry priority %d: %v", prio, err)
				}
			}
			got2, err := c.readEntities(ctx, tableEntity(&p4v1.TableEntry{TableId: c.tableID(tc), Match: []*p4v1.FieldMatch{
				stockExact{stockUInt32ToBinary(0, 3)}.get(1, canonical), stockTernary{b(0, 5), b(0, 7)}.get(2, canonical)}}))
			if err != nil || len(got2) != 2 {
				t.Fatalf("read of a ternary key without priority: %d entities, %v", len(got2), err)
			}
			if err := c.write(ctx, p4v1.Update_DELETE, tableEntity(c.newTableEntry(tc, tcMatch(), nil, &stockEntryOptions{priority: 20}))); err != nil {
				t.Fatalf("delete ternary entry: %v", err)
			}
			got3, err := c.readTableEntry(ctx, tc, []stockMatch{stockExact{stockUInt32ToBinary(0, 3)}, stockTernary{b(0, 5), b(0, 7)}})
			if err != nil || got3.GetPriority() != 10 {
				t.Fatalf("ReadTableEntry of the ternary entry: %v %v", got3, err)
			}

			// Default entry: set (l2_switch's "broadcast" default) and reset.
			const l2 = "FastcnpIngress.l2_forward"
			defKey := tableEntity(&p4v1.TableEntry{TableId: c.tableID(l2), IsDefaultAction: true})
			if err := c.write(ctx, p4v1.Update_MODIFY, tableEntity(c.newTableEntry(l2, nil, c.tableActionDirect("FastcnpIngress.l2_flood", [][]byte{stockUInt32ToBinary(1, 2)}), nil))); err != nil {
				t.Fatalf("set default entry: %v", err)
			}
			d, err := c.readEntitySingle(ctx, defKey)
			if err != nil || !proto.Equal(d.GetTableEntry().GetAction(), act(c.actionID("FastcnpIngress.l2_flood"), param(1, b(1)))) {
				t.Fatalf("default entry: %v %v", d, err)
			}
			if err := c.write(ctx, p4v1.Update_MODIFY, tableEntity(c.newTableEntry(l2, nil, nil, nil))); err != nil {
				t.Fatalf("reset default entry: %v", err)
			}
			if d, err := c.readEntitySingle(ctx, defKey); err != nil || d.GetTableEntry().GetAction().GetAction().GetActionId() != c.actionID("FastcnpIngress.drop") {
				t.Fatalf("reset default entry: %v %v", d, err)
			}

			// LpmMatch with PLen 0: the client sends the field; the spec wants it omitted.
			err = c.write(ctx, p4v1.Update_INSERT, tableEntity(c.newTableEntry(rt, lpmOf("0.0.0.0", 0), c.tableActionDirect("FastcnpIngress.drop", nil), nil)))
			if got := updateErrors(t, err); len(got) != 1 || got[0] != codes.InvalidArgument {
				t.Fatalf("LPM prefix_len 0: %v, want INVALID_ARGUMENT", err)
			}
		})
	}
}

// TestStockClientActionProfiles: one-shot action sets as AddAction builds them, and
// members, groups and entries that run them.
func TestStockClientActionProfiles(t *testing.T) {
	// Spec 9.2.2: "If `watch_port` is empty, then the member is always included in
	// the selection [...] If the target does not support using the SDN port as a
	// watch port [...] the server must return `UNIMPLEMENTED`." Spec 9.2.3: "an
	// implementation must answer `ReadRequest`s with the original one shot messages."
	_, c, _ := stockReady(t, true)
	ctx := ctxT(t)
	const nhg, nhs, setNH = "FastcnpIngress.next_hop_group_select", "FastcnpIngress.next_hop_selector", "FastcnpIngress.set_nexthop"
	params := func(port uint32) [][]byte {
		return [][]byte{stockUInt32ToBinary(port, 2), stockMAC("02:00:00:00:00:01"), stockMAC("02:00:00:00:00:02")}
	}
	group := func(id uint32) map[string]stockMatch {
		return map[string]stockMatch{"group_id": stockExact{stockUInt32ToBinary(id, 2)}}
	}
	readAction := func(id uint32) *p4v1.TableAction {
		t.Helper()
		e, err := c.readTableEntry(ctx, nhg, []stockMatch{stockExact{stockUInt32ToBinary(id, 2)}})
		if err != nil {
			t.Fatalf("ReadTableEntry group_id %d: %v", id, err)
		}
		return e.GetAction()
	}
	// A zero Port: watch_port set to the empty bytestring.
	set := c.newActionSet().addAction(setNH, params(3), 12, stockPort{}).addAction(setNH, params(4), 11, stockPort{})
	if err := c.write(ctx, p4v1.Update_INSERT, tableEntity(c.newTableEntry(nhg, group(7), set.action, nil))); err != nil {
		t.Fatalf("insert one-shot with empty watch ports: %v", err)
	}
	wantSet := oneShot(0,
		&p4v1.ActionProfileAction{Action: nhAct(3).GetAction(), Weight: 12, WatchKind: &p4v1.ActionProfileAction_WatchPort{WatchPort: []byte{}}},
		&p4v1.ActionProfileAction{Action: nhAct(4).GetAction(), Weight: 11, WatchKind: &p4v1.ActionProfileAction_WatchPort{WatchPort: []byte{}}})
	for _, a := range wantSet.GetActionProfileActionSet().GetActionProfileActions() {
		a.Action.Params[1].Value, a.Action.Params[2].Value = b(2, 0, 0, 0, 0, 1), b(2, 0, 0, 0, 0, 2)
	}
	equal(t, "one-shot read back", readAction(7), wantSet)
	// cmd/wcmp's NewPortFromInt(1): a real watch port; this target has no port liveness.
	wcmp := c.newActionSet().addAction(setNH, params(3), 12, stockPortFromInt(1))
	if got := updateErrors(t, c.write(ctx, p4v1.Update_INSERT, tableEntity(c.newTableEntry(nhg, group(8), wcmp.action, nil)))); len(got) != 1 || got[0] != codes.Unimplemented {
		t.Fatalf("one-shot with watch port 1: %v, want UNIMPLEMENTED", got)
	}
	// cmd/wcmp's deleteOneGroup: the entry without action.
	if err := c.write(ctx, p4v1.Update_DELETE, tableEntity(c.newTableEntry(nhg, group(7), nil, nil))); err != nil {
		t.Fatalf("delete one-shot entry: %v", err)
	}

	// Members and groups (the profile holds no one-shot any more).
	apID := c.actionProfileID(nhs)
	member := func(id, port uint32) *p4v1.Entity {
		return &p4v1.Entity{Entity: &p4v1.Entity_ActionProfileMember{ActionProfileMember: &p4v1.ActionProfileMember{
			ActionProfileId: apID, MemberId: id, Action: c.newAction(setNH, params(port))}}}
	}
	grp := &p4v1.Entity{Entity: &p4v1.Entity_ActionProfileGroup{ActionProfileGroup: &p4v1.ActionProfileGroup{ActionProfileId: apID, GroupId: 10,
		Members: []*p4v1.ActionProfileGroup_Member{{MemberId: 1, Weight: 1}, {MemberId: 2, Weight: 3}}, MaxSize: 16}}}
	for _, u := range []struct {
		t p4v1.Update_Type
		e *p4v1.Entity
	}{
		{p4v1.Update_INSERT, member(1, 3)}, {p4v1.Update_INSERT, member(2, 4)}, {p4v1.Update_INSERT, grp},
		{p4v1.Update_INSERT, tableEntity(c.newTableEntry(nhg, group(7), c.tableActionGroup(10), nil))},
		{p4v1.Update_INSERT, tableEntity(c.newTableEntry(nhg, group(8), c.tableActionMember(2), nil))},
		{p4v1.Update_MODIFY, member(1, 6)},
	} {
		if err := c.write(ctx, u.t, u.e); err != nil {
			t.Fatalf("%v %v: %v", u.t, u.e, err)
		}
	}
	equal(t, "entry running the group", readAction(7), c.tableActionGroup(10))
	equal(t, "entry running a member", readAction(8), c.tableActionMember(2))
	gotGroup, err := c.readEntitySingle(ctx, &p4v1.Entity{Entity: &p4v1.Entity_ActionProfileGroup{ActionProfileGroup: &p4v1.ActionProfileGroup{ActionProfileId: apID, GroupId: 10}}})
	if err != nil || !proto.Equal(gotGroup, grp) {
		t.Fatalf("group read back: %v %v", gotGroup, err)
	}
	gotMember, err := c.readEntitySingle(ctx, &p4v1.Entity{Entity: &p4v1.Entity_ActionProfileMember{ActionProfileMember: &p4v1.ActionProfileMember{ActionProfileId: apID, MemberId: 1}}})
	wantAction := &p4v1.Action{ActionId: c.actionID(setNH), Params: []*p4v1.Action_Param{param(1, b(6)), param(2, b(2, 0, 0, 0, 0, 1)), param(3, b(2, 0, 0, 0, 0, 2))}}
	if err != nil || !proto.Equal(gotMember.GetActionProfileMember().GetAction(), wantAction) {
		t.Fatalf("member read back (canonical): %v %v", gotMember, err)
	}
	// A one-shot cannot join a profile programmed with members and groups.
	if got := updateErrors(t, c.write(ctx, p4v1.Update_INSERT, tableEntity(c.newTableEntry(nhg, group(9), set.action, nil)))); len(got) != 1 || got[0] != codes.InvalidArgument {
		t.Fatalf("one-shot beside members: %v, want INVALID_ARGUMENT", got)
	}
}

// TestStockClientCountersPREDigestsPackets: the client's counter, PRE and digest
// helpers, a packet-out built with its conversion helpers, a register read.
func TestStockClientCountersPREDigestsPackets(t *testing.T) {
	// Spec 9.3.2: "Otherwise, if the `index` field is not set, the server returns the
	// counter values for all indirect counters in the array identified by the unique
	// id `counter_id`." Changes in v1.4.0: "In message `Replica`, replaced primitive
	// field `uint32 egress_port` in a compatible manner with new `oneof port_kind`"
	// (the old field is still valid). Spec 16.1 (Packet I/O): "`PacketMetadata.value`
	// must be a binary string of the specified bit width conforming to the
	// Bytestrings [...] requirements", and spec 8.3: "Upon receiving a binary string,
	// the P4Runtime receiver [...] does not impose any restrictions on the maximum
	// length of the string itself."
	h, c, sc := stockReady(t, true)
	ctx := ctxT(t)
	const cnt = "FastcnpIngress.dropped"
	data := &p4v1.CounterData{ByteCount: 1500, PacketCount: 2}
	if err := c.modifyCounterEntry(ctx, cnt, 3, data); err != nil {
		t.Fatalf("ModifyCounterEntry: %v", err)
	}
	if got, err := c.readCounterEntry(ctx, cnt, 3); err != nil || !proto.Equal(got, data) {
		t.Fatalf("ReadCounterEntry: %v %v", got, err)
	}
	all, err := c.readCounterEntryWildcard(ctx, cnt)
	if err != nil || len(all) != int(c.p4Info.GetCounters()[0].GetSize()) || !proto.Equal(all[3], data) || all[2].GetPacketCount() != 0 {
		t.Fatalf("ReadCounterEntryWildcard: %d cells, %v", len(all), err)
	}

	// PRE: InsertMulticastGroup / DeleteMulticastGroup, InsertCloneSession /
	// DeleteCloneSession (egress_port replicas, instance = position).
	if err := c.insertMulticastGroup(ctx, 1, []uint32{1, 2, 3}); err != nil {
		t.Fatalf("InsertMulticastGroup: %v", err)
	}
	mg, err := c.readEntitySingle(ctx, stockPRE(&p4v1.PacketReplicationEngineEntry{Type: &p4v1.PacketReplicationEngineEntry_MulticastGroupEntry{
		MulticastGroupEntry: &p4v1.MulticastGroupEntry{MulticastGroupId: 1}}}))
	if err != nil || len(mg.GetPacketReplicationEngineEntry().GetMulticastGroupEntry().GetReplicas()) != 3 ||
		mg.GetPacketReplicationEngineEntry().GetMulticastGroupEntry().GetReplicas()[2].GetEgressPort() != 3 {
		t.Fatalf("multicast group read back: %v %v", mg, err)
	}
	if err := c.deleteMulticastGroup(ctx, 1); err != nil {
		t.Fatalf("DeleteMulticastGroup: %v", err)
	}
	if err := c.insertCloneSession(ctx, 60, []uint32{3}); err != nil {
		t.Fatalf("InsertCloneSession: %v", err)
	}
	if err := c.deleteCloneSession(ctx, 60); err != nil {
		t.Fatalf("DeleteCloneSession: %v", err)
	}
	// This target's clone sessions have one replica.
	if got := updateErrors(t, c.insertCloneSession(ctx, 61, []uint32{3, 4})); len(got) != 1 || got[0] != codes.InvalidArgument {
		t.Fatalf("clone session of two ports: %v", got)
	}

	// EnableDigest (INSERT), ModifyDigest, DisableDigest (DELETE), as in cmd/l2_switch.
	const dg = "port_state_digest_t"
	cfg := &p4v1.DigestEntry_Config{MaxTimeoutNs: 0, MaxListSize: 1, AckTimeoutNs: time.Second.Nanoseconds()}
	for _, step := range []struct {
		t   p4v1.Update_Type
		cfg *p4v1.DigestEntry_Config
	}{{p4v1.Update_INSERT, cfg}, {p4v1.Update_MODIFY, cfg}, {p4v1.Update_DELETE, nil}} {
		if err := c.digest(ctx, step.t, dg, step.cfg); err != nil {
			t.Fatalf("digest %v: %v", step.t, err)
		}
	}

	// SendPacketOut of a PacketOut built with UInt32ToBinary (padded values).
	frame := ethFrame(9)
	sc.send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Packet{Packet: &p4v1.PacketOut{Payload: frame,
		Metadata: []*p4v1.PacketMetadata{{MetadataId: 1, Value: stockUInt32ToBinary(5, 2)}, {MetadataId: 2, Value: stockUInt32ToBinary(0, 3)}}}}})
	h.expectForward(t, 5, frame)

	// No register helper: ReadEntitySingle of a RegisterEntry with an index.
	reg := pipeline.ProgramSchema().Registers[0]
	e, err := c.readEntitySingle(ctx, &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{RegisterId: reg.ID, Index: &p4v1.Index{Index: 4}}}})
	if err != nil || e.GetRegisterEntry().GetIndex().GetIndex() != 4 || e.GetRegisterEntry().GetData().GetBitstring() == nil {
		t.Fatalf("register read: %v %v", e, err)
	}
	if _, err := c.readEntitySingle(ctx, &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{RegisterId: reg.ID,
		Index: &p4v1.Index{Index: int64(reg.Size)}}}}); status.Code(err) != codes.Unknown {
		t.Fatalf("register read out of range: %v, want UNKNOWN (per-request OUT_OF_RANGE)", err)
	}
}
