package analysis

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
)

// WriteScriptText writes the reports' percent bins as fct_analysis.py prints
// them, one line per bin: "%.3f %d" (the bin's start as a fraction, the first
// report's largest size in the bin), then "\t%.3f %.3f %.3f" (p50, p95, p99)
// per report. Every report must have the same bins.
func WriteScriptText(w io.Writer, reps []*Report) error {
	if len(reps) == 0 {
		return fmt.Errorf("analysis: no report to write")
	}
	for _, r := range reps[1:] {
		if len(r.Percent) != len(reps[0].Percent) {
			return fmt.Errorf("analysis: %s has %d bins, %s %d", r.Label, len(r.Percent), reps[0].Label, len(reps[0].Percent))
		}
	}
	bw := bufio.NewWriter(w)
	for i, b := range reps[0].Percent {
		fmt.Fprintf(bw, "%.3f %d", b.Lo, b.MaxSize)
		for _, r := range reps {
			p := r.Percent[i]
			fmt.Fprintf(bw, "\t%.3f %.3f %.3f", p.P50, p.P95, p.P99)
		}
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("analysis: write: %w", err)
	}
	return nil
}

// CSVHeader is the header row of WriteCSV.
var CSVHeader = []string{"label", "bins", "bin", "lo", "hi", "max_size", "flows", "p50", "p95", "p99", "mean"}

// WriteCSV writes every bin of every report as one row (CSVHeader). The bins
// column is "percent" (lo and hi are fractions of the flows) or "size" (lo
// exclusive and hi inclusive, in bytes; hi empty for the open last bin).
// Empty bins have empty statistics.
func WriteCSV(w io.Writer, reps []*Report) error {
	cw := csv.NewWriter(w)
	cw.Write(CSVHeader)
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, r := range reps {
		for _, tab := range []struct {
			name string
			bins []Bin
		}{{"percent", r.Percent}, {"size", r.Size}} {
			for i, b := range tab.bins {
				row := []string{r.Label, tab.name, strconv.Itoa(i), f(b.Lo), f(b.Hi), strconv.FormatInt(b.MaxSize, 10), strconv.Itoa(b.Flows), "", "", "", ""}
				if tab.name == "size" && b.Hi == 0 {
					row[4] = ""
				}
				if b.Flows > 0 {
					row[7], row[8], row[9], row[10] = f(b.P50), f(b.P95), f(b.P99), f(b.Mean)
				}
				cw.Write(row)
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("analysis: write csv: %w", err)
	}
	return nil
}

// WriteJSON writes the reports as a JSON array, indented.
func WriteJSON(w io.Writer, reps []*Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(reps); err != nil {
		return fmt.Errorf("analysis: write json: %w", err)
	}
	return nil
}

// SizeLabel writes a size as seed 002's tables do: 300B, 1K, 36K, 10M
// (decimal units, rounded to whole units).
func SizeLabel(b int64) string {
	switch {
	case b >= 1e6:
		return strconv.FormatInt((b+5e5)/1e6, 10) + "M"
	case b >= 1e3:
		return strconv.FormatInt((b+500)/1e3, 10) + "K"
	}
	return strconv.FormatInt(b, 10) + "B"
}
