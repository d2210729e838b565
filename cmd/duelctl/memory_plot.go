package main

import (
	"bytes"
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/duel-ssl/duel/internal/atomicfile"
)

// replayPlotClassFrequency draws, one line per class, how many rows of each class
// the memory held after each update (freq[u][c]; u = 0 is the filled
// memory), against the stream rows seen, and writes it as a PNG to path.
func replayPlotClassFrequency(path string, freq [][]int, k, b int, policy string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Class frequency in memory (%s, K=%d, B=%d)", policy, k, b)
	p.X.Label.Text = "stream rows seen"
	p.Y.Label.Text = "rows in memory"
	var lines []any
	for c := range freq[0] {
		pts := make(plotter.XYs, len(freq))
		for u, counts := range freq {
			pts[u] = plotter.XY{X: float64(k + u*b), Y: float64(counts[c])}
		}
		lines = append(lines, fmt.Sprintf("class %d", c), pts)
	}
	if err := plotutil.AddLines(p, lines...); err != nil {
		return fmt.Errorf("plotting class frequencies: %w", err)
	}
	p.Legend.Top = true
	wt, err := p.WriterTo(8*vg.Inch, 5*vg.Inch, "png")
	if err != nil {
		return fmt.Errorf("rendering %s: %w", path, err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return fmt.Errorf("rendering %s: %w", path, err)
	}
	return atomicfile.WriteFile(path, buf.Bytes())
}
