package p4rt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"strconv"
	"strings"

	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
)

// DecodedMatch is one field match of a read-back table entry, by name.
// Values are canonical bytestrings.
type DecodedMatch struct {
	Field     string
	Kind      MatchKind
	Value     []byte // exact, lpm, ternary, optional, range low
	Mask      []byte // ternary
	High      []byte // range
	PrefixLen int32
}

// DecodedTableEntry is a table entry with names instead of IDs.
type DecodedTableEntry struct {
	Table    string
	Matches  []DecodedMatch
	Priority int32
	Default  bool
	Action   string            // direct action, "" otherwise
	Params   map[string][]byte // direct action params by name
	MemberID uint32            // indirect action (member)
	GroupID  uint32            // indirect action (group)
	Counter  *p4v1.CounterData
	// Metadata is the controller metadata stored with the entry:
	// TableEntry.metadata (field 11), or, from a server or writer that used
	// only the deprecated controller_metadata (field 5), that uint64 as 8
	// big-endian bytes. nil when neither is set.
	Metadata []byte
	// ControllerMetadata is the same cookie as a number: field 5 when set,
	// else field 11 when it is 1 to 8 bytes long (as ControllerMetadata on
	// the builder writes it), else 0.
	ControllerMetadata uint64
	Raw                *p4v1.TableEntry
}

// DecodeTableEntry turns a table entry read back from the switch into
// names. IDs that the P4Info does not know are an error.
func (in *Info) DecodeTableEntry(te *p4v1.TableEntry) (*DecodedTableEntry, error) {
	name := in.TableName(te.GetTableId())
	if name == "" {
		return nil, fmt.Errorf("p4rt: table ID %d not in P4Info: %w", te.GetTableId(), ErrUnknownName)
	}
	d := &DecodedTableEntry{Table: name, Priority: te.Priority, Default: te.IsDefaultAction, Counter: te.CounterData, Raw: te}
	d.Metadata, d.ControllerMetadata = entryMetadata(te)
	fs := in.matchFields[te.TableId]
	for _, m := range te.Match {
		f := fs.byID[m.FieldId]
		if f == nil {
			return nil, fmt.Errorf("p4rt: table %s: match field ID %d not in P4Info: %w", name, m.FieldId, ErrUnknownName)
		}
		dm := DecodedMatch{Field: f.Name}
		switch x := m.FieldMatchType.(type) {
		case *p4v1.FieldMatch_Exact_:
			dm.Kind, dm.Value = MatchExact, Canonical(x.Exact.GetValue())
		case *p4v1.FieldMatch_Lpm:
			dm.Kind, dm.Value, dm.PrefixLen = MatchLPM, Canonical(x.Lpm.GetValue()), x.Lpm.GetPrefixLen()
		case *p4v1.FieldMatch_Ternary_:
			dm.Kind, dm.Value, dm.Mask = MatchTernary, Canonical(x.Ternary.GetValue()), Canonical(x.Ternary.GetMask())
		case *p4v1.FieldMatch_Range_:
			dm.Kind, dm.Value, dm.High = MatchRange, Canonical(x.Range.GetLow()), Canonical(x.Range.GetHigh())
		case *p4v1.FieldMatch_Optional_:
			dm.Kind, dm.Value = MatchOptional, Canonical(x.Optional.GetValue())
		default:
			return nil, fmt.Errorf("p4rt: table %s field %s: unsupported match %T: %w", name, f.Name, x, ErrInvalidValue)
		}
		d.Matches = append(d.Matches, dm)
	}
	switch x := te.GetAction().GetType().(type) {
	case *p4v1.TableAction_Action:
		a := x.Action
		d.Action = in.ActionName(a.ActionId)
		if d.Action == "" {
			return nil, fmt.Errorf("p4rt: table %s: action ID %d not in P4Info: %w", name, a.ActionId, ErrUnknownName)
		}
		d.Params = make(map[string][]byte, len(a.Params))
		for _, p := range a.Params {
			f := in.params[a.ActionId].byID[p.ParamId]
			if f == nil {
				return nil, fmt.Errorf("p4rt: action %s: param ID %d not in P4Info: %w", d.Action, p.ParamId, ErrUnknownName)
			}
			d.Params[f.Name] = Canonical(p.Value)
		}
	case *p4v1.TableAction_ActionProfileMemberId:
		d.MemberID = x.ActionProfileMemberId
	case *p4v1.TableAction_ActionProfileGroupId:
		d.GroupID = x.ActionProfileGroupId
	}
	return d, nil
}

// entryMetadata reads the controller metadata of an entry from either
// field: metadata (11, bytes) first, else controller_metadata (5, uint64).
func entryMetadata(te *p4v1.TableEntry) ([]byte, uint64) {
	md, c := te.GetMetadata(), te.GetControllerMetadata()
	switch {
	case len(md) > 0:
		md = append([]byte(nil), md...)
	case c != 0:
		md = binary.BigEndian.AppendUint64(nil, c)
	default:
		md = nil
	}
	if c == 0 && len(md) <= 8 {
		for _, x := range md {
			c = c<<8 | uint64(x)
		}
	}
	return md, c
}

// PacketIn is a packet sent by the switch to the controller, with its
// controller metadata decoded by name (canonical bytestrings).
type PacketIn struct {
	Payload  []byte
	Metadata map[string][]byte
	Raw      *p4v1.PacketIn
}

// Uint returns a metadata field as an integer.
func (p *PacketIn) Uint(name string) (uint64, error) {
	v, ok := p.Metadata[name]
	if !ok {
		return 0, &NameError{Kind: "packet-in metadata field", Name: name}
	}
	return DecodeUint(v)
}

// DecodePacketIn decodes a PacketIn's metadata with the "packet_in"
// controller header. Metadata with an ID the P4Info does not know is an
// error; without a packet_in header the metadata map stays empty.
func (in *Info) DecodePacketIn(p *p4v1.PacketIn) (*PacketIn, error) {
	out := &PacketIn{Payload: p.Payload, Metadata: make(map[string][]byte, len(p.Metadata)), Raw: p}
	id, err := in.ControllerHeaderID("packet_in")
	if err != nil {
		if len(p.Metadata) > 0 {
			return out, fmt.Errorf("p4rt: packet-in with metadata but %w", err)
		}
		return out, nil
	}
	fs := in.cpmFields[id]
	for _, m := range p.Metadata {
		f := fs.byID[m.MetadataId]
		if f == nil {
			return out, fmt.Errorf("p4rt: packet-in metadata ID %d not in P4Info: %w", m.MetadataId, ErrUnknownName)
		}
		out.Metadata[f.Name] = Canonical(m.Value)
	}
	return out, nil
}

// PacketOut builds a PacketOut whose "packet_out" controller metadata is
// encoded by name with width checks. Every field of the packet_out header
// must be given (the spec has no default values for them): a missing field
// is an ErrInvalidValue error that names every missing one. Without
// metadata, PacketOut succeeds only when the P4Info has no packet_out
// header.
func (in *Info) PacketOut(payload []byte, md ...Param) (*p4v1.PacketOut, error) {
	pkt := &p4v1.PacketOut{Payload: payload}
	id, err := in.ControllerHeaderID("packet_out")
	if err != nil {
		if len(md) == 0 && errors.Is(err, ErrUnknownName) {
			return pkt, nil // no packet_out header: the payload goes as is
		}
		return nil, err
	}
	fs := in.cpmFields[id]
	given := map[uint32]bool{}
	for _, p := range md {
		f, err := fs.get(p.Name)
		if err != nil {
			return nil, err
		}
		if given[f.ID] {
			return nil, fmt.Errorf("p4rt: packet-out metadata %q given twice: %w", f.Name, ErrInvalidValue)
		}
		given[f.ID] = true
		v, err := encodeField("packet-out metadata", f.Name, p.Value, f.Bitwidth)
		if err != nil {
			return nil, err
		}
		pkt.Metadata = append(pkt.Metadata, &p4v1.PacketMetadata{MetadataId: f.ID, Value: v})
	}
	var missing []string
	for _, f := range fs.list {
		if !given[f.ID] {
			missing = append(missing, strconv.Quote(f.Name))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("p4rt: packet-out metadata %s missing: every field of controller header %s must be given: %w",
			strings.Join(missing, ", "), in.cpm.names[id], ErrInvalidValue)
	}
	return pkt, nil
}

// DigestList is a list of digests from the switch, with the digest's name.
type DigestList struct {
	Name      string
	DigestID  uint32
	ListID    uint64
	Timestamp int64
	Data      []*p4v1.P4Data
	info      *Info
}

// Struct decodes entry i of the list, a struct digest, into a map from
// member name to canonical bytestring, using the P4Info type_info.
func (d *DigestList) Struct(i int) (map[string][]byte, error) {
	if i < 0 || i >= len(d.Data) {
		return nil, fmt.Errorf("p4rt: digest %s entry %d of %d: %w", d.Name, i, len(d.Data), ErrInvalidValue)
	}
	if d.info == nil {
		return nil, ErrNoP4Info
	}
	return d.info.DecodeDigestStruct(d.DigestID, d.Data[i])
}

// Unmarshal decodes entry i into the struct pointed to by v. A field is
// matched by its `p4:"member"` tag, or else by its name compared
// case-insensitively with underscores ignored. Supported field types:
// unsigned integers, []byte, *big.Int, bool. Members with no field are
// skipped; a field with no member is an error.
func (d *DigestList) Unmarshal(i int, v any) error {
	m, err := d.Struct(i)
	if err != nil {
		return err
	}
	return unmarshalStruct(m, v)
}

// DecodeDigestStruct decodes one struct digest entry by member name.
func (in *Info) DecodeDigestStruct(digestID uint32, data *p4v1.P4Data) (map[string][]byte, error) {
	dg := in.digestByID[digestID]
	if dg == nil {
		return nil, fmt.Errorf("p4rt: digest ID %d not in P4Info: %w", digestID, ErrUnknownName)
	}
	sname := dg.GetTypeSpec().GetStruct().GetName()
	st := in.p.GetTypeInfo().GetStructs()[sname]
	if st == nil {
		return nil, fmt.Errorf("p4rt: digest %s: struct type %q not in type_info: %w", dg.Preamble.Name, sname, ErrInvalidValue)
	}
	sl := data.GetStruct()
	if sl == nil {
		return nil, fmt.Errorf("p4rt: digest %s: data is %T, not a struct: %w", dg.Preamble.Name, data.GetData(), ErrInvalidValue)
	}
	if len(sl.Members) != len(st.Members) {
		return nil, fmt.Errorf("p4rt: digest %s: %d members, type has %d: %w", dg.Preamble.Name, len(sl.Members), len(st.Members), ErrInvalidValue)
	}
	out := make(map[string][]byte, len(st.Members))
	for i, mem := range st.Members {
		switch x := sl.Members[i].GetData().(type) {
		case *p4v1.P4Data_Bitstring:
			out[mem.Name] = Canonical(x.Bitstring)
		case *p4v1.P4Data_Bool:
			if x.Bool {
				out[mem.Name] = []byte{1}
			} else {
				out[mem.Name] = []byte{0}
			}
		default:
			return nil, fmt.Errorf("p4rt: digest %s member %s: unsupported %T: %w", dg.Preamble.Name, mem.Name, x, ErrInvalidValue)
		}
	}
	return out, nil
}

func normName(s string) string { return strings.ToLower(strings.ReplaceAll(s, "_", "")) }

func unmarshalStruct(m map[string][]byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("p4rt: unmarshal into %T, want pointer to struct: %w", v, ErrInvalidValue)
	}
	byNorm := make(map[string][]byte, len(m))
	for k, b := range m {
		byNorm[normName(k)] = b
	}
	rv = rv.Elem()
	rt := rv.Type()
	for i := 0; i < rt.NumField(); i++ {
		sf := rt.Field(i)
		if !sf.IsExported() {
			continue
		}
		key := sf.Tag.Get("p4")
		if key == "-" {
			continue
		}
		if key == "" {
			key = sf.Name
		}
		b, ok := byNorm[normName(key)]
		if !ok {
			return fmt.Errorf("p4rt: field %s: no digest member %q: %w", sf.Name, key, ErrUnknownName)
		}
		fv := rv.Field(i)
		switch {
		case fv.Kind() >= reflect.Uint && fv.Kind() <= reflect.Uint64:
			u, err := DecodeUint(b)
			if err != nil {
				return fmt.Errorf("field %s: %w", sf.Name, err)
			}
			if fv.OverflowUint(u) {
				return fmt.Errorf("p4rt: field %s (%s): value %d: %w", sf.Name, fv.Type(), u, ErrValueTooWide)
			}
			fv.SetUint(u)
		case fv.Kind() == reflect.Bool:
			fv.SetBool(bitLen(b) != 0)
		case fv.Type() == reflect.TypeOf([]byte(nil)):
			fv.SetBytes(append([]byte(nil), b...))
		case fv.Type() == reflect.TypeOf((*big.Int)(nil)):
			fv.Set(reflect.ValueOf(DecodeBig(b)))
		default:
			return fmt.Errorf("p4rt: field %s: unsupported type %s: %w", sf.Name, fv.Type(), ErrInvalidValue)
		}
	}
	return nil
}
