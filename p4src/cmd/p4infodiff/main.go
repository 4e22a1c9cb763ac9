// Command p4infodiff compares the committed P4Info with the one p4c emitted, object
// by object (p4src.DiffP4Info), so that a difference in the order p4c lists objects
// is told apart from a difference in the contract.
//
//	p4infodiff COMMITTED.txtpb EMITTED.txtpb
//
// Exit status: 0 same contract, 1 differences (printed, one per object), 2 bad input.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"google.golang.org/protobuf/encoding/prototext"

	"github.com/fastcnp/fastcnp/p4src"
	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintln(stderr, "usage: p4infodiff COMMITTED.txtpb EMITTED.txtpb")
		return 2
	}
	var infos [2]*p4configv1.P4Info
	for i, path := range args {
		info, err := load(path)
		if err != nil {
			fmt.Fprintf(stderr, "p4infodiff: %v\n", err)
			return 2
		}
		infos[i] = info
	}
	diffs := p4src.DiffP4Info(infos[0], infos[1])
	for _, d := range diffs {
		fmt.Fprintln(stdout, d)
	}
	if len(diffs) > 0 {
		fmt.Fprintf(stdout, "p4infodiff: %d difference(s) between %s (committed) and %s (p4c)\n", len(diffs), args[0], args[1])
		return 1
	}
	return 0
}

func load(path string) (*p4configv1.P4Info, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read P4Info: %w", err)
	}
	info := &p4configv1.P4Info{}
	if err := prototext.Unmarshal(b, info); err != nil {
		return nil, fmt.Errorf("parse %s as a text P4Info: %w", path, err)
	}
	if info.GetPkgInfo() == nil && len(info.GetTables()) == 0 && len(info.GetActions()) == 0 {
		return nil, fmt.Errorf("%s: %w", path, errEmpty)
	}
	return info, nil
}

var errEmpty = errors.New("no pkg_info, tables or actions: not a P4Info")
