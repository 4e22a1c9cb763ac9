package hpcc

import (
	"bytes"
	"os"
	"reflect"
	"testing"
)

// The fuzzers check that no input crashes a parser and that whatever a
// parser accepts, the matching writer writes back to the same value.

func FuzzParseTopology(f *testing.F) {
	if b, err := os.ReadFile(fatTree); err == nil {
		f.Add(string(b[:2000]))
	}
	f.Add("3 1 2\n2\n0 2 100Gbps 1000ns 0.000000\n1 2 25Gb/s 0.001ms 0\n")
	f.Add("2 0 1\n0 1 1bps 1 1\n")
	f.Fuzz(func(t *testing.T, in string) {
		topo, err := ParseTopology("f", bytes.NewReader([]byte(in)))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := WriteTopology(&buf, topo); err != nil {
			t.Fatalf("parsed topology does not write: %v", err)
		}
		back, err := ParseTopology("f", &buf)
		if err != nil || !reflect.DeepEqual(back, topo) {
			t.Fatalf("round trip: %+v, %v; want %+v", back, err, topo)
		}
		_ = topo.Ports()
		if topo.Nodes <= 1000 { // NewPaths is O(hosts x nodes)
			if _, err := NewPaths(topo, 1000); err != nil {
				t.Fatalf("paths of a valid topology: %v", err)
			}
		}
	})
}

func FuzzParseFlows(f *testing.F) {
	f.Add("2 \n0 5 3 100 1460 2.000001234\n7 2 3 200 500000 2.1\n")
	f.Add("1\n0 1 0 0 1 1e-3\n")
	f.Fuzz(func(t *testing.T, in string) {
		flows, err := ParseFlows("f", bytes.NewReader([]byte(in)))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := WriteFlows(&buf, flows); err != nil {
			t.Fatalf("parsed flows do not write: %v", err)
		}
		back, err := ParseFlows("f", &buf)
		if err != nil || !reflect.DeepEqual(back, flows) {
			t.Fatalf("round trip: %+v, %v; want %+v", back, err, flows)
		}
	})
}

func FuzzParseConfig(f *testing.F) {
	if b, err := os.ReadFile("testdata/config_dcqcn.txt"); err == nil {
		f.Add(string(b))
	}
	f.Add("KMAX_MAP 1 100 2\nFASTCNP_MODE fastcnp\nRATE_AI 1.5Gbps\n")
	f.Fuzz(func(t *testing.T, in string) {
		c, err := ParseConfig("f", bytes.NewReader([]byte(in)))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := WriteConfig(&buf, c); err != nil {
			return // a string value with white space cannot be written; reported
		}
		back, err := ParseConfig("f", &buf)
		if err != nil {
			t.Fatalf("written config does not parse: %v\n%s", err, buf.String())
		}
		back.where, c.where = nil, nil
		if !reflect.DeepEqual(back, c) {
			t.Fatalf("round trip: %+v; want %+v", back, c)
		}
	})
}

func FuzzParseOutputs(f *testing.F) {
	f.Add("0b000201 0b012c01 10000 100 1460 2000001234 9000 8500\n")
	f.Add("2000012345 320 1 17 1\n")
	f.Add("time: 2100000000\n320 17 1\n321 2 3 1 1\n")
	f.Add("5 320 3 12345\n")
	f.Fuzz(func(t *testing.T, in string) {
		if recs, err := ParseFCT("f", bytes.NewReader([]byte(in))); err == nil {
			var buf bytes.Buffer
			if err := WriteFCT(&buf, recs); err != nil {
				t.Fatal(err)
			}
			if back, err := ParseFCT("f", &buf); err != nil || !reflect.DeepEqual(back, recs) {
				t.Fatalf("fct round trip: %+v, %v", back, err)
			}
		}
		if recs, err := ParsePFC("f", bytes.NewReader([]byte(in))); err == nil {
			var buf bytes.Buffer
			if err := WritePFC(&buf, recs); err != nil {
				t.Fatal(err)
			}
			if back, err := ParsePFC("f", &buf); err != nil || !reflect.DeepEqual(back, recs) {
				t.Fatalf("pfc round trip: %+v, %v", back, err)
			}
		}
		if dumps, err := ParseQlen("f", bytes.NewReader([]byte(in))); err == nil {
			var out []byte
			for _, d := range dumps {
				out = AppendQlenDump(out, d)
			}
			back, err := ParseQlen("f", bytes.NewReader(out))
			if err != nil || len(back) != len(dumps) {
				t.Fatalf("qlen round trip: %d dumps, %v", len(back), err)
			}
		}
		if ss, err := ParseQlenSamples("f", bytes.NewReader([]byte(in))); err == nil {
			var buf bytes.Buffer
			if err := WriteQlenSamples(&buf, ss); err != nil {
				t.Fatal(err)
			}
			if back, err := ParseQlenSamples("f", &buf); err != nil || !reflect.DeepEqual(back, ss) {
				t.Fatalf("samples round trip: %+v, %v", back, err)
			}
		}
	})
}
