package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestOutputFormats: every command that prints data gives JSON that parses
// with -o json and YAML that parses, to the same data, with -o yaml.
func TestOutputFormats(t *testing.T) {
	e := startEnv(t)
	if code, _, stderr := e.run("connections", "add", "--sender-ip", "10.1.1.5", "--udp-sport", "4000", "--dest-qp", "0x11"); code != 0 {
		t.Fatalf("connections add: %d %s", code, stderr)
	}
	tests := []struct {
		name string
		args []string
		key  string // a top-level key the output must have
	}{
		{"switches", []string{"switches"}, "switches"},
		{"ports", []string{"ports"}, "ports"},
		{"ports of one switch", []string{"ports", "--switch", "s1"}, "ports"},
		{"queues", []string{"queues"}, "queues"},
		{"queues of one port", []string{"queues", "--switch", "s1", "--port", "3"}, "queues"},
		{"connections", []string{"connections"}, "connections"},
		{"inc routes", []string{"inc", "routes", "--switch", "s2"}, "next_hops"},
		{"threshold get", []string{"threshold", "get", "--switch", "s1", "--port", "3"}, "qth_bytes"},
		{"port get", []string{"port", "get", "--switch", "s1", "--port", "3"}, "params"},
		{"config validate", []string{"config", "validate", "../config/testdata/fastcnpd.yaml"}, "valid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, jout, stderr := e.run(append(tt.args, "-o", "json")...)
			if code != 0 {
				t.Fatalf("-o json: exit %d: %s", code, stderr)
			}
			var fromJSON map[string]any
			if err := json.Unmarshal([]byte(jout), &fromJSON); err != nil {
				t.Fatalf("-o json does not parse: %v\n%s", err, jout)
			}
			code, yout, stderr := e.run(append(tt.args, "-o", "yaml")...)
			if code != 0 {
				t.Fatalf("-o yaml: exit %d: %s", code, stderr)
			}
			var fromYAML map[string]any
			if err := yaml.Unmarshal([]byte(yout), &fromYAML); err != nil {
				t.Fatalf("-o yaml does not parse: %v\n%s", err, yout)
			}
			if _, ok := fromYAML[tt.key]; !ok {
				t.Errorf("yaml output lacks %q:\n%s", tt.key, yout)
			}
			// Same data: YAML numbers are ints, JSON ones float64; compare
			// through JSON.
			b, err := json.Marshal(fromYAML)
			if err != nil {
				t.Fatal(err)
			}
			var yamlAsJSON map[string]any
			if err := json.Unmarshal(b, &yamlAsJSON); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(fromJSON, yamlAsJSON) {
				t.Errorf("json and yaml differ:\n%s\n%s", jout, yout)
			}
		})
	}
}

// TestCompletionBash sources the completion script in bash and completes
// command lines with it.
func TestCompletionBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to run the completion script:", err)
	}
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"completion", "bash"}, &out, &errb); code != ExitOK {
		t.Fatalf("completion bash: exit %d: %s", code, errb.String())
	}
	script := filepath.Join(t.TempDir(), "fastcnpctl.bash")
	if err := os.WriteFile(script, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	// complete WORDS... completes the last word.
	const driver = `source "$1" || exit 3; shift
complete -p fastcnpctl >/dev/null || exit 4
COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _fastcnpctl; printf '%s\n' "${COMPREPLY[@]}"`
	tests := []struct {
		name  string
		words []string
		want  []string
	}{
		{"command", []string{"fastcnpctl", "thr"}, []string{"threshold"}},
		{"commands starting with c", []string{"fastcnpctl", "co"}, []string{"completion", "config", "connections"}},
		{"after global flags", []string{"fastcnpctl", "--addr", "h:1", "-o", "json", "inc", ""}, []string{"--addr", "--buckets", "--ca",
			"--cert", "--key", "--output", "--server-name", "--switch", "--timeout", "--token", "--token-file", "-o", "routes", "tree"}},
		{"verb", []string{"fastcnpctl", "threshold", "s"}, []string{"set"}},
		{"flag", []string{"fastcnpctl", "port", "set", "--red-k"}, []string{"--red-kmax", "--red-kmin"}},
		{"mode value", []string{"fastcnpctl", "port", "set", "--mode", ""}, []string{"ecn", "fastcnp", "int"}},
		{"output value", []string{"fastcnpctl", "-o", "y"}, []string{"yaml"}},
		{"event kind", []string{"fastcnpctl", "events", "--kind", "port_s"}, []string{"port_settings", "port_state"}},
		{"connections verbs", []string{"fastcnpctl", "connections", "re"}, []string{"remove"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bash, append([]string{"--norc", "--noprofile", "-c", driver, "driver", script}, tt.words...)...)
			b, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("bash: %v\n%s", err, b)
			}
			got := strings.Fields(string(b))
			if !reflect.DeepEqual(sorted(got), sorted(tt.want)) {
				t.Errorf("completions %v, want %v", got, tt.want)
			}
		})
	}
}

// TestCompletionScripts: every shell's script is produced, names every
// command, verb and flag of the completion spec, and parses in its shell
// when that shell is installed (zsh -n, fish --no-execute); an unknown
// shell is a usage error.
func TestCompletionScripts(t *testing.T) {
	checks := map[string]struct {
		markers []string
		parse   []string // the shell and its syntax-check flag
	}{
		"bash": {[]string{"complete -F _fastcnpctl fastcnpctl"}, []string{"bash", "-n"}},
		"zsh":  {[]string{"#compdef fastcnpctl", "compdef _fastcnpctl fastcnpctl"}, []string{"zsh", "-n"}},
		"fish": {[]string{"complete -c fastcnpctl -f", "function __fastcnpctl_command"}, []string{"fish", "--no-execute"}},
	}
	for _, shell := range completionShells {
		t.Run(shell, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := Run(context.Background(), []string{"completion", shell}, &out, &errb); code != ExitOK {
				t.Fatalf("completion %s: exit %d: %s", shell, code, errb.String())
			}
			script := out.String()
			want := append([]string(nil), checks[shell].markers...)
			for _, c := range completionSpec() {
				want = append(want, c.name)
				want = append(want, c.words...)
				want = append(want, c.flags...)
			}
			want = append(want, eventKinds...)
			for _, f := range globalFlags() {
				want = append(want, f.Name)
			}
			for _, w := range want {
				if !strings.Contains(script, w) {
					t.Errorf("the %s script lacks %q", shell, w)
				}
			}
			bin, err := exec.LookPath(checks[shell].parse[0])
			if err != nil {
				t.Skipf("%s is not installed: the script is not parsed", shell)
			}
			file := filepath.Join(t.TempDir(), "fastcnpctl."+shell)
			if err := os.WriteFile(file, out.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			if b, err := exec.Command(bin, checks[shell].parse[1], file).CombinedOutput(); err != nil {
				t.Errorf("%s %s: %v\n%s", bin, checks[shell].parse[1], err, b)
			}
		})
	}
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"completion", "tcsh"}, &out, &errb); code != ExitUsage ||
		!strings.Contains(errb.String(), `"completion fish"`) {
		t.Errorf("completion tcsh: exit %d %q, want %d naming the shells", code, errb.String(), ExitUsage)
	}
}

// TestCompletionSpec keeps the completion spec in step with the commands:
// every command has an entry and no entry names a missing command, and
// every flag it lists is one the command accepts with one of its verbs
// (its --help works with the flag given; an unknown flag is a usage error).
func TestCompletionSpec(t *testing.T) {
	spec := map[string]compCommand{}
	for _, c := range completionSpec() {
		spec[c.name] = c
	}
	for _, c := range commands() {
		if _, ok := spec[c.name]; !ok {
			t.Errorf("command %s has no completion entry", c.name)
		}
		delete(spec, c.name)
	}
	for name := range spec {
		t.Errorf("completion entry %s names no command", name)
	}
	accepts := func(args ...string) bool {
		var out, errb bytes.Buffer
		return Run(context.Background(), append(args, "--help"), &out, &errb) == ExitOK
	}
	for _, c := range completionSpec() {
		for _, f := range c.flags {
			ok := false
			for _, verb := range append([]string{""}, c.words...) {
				args := []string{c.name}
				if verb != "" {
					args = append(args, verb)
				}
				args = append(args, "--"+f)
				if boolFlags[f] {
					ok = ok || accepts(args...)
					continue
				}
				for _, v := range []string{"1", "1s"} {
					ok = ok || accepts(append(args, v)...)
				}
			}
			if !ok {
				t.Errorf("%s does not accept --%s with any of its verbs", c.name, f)
			}
		}
	}
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"ports", "--no-such-flag", "--help"}, &out, &errb); code != ExitUsage {
		t.Errorf("an unknown flag: exit %d, want %d (the check above would prove nothing)", code, ExitUsage)
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
