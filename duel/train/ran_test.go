package train

import (
	"context"
	"testing"

	"github.com/duel-ssl/duel/tensor"
)

// TestConfigRan checks that config.json records where the run computed,
// and that a resumed segment records its own.
func TestConfigRan(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig(t, "dmoco")
	c.Steps = 1
	if _, err := Train(context.Background(), c, tinyOptions(dir)); err != nil {
		t.Fatal(err)
	}
	got, err := ReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Ran{Device: "cpu", Precision: "fp32", ConvPrecision: "fp32", WorldSize: 1}); got.Ran == nil || *got.Ran != want {
		t.Errorf("config.json's ran %+v, want %+v", got.Ran, want)
	}
	if _, err := tensor.Lookup("hostlessfused"); err != nil {
		t.Skip("no hostlessfused backend registered")
	}
	got.Steps = 2
	opts := tinyOptions(dir)
	opts.Resume, opts.Device = true, "hostlessfused"
	if _, err := Train(context.Background(), got, opts); err != nil {
		t.Fatal(err)
	}
	if after, err := ReadConfig(dir); err != nil || after.Ran == nil || after.Ran.Device != "hostlessfused:0" {
		t.Errorf("config.json after resuming on hostlessfused: %v, ran %+v", err, after.Ran)
	}
}
