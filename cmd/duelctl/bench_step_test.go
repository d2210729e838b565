package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/duel/train"
	"github.com/duel-ssl/duel/internal/cpu"
	"github.com/duel-ssl/duel/internal/cudatest"
	"github.com/duel-ssl/duel/internal/wisdom"
	"github.com/duel-ssl/duel/kernels/conv"
)

func TestBenchStep(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"duelctl", "bench", "step", "--arch", "resnet18-w2", "--batch", "2", "--steps", "1", "--warmup", "1", "--size", "8", "--json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var res map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
	}
	for _, k := range []string{"img_per_s", "step_ms", "forward_img_per_s", "allocs_per_step", "peak_rss_mb"} {
		if v, ok := res[k].(float64); !ok || v < 0 {
			t.Errorf("%s = %v", k, res[k])
		}
	}
}

// TestBenchStepSSL times a self-supervised method's step (one process:
// no launcher) and checks its JSON answer.
func TestBenchStepSSL(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"duelctl", "bench", "step", "--method", "dmoco", "--arch", "resnet18-w2", "--batch", "8", "--steps", "1", "--warmup", "1", "--size", "8", "--threads", "1", "--json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var res map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
	}
	if res["method"] != "dmoco" || res["ranks"] != 1.0 || res["batch_per_rank"] != 8.0 || !(res["img_per_s"].(float64) > 0) ||
		res["device"] != "cpu" || res["memory"] != "duel on the host" {
		t.Errorf("answer %v", res)
	}
}

func TestBenchStepErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--arch", "resnet19"}, "valid names are"},
		{[]string{"--arch", "resnet18-w0"}, "--arch"},
		{[]string{"--batch", "1"}, "--batch: got 1"},
		{[]string{"--steps", "0"}, "--steps: got 0"},
		{[]string{"--warmup", "-1"}, "--warmup"},
		{[]string{"--size", "4"}, "--size"},
		{[]string{"--method", "mocov9"}, "--method"},
		{[]string{"--threads", "-1"}, "--threads"},
		{[]string{"--threads", "100000"}, "--threads: got 100000, expected an integer in [0, 1024]"}, // GOMAXPROCS 100000 never finished a step
		{[]string{"--method", "dmoco", "--batch", "4"}, "--batch"},
		{[]string{"--method", "dmoco", "--memory-size", "-1"}, "--memory-size"},
		{[]string{"--method", "simclr", "--dist", "nccl"}, "--dist"},
		{[]string{"--device", "tpu"}, "--device"},
		// Bounds: refused before anything is allocated.
		{[]string{"--arch", "resnet18-w4", "--batch", "4", "--steps", "1000000000000"}, "--steps: got 1000000000000, expected an integer in [1, 1000000]"},
		{[]string{"--warmup", "1000001"}, "--warmup: got 1000001"},
		{[]string{"--arch", "resnet18-w4", "--batch", "4", "--method", "dmoco"}, "--batch: got 4, expected a multiple of 4, at least 8"},
		{[]string{"--method", "dmoco", "--batch", "10"}, "--batch: got 10, expected a multiple of 4, at least 8"},
		{[]string{"--memory-size", "-1"}, "--memory-size: got -1"},
		{[]string{"--memory-size", "100000000"}, "--memory-size: got 100000000"},
		{[]string{"--dist", "foo"}, "--dist: got \"foo\", expected auto, mpi or none"},
	} {
		var out, errb bytes.Buffer
		code := run(append([]string{"duelctl", "bench", "step"}, c.args...), &out, &errb)
		msg := errb.String()
		if code == 0 || !strings.HasPrefix(msg, "duelctl: ") || !strings.Contains(msg, c.want) || strings.Count(msg, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q (want a one-line error containing %q)", c.args, code, msg, c.want)
		}
	}
}

// TestBenchStepMemory: a batch whose images alone exceed the machine's
// memory is refused naming --batch, before the batch is allocated.
func TestBenchStepMemory(t *testing.T) {
	if train.MachineMemory() <= 0 {
		t.Skip("the machine's memory is unknown: the command would not refuse the batch")
	}
	for _, args := range [][]string{
		{"--arch", "resnet18-w4", "--batch", "100000000"},
		{"--arch", "resnet18-w4", "--batch", "100000000", "--method", "simclr"},
		{"--arch", "resnet18", "--batch", "1000000", "--size", "1024"},
	} {
		wantCLIError(t, append([]string{"bench", "step"}, args...), "--batch: got "+args[3]+", needs about ", "this machine has ")
	}
}

// TestBenchStepTuneConv tunes a small model's convolutions in float32,
// then in bf16, into a wisdom file of the test's own: each times the step
// with its picks and with the rules, and lands in its own entry (the
// picks, or empty when the rules' step was faster), and both stay; the
// process's algorithms are then as they were.
func TestBenchStepTuneConv(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wisdom.json")
	t.Setenv(wisdom.Env, path)
	args := []string{"bench", "step", "--arch", "resnet18-w2", "--batch", "2", "--steps", "1", "--warmup", "0", "--size", "16", "--tune-conv"}
	// The command leaves the process's algorithms as they were when it
	// returns: the tests after this one run with theirs.
	before := [2]int{conv.TunedShapes(false), conv.TunedShapes(true)}
	defer func() {
		if after := [2]int{conv.TunedShapes(false), conv.TunedShapes(true)}; after != before {
			t.Errorf("tuned shapes in use (float32, bf16) %v after the command, %v before", after, before)
		}
	}()
	stderrs := map[string]string{}
	for _, c := range []struct {
		extra []string
		entry string
	}{{nil, conv.WisdomEntry}, {[]string{"--precision", "bf16"}, conv.WisdomEntryBF16}} {
		code, _, stderr := runCLI(append(args, c.extra...)...)
		if code != 0 || !strings.Contains(stderr, "entry "+c.entry) || !strings.Contains(stderr, "built-in rules") {
			t.Fatalf("%v: exit %d, stderr %s", c.extra, code, stderr)
		}
		stderrs[c.entry] = stderr
	}
	for _, entry := range []string{conv.WisdomEntry, conv.WisdomEntryBF16} {
		var e conv.Entry
		found, _, err := wisdom.Load(cpu.Detect().Key(), entry, &e)
		if err != nil || !found {
			t.Errorf("entry %s: found %v, err %v, %d choices", entry, found, err, len(e.Choices))
		}
		// What was stored is what the verdict said: the tuned picks, or
		// an empty entry (the rules), never picks the step did not win with.
		kept := strings.Contains(stderrs[entry], "kept the tuned algorithms")
		if kept != (len(e.Choices) > 0) {
			t.Errorf("entry %s: %d choices stored, stderr %s", entry, len(e.Choices), stderrs[entry])
		}
		differ := 0
		for _, ch := range e.Choices {
			differ += ch.FromRules(entry == conv.WisdomEntryBF16)
		}
		if kept && differ == 0 {
			t.Errorf("entry %s: tuned algorithms kept, but every pass is the rules'", entry)
		}
		for _, ch := range e.Choices {
			bf16 := strings.HasSuffix(ch.Forward, "-bf16")
			if bf16 != (entry == conv.WisdomEntryBF16) {
				t.Errorf("entry %s holds %+v", entry, ch)
			}
		}
	}
}

// TestBenchStepMachineFakeCUDA runs TestBenchStepMachineCUDA on the CPU
// emulator through the fake libcuda.
func TestBenchStepMachineFakeCUDA(t *testing.T) {
	cudatest.PassOnFakeDriver(t, "TestBenchStepMachineCUDA")
}

// TestBenchStepMachineCUDA runs in TestBenchStepMachineFakeCUDA's child
// (or on a machine with a GPU): `bench step --device cuda` names the GPU
// beside the CPU, in its text and its JSON, supervised and
// self-supervised.
func TestBenchStepMachineCUDA(t *testing.T) {
	if !cudatest.InFakeChild() && cuda.Available() != nil {
		t.Skip("needs a usable GPU or TestBenchStepMachineFakeCUDA's fake driver")
	}
	for _, args := range [][]string{
		{"--arch", "resnet18-w8", "--batch", "4"},
		{"--method", "simclr", "--arch", "resnet18-w8", "--batch", "4"},
	} {
		code, stdout, stderr := runCLI(append([]string{"bench", "step", "--device", "cuda", "--size", "8", "--steps", "1", "--warmup", "0", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		d, err := cuda.Default()
		if err != nil {
			t.Fatal(err)
		}
		wantBenchMachine(t, "bench step --device cuda "+strings.Join(args, " "), stdout, d.String())
	}
}

// TestBenchStepMemoryAtSize: bench step's self-supervised check counts
// the views and activations of the side benchmarked (--size), not those
// of the preset dataset's 32x32 images: the views' part grows with --size
// (at 32, train's estimate for CIFAR-10), and a --batch that fits at 32
// but whose 1024x1024 views and activations exceed the machine's memory
// is refused, naming --size, before anything is allocated.
func TestBenchStepMemoryAtSize(t *testing.T) {
	views := func(needs []train.MemoryNeed) train.MemoryNeed {
		for _, n := range needs {
			if n.Flag == "batch" {
				return n
			}
		}
		t.Fatalf("no --batch part in %v", needs)
		return train.MemoryNeed{}
	}
	for _, method := range []string{"simclr", "dmoco", "byol"} {
		cfg, err := train.Preset(train.DefaultPreset, method)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Arch, cfg.Batch = "resnet18", 16
		at32 := views(cfg.MemoryNeeds()).Bytes
		for _, tc := range []struct {
			size     int
			min, max float64 // bytes of the views' part, relative to 32x32's
		}{
			{8, 0.03, 0.1}, // (8/32)^2 = 1/16
			{32, 1, 1},
			{96, 8, 10},       // 9
			{1024, 900, 1100}, // 1024
		} {
			for _, device := range []string{"cpu", "cuda:0"} {
				got := views(sslStepNeeds(&cfg, device, 1, tc.size))
				want := at32
				if device != "cpu" {
					want = views(cfg.MemoryNeedsOn(device, 1)).Bytes // the views alone
				}
				if r := got.Bytes / want; r < tc.min || r > tc.max {
					t.Errorf("%s on %s, --size %d: the views need %.0f bytes, %.3g times those at 32, expected %g..%g",
						method, device, tc.size, got.Bytes, r, tc.min, tc.max)
				}
				if side := fmt.Sprintf("%dx%d pixels, --size", tc.size, tc.size); !strings.Contains(got.What, side) {
					t.Errorf("%s, --size %d: the views' part %q does not say %q", method, tc.size, got.What, side)
				}
			}
		}
	}

	if t.Failed() {
		return // the command would go on to allocate what the estimate misses
	}
	have := train.MachineMemory()
	if have <= 0 {
		t.Skip("the machine's memory is unknown: the command would not refuse the batch")
	}
	// The smallest --batch (a multiple of the preset's ghost BatchNorm
	// groups) whose 1024x1024 views need more than the machine has, for
	// the preset's network: the first check (the images and the stem's
	// outputs, a sixth of it) lets it through, and at 32x32 it fits.
	for _, method := range []string{"simclr", "dmoco"} {
		cfg, _ := train.Preset(train.DefaultPreset, method)
		g := cfg.BNSplits
		cfg.Batch = g
		per := views(sslStepNeeds(&cfg, "cpu", 1, 1024)).Bytes / float64(g)
		batch := max(2*g, g*(int(float64(have)/per/float64(g))+1))
		if 2*train.ForwardBytes(cfg.Arch, "cifar", batch, 1024, 1024, 3) > float64(have) {
			t.Fatalf("%s: --batch %d's images and stem outputs alone exceed the machine's memory", method, batch)
		}
		cfg.Batch = batch
		if err := train.CheckMemory(cfg.MemoryNeedsOn("cpu", 1)...); err != nil {
			t.Fatalf("%s: --batch %d does not fit at 32x32: %v", method, batch, err)
		}
		wantCLIError(t, []string{"bench", "step", "--method", method, "--arch", cfg.Arch, "--batch", strconv.Itoa(batch), "--size", "1024"},
			fmt.Sprintf("--batch: got %d, needs about ", batch), "1024x1024 pixels, --size", "this machine has ")
	}
}
