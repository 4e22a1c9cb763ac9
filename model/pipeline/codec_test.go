package pipeline

import (
	"bytes"
	"testing"

	"github.com/fastcnp/fastcnp/p4src"
)

func TestValueBytes(t *testing.T) {
	tests := []struct {
		in    []byte
		width int
		want  uint64
		err   bool
	}{
		{[]byte{0x01, 0xFF}, 9, 0x1FF, false},
		{[]byte{0x02, 0x00}, 9, 0, true}, // 512 needs 10 bits
		{[]byte{0x00, 0x00, 0x2A}, 8, 42, false},
		{[]byte{}, 8, 0, true},
		{[]byte{0x12, 0x34, 0x56, 0x78, 0x9A, 0xBC}, 48, 0x123456789ABC, false},
		{[]byte{1, 0, 0, 0, 0, 0, 0, 0, 0}, 64, 0, true},
		{[]byte{0, 0xFF, 0, 0, 0, 0, 0, 0, 1}, 64, 0xFF00000000000001, false},
		{[]byte{1}, 1, 1, false},
		{[]byte{2}, 1, 0, true},
	}
	for _, tc := range tests {
		got, err := ValueFromBytes(tc.in, tc.width)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ValueFromBytes(%x, %d) = %d, %v; want %d (error %v)", tc.in, tc.width, got, err, tc.want, tc.err)
		}
	}
	for _, c := range []struct {
		v    uint64
		want []byte
	}{{0, []byte{0}}, {1, []byte{1}}, {0x1FF, []byte{1, 0xFF}}, {0x123456789ABC, []byte{0x12, 0x34, 0x56, 0x78, 0x9A, 0xBC}}} {
		if got := ValueToBytes(nil, c.v); !bytes.Equal(got, c.want) {
			t.Errorf("ValueToBytes(%#x) = %x, want %x", c.v, got, c.want)
		}
	}
}

func TestReset(t *testing.T) {
	p := newTest(t, p4src.PortModeFastcnp)
	through(t, p, dataSR(10).build(t), portS, 0)
	mustOK(t, p.SetDigestConfig(p4src.DigestCNP, DigestConfig{}))
	p.Reset()
	if n, _ := p.EntryCount(p4src.TableIPv4Route); n != 0 {
		t.Errorf("%d routes after Reset", n)
	}
	if reg(t, p, p4src.RegPortQueueBytes, portR) != 0 {
		t.Error("registers kept")
	}
	if _, err := p.ReadCloneSession(p4src.CNPCloneSession); !isErr(err, ErrNotFound) {
		t.Error("clone session kept")
	}
	if _, err := p.ReadDigestConfig(p4src.DigestCNP); !isErr(err, ErrNotFound) {
		t.Error("digest config kept")
	}
	route(t, p, ipR.Uint32()&0xFFFFFF00, 24, portR, macSw, macR)
	if r := ingress(t, p, dataSR(10).build(t), portS, 0); r.Verdict != VerdictForward {
		t.Error("pipeline unusable after Reset")
	}
}
