package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

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
	code, stdout, stderr := replayRunCLI("bench", "gemm", "--device", "cuda", "--precision", "tf32", "--m", "40", "--n", "72", "--k", "36",
		"--seconds", "0.001", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var res struct {
		GFLOPS     float64 `json:"gflops"`
		Kernel     string  `json:"kernel"`
		Precision  string  `json:"precision"`
		PeakGFLOPS float64 `json:"peak_gflops"`
		OfPeak     float64 `json:"of_peak"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("last line is not JSON: %v\n%s", err, stdout)
	}
	if res.GFLOPS <= 0 || res.Kernel == "" || res.Precision != "tf32" || res.PeakGFLOPS <= 0 || res.OfPeak <= 0 || res.OfPeak > 1 {
		t.Errorf("bench gemm --device cuda --json: %+v\n%s", res, stdout)
	}
	if !strings.Contains(lines[0], "of the device's") || !strings.Contains(lines[0], "TFLOP/s tf32 peak") {
		t.Errorf("the text line names no peak: %q", lines[0])
	}
}

// TestCandidateTimes checks the line bench gemm prints for the kernels
// the backend measured: fastest first, ties by name.
func TestCandidateTimes(t *testing.T) {
	for _, tc := range []struct {
		in   map[string]time.Duration
		want string
	}{
		{map[string]time.Duration{}, ""},
		{map[string]time.Duration{"gemm_wg_bf16": 320 * time.Microsecond}, "gemm_wg_bf16 0.320 ms"},
		{map[string]time.Duration{"gemm_wg_bf16": 320 * time.Microsecond, "gemm_wgp_bf16": 271 * time.Microsecond, "gemm_wgs_bf16": 320 * time.Microsecond},
			"gemm_wgp_bf16 0.271 ms, gemm_wg_bf16 0.320 ms, gemm_wgs_bf16 0.320 ms"},
	} {
		if got := candidateTimes(tc.in); got != tc.want {
			t.Errorf("candidateTimes(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
