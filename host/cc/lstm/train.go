package lstm

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// NewModel returns a model initialised as PyTorch initialises nn.LSTM(1, 16)
// and nn.Linear(16, 1): every parameter uniform in [-1/sqrt(16), 1/sqrt(16)],
// drawn from a generator seeded with seed (same seed, same model).
func NewModel(seed uint64) *Model {
	rng := rand.New(rand.NewPCG(seed, 0x696e6974))
	m := &Model{}
	bound := 1 / math.Sqrt(Hidden)
	for i := range m.P {
		m.P[i] = (2*rng.Float64() - 1) * bound
	}
	return m
}

// TrainOptions configure Train. Zero fields take the defaults in brackets,
// seed 002's set-up (3.4.2): 19 epochs, each of 800 random training pairs and
// 200 random test pairs, L1 loss, learning rate 0.001 (Adam with PyTorch's
// default betas and epsilon).
type TrainOptions struct {
	Seed         uint64  `json:"seed"`          // pair order and epoch draws
	Epochs       int     `json:"epochs"`        // [19]
	EpochSamples int     `json:"epoch_samples"` // training pairs per epoch [800]
	TestSamples  int     `json:"test_samples"`  // test pairs drawn per epoch for its MAPE [200]
	Batch        int     `json:"batch"`         // pairs per Adam step [1]
	LR           float64 `json:"lr"`            // [0.001]
	Beta1        float64 `json:"beta1"`         // [0.9]
	Beta2        float64 `json:"beta2"`         // [0.999]
	Eps          float64 `json:"eps"`           // [1e-8]
}

// WithDefaults returns o with its zero fields set to the defaults, or an
// error for a bad value.
func (o TrainOptions) WithDefaults() (TrainOptions, error) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Epochs, 19)
	def(&o.EpochSamples, 800)
	def(&o.TestSamples, 200)
	def(&o.Batch, 1)
	deff := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	deff(&o.LR, 0.001)
	deff(&o.Beta1, 0.9)
	deff(&o.Beta2, 0.999)
	deff(&o.Eps, 1e-8)
	switch {
	case o.Epochs < 0 || o.EpochSamples < 0 || o.TestSamples < 0 || o.Batch < 0:
		return o, fmt.Errorf("negative count in %+v: %w", o, ErrModel)
	case !(o.LR > 0) || !(o.Beta1 >= 0 && o.Beta1 < 1) || !(o.Beta2 >= 0 && o.Beta2 < 1) || !(o.Eps > 0):
		return o, fmt.Errorf("learning rate %v, betas %v/%v, eps %v: want lr > 0, 0 <= beta < 1, eps > 0: %w",
			o.LR, o.Beta1, o.Beta2, o.Eps, ErrModel)
	}
	return o, nil
}

// EpochStats is what one training epoch measured.
type EpochStats struct {
	Epoch     int     `json:"epoch"`      // 1-based
	TrainLoss float64 `json:"train_loss"` // mean L1 loss of the epoch's pairs, before each step
	TrainMAPE float64 `json:"train_mape"` // MAPE (percent) of the epoch's pairs, before each step
	TestMAPE  float64 `json:"test_mape"`  // MAPE (percent) of TestSamples test pairs after the epoch
}

// APE returns the absolute percentage error of output out against label y
// as RTTs (seed 002 formula 13): |RTTpred - RTTtrue|/RTTtrue * 100 with
// RTTpred = (1+out)*S and RTTtrue = (1+y)*S, i.e. 100*|out - y|/(1 + y).
func APE(out, y float64) float64 { return 100 * math.Abs(out-y) / (1 + y) }

// MAPE returns the mean APE of m over samples (0 for none).
func (m *Model) MAPE(samples []Sample) float64 {
	if len(samples) == 0 {
		return 0
	}
	var sum float64
	for i := range samples {
		sum += APE(m.Predict(&samples[i].X), samples[i].Y)
	}
	return sum / float64(len(samples))
}

// adam is the optimiser state.
type adam struct {
	m, v [NumParams]float64
	t    int
}

// step applies one Adam update with gradient g to p.
func (a *adam) step(p, g *[NumParams]float64, o *TrainOptions) {
	a.t++
	c1 := 1 - math.Pow(o.Beta1, float64(a.t))
	c2 := 1 - math.Pow(o.Beta2, float64(a.t))
	for i := range p {
		a.m[i] = o.Beta1*a.m[i] + (1-o.Beta1)*g[i]
		a.v[i] = o.Beta2*a.v[i] + (1-o.Beta2)*g[i]*g[i]
		p[i] -= o.LR * (a.m[i] / c1) / (math.Sqrt(a.v[i]/c2) + o.Eps)
	}
}

// sign is d|x|/dx, with 0 at 0 (as PyTorch's L1 loss).
func sign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

// Train trains m in place on train with the L1 loss and Adam, and measures
// each epoch's MAPE on test (spec 03 step 3). Every epoch draws EpochSamples
// pairs from train without replacement (all of them if train is smaller) and
// TestSamples pairs from test. The run is deterministic for o.Seed.
func Train(m *Model, train, test []Sample, o TrainOptions) ([]EpochStats, error) {
	o, err := o.WithDefaults()
	if err != nil {
		return nil, err
	}
	if len(train) == 0 || len(test) == 0 {
		return nil, fmt.Errorf("%d training and %d test pairs: %w", len(train), len(test), ErrNoData)
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x7472616e))
	var (
		opt   adam
		grad  [NumParams]float64
		cc    cache
		stats = make([]EpochStats, 0, o.Epochs)
		idx   = make([]int, len(train))
		tidx  = make([]int, len(test))
	)
	for i := range idx {
		idx[i] = i
	}
	for i := range tidx {
		tidx[i] = i
	}
	for e := 1; e <= o.Epochs; e++ {
		rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		n := min(o.EpochSamples, len(idx))
		var loss, ape float64
		for b := 0; b < n; b += o.Batch {
			end := min(b+o.Batch, n)
			grad = [NumParams]float64{}
			for _, k := range idx[b:end] {
				s := &train[k]
				out := m.forward(&s.X, &cc)
				loss += math.Abs(out - s.Y)
				ape += APE(out, s.Y)
				m.backward(&cc, sign(out-s.Y)/float64(end-b), &grad)
			}
			opt.step(&m.P, &grad, &o)
		}
		rng.Shuffle(len(tidx), func(i, j int) { tidx[i], tidx[j] = tidx[j], tidx[i] })
		tn := min(o.TestSamples, len(tidx))
		var tape float64
		for _, k := range tidx[:tn] {
			tape += APE(m.Predict(&test[k].X), test[k].Y)
		}
		stats = append(stats, EpochStats{Epoch: e, TrainLoss: loss / float64(n), TrainMAPE: ape / float64(n), TestMAPE: tape / float64(tn)})
	}
	if err := m.Validate(); err != nil {
		return stats, fmt.Errorf("after training: %w", err)
	}
	return stats, nil
}
