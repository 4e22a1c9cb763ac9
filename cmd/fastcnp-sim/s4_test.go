package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestS4Command runs the three S4 runs small and checks the files: the
// table has a column per run, the normal run is complete and exact, the
// failure runs moved 64 buckets, the JSON holds every message, the plot
// is a PNG.
func TestS4Command(t *testing.T) {
	dir := t.TempDir()
	code, _, errs := runCLI(t, nil, "s4", "--messages", "40", "--fail-at", "25us", "--repair-at", "40us", "--notify", "3us",
		"--install", "1us", "--slot-timeout", "20us", "--out", dir)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	md, err := os.ReadFile(filepath.Join(dir, "s4.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| measure | normal | failure | failure-repair |", "| messages complete / all | 80 / 80 |",
		"| wrong / duplicate RESULTs | 0 / 0 | 0 / 0 | 0 / 0 |", "| buckets moved by each recomputation | - | 64 | 64, 64 |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("s4.md lacks %q:\n%s", want, md)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "s4.json"))
	if err != nil {
		t.Fatal(err)
	}
	var runs []struct {
		Label    string
		Messages []struct{ Group, Message uint16 }
	}
	if err := json.Unmarshal(b, &runs); err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 || len(runs[0].Messages) != 80 || runs[2].Label != "failure-repair" {
		t.Fatalf("s4.json: %d runs", len(runs))
	}
	png, err := os.ReadFile(filepath.Join(dir, "s4.png"))
	if err != nil || len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Fatalf("s4.png: %v", err)
	}
}

func TestS4Usage(t *testing.T) {
	for _, args := range [][]string{
		{"s4", "--messages", "0"},
		{"s4", "--fail-at", "50us", "--repair-at", "40us"},
		{"s4", "--jobs", "0"},
		{"s4", "extra"},
	} {
		if code, _, errs := runCLI(t, nil, args...); code != exitUsage {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
}
