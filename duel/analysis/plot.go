package analysis

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// palette is matplotlib's tab10: class c is drawn in palette[c%10] with the
// glyph shape glyphs[c/10%len(glyphs)], so up to 40 classes stay distinct.
var palette = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255}, {148, 103, 189, 255},
	{140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255}, {188, 189, 34, 255}, {23, 190, 207, 255},
}

var glyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.CrossGlyph{}}

// classLabel returns the display name of class c.
func classLabel(c int, names []string) string {
	if c >= 0 && c < len(names) && names[c] != "" {
		return fmt.Sprintf("%d %s", c, names[c])
	}
	return fmt.Sprintf("class %d", c)
}

// renderPNG draws p at w x h and returns the PNG bytes.
func renderPNG(p *plot.Plot, w, h vg.Length) ([]byte, error) {
	wt, err := p.WriterTo(w, h, "png")
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// PlotEmbedding draws the 2-d points y (N x 2) as a scatter plot coloured by
// class, with a legend of the class names, and writes it to path as PNG.
func PlotEmbedding(path, title string, y []float64, labels []int32, names []string) error {
	if len(y) != 2*len(labels) {
		return fmt.Errorf("plotting %s: %d coordinates for %d labels", path, len(y), len(labels))
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = "t-SNE 1", "t-SNE 2"
	byClass := map[int32]plotter.XYs{}
	for i, l := range labels {
		byClass[l] = append(byClass[l], plotter.XY{X: y[2*i], Y: y[2*i+1]})
	}
	classes := make([]int, 0, len(byClass))
	for c := range byClass {
		classes = append(classes, int(c))
	}
	sort.Ints(classes)
	for _, c := range classes {
		s, err := plotter.NewScatter(byClass[int32(c)])
		if err != nil {
			return fmt.Errorf("plotting %s: %w", path, err)
		}
		s.GlyphStyle.Color = palette[((c%len(palette))+len(palette))%len(palette)]
		s.GlyphStyle.Shape = glyphs[(c/len(palette))%len(glyphs)]
		s.GlyphStyle.Radius = vg.Points(2)
		p.Add(s)
		if len(classes) <= 40 {
			p.Legend.Add(classLabel(c, names), s)
		}
	}
	p.Legend.Left = false
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	if len(y) > 0 {
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = embeddingRanges(y)
	}
	b, err := renderPNG(p, embedWidth*vg.Inch, embedHeight*vg.Inch)
	if err != nil {
		return fmt.Errorf("plotting %s: %w", path, err)
	}
	return WriteFileAtomic(path, b)
}

// The embedding plot's size, and about the part of it the data takes (the
// rest: the title, the axes and their labels), in inches.
const (
	embedWidth, embedHeight = 7, 6
	embedDataW, embedDataH  = 6.3, 5.2
	embedLegendRoom         = 0.3 // of the points' width, on the right, for the legend
)

// embeddingRanges returns the axes' ranges of an embedding plot of the
// points y (x0, y0, x1, y1, ...): one scale for both axes (a unit is as
// long across as up, so that the picture keeps the embedding's
// distances), the points centred, with room on the right for the legend.
func embeddingRanges(y []float64) (xmin, xmax, ymin, ymax float64) {
	x0, x1, y0, y1 := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for i := 0; i+1 < len(y); i += 2 {
		x0, x1 = math.Min(x0, y[i]), math.Max(x1, y[i])
		y0, y1 = math.Min(y0, y[i+1]), math.Max(y1, y[i+1])
	}
	// Units per inch: the larger the axes need, with a small margin.
	scale := 1.05 * math.Max((x1-x0)*(1+embedLegendRoom)/embedDataW, (y1-y0)/embedDataH)
	if !(scale > 0) {
		scale = 1 / embedDataW // one point, or all at one place: a unit across
	}
	w, h := scale*embedDataW, scale*embedDataH
	cx, cy := (x0+x1)/2, (y0+y1)/2
	xmin = cx - w/(1+embedLegendRoom)/2
	return xmin, xmin + w, cy - h/2, cy + h/2
}

// PlotClassFrequency draws the number of memory rows of each class as bars
// sorted in descending order (as the paper's Fig. F.3), each bar named by its
// class, and writes it to path as PNG.
func PlotClassFrequency(path, title string, counts []int, names []string) error {
	if len(counts) == 0 {
		return fmt.Errorf("plotting %s: no classes", path)
	}
	order := make([]int, len(counts))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return counts[order[a]] > counts[order[b]] })
	vals := make(plotter.Values, len(counts))
	ticks := make([]string, len(counts))
	for i, c := range order {
		vals[i] = float64(counts[c])
		if len(counts) <= 20 {
			ticks[i] = classLabel(c, names)
		} else {
			ticks[i] = fmt.Sprint(c)
		}
	}
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = "rows in memory"
	p.X.Label.Text = "class (descending frequency)"
	bars, err := plotter.NewBarChart(vals, vg.Points(math.Max(2, math.Min(30, 400/float64(len(counts))))))
	if err != nil {
		return fmt.Errorf("plotting %s: %w", path, err)
	}
	bars.Color = palette[0]
	bars.LineStyle.Width = 0
	p.Add(bars)
	p.NominalX(ticks...)
	if len(counts) <= 20 {
		p.X.Tick.Label.Rotation = math.Pi / 4
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}
	p.Y.Min = 0
	b, err := renderPNG(p, 7*vg.Inch, 4.5*vg.Inch)
	if err != nil {
		return fmt.Errorf("plotting %s: %w", path, err)
	}
	return WriteFileAtomic(path, b)
}

// curveOrder is the order of the panels of PlotTrainingCurves; other numeric
// fields follow in the order of Metrics.Keys.
var curveOrder = []string{"loss", "lr", "img_per_s", "memory_class_entropy", "knn_top1"}

// PlotTrainingCurves draws one panel per numeric field of m against the step
// (loss, learning rate, throughput, memory class entropy, kNN accuracy, then
// any other field; "step" and fields named in skip are left out) and writes
// them as one PNG to path. It returns the fields drawn.
func PlotTrainingCurves(path string, m *Metrics, skip ...string) ([]string, error) {
	var keys []string
	seen := map[string]bool{"step": true}
	for _, k := range skip {
		seen[k] = true
	}
	for _, k := range append(append([]string(nil), curveOrder...), m.Keys...) {
		if seen[k] {
			continue
		}
		seen[k] = true
		if steps, _ := m.Series(k); len(steps) > 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("plotting %s: no metric to draw in %d records", path, len(m.Records))
	}
	cols := min(2, len(keys))
	rows := (len(keys) + cols - 1) / cols
	plots := make([][]*plot.Plot, rows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, cols)
	}
	for i, k := range keys {
		steps, vals := m.Series(k)
		p, err := curvePanel(k, steps, vals, palette[i%len(palette)])
		if err != nil {
			return nil, fmt.Errorf("plotting %s: field %s: %w", path, k, err)
		}
		plots[i/cols][i%cols] = p
	}
	return keys, WriteTiles(path, plots, 4.5*vg.Inch, 3*vg.Inch)
}

// curvePanel returns the panel of a metric's curve, title, against the
// step.
func curvePanel(title string, steps, vals []float64, c color.Color) (*plot.Plot, error) {
	pts := make(plotter.XYs, len(steps))
	for j := range steps {
		pts[j] = plotter.XY{X: steps[j], Y: vals[j]}
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "step"
	l, err := plotter.NewLine(pts)
	if err != nil {
		return nil, err
	}
	l.Color = c
	l.Width = vg.Points(1.5)
	p.Add(l)
	if len(pts) == 1 {
		s, _ := plotter.NewScatter(pts)
		s.GlyphStyle.Color = l.Color
		p.Add(s)
	}
	p.Add(plotter.NewGrid())
	p.Y.Tick.Marker = exactTicks{}
	if lo, hi := slices.Min(vals), slices.Max(vals); lo == hi {
		// A constant series: a range around its value, whose ticks show it
		// (gonum pads an empty range by ±1, and an lr of 0.001 read as 0.0).
		pad := max(math.Abs(lo)*0.1, 1e-12)
		p.Y.Min, p.Y.Max = lo-pad, hi+pad
	}
	return p, nil
}

// WriteTiles draws a grid of plots (nil cells stay empty), each tileW by
// tileH with aligned axes, and writes it to path as one PNG, atomically.
func WriteTiles(path string, grid [][]*plot.Plot, tileW, tileH vg.Length) error {
	rows, cols := len(grid), 0
	for _, r := range grid {
		cols = max(cols, len(r))
	}
	if rows == 0 || cols == 0 {
		return fmt.Errorf("plotting %s: no panel to draw", path)
	}
	img := vgimg.New(vg.Length(cols)*tileW, vg.Length(rows)*tileH)
	dc := draw.New(img)
	t := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(18), PadY: vg.Points(18), PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(12)}
	canvases := plot.Align(grid, t, dc)
	for i := range grid {
		for j, p := range grid[i] {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return fmt.Errorf("plotting %s: %w", path, err)
	}
	return WriteFileAtomic(path, buf.Bytes())
}
