package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"runtime"
	"strings"

	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/internal/cpu"
	"github.com/duel-ssl/duel/kernels/gemm"
)

// benchMachine names the machine a benchmark's figures were measured on.
// Every bench subcommand (but bench cpu, which describes the CPU in full)
// prints it first ("cpu: ..." and, on --device cuda, "gpu: ...", see
// writeBenchMachine) and puts its fields at the top level of its --json
// object, under the names bench gemm has always used for them.
type benchMachine struct {
	CPU         string `json:"cpu"`          // brand string, e.g. "AMD EPYC 9R14 96-Core Processor" ("" when the CPU does not say)
	CPUKey      string `json:"cpu_key"`      // internal/cpu's key of the CPU (the wisdom file's)
	Microarch   string `json:"microarch"`    // e.g. "zen4"; "" when the family and model are not in internal/cpu's table
	LogicalCPUs int    `json:"logical_cpus"` // logical CPUs this process may run on (runtime.NumCPU)
	CPUISA      string `json:"cpu_isa"`      // the level the CPU kernels run at (cpu.ISA: DUEL_ISA applied)
	// Tuning is the SGEMM configuration this process runs (gemm.CurrentTuning:
	// source derived from the caches, or tuned by duelctl bench tune).
	Tuning gemm.Tuning `json:"tuning"`
	// GPU is the device with --device cuda, as cuda.Device names it:
	// "cuda:0 (NVIDIA H100 80GB HBM3, sm_90)".
	GPU string `json:"gpu,omitempty"`
}

// benchMachineHelp ends the description of every bench subcommand that
// reports a benchMachine and runs on a GPU with --device cuda;
// benchMachineHelpCPU of those that run on the CPU only.
const (
	benchMachineHelp = "The first line of the output names the machine (\"cpu: ...\", and \"gpu: ...\" with\n" +
		"--device cuda); the JSON names it in \"cpu\" (brand string), \"cpu_key\", \"microarch\",\n" +
		"\"logical_cpus\", \"cpu_isa\" (the level the CPU kernels run at), \"tuning\" (the SGEMM\n" +
		"configuration in use: kernel, mc, kc, nc, ns, source derived|tuned; see duelctl bench tune)\n" +
		"and, with --device cuda, \"gpu\" (e.g. \"cuda:0 (NVIDIA H100 80GB HBM3, sm_90)\")."
	benchMachineHelpCPU = "The first line of the output names the CPU (\"cpu: ...\"); the JSON names it in \"cpu\"\n" +
		"(brand string), \"cpu_key\", \"microarch\", \"logical_cpus\", \"cpu_isa\" (the level the CPU\n" +
		"kernels run at) and \"tuning\" (the SGEMM configuration in use: kernel, mc, kc, nc, ns,\n" +
		"source derived|tuned; see duelctl bench tune)."
)

// newBenchMachine describes this machine; gpu is the device of a --device
// cuda run (nil on the CPU).
func newBenchMachine(gpu *cuda.Device) benchMachine {
	d := cpu.Detect()
	m := benchMachine{CPU: d.Brand, CPUKey: d.Key(), Microarch: d.Microarch, LogicalCPUs: runtime.NumCPU(),
		CPUISA: cpu.ISA().String(), Tuning: gemm.CurrentTuning()}
	if gpu != nil {
		m.GPU = gpu.String()
	}
	return m
}

// benchMachineOn describes this machine for a run on devName (a device
// name as --device or tensor.Device give it): on "cuda..." the GPU too,
// when the default device opens.
func benchMachineOn(devName string) benchMachine {
	var gpu *cuda.Device
	if strings.HasPrefix(devName, "cuda") {
		gpu, _ = cuda.Default()
	}
	return newBenchMachine(gpu)
}

// write prints the machine: "cpu: AMD EPYC 9R14 96-Core Processor (zen4,
// 2 logical CPUs, avx512 kernels, SGEMM avx512 mc=... (derived); key ...)"
// and, with a GPU, "gpu: cuda:0 (NVIDIA H100 80GB HBM3, sm_90)".
func (m benchMachine) write(w io.Writer) {
	brand, arch := m.CPU, m.Microarch
	if brand == "" {
		brand = "unknown CPU"
	}
	if arch == "" {
		arch = "microarchitecture not recognised"
	}
	fmt.Fprintf(w, "cpu: %s (%s, %d logical CPUs, %s kernels, SGEMM %s; key %s)\n",
		brand, arch, m.LogicalCPUs, m.CPUISA, describeTuning(m.Tuning), m.CPUKey)
	if m.GPU != "" {
		fmt.Fprintf(w, "gpu: %s\n", m.GPU)
	}
}

// addTo copies the machine's JSON fields into out, the JSON object of a
// benchmark built as a map.
func (m benchMachine) addTo(out map[string]any) {
	b, err := json.Marshal(m)
	if err != nil {
		panic(err) // strings and ints only
	}
	var f map[string]any
	if err := json.Unmarshal(b, &f); err != nil {
		panic(err)
	}
	maps.Copy(out, f)
}

// fmtMS writes a duration given in milliseconds with 3 significant digits
// in a unit that keeps them: "412 ns", "3.21 µs", "10.2 ms", "1.52 s"
// (a fixed %.3f ms would print a 1x1x1 product as 0.000 ms).
func fmtMS(ms float64) string {
	s := ms / 1e3
	switch a := math.Abs(s); {
	case a == 0 || math.IsNaN(s) || math.IsInf(s, 0):
		return fmt.Sprintf("%g ms", ms)
	case a < 1e-6:
		return sig3(s*1e9) + " ns"
	case a < 1e-3:
		return sig3(s*1e6) + " µs"
	case a < 1:
		return sig3(s*1e3) + " ms"
	}
	return sig3(s) + " s"
}

// fmtStepMS writes a training step's time in milliseconds whatever its
// size ("4.16 ms", "1406 ms"): bench/ab_step.sh reads "step N ms" from
// bench step's text, and steps are compared in one unit.
func fmtStepMS(ms float64) string { return sig3(ms) + " ms" }

// sig3 writes x with 3 significant digits, without an exponent below 1e6
// (412, 41.2, 4.12; 1234.5 as 1235).
func sig3(x float64) string {
	switch a := math.Abs(x); {
	case a >= 100:
		return fmt.Sprintf("%.0f", x)
	case a >= 10:
		return fmt.Sprintf("%.1f", x)
	case a >= 1:
		return fmt.Sprintf("%.2f", x)
	}
	return fmt.Sprintf("%.3g", x)
}

// fmtRate writes a rate (GFLOP/s, img/s) with one decimal, or with 3
// significant digits below 1 (one decimal would print a 1x1x1 product's
// few MFLOP/s as 0.0).
func fmtRate(x float64) string {
	if math.Abs(x) >= 1 || x == 0 {
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.3g", x)
}

// fmtRatio writes a ratio with 3 significant digits and an x: "5.47x",
// "0.000668x" (a fixed %.2fx would print an emulated GPU's as 0.00x).
func fmtRatio(x float64) string { return sig3(x) + "x" }
