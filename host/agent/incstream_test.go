package agent

import (
	"errors"
	"testing"
	"time"

	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/wire"
)

// TestINCStream sends three messages of 4 offsets on one connection and
// parses every frame: each message is its own data flow (the IDS part on
// its first packet, with the message's first PSN and length), every offset
// carries the worker's vector for that message, and every 5th packet is
// marked for an injected copy, which Build writes identically.
func TestINCStream(t *testing.T) {
	p := INCParams{Group: 7, Op: 3, Rank: 2, Workers: 4, Offsets: 4, Seed: 99}
	msgs := []uint16{11, 40, 12}
	s, err := NewINCStream(p, msgs, 5)
	if err != nil {
		t.Fatal(err)
	}
	dq, _ := cc.DCQCNPreset("hpcc-sim")
	alg, err := cc.New("dcqcn", cc.Config{LineRate: 100e9, BaseRTT: 4000, MTU: 1000, DCQCN: dq})
	if err != nil {
		t.Fatal(err)
	}
	snd, err := NewSender(s.SenderConfig(SenderConfig{}), alg)
	if err != nil {
		t.Fatal(err)
	}
	for range msgs {
		if err := snd.Post(0, s.MessageBytes()); err != nil {
			t.Fatal(err)
		}
	}
	path := Path{SrcMAC: tMACA, DstMAC: tMACB, SrcIP: tIPA, DstIP: tIPB, SrcPort: 50000}
	var b, c [256]byte
	var f wire.Frame
	var dups []uint64
	now := int64(0)
	for seq := uint64(0); seq < 12; seq++ {
		pkt, ok, err := snd.Next(time.Duration(now))
		for ; !ok && err == nil; pkt, ok, err = snd.Next(time.Duration(now)) {
			now += 100
		}
		if err != nil {
			t.Fatal(err)
		}
		if pkt.Seq != seq {
			t.Fatalf("packet %d: seq %d", seq, pkt.Seq)
		}
		n, err := s.Build(b[:], &path, 77, snd, pkt)
		if err != nil {
			t.Fatal(err)
		}
		if err := wire.Parse(b[:n], wire.ParseOptions{}, &f); err != nil {
			t.Fatalf("packet %d: %v", seq, err)
		}
		k, off := seq/4, uint32(seq%4)
		if f.INC.IsContribution() != true || f.Has(wire.LayerINCIDs) != (off == 0) {
			t.Fatalf("packet %d: flags %#x, IDS part %v", seq, f.INC.Flags, f.Has(wire.LayerINCIDs))
		}
		if off == 0 {
			want := wire.INCIDs{GroupID: 7, MessageID: msgs[k], FirstPSN: snd.PSNOf(k * 4), OpID: 3, FlowLen: 4}
			if f.INCIDs != want {
				t.Fatalf("packet %d: IDS %+v, want %+v", seq, f.INCIDs, want)
			}
		}
		if f.BTH.PSN != snd.PSNOf(seq) || f.BTH.DestQP != 77 {
			t.Fatalf("packet %d: PSN %#x QP %d", seq, f.BTH.PSN, f.BTH.DestQP)
		}
		if f.INCVector != INCContribution(99, 7, msgs[k], 2, off) {
			t.Fatalf("packet %d: vector of another message or offset", seq)
		}
		if s.Dup(seq) {
			dups = append(dups, seq)
			m, err := s.Build(c[:], &path, 77, snd, Packet{Seq: seq, PSN: snd.PSNOf(seq)})
			if err != nil || string(c[:m]) != string(b[:n]) {
				t.Fatalf("packet %d: the copy differs (%v)", seq, err)
			}
		}
	}
	if len(dups) != 2 || dups[0] != 4 || dups[1] != 9 {
		t.Fatalf("copies of %v, want [4 9]", dups)
	}
	if _, err := s.Build(b[:], &path, 77, snd, Packet{Seq: 12}); !errors.Is(err, ErrConfig) {
		t.Fatalf("a packet beyond the messages: %v", err)
	}
}

func TestINCStreamErrors(t *testing.T) {
	ok := INCParams{Group: 1, Workers: 2, Offsets: 4}
	for _, tc := range []struct {
		name string
		p    INCParams
		msgs []uint16
		dup  int
	}{
		{"no messages", ok, nil, 0},
		{"group 0", INCParams{Workers: 2, Offsets: 4}, []uint16{1}, 0},
		{"negative dup_every", ok, []uint16{1}, -1},
		{"beyond the PSN space", INCParams{Group: 1, Workers: 2, Offsets: 1 << 22}, []uint16{1, 2, 3, 4}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewINCStream(tc.p, tc.msgs, tc.dup); !errors.Is(err, ErrConfig) {
				t.Fatalf("err %v, want ErrConfig", err)
			}
		})
	}
}
