// Package lstm is the RTT predictor of seed 002's LSTM+PID congestion control
// (spec 03 steps 1-3): the smoothing and feature rules that turn a flow's RTT
// samples into inputs and labels, a one-layer LSTM with a linear head that
// predicts the next RTT's feature from the last three, its training (forward
// pass, backpropagation through time, Adam, L1 loss) and its weights file.
//
// The package is pure: no I/O, no goroutines, no wall clock; randomness comes
// from a seed the caller passes. Inference (Model.Predict) does not allocate.
// See docs/host-cc.md "LSTM+PID".
package lstm

import (
	"errors"
	"math"
)

// Shape of the network (spec 03: "input the 3 last K values, hidden size 16,
// then a linear layer").
const (
	// Steps is the length of the input sequence: K_{t-2}, K_{t-1}, K_t, one
	// scalar per LSTM step.
	Steps = 3
	// Hidden is the LSTM's hidden (and cell) state size.
	Hidden = 16
	// Gates is the number of gate rows: input, forget, cell, output (the
	// order of PyTorch's nn.LSTM), Hidden each.
	Gates = 4 * Hidden
)

// Offsets of each parameter block in Model.P (row-major). The blocks are
// PyTorch's nn.LSTM(1, 16) and nn.Linear(16, 1) state, in this order.
const (
	OffWih    = 0                     // weight_ih_l0 [Gates][1]
	OffWhh    = OffWih + Gates        // weight_hh_l0 [Gates][Hidden]
	OffBih    = OffWhh + Gates*Hidden // bias_ih_l0 [Gates]
	OffBhh    = OffBih + Gates        // bias_hh_l0 [Gates]
	OffWout   = OffBhh + Gates        // linear weight [1][Hidden]
	OffBout   = OffWout + Hidden      // linear bias [1]
	NumParams = OffBout + 1           // 1233
)

// Gate row blocks within a Gates-long vector.
const (
	gateI = 0 * Hidden
	gateF = 1 * Hidden
	gateG = 2 * Hidden
	gateO = 3 * Hidden
)

// ErrModel reports a bad weights file or a model with non-finite weights.
var ErrModel = errors.New("lstm: bad model")

// Model holds the predictor's parameters, flat (see the Off* constants).
// A Model is read-only during inference and may be shared by any number of
// flows; training changes it in place.
type Model struct {
	P [NumParams]float64
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// tanh is tanh(x) = 2*sigmoid(2x) - 1: one math.Exp, about twice as fast as
// math.Tanh, within a few 1e-16 of it (absolute). Training and inference
// both use it, so a model behaves the same in both.
func tanh(x float64) float64 { return 2/(1+math.Exp(-2*x)) - 1 }

// Predict returns the network's output for the input sequence x (oldest
// first): out ~ L_t = (R_{t+1} - S_t)/S_t. It does not allocate.
func (m *Model) Predict(x *[Steps]float64) float64 {
	var h, c [Hidden]float64
	p := &m.P
	for t := 0; t < Steps; t++ {
		var z [Gates]float64
		xt := x[t]
		for g := 0; g < Gates; g++ {
			s := p[OffWih+g]*xt + p[OffBih+g] + p[OffBhh+g]
			if t > 0 { // h_0 = 0
				row := p[OffWhh+g*Hidden : OffWhh+(g+1)*Hidden : OffWhh+(g+1)*Hidden]
				for k, hk := range h {
					s += row[k] * hk
				}
			}
			z[g] = s
		}
		for k := 0; k < Hidden; k++ {
			i := sigmoid(z[gateI+k])
			f := sigmoid(z[gateF+k])
			gg := tanh(z[gateG+k])
			o := sigmoid(z[gateO+k])
			c[k] = f*c[k] + i*gg
			h[k] = o * tanh(c[k])
		}
	}
	out := p[OffBout]
	for k, hk := range h {
		out += p[OffWout+k] * hk
	}
	return out
}

// Validate reports a parameter that is NaN or infinite.
func (m *Model) Validate() error {
	for i, v := range m.P {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return errorf("parameter %d is %v", i, v)
		}
	}
	return nil
}

// cache is what the forward pass keeps for backpropagation through time.
type cache struct {
	x   [Steps]float64
	a   [Steps][Gates]float64 // gate activations: sigmoid(i, f, o), tanh(g)
	c   [Steps + 1][Hidden]float64
	h   [Steps + 1][Hidden]float64
	tc  [Steps][Hidden]float64 // tanh(c[t+1])
	out float64
}

// forward runs the network on x, keeping every intermediate value in cc. Its
// output equals Predict's.
func (m *Model) forward(x *[Steps]float64, cc *cache) float64 {
	p := &m.P
	cc.x = *x
	cc.c[0], cc.h[0] = [Hidden]float64{}, [Hidden]float64{}
	for t := 0; t < Steps; t++ {
		a := &cc.a[t]
		for g := 0; g < Gates; g++ {
			s := p[OffWih+g]*x[t] + p[OffBih+g] + p[OffBhh+g]
			for k := 0; k < Hidden; k++ {
				s += p[OffWhh+g*Hidden+k] * cc.h[t][k]
			}
			a[g] = s
		}
		for k := 0; k < Hidden; k++ {
			a[gateI+k] = sigmoid(a[gateI+k])
			a[gateF+k] = sigmoid(a[gateF+k])
			a[gateG+k] = tanh(a[gateG+k])
			a[gateO+k] = sigmoid(a[gateO+k])
			cc.c[t+1][k] = a[gateF+k]*cc.c[t][k] + a[gateI+k]*a[gateG+k]
			cc.tc[t][k] = tanh(cc.c[t+1][k])
			cc.h[t+1][k] = a[gateO+k] * cc.tc[t][k]
		}
	}
	out := p[OffBout]
	for k := 0; k < Hidden; k++ {
		out += p[OffWout+k] * cc.h[Steps][k]
	}
	cc.out = out
	return out
}

// backward adds to grad the gradient of a loss whose derivative with respect
// to the output is dout, for the forward pass kept in cc (backpropagation
// through time over the Steps steps).
func (m *Model) backward(cc *cache, dout float64, grad *[NumParams]float64) {
	p := &m.P
	var dh, dc [Hidden]float64
	for k := 0; k < Hidden; k++ {
		grad[OffWout+k] += dout * cc.h[Steps][k]
		dh[k] = dout * p[OffWout+k]
	}
	grad[OffBout] += dout
	for t := Steps - 1; t >= 0; t-- {
		a := &cc.a[t]
		var dz [Gates]float64
		for k := 0; k < Hidden; k++ {
			i, f, g, o := a[gateI+k], a[gateF+k], a[gateG+k], a[gateO+k]
			tc := cc.tc[t][k]
			dck := dc[k] + dh[k]*o*(1-tc*tc)
			dz[gateO+k] = dh[k] * tc * o * (1 - o)
			dz[gateI+k] = dck * g * i * (1 - i)
			dz[gateG+k] = dck * i * (1 - g*g)
			dz[gateF+k] = dck * cc.c[t][k] * f * (1 - f)
			dc[k] = dck * f // to step t-1
		}
		var dhPrev [Hidden]float64
		for g := 0; g < Gates; g++ {
			d := dz[g]
			grad[OffWih+g] += d * cc.x[t]
			grad[OffBih+g] += d
			grad[OffBhh+g] += d
			row := OffWhh + g*Hidden
			for k := 0; k < Hidden; k++ {
				grad[row+k] += d * cc.h[t][k]
				dhPrev[k] += d * p[row+k]
			}
		}
		dh = dhPrev
	}
}
