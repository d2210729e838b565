package reproduce

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/duel/train"
)

func TestLookupAndValidate(t *testing.T) {
	if _, err := Lookup("table9"); err == nil || !strings.Contains(err.Error(), "smoke") {
		t.Errorf("unknown preset: got %v, want an error listing the presets", err)
	}
	g, err := Lookup("table1-cpu")
	if err != nil {
		t.Fatal(err)
	}
	g.Methods[0], g.Overrides[0] = "changed", "changed"
	if again, _ := Lookup("table1-cpu"); again.Methods[0] != "moco" || again.Overrides[0] != cpuProtocol[0] {
		t.Error("Lookup returned a grid sharing the registry's slices")
	}
	for _, tc := range []struct {
		name string
		edit func(*Grid)
		want string
	}{
		{"no methods", func(g *Grid) { g.Methods = nil }, "--methods: empty"},
		{"bad method", func(g *Grid) { g.Methods = []string{"moco", "mocoo"} }, `--methods: variant "mocoo": --method: got "mocoo"`},
		{"bad variant value", func(g *Grid) { g.Methods = []string{"dmoco:mem-refresh=-1"} },
			"run dmoco_mem-refresh--1-rho0.75-seed0 (training preset `tiny`, overrides `knn-every=2 memory-size=32`, variant dmoco:mem-refresh=-1): --mem-refresh: got -1, expected an integer >= 0"},
		{"variant invalid for method", func(g *Grid) { g.Methods = []string{"simclr:negatives=memory"} }, "run simclr_negatives-memory-rho0.75-seed0"},
		{"variant setting the method never reads", func(g *Grid) { g.Methods = []string{"simclr:memory-size=32"} },
			"run simclr_memory-size-32-rho0.75-seed0 (training preset `tiny`, overrides `knn-every=2 memory-size=32`, variant simclr:memory-size=32): --memory-size: got 32, expected nothing (simclr has no memory)"},
		{"rho 1.5", func(g *Grid) { g.RhoMax = []float64{1.5} }, "--rho: got 1.5,"}, {"rho negative", func(g *Grid) { g.RhoMax = []float64{-0.1} }, "--rho: got -0.1,"},
		{"rho twice", func(g *Grid) { g.RhoMax = []float64{0.5, 0.5} }, "--rho: got 0.5 twice"},
		{"zero seeds", func(g *Grid) { g.Seeds = 0 }, "--seeds"},
		{"zero epochs", func(g *Grid) { g.ProbeEpochs = 0 }, "--probe-epochs"},
		{"negative probe limit", func(g *Grid) { g.ProbeLimit = -2 }, "--probe-limit: got -2"},
		{"negative cluster limit", func(g *Grid) { g.ClusterLimit = -2 }, "--cluster-limit: got -2, expected an integer >= 0 (0 = the whole test split)"},
		{"bad kind", func(g *Grid) { g.Kind = "table3" }, `preset smoke: kind "table3"`},
		{"unknown override", func(g *Grid) { g.Overrides = []string{"stepz=3"} }, `preset smoke: override "stepz=3": unknown training flag --stepz`},
		{"bad override value", func(g *Grid) { g.Overrides = []string{"steps=many"} }, `preset smoke: override "steps=many": --steps: got "many", expected an integer`},
		{"override not key=value", func(g *Grid) { g.Overrides = []string{"steps"} }, `preset smoke: override "steps": "steps" is not key=value`},
		{"override of the seed", func(g *Grid) { g.Overrides = []string{"seed=4"} }, `preset smoke: override "seed=4": seed is set by the grid's seeds`},
		{"override out of range", func(g *Grid) { g.Overrides = []string{"batch=1"} }, "run moco-rho0.75-seed0 (training preset `tiny`, overrides `batch=1`, variant moco): --batch: got 1"},
		{"bad --set", func(g *Grid) { g.Set = []string{"knn-every=often"} }, `--set "knn-every=often": --knn-every: got "often", expected an integer`},
		{"unknown training preset", func(g *Grid) { g.TrainPreset = "huge" }, `preset smoke: training preset for moco: --preset: got "huge"`},
	} {
		g, _ := Lookup("smoke")
		tc.edit(&g)
		if err := g.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error starting with %q", tc.name, err, tc.want)
		}
	}
}

func TestPresets(t *testing.T) {
	for _, name := range Names() {
		g, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Validate(); err != nil {
			t.Errorf("preset %s: %v", name, err)
		}
	}
	for _, tc := range []struct {
		name    string
		kind    Kind
		methods []string
		rho     []float64
	}{
		{"table1-cpu", Table1, []string{"moco", "dmoco", dmocoRemedy, "simclr", "dsimclr"}, []float64{0.1, 0.25, 0.5, 0.75}},
		{"table2-cpu", Table2, []string{"moco", "dmoco", dmocoRemedy, "dsimclr"}, []float64{0.1, 0.5, 0.75}},
		{"f3-cpu", Ablation, []string{"simclr", "dsimclr:negatives=memory,eps=0", "dsimclr:negatives=mixed,eps=0", "dsimclr"}, []float64{0.75}},
	} {
		g, _ := Lookup(tc.name)
		if g.Kind != tc.kind || !slices.Equal(g.Methods, tc.methods) || !slices.Equal(g.RhoMax, tc.rho) || g.Seeds != 3 {
			t.Errorf("%s: %+v", tc.name, g)
		}
		if !slices.Equal(g.Overrides, cpuProtocol) || !strings.Contains(g.Description, strings.Join(cpuProtocol, " ")) {
			t.Errorf("%s: overrides %v, description %q; want cpuProtocol in both", tc.name, g.Overrides, g.Description)
		}
		cfg, err := g.runConfig(Variant{Method: "dmoco"}, 0.5, 2)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Dataset != "cifar10" || cfg.Steps != 2000 || cfg.KNNK != 200 || !cfg.KeepCheckpoints || cfg.LogEvery != 50 {
			t.Errorf("%s: cpuProtocol not applied: %+v", tc.name, cfg)
		}
	}
}

func TestRunConfigOrder(t *testing.T) {
	g, _ := Lookup("smoke")
	g.Overrides = []string{"steps=7", "knn-every=3", "lr=0.01"}
	g.Set = []string{"steps=9", "batch=8"}
	v, err := ParseVariant("dsimclr:batch=12,eps=0")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := g.runConfig(v, 0.25, 2)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := train.Preset("tiny", "dsimclr")
	want.Steps, want.KNNEvery, want.LR, want.Batch, want.Eps = 9, 3, 0.01, 12, 0
	want.Imbalance, want.RhoMax, want.Seed = "dominant", 0.25, 2
	if cfg != want {
		t.Errorf("runConfig:\n got %+v\nwant %+v", cfg, want)
	}
}

func TestRunsSeedMajor(t *testing.T) {
	g, _ := Lookup("smoke")
	g.Methods, g.RhoMax, g.Seeds = []string{"moco", "dsimclr:eps=0"}, []float64{0.1, 0.5}, 2
	var got []string
	for _, k := range g.runs() {
		got = append(got, k.name())
	}
	var want []string
	for seed := 0; seed < 2; seed++ {
		for _, m := range []string{"moco", "dsimclr_eps-0"} {
			for _, rho := range []string{"0.1", "0.5"} {
				want = append(want, fmt.Sprintf("%s-rho%s-seed%d", m, rho, seed))
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("runs:\n got %v\nwant %v", got, want)
	}
}

func TestCheckConfig(t *testing.T) {
	dir := t.TempDir()
	g, _ := Lookup("smoke")
	cfg, err := g.runConfig(Variant{Method: "dmoco"}, 0.75, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkConfig(filepath.Join(dir, "none"), cfg, ""); err != nil {
		t.Errorf("no run yet: %v", err)
	}
	// What train.Train writes: the warm-up cut when longer than the run.
	cfg.Steps, cfg.WarmupSteps = 1, 1
	if err := train.WriteConfig(dir, ptr(effective(cfg))); err != nil {
		t.Fatal(err)
	}
	if err := checkConfig(dir, cfg, ""); err != nil {
		t.Errorf("same settings: %v", err)
	}
	other := cfg
	other.Workers, other.Data = 3, "/elsewhere"
	if err := checkConfig(dir, other, ""); err != nil {
		t.Errorf("only workers and data differ: %v", err)
	}
	other = cfg
	other.Steps, other.Policy = 5, "fifo"
	err = checkConfig(dir, other, "")
	if err == nil || !strings.Contains(err.Error(), `policy "duel", expected "fifo"; steps 1, expected 5`) || !strings.Contains(err.Error(), "delete "+dir) {
		t.Errorf("other settings: got %v", err)
	}
	// A config.json written before a field existed: the field reads as zero.
	b, err := os.ReadFile(filepath.Join(dir, train.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	older := strings.Replace(string(b), `"max_age": 0,`, "", 1)
	if older == string(b) {
		t.Fatalf("config.json without max_age: %s", b)
	}
	if err := os.WriteFile(filepath.Join(dir, train.ConfigFile), []byte(older), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkConfig(dir, cfg, ""); err != nil {
		t.Errorf("older config.json: %v", err)
	}
	other = cfg
	other.MaxAge = 8
	if err := checkConfig(dir, other, ""); err == nil || !strings.Contains(err.Error(), "max-age 0, expected 8") {
		t.Errorf("older config.json, other max-age: got %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, train.ConfigFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkConfig(dir, cfg, ""); err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("torn config.json: got %v", err)
	}
}

// TestCheckConfigFolderData checks that the data directory, ignored for a
// dataset found in a cache (which may move), is compared for a folder
// dataset, whose directory is the dataset: a grid over another folder
// must not reuse runs trained on the first.
func TestCheckConfigFolderData(t *testing.T) {
	dir := t.TempDir()
	g, _ := Lookup("smoke")
	cfg, err := g.runConfig(Variant{Method: "moco"}, 0.75, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Dataset, cfg.Data = "folder", filepath.Join(dir, "fA")
	if err := train.WriteConfig(dir, ptr(effective(cfg))); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, tc := range []struct {
		data, want string // want "" = the same run
	}{
		{filepath.Join(dir, "fA"), ""},
		{"fA", ""}, // relative to the working directory
		{filepath.Join(dir, "fA") + "/", ""},
		{filepath.Join(dir, "fB"), fmt.Sprintf("data %q, expected %q (the folder dataset)", filepath.Join(dir, "fA"), filepath.Join(dir, "fB"))},
	} {
		want := cfg
		want.Data = tc.data
		err := checkConfig(dir, want, "")
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("data %s: %v, want %q", tc.data, err, tc.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestGridSettingsOnlyWhereRead checks that a grid-wide --set that only
// some methods read is applied to those and leaves the others' preset
// values (config.json then records what the run used).
func TestGridSettingsOnlyWhereRead(t *testing.T) {
	g, _ := Lookup("smoke")
	g.Methods = []string{"simclr", "dmoco"}
	g.Set = []string{"memory-size=32", "admission=compete"}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	vs, err := parseVariants(g.Methods)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		cfg, err := g.runConfig(v, 0.75, 0)
		if err != nil {
			t.Fatal(err)
		}
		preset, _ := train.Preset(g.TrainPreset, v.Method)
		want, adm := 32, "compete"
		if v.Method == "simclr" {
			want, adm = preset.MemorySize, preset.Admission
		}
		if cfg.MemorySize != want || cfg.Admission != adm {
			t.Errorf("%s: memory size %d, admission %s, want %d, %s", v, cfg.MemorySize, cfg.Admission, want, adm)
		}
	}
}
