package train

import (
	"bytes"
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/kernels/conv"
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
	if want := (Ran{Device: "cpu", Precision: "fp32", ConvPrecision: "fp32", WorldSize: 1, Kernels: cpuTuning(t)}); got.Ran == nil || !reflect.DeepEqual(*got.Ran, want) {
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

// cpuTuning returns the lines the CPU backend reports of the tuning this
// machine's wisdom file gives (none in CI, where DUEL_WISDOM=off).
func cpuTuning(t *testing.T) []string {
	t.Helper()
	be, err := tensor.Lookup("cpu")
	if err != nil {
		t.Fatal(err)
	}
	return be.(kernelReporter).KernelChoices()
}

// reportingDUEL is memory.DUEL reporting made-up kernel choices, as
// cudaduel's policy reports what it measured.
type reportingDUEL struct {
	*memory.DUEL
}

func (reportingDUEL) KernelChoices() []string {
	return []string{"duel steps: duel_select_lean512 (made up)", "duel move: gather (made up)"}
}

// TestConfigRanKernels checks that a run whose policies (or backend)
// chose kernels by measuring records them in config.json's ran.kernels
// when it ends, and prints them.
func TestConfigRanKernels(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig(t, "dmoco")
	c.Steps = 1
	opts := tinyOptions(dir)
	var log bytes.Buffer
	opts.Log = &log
	opts.DUELPolicy = func(adm memory.Admission) memory.Policy { return reportingDUEL{memory.NewDUEL(adm)} }
	if _, err := Train(context.Background(), c, opts); err != nil {
		t.Fatal(err)
	}
	got, err := ReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := append(cpuTuning(t), reportingDUEL{}.KernelChoices()...)
	if got.Ran == nil || !slices.Equal(got.Ran.Kernels, want) {
		t.Errorf("config.json's ran %+v, want kernels %q", got.Ran, want)
	}
	if !strings.Contains(log.String(), "kernels chosen by measuring on cpu (config.json's ran.kernels):\n  "+strings.Join(want, "\n  ")+"\n") {
		t.Errorf("the log lacks the kernels:\n%s", log.String())
	}
}

// TestConfigRanCPUTuning checks that a run on the CPU whose convolutions
// take their algorithms from a tuned table (the wisdom file's; here one
// set by conv.UseChoices for the tiny model's first convolution) records
// it in config.json's ran.kernels: it changes the run's bits.
func TestConfigRanCPUTuning(t *testing.T) {
	restore, err := conv.UseChoices([]conv.Choice{{Shape: conv.Shape{N: 16, In: 3, Out: 4, H: 32, W: 32, K: 3, S: 1, P: 1}, Forward: "im2col", WeightGrad: "im2col", InputGrad: "im2col"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	dir := t.TempDir()
	c := tinyConfig(t, "moco")
	c.Steps, c.KNNEvery = 1, 0
	if _, err := Train(context.Background(), c, tinyOptions(dir)); err != nil {
		t.Fatal(err)
	}
	got, err := ReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := "conv: the algorithms of 1 shape from the wisdom file entry " + conv.WisdomEntry
	if got.Ran == nil || !slices.ContainsFunc(got.Ran.Kernels, func(l string) bool { return strings.HasPrefix(l, want) }) {
		t.Errorf("config.json's ran %+v, want a kernel line %q", got.Ran, want)
	}
}
