package train

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/duel/data"
	"github.com/duel-ssl/duel/duel/ssl"
	"github.com/duel-ssl/duel/nn/safetensors"
	"github.com/duel-ssl/duel/tensor"
)

// synthetic returns n 8x8 RGB images of 4 classes: each class has its own
// mean colour, plus noise.
func synthetic(n int, seed uint64) *data.Dataset {
	r := rand.New(rand.NewPCG(seed, 1))
	ds := &data.Dataset{Name: "synthetic", Split: "train", H: 8, W: 8, C: 3,
		Classes: []string{"a", "b", "c", "d"}}
	for i := 0; i < n; i++ {
		c := i % 4
		ds.Labels = append(ds.Labels, int32(c))
		for p := 0; p < 64; p++ {
			for ch := 0; ch < 3; ch++ {
				base := 40 + 60*((c+ch)%4)
				ds.Pixels = append(ds.Pixels, uint8(base+r.IntN(40)))
			}
		}
	}
	return ds
}

func tinyConfig(t *testing.T, method string) *Config {
	t.Helper()
	c, err := Preset("tiny", method)
	if err != nil {
		t.Fatal(err)
	}
	c.Workers = 2
	return &c
}

func tinyOptions(dir string) Options {
	return Options{Out: dir, Train: synthetic(64, 1), Test: synthetic(32, 2)}
}

// resumeTrain resumes the tiny run of c in dir for steps in all (the
// run's steps when 0), failing the test on an error.
func resumeTrain(t *testing.T, c *Config, dir string, steps int) {
	t.Helper()
	opts := tinyOptions(dir)
	opts.Resume = true
	if steps > 0 {
		c.Steps = steps
	}
	if _, err := Train(context.Background(), c, opts); err != nil {
		t.Fatal(err)
	}
}

func TestTrainEveryMethod(t *testing.T) {
	for _, name := range ssl.Names() {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			c := tinyConfig(t, name)
			c.Steps, c.KNNEvery = 3, 3
			res, err := Train(context.Background(), c, tinyOptions(dir))
			if err != nil {
				t.Fatal(err)
			}
			if res.Steps != 3 || res.Run != dir || !(res.ImgPerS > 0) || res.KNNTop1 == nil {
				t.Errorf("result %+v", res)
			}
			for _, f := range []string{ConfigFile, MetricsFile, ModelFile, "checkpoint/state.json", "checkpoint/optimizer.safetensors"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Error(err)
				}
			}
			ms, err := ReadMetrics(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) != 3 {
				t.Fatalf("%d metric lines, expected 3", len(ms))
			}
			info, _ := ssl.Lookup(name)
			for i, m := range ms {
				if m.Step != i+1 || !(m.LR > 0) || !(m.ImgPerS > 0) || m.Loss != m.Loss || !(m.DataWaitS >= 0 && m.DataWaitS <= m.ElapsedS) {
					t.Errorf("metric %d: %+v", i, m)
				}
				if (m.MemoryClassEntropy != nil) != info.Memory {
					t.Errorf("metric %d: memory_class_entropy present %v, method memory %v", i, m.MemoryClassEntropy != nil, info.Memory)
				}
			}
			if ms[2].KNNTop1 == nil {
				t.Errorf("no knn_top1 at the last step")
			}
			// The raw line has the contract's field names.
			b, _ := os.ReadFile(filepath.Join(dir, MetricsFile))
			var raw map[string]any
			if err := json.Unmarshal(bytes.SplitN(b, []byte("\n"), 2)[0], &raw); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"step", "loss", "lr", "img_per_s", "data_wait_s"} {
				if _, ok := raw[k]; !ok {
					t.Errorf("metrics line lacks %q: %s", k, b)
				}
			}
		})
	}
}

// TestResumeEquivalence trains 6 steps straight, and 3 steps interrupted
// then resumed for 3 more, and compares the final models and memories
// bit for bit.
func TestResumeEquivalence(t *testing.T) {
	for _, tc := range []struct {
		name, method    string
		refresh, maxAge int
	}{
		{"dmoco", "dmoco", 0, 0},
		{"dsimclr", "dsimclr", 0, 0},
		{"byol", "byol", 0, 0},
		{"dmoco-refresh-maxage", "dmoco", 8, 3},
		{"dsimclr-refresh", "dsimclr", 8, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tinyConfig(t, tc.method)
			c.Steps, c.CheckpointEvery = 6, 4
			c.MemRefresh, c.MaxAge = tc.refresh, tc.maxAge
			a := t.TempDir()
			if _, err := Train(context.Background(), c, tinyOptions(a)); err != nil {
				t.Fatal(err)
			}
			b := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			opts := tinyOptions(b)
			opts.AfterStep = func(s int) {
				if s == 3 {
					cancel()
				}
			}
			_, err := Train(ctx, c, opts)
			if !errors.Is(err, ErrInterrupted) {
				t.Fatalf("interrupted run: %v", err)
			}
			opts = tinyOptions(b)
			opts.Resume = true
			res, err := Train(context.Background(), c, opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.Steps != 6 {
				t.Errorf("resumed run ended at step %d", res.Steps)
			}
			fa, err := safetensors.Read(filepath.Join(a, ModelFile))
			if err != nil {
				t.Fatal(err)
			}
			fb, err := safetensors.Read(filepath.Join(b, ModelFile))
			if err != nil {
				t.Fatal(err)
			}
			for _, ta := range fa.Tensors {
				tb, ok := fb.Get(ta.Name)
				if !ok {
					t.Fatalf("%s missing after resume", ta.Name)
				}
				if ta.DType() == safetensors.I64 {
					if ta.Data.([]int64)[0] != tb.Data.([]int64)[0] {
						t.Errorf("%s: %v vs %v", ta.Name, ta.Data, tb.Data)
					}
					continue
				}
				x, _ := ta.ToTensor()
				y, _ := tb.ToTensor()
				if d := tensor.MaxAbsDiff(x, y); d != 0 {
					t.Errorf("%s differs by %g after resume", ta.Name, d)
				}
			}
			ma, _ := os.ReadFile(filepath.Join(a, "checkpoint", "memory.bin"))
			mb, _ := os.ReadFile(filepath.Join(b, "checkpoint", "memory.bin"))
			if !bytes.Equal(ma, mb) {
				t.Errorf("memories differ after resume")
			}
			la, _ := ReadMetrics(a)
			lb, _ := ReadMetrics(b)
			if len(la) != len(lb) {
				t.Fatalf("%d vs %d metric lines", len(la), len(lb))
			}
			for i := range la {
				if la[i].Step != lb[i].Step || la[i].Loss != lb[i].Loss {
					t.Errorf("metric %d: %+v vs %+v", i, la[i], lb[i])
				}
			}
		})
	}
}

func TestStepsZero(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig(t, "dmoco")
	c.Steps = 0
	res, err := Train(context.Background(), c, tinyOptions(dir))
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 0 {
		t.Errorf("steps %d", res.Steps)
	}
	st, err := readState(filepath.Join(dir, CheckpointDir))
	if err != nil || st.Step != 0 {
		t.Fatalf("state %+v, %v", st, err)
	}
	run, err := LoadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Step != 0 || run.Memory == nil || run.Memory.Len() != 0 {
		t.Errorf("loaded run: step %d, memory %v", run.Step, run.Memory)
	}
	// A second new run in the same directory is refused.
	if _, err := Train(context.Background(), c, tinyOptions(dir)); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("second run over a checkpoint: %v", err)
	}
}

func TestModelNamesMatchTorchvision(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig(t, "moco")
	c.Steps = 1
	if _, err := Train(context.Background(), c, tinyOptions(dir)); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Read(filepath.Join(dir, ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"conv1.weight", "bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var",
		"bn1.num_batches_tracked", "layer1.0.conv1.weight", "layer1.0.bn2.running_var", "layer2.0.downsample.0.weight",
		"layer2.0.downsample.1.running_mean", "layer4.1.conv2.weight", "projector.0.weight", "projector.0.bias",
		"key_encoder.conv1.weight", "key_encoder.layer4.1.bn2.num_batches_tracked", "key_projector.0.weight"} {
		if _, ok := f.Get(name); !ok {
			t.Errorf("model.safetensors lacks %s", name)
		}
	}
	for _, n := range f.Names() {
		if strings.HasPrefix(n, "fc.") {
			t.Errorf("model.safetensors has %s", n)
		}
	}
	nbt, _ := f.Get("bn1.num_batches_tracked")
	if nbt.DType() != safetensors.I64 || nbt.Data.([]int64)[0] != 1 || len(nbt.Shape) != 0 {
		t.Errorf("bn1.num_batches_tracked: %s %v %v", nbt.DType(), nbt.Shape, nbt.Data)
	}
	w, _ := f.Get("conv1.weight")
	if got := w.Shape; len(got) != 4 || got[0] != 4 || got[1] != 3 || got[2] != 3 {
		t.Errorf("conv1.weight shape %v, expected [4 3 3 3] (CIFAR stem, width 4)", got)
	}
}

func TestConfigRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, p := range PresetNames {
		for _, m := range ssl.Names() {
			c, err := Preset(p, m)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Validate(); err != nil {
				t.Fatalf("preset %s method %s: %v", p, m, err)
			}
			c.Seed = 12345678901234567
			if err := WriteConfig(dir, &c); err != nil {
				t.Fatal(err)
			}
			got, err := ReadConfig(dir)
			if err != nil {
				t.Fatal(err)
			}
			if *got != c {
				t.Errorf("round trip:\n%+v\n%+v", *got, c)
			}
		}
	}
	os.WriteFile(filepath.Join(dir, ConfigFile), []byte(`{"method": "dmoco", "learning_rate": 1}`), 0o644)
	if _, err := ReadConfig(dir); err == nil || !strings.Contains(err.Error(), "learning_rate") {
		t.Errorf("unknown field: %v", err)
	}
	tiny, _ := Preset("tiny", "dmoco")
	good, err := json.Marshal(tiny)
	if err != nil {
		t.Fatal(err)
	}
	// A run written before --lars-eta and --lars-clip existed trained with
	// LARS's default eta and no clip: its config.json reads as that.
	var old map[string]any
	if err := json.Unmarshal(good, &old); err != nil {
		t.Fatal(err)
	}
	delete(old, "lars_eta")
	delete(old, "lars_clip")
	b, _ := json.Marshal(old)
	os.WriteFile(filepath.Join(dir, ConfigFile), b, 0o644)
	if got, err := ReadConfig(dir); err != nil || got.LARSEta != defaultLARSEta || got.LARSClip {
		t.Errorf("config.json without lars_eta: %+v, %v", got, err)
	}
	for _, tail := range []string{"}", "]", "garbage{{", `{"method": "moco"}`} {
		os.WriteFile(filepath.Join(dir, ConfigFile), append(slices.Clone(good), tail...), 0o644)
		if _, err := ReadConfig(dir); err == nil || !strings.Contains(err.Error(), "data after the JSON object") {
			t.Errorf("config.json followed by %q: %v", tail, err)
		}
	}
}

func TestValidateErrors(t *testing.T) {
	for _, tc := range []struct {
		flag string
		edit func(*Config)
	}{
		{"method", func(c *Config) { c.Method = "mocov3" }},
		{"dataset", func(c *Config) { c.Dataset = "imagenet" }},
		{"lars-eta", func(c *Config) { c.LARSEta = 0 }},
		{"lars-eta", func(c *Config) { c.LARSEta = math.Inf(1) }},
		{"arch", func(c *Config) { c.Arch = "vit" }},
		{"rho-max", func(c *Config) { c.RhoMax = 1.5 }},
		{"imbalance", func(c *Config) { c.Imbalance = "zipf" }},
		{"imbalance-ratio", func(c *Config) { c.ImbalanceRatio = 0.5 }},
		{"steps", func(c *Config) { c.Steps = -1 }},
		{"batch", func(c *Config) { c.Batch = 1 }},
		{"optimizer", func(c *Config) { c.Optimizer = "rmsprop" }},
		{"lr", func(c *Config) { c.LR = 0 }},
		{"wd", func(c *Config) { c.WD = -1 }},
		{"memory-size", func(c *Config) { c.MemorySize = 0 }},
		{"policy", func(c *Config) { c.Policy = "lru" }},
		{"tau", func(c *Config) { c.Tau = -0.5 }},
		{"ema", func(c *Config) { c.EMA = 1 }},
		{"negatives", func(c *Config) { c.Negatives = "all" }},
		{"eps", func(c *Config) { c.Eps = 2 }},
		{"mem-negatives", func(c *Config) { c.MemNegatives = -1 }},
		{"bn-splits", func(c *Config) { c.BNSplits = 3 }},
		{"log-every", func(c *Config) { c.LogEvery = 0 }},
		{"knn-every", func(c *Config) { c.KNNEvery = -1 }},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			c, _ := Preset("cpu-small", "dmoco")
			tc.edit(&c)
			err := c.Validate()
			if err == nil || !strings.HasPrefix(err.Error(), "--"+tc.flag+": got ") || !strings.Contains(err.Error(), "expected") {
				t.Errorf("error %v, expected --%s: got ..., expected ...", err, tc.flag)
			}
		})
	}
	c, _ := Preset("cpu-small", "simclr")
	c.Negatives = "mixed"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--negatives") {
		t.Errorf("simclr with memory negatives: %v", err)
	}
}

func TestLoadRunEmbed(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig(t, "simclr")
	c.Steps = 2
	if _, err := Train(context.Background(), c, tinyOptions(dir)); err != nil {
		t.Fatal(err)
	}
	run, err := LoadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Step != 2 || run.FeatureDim != 32 || run.Projector == nil || run.Memory != nil {
		t.Errorf("run: step %d dim %d projector %v memory %v", run.Step, run.FeatureDim, run.Projector, run.Memory)
	}
	x := tensor.RandN(rand.New(rand.NewPCG(1, 1)), 5, 3, 8, 8)
	f, err := run.Embed(x, "backbone", 2)
	if err != nil {
		t.Fatal(err)
	}
	if s := f.Shape(); s[0] != 5 || s[1] != 32 {
		t.Errorf("backbone features %v", s)
	}
	// Evaluation mode: a batch's features do not depend on the batching.
	g, _ := run.Embed(x, "backbone", 5)
	if d := tensor.MaxAbsDiff(f, g); d > 1e-5 {
		t.Errorf("features depend on the batch size (%g): not in eval mode?", d)
	}
	p, err := run.Embed(x, "projector", 3)
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Shape(); s[0] != 5 || s[1] != c.ProjDim {
		t.Errorf("projector features %v", s)
	}
	if _, err := run.Embed(x, "fc", 3); err == nil {
		t.Errorf("layer fc accepted")
	}
	os.WriteFile(filepath.Join(dir, CheckpointDir, ModelFile), []byte("garbage"), 0o644)
	if _, err := LoadRun(dir); err == nil || !strings.Contains(err.Error(), ModelFile) {
		t.Errorf("corrupt model: %v", err)
	}
}

// TestLogLineDataWait checks that a log line says the run waits for data
// exactly when the wait is at least dataBoundShare of its window.
func TestLogLineDataWait(t *testing.T) {
	c := Config{Steps: 100}
	for _, tc := range []struct {
		wait, window float64
		want         string // in the line, or "" for no mention
	}{
		{0, 2, ""},
		{0.19, 2, ""},
		{0.2, 2, "(10% waiting for data: --workers)"},
		{1.5, 2, "(75% waiting for data: --workers)"},
		{0.5, 0, ""}, // no window measured
	} {
		var b bytes.Buffer
		logLine(&b, &c, &Metric{Step: 10, Loss: 1, LR: 0.1, ImgPerS: 100, DataWaitS: tc.wait}, tc.window)
		got := b.String()
		if mentions := strings.Contains(got, "waiting for data"); mentions != (tc.want != "") || !strings.Contains(got, tc.want) {
			t.Errorf("wait %g s of %g: %q, want it to contain %q", tc.wait, tc.window, got, tc.want)
		}
	}
}

// TestLoadRunUsesRunModel checks that a finished run is evaluated with
// its own model.safetensors, the file users edit: its weights override the
// checkpoint's, a damaged one is an error naming it, and a missing one or
// one left by an interrupted save (another step in its metadata) leaves
// the checkpoint's.
func TestLoadRunUsesRunModel(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig(t, "simclr")
	c.Steps = 2
	if _, err := Train(context.Background(), c, tinyOptions(dir)); err != nil {
		t.Fatal(err)
	}
	x := tensor.RandN(rand.New(rand.NewPCG(3, 1)), 4, 3, 8, 8)
	features := func() (*tensor.Tensor, error) {
		run, err := LoadRun(dir)
		if err != nil {
			return nil, err
		}
		return run.Embed(x, "backbone", 4)
	}
	want, err := features()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ModelFile)
	f, err := safetensors.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if m, want := f.Metadata, map[string]string{"format": "pt", "method": "simclr", "step": "2", "arch": c.Arch, "stem": "cifar"}; !maps.Equal(m, want) {
		t.Errorf("model.safetensors metadata %v, want %v", m, want)
	}
	edited := slices.Clone(f.Tensors)
	for i, tn := range edited {
		if tn.Name == "conv1.weight" {
			w := slices.Clone(tn.Data.([]float32))
			for j := range w {
				w[j] = -2 * w[j]
			}
			edited[i].Data = w
		}
	}
	for _, tc := range []struct {
		name  string
		write func() error
		same  bool   // the checkpoint's features
		err   string // in the error, "" for none
	}{
		{"edited without metadata", func() error { return safetensors.Write(path, edited, nil) }, false, ""},
		{"edited at the checkpoint's step", func() error { return safetensors.Write(path, edited, map[string]string{"step": "2"}) }, false, ""},
		{"left by an interrupted save", func() error { return safetensors.Write(path, edited, map[string]string{"step": "1"}) }, true, ""},
		{"missing", func() error { return os.Remove(path) }, true, ""},
		{"damaged", func() error { return os.WriteFile(path, []byte("garbage"), 0o644) }, false, path},
	} {
		if err := tc.write(); err != nil {
			t.Fatal(err)
		}
		got, err := features()
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "delete the file") {
				t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if same := tensor.MaxAbsDiff(got, want) == 0; same != tc.same {
			t.Errorf("%s: features equal to the checkpoint's: %v, want %v", tc.name, same, tc.same)
		}
	}
}
