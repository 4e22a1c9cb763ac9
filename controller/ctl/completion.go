package ctl

import (
	"context"
	"flag"
	"fmt"
	"strings"
)

// completionShells are the shells `fastcnpctl completion` writes for.
var completionShells = []string{"bash", "zsh", "fish"}

// compCommand is what completes after a command's name.
type compCommand struct {
	name  string
	words []string // verbs
	flags []string // flag names, without dashes
	files bool     // takes file arguments
}

// completionSpec lists, for every command of commands(), its verbs and
// flags; the three scripts are generated from it (TestCompletionSpec keeps
// it in step with the commands).
func completionSpec() []compCommand {
	return []compCommand{
		{name: "switches"},
		{name: "threshold", words: []string{"get", "set"}, flags: []string{"switch", "port", "qth"}},
		{name: "port", words: []string{"get", "set"}, flags: []string{"switch", "port", "qth", "mode", "tcheck",
			"cnp-gap", "red-kmin", "red-kmax", "red-pmax"}},
		{name: "ports", flags: []string{"switch"}},
		{name: "queues", flags: []string{"switch", "port"}},
		{name: "connections", words: []string{"list", "add", "remove"}, flags: []string{"sender-ip", "udp-sport",
			"dest-qp", "receiver-ip", "sender-qpn", "flags", "worker-rank", "inc-group"}},
		{name: "inc", words: []string{"routes", "tree"}, flags: []string{"switch", "buckets"}},
		{name: "link", words: []string{"down", "up"}, flags: []string{"switch", "port"}},
		{name: "events", flags: []string{"follow", "for", "kind"}},
		{name: "config", words: []string{"validate"}, flags: []string{"remote"}, files: true},
		{name: "completion", words: completionShells},
	}
}

// candidates are the words a command completes after its name, with the
// global flags as the shell variable $globals.
func (c compCommand) candidates() string {
	return strings.Join(append(append(append([]string(nil), c.words...), dashed(c.flags)...), "$globals"), " ")
}

// boolFlags are the command flags that take no value.
var boolFlags = map[string]bool{"follow": true, "buckets": true, "remote": true}

// valueFlag is a set of flags whose values complete from a list or as files.
type valueFlag struct {
	flags  []string
	values []string
	files  bool
}

func valueFlags() []valueFlag {
	return []valueFlag{
		{flags: []string{"o", "output"}, values: []string{"table", "json", "yaml"}},
		{flags: []string{"mode"}, values: []string{"ecn", "fastcnp", "int"}},
		{flags: []string{"kind"}, values: eventKinds},
		{flags: []string{"token-file", "ca", "cert", "key"}, files: true},
	}
}

// globalFlags are the flags every command takes (all take a value), in
// name order, as registered by globals.register.
func globalFlags() []*flag.Flag {
	fs := flag.NewFlagSet("fastcnpctl", flag.ContinueOnError)
	(&globals{}).register(fs)
	var out []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { out = append(out, f) })
	return out
}

// dash writes a flag as typed: -o, --addr.
func dash(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

func dashed(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = dash(n)
	}
	return out
}

func globalNames() []string {
	var out []string
	for _, f := range globalFlags() {
		out = append(out, dash(f.Name))
	}
	return out
}

func commandNames() []string {
	var out []string
	for _, c := range commands() {
		out = append(out, c.name)
	}
	return out
}

func cmdCompletion(_ context.Context, g *globals, args []string) error {
	want := `completion: want "completion bash", "completion zsh" or "completion fish"`
	if len(args) != 1 {
		return usageErr("%s", want)
	}
	var script string
	switch args[0] {
	case "bash":
		script = bashCompletion()
	case "zsh":
		script = zshCompletion()
	case "fish":
		script = fishCompletion()
	default:
		return usageErr("%s, not %q", want, args[0])
	}
	_, err := fmt.Fprint(g.stdout, script)
	return err
}

// bashCompletion is the bash script. The command is the first word that is
// neither a flag nor the value of a global flag, so global flags may come
// first.
func bashCompletion() string {
	var b strings.Builder
	globals := globalNames()
	b.WriteString("# fastcnpctl bash completion: source <(fastcnpctl completion bash)\n_fastcnpctl() {\n")
	b.WriteString("  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd=\"\" i=1 w\n")
	fmt.Fprintf(&b, "  local globals=%q\n", strings.Join(globals, " "))
	b.WriteString("  while [[ $i -lt $COMP_CWORD ]]; do\n    w=${COMP_WORDS[i]}\n    case \"$w\" in\n")
	fmt.Fprintf(&b, "      %s) i=$((i + 1)) ;;\n", strings.Join(globals, "|"))
	b.WriteString("      -*) ;;\n      *) cmd=$w; break ;;\n    esac\n    i=$((i + 1))\n  done\n  case \"$prev\" in\n")
	for _, v := range valueFlags() {
		if v.files {
			fmt.Fprintf(&b, "    %s) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n", strings.Join(dashed(v.flags), "|"))
			continue
		}
		fmt.Fprintf(&b, "    %s) COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", strings.Join(dashed(v.flags), "|"),
			strings.Join(v.values, " "))
	}
	b.WriteString("  esac\n  case \"$cmd\" in\n")
	fmt.Fprintf(&b, "    \"\") COMPREPLY=($(compgen -W \"%s help $globals\" -- \"$cur\")) ;;\n", strings.Join(commandNames(), " "))
	for _, c := range completionSpec() {
		files := ""
		if c.files {
			files = "-f "
		}
		fmt.Fprintf(&b, "    %s) COMPREPLY=($(compgen %s-W \"%s\" -- \"$cur\")) ;;\n", c.name, files, c.candidates())
	}
	b.WriteString("  esac\n}\ncomplete -F _fastcnpctl fastcnpctl\n")
	return b.String()
}

// zshCompletion is the zsh script: the same logic as bash's, with compadd.
// Sourced it registers itself with compdef; saved as _fastcnpctl in a
// directory of $fpath, compinit autoloads it (the #compdef line).
func zshCompletion() string {
	var b strings.Builder
	globals := globalNames()
	b.WriteString("#compdef fastcnpctl\n")
	b.WriteString("# fastcnpctl zsh completion: source <(fastcnpctl completion zsh) after compinit,\n")
	b.WriteString("# or save it as _fastcnpctl in a directory of $fpath.\n")
	b.WriteString("_fastcnpctl() {\n  local prev=${words[CURRENT-1]} cmd=\"\" w\n  local -a globals\n")
	fmt.Fprintf(&b, "  globals=(%s)\n", strings.Join(globals, " "))
	b.WriteString("  local -i i=2\n  while (( i < CURRENT )); do\n    w=${words[i]}\n    case $w in\n")
	fmt.Fprintf(&b, "      (%s) i=$((i + 1)) ;;\n", strings.Join(globals, "|"))
	b.WriteString("      (-*) ;;\n      (*) cmd=$w; break ;;\n    esac\n    i=$((i + 1))\n  done\n  case $prev in\n")
	for _, v := range valueFlags() {
		if v.files {
			fmt.Fprintf(&b, "    (%s) _files; return ;;\n", strings.Join(dashed(v.flags), "|"))
			continue
		}
		fmt.Fprintf(&b, "    (%s) compadd -- %s; return ;;\n", strings.Join(dashed(v.flags), "|"), strings.Join(v.values, " "))
	}
	b.WriteString("  esac\n  case $cmd in\n")
	fmt.Fprintf(&b, "    ('') compadd -- %s help $globals ;;\n", strings.Join(commandNames(), " "))
	for _, c := range completionSpec() {
		fmt.Fprintf(&b, "    (%s) compadd -- %s", c.name, c.candidates())
		if c.files {
			b.WriteString("; _files")
		}
		b.WriteString(" ;;\n")
	}
	b.WriteString("  esac\n}\n")
	b.WriteString("if [[ \"$funcstack[1]\" == _fastcnpctl ]]; then\n  _fastcnpctl \"$@\"\nelse\n  compdef _fastcnpctl fastcnpctl\nfi\n")
	return b.String()
}

// fishQuote quotes s for fish (single quotes; \ and ' escaped).
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// fishFlag is the -s/-l part of a fish complete line for a flag.
func fishFlag(name string) string {
	if len(name) == 1 {
		return "-s " + name
	}
	return "-l " + name
}

// fishCompletion is the fish script: global flags everywhere, commands
// until one is given, then that command's verbs and flags.
func fishCompletion() string {
	var b strings.Builder
	b.WriteString("# fastcnpctl fish completion: fastcnpctl completion fish | source\n")
	b.WriteString("# (or save it as ~/.config/fish/completions/fastcnpctl.fish)\n")
	b.WriteString("function __fastcnpctl_command\n    set -l words (commandline -opc)\n    set -e words[1]\n")
	b.WriteString("    set -l skip 0\n    for w in $words\n        if test $skip -eq 1\n            set skip 0\n")
	b.WriteString("            continue\n        end\n        switch $w\n")
	var quoted []string
	for _, n := range globalNames() {
		quoted = append(quoted, fishQuote(n))
	}
	fmt.Fprintf(&b, "            case %s\n                set skip 1\n", strings.Join(quoted, " "))
	b.WriteString("            case '-*'\n            case '*'\n                echo $w\n                return 0\n")
	b.WriteString("        end\n    end\n    return 1\nend\n\n")
	b.WriteString("function __fastcnpctl_needs_command\n    not __fastcnpctl_command >/dev/null\nend\n\n")
	b.WriteString("function __fastcnpctl_using\n    set -l cmd (__fastcnpctl_command)\n    test \"$cmd\" = $argv[1]\nend\n\n")
	b.WriteString("complete -c fastcnpctl -f\n")
	values := map[string]valueFlag{}
	for _, v := range valueFlags() {
		for _, f := range v.flags {
			values[f] = v
		}
	}
	// args completes a flag's value: its list, files, or anything (-r).
	args := func(name string) string {
		v, ok := values[name]
		switch {
		case !ok:
			return "-r"
		case v.files:
			return "-r -F"
		}
		return "-x -a " + fishQuote(strings.Join(v.values, " "))
	}
	for _, f := range globalFlags() {
		fmt.Fprintf(&b, "complete -c fastcnpctl %s %s -d %s\n", fishFlag(f.Name), args(f.Name), fishQuote(f.Usage))
	}
	fmt.Fprintf(&b, "complete -c fastcnpctl -n __fastcnpctl_needs_command -a %s\n",
		fishQuote(strings.Join(append(commandNames(), "help"), " ")))
	for _, c := range completionSpec() {
		cond := fishQuote("__fastcnpctl_using " + c.name)
		if len(c.words) > 0 {
			fmt.Fprintf(&b, "complete -c fastcnpctl -n %s -a %s\n", cond, fishQuote(strings.Join(c.words, " ")))
		}
		if c.files {
			fmt.Fprintf(&b, "complete -c fastcnpctl -n %s -F\n", cond)
		}
		for _, f := range c.flags {
			a := args(f)
			if boolFlags[f] {
				a = ""
			}
			fmt.Fprintf(&b, "complete -c fastcnpctl -n %s %s %s\n", cond, fishFlag(f), a)
		}
	}
	return strings.ReplaceAll(b.String(), " \n", "\n")
}
