package cc_test

import (
	"fmt"
	"time"

	"github.com/fastcnp/fastcnp/host/cc"
)

// A fastcnp sender at 100 Gb/s with the NVIDIA parameters and spec 01's
// window rule: a switch CNP cuts the rate and caps the window; the first rate
// increase restores Winit. (The default rule, aimd, does not cut and grows
// the window back with the ACKs.)
func Example() {
	p, err := cc.DCQCNPreset("nvidia-cx")
	if err != nil {
		panic(err)
	}
	alg, err := cc.New("dcqcn-fastcnp", cc.Config{LineRate: 100e9, DCQCN: p, WindowRule: cc.WindowRuleSpec01})
	if err != nil {
		panic(err)
	}
	fmt.Printf("start: %.0f Gb/s, window %d B\n", alg.Rate()/1e9, alg.Window())

	cnp := cc.CNP{Now: 10 * time.Microsecond, Ext: cc.CNPExt{WindowValid: true, BySwitch: true, Window: 25_000}}
	if err := alg.OnCNP(cnp); err != nil {
		panic(err)
	}
	fmt.Printf("after CNP: %.0f Gb/s, window %d B, timer at %v\n", alg.Rate()/1e9, alg.Window(), alg.NextTimer())

	// First increase (F = 1: additive): RT = min(100G + 5M, 100G) = 100G,
	// RC = (100G + 50G)/2 = 75G; the window goes back to Winit.
	if err := alg.OnTimer(alg.NextTimer()); err != nil {
		panic(err)
	}
	fmt.Printf("after first increase: %.3f Gb/s, window %d B\n", alg.Rate()/1e9, alg.Window())
	// Output:
	// start: 100 Gb/s, window 100000 B
	// after CNP: 50 Gb/s, window 25000 B, timer at 310µs
	// after first increase: 75.000 Gb/s, window 100000 B
}
