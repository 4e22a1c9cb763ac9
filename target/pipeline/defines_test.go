package pipeline

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// TestConstantsMirrorDefines: the sizes and constants of this package are those of
// p4src/include/defines.p4, the one place the P4 program keeps them.
func TestConstantsMirrorDefines(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "p4src", "include", "defines.p4"))
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	value := func(name string) (int64, bool) {
		for _, re := range []*regexp.Regexp{
			regexp.MustCompile(`(?m)^#define\s+` + name + `\s+(0x[0-9A-Fa-f]+|\d+)\b`),
			regexp.MustCompile(`const\s+bit<\d+>\s+` + name + `\s*=\s*(0x[0-9A-Fa-f]+|\d+)\s*;`),
		} {
			if m := re.FindStringSubmatch(src); m != nil {
				v, err := strconv.ParseInt(m[1], 0, 64)
				return v, err == nil
			}
		}
		return 0, false
	}
	tests := []struct {
		p4      string
		goValue int64
	}{
		{"NUM_PORTS", NumPorts},
		{"NUM_QUEUES", NumQueues},
		{"NEXT_HOP_GROUPS", NextHopGroups},
		{"NEXT_HOP_GROUP_MEMBERS", NextHopGroupMembers},
		{"NEXT_HOP_SELECTOR_WIDTH", NextHopSelectorWidth},
		{"ANNOUNCE_UDP_PORT", AnnounceUDPPort},
		{"ROUTE_TABLE_SIZE", RouteTableSize},
		{"L2_FORWARD_TABLE_SIZE", L2ForwardTableSize},
		{"TRAFFIC_CLASS_TABLE_SIZE", TrafficClassSize},
		{"CONN_TABLE_SIZE", ConnTableSize},
		{"FLOW_SLOTS", FlowSlots},
		{"INC_SLOTS", IncSlots},
		{"INC_VECTOR_LEN", IncVectorLen},
		{"INC_GROUPS", IncGroups},
		{"INC_BUCKETS", IncBuckets},
		{"LOG2_TABLE_SIZE", Log2TableSize},
		{"ANNOUNCE_UDP_PORTS", AnnounceValueSetSize},
		{"CPU_PORT", CPUPort},
		{"CNP_CLONE_SESSION", CNPCloneSession},
		{"DIGEST_MIN_GAP_NS", DigestMinGapNs},
		{"CNP_DSCP", CNPDSCP},
		{"ROCE_UDP_PORT", RoCEUDPPort},
		{"INC_BTH_MARK", IncBTHMark},
		{"PORT_MODE_OFF", ModeOff},
		{"PORT_MODE_ECN", ModeECN},
		{"PORT_MODE_FASTCNP", ModeFastcnp},
		{"PORT_EVENT_PAUSE", EventPause},
		{"PORT_EVENT_RESUME_NOT_CONGESTED", EventResumeNotCongested},
		{"PORT_EVENT_RESUME_CONGESTED", EventResumeCongested},
		{"PORT_EVENT_RESUME_UNDETERMINED", EventResumeUndetermined},
		{"PORT_EVENT_CHECK_DRAINED", EventCheckDrained},
		{"PORT_EVENT_CHECK_CONGESTED", EventCheckCongested},
		{"PUNT_REASON_ANNOUNCEMENT", ReasonAnnouncement},
		{"CONN_FLAG_INC_UPLINK", ConnFlagINC},
		{"CONN_FLAG_CNP_TARGET", ConnFlagCNPTarget},
	}
	for _, tc := range tests {
		v, ok := value(tc.p4)
		if !ok {
			t.Errorf("defines.p4 has no %s", tc.p4)
			continue
		}
		if v != tc.goValue {
			t.Errorf("%s: defines.p4 %d, target/pipeline %d", tc.p4, v, tc.goValue)
		}
	}
}
