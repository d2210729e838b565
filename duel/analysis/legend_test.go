package analysis

import (
	"fmt"
	"path/filepath"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// TestLegendRightLayout checks numerically that the legend of a class-lines
// plot stands beside the data area, never over it: every column lies right
// of the data area and inside the image, its top level with the data
// area's top, no taller than the data area, and every entry is in one.
func TestLegendRightLayout(t *testing.T) {
	cifar := []string{"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"}
	long := make([]string, 20)
	for i := range long {
		long[i] = fmt.Sprintf("a rather long class name %d", i)
	}
	for _, tc := range []struct {
		name     string
		classes  int
		names    []string
		w, h     vg.Length
		wantCols int // 0: any
	}{
		{"one class", 1, nil, classLinesW * vg.Inch, classLinesH * vg.Inch, 1},
		{"cifar10", 10, cifar, classLinesW * vg.Inch, classLinesH * vg.Inch, 1},
		{"20 long names", 20, long, classLinesW * vg.Inch, classLinesH * vg.Inch, 0},
		{"20 classes, short figure", 20, nil, classLinesW * vg.Inch, 2 * vg.Inch, 0},
		{"100 classes, no legend", 100, nil, classLinesW * vg.Inch, classLinesH * vg.Inch, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			xs := []float64{1, 2, 3, 4}
			counts := make([][]int, len(xs))
			for i := range counts {
				counts[i] = make([]int, tc.classes)
				counts[i][0] = 10 * (i + 1) // the dominant class climbs to the y maximum at the right end
				for c := 1; c < tc.classes; c++ {
					counts[i][c] = c % 5
				}
			}
			p, entries, err := classLinesPlot("t", "step", xs, counts, tc.names)
			if err != nil {
				t.Fatal(err)
			}
			if want := tc.classes; want > 20 {
				if len(entries) != 0 {
					t.Errorf("%d legend entries for %d classes, expected none", len(entries), want)
				}
			} else if len(entries) != want {
				t.Errorf("%d legend entries, expected %d", len(entries), want)
			}
			dc := draw.New(vgimg.New(tc.w, tc.h))
			plotC, cols := legendRightLayout(p, entries, dc)
			data := p.DataCanvas(plotC).Rectangle
			if tc.wantCols > 0 && len(cols) != tc.wantCols {
				t.Errorf("%d legend columns, expected %d", len(cols), tc.wantCols)
			}
			if data.Max.X-data.Min.X < tc.w/2 {
				t.Errorf("data area %v wide of %v: the legend takes too much", data.Max.X-data.Min.X, tc.w)
			}
			left := data.Max.X
			for i, col := range cols {
				r := col.rect
				switch {
				case r.Min.X < left:
					t.Errorf("column %d %v overlaps the data area %v or the previous column (right edge %v)", i, r, data, left)
				case r.Max.X > tc.w:
					t.Errorf("column %d %v runs past the image's width %v", i, r, tc.w)
				case r.Max.Y != data.Max.Y:
					t.Errorf("column %d top %v, the data area's %v", i, r.Max.Y, data.Max.Y)
				case r.Min.Y < data.Min.Y-1e-9:
					t.Errorf("column %d %v taller than the data area %v", i, r, data)
				}
				left = r.Max.X
			}
			if len(entries) == 0 && (len(cols) != 0 || plotC.Rectangle != dc.Rectangle) {
				t.Errorf("no entries: %d columns, plot canvas %v of %v", len(cols), plotC.Rectangle, dc.Rectangle)
			}
		})
	}
}

func TestPlotClassLines(t *testing.T) {
	dir := plotDir(t)
	p := filepath.Join(dir, "memory_classes.png")
	counts := [][]int{{5, 3, 2}, {12, 3, 1}, {30, 1, 0}}
	if err := PlotClassCounts(p, "Rows of each class", []float64{2, 4, 6}, counts, []string{"airplane", "automobile", "bird"}); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, p)
	for _, tc := range []struct {
		name   string
		xs     []float64
		counts [][]int
	}{
		{"no points", nil, nil},
		{"lengths differ", []float64{1, 2}, counts},
		{"no classes", []float64{1}, [][]int{{}}},
	} {
		if err := PlotClassLines(filepath.Join(dir, "bad.png"), "bad", "x", tc.xs, tc.counts, nil); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

// TestRenderLegendRightNoEntries draws a plot without a legend.
func TestRenderLegendRightNoEntries(t *testing.T) {
	p := plot.New()
	l, _ := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 1}})
	p.Add(l)
	if b, err := RenderLegendRight(p, nil, 4*vg.Inch, 3*vg.Inch); err != nil || len(b) == 0 {
		t.Errorf("%d bytes, %v", len(b), err)
	}
}
