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
			"--cert", "--key", "--output", "--server-name", "--switch", "--timeout", "--token", "--token-file", "-o", "routes"}},
		{"verb", []string{"fastcnpctl", "threshold", "s"}, []string{"set"}},
		{"flag", []string{"fastcnpctl", "port", "set", "--red-k"}, []string{"--red-kmax", "--red-kmin"}},
		{"mode value", []string{"fastcnpctl", "port", "set", "--mode", ""}, []string{"ecn", "fastcnp"}},
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

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
