//go:build !race

package network

const raceDetector = false
