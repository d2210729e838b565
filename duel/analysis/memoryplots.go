package analysis

import (
	"fmt"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// PlotHistogram draws a histogram of values in bins bins, with xlabel under
// the x axis, and writes it to path as PNG.
func PlotHistogram(path, title, xlabel string, values []float64, bins int) error {
	if len(values) == 0 {
		return fmt.Errorf("plotting %s: no values", path)
	}
	if bins < 1 {
		return fmt.Errorf("plotting %s: %d bins, expected >= 1", path, bins)
	}
	vals := make(plotter.Values, len(values))
	copy(vals, values)
	lo, hi := slices.Min(values), slices.Max(values)
	if lo == hi {
		bins = 1 // one value: gonum's histogram needs a range
		vals = append(vals, lo+1)
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = xlabel, "rows"
	h, err := plotter.NewHist(vals, bins)
	if err != nil {
		return fmt.Errorf("plotting %s: %w", path, err)
	}
	if lo == hi {
		h.Bins[0].Weight--
	}
	h.FillColor = palette[0]
	h.LineStyle.Width = 0
	p.Add(h)
	p.Y.Min = 0
	b, err := renderPNG(p, 7*vg.Inch, 4*vg.Inch)
	if err != nil {
		return fmt.Errorf("plotting %s: %w", path, err)
	}
	return WriteFileAtomic(path, b)
}

// PlotClassCounts draws the number of memory rows of each class against the
// training step (counts[i][c] at steps[i]), one line per class, and writes
// it to path as PNG (see PlotClassLines).
func PlotClassCounts(path, title string, steps []float64, counts [][]int, names []string) error {
	return PlotClassLines(path, title, "step", steps, counts, names)
}

// The size of a PlotClassLines figure, in inches.
const classLinesW, classLinesH = 8, 4.5

// PlotClassLines draws the number of memory rows of each class, counts[i][c]
// at xs[i], one line per class against xlabel, and writes it to path as
// PNG. Up to 20 classes are named in a legend beside the data area (see
// RenderLegendRight), where it hides no curve.
func PlotClassLines(path, title, xlabel string, xs []float64, counts [][]int, names []string) error {
	p, entries, err := classLinesPlot(title, xlabel, xs, counts, names)
	if err != nil {
		return fmt.Errorf("plotting %s: %w", path, err)
	}
	b, err := RenderLegendRight(p, entries, classLinesW*vg.Inch, classLinesH*vg.Inch)
	if err != nil {
		return fmt.Errorf("plotting %s: %w", path, err)
	}
	return WriteFileAtomic(path, b)
}

// classLinesPlot builds the plot of PlotClassLines and its legend entries.
func classLinesPlot(title, xlabel string, xs []float64, counts [][]int, names []string) (*plot.Plot, []LegendEntry, error) {
	if len(xs) == 0 || len(xs) != len(counts) {
		return nil, nil, fmt.Errorf("%d points for %d count vectors", len(xs), len(counts))
	}
	classes := 0
	for _, c := range counts {
		classes = max(classes, len(c))
	}
	if classes == 0 {
		return nil, nil, fmt.Errorf("no classes")
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = xlabel, "rows in memory"
	var entries []LegendEntry
	for c := 0; c < classes; c++ {
		pts := make(plotter.XYs, 0, len(xs))
		for i, x := range xs {
			v := 0
			if c < len(counts[i]) {
				v = counts[i][c]
			}
			pts = append(pts, plotter.XY{X: x, Y: float64(v)})
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, nil, fmt.Errorf("class %d: %w", c, err)
		}
		l.Color = palette[c%len(palette)]
		l.Width = vg.Points(1.2)
		if c >= len(palette) {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		p.Add(l)
		if classes <= 20 {
			entries = append(entries, LegendEntry{Label: classLabel(c, names), Thumb: l})
		}
	}
	p.Add(plotter.NewGrid())
	p.Y.Min = 0
	return p, entries, nil
}
