package p4rtserver

import (
	"sync"
	"testing"

	"github.com/fastcnp/fastcnp/p4src"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	"github.com/fastcnp/fastcnp/wire"
	"google.golang.org/grpc/codes"
)

// TestConcurrentUse runs writes, reads, packet-ins, digests and arbitration churn at
// once (for the race detector), then checks the writes all landed.
func TestConcurrentUse(t *testing.T) {
	h, prim := ready(t)
	h.mustWrite(t, mod(valueSetEnt(p4src.AnnounceUDPPortID, encodeBits(wire.DefaultAnnouncePort))), ins(portConfig(4)),
		ins(digestEnt(p4src.DigestPortState, &p4v1.DigestEntry_Config{MaxListSize: 1})))
	frame := make([]byte, 128)
	n, err := wire.BuildAnnouncement(frame, &wire.Envelope{SrcIP: wire.Addr4{10, 0, 0, 1}, DstIP: wire.Addr4{10, 0, 0, 2}},
		&wire.Announcement{Magic: wire.AnnouncementMagic, Version: wire.AnnouncementVersion, Type: 1})
	if err != nil {
		t.Fatal(err)
	}
	frame = frame[:n]
	const writers, perWriter = 4, 25
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				if err := h.write(t, 10, ins(route(b(10, byte(w), byte(i), 0), 24, b(1)))); err != nil {
					t.Errorf("write: %v", err)
					return
				}
			}
		}()
	}
	wg.Add(3)
	go func() {
		defer wg.Done()
		for range 20 {
			if _, err := h.read(t, te(0, 0, nil), counterEnt(p4src.CounterAnnouncements, -1, 0, 0)); err != nil {
				t.Errorf("read: %v", err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := range 50 {
			f := pfc(t, uint16(100*(i%2)))
			if err := h.dp.Receive(ctxT(t), f, 4); err != nil {
				t.Errorf("receive: %v", err)
			}
			if err := h.dp.Receive(ctxT(t), append([]byte(nil), frame...), 3); err != nil {
				t.Errorf("receive: %v", err)
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := range 9 {
			st, err := h.cli.StreamChannel(ctxT(t))
			if err != nil {
				t.Errorf("stream: %v", err)
				return
			}
			if err := st.Send(arbReq(testDevice, eid(uint64(i+1)), "")); err != nil {
				t.Errorf("send: %v", err)
				return
			}
			m, err := st.Recv()
			if err != nil || codes.Code(m.GetArbitration().GetStatus().GetCode()) != codes.AlreadyExists {
				t.Errorf("backup arbitration: %v %v", m, err)
			}
			if err := st.CloseSend(); err != nil {
				t.Errorf("close: %v", err)
			}
			for {
				if _, err := st.Recv(); err != nil {
					break
				}
			}
		}
	}()
	wg.Wait()
	if got := h.mustRead(t, te(p4src.TableIPv4Route, 0, nil)); len(got) != writers*perWriter {
		t.Fatalf("%d routes, want %d", len(got), writers*perWriter)
	}
	// The primary got every packet-in, and a digest for each PFC state change (49).
	var pins, digests int
	for pins < 50 || digests < 49 {
		m := prim.next()
		switch {
		case m.GetPacket() != nil:
			pins++
		case m.GetDigest() != nil:
			digests++
		}
	}
}

func TestOutboxDropsDataNotControl(t *testing.T) {
	o := newOutbox(2)
	for range 3 {
		o.push(&p4v1.StreamMessageResponse{}, false)
	}
	if n := o.push(&p4v1.StreamMessageResponse{}, false); n != 2 {
		t.Fatalf("drops = %d, want 2", n)
	}
	ctrl := &p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Error{Error: &p4v1.StreamError{}}}
	for range 10 {
		if n := o.push(ctrl, true); n != 0 {
			t.Fatalf("control message dropped")
		}
	}
	// Control messages go first.
	if m := o.pop(); m != ctrl {
		t.Fatalf("first pop is not a control message")
	}
	count := 1
	for o.pop() != nil {
		count++
	}
	if count != 12 {
		t.Fatalf("%d messages queued, want 12", count)
	}
}
