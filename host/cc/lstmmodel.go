package cc

import (
	_ "embed"
	"sync"

	"github.com/fastcnp/fastcnp/host/cc/lstm"
)

// defaultLSTMFile is the committed trained RTT predictor: its provenance
// (command, data, seeds, MAPE per epoch) is in the file; docs/host-cc.md
// "LSTM+PID" says how to make it again.
//
//go:embed models/lstm-rtt.json
var defaultLSTMFile []byte

var defaultLSTM struct {
	once sync.Once
	m    *lstm.Model
	f    *lstm.File
	err  error
}

// DefaultLSTMModel returns the committed trained predictor (shared, read
// only) and its weights file, decoded once.
func DefaultLSTMModel() (*lstm.Model, *lstm.File, error) {
	d := &defaultLSTM
	d.once.Do(func() { d.m, d.f, d.err = lstm.Decode(defaultLSTMFile) })
	return d.m, d.f, d.err
}

// DefaultLSTMFile returns the bytes of the committed weights file.
func DefaultLSTMFile() []byte { return defaultLSTMFile }
