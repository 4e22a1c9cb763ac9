package hpcc

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseFlows(t *testing.T) {
	// As traffic_gen.py writes it: a trailing space after the count, nine decimals.
	in := "3 \n0 5 3 100 1460 2.000001234\n7 2 3 200 500000 2.000001234\n\n3 1 0 80 1 2.5\n"
	got, err := ParseFlows("flow.txt", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Flow{
		{Src: 0, Dst: 5, PG: 3, DPort: 100, Size: 1460, StartNs: 2000001234},
		{Src: 7, Dst: 2, PG: 3, DPort: 200, Size: 500000, StartNs: 2000001234},
		{Src: 3, Dst: 1, PG: 0, DPort: 80, Size: 1, StartNs: 2500000000},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	var buf bytes.Buffer
	if err := WriteFlows(&buf, got); err != nil {
		t.Fatal(err)
	}
	wantText := "3\n0 5 3 100 1460 2.000001234\n7 2 3 200 500000 2.000001234\n3 1 0 80 1 2.500000000\n"
	if buf.String() != wantText {
		t.Errorf("written:\n%s\nwant:\n%s", buf.String(), wantText)
	}
	back, err := ParseFlows("rt", &buf)
	if err != nil || !reflect.DeepEqual(back, want) {
		t.Errorf("round trip: %+v, %v", back, err)
	}
}

func TestParseFlowsErrors(t *testing.T) {
	tests := []struct {
		name, in string
		line     int
		msg      string
	}{
		{"empty", "", 0, "empty file"},
		{"count fields", "1 2\n", 1, "alone on the first line"},
		{"count", "-1\n", 1, "flow count"},
		{"fields", "1\n0 1 3 100 1000\n", 2, "got 5 fields"},
		{"src", "1\nx 1 3 100 1000 2\n", 2, "src: \"x\" is not an integer"},
		{"self", "1\n4 4 3 100 1000 2\n", 2, "from node 4 to itself"},
		{"pg", "1\n0 1 8 100 1000 2\n", 2, "pg: 8 out of range"},
		{"dport", "1\n0 1 3 70000 1000 2\n", 2, "dport: 70000 out of range"},
		{"size zero", "1\n0 1 3 100 0 2\n", 2, "size \"0\""},
		{"size huge", "1\n0 1 3 100 4294967296 2\n", 2, "size \"4294967296\""},
		{"start", "1\n0 1 3 100 10 soon\n", 2, "start \"soon\""},
		{"start negative", "1\n0 1 3 100 10 -2\n", 2, "negative"},
		{"order", "2\n0 1 3 100 10 2.1\n0 1 3 100 10 2.0\n", 3, "before the previous flow's"},
		{"too few", "3\n0 1 3 100 10 2\n", 0, "declares 3 flows, file has 1"},
		{"too many", "1\n0 1 3 100 10 2\n1 0 3 100 10 2\n", 3, "more flows than the 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseFlows("flow.txt", strings.NewReader(tc.in))
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %v, want *Error", err)
			}
			if pe.Line != tc.line || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q (line %d), want line %d containing %q", err, pe.Line, tc.line, tc.msg)
			}
		})
	}
}

func TestValidateFlows(t *testing.T) {
	topo := &Topology{Nodes: 4, Switches: []int{3}, Links: []Link{{0, 3, 1e9, 0, 0}, {1, 3, 1e9, 0, 0}, {2, 3, 1e9, 0, 0}}}
	ok := []Flow{{Src: 0, Dst: 1, PG: 3, Size: 1, StartNs: 5}, {Src: 2, Dst: 0, PG: 3, Size: 1, StartNs: 5}}
	if err := ValidateFlows(topo, ok); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		f   Flow
		msg string
	}{
		{Flow{Src: 3, Dst: 1, Size: 1}, "source 3 is not a host"},
		{Flow{Src: 0, Dst: 9, Size: 1}, "destination 9 is not a host"},
		{Flow{Src: 0, Dst: 0, Size: 1}, "to itself"},
		{Flow{Src: 0, Dst: 1, Size: 0}, "size 0"},
		{Flow{Src: 0, Dst: 1, Size: 1, PG: 9}, "priority group 9"},
		{Flow{Src: 0, Dst: 1, Size: 1, StartNs: 4}, "starts before flow 2"},
	} {
		err := ValidateFlows(topo, append(append([]Flow{}, ok...), tc.f))
		if err == nil || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), "flow 3") {
			t.Errorf("%+v: error %v, want flow 3 ... %q", tc.f, err, tc.msg)
		}
	}
}

func TestSourcePorts(t *testing.T) {
	flows := []Flow{{Src: 1, Dst: 2}, {Src: 1, Dst: 3}, {Src: 1, Dst: 2}, {Src: 2, Dst: 1}, {Src: 1, Dst: 2}}
	got := SourcePorts(flows)
	want := []uint16{10000, 10000, 10001, 10000, 10002}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestWriteFlowsRejectsDisorder(t *testing.T) {
	err := WriteFlows(&bytes.Buffer{}, []Flow{{Src: 0, Dst: 1, Size: 1, StartNs: 2}, {Src: 0, Dst: 1, Size: 1, StartNs: 1}})
	if err == nil {
		t.Fatal("out-of-order flows written")
	}
}
