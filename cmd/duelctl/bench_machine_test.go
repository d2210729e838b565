package main

import (
	"fmt"
	"math"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// wantBenchMachine checks that stdout of a bench subcommand starts with
// the machine's line ("cpu: " and the brand) and that its JSON last line
// carries the machine's fields, equal to newBenchMachine's; gpu is the GPU
// line and field expected ("" on the CPU).
func wantBenchMachine(t *testing.T, what, stdout, gpu string) {
	t.Helper()
	m := newBenchMachine(nil)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	brand := m.CPU
	if brand == "" {
		brand = "unknown CPU"
	}
	if want := "cpu: " + brand + " ("; !strings.HasPrefix(lines[0], want) ||
		!strings.Contains(lines[0], fmt.Sprintf("%d logical CPUs", m.LogicalCPUs)) || !strings.Contains(lines[0], m.CPUKey) {
		t.Errorf("%s: first line %q, want %q... naming the logical CPUs and key %s", what, lines[0], want, m.CPUKey)
	}
	if gpu != "" && (len(lines) < 2 || lines[1] != "gpu: "+gpu) {
		t.Errorf("%s: no line %q after the CPU's:\n%s", what, "gpu: "+gpu, stdout)
	}
	res := lastObject(t, stdout)
	for k, want := range map[string]any{
		"cpu": m.CPU, "cpu_key": m.CPUKey, "microarch": m.Microarch, "logical_cpus": float64(m.LogicalCPUs), "cpu_isa": m.CPUISA,
	} {
		if res[k] != want {
			t.Errorf("%s: JSON %s = %v (%T), want %v", what, k, res[k], res[k], want)
		}
	}
	if tu, ok := res["tuning"].(map[string]any); !ok || tu["kernel"] != m.Tuning.Kernel || tu["source"] != m.Tuning.Source {
		t.Errorf("%s: JSON tuning = %v, want %+v", what, res["tuning"], m.Tuning)
	}
	if gpu != "" && res["gpu"] != gpu {
		t.Errorf("%s: JSON gpu = %v, want %q", what, res["gpu"], gpu)
	}
	if gpu == "" && res["gpu"] != nil {
		t.Errorf("%s: JSON gpu = %v on the CPU", what, res["gpu"])
	}
}

// TestBenchMachine: every bench subcommand that times something names the
// CPU it ran on, in the first line of its text and in its JSON, the same
// way (bench tune: TestBenchTune; on a GPU: TestBenchGemmCUDA,
// TestBenchDuelCUDA).
func TestBenchMachine(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0)) // bench step --threads
	for _, args := range [][]string{
		{"gemm", "-m", "8", "-n", "8", "-k", "8", "--seconds", "0.001"},
		{"duel", "--size", "16", "--batch", "4", "--dim", "4", "--updates", "2", "--reference-updates", "1"},
		{"data", "--batch", "8", "--seconds", "0.02", "--repeats", "1"},
		{"tsne", "--n", "30", "--dim", "4", "--iters", "20"},
		{"step", "--arch", "resnet18-w8", "--batch", "2", "--size", "8", "--steps", "1", "--warmup", "0"},
		{"step", "--method", "simclr", "--arch", "resnet18-w8", "--batch", "4", "--size", "8", "--steps", "1", "--warmup", "0", "--threads", "1"},
	} {
		code, stdout, stderr := runCLI(append(append([]string{"bench"}, args...), "--json")...)
		if code != 0 {
			t.Fatalf("bench %v: exit %d: %s", args, code, stderr)
		}
		wantBenchMachine(t, "bench "+strings.Join(args, " "), stdout, "")
	}
	// bench cpu carries the same fields beside its own.
	code, stdout, stderr := runCLI("bench", "cpu", "--json")
	if code != 0 {
		t.Fatalf("bench cpu: exit %d: %s", code, stderr)
	}
	res := lastObject(t, stdout)
	m := newBenchMachine(nil)
	if res["cpu"] != m.CPU || res["cpu_key"] != m.CPUKey || res["microarch"] != m.Microarch || res["logical_cpus"] != float64(m.LogicalCPUs) || res["cpu_isa"] != m.CPUISA {
		t.Errorf("bench cpu --json: %v, want the fields of %+v", res, m)
	}
}

// TestFmtMS: durations keep 3 significant digits in a unit that shows
// them.
func TestFmtMS(t *testing.T) {
	for _, tc := range []struct {
		ms   float64
		want string
	}{
		{0.000319, "319 ns"}, {0.0000042, "4.20 ns"}, {0.00604, "6.04 µs"}, {0.0123, "12.3 µs"},
		{0.5, "500 µs"}, {58.1125, "58.1 ms"}, {1.5, "1.50 ms"}, {2346, "2.35 s"}, {0, "0 ms"},
	} {
		if got := fmtMS(tc.ms); got != tc.want {
			t.Errorf("fmtMS(%v) = %q, want %q", tc.ms, got, tc.want)
		}
	}
	for _, tc := range []struct {
		x    float64
		want string
	}{{0.00626, "0.00626"}, {0, "0.0"}, {86.84, "86.8"}, {1234.56, "1234.6"}} {
		if got := fmtRate(tc.x); got != tc.want {
			t.Errorf("fmtRate(%v) = %q, want %q", tc.x, got, tc.want)
		}
	}
}

// zeroFigure matches a figure printed as zero: "0.000 ms", "0.00 ms",
// "0.0 GFLOP/s".
var zeroFigure = regexp.MustCompile(`(^|[^0-9.])0\.0+ (ms|s|GFLOP/s)\b`)

// TestBenchTinyTimes: a 1x1x1 product and an update of a tiny memory take
// microseconds or less; their times and rates print with significant
// digits, not as 0.000 ms or 0.0 GFLOP/s.
func TestBenchTinyTimes(t *testing.T) {
	for _, args := range [][]string{
		{"gemm", "-m", "1", "-n", "1", "-k", "1", "--seconds", "0.01"},
		{"duel", "--size", "4", "--batch", "2", "--dim", "2", "--updates", "3", "--reference-updates", "2"},
	} {
		code, stdout, stderr := runCLI(append([]string{"bench"}, args...)...)
		if code != 0 {
			t.Fatalf("bench %v: exit %d: %s", args, code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")[1:] // after the machine's line
		for _, l := range lines {
			if zeroFigure.MatchString(l) {
				t.Errorf("bench %v prints a zero figure: %q", args, l)
			}
		}
		if !regexp.MustCompile(`[0-9] (ns|µs) `).MatchString(strings.Join(lines, "\n")) {
			t.Errorf("bench %v: no time in ns or µs:\n%s", args, stdout)
		}
		if args[0] == "duel" && !strings.Contains(stdout, "fast path speed-up ") {
			t.Errorf("bench duel: the ratio to the reference is not labelled:\n%s", stdout)
		}
	}
}

// TestBenchDataCores: with more workers than GOMAXPROCS, the per-repeat
// line's views per CPU-second times the cores the workers can use (not
// the workers) is the on-idle-cores rate of the JSON.
func TestBenchDataCores(t *testing.T) {
	workers := runtime.GOMAXPROCS(0) + 2
	code, stdout, stderr := runCLI("bench", "data", "--batch", "8", "--seconds", "0.05", "--repeats", "1", "--workers", strconv.Itoa(workers), "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	re := regexp.MustCompile(`repeat 1: [0-9]+ views/s by the clock; ([0-9]+) views per CPU-second x ([0-9]+) cores the workers can use = ([0-9]+) views/s on idle cores`)
	m := re.FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no repeat line matching %s in\n%s", re, stdout)
	}
	per, _ := strconv.ParseFloat(m[1], 64)
	cores, _ := strconv.Atoi(m[2])
	idle, _ := strconv.ParseFloat(m[3], 64)
	res := lastObject(t, stdout)
	if cores != runtime.GOMAXPROCS(0) || math.Abs(per*float64(cores)-idle) > float64(cores) || math.Abs(idle-res["cpu_views_per_s"].(float64)) > 1 {
		t.Errorf("%s x %d cores = %s; cpu_views_per_s %v; want %d cores (GOMAXPROCS, fewer than the %d workers)",
			m[1], cores, m[3], res["cpu_views_per_s"], runtime.GOMAXPROCS(0), workers)
	}
}
