package reproduce

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/duel/data"
)

// synthetic is a 4-class set of 8x8 images whose classes differ in colour.
func synthetic(n int, seed uint64) *data.Dataset {
	r := rand.New(rand.NewPCG(seed, 1))
	ds := &data.Dataset{Name: "synthetic", Split: "train", H: 8, W: 8, C: 3, Classes: []string{"a", "b", "c", "d"}}
	for i := 0; i < n; i++ {
		c := i % 4
		ds.Labels = append(ds.Labels, int32(c))
		for p := 0; p < 64; p++ {
			for ch := 0; ch < 3; ch++ {
				ds.Pixels = append(ds.Pixels, uint8(40+60*((c+ch)%4)+r.IntN(40)))
			}
		}
	}
	return ds
}

func smokeGrid(t *testing.T) Grid {
	t.Helper()
	g, err := Lookup("smoke")
	if err != nil {
		t.Fatal(err)
	}
	g.Steps, g.ProbeLimit = 2, 0
	return g
}

func TestRunWritesTablesAndSkipsFinishedRuns(t *testing.T) {
	out := t.TempDir()
	g := smokeGrid(t)
	var log strings.Builder
	opts := Options{Out: out, Log: &log, Train: synthetic(64, 1), Test: synthetic(32, 2)}
	rep, err := Run(context.Background(), g, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 2 || len(rep.Cells) != 2 {
		t.Fatalf("got %d runs, %d cells, want 2 and 2", len(rep.Runs), len(rep.Cells))
	}
	for _, r := range rep.Runs {
		if r.Steps != 2 || !(r.Top1 >= 0 && r.Top1 <= 1) {
			t.Errorf("run %+v: want 2 steps and a top-1 in [0, 1]", r)
		}
		if r.MemoryClassEntropy == nil {
			t.Errorf("run %s: memory method without memory_class_entropy", r.Method)
		}
		if _, err := os.Stat(filepath.Join(r.Dir, "model.safetensors")); err != nil {
			t.Errorf("run %s: %v", r.Method, err)
		}
	}
	var saved Report
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &saved); err != nil || len(saved.Cells) != 2 {
		t.Fatalf("results.json: %v, %d cells", err, len(saved.Cells))
	}
	table, err := os.ReadFile(filepath.Join(out, "table.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| moco |", "| dmoco |", "ρmax 0.75", "Memory class entropy"} {
		if !strings.Contains(string(table), want) {
			t.Errorf("table.md lacks %q:\n%s", want, table)
		}
	}

	// A second call finds every result saved and trains nothing.
	log.Reset()
	again, err := Run(context.Background(), g, opts)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(log.String(), "saved earlier") != 2 {
		t.Errorf("second run retrained:\n%s", log.String())
	}
	if again.Cells[0].Top1Mean != rep.Cells[0].Top1Mean {
		t.Errorf("saved result changed: %v vs %v", again.Cells[0].Top1Mean, rep.Cells[0].Top1Mean)
	}
}

func TestLookupAndValidate(t *testing.T) {
	if _, err := Lookup("table9"); err == nil || !strings.Contains(err.Error(), "smoke") {
		t.Errorf("unknown preset: got %v, want an error listing the presets", err)
	}
	g, err := Lookup("table1-cpu")
	if err != nil {
		t.Fatal(err)
	}
	g.Methods[0] = "changed"
	if again, _ := Lookup("table1-cpu"); again.Methods[0] != "moco" {
		t.Error("Lookup returned a grid sharing the registry's slices")
	}
	for _, tc := range []struct {
		name string
		edit func(*Grid)
		flag string
	}{
		{"no methods", func(g *Grid) { g.Methods = nil }, "--methods"},
		{"rho 1", func(g *Grid) { g.RhoMax = []float64{1} }, "--rho"},
		{"zero seeds", func(g *Grid) { g.Seeds = 0 }, "--seeds"},
		{"negative steps", func(g *Grid) { g.Steps = -1 }, "--steps"},
		{"zero epochs", func(g *Grid) { g.ProbeEpochs = 0 }, "--probe-epochs"},
	} {
		g, _ := Lookup("smoke")
		tc.edit(&g)
		if err := g.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.flag) {
			t.Errorf("%s: got %v, want an error naming %s", tc.name, err, tc.flag)
		}
	}
}

func TestMeanStd(t *testing.T) {
	for _, tc := range []struct {
		x         []float64
		mean, std float64
	}{
		{[]float64{0.5}, 0.5, 0},
		{[]float64{0.7, 0.8, 0.9}, 0.8, 0.1},
	} {
		m, s := meanStd(tc.x)
		if math.Abs(m-tc.mean) > 1e-12 || math.Abs(s-tc.std) > 1e-12 {
			t.Errorf("meanStd(%v) = %v, %v; want %v, %v", tc.x, m, s, tc.mean, tc.std)
		}
	}
}
