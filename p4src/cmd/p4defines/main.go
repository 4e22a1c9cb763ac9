// Command p4defines writes the Go constants of the P4 program's defines file
// (p4src/include/defines.p4) as p4src/defines_gen.go. Run it with `go generate ./p4src`.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/fastcnp/fastcnp/p4src/internal/p4defines"
)

func main() {
	in := flag.String("in", "include/defines.p4", "P4 defines file")
	out := flag.String("out", "defines_gen.go", "Go file to write")
	pkg := flag.String("pkg", "p4src", "Go package name")
	source := flag.String("source", "p4src/include/defines.p4", "source name written in the header")
	flag.Parse()
	if err := run(*in, *out, *pkg, *source); err != nil {
		fmt.Fprintln(os.Stderr, "p4defines:", err)
		os.Exit(1)
	}
}

func run(in, out, pkg, source string) error {
	src, err := os.ReadFile(in)
	if err != nil {
		return fmt.Errorf("read %s: %w", in, err)
	}
	defs, err := p4defines.Parse(src)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	code, err := p4defines.Render(pkg, source, defs)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, code, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	return nil
}
