//go:build race

package network

// raceDetector is true under -race: the long simulations skip there (the model
// runs on one goroutine; `make test` runs them again without -race).
const raceDetector = true
