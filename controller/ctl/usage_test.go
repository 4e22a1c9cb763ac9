package ctl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUsageErrors: every malformed command line, flag or argument exits 2
// (usage) before anything is asked of fastcnpd, which is up here: a call
// that reached it would exit 0, 3, 4 or 5 instead. Nothing changes on the
// switches.
func TestUsageErrors(t *testing.T) {
	e := startEnv(t)
	conns := len(e.d.Connections())
	key := []string{"--sender-ip", "10.1.1.5", "--udp-sport", "1", "--dest-qp", "1"}
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		// events
		{"unknown event kind", []string{"events", "--kind", "bogus"}, `--kind "bogus": unknown event kind (known: port_state`},
		{"one unknown kind among good ones", []string{"events", "--kind", "cnp", "--kind", "bogus"}, `--kind "bogus"`},
		{"negative --for", []string{"events", "--for", "-1s"}, "--for -1s: must be positive"},
		{"zero --for", []string{"events", "--for", "0s"}, "--for 0s: must be positive"},
		{"malformed --for", []string{"events", "--for", "soon"}, "invalid value"},
		{"events argument", []string{"events", "now"}, `events: unexpected argument "now"`},
		// connections
		{"remove without flags", []string{"connections", "remove"}, "connections remove: --sender-ip is required"},
		{"remove without port and QP", []string{"connections", "remove", "--sender-ip", "10.1.1.5"}, "--udp-sport is required"},
		{"remove without QP", []string{"connections", "remove", "--sender-ip", "10.1.1.5", "--udp-sport", "1"}, "--dest-qp is required"},
		{"remove with a bad sender", []string{"connections", "remove", "--sender-ip", "10.1.1", "--udp-sport", "1", "--dest-qp", "1"}, `--sender-ip "10.1.1": want an IPv4 address`},
		{"add without QP", []string{"connections", "add", "--sender-ip", "10.1.1.5", "--udp-sport", "1"}, "connections add: --dest-qp is required"},
		{"add with an IPv6 sender", []string{"connections", "add", "--sender-ip", "fd00::1", "--udp-sport", "1", "--dest-qp", "1"}, "want an IPv4 address"},
		{"add with a bad receiver", append([]string{"connections", "add", "--receiver-ip", "nowhere"}, key...), `--receiver-ip "nowhere"`},
		{"add with a QPN beyond 24 bits", append([]string{"connections", "add", "--sender-qpn", "16777216"}, key...), "value out of range"},
		{"unknown verb", []string{"connections", "drop"}, `unknown subcommand "drop"`},
		{"list argument", []string{"connections", "list", "all"}, "unexpected argument"},
		// other commands' arguments
		{"switches argument", []string{"switches", "s1"}, `switches: unexpected argument "s1"`},
		{"ports argument", []string{"ports", "s1"}, `ports: unexpected argument "s1"`},
		{"inc routes argument", []string{"inc", "routes", "--switch", "s2", "all"}, `inc routes: unexpected argument "all"`},
		{"inc without routes", []string{"inc"}, "inc: want"},
		{"threshold without verb", []string{"threshold"}, "want get or set"},
		{"port set with a bad mode", []string{"port", "set", "--switch", "s1", "--port", "3", "--mode", "dctcp"}, `--mode "dctcp": want ecn, fastcnp or int`},
		{"port set with a bad pmax", []string{"port", "set", "--switch", "s1", "--port", "3", "--red-pmax", "lots"}, "invalid value"},
		{"config without verb", []string{"config"}, "config: want"},
		{"config validate without file", []string{"config", "validate"}, "want one FILE"},
		{"completion without shell", []string{"completion"}, "completion: want"},
		{"completion of another shell", []string{"completion", "tcsh"}, `not "tcsh"`},
		// global flags, before or after the command
		{"negative timeout", []string{"--timeout", "-1s", "switches"}, "--timeout -1s: must be positive"},
		{"zero timeout after the command", []string{"ports", "--timeout", "0s"}, "--timeout 0s: must be positive"},
		{"address without port", []string{"--addr", "localhost", "switches"}, `--addr "localhost": want host:port`},
		{"address with an empty port", []string{"switches", "--addr", "127.0.0.1:"}, "the port is missing"},
		{"bad output", []string{"switches", "-o", "xml"}, "want table, json or yaml"},
		{"unknown flag", []string{"switches", "--swich", "s1"}, "flag provided but not defined"},
		{"unknown command", []string{"conn", "remove"}, `unknown command "conn"`},
		{"missing token file", []string{"--token-file", filepath.Join(t.TempDir(), "none"), "switches"}, "--token-file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := e.run(tt.args...)
			if code != ExitUsage || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("exit %d stderr %q, want %d (usage) containing %q (stdout %q)", code, stderr, ExitUsage, tt.stderr, out)
			}
		})
	}
	if n := len(e.d.Connections()); n != conns {
		t.Errorf("%d connections after the usage errors, want %d", n, conns)
	}
	if got := e.qth("s1", 3); got != 400000 {
		t.Errorf("s1 port 3 qth_bytes %d after the usage errors, want the default 400000", got)
	}

	// The same commands well formed reach fastcnpd.
	for _, args := range [][]string{
		{"events", "--kind", "cnp", "--for", "50ms"},
		append([]string{"connections", "add", "--receiver-ip", "10.2.1.9"}, key...),
		append([]string{"connections", "remove"}, key...),
	} {
		if code, _, stderr := e.run(args...); code != ExitOK {
			t.Errorf("%v: exit %d (%s), want 0", args, code, stderr)
		}
	}
}

// TestTokenFileForms: --token-file takes a bare token or a line of
// fastcnpd's token file, with a # comment after it as documented.
func TestTokenFileForms(t *testing.T) {
	e := startEnv(t)
	dir := t.TempDir()
	tests := []struct {
		name, content string
		code          int
	}{
		{"bare token", adminToken + "\n", ExitOK},
		{"token file line with comment", "# mine\nadmin " + adminToken + "   # the NOC's\n", ExitOK},
		{"read line", "read " + readToken + "\n", ExitOK},
		{"role alone", "admin\n", ExitUsage},
		{"three words", "admin " + adminToken + " extra\n", ExitUsage},
		{"empty", "# nothing\n", ExitUsage},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := filepath.Join(dir, strings.Repeat("t", i+1))
			if err := os.WriteFile(f, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if code, _, stderr := e.runNoToken("--token-file", f, "switches"); code != tt.code {
				t.Errorf("exit %d (%s), want %d", code, stderr, tt.code)
			}
		})
	}
}
