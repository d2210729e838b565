package cuda

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEmulated compiles each emu/*_emu.cpp (the kernel source plus a CPU
// reference, llm.c style) with g++ against emu/cuda_emu.h, which runs CUDA
// kernels on the CPU with fibers for threads, and runs it: the kernels'
// indexing, barriers and warp-shuffle reductions are exercised at several
// block sizes on machines without a GPU. It needs g++ (C++20) and skips
// without it or under -short.
func TestEmulated(t *testing.T) {
	if testing.Short() {
		t.Skip("emulated kernels take ~15 s: skipped under -short")
	}
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("g++ not found: emulated kernel tests skipped")
	}
	touchSources(t, ".")
	for _, name := range []string{"elementwise", "reduce", "sgemm", "gemm_tc", "im2col"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			bin := filepath.Join(t.TempDir(), name)
			if out, err := exec.Command(gxx, "-std=c++20", "-O1", "-o", bin, filepath.Join("emu", name+"_emu.cpp")).CombinedOutput(); err != nil {
				t.Fatalf("g++ %s_emu.cpp: %v\n%s", name, err, out)
			}
			out, err := exec.Command(bin).CombinedOutput()
			t.Logf("%s", strings.TrimSpace(string(out)))
			if err != nil || !strings.Contains(string(out), "PASS") {
				t.Errorf("%s: %v\n%s", name, err, out)
			}
		})
	}
}

// touchSources reads the kernel sources and the emulator files under dir
// (the kernels/cuda directory) so that go test's cache, which only sees
// files the test process opens, reruns the test when g++'s inputs change.
func touchSources(t *testing.T, dir string) {
	t.Helper()
	for _, pat := range []string{"*.cu", "*.cuh", "emu/*"} {
		files, _ := filepath.Glob(filepath.Join(dir, pat))
		for _, f := range files {
			if _, err := os.ReadFile(f); err != nil {
				t.Fatal(err)
			}
		}
	}
}
