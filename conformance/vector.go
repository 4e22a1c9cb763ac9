package conformance

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/fastcnp/fastcnp/controller/p4rt"
	"github.com/fastcnp/fastcnp/model/pipeline"
	"github.com/fastcnp/fastcnp/p4src"
	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
)

// Op is the kind of a statement.
type Op int

// Statement kinds: control-plane writes, events, expectations.
const (
	OpTable           Op = iota + 1 // table entry insert
	OpDefault                       // default action
	OpClone                         // clone session
	OpMulticast                     // multicast group of the packet replication engine
	OpValueSet                      // parser value set members
	OpDigest                        // digest config (every digest at once, lists of one)
	OpWindowTables                  // the window generator's entries
	OpAt                            // absolute time
	OpWait                          // relative time
	OpIn                            // packet received on a port
	OpPacketOut                     // packet from the controller
	OpDequeue                       // dequeue from a port's queue (Go target)
	OpFlush                         // dequeue every queue until empty (Go target)
	OpExpectOut                     // packet out on a port
	OpExpectCPU                     // packet to the controller
	OpExpectNoPackets               // no unmatched output so far
	OpExpectDigest                  // digest
	OpExpectNoDigests               // no unmatched digest so far
	OpExpectCounter                 // counter cell
	OpExpectRegister                // register cell
	OpMember                        // action profile member insert
	OpGroup                         // action profile group insert
	OpDeleteMember                  // action profile member delete
	OpDeleteGroup                   // action profile group delete
	OpRegister                      // register cell write (a control-plane preset)
)

// RefusalCodes are the canonical codes a "refused CODE" write may name.
var RefusalCodes = []string{"INVALID_ARGUMENT", "NOT_FOUND", "ALREADY_EXISTS", "RESOURCE_EXHAUSTED",
	"FAILED_PRECONDITION", "PERMISSION_DENIED"}

// Features a vector may require (@requires). The Go target supports those of the
// profile it models (GoFeaturesFor); the BMv2 runner supports "v1model-state" and, when
// BMv2's Thrift CLI (simple_switch_CLI) works (or the switch implements registers over
// P4Runtime), "registers", and "inc-flow-ways", none of the others.
var Features = map[string]string{
	"registers":       "register writes and reads (BMv2's P4Runtime server cannot do them; the BMv2 runner makes them through simple_switch_CLI, or over P4Runtime on a switch that can, and neither works here)",
	"dequeue-control": "the vector decides when packets leave their queue (BMv2's traffic manager decides)",
	"exact-timing":    "exact nanosecond timestamps (BMv2 has microseconds and its own clock)",
	"pfc-timing":      "PFC pause expiry at an exact time (BMv2 neither obeys PFC nor lets time be set)",
	"value-set":       "parser value set writes (PI's P4Runtime server answers ValueSetEntry with UNIMPLEMENTED, behavioral-model issue #854)",
	"selector-hash":   "which member of an ECMP group of several a flow takes (BMv2 picks hash % size over its own member handles, in an order PI decides)",
	"refusal-codes":   "the canonical code of a refused write (PI's differ for action profiles: Unknown for deleting a member or group in use, InvalidArgument for an entry naming a missing group; docs/conformance.md)",
	"v1model-state":   "the v1model program's data-plane state: queue and per-flow bytes counted by the program, a pause ended by its expiry time, 48-bit times (BMv2 and fastcnp-switch run that program; the Tofino program keeps its state differently, docs/tofino.md)",
	"tofino-state":    "the Tofino program's data-plane state: queue depth in traffic-manager cells, pauses inferred from departure gaps or framed by PFC frames and closed at the next departure, departure shares, 32-bit times (docs/tofino.md; the Go model's Tofino profiles)",
	"inc-flow-ways":   "several data flows per connection in the INC data-flow map (v1model keeps INC_FLOW_WAYS; the Tofino program one, docs/tofino.md)",
	"inc-done-slots":  "an INC slot remembers a completed aggregation for the slot timeout and drops its late copies (v1model; the Tofino program frees the slot at once, docs/tofino.md)",
	"tofino1":         "Tofino 1's 80-byte traffic-manager cells (the Go model's tofino1 profile)",
	"tofino2":         "Tofino 2's 176-byte traffic-manager cells (the Go model's tofino2 profile)",
}

// MatchValue is one resolved match field of a table write.
type MatchValue struct {
	Field     string
	FieldID   uint32
	Bitwidth  int
	Kind      p4configv1.MatchField_MatchType
	Value     uint64
	Mask      uint64 // ternary
	PrefixLen int32  // LPM
}

// ParamValue is one resolved action parameter.
type ParamValue struct {
	Name     string
	ID       uint32
	Bitwidth int
	Value    uint64
}

// Stmt is one statement of a vector, with names resolved against the P4Info.
type Stmt struct {
	File string
	Line int
	Op   Op

	// OpTable, OpDefault.
	Table    string
	TableID  uint32
	Match    []MatchValue
	Priority int32
	Action   string
	ActionID uint32
	Params   []ParamValue

	// Object name and ID: OpValueSet, OpExpectDigest, OpExpectCounter, OpRegister,
	// OpExpectRegister (registers: the P4Info name, which is BMv2's name too).
	Name  string
	ID    uint32
	Index int
	// OpValueSet members; OpExpectCounter packets/bytes (-1 = don't care);
	// OpRegister, OpExpectRegister: the value.
	Values []uint64
	// Fields of OpExpectDigest (only those given are compared).
	Fields []KV

	// Port: OpIn, OpDequeue (Count packets, 0 = 1), OpExpectOut, OpPacketOut (egress
	// port), OpClone (replica port), OpExpectCPU (ingress_port, Reason).
	Port    uint16
	Count   int
	Session uint32
	Reason  uint8

	// OpMulticast: the group ID and its replicas' ports (instance 0 each), in order.
	Group uint32
	Ports []uint16

	// Time: OpAt (absolute), OpWait (relative), ns.
	Time int64

	Packet *Packet

	// Action profiles. OpMember (with Action, ActionID, Params), OpGroup,
	// OpDeleteMember, OpDeleteGroup: the profile and the member or group ID;
	// OpGroup: its members and weights, and max_size. OpTable of a table with an
	// action selector: the member (RefMember) or group (RefGroup) it runs.
	Profile      string
	ProfileID    uint32
	ObjectID     uint32
	GroupMembers []GroupMember
	MaxSize      int32
	RefMember    uint32
	RefGroup     uint32

	// Refused is the canonical code (RefusalCodes) the write must be refused with;
	// "" when it must succeed.
	Refused string
}

// GroupMember is a member of an action profile group with its weight.
type GroupMember struct {
	ID     uint32
	Weight int32
}

// Where returns "file:line".
func (s *Stmt) Where() string { return fmt.Sprintf("%s:%d", s.File, s.Line) }

// Vector is one conformance vector: tags and the statements in order.
type Vector struct {
	Name     string // file name without extension
	File     string
	Doc      []string
	Requires []string
	GoOnly   string // reason; "" when the vector is target-neutral
	Stmts    []Stmt
}

// SkipReason returns why a target supporting the given features cannot run v ("" if
// it can). The BMv2 runner passes no features.
func (v *Vector) SkipReason(supported map[string]bool) string {
	if v.GoOnly != "" && !supported["go-only"] {
		return "go-only: " + v.GoOnly
	}
	for _, f := range v.Requires {
		if !supported[f] {
			return "requires " + f + ": " + Features[f]
		}
	}
	return ""
}

// ParseError is a vector syntax or resolution error at a line.
type ParseError struct {
	File string
	Line int
	Err  error
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }
func (e *ParseError) Unwrap() error { return e.Err }

// Program returns the P4Info index of the fastcnp program (p4src), which vectors are
// resolved against.
func Program() (*p4rt.Info, error) {
	p, err := p4src.P4Info()
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	in, err := p4rt.NewInfo(p)
	if err != nil {
		return nil, fmt.Errorf("conformance: index P4Info: %w", err)
	}
	return in, nil
}

// LoadDir parses every *.vec file of dir, sorted by name.
func LoadDir(dir string, info *p4rt.Info) ([]*Vector, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.vec"))
	if err != nil {
		return nil, fmt.Errorf("conformance: list %s: %w", dir, err)
	}
	sort.Strings(files)
	var out []*Vector
	for _, f := range files {
		v, err := ParseFile(f, info)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// ParseFile parses one vector file (includes are relative to its directory).
func ParseFile(path string, info *p4rt.Info) (*Vector, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	return Parse(name, path, src, info)
}

// Parse parses the text of a vector named name read from file (for error messages
// and includes).
func Parse(name, file string, src []byte, info *p4rt.Info) (*Vector, error) {
	p := &parser{info: info, v: &Vector{Name: name, File: file}}
	if err := p.parse(file, src, 0); err != nil {
		return nil, err
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	return p.v, nil
}

type parser struct {
	info *p4rt.Info
	v    *Vector
	file string
	line int
}

func (p *parser) errf(format string, a ...any) error {
	return &ParseError{File: p.file, Line: p.line, Err: fmt.Errorf(format, a...)}
}

func (p *parser) parse(file string, src []byte, depth int) error {
	if depth > 4 {
		return &ParseError{File: file, Err: errors.New("includes nested too deep")}
	}
	sc := bufio.NewScanner(bytes.NewReader(src))
	line, pending, start := 0, "", 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if i := strings.Index(text, "#"); i >= 0 {
			text = text[:i]
		}
		text = strings.TrimSpace(text)
		if strings.HasSuffix(text, "\\") {
			if pending == "" {
				start = line
			}
			pending += strings.TrimSuffix(text, "\\") + " "
			continue
		}
		if pending != "" {
			text, pending = pending+text, ""
		} else {
			start = line
		}
		if text == "" {
			continue
		}
		p.file, p.line = file, start
		if err := p.stmt(text, depth); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return &ParseError{File: file, Line: line, Err: err}
	}
	if pending != "" {
		return &ParseError{File: file, Line: line, Err: errors.New("file ends with a continuation line")}
	}
	return nil
}

// kvs splits key=value words; a word without '=' is an error.
func (p *parser) kvs(words []string) ([]KV, error) {
	out := make([]KV, 0, len(words))
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" || v == "" {
			return nil, p.errf("want key=value, got %q", w)
		}
		out = append(out, KV{k, v})
	}
	return out, nil
}

// takeNums reads the named numeric keys of kv (all required unless listed in opt);
// any other key is an error.
func (p *parser) takeNums(kv []KV, req []string, opt ...string) (map[string]uint64, error) {
	out := map[string]uint64{}
	allowed := map[string]bool{}
	for _, k := range append(append([]string{}, req...), opt...) {
		allowed[k] = true
	}
	for _, x := range kv {
		if !allowed[x.Key] {
			return nil, p.errf("unknown key %q", x.Key)
		}
		v, err := ParseValue(x.Value)
		if err != nil {
			return nil, p.errf("%s: %v", x.Key, err)
		}
		out[x.Key] = v
	}
	for _, k := range req {
		if _, ok := out[k]; !ok {
			return nil, p.errf("missing %s=", k)
		}
	}
	return out, nil
}

func (p *parser) add(s Stmt) {
	s.File, s.Line = p.file, p.line
	p.v.Stmts = append(p.v.Stmts, s)
}

func (p *parser) stmt(text string, depth int) error {
	w := strings.Fields(text)
	switch w[0] {
	case "@doc":
		p.v.Doc = append(p.v.Doc, strings.TrimSpace(strings.TrimPrefix(text, "@doc")))
	case "@requires":
		if len(w) < 2 {
			return p.errf("@requires needs a feature")
		}
		for _, f := range w[1:] {
			if _, ok := Features[f]; !ok {
				return p.errf("unknown feature %q (known: %s)", f, strings.Join(featureNames(), ", "))
			}
			p.v.Requires = append(p.v.Requires, f)
		}
	case "@go-only":
		r := strings.TrimSpace(strings.TrimPrefix(text, "@go-only"))
		if !strings.HasPrefix(r, "reason=") {
			return p.errf(`@go-only needs reason="..."`)
		}
		r = strings.Trim(strings.TrimPrefix(r, "reason="), `"`)
		if r == "" {
			return p.errf("@go-only with an empty reason")
		}
		p.v.GoOnly = r
	case "include":
		if len(w) != 2 {
			return p.errf("include takes one path")
		}
		path := filepath.Join(filepath.Dir(p.file), w[1])
		src, err := os.ReadFile(path)
		if err != nil {
			return p.errf("include: %v", err)
		}
		file, line := p.file, p.line
		if err := p.parse(path, src, depth+1); err != nil {
			return err
		}
		p.file, p.line = file, line
	case "table", "default":
		return p.table(w)
	case "member":
		return p.member(w)
	case "group":
		return p.group(w)
	case "delete":
		return p.deleteObject(w)
	case "refused":
		if len(w) < 3 || !slices.Contains(RefusalCodes, w[1]) {
			return p.errf("refused CODE WRITE (CODE one of %s)", strings.Join(RefusalCodes, ", "))
		}
		n := len(p.v.Stmts)
		if err := p.stmt(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(text, "refused")), w[1])), depth); err != nil {
			return err
		}
		if len(p.v.Stmts) != n+1 || !IsWriteOp(p.v.Stmts[n].Op) {
			return p.errf("refused applies to one write statement")
		}
		p.v.Stmts[n].Refused = w[1]
	case "clone":
		kv, err := p.kvs(w[1:])
		if err != nil {
			return err
		}
		n, err := p.takeNums(kv, []string{"session", "port"})
		if err != nil {
			return err
		}
		if n["port"] >= p4src.NumPorts {
			return p.errf("clone port %d >= %d", n["port"], p4src.NumPorts)
		}
		p.add(Stmt{Op: OpClone, Session: uint32(n["session"]), Port: uint16(n["port"])})
	case "multicast":
		return p.multicast(w)
	case "valueset":
		if len(w) < 2 {
			return p.errf("valueset NAME VALUE...")
		}
		id, err := p.info.ValueSetID(w[1])
		if err != nil {
			return p.errf("%v", err)
		}
		s := Stmt{Op: OpValueSet, Name: w[1], ID: id}
		for _, x := range w[2:] {
			v, err := ParseValue(x)
			if err == nil {
				err = fitWidth(v, 16)
			}
			if err != nil {
				return p.errf("valueset member: %v", err)
			}
			s.Values = append(s.Values, v)
		}
		p.add(s)
	case "digest":
		if len(w) != 2 {
			return p.errf("digest NAME")
		}
		id, err := p.info.DigestID(w[1])
		if err != nil {
			return p.errf("%v", err)
		}
		p.add(Stmt{Op: OpDigest, Name: w[1], ID: id})
	case "window-tables":
		if len(w) != 1 {
			return p.errf("window-tables takes no argument")
		}
		p.add(Stmt{Op: OpWindowTables})
	case "at", "wait":
		if len(w) != 2 {
			return p.errf("%s NS", w[0])
		}
		v, err := ParseValue(w[1])
		if err != nil || v >= 1<<62 {
			return p.errf("%s: bad time %q", w[0], w[1])
		}
		op := OpAt
		if w[0] == "wait" {
			op = OpWait
		}
		p.add(Stmt{Op: op, Time: int64(v)})
	case "in", "packetout":
		return p.packetEvent(w)
	case "dequeue":
		kv, err := p.kvs(w[1:])
		if err != nil {
			return err
		}
		n, err := p.takeNums(kv, []string{"port"}, "count")
		if err != nil {
			return err
		}
		if n["port"] >= p4src.NumPorts {
			return p.errf("port %d >= %d", n["port"], p4src.NumPorts)
		}
		c := int(n["count"])
		if c == 0 {
			c = 1
		}
		p.add(Stmt{Op: OpDequeue, Port: uint16(n["port"]), Count: c})
	case "flush":
		p.add(Stmt{Op: OpFlush})
	case "register":
		return p.register(w)
	case "expect":
		return p.expect(w)
	default:
		return p.errf("unknown statement %q", w[0])
	}
	return nil
}

// multicast parses "multicast group=G ports=P,P,...": a multicast group whose replicas
// are the ports given (instance 0 each; no port twice).
func (p *parser) multicast(w []string) error {
	if len(w) != 3 || !strings.HasPrefix(w[1], "group=") || !strings.HasPrefix(w[2], "ports=") {
		return p.errf("multicast group=G ports=P,P,...")
	}
	g, err := ParseValue(strings.TrimPrefix(w[1], "group="))
	if err == nil {
		err = fitWidth(g, 32)
	}
	if err != nil || g == 0 {
		return p.errf("multicast: bad group %q (1 .. 2^32-1)", strings.TrimPrefix(w[1], "group="))
	}
	s := Stmt{Op: OpMulticast, Group: uint32(g)}
	seen := map[uint64]bool{}
	for _, x := range strings.Split(strings.TrimPrefix(w[2], "ports="), ",") {
		v, err := ParseValue(x)
		if err != nil || v >= p4src.NumPorts {
			return p.errf("multicast: bad port %q (0 .. %d)", x, p4src.NumPorts-1)
		}
		if seen[v] {
			return p.errf("multicast: port %d given twice", v)
		}
		seen[v] = true
		s.Ports = append(s.Ports, uint16(v))
	}
	p.add(s)
	return nil
}

// table parses "table T k=v... [priority=N] -> A p=v..." and "default T -> A p=v...".
func (p *parser) table(w []string) error {
	arrow := -1
	for i, x := range w {
		if x == "->" {
			arrow = i
			break
		}
	}
	if len(w) < 2 || arrow < 2 || arrow+1 >= len(w) {
		return p.errf("%s TABLE [key=value...] -> ACTION [param=value...]", w[0])
	}
	s := Stmt{Op: OpTable, Table: w[1]}
	if w[0] == "default" {
		s.Op = OpDefault
		if arrow != 2 {
			return p.errf("a default action has no match fields")
		}
	}
	var err error
	if s.TableID, err = p.info.TableID(s.Table); err != nil {
		return p.errf("%v", err)
	}
	keys, err := p.kvs(w[2:arrow])
	if err != nil {
		return err
	}
	for _, k := range keys {
		if k.Key == "priority" {
			v, err := strconv.ParseInt(k.Value, 0, 32)
			if err != nil || v <= 0 {
				return p.errf("priority %q: want a positive integer", k.Value)
			}
			s.Priority = int32(v)
			continue
		}
		m, err := p.match(s.Table, k)
		if err != nil {
			return err
		}
		s.Match = append(s.Match, m)
	}
	// An entry of a table with an action selector runs a member or a group.
	if ref, id, ok := strings.Cut(w[arrow+1], "="); ok && (ref == "member" || ref == "group") && s.Op == OpTable {
		if len(w) != arrow+2 {
			return p.errf("-> %s=ID takes nothing else", ref)
		}
		v, err := ParseValue(id)
		if err == nil {
			err = fitWidth(v, 32)
		}
		if err != nil || v == 0 {
			return p.errf("%s ID %q: want 1 .. 2^32-1", ref, id)
		}
		if ref == "member" {
			s.RefMember = uint32(v)
		} else {
			s.RefGroup = uint32(v)
		}
		p.add(s)
		return nil
	}
	if s.Action, s.ActionID, s.Params, err = p.action(w[arrow+1], w[arrow+2:]); err != nil {
		return err
	}
	p.add(s)
	return nil
}

// action parses "ACTION param=value..." (every parameter given).
func (p *parser) action(name string, words []string) (string, uint32, []ParamValue, error) {
	id, err := p.info.ActionID(name)
	if err != nil {
		return "", 0, nil, p.errf("%v", err)
	}
	params, err := p.kvs(words)
	if err != nil {
		return "", 0, nil, err
	}
	var out []ParamValue
	seen := map[uint32]bool{}
	for _, k := range params {
		f, err := p.info.ActionParam(name, k.Key)
		if err != nil {
			return "", 0, nil, p.errf("%v", err)
		}
		v, err := ParseValue(k.Value)
		if err == nil {
			err = fitWidth(v, f.Bitwidth)
		}
		if err != nil {
			return "", 0, nil, p.errf("param %s: %v", k.Key, err)
		}
		seen[f.ID] = true
		out = append(out, ParamValue{Name: f.Name, ID: f.ID, Bitwidth: f.Bitwidth, Value: v})
	}
	act, err := p.actionInfo(id)
	if err != nil {
		return "", 0, nil, err
	}
	for _, prm := range act.Params {
		if !seen[prm.Id] {
			return "", 0, nil, p.errf("action %s: missing param %s", act.Preamble.Name, prm.Name)
		}
	}
	return name, id, out, nil
}

// profileID parses "PROFILE id=N" at the start of words; it returns the rest.
func (p *parser) profileObject(stmt string, words []string) (Stmt, []string, error) {
	if len(words) < 2 || !strings.HasPrefix(words[1], "id=") {
		return Stmt{}, nil, p.errf("%s PROFILE id=N ...", stmt)
	}
	s := Stmt{Profile: words[0]}
	var err error
	if s.ProfileID, err = p.info.ActionProfileID(words[0]); err != nil {
		return s, nil, p.errf("%v", err)
	}
	v, err := ParseValue(strings.TrimPrefix(words[1], "id="))
	if err == nil {
		err = fitWidth(v, 32)
	}
	if err != nil {
		return s, nil, p.errf("%s id %q: %v", stmt, words[1], err)
	}
	s.ObjectID = uint32(v)
	return s, words[2:], nil
}

// member parses "member PROFILE id=N -> ACTION param=value...".
func (p *parser) member(w []string) error {
	s, rest, err := p.profileObject("member", w[1:])
	if err != nil {
		return err
	}
	if len(rest) < 2 || rest[0] != "->" {
		return p.errf("member PROFILE id=N -> ACTION param=value...")
	}
	s.Op = OpMember
	if s.Action, s.ActionID, s.Params, err = p.action(rest[1], rest[2:]); err != nil {
		return err
	}
	p.add(s)
	return nil
}

// group parses "group PROFILE id=N members=ID[:WEIGHT],... [max_size=N]"
// (members=none: an empty group; a weight defaults to 1).
func (p *parser) group(w []string) error {
	s, rest, err := p.profileObject("group", w[1:])
	if err != nil {
		return err
	}
	s.Op = OpGroup
	kv, err := p.kvs(rest)
	if err != nil {
		return err
	}
	haveMembers := false
	for _, x := range kv {
		switch x.Key {
		case "max_size":
			v, err := ParseValue(x.Value)
			if err != nil || v > 1<<31-1 {
				return p.errf("max_size %q", x.Value)
			}
			s.MaxSize = int32(v)
		case "members":
			haveMembers = true
			if x.Value == "none" {
				continue
			}
			for _, m := range strings.Split(x.Value, ",") {
				id, wt, hasW := strings.Cut(m, ":")
				iv, err := ParseValue(id)
				wv := uint64(1)
				if err == nil && hasW {
					wv, err = ParseValue(wt)
				}
				if err != nil || iv > 1<<32-1 || wv > 1<<31-1 {
					return p.errf("group member %q: want ID[:WEIGHT]", m)
				}
				s.GroupMembers = append(s.GroupMembers, GroupMember{ID: uint32(iv), Weight: int32(wv)})
			}
		default:
			return p.errf("group: unknown key %q", x.Key)
		}
	}
	if !haveMembers {
		return p.errf("group PROFILE id=N members=ID[:WEIGHT],... (or members=none)")
	}
	p.add(s)
	return nil
}

// deleteObject parses "delete member PROFILE id=N" and "delete group PROFILE id=N".
func (p *parser) deleteObject(w []string) error {
	if len(w) != 4 || (w[1] != "member" && w[1] != "group") {
		return p.errf("delete member|group PROFILE id=N")
	}
	s, _, err := p.profileObject("delete "+w[1], w[2:])
	if err != nil {
		return err
	}
	s.Op = OpDeleteMember
	if w[1] == "group" {
		s.Op = OpDeleteGroup
	}
	p.add(s)
	return nil
}

// IsWriteOp reports whether op is a control-plane write.
func IsWriteOp(op Op) bool {
	switch op {
	case OpTable, OpDefault, OpClone, OpMulticast, OpValueSet, OpDigest, OpWindowTables,
		OpMember, OpGroup, OpDeleteMember, OpDeleteGroup:
		return true
	}
	return false
}

func featureNames() []string {
	names := make([]string, 0, len(Features))
	for f := range Features {
		names = append(names, f)
	}
	sort.Strings(names)
	return names
}

func (p *parser) actionInfo(id uint32) (*p4configv1.Action, error) {
	for _, a := range p.info.P4Info().GetActions() {
		if a.GetPreamble().GetId() == id {
			return a, nil
		}
	}
	return nil, p.errf("action %#x not in the P4Info", id)
}

// match parses one key: exact "v", LPM "v/len" (default: full width), ternary
// "v&&&mask" (default: all ones).
func (p *parser) match(table string, k KV) (MatchValue, error) {
	f, err := p.info.MatchField(table, k.Key)
	if err != nil {
		return MatchValue{}, p.errf("%v", err)
	}
	m := MatchValue{Field: f.Name, FieldID: f.ID, Bitwidth: f.Bitwidth, Kind: f.Match}
	val := k.Value
	switch f.Match {
	case p4configv1.MatchField_LPM:
		m.PrefixLen = int32(f.Bitwidth)
		if v, l, ok := strings.Cut(val, "/"); ok {
			n, err := strconv.Atoi(l)
			if err != nil || n < 1 || n > f.Bitwidth {
				return m, p.errf("%s: prefix length %q", k.Key, l)
			}
			val, m.PrefixLen = v, int32(n)
		}
	case p4configv1.MatchField_TERNARY:
		m.Mask = 1<<uint(f.Bitwidth) - 1
		if v, mk, ok := strings.Cut(val, "&&&"); ok {
			mv, err := ParseValue(mk)
			if err == nil {
				err = fitWidth(mv, f.Bitwidth)
			}
			if err != nil || mv == 0 {
				return m, p.errf("%s: mask %q (a zero mask is written by omitting the field)", k.Key, mk)
			}
			val, m.Mask = v, mv
		}
	case p4configv1.MatchField_EXACT:
	default:
		return m, p.errf("%s: unsupported match kind %v", k.Key, f.Match)
	}
	v, err := ParseValue(val)
	if err == nil {
		err = fitWidth(v, f.Bitwidth)
	}
	if err != nil {
		return m, p.errf("%s: %v", k.Key, err)
	}
	m.Value = v
	if m.Kind == p4configv1.MatchField_LPM && v&(1<<uint(f.Bitwidth-int(m.PrefixLen))-1) != 0 {
		return m, p.errf("%s: bits beyond the /%d prefix are set", k.Key, m.PrefixLen)
	}
	if m.Kind == p4configv1.MatchField_TERNARY && v&^m.Mask != 0 {
		return m, p.errf("%s: value bits outside the mask", k.Key)
	}
	return m, nil
}

// packetEvent parses "in port=P PACKET" and "packetout egress_port=P PACKET".
func (p *parser) packetEvent(w []string) error {
	key, op := "port", OpIn
	if w[0] == "packetout" {
		key, op = "egress_port", OpPacketOut
	}
	if len(w) < 3 || !strings.HasPrefix(w[1], key+"=") {
		return p.errf("%s %s=P PACKET", w[0], key)
	}
	port, err := ParseValue(strings.TrimPrefix(w[1], key+"="))
	if err != nil || port >= p4src.NumPorts {
		return p.errf("bad %s %q", key, w[1])
	}
	pkt, err := p.packet(w[2:], false)
	if err != nil {
		return err
	}
	p.add(Stmt{Op: op, Port: uint16(port), Packet: pkt})
	return nil
}

func (p *parser) packet(w []string, expect bool) (*Packet, error) {
	if len(w) == 0 || !packetKinds[w[0]] {
		return nil, p.errf("want a packet (roce, cnp, inc, announce, pfc, pause, udp, ipv4, eth, hex), got %q", strings.Join(w, " "))
	}
	var kv []KV
	var hexArgs []string
	if w[0] == "hex" {
		for _, x := range w[1:] {
			if strings.Contains(x, "=") {
				k, v, _ := strings.Cut(x, "=")
				kv = append(kv, KV{k, v})
			} else {
				hexArgs = append(hexArgs, x)
			}
		}
	} else {
		var err error
		if kv, err = p.kvs(w[1:]); err != nil {
			return nil, err
		}
	}
	pkt, err := BuildPacket(w[0], kv, hexArgs, expect)
	if err != nil {
		return nil, p.errf("%v", err)
	}
	return pkt, nil
}

// nameIndex splits "NAME[INDEX]".
func (p *parser) nameIndex(s string) (string, int, error) {
	name, rest, ok := strings.Cut(s, "[")
	if !ok || !strings.HasSuffix(rest, "]") {
		return "", 0, p.errf("want NAME[INDEX], got %q", s)
	}
	i, err := strconv.Atoi(strings.TrimSuffix(rest, "]"))
	if err != nil || i < 0 {
		return "", 0, p.errf("bad index in %q", s)
	}
	return name, i, nil
}

// register parses "register NAME[INDEX] value=V": a control-plane write of one
// register cell (a preset of the data plane's state).
func (p *parser) register(w []string) error {
	if len(w) != 3 {
		return p.errf("register NAME[INDEX] value=V")
	}
	name, idx, err := p.nameIndex(w[1])
	if err != nil {
		return err
	}
	kv, err := p.kvs(w[2:])
	if err != nil {
		return err
	}
	s, err := p.registerCell(name, idx, kv)
	if err != nil {
		return err
	}
	s.Op = OpRegister
	p.add(s)
	return nil
}

// registerCell resolves a register cell and its value=V: the index must be below the
// register's size and the value must fit its width.
func (p *parser) registerCell(name string, idx int, kv []KV) (Stmt, error) {
	id, err := p.info.RegisterID(name)
	if err != nil {
		return Stmt{}, p.errf("%v", err)
	}
	n, err := p.takeNums(kv, []string{"value"})
	if err != nil {
		return Stmt{}, err
	}
	ri, ok := pipeline.ProgramSchema().Register(id)
	if !ok {
		return Stmt{}, p.errf("register %s is not in the program's schema", name)
	}
	if idx >= ri.Size {
		return Stmt{}, p.errf("register %s index %d >= its size %d", ri.Name, idx, ri.Size)
	}
	if err := fitWidth(n["value"], ri.Bitwidth); err != nil {
		return Stmt{}, p.errf("register %s value: %v", ri.Name, err)
	}
	return Stmt{Name: p.info.RegisterName(id), ID: id, Index: idx, Values: []uint64{n["value"]}}, nil
}

func (p *parser) expect(w []string) error {
	if len(w) < 2 {
		return p.errf("expect WHAT")
	}
	switch w[1] {
	case "out", "cpu":
		if len(w) < 4 {
			return p.errf("expect %s needs a port and a packet", w[1])
		}
		s := Stmt{Op: OpExpectOut}
		rest := w[2:]
		if w[1] == "out" {
			v, err := ParseValue(strings.TrimPrefix(rest[0], "port="))
			if !strings.HasPrefix(rest[0], "port=") || err != nil || v >= p4src.NumPorts {
				return p.errf("expect out port=P PACKET")
			}
			s.Port, rest = uint16(v), rest[1:]
		} else {
			s.Op = OpExpectCPU
			if len(rest) < 3 || !strings.HasPrefix(rest[0], "ingress_port=") || !strings.HasPrefix(rest[1], "reason=") {
				return p.errf("expect cpu ingress_port=P reason=R PACKET")
			}
			v, err1 := ParseValue(strings.TrimPrefix(rest[0], "ingress_port="))
			r, err2 := ParseValue(strings.TrimPrefix(rest[1], "reason="))
			if err1 != nil || err2 != nil || v >= p4src.NumPorts || r > 127 {
				return p.errf("bad packet_in metadata")
			}
			s.Port, s.Reason, rest = uint16(v), uint8(r), rest[2:]
		}
		pkt, err := p.packet(rest, true)
		if err != nil {
			return err
		}
		s.Packet = pkt
		p.add(s)
	case "no-packets", "no-digests":
		if len(w) != 2 {
			return p.errf("expect %s takes no argument", w[1])
		}
		op := OpExpectNoPackets
		if w[1] == "no-digests" {
			op = OpExpectNoDigests
		}
		p.add(Stmt{Op: op})
	case "digest":
		if len(w) < 3 {
			return p.errf("expect digest NAME field=value...")
		}
		id, err := p.info.DigestID(w[2])
		if err != nil {
			return p.errf("%v", err)
		}
		di, _ := pipeline.ProgramSchema().Digest(id)
		kv, err := p.kvs(w[3:])
		if err != nil {
			return err
		}
		for _, x := range kv {
			ok := false
			for _, f := range di.Fields {
				ok = ok || f.Name == x.Key
			}
			if !ok {
				return p.errf("digest %s has no field %q", di.Name, x.Key)
			}
			if _, err := ParseValue(x.Value); err != nil {
				return p.errf("digest field %s: %v", x.Key, err)
			}
		}
		p.add(Stmt{Op: OpExpectDigest, Name: di.Name, ID: id, Fields: kv})
	case "counter", "register":
		if len(w) < 4 {
			return p.errf("expect %s NAME[INDEX] key=value...", w[1])
		}
		name, idx, err := p.nameIndex(w[2])
		if err != nil {
			return err
		}
		kv, err := p.kvs(w[3:])
		if err != nil {
			return err
		}
		if w[1] == "counter" {
			id, err := p.info.CounterID(name)
			if err != nil {
				return p.errf("%v", err)
			}
			n, err := p.takeNums(kv, nil, "packets", "bytes")
			if err != nil {
				return err
			}
			if len(n) == 0 {
				return p.errf("expect counter needs packets= and/or bytes=")
			}
			vals := []uint64{^uint64(0), ^uint64(0)}
			if v, ok := n["packets"]; ok {
				vals[0] = v
			}
			if v, ok := n["bytes"]; ok {
				vals[1] = v
			}
			p.add(Stmt{Op: OpExpectCounter, Name: p.info.CounterName(id), ID: id, Index: idx, Values: vals})
			return nil
		}
		s, err := p.registerCell(name, idx, kv)
		if err != nil {
			return err
		}
		s.Op = OpExpectRegister
		p.add(s)
	default:
		return p.errf("unknown expectation %q (out, cpu, no-packets, digest, no-digests, counter, register)", w[1])
	}
	return nil
}

// check applies the rules that span statements: time never goes backwards, and what
// BMv2 cannot always do is tagged: register writes and expectations need @requires
// registers, dequeue
// needs @requires dequeue-control, digest timestamps need @requires exact-timing (or
// the vector is @go-only).
func (p *parser) check() error {
	var now int64
	needsReg := false
	for _, s := range p.v.Stmts {
		if s.Refused != "" && !p.requires("refusal-codes") && p.v.GoOnly == "" {
			return &ParseError{File: s.File, Line: s.Line, Err: errors.New("a refused write without @requires refusal-codes")}
		}
		switch s.Op {
		case OpValueSet:
			// BMv2 (PI) cannot write value sets.
			if !p.requires("value-set") && p.v.GoOnly == "" {
				return &ParseError{File: s.File, Line: s.Line, Err: errors.New("valueset without @requires value-set")}
			}
		case OpExpectRegister, OpRegister:
			needsReg = true
			what := "register expectation"
			if s.Op == OpRegister {
				what = "register write"
			}
			if !p.requires("registers") && p.v.GoOnly == "" {
				return &ParseError{File: s.File, Line: s.Line, Err: errors.New(what + " without @requires registers")}
			}
		case OpAt:
			if s.Time < now {
				return &ParseError{File: s.File, Line: s.Line, Err: fmt.Errorf("at %d: time goes back from %d", s.Time, now)}
			}
			now = s.Time
		case OpWait:
			now += s.Time
		case OpDequeue:
			// On BMv2 the traffic manager decides when packets leave.
			if !p.requires("dequeue-control") && p.v.GoOnly == "" {
				return &ParseError{File: s.File, Line: s.Line, Err: errors.New("dequeue without @requires dequeue-control (use flush in target-neutral vectors)")}
			}
		case OpExpectDigest:
			for _, f := range s.Fields {
				if f.Key == "timestamp_ns" && !p.requires("exact-timing") && p.v.GoOnly == "" {
					return &ParseError{File: s.File, Line: s.Line, Err: errors.New("digest timestamp_ns without @requires exact-timing")}
				}
			}
		}
	}
	if p.requires("registers") && !needsReg {
		return &ParseError{File: p.v.File, Line: 1, Err: errors.New("@requires registers but no register statement (write or expectation)")}
	}
	return nil
}

func (p *parser) requires(f string) bool {
	for _, r := range p.v.Requires {
		if r == f {
			return true
		}
	}
	return false
}
