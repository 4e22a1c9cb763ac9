//go:build race

package main

// raceEnabled: the test binary runs with the race detector (much slower
// simulations).
const raceEnabled = true
