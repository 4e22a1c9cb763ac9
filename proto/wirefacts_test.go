package proto_test

// These tests pin the P4Runtime wire schema. The expectation tables below are
// typed by hand from the P4Runtime specification's message listings, not
// derived from our .proto files, so a typo in a .proto (wrong number, type,
// label, oneof or name) makes them fail. The comparison runs both ways for
// every message, enum and method: an entry missing from the generated
// descriptors fails, and so does a descriptor element missing from the table.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	// Blank import: registers google/rpc/code.proto for the drift check.
	_ "google.golang.org/genproto/googleapis/rpc/code"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/anypb"

	p4configv1 "github.com/fastcnp/fastcnp/proto/p4/config/v1"
	p4v1 "github.com/fastcnp/fastcnp/proto/p4/v1"
	bfpb "github.com/fastcnp/fastcnp/proto/stratum/hal/lib/barefoot"
)

// Field notation: "name number kind [rep] [oneof=NAME] [opt]".
// kind is a protoreflect scalar kind name (uint64, bytes, ...), "msg:FULLNAME"
// or "enum:FULLNAME"; maps are "map<KEY,VALUE>" with the same value notation.
// rep marks a repeated field; opt marks a proto3 optional field; dep marks a
// field the spec declares [deprecated=true] (kept for its wire number).

// p4runtimeMessages is p4/v1/p4runtime.proto, message by message.
var p4runtimeMessages = map[string][]string{
	"p4.v1.WriteRequest": {
		"device_id 1 uint64",
		"role_id 2 uint64 dep",
		"role 6 string",
		"election_id 3 msg:p4.v1.Uint128",
		"updates 4 msg:p4.v1.Update rep",
		"atomicity 5 enum:p4.v1.WriteRequest.Atomicity",
	},
	"p4.v1.WriteResponse": {},
	"p4.v1.ReadRequest": {
		"device_id 1 uint64",
		"role 3 string",
		"entities 2 msg:p4.v1.Entity rep",
	},
	"p4.v1.ReadResponse": {
		"entities 1 msg:p4.v1.Entity rep",
	},
	"p4.v1.Update": {
		"type 1 enum:p4.v1.Update.Type",
		"entity 2 msg:p4.v1.Entity",
	},
	"p4.v1.Entity": {
		"extern_entry 1 msg:p4.v1.ExternEntry oneof=entity",
		"table_entry 2 msg:p4.v1.TableEntry oneof=entity",
		"action_profile_member 3 msg:p4.v1.ActionProfileMember oneof=entity",
		"action_profile_group 4 msg:p4.v1.ActionProfileGroup oneof=entity",
		"meter_entry 5 msg:p4.v1.MeterEntry oneof=entity",
		"direct_meter_entry 6 msg:p4.v1.DirectMeterEntry oneof=entity",
		"counter_entry 7 msg:p4.v1.CounterEntry oneof=entity",
		"direct_counter_entry 8 msg:p4.v1.DirectCounterEntry oneof=entity",
		"packet_replication_engine_entry 9 msg:p4.v1.PacketReplicationEngineEntry oneof=entity",
		"value_set_entry 10 msg:p4.v1.ValueSetEntry oneof=entity",
		"register_entry 11 msg:p4.v1.RegisterEntry oneof=entity",
		"digest_entry 12 msg:p4.v1.DigestEntry oneof=entity",
	},
	"p4.v1.ExternEntry": {
		"extern_type_id 1 uint32",
		"extern_id 2 uint32",
		"entry 3 msg:google.protobuf.Any",
	},
	"p4.v1.TableEntry": {
		"table_id 1 uint32",
		"match 2 msg:p4.v1.FieldMatch rep",
		"action 3 msg:p4.v1.TableAction",
		"priority 4 int32",
		"controller_metadata 5 uint64 dep",
		"meter_config 6 msg:p4.v1.MeterConfig",
		"counter_data 7 msg:p4.v1.CounterData",
		"meter_counter_data 12 msg:p4.v1.MeterCounterData",
		"is_default_action 8 bool",
		"idle_timeout_ns 9 int64",
		"time_since_last_hit 10 msg:p4.v1.TableEntry.IdleTimeout",
		"metadata 11 bytes",
		"is_const 13 bool",
	},
	"p4.v1.TableEntry.IdleTimeout": {
		"elapsed_ns 1 int64",
	},
	"p4.v1.FieldMatch": {
		"field_id 1 uint32",
		"exact 2 msg:p4.v1.FieldMatch.Exact oneof=field_match_type",
		"ternary 3 msg:p4.v1.FieldMatch.Ternary oneof=field_match_type",
		"lpm 4 msg:p4.v1.FieldMatch.LPM oneof=field_match_type",
		"range 6 msg:p4.v1.FieldMatch.Range oneof=field_match_type",
		"optional 7 msg:p4.v1.FieldMatch.Optional oneof=field_match_type",
		"other 100 msg:google.protobuf.Any oneof=field_match_type",
	},
	"p4.v1.FieldMatch.Exact":    {"value 1 bytes"},
	"p4.v1.FieldMatch.Ternary":  {"value 1 bytes", "mask 2 bytes"},
	"p4.v1.FieldMatch.LPM":      {"value 1 bytes", "prefix_len 2 int32"},
	"p4.v1.FieldMatch.Range":    {"low 1 bytes", "high 2 bytes"},
	"p4.v1.FieldMatch.Optional": {"value 1 bytes"},
	"p4.v1.TableAction": {
		"action 1 msg:p4.v1.Action oneof=type",
		"action_profile_member_id 2 uint32 oneof=type",
		"action_profile_group_id 3 uint32 oneof=type",
		"action_profile_action_set 4 msg:p4.v1.ActionProfileActionSet oneof=type",
	},
	"p4.v1.Action": {
		"action_id 1 uint32",
		"params 4 msg:p4.v1.Action.Param rep",
	},
	"p4.v1.Action.Param": {
		"param_id 2 uint32",
		"value 3 bytes",
	},
	"p4.v1.ActionProfileActionSet": {
		"group_action 5 msg:p4.v1.Action",
		"action_profile_actions 1 msg:p4.v1.ActionProfileAction rep",
		"action_selection_mode 2 enum:p4.v1.ActionProfileActionSet.ActionSelectionMode",
		"size_semantics 3 enum:p4.v1.ActionProfileActionSet.SizeSemantics",
	},
	"p4.v1.ActionProfileAction": {
		"action 1 msg:p4.v1.Action",
		"weight 2 int32",
		"watch 3 int32 oneof=watch_kind dep",
		"watch_port 4 bytes oneof=watch_kind",
	},
	"p4.v1.ActionProfileMember": {
		"action_profile_id 1 uint32",
		"member_id 2 uint32",
		"action 3 msg:p4.v1.Action",
	},
	"p4.v1.ActionProfileGroup": {
		"action_profile_id 1 uint32",
		"group_id 2 uint32",
		"members 3 msg:p4.v1.ActionProfileGroup.Member rep",
		"max_size 4 int32",
	},
	"p4.v1.ActionProfileGroup.Member": {
		"member_id 1 uint32",
		"weight 2 int32",
		"watch 3 int32 oneof=watch_kind dep",
		"watch_port 4 bytes oneof=watch_kind",
	},
	"p4.v1.Index": {"index 1 int64"},
	"p4.v1.MeterEntry": {
		"meter_id 1 uint32",
		"index 2 msg:p4.v1.Index",
		"config 3 msg:p4.v1.MeterConfig",
		"counter_data 4 msg:p4.v1.MeterCounterData",
	},
	"p4.v1.DirectMeterEntry": {
		"table_entry 1 msg:p4.v1.TableEntry",
		"config 2 msg:p4.v1.MeterConfig",
		"counter_data 3 msg:p4.v1.MeterCounterData",
	},
	"p4.v1.MeterConfig": {
		"cir 1 int64",
		"cburst 2 int64",
		"pir 3 int64",
		"pburst 4 int64",
		"eburst 5 int64",
	},
	"p4.v1.CounterEntry": {
		"counter_id 1 uint32",
		"index 2 msg:p4.v1.Index",
		"data 3 msg:p4.v1.CounterData",
	},
	"p4.v1.DirectCounterEntry": {
		"table_entry 1 msg:p4.v1.TableEntry",
		"data 2 msg:p4.v1.CounterData",
	},
	"p4.v1.CounterData": {
		"byte_count 1 int64",
		"packet_count 2 int64",
	},
	"p4.v1.MeterCounterData": {
		"green 1 msg:p4.v1.CounterData",
		"yellow 2 msg:p4.v1.CounterData",
		"red 3 msg:p4.v1.CounterData",
	},
	"p4.v1.PacketReplicationEngineEntry": {
		"multicast_group_entry 1 msg:p4.v1.MulticastGroupEntry oneof=type",
		"clone_session_entry 2 msg:p4.v1.CloneSessionEntry oneof=type",
	},
	"p4.v1.BackupReplica": {
		"port 1 bytes",
		"instance 2 uint32",
	},
	"p4.v1.Replica": {
		"egress_port 1 uint32 oneof=port_kind dep",
		"port 3 bytes oneof=port_kind",
		"instance 2 uint32",
		"backup_replicas 4 msg:p4.v1.BackupReplica rep",
	},
	"p4.v1.MulticastGroupEntry": {
		"multicast_group_id 1 uint32",
		"replicas 2 msg:p4.v1.Replica rep",
		"metadata 3 bytes",
	},
	"p4.v1.CloneSessionEntry": {
		"session_id 1 uint32",
		"replicas 2 msg:p4.v1.Replica rep",
		"class_of_service 3 uint32",
		"packet_length_bytes 4 int32",
	},
	"p4.v1.ValueSetMember": {
		"match 1 msg:p4.v1.FieldMatch rep",
	},
	"p4.v1.ValueSetEntry": {
		"value_set_id 1 uint32",
		"members 2 msg:p4.v1.ValueSetMember rep",
	},
	"p4.v1.RegisterEntry": {
		"register_id 1 uint32",
		"index 2 msg:p4.v1.Index",
		"data 3 msg:p4.v1.P4Data",
	},
	"p4.v1.DigestEntry": {
		"digest_id 1 uint32",
		"config 2 msg:p4.v1.DigestEntry.Config",
	},
	"p4.v1.DigestEntry.Config": {
		"max_timeout_ns 1 int64",
		"max_list_size 2 int32",
		"ack_timeout_ns 3 int64",
	},
	"p4.v1.StreamMessageRequest": {
		"arbitration 1 msg:p4.v1.MasterArbitrationUpdate oneof=update",
		"packet 2 msg:p4.v1.PacketOut oneof=update",
		"digest_ack 3 msg:p4.v1.DigestListAck oneof=update",
		"other 4 msg:google.protobuf.Any oneof=update",
	},
	"p4.v1.PacketOut": {
		"payload 1 bytes",
		"metadata 2 msg:p4.v1.PacketMetadata rep",
	},
	"p4.v1.DigestListAck": {
		"digest_id 1 uint32",
		"list_id 2 uint64",
	},
	"p4.v1.StreamMessageResponse": {
		"arbitration 1 msg:p4.v1.MasterArbitrationUpdate oneof=update",
		"packet 2 msg:p4.v1.PacketIn oneof=update",
		"digest 3 msg:p4.v1.DigestList oneof=update",
		"idle_timeout_notification 4 msg:p4.v1.IdleTimeoutNotification oneof=update",
		"other 5 msg:google.protobuf.Any oneof=update",
		"error 6 msg:p4.v1.StreamError oneof=update",
	},
	"p4.v1.PacketIn": {
		"payload 1 bytes",
		"metadata 2 msg:p4.v1.PacketMetadata rep",
	},
	"p4.v1.DigestList": {
		"digest_id 1 uint32",
		"list_id 2 uint64",
		"data 3 msg:p4.v1.P4Data rep",
		"timestamp 4 int64",
	},
	"p4.v1.PacketMetadata": {
		"metadata_id 1 uint32",
		"value 2 bytes",
	},
	"p4.v1.MasterArbitrationUpdate": {
		"device_id 1 uint64",
		"role 2 msg:p4.v1.Role",
		"election_id 3 msg:p4.v1.Uint128",
		"status 4 msg:google.rpc.Status",
	},
	"p4.v1.Role": {
		"id 1 uint64 dep",
		"name 3 string",
		"config 2 msg:google.protobuf.Any",
	},
	"p4.v1.IdleTimeoutNotification": {
		"table_entry 1 msg:p4.v1.TableEntry rep",
		"timestamp 2 int64",
	},
	"p4.v1.StreamError": {
		"canonical_code 1 int32",
		"message 2 string",
		"space 3 string",
		"code 4 int32",
		"packet_out 5 msg:p4.v1.PacketOutError oneof=details",
		"digest_list_ack 6 msg:p4.v1.DigestListAckError oneof=details",
		"other 7 msg:p4.v1.StreamOtherError oneof=details",
	},
	"p4.v1.PacketOutError":     {"packet_out 1 msg:p4.v1.PacketOut"},
	"p4.v1.DigestListAckError": {"digest_list_ack 1 msg:p4.v1.DigestListAck"},
	"p4.v1.StreamOtherError":   {"other 1 msg:google.protobuf.Any"},
	"p4.v1.Uint128": {
		"high 1 uint64",
		"low 2 uint64",
	},
	"p4.v1.SetForwardingPipelineConfigRequest": {
		"device_id 1 uint64",
		"role_id 2 uint64 dep",
		"role 6 string",
		"election_id 3 msg:p4.v1.Uint128",
		"action 4 enum:p4.v1.SetForwardingPipelineConfigRequest.Action",
		"config 5 msg:p4.v1.ForwardingPipelineConfig",
	},
	"p4.v1.SetForwardingPipelineConfigResponse": {},
	"p4.v1.ForwardingPipelineConfig": {
		"p4info 1 msg:p4.config.v1.P4Info",
		"p4_device_config 2 bytes",
		"cookie 3 msg:p4.v1.ForwardingPipelineConfig.Cookie",
	},
	"p4.v1.ForwardingPipelineConfig.Cookie": {"cookie 1 uint64"},
	"p4.v1.GetForwardingPipelineConfigRequest": {
		"device_id 1 uint64",
		"response_type 2 enum:p4.v1.GetForwardingPipelineConfigRequest.ResponseType",
	},
	"p4.v1.GetForwardingPipelineConfigResponse": {
		"config 1 msg:p4.v1.ForwardingPipelineConfig",
	},
	"p4.v1.Error": {
		"canonical_code 1 int32",
		"message 2 string",
		"space 3 string",
		"code 4 int32",
		"details 5 msg:google.protobuf.Any",
	},
	"p4.v1.CapabilitiesRequest": {"device_id 1 uint64"},
	"p4.v1.CapabilitiesResponse": {
		"p4runtime_api_version 1 string",
		"experimental 999 msg:google.protobuf.Any",
	},
}

// p4dataMessages is p4/v1/p4data.proto.
var p4dataMessages = map[string][]string{
	"p4.v1.P4Data": {
		"bitstring 1 bytes oneof=data",
		"varbit 2 msg:p4.v1.P4Varbit oneof=data",
		"bool 3 bool oneof=data",
		"tuple 4 msg:p4.v1.P4StructLike oneof=data",
		"struct 5 msg:p4.v1.P4StructLike oneof=data",
		"header 6 msg:p4.v1.P4Header oneof=data",
		"header_union 7 msg:p4.v1.P4HeaderUnion oneof=data",
		"header_stack 8 msg:p4.v1.P4HeaderStack oneof=data",
		"header_union_stack 9 msg:p4.v1.P4HeaderUnionStack oneof=data",
		"enum 10 string oneof=data",
		"error 11 string oneof=data",
		"enum_value 12 bytes oneof=data",
	},
	"p4.v1.P4Varbit":     {"bitstring 1 bytes", "bitwidth 2 int32"},
	"p4.v1.P4StructLike": {"members 1 msg:p4.v1.P4Data rep"},
	"p4.v1.P4Header":     {"is_valid 1 bool", "bitstrings 2 bytes rep"},
	"p4.v1.P4HeaderUnion": {
		"valid_header_name 1 string",
		"valid_header 2 msg:p4.v1.P4Header",
	},
	"p4.v1.P4HeaderStack":      {"entries 1 msg:p4.v1.P4Header rep"},
	"p4.v1.P4HeaderUnionStack": {"entries 1 msg:p4.v1.P4HeaderUnion rep"},
}

// Shorthands for the annotation triple that most P4Info objects carry.
func annos(strNum, locNum, structNum int) []string {
	return []string{
		fmt.Sprintf("annotations %d string rep", strNum),
		fmt.Sprintf("annotation_locations %d msg:p4.config.v1.SourceLocation rep", locNum),
		fmt.Sprintf("structured_annotations %d msg:p4.config.v1.StructuredAnnotation rep", structNum),
	}
}

func with(base []string, more ...[]string) []string {
	out := append([]string(nil), base...)
	for _, m := range more {
		out = append(out, m...)
	}
	return out
}

// p4infoMessages is p4/config/v1/p4info.proto.
var p4infoMessages = map[string][]string{
	"p4.config.v1.P4Info": {
		"pkg_info 1 msg:p4.config.v1.PkgInfo",
		"tables 2 msg:p4.config.v1.Table rep",
		"actions 3 msg:p4.config.v1.Action rep",
		"action_profiles 4 msg:p4.config.v1.ActionProfile rep",
		"counters 5 msg:p4.config.v1.Counter rep",
		"direct_counters 6 msg:p4.config.v1.DirectCounter rep",
		"meters 7 msg:p4.config.v1.Meter rep",
		"direct_meters 8 msg:p4.config.v1.DirectMeter rep",
		"controller_packet_metadata 9 msg:p4.config.v1.ControllerPacketMetadata rep",
		"value_sets 10 msg:p4.config.v1.ValueSet rep",
		"registers 11 msg:p4.config.v1.Register rep",
		"digests 12 msg:p4.config.v1.Digest rep",
		"externs 100 msg:p4.config.v1.Extern rep",
		"type_info 200 msg:p4.config.v1.P4TypeInfo",
	},
	"p4.config.v1.Documentation": {"brief 1 string", "description 2 string"},
	"p4.config.v1.PkgInfo": with([]string{
		"name 1 string",
		"version 2 string",
		"doc 3 msg:p4.config.v1.Documentation",
		"arch 5 string",
		"organization 6 string",
		"contact 7 string",
		"url 8 string",
		"platform_properties 11 msg:p4.config.v1.PlatformProperties",
	}, annos(4, 10, 9)),
	"p4.config.v1.PlatformProperties": {
		"multicast_group_table_size 1 int32",
		"multicast_group_table_total_replicas 2 int32",
		"multicast_group_table_max_replicas_per_entry 3 int32",
	},
	"p4.config.v1.P4Ids": {},
	"p4.config.v1.Preamble": with([]string{
		"id 1 uint32",
		"name 2 string",
		"alias 3 string",
		"doc 5 msg:p4.config.v1.Documentation",
	}, annos(4, 7, 6)),
	"p4.config.v1.Extern": {
		"extern_type_id 1 uint32",
		"extern_type_name 2 string",
		"instances 3 msg:p4.config.v1.ExternInstance rep",
	},
	"p4.config.v1.ExternInstance": {
		"preamble 1 msg:p4.config.v1.Preamble",
		"info 2 msg:google.protobuf.Any",
	},
	"p4.config.v1.MatchField": with([]string{
		"id 1 uint32",
		"name 2 string",
		"bitwidth 4 int32",
		"match_type 5 enum:p4.config.v1.MatchField.MatchType oneof=match",
		"other_match_type 7 string oneof=match",
		"doc 6 msg:p4.config.v1.Documentation",
		"type_name 8 msg:p4.config.v1.P4NamedType",
	}, annos(3, 10, 9)),
	"p4.config.v1.Table": {
		"preamble 1 msg:p4.config.v1.Preamble",
		"match_fields 2 msg:p4.config.v1.MatchField rep",
		"action_refs 3 msg:p4.config.v1.ActionRef rep",
		"const_default_action_id 4 uint32",
		"initial_default_action 5 msg:p4.config.v1.TableActionCall",
		"implementation_id 6 uint32",
		"direct_resource_ids 7 uint32 rep",
		"size 8 int64",
		"idle_timeout_behavior 9 enum:p4.config.v1.Table.IdleTimeoutBehavior",
		"is_const_table 10 bool",
		"has_initial_entries 11 bool",
		"other_properties 100 msg:google.protobuf.Any",
	},
	"p4.config.v1.TableActionCall": {
		"action_id 1 uint32",
		"arguments 4 msg:p4.config.v1.TableActionCall.Argument rep",
	},
	"p4.config.v1.TableActionCall.Argument": {
		"param_id 2 uint32",
		"value 3 bytes",
	},
	"p4.config.v1.ActionRef": with([]string{
		"id 1 uint32",
		"scope 3 enum:p4.config.v1.ActionRef.Scope",
	}, annos(2, 5, 4)),
	"p4.config.v1.Action": {
		"preamble 1 msg:p4.config.v1.Preamble",
		"params 2 msg:p4.config.v1.Action.Param rep",
	},
	"p4.config.v1.Action.Param": with([]string{
		"id 1 uint32",
		"name 2 string",
		"bitwidth 4 int32",
		"doc 5 msg:p4.config.v1.Documentation",
		"type_name 6 msg:p4.config.v1.P4NamedType",
	}, annos(3, 8, 7)),
	"p4.config.v1.ActionProfile": {
		"preamble 1 msg:p4.config.v1.Preamble",
		"table_ids 2 uint32 rep",
		"with_selector 3 bool",
		"size 4 int64",
		"max_group_size 5 int32",
		"sum_of_weights 6 msg:p4.config.v1.ActionProfile.SumOfWeights oneof=selector_size_semantics",
		"sum_of_members 7 msg:p4.config.v1.ActionProfile.SumOfMembers oneof=selector_size_semantics",
		"weights_disallowed 8 bool",
	},
	"p4.config.v1.ActionProfile.SumOfWeights": {},
	"p4.config.v1.ActionProfile.SumOfMembers": {"max_member_weight 1 int32"},
	"p4.config.v1.CounterSpec":                {"unit 1 enum:p4.config.v1.CounterSpec.Unit"},
	"p4.config.v1.Counter": {
		"preamble 1 msg:p4.config.v1.Preamble",
		"spec 2 msg:p4.config.v1.CounterSpec",
		"size 3 int64",
		"index_type_name 4 msg:p4.config.v1.P4NamedType",
	},
	"p4.config.v1.DirectCounter": {
		"preamble 1 msg:p4.config.v1.Preamble",
		"spec 2 msg:p4.config.v1.CounterSpec",
		"direct_table_id 3 uint32",
	},
	"p4.config.v1.MeterSpec": {
		"unit 1 enum:p4.config.v1.MeterSpec.Unit",
		"type 2 enum:p4.config.v1.MeterSpec.Type",
	},
	"p4.config.v1.Meter": {
		"preamble 1 msg:p4.config.v1.Preamble",
		"spec 2 msg:p4.config.v1.MeterSpec",
		"size 3 int64",
		"index_type_name 4 msg:p4.config.v1.P4NamedType",
	},
	"p4.config.v1.DirectMeter": {
		"preamble 1 msg:p4.config.v1.Preamble",
		"spec 2 msg:p4.config.v1.MeterSpec",
		"direct_table_id 3 uint32",
	},
	"p4.config.v1.ControllerPacketMetadata": {
		"preamble 1 msg:p4.config.v1.Preamble",
		"metadata 2 msg:p4.config.v1.ControllerPacketMetadata.Metadata rep",
	},
	"p4.config.v1.ControllerPacketMetadata.Metadata": with([]string{
		"id 1 uint32",
		"name 2 string",
		"bitwidth 4 int32",
		"type_name 5 msg:p4.config.v1.P4NamedType",
	}, annos(3, 7, 6)),
	"p4.config.v1.ValueSet": {
		"preamble 1 msg:p4.config.v1.Preamble",
		"match 2 msg:p4.config.v1.MatchField rep",
		"size 3 int32",
	},
	"p4.config.v1.Register": {
		"preamble 1 msg:p4.config.v1.Preamble",
		"type_spec 2 msg:p4.config.v1.P4DataTypeSpec",
		"size 3 int32",
		"index_type_name 4 msg:p4.config.v1.P4NamedType",
	},
	"p4.config.v1.Digest": {
		"preamble 1 msg:p4.config.v1.Preamble",
		"type_spec 2 msg:p4.config.v1.P4DataTypeSpec",
	},
}

// p4typesMessages is p4/config/v1/p4types.proto.
var p4typesMessages = map[string][]string{
	"p4.config.v1.P4TypeInfo": {
		"structs 1 map<string,msg:p4.config.v1.P4StructTypeSpec>",
		"headers 2 map<string,msg:p4.config.v1.P4HeaderTypeSpec>",
		"header_unions 3 map<string,msg:p4.config.v1.P4HeaderUnionTypeSpec>",
		"enums 4 map<string,msg:p4.config.v1.P4EnumTypeSpec>",
		"error 5 msg:p4.config.v1.P4ErrorTypeSpec",
		"serializable_enums 6 map<string,msg:p4.config.v1.P4SerializableEnumTypeSpec>",
		"new_types 7 map<string,msg:p4.config.v1.P4NewTypeSpec>",
	},
	"p4.config.v1.P4DataTypeSpec": {
		"bitstring 1 msg:p4.config.v1.P4BitstringLikeTypeSpec oneof=type_spec",
		"bool 2 msg:p4.config.v1.P4BoolType oneof=type_spec",
		"tuple 3 msg:p4.config.v1.P4TupleTypeSpec oneof=type_spec",
		"struct 4 msg:p4.config.v1.P4NamedType oneof=type_spec",
		"header 5 msg:p4.config.v1.P4NamedType oneof=type_spec",
		"header_union 6 msg:p4.config.v1.P4NamedType oneof=type_spec",
		"header_stack 7 msg:p4.config.v1.P4HeaderStackTypeSpec oneof=type_spec",
		"header_union_stack 8 msg:p4.config.v1.P4HeaderUnionStackTypeSpec oneof=type_spec",
		"enum 9 msg:p4.config.v1.P4NamedType oneof=type_spec",
		"error 10 msg:p4.config.v1.P4ErrorType oneof=type_spec",
		"serializable_enum 11 msg:p4.config.v1.P4NamedType oneof=type_spec",
		"new_type 12 msg:p4.config.v1.P4NamedType oneof=type_spec",
	},
	"p4.config.v1.P4NamedType": {"name 1 string"},
	"p4.config.v1.P4BoolType":  {},
	"p4.config.v1.P4ErrorType": {},
	"p4.config.v1.P4BitstringLikeTypeSpec": with([]string{
		"bit 1 msg:p4.config.v1.P4BitTypeSpec oneof=type_spec",
		"int 2 msg:p4.config.v1.P4IntTypeSpec oneof=type_spec",
		"varbit 3 msg:p4.config.v1.P4VarbitTypeSpec oneof=type_spec",
	}, annos(4, 5, 6)),
	"p4.config.v1.P4BitTypeSpec":    {"bitwidth 1 int32"},
	"p4.config.v1.P4IntTypeSpec":    {"bitwidth 1 int32"},
	"p4.config.v1.P4VarbitTypeSpec": {"max_bitwidth 1 int32"},
	"p4.config.v1.P4TupleTypeSpec":  {"members 1 msg:p4.config.v1.P4DataTypeSpec rep"},
	"p4.config.v1.P4StructTypeSpec": with([]string{
		"members 1 msg:p4.config.v1.P4StructTypeSpec.Member rep",
	}, annos(2, 3, 4)),
	"p4.config.v1.P4StructTypeSpec.Member": {
		"name 1 string",
		"type_spec 2 msg:p4.config.v1.P4DataTypeSpec",
	},
	"p4.config.v1.P4HeaderTypeSpec": with([]string{
		"members 1 msg:p4.config.v1.P4HeaderTypeSpec.Member rep",
	}, annos(2, 3, 4)),
	"p4.config.v1.P4HeaderTypeSpec.Member": {
		"name 1 string",
		"type_spec 2 msg:p4.config.v1.P4BitstringLikeTypeSpec",
	},
	"p4.config.v1.P4HeaderUnionTypeSpec": with([]string{
		"members 1 msg:p4.config.v1.P4HeaderUnionTypeSpec.Member rep",
	}, annos(2, 3, 4)),
	"p4.config.v1.P4HeaderUnionTypeSpec.Member": {
		"name 1 string",
		"header 2 msg:p4.config.v1.P4NamedType",
	},
	"p4.config.v1.P4HeaderStackTypeSpec": {
		"header 1 msg:p4.config.v1.P4NamedType",
		"size 2 int32",
	},
	"p4.config.v1.P4HeaderUnionStackTypeSpec": {
		"header_union 1 msg:p4.config.v1.P4NamedType",
		"size 2 int32",
	},
	"p4.config.v1.KeyValuePair": {
		"key 1 string",
		"value 2 msg:p4.config.v1.Expression",
	},
	"p4.config.v1.KeyValuePairList": {"kv_pairs 1 msg:p4.config.v1.KeyValuePair rep"},
	"p4.config.v1.Expression": {
		"string_value 1 string oneof=value",
		"int64_value 2 int64 oneof=value",
		"bool_value 3 bool oneof=value",
	},
	"p4.config.v1.ExpressionList": {"expressions 1 msg:p4.config.v1.Expression rep"},
	"p4.config.v1.StructuredAnnotation": {
		"name 1 string",
		"expression_list 2 msg:p4.config.v1.ExpressionList oneof=body",
		"kv_pair_list 3 msg:p4.config.v1.KeyValuePairList oneof=body",
		"source_location 4 msg:p4.config.v1.SourceLocation",
	},
	"p4.config.v1.SourceLocation": {
		"file 1 string",
		"line 2 int32",
		"column 3 int32",
	},
	"p4.config.v1.P4EnumTypeSpec": with([]string{
		"members 1 msg:p4.config.v1.P4EnumTypeSpec.Member rep",
	}, annos(2, 4, 3)),
	"p4.config.v1.P4EnumTypeSpec.Member": with([]string{
		"name 1 string",
	}, annos(2, 4, 3)),
	"p4.config.v1.P4SerializableEnumTypeSpec": with([]string{
		"underlying_type 1 msg:p4.config.v1.P4BitTypeSpec",
		"members 2 msg:p4.config.v1.P4SerializableEnumTypeSpec.Member rep",
	}, annos(3, 5, 4)),
	"p4.config.v1.P4SerializableEnumTypeSpec.Member": with([]string{
		"name 1 string",
		"value 2 bytes",
	}, annos(3, 5, 4)),
	"p4.config.v1.P4ErrorTypeSpec": {"members 1 string rep"},
	"p4.config.v1.P4NewTypeTranslation": {
		"uri 1 string",
		"sdn_bitwidth 2 int32 oneof=sdn_type",
		"sdn_string 3 msg:p4.config.v1.P4NewTypeTranslation.SdnString oneof=sdn_type",
	},
	"p4.config.v1.P4NewTypeTranslation.SdnString": {},
	"p4.config.v1.P4NewTypeSpec": with([]string{
		"original_type 1 msg:p4.config.v1.P4DataTypeSpec oneof=representation",
		"translated_type 2 msg:p4.config.v1.P4NewTypeTranslation oneof=representation",
	}, annos(3, 5, 4)),
}

// Enum values, "NAME=NUMBER", per enum, per file.
var p4runtimeEnums = map[string][]string{
	"p4.v1.WriteRequest.Atomicity": {"CONTINUE_ON_ERROR=0", "ROLLBACK_ON_ERROR=1", "DATAPLANE_ATOMIC=2"},
	"p4.v1.Update.Type":            {"UNSPECIFIED=0", "INSERT=1", "MODIFY=2", "DELETE=3"},
	"p4.v1.ActionProfileActionSet.ActionSelectionMode": {
		"DEFAULT_MODE_DETERMINED_BY_ACTION_SELECTOR=0", "HASH=1", "RANDOM=2",
	},
	"p4.v1.ActionProfileActionSet.SizeSemantics": {
		"DEFAULT_SIZE_DETERMINED_BY_ACTION_SELECTOR=0", "SUM_OF_WEIGHTS=1", "SUM_OF_MEMBERS=2",
	},
	"p4.v1.SetForwardingPipelineConfigRequest.Action": {
		"UNSPECIFIED=0", "VERIFY=1", "VERIFY_AND_SAVE=2", "VERIFY_AND_COMMIT=3", "COMMIT=4", "RECONCILE_AND_COMMIT=5",
	},
	"p4.v1.GetForwardingPipelineConfigRequest.ResponseType": {
		"ALL=0", "COOKIE_ONLY=1", "P4INFO_AND_COOKIE=2", "DEVICE_CONFIG_AND_COOKIE=3",
	},
	// 0xfffffeff, 0xfffffffa and 0xfffffffd as signed 32-bit enum numbers.
	"p4.v1.SdnPort": {
		"SDN_PORT_UNKNOWN=0", "SDN_PORT_MIN=1", "SDN_PORT_MAX=-257", "SDN_PORT_RECIRCULATE=-6", "SDN_PORT_CPU=-3",
	},
}

var p4infoEnums = map[string][]string{
	"p4.config.v1.P4Ids.Prefix": {
		"UNSPECIFIED=0", "ACTION=1", "TABLE=2", "VALUE_SET=3", "CONTROLLER_HEADER=4",
		"PSA_EXTERNS_START=16", "ACTION_PROFILE=17", "COUNTER=18", "DIRECT_COUNTER=19",
		"METER=20", "DIRECT_METER=21", "REGISTER=22", "DIGEST=23",
		"OTHER_EXTERNS_START=128", "MAX=255",
	},
	"p4.config.v1.MatchField.MatchType": {
		"UNSPECIFIED=0", "EXACT=2", "LPM=3", "TERNARY=4", "RANGE=5", "OPTIONAL=6",
	},
	"p4.config.v1.Table.IdleTimeoutBehavior": {"NO_TIMEOUT=0", "NOTIFY_CONTROL=1"},
	"p4.config.v1.ActionRef.Scope":           {"TABLE_AND_DEFAULT=0", "TABLE_ONLY=1", "DEFAULT_ONLY=2", "GROUP_ACTION=3"},
	"p4.config.v1.CounterSpec.Unit":          {"UNSPECIFIED=0", "BYTES=1", "PACKETS=2", "BOTH=3"},
	"p4.config.v1.MeterSpec.Unit":            {"UNSPECIFIED=0", "BYTES=1", "PACKETS=2"},
	"p4.config.v1.MeterSpec.Type": {
		"TWO_RATE_THREE_COLOR=0", "SINGLE_RATE_THREE_COLOR=1", "SINGLE_RATE_TWO_COLOR=2",
	},
}

// fileFacts are the per-file facts: proto package and imports in order.
var fileFacts = []struct {
	path    string
	pkg     string
	imports []string
	msgs    map[string][]string
	enums   map[string][]string
}{
	{
		path: "p4/v1/p4runtime.proto",
		pkg:  "p4.v1",
		imports: []string{
			"google/protobuf/any.proto",
			"google/rpc/status.proto",
			"p4/config/v1/p4info.proto",
			"p4/v1/p4data.proto",
		},
		msgs:  p4runtimeMessages,
		enums: p4runtimeEnums,
	},
	{path: "p4/v1/p4data.proto", pkg: "p4.v1", msgs: p4dataMessages},
	{
		path:    "p4/config/v1/p4info.proto",
		pkg:     "p4.config.v1",
		imports: []string{"google/protobuf/any.proto", "p4/config/v1/p4types.proto"},
		msgs:    p4infoMessages,
		enums:   p4infoEnums,
	},
	{path: "p4/config/v1/p4types.proto", pkg: "p4.config.v1", msgs: p4typesMessages},
	{
		path:    "stratum/hal/lib/barefoot/bf.proto",
		pkg:     "stratum.hal.barefoot",
		imports: []string{"p4/config/v1/p4info.proto"},
		msgs:    stratumBfMessages,
	},
}

// stratumBfMessages is Stratum's stratum/hal/lib/barefoot/bf.proto (stratum/stratum
// main), message by message: the device config stratum_bfrt takes.
var stratumBfMessages = map[string][]string{
	"stratum.hal.barefoot.BfPipelineConfig": {
		"p4_name 1 string",
		"bfruntime_info 2 bytes",
		"profiles 3 msg:stratum.hal.barefoot.BfPipelineConfig.Profile rep",
	},
	"stratum.hal.barefoot.BfPipelineConfig.Profile": {
		"profile_name 1 string",
		"context 2 bytes",
		"binary 3 bytes",
		"pipe_scope 4 uint32 rep",
	},
	"stratum.hal.barefoot.BfrtDeviceConfig": {
		"programs 1 msg:stratum.hal.barefoot.BfrtDeviceConfig.P4Program rep",
	},
	"stratum.hal.barefoot.BfrtDeviceConfig.P4Program": {
		"name 1 string",
		"bfrt 2 bytes",
		"p4info 3 msg:p4.config.v1.P4Info",
		"pipelines 4 msg:stratum.hal.barefoot.BfrtDeviceConfig.P4Program.P4Pipeline rep",
	},
	"stratum.hal.barefoot.BfrtDeviceConfig.P4Program.P4Pipeline": {
		"name 1 string",
		"scope 2 uint32 rep",
		"context 3 bytes",
		"config 4 bytes",
	},
}

// describeKind renders a field's type in the table notation.
func describeKind(fd protoreflect.FieldDescriptor) string {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return "msg:" + string(fd.Message().FullName())
	case protoreflect.EnumKind:
		return "enum:" + string(fd.Enum().FullName())
	default:
		return fd.Kind().String()
	}
}

// describeField renders a field descriptor in the table notation.
func describeField(fd protoreflect.FieldDescriptor) string {
	var kind string
	if fd.IsMap() {
		kind = fmt.Sprintf("map<%s,%s>", describeKind(fd.MapKey()), describeKind(fd.MapValue()))
	} else {
		kind = describeKind(fd)
	}
	parts := []string{string(fd.Name()), fmt.Sprint(fd.Number()), kind}
	if fd.IsList() {
		parts = append(parts, "rep")
	}
	if od := fd.ContainingOneof(); od != nil {
		if od.IsSynthetic() {
			parts = append(parts, "opt")
		} else {
			parts = append(parts, "oneof="+string(od.Name()))
		}
	}
	if opts, ok := fd.Options().(*descriptorpb.FieldOptions); ok && opts.GetDeprecated() {
		parts = append(parts, "dep")
	}
	return strings.Join(parts, " ")
}

// allMessages lists every message declared in a file, nested ones included.
func allMessages(mds protoreflect.MessageDescriptors, out map[string]protoreflect.MessageDescriptor) {
	for i := 0; i < mds.Len(); i++ {
		md := mds.Get(i)
		if md.IsMapEntry() {
			continue // synthesized by map<> fields, covered by the map notation
		}
		out[string(md.FullName())] = md
		allMessages(md.Messages(), out)
	}
}

func allEnums(fd protoreflect.FileDescriptor) map[string]protoreflect.EnumDescriptor {
	out := map[string]protoreflect.EnumDescriptor{}
	var walk func(protoreflect.EnumDescriptors)
	walk = func(eds protoreflect.EnumDescriptors) {
		for i := 0; i < eds.Len(); i++ {
			out[string(eds.Get(i).FullName())] = eds.Get(i)
		}
	}
	walk(fd.Enums())
	msgs := map[string]protoreflect.MessageDescriptor{}
	allMessages(fd.Messages(), msgs)
	for _, md := range msgs {
		walk(md.Enums())
	}
	return out
}

// diffSets reports elements only in want and only in got.
func diffSets(t *testing.T, what string, want, got []string) {
	t.Helper()
	w := map[string]bool{}
	for _, s := range want {
		if w[s] {
			t.Errorf("%s: table lists %q twice", what, s)
		}
		w[s] = true
	}
	g := map[string]bool{}
	for _, s := range got {
		g[s] = true
	}
	var missing, extra []string
	for s := range w {
		if !g[s] {
			missing = append(missing, s)
		}
	}
	for s := range g {
		if !w[s] {
			extra = append(extra, s)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	for _, s := range missing {
		t.Errorf("%s: in spec table but not in descriptor: %s", what, s)
	}
	for _, s := range extra {
		t.Errorf("%s: in descriptor but not in spec table: %s", what, s)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestWireFactsFiles(t *testing.T) {
	for _, ff := range fileFacts {
		t.Run(ff.path, func(t *testing.T) {
			fd, err := protoregistry.GlobalFiles.FindFileByPath(ff.path)
			if err != nil {
				t.Fatalf("file %s not registered: %v", ff.path, err)
			}
			if got := string(fd.Package()); got != ff.pkg {
				t.Errorf("package = %q, want %q", got, ff.pkg)
			}
			if fd.Syntax() != protoreflect.Proto3 {
				t.Errorf("syntax = %v, want proto3", fd.Syntax())
			}
			var imports []string
			for i := 0; i < fd.Imports().Len(); i++ {
				imports = append(imports, fd.Imports().Get(i).Path())
			}
			if strings.Join(imports, ",") != strings.Join(ff.imports, ",") {
				t.Errorf("imports = %v, want %v", imports, ff.imports)
			}

			msgs := map[string]protoreflect.MessageDescriptor{}
			allMessages(fd.Messages(), msgs)
			diffSets(t, ff.path+" messages", keys(ff.msgs), keys(msgs))
			for name, want := range ff.msgs {
				md, ok := msgs[name]
				if !ok {
					continue // already reported by diffSets
				}
				var got []string
				for i := 0; i < md.Fields().Len(); i++ {
					got = append(got, describeField(md.Fields().Get(i)))
				}
				diffSets(t, name, want, got)
			}

			enums := allEnums(fd)
			diffSets(t, ff.path+" enums", keys(ff.enums), keys(enums))
			for name, want := range ff.enums {
				ed, ok := enums[name]
				if !ok {
					continue
				}
				var got []string
				for i := 0; i < ed.Values().Len(); i++ {
					v := ed.Values().Get(i)
					got = append(got, fmt.Sprintf("%s=%d", v.Name(), v.Number()))
				}
				diffSets(t, name, want, got)
			}
		})
	}
}

func TestWireFactsService(t *testing.T) {
	fd, err := protoregistry.GlobalFiles.FindFileByPath("p4/v1/p4runtime.proto")
	if err != nil {
		t.Fatal(err)
	}
	if fd.Services().Len() != 1 {
		t.Fatalf("p4runtime.proto declares %d services, want 1", fd.Services().Len())
	}
	sd := fd.Services().Get(0)
	if sd.FullName() != "p4.v1.P4Runtime" {
		t.Fatalf("service = %s, want p4.v1.P4Runtime", sd.FullName())
	}
	// "Name In Out clientStream serverStream".
	want := []string{
		"Write p4.v1.WriteRequest p4.v1.WriteResponse false false",
		"Read p4.v1.ReadRequest p4.v1.ReadResponse false true",
		"SetForwardingPipelineConfig p4.v1.SetForwardingPipelineConfigRequest p4.v1.SetForwardingPipelineConfigResponse false false",
		"GetForwardingPipelineConfig p4.v1.GetForwardingPipelineConfigRequest p4.v1.GetForwardingPipelineConfigResponse false false",
		"StreamChannel p4.v1.StreamMessageRequest p4.v1.StreamMessageResponse true true",
		"Capabilities p4.v1.CapabilitiesRequest p4.v1.CapabilitiesResponse false false",
	}
	var got []string
	for i := 0; i < sd.Methods().Len(); i++ {
		m := sd.Methods().Get(i)
		got = append(got, fmt.Sprintf("%s %s %s %v %v", m.Name(), m.Input().FullName(),
			m.Output().FullName(), m.IsStreamingClient(), m.IsStreamingServer()))
	}
	diffSets(t, "P4Runtime methods", want, got)

	// The generated gRPC glue must use the same wire paths.
	paths := map[string]string{
		p4v1.P4Runtime_Write_FullMethodName:                       "/p4.v1.P4Runtime/Write",
		p4v1.P4Runtime_Read_FullMethodName:                        "/p4.v1.P4Runtime/Read",
		p4v1.P4Runtime_SetForwardingPipelineConfig_FullMethodName: "/p4.v1.P4Runtime/SetForwardingPipelineConfig",
		p4v1.P4Runtime_GetForwardingPipelineConfig_FullMethodName: "/p4.v1.P4Runtime/GetForwardingPipelineConfig",
		p4v1.P4Runtime_StreamChannel_FullMethodName:               "/p4.v1.P4Runtime/StreamChannel",
		p4v1.P4Runtime_Capabilities_FullMethodName:                "/p4.v1.P4Runtime/Capabilities",
	}
	for gotPath, wantPath := range paths {
		if gotPath != wantPath {
			t.Errorf("full method path %q, want %q", gotPath, wantPath)
		}
	}
	desc := p4v1.P4Runtime_ServiceDesc
	if desc.ServiceName != "p4.v1.P4Runtime" {
		t.Errorf("ServiceDesc.ServiceName = %q", desc.ServiceName)
	}
	var unary []string
	for _, m := range desc.Methods {
		unary = append(unary, m.MethodName)
	}
	diffSets(t, "unary methods", []string{"Write", "SetForwardingPipelineConfig", "GetForwardingPipelineConfig", "Capabilities"}, unary)
	streams := map[string]grpc.StreamDesc{}
	for _, s := range desc.Streams {
		streams[s.StreamName] = s
	}
	diffSets(t, "streaming methods", []string{"Read", "StreamChannel"}, keys(streams))
	if s := streams["Read"]; s.ClientStreams || !s.ServerStreams {
		t.Errorf("Read: client=%v server=%v, want server-streaming only", s.ClientStreams, s.ServerStreams)
	}
	if s := streams["StreamChannel"]; !s.ClientStreams || !s.ServerStreams {
		t.Errorf("StreamChannel: client=%v server=%v, want bidi", s.ClientStreams, s.ServerStreams)
	}
}

// TestStatusFromGenproto checks that google.rpc.Status is the genproto type,
// registered once, with the spec's fields, and that p4runtime.proto's import
// resolves to that very file.
func TestStatusFromGenproto(t *testing.T) {
	mt, err := protoregistry.GlobalTypes.FindMessageByName("google.rpc.Status")
	if err != nil {
		t.Fatalf("google.rpc.Status not registered: %v", err)
	}
	if _, ok := mt.New().Interface().(*rpcstatus.Status); !ok {
		t.Fatalf("google.rpc.Status resolves to %T, want genproto *status.Status", mt.New().Interface())
	}
	md := mt.Descriptor()
	if got := md.ParentFile().Path(); got != "google/rpc/status.proto" {
		t.Errorf("google.rpc.Status file = %q", got)
	}
	var got []string
	for i := 0; i < md.Fields().Len(); i++ {
		got = append(got, describeField(md.Fields().Get(i)))
	}
	diffSets(t, "google.rpc.Status", []string{
		"code 1 int32",
		"message 2 string",
		"details 3 msg:google.protobuf.Any rep",
	}, got)

	fd := p4v1.File_p4_v1_p4runtime_proto
	for i := 0; i < fd.Imports().Len(); i++ {
		imp := fd.Imports().Get(i)
		if imp.Path() == "google/rpc/status.proto" && imp.FileDescriptor != rpcstatus.File_google_rpc_status_proto {
			t.Errorf("p4runtime.proto's google/rpc/status.proto import is not genproto's descriptor")
		}
	}
	arb := (&p4v1.MasterArbitrationUpdate{}).ProtoReflect().Descriptor().Fields().ByName("status")
	if arb.Message() != md {
		t.Errorf("MasterArbitrationUpdate.status message %s is not the registered google.rpc.Status", arb.Message().FullName())
	}
}

// TestErrorInStatusDetails packs per-update p4.v1.Error values into a
// google.rpc.Status, sends it through the wire format and unpacks it, the
// way Write reports batch failures.
func TestErrorInStatusDetails(t *testing.T) {
	errs := []*p4v1.Error{
		{CanonicalCode: 0},
		{CanonicalCode: 6, Message: "entry exists", Space: "bmv2-v1model", Code: 17},
	}
	st := &rpcstatus.Status{Code: 2, Message: "write batch failed"}
	for _, e := range errs {
		a, err := anypb.New(e)
		if err != nil {
			t.Fatalf("anypb.New: %v", err)
		}
		if a.GetTypeUrl() != "type.googleapis.com/p4.v1.Error" {
			t.Errorf("type url = %q", a.GetTypeUrl())
		}
		st.Details = append(st.Details, a)
	}
	wire, err := proto.Marshal(st)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var back rpcstatus.Status
	if err := proto.Unmarshal(wire, &back); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	if len(back.GetDetails()) != len(errs) {
		t.Fatalf("details = %d, want %d", len(back.GetDetails()), len(errs))
	}
	for i, a := range back.GetDetails() {
		var got p4v1.Error
		if err := a.UnmarshalTo(&got); err != nil {
			t.Fatalf("detail %d: UnmarshalTo: %v", i, err)
		}
		if !proto.Equal(&got, errs[i]) {
			t.Errorf("detail %d = %v, want %v", i, &got, errs[i])
		}
		// Resolving through the registry must also find p4.v1.Error.
		m, err := a.UnmarshalNew()
		if err != nil {
			t.Fatalf("detail %d: UnmarshalNew: %v", i, err)
		}
		if _, ok := m.(*p4v1.Error); !ok {
			t.Errorf("detail %d unpacks to %T", i, m)
		}
	}
	// A detail of another type must not unpack into p4.v1.Error.
	other, _ := anypb.New(&p4v1.Uint128{High: 1})
	if err := other.UnmarshalTo(&p4v1.Error{}); err == nil {
		t.Error("Uint128 detail unpacked into p4.v1.Error")
	}
}

// TestKnownWireBytes pins a few encodings computed by hand from the field
// numbers and wire types, independent of the descriptors.
func TestKnownWireBytes(t *testing.T) {
	cases := []struct {
		name string
		msg  proto.Message
		want []byte
	}{
		{
			// Stratum's BfPipelineConfig: p4_name(1,len)="p", bfruntime_info(2,len)=0x01,
			// profiles(3,len){profile_name(1)="q", context(2)=0x02, binary(3)=0x03,
			// pipe_scope(4, packed varints)=[0,1]}.
			name: "BfPipelineConfig",
			msg: &bfpb.BfPipelineConfig{P4Name: "p", BfruntimeInfo: []byte{1},
				Profiles: []*bfpb.BfPipelineConfig_Profile{{ProfileName: "q", Context: []byte{2}, Binary: []byte{3}, PipeScope: []uint32{0, 1}}}},
			want: []byte{0x0a, 0x01, 'p', 0x12, 0x01, 0x01, 0x1a, 0x0d,
				0x0a, 0x01, 'q', 0x12, 0x01, 0x02, 0x1a, 0x01, 0x03, 0x22, 0x02, 0x00, 0x01},
		},
		{
			// device_id(1,varint)=1, election_id(3,len){low(2,varint)=1}, updates(4,len){type(1)=INSERT}
			name: "WriteRequest",
			msg: &p4v1.WriteRequest{
				DeviceId:   1,
				ElectionId: &p4v1.Uint128{Low: 1},
				Updates:    []*p4v1.Update{{Type: p4v1.Update_INSERT}},
			},
			want: []byte{0x08, 0x01, 0x1a, 0x02, 0x10, 0x01, 0x22, 0x02, 0x08, 0x01},
		},
		{
			// field_id(1)=1, lpm(4,len){value(1)=0x0a, prefix_len(2)=8}
			name: "FieldMatch LPM",
			msg: &p4v1.FieldMatch{
				FieldId:        1,
				FieldMatchType: &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: []byte{0x0a}, PrefixLen: 8}},
			},
			want: []byte{0x08, 0x01, 0x22, 0x05, 0x0a, 0x01, 0x0a, 0x10, 0x08},
		},
		{
			// multicast_group_id(1)=5, replicas(2,len){instance(2)=1, port(3,len)=0x01};
			// fields are emitted in number order.
			name: "MulticastGroupEntry",
			msg: &p4v1.MulticastGroupEntry{
				MulticastGroupId: 5,
				Replicas: []*p4v1.Replica{{
					PortKind: &p4v1.Replica_Port{Port: []byte{0x01}},
					Instance: 1,
				}},
			},
			want: []byte{0x08, 0x05, 0x12, 0x05, 0x10, 0x01, 0x1a, 0x01, 0x01},
		},
		{
			// match_type(5,varint)=EXACT(2) inside MatchField
			name: "MatchField",
			msg:  &p4configv1.MatchField{Id: 1, Match: &p4configv1.MatchField_MatchType_{MatchType: p4configv1.MatchField_EXACT}},
			want: []byte{0x08, 0x01, 0x28, 0x02},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := proto.MarshalOptions{Deterministic: true}.Marshal(c.msg)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(c.want) {
				t.Errorf("encoding = % x, want % x", got, c.want)
			}
		})
	}
}

// TestGoogleRPCProtosMatchGenproto compiles our google/rpc/*.proto with
// protoc (when available) and checks them against the descriptors genproto
// registers, so the protoc-only copies cannot drift.
func TestGoogleRPCProtosMatchGenproto(t *testing.T) {
	protoc, err := exec.LookPath("protoc")
	if err != nil {
		t.Skip("protoc not installed")
	}
	out := filepath.Join(t.TempDir(), "set.pb")
	cmd := exec.Command(protoc, "-I", ".", "-I", "/usr/include", "--include_imports",
		"--descriptor_set_out="+out, "google/rpc/status.proto", "google/rpc/code.proto")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("protoc: %v\n%s", err, b)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(raw, &set); err != nil {
		t.Fatal(err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"google/rpc/status.proto", "google/rpc/code.proto"} {
		ours, err := files.FindFileByPath(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		theirs, err := protoregistry.GlobalFiles.FindFileByPath(path)
		if err != nil {
			t.Fatalf("%s not registered by genproto: %v", path, err)
		}
		if ours.Package() != theirs.Package() {
			t.Errorf("%s package %s vs %s", path, ours.Package(), theirs.Package())
		}
		om := map[string]protoreflect.MessageDescriptor{}
		tm := map[string]protoreflect.MessageDescriptor{}
		allMessages(ours.Messages(), om)
		allMessages(theirs.Messages(), tm)
		diffSets(t, path+" messages", keys(tm), keys(om))
		for name, md := range om {
			if tmd, ok := tm[name]; ok {
				var a, b []string
				for i := 0; i < md.Fields().Len(); i++ {
					a = append(a, describeField(md.Fields().Get(i)))
				}
				for i := 0; i < tmd.Fields().Len(); i++ {
					b = append(b, describeField(tmd.Fields().Get(i)))
				}
				diffSets(t, name, b, a)
			}
		}
		oe, te := allEnums(ours), allEnums(theirs)
		diffSets(t, path+" enums", keys(te), keys(oe))
		for name, ed := range oe {
			if ted, ok := te[name]; ok {
				var a, b []string
				for i := 0; i < ed.Values().Len(); i++ {
					a = append(a, fmt.Sprintf("%s=%d", ed.Values().Get(i).Name(), ed.Values().Get(i).Number()))
				}
				for i := 0; i < ted.Values().Len(); i++ {
					b = append(b, fmt.Sprintf("%s=%d", ted.Values().Get(i).Name(), ted.Values().Get(i).Number()))
				}
				diffSets(t, name, b, a)
			}
		}
	}
}
