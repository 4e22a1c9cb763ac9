package p4src

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/fastcnp/fastcnp/p4src/internal/p4defines"
	"github.com/fastcnp/fastcnp/p4src/internal/p4log2"
)

// TestDefinesGenerated: defines_gen.go is what `go generate ./p4src` makes from
// include/defines.p4, so the P4 file stays the one source of the program's sizes,
// modes, event codes and flags.
func TestDefinesGenerated(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("include", "defines.p4"))
	if err != nil {
		t.Fatal(err)
	}
	defs, err := p4defines.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	want, err := p4defines.Render("p4src", "p4src/include/defines.p4", defs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("defines_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("defines_gen.go is stale: run `go generate ./p4src` and commit the result")
	}
}

// TestLog2EntriesGenerated: tna/log2_entries.p4, the TNA program's constant log2
// tables, is what `go generate ./p4src` makes from p4src/window, the tables
// fastcnpd installs for the window, so the two compute the same logarithms.
func TestLog2EntriesGenerated(t *testing.T) {
	got, err := os.ReadFile(filepath.Join("tna", "log2_entries.p4"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, p4log2.Render()) {
		t.Fatal("tna/log2_entries.p4 is stale: run `go generate ./p4src` and commit the result")
	}
}

// TestIDsMatchP4Info: every ID constant names the object the committed P4Info gives
// that ID, so a changed @id in the P4 source fails here, not on a switch.
func TestIDsMatchP4Info(t *testing.T) {
	info, err := P4Info()
	if err != nil {
		t.Fatal(err)
	}
	names := map[uint32]string{}
	add := func(id uint32, name string) {
		if prev, dup := names[id]; dup {
			t.Fatalf("P4Info: ID %#x used by %s and %s", id, prev, name)
		}
		names[id] = name
	}
	for _, x := range info.GetTables() {
		add(x.GetPreamble().GetId(), x.GetPreamble().GetName())
	}
	for _, x := range info.GetActions() {
		add(x.GetPreamble().GetId(), x.GetPreamble().GetName())
	}
	for _, x := range info.GetActionProfiles() {
		add(x.GetPreamble().GetId(), x.GetPreamble().GetName())
	}
	for _, x := range info.GetCounters() {
		add(x.GetPreamble().GetId(), x.GetPreamble().GetName())
	}
	for _, x := range info.GetRegisters() {
		add(x.GetPreamble().GetId(), x.GetPreamble().GetName())
	}
	for _, x := range info.GetDigests() {
		add(x.GetPreamble().GetId(), x.GetPreamble().GetName())
	}
	for _, x := range info.GetValueSets() {
		add(x.GetPreamble().GetId(), x.GetPreamble().GetName())
	}
	for _, x := range info.GetControllerPacketMetadata() {
		add(x.GetPreamble().GetId(), x.GetPreamble().GetName())
	}
	tests := []struct {
		id   uint32
		name string
	}{
		{PacketInID, "packet_in"},
		{PacketOutID, "packet_out"},
		{AnnounceUDPPortID, "FastcnpParser.announce_udp_port"},
		{ActionDrop, "FastcnpIngress.drop"},
		{ActionSetNexthop, "FastcnpIngress.set_nexthop"},
		{ActionSetTrafficClass, "FastcnpIngress.set_traffic_class"},
		{ActionSetPortConfig, "FastcnpIngress.set_port_config"},
		{ActionSetConnection, "FastcnpIngress.set_connection"},
		{ActionSetIncGroup, "FastcnpIngress.set_inc_group"},
		{ActionSetFlowLog2, "FastcnpEgress.set_flow_bytes_log2"},
		{ActionSetPortLog2, "FastcnpEgress.set_port_bytes_log2"},
		{ActionSetWindow, "FastcnpEgress.set_window"},
		{ActionL2SetPort, "FastcnpIngress.l2_set_port"},
		{ActionL2Flood, "FastcnpIngress.l2_flood"},
		{ActionSetNextHopGroup, "FastcnpIngress.set_next_hop_group"},
		{ActionSetIncSlotTimeout, "FastcnpIngress.set_inc_slot_timeout"},
		{ActionNoAction, "NoAction"},
		{TableIPv4Route, "FastcnpIngress.ipv4_route"},
		{TableTrafficClass, "FastcnpIngress.traffic_class"},
		{TablePortConfig, "FastcnpIngress.port_config"},
		{TableRDMAConnection, "FastcnpIngress.rdma_connection"},
		{TableIncGroup, "FastcnpIngress.inc_group"},
		{TableIncRoute, "FastcnpIngress.inc_route"},
		{TableFlowBytesLog2, "FastcnpEgress.flow_bytes_log2"},
		{TablePortBytesLog2, "FastcnpEgress.port_bytes_log2"},
		{TableWindowExp2, "FastcnpEgress.window_exp2"},
		{TableL2Forward, "FastcnpIngress.l2_forward"},
		{TableNextHopGroupSelect, "FastcnpIngress.next_hop_group_select"},
		{TableIncSlotTimeout, "FastcnpIngress.inc_slot_timeout"},
		{ProfileNextHopSelector, "FastcnpIngress.next_hop_selector"},
		{CounterSwitchCNPSent, "FastcnpEgress.switch_cnp_sent"},
		{CounterECNMarked, "FastcnpEgress.ecn_marked"},
		{CounterPFCPauseRx, "FastcnpIngress.pfc_pause_rx"},
		{CounterPFCResumeRx, "FastcnpIngress.pfc_resume_rx"},
		{CounterDropped, "FastcnpIngress.dropped"},
		{CounterMalformed, "FastcnpIngress.malformed"},
		{CounterFlowCollisions, "FastcnpIngress.flow_collisions"},
		{CounterAnnouncements, "FastcnpIngress.announcements"},
		{CounterIncContributions, "FastcnpIngress.inc_contributions"},
		{CounterIncDuplicates, "FastcnpIngress.inc_duplicates"},
		{CounterIncResults, "FastcnpIngress.inc_results"},
		{CounterIncSlotBusy, "FastcnpIngress.inc_slot_busy"},
		{CounterQueueEnqueued, "FastcnpIngress.queue_enqueued"},
		{CounterQueueDequeued, "FastcnpEgress.queue_dequeued"},
		{CounterQueueDropped, "FastcnpEgress.queue_dropped"},
		{CounterPFCXoffSent, "FastcnpIngress.pfc_xoff_sent"},
		{CounterPFCXonSent, "FastcnpIngress.pfc_xon_sent"},
		{CounterIncSlotTakeovers, "FastcnpIngress.inc_slot_takeovers"},
		{CounterInputDropped, "FastcnpIngress.input_dropped"},
		{RegPortPaused, "port_paused"},
		{RegPortPauseStart, "port_pause_start_ns"},
		{RegPortPauseExpire, "port_pause_expire_ns"},
		{RegPortRxBytes, "port_rx_bytes"},
		{RegPortUndetermined, "port_undetermined"},
		{RegPortQSnapshot, "port_q_snapshot"},
		{RegPortCheckAt, "port_check_at_ns"},
		{RegPortQueueBytes, "port_queue_bytes"},
		{RegPortLastDigest, "port_last_digest_ns"},
		{RegFlowBytes, "flow_bytes"},
		{RegFlowKey, "flow_key"},
		{RegFlowLastCNP, "flow_last_cnp_ns"},
		{RegIncFlowIncID, "inc_flow_inc_id"},
		{RegIncFlowFirstPSN, "inc_flow_first_psn"},
		{RegIncFlowLen, "inc_flow_len"},
		{RegIncSlotIncID, "inc_slot_inc_id"},
		{RegIncSlotOffset, "inc_slot_offset"},
		{RegIncSlotBitmap, "inc_slot_bitmap"},
		{RegIncSlotValue0, "inc_slot_value_0"},
		{RegIncSlotStart, "inc_slot_start_ns"},
		{DigestPortState, "port_state_digest_t"},
		{DigestCNP, "cnp_digest_t"},
	}
	for _, tc := range tests {
		if got, ok := names[tc.id]; !ok {
			t.Errorf("%s: no object with ID %#x in the P4Info", tc.name, tc.id)
		} else if got != tc.name {
			t.Errorf("ID %#x: P4Info names it %s, the constant is for %s", tc.id, got, tc.name)
		}
	}
	if names[DigestPortState] != DigestPortStateName || names[DigestCNP] != DigestCNPName {
		t.Errorf("digest names: P4Info %q/%q, constants %q/%q",
			names[DigestPortState], names[DigestCNP], DigestPortStateName, DigestCNPName)
	}
}

func TestQueueIndex(t *testing.T) {
	tests := []struct {
		port uint16
		prio uint8
		want uint16
	}{
		{0, 0, 0},
		{1, 3, 11},
		{NumPorts - 1, 7, NumQueues - 1},
		{NumPorts + 2, 9, 2*8 + 1}, // port and priority wrap like their P4 widths
	}
	for _, tc := range tests {
		if got := QueueIndex(tc.port, tc.prio); got != tc.want {
			t.Errorf("QueueIndex(%d, %d) = %d, want %d", tc.port, tc.prio, got, tc.want)
		}
	}
}
