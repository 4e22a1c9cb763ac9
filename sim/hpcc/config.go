package hpcc

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Config is a parameter file: the keys of the HPCC simulator's config
// (scratch/third.cc, mix/config_doc.txt), with the same names, meanings and
// units, plus a few fastcnp keys (marked "fastcnp"). Defaults are the
// simulator's own (its global initialisers), so a file that sets a key to
// its default means the same with or without the line.
type Config struct {
	// CCMode is CC_MODE: 1 DCQCN, 3 HPCC, 7 TIMELY, 8 DCTCP, 10 HPCC-PINT.
	CCMode int
	// Mode is FASTCNP_MODE (fastcnp): the fastcnp-sim mode by name
	// ("dcqcn", "fastcnp", "fastcnp-no-pfc-state", "timely", ...). Empty:
	// taken from CCMode, see ModeName.
	Mode string
	// ParamSet is PARAM_SET (fastcnp): the host/cc parameter set by name
	// (spec 02's table, e.g. "hpcc-sim"); empty means the mode's default.
	ParamSet string
	// EnablePFC is ENABLE_PFC (fastcnp): switches send PAUSE frames. The
	// HPCC simulator has PFC always on.
	EnablePFC bool

	EnableQCN              bool    // ENABLE_QCN: switches mark ECN
	UseDynamicPFCThreshold bool    // USE_DYNAMIC_PFC_THRESHOLD
	PayloadBytes           int     // PACKET_PAYLOAD_SIZE: payload bytes per packet
	PauseTime              float64 // PAUSE_TIME: PFC pause time, in the simulator's quanta
	BufferMB               int     // BUFFER_SIZE: shared buffer per switch, MiB
	// KMinKB, KMaxKB and PMax are KMIN_MAP, KMAX_MAP and PMAX_MAP: RED/ECN
	// thresholds per link rate (bits/s): kmin and kmax in KB of 1000 bytes.
	KMinKB map[uint64]uint32
	KMaxKB map[uint64]uint32
	PMax   map[uint64]float64

	TopologyFile, FlowFile, TraceFile, TraceOutputFile string    // TOPOLOGY_FILE ...
	FCTOutputFile, PFCOutputFile, QlenMonFile          string    // FCT_OUTPUT_FILE, PFC_OUTPUT_FILE, QLEN_MON_FILE
	StopTimeS                                          float64   // SIMULATOR_STOP_TIME, seconds
	QlenMonStartNs, QlenMonEndNs                       int64     // QLEN_MON_START, QLEN_MON_END
	ErrorRatePerLink                                   float64   // ERROR_RATE_PER_LINK
	EnableTrace                                        bool      // ENABLE_TRACE
	LinkDown                                           [3]uint64 // LINK_DOWN: time (us after 2 s), node a, node b; 0 0 0 = none

	// DCQCN (and shared rate-control) keys.
	AlphaResumeInterval  float64 // ALPHA_RESUME_INTERVAL, us
	RateDecreaseInterval float64 // RATE_DECREASE_INTERVAL, us
	RPTimer              float64 // RP_TIMER, us
	ClampTargetRate      bool    // CLAMP_TARGET_RATE
	EWMAGain             float64 // EWMA_GAIN (DCQCN and DCTCP g)
	FastRecoveryTimes    int     // FAST_RECOVERY_TIMES
	RateAIBps            uint64  // RATE_AI
	RateHAIBps           uint64  // RATE_HAI
	MinRateBps           uint64  // MIN_RATE
	DCTCPRateAIBps       uint64  // DCTCP_RATE_AI
	L2ChunkSize          int     // L2_CHUNK_SIZE
	L2AckInterval        int     // L2_ACK_INTERVAL
	L2BackToZero         bool    // L2_BACK_TO_ZERO

	// Window and HPCC keys.
	HasWin         bool    // HAS_WIN
	GlobalT        bool    // GLOBAL_T
	VarWin         bool    // VAR_WIN
	FastReact      bool    // FAST_REACT
	UTarget        float64 // U_TARGET (eta)
	MIThresh       int     // MI_THRESH
	IntMulti       int     // INT_MULTI
	MultiRate      bool    // MULTI_RATE
	SampleFeedback bool    // SAMPLE_FEEDBACK
	PintLogBase    float64 // PINT_LOG_BASE
	PintProb       float64 // PINT_PROB
	RateBound      bool    // RATE_BOUND
	AckHighPrio    bool    // ACK_HIGH_PRIO

	// Where each key was set ("file:line"), for errors found after parsing.
	where map[string]string
}

// DefaultConfig returns the HPCC simulator's defaults (third.cc's global
// initialisers; RATE_AI and RATE_HAI have none there and are 0 here). Its
// EWMA_GAIN initialiser is the integer expression 1/16, which is 0.
func DefaultConfig() *Config {
	return &Config{
		CCMode: 1, EnablePFC: true, EnableQCN: true, UseDynamicPFCThreshold: true,
		PayloadBytes: 1000, PauseTime: 5, BufferMB: 16,
		KMinKB: map[uint64]uint32{}, KMaxKB: map[uint64]uint32{}, PMax: map[uint64]float64{},
		FCTOutputFile: "fct.txt", PFCOutputFile: "pfc.txt", StopTimeS: 3.01,
		QlenMonStartNs: 2_000_000_000, QlenMonEndNs: 2_100_000_000, EnableTrace: true,
		AlphaResumeInterval: 55, RateDecreaseInterval: 4, FastRecoveryTimes: 5,
		MinRateBps: 100_000_000, DCTCPRateAIBps: 1_000_000_000,
		HasWin: true, GlobalT: true, FastReact: true, UTarget: 0.95, MIThresh: 5, IntMulti: 1,
		MultiRate: true, PintLogBase: 1.05, PintProb: 1, RateBound: true,
	}
}

// ModeName is the run's mode: FASTCNP_MODE if set, else the name of CC_MODE
// ("dcqcn", "hpcc", "timely", "dctcp", "hpcc-pint"; "" for other numbers).
func (c *Config) ModeName() string {
	if c.Mode != "" {
		return c.Mode
	}
	return map[int]string{1: "dcqcn", 3: "hpcc", 7: "timely", 8: "dctcp", 10: "hpcc-pint"}[c.CCMode]
}

// Where returns "file:line" of the line that set key, or "" if the key was
// not in the file, so that checks made after parsing can point at the line.
func (c *Config) Where(key string) string { return c.where[key] }

// ECN returns the RED/ECN thresholds for a link rate in bytes; ok is false
// if any of the three maps lacks the rate (the simulator aborts then).
func (c *Config) ECN(rateBps uint64) (kminBytes, kmaxBytes uint64, pmax float64, ok bool) {
	kmin, ok1 := c.KMinKB[rateBps]
	kmax, ok2 := c.KMaxKB[rateBps]
	p, ok3 := c.PMax[rateBps]
	return uint64(kmin) * 1000, uint64(kmax) * 1000, p, ok1 && ok2 && ok3
}

// BufferBytes is BUFFER_SIZE in bytes.
func (c *Config) BufferBytes() uint64 { return uint64(c.BufferMB) * 1024 * 1024 }

// key is one config key: how to read its arguments and write them back.
type key struct {
	name  string
	parse func(c *Config, args []string) error
	write func(c *Config) string
}

func oneArg(args []string) (string, error) {
	if len(args) != 1 {
		return "", fmt.Errorf("want one value, got %d", len(args))
	}
	return args[0], nil
}

func boolKey(name string, p func(*Config) *bool) key {
	return key{name, func(c *Config, a []string) error {
		s, err := oneArg(a)
		if err != nil {
			return err
		}
		v, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return fmt.Errorf("%q: want 0 or 1", s)
		}
		*p(c) = v != 0 // the simulator reads an integer and tests it for non-zero
		return nil
	}, func(c *Config) string { return map[bool]string{false: "0", true: "1"}[*p(c)] }}
}

func intKey(name string, lo, hi int, p func(*Config) *int) key {
	return key{name, func(c *Config, a []string) error {
		s, err := oneArg(a)
		if err != nil {
			return err
		}
		v, err := atoiRange(s, lo, hi)
		if err != nil {
			return err
		}
		*p(c) = v
		return nil
	}, func(c *Config) string { return strconv.Itoa(*p(c)) }}
}

func floatKey(name string, lo, hi float64, p func(*Config) *float64) key {
	return key{name, func(c *Config, a []string) error {
		s, err := oneArg(a)
		if err != nil {
			return err
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || !(v >= lo && v <= hi) {
			return fmt.Errorf("%q: want a number in [%g, %g]", s, lo, hi)
		}
		*p(c) = v
		return nil
	}, func(c *Config) string { return strconv.FormatFloat(*p(c), 'g', -1, 64) }}
}

func stringKey(name string, p func(*Config) *string) key {
	return key{name, func(c *Config, a []string) error {
		s, err := oneArg(a)
		if err != nil {
			return err
		}
		*p(c) = s
		return nil
	}, func(c *Config) string { return *p(c) }}
}

func rateKey(name string, p func(*Config) *uint64) key {
	return key{name, func(c *Config, a []string) error {
		s, err := oneArg(a)
		if err != nil {
			return err
		}
		v, err := ParseRate(s)
		if err != nil {
			return err
		}
		*p(c) = v
		return nil
	}, func(c *Config) string {
		if *p(c) == 0 {
			return "" // unset (RATE_AI and RATE_HAI have no default)
		}
		return FormatRate(*p(c))
	}}
}

func nsKey(name string, p func(*Config) *int64) key {
	return key{name, func(c *Config, a []string) error {
		s, err := oneArg(a)
		if err != nil {
			return err
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 || v > maxTimeNs {
			return fmt.Errorf("%q: want a time in ns", s)
		}
		*p(c) = v
		return nil
	}, func(c *Config) string { return strconv.FormatInt(*p(c), 10) }}
}

// mapKey reads "n rate1 v1 ... rate_n v_n".
func mapKey[V uint32 | float64](name string, parseV func(string) (V, error), formatV func(V) string, p func(*Config) map[uint64]V) key {
	return key{name, func(c *Config, a []string) error {
		if len(a) == 0 {
			return fmt.Errorf("want \"n rate1 value1 ... rate_n value_n\"")
		}
		n, err := atoiRange(a[0], 0, 1<<10)
		if err != nil {
			return fmt.Errorf("entry count: %v", err)
		}
		if len(a) != 1+2*n {
			return fmt.Errorf("declares %d entries, want %d values after the count, got %d", n, 2*n, len(a)-1)
		}
		m := p(c)
		clear(m)
		for i := 0; i < n; i++ {
			rate, err := strconv.ParseUint(a[1+2*i], 10, 64)
			if err != nil || rate == 0 {
				return fmt.Errorf("rate %q: want bits/s as a positive integer", a[1+2*i])
			}
			v, err := parseV(a[2+2*i])
			if err != nil {
				return fmt.Errorf("value for rate %d: %v", rate, err)
			}
			if _, dup := m[rate]; dup {
				return fmt.Errorf("rate %d listed twice", rate)
			}
			m[rate] = v
		}
		return nil
	}, func(c *Config) string {
		m := p(c)
		rates := make([]uint64, 0, len(m))
		for r := range m {
			rates = append(rates, r)
		}
		slices.Sort(rates)
		parts := []string{strconv.Itoa(len(rates))}
		for _, r := range rates {
			parts = append(parts, strconv.FormatUint(r, 10), formatV(m[r]))
		}
		return strings.Join(parts, " ")
	}}
}

func parseKB(s string) (uint32, error) {
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil || v > math.MaxUint32/1000 {
		return 0, fmt.Errorf("%q: want KB as a whole number", s)
	}
	return uint32(v), nil
}

func parseProb(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v >= 0 && v <= 1) {
		return 0, fmt.Errorf("%q: want a probability in [0, 1]", s)
	}
	return v, nil
}

// keys lists every key in the order of the simulator's config template
// (run.py), fastcnp keys first.
var keys = []key{
	stringKey("FASTCNP_MODE", func(c *Config) *string { return &c.Mode }),
	stringKey("PARAM_SET", func(c *Config) *string { return &c.ParamSet }),
	boolKey("ENABLE_PFC", func(c *Config) *bool { return &c.EnablePFC }),
	boolKey("ENABLE_QCN", func(c *Config) *bool { return &c.EnableQCN }),
	boolKey("USE_DYNAMIC_PFC_THRESHOLD", func(c *Config) *bool { return &c.UseDynamicPFCThreshold }),
	intKey("PACKET_PAYLOAD_SIZE", 1, 1<<16, func(c *Config) *int { return &c.PayloadBytes }),
	floatKey("PAUSE_TIME", 0, 65535, func(c *Config) *float64 { return &c.PauseTime }),
	stringKey("TOPOLOGY_FILE", func(c *Config) *string { return &c.TopologyFile }),
	stringKey("FLOW_FILE", func(c *Config) *string { return &c.FlowFile }),
	stringKey("TRACE_FILE", func(c *Config) *string { return &c.TraceFile }),
	stringKey("TRACE_OUTPUT_FILE", func(c *Config) *string { return &c.TraceOutputFile }),
	stringKey("FCT_OUTPUT_FILE", func(c *Config) *string { return &c.FCTOutputFile }),
	stringKey("PFC_OUTPUT_FILE", func(c *Config) *string { return &c.PFCOutputFile }),
	floatKey("SIMULATOR_STOP_TIME", 0, 1e6, func(c *Config) *float64 { return &c.StopTimeS }),
	intKey("CC_MODE", 0, 1<<16, func(c *Config) *int { return &c.CCMode }),
	floatKey("ALPHA_RESUME_INTERVAL", 0, 1e9, func(c *Config) *float64 { return &c.AlphaResumeInterval }),
	floatKey("RATE_DECREASE_INTERVAL", 0, 1e9, func(c *Config) *float64 { return &c.RateDecreaseInterval }),
	boolKey("CLAMP_TARGET_RATE", func(c *Config) *bool { return &c.ClampTargetRate }),
	floatKey("RP_TIMER", 0, 1e9, func(c *Config) *float64 { return &c.RPTimer }),
	floatKey("EWMA_GAIN", 0, 1, func(c *Config) *float64 { return &c.EWMAGain }),
	intKey("FAST_RECOVERY_TIMES", 0, 1<<16, func(c *Config) *int { return &c.FastRecoveryTimes }),
	rateKey("RATE_AI", func(c *Config) *uint64 { return &c.RateAIBps }),
	rateKey("RATE_HAI", func(c *Config) *uint64 { return &c.RateHAIBps }),
	rateKey("MIN_RATE", func(c *Config) *uint64 { return &c.MinRateBps }),
	rateKey("DCTCP_RATE_AI", func(c *Config) *uint64 { return &c.DCTCPRateAIBps }),
	floatKey("ERROR_RATE_PER_LINK", 0, 1, func(c *Config) *float64 { return &c.ErrorRatePerLink }),
	intKey("L2_CHUNK_SIZE", 0, 1<<30, func(c *Config) *int { return &c.L2ChunkSize }),
	intKey("L2_ACK_INTERVAL", 0, 1<<30, func(c *Config) *int { return &c.L2AckInterval }),
	boolKey("L2_BACK_TO_ZERO", func(c *Config) *bool { return &c.L2BackToZero }),
	boolKey("HAS_WIN", func(c *Config) *bool { return &c.HasWin }),
	boolKey("GLOBAL_T", func(c *Config) *bool { return &c.GlobalT }),
	boolKey("VAR_WIN", func(c *Config) *bool { return &c.VarWin }),
	boolKey("FAST_REACT", func(c *Config) *bool { return &c.FastReact }),
	floatKey("U_TARGET", 0, 1, func(c *Config) *float64 { return &c.UTarget }),
	intKey("MI_THRESH", 0, 1<<16, func(c *Config) *int { return &c.MIThresh }),
	intKey("INT_MULTI", 1, 1<<16, func(c *Config) *int { return &c.IntMulti }),
	boolKey("MULTI_RATE", func(c *Config) *bool { return &c.MultiRate }),
	boolKey("SAMPLE_FEEDBACK", func(c *Config) *bool { return &c.SampleFeedback }),
	floatKey("PINT_LOG_BASE", 1, 1e3, func(c *Config) *float64 { return &c.PintLogBase }),
	floatKey("PINT_PROB", 0, 1, func(c *Config) *float64 { return &c.PintProb }),
	boolKey("RATE_BOUND", func(c *Config) *bool { return &c.RateBound }),
	boolKey("ACK_HIGH_PRIO", func(c *Config) *bool { return &c.AckHighPrio }),
	{"LINK_DOWN", func(c *Config, a []string) error {
		if len(a) != 3 {
			return fmt.Errorf("want \"time_us node_a node_b\" (0 0 0 for none)")
		}
		for i, s := range a {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return fmt.Errorf("%q: want a non-negative integer", s)
			}
			c.LinkDown[i] = v
		}
		return nil
	}, func(c *Config) string { return fmt.Sprintf("%d %d %d", c.LinkDown[0], c.LinkDown[1], c.LinkDown[2]) }},
	boolKey("ENABLE_TRACE", func(c *Config) *bool { return &c.EnableTrace }),
	mapKey("KMAX_MAP", parseKB, func(v uint32) string { return strconv.FormatUint(uint64(v), 10) }, func(c *Config) map[uint64]uint32 { return c.KMaxKB }),
	mapKey("KMIN_MAP", parseKB, func(v uint32) string { return strconv.FormatUint(uint64(v), 10) }, func(c *Config) map[uint64]uint32 { return c.KMinKB }),
	mapKey("PMAX_MAP", parseProb, func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }, func(c *Config) map[uint64]float64 { return c.PMax }),
	intKey("BUFFER_SIZE", 1, 1<<16, func(c *Config) *int { return &c.BufferMB }),
	stringKey("QLEN_MON_FILE", func(c *Config) *string { return &c.QlenMonFile }),
	nsKey("QLEN_MON_START", func(c *Config) *int64 { return &c.QlenMonStartNs }),
	nsKey("QLEN_MON_END", func(c *Config) *int64 { return &c.QlenMonEndNs }),
}

var keyIndex = func() map[string]int {
	m := make(map[string]int, len(keys))
	for i, k := range keys {
		m[k.name] = i
	}
	return m
}()

// ConfigKeys returns the names of every key ParseConfig accepts.
func ConfigKeys() []string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.name
	}
	sort.Strings(names)
	return names
}

// ParseConfig reads a parameter file: one "KEY value..." per line, the
// simulator's keys and fastcnp's (ConfigKeys), keys absent taking the
// simulator's defaults (DefaultConfig). Lines starting with '#' are comments
// (a fastcnp extension; the simulator's files have none). Unknown keys and
// keys set twice are errors: the simulator would skip a misspelt key
// silently and keep the last of two.
func ParseConfig(name string, r io.Reader) (*Config, error) {
	c := DefaultConfig()
	c.where = map[string]string{}
	lines := map[string]int{}
	lr := newLineReader(name, r)
	err := lr.each(func(f []string) error {
		if strings.HasPrefix(f[0], "#") {
			return nil
		}
		i, known := keyIndex[f[0]]
		if !known {
			return lr.errf("unknown key %q (keys: %s)", f[0], strings.Join(ConfigKeys(), " "))
		}
		if prev, dup := lines[f[0]]; dup {
			return lr.errf("%s set again (first on line %d)", f[0], prev)
		}
		if err := keys[i].parse(c, f[1:]); err != nil {
			return lr.errf("%s: %v", f[0], err)
		}
		lines[f[0]] = lr.line
		c.where[f[0]] = fmt.Sprintf("%s:%d", name, lr.line)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// WriteConfig writes every key of c, one per line, in the simulator's
// template order; ParseConfig reads it back to an equal Config.
func WriteConfig(w io.Writer, c *Config) error {
	bw := bufio.NewWriter(w)
	for _, k := range keys {
		v := k.write(c)
		if strings.ContainsAny(v, " \t\n") && !strings.HasSuffix(k.name, "_MAP") && k.name != "LINK_DOWN" {
			return fmt.Errorf("hpcc: write config: %s value %q contains white space", k.name, v)
		}
		if v == "" {
			continue // an empty string cannot be written; absent means empty
		}
		fmt.Fprintf(bw, "%s %s\n", k.name, v)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("hpcc: write config: %w", err)
	}
	return nil
}

// Clone returns a deep copy of c (maps included).
func (c *Config) Clone() *Config {
	d := *c
	d.KMinKB, d.KMaxKB, d.PMax = maps.Clone(c.KMinKB), maps.Clone(c.KMaxKB), maps.Clone(c.PMax)
	d.where = maps.Clone(c.where)
	return &d
}
