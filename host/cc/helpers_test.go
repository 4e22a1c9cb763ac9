package cc

import (
	"errors"
	"math"
	"testing"
	"time"
)

const (
	us   = time.Microsecond
	gbps = 1e9
	mbps = 1e6
)

var _ Algorithm = (*DCQCN)(nil)

// tick is a trace step that calls OnTimer.
type tick time.Duration

// step is one event of a trace and the state expected right after it.
// want keys: RC, RT, Alpha (relative tolerance 1e-12), T, BC, Window, Next,
// Cuts, Suppressed, Hyper, Additive, FastRecovery (exact).
type step struct {
	ev   any // Send, Ack, CNP or tick
	want map[string]float64
}

// customParams is an easy-to-compute parameter set for hand-made traces:
// g = 1/16, alpha0 = 1, alphaPeriod 10us, no rate-reduce period,
// rpgTimeReset 100us, no byte counter, F = 5, R_AI 40 Mb/s, R_HAI 200 Mb/s,
// minRate 1 Mb/s.
func customParams() DCQCNParams {
	return DCQCNParams{
		Set: "custom", G: 1.0 / 16, InitialAlpha: 1,
		AlphaPeriod: 10 * us, RateReducePeriod: 0,
		RPGTimeReset: 100 * us, RPGByteReset: 0, F: 5,
		AI: 40 * mbps, HAI: 200 * mbps, MinRate: 1 * mbps,
	}
}

// cfgWith returns a 100 Gb/s config using p.
func cfgWith(p DCQCNParams) Config {
	return Config{LineRate: 100 * gbps, DCQCN: p}
}

func mustDCQCN(t testing.TB, fastcnp bool, cfg Config) *DCQCN {
	t.Helper()
	var d *DCQCN
	var err error
	if fastcnp {
		d, err = NewDCQCNFastCNP(cfg)
	} else {
		d, err = NewDCQCN(cfg)
	}
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	return d
}

func apply(a Algorithm, ev any) error {
	switch e := ev.(type) {
	case Send:
		return a.OnSend(e)
	case Ack:
		return a.OnAck(e)
	case CNP:
		return a.OnCNP(e)
	case tick:
		return a.OnTimer(time.Duration(e))
	}
	return errors.New("unknown event type")
}

func approx(got, want float64) bool {
	if got == want {
		return true
	}
	return math.Abs(got-want) <= 1e-12*math.Max(math.Abs(got), math.Abs(want))
}

// runTrace applies the steps in order and checks every expectation.
func runTrace(t *testing.T, d *DCQCN, steps []step) {
	t.Helper()
	for i, s := range steps {
		if err := apply(d, s.ev); err != nil {
			t.Fatalf("step %d (%+v): %v", i, s.ev, err)
		}
		st := d.State()
		for k, want := range s.want {
			var got float64
			exact := true
			switch k {
			case "RC":
				got, exact = d.Rate(), false
			case "RT":
				got, exact = st.RT, false
			case "Alpha":
				got, exact = st.Alpha, false
			case "T":
				got = float64(st.T)
			case "BC":
				got = float64(st.BC)
			case "Window":
				got = float64(d.Window())
			case "Next":
				got = float64(d.NextTimer())
			case "Cuts":
				got = float64(st.Stats.Cuts)
			case "Suppressed":
				got = float64(st.Stats.Suppressed)
			case "Hyper":
				got = float64(st.Stats.Hyper)
			case "Additive":
				got = float64(st.Stats.Additive)
			case "FastRecovery":
				got = float64(st.Stats.FastRecovery)
			case "CNPs":
				got = float64(st.Stats.CNPs)
			case "Growth":
				got = float64(st.Stats.WindowGrowth)
			case "Restore":
				got = float64(st.Stats.WindowRestore)
			case "Capped":
				got = 0
				if st.WindowCapped {
					got = 1
				}
			default:
				t.Fatalf("step %d: unknown key %q", i, k)
			}
			if (exact && got != want) || (!exact && !approx(got, want)) {
				t.Errorf("step %d (%+v): %s = %v, want %v", i, s.ev, k, got, want)
			}
		}
	}
}

func cnpAt(at time.Duration) CNP { return CNP{Now: at} }

func winCNP(at time.Duration, win int64) CNP {
	return CNP{Now: at, Ext: CNPExt{WindowValid: true, BySwitch: true, SwitchID: 7, Port: 3, Window: win, QueueBytes: 200_000}}
}

func sendAt(at time.Duration, n int64) Send { return Send{Now: at, Bytes: n} }
