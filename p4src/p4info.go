// Package p4src carries the fastcnp P4 program's control-plane contract: the
// committed P4Info (fastcnp.p4info.txtpb, what p4c emits for v1model/fastcnp.p4)
// embedded in the binary, and where the compiled BMv2 JSON lives when p4c has
// been run (p4src/build.sh).
//
// The P4Info is the only thing the controller knows about a switch
// (docs/dataplane.md lists its objects and pinned IDs).
package p4src

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"google.golang.org/protobuf/encoding/prototext"

	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
)

// P4InfoText is the committed P4Info in protobuf text format.
//
//go:embed fastcnp.p4info.txtpb
var P4InfoText []byte

const (
	// P4InfoFileName is the committed P4Info, relative to this directory.
	P4InfoFileName = "fastcnp.p4info.txtpb"
	// BMv2JSONRelPath is where build.sh writes the compiled BMv2 JSON,
	// relative to this directory.
	BMv2JSONRelPath = "build/fastcnp.json"
	// BMv2JSONEnv overrides the BMv2 JSON path (for example on a testbed
	// where the program was compiled elsewhere).
	BMv2JSONEnv = "FASTCNP_BMV2_JSON"
)

// P4Info parses P4InfoText. Every call returns a fresh message.
func P4Info() (*p4configv1.P4Info, error) {
	info := &p4configv1.P4Info{}
	if err := prototext.Unmarshal(P4InfoText, info); err != nil {
		return nil, fmt.Errorf("p4src: parse embedded %s: %w", P4InfoFileName, err)
	}
	return info, nil
}

// SourceDir is the directory of this package in the source tree it was built
// from ("" when that is unknown, e.g. in a trimmed build).
func SourceDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	return filepath.Dir(file)
}

// BMv2JSONPath returns the compiled BMv2 JSON of the program and whether it
// exists: $FASTCNP_BMV2_JSON if set, else p4src/build/fastcnp.json in the
// source tree. The JSON exists only where p4c has run (make p4).
func BMv2JSONPath() (string, bool) {
	path := os.Getenv(BMv2JSONEnv)
	if path == "" {
		dir := SourceDir()
		if dir == "" {
			return "", false
		}
		path = filepath.Join(dir, BMv2JSONRelPath)
	}
	st, err := os.Stat(path)
	return path, err == nil && st.Mode().IsRegular()
}
