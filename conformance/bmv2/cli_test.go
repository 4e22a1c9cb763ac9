package bmv2

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fakeCLI writes a stand-in for simple_switch_CLI into a temporary directory: a bash
// script that behaves as the real one does on a piped standard input (runtime_CLI.py
// of BMv2 1.15): a banner, the prompt "RuntimeCmd: " before every line it reads,
// "NAME[INDEX]= VALUE" for register_read, nothing for a register_write that worked,
// the CLI's error lines for an unknown register or an index out of range, and exit
// status 1 when no switch answers on the Thrift port (a file "down" in its
// directory). It keeps the registers in files (one per cell, 8 cells per register)
// and logs its arguments and every command it reads.
func fakeCLI(t *testing.T) (path, dir string) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash for the fake CLI")
	}
	dir = t.TempDir()
	script := `#!/usr/bin/env bash
dir='` + dir + `'
echo "$*" >> "$dir/args"
if [[ -e "$dir/down" ]]; then
    echo "Could not connect to thrift client on port 9090"
    echo "Make sure the switch is running and that you have the right port"
    exit 1
fi
echo "Obtaining JSON from switch..."
echo "Done"
echo "Control utility for runtime P4 table manipulation"
while printf 'RuntimeCmd: ' && read -r line; do
    echo "$line" >> "$dir/commands"
    read -r cmd name index value <<< "$line"
    case "$name" in
        port_paused|port_queue_bytes|flow_key) ;;
        *) echo "Error: Invalid register name ($name)"; continue ;;
    esac
    if [[ "$index" -ge 8 ]]; then
        echo "Invalid register operation (INVALID_INDEX)"
        continue
    fi
    case "$cmd" in
        register_write) echo "$value" > "$dir/$name.$index" ;;
        register_read) v=0; [[ -e "$dir/$name.$index" ]] && v=$(cat "$dir/$name.$index"); echo "$name[$index]= $v" ;;
        *) echo "*** Unknown syntax: $cmd $name $index $value" ;;
    esac
done
echo
`
	path = filepath.Join(dir, "simple_switch_CLI")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, dir
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestCLIRegisters writes and reads registers through the fake CLI: the commands the
// wrapper sends (decimal values, one run per batch), its arguments, and the parsed
// values.
func TestCLIRegisters(t *testing.T) {
	path, dir := fakeCLI(t)
	c := &CLI{Path: path, ThriftPort: 9091, JSON: "/tmp/fastcnp.json", Timeout: 10 * time.Second}
	ctx := context.Background()
	err := c.WriteRegisters(ctx, []RegisterCell{
		{Name: "port_queue_bytes", Index: 2, Value: 3174},
		{Name: "flow_key", Index: 7, Value: 0x512a5a18},
		{Name: "port_paused", Index: 2, Value: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	vals, err := c.ReadRegisters(ctx, []RegisterCell{
		{Name: "flow_key", Index: 7}, {Name: "port_queue_bytes", Index: 2}, {Name: "port_paused", Index: 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint64{0x512a5a18, 3174, 0}; !reflect.DeepEqual(vals, want) {
		t.Errorf("read %v, want %v", vals, want)
	}
	wantCmds := []string{
		"register_write port_queue_bytes 2 3174",
		"register_write flow_key 7 1361730072",
		"register_write port_paused 2 1",
		"register_read flow_key 7",
		"register_read port_queue_bytes 2",
		"register_read port_paused 3",
	}
	if got := readLines(t, filepath.Join(dir, "commands")); !reflect.DeepEqual(got, wantCmds) {
		t.Errorf("commands\n%q\nwant\n%q", got, wantCmds)
	}
	args := readLines(t, filepath.Join(dir, "args"))
	if len(args) != 2 || args[0] != "--thrift-port 9091 --json /tmp/fastcnp.json" || args[1] != args[0] {
		t.Errorf("runs with arguments %q, want two runs with --thrift-port 9091 --json /tmp/fastcnp.json", args)
	}
}

// TestCLIErrors: what the CLI prints for a bad write or read is an error naming the
// cell; a CLI that cannot reach the switch, or that stops early, is an error too.
func TestCLIErrors(t *testing.T) {
	path, dir := fakeCLI(t)
	c := &CLI{Path: path}
	ctx := context.Background()
	err := c.WriteRegisters(ctx, []RegisterCell{{Name: "port_paused", Index: 1, Value: 1}, {Name: "nosuch", Index: 1, Value: 5}})
	if err == nil || !strings.Contains(err.Error(), "nosuch[1] = 5: Error: Invalid register name (nosuch)") {
		t.Errorf("write of an unknown register: %v", err)
	}
	if strings.Contains(err.Error(), "port_paused") {
		t.Errorf("the good write is reported as failed: %v", err)
	}
	_, err = c.ReadRegisters(ctx, []RegisterCell{{Name: "port_paused", Index: 9}})
	if err == nil || !strings.Contains(err.Error(), "INVALID_INDEX") {
		t.Errorf("read out of range: %v", err)
	}
	if got := readLines(t, filepath.Join(dir, "args")); got[0] != "" {
		t.Errorf("arguments %q, want none (the CLI's defaults)", got[0])
	}
	if err := os.WriteFile(filepath.Join(dir, "down"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = c.ReadRegisters(ctx, []RegisterCell{{Name: "port_paused", Index: 1}})
	if err == nil || !strings.Contains(err.Error(), "Could not connect to thrift client") {
		t.Errorf("switch down: %v", err)
	}
	if _, err := (&CLI{Path: "/bin/true"}).Run(ctx, []string{"register_read port_paused 1"}); err == nil ||
		!strings.Contains(err.Error(), "prompted 0 times for 1 commands") {
		t.Errorf("a CLI that prints nothing: %v", err)
	}
	if _, err := c.Run(ctx, []string{"register_read x 1\nregister_write x 1 1"}); err == nil {
		t.Error("a command with a newline was sent")
	}
}

func TestParseRegisterRead(t *testing.T) {
	tests := []struct {
		out   string
		name  string
		index int
		want  uint64
		ok    bool
	}{
		{"port_paused[2]= 1", "port_paused", 2, 1, true},
		{"port_check_at_ns[511]= 281474976710655", "port_check_at_ns", 511, 1<<48 - 1, true},
		{"port_paused[2]= 1", "port_paused", 3, 0, false},
		{"Invalid register operation (INVALID_INDEX)", "port_paused", 600, 0, false},
		{"Error: Invalid register name (port_pasued)", "port_pasued", 1, 0, false},
		{"port_paused[2]= -1", "port_paused", 2, 0, false},
	}
	for _, tc := range tests {
		v, err := parseRegisterRead(tc.out, tc.name, tc.index)
		if (err == nil) != tc.ok || v != tc.want {
			t.Errorf("parseRegisterRead(%q, %s, %d) = %d, %v; want %d ok %v", tc.out, tc.name, tc.index, v, err, tc.want, tc.ok)
		}
	}
}

func TestFindCLI(t *testing.T) {
	path, _ := fakeCLI(t)
	if p, err := FindCLI(path); err != nil || p != path {
		t.Errorf("FindCLI(%s) = %s, %v", path, p, err)
	}
	t.Setenv("PATH", filepath.Dir(path))
	if p, err := FindCLI(""); err != nil || p != path {
		t.Errorf("FindCLI on PATH = %s, %v", p, err)
	}
	if _, err := FindCLI(filepath.Join(t.TempDir(), "nothing")); err == nil {
		t.Error("FindCLI of a missing file")
	}
}
