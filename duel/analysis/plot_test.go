package analysis

import (
	"bytes"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// plotDir is where the plot tests write; DUEL_PLOT_DIR keeps them for a look.
func plotDir(t *testing.T) string {
	if d := os.Getenv("DUEL_PLOT_DIR"); d != "" {
		return d
	}
	return t.TempDir()
}

// checkPNG fails unless path is a PNG of at least 300 x 200 pixels.
func checkPNG(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if r := img.Bounds(); r.Dx() < 300 || r.Dy() < 200 {
		t.Errorf("%s: %v", path, r)
	}
}

func TestPlotEmbedding(t *testing.T) {
	dir := plotDir(t)
	r := rand.New(rand.NewPCG(1, 2))
	x, labels := blobs(r, 200, 10, 12, 2)
	res, err := TSNE(x, 200, 10, TSNEConfig{Iterations: 500})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"}
	p := filepath.Join(dir, "tsne.png")
	if err := PlotEmbedding(p, "t-SNE of test features", res.Y, labels, names); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, p)
	if err := PlotEmbedding(filepath.Join(dir, "empty.png"), "empty", nil, nil, nil); err != nil {
		t.Errorf("empty embedding: %v", err)
	}
	if err := PlotEmbedding(filepath.Join(dir, "bad.png"), "bad", []float64{1}, []int32{0}, nil); err == nil {
		t.Error("mismatched lengths: no error")
	}
}

func TestPlotClassFrequency(t *testing.T) {
	dir := plotDir(t)
	p := filepath.Join(dir, "class_frequency.png")
	if err := PlotClassFrequency(p, "Class frequency in memory", []int{50, 900, 80, 70, 60, 120, 30, 20, 10, 708}, []string{"airplane", "automobile"}); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, p)
	many := make([]int, 100)
	for i := range many {
		many[i] = i * 3 % 17
	}
	if err := PlotClassFrequency(filepath.Join(dir, "many.png"), "100 classes", many, nil); err != nil {
		t.Fatal(err)
	}
	if err := PlotClassFrequency(filepath.Join(dir, "none.png"), "none", nil, nil); err == nil {
		t.Error("no classes: no error")
	}
}

func TestPlotTrainingCurves(t *testing.T) {
	dir := plotDir(t)
	var sb strings.Builder
	for s := 0; s <= 200; s += 10 {
		sb.WriteString(`{"step":` + itoa(s) + `,"loss":` + ftoa(5-float64(s)/100) + `,"lr":0.05,"img_per_s":` + ftoa(100+float64(s%30)) + `,"memory_class_entropy":` + ftoa(1.5+float64(s)/1000) + `,"custom":1}` + "\n")
	}
	m, err := ParseMetrics(strings.NewReader(sb.String()), "m")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "training_curves.png")
	keys, err := PlotTrainingCurves(p, m, "custom")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"loss", "lr", "img_per_s", "memory_class_entropy"}; !slices.Equal(keys, want) {
		t.Errorf("panels %v, expected %v", keys, want)
	}
	checkPNG(t, p)
	// odd number of panels, one point
	m, _ = ParseMetrics(strings.NewReader(`{"step":0,"loss":1,"lr":2,"img_per_s":3}`), "m")
	if _, err := PlotTrainingCurves(filepath.Join(dir, "one.png"), m); err != nil {
		t.Fatal(err)
	}
	m, _ = ParseMetrics(strings.NewReader(`{"step":0}`), "m")
	if _, err := PlotTrainingCurves(filepath.Join(dir, "none.png"), m); err == nil {
		t.Error("nothing to draw: no error")
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.txt")
	for _, s := range []string{"first", "second"} {
		if err := WriteFileAtomic(p, []byte(s)); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != s {
			t.Errorf("read %q, expected %q", b, s)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files left, expected 1", len(ents))
	}
	if err := WriteFileAtomic(filepath.Join(dir, "no", "such", "x"), nil); err == nil || !strings.Contains(err.Error(), "no/such/x") {
		t.Errorf("missing directory: %v", err)
	}
}

func itoa(i int) string     { return strconv.Itoa(i) }
func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func TestExactTicks(t *testing.T) {
	for _, r := range [][2]float64{{1.69, 1.81}, {0, 1}, {1e-5, 1.2e-5}, {-3, 1e6}, {6.2, 7.2}, {700, 2100}, {5, 5}} {
		seen := map[string]bool{}
		for _, tk := range (exactTicks{}).Ticks(r[0], r[1]) {
			if tk.Label == "" {
				continue
			}
			if seen[tk.Label] {
				t.Errorf("range %v: label %q twice", r, tk.Label)
			}
			seen[tk.Label] = true
			if v, err := strconv.ParseFloat(tk.Label, 64); err != nil || math.Abs(v-tk.Value) > 1e-6*(r[1]-r[0]) {
				t.Errorf("range %v: label %q for tick %v", r, tk.Label, tk.Value)
			}
		}
	}
}

// TestEmbeddingRanges: one scale on both axes, every point inside, the
// points centred left of the legend's room.
func TestEmbeddingRanges(t *testing.T) {
	for _, tc := range []struct {
		name string
		y    []float64
	}{
		{"wide strip", []float64{-70, -15, 75, 12, 0, 0}},
		{"tall strip", []float64{-5, -80, 5, 90}},
		{"one point", []float64{3, 4}},
		{"coincident", []float64{1, 1, 1, 1}},
	} {
		xmin, xmax, ymin, ymax := embeddingRanges(tc.y)
		sx, sy := (xmax-xmin)/embedDataW, (ymax-ymin)/embedDataH
		if !(sx > 0) || math.Abs(sx-sy) > 1e-9*sx {
			t.Errorf("%s: %v units per inch across, %v up", tc.name, sx, sy)
		}
		legend := xmin + (xmax-xmin)/(1+embedLegendRoom)
		for i := 0; i < len(tc.y); i += 2 {
			if tc.y[i] < xmin || tc.y[i] > legend || tc.y[i+1] < ymin || tc.y[i+1] > ymax {
				t.Errorf("%s: point (%v, %v) outside x [%v, %v] (legend from %v), y [%v, %v]", tc.name, tc.y[i], tc.y[i+1], xmin, xmax, legend, ymin, ymax)
			}
		}
	}
}

// TestCurvePanelRange checks the y range of a curve's panel: a constant
// series gets a range around its value (an lr of 0.001 was drawn on
// gonum's ±1 and read as 0.0), a varying one is left to the data.
func TestCurvePanelRange(t *testing.T) {
	for _, tc := range []struct {
		name             string
		vals             []float64
		wantMin, wantMax float64 // NaN: left to gonum
	}{
		{"constant lr", []float64{0.001, 0.001, 0.001}, 0.0009, 0.0011},
		{"one point", []float64{3}, 2.7, 3.3},
		{"zero", []float64{0, 0}, -1e-12, 1e-12},
		{"negative", []float64{-2, -2}, -2.2, -1.8},
		{"varying", []float64{1, 2, 3}, math.NaN(), math.NaN()},
	} {
		steps := make([]float64, len(tc.vals))
		for i := range steps {
			steps[i] = float64(i + 1)
		}
		p, err := curvePanel(tc.name, steps, tc.vals, palette[0])
		if err != nil {
			t.Fatal(err)
		}
		if math.IsNaN(tc.wantMin) {
			if p.Y.Min > 1 || p.Y.Max < 3 {
				t.Errorf("%s: y range [%v, %v], want the data's", tc.name, p.Y.Min, p.Y.Max)
			}
			continue
		}
		if math.Abs(p.Y.Min-tc.wantMin) > 1e-15 || math.Abs(p.Y.Max-tc.wantMax) > 1e-15 {
			t.Errorf("%s: y range [%v, %v], want [%v, %v]", tc.name, p.Y.Min, p.Y.Max, tc.wantMin, tc.wantMax)
		}
	}
}
