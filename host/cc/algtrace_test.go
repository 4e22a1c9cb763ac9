package cc

import (
	"testing"
	"time"
)

var (
	_ Algorithm = (*TIMELY)(nil)
	_ Algorithm = (*DCTCP)(nil)
	_ Algorithm = (*HPCC)(nil)
)

// probe reads one named quantity of an algorithm for a trace check; exact
// says whether it must match exactly (counters, windows) or to a relative
// 1e-12 (float state). ok is false for an unknown key.
type probe func(key string) (got float64, exact, ok bool)

// runAlgTrace applies the steps to a in order and checks every expectation
// after each step. Keys known for every algorithm: Rate (approx), Window and
// Next (exact); the rest come from p.
func runAlgTrace(t *testing.T, a Algorithm, p probe, steps []step) {
	t.Helper()
	for i, s := range steps {
		if err := apply(a, s.ev); err != nil {
			t.Fatalf("step %d (%+v): %v", i, s.ev, err)
		}
		for k, want := range s.want {
			var got float64
			exact, ok := true, true
			switch k {
			case "Rate":
				got, exact = a.Rate(), false
			case "Window":
				got = float64(a.Window())
			case "Next":
				got = float64(a.NextTimer())
			default:
				got, exact, ok = p(k)
			}
			if !ok {
				t.Fatalf("step %d: unknown key %q", i, k)
			}
			if (exact && got != want) || (!exact && !approx(got, want)) {
				t.Errorf("step %d (%+v): %s = %v, want %v", i, s.ev, k, got, want)
			}
		}
	}
}

// ackAt is an ACK of n bytes at time at with an RTT sample (0 = none).
func ackAt(at time.Duration, n int64, rtt time.Duration) Ack {
	return Ack{Now: at, Bytes: n, RTT: rtt}
}

// eceAt is an ACK of n bytes with the ECN echo set.
func eceAt(at time.Duration, n int64) Ack { return Ack{Now: at, Bytes: n, ECE: true} }

// intAck is an ACK of n bytes carrying the INT records hops.
func intAck(at time.Duration, n int64, hops ...INTHop) Ack {
	return Ack{Now: at, Bytes: n, Hops: hops}
}

// hop100G is an INT record of a 100 Gb/s egress port.
func hop100G(ts time.Duration, tx uint64, qlen int64) INTHop {
	return INTHop{TS: ts, TxBytes: tx, QLen: qlen, LinkRate: 100 * gbps}
}

// allConfig returns a 100 Gb/s config with a parameter set for every
// algorithm: DCQCN nvidia-cx, TIMELY hpcc-sim, DCTCP hpcc-sim, HPCC hpcc-sim,
// LSTM+PID thesis.
func allConfig(t testing.TB) Config {
	t.Helper()
	c := Config{LineRate: 100 * gbps}
	for algo, set := range map[string]string{"dcqcn": "nvidia-cx", "timely": "hpcc-sim", "dctcp": "hpcc-sim", "hpcc": "hpcc-sim", "pid": "thesis"} {
		if err := c.UseParamSet(algo, set); err != nil {
			t.Fatal(err)
		}
	}
	return c
}
