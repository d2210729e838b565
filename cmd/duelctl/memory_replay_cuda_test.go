package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/internal/cudatest"
)

// TestReplayFakeCUDA runs TestReplayCUDA in a child process whose CUDA
// driver is internal/cudatest's fake libcuda (the real backend, driver
// bindings and DUEL kernels, emulated on the CPU), so that
// `memory replay --device cuda` is checked on every machine with g++.
func TestReplayFakeCUDA(t *testing.T) {
	cudatest.PassOnFakeDriver(t, "TestReplayCUDA")
}

// TestReplayCUDA runs in TestReplayFakeCUDA's child (or on a machine with a
// GPU): `memory replay --device cuda` keeps exactly the rows the CPU keeps,
// with both admissions the kernel has, and refuses the policies and
// admissions that run on the CPU only.
func TestReplayCUDA(t *testing.T) {
	if !cudatest.InFakeChild() && cuda.Available() != nil {
		t.Skip("needs a usable GPU or TestReplayFakeCUDA's fake driver")
	}
	if err := cuda.Available(); err != nil {
		t.Fatalf("the CUDA driver is not usable: %v", err)
	}
	dir := t.TempDir()
	f, l := replayFixture(t, dir, 20+10*8+5, 6)
	kept := func(device, admission string) replayResult {
		t.Helper()
		code, stdout, stderr := replayRunCLI("memory", "replay", "--features", f, "--labels", l, "--size", "20", "--batch", "8",
			"--admission", admission, "--device", device, "--json", "--out", filepath.Join(dir, device+admission))
		if code != 0 {
			t.Fatalf("--device %s --admission %s: exit %d: %s", device, admission, code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		var res replayResult
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
			t.Fatalf("--device %s: last line is not JSON: %v\n%s", device, err, stdout)
		}
		return res
	}
	for _, adm := range []string{"protected", "compete"} {
		onCPU, onGPU := kept("cpu", adm), kept("cuda", adm)
		if !slices.Equal(onCPU.Kept, onGPU.Kept) || onGPU.Updates != 10 || *onCPU.ClassEntropy != *onGPU.ClassEntropy {
			t.Errorf("--admission %s: kept %v (entropy %v) on the GPU, %v (%v) on the CPU", adm, onGPU.Kept, *onGPU.ClassEntropy, onCPU.Kept, *onCPU.ClassEntropy)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--policy", "fifo"}, "--policy fifo runs on the CPU only"},
		{[]string{"--admission", "insert-first"}, "--admission insert-first runs on the CPU only"},
	} {
		args := append([]string{"memory", "replay", "--features", f, "--size", "20", "--batch", "8", "--device", "cuda"}, tc.args...)
		code, _, stderr := replayRunCLI(args...)
		if code == 0 || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "use --device cpu") {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, stderr, tc.want)
		}
	}
}
