package hpcc

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"
)

func TestParseCDFFiles(t *testing.T) {
	tests := []struct {
		file   string
		points int
		mean   float64 // piecewise-linear mean, by hand from the file (see below)
	}{
		// WebSearch: sum of (x_i + x_{i-1})/2 * dPct / 100.
		{"WebSearch_distribution.txt", 12, (5000*15 + 15000*5 + 25000*10 + 40000*10 + 65000*13 + 140000*7 +
			600000*10 + 1500000*10 + 3500000*10 + 7500000*7 + 20000000*3) / 100.0},
		{"FbHdp_distribution.txt", 20, 0}, // mean checked against Quantile below
	}
	for _, tc := range tests {
		f, err := os.Open("../data/hpcc/" + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		c, err := ParseCDF(tc.file, f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Size) != tc.points {
			t.Errorf("%s: %d points, want %d", tc.file, len(c.Size), tc.points)
		}
		if tc.mean != 0 && math.Abs(c.Mean()-tc.mean) > 1e-6*tc.mean {
			t.Errorf("%s: mean %v, want %v", tc.file, c.Mean(), tc.mean)
		}
		// The mean is the integral of the quantile function.
		const steps = 200000
		q := 0.0
		for i := 0; i < steps; i++ {
			q += c.Quantile((float64(i) + 0.5) * 100 / steps)
		}
		if got := q / steps; math.Abs(got-c.Mean()) > 1e-4*c.Mean() {
			t.Errorf("%s: integral of Quantile %v, Mean %v", tc.file, got, c.Mean())
		}
		for _, pct := range []float64{0, 3, 15, 50, 99.9, 100} {
			if got := 100 * c.Fraction(c.Quantile(pct)); math.Abs(got-pct) > 1e-9 && pct > 0 {
				t.Errorf("%s: Fraction(Quantile(%v)) = %v", tc.file, pct, got)
			}
		}
	}
}

func TestParseCDFErrors(t *testing.T) {
	for _, tc := range []struct {
		in   string
		line int
		msg  string
	}{
		{"", 0, "at least two lines"},
		{"0 0\n100 50\n", 0, "the last at 100 percent"},
		{"10 5\n100 100\n", 1, "first percent is 5"},
		{"0 0\n100 50 1\n", 2, "got 3 fields"},
		{"0 0\n100 x\n", 2, "want two numbers"},
		{"0 0\n100 50\n100 100\n", 3, "both must grow"},
		{"0 0\n100 50\n200 50\n", 3, "both must grow"},
		{"0 0\n100 150\n", 2, "percent in [0, 100]"},
		{"0 0\n1e20 100\n", 2, "want a size"},
	} {
		_, err := ParseCDF("cdf", strings.NewReader(tc.in))
		var pe *Error
		if err == nil || !errors.As(err, &pe) || pe.Line != tc.line || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%q: error %v, want line %d with %q", tc.in, err, tc.line, tc.msg)
		}
	}
}
