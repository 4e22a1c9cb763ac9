package lstm

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// DefaultSmoothing is s, the weight of the newest RTT in the smoothed RTT
// (spec 03 step 1; seed 002 formula 2: "usually 0.2").
const DefaultSmoothing = 0.2

// NumBins is the number of |K| bins the training set is balanced over.
const NumBins = 4

// BinEdges are the upper edges of the first three |K| bins: [0, .02),
// [.02, .08), [.08, .15), [.15, inf) (spec 03 step 3; seed 002 3.3.1).
var BinEdges = [NumBins - 1]float64{0.02, 0.08, 0.15}

// BinOf returns the bin of a feature value by its magnitude |k|.
func BinOf(k float64) int {
	a := math.Abs(k)
	for i, e := range BinEdges {
		if a < e {
			return i
		}
	}
	return NumBins - 1
}

// Smoother is the per-flow preprocessing of spec 03 steps 1-2: the smoothed
// RTT S_t and the feature K_t of each new sample R_t, and the last Steps
// features as the predictor's input. The zero value is not ready: use
// NewSmoother.
type Smoother struct {
	s  float64
	st float64        // S_t
	k  [Steps]float64 // K_{t-2}, K_{t-1}, K_t (zeros before the first samples)
	n  int64          // samples seen
}

// NewSmoother returns a smoother with weight s in (0, 1].
func NewSmoother(s float64) (Smoother, error) {
	if !(s > 0 && s <= 1) {
		return Smoother{}, fmt.Errorf("smoothing factor %v, want 0 < s <= 1: %w", s, ErrModel)
	}
	return Smoother{s: s}, nil
}

// Add takes the sample r (> 0) and returns S_t and K_t:
// S_0 = R_0, S_t = s*R_t + (1-s)*S_{t-1}; K_t = (R_t - S_t)/S_t.
func (m *Smoother) Add(r float64) (st, kt float64) {
	if m.n == 0 {
		m.st = r
	} else {
		m.st = m.s*r + (1-m.s)*m.st
	}
	m.n++
	kt = (r - m.st) / m.st
	copy(m.k[:], m.k[1:])
	m.k[Steps-1] = kt
	return m.st, kt
}

// Input returns the predictor's input [K_{t-2}, K_{t-1}, K_t]; features
// before the first sample are 0 (K_0 is always 0: S_0 = R_0).
func (m *Smoother) Input() *[Steps]float64 { return &m.k }

// S returns the smoothed RTT S_t (0 before the first sample).
func (m *Smoother) S() float64 { return m.st }

// N returns the number of samples taken.
func (m *Smoother) N() int64 { return m.n }

// Sample is one training pair: X = [K_{t-2}, K_{t-1}, K_t], Y = L_t =
// (R_{t+1} - S_t)/S_t, and the bin of |K_t|.
type Sample struct {
	X   [Steps]float64
	Y   float64
	Bin int
}

// Pairs returns the training pairs of one flow's RTT series (in sample
// order, each > 0 and finite): one per t with t >= Steps-1 and t+1 in the
// series.
func Pairs(rtts []float64, s float64) ([]Sample, error) {
	sm, err := NewSmoother(s)
	if err != nil {
		return nil, err
	}
	var out []Sample
	for t, r := range rtts {
		if !(r > 0) || math.IsInf(r, 0) {
			return nil, fmt.Errorf("RTT sample %d is %v, want finite and > 0: %w", t, r, ErrModel)
		}
		st, kt := sm.Add(r)
		if t+1 >= len(rtts) || t < Steps-1 {
			continue
		}
		next := rtts[t+1]
		out = append(out, Sample{X: *sm.Input(), Y: (next - st) / st, Bin: BinOf(kt)})
	}
	return out, nil
}

// DatasetOptions configure BuildDataset.
type DatasetOptions struct {
	// Smoothing is s (0 = DefaultSmoothing).
	Smoothing float64 `json:"smoothing"`
	// PerBin is the number of pairs taken from each |K| bin; 0 = the count of
	// the smallest non-empty bin, so that every non-empty bin gives the same
	// number. A bin with fewer pairs gives all it has.
	PerBin int `json:"per_bin"`
	// Seed chooses the pairs.
	Seed uint64 `json:"seed"`
}

// Dataset is a balanced set of training pairs.
type Dataset struct {
	Samples   []Sample
	Available [NumBins]int // pairs found per bin
	Used      [NumBins]int // pairs taken per bin
}

// ErrNoData reports traces with no training pair.
var ErrNoData = errors.New("lstm: no training pairs")

// BuildDataset makes the pairs of every flow's RTT series and samples them
// evenly from the |K| bins (spec 03 step 3), in a random order fixed by
// o.Seed.
func BuildDataset(flows [][]float64, o DatasetOptions) (Dataset, error) {
	s := o.Smoothing
	if s == 0 {
		s = DefaultSmoothing
	}
	if o.PerBin < 0 {
		return Dataset{}, fmt.Errorf("per-bin count %d is negative: %w", o.PerBin, ErrModel)
	}
	var bins [NumBins][]Sample
	var d Dataset
	for i, f := range flows {
		ps, err := Pairs(f, s)
		if err != nil {
			return d, fmt.Errorf("flow %d: %w", i, err)
		}
		for _, p := range ps {
			bins[p.Bin] = append(bins[p.Bin], p)
		}
	}
	per := o.PerBin
	for b := range bins {
		d.Available[b] = len(bins[b])
		if n := len(bins[b]); o.PerBin == 0 && n > 0 && (per == 0 || n < per) {
			per = n // the smallest non-empty bin
		}
	}
	if per == 0 {
		return d, ErrNoData
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x6c73746d))
	for b := range bins {
		src := bins[b]
		rng.Shuffle(len(src), func(i, j int) { src[i], src[j] = src[j], src[i] })
		n := min(per, len(src))
		d.Used[b] = n
		d.Samples = append(d.Samples, src[:n]...)
	}
	rng.Shuffle(len(d.Samples), func(i, j int) { d.Samples[i], d.Samples[j] = d.Samples[j], d.Samples[i] })
	return d, nil
}

// Split cuts samples into a training and a test part, the test part being
// the last frac of them (samples are already in random order). Both share
// samples' backing array.
func Split(samples []Sample, frac float64) (train, test []Sample, err error) {
	if !(frac > 0 && frac < 1) {
		return nil, nil, fmt.Errorf("test fraction %v, want 0 < f < 1: %w", frac, ErrModel)
	}
	n := int(math.Round(float64(len(samples)) * frac))
	if n == 0 || n == len(samples) {
		return nil, nil, fmt.Errorf("%d samples cannot be split %v/%v: %w", len(samples), 1-frac, frac, ErrNoData)
	}
	cut := len(samples) - n
	return slices.Clip(samples[:cut]), samples[cut:], nil
}

// SyntheticRTTs returns made-up RTT series (seconds) for exercising the
// training code when no simulator traces are at hand: per flow, a queue that
// grows by a random step per sample until it passes a random threshold and
// is then cut by a random factor (the saw-tooth of a rate controller at a
// bottleneck), on a 4 us base RTT, with 2% Gaussian noise. They are not a
// model of any network; weights trained on them are labelled "synthetic".
func SyntheticRTTs(seed uint64, flows, samples int) [][]float64 {
	rng := rand.New(rand.NewPCG(seed, 0x73796e74))
	const base = 4e-6
	out := make([][]float64, flows)
	for f := range out {
		q := rng.Float64() * 2e-6
		step := (0.05 + 0.25*rng.Float64()) * 1e-6
		top := (2 + 10*rng.Float64()) * 1e-6
		s := make([]float64, samples)
		for t := range s {
			s[t] = (base + q) * (1 + 0.02*rng.NormFloat64())
			if q > top {
				q *= 0.3 + 0.4*rng.Float64()
				top = (2 + 10*rng.Float64()) * 1e-6
			} else {
				q += step * (0.5 + rng.Float64())
			}
		}
		out[f] = s
	}
	return out
}
