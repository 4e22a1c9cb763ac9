package cc

import (
	"fmt"
	"slices"
	"strings"
)

// factories maps each algorithm name to its constructor. Adding an algorithm
// is one entry here plus its parameters in
// Config (and its parameter sets in ParamSetNames and Config.UseParamSet).
var factories = map[string]func(Config) (Algorithm, error){
	"dcqcn":              func(c Config) (Algorithm, error) { return NewDCQCN(c) },
	"dcqcn-fastcnp":      func(c Config) (Algorithm, error) { return NewDCQCNFastCNP(c) },
	"timely":             func(c Config) (Algorithm, error) { return NewTIMELY(c) },
	"dctcp":              func(c Config) (Algorithm, error) { return NewDCTCP(c) },
	"hpcc":               func(c Config) (Algorithm, error) { return NewHPCC(c) },
	"pid":                func(c Config) (Algorithm, error) { return NewLSTMPID("pid", c) },
	"lstm-pid":           func(c Config) (Algorithm, error) { return NewLSTMPID("lstm-pid", c) },
	"lstm-pid-rttch":     func(c Config) (Algorithm, error) { return NewLSTMPID("lstm-pid-rttch", c) },
	"lstm-pid-rttch-win": func(c Config) (Algorithm, error) { return NewLSTMPID("lstm-pid-rttch-win", c) },
}

// NeedsINT reports whether the algorithm called name uses in-band telemetry
// (Ack.Hops): its runtime must then ask switches for INT records (the INT
// header on data packets) and pass the echoed records to OnAck.
func NeedsINT(name string) bool { return name == "hpcc" }

// AckPerPacket reports whether the algorithm called name takes its signal
// from ACKs (RTT samples, ECN echoes, INT records) with parameter sets made
// for a receiver that acknowledges every packet (the HPCC simulator's, seed
// 002's): a runtime should then ask for an ACK per packet, or at low rates
// the signal comes once in many round trips (16 packets of 4 KB at 1 Mb/s
// are half a second). DCQCN's signal is the CNP, not the ACK.
func AckPerPacket(name string) bool {
	_, ok := factories[name]
	return ok && name != "dcqcn" && name != "dcqcn-fastcnp"
}

// Names returns the algorithm names New accepts, sorted.
func Names() []string {
	names := make([]string, 0, len(factories))
	for n := range factories {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// New returns a new per-flow instance of the algorithm called name,
// configured by cfg. An unknown name gives an error wrapping
// ErrUnknownAlgorithm that lists the known names; a bad cfg gives one
// wrapping ErrBadParams.
func New(name string, cfg Config) (Algorithm, error) {
	f, ok := factories[name]
	if !ok {
		return nil, fmt.Errorf("congestion control %q (known: %s): %w", name, strings.Join(Names(), ", "), ErrUnknownAlgorithm)
	}
	a, err := f(cfg)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// wrapf prefixes err with context, keeping it matchable with errors.Is.
func wrapf(err error, format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), err)
}
