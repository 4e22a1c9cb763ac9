package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/fastcnp/fastcnp/controller/incroute"
	"github.com/fastcnp/fastcnp/internal/units"
	"github.com/fastcnp/fastcnp/p4src"
)

// Error is one configuration problem.
type Error struct {
	// File is the config source name, Line its 1-based line (0: unknown).
	File string
	Line int
	// Path is the field path, e.g. "switches[0].ports[2].qth".
	Path string
	// Msg says what is wrong.
	Msg string
}

// Error formats the problem as "file:line: path: message".
func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d: %s: %s", e.File, e.Line, e.Path, e.Msg)
}

type decoder struct {
	file string
	// errs holds the first MaxErrors problems in line order (limits.go);
	// total counts them all.
	errs  errHeap
	total int
	// values counts the fields and list items decoded, aliases expanded
	// each time they are used; past MaxValues, decoding stops (stopped).
	values  int
	stopped *Error
	// nodes remembers the value node of every field path, so that checks
	// across fields can point at the right line.
	nodes map[string]*yaml.Node
}

// at returns the node of path if it was seen, else fallback.
func (d *decoder) at(path string, fallback *yaml.Node) *yaml.Node {
	if n := d.nodes[path]; n != nil {
		return n
	}
	return fallback
}

func (d *decoder) addf(n *yaml.Node, path, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	if path == "" {
		path = "(top)"
	}
	if !d.wants(line) {
		d.total++ // counted, not formatted
		return
	}
	d.add(&Error{File: d.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// deref follows aliases (YAML anchors).
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

type fields map[string]func(n *yaml.Node, path string)

// mapping calls the handler of each field present; unknown and duplicate
// fields are errors. Null values count as absent, so defaults apply.
func (d *decoder) mapping(n *yaml.Node, path string, fs fields) bool {
	n = deref(n)
	if !d.budget(n, path, len(n.Content)/2) {
		return false
	}
	if n.Kind != yaml.MappingNode {
		d.addf(n, path, "want a mapping, got %s", kindName(n))
		return false
	}
	seen := make(map[string]bool)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p := join(path, k.Value)
		if seen[k.Value] {
			d.addf(k, p, "field given twice")
			continue
		}
		seen[k.Value] = true
		fn, ok := fs[k.Value]
		if !ok {
			known := make([]string, 0, len(fs))
			for name := range fs {
				known = append(known, name)
			}
			sort.Strings(known)
			d.addf(k, p, "unknown field (known: %s)", strings.Join(known, ", "))
			continue
		}
		if d.nodes == nil {
			d.nodes = make(map[string]*yaml.Node)
		}
		d.nodes[p] = k
		if isNull(v) {
			continue
		}
		fn(deref(v), p)
	}
	return true
}

// budget counts k more values to decode at n; past MaxValues it reports
// one error and stops the decoding (false), so that YAML aliases used over
// and over (a 14 kB file can name a billion values) cost little.
func (d *decoder) budget(n *yaml.Node, path string, k int) bool {
	if d.stopped != nil {
		return false
	}
	d.values += k
	if d.values <= MaxValues {
		return true
	}
	// Reported first, whatever its line (err).
	d.stopped = &Error{File: d.file, Line: n.Line, Path: path,
		Msg: fmt.Sprintf("the config holds more than %d values (YAML aliases count each time they are used): not decoded further", MaxValues)}
	d.total++
	return false
}

// list calls fn for each item of a list of at most max items; a longer
// list is one error ("N items: at most max" + why), its items not looked at.
func (d *decoder) list(n *yaml.Node, path string, max int, why string, fn func(n *yaml.Node, path string)) {
	if n.Kind != yaml.SequenceNode {
		d.addf(n, path, "want a list, got %s", kindName(n))
		return
	}
	if len(n.Content) > max {
		d.addf(n, path, "%d items: at most %d%s", len(n.Content), max, why)
		return
	}
	if !d.budget(n, path, len(n.Content)) {
		return
	}
	for i, item := range n.Content {
		fn(deref(item), index(path, i))
	}
}

func (d *decoder) scalar(n *yaml.Node, path string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		d.addf(n, path, "want a single value, got %s", kindName(n))
		return "", false
	}
	return n.Value, true
}

func (d *decoder) str(n *yaml.Node, path string, dst *string) {
	if v, ok := d.scalar(n, path); ok {
		if v == "" {
			d.addf(n, path, "must not be empty")
			return
		}
		*dst = v
	}
}

func (d *decoder) boolean(n *yaml.Node, path string, dst *bool) {
	v, ok := d.scalar(n, path)
	if !ok {
		return
	}
	switch v {
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		d.addf(n, path, "want true or false, got %q", v)
	}
}

// number is a scalar of at most MaxNumberLen characters: the value of a
// number, size, rate or duration (a longer one is refused before parsing).
func (d *decoder) number(n *yaml.Node, path string) (string, bool) {
	v, ok := d.scalar(n, path)
	if ok && len(v) > MaxNumberLen {
		d.addf(n, path, "a value of %d characters: want a number of at most %d", len(v), MaxNumberLen)
		return "", false
	}
	return v, ok
}

// uint parses an unsigned integer in [lo, hi].
func (d *decoder) uint(n *yaml.Node, path string, lo, hi uint64) (uint64, bool) {
	v, ok := d.number(n, path)
	if !ok {
		return 0, false
	}
	if strings.HasPrefix(strings.TrimSpace(v), "-") {
		d.addf(n, path, "%s: must be >= %d", v, lo)
		return 0, false
	}
	x, err := strconv.ParseUint(strings.ReplaceAll(v, "_", ""), 0, 64)
	if err != nil {
		d.addf(n, path, "%q is not a whole number in %d..%d", v, lo, hi)
		return 0, false
	}
	if x < lo || x > hi {
		d.addf(n, path, "%d is out of range %d..%d", x, lo, hi)
		return 0, false
	}
	return x, true
}

// port reads a front-panel port number: 1..MaxPort, except the CPU port.
func (d *decoder) port(n *yaml.Node, path string) (uint16, bool) {
	v, ok := d.uint(n, path, 1, MaxPort)
	if !ok {
		return 0, false
	}
	if v == p4src.CPUPort {
		d.addf(n, path, "%d is the CPU port (CPU_PORT: packet-in and packet-out to fastcnpd), not a front-panel port", v)
		return 0, false
	}
	return uint16(v), true
}

func (d *decoder) size(n *yaml.Node, path string, lo, hi units.Size) (units.Size, bool) {
	v, ok := d.number(n, path)
	if !ok {
		return 0, false
	}
	s, err := units.ParseSize(v)
	if err != nil {
		d.addf(n, path, "%v", err)
		return 0, false
	}
	if s < lo || s > hi {
		d.addf(n, path, "%s is out of range %s..%s", s, lo, hi)
		return 0, false
	}
	return s, true
}

func (d *decoder) rate(n *yaml.Node, path string, lo, hi units.Rate) (units.Rate, bool) {
	v, ok := d.number(n, path)
	if !ok {
		return 0, false
	}
	r, err := units.ParseRate(v)
	if err != nil {
		d.addf(n, path, "%v", err)
		return 0, false
	}
	if r < lo || r > hi {
		d.addf(n, path, "%s is out of range %s..%s", r, lo, hi)
		return 0, false
	}
	return r, true
}

func (d *decoder) duration(n *yaml.Node, path string, lo, hi time.Duration) (time.Duration, bool) {
	v, ok := d.number(n, path)
	if !ok {
		return 0, false
	}
	t, err := units.ParseDuration(v)
	if err != nil {
		d.addf(n, path, "%v", err)
		return 0, false
	}
	if t < lo || t > hi {
		d.addf(n, path, "%s is out of range %s..%s", units.FormatDuration(t), units.FormatDuration(lo), units.FormatDuration(hi))
		return 0, false
	}
	return t, true
}

// slotTimeout parses an INC slot timeout: 0 (off) or
// MinINCSlotTimeout..MaxINCSlotTimeout.
func (d *decoder) slotTimeout(n *yaml.Node, path string) (time.Duration, bool) {
	v, ok := d.duration(n, path, 0, math.MaxInt64)
	if !ok {
		return 0, false
	}
	if v > MaxINCSlotTimeout {
		d.addf(n, path, "%s: want at most %s (the data plane holds the timeout in 32 bits of nanoseconds)",
			units.FormatDuration(v), MaxINCSlotTimeout)
		return 0, false
	}
	if v != 0 && v < MinINCSlotTimeout {
		d.addf(n, path, "%s: want 0 (no slot aging) or at least %s (BMv2 timestamps count microseconds)",
			units.FormatDuration(v), units.FormatDuration(MinINCSlotTimeout))
		return 0, false
	}
	return v, true
}

func (d *decoder) mac(n *yaml.Node, path string) (net.HardwareAddr, bool) {
	v, ok := d.scalar(n, path)
	if !ok {
		return nil, false
	}
	m, err := net.ParseMAC(v)
	switch {
	case err != nil || len(m) != 6:
		d.addf(n, path, "%q is not a MAC address like 02:00:00:00:00:01", v)
	case m[0]&1 != 0:
		d.addf(n, path, "%s is a multicast MAC; want a unicast one", m)
	case string(m) == "\x00\x00\x00\x00\x00\x00":
		d.addf(n, path, "MAC must not be all zero")
	default:
		return m, true
	}
	return nil, false
}

func (d *decoder) prefix(n *yaml.Node, path string) (netip.Prefix, bool) {
	v, ok := d.scalar(n, path)
	if !ok {
		return netip.Prefix{}, false
	}
	p, err := netip.ParsePrefix(v)
	if err != nil {
		d.addf(n, path, "%q is not a prefix like 10.0.1.0/24", v)
		return netip.Prefix{}, false
	}
	if p.Masked() != p {
		d.addf(n, path, "%s has host bits set (did you mean %s?)", p, p.Masked())
		return netip.Prefix{}, false
	}
	return p, true
}

// hostPort checks host:port; needHost rejects an empty host.
func (d *decoder) hostPort(n *yaml.Node, path string, needHost bool) (string, bool) {
	v, ok := d.scalar(n, path)
	if !ok {
		return "", false
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		d.addf(n, path, "%q is not host:port", v)
		return "", false
	}
	if needHost && host == "" {
		d.addf(n, path, "%q has no host", v)
		return "", false
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		d.addf(n, path, "%q: port must be 1..65535", v)
		return "", false
	}
	return v, true
}

// syntaxError records a YAML syntax error; yaml.v3 messages start with
// "yaml: line N: ...", which gives the line (kept whole in the message).
func (d *decoder) syntaxError(err error, suffix string) {
	line := 0
	msg := err.Error()
	if _, rest, ok := strings.Cut(msg, "line "); ok {
		if num, _, ok := strings.Cut(rest, ":"); ok {
			line, _ = strconv.Atoi(num)
		}
	}
	d.add(&Error{File: d.file, Line: line, Path: "(syntax)", Msg: msg + suffix})
}

// decodeDocument decodes the whole file and runs the cross-field checks.
func (d *decoder) decodeDocument(data []byte) *Config {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		d.syntaxError(err, "")
		return nil
	}
	// One document per file: a second one (after "---") would otherwise be
	// ignored without a word, whatever it holds.
	var second yaml.Node
	switch err := dec.Decode(&second); {
	case errors.Is(err, io.EOF):
	case err != nil:
		d.syntaxError(err, " (in a second YAML document: fastcnpd reads one document per file)")
		return nil
	default:
		d.addf(&second, "(document)", "a second YAML document starts here: fastcnpd reads one document per file "+
			"(remove this \"---\" and what follows, or merge it into the first document)")
		return nil
	}
	c := &Config{
		API:     API{Listen: DefaultAPIListen},
		Metrics: Metrics{Listen: DefaultMetricsListen},
		Announce: Announce{UDPPort: DefaultAnnouncePort, IdleTimeout: DefaultIdleTimeout,
			MaxConnectionsPerPort: DefaultMaxConnectionsPerPort, MaxConnectionsPerSender: DefaultMaxConnectionsPerSender},
		QoS: QoS{
			DSCPPriority:     DefaultDSCPPriority(),
			PCPPriority:      DefaultPCPPriority(),
			LosslessPriority: DefaultLosslessPriority,
			CNPDSCP:          DefaultCNPDSCP,
		},
		StateFile: DefaultStateFile,
		INC:       INCSettings{SlotTimeout: DefaultINCSlotTimeout},
	}
	if len(doc.Content) == 0 {
		d.addf(&doc, "(top)", "empty config: need at least switches")
		return nil
	}
	root := deref(doc.Content[0])
	var swNode, incGroupsNode, stateFileNode, haNode *yaml.Node
	var authSet bool
	d.mapping(root, "", fields{
		"api": func(n *yaml.Node, p string) {
			d.mapping(n, p, fields{
				"listen": func(n *yaml.Node, p string) {
					if v, ok := d.hostPort(n, p, false); ok {
						c.API.Listen = v
					}
				},
				"auth": func(n *yaml.Node, p string) {
					authSet = true
					d.decodeAuth(n, p, &c.API.Auth)
				},
			})
		},
		"state_file": func(n *yaml.Node, p string) { stateFileNode = n; d.str(n, p, &c.StateFile) },
		"ha": func(n *yaml.Node, p string) {
			haNode = n
			d.decodeHA(n, p, c)
		},
		"metrics": func(n *yaml.Node, p string) {
			d.mapping(n, p, fields{
				"listen": func(n *yaml.Node, p string) {
					if n.Kind == yaml.ScalarNode && n.Value == "" {
						c.Metrics.Listen = "" // explicitly disabled
					} else if v, ok := d.hostPort(n, p, false); ok {
						c.Metrics.Listen = v
					}
				},
			})
		},
		"announce": func(n *yaml.Node, p string) {
			d.mapping(n, p, fields{
				"udp_port": func(n *yaml.Node, p string) {
					if v, ok := d.uint(n, p, 1, 65535); ok {
						if v == 4791 {
							d.addf(n, p, "4791 is the RoCEv2 port; announcements need their own")
							return
						}
						c.Announce.UDPPort = uint16(v)
					}
				},
				"idle_timeout": func(n *yaml.Node, p string) {
					if v, ok := d.duration(n, p, time.Second, 7*24*time.Hour); ok {
						c.Announce.IdleTimeout = v
					}
				},
				"max_connections_per_port": func(n *yaml.Node, p string) {
					if v, ok := d.uint(n, p, 1, p4src.ConnTableSize); ok {
						c.Announce.MaxConnectionsPerPort = int(v)
					}
				},
				"max_connections_per_sender": func(n *yaml.Node, p string) {
					if v, ok := d.uint(n, p, 1, p4src.ConnTableSize); ok {
						c.Announce.MaxConnectionsPerSender = int(v)
					}
				},
				"auth": func(n *yaml.Node, p string) { c.Announce.Auth = d.decodeAnnounceAuth(n, p) },
			})
		},
		"qos": func(n *yaml.Node, p string) { d.decodeQoS(n, p, &c.QoS) },
		"inc": func(n *yaml.Node, p string) {
			d.mapping(n, p, fields{
				"slot_timeout": func(n *yaml.Node, p string) {
					if v, ok := d.slotTimeout(n, p); ok {
						c.INC.SlotTimeout = v
					}
				},
				"groups": func(n *yaml.Node, p string) { incGroupsNode = n; d.decodeINCGroups(n, p, &c.INC) },
			})
		},
		"switches": func(n *yaml.Node, p string) { swNode = n },
	})
	if root.Kind != yaml.MappingNode {
		return nil
	}
	if !authSet {
		d.addf(root, "api.auth", "required: set token_file, mtls, or insecure: true")
	}
	if stateFileNode != nil && haNode != nil {
		d.addf(stateFileNode, "state_file", "excluded by ha (line %d): with etcd the state lives in etcd, not in a file",
			haNode.Line)
	}
	if swNode == nil {
		d.addf(root, "switches", "required: at least one switch")
	} else {
		d.list(swNode, "switches", MaxSwitches, " switches (config.MaxSwitches)", func(n *yaml.Node, p string) {
			c.Switches = append(c.Switches, d.decodeSwitch(n, p, c.INC))
		})
		if swNode.Kind == yaml.SequenceNode && len(swNode.Content) == 0 {
			d.addf(swNode, "switches", "at least one switch is required")
		}
		d.checkSwitches(swNode, c)
		d.checkAnnouncePort(swNode, c)
		d.checkPeers(swNode, c)
		if incGroupsNode != nil {
			d.checkINCMembers(incGroupsNode, c)
		}
	}
	d.checkQoS(root, c.QoS)
	return c
}

// checkAnnouncePort rejects a BMv2 or Tofino switch with an announcement port
// other than the default: the parser knows the default as a constant and any
// other port only through the announce_udp_port value set, which neither
// BMv2's P4Runtime server (behavioral-model issue #854) nor Stratum's for
// Tofino (bfrt_node.cc: ValueSetEntry unimplemented) can write.
func (d *decoder) checkAnnouncePort(n *yaml.Node, c *Config) {
	if c.Announce.UDPPort == DefaultAnnouncePort || n.Kind != yaml.SequenceNode {
		return
	}
	portLine := 0
	if pn := d.nodes["announce.udp_port"]; pn != nil {
		portLine = pn.Line
	}
	why := map[Target]string{
		TargetBMv2:   "BMv2's P4Runtime server does not implement parser value sets (behavioral-model issue #854)",
		TargetTofino: "Stratum's P4Runtime server does not implement parser value sets (a ValueSetEntry is UNIMPLEMENTED)",
	}
	for i, s := range c.Switches {
		reason, ok := why[s.Target]
		if !ok || i >= len(n.Content) {
			continue
		}
		p := join(index("switches", i), "target")
		d.addf(d.at(p, deref(n.Content[i])), p, "a %s switch cannot take announce.udp_port %d (line %d): "+
			"%s, so its parser recognises only the compiled-in port %d; use announce.udp_port %d",
			s.Target, c.Announce.UDPPort, portLine, reason, DefaultAnnouncePort, DefaultAnnouncePort)
	}
}

// decodeAnnounceAuth decodes announce.auth.
func (d *decoder) decodeAnnounceAuth(n *yaml.Node, p string) *AnnounceAuth {
	a := &AnnounceAuth{MaxClockSkew: DefaultMaxClockSkew, ReplayCache: DefaultReplayCache}
	d.mapping(n, p, fields{
		"key_file":              func(n *yaml.Node, p string) { d.str(n, p, &a.KeyFile) },
		"allow_unauthenticated": func(n *yaml.Node, p string) { d.boolean(n, p, &a.AllowUnauthenticated) },
		"max_clock_skew": func(n *yaml.Node, p string) {
			if v, ok := d.duration(n, p, time.Second, time.Hour); ok {
				a.MaxClockSkew = v
			}
		},
		"replay_cache": func(n *yaml.Node, p string) {
			if v, ok := d.uint(n, p, MinReplayCache, MaxReplayCache); ok {
				a.ReplayCache = int(v)
			}
		},
	})
	if n.Kind == yaml.MappingNode && a.KeyFile == "" {
		d.addf(n, join(p, "key_file"), "required: the file of the hosts' announcement keys")
	}
	return a
}

func (d *decoder) decodeAuth(n *yaml.Node, p string, a *Auth) {
	set := 0
	var tlsNode *yaml.Node
	d.mapping(n, p, fields{
		"token_file": func(n *yaml.Node, p string) { set++; d.str(n, p, &a.TokenFile) },
		"tls": func(n *yaml.Node, p string) {
			tlsNode = n
			a.TLS = &ServerTLS{}
			d.mapping(n, p, fields{
				"cert":      func(n *yaml.Node, p string) { d.str(n, p, &a.TLS.Cert) },
				"key":       func(n *yaml.Node, p string) { d.str(n, p, &a.TLS.Key) },
				"client_ca": func(n *yaml.Node, p string) { d.str(n, p, &a.TLS.ClientCA) },
			})
			if a.TLS.Cert == "" || a.TLS.Key == "" {
				d.addf(n, p, "tls needs cert and key")
			}
		},
		"mtls": func(n *yaml.Node, p string) {
			set++
			a.MTLS = &TLSFiles{}
			d.mapping(n, p, fields{
				"ca":   func(n *yaml.Node, p string) { d.str(n, p, &a.MTLS.CA) },
				"cert": func(n *yaml.Node, p string) { d.str(n, p, &a.MTLS.Cert) },
				"key":  func(n *yaml.Node, p string) { d.str(n, p, &a.MTLS.Key) },
				"admin_names": func(n *yaml.Node, p string) {
					if n.Kind == yaml.SequenceNode && len(n.Content) == 0 {
						d.addf(n, p, "empty list: name at least one admin, or omit the field to make every verified client an admin")
						return
					}
					seen := map[string]bool{}
					d.list(n, p, MaxListItems, " names", func(n *yaml.Node, p string) {
						var v string
						d.str(n, p, &v)
						switch {
						case v == "":
						case seen[v]:
							d.addf(n, p, "%q is listed twice", v)
						default:
							seen[v] = true
							a.MTLS.AdminNames = append(a.MTLS.AdminNames, v)
						}
					})
				},
			})
			if a.MTLS.CA == "" || a.MTLS.Cert == "" || a.MTLS.Key == "" {
				d.addf(n, p, "mtls needs ca, cert and key")
			}
		},
		"insecure": func(n *yaml.Node, p string) {
			d.boolean(n, p, &a.Insecure)
			if a.Insecure {
				set++
			}
		},
	})
	if set != 1 {
		d.addf(n, p, "set exactly one of token_file, mtls, insecure: true")
	} else if tlsNode != nil && a.TokenFile == "" {
		d.addf(tlsNode, join(p, "tls"), "tls goes with token_file (mtls has its own cert and key; insecure has none)")
	}
}

func (d *decoder) decodeQoS(n *yaml.Node, p string, q *QoS) {
	prioMap := func(n *yaml.Node, p string, maxKey uint64) map[uint8]uint8 {
		m := make(map[uint8]uint8)
		if n.Kind != yaml.MappingNode {
			d.addf(n, p, "want a mapping like {26: 3}, got %s", kindName(n))
			return m
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := deref(n.Content[i]), deref(n.Content[i+1])
			key, ok1 := d.uint(k, p+"."+k.Value, 0, maxKey)
			prio, ok2 := d.uint(v, p+"."+k.Value, 0, 7)
			if !ok1 || !ok2 {
				continue
			}
			if _, dup := m[uint8(key)]; dup {
				d.addf(k, p+"."+k.Value, "given twice")
				continue
			}
			m[uint8(key)] = uint8(prio)
		}
		return m
	}
	d.mapping(n, p, fields{
		"dscp_priority": func(n *yaml.Node, p string) { q.DSCPPriority = prioMap(n, p, 63) },
		"pcp_priority":  func(n *yaml.Node, p string) { q.PCPPriority = prioMap(n, p, 7) },
		"lossless_priority": func(n *yaml.Node, p string) {
			if v, ok := d.uint(n, p, 0, 7); ok {
				q.LosslessPriority = uint8(v)
			}
		},
		"cnp_dscp": func(n *yaml.Node, p string) {
			if v, ok := d.uint(n, p, 0, 63); ok {
				q.CNPDSCP = uint8(v)
			}
		},
	})
}

func (d *decoder) checkQoS(root *yaml.Node, q QoS) {
	mapped := false
	for _, m := range []map[uint8]uint8{q.DSCPPriority, q.PCPPriority} {
		for _, prio := range m {
			mapped = mapped || prio == q.LosslessPriority
		}
	}
	if !mapped {
		d.addf(d.at("qos.lossless_priority", d.at("qos", root)), "qos.lossless_priority", "no DSCP or PCP maps to priority %d", q.LosslessPriority)
	}
	if prio, ok := q.DSCPPriority[q.CNPDSCP]; ok && prio == q.LosslessPriority {
		d.addf(d.at("qos.cnp_dscp", d.at("qos", root)), "qos.cnp_dscp", "CNP DSCP %d maps to the lossless priority %d; CNPs must not wait behind PAUSE", q.CNPDSCP, prio)
	}
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// rawSettings are port settings as written, nil where absent, with the
// node of each field for error lines.
type rawSettings struct {
	linkRate             *units.Rate
	qth, kmin, kmax, mtu *units.Size
	tcheck, rtt, gap     *time.Duration
	mode                 *Mode
	pmax                 *float64
	node, redNode        *yaml.Node
}

// settingsFields decodes port settings into r (shared by defaults and ports).
func (d *decoder) settingsFields(r *rawSettings, fs fields) fields {
	fs["link_rate"] = func(n *yaml.Node, p string) {
		if v, ok := d.rate(n, p, units.Mbps, 10_000*units.Gbps); ok {
			r.linkRate = &v
		}
	}
	fs["qth"] = func(n *yaml.Node, p string) {
		if v, ok := d.size(n, p, 1, math.MaxUint32); ok {
			r.qth = &v
		}
	}
	fs["tcheck"] = func(n *yaml.Node, p string) {
		if v, ok := d.duration(n, p, time.Nanosecond, time.Second); ok {
			r.tcheck = &v
		}
	}
	fs["rtt_base"] = func(n *yaml.Node, p string) {
		if v, ok := d.duration(n, p, time.Nanosecond, time.Second); ok {
			r.rtt = &v
		}
	}
	fs["cnp_gap"] = func(n *yaml.Node, p string) {
		if v, ok := d.duration(n, p, 0, time.Second); ok {
			r.gap = &v
		}
	}
	fs["mode"] = func(n *yaml.Node, p string) {
		v, ok := d.scalar(n, p)
		if !ok {
			return
		}
		if m := Mode(v); m.Valid() {
			r.mode = &m
		} else {
			d.addf(n, p, "%q: want ecn, fastcnp or int", v)
		}
	}
	fs["mtu"] = func(n *yaml.Node, p string) {
		if v, ok := d.size(n, p, 68, 9216); ok {
			r.mtu = &v
		}
	}
	fs["red"] = func(n *yaml.Node, p string) {
		r.redNode = n
		d.mapping(n, p, fields{
			"kmin": func(n *yaml.Node, p string) {
				if v, ok := d.size(n, p, 0, math.MaxUint32); ok {
					r.kmin = &v
				}
			},
			"kmax": func(n *yaml.Node, p string) {
				if v, ok := d.size(n, p, 1, math.MaxUint32); ok {
					r.kmax = &v
				}
			},
			"pmax": func(n *yaml.Node, p string) {
				v, ok := d.scalar(n, p)
				if !ok {
					return
				}
				f, err := strconv.ParseFloat(v, 64)
				if err != nil || math.IsNaN(f) || f <= 0 || f > 1 {
					d.addf(n, p, "%q: want a probability with 0 < pmax <= 1", v)
					return
				}
				r.pmax = &f
			},
		})
	}
	return fs
}

// resolve applies r over base. Qth and Tcheck left unset at both levels
// follow the port's rate and RTTbase (spec 01).
func resolve(base PortSettings, baseQthSet, baseTcheckSet bool, r *rawSettings) PortSettings {
	s := base
	if r.linkRate != nil {
		s.LinkRate = *r.linkRate
	}
	if r.rtt != nil {
		s.RTTBase = *r.rtt
	}
	if r.gap != nil {
		s.CNPGap = *r.gap
	}
	if r.mode != nil {
		s.Mode = *r.mode
	}
	if r.mtu != nil {
		s.MTU = *r.mtu
	}
	if r.kmin != nil {
		s.RED.Kmin = *r.kmin
	}
	if r.kmax != nil {
		s.RED.Kmax = *r.kmax
	}
	if r.pmax != nil {
		s.RED.Pmax = *r.pmax
	}
	switch {
	case r.qth != nil:
		s.Qth = *r.qth
	case !baseQthSet:
		s.Qth = DefaultQth(s.LinkRate)
	}
	switch {
	case r.tcheck != nil:
		s.Tcheck = *r.tcheck
	case !baseTcheckSet:
		s.Tcheck = s.RTTBase
	}
	return s
}

// checkRED reports Kmin >= Kmax where r touches the curve.
func (d *decoder) checkRED(s PortSettings, r *rawSettings, p string) {
	if r.redNode == nil {
		return // inherited unchanged: checked where it was set
	}
	if s.RED.Kmin >= s.RED.Kmax {
		d.addf(r.redNode, join(p, "red"), "kmin (%s) must be less than kmax (%s)", s.RED.Kmin, s.RED.Kmax)
	}
}

func builtinDefaults() PortSettings {
	return PortSettings{
		LinkRate: DefaultLinkRate,
		RTTBase:  DefaultRTTBase,
		CNPGap:   DefaultCNPGap,
		Mode:     DefaultMode,
		MTU:      DefaultMTU,
		RED:      RED{Kmin: DefaultKmin, Kmax: DefaultKmax, Pmax: DefaultPmax},
	}
}

func (d *decoder) decodeSwitch(n *yaml.Node, p string, inc INCSettings) Switch {
	s := Switch{Target: TargetFastcnp, ElectionID: ElectionID{Low: 1}, Keepalive: DefaultKeepalive,
		INCSlotTimeout: inc.SlotTimeout, INCCapacity: DefaultINCCapacity}
	var defaults rawSettings
	var portsNode, routesNode, incNode, tlsNode, keepaliveNode, tofinoNode *yaml.Node
	type rawPort struct {
		node     *yaml.Node
		path     string
		number   uint16
		settings rawSettings
		mac      net.HardwareAddr
		subnets  []netip.Prefix
		subNodes []*yaml.Node
		peer     *PeerPort
	}
	var ports []*rawPort
	seenField := map[string]bool{}
	mark := func(name string, fn func(*yaml.Node, string)) func(*yaml.Node, string) {
		return func(n *yaml.Node, p string) { seenField[name] = true; fn(n, p) }
	}
	d.mapping(n, p, fields{
		"name": mark("name", func(n *yaml.Node, p string) {
			if v, ok := d.scalar(n, p); ok {
				if !nameRE.MatchString(v) {
					d.addf(n, p, "%q: use letters, digits, '.', '_' and '-'", v)
					return
				}
				s.Name = v
			}
		}),
		"address": mark("address", func(n *yaml.Node, p string) {
			if v, ok := d.hostPort(n, p, true); ok {
				s.Address = v
			}
		}),
		"device_id": mark("device_id", func(n *yaml.Node, p string) {
			if v, ok := d.uint(n, p, 1, math.MaxUint64); ok {
				s.DeviceID = v
			}
		}),
		"election_id": func(n *yaml.Node, p string) { d.decodeElection(n, p, &s.ElectionID) },
		"role":        func(n *yaml.Node, p string) { d.str(n, p, &s.Role) },
		"tls": mark("tls", func(n *yaml.Node, p string) {
			tlsNode = n
			before := d.total
			defer func() {
				if d.total > before {
					tlsNode = nil // already reported; skip the combination check
				}
			}()
			d.mapping(n, p, fields{
				"insecure":    func(n *yaml.Node, p string) { d.boolean(n, p, &s.TLS.Insecure) },
				"ca":          func(n *yaml.Node, p string) { d.str(n, p, &s.TLS.CA) },
				"cert":        func(n *yaml.Node, p string) { d.str(n, p, &s.TLS.Cert) },
				"key":         func(n *yaml.Node, p string) { d.str(n, p, &s.TLS.Key) },
				"server_name": func(n *yaml.Node, p string) { d.str(n, p, &s.TLS.ServerName) },
			})
		}),
		"target": func(n *yaml.Node, p string) {
			v, ok := d.scalar(n, p)
			if !ok {
				return
			}
			switch t := Target(v); t {
			case TargetFastcnp, TargetBMv2, TargetTofino:
				s.Target = t
			default:
				d.addf(n, p, "%q: want fastcnp-switch, bmv2 or tofino", v)
			}
		},
		"keepalive": func(n *yaml.Node, p string) {
			if v, ok := d.duration(n, p, 0, 2*time.Hour); ok {
				if v != 0 && v < MinKeepalive {
					d.addf(n, p, "%s: want 0 (off) or at least %s (gRPC's shortest ping interval)",
						units.FormatDuration(v), units.FormatDuration(MinKeepalive))
					return
				}
				s.Keepalive, keepaliveNode = v, n
			}
		},
		"p4info":        func(n *yaml.Node, p string) { d.str(n, p, &s.P4Info) },
		"device_config": func(n *yaml.Node, p string) { d.str(n, p, &s.DeviceConfig) },
		"defaults": func(n *yaml.Node, p string) {
			defaults.node = n
			d.mapping(n, p, d.settingsFields(&defaults, fields{}))
		},
		"ports":  func(n *yaml.Node, p string) { portsNode = n },
		"routes": func(n *yaml.Node, p string) { routesNode = n },
		"inc":    func(n *yaml.Node, p string) { incNode = n },
		"tofino": func(n *yaml.Node, p string) { tofinoNode = n },
	})
	if n.Kind != yaml.MappingNode {
		return s
	}
	for _, f := range []string{"name", "address", "device_id", "tls"} {
		if !seenField[f] {
			d.addf(n, join(p, f), "required")
		}
	}
	if tlsNode != nil {
		t := s.TLS
		switch {
		case t.Insecure && (t.CA != "" || t.Cert != "" || t.Key != ""):
			d.addf(tlsNode, join(p, "tls"), "insecure: true excludes ca, cert and key")
		case !t.Insecure && t.CA == "":
			d.addf(tlsNode, join(p, "tls"), "set ca (and optionally cert and key), or insecure: true")
		case (t.Cert == "") != (t.Key == ""):
			d.addf(tlsNode, join(p, "tls"), "cert and key go together")
		}
	}
	if keepaliveNode != nil && s.Keepalive != 0 && s.Keepalive < ServerPingMinTime && s.Target != TargetTofino {
		d.addf(keepaliveNode, join(p, "keepalive"), "%s is shorter than the %s a %s P4Runtime server accepts pings at "+
			"(the gRPC default): it would close the connection with GOAWAY too_many_pings; use at least %s, or 0 (off)",
			units.FormatDuration(s.Keepalive), units.FormatDuration(ServerPingMinTime), s.Target,
			units.FormatDuration(ServerPingMinTime))
	}
	d.decodeTofino(tofinoNode, join(p, "tofino"), &s)
	if s.Target != TargetFastcnp {
		if s.P4Info == "" {
			d.addf(n, join(p, "p4info"), "required for target %s", s.Target)
		}
		if s.DeviceConfig == "" {
			d.addf(n, join(p, "device_config"), "required for target %s", s.Target)
		}
	}

	// Defaults, then ports over them.
	s.Defaults = resolve(builtinDefaults(), false, false, &defaults)
	d.checkRED(s.Defaults, &defaults, join(p, "defaults"))
	defQthSet, defTcheckSet := defaults.qth != nil, defaults.tcheck != nil
	if portsNode != nil {
		d.list(portsNode, join(p, "ports"), MaxPorts, " (NUM_PORTS)", func(n *yaml.Node, pp string) {
			rp := &rawPort{node: n, path: pp}
			rp.settings.node = n
			seenPort := false
			fs := d.settingsFields(&rp.settings, fields{
				"port": func(n *yaml.Node, p string) {
					seenPort = true
					if v, ok := d.port(n, p); ok {
						rp.number = v
					}
				},
				"mac": func(n *yaml.Node, p string) {
					if m, ok := d.mac(n, p); ok {
						rp.mac = m
					}
				},
				"subnets": func(n *yaml.Node, p string) {
					d.list(n, p, MaxSubnets, " subnets per switch", func(n *yaml.Node, p string) {
						if v, ok := d.prefix(n, p); ok {
							rp.subnets = append(rp.subnets, v)
							rp.subNodes = append(rp.subNodes, n)
						}
					})
				},
				"peer": func(n *yaml.Node, p string) { rp.peer = d.decodePeer(n, p) },
			})
			if !d.mapping(n, pp, fs) {
				return
			}
			if !seenPort {
				d.addf(n, join(pp, "port"), "required")
			}
			ports = append(ports, rp)
		})
	}
	seenNum := map[uint16]string{}
	type subnetOwner struct {
		prefix netip.Prefix
		path   string
	}
	var subnets []subnetOwner
	subnetsFull := false
	for _, rp := range ports {
		settings := resolve(s.Defaults, defQthSet, defTcheckSet, &rp.settings)
		d.checkRED(settings, &rp.settings, rp.path)
		if rp.number != 0 {
			if other, dup := seenNum[rp.number]; dup {
				d.addf(d.at(join(rp.path, "port"), rp.node), join(rp.path, "port"), "port %d already configured at %s", rp.number, other)
				continue
			}
			seenNum[rp.number] = rp.path
		}
		for i, sn := range rp.subnets {
			sp := index(join(rp.path, "subnets"), i)
			if len(subnets) == MaxSubnets {
				if subnetsFull {
					break
				}
				subnetsFull = true
				d.addf(rp.subNodes[i], sp, "more than %d subnets on this switch (config.MaxSubnets): the rest are not checked", MaxSubnets)
				break
			}
			for _, o := range subnets {
				if o.prefix.Overlaps(sn) {
					d.addf(rp.subNodes[i], sp, "%s overlaps %s at %s", sn, o.prefix, o.path)
				}
			}
			subnets = append(subnets, subnetOwner{sn, sp})
		}
		if rp.number != 0 {
			if rp.peer != nil && len(rp.subnets) > 0 {
				d.addf(d.at(join(rp.path, "peer"), rp.node), join(rp.path, "peer"),
					"a port with a peer switch leads to that switch, not to hosts: it has no subnets")
			}
			s.Ports = append(s.Ports, Port{Number: rp.number, Settings: settings, MAC: rp.mac, Subnets: rp.subnets, Peer: rp.peer})
		}
	}
	if routesNode != nil {
		d.decodeRoutes(routesNode, join(p, "routes"), &s)
	}
	if incNode != nil {
		d.decodeINC(incNode, join(p, "inc"), &s)
	}
	d.checkTofinoPorts(n, p, &s)
	return s
}

// decodeTofino reads a switch's tofino block (docs/config.md): only for target
// tofino, where it defaults to Tofino 1's ports.
func (d *decoder) decodeTofino(n *yaml.Node, p string, s *Switch) {
	if s.Target != TargetTofino {
		if n != nil {
			d.addf(n, p, "only for target tofino (this switch is %s)", s.Target)
		}
		return
	}
	chip := Tofino1
	var cpu, recirc *uint16
	var truncate *int32
	if n != nil {
		d.mapping(n, p, fields{
			"chip": func(n *yaml.Node, p string) {
				if v, ok := d.scalar(n, p); ok {
					switch c := TofinoChip(v); c {
					case Tofino1, Tofino2:
						chip = c
					default:
						d.addf(n, p, "%q: want tofino1 or tofino2", v)
					}
				}
			},
			"cpu_port": func(n *yaml.Node, p string) {
				if v, ok := d.uint(n, p, 0, MaxPort); ok {
					x := uint16(v)
					cpu = &x
				}
			},
			"recirculation_port": func(n *yaml.Node, p string) {
				if v, ok := d.uint(n, p, 0, MaxPort); ok {
					x := uint16(v)
					recirc = &x
				}
			},
			"mirror_truncate": func(n *yaml.Node, p string) {
				if v, ok := d.uint(n, p, MinMirrorTruncate, math.MaxUint16); ok {
					x := int32(v)
					truncate = &x
				}
			},
		})
	}
	t := DefaultTofino(chip)
	if cpu != nil {
		t.CPUPort = *cpu
	}
	if recirc != nil {
		t.RecircPort = *recirc
	}
	if truncate != nil {
		t.MirrorTruncate = *truncate
	}
	if t.CPUPort == t.RecircPort && n != nil {
		d.addf(n, p, "cpu_port and recirculation_port are both %d", t.CPUPort)
	}
	s.Tofino = &t
}

// checkTofinoPorts refuses a tofino switch's CPU or recirculation port as a
// front-panel port (routes and INC next hops must be configured ports, so they
// cannot use them either): packets sent there never leave the switch.
func (d *decoder) checkTofinoPorts(n *yaml.Node, p string, s *Switch) {
	if s.Tofino == nil {
		return
	}
	reserved := func(port uint16) string {
		switch port {
		case s.Tofino.CPUPort:
			return "the CPU port (tofino.cpu_port)"
		case s.Tofino.RecircPort:
			return "the recirculation port (tofino.recirculation_port)"
		}
		return ""
	}
	for i, port := range s.Ports {
		if why := reserved(port.Number); why != "" {
			pp := join(index(join(p, "ports"), i), "port")
			d.addf(d.at(pp, n), pp, "%d is %s, not a front-panel port", port.Number, why)
		}
	}
}

func (d *decoder) decodeElection(n *yaml.Node, p string, e *ElectionID) {
	switch n.Kind {
	case yaml.ScalarNode:
		if v, ok := d.uint(n, p, 1, math.MaxUint64); ok {
			*e = ElectionID{Low: v}
		}
		return
	case yaml.SequenceNode:
		if len(n.Content) != 2 {
			d.addf(n, p, "want [high, low], got %d values", len(n.Content))
			return
		}
		hi, ok1 := d.uint(deref(n.Content[0]), index(p, 0), 0, math.MaxUint64)
		lo, ok2 := d.uint(deref(n.Content[1]), index(p, 1), 0, math.MaxUint64)
		if ok1 && ok2 {
			*e = ElectionID{High: hi, Low: lo}
		}
	case yaml.MappingNode:
		var id ElectionID
		ok := true
		d.mapping(n, p, fields{
			"high": func(n *yaml.Node, p string) { v, k := d.uint(n, p, 0, math.MaxUint64); id.High, ok = v, ok && k },
			"low":  func(n *yaml.Node, p string) { v, k := d.uint(n, p, 0, math.MaxUint64); id.Low, ok = v, ok && k },
		})
		if ok {
			*e = id
		}
	default:
		d.addf(n, p, "want a number, [high, low] or {high, low}")
		return
	}
	if e.IsZero() {
		d.addf(n, p, "election ID must not be 0 (a primary controller needs one)")
	}
}

func (d *decoder) decodeRoutes(n *yaml.Node, p string, s *Switch) {
	seen := map[netip.Prefix]string{}
	ecmpRoutes := 0
	var ecmpWeight uint64
	d.list(n, p, MaxRoutes, " (ROUTE_TABLE_SIZE)", func(n *yaml.Node, rp string) {
		var r Route
		var portNode, hopsNode *yaml.Node
		got := map[string]bool{}
		d.mapping(n, rp, fields{
			"prefix": func(n *yaml.Node, p string) {
				got["prefix"] = true
				if v, ok := d.prefix(n, p); ok {
					r.Prefix = v
				}
			},
			"port": func(n *yaml.Node, p string) {
				got["port"], portNode = true, n
				if v, ok := d.port(n, p); ok {
					r.Port = v
				}
			},
			"next_hop_mac": func(n *yaml.Node, p string) {
				got["next_hop_mac"] = true
				if m, ok := d.mac(n, p); ok {
					r.NextHopMAC = m
				}
			},
			"next_hops": func(n *yaml.Node, p string) { got["next_hops"], hopsNode = true, n },
		})
		if n.Kind != yaml.MappingNode {
			return
		}
		if !got["prefix"] {
			d.addf(n, join(rp, "prefix"), "required")
		}
		switch {
		case got["next_hops"] && (got["port"] || got["next_hop_mac"]):
			d.addf(hopsNode, join(rp, "next_hops"), "give either next_hops or port and next_hop_mac, not both")
		case got["next_hops"]:
			d.decodeRouteHops(hopsNode, join(rp, "next_hops"), s, &r)
		default:
			for _, f := range []string{"port", "next_hop_mac"} {
				if !got[f] {
					d.addf(n, join(rp, f), "required (or next_hops for ECMP)")
				}
			}
			if r.Port != 0 {
				d.checkRoutePort(portNode, join(rp, "port"), s, r.Port)
			}
		}
		if r.Prefix.IsValid() {
			if other, dup := seen[r.Prefix]; dup {
				d.addf(d.at(join(rp, "prefix"), n), join(rp, "prefix"), "%s already routed at %s", r.Prefix, other)
			}
			seen[r.Prefix] = rp
		}
		// The data plane's ECMP limits, over the switch's IPv4 ECMP routes
		// (IPv6 routes are not installed).
		if len(r.NextHops) > 1 && r.Prefix.Addr().Is4() {
			ecmpRoutes++
			before := ecmpWeight
			for _, h := range r.NextHops {
				ecmpWeight += uint64(h.Weight)
			}
			if ecmpRoutes == MaxECMPRoutes+1 {
				d.addf(hopsNode, join(rp, "next_hops"), "more than %d ECMP routes: the data plane holds %d ECMP groups (next_hop_group_select)",
					MaxECMPRoutes, MaxECMPRoutes)
			}
			if before <= MaxECMPWeight && ecmpWeight > MaxECMPWeight {
				d.addf(hopsNode, join(rp, "next_hops"), "the weights of the switch's ECMP routes add up to %d with this route, "+
					"more than the %d the action selector next_hop_selector holds for all of them (NEXT_HOP_GROUP_MEMBERS)",
					ecmpWeight, MaxECMPWeight)
			}
		}
		s.Routes = append(s.Routes, r)
	})
}

// hopFields are the port and mac fields of a next hop (of an ECMP route or
// of INC): they fill port and mac, note which were given in got, and keep
// the port's node for later checks.
func (d *decoder) hopFields(port *uint16, mac *net.HardwareAddr, got map[string]bool, portNode **yaml.Node) fields {
	return fields{
		"port": func(n *yaml.Node, p string) {
			got["port"], *portNode = true, n
			if v, ok := d.port(n, p); ok {
				*port = v
			}
		},
		"mac": func(n *yaml.Node, p string) {
			got["mac"] = true
			if m, ok := d.mac(n, p); ok {
				*mac = m
			}
		},
	}
}

// checkRoutePort checks that a route's egress port is configured with a
// MAC (the source MAC of routed packets).
func (d *decoder) checkRoutePort(n *yaml.Node, p string, s *Switch, port uint16) {
	switch pc := s.Port(port); {
	case pc == nil:
		d.addf(n, p, "port %d is not configured under ports", port)
	case pc.MAC == nil:
		d.addf(n, p, "port %d has no mac (the source MAC of routed packets)", port)
	}
}

// decodeRouteHops reads an ECMP route's next hops into r: two or more
// become r.NextHops; a single one becomes r.Port and r.NextHopMAC (a
// direct set_nexthop entry, as the single-next-hop form).
func (d *decoder) decodeRouteHops(n *yaml.Node, p string, s *Switch, r *Route) {
	if n.Kind == yaml.SequenceNode && len(n.Content) == 0 {
		d.addf(n, p, "at least one next hop is required")
		return
	}
	type key struct {
		port uint16
		mac  string
	}
	seen := map[key]string{}
	var hops []NextHop
	var total uint64
	ok := true
	d.list(n, p, MaxECMPWeight, " (NEXT_HOP_GROUP_MEMBERS: every hop weighs at least 1)", func(n *yaml.Node, hp string) {
		h := NextHop{Weight: 1}
		var portNode *yaml.Node
		got := map[string]bool{}
		before := d.total
		fs := d.hopFields(&h.Port, &h.MAC, got, &portNode)
		fs["weight"] = func(n *yaml.Node, p string) {
			if v, ok := d.uint(n, p, 1, MaxECMPWeight); ok {
				h.Weight = uint32(v)
			}
		}
		d.mapping(n, hp, fs)
		if n.Kind != yaml.MappingNode {
			ok = false
			return
		}
		for _, f := range []string{"port", "mac"} {
			if !got[f] {
				d.addf(n, join(hp, f), "required")
			}
		}
		if h.Port != 0 {
			d.checkRoutePort(portNode, join(hp, "port"), s, h.Port)
		}
		if h.Port != 0 && h.MAC != nil {
			k := key{h.Port, h.MAC.String()}
			if other, dup := seen[k]; dup {
				d.addf(portNode, join(hp, "port"), "next hop port %d mac %s is already %s", h.Port, h.MAC, other)
			}
			seen[k] = hp
		}
		if d.total > before {
			ok = false
		}
		total += uint64(h.Weight)
		hops = append(hops, h)
	})
	if total > MaxECMPWeight {
		d.addf(n, p, "weights add up to %d, more than the %d the action selector next_hop_selector holds (NEXT_HOP_GROUP_MEMBERS)",
			total, MaxECMPWeight)
		ok = false
	}
	switch {
	case !ok || n.Kind != yaml.SequenceNode:
	case len(hops) == 1:
		r.Port, r.NextHopMAC = hops[0].Port, hops[0].MAC
	default:
		r.NextHops = hops
	}
}

func (d *decoder) decodeINC(n *yaml.Node, p string, s *Switch) {
	inc := &INC{Buckets: DefaultINCBuckets}
	var hopsNode *yaml.Node
	routing := false // buckets or next_hops given: the block configures INC routing
	d.mapping(n, p, fields{
		"buckets": func(n *yaml.Node, p string) {
			routing = true
			if v, ok := d.uint(n, p, 1, incroute.MaxBuckets); ok {
				inc.Buckets = int(v)
			}
		},
		"next_hops": func(n *yaml.Node, p string) { routing, hopsNode = true, n },
		"slot_timeout": func(n *yaml.Node, p string) {
			if v, ok := d.slotTimeout(n, p); ok {
				s.INCSlotTimeout = v
			}
		},
		"capacity": func(n *yaml.Node, p string) {
			if v, ok := d.uint(n, p, 0, math.MaxUint32); ok {
				s.INCCapacity = v
			}
		},
	})
	if n.Kind != yaml.MappingNode {
		return
	}
	if !routing && len(n.Content) > 0 {
		return // only slot_timeout and capacity: no INC routing on this switch
	}
	if hopsNode == nil {
		d.addf(n, join(p, "next_hops"), "required: at least one next hop")
		s.INC = inc
		return
	}
	seen := map[uint16]string{}
	var total uint64
	overflow := false
	before := d.total
	d.list(hopsNode, join(p, "next_hops"), MaxPorts, " (NUM_PORTS: one per port)", func(n *yaml.Node, hp string) {
		var h INCNextHop
		var portNode *yaml.Node
		got := map[string]bool{}
		fs := d.hopFields(&h.Port, &h.MAC, got, &portNode)
		fs["weight"] = func(n *yaml.Node, p string) {
			got["weight"] = true
			if v, ok := d.uint(n, p, 0, math.MaxUint64); ok {
				h.Weight = v
			}
		}
		d.mapping(n, hp, fs)
		if n.Kind != yaml.MappingNode {
			return
		}
		for _, f := range []string{"port", "mac", "weight"} {
			if !got[f] {
				d.addf(n, join(hp, f), "required")
			}
		}
		if h.Port != 0 {
			if other, dup := seen[h.Port]; dup {
				d.addf(portNode, join(hp, "port"), "port %d is already a next hop at %s", h.Port, other)
			}
			seen[h.Port] = hp
			if s.Port(h.Port) == nil {
				d.addf(portNode, join(hp, "port"), "port %d is not configured under ports", h.Port)
			}
		}
		if total+h.Weight < total {
			overflow = true
		}
		total += h.Weight
		inc.NextHops = append(inc.NextHops, h)
	})
	switch {
	case overflow:
		d.addf(hopsNode, join(p, "next_hops"), "weights add up to more than 2^64-1")
	case hopsNode.Kind == yaml.SequenceNode && len(hopsNode.Content) == 0:
		d.addf(hopsNode, join(p, "next_hops"), "at least one next hop is required")
	case total == 0 && hopsNode.Kind == yaml.SequenceNode && d.total == before:
		d.addf(hopsNode, join(p, "next_hops"), "at least one next hop needs a positive weight")
	}
	s.INC = inc
}

// checkSwitches enforces uniqueness across switches.
func (d *decoder) checkSwitches(n *yaml.Node, c *Config) {
	if n.Kind != yaml.SequenceNode {
		return
	}
	names, ids, addrs := map[string]int{}, map[uint64]int{}, map[string]int{}
	for i, s := range c.Switches {
		if i >= len(n.Content) {
			break
		}
		item := deref(n.Content[i])
		p := index("switches", i)
		if s.Name != "" {
			if j, dup := names[s.Name]; dup {
				d.addf(d.at(join(p, "name"), item), join(p, "name"), "%q is already the name of switches[%d]", s.Name, j)
			}
			names[s.Name] = i
		}
		if s.DeviceID != 0 {
			if j, dup := ids[s.DeviceID]; dup {
				d.addf(d.at(join(p, "device_id"), item), join(p, "device_id"), "%d is already the device ID of switches[%d]", s.DeviceID, j)
			}
			ids[s.DeviceID] = i
		}
		if s.Address != "" {
			if j, dup := addrs[s.Address]; dup {
				d.addf(d.at(join(p, "address"), item), join(p, "address"), "%s is already the address of switches[%d]", s.Address, j)
			}
			addrs[s.Address] = i
		}
	}
}

// decodePeer reads a port's peer: {switch: NAME, port: N}.
func (d *decoder) decodePeer(n *yaml.Node, p string) *PeerPort {
	var pp PeerPort
	got := map[string]bool{}
	d.mapping(n, p, fields{
		"switch": func(n *yaml.Node, p string) { got["switch"] = true; d.str(n, p, &pp.Switch) },
		"port": func(n *yaml.Node, p string) {
			got["port"] = true
			if v, ok := d.port(n, p); ok {
				pp.Port = v
			}
		},
	})
	if deref(n).Kind != yaml.MappingNode {
		return nil
	}
	for _, f := range []string{"switch", "port"} {
		if !got[f] {
			d.addf(n, join(p, f), "required")
		}
	}
	if pp.Switch == "" || pp.Port == 0 {
		return nil
	}
	return &pp
}

// checkPeers checks the links between switches (ports' peer): the peer is
// another configured switch and one of its configured ports, which, when it
// names a peer itself, names this port back; no port is the peer of two.
func (d *decoder) checkPeers(n *yaml.Node, c *Config) {
	if n.Kind != yaml.SequenceNode {
		return
	}
	type end struct {
		sw   string
		port uint16
	}
	claimed := map[end]string{}
	for i := range c.Switches {
		if i >= len(n.Content) {
			break
		}
		s := &c.Switches[i]
		for j, pt := range s.Ports {
			if pt.Peer == nil {
				continue
			}
			p := join(index(join(index("switches", i), "ports"), j), "peer")
			at := d.at(p, deref(n.Content[i]))
			other := c.Switch(pt.Peer.Switch)
			switch {
			case pt.Peer.Switch == s.Name:
				d.addf(at, p, "a port's peer is another switch, not %s itself", s.Name)
				continue
			case other == nil:
				d.addf(at, p, "switch %q is not configured", pt.Peer.Switch)
				continue
			}
			op := other.Port(pt.Peer.Port)
			switch {
			case op == nil:
				d.addf(at, p, "switch %s has no port %d under ports", other.Name, pt.Peer.Port)
				continue
			case op.Peer != nil && (op.Peer.Switch != s.Name || op.Peer.Port != pt.Number):
				d.addf(at, p, "%s port %d names %s port %d as its peer, not %s port %d", other.Name, op.Number,
					op.Peer.Switch, op.Peer.Port, s.Name, pt.Number)
				continue
			}
			e := end{other.Name, op.Number}
			if prev, dup := claimed[e]; dup {
				d.addf(at, p, "%s port %d is already the peer of %s", other.Name, op.Number, prev)
				continue
			}
			claimed[e] = fmt.Sprintf("%s port %d", s.Name, pt.Number)
		}
	}
}

// decodeINCGroups reads inc.groups: each group's ID and members (host,
// rank); IDs, hosts within a group and ranks within a group are unique.
func (d *decoder) decodeINCGroups(n *yaml.Node, p string, inc *INCSettings) {
	ids := map[uint16]string{}
	d.list(n, p, p4src.IncGroups, " INC groups (INC_GROUPS)", func(n *yaml.Node, gp string) {
		var g INCGroup
		var idNode, membersNode *yaml.Node
		d.mapping(n, gp, fields{
			"id": func(n *yaml.Node, p string) {
				idNode = n
				if v, ok := d.uint(n, p, 1, math.MaxUint16); ok {
					g.ID = uint16(v)
				}
			},
			"members": func(n *yaml.Node, p string) { membersNode = n },
		})
		if deref(n).Kind != yaml.MappingNode {
			return
		}
		if idNode == nil {
			d.addf(n, join(gp, "id"), "required")
		} else if g.ID != 0 {
			if prev, dup := ids[g.ID]; dup {
				d.addf(idNode, join(gp, "id"), "INC group %d is already defined at %s", g.ID, prev)
			}
			ids[g.ID] = gp
		}
		if membersNode == nil {
			d.addf(n, join(gp, "members"), "required: at least one member")
			inc.Groups = append(inc.Groups, g)
			return
		}
		hosts := map[netip.Addr]string{}
		ranks := map[uint8]string{}
		mp := join(gp, "members")
		d.list(membersNode, mp, MaxINCMembers, " members (the contributor bitmap has 32 bits)", func(n *yaml.Node, p string) {
			var m INCMember
			got := map[string]bool{}
			var hostNode, rankNode *yaml.Node
			d.mapping(n, p, fields{
				"host": func(n *yaml.Node, p string) {
					got["host"], hostNode = true, n
					v, ok := d.scalar(n, p)
					if !ok {
						return
					}
					a, err := netip.ParseAddr(v)
					if err != nil || !a.Is4() {
						d.addf(n, p, "%q: want an IPv4 address", v)
						return
					}
					m.Host = a
				},
				"rank": func(n *yaml.Node, p string) {
					got["rank"], rankNode = true, n
					if v, ok := d.uint(n, p, 0, MaxINCMembers-1); ok {
						m.Rank = uint8(v)
					}
				},
			})
			if deref(n).Kind != yaml.MappingNode {
				return
			}
			for _, f := range []string{"host", "rank"} {
				if !got[f] {
					d.addf(n, join(p, f), "required")
				}
			}
			if !m.Host.IsValid() || !got["rank"] {
				return
			}
			if prev, dup := hosts[m.Host]; dup {
				d.addf(hostNode, join(p, "host"), "%s is already a member at %s", m.Host, prev)
				return
			}
			if prev, dup := ranks[m.Rank]; dup {
				d.addf(rankNode, join(p, "rank"), "rank %d is already %s's", m.Rank, prev)
				return
			}
			hosts[m.Host] = p
			ranks[m.Rank] = m.Host.String()
			g.Members = append(g.Members, m)
		})
		if membersNode.Kind == yaml.SequenceNode && len(membersNode.Content) == 0 {
			d.addf(membersNode, mp, "at least one member is required")
		}
		inc.Groups = append(inc.Groups, g)
	})
}

// checkINCMembers checks that every INC member is a host behind exactly
// one switch port (in its subnets), where its contributions enter.
func (d *decoder) checkINCMembers(n *yaml.Node, c *Config) {
	for gi, g := range c.INC.Groups {
		for mi, m := range g.Members {
			p := join(index(join(index("inc.groups", gi), "members"), mi), "host")
			var where []string
			for _, s := range c.Switches {
				for _, pt := range s.Ports {
					for _, sn := range pt.Subnets {
						if sn.Contains(m.Host) {
							where = append(where, fmt.Sprintf("%s port %d", s.Name, pt.Number))
						}
					}
				}
			}
			switch {
			case len(where) == 0:
				d.addf(d.at(p, n), p, "%s is behind no switch port (in no port's subnets): its switch cannot be known", m.Host)
			case len(where) > 1:
				d.addf(d.at(p, n), p, "%s is behind %s: a member must be behind one switch port", m.Host, strings.Join(where, " and "))
			}
		}
	}
}
