package bmv2

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/fastcnp/fastcnp/p4src"
)

// TestRegisterNamesInBMv2JSON checks, when the program has been compiled (make p4),
// that BMv2 knows every register of the P4Info under the same name, width and size:
// the runner gives the CLI the P4Info name (register_write NAME INDEX VALUE).
func TestRegisterNamesInBMv2JSON(t *testing.T) {
	path, ok := p4src.BMv2JSONPath()
	if !ok {
		t.Skipf("no compiled program at %s (make p4, or %s)", path, p4src.BMv2JSONEnv)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var prog struct {
		RegisterArrays []struct {
			Name     string `json:"name"`
			Size     int    `json:"size"`
			Bitwidth int    `json:"bitwidth"`
		} `json:"register_arrays"`
	}
	if err := json.Unmarshal(b, &prog); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(prog.RegisterArrays) == 0 {
		t.Skipf("%s has no register_arrays (not a BMv2 JSON of fastcnp.p4?)", path)
	}
	byName := map[string]int{}
	for i, r := range prog.RegisterArrays {
		byName[r.Name] = i
	}
	info, err := p4src.P4Info()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range info.GetRegisters() {
		name := r.GetPreamble().GetName()
		i, ok := byName[name]
		if !ok {
			t.Errorf("register %s of the P4Info is not in the BMv2 JSON's register_arrays", name)
			continue
		}
		ja := prog.RegisterArrays[i]
		if w := int(r.GetTypeSpec().GetBitstring().GetBit().GetBitwidth()); ja.Bitwidth != w || ja.Size != int(r.GetSize()) {
			t.Errorf("register %s: BMv2 bit<%d>[%d], P4Info bit<%d>[%d]", name, ja.Bitwidth, ja.Size, w, r.GetSize())
		}
	}
}
