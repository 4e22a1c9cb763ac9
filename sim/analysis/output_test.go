package analysis

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"image/png"
	"reflect"
	"strings"
	"testing"
)

func smallReport(t *testing.T, label string, scale float64) *Report {
	t.Helper()
	var ss []Sample
	for i := 0; i < 41; i++ {
		ss = append(ss, Sample{Slowdown: 1 + scale*float64(i%7), Size: int64(200 + 1000*i)})
	}
	pb, err := PercentBins(ss, 5)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := SizeBins(ss, Seed002Edges)
	if err != nil {
		t.Fatal(err)
	}
	return &Report{Label: label, Flows: len(ss), Step: 5, Percent: pb, SizeEdge: Seed002Edges, Size: sb}
}

func TestWriteCSV(t *testing.T) {
	reps := []*Report{smallReport(t, "dcqcn", 1), smallReport(t, "fastcnp", 0.5)}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, reps); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rows[0], CSVHeader) {
		t.Fatalf("header %v", rows[0])
	}
	// Per report: 20 percent bins and 20 size bins plus the open bin above 10M? No flow
	// is above 10M here, so 20 size bins.
	if len(rows) != 1+2*(20+20) {
		t.Fatalf("%d rows", len(rows))
	}
	// Percent bin 0 of dcqcn: samples 0 and 1 (n = 40, 2 per bin): slowdowns 1, 2.
	if got := strings.Join(rows[1], ","); got != "dcqcn,percent,0,0,0.05,1200,2,2,2,2,1.5" {
		t.Errorf("row 1 = %s", got)
	}
	// Size bin 2 (325, 351] holds nothing: empty statistics.
	if got := strings.Join(rows[1+20+2], ","); got != "dcqcn,size,2,325,351,0,0,,,," {
		t.Errorf("empty size bin row = %s", got)
	}
}

func TestWriteJSON(t *testing.T) {
	reps := []*Report{smallReport(t, "a", 1)}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, reps); err != nil {
		t.Fatal(err)
	}
	var back []*Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, reps) {
		t.Errorf("JSON round trip changed the report")
	}
}

func TestWriteScriptTextMismatch(t *testing.T) {
	a := smallReport(t, "a", 1)
	b := smallReport(t, "b", 1)
	b.Percent = b.Percent[:3]
	if err := WriteScriptText(&bytes.Buffer{}, []*Report{a, b}); err == nil {
		t.Error("reports with different bins written side by side")
	}
	if err := WriteScriptText(&bytes.Buffer{}, nil); err == nil {
		t.Error("no report: no error")
	}
}

func TestWritePNG(t *testing.T) {
	reps := []*Report{smallReport(t, "dcqcn", 1), smallReport(t, "fastcnp", 0.5)}
	for _, binning := range []string{PercentBinning, SizeBinning} {
		var buf bytes.Buffer
		if err := WritePNG(&buf, reps, binning); err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if b := img.Bounds(); b.Dx() != 3*6*96 || b.Dy() != 432 {
			t.Errorf("%s: image %v, want three 6x4.5 in panels", binning, b)
		}
	}
	if err := WritePNG(&bytes.Buffer{}, reps, "weekly"); err == nil {
		t.Error("unknown binning accepted")
	}
	if _, err := Plot(reps, SizeBinning, 0.9); err == nil {
		t.Error("percentile 0.9 accepted")
	}
}
