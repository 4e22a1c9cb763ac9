package wire

// Timing facts of the link layer that every runtime shares: the switch's traffic
// manager paces frames and honours PAUSE with them, the host agent's pacer and PAUSE
// gate use the same numbers, so sender and switch agree on what a pause lasts.
const (
	// PreambleIFGBytes is preamble + SFD (8) + minimum inter-frame gap (12): what a
	// frame costs on the wire beyond its own bytes.
	PreambleIFGBytes = 20
	// PFCFrameBytes is the size of a PFC / PAUSE MAC control frame (padded, with FCS).
	PFCFrameBytes = 64
	// PauseQuantumBits is the length of one pause quantum in bit times (802.3x / 802.1Qbb).
	PauseQuantumBits = 512
	// NumPriorities is the number of 802.1p priorities, and of PFC classes.
	NumPriorities = 8
)

// PauseNs returns how long a pause of quanta lasts on a link of rateBps:
// quanta*512 bit times, rounded up to whole ns. It is 0 for a rate <= 0.
func PauseNs(quanta uint16, rateBps int64) int64 {
	if rateBps <= 0 {
		return 0
	}
	num := int64(quanta) * PauseQuantumBits * 1e9
	return (num + rateBps - 1) / rateBps
}
