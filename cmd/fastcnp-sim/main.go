// Command fastcnp-sim is the packet-level simulator's command line:
//
//	fastcnp-sim gen      make a flow file (HPCC traffic_gen.py's Poisson traffic, plus incasts)
//	fastcnp-sim run      simulate a topology, flow file and parameter file (the engine's command)
//	fastcnp-sim analyze  FCT slowdowns of fct.txt files, as HPCC's fct_analysis.py computes them
//	fastcnp-sim sweep    run modes x workloads x loads x seeds, in parallel, in shards
//	fastcnp-sim merge    build the tables and plots of a sweep's result files
//
// Each subcommand lives in its own file and registers itself in init, with
// registerCommand (flags and examples declared, parsed here) or register
// (the command parses its own arguments); `fastcnp-sim help SUBCOMMAND` or
// `fastcnp-sim SUBCOMMAND -h` prints its flags and examples. Exit codes: 0
// success, 1 error, 2 usage (bad flags or arguments, found before anything
// runs).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// env is what a subcommand gets from the process.
type env struct {
	ctx            context.Context
	stdout, stderr io.Writer
	getenv         func(string) string
}

// command is one subcommand: either flags (declared here, parsed by run) or
// raw (parses its own arguments).
type command struct {
	name     string
	order    int    // place in the usage listing
	summary  string // one line
	usage    string // synopsis, after "fastcnp-sim NAME "
	examples string // indented lines
	// flags defines the flags on fs and returns the function that runs the
	// command with the remaining arguments.
	flags func(fs *flag.FlagSet) func(e *env, args []string) error
	// raw runs a command that parses its own arguments: it returns
	// flag.ErrHelp after printing its help, an error wrapping errUsage for a
	// command-line mistake (exit 2), any other error for exit 1.
	raw func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = map[string]*command{}

// registerCommand adds a subcommand; each subcommand's file calls it from init.
func registerCommand(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("fastcnp-sim: subcommand " + c.name + " registered twice")
	}
	if c.order == 0 {
		c.order = 20 // between gen and analyze: run, demo
	}
	commands[c.name] = c
}

// register adds a subcommand that parses its own arguments (see command.raw).
func register(name, summary string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) {
	registerCommand(&command{name: name, summary: summary, raw: run})
}

// errUsage marks a command-line mistake of a raw command (exit 2).
var errUsage = errors.New("usage")

// usageError is an error of the command line: exit code 2.
type usageError struct{ err error }

func (u *usageError) Error() string { return u.err.Error() }
func (u *usageError) Unwrap() error { return u.err }

func usagef(format string, a ...any) error { return &usageError{fmt.Errorf(format, a...)} }

func main() { os.Exit(mainCode(os.Args[1:], os.Stdout, os.Stderr)) }

// mainCode runs the command line with the process's environment and
// signals (SIGINT, SIGTERM cancel) and returns the exit code.
func mainCode(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(&env{ctx: ctx, stdout: stdout, stderr: stderr, getenv: os.Getenv}, args)
}

func sorted() []*command {
	cs := make([]*command, 0, len(commands))
	for _, c := range commands {
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool {
		return cs[i].order < cs[j].order || cs[i].order == cs[j].order && cs[i].name < cs[j].name
	})
	return cs
}

func mainUsage(w io.Writer) {
	fmt.Fprintf(w, "usage: fastcnp-sim COMMAND [flags] [args]\n\ncommands:\n")
	for _, c := range sorted() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\n`fastcnp-sim help COMMAND` or `fastcnp-sim COMMAND -h` shows a command's flags and examples.\n"+
		"Exit codes: 0 ok, 1 error, 2 usage.\n")
}

func commandUsage(w io.Writer, c *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: fastcnp-sim %s %s\n\n%s\n\nflags:\n", c.name, c.usage, c.summary)
	fs.SetOutput(w)
	fs.PrintDefaults()
	if c.examples != "" {
		fmt.Fprintf(w, "\nexamples:\n%s\n", strings.TrimRight(c.examples, "\n"))
	}
}

// run runs the command line args and returns the exit code.
func run(e *env, args []string) int {
	if len(args) == 0 {
		mainUsage(e.stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		mainUsage(e.stdout)
		return exitOK
	case "help":
		if len(args) == 1 {
			mainUsage(e.stdout)
			return exitOK
		}
		c, ok := commands[args[1]]
		if !ok {
			fmt.Fprintf(e.stderr, "fastcnp-sim: unknown command %q\n", args[1])
			return exitUsage
		}
		if c.raw != nil {
			return runRaw(e, c, []string{"-h"})
		}
		fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
		c.flags(fs)
		commandUsage(e.stdout, c, fs)
		return exitOK
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(e.stderr, "fastcnp-sim: unknown command %q\n\n", name)
		mainUsage(e.stderr)
		return exitUsage
	}
	if c.raw != nil {
		return runRaw(e, c, args[1:])
	}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	do := c.flags(fs)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			commandUsage(e.stdout, c, fs)
			return exitOK
		}
		fmt.Fprintf(e.stderr, "fastcnp-sim %s: %v\n(fastcnp-sim %s -h for help)\n", c.name, err, c.name)
		return exitUsage
	}
	if err := do(e, fs.Args()); err != nil {
		fmt.Fprintf(e.stderr, "fastcnp-sim %s: %v\n", c.name, err)
		var ue *usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(e.stderr, "(fastcnp-sim %s -h for help)\n", c.name)
			return exitUsage
		}
		return exitError
	}
	return exitOK
}

// runRaw runs a command that parses its own arguments.
func runRaw(e *env, c *command, args []string) int {
	err := c.raw(e.ctx, args, e.stdout, e.stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errUsage):
		fmt.Fprintf(e.stderr, "fastcnp-sim %s: %v\n", c.name, strings.TrimPrefix(err.Error(), "usage: "))
		return exitUsage
	}
	fmt.Fprintf(e.stderr, "fastcnp-sim %s: %v\n", c.name, err)
	return exitError
}
