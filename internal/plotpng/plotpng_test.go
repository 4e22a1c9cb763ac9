package plotpng

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

func TestWriteRow(t *testing.T) {
	mk := func() *plot.Plot {
		p := plot.New()
		l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 2}})
		if err != nil {
			t.Fatal(err)
		}
		p.Add(l)
		return p
	}
	for _, n := range []int{1, 3} {
		ps := make([]*plot.Plot, n)
		for i := range ps {
			ps[i] = mk()
		}
		var buf bytes.Buffer
		if err := WriteRow(&buf, ps, 2*vg.Inch, vg.Inch); err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(&buf)
		if err != nil {
			t.Fatal(err)
		}
		// vgimg draws at 96 dpi: n * 2 in by 1 in.
		if b := img.Bounds(); b.Dx() != n*192 || b.Dy() != 96 {
			t.Errorf("%d plots: image %v, want %dx96", n, b, n*192)
		}
	}
	if err := WriteRow(&bytes.Buffer{}, nil, vg.Inch, vg.Inch); err == nil {
		t.Error("no plots: no error")
	}
	path := filepath.Join(t.TempDir(), "row.png")
	if err := SaveRow(path, []*plot.Plot{mk()}, vg.Inch, vg.Inch); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() < 100 {
		t.Errorf("saved file: %v, %v", st, err)
	}
	if err := SaveRow(filepath.Join(t.TempDir(), "no", "dir.png"), []*plot.Plot{mk()}, vg.Inch, vg.Inch); err == nil {
		t.Error("missing directory: no error")
	}
}
