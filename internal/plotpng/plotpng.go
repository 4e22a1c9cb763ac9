// Package plotpng writes gonum plots as PNG images: several plots side by
// side in one image, to a writer or a file. The testbed's report and the
// simulator's analysis draw their figures with it.
package plotpng

import (
	"errors"
	"fmt"
	"io"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// WriteRow draws ps side by side, each w wide and h high, aligned on their
// axes, and writes the PNG to out.
func WriteRow(out io.Writer, ps []*plot.Plot, w, h vg.Length) error {
	if len(ps) == 0 {
		return errors.New("plotpng: no plot to draw")
	}
	img := vgimg.New(vg.Length(len(ps))*w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(ps), PadX: vg.Millimeter * 4, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align([][]*plot.Plot{ps}, tiles, dc)
	for i, p := range ps {
		p.Draw(canvases[0][i])
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(out); err != nil {
		return fmt.Errorf("plotpng: write png: %w", err)
	}
	return nil
}

// SaveRow writes WriteRow's image to the file at path.
func SaveRow(path string, ps []*plot.Plot, w, h vg.Length) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("plotpng: %w", err)
	}
	if err := WriteRow(f, ps, w, h); err != nil {
		f.Close()
		return fmt.Errorf("plotpng: %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("plotpng: close %s: %w", path, err)
	}
	return nil
}
