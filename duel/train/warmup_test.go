package train

import (
	"context"
	"testing"
)

// TestStepsZeroKeepsWarmup checks that --steps 0 records the preset's
// warm-up, so that --resume --steps N warms up as a new run of N steps
// (it recorded 0, a tenth of 0 steps, and the resumed run never warmed
// up).
func TestStepsZeroKeepsWarmup(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig(t, "dmoco")
	c.Steps, c.WarmupSteps = 0, 3
	if _, err := Train(context.Background(), c, tinyOptions(dir)); err != nil {
		t.Fatal(err)
	}
	got, err := ReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.WarmupSteps != 3 {
		t.Errorf("config.json after --steps 0: warmup_steps %d, want 3", got.WarmupSteps)
	}
	got.Steps = 5
	opts := tinyOptions(dir)
	opts.Resume = true
	if _, err := Train(context.Background(), got, opts); err != nil {
		t.Fatal(err)
	}
	if after, err := ReadConfig(dir); err != nil || after.WarmupSteps != 3 {
		t.Errorf("config.json after --resume --steps 5: %v, warmup_steps %d, want 3", err, after.WarmupSteps)
	}
}
