package bmv2

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// CLIName is the Thrift runtime client of BMv2's simple_switch, looked up on PATH.
const CLIName = "simple_switch_CLI"

// cliPrompt is what the CLI's command loop (Python's cmd.Cmd) prints before reading
// each line; with its standard input a pipe it still prints it, so the text between
// two prompts is the output of one command.
const cliPrompt = "RuntimeCmd: "

// CLI drives BMv2's Thrift runtime client (simple_switch_CLI) with commands on its
// standard input, one process per batch: BMv2's P4Runtime server does not implement
// register reads and writes (UNIMPLEMENTED), its Thrift runtime interface does
// (register_read NAME INDEX, register_write NAME INDEX VALUE). BMv2 names a register
// as p4c's BMv2 back end does, which is its P4Info name (top-level instances
// unqualified, e.g. port_paused; control-local ones "Control.name").
type CLI struct {
	// Path is the CLI program (simple_switch_CLI, or any program that speaks its
	// command line and its protocol on standard input and output).
	Path string
	// ThriftPort is the switch's Thrift port (--thrift-port); 0 gives none and the CLI
	// uses its default, 9090.
	ThriftPort int
	// JSON is given with --json: the program the switch runs, so that the CLI reads
	// it from a file instead of fetching it from the switch (it checks that the two
	// are the same). "": fetched.
	JSON string
	// Timeout bounds one run of the CLI; 0: 30 s.
	Timeout time.Duration
}

// RegisterCell is one register cell and, for writes and expectations, its value.
type RegisterCell struct {
	Name  string
	Index int
	Value uint64
}

// FindCLI returns path if it names an executable, or CLIName found on PATH when
// path is "".
func FindCLI(path string) (string, error) {
	if path == "" {
		path = CLIName
	}
	p, err := exec.LookPath(path)
	if err != nil {
		return "", fmt.Errorf("bmv2: no %s: %w", path, err)
	}
	return p, nil
}

// Args returns the CLI's command-line arguments.
func (c *CLI) Args() []string {
	var args []string
	if c.ThriftPort != 0 {
		args = append(args, "--thrift-port", strconv.Itoa(c.ThriftPort))
	}
	if c.JSON != "" {
		args = append(args, "--json", c.JSON)
	}
	return args
}

// Run starts the CLI once, writes cmds to its standard input (one per line, then
// end of file) and returns what it printed for each command, in order, without the
// prompt and surrounding white space. A failure to start, a non-zero exit (e.g. no
// switch on the Thrift port) or fewer prompts than commands is an error.
func (c *CLI) Run(ctx context.Context, cmds []string) ([]string, error) {
	for _, cmd := range cmds {
		if strings.ContainsAny(cmd, "\r\n") {
			return nil, fmt.Errorf("bmv2: CLI command %q spans lines", cmd)
		}
	}
	timeout := c.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Path, c.Args()...) // killed (by PID) if it outlives ctx
	cmd.Stdin = strings.NewReader(strings.Join(cmds, "\n") + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("bmv2: %s %s: %w (output %q, errors %q)", c.Path, strings.Join(c.Args(), " "), err,
			clip(stdout.String()), clip(stderr.String()))
	}
	return splitOutput(stdout.String(), len(cmds))
}

// splitOutput cuts the CLI's standard output at its prompts: the text before the
// first prompt is its banner, the text after prompt i the output of command i, the
// text after the last prompt that of the end of input.
func splitOutput(out string, n int) ([]string, error) {
	parts := strings.Split(out, cliPrompt)
	if len(parts) < n+1 {
		return nil, fmt.Errorf("bmv2: the CLI prompted %d times for %d commands: %q", len(parts)-1, n, clip(out))
	}
	res := make([]string, n)
	for i := range res {
		res[i] = strings.TrimSpace(parts[i+1])
	}
	return res, nil
}

func clip(s string) string {
	if len(s) > 2000 {
		return s[:1000] + " ... " + s[len(s)-1000:]
	}
	return s
}

// WriteRegisters writes the cells in one run of the CLI (register_write NAME INDEX
// VALUE, the value in decimal as the CLI wants it). The CLI prints nothing for a
// write that succeeded; anything it prints is the error.
func (c *CLI) WriteRegisters(ctx context.Context, cells []RegisterCell) error {
	cmds := make([]string, len(cells))
	for i, r := range cells {
		cmds[i] = fmt.Sprintf("register_write %s %d %d", r.Name, r.Index, r.Value)
	}
	outs, err := c.Run(ctx, cmds)
	if err != nil {
		return err
	}
	var errs []error
	for i, o := range outs {
		if o != "" {
			errs = append(errs, fmt.Errorf("bmv2: register_write %s[%d] = %d: %s", cells[i].Name, cells[i].Index, cells[i].Value, o))
		}
	}
	return errors.Join(errs...)
}

// ReadRegisters reads the cells (their Value is ignored) in one run of the CLI
// (register_read NAME INDEX) and returns their values in order.
func (c *CLI) ReadRegisters(ctx context.Context, cells []RegisterCell) ([]uint64, error) {
	cmds := make([]string, len(cells))
	for i, r := range cells {
		cmds[i] = fmt.Sprintf("register_read %s %d", r.Name, r.Index)
	}
	outs, err := c.Run(ctx, cmds)
	if err != nil {
		return nil, err
	}
	vals := make([]uint64, len(cells))
	var errs []error
	for i, o := range outs {
		v, err := parseRegisterRead(o, cells[i].Name, cells[i].Index)
		if err != nil {
			errs = append(errs, err)
		}
		vals[i] = v
	}
	return vals, errors.Join(errs...)
}

// parseRegisterRead parses the CLI's answer to "register_read NAME INDEX":
// "NAME[INDEX]= VALUE" (the name as given, the value in decimal); anything else
// (e.g. "Invalid register operation (INVALID_INDEX)", "Error: Invalid register name
// (x)") is an error.
func parseRegisterRead(out, name string, index int) (uint64, error) {
	prefix := fmt.Sprintf("%s[%d]=", name, index)
	rest, ok := strings.CutPrefix(out, prefix)
	if !ok {
		return 0, fmt.Errorf("bmv2: register_read %s %d: %q", name, index, out)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(rest), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bmv2: register_read %s %d: value in %q: %w", name, index, out, err)
	}
	return v, nil
}
