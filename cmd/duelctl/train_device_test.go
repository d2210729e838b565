package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/duel/memory"
	"github.com/duel-ssl/duel/duel/memory/cudaduel"
	"github.com/duel-ssl/duel/duel/train"
	"github.com/duel-ssl/duel/internal/cudatest"
)

// TestModelCommandsRefuseCUDA runs the commands that place a model on
// --device with cuda on a machine without a usable GPU: each refuses in
// one line that names the flag, says why and advises --device cpu, before
// touching the run. (With a GPU, package train refuses a backend that lacks
// a layer's capability in the same form; duel/train's device tests cover
// it on the host-less test devices.)
func TestModelCommandsRefuseCUDA(t *testing.T) {
	if cuda.Available() == nil {
		t.Skip("a usable GPU: the refusal without one cannot be checked here")
	}
	refuseCUDA(t, "")
}

// refuseCUDA trains a one-step CPU run, then runs train (new and resumed),
// embed, eval and analyze with --device cuda: each must exit non-zero with
// one line on stderr that starts with "duelctl: --device cuda: ", contains
// want and advises --device cpu, and the refused new run must not exist.
func refuseCUDA(t *testing.T, want string) {
	t.Helper()
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	if code, _, stderr := runCLI("train", "--preset", "tiny", "--steps", "1", "--out", run); code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	for _, args := range [][]string{
		{"train", "--preset", "tiny", "--steps", "1", "--out", filepath.Join(dir, "cuda")},
		{"train", "--resume", "--out", run, "--steps", "2"},
		{"embed", "--run", run, "--input", filepath.Join(dir, "x.npy"), "--out", filepath.Join(dir, "y.npy")},
		{"eval", "--run", run, "--protocol", "knn"},
		{"analyze", "--run", run},
	} {
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			code, _, stderr := runCLI(append(args, "--device", "cuda")...)
			if code == 0 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "duelctl: --device cuda: ") ||
				!strings.Contains(stderr, want) || !strings.Contains(stderr, "use --device cpu") {
				t.Errorf("exit %d, stderr %q: expected one line starting with \"duelctl: --device cuda: \" with %q, advising --device cpu", code, stderr, want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "cuda")); err == nil {
		t.Errorf("the refused run made its directory")
	}
}

// TestModelCommandsFakeCUDA runs TestModelCommandsCUDABackend in a child
// process whose CUDA driver is the fake libcuda of internal/cudatest (the
// real backend and driver bindings, the real kernel sources emulated on the
// CPU, device memory in host memory), so that training from the command
// line on --device cuda is checked on every machine with g++.
func TestModelCommandsFakeCUDA(t *testing.T) {
	cudatest.PassOnFakeDriver(t, "TestModelCommandsCUDABackend")
}

// TestPrecisionFlag: tf32 is refused on the CPU (it has no TF32
// arithmetic), on the GPU only a known precision is taken, and an unknown
// name is refused naming the flag, with the values the device takes.
func TestPrecisionFlag(t *testing.T) {
	for _, args := range [][]string{
		{"train", "--preset", "tiny", "--steps", "0", "--out", filepath.Join(t.TempDir(), "r"), "--precision", "tf32"},
		{"bench", "gemm", "--m", "8", "--n", "8", "--k", "8", "--precision", "tf32"},
		{"train", "--preset", "tiny", "--steps", "0", "--out", filepath.Join(t.TempDir(), "r"), "--device", "cuda", "--precision", "fp16"},
		{"train", "--preset", "tiny", "--steps", "0", "--out", filepath.Join(t.TempDir(), "r"), "--conv-precision", "tf32"},
		{"bench", "step", "--arch", "resnet18", "--batch", "2", "--steps", "1", "--conv-precision", "tf32"},
	} {
		code, _, stderr := runCLI(args...)
		if code == 0 || !strings.Contains(stderr, "precision") && !strings.Contains(stderr, "--device") {
			t.Errorf("%v: exit %d, stderr %q: expected a refusal naming the precision flag", args, code, stderr)
		}
	}
	// An unknown name is refused as such, on the CPU too.
	for _, args := range [][]string{
		{"train", "--preset", "tiny", "--steps", "0", "--out", filepath.Join(t.TempDir(), "r"), "--precision", "foo"},
		{"train", "--preset", "tiny", "--steps", "0", "--out", filepath.Join(t.TempDir(), "r"), "--conv-precision", "fp8"},
		{"bench", "gemm", "--m", "8", "--n", "8", "--k", "8", "--precision", "half"},
	} {
		wantCLIError(t, args, `precision: got "`, `expected fp32 or bf16 on the CPU`)
	}
}

// (The first step of TestModelCommandsCUDABackend runs in the default
// precisions, FP32 products and TF32 convolutions, the step resumed on the
// GPU with --precision tf32 (products and convolutions); FP32 below
// compute capability 8.0; the losses stay within the tolerance.)

// TestModelCommandsCUDABackend runs in TestModelCommandsFakeCUDA's child
// (or on a machine with a GPU): `duelctl train --device cuda` trains the
// tiny preset a step, resumes it on the GPU for another, and the resumed
// run's checkpoint continues on the CPU; on the GPU the memory's DUEL
// decides there (cudaduel); each run's losses are those of the
// same run on the CPU within float32 summation-order tolerance. (The
// emulator is slow: the evaluation commands run on the GPU in duel/eval's
// and duel/train's device tests, not here.)
func TestModelCommandsCUDABackend(t *testing.T) {
	if !cudatest.InFakeChild() && cuda.Available() != nil {
		t.Skip("needs a usable GPU or TestModelCommandsFakeCUDA's fake driver")
	}
	if err := cuda.Available(); err != nil {
		t.Fatalf("the CUDA driver is not usable: %v", err)
	}
	be, err := cuda.Registered()
	if err != nil {
		t.Fatal(err)
	}
	prec, err := cuda.DefaultPrecision()
	if err != nil {
		t.Fatal(err)
	}
	conv, err := cuda.DefaultConvPrecision()
	if err != nil {
		t.Fatal(err)
	}
	tc := be.SetPrecision(cuda.TF32).String() // what --precision tf32 runs as: fp32 without tensor cores
	// The defaults as a new process has them (earlier tests may have set others).
	be.SetPrecision(prec)
	be.SetConvPrecision(conv)
	dir := t.TempDir()
	gpu, cpu := filepath.Join(dir, "gpu"), filepath.Join(dir, "cpu")
	for _, run := range []struct {
		args []string
		want string // in the header line
	}{
		{[]string{"train", "--preset", "tiny", "--steps", "1", "--batch", "8", "--out", gpu, "--device", "cuda"},
			fmt.Sprintf("on the GPU (products %v, convolutions %v)", be.Precision(), be.ConvPrecision())},
		{[]string{"train", "--resume", "--out", gpu, "--steps", "2", "--device", "cuda", "--precision", "tf32"},
			fmt.Sprintf("on the GPU (products %s, convolutions %s)", tc, tc)},
		{[]string{"train", "--resume", "--out", gpu, "--steps", "3", "--device", "cpu"}, "into"},
		{[]string{"train", "--preset", "tiny", "--steps", "3", "--batch", "8", "--out", cpu}, "into"},
	} {
		code, stdout, stderr := runCLI(run.args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", run.args, code, stderr)
		}
		if !strings.Contains(stdout, run.want) {
			t.Errorf("%v: stdout lacks %q:\n%s", run.args, run.want, stdout)
		}
		// D-MoCo's memory decides on the GPU when the model is there.
		onDevice := slices.Contains(run.args, "cuda")
		// config.json records where the latest segment ran.
		if cfg, err := train.ReadConfig(run.args[slices.Index(run.args, "--out")+1]); err != nil || cfg.Ran == nil ||
			strings.HasPrefix(cfg.Ran.Device, "cuda") != onDevice || cfg.Ran.Device == "cpu" && cfg.Ran.Precision != "fp32" {
			t.Errorf("%v: config.json's ran %+v (%v)", run.args, cfg.Ran, err)
		} else if slices.Contains(run.args, "tf32") && cfg.Ran.Precision != tc {
			t.Errorf("%v: config.json's ran %+v, expected products in %s", run.args, cfg.Ran, tc)
		}
		if got := strings.Contains(stdout, "memory: duel (protected) decides on cuda:0"); got != onDevice {
			t.Errorf("%v: stdout says the memory decides on the GPU: %v, expected %v:\n%s", run.args, got, onDevice, stdout)
		}
	}
	// DUEL_CUDADUEL_TRAIN=off keeps the memory on the host; another value
	// is refused, naming the variable.
	t.Setenv(envTrainDUEL, "off")
	code, stdout, stderr := runCLI("train", "--preset", "tiny", "--steps", "0", "--out", filepath.Join(dir, "host"), "--device", "cuda")
	if code != 0 || strings.Contains(stdout, "decides on cuda") {
		t.Errorf("%s=off: exit %d, stdout %q, stderr %q: expected the memory on the host", envTrainDUEL, code, stdout, stderr)
	}
	t.Setenv(envTrainDUEL, "gpu")
	if code, _, stderr := runCLI("train", "--preset", "tiny", "--steps", "0", "--out", filepath.Join(dir, "bad"), "--device", "cuda"); code == 0 ||
		!strings.Contains(stderr, envTrainDUEL+`="gpu", expected on or off`) {
		t.Errorf("%s=gpu: exit %d, stderr %q: expected a refusal naming the variable", envTrainDUEL, code, stderr)
	}
	t.Setenv(envTrainDUEL, "")
	if code, _, stderr := runCLI("train", "--resume", "--out", gpu, "--steps", "2", "--device", "cuda", "--conv-precision", "fp16"); code == 0 ||
		!strings.Contains(stderr, `--conv-precision: got "fp16", expected fp32, tf32 or bf16`) {
		t.Errorf("--conv-precision fp16: exit %d, stderr %q: expected a refusal naming the flag", code, stderr)
	}
	onGPU, err := train.ReadMetrics(gpu)
	if err != nil {
		t.Fatal(err)
	}
	onCPU, err := train.ReadMetrics(cpu)
	if err != nil {
		t.Fatal(err)
	}
	if len(onGPU) != 3 || len(onCPU) != 3 {
		t.Fatalf("%d metric lines on the GPU run, %d on the CPU's, want 3", len(onGPU), len(onCPU))
	}
	for i := range onCPU {
		a, b := onCPU[i].Loss, onGPU[i].Loss
		if math.IsNaN(b) || math.Abs(a-b) > 1e-3*math.Max(1, math.Abs(a)) {
			t.Errorf("step %d: loss %v (GPU, then CPU from its checkpoint), %v (CPU)", onCPU[i].Step, b, a)
		}
	}
}

// TestBenchStepCUDABackend runs in TestBenchStepFakeCUDA's child (or on a
// machine with a GPU): `duelctl bench step --device cuda` places the model
// and the batch on the GPU, waits for the queued work around each timing
// and reports the device in its JSON; with --method dmoco it times D-MoCo's
// step there, its memory full and deciding on the GPU, profiled.
func TestBenchStepCUDABackend(t *testing.T) {
	if !cudatest.InFakeChild() && cuda.Available() != nil {
		t.Skip("needs a usable GPU or TestBenchStepFakeCUDA's fake driver")
	}
	code, stdout, stderr := runCLI("bench", "step", "--device", "cuda", "--arch", "resnet18-w8", "--batch", "4", "--size", "8", "--steps", "1", "--warmup", "0", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res stepResult
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("%v in %q", err, stdout)
	}
	if res.Device != "cuda:0" || res.StepMS <= 0 || res.ImgPerS <= 0 {
		t.Errorf("device %q, step %v ms, %v img/s: want cuda:0 and positive times", res.Device, res.StepMS, res.ImgPerS)
	}
	// A self-supervised step on the device, its memory full and deciding
	// there, profiled.
	code, stdout, stderr = runCLI("bench", "step", "--device", "cuda", "--method", "dmoco", "--arch", "resnet18-w2", "--batch", "8", "--size", "8",
		"--memory-size", "16", "--steps", "1", "--warmup", "1", "--profile", "--json")
	if code != 0 {
		t.Fatalf("dmoco: exit %d: %s", code, stderr)
	}
	var ssl sslStepResult
	lines = strings.Split(strings.TrimSpace(stdout), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &ssl); err != nil {
		t.Fatalf("%v in %q", err, stdout)
	}
	if ssl.Device != "cuda:0" || ssl.Memory != "duel on cuda:0" || ssl.StepMS <= 0 || ssl.Profile == nil || ssl.Profile.Launches == 0 {
		t.Errorf("dmoco: device %q, memory %q, step %v ms, profile %v: want cuda:0, duel on cuda:0, a positive time and launches", ssl.Device, ssl.Memory, ssl.StepMS, ssl.Profile)
	}
	if !strings.Contains(stdout, "profile of the 1 timed steps") {
		t.Errorf("dmoco --profile: no profile table in\n%s", stdout)
	}
}

// TestBenchStepFakeCUDA runs TestBenchStepCUDABackend on the CPU emulator
// through the fake libcuda.
func TestBenchStepFakeCUDA(t *testing.T) {
	cudatest.PassOnFakeDriver(t, "TestBenchStepCUDABackend")
}

// TestBenchStepProfileCUDABackend runs in TestBenchStepProfileFakeCUDA's
// child (or on a machine with a GPU): `duelctl bench step --device cuda
// --profile` prints the per-kernel table of the timed steps and puts the
// profile in its JSON: the rows add up, every kernel runs as often in each
// timed step, and the warm-up is left out (the loss kernel runs once per
// timed step).
func TestBenchStepProfileCUDABackend(t *testing.T) {
	if !cudatest.InFakeChild() && cuda.Available() != nil {
		t.Skip("needs a usable GPU or TestBenchStepProfileFakeCUDA's fake driver")
	}
	const steps = 2
	code, stdout, stderr := runCLI("bench", "step", "--device", "cuda", "--arch", "resnet18-w8", "--batch", "4", "--size", "8",
		"--steps", strconv.Itoa(steps), "--warmup", "1", "--profile", "--json", "--precision", "fp32") // conv.cu's conv_fwd_f32
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	t.Log(stdout)
	var res stepResult
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("%v in %q", err, stdout)
	}
	p := res.Profile
	if p == nil {
		t.Fatalf("no profile in the JSON: %s", lines[len(lines)-1])
	}
	var launches int64
	sum := 0.0
	names, calls := map[string]bool{}, map[string]int64{}
	for _, r := range p.Kernels {
		sum += r.TotalMS
		names[r.Kernel] = true
		calls[r.Kernel] += r.Calls
		if r.Module != "" {
			launches += r.Calls
		}
		if r.Calls%steps != 0 && r.Module != "" {
			t.Errorf("kernel %s ran %d times in %d steps, want the same number each step", r.Kernel, r.Calls, steps)
		}
	}
	if launches != p.Launches || launches == 0 || math.Abs(sum-p.DeviceMS) > 1e-6*p.DeviceMS || p.DeviceMS <= 0 || p.DeviceMS > p.WallMS {
		t.Errorf("rows: %d launches summing to %v ms; profile: %d launches, device %v ms, wall %v ms", launches, sum, p.Launches, p.DeviceMS, p.WallMS)
	}
	if got := calls["cross_entropy_f32"]; got != steps || !names["conv_fwd_f32"] || !names[cuda.RowMemset] {
		t.Errorf("cross_entropy_f32 ran %d times, want %d (once per timed step, none of the warm-up); conv_fwd_f32 and %s rows: %v, %v",
			got, steps, cuda.RowMemset, names["conv_fwd_f32"], names[cuda.RowMemset])
	}
	if p.Allocator == nil || p.Allocator.Requests == 0 || p.Syncs < steps {
		t.Errorf("allocator %+v, %d synchronisations: want the allocator's requests counted and a wait per step at least", p.Allocator, p.Syncs)
	}
	for _, w := range []string{"profile of the 2 timed steps", "kernel", "total ms", "mean us", "share", "wall ", "launches"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("output lacks %q", w)
		}
	}
}

// TestBenchStepProfileFakeCUDA runs TestBenchStepProfileCUDABackend on the
// CPU emulator through the fake libcuda.
func TestBenchStepProfileFakeCUDA(t *testing.T) {
	t.Log(cudatest.PassOnFakeDriver(t, "TestBenchStepProfileCUDABackend"))
}

// TestBenchStepProfileCPU: --profile times CUDA kernels; on the CPU it is
// refused, naming the flag and --device cuda.
func TestBenchStepProfileCPU(t *testing.T) {
	code, _, stderr := runCLI("bench", "step", "--arch", "resnet18-w8", "--batch", "2", "--size", "8", "--steps", "1", "--profile")
	if code == 0 || !strings.Contains(stderr, "--profile") || !strings.Contains(stderr, "--device cuda") {
		t.Errorf("exit %d, stderr %q: want a refusal naming --profile and --device cuda", code, stderr)
	}
}

// TestHintedPolicyError: the GPU's DUEL in training names the variable
// that keeps the memory on the host when it fails.
func TestHintedPolicyError(t *testing.T) {
	p := hintedPolicy{cudaduel.NewPolicy(nil, memory.Protected)}
	_, err := p.Evict(&memory.Arrival{Memory: []float32{1}, Batch: []float32{1}, Z: 1})
	if err == nil || !strings.Contains(err.Error(), "no device") || !strings.Contains(err.Error(), envTrainDUEL+"=off") {
		t.Errorf("error %v: expected the GPU's and %s=off named", err, envTrainDUEL)
	}
	if p.Name() != "duel" {
		t.Errorf("Name() = %q", p.Name())
	}
}
