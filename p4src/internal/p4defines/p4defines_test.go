package p4defines

import (
	"strings"
	"testing"
)

func TestGoName(t *testing.T) {
	tests := []struct{ p4, want string }{
		{"CONN_TABLE_SIZE", "ConnTableSize"},
		{"PORT_MODE_ECN", "PortModeECN"},
		{"IPV4_VERSION", "IPv4Version"},
		{"ROCE_UDP_PORT", "RoCEUDPPort"},
		{"INC_IDS_BYTES", "IncIDsBytes"},
		{"CPU_PORT", "CPUPort"},
		{"L2_FORWARD_TABLE_SIZE", "L2ForwardTableSize"},
	}
	for _, tc := range tests {
		if got := GoName(tc.p4); got != tc.want {
			t.Errorf("GoName(%s) = %s, want %s", tc.p4, got, tc.want)
		}
	}
}

func TestParse(t *testing.T) {
	src := `#ifndef _X_
#define _X_
#define NUM_PORTS 512   // ports
#ifndef ANNOUNCE_UDP_PORT
#define ANNOUNCE_UDP_PORT 4792
#endif
const bit<8> BTH_OPCODE_CNP = 0x81; // CNP
const bit<64> ALL_ONES = 0xFFFFFFFFFFFFFFFF;
typedef bit<9> port_t;
`
	defs, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []Define{
		{P4Name: "NUM_PORTS", GoName: "NumPorts", Value: 512, Literal: "512", Comment: "ports", Line: 3},
		{P4Name: "ANNOUNCE_UDP_PORT", GoName: "AnnounceUDPPort", Value: 4792, Literal: "4792", Line: 5},
		{P4Name: "BTH_OPCODE_CNP", GoName: "BTHOpcodeCNP", Value: 0x81, Literal: "0x81", Bits: 8, Comment: "CNP", Line: 7},
		{P4Name: "ALL_ONES", GoName: "AllOnes", Value: 1<<64 - 1, Literal: "0xFFFFFFFFFFFFFFFF", Bits: 64, Line: 8},
	}
	if len(defs) != len(want) {
		t.Fatalf("got %d defines, want %d: %+v", len(defs), len(want), defs)
	}
	for i := range want {
		if defs[i] != want[i] {
			t.Errorf("define %d: got %+v, want %+v", i, defs[i], want[i])
		}
	}
	code, err := Render("x", "defines.p4", defs)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"NumPorts = 512", "BTHOpcodeCNP = 0x81", "DO NOT EDIT"} {
		if !strings.Contains(string(code), s) {
			t.Errorf("rendered source lacks %q:\n%s", s, code)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"too wide", "const bit<4> X = 16;", "does not fit bit<4>"},
		{"twice", "#define A 1\n#define A 2", "already defined on line 1"},
	}
	for _, tc := range tests {
		_, err := Parse([]byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestRenderRefusesNameClash(t *testing.T) {
	defs := []Define{{P4Name: "A_B", GoName: "AB", Literal: "1"}, {P4Name: "AB", GoName: "AB", Literal: "2"}}
	if _, err := Render("x", "d.p4", defs); err == nil || !strings.Contains(err.Error(), "both become") {
		t.Errorf("err %v, want a name clash", err)
	}
}
