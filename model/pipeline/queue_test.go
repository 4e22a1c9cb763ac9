package pipeline

import (
	"testing"

	"github.com/fastcnp/fastcnp/p4src"
	"github.com/fastcnp/fastcnp/wire"
)

// TestQueueCounters: queue_enqueued counts unicast sends by ingress, queue_dequeued
// every packet egress takes from a queue, both at port * 8 + priority, bytes as
// received; punts, drops and consumed frames count in neither; multicast replicas
// only at dequeue.
func TestQueueCounters(t *testing.T) {
	type cell struct {
		id       uint32
		port     uint16
		prio     uint8
		pkts, by uint64
	}
	data := dataSR(100).build(t)
	lossy := dataSR(100)
	lossy.dscp = 0
	lossyFrame := lossy.build(t)
	po := append([]byte{0, 0}, l2Frame(macR, 0x88b5, 0, []byte{1, 2, 3})...) // packet_out header: port 0 for now
	pkOut := wire.PacketOut{EgressPort: portW}
	_, err := pkOut.Encode(po)
	mustOK(t, err)
	bridged := l2Frame(macW, 0x88b5, 0, []byte{9})
	bcast := l2Frame(macBcast, 0x0806, 0, arpRequest)
	ann := announcement(t, p4src.AnnounceUDPPort, wire.AnnouncementMagic)
	noRoute := dataSR(10)
	noRoute.dst = wire.Addr4{192, 168, 9, 9}

	tests := []struct {
		name   string
		frame  []byte
		inPort uint16
		want   []cell // cells that must change, by how much (others: unchanged)
	}{
		{"routed lossless", data, portS, []cell{
			{p4src.CounterQueueEnqueued, portR, losslessPr, 1, uint64(len(data))},
			{p4src.CounterQueueDequeued, portR, losslessPr, 1, uint64(len(data))}}},
		{"routed lossy", lossyFrame, portS, []cell{
			{p4src.CounterQueueEnqueued, portR, 0, 1, uint64(len(lossyFrame))},
			{p4src.CounterQueueDequeued, portR, 0, 1, uint64(len(lossyFrame))}}},
		{"packet_out (length with its header)", po, p4src.CPUPort, []cell{
			{p4src.CounterQueueEnqueued, portW, 0, 1, uint64(len(po))},
			{p4src.CounterQueueDequeued, portW, 0, 1, uint64(len(po))}}},
		{"bridged unicast", bridged, portS, []cell{
			{p4src.CounterQueueEnqueued, portW, 0, 1, uint64(len(bridged))},
			{p4src.CounterQueueDequeued, portW, 0, 1, uint64(len(bridged))}}},
		{"flood: replicas at dequeue only", bcast, portS, []cell{
			{p4src.CounterQueueDequeued, portR, 0, 2, 2 * uint64(len(bcast))}, // two instances on port 2
			{p4src.CounterQueueDequeued, portW, 0, 1, uint64(len(bcast))}}},
		{"announcement punted", ann, portS, nil},
		{"no route", noRoute.build(t), portS, nil},
		{"PFC consumed", pfcFrame(t, 1<<losslessPr, losslessPr, 100), portR, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newL2Test(t)
			all := func() map[[2]uint64]CounterValue {
				m := map[[2]uint64]CounterValue{}
				for _, id := range []uint32{p4src.CounterQueueEnqueued, p4src.CounterQueueDequeued} {
					cells, err := p.ReadCounter(id, -1, nil)
					mustOK(t, err)
					if len(cells) != p4src.NumQueues {
						t.Fatalf("counter %#x: %d cells, want %d", id, len(cells), p4src.NumQueues)
					}
					for _, c := range cells {
						if c.Packets != 0 || c.Bytes != 0 {
							m[[2]uint64{uint64(id), uint64(c.Index)}] = c
						}
					}
				}
				return m
			}
			var r IngressResult
			mustOK(t, p.Ingress(append([]byte(nil), tc.frame...), tc.inPort, 1000, &r))
			var copies []PacketMeta
			switch r.Verdict {
			case VerdictForward:
				copies = append(copies, r.Meta)
			case VerdictMulticast:
				for _, rep := range r.Replicas {
					m := r.Meta
					m.EgressPort = rep.Port
					copies = append(copies, m)
				}
			}
			frame := append([]byte(nil), r.Frame...)
			for i := range copies {
				p.OnEnqueue(&copies[i])
				egress(t, p, append([]byte(nil), frame...), &copies[i], 2000)
			}
			got := all()
			for _, w := range tc.want {
				k := [2]uint64{uint64(w.id), uint64(p4src.QueueIndex(w.port, w.prio))}
				if c := got[k]; c.Packets != w.pkts || c.Bytes != w.by {
					t.Errorf("counter %#x[port %d prio %d] = %+v, want %d packets %d bytes", w.id, w.port, w.prio, c, w.pkts, w.by)
				}
				delete(got, k)
			}
			for k, c := range got {
				t.Errorf("counter %#x[%d] changed: %+v", k[0], k[1], c)
			}
		})
	}
}

func TestTrafficManagerCounters(t *testing.T) {
	p := New(Options{})
	p.CountQueueDrop(7, 3, 1500)
	p.CountQueueDrop(7, 3, 100)
	p.CountQueueDrop(p4src.NumPorts, 3, 100) // ignored
	p.CountPFCSent(2, 3, true, 60)
	p.CountPFCSent(2, 5, true, 60)
	p.CountPFCSent(2, 3, false, 60)
	p.CountPFCSent(p4src.NumPorts+1, 3, true, 60) // ignored
	tests := []struct {
		id       uint32
		port     uint16
		prio     uint8
		pkts, by uint64
	}{
		{p4src.CounterQueueDropped, 7, 3, 2, 1600},
		{p4src.CounterPFCXoffSent, 2, 3, 1, 60},
		{p4src.CounterPFCXoffSent, 2, 5, 1, 60},
		{p4src.CounterPFCXonSent, 2, 3, 1, 60},
		{p4src.CounterPFCXonSent, 2, 5, 0, 0},
	}
	total := map[uint32]uint64{}
	for _, tc := range tests {
		c := ctr(t, p, tc.id, int(p4src.QueueIndex(tc.port, tc.prio)))
		if c.Packets != tc.pkts || c.Bytes != tc.by {
			t.Errorf("counter %#x port %d prio %d: %+v, want %d/%d", tc.id, tc.port, tc.prio, c, tc.pkts, tc.by)
		}
	}
	for _, id := range []uint32{p4src.CounterQueueDropped, p4src.CounterPFCXoffSent, p4src.CounterPFCXonSent} {
		cells, err := p.ReadCounter(id, -1, nil)
		mustOK(t, err)
		for _, c := range cells {
			total[id] += c.Packets
		}
	}
	if total[p4src.CounterQueueDropped] != 2 || total[p4src.CounterPFCXoffSent] != 2 || total[p4src.CounterPFCXonSent] != 1 {
		t.Errorf("totals %v: the ignored calls counted somewhere", total)
	}
	if _, err := p.ReadCounter(p4src.CounterQueueDropped, p4src.NumQueues-1, nil); err != nil {
		t.Errorf("last queue cell: %v", err)
	}
	if _, err := p.ReadCounter(p4src.CounterQueueDropped, p4src.NumQueues, nil); !isErr(err, ErrInvalidArgument) {
		t.Errorf("cell NUM_QUEUES: %v", err)
	}
	if _, err := p.ReadCounter(p4src.CounterDropped, p4src.NumPorts, nil); !isErr(err, ErrInvalidArgument) {
		t.Errorf("port counter cell NUM_PORTS: %v", err)
	}
	if p4src.QueueIndex(p4src.NumPorts-1, 7) != p4src.NumQueues-1 || p4src.QueueIndex(1, 0) != 8 {
		t.Errorf("QueueIndex: %d %d", p4src.QueueIndex(p4src.NumPorts-1, 7), p4src.QueueIndex(1, 0))
	}
}
