package train

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/duel/ssl"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/nn/safetensors"
	"github.com/duel-ssl/duel/tensor"
)

func TestKeepCheckpoints(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig(t, "dmoco")
	c.Steps, c.CheckpointEvery, c.KeepCheckpoints = 5, 2, true
	if _, err := Train(context.Background(), c, tinyOptions(dir)); err != nil {
		t.Fatal(err)
	}
	steps, err := KeptSteps(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(steps, []int{0, 2, 4, 5}) {
		t.Fatalf("kept steps %v, expected [0 2 4 5] (step 0: the initial model)", steps)
	}
	r2, err := LoadRunAt(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	latest, err := LoadRunAt(dir, -1)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Step != 2 || latest.Step != 5 || r2.Memory == nil || r2.Memory.Len() == 0 {
		t.Fatalf("steps %d and %d", r2.Step, latest.Step)
	}
	if slices.Equal(r2.Memory.Rows(), latest.Memory.Rows()) {
		t.Error("the memory of step 2 equals the latest one")
	}
	if _, err := LoadRunAt(dir, 3); err == nil || !strings.Contains(err.Error(), "no checkpoint of step 3") {
		t.Errorf("step 3: %v", err)
	}
	empty, err := KeptSteps(t.TempDir())
	if err != nil || empty != nil {
		t.Errorf("a run without kept checkpoints: %v %v", empty, err)
	}
}

// TestZeroStepsWithWarmup: --steps 0 writes the initial checkpoint whatever
// the preset's warm-up (cpu-small has 10 steps).
func TestZeroStepsWithWarmup(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig(t, "moco")
	c.Steps, c.WarmupSteps = 0, 10
	res, err := Train(context.Background(), c, tinyOptions(dir))
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 0 {
		t.Errorf("steps %d", res.Steps)
	}
	if _, err := LoadRun(dir); err != nil {
		t.Errorf("the initial checkpoint does not load: %v", err)
	}
}

// methodOnArena returns c's method with every part allocating from one
// new arena, as Train attaches it.
func methodOnArena(t *testing.T, c *Config) (ssl.Method, *nn.Arena) {
	t.Helper()
	m, err := NewMethod(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	arena := nn.NewArena()
	for _, p := range m.Parts() {
		nn.UseArena(p.Module, arena)
	}
	return m, arena
}

// TestKNNMonitorReusesTheArena: the kNN monitor's forward passes come from
// the training arena, reset before every batch, so measuring twice the
// number of batches allocates nothing more (it once held the activations of
// every batch: gigabytes with a bank of 10,000 images).
func TestKNNMonitorReusesTheArena(t *testing.T) {
	c := tinyConfig(t, "moco")
	train, test := synthetic(64, 1), synthetic(32, 2)
	m, arena := methodOnArena(t, c)
	mean, std := train.MeanStd()
	allocs := func(bank int) int {
		c.KNNTrain, c.KNNTest = bank, 8
		k := newKNNMonitor(train, test, c, mean, std, 0, 1, arena)
		k.batch = 4
		if _, err := k.measure(m.Encoder()); err != nil {
			t.Fatal(err)
		}
		return arena.Allocs()
	}
	first := allocs(16)
	if more := allocs(64) - first; more != 0 {
		t.Errorf("a bank 4x larger allocated %d more arena buffers (first measurement: %d)", more, first)
	}
}

// TestKeepCheckpointsInitial: --keep-checkpoints keeps the model before
// training (step 0), the one the trained encoders are compared with: the
// same tensors as the initial checkpoint of a run of --steps 0, and kept
// too when a run of --steps 0 is resumed.
func TestKeepCheckpointsInitial(t *testing.T) {
	c := tinyConfig(t, "dmoco")
	c.Steps = 0
	init := t.TempDir() // the initial model, not kept
	if _, err := Train(context.Background(), c, tinyOptions(init)); err != nil {
		t.Fatal(err)
	}
	if steps, err := KeptSteps(init); err != nil || steps != nil {
		t.Fatalf("without --keep-checkpoints: kept %v, %v", steps, err)
	}

	dir := t.TempDir()
	c.Steps, c.CheckpointEvery, c.KeepCheckpoints = 3, 2, true
	if _, err := Train(context.Background(), c, tinyOptions(dir)); err != nil {
		t.Fatal(err)
	}
	if steps, err := KeptSteps(dir); err != nil || !slices.Equal(steps, []int{0, 2, 3}) {
		t.Fatalf("kept steps %v, %v, expected [0 2 3]", steps, err)
	}
	r0, err := LoadRunAt(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r0.Step != 0 {
		t.Errorf("LoadRunAt(0): step %d", r0.Step)
	}
	sameTensors(t, filepath.Join(init, CheckpointDir, ModelFile), filepath.Join(dir, KeptDir, KeptName(0), ModelFile))

	// --steps 0, then resumed: step 0 is the checkpoint resumed from.
	zero := t.TempDir()
	c.Steps = 0
	if _, err := Train(context.Background(), c, tinyOptions(zero)); err != nil {
		t.Fatal(err)
	}
	if steps, err := KeptSteps(zero); err != nil || !slices.Equal(steps, []int{0}) {
		t.Fatalf("--steps 0: kept steps %v, %v, expected [0]", steps, err)
	}
	resumeTrain(t, c, zero, 2)
	if steps, err := KeptSteps(zero); err != nil || !slices.Equal(steps, []int{0, 2}) {
		t.Fatalf("--steps 0 resumed to 2: kept steps %v, %v, expected [0 2]", steps, err)
	}
	sameTensors(t, filepath.Join(init, CheckpointDir, ModelFile), filepath.Join(zero, KeptDir, KeptName(0), ModelFile))
}

// sameTensors fails t unless the safetensors files a and b hold the same
// tensors, bit for bit.
func sameTensors(t *testing.T, a, b string) {
	t.Helper()
	fa, err := safetensors.Read(a)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := safetensors.Read(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(fa.Tensors) != len(fb.Tensors) {
		t.Fatalf("%s: %d tensors, %s: %d", a, len(fa.Tensors), b, len(fb.Tensors))
	}
	for _, ta := range fa.Tensors {
		tb, ok := fb.Get(ta.Name)
		if !ok {
			t.Fatalf("%s: no %s", b, ta.Name)
		}
		if ta.DType() == safetensors.I64 {
			if !slices.Equal(ta.Data.([]int64), tb.Data.([]int64)) {
				t.Errorf("%s: %v vs %v", ta.Name, ta.Data, tb.Data)
			}
			continue
		}
		x, _ := ta.ToTensor()
		y, _ := tb.ToTensor()
		if d := tensor.MaxAbsDiff(x, y); d != 0 {
			t.Errorf("%s differs by %g from the initial model", ta.Name, d)
		}
	}
}

// TestKeepCheckpointsAfterKill checks that a resumed run that keeps
// checkpoints keeps the one it resumes from when a kill left its kept copy
// out: between the save and the keep (checkpoint/ complete), or between
// the save's two renames (only checkpoint.old/ left).
func TestKeepCheckpointsAfterKill(t *testing.T) {
	for _, tc := range []struct {
		name string
		old  bool // the checkpoint left as checkpoint.old/
	}{{"after the save", false}, {"between the renames", true}} {
		t.Run(tc.name, func(t *testing.T) {
			c := tinyConfig(t, "dmoco")
			c.Steps, c.CheckpointEvery, c.KeepCheckpoints = 2, 2, true
			dir := t.TempDir()
			if _, err := Train(context.Background(), c, tinyOptions(dir)); err != nil {
				t.Fatal(err)
			}
			want := filepath.Join(t.TempDir(), ModelFile)
			b, err := os.ReadFile(filepath.Join(dir, CheckpointDir, ModelFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(want, b, 0o644); err != nil {
				t.Fatal(err)
			}
			// The kill: step 2's kept copy never made.
			if err := os.RemoveAll(filepath.Join(dir, KeptDir, KeptName(2))); err != nil {
				t.Fatal(err)
			}
			if tc.old {
				if err := os.Rename(filepath.Join(dir, CheckpointDir), filepath.Join(dir, checkpointPrev)); err != nil {
					t.Fatal(err)
				}
			}
			resumeTrain(t, c, dir, 4)
			if steps, err := KeptSteps(dir); err != nil || !slices.Equal(steps, []int{0, 2, 4}) {
				t.Fatalf("kept steps %v, %v, expected [0 2 4]", steps, err)
			}
			sameTensors(t, want, filepath.Join(dir, KeptDir, KeptName(2), ModelFile))
		})
	}
}

// TestCopyFile checks keepFrom's fallback where hard links fail: the copy
// is byte-identical, and a missing source or an existing destination is an
// error naming the path.
func TestCopyFile(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 3<<20+7)
	for i := range data {
		data[i] = byte(i*131 + i>>9)
	}
	src := filepath.Join(dir, "memory.bin")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "copy.bin")
	if err := copyFile(src, dst); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Errorf("the copy differs from its source (%d bytes against %d)", len(got), len(data))
	}
	for _, tc := range []struct{ name, from, to string }{
		{"missing source", filepath.Join(dir, "absent.bin"), filepath.Join(dir, "new.bin")},
		{"existing destination", src, dst},
	} {
		err := copyFile(tc.from, tc.to)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
		} else if !strings.Contains(err.Error(), dir) {
			t.Errorf("%s: error %q does not name the path", tc.name, err)
		}
	}
}

// TestKNNMonitorTakesTheStepsBuffers: with the monitor's batch (knnBatch,
// the training's), its forward passes, tails of the bank and test split
// included, are served by the buffers a training step left in the arena
// rather than adding their own.
func TestKNNMonitorTakesTheStepsBuffers(t *testing.T) {
	for _, method := range []string{"moco", "simclr"} {
		c := tinyConfig(t, method)
		c.Batch = 32
		m, arena := methodOnArena(t, c)
		train, test := synthetic(64, 1), synthetic(32, 2)
		r := rand.New(rand.NewPCG(3, 4))
		batch := &ssl.Batch{IDs: make([]int64, c.Batch), Labels: make([]int32, c.Batch)}
		for v := range batch.Views {
			batch.Views[v] = tensor.New(c.Batch, 3, 8, 8)
			for i, x := range batch.Views[v].Data() {
				batch.Views[v].Data()[i] = x + float32(r.NormFloat64())
			}
		}
		for i := range batch.IDs {
			batch.IDs[i] = int64(i)
		}
		arena.Reset()
		tp := autograd.NewTape()
		l, err := m.Loss(tp, batch)
		if err != nil {
			t.Fatal(err)
		}
		tp.Backward(l)
		stepped := arena.Allocs()
		mean, std := train.MeanStd()
		c.KNNTrain, c.KNNTest = 50, 20 // a full batch and a tail of 18, and a tail of 20
		k := newKNNMonitor(train, test, c, mean, std, 0, 1, arena)
		if k.batch != c.Batch {
			t.Fatalf("the monitor's batch is %d, the training's %d", k.batch, c.Batch)
		}
		if _, err := k.measure(m.Encoder()); err != nil {
			t.Fatal(err)
		}
		if more := arena.Allocs() - stepped; more != 0 {
			t.Errorf("%s: the kNN measurement allocated %d arena buffers beyond the step's %d", method, more, stepped)
		}
	}
}
