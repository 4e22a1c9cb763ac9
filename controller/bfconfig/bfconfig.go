// Package bfconfig builds the device config a Stratum Tofino switch (stratum_bfrt)
// takes in SetForwardingPipelineConfig: a serialized BfPipelineConfig (Stratum's
// stratum/hal/lib/barefoot/bf.proto; proto/stratum/hal/lib/barefoot) made from
// p4c-barefoot's output directory, as Stratum's own bf_pipeline_builder does:
// the compiler's .conf JSON names the program, its bf-rt.json and, per pipeline
// profile, its context.json, binary and pipe scope (docs/tofino.md, "Control plane").
package bfconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/fastcnp/fastcnp/internal/readlimit"
	bfpb "github.com/fastcnp/fastcnp/proto/stratum/hal/lib/barefoot"
)

// Limits on what Build reads: the .conf is small; bf-rt.json, a context.json and a
// binary of a large program are a few MiB each (docs/tofino.md "Compiling").
const (
	MaxConfBytes     = 1 << 20
	MaxArtifactBytes = 64 << 20
	// MaxProfiles bounds the pipeline profiles of one program (Tofino has at most
	// four pipes per chip, one profile each).
	MaxProfiles = 8
)

// ErrNoConf: the directory has no compiler .conf file (or more than one).
var ErrNoConf = errors.New("bfconfig: no single p4c-barefoot .conf file")

// conf is the part of p4c-barefoot's .conf JSON that a device config needs.
type conf struct {
	P4Devices []struct {
		P4Programs []struct {
			ProgramName string `json:"program-name"`
			BfrtConfig  string `json:"bfrt-config"`
			P4Pipelines []struct {
				Name      string   `json:"p4_pipeline_name"`
				Context   string   `json:"context"`
				Config    string   `json:"config"`
				PipeScope []uint32 `json:"pipe_scope"`
			} `json:"p4_pipelines"`
		} `json:"p4_programs"`
	} `json:"p4_devices"`
}

// FindConf returns the .conf file of a compiler output directory (path itself when
// it is a file).
func FindConf(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("bfconfig: %w", err)
	}
	if !st.IsDir() {
		return path, nil
	}
	m, err := filepath.Glob(filepath.Join(path, "*.conf"))
	if err != nil {
		return "", fmt.Errorf("bfconfig: %s: %w", path, err)
	}
	sort.Strings(m)
	if len(m) != 1 {
		return "", fmt.Errorf("%w in %s (found %d: %s)", ErrNoConf, path, len(m), strings.Join(m, ", "))
	}
	return m[0], nil
}

// Build reads p4c-barefoot's output (the directory given to -o, or its .conf file)
// and returns the BfPipelineConfig: one device, one program, its profiles in the
// .conf's order. The .conf's paths are taken relative to the .conf's directory,
// then with their leading directories dropped one by one (the compiler writes them
// relative to an install prefix, share/tofinopd/PROGRAM/...), absolute ones as given.
func Build(path string) (*bfpb.BfPipelineConfig, error) {
	confPath, err := FindConf(path)
	if err != nil {
		return nil, err
	}
	raw, err := readlimit.File(confPath, "p4c-barefoot .conf", MaxConfBytes)
	if err != nil {
		return nil, fmt.Errorf("bfconfig: %w", err)
	}
	var c conf
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("bfconfig: %s: %w", confPath, err)
	}
	if len(c.P4Devices) != 1 {
		return nil, fmt.Errorf("bfconfig: %s: %d p4_devices, Stratum takes one", confPath, len(c.P4Devices))
	}
	progs := c.P4Devices[0].P4Programs
	if len(progs) != 1 {
		return nil, fmt.Errorf("bfconfig: %s: %d p4_programs, a BfPipelineConfig holds one", confPath, len(progs))
	}
	prog := progs[0]
	if prog.ProgramName == "" {
		return nil, fmt.Errorf("bfconfig: %s: no program-name", confPath)
	}
	if n := len(prog.P4Pipelines); n == 0 || n > MaxProfiles {
		return nil, fmt.Errorf("bfconfig: %s: %d p4_pipelines, want 1..%d", confPath, n, MaxProfiles)
	}
	dir := filepath.Dir(confPath)
	out := &bfpb.BfPipelineConfig{P4Name: prog.ProgramName}
	if out.BfruntimeInfo, err = readArtifact(dir, prog.BfrtConfig, "bfrt-config"); err != nil {
		return nil, err
	}
	for i, p := range prog.P4Pipelines {
		if p.Name == "" {
			return nil, fmt.Errorf("bfconfig: %s: p4_pipelines[%d] has no p4_pipeline_name", confPath, i)
		}
		pr := &bfpb.BfPipelineConfig_Profile{ProfileName: p.Name, PipeScope: p.PipeScope}
		if pr.Context, err = readArtifact(dir, p.Context, p.Name+" context"); err != nil {
			return nil, err
		}
		if pr.Binary, err = readArtifact(dir, p.Config, p.Name+" config"); err != nil {
			return nil, err
		}
		out.Profiles = append(out.Profiles, pr)
	}
	return out, nil
}

// resolve finds a .conf path on disk (see Build).
func resolve(dir, p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	if filepath.IsAbs(p) {
		return p, nil
	}
	parts := strings.Split(filepath.ToSlash(filepath.Clean(p)), "/")
	for i := range parts {
		if parts[i] == ".." {
			return "", fmt.Errorf("%s leaves the output directory", p)
		}
	}
	for i := range parts {
		cand := filepath.Join(append([]string{dir}, parts[i:]...)...)
		if st, err := os.Stat(cand); err == nil && st.Mode().IsRegular() {
			return cand, nil
		}
	}
	return "", fmt.Errorf("%s: not found under %s", p, dir)
}

func readArtifact(dir, p, what string) ([]byte, error) {
	path, err := resolve(dir, p)
	if err != nil {
		return nil, fmt.Errorf("bfconfig: %s: %w", what, err)
	}
	b, err := readlimit.File(path, "p4c-barefoot "+what, MaxArtifactBytes)
	if err != nil {
		return nil, fmt.Errorf("bfconfig: %w", err)
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("bfconfig: %s %s is empty", what, path)
	}
	return b, nil
}

// DeviceConfig returns the bytes of ForwardingPipelineConfig.p4_device_config for
// path: a compiler output directory or .conf is built (Build) and serialized
// deterministically; any other file is taken as an already serialized
// BfPipelineConfig (Stratum's bf_pipeline_builder output) and checked to be one.
func DeviceConfig(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("bfconfig: %w", err)
	}
	if st.IsDir() || strings.HasSuffix(path, ".conf") {
		c, err := Build(path)
		if err != nil {
			return nil, err
		}
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(c)
		if err != nil {
			return nil, fmt.Errorf("bfconfig: marshal: %w", err)
		}
		return b, nil
	}
	b, err := readlimit.File(path, "device config", MaxArtifactBytes*MaxProfiles)
	if err != nil {
		return nil, fmt.Errorf("bfconfig: %w", err)
	}
	if err := Check(b); err != nil {
		return nil, fmt.Errorf("bfconfig: %s: %w", path, err)
	}
	return b, nil
}

// Check verifies that b is a BfPipelineConfig Stratum can load: it parses, names
// its program, and has bf-rt.json and at least one profile with a context and a
// binary.
func Check(b []byte) error {
	var c bfpb.BfPipelineConfig
	if err := proto.Unmarshal(b, &c); err != nil {
		return fmt.Errorf("not a serialized BfPipelineConfig: %w", err)
	}
	switch {
	case c.GetP4Name() == "":
		return errors.New("BfPipelineConfig without p4_name")
	case len(c.GetBfruntimeInfo()) == 0:
		return errors.New("BfPipelineConfig without bfruntime_info")
	case len(c.GetProfiles()) == 0:
		return errors.New("BfPipelineConfig without profiles")
	}
	for _, p := range c.GetProfiles() {
		if p.GetProfileName() == "" || len(p.GetContext()) == 0 || len(p.GetBinary()) == 0 {
			return fmt.Errorf("BfPipelineConfig profile %q lacks a name, context or binary", p.GetProfileName())
		}
	}
	return nil
}
