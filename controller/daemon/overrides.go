package daemon

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/internal/units"
)

// mergeOverride returns old with the fields set in o replaced.
func mergeOverride(old, o PortOverride) PortOverride {
	if o.QthBytes != nil {
		old.QthBytes = o.QthBytes
	}
	if o.TcheckNs != nil {
		old.TcheckNs = o.TcheckNs
	}
	if o.CNPGapNs != nil {
		old.CNPGapNs = o.CNPGapNs
	}
	if o.Mode != nil {
		old.Mode = o.Mode
	}
	if o.REDKminBytes != nil {
		old.REDKminBytes = o.REDKminBytes
	}
	if o.REDKmaxBytes != nil {
		old.REDKmaxBytes = o.REDKmaxBytes
	}
	if o.REDPmax != nil {
		old.REDPmax = o.REDPmax
	}
	return old
}

// applyOverrides returns a copy of cfg with the port overrides applied and
// checked against the ranges of docs/config.md. cfg is not modified.
func applyOverrides(cfg *config.Config, ov map[string]map[uint16]PortOverride) (*config.Config, error) {
	out := *cfg
	out.Switches = make([]config.Switch, len(cfg.Switches))
	for i, s := range cfg.Switches {
		s.Ports = append([]config.Port(nil), s.Ports...)
		out.Switches[i] = s
	}
	names := make([]string, 0, len(ov))
	for n := range ov {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		sw := out.Switch(name)
		if sw == nil {
			return nil, fmt.Errorf("%w %q", ErrUnknownSwitch, name)
		}
		for port, o := range ov[name] {
			p := sw.Port(port)
			if p == nil {
				return nil, fmt.Errorf("%w %d on switch %s", ErrUnknownPort, port, name)
			}
			if err := applyOverride(&p.Settings, o); err != nil {
				return nil, fmt.Errorf("%w: switch %s port %d: %v", ErrInvalid, name, port, err)
			}
		}
	}
	return &out, nil
}

func applyOverride(s *config.PortSettings, o PortOverride) error {
	if o.QthBytes != nil {
		if *o.QthBytes < 1 || *o.QthBytes > math.MaxUint32 {
			return fmt.Errorf("qth %s out of range 1B..%s", units.FormatSize(units.Size(*o.QthBytes)),
				units.FormatSize(math.MaxUint32))
		}
		s.Qth = units.Size(*o.QthBytes)
	}
	if o.TcheckNs != nil {
		d := time.Duration(*o.TcheckNs)
		if *o.TcheckNs < 1 || d > time.Second {
			return fmt.Errorf("tcheck %s out of range 1ns..1s", units.FormatDuration(d))
		}
		s.Tcheck = d
	}
	if o.CNPGapNs != nil {
		d := time.Duration(*o.CNPGapNs)
		if *o.CNPGapNs > uint64(time.Second) {
			return fmt.Errorf("cnp_gap %s out of range 0..1s", units.FormatDuration(d))
		}
		s.CNPGap = d
	}
	if o.Mode != nil {
		m := config.Mode(*o.Mode)
		if !m.Valid() {
			return fmt.Errorf("mode %q: want ecn, fastcnp or int", *o.Mode)
		}
		s.Mode = m
	}
	if o.REDKminBytes != nil {
		if *o.REDKminBytes > math.MaxUint32 {
			return fmt.Errorf("red.kmin %d B exceeds 2^32-1 B", *o.REDKminBytes)
		}
		s.RED.Kmin = units.Size(*o.REDKminBytes)
	}
	if o.REDKmaxBytes != nil {
		if *o.REDKmaxBytes < 1 || *o.REDKmaxBytes > math.MaxUint32 {
			return fmt.Errorf("red.kmax %d B out of range 1..2^32-1 B", *o.REDKmaxBytes)
		}
		s.RED.Kmax = units.Size(*o.REDKmaxBytes)
	}
	if s.RED.Kmin >= s.RED.Kmax {
		return fmt.Errorf("red.kmin %s must be below red.kmax %s", units.FormatSize(s.RED.Kmin),
			units.FormatSize(s.RED.Kmax))
	}
	if o.REDPmax != nil {
		if !(*o.REDPmax > 0 && *o.REDPmax <= 1) {
			return fmt.Errorf("red.pmax %v out of range (0, 1]", *o.REDPmax)
		}
		s.RED.Pmax = *o.REDPmax
	}
	return nil
}
