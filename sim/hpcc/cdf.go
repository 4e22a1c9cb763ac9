package hpcc

import (
	"io"
	"math"
	"strconv"
)

// CDF is a flow-size distribution file of the HPCC tools (traffic_gen's
// input): sizes in bytes and the percentage of flows at or below each,
// linear in between (traffic_gen's CustomRand).
type CDF struct {
	Size []float64 // strictly increasing
	Pct  []float64 // strictly increasing, from 0 to 100
}

// ParseCDF reads a CDF file: one "size percent" pair per line, the first
// percent 0 and the last 100, both columns strictly increasing (the rules of
// traffic_gen's testCdf).
func ParseCDF(name string, r io.Reader) (*CDF, error) {
	lr := newLineReader(name, r)
	c := &CDF{}
	err := lr.each(func(f []string) error {
		if len(f) != 2 {
			return lr.errf("want \"size percent\", got %d fields", len(f))
		}
		x, err1 := strconv.ParseFloat(f[0], 64)
		y, err2 := strconv.ParseFloat(f[1], 64)
		if err1 != nil || err2 != nil || math.IsInf(x, 0) || math.IsNaN(x) || math.IsNaN(y) {
			return lr.errf("%q %q: want two numbers", f[0], f[1])
		}
		if x < 0 || x > MaxFlowSize || y < 0 || y > 100 {
			return lr.errf("size %v, percent %v: want a size in [0, %d] and a percent in [0, 100]", x, y, int64(MaxFlowSize))
		}
		if n := len(c.Size); n == 0 && y != 0 {
			return lr.errf("the first percent is %v, want 0", y)
		} else if n > 0 && (x <= c.Size[n-1] || y <= c.Pct[n-1]) {
			return lr.errf("size %v, percent %v: both must grow from the line before (%v, %v)", x, y, c.Size[n-1], c.Pct[n-1])
		}
		c.Size = append(c.Size, x)
		c.Pct = append(c.Pct, y)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(c.Size) < 2 || c.Pct[len(c.Pct)-1] != 100 {
		return nil, lr.errf("want at least two lines, the last at 100 percent")
	}
	return c, nil
}

// Mean is the distribution's mean size (getAvg: the piecewise-linear mean).
func (c *CDF) Mean() float64 {
	s := 0.0
	for i := 1; i < len(c.Size); i++ {
		s += (c.Size[i] + c.Size[i-1]) / 2 * (c.Pct[i] - c.Pct[i-1])
	}
	return s / 100
}

// SecondMoment is E[size^2] of the piecewise-linear distribution (uniform
// within each segment); tests derive their tolerances from it.
func (c *CDF) SecondMoment() float64 {
	s := 0.0
	for i := 1; i < len(c.Size); i++ {
		a, b := c.Size[i-1], c.Size[i]
		s += (a*a + a*b + b*b) / 3 * (c.Pct[i] - c.Pct[i-1])
	}
	return s / 100
}

// Quantile returns the size at percentile pct in [0, 100]
// (getValueFromPercentile).
func (c *CDF) Quantile(pct float64) float64 {
	for i := 1; i < len(c.Size); i++ {
		if pct <= c.Pct[i] {
			x0, y0, x1, y1 := c.Size[i-1], c.Pct[i-1], c.Size[i], c.Pct[i]
			return x0 + (x1-x0)/(y1-y0)*(pct-y0)
		}
	}
	return c.Size[len(c.Size)-1]
}

// Fraction returns the fraction of flows of size at most x, in [0, 1].
func (c *CDF) Fraction(x float64) float64 {
	if x <= c.Size[0] {
		return 0
	}
	for i := 1; i < len(c.Size); i++ {
		if x <= c.Size[i] {
			x0, y0, x1, y1 := c.Size[i-1], c.Pct[i-1], c.Size[i], c.Pct[i]
			return (y0 + (y1-y0)/(x1-x0)*(x-x0)) / 100
		}
	}
	return 1
}
