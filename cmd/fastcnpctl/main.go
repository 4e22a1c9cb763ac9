// Command fastcnpctl is the command-line client of fastcnpd (see
// controller/ctl and docs/operations.md for commands and exit codes).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/fastcnp/fastcnp/controller/ctl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := ctl.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
