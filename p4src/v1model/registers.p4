// fastcnp (v1model): the data-plane state (docs/dataplane.md "Registers").
// v1model register<T> externs; a TNA program declares Register<T, I> with the
// same names, sizes and @ids.
//
// All registers are top-level instances so that ingress (enqueue accounting,
// PFC events) and egress (dequeue accounting, the port state machine, CNPs)
// share them; p4c names them without a control prefix. The controller never
// reads or writes them (BMv2 answers register RPCs with UNIMPLEMENTED):
// telemetry leaves through counters and digests. (The conformance suite's BMv2
// runner presets and reads them through BMv2's Thrift CLI, simple_switch_CLI,
// by these names: docs/conformance.md, "Register presets".)
// Cells are indexed by port number (NUM_PORTS), flow slot (FLOW_SLOTS),
// connection index (CONN_TABLE_SIZE), data flow (INC_FLOW_SLOTS) or
// aggregation slot (INC_SLOTS).

#ifndef _FASTCNP_REGISTERS_P4_
#define _FASTCNP_REGISTERS_P4_

#include "../include/defines.p4"


// Per egress port: spec 01 portTable and the queue length.
// a PFC PAUSE for the lossless priority is in force on port p (spec 01 portTable.paused)
@id(0x16000001) register<bit<1>>(NUM_PORTS) port_paused;
// when the current pause started (portTable.pauseTime)
@id(0x16000002) register<bit<48>>(NUM_PORTS) port_pause_start_ns;
// when the current pause runs out unless refreshed (quanta * quantum)
@id(0x16000003) register<bit<48>>(NUM_PORTS) port_pause_expire_ns;
// lossless bytes enqueued to p since the pause started (portTable.rxByte)
@id(0x16000004) register<bit<32>>(NUM_PORTS) port_rx_bytes;
// PORT_DETERMINED / PORT_UNDETERMINED (portTable.state)
@id(0x16000005) register<bit<1>>(NUM_PORTS) port_undetermined;
// queue bytes when the check timer was last armed (portTable.qSnapshot)
@id(0x16000006) register<bit<32>>(NUM_PORTS) port_q_snapshot;
// when an undetermined port is next re-examined (portTable.checkAt)
@id(0x16000007) register<bit<48>>(NUM_PORTS) port_check_at_ns;
// lossless bytes now queued at p (sum_p)
@id(0x16000008) register<bit<32>>(NUM_PORTS) port_queue_bytes;
// when the last cnp_digest_t for p was sent
@id(0x16000009) register<bit<48>>(NUM_PORTS) port_last_digest_ns;
// bytes p has sent: every packet at dequeue, INT records included (INT tx_bytes)
@id(0x16000024) register<bit<64>>(NUM_PORTS) port_tx_bytes;

// Per flow (spec 01 flowTable), hash-indexed; see docs/dataplane.md "Hashes".
// bytes of the flow in this slot now queued (flowTable data[f])
@id(0x1600000A) register<bit<32>>(FLOW_SLOTS) flow_bytes;
// fingerprint (full CRC-32) of the flow that owns the slot
@id(0x1600000B) register<bit<32>>(FLOW_SLOTS) flow_key;
// when the last switch CNP for the flow was made (cnpGap)
@id(0x1600000C) register<bit<48>>(FLOW_SLOTS) flow_last_cnp_ns;

// INC: the data flow -> INC ID map (spec 04 step 2; docs/dataplane.md ingress
// 8): INC_FLOW_WAYS data flows per connection, cell conn_index *
// INC_FLOW_WAYS + way. A data flow is (first PSN, operation ID, length); a
// packet belongs to the newest flow of its connection whose PSN range holds it.
// per data flow: its INC ID (group << 16 | message)
@id(0x1600000D) register<bit<32>>(INC_FLOW_SLOTS) inc_flow_inc_id;
// per data flow: its first PSN
@id(0x1600000E) register<bit<24>>(INC_FLOW_SLOTS) inc_flow_first_psn;
// per data flow: its length in packets (0: the way holds no flow)
@id(0x1600000F) register<bit<32>>(INC_FLOW_SLOTS) inc_flow_len;
// per data flow: its communication-operation ID
@id(0x16000040) register<bit<16>>(INC_FLOW_SLOTS) inc_flow_op;
// per connection: the way the next new data flow is written to (round robin)
@id(0x16000041) register<bit<2>>(CONN_TABLE_SIZE) inc_flow_next_way;

// INC: aggregation slots (spec 04 step 3).
// aggregation slot: INC ID it holds
@id(0x16000010) register<bit<32>>(INC_SLOTS) inc_slot_inc_id;
// aggregation slot: offset (PSN - first PSN) it holds
@id(0x16000011) register<bit<32>>(INC_SLOTS) inc_slot_offset;
// aggregation slot: contributors added so far (bit = worker rank or child
// switch rank); 0 = free
@id(0x16000012) register<bit<32>>(INC_SLOTS) inc_slot_bitmap;
// aggregation slot: when its message claimed it, or completed (slot aging)
@id(0x16000023) register<bit<48>>(INC_SLOTS) inc_slot_start_ns;
// aggregation slot: the operation ID of the message it holds
@id(0x16000042) register<bit<16>>(INC_SLOTS) inc_slot_op;
// aggregation slot: 1 = it holds a completed (INC ID, offset, operation):
// free for any other, a late copy of that one is a duplicate
@id(0x16000043) register<bit<1>>(INC_SLOTS) inc_slot_done;

// INC: one register per vector lane, the running sums of the slot.
@id(0x16000013) register<bit<32>>(INC_SLOTS) inc_slot_value_0;
@id(0x16000014) register<bit<32>>(INC_SLOTS) inc_slot_value_1;
@id(0x16000015) register<bit<32>>(INC_SLOTS) inc_slot_value_2;
@id(0x16000016) register<bit<32>>(INC_SLOTS) inc_slot_value_3;
@id(0x16000017) register<bit<32>>(INC_SLOTS) inc_slot_value_4;
@id(0x16000018) register<bit<32>>(INC_SLOTS) inc_slot_value_5;
@id(0x16000019) register<bit<32>>(INC_SLOTS) inc_slot_value_6;
@id(0x1600001A) register<bit<32>>(INC_SLOTS) inc_slot_value_7;
@id(0x1600001B) register<bit<32>>(INC_SLOTS) inc_slot_value_8;
@id(0x1600001C) register<bit<32>>(INC_SLOTS) inc_slot_value_9;
@id(0x1600001D) register<bit<32>>(INC_SLOTS) inc_slot_value_10;
@id(0x1600001E) register<bit<32>>(INC_SLOTS) inc_slot_value_11;
@id(0x1600001F) register<bit<32>>(INC_SLOTS) inc_slot_value_12;
@id(0x16000020) register<bit<32>>(INC_SLOTS) inc_slot_value_13;
@id(0x16000021) register<bit<32>>(INC_SLOTS) inc_slot_value_14;
@id(0x16000022) register<bit<32>>(INC_SLOTS) inc_slot_value_15;

#endif  // _FASTCNP_REGISTERS_P4_
