package reproduce

import (
	"errors"
	"fmt"
	"image/color"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/duel-ssl/duel/duel/analysis"
)

// PlotFile is a plot written beside report.md.
type PlotFile struct {
	File    string `json:"file"`
	Caption string `json:"caption"`
}

// palette is matplotlib's tab10, as duel/analysis draws: variant i is
// palette[i%10].
var palette = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255}, {148, 103, 189, 255},
	{140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255}, {188, 189, 34, 255}, {23, 190, 207, 255},
}

// curvePlot is one plot of a curve of every variant over training, a panel
// per ρmax.
type curvePlot struct {
	file, caption, ylabel string
	scale                 float64 // multiplies the values (100 for percent)
	curve                 func(*Curves) *Curve
	kinds                 []Kind // the report kinds that draw it
	legendTop             bool
	stream                bool // draw the stream's class entropy as a reference
}

// curvePlots are the plots of the reports: the report kinds draw them
// from this table, and a report removes those of them it did not draw
// (removeStalePlots).
var curvePlots = []curvePlot{
	{file: "knn_top1.png", ylabel: "kNN top-1 (%)", scale: 100, kinds: Kinds,
		caption: "accuracy over training (as the paper's Fig. F.1, which plots the linear probe at checkpoints): the kNN monitor's top-1 (%) from metrics.jsonl against the step, mean ± std over the seeds, one panel per ρmax",
		curve:   func(c *Curves) *Curve { return &c.KNNTop1 }},
	{file: "memory_class_entropy.png", ylabel: "memory class entropy (nats)", scale: 1, kinds: []Kind{Table2}, legendTop: true, stream: true,
		caption: "the memory's class entropy (nats) over training, mean ± std over the seeds, one panel per ρmax; dashed: the stream's class entropy",
		curve:   func(c *Curves) *Curve { return &c.MemoryClassEntropy }},
	{file: "memory_age_mean.png", ylabel: "mean row age (steps)", scale: 1, kinds: []Kind{Table2}, legendTop: true,
		caption: "the mean age (steps) of the memory's rows over training, mean ± std over the seeds, one panel per ρmax",
		curve:   func(c *Curves) *Curve { return &c.MemoryAgeMean }},
}

// band is a curve's mean and standard deviation over seeds at each step.
type band struct {
	name                string
	colour              color.RGBA
	steps, mean, lo, hi []float64
}

// plot writes the report kind's plots that have data into dir, and
// removes from dir the other plots of curvePlots, left there by an earlier
// report (of runs with other curves, or of another kind), so that every
// plot beside report.md is of this report.
func (r *Report) plot(dir string) ([]PlotFile, error) {
	var files []PlotFile
	drawn := map[string]bool{}
	for _, cp := range curvePlots {
		if !containsKind(cp.kinds, r.Grid.Kind) {
			continue
		}
		var panels []*plot.Plot
		for _, rho := range r.Grid.RhoMax {
			var bands []band
			for i, v := range r.Grid.variants() {
				if b, ok := meanBand(r.runsOf(v.String(), rho), cp.curve, cp.scale); ok {
					b.name, b.colour = v.String(), palette[i%len(palette)]
					bands = append(bands, b)
				}
			}
			if len(bands) == 0 {
				continue
			}
			ref := math.NaN()
			if c := r.classes(); cp.stream && c > 1 {
				ref = streamEntropy(rho, c)
			}
			p, err := bandPanel(fmt.Sprintf("ρmax %g", rho), cp.ylabel, bands, ref, cp.legendTop)
			if err != nil {
				return nil, fmt.Errorf("plotting %s: %w", cp.file, err)
			}
			panels = append(panels, p)
		}
		if len(panels) == 0 {
			continue
		}
		if err := writePanels(filepath.Join(dir, cp.file), panels); err != nil {
			return nil, err
		}
		files = append(files, PlotFile{File: cp.file, Caption: cp.caption})
		drawn[cp.file] = true
	}
	if err := removeStalePlots(dir, drawn); err != nil {
		return nil, err
	}
	return files, nil
}

// removeStalePlots removes from dir the files of curvePlots not in drawn,
// left by an earlier report; a file already absent is fine.
func removeStalePlots(dir string, drawn map[string]bool) error {
	for _, cp := range curvePlots {
		if drawn[cp.file] {
			continue
		}
		path := filepath.Join(dir, cp.file)
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s, a plot of an earlier report not drawn this time: %w", path, err)
		}
	}
	return nil
}

func containsKind(ks []Kind, k Kind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

// meanBand gathers a curve over runs: at each step that any run logged,
// the mean and mean ± std of the runs that logged it.
func meanBand(runs []*RunResult, curve func(*Curves) *Curve, scale float64) (band, bool) {
	at := map[int][]float64{}
	for _, x := range runs {
		c := curve(&x.Curves)
		for i, s := range c.Steps {
			at[s] = append(at[s], scale*c.Values[i])
		}
	}
	if len(at) == 0 {
		return band{}, false
	}
	steps := make([]int, 0, len(at))
	for s := range at {
		steps = append(steps, s)
	}
	sort.Ints(steps)
	var b band
	for _, s := range steps {
		m, sd := meanStd(at[s])
		b.steps = append(b.steps, float64(s))
		b.mean, b.lo, b.hi = append(b.mean, m), append(b.lo, m-sd), append(b.hi, m+sd)
	}
	return b, true
}

// bandPanel draws one panel: each band's mean as a line over its shaded
// ±std band, and ref (unless NaN) as a dashed grey line.
func bandPanel(title, ylabel string, bands []band, ref float64, legendTop bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = "step", ylabel
	p.Add(plotter.NewGrid())
	for _, b := range bands {
		if len(b.steps) > 1 && spread(b) {
			pts := make(plotter.XYs, 0, 2*len(b.steps))
			for i := range b.steps {
				pts = append(pts, plotter.XY{X: b.steps[i], Y: b.hi[i]})
			}
			for i := len(b.steps) - 1; i >= 0; i-- {
				pts = append(pts, plotter.XY{X: b.steps[i], Y: b.lo[i]})
			}
			poly, err := plotter.NewPolygon(pts)
			if err != nil {
				return nil, err
			}
			poly.Color = color.NRGBA{R: b.colour.R, G: b.colour.G, B: b.colour.B, A: 50}
			poly.LineStyle.Width = 0
			p.Add(poly)
		}
	}
	for _, b := range bands {
		pts := make(plotter.XYs, len(b.steps))
		for i := range b.steps {
			pts[i] = plotter.XY{X: b.steps[i], Y: b.mean[i]}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.Color, l.Width = b.colour, vg.Points(1.5)
		p.Add(l)
		if len(pts) == 1 {
			s, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, err
			}
			s.GlyphStyle.Color = b.colour
			p.Add(s)
		}
		p.Legend.Add(b.name, l)
	}
	if !math.IsNaN(ref) {
		lo, hi := bands[0].steps[0], bands[0].steps[len(bands[0].steps)-1]
		for _, b := range bands {
			lo, hi = math.Min(lo, b.steps[0]), math.Max(hi, b.steps[len(b.steps)-1])
		}
		l, err := plotter.NewLine(plotter.XYs{{X: lo, Y: ref}, {X: hi, Y: ref}})
		if err != nil {
			return nil, err
		}
		l.Color, l.Width = color.RGBA{110, 110, 110, 255}, vg.Points(1)
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		p.Legend.Add("stream", l)
	}
	p.Legend.Top = legendTop
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	p.X.Tick.Marker, p.Y.Tick.Marker = plainTicks{}, plainTicks{}
	// Room for the legend above (or below) the curves.
	lo, hi := ref, ref
	for _, b := range bands {
		for i := range b.lo {
			lo, hi = nanMin(lo, b.lo[i]), nanMax(hi, b.hi[i])
		}
	}
	span := hi - lo
	if !(span > 0) {
		span = math.Max(math.Abs(hi), 1)
	}
	if legendTop {
		p.Y.Min, p.Y.Max = lo-0.05*span, hi+0.4*span
	} else {
		p.Y.Min, p.Y.Max = lo-0.4*span, hi+0.05*span
	}
	return p, nil
}

// nanMin and nanMax are math.Min and math.Max ignoring a NaN a.
func nanMin(a, b float64) float64 {
	if math.IsNaN(a) {
		return b
	}
	return math.Min(a, b)
}

func nanMax(a, b float64) float64 {
	if math.IsNaN(a) {
		return b
	}
	return math.Max(a, b)
}

// plainTicks are plot.DefaultTicks labelled in plain decimal notation
// (1000, not 1000.00 or 1e+03; 0.3, not 0.30000000000000004).
type plainTicks struct{}

// Ticks returns the ticks of [lo, hi].
func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo < hi) {
		return nil
	}
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = fmt.Sprintf("%.8g", ticks[i].Value)
		}
	}
	return ticks
}

// spread says whether a band has a non-zero width somewhere.
func spread(b band) bool {
	for i := range b.lo {
		if b.hi[i] > b.lo[i] {
			return true
		}
	}
	return false
}

// writePanels lays the panels out in two columns and writes them to path as
// one PNG, atomically.
func writePanels(path string, panels []*plot.Plot) error {
	cols := min(2, len(panels))
	rows := (len(panels) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	for i, p := range panels {
		grid[i/cols][i%cols] = p
	}
	return analysis.WriteTiles(path, grid, 5*vg.Inch, 3.5*vg.Inch)
}
