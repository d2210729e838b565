package reproduce

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/duel/train"
	"github.com/duel-ssl/duel/tensor"
)

func TestPrecisionTag(t *testing.T) {
	for _, c := range []struct{ products, convs, want string }{
		{"fp32", "fp32", ""},
		{"fp32", "tf32", ""}, // a GPU's default: the same runs as the CPU's
		{"", "", ""},
		{"bf16", "bf16", "bf16"},
		{"tf32", "tf32", "tf32"},
		{"fp32", "bf16", "fp32-convbf16"},
		{"bf16", "fp32", "bf16-convfp32"},
		{"tf32", "fp32", "tf32-convfp32"},
	} {
		if got := PrecisionTag(c.products, c.convs); got != c.want {
			t.Errorf("PrecisionTag(%q, %q) = %q, want %q", c.products, c.convs, got, c.want)
		}
		if err := checkPrecision(PrecisionTag(c.products, c.convs)); err != nil {
			t.Error(err)
		}
	}
	for _, bad := range []string{"../x", "bf16/x", "a b", "1.5"} {
		if err := checkPrecision(bad); err == nil {
			t.Errorf("checkPrecision(%q): no error", bad)
		}
	}
	g, _ := Lookup("smoke")
	g.Precision = "../up"
	if err := g.Validate(); err == nil || !strings.Contains(err.Error(), "precision tag") {
		t.Errorf("Validate with precision %q: got %v", g.Precision, err)
	}
}

// TestCheckConfigPrecision refuses a run directory whose run computed in
// another precision than the grid's.
func TestCheckConfigPrecision(t *testing.T) {
	g, _ := Lookup("smoke")
	cfg, err := g.runConfig(Variant{Method: "dmoco"}, 0.75, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		products, convs, grid string
		ok                    bool
	}{
		{"fp32", "fp32", "", true},
		{"fp32", "tf32", "", true},
		{"bf16", "bf16", "bf16", true},
		{"bf16", "bf16", "", false},
		{"fp32", "fp32", "bf16", false},
		{"fp32", "bf16", "bf16", false},
	} {
		dir := t.TempDir()
		ran := effective(cfg)
		ran.Ran = &train.Ran{Device: "cpu", Precision: c.products, ConvPrecision: c.convs, WorldSize: 1}
		if err := train.WriteConfig(dir, &ran); err != nil {
			t.Fatal(err)
		}
		err := checkConfig(dir, cfg, c.grid)
		if c.ok != (err == nil) {
			t.Errorf("run in %s/%s, grid %q: got %v", c.products, c.convs, c.grid, err)
		}
		if !c.ok && (err == nil || !strings.Contains(err.Error(), "computed with products "+c.products)) {
			t.Errorf("run in %s/%s, grid %q: error %v, want the run's precisions named", c.products, c.convs, c.grid, err)
		}
	}
}

// TestRunInBF16 runs the smoke grid in bf16 beside the fp32 one on the
// same output directory: the runs and the report are apart (-bf16), each
// run records its precision, report.md says it, and a grid whose Precision
// does not match the device's is refused after its first run's training.
func TestRunInBF16(t *testing.T) {
	defer tensor.SetCPUPrecision("fp32", "fp32")
	out := t.TempDir()
	var log strings.Builder
	opts := testOptions(out, &log)
	g := smokeGrid(t)
	if _, err := Run(context.Background(), g, opts); err != nil {
		t.Fatal(err)
	}
	if err := tensor.SetCPUPrecision("bf16", "bf16"); err != nil {
		t.Fatal(err)
	}
	g.Precision = PrecisionTag(tensor.CPUPrecisions())
	log.Reset()
	rep, err := Run(context.Background(), g, opts)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(log.String(), "trained in"); n != 2 {
		t.Errorf("bf16 grid trained %d runs, want 2 (none shared with fp32's):\n%s", n, log.String())
	}
	for _, r := range rep.Runs {
		if !strings.HasSuffix(r.Dir, "-seed0-bf16") || r.Precision != "bf16" || r.ConvPrecision != "bf16" {
			t.Errorf("run %s: dir %s, precisions %q %q; want -bf16 and bf16", r.Variant, r.Dir, r.Precision, r.ConvPrecision)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "smoke-bf16", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "- precision: precision bf16; runs: products bf16, convolutions bf16\n") ||
		!strings.Contains(string(md), "| dmoco-rho0.75-seed0-bf16 |") {
		t.Errorf("bf16 report.md lacks its precision or run names:\n%s", md)
	}
	fp32, err := os.ReadFile(filepath.Join(out, "smoke", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(fp32), "- precision: fp32 products (fp32 or tf32 convolutions); runs: products fp32, convolutions fp32\n") {
		t.Errorf("fp32 report.md lacks its precision:\n%s", fp32)
	}

	// With Options.Precision: bf16 for training, the defaults for the
	// evaluation, each run in turn.
	var calls []bool
	opts.Out = t.TempDir()
	opts.Precision = func(training bool) error {
		calls = append(calls, training)
		if training {
			return tensor.SetCPUPrecision("bf16", "bf16")
		}
		return tensor.SetCPUPrecision("fp32", "fp32")
	}
	if rep, err = Run(context.Background(), g, opts); err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, false, true, false}; !slices.Equal(calls, want) {
		t.Errorf("Options.Precision calls %v, want %v (train then evaluate, each run)", calls, want)
	}
	if p, c := tensor.CPUPrecisions(); p != "fp32" || c != "fp32" {
		t.Errorf("after the grid: precisions %s %s, want the evaluation's fp32", p, c)
	}
	for _, r := range rep.Runs {
		if r.Precision != "bf16" || r.ConvPrecision != "bf16" {
			t.Errorf("run %s trained in %q %q, want bf16", r.Variant, r.Precision, r.ConvPrecision)
		}
	}
	opts.Precision = nil
	if err := tensor.SetCPUPrecision("bf16", "bf16"); err != nil {
		t.Fatal(err)
	}

	// The device in bf16, the grid of fp32: refused, naming both.
	g.Precision, g.Set = "", []string{"steps=3"}
	opts.Out = t.TempDir()
	_, err = Run(context.Background(), g, opts)
	if err == nil || !strings.Contains(err.Error(), "computed with products bf16") || !strings.Contains(err.Error(), "--precision") {
		t.Errorf("device in bf16, grid of fp32: got %v", err)
	}
}
