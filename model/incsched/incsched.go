// Package incsched picks INC message IDs whose aggregation slots do not
// clash (spec 04): the switches aggregate each (INC ID, offset) in the slot
// its hash names (pipeline.IncSlot) and drop a contribution whose slot holds
// another (INC ID, offset) still being aggregated (inc_slot_busy); workers
// do not resend. A schedule of many concurrent messages is therefore chosen
// so that the messages that may be in flight together never share a slot,
// as an application with its own slot allocation would (SwitchML's workers
// pick their slots). The netns testbed's S4 and fastcnp-sim's S4 use it.
package incsched

import (
	"fmt"

	"github.com/fastcnp/fastcnp/model/pipeline"
)

// Group is one group of an INC schedule: its ID and how many
// messages it sends.
type Group struct {
	Group    uint16
	Messages int
}

// IDs returns message IDs for groups that send their messages in
// step: message k of every group is due at the same time, and message k
// of group i comes before message k of group i+1 in the combined order.
// In that order, no two of any window consecutive messages share an
// aggregation slot (pipeline.IncSlot) over offsets offsets each, and each
// group's IDs increase from 1. It fails when a group runs out of IDs.
func IDs(groups []Group, offsets, window int) ([][]uint16, error) {
	if offsets < 1 || window < 1 {
		return nil, fmt.Errorf("incsched: offsets %d and window %d must be positive", offsets, window)
	}
	out := make([][]uint16, len(groups))
	next := make([]uint32, len(groups)) // next candidate ID per group
	for i := range next {
		next[i] = 1
	}
	// slots of the last window-1 messages in the combined order.
	var recent [][]uint32
	used := map[uint32]int{}
	rounds := 0
	for _, g := range groups {
		rounds = max(rounds, g.Messages)
	}
	for k := 0; k < rounds; k++ {
		for i, g := range groups {
			if k >= g.Messages {
				continue
			}
			var slots []uint32
			for ; ; next[i]++ {
				if next[i] > 0xFFFF {
					return nil, fmt.Errorf("incsched: group %d runs out of message IDs at message %d", g.Group, k)
				}
				slots = messageSlots(uint32(g.Group)<<16|next[i], offsets)
				if slots != nil && !clashes(slots, used) {
					break
				}
			}
			out[i] = append(out[i], uint16(next[i]))
			next[i]++
			recent = append(recent, slots)
			for _, s := range slots {
				used[s]++
			}
			if len(recent) >= window {
				for _, s := range recent[0] {
					if used[s]--; used[s] == 0 {
						delete(used, s)
					}
				}
				recent = recent[1:]
			}
		}
	}
	return out, nil
}

// messageSlots returns the slots of a message's offsets, or nil when two
// of its own offsets share one.
func messageSlots(incID uint32, offsets int) []uint32 {
	slots := make([]uint32, offsets)
	seen := make(map[uint32]bool, offsets)
	for o := range offsets {
		s := pipeline.IncSlot(incID, uint32(o))
		if seen[s] {
			return nil
		}
		seen[s] = true
		slots[o] = s
	}
	return slots
}

func clashes(slots []uint32, used map[uint32]int) bool {
	for _, s := range slots {
		if used[s] > 0 {
			return true
		}
	}
	return false
}

// Clashes counts, for messages in the combined order of
// IDs, the pairs within window of each other that share a slot
// (0 for a schedule IDs made with that window or a larger one).
func Clashes(groups []uint16, ids [][]uint16, offsets, window int) int {
	type msg struct{ slots map[uint32]bool }
	var order []msg
	rounds := 0
	for _, l := range ids {
		rounds = max(rounds, len(l))
	}
	for k := 0; k < rounds; k++ {
		for i, g := range groups {
			if k >= len(ids[i]) {
				continue
			}
			m := msg{slots: map[uint32]bool{}}
			for o := range offsets {
				m.slots[pipeline.IncSlot(uint32(g)<<16|uint32(ids[i][k]), uint32(o))] = true
			}
			order = append(order, m)
		}
	}
	n := 0
	for a := range order {
		for b := a + 1; b < len(order) && b < a+window; b++ {
			for s := range order[a].slots {
				if order[b].slots[s] {
					n++
					break
				}
			}
		}
	}
	return n
}
