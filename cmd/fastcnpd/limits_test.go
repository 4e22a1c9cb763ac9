package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestConfigNeverEnding: --config /dev/zero is refused at once with the
// size limit (fastcnpd used to read it until the OOM killer came).
func TestConfigNeverEnding(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	code := runMain(ctx, []string{"--config", "/dev/zero"}, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "/dev/zero") || !strings.Contains(stderr.String(), "larger than the limit of 4 MiB") {
		t.Errorf("exit %d, stderr %q; want 1 and the size limit", code, stderr.String())
	}
}
