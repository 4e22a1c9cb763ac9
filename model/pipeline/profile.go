package pipeline

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// Action profiles (P4Runtime ActionProfileMember / ActionProfileGroup): the program
// has one, the action selector next_hop_selector behind next_hop_group_select
// (docs/dataplane.md "Action profiles").

// ProfileMember is an action profile member: an action with its parameters.
type ProfileMember struct {
	ProfileID uint32
	MemberID  uint32
	Action    Action
}

// GroupMember is one member of a group with its weight (>= 1).
type GroupMember struct {
	MemberID uint32
	Weight   int32
}

// ProfileGroup is an action profile group: weighted members. MaxSize bounds the sum
// of its weights (0: the profile's bound).
type ProfileGroup struct {
	ProfileID uint32
	GroupID   uint32
	Members   []GroupMember
	MaxSize   int32
}

// WeightedAction is one action of a one-shot table entry (P4Runtime
// ActionProfileActionSet): an anonymous group of anonymous members.
type WeightedAction struct {
	Action Action
	Weight int32
}

type apMember struct {
	id      uint32
	action  uint32
	params  [maxParams]uint64
	groups  int // groups that hold it
	entries int // table entries that run it
}

type apGroup struct {
	id      uint32 // 0: a one-shot entry's anonymous group
	maxSize int32
	members []GroupMember // as written
	// pick is the selection list: every member, ordered by member ID, repeated
	// weight times (weights are honoured by replication, as PI does on BMv2).
	pick    []*apMember
	weight  int // sum of the weights
	entries int // table entries that run it
	// set is a one-shot entry's action set, as written (id 0).
	set []WeightedAction
}

type profile struct {
	info    *ActionProfileInfo
	members map[uint32]*apMember
	groups  map[uint32]*apGroup
	// weight is the sum of the weights of every group (one-shots included): at
	// most info.Size (SumOfWeights).
	weight int
	// oneShots is the number of table entries that run a one-shot action set.
	oneShots int
}

func newProfile(info *ActionProfileInfo) *profile {
	return &profile{info: info, members: make(map[uint32]*apMember), groups: make(map[uint32]*apGroup)}
}

func (p *Pipeline) profile(id uint32) (*profile, error) {
	for _, pr := range p.profiles {
		if pr.info.ID == id {
			return pr, nil
		}
	}
	return nil, fmt.Errorf("action profile ID %#x: %w", id, ErrInvalidArgument)
}

// memberAction validates a member's action: one of the actions of the profile's
// tables that an entry may run (not a DEFAULT_ONLY one), with every parameter.
func (pr *profile) memberAction(a *Action) ([maxParams]uint64, error) {
	for _, tid := range pr.info.TableIDs {
		ti, _ := schema.Table(tid)
		if slices.Contains(ti.DefaultOnly, a.ID) {
			return [maxParams]uint64{}, fmt.Errorf("action profile %s: action %#x is default-only: %w", pr.info.Name, a.ID, ErrInvalidArgument)
		}
		if slices.Contains(ti.ActionIDs, a.ID) {
			return checkParams(a)
		}
	}
	return [maxParams]uint64{}, fmt.Errorf("action profile %s: action ID %#x is not an action of its tables: %w", pr.info.Name, a.ID, ErrInvalidArgument)
}

// InsertProfileMember adds a member. Errors: ErrInvalidArgument (unknown profile,
// member ID 0, bad action), ErrAlreadyExists, ErrResourceExhausted.
func (p *Pipeline) InsertProfileMember(m *ProfileMember) error {
	pr, err := p.profile(m.ProfileID)
	if err != nil {
		return fmt.Errorf("insert member: %w", err)
	}
	if m.MemberID == 0 {
		return fmt.Errorf("insert member: %s: member ID 0 is not valid: %w", pr.info.Name, ErrInvalidArgument)
	}
	params, err := pr.memberAction(&m.Action)
	if err != nil {
		return fmt.Errorf("insert member %d: %w", m.MemberID, err)
	}
	if _, ok := pr.members[m.MemberID]; ok {
		return fmt.Errorf("insert member: %s member %d exists: %w", pr.info.Name, m.MemberID, ErrAlreadyExists)
	}
	if len(pr.members) >= pr.info.Size {
		return fmt.Errorf("insert member: %s full (%d members): %w", pr.info.Name, pr.info.Size, ErrResourceExhausted)
	}
	pr.members[m.MemberID] = &apMember{id: m.MemberID, action: m.Action.ID, params: params}
	return nil
}

// ModifyProfileMember replaces a member's action (groups and entries that run it
// see the new one). Errors: ErrInvalidArgument, ErrNotFound.
func (p *Pipeline) ModifyProfileMember(m *ProfileMember) error {
	pr, err := p.profile(m.ProfileID)
	if err != nil {
		return fmt.Errorf("modify member: %w", err)
	}
	params, err := pr.memberAction(&m.Action)
	if err != nil {
		return fmt.Errorf("modify member %d: %w", m.MemberID, err)
	}
	mb, ok := pr.members[m.MemberID]
	if !ok {
		return fmt.Errorf("modify member: %s has no member %d: %w", pr.info.Name, m.MemberID, ErrNotFound)
	}
	mb.action, mb.params = m.Action.ID, params
	return nil
}

// DeleteProfileMember removes a member. Errors: ErrInvalidArgument, ErrNotFound,
// ErrFailedPrecondition (a group or a table entry still uses it).
func (p *Pipeline) DeleteProfileMember(profileID, memberID uint32) error {
	pr, err := p.profile(profileID)
	if err != nil {
		return fmt.Errorf("delete member: %w", err)
	}
	mb, ok := pr.members[memberID]
	if !ok {
		return fmt.Errorf("delete member: %s has no member %d: %w", pr.info.Name, memberID, ErrNotFound)
	}
	if mb.groups > 0 || mb.entries > 0 {
		return fmt.Errorf("delete member: %s member %d is used by %d groups and %d table entries: %w",
			pr.info.Name, memberID, mb.groups, mb.entries, ErrFailedPrecondition)
	}
	delete(pr.members, memberID)
	return nil
}

// ReadProfileMembers appends to dst the members of profile profileID (0: every
// profile) with ID memberID (0: every member), by member ID. A member that does not
// exist reads as nothing. Errors: ErrInvalidArgument (unknown profile).
func (p *Pipeline) ReadProfileMembers(profileID, memberID uint32, dst []ProfileMember) ([]ProfileMember, error) {
	for _, pr := range p.profiles {
		if profileID != 0 && pr.info.ID != profileID {
			continue
		}
		for _, id := range sortedIDs(pr.members) {
			if memberID == 0 || id == memberID {
				mb := pr.members[id]
				dst = append(dst, ProfileMember{ProfileID: pr.info.ID, MemberID: id, Action: makeAction(mb.action, &mb.params)})
			}
		}
		if profileID != 0 {
			return dst, nil
		}
	}
	if profileID != 0 {
		return dst, fmt.Errorf("read members: action profile ID %#x: %w", profileID, ErrInvalidArgument)
	}
	return dst, nil
}

func sortedIDs[T any](m map[uint32]T) []uint32 {
	ids := make([]uint32, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// groupLimit is the largest sum of weights a group may have, for a group max_size
// (P4Runtime "Rules on setting max_size"): with a max_group_size in the P4Info,
// max_size must be in 1..max_group_size (ErrInvalidArgument); without one, 0 is
// the target's limit (the profile size) and a larger max_size than the target
// supports is ErrResourceExhausted. A negative max_size is ErrInvalidArgument.
func (pr *profile) groupLimit(maxSize int32) (int, error) {
	switch {
	case maxSize < 0:
		return 0, fmt.Errorf("action profile %s: group max_size %d < 0: %w", pr.info.Name, maxSize, ErrInvalidArgument)
	case pr.info.MaxGroupSize > 0 && (maxSize == 0 || int(maxSize) > pr.info.MaxGroupSize):
		return 0, fmt.Errorf("action profile %s: group max_size %d not in 1..%d (max_group_size): %w", pr.info.Name, maxSize, pr.info.MaxGroupSize, ErrInvalidArgument)
	case int(maxSize) > pr.info.Size:
		return 0, fmt.Errorf("action profile %s: group max_size %d > %d, the most this target supports: %w", pr.info.Name, maxSize, pr.info.Size, ErrResourceExhausted)
	case maxSize > 0:
		return int(maxSize), nil
	}
	return pr.info.Size, nil
}

// buildGroup validates members against the profile (and against old, the group it
// replaces, whose weight is freed) and returns the group, not yet linked.
func (pr *profile) buildGroup(id uint32, members []GroupMember, maxSize int32, old *apGroup) (*apGroup, error) {
	limit, err := pr.groupLimit(maxSize)
	if err != nil {
		return nil, err
	}
	g := &apGroup{id: id, maxSize: maxSize, members: slices.Clone(members)}
	seen := make(map[uint32]bool, len(members))
	for _, gm := range members {
		if gm.Weight < 1 {
			return nil, fmt.Errorf("action profile %s group %d: member %d weight %d < 1: %w", pr.info.Name, id, gm.MemberID, gm.Weight, ErrInvalidArgument)
		}
		if seen[gm.MemberID] {
			return nil, fmt.Errorf("action profile %s group %d: member %d given twice: %w", pr.info.Name, id, gm.MemberID, ErrInvalidArgument)
		}
		seen[gm.MemberID] = true
		if _, ok := pr.members[gm.MemberID]; !ok {
			return nil, fmt.Errorf("action profile %s group %d: no member %d: %w", pr.info.Name, id, gm.MemberID, ErrNotFound)
		}
		g.weight += int(gm.Weight)
		if g.weight > limit {
			return nil, fmt.Errorf("action profile %s group %d: weights > %d: %w", pr.info.Name, id, limit, ErrResourceExhausted)
		}
	}
	freed := 0
	if old != nil {
		freed = old.weight
	}
	if pr.weight-freed+g.weight > pr.info.Size {
		return nil, fmt.Errorf("action profile %s: the weights of all groups would be %d > %d: %w", pr.info.Name, pr.weight-freed+g.weight, pr.info.Size, ErrResourceExhausted)
	}
	byID := slices.Clone(members)
	slices.SortFunc(byID, func(a, b GroupMember) int { return int(int64(a.MemberID) - int64(b.MemberID)) })
	g.pick = make([]*apMember, 0, g.weight)
	for _, gm := range byID {
		for range gm.Weight {
			g.pick = append(g.pick, pr.members[gm.MemberID])
		}
	}
	return g, nil
}

// link counts g's weight and its members' use; unlink undoes it.
func (pr *profile) link(g *apGroup, delta int) {
	pr.weight += delta * g.weight
	for _, gm := range g.members {
		if mb := pr.members[gm.MemberID]; mb != nil {
			mb.groups += delta
		}
	}
}

// InsertProfileGroup adds a group. Errors: ErrInvalidArgument (unknown profile,
// group ID 0, weight < 1, a member twice, max_size negative or beyond a
// max_group_size), ErrNotFound (a member that does not exist), ErrAlreadyExists,
// ErrResourceExhausted (too many groups, max_size beyond the profile size, weights
// beyond max_size or the profile size).
func (p *Pipeline) InsertProfileGroup(g *ProfileGroup) error {
	pr, err := p.profile(g.ProfileID)
	if err != nil {
		return fmt.Errorf("insert group: %w", err)
	}
	if !pr.info.WithSelector {
		return fmt.Errorf("insert group: %s is not an action selector: %w", pr.info.Name, ErrInvalidArgument)
	}
	if g.GroupID == 0 {
		return fmt.Errorf("insert group: %s: group ID 0 is not valid: %w", pr.info.Name, ErrInvalidArgument)
	}
	if _, ok := pr.groups[g.GroupID]; ok {
		return fmt.Errorf("insert group: %s group %d exists: %w", pr.info.Name, g.GroupID, ErrAlreadyExists)
	}
	if len(pr.groups) >= pr.info.Size {
		return fmt.Errorf("insert group: %s has %d groups: %w", pr.info.Name, len(pr.groups), ErrResourceExhausted)
	}
	ng, err := pr.buildGroup(g.GroupID, g.Members, g.MaxSize, nil)
	if err != nil {
		return fmt.Errorf("insert group: %w", err)
	}
	pr.link(ng, 1)
	pr.groups[g.GroupID] = ng
	return nil
}

// ModifyProfileGroup replaces a group's members and weights (table entries that run
// it see the new ones); max_size is fixed at creation and must be given unchanged.
// Errors: as InsertProfileGroup, ErrNotFound for a group that does not exist.
func (p *Pipeline) ModifyProfileGroup(g *ProfileGroup) error {
	pr, err := p.profile(g.ProfileID)
	if err != nil {
		return fmt.Errorf("modify group: %w", err)
	}
	old, ok := pr.groups[g.GroupID]
	if !ok {
		return fmt.Errorf("modify group: %s has no group %d: %w", pr.info.Name, g.GroupID, ErrNotFound)
	}
	if g.MaxSize != old.maxSize {
		return fmt.Errorf("modify group: %s group %d: max_size is fixed at creation (%d, not %d): %w", pr.info.Name, g.GroupID, old.maxSize, g.MaxSize, ErrInvalidArgument)
	}
	ng, err := pr.buildGroup(g.GroupID, g.Members, g.MaxSize, old)
	if err != nil {
		return fmt.Errorf("modify group: %w", err)
	}
	pr.link(old, -1)
	pr.link(ng, 1)
	// Entries point to the group: keep its identity, take the new contents.
	old.maxSize, old.members, old.pick, old.weight = ng.maxSize, ng.members, ng.pick, ng.weight
	return nil
}

// DeleteProfileGroup removes a group. Errors: ErrInvalidArgument, ErrNotFound,
// ErrFailedPrecondition (a table entry still runs it).
func (p *Pipeline) DeleteProfileGroup(profileID, groupID uint32) error {
	pr, err := p.profile(profileID)
	if err != nil {
		return fmt.Errorf("delete group: %w", err)
	}
	g, ok := pr.groups[groupID]
	if !ok {
		return fmt.Errorf("delete group: %s has no group %d: %w", pr.info.Name, groupID, ErrNotFound)
	}
	if g.entries > 0 {
		return fmt.Errorf("delete group: %s group %d is used by %d table entries: %w", pr.info.Name, groupID, g.entries, ErrFailedPrecondition)
	}
	pr.link(g, -1)
	delete(pr.groups, groupID)
	return nil
}

// ReadProfileGroups appends to dst the groups of profile profileID (0: every
// profile) with ID groupID (0: every group), by group ID; members as written. A
// group that does not exist reads as nothing. Errors: ErrInvalidArgument.
func (p *Pipeline) ReadProfileGroups(profileID, groupID uint32, dst []ProfileGroup) ([]ProfileGroup, error) {
	for _, pr := range p.profiles {
		if profileID != 0 && pr.info.ID != profileID {
			continue
		}
		for _, id := range sortedIDs(pr.groups) {
			if groupID == 0 || id == groupID {
				g := pr.groups[id]
				dst = append(dst, ProfileGroup{ProfileID: pr.info.ID, GroupID: id, Members: slices.Clone(g.members), MaxSize: g.maxSize})
			}
		}
		if profileID != 0 {
			return dst, nil
		}
	}
	if profileID != 0 {
		return dst, fmt.Errorf("read groups: action profile ID %#x: %w", profileID, ErrInvalidArgument)
	}
	return dst, nil
}

// ProfileUsage is what an action profile holds: members, groups, and the table
// entries that run a one-shot action set (each an anonymous group).
type ProfileUsage struct {
	Members, Groups, OneShots int
}

// ProfileUsage returns what profile profileID holds (a P4Runtime server uses it to
// keep one-shot and member/group programming of a selector apart). Errors:
// ErrInvalidArgument (unknown profile).
func (p *Pipeline) ProfileUsage(profileID uint32) (ProfileUsage, error) {
	pr, err := p.profile(profileID)
	if err != nil {
		return ProfileUsage{}, fmt.Errorf("profile usage: %w", err)
	}
	return ProfileUsage{Members: len(pr.members), Groups: len(pr.groups), OneShots: pr.oneShots}, nil
}

// oneShot builds the anonymous group of a one-shot entry: a member per action.
func (pr *profile) oneShot(set []WeightedAction) (*apGroup, error) {
	if len(set) == 0 {
		return nil, fmt.Errorf("action profile %s: an empty one-shot action set: %w", pr.info.Name, ErrInvalidArgument)
	}
	g := &apGroup{set: slices.Clone(set)}
	for i := range set {
		wa := &set[i]
		params, err := pr.memberAction(&wa.Action)
		if err != nil {
			return nil, err
		}
		if wa.Weight < 1 {
			return nil, fmt.Errorf("action profile %s: one-shot action %d weight %d < 1: %w", pr.info.Name, i, wa.Weight, ErrInvalidArgument)
		}
		g.weight += int(wa.Weight)
		// P4Runtime: the weights of a one-shot above max_group_size (if any) are
		// INVALID_ARGUMENT; above what the target supports, RESOURCE_EXHAUSTED.
		if pr.info.MaxGroupSize > 0 && g.weight > pr.info.MaxGroupSize {
			return nil, fmt.Errorf("action profile %s: one-shot weights > max_group_size %d: %w", pr.info.Name, pr.info.MaxGroupSize, ErrInvalidArgument)
		}
		if g.weight > pr.info.Size {
			return nil, fmt.Errorf("action profile %s: one-shot weights > %d: %w", pr.info.Name, pr.info.Size, ErrResourceExhausted)
		}
		mb := &apMember{action: wa.Action.ID, params: params}
		for range wa.Weight {
			g.pick = append(g.pick, mb)
		}
	}
	if pr.weight+g.weight > pr.info.Size {
		return nil, fmt.Errorf("action profile %s: the weights of all groups would be %d > %d: %w", pr.info.Name, pr.weight+g.weight, pr.info.Size, ErrResourceExhausted)
	}
	return g, nil
}

// SelectorHash is the hash of next_hop_selector over the selector fields of
// next_hop_group_select, in declaration order: IPv4 source (4 bytes), destination
// (4), protocol (1), UDP source port (2), UDP destination port (2; both 0 without a
// UDP header). CRC-16/ARC, BMv2's crc16, over those 13 bytes: the value BMv2
// computes for the action selector. A group's member is pick[hash % len(pick)],
// pick being its members ordered by member ID, each repeated weight times; BMv2
// takes hash % size over its own member handles, whose order depends on PI, so
// the member chosen in a group of several members is not reproducible there.
func SelectorHash(src, dst uint32, proto uint8, sport, dport uint16) uint16 {
	var b [13]byte
	binary.BigEndian.PutUint32(b[0:], src)
	binary.BigEndian.PutUint32(b[4:], dst)
	b[8] = proto
	binary.BigEndian.PutUint16(b[9:], sport)
	binary.BigEndian.PutUint16(b[11:], dport)
	return crc16Of(b[:])
}

// choose returns the member of g for hash h (nil for an empty group).
func (g *apGroup) choose(h uint16) *apMember {
	if len(g.pick) == 0 {
		return nil
	}
	return g.pick[int(h)%len(g.pick)]
}
