package p4src

import (
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
)

// DiffP4Info compares the committed P4Info with the one p4c emitted, fact by fact:
// every object (table, action, counter, register, digest, ...) is matched by kind
// and name and compared whole (IDs, fields, widths, references, sizes), whatever
// order the two files list the objects in; pkg_info and each type_info struct are
// compared too. It returns one line per difference, sorted; none means the two
// describe the same contract (p4src/build.sh uses it through cmd/p4infodiff).
func DiffP4Info(committed, emitted *p4configv1.P4Info) []string {
	var out []string
	a, b := committed.ProtoReflect(), emitted.ProtoReflect()
	fields := a.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		kind := string(fd.Name())
		switch {
		case fd.IsList() && fd.Message() != nil && fd.Message().Fields().ByName("preamble") != nil:
			out = append(out, diffKeyed(kind, a.Get(fd).List(), b.Get(fd).List(), preambleName)...)
		case kind == "externs":
			out = append(out, diffKeyed(kind, a.Get(fd).List(), b.Get(fd).List(), externTypeName)...)
		case kind == "type_info":
			out = append(out, diffTypeInfo(committed.GetTypeInfo(), emitted.GetTypeInfo())...)
		default: // pkg_info, and whatever a newer p4info.proto adds: compared whole
			x, y := &p4configv1.P4Info{}, &p4configv1.P4Info{}
			if a.Has(fd) {
				x.ProtoReflect().Set(fd, a.Get(fd))
			}
			if b.Has(fd) {
				y.ProtoReflect().Set(fd, b.Get(fd))
			}
			if !proto.Equal(x, y) {
				out = append(out, fmt.Sprintf("%s differs:\n    committed: %s\n    p4c:       %s", kind, text(x), text(y)))
			}
		}
	}
	sort.Strings(out)
	return out
}

func preambleName(m protoreflect.Message) string {
	pre := m.Get(m.Descriptor().Fields().ByName("preamble")).Message().Interface().(*p4configv1.Preamble)
	return pre.GetName()
}

func externTypeName(m protoreflect.Message) string {
	return m.Interface().(*p4configv1.Extern).GetExternTypeName()
}

// diffKeyed compares two lists of messages keyed by name.
func diffKeyed(kind string, a, b protoreflect.List, key func(protoreflect.Message) string) []string {
	index := func(l protoreflect.List) (map[string]proto.Message, []string) {
		m := make(map[string]proto.Message, l.Len())
		var dups []string
		for i := 0; i < l.Len(); i++ {
			msg := l.Get(i).Message()
			k := key(msg)
			if _, dup := m[k]; dup {
				dups = append(dups, k)
			}
			m[k] = msg.Interface()
		}
		return m, dups
	}
	ma, dupA := index(a)
	mb, dupB := index(b)
	var out []string
	for _, k := range dupA {
		out = append(out, fmt.Sprintf("%s %q: listed twice in the committed P4Info", kind, k))
	}
	for _, k := range dupB {
		out = append(out, fmt.Sprintf("%s %q: listed twice in p4c's P4Info", kind, k))
	}
	for k, x := range ma {
		y, ok := mb[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s %q: only in the committed P4Info: %s", kind, k, text(x)))
		case !proto.Equal(x, y):
			out = append(out, fmt.Sprintf("%s %q differs:\n    committed: %s\n    p4c:       %s", kind, k, text(x), text(y)))
		}
	}
	for k, y := range mb {
		if _, ok := ma[k]; !ok {
			out = append(out, fmt.Sprintf("%s %q: only in p4c's P4Info: %s", kind, k, text(y)))
		}
	}
	return out
}

func diffTypeInfo(a, b *p4configv1.P4TypeInfo) []string {
	var out []string
	for name, x := range a.GetStructs() {
		y, ok := b.GetStructs()[name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("type_info struct %q: only in the committed P4Info", name))
		case !proto.Equal(x, y):
			out = append(out, fmt.Sprintf("type_info struct %q differs:\n    committed: %s\n    p4c:       %s", name, text(x), text(y)))
		}
	}
	for name := range b.GetStructs() {
		if _, ok := a.GetStructs()[name]; !ok {
			out = append(out, fmt.Sprintf("type_info struct %q: only in p4c's P4Info", name))
		}
	}
	// Everything else of type_info (headers, enums, new types, ...), compared whole.
	ra, rb := proto.Clone(a).(*p4configv1.P4TypeInfo), proto.Clone(b).(*p4configv1.P4TypeInfo)
	if ra == nil {
		ra = &p4configv1.P4TypeInfo{}
	}
	if rb == nil {
		rb = &p4configv1.P4TypeInfo{}
	}
	ra.Structs, rb.Structs = nil, nil
	if !proto.Equal(ra, rb) {
		out = append(out, fmt.Sprintf("type_info (other than structs) differs:\n    committed: %s\n    p4c:       %s", text(ra), text(rb)))
	}
	return out
}

func text(m proto.Message) string {
	return strings.TrimSpace(prototext.MarshalOptions{}.Format(m))
}
