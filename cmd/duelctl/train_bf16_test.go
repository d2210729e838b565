package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/duel/train"
)

// TestTrainBF16CPU trains the tiny preset on the CPU with --precision
// bf16 and --conv-precision bf16 alone: the run records the precisions it
// ran in, its loss is near the fp32 run's but not its bits, and a later
// command without the flags runs in fp32 again (nothing carries over
// between commands of one process).
func TestTrainBF16CPU(t *testing.T) {
	dir := t.TempDir()
	run := func(name string, extra ...string) (loss float64, ran train.Ran) {
		t.Helper()
		out := filepath.Join(dir, name)
		args := append([]string{"train", "--preset", "tiny", "--method", "simclr", "--steps", "2", "--out", out, "--json"}, extra...)
		code, stdout, stderr := replayRunCLI(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		var res struct{ Loss float64 }
		if err := json.Unmarshal([]byte(lastLine(stdout)), &res); err != nil {
			t.Fatalf("%v: last line %q: %v", args, lastLine(stdout), err)
		}
		cfg, err := train.ReadConfig(out)
		if err != nil || cfg.Ran == nil {
			t.Fatalf("%v: config %+v: %v", args, cfg, err)
		}
		return res.Loss, *cfg.Ran
	}
	bf16, ranBF16 := run("bf16", "--precision", "bf16")
	convs, ranConvs := run("convs", "--conv-precision", "bf16")
	fp32, ranFP32 := run("fp32")
	for _, c := range []struct {
		ran         train.Ran
		prod, convs string
	}{{ranBF16, "bf16", "bf16"}, {ranConvs, "fp32", "bf16"}, {ranFP32, "fp32", "fp32"}} {
		if c.ran.Precision != c.prod || c.ran.ConvPrecision != c.convs {
			t.Errorf("ran %+v, want products %s, convolutions %s", c.ran, c.prod, c.convs)
		}
	}
	// Resuming the bf16 run without --precision computes in fp32 and says so.
	code, stdout, stderr := replayRunCLI("train", "--resume", "--out", filepath.Join(dir, "bf16"), "--steps", "3")
	if code != 0 || !strings.Contains(stdout, "note: the run's last segment computed its products in bf16 and its convolutions in bf16; this one in fp32 and fp32") {
		t.Errorf("resume without --precision: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	for name, l := range map[string]float64{"bf16": bf16, "conv-precision bf16": convs} {
		if l == fp32 || math.Abs(l-fp32) > 0.05*math.Abs(fp32) {
			t.Errorf("%s loss %v, fp32 %v: want near but not equal", name, l, fp32)
		}
	}
}

// TestBenchGemmBF16CPU: bench gemm --precision bf16 times SgemmBF16 and
// says what it ran on.
func TestBenchGemmBF16CPU(t *testing.T) {
	code, stdout, stderr := replayRunCLI("bench", "gemm", "--m", "40", "--n", "33", "--k", "17", "--seconds", "0.01", "--precision", "bf16", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res struct{ ISA string }
	if err := json.Unmarshal([]byte(lastLine(stdout)), &res); err != nil {
		t.Fatal(err)
	}
	if res.ISA != "avx512bf16" && !strings.HasPrefix(res.ISA, "emulated on ") {
		t.Errorf("isa %q", res.ISA)
	}
	if !strings.Contains(stdout, "sgemm-bf16 NN 40x33x17") {
		t.Errorf("stdout %q", stdout)
	}
}
