package train

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/nn"
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
	if !slices.Equal(steps, []int{2, 4, 5}) {
		t.Fatalf("kept steps %v, expected [2 4 5]", steps)
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

// TestKNNMonitorReusesTheArena: the kNN monitor's forward passes come from
// the training arena, reset before every batch, so measuring twice the
// number of batches allocates nothing more (it once held the activations of
// every batch: gigabytes with a bank of 10,000 images).
func TestKNNMonitorReusesTheArena(t *testing.T) {
	c := tinyConfig(t, "moco")
	train, test := synthetic(64, 1), synthetic(32, 2)
	m, err := NewMethod(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	arena := nn.NewArena()
	for _, p := range m.Parts() {
		nn.UseArena(p.Module, arena)
	}
	mean, std := train.MeanStd()
	allocs := func(bank int) int {
		c.KNNTrain, c.KNNTest = bank, 8
		k := newKNNMonitor(train, test, c, mean, std, 0, arena)
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
