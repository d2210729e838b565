package train

import (
	"context"
	"slices"
	"strings"
	"testing"
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
