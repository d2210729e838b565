package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/internal/cudatest"
)

// TestBenchGemmFakeCUDA runs TestBenchGemmCUDA in a child process whose
// CUDA driver is internal/cudatest's fake libcuda (an sm_80 device of 4
// multiprocessors at 1410 MHz, its kernels emulated on the CPU).
func TestBenchGemmFakeCUDA(t *testing.T) {
	cudatest.PassOnFakeDriver(t, "TestBenchGemmCUDA")
}

// TestBenchGemmCUDA runs in TestBenchGemmFakeCUDA's child (or on a machine
// with a GPU): `bench gemm --device cuda` reports the product's rate, the
// kernel, and the rate as a fraction of the device's peak in the
// precision it ran in.
func TestBenchGemmCUDA(t *testing.T) {
	if !cudatest.InFakeChild() && cuda.Available() != nil {
		t.Skip("needs a usable GPU or TestBenchGemmFakeCUDA's fake driver")
	}
	var res struct {
		GFLOPS     float64 `json:"gflops"`
		Kernel     string  `json:"kernel"`
		Precision  string  `json:"precision"`
		PeakGFLOPS float64 `json:"peak_gflops"`
		OfPeak     float64 `json:"of_peak"`
	}
	stdout, lines := runBenchGemmCUDA(t, 40, 72, 36, &res)
	if res.GFLOPS <= 0 || res.Kernel == "" || res.Precision != "tf32" || res.PeakGFLOPS <= 0 || res.OfPeak <= 0 || res.OfPeak > 1 {
		t.Errorf("bench gemm --device cuda --json: %+v\n%s", res, stdout)
	}
	d, err := cuda.Default()
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) < 4 {
		t.Fatalf("want the CPU, the GPU, the rate and the JSON:\n%s", stdout)
	}
	wantBenchMachine(t, "bench gemm --device cuda", stdout, d.String()) // lines[0] the CPU, lines[1] the GPU
	if !strings.Contains(lines[2], "of the device's") || !strings.Contains(lines[2], "TFLOP/s tf32 peak") {
		t.Errorf("the text line names no peak: %q", lines[2])
	}
}

// TestBenchGemmFakeCUDA90 runs TestBenchGemmMeasuredCUDA on the fake
// libcuda as a device of compute capability 9.0, where TCAuto measures
// the products' kernels.
func TestBenchGemmFakeCUDA90(t *testing.T) {
	out, err := cudatest.RunOnFakeDriver(t, "^TestBenchGemmMeasuredCUDA$", "DUEL_FAKE_CUDA_CC=90")
	if err != nil || !strings.Contains(out, "--- PASS: TestBenchGemmMeasuredCUDA") || strings.Contains(out, "--- SKIP") {
		t.Fatalf("TestBenchGemmMeasuredCUDA with the fake driver at 9.0: %v\n%s", err, out)
	}
}

// TestBenchGemmMeasuredCUDA runs in TestBenchGemmFakeCUDA90's child (or
// on an H100/H200): at 256³ `bench gemm --device cuda` times the kernel
// TCAuto chose on the device, and prints and reports each candidate's
// median (the reference, gemm_tc3_tf32, and gemm_wg.cu's three).
func TestBenchGemmMeasuredCUDA(t *testing.T) {
	if !cudatest.InFakeChild() && cuda.Available() != nil {
		t.Skip("needs a usable GPU or TestBenchGemmFakeCUDA90's fake driver")
	}
	d, err := cuda.Default()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.String(), "sm_90") {
		t.Skipf("gemm_wg.cu's kernels are TCAuto's candidates on compute capability 9.0 only (%v)", d)
	}
	var res struct {
		Kernel     string             `json:"kernel"`
		Candidates map[string]float64 `json:"candidates_ms"`
	}
	stdout, lines := runBenchGemmCUDA(t, 256, 256, 256, &res)
	if len(res.Candidates) != 4 || res.Candidates["gemm_tc3_tf32"] <= 0 || res.Candidates["gemm_wgp_tf32"] <= 0 {
		t.Errorf("candidates_ms %v: want gemm_tc3_tf32, gemm_wg_tf32, gemm_wgs_tf32 and gemm_wgp_tf32\n%s", res.Candidates, stdout)
	}
	if _, ok := res.Candidates[res.Kernel]; !ok {
		t.Errorf("kernel %q is none of the candidates %v", res.Kernel, res.Candidates)
	}
	// lines[0] and [1] name the CPU and the GPU, [2] the rate.
	if len(lines) < 5 || !strings.Contains(lines[3], "chosen by measuring on this GPU") || !strings.Contains(lines[3], res.Kernel+" ") {
		t.Errorf("no line naming the candidates after the rate:\n%s", stdout)
	}
}

// runBenchGemmCUDA runs `bench gemm --device cuda --precision tf32 --json`
// on an m x n x k product, fails t unless it exits 0 with a JSON last
// line, decodes that line into res, and returns stdout and its lines.
func runBenchGemmCUDA(t *testing.T, m, n, k int, res any) (string, []string) {
	t.Helper()
	code, stdout, stderr := replayRunCLI("bench", "gemm", "--device", "cuda", "--precision", "tf32", "--m", strconv.Itoa(m), "--n", strconv.Itoa(n),
		"--k", strconv.Itoa(k), "--seconds", "0.001", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), res); err != nil {
		t.Fatalf("last line is not JSON: %v\n%s", err, stdout)
	}
	return stdout, lines
}
