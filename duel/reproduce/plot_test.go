package reproduce

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestPlotRemovesStalePlots writes a report into a directory holding every
// plot of curvePlots from an earlier report and a file of the user's: the
// plots drawn this time are there, the others are gone, the user's file
// stays.
func TestPlotRemovesStalePlots(t *testing.T) {
	all := []string{"knn_top1.png", "memory_age_mean.png", "memory_class_entropy.png"}
	for _, tc := range []struct {
		name    string
		kind    Kind
		methods []string
		noKNN   bool     // the runs have no kNN curve
		want    []string // the plots after, sorted
	}{
		{"table2 draws every plot", Table2, []string{"moco", "dmoco"}, false, all},
		{"table1 draws no memory plot", Table1, []string{"moco", "dmoco"}, false, []string{"knn_top1.png"}},
		{"no kNN curve", Table2, []string{"moco", "dmoco"}, true, []string{"memory_age_mean.png", "memory_class_entropy.png"}},
		{"no memory curve", Table2, []string{"simclr"}, false, []string{"knn_top1.png"}},
		{"no curve", Table1, []string{"simclr"}, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, _ := Lookup("smoke")
			g.Kind, g.Methods, g.RhoMax = tc.kind, tc.methods, []float64{0.1, 0.75}
			rep := fakeRuns(t, g, func(string, float64, int) float64 { return 0.5 })
			if tc.noKNN {
				for i := range rep.Runs {
					rep.Runs[i].Curves.KNNTop1 = Curve{}
				}
			}
			dir := t.TempDir()
			for _, f := range append(slices.Clone(all), "mine.png", "verdict.md") {
				if err := os.WriteFile(filepath.Join(dir, f), []byte("earlier"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := rep.Write(dir); err != nil {
				t.Fatal(err)
			}
			var listed []string
			for _, p := range rep.Plots {
				listed = append(listed, p.File)
			}
			slices.Sort(listed)
			if !slices.Equal(listed, tc.want) {
				t.Errorf("Plots %q, want %q", listed, tc.want)
			}
			for _, f := range all {
				_, err := os.Stat(filepath.Join(dir, f))
				if drawn := slices.Contains(tc.want, f); drawn != (err == nil) {
					t.Errorf("%s: drawn %v, stat: %v", f, drawn, err)
				}
				if slices.Contains(tc.want, f) {
					decodePNG(t, filepath.Join(dir, f))
				}
			}
			for _, f := range []string{"mine.png", "verdict.md"} {
				if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || string(b) != "earlier" {
					t.Errorf("%s: %q, %v, want it left as it was", f, b, err)
				}
			}
		})
	}
}
