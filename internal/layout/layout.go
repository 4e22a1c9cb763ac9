// Package layout states the project's dependency rule and checks a package graph
// against it. The rule (README "Layout"): dependencies flow one way,
//
//	wire <- p4src (the P4 program's contract) <- pure models and algorithms
//	     <- runtimes (software switch, controller, host agent, simulator) <- testbed, commands
//
// and no runtime reaches into another: the controller and the host agent never
// depend on the software switch, its models or each other.
package layout

import (
	"fmt"
	"sort"
	"strings"
)

// Module is the project's module path.
const Module = "github.com/fastcnp/fastcnp"

// Rule forbids packages under From (a path relative to Module; a prefix of whole
// path elements) to depend, directly or not, on any package under one of Forbidden.
type Rule struct {
	From      string
	Forbidden []string
	Why       string
}

// Exceptions are, per rule (by From), packages under its Forbidden that its
// packages may depend on all the same (prefixes of whole path elements).
var Exceptions = map[string][]string{
	// fastcnp-sim's S4 installs the INC tree fastcnpd computes
	// (fabric.ComputeINCTree over the config and incroute; p4rt comes with
	// fabric): one algorithm, not a copy. The daemon stays out of reach.
	"sim": {"controller/fabric", "controller/config", "controller/incroute", "controller/p4rt"},
}

// Rules is the dependency rule of the tree.
var Rules = []Rule{
	{"wire", []string{""}, "wire is the bottom layer: packet formats only"},
	{"internal", []string{"wire", "p4src", "model", "host", "controller", "softswitch", "afpacket", "testbed", "conformance", "proto", "sim"},
		"internal/ holds generic helpers"},
	{"p4src", []string{"model", "host", "controller", "softswitch", "afpacket", "testbed", "conformance", "internal"},
		"the P4 program's contract depends on nothing but wire and the P4Runtime schema"},
	{"model", []string{"host", "controller", "softswitch", "afpacket", "testbed", "conformance", "internal/netns"},
		"the shared models are pure: no runtime, no I/O"},
	{"host/cc", []string{"p4src", "model", "host/agent", "controller", "softswitch", "afpacket", "testbed", "internal"},
		"congestion-control algorithms are pure and see only wire"},
	{"host", []string{"model", "controller", "softswitch", "testbed", "conformance"},
		"the host agent does not depend on the switch or the controller"},
	{"controller", []string{"model", "host", "softswitch", "afpacket", "testbed", "conformance"},
		"the controller knows a switch only through the P4 program's contract (p4src)"},
	{"afpacket", []string{"wire", "p4src", "model", "host", "controller", "softswitch", "testbed", "conformance"},
		"AF_PACKET ports carry bytes for switch and hosts alike"},
	{"softswitch", []string{"host", "controller", "testbed", "conformance"},
		"the software switch runtime is driven only through P4Runtime"},
	{"conformance", []string{"softswitch", "testbed", "host"},
		"conformance vectors are target-neutral"},
	{"sim/hpcc", []string{""},
		"the HPCC simulator's file formats are pure data and parsing"},
	{"sim/traffic", []string{"wire", "p4src", "model", "host", "controller", "softswitch", "afpacket", "testbed", "conformance", "proto", "internal", "sim/analysis", "sim/sweep"},
		"the traffic generator is pure: flows from a seed, no runtime"},
	{"sim/analysis", []string{"wire", "p4src", "model", "host", "controller", "softswitch", "afpacket", "testbed", "conformance", "proto", "internal/netns", "internal/testfs", "sim/traffic", "sim/sweep"},
		"FCT analysis is pure: records in, tables and plots out"},
	{"sim/sweep", []string{"wire", "p4src", "model", "host", "controller", "softswitch", "afpacket", "testbed", "conformance", "proto", "sim/engine", "sim/network"},
		"the sweep runs points through a function value: it never depends on the engine (which needs model/ and host/)"},
	{"sim", []string{"controller", "softswitch", "afpacket", "testbed", "host/agent/live", "conformance", "internal/netns"},
		"the simulator drives the pure models and algorithms in virtual time (model, host/cc, and host/agent's transport state machines), never a runtime; " +
			"of the controller only its computation of the INC tree (Exceptions), never the daemon"},
}

// excepted reports whether pkg is under one of dirs.
func excepted(pkg string, dirs []string) bool {
	for _, d := range dirs {
		if under(pkg, d) {
			return true
		}
	}
	return false
}

// under reports whether pkg (relative to Module) is dir or below it; "" is the whole module.
func under(pkg, dir string) bool {
	return dir == "" || pkg == dir || strings.HasPrefix(pkg, dir+"/")
}

// Violation is one forbidden dependency.
type Violation struct {
	Package, Dependency string
	Rule                Rule
}

func (v Violation) String() string {
	return fmt.Sprintf("%s depends on %s (rule for %s/: %s)", v.Package, v.Dependency, v.Rule.From, v.Rule.Why)
}

// Check returns every forbidden edge of deps (package -> its transitive dependencies;
// full import paths; packages outside Module are ignored), sorted.
func Check(deps map[string][]string) []Violation {
	var out []Violation
	for pkg, ds := range deps {
		rel, ok := relative(pkg)
		if !ok {
			continue
		}
		for _, r := range Rules {
			if !under(rel, r.From) {
				continue
			}
			for _, d := range ds {
				drel, ok := relative(d)
				if !ok || under(drel, r.From) || excepted(drel, Exceptions[r.From]) {
					continue
				}
				for _, f := range r.Forbidden {
					if under(drel, f) {
						out = append(out, Violation{Package: rel, Dependency: drel, Rule: r})
						break
					}
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Package != out[j].Package {
			return out[i].Package < out[j].Package
		}
		return out[i].Dependency < out[j].Dependency
	})
	return out
}

func relative(pkg string) (string, bool) {
	if pkg == Module {
		return "", true
	}
	if strings.HasPrefix(pkg, Module+"/") {
		return strings.TrimPrefix(pkg, Module+"/"), true
	}
	return "", false
}
