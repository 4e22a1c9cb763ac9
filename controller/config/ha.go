package config

import (
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/fastcnp/fastcnp/internal/units"
)

// HA is controller high availability. Without it (nil) fastcnpd runs in its
// single-instance mode and keeps its state in the state file.
type HA struct {
	// Etcd holds the desired state and elects the leader among the
	// fastcnpd instances that share it (docs/operations.md, "High
	// availability").
	Etcd Etcd
}

// Etcd is how fastcnpd reaches its etcd cluster.
type Etcd struct {
	// Endpoints are the cluster's client URLs (http://host:port or
	// https://host:port), every member's.
	Endpoints []string
	// Prefix starts every key fastcnpd writes: instances that share a
	// prefix elect one leader among them and share one desired state.
	Prefix string
	// LeaseTTL is the leader's lease: a leader that stops renewing it is
	// replaced this long after its last renewal (whole seconds; etcd may
	// grant more than asked, at least 1.5 election timeouts).
	LeaseTTL time.Duration
	// TLS, when set, is used for every endpoint (they must be https).
	TLS *EtcdTLS
}

// EtcdTLS is fastcnpd's TLS to etcd.
type EtcdTLS struct {
	// CA verifies the etcd members; Cert and Key (both or neither)
	// authenticate fastcnpd to them (etcd's --client-cert-auth).
	CA, Cert, Key string
	// ServerName overrides the name checked in the members' certificates.
	ServerName string
}

// HA defaults and bounds.
const (
	DefaultEtcdPrefix   = "/fastcnp/"
	DefaultEtcdLeaseTTL = 2 * time.Second
	MinEtcdLeaseTTL     = time.Second
	MaxEtcdLeaseTTL     = time.Minute
	// MaxEtcdEndpoints bounds ha.etcd.endpoints (a cluster has a handful
	// of members).
	MaxEtcdEndpoints = 64
)

// decodeHA decodes the ha block; stateFileNode is the state_file field if the
// file sets it (the two exclude each other).
func (d *decoder) decodeHA(n *yaml.Node, p string, c *Config) {
	ha := &HA{Etcd: Etcd{Prefix: DefaultEtcdPrefix, LeaseTTL: DefaultEtcdLeaseTTL}}
	var etcdNode, tlsNode, endpointsNode *yaml.Node
	d.mapping(n, p, fields{
		"etcd": func(n *yaml.Node, p string) {
			etcdNode = n
			e := &ha.Etcd
			d.mapping(n, p, fields{
				"endpoints": func(n *yaml.Node, p string) {
					endpointsNode = n
					d.list(n, p, MaxEtcdEndpoints, " endpoints (config.MaxEtcdEndpoints)", func(n *yaml.Node, p string) {
						if v, ok := d.etcdEndpoint(n, p); ok {
							e.Endpoints = append(e.Endpoints, v)
						}
					})
				},
				"prefix": func(n *yaml.Node, p string) {
					var v string
					d.str(n, p, &v)
					switch {
					case v == "":
					case !strings.HasPrefix(v, "/") || !strings.HasSuffix(v, "/"):
						d.addf(n, p, "%q: want a key prefix that starts and ends with / (e.g. /fastcnp/pod1/)", v)
					default:
						e.Prefix = v
					}
				},
				"lease_ttl": func(n *yaml.Node, p string) {
					v, ok := d.duration(n, p, MinEtcdLeaseTTL, MaxEtcdLeaseTTL)
					if !ok {
						return
					}
					if v%time.Second != 0 {
						d.addf(n, p, "%s: etcd leases count whole seconds", units.FormatDuration(v))
						return
					}
					e.LeaseTTL = v
				},
				"tls": func(n *yaml.Node, p string) {
					tlsNode = n
					e.TLS = &EtcdTLS{}
					d.mapping(n, p, fields{
						"ca":          func(n *yaml.Node, p string) { d.str(n, p, &e.TLS.CA) },
						"cert":        func(n *yaml.Node, p string) { d.str(n, p, &e.TLS.Cert) },
						"key":         func(n *yaml.Node, p string) { d.str(n, p, &e.TLS.Key) },
						"server_name": func(n *yaml.Node, p string) { d.str(n, p, &e.TLS.ServerName) },
					})
				},
			})
		},
	})
	if n.Kind != yaml.MappingNode {
		return
	}
	if etcdNode == nil {
		d.addf(n, join(p, "etcd"), "required: the etcd cluster that holds the state and elects the leader")
		return
	}
	ep := join(p, "etcd")
	if endpointsNode == nil {
		d.addf(etcdNode, join(ep, "endpoints"), "required: the etcd members' client URLs")
	} else if endpointsNode.Kind == yaml.SequenceNode && len(endpointsNode.Content) == 0 {
		d.addf(endpointsNode, join(ep, "endpoints"), "at least one endpoint is required")
	}
	secure := 0
	for _, u := range ha.Etcd.Endpoints {
		if strings.HasPrefix(u, "https://") {
			secure++
		}
	}
	e := ha.Etcd
	switch {
	case secure != 0 && secure != len(e.Endpoints):
		d.addf(endpointsNode, join(ep, "endpoints"), "mixes http and https: every member is reached the same way")
	case e.TLS == nil && secure > 0:
		d.addf(etcdNode, join(ep, "tls"), "https endpoints need tls (at least ca)")
	case e.TLS != nil && secure == 0 && len(e.Endpoints) > 0:
		d.addf(tlsNode, join(ep, "tls"), "tls needs https endpoints")
	case e.TLS != nil && e.TLS.CA == "":
		d.addf(tlsNode, join(ep, "tls"), "set ca (the CA that signed the etcd members' certificates)")
	case e.TLS != nil && (e.TLS.Cert == "") != (e.TLS.Key == ""):
		d.addf(tlsNode, join(ep, "tls"), "cert and key go together")
	}
	c.HA = ha
}

// etcdEndpoint checks an etcd client URL: http or https, a host and a port.
func (d *decoder) etcdEndpoint(n *yaml.Node, path string) (string, bool) {
	v, ok := d.scalar(n, path)
	if !ok {
		return "", false
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") ||
		u.RawQuery != "" || u.User != nil {
		d.addf(n, path, "%q: want http://host:port or https://host:port", v)
		return "", false
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" {
		d.addf(n, path, "%q: want http://host:port or https://host:port", v)
		return "", false
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		d.addf(n, path, "%q: port must be 1..65535", v)
		return "", false
	}
	return u.Scheme + "://" + u.Host, true
}

// yHA mirrors the ha block for Marshal.
type (
	yHA struct {
		Etcd yEtcd `yaml:"etcd"`
	}
	yEtcd struct {
		Endpoints []string  `yaml:"endpoints,flow"`
		Prefix    string    `yaml:"prefix"`
		LeaseTTL  string    `yaml:"lease_ttl"`
		TLS       *yEtcdTLS `yaml:"tls,omitempty"`
	}
	yEtcdTLS struct {
		CA         string `yaml:"ca"`
		Cert       string `yaml:"cert,omitempty"`
		Key        string `yaml:"key,omitempty"`
		ServerName string `yaml:"server_name,omitempty"`
	}
)

func yHAOf(h *HA) *yHA {
	if h == nil {
		return nil
	}
	y := &yHA{Etcd: yEtcd{Endpoints: h.Etcd.Endpoints, Prefix: h.Etcd.Prefix, LeaseTTL: units.FormatDuration(h.Etcd.LeaseTTL)}}
	if t := h.Etcd.TLS; t != nil {
		y.Etcd.TLS = &yEtcdTLS{CA: t.CA, Cert: t.Cert, Key: t.Key, ServerName: t.ServerName}
	}
	return y
}
