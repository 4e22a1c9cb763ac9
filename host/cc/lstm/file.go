package lstm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
)

// FileFormat names the weights file format (the value of its "format" key).
const FileFormat = "fastcnp-lstm-rtt/1"

// MaxFileBytes bounds a weights file Decode accepts (the model is 1233
// numbers; its provenance a few kilobytes).
const MaxFileBytes = 1 << 20

// File is the JSON weights file: the parameters under the names and shapes of
// PyTorch's state_dict for nn.LSTM(1, 16) and nn.Linear(16, 1) (gate order
// input, forget, cell, output), so that weights can move between the two,
// plus the smoothing factor the features were made with and how the weights
// were made.
type File struct {
	Format    string      `json:"format"`
	Hidden    int         `json:"hidden"`
	Steps     int         `json:"steps"`
	Smoothing float64     `json:"smoothing"`
	WeightIH  [][]float64 `json:"weight_ih_l0"`
	WeightHH  [][]float64 `json:"weight_hh_l0"`
	BiasIH    []float64   `json:"bias_ih_l0"`
	BiasHH    []float64   `json:"bias_hh_l0"`
	LinearW   [][]float64 `json:"linear_weight"`
	LinearB   []float64   `json:"linear_bias"`
	// Provenance says how the weights were made; nil for hand-made ones.
	Provenance *Provenance `json:"provenance,omitempty"`
	// PIDGains are PID gains trained online along with the traces (nil: none).
	PIDGains *PIDGains `json:"pid_gains,omitempty"`
}

// PIDGains are PID gains of the LSTM+PID controller trained online, and how.
type PIDGains struct {
	Kp       float64    `json:"kp"`
	Ki       float64    `json:"ki"`
	Kd       float64    `json:"kd"`
	Initial  [3]float64 `json:"initial"`   // the gains training started from
	Updates  int64      `json:"updates"`   // gradient steps made
	TargetNs int64      `json:"target_ns"` // the RTT target they were trained for
	Source   string     `json:"source"`    // the runs that trained them
}

// Provenance records how a weights file was made, so that the same command
// on the same data makes the same file.
type Provenance struct {
	// Command is the command line that made the file.
	Command string `json:"command"`
	// Data describes the RTT traces and the dataset built from them.
	Data DataInfo `json:"data"`
	// Init is the seed of the initial weights (NewModel).
	Init uint64 `json:"init_seed"`
	// Train are the training options, with defaults filled in.
	Train TrainOptions `json:"train"`
	// Epochs are the per-epoch statistics.
	Epochs []EpochStats `json:"epochs"`
	// TestMAPE is the MAPE (percent) on the whole held-out test set after
	// training.
	TestMAPE float64 `json:"test_mape"`
}

// DataInfo describes a training set.
type DataInfo struct {
	// Source names where the RTT traces came from.
	Source string `json:"source"`
	// Seed is the seed the traces were made with.
	Seed uint64 `json:"seed"`
	// Flows and RTTSamples count the traces' flows and samples.
	Flows      int `json:"flows"`
	RTTSamples int `json:"rtt_samples"`
	// Dataset is how the balanced set was drawn (seed, per-bin count).
	Dataset DatasetOptions `json:"dataset"`
	// Available and Used count pairs per |K| bin.
	Available [NumBins]int `json:"available_per_bin"`
	Used      [NumBins]int `json:"used_per_bin"`
	// TestFraction is the share of the pairs held out for testing.
	TestFraction float64 `json:"test_fraction"`
	TrainPairs   int     `json:"train_pairs"`
	TestPairs    int     `json:"test_pairs"`
}

// Encode returns the weights file of m with smoothing factor s and
// provenance prov (may be nil), as indented JSON ending in a newline.
func Encode(m *Model, s float64, prov *Provenance) ([]byte, error) {
	return EncodeWithGains(m, s, prov, nil)
}

// EncodeWithGains is Encode with trained PID gains g (nil: none).
func EncodeWithGains(m *Model, s float64, prov *Provenance, g *PIDGains) ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if g != nil {
		for _, v := range []float64{g.Kp, g.Ki, g.Kd} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, errorf("PID gain %v", v)
			}
		}
	}
	f := File{Format: FileFormat, Hidden: Hidden, Steps: Steps, Smoothing: s, Provenance: prov, PIDGains: g}
	p := &m.P
	f.WeightIH = make([][]float64, Gates)
	f.WeightHH = make([][]float64, Gates)
	for g := 0; g < Gates; g++ {
		f.WeightIH[g] = []float64{p[OffWih+g]}
		f.WeightHH[g] = append([]float64(nil), p[OffWhh+g*Hidden:OffWhh+(g+1)*Hidden]...)
	}
	f.BiasIH = append([]float64(nil), p[OffBih:OffBih+Gates]...)
	f.BiasHH = append([]float64(nil), p[OffBhh:OffBhh+Gates]...)
	f.LinearW = [][]float64{append([]float64(nil), p[OffWout:OffWout+Hidden]...)}
	f.LinearB = []float64{p[OffBout]}
	return f.marshal()
}

// marshal writes f as JSON with one key per line and one matrix row per
// line (diffable, and short enough to read).
func (f *File) marshal() ([]byte, error) {
	var buf bytes.Buffer
	field := func(last bool, key string, v any) error {
		fmt.Fprintf(&buf, " %q: ", key)
		if rows, ok := v.([][]float64); ok && len(rows) > 1 {
			buf.WriteString("[\n")
			for i, r := range rows {
				b, err := json.Marshal(r)
				if err != nil {
					return err
				}
				buf.WriteString("  ")
				buf.Write(b)
				if i < len(rows)-1 {
					buf.WriteByte(',')
				}
				buf.WriteByte('\n')
			}
			buf.WriteString(" ]")
		} else {
			b, err := json.Marshal(v)
			if err != nil {
				return err
			}
			buf.Write(b)
		}
		if !last {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
		return nil
	}
	buf.WriteString("{\n")
	keys := []struct {
		k string
		v any
	}{
		{"format", f.Format}, {"hidden", f.Hidden}, {"steps", f.Steps}, {"smoothing", f.Smoothing},
		{"weight_ih_l0", f.WeightIH}, {"weight_hh_l0", f.WeightHH}, {"bias_ih_l0", f.BiasIH},
		{"bias_hh_l0", f.BiasHH}, {"linear_weight", f.LinearW}, {"linear_bias", f.LinearB},
	}
	if f.Provenance != nil {
		keys = append(keys, struct {
			k string
			v any
		}{"provenance", f.Provenance})
	}
	if f.PIDGains != nil {
		keys = append(keys, struct {
			k string
			v any
		}{"pid_gains", f.PIDGains})
	}
	for i, kv := range keys {
		if err := field(i == len(keys)-1, kv.k, kv.v); err != nil {
			return nil, fmt.Errorf("encode weights: %w", err)
		}
	}
	buf.WriteString("}\n")
	return buf.Bytes(), nil
}

// Decode parses a weights file and returns its model and the file (for the
// smoothing factor and the provenance). Every shape is checked; unknown keys,
// a wrong format name and non-finite numbers are errors wrapping ErrModel.
func Decode(b []byte) (*Model, *File, error) {
	if len(b) > MaxFileBytes {
		return nil, nil, fmt.Errorf("weights file of %d bytes, at most %d: %w", len(b), MaxFileBytes, ErrModel)
	}
	var f File
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, nil, fmt.Errorf("weights file: %v: %w", err, ErrModel)
	}
	if dec.More() {
		return nil, nil, fmt.Errorf("weights file: data after the JSON object: %w", ErrModel)
	}
	switch {
	case f.Format != FileFormat:
		return nil, nil, fmt.Errorf("weights file format %q, want %q: %w", f.Format, FileFormat, ErrModel)
	case f.Hidden != Hidden || f.Steps != Steps:
		return nil, nil, fmt.Errorf("weights file for hidden %d, steps %d; this build has %d, %d: %w", f.Hidden, f.Steps, Hidden, Steps, ErrModel)
	case !(f.Smoothing > 0 && f.Smoothing <= 1):
		return nil, nil, fmt.Errorf("weights file smoothing %v, want 0 < s <= 1: %w", f.Smoothing, ErrModel)
	}
	m := &Model{}
	p := m.P[:]
	matrix := func(name string, rows [][]float64, nr, nc, off int) error {
		if len(rows) != nr {
			return fmt.Errorf("%s has %d rows, want %d: %w", name, len(rows), nr, ErrModel)
		}
		for r, row := range rows {
			if len(row) != nc {
				return fmt.Errorf("%s row %d has %d columns, want %d: %w", name, r, len(row), nc, ErrModel)
			}
			copy(p[off+r*nc:], row)
		}
		return nil
	}
	vector := func(name string, v []float64, n, off int) error {
		if len(v) != n {
			return fmt.Errorf("%s has %d values, want %d: %w", name, len(v), n, ErrModel)
		}
		copy(p[off:], v)
		return nil
	}
	for _, err := range []error{
		matrix("weight_ih_l0", f.WeightIH, Gates, 1, OffWih),
		matrix("weight_hh_l0", f.WeightHH, Gates, Hidden, OffWhh),
		vector("bias_ih_l0", f.BiasIH, Gates, OffBih),
		vector("bias_hh_l0", f.BiasHH, Gates, OffBhh),
		matrix("linear_weight", f.LinearW, 1, Hidden, OffWout),
		vector("linear_bias", f.LinearB, 1, OffBout),
	} {
		if err != nil {
			return nil, nil, fmt.Errorf("weights file: %w", err)
		}
	}
	if err := m.Validate(); err != nil {
		return nil, nil, err
	}
	if g := f.PIDGains; g != nil {
		for _, v := range []float64{g.Kp, g.Ki, g.Kd} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, nil, errorf("weights file: PID gain %v", v)
			}
		}
	}
	return m, &f, nil
}

// errorf returns an error wrapping ErrModel.
func errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrModel)
}
