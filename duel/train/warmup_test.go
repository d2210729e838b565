package train

import (
	"context"
	"strings"
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
	resumeTrain(t, got, dir, 0)
	if after, err := ReadConfig(dir); err != nil || after.WarmupSteps != 3 {
		t.Errorf("config.json after --resume --steps 5: %v, warmup_steps %d, want 3", err, after.WarmupSteps)
	}
}

// TestShortRunCutsWarmup checks that a run shorter than its warm-up warms
// up for a tenth of its steps, records that in config.json and says so
// (a run started from that config.json keeps it).
func TestShortRunCutsWarmup(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig(t, "moco")
	c.Steps, c.WarmupSteps, c.KNNEvery = 2, 10, 0
	opts := tinyOptions(dir)
	var log strings.Builder
	opts.Log = &log
	if _, err := Train(context.Background(), c, opts); err != nil {
		t.Fatal(err)
	}
	got, err := ReadConfig(dir)
	if err != nil || got.WarmupSteps != 0 {
		t.Fatalf("config.json: %v, warmup_steps %d, want 0", err, got.WarmupSteps)
	}
	if want := "note: --warmup-steps 10 is not shorter than --steps 2: the run warms up for 0 steps, as its config.json records"; !strings.Contains(log.String(), want) {
		t.Errorf("the log lacks %q:\n%s", want, log.String())
	}
}
