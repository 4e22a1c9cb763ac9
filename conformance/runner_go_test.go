package conformance

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/fastcnp/fastcnp/model/pipeline"
)

func loadVectors(t *testing.T) []*Vector {
	t.Helper()
	info, err := Program()
	if err != nil {
		t.Fatal(err)
	}
	vs, err := LoadDir("vectors", info)
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// TestGoPipeline runs every vector of vectors/ against model/pipeline in each profile
// whose features it needs; each is a subtest named profile/file.
func TestGoPipeline(t *testing.T) {
	vs := loadVectors(t)
	if len(vs) < 40 {
		t.Errorf("%d vectors, want at least 40", len(vs))
	}
	for _, pr := range pipeline.Profiles() {
		feats := GoFeaturesFor(pr)
		ran := 0
		for _, v := range vs {
			t.Run(pr.String()+"/"+v.Name, func(t *testing.T) {
				if r := v.SkipReason(feats); r != "" {
					t.Skip(r)
				}
				ran++
				if err := RunGoProfile(v, pr); err != nil {
					t.Error(err)
				}
			})
		}
		if ran < 20 && flag.Lookup("test.run").Value.String() == "" {
			t.Errorf("profile %s ran %d vectors, want at least 20", pr, ran)
		}
	}
}

// mutants returns copies of v with one expectation made wrong or removed; each must
// fail, or the vector (or the runner) checks less than it claims.
func mutants(v *Vector) map[string]*Vector {
	out := map[string]*Vector{}
	clone := func() *Vector {
		c := *v
		c.Stmts = append([]Stmt(nil), v.Stmts...)
		return &c
	}
	for i, s := range v.Stmts {
		where := s.Where()
		if s.Refused != "" {
			// A refusal must be the one named: another code, or none, fails.
			other := "PERMISSION_DENIED"
			if s.Refused == other {
				other = "NOT_FOUND"
			}
			for _, code := range []string{"", other} {
				c := clone()
				c.Stmts[i].Refused = code
				out[where+" refused "+code] = c
			}
		}
		switch s.Op {
		case OpExpectOut, OpExpectCPU:
			// Flip the last byte the expectation cares about.
			for j := len(s.Packet.Mask) - 1; j >= 0; j-- {
				if s.Packet.Mask[j] == 0xff {
					c := clone()
					p := *s.Packet
					p.Bytes = append([]byte(nil), p.Bytes...)
					p.Bytes[j] ^= 0x01
					c.Stmts[i].Packet = &p
					out[where+" flipped byte "+strconv.Itoa(j)] = c
					break
				}
			}
			if s.Op == OpExpectCPU {
				c := clone()
				c.Stmts[i].Port++
				out[where+" packet_in port"] = c
			}
		case OpExpectCounter, OpExpectRegister:
			for k, val := range s.Values {
				if val == ^uint64(0) {
					continue
				}
				c := clone()
				c.Stmts[i].Values = append([]uint64(nil), s.Values...)
				c.Stmts[i].Values[k]++
				out[fmt.Sprintf("%s value %d + 1", where, k)] = c
			}
		case OpExpectDigest:
			for k := range s.Fields {
				c := clone()
				c.Stmts[i].Fields = append([]KV(nil), s.Fields...)
				n, _ := ParseValue(s.Fields[k].Value)
				c.Stmts[i].Fields[k].Value = strconv.FormatUint(n+1, 10)
				out[where+" digest field "+s.Fields[k].Key+" + 1"] = c
			}
		default:
			continue
		}
		if s.Op == OpExpectOut || s.Op == OpExpectCPU || s.Op == OpExpectDigest {
			c := clone()
			c.Stmts = append(c.Stmts[:i:i], v.Stmts[i+1:]...)
			out[where+" removed"] = c
		}
	}
	return out
}

// TestVectorsDetectMutations checks that every expectation of every vector matters:
// making one wrong, or removing an output or digest expectation, fails the vector.
func TestVectorsDetectMutations(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: one run per mutant")
	}
	for _, pr := range pipeline.Profiles() {
		feats := GoFeaturesFor(pr)
		for _, v := range loadVectors(t) {
			if v.SkipReason(feats) != "" {
				continue
			}
			t.Run(pr.String()+"/"+v.Name, func(t *testing.T) {
				t.Parallel()
				for name, m := range mutants(v) {
					if RunGoProfile(m, pr) == nil {
						t.Errorf("mutant %s passes", name)
					}
				}
			})
		}
	}
}

// TestDocListsEveryVector keeps docs/conformance.md's list of vectors complete.
func TestDocListsEveryVector(t *testing.T) {
	doc, err := os.ReadFile("../docs/conformance.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range loadVectors(t) {
		if !strings.Contains(string(doc), "| `"+v.Name+"` |") {
			t.Errorf("docs/conformance.md does not list vector %s", v.Name)
		}
	}
}
