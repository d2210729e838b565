package analysis

import (
	"bytes"
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// LegendEntry is one row of a legend drawn beside a plot's data area (see
// RenderLegendRight): its label and the thumbnail of its line or glyphs.
type LegendEntry struct {
	Label string
	Thumb plot.Thumbnailer
}

// Sizes of a legend drawn beside the data area.
const (
	legendGap         = 10 // points between the data area (or a column) and the next column
	legendMargin      = 10 // points between the last column and the image's right edge
	legendFontMax     = 10 // points: the legend's text when it fits
	legendFontMin     = 6  // points: the smallest text the legend shrinks to
	legendMaxWidthFrc = 0.4
)

// legendColumn is one column of a legend beside the data area: its entries
// and the rectangle they take.
type legendColumn struct {
	legend plot.Legend
	rect   vg.Rectangle
}

// legendRightLayout lays out p and its legend entries on c: the legend in
// columns to the right of the axes, outside the data area, its top level
// with the data area's top, each column no taller than the data area. The
// text shrinks from legendFontMax down to legendFontMin points while the
// columns take more than legendMaxWidthFrc of the width. It returns the
// canvas for the plot (title, axes, data) and the columns.
func legendRightLayout(p *plot.Plot, entries []LegendEntry, c draw.Canvas) (draw.Canvas, []legendColumn) {
	if len(entries) == 0 {
		return c, nil
	}
	// The data area's height does not depend on the plot's width.
	data := p.DataCanvas(c).Rectangle
	dataH := data.Max.Y - data.Min.Y
	var cols []legendColumn
	var width vg.Length
	for size := legendFontMax; size >= legendFontMin; size-- {
		cols, width = legendColumns(entries, vg.Points(float64(size)), dataH)
		if width <= vg.Length(legendMaxWidthFrc)*(c.Max.X-c.Min.X) {
			break
		}
	}
	plotC := draw.Crop(c, 0, -(width + vg.Points(legendMargin)), 0, 0)
	x := plotC.Max.X + vg.Points(legendGap)
	for i := range cols {
		w := cols[i].rect.Max.X
		h := cols[i].rect.Max.Y
		cols[i].rect = vg.Rectangle{Min: vg.Point{X: x, Y: data.Max.Y - h}, Max: vg.Point{X: x + w, Y: data.Max.Y}}
		x += w + vg.Points(legendGap)
	}
	return plotC, cols
}

// legendColumns splits entries into columns of at most as many rows as fit
// in height at the text size size. Each column's rect holds its size only
// (Min at the origin); width is the columns' total width with the gaps
// before each.
func legendColumns(entries []LegendEntry, size, height vg.Length) ([]legendColumn, vg.Length) {
	probe := newSideLegend(size)
	probe.Add(entries[0].Label, entries[0].Thumb)
	row := probe.Rectangle(draw.Canvas{}).Size().Y
	rows := len(entries)
	if row > 0 {
		rows = max(1, min(rows, int(height/row)))
	}
	var cols []legendColumn
	var width vg.Length
	for start := 0; start < len(entries); start += rows {
		l := newSideLegend(size)
		for _, e := range entries[start:min(start+rows, len(entries))] {
			l.Add(e.Label, e.Thumb)
		}
		s := l.Rectangle(draw.Canvas{}).Size()
		cols = append(cols, legendColumn{legend: l, rect: vg.Rectangle{Max: s}})
		width += vg.Points(legendGap) + s.X
	}
	return cols, width
}

// newSideLegend returns an empty legend, text after the thumbnails, of
// text size size.
func newSideLegend(size vg.Length) plot.Legend {
	l := plot.NewLegend()
	l.Left, l.Top = true, true
	l.TextStyle.Font = font.From(l.TextStyle.Font, size)
	l.ThumbnailWidth = 1.6 * size
	return l
}

// RenderLegendRight draws p at w x h with the legend entries beside the
// data area, on its right (see legendRightLayout), so that no entry hides
// a curve whatever the data; p's own legend is left empty. It returns the
// PNG bytes.
func RenderLegendRight(p *plot.Plot, entries []LegendEntry, w, h vg.Length) ([]byte, error) {
	img := vgimg.New(w, h)
	dc := draw.New(img)
	plotC, cols := legendRightLayout(p, entries, dc)
	p.Draw(plotC)
	for _, col := range cols {
		col.legend.Draw(draw.Canvas{Canvas: dc.Canvas, Rectangle: col.rect})
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("rendering PNG: %w", err)
	}
	return buf.Bytes(), nil
}
