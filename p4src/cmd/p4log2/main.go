// Command p4log2 writes the TNA program's constant log2 entries
// (p4src/tna/log2_entries.p4) from p4src/window. Run it with `go generate ./p4src`.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/fastcnp/fastcnp/p4src/internal/p4log2"
)

func main() {
	out := flag.String("out", "tna/log2_entries.p4", "P4 file to write")
	flag.Parse()
	if err := os.WriteFile(*out, p4log2.Render(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "p4log2:", err)
		os.Exit(1)
	}
}
