package pipeline

import (
	"bytes"
	"testing"

	"github.com/fastcnp/fastcnp/p4src"
)

// FuzzPipeline feeds arbitrary frames through ingress, enqueue and egress of a fully
// configured pipeline (fastcnp on port 2 with a standing queue, INC group, value set,
// L2 entries and a flood group): nothing may panic, a frame that is forwarded must
// leave the queue accounting balanced, and a flood never goes back to its ingress port.
func FuzzPipeline(f *testing.F) {
	f.Add(dataSR(100).build(f), uint16(portS), int64(1000))
	f.Add(incPkt(0, firstPSN, idsFor(incMsg, firstPSN, flowLen), 1).build(f), uint16(portS), int64(5))
	f.Add(incPkt(2, firstPSN+1, nil, 1).build(f), uint16(portS), int64(5))
	f.Add(pfcFrame(f, 8, 3, 100), uint16(portR), int64(7))
	f.Add(append([]byte{0, 0x80}, dataSR(10).build(f)...), uint16(p4src.CPUPort), int64(0))
	f.Add([]byte{}, uint16(0), int64(-1))
	f.Add(l2Frame(macBcast, 0x0806, 10, arpRequest), uint16(portW), int64(9))
	f.Add(l2Frame(macR, 0x86dd, 0, ipv6UDP), uint16(portS), int64(9))
	// One pipeline for the whole run: its state accumulates, which explores more.
	p := newL2Test(f)
	mustOK(f, p.InsertEntry(&TableEntry{TableID: p4src.TableIncGroup, Match: []FieldMatch{{FieldID: 1, Value: incGroup}},
		Action: Action{ID: p4src.ActionSetIncGroup, Params: []Param{{1, 0b111}, {2, 1}}}}))
	for w := range 3 {
		mustOK(f, p.InsertEntry(connEntry(workerIP(w), incSport, incQP, 1, p4src.ConnFlagIncUplink|p4src.ConnFlagCNPTarget, uint64(w), incGroup, uint64(w))))
	}
	mustOK(f, p.SetValueSet(p4src.AnnounceUDPPortID, []uint64{4792}))
	mustOK(f, p.WriteRegister(p4src.RegPortQueueBytes, portR, 500_000))
	f.Fuzz(func(t *testing.T, frame []byte, port uint16, now int64) {
		var ir IngressResult
		orig := append([]byte(nil), frame...)
		if err := p.Ingress(frame, port, now, &ir); err != nil {
			if port < p4src.NumPorts {
				t.Fatalf("error on a valid port: %v", err)
			}
			return
		}
		if ir.Verdict == VerdictMulticast {
			if len(ir.Replicas) > len(floodReplicas) || !bytes.Equal(ir.Frame, orig) {
				t.Fatalf("flood: %d replicas, frame changed %v", len(ir.Replicas), !bytes.Equal(ir.Frame, orig))
			}
			for _, r := range ir.Replicas {
				if r.Port == port {
					t.Fatalf("flood from port %d sent back to it: %v", port, ir.Replicas)
				}
			}
			return
		}
		if ir.Verdict != VerdictForward {
			return
		}
		out := append([]byte(nil), ir.Frame...)
		m := ir.Meta
		before := p.regs.port[m.EgressPort].queueBytes
		p.OnEnqueue(&m)
		var er EgressResult
		mustOK(t, p.Egress(out, m.EgressPort, now+1, &m, &er))
		if after := p.regs.port[m.EgressPort].queueBytes; after != before {
			t.Fatalf("queue %d -> %d after enqueue+dequeue", before, after)
		}
		if er.CNP {
			m2 := er.CNPMeta
			p.OnEnqueue(&m2)
			mustOK(t, p.Egress(append([]byte(nil), er.CNPFrame...), m2.EgressPort, now+2, &m2, &er))
		}
	})
}
