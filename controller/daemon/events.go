package daemon

import (
	"sync"
	"time"
)

// Event is one thing that happened (digest, announcement, switch state).
type Event struct {
	Time    time.Time
	Kind    string
	Switch  string
	Port    uint16
	Message string
	Fields  map[string]string
}

// Event kinds.
const (
	EventPortState          = "port_state"
	EventCNP                = "cnp"
	EventAnnounceAccepted   = "announce_accepted"
	EventAnnounceRejected   = "announce_rejected"
	EventConnectionAdded    = "connection_added"
	EventConnectionRemoved  = "connection_removed"
	EventSwitchConnected    = "switch_connected"
	EventSwitchDisconnected = "switch_disconnected"
	EventPrimary            = "primary"
	EventBackup             = "backup"
	EventRepaired           = "repaired"
	EventPortSettings       = "port_settings"
	EventCounters           = "counters"
	EventINCTree            = "inc_tree"
)

// broker fans events out to subscribers; a slow subscriber loses events
// (counted) rather than slowing the daemon.
type broker struct {
	mu      sync.Mutex
	subs    map[chan Event]struct{}
	dropped func()
	count   func(int) // called with the number of subscribers when it changes
}

func newBroker(dropped func(), count func(int)) *broker {
	return &broker{subs: make(map[chan Event]struct{}), dropped: dropped, count: count}
}

// subscribe returns a channel of events and a function that ends the
// subscription (it closes the channel).
func (b *broker) subscribe(buffer int) (<-chan Event, func()) {
	ch := make(chan Event, buffer)
	b.mu.Lock()
	b.subs[ch] = struct{}{}
	if b.count != nil {
		b.count(len(b.subs))
	}
	b.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			b.mu.Lock()
			delete(b.subs, ch)
			if b.count != nil {
				b.count(len(b.subs))
			}
			b.mu.Unlock()
			close(ch)
		})
	}
}

func (b *broker) publish(e Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- e:
		default:
			if b.dropped != nil {
				b.dropped()
			}
		}
	}
}
