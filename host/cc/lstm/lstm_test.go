package lstm

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func near(got, want, tol float64) bool {
	return math.Abs(got-want) <= tol*math.Max(1, math.Max(math.Abs(got), math.Abs(want)))
}

// Predict on hand-made weights, computed from the LSTM formulas (seed 002
// formulas 4-8, PyTorch's gate order i, f, g, o).
func TestPredictHandComputed(t *testing.T) {
	sig := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	for _, tc := range []struct {
		name string
		set  func(p *[NumParams]float64)
		x    [Steps]float64
		want float64
	}{
		{"all zero: out = linear bias", func(p *[NumParams]float64) { p[OffBout] = 0.25 }, [Steps]float64{1, 2, 3}, 0.25},
		// Unit 0 only: W_ih(g) = 1, so i = f = o = 1/2 and g = tanh(x):
		// c1 = tanh(a)/2, c2 = c1/2 + tanh(b)/2, c3 = c2/2 + tanh(c)/2,
		// out = W_out(0) * h3 = 1 * tanh(c3)/2.
		{"cell state chain", func(p *[NumParams]float64) {
			p[OffWih+gateG] = 1
			p[OffWout] = 1
		}, [Steps]float64{0.5, -0.2, 0.1}, func() float64 {
			c1 := math.Tanh(0.5) / 2
			c2 := c1/2 + math.Tanh(-0.2)/2
			c3 := c2/2 + math.Tanh(0.1)/2
			return math.Tanh(c3) / 2
		}()},
		// Unit 0 with a recurrent weight into its own forget gate
		// (W_hh[f][0] = 2), biases on i (1) and o (-1), W_ih(g) = 3:
		// f_t = sigmoid(2*h_{t-1}), i = sigmoid(1), o = sigmoid(-1),
		// c_t = f_t*c_{t-1} + i*tanh(3*x_t), h_t = o*tanh(c_t); out = -2*h3 + 0.1.
		{"recurrence and biases", func(p *[NumParams]float64) {
			p[OffWih+gateG] = 3
			p[OffWhh+(gateF)*Hidden+0] = 2
			p[OffBih+gateI] = 0.5
			p[OffBhh+gateI] = 0.5
			p[OffBih+gateO] = -1
			p[OffWout] = -2
			p[OffBout] = 0.1
		}, [Steps]float64{0.2, 0.3, -0.1}, func() float64 {
			i, o := sig(1), sig(-1)
			var c, h float64
			for _, x := range []float64{0.2, 0.3, -0.1} {
				f := sig(2 * h)
				c = f*c + i*math.Tanh(3*x)
				h = o * math.Tanh(c)
			}
			return -2*h + 0.1
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m Model
			tc.set(&m.P)
			if got := m.Predict(&tc.x); !near(got, tc.want, 1e-15) {
				t.Errorf("Predict = %.17g, want %.17g", got, tc.want)
			}
			var cc cache
			if got := m.forward(&tc.x, &cc); !near(got, tc.want, 1e-15) {
				t.Errorf("forward = %.17g, want %.17g", got, tc.want)
			}
		})
	}
}

// The analytic gradient of backpropagation through time against central
// differences, for every one of the 1233 parameters, at random weights and
// inputs (loss = the output itself, and the L1 loss the training uses).
func TestGradientCheck(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := 0; trial < 3; trial++ {
		m := NewModel(uint64(trial + 1))
		for i := range m.P { // larger weights than the init, to exercise saturation
			m.P[i] *= 4
		}
		var x [Steps]float64
		for i := range x {
			x[i] = rng.NormFloat64() * 0.5
		}
		var cc cache
		var grad [NumParams]float64
		m.forward(&x, &cc)
		m.backward(&cc, 1, &grad)
		const h = 1e-6
		worst := 0.0
		for i := range m.P {
			orig := m.P[i]
			m.P[i] = orig + h
			up := m.Predict(&x)
			m.P[i] = orig - h
			down := m.Predict(&x)
			m.P[i] = orig
			num := (up - down) / (2 * h)
			diff := math.Abs(num - grad[i])
			d := diff / math.Max(1e-7, math.Abs(num)+math.Abs(grad[i]))
			if d > worst {
				worst = d
			}
			// Central differences with h = 1e-6 carry an absolute error of
			// about 1e-10 (rounding of the outputs, ~1e-16/h): a relative
			// 1e-5 or an absolute 1e-9 is agreement.
			if d > 1e-5 && diff > 1e-9 {
				t.Errorf("trial %d: parameter %d: analytic %.10g, numerical %.10g", trial, i, grad[i], num)
			}
		}
		t.Logf("trial %d: worst relative difference %.3g", trial, worst)
	}
}

// The smoother and the features, by hand (spec 03 steps 1-2, s = 0.2):
// R = 10, 20, 10, 15:
// S0 = 10, K0 = 0; S1 = 4 + 8 = 12, K1 = 8/12; S2 = 2 + 9.6 = 11.6,
// K2 = -1.6/11.6; S3 = 3 + 9.28 = 12.28, K3 = 2.72/12.28.
// Pairs start at t = 2: X = [K0, K1, K2], Y = L2 = (R3 - S2)/S2 = 3.4/11.6.
func TestFeatures(t *testing.T) {
	sm, err := NewSmoother(0.2)
	if err != nil {
		t.Fatal(err)
	}
	wantS := []float64{10, 12, 11.6, 12.28}
	wantK := []float64{0, 8.0 / 12, -1.6 / 11.6, 2.72 / 12.28}
	for i, r := range []float64{10, 20, 10, 15} {
		s, k := sm.Add(r)
		if !near(s, wantS[i], 1e-15) || !near(k, wantK[i], 1e-14) {
			t.Errorf("sample %d: S = %v, K = %v; want %v, %v", i, s, k, wantS[i], wantK[i])
		}
	}
	if in := sm.Input(); !near(in[0], wantK[1], 1e-14) || !near(in[2], wantK[3], 1e-14) {
		t.Errorf("input %v, want [K1 K2 K3]", *in)
	}
	ps, err := Pairs([]float64{10, 20, 10, 15}, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 {
		t.Fatalf("%d pairs, want 1", len(ps))
	}
	p := ps[0]
	if !near(p.X[0], 0, 0) || !near(p.X[1], 8.0/12, 1e-14) || !near(p.X[2], -1.6/11.6, 1e-14) || !near(p.Y, 3.4/11.6, 1e-14) {
		t.Errorf("pair %+v", p)
	}
	if p.Bin != 2 { // |K2| = 0.1379 is in [.08, .15)
		t.Errorf("bin %d, want 2", p.Bin)
	}
}

func TestBinOf(t *testing.T) {
	for _, tc := range []struct {
		k    float64
		want int
	}{{0, 0}, {0.0199, 0}, {-0.0199, 0}, {0.02, 1}, {-0.05, 1}, {0.08, 2}, {0.149, 2}, {0.15, 3}, {-3, 3}} {
		if got := BinOf(tc.k); got != tc.want {
			t.Errorf("BinOf(%v) = %d, want %d", tc.k, got, tc.want)
		}
	}
}

func TestPairsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    []float64
		s    float64
	}{
		{"zero RTT", []float64{1, 0, 1}, 0.2},
		{"negative RTT", []float64{1, -1}, 0.2},
		{"NaN RTT", []float64{1, math.NaN()}, 0.2},
		{"Inf RTT", []float64{math.Inf(1)}, 0.2},
		{"smoothing 0", []float64{1}, 0},
		{"smoothing > 1", []float64{1}, 1.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Pairs(tc.r, tc.s); !errors.Is(err, ErrModel) {
				t.Errorf("err = %v, want ErrModel", err)
			}
		})
	}
}

// The balanced dataset takes the same number of pairs from each non-empty
// bin (the smallest bin's count by default), deterministically by seed.
func TestBuildDataset(t *testing.T) {
	flows := SyntheticRTTs(3, 20, 300)
	d, err := BuildDataset(flows, DatasetOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	smallest := d.Available[0]
	total := 0
	for b := 0; b < NumBins; b++ {
		if d.Available[b] == 0 {
			t.Fatalf("bin %d empty in synthetic data: %v", b, d.Available)
		}
		smallest = min(smallest, d.Available[b])
		total += d.Available[b]
	}
	if total != 20*(300-Steps) {
		t.Errorf("%d pairs available, want %d", total, 20*(300-Steps))
	}
	var counts [NumBins]int
	for _, s := range d.Samples {
		counts[s.Bin]++
		if BinOf(s.X[Steps-1]) != s.Bin {
			t.Fatalf("sample %+v in the wrong bin", s)
		}
	}
	for b := range counts {
		if counts[b] != smallest || d.Used[b] != smallest {
			t.Errorf("bin %d: %d samples (used %d), want %d", b, counts[b], d.Used[b], smallest)
		}
	}
	again, _ := BuildDataset(flows, DatasetOptions{Seed: 1})
	other, _ := BuildDataset(flows, DatasetOptions{Seed: 2})
	same, differ := true, false
	for i := range d.Samples {
		same = same && d.Samples[i] == again.Samples[i]
		differ = differ || d.Samples[i] != other.Samples[i]
	}
	if !same || !differ {
		t.Errorf("same seed same order: %v; other seed other order: %v", same, differ)
	}
	capped, _ := BuildDataset(flows, DatasetOptions{Seed: 1, PerBin: 10})
	if len(capped.Samples) != 40 {
		t.Errorf("PerBin 10: %d samples", len(capped.Samples))
	}
	if _, err := BuildDataset([][]float64{{1, 2, 3}}, DatasetOptions{}); !errors.Is(err, ErrNoData) {
		t.Errorf("3 samples: err %v, want ErrNoData", err)
	}
}

// Training learns: the test MAPE after training is well below the initial
// model's, and the same seeds give bit-identical weights.
func TestTrainLearnsAndIsDeterministic(t *testing.T) {
	flows := SyntheticRTTs(11, 40, 400)
	d, err := BuildDataset(flows, DatasetOptions{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	train, test, err := Split(d.Samples, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	opts := TrainOptions{Seed: 9, Epochs: 8}
	m := NewModel(1)
	before := m.MAPE(test)
	stats, err := Train(m, train, test, opts)
	if err != nil {
		t.Fatal(err)
	}
	after := m.MAPE(test)
	t.Logf("test MAPE %.2f%% -> %.2f%%; epochs %+v", before, after, stats)
	if !(after < before/2) {
		t.Errorf("test MAPE %.3f%% after training, %.3f%% before: not learning", after, before)
	}
	m2 := NewModel(1)
	if _, err := Train(m2, train, test, opts); err != nil {
		t.Fatal(err)
	}
	if m2.P != m.P {
		t.Error("same seeds, different weights")
	}
	m3 := NewModel(1)
	opts.Seed = 10
	if _, err := Train(m3, train, test, opts); err != nil {
		t.Fatal(err)
	}
	if m3.P == m.P {
		t.Error("other seed, same weights")
	}
}

func TestTrainErrors(t *testing.T) {
	s := []Sample{{Y: 0.1}}
	for _, tc := range []struct {
		name        string
		train, test []Sample
		o           TrainOptions
		want        error
	}{
		{"no train", nil, s, TrainOptions{}, ErrNoData},
		{"no test", s, nil, TrainOptions{}, ErrNoData},
		{"negative lr", s, s, TrainOptions{LR: -1}, ErrModel},
		{"beta 1", s, s, TrainOptions{Beta1: 1}, ErrModel},
		{"negative epochs", s, s, TrainOptions{Epochs: -1}, ErrModel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Train(NewModel(1), tc.train, tc.test, tc.o); !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestFileRoundTrip(t *testing.T) {
	m := NewModel(42)
	prov := &Provenance{Command: "fastcnp-train --seed 1", Init: 42, Data: DataInfo{Source: "synthetic", Seed: 1}}
	b, err := Encode(m, 0.2, prov)
	if err != nil {
		t.Fatal(err)
	}
	m2, f, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if m2.P != m.P {
		t.Error("weights changed in the round trip")
	}
	if f.Smoothing != 0.2 || f.Provenance == nil || f.Provenance.Command != prov.Command {
		t.Errorf("file %+v", f)
	}
	b2, _ := Encode(m2, 0.2, f.Provenance)
	if string(b2) != string(b) {
		t.Error("encode(decode(b)) != b")
	}
	// Trained PID gains ride along.
	g := &PIDGains{Kp: -0.5, Ki: -0.02, Kd: 0.01, Initial: [3]float64{-0.2, -0.05, 0.1}, Updates: 9, TargetNs: 5000, Source: "test"}
	bg, err := EncodeWithGains(m, 0.2, prov, g)
	if err != nil {
		t.Fatal(err)
	}
	if _, fg, err := Decode(bg); err != nil || fg.PIDGains == nil || *fg.PIDGains != *g {
		t.Errorf("gains round trip: %v %+v", err, fg)
	}
	if _, err := EncodeWithGains(m, 0.2, prov, &PIDGains{Kp: math.NaN()}); !errors.Is(err, ErrModel) {
		t.Errorf("NaN gain: %v", err)
	}
	// The PyTorch layout: weight_hh_l0 row g is gate row g.
	if !strings.Contains(string(b), `"weight_hh_l0"`) || !strings.Contains(string(b), `"linear_bias"`) {
		t.Error("state_dict names missing")
	}
}

func TestDecodeErrors(t *testing.T) {
	good, err := Encode(NewModel(1), 0.2, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := string(good)
	for _, tc := range []struct {
		name string
		b    string
	}{
		{"empty", ""},
		{"not JSON", "{"},
		{"wrong format", strings.Replace(g, FileFormat, "other/1", 1)},
		{"wrong hidden", strings.Replace(g, `"hidden": 16,`, `"hidden": 8,`, 1)},
		{"bad smoothing", strings.Replace(g, `"smoothing": 0.2,`, `"smoothing": 0,`, 1)},
		{"unknown key", strings.Replace(g, `"hidden"`, `"extra": 1, "hidden"`, 1)},
		{"short bias", strings.Replace(g, `"linear_bias": [`, `"linear_bias": [1,`, 1)},
		{"trailing data", g + "{}"},
		{"too big", strings.Repeat(" ", MaxFileBytes+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := Decode([]byte(tc.b)); !errors.Is(err, ErrModel) {
				t.Errorf("err = %v, want ErrModel", err)
			}
		})
	}
	var m Model
	m.P[3] = math.NaN()
	if _, err := Encode(&m, 0.2, nil); !errors.Is(err, ErrModel) {
		t.Errorf("NaN weight: err %v", err)
	}
}

func TestPredictAllocs(t *testing.T) {
	m := NewModel(1)
	x := [Steps]float64{0.1, -0.2, 0.05}
	if n := testing.AllocsPerRun(100, func() { _ = m.Predict(&x) }); n != 0 {
		t.Errorf("Predict allocates %v times", n)
	}
}

// BenchmarkPredict is one prediction (three LSTM steps and the head).
func BenchmarkPredict(b *testing.B) {
	m := NewModel(1)
	x := [Steps]float64{0.1, -0.2, 0.05}
	b.ReportAllocs()
	var sink float64
	for b.Loop() {
		sink += m.Predict(&x)
	}
	_ = sink
}
