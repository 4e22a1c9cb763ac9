package tm_test

import (
	"fmt"

	"github.com/fastcnp/fastcnp/model/tm"
)

// A 1 Gb/s port with 1 us of propagation delay sends two 1500-B frames back to back,
// then PFC pauses priority 3 for 100 quanta (51.2 us at 1 Gb/s).
func Example() {
	m, err := tm.New[string](tm.Config{
		Ports:       []tm.PortConfig{{RateBps: 1e9, PropDelayNs: 1000}, {RateBps: 1e9}},
		BufferBytes: 1 << 20,
		Lossless:    1 << 3,
	}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, h := range []string{"a", "b", "c"} {
		if _, err := m.Enqueue(h, 1500, 1, 0, 3, 0); err != nil {
			fmt.Println(err)
			return
		}
	}
	now := int64(0)
	for range 2 {
		d, _, _ := m.Dequeue(0, now)
		fmt.Printf("%s: start %d end %d at peer %d\n", d.Handle, d.TxStart, d.TxEnd, d.DeliverAt)
		now = d.TxEnd
	}
	_ = m.ReceivePFC(0, 1<<3, [8]uint16{3: 100}, now)
	at, _, _ := m.NextDeparture(0, now)
	fmt.Println("c may start at", at)
	// Output:
	// a: start 0 end 12000 at peer 13000
	// b: start 12000 end 24000 at peer 25000
	// c may start at 75200
}
