package bfconfig

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	bfpb "github.com/fastcnp/fastcnp/proto/stratum/hal/lib/barefoot"
)

// writeOutput writes a p4c-barefoot output directory: files (path -> content) and a
// .conf naming them (paths in the compiler's share/tofinopd/PROGRAM form unless
// given otherwise).
func writeOutput(t *testing.T, conf string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if conf != "" {
		if err := os.WriteFile(filepath.Join(dir, "fastcnp.conf"), []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A .conf as p4c-barefoot writes it for a two-profile program (the layout of
// Stratum's bf_pipeline_builder input).
const twoProfiles = `{
  "chip_list": [{"id": "asic-0", "chip_family": "tofino", "instance": 0}],
  "instance": 0,
  "p4_devices": [{
    "device-id": 0,
    "p4_programs": [{
      "program-name": "fastcnp",
      "bfrt-config": "share/tofinopd/fastcnp/bf-rt.json",
      "p4_pipelines": [
        {"p4_pipeline_name": "pipe0", "context": "share/tofinopd/fastcnp/pipe0/context.json",
         "config": "share/tofinopd/fastcnp/pipe0/tofino.bin", "pipe_scope": [0, 2], "path": "share/tofinopd/fastcnp"},
        {"p4_pipeline_name": "pipe1", "context": "share/tofinopd/fastcnp/pipe1/context.json",
         "config": "share/tofinopd/fastcnp/pipe1/tofino.bin", "pipe_scope": [1, 3], "path": "share/tofinopd/fastcnp"}
      ]
    }],
    "agent0": "lib/libpltfm_mgr.so"
  }]
}`

var twoProfileFiles = map[string]string{
	"bf-rt.json":          `{"tables": []}`,
	"pipe0/context.json":  `{"program_name": "fastcnp", "pipe": 0}`,
	"pipe0/tofino.bin":    "\x00\x01bin0",
	"pipe1/context.json":  `{"program_name": "fastcnp", "pipe": 1}`,
	"pipe1/tofino.bin":    "\x00\x01bin1",
	"pipe0/unrelated.txt": "not read",
}

func TestBuild(t *testing.T) {
	dir := writeOutput(t, twoProfiles, twoProfileFiles)
	want := &bfpb.BfPipelineConfig{P4Name: "fastcnp", BfruntimeInfo: []byte(twoProfileFiles["bf-rt.json"]),
		Profiles: []*bfpb.BfPipelineConfig_Profile{
			{ProfileName: "pipe0", Context: []byte(twoProfileFiles["pipe0/context.json"]), Binary: []byte(twoProfileFiles["pipe0/tofino.bin"]), PipeScope: []uint32{0, 2}},
			{ProfileName: "pipe1", Context: []byte(twoProfileFiles["pipe1/context.json"]), Binary: []byte(twoProfileFiles["pipe1/tofino.bin"]), PipeScope: []uint32{1, 3}},
		}}
	for _, path := range []string{dir, filepath.Join(dir, "fastcnp.conf")} {
		got, err := Build(path)
		if err != nil {
			t.Fatalf("Build(%s): %v", path, err)
		}
		if !proto.Equal(got, want) {
			t.Errorf("Build(%s) = %v, want %v", path, got, want)
		}
	}
	// DeviceConfig serializes it; Stratum's parser (the generated Go of its proto)
	// reads it back, and a file holding those bytes is accepted as it is.
	b, err := DeviceConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	var back bfpb.BfPipelineConfig
	if err := proto.Unmarshal(b, &back); err != nil || !proto.Equal(&back, want) {
		t.Fatalf("round trip: %v, %v", err, &back)
	}
	prebuilt := filepath.Join(t.TempDir(), "device_config.pb.bin")
	if err := os.WriteFile(prebuilt, b, 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := DeviceConfig(prebuilt)
	if err != nil || !bytes.Equal(again, b) {
		t.Fatalf("prebuilt: %v", err)
	}
	// Deterministic: the same output gives the same bytes (fastcnpd's pipeline
	// cookie hashes them).
	if b2, _ := DeviceConfig(dir); !bytes.Equal(b2, b) {
		t.Error("two builds differ")
	}
}

func TestBuildAbsolutePaths(t *testing.T) {
	dir := writeOutput(t, "", twoProfileFiles)
	conf := strings.ReplaceAll(twoProfiles, "share/tofinopd/fastcnp/", dir+"/")
	if err := os.WriteFile(filepath.Join(dir, "x.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.GetProfiles()[1].GetBinary()) != twoProfileFiles["pipe1/tofino.bin"] {
		t.Errorf("profile 1 binary %q", got.GetProfiles()[1].GetBinary())
	}
}

func TestBuildErrors(t *testing.T) {
	one := func(replace ...string) string { return strings.NewReplacer(replace...).Replace(twoProfiles) }
	for _, c := range []struct {
		name  string
		conf  string
		files map[string]string
		want  string
		is    error
	}{
		{"no conf", "", twoProfileFiles, "no single p4c-barefoot .conf", ErrNoConf},
		{"not JSON", "{", twoProfileFiles, "unexpected end of JSON", nil},
		{"two devices", one(`"p4_devices": [{`, `"p4_devices": [{}, {`), twoProfileFiles, "2 p4_devices", nil},
		{"no program name", one(`"program-name": "fastcnp"`, `"program-name": ""`), twoProfileFiles, "no program-name", nil},
		{"a missing binary", twoProfiles, map[string]string{"bf-rt.json": "x", "pipe0/context.json": "c", "pipe0/tofino.bin": "b", "pipe1/context.json": "c"}, "pipe1 config: share/tofinopd/fastcnp/pipe1/tofino.bin: not found", nil},
		{"an empty context", twoProfiles, map[string]string{"bf-rt.json": "x", "pipe0/context.json": "", "pipe0/tofino.bin": "b", "pipe1/context.json": "c", "pipe1/tofino.bin": "b"}, "pipe0 context", nil},
		{"a path leaving the directory", one("share/tofinopd/fastcnp/bf-rt.json", "../../etc/passwd"), twoProfileFiles, "leaves the output directory", nil},
		{"no profiles", one(`"p4_pipelines": [`, `"p4_pipelines": [], "x": [`), twoProfileFiles, "0 p4_pipelines", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := writeOutput(t, c.conf, c.files)
			_, err := Build(dir)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Build: %v, want an error containing %q", err, c.want)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %v is not %v", err, c.is)
			}
		})
	}
	// Two .conf files: which program is meant is not guessed.
	dir := writeOutput(t, twoProfiles, twoProfileFiles)
	if err := os.WriteFile(filepath.Join(dir, "other.conf"), []byte(twoProfiles), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(dir); !errors.Is(err, ErrNoConf) {
		t.Errorf("two confs: %v", err)
	}
}

func TestCheck(t *testing.T) {
	good := &bfpb.BfPipelineConfig{P4Name: "p", BfruntimeInfo: []byte("{}"),
		Profiles: []*bfpb.BfPipelineConfig_Profile{{ProfileName: "pipe", Context: []byte("{}"), Binary: []byte{1}}}}
	for _, c := range []struct {
		name string
		mod  func(*bfpb.BfPipelineConfig)
		ok   bool
	}{
		{"complete", func(*bfpb.BfPipelineConfig) {}, true},
		{"no name", func(c *bfpb.BfPipelineConfig) { c.P4Name = "" }, false},
		{"no bf-rt.json", func(c *bfpb.BfPipelineConfig) { c.BfruntimeInfo = nil }, false},
		{"no profile", func(c *bfpb.BfPipelineConfig) { c.Profiles = nil }, false},
		{"a profile without binary", func(c *bfpb.BfPipelineConfig) { c.Profiles[0].Binary = nil }, false},
	} {
		cfg := proto.Clone(good).(*bfpb.BfPipelineConfig)
		c.mod(cfg)
		b, _ := proto.Marshal(cfg)
		if err := Check(b); (err == nil) != c.ok {
			t.Errorf("%s: Check = %v, want ok %v", c.name, err, c.ok)
		}
	}
	if err := Check([]byte{0xff, 0xff}); err == nil {
		t.Error("garbage accepted")
	}
}
